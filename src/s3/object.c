/*
 * object.c - GetObject, HeadObject, PutObject and DeleteObject on the
 * owner target.
 *
 * A codec over the object layer (ol.h). GET/HEAD open the object with
 * ol_open (a holder that lacks its copy fetches it), apply the
 * conditionals (ol_conditions) in S3's order
 * (If-Match, then If-Unmodified-Since unless If-Match held: 412;
 * If-None-Match, then If-Modified-Since unless If-None-Match was given:
 * 304), the Range (206, or 416 InvalidRange) and the response-* overrides,
 * and send the file with sendfile. PUT streams through put.c into an
 * ol_put, which commits with the bucket's copies; the object's S3 metadata (ETag = the MD5 of the
 * bytes, Content-*, x-amz-meta-*) is committed with it in one record.
 * DELETE removes every copy (ol_delete) and answers 204 whether or not the
 * key existed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

static void overrides(s3_rq_t *r, s3_meta_t *m)
{
	static const struct {
		const char *q;
		size_t off;
	} o[] = {
		{"response-content-type", offsetof(s3_meta_t, ctype)},
		{"response-content-language", offsetof(s3_meta_t, clang)},
		{"response-expires", offsetof(s3_meta_t, expires)},
		{"response-cache-control", offsetof(s3_meta_t, cctl)},
		{"response-content-disposition", offsetof(s3_meta_t, cdisp)},
		{"response-content-encoding", offsetof(s3_meta_t, cenc)},
	};
	for (size_t i = 0; i < ARRAY_SIZE(o); i++) {
		sv_t v;
		if (http_query_get(r->http, o[i].q, &v))
			*(char **)((char *)m + o[i].off) = arena_svdup(r->http->arena, v);
	}
}

static void get_opened(http_req_t *req, void *arg, int fd, store_meta_t *smp, int err, const char *msg)
{
	s3_rq_t *r = arg;
	store_meta_t sm;
	s3_meta_t m;
	char etag[96];
	uint64_t start = 0, len;

	if (err) {
		if (err == ENOENT && r->vid.ptr && !r->vcur && r->vkey.ptr) {
			/* not kept under its own name: maybe the current version,
			 * which this holder has no whole copy of (olver.h) */
			r->vcur = true;
			r->key = r->vkey;
			ol_open(req, req->ctx, r->bucket, r->key, OL_STREAM, get_opened, r);
			return;
		}
		if (err == ENOENT && r->vid.ptr) {
			s3_error(r, "NoSuchVersion", NULL);
			return;
		}
		char id[NAME_VER_ID_LEN + 1];
		if (err == ENOENT && s3_history(r) != BMD_HIST_OFF &&
		    olver_marker_current(req->ctx, r->bucket, r->key, id)) { /* S3: the current version is a marker */
			http_resp_header(req, "x-amz-delete-marker", "true");
			http_resp_header(req, "x-amz-version-id", "%s", id);
		}
		if (err != ENOENT || s3_access_missing(r) == AIS_OK)
			s3_error_read(r, err, msg);
		return;
	}
	sm = *smp;
	if (r->vid.ptr) { /* one version: the one asked for, and not a marker */
		char id[NAME_VER_ID_LEN + 1];
		bool null;
		bool has = olver_id_of(sm.custom, id, &null);
		if (r->vcur && (sv_eqstr(r->vid, "null") ? !null : !has || !sv_eqstr(r->vid, id))) {
			ol_close(req, fd);
			s3_error(r, "NoSuchVersion", NULL);
			return;
		}
		if (strstr(sm.custom, OLVER_DM_KEY "=1")) {
			ol_close(req, fd);
			http_resp_header(req, "x-amz-delete-marker", "true");
			http_resp_header(req, "x-amz-version-id", "%.*s", (int)r->vid.len, r->vid.ptr);
			http_resp_header(req, "Allow", "DELETE");
			s3_error(r, "MethodNotAllowed", "The specified method is not allowed against this resource.");
			return;
		}
	}
	s3_meta_decode(req->arena, sm.custom, &m);
	if (s3_access_object(r, S3_RES_NAMED, &m) != AIS_OK) {
		ol_close(req, fd);
		return;
	}
	s3_etag_of(&sm, &m, etag, sizeof(etag));
	int cond = ol_conditions(req, etag, sm.mtime_ns, "", true);
	if (cond == 412) {
		ol_close(req, fd);
		s3_error(r, "PreconditionFailed", NULL);
		return;
	}
	if (cond == 304) {
		ol_close(req, fd);
		s3_common_headers(r);
		http_resp_header(req, "ETag", "%s", etag);
		char t[64];
		time_http_date(sm.mtime_ns, t, sizeof(t));
		http_resp_header(req, "Last-Modified", "%s", t);
		http_resp_status(req, 304);
		http_resp_send(req, "", 0);
		return;
	}
	int rr = http_range_parse(http_req_header(req, "Range"), sm.size, &start, &len);
	if (rr == AIS_ERR) {
		ol_close(req, fd);
		http_resp_header(req, "Content-Range", "bytes */%llu", (unsigned long long)sm.size);
		s3_error(r, "InvalidRange", NULL);
		return;
	}
	overrides(r, &m);
	s3_common_headers(r);
	s3_meta_headers(r, &sm, &m);
	s3_version_header(r, sm.custom);
	if (rr == AIS_OK) {
		http_resp_status(req, 206);
		http_resp_header(req, "Content-Range", "bytes %llu-%llu/%llu", (unsigned long long)start,
				 (unsigned long long)(start + len - 1), (unsigned long long)sm.size);
	} else {
		start = 0;
		len = sm.size;
	}
	if (req->method == HTTP_GET)
		store_touch(r->node.store, r->bucket.ptr, r->bucket.len, r->key.ptr, r->key.len, &sm);
	ol_send(req, fd, start, len);
}

static int get_object(s3_rq_t *r)
{
	http_req_t *req = r->http;
	sv_t etl;
	if (req->method == HTTP_GET && (http_query_get(req, "etl", &etl) || (etl = http_req_header(req, "x-ais-etl")).len))
		return tgt_get_etl(req, req->ctx, r->bucket, r->key, etl, true); /* transformed (etl.h) */
	unsigned f = req->method == HTTP_GET && !http_req_has_header(req, "Range") ? OL_VERIFY : 0;
	sv_t vid = {NULL, 0};
	if (http_query_get(req, "versionId", &vid) && !sv_eqstr(vid, "null") && s3_history(r) == BMD_HIST_OFF) {
		s3_error(r, "InvalidArgument", "Invalid version id specified");
		return AIS_OK;
	}
	if (vid.ptr && s3_history(r) != BMD_HIST_OFF) { /* one version (olver.h) */
		buf_t name = BUF_INIT;
		bool dm = false;
		if (!sv_eqstr(vid, "null") && !olver_id_valid(vid)) {
			s3_error(r, "InvalidArgument", "Invalid version id specified");
			return AIS_OK;
		}
		r->vid = vid;
		if (olver_resolve(req->ctx, r->bucket, r->key, vid, &name, &dm) != AIS_OK) {
			buf_free(&name);
			s3_error(r, "NoSuchVersion", NULL);
			return AIS_OK;
		}
		if (dm) { /* S3: a delete marker is not an object */
			buf_free(&name);
			http_resp_header(req, "x-amz-delete-marker", "true");
			http_resp_header(req, "x-amz-version-id", "%.*s", (int)vid.len, vid.ptr);
			http_resp_header(req, "Allow", "DELETE");
			s3_error(r, "MethodNotAllowed", "The specified method is not allowed against this resource.");
			return AIS_OK;
		}
		if (name.len != r->key.len) /* a kept version: the object itself if not kept */
			r->vkey = r->key;
		r->key = (sv_t){arena_strndup(req->arena, name.ptr, name.len), name.len};
		buf_free(&name);
	}
	ol_open(req, req->ctx, r->bucket, r->key, f | OL_STREAM, get_opened, r);
	return AIS_OK;
}

/* --- PUT ------------------------------------------------------------------------ */

struct obj_sink {
	ol_put_t op;
	s3_meta_t m;
	buf_t custom;
};

static int obj_begin(s3_put_t *p)
{
	struct obj_sink *s = p->sink;
	return ol_put_begin(&s->op);
}

static int obj_write(s3_put_t *p, const char *b, size_t n)
{
	struct obj_sink *s = p->sink;
	return ol_put_write(&s->op, b, n);
}

static int obj_commit(s3_put_t *p)
{
	struct obj_sink *s = p->sink;
	snprintf(s->m.etag, sizeof(s->m.etag), "%s", p->md5hex);
	buf_reset(&s->custom);
	if (s3_meta_encode(&s->m, &s->custom) != AIS_OK) {
		p->code = "MetadataTooLarge";
		errno = EINVAL;
		return AIS_ERR;
	}
	s->op.custom = s->custom.ptr;
	if (ol_put_commit(&s->op) != AIS_OK) {
		p->msg = s->op.msg.ptr; /* freed with the sink, after the answer */
		return AIS_ERR;
	}
	return AIS_OK;
}

static void obj_reply(s3_put_t *p)
{
	struct obj_sink *s = p->sink;
	s3_common_headers(p->r);
	s3_version_header(p->r, s->op.meta.custom);
	http_resp_header(p->r->http, "ETag", "\"%s\"", p->md5hex);
	http_resp_send(p->r->http, "", 0);
}

static void obj_cleanup(s3_put_t *p)
{
	struct obj_sink *s = p->sink;
	ol_put_free(&s->op);
	buf_free(&s->custom);
}

static const s3_put_ops_t obj_ops = {obj_begin, obj_write, obj_commit, obj_reply, obj_cleanup};

static int put_object(s3_rq_t *r)
{
	http_req_t *req = r->http;
	store_bucket_t b;
	s3_put_t *p = arena_zalloc(req->arena, sizeof(*p));
	struct obj_sink *s = arena_zalloc(req->arena, sizeof(*s));
	buf_t probe = BUF_INIT;

	if (store_bucket_get(r->node.store, r->bucket.ptr, r->bucket.len, &b) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	if (s3_meta_from_req(r, &s->m) != AIS_OK)
		return AIS_OK;
	memset(s->m.etag, 'f', 32);
	int rc = s3_meta_encode(&s->m, &probe);
	s->m.etag[0] = '\0';
	buf_free(&probe);
	if (rc != AIS_OK) {
		s3_error(r, "MetadataTooLarge", "S3 metadata over %d bytes encoded", STORE_CUSTOM_MAX - 1);
		return AIS_OK;
	}
	s->op.t = req->ctx;
	s->op.bck = r->bucket;
	s->op.obj = r->key;
	s->op.w = r->where;
	p->ops = &obj_ops;
	p->sink = s;
	p->s.put = &s->op;
	s3_put_start(r, p);
	return AIS_OK;
}

/* --- DELETE ---------------------------------------------------------------------- */

struct del {
	int err;
	buf_t why; /* what err says besides (a holder not reached) */
	unsigned history; /* the bucket's (olver.h) */
	sv_t vid;         /* versionId; ptr NULL: none */
	bool dm;          /* the answer: a delete marker made or removed */
	char id[NAME_VER_ID_LEN + 1]; /* the marker made */
};

static void del_cleanup(void *arg) { buf_free(&((struct del *)arg)->why); }

static void del_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct del *d = r->op;
	if (d->history != BMD_HIST_OFF) { /* olver.c rule 7 */
		int rc = d->vid.ptr ? olver_delete_version(req->ctx, r->where, r->bucket, r->key, d->vid, &d->dm, &d->why)
				    : olver_delete(req->ctx, r->where, r->bucket, r->key, d->id, &d->why);
		if (rc != AIS_OK)
			d->err = errno ? errno : EIO;
		if (!d->vid.ptr)
			d->dm = true;
		return;
	}
	if (ol_delete_msg(req->ctx, r->bucket, r->key, r->where && r->where->cluster, &d->why) != AIS_OK)
		d->err = errno ? errno : EIO;
}

static void del_done(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct del *d = r->op;
	if (d->err && d->err != ENOENT) {
		s3_error_msg(r, d->err, true, d->why.ptr);
		return;
	}
	if (d->err == ENOENT && !s3_bucket_exists(r)) {
		s3_error(r, "NoSuchBucket", NULL);
		return;
	}
	s3_common_headers(r);
	if (d->dm)
		http_resp_header(req, "x-amz-delete-marker", "true");
	if (d->vid.ptr)
		http_resp_header(req, "x-amz-version-id", "%.*s", (int)d->vid.len, d->vid.ptr);
	else if (d->history != BMD_HIST_OFF)
		http_resp_header(req, "x-amz-version-id", "%s", d->history == BMD_HIST_SUSPENDED ? "null" : d->id);
	http_resp_status(req, 204);
	http_resp_send(req, "", 0);
}

int s3_object(s3_rq_t *r)
{
	http_req_t *req = r->http;
	switch (req->method) {
	case HTTP_GET:
	case HTTP_HEAD:
		return get_object(r);
	case HTTP_PUT:
		return put_object(r);
	case HTTP_DELETE: {
		struct del *d = arena_zalloc(req->arena, sizeof(struct del));
		r->op = d;
		arena_cleanup_add(req->arena, del_cleanup, r->op);
		d->history = r->where && r->where->cluster ? s3_history(r) : BMD_HIST_OFF;
		if (http_query_get(req, "versionId", &d->vid)) {
			if (d->history == BMD_HIST_OFF) {
				if (!sv_eqstr(d->vid, "null")) {
					s3_error(r, "InvalidArgument", "Invalid version id specified");
					return AIS_OK;
				}
				d->vid = (sv_t){NULL, 0}; /* the null version: the object */
			} else if (!sv_eqstr(d->vid, "null") && !olver_id_valid(d->vid)) {
				s3_error(r, "InvalidArgument", "Invalid version id specified");
				return AIS_OK;
			}
		}
		s3_offload(r, del_work, del_done);
		return AIS_OK;
	}
	default:
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
}
