/*
 * corsop.c - S3 CORS served: ?cors on a bucket (Get/Put/DeleteBucketCors,
 * changed through the primary like the bucket's tags), the preflight
 * OPTIONS /bucket[/key], and the Access-Control-* headers of every other
 * answer to a request that carries Origin (cors.c parses and matches).
 *
 * Rules:
 *  1. The configuration lives in the BMD, beside the bucket's entry
 *     (bmd_doc BMD_DOC_CORS, canonical XML), so every node (gateway or
 *     target) answers a preflight and decorates an answer the same way,
 *     and only the buckets with CORS rules pay for them.
 *  2. The node that talks to the client adds the headers once, when the
 *     request arrives (s3_cors_actual, before any handler, so errors carry
 *     them too); a relayed answer's own Access-Control-* and Vary headers
 *     are dropped (proxy.c), so they are never doubled.
 *  3. A preflight needs no signature (browsers send none), as in S3; it
 *     reads the BMD only.
 *  4. A stored configuration that no longer parses is treated as none.
 *  5. Access-Control-Allow-Origin echoes the Origin, with
 *     Allow-Credentials, only for an origin a rule's AllowedOrigin names
 *     (exactly or by a pattern with one '*' in it, "*.example.com"); an origin
 *     let in by "*" alone gets "*" and no credentials, so a rule that
 *     lists "*" beside a trusted site never hands credentialed reads to
 *     every site.
 */
#include <string.h>

#include "aisd/bmd.h"
#include "aisd/cluster.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

/* --- the bucket's configuration -------------------------------------------------------- */

/* The bucket's configuration into c (none: c->n 0); AIS_ERR: no such
 * bucket. */
static int bucket_cors(s3_rq_t *r, s3_cors_t *c)
{
	const char *why;
	char *text = NULL;
	memset(c, 0, sizeof(*c));
	if (!r->node.cl)
		return s3_bucket_exists(r) ? AIS_OK : AIS_ERR; /* a standalone target keeps none */
	const bmd_t *b;
	cluster_read_lock(r->node.cl, NULL, &b);
	bool found = b && bmd_get(b, r->bucket.ptr, r->bucket.len);
	const char *doc = found ? bmd_doc(b, BMD_DOC_CORS, r->bucket.ptr, r->bucket.len) : NULL;
	if (doc)
		text = arena_strndup(r->http->arena, doc, strlen(doc));
	cluster_read_unlock(r->node.cl);
	if (!found)
		return AIS_ERR;
	if (text && s3_cors_parse(r->http->arena, text, strlen(text), c, &why) != AIS_OK)
		memset(c, 0, sizeof(*c)); /* rule 4 */
	return AIS_OK;
}

static void cors_body(s3_rq_t *r, buf_t *body)
{
	s3_cors_t *c = arena_alloc(r->http->arena, sizeof(*c));
	const char *why;
	buf_t x = BUF_INIT;
	if (s3_cors_parse(r->http->arena, body->ptr ? body->ptr : "", body->len, c, &why) != AIS_OK) {
		if (why)
			s3_error(r, "InvalidRequest", "%s", why);
		else
			s3_error(r, "MalformedXML", NULL);
		return;
	}
	s3_cors_xml(c, &x);
	if (x.len > BMD_S3CORS_MAX) {
		buf_free(&x);
		s3_error(r, "InvalidRequest", "The CORS configuration is over %d bytes in its canonical form",
			 BMD_S3CORS_MAX);
		return;
	}
	s3_bucket_set_doc(r, BMD_DOC_CORS, arena_strndup(r->http->arena, x.ptr, x.len), 200);
	buf_free(&x);
}

int s3_bucket_cors(s3_rq_t *r)
{
	s3_cors_t *c = arena_alloc(r->http->arena, sizeof(*c));
	buf_t b = BUF_INIT;
	if (bucket_cors(r, c) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	switch (r->http->method) {
	case HTTP_GET:
		if (!c->n) {
			s3_error(r, "NoSuchCORSConfiguration", "The CORS configuration does not exist");
			return AIS_OK;
		}
		buf_addstr(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
		s3_cors_xml(c, &b);
		s3_send_xml(r, 200, &b);
		return AIS_OK;
	case HTTP_PUT:
		s3_read_body(r, cors_body);
		return AIS_OK;
	case HTTP_DELETE:
		s3_bucket_set_doc(r, BMD_DOC_CORS, NULL, 204);
		return AIS_OK;
	default:
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
}

/* --- preflight and the headers of actual requests -------------------------------------- */

static void list_header(http_req_t *req, const char *name, const s3_cors_list_t *l)
{
	buf_t v = BUF_INIT;
	for (size_t i = 0; i < l->n; i++) {
		if (i)
			buf_addstr(&v, ", ");
		buf_addsv(&v, l->v[i]);
	}
	if (v.len)
		http_resp_header_sv(req, sv_from(name), sv_of(&v));
	buf_free(&v);
}

/* The headers of a matching rule u; req_headers: a preflight's
 * Access-Control-Request-Headers (NULL ptr for an actual request). */
static void rule_headers(http_req_t *req, const s3_cors_rule_t *u, sv_t origin, sv_t req_headers)
{
	/* an origin let in only by "*" is answered "*", without credentials,
	 * also when the rule names other origins beside it (rule 5) */
	if (s3_cors_origin_any(u, origin)) {
		http_resp_header_str(req, "Access-Control-Allow-Origin", "*");
	} else {
		http_resp_header_sv(req, SV("Access-Control-Allow-Origin"), origin);
		http_resp_header_str(req, "Access-Control-Allow-Credentials", "true");
	}
	list_header(req, "Access-Control-Allow-Methods", &u->methods);
	if (req_headers.len)
		http_resp_header_sv(req, SV("Access-Control-Allow-Headers"), req_headers);
	list_header(req, "Access-Control-Expose-Headers", &u->expose);
	if (u->max_age >= 0)
		http_resp_header_i64(req, "Access-Control-Max-Age", u->max_age);
	http_resp_header_str(req, "Vary",
			     req_headers.ptr ? "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"
					     : "Origin");
}

int s3_cors_preflight(s3_rq_t *r)
{
	http_req_t *req = r->http;
	sv_t origin = http_req_header(req, "Origin");
	sv_t method = http_req_header(req, "Access-Control-Request-Method");
	sv_t hdrs = http_req_header(req, "Access-Control-Request-Headers");
	s3_cors_t *c = arena_alloc(req->arena, sizeof(*c));

	if (!origin.ptr) {
		s3_error_status(r, 400, "BadRequest", "Insufficient information. Origin request header needed.");
		return AIS_OK;
	}
	if (!method.ptr || !method.len) {
		s3_error_status(r, 400, "BadRequest", "Invalid Access-Control-Request-Method: null");
		return AIS_OK;
	}
	if (!r->bucket.len) {
		s3_error(r, "AccessDenied", "CORSResponse: Bucket not found");
		return AIS_OK;
	}
	if (bucket_cors(r, c) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	if (!c->n) {
		s3_error(r, "AccessDenied", "CORSResponse: CORS is not enabled for this bucket.");
		return AIS_OK;
	}
	const s3_cors_rule_t *u = s3_cors_match(c, origin, method, hdrs.ptr ? hdrs : (sv_t){"", 0});
	if (!u) {
		s3_error(r, "AccessDenied", "CORSResponse: This CORS request is not allowed. This is usually because "
					    "the evalution of Origin, request method / Access-Control-Request-Method or "
					    "Access-Control-Request-Headers are not whitelisted by the resource's CORS "
					    "spec.");
		return AIS_OK;
	}
	rule_headers(req, u, origin, hdrs.ptr ? sv_trim(hdrs) : (sv_t){"", 0});
	s3_common_headers(r);
	http_resp_send(req, "", 0);
	return AIS_OK;
}

void s3_cors_actual(s3_rq_t *r)
{
	http_req_t *req = r->http;
	sv_t origin = http_req_header(req, "Origin");
	s3_cors_t *c;
	if (!origin.ptr || !r->bucket.len)
		return;
	c = arena_alloc(req->arena, sizeof(*c));
	if (bucket_cors(r, c) != AIS_OK || !c->n)
		return;
	/* the method a rule must allow: the request's, or the one it names in
	 * Access-Control-Request-Method (as Ceph's RGW and s3-tests have it;
	 * browsers send that header on preflights only) */
	sv_t method = http_req_header(req, "Access-Control-Request-Method");
	if (!method.len)
		method = sv_from(http_method_name(req->method));
	const s3_cors_rule_t *u = s3_cors_match(c, origin, method, (sv_t){"", 0});
	if (u)
		rule_headers(req, u, origin, (sv_t){NULL, 0});
}
