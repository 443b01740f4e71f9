/*
 * test_ec.c - erasure coding's pure parts (ec.h): the stripe layout, the
 * slice metadata text (round trip and rejection of bad text), and
 * encode/decode checked against ISA-L's own reference encoder
 * (ec_encode_data_base) for random shapes and random erasure patterns of
 * up to P slices, plus a refusal when more than P are missing.
 */
#include <check.h>
#include <isa-l/erasure_code.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/ec.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

START_TEST(test_layout)
{
	ec_layout_t l;
	ck_assert_int_eq(ec_layout(0, 4, 2, EC_CELL, &l), AIS_OK);
	ck_assert_uint_eq(l.stripes, 0);
	ck_assert_uint_eq(l.slice_size, 0);
	/* exactly 4 full stripes */
	ck_assert_int_eq(ec_layout(1 << 20, 4, 2, EC_CELL, &l), AIS_OK);
	ck_assert_uint_eq(l.stripes, 4);
	ck_assert_uint_eq(l.last, EC_CELL);
	ck_assert_uint_eq(l.slice_size, 4 * EC_CELL);
	ck_assert_uint_eq(ec_stripe_bytes(&l, 3), 4 * EC_CELL);
	/* one byte: one stripe of 64-byte cells */
	ck_assert_int_eq(ec_layout(1, 4, 2, EC_CELL, &l), AIS_OK);
	ck_assert_uint_eq(l.stripes, 1);
	ck_assert_uint_eq(l.last, EC_ALIGN);
	ck_assert_uint_eq(ec_stripe_bytes(&l, 0), 1);
	/* a partial last stripe: 1 MiB + 1000 bytes */
	ck_assert_int_eq(ec_layout((1 << 20) + 1000, 4, 2, EC_CELL, &l), AIS_OK);
	ck_assert_uint_eq(l.stripes, 5);
	ck_assert_uint_eq(l.last, 256); /* ceil(1000/4) = 250 -> 256 */
	ck_assert_uint_eq(ec_stripe_cell(&l, 4), 256);
	ck_assert_uint_eq(ec_stripe_cell(&l, 3), EC_CELL);
	ck_assert_uint_eq(ec_stripe_bytes(&l, 4), 1000);
	ck_assert_uint_eq(ec_stripe_start(&l, 4), 1 << 20);
	ck_assert_uint_eq(l.slice_size, 4 * EC_CELL + 256);
	/* the slices hold every byte: d * slice_size >= size, less than a stripe more */
	for (uint64_t size = 1; size < 3000000; size = size * 3 + 7) {
		ck_assert_int_eq(ec_layout(size, 5, 3, 4096, &l), AIS_OK);
		ck_assert(l.d * l.slice_size >= size);
		ck_assert(l.d * l.slice_size < size + 5 * 4096 + 5 * EC_ALIGN);
		uint64_t sum = 0;
		for (uint64_t s = 0; s < l.stripes; s++)
			sum += ec_stripe_bytes(&l, s);
		ck_assert_uint_eq(sum, size);
	}
	ck_assert_int_eq(ec_layout(10, 0, 2, EC_CELL, &l), AIS_ERR);
	ck_assert_int_eq(ec_layout(10, 4, 33, EC_CELL, &l), AIS_ERR);
	ck_assert_int_eq(ec_layout(10, 4, 2, 100, &l), AIS_ERR);
}
END_TEST

START_TEST(test_meta)
{
	ec_meta_t m = {.d = 4, .p = 2, .idx = 5, .cell = EC_CELL, .size = 123456789, .version = 17}, o;
	snprintf(m.cksum, sizeof(m.cksum), "xxhash:0123abcd");
	buf_t b = BUF_INIT;
	ec_meta_format(&m, &b);
	ck_assert_str_eq(b.ptr, "v1 d=4 p=2 i=5 cell=65536 size=123456789 ver=17 ck=xxhash:0123abcd");
	ck_assert_int_eq(ec_meta_parse(b.ptr, b.len, &o), AIS_OK);
	ck_assert_int_eq(memcmp(&m, &o, sizeof(m)), 0);
	buf_free(&b);
	static const char *const bad[] = {
		"",
		"v2 d=4 p=2 i=5 cell=65536 size=1 ver=1 ck=none",
		"v1 d=4 p=2 i=6 cell=65536 size=1 ver=1 ck=none",   /* index past d+p */
		"v1 d=0 p=2 i=0 cell=65536 size=1 ver=1 ck=none",   /* no data slice */
		"v1 d=4 p=33 i=0 cell=65536 size=1 ver=1 ck=none",  /* too many parity */
		"v1 d=4 p=2 i=0 cell=100 size=1 ver=1 ck=none",     /* unaligned cell */
		"v1 d=4 p=2 i=0 cell=65536 size=1 ver=1",           /* no checksum */
		"v1 d=4 p=2 i=0 cell=65536 size=1 ver=1 ck=",       /* empty checksum */
		"v1 d=4 p=2 i=0 cell=65536 size=x ver=1 ck=none",   /* not a number */
		"v1 p=2 d=4 i=0 cell=65536 size=1 ver=1 ck=none",   /* out of order */
		"v1 d=4 p=2 i=0 cell=65536 size=1 ver=1 ck=none x", /* trailing */
		"v1 d=4 p=2 i=0 cell=65536 size=1 ver=1 ck=none ",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ec_meta_parse(bad[i], strlen(bad[i]), &o) == AIS_ERR, "accepted: %s", bad[i]);
}
END_TEST

START_TEST(test_codec)
{
	srand(1234);
	for (int round = 0; round < 200; round++) {
		unsigned d = 1 + (unsigned)rand() % 12, p = 1 + (unsigned)rand() % 6, n = d + p;
		size_t len = 1 + (size_t)(rand() % 3000);
		ec_codec_t *c = ec_codec_new(d, p);
		ck_assert_ptr_nonnull(c);
		unsigned char *frag[2 * EC_SLICES_MAX], *orig[2 * EC_SLICES_MAX], *ref[EC_SLICES_MAX];
		for (unsigned i = 0; i < n; i++) {
			frag[i] = malloc(len);
			orig[i] = malloc(len);
		}
		for (unsigned i = 0; i < d; i++)
			for (size_t j = 0; j < len; j++)
				frag[i][j] = (unsigned char)rand();
		ec_encode(c, len, frag, frag + d);
		/* ISA-L's reference (non-SIMD) encoder with the same Cauchy matrix */
		unsigned char *a = malloc((size_t)n * d);
		gf_gen_cauchy1_matrix(a, (int)n, (int)d);
		for (unsigned i = 0; i < p; i++)
			ref[i] = malloc(len);
		unsigned char *tb = malloc((size_t)32 * d * p);
		ec_init_tables((int)d, (int)p, a + (size_t)d * d, tb);
		ec_encode_data_base((int)len, (int)d, (int)p, tb, frag, ref);
		for (unsigned i = 0; i < p; i++)
			ck_assert_int_eq(memcmp(ref[i], frag[d + i], len), 0);
		/* and by hand, GF(2^8) products of the matrix row and the data */
		for (unsigned i = 0; i < p; i++)
			for (size_t j = 0; j < len; j += 97) {
				unsigned char s = 0;
				for (unsigned k = 0; k < d; k++)
					s ^= gf_mul(a[(size_t)(d + i) * d + k], frag[k][j]);
				ck_assert_uint_eq(s, frag[d + i][j]);
			}
		free(tb);
		for (unsigned i = 0; i < n; i++)
			memcpy(orig[i], frag[i], len);
		/* erase up to p random slices, data and parity alike */
		bool have[2 * EC_SLICES_MAX];
		for (unsigned i = 0; i < n; i++)
			have[i] = true;
		unsigned lose = 1 + (unsigned)rand() % p;
		for (unsigned k = 0; k < lose;) {
			unsigned i = (unsigned)rand() % n;
			if (have[i]) {
				have[i] = false;
				memset(frag[i], 0xA5, len);
				k++;
			}
		}
		ck_assert_int_eq(ec_decode(c, len, have, frag), AIS_OK);
		for (unsigned i = 0; i < n; i++)
			ck_assert_msg(!memcmp(orig[i], frag[i], len), "d=%u p=%u slice %u differs", d, p, i);
		/* one more than p missing: refused, not guessed */
		for (unsigned i = 0; i < n; i++)
			have[i] = i > p;
		ck_assert_int_eq(ec_decode(c, len, have, frag), AIS_ERR);
		for (unsigned i = 0; i < n; i++) {
			free(frag[i]);
			free(orig[i]);
		}
		for (unsigned i = 0; i < p; i++)
			free(ref[i]);
		free(a);
		ec_codec_free(c);
	}
	ck_assert_ptr_null(ec_codec_new(0, 2));
	ck_assert_ptr_null(ec_codec_new(4, 33));
}
END_TEST

/* ec_encode_stripe: cells into the object where whole, gathered and
 * padded where not, the same parity as ec_encode on gathered cells */
START_TEST(test_encode_stripe)
{
	uint64_t sizes[] = {1, 4 * 4096, 4 * 4096 * 3 + 1000, 4 * 4096 * 2 + 3 * 4096 + 17};
	ec_codec_t *c = ec_codec_new(4, 2);
	for (size_t k = 0; k < ARRAY_SIZE(sizes); k++) {
		ec_layout_t l;
		ck_assert_int_eq(ec_layout(sizes[k], 4, 2, 4096, &l), AIS_OK);
		unsigned char *obj = malloc(sizes[k]), *cell[6], *ref[6], *out[6];
		for (uint64_t i = 0; i < sizes[k]; i++)
			obj[i] = (unsigned char)(i * 131 + k);
		for (int i = 0; i < 6; i++)
			cell[i] = malloc(4096), ref[i] = calloc(1, 4096);
		for (uint64_t st = 0; st < l.stripes; st++) {
			uint32_t cs = ec_stripe_cell(&l, st);
			uint64_t at = ec_stripe_start(&l, st), n = ec_stripe_bytes(&l, st);
			for (unsigned j = 0; j < 4; j++) {
				memset(ref[j], 0, cs);
				uint64_t off = (uint64_t)j * cs;
				if (off < n)
					memcpy(ref[j], obj + at + off, MIN(cs, n - off));
			}
			ec_encode(c, cs, ref, ref + 4);
			ec_encode_stripe(c, &l, st, obj + at, cell, out);
			for (unsigned i = 0; i < 6; i++)
				ck_assert_msg(!memcmp(out[i], ref[i], cs), "size %llu stripe %llu cell %u",
					      (unsigned long long)sizes[k], (unsigned long long)st, i);
			bool full = n == 4ull * l.cell;
			ck_assert(!full || out[0] == obj + at); /* no copy for a full stripe */
		}
		for (int i = 0; i < 6; i++)
			free(cell[i]), free(ref[i]);
		free(obj);
	}
	ec_codec_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ec");
	TCase *tc = tcase_create("ec");
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_meta);
	tcase_add_test(tc, test_codec);
	tcase_add_test(tc, test_encode_stripe);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
