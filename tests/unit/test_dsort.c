/*
 * test_dsort.c - the pure half of dsort (src/dsort/plan.c): the spec's
 * checks (every bad spec a 400 with a message), the gateway's choice of
 * input shards (prefix, input template, compressed shards kept and other
 * names skipped, output named
 * like an input refused, a template too small for the input refused), the
 * numbers compared as text, the global order of every algorithm (ties in
 * canonical order, a seeded shuffle the same for a seed and a permutation)
 * and the cut into output shards (by size, by count, the template's range).
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/dsort.h"
#include "aisd/banned.h"

static json_t *js(const char *s)
{
	json_error_t e;
	json_t *v = json_loads(s, 0, &e);
	ck_assert_msg(v != NULL, "%s: %s", s, e.text);
	return v;
}

START_TEST(test_spec)
{
	static const char *const good[] = {
		"{\"template\":\"o-%06d.tar\",\"shard_size\":1048576}",
		"{\"template\":\"o-{000..999}.tar\",\"samples_per_shard\":10,\"algorithm\":\"shuffle\",\"seed\":3}",
		"{\"template\":\"o/%d.tar\",\"shard_size\":4096,\"algorithm\":\"content\",\"content_ext\":\".cls\","
		"\"content_type\":\"string\",\"input_template\":\"in-{0..9}.tar\",\"prefix\":\"in-\"}",
		"{\"template\":\"o-%06d.tgz\",\"shard_size\":1048576}",
		"{\"template\":\"o-%06d.tar.gz\",\"samples_per_shard\":4}",
		"{\"algorithm\":\"order\",\"order_file\":\"b/dir/o.txt\",\"unlisted_shard\":\"rest.tgz\"}",
		"{\"algorithm\":\"order\",\"order_file\":\"b/o.txt\",\"template\":\"o-%d.tar\","
		"\"unlisted_shard\":\"o-99.tar\"}",
	};
	static const char *const bad[] = {
		"{\"template\":\"o-%06d.tar\",\"shard_size\":1048576,\"algorithm\":\"bogus\"}",
		"{\"template\":\"o.tar\",\"shard_size\":1048576}",
		"{\"template\":\"o-%06d.zip\",\"shard_size\":1048576}",
		"{\"template\":\"o-%06d.tar\"}",
		"{\"algorithm\":\"order\"}",
		"{\"algorithm\":\"order\",\"order_file\":\"b\"}",
		"{\"algorithm\":\"order\",\"order_file\":\"/o.txt\"}",
		"{\"algorithm\":\"order\",\"order_file\":\"b/o.txt\",\"shard_size\":4096}",
		"{\"algorithm\":\"order\",\"order_file\":\"b/o.txt\",\"unlisted_shard\":\"rest.zip\"}",
		"{\"algorithm\":\"order\",\"order_file\":\"b/o.txt\",\"template\":\"o-%d.tar\","
		"\"unlisted_shard\":\"rest.tar\"}",
		"{\"template\":\"o-%06d.tar\",\"shard_size\":4096,\"order_file\":\"b/o.txt\"}",
		"{\"template\":\"o-%06d.tar\",\"shard_size\":100}",
		"{\"template\":\"o-%06d.tar\",\"shard_size\":4096,\"samples_per_shard\":3}",
		"{\"template\":\"o-%06d.tar\",\"samples_per_shard\":0}",
		"{\"template\":\"o-%06d.tar\",\"shard_size\":4096,\"seed\":-1}",
		"{\"template\":\"o-%06d.tar\",\"shard_size\":4096,\"algorithm\":\"content\"}",
		"{\"template\":\"o-%06d.tar\",\"shard_size\":4096,\"algorithm\":\"content\",\"content_ext\":\"cls\"}",
		"{\"template\":\"o-%06d.tar\",\"shard_size\":4096,\"algorithm\":\"content\",\"content_ext\":\".cls\","
		"\"content_type\":\"float\"}",
		"{\"template\":\"o-%06d.tar\",\"shard_size\":4096,\"content_ext\":\".cls\"}",
		"{\"template\":\"o-%06d.tar\",\"shard_size\":4096,\"input_template\":\"in.tar\"}",
		"{\"template\":\"o-%06d.tar\",\"shard_size\":4096,\"dry_run\":1}",
		"[]",
	};
	dsort_spec_t s;
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		json_t *v = js(good[i]);
		buf_t err = BUF_INIT;
		ck_assert_msg(dsort_spec_parse(v, &s, &err) == 0, "%s: %s", good[i], err.ptr);
		buf_free(&err);
		json_decref(v);
	}
	json_t *v = js(good[2]);
	buf_t err = BUF_INIT;
	dsort_spec_parse(v, &s, &err);
	ck_assert_int_eq(s.alg, DSORT_CONTENT);
	ck_assert(!s.content_num);
	ck_assert_str_eq(s.content_ext, ".cls");
	json_decref(v);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		v = js(bad[i]);
		buf_t e = BUF_INIT;
		ck_assert_msg(dsort_spec_parse(v, &s, &e) == 400 && e.len && strstr(e.ptr, "dsort:"), "%s", bad[i]);
		buf_free(&e);
		json_decref(v);
	}
}
END_TEST

START_TEST(test_name_match)
{
	ck_assert(ishard_name_match("o-%06d.tar", "o-000042.tar"));
	ck_assert(ishard_name_match("o-%d.tar", "o-7.tar"));
	ck_assert(!ishard_name_match("o-%d.tar", "o-.tar"));
	ck_assert(!ishard_name_match("o-%d.tar", "o-7x.tar"));
	ck_assert(!ishard_name_match("o-%d.tar", "p-7.tar"));
	ck_assert(ishard_name_match("in-{010..019}.tar", "in-015.tar"));
	ck_assert(!ishard_name_match("in-{010..019}.tar", "in-020.tar"));
	ck_assert(!ishard_name_match("in.tar", "in.tar"));
}
END_TEST

START_TEST(test_numcmp)
{
	bool ok;
	ck_assert_int_lt(dsort_numcmp("7", 1, "10", 2, &ok), 0);
	ck_assert(ok);
	ck_assert_int_eq(dsort_numcmp("007", 3, "7.0", 3, &ok), 0);
	ck_assert_int_gt(dsort_numcmp("1.5", 3, "1.25", 4, &ok), 0);
	ck_assert_int_lt(dsort_numcmp("-3", 2, "2", 1, &ok), 0);
	ck_assert_int_gt(dsort_numcmp("-3", 2, "-10", 3, &ok), 0);
	ck_assert_int_eq(dsort_numcmp("-0", 2, "0", 1, &ok), 0);
	ck_assert_int_gt(dsort_numcmp("123456789012345678901234567890", 30, "99", 2, &ok), 0);
	dsort_numcmp("1e5", 3, "2", 1, &ok);
	ck_assert(!ok);
	dsort_numcmp("", 0, "2", 1, &ok);
	ck_assert(!ok);
	dsort_numcmp(".", 1, "2", 1, &ok);
	ck_assert(!ok);
}
END_TEST

static dsort_rec_t rec(uint32_t shard, uint32_t pos, const char *key, const char *skey, uint64_t bytes)
{
	return (dsort_rec_t){.shard = shard, .pos = pos, .key = key, .skey = skey, .sklen = skey ? strlen(skey) : 0,
			     .bytes = bytes};
}

static void order_of(const char *specjs, const dsort_rec_t *r, size_t n, size_t *order)
{
	json_t *v = js(specjs);
	dsort_spec_t s;
	buf_t err = BUF_INIT;
	ck_assert_int_eq(dsort_spec_parse(v, &s, &err), 0);
	dsort_order(&s, r, n, order);
	json_decref(v);
}

START_TEST(test_order)
{
	dsort_rec_t r[] = {rec(1, 0, "n/item10", "2", 100), rec(0, 0, "n/item7", "10", 100),
			   rec(0, 5, "n/item100", "2", 100), rec(2, 0, "x", "1.5", 100),
			   rec(0, 3, "n/item7", "3", 100)};
	size_t o[5];
	order_of("{\"template\":\"o-%d.tar\",\"shard_size\":4096}", r, 5, o);
	size_t alpha[] = {0, 2, 1, 4, 3}; /* bytes; the two n/item7 by shard, then position */
	ck_assert_mem_eq(o, alpha, sizeof(o));
	order_of("{\"template\":\"o-%d.tar\",\"shard_size\":4096,\"algorithm\":\"numeric\"}", r, 5, o);
	size_t num[] = {1, 4, 0, 2, 3}; /* 7 7 10 100, then the key without a number */
	ck_assert_mem_eq(o, num, sizeof(o));
	order_of("{\"template\":\"o-%d.tar\",\"shard_size\":4096,\"algorithm\":\"content\",\"content_ext\":\".c\"}",
		 r, 5, o);
	size_t cnum[] = {3, 0, 2, 4, 1}; /* 1.5 2 2 3 10; the 2s by key */
	ck_assert_mem_eq(o, cnum, sizeof(o));
	order_of("{\"template\":\"o-%d.tar\",\"shard_size\":4096,\"algorithm\":\"content\",\"content_ext\":\".c\","
		 "\"content_type\":\"string\"}",
		 r, 5, o);
	size_t cstr[] = {3, 1, 0, 2, 4}; /* "1.5" "10" "2" "2" "3" */
	ck_assert_mem_eq(o, cstr, sizeof(o));
}
END_TEST

START_TEST(test_shuffle)
{
	enum { N = 500 };
	static dsort_rec_t r[N];
	static char keys[N][16];
	static size_t a[N], b[N], c[N];
	for (size_t i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%05zu", (i * 7919) % N);
		r[i] = rec((uint32_t)(i % 4), (uint32_t)i, keys[i], NULL, 10);
	}
	order_of("{\"template\":\"o-%d.tar\",\"shard_size\":4096,\"algorithm\":\"shuffle\",\"seed\":9}", r, N, a);
	order_of("{\"template\":\"o-%d.tar\",\"shard_size\":4096,\"algorithm\":\"shuffle\",\"seed\":9}", r, N, b);
	order_of("{\"template\":\"o-%d.tar\",\"shard_size\":4096,\"algorithm\":\"shuffle\",\"seed\":10}", r, N, c);
	ck_assert_mem_eq(a, b, sizeof(a));
	ck_assert(memcmp(a, c, sizeof(a)) != 0);
	static bool seen[N];
	size_t inorder = 0;
	for (size_t i = 0; i < N; i++) {
		ck_assert(a[i] < N && !seen[a[i]]);
		seen[a[i]] = true;
		inorder += i && strcmp(r[a[i - 1]].key, r[a[i]].key) < 0;
	}
	ck_assert_uint_lt(inorder, N * 3 / 4); /* not the key order */
}
END_TEST

START_TEST(test_cut)
{
	dsort_rec_t r[] = {rec(0, 0, "a", NULL, 1000), rec(0, 1, "b", NULL, 1000), rec(0, 2, "c", NULL, 5000),
			   rec(0, 3, "d", NULL, 1000), rec(0, 4, "e", NULL, 1000)};
	size_t o[] = {0, 1, 2, 3, 4}, n = 0;
	dsort_out_t *outs = NULL;
	json_t *v = js("{\"template\":\"o-%d.tar\",\"shard_size\":3100}");
	dsort_spec_t s;
	buf_t err = BUF_INIT;
	dsort_spec_parse(v, &s, &err);
	ck_assert_int_eq(dsort_cut(&s, r, o, 5, &outs, &n, &err), 0);
	ck_assert_uint_eq(n, 3); /* a b | c (alone, larger) | d e */
	ck_assert_uint_eq(outs[0].n, 2);
	ck_assert_uint_eq(outs[0].bytes, 3024);
	ck_assert_uint_eq(outs[1].n, 1);
	ck_assert_uint_eq(outs[2].first, 3);
	free(outs);
	json_decref(v);
	v = js("{\"template\":\"o-{0..1}.tar\",\"samples_per_shard\":2}");
	dsort_spec_parse(v, &s, &err);
	ck_assert_int_eq(dsort_cut(&s, r, o, 4, &outs, &n, &err), 0);
	ck_assert_uint_eq(n, 2);
	free(outs);
	ck_assert_int_eq(dsort_cut(&s, r, o, 5, &outs, &n, &err), 400); /* 3 shards, 2 names */
	ck_assert_ptr_nonnull(strstr(err.ptr, "cannot name"));
	buf_free(&err);
	json_decref(v);
}
END_TEST

START_TEST(test_select)
{
	json_t *listing = js("[[\"in-000.tar\",20480],[\"in-001.tar\",20480],[\"in-readme.txt\",5],"
			     "[\"in-002.tgz\",100],[\"other.tar\",10240]]");
	json_t *targets = js("[[\"t1\",\"http://a\"],[\"t2\",\"http://b\"],[\"t3\",\"http://c\"]]");
	json_t *v = js("{\"template\":\"o-%d.tar\",\"shard_size\":4096,\"prefix\":\"in-\"}");
	buf_t err = BUF_INIT;
	ck_assert_int_eq(dsort_select(v, "src", listing, targets, false, &err), 0);
	json_t *objs = json_object_get(v, "objects");
	ck_assert_uint_eq(json_array_size(objs), 3); /* the .tgz too */
	ck_assert_str_eq(json_string_value(json_array_get(json_array_get(objs, 1), 0)), "in-001.tar");
	ck_assert_str_eq(json_string_value(json_array_get(json_array_get(objs, 2), 0)), "in-002.tgz");
	ck_assert_int_lt(json_integer_value(json_array_get(json_array_get(objs, 1), 2)), 3);
	ck_assert_uint_eq(json_array_size(json_object_get(v, "skipped")), 1);
	json_t *sum = json_object();
	dsort_dry_summary(v, sum);
	ck_assert_int_eq(json_integer_value(json_object_get(sum, "input_shards")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(sum, "input_bytes")), 41060);
	json_decref(sum);
	json_decref(v);
	v = js("{\"template\":\"o-%d.tar\",\"shard_size\":4096,\"input_template\":\"in-{001..009}.tar\"}");
	ck_assert_int_eq(dsort_select(v, "src", listing, targets, false, &err), 0);
	ck_assert_uint_eq(json_array_size(json_object_get(v, "objects")), 1);
	json_decref(v);
	v = js("{\"template\":\"in-%03d.tar\",\"shard_size\":4096,\"prefix\":\"in-\"}");
	ck_assert_int_eq(dsort_select(v, "src", listing, targets, true, &err), 400); /* output named like the input */
	ck_assert_ptr_nonnull(strstr(err.ptr, "in-000.tar"));
	err.len = 0;
	ck_assert_int_eq(dsort_select(v, "src", listing, targets, false, &err), 0); /* another bucket: fine */
	json_decref(v);
	v = js("{\"template\":\"o-%d.tar\",\"shard_size\":4096,\"prefix\":\"none-\"}");
	ck_assert_int_eq(dsort_select(v, "src", listing, targets, false, &err), 400);
	json_decref(v);
	v = js("{\"template\":\"o-{0..1}.tar\",\"samples_per_shard\":2,\"prefix\":\"in-\"}");
	err.len = 0; /* 3 input shards, a sample each at least: 2 shards of 2 at least; 2 names: fine */
	ck_assert_int_eq(dsort_select(v, "src", listing, targets, false, &err), 0);
	json_decref(v);
	v = js("{\"template\":\"o-{0..1}.tar\",\"samples_per_shard\":1,\"prefix\":\"in-\"}");
	err.len = 0; /* 3 shards of 1 at least, 2 names */
	ck_assert_int_eq(dsort_select(v, "src", listing, targets, false, &err), 400);
	ck_assert_ptr_nonnull(strstr(err.ptr, "samples_per_shard"));
	json_decref(v);
	json_decref(listing);
	listing = js("[[\"in-000.tar\",104857600]]");
	v = js("{\"template\":\"o-{0..9}.tar\",\"shard_size\":1048576}"); /* 100 MiB into 1 MiB: 10 names */
	err.len = 0;
	ck_assert_int_eq(dsort_select(v, "src", listing, targets, false, &err), 400);
	ck_assert_ptr_nonnull(strstr(err.ptr, "cannot name"));
	json_decref(v);
	json_decref(listing);
	json_decref(targets);
	buf_free(&err);
}
END_TEST

START_TEST(test_ofile)
{
	dsort_ofile_t of;
	buf_t err = BUF_INIT;
	const char *t = "# comment\r\nk2\tb.tar\r\n\nk1\ta.tgz\nx/k3\tb.tar\n";
	ck_assert_int_eq(dsort_ofile_parse(t, strlen(t), "", &of, &err), 0);
	ck_assert_uint_eq(of.nshards, 2);
	ck_assert_str_eq(of.shards[0], "b.tar");
	ck_assert_str_eq(of.shards[1], "a.tgz");
	ck_assert_uint_eq(of.nkeys, 3);
	const dsort_okey_t *k = dsort_ofile_find(&of, "x/k3");
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(k->shard, 0);
	ck_assert_uint_eq(k->line, 5);
	ck_assert_ptr_null(dsort_ofile_find(&of, "k4"));
	dsort_ofile_free(&of);
	static const char *const bad[][2] = {
		{"k1 a.tar\n", "line 1"},
		{"\ta.tar\n", "line 1"},
		{"k1\ta.tar\nk2\ta.zip\n", "line 2"},
		{"k1\ta.tar\nk2\t\n", "line 2"},
		{"k1\ta.tar\nk1\tb.tar\n", "lines 1 and 2"},
		{"# nothing\n\n", "no sample"},
		{"k1\tx-1.tar\n", "template"}, /* with the template o-%d.tar */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		err.len = 0;
		ck_assert_int_eq(dsort_ofile_parse(bad[i][0], strlen(bad[i][0]), i == 6 ? "o-%d.tar" : "", &of, &err), 400);
		ck_assert_msg(strstr(err.ptr, bad[i][1]) != NULL, "%s: %s", bad[i][0], err.ptr);
		ck_assert_ptr_null(of.text);
	}
	err.len = 0;
	ck_assert_int_eq(dsort_ofile_parse("k\0\ta.tar", 9, "", &of, &err), 400);
	buf_free(&err);
}
END_TEST

START_TEST(test_order_file)
{
	dsort_rec_t r[] = {rec(0, 0, "a", NULL, 100), rec(0, 1, "b", NULL, 100), rec(1, 0, "c", NULL, 100),
			   rec(1, 1, "a", NULL, 100), rec(2, 0, "d", NULL, 100)};
	const char *t = "c\tx.tar\na\ty.tgz\nb\tx.tar\n";
	json_t *v = js("{\"algorithm\":\"order\",\"order_file\":\"b/o\"}");
	dsort_spec_t s;
	dsort_ofile_t of;
	buf_t err = BUF_INIT;
	ck_assert_int_eq(dsort_spec_parse(v, &s, &err), 0);
	ck_assert_int_eq(dsort_ofile_parse(t, strlen(t), s.tpl, &of, &err), 0);
	s.of = &of;
	size_t o[5], n = 0;
	dsort_out_t *outs = NULL;
	dsort_order(&s, r, 5, o);
	size_t want[] = {2, 1, 0, 3, 4}; /* x.tar: c, b; y.tgz: a (shard 0), a (shard 1); d unlisted, last */
	for (size_t i = 0; i < 5; i++)
		ck_assert_uint_eq(o[i], want[i]);
	ck_assert_int_eq(dsort_cut(&s, r, o, 5, &outs, &n, &err), 400); /* d is not listed */
	ck_assert_ptr_nonnull(strstr(err.ptr, "\"d\""));
	json_decref(v);
	v = js("{\"algorithm\":\"order\",\"order_file\":\"b/o\",\"unlisted_shard\":\"rest.tar\"}");
	ck_assert_int_eq(dsort_spec_parse(v, &s, &err), 0);
	s.of = &of;
	ck_assert_int_eq(dsort_cut(&s, r, o, 5, &outs, &n, &err), 0);
	ck_assert_uint_eq(n, 3);
	char nm[ISHARD_NAME_MAX + 1];
	const char *names[] = {"x.tar", "y.tgz", "rest.tar"};
	size_t counts[] = {2, 2, 1};
	for (size_t i = 0; i < 3; i++) {
		dsort_out_name(&s, outs, i, nm);
		ck_assert_str_eq(nm, names[i]);
		ck_assert_uint_eq(outs[i].n, counts[i]);
	}
	free(outs);
	json_decref(v);
	/* the catch-all may be a shard of the file: its unlisted samples after its listed ones */
	v = js("{\"algorithm\":\"order\",\"order_file\":\"b/o\",\"unlisted_shard\":\"x.tar\"}");
	ck_assert_int_eq(dsort_spec_parse(v, &s, &err), 0);
	s.of = &of;
	dsort_order(&s, r, 5, o);
	ck_assert_int_eq(dsort_cut(&s, r, o, 5, &outs, &n, &err), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(outs[0].n, 3);
	ck_assert_uint_eq(o[2], 4);
	free(outs);
	json_decref(v);
	dsort_ofile_free(&of);
	/* the gateway's part: the text checked, an output named like an input refused */
	json_t *listing = js("[[\"in-0.tar\",20480],[\"x.tar\",10240]]");
	json_t *targets = js("[[\"t1\",\"http://a\"]]");
	v = js("{\"algorithm\":\"order\",\"order_file\":\"b/o\",\"order_text\":\"a\\tx.tar\\n\"}");
	err.len = 0;
	ck_assert_int_eq(dsort_select(v, "src", listing, targets, true, &err), 400);
	ck_assert_ptr_nonnull(strstr(err.ptr, "x.tar"));
	err.len = 0;
	ck_assert_int_eq(dsort_select(v, "src", listing, targets, false, &err), 0);
	json_t *sum = json_object();
	dsort_dry_summary(v, sum);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(sum, "output"), "first")), "x.tar");
	json_decref(sum);
	json_decref(v);
	v = js("{\"algorithm\":\"order\",\"order_file\":\"b/o\",\"order_text\":\"a x.tar\\n\"}");
	err.len = 0;
	ck_assert_int_eq(dsort_select(v, "src", listing, targets, false, &err), 400);
	ck_assert_ptr_nonnull(strstr(err.ptr, "line 1"));
	json_decref(v);
	v = js("{\"algorithm\":\"order\",\"order_file\":\"b/o\"}");
	err.len = 0;
	ck_assert_int_eq(dsort_select(v, "src", listing, targets, false, &err), 400);
	json_decref(v);
	json_decref(listing);
	json_decref(targets);
	buf_free(&err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dsort");
	TCase *tc = tcase_create("plan");
	tcase_add_test(tc, test_spec);
	tcase_add_test(tc, test_name_match);
	tcase_add_test(tc, test_numcmp);
	tcase_add_test(tc, test_order);
	tcase_add_test(tc, test_shuffle);
	tcase_add_test(tc, test_cut);
	tcase_add_test(tc, test_select);
	tcase_add_test(tc, test_ofile);
	tcase_add_test(tc, test_order_file);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
