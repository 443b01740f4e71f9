/*
 * ecslice.c - the slices of erasure-coded objects on one target (ec_int.h):
 * their local store bucket and the intra-cluster route /v1/ec that other
 * targets PUT, GET and DELETE them through.
 *
 * Guarantees:
 *  1. Only requests between targets (Ais-Intra) reach a slice: 403 else.
 *  2. A PUT is stored only with valid slice metadata (Ais-Ec-Meta parses),
 *     streamed through ol_stream's bounded buffers, fsynced and committed
 *     by the store with its own checksum; a declared checksum that does not
 *     match is refused (400) and nothing is stored.
 *  3. A GET checks the slice against its checksum before sending it: a
 *     damaged slice is deleted (so the repair rebuilds it) and answered 410,
 *     never sent. A GET with Range (a range read decoding a few stripes)
 *     sends those bytes unchecked (206): its caller checks the stripes
 *     against each other (ecread.c rule 2).
 *  4. A slice another target moves here (EC_MOVE_HDR, ecrepair.c rule 2) is
 *     taken only by a holder (one of the first D+P active targets) under a
 *     map at least as new as the sender's, or by a target whose map is behind
 *     the sender's; others refuse it (409), and so does a target that holds
 *     another slice of the same write. One that holds this slice, or a newer
 *     write's, answers 200 with TGT_HAD without reading the body. Either 200
 *     lets the sender drop its slice.
 *  5. GET ?meta=true with TGT_CMAP_VERSION says (EC_HOLDER_HDR) whether this
 *     target is a holder of the slice under a map at least that new, read
 *     under the same map lock as the slice itself, so a slice it answers
 *     for is never being dropped by its own rebalance (ecrepair.c rule 3).
 *  6. Deletes: a DELETE that is a client's (Ais-Intra: TGT_DELETE, from
 *     ol_delete) leaves a tombstone of the slice before removing it, and
 *     answers 200 when the slice was there, or when the rebalance dropped
 *     it for this same delete (its tombstone already has the delete's
 *     stamp: ecrepair.c drop_slice), so a delete racing the rebalance that
 *     its own tombstones started still hears the object existed; every
 *     GET answer carries the newest tombstone here (EC_DELETED_HDR, of the
 *     object or of its slice); a PUT of a slice whose write (its version)
 *     is older than a tombstone here is refused (410) and stores nothing,
 *     checked before the body and again under the store's commit lock
 *     (store_writer_origin against the slice's tombstone), so a move or a
 *     repair racing a delete cannot bring a slice back.
 *  7. A slice streamed while its object's body arrives (chunked, no
 *     EC_META_HDR in the head, not a move) brings its metadata, custom
 *     metadata and checksum value in the trailer; nothing is committed
 *     before the trailer parsed and the bytes matched that checksum (with
 *     Ais-Checksum-Type in the head); a stream cut short commits nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "ec_int.h"
#include "aisd/hlc.h"
#include "aisd/ec.h"
#include "aisd/log.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

void ec_slice_bucket(const char *bck, size_t blen, char out[24])
{
	snprintf(out, 24, "%%ec%%%016llx", (unsigned long long)XXH64(bck, blen, 0));
}

bool ec_props(target_t *t, sv_t bck, bmd_props_t *out)
{
	const bmd_t *b;
	bool ok = false;
	if (!t->base.cl)
		return false;
	cluster_read_lock(t->base.cl, NULL, &b);
	const bmd_bucket_t *bk = b ? bmd_get(b, bck.ptr, bck.len) : NULL;
	if (bk) {
		*out = bk->props;
		ok = true;
	}
	cluster_read_unlock(t->base.cl);
	return ok;
}

struct slice {
	target_t *t;
	char sb[24];
	sv_t bck, obj;
	uint64_t asker_v;  /* TGT_CMAP_VERSION of the request (0: none) */
	bool move, holder; /* EC_MOVE_HDR; the answer of rule 5 */
	ec_meta_t em;      /* a PUT's slice metadata */
	char why[160];     /* a refused move: why */
	store_writer_t *w;
	enum store_cksum want_type;
	char want_hex[STORE_CKSUM_HEX_MAX];
	char custom[STORE_CUSTOM_MAX];
	bool meta_only, range, client_delete;
	int64_t stamp; /* a client's delete: its stamp (TGT_STAMP; 0: none) */
	bool trailed; /* rule 7: metadata and checksum come in the trailer */
	int fd;
	store_meta_t m;
	int64_t tomb; /* rule 6: the newest tombstone here, or 0 */
	int err;
};

int ec_meta_of(const char *custom, ec_meta_t *out)
{
	const char *nl = strchr(custom, '\n');
	return ec_meta_parse(custom, nl ? (size_t)(nl - custom) : strlen(custom), out);
}

bool ec_same_write(const ec_meta_t *a, const ec_meta_t *b)
{
	return a->d == b->d && a->p == b->p && a->cell == b->cell && a->size == b->size &&
	       a->version == b->version && !strcmp(a->cksum, b->cksum);
}

void ec_place_of(const cmap_t *m, const char *self_id, const char *bck, size_t blen, const char *obj, size_t olen,
		 size_t n, place_t *out)
{
	buf_t un = BUF_INIT;
	buf_add(&un, bck, blen);
	buf_addch(&un, '/');
	buf_add(&un, obj, olen);
	place_of(m, un.ptr, un.len, MIN(n, HRW_TOP_MAX), self_id, out);
	buf_free(&un);
}

bool ec_slice_holder(const cmap_t *m, const char *self_id, const char *bck, size_t blen, const char *obj,
		     size_t olen, unsigned n)
{
	place_t p;
	ec_place_of(m, self_id, bck, blen, obj, olen, n, &p);
	return p.self >= 0;
}

/* Pool, under the map lock: rule 4 for a moved slice. AIS_OK to take it;
 * AIS_ERR with errno EALREADY (had) or EEXIST (refused, s->why). */
static int move_check(struct slice *s)
{
	cluster_t *cl = s->t->base.cl;
	const cmap_t *m;
	store_meta_t cur;
	ec_meta_t have;
	int rc = AIS_OK;
	if (!cl)
		return AIS_OK;
	cluster_read_lock(cl, &m, NULL);
	uint64_t v = m ? cmap_version(m) : 0;
	if (v >= s->asker_v &&
	    !ec_slice_holder(m, cluster_self(cl)->id, s->bck.ptr, s->bck.len, s->obj.ptr, s->obj.len, s->em.d + s->em.p)) {
		snprintf(s->why, sizeof(s->why), "not a holder of the slices under cluster map v%llu (the sender's: v%llu)",
			 (unsigned long long)v, (unsigned long long)s->asker_v);
		errno = EEXIST;
		rc = AIS_ERR;
	} else if (store_lookup(s->t->store, s->sb, strlen(s->sb), s->obj.ptr, s->obj.len, &cur) == AIS_OK &&
		   ec_meta_of(cur.custom, &have) == AIS_OK) {
		if ((ec_same_write(&have, &s->em) && have.idx == s->em.idx) || have.version > s->em.version) {
			errno = EALREADY;
			rc = AIS_ERR;
		} else if (ec_same_write(&have, &s->em)) {
			snprintf(s->why, sizeof(s->why), "holds slice %u of the same write", have.idx);
			errno = EEXIST;
			rc = AIS_ERR;
		}
	}
	cluster_read_unlock(cl);
	return rc;
}

static void slice_cleanup(void *arg)
{
	struct slice *s = arg;
	store_writer_free(s->w);
	if (s->fd >= 0)
		close(s->fd);
}

/* --- PUT ------------------------------------------------------------------------ */

static int put_begin(ol_stream_t *st)
{
	struct slice *s = st->arg;
	size_t sl = strlen(s->sb);
	if (s->move && move_check(s) != AIS_OK) /* rule 4 */
		return AIS_ERR;
	if (!s->trailed && (ol_deleted(s->t, s->bck, s->obj, (int64_t)s->em.version) ||
			    ol_deleted(s->t, (sv_t){s->sb, sl}, s->obj, (int64_t)s->em.version))) { /* rule 6 */
		errno = ESTALE;
		return AIS_ERR;
	}
	if (store_writer_begin(s->t->store, s->sb, sl, s->obj.ptr, s->obj.len, &s->w) != AIS_OK) {
		if (errno != ENOENT)
			return AIS_ERR;
		/* the first slice of this bucket here */
		if (store_bucket_create(s->t->store, s->sb, sl, CKSUM_XXHASH) != AIS_OK && errno != EEXIST)
			return AIS_ERR;
		if (store_writer_begin(s->t->store, s->sb, sl, s->obj.ptr, s->obj.len, &s->w) != AIS_OK)
			return AIS_ERR;
	}
	return AIS_OK;
}

static int put_write(ol_stream_t *st, const char *b, size_t n)
{
	struct slice *s = st->arg;
	return store_writer_write(s->w, b, n);
}

static int put_commit(ol_stream_t *st)
{
	struct slice *s = st->arg;
	store_writer_origin(s->w, (int64_t)s->em.version); /* rule 6, under the commit lock */
	return store_writer_commit(s->w, s->want_type, s->want_type != CKSUM_NONE ? s->want_hex : NULL, s->custom,
				   NULL);
}

static void put_reply(ol_stream_t *st) { http_resp_send(st->req, "", 0); }

static void put_fail(ol_stream_t *st, int err)
{
	struct slice *s = st->arg;
	if (err == EBADMSG) {
		http_resp_error(st->req, 400, "slice does not match its declared checksum: not stored");
	} else if (err == EALREADY) {
		http_resp_header(st->req, TGT_HAD, "true");
		http_resp_send(st->req, "", 0);
	} else if (err == EEXIST) {
		http_resp_error(st->req, 409, "slice not taken: %s", s->why);
	} else if (err == ESTALE) {
		http_resp_error(st->req, 410, "slice not taken: a client deleted the object after its write");
	} else {
		tgt_resp_errno(st->req, err, "slice");
	}
}

static int put_end(ol_stream_t *st);
static const ol_stream_ops_t put_ops = {
	.end = put_end,
	.begin = put_begin,
	.write = put_write,
	.commit = put_commit,
	.reply = put_reply,
	.fail = put_fail,
};

/* The slice's metadata, custom metadata and declared checksum value into
 * s, from the head or (rule 7) the trailer. AIS_ERR after answering 400. */
static int slice_fields(http_req_t *req, struct slice *s, sv_t em, sv_t md, sv_t cv)
{
	if (!em.ptr || ec_meta_parse(em.ptr, em.len, &s->em) != AIS_OK) {
		http_resp_error(req, 400, "missing or malformed " EC_META_HDR);
		return AIS_ERR;
	}
	if (em.len + 1 + md.len >= sizeof(s->custom)) {
		http_resp_error(req, 400, "slice metadata longer than %d bytes", STORE_CUSTOM_MAX - 1);
		return AIS_ERR;
	}
	memcpy(s->custom, em.ptr, em.len);
	s->custom[em.len] = '\n';
	if (md.len)
		memcpy(s->custom + em.len + 1, md.ptr, md.len);
	if (s->want_type != CKSUM_NONE) {
		if (!cv.ptr || !cv.len || cv.len >= sizeof(s->want_hex)) {
			http_resp_error(req, 400, "bad Ais-Checksum-Value");
			return AIS_ERR;
		}
		memcpy(s->want_hex, cv.ptr, cv.len);
	}
	return AIS_OK;
}

/* The body ended: a streamed slice's fields are in its trailer (rule 7). */
static int put_end(ol_stream_t *st)
{
	struct slice *s = st->arg;
	http_req_t *req = st->req;
	if (!s->trailed)
		return AIS_OK;
	return slice_fields(req, s, http_req_trailer(req, EC_META_HDR), http_req_trailer(req, "Ais-Custom-Md"),
			    http_req_trailer(req, "Ais-Checksum-Value"));
}

static void put_slice(http_req_t *req, struct slice *s)
{
	sv_t em = http_req_header(req, EC_META_HDR), ct = http_req_header(req, "Ais-Checksum-Type");
	s->trailed = req->chunked && !em.ptr && !s->move;
	if (ct.ptr && store_cksum_parse(ct.ptr, ct.len, &s->want_type) != AIS_OK) {
		http_resp_error(req, 400, "bad Ais-Checksum-Type");
		return;
	}
	if (!s->trailed && slice_fields(req, s, em, http_req_header(req, "Ais-Custom-Md"),
					http_req_header(req, "Ais-Checksum-Value")) != AIS_OK)
		return;
	ol_stream_t *st = arena_zalloc(req->arena, sizeof(*st));
	st->ops = &put_ops;
	st->arg = s;
	ol_stream_start(req, st);
}

/* --- GET, DELETE ------------------------------------------------------------------ */

static void get_work(http_req_t *req)
{
	struct slice *s = req->state;
	size_t sl = strlen(s->sb);
	s->tomb = MAX(store_tomb_get(s->t->store, s->bck.ptr, s->bck.len, s->obj.ptr, s->obj.len),
		      store_tomb_get(s->t->store, s->sb, sl, s->obj.ptr, s->obj.len)); /* rule 6 */
	if (s->meta_only) { /* rule 5 */
		cluster_t *cl = s->t->base.cl;
		const cmap_t *m = NULL;
		ec_meta_t em;
		bool locked = cl && s->asker_v; /* (held whether or not a map is there yet) */
		if (locked)
			cluster_read_lock(cl, &m, NULL);
		if (store_lookup(s->t->store, s->sb, sl, s->obj.ptr, s->obj.len, &s->m) != AIS_OK)
			s->err = errno == ENOENT ? ENOENT : EIO;
		else if (m && ec_meta_of(s->m.custom, &em) == AIS_OK)
			s->holder = cmap_version(m) >= s->asker_v &&
				    ec_slice_holder(m, cluster_self(cl)->id, s->bck.ptr, s->bck.len, s->obj.ptr,
						    s->obj.len, em.d + em.p);
		if (locked)
			cluster_read_unlock(cl);
		return;
	}
	if (store_open_obj(s->t->store, s->sb, sl, s->obj.ptr, s->obj.len, &s->fd, &s->m) != AIS_OK) {
		s->fd = -1;
		s->err = errno == ENOENT ? ENOENT : EIO;
		return;
	}
	if (s->range || store_verify_fd(s->fd, &s->m) == AIS_OK)
		return; /* rule 3 */
	log_warnx("the erasure-coded slice of %.*s here (store bucket %s) does not match its checksum: deleted, "
		  "to be rebuilt from the others",
		  (int)MIN(s->obj.len, 200), s->obj.ptr, s->sb);
	close(s->fd);
	s->fd = -1;
	store_delete(s->t->store, s->sb, sl, s->obj.ptr, s->obj.len);
	s->err = EBADMSG;
}

static void get_done(http_req_t *req)
{
	struct slice *s = req->state;
	if (s->tomb)
		http_resp_header(req, EC_DELETED_HDR, "%lld", (long long)s->tomb);
	if (s->err == EBADMSG) {
		http_resp_error(req, 410, "slice damaged (checksum mismatch): deleted");
		return;
	}
	if (s->err) {
		tgt_resp_errno(req, s->err, "slice");
		return;
	}
	const char *nl = strchr(s->m.custom, '\n');
	size_t ml = nl ? (size_t)(nl - s->m.custom) : strlen(s->m.custom);
	http_resp_header(req, EC_META_HDR, "%.*s", (int)ml, s->m.custom);
	if (nl && nl[1])
		http_resp_header(req, "Ais-Custom-Md", "%s", nl + 1);
	http_resp_header(req, "Ais-Checksum-Type", "%s", store_cksum_name(s->m.cksum_type));
	if (s->m.cksum[0])
		http_resp_header(req, "Ais-Checksum-Value", "%s", s->m.cksum);
	if (s->meta_only) {
		if (s->asker_v)
			http_resp_header(req, EC_HOLDER_HDR, "%s", s->holder ? "true" : "false");
		http_resp_send(req, s->m.custom, ml);
		return;
	}
	uint64_t start = 0, len = s->m.size;
	if (tgt_resp_range(req, s->m.size, "application/octet-stream", "a slice", &start, &len) != AIS_OK)
		return;
	int fd = s->fd;
	s->fd = -1;
	http_resp_send_file(req, fd, (off_t)start, len);
}

static void del_work(http_req_t *req)
{
	struct slice *s = req->state;
	size_t sl = strlen(s->sb);
	/* rule 6: dropped already for this delete? */
	bool dropped = s->client_delete && s->stamp && store_tomb_get(s->t->store, s->sb, sl, s->obj.ptr, s->obj.len) == s->stamp;
	if (s->client_delete &&
	    store_tomb_put(s->t->store, s->sb, sl, s->obj.ptr, s->obj.len, s->stamp ? s->stamp : hlc_now()) != AIS_OK)
		log_warn("DELETE of the slice of %.*s: no tombstone kept", (int)MIN(s->obj.len, 200), s->obj.ptr);
	if (store_delete(s->t->store, s->sb, sl, s->obj.ptr, s->obj.len) != AIS_OK && !(errno == ENOENT && dropped))
		s->err = errno ? errno : EIO;
}

static void del_done(http_req_t *req)
{
	struct slice *s = req->state;
	if (s->err)
		tgt_resp_errno(req, s->err, "slice");
	else
		http_resp_send(req, "", 0);
}

int tgt_ec(http_req_t *req)
{
	sv_t bck, obj, v;
	if (!http_req_has_header(req, TGT_INTRA)) { /* rule 1 */
		http_resp_error(req, 403, "/v1/ec is for requests between targets only");
		return AIS_OK;
	}
	if (tgt_parse_names(req, &bck, &obj, true) != AIS_OK)
		return AIS_OK;
	struct slice *s = arena_zalloc(req->arena, sizeof(*s));
	s->t = req->ctx;
	s->bck = bck;
	s->obj = obj;
	s->fd = -1;
	sv_t cv = http_req_header(req, TGT_CMAP_VERSION);
	if (cv.ptr && num_parse_u64(cv.ptr, cv.len, 1, UINT64_MAX, &s->asker_v) != AIS_OK) {
		http_resp_error(req, 400, "bad " TGT_CMAP_VERSION);
		return AIS_OK;
	}
	s->move = http_req_has_header(req, EC_MOVE_HDR);
	if (s->move && !s->asker_v) {
		http_resp_error(req, 400, EC_MOVE_HDR " wants " TGT_CMAP_VERSION);
		return AIS_OK;
	}
	ec_slice_bucket(bck.ptr, bck.len, s->sb);
	s->meta_only = http_query_get(req, "meta", &v) && sv_eqstr(v, "true");
	s->range = http_req_has_header(req, "Range");
	s->client_delete = sv_eqstr(http_req_header(req, TGT_INTRA), TGT_DELETE);
	s->stamp = tgt_stamp_parse(http_req_header(req, TGT_STAMP)); /* the client's delete's (rule 6) */
	arena_cleanup_add(req->arena, slice_cleanup, s);
	req->state = s;
	if (req->method == HTTP_PUT)
		put_slice(req, s);
	else if (req->method == HTTP_DELETE)
		http_offload(req, del_work, del_done);
	else
		http_offload(req, get_work, get_done);
	return AIS_OK;
}
