/*
 * test_sigv4.c - SigV4 as S3 does it: AWS's published test-suite vectors
 * (canonical requests and signatures), the S3 documentation's examples
 * (GET with Range, PUT, GET ?lifecycle, list, the presigned URL, the
 * streaming upload with chunk signatures and the one with a signed
 * trailer), every error code s3_auth_verify and the body checker answer,
 * and the checksums; SigV2: the examples of AWS's SigV2 documentation
 * (string to sign and signature), its canonical form and its errors.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <zlib.h>

#include "aisd/s3auth.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "../../src/s3auth/s3_int.h"
#include "aisd/banned.h"

#define AK        "AKIAIOSFODNN7EXAMPLE"
#define SK        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define T20130524 1369353600 /* 20130524T000000Z */
#define EMPTY     S3_EMPTY_SHA256

/* ---- building requests -------------------------------------------------- */

#define MAXH 16
typedef struct treq {
	s3_req_t r;
	http_hdr_t h[MAXH];
	char store[MAXH][1024];
} treq_t;

/* Headers as "Name: value" strings, NULL-terminated. The target splits at
 * the first '?'. */
static void mkreq(treq_t *t, const char *method, const char *target, const char *const *hdrs)
{
	memset(t, 0, sizeof(*t));
	t->r.method = method;
	const char *q = strchr(target, '?');
	t->r.path = (sv_t){target, q ? (size_t)(q - target) : strlen(target)};
	t->r.query = q ? sv_from(q + 1) : (sv_t){"", 0};
	for (size_t i = 0; hdrs && hdrs[i]; i++) {
		ck_assert(i < MAXH);
		snprintf(t->store[i], sizeof(t->store[i]), "%s", hdrs[i]);
		char *c = strchr(t->store[i], ':');
		ck_assert(c);
		*c = '\0';
		t->h[i].name = sv_from(t->store[i]);
		t->h[i].value = sv_from(c + 1);
		t->r.nhdrs++;
	}
	t->r.hdrs = t->h;
}

static void addhdr(treq_t *t, const char *h)
{
	size_t i = t->r.nhdrs;
	ck_assert(i < MAXH);
	snprintf(t->store[i], sizeof(t->store[i]), "%s", h);
	char *c = strchr(t->store[i], ':');
	*c = '\0';
	t->h[i].name = sv_from(t->store[i]);
	t->h[i].value = sv_from(c + 1);
	t->r.nhdrs++;
}

static s3_authcfg_t cfg;

static void cfg_setup(void)
{
	buf_t err = BUF_INIT;
	memset(&cfg, 0, sizeof(cfg));
	cfg.enabled = true;
	cfg.max_skew_s = 15 * 60;
	snprintf(cfg.region, sizeof(cfg.region), "us-east-1");
	cfg.keys = s3_keys_new();
	ck_assert_int_eq(s3_keys_add(cfg.keys, AK ":" SK ":uid-1:Example User", &err), AIS_OK);
	ck_assert_int_eq(
	        s3_keys_add(cfg.keys, "AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY:u2:Two", &err),
	        AIS_OK);
	buf_free(&err);
}

static void cfg_teardown(void)
{
	s3_authcfg_free(&cfg);
}

/* ---- AWS SigV4 test suite (service "service", 20150830T123600Z) --------- */

static void suite_case(const char *method, const char *target, const char *const *hdrs,
                       const char *signed_hdrs, const char *payload_hash, const char *want_creq,
                       const char *want_sig)
{
	treq_t t;
	buf_t cr = BUF_INIT, sts = BUF_INIT;
	unsigned char k[32];
	char sig[65];
	mkreq(&t, method, target, hdrs);
	s3_canonical_request(&cr, &t.r, sv_from(signed_hdrs), false, sv_from(payload_hash));
	if (want_creq)
		ck_assert_str_eq(cr.ptr, want_creq);
	s3_string_to_sign(&sts, "20150830T123600Z", SV("20150830/us-east-1/service/aws4_request"),
	                  sv_of(&cr));
	s3_signing_key_svc("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SV("20150830"), SV("us-east-1"),
	                   SV("service"), k);
	s3_hmac_hex(k, sts.ptr, sts.len, sig);
	ck_assert_msg(!strcmp(sig, want_sig), "%s %s: signature %s, want %s\n%s", method, target, sig,
	              want_sig, cr.ptr);
	buf_free(&cr);
	buf_free(&sts);
}

static const char *const suite_hdrs[] = {"Host:example.amazonaws.com", "X-Amz-Date:20150830T123600Z", NULL};

/* The signing key by OpenSSL's one-shot HMAC, independent of sigv4.c. */
static void key_ref(const char *secret, const char *date, const char *region, const char *svc,
                    unsigned char out[32])
{
	char k0[256];
	unsigned char a[32], b[32];
	unsigned len = 32;
	snprintf(k0, sizeof(k0), "AWS4%s", secret);
	HMAC(EVP_sha256(), k0, (int)strlen(k0), (const unsigned char *)date, strlen(date), a, &len);
	HMAC(EVP_sha256(), a, 32, (const unsigned char *)region, strlen(region), b, &len);
	HMAC(EVP_sha256(), b, 32, (const unsigned char *)svc, strlen(svc), a, &len);
	HMAC(EVP_sha256(), a, 32, (const unsigned char *)"aws4_request", 12, out, &len);
}

/* Signing keys are kept per thread: every secret, day, region and service
 * gets its own, also past the cache's size, with a long secret and long
 * fields (not cached), in any order; and the AWS documentation's vector. */
START_TEST(test_signing_key_cache)
{
	static const char *const secrets[] = {"wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "other-secret",
	                                      "a-secret-longer-than-an-entry-holds-"
	                                      "0123456789012345678901234567890123456789012345678901234567890123456789"
	                                      "0123456789012345678901234567890123456789"};
	static const char *const dates[] = {"20120215", "20120216"};
	static const char *const regions[] = {"us-east-1", "eu-west-3", "a-region-name-longer-than-thirty-two-bytes"};
	static const char *const svcs[] = {"s3", "iam"};
	unsigned char got[32], want[32];
	char hex[65];
	s3_signing_key_svc(secrets[0], SV("20120215"), SV("us-east-1"), SV("iam"), got);
	hex_encode(got, 32, hex);
	ck_assert_str_eq(hex, "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
	for (int round = 0; round < 3; round++) {
		for (size_t s = 0; s < 3; s++)
			for (size_t d = 0; d < 2; d++)
				for (size_t r = 0; r < 3; r++)
					for (size_t v = 0; v < 2; v++) {
						size_t ss = round == 1 ? 2 - s : s; /* another order */
						s3_signing_key_svc(secrets[ss], sv_from(dates[d]), sv_from(regions[r]),
						                   sv_from(svcs[v]), got);
						key_ref(secrets[ss], dates[d], regions[r], svcs[v], want);
						ck_assert_msg(!memcmp(got, want, 32), "key %zu %zu %zu %zu round %d", ss, d, r,
						              v, round);
					}
	}
	/* one request's prefix of another's region is another region */
	s3_signing_key_svc(secrets[0], SV("20120215"), SV("us-east-1"), SV("s3"), got);
	s3_signing_key_svc(secrets[0], SV("20120215"), SV("us-east"), SV("s3"), got);
	key_ref(secrets[0], "20120215", "us-east", "s3", want);
	ck_assert(!memcmp(got, want, 32));
}
END_TEST

START_TEST(test_suite_vectors)
{
	suite_case("GET", "/", suite_hdrs, "host;x-amz-date", EMPTY,
	           "GET\n/"
	           "\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY,
	           "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
	suite_case(
	        "GET", "/?Param2=value2&Param1=value1", suite_hdrs, "host;x-amz-date", EMPTY,
	        "GET\n/"
	        "\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
	        "host;x-amz-date\n" EMPTY,
	        "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
	suite_case("GET", "/?Param1=value1", suite_hdrs, "host;x-amz-date", EMPTY, NULL,
	           "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb");
	suite_case("POST", "/", suite_hdrs, "host;x-amz-date", EMPTY, NULL,
	           "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
	suite_case("POST", "/?Param1=value1", suite_hdrs, "host;x-amz-date", EMPTY, NULL,
	           "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11");
	/* get-utf8: sent raw or encoded, the canonical URI is %E1%88%B4 */
	suite_case("GET", "/\xe1\x88\xb4", suite_hdrs, "host;x-amz-date", EMPTY, NULL,
	           "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85");
	suite_case("GET", "/%E1%88%B4", suite_hdrs, "host;x-amz-date", EMPTY, NULL,
	           "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85");
	/* get-space (unnormalized) */
	suite_case("GET", "/example space/", suite_hdrs, "host;x-amz-date", EMPTY, NULL,
	           "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741");
	suite_case("GET", "/example%20space/", suite_hdrs, "host;x-amz-date", EMPTY, NULL,
	           "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741");
	/* get-slashes-unnormalized: S3 keeps "//" */
	suite_case("GET", "//example//", suite_hdrs, "host;x-amz-date", EMPTY, NULL,
	           "87cca117541a147f6df867677d98a7d80dff226d2bfca9e4ffa899665623c7e5");
	suite_case("GET", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", suite_hdrs,
	           "host;x-amz-date", EMPTY, NULL,
	           "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f");
	/* get-header-value-trim */
	static const char *const trim[] = {"Host:example.amazonaws.com", "My-Header1: value1",
	                                   "My-Header2: \"a   b   c\"", "X-Amz-Date:20150830T123600Z", NULL};
	suite_case("GET", "/", trim, "host;my-header1;my-header2;x-amz-date", EMPTY,
	           "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\nmy-header2:\"a b c\"\n"
	           "x-amz-date:20150830T123600Z\n\nhost;my-header1;my-header2;x-amz-date\n" EMPTY,
	           "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736");
	/* post-x-www-form-urlencoded */
	static const char *const form[] = {"Content-Type:application/x-www-form-urlencoded",
	                                   "Host:example.amazonaws.com", "X-Amz-Date:20150830T123600Z", NULL};
	suite_case("POST", "/", form, "content-type;host;x-amz-date",
	           "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e", NULL,
	           "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a");
}
END_TEST

START_TEST(test_canonical_forms)
{
	treq_t t;
	buf_t cr = BUF_INIT;
	/* query: decoded then encoded with the unreserved set, sorted by
	 * encoded key then value; a key without '=' gets one; '+' is a space */
	mkreq(&t, "GET", "/b/k?z=1&a=2&a=1&acl&prefix=a+b&x=%7e%2f&%C3%A9=e", NULL);
	s3_canonical_request(&cr, &t.r, SV(""), false, SV("UNSIGNED-PAYLOAD"));
	ck_assert_str_eq(cr.ptr,
	                 "GET\n/b/k\n%C3%A9=e&a=1&a=2&acl=&prefix=a%20b&x=~%2F&z=1\n\n\nUNSIGNED-PAYLOAD");
	buf_reset(&cr);
	/* path: no normalization, no double encoding, $ ( ) ! * ' + , encoded */
	mkreq(&t, "PUT", "/b/./a/../x$(y)!*'+,=&%25", NULL);
	s3_canonical_request(&cr, &t.r, SV(""), false, SV("x"));
	ck_assert_str_eq(cr.ptr, "PUT\n/b/./a/../x%24%28y%29%21%2A%27%2B%2C%3D%26%25\n\n\n\nx");
	buf_reset(&cr);
	/* repeated headers join with ',' */
	mkreq(&t, "GET", "/", (const char *const[]){"X-A: 1", "x-a:  2  3 ", NULL});
	s3_canonical_request(&cr, &t.r, SV("x-a"), false, SV("p"));
	ck_assert_str_eq(cr.ptr, "GET\n/\n\nx-a:1,2 3\n\nx-a\np");
	buf_free(&cr);

	buf_t e = BUF_INIT;
	buf_add_pct(&e, SV("a b/c~d+é"), true);
	ck_assert_str_eq(e.ptr, "a%20b/c~d%2B%C3%A9");
	buf_reset(&e);
	buf_add_pct(&e, SV("a/b"), false);
	ck_assert_str_eq(e.ptr, "a%2Fb");
	buf_free(&e);

	int64_t ts;
	char d[17];
	ck_assert_int_eq(s3_parse_amz_date(SV("20130524T000000Z"), &ts), AIS_OK);
	ck_assert_int_eq(ts, T20130524);
	s3_format_amz_date(ts + 86399, d);
	ck_assert_str_eq(d, "20130524T235959Z");
	ck_assert_int_eq(s3_parse_amz_date(SV("20240229T120000Z"), &ts), AIS_OK);
	s3_format_amz_date(ts, d);
	ck_assert_str_eq(d, "20240229T120000Z");
	ck_assert_int_eq(s3_parse_amz_date(SV("20230229T120000Z"), &ts), AIS_ERR);
	ck_assert_int_eq(s3_parse_amz_date(SV("20130524T000000"), &ts), AIS_ERR);
	ck_assert_int_eq(s3_parse_amz_date(SV("2013-05-24T00:00:00Z"), &ts), AIS_ERR);
}
END_TEST

/* ---- the S3 documentation's examples ------------------------------------ */

static int verify(treq_t *t, int64_t now, s3_auth_t *a, s3_autherr_t *e)
{
	return s3_auth_verify(&cfg, &t->r, now, a, e);
}

#define AUTH_OK(t, now, a)                                                                                   \
	do {                                                                                                 \
		s3_autherr_t e_;                                                                             \
		int r_ = verify((t), (now), (a), &e_);                                                       \
		ck_assert_msg(r_ == AIS_OK, "verify: %d %s %s", e_.status, e_.code ? e_.code : "-",          \
		              e_.message);                                                                   \
	} while (0)

#define AUTH_ERR(t, now, status_, code_)                                                                     \
	do {                                                                                                 \
		s3_auth_t a_;                                                                                \
		s3_autherr_t e_;                                                                             \
		int r_ = verify((t), (now), &a_, &e_);                                                       \
		ck_assert_msg(r_ == AIS_ERR, "verify succeeded, want %s", code_);                            \
		ck_assert_str_eq(e_.code, code_);                                                            \
		ck_assert_int_eq(e_.status, status_);                                                        \
		ck_assert(e_.message[0]);                                                                    \
	} while (0)

#define CRED "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request"

START_TEST(test_doc_get_object)
{
	treq_t t;
	s3_auth_t a;
	mkreq(&t, "GET", "/test.txt",
	      (const char *const[]){
	              "Host: examplebucket.s3.amazonaws.com",
	              "Authorization: " CRED ",SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
	              "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
	              "Range: bytes=0-9", "x-amz-content-sha256:" EMPTY, "x-amz-date: 20130524T000000Z",
	              NULL});
	AUTH_OK(&t, T20130524 + 60, &a);
	ck_assert_int_eq(a.kind, S3_AUTH_HEADER);
	ck_assert_str_eq(a.key->user_id, "uid-1");
	ck_assert_str_eq(a.key->display_name, "Example User");
	ck_assert_int_eq(a.payload, S3_PAYLOAD_SHA256);
	ck_assert_str_eq(a.region, "us-east-1");
	ck_assert_str_eq(a.scope, "20130524/us-east-1/s3/aws4_request");
	s3_autherr_t e;
	ck_assert_int_eq(s3_auth_require(&cfg, &a, &e), AIS_OK);

	/* a changed signed header, an extra byte in the path: mismatch */
	t.h[2].value = SV("bytes=0-10");
	AUTH_ERR(&t, T20130524, 403, "SignatureDoesNotMatch");
	t.h[2].value = SV("bytes=0-9");
	t.r.path = SV("/test.txt2");
	AUTH_ERR(&t, T20130524, 403, "SignatureDoesNotMatch");
	t.r.path = SV("/test.txt");
	AUTH_OK(&t, T20130524, &a);
	/* the clock: 15 minutes either way */
	AUTH_OK(&t, T20130524 + 900, &a);
	AUTH_OK(&t, T20130524 - 900, &a);
	AUTH_ERR(&t, T20130524 + 901, 403, "RequestTimeTooSkewed");
	AUTH_ERR(&t, T20130524 - 901, 403, "RequestTimeTooSkewed");
}
END_TEST

START_TEST(test_doc_put_object)
{
	treq_t t;
	s3_auth_t a;
	s3_autherr_t e;
	/* Date and x-amz-date both signed; '$' in the key sent raw */
	mkreq(&t, "PUT", "/test$file.text",
	      (const char *const[]){
	              "Host: examplebucket.s3.amazonaws.com", "Date: Fri, 24 May 2013 00:00:00 GMT",
	              "Authorization: " CRED
	              ",SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
	              "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
	              "x-amz-date: 20130524T000000Z", "x-amz-storage-class: REDUCED_REDUNDANCY",
	              "x-amz-content-sha256: "
	              "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
	              NULL});
	AUTH_OK(&t, T20130524, &a);
	ck_assert_int_eq(a.payload, S3_PAYLOAD_SHA256);
	/* the same, with the key percent-encoded as most clients send it */
	t.r.path = SV("/test%24file.text");
	AUTH_OK(&t, T20130524, &a);

	/* the body: "Welcome to Amazon S3." hashes right, anything else not */
	arena_t *ar = arena_new(4096);
	s3_body_t *b = s3_body_new(ar, &a, &t.r, 21, &e);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(s3_body_feed(b, "Welcome to ", 11, NULL, NULL, &e), AIS_OK);
	ck_assert_int_eq(s3_body_feed(b, "Amazon S3.", 10, NULL, NULL, &e), AIS_OK);
	ck_assert_int_eq(s3_body_finish(b, &e), AIS_OK);
	unsigned char md5[16];
	char hex[33];
	s3_body_md5(b, md5);
	hex_encode(md5, 16, hex);
	ck_assert_int_eq(strlen(hex), 32);
	b = s3_body_new(ar, &a, &t.r, 21, &e);
	ck_assert_int_eq(s3_body_feed(b, "Welcome to Amazon S3!", 21, NULL, NULL, &e), AIS_OK);
	ck_assert_int_eq(s3_body_finish(b, &e), AIS_ERR);
	ck_assert_str_eq(e.code, "XAmzContentSHA256Mismatch");
	ck_assert_int_eq(e.status, 400);
	arena_destroy(ar);
}
END_TEST

START_TEST(test_doc_lifecycle_and_list)
{
	treq_t t;
	s3_auth_t a;
	mkreq(&t, "GET", "/?lifecycle",
	      (const char *const[]){
	              "Host: examplebucket.s3.amazonaws.com",
	              "Authorization: " CRED ",SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
	              "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
	              "x-amz-date: 20130524T000000Z", "x-amz-content-sha256: " EMPTY, NULL});
	AUTH_OK(&t, T20130524, &a);
	mkreq(&t, "GET", "/?max-keys=2&prefix=J",
	      (const char *const[]){
	              "Host: examplebucket.s3.amazonaws.com",
	              "Authorization: " CRED ",SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
	              "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
	              "x-amz-date: 20130524T000000Z", "x-amz-content-sha256: " EMPTY, NULL});
	AUTH_OK(&t, T20130524, &a);
	/* the query in another order is the same request */
	t.r.query = SV("prefix=J&max-keys=2");
	AUTH_OK(&t, T20130524, &a);
	t.r.query = SV("prefix=K&max-keys=2");
	AUTH_ERR(&t, T20130524, 403, "SignatureDoesNotMatch");
}
END_TEST

#define PRESIGN_Q                                                                                            \
	"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK                                              \
	"%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"                                                        \
	"&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"                          \
	"&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"

START_TEST(test_doc_presigned)
{
	treq_t t;
	s3_auth_t a;
	mkreq(&t, "GET", "/test.txt?" PRESIGN_Q,
	      (const char *const[]){"Host: examplebucket.s3.amazonaws.com", NULL});
	AUTH_OK(&t, T20130524 + 3600, &a);
	ck_assert_int_eq(a.kind, S3_AUTH_PRESIGNED);
	ck_assert_int_eq(a.payload, S3_PAYLOAD_UNSIGNED);
	AUTH_OK(&t, T20130524 + 86400, &a);
	AUTH_ERR(&t, T20130524 + 86401, 403, "AccessDenied");
	s3_autherr_t e;
	verify(&t, T20130524 + 86401, &a, &e);
	ck_assert_str_eq(e.message, "Request has expired");
	AUTH_OK(&t, T20130524 - 900, &a); /* inside the skew */
	AUTH_ERR(&t, T20130524 - 901, 403, "AccessDenied");
	verify(&t, T20130524 - 901, &a, &e);
	ck_assert_str_eq(e.message, "Request is not valid yet");
	/* another host, another signature */
	t.h[0].value = SV("otherbucket.s3.amazonaws.com");
	AUTH_ERR(&t, T20130524, 403, "SignatureDoesNotMatch");

	/* parameter errors */
	static const char *const bad[] = {
	        "/t?X-Amz-Algorithm=AWS4-HMAC-SHA512&X-Amz-Credential=a",
	        "/t?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20130524T000000Z",
	        "/t?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
	        "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
	        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=1x&X-Amz-SignedHeaders=host&X-Amz-"
	        "Signature=" EMPTY,
	        "/t?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
	        "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
	        "&X-Amz-Date=2013-05-24&X-Amz-Expires=10&X-Amz-SignedHeaders=host&X-Amz-Signature=" EMPTY,
	        "/t?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
	        "%2F20130524%2Fus-east-1%2Fec2%2Faws4_request"
	        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=10&X-Amz-SignedHeaders=host&X-Amz-"
	        "Signature=" EMPTY,
	        "/t?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
	        "%2F20130525%2Fus-east-1%2Fs3%2Faws4_request"
	        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=10&X-Amz-SignedHeaders=host&X-Amz-"
	        "Signature=" EMPTY,
	        "/t?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
	        "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
	        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=10&X-Amz-SignedHeaders=host&X-Amz-Signature=abc",
	        "/t?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Algorithm=AWS4-HMAC-SHA256",
	        NULL};
	for (int i = 0; bad[i]; i++) {
		mkreq(&t, "GET", bad[i], (const char *const[]){"Host: h", NULL});
		AUTH_ERR(&t, T20130524, 400, "AuthorizationQueryParametersError");
	}
	/* X-Amz-Expires out of range: 403 AccessDenied (as S3 and s3-tests) */
	static const char *const range[] = {"604801", "0", "-7", NULL};
	for (int i = 0; range[i]; i++) {
		char q[512];
		snprintf(q, sizeof(q),
		         "/t?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
		         "%%2F20130524%%2Fus-east-1%%2Fs3%%2Faws4_request"
		         "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=%s&X-Amz-SignedHeaders=host&X-Amz-"
		         "Signature=" EMPTY,
		         range[i]);
		mkreq(&t, "GET", q, (const char *const[]){"Host: h", NULL});
		AUTH_ERR(&t, T20130524, 403, "AccessDenied");
	}
	/* unknown key */
	mkreq(&t, "GET",
	      "/t?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=NOPE%2F20130524%2Fus-east-1%2Fs3%2Faws4_"
	      "request"
	      "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=10&X-Amz-SignedHeaders=host&X-Amz-Signature=" EMPTY,
	      (const char *const[]){"Host: h", NULL});
	AUTH_ERR(&t, T20130524, 403, "InvalidAccessKeyId");
	/* SigV2 presigned (s3.sigv2 off), and both mechanisms at once */
	mkreq(&t, "GET", "/t?AWSAccessKeyId=" AK "&Expires=1&Signature=x",
	      (const char *const[]){"Host: h", NULL});
	AUTH_ERR(&t, T20130524, 400, "InvalidRequest");
	mkreq(&t, "GET", "/test.txt?" PRESIGN_Q,
	      (const char *const[]){"Host: examplebucket.s3.amazonaws.com", "Authorization: " CRED ",x",
	                            NULL});
	AUTH_ERR(&t, T20130524, 400, "InvalidArgument");
}
END_TEST

/* ---- header errors ------------------------------------------------------- */

START_TEST(test_header_errors)
{
	treq_t t;
	s3_auth_t a;
	s3_autherr_t e;
	const char *base[] = {"Host: h", NULL, "x-amz-date: 20130524T000000Z", "x-amz-content-sha256: " EMPTY,
	                      NULL};
	static const char *const malformed[] = {
	        "Authorization: AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request",
	        "Authorization: AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request, "
	        "SignedHeaders=host, Signature=xyz",
	        "Authorization: AWS4-HMAC-SHA256 Credential=" AK
	        "/20130524/us-east-1/aws4_request, SignedHeaders=host, "
	        "Signature=" EMPTY,
	        "Authorization: AWS4-HMAC-SHA256 Credential=" AK
	        "/2013052/us-east-1/s3/aws4_request, SignedHeaders=host, "
	        "Signature=" EMPTY,
	        "Authorization: AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/ec2/aws4_request, "
	        "SignedHeaders=host, Signature=" EMPTY,
	        "Authorization: AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws5_request, "
	        "SignedHeaders=host, Signature=" EMPTY,
	        "Authorization: AWS4-HMAC-SHA256 Credential=" AK "/20130523/us-east-1/s3/aws4_request, "
	        "SignedHeaders=host, Signature=" EMPTY,
	        "Authorization: AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request, "
	        "SignedHeaders=host, Signature=" EMPTY ", Signature=" EMPTY,
	        "Authorization: AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request, "
	        "SignedHeaders=host, Signature=" EMPTY ", Foo=bar",
	        "Authorization: AWS4-HMAC-SHA256 Credential=/20130524/us-east-1/s3/aws4_request, "
	        "SignedHeaders=host, Signature=" EMPTY,
	        NULL};
	for (int i = 0; malformed[i]; i++) {
		base[1] = malformed[i];
		mkreq(&t, "GET", "/b/k", base);
		AUTH_ERR(&t, T20130524, 400, "AuthorizationHeaderMalformed");
	}
	/* the wrong key, and the right key with a wrong secret */
	base[1] = "Authorization: AWS4-HMAC-SHA256 Credential=AKIAWRONG/20130524/us-east-1/s3/aws4_request, "
	          "SignedHeaders=host, Signature=" EMPTY;
	mkreq(&t, "GET", "/b/k", base);
	AUTH_ERR(&t, T20130524, 403, "InvalidAccessKeyId");
	base[1] = "Authorization: " CRED ", SignedHeaders=host, Signature=" EMPTY;
	mkreq(&t, "GET", "/b/k", base);
	AUTH_ERR(&t, T20130524, 403, "SignatureDoesNotMatch");
	/* SigV2 (s3.sigv2 off), and an unknown scheme */
	base[1] = "Authorization: AWS " AK ":frJIUN8DYpKDtOLCwo//yllqDzg=";
	mkreq(&t, "GET", "/b/k", base);
	AUTH_ERR(&t, T20130524, 400, "InvalidRequest");
	base[1] = "Authorization: Bearer abc";
	mkreq(&t, "GET", "/b/k", base);
	AUTH_ERR(&t, T20130524, 400, "InvalidArgument");
	/* no date, a bad date */
	mkreq(&t, "GET", "/b/k",
	      (const char *const[]){"Host: h",
	                            "Authorization: " CRED ", SignedHeaders=host, "
	                            "Signature=" EMPTY,
	                            "x-amz-content-sha256: " EMPTY, NULL});
	AUTH_ERR(&t, T20130524, 403, "AccessDenied");
	addhdr(&t, "x-amz-date: yesterday");
	AUTH_ERR(&t, T20130524, 403, "AccessDenied");
	/* x-amz-content-sha256 missing or not a mode */
	mkreq(&t, "GET", "/b/k",
	      (const char *const[]){"Host: h",
	                            "Authorization: " CRED ", SignedHeaders=host, "
	                            "Signature=" EMPTY,
	                            "x-amz-date: 20130524T000000Z", NULL});
	AUTH_ERR(&t, T20130524, 400, "InvalidRequest");
	addhdr(&t, "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-EVENTS");
	AUTH_ERR(&t, T20130524, 400, "InvalidArgument");

	/* anonymous: its own kind; denied unless auth is off */
	mkreq(&t, "GET", "/b/k", (const char *const[]){"Host: h", NULL});
	AUTH_OK(&t, T20130524, &a);
	ck_assert_int_eq(a.kind, S3_AUTH_ANON);
	ck_assert_ptr_null(a.key);
	ck_assert_int_eq(s3_auth_require(&cfg, &a, &e), AIS_ERR);
	ck_assert_str_eq(e.code, "AccessDenied");
	ck_assert_int_eq(e.status, 403);
	/* auth off: nothing checked, even a bad signature; framing still read */
	cfg.enabled = false;
	base[1] = "Authorization: " CRED ", SignedHeaders=host, Signature=" EMPTY;
	base[3] = "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER";
	mkreq(&t, "PUT", "/b/k", base);
	AUTH_OK(&t, T20130524 + 86400 * 365, &a);
	ck_assert_int_eq(a.kind, S3_AUTH_OFF);
	ck_assert_int_eq(a.payload, S3_PAYLOAD_STREAM_UNSIGNED_TRAILER);
	ck_assert_int_eq(s3_auth_require(&cfg, &a, &e), AIS_OK);
	cfg.enabled = true;
}
END_TEST

/* Signs with s3_sign, then verifies: the client side and the server side
 * agree, including unusual keys and queries. */
START_TEST(test_sign_roundtrip)
{
	static const char *const targets[] = {"/b/k",
	                                      "/b/a%20b%2Bc%26d%25e",
	                                      "/b/%E2%82%AC/x?list-type=2&prefix=a%2Fb",
	                                      "/b/k?uploads",
	                                      "/b/k?partNumber=1&uploadId=a%2Bb%3D",
	                                      "/"};
	const s3_key_t *key = s3_keys_find(cfg.keys, SV(AK));
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		treq_t t;
		buf_t authz = BUF_INIT, h = BUF_INIT;
		s3_auth_t a;
		mkreq(&t, "GET", targets[i],
		      (const char *const[]){"Host: 127.0.0.1:8080", "x-amz-date: 20130524T000000Z",
		                            "x-amz-content-sha256: UNSIGNED-PAYLOAD",
		                            "X-Amz-Meta-Foo:  a  b ", NULL});
		s3_sign(key, "eu-west-3", "20130524T000000Z", &t.r, "UNSIGNED-PAYLOAD", &authz);
		buf_addf(&h, "Authorization: %s", authz.ptr);
		addhdr(&t, h.ptr);
		AUTH_OK(&t, T20130524, &a);
		ck_assert_str_eq(a.region, "eu-west-3");
		ck_assert_int_eq(a.payload, S3_PAYLOAD_UNSIGNED);
		/* the same request with another secret does not verify */
		s3_key_t other = *key;
		other.secret_key = "not-the-secret";
		buf_reset(&authz);
		buf_reset(&h);
		s3_sign(&other, "eu-west-3", "20130524T000000Z", &t.r, "UNSIGNED-PAYLOAD", &authz);
		buf_addf(&h, "Authorization: %s", authz.ptr);
		t.r.nhdrs--;
		addhdr(&t, h.ptr);
		AUTH_ERR(&t, T20130524, 403, "SignatureDoesNotMatch");
		buf_free(&authz);
		buf_free(&h);
	}
}
END_TEST

/* Every x-amz-* header must be signed (but x-amz-content-sha256), in both
 * forms: an added one is AccessDenied naming it, whatever its case, even
 * with a signature that matches; Content-Type and Content-MD5 may stay
 * unsigned, as on S3. */
START_TEST(test_unsigned_headers)
{
	treq_t t;
	s3_auth_t a;
	s3_autherr_t e;
	static const char *const added[] = {"x-amz-copy-source: other/secret", "X-Amz-Acl: public-read",
	                                    "x-amz-grant-read: uri=\"http://acs.amazonaws.com/groups/global/AllUsers\"",
	                                    "x-amz-meta-owner: mallory", "x-amz-metadata-directive: REPLACE", NULL};
	const s3_key_t *key = s3_keys_find(cfg.keys, SV(AK));

	/* the presigned form: the documentation's URL signs host only */
	for (int i = 0; added[i]; i++) {
		mkreq(&t, "GET", "/test.txt?" PRESIGN_Q,
		      (const char *const[]){"Host: examplebucket.s3.amazonaws.com", NULL});
		AUTH_OK(&t, T20130524 + 60, &a);
		addhdr(&t, added[i]);
		AUTH_ERR(&t, T20130524 + 60, 403, "AccessDenied");
		verify(&t, T20130524 + 60, &a, &e);
		ck_assert_str_eq(e.message, "There were headers present in the request which were not signed");
		char want[64];
		snprintf(want, sizeof(want), "%.*s", (int)(strchr(added[i], ':') - added[i]), added[i]);
		for (char *c = want; *c; c++)
			*c = (char)(*c >= 'A' && *c <= 'Z' ? *c | 0x20 : *c);
		ck_assert_str_eq(e.headers_not_signed, want);
	}
	mkreq(&t, "GET", "/test.txt?" PRESIGN_Q,
	      (const char *const[]){"Host: examplebucket.s3.amazonaws.com", "Content-Type: text/plain",
	                            "Content-MD5: 1B2M2Y8AsgTpgAmY7PhCfg==", "x-amz-content-sha256: UNSIGNED-PAYLOAD",
	                            NULL});
	AUTH_OK(&t, T20130524 + 60, &a);
	ck_assert_int_eq(a.kind, S3_AUTH_PRESIGNED);

	/* the header form: signed, then one more header */
	for (int i = 0; added[i]; i++) {
		buf_t authz = BUF_INIT, h = BUF_INIT;
		mkreq(&t, "PUT", "/b/k",
		      (const char *const[]){"Host: h", "x-amz-date: 20130524T000000Z",
		                            "x-amz-content-sha256: UNSIGNED-PAYLOAD", "x-amz-meta-a: 1", NULL});
		s3_sign(key, "us-east-1", "20130524T000000Z", &t.r, "UNSIGNED-PAYLOAD", &authz);
		buf_addf(&h, "Authorization: %s", authz.ptr);
		addhdr(&t, h.ptr);
		AUTH_OK(&t, T20130524, &a);
		addhdr(&t, added[i]);
		AUTH_ERR(&t, T20130524, 403, "AccessDenied");
		buf_free(&authz);
		buf_free(&h);
	}
	/* x-amz-content-sha256 unsigned (its value is the signed payload hash) */
	{
		buf_t authz = BUF_INIT, h = BUF_INIT;
		mkreq(&t, "PUT", "/b/k", (const char *const[]){"Host: h", "x-amz-date: 20130524T000000Z", NULL});
		s3_sign(key, "us-east-1", "20130524T000000Z", &t.r, "UNSIGNED-PAYLOAD", &authz);
		buf_addf(&h, "Authorization: %s", authz.ptr);
		addhdr(&t, h.ptr);
		addhdr(&t, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
		addhdr(&t, "Content-Type: application/octet-stream");
		AUTH_OK(&t, T20130524, &a);
		buf_free(&authz);
		buf_free(&h);
	}
	/* the pure check: names in any case, blanks around them */
	mkreq(&t, "PUT", "/b/k", (const char *const[]){"X-AMZ-ACL: private", "x-amz-date: x", NULL});
	ck_assert_int_eq(s3_check_signed_headers(&t.r, SV("host;X-Amz-Acl; x-amz-date"), &e), AIS_OK);
	ck_assert_int_eq(s3_check_signed_headers(&t.r, SV("host;x-amz-date"), &e), AIS_ERR);
	ck_assert_str_eq(e.headers_not_signed, "x-amz-acl");
	ck_assert_int_eq(s3_check_signed_headers(&t.r, SV("x-amz-acl;x-amz-acl-x"), &e), AIS_ERR);
	ck_assert_str_eq(e.headers_not_signed, "x-amz-date");
}
END_TEST

/* ---- streaming uploads --------------------------------------------------- */

struct sink {
	buf_t out;
};

static int sink_emit(void *arg, const char *p, size_t n)
{
	buf_add(&((struct sink *)arg)->out, p, n);
	return AIS_OK;
}

static void wire_chunk(buf_t *w, size_t n, const char *sig)
{
	if (sig)
		buf_addf(w, "%zx;chunk-signature=%s\r\n", n, sig);
	else
		buf_addf(w, "%zx\r\n", n);
	for (size_t i = 0; i < n; i++)
		buf_addch(w, 'a');
	if (n)
		buf_addstr(w, "\r\n");
}

/* Feeds body in pieces of step bytes (0: one piece); returns finish's rc. */
static int run_body(s3_body_t *b, sv_t body, size_t step, struct sink *s, s3_autherr_t *e)
{
	size_t off = 0;
	if (!step)
		step = body.len ? body.len : 1;
	while (off < body.len) {
		size_t n = MIN(step, body.len - off);
		int rc = s3_body_feed(b, body.ptr + off, n, sink_emit, s, e);
		if (rc != AIS_OK)
			return rc;
		off += n;
	}
	return s3_body_finish(b, e);
}

static const char *const stream_hdrs[] = {
        "Host: s3.amazonaws.com",
        "x-amz-date: 20130524T000000Z",
        "x-amz-storage-class: REDUCED_REDUNDANCY",
        "Authorization: " CRED
        ",SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
        "x-amz-decoded-content-length;x-amz-storage-class,"
        "Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
        "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
        "Content-Encoding: aws-chunked",
        "x-amz-decoded-content-length: 66560",
        "Content-Length: 66824",
        NULL};

#define SIG1 "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
#define SIG2 "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
#define SIG3 "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"

START_TEST(test_doc_streaming)
{
	treq_t t;
	s3_auth_t a;
	s3_autherr_t e;
	mkreq(&t, "PUT", "/examplebucket/chunkObject.txt", stream_hdrs);
	AUTH_OK(&t, T20130524, &a);
	ck_assert_int_eq(a.payload, S3_PAYLOAD_STREAM_SIGNED);
	ck_assert(a.verify_chunks);
	ck_assert_str_eq(a.seed_signature,
	                 "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");

	buf_t w = BUF_INIT;
	wire_chunk(&w, 65536, SIG1);
	wire_chunk(&w, 1024, SIG2);
	wire_chunk(&w, 0, SIG3);
	buf_addstr(&w, "\r\n");
	ck_assert_int_eq(w.len, 66824); /* the documented Content-Length */

	static const size_t steps[] = {0, 1, 2, 3, 7, 86, 87, 88, 89, 777, 4096, 65536};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		arena_t *ar = arena_new(4096);
		struct sink s = {BUF_INIT};
		s3_body_t *b = s3_body_new(ar, &a, &t.r, 66824, &e);
		ck_assert_ptr_nonnull(b);
		ck_assert_msg(run_body(b, sv_of(&w), steps[i], &s, &e) == AIS_OK, "step %zu: %s %s", steps[i],
		              e.code, e.message);
		ck_assert_int_eq(s.out.len, 66560);
		ck_assert_int_eq(s3_body_payload_len(b), 66560);
		for (size_t k = 0; k < s.out.len; k++)
			ck_assert(s.out.ptr[k] == 'a');
		buf_free(&s.out);
		arena_destroy(ar);
	}

	/* faults: a changed data byte, a changed signature, a missing one,
	 * a truncated body, a missing final chunk, bytes after the end */
	struct {
		const char *what;
		size_t at;  /* byte to change (0: none) */
		size_t cut; /* bytes to drop from the end */
		const char *append;
		const char *code;
	} faults[] = {
	        {"data byte in chunk 1", 88 + 100, 0, NULL, "SignatureDoesNotMatch"},
	        {"data byte in chunk 2", 65626 + 86 + 5, 0, NULL, "SignatureDoesNotMatch"},
	        {"signature of chunk 1", 30, 0, NULL, "SignatureDoesNotMatch"},
	        {"last-chunk signature", 66738 + 20, 0, NULL, "SignatureDoesNotMatch"},
	        {"truncated in chunk 2", 0, 300, NULL, "IncompleteBody"},
	        {"no last chunk", 0, 86, NULL, "IncompleteBody"},
	        {"trailing bytes", 0, 0, "x", "IncompleteBody"},
	        {"chunk longer than its size", 88 + 65536, 0, NULL, "IncompleteBody"},
	};
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		buf_t f = BUF_INIT;
		buf_add(&f, w.ptr, w.len - faults[i].cut);
		if (faults[i].at)
			f.ptr[faults[i].at] = f.ptr[faults[i].at] == 'b' ? 'c' : 'b';
		if (faults[i].append)
			buf_addstr(&f, faults[i].append);
		arena_t *ar = arena_new(4096);
		struct sink s = {BUF_INIT};
		s3_body_t *b = s3_body_new(ar, &a, &t.r, (int64_t)f.len, &e);
		int rc = run_body(b, sv_of(&f), 1000, &s, &e);
		ck_assert_msg(rc == AIS_ERR, "%s: accepted", faults[i].what);
		ck_assert_msg(!strcmp(e.code, faults[i].code), "%s: %s, want %s", faults[i].what, e.code,
		              faults[i].code);
		/* sticky */
		ck_assert_int_eq(s3_body_finish(b, &e), AIS_ERR);
		buf_free(&s.out);
		buf_free(&f);
		arena_destroy(ar);
	}

	/* x-amz-decoded-content-length: missing (411), wrong (400) */
	mkreq(&t, "PUT", "/examplebucket/chunkObject.txt", stream_hdrs);
	t.h[6].name = SV("x-amz-other");
	arena_t *ar = arena_new(4096);
	ck_assert_ptr_null(s3_body_new(ar, &a, &t.r, 66824, &e));
	ck_assert_str_eq(e.code, "MissingContentLength");
	ck_assert_int_eq(e.status, 411);
	t.h[6] = (http_hdr_t){SV("x-amz-decoded-content-length"), SV("66561")};
	struct sink s = {BUF_INIT};
	s3_body_t *b = s3_body_new(ar, &a, &t.r, 66824, &e);
	ck_assert_int_eq(run_body(b, sv_of(&w), 0, &s, &e), AIS_ERR);
	ck_assert_str_eq(e.code, "IncompleteBody");
	t.h[6].value = SV("66559");
	b = s3_body_new(ar, &a, &t.r, 66824, &e);
	ck_assert_int_eq(run_body(b, sv_of(&w), 0, &s, &e), AIS_ERR);
	ck_assert_str_eq(e.code, "IncompleteBody");
	buf_free(&s.out);
	arena_destroy(ar);
	buf_free(&w);
}
END_TEST

START_TEST(test_doc_streaming_trailer)
{
	treq_t t;
	s3_auth_t a;
	s3_autherr_t e;
	mkreq(&t, "PUT", "/examplebucket/chunkObject.txt",
	      (const char *const[]){
	              "Host: s3.amazonaws.com", "x-amz-date: 20130524T000000Z",
	              "x-amz-storage-class: REDUCED_REDUNDANCY",
	              "Authorization: " CRED
	              ",SignedHeaders=content-encoding;host;x-amz-content-sha256;x-amz-date;"
	              "x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer,"
	              "Signature=106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e",
	              "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
	              "Content-Encoding: aws-chunked", "x-amz-decoded-content-length: 66560",
	              "x-amz-trailer: x-amz-checksum-crc32c", NULL});
	AUTH_OK(&t, T20130524, &a);
	ck_assert_int_eq(a.payload, S3_PAYLOAD_STREAM_SIGNED_TRAILER);

	buf_t w = BUF_INIT;
	wire_chunk(&w, 65536, "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2");
	wire_chunk(&w, 1024, "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7");
	wire_chunk(&w, 0, "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992");
	buf_addstr(
	        &w,
	        "x-amz-checksum-crc32c:sOO8/Q==\r\n"
	        "x-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n"
	        "\r\n");
	ck_assert_int_eq(w.len, 66946); /* as documented */
	for (size_t step = 0; step < 5; step++) {
		arena_t *ar = arena_new(4096);
		struct sink s = {BUF_INIT};
		s3_body_t *b = s3_body_new(ar, &a, &t.r, (int64_t)w.len, &e);
		ck_assert_ptr_nonnull(b);
		ck_assert_msg(run_body(b, sv_of(&w), step ? step * 331 : 0, &s, &e) == AIS_OK, "%s %s",
		              e.code, e.message);
		ck_assert_int_eq(s.out.len, 66560);
		const char *n, *v;
		ck_assert(s3_body_checksum(b, &n, &v));
		ck_assert_str_eq(n, "x-amz-checksum-crc32c");
		ck_assert_str_eq(v, "sOO8/Q==");
		buf_free(&s.out);
		arena_destroy(ar);
	}
	/* a wrong trailer signature; a wrong checksum (signed, so the
	 * signature fails first); no trailer signature */
	struct {
		const char *from, *to, *code;
	} faults[] = {
	        {"d81f82fc", "d81f82fd", "SignatureDoesNotMatch"},
	        {"sOO8/Q==", "AAAAAA==", "SignatureDoesNotMatch"},
	        {"x-amz-trailer-signature:", "x-amz-trailer-signaturX:", "SignatureDoesNotMatch"},
	};
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		buf_t f = BUF_INIT;
		buf_add(&f, w.ptr, w.len);
		char *p = strstr(f.ptr, faults[i].from);
		ck_assert_ptr_nonnull(p);
		memcpy(p, faults[i].to, strlen(faults[i].to));
		arena_t *ar = arena_new(4096);
		struct sink s = {BUF_INIT};
		s3_body_t *b = s3_body_new(ar, &a, &t.r, (int64_t)f.len, &e);
		ck_assert_int_eq(run_body(b, sv_of(&f), 0, &s, &e), AIS_ERR);
		ck_assert_msg(!strcmp(e.code, faults[i].code), "%zu: %s (%s), want %s", i, e.code, e.message,
		              faults[i].code);
		buf_free(&s.out);
		buf_free(&f);
		arena_destroy(ar);
	}
	buf_free(&w);
}
END_TEST

/* Unsigned trailers and plain PUTs with x-amz-checksum-* / Content-MD5. */
START_TEST(test_checksums_on_bodies)
{
	static const char data[] = "hello, world";
	unsigned char d[32];
	char crc32_b64[16], sha256_b64[48], md5_b64[32];
	uint32_t c = (uint32_t)crc32(0, (const unsigned char *)data, 12);
	for (int k = 0; k < 4; k++)
		d[k] = (unsigned char)(c >> (24 - 8 * k));
	s3_b64_encode(d, 4, crc32_b64);
	EVP_Digest(data, 12, d, NULL, EVP_sha256(), NULL);
	s3_b64_encode(d, 32, sha256_b64);
	EVP_Digest(data, 12, d, NULL, EVP_md5(), NULL);
	s3_b64_encode(d, 16, md5_b64);

	s3_autherr_t e;
	s3_auth_t a;
	treq_t t;
	arena_t *ar = arena_new(4096);
	buf_t h1 = BUF_INIT, h2 = BUF_INIT, w = BUF_INIT;

	/* unsigned trailer, good and bad */
	for (int bad = 0; bad < 2; bad++) {
		mkreq(&t, "PUT", "/b/k",
		      (const char *const[]){
		              "Host: h", "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER",
		              "x-amz-decoded-content-length: 12", "x-amz-trailer: x-amz-checksum-crc32",
		              "x-amz-sdk-checksum-algorithm: CRC32", NULL});
		cfg.enabled = false;
		AUTH_OK(&t, T20130524, &a);
		cfg.enabled = true;
		buf_reset(&w);
		buf_addf(&w, "5\r\nhello\r\n7\r\n, world\r\n0\r\nx-amz-checksum-crc32:%s\r\n\r\n",
		         bad ? "AAAAAA==" : crc32_b64);
		struct sink s = {BUF_INIT};
		s3_body_t *b = s3_body_new(ar, &a, &t.r, -1, &e);
		ck_assert_ptr_nonnull(b);
		int rc = run_body(b, sv_of(&w), 3, &s, &e);
		if (bad) {
			ck_assert_int_eq(rc, AIS_ERR);
			ck_assert_str_eq(e.code, "BadDigest");
		} else {
			ck_assert_msg(rc == AIS_OK, "%s", e.message);
			ck_assert_int_eq(s.out.len, 12);
			ck_assert(!memcmp(s.out.ptr, data, 12));
		}
		buf_free(&s.out);
	}
	/* the trailer announced but missing */
	{
		struct sink s = {BUF_INIT};
		s3_body_t *b = s3_body_new(ar, &a, &t.r, -1, &e);
		ck_assert_int_eq(run_body(b, SV("5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n"), 0, &s, &e),
		                 AIS_ERR);
		ck_assert_str_eq(e.code, "InvalidRequest");
		buf_free(&s.out);
	}

	/* plain PUT, x-amz-checksum-* header and Content-MD5 */
	struct {
		const char *h1, *h2;
		bool body_ok;
		const char *new_err; /* s3_body_new fails with */
	} cases[] = {
	        {"x-amz-checksum-crc32", crc32_b64, true, NULL},
	        {"x-amz-checksum-sha256", sha256_b64, true, NULL},
	        {"x-amz-checksum-crc32", "AAAAAA==", false, NULL},
	        {"x-amz-checksum-crc32", "AAAA", false, "InvalidRequest"},
	        {"x-amz-checksum-md7", "AAAAAA==", false, "InvalidRequest"},
	        {"content-md5", md5_b64, true, NULL},
	        {"content-md5", "1B2M2Y8AsgTpgAmY7PhCfg==", false, NULL},
	        {"content-md5", "nope", false, "InvalidDigest"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		buf_reset(&h1);
		buf_addf(&h1, "%s: %s", cases[i].h1, cases[i].h2);
		mkreq(&t, "PUT", "/b/k",
		      (const char *const[]){"Host: h", "x-amz-content-sha256: UNSIGNED-PAYLOAD", NULL});
		addhdr(&t, h1.ptr);
		cfg.enabled = false;
		AUTH_OK(&t, T20130524, &a);
		cfg.enabled = true;
		s3_body_t *b = s3_body_new(ar, &a, &t.r, 12, &e);
		if (cases[i].new_err) {
			ck_assert_ptr_null(b);
			ck_assert_str_eq(e.code, cases[i].new_err);
			ck_assert_int_eq(e.status, 400);
			continue;
		}
		ck_assert_ptr_nonnull(b);
		struct sink s = {BUF_INIT};
		int rc = run_body(b, (sv_t){data, 12}, 5, &s, &e);
		if (cases[i].body_ok) {
			ck_assert_msg(rc == AIS_OK, "%zu: %s", i, e.message);
		} else {
			ck_assert_int_eq(rc, AIS_ERR);
			ck_assert_str_eq(e.code, "BadDigest");
		}
		buf_free(&s.out);
	}
	/* two checksum headers; the SDK's algorithm without a value */
	mkreq(&t, "PUT", "/b/k", (const char *const[]){"Host: h", NULL});
	buf_reset(&h1);
	buf_addf(&h1, "x-amz-checksum-crc32: %s", crc32_b64);
	buf_reset(&h2);
	buf_addf(&h2, "x-amz-checksum-sha256: %s", sha256_b64);
	addhdr(&t, h1.ptr);
	addhdr(&t, h2.ptr);
	AUTH_OK(&t, T20130524, &a);
	ck_assert_ptr_null(s3_body_new(ar, &a, &t.r, 12, &e));
	ck_assert_str_eq(e.code, "InvalidRequest");
	mkreq(&t, "PUT", "/b/k",
	      (const char *const[]){"Host: h", "x-amz-sdk-checksum-algorithm: CRC32", NULL});
	AUTH_OK(&t, T20130524, &a);
	ck_assert_ptr_null(s3_body_new(ar, &a, &t.r, 12, &e));
	ck_assert_str_eq(e.code, "InvalidRequest");
	/* a short plain body */
	mkreq(&t, "PUT", "/b/k", (const char *const[]){"Host: h", NULL});
	AUTH_OK(&t, T20130524, &a);
	s3_body_t *b = s3_body_new(ar, &a, &t.r, 12, &e);
	ck_assert_int_eq(s3_body_feed(b, data, 11, NULL, NULL, &e), AIS_OK);
	ck_assert_int_eq(s3_body_finish(b, &e), AIS_ERR);
	ck_assert_str_eq(e.code, "IncompleteBody");

	buf_free(&h1);
	buf_free(&h2);
	buf_free(&w);
	arena_destroy(ar);
}
END_TEST

START_TEST(test_checksum_values)
{
	static const char check[] = "123456789";
	ck_assert_uint_eq(s3_crc32c(0, check, 9), 0xe3069283u);
	ck_assert(s3_crc64nvme(0, check, 9) == 0xae8b14860a799888ull);
	/* in pieces, and long inputs through the 8-byte paths */
	char big[1000];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7 + 3);
	uint32_t whole = s3_crc32c(0, big, sizeof(big));
	uint64_t whole64 = s3_crc64nvme(0, big, sizeof(big));
	for (size_t cut = 0; cut < 20; cut++) {
		ck_assert_uint_eq(s3_crc32c(s3_crc32c(0, big, cut), big + cut, sizeof(big) - cut), whole);
		ck_assert(s3_crc64nvme(s3_crc64nvme(0, big, cut), big + cut, sizeof(big) - cut) == whole64);
	}
	/* base64: canonical only */
	unsigned char out[8];
	char enc[16];
	ck_assert_int_eq(s3_b64_decode(SV("sOO8/Q=="), out, sizeof(out)), 4);
	s3_b64_encode(out, 4, enc);
	ck_assert_str_eq(enc, "sOO8/Q==");
	ck_assert_int_eq(s3_b64_decode(SV("sOO8/R=="), out, sizeof(out)), -1);
	ck_assert_int_eq(s3_b64_decode(SV("sOO8/Q="), out, sizeof(out)), -1);
	ck_assert_int_eq(s3_b64_decode(SV("s=O8/Q=="), out, sizeof(out)), -1);
	ck_assert_int_eq(s3_b64_decode(SV("AAAAAAAAAAAA"), out, 8), -1);
	ck_assert_int_eq(s3_b64_decode(SV(""), out, sizeof(out)), 0);
	ck_assert(s3_ck_by_name(SV("CRC32C")) == S3_CK_CRC32C);
	ck_assert(s3_ck_by_name(SV("crc64nvme")) == S3_CK_CRC64NVME);
	ck_assert(s3_ck_by_name(SV("md5")) == S3_CK_NONE);
}
END_TEST

/* The streaming state over every algorithm, fed in pieces, against
 * published vectors: the CRC catalogue's check values over "123456789",
 * RFC 3720 B.4's CRC32C of 32 zero, 32 0xff and 32 ascending bytes, FIPS
 * 180's SHA-1 and SHA-256 of "abc". */
START_TEST(test_checksum_stream)
{
	static const struct {
		enum s3_ck t;
		int input; /* 0 "123456789", 1 zeros, 2 0xff, 3 ascending, 4 "abc" */
		const char *b64;
	} v[] = {
		{S3_CK_CRC32, 0, "y/Q5Jg=="},            /* cbf43926 */
		{S3_CK_CRC32C, 0, "4waSgw=="},           /* e3069283 */
		{S3_CK_CRC64NVME, 0, "rosUhgp5mIg="},    /* ae8b14860a799888 */
		{S3_CK_CRC32C, 1, "ipE2qg=="},           /* 8a9136aa */
		{S3_CK_CRC32C, 2, "YqirQw=="},           /* 62a8ab43 */
		{S3_CK_CRC32C, 3, "Rt15Tg=="},           /* 46dd794e */
		{S3_CK_SHA1, 4, "qZk+NkcGgWq6PiVxeFDCbJzQ2J0="},
		{S3_CK_SHA256, 4, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="},
	};
	unsigned char in[32], d[32];
	char b64[48];
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		size_t n = 32;
		switch (v[i].input) {
		case 0: memcpy(in, "123456789", n = 9); break;
		case 1: memset(in, 0, n); break;
		case 2: memset(in, 0xff, n); break;
		case 3: for (size_t k = 0; k < n; k++) in[k] = (unsigned char)k; break;
		default: memcpy(in, "abc", n = 3); break;
		}
		for (size_t cut = 0; cut <= n; cut++) {
			s3_ck_state_t st;
			s3_ck_init(&st, v[i].t);
			s3_ck_update(&st, in, cut);
			s3_ck_update(&st, in + cut, n - cut);
			size_t len = s3_ck_final(&st, d);
			ck_assert_uint_eq(len, s3_ck_len(v[i].t));
			s3_b64_encode(d, len, b64);
			ck_assert_msg(!strcmp(b64, v[i].b64), "%s vector %zu cut %zu: %s", s3_ck_name(v[i].t), i, cut, b64);
		}
	}
	s3_ck_state_t st;
	s3_ck_init(&st, S3_CK_SHA256);
	s3_ck_free(&st); /* without a final: nothing leaks (ASan) */
	ck_assert_str_eq(s3_ck_xml(S3_CK_CRC64NVME), "ChecksumCRC64NVME");
}
END_TEST

START_TEST(test_keys)
{
	s3_keys_t *k = s3_keys_new();
	buf_t err = BUF_INIT;
	ck_assert_int_eq(s3_keys_add(k, "AK1:secret12:uid:Name: With Colons", &err), AIS_OK);
	ck_assert_str_eq(s3_keys_find(k, SV("AK1"))->display_name, "Name: With Colons");
	static const char *const bad[] = {"AK1:secret12:uid:dup", "A:secret12:u:n",  "AK2:short:u:n",
	                                  "AK2:sec ret12:u:n",    "AK2:secret12::n", "AK2:secret12:u:",
	                                  "AK/2:secret12:u:n",    "AK2:secret12",    NULL};
	for (int i = 0; bad[i]; i++) {
		buf_reset(&err);
		ck_assert_msg(s3_keys_add(k, bad[i], &err) == AIS_ERR, "%s accepted", bad[i]);
		ck_assert(err.len > 0);
		ck_assert_ptr_null(strstr(err.ptr, "secret12")); /* never echo secrets */
	}
	ck_assert_int_eq(s3_keys_count(k), 1);
	ck_assert_ptr_null(s3_keys_find(k, SV("AK")));
	s3_keys_free(k);

	/* from the config keys */
	conf_t c;
	s3_authcfg_t ac;
	conf_defaults(&c);
	ck_assert(c.s3_auth);
	ck_assert_str_eq(c.s3_region, "us-east-1");
	ck_assert_int_eq(c.s3_max_skew_ms, 15 * 60 * 1000);
	ck_assert_int_eq(conf_set(&c, "s3.key", "AK1:secret12:u1:One", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "s3.key", "AK2:secret34:u2:Two Words", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "s3.auth", "off", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "s3.max_skew", "5m", &err), AIS_OK);
	buf_reset(&err);
	ck_assert_int_eq(conf_set(&c, "s3.key", "AK3-no-colons", &err), AIS_ERR);
	ck_assert_int_eq(conf_set(&c, "s3.auth", "maybe", &err), AIS_ERR);
	ck_assert_int_eq(s3_authcfg_init(&ac, &c, &err), AIS_OK);
	ck_assert(!ac.enabled);
	ck_assert_int_eq(ac.max_skew_s, 300);
	ck_assert_int_eq(s3_keys_count(ac.keys), 2);
	ck_assert_str_eq(s3_keys_at(ac.keys, 1)->display_name, "Two Words");
	s3_authcfg_free(&ac);
	ck_assert_int_eq(conf_set(&c, "s3.key", "", &err), AIS_OK);
	ck_assert_int_eq(c.n_s3_keys, 0);
	/* checked when the config is read, with the same rules */
	buf_reset(&err);
	ck_assert_int_eq(conf_set(&c, "s3.key", "AK1:bad secret:u:n", &err), AIS_ERR);
	ck_assert_ptr_null(strstr(err.ptr, "bad secret"));
	ck_assert_int_eq(conf_set(&c, "s3.key", "AK1:secret12:u:n", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "s3.key", "AK1:secret34:u2:n2", &err), AIS_ERR); /* twice */
	ck_assert_int_eq(conf_set(&c, "s3.key", "AK10:secret34:u2:n2", &err), AIS_OK);
	const char *text = "s3.key = AK5:secret55:u5:Five # comment\ns3.key = AK6:x:u:n\n";
	buf_reset(&err);
	ck_assert_int_eq(conf_parse(&c, text, strlen(text), &err), AIS_ERR);
	ck_assert_msg(strstr(err.ptr, "line 2") != NULL, "%s", err.ptr);
	/* a conf_t filled by hand is checked again */
	memcpy(c.s3_keys[0], "AK1:bad secret:u:n", 19);
	buf_reset(&err);
	ck_assert_int_eq(s3_authcfg_init(&ac, &c, &err), AIS_ERR);
	ck_assert(err.len > 0);
	buf_free(&err);
}
END_TEST

/* ---- Signature Version 2 ------------------------------------------------- */

#define T2007 1175024202 /* Tue, 27 Mar 2007 19:36:42 +0000 */

/* The string to sign of t (with vhost as Host's bucket) is want, and
 * signed with SK it gives sig. */
static void v2_case(treq_t *t, const char *vhost, const char *date, const char *want, const char *sig)
{
	buf_t sts = BUF_INIT;
	char got[S3_V2_SIG_LEN + 1];
	t->r.vhost_bucket = sv_from(vhost);
	s3_v2_string_to_sign(&sts, &t->r, sv_from(date), false);
	buf_addch(&sts, '\0');
	ck_assert_str_eq(sts.ptr, want);
	s3_v2_sign(SK, sts.ptr, sts.len - 1, got);
	ck_assert_str_eq(got, sig);
	buf_free(&sts);
}

/* The examples of AWS's "Signing and authenticating REST requests". */
START_TEST(test_v2_doc_examples)
{
	treq_t t;
	s3_auth_t a;
	mkreq(&t, "GET", "/photos/puppy.jpg",
	      (const char *const[]){"Host: johnsmith.s3.amazonaws.com", "Date: Tue, 27 Mar 2007 19:36:42 +0000",
	                            "Authorization: AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU=", NULL});
	v2_case(&t, "johnsmith", "Tue, 27 Mar 2007 19:36:42 +0000",
	        "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg", "bWq2s1WEIj+Ydj0vQ697zp+IXMU=");
	cfg.sigv2 = true;
	AUTH_OK(&t, T2007, &a);
	ck_assert_int_eq(a.kind, S3_AUTH_HEADER);
	ck_assert_str_eq(a.key->user_id, "uid-1");
	ck_assert_int_eq(a.payload, S3_PAYLOAD_UNSIGNED);
	ck_assert(!a.verify_chunks);
	t.r.vhost_bucket = SV(""); /* path-style: the path alone is the resource */
	AUTH_ERR(&t, T2007, 403, "SignatureDoesNotMatch");

	mkreq(&t, "PUT", "/photos/puppy.jpg",
	      (const char *const[]){"Content-Type: image/jpeg", "Content-Length: 94328",
	                            "Host: johnsmith.s3.amazonaws.com", "Date: Tue, 27 Mar 2007 21:15:45 +0000", NULL});
	v2_case(&t, "johnsmith", "Tue, 27 Mar 2007 21:15:45 +0000",
	        "PUT\n\nimage/jpeg\nTue, 27 Mar 2007 21:15:45 +0000\n/johnsmith/photos/puppy.jpg",
	        "MyyxeRY7whkBe+bq8fHCL/2kKUg=");
	/* a query that names no sub-resource is not signed; one that does is */
	mkreq(&t, "GET", "/?prefix=photos&max-keys=50&marker=puppy",
	      (const char *const[]){"User-Agent: Mozilla/5.0", "Host: johnsmith.s3.amazonaws.com", NULL});
	v2_case(&t, "johnsmith", "Tue, 27 Mar 2007 19:42:41 +0000", "GET\n\n\nTue, 27 Mar 2007 19:42:41 +0000\n/johnsmith/",
	        "htDYFYduRNen8P9ZfE/s9SuKy0U=");
	mkreq(&t, "GET", "/?acl", (const char *const[]){"Host: johnsmith.s3.amazonaws.com", NULL});
	v2_case(&t, "johnsmith", "Tue, 27 Mar 2007 19:44:46 +0000",
	        "GET\n\n\nTue, 27 Mar 2007 19:44:46 +0000\n/johnsmith/?acl", "c2WLPFtWHVgbEmeEG93a4cG37dM=");
	/* x-amz-* headers: lower-cased, sorted, repeats joined, values trimmed;
	 * a CNAME host is the bucket */
	mkreq(&t, "PUT", "/db-backup.dat.gz",
	      (const char *const[]){"User-Agent: curl/7.15.5", "Host: static.johnsmith.net:8080",
	                            "Date: Tue, 27 Mar 2007 21:06:08 +0000", "x-amz-acl: public-read",
	                            "content-type: application/x-download", "Content-MD5: 4gJE4saaMU4BqNR0kLY+lw==",
	                            "X-Amz-Meta-ReviewedBy: joe@johnsmith.net", "X-Amz-Meta-ReviewedBy: jane@johnsmith.net",
	                            "X-Amz-Meta-FileChecksum: 0x02661779", "X-Amz-Meta-ChecksumAlgorithm:  crc32 ",
	                            "Content-Disposition: attachment; filename=database.dat", NULL});
	v2_case(&t, "static.johnsmith.net", "Tue, 27 Mar 2007 21:06:08 +0000",
	        "PUT\n4gJE4saaMU4BqNR0kLY+lw==\napplication/x-download\nTue, 27 Mar 2007 21:06:08 +0000\n"
	        "x-amz-acl:public-read\nx-amz-meta-checksumalgorithm:crc32\nx-amz-meta-filechecksum:0x02661779\n"
	        "x-amz-meta-reviewedby:joe@johnsmith.net,jane@johnsmith.net\n/static.johnsmith.net/db-backup.dat.gz",
	        "ilyl83RwaSoYIEdixDQcA4OnAnc=");
	mkreq(&t, "GET", "/", (const char *const[]){"Host: s3.amazonaws.com", NULL});
	v2_case(&t, "", "Wed, 28 Mar 2007 01:29:59 +0000", "GET\n\n\nWed, 28 Mar 2007 01:29:59 +0000\n/",
	        "qGdzdERIC03wnaRNKh6OqZehG9s=");
	/* the path as sent, escapes untouched */
	mkreq(&t, "GET", "/dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re", (const char *const[]){"Host: s3.amazonaws.com", NULL});
	v2_case(&t, "", "Wed, 28 Mar 2007 01:49:49 +0000",
	        "GET\n\n\nWed, 28 Mar 2007 01:49:49 +0000\n/dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re",
	        "DNEZGsoieTZ92F3bUfSPQcbGmlM=");
	/* the presigned URL: Expires for the date, the signature escaped */
	mkreq(&t, "GET",
	      "/photos/puppy.jpg?AWSAccessKeyId=" AK "&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620",
	      (const char *const[]){"Host: johnsmith.s3.amazonaws.com", NULL});
	v2_case(&t, "johnsmith", "1175139620", "GET\n\n\n1175139620\n/johnsmith/photos/puppy.jpg",
	        "NpgCjnDzrM+WFzoENXmpNDUsSn8=");
	AUTH_OK(&t, T2007, &a);
	ck_assert_int_eq(a.kind, S3_AUTH_PRESIGNED);
	AUTH_OK(&t, 1175139620, &a);
	AUTH_ERR(&t, 1175139621, 403, "AccessDenied"); /* expired */
	cfg.sigv2 = false;
	AUTH_ERR(&t, T2007, 400, "InvalidRequest");
}
END_TEST

/* Sub-resources signed sorted with decoded values; x-amz-date blanks Date. */
START_TEST(test_v2_canonical)
{
	treq_t t;
	mkreq(&t, "GET", "/b/k?versionId=v%2B1&uploads&response-content-type=text%2Fplain&prefix=x&acl=",
	      (const char *const[]){"x-amz-date: Tue, 27 Mar 2007 19:36:42 +0000", "Date: whatever", NULL});
	buf_t sts = BUF_INIT;
	s3_v2_string_to_sign(&sts, &t.r, SV(""), false);
	buf_addch(&sts, '\0');
	ck_assert_str_eq(sts.ptr, "GET\n\n\n\nx-amz-date:Tue, 27 Mar 2007 19:36:42 +0000\n"
	                          "/b/k?acl=&response-content-type=text/plain&uploads&versionId=v+1");
	buf_free(&sts);
	/* a path-style bucket: "/b" as sent, or "/b/" as botocore signs it;
	 * Host's bucket: "/b/" */
	mkreq(&t, "PUT", "/b", NULL);
	for (int slash = 0; slash < 2; slash++) {
		s3_v2_string_to_sign(&sts, &t.r, SV("d"), slash);
		buf_addch(&sts, '\0');
		ck_assert_str_eq(sts.ptr, slash ? "PUT\n\n\nd\n/b/" : "PUT\n\n\nd\n/b");
		sts.len = 0;
	}
	mkreq(&t, "PUT", "/", NULL);
	t.r.vhost_bucket = SV("b");
	s3_v2_string_to_sign(&sts, &t.r, SV("d"), true);
	buf_addch(&sts, '\0');
	ck_assert_str_eq(sts.ptr, "PUT\n\n\nd\n/b/");
	sts.len = 0;
	/* a leading sub-resource said twice, as botocore 1.29 signs path-style;
	 * only a leading one without a value, and only a signed one */
	static const struct {
		const char *path, *want;
	} twice[] = {
	    {"/b/k?acl&versionId=v1", "GET\n\n\nd\n/b/k?acl?acl&versionId=v1"},
	    {"/b?cors", "GET\n\n\nd\n/b?cors?cors"},
	    {"/b/k?versionId=v1&acl", "GET\n\n\nd\n/b/k?acl&versionId=v1"},
	    {"/b?prefix&cors", "GET\n\n\nd\n/b?cors"},
	    {"/b?acl=x", "GET\n\n\nd\n/b?acl=x"},
	};
	for (size_t i = 0; i < sizeof(twice) / sizeof(twice[0]); i++) {
		mkreq(&t, "GET", twice[i].path, NULL);
		s3_v2_string_to_sign(&sts, &t.r, SV("d"), S3_V2_SUB_TWICE);
		buf_addch(&sts, '\0');
		ck_assert_str_eq(sts.ptr, twice[i].want);
		sts.len = 0;
	}
	buf_free(&sts);
}
END_TEST

/* Signs t with SK at its headers (Date or x-amz-date) and sets Authorization. */
static void v2_sign_req(treq_t *t, const char *date)
{
	buf_t sts = BUF_INIT;
	char sig[S3_V2_SIG_LEN + 1], h[128];
	s3_v2_string_to_sign(&sts, &t->r, sv_from(date), false);
	s3_v2_sign(SK, sts.ptr, sts.len, sig);
	snprintf(h, sizeof(h), "Authorization: AWS %s:%s", AK, sig);
	addhdr(t, h);
	buf_free(&sts);
}

START_TEST(test_v2_errors)
{
	treq_t t;
	s3_auth_t a;
	const char *date = "Date: Tue, 27 Mar 2007 19:36:42 +0000";
	cfg.sigv2 = true;
	static const char *const malformed[] = {"AWS", "AWS ", "AWS " AK, "AWS :sig", "AWS " AK ":", "AWS  :", NULL};
	for (int i = 0; malformed[i]; i++) {
		char h[128];
		snprintf(h, sizeof(h), "Authorization: %s", malformed[i]);
		mkreq(&t, "PUT", "/b/k", (const char *const[]){date, h, NULL});
		AUTH_ERR(&t, T2007, 400, "InvalidArgument");
	}
	/* signed right, then each part spoiled */
	mkreq(&t, "PUT", "/b/k", (const char *const[]){date, "x-amz-meta-a: 1", NULL});
	v2_sign_req(&t, "Tue, 27 Mar 2007 19:36:42 +0000");
	AUTH_OK(&t, T2007, &a);
	AUTH_OK(&t, T2007 + 900, &a);
	AUTH_ERR(&t, T2007 + 901, 403, "RequestTimeTooSkewed");
	AUTH_ERR(&t, T2007 - 901, 403, "RequestTimeTooSkewed");
	addhdr(&t, "x-amz-meta-b: 2"); /* an x-amz-* header is always signed */
	AUTH_ERR(&t, T2007, 403, "SignatureDoesNotMatch");
	static const char *const badsig[] = {
	        "Authorization: AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU=", /* another request's */
	        "Authorization: AWS " AK ":!!!not base64!!!",
	        "Authorization: AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU=bWq2s1WEIj+Ydj0vQ697zp+IXMU=", NULL};
	for (int i = 0; badsig[i]; i++) {
		mkreq(&t, "PUT", "/b/k", (const char *const[]){date, badsig[i], NULL});
		AUTH_ERR(&t, T2007, 403, "SignatureDoesNotMatch");
	}
	mkreq(&t, "PUT", "/b/k", (const char *const[]){date, "Authorization: AWS NOPE:bWq2s1WEIj+Ydj0vQ697zp+IXMU=", NULL});
	AUTH_ERR(&t, T2007, 403, "InvalidAccessKeyId");
	/* the date: none, garbage, empty x-amz-date (over Date), before 1970,
	 * past the nanosecond range */
	static const char *const dates[] = {"User-Agent: no date", "Date: Bad Date", "x-amz-date: ",
	                                    "x-amz-date: Tue, 07 Jul 1950 21:53:04 GMT", NULL};
	for (int i = 0; dates[i]; i++) {
		mkreq(&t, "PUT", "/b/k", (const char *const[]){dates[i], "Authorization: AWS " AK ":x", NULL});
		if (i == 2)
			addhdr(&t, date); /* x-amz-date wins over Date */
		AUTH_ERR(&t, T2007, 403, "AccessDenied");
	}
	mkreq(&t, "PUT", "/b/k",
	      (const char *const[]){"x-amz-date: Tue, 07 Jul 9999 21:53:04 GMT", "Authorization: AWS " AK ":x", NULL});
	AUTH_ERR(&t, T2007, 403, "RequestTimeTooSkewed");
	/* a signed aws-chunked body needs SigV4's signing key */
	mkreq(&t, "PUT", "/b/k",
	      (const char *const[]){date, "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD", NULL});
	v2_sign_req(&t, "Tue, 27 Mar 2007 19:36:42 +0000");
	AUTH_ERR(&t, T2007, 400, "InvalidRequest");
	/* a huge header: refused, no crash */
	static char big[8192];
	memset(big, 'A', sizeof(big) - 1);
	memcpy(big, "x-amz-meta-big: ", 16);
	mkreq(&t, "PUT", "/b/k", (const char *const[]){date, "Authorization: AWS " AK ":x", NULL});
	t.h[2].name = SV("x-amz-meta-big");
	t.h[2].value = sv_from(big + 16);
	t.r.nhdrs = 3;
	AUTH_ERR(&t, T2007, 403, "SignatureDoesNotMatch");
	/* the query form: a parameter missing, Expires not a number, both forms */
	static const char *const queries[] = {"/b/k?AWSAccessKeyId=" AK "&Expires=1175139620",
	                                      "/b/k?AWSAccessKeyId=" AK "&Signature=x",
	                                      "/b/k?AWSAccessKeyId=&Expires=1175139620&Signature=x",
	                                      "/b/k?AWSAccessKeyId=" AK "&Expires=soon&Signature=x",
	                                      "/b/k?AWSAccessKeyId=" AK "&Expires=-1&Signature=x",
	                                      "/b/k?AWSAccessKeyId=" AK "&Expires=1175139620&Signature=x&Signature=y",
	                                      "/b/k?AWSAccessKeyId=" AK "&Expires=1175139620&Signature=%zz", NULL};
	for (int i = 0; queries[i]; i++) {
		mkreq(&t, "GET", queries[i], NULL);
		AUTH_ERR(&t, T2007, 403, "AccessDenied");
	}
	mkreq(&t, "GET", "/b/k?AWSAccessKeyId=" AK "&Expires=1175139620&Signature=x",
	      (const char *const[]){"Authorization: AWS " AK ":x", NULL});
	AUTH_ERR(&t, T2007, 400, "InvalidArgument");
	cfg.sigv2 = false;
}
END_TEST

static Suite *sigv4_suite(void)
{
	Suite *s = suite_create("sigv4");
	TCase *tc = tcase_create("sigv4");
	tcase_add_checked_fixture(tc, cfg_setup, cfg_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_suite_vectors);
	tcase_add_test(tc, test_signing_key_cache);
	tcase_add_test(tc, test_canonical_forms);
	tcase_add_test(tc, test_doc_get_object);
	tcase_add_test(tc, test_doc_put_object);
	tcase_add_test(tc, test_doc_lifecycle_and_list);
	tcase_add_test(tc, test_doc_presigned);
	tcase_add_test(tc, test_header_errors);
	tcase_add_test(tc, test_sign_roundtrip);
	tcase_add_test(tc, test_unsigned_headers);
	tcase_add_test(tc, test_doc_streaming);
	tcase_add_test(tc, test_doc_streaming_trailer);
	tcase_add_test(tc, test_checksums_on_bodies);
	tcase_add_test(tc, test_checksum_values);
	tcase_add_test(tc, test_checksum_stream);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_v2_doc_examples);
	tcase_add_test(tc, test_v2_canonical);
	tcase_add_test(tc, test_v2_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sigv4_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
