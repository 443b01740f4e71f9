/*
 * test_util.c - strict number parsing, sizes, HTTP dates, hex, the
 * allocation helpers, the clock offset (debug.clock_offset) and the hybrid
 * logical clock (hlc.h).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aisd/hlc.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define SEC 1000000000LL

static int u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return num_parse_u64(s, strlen(s), min, max, out);
}

START_TEST(test_u64_ok)
{
	uint64_t v = 77;
	ck_assert_int_eq(u64("0", 0, UINT64_MAX, &v), AIS_OK);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(u64("1", 0, UINT64_MAX, &v), AIS_OK);
	ck_assert_uint_eq(v, 1);
	ck_assert_int_eq(u64("007", 0, UINT64_MAX, &v), AIS_OK);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(u64("1234567890", 0, UINT64_MAX, &v), AIS_OK);
	ck_assert_uint_eq(v, 1234567890);
	ck_assert_int_eq(u64("18446744073709551615", 0, UINT64_MAX, &v), AIS_OK);
	ck_assert_uint_eq(v, UINT64_MAX);
	/* exactly len bytes: what follows is not looked at */
	ck_assert_int_eq(num_parse_u64("12345", 3, 0, UINT64_MAX, &v), AIS_OK);
	ck_assert_uint_eq(v, 123);
	ck_assert_int_eq(num_parse_u64("42x", 2, 0, UINT64_MAX, &v), AIS_OK);
	ck_assert_uint_eq(v, 42);
}
END_TEST

START_TEST(test_u64_bad)
{
	uint64_t v = 77;
	ck_assert_int_eq(u64("", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(num_parse_u64(NULL, 0, 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("-1", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("+1", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("-0", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64(" 1", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("1 ", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("1\n", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("0x10", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("1e3", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("1.0", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("1,000", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("abc", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(num_parse_u64("1\0" "2", 3, 0, UINT64_MAX, &v), AIS_ERR);
	/* 2^64 and beyond */
	ck_assert_int_eq(u64("18446744073709551616", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("18446744073709551620", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("20000000000000000000", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("99999999999999999999", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("184467440737095516150", 0, UINT64_MAX, &v), AIS_ERR);
	ck_assert_int_eq(u64("999999999999999999999999", 0, UINT64_MAX, &v), AIS_ERR);
	/* *out untouched on error */
	ck_assert_uint_eq(v, 77);
}
END_TEST

START_TEST(test_u64_bounds)
{
	uint64_t v = 77;
	ck_assert_int_eq(u64("10", 10, 20, &v), AIS_OK);
	ck_assert_uint_eq(v, 10);
	ck_assert_int_eq(u64("20", 10, 20, &v), AIS_OK);
	ck_assert_uint_eq(v, 20);
	v = 77;
	ck_assert_int_eq(u64("9", 10, 20, &v), AIS_ERR);
	ck_assert_int_eq(u64("21", 10, 20, &v), AIS_ERR);
	ck_assert_int_eq(u64("0", 1, 65535, &v), AIS_ERR);
	ck_assert_int_eq(u64("65536", 1, 65535, &v), AIS_ERR);
	ck_assert_uint_eq(v, 77);
	ck_assert_int_eq(u64("65535", 1, 65535, &v), AIS_OK);
	ck_assert_uint_eq(v, 65535);
	ck_assert_int_eq(u64("5", 5, 5, &v), AIS_OK);
	ck_assert_uint_eq(v, 5);
}
END_TEST

START_TEST(test_size_ok)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{"0", 0},
		{"1", 1},
		{"4096", 4096},
		{"1B", 1},
		{"10b", 10},
		{"1K", 1024},
		{"1k", 1024},
		{"1KB", 1024},
		{"1kb", 1024},
		{"1KiB", 1024},
		{"1kib", 1024},
		{"16KiB", 16384},
		{"2M", 2ULL << 20},
		{"2MiB", 2ULL << 20},
		{"64MB", 64ULL << 20},
		{"3G", 3ULL << 30},
		{"3GiB", 3ULL << 30},
		{"4T", 4ULL << 40},
		{"4TiB", 4ULL << 40},
		{"0K", 0},
		{"16777215T", 16777215ULL << 40},
		{"18446744073709551615", UINT64_MAX},
		{"18446744073709551615B", UINT64_MAX},
	};
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		uint64_t v = 7;
		ck_assert_msg(num_parse_size(ok[i].s, &v) == AIS_OK, "'%s' rejected", ok[i].s);
		ck_assert_msg(v == ok[i].v, "'%s' = %llu", ok[i].s, (unsigned long long)v);
	}
}
END_TEST

START_TEST(test_size_bad)
{
	static const char *const bad[] = {
		"", "K", "KiB", "B", "-1", "+1", " 1", "1 ", "1 K", "1.5K", "1e3", "1P", "1E",
		"1X", "1Ki", "1iB", "1KiBx", "1KBB", "1KK", "1BB", "1bib", "1kilobyte", "1K ",
		"0x10", "16777216T", "17179869184G", "18446744073709551616", "99999999999999999999K",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		uint64_t v = 7;
		ck_assert_msg(num_parse_size(bad[i], &v) == AIS_ERR, "'%s' accepted", bad[i]);
		ck_assert_uint_eq(v, 7);
	}
}
END_TEST

START_TEST(test_http_date_format)
{
	char out[64];
	time_http_date(0, out, sizeof(out));
	ck_assert_str_eq(out, "Thu, 01 Jan 1970 00:00:00 GMT");
	time_http_date(784111777LL * SEC, out, sizeof(out));
	ck_assert_str_eq(out, "Sun, 06 Nov 1994 08:49:37 GMT");
	/* sub-second part dropped */
	time_http_date(784111777LL * SEC + 999999999, out, sizeof(out));
	ck_assert_str_eq(out, "Sun, 06 Nov 1994 08:49:37 GMT");
	time_http_date(951782400LL * SEC, out, sizeof(out)); /* leap day 2000 */
	ck_assert_str_eq(out, "Tue, 29 Feb 2000 00:00:00 GMT");
	time_http_date(4102444799LL * SEC, out, sizeof(out)); /* past 2038 */
	ck_assert_str_eq(out, "Thu, 31 Dec 2099 23:59:59 GMT");
	/* the documented minimum buffer is enough */
	char small[30];
	time_http_date(784111777LL * SEC, small, sizeof(small));
	ck_assert_str_eq(small, "Sun, 06 Nov 1994 08:49:37 GMT");
}
END_TEST

/* time_gmtime, the lock-free gmtime_r, gives gmtime_r's fields for every
 * day from 1900 to 2400 (leap centuries both ways) and the seconds at the
 * edges of days; time_http_date truncates as snprintf. */
START_TEST(test_gmtime_matches_libc)
{
	for (int64_t s = -2208988800LL; s < 13569465600LL; s += 86400 - 1) {
		for (int64_t d = 0; d < 2; d++) {
			time_t t = (time_t)(s + d);
			struct tm a, b;
			gmtime_r(&t, &a);
			time_gmtime(s + d, &b);
			ck_assert_msg(a.tm_year == b.tm_year && a.tm_mon == b.tm_mon && a.tm_mday == b.tm_mday &&
					      a.tm_hour == b.tm_hour && a.tm_min == b.tm_min && a.tm_sec == b.tm_sec &&
					      a.tm_wday == b.tm_wday,
				      "%lld: %d-%d-%d %d:%d:%d wday %d, want %d-%d-%d %d:%d:%d wday %d", (long long)t,
				      b.tm_year, b.tm_mon, b.tm_mday, b.tm_hour, b.tm_min, b.tm_sec, b.tm_wday,
				      a.tm_year, a.tm_mon, a.tm_mday, a.tm_hour, a.tm_min, a.tm_sec, a.tm_wday);
		}
	}
	char out[64], small[10];
	time_http_date(-1, out, sizeof(out)); /* the second before the epoch */
	ck_assert_str_eq(out, "Wed, 31 Dec 1969 23:59:59 GMT");
	time_http_date(784111777LL * SEC, small, sizeof(small));
	ck_assert_str_eq(small, "Sun, 06 N");
	char d[8];
	ck_assert_ptr_eq(fmt_digits(d, 7, 3), d + 3);
	ck_assert(!memcmp(d, "007", 3));
	fmt_digits(d, 123456, 4);
	ck_assert(!memcmp(d, "3456", 4));
}
END_TEST

static int64_t parse_date(const char *s)
{
	int64_t t = -42;
	if (time_parse_http_date(s, strlen(s), &t) != AIS_OK)
		return -1;
	return t;
}

START_TEST(test_http_date_forms)
{
	const int64_t want = 784111777LL * SEC;
	ck_assert_int_eq(parse_date("Sun, 06 Nov 1994 08:49:37 GMT"), want);  /* IMF-fixdate */
	ck_assert_int_eq(parse_date("Sunday, 06-Nov-94 08:49:37 GMT"), want); /* RFC 850 */
	ck_assert_int_eq(parse_date("Sun Nov  6 08:49:37 1994"), want);       /* asctime */
	ck_assert_int_eq(parse_date("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
	ck_assert_int_eq(parse_date("Tue, 29 Feb 2000 00:00:00 GMT"), 951782400LL * SEC);
	ck_assert_int_eq(parse_date("Wed Dec 31 23:59:59 2099"), 4102444799LL * SEC);
	/* RFC 5322 numeric zones */
	ck_assert_int_eq(parse_date("Sun, 06 Nov 1994 08:49:37 -0000"), want);
	ck_assert_int_eq(parse_date("Sun, 06 Nov 1994 08:49:37 +0000"), want);
	ck_assert_int_eq(parse_date("Sun, 06 Nov 1994 10:19:37 +0130"), want);
	ck_assert_int_eq(parse_date("Sun, 06 Nov 1994 03:49:37 -0500"), want);
	/* exactly len bytes */
	int64_t t = 0;
	const char *s = "Sun, 06 Nov 1994 08:49:37 GMTxyz";
	ck_assert_int_eq(time_parse_http_date(s, strlen(s) - 3, &t), AIS_OK);
	ck_assert_int_eq(t, want);
}
END_TEST

START_TEST(test_http_date_bad)
{
	static const char *const bad[] = {
		"",
		"yesterday",
		"Sun, 06 Nov 1994 08:49:37",
		"Sun, 06 Nov 1994 08:49:37 GMT trailing",
		"Sun, 06 Nov 1994 08:49:37 +000",
		"Sun, 06 Nov 1994 08:49:37 +00000",
		"Sun, 06 Nov 1994 08:49:37 +0a00",
		"Sun, 06 Nov 1994 08:49:37 +0060",
		"Sun, 06 Nov 1994 08:49:37 0000",
		"Sun, 06 Nov 1994 08:49 GMT",
		"Sun, 32 Nov 1994 08:49:37 GMT",
		"Sun, 06 Foo 1994 08:49:37 GMT",
		"Sun, 06 Nov 1994 25:49:37 GMT",
		"Sun, 06 Nov 1994 08:60:37 GMT",
		"Sun Nov  6 08:49:37",
		"1994-11-06T08:49:37Z",
		"784111777",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int64_t t = -42;
		ck_assert_msg(time_parse_http_date(bad[i], strlen(bad[i]), &t) == AIS_ERR,
			      "'%s' accepted", bad[i]);
		ck_assert_int_eq(t, -42);
	}
	/* too long for the parser's buffer: refused, not truncated */
	char longs[200];
	memset(longs, ' ', sizeof(longs));
	memcpy(longs, "Sun, 06 Nov 1994 08:49:37 GMT", 29);
	int64_t t = -42;
	ck_assert_int_eq(time_parse_http_date(longs, sizeof(longs), &t), AIS_ERR);
	/* past what nanoseconds hold: saturated, never an overflow */
	const char *far = "Tue, 07 Jul 9999 21:53:04 GMT", *early = "Tue, 07 Jul 1950 21:53:04 GMT";
	ck_assert_int_eq(time_parse_http_date(far, strlen(far), &t), AIS_OK);
	ck_assert(t == INT64_MAX);
	ck_assert_int_eq(time_parse_http_date(early, strlen(early), &t), AIS_OK);
	ck_assert(t == -614916416LL * 1000000000LL);
}
END_TEST

START_TEST(test_http_date_round_trip)
{
	char out[64];
	/* a second in every few weeks from 1970 to 2100, odd offsets */
	for (int64_t s = 0; s < 4102444800LL; s += 1234567 + 89) {
		time_http_date(s * SEC, out, sizeof(out));
		int64_t t = -1;
		ck_assert_msg(time_parse_http_date(out, strlen(out), &t) == AIS_OK, "'%s'", out);
		ck_assert_msg(t == s * SEC, "'%s' -> %lld, want %lld", out, (long long)t,
			      (long long)(s * SEC));
	}
	/* now */
	int64_t now = time_now_ns();
	time_http_date(now, out, sizeof(out));
	int64_t t = -1;
	ck_assert_int_eq(time_parse_http_date(out, strlen(out), &t), AIS_OK);
	ck_assert_int_eq(t, now / SEC * SEC);
}
END_TEST

START_TEST(test_clocks)
{
	int64_t a = time_mono_ns(), b = time_mono_ns();
	ck_assert_int_ge(b, a);
	/* after 2020-01-01 */
	ck_assert_int_gt(time_now_ns(), 1577836800LL * SEC);
}
END_TEST

/* time_set_offset_ns shifts the wall clock, not the monotonic one. */
START_TEST(test_clock_offset)
{
	int64_t a = time_now_ns();
	time_set_offset_ns(-600 * SEC);
	int64_t b = time_now_ns();
	time_set_offset_ns(0);
	ck_assert_int_lt(b, a - 599 * SEC);
	ck_assert_int_gt(b, a - 601 * SEC);
	ck_assert_int_ge(time_now_ns(), a);
}
END_TEST

/* hlc.h guarantees 1-4: increasing; above what was observed; the physical
 * part runs with the fastest clock seen; a stamp a day ahead is refused. */
START_TEST(test_hlc)
{
	hlc_reset();
	int64_t a = hlc_now(), b = hlc_now(), w = time_now_ns();
	ck_assert_int_gt(b, a);
	ck_assert_int_le(a, w);
	ck_assert_int_eq(hlc_ahead(), 0);
	/* a peer 10 minutes ahead: every stamp from now on is above its clock */
	ck_assert(hlc_observe(w + 600 * SEC));
	int64_t c = hlc_now();
	ck_assert_int_gt(c, w + 600 * SEC);
	ck_assert_int_ge(hlc_ahead(), 599 * SEC);
	ck_assert_int_ge(hlc_peek(), c);
	/* ... and it advances with this node's clock, not only by one */
	usleep(20000);
	ck_assert_int_ge(hlc_now(), c + 10000000);
	/* older stamps change nothing; garbage and a stamp 2 days ahead are refused */
	int64_t d = hlc_now();
	ck_assert(hlc_observe(a));
	ck_assert_int_gt(hlc_now(), d);
	ck_assert(!hlc_observe(time_now_ns() + 2 * 86400 * SEC));
	ck_assert(!hlc_observe(0));
	ck_assert(!hlc_observe_text("12x", 3));
	ck_assert(!hlc_observe_text("", 0));
	ck_assert(hlc_observe_text("5", 1));
	ck_assert_int_lt(hlc_ahead(), 601 * SEC);
	/* a node whose clock runs behind (the offset hook) still stamps after it */
	hlc_reset();
	ck_assert(hlc_observe(time_now_ns() + 600 * SEC));
	int64_t ahead_stamp = time_now_ns() + 600 * SEC;
	time_set_offset_ns(-600 * SEC);
	ck_assert(hlc_observe(time_now_ns() + 1200 * SEC)); /* as seen from the slow clock */
	ck_assert_int_gt(hlc_now(), ahead_stamp - SEC);
	time_set_offset_ns(0);
	hlc_reset();
}
END_TEST

START_TEST(test_hex)
{
	static const unsigned char bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xcd, 0xef, 0xff};
	char out[2 * sizeof(bytes) + 1];
	unsigned char back[sizeof(bytes)];

	hex_encode(bytes, sizeof(bytes), out);
	ck_assert_str_eq(out, "00017f80abcdefff");
	ck_assert_int_eq(hex_decode(out, strlen(out), back, sizeof(back)), AIS_OK);
	ck_assert(!memcmp(back, bytes, sizeof(bytes)));

	ck_assert_int_eq(hex_decode("ABCDEF", 6, back, sizeof(back)), AIS_OK);
	ck_assert_uint_eq(back[0], 0xab);
	ck_assert_uint_eq(back[1], 0xcd);
	ck_assert_uint_eq(back[2], 0xef);
	ck_assert_int_eq(hex_decode("aBcD", 4, back, sizeof(back)), AIS_OK);
	ck_assert_uint_eq(back[0], 0xab);
	ck_assert_uint_eq(back[1], 0xcd);

	char empty[1] = {'x'};
	hex_encode(bytes, 0, empty);
	ck_assert_str_eq(empty, "");
	ck_assert_int_eq(hex_decode("", 0, back, sizeof(back)), AIS_OK);

	ck_assert_int_eq(hex_decode("abc", 3, back, sizeof(back)), AIS_ERR);    /* odd */
	ck_assert_int_eq(hex_decode("zz", 2, back, sizeof(back)), AIS_ERR);
	ck_assert_int_eq(hex_decode("0g", 2, back, sizeof(back)), AIS_ERR);
	ck_assert_int_eq(hex_decode("g0", 2, back, sizeof(back)), AIS_ERR);
	ck_assert_int_eq(hex_decode(" 0", 2, back, sizeof(back)), AIS_ERR);
	ck_assert_int_eq(hex_decode("0x", 2, back, sizeof(back)), AIS_ERR);
	ck_assert_int_eq(hex_decode("-1", 2, back, sizeof(back)), AIS_ERR);
	ck_assert_int_eq(hex_decode("GF", 2, back, sizeof(back)), AIS_ERR);
	ck_assert_int_eq(hex_decode("\xc1\xc1", 2, back, sizeof(back)), AIS_ERR);
	ck_assert_int_eq(hex_decode("\x06\x06", 2, back, sizeof(back)), AIS_ERR);
	/* output too small */
	ck_assert_int_eq(hex_decode("001122", 6, back, 2), AIS_ERR);
	ck_assert_int_eq(hex_decode("0011", 4, back, 2), AIS_OK);

	/* every byte value round-trips */
	unsigned char all[256], all2[256];
	char allhex[513];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	hex_encode(all, 256, allhex);
	ck_assert_uint_eq(strlen(allhex), 512);
	ck_assert_int_eq(hex_decode(allhex, 512, all2, sizeof(all2)), AIS_OK);
	ck_assert(!memcmp(all, all2, 256));
}
END_TEST

/* fd_write_all: every byte arrives (a pipe), and a bad descriptor is an error. */
START_TEST(test_write_all)
{
	int p[2];
	char in[3000], out[3000];
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (char)(i * 7);
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(fd_write_all(p[1], in, sizeof(in)), AIS_OK);
	ck_assert_int_eq(fd_write_all(p[1], in, 0), AIS_OK);
	close(p[1]);
	size_t got = 0;
	ssize_t r;
	while (got < sizeof(out) && (r = read(p[0], out + got, sizeof(out) - got)) > 0)
		got += (size_t)r;
	close(p[0]);
	ck_assert_uint_eq(got, sizeof(in));
	ck_assert_mem_eq(in, out, sizeof(in));
	ck_assert_int_eq(fd_write_all(-1, in, 1), AIS_ERR);
}
END_TEST

START_TEST(test_alloc)
{
	char *s = xstrdup("hello");
	ck_assert_str_eq(s, "hello");
	free(s);
	s = xstrndup("hello world", 5);
	ck_assert_str_eq(s, "hello");
	free(s);
	s = xstrndup("a\0b", 3);
	ck_assert(!memcmp(s, "a\0b\0", 4));
	free(s);
	/* zero sizes give a usable pointer */
	void *p = xmalloc(0);
	ck_assert_ptr_nonnull(p);
	p = xrealloc(p, 100);
	memset(p, 1, 100);
	free(p);
	unsigned char *z = xcalloc(10, 10);
	for (int i = 0; i < 100; i++)
		ck_assert_uint_eq(z[i], 0);
	free(z);
	ck_assert_int_eq(MIN(3, 4), 3);
	ck_assert_int_eq(MAX(3, 4), 4);
}
END_TEST

static Suite *util_suite(void)
{
	Suite *s = suite_create("util");
	TCase *num = tcase_create("numbers");
	tcase_add_test(num, test_u64_ok);
	tcase_add_test(num, test_u64_bad);
	tcase_add_test(num, test_u64_bounds);
	tcase_add_test(num, test_size_ok);
	tcase_add_test(num, test_size_bad);
	suite_add_tcase(s, num);
	TCase *tm = tcase_create("time");
	tcase_add_test(tm, test_http_date_format);
	tcase_add_test(tm, test_gmtime_matches_libc);
	tcase_add_test(tm, test_http_date_forms);
	tcase_add_test(tm, test_http_date_bad);
	tcase_add_test(tm, test_http_date_round_trip);
	tcase_add_test(tm, test_clocks);
	tcase_add_test(tm, test_clock_offset);
	tcase_add_test(tm, test_hlc);
	suite_add_tcase(s, tm);
	TCase *misc = tcase_create("misc");
	tcase_add_test(misc, test_hex);
	tcase_add_test(misc, test_alloc);
	tcase_add_test(misc, test_write_all);
	suite_add_tcase(s, misc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(util_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
