/*
 * commit.c - the commit and the undo of a dsort run (dsort.h rules 5 and
 * 6): once every target has built its output shards (the barrier
 * ?stage=built), each shard is committed as a client's write tagged
 * DSORT_TAG=ID (COMMIT_THREADS at once): one built in place (a staged
 * write of the object layer) by its rename, one in the spool by a PUT to
 * DST's owner; the run is done only when
 * every peer confirms its commits (?stage=committed, job.c). A failed run
 * deletes through the object layer (every copy) the shards it committed
 * and, once past the barrier or when started again after a restart, every
 * object of DST this target holds that carries the run's tag.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "aisd/cluster.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "dsort_int.h"
#include "aisd/banned.h"

#define PUT_RETRY_MS 30000 /* a PUT retried this long while the owner is away */

/* PUTs [off, off+len) of fd to DST/name's owner as a client's write. */
static bool put_shard(struct drun *x, const char *name, int fd, uint64_t off, uint64_t len)
{
	int64_t until = time_mono_ns() + (int64_t)PUT_RETRY_MS * 1000000;
	for (int k = 0;; k++) { /* the destination's owner may be restarting: again */
		cluster_where_t d;
		cluster_where(dsort_denv.cl, sv_from(x->dst), sv_from(name), false, &d, NULL, 0);
		buf_t url = BUF_INIT, rh = BUF_INIT, msg = BUF_INIT;
		int status = 0, rc = AIS_ERR;
		bool sent = true;
		char tag[JREG_ID_MAX + 64];
		snprintf(tag, sizeof(tag), "Ais-Custom-Md: " DSORT_TAG "=%s", x->r.id);
		const char *hdrs[] = {tag, NULL};
		if (d.n && d.owner_intra[0]) {
			buf_addf(&url, "%s/v1/objects/%s/", d.owner_intra, x->dst);
			buf_add_pct(&url, sv_from(name), true);
			rc = xs_put_file_at(url.ptr, hdrs, fd, off, len, DSORT_IO_TIMEOUT_MS, &status, &sent, &rh, &msg);
		}
		char why[200];
		snprintf(why, sizeof(why), "writing the shard: %s%d %.150s", rc == AIS_OK ? "HTTP " : "", status,
			 msg.ptr ? msg.ptr : d.n ? "no answer" : "no active target");
		buf_free(&url);
		buf_free(&rh);
		buf_free(&msg);
		if (rc == AIS_OK && status == 200)
			return true;
		if ((rc == AIS_OK && status < 500) || time_mono_ns() > until || atomic_load(&x->r.abort)) {
			dsort_fail(x, name, why);
			return false;
		}
		if (k == 0)
			log_warnx("dsort %s: %s: %s (trying again)", x->r.id, name, why);
		usleep(300 * 1000);
	}
}

/* Commits output shard name built in place (st, len bytes): the object
 * layer's rename, tagged; when this target is no longer its owner (the map
 * changed) or its copies missed the write quorum, its bytes are PUT to the
 * owner instead, as a spooled one's. */
static bool commit_staged(struct drun *x, void *st, const char *name, uint64_t len)
{
	char tag[JREG_ID_MAX + 64];
	buf_t why = BUF_INIT;
	snprintf(tag, sizeof(tag), DSORT_TAG "=%s", x->r.id);
	bool ok = dsort_denv.stage_commit(st, tag, &why) == AIS_OK;
	if (!ok) {
		int fd = dsort_denv.stage_fd(st);
		if (fd >= 0) {
			log_info("dsort %s: %s/%s: not committed in place (%s): PUT to its owner", x->r.id, x->dst, name,
				 why.len ? why.ptr : "?");
			ok = put_shard(x, name, fd, 0, len);
			close(fd);
		} else {
			dsort_fail(x, name, why.len ? why.ptr : "committing it in place");
		}
	}
	buf_free(&why);
	return ok;
}

/* debug.dsort_commit_pause: a test hook, before each commit (a stop
 * still ends it). */
static void debug_pause(struct drun *x)
{
	for (uint64_t w = 0; w < MIN(dsort_denv.pause_ms, 60000) && !atomic_load(&x->r.abort); w += 20)
		usleep(20 * 1000);
}

/* The committers: COMMIT_THREADS PUTs at once (one with the debug pause),
 * so that one shard's bytes leave the spool while another's land. */
#define COMMIT_THREADS 3

struct committers {
	struct drun *x;
	pthread_mutex_t mu; /* next, x->written */
	size_t next;
};

static void *commit_main(void *arg)
{
	struct committers *c = arg;
	struct drun *x = c->x;
	for (;;) {
		pthread_mutex_lock(&c->mu);
		size_t i = c->next++;
		json_t *e = json_array_get(x->built, i);
		pthread_mutex_unlock(&c->mu);
		if (!e || dsort_failed(x))
			break;
		const char *name = json_string_value(json_array_get(e, 0));
		uint64_t off = (uint64_t)json_integer_value(json_array_get(e, 1));
		uint64_t len = (uint64_t)json_integer_value(json_array_get(e, 2));
		debug_pause(x);
		if (!(x->stage[i] ? commit_staged(x, x->stage[i], name, len) : put_shard(x, name, x->spfd, off, len)))
			break;
		pthread_mutex_lock(&c->mu);
		json_array_append_new(x->written, json_string(name));
		pthread_mutex_unlock(&c->mu);
		pthread_mutex_lock(&x->r.mu);
		x->r.st.moved++;
		x->r.st.moved_bytes += len;
		pthread_mutex_unlock(&x->r.mu);
	}
	return NULL;
}

static void *committer(void *arg)
{
	commit_main(arg);
	xs_release();
	return NULL;
}

void dsort_commit(struct drun *x)
{
	struct committers c = {.x = x};
	pthread_t th[COMMIT_THREADS];
	int n = 0;
	pthread_mutex_init(&c.mu, NULL);
	for (int i = 1; i < COMMIT_THREADS && !dsort_denv.pause_ms && i < (int)json_array_size(x->built); i++)
		if (pthread_create(&th[n], NULL, committer, &c) == 0)
			n++;
	commit_main(&c); /* (this thread's connections go at the run's end) */
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&c.mu);
}

/* Is custom metadata cm ("k=v,k=v") tagged with run id (rule 6)? */
static bool tagged(const char *cm, const char *id)
{
	size_t tl = strlen(DSORT_TAG), il = strlen(id);
	for (const char *p = cm; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, DSORT_TAG, tl) && p[tl] == '=' && !strncmp(p + tl + 1, id, il) &&
		    (p[tl + 1 + il] == ',' || !p[tl + 1 + il]))
			return true;
	return false;
}

struct sweep {
	const char *id;
	json_t *names; /* this run's, found here */
	char last[NAME_OBJECT_MAX + 1];
	size_t n;
};

static void sweep_one(void *arg, const char *name, size_t len, const store_meta_t *m)
{
	struct sweep *w = arg;
	snprintf(w->last, sizeof(w->last), "%.*s", (int)len, name);
	w->n++;
	if (tagged(m->custom, w->id))
		json_array_append_new(w->names, json_stringn(name, len));
}

/* Deletes DST/nm through the object layer (every copy). */
static void undo_one(struct drun *x, const char *nm)
{
	buf_t why = BUF_INIT;
	if (dsort_denv.del(dsort_denv.arg, x->dst, nm, &why) < 0)
		log_warnx("dsort %s: removing %s/%s of the failed run: %s", x->r.id, x->dst, nm,
			  why.len ? why.ptr : "not every copy");
	buf_free(&why);
}

/* Rule 6: the output shards of a failed run go: those this run wrote, and,
 * once it was past the barrier (or started again after a restart), every
 * object of DST this target holds that carries the run's tag (a peer's
 * commits, and a former self's). */
void dsort_undo(struct drun *x)
{
	json_t *e;
	size_t i;
	json_array_foreach(x->written, i, e) undo_one(x, json_string_value(e));
	if (!x->committing && !x->resumed)
		return;
	struct sweep w = {.id = x->r.id, .names = json_array()};
	for (bool more = true; more;) {
		size_t before = w.n;
		more = false;
		if (store_list_objects(dsort_denv.store, x->dst, strlen(x->dst), "", 0, w.last, strlen(w.last), 1000, false,
				       sweep_one, &w, &more) != AIS_OK ||
		    w.n == before)
			break;
	}
	json_array_foreach(w.names, i, e) undo_one(x, json_string_value(e));
	if (json_array_size(w.names))
		log_info("dsort %s: %zu output shards of the failed run removed from %s", x->r.id,
			 json_array_size(w.names), x->dst);
	json_decref(w.names);
}
