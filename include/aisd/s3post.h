/*
 * s3post.h - S3 browser-based uploads (POST Object with an HTML form): the
 * multipart/form-data parser, the POST policy document and its signature.
 *
 * How a handler uses it:
 *  1. s3_form_init(&f, arena, Content-Type): AIS_ERR when the request is
 *     not multipart/form-data with a boundary.
 *  2. Feed the body as it comes: s3_form_feed(&f, p, n, &used, emit, arg)
 *     keeps the form fields (at most S3_FORM_FIELDS of them, S3_FORM_HEAD_MAX
 *     bytes of body before the file's content) and stops with S3_FORM_FILE
 *     when the part named "file" begins (used: the bytes it took); every
 *     later call passes the file's bytes to emit (views into the input,
 *     never held) and reads past the rest.
 *  3. s3_post_verify(): the policy's signature (SigV4: x-amz-algorithm,
 *     -credential, -date, -signature; or SigV2: AWSAccessKeyId, signature)
 *     and s3_post_policy_check(): the policy's expiration and conditions
 *     against the fields (the key with ${filename} already substituted).
 *  4. At the end of the body: s3_form_finish() says whether the form was
 *     whole (the file part closed by its boundary).
 * Memory is bounded by S3_FORM_HEAD_MAX (fields, part headers) whatever the
 * body. Pure: no I/O, no clock (the caller passes now).
 */
#ifndef AISD_S3POST_H
#define AISD_S3POST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/arena.h"
#include "aisd/s3auth.h"
#include "aisd/util.h"

#define S3_FORM_HEAD_MAX (64u << 10) /* body bytes before the file's content */
#define S3_FORM_FIELDS 64            /* form fields before the file */
#define S3_FORM_BOUNDARY_MAX 70      /* RFC 2046 */

enum { S3_FORM_MORE, S3_FORM_FILE, S3_FORM_ERR };

typedef struct s3_form_field {
	char *name; /* as sent (S3 field names are case-insensitive) */
	char *value;
	size_t len;
} s3_form_field_t;

typedef struct s3_form {
	/* what was parsed */
	size_t nfields;
	s3_form_field_t fields[S3_FORM_FIELDS];
	char *filename;     /* the file part's filename= ("" if none) */
	char *file_ctype;   /* the file part's Content-Type (NULL if none) */
	uint64_t file_len;  /* file bytes passed to emit so far */
	bool file_seen;     /* the file part began */
	bool file_done;     /* ... and its closing boundary came */
	char err[160];      /* why S3_FORM_ERR / AIS_ERR */
	/* the parser's state */
	arena_t *a;
	char delim[S3_FORM_BOUNDARY_MAX + 5]; /* "\r\n--" boundary */
	size_t dlen;
	size_t m;           /* delimiter bytes matched */
	int st;
	uint64_t head;      /* body bytes before the file's content */
	buf_t cur;          /* the current part's headers or field value */
	char *pname;        /* the current part's field name */
	bool pfile;         /* the current part is the file */
	bool ended;         /* the closing delimiter came */
} s3_form_t;

/* AIS_OK, or AIS_ERR (err set) when content_type is not multipart/form-data
 * with a usable boundary. Frees its buffer with the arena. */
int s3_form_init(s3_form_t *f, arena_t *a, sv_t content_type);
/* Feeds n body bytes. S3_FORM_MORE: all taken; S3_FORM_FILE: the file's
 * content begins after the *used bytes taken (feed the rest again); after
 * that, file bytes go to emit. S3_FORM_ERR: malformed (err set), or emit's
 * failure (err empty). */
int s3_form_feed(s3_form_t *f, const char *p, size_t n, size_t *used, s3_emit_fn emit, void *arg);
/* At the end of the body: AIS_OK when a file part came whole, else AIS_ERR
 * with err. */
int s3_form_finish(s3_form_t *f);
/* The value of field name (case-insensitive; the first), NULL if absent. */
const char *s3_form_get(const s3_form_t *f, const char *name, size_t *len);

/* The signature of a POST form (the policy field signed): out->kind
 * S3_AUTH_ANON when it has no policy and no credentials (an anonymous
 * upload, decided by the bucket's ACL and policy), S3_AUTH_OFF when auth is
 * off, else S3_AUTH_PRESIGNED with out->key. AIS_ERR with err: AccessDenied
 * (403, a bad or missing signature, an unknown key), InvalidArgument (400,
 * a missing or malformed field). */
int s3_post_verify(const s3_authcfg_t *cfg, const s3_form_t *f, int64_t now_s, s3_auth_t *out, s3_autherr_t *err);
/* Checks the base64 policy document of the form against its fields,
 * bucket and key (the key field with ${filename} substituted) at now_s:
 * AIS_OK with the content-length-range in *lmin, *lmax (0 and UINT64_MAX
 * when none); AIS_ERR with err: AccessDenied (403) "Invalid according to
 * Policy: ...", InvalidPolicyDocument (400) for a malformed one. */
int s3_post_policy_check(arena_t *a, const s3_form_t *f, sv_t bucket, sv_t key, int64_t now_s, uint64_t *lmin,
			 uint64_t *lmax, s3_autherr_t *err);

#endif
