/*
 * getbatch.c - GetBatch on a target: GET /v1/ml/moss[/BUCKET] with a JSON
 * list of objects (and files inside shards) answered by one tar stream with
 * the entries in exactly the request's order. The target that gets the
 * request is its designated target (DT): the gateway redirects the client to
 * the target that owns the most entries.
 *
 * How a request flows:
 *  1. The body is parsed (moss_parse) and every entry gets its owner: this
 *     target, or a peer (HRW over the cluster map, as the gateway routes).
 *  2. This target's entries are checked: objects exist (on the loop, a
 *     LevelDB get each, as GET does), and a member's byte range is looked up
 *     in its shard's tar index (then all of it runs as one I/O pool task).
 *     With coer=false a missing local entry fails the request before any
 *     byte.
 *  3. Entries owned by peers are fetched with streamed GETs (the transport,
 *     xp.h, on this worker's event loop, connections kept per worker and
 *     peer; ?archpath= and Range pass through), at most
 *     GB_INFLIGHT at once and never more than GB_WINDOW entries ahead of the
 *     one being sent.
 *  4. The response starts once the first entry is known (so a first entry
 *     that fails with coer=false still gets its own status) and is produced
 *     entry after entry: a tar header (for a peer's entry of up to
 *     GB_SLOT_MAX bytes, once all of them are here), then the data, then
 *     the padding. Local data goes out as a file segment of the stream (sendfile, cold
 *     pages read ahead on the pool); peer data is copied from its buffer.
 *
 * NOTES ON THE DESIGN (the invariants):
 *  1. Order: entry i+1's header is written only after entry i's padding.
 *  2. Memory: an entry being fetched buffers at most GB_SLOT_MAX bytes (and
 *     the rest of the socket read that crossed it), then its transfer
 *     pauses (TCP backpressure on the peer); entries other than
 *     the one being sent also pause once the request buffers GB_MEM_MAX in
 *     all, and no new fetch starts then: large entries go one at a time.
 *     So a request holds O(GB_MEM_MAX + GB_SLOT_MAX) bytes whatever the
 *     batch size; the owners hold one ordinary GET each.
 *  3. Errors: with coer=true a missing entry (404 from its owner, or a
 *     local object or member that does not exist), and one lost with its
 *     owners (invariant 5), becomes a zero-size entry named "__404__/NAME"
 *     (unless its header is already out); with coer=false, and for any other failure, the
 *     request fails with the entry's status if no byte was sent yet, else
 *     the stream is aborted (the connection closes without the chunked
 *     terminator, so the client sees a truncated tar and an error).
 *  4. Transport callbacks never drive the connection: they only activate
 *     the request's wake event, whose callback (on a clean stack) starts or
 *     resumes the response and starts the fetches that are due. So the
 *     request's arena is never freed (and no other fetch cancelled or
 *     started) inside a transport callback; a fetch whose answer is refused
 *     cancels itself there (the transport allows it).
 *  5. A dead owner: when a peer's answer cannot be had (connection refused
 *     or lost, its timeout, a 5xx), that peer is marked dead for the rest
 *     of the request and each of its entries not yet fully received goes
 *     to the next holder of a copy in HRW order under the current map
 *     (mirror.copies >= 2; this target too, through its own HTTP API), one
 *     GET each with "Ais-Intra" (served there, never redirected). An entry
 *     partly received asks only the rest (a Range from the bytes it has)
 *     and the holder's answer must be a 206 of exactly that many bytes, so
 *     the bytes sent stay the entry's whatever the split. A peer's entry of
 *     up to GB_SLOT_MAX bytes gets its header only once all its bytes are
 *     here (it fits in its buffer), so its owner dying never leaves it half
 *     sent; only a larger one can be cut in its data. With no holder
 *     left the entry fails: as lost (503) when its owners are gone
 *     (connection refused or lost; not after a timeout, which may be a live
 *     peer's paused transfer: 504, nor a 5xx: 502): with coer=true it becomes
 *     "__404__/NAME" like a missing one if its header is not out yet; once
 *     its header is out, nothing can make its bytes right and the stream
 *     is cut (invariant 3). A holder that answers 404 ends the search (the
 *     entry is missing).
 *  7. Transforms ("etl" in the request): each target transforms its own
 *     entries (a peer gets "etl" in its sub-request, a holder of a copy
 *     ?etl= on its GET) through etl_transform_at, the one path from stored
 *     bytes to a worker. Local entries are transformed in prepare_work (on
 *     the pool) and held whole (each at most etl.max_output) until sent; a
 *     failed transform follows invariant 3 as a missing entry does: with
 *     coer=true a "__404__/NAME" entry, else the request fails with the
 *     transform's status and reason (a peer, whose sub-request runs with
 *     coer, reports it as missing).
 *  6. Cost: a request lists at most getbatch.max_entries entries (400),
 *     a client address runs at most getbatch.max_per_client of them on a
 *     target at once (429; nodes of the cluster, whose sub-requests these
 *     are, excepted), and an answer holds at most getbatch.max_bytes of
 *     tar: 400 before the first byte when this target's own entries pass
 *     it, else the entry that passes it fails (invariant 3: the stream is
 *     cut there).
 */
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "aisd/etl.h"
#include "aisd/httpc.h"
#include "aisd/larc.h"
#include "aisd/log.h"
#include "aisd/ol.h"
#include "aisd/moss.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "target_int.h"
#include "aisd/tarw.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "getbatch_int.h"
#include "aisd/banned.h"

void gb_ent_fail(struct gb_ent *e, int status, const char *fmt, ...)
{
	buf_t b = BUF_INIT;
	va_list ap;
	if (e->failed)
		return;
	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	e->failed = true;
	e->status = status;
	e->msg = buf_detach(&b, NULL);
}

static void gb_cleanup(void *arg)
{
	struct gb *g = arg;
	gb_peers_cancel(g);
	for (size_t i = 0; i < g->nspare; i++)
		buf_free(&g->spare[i]);
	for (size_t i = 0; i < g->mr.n; i++) {
		if (g->e[i].r)
			xp_cancel(g->e[i].r);
		buf_free(&g->e[i].data);
		free(g->e[i].msg);
	}
	if (g->wake)
		event_free(g->wake);
}

/* Applies the entry's start/length to [*off, *off + *size): AIS_OK or
 * AIS_ERR (start past the end: 416). */
static int apply_range(const moss_in_t *in, uint64_t *off, uint64_t *size)
{
	if (!in->start && !in->length)
		return AIS_OK;
	if (in->start >= *size)
		return AIS_ERR;
	*off += in->start;
	*size -= in->start;
	if (in->length && in->length < *size)
		*size = in->length;
	return AIS_OK;
}

/* The tar bytes of an entry of size bytes: its header and padded data
 * (a long name's extra header not counted). */
static uint64_t tar_bytes(uint64_t size) { return 512 + ((size + 511) & ~(uint64_t)511); }

/* Invariant 6: the next entry, of size bytes, still fits in the answer
 * (getbatch.max_bytes)? Counts it when it does; else fails e (400). */
static bool out_take(struct gb *g, struct gb_ent *e, uint64_t size)
{
	uint64_t max = g->t->conf->gb_max_bytes;
	if (max && g->out_bytes + tar_bytes(size) > max) {
		gb_ent_fail(e, 400, "the answer passes getbatch.max_bytes (%llu bytes) at entry %zu (%.*s)",
			    (unsigned long long)max, g->cur, (int)MIN(e->in->name.len, 512), e->in->name.ptr);
		return false;
	}
	g->out_bytes += tar_bytes(size);
	return true;
}

static void not_found(struct gb_ent *e, store_t *s)
{
	store_bucket_t b;
	moss_in_t *in = e->in;
	if (store_bucket_get(s, in->bck.ptr, in->bck.len, &b) != AIS_OK)
		gb_ent_fail(e, 404, "bucket \"%.*s\" does not exist", (int)in->bck.len, in->bck.ptr);
	else
		gb_ent_fail(e, 404, "object \"%.*s/%.*s\" does not exist", (int)in->bck.len, in->bck.ptr,
			 (int)MIN(in->obj.len, 512), in->obj.ptr);
}

/* --- 2. the local entries (I/O pool, or the loop when no member is asked) -- */

/* prepare_work: a local entry of size bytes (before its range) counts
 * towards the answer's bytes known before the first is sent. */
static void local_count(struct gb *g, const moss_in_t *in, uint64_t size)
{
	uint64_t off = 0;
	if (apply_range(in, &off, &size) == AIS_OK)
		g->local_bytes += tar_bytes(size);
}

/* Invariant 7: local entry e (its member at e->off/e->size when it names
 * one) through the request's transformer; its answer becomes e's data. */
static void xform(struct gb *g, struct gb_ent *e, buf_t *msg)
{
	moss_in_t *in = e->in;
	store_meta_t m;
	int fd, status = 0;
	buf_reset(msg);
	if (ol_open_sync(g->t, in->bck, in->obj, g->t->base.cl != NULL, &fd, &m, msg) != AIS_OK) {
		if (errno == ENOENT)
			not_found(e, g->t->store);
		else
			gb_ent_fail(e, 500, "%.*s: %s", (int)in->name.len, in->name.ptr, strerror(errno));
		return;
	}
	if (in->arch.len && m.version != e->version) {
		close(fd);
		gb_ent_fail(e, 409, "%.*s/%.*s changed during the batch", (int)in->bck.len, in->bck.ptr,
			 (int)MIN(in->obj.len, 512), in->obj.ptr);
		return;
	}
	buf_reset(msg);
	buf_t out = BUF_INIT;
	int rc = etl_transform_at(g->mr.etl.ptr, g->mr.etl.len, in->bck, in->obj, in->arch, fd, in->arch.len ? e->off : 0,
				  in->arch.len ? e->size : m.size, m.version, g->mr.etl_args, &out, &status, msg);
	close(fd);
	if (rc != AIS_OK) {
		buf_free(&out);
		gb_ent_fail(e, status, "%s", msg->ptr ? msg->ptr : "transform failed");
		e->xfail = true;
		return;
	}
	e->xf = true;
	e->data = out;
	e->size = out.len;
	e->mtime_ns = m.mtime_ns;
	g->buffered += out.len;
	g->local_bytes += tar_bytes(out.len);
}

static void prepare_work(http_req_t *req)
{
	struct gb *g = req->state;
	store_t *s = g->t->store;
	store_tar_index_t *idx = NULL;
	const moss_in_t *idx_of = NULL; /* the shard idx belongs to */
	store_meta_t m, im;
	buf_t msg = BUF_INIT;
	bool fetch = g->t->base.cl != NULL; /* a missing copy (a rebalance under way) is fetched */

	g->local_bytes = 0;
	bool etl = g->mr.etl.len > 0;
	if (etl && !etl_exists(g->mr.etl.ptr, g->mr.etl.len) &&
	    (!g->t->base.cl || etl_pull(g->t->base.cl, g->mr.etl.ptr, g->mr.etl.len) != AIS_OK)) {
		g->etl_unknown = true;
		return;
	}
	for (size_t i = 0; i < g->mr.n; i++) {
		struct gb_ent *e = &g->e[i];
		moss_in_t *in = e->in;
		if (e->owner >= 0 || e->status)
			continue;
		if (!in->arch.len) {
			if (etl) { /* (on the pool: a missing copy is fetched there) */
				xform(g, e, &msg);
				continue;
			}
			if (store_lookup(s, in->bck.ptr, in->bck.len, in->obj.ptr, in->obj.len, &m) == AIS_OK) {
				if (tgt_sse_encrypted(m.custom)) {
					gb_ent_fail(e, 403, "%.*s: stored with S3 server-side encryption", (int)in->name.len,
						    in->name.ptr);
					continue;
				}
				local_count(g, in, m.size);
				continue;
			}
			if (errno == ENOENT && fetch && !g->on_pool) {
				g->need_fetch = true; /* the copy here is missing: again on the pool */
				break;
			}
			int fd;
			if (errno == ENOENT && fetch && ol_open_sync(g->t, in->bck, in->obj, true, &fd, &m, &msg) == AIS_OK) {
				close(fd);
				if (tgt_sse_encrypted(m.custom)) {
					gb_ent_fail(e, 403, "%.*s: stored with S3 server-side encryption", (int)in->name.len,
						    in->name.ptr);
					continue;
				}
				local_count(g, in, m.size);
				continue;
			}
			if (errno == ENOENT)
				not_found(e, s);
			else
				gb_ent_fail(e, 500, "%.*s: %s", (int)in->name.len, in->name.ptr, strerror(errno));
			continue;
		}
		if (!idx_of || !sv_eq(idx_of->bck, in->bck) || !sv_eq(idx_of->obj, in->obj)) {
			int fd;
			store_tar_index_free(idx);
			idx = NULL;
			idx_of = in;
			buf_reset(&msg);
			if (ol_open_sync(g->t, in->bck, in->obj, fetch, &fd, &im, &msg) != AIS_OK) {
				if (errno == ENOENT)
					not_found(e, s);
				else
					gb_ent_fail(e, 500, "%.*s: %s", (int)in->name.len, in->name.ptr, strerror(errno));
				idx_of = NULL;
				continue;
			}
			buf_reset(&msg);
			if (store_tar_index(s, in->bck.ptr, in->bck.len, in->obj.ptr, in->obj.len, &im, fd, &idx,
					    &msg) != AIS_OK) {
				int err = errno;
				close(fd);
				idx = NULL;
				idx_of = NULL;
				gb_ent_fail(e, err == EINVAL ? 400 : 500, "%.*s/%.*s is not a valid tar archive: %s",
					 (int)in->bck.len, in->bck.ptr, (int)MIN(in->obj.len, 512), in->obj.ptr,
					 msg.ptr ? msg.ptr : strerror(err));
				continue;
			}
			close(fd);
		}
		if (store_tar_index_find(idx, in->arch.ptr, in->arch.len, &e->off, &e->size) != AIS_OK) {
			gb_ent_fail(e, 404, "archpath \"%.*s\" not found in %.*s/%.*s", (int)MIN(in->arch.len, 512),
				 in->arch.ptr, (int)in->bck.len, in->bck.ptr, (int)MIN(in->obj.len, 512), in->obj.ptr);
			continue;
		}
		e->version = im.version;
		e->mtime_ns = im.mtime_ns;
		if (etl)
			xform(g, e, &msg);
		else
			local_count(g, in, e->size);
	}
	store_tar_index_free(idx);
	buf_free(&msg);
}

/* --- 3. peer fetches (on the worker's loop) ------------------------------- */

void gb_wake(struct gb *g) { event_active(g->wake, EV_TIMEOUT, 0); }

void gb_take_spare(struct gb *g, buf_t *b)
{
	if (!b->cap && g->nspare)
		*b = g->spare[--g->nspare];
}

static bool ok_status(int st) { return st == 200 || st == 206; }

/* The transport's callbacks get the entry through this small context, and
 * what the answer's head said. */
struct fctx {
	struct gb *g;
	size_t i;
	int status;
	int64_t clen;     /* -1: none */
	int64_t mtime_ns; /* from Last-Modified (0 when absent), so a tar is the
			   * same bytes whichever target assembles it */
};

static void on_fetch_head(xp_req_t *r, void *arg, int status, sv_t hdrs, int64_t clen)
{
	struct fctx *f = arg;
	(void)r;
	f->status = status;
	f->clen = clen;
	f->mtime_ns = 0;
	for (sv_t n, v; httpc_header_next(&hdrs, &n, &v);) {
		int64_t ns;
		if (sv_eqcase(n, SV("Last-Modified")) && time_parse_http_date(v.ptr, v.len, &ns) == AIS_OK)
			f->mtime_ns = ns;
	}
}

/* The fetch of f's entry is over (done, or cancelled by us). */
static void fetch_over(struct fctx *f)
{
	struct gb_ent *e = &f->g->e[f->i];
	e->r = NULL;
	e->ended = true;
	f->g->inflight--;
}

/* Refuses the answer of f's entry (e failed already): the fetch ends here. */
static void fetch_refuse(xp_req_t *r, struct fctx *f)
{
	xp_cancel(r); /* (from its own callback: allowed) */
	fetch_over(f);
	gb_wake(f->g);
}

static void on_fetch_data(xp_req_t *r, void *arg, const char *p, size_t n)
{
	struct fctx *f = arg;
	struct gb *g = f->g;
	struct gb_ent *e = &g->e[f->i];
	int st = f->status;

	if (!ok_status(st)) { /* an error body: keep its start for the message */
		if (!e->head && e->data.len < GB_ERRMSG_MAX) /* (a resumed entry's data holds its bytes) */
			buf_add(&e->data, p, MIN(n, GB_ERRMSG_MAX - e->data.len));
		return;
	}
	if (!e->rhead) {
		if (f->clen < 0) {
			gb_ent_fail(e, 502, "%.*s: the owner's answer has no Content-Length", (int)e->in->name.len,
				 e->in->name.ptr);
			fetch_refuse(r, f);
			return;
		}
		uint64_t v = (uint64_t)f->clen;
		e->rhead = true;
		if (e->resumed && (st != 206 || v != e->size - e->recvd)) { /* invariant 5 */
			gb_ent_fail(e, 502, "%.*s: the copy on %s is not the same object (%d, %llu bytes for the last %llu)",
				 (int)e->in->name.len, e->in->name.ptr, g->peers[e->owner].url, st,
				 (unsigned long long)v, (unsigned long long)(e->size - e->recvd));
			fetch_refuse(r, f);
			return;
		}
		if (!e->head) {
			e->size = v;
			e->head = true;
			e->mtime_ns = f->mtime_ns;
			gb_take_spare(g, &e->data);
			buf_grow(&e->data, (size_t)MIN(v, (uint64_t)GB_SLOT_MAX)); /* one allocation */
			gb_wake(g);
		}
	}
	if (e->recvd + n > e->size) {
		gb_ent_fail(e, 502, "%.*s: the owner sent more than its Content-Length", (int)e->in->name.len,
			 e->in->name.ptr);
		fetch_refuse(r, f);
		return;
	}
	gb_take_spare(g, &e->data);
	buf_add(&e->data, p, n);
	e->recvd += n;
	g->buffered += n;
	bool is_cur = f->i == g->cur;
	if (e->data.len >= GB_SLOT_MAX || (!is_cur && g->buffered >= GB_MEM_MAX)) {
		e->paused = true; /* (invariant 2: resumed as its data goes out) */
		xp_pause(r);
	}
	if (is_cur)
		gb_wake(g);
}

static void on_fetch_done(xp_req_t *r, void *arg, int err, const char *msg)
{
	struct fctx *f = arg;
	struct gb *g = f->g;
	struct gb_ent *e = &g->e[f->i];
	int st = f->status;

	(void)r;
	fetch_over(f);
	if (err) {
		if (!e->head)
			buf_free(&e->data); /* the start of an error body, if any */
		gb_ent_reroute(g, f->i, &g->peers[e->owner], err == ETIMEDOUT ? 504 : 0, msg);
	} else if (!ok_status(st)) {
		json_error_t jerr;
		json_t *doc = json_loadb(e->data.ptr && !e->head ? e->data.ptr : "", e->head ? 0 : e->data.len, 0,
					 &jerr);
		const char *m = json_string_value(json_object_get(doc, "message"));
		if (!e->head)
			buf_free(&e->data);
		if (st >= 500) {
			buf_t why = BUF_INIT;
			buf_addf(&why, "%d %s", st, m ? m : "from the owner");
			gb_ent_reroute(g, f->i, &g->peers[e->owner], 502, why.ptr);
			buf_free(&why);
		} else {
			gb_ent_fail(e, st == 404 || st == 416 || st == 400 || st == 403 ? st : 502, "%s",
				 m ? m : "the owner target answered with an error");
		}
		json_decref(doc);
	} else {
		if (!e->head) { /* (an empty body) */
			e->size = f->clen > 0 ? (uint64_t)f->clen : 0;
			e->head = true;
			e->mtime_ns = f->mtime_ns;
		}
		if (e->recvd != e->size)
			gb_ent_fail(e, 502, "%.*s: the owner sent %llu of %llu bytes", (int)e->in->name.len,
				 e->in->name.ptr, (unsigned long long)e->recvd, (unsigned long long)e->size);
	}
	gb_wake(g);
}

static void fetch_start(struct gb *g, size_t i)
{
	struct gb_ent *e = &g->e[i];
	moss_in_t *in = e->in;
	buf_t path = BUF_INIT;
	char range[80];
	const char *hdrs[3] = {TGT_INTRA ": getbatch", NULL, NULL};

	buf_addstr(&path, "/v1/objects/");
	buf_add_pct(&path, in->bck, false);
	buf_addch(&path, '/');
	buf_add_pct(&path, in->obj, true);
	if (in->arch.len) {
		buf_addstr(&path, "?archpath=");
		buf_add_pct(&path, in->arch, false);
	}
	if (g->mr.etl.len) { /* invariant 7: transformed where it is read */
		buf_addstr(&path, in->arch.len ? "&etl=" : "?etl=");
		buf_add_pct(&path, g->mr.etl, false);
		buf_addstr(&path, "&etl_args=");
		buf_add_pct(&path, g->mr.etl_args, false);
	}
	e->rhead = false;
	e->resumed = e->head; /* its size is known: the rest of it from another holder (invariant 5) */
	if (e->resumed) {
		snprintf(range, sizeof(range), "Range: bytes=%llu-%llu", (unsigned long long)(in->start + e->recvd),
			 (unsigned long long)(in->start + e->size - 1));
		hdrs[1] = range;
	} else if (in->length) {
		snprintf(range, sizeof(range), "Range: bytes=%llu-%llu", (unsigned long long)in->start,
			 (unsigned long long)(in->start + in->length - 1));
		hdrs[1] = range;
	} else if (in->start) {
		snprintf(range, sizeof(range), "Range: bytes=%llu-", (unsigned long long)in->start);
		hdrs[1] = range;
	}
	struct fctx *f = arena_zalloc(g->req->arena, sizeof(*f));
	f->g = g;
	f->i = i;
	const char *base = g->peers[e->owner].url;
	if (!xp_supports(base)) {
		gb_ent_fail(e, 502, "%.*s: %s cannot be reached (TLS settings: see the log)", (int)in->name.len,
			 in->name.ptr, base);
		buf_free(&path);
		return;
	}
	xp_spec_t s = {
		.base = base, .method = "GET", .target = sv_of(&path), .headers = hdrs,
		.body_len = -1, .timeout_ms = GB_FETCH_TIMEOUT_MS, .on_head = on_fetch_head,
		.on_body = on_fetch_data, .on_done = on_fetch_done, .arg = f,
	};
	e->r = xp_start(http_req_base(g->req), &s); /* (copies the path) */
	g->inflight++;
	buf_free(&path);
}

/* Starts the fetches that are due (invariant 2 bounds them). */
static void pump(struct gb *g)
{
	if (g->next_fetch < g->cur)
		g->next_fetch = g->cur;
	/* the entry being sent always starts: the fetches in flight may be
	 * paused until their entries are sent (entries given to another holder
	 * start again from cur: invariant 5) */
	while (g->next_fetch < g->mr.n && g->next_fetch < g->cur + GB_WINDOW &&
	       ((g->inflight < GB_INFLIGHT && g->buffered < GB_MEM_MAX) || g->next_fetch == g->cur)) {
		size_t i = g->next_fetch++;
		struct gb_ent *e = &g->e[i];
		if (e->owner >= 0 && !g->peers[e->owner].batch && !e->failed && !e->r && !e->ended)
			fetch_start(g, i);
	}
}

static int peer_index(struct gb *g, const char *url, bool batch);

static bool url_dead(const struct gb *g, const char *url)
{
	for (size_t i = 0; i < g->npeers; i++)
		if (g->peers[i].dead && !strcmp(g->peers[i].url, url))
			return true;
	return false;
}

void gb_ent_reroute(struct gb *g, size_t i, struct gb_peer *p, int status, const char *why)
{
	struct gb_ent *e = &g->e[i];
	moss_in_t *in = e->in;
	cluster_t *cl = g->t->base.cl;
	int next = -1;

	if (!p->dead)
		log_warnx("GetBatch: %s: %s; its entries go to other holders of a copy, if any", p->url, why);
	p->dead = true;
	if (e->failed)
		return;
	if (g->routed && cl) {
		const cmap_t *m;
		const bmd_t *b;
		place_t pl;
		buf_t uname = BUF_INIT;
		buf_addsv(&uname, in->bck);
		buf_addch(&uname, '/');
		buf_addsv(&uname, in->obj);
		cluster_read_lock(cl, &m, &b);
		place_of(m, uname.ptr, uname.len, tgt_bucket_copies(b, in->bck.ptr, in->bck.len), NULL, &pl);
		for (size_t k = 0; k < pl.n && next < 0; k++)
			if (!url_dead(g, pl.node[k]->intra_url))
				next = peer_index(g, pl.node[k]->intra_url, false);
		cluster_read_unlock(cl);
		buf_free(&uname);
	}
	if (next < 0) {
		gb_ent_fail(e, status ? status : 503, "%.*s: %s, and no other holder of a copy is reachable",
			 (int)MIN(in->name.len, 512), in->name.ptr, why);
		e->lost = !status;
		return;
	}
	log_info("GetBatch: %.*s from %s (%llu of its bytes received)", (int)MIN(in->name.len, 512), in->name.ptr,
		 g->peers[next].url, (unsigned long long)e->recvd);
	e->owner = next;
	e->ended = e->paused = false;
	if (g->next_fetch > i)
		g->next_fetch = i; /* pump starts it (on the wake event: invariant 4) */
	gb_wake(g);
}

/* --- 4. the response ------------------------------------------------------- */

/* Is entry i ready for its header: its failure known, or its size and,
 * when it fits in its buffer (GB_SLOT_MAX), all its bytes (invariant 5)? */
static bool ent_ready(const struct gb *g, size_t i)
{
	const struct gb_ent *e = &g->e[i];
	return e->owner < 0 || e->failed || (e->head && (e->size > GB_SLOT_MAX || e->recvd == e->size));
}

/* Frees what entry i held once it is sent. */
static void ent_release(struct gb *g, struct gb_ent *e)
{
	g->buffered -= e->data.len;
	if (e->data.cap && e->data.cap <= 2 * GB_SLOT_MAX && g->nspare < GB_SPARES) {
		e->data.len = 0; /* kept for a later entry: no allocation churn */
		g->spare[g->nspare++] = e->data;
		e->data = (buf_t)BUF_INIT;
	} else {
		buf_free(&e->data);
	}
}

static void next_entry(struct gb *g)
{
	ent_release(g, &g->e[g->cur]);
	g->cur++;
	g->phase = PH_HDR;
	if (g->cur < g->mr.n) {
		struct gb_ent *e = &g->e[g->cur];
		if (e->paused && e->r) {
			e->paused = false;
			xp_resume(e->r);
		}
	}
	for (size_t i = 0; i < g->npeers; i++)
		if (g->peers[i].blocked || g->peers[i].paused)
			gb_peer_kick(g, &g->peers[i]);
	pump(g);
}

static int abort_stream(struct gb *g, struct gb_ent *e)
{
	log_warnx("GetBatch: aborting the stream at entry %zu (%.*s): %d %s", g->cur,
		  (int)MIN(e->in->name.len, 256), e->in->name.ptr, e->status, e->msg ? e->msg : "");
	return AIS_ERR;
}

/* Header of a local entry, then its data: copied into out when it is small
 * and in the page cache, else sent as a file segment of the stream.
 * Returns AIS_OK (all in out), AIS_AGAIN (a file segment was queued: fill
 * must return), or AIS_ERR (e failed). */
static int send_local(struct gb *g, struct gb_ent *e, buf_t *out)
{
	moss_in_t *in = e->in;
	store_meta_t m;
	int fd;

	if (store_open_obj(g->t->store, in->bck.ptr, in->bck.len, in->obj.ptr, in->obj.len, &fd, &m) != AIS_OK) {
		if (errno == ENOENT)
			not_found(e, g->t->store);
		else
			gb_ent_fail(e, 500, "%.*s: %s", (int)in->name.len, in->name.ptr, strerror(errno));
		return AIS_ERR;
	}
	uint64_t off = 0, size = m.size;
	if (in->arch.len) {
		if (m.version != e->version || m.mtime_ns != e->mtime_ns) {
			close(fd);
			gb_ent_fail(e, 409, "%.*s/%.*s changed during the batch", (int)in->bck.len, in->bck.ptr,
				 (int)MIN(in->obj.len, 512), in->obj.ptr);
			return AIS_ERR;
		}
		off = e->off;
		size = e->size;
	}
	if (apply_range(in, &off, &size) != AIS_OK) {
		close(fd);
		gb_ent_fail(e, 416, "%.*s: range not satisfiable for %llu bytes", (int)in->name.len, in->name.ptr,
			 (unsigned long long)size);
		return AIS_ERR;
	}
	if (!out_take(g, e, size)) {
		close(fd);
		return AIS_ERR;
	}
	tarw_header(out, in->name.ptr, in->name.len, size, m.mtime_ns / 1000000000LL);
	g->sent_size = size;
	g->phase = PH_PAD;
	if (size && size <= GB_INLINE_MAX) {
		/* from the page cache without blocking: many small entries go
		 * out in one send; what is not cached goes as a file segment */
		buf_grow(out, (size_t)size);
		struct iovec iov = {out->ptr + out->len, (size_t)size};
		ssize_t n = preadv2(fd, &iov, 1, (off_t)off, RWF_NOWAIT);
		if (n > 0) {
			out->len += (size_t)n;
			off += (uint64_t)n;
			size -= (uint64_t)n;
		}
	}
	if (size) {
		http_resp_stream_file(g->req, fd, (off_t)off, size);
		return AIS_AGAIN; /* the file segment follows */
	}
	close(fd);
	return AIS_OK;
}

static int fill(http_req_t *req, buf_t *out)
{
	struct gb *g = req->state;

	while (out->len < GB_PIECE) {
		if (g->cur == g->mr.n) {
			tarw_end(out);
			return AIS_DONE;
		}
		struct gb_ent *e = &g->e[g->cur];
		switch (g->phase) {
		case PH_HDR:
			if (!ent_ready(g, g->cur)) {
				pump(g);
				return out->len ? AIS_OK : AIS_AGAIN;
			}
			if (!e->failed && e->owner < 0 && !e->xf) {
				int r = send_local(g, e, out);
				if (r == AIS_AGAIN)
					return AIS_OK; /* the file segment follows */
				if (r == AIS_OK)
					break;
			}
			if (e->failed) {
				if (!g->mr.coer || (e->status != 404 && !e->lost && !e->xfail))
					return abort_stream(g, e);
				buf_t nm = BUF_INIT;
				buf_addstr(&nm, MOSS_MISSING_PREFIX);
				buf_addsv(&nm, e->in->name);
				tarw_header(out, nm.ptr, nm.len, 0, g->mtime_s);
				buf_free(&nm);
				next_entry(g);
				break;
			}
			if (!out_take(g, e, e->size))
				return abort_stream(g, e);
			tarw_header(out, e->in->name.ptr, e->in->name.len, e->size, e->mtime_ns / 1000000000LL);
			g->sent_size = e->size;
			g->left = e->size;
			g->phase = PH_DATA;
			if (e->data.len >= GB_HANDOFF_MIN)
				return AIS_OK; /* the piece ends here: the data goes as the next one, uncopied */
			break;
		case PH_DATA: {
			if (g->left == 0) {
				g->phase = PH_PAD;
				break;
			}
			if (e->failed)
				return abort_stream(g, e);
			if (e->data.len == 0 && e->owner >= 0) {
				if (g->peers[e->owner].batch) {
					gb_peer_kick(g, &g->peers[e->owner]);
				} else if (e->paused && e->r) {
					e->paused = false;
					xp_resume(e->r);
				}
				if (e->failed)
					return abort_stream(g, e);
				if (e->data.len == 0)
					return out->len ? AIS_OK : AIS_AGAIN;
			}
			if (e->data.len == 0)
				return abort_stream(g, e); /* (a transformed entry has all its bytes) */
			size_t n = (size_t)MIN((uint64_t)e->data.len, g->left);
			if (!out->len && n == e->data.len && n >= GB_HANDOFF_MIN) {
				/* hand the buffer over as the piece; the entry gets
				 * the piece's old (empty) buffer to receive into */
				buf_t b = *out;
				*out = e->data;
				e->data = b;
			} else {
				n = MIN(n, (size_t)GB_PIECE);
				buf_add(out, e->data.ptr, n);
				buf_consume(&e->data, n);
			}
			g->buffered -= n;
			g->left -= n;
			if (e->owner < 0) {
				/* transformed here: nothing to resume */
			} else if (g->peers[e->owner].batch) {
				struct gb_peer *pr = &g->peers[e->owner];
				if (pr->blocked || pr->paused)
					gb_peer_kick(g, pr);
			} else if (e->paused && e->r && e->data.len < GB_SLOT_MAX / 2) {
				e->paused = false;
				xp_resume(e->r);
			}
			break;
		}
		case PH_PAD:
			tarw_pad(out, g->sent_size);
			next_entry(g);
			break;
		}
	}
	return AIS_OK;
}

/* The wake event: starts the response once the first entry is known, or
 * resumes a waiting stream. Runs on a clean stack (invariant 5). */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct gb *g = arg;
	http_req_t *req = g->req;

	pump(g); /* entries given to another holder (invariant 5) */
	if (g->started) {
		http_resp_stream_wake(req);
		return;
	}
	if (!ent_ready(g, 0))
		return;
	struct gb_ent *e = &g->e[0];
	if (e->failed && (!g->mr.coer || (e->status != 404 && !e->lost && !e->xfail))) {
		http_resp_error(req, e->status, "GetBatch entry 0 (%.*s): %s", (int)MIN(e->in->name.len, 512),
				e->in->name.ptr, e->msg ? e->msg : "failed");
		return;
	}
	g->started = true;
	http_resp_header(req, "Content-Type", "application/x-tar");
	http_resp_send_stream(req, fill);
}

static void prepare_done(http_req_t *req)
{
	struct gb *g = req->state;
	uint64_t max = g->t->conf->gb_max_bytes;

	if (g->etl_unknown) {
		http_resp_error(req, 404, "GetBatch: no transformer \"%.*s\" (aisctl etl ls)", (int)MIN(g->mr.etl.len, 64),
				g->mr.etl.ptr);
		return;
	}
	if (max && g->local_bytes > max) {
		http_resp_error(req, 400, "GetBatch: the answer would pass getbatch.max_bytes (%llu bytes): this "
				"target's own entries alone make %llu", (unsigned long long)max,
				(unsigned long long)g->local_bytes);
		return;
	}

	if (!g->mr.coer) {
		for (size_t i = 0; i < g->mr.n; i++) {
			struct gb_ent *e = &g->e[i];
			if (e->owner < 0 && e->failed) {
				http_resp_error(req, e->status, "GetBatch entry %zu (%.*s): %s", i,
						(int)MIN(e->in->name.len, 512), e->in->name.ptr, e->msg ? e->msg : "failed");
				return;
			}
		}
	}
	g->wake = event_new(http_req_base(req), -1, 0, on_wake, g);
	gb_peers_start(g);
	pump(g);
	gb_wake(g);
}

/* --- 1. the request ---------------------------------------------------------- */

/* The peer for url (added when new): batch peers get one sub-request. */
static int peer_index(struct gb *g, const char *url, bool batch)
{
	for (size_t i = 0; i < g->npeers; i++)
		if (!strcmp(g->peers[i].url, url) && g->peers[i].batch == batch)
			return (int)i;
	if (g->npeers == g->cap || strlen(url) >= sizeof(g->peers[0].url))
		return -1;
	struct gb_peer *p = &g->peers[g->npeers];
	snprintf(p->url, sizeof(p->url), "%s", url);
	p->batch = batch;
	return (int)g->npeers++;
}

/* A member of a compressed shard (.tgz, .zip) held here is read through
 * this target's own archpath GET (which decodes it on the pool), fetched
 * like a peer's entry. */
static void zshard_via_http(struct gb *g, struct gb_ent *e, cluster_t *cl)
{
	char url[CMAP_URL_MAX + 300];
	const char *host = g->t->conf->host;

	if (!e->in->arch.len || larc_kind_of(e->in->obj.ptr, e->in->obj.len) == LARC_NONE)
		return;
	if (cl)
		snprintf(url, sizeof(url), "%s", cluster_self(cl)->intra_url);
	else
		snprintf(url, sizeof(url), "%s://%s:%d", g->t->conf->tls_cert[0] ? "https" : "http",
			 !host[0] || !strcmp(host, "0.0.0.0") ? "127.0.0.1" : host, http_server_port(g->t->srv));
	e->owner = peer_index(g, url, false);
}

int tgt_getbatch(http_req_t *req)
{
	target_t *t = req->ctx;
	cluster_t *cl = t->base.cl;
	struct gb *g;
	sv_t bck = {"", 0};
	buf_t err = BUF_INIT;

	if (req->subpath.len) {
		sv_t obj;
		if (tgt_parse_names(req, &bck, &obj, false) != AIS_OK)
			return AIS_OK;
	}
	if (!http_req_client_job(req, t->conf->gb_max_per_client)) {
		http_resp_header(req, "Retry-After", "1");
		http_resp_error(req, 429, "GetBatch: this client has %llu running on this target already "
				"(getbatch.max_per_client): try again", (unsigned long long)t->conf->gb_max_per_client);
		return AIS_OK;
	}
	g = arena_zalloc(req->arena, sizeof(*g));
	g->t = t;
	g->req = req;
	g->mtime_s = time_now_ns() / 1000000000LL;
	if (moss_parse(req->arena, req->body.ptr ? req->body.ptr : "", req->body.len, bck, t->conf->gb_max_entries, &g->mr, &err) != AIS_OK) {
		http_resp_error(req, 400, "GetBatch: %s", err.ptr ? err.ptr : "invalid request");
		buf_free(&err);
		return AIS_OK;
	}
	if (!tgt_moss_allowed(req, &g->mr))
		return AIS_OK;
	g->e = arena_zalloc(req->arena, g->mr.n * sizeof(*g->e));
	arena_cleanup_add(req->arena, gb_cleanup, g);
	req->state = g;

	/* a DT's sub-request: every entry is served here, never forwarded */
	bool sub = http_req_has_header(req, "Ais-Moss-Peer");
	const cmap_t *m = NULL;
	bool locked = cl && !sub;
	if (locked)
		cluster_read_lock(cl, &m, NULL);
	/* a batch peer per other target, a single-GET one per target (this
	 * one's compressed shards, other holders of a copy: invariant 5), and
	 * room for targets that join meanwhile */
	g->cap = m ? 2 * cmap_size(m) + 8 : 1;
	g->routed = m != NULL;
	g->peers = arena_zalloc(req->arena, g->cap * sizeof(*g->peers));
	buf_t uname = BUF_INIT;
	for (size_t i = 0; i < g->mr.n; i++) {
		struct gb_ent *e = &g->e[i];
		e->in = &g->mr.in[i];
		e->owner = -1;
		if (!m) {
			zshard_via_http(g, e, cl);
			continue;
		}
		buf_reset(&uname);
		buf_addsv(&uname, e->in->bck);
		buf_addch(&uname, '/');
		buf_addsv(&uname, e->in->obj);
		const cmap_node_t *o = cmap_owner(m, uname.ptr, uname.len);
		if (!o)
			gb_ent_fail(e, 503, "no active target in the cluster");
		else if (strcmp(o->id, cluster_self(cl)->id))
			e->owner = peer_index(g, o->intra_url, true);
		else
			zshard_via_http(g, e, cl);
	}
	buf_free(&uname);
	if (locked)
		cluster_read_unlock(cl);
	for (size_t i = 0; i < g->mr.n; i++)
		if (g->e[i].owner >= 0)
			gb_peer_add(&g->peers[g->e[i].owner], i);
	/* plain objects are checked on the loop (a LevelDB get each, as a GET
	 * does); shard members need their index: on the I/O pool */
	bool members = g->mr.etl.len > 0; /* transforms: on the pool (invariant 7) */
	for (size_t i = 0; i < g->mr.n && !members; i++)
		members = g->e[i].owner < 0 && g->e[i].in->arch.len;
	if (!members) {
		prepare_work(req);
		if (!g->need_fetch) {
			prepare_done(req);
			return AIS_OK;
		}
	}
	g->on_pool = true;
	http_offload(req, prepare_work, prepare_done);
	return AIS_OK;
}
