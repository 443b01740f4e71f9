/*
 * test_hrw.c - highest random weight placement: even spread, minimal
 * movement when candidates come and go, hrw_top ordering and clamping,
 * determinism.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "aisd/hrw.h"
#include "aisd/banned.h"

#define NAMES 100000

static uint64_t name_hash_i(int i)
{
	char name[64];
	int n = snprintf(name, sizeof(name), "bucket/shards/shard-%06d.tar", i);
	return hrw_name_hash(name, (size_t)n);
}

static void make_digests(uint64_t *d, size_t n, size_t first)
{
	for (size_t i = 0; i < n; i++) {
		char id[32];
		int len = snprintf(id, sizeof(id), "t%zu", first + i);
		d[i] = hrw_digest(id, (size_t)len);
	}
}

START_TEST(test_spread)
{
	uint64_t d[10];
	size_t count[10] = {0};
	make_digests(d, 10, 0);
	for (int i = 0; i < NAMES; i++)
		count[hrw_owner(name_hash_i(i), d, 10)]++;
	double mean = NAMES / 10.0;
	for (int i = 0; i < 10; i++) {
		ck_assert_msg(count[i] > mean * 0.9 && count[i] < mean * 1.1,
			      "candidate %d got %zu names, mean %.0f", i, count[i], mean);
	}
}
END_TEST

START_TEST(test_spread_mountpaths)
{
	/* Same rule inside a target: 3 mountpaths with path-like ids. */
	static const char *const mp[] = {"/data/nvme0/ais", "/data/nvme1/ais", "/data/nvme2/ais"};
	uint64_t d[3];
	size_t count[3] = {0};
	for (int i = 0; i < 3; i++)
		d[i] = hrw_digest(mp[i], strlen(mp[i]));
	for (int i = 0; i < NAMES / 2; i++)
		count[hrw_owner(name_hash_i(i), d, 3)]++;
	double mean = NAMES / 2 / 3.0;
	for (int i = 0; i < 3; i++)
		ck_assert_msg(count[i] > mean * 0.9 && count[i] < mean * 1.1, "mountpath %d got %zu", i,
			      count[i]);
}
END_TEST

START_TEST(test_add_candidate_moves_few)
{
	uint64_t d[11];
	size_t moved = 0;
	make_digests(d, 11, 0);
	for (int i = 0; i < NAMES; i++) {
		uint64_t h = name_hash_i(i);
		size_t before = hrw_owner(h, d, 10);
		size_t after = hrw_owner(h, d, 11);
		if (before != after) {
			moved++;
			ck_assert_msg(after == 10, "name %d moved from %zu to old candidate %zu", i,
				      before, after);
		}
	}
	double expect = NAMES / 11.0;
	ck_assert_msg(moved > expect * 0.9 && moved < expect * 1.1, "moved %zu, expected ~%.0f",
		      moved, expect);
}
END_TEST

START_TEST(test_remove_candidate_moves_only_its_names)
{
	uint64_t d[10], rest[9];
	size_t moved = 0;
	const size_t gone = 4;
	make_digests(d, 10, 0);
	for (size_t i = 0, j = 0; i < 10; i++)
		if (i != gone)
			rest[j++] = d[i];
	for (int i = 0; i < NAMES; i++) {
		uint64_t h = name_hash_i(i);
		size_t before = hrw_owner(h, d, 10);
		size_t after = hrw_owner(h, rest, 9);
		/* map the index in rest back to the index in d */
		size_t after_d = after >= gone ? after + 1 : after;
		if (before == gone) {
			moved++;
			ck_assert_uint_ne(after_d, gone);
		} else {
			ck_assert_msg(after_d == before, "name %d moved from %zu to %zu", i, before,
				      after_d);
		}
	}
	ck_assert_msg(moved > NAMES / 10 * 0.9 && moved < NAMES / 10 * 1.1, "moved %zu", moved);
}
END_TEST

START_TEST(test_owner_is_max_weight)
{
	uint64_t d[7];
	make_digests(d, 7, 100);
	for (int i = 0; i < 2000; i++) {
		uint64_t h = name_hash_i(i);
		size_t o = hrw_owner(h, d, 7);
		for (size_t j = 0; j < 7; j++)
			ck_assert(hrw_weight(h, d[j]) <= hrw_weight(h, d[o]));
	}
}
END_TEST

START_TEST(test_top_order)
{
	uint64_t d[16];
	size_t top[HRW_TOP_MAX];
	make_digests(d, 16, 0);
	for (int i = 0; i < 5000; i++) {
		uint64_t h = name_hash_i(i);
		size_t k = (size_t)(i % 16) + 1;
		ck_assert_uint_eq(hrw_top(h, d, 16, top, k), k);
		ck_assert_uint_eq(top[0], hrw_owner(h, d, 16));
		for (size_t a = 0; a < k; a++) {
			ck_assert_uint_lt(top[a], 16);
			for (size_t b = a + 1; b < k; b++)
				ck_assert_uint_ne(top[a], top[b]);
			if (a + 1 < k)
				ck_assert(hrw_weight(h, d[top[a]]) > hrw_weight(h, d[top[a + 1]]));
		}
		/* nothing left out beats the last one kept */
		for (size_t j = 0; j < 16; j++) {
			int in = 0;
			for (size_t a = 0; a < k; a++)
				in |= top[a] == j;
			if (!in)
				ck_assert(hrw_weight(h, d[j]) < hrw_weight(h, d[top[k - 1]]));
		}
	}
}
END_TEST

START_TEST(test_top_prefix_stable)
{
	/* The top 2 are the first 2 of the top 5: replicas don't reshuffle. */
	uint64_t d[9];
	size_t t2[2], t5[5];
	make_digests(d, 9, 0);
	for (int i = 0; i < 3000; i++) {
		uint64_t h = name_hash_i(i);
		hrw_top(h, d, 9, t2, 2);
		hrw_top(h, d, 9, t5, 5);
		ck_assert_uint_eq(t2[0], t5[0]);
		ck_assert_uint_eq(t2[1], t5[1]);
	}
}
END_TEST

START_TEST(test_top_clamp)
{
	enum { N = HRW_TOP_MAX + 6 };
	uint64_t d[N];
	size_t top[N + 1];
	uint64_t h = name_hash_i(42);
	make_digests(d, N, 0);

	/* k > HRW_TOP_MAX: clamped, nothing written past HRW_TOP_MAX */
	for (size_t i = 0; i < N + 1; i++)
		top[i] = (size_t)-1;
	ck_assert_uint_eq(hrw_top(h, d, N, top, N + 1), HRW_TOP_MAX);
	for (size_t i = HRW_TOP_MAX; i < N + 1; i++)
		ck_assert_uint_eq(top[i], (size_t)-1);
	for (size_t a = 0; a < HRW_TOP_MAX; a++)
		for (size_t b = a + 1; b < HRW_TOP_MAX; b++)
			ck_assert_uint_ne(top[a], top[b]);

	/* k > n: clamped to n, every candidate once */
	for (size_t i = 0; i < N + 1; i++)
		top[i] = (size_t)-1;
	ck_assert_uint_eq(hrw_top(h, d, 5, top, 8), 5);
	ck_assert_uint_eq(top[5], (size_t)-1);
	size_t seen = 0;
	for (size_t i = 0; i < 5; i++)
		seen |= (size_t)1 << top[i];
	ck_assert_uint_eq(seen, 0x1f);

	/* k == 0, and a single candidate */
	ck_assert_uint_eq(hrw_top(h, d, N, top, 0), 0);
	ck_assert_uint_eq(hrw_top(h, d, 1, top, 3), 1);
	ck_assert_uint_eq(top[0], 0);
	ck_assert_uint_eq(hrw_owner(h, d, 1), 0);
}
END_TEST

START_TEST(test_deterministic)
{
	/* The placement is an on-disk contract: pin the functions. */
	ck_assert_uint_eq(hrw_mix(0), 0);
	/* splitmix64's first output from seed 0 */
	ck_assert_uint_eq(hrw_mix(0x9e3779b97f4a7c15ULL), 0xe220a8397b1dcdafULL);
	ck_assert_uint_eq(hrw_name_hash("b/o", 3), XXH64("b/o", 3, HRW_SEED));
	ck_assert_uint_eq(hrw_digest("t1", 2), XXH64("t1", 2, HRW_SEED));
	ck_assert_uint_eq(hrw_weight(1, 2), hrw_mix(3));

	uint64_t d1[8], d2[8];
	size_t t1[8], t2[8];
	make_digests(d1, 8, 0);
	make_digests(d2, 8, 0);
	for (int i = 0; i < 1000; i++) {
		uint64_t h = name_hash_i(i);
		ck_assert_uint_eq(h, name_hash_i(i));
		ck_assert_uint_eq(hrw_owner(h, d1, 8), hrw_owner(h, d2, 8));
		hrw_top(h, d1, 8, t1, 8);
		hrw_top(h, d2, 8, t2, 8);
		ck_assert(!memcmp(t1, t2, sizeof(t1)));
	}
}
END_TEST

START_TEST(test_order_independent)
{
	/* The owner is the same candidate whatever order the list is in. */
	uint64_t d[6], r[6];
	make_digests(d, 6, 0);
	for (size_t i = 0; i < 6; i++)
		r[i] = d[5 - i];
	for (int i = 0; i < 5000; i++) {
		uint64_t h = name_hash_i(i);
		ck_assert_uint_eq(hrw_owner(h, d, 6), 5 - hrw_owner(h, r, 6));
	}
}
END_TEST

static Suite *hrw_suite(void)
{
	Suite *s = suite_create("hrw");
	TCase *tc = tcase_create("hrw");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_spread);
	tcase_add_test(tc, test_spread_mountpaths);
	tcase_add_test(tc, test_add_candidate_moves_few);
	tcase_add_test(tc, test_remove_candidate_moves_only_its_names);
	tcase_add_test(tc, test_owner_is_max_weight);
	tcase_add_test(tc, test_top_order);
	tcase_add_test(tc, test_top_prefix_stable);
	tcase_add_test(tc, test_top_clamp);
	tcase_add_test(tc, test_deterministic);
	tcase_add_test(tc, test_order_independent);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hrw_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
