/*
 * jwt.c - bearer tokens: JSON Web Tokens signed with HS256 (RFC 7519,
 * 7515), claims in AIStore's style, and the permission words.
 *
 * A token is BASE64URL(header) "." BASE64URL(claims) "." BASE64URL(sig):
 *   header  {"alg":"HS256","typ":"JWT"}          (typ optional)
 *   claims  {"username":"alice","admin":false,"exp":1767225600,
 *            "buckets":[{"bucket":"photos","perm":"ro"}, ...],
 *            "iat":1767222000, "monitor":false}   (iat, admin, monitor, buckets optional)
 *   sig     HMAC-SHA256(secret, header "." claims)
 * The parser is strict (auth.h rule 1): canonical base64url without '=',
 * no duplicate or unknown fields, exact types, a bucket name that is a
 * valid name or "*", a known permission. The signature is checked before
 * the claims are used.
 */
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

#include "aisd/auth.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

static const char b64u[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void b64u_encode(const unsigned char *in, size_t n, buf_t *out)
{
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		buf_addch(out, b64u[v >> 18]);
		buf_addch(out, b64u[(v >> 12) & 63]);
		if (i + 1 < n)
			buf_addch(out, b64u[(v >> 6) & 63]);
		if (i + 2 < n)
			buf_addch(out, b64u[v & 63]);
	}
}

static int b64u_val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

/* Canonical unpadded base64url into out (cap bytes). AIS_OK with *n, or
 * AIS_ERR: a bad character, a length of 4k+1, unused bits set, too long. */
static int b64u_decode(const char *in, size_t len, unsigned char *out, size_t cap, size_t *n)
{
	size_t o = 0;
	if (len % 4 == 1)
		return AIS_ERR;
	if (len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0) > cap)
		return AIS_ERR;
	for (size_t i = 0; i < len; i += 4) {
		uint32_t v = 0;
		size_t k = MIN(4, len - i);
		for (size_t j = 0; j < 4; j++) {
			int d = j < k ? b64u_val(in[i + j]) : 0;
			if (d < 0)
				return AIS_ERR;
			v = v << 6 | (uint32_t)d;
		}
		out[o++] = (unsigned char)(v >> 16);
		if (k > 2)
			out[o++] = (unsigned char)(v >> 8);
		else if (v & 0xffff)
			return AIS_ERR;
		if (k > 3)
			out[o++] = (unsigned char)v;
		else if (v & 0xff)
			return AIS_ERR;
	}
	*n = o;
	return AIS_OK;
}

/* --- tokens ------------------------------------------------------------------- */

static int fail(buf_t *err, const char *msg)
{
	buf_addstr(err, msg);
	return AIS_ERR;
}

static int parse_header(const unsigned char *p, size_t n, buf_t *err)
{
	json_error_t je;
	json_t *h = json_loadb((const char *)p, n, JSON_REJECT_DUPLICATES, &je);
	int rc = AIS_ERR;
	const char *k;
	json_t *v;
	if (!json_is_object(h)) {
		fail(err, "token header is not a JSON object");
		goto out;
	}
	json_object_foreach(h, k, v) {
		if (!strcmp(k, "alg")) {
			if (!json_is_string(v) || strcmp(json_string_value(v), "HS256")) {
				fail(err, "token algorithm must be HS256");
				goto out;
			}
		} else if (!strcmp(k, "typ")) {
			if (!json_is_string(v) || strcmp(json_string_value(v), "JWT")) {
				fail(err, "token type must be JWT");
				goto out;
			}
		} else {
			fail(err, "unknown field in the token header");
			goto out;
		}
	}
	if (!json_object_get(h, "alg")) {
		fail(err, "token header lacks alg");
		goto out;
	}
	rc = AIS_OK;
out:
	json_decref(h);
	return rc;
}

static int parse_bucket(json_t *e, auth_bucket_perm_t *bp, buf_t *err)
{
	const char *k;
	json_t *v;
	bool have_b = false, have_p = false;
	if (!json_is_object(e))
		return fail(err, "token buckets entries must be objects");
	json_object_foreach(e, k, v) {
		if (!strcmp(k, "bucket")) {
			const char *s = json_string_value(v);
			size_t l = json_string_length(v);
			if (!s || !((l == 1 && s[0] == '*') || (l <= NAME_BUCKET_MAX && name_bucket_valid(s, l))))
				return fail(err, "token bucket must be a bucket name or \"*\"");
			memcpy(bp->bucket, s, l + 1);
			have_b = true;
		} else if (!strcmp(k, "perm")) {
			if (!json_is_string(v) ||
			    auth_perm_parse((sv_t){json_string_value(v), json_string_length(v)}, &bp->perm) != AIS_OK)
				return fail(err, "token perm must be read, write, list, delete, admin, ro or rw");
			have_p = true;
		} else {
			return fail(err, "unknown field in a token bucket entry");
		}
	}
	if (!have_b || !have_p)
		return fail(err, "a token bucket entry needs bucket and perm");
	return AIS_OK;
}

static int parse_claims(const unsigned char *p, size_t n, auth_token_t *t, buf_t *err)
{
	json_error_t je;
	json_t *c = json_loadb((const char *)p, n, JSON_REJECT_DUPLICATES, &je);
	int rc = AIS_ERR;
	const char *k;
	json_t *v;
	bool have_user = false, have_exp = false;
	memset(t, 0, sizeof(*t));
	if (!json_is_object(c)) {
		fail(err, "token claims are not a JSON object");
		goto out;
	}
	json_object_foreach(c, k, v) {
		if (!strcmp(k, "username")) {
			const char *s = json_string_value(v);
			size_t l = json_string_length(v);
			if (!s || !l || l > AUTH_USER_MAX || memchr(s, ':', l) || memchr(s, '\0', l)) {
				fail(err, "token username must be 1..128 bytes without ':'");
				goto out;
			}
			memcpy(t->user, s, l + 1);
			have_user = true;
		} else if (!strcmp(k, "admin") || !strcmp(k, "monitor")) {
			if (!json_is_boolean(v)) {
				fail(err, "token admin and monitor must be true or false");
				goto out;
			}
			if (k[0] == 'a')
				t->admin = json_is_true(v);
			else
				t->monitor = json_is_true(v);
		} else if (!strcmp(k, "exp") || !strcmp(k, "iat")) {
			if (!json_is_integer(v) || json_integer_value(v) < 0) {
				fail(err, "token exp and iat must be Unix seconds");
				goto out;
			}
			if (k[0] == 'e') {
				t->exp = json_integer_value(v);
				have_exp = true;
			}
		} else if (!strcmp(k, "buckets")) {
			size_t i;
			json_t *e;
			if (!json_is_array(v) || json_array_size(v) > AUTH_MAX_BUCKETS) {
				fail(err, "token buckets must be an array of at most 64 entries");
				goto out;
			}
			json_array_foreach(v, i, e) {
				if (parse_bucket(e, &t->b[t->nb], err) != AIS_OK)
					goto out;
				t->nb++;
			}
		} else {
			fail(err, "unknown claim in the token");
			goto out;
		}
	}
	if (!have_user || !have_exp) {
		fail(err, "token claims need username and exp");
		goto out;
	}
	rc = AIS_OK;
out:
	json_decref(c);
	return rc;
}

int auth_jwt_decode(const char *tok, size_t len, auth_token_t *out, size_t *signed_len,
		    unsigned char sig[32], buf_t *err)
{
	unsigned char tmp[AUTH_TOKEN_MAX];
	size_t n;
	if (!len || len > AUTH_TOKEN_MAX)
		return fail(err, "token empty or too long");
	const char *d1 = memchr(tok, '.', len);
	const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - tok)) : NULL;
	if (!d1 || !d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - tok)))
		return fail(err, "token must have three parts");
	if (b64u_decode(tok, (size_t)(d1 - tok), tmp, sizeof(tmp), &n) != AIS_OK || !n)
		return fail(err, "token header is not base64url");
	if (parse_header(tmp, n, err) != AIS_OK)
		return AIS_ERR;
	if (b64u_decode(d1 + 1, (size_t)(d2 - d1 - 1), tmp, sizeof(tmp), &n) != AIS_OK || !n)
		return fail(err, "token claims are not base64url");
	if (parse_claims(tmp, n, out, err) != AIS_OK)
		return AIS_ERR;
	if (b64u_decode(d2 + 1, len - (size_t)(d2 + 1 - tok), tmp, sizeof(tmp), &n) != AIS_OK || n != 32)
		return fail(err, "token signature is not a base64url HMAC-SHA256");
	memcpy(sig, tmp, 32);
	*signed_len = (size_t)(d2 - tok);
	return AIS_OK;
}

int auth_jwt_verify(const char *tok, size_t len, const void *key, size_t klen, int64_t now,
		    auth_token_t *out, bool *expired, buf_t *err)
{
	unsigned char sig[32], want[EVP_MAX_MD_SIZE];
	unsigned wl = 0;
	size_t sl;
	auth_token_t t;
	if (expired)
		*expired = false;
	if (auth_jwt_decode(tok, len, &t, &sl, sig, err) != AIS_OK)
		return AIS_ERR;
	if (!HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)tok, sl, want, &wl) || wl != 32 ||
	    CRYPTO_memcmp(sig, want, 32))
		return fail(err, "token signature does not match");
	if (t.exp <= now) {
		if (expired)
			*expired = true;
		return fail(err, "token expired");
	}
	*out = t;
	return AIS_OK;
}

void auth_jwt_make(const auth_token_t *t, const void *key, size_t klen, buf_t *out)
{
	static const char hdr[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
	buf_t c = BUF_INIT;
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned ml = 0;
	size_t start = out->len;

	buf_addstr(&c, "{\"username\":");
	buf_add_json_str(&c, t->user, strlen(t->user));
	buf_addf(&c, ",\"admin\":%s,%s\"exp\":%lld,\"buckets\":[", t->admin ? "true" : "false",
		 t->monitor ? "\"monitor\":true," : "", (long long)t->exp);
	for (size_t i = 0; i < t->nb; i++) {
		buf_addf(&c, "%s{\"bucket\":", i ? "," : "");
		buf_add_json_str(&c, t->b[i].bucket, strlen(t->b[i].bucket));
		buf_addstr(&c, ",\"perm\":\"");
		auth_perm_format(t->b[i].perm, &c);
		buf_addstr(&c, "\"}");
	}
	buf_addstr(&c, "]}");
	b64u_encode((const unsigned char *)hdr, sizeof(hdr) - 1, out);
	buf_addch(out, '.');
	b64u_encode((const unsigned char *)c.ptr, c.len, out);
	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)out->ptr + start, out->len - start, mac, &ml);
	buf_addch(out, '.');
	b64u_encode(mac, ml, out);
	buf_free(&c);
}

bool auth_token_allows(const auth_token_t *t, sv_t bucket, unsigned perm)
{
	if (t->admin)
		return true;
	if (!bucket.len)
		return false; /* the cluster's own operations: administrators only */
	unsigned have = 0;
	for (size_t i = 0; i < t->nb; i++)
		if (!strcmp(t->b[i].bucket, "*") || sv_eqstr(bucket, t->b[i].bucket))
			have |= t->b[i].perm;
	return (have & perm) == perm;
}
