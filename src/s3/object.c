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

/* ?partNumber=N of a GET/HEAD: *num 0 when absent. AIS_ERR after
 * answering (not 1..10000, or with a Range). */
static int part_param(s3_rq_t *r, uint32_t *num)
{
	sv_t v;
	uint64_t n;
	*num = 0;
	if (!http_query_get(r->http, "partNumber", &v))
		return AIS_OK;
	if (num_parse_u64(v.ptr, v.len, 1, S3_MAX_PARTS, &n) != AIS_OK) {
		s3_error(r, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive");
		return AIS_ERR;
	}
	if (http_req_has_header(r->http, "Range")) {
		s3_error(r, "InvalidRequest", "Cannot specify both Range header and partNumber query parameter");
		return AIS_ERR;
	}
	*num = (uint32_t)n;
	return AIS_OK;
}

/* The byte range of part num of the object (its part sizes kept at
 * Complete; an object not from a multipart upload is its own part 1) and
 * its part count (0: not multipart). AIS_ERR after answering. */
static int part_range(s3_rq_t *r, const store_meta_t *sm, const s3_meta_t *m, uint32_t num, uint64_t *start,
		      uint64_t *len, uint32_t *count)
{
	*count = 0;
	int rc = AIS_OK;
	if (m->parts) {
		rc = s3_part_range(m->parts, num, start, len, count);
		if (rc == AIS_ERR) {
			s3_error(r, "InternalError", "the object's part sizes are damaged");
			return AIS_ERR;
		}
	} else if (m->mpu) {
		s3_error(r, "NotImplemented", "the part sizes of this multipart object were not kept");
		return AIS_ERR;
	} else if (num == 1) {
		*start = 0;
		*len = sm->size;
	} else {
		rc = AIS_DONE;
	}
	if (rc == AIS_DONE) {
		s3_error(r, "InvalidPartNumber", NULL);
		return AIS_ERR;
	}
	return AIS_OK;
}

/* --- the decrypting send (sse.c rule 2) ----------------------------------------------- */

#define DEC_PIECE (256u << 10)

/* An encrypted object's bytes from start, read and decrypted a piece at a
 * time (reads of the owner's own file: a cold one blocks the loop for
 * one piece's read). In r->op from the send on. */
struct dsend {
	s3_sse_t *sse;
	int fd;
	uint64_t off, end;
};

static void dsend_cleanup(void *arg)
{
	struct dsend *d = arg;
	if (d->fd >= 0)
		close(d->fd);
}

static int dsend_fill(http_req_t *req, buf_t *out)
{
	s3_rq_t *r = req->state;
	struct dsend *d = r->op;
	if (d->off == d->end)
		return AIS_DONE;
	size_t want = (size_t)MIN((uint64_t)DEC_PIECE, d->end - d->off);
	buf_grow(out, want);
	ssize_t n = pread(d->fd, out->ptr + out->len, want, (off_t)d->off);
	if (n <= 0) {
		log_warn("s3: reading %.*s/%.*s for decryption", (int)r->bucket.len, r->bucket.ptr,
			 (int)MIN(r->key.len, 256), r->key.ptr);
		return AIS_ERR;
	}
	if (s3_sse_xor(d->sse, d->off, out->ptr + out->len, out->ptr + out->len, (size_t)n) != AIS_OK)
		return AIS_ERR;
	out->len += (size_t)n;
	d->off += (uint64_t)n;
	return d->off == d->end ? AIS_DONE : AIS_OK;
}

static void dsend(s3_rq_t *r, s3_sse_t *sse, int fd, uint64_t start, uint64_t len)
{
	struct dsend *d = arena_zalloc(r->http->arena, sizeof(*d));
	d->sse = sse;
	d->fd = fd;
	d->off = start;
	d->end = start + len;
	arena_cleanup_add(r->http->arena, dsend_cleanup, d);
	r->op = d;
	r->http->state = r;
	if (!len) {
		http_resp_send(r->http, "", 0);
		return;
	}
	http_resp_send_stream_len(r->http, dsend_fill, len);
}

/* r->op of a GET reopened for decryption: its fd is the file itself
 * (opened without OL_STREAM: no bytes from memory, slices or a fetch). */
static char whole_file;

static void get_opened(http_req_t *req, void *arg, int fd, store_meta_t *smp, int err, const char *msg)
{
	s3_rq_t *r = arg;
	store_meta_t sm;
	s3_meta_t m;
	char etag[96];
	uint64_t start = 0, len;

	if (err) {
		if (s3_version_missing(r, err, OL_STREAM, get_opened))
			return;
		char id[NAME_VER_ID_LEN + 1];
		if (err == ENOENT && s3_history(r) != BMD_HIST_OFF) { /* whether the current version is a marker */
			bool dm = olver_marker_current(req->ctx, r->bucket, r->key, id);
			http_resp_header(req, "x-amz-delete-marker", dm ? "true" : "false");
			if (dm)
				http_resp_header(req, "x-amz-version-id", "%s", id);
		}
		if (err != ENOENT || s3_access_missing(r) == AIS_OK)
			s3_error_read(r, err, msg);
		return;
	}
	sm = *smp;
	if (s3_version_opened(r, fd, &sm) != AIS_OK)
		return;
	s3_meta_decode(req->arena, sm.custom, &m);
	if (s3_access_object(r, S3_RES_NAMED, &m) != AIS_OK) {
		ol_close(req, fd);
		return;
	}
	s3_sse_t *sse = NULL;
	if ((m.sse || s3_sse_asked(r)) && s3_sse_get(r, m.sse, &sse) != AIS_OK) {
		ol_close(req, fd);
		return;
	}
	if (sse && req->method == HTTP_GET && r->op != &whole_file) {
		ol_close(req, fd);
		r->op = &whole_file;
		unsigned f = !http_req_has_header(req, "Range") && !s3_query_has(req, "partNumber") ? OL_VERIFY : 0;
		ol_open(req, req->ctx, r->bucket, r->key, f, get_opened, r);
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
	uint32_t part, nparts = 0;
	part_param(r, &part); /* (checked before the open) */
	int rr = http_range_parse(http_req_header(req, "Range"), sm.size, &start, &len);
	if (part && part_range(r, &sm, &m, part, &start, &len, &nparts) != AIS_OK) {
		ol_close(req, fd);
		return;
	}
	if (part)
		rr = len ? AIS_OK : AIS_DONE; /* a part is a range; an empty object: all of it */
	if (rr == AIS_ERR) {
		ol_close(req, fd);
		http_resp_header(req, "Content-Range", "bytes */%llu", (unsigned long long)sm.size);
		s3_error(r, "InvalidRange", NULL);
		return;
	}
	overrides(r, &m);
	s3_common_headers(r);
	s3_meta_headers(r, &sm, &m);
	s3_sse_headers(r, sse);
	if (rr != AIS_OK) /* the whole object's checksum, not a range's */
		s3_ck_headers(r, &m);
	if (nparts)
		http_resp_header(req, "x-amz-mp-parts-count", "%u", nparts);
	s3_version_header(r, sm.custom, false);
	s3_lc_header(r, sm.size, sm.mtime_ns, &m.tags);
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
	if (sse && req->method == HTTP_GET)
		dsend(r, sse, fd, start, len);
	else
		ol_send(req, fd, start, len);
}

static int get_object(s3_rq_t *r)
{
	http_req_t *req = r->http;
	sv_t etl;
	if (req->method == HTTP_GET && (http_query_get(req, "etl", &etl) || (etl = http_req_header(req, "x-ais-etl")).len))
		return tgt_get_etl(req, req->ctx, r->bucket, r->key, etl, true); /* transformed (etl.h) */
	uint32_t part;
	if (part_param(r, &part) != AIS_OK)
		return AIS_OK;
	unsigned f = req->method == HTTP_GET && !http_req_has_header(req, "Range") && !part ? OL_VERIFY : 0;
	if (s3_version_select(r) != AIS_OK)
		return AIS_OK;
	if (req->method == HTTP_GET && s3_sse_asked(r)) { /* SSE-C: the file itself, decrypted (dsend) */
		r->op = &whole_file;
		ol_open(req, req->ctx, r->bucket, r->key, f, get_opened, r);
		return AIS_OK;
	}
	ol_open(req, req->ctx, r->bucket, r->key, f | OL_STREAM, get_opened, r);
	return AIS_OK;
}

/* --- GetObjectAttributes ------------------------------------------------------- */

enum { ATTR_ETAG = 1, ATTR_CK = 2, ATTR_PARTS = 4, ATTR_CLASS = 8, ATTR_SIZE = 16 };

/* x-amz-object-attributes: names separated by commas; 0 when it is
 * missing, empty or names an unknown attribute. */
static unsigned attrs_parse(sv_t h)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {{"ETag", ATTR_ETAG},         {"Checksum", ATTR_CK},     {"ObjectParts", ATTR_PARTS},
		     {"StorageClass", ATTR_CLASS}, {"ObjectSize", ATTR_SIZE}};
	unsigned out = 0;
	const char *p = h.ptr, *end = h.ptr + h.len;
	while (p && p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		sv_t it = sv_trim((sv_t){p, (size_t)((c ? c : end) - p)});
		size_t i;
		for (i = 0; i < ARRAY_SIZE(names) && !sv_eqstr(it, names[i].name); i++)
			;
		if (i == ARRAY_SIZE(names))
			return 0;
		out |= names[i].bit;
		p = c ? c + 1 : end;
	}
	return out;
}

/* x-amz-max-parts (0..1000, default 1000) and x-amz-part-number-marker
 * (0..10000, default 0) of ObjectParts' page. AIS_ERR: one is malformed. */
static int attrs_page(http_req_t *req, uint64_t *max, uint64_t *marker)
{
	sv_t v = http_req_header(req, "x-amz-max-parts");
	*max = 1000;
	*marker = 0;
	if (v.ptr && num_parse_u64(v.ptr, v.len, 0, 1000, max) != AIS_OK)
		return AIS_ERR;
	v = http_req_header(req, "x-amz-part-number-marker");
	if (v.ptr && num_parse_u64(v.ptr, v.len, 0, S3_MAX_PARTS, marker) != AIS_OK)
		return AIS_ERR;
	return AIS_OK;
}

/* ObjectParts of a multipart object whose part sizes were kept (m->parts):
 * its part count, then the page of parts after the marker (number and
 * size, and its checksum where a COMPOSITE upload's part checksums were
 * kept), with the paging elements as S3 has them. */
static void attrs_parts(s3_rq_t *r, const s3_meta_t *m, buf_t *b)
{
	uint64_t max, marker, start, len;
	uint32_t count = 0, next = 0, shown = 0;
	bool more = false;
	buf_t parts = BUF_INIT;
	sv_t alg, v, pck;
	const char *type, *tag = m->pcks && s3_meta_ck(m, &alg, &v, &type) ? s3_ck_xml(s3_ck_by_name(alg)) : NULL;
	attrs_page(r->http, &max, &marker); /* (checked before the open) */
	s3_part_range(m->parts, 1, &start, &len, &count);
	for (uint32_t n = 1, ord = 0; n <= S3_MAX_PARTS; n++) {
		if (s3_part_range(m->parts, n, &start, &len, &count) != AIS_OK)
			continue;
		if (ord++, n <= marker)
			continue;
		if (shown == max) {
			more = true;
			break;
		}
		s3_xml_open(&parts, "Part");
		s3_xml_elemf(&parts, "PartNumber", "%u", n);
		s3_xml_elemf(&parts, "Size", "%llu", (unsigned long long)len);
		if (tag && s3_part_ck(m, ord - 1, &pck))
			s3_xml_elem(&parts, tag, pck.ptr, pck.len);
		s3_xml_close(&parts, "Part");
		shown++;
		next = n;
	}
	s3_xml_open(b, "ObjectParts");
	s3_xml_elemf(b, "PartsCount", "%u", count);
	s3_xml_elemf(b, "PartNumberMarker", "%llu", (unsigned long long)marker);
	if (next)
		s3_xml_elemf(b, "NextPartNumberMarker", "%u", next);
	s3_xml_elemf(b, "MaxParts", "%llu", (unsigned long long)max);
	s3_xml_elemstr(b, "IsTruncated", more ? "true" : "false");
	if (parts.len)
		buf_add(b, parts.ptr, parts.len);
	s3_xml_close(b, "ObjectParts");
	buf_free(&parts);
}

static void attrs_opened(http_req_t *req, void *arg, int fd, store_meta_t *smp, int err, const char *msg)
{
	s3_rq_t *r = arg;
	unsigned want = attrs_parse(http_req_header(req, "x-amz-object-attributes"));
	s3_meta_t m;
	char etag[96], t[64];
	buf_t b = BUF_INIT;

	if (err) {
		if (s3_version_missing(r, err, 0, attrs_opened))
			return;
		if (err != ENOENT || s3_access_missing(r) == AIS_OK)
			s3_error_read(r, err, msg);
		return;
	}
	if (s3_version_opened(r, fd, smp) != AIS_OK)
		return;
	ol_close(req, fd);
	s3_meta_decode(req->arena, smp->custom, &m);
	if (s3_access_object(r, S3_RES_NAMED, &m) != AIS_OK)
		return;
	s3_sse_t *sse; /* an SSE-C object's attributes need its key, as on S3 */
	if (((m.sse && m.sse[0] == 'C') || s3_sse_asked(r)) && s3_sse_get(r, m.sse, &sse) != AIS_OK)
		return;
	s3_etag_of(smp, &m, etag, sizeof(etag));
	s3_xml_head(&b, "GetObjectAttributesResponse");
	if (want & ATTR_ETAG)
		s3_xml_elem(&b, "ETag", etag + 1, strlen(etag) - 2); /* without its quotes, as S3 has it */
	sv_t alg, v;
	const char *type;
	if ((want & ATTR_CK) && s3_meta_ck(&m, &alg, &v, &type)) {
		s3_xml_open(&b, "Checksum");
		s3_xml_elem(&b, s3_ck_xml(s3_ck_by_name(alg)), v.ptr, v.len);
		s3_xml_elemstr(&b, "ChecksumType", type);
		s3_xml_close(&b, "Checksum");
	}
	const char *dash = strrchr(etag, '-');
	if ((want & ATTR_PARTS) && m.parts) /* a multipart upload's, its part sizes kept */
		attrs_parts(r, &m, &b);
	else if ((want & ATTR_PARTS) && dash && dash - etag == 33) { /* ... kept before them: "md5-N" */
		s3_xml_open(&b, "ObjectParts");
		s3_xml_elem(&b, "PartsCount", dash + 1, strlen(dash + 1) - 1);
		s3_xml_close(&b, "ObjectParts");
	}
	if (want & ATTR_CLASS)
		s3_xml_elemstr(&b, "StorageClass", "STANDARD");
	if (want & ATTR_SIZE)
		s3_xml_elemf(&b, "ObjectSize", "%llu", (unsigned long long)smp->size);
	s3_xml_close(&b, "GetObjectAttributesResponse");
	time_http_date(smp->mtime_ns, t, sizeof(t));
	http_resp_header(req, "Last-Modified", "%s", t);
	s3_version_header(r, smp->custom, false);
	s3_send_xml(r, 200, &b);
}

int s3_object_attributes(s3_rq_t *r)
{
	if (!attrs_parse(http_req_header(r->http, "x-amz-object-attributes"))) {
		s3_error(r, "InvalidArgument", "x-amz-object-attributes must name one or more of ETag, Checksum, "
					      "ObjectParts, StorageClass, ObjectSize");
		return AIS_OK;
	}
	uint64_t max, marker;
	if (attrs_page(r->http, &max, &marker) != AIS_OK) {
		s3_error(r, "InvalidArgument", "x-amz-max-parts must be an integer from 0 to 1000, "
					      "x-amz-part-number-marker one from 0 to 10000");
		return AIS_OK;
	}
	if (s3_version_select(r) != AIS_OK) /* ?versionId: that version's attributes */
		return AIS_OK;
	ol_open(r->http, r->http->ctx, r->bucket, r->key, 0, attrs_opened, r);
	return AIS_OK;
}

/* --- conditional writes ----------------------------------------------------------- */

struct cond {
	sv_t if_match;     /* ETags, or "*"; {NULL, 0}: none */
	sv_t if_none;      /* the same for If-None-Match */
	const char **code; /* the S3 error code of a failed check goes here */
};

/* Does the ETag list l ("a", W/"b", *) name etag (quoted)? */
static bool etag_listed(sv_t l, const char *etag)
{
	sv_t want = {etag + 1, strlen(etag) - 2};
	while (l.len) {
		const char *c = memchr(l.ptr, ',', l.len);
		sv_t it = sv_trim((sv_t){l.ptr, c ? (size_t)(c - l.ptr) : l.len});
		l = c ? (sv_t){c + 1, l.len - (size_t)(c + 1 - l.ptr)} : (sv_t){l.ptr + l.len, 0};
		if (sv_eqstr(it, "*"))
			return true;
		if (sv_startswith(it, "W/"))
			it = (sv_t){it.ptr + 2, it.len - 2};
		if (it.len >= 2 && it.ptr[0] == '"' && it.ptr[it.len - 1] == '"')
			it = (sv_t){it.ptr + 1, it.len - 2};
		if (sv_eq(it, want))
			return true;
	}
	return false;
}

/* ol_put_t.precond: the object's current ETag against the request's. */
static int cond_check(ol_put_t *w, const store_meta_t *cur)
{
	struct cond *c = w->precond_arg;
	if (!cur) {
		if (!c->if_match.ptr)
			return AIS_OK;
		*c->code = "NoSuchKey"; /* S3: If-Match on a missing key */
		errno = ENOENT;
		return AIS_ERR;
	}
	arena_t *a = arena_new(4096);
	s3_meta_t *m = arena_alloc(a, sizeof(*m));
	char etag[96];
	s3_meta_decode(a, cur->custom, m);
	s3_etag_of(cur, m, etag, sizeof(etag));
	arena_destroy(a);
	if ((c->if_none.ptr && etag_listed(c->if_none, etag)) || (c->if_match.ptr && !etag_listed(c->if_match, etag))) {
		*c->code = "PreconditionFailed";
		errno = EEXIST;
		return AIS_ERR;
	}
	return AIS_OK;
}

/* Does r's bucket cache a remote bucket (its props name a backend)? Its
 * objects may be at the remote only, where the owner cannot check them. */
static bool remote_bucket(s3_rq_t *r)
{
	const bmd_t *b;
	bool remote = false;
	if (!r->node.cl)
		return false;
	cluster_read_lock(r->node.cl, NULL, &b);
	const bmd_bucket_t *bk = b ? bmd_get(b, r->bucket.ptr, r->bucket.len) : NULL;
	remote = bk && bk->props.backend.provider[0];
	cluster_read_unlock(r->node.cl);
	return remote;
}

int s3_cond_arm(s3_rq_t *r, ol_put_t *w, const char **code)
{
	sv_t im = http_req_header(r->http, "If-Match"), inm = http_req_header(r->http, "If-None-Match");
	if (!im.ptr && !inm.ptr)
		return AIS_OK;
	if ((im.ptr && !sv_trim(im).len) || (inm.ptr && !sv_trim(inm).len)) {
		s3_error(r, "InvalidArgument", "%s: an empty ETag", im.ptr && !sv_trim(im).len ? "If-Match" : "If-None-Match");
		return AIS_ERR;
	}
	if (remote_bucket(r)) {
		s3_error(r, "NotImplemented", "%s on a bucket in front of a remote bucket is not implemented",
			 im.ptr ? "If-Match" : "If-None-Match");
		return AIS_ERR;
	}
	struct cond *c = arena_zalloc(r->http->arena, sizeof(*c));
	c->if_match = im.ptr ? sv_trim(im) : (sv_t){NULL, 0};
	c->if_none = inm.ptr ? sv_trim(inm) : (sv_t){NULL, 0};
	c->code = code;
	w->precond = cond_check;
	w->precond_arg = c;
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
	if (p->ck != S3_CK_NONE) /* kept for GET/HEAD x-amz-checksum-mode and GetObjectAttributes */
		s->m.ck = arena_printf(p->r->http->arena, "%s:%s", s3_ck_name(p->ck), p->ck_b64);
	buf_reset(&s->custom);
	if (s3_meta_encode(&s->m, &s->custom) != AIS_OK) {
		p->code = "MetadataTooLarge";
		errno = EINVAL;
		return AIS_ERR;
	}
	s->op.custom = s->custom.ptr;
	if (ol_put_commit(&s->op) != AIS_OK) {
		if (!p->code)
			p->msg = s->op.msg.ptr; /* freed with the sink, after the answer */
		return AIS_ERR;
	}
	return AIS_OK;
}

static void obj_reply(s3_put_t *p)
{
	struct obj_sink *s = p->sink;
	s3_common_headers(p->r);
	s3_version_header(p->r, s->op.meta.custom, true);
	s3_lc_header(p->r, s->op.meta.size, s->op.meta.mtime_ns, &s->m.tags);
	s3_sse_headers(p->r, p->sse);
	http_resp_header(p->r->http, "ETag", "\"%s\"", p->md5hex);
	s3_put_ck_header(p, true);
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
	if (s3_meta_from_req(r, &s->m) != AIS_OK || s3_tags_from_req(r, &s->m.tags) != AIS_OK ||
	    s3_cond_arm(r, &s->op, &p->code) != AIS_OK || s3_sse_put(r, &p->sse) != AIS_OK)
		return AIS_OK;
	if (p->sse)
		s->m.sse = p->sse->meta;
	memset(s->m.etag, 'f', 32);
	static char longest_ck[] = "sha256:0123456789012345678901234567890123456789012=:FULL_OBJECT";
	s->m.ck = longest_ck;
	int rc = s3_meta_encode(&s->m, &probe);
	s->m.etag[0] = '\0';
	s->m.ck = NULL;
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
		int rc = d->vid.ptr ? olver_delete_version(req->ctx, r->where, r->bucket, r->key, d->vid,
							   s3_lock_bypass(r), &d->dm, &d->why)
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
