/*
 * util.c - allocation that aborts on failure, strict number parsing, time,
 * hex helpers and full writes. Every number read from outside goes through
 * num_parse_u64, which accepts digits only and checks the range.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

static void oom(size_t n)
{
	fatalx("out of memory allocating %zu bytes", n);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		oom(nmemb * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

int num_parse_u64(const char *s, size_t len, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 20)
		return AIS_ERR;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';
		if (d > 9)
			return AIS_ERR;
		if (v > (UINT64_MAX - d) / 10)
			return AIS_ERR;
		v = v * 10 + d;
	}
	if (v < min || v > max)
		return AIS_ERR;
	*out = v;
	return AIS_OK;
}

int num_parse_size(const char *s, uint64_t *out)
{
	size_t n = strlen(s), digits = 0;
	uint64_t v, mult = 1;

	while (digits < n && s[digits] >= '0' && s[digits] <= '9')
		digits++;
	if (num_parse_u64(s, digits, 0, UINT64_MAX, &v) != AIS_OK)
		return AIS_ERR;
	const char *suf = s + digits;
	if (*suf) {
		switch (*suf | 0x20) {
		case 'k': mult = 1ULL << 10; break;
		case 'm': mult = 1ULL << 20; break;
		case 'g': mult = 1ULL << 30; break;
		case 't': mult = 1ULL << 40; break;
		case 'b': mult = 1; suf--; break;
		default: return AIS_ERR;
		}
		suf++;
		if (strcmp(suf, "") && strcasecmp(suf, "b") && strcasecmp(suf, "ib"))
			return AIS_ERR;
	}
	if (mult > 1 && v > UINT64_MAX / mult)
		return AIS_ERR;
	*out = v * mult;
	return AIS_OK;
}

static _Atomic int64_t g_clock_offset_ns; /* debug.clock_offset: a test hook */

void time_set_offset_ns(int64_t ns) { atomic_store(&g_clock_offset_ns, ns); }

int64_t time_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + atomic_load_explicit(&g_clock_offset_ns, memory_order_relaxed);
}

int64_t time_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t g_start_mono_ns;
__attribute__((constructor)) static void time_start_init(void) { g_start_mono_ns = time_mono_ns(); }
uint64_t time_uptime_s(void) { return (uint64_t)((time_mono_ns() - g_start_mono_ns) / 1000000000LL); }

static const char *const wdays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
				     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

char *fmt_digits(char *p, uint64_t v, int width)
{
	for (int i = width - 1; i >= 0; i--, v /= 10)
		p[i] = (char)('0' + v % 10);
	return p + width;
}

void time_gmtime(int64_t s, struct tm *tm)
{
	/* days to a civil date (H. Hinnant's days_from_civil, inverted): pure
	 * arithmetic, where gmtime_r takes glibc's time zone lock */
	int64_t days = s / 86400, sec = s % 86400;
	if (sec < 0)
		sec += 86400, days--;
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;                                     /* [0, 146096] */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365], from March 1 */
	int64_t mp = (5 * doy + 2) / 153;                                    /* [0, 11], March first */
	int64_t mon = mp < 10 ? mp + 3 : mp - 9;                             /* [1, 12] */
	int64_t year = yoe + era * 400 + (mon <= 2);
	*tm = (struct tm){.tm_sec = (int)(sec % 60), .tm_min = (int)(sec / 60 % 60), .tm_hour = (int)(sec / 3600),
			  .tm_mday = (int)(doy - (153 * mp + 2) / 5 + 1), .tm_mon = (int)(mon - 1),
			  .tm_year = (int)(year - 1900), .tm_wday = (int)(((days % 7) + 11) % 7)};
}

void time_http_date(int64_t t_ns, char *out, size_t outsz)
{
	struct tm tm;
	char b[32], *p = b;
	int64_t s = t_ns / 1000000000LL;
	if (t_ns < 0 && t_ns % 1000000000LL)
		s--; /* the second it falls in */
	time_gmtime(s, &tm);
	if (!outsz)
		return;
	if (tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999) {
		snprintf(out, outsz, "%s, %02d %s %04d %02d:%02d:%02d GMT", wdays[tm.tm_wday], tm.tm_mday,
			 months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
		return;
	}
	memcpy(p, wdays[tm.tm_wday], 3);
	p += 3;
	*p++ = ',';
	*p++ = ' ';
	p = fmt_digits(p, (uint64_t)tm.tm_mday, 2);
	*p++ = ' ';
	memcpy(p, months[tm.tm_mon], 3);
	p += 3;
	*p++ = ' ';
	p = fmt_digits(p, (uint64_t)tm.tm_year + 1900, 4);
	*p++ = ' ';
	p = fmt_digits(p, (uint64_t)tm.tm_hour, 2);
	*p++ = ':';
	p = fmt_digits(p, (uint64_t)tm.tm_min, 2);
	*p++ = ':';
	p = fmt_digits(p, (uint64_t)tm.tm_sec, 2);
	memcpy(p, " GMT", 4);
	p += 4;
	size_t n = MIN((size_t)(p - b), outsz - 1); /* truncated as snprintf would */
	memcpy(out, b, n);
	out[n] = '\0';
}

int time_parse_http_date(const char *s, size_t len, int64_t *t_ns)
{
	static const char *const fmts[] = {
		"%a, %d %b %Y %H:%M:%S GMT", /* IMF-fixdate */
		"%A, %d-%b-%y %H:%M:%S GMT", /* RFC 850 */
		"%a %b %e %H:%M:%S %Y",      /* asctime */
	};
	char tmp[64];

	if (len == 0 || len >= sizeof(tmp))
		return AIS_ERR;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(fmts) + 1; i++) {
		struct tm tm;
		int64_t off = 0;
		memset(&tm, 0, sizeof(tm));
		const char *end = strptime(tmp, i < ARRAY_SIZE(fmts) ? fmts[i] : "%a, %d %b %Y %H:%M:%S ", &tm);
		if (end && i == ARRAY_SIZE(fmts)) {
			/* RFC 5322 numeric zone "+hhmm" / "-hhmm" (-0000: UTC) */
			if (strlen(end) != 5 || (end[0] != '+' && end[0] != '-'))
				continue;
			int d[4];
			for (int k = 0; k < 4; k++)
				d[k] = end[1 + k] >= '0' && end[1 + k] <= '9' ? end[1 + k] - '0' : -1;
			if (d[0] < 0 || d[1] < 0 || d[2] < 0 || d[3] < 0 || d[2] > 5)
				continue;
			off = (int64_t)((d[0] * 10 + d[1]) * 3600 + (d[2] * 10 + d[3]) * 60);
			if (end[0] == '-')
				off = -off;
			end += 5;
		}
		if (end && *end == '\0') {
			time_t t = timegm(&tm);
			if (t == (time_t)-1)
				return AIS_ERR;
			int64_t sec = (int64_t)t - off, lim = INT64_MAX / 1000000000LL;
			*t_ns = sec > lim ? INT64_MAX : sec < -lim ? -INT64_MAX : sec * 1000000000LL;
			return AIS_OK;
		}
	}
	return AIS_ERR;
}

void hex_encode(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int hex_decode(const char *in, size_t inlen, unsigned char *out, size_t outsz)
{
	if (inlen % 2 || inlen / 2 > outsz)
		return AIS_ERR;
	for (size_t i = 0; i < inlen / 2; i++) {
		int hi = hexval(in[2 * i]), lo = hexval(in[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return AIS_ERR;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return AIS_OK;
}

int fd_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return AIS_ERR;
		}
		c += w;
		n -= (size_t)w;
	}
	return AIS_OK;
}

/* --- files written whole ------------------------------------------------------------ */

static int write_fail(buf_t *err, const char *what, const char *path)
{
	int e = errno;
	if (err)
		buf_addf(err, "%s %s: %s", what, path, strerror(e));
	errno = e;
	return AIS_ERR;
}

static int fsync_dir(const char *path)
{
	char *copy = xstrdup(path);
	const char *dir = dirname(copy);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = -1;
	if (fd >= 0) {
		rc = fsync(fd);
		int e = errno;
		close(fd);
		errno = e;
	}
	free(copy);
	return rc;
}

int file_write_atomic(const char *path, const void *data, size_t len, buf_t *err)
{
	buf_t tmp = BUF_INIT;
	int rc = AIS_ERR;

	buf_addf(&tmp, "%s.tmp", path);
	int fd = open(tmp.ptr, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		write_fail(err, "create", tmp.ptr);
		goto out_buf;
	}
	if (fchmod(fd, 0600) < 0) { /* (a temp file a crash left keeps its mode) */
		write_fail(err, "chmod", tmp.ptr);
		goto out_close;
	}
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, (const char *)data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			write_fail(err, "write", tmp.ptr);
			goto out_close;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0) {
		write_fail(err, "fsync", tmp.ptr);
		goto out_close;
	}
	if (close(fd) < 0) {
		fd = -1;
		write_fail(err, "close", tmp.ptr);
		goto out_unlink;
	}
	fd = -1;
	if (rename(tmp.ptr, path) < 0) {
		write_fail(err, "rename to", path);
		goto out_unlink;
	}
	if (fsync_dir(path) < 0) {
		/* the new file is in place; only its durability is in doubt */
		write_fail(err, "fsync the directory of", path);
		goto out_buf;
	}
	rc = AIS_OK;
	goto out_buf;
out_close:
	close(fd);
out_unlink: {
	int e = errno;
	unlink(tmp.ptr);
	errno = e;
}
out_buf:
	buf_free(&tmp);
	return rc;
}
