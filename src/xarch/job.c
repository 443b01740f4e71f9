/*
 * job.c - the archive job of a target (kind "archive"; xarch.h has the
 * rules): the target that owns the shard builds it in a temporary file
 * (the old shard first when appending, cut before its end blocks; then
 * each member read here or fetched from its owner: ishard's io.c),
 * compresses it when its name says .tgz and PUTs it to itself as a
 * client's write, marked with the run's id; every other target ends its
 * run at once. A run has its id, progress (members and bytes) and stop; a
 * run a restart cut resumes under its id (rule 6).
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
#include "aisd/ishard.h"
#include "aisd/jobreg.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/tar.h"
#include "aisd/tarw.h"
#include "aisd/tgzw.h"
#include "aisd/util.h"
#include "aisd/xarch.h"
#include "aisd/xp.h"
#include "aisd/banned.h"

struct xrun {
	jtrun_t r; /* id, stats, abort (jobreg.h) */
	char src[NAME_BUCKET_MAX + 1], dst[NAME_BUCKET_MAX + 1];
	json_t *spec;
	bool resumed; /* started again by a restart (rule 6) */
};

static struct cluster *xcl;
static store_t *xstore;
static uint64_t pause_ms; /* debug.archive_pause: a test hook */
static uint64_t max_body; /* net.max_body: an appended .tgz inflates to at most this */
static jtruns_t runs = JTRUNS_INIT;

static void fail(struct xrun *x, const char *name, const char *why)
{
	pthread_mutex_lock(&x->r.mu);
	x->r.st.errors++;
	snprintf(x->r.st.last_error, sizeof(x->r.st.last_error), "%.100s: %.140s", name, why);
	pthread_mutex_unlock(&x->r.mu);
}

/* Rule 3: the shard as it is (a .tgz: inflated back to its tar) into f,
 * cut before its end-of-archive blocks, f positioned there. true when f
 * holds it or it is absent. */
static bool old_shard(struct xrun *x, const char *arch, FILE *f)
{
	char why[200];
	uint64_t n;
	bool tgz = xarch_is_tgz(x->spec);
	FILE *g = tgz ? tmpfile() : f; /* where the shard's bytes land */
	if (!g) {
		fail(x, arch, "cannot make a temporary file");
		return false;
	}
	int rc = ishard_fetch(xcl, xstore, x->dst, arch, g, &x->r.abort, "archive", &n, why, sizeof(why));
	if (rc == 404) {
		if (tgz)
			fclose(g);
		rewind(f);
		return ftruncate(fileno(f), 0) == 0;
	}
	if (rc != 0 || fflush(g) != 0) {
		fail(x, arch, rc ? why : strerror(errno));
		if (tgz)
			fclose(g);
		return false;
	}
	if (tgz) {
		buf_t err = BUF_INIT;
		uint64_t zn = n;
		rc = tgzw_decompress(fileno(g), zn, max_body, f, &n, &err);
		fclose(g);
		if (rc != AIS_OK) {
			snprintf(why, sizeof(why), "%.150s (nothing appended)", err.ptr);
			fail(x, arch, why);
		}
		buf_free(&err);
		if (rc != AIS_OK)
			return false;
	}
	tar_iter_t it;
	tar_member_t m;
	tar_iter_init(&it, fileno(f), n);
	while ((rc = tar_iter_next(&it, &m)) == AIS_OK)
		;
	if (rc != AIS_DONE) {
		snprintf(why, sizeof(why), "not a tar shard (nothing appended): %.120s", it.err);
		fail(x, arch, why);
	} else if (ftruncate(fileno(f), (off_t)it.pos) != 0 || fseek(f, (long)it.pos, SEEK_SET) != 0) {
		fail(x, arch, strerror(errno));
		rc = AIS_ERR;
	}
	tar_iter_free(&it);
	return rc == AIS_DONE;
}

/* Appends one member (header, data, padding) of object name of size
 * bytes to f, named in the shard as tname. */
static bool member(struct xrun *x, const char *name, uint64_t size, const char *tname, FILE *f, buf_t *h)
{
	char why[200];
	uint64_t n;
	h->len = 0;
	tarw_header(h, tname, strlen(tname), size, time_now_ns() / 1000000000);
	if (fwrite(h->ptr, 1, h->len, f) != h->len) {
		fail(x, name, strerror(errno));
		return false;
	}
	if (ishard_fetch(xcl, xstore, x->src, name, f, &x->r.abort, "archive", &n, why, sizeof(why)) != 0) {
		fail(x, name, why);
		return false;
	}
	if (n != size) {
		fail(x, name, "its size changed since the listing");
		return false;
	}
	if (pause_ms) /* debug.archive_pause: a window for a test to cut the run */
		usleep((useconds_t)MIN(pause_ms, 10000) * 1000);
	h->len = 0;
	tarw_pad(h, size);
	if (fwrite(h->ptr, 1, h->len, f) != h->len) {
		fail(x, name, strerror(errno));
		return false;
	}
	pthread_mutex_lock(&x->r.mu);
	x->r.st.walked++;
	x->r.st.moved_bytes += size;
	pthread_mutex_unlock(&x->r.mu);
	return true;
}

/* Builds the shard (rules 1-5) and PUTs it. */
static void build(struct xrun *x, const char *arch)
{
	json_t *objs = json_object_get(x->spec, "objects"), *e;
	bool incl = json_is_true(json_object_get(x->spec, "inclsrcname"));
	FILE *f = tmpfile(), *z = NULL, *out;
	buf_t h = BUF_INIT, tn = BUF_INIT, err = BUF_INIT;
	size_t i;
	char why[200];
	if (!f) {
		fail(x, arch, "cannot make a temporary file");
		return;
	}
	bool ok = !json_is_true(json_object_get(x->spec, "append")) || old_shard(x, arch, f);
	json_array_foreach(objs, i, e) {
		if (!ok || atomic_load(&x->r.abort))
			break;
		const char *name = json_string_value(json_array_get(e, 0));
		tn.len = 0;
		if (incl)
			buf_addf(&tn, "%s/", x->src);
		buf_addstr(&tn, name);
		ok = member(x, name, (uint64_t)json_integer_value(json_array_get(e, 1)), tn.ptr, f, &h);
	}
	h.len = 0;
	tarw_end(&h);
	ok = ok && !atomic_load(&x->r.abort) && fwrite(h.ptr, 1, h.len, f) == h.len && fflush(f) == 0;
	out = f;
	if (ok && xarch_is_tgz(x->spec)) {
		z = tmpfile();
		ok = z && tgzw_compress(fileno(f), (uint64_t)ftell(f), z, &err) == AIS_OK;
		if (!ok)
			fail(x, arch, err.ptr ? err.ptr : "cannot make a temporary file");
		out = z;
	}
	char mark[JREG_ID_MAX + 32];
	snprintf(mark, sizeof(mark), "%s=%s", XARCH_RUN_KEY, x->r.id);
	if (ok && ishard_put(xcl, x->dst, arch, out, mark, &x->r.abort, "archive", why, sizeof(why)) == 0) {
		pthread_mutex_lock(&x->r.mu);
		x->r.st.moved++;
		pthread_mutex_unlock(&x->r.mu);
	} else if (ok) {
		fail(x, arch, why);
	}
	if (z)
		fclose(z);
	fclose(f);
	buf_free(&h);
	buf_free(&tn);
	buf_free(&err);
}

/* Rule 6: did an earlier start of this run commit the shard (the shard's
 * owner, here, holds a version marked with the run's id)? */
static bool committed(struct xrun *x, const char *arch)
{
	store_meta_t m;
	if (store_lookup(xstore, x->dst, strlen(x->dst), arch, strlen(arch), &m) != AIS_OK)
		return false;
	size_t klen = strlen(XARCH_RUN_KEY), ilen = strlen(x->r.id);
	for (const char *p = m.custom; *p;) { /* "k=v,k=v" */
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == klen + 1 + ilen && !memcmp(p, XARCH_RUN_KEY, klen) && p[klen] == '=' &&
		    !memcmp(p + klen + 1, x->r.id, ilen))
			return true;
		p += len + (end != NULL);
	}
	return false;
}

static void *run(void *arg)
{
	struct xrun *x = arg;
	const char *arch = json_string_value(json_object_get(x->spec, "archname"));
	log_set_action("archive");
	cluster_where_t d = {0};
	for (int k = 0; k < 150 && !atomic_load(&x->r.abort); k++) { /* the buckets in the BMD */
		cluster_where_t a;
		cluster_where(xcl, sv_from(x->src), SV("x"), true, &a, NULL, 0);
		cluster_where(xcl, sv_from(x->dst), sv_from(arch), true, &d, NULL, 0);
		if (a.bucket && d.bucket)
			break;
		usleep(200 * 1000);
	}
	if (d.bucket && d.self == 0) { /* rule 1: the owner's run */
		pthread_mutex_lock(&x->r.mu);
		x->r.st.total = json_array_size(json_object_get(x->spec, "objects"));
		pthread_mutex_unlock(&x->r.mu);
		if (x->resumed && committed(x, arch)) { /* rule 6: cut after its commit */
			log_info("archive %s: %s/%s was committed before the restart: nothing left to do", x->r.id,
				 x->dst, arch);
			pthread_mutex_lock(&x->r.mu);
			x->r.st.walked = x->r.st.total;
			x->r.st.moved = 1;
			pthread_mutex_unlock(&x->r.mu);
		} else {
			if (x->resumed)
				log_info("archive %s: building %s/%s again (cut by a restart)", x->r.id, x->dst, arch);
			build(x, arch);
		}
	} else if (!d.bucket) {
		fail(x, x->dst, "no such bucket");
	}
	xs_release();
	pthread_mutex_lock(&x->r.mu);
	x->r.st.state = atomic_load(&x->r.abort) ? JOB_ABORTED : x->r.st.errors ? JOB_FAILED : JOB_DONE;
	x->r.st.end_ns = time_now_ns();
	job_stats_t fin = x->r.st;
	pthread_mutex_unlock(&x->r.mu);
	if (d.self == 0)
		log_info("archive %s %s -> %s/%s: %s: %llu of %llu members (%llu bytes)%s%s", x->r.id, x->src, x->dst,
			 arch, job_state_name(fin.state), (unsigned long long)fin.walked,
			 (unsigned long long)fin.total, (unsigned long long)fin.moved_bytes,
			 fin.errors ? ": " : "", fin.errors ? fin.last_error : "");
	jtruns_end(&runs, &x->r, &fin);
	pthread_mutex_destroy(&x->r.mu);
	json_decref(x->spec);
	free(x);
	httpc_sync_release();
	return NULL;
}

/* The registry's start: the gateway's spec (xarch.h) with "bucket", "to"
 * and "objects" ([[NAME,SIZE],..], archive order). */
static int kind_start(void *arg, const char *id, json_t *spec, bool resume, buf_t *err)
{
	(void)arg;
	const char *src = json_string_value(json_object_get(spec, "bucket"));
	const char *dst = json_string_value(json_object_get(spec, "to"));
	json_t *objs = json_object_get(spec, "objects"), *e;
	size_t i;
	bool ok = src && dst && name_bucket_valid(src, strlen(src)) && name_bucket_valid(dst, strlen(dst)) &&
		  json_is_array(objs);
	json_array_foreach(objs, i, e) ok = ok && json_is_string(json_array_get(e, 0)) &&
					    json_integer_value(json_array_get(e, 1)) >= 0;
	if (!ok) {
		buf_addstr(err, "archive: value wants \"bucket\":SRC,\"to\":DST and the listing \"objects\"");
		return 400;
	}
	int rc = xarch_spec_check(spec, err);
	if (rc)
		return rc;
	struct xrun *x = xcalloc(1, sizeof(*x));
	jtrun_init(&x->r, "archive", id);
	snprintf(x->src, sizeof(x->src), "%s", src);
	snprintf(x->dst, sizeof(x->dst), "%s", dst);
	x->spec = json_deep_copy(spec);
	x->resumed = resume;
	json_object_del(x->spec, "id");
	rc = jtruns_start(&runs, &x->r, src, x->spec, run, x, err);
	if (rc) {
		pthread_mutex_destroy(&x->r.mu);
		json_decref(x->spec);
		free(x);
	}
	return rc;
}

/* rule 6: resumed */
static const jreg_kind_t kind = {
	.name = "archive", .arg = &runs, .start = kind_start, .stop = jtruns_kind_stop,
	.progress = jtruns_kind_progress, .resumes = true};

void xarch_register(struct cluster *cl, store_t *store, const conf_t *c)
{
	xcl = cl;
	xstore = store;
	pause_ms = c->archive_pause_ms;
	max_body = c->max_body;
	jtruns_open(&runs);
	jreg_register(&kind);
}

void xarch_stop(void) { jtruns_stop(&runs); }
