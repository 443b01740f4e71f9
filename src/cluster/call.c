/*
 * call.c - fan-out of blocking intra-cluster requests (cluster_call_all,
 * cluster_call_quorum): the list fan-out, the stats fan-out, metasync
 * pushes, health rounds, votes and map queries all ask several nodes at
 * once this way, so a round costs the slowest answer, not the sum.
 *
 * Guarantees:
 *  1. Every call is made exactly once, by one of at most
 *     CLUSTER_CALL_PARALLEL threads (each an httpc_sync with the call's
 *     timeout); no call is made on the caller's thread unless a thread
 *     cannot be created.
 *  2. The calls run on a copy (a fan) that the threads and the caller
 *     share by reference count, so a caller that returns early (quorum)
 *     leaves nothing the threads use: the calls still running finish in
 *     the background and their answers are dropped; the last one out frees
 *     the fan. The threads touch nothing but the fan.
 *  3. The caller gets back, in its own array, exactly the calls that ended
 *     (done[i] true): status and body; the others have status 0.
 *  4. A wait given a cancel flag ends within CANCEL_POLL_MS of the flag
 *     being set (a stopping node does not wait for its peers).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aisd/cluster.h"
#include "aisd/httpc.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define CANCEL_POLL_MS 20 /* how often a cancellable wait looks at its flag */

struct fan {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* signalled as each call ends */
	size_t refs;       /* the caller (until it returns) + each thread */
	size_t n, next;    /* calls; the next one a thread takes */
	size_t ended, ok;  /* calls ended; of them, answered 2xx */
	bool *ended_at;    /* calls[i] has ended */
	buf_t *bodies;     /* copies of the request bodies */
	char **urls;       /* copies of the calls' url_long */
	cluster_call_t calls[];
};

static void fan_unref(struct fan *f)
{
	pthread_mutex_lock(&f->mu);
	bool last = --f->refs == 0;
	pthread_mutex_unlock(&f->mu);
	if (!last)
		return;
	for (size_t i = 0; i < f->n; i++) {
		buf_free(&f->calls[i].resp);
		buf_free(&f->bodies[i]);
		free(f->urls[i]);
	}
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	free(f->ended_at);
	free(f->bodies);
	free(f->urls);
	free(f);
}

static void call_one(cluster_call_t *c)
{
	const char *hdrs[3] = {NULL, NULL, NULL};
	size_t nh = 0;
	const char *url = c->url_long ? c->url_long : c->url;
	if (c->body)
		hdrs[nh++] = "Content-Type: application/json";
	if (c->hdr)
		hdrs[nh++] = c->hdr;
	if (httpc_sync(c->method, url, nh ? hdrs : NULL, c->body ? c->body->ptr : NULL,
		       c->body ? c->body->len : 0, c->timeout_ms, &c->resp, &c->status) != AIS_OK) {
		c->err = errno;
		c->status = 0;
	}
}

/* Takes the next call until none is left (guarantee 1). */
static void *fan_main(void *arg)
{
	struct fan *f = arg;
	pthread_mutex_lock(&f->mu);
	while (f->next < f->n) {
		size_t i = f->next++;
		pthread_mutex_unlock(&f->mu);
		call_one(&f->calls[i]);
		if (f->calls[i].heard[0] && f->calls[i].status)
			cluster_heard(f->calls[i].heard, strlen(f->calls[i].heard));
		pthread_mutex_lock(&f->mu);
		f->ended_at[i] = true;
		f->ended++;
		f->ok += f->calls[i].status >= 200 && f->calls[i].status < 300;
		pthread_cond_broadcast(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	httpc_sync_release();
	fan_unref(f);
	return NULL;
}

static void deadline_after(struct timespec *ts, uint64_t ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

size_t cluster_call_quorum(cluster_call_t *calls, size_t n, size_t need, uint64_t grace_ms,
			   const atomic_bool *cancel, bool *done)
{
	if (!n)
		return 0;
	struct fan *f = xcalloc(1, sizeof(*f) + n * sizeof(f->calls[0]));
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	f->n = n;
	f->refs = 1;
	f->ended_at = xcalloc(n, sizeof(*f->ended_at));
	f->bodies = xcalloc(n, sizeof(*f->bodies));
	f->urls = xcalloc(n, sizeof(*f->urls));
	for (size_t i = 0; i < n; i++) {
		f->calls[i] = calls[i];
		f->calls[i].resp = (buf_t)BUF_INIT;
		f->calls[i].status = 0;
		f->calls[i].err = 0;
		if (calls[i].body) {
			buf_add(&f->bodies[i], calls[i].body->ptr ? calls[i].body->ptr : "", calls[i].body->len);
			f->calls[i].body = &f->bodies[i];
		}
		if (calls[i].url_long)
			f->calls[i].url_long = f->urls[i] = xstrdup(calls[i].url_long);
	}

	size_t nth = MIN(n, CLUSTER_CALL_PARALLEL), started = 0;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	for (size_t i = 0; i < nth; i++) {
		pthread_t th;
		pthread_mutex_lock(&f->mu);
		f->refs++;
		pthread_mutex_unlock(&f->mu);
		if (pthread_create(&th, &at, fan_main, f) == 0) {
			started++;
		} else {
			pthread_mutex_lock(&f->mu);
			f->refs--;
			pthread_mutex_unlock(&f->mu);
		}
	}
	pthread_attr_destroy(&at);
	if (!started) { /* no thread at all: every call here, in turn */
		f->refs++;
		fan_main(f);
	}

	pthread_mutex_lock(&f->mu);
	while (f->ended < n && f->ok < need && !(cancel && atomic_load(cancel))) {
		if (!cancel) {
			pthread_cond_wait(&f->cv, &f->mu);
			continue;
		}
		struct timespec ts; /* look at cancel every CANCEL_POLL_MS */
		deadline_after(&ts, CANCEL_POLL_MS);
		pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	}
	if (f->ended < n && grace_ms && !(cancel && atomic_load(cancel))) {
		struct timespec ts;
		deadline_after(&ts, grace_ms);
		while (f->ended < n && pthread_cond_timedwait(&f->cv, &f->mu, &ts) != ETIMEDOUT)
			;
	}
	size_t ok = 0;
	for (size_t i = 0; i < n; i++) { /* guarantee 3 */
		buf_free(&calls[i].resp);
		calls[i].status = 0;
		calls[i].err = 0;
		if (done)
			done[i] = f->ended_at[i];
		if (!f->ended_at[i]) {
			buf_addstr(&calls[i].resp, "no answer yet (it goes on in the background)");
			continue;
		}
		calls[i].status = f->calls[i].status;
		calls[i].err = f->calls[i].err;
		calls[i].resp = f->calls[i].resp;
		f->calls[i].resp = (buf_t)BUF_INIT;
		ok += calls[i].status >= 200 && calls[i].status < 300;
	}
	pthread_mutex_unlock(&f->mu);
	fan_unref(f);
	return ok;
}

size_t cluster_call_all(cluster_call_t *calls, size_t n)
{
	return cluster_call_quorum(calls, n, SIZE_MAX, 0, NULL, NULL);
}
