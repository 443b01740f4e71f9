/*
 * sign.c - what the cluster secret signs (intra-cluster calls, redirects)
 * and the config's per-user grants. Pure: the caller passes the time.
 *
 * Why an HMAC with a timestamp and not the secret itself in a header: the
 * intra-cluster network may be plain HTTP (TLS is optional), and a header
 * that carries the secret hands it to anyone who sees one request, for
 * ever. A signature over the time, method and request-target gives a
 * sniffer only that one request, for AUTH_INTRA_SKEW seconds; it costs one
 * HMAC-SHA256 of ~100 bytes per call (3-5 us with OpenSSL 3 on a loaded
 * 2-core machine; a bearer token check, two JSON parses and an HMAC, 14-26 us).
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

#include "aisd/auth.h"
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

sv_t auth_url_target(const char *url)
{
	const char *p = strstr(url, "://");
	p = p ? strchr(p + 3, '/') : url;
	if (!p || *p != '/')
		return (sv_t){"/", 1};
	const char *h = strchr(p, '#');
	return (sv_t){p, h ? (size_t)(h - p) : strlen(p)};
}

static void intra_sig(const void *key, size_t klen, long long ts, const char *method, sv_t target,
		      char out[AUTH_SIG_HEX + 1])
{
	buf_t m = BUF_INIT;
	buf_addf(&m, "aisd-intra\n%lld\n%s\n", ts, method);
	buf_addsv(&m, target);
	auth_hmac_hex(key, klen, m.ptr, m.len, out);
	buf_free(&m);
}

void auth_intra_sign(const void *key, size_t klen, const char *method, const char *url, int64_t now,
		     char *out, size_t outsz)
{
	char sig[AUTH_SIG_HEX + 1];
	intra_sig(key, klen, (long long)now, method, auth_url_target(url), sig);
	snprintf(out, outsz, "%lld.%s", (long long)now, sig);
}

bool auth_intra_check(const void *key, size_t klen, sv_t value, const char *method, sv_t target, int64_t now)
{
	uint64_t ts;
	char want[AUTH_SIG_HEX + 1];
	const char *dot = value.ptr ? memchr(value.ptr, '.', value.len) : NULL;
	if (!dot || num_parse_u64(value.ptr, (size_t)(dot - value.ptr), 0, INT64_MAX / 2, &ts) != AIS_OK)
		return false;
	if ((int64_t)ts > now + AUTH_INTRA_SKEW || (int64_t)ts < now - AUTH_INTRA_SKEW)
		return false;
	intra_sig(key, klen, (long long)ts, method, target, want);
	return auth_sig_eq((sv_t){dot + 1, value.len - (size_t)(dot + 1 - value.ptr)}, want);
}

void auth_redirect_sig(const void *key, size_t klen, const char *method, sv_t path, int64_t exp,
		       char out[AUTH_SIG_HEX + 1])
{
	buf_t m = BUF_INIT;
	buf_addf(&m, "aisd-redirect\n%lld\n%s\n", (long long)exp, method);
	buf_addsv(&m, path);
	auth_hmac_hex(key, klen, m.ptr, m.len, out);
	buf_free(&m);
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
