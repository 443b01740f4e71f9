/*
 * runs.c - the runs of job kinds that give each run a thread of its own
 * (jobreg.h, "kinds whose runs are threads of their own"): starting,
 * finding, aborting and ending them, the same for every such kind.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "aisd/jobreg.h"
#include "aisd/util.h"
#include "aisd/banned.h"

void jtrun_init(jtrun_t *r, const char *kind, const char *id)
{
	snprintf(r->id, sizeof(r->id), "%s", id);
	r->kind = kind;
	pthread_mutex_init(&r->mu, NULL);
	r->st.state = JOB_RUNNING;
	r->st.start_ns = time_now_ns();
	r->st.runs = 1;
	atomic_store(&r->abort, false);
}

static void unlink_run(jtruns_t *s, jtrun_t *r)
{
	pthread_mutex_lock(&s->mu);
	for (jtrun_t **p = &s->head; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			break;
		}
	pthread_mutex_unlock(&s->mu);
}

int jtruns_start(jtruns_t *s, jtrun_t *r, const char *bucket, json_t *spec, void *(*fn)(void *), void *arg,
		buf_t *err)
{
	json_t *keep = spec ? json_deep_copy(spec) : NULL;
	if (keep)
		json_object_del(keep, "id");
	jreg_begin(r->kind, r->id, bucket, keep);
	json_decref(keep);
	pthread_mutex_lock(&s->mu);
	r->next = s->head;
	s->head = r;
	pthread_mutex_unlock(&s->mu);
	pthread_t th;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&th, &a, fn, arg);
	pthread_attr_destroy(&a);
	if (rc == 0)
		return 0;
	unlink_run(s, r); /* (no run ends before its own start) */
	r->st.state = JOB_FAILED;
	snprintf(r->st.last_error, sizeof(r->st.last_error), "cannot start a thread");
	jreg_end(r->id, &r->st);
	buf_addstr(err, "cannot start a thread");
	return 503;
}

void jtruns_end(jtruns_t *s, jtrun_t *r, const job_stats_t *fin)
{
	/* the record first: a stop that finds the run gone finds it ended */
	if (!atomic_load(&s->stopping))
		jreg_end(r->id, fin);
	unlink_run(s, r);
}

void jtruns_abort(jtruns_t *s, const char *kind, const char *id)
{
	pthread_mutex_lock(&s->mu);
	for (jtrun_t *r = s->head; r; r = r->next)
		if ((!kind || !strcmp(kind, r->kind)) && (!id || !strcmp(id, r->id)))
			atomic_store(&r->abort, true);
	pthread_mutex_unlock(&s->mu);
}

bool jtruns_progress(jtruns_t *s, const char *id, job_stats_t *out)
{
	bool found = false;
	pthread_mutex_lock(&s->mu);
	for (jtrun_t *r = s->head; r && !found; r = r->next)
		if (!strcmp(id, r->id)) {
			pthread_mutex_lock(&r->mu);
			*out = r->st;
			pthread_mutex_unlock(&r->mu);
			found = true;
		}
	pthread_mutex_unlock(&s->mu);
	return found;
}

void jtruns_open(jtruns_t *s) { atomic_store(&s->stopping, false); }

void jtruns_stop(jtruns_t *s)
{
	atomic_store(&s->stopping, true);
	jtruns_abort(s, NULL, NULL);
	for (int k = 0; k < 300; k++) { /* a run ends between objects */
		pthread_mutex_lock(&s->mu);
		bool any = s->head != NULL;
		pthread_mutex_unlock(&s->mu);
		if (!any)
			break;
		usleep(10000);
	}
}

void jtruns_kind_stop(void *set, const char *id) { jtruns_abort(set, NULL, id); }

bool jtruns_kind_progress(void *set, const char *id, job_stats_t *out) { return jtruns_progress(set, id, out); }
