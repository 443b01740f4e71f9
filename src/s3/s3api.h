/*
 * s3api.h - what the S3 API files of src/s3 share (the SigV4 layer and ACL values are src/s3auth). Not for use outside src/s3.
 */
#ifndef AISD_S3API_H
#define AISD_S3API_H

#include <stdbool.h>
#include <stdint.h>

#include "aisd/authz.h"
#include "aisd/buf.h"
#include "aisd/cluster.h"
#include "aisd/conf.h"
#include "aisd/http.h"
#include "aisd/ol.h"
#include "aisd/olver.h"
#include "aisd/s3.h"
#include "aisd/s3acl.h"
#include "aisd/s3auth.h"
#include "aisd/sse.h"
#include "aisd/store.h"

#define S3_MAX_KEYS 1000
#define S3_MAX_BUCKETS 10000 /* ListBuckets' largest page (max-buckets) */
#define S3_XML_BODY_MAX (1u << 20) /* Delete, Complete, CreateBucket bodies */
#define S3_MIN_PART (5ull << 20)
#define S3_MAX_PARTS 10000
#define S3_META_MAX 2048 /* x-amz-meta-* names (without the prefix) + values */

/* The node serving the request. */
typedef struct s3_node {
	const conf_t *conf;
	cluster_t *cl;  /* NULL: a standalone target */
	store_t *store; /* NULL on a gateway */
	bool gateway;
} s3_node_t;

/* One S3 request, as parsed from the HTTP request. */
typedef struct s3_rq {
	http_req_t *http;
	s3_node_t node;
	sv_t bucket;   /* decoded; empty: the service (ListBuckets) */
	sv_t key;      /* decoded; empty: a bucket request */
	sv_t vid;      /* a request on one version: its versionId (s3_version_select); ptr NULL: none */
	sv_t vkey;     /* ... read under its kept name: the key itself (s3_key_named) */
	bool vcur;     /* ... then read as the key's current version */
	sv_t resource; /* "/bucket/key" for error documents */
	sv_t vhost;    /* the bucket as Host names it (virtual-hosted), raw; else empty */
	void *op;      /* the operation's own state */
	s3_req_t areq; /* the request as SigV4 sees it */
	s3_auth_t auth; /* who signed it and how the body is signed */
	ol_where_t *where; /* an object request on a target: its holders (ol_where) */
	/* The resources the request touches (s3_declare): S3_RES_NAMED, the
	 * bucket or object it names, and S3_RES_SOURCE, a copy's source; one
	 * decision (authz_decide) over all of them. An object's ACL is read
	 * by the handler that reads its metadata (s3_decide_object). */
	authz_res_t res[2];
	size_t nres;
	/* Resource i's handler reads its object's S3 metadata and decides it
	 * again with it (s3_decide_object): a policy on the object's tags or
	 * on a tag set in the body waits for them (AUTHZ_POL_LATER). */
	bool meta_later[2];
	/* The tag set a PutObjectTagging body sets (s3:RequestObjectTag/ of the
	 * policy, policy.c); NULL: the x-amz-tagging header's. */
	const struct s3_tags *req_tags;
	struct s3_post *post; /* a browser POST upload's form (post.c); NULL: none */
	struct logctx *log;   /* its server access log record to be (logging.c); NULL: none */
} s3_rq_t;
enum { S3_RES_NAMED, S3_RES_SOURCE };

/* Starts blocking work that, in a cluster, calls other nodes (fan-outs,
 * forwarded deletes, copies, bucket changes through the primary): there on
 * the network pool, on a standalone target on the I/O pool. */
static inline void s3_offload(s3_rq_t *r, http_work_fn work, http_work_fn done)
{
	(r->node.cl ? http_offload_net : http_offload)(r->http, work, done);
}

/* The node's S3 authentication settings (s3_init). */
extern s3_authcfg_t s3_cfg;
/* A body decoder for r (aws-chunked, payload hash, Content-MD5,
 * x-amz-checksum-*); NULL after answering the error. */
s3_body_t *s3_body_for(s3_rq_t *r);
/* Answers a SigV4 layer error. */
void s3_error_auth(s3_rq_t *r, const s3_autherr_t *e);

/* --- errors.c --- */
/* Answers with S3's XML error document; the status comes from the code.
 * msg may be NULL (the code's standard message). */
void s3_error(s3_rq_t *r, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same with an explicit status (codes S3 uses with several). */
void s3_error_status(s3_rq_t *r, int status, const char *code, const char *msg);
/* Answers the S3 error of errno (ais_errno: NoSuchKey or NoSuchBucket,
 * InsufficientStorage, ...). */
void s3_error_errno(s3_rq_t *r, int err, bool object);
/* The same with msg (when not empty) after the phrase in the Message. */
void s3_error_msg(s3_rq_t *r, int err, bool object, const char *msg);
/* The same for a failed read of an object (ais_errno_read), msg (when not
 * empty) saying why. */
void s3_error_read(s3_rq_t *r, int err, const char *msg);
int s3_error_http_status(const char *code);
/* <tag><ID/><DisplayName/></tag> of the request's user: the signing key's
 * user id and display name (anonymous with auth off: the first key's). */
void s3_owner_xml(const s3_rq_t *r, buf_t *b, const char *tag);
/* The same for the user uid recorded with a resource (its display name
 * from the keys); NULL or "": made anonymously (with s3.auth off), shown
 * as the first key's user. */
void s3_user_xml(buf_t *b, const char *tag, const char *uid);
/* Headers every S3 answer carries. */
void s3_common_headers(s3_rq_t *r);
/* XML success body with the right content type. Takes b's memory. */
void s3_send_xml(s3_rq_t *r, int status, buf_t *b);

/* --- xml.c: a writer and a pure parser --- */
void s3_xml_head(buf_t *b, const char *root); /* <?xml ...?><root xmlns=...> */
void s3_xml_open(buf_t *b, const char *tag);
void s3_xml_close(buf_t *b, const char *tag);
void s3_xml_text(buf_t *b, const char *s, size_t n); /* escaped */
void s3_xml_elem(buf_t *b, const char *tag, const char *s, size_t n);
/* The same, s percent-encoded first when url_enc (a listing's
 * encoding-type=url; '/' kept when keep_slash). */
void s3_xml_elem_enc(buf_t *b, const char *tag, const char *s, size_t n, bool url_enc, bool keep_slash);
void s3_xml_elemstr(buf_t *b, const char *tag, const char *s);
void s3_xml_elemf(buf_t *b, const char *tag, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Pure parser: calls fn at the end of every element with its path
 * ("Delete/Object/Key", namespace prefixes dropped) and its text (the
 * element's own character data, not its children's). Returns AIS_OK, or
 * AIS_ERR for malformed XML, a DOCTYPE, or nesting deeper than 16; fn may
 * return AIS_ERR to stop. */
typedef int (*s3_xml_fn)(void *arg, const char *path, const char *text, size_t len);
int s3_xml_parse(const char *p, size_t n, s3_xml_fn fn, void *arg);

/* The request bodies (pure; names and keys point into arena memory). */
typedef struct s3_delete_req {
	bool quiet;
	size_t n;
	struct s3_del_obj {
		char *key;
		size_t len;
		sv_t vid; /* VersionId; ptr NULL when none */
	} *objs; /* at most S3_MAX_KEYS + 1 kept; n counts all */
} s3_delete_req_t;
/* PutBucketVersioning's body: status 0 (none given), 1 Enabled, 2
 * Suspended; mfa when MfaDelete is Enabled. AIS_ERR: malformed. */
typedef struct s3_versioning_req {
	unsigned status;
	bool mfa;
} s3_versioning_req_t;
int s3_parse_versioning(const char *p, size_t n, s3_versioning_req_t *out);
int s3_parse_delete(arena_t *a, const char *p, size_t n, s3_delete_req_t *out);
typedef struct s3_complete_req {
	size_t n;
	struct s3_part_ref {
		uint64_t num;
		char etag[33]; /* lower-case hex; "" if not 32 hex digits */
		char ck[48];   /* <ChecksumALG> as given (base64); "" if none */
	} *parts;
} s3_complete_req_t;
int s3_parse_complete(arena_t *a, const char *p, size_t n, s3_complete_req_t *out);
/* <CreateBucketConfiguration><LocationConstraint>: *loc empty if none;
 * *other: the first other child element's name (<Location>, <Bucket>,
 * <Tags>: features aisd lacks), NULL if none. */
int s3_parse_create_bucket(arena_t *a, const char *p, size_t n, sv_t *loc, const char **other);
/* <AccessControlPolicy>: the owner's ID ("" if none) and the grants
 * (ids not checked against the keys). AIS_ERR: malformed, an unknown
 * group or permission, too many grants, or an e-mail grantee (email). */
typedef struct s3_acl_req {
	char owner[S3ACL_UID_MAX + 1];
	s3acl_t acl;
	bool email;
} s3_acl_req_t;
int s3_parse_acl(const char *p, size_t n, s3_acl_req_t *out);

/* --- tagging.c: tag sets and ?tagging of objects --- */
#define S3_OBJECT_TAGS_MAX 10
#define S3_BUCKET_TAGS_MAX 50
#define S3_TAG_KEY_MAX 128   /* characters */
#define S3_TAG_VALUE_MAX 256 /* characters */
typedef struct s3_tags {
	size_t n; /* tags given; at most ARRAY_SIZE(t) kept */
	struct s3_tag {
		char *key, *value;
	} t[S3_BUCKET_TAGS_MAX];
} s3_tags_t;
/* Pure: the tags of "k1=v1&k2&..." (percent-encoded, '+' a space; a key
 * without '=' has the empty value). AIS_ERR: a malformed escape. */
int s3_tags_from_query(arena_t *a, sv_t q, s3_tags_t *out);
/* Pure: the tags of a <Tagging><TagSet><Tag><Key/><Value/></Tag>...
 * document. AIS_ERR: malformed, or not that document. */
int s3_tags_from_xml(arena_t *a, const char *p, size_t n, s3_tags_t *out);
/* S3's limits (max tags, key and value lengths, no duplicate key, no
 * "aws:" prefix, no control characters): NULL when t is fine (then sorted
 * by key), else the message of S3's InvalidTag. */
const char *s3_tags_check(s3_tags_t *t, size_t max);
/* <Tagging><TagSet>...: GetObjectTagging's and GetBucketTagging's answer. */
void s3_tags_xml(const s3_tags_t *t, buf_t *b);
/* The x-amz-tagging header's tags (none when absent); AIS_ERR after
 * answering (InvalidArgument, InvalidTag). */
int s3_tags_from_req(s3_rq_t *r, s3_tags_t *out);
/* GET, PUT, DELETE ?tagging of an object, on its owner (reads: a holder). */
int s3_object_tagging(s3_rq_t *r);

/* --- meta.c: S3 metadata in the object's custom metadata --- */
typedef struct s3_meta {
	char etag[80];   /* hex, or hex-N for multipart; no quotes */
	char *ctype, *cenc, *cdisp, *cctl, *expires, *clang;
	char *owner, *acl; /* S3 owner's user id and ACL text (s3acl.h); NULL: none */
	char *mpu;         /* the multipart upload that made the object; NULL: none */
	char *ck;          /* the x-amz-checksum-* the client's write was verified with:
			      "ALG:BASE64[:TYPE]" (ALG crc32, crc32c, crc64nvme, sha1, sha256;
			      BASE64 with a "-N" for a composite; TYPE FULL_OBJECT (default)
			      or COMPOSITE); NULL: none ("s3.ck") */
	size_t nuser;
	struct {
		char *name, *value;
	} user[64]; /* x-amz-meta-NAME (name lower-case, without the prefix) */
	s3_tags_t tags; /* the object's tags ("s3.t.KEY"), sorted by key */
	char *parts;    /* a multipart object's part numbers and sizes ("s3.ps", s3_part_range); NULL: none */
	char *pcks;     /* a COMPOSITE multipart object's part checksums (ck's algorithm), base64 in part
			   order joined by '.' ("s3.pck", s3_part_ck); NULL: not kept (none, or no room) */
	char *sse;      /* server-side encryption record ("s3.sse", sse.c); NULL: stored as sent */
	/* S3 object lock of the version (objlock.c; olver.h's OLVER_LOCK_*
	 * items, which the object layer enforces): the retention's mode
	 * (GOVERNANCE, COMPLIANCE) and its end (Unix seconds, decimal), a legal
	 * hold "1" (ON) or "0" (OFF, as set); NULL: none */
	char *lock_mode, *lock_until, *lock_hold;
	/* the items of custom that are not S3's ("ver.id", ...), as they were:
	 * kept by a change of the S3 metadata (s3_meta_set); NULL: none */
	char *other;
} s3_meta_t;
/* From request headers (PUT, CreateMultipartUpload, Copy REPLACE),
 * with the owner and ACL of s3_meta_acl_from_req.
 * Returns AIS_OK, or AIS_ERR after answering. */
int s3_meta_from_req(s3_rq_t *r, s3_meta_t *m);
/* Encodes into "k=v,..." (values percent-encoded); AIS_ERR when longer
 * than the store allows. */
int s3_meta_encode(const s3_meta_t *m, buf_t *out);
/* Decodes custom into arena memory; unknown keys are ignored. */
void s3_meta_decode(arena_t *a, const char *custom, s3_meta_t *m);
/* Pure: the byte range of part number num of a multipart object whose
 * parts are ps ("[N:]SIZE*COUNT+...": runs of COUNT parts of SIZE bytes
 * in order, numbered on from the previous run, or from N), and its part
 * count. AIS_OK; AIS_DONE: no part has that number (*count set);
 * AIS_ERR: ps malformed. */
int s3_part_range(const char *ps, uint32_t num, uint64_t *start, uint64_t *len, uint32_t *count);
/* The checksum of the object's ord-th part (0: the first) of m->pcks:
 * true with it in *out; false: not kept. */
bool s3_part_ck(const s3_meta_t *m, uint32_t ord, sv_t *out);
/* The S3 metadata of the object named (?tagging, ?acl), or of the version
 * ?versionId names (s3_version_select), through the object layer (ol_open:
 * a holder that lacks its copy fetches it first); then calls then(...,
 * arg) on the loop. Answers the error itself: missing (NoSuchKey,
 * NoSuchVersion), a delete marker (405), or the object's ACL refuses it.
 * r->op is its own until then runs. */
typedef void (*s3_meta_fn)(s3_rq_t *r, store_meta_t *sm, s3_meta_t *m, void *arg);
void s3_meta_fetch(s3_rq_t *r, s3_meta_fn then, void *arg);
/* Sets m as the S3 metadata of the object (or the version) s3_meta_fetch
 * read, on every copy (ol_set_custom, on the network pool in a cluster) if
 * it is still version, and answers status with an empty body and its
 * x-amz-version-id; what names the change in errors ("the ACL", "tags"). */
void s3_meta_set(s3_rq_t *r, uint64_t version, const s3_meta_t *m, int status, const char *what);
/* Only the S3 owner's user id of custom into out ("" when none). */
void s3_meta_owner(const char *custom, char *out, size_t outsz);
/* The ETag of an object (quoted), from its S3 metadata or its checksum. */
void s3_etag_of(const store_meta_t *sm, const s3_meta_t *m, char *out, size_t outsz);
/* Response headers: ETag, Last-Modified, Content-Type and the others. */
void s3_meta_headers(s3_rq_t *r, const store_meta_t *sm, const s3_meta_t *m);
/* The parts of m->ck: its algorithm (s3_ck_by_name), base64 value and
 * type ("FULL_OBJECT" or "COMPOSITE"); false when there is none. */
bool s3_meta_ck(const s3_meta_t *m, sv_t *alg, sv_t *value, const char **type);
/* A multipart upload's metadata: the algorithm it was created with
 * ("ALG::TYPE", the value computed at Complete) and its type; S3_CK_NONE
 * when none. */
enum s3_ck s3_meta_ck_pending(const s3_meta_t *m, const char **type);
/* x-amz-checksum-ALG and x-amz-checksum-type of m, when it has a checksum
 * and the request asked for it (x-amz-checksum-mode: ENABLED). */
void s3_ck_headers(s3_rq_t *r, const s3_meta_t *m);

/* --- access.c: S3 ACLs applied (rules at the top of access.c) --- */
/* The user id a request acts as; NULL: anonymous. */
const char *s3_requester(const s3_rq_t *r);
/* A configured key's display name by user id; NULL: no such user. */
const char *s3_user_name(const char *uid);
typedef struct s3_bacl {
	bool owned;   /* the bucket has an S3 owner */
	char owner[S3ACL_UID_MAX + 1]; /* its owner, else the first key's user */
	bool acl_set;
	s3acl_t acl;
	unsigned pab;       /* its public access block (bmd.h BMD_PAB_*) */
	const char *policy; /* its policy (the request's arena), or NULL */
	s3acl_own_t own;    /* its object ownership (BMD_DOC_OWNERSHIP) */
} s3_bacl_t;
/* A bucket's owner and ACL (with BucketOwnerEnforced: its owner's full
 * control, whatever it was set to before); AIS_ERR: no such bucket. */
int s3_bucket_acl_get(s3_rq_t *r, sv_t bucket, s3_bacl_t *out);
/* The bucket's ACL, or the private one of its owner when it has none. */
void s3_bucket_acl_effective(const s3_bacl_t *b, s3acl_t *out);
unsigned s3_bucket_perms(const s3_rq_t *r, const s3_bacl_t *b);
/* m NULL or without an owner: the bucket's permissions. */
unsigned s3_object_perms(const s3_rq_t *r, const s3_bacl_t *b, const s3_meta_t *m);
/* The request's principal for authz_decide: a signer's user (auth.grant),
 * anonymous, or with s3.auth off the first key's user. */
void s3_who(const s3_rq_t *r, authz_who_t *who);
/* Decides over r->res (authz_decide) with the bucket ACLs filled in;
 * AIS_OK (allowed, or waiting for an object's ACL), else AIS_ERR after
 * answering (AccessDenied; NoSuchBucket for an anonymous request to a
 * missing bucket). A missing bucket is left to the handler for a signed
 * request. */
int s3_decide(s3_rq_t *r);
/* Resource i (S3_RES_*) is the object whose S3 metadata is m: fills its
 * ACL in and decides again. AIS_OK or AIS_ERR; answers nothing (a pool
 * thread may call it). */
int s3_decide_object(s3_rq_t *r, size_t i, const s3_meta_t *m);
/* The same, answering AccessDenied on AIS_ERR. */
int s3_access_object(s3_rq_t *r, size_t i, const s3_meta_t *m);
/* Resource i's object is missing: AIS_ERR (AccessDenied) unless the
 * requester may list its bucket (then NoSuchKey is fine: READ by the ACL,
 * its own list permission, or the policy's s3:ListBucket with the key as
 * s3:prefix, one decision) or was let in already (no object ACL to wait for). */
int s3_decide_missing(s3_rq_t *r, size_t i);
/* The same, answering AccessDenied on AIS_ERR, for the named object. */
int s3_access_missing(s3_rq_t *r);
/* One key of DeleteObjects (the bucket was decided by s3_decide): the
 * bucket's resource as that key, asked of the bucket policy with
 * s3:DeleteObject (s3:DeleteObjectVersion with version) and decided
 * again. AIS_OK, or AIS_ERR (that key is AccessDenied). Any thread. */
int s3_decide_key(s3_rq_t *r, sv_t key, bool version);
/* The ACL the request sets (x-amz-acl or x-amz-grant-*; else private of
 * owner) into out; *given says whether the request named one. AIS_ERR
 * after answering (both forms, unknown canned ACL, unknown user, e-mail
 * grantee, anonymous, a group grant without admin under auth.enabled). */
int s3_acl_from_req(s3_rq_t *r, const char *owner, const char *bucket_owner, s3acl_t *out, bool *given);
/* Checks a's user grants name configured keys and its group grants are
 * allowed (auth.enabled: admin); AIS_ERR after answering. */
int s3_acl_check_users(s3_rq_t *r, const s3acl_t *a);
/* With BucketOwnerEnforced ACLs are disabled: a request may set only an
 * ACL that gives the bucket owner full control and nothing else, named as
 * x-amz-acl bucket-owner-full-control or as grants (acl: what the request
 * sets). AIS_OK (also for any other ownership), or AIS_ERR after
 * answering 400 AccessControlListNotSupported. */
int s3_acl_enforced_check(s3_rq_t *r, const s3_bacl_t *b, const s3acl_t *acl);
/* Sets m->owner (the requester) and m->acl from the request; anonymous:
 * none. AIS_ERR after answering. */
int s3_meta_acl_from_req(s3_rq_t *r, s3_meta_t *m);
/* The AccessControlPolicy document. */
void s3_acl_xml(const char *owner, const s3acl_t *a, buf_t *b);

/* --- policy.c: bucket policies and public access blocks --- */
/* A node that forwards an S3 request (proxy.c) tells the serving target
 * who the client is: "ADDR TLS" (TLS 0 or 1). A node header (authz.h):
 * with cluster.secret believed only under the relay's signature, without
 * it only from a node's address; dropped from anyone else before the
 * request reaches S3. */
#define S3_CLIENT_HDR AUTHZ_HDR_S3_CLIENT
/* The client's address and whether it used TLS (see S3_CLIENT_HDR). */
void s3_client(s3_rq_t *r, char *addr, size_t addrsz, bool *tls);
/* The S3 action ("s3:GetObject") resource i of r asks for. */
const char *s3_action(s3_rq_t *r, size_t i);
/* The bucket policy's verdict (authz.h AUTHZ_POL_*) on resource x of r
 * asking action, its bucket b (policy, owner, public access block) and,
 * for an object whose metadata was read, m (s3:ExistingObjectTag/; NULL:
 * not read yet: a policy on the object's tags or on the request's
 * (s3:RequestObjectTag/) answers AUTHZ_POL_LATER when later_ok, the
 * caller deciding again with m). prefix: s3:prefix as the caller states
 * it (a missing key's name); ptr NULL: the request's query. */
unsigned s3_policy_verdict(s3_rq_t *r, const authz_res_t *x, const char *action, const s3_bacl_t *b,
			   const s3_meta_t *m, sv_t prefix, bool later_ok);
/* ?policy (GET, PUT, DELETE), ?policyStatus (GET), ?publicAccessBlock
 * (GET, PUT, DELETE) of a bucket. */
int s3_bucket_policy(s3_rq_t *r);
int s3_bucket_policy_status(s3_rq_t *r);
int s3_bucket_pab(s3_rq_t *r);

/* --- aclop.c: GET and PUT ?acl on buckets and objects --- */
int s3_acl_get(s3_rq_t *r);
int s3_acl_put(s3_rq_t *r);

/* --- bucket.c --- */
int s3_service(s3_rq_t *r);     /* GET / */
int s3_bucket(s3_rq_t *r);      /* /BUCKET */
bool s3_bucket_exists(s3_rq_t *r);
bool s3_bucket_name_valid(sv_t name); /* S3's rules for new buckets */
/* GET, PUT, DELETE ?tagging of a bucket (its tags live in the BMD,
 * props.s3tags, changed through the primary like its ACL). */
int s3_bucket_tagging(s3_rq_t *r);
/* PutBucketAcl's change: the BMD through the primary; answers 200. */
void s3_bucket_set_acl(s3_rq_t *r, const s3acl_t *acl);
/* PutObjectLockConfiguration's change: props.s3lock through the primary. */
void s3_bucket_set_lock(s3_rq_t *r, const char *conf);
/* The change of a bucket's document (bmd_doc: Put/DeleteBucketPolicy,
 * Put/DeleteBucketCors; text NULL: remove) and Put/Delete
 * PublicAccessBlock's (props.s3pab) through the primary; answer status. */
void s3_bucket_set_doc(s3_rq_t *r, bmd_doc_kind_t kind, const char *text, int status);
void s3_bucket_set_pab(s3_rq_t *r, unsigned pab, int status);
/* PutBucketVersioning's change: props.history through the primary. */
void s3_bucket_set_history(s3_rq_t *r, unsigned history);

/* --- versions.c: S3 versioning over the object layer's versions (olver.h) --- */
/* The bucket's history (bmd.h BMD_HIST_*): OFF when unknown. */
unsigned s3_history(s3_rq_t *r);
/* GET/PUT /bucket?versioning. */
int s3_versioning(s3_rq_t *r);
/* ListObjectVersions of a bucket whose history is not off. */
int s3_list_versions(s3_rq_t *r);
/* x-amz-version-id for an object's custom metadata, when it has one; of a
 * write (PUT, copy, POST) only a version id that is not null, as S3 (a
 * write into a suspended bucket answers none). */
void s3_version_header(s3_rq_t *r, const char *custom, bool write);
/* ?versionId=ID of a request on one version (GET, HEAD, GetObjectAttributes,
 * ?acl, ?tagging): r->key becomes the stored name of that version
 * (olver_resolve: the key itself for the current one, else its kept name;
 * r->vid set, and r->vkey to the key when the name is a kept one), so the
 * open reads it and a metadata change (s3_meta_set) writes it. Without
 * versionId, or versionId=null on a bucket never versioned: the key, as
 * it is. AIS_ERR after answering: a bad id or one on a bucket never
 * versioned (400 InvalidArgument), an unknown one (404 NoSuchVersion), a
 * delete marker (405 MethodNotAllowed, as S3). */
int s3_version_select(s3_rq_t *r);
/* An open of the version s3_version_select chose failed with err: when
 * the version is not kept under its own name, opens the key's current
 * object instead (flags, then cb with r: this holder may have no whole
 * copy of the kept one, olver.h) and returns true; a version still
 * missing answers NoSuchVersion and returns true. false: no version
 * asked, or another error (the caller answers). */
bool s3_version_missing(s3_rq_t *r, int err, unsigned flags, ol_open_fn cb);
/* The object opened for a version (sm): the one asked for, and not a
 * delete marker. AIS_ERR after closing fd and answering (NoSuchVersion,
 * or 405 MethodNotAllowed for a marker, as S3). */
int s3_version_opened(s3_rq_t *r, int fd, const store_meta_t *sm);
/* The key the client named: r->key, or the key itself when
 * s3_version_select made r->key a kept version's stored name. */
static inline sv_t s3_key_named(const s3_rq_t *r) { return r->vkey.ptr ? r->vkey : r->key; }

/* --- objlock.c: S3 object lock (the object layer enforces it: olver.c rule 8) --- */
/* The bucket's object lock configuration (bmd.h props.s3lock) into out
 * (when not NULL); true when the bucket has object lock. */
bool s3_bucket_lock_conf(s3_rq_t *r, char *out, size_t outsz);
/* GET/PUT /bucket?object-lock. */
int s3_bucket_lock(s3_rq_t *r);
/* GET/PUT ?retention and ?legal-hold of an object (versionId too). */
int s3_object_retention(s3_rq_t *r);
int s3_object_legal_hold(s3_rq_t *r);
/* The x-amz-object-lock-* headers of PutObject, CopyObject and
 * CreateMultipartUpload, else the bucket's default retention, into m's
 * lock fields (cleared first). AIS_ERR after answering (InvalidArgument,
 * InvalidRequest: the bucket has no object lock). */
int s3_lock_from_req(s3_rq_t *r, s3_meta_t *m);
/* x-amz-object-lock-mode, -retain-until-date and -legal-hold of m. */
void s3_lock_headers(s3_rq_t *r, const s3_meta_t *m);
/* Does the request carry x-amz-bypass-governance-retention: true? (The
 * permission it needs, the bucket's admin, was decided with the request:
 * s3_declare.) */
bool s3_lock_bypass(const s3_rq_t *r);
/* Pure: an ISO 8601 date-time ("2030-01-01T00:00:00Z", fractions and
 * "+HH:MM" offsets too) into Unix seconds (fractions dropped). AIS_ERR:
 * malformed. */
int s3_time_parse_iso(const char *s, size_t len, int64_t *out);
/* Pure: PutObjectLockConfiguration's body into a props.s3lock value
 * (bmd_s3lock_valid), out of at least BMD_S3LOCK_MAX + 1 bytes. NULL, or
 * the S3 error code: MalformedXML, InvalidRetentionPeriod. */
const char *s3_parse_lock_conf(const char *p, size_t n, char *out, size_t outsz);

/* --- list.c --- */
int s3_list_objects(s3_rq_t *r, int version); /* 1, 2, or 0: versions */
/* Calls fn for the bucket's objects in byte order after start_after with
 * this prefix, at most limit; *more when more remain. Local store or a
 * fan-out over the cluster's targets. Blocking (I/O pool). */
typedef struct s3_entry {
	char *name;
	size_t len;
	uint64_t size;
	int64_t mtime_ns;
	char etag[80]; /* quoted */
	size_t src;    /* the target it came from (map order): the first copy wins */
	/* s3_list_page_v with versions: the version (olver.h) */
	char vid[NAME_VER_ID_LEN + 1]; /* "" when none (a "null" current version) */
	bool vnull, dm;                /* the "null" version; a delete marker */
} s3_entry_t;
int s3_list_page(s3_node_t *nd, const char *bck, sv_t prefix, sv_t start_after, size_t limit,
		 s3_entry_t **out, size_t *n, bool *more, buf_t *err);
/* The same with kept versions too (versions true: olver.h). */
int s3_list_page_v(s3_node_t *nd, const char *bck, sv_t prefix, sv_t start_after, size_t limit, bool versions,
		   s3_entry_t **out, size_t *n, bool *more, buf_t *err);
void s3_entries_free(s3_entry_t *e, size_t n);

/* --- object.c --- */
int s3_object(s3_rq_t *r);
int s3_object_attributes(s3_rq_t *r); /* GET ?attributes (GetObjectAttributes) */
/* Makes w a conditional write (ol_put_t.precond) for the request's
 * If-Match / If-None-Match (PutObject, CompleteMultipartUpload; "*" or a
 * list of ETags, quoted or not), checked on the owner at the commit: a
 * failed check sets *code (PreconditionFailed: the object exists and
 * If-None-Match names it or is "*", or If-Match does not name it;
 * NoSuchKey: If-Match of a missing key) and fails the commit.
 * AIS_OK (no condition, or armed), AIS_ERR after answering (an empty
 * value: InvalidArgument). */
int s3_cond_arm(s3_rq_t *r, ol_put_t *w, const char **code);

/* --- put.c: a request body streamed to a sink by the object layer's
 * pipeline (ol_stream), through the SigV4 body decoder. --- */
typedef struct s3_sse s3_sse_t;
typedef struct s3_put s3_put_t;
typedef struct s3_put_ops {
	int (*begin)(s3_put_t *p);                          /* pool; errno */
	int (*write)(s3_put_t *p, const char *b, size_t n); /* pool; errno */
	int (*commit)(s3_put_t *p);                         /* pool; errno */
	void (*reply)(s3_put_t *p);                         /* loop: the 200 */
	void (*cleanup)(s3_put_t *p);                       /* frees the sink */
} s3_put_ops_t;
struct s3_put {
	ol_stream_t s;       /* the object layer's pipeline */
	s3_rq_t *r;
	const s3_put_ops_t *ops;
	void *sink;
	char md5hex[33];     /* after the body */
	unsigned char md5[16];
	enum s3_ck ck;       /* after the body: the x-amz-checksum-* verified (S3_CK_NONE: none) */
	char ck_b64[48];     /* and its value */
	const char *code;    /* an S3 error code the sink chose */
	const char *msg;     /* and its message (NULL: the code's) */
	s3_body_t *dec;
	s3_sse_t *sse;       /* encrypt what the decoder emits (NULL: store as sent) */
	uint64_t off;        /* the bytes emitted so far */
};
/* Starts streaming the request body to p's sink through the SigV4 body
 * decoder; the sink commits only after the decoder's finish succeeded
 * (chunk signatures, payload hash, Content-MD5, x-amz-checksum-*). */
void s3_put_start(s3_rq_t *r, s3_put_t *p);
/* The answer's x-amz-checksum-ALG and -type headers of p's verified
 * checksum, when the client sent one. */
void s3_put_ck_header(const s3_put_t *p, bool with_type);

/* --- sse.c: server-side encryption (design rules at the top of sse.c) --- */
struct s3_sse {
	char mode;                 /* 'C' SSE-C, 'S' SSE-S3, 'K' SSE-KMS */
	char kid[SSE_ID_MAX + 1];  /* the master or KMS key's id */
	char keymd5[25];           /* SSE-C: the key's MD5, base64 (answered back) */
	unsigned char dk[SSE_KEY], iv[SSE_IV];
	sse_ctr_t ctr;
	char *meta;                /* the record for s3_meta_t.sse (s3_sse_put) */
	unsigned char kek[SSE_KEY]; /* s3_sse_source_key: the copy source's customer key, until opened */
	bool has_kek;
	uint64_t base;             /* a part's: its CTR stream offset (rule 8) */
	char want;                 /* s3_sse_part_key: the mode a part's x-amz-server-side-encryption names (0: none) */
	sse_parts_t parts;         /* an object completed from encrypted parts: its layout (rule 8) */
};
/* A write's encryption from its headers: AIS_OK with *out (NULL: not
 * encrypted), or AIS_ERR after answering (400 InvalidArgument/
 * InvalidRequest, 501 for a mode not configured). Keys are wiped with the
 * request. */
int s3_sse_put(s3_rq_t *r, s3_sse_t **out);
/* A read of an object whose record is meta (NULL: not encrypted) with the
 * request's SSE-C headers: AIS_OK with *out (NULL: plain), or AIS_ERR after
 * answering (400 InvalidRequest: key missing or given for a plain object,
 * 403 AccessDenied: another key, 500: key file unusable). */
int s3_sse_get(s3_rq_t *r, const char *meta, s3_sse_t **out);
/* A copy's source (CopyObject, UploadPartCopy), in two steps, as its
 * record is known only where the source is read (copy.c): on the event
 * loop, the x-amz-copy-source-server-side-encryption-customer-* headers:
 * AIS_OK with *out (holding the key if given) or AIS_ERR after answering
 * (400 as s3_sse_put's SSE-C checks); then, on any thread, the source's
 * record meta (NULL: plain) opened with it: AIS_OK with *out (NULL: a
 * plain source), or AIS_ERR with the S3 error *code and *msg (static) to
 * answer: as s3_sse_get's. The key is wiped once used or with the
 * request. */
int s3_sse_source_key(s3_rq_t *r, s3_sse_t **out);
int s3_sse_source_open(const conf_t *c, const char *meta, s3_sse_t *k, s3_sse_t **out, const char **code,
		       const char **msg);
/* A multipart upload's part (UploadPart, UploadPartCopy: rule 8), in two
 * steps as a copy's source: on the loop, the request's own SSE-C headers
 * (x-amz-server-side-encryption-customer-*, and x-amz-server-side-
 * encryption with -aws-kms-key-id as a restatement of the upload's mode;
 * any other SSE header 400 InvalidArgument): AIS_OK with *out or AIS_ERR
 * after answering; then, with the upload's record (NULL: a plain upload),
 * the encryption of upload gen of part num (sse.h): AIS_OK with *out (NULL: plain), or AIS_ERR with
 * *code, *msg (400 InvalidRequest: the key missing for an SSE-C upload or
 * given for another, 400 InvalidArgument: another key, or a mode that is
 * not the upload's). */
int s3_sse_part_key(s3_rq_t *r, s3_sse_t **out);
int s3_sse_part_open(const conf_t *c, const char *meta, s3_sse_t *k, uint32_t num, uint32_t gen, s3_sse_t **out,
		     const char **code, const char **msg);
/* The record of an object completed from an upload of record meta, with
 * the parts' layout (sse.h: sse_parts_t's text). */
char *s3_sse_record_parts(arena_t *a, const char *meta, const char *layout);
/* Whether the request carries SSE-C headers. */
bool s3_sse_asked(s3_rq_t *r);
/* The answer's x-amz-server-side-encryption* headers (s NULL: none). */
void s3_sse_headers(s3_rq_t *r, const s3_sse_t *s);
/* En/decrypts n bytes at object offset off. AIS_OK or AIS_ERR. */
int s3_sse_xor(s3_sse_t *s, uint64_t off, const void *in, void *out, size_t n);
/* The S3 ETag of an encrypted object from its plaintext MD5 (rule 3):
 * SSE-S3 leaves hex as it is. */
void s3_sse_etag(const s3_sse_t *s, const unsigned char md5[16], char hex[33]);

/* --- docop.c: a bucket's stored S3 documents (bmd_doc) served by one
 * handler, GET (HEAD where head_ok), PUT and DELETE, each kind described
 * by its row: CORS (corsop.c), lifecycle (lcop.c), default encryption
 * (ssecfgop.c), object ownership (ownop.c). The policy and logging documents have answers of their
 * own (policy.c, logging.c). --- */
typedef struct s3_doc_ops {
	bmd_doc_kind_t kind;
	size_t size;           /* of the parsed form c */
	const char *none_code; /* GET of a bucket without one: S3's error code and message */
	const char *none_msg;
	bool head_ok;
	/* the stored (canonical) text into c: AIS_ERR treats it as none */
	int (*load)(arena_t *a, const char *text, size_t n, void *c);
	/* a PUT body into c with the kind's checks: AIS_ERR with the S3 error
	 * *code (preset MalformedXML) and *why (NULL: the code's message) */
	int (*parse)(s3_rq_t *r, const char *p, size_t n, void *c, const char **code, const char **why);
	void (*canonical)(const void *c, buf_t *b); /* what the BMD keeps */
	void (*answer)(const void *c, buf_t *b);    /* GET's XML */
	bool (*none)(const void *c);                /* c holds no configuration */
} s3_doc_ops_t;
/* The bucket's document into c (ops->none(c) when it has none or it no
 * longer parses; a standalone target keeps none); AIS_ERR: no such bucket. */
int s3_doc_of_bucket(s3_rq_t *r, const s3_doc_ops_t *ops, void *c);
/* The document's sub-resource on a bucket: GET, PUT, DELETE. */
int s3_doc_serve(s3_rq_t *r, const s3_doc_ops_t *ops);
extern const s3_doc_ops_t s3_cors_ops, s3_lc_ops, s3_ssecfg_ops, s3_own_ops;

/* --- ssecfg.c: a bucket's default encryption (rules at the top of ssecfg.c) --- */
typedef struct s3_ssecfg {
	char mode;                /* 'S' SSE-S3, 'K' SSE-KMS; 0: none */
	char kid[SSE_ID_MAX + 1]; /* SSE-KMS: the KMSMasterKeyID ("": the newest key) */
	bool bucket_key;          /* BucketKeyEnabled (kept, answered, no effect) */
} s3_ssecfg_t;
/* Pure parser of a ServerSideEncryptionConfiguration: AIS_OK, or AIS_ERR
 * with *why (NULL: malformed XML) and out zeroed. */
int s3_ssecfg_parse(const char *p, size_t n, s3_ssecfg_t *out, const char **why);
/* The canonical one-line XML of c (no declaration). */
void s3_ssecfg_xml(const s3_ssecfg_t *c, buf_t *b);

/* --- owncfg.c: a bucket's ownership controls (PutBucketOwnershipControls) --- */
/* Pure parser of an OwnershipControls document: exactly one Rule with one
 * ObjectOwnership. AIS_OK with *out, or AIS_ERR with *out NONE and *why
 * (NULL: malformed XML; else what is wrong; both answered MalformedXML,
 * as S3 answers a value its schema does not have). */
int s3_owncfg_parse(const char *p, size_t n, s3acl_own_t *out, const char **why);
/* The OwnershipControls document of own (not NONE), one line, no XML
 * declaration. */
void s3_owncfg_xml(s3acl_own_t own, buf_t *b);


/* --- copy.c --- */
int s3_copy_object(s3_rq_t *r, sv_t src);
int s3_upload_part_copy(s3_rq_t *r, sv_t id, uint32_t num, sv_t src);
/* Parses "[/]bucket/key[?versionId=..]" (percent-encoded); *vid (vid may
 * be NULL) the versionId other than "null" (ptr NULL: none, or "null").
 * A malformed versionId answers InvalidArgument (AIS_ERR). */
int s3_copy_source(s3_rq_t *r, sv_t h, sv_t *bck, sv_t *key, sv_t *vid);

/* --- multipart.c --- */
int s3_multipart(s3_rq_t *r, sv_t upload_id);
int s3_mpu_create(s3_rq_t *r);
typedef struct s3_upload {
	char *key; /* malloc'd */
	size_t klen;
	char id[33];
	int64_t initiated;
	char owner[S3ACL_UID_MAX + 1]; /* who created it ("": anonymously) */
} s3_upload_t;
/* This target's uploads in bck whose keys start with prefix (malloc'd,
 * unordered). Blocking. */
int s3_mpu_local_uploads(const conf_t *c, const char *bck, sv_t prefix, s3_upload_t **out, size_t *n);
/* Removes this target's upload id (an abort). Blocking. */
void s3_mpu_local_remove(const conf_t *c, const char *id);
/* A part being written, by UploadPart or UploadPartCopy (copy.c). */
typedef struct s3_part_file {
	void *upload; /* the upload's state (multipart.c) */
	uint32_t num;
	uint32_t gen;   /* an encrypted upload's: which upload of num this is (sse.c rule 8) */
	int fd;         /* the temp file; -1: none */
	char tmp[1200]; /* its path; "": none */
	s3_sse_t *sse;  /* the part's encryption (sse.c rule 8); NULL: a plain upload */
	uint64_t off;   /* bytes written */
} s3_part_file_t;
/* Opens upload id (AIS_ERR, *code NoSuchUpload: none of this bucket and
 * key), takes the part's encryption with the request's SSE-C key
 * (s3_sse_part_key; AIS_ERR with *code and *msg when it does not fit) and
 * creates the part's temp file. Blocking, as the three below. */
int s3_mpu_part_begin(s3_rq_t *r, sv_t id, uint32_t num, s3_sse_t *key, s3_part_file_t *pf, const char **code,
		      const char **msg);
/* Appends n bytes of plaintext (ciphertext on disk in an encrypted upload). */
int s3_mpu_part_write(s3_part_file_t *pf, const char *b, size_t n);
/* Closes the temp file (synced first when sync), puts the part's ETag in
 * md5hex (of its plaintext's md5; sse.c rule 3 when encrypted) and
 * installs it as part num in place of an older upload of num. AIS_ERR:
 * errno (ENOENT: the upload is gone). */
int s3_mpu_part_commit(s3_part_file_t *pf, bool sync, const unsigned char md5[16], char md5hex[33]);
/* Closes and removes the temp file of a part not committed. */
void s3_mpu_part_drop(s3_part_file_t *pf);

/* --- uploads.c: ListMultipartUploads (local or fanned out) --- */
int s3_mpu_list_uploads(s3_rq_t *r);


/* --- post.c: browser-based uploads (POST Object with a form) --- */
/* Is r a POST of an HTML form to a bucket? */
bool s3_post_is(s3_rq_t *r);
/* Serves it: reads the form's fields, routes it to the key's owner,
 * verifies the policy and its signature and writes the file as a PutObject
 * of the key (the fields its headers). AIS_OK (answered or will be). */
int s3_post(s3_rq_t *r);
/* s3.c: declares the request's resources and decides over them (one
 * decision, authz_decide). AIS_ERR after answering. */
int s3_authorize(s3_rq_t *r);

/* --- delete.c --- */
int s3_delete_objects(s3_rq_t *r);

/* --- proxy.c (gateway) --- */
/* Forwards the request unchanged to url_base (the owner target), with
 * OL_HOP_HDR set to hops (0: none) and OL_PREV_HDR to prev (0: none: see
 * ol_moved), and streams the answer back. */
int s3_proxy(s3_rq_t *r, const char *url_base, unsigned hops, uint64_t prev);
/* The same for a request whose first body bytes were read already (pre,
 * copied): they go first, then the rest of the body as it comes. */
int s3_proxy_pre(s3_rq_t *r, const char *url_base, unsigned hops, sv_t pre);
/* The holders of bck/key (place_object): the owner's intra-cluster URL in
 * out, this node's rank among the holders in *self (-1: none; always -1
 * on a gateway). false if the bucket or an active target is missing. */
bool s3_place(s3_node_t *nd, sv_t bck, sv_t key, char *out, size_t outsz, int *self);

/* --- lifecycle.c: bucket lifecycle configurations (s3lc.h values; kept in the BMD: bmd_doc BMD_DOC_LIFECYCLE) --- */
struct s3lc;
/* Pure: a <LifecycleConfiguration> (PutBucketLifecycleConfiguration) into
 * out with S3's checks (s3lc_check). AIS_ERR with *code (MalformedXML,
 * InvalidArgument, InvalidRequest, InvalidTag) and *why (NULL: the code's
 * standard message). */
int s3_lc_parse(arena_t *a, const char *p, size_t n, struct s3lc *out, const char **code, const char **why);
/* GetBucketLifecycleConfiguration's document. */
void s3_lc_xml(const struct s3lc *c, buf_t *b);
/* x-amz-expiration of the named object (its current version: none for a
 * versionId) of size bytes written at start_ns with tags, when a rule
 * expires it. */
void s3_lc_header(s3_rq_t *r, uint64_t size, int64_t start_ns, const s3_tags_t *tags);

/* --- cors.c: bucket CORS configurations (kept in the BMD: bmd_doc BMD_DOC_CORS) --- */
#define S3_CORS_RULES_MAX 100
#define S3_CORS_XML_MAX (64u << 10) /* a PutBucketCors body */
#define S3_CORS_ID_MAX 255
typedef struct s3_cors_list {
	sv_t *v; /* arena memory */
	size_t n, cap;
} s3_cors_list_t;
typedef struct s3_cors_rule {
	sv_t id;
	s3_cors_list_t origins, methods, headers, expose;
	int64_t max_age; /* -1: none */
} s3_cors_rule_t;
typedef struct s3_cors {
	s3_cors_rule_t *rules; /* arena memory */
	size_t n;
} s3_cors_t;
/* Pure parser of a <CORSConfiguration> with S3's checks: AIS_OK, or
 * AIS_ERR with *why NULL (MalformedXML: not the schema, no rule, a rule
 * without AllowedOrigin or AllowedMethod, a bad MaxAgeSeconds) or the
 * message of an InvalidRequest (a method S3 does not allow, two
 * wildcards, a wildcard ExposeHeader, over 100 rules or 64 KiB, an ID
 * over 255 characters, a value not printable ASCII). */
int s3_cors_parse(arena_t *a, const char *p, size_t n, s3_cors_t *out, const char **why);
/* The canonical form: one line, no XML declaration (what the BMD keeps). */
void s3_cors_xml(const s3_cors_t *c, buf_t *b);
/* The first rule that allows origin, method and every header of the
 * comma-separated req_headers (may be empty); NULL if none. */
const s3_cors_rule_t *s3_cors_match(const s3_cors_t *c, sv_t origin, sv_t method, sv_t req_headers);
/* Does rule u (which matched origin) let origin in only by its AllowedOrigin
 * "*" (any origin: answered "*", never with credentials), not by a
 * pattern that names it? */
bool s3_cors_origin_any(const s3_cors_rule_t *u, sv_t origin);
/* Answers a preflight OPTIONS (no authentication, as S3). */
int s3_cors_preflight(s3_rq_t *r);
/* Adds the Access-Control-* headers of the rule matching the request's
 * Origin and method (its Access-Control-Request-Method if it has one),
 * if any (corsop.c rule 2). */
void s3_cors_actual(s3_rq_t *r);

/* --- nyi.c: what S3 has and aisd does not (yet) --- */
/* Answers a request for a sub-resource or header aisd does not implement
 * (501 NotImplemented naming it), or one whose truthful answer is "not
 * configured" (GET ?policy: 404 NoSuchBucketPolicy, GET ?versioning: an
 * empty configuration, DELETE ?policy: 204). true when answered. */
bool s3_nyi_answered(s3_rq_t *r);

/* --- util --- */
/* Fills nd from a route context. */
void s3_node_of(http_req_t *req, bool gateway, s3_node_t *nd);
/* Body collector for small XML bodies: calls done when the body (at most
 * S3_XML_BODY_MAX) is in *body; answers 400 itself when too large. */
typedef void (*s3_body_fn)(s3_rq_t *r, buf_t *body);
void s3_read_body(s3_rq_t *r, s3_body_fn done);
void s3_time_iso(int64_t ns, char *out, size_t outsz); /* 2006-01-02T15:04:05.000Z */
bool s3_query_has(http_req_t *req, const char *key);
/* The query parameter key's value, "" when absent. */
sv_t s3_query_str(http_req_t *req, const char *key);
/* A listing's continuation token (ListObjectsV2, ListBuckets): the last
 * name of the page before, base64-encoded (opaque to clients, as S3's),
 * written as element elem; and a token decoded into *out (the request's
 * arena), AIS_ERR when it is not base64. */
void s3_token_xml(buf_t *b, const char *elem, sv_t last);
int s3_token_decode(http_req_t *req, sv_t tok, sv_t *out);

#endif
