/*
 * api.c - the cluster's HTTP side: GET /v1/cluster?what=smap|bmd|meta,
 * POST /v1/cluster/join (primary), POST /v1/cluster/vote and /lease
 * (election.c), PUT
 * /v1/cluster node state actions and set-primary (primary; others answer
 * 307 to it), PUT /v1/metasync (every node, with the accept rules of
 * cluster.h 5, 8 and 9), and the joining client a non-primary node runs
 * from the keepalive thread.
 *
 * Requests that change metadata run on the I/O pool (they persist files
 * and may push to other nodes); the handlers only parse and answer.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/authz.h"
#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "cluster_int.h"
#include "runtime_int.h"
#include "aisd/banned.h"

static cluster_t *cl_of(http_req_t *req) { return ((node_base_t *)req->ctx)->cl; }

/* --- the jobs' part (cluster.h: cluster_jobs_set) ------------------------------ */

static _Atomic(const cluster_jobs_ops_t *) jobs;

void cluster_jobs_set(const cluster_jobs_ops_t *ops) { atomic_store(&jobs, ops); }

static const cluster_jobs_ops_t *jobs_ops(void) { return atomic_load(&jobs); }

static int jobs_unavailable(http_req_t *req)
{
	http_resp_error(req, 503, "jobs are not available on this node");
	return AIS_ERR;
}

static char *dump_member(json_t *doc, const char *key)
{
	json_t *v = json_object_get(doc, key);
	if (!v || json_is_null(v))
		return NULL;
	return json_dumps(v, JSON_COMPACT);
}

int clu_accept_meta(cluster_t *cl, const char *json, size_t len, const char *sender, buf_t *err)
{
	json_error_t jerr;
	json_t *doc = json_loadb(json, len, 0, &jerr);
	cmap_t *m = NULL;
	bmd_t *b = NULL;
	int rc = AIS_ERR;

	if (!doc || !json_is_object(doc)) {
		buf_addf(err, "invalid metadata JSON: %s", doc ? "not an object" : jerr.text);
		errno = EINVAL;
		goto out;
	}
	char *mj = dump_member(doc, "cmap"), *bj = dump_member(doc, "bmd");
	if ((mj && cmap_decode(mj, strlen(mj), &m, err) != AIS_OK) ||
	    (bj && bmd_decode(bj, strlen(bj), &b, err) != AIS_OK)) {
		free(mj);
		free(bj);
		errno = EINVAL;
		goto out;
	}
	free(mj);
	free(bj);

	pthread_mutex_lock(&cl->wmu);
	pthread_rwlock_rdlock(&cl->rw);
	int am = m ? cmap_accept(cl->cmap, m, err) : AIS_DONE;
	int e = errno;
	int ab = AIS_DONE;
	bool new_term = am == AIS_OK && cl->cmap && cmap_term(m) > cmap_term(cl->cmap);
	if (am == AIS_OK && cmap_term(m) < cl->voted.term && cl->voted_at &&
	    time_mono_ns() - cl->voted_at < (int64_t)cl->conf->grace_ms * 2000000) {
		/* election.c rule 3: we promised a vote in a newer term */
		am = cmap_fail(err, ESTALE, "cmap: term %llu: this node voted in term %llu",
			       (unsigned long long)cmap_term(m), (unsigned long long)cl->voted.term);
		e = errno;
	}
	if (sender && am != AIS_ERR) {
		/* only the primary pushes: ours, or (a new map taken: a handover
		 * or an election) the one it names; a deposed or stray node
		 * cannot push a newer BMD, nor the map it would need for one */
		const char *ours = cl->cmap ? cmap_primary(cl->cmap) : NULL;
		const char *theirs = am == AIS_OK ? cmap_primary(m) : NULL;
		if ((ours || theirs) && !(ours && !strcmp(ours, sender)) && !(theirs && !strcmp(theirs, sender))) {
			am = cmap_fail(err, EPERM, "metadata pushed by %s, which is not the primary (%s)", sender,
				       ours ? ours : theirs);
			e = errno;
		}
	}
	if (am != AIS_ERR && b) {
		ab = bmd_accept(cl->bmd, b, err);
		e = errno;
		if (ab == AIS_ERR && new_term && (e == EEXIST || e == ESTALE)) {
			/* the new term's primary is the authority: what a deposed
			 * primary made in its old term and never got confirmed loses */
			log_warnx("bucket metadata v%llu of the new primary replaces ours (v%llu): %s",
				  (unsigned long long)bmd_version(b), (unsigned long long)bmd_version(cl->bmd),
				  err->ptr ? err->ptr : "");
			buf_reset(err);
			ab = AIS_OK;
		}
	}
	pthread_rwlock_unlock(&cl->rw);
	if (am == AIS_ERR || ab == AIS_ERR) {
		pthread_mutex_unlock(&cl->wmu);
		errno = e;
		goto out;
	}
	if (am == AIS_DONE)
		cmap_free(m), m = NULL;
	if (ab == AIS_DONE)
		bmd_free(b), b = NULL;
	bool decom = false;
	if (m) {
		const cmap_node_t *me = cmap_get(m, cl->self.id, strlen(cl->self.id));
		decom = me && me->state == CMAP_DECOMMISSIONING;
	}
	rc = (m || b) ? clu_install(cl, m, b, err) : AIS_OK;
	m = NULL;
	b = NULL;
	if (rc == AIS_OK && decom)
		clu_mark_decommissioned(cl);
	pthread_mutex_unlock(&cl->wmu);
out:
	cmap_free(m);
	bmd_free(b);
	json_decref(doc);
	return rc;
}

/* --- joining ---------------------------------------------------------------- */

static void node_json(const cmap_node_t *n, buf_t *out)
{
	buf_addstr(out, "{\"id\":");
	buf_add_json_str(out, n->id, strlen(n->id));
	buf_addf(out, ",\"role\":\"%s\",\"pub_url\":", cmap_role_name(n->role));
	buf_add_json_str(out, n->pub_url, strlen(n->pub_url));
	buf_addstr(out, ",\"intra_url\":");
	buf_add_json_str(out, n->intra_url, strlen(n->intra_url));
	buf_addch(out, '}');
}

bool cluster_refresh(cluster_t *cl, uint64_t min_interval_ms)
{
	char url[CMAP_URL_MAX + 64];
	buf_t resp = BUF_INIT, body = BUF_INIT, err = BUF_INIT;
	int status = 0;
	bool changed = false;

	/* one refresh at a time; who waited for it uses its result */
	pthread_mutex_lock(&cl->refresh_mu);
	if (cl->refreshed_ns && time_mono_ns() - cl->refreshed_ns < (int64_t)min_interval_ms * 1000000) {
		pthread_mutex_unlock(&cl->refresh_mu);
		return false;
	}
	if (!cluster_primary_url(cl, url, CMAP_URL_MAX + 1))
		snprintf(url, CMAP_URL_MAX + 1, "%s", cl->conf->join);
	if (!url[0] || cluster_is_primary(cl)) {
		pthread_mutex_unlock(&cl->refresh_mu);
		return false;
	}
	size_t n = strlen(url);
	while (n && url[n - 1] == '/')
		url[--n] = '\0';
	/* the map and the BMD: a node that never joined has neither */
	snprintf(url + n, sizeof(url) - n, "/v1/cluster?what=bmd");
	if (httpc_sync("GET", url, NULL, NULL, 0, 2000, &resp, &status) == AIS_OK && status == 200) {
		buf_addstr(&body, "{\"bmd\":");
		buf_add(&body, resp.ptr, resp.len);
		snprintf(url + n, sizeof(url) - n, "/v1/cluster?what=smap");
	}
	if (body.len && httpc_sync("GET", url, NULL, NULL, 0, 2000, &resp, &status) == AIS_OK && status == 200) {
		pthread_rwlock_rdlock(&cl->rw);
		uint64_t before = cl->cmap ? cmap_version(cl->cmap) : 0;
		pthread_rwlock_unlock(&cl->rw);
		buf_addstr(&body, ",\"cmap\":");
		buf_add(&body, resp.ptr, resp.len);
		buf_addch(&body, '}');
		if (clu_accept_meta(cl, body.ptr, body.len, NULL, &err) == AIS_OK) {
			pthread_rwlock_rdlock(&cl->rw);
			changed = cl->cmap && cmap_version(cl->cmap) != before;
			pthread_rwlock_unlock(&cl->rw);
		}
	}
	cl->refreshed_ns = time_mono_ns();
	pthread_mutex_unlock(&cl->refresh_mu);
	buf_free(&resp);
	buf_free(&body);
	buf_free(&err);
	return changed;
}

/* POSTs the join to base_url; true when the answer was accepted. */
static bool join_at(cluster_t *cl, const char *base_url)
{
	char url[CMAP_URL_MAX + 32];
	size_t ul = strnlen(base_url, CMAP_URL_MAX);
	while (ul && base_url[ul - 1] == '/')
		ul--;
	snprintf(url, sizeof(url), "%.*s/v1/cluster/join", (int)ul, base_url);

	buf_t body = BUF_INIT, resp = BUF_INIT, err = BUF_INIT;
	int status = 0;
	bool ok = false;
	static const char *const hdrs[] = {"Content-Type: application/json", NULL};
	node_json(&cl->self, &body);
	if (httpc_sync("POST", url, hdrs, body.ptr, body.len, 5000, &resp, &status) != AIS_OK || status != 200) {
		if (!cl->join_warned)
			log_warnx("cannot join the cluster at %s: %s%s", url, status ? "" : "no answer: ",
				  resp.ptr ? resp.ptr : "");
		cl->join_warned = true;
	} else if (clu_accept_meta(cl, resp.ptr, resp.len, NULL, &err) != AIS_OK) {
		log_warnx("joining %s: the primary's metadata was refused: %s", url, err.ptr ? err.ptr : "");
	} else {
		cl->joined = true;
		cl->join_warned = false;
		ok = true;
		log_info("joined the cluster at %s as %s", url, cl->self.id);
	}
	buf_free(&body);
	buf_free(&resp);
	buf_free(&err);
	return ok;
}

void clu_join_if_needed(cluster_t *cl, const cmap_t *pm)
{
	char url[CMAP_URL_MAX + 1];
	bool in_map = false;

	if (atomic_load(&cl->decommissioned))
		return; /* the primary decommissioned this node: never rejoin */
	pthread_rwlock_rdlock(&cl->rw);
	if (cl->cmap) {
		const cmap_node_t *me = cmap_get(cl->cmap, cl->self.id, strlen(cl->self.id));
		in_map = me && !strcmp(me->pub_url, cl->self.pub_url);
	}
	pthread_rwlock_unlock(&cl->rw);
	/* pm: the primary answered; not in its map = it dropped us while we
	 * were unreachable (it pushes only to members) */
	if (in_map && cl->joined && !(pm && !cmap_get(pm, cl->self.id, strlen(cl->self.id))))
		return;
	/* the primary of our map first (it may have changed since cluster.join
	 * was written), then cluster.join */
	if (cluster_primary_url(cl, url, sizeof(url)) && join_at(cl, url))
		return;
	if (cl->conf->join[0] && (!cluster_primary_url(cl, url, sizeof(url)) || strcmp(url, cl->conf->join)))
		join_at(cl, cl->conf->join);
}

struct join {
	cmap_node_t node;
	int err;
	buf_t msg;
	buf_t out;
};

static int join_update(cmap_t *m, bmd_t *b, void *arg, buf_t *err)
{
	struct join *j = arg;
	const cmap_node_t *cur = cmap_get(m, j->node.id, strlen(j->node.id));
	if (cur && cur->role == j->node.role && !strcmp(cur->pub_url, j->node.pub_url) &&
	    !strcmp(cur->intra_url, j->node.intra_url))
		return AIS_OK; /* already a member: nothing changes */
	if (cur && cmap_remove(m, j->node.id, err) != AIS_OK)
		return AIS_ERR;
	return cmap_add(m, &j->node, err);
}

static void join_work(http_req_t *req)
{
	struct join *j = req->state;
	cluster_t *cl = cl_of(req);
	if (cluster_update(cl, join_update, j, &j->msg) != AIS_OK)
		j->err = errno ? errno : EIO;
	else
		clu_encode_meta(cl, &j->out);
}

static void join_cleanup(void *arg)
{
	struct join *j = arg;
	buf_free(&j->msg);
	buf_free(&j->out);
}

static void join_done(http_req_t *req)
{
	struct join *j = req->state;
	if (j->err) {
		http_resp_error(req, j->err == EPERM || j->err == EAGAIN ? 503 : 400, "join refused: %s",
				j->msg.ptr ? j->msg.ptr : "");
		return;
	}
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &j->out);
}

static bool json_str(json_t *o, const char *k, char *out, size_t outsz)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_string(v) || json_string_length(v) >= outsz)
		return false;
	memcpy(out, json_string_value(v), json_string_length(v) + 1);
	return true;
}

static void handle_join(http_req_t *req, cluster_t *cl)
{
	char role[16];
	json_error_t jerr;
	json_t *doc = json_loadb(req->body.ptr ? req->body.ptr : "", req->body.len, 0, &jerr);
	struct join *j = arena_zalloc(req->arena, sizeof(*j));

	if (!cluster_is_primary(cl)) {
		char url[CMAP_URL_MAX + 1];
		if (cluster_primary_url(cl, url, sizeof(url)))
			http_resp_error(req, 503, "not the primary gateway: join %s", url);
		else
			http_resp_error(req, 503, "not the primary gateway");
		goto out;
	}
	if (!doc || !json_is_object(doc) || !json_str(doc, "id", j->node.id, sizeof(j->node.id)) ||
	    !json_str(doc, "role", role, sizeof(role)) ||
	    !json_str(doc, "pub_url", j->node.pub_url, sizeof(j->node.pub_url)) ||
	    !json_str(doc, "intra_url", j->node.intra_url, sizeof(j->node.intra_url)) ||
	    cmap_role_parse(role, strlen(role), &j->node.role) != AIS_OK) {
		http_resp_error(req, 400, "join wants {\"id\",\"role\":\"gateway|target\",\"pub_url\",\"intra_url\"}");
		goto out;
	}
	j->node.state = CMAP_ACTIVE;
	req->state = j;
	arena_cleanup_add(req->arena, join_cleanup, j);
	http_offload_net(req, join_work, join_done);
out:
	json_decref(doc);
}

/* --- metasync --------------------------------------------------------------- */

struct msync {
	int err;
	buf_t msg;
	char from[CMAP_ID_MAX + 1]; /* the pushing node (?from=) */
};

static void msync_cleanup(void *arg) { buf_free(&((struct msync *)arg)->msg); }

static void msync_work(http_req_t *req)
{
	struct msync *ms = req->state;
	if (clu_accept_meta(cl_of(req), req->body.ptr ? req->body.ptr : "", req->body.len, ms->from, &ms->msg) !=
	    AIS_OK)
		ms->err = errno ? errno : EIO;
}

static void msync_done(http_req_t *req)
{
	struct msync *ms = req->state;
	const char *m = ms->msg.ptr ? ms->msg.ptr : "";
	/* not ais_errno's map: here EPERM is a sender that is not the primary
	 * (403) and ESTALE, EEXIST, EXDEV metadata older than or diverging from
	 * this node's (409), answers the primary acts on */
	switch (ms->err) {
	case 0: http_resp_send(req, "", 0); break;
	case EINVAL: http_resp_error(req, 400, "metasync: %s", m); break;
	case EPERM: http_resp_error(req, 403, "metasync refused: %s", m); break;
	case ESTALE:
	case EEXIST:
	case EXDEV: http_resp_error(req, 409, "metasync refused: %s", m); break;
	default: http_resp_error(req, 500, "metasync: %s", m); break;
	}
}

int cluster_h_metasync(http_req_t *req)
{
	if (!cl_of(req)) {
		http_resp_error(req, 409, "this node is not in a cluster");
		return AIS_OK;
	}
	struct msync *ms = arena_zalloc(req->arena, sizeof(*ms));
	sv_t from;
	if (!http_query_get(req, "from", &from) || !cmap_id_valid(from.ptr, from.len)) {
		http_resp_error(req, 400, "metasync wants ?from=NODE_ID (the pushing primary)");
		return AIS_OK;
	}
	memcpy(ms->from, from.ptr, from.len);
	req->state = ms;
	arena_cleanup_add(req->arena, msync_cleanup, ms);
	http_offload(req, msync_work, msync_done);
	return AIS_OK;
}

/* --- node state actions: PUT /v1/cluster {"action","value":{"sid"}} ------- */

enum node_act { ACT_START_MAINT, ACT_STOP_MAINT, ACT_DECOMMISSION, ACT_SET_PRIMARY };

static const char *const act_names[] = {"start-maintenance", "stop-maintenance", "decommission-node", "set-primary"};

struct nact {
	enum node_act act;
	char sid[CMAP_ID_MAX + 1];
	bool drain; /* start-maintenance: move the node's objects off */
	int err;
	buf_t msg;
	buf_t out;
};

static void nact_cleanup(void *arg)
{
	struct nact *a = arg;
	buf_free(&a->msg);
	buf_free(&a->out);
}

static int nact_state(cmap_t *m, bmd_t *b, void *arg, buf_t *err)
{
	struct nact *a = arg;
	enum cmap_state st = a->act == ACT_START_MAINT ? CMAP_MAINTENANCE
			     : a->act == ACT_STOP_MAINT ? CMAP_ACTIVE
							: CMAP_DECOMMISSIONING;
	if (cmap_set_state(m, a->sid, st, err) != AIS_OK)
		return AIS_ERR;
	return a->act == ACT_START_MAINT ? cmap_set_drain(m, a->sid, a->drain, err) : AIS_OK;
}

static int nact_remove(cmap_t *m, bmd_t *b, void *arg, buf_t *err)
{
	struct nact *a = arg;
	if (!cmap_get(m, a->sid, strlen(a->sid)))
		return AIS_OK; /* gone already (the keepalive dropped it) */
	return cmap_remove(m, a->sid, err);
}

/*
 * Decommission is two versions: the node in state decommissioning (pushed to
 * every node, the node itself included: it remembers it in node.dir and
 * stops rejoining), then the map without it. In between the node's
 * rebalance moves its objects off (it holds nothing once decommissioning)
 * and this waits for that drain (the jobs' wait_drained).
 */
/* set-primary: a new term with sid primary (the current primary stays a
 * gateway of the map). The node must answer first: handing over to a dead
 * gateway would only start an election. */
static int nact_primary(cmap_t *m, bmd_t *b, void *arg, buf_t *err)
{
	struct nact *a = arg;
	const cmap_node_t *n = cmap_get(m, a->sid, strlen(a->sid));
	if (!n)
		return cmap_fail(err, ENOENT, "no node %s", a->sid);
	if (!strcmp(cmap_primary(m), a->sid))
		return AIS_OK;
	if (n->role != CMAP_GATEWAY || n->state != CMAP_ACTIVE)
		return cmap_fail(err, EINVAL, "%s is not an active gateway", a->sid);
	if (cmap_set_term(m, cmap_term(m) + 1, err) != AIS_OK)
		return AIS_ERR;
	return cmap_set_primary(m, a->sid, err);
}

/* A node action's answer: the map after it. */
static void nact_answer(cluster_t *cl, struct nact *a)
{
	const cmap_t *m;
	cluster_read_lock(cl, &m, NULL);
	if (m)
		cmap_encode(m, &a->out);
	cluster_read_unlock(cl);
}

/* decommission-node of a lost target (dropped from the map while down,
 * cmap_drop): the administrator writes it off, so listings stop counting
 * it as missing (objects it held alone are gone). Nothing to drain. */
static int nact_forget(cmap_t *m, bmd_t *b, void *arg, buf_t *err)
{
	struct nact *a = arg;
	if (cmap_get(m, a->sid, strlen(a->sid)))
		return cmap_fail(err, EAGAIN, "%s joined again meanwhile; decommission it again", a->sid);
	return cmap_forget(m, a->sid);
}

/* Is sid on the map's lost list (and not a node of it)? */
static bool is_lost(cluster_t *cl, const char *sid)
{
	const cmap_t *m;
	bool lost = false;
	cluster_read_lock(cl, &m, NULL);
	for (size_t i = 0; m && !cmap_get(m, sid, strlen(sid)) && i < cmap_lost_count(m); i++)
		lost |= !strcmp(cmap_lost(m, i), sid);
	cluster_read_unlock(cl);
	return lost;
}

static void nact_work(http_req_t *req)
{
	struct nact *a = req->state;
	cluster_t *cl = cl_of(req);
	int rc;
	if (a->act == ACT_DECOMMISSION && is_lost(cl, a->sid)) {
		rc = cluster_update(cl, nact_forget, a, &a->msg);
		if (rc != AIS_OK) {
			a->err = errno ? errno : EIO;
			return;
		}
		log_warnx("decommission %s: a lost target written off (objects it held alone are gone)", a->sid);
		nact_answer(cl, a);
		return;
	}
	if (a->act == ACT_SET_PRIMARY) {
		char url[CMAP_URL_MAX + 1] = "";
		const cmap_t *m;
		cluster_read_lock(cl, &m, NULL);
		const cmap_node_t *n = cmap_get(m, a->sid, strlen(a->sid));
		if (n)
			snprintf(url, sizeof(url), "%s", n->intra_url);
		cluster_read_unlock(cl);
		if (url[0] && strcmp(a->sid, cl->self.id) && !clu_alive(cl, url, 2000)) {
			buf_addf(&a->msg, "%s does not answer its health check", a->sid);
			a->err = EHOSTUNREACH;
			return;
		}
		rc = cluster_update(cl, nact_primary, a, &a->msg);
	} else {
		rc = cluster_update(cl, nact_state, a, &a->msg);
	}
	if (rc == AIS_OK && a->act == ACT_DECOMMISSION) {
		/* the node now moves its objects off (its rebalance); remove it once it is empty */
		const cmap_t *m;
		cluster_read_lock(cl, &m, NULL);
		uint64_t v = m ? cmap_version(m) : 0;
		cluster_read_unlock(cl);
		buf_t dmsg = BUF_INIT;
		const cluster_jobs_ops_t *jo = jobs_ops();
		if (jo && jo->wait_drained(cl, a->sid, v, cl->conf->drain_timeout_ms, &dmsg) != AIS_OK) {
			if (errno == ETIMEDOUT) {
				buf_addf(&a->msg, "not drained within rebalance.drain_timeout: %s (the node stays "
						  "decommissioning; run decommission-node again)", dmsg.ptr ? dmsg.ptr : "");
				buf_free(&dmsg);
				a->err = ETIMEDOUT;
				return;
			}
			log_warnx("decommission %s: %s", a->sid, dmsg.ptr ? dmsg.ptr : "");
		} else {
			log_info("decommission %s: drained (%s)", a->sid, dmsg.ptr ? dmsg.ptr : "");
		}
		buf_free(&dmsg);
		rc = cluster_update(cl, nact_remove, a, &a->msg);
	}
	if (rc != AIS_OK) {
		a->err = errno ? errno : EIO;
		return;
	}
	log_info("%s %s: done", act_names[a->act], a->sid);
	nact_answer(cl, a);
}

static void nact_done(http_req_t *req)
{
	struct nact *a = req->state;
	const char *m = a->msg.ptr ? a->msg.ptr : "";
	if (!a->err) {
		http_resp_header(req, "Content-Type", "application/json");
		http_resp_send_buf(req, &a->out);
	} else if (a->err == ENOENT) {
		http_resp_error(req, 404, "%s: no node \"%s\" in the cluster map", act_names[a->act], a->sid);
	} else {
		http_resp_error(req, ais_errno_status(a->err), "%s %s%s: %s", act_names[a->act], a->sid,
				a->err == EBUSY ? " refused" : "", m);
	}
}

static void redirect_primary(http_req_t *req, cluster_t *cl)
{
	char url[CMAP_URL_MAX + 1];
	if (!cluster_primary_url(cl, url, sizeof(url))) {
		http_resp_error(req, 503, "no primary gateway known");
		return;
	}
	authz_redirect(req, url);
}

static void start_node_action(http_req_t *req, cluster_t *cl, size_t act, const char *sid, size_t sidlen,
			      bool drain)
{
	struct nact *a = arena_zalloc(req->arena, sizeof(*a));
	if (!cmap_id_valid(sid, sidlen)) {
		http_resp_error(req, 400, "%s wants a valid node id in value.sid", act_names[act]);
		return;
	}
	if (!cluster_is_primary(cl)) {
		redirect_primary(req, cl);
		return;
	}
	a->act = (enum node_act)act;
	a->drain = drain;
	memcpy(a->sid, sid, sidlen);
	req->state = a;
	arena_cleanup_add(req->arena, nact_cleanup, a);
	http_offload_net(req, nact_work, nact_done);
}

static void handle_node_action(http_req_t *req, cluster_t *cl)
{
	json_error_t jerr;
	json_t *doc = json_loadb(req->body.ptr ? req->body.ptr : "", req->body.len, 0, &jerr);
	json_t *act = json_object_get(doc, "action");
	json_t *sid = json_object_get(json_object_get(doc, "value"), "sid");
	size_t i;

	if (!json_is_object(doc) || !json_is_string(act)) {
		http_resp_error(req, 400, "PUT /v1/cluster wants {\"action\":\"start-maintenance|stop-maintenance|"
				"decommission-node|set-primary\",\"value\":{\"sid\":\"NODE_ID\"}} or set-config");
		goto out;
	}
	if (!strcmp(json_string_value(act), "set-config")) {
		if (cluster_is_primary(cl))
			cluster_config_all(req, cl); /* config.c */
		else
			redirect_primary(req, cl);
		goto out;
	}
	for (i = 0; i < ARRAY_SIZE(act_names); i++)
		if (!strcmp(json_string_value(act), act_names[i]))
			break;
	if (i == ARRAY_SIZE(act_names)) {
		http_resp_error(req, 400, "unknown cluster action \"%.64s\" (want start-maintenance, "
				"stop-maintenance, decommission-node, set-primary or set-config)", json_string_value(act));
		goto out;
	}
	if (!json_is_string(sid)) {
		http_resp_error(req, 400, "%s wants a valid node id in value.sid", act_names[i]);
		goto out;
	}
	/* start-maintenance: "drain": true moves the node's objects to the
	 * others; AIStore's "skip_rebalance": false means the same. Default:
	 * the objects stay (other targets read them from it on demand). */
	json_t *val = json_object_get(doc, "value");
	json_t *dr = json_object_get(val, "drain"), *skip = json_object_get(val, "skip_rebalance");
	if ((dr && !json_is_boolean(dr)) || (skip && !json_is_boolean(skip)) ||
	    ((dr || skip) && i != ACT_START_MAINT)) {
		http_resp_error(req, 400, "value.drain (or skip_rebalance) is a boolean of start-maintenance only");
		goto out;
	}
	bool drain = dr ? json_is_true(dr) : skip ? !json_is_true(skip) : false;
	start_node_action(req, cl, i, json_string_value(sid), json_string_length(sid), drain);
out:
	json_decref(doc);
}

/* PUT /v1/cluster {"action":"rebalance"|"start-rebalance"} -> 1,
 * "stop-rebalance" -> -1, anything else 0. */
static int job_action(http_req_t *req)
{
	json_error_t jerr;
	json_t *doc = json_loadb(req->body.ptr ? req->body.ptr : "", req->body.len, 0, &jerr);
	const char *a = json_string_value(json_object_get(doc, "action"));
	int r = !a ? 0 : !strcmp(a, "rebalance") || !strcmp(a, "start-rebalance") ? 1 : !strcmp(a, "stop-rebalance") ? -1 : 0;
	json_decref(doc);
	return r;
}

int cluster_h_cluster(http_req_t *req)
{
	cluster_t *cl = cl_of(req);
	sv_t what = {"smap", 4};

	if (!cl) {
		http_resp_error(req, req->method == HTTP_PUT ? 400 : 409, "this node is not in a cluster");
		return AIS_OK;
	}
	if (req->method == HTTP_PUT) {
		int job = job_action(req);
		/* AIStore's set-primary path: PUT /v1/cluster/proxy/NODE_ID */
		if (req->subpath.len > 6 && !memcmp(req->subpath.ptr, "proxy/", 6))
			start_node_action(req, cl, ACT_SET_PRIMARY, req->subpath.ptr + 6, req->subpath.len - 6, false);
		else if (req->subpath.len)
			http_resp_error(req, 404, "no such resource: PUT /v1/cluster takes the action in the body "
						  "(or PUT /v1/cluster/proxy/NODE_ID to set the primary)");
		else if (job)
			return jobs_ops() ? jobs_ops()->action(req, job > 0) : jobs_unavailable(req);
		else
			handle_node_action(req, cl);
		return AIS_OK;
	}
	if (req->method == HTTP_POST) {
		if (sv_eqstr(req->subpath, "join"))
			handle_join(req, cl);
		else if (sv_eqstr(req->subpath, "vote"))
			clu_handle_vote(req, cl);
		else if (sv_eqstr(req->subpath, "lease"))
			clu_handle_lease(req, cl);
		else
			http_resp_error(req, 404, "unknown cluster action: POST /v1/cluster/join, /v1/cluster/vote or "
						  "/v1/cluster/lease");
		return AIS_OK;
	}
	if (req->subpath.len) {
		http_resp_error(req, 404, "no such resource");
		return AIS_OK;
	}
	http_query_get(req, "what", &what);
	sv_t from;
	/* a node's keepalive asks for the map: it lives (a client's "from" is
	 * not a node's word: only a cluster call counts) */
	if (sv_eqstr(what, "smap") && http_query_get(req, "from", &from) && cmap_id_valid(from.ptr, from.len) &&
	    authz_cluster_call(req))
		cluster_heard(from.ptr, from.len);
	if (sv_eqstr(what, "stats"))
		return cluster_stats_cluster(req); /* stats.c */
	if (sv_eqstr(what, "rebalance") || sv_eqstr(what, "jobs") || sv_eqstr(what, "resilver") ||
	    sv_eqstr(what, "prefetch") || sv_eqstr(what, "evict") || /* remote buckets' jobs */
	    sv_eqstr(what, "ec-encode"))
		return jobs_ops() ? jobs_ops()->status(req) : jobs_unavailable(req);
	buf_t out = BUF_INIT;
	const cmap_t *m;
	const bmd_t *b;
	if (sv_eqstr(what, "meta")) /* both, as a push carries them (election.c) */
		clu_encode_meta(cl, &out);
	cluster_read_lock(cl, &m, &b);
	if ((sv_eqstr(what, "smap") || sv_eqstr(what, "cmap")) && m)
		cmap_encode(m, &out);
	else if (sv_eqstr(what, "bmd") && b)
		bmd_encode(b, &out);
	cluster_read_unlock(cl);
	if (!out.len) {
		buf_free(&out);
		http_resp_error(req, 400, "what= must be smap, bmd, meta or stats (and this node must have it)");
		return AIS_OK;
	}
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &out);
	return AIS_OK;
}
