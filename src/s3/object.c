/*
 * object.c - GetObject, HeadObject, PutObject and DeleteObject on the
 * owner target.
 *
 * GET/HEAD open the object on the event loop (a LevelDB get and an open,
 * as the native GET does), apply S3's conditionals in S3's order
 * (If-Match, then If-Unmodified-Since unless If-Match held: 412;
 * If-None-Match, then If-Modified-Since unless If-None-Match was given:
 * 304), the Range (206, or 416 InvalidRange) and the response-* overrides,
 * and send the file with sendfile. PUT streams through put.c into the
 * store's durable writer; the object's S3 metadata (ETag = the MD5 of the
 * bytes, Content-*, x-amz-meta-*) is committed with it in one record.
 * DELETE answers 204 whether or not the key existed.
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

/* Is etag (quoted) in the list h ("*" matches all)? */
static bool etag_in(sv_t h, const char *etag)
{
	sv_t e = sv_from(etag);
	e.ptr++, e.len -= 2; /* unquoted */
	const char *p = h.ptr, *end = h.ptr + h.len;
	while (p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *stop = c ? c : end;
		sv_t it = sv_trim((sv_t){p, (size_t)(stop - p)});
		if (sv_startswith(it, "W/"))
			it.ptr += 2, it.len -= 2;
		if (it.len >= 2 && it.ptr[0] == '"' && it.ptr[it.len - 1] == '"')
			it.ptr++, it.len -= 2;
		if (sv_eqstr(it, "*") || sv_eq(it, e))
			return true;
		p = stop + 1;
	}
	return false;
}

int s3_conditions(http_req_t *req, const char *etag, int64_t mtime_ns, const char *prefix, bool get);
/* 0, 304 or 412 by S3's rules; prefix "" or "x-amz-copy-source-". */
int s3_conditions(http_req_t *req, const char *etag, int64_t mtime_ns, const char *prefix, bool get)
{
	char n[64];
	int64_t t;
	int64_t ms = mtime_ns / 1000000000LL;
	snprintf(n, sizeof(n), "%sIf-Match", prefix);
	sv_t im = http_req_header(req, n);
	snprintf(n, sizeof(n), "%sIf-None-Match", prefix);
	sv_t inm = http_req_header(req, n);
	snprintf(n, sizeof(n), "%sIf-Modified-Since", prefix);
	sv_t ims = http_req_header(req, n);
	snprintf(n, sizeof(n), "%sIf-Unmodified-Since", prefix);
	sv_t ius = http_req_header(req, n);

	if (im.ptr) {
		if (!etag_in(im, etag))
			return 412;
	} else if (ius.ptr && time_parse_http_date(ius.ptr, ius.len, &t) == AIS_OK && ms > t / 1000000000LL) {
		return 412;
	}
	if (inm.ptr) {
		if (etag_in(inm, etag))
			return get ? 304 : 412;
	} else if (ims.ptr && time_parse_http_date(ims.ptr, ims.len, &t) == AIS_OK && ms <= t / 1000000000LL &&
		   t <= time_now_ns()) {
		return get ? 304 : 412;
	}
	return 0;
}

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

static int get_object(s3_rq_t *r)
{
	http_req_t *req = r->http;
	store_meta_t sm;
	s3_meta_t m;
	char etag[96];
	int fd;
	uint64_t start = 0, len;

	if (store_open_obj(r->node.store, r->bucket.ptr, r->bucket.len, r->key.ptr, r->key.len, &fd, &sm) != AIS_OK) {
		int e = errno;
		if (e != ENOENT || s3_access_missing(r) == AIS_OK)
			s3_error_errno(r, e, true);
		return AIS_OK;
	}
	s3_meta_decode(req->arena, sm.custom, &m);
	if (s3_access_object(r, r->bucket, &m, r->obj_need) != AIS_OK) {
		close(fd);
		return AIS_OK;
	}
	s3_etag_of(&sm, &m, etag, sizeof(etag));
	int cond = s3_conditions(req, etag, sm.mtime_ns, "", true);
	if (cond == 412) {
		close(fd);
		s3_error(r, "PreconditionFailed", NULL);
		return AIS_OK;
	}
	if (cond == 304) {
		close(fd);
		s3_common_headers(r);
		http_resp_header(req, "ETag", "%s", etag);
		char t[64];
		time_http_date(sm.mtime_ns, t, sizeof(t));
		http_resp_header(req, "Last-Modified", "%s", t);
		http_resp_status(req, 304);
		http_resp_send(req, "", 0);
		return AIS_OK;
	}
	int rr = http_range_parse(http_req_header(req, "Range"), sm.size, &start, &len);
	if (rr == AIS_ERR) {
		close(fd);
		http_resp_header(req, "Content-Range", "bytes */%llu", (unsigned long long)sm.size);
		s3_error(r, "InvalidRange", NULL);
		return AIS_OK;
	}
	overrides(r, &m);
	s3_common_headers(r);
	s3_meta_headers(r, &sm, &m);
	if (rr == AIS_OK) {
		http_resp_status(req, 206);
		http_resp_header(req, "Content-Range", "bytes %llu-%llu/%llu", (unsigned long long)start,
				 (unsigned long long)(start + len - 1), (unsigned long long)sm.size);
	} else {
		start = 0;
		len = sm.size;
	}
	if (req->method == HTTP_GET && time_now_ns() - sm.atime_ns > 60LL * 1000000000LL)
		store_touch(r->node.store, r->bucket.ptr, r->bucket.len, r->key.ptr, r->key.len, &sm);
	http_resp_send_file(req, fd, (off_t)start, len);
	return AIS_OK;
}

/* --- PUT ------------------------------------------------------------------------ */

struct obj_sink {
	store_writer_t *w;
	s3_meta_t m;
	buf_t custom;
	store_meta_t out;
};

static int obj_begin(s3_put_t *p)
{
	struct obj_sink *s = p->sink;
	s3_rq_t *r = p->r;
	return store_writer_begin(r->node.store, r->bucket.ptr, r->bucket.len, r->key.ptr, r->key.len, &s->w);
}

static int obj_write(s3_put_t *p, const char *b, size_t n)
{
	struct obj_sink *s = p->sink;
	return store_writer_write(s->w, b, n);
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
	return store_writer_commit(s->w, CKSUM_NONE, NULL, s->custom.ptr, &s->out);
}

static void obj_reply(s3_put_t *p)
{
	s3_common_headers(p->r);
	http_resp_header(p->r->http, "ETag", "\"%s\"", p->md5hex);
	http_resp_send(p->r->http, "", 0);
}

static void obj_cleanup(s3_put_t *p)
{
	struct obj_sink *s = p->sink;
	store_writer_free(s->w);
	s->w = NULL;
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
	p->ops = &obj_ops;
	p->sink = s;
	s3_put_start(r, p);
	return AIS_OK;
}

/* --- DELETE ---------------------------------------------------------------------- */

struct del {
	int err;
};

static void del_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct del *d = r->op;
	if (store_delete(r->node.store, r->bucket.ptr, r->bucket.len, r->key.ptr, r->key.len) != AIS_OK)
		d->err = errno ? errno : EIO;
}

static void del_done(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct del *d = r->op;
	if (d->err && d->err != ENOENT) {
		s3_error_errno(r, d->err, true);
		return;
	}
	if (d->err == ENOENT && !s3_bucket_exists(r)) {
		s3_error(r, "NoSuchBucket", NULL);
		return;
	}
	s3_common_headers(r);
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
	case HTTP_DELETE:
		r->op = arena_zalloc(req->arena, sizeof(struct del));
		http_offload(req, del_work, del_done);
		return AIS_OK;
	default:
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
}
