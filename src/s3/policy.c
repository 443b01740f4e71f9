/*
 * policy.c - S3 bucket policies and public access blocks at the S3 door:
 * Get/Put/DeleteBucketPolicy, GetBucketPolicyStatus, Get/Put/Delete
 * PublicAccessBlock, and what a policy is asked for each request: the S3
 * action of each resource, the request's context (the condition keys) and
 * the policy's verdict (s3policy.h), which access.c hands to the one
 * decision (authz_decide, rules 1b and 3a). No handler decides access.
 *
 * Where a policy lives: beside its bucket's BMD entry (bmd_policy), not
 * in it: bmd_props_t is a fixed-size value copied on every change and
 * held per bucket by every node, and a 20 KiB document in it would cost
 * every bucket that much. Kept beside the entry, only buckets with a
 * policy pay, and the policy is still persisted and pushed with the BMD
 * by the primary (metasync), so that every target decides with the same
 * version of it as the bucket (a Deny holds on every holder of a copy the
 * moment the change is confirmed), and it goes with the bucket. A stored
 * policy is parsed once per thread and document (polc_get below), not
 * per request.
 *
 * Rules (docs/s3.md, "Bucket policies"):
 *  1. Explicit Deny wins over everything but a peer (replication,
 *     rebalance); then a token's or auth.grant's own permissions, then a
 *     policy's Allow, then the ACLs; so a policy adds to the ACLs and a
 *     Deny takes away from all of them, as on S3.
 *  2. The bucket's owner may always read, change and delete its policy
 *     (the policy does not apply to Get/Put/DeleteBucketPolicy by the
 *     owner), so no policy locks its owner out for good.
 *  3. Public access block: BlockPublicAcls refuses a request that sets a
 *     public ACL (AllUsers or AuthenticatedUsers grants) on the bucket or
 *     an object in it; IgnorePublicAcls makes those grants count for
 *     nothing; BlockPublicPolicy refuses a public policy (s3pol_public);
 *     RestrictPublicBuckets makes a public policy's Allow statements count
 *     only for the bucket's owner.
 *  4. The client's address (aws:SourceIp) and TLS (aws:SecureTransport)
 *     are the connection's where the request arrived; a gateway or target
 *     that forwards it says them in S3_CLIENT_HDR, a node header
 *     (authz.h): believed only under the cluster secret's signature of
 *     the relay (without cluster.secret: from a node's address).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aisd/log.h"
#include "aisd/s3policy.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

/* --- the request as a policy sees it --------------------------------------------- */

void s3_client(s3_rq_t *r, char *addr, size_t addrsz, bool *tls)
{
	/* (a node header: authz_check dropped it unless a node vouched for it) */
	sv_t h = http_req_header(r->http, S3_CLIENT_HDR);
	const char *sp = h.ptr ? memchr(h.ptr, ' ', h.len) : NULL;
	if (sp) {
		snprintf(addr, addrsz, "%.*s", (int)(sp - h.ptr), h.ptr);
		*tls = h.len > (size_t)(sp - h.ptr) + 1 && sp[1] == '1';
		return;
	}
	snprintf(addr, addrsz, "%s", http_req_peer(r->http));
	*tls = http_req_tls(r->http);
}

/* Sub-resources and the action of each method (NULL: the default). */
static const struct sub_act {
	const char *sub;
	const char *get, *put, *post, *del;
} bucket_acts[] = {
	{"acl", "s3:GetBucketAcl", "s3:PutBucketAcl", NULL, NULL},
	{"tagging", "s3:GetBucketTagging", "s3:PutBucketTagging", NULL, "s3:PutBucketTagging"},
	{"policy", "s3:GetBucketPolicy", "s3:PutBucketPolicy", NULL, "s3:DeleteBucketPolicy"},
	{"policyStatus", "s3:GetBucketPolicyStatus", NULL, NULL, NULL},
	{"publicAccessBlock", "s3:GetBucketPublicAccessBlock", "s3:PutBucketPublicAccessBlock", NULL,
	 "s3:PutBucketPublicAccessBlock"},
	{"versioning", "s3:GetBucketVersioning", "s3:PutBucketVersioning", NULL, NULL},
	{"location", "s3:GetBucketLocation", NULL, NULL, NULL},
	{"uploads", "s3:ListBucketMultipartUploads", NULL, NULL, NULL},
	{"versions", "s3:ListBucketVersions", NULL, NULL, NULL},
	{"delete", NULL, NULL, "s3:DeleteObject", NULL},
	{"cors", "s3:GetBucketCORS", "s3:PutBucketCORS", NULL, "s3:PutBucketCORS"},
	{"encryption", "s3:GetEncryptionConfiguration", "s3:PutEncryptionConfiguration", NULL,
	 "s3:PutEncryptionConfiguration"},
	{"lifecycle", "s3:GetLifecycleConfiguration", "s3:PutLifecycleConfiguration", NULL,
	 "s3:PutLifecycleConfiguration"},
	{"logging", "s3:GetBucketLogging", "s3:PutBucketLogging", NULL, NULL},
	{"object-lock", "s3:GetBucketObjectLockConfiguration", "s3:PutBucketObjectLockConfiguration", NULL, NULL},
	{"encryption", "s3:GetEncryptionConfiguration", "s3:PutEncryptionConfiguration", NULL,
	 "s3:PutEncryptionConfiguration"},
	{"website", "s3:GetBucketWebsite", "s3:PutBucketWebsite", NULL, "s3:DeleteBucketWebsite"},
	{"notification", "s3:GetBucketNotification", "s3:PutBucketNotification", NULL, NULL},
	{"ownershipControls", "s3:GetBucketOwnershipControls", "s3:PutBucketOwnershipControls", NULL,
	 "s3:PutBucketOwnershipControls"},
	{"replication", "s3:GetReplicationConfiguration", "s3:PutReplicationConfiguration", NULL,
	 "s3:PutReplicationConfiguration"},
	{"requestPayment", "s3:GetBucketRequestPayment", "s3:PutBucketRequestPayment", NULL, NULL},
	{"accelerate", "s3:GetAccelerateConfiguration", "s3:PutAccelerateConfiguration", NULL, NULL},
}, object_acts[] = {
	{"acl", "s3:GetObjectAcl", "s3:PutObjectAcl", NULL, NULL},
	{"tagging", "s3:GetObjectTagging", "s3:PutObjectTagging", NULL, "s3:DeleteObjectTagging"},
	{"attributes", "s3:GetObjectAttributes", NULL, NULL, NULL},
	{"retention", "s3:GetObjectRetention", "s3:PutObjectRetention", NULL, NULL},
	{"legal-hold", "s3:GetObjectLegalHold", "s3:PutObjectLegalHold", NULL, NULL},
	{"uploadId", "s3:ListMultipartUploadParts", "s3:PutObject", "s3:PutObject", "s3:AbortMultipartUpload"},
	{"uploads", NULL, NULL, "s3:PutObject", NULL},
	{"restore", NULL, NULL, "s3:RestoreObject", NULL},
};

/* The object sub-resources whose actions S3 names in their version form
 * with ?versionId (s3:GetObjectVersionAcl, s3:DeleteObjectVersionTagging,
 * ...), as GetObject's and DeleteObject's; retention, legal hold and
 * multipart have none. */
static const char *const version_subs[] = {"acl", "tagging", "attributes"};

static bool version_sub(const char *sub)
{
	for (size_t i = 0; i < ARRAY_SIZE(version_subs); i++)
		if (!strcmp(sub, version_subs[i]))
			return true;
	return false;
}

static const char *by_method(const struct sub_act *a, enum http_method m)
{
	return m == HTTP_GET || m == HTTP_HEAD ? a->get : m == HTTP_PUT ? a->put : m == HTTP_POST ? a->post : a->del;
}

const char *s3_action(s3_rq_t *r, size_t i)
{
	http_req_t *req = r->http;
	enum http_method m = req->method;
	const char *act = NULL;
	bool ver = m == HTTP_GET || m == HTTP_HEAD || m == HTTP_DELETE; /* s3:GetObject, s3:DeleteObject */
	if (i == S3_RES_SOURCE)
		return "s3:GetObject";
	if (!r->bucket.len)
		return m == HTTP_GET || m == HTTP_HEAD ? "s3:ListAllMyBuckets" : "s3:CreateBucket";
	const struct sub_act *t = r->key.len ? object_acts : bucket_acts;
	size_t n = r->key.len ? ARRAY_SIZE(object_acts) : ARRAY_SIZE(bucket_acts);
	for (size_t k = 0; k < n && !act; k++)
		if (s3_query_has(req, t[k].sub) && (act = by_method(&t[k], m)))
			ver = version_sub(t[k].sub);
	if (!act && !r->key.len)
		act = m == HTTP_GET || m == HTTP_HEAD ? "s3:ListBucket" : m == HTTP_PUT ? "s3:CreateBucket"
					    : m == HTTP_DELETE ? "s3:DeleteBucket" : "s3:PutObject";
	if (!act)
		act = m == HTTP_GET || m == HTTP_HEAD ? "s3:GetObject" : m == HTTP_DELETE ? "s3:DeleteObject" : "s3:PutObject";
	/* a version's: s3:GetObjectVersion, s3:DeleteObjectVersionTagging, ... */
	const char *obj = strstr(act, "Object");
	if (r->key.len && ver && obj && s3_query_has(req, "versionId"))
		act = arena_printf(req->arena, "%.*sObjectVersion%s", (int)(obj - act), act, obj + 6);
	return act;
}

struct qctx {
	s3_rq_t *r;
	const s3_meta_t *m;
	sv_t prefix; /* ptr NULL: the query's */
	const s3_tags_t *req_tags; /* NULL: not parsed yet */
	char addr[64];
	bool tls;
};

/* Tag key's value in t. */
static bool tag_value(const s3_tags_t *t, const char *key, sv_t *val)
{
	for (size_t i = 0; i < t->n && i < ARRAY_SIZE(t->t); i++)
		if (!strcmp(t->t[i].key, key)) {
			*val = sv_from(t->t[i].value);
			return true;
		}
	return false;
}

/* The tag set the request sets: a PutObjectTagging body's, else the
 * x-amz-tagging header's (PutObject, CopyObject, CreateMultipartUpload);
 * a malformed header sets none here (its handler answers InvalidArgument). */
static const s3_tags_t *req_tags(struct qctx *c)
{
	http_req_t *req = c->r->http;
	if (c->r->req_tags)
		return c->r->req_tags;
	if (!c->req_tags) {
		s3_tags_t *t = arena_zalloc(req->arena, sizeof(*t));
		sv_t h = http_req_header(req, "x-amz-tagging");
		if (h.ptr && s3_tags_from_query(req->arena, sv_trim(h), t) != AIS_OK)
			t->n = 0;
		c->req_tags = t;
	}
	return c->req_tags;
}

static bool ctx_key(void *arg, const char *key, sv_t *val)
{
	struct qctx *c = arg;
	http_req_t *req = c->r->http;
	const char *uid = s3_requester(c->r);
	if (!strcasecmp(key, "aws:SourceIp")) {
		*val = sv_from(c->addr);
		return strcmp(c->addr, "unix") != 0;
	}
	if (!strcasecmp(key, "aws:SecureTransport")) {
		*val = sv_from(c->tls ? "true" : "false");
		return true;
	}
	if (!strcasecmp(key, "aws:userid") || !strcasecmp(key, "aws:username")) {
		const char *name = uid && !strcasecmp(key, "aws:username") ? s3_user_name(uid) : NULL;
		*val = sv_from(name ? name : uid);
		return uid != NULL;
	}
	if (!strcasecmp(key, "aws:PrincipalType")) {
		*val = sv_from(uid ? "User" : "Anonymous");
		return true;
	}
	if (!strcasecmp(key, "aws:Referer") || !strcasecmp(key, "aws:UserAgent")) {
		*val = http_req_header(req, !strcasecmp(key, "aws:Referer") ? "Referer" : "User-Agent");
		return val->ptr != NULL;
	}
	if (!strcasecmp(key, "aws:EpochTime")) {
		*val = sv_from(arena_printf(req->arena, "%lld", (long long)(time_now_ns() / 1000000000LL)));
		return true;
	}
	if (!strcasecmp(key, "s3:prefix") && c->prefix.ptr) {
		*val = c->prefix;
		return true;
	}
	if (!strcasecmp(key, "s3:prefix") || !strcasecmp(key, "s3:delimiter") || !strcasecmp(key, "s3:max-keys") ||
	    !strcasecmp(key, "s3:VersionId")) {
		return http_query_get(req, !strcasecmp(key, "s3:VersionId") ? "versionId" : key + 3, val);
	}
	if (!strncasecmp(key, "s3:x-amz-", 9)) {
		*val = http_req_header(req, key + 3);
		return val->ptr != NULL;
	}
	if (!strncasecmp(key, "s3:ExistingObjectTag/", 21))
		return c->m && tag_value(&c->m->tags, key + 21, val);
	if (!strncasecmp(key, "s3:RequestObjectTag/", 20))
		return tag_value(req_tags(c), key + 20, val);
	return false;
}

/* --- parsed policies, kept per thread ------------------------------------------------ */

/*
 * A stored policy is parsed once per thread, not once per request: each
 * thread keeps the last POLC_N documents it parsed, keyed by the bucket
 * and the document's bytes themselves, so a changed policy (a new BMD) is
 * a new key and can never be answered with an old parse, and nothing has
 * to be invalidated. Per thread, so that no lock is taken and an entry is
 * replaced only by its own thread, never while a verdict of that thread
 * still reads it (the parse is used within one call). Memory: at most
 * POLC_N x (S3POL_MAX + its parse) per thread that decides S3 requests,
 * freed when the thread ends.
 */
#define POLC_N 8

struct polc_ent {
	uint64_t hash; /* of bucket and text; 0: empty */
	char *key;     /* bucket '\0' text */
	size_t klen;
	arena_t *a; /* holds p */
	const s3pol_t *p;
	uint64_t used;
};

struct polc {
	struct polc_ent e[POLC_N];
	uint64_t tick;
};

static pthread_key_t polc_key;
static pthread_once_t polc_once = PTHREAD_ONCE_INIT;

static void polc_free(void *arg)
{
	struct polc *c = arg;
	for (size_t i = 0; i < POLC_N; i++) {
		free(c->e[i].key);
		if (c->e[i].a)
			arena_destroy(c->e[i].a);
	}
	free(c);
}

static void polc_init(void)
{
	if (pthread_key_create(&polc_key, polc_free))
		fatal("pthread_key_create");
}

static uint64_t polc_hash(const char *s, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

/* The parse of policy text of bucket: this thread's kept one, or a new
 * one kept. NULL with err when the text does not parse (not kept). Valid
 * until this thread asks again. */
static const s3pol_t *polc_get(const char *bucket, const char *text, buf_t *err)
{
	size_t bl = strlen(bucket), tl = strlen(text), kl = bl + 1 + tl;
	uint64_t h = polc_hash(text, tl, polc_hash(bucket, bl + 1, 14695981039346656037ULL)) | 1;
	pthread_once(&polc_once, polc_init);
	struct polc *c = pthread_getspecific(polc_key);
	if (!c) {
		c = xcalloc(1, sizeof(*c));
		if (pthread_setspecific(polc_key, c))
			fatal("pthread_setspecific");
	}
	struct polc_ent *lru = &c->e[0];
	for (size_t i = 0; i < POLC_N; i++) {
		struct polc_ent *e = &c->e[i];
		if (e->hash == h && e->klen == kl && !memcmp(e->key, bucket, bl + 1) && !memcmp(e->key + bl + 1, text, tl)) {
			e->used = ++c->tick;
			return e->p;
		}
		if (e->used < lru->used)
			lru = e;
	}
	arena_t *a = arena_new(4096);
	const s3pol_t *p;
	if (s3pol_parse(a, bucket, text, tl, &p, err) != AIS_OK) {
		arena_destroy(a);
		return NULL;
	}
	free(lru->key);
	if (lru->a)
		arena_destroy(lru->a);
	lru->key = xmalloc(kl);
	memcpy(lru->key, bucket, bl + 1);
	memcpy(lru->key + bl + 1, text, tl);
	*lru = (struct polc_ent){h, lru->key, kl, a, p, ++c->tick};
	return p;
}

unsigned s3_policy_verdict(s3_rq_t *r, const authz_res_t *x, const char *action, const s3_bacl_t *b,
			   const s3_meta_t *m, sv_t prefix, bool later_ok)
{
	const char *uid = s3_requester(r);
	bool owner = uid && !strcmp(uid, b->owner);
	const s3pol_t *p;
	buf_t err = BUF_INIT;
	char bucket[NAME_BUCKET_MAX + 1];

	if (!b->policy)
		return AUTHZ_POL_NONE;
	if (owner && strstr(action, "BucketPolicy")) /* rule 2 */
		return AUTHZ_POL_NONE;
	snprintf(bucket, sizeof(bucket), "%.*s", (int)x->bucket.len, x->bucket.ptr);
	if (!(p = polc_get(bucket, b->policy, &err))) {
		/* checked when stored: refuse rather than guess */
		log_warnx("S3 bucket %s: its stored policy does not parse (%s): requests refused", bucket, err.ptr);
		buf_free(&err);
		return AUTHZ_POL_DENY;
	}
	if (later_ok && (s3pol_uses_key(p, "s3:ExistingObjectTag/") || s3pol_uses_key(p, "s3:RequestObjectTag/")))
		return AUTHZ_POL_LATER; /* decided with the object's tags, a body's (s3_decide_object) */
	struct qctx c = {.r = r, .m = m, .prefix = prefix};
	s3_client(r, c.addr, sizeof(c.addr), &c.tls);
	s3pol_req_t q = {
		.user = uid,
		.user_name = uid ? s3_user_name(uid) : NULL,
		.action = action,
		.bucket = x->bucket,
		.key = x->object,
		.ctx = ctx_key,
		.arg = &c,
	};
	switch (s3pol_eval(p, &q, (b->pab & BMD_PAB_RESTRICT) && !owner)) {
	case S3POL_DENY:
		return AUTHZ_POL_DENY;
	case S3POL_ALLOW:
		return AUTHZ_POL_ALLOW;
	default:
		return AUTHZ_POL_NONE;
	}
}

/* --- Get/Put/DeleteBucketPolicy, GetBucketPolicyStatus ------------------------------ */

static void policy_body(s3_rq_t *r, buf_t *body)
{
	s3_bacl_t b;
	const s3pol_t *p;
	buf_t err = BUF_INIT;
	char bucket[NAME_BUCKET_MAX + 1];
	snprintf(bucket, sizeof(bucket), "%.*s", (int)r->bucket.len, r->bucket.ptr);
	if (s3_bucket_acl_get(r, r->bucket, &b) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return;
	}
	if ((body->len && memchr(body->ptr, '\0', body->len)) ||
	    s3pol_parse(r->http->arena, bucket, body->ptr ? body->ptr : "", body->len, &p, &err) != AIS_OK) {
		s3_error(r, "MalformedPolicy", "%s", err.ptr ? err.ptr : "Policies must be valid JSON without NUL bytes");
		buf_free(&err);
		return;
	}
	if ((b.pab & BMD_PAB_BLOCK_POLICY) && s3pol_public(p)) {
		s3_error(r, "AccessDenied", "Access Denied: the bucket's public access block (BlockPublicPolicy) "
					    "refuses a public policy");
		return;
	}
	s3_bucket_set_doc(r, BMD_DOC_POLICY, arena_strndup(r->http->arena, body->ptr, body->len), 204);
}

int s3_bucket_policy(s3_rq_t *r)
{
	s3_bacl_t b;
	if (s3_bucket_acl_get(r, r->bucket, &b) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	switch (r->http->method) {
	case HTTP_GET:
		if (!b.policy) {
			s3_error(r, "NoSuchBucketPolicy", "The bucket policy does not exist");
			return AIS_OK;
		}
		s3_common_headers(r);
		http_resp_header(r->http, "Content-Type", "application/json");
		http_resp_send(r->http, b.policy, strlen(b.policy));
		return AIS_OK;
	case HTTP_PUT:
		s3_read_body(r, policy_body);
		return AIS_OK;
	case HTTP_DELETE:
		s3_bucket_set_doc(r, BMD_DOC_POLICY, NULL, 204);
		return AIS_OK;
	default:
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
}

int s3_bucket_policy_status(s3_rq_t *r)
{
	s3_bacl_t b;
	const s3pol_t *p;
	buf_t err = BUF_INIT, x = BUF_INIT;
	char bucket[NAME_BUCKET_MAX + 1];
	if (r->http->method != HTTP_GET) {
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
	if (s3_bucket_acl_get(r, r->bucket, &b) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	snprintf(bucket, sizeof(bucket), "%.*s", (int)r->bucket.len, r->bucket.ptr);
	bool pub = false;
	if (b.policy && s3pol_parse(r->http->arena, bucket, b.policy, strlen(b.policy), &p, &err) == AIS_OK)
		pub = s3pol_public(p);
	buf_free(&err);
	/* public too: a bucket ACL that grants a group (AllUsers, AuthenticatedUsers) */
	for (size_t i = 0; b.acl_set && !(b.pab & BMD_PAB_IGNORE_ACLS) && i < b.acl.n; i++)
		pub |= b.acl.g[i].kind == S3ACL_ALL || b.acl.g[i].kind == S3ACL_AUTHED;
	s3_xml_head(&x, "PolicyStatus");
	s3_xml_elemstr(&x, "IsPublic", pub ? "true" : "false");
	s3_xml_close(&x, "PolicyStatus");
	s3_send_xml(r, 200, &x);
	return AIS_OK;
}

/* --- Get/Put/DeletePublicAccessBlock ------------------------------------------------ */

static const struct {
	const char *name;
	unsigned bit;
} pab_fields[] = {
	{"BlockPublicAcls", BMD_PAB_BLOCK_ACLS},
	{"IgnorePublicAcls", BMD_PAB_IGNORE_ACLS},
	{"BlockPublicPolicy", BMD_PAB_BLOCK_POLICY},
	{"RestrictPublicBuckets", BMD_PAB_RESTRICT},
};

struct pab_st {
	unsigned bits;
	bool root, bad;
};

static int pab_cb(void *arg, const char *path, const char *text, size_t len)
{
	static const char root[] = "PublicAccessBlockConfiguration";
	struct pab_st *st = arg;
	if (!strcmp(path, root)) {
		st->root = true;
		return AIS_OK;
	}
	if (strncmp(path, root, sizeof(root) - 1) || path[sizeof(root) - 1] != '/')
		return AIS_ERR;
	for (size_t i = 0; i < ARRAY_SIZE(pab_fields); i++) {
		if (strcmp(path + sizeof(root), pab_fields[i].name))
			continue;
		sv_t v = sv_trim((sv_t){text, len});
		if (sv_eqcase(v, SV("true")))
			st->bits |= pab_fields[i].bit;
		else if (!sv_eqcase(v, SV("false")))
			st->bad = true;
		return AIS_OK;
	}
	st->bad = true; /* an element S3 does not have */
	return AIS_OK;
}

static void pab_body(s3_rq_t *r, buf_t *body)
{
	struct pab_st st = {0};
	if (s3_xml_parse(body->ptr ? body->ptr : "", body->len, pab_cb, &st) != AIS_OK || !st.root || st.bad) {
		s3_error(r, "MalformedXML", "a PublicAccessBlockConfiguration of BlockPublicAcls, IgnorePublicAcls, "
					    "BlockPublicPolicy and RestrictPublicBuckets (true or false)");
		return;
	}
	s3_bucket_set_pab(r, st.bits | BMD_PAB_SET, 200);
}

int s3_bucket_pab(s3_rq_t *r)
{
	s3_bacl_t b;
	buf_t x = BUF_INIT;
	if (s3_bucket_acl_get(r, r->bucket, &b) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	switch (r->http->method) {
	case HTTP_GET:
		if (!(b.pab & BMD_PAB_SET)) {
			s3_error(r, "NoSuchPublicAccessBlockConfiguration",
				 "The public access block configuration was not found");
			return AIS_OK;
		}
		s3_xml_head(&x, "PublicAccessBlockConfiguration");
		for (size_t i = 0; i < ARRAY_SIZE(pab_fields); i++)
			s3_xml_elemstr(&x, pab_fields[i].name, b.pab & pab_fields[i].bit ? "true" : "false");
		s3_xml_close(&x, "PublicAccessBlockConfiguration");
		s3_send_xml(r, 200, &x);
		return AIS_OK;
	case HTTP_PUT:
		s3_read_body(r, pab_body);
		return AIS_OK;
	case HTTP_DELETE:
		s3_bucket_set_pab(r, 0, 204);
		return AIS_OK;
	default:
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
}
