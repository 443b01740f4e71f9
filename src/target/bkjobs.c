/*
 * bkjobs.c - the prefetch and evict jobs of remote buckets, two kinds of
 * the job registry (jobreg.h): runs of either go on at once, each with its
 * id, progress and stop: GET and PUT /v1/jobs?what=prefetch|evict on a
 * target (the newest run); a gateway starts a run on every target under
 * one id (POST /v1/buckets/B prefetch-listrange|evict-listrange) and
 * shows it as any job (GET /v1/jobs?id=, GET /v1/cluster?what=prefetch).
 *
 * Guarantees:
 *  1. A run walks names given as a list, a template ("pre{0000..0999}
 *     post", one numeric range, zero-padded to the width of its start) or
 *     a prefix (prefetch: the remote's listing; evict: what is here).
 *  2. Prefetch: each name is fetched by its owner target only, through the
 *     object layer (ol_open_sync: the same fill, commit and one-fetch rule
 *     as a cold GET), by PREFETCH_WORKERS threads at once; a name already
 *     cached is counted walked, not moved.
 *  3. Evict: each target drops its own copies of the names (the remote
 *     keeps them); a bucket without a backend is refused, so an evict
 *     never loses data.
 *  4. Stop ends a run between objects (a fetch in flight completes: its
 *     object is whole or absent).
 *  5. A run cut by a restart (its record says running) resumes from the
 *     start of its names with the same id: a prefetch counts what it had
 *     fetched as walked, an evict finds nothing left to drop. A node's
 *     stop leaves its runs running in their records, to resume.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ol_int.h"
#include "aisd/jobreg.h"
#include "aisd/jobs.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "target_int.h"
#include "aisd/util.h"
#include "aisd/authz.h"
#include "aisd/banned.h"

#define PREFETCH_WORKERS 8
#define PAGE 1000
#define RESUME_WAIT_MS 30000 /* a resumed run waits this long for its bucket's backend (the BMD) */

/* One run: a heap record on the list `runs` from its start until its
 * thread ends (then the registry keeps its stats: jobreg.h). */
struct bkjob {
	jtrun_t r; /* kind, id, stats, abort (jobreg.h) */
	bool evict;
	/* the run (set at start; the generator's state under mu) */
	target_t *t;
	bk_bucket_t *bk;
	char bck[NAME_BUCKET_MAX + 1];
	json_t *list;       /* names, or NULL */
	char *tpl_pre, *tpl_post;
	uint64_t tpl_at, tpl_end;
	int tpl_width;
	bool tpl;
	buf_t prefix;
	char **page;        /* prefix walk: the current page of names */
	size_t npage, at;
	buf_t after;        /* the last name of the page */
	bool more, listed;
	size_t li;
};

static jtruns_t runs = JTRUNS_INIT; /* bkj_stop: the runs it cuts stay running in their records, to resume */

/* The two kinds as the registry sees them (bkj_register). */
struct bkkind {
	const char *kind;
	bool evict;
	target_t *t;
	jreg_kind_t reg;
};
static struct bkkind kinds[2] = {{.kind = "prefetch"}, {.kind = "evict", .evict = true}};

static struct bkkind *kind_of(sv_t k)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (sv_eqstr(k, kinds[i].kind))
			return &kinds[i];
	return NULL;
}

/* --- names ------------------------------------------------------------------------ */

static void page_add(void *arg, const bk_entry_t *e)
{
	struct bkjob *j = arg;
	j->page = xrealloc(j->page, (j->npage + 1) * sizeof(*j->page));
	j->page[j->npage++] = xstrndup(e->name, e->len);
}

static void page_add_local(void *arg, const char *name, size_t len, const store_meta_t *m)
{
	(void)m;
	bk_entry_t e = {.name = name, .len = len};
	page_add(arg, &e);
}

static void page_free(struct bkjob *j)
{
	for (size_t i = 0; i < j->npage; i++)
		free(j->page[i]);
	free(j->page);
	j->page = NULL;
	j->npage = j->at = 0;
}

/* The next name (heap) or NULL at the end; under j->r.mu. */
static char *next_name(struct bkjob *j)
{
	if (j->list) {
		json_t *v = json_array_get(j->list, j->li++);
		return v ? xstrdup(json_string_value(v)) : NULL;
	}
	if (j->tpl) {
		if (j->tpl_at > j->tpl_end)
			return NULL;
		buf_t n = BUF_INIT;
		buf_addf(&n, "%s%0*llu%s", j->tpl_pre, j->tpl_width, (unsigned long long)j->tpl_at++, j->tpl_post);
		return buf_detach(&n, NULL);
	}
	while (j->at == j->npage) {
		if (j->listed && !j->more)
			return NULL;
		page_free(j);
		buf_t msg = BUF_INIT;
		int rc = j->evict ? store_list(j->t->store, j->bck, strlen(j->bck), j->prefix.ptr, j->prefix.len,
					       j->after.ptr, j->after.len, PAGE, page_add_local, j, &j->more)
				  : bk_list(j->bk, sv_of(&j->prefix), sv_of(&j->after), PAGE, page_add, j, &j->more, &msg);
		j->listed = true;
		if (rc != AIS_OK) {
			j->r.st.errors++;
			snprintf(j->r.st.last_error, sizeof(j->r.st.last_error), "listing: %s",
				 msg.ptr ? msg.ptr : strerror(errno));
			buf_free(&msg);
			j->more = false;
			return NULL;
		}
		buf_free(&msg);
		if (!j->npage)
			return NULL;
		buf_reset(&j->after);
		buf_addstr(&j->after, j->page[j->npage - 1]);
	}
	j->r.st.total = MAX(j->r.st.total, j->r.st.walked + (j->npage - j->at));
	return xstrdup(j->page[j->at++]);
}

/* "pre{A..B}post" (names.h): AIS_OK with the parts set. */
static int tpl_parse(struct bkjob *j, const char *s)
{
	name_tpl_t t;
	if (!name_tpl_parse(s, &t))
		return AIS_ERR;
	j->tpl_pre = xstrndup(t.pre, t.pre_len);
	j->tpl_post = xstrdup(t.post);
	j->tpl_at = t.a;
	j->tpl_end = t.b;
	j->tpl_width = t.width;
	j->tpl = true;
	j->r.st.total = t.b - t.a + 1;
	return AIS_OK;
}

/* --- the run ------------------------------------------------------------------------ */

static bool owner_here(target_t *t, const char *bck, const char *obj)
{
	cluster_where_t w;
	cluster_where(t->base.cl, sv_from(bck), sv_from(obj), true, &w, NULL, 0);
	return w.self == 0;
}

static void one(struct bkjob *j, const char *name)
{
	sv_t bck = sv_from(j->bck), obj = sv_from(name);
	store_meta_t m;
	buf_t msg = BUF_INIT;
	int fd, rc = AIS_OK;
	bool moved = false;
	uint64_t bytes = 0;

	if (j->evict) {
		if (store_lookup(j->t->store, bck.ptr, bck.len, obj.ptr, obj.len, &m) == AIS_OK &&
		    store_delete(j->t->store, bck.ptr, bck.len, obj.ptr, obj.len) == AIS_OK) {
			moved = true;
			bytes = m.size;
		}
	} else if (owner_here(j->t, j->bck, name)) {
		bool had = store_lookup(j->t->store, bck.ptr, bck.len, obj.ptr, obj.len, &m) == AIS_OK;
		rc = ol_open_sync(j->t, bck, obj, true, &fd, &m, &msg);
		if (rc == AIS_OK) {
			close(fd);
			moved = !had;
			bytes = m.size;
		}
	}
	pthread_mutex_lock(&j->r.mu);
	j->r.st.walked++;
	if (rc != AIS_OK) {
		j->r.st.errors++;
		snprintf(j->r.st.last_error, sizeof(j->r.st.last_error), "%s: %s", name, msg.ptr ? msg.ptr : strerror(errno));
	} else if (moved && j->evict) {
		j->r.st.deleted++;
		j->r.st.moved_bytes += bytes;
	} else if (moved) {
		j->r.st.moved++;
		j->r.st.moved_bytes += bytes;
	}
	pthread_mutex_unlock(&j->r.mu);
	buf_free(&msg);
}

static void *worker(void *arg)
{
	struct bkjob *j = arg;
	for (;;) {
		if (atomic_load(&j->r.abort))
			break;
		pthread_mutex_lock(&j->r.mu);
		char *name = next_name(j);
		pthread_mutex_unlock(&j->r.mu);
		if (!name)
			break;
		one(j, name);
		free(name);
	}
	return NULL;
}

static void job_free(struct bkjob *j)
{
	page_free(j);
	json_decref(j->list);
	free(j->tpl_pre);
	free(j->tpl_post);
	free(j->bk);
	buf_free(&j->prefix);
	buf_free(&j->after);
	pthread_mutex_destroy(&j->r.mu);
	free(j);
}

/* A resumed run's backend: the BMD may come from the primary after this
 * start, so it is asked again for a while. NULL when it never came. */
static bk_bucket_t *resume_backend(struct bkjob *j, buf_t *msg)
{
	int berr;
	for (int64_t until = time_mono_ns() + (int64_t)RESUME_WAIT_MS * 1000000; !atomic_load(&j->r.abort);) {
		buf_reset(msg);
		bk_bucket_t *b = olr_backend(j->t, sv_from(j->bck), &berr, msg);
		if (b || time_mono_ns() > until)
			return b;
		usleep(200 * 1000);
	}
	return NULL;
}

static void *run(void *arg)
{
	struct bkjob *j = arg;
	int n = j->evict ? 1 : PREFETCH_WORKERS;
	pthread_t th[PREFETCH_WORKERS];
	int started = 0;
	buf_t msg = BUF_INIT;
	if (!j->bk && !(j->bk = resume_backend(j, &msg))) {
		pthread_mutex_lock(&j->r.mu);
		j->r.st.errors++;
		snprintf(j->r.st.last_error, sizeof(j->r.st.last_error), "resuming: bucket %s: %s", j->bck,
			 msg.len ? msg.ptr : "no remote backend");
		pthread_mutex_unlock(&j->r.mu);
	} else {
		for (int i = 0; i < n; i++)
			if (pthread_create(&th[started], NULL, worker, j) == 0)
				started++;
	}
	buf_free(&msg);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_lock(&j->r.mu);
	j->r.st.state = atomic_load(&j->r.abort) ? JOB_ABORTED : started ? JOB_DONE : JOB_FAILED;
	j->r.st.end_ns = time_now_ns();
	j->r.st.total = MAX(j->r.st.total, j->r.st.walked);
	log_info("%s %s %s: %s: %llu walked, %llu %s, %llu errors", j->r.kind, j->r.id, j->bck,
		 job_state_name(j->r.st.state), (unsigned long long)j->r.st.walked,
		 (unsigned long long)(j->evict ? j->r.st.deleted : j->r.st.moved), j->evict ? "evicted" : "fetched",
		 (unsigned long long)j->r.st.errors);
	job_stats_t fin = j->r.st;
	pthread_mutex_unlock(&j->r.mu);
	jtruns_end(&runs, &j->r, &fin);
	job_free(j);
	return NULL;
}

/* The registry's start (jobreg.h): a run id of spec {"bucket","list"|
 * "template"|"prefix"}; resume: the run a restart cut (its backend is
 * looked up by the run, as the BMD may not be here yet). */
static int kind_start(void *arg, const char *id, json_t *v, bool resume, buf_t *err)
{
	struct bkkind *k = arg;
	json_t *bk = json_object_get(v, "bucket"), *list = json_object_get(v, "list");
	json_t *tpl = json_object_get(v, "template"), *pfx = json_object_get(v, "prefix");
	int berr;
	bk_bucket_t *b = NULL;
	if (!json_is_string(bk) || !name_bucket_valid(json_string_value(bk), json_string_length(bk))) {
		buf_addstr(err, "value.bucket: a bucket name");
		return 400;
	}
	if (!resume && !(b = olr_backend(k->t, sv_from(json_string_value(bk)), &berr, err))) {
		if (!berr)
			buf_addf(err, "bucket \"%s\" has no remote backend: nothing to %s", json_string_value(bk), k->kind);
		return 400;
	}
	struct bkjob *j = xcalloc(1, sizeof(*j));
	jtrun_init(&j->r, k->kind, id);
	j->evict = k->evict;
	j->t = k->t;
	j->bk = b;
	snprintf(j->bck, sizeof(j->bck), "%s", json_string_value(bk));
	bool list_ok = json_is_array(list);
	if (list_ok) {
		size_t i;
		json_t *x;
		json_array_foreach(list, i, x) if (!json_is_string(x) ||
						  !name_object_valid(json_string_value(x), json_string_length(x)))
			list_ok = false;
	}
	if (list_ok) {
		j->list = json_incref(list);
		j->r.st.total = json_array_size(list);
	} else if (list || (tpl && (!json_is_string(tpl) || tpl_parse(j, json_string_value(tpl)) != AIS_OK)) ||
		   (pfx && !json_is_string(pfx))) {
		buf_addstr(err, "value: \"list\" (valid object names), \"template\" (\"pre{0000..0999}post\") or \"prefix\"");
		job_free(j);
		return 400;
	} else if (pfx) {
		buf_addstr(&j->prefix, json_string_value(pfx));
	}
	int rc = jtruns_start(&runs, &j->r, j->bck, v, run, j, err);
	if (rc)
		job_free(j);
	return rc;
}

static void kind_stop(void *arg, const char *id)
{
	struct bkkind *k = arg;
	jtruns_abort(&runs, k->kind, id);
}

static bool kind_progress(void *arg, const char *id, job_stats_t *out)
{
	(void)arg;
	if (!jtruns_progress(&runs, id, out))
		return false;
	out->total = MAX(out->total, out->walked);
	return true;
}

void bkj_register(target_t *t)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		kinds[i].t = t;
		kinds[i].reg = (jreg_kind_t){.name = kinds[i].kind,
					     .arg = &kinds[i],
					     .start = kind_start,
					     .stop = kind_stop,
					     .progress = kind_progress,
					     .resumes = true};
		jreg_register(&kinds[i].reg);
	}
}

/* GET/PUT /v1/jobs?what=KIND (jobs_h_kind), once the bucket's access
 * allows a start. */
int bkj_h_target(http_req_t *req, sv_t kind)
{
	target_t *t = req->ctx;
	struct bkkind *k = kind_of(kind);
	if (!t->base.cl) {
		http_resp_error(req, 409, "this target is not in a cluster: no remote buckets");
		return AIS_OK;
	}
	if (req->method == HTTP_PUT) {
		json_t *doc = json_loadb(req->body.ptr ? req->body.ptr : "", req->body.len, 0, NULL);
		const char *a = json_string_value(json_object_get(doc, "action"));
		json_t *bk = json_object_get(json_object_get(doc, "value"), "bucket");
		/* a prefetch writes into the bucket, an evict deletes from it:
		 * its access property must allow that (authz.h rule 1a; the
		 * gateway's fan-out is a peer's call) */
		authz_res_t res = {.bucket = sv_from(json_is_string(bk) ? json_string_value(bk) : ""),
				   .object = {"", 0},
				   .perm = AUTHZ_CLUSTER,
				   .op = k->evict ? BMD_ACCESS_DELETE : BMD_ACCESS_PUT,
				   .role = k->kind};
		bool denied = a && !strcmp(a, "start") && !authz_request(req, &res, 1);
		json_decref(doc);
		if (denied)
			return AIS_OK;
	}
	return jobs_h_kind(req, k->kind);
}

bool bkj_kind(sv_t kind) { return kind_of(kind) != NULL; }

void bkj_stats(sv_t kind, job_stats_t *out)
{
	struct bkkind *k = kind_of(kind);
	if (!jreg_latest(k->kind, out, NULL, 0))
		memset(out, 0, sizeof(*out));
}

void bkj_stop(void) { jtruns_stop(&runs); }
