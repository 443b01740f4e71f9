/*
 * test_range.c - http_range_parse: single byte ranges, clamping, the
 * unsatisfiable cases (416) and the ones that are ignored (serve it all).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/http.h"
#include "aisd/status.h"
#include "aisd/banned.h"

#define SENTINEL 0xdeadbeefULL

static int rp(const char *h, uint64_t size, uint64_t *start, uint64_t *len)
{
	*start = *len = SENTINEL;
	return http_range_parse(h ? sv_from(h) : (sv_t){NULL, 0}, size, start, len);
}

#define OK(h, size, s, l)                                                                          \
	do {                                                                                       \
		uint64_t st_, ln_;                                                                 \
		int r_ = rp((h), (size), &st_, &ln_);                                              \
		ck_assert_msg(r_ == AIS_OK, "%s (size %llu): %d", (h), (unsigned long long)(size), r_); \
		ck_assert_msg(st_ == (uint64_t)(s) && ln_ == (uint64_t)(l),                        \
			      "%s: start %llu len %llu", (h), (unsigned long long)st_,             \
			      (unsigned long long)ln_);                                            \
	} while (0)

/* Not OK: the result code, and *start / *len untouched. */
#define NOT(h, size, want)                                                                         \
	do {                                                                                       \
		uint64_t st_, ln_;                                                                 \
		int r_ = rp((h), (size), &st_, &ln_);                                              \
		ck_assert_msg(r_ == (want), "%s (size %llu): %d, want %d", (h) ? (h) : "(null)",   \
			      (unsigned long long)(size), r_, (want));                             \
		ck_assert_uint_eq(st_, SENTINEL);                                                  \
		ck_assert_uint_eq(ln_, SENTINEL);                                                  \
	} while (0)
#define IGNORED(h, size) NOT(h, size, AIS_DONE)
#define UNSAT(h, size) NOT(h, size, AIS_ERR)

START_TEST(test_forms)
{
	OK("bytes=0-9", 100, 0, 10);
	OK("bytes=10-19", 100, 10, 10);
	OK("bytes=99-99", 100, 99, 1);
	OK("bytes=0-0", 1, 0, 1);
	OK("bytes=10-", 100, 10, 90);
	OK("bytes=0-", 100, 0, 100);
	OK("bytes=99-", 100, 99, 1);
	OK("bytes=-10", 100, 90, 10);
	OK("bytes=-1", 100, 99, 1);
	OK("bytes=-100", 100, 0, 100);
}
END_TEST

START_TEST(test_clamps)
{
	OK("bytes=50-1000", 100, 50, 50);
	OK("bytes=0-100", 100, 0, 100);
	OK("bytes=-200", 100, 0, 100);
	OK("bytes=-101", 100, 0, 100);
	OK("bytes=0-18446744073709551615", 100, 0, 100);
	OK("bytes=-18446744073709551615", 100, 0, 100);
	/* the largest size: no overflow in the length */
	OK("bytes=0-", UINT64_MAX, 0, UINT64_MAX);
	OK("bytes=0-18446744073709551615", UINT64_MAX, 0, UINT64_MAX);
	OK("bytes=-18446744073709551615", UINT64_MAX, 0, UINT64_MAX);
	OK("bytes=1-", UINT64_MAX, 1, UINT64_MAX - 1);
}
END_TEST

START_TEST(test_unsatisfiable)
{
	UNSAT("bytes=100-", 100);
	UNSAT("bytes=100-200", 100);
	UNSAT("bytes=1000-2000", 100);
	UNSAT("bytes=-0", 100);
	UNSAT("bytes=0-0", 0);
	UNSAT("bytes=0-", 0);
	UNSAT("bytes=-5", 0);
	UNSAT("bytes=-0", 0);
	UNSAT("bytes=18446744073709551615-", 100);
}
END_TEST

START_TEST(test_ignored)
{
	IGNORED(NULL, 100);
	IGNORED("", 100);
	IGNORED("items=0-5", 100);
	IGNORED("bytes 0-5", 100);
	IGNORED("bytes:0-5", 100);
	IGNORED("byte=0-5", 100);
	IGNORED("bytes=", 100);
	IGNORED("bytes=-", 100);
	IGNORED("bytes=5", 100);
	IGNORED("bytes=abc", 100);
	IGNORED("bytes=a-b", 100);
	IGNORED("bytes=--5", 100);
	IGNORED("bytes=+5-6", 100);
	IGNORED("bytes=5-+6", 100);
	IGNORED("bytes=1-2-3", 100);
	IGNORED("bytes=0x10-20", 100);
	IGNORED("bytes=1e3-", 100);
	IGNORED("bytes=0-1,3-4", 100);
	IGNORED("bytes=0-1, 3-4", 100);
	IGNORED("bytes=,0-1", 100);
	IGNORED("bytes=-5,-6", 100);
	IGNORED("bytes=5-3", 100);      /* last < first */
	IGNORED("bytes=200-100", 100);  /* invalid before unsatisfiable */
	IGNORED("bytes=1 2-3", 100);
	IGNORED("bytes=0-9\r\n", 100); /* only blanks are trimmed */
}
END_TEST

START_TEST(test_whitespace_case)
{
	OK("  bytes=0-4  ", 100, 0, 5);
	OK("\tbytes=0-4\t", 100, 0, 5);
	OK("bytes= 0-4", 100, 0, 5);
	OK("bytes=0 - 4", 100, 0, 5);
	OK("bytes= -4 ", 100, 96, 4);
	OK("Bytes=0-4", 100, 0, 5);
	OK("BYTES=0-4", 100, 0, 5);
	/* a view that is not NUL-terminated: only len bytes are read */
	const char buf[] = "bytes=1-29999";
	uint64_t s = SENTINEL, l = SENTINEL;
	ck_assert_int_eq(http_range_parse((sv_t){buf, 9}, 100, &s, &l), AIS_OK);
	ck_assert_uint_eq(s, 1);
	ck_assert_uint_eq(l, 2);
}
END_TEST

START_TEST(test_overflow)
{
	IGNORED("bytes=18446744073709551616-", 100);
	IGNORED("bytes=0-18446744073709551616", 100);
	IGNORED("bytes=-18446744073709551616", 100);
	IGNORED("bytes=-99999999999999999999999999", 100);
	IGNORED("bytes=99999999999999999999999999-", 100);
	OK("bytes=005-006", 100, 5, 2);
	/* numbers are at most 20 digits, leading zeros included */
	OK("bytes=00000000000000000005-6", 100, 5, 2);
	IGNORED("bytes=000000000000000000005-6", 100);
}
END_TEST

static Suite *range_suite(void)
{
	Suite *s = suite_create("range");
	TCase *t = tcase_create("parse");
	tcase_add_test(t, test_forms);
	tcase_add_test(t, test_clamps);
	tcase_add_test(t, test_unsatisfiable);
	tcase_add_test(t, test_ignored);
	tcase_add_test(t, test_whitespace_case);
	tcase_add_test(t, test_overflow);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(range_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
