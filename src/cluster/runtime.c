/*
 * runtime.c - the cluster as one node lives it: its current cmap and BMD,
 * their persistence in node.dir, joining the primary, accepting metasync
 * pushes, and on the primary: making new versions, pushing them, and the
 * keepalive thread that drops nodes failing their health checks.
 *
 * Invariants:
 *  1. cl->cmap and cl->bmd change only under the write lock of cl->rw, and
 *     only to a version the accept rules allow; what is installed was
 *     persisted first, so a restart never goes back.
 *  2. cl->wmu serializes every writer (metasync accept, primary update,
 *     keepalive removals): read-modify-write of the metadata never races.
 *  3. Network calls are never made under cl->rw.
 * Node states: a node in maintenance stays in the map even when it fails its
 * health checks (it may be down for maintenance); cmap_owner skips it. A
 * node that accepts a map with itself decommissioning writes
 * DIR/decommissioned and never rejoins (removing that file and restarting
 * the node undoes it).
 * The keepalive thread uses blocking HTTP (httpc_sync) with short timeouts:
 * simple, and fine at the scale of tens of nodes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aisd/cluster.h"
#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "runtime_int.h"
#include "aisd/banned.h"

static void path_of(const cluster_t *cl, const char *name, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s/%s", cl->dir, name);
}

cluster_t *cluster_new(const conf_t *c, enum cmap_role role, int port, buf_t *err)
{
	cluster_t *cl = xcalloc(1, sizeof(*cl));
	char p[1200];

	cl->conf = c;
	snprintf(cl->dir, sizeof(cl->dir), "%s", c->node_dir[0] ? c->node_dir : c->mountpaths[0]);
	if (mkdir(cl->dir, 0755) && errno != EEXIST) {
		buf_addf(err, "cannot create %s: %s", cl->dir, strerror(errno));
		free(cl);
		return NULL;
	}
	cl->self.role = role;
	cl->self.state = CMAP_ACTIVE;
	if (c->node_id[0])
		snprintf(cl->self.id, sizeof(cl->self.id), "%s", c->node_id);
	else
		snprintf(cl->self.id, sizeof(cl->self.id), "%.50s:%d", c->host, port);
	if (c->public_url[0])
		snprintf(cl->self.pub_url, sizeof(cl->self.pub_url), "%s", c->public_url);
	else
		snprintf(cl->self.pub_url, sizeof(cl->self.pub_url), "http://%.200s:%d", c->host, port);
	memcpy(cl->self.intra_url, cl->self.pub_url, sizeof(cl->self.intra_url));
	if (!cmap_id_valid(cl->self.id, strlen(cl->self.id)) ||
	    !cmap_url_valid(cl->self.pub_url, strlen(cl->self.pub_url))) {
		buf_addf(err, "invalid node id \"%s\" or URL \"%s\"", cl->self.id, cl->self.pub_url);
		free(cl);
		return NULL;
	}
	pthread_rwlock_init(&cl->rw, NULL);
	pthread_mutex_init(&cl->wmu, NULL);
	pthread_mutex_init(&cl->refresh_mu, NULL);
	pthread_mutex_init(&cl->sleep_mu, NULL);
	pthread_cond_init(&cl->sleep_cv, NULL);

	path_of(cl, "cmap.json", p, sizeof(p));
	if (cmap_load(p, &cl->cmap, err) != AIS_OK && errno != ENOENT)
		goto fail;
	path_of(cl, "bmd.json", p, sizeof(p));
	if (bmd_load(p, &cl->bmd, err) != AIS_OK && errno != ENOENT)
		goto fail;
	path_of(cl, "decommissioned", p, sizeof(p));
	if (access(p, F_OK) == 0) {
		atomic_store(&cl->decommissioned, true);
		log_warnx("this node was decommissioned: it will not join the cluster (remove %s to allow it)", p);
	}
	buf_reset(err);
	return cl;
fail:
	cluster_free(cl);
	return NULL;
}

void cluster_on_bmd(cluster_t *cl, cluster_bmd_fn fn, void *arg)
{
	cl->bmd_fn = fn;
	cl->bmd_arg = arg;
}

void cluster_on_cmap(cluster_t *cl, cluster_cmap_fn fn, void *arg)
{
	cl->cmap_fn = fn;
	cl->cmap_arg = arg;
}

void cluster_read_lock_prev(cluster_t *cl, const cmap_t **m, const cmap_t **prev, const bmd_t **b)
{
	pthread_rwlock_rdlock(&cl->rw);
	*m = cl->cmap;
	*prev = cl->prev;
	if (b)
		*b = cl->bmd;
}

void cluster_read_lock(cluster_t *cl, const cmap_t **m, const bmd_t **b)
{
	pthread_rwlock_rdlock(&cl->rw);
	if (m)
		*m = cl->cmap;
	if (b)
		*b = cl->bmd;
}

void cluster_read_unlock(cluster_t *cl) { pthread_rwlock_unlock(&cl->rw); }
const cmap_node_t *cluster_self(const cluster_t *cl) { return &cl->self; }

bool cluster_is_primary(cluster_t *cl)
{
	pthread_rwlock_rdlock(&cl->rw);
	bool p = cl->cmap && !strcmp(cmap_primary(cl->cmap), cl->self.id);
	pthread_rwlock_unlock(&cl->rw);
	return p;
}

bool cluster_primary_url(cluster_t *cl, char *out, size_t outsz)
{
	bool ok = false;
	pthread_rwlock_rdlock(&cl->rw);
	if (cl->cmap) {
		const cmap_node_t *n = cmap_get(cl->cmap, cmap_primary(cl->cmap), strlen(cmap_primary(cl->cmap)));
		if (n) {
			snprintf(out, outsz, "%s", n->pub_url);
			ok = true;
		}
	}
	pthread_rwlock_unlock(&cl->rw);
	return ok;
}

/*
 * Installs new metadata (either may be NULL: unchanged). Takes ownership.
 * Caller holds wmu. Persists first (invariant 1). On error frees them.
 */
int clu_install(cluster_t *cl, cmap_t *m, bmd_t *b, buf_t *err)
{
	char p[1200];
	if (m) {
		path_of(cl, "cmap.json", p, sizeof(p));
		if (cmap_save(m, p, err) != AIS_OK)
			goto fail;
	}
	if (b) {
		path_of(cl, "bmd.json", p, sizeof(p));
		if (bmd_save(b, p, err) != AIS_OK)
			goto fail;
	}
	pthread_rwlock_wrlock(&cl->rw);
	cmap_t *oldm = NULL;
	bmd_t *oldb = NULL;
	cmap_t *dropm = NULL;
	if (m) {
		oldm = cl->cmap, cl->cmap = m;
		dropm = oldm;
		if (oldm && place_changed(oldm, m)) { /* keep it: reads find objects not moved yet */
			dropm = cl->prev;
			cl->prev = oldm;
		}
	}
	if (b)
		oldb = cl->bmd, cl->bmd = b;
	pthread_rwlock_unlock(&cl->rw);
	if (b && cl->bmd_fn)
		cl->bmd_fn(cl->bmd_arg, oldb, b);
	if (m && cl->cmap_fn)
		cl->cmap_fn(cl->cmap_arg, oldm, m);
	if (m)
		log_info("cluster map v%llu: %zu nodes, primary %s", (unsigned long long)cmap_version(m),
			 cmap_size(m), cmap_primary(m));
	if (b)
		log_info("bucket metadata v%llu: %zu buckets", (unsigned long long)bmd_version(b), bmd_size(b));
	cmap_free(dropm);
	bmd_free(oldb);
	return AIS_OK;
fail:
	cmap_free(m);
	bmd_free(b);
	errno = EIO;
	return AIS_ERR;
}

void clu_mark_decommissioned(cluster_t *cl)
{
	char p[1200];
	if (atomic_exchange(&cl->decommissioned, true))
		return;
	path_of(cl, "decommissioned", p, sizeof(p));
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || fsync(fd)) {
		log_warnx("cannot create %s: %s (the node may rejoin after a restart)", p, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	log_warnx("the primary decommissioned this node: it leaves the cluster and will not rejoin "
		  "(remove %s and restart to allow it)", p);
}

/* The JSON of a metasync push or join answer: {"cmap":{..},"bmd":{..}}. */
void clu_encode_meta(cluster_t *cl, buf_t *out)
{
	pthread_rwlock_rdlock(&cl->rw);
	buf_addstr(out, "{\"cmap\":");
	if (cl->cmap)
		cmap_encode(cl->cmap, out);
	else
		buf_addstr(out, "null");
	buf_addstr(out, ",\"bmd\":");
	if (cl->bmd)
		bmd_encode(cl->bmd, out);
	else
		buf_addstr(out, "null");
	buf_addch(out, '}');
	pthread_rwlock_unlock(&cl->rw);
}

/* --- primary: pushing and updating ----------------------------------------- */

static struct peer *peer_of(cluster_t *cl, const char *id)
{
	for (size_t i = 0; i < cl->npeers; i++)
		if (!strcmp(cl->peers[i].id, id))
			return &cl->peers[i];
	if (cl->npeers == ARRAY_SIZE(cl->peers))
		return NULL;
	struct peer *p = &cl->peers[cl->npeers++];
	memset(p, 0, sizeof(*p));
	snprintf(p->id, sizeof(p->id), "%s", id);
	return p;
}

/* Pushes the current metadata to every node that has not acknowledged its
 * versions. Caller holds wmu. */
static void push_all(cluster_t *cl)
{
	buf_t body = BUF_INIT, resp = BUF_INIT;
	cmap_node_t *nodes;
	size_t n;
	uint64_t mv, bv;

	clu_encode_meta(cl, &body);
	pthread_rwlock_rdlock(&cl->rw);
	n = cmap_size(cl->cmap);
	nodes = xcalloc(n ? n : 1, sizeof(*nodes));
	for (size_t i = 0; i < n; i++)
		nodes[i] = *cmap_node(cl->cmap, i);
	mv = cmap_version(cl->cmap);
	bv = bmd_version(cl->bmd);
	pthread_rwlock_unlock(&cl->rw);

	for (size_t i = 0; i < n; i++) {
		if (!strcmp(nodes[i].id, cl->self.id))
			continue;
		struct peer *p = peer_of(cl, nodes[i].id);
		if (!p || (p->cmap_ver == mv && p->bmd_ver == bv))
			continue;
		char url[CMAP_URL_MAX + 32];
		int status = 0;
		static const char *const hdrs[] = {"Content-Type: application/json", NULL};
		snprintf(url, sizeof(url), "%s/v1/metasync", nodes[i].intra_url);
		buf_reset(&resp);
		if (httpc_sync("PUT", url, hdrs, body.ptr, body.len, 3000, &resp, &status) == AIS_OK &&
		    status == 200) {
			p->cmap_ver = mv;
			p->bmd_ver = bv;
		} else {
			log_warnx("metasync to %s: %s", nodes[i].id,
				  status ? (resp.ptr ? resp.ptr : "") : (resp.ptr ? resp.ptr : "no answer"));
		}
	}
	free(nodes);
	buf_free(&body);
	buf_free(&resp);
}

int cluster_update(cluster_t *cl, cluster_update_fn fn, void *arg, buf_t *err)
{
	pthread_mutex_lock(&cl->wmu);
	if (!cluster_is_primary(cl)) {
		pthread_mutex_unlock(&cl->wmu);
		buf_addstr(err, "not the primary gateway");
		errno = EPERM;
		return AIS_ERR;
	}
	pthread_rwlock_rdlock(&cl->rw);
	cmap_t *m = cmap_clone(cl->cmap);
	bmd_t *b = bmd_clone(cl->bmd);
	pthread_rwlock_unlock(&cl->rw);
	uint64_t mv = cmap_version(m), bv = bmd_version(b);
	int rc = fn(m, b, arg, err);
	if (rc == AIS_OK) {
		bool mch = cmap_version(m) != mv, bch = bmd_version(b) != bv;
		if (!mch)
			cmap_free(m), m = NULL;
		if (!bch)
			bmd_free(b), b = NULL;
		if ((m || b) && (rc = clu_install(cl, m, b, err)) == AIS_OK)
			push_all(cl);
	} else {
		int e = errno;
		cmap_free(m);
		bmd_free(b);
		errno = e;
	}
	pthread_mutex_unlock(&cl->wmu);
	return rc;
}

/* --- keepalive ------------------------------------------------------------- */

static int drop_node(cmap_t *m, bmd_t *b, void *arg, buf_t *err)
{
	return cmap_remove(m, arg, err);
}

static void primary_round(cluster_t *cl)
{
	cmap_node_t *nodes;
	size_t n;
	int64_t now = time_mono_ns();
	buf_t resp = BUF_INIT, err = BUF_INIT;

	pthread_rwlock_rdlock(&cl->rw);
	n = cmap_size(cl->cmap);
	nodes = xcalloc(n ? n : 1, sizeof(*nodes));
	for (size_t i = 0; i < n; i++)
		nodes[i] = *cmap_node(cl->cmap, i);
	pthread_rwlock_unlock(&cl->rw);

	for (size_t i = 0; i < n && !atomic_load(&cl->stop); i++) {
		if (!strcmp(nodes[i].id, cl->self.id))
			continue;
		char url[CMAP_URL_MAX + 32];
		int status = 0;
		snprintf(url, sizeof(url), "%s/v1/health", nodes[i].intra_url);
		buf_reset(&resp);
		bool ok = httpc_sync("GET", url, NULL, NULL, 0, MIN(cl->conf->keepalive_ms, 2000), &resp,
				     &status) == AIS_OK && status == 200;
		pthread_mutex_lock(&cl->wmu);
		struct peer *p = peer_of(cl, nodes[i].id);
		if (p && ok) {
			p->fail_since = 0;
		} else if (p && !p->fail_since) {
			p->fail_since = now;
			log_warnx("node %s failed its health check", nodes[i].id);
		} else if (p && nodes[i].state == CMAP_MAINTENANCE) {
			/* in maintenance: may be down on purpose; stays in the map */
		} else if (p && now - p->fail_since > (int64_t)cl->conf->grace_ms * 1000000) {
			log_warnx("node %s failed health checks for %llu ms: removing it from the cluster map",
				  nodes[i].id, (unsigned long long)cl->conf->grace_ms);
			p->fail_since = 0;
			p->cmap_ver = p->bmd_ver = 0;
			pthread_mutex_unlock(&cl->wmu);
			buf_reset(&err);
			cluster_update(cl, drop_node, nodes[i].id, &err);
			continue;
		}
		pthread_mutex_unlock(&cl->wmu);
	}
	pthread_mutex_lock(&cl->wmu);
	push_all(cl); /* nodes that missed a push, or came back */
	pthread_mutex_unlock(&cl->wmu);
	free(nodes);
	buf_free(&resp);
	buf_free(&err);
}

static void *keepalive_main(void *arg)
{
	cluster_t *cl = arg;
	log_set_action("cluster");
	while (!atomic_load(&cl->stop)) {
		if (cluster_is_primary(cl))
			primary_round(cl);
		else
			clu_join_if_needed(cl);
		pthread_mutex_lock(&cl->sleep_mu);
		if (!atomic_load(&cl->stop)) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			uint64_t ms = cl->conf->keepalive_ms;
			ts.tv_sec += (time_t)(ms / 1000);
			ts.tv_nsec += (long)(ms % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&cl->sleep_cv, &cl->sleep_mu, &ts);
		}
		pthread_mutex_unlock(&cl->sleep_mu);
	}
	httpc_sync_release();
	return NULL;
}

int cluster_start(cluster_t *cl, buf_t *err)
{
	bool has_join = cl->conf->join[0] != '\0';
	bool was_primary = cl->cmap && !strcmp(cmap_primary(cl->cmap), cl->self.id);

	if (cl->self.role == CMAP_GATEWAY && !has_join && (!cl->cmap || was_primary)) {
		/* the first gateway: primary of a new cluster, or of its old one */
		pthread_mutex_lock(&cl->wmu);
		cmap_t *m = NULL;
		bmd_t *b = NULL;
		if (!cl->cmap) {
			unsigned char rnd[8];
			char uuid[17];
			int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
			if (fd < 0 || read(fd, rnd, sizeof(rnd)) != (ssize_t)sizeof(rnd))
				fatal("reading /dev/urandom");
			close(fd);
			hex_encode(rnd, sizeof(rnd), uuid);
			m = cmap_new(uuid, &cl->self, err);
		} else {
			m = cmap_clone(cl->cmap);
			const cmap_node_t *me = cmap_get(m, cl->self.id, strlen(cl->self.id));
			if (me && strcmp(me->pub_url, cl->self.pub_url)) {
				/* same id, new address: re-add */
				log_info("this node's URL changed to %s", cl->self.pub_url);
			}
		}
		if (m && !cl->bmd)
			b = bmd_new(cmap_uuid(m), err);
		int rc = m && (cl->bmd || b) ? clu_install(cl, m, b, err) : AIS_ERR;
		pthread_mutex_unlock(&cl->wmu);
		if (rc != AIS_OK)
			return AIS_ERR;
		log_info("primary gateway of cluster %s", cmap_uuid(cl->cmap));
	} else if (!has_join && !cl->cmap) {
		buf_addstr(err, "nothing to join: set cluster.join (--join URL)");
		return AIS_ERR;
	}
	if (pthread_create(&cl->thread, NULL, keepalive_main, cl))
		fatal("pthread_create");
	cl->started = true;
	return AIS_OK;
}

void cluster_free(cluster_t *cl)
{
	if (!cl)
		return;
	if (cl->started) {
		pthread_mutex_lock(&cl->sleep_mu);
		atomic_store(&cl->stop, true);
		pthread_cond_broadcast(&cl->sleep_cv);
		pthread_mutex_unlock(&cl->sleep_mu);
		pthread_join(cl->thread, NULL);
	}
	cmap_free(cl->cmap);
	cmap_free(cl->prev);
	bmd_free(cl->bmd);
	pthread_rwlock_destroy(&cl->rw);
	pthread_mutex_destroy(&cl->wmu);
	pthread_mutex_destroy(&cl->refresh_mu);
	pthread_mutex_destroy(&cl->sleep_mu);
	pthread_cond_destroy(&cl->sleep_cv);
	free(cl);
}
