/*
 * s3_int.h - the pieces of src/s3auth that unit tests and fuzz drivers reach
 * into: the pure parsers of the Authorization header and of presigned
 * query parameters, the canonical request, and the checksums.
 */
#ifndef AISD_S3_INT_H
#define AISD_S3_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "aisd/s3auth.h"

#define S3_ALGO         "AWS4-HMAC-SHA256"
#define S3_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* The value of header name (case-insensitive), trimmed; {NULL, 0} when
 * the request has none. */
sv_t s3_req_header(const s3_req_t *r, const char *name);

/* Sets err to an S3 error. */
void s3_err(s3_autherr_t *err, int status, const char *code, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* A credential "AK/YYYYMMDD/REGION/SERVICE/aws4_request", split. Views
 * into the parsed text. */
typedef struct s3_cred {
	sv_t access_key, date, region, service, terminal;
} s3_cred_t;

/* What an Authorization: AWS4-HMAC-SHA256 header says (views into it). */
typedef struct s3_authz {
	s3_cred_t cred;
	sv_t signed_headers; /* "host;x-amz-date", lower case, ';'-separated */
	sv_t signature;      /* 64 lower-case hex digits */
} s3_authz_t;

/*
 * s3_parse_cred splits a credential. Returns AIS_OK, or AIS_ERR with a
 * reason in err->message (code AuthorizationHeaderMalformed; the caller may
 * change it for the query form).
 */
int s3_parse_cred(sv_t c, s3_cred_t *out, s3_autherr_t *err);
/*
 * s3_parse_authz parses an Authorization header value of the form
 * "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...".
 * Returns AIS_OK, or AIS_ERR with err (AuthorizationHeaderMalformed, or
 * InvalidArgument for another algorithm; SigV2's "AWS " is s3_v2_verify's).
 */
int s3_parse_authz(sv_t h, s3_authz_t *out, s3_autherr_t *err);

/* The X-Amz-* parameters of a presigned URL, decoded into fixed buffers. */
typedef struct s3_presign {
	char credential[512];
	char amz_date[32];
	char signed_headers[1024];
	char signature[72];
	char content_sha256[80]; /* X-Amz-Content-Sha256, or "" */
	int64_t expires;
	s3_cred_t cred; /* views into credential */
} s3_presign_t;

/*
 * s3_parse_presign reads the presign parameters from a raw query string.
 * Returns AIS_DONE when X-Amz-Algorithm is absent (not a SigV4 presigned URL),
 * AIS_OK with out filled, or AIS_ERR with err (AuthorizationQueryParameters
 * Error for a missing, repeated or malformed parameter).
 */
int s3_parse_presign(sv_t query, s3_presign_t *out, s3_autherr_t *err);

/*
 * s3_check_signed_headers: AIS_OK when every header of req that must be
 * signed (every x-amz-* but x-amz-content-sha256) is named in
 * signed_headers (';'-separated, any case); else AIS_ERR with err 403
 * AccessDenied and err->headers_not_signed the first one missing, as S3.
 */
int s3_check_signed_headers(const s3_req_t *req, sv_t signed_headers, s3_autherr_t *err);

/* ISO 8601 basic "YYYYMMDDTHHMMSSZ" <-> seconds since the epoch. */
int s3_parse_amz_date(sv_t s, int64_t *t);
void s3_format_amz_date(int64_t t, char out[17]);

/*
 * s3_canonical_request appends the SigV4 canonical request of req to out:
 * method, canonical URI (the path decoded, then each byte but the
 * unreserved set and '/' percent-encoded: S3 neither double-encodes nor
 * normalizes), canonical query (pairs sorted by encoded key, then value;
 * X-Amz-Signature left out when presigned), canonical headers (the signed
 * ones: names lower-cased, values trimmed, inner runs of blanks collapsed,
 * repeated headers joined with ','), the signed header list and the payload
 * hash.
 */
void s3_canonical_request(buf_t *out, const s3_req_t *req, sv_t signed_headers, bool presigned,
                          sv_t payload_hash);
/* The string to sign for a canonical request. */
void s3_string_to_sign(buf_t *out, const char *amz_date, sv_t scope, sv_t canonical_request);
/* kSigning from the secret, date (YYYYMMDD) and region. */
void s3_signing_key(const char *secret, sv_t date, sv_t region, unsigned char key[32]);
/* The same for another service (AWS's generic SigV4 test suite). */
void s3_signing_key_svc(const char *secret, sv_t date, sv_t region, sv_t service, unsigned char key[32]);
/* The digests, fetched from OpenSSL once per process. */
enum s3_md { S3_MD_SHA256, S3_MD_MD5, S3_MD_SHA1 };
const struct evp_md_st *s3_md(enum s3_md which);
/* Lower-case hex HMAC-SHA256(key, msg) into out (65 bytes). */
void s3_hmac_hex(const unsigned char key[32], const void *msg, size_t n, char out[65]);
void s3_sha256_hex(const void *p, size_t n, char out[65]);

/* The payload mode x-amz-content-sha256 names (absent: unsigned) into
 * out->payload (and payload_sha256). AIS_ERR with 400 InvalidArgument for
 * another value. */
int s3_parse_payload_mode(sv_t v, s3_auth_t *out, s3_autherr_t *err);
/* The key named access_key, or NULL with 403 InvalidAccessKeyId in err. */
const s3_key_t *s3_find_key(const s3_authcfg_t *cfg, sv_t access_key, s3_autherr_t *err);
/* Percent-decodes a query value into dst (dstsz bytes, NUL-terminated),
 * '+' as a space when plus_space. AIS_ERR if it does not fit, has a bad
 * escape or a NUL. */
int s3_qdecode(sv_t v, bool plus_space, char *dst, size_t dstsz);

/* ---- Signature Version 2 (sigv2.c) ---- */

#define S3_V2_SIG_LEN 28 /* base64 of an HMAC-SHA1 */

/* Base64(HMAC-SHA1(secret, msg)), NUL-terminated. */
void s3_v2_sign(const char *secret, const void *msg, size_t n, char out[S3_V2_SIG_LEN + 1]);
/* Whether sig is s3_v2_sign's of msg (constant time). */
bool s3_v2_match(const char *secret, const void *msg, size_t n, sv_t sig);
/* Appends the SigV2 string to sign of req, with date as its Date line (""
 * when x-amz-date is sent, Expires for the query form), in one of the
 * forms clients sign (sigv2.c): as sent (0), or with these set: */
#define S3_V2_BUCKET_SLASH 1u /* a path-style bucket's path "/b" as "/b/" */
#define S3_V2_SUB_TWICE 2u    /* a leading sub-resource said twice: "/b?acl?acl" */
void s3_v2_string_to_sign(buf_t *out, const s3_req_t *req, sv_t date, unsigned form);
/* Splits "AWS AK:SIG" (views into h). AIS_ERR with 400 InvalidArgument
 * when it is not of that form or a part is empty. */
int s3_v2_parse_authz(sv_t h, sv_t *access_key, sv_t *signature, s3_autherr_t *err);
/* Whether the raw query carries AWSAccessKeyId (a SigV2 presigned URL). */
bool s3_v2_presigned(sv_t query);
/*
 * s3_v2_verify checks a SigV2 request: the header form when authz.ptr,
 * else the presigned query. Returns AIS_OK with out->kind S3_AUTH_HEADER
 * or S3_AUTH_PRESIGNED and out->key, or AIS_ERR with err: InvalidRequest
 * (400: s3.sigv2 off, or a signed aws-chunked payload), InvalidArgument
 * (400: a malformed header), AccessDenied (403: no valid date, a missing
 * query parameter, "Request has expired"), RequestTimeTooSkewed,
 * InvalidAccessKeyId, SignatureDoesNotMatch (403).
 */
int s3_v2_verify(const s3_authcfg_t *cfg, const s3_req_t *req, sv_t authz, int64_t now, s3_auth_t *out,
                 s3_autherr_t *err);

/* Standard base64 with padding. s3_b64_decode returns the decoded length,
 * or -1 when in is not canonical base64 or does not fit outsz. */
long s3_b64_decode(sv_t in, unsigned char *out, size_t outsz);

#endif
