/*
 * auth.c - who sent an S3 request: the key table, the parsers of the
 * Authorization header and of presigned-URL parameters, and the SigV4
 * verification of both forms.
 *
 * Guarantees: a request is reported signed (S3_AUTH_HEADER/PRESIGNED) only
 * when its signature was recomputed with the named key's secret and
 * matched (constant-time compare), the credential scope is well formed for
 * service s3, the request time is within s3.max_skew of now (header form)
 * or the presigned URL is inside its validity window, and the payload mode
 * named by x-amz-content-sha256 is one this decoder verifies, and every
 * header that steers the request (x-amz-*) is among the signed ones. The region is
 * the one of the credential scope (clients may sign for any region). Every
 * failure is an S3 error code with the status S3 answers. The parsers read
 * only the bytes they are given (no NUL terminator needed).
 */
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "s3_int.h"
#include "aisd/banned.h"

/* ---- keys --------------------------------------------------------------- */

struct s3_keys {
	s3_key_t *v;
	size_t n, cap;
};

s3_keys_t *s3_keys_new(void)
{
	return xcalloc(1, sizeof(s3_keys_t));
}

void s3_keys_free(s3_keys_t *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n; i++) {
		free((char *)k->v[i].access_key);
		OPENSSL_cleanse((char *)k->v[i].secret_key, strlen(k->v[i].secret_key));
		free((char *)k->v[i].secret_key);
		free((char *)k->v[i].user_id);
		free((char *)k->v[i].display_name);
	}
	free(k->v);
	free(k);
}

int s3_keys_add(s3_keys_t *k, const char *spec, buf_t *err)
{
	sv_t f[4];
	if (conf_s3key_split(spec, f, err) != AIS_OK)
		return AIS_ERR;
	if (s3_keys_find(k, f[0])) {
		buf_addf(err, "s3.key: access key %.*s is given twice", (int)f[0].len, f[0].ptr);
		return AIS_ERR;
	}
	if (k->n == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 4;
		k->v = xrealloc(k->v, k->cap * sizeof(*k->v));
	}
	k->v[k->n++] = (s3_key_t){xstrndup(f[0].ptr, f[0].len), xstrndup(f[1].ptr, f[1].len),
	                          xstrndup(f[2].ptr, f[2].len), xstrndup(f[3].ptr, f[3].len)};
	return AIS_OK;
}

const s3_key_t *s3_keys_find(const s3_keys_t *k, sv_t access_key)
{
	for (size_t i = 0; k && i < k->n; i++)
		if (sv_eqstr(access_key, k->v[i].access_key))
			return &k->v[i];
	return NULL;
}

size_t s3_keys_count(const s3_keys_t *k)
{
	return k ? k->n : 0;
}

const s3_key_t *s3_keys_at(const s3_keys_t *k, size_t i)
{
	return i < s3_keys_count(k) ? &k->v[i] : NULL;
}

int s3_authcfg_init(s3_authcfg_t *cfg, const conf_t *c, buf_t *err)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->enabled = c->s3_auth;
	cfg->sigv2 = c->s3_sigv2;
	cfg->max_skew_s = (int64_t)(c->s3_max_skew_ms / 1000);
	if (strlen(c->s3_region) >= sizeof(cfg->region)) {
		buf_addstr(err, "s3.region is too long");
		return AIS_ERR;
	}
	memcpy(cfg->region, c->s3_region, strlen(c->s3_region) + 1);
	cfg->keys = s3_keys_new();
	for (int i = 0; i < c->n_s3_keys; i++) {
		if (s3_keys_add(cfg->keys, c->s3_keys[i], err) != AIS_OK) {
			s3_authcfg_free(cfg);
			return AIS_ERR;
		}
	}
	return AIS_OK;
}

void s3_authcfg_free(s3_authcfg_t *cfg)
{
	s3_keys_free(cfg->keys);
	cfg->keys = NULL;
}

void s3_req_from_http(const http_req_t *req, s3_req_t *out)
{
	out->method = http_method_name(req->method);
	out->path = req->path;
	out->query = req->query;
	out->hdrs = req->hdrs;
	out->nhdrs = req->nhdrs;
	out->vhost_bucket = (sv_t){"", 0};
	out->ck_of_object = false;
}

sv_t s3_req_header(const s3_req_t *r, const char *name)
{
	sv_t n = sv_from(name);
	for (size_t i = 0; i < r->nhdrs; i++)
		if (sv_eqcase(r->hdrs[i].name, n))
			return sv_trim(r->hdrs[i].value);
	return (sv_t){NULL, 0};
}

/* ---- parsers ------------------------------------------------------------ */

#define MALFORMED "AuthorizationHeaderMalformed"
#define QUERY_ERR "AuthorizationQueryParametersError"

static bool is_digits(sv_t s)
{
	for (size_t i = 0; i < s.len; i++)
		if (s.ptr[i] < '0' || s.ptr[i] > '9')
			return false;
	return s.len > 0;
}

static bool is_hex(sv_t s)
{
	for (size_t i = 0; i < s.len; i++) {
		char c = (char)(s.ptr[i] | 0x20);
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}

int s3_parse_cred(sv_t c, s3_cred_t *out, s3_autherr_t *err)
{
	sv_t part[5];
	size_t end = c.len;
	/* from the right: terminal, service, region, date; the rest is the key */
	for (int i = 4; i > 0; i--) {
		size_t j = end;
		while (j > 0 && c.ptr[j - 1] != '/')
			j--;
		if (j == 0)
			goto bad;
		part[i] = (sv_t){c.ptr + j, end - j};
		end = j - 1;
	}
	part[0] = (sv_t){c.ptr, end};
	if (!part[0].len || memchr(part[0].ptr, '/', part[0].len) || !part[2].len)
		goto bad;
	if (part[1].len != 8 || !is_digits(part[1])) {
		s3_err(err, 400, MALFORMED,
		       "The authorization header is malformed; invalid credential date \"%.*s\".",
		       (int)MIN(part[1].len, 64), part[1].ptr);
		return AIS_ERR;
	}
	if (!sv_eqstr(part[3], "s3")) {
		s3_err(err, 400, MALFORMED,
		       "The authorization header is malformed; incorrect service \"%.*s\". This endpoint "
		       "belongs to \"s3\".",
		       (int)MIN(part[3].len, 64), part[3].ptr);
		return AIS_ERR;
	}
	if (!sv_eqstr(part[4], "aws4_request")) {
		s3_err(err, 400, MALFORMED,
		       "The authorization header is malformed; incorrect terminal \"%.*s\". This endpoint "
		       "uses \"aws4_request\".",
		       (int)MIN(part[4].len, 64), part[4].ptr);
		return AIS_ERR;
	}
	*out = (s3_cred_t){part[0], part[1], part[2], part[3], part[4]};
	return AIS_OK;
bad:
	s3_err(err, 400, MALFORMED,
	       "The authorization header is malformed; the Credential is mal-formed; expecting "
	       "\"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".");
	return AIS_ERR;
}

static int check_signature_text(sv_t s)
{
	return s.len == 64 && is_hex(s) ? AIS_OK : AIS_ERR;
}

int s3_parse_authz(sv_t h, s3_authz_t *out, s3_autherr_t *err)
{
	sv_t cred = {NULL, 0}, sh = {NULL, 0}, sig = {NULL, 0};
	h = sv_trim(h);
	if (!sv_startswith(h, S3_ALGO) || h.len == strlen(S3_ALGO) ||
	    (h.ptr[strlen(S3_ALGO)] != ' ' && h.ptr[strlen(S3_ALGO)] != '\t')) {
		s3_err(err, 400, "InvalidArgument", "Unsupported Authorization Type");
		return AIS_ERR;
	}
	sv_t rest = {h.ptr + strlen(S3_ALGO), h.len - strlen(S3_ALGO)};
	while (rest.len) {
		const char *comma = memchr(rest.ptr, ',', rest.len);
		sv_t item = sv_trim((sv_t){rest.ptr, comma ? (size_t)(comma - rest.ptr) : rest.len});
		rest.ptr += (comma ? (size_t)(comma - rest.ptr) + 1 : rest.len);
		rest.len = comma ? h.len - (size_t)(rest.ptr - h.ptr) : 0;
		if (!item.len)
			continue;
		const char *eq = memchr(item.ptr, '=', item.len);
		if (!eq)
			goto bad;
		sv_t k = sv_trim((sv_t){item.ptr, (size_t)(eq - item.ptr)});
		sv_t v = sv_trim((sv_t){eq + 1, item.len - (size_t)(eq - item.ptr) - 1});
		sv_t *slot = sv_eqstr(k, "Credential")      ? &cred
		             : sv_eqstr(k, "SignedHeaders") ? &sh
		             : sv_eqstr(k, "Signature")     ? &sig
		                                            : NULL;
		if (!slot || slot->ptr)
			goto bad;
		*slot = v;
	}
	if (!cred.ptr || !sh.ptr || !sig.ptr)
		goto bad;
	if (s3_parse_cred(cred, &out->cred, err) != AIS_OK)
		return AIS_ERR;
	if (!sh.len || check_signature_text(sig) != AIS_OK)
		goto bad;
	out->signed_headers = sh;
	out->signature = sig;
	return AIS_OK;
bad:
	s3_err(err, 400, MALFORMED,
	       "The authorization header is malformed; it must be \"AWS4-HMAC-SHA256 Credential=..., "
	       "SignedHeaders=..., Signature=...\".");
	return AIS_ERR;
}

int s3_qdecode(sv_t v, bool plus_space, char *dst, size_t dstsz)
{
	size_t n = 0;
	for (size_t i = 0; i < v.len; i++) {
		char c = v.ptr[i];
		if (c == '%') {
			unsigned char b;
			if (i + 2 >= v.len || hex_decode(v.ptr + i + 1, 2, &b, 1) != AIS_OK)
				return AIS_ERR;
			c = (char)b;
			i += 2;
		} else if (c == '+' && plus_space) {
			c = ' ';
		}
		if (n + 1 >= dstsz || c == '\0')
			return AIS_ERR;
		dst[n++] = c;
	}
	dst[n] = '\0';
	return AIS_OK;
}

enum { P_ALGO, P_CRED, P_DATE, P_EXPIRES, P_SH, P_SIG, P_SHA, P_N };

int s3_parse_presign(sv_t query, s3_presign_t *out, s3_autherr_t *err)
{
	static const char *const names[P_N] = {
	        "X-Amz-Algorithm",     "X-Amz-Credential", "X-Amz-Date",          "X-Amz-Expires",
	        "X-Amz-SignedHeaders", "X-Amz-Signature",  "X-Amz-Content-Sha256"};
	sv_t val[P_N] = {{NULL, 0}};
	sv_t q = query, k, v;

	while (http_query_next(&q, &k, &v)) {
		for (int i = 0; i < P_N; i++) {
			if (!sv_eqstr(k, names[i]))
				continue;
			if (val[i].ptr) {
				s3_err(err, 400, QUERY_ERR, "%s is given more than once.", names[i]);
				return AIS_ERR;
			}
			val[i] = v;
		}
	}
	if (!val[P_ALGO].ptr)
		return AIS_DONE;
	memset(out, 0, sizeof(*out));
	if (!sv_eqstr(val[P_ALGO], S3_ALGO)) {
		s3_err(err, 400, QUERY_ERR, "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
		return AIS_ERR;
	}
	for (int i = P_CRED; i < P_SHA; i++) {
		if (!val[i].ptr) {
			s3_err(err, 400, QUERY_ERR,
			       "Query-string authentication version 4 requires the X-Amz-Algorithm, "
			       "X-Amz-Credential, "
			       "X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires "
			       "parameters.");
			return AIS_ERR;
		}
	}
	char expires[32];
	if (s3_qdecode(val[P_CRED], true, out->credential, sizeof(out->credential)) ||
	    s3_qdecode(val[P_DATE], true, out->amz_date, sizeof(out->amz_date)) ||
	    s3_qdecode(val[P_SH], true, out->signed_headers, sizeof(out->signed_headers)) ||
	    s3_qdecode(val[P_SIG], true, out->signature, sizeof(out->signature)) ||
	    s3_qdecode(val[P_EXPIRES], true, expires, sizeof(expires)) ||
	    (val[P_SHA].ptr && s3_qdecode(val[P_SHA], true, out->content_sha256, sizeof(out->content_sha256)))) {
		s3_err(err, 400, QUERY_ERR, "A presign parameter is malformed or too long.");
		return AIS_ERR;
	}
	uint64_t x;
	bool neg = expires[0] == '-';
	if (num_parse_u64(expires + neg, strlen(expires + neg), 0, UINT64_MAX, &x) != AIS_OK) {
		s3_err(err, 400, QUERY_ERR, "X-Amz-Expires should be a number");
		return AIS_ERR;
	}
	/* out of range: 403, as S3 answers such a URL (s3-tests) */
	if (neg || x == 0 || x > S3_PRESIGN_MAX_EXPIRES) {
		s3_err(err, 403, "AccessDenied",
		       neg ? "X-Amz-Expires must be non-negative"
		       : x ? "X-Amz-Expires must be less than a week (in seconds) that is 604800 seconds"
		           : "X-Amz-Expires must be at least 1 second");
		return AIS_ERR;
	}
	out->expires = (int64_t)x;
	if (s3_parse_cred(sv_from(out->credential), &out->cred, err) != AIS_OK) {
		err->code = QUERY_ERR;
		if (!strncmp(err->message, "The authorization header is malformed; ", 39))
			memmove(err->message, err->message + 39, strlen(err->message + 39) + 1);
		return AIS_ERR;
	}
	if (!out->signed_headers[0] || check_signature_text(sv_from(out->signature)) != AIS_OK) {
		s3_err(err, 400, QUERY_ERR, "X-Amz-SignedHeaders or X-Amz-Signature is malformed.");
		return AIS_ERR;
	}
	return AIS_OK;
}

/* ---- verification ------------------------------------------------------- */

int s3_parse_payload_mode(sv_t v, s3_auth_t *out, s3_autherr_t *err)
{
	if (!v.ptr || sv_eqstr(v, "UNSIGNED-PAYLOAD")) {
		out->payload = S3_PAYLOAD_UNSIGNED;
	} else if (sv_eqstr(v, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")) {
		out->payload = S3_PAYLOAD_STREAM_SIGNED;
	} else if (sv_eqstr(v, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER")) {
		out->payload = S3_PAYLOAD_STREAM_SIGNED_TRAILER;
	} else if (sv_eqstr(v, "STREAMING-UNSIGNED-PAYLOAD-TRAILER")) {
		out->payload = S3_PAYLOAD_STREAM_UNSIGNED_TRAILER;
	} else if (v.len == 64 && hex_decode(v.ptr, 64, out->payload_sha256, 32) == AIS_OK) {
		out->payload = S3_PAYLOAD_SHA256;
	} else {
		s3_err(err, 400, "InvalidArgument",
		       "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, "
		       "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, STREAMING-UNSIGNED-PAYLOAD-TRAILER or a "
		       "valid sha256 value.");
		return AIS_ERR;
	}
	return AIS_OK;
}

/* Recomputes the signature and compares. On a match fills out's signing
 * context. */
static int check_signature(const s3_req_t *req, const s3_key_t *key, const s3_cred_t *cred,
                           const char *amz_date, sv_t signed_headers, bool presigned, sv_t payload_hash,
                           sv_t signature, s3_auth_t *out, s3_autherr_t *err)
{
	buf_t cr = BUF_INIT, sts = BUF_INIT;
	char scope[sizeof(out->scope)], sig[65], given[65];
	unsigned char k[32];
	int rc = AIS_OK;

	if (cred->region.len >= sizeof(out->region) ||
	    (size_t)snprintf(scope, sizeof(scope), "%.*s/%.*s/s3/aws4_request", (int)cred->date.len,
	                     cred->date.ptr, (int)cred->region.len, cred->region.ptr) >= sizeof(scope)) {
		s3_err(err, 400, presigned ? QUERY_ERR : MALFORMED,
		       "The region in the credential is too long.");
		return AIS_ERR;
	}
	s3_canonical_request(&cr, req, signed_headers, presigned, payload_hash);
	s3_string_to_sign(&sts, amz_date, sv_from(scope), sv_of(&cr));
	s3_signing_key(key->secret_key, cred->date, cred->region, k);
	s3_hmac_hex(k, sts.ptr, sts.len, sig);
	for (size_t i = 0; i < 64; i++)
		given[i] = (char)(signature.ptr[i] | 0x20); /* hex checked: lower case */
	if (CRYPTO_memcmp(sig, given, 64) != 0) {
		s3_err(err, 403, "SignatureDoesNotMatch",
		       "The request signature we calculated does not match the signature you provided. "
		       "Check your key and signing method.");
		rc = AIS_ERR;
	} else {
		memcpy(out->amz_date, amz_date, 17);
		memcpy(out->scope, scope, sizeof(scope));
		memcpy(out->region, cred->region.ptr, cred->region.len);
		out->region[cred->region.len] = '\0';
		memcpy(out->seed_signature, sig, 65);
		memcpy(out->signing_key, k, 32);
		out->key = key;
	}
	OPENSSL_cleanse(k, sizeof(k));
	buf_free(&cr);
	buf_free(&sts);
	return rc;
}

/*
 * Headers that must be signed when a request carries them, as S3 answers:
 * every x-amz-* header (ACLs, grants, metadata, copy sources, checksums,
 * directives all steer what the request does), except x-amz-content-sha256,
 * which is bound anyway (the header form signs its value as the payload
 * hash; the presigned form takes the payload mode from the signed query and
 * never reads the header). Content-Type and Content-MD5 need not be signed
 * (S3 accepts them unsigned, as browsers send them to presigned URLs; the
 * MD5 is checked against the body).
 */
static bool must_be_signed(sv_t name)
{
	return sv_casestartswith(name, "x-amz-") && !sv_eqcase(name, SV("x-amz-content-sha256"));
}

static bool listed(sv_t signed_headers, sv_t name)
{
	sv_t sh = signed_headers;
	while (sh.len) {
		const char *semi = memchr(sh.ptr, ';', sh.len);
		sv_t n = {sh.ptr, semi ? (size_t)(semi - sh.ptr) : sh.len};
		if (sv_eqcase(sv_trim(n), name))
			return true;
		sh.ptr += n.len + (semi ? 1 : 0);
		sh.len -= n.len + (semi ? 1 : 0);
	}
	return false;
}

int s3_check_signed_headers(const s3_req_t *req, sv_t signed_headers, s3_autherr_t *err)
{
	for (size_t i = 0; i < req->nhdrs; i++) {
		sv_t n = req->hdrs[i].name;
		if (!must_be_signed(n) || listed(signed_headers, n))
			continue;
		s3_err(err, 403, "AccessDenied", "There were headers present in the request which were not signed");
		size_t k = MIN(n.len, sizeof(err->headers_not_signed) - 1);
		for (size_t j = 0; j < k; j++)
			err->headers_not_signed[j] = (char)(n.ptr[j] >= 'A' && n.ptr[j] <= 'Z' ? n.ptr[j] | 0x20 : n.ptr[j]);
		err->headers_not_signed[k] = '\0';
		return AIS_ERR;
	}
	return AIS_OK;
}

const s3_key_t *s3_find_key(const s3_authcfg_t *cfg, sv_t ak, s3_autherr_t *err)
{
	const s3_key_t *key = s3_keys_find(cfg->keys, ak);
	if (!key)
		s3_err(err, 403, "InvalidAccessKeyId",
		       "The AWS Access Key Id you provided does not exist in our records.");
	return key;
}

static int verify_header(const s3_authcfg_t *cfg, const s3_req_t *req, sv_t authz, int64_t now,
                         s3_auth_t *out, s3_autherr_t *err)
{
	s3_authz_t a;
	char amz_date[17];
	int64_t t;

	if (s3_parse_authz(authz, &a, err) != AIS_OK)
		return AIS_ERR;
	const s3_key_t *key = s3_find_key(cfg, a.cred.access_key, err);
	if (!key)
		return AIS_ERR;
	sv_t xd = s3_req_header(req, "x-amz-date"), d = s3_req_header(req, "date");
	if (xd.ptr) {
		if (s3_parse_amz_date(xd, &t) != AIS_OK)
			goto no_date;
	} else if (d.ptr) {
		int64_t ns;
		if (time_parse_http_date(d.ptr, d.len, &ns) != AIS_OK)
			goto no_date;
		t = ns / 1000000000;
	} else {
		goto no_date;
	}
	s3_format_amz_date(t, amz_date);
	if (memcmp(a.cred.date.ptr, amz_date, 8)) {
		s3_err(err, 400, MALFORMED,
		       "The authorization header is malformed; Invalid credential date \"%.8s\". This date "
		       "is not "
		       "the same as X-Amz-Date: \"%.8s\".",
		       a.cred.date.ptr, amz_date);
		return AIS_ERR;
	}
	if (t > now + cfg->max_skew_s || t < now - cfg->max_skew_s) {
		s3_err(err, 403, "RequestTimeTooSkewed",
		       "The difference between the request time and the current time is too large.");
		return AIS_ERR;
	}
	sv_t ph = s3_req_header(req, "x-amz-content-sha256");
	if (!ph.ptr) {
		s3_err(err, 400, "InvalidRequest",
		       "Missing required header for this request: x-amz-content-sha256");
		return AIS_ERR;
	}
	if (s3_parse_payload_mode(ph, out, err) != AIS_OK)
		return AIS_ERR;
	if (check_signature(req, key, &a.cred, amz_date, a.signed_headers, false, ph, a.signature, out,
	                    err) != AIS_OK ||
	    s3_check_signed_headers(req, a.signed_headers, err) != AIS_OK)
		return AIS_ERR;
	out->kind = S3_AUTH_HEADER;
	out->verify_chunks =
	        out->payload == S3_PAYLOAD_STREAM_SIGNED || out->payload == S3_PAYLOAD_STREAM_SIGNED_TRAILER;
	return AIS_OK;
no_date:
	s3_err(err, 403, "AccessDenied", "AWS authentication requires a valid Date or x-amz-date header");
	return AIS_ERR;
}

static int verify_presigned(const s3_authcfg_t *cfg, const s3_req_t *req, const s3_presign_t *p, int64_t now,
                            s3_auth_t *out, s3_autherr_t *err)
{
	int64_t t;
	const s3_key_t *key = s3_find_key(cfg, p->cred.access_key, err);
	if (!key)
		return AIS_ERR;
	if (s3_parse_amz_date(sv_from(p->amz_date), &t) != AIS_OK) {
		s3_err(err, 400, QUERY_ERR,
		       "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
		return AIS_ERR;
	}
	if (memcmp(p->cred.date.ptr, p->amz_date, 8)) {
		s3_err(err, 400, QUERY_ERR,
		       "Invalid credential date \"%.8s\". This date is not the same as X-Amz-Date: \"%.8s\".",
		       p->cred.date.ptr, p->amz_date);
		return AIS_ERR;
	}
	if (t > now + cfg->max_skew_s) {
		s3_err(err, 403, "AccessDenied", "Request is not valid yet");
		return AIS_ERR;
	}
	if (now > t + p->expires) {
		s3_err(err, 403, "AccessDenied", "Request has expired");
		return AIS_ERR;
	}
	sv_t ph = p->content_sha256[0] ? sv_from(p->content_sha256) : SV("UNSIGNED-PAYLOAD");
	if (s3_parse_payload_mode(ph, out, err) != AIS_OK)
		return AIS_ERR;
	if (check_signature(req, key, &p->cred, p->amz_date, sv_from(p->signed_headers), true, ph,
	                    sv_from(p->signature), out, err) != AIS_OK ||
	    s3_check_signed_headers(req, sv_from(p->signed_headers), err) != AIS_OK)
		return AIS_ERR;
	out->kind = S3_AUTH_PRESIGNED;
	out->verify_chunks =
	        out->payload == S3_PAYLOAD_STREAM_SIGNED || out->payload == S3_PAYLOAD_STREAM_SIGNED_TRAILER;
	return AIS_OK;
}

int s3_auth_verify(const s3_authcfg_t *cfg, const s3_req_t *req, int64_t now_s, s3_auth_t *out,
                   s3_autherr_t *err)
{
	memset(out, 0, sizeof(*out));
	memset(err, 0, sizeof(*err));
	sv_t authz = s3_req_header(req, "authorization");

	if (!cfg->enabled) {
		out->kind = S3_AUTH_OFF;
		return s3_parse_payload_mode(s3_req_header(req, "x-amz-content-sha256"), out, err);
	}
	s3_presign_t *p = xmalloc(sizeof(*p));
	int rc = s3_parse_presign(req->query, p, err);
	if (rc == AIS_ERR)
		goto out;
	bool v2q = rc == AIS_DONE && s3_v2_presigned(req->query);
	if ((rc == AIS_OK || v2q) && authz.ptr) {
		s3_err(err, 400, "InvalidArgument",
		       "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature "
		       "query "
		       "string parameter or the Authorization header should be specified");
		rc = AIS_ERR;
	} else if (rc == AIS_OK) {
		rc = verify_presigned(cfg, req, p, now_s, out, err);
	} else if (v2q || sv_startswith(authz, "AWS ")) {
		rc = s3_v2_verify(cfg, req, authz, now_s, out, err);
	} else if (authz.ptr) {
		rc = verify_header(cfg, req, authz, now_s, out, err);
	} else {
		out->kind = S3_AUTH_ANON;
		rc = s3_parse_payload_mode(s3_req_header(req, "x-amz-content-sha256"), out, err);
	}
out:
	OPENSSL_cleanse(p, sizeof(*p));
	free(p);
	if (rc != AIS_OK) {
		OPENSSL_cleanse(out, sizeof(*out));
		memset(out, 0, sizeof(*out));
	}
	return rc;
}

int s3_auth_require(const s3_authcfg_t *cfg, const s3_auth_t *auth, s3_autherr_t *err)
{
	if (!cfg->enabled || auth->kind == S3_AUTH_OFF || auth->kind == S3_AUTH_HEADER ||
	    auth->kind == S3_AUTH_PRESIGNED)
		return AIS_OK;
	s3_err(err, 403, "AccessDenied", "Access Denied");
	return AIS_ERR;
}
