/*
 * test_xarch.c - the spec of an archive request (src/xarch/spec.c): good
 * and bad values (format by name and mime, list or template, append to a
 * tar or a .tgz only), the names a template expands to; and the .tgz
 * writer and reader (src/archive/tgzw.c): a tar compressed and inflated
 * back byte for byte (zlib, and tgzw_decompress: one member or two
 * concatenated), empty and multi-piece inputs; truncated, trailing garbage,
 * not gzip and past the bound: errors.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "aisd/status.h"
#include "aisd/tgzw.h"
#include "aisd/xarch.h"
#include "aisd/banned.h"

static int check(const char *js)
{
	json_t *v = json_loads(js, 0, NULL);
	ck_assert_msg(v != NULL, "%s", js);
	buf_t err = BUF_INIT;
	int rc = xarch_spec_check(v, &err);
	ck_assert_msg(rc == 0 || (rc == 400 && err.len && !strncmp(err.ptr, "archive", 7)), "%s", js);
	buf_free(&err);
	json_decref(v);
	return rc;
}

START_TEST(test_spec)
{
	static const char *const good[] = {
		"{\"archname\":\"a/s.tar\",\"list\":[\"x\",\"y/z.jpg\"]}",
		"{\"archname\":\"s.tgz\",\"template\":\"img-{000..099}.jpg\"}",
		"{\"archname\":\"s.tar.gz\",\"mime\":\".tgz\",\"list\":[\"x\"]}",
		"{\"archname\":\"s.tar\",\"mime\":\"tar\",\"append\":true,\"list\":[\"x\"]}",
		"{\"archname\":\"s.tar\",\"overwrite\":true,\"inclsrcname\":false,\"list\":[\"x\"]}",
		"{\"archname\":\"s.tgz\",\"append\":true,\"list\":[\"x\"]}",
		"{\"archname\":\"s.tar.gz\",\"append\":true,\"list\":[\"x\"]}",
	};
	static const char *const bad[] = {
		"{\"list\":[\"x\"]}",
		"{\"archname\":\"s.zip\",\"list\":[\"x\"]}",
		"{\"archname\":\"s\",\"list\":[\"x\"]}",
		"{\"archname\":\"s.tar\",\"mime\":\".zip\",\"list\":[\"x\"]}",
		"{\"archname\":\"s.tar\",\"mime\":\".tgz\",\"list\":[\"x\"]}",
		"{\"archname\":\"s.zip\",\"append\":true,\"list\":[\"x\"]}",
		"{\"archname\":\"s.tar\",\"append\":1,\"list\":[\"x\"]}",
		"{\"archname\":\"s.tar\"}",
		"{\"archname\":\"s.tar\",\"list\":[\"x\"],\"template\":\"a{0..1}\"}",
		"{\"archname\":\"s.tar\",\"list\":[]}",
		"{\"archname\":\"s.tar\",\"list\":[\"../x\"]}",
		"{\"archname\":\"s.tar\",\"list\":[3]}",
		"{\"archname\":\"s.tar\",\"template\":\"img-%03d.jpg\"}",
		"{\"archname\":\"s.tar\",\"template\":\"img.jpg\"}",
		"{\"archname\":\"s.tar\",\"template\":\"img-{0..100000}.jpg\"}",
		"{\"archname\":\"../s.tar\",\"list\":[\"x\"]}",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		ck_assert_msg(check(good[i]) == 0, "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(check(bad[i]) == 400, "%s", bad[i]);
}
END_TEST

START_TEST(test_names)
{
	json_t *v = json_loads("{\"archname\":\"s.tar\",\"template\":\"p/{08..12}.jpg\"}", 0, NULL);
	json_t *n = xarch_names(v);
	ck_assert_int_eq(json_array_size(n), 5);
	ck_assert_str_eq(json_string_value(json_array_get(n, 0)), "p/08.jpg");
	ck_assert_str_eq(json_string_value(json_array_get(n, 4)), "p/12.jpg");
	ck_assert(!xarch_is_tgz(v));
	json_decref(n);
	json_decref(v);
	v = json_loads("{\"archname\":\"s.tar.gz\",\"list\":[\"b\",\"a\",\"b\"]}", 0, NULL);
	n = xarch_names(v);
	ck_assert_int_eq(json_array_size(n), 3); /* the order given, repeats kept */
	ck_assert_str_eq(json_string_value(json_array_get(n, 1)), "a");
	ck_assert(xarch_is_tgz(v));
	json_decref(n);
	json_decref(v);
}
END_TEST

/* Compresses len bytes of a pattern and inflates the result back. */
static void roundtrip(size_t len)
{
	FILE *in = tmpfile(), *out = tmpfile();
	unsigned char *src = malloc(len + 1), *back = malloc(len + 1);
	for (size_t i = 0; i < len; i++)
		src[i] = (unsigned char)(i % 251 ^ (i >> 9));
	ck_assert_int_eq(fwrite(src, 1, len, in), len);
	fflush(in);
	buf_t err = BUF_INIT;
	ck_assert_int_eq(tgzw_compress(fileno(in), len, out, &err), AIS_OK);
	long zn = ftell(out);
	ck_assert(zn > 18);
	unsigned char *z = malloc((size_t)zn);
	rewind(out);
	ck_assert_int_eq(fread(z, 1, (size_t)zn, out), (size_t)zn);
	ck_assert(z[0] == 0x1f && z[1] == 0x8b);
	z_stream s;
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(inflateInit2(&s, 15 + 16), Z_OK);
	s.next_in = z;
	s.avail_in = (uInt)zn;
	s.next_out = back;
	s.avail_out = (uInt)len + 1;
	ck_assert_int_eq(inflate(&s, Z_FINISH), Z_STREAM_END);
	ck_assert_int_eq(s.total_out, len);
	ck_assert(memcmp(src, back, len) == 0);
	inflateEnd(&s);
	/* and back with tgzw_decompress: once, and as two members concatenated */
	for (int twice = 0; twice < 2; twice++) {
		FILE *dz = tmpfile();
		uint64_t n = 0;
		if (twice) {
			fseek(out, 0, SEEK_END);
			ck_assert_int_eq(fwrite(z, 1, (size_t)zn, out), (size_t)zn);
			fflush(out);
		}
		ck_assert_int_eq(tgzw_decompress(fileno(out), (uint64_t)zn * (twice + 1), UINT64_MAX, dz, &n, &err), AIS_OK);
		ck_assert_int_eq(n, len * (twice + 1));
		ck_assert_int_eq(ftell(dz), (long)n);
		for (int k = 0; k <= twice; k++) {
			ck_assert_int_eq(pread(fileno(dz), back, len, (off_t)(len * (size_t)k)), (ssize_t)len);
			ck_assert(memcmp(src, back, len) == 0);
		}
		fclose(dz);
	}
	/* a bound one byte short of what it inflates to: an error, no more
	 * written than the bound */
	if (len) {
		FILE *dz = tmpfile();
		uint64_t n = 0;
		buf_reset(&err);
		ck_assert_int_eq(tgzw_decompress(fileno(out), (uint64_t)zn, (uint64_t)len - 1, dz, &n, &err), AIS_ERR);
		ck_assert(strstr(err.ptr, "inflates past"));
		ck_assert(n < len);
		fclose(dz);
	}
	/* a truncated one, and one with garbage after it: errors */
	for (int bad = 0; bad < 2; bad++) {
		FILE *dz = tmpfile();
		uint64_t n;
		buf_reset(&err);
		if (bad)
			ck_assert_int_eq(pwrite(fileno(out), "garbage!", 8, zn), 8);
		ck_assert_int_eq(tgzw_decompress(fileno(out), bad ? (uint64_t)zn + 8 : (uint64_t)zn - 5, UINT64_MAX, dz, &n, &err),
				 AIS_ERR);
		ck_assert(err.len > 0);
		fclose(dz);
	}
	buf_free(&err);
	free(z);
	free(src);
	free(back);
	fclose(in);
	fclose(out);
}

START_TEST(test_tgzw)
{
	roundtrip(0);
	roundtrip(1024);
	roundtrip((3u << 16) + 77); /* several pieces */
	ck_assert(tgzw_is_tgz("a.tgz", 5) && tgzw_is_tgz("a.tar.gz", 8));
	ck_assert(!tgzw_is_tgz("a.tar", 5) && !tgzw_is_tgz(".gz", 3) && !tgzw_is_tgz("a.zip", 5));
	buf_t err = BUF_INIT;
	FILE *out = tmpfile();
	ck_assert_int_eq(tgzw_compress(-1, 10, out, &err), AIS_ERR); /* a read error */
	ck_assert(err.len > 0);
	uint64_t n;
	FILE *plain = tmpfile();
	ck_assert_int_eq(fwrite("not gzip at all", 1, 15, plain), 15);
	fflush(plain);
	buf_reset(&err);
	ck_assert_int_eq(tgzw_decompress(fileno(plain), 15, UINT64_MAX, out, &n, &err), AIS_ERR); /* not gzip */
	ck_assert(strstr(err.ptr, "not a gzip"));
	buf_reset(&err);
	ck_assert_int_eq(tgzw_decompress(fileno(plain), 0, UINT64_MAX, out, &n, &err), AIS_ERR); /* empty */
	ck_assert(err.len > 0);
	fclose(plain);
	fclose(out);
	buf_free(&err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xarch");
	TCase *tc = tcase_create("xarch");
	tcase_add_test(tc, test_spec);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_tgzw);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
