/*
 * s3auth.h - S3 request authentication: AWS Signature Version 4 (header and
 * presigned-URL forms), Signature Version 2 for older clients (the same two
 * forms, when s3.sigv2 is on), the aws-chunked body decoder with chunk and trailer
 * signatures, and the payload checks (x-amz-content-sha256, Content-MD5,
 * x-amz-checksum-*).
 *
 * How an S3 handler uses it:
 *  1. At start-up: s3_authcfg_init(&cfg, conf) once (keys, region, skew).
 *  2. Per request, on the worker, before anything else:
 *       s3_req_t r; s3_req_from_http(req, &r);
 *       s3_auth_t au; s3_autherr_t e;
 *       if (s3_auth_verify(&cfg, &r, time(NULL), &au, &e) != AIS_OK ||
 *           s3_auth_require(&cfg, &au, &e) != AIS_OK)
 *               answer e.status with S3 XML <Code>e.code</Code>
 *               <Message>e.message</Message>;
 *     au.key names the user (NULL when anonymous or auth is off).
 *  3. For a request with a body (PutObject, UploadPart, DeleteObjects, ...):
 *       b = s3_body_new(req->arena, &au, &r, req->content_length, &e);
 *     then feed every HTTP body piece (already de-chunked by the HTTP layer)
 *     to s3_body_feed(b, p, n, emit, arg, &e): emit(arg, ptr, len) receives
 *     the object's bytes (views into p, aws-chunked framing removed). At
 *     the end of the HTTP body call s3_body_finish(b, &e); only if it
 *     returns AIS_OK may the object be committed (a chunk signature, the
 *     payload hash or a checksum is only known good then).
 *     s3_body_md5() then gives the payload's MD5 (the ETag).
 * Memory is bounded: the decoder keeps one chunk-header line (at most
 * S3_LINE_MAX bytes) and the running hashes, never a chunk's data.
 *
 * Everything here is pure (no I/O, no clock: the caller passes now) and
 * thread-safe over a shared, read-only s3_authcfg_t.
 */
#ifndef AISD_S3AUTH_H
#define AISD_S3AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/arena.h"
#include "aisd/buf.h"
#include "aisd/conf.h"
#include "aisd/http.h"

#define S3_LINE_MAX            4096   /* longest chunk-header or trailer line */
#define S3_PRESIGN_MAX_EXPIRES 604800 /* seven days, in seconds */

/* ---- keys and configuration --------------------------------------------- */

typedef struct s3_key {
	const char *access_key;
	const char *secret_key;
	const char *user_id;      /* canonical user id (Owner/ID in listings) */
	const char *display_name; /* Owner/DisplayName */
} s3_key_t;

typedef struct s3_keys s3_keys_t;

s3_keys_t *s3_keys_new(void);
void s3_keys_free(s3_keys_t *k);
/* Adds one key from "ACCESS:SECRET:USERID:DISPLAY NAME" (the s3.key config
 * value, checked by conf_s3key_split). Returns AIS_OK, or AIS_ERR with a
 * message in err (also for a duplicate access key). */
int s3_keys_add(s3_keys_t *k, const char *spec, buf_t *err);
/* The key with this access key, or NULL. */
const s3_key_t *s3_keys_find(const s3_keys_t *k, sv_t access_key);
size_t s3_keys_count(const s3_keys_t *k);
/* The i-th key in the order added (i < s3_keys_count). */
const s3_key_t *s3_keys_at(const s3_keys_t *k, size_t i);

typedef struct s3_authcfg {
	bool enabled;       /* s3.auth: false = trusted network, nothing checked */
	bool sigv2;         /* s3.sigv2: Signature Version 2 accepted (else 400 InvalidRequest) */
	int64_t max_skew_s; /* s3.max_skew: allowed clock difference, seconds */
	char region[64];    /* s3.region: the cluster's region name */
	s3_keys_t *keys;    /* s3.key entries */
} s3_authcfg_t;

/* Builds cfg from the s3.* config keys. Returns AIS_OK, or AIS_ERR with a
 * message in err (a malformed s3.key). Free with s3_authcfg_free. */
int s3_authcfg_init(s3_authcfg_t *cfg, const conf_t *c, buf_t *err);
void s3_authcfg_free(s3_authcfg_t *cfg);

/* ---- a request, as authentication sees it ------------------------------- */

typedef struct s3_req {
	const char *method; /* "GET", "PUT", ... */
	sv_t path;          /* raw path as received (percent-encoded), no query */
	sv_t query;         /* raw query string after '?', may be empty */
	const http_hdr_t *hdrs;
	size_t nhdrs;
	sv_t vhost_bucket;  /* the bucket Host names (virtual-hosted), else empty: SigV2 signs it */
	bool ck_of_object;  /* its x-amz-checksum-* header is the object's, not the body's
			       (CompleteMultipartUpload): the body decoder leaves it */
} s3_req_t;

/* The view of an HTTP request (borrows from req). */
void s3_req_from_http(const http_req_t *req, s3_req_t *out);

/* ---- errors ------------------------------------------------------------- */

/* An S3 error: the handler answers status with <Code>code</Code> and
 * <Message>message</Message>. code is a static string. */
typedef struct s3_autherr {
	int status;
	const char *code;
	char message[256];
	char headers_not_signed[64]; /* AccessDenied: the header not in SignedHeaders, or "" */
} s3_autherr_t;

/* ---- verification ------------------------------------------------------- */

enum s3_auth_kind {
	S3_AUTH_ANON = 0,  /* no credentials at all */
	S3_AUTH_HEADER,    /* Authorization: AWS4-HMAC-SHA256 or SigV2's AWS, verified */
	S3_AUTH_PRESIGNED, /* X-Amz-Algorithm=... or SigV2's AWSAccessKeyId=... query, verified, not expired */
	S3_AUTH_OFF,       /* s3.auth off: credentials not looked at */
};

enum s3_payload {
	S3_PAYLOAD_UNSIGNED = 0,            /* UNSIGNED-PAYLOAD, presigned, none */
	S3_PAYLOAD_SHA256,                  /* hex sha256, checked at the end */
	S3_PAYLOAD_STREAM_SIGNED,           /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
	S3_PAYLOAD_STREAM_SIGNED_TRAILER,   /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
	S3_PAYLOAD_STREAM_UNSIGNED_TRAILER, /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
};

typedef struct s3_auth {
	enum s3_auth_kind kind;
	const s3_key_t *key; /* the signer (HEADER, PRESIGNED), else NULL */
	enum s3_payload payload;
	unsigned char payload_sha256[32]; /* S3_PAYLOAD_SHA256 */
	bool verify_chunks;               /* chunk signatures are checked (HEADER + STREAM_SIGNED*) */
	/* The signing context the chunk signatures chain from. */
	char amz_date[17];       /* "20130524T000000Z" */
	char scope[160];         /* "20130524/us-east-1/s3/aws4_request" */
	char region[64];         /* from the credential scope */
	char seed_signature[65]; /* the request's signature, hex */
	unsigned char signing_key[32];
} s3_auth_t;

/*
 * s3_auth_verify checks the request's credentials at time now_s (seconds
 * since the epoch). Returns AIS_OK with out filled: out->kind says who
 * asked (S3_AUTH_ANON when the request carries no credentials: see
 * s3_auth_require) and out->payload how the body is signed. On a failed
 * check returns AIS_ERR with err set: InvalidAccessKeyId (403),
 * SignatureDoesNotMatch (403), RequestTimeTooSkewed (403), AccessDenied
 * (403, "Request has expired" / "Request is not valid yet"),
 * AccessDenied (403, a header that must be signed is not: its name in
 * err->headers_not_signed), AuthorizationHeaderMalformed (400),
 * AuthorizationQueryParametersError
 * (400), InvalidArgument (400), InvalidRequest (400: also a SigV2 request
 * with s3.sigv2 off), MissingSecurityHeader (400). SigV2 gives the same
 * kinds and key as SigV4, with no SigV4 signing context. With cfg->enabled
 * false it still reads x-amz-content-sha256 (the body framing) and never
 * fails on credentials.
 */
int s3_auth_verify(const s3_authcfg_t *cfg, const s3_req_t *req, int64_t now_s, s3_auth_t *out,
                   s3_autherr_t *err);

/* AIS_OK if the request may proceed: it is signed, or auth is off.
 * Else AIS_ERR with AccessDenied (403) in err (an anonymous request). */
int s3_auth_require(const s3_authcfg_t *cfg, const s3_auth_t *auth, s3_autherr_t *err);

/* ---- request bodies ----------------------------------------------------- */

typedef struct s3_body s3_body_t;

/* Receives decoded payload bytes, in order. Returns AIS_OK to go on; any
 * other value stops s3_body_feed, which returns it (err untouched). */
typedef int (*s3_emit_fn)(void *arg, const char *p, size_t n);

/*
 * s3_body_new prepares the checks of a request body. content_length is the
 * HTTP Content-Length (-1 when the body came with Transfer-Encoding:
 * chunked). It reads x-amz-decoded-content-length (required for the
 * STREAMING modes), x-amz-trailer, Content-MD5, x-amz-checksum-* and
 * x-amz-sdk-checksum-algorithm. Lives in arena a (its hash contexts are
 * freed by an arena cleanup). Returns NULL with err set on bad headers:
 * MissingContentLength (411), InvalidDigest (400), InvalidArgument/
 * InvalidRequest (400).
 */
s3_body_t *s3_body_new(arena_t *a, const s3_auth_t *auth, const s3_req_t *req, int64_t content_length,
                       s3_autherr_t *err);
/*
 * s3_body_feed takes the next n bytes of the HTTP body (any split) and
 * passes the payload bytes among them to emit. Returns AIS_OK, AIS_ERR with
 * err set (bad framing: IncompleteBody/InvalidRequest (400); a bad chunk
 * signature: SignatureDoesNotMatch (403)), or emit's non-OK value.
 */
int s3_body_feed(s3_body_t *b, const char *in, size_t n, s3_emit_fn emit, void *arg, s3_autherr_t *err);
/*
 * s3_body_finish is called at the end of the HTTP body. Returns AIS_OK when
 * everything checks out, else AIS_ERR with err: IncompleteBody (400: short
 * body, missing last chunk), XAmzContentSHA256Mismatch (400), BadDigest
 * (400: Content-MD5 or x-amz-checksum-*), SignatureDoesNotMatch (403: the
 * trailer signature), InvalidRequest (400: a declared trailer missing).
 */
int s3_body_finish(s3_body_t *b, s3_autherr_t *err);
/* Payload bytes seen so far. */
uint64_t s3_body_payload_len(const s3_body_t *b);
/* After a successful finish: the payload's MD5 (the object's ETag). */
void s3_body_md5(const s3_body_t *b, unsigned char md5[16]);
/* After a successful finish: the x-amz-checksum-* verified (header or
 * trailer), e.g. "x-amz-checksum-crc32" and its base64 value; false if none. */
bool s3_body_checksum(const s3_body_t *b, const char **name, const char **value);

/* ---- helpers for handlers and clients ----------------------------------- */

/*
 * s3_sign signs a request as an S3 client would (for tools, tests and a
 * load generator): every header in req is signed (it must hold host and
 * x-amz-date = amz_date; x-amz-content-sha256 = payload_hash for S3).
 * Appends the Authorization header value to out.
 */
void s3_sign(const s3_key_t *key, const char *region, const char *amz_date, const s3_req_t *req,
             const char *payload_hash, buf_t *out);

/* ---- the x-amz-checksum-* algorithms (checksum.c) ------------------------ */

enum s3_ck {
	S3_CK_NONE = 0,
	S3_CK_CRC32,     /* zlib's CRC-32 */
	S3_CK_CRC32C,    /* CRC-32C (Castagnoli, reflected polynomial 0x82f63b78) */
	S3_CK_CRC64NVME, /* CRC-64/NVME (reflected polynomial 0x9a6c9329ac4bc9b5) */
	S3_CK_SHA1,
	S3_CK_SHA256,
};

/* "crc32" ... as in x-amz-checksum-<name>; by name (case-insensitive). */
const char *s3_ck_name(enum s3_ck t);
enum s3_ck s3_ck_by_name(sv_t name);
/* Digest length in bytes (4, 4, 8, 20, 32). */
size_t s3_ck_len(enum s3_ck t);
/* "ChecksumCRC32" ... as in S3's XML documents. */
const char *s3_ck_xml(enum s3_ck t);

uint32_t s3_crc32c(uint32_t crc, const void *p, size_t n);
uint64_t s3_crc64nvme(uint64_t crc, const void *p, size_t n);

/* One of them computed over bytes fed in pieces: init, update..., final
 * (the digest's big-endian bytes, s3_ck_len of them; frees the state).
 * free: without a final. */
typedef struct s3_ck_state {
	enum s3_ck type;
	uint32_t crc32;
	uint64_t crc64;
	struct evp_md_ctx_st *md; /* sha1, sha256 */
} s3_ck_state_t;
void s3_ck_init(s3_ck_state_t *st, enum s3_ck type);
void s3_ck_update(s3_ck_state_t *st, const void *p, size_t n);
size_t s3_ck_final(s3_ck_state_t *st, unsigned char out[32]);
void s3_ck_free(s3_ck_state_t *st);

/* Standard base64 with padding (out: 4 * ceil(n / 3) + 1 bytes). */
void s3_b64_encode(const unsigned char *in, size_t n, char *out);

#endif
