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
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aisd/cluster.h"
#include "aisd/httpc.h"
#include "aisd/authz.h"
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
		snprintf(cl->self.pub_url, sizeof(cl->self.pub_url), "%s://%.200s:%d",
			 c->tls_cert[0] ? "https" : "http", c->host, port);
	memcpy(cl->self.intra_url, cl->self.pub_url, sizeof(cl->self.intra_url));
	authz_set_self(cl->self.intra_url); /* the calls of other nodes name it */
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

void cluster_where(cluster_t *cl, sv_t bck, sv_t obj, bool as_self, cluster_where_t *w,
		   char (*urls)[CMAP_URL_MAX + 1], size_t max)
{
	const cmap_t *m;
	const bmd_t *b;
	place_t p;

	memset(w, 0, sizeof(*w));
	cluster_read_lock(cl, &m, &b);
	w->bucket = b && bmd_get(b, bck.ptr, bck.len);
	w->cmap_version = m ? cmap_version(m) : 0;
	w->bmd_version = b ? bmd_version(b) : 0;
	place_object(m, b, bck.ptr, bck.len, obj.ptr, obj.len, as_self ? cl->self.id : NULL, &p);
	w->n = p.n;
	w->self = p.self;
	if (p.n) {
		snprintf(w->owner, sizeof(w->owner), "%s", p.node[0]->pub_url);
		snprintf(w->owner_intra, sizeof(w->owner_intra), "%s", p.node[0]->intra_url);
	}
	for (size_t i = 0; urls && i < p.n && i < max; i++)
		snprintf(urls[i], sizeof(urls[i]), "%s", p.node[i]->intra_url);
	cluster_read_unlock(cl);
}

bool cluster_is_primary(cluster_t *cl)
{
	pthread_rwlock_rdlock(&cl->rw);
	bool p = cl->cmap && !strcmp(cmap_primary(cl->cmap), cl->self.id);
	pthread_rwlock_unlock(&cl->rw);
	return p;
}

/* Does url ("http://HOST:PORT/...", HOST maybe in brackets) name host addr? */
static bool url_host_is(const char *url, const char *addr)
{
	const char *p = strstr(url, "://");
	if (!p)
		return false;
	p += 3;
	size_t n = strcspn(p, "/?#"), a = strlen(addr);
	const char *at = memchr(p, '@', n);
	if (at) {
		n -= (size_t)(at + 1 - p);
		p = at + 1;
	}
	if (n && *p == '[') { /* [v6]:port */
		const char *e = memchr(p, ']', n);
		return e && (size_t)(e - p - 1) == a && !strncasecmp(p + 1, addr, a);
	}
	const char *colon = memchr(p, ':', n);
	if (colon)
		n = (size_t)(colon - p);
	return n == a && !strncasecmp(p, addr, a);
}

bool cluster_node_addr(void *ctx, const char *addr)
{
	cluster_t *cl = ctx ? ((node_base_t *)ctx)->cl : NULL;
	bool yes = false;
	if (!cl || !addr || !*addr)
		return false;
	if (!strncasecmp(addr, "::ffff:", 7) && strchr(addr, '.'))
		addr += 7; /* a v4 client on a v6 socket */
	pthread_rwlock_rdlock(&cl->rw);
	for (size_t i = 0; cl->cmap && i < cmap_size(cl->cmap) && !yes; i++) {
		const cmap_node_t *n = cmap_node(cl->cmap, i);
		yes = url_host_is(n->pub_url, addr) || url_host_is(n->intra_url, addr);
	}
	pthread_rwlock_unlock(&cl->rw);
	return yes;
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
	if (m && (!cl->cmap || strcmp(cmap_primary(cl->cmap), cmap_primary(m))))
		cl->npeers = 0; /* a new primary: what nodes acknowledged is unknown */
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
		log_info("cluster map term %llu v%llu: %zu nodes, primary %s", (unsigned long long)cmap_term(m),
			 (unsigned long long)cmap_version(m), cmap_size(m), cmap_primary(m));
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

bool clu_quorum_rules(const cmap_t *m) { return cmap_count(m, CMAP_GATEWAY, CMAP_ANY) >= 2; }

bool clu_alive(cluster_t *cl, const char *base_url, uint64_t timeout_ms)
{
	char url[CMAP_URL_MAX + 32];
	buf_t resp = BUF_INIT;
	int status = 0;
	snprintf(url, sizeof(url), "%s/v1/health", base_url);
	bool ok = httpc_sync("GET", url, NULL, NULL, 0, timeout_ms, &resp, &status) == AIS_OK && status == 200;
	buf_free(&resp);
	return ok;
}

size_t clu_push_all(cluster_t *cl, char *newer, size_t need)
{
	buf_t body = BUF_INIT;
	cmap_node_t *nodes;
	cluster_call_t *calls;
	struct peer **who;
	size_t n, nc = 0, have = 1;
	uint64_t mv, bv;

	if (newer)
		newer[0] = '\0';
	clu_encode_meta(cl, &body);
	pthread_rwlock_rdlock(&cl->rw);
	n = cmap_size(cl->cmap);
	nodes = xcalloc(n ? n : 1, sizeof(*nodes));
	for (size_t i = 0; i < n; i++)
		nodes[i] = *cmap_node(cl->cmap, i);
	mv = cmap_version(cl->cmap);
	bv = bmd_version(cl->bmd);
	pthread_rwlock_unlock(&cl->rw);
	calls = xcalloc(n ? n : 1, sizeof(*calls));
	who = xcalloc(n ? n : 1, sizeof(*who));

	for (size_t i = 0; i < n; i++) {
		if (!strcmp(nodes[i].id, cl->self.id))
			continue;
		struct peer *p = peer_of(cl, nodes[i].id);
		if (p && p->cmap_ver == mv && p->bmd_ver == bv)
			have++;
		if (!p || (p->cmap_ver == mv && p->bmd_ver == bv))
			continue;
		if (need == SIZE_MAX && p->fail_since)
			continue; /* the keepalive: pushed again once it answers */
		snprintf(calls[nc].url, sizeof(calls[nc].url), "%s/v1/metasync?from=%s", nodes[i].intra_url, cl->self.id);
		calls[nc].method = "PUT";
		calls[nc].body = &body;
		calls[nc].timeout_ms = 3000;
		who[nc++] = p;
	}
	bool *done = xcalloc(nc ? nc : 1, sizeof(*done));
	if (need == SIZE_MAX) /* all (unless this node stops) */
		cluster_call_quorum(calls, nc, SIZE_MAX, 0, &cl->stop, done);
	else /* a majority, then the others as long as a health check may take */
		cluster_call_quorum(calls, nc, need > have ? need - have : 0, MIN(cl->conf->keepalive_ms, 1000),
				    &cl->stop, done);
	for (size_t i = 0; i < nc; i++) {
		cluster_call_t *c = &calls[i];
		const char *msg = c->resp.ptr ? c->resp.ptr : "";
		if (!done[i]) {
			if (!atomic_load(&cl->stop))
					log_info("metasync to %s: no answer yet: it goes on in the background (and the "
					 "keepalive pushes again)", who[i]->id);
		} else if (c->status == 200) {
			who[i]->cmap_ver = mv;
			who[i]->bmd_ver = bv;
			have++;
		} else {
			log_warnx("metasync to %s: %s%s", who[i]->id, c->status ? "" : "no answer: ", msg);
			if (c->status == 409 && newer && strstr(msg, "older than ours"))
				snprintf(newer, CMAP_URL_MAX + 1, "%.*s", (int)(strstr(c->url, "/v1/metasync") - c->url),
					 c->url);
		}
		buf_free(&c->resp);
	}
	free(done);
	free(calls);
	free(who);
	free(nodes);
	buf_free(&body);
	return have;
}

/* Step-down rule: with quorum rules, a primary changes metadata only while
 * a majority of the map's nodes answer it (asked in parallel). Caller holds
 * wmu. */
static bool have_majority(cluster_t *cl)
{
	cluster_call_t *calls;
	size_t n, need, nc = 0, have = 1;

	pthread_rwlock_rdlock(&cl->rw);
	bool rules = clu_quorum_rules(cl->cmap);
	n = cmap_size(cl->cmap);
	need = cmap_quorum(cl->cmap);
	calls = xcalloc(n ? n : 1, sizeof(*calls));
	for (size_t i = 0; rules && i < n; i++) {
		const cmap_node_t *nd = cmap_node(cl->cmap, i);
		if (!strcmp(nd->id, cl->self.id))
			continue;
		snprintf(calls[nc].url, sizeof(calls[nc].url), "%s/v1/health", nd->intra_url);
		calls[nc].method = "GET";
		calls[nc++].timeout_ms = MIN(cl->conf->keepalive_ms, 1000);
	}
	pthread_rwlock_unlock(&cl->rw);
	/* no need to wait for the nodes that do not answer once a majority did */
	cluster_call_quorum(calls, nc, need > have ? need - have : 0, 0, &cl->stop, NULL);
	for (size_t i = 0; i < nc; i++) {
		have += calls[i].status == 200;
		buf_free(&calls[i].resp);
	}
	free(calls);
	return !rules || have >= need;
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
	if (!have_majority(cl)) {
		pthread_mutex_unlock(&cl->wmu);
		buf_addstr(err, "the primary gateway cannot reach a majority of the cluster's nodes: "
				"no metadata changes until it does (or another primary is elected)");
		errno = EAGAIN;
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
		bool rules = clu_quorum_rules(m);
		size_t need = cmap_quorum(m);
		if (!mch)
			cmap_free(m), m = NULL;
		if (!bch)
			bmd_free(b), b = NULL;
		if ((m || b) && (rc = clu_install(cl, m, b, err)) == AIS_OK) {
			size_t have = clu_push_all(cl, NULL, need);
			if (rules && have < need) {
				buf_addf(err, "the change reached %zu of the %zu nodes a majority needs: "
					      "not confirmed (it may still take effect)", have, need);
				errno = EAGAIN;
				rc = AIS_ERR;
			}
		}
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
	size_t n, healthy = 1, need;
	bool rules;
	int64_t now = time_mono_ns();
	buf_t resp = BUF_INIT, err = BUF_INIT;
	char newer[CMAP_URL_MAX + 1] = "";
	bool *ok;

	pthread_rwlock_rdlock(&cl->rw);
	n = cmap_size(cl->cmap);
	need = cmap_quorum(cl->cmap);
	rules = clu_quorum_rules(cl->cmap);
	nodes = xcalloc(n ? n : 1, sizeof(*nodes));
	for (size_t i = 0; i < n; i++)
		nodes[i] = *cmap_node(cl->cmap, i);
	pthread_rwlock_unlock(&cl->rw);
	ok = xcalloc(n ? n : 1, sizeof(*ok));

	/* every node's /v1/health, in parallel */
	cluster_call_t *calls = xcalloc(n ? n : 1, sizeof(*calls));
	size_t *idx = xcalloc(n ? n : 1, sizeof(*idx)), nc = 0;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(nodes[i].id, cl->self.id))
			continue;
		snprintf(calls[nc].url, sizeof(calls[nc].url), "%s/v1/health", nodes[i].intra_url);
		calls[nc].method = "GET";
		calls[nc].timeout_ms = MIN(cl->conf->keepalive_ms, 2000);
		idx[nc++] = i;
	}
	clu_call_all(cl, calls, nc);
	for (size_t c = 0; c < nc; c++) {
		ok[idx[c]] = calls[c].status == 200;
		healthy += ok[idx[c]];
		buf_free(&calls[c].resp);
	}
	free(calls);
	free(idx);
	/* step-down rule: a primary that reaches only a minority changes nothing
	 * (cluster_update refuses too) and looks for a newer primary */
	bool majority = !rules || healthy >= need;
	if (!majority && !cl->no_majority)
		log_warnx("this primary reaches %zu of %zu nodes, not a majority: no cluster map changes until it does",
			  healthy, n);
	else if (majority && cl->no_majority)
		log_info("this primary reaches a majority of nodes again");
	cl->no_majority = !majority;

	for (size_t i = 0; i < n && !atomic_load(&cl->stop); i++) {
		if (!strcmp(nodes[i].id, cl->self.id))
			continue;
		pthread_mutex_lock(&cl->wmu);
		struct peer *p = peer_of(cl, nodes[i].id);
		if (p && ok[i]) {
			if (p->fail_since)
				p->cmap_ver = p->bmd_ver = 0; /* back: push again (it may hold a newer map) */
			p->fail_since = 0;
			p->kept = false;
		} else if (p && !p->fail_since) {
			p->fail_since = now;
			log_warnx("node %s failed its health check", nodes[i].id);
		} else if (p && nodes[i].state == CMAP_MAINTENANCE) {
			/* in maintenance: may be down on purpose; stays in the map */
			if (!p->kept && now - p->fail_since > (int64_t)cl->conf->grace_ms * 1000000) {
				p->kept = true;
				log_info("node %s in maintenance failed health checks for %llu ms: it stays in the "
					 "cluster map",
					 nodes[i].id, (unsigned long long)cl->conf->grace_ms);
			}
		} else if (p && majority && now - p->fail_since > (int64_t)cl->conf->grace_ms * 1000000) {
			log_warnx("node %s failed health checks for %llu ms: removing it from the cluster map",
				  nodes[i].id, (unsigned long long)cl->conf->grace_ms);
			p->fail_since = 0;
			p->cmap_ver = p->bmd_ver = 0;
			pthread_mutex_unlock(&cl->wmu);
			buf_reset(&err);
			if (cluster_update(cl, drop_node, nodes[i].id, &err) != AIS_OK)
				log_warnx("removing %s: %s", nodes[i].id, err.ptr ? err.ptr : "");
			continue;
		}
		pthread_mutex_unlock(&cl->wmu);
	}
	pthread_mutex_lock(&cl->wmu);
	if (cluster_is_primary(cl))
		clu_push_all(cl, newer, SIZE_MAX); /* nodes that missed a push, or came back */
	pthread_mutex_unlock(&cl->wmu);
	/* a node refused our map as older: another primary was elected */
	if (newer[0] && clu_adopt_from(cl, newer) == AIS_OK)
		log_warnx("a newer cluster map (from %s) names another primary: this gateway follows it", newer);
	for (size_t i = 0; !majority && !newer[0] && i < n && cluster_is_primary(cl); i++)
		if (ok[i] && strcmp(nodes[i].id, cl->self.id))
			clu_adopt_from(cl, nodes[i].intra_url);
	free(ok);
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
			clu_follower_round(cl);
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

	clu_vote_load(cl);
	if (was_primary && cmap_size(cl->cmap) > 1) {
		/* never resume as primary blindly: another may have been elected */
		clu_startup_sync(cl);
		was_primary = !strcmp(cmap_primary(cl->cmap), cl->self.id);
	}

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

void cluster_stop(cluster_t *cl)
{
	if (!cl)
		return;
	pthread_mutex_lock(&cl->sleep_mu);
	atomic_store(&cl->stop, true);
	pthread_cond_broadcast(&cl->sleep_cv);
	pthread_mutex_unlock(&cl->sleep_mu);
}

void cluster_free(cluster_t *cl)
{
	if (!cl)
		return;
	if (cl->started) {
		cluster_stop(cl);
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
