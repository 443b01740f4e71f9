/*
 * sigv2.c - AWS Signature Version 2 as S3 applies it, for older clients:
 * the string to sign, Base64(HMAC-SHA1(secret, StringToSign)), and the
 * verification of its two forms, the header "Authorization: AWS AK:SIG" and
 * the presigned query "?AWSAccessKeyId=&Expires=&Signature=". The browser
 * POST form's SigV2 signature (post.c) is the same HMAC over its policy.
 *
 * Guarantees: a request is reported signed only when the signature
 * recomputed with the key's secret matches (constant-time compare), SigV2
 * is enabled (s3.sigv2), its time is within s3.max_skew of now (header) or
 * before Expires (query), and its payload mode needs no SigV4 signing key.
 * The string to sign holds every x-amz-* header, so the rule of auth.c
 * (every x-amz-* header a request carries is signed) holds by construction.
 * The result is the one SigV4 gives (S3_AUTH_HEADER/PRESIGNED with the key),
 * so authorization is decided the same way. The string to sign is the one
 * AWS documents and clients (botocore, s3cmd, the AWS SDKs) compute:
 *
 *   VERB \n Content-MD5 \n Content-Type \n Date \n
 *   x-amz-a:v1,v2 \n ...   (lower-cased, sorted, values trimmed)
 *   [/bucket-of-Host]/raw/path[?sub=v&sub2]   (signed sub-resources, sorted)
 *
 * A path-style bucket "/b" verifies signed as "/b" (AWS's rule) or "/b/"
 * (botocore's clients); both name the same resource. And a request whose
 * query starts with a sub-resource without a value ("?acl", "?cors") also
 * verifies with it said twice, "/b/k?acl?acl" (botocore 1.29, Debian 12's,
 * signs path-style requests so: the operation's "?acl" kept in the path,
 * then the signed sub-resources): the same request, its parts in the same
 * places, so neither form names another request.
 *
 * Date is "" when x-amz-date is present and Expires in the query form.
 */
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3_int.h"
#include "aisd/banned.h"

/* The query parameters that name a sub-resource and so are signed, sorted:
 * those of AWS's documentation, botocore, s3cmd and the AWS SDKs sign. */
static const char *const subresources[] = {
        "accelerate",
        "acl",
        "analytics",
        "cors",
        "defaultObjectAcl",
        "delete",
        "inventory",
        "lifecycle",
        "location",
        "logging",
        "metrics",
        "notification",
        "object-lock",
        "partNumber",
        "policy",
        "replication",
        "requestPayment",
        "response-cache-control",
        "response-content-disposition",
        "response-content-encoding",
        "response-content-language",
        "response-content-type",
        "response-expires",
        "restore",
        "select",
        "select-type",
        "storageClass",
        "tagging",
        "torrent",
        "uploadId",
        "uploads",
        "versionId",
        "versioning",
        "versions",
        "website",
};

void s3_v2_sign(const char *secret, const void *msg, size_t n, char out[S3_V2_SIG_LEN + 1])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned dl = 0;
	if (!HMAC(s3_md(S3_MD_SHA1), secret, (int)strlen(secret), msg, n, d, &dl) || dl != 20)
		fatalx("HMAC-SHA1 failed");
	s3_b64_encode(d, 20, out);
	OPENSSL_cleanse(d, sizeof(d));
}

bool s3_v2_match(const char *secret, const void *msg, size_t n, sv_t sig)
{
	char want[S3_V2_SIG_LEN + 1];
	s3_v2_sign(secret, msg, n, want);
	return sig.len == S3_V2_SIG_LEN && CRYPTO_memcmp(want, sig.ptr, S3_V2_SIG_LEN) == 0;
}

static int name_cmp(const void *a, const void *b)
{
	const sv_t *x = a, *y = b;
	int c = memcmp(x->ptr, y->ptr, MIN(x->len, y->len));
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Appends the x-amz-* headers: "name:v1,v2\n" per name, sorted. */
static void amz_headers(buf_t *out, const s3_req_t *req)
{
	sv_t *names = xmalloc((req->nhdrs + 1) * sizeof(*names));
	size_t n = 0;
	for (size_t i = 0; i < req->nhdrs; i++) {
		sv_t h = req->hdrs[i].name;
		bool seen = false;
		for (size_t j = 0; j < n && !seen; j++)
			seen = sv_eqcase(names[j], h);
		if (sv_casestartswith(h, "x-amz-") && !seen)
			names[n++] = h;
	}
	/* lower-case copies to sort by */
	buf_t low = BUF_INIT;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < names[i].len; k++) {
			char c = names[i].ptr[k];
			buf_addch(&low, c >= 'A' && c <= 'Z' ? (char)(c | 0x20) : c);
		}
	for (size_t i = 0, off = 0; i < n; off += names[i].len, i++)
		names[i].ptr = low.ptr + off;
	qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		buf_addsv(out, names[i]);
		buf_addch(out, ':');
		bool first = true;
		for (size_t j = 0; j < req->nhdrs; j++) {
			if (!sv_eqcase(req->hdrs[j].name, names[i]))
				continue;
			if (!first)
				buf_addch(out, ',');
			buf_addsv(out, sv_trim(req->hdrs[j].value));
			first = false;
		}
		buf_addch(out, '\n');
	}
	buf_free(&low);
	free(names);
}

/* Appends "?k=v&k2" for the signed sub-resources of the raw query, sorted
 * by name (stable), values percent-decoded as clients sign them. */
static void subresource_query(buf_t *out, sv_t q)
{
	char sep = '?';
	for (size_t s = 0; s < ARRAY_SIZE(subresources); s++) {
		sv_t rest = q, k, v;
		while (http_query_next(&rest, &k, &v)) {
			if (!sv_eqstr(k, subresources[s]))
				continue;
			buf_addch(out, sep);
			buf_addsv(out, k);
			sep = '&';
			if (v.ptr == k.ptr + k.len) /* no '=' */
				continue;
			buf_addch(out, '=');
			for (size_t i = 0; i < v.len; i++) {
				unsigned char b;
				if (v.ptr[i] == '%' && i + 2 < v.len &&
				    hex_decode(v.ptr + i + 1, 2, &b, 1) == AIS_OK) {
					buf_addch(out, (char)b);
					i += 2;
				} else {
					buf_addch(out, v.ptr[i]);
				}
			}
		}
	}
}

/* Whether the path names a bucket path-style ("/b"). */
static bool bucket_path(const s3_req_t *req)
{
	sv_t p = req->path;
	return !req->vhost_bucket.len && p.len > 1 && !memchr(p.ptr + 1, '/', p.len - 1);
}

/* The query's first parameter when it is a signed sub-resource without a
 * value ("acl" of "?acl&versionId=v"), else empty. */
static sv_t leading_sub(sv_t q)
{
	sv_t k, v;
	if (!http_query_next(&q, &k, &v) || v.ptr != k.ptr + k.len)
		return (sv_t){NULL, 0};
	for (size_t s = 0; s < ARRAY_SIZE(subresources); s++)
		if (sv_eqstr(k, subresources[s]))
			return k;
	return (sv_t){NULL, 0};
}

void s3_v2_string_to_sign(buf_t *out, const s3_req_t *req, sv_t date, unsigned form)
{
	static const char *const std[] = {"content-md5", "content-type"};
	buf_addstr(out, req->method);
	buf_addch(out, '\n');
	for (size_t i = 0; i < ARRAY_SIZE(std); i++) {
		sv_t v = s3_req_header(req, std[i]);
		buf_addsv(out, v);
		buf_addch(out, '\n');
	}
	buf_addsv(out, date);
	buf_addch(out, '\n');
	amz_headers(out, req);
	if (req->vhost_bucket.len) {
		buf_addch(out, '/');
		buf_addsv(out, req->vhost_bucket);
	}
	buf_addsv(out, req->path.len ? req->path : SV("/"));
	if ((form & S3_V2_BUCKET_SLASH) && bucket_path(req))
		buf_addch(out, '/');
	sv_t twice = form & S3_V2_SUB_TWICE ? leading_sub(req->query) : (sv_t){NULL, 0};
	if (twice.len) {
		buf_addch(out, '?');
		buf_addsv(out, twice);
	}
	subresource_query(out, req->query);
}

int s3_v2_parse_authz(sv_t h, sv_t *access_key, sv_t *signature, s3_autherr_t *err)
{
	h = sv_trim(h);
	if (!sv_startswith(h, "AWS "))
		goto bad;
	sv_t rest = sv_trim((sv_t){h.ptr + 4, h.len - 4});
	const char *colon = memchr(rest.ptr, ':', rest.len);
	if (!colon)
		goto bad;
	*access_key = (sv_t){rest.ptr, (size_t)(colon - rest.ptr)};
	*signature = (sv_t){colon + 1, rest.len - access_key->len - 1};
	if (!access_key->len || !signature->len)
		goto bad;
	return AIS_OK;
bad:
	s3_err(err, 400, "InvalidArgument",
	       "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature");
	return AIS_ERR;
}

/* The payload modes a SigV2 request may name: the streaming modes with
 * chunk signatures chain from a SigV4 signing key, which SigV2 has not. */
static int payload_mode(const s3_req_t *req, s3_auth_t *out, s3_autherr_t *err)
{
	if (s3_parse_payload_mode(s3_req_header(req, "x-amz-content-sha256"), out, err) != AIS_OK)
		return AIS_ERR;
	if (out->payload == S3_PAYLOAD_STREAM_SIGNED || out->payload == S3_PAYLOAD_STREAM_SIGNED_TRAILER) {
		s3_err(err, 400, "InvalidRequest",
		       "Signed aws-chunked payloads need AWS4-HMAC-SHA256 (Signature Version 4).");
		return AIS_ERR;
	}
	return AIS_OK;
}

/* The header form: the date is x-amz-date when present (even empty), else
 * Date; a missing, unparsable or pre-1970 one is AccessDenied, as S3. */
static int verify_header(const s3_authcfg_t *cfg, const s3_req_t *req, sv_t authz, int64_t now, sv_t *date,
                         sv_t *ak, sv_t *sig, s3_autherr_t *err)
{
	int64_t ns;
	if (s3_v2_parse_authz(authz, ak, sig, err) != AIS_OK)
		return AIS_ERR;
	sv_t xd = s3_req_header(req, "x-amz-date"), d = xd.ptr ? xd : s3_req_header(req, "date");
	if (!d.ptr || time_parse_http_date(d.ptr, d.len, &ns) != AIS_OK || ns < 0) {
		s3_err(err, 403, "AccessDenied",
		       "AWS authentication requires a valid Date or x-amz-date header");
		return AIS_ERR;
	}
	if (ns / 1000000000 > now + cfg->max_skew_s || ns / 1000000000 < now - cfg->max_skew_s) {
		s3_err(err, 403, "RequestTimeTooSkewed",
		       "The difference between the request time and the current time is too large.");
		return AIS_ERR;
	}
	*date = xd.ptr ? SV("") : d;
	return AIS_OK;
}

/* The query form: Expires (seconds since the epoch) stands for the date. */
static int verify_query(const s3_req_t *req, int64_t now, char expires[24], char ak[128], char sig[64],
                        s3_autherr_t *err)
{
	sv_t q = req->query, k, v, val[3] = {{NULL, 0}, {NULL, 0}, {NULL, 0}};
	static const char *const names[3] = {"AWSAccessKeyId", "Expires", "Signature"};
	char *dst[3] = {ak, expires, sig};
	size_t dsz[3] = {128, 24, 64};
	uint64_t x;

	while (http_query_next(&q, &k, &v)) {
		for (int i = 0; i < 3; i++) {
			if (!sv_eqstr(k, names[i]))
				continue;
			if (val[i].ptr) {
				s3_err(err, 403, "AccessDenied", "%s is given more than once.", names[i]);
				return AIS_ERR;
			}
			val[i] = v;
		}
	}
	for (int i = 0; i < 3; i++) {
		if (!val[i].ptr) {
			s3_err(err, 403, "AccessDenied",
			       "Query-string authentication requires the Signature, Expires and "
			       "AWSAccessKeyId parameters");
			return AIS_ERR;
		}
		/* '+' is kept: a base64 signature has no spaces, and clients that
		 * leave it unescaped mean the character */
		if (s3_qdecode(val[i], false, dst[i], dsz[i]) != AIS_OK || !dst[i][0]) {
			s3_err(err, 403, "AccessDenied", "%s is malformed or too long.", names[i]);
			return AIS_ERR;
		}
	}
	if (num_parse_u64(expires, strlen(expires), 0, INT64_MAX, &x) != AIS_OK) {
		s3_err(err, 403, "AccessDenied", "Invalid date (should be seconds since epoch): %s", expires);
		return AIS_ERR;
	}
	if (now > (int64_t)x) {
		s3_err(err, 403, "AccessDenied", "Request has expired");
		return AIS_ERR;
	}
	return AIS_OK;
}

bool s3_v2_presigned(sv_t query)
{
	sv_t q = query, k, v;
	while (http_query_next(&q, &k, &v))
		if (sv_eqstr(k, "AWSAccessKeyId"))
			return true;
	return false;
}

int s3_v2_verify(const s3_authcfg_t *cfg, const s3_req_t *req, sv_t authz, int64_t now, s3_auth_t *out,
                 s3_autherr_t *err)
{
	char expires[24], akq[128], sigq[64];
	sv_t date, ak, sig;
	buf_t sts = BUF_INIT;

	if (!cfg->sigv2) {
		s3_err(err, 400, "InvalidRequest",
		       "The authorization mechanism you have provided is not supported. Please use "
		       "AWS4-HMAC-SHA256 "
		       "(Signature Version 2 is off: s3.sigv2).");
		return AIS_ERR;
	}
	if (authz.ptr) {
		if (verify_header(cfg, req, authz, now, &date, &ak, &sig, err) != AIS_OK)
			return AIS_ERR;
	} else {
		if (verify_query(req, now, expires, akq, sigq, err) != AIS_OK)
			return AIS_ERR;
		date = sv_from(expires), ak = sv_from(akq), sig = sv_from(sigq);
	}
	const s3_key_t *key = s3_find_key(cfg, ak, err);
	if (!key || payload_mode(req, out, err) != AIS_OK)
		return AIS_ERR;
	/* as sent; botocore's forms: a path-style bucket as "/b/" (the
	 * virtual-hosted form), a leading sub-resource twice (see the top) */
	bool ok = false;
	for (unsigned form = 0; form < 4 && !ok; form++) {
		if (((form & S3_V2_BUCKET_SLASH) && !bucket_path(req)) ||
		    ((form & S3_V2_SUB_TWICE) && !leading_sub(req->query).len))
			continue;
		sts.len = 0;
		s3_v2_string_to_sign(&sts, req, date, form);
		ok = s3_v2_match(key->secret_key, sts.ptr, sts.len, sig);
	}
	buf_free(&sts);
	if (!ok) {
		s3_err(err, 403, "SignatureDoesNotMatch",
		       "The request signature we calculated does not match the signature you provided. Check "
		       "your key "
		       "and signing method.");
		return AIS_ERR;
	}
	out->kind = authz.ptr ? S3_AUTH_HEADER : S3_AUTH_PRESIGNED;
	out->key = key;
	return AIS_OK;
}
