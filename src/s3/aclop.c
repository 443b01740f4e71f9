/*
 * aclop.c - GetBucketAcl, PutBucketAcl, GetObjectAcl, PutObjectAcl.
 *
 * A bucket's ACL lives in the BMD (bucket.c changes it through the
 * primary); an object's in its S3 metadata, each version its own
 * (?versionId names one: s3_version_select), read and set on every copy
 * through the object layer (s3_meta_fetch, s3_meta_set: ol_set_custom,
 * the bytes stay, the record is rewritten only if the version was not
 * overwritten meanwhile; a holder that did not take it fails the request,
 * so no copy keeps an old ACL unnoticed). A PUT takes the ACL from
 * an AccessControlPolicy body, or else from x-amz-acl / x-amz-grant-*;
 * every user grantee must be a configured key's user id. Who may call
 * them (READ_ACP, WRITE_ACP) was checked before (s3.c, access.c).
 */
#include <errno.h>
#include <string.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

/* The object's (or version's) ACL: its own, else (none, or ACLs disabled
 * by BucketOwnerEnforced) its bucket's (arg). */
static void object_get(s3_rq_t *r, store_meta_t *sm, s3_meta_t *m, void *arg)
{
	s3_bacl_t *b = arg;
	s3acl_t *acl = arena_alloc(r->http->arena, sizeof(*acl));
	const char *owner = b->owner;
	buf_t x = BUF_INIT;

	s3_bucket_acl_effective(b, acl);
	if (m->owner && b->own != S3ACL_OWN_OWNER_ENFORCED) {
		owner = m->owner;
		if (s3acl_decode(m->acl ? m->acl : "", m->acl ? strlen(m->acl) : 0, acl) != AIS_OK)
			acl->n = 0;
	}
	s3_version_header(r, sm->custom, false);
	s3_acl_xml(owner, acl, &x);
	s3_send_xml(r, 200, &x);
}

int s3_acl_get(s3_rq_t *r)
{
	s3_bacl_t *b = arena_alloc(r->http->arena, sizeof(*b));
	s3acl_t *acl = arena_alloc(r->http->arena, sizeof(*acl));
	buf_t x = BUF_INIT;

	if (s3_bucket_acl_get(r, r->bucket, b) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	if (r->key.len) {
		s3_meta_fetch(r, object_get, b);
		return AIS_OK;
	}
	s3_bucket_acl_effective(b, acl);
	s3_acl_xml(b->owner, acl, &x);
	s3_send_xml(r, 200, &x);
	return AIS_OK;
}

/* --- PUT ------------------------------------------------------------------------- */

/* The ACL of x-amz-acl / x-amz-grant-* (one of them required) into *out,
 * owned by owner, bucket-owner-* canned ACLs granting bucket_owner (NULL:
 * none); one that b's ownership controls refuse is refused. AIS_ERR after
 * answering. */
static int from_headers(s3_rq_t *r, const s3_bacl_t *b, const char *owner, const char *bucket_owner, s3acl_t **out)
{
	bool given = false;
	*out = arena_alloc(r->http->arena, sizeof(**out));
	if (s3_acl_from_req(r, owner, bucket_owner, *out, &given) != AIS_OK)
		return AIS_ERR;
	if (!given) {
		s3_error(r, "MissingSecurityHeader", "Your request was missing a required header: x-amz-acl");
		return AIS_ERR;
	}
	return s3_acl_enforced_check(r, b, *out);
}

/* The object's (or version's) new ACL: arg, from the body, or NULL: from
 * the request's headers, with the object's owner as the owner. */
static void object_set(s3_rq_t *r, store_meta_t *sm, s3_meta_t *m, void *arg)
{
	s3acl_t *acl = arg;
	s3_bacl_t b;
	buf_t t = BUF_INIT;

	if (s3_bucket_acl_get(r, r->bucket, &b) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return;
	}
	if (!acl && from_headers(r, &b, m->owner ? m->owner : b.owner, b.owner, &acl) != AIS_OK)
		return;
	if (!m->owner) /* an object without an owner gets its bucket's */
		m->owner = arena_strndup(r->http->arena, b.owner, strlen(b.owner));
	s3acl_encode(acl, &t);
	m->acl = arena_strndup(r->http->arena, t.ptr ? t.ptr : "", t.len);
	buf_free(&t);
	s3_meta_set(r, sm->version, m, 200, "ACL grants");
}

static void put_body(s3_rq_t *r, buf_t *body)
{
	s3acl_t *acl = NULL;
	s3_bacl_t b;

	if (s3_bucket_acl_get(r, r->bucket, &b) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return;
	}
	if (body->len) {
		s3_acl_req_t *q = arena_alloc(r->http->arena, sizeof(*q));
		if (s3_parse_acl(body->ptr, body->len, q) != AIS_OK) {
			if (q->email)
				s3_error(r, "UnresolvableGrantByEmailAddress", NULL);
			else
				s3_error(r, "MalformedACLError", NULL);
			return;
		}
		if (s3_acl_enforced_check(r, &b, &q->acl) != AIS_OK || s3_acl_check_users(r, &q->acl) != AIS_OK)
			return;
		acl = &q->acl;
	}
	if (r->key.len) {
		s3_meta_fetch(r, object_set, acl);
		return;
	}
	/* (with ACLs disabled a bucket takes bucket-owner-full-control too) */
	if (!acl && from_headers(r, &b, b.owner, b.own == S3ACL_OWN_OWNER_ENFORCED ? b.owner : NULL, &acl) != AIS_OK)
		return;
	s3_bucket_set_acl(r, acl);
}

int s3_acl_put(s3_rq_t *r)
{
	if (!r->key.len && !s3_bucket_exists(r)) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	s3_read_body(r, put_body);
	return AIS_OK;
}
