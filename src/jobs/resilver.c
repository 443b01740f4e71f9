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
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/jobs.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/store.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define RES_PAGE     512
#define RES_RETRY_MS 5000

struct res {
	store_t *store;
	void (*hook)(void *arg);
	void *hook_arg;
	pthread_t th;
	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t cv;
	bool quit, pending, abort;
	uint64_t gen; /* bumped by every kick */
	int64_t retry_at;
	job_stats_t st;
	char marker[1100];
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

static bool res_stopped(res_t *r, uint64_t gen)
{
	pthread_mutex_lock(&r->mu);
	bool s = r->quit || r->abort || r->gen != gen;
	pthread_mutex_unlock(&r->mu);
	return s;
}

static void local_totals(store_t *s, uint64_t *objs, uint64_t *bytes)
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

/* One walk over the misplaced objects. Returns the errors it met. */
static uint64_t walk(res_t *r, uint64_t gen)
{
	store_cursor_t cur = STORE_CURSOR_INIT;
	struct page *pg = xcalloc(1, sizeof(*pg));
	uint64_t errors = 0;
	for (;;) {
		pg->n = 0;
		if (res_stopped(r, gen) || store_misplaced(r->store, &cur, RES_PAGE, collect, pg) == 0)
			break;
		pthread_mutex_lock(&r->mu);
		r->st.walked = cur.scanned;
		r->st.walked_bytes = cur.scanned_bytes;
		pthread_mutex_unlock(&r->mu);
		for (size_t i = 0; i < pg->n; i++) {
			struct item *it = &pg->it[i];
			uint64_t bytes = 0;
			int rc = res_stopped(r, gen) ? AIS_DONE
			                             : store_relocate(r->store, it->bck, it->blen, it->obj, it->olen, &bytes);
			pthread_mutex_lock(&r->mu);
			if (rc == AIS_OK) {
				r->st.moved++;
				r->st.moved_bytes += bytes;
			} else if (rc == AIS_ERR) {
				r->st.errors++;
				errors++;
				snprintf(r->st.last_error, sizeof(r->st.last_error), "%.64s/%.100s: %s", it->bck,
				         it->obj, strerror(errno));
			}
			pthread_mutex_unlock(&r->mu);
			free(it->bck);
			free(it->obj);
		}
	}
	pthread_mutex_lock(&r->mu);
	r->st.walked = cur.scanned;
	r->st.walked_bytes = cur.scanned_bytes;
	pthread_mutex_unlock(&r->mu);
	buf_free(&cur.after);
	free(pg);
	return errors;
}

static void marker_set(res_t *r, bool on)
{
	if (!on) {
		if (unlink(r->marker) && errno != ENOENT)
			log_warn("unlink %s", r->marker);
		return;
	}
	int fd = open(r->marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || fsync(fd))
		log_warn("%s (an interrupted resilver will not resume by itself)", r->marker);
	if (fd >= 0)
		close(fd);
}

/* One run: walks until the layout stays put and the detaches are done. */
static void run(res_t *r, uint64_t gen)
{
	uint64_t errors = 0;
	for (int pass = 0; !res_stopped(r, gen); pass++) {
		uint64_t lg = store_layout_gen(r->store);
		uint64_t objs, bytes;
		local_totals(r->store, &objs, &bytes);
		pthread_mutex_lock(&r->mu);
		r->st.total = objs;
		r->st.total_bytes = bytes;
		pthread_mutex_unlock(&r->mu);
		errors += walk(r, gen);
		if (errors || res_stopped(r, gen))
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

static void *res_main(void *arg)
{
	res_t *r = arg;
	log_set_action("resilver");
	pthread_mutex_lock(&r->mu);
	while (!r->quit) {
		if (!r->pending) {
			if (r->retry_at && time_mono_ns() >= r->retry_at) {
				r->retry_at = 0;
				r->pending = true;
				continue;
			}
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
			continue;
		}
		r->pending = false;
		r->abort = false;
		uint64_t gen = r->gen;
		uint64_t runs = r->st.runs + 1;
		memset(&r->st, 0, sizeof(r->st));
		r->st.runs = runs;
		r->st.state = JOB_RUNNING;
		r->st.start_ns = time_now_ns();
		pthread_mutex_unlock(&r->mu);

		marker_set(r, true);
		run(r, gen);

		pthread_mutex_lock(&r->mu);
		if (r->quit)
			break;
		r->st.end_ns = time_now_ns();
		if (r->gen != gen) {
			r->st.state = JOB_ABORTED; /* superseded: pending is set */
		} else if (r->abort) {
			r->st.state = JOB_ABORTED;
			marker_set(r, false);
			log_info("resilver aborted");
		} else if (r->st.errors) {
			r->st.state = JOB_FAILED;
			r->retry_at = time_mono_ns() + (int64_t)RES_RETRY_MS * 1000000;
			log_warnx("resilver: %llu errors, last: %s; again in %d ms", (unsigned long long)r->st.errors,
			          r->st.last_error, RES_RETRY_MS);
		} else {
			r->st.state = JOB_DONE;
			marker_set(r, false);
			log_info("resilver done: %llu objects looked at, %llu moved (%llu bytes)",
			         (unsigned long long)r->st.walked, (unsigned long long)r->st.moved,
			         (unsigned long long)r->st.moved_bytes);
		}
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

res_t *res_new(store_t *s, const char *dir, void (*hook)(void *), void *hook_arg)
{
	res_t *r = xcalloc(1, sizeof(*r));
	r->store = s;
	r->hook = hook;
	r->hook_arg = hook_arg;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	snprintf(r->marker, sizeof(r->marker), "%s/resilver.marker", dir);
	if (access(r->marker, F_OK) == 0) {
		log_info("resilver: resuming the run interrupted before this start (%s)", r->marker);
		r->pending = true;
	}
	if (pthread_create(&r->th, NULL, res_main, r))
		fatal("pthread_create");
	return r;
}

void res_free(res_t *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->quit = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->th, NULL);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
}

void res_kick(res_t *r, const char *why)
{
	pthread_mutex_lock(&r->mu);
	r->gen++;
	r->pending = true;
	r->retry_at = 0;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	marker_set(r, true);
	log_info("resilver: %s", why);
}

void res_abort(res_t *r)
{
	pthread_mutex_lock(&r->mu);
	r->abort = true;
	r->pending = false;
	r->retry_at = 0;
	if (r->st.state != JOB_RUNNING)
		marker_set(r, false);
	pthread_mutex_unlock(&r->mu);
}

void res_stats(res_t *r, job_stats_t *out)
{
	pthread_mutex_lock(&r->mu);
	*out = r->st;
	pthread_mutex_unlock(&r->mu);
	uint64_t b;
	local_totals(r->store, &out->objects, &b);
}
