/*
 * test_etl_answer.c - the reader of an http ETL worker's answer
 * (src/etl/answer.c), rule 5: when the rest of an answer may be streamed
 * to the client as raw bytes (etl_answer_stream), how many bytes it still
 * owes, and whether the connection may be kept after them.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/status.h"
#include "../../src/etl/etl_int.h"
#include "aisd/banned.h"

/* Feeds s (in one piece) to a fresh reader with max; the feed's result. */
static int feed(etl_answer_t *a, buf_t *out, const char *s, uint64_t max)
{
	etl_answer_init(a, out, max);
	return etl_answer_feed(a, s, strlen(s));
}

START_TEST(test_sized_200)
{
	etl_answer_t a;
	buf_t out = BUF_INIT;
	uint64_t left = 0;
	bool keep = false;
	ck_assert_int_eq(feed(&a, &out, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789", 1 << 20), AIS_AGAIN);
	ck_assert(etl_answer_stream(&a, &left, &keep));
	ck_assert_uint_eq(left, 90);
	ck_assert_uint_eq(out.len, 10);
	ck_assert(keep);
	buf_free(&out);
}
END_TEST

START_TEST(test_keep_alive)
{
	etl_answer_t a;
	buf_t out = BUF_INIT;
	uint64_t left = 0;
	bool keep = true;
	ck_assert_int_eq(feed(&a, &out, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\n", 64), AIS_AGAIN);
	ck_assert(etl_answer_stream(&a, &left, &keep));
	ck_assert_uint_eq(left, 5);
	ck_assert(!keep);
	ck_assert_int_eq(feed(&a, &out, "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\n", 64), AIS_AGAIN);
	ck_assert(etl_answer_stream(&a, &left, &keep));
	ck_assert(!keep);
	ck_assert_int_eq(feed(&a, &out, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\n", 64),
			 AIS_AGAIN);
	ck_assert(etl_answer_stream(&a, &left, &keep));
	ck_assert(keep);
	buf_free(&out);
}
END_TEST

/* Read whole instead: no head yet, not 200, chunked, delimited by the
 * close, complete, or an error. */
START_TEST(test_not_streamed)
{
	static const char *const in[] = {
		"HTTP/1.1 200 OK\r\nContent-Len",
		"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 100\r\n\r\nboom",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n",
		"HTTP/1.1 200 OK\r\n\r\nuntil the close",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
		"not HTTP at all\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		etl_answer_t a;
		buf_t out = BUF_INIT;
		uint64_t left = 77;
		bool keep = false;
		feed(&a, &out, in[i], 100);
		ck_assert_msg(!etl_answer_stream(&a, &left, &keep), "streamed: %s", in[i]);
		ck_assert_uint_eq(left, 77);
		buf_free(&out);
	}
}
END_TEST

static Suite *etl_answer_suite(void)
{
	Suite *s = suite_create("etl_answer");
	TCase *t = tcase_create("stream");
	tcase_add_test(t, test_sized_200);
	tcase_add_test(t, test_keep_alive);
	tcase_add_test(t, test_not_streamed);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(etl_answer_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
