/*
 * sign.c - what the cluster secret signs (intra-cluster calls, redirects)
 * and the config's per-user grants. Pure: the caller passes the time.
 *
 * Why an HMAC with a timestamp and not the secret itself in a header: the
 * intra-cluster network may be plain HTTP (TLS is optional), and a header
 * that carries the secret hands it to anyone who sees one request, for
 * ever. A signature over the time, a nonce, the method, the receiving node,
 * the request-target and the body's digest gives a sniffer only that one
 * request to that one node, for AUTH_INTRA_SKEW seconds (and the receiver
 * keeps the signatures it took, so not even that once more); it costs one
 * HMAC-SHA256 of ~100 bytes per call (3-5 us with OpenSSL 3 on a loaded
 * 2-core machine; a bearer token check, two JSON parses and an HMAC, 14-26 us).
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

#include "aisd/auth.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

void auth_hmac_hex(const void *key, size_t klen, const void *msg, size_t mlen, char out[AUTH_SIG_HEX + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned ml = 0;
	HMAC(EVP_sha256(), key, (int)klen, msg, mlen, mac, &ml);
	for (unsigned i = 0; i < 32; i++) {
		out[2 * i] = hex[mac[i] >> 4];
		out[2 * i + 1] = hex[mac[i] & 15];
	}
	out[AUTH_SIG_HEX] = '\0';
}

bool auth_sig_eq(sv_t given, const char expect[AUTH_SIG_HEX + 1])
{
	return given.len == AUTH_SIG_HEX && CRYPTO_memcmp(given.ptr, expect, AUTH_SIG_HEX) == 0;
}

void auth_body_digest(const void *p, size_t n, char out[AUTH_SIG_HEX + 1])
{
	unsigned char md[32];
	unsigned ml = 0;
	EVP_Digest(p ? p : "", n, md, &ml, EVP_sha256(), NULL);
	hex_encode(md, 32, out);
	out[AUTH_SIG_HEX] = '\0';
}

static bool is_lhex(sv_t s, size_t n)
{
	if (s.len != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s.ptr[i] >= '0' && s.ptr[i] <= '9') || (s.ptr[i] >= 'a' && s.ptr[i] <= 'f')))
			return false;
	return true;
}

/* A body field: a digest or AUTH_BODY_UNSIGNED. */
static bool body_valid(sv_t b) { return sv_eqstr(b, AUTH_BODY_UNSIGNED) || is_lhex(b, AUTH_SIG_HEX); }

sv_t auth_url_target(const char *url)
{
	const char *p = strstr(url, "://");
	p = p ? strchr(p + 3, '/') : url;
	if (!p || *p != '/')
		return (sv_t){"/", 1};
	const char *h = strchr(p, '#');
	return (sv_t){p, h ? (size_t)(h - p) : strlen(p)};
}

sv_t auth_url_host(const char *url)
{
	const char *p = strstr(url, "://");
	if (!p)
		return (sv_t){"", 0};
	p += 3;
	size_t n = strcspn(p, "/?#");
	const char *at = memchr(p, '@', n); /* no userinfo in an authority signed */
	if (at) {
		n -= (size_t)(at + 1 - p);
		p = at + 1;
	}
	return (sv_t){p, n};
}

static void add_lower(buf_t *m, sv_t s)
{
	for (size_t i = 0; i < s.len; i++) {
		char c = s.ptr[i];
		buf_addch(m, c >= 'A' && c <= 'Z' ? (char)(c + 32) : c);
	}
}

#define INTRA_DOMAIN "aisd-intra-v2"
#define FWD_DOMAIN "aisd-fwd-v1"

static void canon(const char *domain, int64_t ts, sv_t nonce, const char *method, sv_t host, sv_t target,
		  sv_t body, buf_t *out)
{
	buf_addf(out, "%s\n%lld\n", domain, (long long)ts);
	buf_addsv(out, nonce);
	buf_addf(out, "\n%s\n", method);
	add_lower(out, host);
	buf_addch(out, '\n');
	buf_addsv(out, target);
	buf_addch(out, '\n');
	buf_addsv(out, body);
}

void auth_intra_canon(int64_t ts, sv_t nonce, const char *method, sv_t host, sv_t target, sv_t body, buf_t *out)
{
	canon(INTRA_DOMAIN, ts, nonce, method, host, target, body, out);
}

static void intra_sig(const void *key, size_t klen, const char *domain, int64_t ts, sv_t nonce,
		      const char *method, sv_t host, sv_t target, sv_t body, char out[AUTH_SIG_HEX + 1])
{
	buf_t m = BUF_INIT;
	canon(domain, ts, nonce, method, host, target, body, &m);
	auth_hmac_hex(key, klen, m.ptr, m.len, out);
	buf_free(&m);
}

void auth_intra_sign(const void *key, size_t klen, const char *method, const char *url, const char *body,
		     int64_t now, const char *nonce, char *out, size_t outsz)
{
	char sig[AUTH_SIG_HEX + 1];
	intra_sig(key, klen, INTRA_DOMAIN, now, sv_from(nonce), method, auth_url_host(url), auth_url_target(url),
		  sv_from(body), sig);
	snprintf(out, outsz, "%lld.%s.%s.%s", (long long)now, nonce, body, sig);
}

/* Splits "a.b.c.d" into four fields; false when there are not four. */
static bool split4(sv_t v, sv_t f[4])
{
	for (int i = 0; i < 4; i++) {
		const char *dot = i < 3 ? memchr(v.ptr, '.', v.len) : NULL;
		if (i < 3 && !dot)
			return false;
		f[i] = (sv_t){v.ptr, dot ? (size_t)(dot - v.ptr) : v.len};
		if (dot)
			v = (sv_t){dot + 1, v.len - f[i].len - 1};
	}
	return !memchr(f[3].ptr, '.', f[3].len);
}

/* A "TS.NONCE.BODY.SIG" value under domain, valid for the rest and now. */
static bool sig_check(const void *key, size_t klen, const char *domain, sv_t value, const char *method, sv_t host,
		      sv_t target, int64_t now, auth_intra_val_t *out)
{
	uint64_t ts;
	sv_t f[4];
	char want[AUTH_SIG_HEX + 1];
	if (!klen || !value.ptr || !split4(value, f) || num_parse_u64(f[0].ptr, f[0].len, 0, INT64_MAX / 2, &ts) != AIS_OK ||
	    !is_lhex(f[1], AUTH_NONCE_HEX) || !body_valid(f[2]))
		return false;
	if ((int64_t)ts > now + AUTH_INTRA_SKEW || (int64_t)ts < now - AUTH_INTRA_SKEW)
		return false;
	intra_sig(key, klen, domain, (int64_t)ts, f[1], method, host, target, f[2], want);
	if (!auth_sig_eq(f[3], want))
		return false;
	if (out)
		*out = (auth_intra_val_t){(int64_t)ts, f[1], f[2], f[3]};
	return true;
}

bool auth_intra_check(const void *key, size_t klen, sv_t value, const char *method, sv_t host, sv_t target,
		      int64_t now, auth_intra_val_t *out)
{
	return sig_check(key, klen, INTRA_DOMAIN, value, method, host, target, now, out);
}

/* --- headers a node forwards ---------------------------------------------- */

void auth_fwd_sign(const void *key, size_t klen, const char *method, sv_t host, sv_t target, sv_t lines,
		   int64_t now, const char *nonce, char *out, size_t outsz)
{
	char digest[AUTH_SIG_HEX + 1], sig[AUTH_SIG_HEX + 1];
	auth_body_digest(lines.ptr, lines.len, digest);
	intra_sig(key, klen, FWD_DOMAIN, now, sv_from(nonce), method, host, target, sv_from(digest), sig);
	snprintf(out, outsz, "%lld.%s.%s.%s", (long long)now, nonce, digest, sig);
}

bool auth_fwd_check(const void *key, size_t klen, sv_t value, const char *method, sv_t host, sv_t target,
		    sv_t lines, int64_t now)
{
	auth_intra_val_t v;
	char digest[AUTH_SIG_HEX + 1];
	if (!sig_check(key, klen, FWD_DOMAIN, value, method, host, target, now, &v))
		return false;
	auth_body_digest(lines.ptr, lines.len, digest);
	return auth_sig_eq(v.body, digest); /* (the lines this node got are the ones signed) */
}

/* --- the previous map's holder ------------------------------------------------ */

static void prev_sig(const void *key, size_t klen, uint64_t prev, sv_t path, char out[AUTH_SIG_HEX + 1])
{
	buf_t m = BUF_INIT;
	buf_addf(&m, "aisd-prev-v1\n%llu\n", (unsigned long long)prev);
	buf_addsv(&m, path);
	auth_hmac_hex(key, klen, m.ptr, m.len, out);
	buf_free(&m);
}

void auth_prev_sign(const void *key, size_t klen, uint64_t prev, sv_t path, buf_t *out)
{
	char sig[AUTH_SIG_HEX + 1];
	prev_sig(key, klen, prev, path, sig);
	buf_addf(out, "%llu.%s", (unsigned long long)prev, sig);
}

bool auth_prev_check(const void *key, size_t klen, sv_t value, sv_t path, uint64_t *prev)
{
	char want[AUTH_SIG_HEX + 1];
	const char *dot = value.ptr ? memchr(value.ptr, '.', value.len) : NULL;
	uint64_t v;
	if (!klen || !dot || num_parse_u64(value.ptr, (size_t)(dot - value.ptr), 1, INT64_MAX, &v) != AIS_OK)
		return false;
	prev_sig(key, klen, v, path, want);
	if (!auth_sig_eq((sv_t){dot + 1, value.len - (size_t)(dot - value.ptr) - 1}, want))
		return false;
	*prev = v;
	return true;
}

/* --- signed redirects ------------------------------------------------------ */

static bool redir_param(sv_t key)
{
	return sv_eqstr(key, AUTH_REDIR_EXP) || sv_eqstr(key, AUTH_REDIR_USER) || sv_eqstr(key, AUTH_REDIR_PERM) ||
	       sv_eqstr(key, AUTH_REDIR_BODY) || sv_eqstr(key, AUTH_REDIR_SIG) || sv_eqstr(key, AUTH_REDIR_HOP) ||
	       sv_eqstr(key, AUTH_REDIR_PREV);
}

/* Takes the next "k=v" off *q: the pair, and its key. */
static bool next_pair(sv_t *q, sv_t *kv, sv_t *k)
{
	if (!q->len)
		return false;
	const char *amp = memchr(q->ptr, '&', q->len);
	*kv = (sv_t){q->ptr, amp ? (size_t)(amp - q->ptr) : q->len};
	*q = amp ? (sv_t){amp + 1, q->len - kv->len - 1} : (sv_t){q->ptr + q->len, 0};
	const char *eq = memchr(kv->ptr, '=', kv->len);
	*k = (sv_t){kv->ptr, eq ? (size_t)(eq - kv->ptr) : kv->len};
	return true;
}

/* q without the ais_r* parameters (the query a redirect signature covers). */
static void strip_query(sv_t q, buf_t *out)
{
	sv_t kv, k;
	bool first = true;
	while (next_pair(&q, &kv, &k)) {
		if (!kv.len || redir_param(k))
			continue;
		if (!first)
			buf_addch(out, '&');
		buf_addsv(out, kv);
		first = false;
	}
}

void auth_redirect_canon(int64_t exp, const char *method, sv_t path, sv_t query, sv_t body, sv_t user, sv_t perms,
			 buf_t *out)
{
	buf_addf(out, "aisd-redirect-v2\n%lld\n%s\n", (long long)exp, method);
	buf_addsv(out, path);
	buf_addch(out, '\n');
	buf_addsv(out, query);
	buf_addch(out, '\n');
	buf_addsv(out, body);
	buf_addch(out, '\n');
	buf_addsv(out, user);
	buf_addch(out, '\n');
	buf_addsv(out, perms);
}

static void redirect_sig(const void *key, size_t klen, int64_t exp, const char *method, sv_t path, sv_t query,
			 sv_t body, sv_t user, sv_t perms, char out[AUTH_SIG_HEX + 1])
{
	buf_t m = BUF_INIT;
	auth_redirect_canon(exp, method, path, query, body, user, perms, &m);
	auth_hmac_hex(key, klen, m.ptr, m.len, out);
	buf_free(&m);
}

void auth_perm_encode(const auth_token_t *t, buf_t *out)
{
	size_t start = out->len;
	if (t->admin)
		buf_addstr(out, "@admin");
	if (t->monitor)
		buf_addf(out, "%s@monitor", out->len > start ? "," : "");
	for (size_t i = 0; i < t->nb && !t->admin; i++)
		buf_addf(out, "%s%s:%u", out->len > start ? "," : "", t->b[i].bucket, t->b[i].perm);
}

int auth_perm_decode(sv_t s, auth_token_t *t)
{
	sv_t item, k;
	t->admin = t->monitor = false;
	t->nb = 0;
	while (s.len) {
		const char *c = memchr(s.ptr, ',', s.len);
		item = (sv_t){s.ptr, c ? (size_t)(c - s.ptr) : s.len};
		s = c ? (sv_t){c + 1, s.len - item.len - 1} : (sv_t){s.ptr + s.len, 0};
		const char *colon = memchr(item.ptr, ':', item.len);
		uint64_t bits;
		if (sv_eqstr(item, "@admin")) {
			t->admin = true;
			continue;
		}
		if (sv_eqstr(item, "@monitor")) {
			t->monitor = true;
			continue;
		}
		k = (sv_t){item.ptr, colon ? (size_t)(colon - item.ptr) : 0};
		if (!colon || t->nb >= AUTH_MAX_BUCKETS ||
		    !(sv_eqstr(k, "*") || name_bucket_valid(k.ptr, k.len)) ||
		    num_parse_u64(colon + 1, item.len - k.len - 1, 1, AUTH_ALL, &bits) != AIS_OK)
			return AIS_ERR;
		memcpy(t->b[t->nb].bucket, k.ptr, k.len);
		t->b[t->nb].bucket[k.len] = '\0';
		t->b[t->nb++].perm = (unsigned)bits;
	}
	if (t->admin)
		t->nb = 0; /* every bucket already: as auth_perm_encode writes it */
	return AIS_OK;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Decodes s into out (NUL-terminated, at most cap - 1 bytes); false when
 * malformed, too long or holding a NUL. */
static bool pct_decode(sv_t s, char *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < s.len; i++) {
		int c = (unsigned char)s.ptr[i];
		if (c == '%') {
			int h = i + 2 < s.len ? hexval(s.ptr[i + 1]) : -1;
			int l = i + 2 < s.len ? hexval(s.ptr[i + 2]) : -1;
			if (h < 0 || l < 0)
				return false;
			c = h * 16 + l;
			i += 2;
		}
		if (!c || n + 1 >= cap)
			return false;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return true;
}

void auth_redirect_query(const void *key, size_t klen, const char *method, sv_t path, sv_t q, const char *body,
			 int64_t exp, const auth_token_t *t, buf_t *out)
{
	buf_t sq = BUF_INIT, perms = BUF_INIT;
	char sig[AUTH_SIG_HEX + 1];
	strip_query(q, &sq);
	auth_perm_encode(t, &perms);
	redirect_sig(key, klen, exp, method, path, sv_of(&sq), sv_from(body), sv_from(t->user), sv_of(&perms), sig);
	buf_addsv(out, sv_of(&sq));
	buf_addf(out, "%s" AUTH_REDIR_EXP "=%lld&" AUTH_REDIR_USER "=", sq.len ? "&" : "", (long long)exp);
	buf_add_pct(out, sv_from(t->user), false);
	buf_addstr(out, "&" AUTH_REDIR_PERM "=");
	buf_addsv(out, sv_of(&perms)); /* bucket names, digits, '@', ':' and ',' only */
	buf_addf(out, "&" AUTH_REDIR_BODY "=%s&" AUTH_REDIR_SIG "=%s", body, sig);
	buf_free(&sq);
	buf_free(&perms);
}

static int rfail(buf_t *err, const char *why)
{
	buf_addstr(err, why);
	return AIS_ERR;
}

int auth_redirect_verify(const void *key, size_t klen, const char *method, sv_t path, sv_t q, int64_t now,
			 auth_token_t *t, char body[AUTH_SIG_HEX + 1], buf_t *err)
{
	sv_t f[5] = {{NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}}; /* exp user perm body sig */
	static const char *const names[5] = {AUTH_REDIR_EXP, AUTH_REDIR_USER, AUTH_REDIR_PERM, AUTH_REDIR_BODY,
					     AUTH_REDIR_SIG};
	sv_t rest = q, kv, k;
	bool any = false;
	while (next_pair(&rest, &kv, &k)) {
		for (int i = 0; i < 5; i++) {
			if (!sv_eqstr(k, names[i]))
				continue;
			if (f[i].ptr)
				return rfail(err, "signed redirect: a parameter given twice");
			f[i] = kv.len > k.len ? (sv_t){kv.ptr + k.len + 1, kv.len - k.len - 1} : (sv_t){kv.ptr + kv.len, 0};
			any = true;
		}
	}
	if (!any)
		return AIS_DONE;
	if (!klen) /* no key: nothing signed can be trusted (an empty HMAC key is anyone's) */
		return rfail(err, "signed redirect: this node has no cluster.secret to check it with");
	uint64_t exp;
	char user[AUTH_USER_MAX + 1], want[AUTH_SIG_HEX + 1];
	for (int i = 0; i < 5; i++)
		if (!f[i].ptr)
			return rfail(err, "malformed signed redirect: a parameter is missing");
	if (num_parse_u64(f[0].ptr, f[0].len, 0, INT64_MAX / 2, &exp) != AIS_OK ||
	    !pct_decode(f[1], user, sizeof(user)) || !body_valid(f[3]) || !is_lhex(f[4], AUTH_SIG_HEX))
		return rfail(err, "malformed signed redirect");
	buf_t sq = BUF_INIT;
	strip_query(q, &sq);
	redirect_sig(key, klen, (int64_t)exp, method, path, sv_of(&sq), f[3], sv_from(user), f[2], want);
	buf_free(&sq);
	if (!auth_sig_eq(f[4], want))
		return rfail(err, "signed redirect: the signature does not match");
	if ((int64_t)exp < now)
		return rfail(err, "signed redirect expired");
	memset(t, 0, sizeof(*t));
	if (auth_perm_decode(f[2], t) != AIS_OK)
		return rfail(err, "malformed signed redirect: permissions");
	memcpy(t->user, user, strlen(user) + 1);
	t->exp = (int64_t)exp;
	memcpy(body, f[3].ptr, f[3].len);
	body[f[3].len] = '\0';
	return AIS_OK;
}

bool auth_grants_allow(const char (*grants)[256], int n, sv_t user, sv_t bucket, unsigned perm)
{
	unsigned have = 0;
	for (int i = 0; i < n; i++) {
		sv_t u, b;
		unsigned p;
		buf_t e = BUF_INIT;
		int rc = auth_grant_split(grants[i], &u, &b, &p, &e);
		buf_free(&e);
		if (rc != AIS_OK || !sv_eq(u, user))
			continue;
		if (sv_eqstr(b, "*") && p == AUTH_ALL)
			return true; /* an administrator */
		if (bucket.len && (sv_eqstr(b, "*") || sv_eq(b, bucket)))
			have |= p;
	}
	return bucket.len && (have & perm) == perm;
}
