/*
 * runner.h - the thread every job of a target runs on (runner.c): what the
 * rebalance and the resilver share. Private to src/jobs/.
 *
 * A runner owns one thread, the job's stats and the lock that guards them.
 * The thread sleeps until a run is pending (a kick, a retry that came due,
 * or a marker file left by a run that a crash cut), then:
 *  1. resets the stats (runs + 1, state running), sets the marker file,
 *     calls ops->run(arg, gen) without the lock; the job checks
 *     job_runner_stopped(gen) between objects;
 *  2. when the run returns: a newer kick (gen changed) leaves it aborted
 *     and starts the next run; an abort clears the marker; errors schedule
 *     a retry (retry_first_ms, doubled per failed run up to retry_max_ms);
 *     a clean run clears the marker. ops->report logs the end of a failed
 *     or clean run.
 * Between runs ops->idle (optional) may do small work under the lock.
 * Each run is a run of the job registry's kind NAME (jobreg.h): begun
 * before ops->run, ended with its state (a superseded run: aborted); a
 * run cut by a stop or a crash stays running in its record, which the
 * next start records aborted, as the marker resumes the work under a new
 * id. A stop through the registry aborts the run.
 * Fields mu, cv and st are the job's to use (under mu); the rest is the
 * runner's.
 */
#ifndef AISD_JOBS_RUNNER_H
#define AISD_JOBS_RUNNER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "aisd/jobreg.h"
#include "aisd/jobs.h"
#include "aisd/store.h"

struct job_runner_ops {
	const char *name; /* "rebalance": log lines, the thread's log action, NAME.marker */
	uint64_t retry_first_ms, retry_max_ms;
	/* One run under generation gen; called without the lock, after the
	 * marker file is set. */
	void (*run)(void *arg, uint64_t gen);
	/* Between runs, with mu held (it may release and retake it): returns
	 * true when it did some work (the thread looks again at once). NULL:
	 * none. */
	bool (*idle)(void *arg);
	/* Logs the end of a run whose st->state is JOB_FAILED (again in
	 * retry_ms) or JOB_DONE; mu held. */
	void (*report)(void *arg, const job_stats_t *st, uint64_t retry_ms);
	/* Runs on the thread as it ends (after mu is released). NULL: none. */
	void (*thread_exit)(void);
	/* The id of the run about to start (jobreg.h), without mu; NULL:
	 * NAME-XXXXXXXX, fresh. */
	void (*run_id)(void *arg, char *out, size_t outsz);
};

typedef struct job_runner {
	pthread_mutex_t mu; /* guards everything below and the job's own shared state */
	pthread_cond_t cv;
	job_stats_t st;
	/* the runner's */
	const struct job_runner_ops *ops;
	void *arg;
	pthread_t th;
	bool quit, pending, abort;
	uint64_t gen;      /* bumped by every kick */
	uint64_t retry_ms; /* 0: no retry scheduled */
	int64_t retry_at;  /* monotonic ns */
	char marker[1100];
	char run_id[JREG_ID_MAX + 1]; /* the current (or last) run's; under mu */
	jreg_kind_t kind;             /* registered at start */
} job_runner_t;

/* Starts the thread; the marker file is DIR/NAME.marker, and when it exists
 * a run is pending at once (an interrupted run resumes). */
void job_runner_start(job_runner_t *jr, const struct job_runner_ops *ops, void *arg, const char *dir);
/* Stops the thread (a run in progress is abandoned, its marker stays);
 * again: nothing. */
void job_runner_stop(job_runner_t *jr);
/* Stops and releases the lock and condition (not jr itself). */
void job_runner_destroy(job_runner_t *jr);
/* Starts a run, or restarts the one in progress (a newer generation);
 * clears a scheduled retry. */
void job_runner_kick(job_runner_t *jr);
/* Aborts the run in progress (no resume), or forgets the marker of one due. */
void job_runner_abort(job_runner_t *jr);
/* Sets (fsynced) or removes the marker file. */
void job_runner_marker(job_runner_t *jr, bool on);
/* Should the run of generation gen stop (quit, abort, or a newer kick)?
 * The _locked form: the caller holds mu. */
bool job_runner_stopped(job_runner_t *jr, uint64_t gen);
static inline bool job_runner_stopped_locked(const job_runner_t *jr, uint64_t gen)
{
	return jr->quit || jr->abort || jr->gen != gen;
}
/* A copy of the stats; the state is JOB_RUNNING from a kick until that run ends. */
void job_runner_stats(job_runner_t *jr, job_stats_t *out);

/* Objects and bytes on the store's mountpaths (0 when stats fail). */
void job_local_totals(store_t *s, uint64_t *objs, uint64_t *bytes);

#endif
