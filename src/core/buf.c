/*
 * buf.c - growable byte buffers and string views (rules in buf.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "aisd/buf.h"
#include "aisd/names.h"
#include "aisd/util.h"
#include "aisd/banned.h"

void buf_grow(buf_t *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap * 3 / 2 + 16;
	b->ptr = xrealloc(b->ptr, cap);
	b->cap = cap;
}

void buf_add(buf_t *b, const void *p, size_t n)
{
	buf_grow(b, n);
	if (n)
		memcpy(b->ptr + b->len, p, n);
	b->len += n;
	b->ptr[b->len] = '\0';
}

void buf_addstr(buf_t *b, const char *s) { buf_add(b, s, strlen(s)); }
void buf_addch(buf_t *b, char c) { buf_add(b, &c, 1); }
void buf_addsv(buf_t *b, sv_t s) { buf_add(b, s.ptr, s.len); }

void buf_addi64(buf_t *b, int64_t v)
{
	char d[24], *p = d + sizeof(d);
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	buf_add(b, p, (size_t)(d + sizeof(d) - p));
}

void buf_addu64(buf_t *b, uint64_t v)
{
	char d[24], *p = d + sizeof(d);
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	buf_add(b, p, (size_t)(d + sizeof(d) - p));
}

void buf_vaddf(buf_t *b, const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	buf_grow(b, 64);
	int n = vsnprintf(b->ptr + b->len, b->cap - b->len, fmt, cp);
	va_end(cp);
	if (n < 0)
		return;
	if ((size_t)n >= b->cap - b->len) {
		buf_grow(b, (size_t)n);
		vsnprintf(b->ptr + b->len, b->cap - b->len, fmt, ap);
	}
	b->len += (size_t)n;
}

void buf_addf(buf_t *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(b, fmt, ap);
	va_end(ap);
}

void buf_add_pct(buf_t *b, sv_t s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	buf_grow(b, s.len * 3);
	for (size_t i = 0; i < s.len; i++) {
		unsigned char c = (unsigned char)s.ptr[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
		    c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
			b->ptr[b->len++] = (char)c;
		} else {
			b->ptr[b->len++] = '%';
			b->ptr[b->len++] = hex[c >> 4];
			b->ptr[b->len++] = hex[c & 15];
		}
	}
	b->ptr[b->len] = '\0';
}

void buf_add_json_str(buf_t *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	buf_grow(b, n + 2);
	buf_addch(b, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"': buf_add(b, "\\\"", 2); break;
		case '\\': buf_add(b, "\\\\", 2); break;
		case '\n': buf_add(b, "\\n", 2); break;
		case '\r': buf_add(b, "\\r", 2); break;
		case '\t': buf_add(b, "\\t", 2); break;
		default:
			if (c < 0x20 || c == 0x7f) {
				char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
				buf_add(b, esc, 6);
			} else if (c < 0x80) {
				buf_addch(b, (char)c);
			} else {
				/* a valid UTF-8 sequence as is, anything else as U+FFFD */
				size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
					   : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
				if (len && i + len <= n && utf8_valid(s + i, len)) {
					buf_add(b, s + i, len);
					i += len - 1;
				} else {
					buf_add(b, "\\ufffd", 6);
				}
			}
		}
	}
	buf_addch(b, '"');
}

void buf_reset(buf_t *b)
{
	b->len = 0;
	if (b->ptr)
		b->ptr[0] = '\0';
}

void buf_free(buf_t *b)
{
	free(b->ptr);
	b->ptr = NULL;
	b->len = b->cap = 0;
}

void buf_consume(buf_t *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->ptr, b->ptr + n, b->len - n);
	b->len -= n;
	b->ptr[b->len] = '\0';
}

char *buf_detach(buf_t *b, size_t *len)
{
	if (!b->ptr)
		buf_grow(b, 0), b->ptr[0] = '\0';
	char *p = b->ptr;
	if (len)
		*len = b->len;
	b->ptr = NULL;
	b->len = b->cap = 0;
	return p;
}

bool sv_eq(sv_t a, sv_t b) { return a.len == b.len && (a.len == 0 || !memcmp(a.ptr, b.ptr, a.len)); }
bool sv_eqcase(sv_t a, sv_t b)
{
	/* byte by byte: strncasecmp would stop at a NUL inside the views */
	if (a.len != b.len)
		return false;
	for (size_t i = 0; i < a.len; i++)
		if (tolower((unsigned char)a.ptr[i]) != tolower((unsigned char)b.ptr[i]))
			return false;
	return true;
}
bool sv_eqstr(sv_t a, const char *s) { return sv_eq(a, sv_from(s)); }

bool sv_startswith(sv_t a, const char *prefix)
{
	size_t n = strlen(prefix);
	return a.len >= n && !memcmp(a.ptr, prefix, n);
}

bool sv_casestartswith(sv_t a, const char *prefix)
{
	size_t n = strlen(prefix);
	return a.len >= n && !strncasecmp(a.ptr, prefix, n);
}

sv_t sv_trim(sv_t a)
{
	while (a.len && (a.ptr[0] == ' ' || a.ptr[0] == '\t'))
		a.ptr++, a.len--;
	while (a.len && (a.ptr[a.len - 1] == ' ' || a.ptr[a.len - 1] == '\t'))
		a.len--;
	return a;
}
