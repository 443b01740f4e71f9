/*
 * auth.h - access control as a pure library: permissions, bearer tokens
 * (JWT, HS256), the cluster secret's request signatures (intra-cluster
 * calls and signed redirects), and per-user grants from the config.
 *
 * Nothing here does I/O or reads a clock: the caller passes now (Unix
 * seconds). The daemon side (who may do what on which route; the secrets
 * a node runs with) is authz.h.
 *
 * Rules:
 *  1. A token is accepted only with alg HS256, typ JWT (or none), three
 *     canonical base64url parts without padding, a signature that matches
 *     (compared in constant time, before any claim is trusted), a claims
 *     object whose fields have the right types, no unknown permission, and
 *     exp in the future. Anything else is rejected with a reason.
 *  2. Permissions are bits: read, write, list, delete, admin (the bucket's
 *     administration). "ro" is read+list, "rw" is read+write+list+delete,
 *     "admin" all of them (the admin of a bucket may do everything on
 *     it). A token (or grant) with admin: true is a cluster
 *     administrator: every permission on every bucket, and the cluster's
 *     own operations.
 *  3. Signatures by the cluster secret are HMAC-SHA256 in lower-case hex
 *     over a message that names what it allows (method, path, time), so a
 *     signature for one request is no use for another.
 */
#ifndef AISD_AUTH_H
#define AISD_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"
#include "aisd/names.h"

enum {
	AUTH_READ = 1 << 0,   /* GET/HEAD objects, HEAD bucket */
	AUTH_WRITE = 1 << 1,  /* PUT objects */
	AUTH_LIST = 1 << 2,   /* list objects */
	AUTH_DELETE = 1 << 3, /* DELETE objects */
	AUTH_ADMIN = 1 << 4,  /* bucket properties, destroy the bucket */
};
#define AUTH_RO (AUTH_READ | AUTH_LIST)
#define AUTH_RW (AUTH_READ | AUTH_WRITE | AUTH_LIST | AUTH_DELETE)
#define AUTH_ALL (AUTH_RW | AUTH_ADMIN)

#define AUTH_TOKEN_MAX 8192   /* longest token accepted (bytes) */
#define AUTH_MAX_BUCKETS 64   /* bucket entries in one token */
#define AUTH_USER_MAX 128
#define AUTH_SIG_HEX 64       /* an HMAC-SHA256 in hex */

/* Parses a permission list: names (read, write, list, delete, admin) and
 * shorthands (ro, rw, admin) separated by ',' or '+'. AIS_OK with *bits,
 * or AIS_ERR. */
int auth_perm_parse(sv_t s, unsigned *bits);
/* The shortest text for bits ("ro", "rw", "admin", or "read,delete"). */
void auth_perm_format(unsigned bits, buf_t *out);

typedef struct auth_bucket_perm {
	char bucket[NAME_BUCKET_MAX + 1]; /* "*": every bucket */
	unsigned perm;
} auth_bucket_perm_t;

typedef struct auth_token {
	char user[AUTH_USER_MAX + 1];
	bool admin;          /* cluster administrator */
	int64_t exp;         /* Unix seconds */
	size_t nb;
	auth_bucket_perm_t b[AUTH_MAX_BUCKETS];
} auth_token_t;

/*
 * auth_jwt_decode splits and decodes a token without checking its
 * signature or time: header (alg HS256), claims (rule 1), and the
 * signature bytes. *signed_len is the length of "HEADER.CLAIMS", the bytes
 * the signature covers. AIS_OK, or AIS_ERR with a reason in err (never
 * repeating the token).
 */
int auth_jwt_decode(const char *tok, size_t len, auth_token_t *out, size_t *signed_len,
		    unsigned char sig[32], buf_t *err);
/* The whole check of rule 1: decode, signature under key, exp > now.
 * AIS_OK, or AIS_ERR with the reason in err; *expired tells an expired but
 * otherwise valid token apart (may be NULL). */
int auth_jwt_verify(const char *tok, size_t len, const void *key, size_t klen, int64_t now,
		    auth_token_t *out, bool *expired, buf_t *err);
/* Appends the signed token for t (HS256) to out. */
void auth_jwt_make(const auth_token_t *t, const void *key, size_t klen, buf_t *out);
/* Does t allow perm (all of its bits) on bucket? An admin token allows
 * everything; a "*" entry matches every bucket. */
bool auth_token_allows(const auth_token_t *t, sv_t bucket, unsigned perm);

/* HMAC-SHA256 of msg under key, in lower-case hex (out: 65 bytes). */
void auth_hmac_hex(const void *key, size_t klen, const void *msg, size_t mlen, char out[AUTH_SIG_HEX + 1]);
/* Constant-time comparison of a hex signature with the expected one. */
bool auth_sig_eq(sv_t given, const char expect[AUTH_SIG_HEX + 1]);

/*
 * Intra-cluster calls carry AUTH_INTRA_HDR: "TS.SIG", TS the sender's Unix
 * time, SIG = HMAC(secret, "aisd-intra\nTS\nMETHOD\nTARGET"), TARGET the
 * request-target (path and query as sent). auth_intra_sign writes the
 * header value for url (a full URL or a request-target); auth_intra_check
 * accepts a value within AUTH_INTRA_SKEW seconds of now.
 */
#define AUTH_INTRA_HDR "Ais-Cluster-Auth"
#define AUTH_INTRA_SKEW 300
void auth_intra_sign(const void *key, size_t klen, const char *method, const char *url, int64_t now,
		     char *out, size_t outsz);
bool auth_intra_check(const void *key, size_t klen, sv_t value, const char *method, sv_t target, int64_t now);
/* The request-target part of url ("/path?query"; "/" when none). */
sv_t auth_url_target(const char *url);

/*
 * A signed redirect: the Location carries "ais_rexp=EXP&ais_rsig=SIG",
 * SIG = HMAC(secret, "aisd-redirect\nEXP\nMETHOD\nPATH"), PATH the raw
 * request path (without the query). Valid until EXP (Unix seconds).
 */
#define AUTH_REDIR_EXP "ais_rexp"
#define AUTH_REDIR_SIG "ais_rsig"
void auth_redirect_sig(const void *key, size_t klen, const char *method, sv_t path, int64_t exp,
		       char out[AUTH_SIG_HEX + 1]);

/*
 * Grants from the config (auth.grant = USER:BUCKET:PERM): the permissions
 * of an S3 key's user. BUCKET "*" means every bucket; "USER:*:admin" makes
 * USER a cluster administrator. auth_grant_split checks one value
 * (user 1..128 printable bytes without ':', a bucket name or "*", a
 * permission list) and gives its parts.
 */
int auth_grant_split(const char *spec, sv_t *user, sv_t *bucket, unsigned *perm, buf_t *err);
/* Do the grants (n "USER:BUCKET:PERM" strings, already checked) give user
 * perm on bucket (an empty bucket: the cluster's own operations, admin
 * only)? */
bool auth_grants_allow(const char (*grants)[256], int n, sv_t user, sv_t bucket, unsigned perm);

#endif
