/*
 * authz.h - access control as a node applies it: who may call which
 * route, signed redirects, the cluster secret on intra-cluster calls, and
 * S3 keys' users (the rules on tokens and signatures are auth.h).
 *
 * Who a request is, in the order the hook (authz_check) looks:
 *  1. An intra-cluster call: it carries AUTH_INTRA_HDR, valid under
 *     cluster.secret for this node (its Host is this node's address in the
 *     cluster map), this request (method, target, body) and now, and not
 *     seen before. It may do anything. An invalid one is 401, and so is
 *     a request with the "Ais-Intra" header or to an intra-only route
 *     (metasync, join, vote) without a valid one, whenever cluster.secret
 *     is set: a stranger cannot join, push a map, vote, or be served as a
 *     peer. Without cluster.secret nothing is checked (trusted networks).
 *  2. With auth.enabled only (the rest is open otherwise):
 *     - a signed redirect (ais_rexp, ais_rsig in the query) valid for this
 *       method and path: a gateway or target authorised it;
 *     - a bearer token (Authorization: Bearer JWT) whose permissions cover
 *       the route: objects GET/HEAD read, PUT write, DELETE delete; bucket
 *       GET list, HEAD read, DELETE/PATCH admin of the bucket; bucket
 *       create, cluster and node changes (PUT), jobs, set-config: cluster
 *       administrators; reading the cluster map: any valid token;
 *       statistics (cluster and node stats, mountpaths) and /metrics: a
 *       monitor or administrator token.
 *     Missing, malformed, forged or expired credentials: 401 with
 *     WWW-Authenticate; valid but not enough: 403. Both JSON bodies.
 *     S3 routes check their own (SigV4 key -> user -> auth.grant), see
 *     authz_s3_allows. /v1/health is public (HTTP_ROUTE_PUBLIC).
 */
#ifndef AISD_AUTHZ_H
#define AISD_AUTHZ_H

#include <stdbool.h>

#include "aisd/auth.h"
#include "aisd/conf.h"
#include "aisd/http.h"

/* Takes the node's secrets and switches from c (once, before serving;
 * later calls replace them). */
void authz_init(const conf_t *c);
bool authz_enabled(void);
/* The http server's authz hooks (http_server_opts_t.authz, .authz_body):
 * the head, then a buffered body against the digest a signature bound. */
int authz_check(http_req_t *req);
int authz_check_body(http_req_t *req);
/* This node's URL in the cluster map: intra-cluster calls must be signed
 * for its authority. Any thread. */
void authz_set_self(const char *url);
/* Records an intra-cluster signature (key, signed at ts): AIS_OK the
 * first time, AIS_ERR when it was taken before and is still live, AIS_AGAIN
 * when the cache is full of live ones. Any thread. */
int authz_replay_take(uint64_t key, int64_t ts, int64_t now);
/* Does the request that passed authz_check have perm on bucket? Intra
 * calls and auth off: yes. Otherwise the token, or the user a signed
 * redirect was issued for, decides; on false, 403 has been answered. */
bool authz_allows(http_req_t *req, sv_t bucket, unsigned perm);
/* Answers 307 to base_url + the request's path; with auth.enabled and a
 * token the Location carries a signed redirect for the same method, path,
 * query and (buffered) body and the token's user and permissions, valid
 * for 60 s but never past the token. A request let in by a signed
 * redirect keeps that signature (nothing is extended). */
void authz_redirect(http_req_t *req, const char *base_url);
/* The same for a request routed again by a target: the query carries
 * OL_HOP_PARAM=hop (0: none), so a loop between nodes is caught (ol.h),
 * and OL_PREV_PARAM=prev (0: none), a read sent on to a holder under the
 * previous map (ol_moved): outside the redirect's signature (earlier
 * values are replaced), OL_PREV_PARAM signed itself (authz_prev_value). */
void authz_redirect_hop(http_req_t *req, const char *base_url, unsigned hop, uint64_t prev);
/* The value of OL_PREV_PARAM / OL_PREV_HDR for prev on a request for path
 * (signed under cluster.secret: auth_prev_sign; the bare number without
 * one); and the check of one received: true, *prev set, when valid for
 * path (without cluster.secret any number: nothing is checked then). A
 * client cannot make a target serve a copy the map does not place there. */
void authz_prev_value(uint64_t prev, sv_t path, buf_t *out);
bool authz_prev_get(sv_t value, sv_t path, uint64_t *prev);
/* The header line "Ais-Cluster-Auth: TS.NONCE.BODY.SIG" for an
 * intra-cluster call of method to url with body (len bytes; NULL: a
 * streamed or no body, not signed), in out (AUTHZ_INTRA_HDR_MAX). false (out
 * empty) when cluster.secret is not set. Any thread. */
#define AUTHZ_INTRA_HDR_MAX 200
bool authz_intra_header(const char *method, const char *url, const void *body, size_t len, char *out,
			size_t outsz);
/* S3: with auth.enabled, may user (an s3.key's user id) have perm on
 * bucket (empty: the service, creating buckets: administrators)? Always
 * true with auth off. */
bool authz_s3_allows(sv_t user, sv_t bucket, unsigned perm);

#endif
