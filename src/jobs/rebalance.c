/*
 * rebalance.c - a target's rebalance job: one thread that walks the local
 * objects and moves or copies each to the targets that should hold it
 * under the current cluster map (the rules are in jobs.h).
 *
 * Guarantees:
 *  1. A local copy is deleted only after every holder answered one
 *     conditional send (tgt_send_copy): it has the object (the same
 *     checksum or a newer version: 200 without taking the body) or
 *     accepted our copy (200: durable there, its checksum verified there);
 *     a receiver that is not a holder under a map as new as ours refuses
 *     (409, tgt_stance), so two targets with different maps never each
 *     drop their copy on the other's word.
 *  2. Memory is bounded: a page of WALK_PAGE names at a time, processed by
 *     rebalance.workers threads, each sending one object (sendfile).
 *  2a. Foreground traffic keeps a share: at most rebalance.peer_streams
 *     sends to one peer at once (a worker waits for a slot), and the bytes
 *     sent are paced to rebalance.rate per second, or to
 *     rebalance.busy_rate while this target answers client reads (a worker
 *     sleeps after a send until the bytes sent since the rebalance was
 *     last unpaced are due at that rate: so it never runs ahead of the
 *     rate by more than the objects in flight).
 *  3. A newer map (reb_kick) or an abort stops the run between objects; a
 *     kicked run starts over on the newest map. The marker file exists from
 *     the start of a run until a run ends clean or is aborted, so a run cut
 *     by a crash resumes at the next start.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"

#include "aisd/cluster.h"
#include "aisd/httpc.h"
#include "aisd/jobreg.h"
#include "aisd/jobs.h"
#include "aisd/log.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define WALK_PAGE      512
#define RETRY_FIRST_MS 5000
#define RETRY_MAX_MS   60000
#define REB_QUEUE_MAX  100000
#define REB_SLOTS      64 /* >= the most workers: each holds one slot at a time */
#define PACE_STEP_MS   100 /* a paced worker checks for a stop this often */
#define BUSY_WINDOW_MS 200 /* client reads answered within this long: busy */

/* An object queued by reb_enqueue. */
struct qitem {
	struct qitem *next;
	char *bck, *obj;
	size_t olen;
};

#define REB_ENC_MAX 16 /* re-encode runs at once; beyond, the oldest is recorded aborted */

/* Sends in flight to one peer (n == 0: a free slot). */
struct peer_slot {
	char url[CMAP_URL_MAX + 1];
	uint64_t n;
};

struct reb {
	job_runner_t jr; /* the thread; the stats, q, nq, slots and pace_ns under jr.mu */
	pthread_cond_t slot_cv; /* a slot freed */
	struct peer_slot slots[REB_SLOTS];
	int64_t pace_ns; /* when the bytes sent so far are due at the rate in force (monotonic) */
	int64_t fg_at;   /* when fg_n was sampled (monotonic) */
	uint64_t fg_n;   /* client reads this target had answered then */
	bool fg_busy;    /* it had answered some in the window before */
	const reb_env_t *t; /* the target's side */
	struct qitem *q; /* reb_enqueue's objects, newest first */
	size_t nq;
	uint64_t run_bmd_v;  /* the BMD the current (or last) run walked under */
	uint64_t done_bmd_v; /* that of the last run that ended clean */
	char enc_bck[NAME_BUCKET_MAX + 1]; /* the last re-encode (reb_encode) */
	uint64_t enc_bmd_v;  /* the BMD that changed its layout; 0: none */
	/* the re-encode runs not ended yet (jobreg.h kind "ec-encode"): each
	 * ends done with the first clean run under a BMD at least its own */
	struct enc_run {
		char id[JREG_ID_MAX + 1];
		char bck[NAME_BUCKET_MAX + 1];
		uint64_t bmd_v;
	} enc[REB_ENC_MAX];
	size_t nenc;
	jreg_kind_t enc_kind;
};

struct bucket {
	char name[NAME_BUCKET_MAX + 1];
	size_t copies;
	bmd_props_t props; /* for erasure coding: copies per object size */
};

struct item {
	char *name;
	size_t len;
};

struct page {
	reb_t *r;
	uint64_t gen;
	uint64_t cmap_v; /* the run's map */
	bool slices;     /* b's erasure-coded slices here, not its objects */
	const struct bucket *b;
	struct item *items;
	size_t n;
	size_t next; /* under r->jr.mu */
};

static void note_error(reb_t *r, const char *fmt, const char *a, size_t alen, const char *b, const char *msg)
{
	pthread_mutex_lock(&r->jr.mu);
	r->jr.st.errors++;
	snprintf(r->jr.st.last_error, sizeof(r->jr.st.last_error), fmt, (int)MIN(alen, 100), a, b, msg);
	pthread_mutex_unlock(&r->jr.mu);
}

/* Waits for one of the peer's rebalance.peer_streams slots; returns it. */
static struct peer_slot *slot_take(reb_t *r, const char *url)
{
	uint64_t max = r->t->conf->rebalance_peer_streams;
	pthread_mutex_lock(&r->jr.mu);
	for (;;) {
		struct peer_slot *mine = NULL, *free_slot = NULL;
		for (size_t i = 0; i < REB_SLOTS && !mine; i++) {
			if (r->slots[i].n && !strcmp(r->slots[i].url, url))
				mine = &r->slots[i];
			else if (!r->slots[i].n && !free_slot)
				free_slot = &r->slots[i];
		}
		if (!mine && free_slot) {
			mine = free_slot;
			snprintf(mine->url, sizeof(mine->url), "%s", url);
		}
		if (mine && (!max || mine->n < max)) {
			mine->n++;
			r->jr.st.peer_streams_max = MAX(r->jr.st.peer_streams_max, mine->n);
			pthread_mutex_unlock(&r->jr.mu);
			return mine;
		}
		pthread_cond_wait(&r->slot_cv, &r->jr.mu);
	}
}

static void slot_give(reb_t *r, struct peer_slot *sl)
{
	pthread_mutex_lock(&r->jr.mu);
	sl->n--;
	pthread_cond_broadcast(&r->slot_cv);
	pthread_mutex_unlock(&r->jr.mu);
}

/* Whether this target answered client reads (GETs of objects, GetBatch)
 * since the sample before: its HTTP server's counters, sampled at most
 * once a BUSY_WINDOW_MS (at a run's start the sample before may be old:
 * reads since then count, so a run starts paced rather than not). */
static bool fg_busy(reb_t *r)
{
	http_server_t *s = r->t->srv;
	if (!s)
		return false;
	int64_t now = time_mono_ns();
	pthread_mutex_lock(&r->jr.mu);
	if (now - r->fg_at >= (int64_t)BUSY_WINDOW_MS * 1000000) {
		uint64_t n = http_server_answered(s, "/v1/objects", HTTP_GET) +
		             http_server_answered(s, "/v1/ml/moss", HTTP_GET);
		r->fg_busy = n != r->fg_n; /* a stale sample (a run's start): any reads since count */
		r->fg_n = n;
		r->fg_at = now;
	}
	bool busy = r->fg_busy;
	pthread_mutex_unlock(&r->jr.mu);
	return busy;
}

/* The rate in force: rebalance.rate, or rebalance.busy_rate while this
 * target serves client reads (the lower of the two); 0: none. */
static uint64_t rate_now(reb_t *r)
{
	uint64_t rate = r->t->conf->rebalance_rate, busy = r->t->conf->rebalance_busy_rate;
	if (busy && (!rate || busy < rate) && fg_busy(r))
		return busy;
	return rate;
}

/* Counts bytes sent against the rate in force, then sleeps until the run
 * is back under it (in steps, so that a stop, a newer map or the end of
 * the client reads is not kept waiting). */
static void pace(reb_t *r, uint64_t bytes)
{
	uint64_t rate = rate_now(r);
	if (!rate || !bytes)
		return;
	int64_t now = time_mono_ns();
	pthread_mutex_lock(&r->jr.mu);
	if (r->pace_ns < now) /* no credit saved up while idle */
		r->pace_ns = now;
	r->pace_ns += (int64_t)((double)bytes * 1e9 / (double)rate);
	int64_t due = r->pace_ns;
	uint64_t gen = r->jr.gen;
	pthread_mutex_unlock(&r->jr.mu);
	while ((now = time_mono_ns()) < due && !job_runner_stopped(&r->jr, gen)) {
		int64_t ns = MIN(due - now, (int64_t)PACE_STEP_MS * 1000000);
		struct timespec ts = {ns / 1000000000, ns % 1000000000};
		nanosleep(&ts, NULL);
		if (!rate_now(r))
			break; /* the reads ended and there is no cap of its own */
	}
}

static void do_object(reb_t *r, const struct bucket *b, const char *obj, size_t olen)
{
	const reb_env_t *t = r->t;
	cluster_t *cl = t->cl;
	const cmap_t *m;
	const bmd_t *bmd;
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
	if (store_lookup(t->store, b->name, blen, obj, olen, &meta) != AIS_OK) {
		/* deleted meanwhile; or (queued) erasure coded with no whole copy:
		 * the repair of its slices */
		if (b->props.ec_enabled && t->repair(t->arg, b->name, blen, obj, olen, &msg) == AIS_ERR)
			note_error(r, "%.*s: slices: %s%s", obj, olen, "", msg.ptr ? msg.ptr : "error");
		goto out;
	}
	bool ec = place_ec(&b->props, meta.size); /* one whole copy, and slices */
	cluster_read_lock(cl, &m, &bmd);
	place_of(m, uname.ptr, uname.len, MIN(place_copies_of(&b->props, meta.size), BMD_COPIES_MAX),
		 cluster_self(cl)->id, &p);
	n = p.n;
	self = p.self;
	uint64_t cmap_v = m ? cmap_version(m) : 0, bmd_v = bmd ? bmd_version(bmd) : 0;
	for (size_t i = 0; i < n; i++)
		snprintf(urls[i], sizeof(urls[i]), "%s", p.node[i]->intra_url);
	cluster_read_unlock(cl);
	if (!n)
		goto out; /* no target to send to */

	for (size_t i = 0; i < n; i++) {
		if ((int)i == self)
			continue;
		buf_reset(&msg);
		uint64_t bytes = 0;
		/* one conditional send: the holder takes the copy only if it lacks it */
		struct peer_slot *sl = slot_take(r, urls[i]);
		int rc = t->send_copy(t->arg, urls[i], b->name, blen, obj, olen, "rebalance", cmap_v, bmd_v, true, &bytes, &msg);
		int err = errno;
		slot_give(r, sl);
		errno = err;
		if (rc == AIS_DONE)
			continue; /* it has it */
		if (rc == REB_GONE) /* a client deleted it while this target was away */
			goto out_gone;
		if (rc == AIS_OK) {
			pthread_mutex_lock(&r->jr.mu);
			r->jr.st.moved++;
			r->jr.st.moved_bytes += bytes;
			pthread_mutex_unlock(&r->jr.mu);
			pace(r, bytes);
			continue;
		}
		if (errno == ENOENT)
			goto out; /* deleted here meanwhile */
		all_have = false;
		note_error(r, "%.*s: %s: %s", obj, olen, urls[i], msg.ptr ? msg.ptr : "error");
	}
	/* the slices of an erasure-coded object: rebuilt where missing, by the
	 * target with the whole copy (before it lets go of it) */
	if (ec && (self == 0 || (self < 0 && all_have))) {
		buf_reset(&msg);
		int w = t->repair(t->arg, b->name, blen, obj, olen, &msg);
		if (w == REB_EC_GONE) /* the same, learnt from the slice holders */
			goto out_gone;
		if (w < 0) {
			all_have = false;
			note_error(r, "%.*s: slices: %s%s", obj, olen, "", msg.ptr ? msg.ptr : "error");
		} else if (w > 0) {
			pthread_mutex_lock(&r->jr.mu);
			r->jr.st.moved += (uint64_t)w;
			pthread_mutex_unlock(&r->jr.mu);
		}
	}
	if (!(self < 0 && all_have)) /* rule 2 of jobs.h */
		goto out;
out_gone: /* not a holder and every holder has it, or a client deleted it */
	if (store_delete(t->store, b->name, blen, obj, olen) == AIS_OK) {
		pthread_mutex_lock(&r->jr.mu);
		r->jr.st.deleted++;
		pthread_mutex_unlock(&r->jr.mu);
	}
out:
	pthread_mutex_lock(&r->jr.mu);
	r->jr.st.walked++;
	pthread_mutex_unlock(&r->jr.mu);
	buf_free(&uname);
	buf_free(&msg);
}

/* A slice of b's object obj here: moved to a holder, or dropped, if this
 * target is not one of its holders (ecrepair.c rules 2, 3). */
static void do_slice(reb_t *r, const struct bucket *b, uint64_t cmap_v, const char *obj, size_t olen)
{
	buf_t msg = BUF_INIT;
	uint64_t bytes = 0;
	int rc = r->t->place_slice(r->t->arg, &b->props, b->name, strlen(b->name), obj, olen, cmap_v, &bytes, &msg);
	if (rc == AIS_ERR)
		note_error(r, "%.*s: slice: %s%s", obj, olen, "", msg.ptr ? msg.ptr : "error");
	pthread_mutex_lock(&r->jr.mu);
	r->jr.st.walked++;
	if (rc == REB_SLICE_MOVED) {
		r->jr.st.moved++;
		r->jr.st.moved_bytes += bytes;
	}
	r->jr.st.deleted += rc == REB_SLICE_MOVED || rc == REB_SLICE_DROPPED;
	pthread_mutex_unlock(&r->jr.mu);
	buf_free(&msg);
}

static void *page_worker(void *arg)
{
	struct page *pg = arg;
	reb_t *r = pg->r;
	for (;;) {
		pthread_mutex_lock(&r->jr.mu);
		size_t i = pg->next++;
		bool stop = job_runner_stopped_locked(&r->jr, pg->gen);
		pthread_mutex_unlock(&r->jr.mu);
		if (stop || i >= pg->n)
			break;
		if (pg->slices)
			do_slice(r, pg->b, pg->cmap_v, pg->items[i].name, pg->items[i].len);
		else
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

/* One page of names after *after (updated), processed by the workers: of
 * b's objects, or (slices) of its slices. Returns false when there are no more. */
static bool walk_page(reb_t *r, uint64_t gen, uint64_t cmap_v, const struct bucket *b, bool slices, buf_t *after,
		      size_t workers)
{
	struct page pg = {.r = r, .gen = gen, .cmap_v = cmap_v, .slices = slices, .b = b};
	bool more = false;
	pthread_t th[64];
	size_t nth = 0;
	char sb[24];

	if (slices)
		r->t->slice_bucket(b->name, strlen(b->name), sb);
	const char *lb = slices ? sb : b->name;
	pg.items = xcalloc(WALK_PAGE, sizeof(*pg.items));
	if (store_list(r->t->store, lb, strlen(lb), "", 0, after->ptr ? after->ptr : "", after->len,
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
	uint64_t objs, bytes;
	job_local_totals(s, &objs, &bytes);
	return objs;
}

/* One run under the current map. */
static void walk(reb_t *r, uint64_t gen)
{
	cluster_t *cl = r->t->cl;
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
		bs[nb].props = bmd_bucket(bmd, i)->props;
		bs[nb++].copies = place_copies(&bmd_bucket(bmd, i)->props);
	}
	uint64_t cmap_v = m ? cmap_version(m) : 0;
	pthread_mutex_lock(&r->jr.mu);
	r->jr.st.cmap_version = cmap_v;
	r->run_bmd_v = bmd ? bmd_version(bmd) : 0;
	pthread_mutex_unlock(&r->jr.mu);
	cluster_read_unlock(cl);

	if (maint || !me) { /* rule 3 of jobs.h */
		log_info("rebalance: %s: nothing to walk",
		         maint ? "in maintenance without drain, the data stays here"
		               : "this target is not in the cluster map (yet), its data stays here");
		free(bs);
		return;
	}
	for (size_t i = 0; i < nb && !job_runner_stopped(&r->jr, gen); i++) {
		for (int slices = 0; slices <= 1; slices++) { /* its objects, then its slices */
			buf_t after = BUF_INIT;
			while (!job_runner_stopped(&r->jr, gen) &&
			       walk_page(r, gen, cmap_v, &bs[i], slices, &after, r->t->conf->rebalance_workers))
				;
			buf_free(&after);
		}
	}
	free(bs);
}

/* Between runs: places the queued objects under the current map (caller
 * holds jr.mu; released while it works). */
static bool place_queued(void *arg)
{
	reb_t *r = arg;
	if (!r->nq)
		return false;
	struct qitem *q = r->q;
	r->q = NULL;
	r->nq = 0;
	pthread_mutex_unlock(&r->jr.mu);
	while (q) {
		struct qitem *next = q->next;
		struct bucket b = {.copies = 0};
		const bmd_t *bmd;
		const cmap_t *m;
		cluster_read_lock(r->t->cl, &m, &bmd);
		const bmd_bucket_t *bb = bmd ? bmd_get(bmd, q->bck, strlen(q->bck)) : NULL;
		if (bb) {
			snprintf(b.name, sizeof(b.name), "%s", bb->name);
			b.copies = place_copies(&bb->props);
			b.props = bb->props;
		}
		cluster_read_unlock(r->t->cl);
		if (b.copies)
			do_object(r, &b, q->obj, q->olen);
		free(q->bck);
		free(q->obj);
		free(q);
		q = next;
	}
	pthread_mutex_lock(&r->jr.mu);
	return true;
}

static void run(void *arg, uint64_t gen)
{
	reb_t *r = arg;
	uint64_t total = local_objects(r->t->store);
	pthread_mutex_lock(&r->jr.mu);
	r->jr.st.total = total;
	pthread_mutex_unlock(&r->jr.mu);
	walk(r, gen);
}

/* Ends the re-encode runs a clean run under BMD done_bmd_v covers (all,
 * state and why given, when forced); jr.mu held. */
static void enc_end(reb_t *r, const job_stats_t *st, bool force, enum job_state state, const char *why)
{
	size_t k = 0;
	for (size_t i = 0; i < r->nenc; i++) {
		if (!force && r->enc[i].bmd_v > r->done_bmd_v) {
			r->enc[k++] = r->enc[i];
			continue;
		}
		job_stats_t fin = *st;
		fin.state = state;
		if (why)
			snprintf(fin.last_error, sizeof(fin.last_error), "%s", why);
		jreg_end(r->enc[i].id, &fin);
	}
	r->nenc = k;
}

static void report(void *arg, const job_stats_t *st, uint64_t retry_ms)
{
	reb_t *r = arg;
	if (st->state == JOB_DONE) {
		r->done_bmd_v = r->run_bmd_v;
		enc_end(r, st, false, JOB_DONE, NULL);
	}
	if (st->state == JOB_FAILED)
		log_warnx("rebalance (map v%llu): %llu errors, last: %s; again in %llu ms",
		          (unsigned long long)st->cmap_version, (unsigned long long)st->errors,
		          st->last_error, (unsigned long long)retry_ms);
	else
		log_info("rebalance (map v%llu) done: %llu objects walked, %llu copies sent (%llu bytes), "
		         "%llu moved off",
		         (unsigned long long)st->cmap_version, (unsigned long long)st->walked,
		         (unsigned long long)st->moved, (unsigned long long)st->moved_bytes,
		         (unsigned long long)st->deleted);
}

/* A rebalance run's id: "rebalance-vN" under map version N, the same on
 * every target (a gateway shows the cluster's run as one). */
static void reb_run_id(void *arg, char *out, size_t outsz)
{
	reb_t *r = arg;
	const cmap_t *m;
	cluster_read_lock(r->t->cl, &m, NULL);
	uint64_t v = m ? cmap_version(m) : 0;
	cluster_read_unlock(r->t->cl);
	snprintf(out, outsz, "rebalance-v%llu", (unsigned long long)v);
}

static const struct job_runner_ops reb_ops = {
	.name = "rebalance",
	.retry_first_ms = RETRY_FIRST_MS,
	.retry_max_ms = RETRY_MAX_MS,
	.run = run,
	.idle = place_queued,
	.report = report,
	.thread_exit = httpc_sync_release,
	.run_id = reb_run_id,
};

/* --- the re-encode job's registry kind (jobreg.h) ------------------------------------ */

/* Records the re-encode run id of bck at BMD bmd_v and kicks the run. */
static void encode_begin(reb_t *r, const char *id, const char *bck, uint64_t bmd_v)
{
	json_t *spec = json_pack("{s:s,s:I}", "bucket", bck, "bmd_version", (json_int_t)bmd_v);
	pthread_mutex_lock(&r->jr.mu);
	snprintf(r->enc_bck, sizeof(r->enc_bck), "%s", bck);
	r->enc_bmd_v = MAX(r->enc_bmd_v, bmd_v);
	size_t i = 0;
	while (i < r->nenc && strcmp(r->enc[i].id, id))
		i++;
	if (i == REB_ENC_MAX) { /* the oldest gives way */
		job_stats_t st = {.state = JOB_ABORTED, .end_ns = time_now_ns()};
		snprintf(st.last_error, sizeof(st.last_error), "superseded by newer re-encodes");
		jreg_end(r->enc[0].id, &st);
		memmove(&r->enc[0], &r->enc[1], (REB_ENC_MAX - 1) * sizeof(r->enc[0]));
		i = --r->nenc;
	}
	if (i == r->nenc)
		r->nenc++;
	snprintf(r->enc[i].id, sizeof(r->enc[i].id), "%s", id);
	snprintf(r->enc[i].bck, sizeof(r->enc[i].bck), "%s", bck);
	r->enc[i].bmd_v = bmd_v;
	jreg_begin("ec-encode", id, bck, spec);
	pthread_mutex_unlock(&r->jr.mu);
	json_decref(spec);
	char why[NAME_BUCKET_MAX + 64];
	snprintf(why, sizeof(why), "bucket %s re-encoded (BMD v%llu)", bck, (unsigned long long)bmd_v);
	reb_kick(r, why);
}

/* Only a resume: a re-encode starts with the bucket's layout change. */
static int enc_start(void *arg, const char *id, json_t *spec, bool resume, buf_t *err)
{
	const char *bck = json_string_value(json_object_get(spec, "bucket"));
	json_int_t v = json_integer_value(json_object_get(spec, "bmd_version"));
	if (!resume) {
		buf_addstr(err, "a re-encode starts with POST /v1/buckets/BUCKET {\"action\":\"ec-encode\",...}");
		return 400;
	}
	if (!bck || v <= 0) {
		buf_addstr(err, "its record names no bucket and BMD version");
		return 400;
	}
	encode_begin(arg, id, bck, (uint64_t)v);
	return 0;
}

static void enc_stop(void *arg, const char *id)
{
	reb_t *r = arg;
	(void)id; /* the runs share the rebalance: each stops them all */
	job_runner_abort(&r->jr);
	job_stats_t st;
	job_runner_stats(&r->jr, &st);
	pthread_mutex_lock(&r->jr.mu);
	enc_end(r, &st, true, JOB_ABORTED, "stopped on request");
	pthread_mutex_unlock(&r->jr.mu);
}

static bool enc_progress(void *arg, const char *id, job_stats_t *out)
{
	reb_t *r = arg;
	pthread_mutex_lock(&r->jr.mu);
	bool mine = false;
	for (size_t i = 0; i < r->nenc; i++)
		mine |= !strcmp(r->enc[i].id, id);
	pthread_mutex_unlock(&r->jr.mu);
	if (!mine)
		return false;
	job_runner_stats(&r->jr, out);
	out->state = JOB_RUNNING;
	return true;
}

reb_t *reb_new(const reb_env_t *env)
{
	reb_t *r = xcalloc(1, sizeof(*r));
	const conf_t *c = env->conf;
	r->t = env;
	pthread_cond_init(&r->slot_cv, NULL);
	r->enc_kind = (jreg_kind_t){.name = "ec-encode",
				    .arg = r,
				    .start = enc_start,
				    .stop = enc_stop,
				    .progress = enc_progress,
				    .resumes = true};
	jreg_register(&r->enc_kind);
	job_runner_start(&r->jr, &reb_ops, r, c->node_dir[0] ? c->node_dir : c->mountpaths[0]);
	return r;
}

void reb_stop(reb_t *r)
{
	if (r)
		job_runner_stop(&r->jr);
}

void reb_free(reb_t *r)
{
	if (!r)
		return;
	jreg_unregister("ec-encode");
	job_runner_destroy(&r->jr);
	pthread_cond_destroy(&r->slot_cv);
	while (r->q) {
		struct qitem *q = r->q;
		r->q = q->next;
		free(q->bck);
		free(q->obj);
		free(q);
	}
	free(r);
}

void reb_kick(reb_t *r, const char *why)
{
	if (!r)
		return;
	job_runner_kick(&r->jr);
	log_info("rebalance: %s", why);
}

void reb_enqueue(reb_t *r, const char *bck, size_t blen, const char *obj, size_t olen)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->jr.mu);
	if (r->nq >= REB_QUEUE_MAX) {
		pthread_mutex_unlock(&r->jr.mu);
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
	pthread_cond_broadcast(&r->jr.cv);
	pthread_mutex_unlock(&r->jr.mu);
}

void reb_abort(reb_t *r)
{
	job_runner_abort(&r->jr);
}

void reb_encode(reb_t *r, const char *bck, uint64_t bmd_v)
{
	if (!r)
		return;
	char id[JREG_ID_MAX + 1];
	snprintf(id, sizeof(id), "ec-encode-v%llu", (unsigned long long)bmd_v); /* the same on every target */
	encode_begin(r, id, bck, bmd_v);
}

void reb_encode_stats(reb_t *r, job_stats_t *out, char *bck, size_t bsz)
{
	job_runner_stats(&r->jr, out);
	pthread_mutex_lock(&r->jr.mu);
	uint64_t want = r->enc_bmd_v, done = r->done_bmd_v;
	bool retry = r->jr.retry_ms != 0;
	snprintf(bck, bsz, "%s", r->enc_bck);
	pthread_mutex_unlock(&r->jr.mu);
	out->objects = local_objects(r->t->store);
	if (!want) {
		memset(out, 0, sizeof(*out));
		return;
	}
	if (out->state != JOB_RUNNING && done >= want)
		out->state = JOB_DONE;
	else if (out->state == JOB_IDLE || out->state == JOB_DONE || (out->state == JOB_FAILED && retry))
		out->state = JOB_RUNNING; /* a run under the new layout is due, or its retry */
}

void reb_stats(reb_t *r, job_stats_t *out)
{
	job_runner_stats(&r->jr, out);
	out->objects = local_objects(r->t->store);
}
