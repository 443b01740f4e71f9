/*
 * test_ishard.c - the plan of an initial sharding (src/ishard/plan.c):
 * shard names by both template forms and their range; samples grouped by
 * WebDataset's key rule (nested names, a dot in a directory) and by a
 * regex; the missing-extension policies; shards never over shard_size
 * (except one oversize sample alone), every sample once, whole, in key
 * order; a seeded shuffle deterministic for a seed, another for another,
 * and uniform: over many seeds every element lands in every position
 * equally often (chi-square), and input and output ranks do not correlate.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/ishard.h"
#include "aisd/banned.h"

/* Over SEEDS consecutive seeds (0, 1, ..: what users pass), how often
 * each of n elements lands in each position: the chi-square statistic
 * against the uniform SEEDS/n, with (n-1)^2 degrees of freedom. */
static double position_chi2(size_t n, uint64_t seed0, size_t seeds)
{
	enum { NMAX = 16 };
	static unsigned cnt[NMAX][NMAX];
	size_t o[NMAX];
	memset(cnt, 0, sizeof(cnt));
	for (size_t s = 0; s < seeds; s++) {
		for (size_t i = 0; i < n; i++)
			o[i] = i;
		ishard_shuffle(o, n, seed0 + s);
		for (size_t p = 0; p < n; p++)
			cnt[o[p]][p]++;
	}
	double e = (double)seeds / (double)n, chi = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t p = 0; p < n; p++)
			chi += ((double)cnt[i][p] - e) * ((double)cnt[i][p] - e) / e;
	return chi;
}

START_TEST(test_shuffle_uniform)
{
	/* 5 sd above the mean (df) fails: a biased shuffle goes far past it */
	static const size_t ns[] = {2, 3, 7, 8, 13, 16};
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		size_t n = ns[k];
		double df = (double)((n - 1) * (n - 1));
		double lim = df + 5 * sqrt(2 * df);
		double c0 = position_chi2(n, 0, 40000), c1 = position_chi2(n, (uint64_t)1 << 40, 40000);
		ck_assert_msg(c0 < lim && c1 < lim, "n %zu: position chi-square %.1f, %.1f over %.1f (df %.0f)", n, c0,
			      c1, lim, df);
	}
	/* Spearman's rho of a shuffle of 1,000 over 2,000 seeds: mean ~0 (its
	 * sd over seeds 1/sqrt(n-1) = 0.032, so the mean's is 0.0007), and
	 * that sd itself */
	enum { N = 1000, S = 2000 };
	static size_t o[N];
	double sum = 0, sum2 = 0;
	for (size_t s = 0; s < S; s++) {
		for (size_t i = 0; i < N; i++)
			o[i] = i;
		ishard_shuffle(o, N, s);
		double d2 = 0;
		for (size_t p = 0; p < N; p++)
			d2 += ((double)p - (double)o[p]) * ((double)p - (double)o[p]);
		double rho = 1 - 6 * d2 / ((double)N * ((double)N * N - 1));
		sum += rho;
		sum2 += rho * rho;
	}
	double mean = sum / S, sd = sqrt(sum2 / S - mean * mean), want = 1 / sqrt(N - 1.0);
	ck_assert_msg(fabs(mean) < 5 * want / sqrt((double)S), "mean rho %.5f", mean);
	ck_assert_msg(sd > 0.9 * want && sd < 1.1 * want, "sd of rho %.5f, want %.5f", sd, want);
}
END_TEST

START_TEST(test_names)
{
	char n[ISHARD_NAME_MAX + 1];
	ck_assert(ishard_name("shard-%06d.tar", 42, n));
	ck_assert_str_eq(n, "shard-000042.tar");
	ck_assert(ishard_name("p/%d.tgz", 7, n));
	ck_assert_str_eq(n, "p/7.tgz");
	ck_assert(ishard_name("s-{0010..0019}.tar", 9, n));
	ck_assert_str_eq(n, "s-0019.tar");
	ck_assert(!ishard_name("s-{0010..0019}.tar", 10, n)); /* past the range */
	ck_assert(!ishard_name("s.tar", 0, n));
	ck_assert(!ishard_name("s-%s.tar", 0, n));
}
END_TEST

static json_t *spec(const char *extra)
{
	json_t *objs = json_array();
	static const char *const nm[] = {"a/1.jpg", "a/1.cls", "a/10.jpg", "a/10.cls", "a/2.jpg",
					 "d.x/3.jpg", "d.x/3.cls", "d.x/3.extra.txt", "zz"};
	for (size_t i = 0; i < sizeof(nm) / sizeof(*nm); i++)
		json_array_append_new(objs, json_pack("[s,i]", nm[i], 700));
	json_error_t e;
	json_t *s = json_loads(extra, 0, &e);
	ck_assert_ptr_nonnull(s);
	json_object_set_new(s, "objects", objs);
	return s;
}

static const char *member(const ishard_plan_t *p, size_t shard, size_t sample_in_shard, size_t m)
{
	const ishard_sample_t *s = &p->samples[p->order[p->shards[shard].first + sample_in_shard]];
	return p->members[s->first + m].name;
}

START_TEST(test_plan_keys)
{
	json_t *s = spec("{\"shard_size\":4096,\"template\":\"s-%03d.tar\"}");
	ishard_plan_t p;
	buf_t err = BUF_INIT;
	ck_assert_int_eq(ishard_plan(s, &p, &err), 0);
	ck_assert_uint_eq(p.nsamples, 5); /* a/1 a/10 a/2 d.x/3 zz */
	ck_assert_uint_eq(p.nmembers, 9);
	/* each member 512 + 1024 tar bytes: a 2-member sample is 3072; 4096
	 * holds one such sample and the end blocks */
	for (size_t i = 0; i < p.nshards; i++)
		ck_assert(p.shards[i].bytes <= 4096 || p.shards[i].n == 1);
	ck_assert_uint_eq(p.oversize, 1); /* d.x/3: three members */
	ck_assert_str_eq(member(&p, 0, 0, 0), "a/1.cls");
	ck_assert_str_eq(member(&p, 0, 0, 1), "a/1.jpg");
	size_t total = 0;
	for (size_t i = 0; i < p.nshards; i++)
		total += p.shards[i].n;
	ck_assert_uint_eq(total, 5);
	ishard_plan_free(&p);
	json_decref(s);
}
END_TEST

START_TEST(test_plan_missing)
{
	ishard_plan_t p;
	buf_t err = BUF_INIT;
	json_t *s = spec("{\"shard_size\":1000000,\"template\":\"s-%d.tar\",\"ext\":[\".jpg\",\".cls\"],"
			 "\"missing\":\"list\"}");
	ck_assert_int_eq(ishard_plan(s, &p, &err), 0);
	ck_assert_uint_eq(p.nsamples, 3); /* a/1 a/10 d.x/3 */
	ck_assert_uint_eq(p.missing, 1);  /* a/2 (zz: no extension asked for, not a sample) */
	ck_assert_uint_eq(json_array_size(p.missing_keys), 1);
	ck_assert_str_eq(json_string_value(json_array_get(p.missing_keys, 0)), "a/2");
	ck_assert_uint_eq(p.skipped_files, 3); /* .extra.txt, a/2.jpg, zz */
	ck_assert_uint_eq(p.nshards, 1);
	ishard_plan_free(&p);
	json_decref(s);
	s = spec("{\"shard_size\":1000000,\"template\":\"s-%d.tar\",\"ext\":[\".jpg\",\".cls\"],\"missing\":\"fail\"}");
	ck_assert_int_eq(ishard_plan(s, &p, &err), 400);
	ck_assert_ptr_nonnull(strstr(err.ptr, "\"a/2\""));
	buf_free(&err);
	json_decref(s);
}
END_TEST

START_TEST(test_plan_regex_and_range)
{
	ishard_plan_t p;
	buf_t err = BUF_INIT;
	json_t *s = spec("{\"shard_size\":1000000,\"template\":\"s-%d.tar\",\"regex\":\"^([a-z.]+)/\"}");
	ck_assert_int_eq(ishard_plan(s, &p, &err), 0);
	ck_assert_uint_eq(p.nsamples, 2); /* a, d.x; zz does not match */
	ck_assert_uint_eq(p.skipped_files, 1);
	ishard_plan_free(&p);
	json_decref(s);
	s = spec("{\"shard_size\":2048,\"template\":\"s-{0..2}.tar\"}");
	ck_assert_int_eq(ishard_plan(s, &p, &err), 400);
	ck_assert_ptr_nonnull(strstr(err.ptr, "cannot name"));
	buf_free(&err);
	json_decref(s);
}
END_TEST

static void order_of(const char *extra, char *out, size_t sz)
{
	json_t *objs = json_array();
	for (int i = 0; i < 200; i++) {
		char n[32];
		snprintf(n, sizeof(n), "k/%04d.bin", i);
		json_array_append_new(objs, json_pack("[s,i]", n, 10));
	}
	json_t *s = json_loads(extra, 0, NULL);
	json_object_set_new(s, "objects", objs);
	ishard_plan_t p;
	buf_t err = BUF_INIT;
	ck_assert_int_eq(ishard_plan(s, &p, &err), 0);
	out[0] = '\0';
	size_t at = 0;
	for (size_t i = 0; i < p.nsamples && at + 8 < sz; i++)
		at += (size_t)snprintf(out + at, sz - at, "%zu,", p.order[i]);
	ishard_plan_free(&p);
	json_decref(s);
}

START_TEST(test_shuffle)
{
	char a[2000], b[2000], c[2000], d[2000];
	order_of("{\"shard_size\":4096,\"template\":\"s-%d.tar\",\"shuffle\":42}", a, sizeof(a));
	order_of("{\"shard_size\":4096,\"template\":\"s-%d.tar\",\"shuffle\":42}", b, sizeof(b));
	order_of("{\"shard_size\":4096,\"template\":\"s-%d.tar\",\"shuffle\":43}", c, sizeof(c));
	order_of("{\"shard_size\":4096,\"template\":\"s-%d.tar\"}", d, sizeof(d));
	ck_assert_str_eq(a, b);
	ck_assert_str_ne(a, c);
	ck_assert_str_ne(a, d);
	ck_assert(!strncmp(d, "0,1,2,3,", 8));
}
END_TEST

START_TEST(test_spec_check)
{
	static const char *const bad[] = {
		"{\"template\":\"s-%d.tar\"}",
		"{\"shard_size\":100,\"template\":\"s-%d.tar\"}",
		"{\"shard_size\":4096,\"template\":\"s.tar\"}",
		"{\"shard_size\":4096,\"template\":\"s-%d.tar\",\"ext\":\".jpg\"}",
		"{\"shard_size\":4096,\"template\":\"s-%d.tar\",\"ext\":[\"jpg\"]}",
		"{\"shard_size\":4096,\"template\":\"s-%d.tar\",\"regex\":\"([\"}",
		"{\"shard_size\":4096,\"template\":\"s-%d.tar\",\"missing\":\"warn\"}",
		"{\"shard_size\":4096,\"template\":\"s-%d.tar\",\"shuffle\":-1}",
		"{\"shard_size\":4096,\"template\":\"../s-%d.tar\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		json_t *s = json_loads(bad[i], 0, NULL);
		buf_t err = BUF_INIT;
		ck_assert_msg(ishard_spec_check(s, &err) == 400 && err.len, "%s", bad[i]);
		buf_free(&err);
		json_decref(s);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ishard");
	TCase *tc = tcase_create("plan");
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_plan_keys);
	tcase_add_test(tc, test_plan_missing);
	tcase_add_test(tc, test_plan_regex_and_range);
	tcase_add_test(tc, test_shuffle);
	tcase_add_test(tc, test_shuffle_uniform);
	tcase_add_test(tc, test_spec_check);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
