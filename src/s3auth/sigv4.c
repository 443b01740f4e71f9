/*
 * sigv4.c - the AWS Signature Version 4 algorithm as S3 applies it: the
 * canonical request, the string to sign, the signing key, and a client-side
 * signer for tools and tests.
 *
 * It guarantees that the canonical request is the one S3 computes, byte for
 * byte: the path is percent-decoded once and re-encoded with the unreserved
 * set (A-Za-z0-9-._~) and '/' kept, never normalized ("//", "." and ".."
 * stay); query keys and values are decoded ('+' is a space) and re-encoded
 * with the unreserved set, then sorted by key and value as encoded bytes;
 * header names are lower-cased and values trimmed with inner blank runs
 * collapsed. A malformed escape is kept as literal bytes (%25...), so it
 * never matches a correct signature by accident.
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3_int.h"
#include "aisd/banned.h"

void s3_err(s3_autherr_t *err, int status, const char *code, const char *fmt, ...)
{
	va_list ap;
	err->status = status;
	err->code = code;
	err->headers_not_signed[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

static int hexv(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes then re-encodes s (see the file comment). */
static void reencode(buf_t *out, sv_t s, bool plus_space, bool keep_slash)
{
	char tmp[256];
	size_t n = 0;
	for (size_t i = 0; i < s.len; i++) {
		char c = s.ptr[i];
		int hi, lo;
		if (c == '%' && i + 2 < s.len && (hi = hexv(s.ptr[i + 1])) >= 0 &&
		    (lo = hexv(s.ptr[i + 2])) >= 0) {
			c = (char)(hi << 4 | lo);
			i += 2;
		} else if (c == '+' && plus_space) {
			c = ' ';
		}
		tmp[n++] = c;
		if (n == sizeof(tmp)) {
			buf_add_pct(out, (sv_t){tmp, n}, keep_slash);
			n = 0;
		}
	}
	buf_add_pct(out, (sv_t){tmp, n}, keep_slash);
}

struct qpair {
	size_t k, klen, v, vlen; /* offsets into the encoded text */
};

static int qpair_cmp(const void *a, const void *b, void *arg)
{
	const struct qpair *x = a, *y = b;
	const char *base = arg;
	int c = memcmp(base + x->k, base + y->k, MIN(x->klen, y->klen));
	if (c || x->klen != y->klen)
		return c ? c : (x->klen < y->klen ? -1 : 1);
	c = memcmp(base + x->v, base + y->v, MIN(x->vlen, y->vlen));
	if (c || x->vlen != y->vlen)
		return c ? c : (x->vlen < y->vlen ? -1 : 1);
	return 0;
}

static void canonical_query(buf_t *out, sv_t q, bool presigned)
{
	buf_t enc = BUF_INIT;
	struct qpair *pairs = NULL;
	size_t np = 0, cap = 0;

	sv_t k, v;
	while (http_query_next(&q, &k, &v)) {
		if (!k.len && v.ptr == k.ptr)
			continue; /* an empty pair ("a&&b") */
		if (np == cap) {
			cap = cap ? cap * 2 : 16;
			pairs = xrealloc(pairs, cap * sizeof(*pairs));
		}
		struct qpair *p = &pairs[np];
		p->k = enc.len;
		reencode(&enc, k, true, false);
		p->klen = enc.len - p->k;
		p->v = enc.len;
		reencode(&enc, v, true, false);
		p->vlen = enc.len - p->v;
		if (presigned && p->klen == 15 && !memcmp(enc.ptr + p->k, "X-Amz-Signature", 15))
			continue;
		np++;
	}
	if (np)
		qsort_r(pairs, np, sizeof(*pairs), qpair_cmp, enc.ptr);
	for (size_t i = 0; i < np; i++) {
		if (i)
			buf_addch(out, '&');
		buf_add(out, enc.ptr + pairs[i].k, pairs[i].klen);
		buf_addch(out, '=');
		buf_add(out, enc.ptr + pairs[i].v, pairs[i].vlen);
	}
	free(pairs);
	buf_free(&enc);
}

/* Appends v trimmed, with inner runs of blanks as one space. */
static void header_value(buf_t *out, sv_t v)
{
	bool blank = false;
	v = sv_trim(v);
	for (size_t i = 0; i < v.len; i++) {
		char c = v.ptr[i];
		if (c == ' ' || c == '\t') {
			blank = true;
			continue;
		}
		if (blank)
			buf_addch(out, ' ');
		blank = false;
		buf_addch(out, c);
	}
}

void s3_canonical_request(buf_t *out, const s3_req_t *req, sv_t signed_headers, bool presigned,
                          sv_t payload_hash)
{
	buf_addstr(out, req->method);
	buf_addch(out, '\n');
	reencode(out, req->path.len ? req->path : SV("/"), false, true);
	buf_addch(out, '\n');
	canonical_query(out, req->query, presigned);
	buf_addch(out, '\n');

	sv_t sh = signed_headers;
	while (sh.len) {
		const char *semi = memchr(sh.ptr, ';', sh.len);
		sv_t name = {sh.ptr, semi ? (size_t)(semi - sh.ptr) : sh.len};
		sh.ptr += name.len + (semi ? 1 : 0);
		sh.len -= name.len + (semi ? 1 : 0);
		for (size_t i = 0; i < name.len; i++) {
			char c = name.ptr[i];
			buf_addch(out, c >= 'A' && c <= 'Z' ? (char)(c | 0x20) : c);
		}
		buf_addch(out, ':');
		bool first = true;
		for (size_t i = 0; i < req->nhdrs; i++) {
			if (!sv_eqcase(req->hdrs[i].name, name))
				continue;
			if (!first)
				buf_addch(out, ',');
			header_value(out, req->hdrs[i].value);
			first = false;
		}
		buf_addch(out, '\n');
	}
	buf_addch(out, '\n');
	for (size_t i = 0; i < signed_headers.len; i++) {
		char c = signed_headers.ptr[i];
		buf_addch(out, c >= 'A' && c <= 'Z' ? (char)(c | 0x20) : c);
	}
	buf_addch(out, '\n');
	buf_addsv(out, payload_hash);
}

/* Digests fetched once: OpenSSL 3's one-shot SHA256() and HMAC() look the
 * algorithm up on every call, which cost more than the hashing itself. */
static EVP_MD *md_sha256, *md_md5, *md_sha1;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;

static void md_fetch(void)
{
	md_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	md_md5 = EVP_MD_fetch(NULL, "MD5", NULL);
	md_sha1 = EVP_MD_fetch(NULL, "SHA1", NULL);
	if (!md_sha256 || !md_md5 || !md_sha1)
		fatalx("OpenSSL has no SHA256, MD5 or SHA1");
}

const EVP_MD *s3_md(enum s3_md which)
{
	pthread_once(&md_once, md_fetch);
	return which == S3_MD_MD5 ? md_md5 : which == S3_MD_SHA1 ? md_sha1 : md_sha256;
}

/* Each thread's digest context, made once (EVP_MD_CTX_new per hash was a
 * malloc and a free on every HMAC of every request). */
static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;

static void ctx_free(void *c) { EVP_MD_CTX_free(c); }
static void ctx_key_make(void) { pthread_key_create(&ctx_key, ctx_free); }

static EVP_MD_CTX *thread_ctx(void)
{
	pthread_once(&ctx_once, ctx_key_make);
	EVP_MD_CTX *c = pthread_getspecific(ctx_key);
	if (!c) {
		if (!(c = EVP_MD_CTX_new()))
			fatalx("out of memory");
		pthread_setspecific(ctx_key, c);
	}
	return c;
}

static void sha256(const void *p, size_t n, unsigned char out[32])
{
	EVP_MD_CTX *c = thread_ctx();
	if (!EVP_DigestInit_ex(c, s3_md(S3_MD_SHA256), NULL) || !EVP_DigestUpdate(c, p, n) ||
	    !EVP_DigestFinal_ex(c, out, NULL))
		fatalx("SHA256 failed");
}

void s3_sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char d[32];
	sha256(p, n, d);
	hex_encode(d, sizeof(d), out);
}

void s3_string_to_sign(buf_t *out, const char *amz_date, sv_t scope, sv_t canonical_request)
{
	char h[65];
	s3_sha256_hex(canonical_request.ptr, canonical_request.len, h);
	buf_addf(out, S3_ALGO "\n%s\n%.*s\n%s", amz_date, (int)scope.len, scope.ptr, h);
}

/* HMAC-SHA256 (RFC 2104) over the prefetched digest. */
static void hmac(const void *key, size_t klen, const void *msg, size_t n, unsigned char out[32])
{
	unsigned char k[64], pad[64], inner[32];
	memset(k, 0, sizeof(k));
	if (klen > 64)
		sha256(key, klen, k);
	else
		memcpy(k, key, klen);
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	EVP_MD_CTX *c = thread_ctx();
	if ( !EVP_DigestInit_ex(c, s3_md(S3_MD_SHA256), NULL) || !EVP_DigestUpdate(c, pad, 64) ||
	    !EVP_DigestUpdate(c, msg, n) || !EVP_DigestFinal_ex(c, inner, NULL))
		fatalx("HMAC-SHA256 failed");
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	if (!EVP_DigestInit_ex(c, s3_md(S3_MD_SHA256), NULL) || !EVP_DigestUpdate(c, pad, 64) ||
	    !EVP_DigestUpdate(c, inner, 32) || !EVP_DigestFinal_ex(c, out, NULL))
		fatalx("HMAC-SHA256 failed");
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(pad, sizeof(pad));
}

void s3_signing_key(const char *secret, sv_t date, sv_t region, unsigned char key[32])
{
	s3_signing_key_svc(secret, date, region, SV("s3"), key);
}

static void derive_key(const char *secret, sv_t date, sv_t region, sv_t service, unsigned char key[32])
{
	buf_t k = BUF_INIT;
	unsigned char a[32], b[32];
	buf_addf(&k, "AWS4%s", secret);
	hmac(k.ptr, k.len, date.ptr, date.len, a);
	hmac(a, 32, region.ptr, region.len, b);
	hmac(b, 32, service.ptr, service.len, a);
	hmac(a, 32, "aws4_request", 12, key);
	OPENSSL_cleanse(k.ptr, k.len);
	OPENSSL_cleanse(a, sizeof(a));
	OPENSSL_cleanse(b, sizeof(b));
	buf_free(&k);
}

/*
 * A signing key depends only on the secret, the day, the region and the
 * service, so each thread keeps the last SK_CACHE it derived: a client's
 * requests of one day cost one HMAC each instead of five. Fields too long
 * for an entry are derived every time.
 */
#define SK_CACHE 4
struct sk_entry {
	char secret[128];
	char date[8], region[32], service[16];
	unsigned char key[32];
	bool used;
};
static _Thread_local struct sk_entry sk_cache[SK_CACHE];
static _Thread_local unsigned sk_next;

static bool sk_fits(const char *secret, sv_t date, sv_t region, sv_t service)
{
	return strlen(secret) < sizeof(sk_cache[0].secret) && date.len == 8 &&
	       region.len < sizeof(sk_cache[0].region) && service.len < sizeof(sk_cache[0].service);
}

static bool sk_match(const struct sk_entry *e, const char *secret, sv_t date, sv_t region, sv_t service)
{
	return e->used && !strcmp(e->secret, secret) && !memcmp(e->date, date.ptr, 8) &&
	       !strncmp(e->region, region.ptr, region.len) && e->region[region.len] == '\0' &&
	       !strncmp(e->service, service.ptr, service.len) && e->service[service.len] == '\0';
}

void s3_signing_key_svc(const char *secret, sv_t date, sv_t region, sv_t service, unsigned char key[32])
{
	if (!sk_fits(secret, date, region, service)) {
		derive_key(secret, date, region, service, key);
		return;
	}
	for (int i = 0; i < SK_CACHE; i++) {
		if (sk_match(&sk_cache[i], secret, date, region, service)) {
			memcpy(key, sk_cache[i].key, 32);
			return;
		}
	}
	derive_key(secret, date, region, service, key);
	struct sk_entry *e = &sk_cache[sk_next++ % SK_CACHE];
	memset(e, 0, sizeof(*e));
	memcpy(e->secret, secret, strlen(secret));
	memcpy(e->date, date.ptr, 8);
	memcpy(e->region, region.ptr, region.len);
	memcpy(e->service, service.ptr, service.len);
	memcpy(e->key, key, 32);
	e->used = true;
}

void s3_hmac_hex(const unsigned char key[32], const void *msg, size_t n, char out[65])
{
	unsigned char d[32];
	hmac(key, 32, msg, n, d);
	hex_encode(d, sizeof(d), out);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

int s3_parse_amz_date(sv_t s, int64_t *t)
{
	uint64_t y, mo, d, h, mi, se;
	static const unsigned char mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (s.len != 16 || s.ptr[8] != 'T' || s.ptr[15] != 'Z')
		return AIS_ERR;
	if (num_parse_u64(s.ptr, 4, 1970, 9999, &y) || num_parse_u64(s.ptr + 4, 2, 1, 12, &mo) ||
	    num_parse_u64(s.ptr + 6, 2, 1, 31, &d) || num_parse_u64(s.ptr + 9, 2, 0, 23, &h) ||
	    num_parse_u64(s.ptr + 11, 2, 0, 59, &mi) || num_parse_u64(s.ptr + 13, 2, 0, 60, &se))
		return AIS_ERR;
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap))
		return AIS_ERR;
	*t = days_from_civil((int64_t)y, (unsigned)mo, (unsigned)d) * 86400 +
	     (int64_t)(h * 3600 + mi * 60 + se);
	return AIS_OK;
}

void s3_format_amz_date(int64_t t, char out[17])
{
	int64_t days = t >= 0 ? t / 86400 : (t - 86399) / 86400, secs = t - days * 86400;
	/* civil_from_days (H. Hinnant) */
	int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t y = (int64_t)yoe + era * 400;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1;
	unsigned m = mp < 10 ? mp + 3 : mp - 9;
	y += m <= 2;
	unsigned v[6] = {(unsigned)(y % 10000), m, d, (unsigned)(secs / 3600), (unsigned)(secs / 60 % 60),
	                 (unsigned)(secs % 60)};
	char *o = out;
	for (int i = 0; i < 6; i++) {
		if (i == 0) {
			*o++ = (char)('0' + v[0] / 1000);
			*o++ = (char)('0' + v[0] / 100 % 10);
		}
		*o++ = (char)('0' + v[i] / 10 % 10);
		*o++ = (char)('0' + v[i] % 10);
		if (i == 2)
			*o++ = 'T';
	}
	*o++ = 'Z';
	*o = '\0';
}

static int name_cmp(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;
	return strcmp(*x, *y);
}

void s3_sign(const s3_key_t *key, const char *region, const char *amz_date, const s3_req_t *req,
             const char *payload_hash, buf_t *out)
{
	char **names = xcalloc(req->nhdrs ? req->nhdrs : 1, sizeof(*names));
	size_t nn = 0;
	buf_t sh = BUF_INIT, cr = BUF_INIT, sts = BUF_INIT, scope = BUF_INIT;

	for (size_t i = 0; i < req->nhdrs; i++) {
		char *n = xstrndup(req->hdrs[i].name.ptr, req->hdrs[i].name.len);
		for (char *p = n; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p |= 0x20;
		bool dup = false;
		for (size_t j = 0; j < nn && !dup; j++)
			dup = !strcmp(names[j], n);
		if (dup)
			free(n);
		else
			names[nn++] = n;
	}
	qsort(names, nn, sizeof(*names), name_cmp);
	for (size_t i = 0; i < nn; i++) {
		buf_addf(&sh, "%s%s", i ? ";" : "", names[i]);
		free(names[i]);
	}
	free(names);

	buf_addf(&scope, "%.8s/%s/s3/aws4_request", amz_date, region);
	s3_canonical_request(&cr, req, sv_of(&sh), false, sv_from(payload_hash));
	s3_string_to_sign(&sts, amz_date, sv_of(&scope), sv_of(&cr));
	unsigned char k[32];
	char sig[65];
	s3_signing_key(key->secret_key, (sv_t){amz_date, 8}, sv_from(region), k);
	s3_hmac_hex(k, sts.ptr, sts.len, sig);
	OPENSSL_cleanse(k, sizeof(k));
	buf_addf(out, S3_ALGO " Credential=%s/%s, SignedHeaders=%s, Signature=%s", key->access_key, scope.ptr,
	         sh.ptr ? sh.ptr : "", sig);
	buf_free(&sh);
	buf_free(&cr);
	buf_free(&sts);
	buf_free(&scope);
}
