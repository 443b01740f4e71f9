/*
 * post.c - S3 browser-based uploads: POST of an HTML form
 * (multipart/form-data) to a bucket's URL, the file written as a PutObject
 * of the form's key.
 *
 * The key is in the body, so the node that receives the form reads its
 * fields first (s3post.h: at most S3_FORM_HEAD_MAX bytes, kept), up to the
 * start of the file part; then:
 *  1. in a cluster, a node that is not the key's owner (a gateway, or a
 *     target by its map) forwards the request as it came, the bytes read
 *     so far first, then the rest of the body as a stream (proxy.c);
 *  2. the owner verifies the form's signature over its policy (or takes it
 *     as anonymous), checks the policy's expiration and conditions, and
 *     turns the request into a PutObject of the key whose headers are the
 *     form's fields (Content-Type, x-amz-meta-*, acl, tagging, ...): one
 *     authorization decision (s3_authorize: the bucket's ACL and policy
 *     for an anonymous form), then object.c's PUT path (ol_stream, the
 *     write with the bucket's copies);
 *  3. the body goes through the form parser in front of that pipeline, so
 *     only the file's bytes reach it, never buffered whole; its
 *     content-length-range is checked as the bytes come (EntityTooLarge)
 *     and at the end (EntityTooSmall), and a form cut short fails before
 *     anything commits;
 *  4. the answer is success_action_redirect's 303, or success_action_status
 *     (200, 201 with a PostResponse document, 204 by default).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/s3post.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

struct s3_post {
	s3_form_t f;
	buf_t pre;       /* the body bytes read before the file (a forward sends them) */
	size_t file_at;  /* where in pre the file's bytes begin */
	uint64_t lmin, lmax; /* the policy's content-length-range */
	bool too_large;
	bool inner_failed;  /* the PUT pipeline answered an error */
	http_body_fn in_body;   /* the PUT pipeline's */
	http_end_fn in_end;
	sv_t key;
	s3_put_ops_t ops;   /* object.c's, with the answer of a form */
	void (*in_reply)(s3_put_t *p);
};

static void post_cleanup(void *arg) { buf_free(&((struct s3_post *)arg)->pre); }

bool s3_post_is(s3_rq_t *r)
{
	http_req_t *req = r->http;
	sv_t ct = sv_trim(http_req_header(req, "Content-Type"));
	return req->method == HTTP_POST && r->bucket.len && !r->key.len && !req->query.len && ct.len >= 19 &&
	       !strncasecmp(ct.ptr, "multipart/form-data", 19);
}

static void malformed(s3_rq_t *r, const char *why)
{
	s3_error(r, "MalformedPOSTRequest", "%s", why);
}

/* --- the answer ------------------------------------------------------------------ */

static void pct_add(buf_t *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    c == '.' || c == '~') {
			buf_add(b, s + i, 1);
		} else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};
			buf_add(b, e, 3);
		}
	}
}

static void post_reply(s3_put_t *p)
{
	s3_rq_t *r = p->r;
	struct s3_post *x = r->post;
	http_req_t *req = r->http;
	const char *redir = s3_form_get(&x->f, "success_action_redirect", NULL);
	const char *st = s3_form_get(&x->f, "success_action_status", NULL);
	char etag[40];
	snprintf(etag, sizeof(etag), "\"%s\"", p->md5hex);
	if (!redir)
		redir = s3_form_get(&x->f, "redirect", NULL);
	s3_common_headers(r);
	http_resp_header(req, "ETag", "%s", etag);
	s3_sse_headers(r, p->sse);
	s3_put_ck_header(p, true);
	if (redir && *redir) {
		buf_t u = BUF_INIT;
		buf_addstr(&u, redir);
		buf_addstr(&u, strchr(redir, '?') ? "&bucket=" : "?bucket=");
		pct_add(&u, r->bucket.ptr, r->bucket.len);
		buf_addstr(&u, "&key=");
		pct_add(&u, x->key.ptr, x->key.len);
		buf_addstr(&u, "&etag=");
		pct_add(&u, etag, strlen(etag));
		http_resp_header(req, "Location", "%s", u.ptr);
		buf_free(&u);
		http_resp_status(req, 303);
		http_resp_send(req, "", 0);
		return;
	}
	if (st && !strcmp(st, "201")) {
		buf_t b = BUF_INIT, loc = BUF_INIT;
		sv_t host = http_req_header(req, "Host");
		buf_addf(&loc, "http://%.*s/", (int)host.len, host.ptr ? host.ptr : "");
		pct_add(&loc, r->bucket.ptr, r->bucket.len);
		buf_addstr(&loc, "/");
		pct_add(&loc, x->key.ptr, x->key.len);
		http_resp_header(req, "Location", "%s", loc.ptr);
		s3_xml_head(&b, NULL); /* S3's PostResponse has no namespace */
		s3_xml_open(&b, "PostResponse");
		s3_xml_elem(&b, "Location", loc.ptr, loc.len);
		s3_xml_elem(&b, "Bucket", r->bucket.ptr, r->bucket.len);
		s3_xml_elem(&b, "Key", x->key.ptr, x->key.len);
		s3_xml_elemstr(&b, "ETag", etag);
		s3_xml_close(&b, "PostResponse");
		buf_free(&loc);
		s3_send_xml(r, 201, &b);
		return;
	}
	http_resp_status(req, st && !strcmp(st, "200") ? 200 : 204);
	http_resp_send(req, "", 0);
}

/* --- the file, through the PUT pipeline -------------------------------------------- */

static int file_emit(void *arg, const char *p, size_t n)
{
	s3_rq_t *r = arg;
	struct s3_post *x = r->post;
	if (x->f.file_len > x->lmax) { /* (file_len counts these n already) */
		x->too_large = true;
		return AIS_ERR;
	}
	if (x->in_body(r->http, p, n) != AIS_OK) {
		x->inner_failed = true;
		return AIS_ERR;
	}
	return AIS_OK;
}

static int post_body(http_req_t *req, const char *p, size_t n)
{
	s3_rq_t *r = ((s3_put_t *)req->state)->r;
	struct s3_post *x = r->post;
	size_t used;
	if (s3_form_feed(&x->f, p, n, &used, file_emit, r) != S3_FORM_ERR)
		return AIS_OK;
	if (x->inner_failed)
		return AIS_ERR;
	if (x->too_large)
		s3_error(r, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size (%llu bytes).",
			 (unsigned long long)x->lmax);
	else
		malformed(r, x->f.err);
	return AIS_ERR;
}

static void post_end(http_req_t *req)
{
	s3_rq_t *r = ((s3_put_t *)req->state)->r;
	struct s3_post *x = r->post;
	if (s3_form_finish(&x->f) != AIS_OK) {
		malformed(r, x->f.err);
		return;
	}
	if (x->f.file_len < x->lmin) {
		s3_error(r, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size (%llu bytes).",
			 (unsigned long long)x->lmin);
		return;
	}
	x->in_end(req);
}

/* --- the form as a PutObject's headers ---------------------------------------------- */

static bool form_header(const char *n)
{
	static const char *const h[] = {"Content-Type", "Cache-Control", "Content-Disposition", "Content-Encoding",
					"Content-Language", "Expires"};
	for (size_t i = 0; i < ARRAY_SIZE(h); i++)
		if (!strcasecmp(n, h[i]))
			return true;
	if (strncasecmp(n, "x-amz-", 6))
		return false;
	static const char *const auth[] = {"x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-signature",
					   "x-amz-security-token"};
	for (size_t i = 0; i < ARRAY_SIZE(auth); i++)
		if (!strcasecmp(n, auth[i]))
			return false;
	return strncasecmp(n, "x-amz-copy-source", 17) != 0; /* (a form uploads; it copies nothing) */
}

/* The request's headers become the form's: the client's own but its body's
 * (Content-Type, -Length, -MD5), credentials and x-amz-*, then the fields
 * a PutObject takes as headers (acl as x-amz-acl, the tagging document as
 * x-amz-tagging). AIS_ERR after answering. */
static int form_headers(s3_rq_t *r)
{
	http_req_t *req = r->http;
	struct s3_post *x = r->post;
	size_t n = 0, max = req->nhdrs + x->f.nfields;
	http_hdr_t *h = arena_zalloc(req->arena, (max + 1) * sizeof(*h));
	for (size_t i = 0; i < req->nhdrs; i++) {
		sv_t nm = req->hdrs[i].name;
		if (sv_eqcase(nm, SV("Content-Type")) || sv_eqcase(nm, SV("Content-MD5")) ||
		    sv_eqcase(nm, SV("Authorization")) || (nm.len >= 6 && !strncasecmp(nm.ptr, "x-amz-", 6)))
			continue;
		h[n++] = req->hdrs[i];
	}
	for (size_t i = 0; i < x->f.nfields; i++) {
		const s3_form_field_t *f = &x->f.fields[i];
		sv_t v = {f->value, f->len};
		if (form_header(f->name)) {
			h[n++] = (http_hdr_t){sv_from(f->name), v};
		} else if (!strcasecmp(f->name, "acl")) {
			h[n++] = (http_hdr_t){SV("x-amz-acl"), v};
		} else if (!strcasecmp(f->name, "tagging")) {
			s3_tags_t *t = arena_zalloc(req->arena, sizeof(*t));
			buf_t q = BUF_INIT;
			if (s3_tags_from_xml(req->arena, f->value, f->len, t) != AIS_OK) {
				s3_error(r, "MalformedXML", "the tagging field is not a <Tagging> document");
				return AIS_ERR;
			}
			for (size_t k = 0; k < MIN(t->n, ARRAY_SIZE(t->t)); k++) {
				if (k)
					buf_addstr(&q, "&");
				pct_add(&q, t->t[k].key, strlen(t->t[k].key));
				buf_addstr(&q, "=");
				pct_add(&q, t->t[k].value, strlen(t->t[k].value));
			}
			h[n++] = (http_hdr_t){SV("x-amz-tagging"),
					      {arena_strndup(req->arena, q.ptr ? q.ptr : "", q.len), q.len}};
			buf_free(&q);
		}
	}
	req->hdrs = h;
	req->nhdrs = n;
	return AIS_OK;
}

/* --- where the form is served ---------------------------------------------------------- */

/* This node is the key's owner: the form becomes a PutObject of it. */
static void serve(s3_rq_t *r)
{
	http_req_t *req = r->http;
	struct s3_post *x = r->post;
	s3_autherr_t e;
	int64_t now = time_now_ns() / 1000000000LL;

	if (s3_post_verify(&s3_cfg, &x->f, now, &r->auth, &e) != AIS_OK ||
	    s3_post_policy_check(req->arena, &x->f, r->bucket, x->key, now, &x->lmin, &x->lmax, &e) != AIS_OK) {
		s3_error_auth(r, &e);
		return;
	}
	r->key = x->key;
	r->resource.ptr = arena_printf(req->arena, "/%.*s/%.*s", (int)r->bucket.len, r->bucket.ptr, (int)r->key.len,
				       r->key.ptr);
	r->resource.len = strlen(r->resource.ptr);
	if (form_headers(r) != AIS_OK)
		return;
	req->method = HTTP_PUT; /* S3's s3:PutObject, with the form's fields as headers */
	s3_req_from_http(req, &r->areq);
	if (s3_authorize(r) != AIS_OK || s3_nyi_answered(r))
		return;
	req->state = r;
	s3_object(r);
	if (http_resp_started(req) || r->op == NULL || req->on_body == NULL)
		return; /* answered (NoSuchBucket, a bad header, ...) */
	s3_put_t *p = r->op;
	x->ops = *p->ops;
	x->ops.reply = post_reply;
	p->ops = &x->ops;
	x->in_body = req->on_body;
	x->in_end = req->on_body_end;
	req->on_body = post_body;
	req->on_body_end = post_end;
	/* the file's first bytes came with the fields */
	if (x->file_at < x->pre.len)
		post_body(req, x->pre.ptr + x->file_at, x->pre.len - x->file_at);
	buf_free(&x->pre);
}

/* The fields are in: the key, and who serves it (rule 1). */
static void route(s3_rq_t *r)
{
	http_req_t *req = r->http;
	struct s3_post *x = r->post;
	size_t kl;
	const char *k = s3_form_get(&x->f, "key", &kl);
	char url[CMAP_URL_MAX + 1];

	if (!k) {
		s3_error(r, "InvalidArgument", "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.");
		return;
	}
	{ /* ${filename}: the file's name, without a client's path */
		const char *fn = x->f.filename, *sl = strrchr(fn, '/'), *bs = strrchr(fn, '\\');
		fn = bs && bs > sl ? bs + 1 : sl ? sl + 1 : fn;
		buf_t b = BUF_INIT;
		const char *m;
		sv_t rest = {k, kl};
		while ((m = rest.len >= 11 ? memmem(rest.ptr, rest.len, "${filename}", 11) : NULL)) {
			buf_add(&b, rest.ptr, (size_t)(m - rest.ptr));
			buf_addstr(&b, fn);
			rest = (sv_t){m + 11, rest.len - (size_t)(m - rest.ptr) - 11};
		}
		buf_addsv(&b, rest);
		x->key = (sv_t){arena_strndup(req->arena, b.ptr ? b.ptr : "", b.len), b.len};
		buf_free(&b);
	}
	if (!x->key.len || !name_object_valid(x->key.ptr, x->key.len)) {
		if (x->key.len > NAME_OBJECT_MAX)
			s3_error(r, "KeyTooLongError", NULL);
		else
			s3_error(r, "InvalidArgument", "the key must be non-empty UTF-8 without NUL bytes and without \".\" or \"..\" segments");
		return;
	}
	if (r->node.gateway) {
		int self;
		if (!r->node.cl) {
			s3_error(r, "ServiceUnavailable", "the gateway is starting");
		} else if (!s3_place(&r->node, r->bucket, x->key, url, sizeof(url), &self)) {
			if (!s3_bucket_exists(r))
				s3_error(r, "NoSuchBucket", NULL);
			else
				s3_error(r, "ServiceUnavailable", "no active target in the cluster");
		} else {
			s3_proxy_pre(r, url, 0, sv_of(&x->pre));
		}
		return;
	}
	if (r->node.cl) {
		r->where = arena_zalloc(req->arena, sizeof(*r->where));
		switch (ol_where(req, req->ctx, r->bucket, x->key, true, false, r->where)) {
		case OL_HERE:
			break;
		case OL_OWNER:
			s3_proxy_pre(r, r->where->owner_intra, r->where->hops + 1, sv_of(&x->pre));
			return;
		case OL_LOOP: {
			buf_t msg = BUF_INIT;
			ol_loop_msg(r->where, &msg);
			s3_error_status(r, 508, "LoopDetected", msg.ptr);
			buf_free(&msg);
			return;
		}
		default:
			if (!s3_bucket_exists(r))
				s3_error(r, "NoSuchBucket", NULL);
			else
				s3_error(r, "ServiceUnavailable", "no active target in the cluster");
			return;
		}
	}
	serve(r);
}

static int never(void *arg, const char *p, size_t n)
{
	(void)arg, (void)p, (void)n;
	return AIS_ERR;
}

/* The body until the file's content begins. */
static int fields_body(http_req_t *req, const char *p, size_t n)
{
	s3_rq_t *r = req->state;
	struct s3_post *x = r->post;
	size_t used;
	if (!p)
		return AIS_ERR; /* (never spliced: no on_room here) */
	buf_add(&x->pre, p, n);
	switch (s3_form_feed(&x->f, p, n, &used, never, NULL)) {
	case S3_FORM_MORE:
		return AIS_OK;
	case S3_FORM_FILE:
		x->file_at = x->pre.len - n + used;
		route(r);
		return AIS_OK;
	default:
		malformed(r, x->f.err);
		return AIS_ERR;
	}
}

static void fields_end(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct s3_post *x = r->post;
	/* (a form of fields without a file; bytes without a part are malformed) */
	if (s3_form_finish(&x->f) != AIS_OK && !x->f.file_seen && x->f.nfields) {
		s3_error(r, "InvalidArgument", "%s", x->f.err);
		return;
	}
	malformed(r, x->f.err);
}

int s3_post(s3_rq_t *r)
{
	http_req_t *req = r->http;
	struct s3_post *x = arena_zalloc(req->arena, sizeof(*x));
	r->post = x;
	arena_cleanup_add(req->arena, post_cleanup, x);
	if (s3_form_init(&x->f, req->arena, http_req_header(req, "Content-Type")) != AIS_OK) {
		malformed(r, x->f.err);
		return AIS_OK;
	}
	if (!req->has_body) {
		malformed(r, "the form has no body");
		return AIS_OK;
	}
	req->on_body = fields_body;
	req->on_body_end = fields_end;
	return AIS_OK;
}
