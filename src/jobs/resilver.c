/*
 * resilver.c - a target's resilver job: after a mountpath is attached or
 * detached, one thread moves every object that is not on its HRW
 * mountpath to it (store_misplaced + store_relocate), then closes the
 * mountpaths being detached once they are empty.
 *
 * Guarantees:
 *  1. Reads never wait for it: the store finds an object on any open
 *     mountpath until it is moved (src/store/mountpath.c, rule 2).
 *  2. A detach completes only when the mountpath holds no object and no
 *     write is in flight on it; until then the mountpath is read and the
 *     job walks again (a write that raced the walk).
 *  3. A run ends clean only when a walk starts and ends on the same
 *     store_layout_gen and the detaches are finished; an error retries
 *     after 5 s. The marker file DIR/resilver.marker exists while a run is
 *     due, so one cut by a crash runs again at the next start.
 *  4. Every finished attach or detach calls the target's hook, which saves
 *     the mountpath list (DIR/mountpaths), so a restart keeps it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner.h"

#include "aisd/jobs.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/store.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define RES_PAGE     512
#define RES_RETRY_MS 5000 /* every retry: no back-off */

struct res {
	job_runner_t jr; /* the thread; the stats under jr.mu */
	store_t *store;
	void (*hook)(void *arg);
	void *hook_arg;
};

struct item {
	char *bck, *obj;
	size_t blen, olen;
};

struct page {
	struct item it[RES_PAGE];
	size_t n;
};

static void collect(void *arg, const char *bck, size_t blen, const char *obj, size_t olen, uint64_t size)
{
	struct page *p = arg;
	(void)size;
	p->it[p->n].bck = xstrndup(bck, blen);
	p->it[p->n].obj = xstrndup(obj, olen);
	p->it[p->n].blen = blen;
	p->it[p->n].olen = olen;
	p->n++;
}

/* One walk over the misplaced objects. Returns the errors it met. */
static uint64_t walk(res_t *r, uint64_t gen)
{
	store_cursor_t cur = STORE_CURSOR_INIT;
	struct page *pg = xcalloc(1, sizeof(*pg));
	uint64_t errors = 0;
	for (;;) {
		pg->n = 0;
		if (job_runner_stopped(&r->jr, gen) ||
		    store_misplaced(r->store, &cur, RES_PAGE, collect, pg) == 0)
			break;
		pthread_mutex_lock(&r->jr.mu);
		r->jr.st.walked = cur.scanned;
		r->jr.st.walked_bytes = cur.scanned_bytes;
		pthread_mutex_unlock(&r->jr.mu);
		for (size_t i = 0; i < pg->n; i++) {
			struct item *it = &pg->it[i];
			uint64_t bytes = 0;
			int rc = job_runner_stopped(&r->jr, gen) ? AIS_DONE
			                                         : store_relocate(r->store, it->bck, it->blen,
			                                                          it->obj, it->olen, &bytes);
			pthread_mutex_lock(&r->jr.mu);
			if (rc == AIS_OK) {
				r->jr.st.moved++;
				r->jr.st.moved_bytes += bytes;
			} else if (rc == AIS_ERR) {
				r->jr.st.errors++;
				errors++;
				snprintf(r->jr.st.last_error, sizeof(r->jr.st.last_error), "%.64s/%.100s: %s",
				         it->bck, it->obj, strerror(errno));
			}
			pthread_mutex_unlock(&r->jr.mu);
			free(it->bck);
			free(it->obj);
		}
	}
	pthread_mutex_lock(&r->jr.mu);
	r->jr.st.walked = cur.scanned;
	r->jr.st.walked_bytes = cur.scanned_bytes;
	pthread_mutex_unlock(&r->jr.mu);
	buf_free(&cur.after);
	free(pg);
	return errors;
}

/* One run: walks until the layout stays put and the detaches are done. */
static void run(void *arg, uint64_t gen)
{
	res_t *r = arg;
	uint64_t errors = 0;
	for (int pass = 0; !job_runner_stopped(&r->jr, gen); pass++) {
		uint64_t lg = store_layout_gen(r->store);
		uint64_t objs, bytes;
		job_local_totals(r->store, &objs, &bytes);
		pthread_mutex_lock(&r->jr.mu);
		r->jr.st.total = objs;
		r->jr.st.total_bytes = bytes;
		pthread_mutex_unlock(&r->jr.mu);
		errors += walk(r, gen);
		if (errors || job_runner_stopped(&r->jr, gen))
			return;
		bool closed = false;
		int fin = store_mp_detach_finish(r->store, &closed);
		if (closed && r->hook)
			r->hook(r->hook_arg);
		if (fin == AIS_OK && store_layout_gen(r->store) == lg)
			return;
		if (pass > 0)
			usleep(100 * 1000); /* a write in flight on a detaching mountpath */
	}
}

static void report(void *arg, const job_stats_t *st, uint64_t retry_ms)
{
	(void)arg;
	if (st->state == JOB_FAILED)
		log_warnx("resilver: %llu errors, last: %s; again in %llu ms", (unsigned long long)st->errors,
		          st->last_error, (unsigned long long)retry_ms);
	else
		log_info("resilver done: %llu objects looked at, %llu moved (%llu bytes)",
		         (unsigned long long)st->walked, (unsigned long long)st->moved,
		         (unsigned long long)st->moved_bytes);
}

static const struct job_runner_ops res_ops = {
	.name = "resilver",
	.retry_first_ms = RES_RETRY_MS,
	.retry_max_ms = RES_RETRY_MS,
	.run = run,
	.report = report,
};

res_t *res_new(store_t *s, const char *dir, void (*hook)(void *), void *hook_arg)
{
	res_t *r = xcalloc(1, sizeof(*r));
	r->store = s;
	r->hook = hook;
	r->hook_arg = hook_arg;
	job_runner_start(&r->jr, &res_ops, r, dir);
	return r;
}

void res_free(res_t *r)
{
	if (!r)
		return;
	job_runner_destroy(&r->jr);
	free(r);
}

void res_kick(res_t *r, const char *why)
{
	job_runner_kick(&r->jr);
	job_runner_marker(&r->jr, true);
	log_info("resilver: %s", why);
}

void res_abort(res_t *r)
{
	job_runner_abort(&r->jr);
}

void res_stats(res_t *r, job_stats_t *out)
{
	job_runner_stats(&r->jr, out);
	uint64_t b;
	job_local_totals(r->store, &out->objects, &b);
}
