/*
 * runner.c - the thread of a target's background job (rebalance.c,
 * resilver.c): pending runs, restart on a newer kick, abort, retries with
 * back-off, the marker file that resumes a run cut by a crash, and the
 * job's stats under one lock. The rules are in runner.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

void job_runner_marker(job_runner_t *jr, bool on)
{
	if (!on) {
		if (unlink(jr->marker) && errno != ENOENT)
			log_warn("unlink %s", jr->marker);
		return;
	}
	int fd = open(jr->marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || fsync(fd))
		log_warn("%s (an interrupted %s will not resume by itself)", jr->marker, jr->ops->name);
	if (fd >= 0)
		close(fd);
}

bool job_runner_stopped(job_runner_t *jr, uint64_t gen)
{
	pthread_mutex_lock(&jr->mu);
	bool s = job_runner_stopped_locked(jr, gen);
	pthread_mutex_unlock(&jr->mu);
	return s;
}

static void *runner_main(void *arg)
{
	job_runner_t *jr = arg;
	const struct job_runner_ops *ops = jr->ops;
	log_set_action(ops->name);
	pthread_mutex_lock(&jr->mu);
	while (!jr->quit) {
		if (!jr->pending && ops->idle && ops->idle(jr->arg))
			continue;
		if (!jr->pending) {
			if (jr->retry_ms && time_mono_ns() >= jr->retry_at) {
				jr->pending = true;
				continue;
			}
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&jr->cv, &jr->mu, &ts);
			continue;
		}
		jr->pending = false;
		jr->abort = false;
		uint64_t gen = jr->gen;
		uint64_t runs = jr->st.runs + 1;
		memset(&jr->st, 0, sizeof(jr->st));
		jr->st.runs = runs;
		jr->st.state = JOB_RUNNING;
		jr->st.start_ns = time_now_ns();
		pthread_mutex_unlock(&jr->mu);

		char id[JREG_ID_MAX + 1];
		if (ops->run_id) {
			ops->run_id(jr->arg, id, sizeof(id));
		} else {
			char fresh[JREG_ID_MAX + 1];
			jreg_new_id(fresh);
			snprintf(id, sizeof(id), "%.40s-%.16s", ops->name, fresh);
		}
		pthread_mutex_lock(&jr->mu);
		snprintf(jr->run_id, sizeof(jr->run_id), "%s", id);
		pthread_mutex_unlock(&jr->mu);
		jreg_begin(ops->name, id, "", NULL);
		job_runner_marker(jr, true);
		ops->run(jr->arg, gen);

		pthread_mutex_lock(&jr->mu);
		if (jr->quit)
			break;
		jr->st.end_ns = time_now_ns();
		if (jr->gen != gen) {
			jr->st.state = JOB_ABORTED; /* superseded: pending is set */
			snprintf(jr->st.last_error, sizeof(jr->st.last_error), "superseded by a newer run");
			jreg_end(id, &jr->st);
			continue;
		}
		if (jr->abort) {
			jr->st.state = JOB_ABORTED;
			jr->retry_ms = 0;
			job_runner_marker(jr, false);
			log_info("%s aborted", ops->name);
			jreg_end(id, &jr->st);
		} else if (jr->st.errors) {
			jr->st.state = JOB_FAILED;
			jr->retry_ms =
			        jr->retry_ms ? MIN(jr->retry_ms * 2, ops->retry_max_ms) : ops->retry_first_ms;
			jr->retry_at = time_mono_ns() + (int64_t)jr->retry_ms * 1000000;
			ops->report(jr->arg, &jr->st, jr->retry_ms);
			jreg_end(id, &jr->st);
		} else {
			jr->st.state = JOB_DONE;
			jr->retry_ms = 0;
			job_runner_marker(jr, false);
			ops->report(jr->arg, &jr->st, 0);
			jreg_end(id, &jr->st);
		}
	}
	pthread_mutex_unlock(&jr->mu);
	if (ops->thread_exit)
		ops->thread_exit();
	return NULL;
}

/* The registry's hooks (jobreg.h): stop aborts; progress is the stats of
 * the current run. */
static void kind_stop(void *arg, const char *id)
{
	job_runner_t *jr = arg;
	pthread_mutex_lock(&jr->mu);
	bool mine = !id || !strcmp(id, jr->run_id);
	pthread_mutex_unlock(&jr->mu);
	if (mine)
		job_runner_abort(jr);
}

static bool kind_progress(void *arg, const char *id, job_stats_t *out)
{
	job_runner_t *jr = arg;
	pthread_mutex_lock(&jr->mu);
	bool mine = !strcmp(id, jr->run_id);
	if (mine)
		*out = jr->st;
	pthread_mutex_unlock(&jr->mu);
	return mine;
}

void job_runner_start(job_runner_t *jr, const struct job_runner_ops *ops, void *arg, const char *dir)
{
	jr->kind = (jreg_kind_t){.name = ops->name, .arg = jr, .stop = kind_stop, .progress = kind_progress};
	jreg_register(&jr->kind);
	jr->ops = ops;
	jr->arg = arg;
	pthread_mutex_init(&jr->mu, NULL);
	pthread_cond_init(&jr->cv, NULL);
	snprintf(jr->marker, sizeof(jr->marker), "%s/%s.marker", dir, ops->name);
	if (access(jr->marker, F_OK) == 0) {
		log_info("%s: resuming the run interrupted before this start (%s)", ops->name, jr->marker);
		jr->pending = true;
	}
	if (pthread_create(&jr->th, NULL, runner_main, jr))
		fatal("pthread_create");
}

void job_runner_stop(job_runner_t *jr)
{
	pthread_mutex_lock(&jr->mu);
	bool was = jr->quit;
	jr->quit = true;
	pthread_cond_broadcast(&jr->cv);
	pthread_mutex_unlock(&jr->mu);
	if (!was)
		pthread_join(jr->th, NULL);
}

void job_runner_destroy(job_runner_t *jr)
{
	job_runner_stop(jr);
	jreg_unregister(jr->ops->name);
	pthread_mutex_destroy(&jr->mu);
	pthread_cond_destroy(&jr->cv);
}

void job_runner_kick(job_runner_t *jr)
{
	pthread_mutex_lock(&jr->mu);
	jr->gen++;
	jr->pending = true;
	jr->retry_ms = 0;
	pthread_cond_broadcast(&jr->cv);
	pthread_mutex_unlock(&jr->mu);
}

void job_runner_abort(job_runner_t *jr)
{
	pthread_mutex_lock(&jr->mu);
	jr->abort = true;
	jr->pending = false;
	jr->retry_ms = 0;
	if (jr->st.state != JOB_RUNNING) /* nothing runs: just forget the marker */
		job_runner_marker(jr, false);
	pthread_mutex_unlock(&jr->mu);
}

void job_runner_stats(job_runner_t *jr, job_stats_t *out)
{
	pthread_mutex_lock(&jr->mu);
	*out = jr->st;
	if (jr->pending) /* kicked, not started yet: a wait must not take the last run's end for this one's */
		out->state = JOB_RUNNING;
	pthread_mutex_unlock(&jr->mu);
}

void job_local_totals(store_t *s, uint64_t *objs, uint64_t *bytes)
{
	store_mp_stats_t mp[CONF_MAX_MOUNTPATHS];
	int n = 0;
	*objs = *bytes = 0;
	if (store_stats(s, mp, CONF_MAX_MOUNTPATHS, &n) == AIS_OK)
		for (int i = 0; i < n; i++) {
			*objs += mp[i].objects;
			*bytes += mp[i].bytes;
		}
}
