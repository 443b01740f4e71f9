/*
 * election.c - primary failover: a non-primary node's keepalive round
 * (follow the primary, notice it failing), the candidate's campaign, the
 * voter's side of POST /v1/cluster/vote, and the start-up check of a node
 * whose persisted map names it primary. The voting rules themselves are
 * pure (cmap_vote in vote.c); the rules for the whole cluster are numbered
 * in cluster.h ("Failover").
 *
 * Guarantees:
 *  1. A gateway runs for primary only after the primary failed its checks
 *     for cluster.grace, only if no gateway before it in the election order
 *     (cmap_election_order) answers it (normally one candidate), and only
 *     if it reaches a majority of nodes (pre-vote: a cut-off gateway does
 *     not raise terms in vain).
 *  2. It wins only with the yes votes of a majority of the nodes of its map
 *     (its own included, the failed primary counted), each voter having
 *     persisted its vote for that term first; then it installs the map with
 *     the new term, itself primary and the old primary removed, and pushes
 *     it. A map that changed while it campaigned voids the win.
 *  3. A node that voted yes for another candidate refuses pushes of an
 *     older term for 2 x cluster.grace, so the old primary cannot get a
 *     change confirmed by a majority behind the election's back.
 *  4. A node whose persisted map names it primary asks the other nodes of
 *     that map for theirs before it acts as primary, and follows a newer
 *     one; so does, each round, a node whose primary does not answer.
 * Every network call is made without cl->rw or cl->wmu held, except where
 * runtime.c says so.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "cluster_int.h"
#include "runtime_int.h"
#include "aisd/banned.h"

/* --- the vote record (DIR/vote.json) -------------------------------------- */

static void vote_path(const cluster_t *cl, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s/vote.json", cl->dir);
}

void clu_vote_load(cluster_t *cl)
{
	char p[1200];
	buf_t js = BUF_INIT, err = BUF_INIT;
	vote_path(cl, p, sizeof(p));
	if (cmap_persist_read(p, &js, &err) == AIS_OK) {
		json_t *o = cmap_json_parse(js.ptr ? js.ptr : "", js.len, "vote.json", &err);
		json_t *t = json_object_get(o, "term"), *c = json_object_get(o, "candidate");
		if (json_is_integer(t) && json_integer_value(t) >= 0 && json_is_string(c) &&
		    json_string_length(c) <= CMAP_ID_MAX) {
			cl->voted.term = (uint64_t)json_integer_value(t);
			snprintf(cl->voted.candidate, sizeof(cl->voted.candidate), "%s",
			         json_string_value(c));
		} else {
			log_warnx("%s is not a vote record: ignored", p);
		}
		json_decref(o);
	}
	buf_free(&js);
	buf_free(&err);
}

/* Records a yes vote, durably. Caller holds wmu and grant_mu. */
static int vote_record(cluster_t *cl, uint64_t term, const char *candidate)
{
	char p[1200];
	buf_t js = BUF_INIT, err = BUF_INIT;
	buf_addf(&js, "{\"term\":%llu,\"candidate\":", (unsigned long long)term);
	buf_add_json_str(&js, candidate, strlen(candidate));
	buf_addstr(&js, "}\n");
	vote_path(cl, p, sizeof(p));
	int rc = file_write_atomic(p, js.ptr, js.len, &err);
	if (rc == AIS_OK) {
		cl->voted.term = term;
		snprintf(cl->voted.candidate, sizeof(cl->voted.candidate), "%s", candidate);
	} else {
		log_warnx("cannot record the vote: %s", err.ptr ? err.ptr : "");
	}
	buf_free(&js);
	buf_free(&err);
	return rc;
}

/* --- following a newer map -------------------------------------------------- */

int clu_adopt_from(cluster_t *cl, const char *base_url)
{
	char url[CMAP_URL_MAX + 32];
	buf_t resp = BUF_INIT, err = BUF_INIT;
	int status = 0, rc = AIS_ERR;
	uint64_t t0, v0;

	pthread_rwlock_rdlock(&cl->rw);
	t0 = cmap_term(cl->cmap);
	v0 = cmap_version(cl->cmap);
	pthread_rwlock_unlock(&cl->rw);
	snprintf(url, sizeof(url), "%s/v1/cluster?what=meta", base_url);
	if (httpc_sync("GET", url, NULL, NULL, 0, 3000, &resp, &status) != AIS_OK || status != 200)
		goto out;
	if (clu_accept_meta(cl, resp.ptr ? resp.ptr : "", resp.len, NULL, &err) != AIS_OK)
		goto out;
	pthread_rwlock_rdlock(&cl->rw);
	rc = cmap_term(cl->cmap) != t0 || cmap_version(cl->cmap) != v0 ? AIS_OK : AIS_ERR;
	pthread_rwlock_unlock(&cl->rw);
out:
	buf_free(&resp);
	buf_free(&err);
	return rc;
}

/* GET base/v1/cluster?what=smap, decoded; NULL when no (valid) answer. */
/* from: this node's id when it asks the primary (its keepalive round: the
 * call is life the primary counts, runtime.c clu_heard), else NULL. */
static cmap_t *fetch_smap(const char *base_url, const char *from, uint64_t timeout_ms)
{
	char url[CMAP_URL_MAX + CMAP_ID_MAX + 48];
	buf_t resp = BUF_INIT;
	int status = 0;
	cmap_t *m = NULL;
	snprintf(url, sizeof(url), "%s/v1/cluster?what=smap%s%s", base_url, from ? "&from=" : "", from ? from : "");
	if (httpc_sync("GET", url, NULL, NULL, 0, timeout_ms, &resp, &status) == AIS_OK && status == 200)
		cmap_decode(resp.ptr ? resp.ptr : "", resp.len, &m, NULL);
	buf_free(&resp);
	return m;
}

/* Asks every other node of our map but skip (NULL: none) for its map, in
 * parallel, and adopts the newest that is newer than ours. AIS_OK when one
 * was adopted; *answered: how many answered of *asked. */
static int find_newer(cluster_t *cl, const char *skip, uint64_t timeout_ms, size_t *asked, size_t *answered)
{
	cluster_call_t *calls;
	size_t n, nc = 0;
	cmap_t *cur, *best = NULL;
	char best_url[CMAP_URL_MAX + 1] = "";
	const size_t sfx = strlen("/v1/cluster?what=smap");

	pthread_rwlock_rdlock(&cl->rw);
	cur = cmap_clone(cl->cmap);
	pthread_rwlock_unlock(&cl->rw);
	n = cmap_size(cur);
	calls = xcalloc(n ? n : 1, sizeof(*calls));
	for (size_t i = 0; i < n; i++) {
		const cmap_node_t *nd = cmap_node(cur, i);
		if (!strcmp(nd->id, cl->self.id) || (skip && !strcmp(nd->id, skip)))
			continue;
		snprintf(calls[nc].url, sizeof(calls[nc].url), "%s/v1/cluster?what=smap", nd->intra_url);
		calls[nc].method = "GET";
		calls[nc++].timeout_ms = timeout_ms;
	}
	clu_call_all(cl, calls, nc);
	*asked = nc;
	*answered = 0;
	for (size_t i = 0; i < nc; i++) {
		cmap_t *m = NULL;
		if (calls[i].status == 200 && calls[i].resp.ptr)
			cmap_decode(calls[i].resp.ptr, calls[i].resp.len, &m, NULL);
		*answered += m != NULL;
		if (m && !strcmp(cmap_uuid(m), cmap_uuid(cur)) && cmap_cmp(m, best ? best : cur) > 0) {
			cmap_free(best);
			best = m;
			snprintf(best_url, sizeof(best_url), "%.*s", (int)(strlen(calls[i].url) - sfx), calls[i].url);
		} else {
			cmap_free(m);
		}
		buf_free(&calls[i].resp);
	}
	int rc = best ? clu_adopt_from(cl, best_url) : AIS_ERR;
	if (rc == AIS_OK)
		log_warnx("followed a newer cluster map from %s: term %llu version %llu, primary %s (ours: term %llu "
			  "version %llu, primary %s)", best_url, (unsigned long long)cmap_term(best),
			  (unsigned long long)cmap_version(best), cmap_primary(best), (unsigned long long)cmap_term(cur),
			  (unsigned long long)cmap_version(cur), cmap_primary(cur));
	cmap_free(best);
	cmap_free(cur);
	free(calls);
	return rc;
}

void clu_startup_sync(cluster_t *cl)
{
	size_t asked, answered;
	if (find_newer(cl, NULL, 1000, &asked, &answered) != AIS_OK)
		log_info("resuming as primary: %zu of %zu other nodes answered, none with a newer cluster map",
			 answered, asked);
}

/* --- the candidate ------------------------------------------------------------ */

/* Installs the won map: new term, self primary, old primary out. Caller
 * holds wmu; m is the map the campaign ran on. */
static int take_over(cluster_t *cl, const cmap_t *m, uint64_t term, buf_t *err)
{
	pthread_rwlock_rdlock(&cl->rw);
	bool same = cmap_equal(cl->cmap, m);
	cmap_t *nm = same ? cmap_clone(cl->cmap) : NULL;
	pthread_rwlock_unlock(&cl->rw);
	if (!same) {
		buf_addstr(err, "the cluster map changed during the election");
		return AIS_ERR;
	}
	if (cmap_set_term(nm, term, err) != AIS_OK || cmap_set_primary(nm, cl->self.id, err) != AIS_OK ||
	    cmap_remove(nm, cmap_primary(m), err) != AIS_OK) {
		cmap_free(nm);
		return AIS_ERR;
	}
	return clu_install(cl, nm, NULL, err);
}

/* One ballot: asks every other node (the replaced primary skipped: it
 * never votes yes) in parallel. Returns the yes votes, ours included;
 * *seen gets the highest term a refusing voter already voted in (0 none)
 * and stale the URL of a voter with newer metadata ("" none). */
static size_t ballot(cluster_t *cl, const cmap_t *m, const cmap_ballot_t *b, uint64_t *seen, char *stale,
                     size_t stalesz)
{
	size_t n = cmap_size(m), nask = 0, yes = 1;
	buf_t body = BUF_INIT;
	cluster_call_t *asks = xcalloc(n ? n : 1, sizeof(*asks));
	const size_t sfx = strlen("/v1/cluster/vote");

	*seen = 0;
	stale[0] = '\0';
	cmap_ballot_encode(b, &body);
	for (size_t i = 0; i < n; i++) {
		const cmap_node_t *nd = cmap_node(m, i);
		if (!strcmp(nd->id, cl->self.id) || !strcmp(nd->id, b->primary))
			continue;
		cluster_call_t *a = &asks[nask++];
		snprintf(a->url, sizeof(a->url), "%s/v1/cluster/vote", nd->intra_url);
		a->method = "POST";
		a->body = &body;
		/* the voter checks the primary first, then persists its vote */
		a->timeout_ms = 2 * MIN(cl->conf->keepalive_ms, 1000) + 500;
	}
	clu_call_all(cl, asks, nask);
	for (size_t i = 0; i < nask; i++) {
		cluster_call_t *a = &asks[i];
		json_t *o = a->status == 200 ? json_loadb(a->resp.ptr, a->resp.len, 0, NULL) : NULL;
		json_t *vt = json_object_get(o, "voted_term");
		const char *why = json_string_value(json_object_get(o, "reason"));
		int ul = (int)(strlen(a->url) - sfx);
		if (json_is_true(json_object_get(o, "vote"))) {
			yes++;
		} else {
			log_info("vote from %.*s: no (%s)", ul, a->url,
			         why         ? why
			         : a->status ? "bad answer"
			                     : "no answer");
			if (json_is_integer(vt) && (uint64_t)json_integer_value(vt) >= b->term)
				*seen = MAX(*seen, (uint64_t)json_integer_value(vt));
			if (json_is_true(json_object_get(o, "stale")) && !stale[0])
				snprintf(stale, stalesz, "%.*s", ul, a->url);
		}
		json_decref(o);
		buf_free(&a->resp);
	}
	free(asks);
	buf_free(&body);
	return yes;
}

/* Runs for primary on map m; retries once at once in a higher term when
 * voters had already voted in ours (another candidate's, or an old one). */
static void campaign(cluster_t *cl, const cmap_t *m, uint64_t bmd_ver)
{
	size_t n = cmap_size(m), need = cmap_quorum(m);
	char stale[CMAP_URL_MAX + 1];
	buf_t err = BUF_INIT;
	cmap_ballot_t b;

	memset(&b, 0, sizeof(b));
	snprintf(b.uuid, sizeof(b.uuid), "%s", cmap_uuid(m));
	snprintf(b.candidate, sizeof(b.candidate), "%s", cl->self.id);
	snprintf(b.primary, sizeof(b.primary), "%s", cmap_primary(m));
	b.cmap_term = cmap_term(m);
	b.cmap_version = cmap_version(m);
	b.bmd_version = bmd_ver;
	for (int attempt = 0; attempt < 2 && !atomic_load(&cl->stop); attempt++) {
		uint64_t seen;
		pthread_mutex_lock(&cl->wmu);
		pthread_mutex_lock(&cl->grant_mu);
		b.term = MAX(cmap_term(m), cl->voted.term) + 1;
		int rc = vote_record(cl, b.term, cl->self.id); /* one vote per term: our own */
		pthread_mutex_unlock(&cl->grant_mu);
		pthread_mutex_unlock(&cl->wmu);
		if (rc != AIS_OK)
			break;
		log_warnx("the primary %s failed its health checks for %llu ms: running for primary in term "
		          "%llu "
		          "(%zu votes of %zu nodes needed)",
		          b.primary, (unsigned long long)cl->conf->grace_ms, (unsigned long long)b.term, need,
		          n);
		int64_t bstart = time_mono_ns(); /* every yes vote is a lease granted after this */
		size_t yes = ballot(cl, m, &b, &seen, stale, sizeof(stale));
		if (yes >= need) {
			pthread_mutex_lock(&cl->wmu);
			clu_lease_extend(cl, bstart + clu_lease_ns(cl));
			if (take_over(cl, m, b.term, &err) == AIS_OK) {
				log_warnx("elected primary in term %llu with %zu of %zu votes",
				          (unsigned long long)b.term, yes, n);
				clu_lease_note(cl);
				clu_push_all(cl, NULL, need);
			} else {
				log_warnx("election won but not taken: %s", err.ptr ? err.ptr : "");
			}
			pthread_mutex_unlock(&cl->wmu);
			break;
		}
		log_warnx("election for term %llu lost: %zu of %zu votes, %zu needed",
		          (unsigned long long)b.term, yes, n, need);
		if (stale[0]) {
			clu_adopt_from(cl, stale); /* catch up; the next round tries again */
			break;
		}
		if (!seen)
			break;
		pthread_mutex_lock(&cl->wmu);
		pthread_mutex_lock(&cl->grant_mu);
		if (seen > cl->voted.term)
			vote_record(cl, seen, cl->self.id); /* the retry asks above it */
		pthread_mutex_unlock(&cl->grant_mu);
		pthread_mutex_unlock(&cl->wmu);
	}
	buf_free(&err);
}

/* Pre-vote: a candidate that cannot reach a majority would only raise its
 * term in vain (and make the others' next election need a higher one). */
static bool reach_majority(cluster_t *cl, const cmap_t *m)
{
	size_t n = cmap_size(m), nc = 0, have = 1;
	cluster_call_t *calls = xcalloc(n ? n : 1, sizeof(*calls));
	for (size_t i = 0; i < n; i++) {
		const cmap_node_t *nd = cmap_node(m, i);
		if (!strcmp(nd->id, cl->self.id) || !strcmp(nd->id, cmap_primary(m)))
			continue;
		snprintf(calls[nc].url, sizeof(calls[nc].url), "%s/v1/health", nd->intra_url);
		calls[nc].method = "GET";
		calls[nc++].timeout_ms = MIN(cl->conf->keepalive_ms, 1000);
	}
	clu_call_all(cl, calls, nc);
	for (size_t i = 0; i < nc; i++) {
		have += calls[i].status == 200;
		buf_free(&calls[i].resp);
	}
	free(calls);
	bool ok = have >= cmap_quorum(m);
	if (!ok && !cl->minority_warned)
		log_warnx("the primary %s does not answer, but this gateway reaches only %zu of %zu nodes: "
		          "no election from here",
		          cmap_primary(m), have, n);
	cl->minority_warned = !ok;
	return ok;
}

/* The primary failed past the grace: run for primary if this gateway is the
 * first of the election order that answers (the primary skipped). */
static void maybe_run(cluster_t *cl)
{
	pthread_rwlock_rdlock(&cl->rw);
	cmap_t *m = cmap_clone(cl->cmap);
	uint64_t bv = cl->bmd ? bmd_version(cl->bmd) : 0;
	pthread_rwlock_unlock(&cl->rw);
	const cmap_node_t *me = cmap_get(m, cl->self.id, strlen(cl->self.id));
	size_t cnt = cmap_election_order(m, NULL, 0);
	const cmap_node_t **order = xcalloc(cnt ? cnt : 1, sizeof(*order));
	cmap_election_order(m, order, cnt);
	if (!me || me->state != CMAP_ACTIVE)
		goto out;
	pthread_mutex_lock(&cl->grant_mu);
	bool bound = cmap_lease_binds(&cl->granted, cl->self.id, time_mono_ns(), clu_lease_guard_ns(cl));
	pthread_mutex_unlock(&cl->grant_mu);
	if (bound)
		goto out; /* V5 for its own vote too: its grant to the primary holds */
	for (size_t i = 0; i < cnt; i++) {
		if (!strcmp(order[i]->id, cmap_primary(m)))
			continue;
		if (!strcmp(order[i]->id, cl->self.id)) {
			if (reach_majority(cl, m))
				campaign(cl, m, bv);
			break;
		}
		if (clu_alive(cl, order[i]->intra_url, MIN(cl->conf->keepalive_ms, 1000)))
			break; /* it runs; we vote */
	}
out:
	free(order);
	cmap_free(m);
}

void clu_follower_round(cluster_t *cl)
{
	char url[CMAP_URL_MAX + 1], prim[CMAP_ID_MAX + 1] = "";
	cmap_t *pm = NULL;
	size_t asked, answered;

	/* a target's call may take most of the grace: on a link saturated with
	 * its data a short timeout would abort it before it even arrives (a
	 * lost SYN waits 1 s), and its arrival is what keeps it in the map
	 * (runtime.c clu_heard); a gateway's stays short: it times the
	 * primary's failure */
	uint64_t ka = cl->conf->keepalive_ms, tmo = MIN(ka, 2000);
	if (cl->self.role == CMAP_TARGET && cl->conf->grace_ms > ka)
		tmo = MAX(tmo, MIN(cl->conf->grace_ms - ka, 5000));
	if (cluster_primary_url(cl, url, sizeof(url)))
		pm = fetch_smap(url, cl->self.id, tmo);
	pthread_rwlock_rdlock(&cl->rw);
	size_t n = cl->cmap ? cmap_size(cl->cmap) : 0;
	bool same = pm && cl->cmap && !strcmp(cmap_uuid(pm), cmap_uuid(cl->cmap));
	bool newer = same && cmap_cmp(pm, cl->cmap) > 0;
	if (cl->cmap)
		snprintf(prim, sizeof(prim), "%s", cmap_primary(cl->cmap));
	pthread_rwlock_unlock(&cl->rw);

	if (!pm && clu_local_shortage(cl, "checking the primary")) {
		/* this node's own fault: the primary is not blamed, and nothing else
		 * this round (finding a newer map, joining) could work either */
		return;
	}
	if (same && atomic_load(&cl->decommissioned) && !cmap_get(pm, cl->self.id, strlen(cl->self.id))) {
		clu_leave(cl, pm); /* drained and removed: nothing more to do here */
		cmap_free(pm);
		return;
	}
	if (pm) {
		cl->primary_fail_since = 0;
		if (newer)
			clu_adopt_from(cl, url); /* a push we missed, or a new primary */
	} else if (n > 1 && find_newer(cl, prim, MIN(cl->conf->keepalive_ms, 1000), &asked, &answered) == AIS_OK) {
		/* another primary was elected while we were away (or just now) */
		cl->primary_fail_since = 0;
	} else if (n && cl->self.role == CMAP_GATEWAY && !atomic_load(&cl->decommissioned)) {
		int64_t now = time_mono_ns();
		if (!cl->primary_fail_since) {
			cl->primary_fail_since = now;
			log_warnx("the primary gateway %s does not answer", url);
		} else if (now - cl->primary_fail_since > (int64_t)cl->conf->grace_ms * 1000000) {
			maybe_run(cl);
		}
	}
	if (!cluster_is_primary(cl))
		clu_join_if_needed(cl, pm);
	cmap_free(pm);
}

/* --- the voter: POST /v1/cluster/vote ---------------------------------------- */

struct voter {
	cmap_ballot_t b;
	buf_t out;
};

static void voter_cleanup(void *arg)
{
	buf_free(&((struct voter *)arg)->out);
}

static void voter_work(http_req_t *req)
{
	struct voter *v = req->state;
	cluster_t *cl = ((node_base_t *)req->ctx)->cl;
	char purl[CMAP_URL_MAX + 1] = "";
	buf_t why = BUF_INIT;
	bool alive = false;

	pthread_rwlock_rdlock(&cl->rw);
	const cmap_node_t *p =
	        cl->cmap ? cmap_get(cl->cmap, cmap_primary(cl->cmap), strlen(cmap_primary(cl->cmap))) : NULL;
	bool self_primary = p && !strcmp(p->id, cl->self.id);
	if (p)
		snprintf(purl, sizeof(purl), "%s", p->intra_url);
	pthread_rwlock_unlock(&cl->rw);
	if (self_primary)
		alive = true;
	else if (purl[0])
		alive = clu_alive(cl, purl, MIN(cl->conf->keepalive_ms, 1000)) ||
		        httpc_local_shortage(); /* unknown: not a reason to vote */

	pthread_mutex_lock(&cl->wmu);
	pthread_mutex_lock(&cl->grant_mu);
	pthread_rwlock_rdlock(&cl->rw);
	enum cmap_vote_res r = cl->cmap ? cmap_vote(cl->cmap, cl->bmd ? bmd_version(cl->bmd) : 0, &cl->voted,
	                                            &v->b, alive, &why)
	                                : CMAP_VOTE_NO;
	uint64_t myterm = cl->cmap ? cmap_term(cl->cmap) : 0;
	pthread_rwlock_unlock(&cl->rw);
	if (!cl->cmap)
		buf_addstr(&why, "this node has no cluster map");
	int64_t now = time_mono_ns();
	if (r == CMAP_VOTE_YES && cmap_lease_binds(&cl->granted, v->b.candidate, now, clu_lease_guard_ns(cl))) {
		r = CMAP_VOTE_NO; /* V5 */
		buf_addf(&why, "this node granted the primary's lease to %s %lld ms ago (it holds for %lld ms)",
		         cl->granted.to[0] ? cl->granted.to : "some gateway (before it restarted)",
		         (long long)((now - cl->granted.at_ns) / 1000000), (long long)(clu_lease_guard_ns(cl) / 1000000));
	}
	if (r == CMAP_VOTE_YES && vote_record(cl, v->b.term, v->b.candidate) != AIS_OK) {
		r = CMAP_VOTE_NO;
		buf_addstr(&why, "cannot record the vote");
	}
	if (r == CMAP_VOTE_YES) { /* a yes vote grants the candidate the lease */
		snprintf(cl->granted.to, sizeof(cl->granted.to), "%s", v->b.candidate);
		cl->granted.term = v->b.term;
		cl->granted.at_ns = time_mono_ns();
	}
	if (r == CMAP_VOTE_YES && strcmp(v->b.candidate, cl->self.id))
		cl->voted_at = time_mono_ns();
	uint64_t vterm = cl->voted.term;
	pthread_mutex_unlock(&cl->grant_mu);
	pthread_mutex_unlock(&cl->wmu);

	if (r == CMAP_VOTE_YES)
		log_warnx("voted for %s as primary in term %llu (the primary %s does not answer)",
		          v->b.candidate, (unsigned long long)v->b.term, v->b.primary);
	buf_addf(&v->out, "{\"vote\":%s,\"stale\":%s,\"term\":%llu,\"voted_term\":%llu,\"reason\":",
	         r == CMAP_VOTE_YES ? "true" : "false", r == CMAP_VOTE_STALE ? "true" : "false",
	         (unsigned long long)myterm, (unsigned long long)vterm);
	buf_add_json_str(&v->out, why.ptr ? why.ptr : "", why.len);
	buf_addch(&v->out, '}');
	buf_free(&why);
}

static void voter_done(http_req_t *req)
{
	struct voter *v = req->state;
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &v->out);
}

void clu_handle_vote(http_req_t *req, cluster_t *cl)
{
	buf_t err = BUF_INIT;
	struct voter *v = arena_zalloc(req->arena, sizeof(*v));
	(void)cl;
	if (cmap_ballot_decode(req->body.ptr ? req->body.ptr : "", req->body.len, &v->b, &err) != AIS_OK) {
		http_resp_error(req, 400, "vote: %s", err.ptr ? err.ptr : "bad ballot");
		buf_free(&err);
		return;
	}
	req->state = v;
	arena_cleanup_add(req->arena, voter_cleanup, v);
	http_offload_net(req, voter_work, voter_done);
}

/* --- the lease: POST /v1/cluster/lease --------------------------------------- */

/* Answered on the event loop, like a health check (the primary's keepalive
 * round counts an answer as one): it waits for nothing but grant_mu, held
 * at most while a vote is written. */
void clu_handle_lease(http_req_t *req, cluster_t *cl)
{
	cmap_lease_req_t r;
	buf_t err = BUF_INIT, why = BUF_INIT, out = BUF_INIT;
	bool granted = false;

	if (cmap_lease_decode(req->body.ptr ? req->body.ptr : "", req->body.len, &r, &err) != AIS_OK) {
		http_resp_error(req, 400, "lease: %s", err.ptr ? err.ptr : "bad request");
		buf_free(&err);
		return;
	}
	/* under grant_mu: a grant and a vote never interleave (L1 reads the
	 * vote, V5 the grant) */
	pthread_mutex_lock(&cl->grant_mu);
	pthread_rwlock_rdlock(&cl->rw);
	uint64_t myterm = cl->cmap ? cmap_term(cl->cmap) : 0;
	if (!cl->cmap)
		buf_addstr(&why, "this node has no cluster map");
	else if (!strcmp(r.primary, cl->self.id))
		buf_addstr(&why, "a node does not grant itself the lease");
	else
		granted = cmap_lease_grant(cl->cmap, &cl->voted, &r, &why);
	pthread_rwlock_unlock(&cl->rw);
	if (granted) {
		snprintf(cl->granted.to, sizeof(cl->granted.to), "%s", r.primary);
		cl->granted.term = r.term;
		cl->granted.at_ns = time_mono_ns();
	}
	pthread_mutex_unlock(&cl->grant_mu);
	buf_addf(&out, "{\"lease\":%s,\"term\":%llu", granted ? "true" : "false", (unsigned long long)myterm);
	if (!granted) {
		buf_addstr(&out, ",\"reason\":");
		buf_add_json_str(&out, why.ptr ? why.ptr : "", why.len);
	}
	buf_addch(&out, '}');
	http_resp_status(req, granted ? 200 : 409);
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &out);
	buf_free(&why);
	buf_free(&err);
}
