/*
 * aclop.c - GetBucketAcl, PutBucketAcl, GetObjectAcl, PutObjectAcl.
 *
 * A bucket's ACL lives in the BMD (bucket.c changes it through the
 * primary); an object's in its S3 metadata, set on every copy through the
 * object layer (ol_set_custom: the bytes stay, the record is rewritten
 * only if the object was not overwritten meanwhile; a holder that did not
 * take it fails the request, so no copy keeps an old ACL unnoticed). A PUT takes the ACL from
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

int s3_acl_get(s3_rq_t *r)
{
	s3_bacl_t b;
	s3acl_t *acl = arena_alloc(r->http->arena, sizeof(*acl));
	const char *owner;
	buf_t x = BUF_INIT;

	if (s3_bucket_acl_get(r, r->bucket, &b) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	s3_bucket_acl_effective(&b, acl);
	owner = b.owner;
	if (r->key.len) {
		store_meta_t sm;
		s3_meta_t m;
		if (s3_meta_lookup(r, &sm, &m) != AIS_OK)
			return AIS_OK;
		if (m.owner && b.own != S3ACL_OWN_OWNER_ENFORCED) { /* else: the bucket's */
			owner = m.owner;
			if (s3acl_decode(m.acl ? m.acl : "", m.acl ? strlen(m.acl) : 0, acl) != AIS_OK)
				acl->n = 0;
		}
	}
	s3_acl_xml(owner, acl, &x);
	s3_send_xml(r, 200, &x);
	return AIS_OK;
}

/* --- PUT ------------------------------------------------------------------------- */

static void object_set(s3_rq_t *r, const s3acl_t *acl)
{
	store_meta_t sm;
	s3_meta_t m;
	s3_bacl_t b;
	buf_t t = BUF_INIT;

	if (s3_meta_lookup(r, &sm, &m) != AIS_OK)
		return;
	if (!m.owner) /* an object without an owner gets its bucket's */
		m.owner = s3_bucket_acl_get(r, r->bucket, &b) == AIS_OK ? arena_strndup(r->http->arena, b.owner, strlen(b.owner))
									 : (char *)s3_requester(r);
	s3acl_encode(acl, &t);
	m.acl = arena_strndup(r->http->arena, t.ptr ? t.ptr : "", t.len);
	buf_free(&t);
	s3_meta_set(r, sm.version, &m, 200, "ACL grants");
}

static void put_body(s3_rq_t *r, buf_t *body)
{
	s3acl_t *acl;
	s3_bacl_t b;
	bool given = false;

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
	} else {
		acl = arena_alloc(r->http->arena, sizeof(*acl));
		const char *owner = b.owner;
		if (r->key.len) {
			store_meta_t sm;
			s3_meta_t m;
			if (s3_meta_lookup(r, &sm, &m) != AIS_OK)
				return;
			if (m.owner)
				owner = m.owner;
		}
		/* (with ACLs disabled a bucket takes bucket-owner-full-control too) */
		bool bo = r->key.len || b.own == S3ACL_OWN_OWNER_ENFORCED;
		if (s3_acl_from_req(r, owner, bo ? b.owner : NULL, acl, &given) != AIS_OK)
			return;
		if (!given) {
			s3_error(r, "MissingSecurityHeader", "Your request was missing a required header: x-amz-acl");
			return;
		}
		if (s3_acl_enforced_check(r, &b, acl) != AIS_OK)
			return;
	}
	if (r->key.len)
		object_set(r, acl);
	else
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
