/*
 * job.c - the S3 lifecycle job of a target (lifecycle.h): kind "lifecycle"
 * of the job registry, a run every s3.lifecycle_period, each over the
 * buckets whose BMD entry has lifecycle rules (s3lc.h, kept by
 * src/s3/lcop.c); stopped like any run (PUT /v1/jobs stop).
 *
 * Guarantees:
 *  1. A run acts only on what this target owns: an object name (with its
 *     kept versions, olver.h) whose HRW owner under the current map is this
 *     target, and the multipart uploads it holds (they live on the owner).
 *     Every other holder leaves the name alone, so each is judged once.
 *  2. Everything goes through the object layer: a current version expires
 *     as a client's DeleteObject would (ol_delete_msg: every copy, slices
 *     and tombstones; in a bucket with versions olver_delete: a delete
 *     marker on top), a version or delete marker as a client's
 *     DeleteObject of that versionId without the bypass
 *     (olver_delete_version), which refuses a locked version (object lock
 *     retention or legal hold: olver.c rule 8): a locked version is never
 *     expired, it is counted and left for a later run.
 *  3. What expires when is s3lc_plan's decision at the run's time with
 *     days of s3.lifecycle_day; a run that fails on a name (a holder down)
 *     counts the error and goes on; the next run tries again. Deletes are
 *     idempotent, so a run cut by a crash or a kill -9 leaves nothing half
 *     done that the next run does not finish (the registry records the cut
 *     run aborted at start; the kind does not resume: its schedule starts
 *     the next one).
 *  4. Runs of all targets in one period share the id lc-N (N: the period's
 *     number since the epoch), so a gateway's /v1/jobs shows them as one
 *     job; one run at a time per target, a slot that finds one still
 *     running is skipped. No bucket with rules: no run, nothing recorded.
 *  5. A run reads the BMD once per bucket and stops between names when
 *     asked (lc_stop, a stop of the job).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/bmd.h"
#include "aisd/cluster.h"
#include "aisd/hrw.h"
#include "aisd/jobreg.h"
#include "aisd/lifecycle.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/ol.h"
#include "aisd/olver.h"
#include "aisd/s3.h"
#include "aisd/s3lc.h"
#include "aisd/status.h"
#include "aisd/store.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define KIND "lifecycle"
#define PAGE 1000

struct lcrun {
	jtrun_t r; /* kind, id, stats, abort (jobreg.h) */
	int64_t now_ns, day_ns;
	uint64_t locked; /* versions a lock kept */
};

static struct {
	target_t *t;
	node_base_t *nb; /* the target's cluster, store, configuration */
	jtruns_t runs;
	jreg_kind_t reg;
	pthread_t th;
	bool started;
	atomic_bool stop;
} lc = {.runs = JTRUNS_INIT};

/* --- one name ----------------------------------------------------------------------- */

/* One name's versions as s3lc_plan sees them, in arena memory. */
struct group {
	arena_t *a;
	sv_t base;
	size_t plen; /* the kept versions' prefix: base NAME_VER_TAG */
	s3lc_ver_t *v;
	char (*id)[NAME_VER_ID_LEN + 1];
	size_t n, cap;
};

/* The write time of version id: its HLC stamp (olver.h rule 3). */
static int64_t id_stamp(const char *id, int64_t fallback)
{
	uint64_t s = 0;
	for (int i = 0; i < 16; i++) {
		char c = id[i];
		s = s * 16 + (uint64_t)(c >= 'a' ? c - 'a' + 10 : c - '0');
	}
	return s && s < INT64_MAX ? (int64_t)s : fallback;
}

static void ver_add(void *arg, const char *name, size_t len, const store_meta_t *m)
{
	struct group *g = arg;
	if (len != g->plen + NAME_VER_ID_LEN || name_version_of(name, len) + NAME_VER_TAG_LEN != g->plen)
		return; /* a version of a longer name */
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 16;
		g->v = xrealloc(g->v, g->cap * sizeof(*g->v));
		g->id = xrealloc(g->id, g->cap * sizeof(*g->id));
	}
	s3lc_ver_t *v = &g->v[g->n];
	memcpy(g->id[g->n], name + g->plen, NAME_VER_ID_LEN);
	g->id[g->n][NAME_VER_ID_LEN] = 0;
	memset(v, 0, sizeof(*v));
	v->o.key = g->base.ptr;
	v->o.klen = g->base.len;
	v->o.size = m->size;
	v->dm = strstr(m->custom, OLVER_DM_KEY "=1") != NULL;
	v->start_ns = id_stamp(g->id[g->n], m->mtime_ns);
	s3lc_tag_t *tags;
	v->o.ntags = s3_lc_tags(g->a, m->custom, &tags);
	v->o.tags = tags;
	g->n++;
}

static void note_error(struct lcrun *j, const char *bck, sv_t obj, const char *what, const buf_t *why, int e)
{
	char name[512];
	snprintf(name, sizeof(name), "%s/%.*s", bck, (int)MIN(obj.len, 400), obj.ptr);
	pthread_mutex_lock(&j->r.mu);
	job_error_add(&j->r.st, name, why->len ? why->ptr : strerror(e));
	pthread_mutex_unlock(&j->r.mu);
	log_warnx("lifecycle %s: %s %s: %s", j->r.id, what, name, why->len ? why->ptr : strerror(e));
}

/* Judges the name base of bck (rule 1: owned here) and acts (rule 2). */
static void one(struct lcrun *j, const char *bck, unsigned history, const s3lc_t *c, sv_t base, arena_t *a)
{
	target_t *t = lc.t;
	store_t *st = lc.nb->store;
	ol_where_t w;
	char (*urls)[CMAP_URL_MAX + 1] = xmalloc(HRW_TOP_MAX * sizeof(*urls));
	store_meta_t *m = xmalloc(sizeof(*m));
	struct group g = {.a = a, .base = base};
	buf_t pfx = BUF_INIT, why = BUF_INIT;
	s3lc_ver_t cur;
	bool has_cur, more;
	uint64_t removed = 0;

	ol_where_of(t, sv_from(bck), base, &w, urls);
	if (w.self != 0)
		goto out; /* not the owner (rule 1) */
	has_cur = store_lookup(st, bck, strlen(bck), base.ptr, base.len, m) == AIS_OK;
	if (has_cur) {
		s3lc_tag_t *tags;
		memset(&cur, 0, sizeof(cur));
		cur.o = (s3lc_obj_t){.key = base.ptr, .klen = base.len, .size = m->size};
		cur.o.ntags = s3_lc_tags(a, m->custom, &tags);
		cur.o.tags = tags;
		cur.start_ns = m->mtime_ns;
	}
	if (history != BMD_HIST_OFF) {
		buf_addsv(&pfx, base);
		buf_addstr(&pfx, NAME_VER_TAG);
		g.plen = pfx.len;
		if (store_list(st, bck, strlen(bck), pfx.ptr, pfx.len, "", 0, 0, ver_add, &g, &more) != AIS_OK)
			g.n = 0;
	}
	if (!has_cur && !g.n)
		goto out;
	pthread_mutex_lock(&j->r.mu);
	j->r.st.walked++;
	j->r.st.walked_bytes += has_cur ? cur.o.size : 0;
	pthread_mutex_unlock(&j->r.mu);

	bool cur_expires = s3lc_plan(c, has_cur ? &cur : NULL, g.v, g.n, j->now_ns, j->day_ns);
	if (cur_expires) {
		char id[NAME_VER_ID_LEN + 1];
		int rc = history == BMD_HIST_OFF ? ol_delete_msg(t, sv_from(bck), base, true, &why)
						 : olver_delete(t, &w, sv_from(bck), base, id, &why);
		if (rc == AIS_OK || errno == ENOENT)
			removed++;
		else
			note_error(j, bck, base, "expiring", &why, errno);
	}
	bool all = true; /* every noncurrent version that was to go went */
	for (size_t i = 0; i < g.n; i++) {
		bool dm;
		if (!g.v[i].expire)
			continue;
		if (i == g.n - 1 && g.v[i].dm && !has_cur && !all)
			break; /* the marker is not alone after all */
		buf_reset(&why);
		if (olver_delete_version(t, &w, sv_from(bck), base, sv_from(g.id[i]), false, &dm, &why) == AIS_OK) {
			removed++;
			continue;
		}
		all = false;
		if (errno == EACCES) { /* rule 2: a lock holds it */
			pthread_mutex_lock(&j->r.mu);
			j->locked++;
			pthread_mutex_unlock(&j->r.mu);
			log_debug("lifecycle %s: %s/%.*s version %s is locked: kept", j->r.id, bck, (int)base.len, base.ptr,
				  g.id[i]);
		} else {
			note_error(j, bck, base, "expiring a version of", &why, errno);
		}
	}
	if (removed) {
		pthread_mutex_lock(&j->r.mu);
		j->r.st.deleted += removed;
		pthread_mutex_unlock(&j->r.mu);
	}
out:
	free(g.v);
	free(g.id);
	buf_free(&pfx);
	buf_free(&why);
	free(m);
	free(urls);
}

/* --- one bucket ----------------------------------------------------------------------- */

struct page {
	char **names;
	size_t n;
};

static void page_add(void *arg, const char *name, size_t len, const store_meta_t *m)
{
	struct page *p = arg;
	(void)m;
	p->names = xrealloc(p->names, (p->n + 1) * sizeof(*p->names));
	p->names[p->n++] = xstrndup(name, len);
}

static void page_free(struct page *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->names[i]);
	free(p->names);
	memset(p, 0, sizeof(*p));
}

/* Walks the names of bck stored here in pages: each current object, and
 * each name whose versions are here without a current copy, once. */
static void bucket(struct lcrun *j, const char *bck, unsigned history, const s3lc_t *c)
{
	store_t *st = lc.nb->store;
	buf_t after = BUF_INIT, last = BUF_INIT; /* last: the last name judged by its kept versions */
	store_meta_t *m = xmalloc(sizeof(*m));
	bool more = true;
	uint64_t aborted = s3_lc_uploads(lc.nb->conf, bck, c, j->now_ns, j->day_ns);
	if (aborted) {
		pthread_mutex_lock(&j->r.mu);
		j->r.st.deleted += aborted;
		pthread_mutex_unlock(&j->r.mu);
	}
	while (more && !atomic_load(&j->r.abort)) {
		struct page p = {0};
		if (store_list(st, bck, strlen(bck), "", 0, after.ptr ? after.ptr : "", after.len, PAGE, page_add, &p,
			       &more) != AIS_OK) {
			buf_t why = BUF_INIT;
			buf_addf(&why, "listing: %s", strerror(errno));
			note_error(j, bck, (sv_t){"", 0}, "walking", &why, errno);
			buf_free(&why);
			break;
		}
		if (!p.n)
			more = false;
		for (size_t i = 0; i < p.n && !atomic_load(&j->r.abort); i++) {
			size_t len = strlen(p.names[i]), vo = name_version_of(p.names[i], len); /* 0: none */
			sv_t base = {p.names[i], vo ? vo : len};
			if (vo) { /* a kept version: judged with its current copy, if any */
				if (sv_eq(base, sv_of(&last)) ||
				    store_lookup(st, bck, strlen(bck), base.ptr, base.len, m) == AIS_OK)
					continue;
				buf_reset(&last);
				buf_addsv(&last, base);
			}
			arena_t *a = arena_new(0);
			one(j, bck, history, c, base, a);
			arena_destroy(a);
		}
		if (p.n) {
			buf_reset(&after);
			buf_addstr(&after, p.names[p.n - 1]);
		}
		page_free(&p);
	}
	free(m);
	buf_free(&after);
	buf_free(&last);
}

/* --- runs ------------------------------------------------------------------------------ */

/* The buckets with rules now: names, histories and documents (heap). */
struct lcb {
	char name[NAME_BUCKET_MAX + 1];
	unsigned history;
	char *doc;
};

static size_t buckets_with_rules(struct lcb **out)
{
	const bmd_t *b;
	size_t n = 0;
	*out = NULL;
	cluster_read_lock(lc.nb->cl, NULL, &b);
	for (size_t i = 0; b && i < bmd_size(b); i++) {
		const bmd_bucket_t *k = bmd_bucket(b, i);
		const char *doc = bmd_doc(b, BMD_DOC_LIFECYCLE, k->name, strlen(k->name));
		if (!doc)
			continue;
		*out = xrealloc(*out, (n + 1) * sizeof(**out));
		snprintf((*out)[n].name, sizeof((*out)[n].name), "%s", k->name);
		(*out)[n].history = k->props.history;
		(*out)[n].doc = xstrdup(doc);
		n++;
	}
	cluster_read_unlock(lc.nb->cl);
	return n;
}

static void *run(void *arg)
{
	struct lcrun *j = arg;
	struct lcb *bk;
	size_t nb = buckets_with_rules(&bk);
	for (size_t i = 0; i < nb; i++) {
		arena_t *a = arena_new(0);
		s3lc_t c;
		buf_t err = BUF_INIT;
		if (!atomic_load(&j->r.abort)) {
			if (s3lc_parse_json(a, bk[i].doc, strlen(bk[i].doc), &c, &err) == AIS_OK)
				bucket(j, bk[i].name, bk[i].history, &c);
			else
				note_error(j, bk[i].name, (sv_t){"", 0}, "reading the rules of", &err, EINVAL);
		}
		buf_free(&err);
		arena_destroy(a);
		free(bk[i].doc);
	}
	free(bk);
	pthread_mutex_lock(&j->r.mu);
	j->r.st.state = atomic_load(&j->r.abort) ? JOB_ABORTED : JOB_DONE;
	j->r.st.end_ns = time_now_ns();
	j->r.st.total = j->r.st.walked;
	job_stats_t fin = j->r.st;
	pthread_mutex_unlock(&j->r.mu);
	if (fin.deleted || fin.errors || j->locked)
		log_info("lifecycle %s: %s: %zu bucket(s), %" PRIu64 " names looked at, %" PRIu64
			 " expired (objects, versions, delete markers, uploads), %" PRIu64 " locked versions kept, %" PRIu64
			 " errors",
			 j->r.id, job_state_name(fin.state), nb, fin.walked, fin.deleted, j->locked, fin.errors);
	jtruns_end(&lc.runs, &j->r, &fin);
	pthread_mutex_destroy(&j->r.mu);
	free(j);
	return NULL;
}

static int64_t day_ns(void)
{
	int64_t d = (int64_t)lc.nb->conf->s3_lifecycle_day_ms * 1000000;
	return d >= 1000000000 ? d : 1000000000; /* at least a second */
}

/* The registry's start (jobreg.h; the schedule's jreg_start): a run now,
 * spec ignored. */
static int kind_start(void *arg, const char *id, json_t *spec, bool resume, buf_t *err)
{
	(void)arg;
	(void)spec;
	(void)resume;
	pthread_mutex_lock(&lc.runs.mu);
	bool busy = lc.runs.head != NULL;
	pthread_mutex_unlock(&lc.runs.mu);
	if (busy) {
		buf_addstr(err, "a lifecycle run is in progress on this target");
		return 409;
	}
	struct lcrun *j = xcalloc(1, sizeof(*j));
	jtrun_init(&j->r, KIND, id);
	j->now_ns = time_now_ns();
	j->day_ns = day_ns();
	int rc = jtruns_start(&lc.runs, &j->r, "", NULL, run, j, err);
	if (rc) {
		pthread_mutex_destroy(&j->r.mu);
		free(j);
	}
	return rc;
}

/* The schedule (rule 4): a run per period when some bucket has rules. */
static void *schedule(void *arg)
{
	(void)arg;
	int64_t last_slot = -1;
	while (!atomic_load(&lc.stop)) {
		usleep(200 * 1000);
		uint64_t period_ms = lc.nb->conf->s3_lifecycle_period_ms;
		if (!period_ms || atomic_load(&lc.stop))
			continue;
		int64_t slot = time_now_ns() / 1000000 / (int64_t)period_ms;
		if (slot == last_slot)
			continue;
		last_slot = slot;
		struct lcb *bk;
		size_t nb = buckets_with_rules(&bk);
		for (size_t i = 0; i < nb; i++)
			free(bk[i].doc);
		free(bk);
		if (!nb)
			continue;
		char id[JREG_ID_MAX + 1];
		buf_t err = BUF_INIT;
		snprintf(id, sizeof(id), "lc-%" PRId64, slot);
		int rc = jreg_start(KIND, id, NULL, NULL, &err);
		if (rc && rc != 409)
			log_warnx("lifecycle: cannot start run %s: %s", id, err.ptr ? err.ptr : "?");
		buf_free(&err);
	}
	return NULL;
}

void lc_start(target_t *t)
{
	lc.t = t;
	lc.nb = (node_base_t *)t; /* the first member of a role's context (cluster.h) */
	if (!lc.nb->cl)
		return;
	lc.reg = (jreg_kind_t){.name = KIND,
			       .arg = &lc.runs,
			       .start = kind_start,
			       .stop = jtruns_kind_stop,
			       .progress = jtruns_kind_progress,
			       .resumes = false};
	jreg_register(&lc.reg);
	jtruns_open(&lc.runs);
	atomic_store(&lc.stop, false);
	if (pthread_create(&lc.th, NULL, schedule, NULL) == 0)
		lc.started = true;
	else
		log_warnx("lifecycle: cannot start its schedule thread: no lifecycle runs on this target");
}

void lc_stop(void)
{
	if (!lc.started)
		return;
	atomic_store(&lc.stop, true);
	pthread_join(lc.th, NULL);
	lc.started = false;
	jtruns_stop(&lc.runs);
}
