/*
 * ownop.c - a bucket's ownership controls: its row of the bucket documents
 * (s3_own_ops), by which docop.c serves ?ownershipControls
 * (Put/Get/DeleteBucketOwnershipControls; the XML: owncfg.c).
 *
 * Rules:
 *  1. The setting lives in the BMD beside the bucket's entry (bmd_doc
 *     BMD_DOC_OWNERSHIP: its ObjectOwnership name), changed through the
 *     primary like the other documents, or set with the bucket by
 *     CreateBucket's x-amz-object-ownership (bucket.c); every node reads
 *     it locally (s3_bucket_acl_get's own).
 *  2. What it changes is decided in access.c and nowhere else: the owner
 *     an object write records (s3_meta_acl_from_req), the ACLs a request
 *     may set (s3_acl_enforced_check) and, with BucketOwnerEnforced, the
 *     permissions ACLs give (the bucket owner's full control only: the
 *     bucket policy and grants decide for everyone else).
 *  3. BucketOwnerEnforced is refused (InvalidBucketAclWithObjectOwnership)
 *     while the bucket's ACL grants anything to anyone but its owner, as
 *     on S3; a bucket without controls behaves as ObjectWriter.
 */
#include <string.h>

#include "aisd/bmd.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

static int own_load(arena_t *a, const char *text, size_t n, void *c)
{
	(void)a;
	*(s3acl_own_t *)c = s3acl_own_parse(text, n);
	return *(s3acl_own_t *)c == S3ACL_OWN_NONE ? AIS_ERR : AIS_OK;
}

static int own_parse(s3_rq_t *r, const char *p, size_t n, void *out, const char **code, const char **why)
{
	s3acl_own_t *own = out;
	s3_bacl_t b;
	if (s3_owncfg_parse(p, n, own, why) != AIS_OK)
		return AIS_ERR;
	if (*own == S3ACL_OWN_OWNER_ENFORCED && s3_bucket_acl_get(r, r->bucket, &b) == AIS_OK && b.acl_set &&
	    !s3acl_owner_only(&b.acl, b.owner)) { /* rule 3 */
		*code = "InvalidBucketAclWithObjectOwnership";
		*why = "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting";
		return AIS_ERR;
	}
	return AIS_OK;
}

static void own_canonical(const void *c, buf_t *b) { buf_addstr(b, s3acl_own_name(*(const s3acl_own_t *)c)); }

static void own_answer(const void *c, buf_t *b)
{
	buf_addstr(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	s3_owncfg_xml(*(const s3acl_own_t *)c, b);
}

static bool own_none(const void *c) { return *(const s3acl_own_t *)c == S3ACL_OWN_NONE; }

const s3_doc_ops_t s3_own_ops = {
	.kind = BMD_DOC_OWNERSHIP,
	.size = sizeof(s3acl_own_t),
	.none_code = "OwnershipControlsNotFoundError",
	.none_msg = "The bucket ownership controls were not found",
	.load = own_load,
	.parse = own_parse,
	.canonical = own_canonical,
	.answer = own_answer,
	.none = own_none,
};
