/*
 * s3.c - the S3 entry point of both roles: addressing (path-style at the
 * root and under "/s3/", virtual-hosted with s3.domain), the operation from
 * method, key and sub-resource, and where it runs:
 *   - service and bucket operations run on the node addressed (BMD,
 *     primary, fan-out), on a gateway and a target alike;
 *   - object operations run where the object layer places them (ol.h: the
 *     owner for writes and multipart, any holder of a copy for reads): a
 *     gateway, or a target that does not serve the key, forwards the
 *     request unchanged as a stream (proxy.c), never a redirect, with a
 *     hop count that stops a loop between targets whose maps disagree.
 * Paths under "/v1" that no native route took are answered with the
 * native 404, so "v1" (and "s3") are never S3 bucket names.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>

#include "aisd/authz.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "s3log.h"
#include "aisd/banned.h"

s3_authcfg_t s3_cfg;
static pthread_mutex_t cfg_mu = PTHREAD_MUTEX_INITIALIZER;
static bool cfg_done;

int s3_init(const conf_t *c, buf_t *err)
{
	int rc = AIS_OK;
	pthread_mutex_lock(&cfg_mu);
	if (!cfg_done) {
		rc = s3_authcfg_init(&s3_cfg, c, err);
		cfg_done = rc == AIS_OK;
		s3_log_init(c);
	}
	pthread_mutex_unlock(&cfg_mu);
	return rc;
}

s3_body_t *s3_body_for(s3_rq_t *r)
{
	s3_autherr_t e;
	/* (a browser POST's file is a part of the body: its length is known at the end) */
	int64_t clen = r->post ? -1 : r->http->content_length;
	s3_body_t *b = s3_body_new(r->http->arena, &r->auth, &r->areq, clen, &e);
	if (!b)
		s3_error_auth(r, &e);
	return b;
}

void s3_node_of(http_req_t *req, bool gateway, s3_node_t *nd)
{
	node_base_t *b = req->ctx; /* the first member of a gateway_t and a target_t */
	memset(nd, 0, sizeof(*nd));
	nd->gateway = gateway;
	nd->conf = b->conf;
	nd->store = b->store; /* NULL on a gateway */
	nd->cl = __atomic_load_n(&b->cl, __ATOMIC_ACQUIRE);
}

bool s3_query_has(http_req_t *req, const char *key)
{
	sv_t v;
	return http_query_get(req, key, &v);
}

sv_t s3_query_str(http_req_t *req, const char *key)
{
	sv_t v;
	return http_query_get(req, key, &v) ? v : (sv_t){"", 0};
}

void s3_token_xml(buf_t *b, const char *elem, sv_t last)
{
	unsigned char *tok = xmalloc(4 * (last.len / 3 + 1) + 1);
	int tl = EVP_EncodeBlock(tok, (const unsigned char *)last.ptr, (int)last.len);
	s3_xml_elem(b, elem, (char *)tok, (size_t)tl);
	free(tok);
}

int s3_token_decode(http_req_t *req, sv_t tok, sv_t *out)
{
	unsigned char *raw = arena_alloc(req->arena, tok.len + 4);
	int n = EVP_DecodeBlock(raw, (const unsigned char *)tok.ptr, (int)tok.len);
	if (n < 0)
		return AIS_ERR;
	/* EVP_DecodeBlock counts the padding's zero bytes */
	for (size_t i = tok.len; i > 0 && tok.ptr[i - 1] == '='; i--)
		n--;
	*out = (sv_t){(char *)raw, (size_t)(n < 0 ? 0 : n)};
	return AIS_OK;
}

void s3_time_iso(int64_t ns, char *out, size_t outsz)
{
	time_t s = (time_t)(ns / 1000000000LL);
	struct tm tm;
	gmtime_r(&s, &tm);
	snprintf(out, outsz, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ns / 1000000 % 1000));
}

/* --- small XML bodies --------------------------------------------------------- */

/* An XML body is held in memory until its end, so it counts in the
 * server's budget of buffered bodies (net.max_buffered_body) like a JSON
 * one: its Content-Length is taken before it is read, a chunked one's
 * bytes as they come; past the budget the request gets 503 (Retry-After)
 * and holds nothing. */
struct body_st {
	s3_rq_t *r;
	buf_t b;
	uint64_t reserved; /* of the server's budget, for this body */
	bool too_big, busy, failed;
	s3_body_t *dec;
	s3_body_fn done;
};

static bool body_reserve(struct body_st *st, uint64_t n)
{
	if (!http_req_buffer_take(st->r->http, n))
		return false;
	st->reserved += n;
	return true;
}

static void body_busy(s3_rq_t *r)
{
	http_resp_header(r->http, "Retry-After", "1");
	s3_error(r, "ServiceUnavailable",
		 "too many request bodies buffered on this node (net.max_buffered_body is %llu bytes): try again",
		 (unsigned long long)http_req_buffer_max(r->http));
}

static int body_emit(void *arg, const char *p, size_t n)
{
	struct body_st *st = arg;
	if (st->too_big || st->busy)
		return AIS_OK;
	if (st->b.len + n > S3_XML_BODY_MAX)
		st->too_big = true;
	else if (st->b.len + n > st->reserved && !body_reserve(st, st->b.len + n - st->reserved))
		st->busy = true;
	else
		buf_add(&st->b, p, n);
	return AIS_OK;
}

static void body_cleanup(void *arg) { buf_free(&((struct body_st *)arg)->b); }

static int body_chunk(http_req_t *req, const char *p, size_t n)
{
	struct body_st *st = req->state;
	s3_autherr_t e;
	if (st->failed)
		return AIS_ERR;
	if (s3_body_feed(st->dec, p, n, body_emit, st, &e) != AIS_OK) {
		st->failed = true;
		req->state = st->r;
		s3_error_auth(st->r, &e);
		return AIS_ERR;
	}
	if (st->busy) { /* answered now: the rest of the body is not kept */
		st->failed = true;
		buf_free(&st->b);
		req->state = st->r;
		body_busy(st->r);
		return AIS_ERR;
	}
	return AIS_OK;
}

static void body_end(http_req_t *req)
{
	struct body_st *st = req->state;
	s3_autherr_t e;
	req->state = st->r;
	if (st->failed)
		return;
	if (s3_body_finish(st->dec, &e) != AIS_OK) {
		s3_error_auth(st->r, &e);
		return;
	}
	if (st->too_big) {
		s3_error(st->r, "MalformedXML", "request body over %u bytes", S3_XML_BODY_MAX);
		return;
	}
	st->done(st->r, &st->b);
}

void s3_read_body(s3_rq_t *r, s3_body_fn done)
{
	http_req_t *req = r->http;
	struct body_st *st = arena_zalloc(req->arena, sizeof(*st));
	st->r = r;
	st->done = done;
	arena_cleanup_add(req->arena, body_cleanup, st);
	if (!(st->dec = s3_body_for(r)))
		return;
	if (!req->has_body) {
		s3_autherr_t e;
		if (s3_body_finish(st->dec, &e) != AIS_OK)
			s3_error_auth(r, &e);
		else
			done(r, &st->b);
		return;
	}
	if (req->content_length > (int64_t)S3_XML_BODY_MAX) {
		s3_error(r, "MalformedXML", "request body over %u bytes", S3_XML_BODY_MAX);
		return;
	}
	if (req->content_length > (int64_t)http_req_buffer_max(req)) {
		s3_error(r, "EntityTooLarge", "request body over net.max_buffered_body (%llu bytes)",
			 (unsigned long long)http_req_buffer_max(req));
		return;
	}
	if (req->content_length > 0 && !body_reserve(st, (uint64_t)req->content_length)) {
		body_busy(r);
		return;
	}
	req->state = st;
	req->on_body = body_chunk;
	req->on_body_end = body_end;
}

/* --- addressing --------------------------------------------------------------- */

/* Splits the request into bucket and key. Returns AIS_OK, or AIS_ERR after
 * answering. */
static int parse_addr(s3_rq_t *r)
{
	http_req_t *req = r->http;
	sv_t path = req->path, host = http_req_header(req, "Host");
	sv_t rb = {"", 0}, rk = {"", 0};
	const char *dom = r->node.conf->s3_domain;
	size_t dl = strlen(dom);

	if (sv_startswith(path, "/s3/") || sv_eqstr(path, "/s3"))
		path = (sv_t){path.ptr + 3, path.len - 3};
	if (path.len == 0)
		path = SV("/");
	if (dl && host.ptr) {
		const char *colon = memchr(host.ptr, ':', host.len);
		sv_t h = {host.ptr, colon ? (size_t)(colon - host.ptr) : host.len};
		if (h.len > dl + 1 && h.ptr[h.len - dl - 1] == '.' && !strncasecmp(h.ptr + h.len - dl, dom, dl)) {
			rb = r->vhost = (sv_t){h.ptr, h.len - dl - 1};
			rk = (sv_t){path.ptr + 1, path.len - 1};
			goto decode;
		}
	}
	{
		sv_t p = {path.ptr + 1, path.len - 1};
		const char *slash = memchr(p.ptr, '/', p.len);
		rb = (sv_t){p.ptr, slash ? (size_t)(slash - p.ptr) : p.len};
		rk = slash ? (sv_t){slash + 1, p.len - rb.len - 1} : (sv_t){"", 0};
	}
decode:
	if (http_pct_decode(req->arena, rb, false, &r->bucket) != AIS_OK ||
	    http_pct_decode(req->arena, rk, false, &r->key) != AIS_OK) {
		s3_error(r, "InvalidURI", "malformed percent-encoding");
		return AIS_ERR;
	}
	r->resource = (sv_t){arena_printf(req->arena, "/%.*s%s%.*s", (int)r->bucket.len, r->bucket.ptr,
					  r->key.len ? "/" : "", (int)r->key.len, r->key.ptr), 0};
	r->resource.len = strlen(r->resource.ptr);
	if (r->bucket.len && !name_bucket_valid(r->bucket.ptr, r->bucket.len)) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_ERR;
	}
	if (r->key.len && !name_object_valid(r->key.ptr, r->key.len)) {
		if (r->key.len > NAME_OBJECT_MAX)
			s3_error(r, "KeyTooLongError", NULL);
		else
			s3_error(r, "InvalidArgument", "the key must be UTF-8 without NUL bytes and without \".\" or \"..\" segments");
		return AIS_ERR;
	}
	return AIS_OK;
}

static int not_implemented(s3_rq_t *r, const char *what)
{
	s3_error(r, "NotImplemented", "%s is not implemented", what);
	return AIS_OK;
}

static int method_not_allowed(s3_rq_t *r)
{
	s3_error(r, "MethodNotAllowed", NULL);
	return AIS_OK;
}

/* The user of key k: with none (anonymous with s3.auth off) the first
 * configured key's user, else "aisd". */
static void user_of_key(const s3_key_t *k, const char **id, const char **name)
{
	if (!k && s3_cfg.keys && s3_keys_count(s3_cfg.keys))
		k = s3_keys_at(s3_cfg.keys, 0);
	*id = k && k->user_id ? k->user_id : "aisd";
	*name = k && k->display_name ? k->display_name : *id;
}

static void user_xml(buf_t *b, const char *tag, const char *id, const char *name)
{
	s3_xml_open(b, tag);
	s3_xml_elemstr(b, "ID", id);
	s3_xml_elemstr(b, "DisplayName", name);
	s3_xml_close(b, tag);
}

void s3_owner_xml(const s3_rq_t *r, buf_t *b, const char *tag)
{
	const char *id, *name;
	user_of_key(r->auth.key, &id, &name);
	user_xml(b, tag, id, name);
}

void s3_user_xml(buf_t *b, const char *tag, const char *uid)
{
	const char *id = uid, *name;
	if (uid && *uid)
		name = s3_user_name(uid) ? s3_user_name(uid) : uid;
	else
		user_of_key(NULL, &id, &name);
	user_xml(b, tag, id, name);
}

/* ?acl on a bucket or an object: GET and PUT (aclop.c). */
static int acl_op(s3_rq_t *r)
{
	enum http_method m = r->http->method;
	if (m == HTTP_GET)
		return s3_acl_get(r);
	if (m == HTTP_PUT)
		return s3_acl_put(r);
	return method_not_allowed(r);
}

/* An operation on an object that runs where the object lives. */
static int object_op(s3_rq_t *r)
{
	http_req_t *req = r->http;
	sv_t v;

	if (s3_query_has(req, "retention")) /* objlock.c: versionId too */
		return s3_object_retention(r);
	if (s3_query_has(req, "legal-hold"))
		return s3_object_legal_hold(r);
	if (s3_query_has(req, "acl")) /* ?acl and ?tagging: versionId too (versions.c) */
		return acl_op(r);
	if (s3_query_has(req, "tagging"))
		return req->method == HTTP_HEAD ? method_not_allowed(r) : s3_object_tagging(r);
	if (http_query_get(req, "versionId", &v) && !sv_eqstr(v, "null") && s3_query_has(req, "uploadId"))
		return not_implemented(r, "versionId with ?uploadId");
	if (req->method == HTTP_GET || req->method == HTTP_HEAD) {
		if (s3_query_has(req, "attributes"))
			return req->method == HTTP_GET ? s3_object_attributes(r) : method_not_allowed(r);
		if (req->method == HTTP_GET && http_query_get(req, "uploadId", &v))
			return s3_multipart(r, v);
		return s3_object(r);
	}
	switch (req->method) {
	case HTTP_PUT:
		if (http_query_get(req, "uploadId", &v))
			return s3_multipart(r, v);
		if (http_req_header(req, "x-amz-copy-source").ptr)
			return s3_copy_object(r, http_req_header(req, "x-amz-copy-source"));
		return s3_object(r);
	case HTTP_POST:
		if (s3_query_has(req, "uploads"))
			return s3_mpu_create(r);
		if (http_query_get(req, "uploadId", &v))
			return s3_multipart(r, v);
		return method_not_allowed(r);
	case HTTP_DELETE:
		if (http_query_get(req, "uploadId", &v))
			return s3_multipart(r, v);
		return s3_object(r);
	default:
		return method_not_allowed(r);
	}
}

static int bucket_op(s3_rq_t *r)
{
	http_req_t *req = r->http;
	if (s3_query_has(req, "acl"))
		return acl_op(r);
	if (s3_query_has(req, "tagging"))
		return s3_bucket_tagging(r);
	if (s3_query_has(req, "versioning"))
		return s3_versioning(r);
	if (s3_query_has(req, "object-lock"))
		return s3_bucket_lock(r);
	if (s3_query_has(req, "policy"))
		return s3_bucket_policy(r);
	if (s3_query_has(req, "policyStatus"))
		return s3_bucket_policy_status(r);
	if (s3_query_has(req, "publicAccessBlock"))
		return s3_bucket_pab(r);
	if (s3_query_has(req, "cors"))
		return s3_doc_serve(r, &s3_cors_ops);
	if (s3_query_has(req, "lifecycle"))
		return s3_doc_serve(r, &s3_lc_ops);
	if (s3_query_has(req, "logging"))
		return s3_bucket_logging(r);
	if (s3_query_has(req, "encryption"))
		return s3_doc_serve(r, &s3_ssecfg_ops);
	if (s3_query_has(req, "ownershipControls"))
		return s3_doc_serve(r, &s3_own_ops);
	if (req->method == HTTP_POST) {
		if (s3_query_has(req, "delete"))
			return s3_delete_objects(r);
		return not_implemented(r, "POST Object without a multipart/form-data body");
	}
	return s3_bucket(r);
}

/* SigV4 or SigV2 (s3auth.h). An anonymous request goes on to authorize (ACLs). */
static int authenticate(s3_rq_t *r)
{
	s3_autherr_t e;
	s3_req_from_http(r->http, &r->areq);
	r->areq.vhost_bucket = r->vhost;
	if (s3_auth_verify(&s3_cfg, &r->areq, time_now_ns() / 1000000000LL, &r->auth, &e) != AIS_OK) {
		s3_error_auth(r, &e);
		return AIS_ERR;
	}
	return AIS_OK;
}

/*
 * The resources an S3 operation touches (authz.h), declared here and
 * nowhere else: the bucket or object it names, with the permission a
 * token or auth.grant must give (perm.h) and the ACL permission (s3acl.h)
 * that grants it too, and a copy's source (CopyObject, UploadPartCopy):
 * read, by grant or by the source object's ACL.
 *
 *   operation                      perm          ACL need (on)
 *   ListBuckets                    -             -
 *   CreateBucket                   cluster admin -
 *   PutBucketAcl, Put/DeleteBucketTagging admin  WRITE_ACP (bucket)
 *   Put/DeleteBucketPolicy, ...PublicAccessBlock admin WRITE_ACP (bucket)
 *   Put/DeleteBucketCors           admin         WRITE_ACP (bucket)
 *   Put/PostBucketLogging          admin         WRITE_ACP (bucket; Put: its owner only, logging.c)
 *   GetBucketLogging               list          READ_ACP (bucket)
 *   GetBucketAcl, GetBucketTagging list          READ_ACP (bucket)
 *   GetBucketPolicy(Status), ...PublicAccessBlock list READ_ACP (bucket)
 *   GetBucketCors                  list          READ_ACP (bucket)
 *   GetBucketLifecycle(Configuration) list       READ_ACP (bucket)
 *   Put/DeleteBucketOwnershipControls admin      WRITE_ACP (bucket)
 *   GetBucketOwnershipControls     list          READ_ACP (bucket)
 *   DeleteBucket                   admin         FULL_CONTROL (bucket)
 *   DeleteObjects (POST ?delete)   delete        WRITE (bucket)
 *   HeadBucket / ListObjects       read / list   READ (bucket)
 *   GetObject, HeadObject          read          READ (object)
 *   Get/PutObjectAcl               read / write  READ_ACP / WRITE_ACP (object)
 *   ListParts, GetObjectTagging    read          WRITE / READ (bucket)
 *   Put/DeleteObjectTagging        write / delete WRITE (bucket)
 *   PutObject, multipart           write         WRITE (bucket)
 *   DeleteObject / AbortMPU        delete / write WRITE (bucket)
 *   + copy source                  read          READ (source object)
 * and the bucket access bit (bmd.h, authz.h rule 1a) each needs: HEAD
 * (HeadBucket, HeadObject), LIST (ListObjects, uploads, parts), GET
 * (GetObject, tagging, a copy's source), PUT (PutObject, copies,
 * multipart, PutObjectAcl, AbortMPU), DELETE (DeleteObject(s)), DESTROY
 * (DeleteBucket), PATCH (PutBucketAcl); none for the ACL reads.
 * Each resource is also the bucket policy's (policy.c: its S3 action,
 * access.c: the verdict, authz.h rules 1b and 3a).
 * AIS_OK with r->res, or AIS_ERR after answering (a bad copy source).
 */
static int s3_declare(s3_rq_t *r)
{
	http_req_t *req = r->http;
	enum http_method m = req->method;
	authz_res_t *x = &r->res[S3_RES_NAMED];
	sv_t v;
	bool acl = s3_query_has(req, "acl");

	memset(r->res, 0, sizeof(r->res));
	memset(r->meta_later, 0, sizeof(r->meta_later));
	r->nres = 0;
	if (!r->bucket.len) {
		if (m == HTTP_GET || m == HTTP_HEAD)
			return AIS_OK; /* ListBuckets: each user sees what it may */
		x->perm = AUTHZ_CLUSTER;
		r->nres = 1;
		return AIS_OK;
	}
	x->bucket = r->bucket;
	x->object = r->key;
	r->nres = 1;
	if (!r->key.len) {
		if (acl || s3_query_has(req, "tagging") || s3_query_has(req, "object-lock") || s3_query_has(req, "policy") ||
		    s3_query_has(req, "policyStatus") || s3_query_has(req, "publicAccessBlock") || s3_query_has(req, "cors") ||
		    s3_query_has(req, "lifecycle") || s3_query_has(req, "logging") ||
		    s3_query_has(req, "encryption") || s3_query_has(req, "ownershipControls")) {
			/* the bucket's ACL, tags, lock configuration, policy, public access block, CORS, lifecycle,
			 * logging, default encryption or ownership controls: as its owner's */
			x->perm = m == HTTP_GET ? AUTH_LIST : AUTH_ADMIN;
			x->acl = m == HTTP_GET ? S3ACL_READ_ACP : S3ACL_WRITE_ACP;
			x->op = m == HTTP_GET ? 0 : BMD_ACCESS_PATCH;
		} else if (m == HTTP_PUT) {
			x->perm = AUTHZ_CLUSTER; /* CreateBucket */
		} else if (m == HTTP_DELETE) {
			x->perm = AUTH_ADMIN, x->acl = S3ACL_FULL, x->op = BMD_ACCESS_DESTROY;
		} else if (m == HTTP_POST) {
			x->perm = AUTH_DELETE, x->acl = S3ACL_WRITE, x->op = BMD_ACCESS_DELETE;
			if (s3_lock_bypass(r)) /* DeleteObjects bypassing GOVERNANCE retentions */
				x->perm |= AUTH_ADMIN;
		} else {
			x->perm = m == HTTP_HEAD ? AUTH_READ : AUTH_LIST, x->acl = S3ACL_READ;
			x->op = m == HTTP_HEAD ? BMD_ACCESS_HEAD : BMD_ACCESS_LIST;
		}
		return AIS_OK;
	}
	bool upload = http_query_get(req, "uploadId", &v);
	if (acl) {
		x->perm = m == HTTP_GET ? AUTH_READ : AUTH_WRITE;
		x->acl = m == HTTP_GET ? S3ACL_READ_ACP : S3ACL_WRITE_ACP;
		x->acl_later = true;
		x->op = m == HTTP_GET ? 0 : BMD_ACCESS_PUT;
	} else if ((m == HTTP_GET || m == HTTP_HEAD) && !upload) {
		x->perm = AUTH_READ, x->acl = S3ACL_READ;
		x->acl_later = !s3_query_has(req, "tagging");
		x->op = m == HTTP_HEAD ? BMD_ACCESS_HEAD : BMD_ACCESS_GET;
	} else if (m == HTTP_DELETE) {
		x->perm = upload ? AUTH_WRITE : AUTH_DELETE, x->acl = S3ACL_WRITE;
		x->op = upload ? BMD_ACCESS_PUT : BMD_ACCESS_DELETE;
	} else {
		x->perm = m == HTTP_GET ? AUTH_READ : AUTH_WRITE, x->acl = S3ACL_WRITE;
		x->op = m == HTTP_GET ? BMD_ACCESS_LIST : BMD_ACCESS_PUT;
	}
	/* the handlers that read the object's metadata and decide again (s3_decide_object) */
	r->meta_later[S3_RES_NAMED] = x->acl_later || s3_query_has(req, "tagging") || s3_query_has(req, "retention") ||
				      s3_query_has(req, "legal-hold");
	if (s3_lock_bypass(r) && (m == HTTP_DELETE || (m == HTTP_PUT && s3_query_has(req, "retention"))))
		x->perm |= AUTH_ADMIN; /* s3:BypassGovernanceRetention: the bucket's administrators (objlock.c) */
	sv_t src = http_req_header(req, "x-amz-copy-source");
	if (src.ptr && m == HTTP_PUT) {
		authz_res_t *s = &r->res[S3_RES_SOURCE];
		if (s3_copy_source(r, src, &s->bucket, &s->object, NULL) != AIS_OK)
			return AIS_ERR;
		s->perm = AUTH_READ;
		s->acl = S3ACL_READ;
		s->acl_later = true;
		r->meta_later[S3_RES_SOURCE] = true;
		s->op = BMD_ACCESS_GET;
		s->role = "the copy source";
		r->nres = 2;
	}
	return AIS_OK;
}

/* Declares the request's resources and decides over them (access.c,
 * authz_decide); an object's ACL is decided by the handler that reads
 * its metadata. AIS_ERR after answering. */
int s3_authorize(s3_rq_t *r)
{
	if (s3_declare(r) != AIS_OK)
		return AIS_ERR;
	return s3_decide(r);
}

/* Does the object request r change or need the owner's state (writes,
 * multipart), or may any holder of a copy serve it? */
static bool needs_owner(s3_rq_t *r)
{
	http_req_t *req = r->http;
	return !(req->method == HTTP_GET || req->method == HTTP_HEAD) || s3_query_has(req, "uploadId");
}

static int s3_serve(s3_rq_t *r);
static int s3_route(s3_rq_t *r, bool may_doubt);

static void refresh_work(http_req_t *req)
{
	cluster_refresh(((node_base_t *)req->ctx)->cl, 200);
}

static void refresh_done(http_req_t *req)
{
	s3_rq_t *r = req->state;
	s3_route(r, false);
}

/* A read during a rebalance (olmoved.c): the object is still on its
 * holder under the previous map, which serves it through this target. */
static bool moved_read(s3_rq_t *r)
{
	http_req_t *req = r->http;
	return (req->method == HTTP_GET || req->method == HTTP_HEAD) && r->key.len && !s3_query_has(req, "uploadId");
}

static void moved_here(http_req_t *req, void *arg) { s3_serve(arg); }

static void moved_there(http_req_t *req, void *arg, const char *intra_url, unsigned hops, uint64_t cmap_version)
{
	s3_proxy(arg, intra_url, hops, cmap_version);
}

/* An object request: served by the target that holds the object (the
 * owner for writes, any holder for reads, placed by the object layer);
 * a gateway, or a target that does not serve it, forwards it unchanged
 * (the serving target verifies the signature: Host and path travel as
 * they are). */
static int s3_route(s3_rq_t *r, bool may_doubt)
{
	http_req_t *req = r->http;
	char url[CMAP_URL_MAX + 1];

	if (r->node.gateway) {
		int self;
		if (!s3_place(&r->node, r->bucket, r->key, url, sizeof(url), &self)) {
			if (!s3_bucket_exists(r))
				s3_error(r, "NoSuchBucket", NULL);
			else
				s3_error(r, "ServiceUnavailable", "no active target in the cluster");
			return AIS_OK;
		}
		return s3_proxy(r, url, 0, 0); /* (a gateway's routing is not a hop) */
	}
	r->where = arena_zalloc(req->arena, sizeof(*r->where));
	enum ol_route rt = ol_where(req, req->ctx, r->bucket, r->key, needs_owner(r), may_doubt, r->where);
	if (rt != OL_HERE && rt != OL_NONE && moved_read(r) && ol_moved_here(req, req->ctx, r->bucket, r->key, r->where))
		rt = OL_HERE; /* not moved off this target yet */
	switch (rt) {
	case OL_HERE:
		if (moved_read(r) && ol_moved(req, req->ctx, r->bucket, r->key, r->where, moved_here, moved_there, r))
			return AIS_OK; /* not moved here yet: relayed from the holder under the previous map */
		return s3_serve(r);
	case OL_DOUBT:
		/* maybe this target's map is older than the sender's */
		http_offload_net(req, refresh_work, refresh_done);
		return AIS_OK;
	case OL_OWNER:
		return s3_proxy(r, r->where->owner_intra, r->where->hops + 1, 0);
	case OL_LOOP: {
		buf_t msg = BUF_INIT;
		ol_loop_msg(r->where, &msg);
		log_warnx("S3 %s %.*s: %s", http_method_name(req->method), (int)MIN(req->path.len, 256), req->path.ptr,
			  msg.ptr);
		s3_error_status(r, 508, "LoopDetected", msg.ptr);
		buf_free(&msg);
		return AIS_OK;
	}
	case OL_NONE:
	default:
		if (!s3_bucket_exists(r))
			s3_error(r, "NoSuchBucket", NULL);
		else
			s3_error(r, "ServiceUnavailable", "no active target in the cluster");
		return AIS_OK;
	}
}

/* The request is where it is served. */
static int s3_serve(s3_rq_t *r)
{
	http_req_t *req = r->http;
	if (s3_post_is(r)) /* authenticated by its form (post.c) */
		return s3_post(r);
	if (authenticate(r) != AIS_OK || s3_authorize(r) != AIS_OK)
		return AIS_OK;
	if (s3_nyi_answered(r))
		return AIS_OK;
	if (!r->bucket.len)
		return req->method == HTTP_GET || req->method == HTTP_HEAD ? s3_service(r) : method_not_allowed(r);
	if (!r->key.len)
		return bucket_op(r);
	return object_op(r);
}

static int s3_handle(http_req_t *req, bool gateway)
{
	s3_rq_t *r = arena_zalloc(req->arena, sizeof(*r));
	r->http = req;
	req->state = r;
	s3_node_of(req, gateway, &r->node);

	if (sv_eqstr(req->path, "/v1") || sv_startswith(req->path, "/v1/")) {
		http_resp_error(req, 404, "no such resource: %.*s", (int)MIN(req->path.len, 256), req->path.ptr);
		return AIS_OK;
	}
	if (parse_addr(r) != AIS_OK)
		return AIS_OK;
	s3_log_arm(r); /* its server access log record, where it arrived (logging.c) */
	/* a CORS preflight: answered here, from the BMD (corsop.c) */
	if (req->method == HTTP_OPTIONS)
		return s3_cors_preflight(r);
	s3_cors_actual(r); /* before any answer, errors included (corsop.c rule 2) */
	if (r->key.len && r->node.cl)
		return s3_route(r, true);
	if (r->key.len && gateway) {
		s3_error(r, "ServiceUnavailable", "the gateway is starting");
		return AIS_OK;
	}
	return s3_serve(r);
}

int s3_h_target(http_req_t *req) { return s3_handle(req, false); }
int s3_h_gateway(http_req_t *req) { return s3_handle(req, true); }
