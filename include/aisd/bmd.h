/*
 * bmd.h - bucket metadata: the cluster's buckets and their properties.
 *
 * A bmd_t is a versioned value like the cluster map (cmap.h): cluster uuid,
 * version (monotonic, >= 1), and the buckets sorted by name, each with its
 * properties. Every bmd_t in memory is valid: bucket names follow names.h
 * and are unique, properties are in range. The mutators (bmd_add,
 * bmd_remove, bmd_set_props) are for the primary gateway only, on its own
 * copy (bmd_clone); each bumps the version by one when it changes anything.
 * Other nodes decode what the primary pushes, check it with bmd_accept,
 * persist it (bmd_save) and swap it in. A bmd_t is not locked.
 *
 * Errors: AIS_ERR with errno and, where a buf_t err is given, one line:
 *   EINVAL bad argument or malformed JSON; EEXIST bucket exists / same
 *   version with other content; ENOENT no such bucket / no such file;
 *   ESTALE older version; EXDEV another cluster's uuid.
 */
#ifndef AISD_BMD_H
#define AISD_BMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"
#include "aisd/names.h"
#include "aisd/s3acl.h"
#include "aisd/store.h"

#define BMD_PROVIDER "ais" /* the only provider for now */
#define BMD_COPIES_MAX 32
#define BMD_BUCKETS_MAX 65536
#define BMD_REGION_MAX 32 /* an S3 LocationConstraint */
#define BMD_S3TAGS_MAX 2048 /* a bucket's S3 tags, URL-encoded */
#define BMD_S3LOCK_MAX 32   /* a bucket's S3 object lock configuration (bmd_s3lock_valid) */
/* bmd_props_t.s3pab: S3's four public access block settings */
enum {
	BMD_PAB_BLOCK_ACLS = 1 << 0,    /* BlockPublicAcls */
	BMD_PAB_IGNORE_ACLS = 1 << 1,   /* IgnorePublicAcls */
	BMD_PAB_BLOCK_POLICY = 1 << 2,  /* BlockPublicPolicy */
	BMD_PAB_RESTRICT = 1 << 3,      /* RestrictPublicBuckets */
	BMD_PAB_SET = 1 << 4,           /* a configuration exists (all four may be false) */
	BMD_PAB_ALL = (1 << 5) - 1,
};
#define BMD_EC_SLICES_MAX 32 /* ec.data_slices and ec.parity_slices: 1..this */
#define BMD_EC_LIMIT_DEFAULT (256 << 10) /* ec.objsize_limit */

/* Access bits: what clients may do with a bucket. */
enum {
	BMD_ACCESS_GET = 1 << 0,     /* GET object */
	BMD_ACCESS_HEAD = 1 << 1,    /* HEAD object, HEAD bucket */
	BMD_ACCESS_PUT = 1 << 2,     /* PUT object */
	BMD_ACCESS_DELETE = 1 << 3,  /* DELETE object */
	BMD_ACCESS_LIST = 1 << 4,    /* list objects */
	BMD_ACCESS_PATCH = 1 << 5,   /* set bucket properties */
	BMD_ACCESS_DESTROY = 1 << 6, /* destroy the bucket */
	BMD_ACCESS_ALL = (1 << 7) - 1,
};

/* A bucket's remote backend (src/backend): the bucket caches the bucket
 * `bucket` of the remote attached as `remote` (backend.h). provider ""
 * means none: a bucket of this cluster only. */
#define BMD_REMOTE_MAX 32
typedef struct bmd_backend {
	char provider[8];                      /* "", "s3" or "ais" */
	char remote[BMD_REMOTE_MAX + 1];       /* the remote's alias */
	char bucket[NAME_BUCKET_MAX + 1];      /* the bucket's name there */
	bool validate_warm_get;                /* HEAD the remote before a cached read */
	bool sync;                             /* remote deletions are reflected here */
} bmd_backend_t;

enum { BMD_HIST_OFF = 0, BMD_HIST_ENABLED = 1, BMD_HIST_SUSPENDED = 2 };
/* "off", "enabled", "suspended" */
const char *bmd_history_name(unsigned h);

typedef struct bmd_props {
	enum store_cksum cksum; /* checksum of new objects */
	bool mirror_enabled;
	uint32_t mirror_copies; /* 1..BMD_COPIES_MAX, kept when disabled */
	bool versioning;
	/* S3 versioning (olver.h): BMD_HIST_OFF (never enabled: one version
	 * per name, as without it), ENABLED (every write and delete keeps the
	 * previous version), SUSPENDED (versions kept stay; new writes are the
	 * "null" version). Never back to OFF, as on S3. set_props changes it. */
	uint8_t history;
	uint32_t access;    /* BMD_ACCESS_* bits */
	int64_t created_ns; /* set by bmd_add; never changed by set_props */
	/* The S3 LocationConstraint the bucket was created with ("": none,
	 * i.e. us-east-1); set by bmd_add, never changed by set_props. */
	char region[BMD_REGION_MAX + 1];
	/* The S3 owner: the user id of the key that created the bucket through
	 * S3 ("": none, a bucket made by the native API); set by bmd_add,
	 * never changed by set_props. */
	char s3owner[S3ACL_UID_MAX + 1];
	/* The S3 ACL in s3acl.h's text form, when s3acl_set (PutBucketAcl or
	 * x-amz-acl on CreateBucket); changed by set_props. */
	bool s3acl_set;
	char s3acl[S3ACL_TEXT_MAX + 1];
	/* The S3 bucket tags (PutBucketTagging) as a URL-encoded query string
	 * "k=v&k=v" (bytes 0x21..0x7e only; "": none); changed by set_props. */
	char s3tags[BMD_S3TAGS_MAX + 1];
	/* S3 object lock (olver.h): "" off, else "Enabled" with the default
	 * retention of new versions ":GOVERNANCE:Nd", ":COMPLIANCE:Ny" (N
	 * days or years) when there is one (bmd_s3lock_valid). Needs history
	 * ENABLED; once on, never off again and history never suspended, as
	 * on S3. Set by bmd_add (CreateBucket) or set_props. */
	char s3lock[BMD_S3LOCK_MAX + 1];
	/* The S3 public access block (PutPublicAccessBlock): BMD_PAB_* bits,
	 * BMD_PAB_SET once configured (0: none); changed by set_props. The
	 * bucket's policy and CORS rules are not properties: they live beside
	 * the entry (bmd_doc), so that an entry stays small. */
	uint8_t s3pab;

	/* --- remote backend (bmdbk.c): set by bmd_add or set-bprops --- */
	bmd_backend_t backend;

	/* --- erasure coding (ec.h): objects of ec_objsize_limit bytes or more
	 * are cut into ec_data data and ec_parity parity slices on distinct
	 * targets (the owner also keeps the whole object unless ec_no_whole);
	 * smaller ones get ec_parity + 1 full copies. Not with
	 * mirror_enabled. --- */
	bool ec_enabled;
	bool ec_no_whole;          /* ec.whole_copy=false: the slices only (1 + P/D per byte) */
	uint32_t ec_data;          /* 1..BMD_EC_SLICES_MAX, kept when disabled */
	uint32_t ec_parity;        /* 1..BMD_EC_SLICES_MAX, kept when disabled */
	uint64_t ec_objsize_limit; /* bytes */
} bmd_props_t;

typedef struct bmd_bucket {
	char name[NAME_BUCKET_MAX + 1];
	bmd_props_t props;
} bmd_bucket_t;

typedef struct bmd bmd_t;

/* A bucket's S3 documents: variable-size configurations (a policy, CORS
 * rules, ...) kept out of the bucket's entry, beside it, so that only the
 * buckets that have one pay for it, in memory and in the BMD's JSON (one
 * key per kind: "s3policy", "s3cors"), which is persisted and pushed with
 * the BMD. A new kind is a row of bmd.c's table (its JSON key, its
 * set-bprops key "s3":{KEY:TEXT}, its size limit and check) and an enum
 * value here; storage, encoding, clone, removal with the bucket and the
 * change through the primary come with it. */
typedef enum bmd_doc_kind {
	BMD_DOC_POLICY, /* s3policy.h text, at most S3POL_MAX bytes, valid for its bucket */
	BMD_DOC_CORS,   /* S3 CORS rules in canonical XML (src/s3/cors.c): BMD_S3CORS_MAX
			 * bytes of 0x20..0x7e */
	BMD_DOC_LIFECYCLE, /* S3 lifecycle rules in canonical JSON (s3lc.h): BMD_S3LC_MAX bytes */
	BMD_DOC_LOGGING, /* S3 server access logging: "MTIME_S " + canonical XML (src/s3/logcfg.c),
			  * BMD_S3LOGGING_MAX bytes of 0x20..0x7e */
	BMD_DOC_SSE,    /* S3 default encryption (PutBucketEncryption) in canonical XML
			 * (src/s3/ssecfg.c): BMD_S3SSE_MAX bytes of 0x20..0x7e */
	BMD_DOC_OWNERSHIP, /* S3 object ownership (PutBucketOwnershipControls): its
			    * ObjectOwnership name (s3acl_own_name), e.g. "BucketOwnerEnforced" */
	BMD_DOC_KINDS
} bmd_doc_kind_t;
#define BMD_S3CORS_MAX 65536 /* a bucket's CORS rules, canonical XML */
#define BMD_S3LC_MAX 262144  /* a bucket's lifecycle rules, canonical JSON */
#define BMD_S3LOGGING_MAX 4096 /* a bucket's logging configuration */
#define BMD_S3SSE_MAX 1024   /* a bucket's default encryption, canonical XML */
#define BMD_S3OWN_MAX 32     /* a bucket's object ownership name */

/* The kind's set-bprops key ("policy", "cors": "s3":{KEY:TEXT}, "" removes)
 * and the name users read ("policy", "CORS configuration"). */
const char *bmd_doc_key(bmd_doc_kind_t kind);
const char *bmd_doc_what(bmd_doc_kind_t kind);
/* The largest document of the kind the BMD keeps, in bytes. */
size_t bmd_doc_max(bmd_doc_kind_t kind);
/* A bucket's document of that kind, or NULL when it has none (or there is
 * no such bucket). Valid while b is. */
const char *bmd_doc(const bmd_t *b, bmd_doc_kind_t kind, const char *name, size_t len);
/* Sets (text, tlen: a valid document of the kind for the bucket) or
 * removes (text NULL) a bucket's document; the version goes up by one
 * when it changes. AIS_ERR with errno ENOENT (no bucket) or EINVAL (not
 * valid, too large) and err. */
int bmd_set_doc(bmd_t *b, bmd_doc_kind_t kind, const char *name, size_t len, const char *text, size_t tlen,
		buf_t *err);
/* The bucket's S3 policy (bmd_doc of BMD_DOC_POLICY). */
static inline const char *bmd_policy(const bmd_t *b, const char *name, size_t len)
{
	return bmd_doc(b, BMD_DOC_POLICY, name, len);
}
static inline int bmd_set_policy(bmd_t *b, const char *name, size_t len, const char *text, size_t tlen, buf_t *err)
{
	return bmd_set_doc(b, BMD_DOC_POLICY, name, len, text, tlen, err);
}

/* Defaults: xxhash, mirror off with 2 copies, versioning on, all access,
 * erasure coding off with 2 data, 2 parity slices, limit 256 KiB. */
void bmd_props_default(bmd_props_t *p);
/* AIS_OK if p is in range, else AIS_ERR (EINVAL, err). */
int bmd_props_check(const bmd_props_t *p, buf_t *err);
/* True if s can be a bucket's s3tags: at most BMD_S3TAGS_MAX bytes of
 * 0x21..0x7e. */
bool bmd_s3tags_valid(const char *s, size_t len);
/* True if s can be a bucket's s3lock: "", "Enabled", or
 * "Enabled:MODE:N(d|y)" with MODE GOVERNANCE or COMPLIANCE and N 1..36500
 * days or 1..100 years. Pure. */
bool bmd_s3lock_valid(const char *s, size_t len);
/* True if s is a LocationConstraint we keep: 1..BMD_REGION_MAX of
 * [A-Za-z0-9-], not starting or ending with '-' ("EU", "eu-west-1"). */
bool bmd_region_valid(const char *s, size_t len);

/* A new, empty BMD at version 1; NULL (EINVAL, err) for a bad uuid
 * (cmap_id_valid rules). */
bmd_t *bmd_new(const char *uuid, buf_t *err);
void bmd_free(bmd_t *b);
bmd_t *bmd_clone(const bmd_t *b);
bool bmd_equal(const bmd_t *a, const bmd_t *b);

const char *bmd_uuid(const bmd_t *b);
uint64_t bmd_version(const bmd_t *b);
/* Buckets by index 0..bmd_size()-1, in name order. */
size_t bmd_size(const bmd_t *b);
const bmd_bucket_t *bmd_bucket(const bmd_t *b, size_t i);
/* The bucket with this name, or NULL. */
const bmd_bucket_t *bmd_get(const bmd_t *b, const char *name, size_t len);

/*
 * Mutators, for the primary only; AIS_OK after a change (version + 1) or
 * when nothing had to change, else AIS_ERR with the BMD untouched.
 *  bmd_add: props NULL means defaults; created_ns 0 means now. EEXIST.
 *  bmd_remove: ENOENT.
 *  bmd_set_props: ENOENT; created_ns is kept from the bucket.
 */
int bmd_add(bmd_t *b, const char *name, size_t len, const bmd_props_t *props, buf_t *err);
int bmd_remove(bmd_t *b, const char *name, size_t len, buf_t *err);
int bmd_set_props(bmd_t *b, const char *name, size_t len, const bmd_props_t *props, buf_t *err);

/* One bucket's properties as AIStore-style JSON (the HEAD /v1/buckets/B
 * Ais-Bucket-Props header and `aisctl bucket props show`):
 * {"provider":"ais","checksum":{"type":T},"mirror":{"enabled":B,"copies":N},
 *  "versioning":{"enabled":B},"access":N,"created":NS,"ec":{"enabled":B,
 *  "data_slices":D,"parity_slices":P,"objsize_limit":N}[,"s3":{"region":R,
 *  "owner":ID,"acl":TEXT,"tags":"k=v&..","lock":S3LOCK}]} (each s3 field only when set) */
void bmd_props_encode(const bmd_props_t *p, buf_t *out);
/* Applies the value of a set-bprops request (AIStore's form, any subset of
 * the fields above but provider and created; access may also be "ro" or
 * "rw"; and "s3":{"acl":TEXT,"tags":"k=v&..","lock":S3LOCK}, s3acl.h's text form, the
 * S3 bucket tags URL-encoded, "" for none, and the object lock configuration:
 * a bucket with history enabled may turn it on, never off) to *p. The result is range checked; unknown fields and wrong types
 * are EINVAL with a message naming the field, and *p is then untouched.
 * The documents' keys ("s3":{"policy":TEXT,"cors":XML}) are only checked to
 * be strings: they are not properties, the caller applies them with
 * bmd_set_doc. */
struct json_t;
int bmd_props_patch(bmd_props_t *p, const struct json_t *value, buf_t *err);

/* Compact JSON, buckets in name order; deterministic:
 * {"uuid":..,"version":N,"buckets":[{"name","provider":"ais","checksum",
 *  "mirror":{"enabled","copies"},"versioning","access","created"
 *  [,"region"][,"s3owner"][,"s3acl"][,"s3tags"][,"s3lock"][,"s3pab"]
 *  [,"s3policy"][,"s3cors"][,"ec":{...}]},..]} (the optional keys only
 *  when set; ec when not the defaults; one key per document kind) */
void bmd_encode(const bmd_t *b, buf_t *out);
/* Strict, like cmap_decode: AIS_OK with *out (caller frees) or AIS_ERR
 * (EINVAL, *out NULL, err). */
int bmd_decode(const char *json, size_t len, bmd_t **out, buf_t *err);
/* Same rule and results as cmap_accept. */
int bmd_accept(const bmd_t *cur, const bmd_t *incoming, buf_t *err);

/* The backend block (bmdbk.c): ,"backend":{"provider","remote","bucket",
 * "validate_warm_get","sync"} appended to props or BMD JSON (nothing when
 * provider is ""); decode of that object (strict); the set-bprops group
 * "backend" applied to *bk (any subset of its keys; provider "" or "none"
 * removes it); the range check. AIS_OK or AIS_ERR (EINVAL, err). */
void bmd_backend_encode(const bmd_backend_t *bk, buf_t *out);
int bmd_backend_decode(const struct json_t *o, const char *what, bmd_backend_t *bk, buf_t *err);
int bmd_backend_patch(const struct json_t *g, bmd_backend_t *bk, buf_t *err);
int bmd_backend_check(const bmd_backend_t *bk, buf_t *err);

/* The erasure-coding block (bmdec.c): ,"ec":{"enabled","data_slices",
 * "parity_slices","objsize_limit"} appended to props JSON (always) or BMD
 * JSON (when not the defaults); strict decode; the set-bprops group "ec"
 * (any subset of its keys); the range check; whether two props lay out
 * objects differently (what may change only while a bucket is empty).
 * AIS_OK or AIS_ERR (EINVAL, err). */
void bmd_ec_encode(const bmd_props_t *p, bool always, buf_t *out);
int bmd_ec_decode(const struct json_t *o, const char *what, bmd_props_t *p, buf_t *err);
int bmd_ec_patch(const struct json_t *g, bmd_props_t *p, buf_t *err);
int bmd_ec_check(const bmd_props_t *p, buf_t *err);
bool bmd_ec_differs(const bmd_props_t *a, const bmd_props_t *b);

/* Persistence (persist.c), same contract as cmap_save / cmap_load. */
int bmd_save(const bmd_t *b, const char *path, buf_t *err);
int bmd_load(const char *path, bmd_t **out, buf_t *err);

#endif
