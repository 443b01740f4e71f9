/*
 * test_place.c - the pure parts of replication and rebalance: the copies a
 * bucket wants, the holders of an object (distinct, best first, self's
 * rank, clamped to the active targets, never a target in maintenance),
 * whether a map change moves objects (and the placement diff it implies:
 * a join moves about 1/N of the holders, and only onto the new target),
 * and the job state helpers (names, JSON, remaining, merge).
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/jobs.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "aisd/banned.h"

static cmap_node_t mknode(const char *id, enum cmap_role role)
{
	cmap_node_t n;
	memset(&n, 0, sizeof(n));
	snprintf(n.id, sizeof(n.id), "%s", id);
	n.role = role;
	n.state = CMAP_ACTIVE;
	snprintf(n.pub_url, sizeof(n.pub_url), "http://%s:8080", id);
	snprintf(n.intra_url, sizeof(n.intra_url), "http://%s:9080", id);
	return n;
}

static cmap_t *mkmap(int nt)
{
	cmap_node_t g = mknode("g0", CMAP_GATEWAY);
	cmap_t *m = cmap_new("uuid-1", &g, NULL);
	char id[16];
	for (int i = 0; i < nt; i++) {
		snprintf(id, sizeof(id), "t%d", i);
		cmap_node_t n = mknode(id, CMAP_TARGET);
		ck_assert_int_eq(cmap_add(m, &n, NULL), AIS_OK);
	}
	return m;
}

START_TEST(test_copies)
{
	bmd_props_t p;
	bmd_props_default(&p);
	ck_assert_uint_eq(place_copies(&p), 1); /* mirror off by default */
	p.mirror_enabled = true;
	p.mirror_copies = 3;
	ck_assert_uint_eq(place_copies(&p), 3);
	p.mirror_enabled = false;
	ck_assert_uint_eq(place_copies(&p), 1);
	ck_assert_uint_eq(place_copies(NULL), 1);
}
END_TEST

START_TEST(test_holders)
{
	cmap_t *m = mkmap(5);
	place_t p;
	char name[32];
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "b/obj-%d", i);
		place_of(m, name, strlen(name), 3, NULL, &p);
		ck_assert_uint_eq(p.n, 3);
		ck_assert_int_eq(p.self, -1);
		ck_assert_ptr_eq(p.node[0], cmap_owner(m, name, strlen(name)));
		ck_assert_str_ne(p.node[0]->id, p.node[1]->id);
		ck_assert_str_ne(p.node[1]->id, p.node[2]->id);
		ck_assert_str_ne(p.node[0]->id, p.node[2]->id);
		place_t q;
		place_of(m, name, strlen(name), 3, p.node[2]->id, &q);
		ck_assert_int_eq(q.self, 2);
		place_of(m, name, strlen(name), 1, p.node[2]->id, &q);
		ck_assert_int_eq(q.self, -1); /* not a holder of a single copy */
	}
	place_of(m, "b/x", 3, 9, NULL, &p);
	ck_assert_uint_eq(p.n, 5); /* clamped to the active targets */
	place_of(NULL, "b/x", 3, 2, "t0", &p);
	ck_assert_uint_eq(p.n, 0);
	/* a target in maintenance holds nothing */
	ck_assert_int_eq(cmap_set_state(m, "t1", CMAP_MAINTENANCE, NULL), AIS_OK);
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "b/obj-%d", i);
		place_of(m, name, strlen(name), 4, "t1", &p);
		ck_assert_uint_eq(p.n, 4);
		ck_assert_int_eq(p.self, -1);
	}
	cmap_free(m);
}
END_TEST

START_TEST(test_changed)
{
	cmap_t *a = mkmap(3), *b = cmap_clone(a);
	ck_assert(!place_changed(a, b));
	cmap_node_t gw = mknode("g1", CMAP_GATEWAY);
	ck_assert_int_eq(cmap_add(b, &gw, NULL), AIS_OK);
	ck_assert(!place_changed(a, b)); /* a gateway moves nothing */
	cmap_node_t t = mknode("t9", CMAP_TARGET);
	ck_assert_int_eq(cmap_add(b, &t, NULL), AIS_OK);
	ck_assert(place_changed(a, b));
	ck_assert(place_changed(b, a));
	cmap_t *c = cmap_clone(a);
	ck_assert_int_eq(cmap_set_state(c, "t0", CMAP_MAINTENANCE, NULL), AIS_OK);
	ck_assert(place_changed(a, c));
	cmap_t *d = cmap_clone(c);
	ck_assert_int_eq(cmap_set_state(d, "t0", CMAP_DECOMMISSIONING, NULL), AIS_OK);
	ck_assert(!place_changed(c, d)); /* inactive either way */
	ck_assert_int_eq(cmap_remove(d, "t0", NULL), AIS_OK);
	ck_assert(!place_changed(c, d));
	ck_assert(place_changed(NULL, a));
	ck_assert(!place_changed(NULL, NULL));
	cmap_free(a);
	cmap_free(b);
	cmap_free(c);
	cmap_free(d);
}
END_TEST

/* The diff a join implies: holders change for ~k/N of the names, and every
 * new holder is the new target. */
START_TEST(test_join_diff)
{
	cmap_t *a = mkmap(3), *b = cmap_clone(a);
	cmap_node_t t = mknode("t3", CMAP_TARGET);
	ck_assert_int_eq(cmap_add(b, &t, NULL), AIS_OK);
	char name[32];
	int moved = 0, total = 4000;
	for (int i = 0; i < total; i++) {
		place_t pa, pb;
		snprintf(name, sizeof(name), "b/o%d", i);
		place_of(a, name, strlen(name), 2, NULL, &pa);
		place_of(b, name, strlen(name), 2, NULL, &pb);
		bool same = true;
		for (size_t j = 0; j < 2; j++) {
			bool in_a = !strcmp(pb.node[j]->id, pa.node[0]->id) ||
			            !strcmp(pb.node[j]->id, pa.node[1]->id);
			if (!in_a) {
				ck_assert_str_eq(pb.node[j]->id, "t3");
				same = false;
			}
		}
		moved += !same;
	}
	/* a new target is among the top 2 of 4 for half of the names */
	ck_assert_int_gt(moved, total * 40 / 100);
	ck_assert_int_lt(moved, total * 60 / 100);
	cmap_free(a);
	cmap_free(b);
}
END_TEST

START_TEST(test_job_state)
{
	ck_assert_str_eq(job_state_name(JOB_RUNNING), "running");
	ck_assert_str_eq(job_state_name((enum job_state)42), "unknown");
	job_stats_t s;
	memset(&s, 0, sizeof(s));
	s.state = JOB_RUNNING;
	s.total = 10;
	s.walked = 4;
	s.moved_bytes = 1ULL << 40;
	s.peer_streams_max = 3;
	snprintf(s.last_error, sizeof(s.last_error), "o\"1: refused");
	ck_assert_uint_eq(job_remaining(&s), 6);
	buf_t out = BUF_INIT;
	job_stats_json(&s, "rebalance", &out);
	json_error_t jerr;
	json_t *d = json_loadb(out.ptr, out.len, 0, &jerr);
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(json_string_value(json_object_get(d, "state")), "running");
	ck_assert_int_eq(json_integer_value(json_object_get(d, "remaining")), 6);
	ck_assert_int_eq(json_integer_value(json_object_get(d, "moved_bytes")), (json_int_t)(1ULL << 40));
	ck_assert_int_eq(json_integer_value(json_object_get(d, "peer_streams_max")), 3);
	ck_assert_str_eq(json_string_value(json_object_get(d, "last_error")), "o\"1: refused");
	json_decref(d);
	buf_free(&out);
	s.state = JOB_DONE;
	ck_assert_uint_eq(job_remaining(&s), 0);

	enum job_state a[] = {JOB_DONE, JOB_RUNNING, JOB_FAILED};
	ck_assert_int_eq(job_state_merge(a, 3), JOB_RUNNING);
	enum job_state b[] = {JOB_DONE, JOB_ABORTED, JOB_FAILED};
	ck_assert_int_eq(job_state_merge(b, 3), JOB_FAILED);
	enum job_state c[] = {JOB_DONE, JOB_IDLE};
	ck_assert_int_eq(job_state_merge(c, 2), JOB_DONE);
	ck_assert_int_eq(job_state_merge(NULL, 0), JOB_IDLE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("place");
	TCase *tc = tcase_create("place");
	tcase_add_test(tc, test_copies);
	tcase_add_test(tc, test_holders);
	tcase_add_test(tc, test_changed);
	tcase_add_test(tc, test_join_diff);
	tcase_add_test(tc, test_job_state);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
