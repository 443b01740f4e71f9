/*
 * authz.c - the node's access control (authz.h): the http server's hook
 * that decides, per route, whether a request may go on; signed redirects;
 * the cluster secret's header on intra-cluster calls; S3 users' grants.
 *
 * The settings are read once at start (authz_init) into this file's
 * statics, before any server thread runs, and only read afterwards.
 */
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "aisd/authz.h"
#include "aisd/ol.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define REDIRECT_TTL 60 /* seconds a signed redirect stays valid */

static const conf_t *cfg;
static bool enabled;
static char csecret[CONF_SECRET_MAX], tsecret[CONF_SECRET_MAX];
static size_t csecret_len, tsecret_len;

enum who { WHO_INTRA = 1, WHO_REDIRECT, WHO_TOKEN };
struct principal {
	enum who who;
	auth_token_t tok;
};
static const struct principal intra = {WHO_INTRA, {.user = ""}}, redirected = {WHO_REDIRECT, {.user = ""}};

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

/* What a native route needs: *bucket (empty: none) and *perm; perm 0 with
 * no bucket: any valid credentials; AUTH_ALL with no bucket: a cluster
 * administrator. *intra_only: only other nodes may call it. */
static void route_needs(http_req_t *req, sv_t *bucket, unsigned *perm, bool *intra_only)
{
	const char *pfx = req->route->prefix;
	sv_t sub = req->subpath;
	const char *slash = memchr(sub.ptr, '/', sub.len);
	sv_t first = {sub.ptr, slash ? (size_t)(slash - sub.ptr) : sub.len};
	enum http_method m = req->method;

	*bucket = (sv_t){"", 0};
	*perm = AUTH_ALL;
	*intra_only = false;
	if (!strcmp(pfx, "/v1/objects")) {
		*bucket = first;
		*perm = m == HTTP_PUT ? AUTH_WRITE : m == HTTP_DELETE ? AUTH_DELETE : AUTH_READ;
	} else if (!strcmp(pfx, "/v1/buckets")) {
		*bucket = first;
		if (!first.len)
			*perm = m == HTTP_GET ? 0 : AUTH_ALL;
		else if (m == HTTP_GET)
			*perm = AUTH_LIST;
		else if (m == HTTP_HEAD)
			*perm = AUTH_READ;
		else if (m == HTTP_DELETE || m == HTTP_PATCH)
			*perm = AUTH_ADMIN;
		else
			*bucket = (sv_t){"", 0}; /* create: administrators */
	} else if (!strcmp(pfx, "/v1/ml/moss")) {
		*perm = 0; /* every entry's bucket: authz_allows in the handler */
	} else if (!strcmp(pfx, "/v1/metasync")) {
		*intra_only = true;
	} else if (!strcmp(pfx, "/v1/cluster")) {
		if (m == HTTP_POST)
			*intra_only = true; /* join, vote */
		else if (m == HTTP_GET)
			*perm = 0;
	} else if (!strcmp(pfx, "/v1/daemon") || !strcmp(pfx, "/v1/daemon/mountpaths") || !strcmp(pfx, "/v1/jobs") ||
		   !strcmp(pfx, "/metrics")) {
		if (m == HTTP_GET)
			*perm = 0;
	}
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

int authz_check(http_req_t *req)
{
	int64_t now = now_s();
	sv_t ih = http_req_header(req, AUTH_INTRA_HDR);
	sv_t bck;
	unsigned perm;
	bool intra_only;

	route_needs(req, &bck, &perm, &intra_only);
	if (csecret_len) {
		if (ih.ptr) {
			/* the signature covers the target as the sender wrote it */
			if (!auth_intra_check(csecret, csecret_len, ih, http_method_name(req->method), req->target, now))
				return deny(req, 401, "intra-cluster request with an invalid or stale cluster signature");
			req->auth = &intra;
			return AIS_OK;
		}
		if (http_req_has_header(req, "Ais-Intra") || (intra_only && !enabled))
			return deny(req, 401, "intra-cluster request without the cluster's signature");
	}
	if (!enabled || req->route->prefix[1] == '\0')
		return AIS_OK; /* auth off; S3 checks its own (s3.c) */

	sv_t exp, sig;
	if (!intra_only && (http_query_get(req, AUTH_REDIR_EXP, &exp) || http_query_get(req, AUTH_REDIR_SIG, &sig))) {
		uint64_t e;
		char want[AUTH_SIG_HEX + 1];
		if (!http_query_get(req, AUTH_REDIR_EXP, &exp) || !http_query_get(req, AUTH_REDIR_SIG, &sig) ||
		    num_parse_u64(exp.ptr, exp.len, 0, INT64_MAX / 2, &e) != AIS_OK)
			return deny(req, 401, "malformed signed redirect");
		if ((int64_t)e < now)
			return deny(req, 401, "signed redirect expired");
		auth_redirect_sig(csecret, csecret_len, http_method_name(req->method), req->path, (int64_t)e, want);
		if (!auth_sig_eq(sig, want))
			return deny(req, 401, "signed redirect: the signature does not match");
		req->auth = &redirected;
		return AIS_OK;
	}

	sv_t tok;
	if (!bearer(req, &tok))
		return deny(req, 401, "credentials required: Authorization: Bearer TOKEN (aisctl auth token create)");
	struct principal *p = arena_zalloc(req->arena, sizeof(*p));
	buf_t err = BUF_INIT;
	bool expired;
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
	sv_t dec = bck;
	if (bck.len && http_pct_decode(req->arena, bck, false, &dec) != AIS_OK)
		return deny(req, 403, "invalid bucket name");
	if (!dec.len && perm == 0)
		return AIS_OK;
	if (!auth_token_allows(&p->tok, dec, perm)) {
		buf_t what = BUF_INIT, msg = BUF_INIT;
		auth_perm_format(perm, &what);
		if (dec.len)
			buf_addf(&msg, "user \"%s\" lacks %s permission on bucket \"%.*s\"", p->tok.user, what.ptr,
				 (int)MIN(dec.len, 64), dec.ptr);
		else
			buf_addf(&msg, "user \"%s\" is not a cluster administrator", p->tok.user);
		deny(req, 403, msg.ptr);
		buf_free(&what);
		buf_free(&msg);
		return AIS_ERR;
	}
	return AIS_OK;
}

bool authz_allows(http_req_t *req, sv_t bucket, unsigned perm)
{
	const struct principal *p = req->auth;
	if (!enabled || !p || p->who != WHO_TOKEN || auth_token_allows(&p->tok, bucket, perm))
		return true;
	buf_t what = BUF_INIT, msg = BUF_INIT;
	auth_perm_format(perm, &what);
	buf_addf(&msg, "user \"%s\" lacks %s permission on bucket \"%.*s\"", p->tok.user, what.ptr,
		 (int)MIN(bucket.len, 64), bucket.ptr);
	deny(req, 403, msg.ptr);
	buf_free(&what);
	buf_free(&msg);
	return false;
}

void authz_redirect(http_req_t *req, const char *base_url) { authz_redirect_hop(req, base_url, 0); }

void authz_redirect_hop(http_req_t *req, const char *base_url, unsigned hop)
{
	/* the query without an earlier signature (a target's 307 of a
	 * gateway's 307 signs anew) and hop count */
	buf_t q = BUF_INIT;
	sv_t rest = req->query;
	while (rest.len) {
		const char *amp = memchr(rest.ptr, '&', rest.len);
		sv_t kv = {rest.ptr, amp ? (size_t)(amp - rest.ptr) : rest.len};
		rest = amp ? (sv_t){amp + 1, rest.len - kv.len - 1} : (sv_t){"", 0};
		if (kv.len && !sv_startswith(kv, AUTH_REDIR_EXP "=") && !sv_startswith(kv, AUTH_REDIR_SIG "=") &&
		    !sv_startswith(kv, OL_HOP_PARAM "=")) {
			buf_addsv(&q, kv);
			buf_addch(&q, '&');
		}
	}
	if (hop)
		buf_addf(&q, OL_HOP_PARAM "=%u&", hop);
	if (q.len)
		q.ptr[--q.len] = '\0'; /* the last '&' */
	http_resp_status(req, 307);
	if (enabled && csecret_len) {
		char sig[AUTH_SIG_HEX + 1];
		int64_t exp = now_s() + REDIRECT_TTL;
		const char *meth = http_method_name(req->method);
		auth_redirect_sig(csecret, csecret_len, meth, req->path, exp, sig);
		http_resp_header(req, "Location", "%s%.*s?%s%s" AUTH_REDIR_EXP "=%lld&" AUTH_REDIR_SIG "=%s", base_url,
				 (int)req->path.len, req->path.ptr, q.len ? q.ptr : "", q.len ? "&" : "", (long long)exp, sig);
	} else {
		http_resp_header(req, "Location", "%s%.*s%s%s", base_url, (int)req->path.len, req->path.ptr,
				 q.len ? "?" : "", q.len ? q.ptr : "");
	}
	buf_free(&q);
	http_resp_send(req, "", 0);
}

bool authz_intra_header(const char *method, const char *url, char *out, size_t outsz)
{
	if (!csecret_len) {
		if (outsz)
			out[0] = '\0';
		return false;
	}
	int n = snprintf(out, outsz, "%s: ", AUTH_INTRA_HDR);
	if (n < 0 || (size_t)n >= outsz)
		return false;
	auth_intra_sign(csecret, csecret_len, method, url, now_s(), out + n, outsz - (size_t)n);
	return true;
}

bool authz_s3_allows(sv_t user, sv_t bucket, unsigned perm)
{
	if (!enabled)
		return true;
	return auth_grants_allow((const char (*)[256])cfg->auth_grants, cfg->n_auth_grants, user, bucket, perm);
}
