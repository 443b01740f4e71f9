/*
 * jobreg.h - the registry of a node's background jobs (src/jobs/registry.c):
 * one table of job kinds, and one record per run of a kind.
 *
 * A kind (rebalance, resilver, ec-encode, prefetch, evict, ...) registers
 * once with its hooks; the registry knows nothing else of it, so a new kind
 * plugs in without touching the others. A run is named by an id, unique on
 * the node (two prefetches of two buckets are two runs); a run started
 * through a gateway has the same id on every target, so the gateway shows
 * it as one. The rules:
 *  1. jreg_begin records a run as running and writes DIR/jobs/ID.json
 *     (written to a temporary file, fsynced, renamed); jreg_end records its
 *     final stats and state and writes the file again.
 *  2. At start, jreg_init reads those files: a finished run joins the
 *     history; a running one (the node stopped or died under it) is
 *     resumed by jreg_resume with its id and spec when its kind resumes,
 *     else it is recorded aborted ("interrupted by a restart").
 *  3. The history keeps the JREG_HISTORY newest finished runs of each
 *     kind (the rebalances of many map changes do not push a prefetch
 *     out); an older one's file is removed.
 *  4. A run that begins with the id of a finished run replaces it.
 *  5. The live progress of a run comes from its kind's progress hook; the
 *     registry's own copy is what jreg_end (or the file) gave.
 * Every function is thread-safe. Without jreg_init (tools, unit tests)
 * the registry works in memory only.
 */
#ifndef AISD_JOBREG_H
#define AISD_JOBREG_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "aisd/buf.h"
#include "aisd/jobs.h"

#define JREG_ID_MAX 63
#define JREG_HISTORY 100
#define JREG_KINDS_MAX 16

typedef struct jreg_kind {
	const char *name; /* "prefetch": ?kind=, the metrics' job label, ids it makes */
	void *arg;        /* the first argument of every hook */
	/* Starts run id with spec (the start's "value" object), or resumes
	 * it after a restart (resume: spec as persisted). 0, or an HTTP
	 * status with err set. NULL: runs start only by themselves (a map
	 * change, a mountpath change); a start on request is a 400. */
	int (*start)(void *arg, const char *id, json_t *spec, bool resume, buf_t *err);
	/* Stops run id between objects; id NULL: every run of the kind. */
	void (*stop)(void *arg, const char *id);
	/* The live stats of run id; false when the kind no longer runs it. */
	bool (*progress)(void *arg, const char *id, job_stats_t *out);
	bool resumes; /* a run cut by a restart resumes through start (else it is recorded aborted) */
} jreg_kind_t;

/* Reads DIR/jobs/ (made when missing): the history and the runs to
 * resume. Once at start, before jreg_resume. */
void jreg_init(const char *dir);
/* Registers a kind (k must outlive its registration); again with the same
 * name replaces it. */
void jreg_register(const jreg_kind_t *k);
void jreg_unregister(const char *name);
/* Resumes the runs that jreg_init found running (rule 2); once, after the
 * kinds registered. */
void jreg_resume(void);
/* Forgets everything (the files stay); for a node that stops. */
void jreg_shutdown(void);

/* A fresh id for a run of kind: 8 letters and digits. out: JREG_ID_MAX + 1. */
void jreg_new_id(char *out);
/* Is s an id (1..JREG_ID_MAX of [A-Za-z0-9._-], not starting with '.')? */
bool jreg_id_valid(const char *s, size_t len);
/* Records a run of kind as running (rule 1); bucket "" when none; spec
 * (may be NULL) is kept, for its resume. */
void jreg_begin(const char *kind, const char *id, const char *bucket, json_t *spec);
/* Records its end: st as final (st->state done, aborted or failed). */
void jreg_end(const char *id, const job_stats_t *st);

/* Starts a run of kind (its start hook) under id (NULL: a fresh one, put
 * in id_out when given). 0, or an HTTP status with err. */
int jreg_start(const char *kind, const char *id, json_t *spec, char *id_out, buf_t *err);
/* Stops run id, or every run of kind (id NULL). How many runs were asked
 * to stop. */
size_t jreg_stop(const char *kind, const char *id);
/* Appends a JSON array of the runs: live ones, and the finished ones too
 * when all or id is given; only those of kind and/or id when given. Each
 * {"id","kind","bucket", job_stats_json's keys, "progress":{"objects",
 * "bytes","total","total_bytes","rate_objects","rate_bytes","eta_s"}},
 * newest first. How many. */
size_t jreg_list_json(const char *kind, const char *id, bool all, buf_t *out);
/* The stats of the newest run of kind (live or finished) and its id; false
 * when there was none. */
bool jreg_latest(const char *kind, job_stats_t *st, char *id, size_t idsz);
/* Is kind registered? */
bool jreg_kind_known(const char *kind, size_t len);
/* Appends aisd_job_runs_{started,done,failed,aborted}_total and
 * aisd_job_run_{objects,bytes}_total per kind (label job="KIND"). */
void jreg_metrics(buf_t *out);

/* The progress of a run (pure): objects and bytes done, rates per second
 * over now_ns - start, and the seconds left at that rate (-1: unknown). */
typedef struct jreg_progress {
	uint64_t objects, bytes, total, total_bytes;
	double rate_objects, rate_bytes;
	int64_t eta_s;
} jreg_progress_t;
void jreg_progress_of(const job_stats_t *st, int64_t now_ns, jreg_progress_t *p);

/* --- kinds whose runs are threads of their own (src/jobs/runs.c) ------
 * prefetch, evict, copy-bck, ishard: one thread per run. The kind embeds a
 * jtrun_t as the member `r` of its own run record and keeps its runs in one
 * jtruns_t; these do the rest, the same for every such kind:
 *  1. jtruns_start records the run (jreg_begin; its spec without "id"),
 *     links it and starts its thread; a thread that cannot start leaves
 *     the run recorded failed and unlinked (503), and the caller frees it.
 *  2. The thread ends with jtruns_end: the final stats recorded (not while
 *     jtruns_stop stops the node: the run stays running in its record, to
 *     resume), the run unlinked; the caller frees it after.
 *  3. jtruns_abort and jtruns_progress find runs by id under the set's lock;
 *     a run reads its own abort flag between objects. */
typedef struct jtrun {
	char id[JREG_ID_MAX + 1];
	const char *kind;
	pthread_mutex_t mu; /* st */
	job_stats_t st;
	atomic_bool abort;
	struct jtrun *next; /* under the set's mu */
} jtrun_t;

typedef struct jtruns {
	pthread_mutex_t mu;
	jtrun_t *head;
	atomic_bool stopping;
} jtruns_t;
#define JTRUNS_INIT {.mu = PTHREAD_MUTEX_INITIALIZER}

/* A new run of kind (a static string) under id: running since now. Its
 * mutex is the caller's to destroy when it frees the run. */
void jtrun_init(jtrun_t *r, const char *kind, const char *id);
/* Rule 1: fn(arg) is the run's thread. 0, or 503 with err. */
int jtruns_start(jtruns_t *s, jtrun_t *r, const char *bucket, json_t *spec, void *(*fn)(void *), void *arg,
		buf_t *err);
/* Rule 2: fin, the run's final stats (state set). */
void jtruns_end(jtruns_t *s, jtrun_t *r, const job_stats_t *fin);
/* Sets the abort flag of run id (NULL: every run) of kind (NULL: any). */
void jtruns_abort(jtruns_t *s, const char *kind, const char *id);
/* The live stats of run id; false when the set has no such run. */
bool jtruns_progress(jtruns_t *s, const char *id, job_stats_t *out);
/* The stop and progress hooks of a kind that has a set of its own
 * (jreg_kind_t.arg: the jtruns_t): jtruns_abort and jtruns_progress. */
void jtruns_kind_stop(void *set, const char *id);
bool jtruns_kind_progress(void *set, const char *id, job_stats_t *out);
/* The node starts taking runs (again, after jtruns_stop). */
void jtruns_open(jtruns_t *s);
/* Aborts every run and waits up to 3 s for their threads to end (rule 2). */
void jtruns_stop(jtruns_t *s);

#endif
