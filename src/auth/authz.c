/*
 * authz.c - the node's access control (authz.h): the http server's hook
 * that declares, per route, the resource a request touches and lets it go
 * on or not; the one decision (authz_decide) every declaration goes to,
 * native or S3; signed redirects; the cluster secret's header on
 * intra-cluster calls.
 *
 * The settings are read once at start (authz_init) into this file's
 * statics, before any server thread runs, and only read afterwards; the
 * node's own address (authz_set_self) and the replay cache have locks, the
 * BMD lookup of the bucket access property (authz_set_access_lookup,
 * installed by the cluster's runtime) is atomic.
 *
 * Invariants:
 *  1. A signature is checked over everything it binds before the handler
 *     runs: the head at once; the body digest, where the route buffers a
 *     body, when the body is in (authz_check_body), before the handler.
 *  2. An intra-cluster signature is taken once: the first request that
 *     passes every check records it (replay.c), and the same one again
 *     within its window is 401.
 *  3. A redirect never extends what it came from: a token's 307 expires
 *     with the token at the latest; a request let in by a signed redirect
 *     is redirected with that same signature, never a new one.
 *  4. A node header (authz.h) reaches a handler only when a node vouched
 *     for it: an intra-cluster call, a relay's AUTH_FWD_HDR over exactly
 *     the node headers the request has, or (without cluster.secret) a
 *     node's address. The hook drops it otherwise; the sender's address
 *     alone never vouches once there is a secret.
 */
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "aisd/authz.h"
#include "aisd/hlc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define REDIRECT_TTL 60 /* seconds a signed redirect stays valid */

static const conf_t *cfg;
static bool enabled;
static char csecret[CONF_SECRET_MAX], tsecret[CONF_SECRET_MAX];
static size_t csecret_len, tsecret_len;

static pthread_mutex_t self_mu = PTHREAD_MUTEX_INITIALIZER;
static char self_host[256]; /* "host:port" intra-cluster calls must name; "": not known yet */

enum who { WHO_INTRA = 1, WHO_REDIRECT, WHO_TOKEN };
struct principal {
	enum who who;
	auth_token_t tok;            /* WHO_TOKEN, WHO_REDIRECT: who and what */
	char body[AUTH_SIG_HEX + 1]; /* the signed body digest, or AUTH_BODY_UNSIGNED */
	bool record;                 /* WHO_INTRA: its signature goes to the replay cache after the body */
	uint64_t rkey;               /* ... under this key, */
	int64_t rts;                 /* ... signed at this time */
};

void authz_init(const conf_t *c)
{
	cfg = c;
	enabled = c->auth_enabled;
	csecret_len = strlen(c->cluster_secret);
	memcpy(csecret, c->cluster_secret, csecret_len + 1);
	tsecret_len = strlen(c->auth_secret);
	memcpy(tsecret, c->auth_secret, tsecret_len + 1);
}

bool authz_enabled(void) { return enabled; }

void authz_set_self(const char *url)
{
	sv_t h = auth_url_host(url);
	pthread_mutex_lock(&self_mu);
	snprintf(self_host, sizeof(self_host), "%.*s", (int)MIN(h.len, sizeof(self_host) - 1), h.ptr);
	pthread_mutex_unlock(&self_mu);
}

/* The authority intra-cluster calls to this node are signed for: its URL
 * in the cluster map (not the Host header: an S3 request forwarded by a
 * gateway keeps the client's). Before the node knows it (no cluster): the
 * Host header. */
static void self_authority(http_req_t *req, char *out, size_t outsz)
{
	pthread_mutex_lock(&self_mu);
	snprintf(out, outsz, "%s", self_host);
	pthread_mutex_unlock(&self_mu);
	if (!out[0]) {
		sv_t h = http_req_header(req, "Host");
		snprintf(out, outsz, "%.*s", (int)MIN(h.len, outsz - 1), h.ptr ? h.ptr : "");
	}
}

static int64_t now_s(void) { return time_now_ns() / 1000000000LL; }

static int deny(http_req_t *req, int status, const char *why)
{
	if (status == 401)
		http_resp_header(req, "WWW-Authenticate", "Bearer realm=\"aisd\"%s",
				 http_req_has_header(req, "Authorization") ? ", error=\"invalid_token\"" : "");
	http_resp_error(req, status, "%s", why);
	log_debug("access denied (%d): %s %.*s: %s", status, http_method_name(req->method),
		  (int)MIN(req->path.len, 256), req->path.ptr, why);
	return AIS_ERR;
}

/* Does a GET of cluster or node state ask for statistics (mountpath
 * paths, capacities, counters) rather than the maps every client may read? */
static bool wants_stats(http_req_t *req, const char *dflt)
{
	sv_t what = sv_from(dflt);
	http_query_get(req, "what", &what);
	return !(sv_eqstr(what, "smap") || sv_eqstr(what, "cmap") || sv_eqstr(what, "bmd") || sv_eqstr(what, "meta") ||
		 sv_eqstr(what, "rebalance") || sv_eqstr(what, "jobs") || sv_eqstr(what, "resilver"));
}

/* bmd.h's BMD_ACCESS_* bits (the same values; tests/unit/test_auth.c
 * holds them to it): this subsystem does not include the BMD's header. */
enum {
	ACCESS_GET = 1u << 0,
	ACCESS_HEAD = 1u << 1,
	ACCESS_PUT = 1u << 2,
	ACCESS_DELETE = 1u << 3,
	ACCESS_LIST = 1u << 4,
	ACCESS_PATCH = 1u << 5,
	ACCESS_DESTROY = 1u << 6,
	ACCESS_RO = ACCESS_GET | ACCESS_HEAD | ACCESS_LIST,
	ACCESS_ALL = (1u << 7) - 1,
};
static const char *const access_names[] = {"GET", "HEAD", "PUT", "DELETE", "LIST", "PATCH", "DESTROY"};

/* The node's BMD lookup: the context first, then the function (release);
 * readers take the function (acquire), then the context. */
static _Atomic(authz_access_fn) access_fn;
static void *_Atomic access_ctx;

void authz_set_access_lookup(authz_access_fn fn, void *ctx)
{
	atomic_store_explicit(&access_fn, NULL, memory_order_release);
	atomic_store_explicit(&access_ctx, ctx, memory_order_release);
	atomic_store_explicit(&access_fn, fn, memory_order_release);
}

void authz_access_fill(authz_res_t *res, size_t n)
{
	authz_access_fn fn = atomic_load_explicit(&access_fn, memory_order_acquire);
	void *ctx = atomic_load_explicit(&access_ctx, memory_order_acquire);
	for (size_t i = 0; i < n; i++) {
		unsigned a = ACCESS_ALL;
		if (res[i].op && (!fn || !res[i].bucket.len || !fn(ctx, res[i].bucket, &a)))
			a = ACCESS_ALL; /* no such bucket: the handler says so */
		res[i].access = a;
	}
}

/* The resource a native route declares (authz.h): *res (bucket, perm and
 * the bucket access op; n 0: any valid credentials) and *intra_only: only other nodes may
 * call it. GetBatch declares its entries' buckets once its body is parsed
 * (tgt_moss_allowed), set-bprops the bucket's backend (AUTHZ_CLUSTER) when
 * its value names one (the gateway); the rest is here. docs/api.md has
 * the table. */
static size_t route_needs(http_req_t *req, authz_res_t *res, bool *intra_only)
{
	const char *pfx = req->route->prefix;
	sv_t sub = req->subpath;
	const char *slash = memchr(sub.ptr, '/', sub.len);
	sv_t first = {sub.ptr, slash ? (size_t)(slash - sub.ptr) : sub.len};
	enum http_method m = req->method;

	memset(res, 0, sizeof(*res));
	res->bucket = (sv_t){"", 0};
	res->object = (sv_t){"", 0};
	res->perm = AUTHZ_CLUSTER;
	*intra_only = false;
	if (!strcmp(pfx, "/v1/objects")) {
		res->bucket = first;
		res->object = slash ? (sv_t){slash + 1, sub.len - first.len - 1} : (sv_t){"", 0};
		res->perm = m == HTTP_PUT ? AUTH_WRITE : m == HTTP_DELETE ? AUTH_DELETE : AUTH_READ;
		res->op = m == HTTP_GET	     ? ACCESS_GET
			  : m == HTTP_HEAD   ? ACCESS_HEAD
			  : m == HTTP_DELETE ? ACCESS_DELETE
					     : ACCESS_PUT;
		*intra_only = m == HTTP_PATCH; /* a copy's metadata, between targets */
	} else if (!strcmp(pfx, "/v1/buckets")) {
		res->bucket = first;
		if (!first.len)
			return m == HTTP_GET ? 0 : 1;
		else if (m == HTTP_GET)
			res->perm = AUTH_LIST, res->op = ACCESS_LIST;
		else if (m == HTTP_HEAD)
			res->perm = AUTH_READ, res->op = ACCESS_HEAD;
		else if (m == HTTP_DELETE)
			res->perm = AUTH_ADMIN, res->op = ACCESS_DESTROY;
		else if (m == HTTP_PATCH)
			res->perm = AUTH_ADMIN; /* its op by its value: the gateway's bprops_allowed */
		else
			res->bucket = (sv_t){"", 0}; /* create: administrators */
	} else if (!strcmp(pfx, "/v1/ml/moss")) {
		return 0; /* every entry's bucket: tgt_moss_allowed */
	} else if (!strcmp(pfx, "/v1/metasync") || !strcmp(pfx, "/v1/ec") || !strcmp(pfx, "/v1/s3uploads") ||
		   !strcmp(pfx, "/v1/dsort")) {
		*intra_only = true; /* maps; slices; a target's uploads for a gateway's list; a dsort index */
	} else if (!strcmp(pfx, "/v1/cluster")) {
		if (m == HTTP_POST)
			*intra_only = true; /* join, vote */
		else if (m == HTTP_GET && !wants_stats(req, "smap"))
			return 0;
		else if (m == HTTP_GET)
			res->perm = AUTHZ_MONITOR;
	} else if (!strcmp(pfx, "/v1/daemon")) {
		if (m == HTTP_GET && !wants_stats(req, "stats"))
			return 0;
		else if (m == HTTP_GET)
			res->perm = AUTHZ_MONITOR;
	} else if (!strcmp(pfx, "/v1/daemon/mountpaths") || !strcmp(pfx, "/metrics")) {
		if (m == HTTP_GET)
			res->perm = AUTHZ_MONITOR;
	} else if (!strcmp(pfx, "/v1/etl")) {
		if (m == HTTP_GET)
			res->perm = AUTHZ_MONITOR; /* commands, env and logs: PUT/DELETE are cluster admin (runs code) */
	} else if (!strcmp(pfx, "/v1/jobs")) {
		if (m == HTTP_GET)
			return 0;
	}
	return 1;
}

/*
 * Tokens this thread verified lately. A client sends the same token with
 * every request, and checking it costs two JSON parses and an HMAC
 * (~15 us, as much as the rest of a gateway's redirect): a hit, the same
 * bytes compared in full in constant time, skips that until the token's
 * exp. Static thread-local storage: nothing to free when a worker ends.
 */
#define TCACHE_N 4
#define TCACHE_TOKMAX 1024
static _Thread_local struct tcache_ent {
	size_t len;
	char tok[TCACHE_TOKMAX];
	auth_token_t t;
} tcache[TCACHE_N];
static _Thread_local unsigned tcache_next;

static bool tcache_get(sv_t tok, int64_t now, auth_token_t *out)
{
	for (unsigned i = 0; i < TCACHE_N; i++) {
		struct tcache_ent *e = &tcache[i];
		if (e->len && e->len == tok.len && CRYPTO_memcmp(e->tok, tok.ptr, tok.len) == 0 && e->t.exp > now) {
			*out = e->t;
			return true;
		}
	}
	return false;
}

static void tcache_put(sv_t tok, const auth_token_t *t)
{
	if (tok.len > TCACHE_TOKMAX)
		return;
	struct tcache_ent *e = &tcache[tcache_next++ % TCACHE_N];
	memcpy(e->tok, tok.ptr, tok.len);
	e->len = tok.len;
	e->t = *t;
}

static bool bearer(http_req_t *req, sv_t *tok)
{
	sv_t h = http_req_header(req, "Authorization");
	if (!h.ptr || !sv_casestartswith(h, "Bearer "))
		return false;
	*tok = sv_trim((sv_t){h.ptr + 7, h.len - 7});
	return true;
}

/* Is the buffered body the one whose digest was signed? */
static bool body_matches(const http_req_t *req, const char *want)
{
	char got[AUTH_SIG_HEX + 1];
	auth_body_digest(req->body.ptr, req->body.len, got);
	return CRYPTO_memcmp(got, want, AUTH_SIG_HEX) == 0;
}

/* Does the route buffer its body whole (so that a signature binds it)? */
static bool route_buffers(const http_req_t *req)
{
	unsigned fl = req->route->flags;
	return (fl & HTTP_ROUTE_JSON) && !(fl & HTTP_ROUTE_BODY);
}

/* Takes p's signature into the replay cache: AIS_OK, or AIS_ERR answered. */
static int replay_take(http_req_t *req, struct principal *p, int64_t now)
{
	int rc = authz_replay_take(p->rkey, p->rts, now);
	p->record = false;
	if (rc == AIS_AGAIN) {
		http_resp_error(req, 503, "too many intra-cluster calls to remember: try again");
		return AIS_ERR;
	}
	return rc == AIS_OK ? AIS_OK : deny(req, 401, "intra-cluster signature used before (a replay)");
}

static uint64_t sig_key(sv_t sig)
{
	uint64_t k = 0;
	for (size_t i = 0; i < 16 && i < sig.len; i++)
		k = k << 4 | (uint64_t)(sig.ptr[i] <= '9' ? sig.ptr[i] - '0' : sig.ptr[i] - 'a' + 10);
	return k;
}

/* An intra-cluster call (AUTH_INTRA_HDR in ih): AIS_OK with req->auth set,
 * or AIS_ERR answered. */
static int check_intra(http_req_t *req, sv_t ih, int64_t now)
{
	auth_intra_val_t v;
	char host[sizeof(self_host)];
	self_authority(req, host, sizeof(host));
	/* the signature covers the target as the sender wrote it */
	if (!auth_intra_check(csecret, csecret_len, ih, http_method_name(req->method), sv_from(host), req->target, now,
			      &v))
		return deny(req, 401, "intra-cluster request with an invalid or stale cluster signature (or signed "
				      "for another node)");
	struct principal *p = arena_zalloc(req->arena, sizeof(*p));
	p->who = WHO_INTRA;
	p->rkey = sig_key(v.sig) ^ sig_key(v.nonce);
	p->rts = v.ts;
	snprintf(p->body, sizeof(p->body), "%.*s", (int)v.body.len, v.body.ptr);
	req->auth = p;
	if (route_buffers(req)) {
		p->record = true; /* once the body is known good (authz_check_body) */
		return AIS_OK;
	}
	return replay_take(req, p, now);
}

/* A peer's hybrid logical clock (hlc.h) taken from its request: only from
 * a request the cluster secret's signature vouches for, or, without
 * cluster.secret, from any that carries one (a peer says it is one). */
static void peer_clock(http_req_t *req)
{
	static _Atomic int64_t warned;
	sv_t h = http_req_header(req, HLC_HEADER);
	if (!h.ptr || hlc_observe_text(h.ptr, h.len))
		return;
	int64_t now = time_mono_ns(), w = atomic_load(&warned);
	if (now - w > 60 * 1000000000LL && atomic_compare_exchange_strong(&warned, &w, now))
		log_warnx("a peer's clock stamp %.*s is not taken: not a number, or more than a day ahead of this "
			  "node's clock", (int)MIN(h.len, 32), h.ptr);
}

static int check(http_req_t *req)
{
	int64_t now = now_s();
	sv_t ih = http_req_header(req, AUTH_INTRA_HDR);
	authz_res_t res;
	bool intra_only;
	size_t nres = route_needs(req, &res, &intra_only);
	if (!csecret_len)
		peer_clock(req);
	if (csecret_len) {
		if (ih.ptr) {
			int rc = check_intra(req, ih, now);
			if (rc == AIS_OK)
				peer_clock(req);
			return rc;
		}
		if (http_req_has_header(req, "Ais-Intra") || (intra_only && !enabled))
			return deny(req, 401, "intra-cluster request without the cluster's signature");
	}
	if (req->route->prefix[1] == '\0')
		return AIS_OK; /* S3 decides its own (s3.c) */
	if (!enabled) {
		/* auth off: nobody to identify, but a bucket's access
		 * property still holds for every client (rule 1a) */
		if (!nres || !res.op)
			return AIS_OK;
		if (res.bucket.len && http_pct_decode(req->arena, res.bucket, false, &res.bucket) != AIS_OK)
			return AIS_OK; /* the handler answers 400 */
		return authz_request(req, &res, 1) ? AIS_OK : AIS_ERR;
	}

	struct principal *p = arena_zalloc(req->arena, sizeof(*p));
	buf_t err = BUF_INIT;
	int rc = intra_only ? AIS_DONE
			    : auth_redirect_verify(csecret, csecret_len, http_method_name(req->method), req->path,
						   req->query, now, &p->tok, p->body, &err);
	if (rc == AIS_ERR) {
		char msg[160];
		snprintf(msg, sizeof(msg), "%s", err.ptr);
		buf_free(&err);
		return deny(req, 401, msg);
	}
	buf_free(&err);
	if (rc == AIS_OK) {
		/* the identity and permissions the gateway checked go on
		 * deciding here: entries of a GetBatch, a bucket in a body */
		p->who = WHO_REDIRECT;
		req->auth = p;
	} else {
		sv_t tok;
		bool expired;
		if (!bearer(req, &tok))
			return deny(req, 401, "credentials required: Authorization: Bearer TOKEN (aisctl auth token create)");
		p->who = WHO_TOKEN;
		if (!tcache_get(tok, now, &p->tok)) {
			if (auth_jwt_verify(tok.ptr, tok.len, tsecret, tsecret_len, now, &p->tok, &expired, &err) != AIS_OK) {
				char msg[256];
				snprintf(msg, sizeof(msg), "invalid token: %s", err.ptr ? err.ptr : "?");
				buf_free(&err);
				return deny(req, 401, msg);
			}
			tcache_put(tok, &p->tok);
		}
		buf_free(&err);
		req->auth = p;
		if (intra_only)
			return deny(req, 403, "only the cluster's nodes (with cluster.secret) may call this");
	}
	if (!nres)
		return AIS_OK;
	if (res.bucket.len && http_pct_decode(req->arena, res.bucket, false, &res.bucket) != AIS_OK)
		return deny(req, 403, "invalid bucket name");
	return authz_request(req, &res, 1) ? AIS_OK : AIS_ERR;
}

/* The request id the caller gave, taken when the caller is trusted for it
 * (docs/api.md, "Request ids"): a redirect signed by a gateway names it in
 * its signed query (AUTH_REDIR_ID), a node of the cluster in the header
 * (an intra-cluster call, or a relayed S3 request from a node's address);
 * with auth off every caller is trusted alike. Anything else keeps the id
 * this node made: with auth on, a client's own id never replaces it. */
static void adopt_id(http_req_t *req)
{
	const struct principal *p = req->auth;
	sv_t v;
	if (p && p->who == WHO_REDIRECT) {
		if (http_query_get(req, AUTH_REDIR_ID, &v))
			http_req_adopt_id(req, v);
		return;
	}
	bool node = (p && p->who == WHO_INTRA) || (!csecret_len && http_req_from_node(req));
	if (node || !enabled) {
		v = http_req_header(req, HTTP_REQID_HDR);
		if (!(v.ptr && http_req_adopt_id(req, v)) && !enabled && http_query_get(req, AUTH_REDIR_ID, &v))
			http_req_adopt_id(req, v);
	}
}

/* --- node headers (authz.h) ---------------------------------------------- */

static const char *const node_hdrs[AUTHZ_NODE_HDRS] = {AUTHZ_HDR_S3_CLIENT, AUTHZ_HDR_MOSS_PEER};

bool authz_node_header(sv_t name)
{
	for (size_t i = 0; i < AUTHZ_NODE_HDRS; i++)
		if (sv_eqcase(name, sv_from(node_hdrs[i])))
			return true;
	return sv_eqcase(name, SV(AUTH_FWD_HDR));
}

static void node_line(buf_t *canon, const char *name, sv_t value)
{
	for (const char *c = name; *c; c++)
		buf_addch(canon, *c >= 'A' && *c <= 'Z' ? (char)(*c + 32) : *c);
	buf_addch(canon, ':');
	buf_addsv(canon, value);
	buf_addch(canon, '\n');
}

/* The canonical lines of the node headers req carries (every one, in the
 * list's order, then the request's): how many. */
static size_t node_lines(const http_req_t *req, buf_t *canon)
{
	size_t n = 0;
	for (size_t i = 0; i < AUTHZ_NODE_HDRS; i++)
		for (size_t k = 0; k < req->nhdrs; k++)
			if (sv_eqcase(req->hdrs[k].name, sv_from(node_hdrs[i]))) {
				node_line(canon, node_hdrs[i], req->hdrs[k].value);
				n++;
			}
	return n;
}

void authz_fwd_lines(const char *method, const char *base_url, sv_t target, const char *const vals[AUTHZ_NODE_HDRS],
		     buf_t *hb)
{
	buf_t canon = BUF_INIT;
	for (size_t i = 0; i < AUTHZ_NODE_HDRS; i++) {
		if (!vals[i])
			continue;
		buf_addf(hb, "%s: %s\r\n", node_hdrs[i], vals[i]);
		node_line(&canon, node_hdrs[i], sv_from(vals[i]));
	}
	if (csecret_len && canon.len) {
		unsigned char rnd[AUTH_NONCE_HEX / 2];
		char nonce[AUTH_NONCE_HEX + 1], v[AUTHZ_INTRA_HDR_MAX];
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			fatal("getrandom");
		hex_encode(rnd, sizeof(rnd), nonce);
		auth_fwd_sign(csecret, csecret_len, method, auth_url_host(base_url), target, sv_of(&canon), now_s(), nonce,
			      v, sizeof(v));
		buf_addf(hb, "%s: %s\r\n", AUTH_FWD_HDR, v);
	}
	buf_free(&canon);
}

/* Keeps the request's node headers when a node vouches for them, drops
 * them otherwise (authz.h): AIS_OK, or AIS_ERR answered (a forged
 * AUTH_FWD_HDR). */
static int node_headers(http_req_t *req)
{
	const struct principal *p = req->auth;
	buf_t canon = BUF_INIT;
	bool keep;
	if (!node_lines(req, &canon)) {
		buf_free(&canon);
		return AIS_OK;
	}
	if (p && p->who == WHO_INTRA) {
		keep = true;
	} else if (!csecret_len) {
		keep = http_req_from_node(req); /* (trusted networks: README) */
	} else {
		sv_t v = http_req_header(req, AUTH_FWD_HDR);
		char host[sizeof(self_host)];
		self_authority(req, host, sizeof(host));
		keep = v.ptr && auth_fwd_check(csecret, csecret_len, v, http_method_name(req->method), sv_from(host),
					       req->target, sv_of(&canon), now_s());
		if (v.ptr && !keep) {
			buf_free(&canon);
			return deny(req, 401, "forwarded node headers with an invalid or stale cluster signature (or "
					      "signed for another node or request)");
		}
	}
	buf_free(&canon);
	if (!keep) {
		log_debug("%s %.*s: node headers from a client dropped", http_method_name(req->method),
			  (int)MIN(req->path.len, 256), req->path.ptr);
		for (size_t i = 0; i < AUTHZ_NODE_HDRS; i++)
			http_req_header_drop(req, node_hdrs[i]);
	}
	return AIS_OK;
}

int authz_check(http_req_t *req)
{
	int rc = check(req);
	if (rc == AIS_OK)
		rc = node_headers(req);
	if (rc == AIS_OK)
		adopt_id(req);
	return rc;
}

int authz_check_body(http_req_t *req)
{
	struct principal *p = (struct principal *)req->auth;
	if (!p || (p->who != WHO_INTRA && p->who != WHO_REDIRECT) || !route_buffers(req))
		return AIS_OK;
	if (strcmp(p->body, AUTH_BODY_UNSIGNED) ? !body_matches(req, p->body) : req->body.len != 0)
		return deny(req, 401, p->who == WHO_INTRA ? "intra-cluster request: the body is not the one signed"
							  : "signed redirect: the body is not the one signed");
	return p->record ? replay_take(req, p, now_s()) : AIS_OK;
}

/* --- the decision (authz.h) ------------------------------------------------ */

/* Does the principal's own permission (a token's, an S3 user's grants)
 * cover perm on bucket (empty: the cluster's operations)? */
static bool own_perm(const authz_who_t *who, sv_t bucket, unsigned perm)
{
	/* the cluster's operations: every permission on no bucket, which only
	 * an administrator has (auth_token_allows, auth_grants_allow) */
	bool cluster = perm == AUTHZ_CLUSTER || perm == AUTHZ_MONITOR;
	sv_t b = cluster ? (sv_t){"", 0} : bucket;
	unsigned need = cluster ? AUTH_ALL : perm;

	switch (who->kind) {
	case AUTHZ_PEER:
		return true;
	case AUTHZ_TOKEN:
		if (perm == AUTHZ_MONITOR && who->tok->monitor)
			return true;
		return auth_token_allows(who->tok, b, need);
	case AUTHZ_USER:
		return auth_grants_allow((const char (*)[256])cfg->auth_grants, cfg->n_auth_grants, who->user, b,
					 need);
	case AUTHZ_ANON:
	default:
		return false;
	}
}

/* One resource by rules 1-5; AUTHZ_LATER: its object ACL is not known. */
static enum authz_verdict decide_one(const authz_who_t *who, const authz_res_t *r)
{
	if (who->kind == AUTHZ_PEER)
		return AUTHZ_ALLOW;
	if (r->op && !(r->access & r->op))
		return AUTHZ_DENY; /* the bucket's access property: whoever asks */
	if (r->pol == AUTHZ_POL_DENY)
		return AUTHZ_DENY; /* a bucket policy's explicit Deny: whoever asks */
	if (r->pol == AUTHZ_POL_LATER)
		return AUTHZ_LATER;
	if (r->perm == AUTHZ_CLUSTER || r->perm == AUTHZ_MONITOR) {
		if (!enabled)
			return who->kind == AUTHZ_ANON ? AUTHZ_DENY : AUTHZ_ALLOW;
		return own_perm(who, r->bucket, r->perm) ? AUTHZ_ALLOW : AUTHZ_DENY;
	}
	if (enabled && own_perm(who, r->bucket, r->perm))
		return AUTHZ_ALLOW;
	if (r->pol == AUTHZ_POL_ALLOW)
		return AUTHZ_ALLOW;
	if (r->acl) {
		if (r->acl_later)
			return AUTHZ_LATER;
		return (r->acl_have & r->acl) == r->acl ? AUTHZ_ALLOW : AUTHZ_DENY;
	}
	return !enabled && who->kind != AUTHZ_ANON ? AUTHZ_ALLOW : AUTHZ_DENY;
}

enum authz_verdict authz_decide(const authz_who_t *who, const authz_res_t *res, size_t n, size_t *bad)
{
	enum authz_verdict v = AUTHZ_ALLOW;
	*bad = n;
	for (size_t i = 0; i < n; i++) {
		enum authz_verdict one = decide_one(who, &res[i]);
		if (one == AUTHZ_DENY) {
			*bad = i; /* deny wins over every allow and every undecided one */
			return AUTHZ_DENY;
		}
		if (one == AUTHZ_LATER && v == AUTHZ_ALLOW) {
			v = AUTHZ_LATER;
			*bad = i;
		}
	}
	return v;
}

/* "ro", "rw", or the names of the bits ("get,head"), as aisctl sets them. */
static void access_text(unsigned a, buf_t *out)
{
	size_t at = out->len;
	if (a == ACCESS_RO || a == ACCESS_ALL) {
		buf_addstr(out, a == ACCESS_RO ? "ro" : "rw");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(access_names); i++) {
		if (!(a & (1u << i)))
			continue;
		buf_addstr(out, out->len > at ? "," : "");
		for (const char *c = access_names[i]; *c; c++)
			buf_addf(out, "%c", *c - 'A' + 'a');
	}
	if (out->len == at)
		buf_addstr(out, "0");
}

void authz_why(const authz_who_t *who, const authz_res_t *res, buf_t *out)
{
	if (who->kind != AUTHZ_PEER && res->op && !(res->access & res->op)) {
		size_t bit = 0;
		while (bit + 1 < ARRAY_SIZE(access_names) && !(res->op & (1u << bit)))
			bit++;
		buf_addf(out, "bucket ais://%.*s does not allow %s (access=", (int)MIN(res->bucket.len, 64),
			 res->bucket.ptr, access_names[bit]);
		access_text(res->access, out);
		buf_addstr(out, ")");
		if (res->role)
			buf_addf(out, " (%s)", res->role);
		return;
	}
	const char *name = who->kind == AUTHZ_TOKEN ? who->tok->user : who->kind == AUTHZ_ANON ? "" : NULL;
	buf_t what = BUF_INIT;
	if (who->kind != AUTHZ_PEER && res->pol == AUTHZ_POL_DENY) {
		buf_addf(out, "explicit deny in the bucket policy of \"%.*s\"", (int)MIN(res->bucket.len, 64),
			 res->bucket.ptr);
		if (res->role)
			buf_addf(out, " (%s)", res->role);
		return;
	}
	if (who->kind == AUTHZ_ANON)
		buf_addstr(out, "an anonymous request");
	else
		buf_addf(out, "user \"%.*s\"", name ? (int)strlen(name) : (int)MIN(who->user.len, 128),
			 name ? name : who->user.ptr);
	if (res->perm == AUTHZ_CLUSTER) {
		buf_addstr(out, " is not a cluster administrator");
	} else if (res->perm == AUTHZ_MONITOR) {
		buf_addstr(out, " may not read cluster statistics (needs a monitor or admin token)");
	} else {
		auth_perm_format(res->perm, &what);
		buf_addf(out, " lacks %s permission on bucket \"%.*s\"", what.ptr, (int)MIN(res->bucket.len, 64),
			 res->bucket.ptr);
	}
	if (res->role)
		buf_addf(out, " (%s)", res->role);
	buf_free(&what);
}

/* The principal of a native request that passed authz_check. */
static void who_of(const http_req_t *req, authz_who_t *who)
{
	const struct principal *p = req->auth;
	memset(who, 0, sizeof(*who));
	if (p && p->who == WHO_INTRA)
		who->kind = AUTHZ_PEER;
	else if (!enabled) /* without cluster.secret a peer says it is one */
		who->kind = !csecret_len && http_req_has_header(req, "Ais-Intra") ? AUTHZ_PEER : AUTHZ_OPEN;
	else
		who->kind = p ? AUTHZ_TOKEN : AUTHZ_PEER;
	who->tok = p ? &p->tok : NULL;
}

bool authz_request(http_req_t *req, authz_res_t *res, size_t n)
{
	authz_who_t who;
	size_t bad;
	who_of(req, &who);
	authz_access_fill(res, n);
	if (authz_decide(&who, res, n, &bad) == AUTHZ_ALLOW)
		return true;
	buf_t msg = BUF_INIT;
	authz_why(&who, &res[bad], &msg);
	deny(req, 403, msg.ptr);
	buf_free(&msg);
	return false;
}

bool authz_is_peer(http_req_t *req)
{
	const struct principal *p = req->auth;
	if (csecret_len)
		return p && p->who == WHO_INTRA;
	return http_req_has_header(req, "Ais-Intra");
}

bool authz_cluster_call(http_req_t *req)
{
	if (csecret_len)
		return http_req_has_header(req, AUTH_INTRA_HDR);
	return http_req_from_node(req);
}

void authz_redirect(http_req_t *req, const char *base_url) { authz_redirect_hop(req, base_url, 0, 0); }

void authz_redirect_hop(http_req_t *req, const char *base_url, unsigned hop, uint64_t prev)
{
	const struct principal *p = req->auth;
	buf_t q = BUF_INIT, rq = BUF_INIT;
	/* the request id goes on in the query (a client does not send its
	 * headers again on a redirect): native routes only (an S3 request's
	 * own signature covers its query), and never added to a redirect
	 * already signed (its signature covers the id it carries) */
	bool signed_in = p && p->who == WHO_REDIRECT;
	bool add_id = sv_startswith(req->path, "/v1/") && !signed_in;
	sv_t rest = req->query;
	while (rest.len) {
		const char *amp = memchr(rest.ptr, '&', rest.len);
		sv_t kv = {rest.ptr, amp ? (size_t)(amp - rest.ptr) : rest.len};
		rest = amp ? (sv_t){amp + 1, rest.len - kv.len - 1} : (sv_t){"", 0};
		if (!kv.len || sv_startswith(kv, AUTH_REDIR_HOP "=") || sv_startswith(kv, AUTH_REDIR_PREV "=") ||
		    (add_id && sv_startswith(kv, AUTH_REDIR_ID "=")))
			continue;
		buf_addstr(&rq, rq.len ? "&" : "");
		buf_addsv(&rq, kv);
	}
	if (add_id)
		buf_addf(&rq, "%s" AUTH_REDIR_ID "=%s", rq.len ? "&" : "", req->id_str); /* (URL-safe: http_reqid_valid) */
	http_resp_status(req, 307);
	if (enabled && csecret_len && p && p->who == WHO_TOKEN) {
		char body[AUTH_SIG_HEX + 1] = AUTH_BODY_UNSIGNED;
		int64_t exp = MIN(now_s() + REDIRECT_TTL, p->tok.exp); /* never past the token's own */
		if (route_buffers(req))
			auth_body_digest(req->body.ptr, req->body.len, body);
		auth_redirect_query(csecret, csecret_len, http_method_name(req->method), req->path, sv_of(&rq), body,
				    exp, &p->tok, &q);
	} else {
		/* auth off, an intra-cluster call, or a signed redirect: that same
		 * signature goes on (invariant 3); only the hop count changes */
		buf_addsv(&q, sv_of(&rq));
	}
	buf_free(&rq);
	if (hop) /* (routing only: no signature covers it) */
		buf_addf(&q, "%s" AUTH_REDIR_HOP "=%u", q.len ? "&" : "", hop);
	if (prev) {
		buf_addf(&q, "%s" AUTH_REDIR_PREV "=", q.len ? "&" : "");
		authz_prev_value(prev, req->path, &q);
	}
	http_resp_header(req, "Location", "%s%.*s%s%s", base_url, (int)req->path.len, req->path.ptr, q.len ? "?" : "",
			 q.len ? q.ptr : "");
	buf_free(&q);
	http_resp_send(req, "", 0);
}

void authz_prev_value(uint64_t prev, sv_t path, buf_t *out)
{
	if (csecret_len)
		auth_prev_sign(csecret, csecret_len, prev, path, out);
	else
		buf_addf(out, "%llu", (unsigned long long)prev);
}

bool authz_prev_get(sv_t value, sv_t path, uint64_t *prev)
{
	if (csecret_len)
		return auth_prev_check(csecret, csecret_len, value, path, prev);
	return value.len && num_parse_u64(value.ptr, value.len, 1, INT64_MAX, prev) == AIS_OK;
}

bool authz_intra_header(const char *method, const char *url, const void *body, size_t len, char *out,
			size_t outsz)
{
	if (!csecret_len) {
		if (outsz)
			out[0] = '\0';
		return false;
	}
	int n = snprintf(out, outsz, "%s: ", AUTH_INTRA_HDR);
	if (n < 0 || (size_t)n >= outsz)
		return false;
	unsigned char rnd[AUTH_NONCE_HEX / 2];
	char nonce[AUTH_NONCE_HEX + 1], digest[AUTH_SIG_HEX + 1] = AUTH_BODY_UNSIGNED;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		fatal("getrandom");
	hex_encode(rnd, sizeof(rnd), nonce);
	if (body)
		auth_body_digest(body, len, digest);
	auth_intra_sign(csecret, csecret_len, method, url, digest, now_s(), nonce, out + n, outsz - (size_t)n);
	return true;
}
