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
 *     own operations. One with monitor: true may read what describes the
 *     cluster (maps, stats with mountpath paths, /metrics) and nothing
 *     more; so may administrators.
 *  3. Signatures by the cluster secret are HMAC-SHA256 in lower-case hex
 *     over a canonical message that names everything the request does
 *     (method, path, query, body digest, time; for an intra-cluster call
 *     the receiving node, for a redirect who it is for), so a signature
 *     for one request is no use for another.
 */
#ifndef AISD_AUTH_H
#define AISD_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"
#include "aisd/names.h"
#include "aisd/perm.h"

#define AUTH_TOKEN_MAX 8192   /* longest token accepted (bytes) */
#define AUTH_MAX_BUCKETS 64   /* bucket entries in one token */
#define AUTH_SIG_HEX 64       /* an HMAC-SHA256 in hex */


typedef struct auth_bucket_perm {
	char bucket[NAME_BUCKET_MAX + 1]; /* "*": every bucket */
	unsigned perm;
} auth_bucket_perm_t;

typedef struct auth_token {
	char user[AUTH_USER_MAX + 1];
	bool admin;          /* cluster administrator */
	bool monitor;        /* may read cluster state, stats and /metrics */
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

/* SHA-256 of a body in lower-case hex: what signatures bind a body by.
 * AUTH_BODY_UNSIGNED instead means "no body is signed" (a streamed object
 * body: its own checksum covers it, or no body at all). */
#define AUTH_BODY_UNSIGNED "-"
void auth_body_digest(const void *p, size_t n, char out[AUTH_SIG_HEX + 1]);

/*
 * Intra-cluster calls carry AUTH_INTRA_HDR: "TS.NONCE.BODY.SIG", TS the
 * sender's Unix time, NONCE 16 random hex digits, BODY the body's digest
 * or AUTH_BODY_UNSIGNED, and
 *   SIG = HMAC(secret, "aisd-intra-v2\nTS\nNONCE\nMETHOD\nHOST\nTARGET\nBODY")
 * HOST the receiving node's authority ("host:port" of the URL, lower
 * case), TARGET the request-target (path and query as sent). The
 * canonical form is auth_intra_canon. auth_intra_sign writes the header
 * value for url (a full URL); auth_intra_check accepts a value within
 * AUTH_INTRA_SKEW seconds of now for this method, host and target, and
 * gives the parsed value (the caller compares BODY with the body it got
 * and keeps NONCE+SIG against replays). An empty key (klen 0) verifies
 * nothing: auth_intra_check is then always false.
 */
#define AUTH_INTRA_HDR "Ais-Cluster-Auth"
#define AUTH_INTRA_SKEW 30
#define AUTH_NONCE_HEX 16
typedef struct auth_intra_val {
	int64_t ts;
	sv_t nonce, body, sig;
} auth_intra_val_t;
void auth_intra_canon(int64_t ts, sv_t nonce, const char *method, sv_t host, sv_t target, sv_t body, buf_t *out);
/* nonce: AUTH_NONCE_HEX hex digits; body: a digest or AUTH_BODY_UNSIGNED. */
void auth_intra_sign(const void *key, size_t klen, const char *method, const char *url, const char *body,
		     int64_t now, const char *nonce, char *out, size_t outsz);
bool auth_intra_check(const void *key, size_t klen, sv_t value, const char *method, sv_t host, sv_t target,
		      int64_t now, auth_intra_val_t *out);
/*
 * Headers a node forwards on a client's request (a gateway's relay of an S3
 * request: who the client is) are vouched for by AUTH_FWD_HDR:
 * "TS.NONCE.LINES.SIG", LINES the digest (auth_body_digest) of the
 * canonical lines "name:value\n" (name lower case) of those headers, and
 *   SIG = HMAC(secret, "aisd-fwd-v1\nTS\nNONCE\nMETHOD\nHOST\nTARGET\nLINES")
 * (auth_intra_canon's form under another first line, so neither signature
 * passes for the other: a forwarded client's request is not a peer's).
 * auth_fwd_check accepts a value within AUTH_INTRA_SKEW seconds of now
 * for this method, receiving host, request-target and those lines; an
 * empty key verifies nothing. Not taken once (a relay may send its head
 * twice on a new connection): a sniffer replaying one within its window
 * claims only what the node claimed for that same request.
 */
#define AUTH_FWD_HDR "Ais-Fwd-Auth"
void auth_fwd_sign(const void *key, size_t klen, const char *method, sv_t host, sv_t target, sv_t lines,
		   int64_t now, const char *nonce, char *out, size_t outsz);
bool auth_fwd_check(const void *key, size_t klen, sv_t value, const char *method, sv_t host, sv_t target,
		    sv_t lines, int64_t now);
/* The request-target part of url ("/path?query"; "/" when none). */
sv_t auth_url_target(const char *url);
/* The authority of url ("host:port"; empty when none). */
sv_t auth_url_host(const char *url);

/*
 * A signed redirect: the Location carries, after the request's own query
 * parameters, ais_rexp=EXP&ais_ruser=USER&ais_rperm=PERMS&ais_rbody=BODY&
 * ais_rsig=SIG (USER percent-encoded), where
 *   SIG = HMAC(secret, "aisd-redirect-v2\nEXP\nMETHOD\nPATH\nQUERY\nBODY\nUSER\nPERMS")
 * PATH the raw request path, QUERY the raw query without the ais_r*
 * parameters (in the order sent), BODY the body's digest or
 * AUTH_BODY_UNSIGNED, USER and PERMS who it was issued for (PERMS
 * "admin", or "BUCKET:BITS,..." from auth_perm_encode). Valid until EXP
 * (Unix seconds). The canonical form is auth_redirect_canon.
 */
#define AUTH_REDIR_EXP "ais_rexp"
#define AUTH_REDIR_USER "ais_ruser"
#define AUTH_REDIR_PERM "ais_rperm"
#define AUTH_REDIR_BODY "ais_rbody"
#define AUTH_REDIR_SIG "ais_rsig"
/* The hop count of a request routed between nodes (ol.h): routing only,
 * left out of the signed query, so a target may count it on. */
#define AUTH_REDIR_HOP "ais_hop"
/* The map version under which a target that lacks an object sent its read
 * on to the object's holder under the previous map (ol.h): outside the
 * redirect's signature like ais_hop, but signed itself under the cluster
 * secret (auth_prev_sign), since it lets a target serve a copy the current
 * map does not place there. */
#define AUTH_REDIR_PREV "ais_prev"
/* The request id a gateway's redirect passes on (http.h HTTP_REQID_HDR):
 * inside the signed query, so a target takes it only as the gateway wrote
 * it (authz.c adopt_id). */
#define AUTH_REDIR_ID "ais_id"
/* The value of AUTH_REDIR_PREV (and of the Ais-Prev header) under a key:
 * "PREV.SIG", SIG = HMAC(key, "aisd-prev-v1\nPREV\nPATH"), PATH the raw
 * request path it is for. auth_prev_check: true, *prev set, when value is
 * that for path under key (never with an empty key). */
void auth_prev_sign(const void *key, size_t klen, uint64_t prev, sv_t path, buf_t *out);
bool auth_prev_check(const void *key, size_t klen, sv_t value, sv_t path, uint64_t *prev);
void auth_redirect_canon(int64_t exp, const char *method, sv_t path, sv_t query, sv_t body, sv_t user, sv_t perms,
			 buf_t *out);
/* Appends the query of a redirect for t: the request's query q without
 * ais_r* parameters, then the signed ones ("a=1&ais_rexp=..."). */
void auth_redirect_query(const void *key, size_t klen, const char *method, sv_t path, sv_t q, const char *body,
			 int64_t exp, const auth_token_t *t, buf_t *out);
/* Checks a request's raw query q. AIS_DONE: no ais_r* parameter in it;
 * AIS_OK: a valid signature for method and path, unexpired at now, *t
 * who it was issued for (exp = EXP) and *body the BODY it binds;
 * AIS_ERR: malformed, forged or expired, with the reason in err; always
 * AIS_ERR for a query with ais_r* parameters when klen is 0 (no key). */
int auth_redirect_verify(const void *key, size_t klen, const char *method, sv_t path, sv_t q, int64_t now,
			 auth_token_t *t, char body[AUTH_SIG_HEX + 1], buf_t *err);
/* The permissions of t as PERMS; and back (AIS_ERR when malformed, *t
 * then unspecified). */
void auth_perm_encode(const auth_token_t *t, buf_t *out);
int auth_perm_decode(sv_t s, auth_token_t *t);

/* Grants from the config (auth.grant, perm.h): the permissions of an S3
 * key's user. Do the grants (n "USER:BUCKET:PERM" strings, already
 * checked) give user perm on bucket (an empty bucket: the cluster's own
 * operations, admin only)? */
bool auth_grants_allow(const char (*grants)[256], int n, sv_t user, sv_t bucket, unsigned perm);

#endif
