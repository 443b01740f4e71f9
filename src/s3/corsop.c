/*
 * corsop.c - S3 CORS served: ?cors on a bucket (Get/Put/DeleteBucketCors,
 * by docop.c with this file's row, s3_cors_ops), the preflight
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

/* --- the bucket's configuration (docop.c serves ?cors) ---------------------------------- */

static int cors_load(arena_t *a, const char *text, size_t n, void *c)
{
	const char *why;
	return s3_cors_parse(a, text, n, c, &why);
}

static int cors_parse(s3_rq_t *r, const char *p, size_t n, void *c, const char **code, const char **why)
{
	if (s3_cors_parse(r->http->arena, p, n, c, why) == AIS_OK)
		return AIS_OK;
	if (*why)
		*code = "InvalidRequest";
	return AIS_ERR;
}

static void cors_answer(const void *c, buf_t *b)
{
	buf_addstr(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	s3_cors_xml(c, b);
}

static void cors_canonical(const void *c, buf_t *b) { s3_cors_xml(c, b); }
static bool cors_none(const void *c) { return !((const s3_cors_t *)c)->n; }

const s3_doc_ops_t s3_cors_ops = {
	.kind = BMD_DOC_CORS,
	.size = sizeof(s3_cors_t),
	.none_code = "NoSuchCORSConfiguration",
	.none_msg = "The CORS configuration does not exist",
	.load = cors_load,
	.parse = cors_parse,
	.canonical = cors_canonical,
	.answer = cors_answer,
	.none = cors_none,
};

/* The bucket's rules into c (none: c->n 0); AIS_ERR: no such bucket. */
static int bucket_cors(s3_rq_t *r, s3_cors_t *c) { return s3_doc_of_bucket(r, &s3_cors_ops, c); }

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
