/*
 * authz.h - access control as a node applies it: who may call which
 * route, signed redirects, the cluster secret on intra-cluster calls, and
 * S3 keys' users (the rules on tokens and signatures are auth.h).
 *
 * Who a request is, in the order the hook (authz_check) looks:
 *  1. An intra-cluster call: it carries AUTH_INTRA_HDR, valid under
 *     cluster.secret. It may do anything. An invalid one is 401, and so is
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
 *       administrators; reading cluster state and /metrics: any valid token.
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
/* The http server's authz hook (http_server_opts_t.authz). */
int authz_check(http_req_t *req);
/* Does the request that passed authz_check have perm on bucket? Intra
 * calls, signed redirects and auth off: yes. Otherwise the token decides;
 * on false, 403 has been answered. */
bool authz_allows(http_req_t *req, sv_t bucket, unsigned perm);
/* Answers 307 to base_url + the request's target; with auth.enabled the
 * Location carries a signed redirect for the same method and path, valid
 * for 60 s. */
/* The same for a request routed again by a target: the query carries
 * OL_HOP_PARAM=hop (0: none), so a loop between nodes is caught (ol.h). */
void authz_redirect_hop(http_req_t *req, const char *base_url, unsigned hop);
void authz_redirect(http_req_t *req, const char *base_url);
/* The header line "Ais-Cluster-Auth: TS.SIG" for an intra-cluster call
 * of method to url, in out. false (out empty) when cluster.secret is not
 * set. Any thread. */
bool authz_intra_header(const char *method, const char *url, char *out, size_t outsz);
/* S3: with auth.enabled, may user (an s3.key's user id) have perm on
 * bucket (empty: the service, creating buckets: administrators)? Always
 * true with auth off. */
bool authz_s3_allows(sv_t user, sv_t bucket, unsigned perm);

#endif
