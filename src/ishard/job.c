/*
 * job.c - the ishard job of a target (kind "ishard"; ishard.h has the
 * rules): the plan computed from the listing the gateway handed every
 * target, and each shard this target owns in DST built into a temporary
 * file (members read from the store, or fetched from their owners: io.c),
 * compressed when its name says .tgz, and PUT to DST's owner as a
 * client's write. Runs go on at once, each on its own thread, with
 * progress and stop.
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
#include "aisd/tarw.h"
#include "aisd/tgzw.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "aisd/banned.h"

struct irun {
	jtrun_t r; /* id, stats, abort (jobreg.h) */
	char src[NAME_BUCKET_MAX + 1], dst[NAME_BUCKET_MAX + 1];
	json_t *spec;
};

static struct cluster *icl;
static store_t *istore;
static jtruns_t runs = JTRUNS_INIT;

static void fail(struct irun *x, const char *name, const char *why)
{
	pthread_mutex_lock(&x->r.mu);
	x->r.st.errors++;
	snprintf(x->r.st.last_error, sizeof(x->r.st.last_error), "%.100s: %.140s", name, why);
	pthread_mutex_unlock(&x->r.mu);
}

/* Appends member m's data to f (io.c). false (x's error set) when it
 * cannot be had or its size changed since the listing. */
static bool member(struct irun *x, const ishard_member_t *m, FILE *f)
{
	char why[200];
	uint64_t n;
	if (ishard_fetch(icl, istore, x->src, m->name, f, &x->r.abort, "ishard", &n, why, sizeof(why)) != 0) {
		fail(x, m->name, why);
		return false;
	}
	if (n != m->size) {
		fail(x, m->name, "its size changed since the listing");
		return false;
	}
	return true;
}

/* Builds shard i of p and PUTs it to DST's owner. */
static void shard(struct irun *x, const ishard_plan_t *p, size_t i, const char *name)
{
	const ishard_shard_t *sh = &p->shards[i];
	FILE *f = tmpfile();
	if (!f) {
		fail(x, name, "cannot make a temporary file");
		return;
	}
	buf_t h = BUF_INIT;
	bool ok = true;
	uint64_t files = 0;
	for (size_t k = 0; k < sh->n && ok && !atomic_load(&x->r.abort); k++) {
		const ishard_sample_t *s = &p->samples[p->order[sh->first + k]];
		for (size_t j = 0; j < s->n && ok; j++) {
			const ishard_member_t *m = &p->members[s->first + j];
			h.len = 0;
			tarw_header(&h, m->name, strlen(m->name), m->size, 0);
			ok = fwrite(h.ptr, 1, h.len, f) == h.len && member(x, m, f);
			h.len = 0;
			tarw_pad(&h, m->size);
			ok = ok && fwrite(h.ptr, 1, h.len, f) == h.len;
			files++;
		}
	}
	h.len = 0;
	tarw_end(&h);
	ok = ok && !atomic_load(&x->r.abort) && fwrite(h.ptr, 1, h.len, f) == h.len && fflush(f) == 0;
	buf_free(&h);
	FILE *out = f, *z = NULL;
	if (ok && tgzw_is_tgz(name, strlen(name))) { /* a .tgz: the tar compressed (tgzw.h) */
		buf_t err = BUF_INIT;
		z = tmpfile();
		ok = z && tgzw_compress(fileno(f), (uint64_t)ftell(f), z, &err) == AIS_OK;
		if (!ok)
			fail(x, name, err.ptr ? err.ptr : "cannot make a temporary file");
		buf_free(&err);
		out = z;
	}
	char why[200];
	if (ok && ishard_put(icl, x->dst, name, out, NULL, &x->r.abort, "ishard", why, sizeof(why)) == 0) {
		pthread_mutex_lock(&x->r.mu);
		x->r.st.moved++;
		x->r.st.moved_bytes += (uint64_t)ftell(out);
		x->r.st.walked += files;
		pthread_mutex_unlock(&x->r.mu);
	} else if (ok) {
		fail(x, name, why);
	}
	if (z)
		fclose(z);
	fclose(f);
}

static void *run(void *arg)
{
	struct irun *x = arg;
	ishard_plan_t p;
	buf_t err = BUF_INIT;
	char name[ISHARD_NAME_MAX + 1];
	log_set_action("ishard");
	if (ishard_plan(x->spec, &p, &err) != 0) {
		fail(x, x->src, err.ptr ? err.ptr : "bad spec");
	} else {
		/* both buckets in the BMD (a resumed run may start before it came) */
		for (int k = 0; k < 150 && !atomic_load(&x->r.abort); k++) {
			cluster_where_t a, b;
			cluster_where(icl, sv_from(x->src), SV("x"), true, &a, NULL, 0);
			cluster_where(icl, sv_from(x->dst), SV("x"), true, &b, NULL, 0);
			if (a.bucket && b.bucket)
				break;
			usleep(200 * 1000);
		}
		size_t mine = 0;
		for (size_t i = 0; i < p.nshards; i++) {
			cluster_where_t d;
			ishard_name(p.tpl, i, name);
			cluster_where(icl, sv_from(x->dst), sv_from(name), true, &d, NULL, 0);
			mine += d.self == 0;
		}
		pthread_mutex_lock(&x->r.mu);
		x->r.st.total = mine;
		pthread_mutex_unlock(&x->r.mu);
		for (size_t i = 0; i < p.nshards && !atomic_load(&x->r.abort); i++) {
			cluster_where_t d;
			ishard_name(p.tpl, i, name);
			cluster_where(icl, sv_from(x->dst), sv_from(name), true, &d, NULL, 0);
			if (d.self == 0)
				shard(x, &p, i, name);
		}
		ishard_plan_free(&p);
	}
	buf_free(&err);
	xs_release();
	pthread_mutex_lock(&x->r.mu);
	x->r.st.state = atomic_load(&x->r.abort) ? JOB_ABORTED : x->r.st.errors ? JOB_FAILED : JOB_DONE;
	x->r.st.end_ns = time_now_ns();
	job_stats_t fin = x->r.st;
	pthread_mutex_unlock(&x->r.mu);
	log_info("ishard %s %s -> %s: %s: %llu shards (%llu bytes) of %llu, %llu files, %llu errors", x->r.id, x->src,
		 x->dst, job_state_name(fin.state), (unsigned long long)fin.moved, (unsigned long long)fin.moved_bytes,
		 (unsigned long long)fin.total, (unsigned long long)fin.walked, (unsigned long long)fin.errors);
	jtruns_end(&runs, &x->r, &fin);
	pthread_mutex_destroy(&x->r.mu);
	json_decref(x->spec);
	free(x);
	httpc_sync_release();
	return NULL;
}

/* The registry's start: the gateway's spec (ishard.h), with "bucket",
 * "to" and the listing "objects". */
static int kind_start(void *arg, const char *id, json_t *spec, bool resume, buf_t *err)
{
	(void)arg;
	(void)resume;
	const char *src = json_string_value(json_object_get(spec, "bucket"));
	const char *dst = json_string_value(json_object_get(spec, "to"));
	if (!src || !dst || !name_bucket_valid(src, strlen(src)) || !name_bucket_valid(dst, strlen(dst)) ||
	    !strcmp(src, dst) || !json_is_array(json_object_get(spec, "objects"))) {
		buf_addstr(err, "ishard: value wants \"bucket\":SRC,\"to\":DST (another bucket) and the listing");
		return 400;
	}
	int rc = ishard_spec_check(spec, err);
	if (rc)
		return rc;
	struct irun *x = xcalloc(1, sizeof(*x));
	jtrun_init(&x->r, "ishard", id);
	snprintf(x->src, sizeof(x->src), "%s", src);
	snprintf(x->dst, sizeof(x->dst), "%s", dst);
	x->spec = json_deep_copy(spec);
	json_object_del(x->spec, "id");
	rc = jtruns_start(&runs, &x->r, src, x->spec, run, x, err);
	if (rc) {
		pthread_mutex_destroy(&x->r.mu);
		json_decref(x->spec);
		free(x);
	}
	return rc;
}

static const jreg_kind_t kind = {
	.name = "ishard", .arg = &runs, .start = kind_start, .stop = jtruns_kind_stop,
	.progress = jtruns_kind_progress, .resumes = true};

void ishard_register(struct cluster *cl, store_t *store)
{
	icl = cl;
	istore = store;
	jtruns_open(&runs);
	jreg_register(&kind);
}

void ishard_stop(void) { jtruns_stop(&runs); }
