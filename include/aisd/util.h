/*
 * util.h - allocation that never fails, numbers parsed strictly, time,
 * hex, full writes.
 *
 * Out of memory aborts with a log line: callers never check for NULL from
 * xmalloc and friends.
 */
#ifndef AISD_UTIL_H
#define AISD_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "aisd/buf.h"

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* Each evaluates an argument twice: no side effects, no racing loads in them. */
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/*
 * num_parse_u64 parses exactly len bytes of decimal digits into *out and
 * checks min <= value <= max. No sign, no spaces, no empty string.
 * Returns AIS_OK, or AIS_ERR on anything else (*out untouched).
 */
int num_parse_u64(const char *s, size_t len, uint64_t min, uint64_t max, uint64_t *out);

/* num_parse_size accepts a number with an optional K, M, G, T suffix
 * (powers of 1024, optional "iB"/"B"). Returns AIS_OK or AIS_ERR. */
int num_parse_size(const char *s, uint64_t *out);

/* Wall clock in nanoseconds since the epoch; monotonic clock in ns. */
int64_t time_now_ns(void);
/* Shifts time_now_ns by ns from now on (the test hook debug.clock_offset:
 * a node whose clock runs ahead or behind; the monotonic clock is not
 * shifted). */
void time_set_offset_ns(int64_t ns);
int64_t time_mono_ns(void);
/* Seconds since the process started (the one uptime clock). */
uint64_t time_uptime_s(void);

/* Writes v as exactly width decimal digits (its last width, zero-padded)
 * at p; returns p + width. No NUL. */
char *fmt_digits(char *p, uint64_t v, int width);
/* gmtime_r without its lock: the UTC calendar fields of s (seconds since
 * the epoch; tm_sec..tm_year and tm_wday; the rest zero). */
struct tm;
void time_gmtime(int64_t s, struct tm *tm);
/* Formats t (ns since epoch) as an RFC 7231 HTTP date into out (>= 30 bytes). */
void time_http_date(int64_t t_ns, char *out, size_t outsz);
/* Parses an HTTP date (RFC 7231 IMF-fixdate, RFC 850, asctime), or an
 * RFC 5322 date with a numeric zone ("Sun, 06 Nov 1994 08:49:37 -0000",
 * what Python's email.utils.formatdate and so botocore send as Date).
 * Returns AIS_OK with *t_ns set (past the years 1677..2262 that nanoseconds
 * hold: saturated to +-INT64_MAX), or AIS_ERR. */
int time_parse_http_date(const char *s, size_t len, int64_t *t_ns);

/* Writes all n bytes to fd, again after a short write or EINTR. Returns
 * AIS_OK, or AIS_ERR with errno from write(2). */
int fd_write_all(int fd, const void *p, size_t n);
/* Replaces the file path with len bytes of data, atomically and durably:
 * a temporary file beside it (mode 0600), written, fsynced, renamed over
 * path, and the directory fsynced. AIS_OK, or AIS_ERR with errno and err
 * (may be NULL) saying which step failed; a failed write leaves path as it
 * was. */
int file_write_atomic(const char *path, const void *data, size_t len, buf_t *err);

/* Lower-case hex of n bytes into out (2n+1 bytes, NUL-terminated). */
void hex_encode(const unsigned char *in, size_t n, char *out);
/* Decodes 2n hex chars into n bytes; AIS_OK or AIS_ERR. */
int hex_decode(const char *in, size_t inlen, unsigned char *out, size_t outsz);

#endif
