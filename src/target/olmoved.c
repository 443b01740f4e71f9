/*
 * olmoved.c - reads during a rebalance: a target that holds an object by
 * the current cluster map but has not received it yet sends the read on
 * to the target that held it under the previous map, instead of fetching
 * the whole object first (ol.c open_sync: received, written, checksummed,
 * then sent). The holder under the previous map serves it with sendfile
 * as it did before the map changed; the copy is left to the rebalance.
 *
 * Guarantees:
 *  1. Only plain reads (GET, HEAD of the native API and of S3) from
 *     outside the cluster are sent on, and only when this target is a
 *     holder under the current map, was none under the previous map, has
 *     no copy and no client's delete of the object recorded (a tombstone:
 *     the read then goes on to the fetch, which answers 404 or a newer
 *     copy), and the bucket is neither erasure coded nor a remote bucket's
 *     cache.
 *  2. The candidate is the first holder under the previous map (on a
 *     target that joined since, which has none: the placement without
 *     itself) that is an active target of the current map and no holder
 *     under it (a current holder would serve the read without repairing
 *     the copy missing here). It is asked first (an intra-cluster HEAD, on
 *     the network pool): only when it has a copy does the read go there,
 *     as a 307 to its public URL with the hop counted (ol.h invariant 4)
 *     and OL_PREV_PARAM set to this map's version (an S3 read, which a
 *     client does not follow through a redirect, is forwarded there with
 *     OL_HOP_HDR and OL_PREV_HDR and its answer relayed: s3/proxy.c);
 *     otherwise (the rebalance is over and the copy here was lost, or the
 *     object exists nowhere) it is served here as before, by the fetch,
 *     without extra redirects. It is sent on only at the first hop, so
 *     that the other target can still send it back (hop 2) when its copy
 *     moved meanwhile.
 *  3. A target serves such a read from its own copy, although the current
 *     map does not place the object there, only when its map is the
 *     sender's (same version, OL_PREV_PARAM or OL_PREV_HDR), the previous
 *     map placed the object there, and it has a copy. That copy was
 *     current when the map changed: every write since went to the new
 *     holder, which did not have one when it sent the read on, and a
 *     client's delete removes the copies of every target. Signed redirects
 *     keep their signature (OL_PREV_PARAM is outside it, like the hop
 *     count): access control is the same as for the first redirect.
 *     OL_PREV_PARAM and OL_PREV_HDR are signed themselves under the
 *     cluster secret, for the path (authz_prev_value): a client that
 *     sends its own, or moves one to another object, gets the current
 *     holder's answer.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "aisd/authz.h"
#include "aisd/httpc.h"
#include "aisd/ol.h"
#include "aisd/place.h"
#include "target_int.h"
#include "aisd/util.h"
#include "aisd/banned.h"

/* How long the new holder waits for the old one to say it has the copy. */
#define MOVED_ASK_MS 10000

static bool plain_read(http_req_t *req, const ol_where_t *w)
{
	return w->cluster && (req->method == HTTP_GET || req->method == HTTP_HEAD);
}

/* Who held bck/obj under the previous map prev (locked by the caller with
 * the current map m): *p. A target with no previous map (it joined, or
 * restarted, since the last change) takes, when guess is set, the current
 * map without itself: the holders it displaced, if it joined (HRW: the top
 * k + 1 minus self are the others' top k). false: no previous placement,
 * or a bucket whose placement is not by whole copies alone (rule 1). */
static bool prev_place(const cmap_t *m, const cmap_t *prev, const bmd_t *b, sv_t bck, sv_t obj, const char *self,
		       bool guess, place_t *p)
{
	const bmd_bucket_t *bk = b ? bmd_get(b, bck.ptr, bck.len) : NULL;
	if (!bk || bk->props.ec_enabled || bk->props.backend.provider[0])
		return false;
	if (prev) {
		place_object(prev, b, bck.ptr, bck.len, obj.ptr, obj.len, self, p);
		return true;
	}
	if (!guess || !m)
		return false;
	buf_t uname = BUF_INIT;
	buf_add(&uname, bck.ptr, bck.len);
	buf_addch(&uname, '/');
	buf_add(&uname, obj.ptr, obj.len);
	place_of(m, uname.ptr, uname.len, place_copies(&bk->props) + 1, self, p);
	buf_free(&uname);
	if (p->self >= 0) { /* drop self, keep the order */
		memmove(&p->node[p->self], &p->node[p->self + 1], (p->n - (size_t)p->self - 1) * sizeof(p->node[0]));
		p->n--;
		p->self = -1;
	}
	return true;
}

/* A read being sent on (or not): the candidate, and the caller's way to
 * serve it here. */
struct mv {
	char pub[CMAP_URL_MAX + 1], intra[CMAP_URL_MAX + 1];
	sv_t bck, obj;
	bool there;     /* the candidate answered that it has a copy */
	unsigned hops;
	uint64_t cmap_version;
	void *state;    /* the caller's req->state */
	ol_here_fn here;
	ol_there_fn there_fn;
	void *arg;
};

static void mv_work(http_req_t *req)
{
	struct mv *v = req->state;
	const char *hp[] = {TGT_INTRA ": moved", NULL};
	buf_t url = BUF_INIT, resp = BUF_INIT;
	int status = 0;
	tgt_url_obj(&url, v->intra, v->bck.ptr, v->bck.len, v->obj.ptr, v->obj.len);
	v->there = httpc_sync("HEAD", url.ptr, hp, NULL, 0, MOVED_ASK_MS, &resp, &status) == AIS_OK && status == 200;
	buf_free(&url);
	buf_free(&resp);
}

static void mv_done(http_req_t *req)
{
	struct mv *v = req->state;
	req->state = v->state;
	if (v->there && v->there_fn)
		v->there_fn(req, v->arg, v->intra, v->hops + 1, v->cmap_version);
	else if (v->there)
		authz_redirect_hop(req, v->pub, v->hops + 1, v->cmap_version);
	else
		v->here(req, v->arg);
}

bool ol_moved(http_req_t *req, target_t *t, sv_t bck, sv_t obj, const ol_where_t *w, ol_here_fn here,
	      ol_there_fn there, void *arg)
{
	const cmap_t *m, *prev;
	const bmd_t *b;
	place_t p, now;
	store_meta_t meta;
	const cmap_node_t *to = NULL;

	/* rule 2: A may send it back; a standalone target has no previous map */
	if (!t->base.cl || !plain_read(req, w) || w->self < 0 || w->hops + 1 >= OL_MAX_HOPS)
		return false;
	const char *self = cluster_self(t->base.cl)->id;
	struct mv *v = arena_zalloc(req->arena, sizeof(*v));
	cluster_read_lock_prev(t->base.cl, &m, &prev, &b);
	if (m && prev_place(m, prev, b, bck, obj, self, true, &p) && p.self < 0) {
		place_object(m, b, bck.ptr, bck.len, obj.ptr, obj.len, self, &now);
		for (size_t i = 0; i < p.n && !to; i++) {
			const cmap_node_t *nd = cmap_get(m, p.node[i]->id, strlen(p.node[i]->id));
			bool holder = false;
			for (size_t k = 0; k < now.n; k++)
				holder |= !strcmp(now.node[k]->id, p.node[i]->id);
			if (nd && !holder && nd->role == CMAP_TARGET && nd->state == CMAP_ACTIVE)
				to = nd;
		}
	}
	if (to) {
		snprintf(v->pub, sizeof(v->pub), "%s", to->pub_url);
		snprintf(v->intra, sizeof(v->intra), "%s", to->intra_url);
	}
	cluster_read_unlock(t->base.cl);
	if (!to || store_lookup(t->store, bck.ptr, bck.len, obj.ptr, obj.len, &meta) == AIS_OK || errno != ENOENT ||
	    store_tomb_get(t->store, bck.ptr, bck.len, obj.ptr, obj.len))
		return false;
	v->bck = bck;
	v->obj = obj;
	v->hops = w->hops;
	v->cmap_version = w->cmap_version;
	v->state = req->state;
	v->here = here;
	v->there_fn = there;
	v->arg = arg;
	req->state = v;
	http_offload_net(req, mv_work, mv_done);
	return true;
}

bool ol_moved_here(http_req_t *req, target_t *t, sv_t bck, sv_t obj, const ol_where_t *w)
{
	const cmap_t *m, *prev;
	const bmd_t *b;
	place_t p;
	sv_t v;
	uint64_t sender = 0;
	store_meta_t meta;

	if (!plain_read(req, w))
		return false;
	if (!http_query_get(req, OL_PREV_PARAM, &v))
		v = http_req_header(req, OL_PREV_HDR);
	if (!authz_prev_get(v, req->path, &sender) || sender != w->cmap_version)
		return false; /* (forged by a client: not signed for this path) */
	cluster_read_lock_prev(t->base.cl, &m, &prev, &b);
	bool was = prev_place(m, prev, b, bck, obj, cluster_self(t->base.cl)->id, false, &p) && p.self >= 0;
	cluster_read_unlock(t->base.cl);
	return was && store_lookup(t->store, bck.ptr, bck.len, obj.ptr, obj.len, &meta) == AIS_OK;
}
