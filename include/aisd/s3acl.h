/*
 * s3acl.h - S3 access control lists as values: grants, their compact text
 * form (kept in the BMD for buckets and in custom metadata for objects),
 * canned ACLs, x-amz-grant-* headers, and the permissions a requester gets.
 *
 * Pure: no I/O, no daemon header, no key table (the caller checks that
 * user ids name known keys). The bmd library uses it to check the text it
 * stores.
 *
 * Text form: grants separated by ':' (user ids never contain ':'), each
 * one kind letter, one permission letter and, for a user, the user id:
 *   kinds  u user (canonical id), a AllUsers, t AuthenticatedUsers,
 *          l LogDelivery;
 *   perms  F FULL_CONTROL, R READ, W WRITE, A READ_ACP, C WRITE_ACP.
 *   "uFtestid:aR" = the owner testid has full control, everyone may read.
 * The empty text is an ACL without grants.
 */
#ifndef AISD_S3ACL_H
#define AISD_S3ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"

#define S3ACL_GRANTS_MAX 32   /* S3 allows 100; a bucket's props keep fewer */
#define S3ACL_UID_MAX 128     /* as an s3.key user id */
#define S3ACL_TEXT_MAX 1024   /* the longest text form */

/* Permission bits; FULL_CONTROL is all four. */
enum {
	S3ACL_READ = 1 << 0,
	S3ACL_WRITE = 1 << 1,
	S3ACL_READ_ACP = 1 << 2,
	S3ACL_WRITE_ACP = 1 << 3,
	S3ACL_FULL = (1 << 4) - 1,
};

enum s3acl_kind { S3ACL_USER = 'u', S3ACL_ALL = 'a', S3ACL_AUTHED = 't', S3ACL_LOGS = 'l' };

typedef struct s3acl_grant {
	char kind;     /* enum s3acl_kind */
	unsigned perm; /* one of S3ACL_READ .. S3ACL_FULL */
	char id[S3ACL_UID_MAX + 1]; /* S3ACL_USER only */
} s3acl_grant_t;

typedef struct s3acl {
	size_t n;
	s3acl_grant_t g[S3ACL_GRANTS_MAX];
} s3acl_t;

/* Decodes the text form. AIS_OK, or AIS_ERR (malformed, too many grants). */
int s3acl_decode(const char *text, size_t len, s3acl_t *out);
/* True if text is a well-formed text form of at most S3ACL_TEXT_MAX bytes. */
bool s3acl_text_valid(const char *text, size_t len);
/* Appends the text form; AIS_ERR when it would exceed S3ACL_TEXT_MAX. */
int s3acl_encode(const s3acl_t *a, buf_t *out);
/* Adds a grant (a user's id checked for length and ':' only). AIS_ERR: full
 * or a bad id. */
int s3acl_add(s3acl_t *a, char kind, unsigned perm, const char *id, size_t idlen);

/* A canned ACL by its x-amz-acl name: private, public-read,
 * public-read-write, authenticated-read, bucket-owner-read,
 * bucket-owner-full-control, log-delivery-write. owner is the resource's
 * owner; bucket_owner the bucket's (objects; NULL for a bucket). AIS_ERR:
 * an unknown name. */
int s3acl_canned(const char *name, size_t len, const char *owner, const char *bucket_owner, s3acl_t *out);

/* S3 permission names: "FULL_CONTROL" ... and back (0 if unknown). */
const char *s3acl_perm_name(unsigned perm);
unsigned s3acl_perm_parse(const char *s, size_t len);
/* The group URIs (http://acs.amazonaws.com/groups/...); 0 if unknown. */
const char *s3acl_group_uri(char kind);
char s3acl_group_parse(const char *uri, size_t len);

/* One x-amz-grant-* header value ('id="..", uri="..", emailAddress=".."'),
 * each grantee added to a with perm. AIS_OK; AIS_ERR malformed or full;
 * *email set (and AIS_ERR) when a grantee is an e-mail address. */
int s3acl_parse_grant_header(const char *v, size_t len, unsigned perm, s3acl_t *a, bool *email);

/* The permissions a requester has from the grants: uid NULL is anonymous
 * (AllUsers only); groups_only ignores user grants and AuthenticatedUsers
 * counts for any uid. */
unsigned s3acl_perms(const s3acl_t *a, const char *uid, bool groups_only);
/* True if a gives uid FULL_CONTROL and nothing else to anyone. */
bool s3acl_owner_only(const s3acl_t *a, const char *uid);

/* A bucket's object ownership (S3's ObjectOwnership, kept by its name):
 * who owns an object written to it and whether ACLs count at all.
 *   OBJECT_WRITER   the writer owns it (also a bucket without controls);
 *   OWNER_PREFERRED the bucket owner when written with x-amz-acl
 *                   bucket-owner-full-control, else the writer;
 *   OWNER_ENFORCED  ACLs are disabled: the bucket owner owns every
 *                   object, only policies and grants decide. */
typedef enum s3acl_own {
	S3ACL_OWN_NONE, /* no ownership controls: as OBJECT_WRITER */
	S3ACL_OWN_OBJECT_WRITER,
	S3ACL_OWN_OWNER_PREFERRED,
	S3ACL_OWN_OWNER_ENFORCED,
} s3acl_own_t;
/* "ObjectWriter", "BucketOwnerPreferred", "BucketOwnerEnforced" into their
 * value; S3ACL_OWN_NONE for any other text. */
s3acl_own_t s3acl_own_parse(const char *s, size_t len);
/* The S3 name of a value other than NONE ("" for NONE). */
const char *s3acl_own_name(s3acl_own_t own);

#endif
