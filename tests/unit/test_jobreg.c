/*
 * test_jobreg.c - the job registry (jobreg.h) without a daemon: ids, runs
 * begun and ended, the list's JSON and selection, the record files (a run
 * cut by a "crash" resumed with its id and spec by a kind that resumes,
 * recorded aborted for one that does not), the history's bound, an id
 * begun again replacing its finished run, stop by id and kind, the
 * progress arithmetic and the metrics.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/jobreg.h"
#include "aisd/util.h"
#include "aisd/banned.h"

static char dir[64];
static char resumed_id[JREG_ID_MAX + 1];
static json_t *resumed_spec;
static int stops;

static int k_start(void *arg, const char *id, json_t *spec, bool resume, buf_t *err)
{
	(void)arg;
	(void)err;
	if (resume) {
		snprintf(resumed_id, sizeof(resumed_id), "%s", id);
		resumed_spec = json_incref(spec);
	}
	jreg_begin("copy", id, json_string_value(json_object_get(spec, "bucket")), spec);
	return 0;
}

static void k_stop(void *arg, const char *id)
{
	(void)arg;
	(void)id;
	stops++;
}

static bool k_progress(void *arg, const char *id, job_stats_t *out)
{
	(void)arg;
	(void)id;
	out->state = JOB_RUNNING;
	out->walked = 7;
	out->total = 10;
	return true;
}

static const jreg_kind_t kcopy = {
	.name = "copy", .start = k_start, .stop = k_stop, .progress = k_progress, .resumes = true};
static const jreg_kind_t kreb = {.name = "reb", .stop = k_stop};

static json_t *list(const char *kind, const char *id, bool all)
{
	buf_t b = BUF_INIT;
	jreg_list_json(kind, id, all, &b);
	json_t *j = json_loadb(b.ptr, b.len, 0, NULL);
	buf_free(&b);
	ck_assert_ptr_nonnull(j);
	return j;
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/aisd-jobreg.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	jreg_shutdown();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_ids)
{
	char a[JREG_ID_MAX + 1], b[JREG_ID_MAX + 1];
	jreg_new_id(a);
	jreg_new_id(b);
	ck_assert_uint_eq(strlen(a), 8);
	ck_assert_str_ne(a, b);
	ck_assert(jreg_id_valid(a, strlen(a)));
	ck_assert(jreg_id_valid("rebalance-v12", 13));
	ck_assert(!jreg_id_valid("../x", 4));
	ck_assert(!jreg_id_valid(".x", 2));
	ck_assert(!jreg_id_valid("a/b", 3));
	ck_assert(!jreg_id_valid("", 0));
}
END_TEST

START_TEST(test_runs_and_resume)
{
	jreg_init(dir);
	jreg_register(&kcopy);
	jreg_register(&kreb);
	buf_t err = BUF_INIT;
	char id[JREG_ID_MAX + 1];
	json_t *spec = json_pack("{s:s}", "bucket", "b1");
	ck_assert_int_eq(jreg_start("copy", NULL, spec, id, &err), 0);
	ck_assert_int_eq(jreg_start("copy", id, spec, NULL, &err), 409); /* running */
	ck_assert_int_eq(jreg_start("reb", NULL, spec, NULL, &err), 400); /* starts by itself */
	ck_assert_int_eq(jreg_start("nosuch", NULL, spec, NULL, &err), 404);
	ck_assert_int_eq(jreg_start("copy", "../x", spec, NULL, &err), 400);
	jreg_begin("reb", "reb-v1", "", NULL);
	job_stats_t fin = {.state = JOB_DONE, .walked = 3, .moved_bytes = 300};
	jreg_end("reb-v1", &fin);

	json_t *l = list(NULL, NULL, false); /* live only */
	ck_assert_uint_eq(json_array_size(l), 1);
	json_t *r = json_array_get(l, 0);
	ck_assert_str_eq(json_string_value(json_object_get(r, "id")), id);
	ck_assert_str_eq(json_string_value(json_object_get(r, "bucket")), "b1");
	ck_assert_str_eq(json_string_value(json_object_get(r, "state")), "running");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "progress"), "objects")), 7);
	json_decref(l);
	l = list(NULL, NULL, true);
	ck_assert_uint_eq(json_array_size(l), 2);
	json_decref(l);
	l = list("reb", NULL, true);
	ck_assert_uint_eq(json_array_size(l), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(json_array_get(l, 0), "progress"), "bytes")),
			 300);
	json_decref(l);
	ck_assert_uint_eq(jreg_stop(NULL, id), 1);
	ck_assert_uint_eq(jreg_stop("reb", NULL), 1);
	ck_assert_uint_eq(jreg_stop(NULL, "reb-v1"), 0); /* ended */
	ck_assert_int_eq(stops, 2);

	/* a crash: the records stay, the process forgets */
	jreg_begin("reb", "reb-v2", "", NULL);
	jreg_shutdown();
	jreg_init(dir);
	jreg_register(&kcopy);
	jreg_register(&kreb);
	jreg_resume();
	ck_assert_str_eq(resumed_id, id);
	ck_assert_str_eq(json_string_value(json_object_get(resumed_spec, "bucket")), "b1");
	json_decref(resumed_spec);
	l = list(NULL, "reb-v2", false);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 0), "state")), "aborted");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_array_get(l, 0), "last_error")), "restart"));
	json_decref(l);
	l = list(NULL, "reb-v1", false); /* the history came back from its file */
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 0), "state")), "done");
	json_decref(l);
	/* rule 4: the same id again replaces the finished run */
	jreg_begin("reb", "reb-v1", "", NULL);
	l = list(NULL, "reb-v1", true);
	ck_assert_uint_eq(json_array_size(l), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 0), "state")), "running");
	json_decref(l);
	buf_t m = BUF_INIT; /* since the process started: a start, its resume; three begins */
	jreg_metrics(&m);
	buf_addch(&m, 0);
	ck_assert_ptr_nonnull(strstr(m.ptr, "aisd_job_runs_started_total{job=\"copy\"} 2"));
	ck_assert_ptr_nonnull(strstr(m.ptr, "aisd_job_runs_started_total{job=\"reb\"} 3"));
	buf_free(&m);
	json_decref(spec);
	buf_free(&err);
}
END_TEST

START_TEST(test_history_bound)
{
	jreg_init(dir);
	for (int i = 0; i < JREG_HISTORY + 20; i++) {
		char id[32];
		snprintf(id, sizeof(id), "r%03d", i);
		jreg_begin("reb", id, "", NULL);
		job_stats_t fin = {.state = JOB_DONE, .end_ns = 1000 + i};
		jreg_end(id, &fin);
	}
	jreg_begin("copy", "other", "", NULL); /* another kind's history is its own */
	job_stats_t one = {.state = JOB_DONE, .end_ns = 1};
	jreg_end("other", &one);
	json_t *l = list("reb", NULL, true);
	ck_assert_uint_eq(json_array_size(l), JREG_HISTORY);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 0), "id")), "r119"); /* newest first */
	json_decref(l);
	l = list(NULL, "other", false);
	ck_assert_uint_eq(json_array_size(l), 1);
	json_decref(l);
	char path[128];
	snprintf(path, sizeof(path), "%s/jobs/r000.json", dir);
	ck_assert_int_ne(access(path, F_OK), 0); /* trimmed: its file too */
	snprintf(path, sizeof(path), "%s/jobs/r119.json", dir);
	ck_assert_int_eq(access(path, F_OK), 0);
}
END_TEST

START_TEST(test_progress)
{
	job_stats_t s = {.state = JOB_RUNNING, .start_ns = 1000000000, .walked = 50, .total = 150, .walked_bytes = 500};
	jreg_progress_t p;
	jreg_progress_of(&s, 11000000000, &p); /* 10 s in */
	ck_assert_uint_eq(p.objects, 50);
	ck_assert_uint_eq(p.bytes, 500);
	ck_assert(p.rate_objects > 4.99 && p.rate_objects < 5.01);
	ck_assert_int_eq(p.eta_s, 20);
	s.walked = 0;
	jreg_progress_of(&s, 11000000000, &p);
	ck_assert_int_eq(p.eta_s, -1); /* no rate yet */
	s.state = JOB_DONE;
	jreg_progress_of(&s, 11000000000, &p);
	ck_assert_int_eq(p.eta_s, 0);
}
END_TEST

/* The first JOB_ERRORS_LISTED errors listed, every one counted, one line
 * each in the JSON. */
START_TEST(test_error_list)
{
	job_stats_t s = {0};
	char name[32];
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "obj%02d", i);
		job_error_add(&s, name, i == 3 ? "a\nnewline" : "failed");
	}
	ck_assert_uint_eq(s.errors, 20);
	ck_assert_str_eq(s.last_error, "obj19: failed");
	buf_t out = BUF_INIT;
	job_stats_json(&s, "etl-bck", &out);
	json_t *d = json_loadb(out.ptr, out.len, 0, NULL);
	json_t *l = json_object_get(d, "error_list");
	ck_assert_uint_eq(json_array_size(l), JOB_ERRORS_LISTED);
	ck_assert_str_eq(json_string_value(json_array_get(l, 0)), "obj00: failed");
	ck_assert_str_eq(json_string_value(json_array_get(l, 3)), "obj03: a newline");
	json_decref(d);
	buf_free(&out);
	job_stats_t big = {0}; /* long lines: cut to fit, never past the buffer */
	char why[400];
	memset(why, 'w', sizeof(why) - 1);
	why[sizeof(why) - 1] = '\0';
	for (int i = 0; i < 20; i++)
		job_error_add(&big, "o", why);
	ck_assert(strlen(big.error_list) < sizeof(big.error_list));
	ck_assert_uint_eq(big.errors, 20);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("jobreg");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_ids);
	tcase_add_test(tc, test_runs_and_resume);
	tcase_add_test(tc, test_history_bound);
	tcase_add_test(tc, test_progress);
	tcase_add_test(tc, test_error_list);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
