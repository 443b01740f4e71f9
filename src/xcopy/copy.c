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
	jtrun_t r; /* id, stats, abort (jobreg.h) */
	char src[NAME_BUCKET_MAX + 1], dst[NAME_BUCKET_MAX + 1];
	char *prefix;
	bool dry;
	/* the walk's page (the run's thread only) */
	char **names;
	size_t n;
};

static struct cluster *xcl;
static store_t *xstore;
static jtruns_t runs = JTRUNS_INIT;

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
	pthread_mutex_lock(&x->r.mu);
	x->r.st.errors++;
	snprintf(x->r.st.last_error, sizeof(x->r.st.last_error), "%.100s: %.140s", name, why);
	pthread_mutex_unlock(&x->r.mu);
}

/* One object of SRC: sent (or counted, dry) when this target owns it. */
static void one(struct xrun *x, const char *name)
{
	cluster_where_t w, d;
	size_t nlen = strlen(name);
	cluster_where(xcl, sv_from(x->src), (sv_t){name, nlen}, true, &w, NULL, 0);
	pthread_mutex_lock(&x->r.mu);
	x->r.st.walked++;
	pthread_mutex_unlock(&x->r.mu);
	if (w.self != 0)
		return; /* its owner sends it */
	store_meta_t m;
	int fd;
	if (store_open_obj(xstore, x->src, strlen(x->src), name, nlen, &fd, &m) != AIS_OK) {
		if (errno != ENOENT) /* deleted since the listing: nothing to copy */
			fail(x, name, strerror(errno));
		return;
	}
	pthread_mutex_lock(&x->r.mu);
	x->r.st.walked_bytes += m.size;
	if (x->dry)
		x->r.st.moved++; /* would send */
	pthread_mutex_unlock(&x->r.mu);
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
		pthread_mutex_lock(&x->r.mu);
		x->r.st.moved++;
		x->r.st.moved_bytes += m.size;
		pthread_mutex_unlock(&x->r.mu);
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
	log_set_action("copy-bck");
	if (!more && !atomic_load(&x->r.abort))
		fail(x, x->dst, "the source or the destination is not in this target's bucket metadata");
	while (more && !atomic_load(&x->r.abort)) {
		page_free(x);
		size_t alen = after ? strlen(after) : 0;
		if (store_list(xstore, x->src, strlen(x->src), x->prefix, strlen(x->prefix), after ? after : "", alen,
			       PAGE, page_add, x, &more) != AIS_OK) {
			if (errno != ENOENT) /* no object of SRC here: nothing to copy */
				fail(x, x->src, "listing the source");
			break;
		}
		pthread_mutex_lock(&x->r.mu);
		x->r.st.total = MAX(x->r.st.total, x->r.st.walked + x->n);
		pthread_mutex_unlock(&x->r.mu);
		for (size_t i = 0; i < x->n && !atomic_load(&x->r.abort); i++)
			one(x, x->names[i]);
		if (!x->n)
			break;
		free(after);
		after = xstrdup(x->names[x->n - 1]);
	}
	page_free(x);
	free(after);
	xs_release();
	pthread_mutex_lock(&x->r.mu);
	x->r.st.state = atomic_load(&x->r.abort) ? JOB_ABORTED : x->r.st.errors ? JOB_FAILED : JOB_DONE;
	x->r.st.end_ns = time_now_ns();
	x->r.st.total = MAX(x->r.st.total, x->r.st.walked);
	job_stats_t fin = x->r.st;
	pthread_mutex_unlock(&x->r.mu);
	log_info("copy-bck %s %s -> %s%s: %s: %llu objects, %llu sent (%llu bytes), %llu errors", x->r.id, x->src,
		 x->dst, x->dry ? " (dry run)" : "", job_state_name(fin.state), (unsigned long long)fin.walked,
		 (unsigned long long)fin.moved, (unsigned long long)fin.moved_bytes, (unsigned long long)fin.errors);
	jtruns_end(&runs, &x->r, &fin);
	pthread_mutex_destroy(&x->r.mu);
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
	jtrun_init(&x->r, "copy-bck", id);
	snprintf(x->src, sizeof(x->src), "%s", src);
	snprintf(x->dst, sizeof(x->dst), "%s", dst);
	x->prefix = xstrdup(pfx ? json_string_value(pfx) : "");
	x->dry = json_is_true(dry);
	int rc = jtruns_start(&runs, &x->r, src, spec, run, x, err);
	if (rc) {
		pthread_mutex_destroy(&x->r.mu);
		free(x->prefix);
		free(x);
	}
	return rc;
}

static void kind_stop(void *arg, const char *id)
{
	(void)arg;
	jtruns_abort(&runs, NULL, id);
}

static bool kind_progress(void *arg, const char *id, job_stats_t *out)
{
	(void)arg;
	return jtruns_progress(&runs, id, out);
}

static const jreg_kind_t kind = {
	.name = "copy-bck", .start = kind_start, .stop = kind_stop, .progress = kind_progress, .resumes = true};

void xcopy_register(struct cluster *cl, store_t *store)
{
	xcl = cl;
	xstore = store;
	jtruns_open(&runs);
	jreg_register(&kind);
}

void xcopy_stop(void) { jtruns_stop(&runs); }
