/*
 * copy.c - the copy-bck and etl-bck jobs of a target: SRC's objects this
 * target owns, each passed through the run's transformer (none: the
 * identity, a plain copy) and sent to DST's owner as a client's PUT, so
 * DST's copies and erasure coding hold (xcopy.h has the rules). Either
 * bucket may have a remote backend: a remote SRC is walked through its
 * remote's listing and an object not cached here is read through the
 * cold GET; a remote DST writes through on its owner's PUT. One job
 * under two kinds of the job registry: runs go on at once, each on its
 * own thread, with progress and stop.
 */
#include <errno.h>
#include <sys/mman.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/backend.h"
#include "aisd/cluster.h"
#include "aisd/cmap.h"
#include "aisd/etl.h"
#include "aisd/ishard.h"
#include "aisd/jobreg.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/xcopy.h"
#include "aisd/xp.h"
#include "aisd/banned.h"

#define PAGE 500
#define SEND_TIMEOUT_MS 120000
#define SEND_RETRY_MS 30000 /* a destination owner that does not answer: tried again this long */
#define BMD_WAIT_MS 30000 /* how long a run waits for its buckets in the BMD */

struct xrun {
	jtrun_t r; /* id, stats, abort (jobreg.h) */
	char src[NAME_BUCKET_MAX + 1], dst[NAME_BUCKET_MAX + 1];
	char *prefix;
	bool dry;
	bool coer;                     /* continue on an object's error (else the run stops) */
	char etl[ETL_NAME_MAX + 1];    /* the transformer; "": the identity */
	char *etl_args;
	char *tpl_src;                 /* the template ("": none), tpl points into it */
	name_tpl_t tpl;
	xcopy_ext_t ext;
	char halt[256];                /* why the run stopped itself ("": it did not); under r.mu */
	bool halt_failed;              /* that stop ends it failed (else aborted) */
	unsigned lanes;                /* objects of a page handled at once: the transformer's workers */
	bk_bucket_t *sbk;              /* SRC's remote backend (rule 5); NULL: a bucket of this cluster */
	/* the walk's page (the run's thread only): names and their sizes */
	char **names;
	uint64_t *sizes;
	size_t n;
};

static struct cluster *xcl;
static store_t *xstore;
static jtruns_t runs = JTRUNS_INIT;

static void page_add_sized(struct xrun *x, const char *name, size_t len, uint64_t size)
{
	x->names = xrealloc(x->names, (x->n + 1) * sizeof(*x->names));
	x->sizes = xrealloc(x->sizes, (x->n + 1) * sizeof(*x->sizes));
	x->sizes[x->n] = size;
	x->names[x->n++] = xstrndup(name, len);
}

static void page_add(void *arg, const char *name, size_t len, const store_meta_t *m)
{
	page_add_sized(arg, name, len, m->size);
}

static void page_add_remote(void *arg, const bk_entry_t *e)
{
	page_add_sized(arg, e->name, e->len, e->size);
}

static void page_free(struct xrun *x)
{
	for (size_t i = 0; i < x->n; i++)
		free(x->names[i]);
	free(x->names);
	free(x->sizes);
	x->names = NULL;
	x->sizes = NULL;
	x->n = 0;
}

static void fail(struct xrun *x, const char *name, const char *why)
{
	pthread_mutex_lock(&x->r.mu);
	job_error_add(&x->r.st, name, why);
	pthread_mutex_unlock(&x->r.mu);
}

/* The run stops itself: why is its final last_error; failed or aborted.
 * true for the first stop (the others keep its reason). */
static bool halt(struct xrun *x, bool failed, const char *why)
{
	bool first = false;
	pthread_mutex_lock(&x->r.mu);
	if (!x->halt[0]) {
		snprintf(x->halt, sizeof(x->halt), "%s", why);
		x->halt_failed = failed;
		first = true;
	}
	pthread_mutex_unlock(&x->r.mu);
	atomic_store(&x->r.abort, true);
	return first;
}

/* Stop-on-error: the run stopped on every target, through the primary
 * gateway (PUT /v1/jobs {"action":"stop","id"}, which reaches this
 * target too, already stopping); best effort. */
static void stop_everywhere(struct xrun *x)
{
	const cmap_t *m;
	cluster_call_t call;
	memset(&call, 0, sizeof(call));
	cluster_read_lock(xcl, &m, NULL);
	const cmap_node_t *p = m && cmap_primary(m) ? cmap_get(m, cmap_primary(m), strlen(cmap_primary(m))) : NULL;
	if (p)
		snprintf(call.url, sizeof(call.url), "%s/v1/jobs", p->intra_url);
	cluster_read_unlock(xcl);
	if (!p)
		return;
	buf_t body = BUF_INIT;
	buf_addstr(&body, "{\"action\":\"stop\",\"id\":");
	buf_add_json_str(&body, x->r.id, strlen(x->r.id));
	buf_addch(&body, '}');
	call.method = "PUT";
	call.body = &body;
	call.timeout_ms = 5000;
	cluster_call_all(&call, 1);
	if (call.status != 200)
		log_warnx("%s %s: stopping the run on the other targets: %d %.100s", x->r.kind, x->r.id, call.status,
			  call.resp.ptr ? call.resp.ptr : "no answer");
	buf_free(&call.resp);
	buf_free(&body);
}

/* An object's error: counted, and under stop-on-error the run's end on
 * every target. */
static void obj_fail(struct xrun *x, const char *name, const char *why)
{
	fail(x, name, why);
	if (!x->coer) {
		char h[256];
		snprintf(h, sizeof(h), "stopped at the first error (stop-on-error): %.80s: %.120s", name, why);
		if (halt(x, true, h))
			stop_everywhere(x);
	}
}

/* Sends size bytes of fd to DST/dname's owner as a client's PUT: the
 * receiver commits the object whole or not at all. A send that got no
 * answer or a 5xx (the owner restarting, a map change) is tried again,
 * the owner looked up again, for SEND_RETRY_MS. */
static void send_obj(struct xrun *x, const char *name, const char *dname, int fd, uint64_t size)
{
	size_t dlen = strlen(dname);
	int64_t until = time_mono_ns() + (int64_t)SEND_RETRY_MS * 1000000;
	char why[200] = "";
	for (int k = 0;; k++) {
		cluster_where_t d;
		cluster_where(xcl, sv_from(x->dst), (sv_t){dname, dlen}, false, &d, NULL, 0);
		buf_t url = BUF_INIT, rh = BUF_INIT, msg = BUF_INIT;
		int status = 0, rc = AIS_ERR;
		bool sent = true;
		if (d.n && d.owner_intra[0]) {
			buf_addf(&url, "%s/v1/objects/%s/", d.owner_intra, x->dst);
			buf_add_pct(&url, (sv_t){dname, dlen}, true);
			rc = xs_put_file(url.ptr, NULL, fd, size, SEND_TIMEOUT_MS, &status, &sent, &rh, &msg);
		}
		snprintf(why, sizeof(why), "writing %s/%.60s: %s%d %.100s", x->dst, dname, rc == AIS_OK ? "HTTP " : "",
			 status, msg.ptr ? msg.ptr : d.n ? "no answer" : "no active target");
		buf_free(&url);
		buf_free(&rh);
		buf_free(&msg);
		if (rc == AIS_OK && status == 200) {
			pthread_mutex_lock(&x->r.mu);
			x->r.st.moved++;
			x->r.st.moved_bytes += size;
			pthread_mutex_unlock(&x->r.mu);
			return;
		}
		if ((rc == AIS_OK && status < 500) || time_mono_ns() > until || atomic_load(&x->r.abort))
			break;
		if (k == 0)
			log_warnx("%s %s: %s (trying again)", x->r.kind, x->r.id, why);
		usleep(300 * 1000);
	}
	obj_fail(x, name, why);
}

/* One of the run's threads over a page: names k, k + n, k + 2n, ... and
 * its own buffers. */
struct lane {
	struct xrun *x;
	unsigned k, n;
	buf_t out, msg; /* a transform's answer */
};

/* The transformer's answer for the object in fd, in a memory file (the
 * one send path); -1 when the object failed or the run stops. */
static int transform(struct xrun *x, struct lane *l, const char *name, size_t nlen, int fd, const store_meta_t *m)
{
	int status = 0;
	buf_reset(&l->out);
	buf_reset(&l->msg);
	if (etl_transform_fd(x->etl, strlen(x->etl), sv_from(x->src), (sv_t){name, nlen}, fd, m->size, m->version,
			     sv_from(x->etl_args), &l->out, &status, &l->msg) != AIS_OK) {
		const char *why = l->msg.ptr ? l->msg.ptr : "transform failed";
		if (status == 404 || status == 503) { /* removed or stopped: no object can be transformed */
			char h[256];
			snprintf(h, sizeof(h), "%.200s (aisctl etl ls)", why);
			halt(x, false, h);
		} else {
			obj_fail(x, name, why);
		}
		return -1;
	}
	int mfd = memfd_create("etl-bck", MFD_CLOEXEC);
	size_t off = 0;
	while (mfd >= 0 && off < l->out.len) {
		ssize_t n = write(mfd, l->out.ptr + off, l->out.len - off);
		if (n <= 0) {
			close(mfd);
			mfd = -1;
			break;
		}
		off += (size_t)n;
	}
	if (mfd < 0)
		obj_fail(x, name, "cannot keep the transformed object in memory");
	return mfd;
}

/* Is name this target's to send (HRW rank 0 in SRC)? */
static bool owned(struct xrun *x, const char *name)
{
	cluster_where_t w;
	cluster_where(xcl, sv_from(x->src), sv_from(name), true, &w, NULL, 0);
	return w.self == 0;
}

/* Does the run count name of its page walked: a name of the template
 * (when it has one) that this target holds, or for a remote SRC (every
 * target lists all of it) that this target owns. */
static bool walks(struct xrun *x, const char *name)
{
	if (x->tpl_src[0] && !name_tpl_match(&x->tpl, name, strlen(name)))
		return false;
	return !x->sbk || owned(x, name);
}

/* Rule 5: an object of a remote SRC that this target (its owner) has not
 * cached, read through the object layer as a client's GET would read it
 * (ishard_fetch: a GET to the owner, here, whose cold read fetches it
 * from the remote and caches it in SRC) into an unnamed temporary file.
 * Its fd at offset 0 and *size, or -1: gone from the remote since the
 * listing (nothing to copy), or the object's error counted. */
static int cold_open(struct xrun *x, const char *name, uint64_t *size)
{
	char why[200];
	FILE *f = tmpfile();
	if (!f) {
		obj_fail(x, name, "cannot make a temporary file");
		return -1;
	}
	int rc = ishard_fetch(xcl, xstore, x->src, name, f, &x->r.abort, x->r.kind, size, why, sizeof(why));
	int fd = rc == 0 && fflush(f) == 0 ? dup(fileno(f)) : -1;
	fclose(f);
	if (fd >= 0 && lseek(fd, 0, SEEK_SET) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	if (rc != 404 && !atomic_load(&x->r.abort))
		obj_fail(x, name, rc ? why : strerror(errno));
	return -1;
}

/* One object of SRC: transformed and sent (or counted, dry) when this
 * target owns it and the run's filters take it. */
static void one(struct xrun *x, struct lane *l, const char *name, uint64_t lsize)
{
	size_t nlen = strlen(name);
	if (!walks(x, name))
		return;
	pthread_mutex_lock(&x->r.mu);
	x->r.st.walked++;
	pthread_mutex_unlock(&x->r.mu);
	if (!owned(x, name))
		return; /* its owner sends it */
	char dname[NAME_OBJECT_MAX + 1];
	if (!xcopy_rename(&x->ext, name, nlen, dname, sizeof(dname))) {
		obj_fail(x, name, "the renamed object name is not a valid name");
		return;
	}
	store_meta_t m;
	int fd;
	if (store_open_obj(xstore, x->src, strlen(x->src), name, nlen, &fd, &m) != AIS_OK) {
		if (errno != ENOENT) {
			obj_fail(x, name, strerror(errno));
			return;
		}
		if (!x->sbk)
			return; /* deleted since the listing: nothing to copy */
		memset(&m, 0, sizeof(m)); /* rule 5: not cached here, the remote's listing has it */
		m.size = lsize;
		fd = -1;
		if (!x->dry && (fd = cold_open(x, name, &m.size)) < 0)
			return;
	}
	pthread_mutex_lock(&x->r.mu);
	x->r.st.walked_bytes += m.size;
	if (x->dry) { /* would send */
		x->r.st.moved++;
		x->r.st.moved_bytes += m.size;
	}
	pthread_mutex_unlock(&x->r.mu);
	if (x->dry) {
		if (fd >= 0)
			close(fd);
		return;
	}
	uint64_t size = m.size;
	if (x->etl[0]) {
		int mfd = transform(x, l, name, nlen, fd, &m);
		close(fd);
		if (mfd < 0)
			return;
		fd = mfd;
		size = l->out.len;
	}
	send_obj(x, name, dname, fd, size);
	close(fd);
}

static void xrun_free(struct xrun *x)
{
	pthread_mutex_destroy(&x->r.mu);
	free(x->prefix);
	free(x->etl_args);
	free(x->tpl_src);
	free(x->sbk);
	free(x);
}

static void lane_page(struct lane *l)
{
	struct xrun *x = l->x;
	for (size_t i = l->k; i < x->n && !atomic_load(&x->r.abort); i += l->n)
		one(x, l, x->names[i], x->sizes[i]);
}

static void *lane_main(void *arg)
{
	lane_page(arg);
	xs_release(); /* this thread's connections */
	httpc_sync_release();
	return NULL;
}

/* A page, by x->lanes threads at once (the run's thread one of them). */
static void page_run(struct xrun *x, struct lane *lanes)
{
	pthread_t th[ETL_WORKERS_MAX];
	bool started[ETL_WORKERS_MAX] = {false};
	for (unsigned k = 1; k < x->lanes && k < x->n; k++)
		started[k] = pthread_create(&th[k], NULL, lane_main, &lanes[k]) == 0;
	lane_page(&lanes[0]);
	for (unsigned k = 1; k < x->lanes && k < x->n; k++) {
		if (started[k])
			pthread_join(th[k], NULL);
		else
			lane_page(&lanes[k]); /* no thread: its share here */
	}
}

/* The next page of SRC's names after `after` (NULL: the first) under
 * walk (wlen bytes) into x's page: this target's store, or for a remote
 * SRC the remote's listing (rule 5). false when the walk ends here (an
 * error counted). */
static bool walk_page(struct xrun *x, const char *walk, size_t wlen, const char *after, bool *more)
{
	size_t alen = after ? strlen(after) : 0;
	if (x->sbk) {
		buf_t msg = BUF_INIT;
		int rc = bk_list(x->sbk, (sv_t){walk, wlen}, (sv_t){after ? after : "", alen}, PAGE, page_add_remote, x,
				 more, &msg);
		if (rc != AIS_OK) {
			char h[256];
			snprintf(h, sizeof(h), "listing the source's remote: %.200s", msg.ptr ? msg.ptr : strerror(errno));
			halt(x, true, h);
		}
		buf_free(&msg);
		return rc == AIS_OK;
	}
	if (store_list(xstore, x->src, strlen(x->src), walk, wlen, after ? after : "", alen, PAGE, page_add, x,
		       more) != AIS_OK) {
		if (errno != ENOENT) /* no object of SRC here: nothing to copy */
			fail(x, x->src, "listing the source");
		return false;
	}
	return true;
}

/* SRC's remote backend into x->sbk (none: a bucket of this cluster).
 * false when it has one that is not attached here. */
static bool source_backend(struct xrun *x)
{
	bk_bucket_t b;
	buf_t msg = BUF_INIT;
	int rc = bk_bucket_of(xcl, sv_from(x->src), &b, &msg);
	if (rc == AIS_OK) {
		x->sbk = xmalloc(sizeof(*x->sbk));
		*x->sbk = b;
	} else if (rc != AIS_DONE) {
		char h[256];
		snprintf(h, sizeof(h), "the source's remote backend: %.200s", msg.ptr ? msg.ptr : "not attached here");
		halt(x, true, h);
	}
	buf_free(&msg);
	return rc != AIS_ERR;
}

/* Both buckets in this target's BMD: a resumed run may start before the
 * BMD came from the primary, a fresh one just before it came here. */
static bool buckets_known(struct xrun *x)
{
	for (int64_t until = time_mono_ns() + (int64_t)BMD_WAIT_MS * 1000000; !atomic_load(&x->r.abort);) {
		cluster_where_t a, b;
		cluster_where(xcl, sv_from(x->src), SV("x"), true, &a, NULL, 0);
		cluster_where(xcl, sv_from(x->dst), SV("x"), true, &b, NULL, 0);
		if (a.bucket && b.bucket)
			return true;
		if (time_mono_ns() > until)
			break;
		usleep(200 * 1000);
	}
	return false;
}

static void *run(void *arg)
{
	struct xrun *x = arg;
	char *after = NULL;
	bool more = buckets_known(x);
	log_set_action(x->r.kind);
	if (!more && !atomic_load(&x->r.abort))
		fail(x, x->dst, "the source or the destination is not in this target's bucket metadata");
	more = more && source_backend(x);
	if (more && x->etl[0] && !etl_exists(x->etl, strlen(x->etl)) && etl_pull(xcl, x->etl, strlen(x->etl)) != AIS_OK) {
		char h[200];
		snprintf(h, sizeof(h), "no transformer \"%s\" on this target (aisctl etl ls)", x->etl);
		halt(x, true, h);
		more = false;
	}
	/* the walk: under the prefix, and under the template's own */
	const char *walk = x->prefix;
	if (x->tpl_src[0] && x->tpl.pre_len > strlen(walk)) {
		walk = x->tpl_src;
		if (strncmp(x->tpl_src, x->prefix, strlen(x->prefix)))
			more = false; /* they share no name */
	}
	size_t wlen = walk == x->tpl_src ? x->tpl.pre_len : strlen(walk);
	/* as many objects at once as the transformer has workers (a copy: one) */
	x->lanes = x->etl[0] && !x->dry ? MAX(1u, MIN(etl_workers(x->etl, strlen(x->etl)), ETL_WORKERS_MAX)) : 1;
	struct lane lanes[ETL_WORKERS_MAX];
	for (unsigned k = 0; k < x->lanes; k++)
		lanes[k] = (struct lane){.x = x, .k = k, .n = x->lanes, .out = BUF_INIT, .msg = BUF_INIT};
	while (more && !atomic_load(&x->r.abort)) {
		page_free(x);
		if (!walk_page(x, walk, wlen, after, &more))
			break;
		size_t take = 0; /* the page's names the run looks at */
		for (size_t i = 0; i < x->n; i++)
			take += walks(x, x->names[i]);
		pthread_mutex_lock(&x->r.mu);
		x->r.st.total = MAX(x->r.st.total, x->r.st.walked + take);
		pthread_mutex_unlock(&x->r.mu);
		page_run(x, lanes);
		if (!x->n)
			break;
		free(after);
		after = xstrdup(x->names[x->n - 1]);
	}
	page_free(x);
	free(after);
	for (unsigned k = 0; k < x->lanes; k++) {
		buf_free(&lanes[k].out);
		buf_free(&lanes[k].msg);
	}
	xs_release();
	pthread_mutex_lock(&x->r.mu);
	x->r.st.state = x->halt[0] ? (x->halt_failed ? JOB_FAILED : JOB_ABORTED)
			: atomic_load(&x->r.abort) ? JOB_ABORTED
			: x->r.st.errors ? JOB_FAILED
					 : JOB_DONE;
	if (x->halt[0])
		snprintf(x->r.st.last_error, sizeof(x->r.st.last_error), "%s", x->halt);
	x->r.st.end_ns = time_now_ns();
	x->r.st.total = MAX(x->r.st.total, x->r.st.walked);
	job_stats_t fin = x->r.st;
	pthread_mutex_unlock(&x->r.mu);
	log_info("%s %s %s -> %s%s%s%s: %s: %llu objects, %llu sent (%llu bytes), %llu errors%s%s", x->r.kind, x->r.id,
		 x->src, x->dst, x->etl[0] ? " through " : "", x->etl, x->dry ? " (dry run)" : "",
		 job_state_name(fin.state), (unsigned long long)fin.walked, (unsigned long long)fin.moved,
		 (unsigned long long)fin.moved_bytes, (unsigned long long)fin.errors, x->halt[0] ? ": " : "", x->halt);
	jtruns_end(&runs, &x->r, &fin);
	xrun_free(x);
	httpc_sync_release();
	return NULL;
}

/* The registry's start (both kinds; arg: the kind's name): spec as
 * xcopy_spec_check, with "bucket":SRC and "to":DST (the gateway checked
 * both buckets). */
static int kind_start(void *arg, const char *id, json_t *spec, bool resume, buf_t *err)
{
	(void)resume;
	const char *kname = arg; /* (static: the run's kind) */
	bool etl = !strcmp(kname, "etl-bck");
	const char *src = json_string_value(json_object_get(spec, "bucket"));
	const char *dst = json_string_value(json_object_get(spec, "to"));
	if (!src || !dst || !name_bucket_valid(src, strlen(src)) || !name_bucket_valid(dst, strlen(dst)) ||
	    !strcmp(src, dst)) {
		buf_addstr(err, "value: {\"bucket\":SRC,\"to\":DST (another bucket),..}");
		return 400;
	}
	if (xcopy_spec_check(spec, etl, err) != 0)
		return 400;
	struct xrun *x = xcalloc(1, sizeof(*x));
	jtrun_init(&x->r, kname, id);
	snprintf(x->src, sizeof(x->src), "%s", src);
	snprintf(x->dst, sizeof(x->dst), "%s", dst);
	json_t *pfx = json_object_get(spec, "prefix"), *tpl = json_object_get(spec, "template");
	json_t *en = json_object_get(spec, "etl"), *ea = json_object_get(spec, "etl_args");
	x->prefix = xstrdup(pfx ? json_string_value(pfx) : "");
	x->dry = json_is_true(json_object_get(spec, "dry_run"));
	x->coer = !json_is_false(json_object_get(spec, "coer"));
	snprintf(x->etl, sizeof(x->etl), "%s", en ? json_string_value(en) : "");
	x->etl_args = xstrdup(ea ? json_string_value(ea) : "");
	x->tpl_src = xstrdup(tpl ? json_string_value(tpl) : "");
	if (x->tpl_src[0])
		name_tpl_parse(x->tpl_src, &x->tpl); /* (checked) */
	xcopy_ext_parse(json_object_get(spec, "ext"), &x->ext, NULL);
	int rc = jtruns_start(&runs, &x->r, src, spec, run, x, err);
	if (rc)
		xrun_free(x);
	return rc;
}

static void kind_stop(void *arg, const char *id)
{
	jtruns_abort(&runs, arg, id);
}

static bool kind_progress(void *arg, const char *id, job_stats_t *out)
{
	(void)arg;
	return jtruns_progress(&runs, id, out);
}

static char kcopy[] = "copy-bck", ketl[] = "etl-bck";
static const jreg_kind_t kinds[] = {
	{.name = kcopy, .arg = kcopy, .start = kind_start, .stop = kind_stop, .progress = kind_progress,
	 .resumes = true},
	{.name = ketl, .arg = ketl, .start = kind_start, .stop = kind_stop, .progress = kind_progress,
	 .resumes = true},
};

void xcopy_register(struct cluster *cl, store_t *store)
{
	xcl = cl;
	xstore = store;
	jtruns_open(&runs);
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		jreg_register(&kinds[i]);
}

void xcopy_stop(void) { jtruns_stop(&runs); }
