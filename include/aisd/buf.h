/*
 * buf.h - owned growable byte buffer and borrowed string view.
 *
 * Rules:
 *  1. A buf_t owns its memory; buf_free releases it. A zeroed buf_t (BUF_INIT)
 *     is valid and empty.
 *  2. buf.ptr is always NUL-terminated when non-NULL (not counted in len), so
 *     buf.ptr can be passed to C string functions; the bytes may contain NULs.
 *  3. An sv_t borrows: it is valid as long as what it points into.
 *  4. Growth never fails (out of memory aborts).
 */
#ifndef AISD_BUF_H
#define AISD_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct buf {
	char *ptr;
	size_t len;
	size_t cap;
} buf_t;

typedef struct sv {
	const char *ptr;
	size_t len;
} sv_t;

#define BUF_INIT {NULL, 0, 0}
#define SV(lit) ((sv_t){(lit), sizeof(lit) - 1})

void buf_grow(buf_t *b, size_t extra);
void buf_add(buf_t *b, const void *p, size_t n);
void buf_addstr(buf_t *b, const char *s);
void buf_addch(buf_t *b, char c);
void buf_addsv(buf_t *b, sv_t s);
/* Appends v in decimal (what "%llu" / "%lld" print, without printf's cost). */
void buf_addu64(buf_t *b, uint64_t v);
void buf_addi64(buf_t *b, int64_t v);
void buf_addf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vaddf(buf_t *b, const char *fmt, va_list ap);
/* Appends s as a JSON string literal, quotes included; control bytes are
 * escaped and bytes that are not valid UTF-8 become \ufffd. */
void buf_add_json_str(buf_t *b, const char *s, size_t n);
/* Appends s percent-encoded for a URL path or query: every byte but the
 * unreserved [A-Za-z0-9._~-] (and '/' when keep_slash) becomes %XX with
 * upper-case hex, as S3's SigV4 canonical URI wants it. */
void buf_add_pct(buf_t *b, sv_t s, bool keep_slash);
void buf_reset(buf_t *b);
void buf_free(buf_t *b);
/* Drops the first n bytes. */
void buf_consume(buf_t *b, size_t n);
/* Hands the memory to the caller (free() it) and leaves b empty. */
char *buf_detach(buf_t *b, size_t *len);

static inline sv_t sv_from(const char *s) { return (sv_t){s, s ? strlen(s) : 0}; }
static inline sv_t sv_of(const buf_t *b) { return (sv_t){b->ptr, b->len}; }
bool sv_eq(sv_t a, sv_t b);
bool sv_eqcase(sv_t a, sv_t b);
bool sv_eqstr(sv_t a, const char *s);
bool sv_startswith(sv_t a, const char *prefix);
bool sv_casestartswith(sv_t a, const char *prefix);
sv_t sv_trim(sv_t a);

#endif
