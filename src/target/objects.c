/*
 * objects.c - the native object API on a target: GET, HEAD, PUT and DELETE
 * of /v1/objects/BUCKET/OBJECT, a codec over the object layer (ol.h).
 *
 * The request is routed by ol_where (served here, 307 to the owner, 503,
 * 508 for a loop); during a rebalance a read of an object not moved here
 * yet goes to its holder under the previous map (olmoved.c). GET/HEAD
 * open through ol_open (a missing or damaged copy
 * is fetched from another holder first), check the conditionals and the
 * Range, and hand the file to the HTTP layer, which sends it without
 * blocking the loop on disk. PUT streams through ol_stream into an
 * ol_put (the commit with the bucket's copies); its own part is the
 * Ais-Checksum-* and Ais-Custom-Md headers and the answer's headers. A
 * copy from another target (rebalance, resilver, repair) of
 * TGT_SPLICE_MIN bytes or more on plain TCP is spliced from the socket
 * into the temp file (olput.c rule 6), verified against the sender's
 * Ais-Checksum-Value like any other.
 * DELETE is ol_delete (every copy); in a bucket that keeps versions a
 * delete marker, or with ?version=ID (or the kept version's own name) the
 * removal of that version, which S3 object lock may refuse (403; olver.c
 * rule 8; &bypass_governance=true for the bucket's administrators).
 *
 * GET/HEAD with ?archpath=MEMBER serve one file of a tar shard: the shard
 * is opened through ol_open, its tar index (in memory, else
 * store_tar_index on the I/O pool: saved in LevelDB, or built from the
 * headers) gives the member's bytes, which go out as a byte range of the
 * shard's file (sendfile, Range relative to the member). A shard that is
 * not a valid tar is still stored (only archpath reads of it fail, 400).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ec_int.h"
#include "aisd/hlc.h"
#include "aisd/authz.h"
#include "aisd/larc.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/ol.h"
#include "aisd/olver.h"
#include "aisd/status.h"
#include "target_int.h"
#include "aisd/util.h"
#include "aisd/banned.h"

/* out: >= STORE_CKSUM_HEX_MAX + 2 bytes */
static void etag_of(const store_meta_t *m, char *out, size_t outsz)
{
	size_t n = strnlen(m->cksum, sizeof(m->cksum));
	if (n) { /* every GET's: no printf */
		n = MIN(n, outsz - 3);
		out[0] = '"';
		memcpy(out + 1, m->cksum, n);
		out[n + 1] = '"';
		out[n + 2] = '\0';
	} else {
		snprintf(out, outsz, "\"v%llx-%llx\"", (unsigned long long)m->version,
			 (unsigned long long)m->mtime_ns);
	}
}

static void prop_headers(http_req_t *req, const store_meta_t *m)
{
	char t[64], etag[96];
	http_resp_header_str(req, "Ais-Checksum-Type", store_cksum_name(m->cksum_type));
	if (m->cksum[0])
		http_resp_header_str(req, "Ais-Checksum-Value", m->cksum);
	http_resp_header_i64(req, "Ais-Version", (int64_t)m->version);
	tgt_fmt_time(m->atime_ns ? m->atime_ns : m->mtime_ns, t, sizeof(t));
	http_resp_header_str(req, "Ais-Atime", t);
	if (m->custom[0])
		http_resp_header_str(req, "Ais-Custom-Md", m->custom);
	time_http_date(m->mtime_ns, t, sizeof(t));
	http_resp_header_str(req, "Last-Modified", t);
	http_resp_header_i64(req, "Ais-Mtime-Ns", m->mtime_ns);
	if (http_req_has_header(req, TGT_INTRA)) { /* another target's: it compares metadata by when set */
		http_resp_header_i64(req, TGT_MD_NS, store_md_time(m));
		http_resp_header_i64(req, TGT_STAMP, store_stamp(m)); /* and writes by stamp */
	}
	etag_of(m, etag, sizeof(etag));
	http_resp_header_str(req, "ETag", etag);
}

void tgt_not_found(http_req_t *req, sv_t bck, sv_t obj)
{
	target_t *t = req->ctx;
	store_bucket_t b;
	if (store_bucket_get(t->store, bck.ptr, bck.len, &b) != AIS_OK)
		http_resp_error(req, 404, "bucket \"%.*s\" does not exist", (int)bck.len, bck.ptr);
	else
		http_resp_error(req, 404, "object \"%.*s/%.*s\" does not exist", (int)bck.len, bck.ptr,
				(int)MIN(obj.len, 512), obj.ptr);
}


static void serve_open(http_req_t *req, void *arg, int fd, store_meta_t *mp, int err, const char *msg)
{
	target_t *t = req->ctx;
	sv_t *names = arg; /* bucket, object */
	store_meta_t m;
	uint64_t start = 0, len;
	char etag[96];

	if (err) {
		ol_open_failed(req, names[0], names[1], err, msg);
		return;
	}
	m = *mp;
	etag_of(&m, etag, sizeof(etag));
	int cond = ol_conditions(req, etag, m.mtime_ns, "", req->method == HTTP_GET || req->method == HTTP_HEAD);
	if (cond) {
		ol_close(req, fd);
		prop_headers(req, &m);
		http_resp_status(req, cond);
		http_resp_send(req, "", 0);
		return;
	}
	if (req->method == HTTP_GET && tgt_sse_encrypted(m.custom) && !authz_is_peer(req)) {
		ol_close(req, fd);
		http_resp_error(req, 403,
				"%.*s/%.*s is stored with S3 server-side encryption: read it through the S3 API "
				"with its key",
				(int)names[0].len, names[0].ptr, (int)MIN(names[1].len, 256), names[1].ptr);
		return;
	}
	len = m.size;
	prop_headers(req, &m);
	if (tgt_resp_range(req, m.size, "application/octet-stream", "an object", &start, &len) != AIS_OK) {
		ol_close(req, fd);
		return;
	}
	store_touch(t->store, names[0].ptr, names[0].len, names[1].ptr, names[1].len, &m);
	ol_send(req, fd, start, len);
}

static int get_object(http_req_t *req, target_t *t, sv_t bck, sv_t obj)
{
	sv_t *names = arena_alloc(req->arena, 2 * sizeof(*names));
	names[0] = bck;
	names[1] = obj;
	/* a whole-object read from outside is checked first with store.verify_on_read */
	unsigned f = req->method == HTTP_GET && !http_req_has_header(req, "Range") &&
			     !http_req_has_header(req, TGT_INTRA)
		     ? OL_VERIFY
		     : 0;
	ol_open(req, t, bck, obj, f | OL_STREAM, serve_open, names);
	return AIS_OK;
}

/* --- GET/HEAD ?archpath= --------------------------------------------------- */

struct arch {
	target_t *t;
	sv_t bck, obj, path; /* path: the member's name */
	int fd;              /* the shard; -1 once handed to the response */
	store_meta_t m;
	uint64_t off, size;  /* the member's bytes in the shard */
	int err;             /* 0, ENOENT (no such member), EINVAL (not a tar), other */
	buf_t msg;
};

static void arch_cleanup(void *arg)
{
	struct arch *a = arg;
	if (a->fd >= 0)
		close(a->fd);
	buf_free(&a->msg);
}

static void arch_find(struct arch *a, store_tar_index_t *idx)
{
	if (store_tar_index_find(idx, a->path.ptr, a->path.len, &a->off, &a->size) != AIS_OK)
		a->err = ENOENT;
	store_tar_index_free(idx);
}

static void arch_work(http_req_t *req)
{
	struct arch *a = req->state;
	store_tar_index_t *idx;
	if (store_tar_index(a->t->store, a->bck.ptr, a->bck.len, a->obj.ptr, a->obj.len, &a->m, a->fd,
			    &idx, &a->msg) != AIS_OK) {
		a->err = errno == EINVAL ? EINVAL : (errno ? errno : EIO);
		return;
	}
	arch_find(a, idx);
}

const char *tgt_content_type(sv_t name)
{
	static const struct { const char *ext, *type; } types[] = {
		{".jpg", "image/jpeg"}, {".jpeg", "image/jpeg"}, {".png", "image/png"},
		{".json", "application/json"}, {".txt", "text/plain"}, {".cls", "text/plain"},
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		size_t el = strlen(types[i].ext);
		if (name.len >= el && !strncasecmp(name.ptr + name.len - el, types[i].ext, el))
			return types[i].type;
	}
	return "application/octet-stream";
}

static void arch_done(http_req_t *req)
{
	struct arch *a = req->state;
	uint64_t start = 0, len = a->size;

	if (a->err == ENOENT) {
		http_resp_error(req, 404, "archpath \"%.*s\" not found in %.*s/%.*s",
				(int)MIN(a->path.len, 512), a->path.ptr, (int)a->bck.len, a->bck.ptr,
				(int)MIN(a->obj.len, 512), a->obj.ptr);
		return;
	}
	if (a->err == EINVAL) {
		http_resp_error(req, 400, "%.*s/%.*s is not a valid tar archive: %s", (int)a->bck.len,
				a->bck.ptr, (int)MIN(a->obj.len, 512), a->obj.ptr,
				a->msg.ptr ? a->msg.ptr : "bad header");
		return;
	}
	if (a->err) {
		tgt_resp_errno(req, a->err, "object");
		return;
	}
	char lm[64];
	time_http_date(a->m.mtime_ns, lm, sizeof(lm));
	http_resp_header(req, "Ais-Version", "%llu", (unsigned long long)a->m.version);
	http_resp_header(req, "Last-Modified", "%s", lm);
	if (tgt_resp_range(req, a->size, tgt_content_type(a->path), "a member", &start, &len) != AIS_OK)
		return;
	int fd = a->fd;
	a->fd = -1;
	http_resp_send_file(req, fd, (off_t)(a->off + start), len);
}

static void arch_opened(http_req_t *req, void *arg, int fd, store_meta_t *m, int err, const char *msg)
{
	struct arch *a = arg;
	store_tar_index_t *idx;
	if (err) {
		ol_open_failed(req, a->bck, a->obj, err, msg);
		return;
	}
	a->fd = fd;
	a->m = *m;
	req->state = a;
	if (store_tar_index_cached(a->t->store, a->bck.ptr, a->bck.len, a->obj.ptr, a->obj.len, &a->m, &idx) ==
	    AIS_OK) {
		arch_find(a, idx); /* in memory: no trip through the I/O pool */
		arch_done(req);
	} else {
		http_offload(req, arch_work, arch_done);
	}
}

static int get_archpath(http_req_t *req, target_t *t, sv_t bck, sv_t obj, sv_t path)
{
	struct arch *a;

	if (!name_archpath_valid(path.ptr, path.len)) {
		http_resp_error(req, 400, "invalid archpath: 1 to %d bytes of UTF-8 without NUL bytes",
				NAME_OBJECT_MAX);
		return AIS_OK;
	}
	a = arena_zalloc(req->arena, sizeof(*a));
	a->t = t;
	a->bck = bck;
	a->obj = obj;
	a->path = path;
	a->fd = -1;
	arena_cleanup_add(req->arena, arch_cleanup, a);
	ol_open(req, t, bck, obj, 0, arch_opened, a);
	return AIS_OK;
}

/* --- PUT ----------------------------------------------------------------- */

static int put_begin(ol_stream_t *s) { return ol_put_begin(s->arg); }
static int put_write(ol_stream_t *s, const char *b, size_t n) { return ol_put_write(s->arg, b, n); }
static int put_splice(ol_stream_t *s, int pfd, size_t n) { return ol_put_splice(s->arg, pfd, n); }
static int put_commit(ol_stream_t *s) { return ol_put_commit(s->arg); }
static void put_cleanup(ol_stream_t *s) { ol_put_free(s->arg); }

static void put_reply(ol_stream_t *s)
{
	ol_put_t *p = s->arg;
	prop_headers(s->req, &p->meta);
	http_resp_send(s->req, "", 0);
}

static void put_fail(ol_stream_t *s, int err)
{
	ol_put_t *p = s->arg;
	if (err == ESTALE && p->origin_ns) { /* a client deleted it while the copy came */
		http_resp_header(s->req, TGT_HAD, TGT_HAD_DELETED);
		http_resp_send(s->req, "", 0);
		return;
	}
	if (err == ENOSPC)
		log_warnx("PUT %.*s/%.*s: insufficient storage", (int)p->bck.len, p->bck.ptr,
			  (int)MIN(p->obj.len, 256), p->obj.ptr);
	if (err == EAGAIN)
		log_warnx("PUT %.*s/%.*s failed: %s", (int)p->bck.len, p->bck.ptr, (int)MIN(p->obj.len, 256),
			  p->obj.ptr, p->msg.ptr ? p->msg.ptr : "");
	tgt_resp_errmsg(s->req, ais_errno(err), err, err == EAGAIN ? "object not stored" : "object", p->msg.ptr);
}

/* A PUT whose checksum and custom metadata may come as trailer fields (a
 * copy another target streams while its client's body arrives). */
static bool trailed(http_req_t *req) { return req->chunked && http_req_has_header(req, TGT_INTRA); }

static int set_want(http_req_t *req, ol_put_t *p, sv_t cv)
{
	if (!cv.ptr || cv.len == 0 || cv.len >= sizeof(p->want_hex)) {
		http_resp_error(req, 400, "Ais-Checksum-Value missing or too long");
		return AIS_ERR;
	}
	for (size_t i = 0; i < cv.len; i++)
		p->want_hex[i] = (char)(cv.ptr[i] >= 'A' && cv.ptr[i] <= 'F' ? cv.ptr[i] | 0x20 : cv.ptr[i]);
	p->want_hex[cv.len] = '\0';
	return AIS_OK;
}

static int set_custom(http_req_t *req, ol_put_t *p, sv_t md)
{
	if (!md.ptr)
		return AIS_OK;
	if (md.len >= sizeof(p->meta.custom)) {
		http_resp_error(req, 400, "custom metadata longer than %zu bytes", sizeof(p->meta.custom) - 1);
		return AIS_ERR;
	}
	/* the cluster's own keys are written by its nodes only (a replica, a
	 * job's shard): a client's S3 ACL would make any object it may write
	 * public, a version id or lock would lie about the object, a run's
	 * mark would make a resumed archive skip its write or a failed dsort
	 * delete the client's object */
	if (!authz_is_peer(req) && !authz_cluster_call(req) && name_custom_reserved(md.ptr, md.len)) {
		http_resp_error(req, 400, "custom metadata keys starting with \"s3.\", \"bk.\", \"ver.\", \"lock.\", "
					  "\"archive.\", \"dsort.\" or \"ais.\" are reserved (the cluster's own: S3 "
					  "metadata and ACL, a remote's ETag, versions and locks, a job run's mark)");
		return AIS_ERR;
	}
	p->custom = arena_svdup(req->arena, md);
	return AIS_OK;
}

/* The body ended: a streamed copy's checksum and metadata are in its trailer. */
static int put_end(ol_stream_t *s)
{
	ol_put_t *p = s->arg;
	http_req_t *req = s->req;
	if (!trailed(req))
		return AIS_OK;
	sv_t cv = http_req_trailer(req, "Ais-Checksum-Value");
	int64_t st = tgt_stamp_parse(http_req_trailer(req, TGT_STAMP));
	if (st && p->stamp && p->sw) { /* the write's stamp at its commit (olput.c rule 9) */
		p->stamp = st;
		store_writer_stamp(p->sw, st);
	}
	if (p->want_type != CKSUM_NONE && !p->want_hex[0] && set_want(req, p, cv) != AIS_OK)
		return AIS_ERR;
	return set_custom(req, p, http_req_trailer(req, "Ais-Custom-Md"));
}

static const ol_stream_ops_t put_ops = {
	.end = put_end,
	.begin = put_begin,
	.write = put_write,
	.splice = put_splice,
	.commit = put_commit,
	.reply = put_reply,
	.fail = put_fail,
	.cleanup = put_cleanup,
};

/* A conditional copy from another target (tgt_send_copy): when the copy
 * here has the sender's checksum or is as new, answers 200 with TGT_HAD at
 * once (no 100 Continue: the body never comes) and returns true; also when
 * there is no copy here and a client deleted the object after the sender's
 * copy was written (TGT_HAD: deleted). */
static bool have_it(http_req_t *req, target_t *t, sv_t bck, sv_t obj, int64_t *origin)
{
	sv_t hc = http_req_header(req, TGT_HAVE_CKSUM), hm = http_req_header(req, TGT_HAVE_MTIME);
	store_meta_t cur;
	uint64_t mt = UINT64_MAX;
	if (!hm.ptr || !http_req_has_header(req, TGT_INTRA) || num_parse_u64(hm.ptr, hm.len, 0, INT64_MAX, &mt) != AIS_OK)
		return false;
	*origin = (int64_t)mt;
	if (store_lookup(t->store, bck.ptr, bck.len, obj.ptr, obj.len, &cur) != AIS_OK) {
		if (errno != ENOENT || !ol_deleted(t, bck, obj, (int64_t)mt))
			return false;
		http_resp_header(req, TGT_HAD, TGT_HAD_DELETED); /* ol.h invariant 2 */
		http_resp_send(req, "", 0);
		return true;
	}
	/* an older write here (by stamp: store.h), or one of the same stamp
	 * with a smaller checksum (two writes that tie: every holder keeps the same one) */
	size_t cl = strlen(cur.cksum);
	int tie = hc.ptr ? memcmp(hc.ptr, cur.cksum, MIN(hc.len, cl)) : 0;
	bool older = store_stamp(&cur) < (int64_t)mt ||
		     (store_stamp(&cur) == (int64_t)mt && hc.ptr && (tie > 0 || (tie == 0 && hc.len > cl)));
	if (!(hc.ptr && cur.cksum[0] && sv_eqstr(hc, cur.cksum)) && older)
		return false;
	/* the same bytes, maybe with metadata set while this copy was away (a
	 * rare durable write on the loop thread: the repair of a missed ACL) */
	if (tgt_md_take_newer(t, bck.ptr, bck.len, obj.ptr, obj.len, &cur, hc, http_req_header(req, "Ais-Custom-Md"),
			      http_req_header(req, TGT_MD_NS)))
		store_lookup(t->store, bck.ptr, bck.len, obj.ptr, obj.len, &cur);
	prop_headers(req, &cur);
	http_resp_header(req, TGT_HAD, "true");
	http_resp_send(req, "", 0);
	return true;
}

static int put_object(http_req_t *req, target_t *t, sv_t bck, sv_t obj, ol_where_t *w)
{
	store_bucket_t b;
	ol_put_t *p;
	ol_stream_t *s;

	if (store_bucket_get(t->store, bck.ptr, bck.len, &b) != AIS_OK) {
		http_resp_error(req, 404, "bucket \"%.*s\" does not exist", (int)bck.len, bck.ptr);
		return AIS_OK;
	}
	uint64_t v = 0;
	if (http_req_has_header(req, TGT_HAVE_MTIME) &&
	    tgt_stance(t, w, bck.ptr, bck.len, obj.ptr, obj.len, &v) == TGT_STRAY) {
		/* its sender would drop its copy once this one took it or had it */
		http_resp_error(req, 409, "not a holder of %.*s/%.*s under this target's cluster map v%llu and bucket "
				"metadata (the sender placed it under map v%llu): keep the copy", (int)bck.len, bck.ptr, (int)MIN(obj.len, 256), obj.ptr,
				(unsigned long long)v,
				(unsigned long long)w->cmap_version);
		return AIS_OK;
	}
	int64_t origin = 0;
	if (have_it(req, t, bck, obj, &origin))
		return AIS_OK;
	p = arena_zalloc(req->arena, sizeof(*p));
	p->origin_ns = origin;
	if (http_req_has_header(req, TGT_INTRA)) /* a copy: it keeps the stamp of the write it is of */
		p->stamp = tgt_stamp_parse(http_req_header(req, TGT_STAMP));
	sv_t mdh = http_req_header(req, TGT_MD_NS);
	uint64_t md = 0;
	if (mdh.ptr && http_req_has_header(req, TGT_INTRA) && num_parse_u64(mdh.ptr, mdh.len, 1, INT64_MAX, &md) == AIS_OK)
		p->md_ns = (int64_t)md; /* a copy: its metadata keeps the time it was set */
	p->t = t;
	p->bck = bck;
	p->obj = obj;
	p->w = w;
	p->size = !req->chunked && req->content_length > 0 ? (uint64_t)req->content_length : 0;
	p->md5_etag = t->conf->s3_native_etag && !http_req_has_header(req, TGT_INTRA); /* olput.c rule 7 */
	sv_t ct = http_req_header(req, "Ais-Checksum-Type"), cv = http_req_header(req, "Ais-Checksum-Value");
	if (ct.ptr && ct.len) {
		if (store_cksum_parse(ct.ptr, ct.len, &p->want_type) != AIS_OK) {
			http_resp_error(req, 400, "unknown checksum type \"%.*s\": use xxhash, md5, sha256 or none",
					(int)MIN(ct.len, 64), ct.ptr);
			return AIS_OK;
		}
		/* a copy streamed by another target has its value in a trailer */
		if (p->want_type != CKSUM_NONE && !(trailed(req) && !cv.ptr) && set_want(req, p, cv) != AIS_OK)
			return AIS_OK;
	} else if (cv.ptr) {
		http_resp_error(req, 400, "Ais-Checksum-Value given without Ais-Checksum-Type");
		return AIS_OK;
	}
	if (set_custom(req, p, http_req_header(req, "Ais-Custom-Md")) != AIS_OK)
		return AIS_OK;
	s = arena_zalloc(req->arena, sizeof(*s));
	s->ops = &put_ops;
	s->arg = p;
	s->put = p;
	if (http_req_has_header(req, TGT_INTRA)) /* a copy from another target: spliced when large */
		s->splice_min = TGT_SPLICE_MIN;
	ol_stream_start(req, s);
	return AIS_OK;
}

/* --- DELETE -------------------------------------------------------------- */

struct del {
	target_t *t;
	sv_t bck, obj;
	bool all;  /* a client's: every copy */
	bool tomb; /* a client's passed on by another target: a tombstone here too */
	int64_t stamp; /* ... with the stamp of the client's delete */
	const ol_where_t *w;
	bool versioned; /* a client's in a bucket whose history is not off (olver.h) */
	sv_t version;   /* ?version=ID: that version for good; ptr NULL: none */
	bool bypass;    /* ... &bypass_governance=true: a GOVERNANCE retention does not hold (olver.c rule 8) */
	char id[NAME_VER_ID_LEN + 1]; /* versioned: the marker written, or the version removed */
	bool dm;                      /* ... which is (was) a delete marker */
	int err;
	buf_t why; /* what err says besides (a holder not reached) */
};

static void del_work(http_req_t *req)
{
	struct del *d = req->state;
	if (d->tomb) /* (a sender of before stamps: this node's clock, which its request moved on) */
		ol_tombstone(d->t, d->bck, d->obj, d->stamp ? d->stamp : hlc_now());
	if (d->versioned) { /* a delete marker, or one version for good (olver.c rule 7) */
		const ol_where_t *w = d->w;
		if ((d->version.ptr ? olver_delete_version(d->t, w, d->bck, d->obj, d->version, d->bypass, &d->dm, &d->why)
				    : olver_delete(d->t, w, d->bck, d->obj, d->id, &d->why)) != AIS_OK)
			d->err = errno ? errno : EIO;
		if (d->version.ptr)
			snprintf(d->id, sizeof(d->id), "%.*s", (int)d->version.len, d->version.ptr);
		else
			d->dm = true;
		return;
	}
	if (ol_delete_msg(d->t, d->bck, d->obj, d->all, &d->why) != AIS_OK)
		d->err = errno ? errno : EIO;
}

static void del_cleanup(void *arg) { buf_free(&((struct del *)arg)->why); }

static void del_done(http_req_t *req)
{
	struct del *d = req->state;
	if (d->err == ENOENT)
		tgt_not_found(req, d->bck, d->obj);
	else if (d->err)
		tgt_resp_errmsg(req, ais_errno(d->err), d->err, "object", d->why.ptr);
	else if (d->versioned) { /* which version the delete wrote or removed (DeleteObjects reads it) */
		buf_t b = BUF_INIT;
		buf_addstr(&b, "{\"version\":");
		buf_add_json_str(&b, d->id, strlen(d->id));
		buf_addf(&b, ",\"delete_marker\":%s}", d->dm ? "true" : "false");
		http_resp_header(req, "Content-Type", "application/json");
		http_resp_send_buf(req, &b);
	} else
		http_resp_send(req, "", 0);
}

/* --- PATCH (between targets: new custom metadata, tgt_custom_elsewhere) ------ */

struct setmd {
	target_t *t;
	sv_t bck, obj, cksum, custom;
	int64_t md_ns; /* when the sender set it */
	int status;
};

static void setmd_work(http_req_t *req)
{
	struct setmd *d = req->state;
	store_meta_t cur;
	char custom[STORE_CUSTOM_MAX];
	d->status = 200;
	if (store_lookup(d->t->store, d->bck.ptr, d->bck.len, d->obj.ptr, d->obj.len, &cur) != AIS_OK) {
		d->status = errno == ENOENT ? 404 : 500;
		return;
	}
	if (!sv_eqstr(d->cksum, cur.cksum[0] ? cur.cksum : "-")) {
		d->status = 409; /* another version: its own metadata stays */
		return;
	}
	snprintf(custom, sizeof(custom), "%.*s", (int)d->custom.len, d->custom.ptr);
	if (store_set_custom(d->t->store, d->bck.ptr, d->bck.len, d->obj.ptr, d->obj.len, cur.version, custom,
			     d->md_ns) != AIS_OK)
		d->status = errno == ESTALE ? 409 : errno == ENOENT ? 404 : 500;
}

static void setmd_done(http_req_t *req)
{
	struct setmd *d = req->state;
	if (d->status == 200)
		http_resp_send(req, "", 0);
	else if (d->status == 409)
		http_resp_error(req, 409, "the copy here is another version: its metadata stays");
	else if (d->status == 404)
		tgt_not_found(req, d->bck, d->obj);
	else
		http_resp_error(req, 500, "setting the metadata of %.*s/%.*s failed", (int)d->bck.len, d->bck.ptr,
				(int)MIN(d->obj.len, 256), d->obj.ptr);
}

static int patch_object(http_req_t *req, target_t *t, sv_t bck, sv_t obj)
{
	struct setmd *d = arena_zalloc(req->arena, sizeof(*d));
	d->cksum = http_req_header(req, TGT_HAVE_CKSUM);
	d->custom = http_req_header(req, "Ais-Custom-Md");
	sv_t mdh = http_req_header(req, TGT_MD_NS);
	uint64_t md = 0;
	if (mdh.ptr && num_parse_u64(mdh.ptr, mdh.len, 1, INT64_MAX, &md) != AIS_OK)
		md = 0;
	d->md_ns = md ? (int64_t)md : hlc_now(); /* (a sender without the stamp: now) */
	if (!http_req_has_header(req, TGT_INTRA)) {
		http_resp_error(req, 405, "PATCH of an object is between targets only");
		return AIS_OK;
	}
	if (!d->cksum.ptr || !d->custom.ptr || d->custom.len >= STORE_CUSTOM_MAX) {
		http_resp_error(req, 400, "PATCH needs %s and Ais-Custom-Md (under %d bytes)", TGT_HAVE_CKSUM,
				STORE_CUSTOM_MAX);
		return AIS_OK;
	}
	d->t = t;
	d->bck = bck;
	d->obj = obj;
	req->state = d;
	http_offload(req, setmd_work, setmd_done);
	return AIS_OK;
}

static int objects(http_req_t *req, bool may_doubt);

/* GET/HEAD served on this target: the object, an archpath or archregx
 * read of it. */
static int read_here(http_req_t *req, target_t *t, sv_t bck, sv_t obj)
{
	sv_t ap;
	bool z = larc_kind_of(obj.ptr, obj.len) != LARC_NONE;
	sv_t en;
	if (req->method == HTTP_GET && http_query_get(req, "etl", &en) && http_query_get(req, "archpath", &ap)) {
		if (!z)
			return tgt_get_etl_member(req, t, bck, obj, ap, en);
		http_resp_error(req, 400, "archpath with etl reads members of plain tar shards only (not %.*s)",
				(int)MIN(obj.len, 512), obj.ptr);
		return AIS_OK;
	}
	if (http_query_get(req, "archpath", &ap))
		return z ? tgt_get_zshard(req, bck, obj, ap, false) : get_archpath(req, t, bck, obj, ap);
	if (http_query_get(req, "archregx", &ap))
		return z ? tgt_get_zshard(req, bck, obj, ap, true) : tgt_get_archregx(req, bck, obj, ap);
	if (req->method == HTTP_GET && http_query_get(req, "etl", &ap))
		return tgt_get_etl(req, t, bck, obj, ap, false);
	if (http_query_get(req, "version", &ap)) { /* one version (olver.h) */
		buf_t name = BUF_INIT;
		bool dm = false;
		if (!olver_id_valid(ap) && !sv_eqstr(ap, "null")) {
			http_resp_error(req, 400, "version: not a version id");
			return AIS_OK;
		}
		if (olver_resolve(t, bck, obj, ap, &name, &dm) != AIS_OK || dm) {
			buf_free(&name);
			http_resp_error(req, 404, "%.*s/%.*s: %s %.*s", (int)bck.len, bck.ptr, (int)MIN(obj.len, 256),
					obj.ptr, dm ? "a delete marker is version" : "no version", (int)ap.len, ap.ptr);
			return AIS_OK;
		}
		obj = (sv_t){arena_strndup(req->arena, name.ptr, name.len), name.len};
		buf_free(&name);
	}
	return get_object(req, t, bck, obj);
}

/* ol_moved found no copy elsewhere: arg the names (bucket, object). */
static void read_here_cb(http_req_t *req, void *arg)
{
	sv_t *names = arg;
	read_here(req, req->ctx, names[0], names[1]);
}

static void refresh_work(http_req_t *req)
{
	target_t *t = req->ctx;
	cluster_refresh(t->base.cl, 200);
}

static void refresh_done(http_req_t *req) { objects(req, false); }

int tgt_objects(http_req_t *req) { return objects(req, true); }

static int objects(http_req_t *req, bool may_doubt)
{
	target_t *t = req->ctx;
	sv_t bck, obj;

	if (tgt_parse_names(req, &bck, &obj, true) != AIS_OK)
		return AIS_OK;
	store_bucket_t sb;
	if (may_doubt && t->base.cl && store_bucket_get(t->store, bck.ptr, bck.len, &sb) != AIS_OK) {
		/* maybe created after this target's last BMD (it joined a moment ago) */
		http_offload_net(req, refresh_work, refresh_done);
		return AIS_OK;
	}
	ol_where_t *w = arena_zalloc(req->arena, sizeof(*w));
	enum ol_route r = ol_where(req, t, bck, obj, req->method == HTTP_PUT || req->method == HTTP_DELETE, may_doubt, w);
	if (r != OL_HERE && r != OL_NONE && ol_moved_here(req, t, bck, obj, w))
		r = OL_HERE; /* not moved off this target yet (olmoved.c) */
	if (r == OL_DOUBT) {
		http_offload_net(req, refresh_work, refresh_done);
		return AIS_OK;
	}
	if (r != OL_HERE) {
		ol_answer_native(req, r, w);
		return AIS_OK;
	}
	switch (req->method) {
	case HTTP_GET:
	case HTTP_HEAD: {
		sv_t *names = arena_alloc(req->arena, 2 * sizeof(*names));
		names[0] = bck;
		names[1] = obj;
		/* not moved here yet: 307 to the holder under the previous map */
		if (ol_moved(req, t, bck, obj, w, read_here_cb, NULL, names))
			return AIS_OK;
		return read_here(req, t, bck, obj);
	}
	case HTTP_PUT:
		return put_object(req, t, bck, obj, w);
	case HTTP_PATCH:
		return patch_object(req, t, bck, obj);
	case HTTP_DELETE: {
		struct del *d = arena_zalloc(req->arena, sizeof(*d));
		d->all = w->cluster;
		d->tomb = sv_eqstr(http_req_header(req, TGT_INTRA), TGT_DELETE);
		d->stamp = d->tomb ? tgt_stamp_parse(http_req_header(req, TGT_STAMP)) : 0;
		arena_cleanup_add(req->arena, del_cleanup, d);
		d->t = t;
		d->bck = bck;
		d->obj = obj;
		d->w = w;
		bmd_props_t bp;
		d->versioned = d->all && ec_props(t, bck, &bp) && bp.history != BMD_HIST_OFF;
		sv_t ver;
		size_t base = d->versioned ? name_version_of(obj.ptr, obj.len) : 0;
		if (base && !http_req_has_header(req, TGT_INTRA)) {
			/* a client naming a kept version (NAME NAME_VER_TAG ID): the
			 * removal of that version (olver.c rules 7 and 8) */
			d->obj = (sv_t){obj.ptr, base};
			d->version = (sv_t){obj.ptr + base + NAME_VER_TAG_LEN, obj.len - base - NAME_VER_TAG_LEN};
		}
		if (http_query_get(req, "version", &ver)) {
			if (!d->versioned || (!olver_id_valid(ver) && !sv_eqstr(ver, "null"))) {
				http_resp_error(req, 400, "version: %s", d->versioned ? "not a version id" :
							 "the bucket keeps no versions");
				return AIS_OK;
			}
			d->version = ver;
		}
		sv_t bp_v;
		if (d->version.ptr && http_query_get(req, "bypass_governance", &bp_v) && sv_eqstr(bp_v, "true")) {
			/* S3's s3:BypassGovernanceRetention: the bucket's administrators */
			authz_res_t res = {.bucket = bck, .object = obj, .perm = AUTH_ADMIN,
					   .role = "bypassing a GOVERNANCE retention"};
			if (!authz_request(req, &res, 1))
				return AIS_OK;
			d->bypass = true;
		}
		req->state = d;
		/* every copy: the other holders are called */
		(d->all ? http_offload_net : http_offload)(req, del_work, del_done);
		return AIS_OK;
	}
	default:
		http_resp_error(req, 405, "method not allowed");
		return AIS_OK;
	}
}
