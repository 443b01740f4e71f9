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
 *  4. Every installed BMD reaches the node's callback (the target creates
 *     and destroys its buckets there), even when the node stops between
 *     persisting it and the callback: DIR/bmd-applied.json holds the last
 *     BMD whose callback returned, and cluster_start runs the callback
 *     from it to bmd.json when they differ.
 * Node states: a node in maintenance stays in the map even when it fails its
 * health checks (it may be down for maintenance); cmap_owner skips it. A
 * node that accepts a map with itself decommissioning writes
 * DIR/decommissioned and never rejoins; once the primary's map no longer
 * has it (the drain done, the node removed) it stops the process, and it
 * does not start again while that file exists (removing the file undoes
 * it: the node then joins as a new member).
 * The keepalive thread uses blocking HTTP (httpc_sync) with short timeouts:
 * simple, and fine at the scale of tens of nodes.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
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

/* authz_access_fn: a bucket's access bits from the BMD in force. */
static bool bucket_access(void *ctx, sv_t bucket, unsigned *access)
{
	cluster_t *cl = ctx;
	const bmd_t *b;
	cluster_read_lock(cl, NULL, &b);
	const bmd_bucket_t *bk = b ? bmd_get(b, bucket.ptr, bucket.len) : NULL;
	if (bk)
		*access = bk->props.access;
	cluster_read_unlock(cl);
	return bk != NULL;
}

const char *cluster_node_dir(const conf_t *c) { return c->node_dir[0] ? c->node_dir : c->mountpaths[0]; }

bool cluster_was_decommissioned(const conf_t *c, char *marker, size_t markersz)
{
	char p[1200];
	snprintf(p, sizeof(p), "%s/decommissioned", cluster_node_dir(c));
	if (marker && markersz)
		snprintf(marker, markersz, "%s", p);
	return access(p, F_OK) == 0;
}

cluster_t *cluster_new(const conf_t *c, enum cmap_role role, int port, buf_t *err)
{
	cluster_t *cl = xcalloc(1, sizeof(*cl));
	char p[1200];

	cl->conf = c;
	snprintf(cl->dir, sizeof(cl->dir), "%s", cluster_node_dir(c));
	if (mkdir(cl->dir, 0755) == 0) {
		chmod(cl->dir, 0755); /* past the umask: a target's local-read socket lives here */
	} else if (errno != EEXIST) {
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
	pthread_mutex_init(&cl->lease_mu, NULL);
	pthread_mutex_init(&cl->grant_mu, NULL);
	authz_set_access_lookup(bucket_access, cl); /* buckets' access property (authz.h rule 1a) */
	/* it may have granted a lease before it stopped (V5 in cmap.h) */
	cl->granted.at_ns = time_mono_ns();

	path_of(cl, "cmap.json", p, sizeof(p));
	if (cmap_load(p, &cl->cmap, err) != AIS_OK && errno != ENOENT)
		goto fail;
	path_of(cl, "bmd.json", p, sizeof(p));
	if (bmd_load(p, &cl->bmd, err) != AIS_OK && errno != ENOENT)
		goto fail;
	/* the metadata a node last acted on (applied_save): older than
	 * bmd.json when it stopped between persisting a change and acting on
	 * it; cluster_start catches up */
	path_of(cl, "bmd-applied.json", p, sizeof(p));
	if (cl->bmd && bmd_load(p, &cl->applied, err) == AIS_OK &&
	    bmd_version(cl->applied) >= bmd_version(cl->bmd)) {
		bmd_free(cl->applied);
		cl->applied = NULL;
	}
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

/* Records b as the metadata this node has acted on (its callback returned):
 * DIR/bmd-applied.json. A failure only costs a repeated callback. */
static void applied_save(cluster_t *cl, const bmd_t *b)
{
	char p[1200];
	buf_t err = BUF_INIT;
	path_of(cl, "bmd-applied.json", p, sizeof(p));
	if (bmd_save(b, p, &err) != AIS_OK)
		log_warnx("saving %s: %s", p, err.ptr ? err.ptr : "");
	buf_free(&err);
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
 * The BMD callback runs after, and DIR/bmd-applied.json records that it
 * returned: a node stopped in between acts on the change at its next
 * cluster_start.
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
	if (b && cl->bmd_fn) {
		if (cl->conf->bmd_pause_ms) /* debug.bmd_apply_pause: a test hook */
			usleep((useconds_t)MIN(cl->conf->bmd_pause_ms, 60000) * 1000);
		cl->bmd_fn(cl->bmd_arg, oldb, b);
		applied_save(cl, b);
	}
	if (m && cl->cmap_fn)
		cl->cmap_fn(cl->cmap_arg, oldm, m);
	if (m) {
		log_info("cluster map term %llu v%llu: %zu nodes, primary %s", (unsigned long long)cmap_term(m),
			 (unsigned long long)cmap_version(m), cmap_size(m), cmap_primary(m));
		clu_lease_note(cl); /* the role may start or end with the map */
	}
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
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || fsync(fd)) {
		log_warnx("cannot create %s: %s (the node may rejoin after a restart)", p, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	log_warnx("the primary decommissioned this node: it leaves the cluster and will not rejoin "
		  "(remove %s and restart to allow it)", p);
}

void clu_leave(cluster_t *cl, const cmap_t *pm)
{
	if (atomic_exchange(&cl->leaving, true))
		return;
	log_warnx("decommission complete: the primary's cluster map v%llu no longer has this node: it exits "
		  "(and does not start again while %s/decommissioned exists)",
		  (unsigned long long)cmap_version(pm), cl->dir);
	/* the main thread's sigwait: the same graceful stop as on SIGTERM */
	kill(getpid(), SIGTERM);
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
		} else if (!c->status && httpc_local_errno(c->err)) {
			log_warnx("metasync to %s: not sent: this node cannot open a socket itself (%s)", who[i]->id,
				  strerror(c->err));
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

/* --- the primary's lease (cluster.h rule 12) -------------------------------- */

int64_t clu_lease_ns(const cluster_t *cl) { return (int64_t)conf_lease_ms(cl->conf) * 1000000; }
int64_t clu_lease_guard_ns(const cluster_t *cl) { return (int64_t)conf_lease_guard_ms(cl->conf) * 1000000; }

void clu_lease_extend(cluster_t *cl, int64_t until)
{
	pthread_mutex_lock(&cl->lease_mu);
	cl->lease_until = MAX(cl->lease_until, until);
	pthread_mutex_unlock(&cl->lease_mu);
}

/* Whether this node acts as primary at monotonic time now: its map names
 * it, and it holds the lease or majority rules do not apply. *until gets
 * the lease's end, *term and prim the map's term and primary. */
static bool acting_at(cluster_t *cl, int64_t now, int64_t *until, bool *held, uint64_t *term, char *prim,
		      size_t primsz)
{
	pthread_rwlock_rdlock(&cl->rw);
	bool self = cl->cmap && !strcmp(cmap_primary(cl->cmap), cl->self.id);
	bool rules = cl->cmap && clu_quorum_rules(cl->cmap);
	*term = cl->cmap ? cmap_term(cl->cmap) : 0;
	snprintf(prim, primsz, "%s", cl->cmap ? cmap_primary(cl->cmap) : "");
	pthread_rwlock_unlock(&cl->rw);
	pthread_mutex_lock(&cl->lease_mu);
	*until = cl->lease_until;
	pthread_mutex_unlock(&cl->lease_mu);
	*held = !rules || now < *until;
	return self && *held;
}

bool cluster_acting_primary(cluster_t *cl)
{
	int64_t until;
	uint64_t term;
	char prim[CMAP_ID_MAX + 1];
	bool held;
	return acting_at(cl, time_mono_ns(), &until, &held, &term, prim, sizeof(prim));
}

bool clu_lease_note(cluster_t *cl)
{
	int64_t until, now = time_mono_ns();
	uint64_t term;
	char prim[CMAP_ID_MAX + 1];
	bool held;
	bool act = acting_at(cl, now, &until, &held, &term, prim, sizeof(prim));

	pthread_mutex_lock(&cl->lease_mu);
	bool was = cl->acting;
	cl->acting = act;
	pthread_mutex_unlock(&cl->lease_mu);
	if (act && !was && until > now)
		log_info("primary role: acting (term %llu, lease for %lld ms more)", (unsigned long long)term,
			 (long long)((until - now) / 1000000));
	else if (act && !was)
		log_info("primary role: acting (term %llu, the only gateway: no lease needed)", (unsigned long long)term);
	else if (!act && was && held)
		log_warnx("primary role: not acting (term %llu): the cluster map names %s primary",
			  (unsigned long long)term, prim);
	else if (!act && was)
		/* "lapsed N ms ago": the role ended then, whenever this is logged */
		log_warnx("primary role: not acting (term %llu, primary %s): its lease lapsed %lld ms ago (a majority "
			  "of nodes did not grant it within %llu ms): no metadata changes or pushes until a majority "
			  "does",
			  (unsigned long long)term, prim, (long long)((now - until) / 1000000),
			  (unsigned long long)conf_lease_ms(cl->conf));
	return act;
}

bool clu_local_shortage(cluster_t *cl, const char *what)
{
	int e = httpc_local_shortage();
	if (e && !cl->local_warned)
		log_warnx("%s: this node cannot open a socket itself (%s): no other node is blamed for the calls that "
			  "failed", what, strerror(e));
	else if (!e && cl->local_warned)
		log_info("%s: this node can open sockets again", what);
	cl->local_warned = e != 0;
	return e != 0;
}

/* One lease round: asks every node of nodes[0..n) but this one for the
 * lease of term (POST /v1/cluster/lease, in parallel) and extends the lease
 * to the round's start + cluster.lease when a majority (this node counted)
 * granted it. all: wait for every answer (the keepalive), else return once
 * a majority granted. answered (n entries, may be NULL) gets which nodes
 * answered at all (a refusal is an answer), local which did not for a
 * shortage of this node's own (clu_local_shortage); newer (CMAP_URL_MAX + 1
 * bytes, may be NULL) the URL of a node whose map term is newer, or "".
 * Returns how many granted it, this node included. */
static size_t lease_round(cluster_t *cl, const cmap_node_t *nodes, size_t n, const char *uuid, uint64_t term,
			  size_t need, bool all, bool *answered, bool *local, char *newer)
{
	cmap_lease_req_t rq;
	buf_t body = BUF_INIT;
	cluster_call_t *calls = xcalloc(n ? n : 1, sizeof(*calls));
	size_t *idx = xcalloc(n ? n : 1, sizeof(*idx)), nc = 0, granted = 1;
	bool failed = false;

	memset(&rq, 0, sizeof(rq));
	snprintf(rq.uuid, sizeof(rq.uuid), "%s", uuid);
	snprintf(rq.primary, sizeof(rq.primary), "%s", cl->self.id);
	rq.term = term;
	cmap_lease_encode(&rq, &body);
	if (newer)
		newer[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (answered)
			answered[i] = false;
		if (local)
			local[i] = false;
		if (!strcmp(nodes[i].id, cl->self.id))
			continue;
		snprintf(calls[nc].url, sizeof(calls[nc].url), "%s/v1/cluster/lease", nodes[i].intra_url);
		calls[nc].method = "POST";
		calls[nc].body = &body;
		calls[nc].timeout_ms = MIN(cl->conf->keepalive_ms, all ? 2000 : 1000);
		if (all) {
			/* the keepalive: the round waits as long as before, but a check
			 * goes on for most of the grace, and its answer, however late,
			 * is life (cluster_heard): a check queued behind data on a
			 * saturated link is not a dead node */
			snprintf(calls[nc].heard, sizeof(calls[nc].heard), "%s", nodes[i].id);
			if (cl->conf->grace_ms > cl->conf->keepalive_ms)
				calls[nc].timeout_ms = MAX(calls[nc].timeout_ms,
							   MIN(cl->conf->grace_ms - cl->conf->keepalive_ms, 5000));
		}
		idx[nc++] = i;
	}
	int64_t start = time_mono_ns(); /* no grant is older than this */
	if (all)
		cluster_call_quorum(calls, nc, 0, MIN(cl->conf->keepalive_ms, 2000), &cl->stop, NULL);
	else
		cluster_call_quorum(calls, nc, need > 1 ? need - 1 : 0, 0, &cl->stop, NULL);
	for (size_t c = 0; c < nc; c++) {
		cluster_call_t *k = &calls[c];
		bool ans = k->status == 200 || k->status == 409;
		granted += k->status == 200;
		failed |= !k->status;
		if (answered)
			answered[idx[c]] = ans;
		if (local && !k->status && httpc_local_errno(k->err))
			local[idx[c]] = true;
		if (newer && k->status == 409 && !newer[0]) {
			json_t *o = json_loadb(k->resp.ptr ? k->resp.ptr : "", k->resp.len, 0, NULL);
			json_t *t = json_object_get(o, "term");
			if (json_is_integer(t) && (uint64_t)json_integer_value(t) > term)
				snprintf(newer, CMAP_URL_MAX + 1, "%s", nodes[idx[c]].intra_url);
			json_decref(o);
		}
		buf_free(&k->resp);
	}
	/* calls that failed while this node cannot open sockets: its fault */
	if (local && (failed || cl->local_warned) && clu_local_shortage(cl, "lease and health round"))
		for (size_t c = 0; c < nc; c++)
			local[idx[c]] |= !calls[c].status;
	if (granted >= need)
		clu_lease_extend(cl, start + clu_lease_ns(cl));
	free(calls);
	free(idx);
	buf_free(&body);
	return granted;
}

/* Step-down rule: with quorum rules, a primary changes metadata only while
 * it holds the lease, renewed here (a majority of the map's nodes grant
 * it, asked in parallel). Caller holds wmu. */
static bool have_majority(cluster_t *cl, buf_t *err)
{
	pthread_rwlock_rdlock(&cl->rw);
	bool rules = clu_quorum_rules(cl->cmap);
	size_t n = cmap_size(cl->cmap), need = cmap_quorum(cl->cmap);
	uint64_t term = cmap_term(cl->cmap);
	char uuid[CMAP_ID_MAX + 1];
	snprintf(uuid, sizeof(uuid), "%s", cmap_uuid(cl->cmap));
	cmap_node_t *nodes = xcalloc(n ? n : 1, sizeof(*nodes));
	for (size_t i = 0; i < n; i++)
		nodes[i] = *cmap_node(cl->cmap, i);
	pthread_rwlock_unlock(&cl->rw);
	size_t granted = rules ? lease_round(cl, nodes, n, uuid, term, need, false, NULL, NULL, NULL) : n;
	free(nodes);
	bool ok = clu_lease_note(cl);
	if (!ok)
		buf_addf(err, "the primary gateway's lease lapsed: %zu of %zu nodes granted it, a majority needs %zu: "
			      "no metadata changes until a majority does (or another primary is elected)",
			 granted, n, need);
	return ok;
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
	if (!have_majority(cl, err)) {
		pthread_mutex_unlock(&cl->wmu);
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

/* When each node was last heard from: its own map calls (api.c) and its
 * answers to health checks, the late ones too (call.c, on the fan's
 * threads, which may outlive a round and the cluster: so process-wide). */
static pthread_mutex_t heard_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char id[CMAP_ID_MAX + 1];
	int64_t at_ns; /* monotonic */
} heard[256];
static size_t nheard;

void cluster_heard(const char *id, size_t len)
{
	size_t i;
	if (!cmap_id_valid(id, len))
		return;
	pthread_mutex_lock(&heard_mu);
	for (i = 0; i < nheard; i++)
		if (strlen(heard[i].id) == len && !memcmp(heard[i].id, id, len))
			break;
	if (i == nheard && nheard < ARRAY_SIZE(heard))
		snprintf(heard[nheard++].id, sizeof(heard[0].id), "%.*s", (int)len, id);
	if (i < nheard)
		heard[i].at_ns = time_mono_ns();
	pthread_mutex_unlock(&heard_mu);
}

int64_t clu_heard_at(const char *id)
{
	int64_t at = 0;
	pthread_mutex_lock(&heard_mu);
	for (size_t i = 0; i < nheard; i++)
		if (!strcmp(heard[i].id, id))
			at = heard[i].at_ns;
	pthread_mutex_unlock(&heard_mu);
	return at;
}

/* A node that stopped answering leaves the map; a target is remembered as
 * lost (cmap_drop): listings know they may lack its objects. */
static int drop_node(cmap_t *m, bmd_t *b, void *arg, buf_t *err)
{
	return cmap_drop(m, arg, err);
}

static void primary_round(cluster_t *cl)
{
	cmap_node_t *nodes;
	size_t n, healthy = 1, need;
	bool rules;
	int64_t now = time_mono_ns();
	buf_t resp = BUF_INIT, err = BUF_INIT;
	char newer[CMAP_URL_MAX + 1] = "", newer_term[CMAP_URL_MAX + 1] = "", uuid[CMAP_ID_MAX + 1];
	uint64_t term;
	bool *ok, *local;
	const int64_t grace = (int64_t)cl->conf->grace_ms * 1000000;

	clu_lease_note(cl); /* a lease that ran out since the last round */
	pthread_rwlock_rdlock(&cl->rw);
	n = cmap_size(cl->cmap);
	need = cmap_quorum(cl->cmap);
	rules = clu_quorum_rules(cl->cmap);
	term = cmap_term(cl->cmap);
	snprintf(uuid, sizeof(uuid), "%s", cmap_uuid(cl->cmap));
	nodes = xcalloc(n ? n : 1, sizeof(*nodes));
	for (size_t i = 0; i < n; i++)
		nodes[i] = *cmap_node(cl->cmap, i);
	pthread_rwlock_unlock(&cl->rw);
	ok = xcalloc(n ? n : 1, sizeof(*ok));
	local = xcalloc(n ? n : 1, sizeof(*local));

	/* every node's lease answer, in parallel: a node that answers (grants
	 * or refuses) is healthy; one this node could not call for a shortage
	 * of its own (EMFILE, ..) is neither */
	lease_round(cl, nodes, n, uuid, term, need, true, ok, local, newer_term);
	size_t nlocal = 0;
	for (size_t i = 0; i < n; i++) {
		healthy += ok[i];
		nlocal += local[i];
	}
	/* step-down rule: a primary that reaches only a minority changes nothing
	 * (cluster_update refuses too) and looks for a newer primary */
	bool majority = !rules || healthy >= need;
	if (!majority && !nlocal && !cl->no_majority)
		log_warnx("this primary reaches %zu of %zu nodes, not a majority: no cluster map changes until it does",
			  healthy, n);
	else if (majority && cl->no_majority)
		log_info("this primary reaches a majority of nodes again");
	cl->no_majority = !majority;
	bool acting = clu_lease_note(cl);

	for (size_t i = 0; i < n && !atomic_load(&cl->stop); i++) {
		if (!strcmp(nodes[i].id, cl->self.id) || local[i])
			continue;
		pthread_mutex_lock(&cl->wmu);
		struct peer *p = peer_of(cl, nodes[i].id);
		if (p && ok[i]) {
			if (p->fail_since)
				p->cmap_ver = p->bmd_ver = 0; /* back: push again (it may hold a newer map) */
			p->fail_since = 0;
			p->kept = false;
			p->heard_kept = false;
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
		} else if (p && majority && acting && now - p->fail_since > grace &&
			   now - clu_heard_at(nodes[i].id) <= grace) {
			/* its checks starve (a saturated link queues them past their
			 * timeout), but it answered one late or its own keepalive calls
			 * still reach this node: it lives; only silence for the whole
			 * grace removes it */
			if (!p->heard_kept)
				log_info("node %s failed health checks for %llu ms but was heard from since (a late "
					 "answer, or a call of its own): it stays in the cluster map",
					 nodes[i].id, (unsigned long long)cl->conf->grace_ms);
			p->heard_kept = true;
		} else if (p && majority && acting && now - p->fail_since > grace) {
			log_warnx("node %s failed health checks for %llu ms (and was not heard from): removing it "
				  "from the cluster map",
				  nodes[i].id, (unsigned long long)cl->conf->grace_ms);
			p->fail_since = 0;
			p->heard_kept = false;
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
	/* a primary without its lease pushes nothing; nor does one that cannot
	 * open sockets now (the next round pushes) */
	if (cluster_acting_primary(cl) && !nlocal)
		clu_push_all(cl, newer, SIZE_MAX); /* nodes that missed a push, or came back */
	pthread_mutex_unlock(&cl->wmu);
	if (!newer[0])
		memcpy(newer, newer_term, sizeof(newer)); /* a node refused the lease: its map is newer */
	/* a node refused our map (or lease) as older: another primary was elected */
	if (newer[0] && clu_adopt_from(cl, newer) == AIS_OK)
		log_warnx("a newer cluster map (from %s) names another primary: this gateway follows it", newer);
	for (size_t i = 0; !majority && !newer[0] && i < n && cluster_is_primary(cl); i++)
		if (ok[i] && strcmp(nodes[i].id, cl->self.id))
			clu_adopt_from(cl, nodes[i].intra_url);
	clu_lease_note(cl);
	free(ok);
	free(local);
	free(nodes);
	buf_free(&resp);
	buf_free(&err);
}

static void *keepalive_main(void *arg)
{
	cluster_t *cl = arg;
	log_set_action("cluster");
	while (!atomic_load(&cl->stop)) {
		int64_t started = time_mono_ns();
		bool prim = cluster_is_primary(cl);
		if (prim)
			primary_round(cl);
		else
			clu_follower_round(cl);
		pthread_mutex_lock(&cl->sleep_mu);
		if (!atomic_load(&cl->stop)) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			/* the primary's rounds start every keepalive (a long round is not
			 * followed by a full one's sleep: the lease's renewal stays in
			 * time) */
			int64_t spent = prim ? (time_mono_ns() - started) / 1000000 : 0;
			uint64_t ms = cl->conf->keepalive_ms;
			ms = spent <= 0 ? ms : (uint64_t)spent + 10 < ms ? ms - (uint64_t)spent : 10;
			pthread_mutex_lock(&cl->lease_mu);
			int64_t left = cl->acting ? cl->lease_until - time_mono_ns() : INT64_MAX;
			pthread_mutex_unlock(&cl->lease_mu);
			if (left >= 0 && (uint64_t)left / 1000000 + 1 < ms)
				ms = (uint64_t)left / 1000000 + 1; /* note the lapse when it comes */
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
	if (cl->bmd && cl->bmd_fn) {
		/* persisted but maybe not acted on (a stop between clu_install's
		 * save and its callback): act on it now, from what was acted on,
		 * so that a bucket the cluster removed meanwhile is destroyed */
		if (cl->applied) {
			log_info("bucket metadata v%llu was saved but maybe not applied before the stop: applying it "
				 "(from v%llu)", (unsigned long long)bmd_version(cl->bmd),
				 (unsigned long long)bmd_version(cl->applied));
			cl->bmd_fn(cl->bmd_arg, cl->applied, cl->bmd);
		}
		applied_save(cl, cl->bmd);
	}
	bmd_free(cl->applied);
	cl->applied = NULL;
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
	bmd_free(cl->applied);
	authz_set_access_lookup(NULL, NULL);
	pthread_rwlock_destroy(&cl->rw);
	pthread_mutex_destroy(&cl->wmu);
	pthread_mutex_destroy(&cl->refresh_mu);
	pthread_mutex_destroy(&cl->sleep_mu);
	pthread_cond_destroy(&cl->sleep_cv);
	pthread_mutex_destroy(&cl->lease_mu);
	pthread_mutex_destroy(&cl->grant_mu);
	free(cl);
}
