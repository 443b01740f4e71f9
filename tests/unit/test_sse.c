/*
 * test_sse.c - the at-rest cipher of S3 server-side encryption (sse.h):
 * AES-256-CTR against NIST SP 800-38A F.5.5, at every offset (a range read
 * decrypts without the bytes before it), the data-key wrap (a wrong key
 * fails), and the key-file parser.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/sse.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

static void unhex(const char *h, unsigned char *out, size_t n)
{
	ck_assert_int_eq(hex_decode(h, strlen(h), out, n), AIS_OK);
}

/* NIST SP 800-38A F.5.5 CTR-AES256.Encrypt */
static const char *K = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4";
static const char *IV = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
static const char *PT = "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
			"30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710";
static const char *CT = "601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c5"
			"2b0930daa23de94ce87017ba2d84988ddfc9c58db67aada613c2dd08457941a6";

START_TEST(test_ctr_nist)
{
	unsigned char key[32], iv[16], pt[64], ct[64], out[64];
	unhex(K, key, 32);
	unhex(IV, iv, 16);
	unhex(PT, pt, 64);
	unhex(CT, ct, 64);
	sse_ctr_t c;
	ck_assert_int_eq(sse_ctr_init(&c, key, iv), AIS_OK);
	ck_assert_int_eq(sse_ctr_xor(&c, 0, pt, out, 64), AIS_OK);
	ck_assert(!memcmp(out, ct, 64));
	/* every offset and length, alone: a range read */
	for (size_t off = 0; off < 64; off++)
		for (size_t n = 1; off + n <= 64; n += 7) {
			ck_assert_int_eq(sse_ctr_xor(&c, off, ct + off, out, n), AIS_OK);
			ck_assert_msg(!memcmp(out, pt + off, n), "off %zu n %zu", off, n);
		}
	/* consecutive pieces continue the stream */
	ck_assert_int_eq(sse_ctr_xor(&c, 0, pt, out, 5), AIS_OK);
	ck_assert_int_eq(sse_ctr_xor(&c, 5, pt + 5, out + 5, 30), AIS_OK);
	ck_assert_int_eq(sse_ctr_xor(&c, 35, pt + 35, out + 35, 29), AIS_OK);
	ck_assert(!memcmp(out, ct, 64));
	sse_ctr_free(&c);
}
END_TEST

/* The counter carries across bytes: an IV of all ff wraps to zero. */
START_TEST(test_ctr_carry)
{
	unsigned char key[32] = {1}, iv[16], buf[4096], ref[4096];
	memset(iv, 0xff, 16);
	iv[0] = 0x7f;
	sse_ctr_t c;
	ck_assert_int_eq(sse_ctr_init(&c, key, iv), AIS_OK);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(sse_ctr_xor(&c, 0, buf, ref, sizeof(ref)), AIS_OK);
	for (size_t off = 1; off < sizeof(buf); off += 333) {
		ck_assert_int_eq(sse_ctr_xor(&c, off, buf, buf + 0, sizeof(buf) - off), AIS_OK);
		ck_assert(!memcmp(buf, ref + off, sizeof(buf) - off));
		memset(buf, 0, sizeof(buf));
	}
	sse_ctr_free(&c);
}
END_TEST

START_TEST(test_wrap)
{
	unsigned char kek[32], other[32], dk[32], w[SSE_WRAPPED], back[32];
	ck_assert_int_eq(sse_random(kek, 32), AIS_OK);
	ck_assert_int_eq(sse_random(dk, 32), AIS_OK);
	memcpy(other, kek, 32);
	other[31] ^= 1;
	ck_assert_int_eq(sse_wrap(kek, dk, w), AIS_OK);
	ck_assert_int_eq(sse_unwrap(kek, w, back), AIS_OK);
	ck_assert(!memcmp(dk, back, 32));
	ck_assert_int_eq(sse_unwrap(other, w, back), AIS_ERR);
	w[20] ^= 1;
	ck_assert_int_eq(sse_unwrap(kek, w, back), AIS_ERR);
}
END_TEST

START_TEST(test_keys)
{
	sse_keys_t ks;
	buf_t err = BUF_INIT;
	const char *good = "# master keys\n\nk1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
			   "  k-2.b_ AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=  \n";
	ck_assert_int_eq(sse_keys_parse(good, strlen(good), &ks, &err), AIS_OK);
	ck_assert_uint_eq(ks.n, 2);
	ck_assert_str_eq(ks.k[1].id, "k-2.b_");
	ck_assert_int_eq(sse_keys_find(&ks, "k-2.b_")[5], 1);
	ck_assert_int_eq(sse_keys_find(&ks, "k1")[5], 0);
	ck_assert_ptr_null(sse_keys_find(&ks, "k3"));
	static const char *bad[] = {
		"",                                                    /* no key */
		"# only\n",                                            /* no key */
		"k1\n",                                                /* no key text */
		"k1 AAAA\n",                                           /* short */
		"k/1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",   /* id */
		"k1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",    /* not padded */
		"k1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\nk1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&err);
		ck_assert_msg(sse_keys_parse(bad[i], strlen(bad[i]), &ks, &err) == AIS_ERR, "bad %zu", i);
		ck_assert(err.len > 0);
		ck_assert_msg(!strstr(err.ptr, "AAAA"), "an error shows the key: %s", err.ptr);
	}
	buf_free(&err);
}
END_TEST

START_TEST(test_parts)
{
	sse_parts_t ps;
	uint64_t seg, o;
	/* parts 1-2 of 10 bytes, 3 of 4, then 7-8 of 6 (4-6 not used) */
	ck_assert_int_eq(sse_parts_parse("10*2+4*1+7:6*2", &ps), AIS_OK);
	ck_assert_uint_eq(ps.n, 3);
	o = sse_parts_map(&ps, 0, &seg);
	ck_assert(o == 1 * SSE_PART_STRIDE && seg == 10);
	o = sse_parts_map(&ps, 13, &seg);
	ck_assert(o == 2 * SSE_PART_STRIDE + 3 && seg == 7);
	o = sse_parts_map(&ps, 20, &seg);
	ck_assert(o == 3 * SSE_PART_STRIDE && seg == 4);
	o = sse_parts_map(&ps, 23, &seg);
	ck_assert(o == 3 * SSE_PART_STRIDE + 3 && seg == 1);
	o = sse_parts_map(&ps, 24, &seg);
	ck_assert(o == 7 * SSE_PART_STRIDE && seg == 6);
	o = sse_parts_map(&ps, 35, &seg);
	ck_assert(o == 8 * SSE_PART_STRIDE + 5 && seg == 1);
	sse_parts_map(&ps, 36, &seg);
	ck_assert_uint_eq(seg, 0); /* past the end */
	sse_parts_free(&ps);
	/* an empty last part takes no bytes */
	ck_assert_int_eq(sse_parts_parse("5*1+0*1", &ps), AIS_OK);
	o = sse_parts_map(&ps, 4, &seg);
	ck_assert(o == SSE_PART_STRIDE + 4 && seg == 1);
	sse_parts_map(&ps, 5, &seg);
	ck_assert_uint_eq(seg, 0);
	sse_parts_free(&ps);
	/* generations: part 2 uploaded again (1), part 3 twice more (2), and the
	 * largest generation at part 10000 stays inside 64 bits */
	ck_assert_int_eq(sse_parts_parse("10*1+10*1@1+4*1@2+10000:1*1@214747", &ps), AIS_OK);
	ck_assert_uint_eq(ps.n, 4);
	o = sse_parts_map(&ps, 5, &seg);
	ck_assert(o == sse_part_stream(1, 0) + 5 && o == SSE_PART_STRIDE + 5 && seg == 5);
	o = sse_parts_map(&ps, 12, &seg);
	ck_assert(o == sse_part_stream(2, 1) + 2 && o == (10000ull + 2) * SSE_PART_STRIDE + 2 && seg == 8);
	o = sse_parts_map(&ps, 21, &seg);
	ck_assert(o == sse_part_stream(3, 2) + 1 && seg == 3);
	o = sse_parts_map(&ps, 24, &seg);
	ck_assert(o == sse_part_stream(10000, SSE_PART_GEN_MAX) && seg == 1);
	ck_assert(o / SSE_PART_STRIDE == 214747ull * 10000 + 10000 && o > sse_part_stream(9999, SSE_PART_GEN_MAX));
	/* no two (number, generation) pairs share a stream */
	ck_assert(sse_part_stream(10000, 0) < sse_part_stream(1, 1));
	sse_parts_free(&ps);
	const char *bad[] = {"", "+", "5*1+", "5", "5*0", "2:5*1+1:5*1", "10001:5*1", "5*10001", "9999:5*3",
			     "8589934593*1", "x*1", "1:2:3*1", "5*1@", "5*1@x", "5*1@214748", "5*1@1@2", "5@1*1",
			     "5*1@-1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(sse_parts_parse(bad[i], &ps) == AIS_ERR && !ps.runs, "bad %zu: %s", i, bad[i]);
}
END_TEST

static Suite *sse_suite(void)
{
	Suite *s = suite_create("sse");
	TCase *t = tcase_create("cipher");
	tcase_add_test(t, test_ctr_nist);
	tcase_add_test(t, test_ctr_carry);
	tcase_add_test(t, test_wrap);
	tcase_add_test(t, test_keys);
	tcase_add_test(t, test_parts);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sse_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
