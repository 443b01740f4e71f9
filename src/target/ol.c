/*
 * ol.c - the object layer (ol.h) minus the PUT pipeline (olput.c):
 * placement with the hop guard, open-or-fetch, conditionals and delete
 * everywhere. Every API of a target reaches objects through these, and
 * mirror.c holds the blocking copy primitives they use (replicate, fetch,
 * delete on other targets).
 *
 * Guarantees:
 *  1. Placement is computed by place_object (place.h) from the current map
 *     and BMD for every API alike: writes are served by the owner, reads
 *     by any holder; requests between targets (TGT_INTRA) are served where
 *     they land.
 *  2. A request is routed at most OL_MAX_HOPS times (invariant 4 of ol.h):
 *     redirects carry the count in the query (OL_HOP_PARAM), forwards in a
 *     header (OL_HOP_HDR).
 *  3. ol_open serves the copy here when it is there and (with OL_VERIFY)
 *     matches its checksum; else, in a cluster, it fetches a good copy on
 *     the network pool (mirror.c tgt_fetch: other holders, previous holders,
 *     every other target) and opens that, once; in an erasure-coded
 *     bucket, when no target has a whole copy, it rebuilds one from the
 *     object's slices (ecread.c) and opens that; a Range read decodes only
 *     the stripes of its range instead (ec_read_range: a sparse temporary
 *     file with those bytes at their offsets).
 *  4. ol_delete removes every copy and, in an erasure-coded bucket, every
 *     slice on every active target. A client's delete of an object whose
 *     copy or slice was on this target before its tombstone is not a 404,
 *     even when a rebalance walk, acting on that tombstone, dropped the
 *     other copies and slices before the delete's own calls reached them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ec_int.h"
#include "ol_int.h"
#include "aisd/hlc.h"
#include "aisd/authz.h"
#include "aisd/log.h"
#include "aisd/ol.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "target_int.h"
#include "aisd/util.h"
#include "aisd/banned.h"

/* --- placement ----------------------------------------------------------------- */

unsigned ol_hops(http_req_t *req)
{
	sv_t v;
	uint64_t q = 0, h = 0;
	if (http_query_get(req, OL_HOP_PARAM, &v) && num_parse_u64(v.ptr, v.len, 0, 1000, &q) != AIS_OK)
		q = OL_MAX_HOPS;
	v = http_req_header(req, OL_HOP_HDR);
	if (v.ptr && num_parse_u64(v.ptr, v.len, 0, 1000, &h) != AIS_OK)
		h = OL_MAX_HOPS;
	return (unsigned)MAX(q, h);
}

void ol_where_of(target_t *t, sv_t bck, sv_t obj, ol_where_t *w, char (*urls)[CMAP_URL_MAX + 1])
{
	cluster_where_t cw;
	memset(w, 0, sizeof(*w));
	if (!t->base.cl)
		return;
	cluster_where(t->base.cl, bck, obj, true, &cw, urls, HRW_TOP_MAX);
	w->cluster = true;
	w->cmap_version = cw.cmap_version;
	w->bmd_version = cw.bmd_version;
	w->n = cw.n;
	w->self = cw.self;
	if (cw.n) {
		memcpy(w->owner, cw.owner, sizeof(w->owner));
		memcpy(w->owner_intra, cw.owner_intra, sizeof(w->owner_intra));
		w->urls = urls;
	}
}

enum ol_route ol_where(http_req_t *req, target_t *t, sv_t bck, sv_t obj, bool write, bool may_doubt,
		       ol_where_t *w)
{
	cluster_t *cl = t->base.cl;
	char urls[HRW_TOP_MAX][CMAP_URL_MAX + 1];

	memset(w, 0, sizeof(*w));
	if (!cl)
		return OL_HERE;
	if (http_req_has_header(req, TGT_INTRA)) { /* served here, placed by the sender's map */
		sv_t v = http_req_header(req, TGT_CMAP_VERSION);
		if (v.ptr && num_parse_u64(v.ptr, v.len, 0, INT64_MAX, &w->cmap_version) != AIS_OK)
			w->cmap_version = 0;
		v = http_req_header(req, TGT_BMD_VERSION);
		if (v.ptr && num_parse_u64(v.ptr, v.len, 0, INT64_MAX, &w->bmd_version) != AIS_OK)
			w->bmd_version = 0;
		return OL_HERE;
	}
	ol_where_of(t, bck, obj, w, urls);
	w->hops = ol_hops(req);
	if (w->n) {
		w->urls = arena_alloc(req->arena, w->n * sizeof(*w->urls));
		memcpy(w->urls, urls, w->n * sizeof(*w->urls));
	}

	if (write ? w->self == 0 : w->self >= 0)
		return OL_HERE;
	if (may_doubt)
		return OL_DOUBT;
	if (!w->n)
		return OL_NONE;
	return w->hops >= OL_MAX_HOPS ? OL_LOOP : OL_OWNER;
}

void ol_loop_msg(const ol_where_t *w, buf_t *out)
{
	buf_addf(out,
		 "request routed %u times between nodes that disagree about who holds the object "
		 "(this target's cluster map is version %llu, owner %s): not routed again; retry once the "
		 "cluster map has settled",
		 w->hops, (unsigned long long)w->cmap_version, w->owner);
}

void ol_answer_native(http_req_t *req, enum ol_route r, const ol_where_t *w)
{
	if (r == OL_NONE) {
		http_resp_error(req, 503, "no active target in the cluster");
	} else if (r == OL_LOOP) {
		buf_t msg = BUF_INIT;
		ol_loop_msg(w, &msg);
		log_warnx("%.*s %.*s: %s", (int)strlen(http_method_name(req->method)), http_method_name(req->method),
			  (int)MIN(req->path.len, 256), req->path.ptr, msg.ptr);
		http_resp_error(req, 508, "%s", msg.ptr);
		buf_free(&msg);
	} else {
		authz_redirect_hop(req, w->owner, w->hops + 1, 0);
	}
}

/* --- reads ---------------------------------------------------------------------- */

/* ol_open_sync; range: the Range header of the read, or empty (an
 * erasure-coded object with no whole copy decodes only its stripes);
 * head: only the metadata is wanted (*fd is then /dev/null for an object
 * kept as slices only); stream: not NULL when the caller streams *fd as an
 * object kept as slices only is read into it (*stream the read). */
static int open_sync(target_t *t, sv_t bck, sv_t obj, bool fetch, sv_t range, bool head, struct ec_read **stream,
		     int *fd, store_meta_t *m, buf_t *msg)
{
	bool have = store_open_obj(t->store, bck.ptr, bck.len, obj.ptr, obj.len, fd, m) == AIS_OK;
	if (fetch && t->base.cl) { /* a remote bucket: validate or fetch there (olremote.c) */
		int berr;
		bk_bucket_t *bk = olr_backend(t, bck, &berr, msg);
		if (bk || (berr && !have)) {
			if (!have)
				*fd = -1;
			struct olr_reader *rd;
			int rc = bk ? olr_open(t, bk, bck, obj, false, false, fd, m, &rd, msg) : AIS_ERR;
			int e = bk ? errno : EHOSTUNREACH;
			free(bk);
			errno = e;
			return rc;
		}
	}
	if (have)
		return AIS_OK;
	if (!fetch || !t->base.cl)
		return AIS_ERR;
	bmd_props_t bp;
	bool known = ec_props(t, bck, &bp), ec = known && bp.ec_enabled, sliced = known && bp.ec_no_whole;
	if (ec && sliced) { /* kept as slices only (ecread.c rule 3) */
		int rc;
		if (head) {
			rc = ec_stat(t, bck, obj, m, msg);
			if (rc == AIS_OK && (*fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
				rc = AIS_ERR;
		} else {
			rc = range.len && ec_read_range(t, bck, obj, range, fd, m, msg) == AIS_OK
				     ? AIS_OK
				     : (buf_reset(msg), ec_read_open(t, bck, obj, stream && !range.len, fd, m, stream, msg));
		}
		if (rc == AIS_OK)
			return AIS_OK;
		if (errno == ESTALE) { /* its slices are of a write deleted since */
			errno = ENOENT;
			return AIS_ERR;
		}
		if (errno != ENOENT)
			return AIS_ERR;
		buf_reset(msg); /* no slice: a small object's copies, or one not converted yet */
	}
	int rc = tgt_fetch(t, bck.ptr, bck.len, obj.ptr, obj.len, msg), e = errno;
	if (rc == AIS_OK && ec && sliced && t->reb)
		/* a whole copy of an erasure-coded object (a conversion under way)
		 * fetched into a bucket of slices only: the repair encodes what
		 * is missing and drops it (ecrepair.c rule 7) */
		reb_enqueue(t->reb, bck.ptr, bck.len, obj.ptr, obj.len);
	/* a bucket converted back to copies from slices only: a whole copy
	 * is rebuilt from them until the rebalance has made the copies */
	if (rc != AIS_OK && ec != sliced) {
		/* no whole copy could be fetched: decode the range, or rebuild it
		 * from its slices (ecread.c) */
		buf_t emsg = BUF_INIT;
		if (range.len && ec_read_range(t, bck, obj, range, fd, m, &emsg) == AIS_OK) {
			buf_free(&emsg);
			buf_reset(msg);
			return AIS_OK;
		}
		buf_reset(&emsg);
		rc = ec_restore(t, bck, obj, &emsg);
		if (rc == AIS_OK) {
			buf_reset(msg);
		} else if (errno == ESTALE) { /* its slices are of a write deleted since */
			e = ENOENT;
		} else if (errno != ENOENT || e != ENOENT) {
			buf_addf(msg, "%s%s", msg->len ? "; " : "", emsg.ptr ? emsg.ptr : "no slice found");
			e = errno == ENOENT ? e : errno;
		}
		buf_free(&emsg);
	}
	/* open again even when the fetch found nothing: a rebalance may have
	 * delivered the copy here meanwhile, and its sender dropped its own */
	if (store_open_obj(t->store, bck.ptr, bck.len, obj.ptr, obj.len, fd, m) == AIS_OK)
		return AIS_OK;
	if (rc != AIS_OK)
		errno = e;
	return AIS_ERR;
}

int ol_open_sync(target_t *t, sv_t bck, sv_t obj, bool fetch, int *fd, store_meta_t *m, buf_t *msg)
{
	return open_sync(t, bck, obj, fetch, (sv_t){"", 0}, false, NULL, fd, m, msg);
}

/* An open that needs the I/O pool: the copy here is missing, unreadable, or
 * must be checksummed first; a damaged copy is deleted and replaced. */
struct olo {
	target_t *t;
	sv_t bck, obj;
	bool cluster;
	int fd;       /* the open copy; -1 none */
	store_meta_t m;
	bool verify;  /* check fd first */
	bk_bucket_t *bk;          /* a remote bucket's backend (olremote.c) */
	bool stream, range;       /* OL_STREAM; a Range read */
	struct olr_reader *rd;    /* a cold object given while it is fetched */
	struct ec_read *ecr;      /* an object kept as slices only, given while it is read */
	int err;
	buf_t msg;
	void *state;  /* the caller's req->state */
	ol_open_fn done;
	void *arg;
};

static void olo_cleanup(void *arg)
{
	struct olo *o = arg;
	if (o->fd >= 0)
		close(o->fd);
	olr_reader_free(o->rd);
	ec_read_free(o->ecr);
	free(o->bk);
	buf_free(&o->msg);
}

static void olo_work(http_req_t *req)
{
	struct olo *o = req->state;
	if (o->verify) {
		if (store_verify_fd(o->fd, &o->m) == AIS_OK) {
			if (o->bk)
				goto remote;
			return;
		}
		o->err = errno;
		close(o->fd);
		o->fd = -1;
		log_warnx("%.*s/%.*s: the copy here does not match its checksum (%s): %s", (int)o->bck.len,
			  o->bck.ptr, (int)MIN(o->obj.len, 200), o->obj.ptr, o->m.cksum,
			  o->cluster ? "replacing it from another copy" : "damaged");
		if (!o->cluster)
			return;
		store_delete(o->t->store, o->bck.ptr, o->bck.len, o->obj.ptr, o->obj.len);
	}
remote:
	o->err = 0;
	if (o->bk) {
		bool lazy = o->range || req->method == HTTP_HEAD;
		if (olr_open(o->t, o->bk, o->bck, o->obj, o->stream, lazy, &o->fd, &o->m, &o->rd, &o->msg) != AIS_OK) {
			o->fd = -1;
			o->err = errno == ENOENT || errno == ENOSPC || ais_errno(errno)->remote ? errno : EIO;
		}
		return;
	}
	if (open_sync(o->t, o->bck, o->obj, true, o->range ? http_req_header(req, "Range") : (sv_t){"", 0},
		      req->method == HTTP_HEAD, o->stream ? &o->ecr : NULL, &o->fd, &o->m, &o->msg) != AIS_OK) {
		o->fd = -1;
		o->err = errno == ENOENT || errno == EBADMSG || errno == ENOSPC ? errno : EIO;
	}
}

static void olo_done(http_req_t *req)
{
	struct olo *o = req->state;
	int fd = o->fd;
	req->state = o->state;
	o->fd = -1;
	if (o->rd && fd >= 0)
		olr_reader_attach(req, o->rd, fd);
	o->rd = NULL;
	if (o->ecr && fd >= 0)
		ec_read_attach(req, o->ecr, fd);
	else
		ec_read_free(o->ecr);
	o->ecr = NULL;
	o->done(req, o->arg, fd, fd >= 0 ? &o->m : NULL, fd >= 0 ? 0 : o->err, o->msg.ptr ? o->msg.ptr : "");
}

/* A hot object's bytes held for a request from ol_open to the end of its
 * answer (fd OL_FD_MEM: sent from the cache's own copy, http_resp_send_ref),
 * in this worker's list: the request's arena lets go of them. */
struct olm {
	http_req_t *req;
	store_hot_ref_t ref;
	struct olm *next;
};
static __thread struct olm *mem_held;

static void olm_cleanup(void *arg)
{
	struct olm *x = arg;
	for (struct olm **pp = &mem_held; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	store_hot_release(&x->ref);
}

/* Takes ref for req until the request's end. */
static void mem_hold(http_req_t *req, store_hot_ref_t *ref)
{
	struct olm *x = arena_alloc(req->arena, sizeof(*x));
	*x = (struct olm){.req = req, .ref = *ref, .next = mem_held};
	*ref = (store_hot_ref_t){0};
	mem_held = x;
	arena_cleanup_add(req->arena, olm_cleanup, x);
}

static struct olm *mem_find(http_req_t *req)
{
	struct olm *x = mem_held;
	while (x && x->req != req)
		x = x->next;
	return x;
}

bool ol_mem_send(http_req_t *req, int fd, uint64_t start, uint64_t len)
{
	if (fd != OL_FD_MEM)
		return false;
	struct olm *x = mem_find(req);
	if (!x || start > x->ref.len || len > x->ref.len - start) {
		log_errx("no bytes held for a read from memory");
		http_resp_error(req, 500, "internal error: the object's bytes are not held");
		return true;
	}
	http_resp_send_ref(req, x->ref.ptr + start, len);
	return true;
}

void ol_close(http_req_t *req, int fd)
{
	(void)req; /* a held body goes with the request's arena */
	if (fd >= 0)
		close(fd);
}

void ol_open(http_req_t *req, target_t *t, sv_t bck, sv_t obj, unsigned flags, ol_open_fn done, void *arg)
{
	store_meta_t m;
	int fd;
	bool cluster = t->base.cl && !http_req_has_header(req, TGT_INTRA);
	bool verify = (flags & OL_VERIFY) && t->conf->verify_on_read;
	int berr = 0;
	buf_t bmsg = BUF_INIT;
	store_hot_ref_t ref = {0};
	bk_bucket_t *bk = cluster ? olr_backend(t, bck, &berr, &bmsg) : NULL;
	/* from memory: a read sent with ol_send, served from the copy here as
	 * it is, by bytes (not a descriptor handed to a local client) */
	bool mem = (flags & OL_STREAM) && !verify && !(bk && bk->validate_warm_get) &&
		   !http_req_has_header(req, HTTP_HDR_LOCAL_FD);
	int rc = mem ? store_open_hot(t->store, bck.ptr, bck.len, obj.ptr, obj.len, &fd, &m, &ref)
		     : store_open_obj(t->store, bck.ptr, bck.len, obj.ptr, obj.len, &fd, &m);

	if (rc == AIS_OK) {
		if (!verify && !(bk && bk->validate_warm_get)) {
			free(bk);
			buf_free(&bmsg);
			if (fd < 0) { /* the hot cache's copy */
				mem_hold(req, &ref);
				fd = OL_FD_MEM;
			}
			done(req, arg, fd, &m, 0, "");
			return;
		}
	} else if (berr) { /* a remote bucket whose remote is not attached here */
		char *msg = arena_strndup(req->arena, bmsg.ptr, bmsg.len);
		buf_free(&bmsg);
		done(req, arg, -1, NULL, EHOSTUNREACH, msg); /* 503 naming it, as listings and writes */
		return;
	} else if (!cluster) {
		done(req, arg, -1, NULL, errno ? errno : EIO, "");
		return;
	} else {
		fd = -1;
	}
	store_hot_release(&ref); /* (holds nothing here: a hit or fill returned above) */
	struct olo *o = arena_zalloc(req->arena, sizeof(*o));
	o->t = t;
	o->bck = bck;
	o->obj = obj;
	o->cluster = cluster;
	o->fd = fd;
	o->verify = fd >= 0 && verify;
	if (fd >= 0)
		o->m = m;
	o->bk = bk;
	o->stream = flags & OL_STREAM;
	o->range = http_req_has_header(req, "Range");
	buf_free(&bmsg);
	o->state = req->state;
	o->done = done;
	o->arg = arg;
	arena_cleanup_add(req->arena, olo_cleanup, o);
	req->state = o;
	/* a fetch (no copy here) or a remote bucket waits on other nodes */
	(fd < 0 || bk ? http_offload_net : http_offload)(req, olo_work, olo_done);
}

void ol_open_failed(http_req_t *req, sv_t bck, sv_t obj, int err, const char *msg)
{
	if (err == ENOENT) {
		tgt_not_found(req, bck, obj);
		return;
	}
	char what[1024]; /* a bucket name (<= NAME_BUCKET_MAX) and 512 bytes of the object name */
	snprintf(what, sizeof(what), "object %.*s/%.*s", (int)bck.len, bck.ptr, (int)MIN(obj.len, 512), obj.ptr);
	tgt_resp_errmsg(req, ais_errno_read(err, msg && *msg), err, what, msg);
}

/* --- conditionals ---------------------------------------------------------------- */

static sv_t unquote(sv_t s)
{
	if (sv_startswith(s, "W/"))
		s.ptr += 2, s.len -= 2;
	if (s.len >= 2 && s.ptr[0] == '"' && s.ptr[s.len - 1] == '"')
		s.ptr++, s.len -= 2;
	return s;
}

/* Is etag in the comma-separated list h ("*" matches any)? */
static bool etag_in(sv_t h, const char *etag)
{
	sv_t e = unquote(sv_from(etag));
	const char *p = h.ptr, *end = h.ptr + h.len;
	while (p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *stop = c ? c : end;
		sv_t it = unquote(sv_trim((sv_t){p, (size_t)(stop - p)}));
		if (sv_eqstr(it, "*") || sv_eq(it, e))
			return true;
		p = stop + 1;
	}
	return false;
}

/* The header prefix + name of req (no printf: every GET asks for four). */
static sv_t cond_header(http_req_t *req, const char *prefix, const char *name)
{
	char n[64];
	size_t pl = strlen(prefix), nl = strlen(name);
	if (!pl)
		return http_req_header(req, name);
	if (pl + nl >= sizeof(n))
		return (sv_t){NULL, 0};
	memcpy(n, prefix, pl);
	memcpy(n + pl, name, nl + 1);
	return http_req_header(req, n);
}

int ol_conditions(http_req_t *req, const char *etag, int64_t mtime_ns, const char *prefix, bool read)
{
	int64_t t;
	int64_t s = mtime_ns / 1000000000LL;
	sv_t im = cond_header(req, prefix, "If-Match");
	sv_t inm = cond_header(req, prefix, "If-None-Match");
	sv_t ims = cond_header(req, prefix, "If-Modified-Since");
	sv_t ius = cond_header(req, prefix, "If-Unmodified-Since");

	if (im.ptr) {
		if (!etag_in(im, etag))
			return 412;
	} else if (ius.ptr && time_parse_http_date(ius.ptr, ius.len, &t) == AIS_OK && s > t / 1000000000LL) {
		return 412;
	}
	if (inm.ptr) {
		if (etag_in(inm, etag))
			return read ? 304 : 412;
	} else if (read && ims.ptr && time_parse_http_date(ims.ptr, ims.len, &t) == AIS_OK &&
		   s <= t / 1000000000LL && t <= time_now_ns()) {
		return 304; /* (a date in the future is ignored, RFC 9110) */
	}
	return 0;
}

/* --- delete ---------------------------------------------------------------------- */

int ol_set_custom(target_t *t, sv_t bck, sv_t obj, uint64_t version, const char *custom, bool all, buf_t *msg)
{
	store_meta_t m;
	if (store_lookup(t->store, bck.ptr, bck.len, obj.ptr, obj.len, &m) != AIS_OK)
		return AIS_ERR;
	/* stamped: every copy records when, and the one set last wins */
	int64_t md = MAX(hlc_now(), store_md_time(&m) + 1);
	if (store_set_custom(t->store, bck.ptr, bck.len, obj.ptr, obj.len, version, custom, md) != AIS_OK)
		return AIS_ERR;
	if (!all || !t->base.cl)
		return AIS_OK;
	if (tgt_custom_elsewhere(t, bck.ptr, bck.len, obj.ptr, obj.len, m.cksum, custom, md, msg) != AIS_OK) {
		errno = EIO;
		return AIS_ERR;
	}
	return AIS_OK;
}

void ol_tombstone(target_t *t, sv_t bck, sv_t obj, int64_t stamp)
{
	if (store_tomb_put(t->store, bck.ptr, bck.len, obj.ptr, obj.len, stamp) != AIS_OK)
		log_warn("DELETE %.*s/%.*s: no tombstone kept", (int)bck.len, bck.ptr, (int)MIN(obj.len, 256), obj.ptr);
}

bool ol_deleted(target_t *t, sv_t bck, sv_t obj, int64_t stamp)
{
	int64_t when = store_tomb_get(t->store, bck.ptr, bck.len, obj.ptr, obj.len);
	return when && stamp < when;
}

int ol_delete(target_t *t, sv_t bck, sv_t obj, bool all) { return ol_delete_msg(t, bck, obj, all, NULL); }

int ol_delete_msg(target_t *t, sv_t bck, sv_t obj, bool all, buf_t *why)
{
	int err = 0;
	bool remote_had = false;
	if (all && t->base.cl) { /* a remote bucket: the remote first (olremote.c rule 6) */
		int berr;
		buf_t msg = BUF_INIT;
		bk_bucket_t *bk = olr_backend(t, bck, &berr, &msg);
		int rc = bk ? olr_delete(bk, obj, &msg) : AIS_OK, e = errno;
		free(bk);
		if (berr || (rc != AIS_OK && e != ENOENT)) {
			log_warnx("DELETE %.*s/%.*s: %s", (int)bck.len, bck.ptr, (int)MIN(obj.len, 256), obj.ptr, msg.ptr);
			if (why)
				buf_addsv(why, sv_of(&msg));
			buf_free(&msg);
			errno = berr ? EHOSTUNREACH : e;
			return AIS_ERR;
		}
		remote_had = bk && rc == AIS_OK;
		buf_free(&msg);
	}
	/* a client's delete: a copy it misses (its target is away) must not come
	 * back; stamped after the copy here, whatever clock stamped that */
	int64_t stamp = 0;
	bmd_props_t bp;
	bool had = false; /* a copy or a slice here before the tombstone */
	if (all && t->base.cl) {
		store_meta_t m;
		char sb[24];
		if (store_lookup(t->store, bck.ptr, bck.len, obj.ptr, obj.len, &m) == AIS_OK) {
			hlc_observe(store_stamp(&m));
			had = true;
		}
		if (!had && ec_props(t, bck, &bp) && bp.ec_enabled) {
			ec_slice_bucket(bck.ptr, bck.len, sb);
			had = store_lookup(t->store, sb, strlen(sb), obj.ptr, obj.len, &m) == AIS_OK;
		}
		stamp = hlc_now();
		ol_tombstone(t, bck, obj, stamp);
	}
	if (store_delete(t->store, bck.ptr, bck.len, obj.ptr, obj.len) != AIS_OK)
		err = errno ? errno : EIO;
	if (all && t->base.cl && (!err || err == ENOENT)) {
		bool kept = false;
		buf_t missed = BUF_INIT;
		if (tgt_delete_elsewhere(t, bck.ptr, bck.len, obj.ptr, obj.len, stamp, &missed, &kept) > 0)
			err = 0; /* other copies were there */
		/* invariant 5: never acknowledged and then undone by a holder's return */
		if (missed.len && (!kept || !strcmp(t->conf->delete_quorum, "all"))) {
			log_warnx("DELETE %.*s/%.*s: not complete: %s not reachable", (int)bck.len, bck.ptr,
				  (int)MIN(obj.len, 256), obj.ptr, missed.ptr);
			if (why)
				buf_addf(why, "%s: the delete is not complete (the copies it reached are deleted; ask again "
					 "once %s back)", missed.ptr, strchr(missed.ptr, ',') ? "they are" : "it is");
			err = EHOSTDOWN;
		}
		buf_free(&missed);
	}
	if (all && t->base.cl && t->conf->delete_pause_ms) /* debug.delete_pause: a test hook */
		usleep((useconds_t)MIN(t->conf->delete_pause_ms, 60000) * 1000);
	if (all && t->base.cl && ec_props(t, bck, &bp) && bp.ec_enabled &&
	    ec_delete_slices(t, bck.ptr, bck.len, obj.ptr, obj.len, stamp) > 0 && err == ENOENT)
		err = 0; /* every slice of an erasure-coded object goes too */
	/* the tombstone here lets a rebalance or a repair drop the copies and
	 * slices before the calls above reach them (ecrepair.c rule 6): what
	 * was here before it says the object existed, whatever they answer */
	if (err == ENOENT && (remote_had || had))
		err = 0;
	if (err) {
		errno = err;
		return AIS_ERR;
	}
	return AIS_OK;
}
