/*
 * rebalance.c - a target's rebalance job: one thread that walks the local
 * objects and moves or copies each to the targets that should hold it
 * under the current cluster map (the rules are in jobs.h).
 *
 * Guarantees:
 *  1. A local copy is deleted only after every holder answered that it has
 *     the object (HEAD 200 with the same or a newer version) or accepted
 *     our copy (PUT 200: durable there, its checksum verified there).
 *  2. Memory is bounded: a page of WALK_PAGE names at a time, processed by
 *     rebalance.workers threads, each streaming one object (curl's buffer).
 *  3. A newer map (reb_kick) or an abort stops the run between objects; a
 *     kicked run starts over on the newest map. The marker file exists from
 *     the start of a run until a run ends clean or is aborted, so a run cut
 *     by a crash resumes at the next start.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/httpc.h"
#include "aisd/jobs.h"
#include "aisd/log.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "aisd/target.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define WALK_PAGE      512
#define RETRY_FIRST_MS 5000
#define RETRY_MAX_MS   60000
#define REB_QUEUE_MAX  100000

/* An object queued by reb_enqueue. */
struct qitem {
	struct qitem *next;
	char *bck, *obj;
	size_t olen;
};

struct reb {
	target_t *t;
	pthread_t th;
	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t cv;
	bool quit, pending, abort;
	uint64_t gen;      /* bumped by every kick */
	uint64_t retry_ms; /* 0: no retry scheduled */
	int64_t retry_at;  /* monotonic ns */
	job_stats_t st;
	char marker[1100];
	struct qitem *q; /* reb_enqueue's objects, newest first */
	size_t nq;
};

struct bucket {
	char name[NAME_BUCKET_MAX + 1];
	size_t copies;
};

struct item {
	char *name;
	size_t len;
};

struct page {
	reb_t *r;
	uint64_t gen;
	const struct bucket *b;
	struct item *items;
	size_t n;
	size_t next; /* under r->mu */
};

static bool stopped(reb_t *r, uint64_t gen)
{
	pthread_mutex_lock(&r->mu);
	bool s = r->quit || r->abort || r->gen != gen;
	pthread_mutex_unlock(&r->mu);
	return s;
}

static void note_error(reb_t *r, const char *fmt, const char *a, size_t alen, const char *b, const char *msg)
{
	pthread_mutex_lock(&r->mu);
	r->st.errors++;
	snprintf(r->st.last_error, sizeof(r->st.last_error), fmt, (int)MIN(alen, 100), a, b, msg);
	pthread_mutex_unlock(&r->mu);
}

/* Does the holder at base have bck/obj as recent as m? 1 yes, 0 no, -1 error. */
static int holder_has(const char *base, const char *bck, const char *obj, size_t olen, const store_meta_t *m,
                      buf_t *msg)
{
	char hv[64];
	const char *hp[] = {hv, NULL};
	buf_t url = BUF_INIT, hdrs = BUF_INIT;
	int status = 0, rc = -1;
	snprintf(hv, sizeof(hv), "%s: rebalance", TGT_INTRA);
	tgt_url_obj(&url, base, bck, strlen(bck), obj, olen);
	if (httpc_sync_head(url.ptr, hp, 10000, &hdrs, &status, msg) == AIS_OK) {
		if (status == 404) {
			rc = 0;
		} else if (status == 200) {
			sv_t cv = httpc_hdr_find(&hdrs, "Ais-Checksum-Value");
			sv_t mt = httpc_hdr_find(&hdrs, "Ais-Mtime-Ns");
			uint64_t theirs = 0;
			if (mt.ptr)
				num_parse_u64(mt.ptr, mt.len, 0, UINT64_MAX, &theirs);
			bool same = cv.ptr && sv_eqstr(cv, m->cksum);
			rc = same || (int64_t)theirs >= m->mtime_ns ? 1 : 0;
		} else {
			buf_addf(msg, "HEAD: HTTP %d", status);
		}
	}
	buf_free(&url);
	buf_free(&hdrs);
	return rc;
}

static void do_object(reb_t *r, const struct bucket *b, const char *obj, size_t olen)
{
	target_t *t = r->t;
	cluster_t *cl = t->base.cl;
	const cmap_t *m;
	place_t p;
	char urls[BMD_COPIES_MAX][CMAP_URL_MAX + 1];
	size_t n;
	int self;
	store_meta_t meta;
	buf_t uname = BUF_INIT, msg = BUF_INIT;
	bool all_have = true;
	size_t blen = strlen(b->name);

	buf_addstr(&uname, b->name);
	buf_addch(&uname, '/');
	buf_add(&uname, obj, olen);
	cluster_read_lock(cl, &m, NULL);
	place_of(m, uname.ptr, uname.len, MIN(b->copies, BMD_COPIES_MAX), cluster_self(cl)->id, &p);
	n = p.n;
	self = p.self;
	for (size_t i = 0; i < n; i++)
		snprintf(urls[i], sizeof(urls[i]), "%s", p.node[i]->intra_url);
	cluster_read_unlock(cl);
	if (!n || store_lookup(t->store, b->name, blen, obj, olen, &meta) != AIS_OK)
		goto out; /* no target to send to; or deleted meanwhile */

	for (size_t i = 0; i < n; i++) {
		if ((int)i == self)
			continue;
		buf_reset(&msg);
		int has = holder_has(urls[i], b->name, obj, olen, &meta, &msg);
		if (has == 1)
			continue;
		uint64_t bytes = 0;
		if (has == 0 && tgt_send_copy(t, urls[i], b->name, blen, obj, olen, "rebalance", &bytes,
		                              &msg) == AIS_OK) {
			pthread_mutex_lock(&r->mu);
			r->st.moved++;
			r->st.moved_bytes += bytes;
			pthread_mutex_unlock(&r->mu);
			continue;
		}
		if (has == 0 && errno == ENOENT)
			goto out; /* deleted here meanwhile */
		all_have = false;
		note_error(r, "%.*s: %s: %s", obj, olen, urls[i], msg.ptr ? msg.ptr : "error");
	}
	if (self < 0 && all_have) { /* rule 2 of jobs.h */
		if (store_delete(t->store, b->name, blen, obj, olen) == AIS_OK) {
			pthread_mutex_lock(&r->mu);
			r->st.deleted++;
			pthread_mutex_unlock(&r->mu);
		}
	}
out:
	pthread_mutex_lock(&r->mu);
	r->st.walked++;
	pthread_mutex_unlock(&r->mu);
	buf_free(&uname);
	buf_free(&msg);
}

static void *page_worker(void *arg)
{
	struct page *pg = arg;
	reb_t *r = pg->r;
	for (;;) {
		pthread_mutex_lock(&r->mu);
		size_t i = pg->next++;
		bool stop = r->quit || r->abort || r->gen != pg->gen;
		pthread_mutex_unlock(&r->mu);
		if (stop || i >= pg->n)
			break;
		do_object(r, pg->b, pg->items[i].name, pg->items[i].len);
	}
	httpc_sync_release();
	return NULL;
}

static void collect(void *arg, const char *name, size_t len, const store_meta_t *m)
{
	struct page *pg = arg;
	(void)m;
	pg->items[pg->n].name = xstrndup(name, len);
	pg->items[pg->n].len = len;
	pg->n++;
}

/* One page of names after *after (updated), processed by the workers.
 * Returns false when the bucket has no more. */
static bool walk_page(reb_t *r, uint64_t gen, const struct bucket *b, buf_t *after, size_t workers)
{
	struct page pg = {.r = r, .gen = gen, .b = b};
	bool more = false;
	pthread_t th[64];
	size_t nth = 0;

	pg.items = xcalloc(WALK_PAGE, sizeof(*pg.items));
	if (store_list(r->t->store, b->name, strlen(b->name), "", 0, after->ptr ? after->ptr : "", after->len,
	               WALK_PAGE, collect, &pg, &more) != AIS_OK) {
		free(pg.items);
		return false; /* the bucket is gone */
	}
	if (pg.n) {
		buf_reset(after);
		buf_add(after, pg.items[pg.n - 1].name, pg.items[pg.n - 1].len);
	}
	for (size_t i = 0; i < MIN(workers, 64); i++)
		if (pthread_create(&th[nth], NULL, page_worker, &pg) == 0)
			nth++;
	if (!nth)
		page_worker(&pg);
	for (size_t i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	for (size_t i = 0; i < pg.n; i++)
		free(pg.items[i].name);
	free(pg.items);
	return more;
}

static uint64_t local_objects(store_t *s)
{
	store_mp_stats_t mp[CONF_MAX_MOUNTPATHS];
	int n = 0;
	uint64_t objs = 0;
	if (store_stats(s, mp, CONF_MAX_MOUNTPATHS, &n) == AIS_OK)
		for (int i = 0; i < n; i++)
			objs += mp[i].objects;
	return objs;
}

/* One run under the current map. */
static void walk(reb_t *r, uint64_t gen)
{
	cluster_t *cl = r->t->base.cl;
	const cmap_t *m;
	const bmd_t *bmd;
	struct bucket *bs;
	size_t nb = 0;
	bool maint;

	cluster_read_lock(cl, &m, &bmd);
	const cmap_node_t *me = m ? cmap_get(m, cluster_self(cl)->id, strlen(cluster_self(cl)->id)) : NULL;
	maint = me && me->state == CMAP_MAINTENANCE && !me->drain; /* drain: moves all, as decommissioning */
	bs = xcalloc(bmd ? bmd_size(bmd) + 1 : 1, sizeof(*bs));
	for (size_t i = 0; bmd && i < bmd_size(bmd); i++) {
		snprintf(bs[nb].name, sizeof(bs[nb].name), "%s", bmd_bucket(bmd, i)->name);
		bs[nb++].copies = place_copies(&bmd_bucket(bmd, i)->props);
	}
	pthread_mutex_lock(&r->mu);
	r->st.cmap_version = m ? cmap_version(m) : 0;
	pthread_mutex_unlock(&r->mu);
	cluster_read_unlock(cl);

	if (maint || !me) { /* rule 3 of jobs.h */
		log_info("rebalance: %s: nothing to walk",
		         maint ? "in maintenance without drain, the data stays here"
		               : "this target is not in the cluster map (yet), its data stays here");
		free(bs);
		return;
	}
	for (size_t i = 0; i < nb && !stopped(r, gen); i++) {
		buf_t after = BUF_INIT;
		while (!stopped(r, gen) && walk_page(r, gen, &bs[i], &after, r->t->conf->rebalance_workers))
			;
		buf_free(&after);
	}
	free(bs);
}

static void marker_set(reb_t *r, bool on)
{
	if (!on) {
		if (unlink(r->marker) && errno != ENOENT)
			log_warn("unlink %s", r->marker);
		return;
	}
	int fd = open(r->marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || fsync(fd))
		log_warn("%s (an interrupted rebalance will not resume by itself)", r->marker);
	if (fd >= 0)
		close(fd);
}

/* Places the queued objects under the current map (caller holds r->mu;
 * released while it works). */
static void place_queued(reb_t *r)
{
	struct qitem *q = r->q;
	r->q = NULL;
	r->nq = 0;
	pthread_mutex_unlock(&r->mu);
	while (q) {
		struct qitem *next = q->next;
		struct bucket b = {.copies = 0};
		const bmd_t *bmd;
		const cmap_t *m;
		cluster_read_lock(r->t->base.cl, &m, &bmd);
		const bmd_bucket_t *bb = bmd ? bmd_get(bmd, q->bck, strlen(q->bck)) : NULL;
		if (bb) {
			snprintf(b.name, sizeof(b.name), "%s", bb->name);
			b.copies = place_copies(&bb->props);
		}
		cluster_read_unlock(r->t->base.cl);
		if (b.copies)
			do_object(r, &b, q->obj, q->olen);
		free(q->bck);
		free(q->obj);
		free(q);
		q = next;
	}
	pthread_mutex_lock(&r->mu);
}

static void *reb_main(void *arg)
{
	reb_t *r = arg;
	log_set_action("rebalance");
	pthread_mutex_lock(&r->mu);
	while (!r->quit) {
		if (!r->pending && r->nq) {
			place_queued(r);
			continue;
		}
		if (!r->pending) {
			if (r->retry_ms && time_mono_ns() >= r->retry_at) {
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
		uint64_t total = local_objects(r->t->store);
		pthread_mutex_lock(&r->mu);
		r->st.total = total;
		pthread_mutex_unlock(&r->mu);
		walk(r, gen);

		pthread_mutex_lock(&r->mu);
		if (r->quit)
			break;
		r->st.end_ns = time_now_ns();
		if (r->gen != gen) {
			r->st.state = JOB_ABORTED; /* superseded: pending is set */
			continue;
		}
		if (r->abort) {
			r->st.state = JOB_ABORTED;
			r->retry_ms = 0;
			marker_set(r, false);
			log_info("rebalance aborted");
		} else if (r->st.errors) {
			r->st.state = JOB_FAILED;
			r->retry_ms = r->retry_ms ? MIN(r->retry_ms * 2, RETRY_MAX_MS) : RETRY_FIRST_MS;
			r->retry_at = time_mono_ns() + (int64_t)r->retry_ms * 1000000;
			log_warnx("rebalance (map v%llu): %llu errors, last: %s; again in %llu ms",
			          (unsigned long long)r->st.cmap_version, (unsigned long long)r->st.errors,
			          r->st.last_error, (unsigned long long)r->retry_ms);
		} else {
			r->st.state = JOB_DONE;
			r->retry_ms = 0;
			marker_set(r, false);
			log_info("rebalance (map v%llu) done: %llu objects walked, %llu copies sent (%llu "
			         "bytes), "
			         "%llu moved off",
			         (unsigned long long)r->st.cmap_version, (unsigned long long)r->st.walked,
			         (unsigned long long)r->st.moved, (unsigned long long)r->st.moved_bytes,
			         (unsigned long long)r->st.deleted);
		}
	}
	pthread_mutex_unlock(&r->mu);
	httpc_sync_release();
	return NULL;
}

reb_t *reb_new(target_t *t)
{
	reb_t *r = xcalloc(1, sizeof(*r));
	const conf_t *c = t->conf;
	r->t = t;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	snprintf(r->marker, sizeof(r->marker), "%s/rebalance.marker",
	         c->node_dir[0] ? c->node_dir : c->mountpaths[0]);
	if (access(r->marker, F_OK) == 0) {
		log_info("rebalance: resuming the run interrupted before this start (%s)", r->marker);
		r->pending = true;
	}
	if (pthread_create(&r->th, NULL, reb_main, r))
		fatal("pthread_create");
	return r;
}

void reb_stop(reb_t *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	bool was = r->quit;
	r->quit = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (!was)
		pthread_join(r->th, NULL);
}

void reb_free(reb_t *r)
{
	if (!r)
		return;
	reb_stop(r);
	while (r->q) {
		struct qitem *q = r->q;
		r->q = q->next;
		free(q->bck);
		free(q->obj);
		free(q);
	}
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
}

void reb_kick(reb_t *r, const char *why)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->gen++;
	r->pending = true;
	r->retry_ms = 0;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	log_info("rebalance: %s", why);
}

void reb_enqueue(reb_t *r, const char *bck, size_t blen, const char *obj, size_t olen)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	if (r->nq >= REB_QUEUE_MAX) {
		pthread_mutex_unlock(&r->mu);
		reb_kick(r, "too many writes raced map changes: a full run");
		return;
	}
	struct qitem *q = xcalloc(1, sizeof(*q));
	q->bck = xstrndup(bck, blen);
	q->obj = xstrndup(obj, olen);
	q->olen = olen;
	q->next = r->q;
	r->q = q;
	r->nq++;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

void reb_abort(reb_t *r)
{
	pthread_mutex_lock(&r->mu);
	r->abort = true;
	r->pending = false;
	r->retry_ms = 0;
	if (r->st.state != JOB_RUNNING) /* nothing runs: just forget the marker */
		marker_set(r, false);
	pthread_mutex_unlock(&r->mu);
}

void reb_stats(reb_t *r, job_stats_t *out)
{
	pthread_mutex_lock(&r->mu);
	*out = r->st;
	pthread_mutex_unlock(&r->mu);
	out->objects = local_objects(r->t->store);
}
