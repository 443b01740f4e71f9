/*
 * authz.h - access control as a node applies it: who may call which
 * route, signed redirects, the cluster secret on intra-cluster calls, and
 * S3 keys' users (the rules on tokens and signatures are auth.h).
 *
 * A bucket's access property (BMD access: ro, rw, or bits) is enforced
 * here too, for every client, auth on or off (rule 1a below).
 *
 * Who a request is, in the order the hook (authz_check) looks:
 *  1. An intra-cluster call: it carries AUTH_INTRA_HDR, valid under
 *     cluster.secret for this node (its Host is this node's address in the
 *     cluster map), this request (method, target, body) and now, and not
 *     seen before. It may do anything. An invalid one is 401, and so is
 *     a request with the "Ais-Intra" header or to an intra-only route
 *     (metasync, join, vote, EC slices, a target's S3 uploads, an
 *     object's metadata PATCH) without a valid one, whenever cluster.secret
 *     is set: a stranger cannot join, push a map, vote, or be served as a
 *     peer. Without cluster.secret nothing is checked (trusted networks).
 *  2. With auth.enabled only (the rest is open otherwise, but for the
 *     bucket access property: an object or bucket route is decided by
 *     authz_request for an AUTHZ_OPEN principal):
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
 *     S3 routes declare theirs in their codec (s3.c) and are decided by
 *     authz_decide as well. /v1/health is public (HTTP_ROUTE_PUBLIC).
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

/*
 * Node headers: request headers that state a fact the receiver believes
 * and a client must not state itself (who the client of a relayed S3
 * request is; that a GetBatch is a peer's sub-request). Every one is
 * listed here, in this order (the order their signature covers them).
 * The hook (authz_check) keeps them, before any handler runs, only when
 *  - the request is an intra-cluster call (AUTH_INTRA_HDR, rule 1 above),
 *  - or, with cluster.secret, it carries AUTH_FWD_HDR valid for this
 *    node, method, request-target, now and exactly the node headers it
 *    has (authz_fwd_lines); an invalid one is 401,
 *  - or, without cluster.secret, it comes from a node's address in the
 *    cluster map (trusted networks: anyone on a node's host may);
 * and drops them from the request otherwise, so a handler that reads one
 * reads what a node of the cluster said.
 */
#define AUTHZ_HDR_S3_CLIENT "Ais-S3-Client" /* "ADDR TLS": a relayed S3 request's client (s3api.h) */
#define AUTHZ_HDR_MOSS_PEER "Ais-Moss-Peer" /* a GetBatch sub-request: served here, never forwarded */
#define AUTHZ_NODE_HDRS 2
/* Is name a node header, or AUTH_FWD_HDR (a relay copies neither from
 * the request it relays: authz_fwd_lines writes its own)? */
bool authz_node_header(sv_t name);
/* Appends to hb the header lines "Name: value\r\n" of the node headers
 * vals names (vals[i] for the i-th of the list above; NULL: not sent) and,
 * with cluster.secret, the AUTH_FWD_HDR line that vouches for them on the
 * request method target to the node at base_url ("http://host:port"). */
void authz_fwd_lines(const char *method, const char *base_url, sv_t target, const char *const vals[AUTHZ_NODE_HDRS],
		     buf_t *hb);

/*
 * One authorization decision per request. A route (native: route_needs
 * here; S3: its codec, s3.c) or a parser of a body (GetBatch entries, a
 * set-bprops value) declares every resource the request touches as an
 * authz_res_t, and authz_decide alone says whether the principal may. No
 * handler compares permissions itself.
 *
 * The rules, in this order for every resource:
 *  1. A peer (a valid intra-cluster call; without cluster.secret, one
 *     that says it is: "Ais-Intra") may do anything: rebalance,
 *     replication, EC and repairs move data whatever the bucket allows.
 *  1a. A bucket's access property (bmd.h BMD_ACCESS_*, "what may be done
 *     with the bucket"): a resource whose res.op is not among its
 *     res.access is refused to every other principal, auth on or off, a
 *     cluster administrator too; no grant or ACL lets it in.
 *  1b. A bucket policy's explicit Deny (res.pol AUTHZ_POL_DENY, the S3
 *     door's evaluation, access.c) refuses the resource to every other
 *     principal, owner and administrators too; AUTHZ_POL_LATER: the
 *     policy waits for the object's metadata (its tags), like acl_later.
 *  2. AUTHZ_CLUSTER (creating buckets, a bucket's backend, the cluster's
 *     own operations) needs a cluster administrator: an admin token, or a
 *     user with auth.grant USER:*:admin; with auth off, anyone but an
 *     anonymous S3 request. No ACL grants it.
 *  3. Otherwise the principal's own permissions: a token's (or the
 *     token's a signed redirect was issued for), or an S3 user's
 *     auth.grant lines. With auth off there are none to ask.
 *  3a. Else a bucket policy's Allow (res.pol AUTHZ_POL_ALLOW).
 *  4. Else the ACL: res.acl (an S3ACL_* need; 0: no ACL grants it) against
 *     res.acl_have, what the ACLs give this principal (access.c, which
 *     with auth.enabled counts only group grants for signed users).
 *     acl_later: that ACL is an object's, not read yet: the resource is
 *     undecided until the caller fills acl_have and decides again.
 *  5. Else, with auth off, any principal but an anonymous one.
 * Deny wins: the request is allowed only when every resource is, and a
 * resource one rule refuses is never let in by another resource's allow
 * (a writable destination does not open a copy's source). Anonymous is a
 * principal with no permissions of its own: only ACLs' group grants.
 */
#define AUTHZ_CLUSTER (1u << 9) /* a res.perm: a cluster administrator (rule 2) */
#define AUTHZ_MONITOR (1u << 8) /* a res.perm: a monitor or an administrator */

typedef enum authz_kind {
	AUTHZ_PEER = 1, /* an intra-cluster call */
	AUTHZ_OPEN,     /* a native client with auth off: nobody to identify */
	AUTHZ_TOKEN,    /* a bearer token or the signed redirect made from one */
	AUTHZ_USER,     /* an S3 key's user (auth.grant) */
	AUTHZ_ANON,     /* an unsigned S3 request */
} authz_kind_t;

typedef struct authz_who {
	authz_kind_t kind;
	const auth_token_t *tok; /* AUTHZ_TOKEN */
	sv_t user;               /* AUTHZ_USER: the user id */
} authz_who_t;

typedef struct authz_res {
	sv_t bucket;       /* decoded; empty with AUTHZ_CLUSTER/MONITOR: the cluster */
	sv_t object;       /* empty: the bucket itself */
	unsigned perm;     /* AUTH_* (perm.h), AUTHZ_CLUSTER or AUTHZ_MONITOR */
	unsigned acl;      /* S3ACL_* an ACL must give to grant it; 0: none can */
	unsigned acl_have; /* S3ACL_* the ACLs give the principal (rule 4) */
	bool acl_later;    /* acl_have is an object's, not known yet */
	const char *role;  /* what it is to the request, for messages ("copy source") */
	/* The bucket's access property (rule 1a): op, the one BMD_ACCESS_*
	 * bit the request needs of the bucket (0: none, e.g. creating it or
	 * a set-bprops of only "access"), declared with the resource;
	 * access, the bucket's bits, filled from the BMD (authz_access_fill). */
	unsigned op;
	unsigned access;
	/* The bucket policy's verdict on this resource for this principal
	 * (rules 1b and 3a; S3 only): AUTHZ_POL_* */
	unsigned char pol;
} authz_res_t;
enum { AUTHZ_POL_NONE, AUTHZ_POL_ALLOW, AUTHZ_POL_DENY, AUTHZ_POL_LATER };

enum authz_verdict { AUTHZ_ALLOW, AUTHZ_DENY, AUTHZ_LATER };

/* The decision over res[0..n). AUTHZ_DENY with *bad the first resource
 * refused; AUTHZ_LATER when none is refused but one waits for its object
 * ACL (*bad: that one); AUTHZ_ALLOW. Pure: any thread. */
enum authz_verdict authz_decide(const authz_who_t *who, const authz_res_t *res, size_t n, size_t *bad);
/* The node's bucket lookup (installed once a node has its maps: the
 * cluster's runtime): true with *access the BMD access bits of bucket,
 * false when there is no such bucket. Without one, or for a bucket not in
 * the BMD, nothing is refused by rule 1a (the handler answers 404). */
typedef bool (*authz_access_fn)(void *ctx, sv_t bucket, unsigned *access);
void authz_set_access_lookup(authz_access_fn fn, void *ctx);
/* Fills res.access of every resource of res[0..n) that declares an op. */
void authz_access_fill(authz_res_t *res, size_t n);
/* The same for a native request that passed authz_check, as its
 * principal (its resources' access filled first); on false, 403 with
 * what was refused has been answered. */
bool authz_request(http_req_t *req, authz_res_t *res, size_t n);
/* The reason res was refused to who, for a 403's message, into out. */
void authz_why(const authz_who_t *who, const authz_res_t *res, buf_t *out);
/* Is the request a valid intra-cluster call (or, without cluster.secret,
 * one that says it is: the trusted-network setting)? Only peers may set
 * reserved metadata (s3.* custom keys). */
bool authz_is_peer(http_req_t *req);
/* Is the request one of the cluster's own calls, for limits meant for
 * clients (net.rate_limit)? With cluster.secret: it carries the cluster's
 * signature (authz_check verifies it right after, 401 if it is not
 * valid); without: it comes from a node's address (the rule of the
 * per-client connection cap). The HTTP server's is_cluster_call hook. */
bool authz_cluster_call(http_req_t *req);

#endif
