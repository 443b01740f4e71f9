/*
 * names.c - bucket and object name rules (see names.h).
 */
#include <string.h>
#include <strings.h>

#include "aisd/names.h"
#include "aisd/banned.h"

bool name_bucket_valid(const char *s, size_t len)
{
	if (len == 0 || len > NAME_BUCKET_MAX)
		return false;
	if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

bool name_ident_valid(const char *s, size_t len, size_t max)
{
	if (!len || len > max)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

bool utf8_valid(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;
	while (i < len) {
		unsigned char c = s[i];
		size_t n;
		unsigned cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1, cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2, cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3, cp = c & 0x07;
		} else {
			return false;
		}
		if (i + n >= len)
			return false;
		for (size_t j = 1; j <= n; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		/* overlong forms, surrogates, beyond U+10FFFF */
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return false;
		i += n + 1;
	}
	return true;
}

bool name_archpath_valid(const char *s, size_t len)
{
	if (len == 0 || len > NAME_OBJECT_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\0')
			return false;
	return utf8_valid(s, len);
}

bool name_custom_reserved(const char *md, size_t len)
{
	/* the cluster's own keys (tests/unit/test_names.c holds every one of
	 * them here): S3's metadata, owner and ACL (s3.), a remote's ETag
	 * (bk.), versions and object locks (ver., lock.: olver.h), the run
	 * that wrote a shard (archive.run: xarch.h; dsort.run: dsort.h), and
	 * ais. for keys to come */
	static const char *const reserved[] = {"s3.", "bk.", "ver.", "lock.", "archive.", "dsort.", "ais."};
	const char *p = md, *end = md + len;
	while (p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *stop = c ? c : end;
		const char *eq = memchr(p, '=', (size_t)(stop - p));
		const char *k = p, *ke = eq ? eq : stop;
		while (k < ke && (*k == ' ' || *k == '\t'))
			k++;
		for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
			size_t rl = strlen(reserved[i]);
			if ((size_t)(ke - k) >= rl && !strncasecmp(k, reserved[i], rl))
				return true;
		}
		p = stop + 1;
	}
	return false;
}

bool name_has_dot_segment(const char *s, size_t len)
{
	size_t seg = 0; /* start of the current segment */
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '/')
			continue;
		size_t n = i - seg;
		if ((n == 1 && s[seg] == '.') || (n == 2 && s[seg] == '.' && s[seg + 1] == '.'))
			return true;
		seg = i + 1;
	}
	return false;
}

size_t name_version_of(const char *s, size_t len)
{
	if (len <= NAME_VER_TAG_LEN + NAME_VER_ID_LEN)
		return 0;
	size_t k = len - NAME_VER_ID_LEN - NAME_VER_TAG_LEN;
	if (memcmp(s + k, NAME_VER_TAG, NAME_VER_TAG_LEN))
		return 0;
	for (size_t i = len - NAME_VER_ID_LEN; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return k;
}

bool name_object_valid(const char *s, size_t len)
{
	return name_archpath_valid(s, len) && !name_has_dot_segment(s, len);
}

/* Decimal digits, len of them (1..19), into *out. */
static bool tpl_num(const char *s, size_t len, unsigned long long *out)
{
	if (!len || len > 19)
		return false;
	unsigned long long v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*out = v;
	return true;
}

bool name_tpl_parse(const char *s, name_tpl_t *t)
{
	const char *o = strchr(s, '{'), *dots = o ? strstr(o, "..") : NULL, *c = dots ? strchr(dots, '}') : NULL;
	if (!c || !tpl_num(o + 1, (size_t)(dots - o - 1), &t->a) || !tpl_num(dots + 2, (size_t)(c - dots - 2), &t->b) ||
	    t->b < t->a || t->b - t->a > NAME_TPL_SPAN_MAX)
		return false;
	t->pre = s;
	t->pre_len = (size_t)(o - s);
	t->post = c + 1;
	t->post_len = strlen(c + 1);
	t->width = (int)(dots - o - 1);
	return true;
}

bool name_tpl_match(const name_tpl_t *t, const char *s, size_t len)
{
	if (len <= t->pre_len + t->post_len || memcmp(s, t->pre, t->pre_len) ||
	    memcmp(s + len - t->post_len, t->post, t->post_len))
		return false;
	const char *d = s + t->pre_len;
	size_t dl = len - t->pre_len - t->post_len;
	unsigned long long v;
	/* zero-padded to the width exactly, or wider without a leading 0 */
	if (!tpl_num(d, dl, &v) || (int)dl < t->width || ((int)dl > t->width && d[0] == '0' && dl > 1))
		return false;
	return v >= t->a && v <= t->b;
}
