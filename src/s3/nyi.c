/*
 * nyi.c - what the S3 API has and aisd does not (yet), in two tables the
 * dispatcher (s3_serve) checks once, after authorization and before any
 * handler runs: the sub-resources (?versioning, ?policy, ...) by scope and
 * method, and the request headers that ask for a feature (encryption,
 * object lock, storage classes, ...), with the operations that do serve
 * some of them (served_by: x-amz-tagging on PutObject, conditional
 * writes on PutObject and CompleteMultipartUpload, server-side encryption
 * on PutObject, CopyObject (and its source), multipart uploads, GetObject
 * and HeadObject (sse.c), the object lock headers
 * on PutObject, CopyObject, CreateMultipartUpload and CreateBucket
 * (objlock.c), ...).
 *
 * Guarantee: a request that asks for something aisd does not do is never
 * answered 2xx with the request's point ignored. It is answered either
 *   - 501 NotImplemented, naming the header or sub-resource (S3's answer
 *     for unsupported functionality); nothing was read, written or
 *     changed; or
 *   - what S3 answers for a bucket or object without that configuration,
 *     when that is the truth here: DELETE ?website 204 because there is no
 *     website configuration to delete.
 * Sub-resources aisd implements are listed too (PASS), so that the table
 * is the inventory: a method a row does not name is refused, so DELETE
 * /bucket?versioning can never fall through to DeleteBucket.
 */
#include <string.h>
#include <strings.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

/* What a cell answers. NYI is 0, so a method a row leaves out is refused. */
enum act {
	NYI = 0, /* 501 NotImplemented */
	PASS,    /* implemented: the handlers serve it */
	ABSENT,  /* not configured: error code a, message b */
	DOC,     /* not configured: 200 with the document <a>b</a> */
	NONE,    /* nothing to delete: 204 */
};

typedef struct cell {
	enum act act;
	const char *a, *b;
} cell_t;

enum { ON_BUCKET = 1, ON_OBJECT = 2 };

#define SUB(n, s, w) .name = (n), .scope = (s), .what = (w)
#define C(x) {.act = (x)}
#define CA(x, code_or_root, text) {.act = (x), .a = (code_or_root), .b = (text)}

/* One sub-resource at one scope: its answer per method (HEAD as GET).
 * pass_value: a value that is served as if the parameter were absent
 * ("versionId=null" on a method the row refuses).
 * pass_with: sub-resources whose handlers serve this one, on any method
 * (?retention&versionId=ID: objlock.c; ?acl, ?tagging: versions.c). */
static const struct subres {
	const char *name;
	unsigned scope;
	const char *what; /* the feature, for the 501 message */
	cell_t get, put, post, del;
	const char *pass_value;
	const char *pass_with[4]; /* sub-resources whose handlers serve this one on any method */
} subres[] = {
	/* implemented */
	{SUB("acl", ON_BUCKET | ON_OBJECT, "ACLs"), .get = C(PASS), .put = C(PASS)},
	{SUB("logging", ON_BUCKET, "bucket logging"), .get = C(PASS), .put = C(PASS), .post = C(PASS)},
	{SUB("uploads", ON_BUCKET, "ListMultipartUploads"), .get = C(PASS)},
	{SUB("uploads", ON_OBJECT, "CreateMultipartUpload"), .post = C(PASS)},
	{SUB("uploadId", ON_OBJECT, "multipart uploads"), .get = C(PASS), .put = C(PASS), .post = C(PASS),
	 .del = C(PASS)},
	{SUB("partNumber", ON_OBJECT, "reading one part of an object (partNumber)"), .get = C(PASS), .put = C(PASS)},
	{SUB("delete", ON_BUCKET, "DeleteObjects"), .post = C(PASS)},
	{SUB("location", ON_BUCKET, "GetBucketLocation"), .get = C(PASS)},
	{SUB("versions", ON_BUCKET, "ListObjectVersions"), .get = C(PASS)},
	{SUB("versionId", ON_OBJECT, "versionId on this operation"), .get = C(PASS), .del = C(PASS),
	 .pass_value = "null", .pass_with = {"retention", "legal-hold", "acl", "tagging"}},
	{SUB("tagging", ON_OBJECT, "object tagging"), .get = C(PASS), .put = C(PASS), .del = C(PASS)},
	{SUB("tagging", ON_BUCKET, "bucket tagging"), .get = C(PASS), .put = C(PASS), .del = C(PASS)},
	{SUB("policy", ON_BUCKET, "bucket policies"), .get = C(PASS), .put = C(PASS), .del = C(PASS)},
	{SUB("policyStatus", ON_BUCKET, "bucket policies"), .get = C(PASS)},
	{SUB("publicAccessBlock", ON_BUCKET, "public access blocks"), .get = C(PASS), .put = C(PASS),
	 .del = C(PASS)},
	{SUB("cors", ON_BUCKET, "CORS"), .get = C(PASS), .put = C(PASS), .del = C(PASS)},
	{SUB("encryption", ON_BUCKET, "default encryption"), .get = C(PASS), .put = C(PASS), .del = C(PASS)},
	{SUB("ownershipControls", ON_BUCKET, "ownership controls"), .get = C(PASS), .put = C(PASS), .del = C(PASS)},
	/* configurations no bucket has: GET answers so, PUT is refused */
	{SUB("versioning", ON_BUCKET, "versioning"), .get = C(PASS), .put = C(PASS)},
	{SUB("lifecycle", ON_BUCKET, "lifecycle"), .get = C(PASS), .put = C(PASS), .del = C(PASS)},
	{SUB("object-lock", ON_BUCKET, "object lock"), .get = C(PASS), .put = C(PASS)},
	{SUB("website", ON_BUCKET, "static websites"),
	 .get = CA(ABSENT, "NoSuchWebsiteConfiguration", "The specified bucket does not have a website configuration"),
	 .del = C(NONE)},
	{SUB("replication", ON_BUCKET, "bucket replication"),
	 .get = CA(ABSENT, "ReplicationConfigurationNotFoundError", "The replication configuration was not found"),
	 .del = C(NONE)},
	{SUB("notification", ON_BUCKET, "event notifications"), .get = CA(DOC, "NotificationConfiguration", "")},
	{SUB("accelerate", ON_BUCKET, "transfer acceleration"), .get = CA(DOC, "AccelerateConfiguration", "")},
	{SUB("requestPayment", ON_BUCKET, "requester pays"),
	 .get = CA(DOC, "RequestPaymentConfiguration", "<Payer>BucketOwner</Payer>")},
	{SUB("retention", ON_OBJECT, "object lock (retention)"), .get = C(PASS), .put = C(PASS)},
	{SUB("legal-hold", ON_OBJECT, "object lock (legal hold)"), .get = C(PASS), .put = C(PASS)},
	/* not implemented at all */
	{SUB("analytics", ON_BUCKET, "analytics configurations")},
	{SUB("inventory", ON_BUCKET, "inventory configurations")},
	{SUB("metrics", ON_BUCKET, "metrics configurations")},
	{SUB("intelligent-tiering", ON_BUCKET, "intelligent tiering")},
	{SUB("metadataTable", ON_BUCKET, "metadata tables")},
	{SUB("metadataConfiguration", ON_BUCKET, "metadata tables")},
	{SUB("session", ON_BUCKET, "CreateSession (directory buckets)")},
	{SUB("restore", ON_OBJECT, "restoring archived objects")},
	{SUB("select", ON_OBJECT, "S3 Select")},
	{SUB("torrent", ON_OBJECT, "BitTorrent")},
	{SUB("attributes", ON_OBJECT, "GetObjectAttributes"), .get = C(PASS)},
	{SUB("renameObject", ON_OBJECT, "RenameObject")},
};

/* How a header's value asks for the feature. */
enum when {
	ANY,       /* any value, even empty */
	NONEMPTY,  /* a value that is not empty */
	IS_TRUE,   /* "true" (any case) */
	NOT_VALUE, /* a value other than arg (any case) */
	IS_VALUE,  /* arg (any case) */
};

/* The operations that serve a header the table names: PutObject (a PUT
 * that is no copy and no part), CompleteMultipartUpload, CopyObject,
 * CreateMultipartUpload. */
static bool is_put_object(http_req_t *q)
{
	return q->method == HTTP_PUT && !s3_query_has(q, "uploadId") && !http_req_header(q, "x-amz-copy-source").ptr;
}
static bool is_copy(http_req_t *q)
{
	return q->method == HTTP_PUT && !s3_query_has(q, "uploadId") && http_req_header(q, "x-amz-copy-source").ptr;
}
static bool is_complete(http_req_t *q) { return q->method == HTTP_POST && s3_query_has(q, "uploadId"); }
static bool is_create(http_req_t *q) { return q->method == HTTP_POST && s3_query_has(q, "uploads"); }
static bool tags_served(http_req_t *q) { return is_put_object(q) || is_copy(q) || is_create(q); }
/* The object lock headers of a new version (objlock.c), and CreateBucket's. */
static bool lock_served(http_req_t *q) { return is_put_object(q) || is_copy(q) || is_create(q); }
static bool is_create_bucket(http_req_t *q) { return q->method == HTTP_PUT && !q->query.len; }
static bool cond_served(http_req_t *q) { return is_put_object(q) || is_complete(q); }
static bool is_read(http_req_t *q)
{
	return (q->method == HTTP_GET || q->method == HTTP_HEAD) && !s3_query_has(q, "uploadId");
}
/* UploadPart and UploadPartCopy. */
static bool is_part(http_req_t *q) { return q->method == HTTP_PUT && s3_query_has(q, "uploadId"); }
/* SSE-C keys on PutObject, CopyObject (the copy's), GetObject/HeadObject,
 * CreateMultipartUpload, UploadPart(Copy) and CompleteMultipartUpload
 * (sse.c); the SSE-S3 and SSE-KMS request headers on PutObject,
 * CopyObject and CreateMultipartUpload, and refused by the others with
 * S3's 400 InvalidArgument (sse.c). */
static bool ssec_served(http_req_t *q)
{
	return is_put_object(q) || is_copy(q) || is_read(q) || is_create(q) || is_part(q) || is_complete(q);
}
/* The source's SSE-C key of CopyObject and UploadPartCopy (copy.c). */
static bool ssec_source_served(http_req_t *q)
{
	return q->method == HTTP_PUT && http_req_header(q, "x-amz-copy-source").ptr;
}

/* Headers of hdr_rules that some operations do serve (the rule does not
 * apply to them). */
static const struct {
	const char *name;
	bool (*served)(http_req_t *q);
	unsigned scope; /* where it is served (0: wherever the rule applies) */
} served_by[] = {
	{"x-amz-tagging", tags_served, 0},
	{"x-amz-object-lock-", lock_served, ON_OBJECT},
	{"x-amz-bucket-object-lock-enabled", is_create_bucket, ON_BUCKET},
	{"If-Match", cond_served, 0},
	{"If-None-Match", cond_served, 0},
	{"x-amz-server-side-encryption-customer-", ssec_served, ON_OBJECT},
	{"x-amz-copy-source-server-side-encryption-customer-", ssec_source_served, ON_OBJECT},
	{"x-amz-server-side-encryption", ssec_served, ON_OBJECT}, /* a read refuses it: 400 (sse.c) */
	{"x-amz-server-side-encryption-", ssec_served, ON_OBJECT}, /* a read refuses all but -customer-* */
};

static bool served(const char *name, http_req_t *q, unsigned scope)
{
	for (size_t i = 0; i < ARRAY_SIZE(served_by); i++)
		if (!strcmp(served_by[i].name, name))
			return (!served_by[i].scope || (served_by[i].scope & scope)) && served_by[i].served(q);
	return false;
}

/* Request headers that ask for a feature aisd does not have. A name
 * ending in '-' is a prefix. methods: bits of (1 << HTTP_x), 0 for any;
 * scope: ON_BUCKET / ON_OBJECT. The first row that matches answers,
 * unless the operation serves the header (served_by). */
#define M(x) (1u << (x))
static const struct hdr_rule {
	const char *name;
	enum when when;
	const char *arg;
	unsigned methods, scope;
	const char *what;
} hdr_rules[] = {
	{"x-amz-server-side-encryption-customer-", ANY, NULL, 0, ON_BUCKET | ON_OBJECT,
	 "server-side encryption with customer keys (SSE-C)"},
	{"x-amz-copy-source-server-side-encryption-customer-", ANY, NULL, 0, ON_BUCKET | ON_OBJECT,
	 "server-side encryption with customer keys (SSE-C)"},
	{"x-amz-server-side-encryption", ANY, NULL, 0, ON_BUCKET | ON_OBJECT, "server-side encryption (SSE-S3, SSE-KMS)"},
	{"x-amz-server-side-encryption-", ANY, NULL, 0, ON_BUCKET | ON_OBJECT, "server-side encryption (SSE-S3, SSE-KMS)"},
	{"x-amz-object-lock-", ANY, NULL, 0, ON_BUCKET | ON_OBJECT, "object lock"},
	{"x-amz-bucket-object-lock-enabled", IS_TRUE, NULL, 0, ON_BUCKET, "object lock"},
	{"x-amz-tagging", NONEMPTY, NULL, 0, ON_OBJECT, "object tagging (other than on PutObject, CopyObject and "
	 "CreateMultipartUpload)"},
	{"x-amz-website-redirect-location", ANY, NULL, 0, ON_OBJECT, "website redirects"},
	{"x-amz-storage-class", NOT_VALUE, "STANDARD", 0, ON_OBJECT, "storage classes other than STANDARD"},
	{"x-amz-expected-bucket-owner", ANY, NULL, 0, ON_BUCKET | ON_OBJECT, "bucket owner conditions"},
	{"x-amz-source-expected-bucket-owner", ANY, NULL, 0, ON_BUCKET | ON_OBJECT, "bucket owner conditions"},
	{"x-amz-mfa", ANY, NULL, 0, ON_BUCKET | ON_OBJECT, "MFA delete"},
	{"If-Match", ANY, NULL, M(HTTP_PUT) | M(HTTP_POST) | M(HTTP_DELETE), ON_OBJECT,
	 "conditional writes (other than on PutObject and CompleteMultipartUpload)"},
	{"If-None-Match", ANY, NULL, M(HTTP_PUT) | M(HTTP_POST) | M(HTTP_DELETE), ON_OBJECT,
	 "conditional writes (other than on PutObject and CompleteMultipartUpload)"},
	{"x-amz-if-match-", ANY, NULL, 0, ON_OBJECT, "conditional deletes"},
	{"x-amz-write-offset-bytes", ANY, NULL, 0, ON_OBJECT, "appends"},
};

static bool rule_matches(const struct hdr_rule *h, const http_hdr_t *x)
{
	size_t n = strlen(h->name);
	bool prefix = h->name[n - 1] == '-';
	if (prefix ? x->name.len <= n || strncasecmp(x->name.ptr, h->name, n)
		   : x->name.len != n || strncasecmp(x->name.ptr, h->name, n))
		return false;
	sv_t v = sv_trim(x->value);
	switch (h->when) {
	case NONEMPTY:
		return v.len > 0;
	case IS_TRUE:
		return sv_eqcase(v, SV("true"));
	case NOT_VALUE:
		return !sv_eqcase(v, sv_from(h->arg));
	case IS_VALUE:
		return sv_eqcase(v, sv_from(h->arg));
	case ANY:
	default:
		return true;
	}
}

/* Is a sub-resource of this name known at scope? */
static bool known_at(const char *name, unsigned scope)
{
	for (size_t k = 0; k < ARRAY_SIZE(subres); k++)
		if ((subres[k].scope & scope) && !strcmp(subres[k].name, name))
			return true;
	return false;
}

static const cell_t *cell_of(const struct subres *s, enum http_method m)
{
	static const cell_t refuse = {NYI, NULL, NULL};
	switch (m) {
	case HTTP_GET:
	case HTTP_HEAD:
		return &s->get;
	case HTTP_PUT:
		return &s->put;
	case HTTP_POST:
		return &s->post;
	case HTTP_DELETE:
		return &s->del;
	default:
		return &refuse;
	}
}

/* Is one of s's pass_with sub-resources in the request? */
static bool passed_with(http_req_t *req, const struct subres *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(s->pass_with) && s->pass_with[i]; i++)
		if (s3_query_has(req, s->pass_with[i]))
			return true;
	return false;
}

/* Answers a cell other than PASS. */
static void answer(s3_rq_t *r, const struct subres *s, const cell_t *c)
{
	buf_t b = BUF_INIT;
	if (c->act == NYI) {
		s3_error(r, "NotImplemented", "%s ?%s is not implemented (%s)", http_method_name(r->http->method),
			 s->name, s->what);
		return;
	}
	if (!s3_bucket_exists(r)) {
		s3_error(r, "NoSuchBucket", NULL);
		return;
	}
	switch (c->act) {
	case ABSENT:
		s3_error(r, c->a, "%s", c->b);
		return;
	case DOC:
		s3_xml_head(&b, c->a);
		buf_addstr(&b, c->b);
		s3_xml_close(&b, c->a);
		s3_send_xml(r, 200, &b);
		return;
	case NONE:
	default:
		s3_common_headers(r);
		http_resp_status(r->http, 204);
		http_resp_send(r->http, "", 0);
		return;
	}
}

bool s3_nyi_answered(s3_rq_t *r)
{
	http_req_t *req = r->http;
	unsigned scope = r->key.len ? ON_OBJECT : ON_BUCKET;
	enum http_method m = req->method;

	if (!r->bucket.len)
		return false; /* ListBuckets' parameters are its own */
	for (size_t i = 0; i < req->nhdrs; i++) {
		for (size_t k = 0; k < ARRAY_SIZE(hdr_rules); k++) {
			const struct hdr_rule *h = &hdr_rules[k];
			if (!(h->scope & scope) || (h->methods && !(h->methods & M(m))))
				continue;
			if (rule_matches(h, &req->hdrs[i]) && !served(h->name, req, scope)) {
				s3_error(r, "NotImplemented", "%.*s: %s is not implemented", (int)MIN(req->hdrs[i].name.len, 128),
					 req->hdrs[i].name.ptr, h->what);
				return true;
			}
		}
	}
	for (size_t k = 0; k < ARRAY_SIZE(subres); k++) {
		const struct subres *s = &subres[k];
		sv_t v;
		if (!http_query_get(req, s->name, &v))
			continue;
		if (!(s->scope & scope)) {
			if (known_at(s->name, scope))
				continue;
			s3_error(r, "NotImplemented", "%s ?%s on %s is not implemented (%s)", http_method_name(m),
				 s->name, scope == ON_OBJECT ? "an object" : "a bucket", s->what);
			return true;
		}
		if (s->pass_value && sv_eqstr(v, s->pass_value))
			continue;
		if (passed_with(req, s))
			continue;
		const cell_t *c = cell_of(s, m);
		if (c->act == PASS)
			continue;
		answer(r, s, c);
		return true;
	}
	return false;
}
