/*
 * copy.c - the copy-bck job of a target: SRC's objects this target owns,
 * each sent to DST's owner as a client's PUT, so DST's copies and erasure
 * coding hold (xcopy.h has the rules). A kind of the job registry: runs
 * of it go on at once, each on its own thread, with progress and stop.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/cluster.h"
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
#define BMD_WAIT_MS 30000 /* how long a run waits for its buckets in the BMD */

struct xrun {
	char id[JREG_ID_MAX + 1];
	char src[NAME_BUCKET_MAX + 1], dst[NAME_BUCKET_MAX + 1];
	char *prefix;
	bool dry;
	pthread_mutex_t mu; /* st */
	job_stats_t st;
	atomic_bool abort;
	struct xrun *next;
	/* the walk's page (the run's thread only) */
	char **names;
	size_t n;
};

static struct cluster *xcl;
static store_t *xstore;
static pthread_mutex_t runs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct xrun *runs; /* under runs_mu */
static atomic_bool stopping;

static void page_add(void *arg, const char *name, size_t len, const store_meta_t *m)
{
	(void)m;
	struct xrun *x = arg;
	x->names = xrealloc(x->names, (x->n + 1) * sizeof(*x->names));
	x->names[x->n++] = xstrndup(name, len);
}

static void page_free(struct xrun *x)
{
	for (size_t i = 0; i < x->n; i++)
		free(x->names[i]);
	free(x->names);
	x->names = NULL;
	x->n = 0;
}

static void fail(struct xrun *x, const char *name, const char *why)
{
	pthread_mutex_lock(&x->mu);
	x->st.errors++;
	snprintf(x->st.last_error, sizeof(x->st.last_error), "%.100s: %.140s", name, why);
	pthread_mutex_unlock(&x->mu);
}

/* One object of SRC: sent (or counted, dry) when this target owns it. */
static void one(struct xrun *x, const char *name)
{
	cluster_where_t w, d;
	size_t nlen = strlen(name);
	cluster_where(xcl, sv_from(x->src), (sv_t){name, nlen}, true, &w, NULL, 0);
	pthread_mutex_lock(&x->mu);
	x->st.walked++;
	pthread_mutex_unlock(&x->mu);
	if (w.self != 0)
		return; /* its owner sends it */
	store_meta_t m;
	int fd;
	if (store_open_obj(xstore, x->src, strlen(x->src), name, nlen, &fd, &m) != AIS_OK) {
		if (errno != ENOENT) /* deleted since the listing: nothing to copy */
			fail(x, name, strerror(errno));
		return;
	}
	pthread_mutex_lock(&x->mu);
	x->st.walked_bytes += m.size;
	if (x->dry)
		x->st.moved++; /* would send */
	pthread_mutex_unlock(&x->mu);
	if (x->dry) {
		close(fd);
		return;
	}
	cluster_where(xcl, sv_from(x->dst), (sv_t){name, nlen}, false, &d, NULL, 0);
	if (!d.n || !d.owner_intra[0]) {
		close(fd);
		fail(x, name, "no active target holds the destination");
		return;
	}
	buf_t url = BUF_INIT, rh = BUF_INIT, msg = BUF_INIT;
	buf_addf(&url, "%s/v1/objects/%s/", d.owner_intra, x->dst);
	buf_add_pct(&url, (sv_t){name, nlen}, true);
	int status = 0;
	bool sent = true;
	int rc = xs_put_file(url.ptr, NULL, fd, m.size, SEND_TIMEOUT_MS, &status, &sent, &rh, &msg);
	close(fd);
	if (rc == AIS_OK && status == 200) {
		pthread_mutex_lock(&x->mu);
		x->st.moved++;
		x->st.moved_bytes += m.size;
		pthread_mutex_unlock(&x->mu);
	} else {
		char why[200];
		snprintf(why, sizeof(why), "%s%d %.150s", rc == AIS_OK ? "HTTP " : "", status,
			 msg.ptr ? msg.ptr : "no answer");
		fail(x, name, why);
	}
	buf_free(&url);
	buf_free(&rh);
	buf_free(&msg);
}

/* Both buckets in this target's BMD: a resumed run may start before the
 * BMD came from the primary, a fresh one just before it came here. */
static bool buckets_known(struct xrun *x)
{
	for (int64_t until = time_mono_ns() + (int64_t)BMD_WAIT_MS * 1000000; !atomic_load(&x->abort);) {
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
	log_set_action("copy-bck");
	if (!more && !atomic_load(&x->abort))
		fail(x, x->dst, "the source or the destination is not in this target's bucket metadata");
	while (more && !atomic_load(&x->abort)) {
		page_free(x);
		size_t alen = after ? strlen(after) : 0;
		if (store_list(xstore, x->src, strlen(x->src), x->prefix, strlen(x->prefix), after ? after : "", alen,
			       PAGE, page_add, x, &more) != AIS_OK) {
			if (errno != ENOENT) /* no object of SRC here: nothing to copy */
				fail(x, x->src, "listing the source");
			break;
		}
		pthread_mutex_lock(&x->mu);
		x->st.total = MAX(x->st.total, x->st.walked + x->n);
		pthread_mutex_unlock(&x->mu);
		for (size_t i = 0; i < x->n && !atomic_load(&x->abort); i++)
			one(x, x->names[i]);
		if (!x->n)
			break;
		free(after);
		after = xstrdup(x->names[x->n - 1]);
	}
	page_free(x);
	free(after);
	xs_release();
	pthread_mutex_lock(&x->mu);
	x->st.state = atomic_load(&x->abort) ? JOB_ABORTED : x->st.errors ? JOB_FAILED : JOB_DONE;
	x->st.end_ns = time_now_ns();
	x->st.total = MAX(x->st.total, x->st.walked);
	job_stats_t fin = x->st;
	pthread_mutex_unlock(&x->mu);
	log_info("copy-bck %s %s -> %s%s: %s: %llu objects, %llu sent (%llu bytes), %llu errors", x->id, x->src,
		 x->dst, x->dry ? " (dry run)" : "", job_state_name(fin.state), (unsigned long long)fin.walked,
		 (unsigned long long)fin.moved, (unsigned long long)fin.moved_bytes, (unsigned long long)fin.errors);
	if (!atomic_load(&stopping))
		jreg_end(x->id, &fin);
	pthread_mutex_lock(&runs_mu);
	for (struct xrun **p = &runs; *p; p = &(*p)->next)
		if (*p == x) {
			*p = x->next;
			break;
		}
	pthread_mutex_unlock(&runs_mu);
	pthread_mutex_destroy(&x->mu);
	free(x->prefix);
	free(x);
	httpc_sync_release();
	return NULL;
}

/* The registry's start: spec {"bucket":SRC,"to":DST,"prefix","dry_run"}
 * (the gateway checked both buckets). */
static int kind_start(void *arg, const char *id, json_t *spec, bool resume, buf_t *err)
{
	(void)arg;
	(void)resume;
	const char *src = json_string_value(json_object_get(spec, "bucket"));
	const char *dst = json_string_value(json_object_get(spec, "to"));
	json_t *pfx = json_object_get(spec, "prefix"), *dry = json_object_get(spec, "dry_run");
	if (!src || !dst || !name_bucket_valid(src, strlen(src)) || !name_bucket_valid(dst, strlen(dst)) ||
	    !strcmp(src, dst) || (pfx && !json_is_string(pfx)) || (dry && !json_is_boolean(dry))) {
		buf_addstr(err, "value: {\"bucket\":SRC,\"to\":DST (another bucket),\"prefix\":\"..\",\"dry_run\":bool}");
		return 400;
	}
	struct xrun *x = xcalloc(1, sizeof(*x));
	snprintf(x->id, sizeof(x->id), "%s", id);
	snprintf(x->src, sizeof(x->src), "%s", src);
	snprintf(x->dst, sizeof(x->dst), "%s", dst);
	x->prefix = xstrdup(pfx ? json_string_value(pfx) : "");
	x->dry = json_is_true(dry);
	pthread_mutex_init(&x->mu, NULL);
	x->st.state = JOB_RUNNING;
	x->st.start_ns = time_now_ns();
	x->st.runs = 1;
	json_t *keep = json_deep_copy(spec);
	json_object_del(keep, "id");
	jreg_begin("copy-bck", id, src, keep);
	json_decref(keep);
	pthread_mutex_lock(&runs_mu);
	x->next = runs;
	runs = x;
	pthread_mutex_unlock(&runs_mu);
	pthread_t th;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&th, &a, run, x);
	pthread_attr_destroy(&a);
	if (rc != 0) {
		pthread_mutex_lock(&runs_mu);
		runs = x->next; /* (no run ends before its own start) */
		pthread_mutex_unlock(&runs_mu);
		x->st.state = JOB_FAILED;
		snprintf(x->st.last_error, sizeof(x->st.last_error), "cannot start a thread");
		jreg_end(id, &x->st);
		pthread_mutex_destroy(&x->mu);
		free(x->prefix);
		free(x);
		buf_addstr(err, "cannot start a thread");
		return 503;
	}
	return 0;
}

static void kind_stop(void *arg, const char *id)
{
	(void)arg;
	pthread_mutex_lock(&runs_mu);
	for (struct xrun *x = runs; x; x = x->next)
		if (!id || !strcmp(id, x->id))
			atomic_store(&x->abort, true);
	pthread_mutex_unlock(&runs_mu);
}

static bool kind_progress(void *arg, const char *id, job_stats_t *out)
{
	(void)arg;
	bool found = false;
	pthread_mutex_lock(&runs_mu);
	for (struct xrun *x = runs; x && !found; x = x->next)
		if (!strcmp(id, x->id)) {
			pthread_mutex_lock(&x->mu);
			*out = x->st;
			pthread_mutex_unlock(&x->mu);
			found = true;
		}
	pthread_mutex_unlock(&runs_mu);
	return found;
}

static const jreg_kind_t kind = {
	.name = "copy-bck", .start = kind_start, .stop = kind_stop, .progress = kind_progress, .resumes = true};

void xcopy_register(struct cluster *cl, store_t *store)
{
	xcl = cl;
	xstore = store;
	atomic_store(&stopping, false);
	jreg_register(&kind);
}

void xcopy_stop(void)
{
	atomic_store(&stopping, true);
	kind_stop(NULL, NULL);
	for (int k = 0; k < 300; k++) { /* a run ends between objects */
		pthread_mutex_lock(&runs_mu);
		bool r = runs != NULL;
		pthread_mutex_unlock(&runs_mu);
		if (!r)
			break;
		usleep(10000);
	}
}
