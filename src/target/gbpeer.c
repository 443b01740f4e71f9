/*
 * gbpeer.c - GetBatch entries owned by peer targets: one sub-request per
 * peer, its tar stream split back into the entries' buffers.
 *
 * The designated target (getbatch.c) sends each peer one GET /v1/ml/moss
 * with all of that peer's entries in request order, coer=true, and the
 * header Ais-Moss-Peer (the peer serves every entry itself, never
 * forwards). The answer is a tar with one entry per requested entry, in
 * order: NAME, or __404__/NAME for a missing one (pax headers for long
 * names are read). The parser here is incremental over any split of the
 * bytes, checks each name against the entry it expects, and bounds a pax
 * header by TAR_PAX_MAX: anything else fails the peer's remaining entries.
 * A peer that cannot answer (refused, cut, timed out, 5xx) hands them to
 * other holders of a copy instead (getbatch.c, invariant 5). The
 * sub-requests go over the node-to-node transport (xp.h) on this worker's
 * loop, as do single entries asked again elsewhere (getbatch.c).
 *
 * Backpressure (invariant 2 of getbatch.c): an entry takes data while it
 * buffers less than GB_SLOT_MAX and, unless it is the one being sent, while
 * the request buffers less than GB_MEM_MAX. When the entry the stream is at
 * cannot take more, the rest of the received piece is stashed and the
 * transfer pauses (bytes of a read already under way join the stash: one
 * read at most), and gb_peer_kick (when the entry is drained or becomes
 * the one sent) parses the stash and resumes.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/authz.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/tar.h"
#include "aisd/tarw.h"
#include "aisd/util.h"
#include "getbatch_int.h"
#include "aisd/banned.h"

#define PEER_TIMEOUT_MS 300000 /* a sub-request without progress (its pauses not counted) */

struct pctx {
	struct gb *g;
	struct gb_peer *p;
	int status; /* the peer's answer */
};

void gb_peer_add(struct gb_peer *p, size_t i)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 16;
		p->ents = xrealloc(p->ents, p->cap * sizeof(*p->ents));
	}
	p->ents[p->n++] = i;
}

/* Fails every entry from the stream's position on. */
static void peer_fail(struct gb *g, struct gb_peer *p, int status, const char *msg)
{
	for (size_t k = p->pos; k < p->n; k++) {
		struct gb_ent *e = &g->e[p->ents[k]];
		if (!e->ended)
			gb_ent_fail(e, status, "%.*s: %s", (int)MIN(e->in->name.len, 512), e->in->name.ptr, msg);
	}
	p->pos = p->n;
	p->st = PS_END;
	buf_reset(&p->stash);
	gb_wake(g);
}

/* The peer is gone (getbatch.c, invariant 5): every entry from the
 * stream's position on goes to another holder of a copy; one partly
 * received keeps its bytes and asks the rest. Bytes stashed and not parsed
 * are dropped (they are not counted in any entry). */
static void peer_lost(struct gb *g, struct gb_peer *p, int status, const char *why)
{
	size_t pos = p->pos;
	p->pos = p->n;
	p->st = PS_END;
	buf_reset(&p->stash);
	for (size_t k = pos; k < p->n; k++)
		if (!g->e[p->ents[k]].ended)
			gb_ent_reroute(g, p->ents[k], p, status, why);
	p->dead = true;
	gb_wake(g);
}

/* Is name the entry's name in the peer's answer, bucket/objname[/archpath]
 * (compared in place: no allocation per entry)? */
static bool is_full_name(sv_t name, const moss_in_t *in)
{
	size_t want = in->bck.len + 1 + in->obj.len + (in->arch.len ? 1 + in->arch.len : 0);
	const char *p = name.ptr;
	if (name.len != want || memcmp(p, in->bck.ptr, in->bck.len) || p[in->bck.len] != '/')
		return false;
	p += in->bck.len + 1;
	if (memcmp(p, in->obj.ptr, in->obj.len))
		return false;
	p += in->obj.len;
	return !in->arch.len || (p[0] == '/' && !memcmp(p + 1, in->arch.ptr, in->arch.len));
}

static void entry_end(struct gb *g, struct gb_peer *p, struct gb_ent *e)
{
	e->ended = true;
	p->pos++;
	p->left = tarw_pad_len(e->size);
	p->st = PS_PAD;
	gb_wake(g);
}

/* A complete 512-byte header in p->hbuf. AIS_OK or AIS_ERR (p failed). */
static int peer_header(struct gb *g, struct gb_peer *p)
{
	tar_entry_t te;
	int rc = tar_parse_header(p->hbuf, &te);

	if (rc == AIS_DONE) {
		if (p->pos < p->n) {
			peer_fail(g, p, 502, "the owner's answer ended early");
			return AIS_ERR;
		}
		p->st = PS_END;
		return AIS_OK;
	}
	if (rc != AIS_OK) {
		peer_fail(g, p, 502, "the owner's answer is not a valid tar");
		return AIS_ERR;
	}
	if (te.kind == TAR_PAX) {
		if (te.size > TAR_PAX_MAX) {
			peer_fail(g, p, 502, "the owner's answer has an oversized pax header");
			return AIS_ERR;
		}
		p->pax_size = p->left = te.size;
		buf_reset(&p->pax);
		p->st = PS_PAX;
		return AIS_OK;
	}
	if (te.kind != TAR_FILE || p->pos >= p->n) {
		peer_fail(g, p, 502, "the owner's answer holds an unexpected entry");
		return AIS_ERR;
	}
	sv_t name = p->have_next_name ? sv_of(&p->next_name) : (sv_t){te.name, te.name_len};
	uint64_t size = p->have_next_size ? p->next_size : te.size, mt = 0;
	p->have_next_name = p->have_next_size = false;
	tar_parse_number(p->hbuf + 136, 12, &mt);

	struct gb_ent *e = &g->e[p->ents[p->pos]];
	size_t ml = sizeof(MOSS_MISSING_PREFIX) - 1;
	bool same = is_full_name(name, e->in);
	bool missing = !same && name.len > ml && !memcmp(name.ptr, MOSS_MISSING_PREFIX, ml) &&
		       is_full_name((sv_t){name.ptr + ml, name.len - ml}, e->in);
	if (!same && !missing) {
		peer_fail(g, p, 502, "the owner's answer is out of order");
		return AIS_ERR;
	}
	if (missing) {
		gb_ent_fail(e, 404, "%.*s does not exist", (int)MIN(e->in->name.len, 512), e->in->name.ptr);
		e->size = 0;
		entry_end(g, p, e);
		return AIS_OK;
	}
	e->size = size;
	e->mtime_ns = (int64_t)mt * 1000000000LL;
	e->head = true;
	gb_take_spare(g, &e->data);
	buf_grow(&e->data, (size_t)MIN(size, (uint64_t)GB_SLOT_MAX)); /* one allocation */
	p->left = size;
	p->st = PS_DATA;
	if (!size)
		entry_end(g, p, e);
	gb_wake(g);
	return AIS_OK;
}

/* The pax records of p->pax: path= and size= for the next entry. */
static int peer_pax(struct gb *g, struct gb_peer *p)
{
	const char *v;
	size_t vl;
	int rc = tar_pax_find(p->pax.ptr ? p->pax.ptr : "", p->pax.len, "path", &v, &vl);
	if (rc == AIS_OK) {
		buf_reset(&p->next_name);
		buf_add(&p->next_name, v, vl);
		p->have_next_name = true;
	}
	if (rc != AIS_ERR)
		rc = tar_pax_find(p->pax.ptr ? p->pax.ptr : "", p->pax.len, "size", &v, &vl);
	if (rc == AIS_OK) {
		if (num_parse_u64(v, vl, 0, UINT64_MAX, &p->next_size) != AIS_OK)
			rc = AIS_ERR;
		p->have_next_size = true;
	}
	if (rc == AIS_ERR) {
		peer_fail(g, p, 502, "the owner's answer has a malformed pax header");
		return AIS_ERR;
	}
	p->left = tarw_pad_len(p->pax_size);
	p->st = PS_PAD;
	return AIS_OK;
}

/* Parses n bytes; returns how many were taken (fewer when the entry the
 * stream is at cannot take more: p->blocked), or -1 when p failed. */
static ssize_t peer_feed(struct gb *g, struct gb_peer *p, const char *d, size_t n)
{
	size_t i = 0;

	p->blocked = false;
	while (i < n) {
		size_t k;
		switch (p->st) {
		case PS_HDR:
			k = MIN(sizeof(p->hbuf) - p->hlen, n - i);
			memcpy(p->hbuf + p->hlen, d + i, k);
			p->hlen += k;
			i += k;
			if (p->hlen == sizeof(p->hbuf)) {
				p->hlen = 0;
				if (peer_header(g, p) != AIS_OK)
					return -1;
			}
			break;
		case PS_PAX:
			k = (size_t)MIN((uint64_t)(n - i), p->left);
			buf_add(&p->pax, d + i, k);
			p->left -= k;
			i += k;
			if (!p->left && peer_pax(g, p) != AIS_OK)
				return -1;
			break;
		case PS_DATA: {
			size_t idx = p->ents[p->pos];
			struct gb_ent *e = &g->e[idx];
			if (e->data.len >= GB_SLOT_MAX || (idx != g->cur && g->buffered >= GB_MEM_MAX)) {
				p->blocked = true;
				return (ssize_t)i;
			}
			k = (size_t)MIN((uint64_t)(n - i), p->left);
			gb_take_spare(g, &e->data);
			buf_add(&e->data, d + i, k);
			e->recvd += k;
			g->buffered += k;
			p->left -= k;
			i += k;
			if (idx == g->cur)
				gb_wake(g);
			if (!p->left)
				entry_end(g, p, e);
			break;
		}
		case PS_PAD:
			k = (size_t)MIN((uint64_t)(n - i), p->left);
			p->left -= k;
			i += k;
			break;
		case PS_END:
			return (ssize_t)n; /* the end-of-archive blocks */
		}
		if (p->st == PS_PAD && !p->left)
			p->st = PS_HDR;
	}
	return (ssize_t)i;
}

/* After all bytes were parsed: did the answer hold every entry? */
static void peer_check_end(struct gb *g, struct gb_peer *p)
{
	if (p->ended && !p->stash.len && p->pos < p->n)
		peer_fail(g, p, 502, "the owner's answer ended early");
}

static void peer_head(xp_req_t *r, void *arg, int status, sv_t hdrs, int64_t clen)
{
	struct pctx *c = arg;
	(void)r, (void)hdrs, (void)clen;
	c->status = status;
}

/* Bytes of the peer's answer: parsed into the entries while they take
 * them; once an entry cannot, the rest waits in the stash and the
 * transport pauses (one read's bytes at most arrive after it). */
static void peer_data(xp_req_t *r, void *arg, const char *d, size_t n)
{
	struct pctx *c = arg;
	struct gb_peer *p = c->p;

	if (c->status != 200) { /* an error body: keep its start */
		if (p->errbody.len < 1024)
			buf_add(&p->errbody, d, MIN(n, 1024 - p->errbody.len));
		return;
	}
	if (p->stash.len) { /* still blocked: wait for gb_peer_kick */
		buf_add(&p->stash, d, n);
		return;
	}
	ssize_t k = peer_feed(c->g, p, d, n);
	if (k < 0) {
		xp_cancel(r); /* (the entries failed in peer_feed) */
		p->r = NULL;
		p->ended = true;
		gb_wake(c->g);
		return;
	}
	if ((size_t)k < n) {
		buf_add(&p->stash, d + k, n - (size_t)k);
		p->paused = true;
		xp_pause(r);
	}
}

static void peer_done(xp_req_t *r, void *arg, int err, const char *msg)
{
	struct pctx *c = arg;
	struct gb_peer *p = c->p;
	int st = c->status;

	(void)r;
	p->r = NULL;
	p->ended = true;
	p->paused = false;
	if (p->st == PS_END && p->pos == p->n)
		return;
	if (err) {
		peer_lost(c->g, p, err == ETIMEDOUT ? 504 : 0, msg); /* refused, cut, timed out */
	} else if (st != 200) {
		json_error_t jerr;
		json_t *doc = json_loadb(p->errbody.ptr ? p->errbody.ptr : "", p->errbody.len, 0, &jerr);
		const char *m = json_string_value(json_object_get(doc, "message"));
		if (st >= 500) {
			buf_t why = BUF_INIT;
			buf_addf(&why, "%d %s", st, m ? m : "from the owner");
			peer_lost(c->g, p, 502, why.ptr);
			buf_free(&why);
		} else {
			peer_fail(c->g, p, st == 400 || st == 403 ? st : 502, m ? m : "the owner target answered with an error");
		}
		json_decref(doc);
	} else if (!p->stash.len) {
		peer_check_end(c->g, p);
	}
	gb_wake(c->g);
}

void gb_peer_kick(struct gb *g, struct gb_peer *p)
{
	if (p->stash.len) {
		ssize_t k = peer_feed(g, p, p->stash.ptr, p->stash.len);
		if (k < 0) {
			if (p->r) {
				xp_cancel(p->r);
				p->r = NULL;
			}
			return;
		}
		buf_consume(&p->stash, (size_t)k);
	}
	if (p->stash.len)
		return;
	peer_check_end(g, p);
	if (p->paused && p->r) {
		p->paused = false;
		xp_resume(p->r);
	}
}

void gb_peers_start(struct gb *g)
{
	for (size_t i = 0; i < g->npeers; i++) {
		struct gb_peer *p = &g->peers[i];
		if (!p->batch || !p->n)
			continue;
		buf_addstr(&p->body, "{\"in\":[");
		for (size_t k = 0; k < p->n; k++) {
			const moss_in_t *in = g->e[p->ents[k]].in;
			buf_addstr(&p->body, k ? ",{\"objname\":" : "{\"objname\":");
			buf_add_json_str(&p->body, in->obj.ptr, in->obj.len);
			buf_addstr(&p->body, ",\"bucket\":");
			buf_add_json_str(&p->body, in->bck.ptr, in->bck.len);
			if (in->arch.len) {
				buf_addstr(&p->body, ",\"archpath\":");
				buf_add_json_str(&p->body, in->arch.ptr, in->arch.len);
			}
			if (in->start || in->length)
				buf_addf(&p->body, ",\"start\":%llu,\"length\":%llu", (unsigned long long)in->start,
					 (unsigned long long)in->length);
			buf_addch(&p->body, '}');
		}
		buf_addstr(&p->body, "],\"mime\":\".tar\",\"coer\":true,\"onob\":false,\"strm\":true");
		if (g->mr.etl.len) { /* transformed on the owner (getbatch.c, invariant 7) */
			buf_addstr(&p->body, ",\"etl\":");
			buf_add_json_str(&p->body, g->mr.etl.ptr, g->mr.etl.len);
			buf_addstr(&p->body, ",\"etl_args\":");
			buf_add_json_str(&p->body, g->mr.etl_args.ptr, g->mr.etl_args.len);
		}
		buf_addch(&p->body, '}');
		/* the cluster's signature binds the body (a JSON route buffers it) */
		char auth[AUTHZ_INTRA_HDR_MAX], url[CMAP_URL_MAX + 16];
		snprintf(url, sizeof(url), "%s/v1/ml/moss", p->url);
		const char *hdrs[] = {"Content-Type: application/json", "Ais-Moss-Peer: true", auth, NULL};
		if (!authz_intra_header("GET", url, p->body.ptr, p->body.len, auth, sizeof(auth)))
			hdrs[2] = NULL;
		struct pctx *c = arena_zalloc(g->req->arena, sizeof(*c));
		c->g = g;
		c->p = p;
		xp_spec_t s = {
			.base = p->url, .method = "GET", .target = SV("/v1/ml/moss"), .headers = hdrs,
			.body_len = (int64_t)p->body.len, .timeout_ms = PEER_TIMEOUT_MS, .on_head = peer_head,
			.on_body = peer_data, .on_done = peer_done, .arg = c,
		};
		if (!xp_supports(p->url)) {
			peer_fail(g, p, 502, "the owner target cannot be reached (TLS settings: see the log)");
			continue;
		}
		p->r = xp_start(http_req_base(g->req), &s);
		xp_send(p->r, p->body.ptr, p->body.len);
		xp_end(p->r);
	}
}

void gb_peers_cancel(struct gb *g)
{
	for (size_t i = 0; i < g->npeers; i++) {
		struct gb_peer *p = &g->peers[i];
		if (p->r)
			xp_cancel(p->r);
		p->r = NULL;
		free(p->ents);
		buf_free(&p->body);
		buf_free(&p->pax);
		buf_free(&p->next_name);
		buf_free(&p->stash);
		buf_free(&p->errbody);
	}
}
