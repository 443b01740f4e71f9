/*
 * test_auth.c - the access-control library (auth.h): permission words,
 * JWT HS256 tokens (a vector made by an independent implementation, the
 * strict parser's refusals, make/verify round trips), the cluster
 * secret's intra-cluster and redirect signatures, and config grants.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/auth.h"
#include "aisd/authz.h"
#include "aisd/bmd.h"
#include "aisd/s3acl.h"
#include "aisd/conf.h"
#include "aisd/status.h"
#include "aisd/banned.h"

#define KEY "0123456789abcdef-secret"
#define KLEN (sizeof(KEY) - 1)
#define AUTHZ_HDR_TEST 200 /* an intra-cluster header value fits */
/* Python's hmac + base64 over these exact bytes */
static const char VECTOR[] =
	"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ1c2VybmFtZSI6ImFsaWNlIiwiYWRtaW4iOmZhbHNlLCJleHAiOjIwMDAwMDAwMDAs"
	"ImJ1Y2tldHMiOlt7ImJ1Y2tldCI6InBob3RvcyIsInBlcm0iOiJybyJ9LHsiYnVja2V0IjoiKiIsInBlcm0iOiJsaXN0In1dfQ."
	"VxTNcUSqG68CkbzCwRExrnmZIb3z4K6CVCqZgewytDs";

static int verify(const char *tok, int64_t now, auth_token_t *t, bool *expired)
{
	buf_t err = BUF_INIT;
	int rc = auth_jwt_verify(tok, strlen(tok), KEY, KLEN, now, t, expired, &err);
	if (rc != AIS_OK)
		ck_assert_ptr_nonnull(err.ptr); /* always a reason */
	buf_free(&err);
	return rc;
}

/* base64url without padding, for building bad tokens */
static void b64u(const unsigned char *in, size_t n, buf_t *out)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
			     (i + 2 < n ? in[i + 2] : 0);
		buf_addch(out, a[v >> 18]);
		buf_addch(out, a[(v >> 12) & 63]);
		if (i + 1 < n)
			buf_addch(out, a[(v >> 6) & 63]);
		if (i + 2 < n)
			buf_addch(out, a[v & 63]);
	}
}

/* A token of the given header and claims JSON, correctly signed under KEY. */
static void mk(const char *hdr, const char *claims, buf_t *out)
{
	char hex[AUTH_SIG_HEX + 1];
	unsigned char raw[32];
	buf_reset(out);
	b64u((const unsigned char *)hdr, strlen(hdr), out);
	buf_addch(out, '.');
	b64u((const unsigned char *)claims, strlen(claims), out);
	auth_hmac_hex(KEY, KLEN, out->ptr, out->len, hex);
	for (int i = 0; i < 32; i++) {
		unsigned x;
		sscanf(hex + 2 * i, "%2x", &x);
		raw[i] = (unsigned char)x;
	}
	buf_addch(out, '.');
	b64u(raw, 32, out);
}

START_TEST(test_perm_words)
{
	unsigned b;
	ck_assert_int_eq(auth_perm_parse(sv_from("ro"), &b), AIS_OK);
	ck_assert_uint_eq(b, AUTH_READ | AUTH_LIST);
	ck_assert_int_eq(auth_perm_parse(sv_from("rw"), &b), AIS_OK);
	ck_assert_uint_eq(b, AUTH_READ | AUTH_WRITE | AUTH_LIST | AUTH_DELETE);
	ck_assert_int_eq(auth_perm_parse(sv_from("admin"), &b), AIS_OK);
	ck_assert_uint_eq(b, AUTH_ALL);
	ck_assert_int_eq(auth_perm_parse(sv_from("read,delete"), &b), AIS_OK);
	ck_assert_uint_eq(b, AUTH_READ | AUTH_DELETE);
	ck_assert_int_eq(auth_perm_parse(sv_from("read+write"), &b), AIS_OK);
	ck_assert_uint_eq(b, AUTH_READ | AUTH_WRITE);
	ck_assert_int_eq(auth_perm_parse(sv_from(""), &b), AIS_ERR);
	ck_assert_int_eq(auth_perm_parse(sv_from("read,"), &b), AIS_ERR);
	ck_assert_int_eq(auth_perm_parse(sv_from("rwx"), &b), AIS_ERR);
	ck_assert_int_eq(auth_perm_parse(sv_from("READ"), &b), AIS_ERR);
	buf_t o = BUF_INIT;
	auth_perm_format(AUTH_RO, &o);
	ck_assert_str_eq(o.ptr, "ro");
	buf_reset(&o);
	auth_perm_format(AUTH_WRITE | AUTH_DELETE, &o);
	ck_assert_str_eq(o.ptr, "write,delete");
	buf_free(&o);
}
END_TEST

START_TEST(test_jwt_vector)
{
	auth_token_t t;
	bool expired = true;
	ck_assert_int_eq(verify(VECTOR, 1900000000, &t, &expired), AIS_OK);
	ck_assert(!expired);
	ck_assert_str_eq(t.user, "alice");
	ck_assert(!t.admin);
	ck_assert_int_eq(t.exp, 2000000000);
	ck_assert_uint_eq(t.nb, 2);
	ck_assert(auth_token_allows(&t, sv_from("photos"), AUTH_READ));
	ck_assert(auth_token_allows(&t, sv_from("photos"), AUTH_RO));
	ck_assert(!auth_token_allows(&t, sv_from("photos"), AUTH_WRITE));
	ck_assert(auth_token_allows(&t, sv_from("other"), AUTH_LIST)); /* "*" list */
	ck_assert(!auth_token_allows(&t, sv_from("other"), AUTH_READ));
	ck_assert(!auth_token_allows(&t, sv_from(""), 0)); /* cluster ops: admins */
	/* expired */
	ck_assert_int_eq(verify(VECTOR, 2000000000, &t, &expired), AIS_ERR);
	ck_assert(expired);
	/* another key */
	buf_t err = BUF_INIT;
	ck_assert_int_eq(auth_jwt_verify(VECTOR, strlen(VECTOR), "x", 1, 0, &t, &expired, &err), AIS_ERR);
	ck_assert(!expired);
	buf_free(&err);
	/* one bit of the signature, the claims, the header */
	char bad[sizeof(VECTOR)];
	size_t pos[] = {strlen(VECTOR) - 2, 60, 5};
	for (size_t i = 0; i < 3; i++) {
		memcpy(bad, VECTOR, sizeof(VECTOR));
		bad[pos[i]] = bad[pos[i]] == 'A' ? 'B' : 'A';
		ck_assert_int_eq(verify(bad, 0, &t, NULL), AIS_ERR);
	}
}
END_TEST

START_TEST(test_jwt_make_roundtrip)
{
	auth_token_t t = {.admin = false, .exp = 5000, .nb = 2}, u;
	snprintf(t.user, sizeof(t.user), "%s", "o\"dd \\ user");
	snprintf(t.b[0].bucket, sizeof(t.b[0].bucket), "b1");
	t.b[0].perm = AUTH_RW;
	snprintf(t.b[1].bucket, sizeof(t.b[1].bucket), "b2");
	t.b[1].perm = AUTH_WRITE | AUTH_ADMIN;
	buf_t tok = BUF_INIT;
	auth_jwt_make(&t, KEY, KLEN, &tok);
	ck_assert_int_eq(verify(tok.ptr, 4999, &u, NULL), AIS_OK);
	ck_assert_str_eq(u.user, t.user);
	ck_assert_uint_eq(u.nb, 2);
	ck_assert_uint_eq(u.b[0].perm, AUTH_RW);
	ck_assert_uint_eq(u.b[1].perm, AUTH_ALL); /* a bucket's admin may do everything on it */
	ck_assert(auth_token_allows(&u, sv_from("b2"), AUTH_ADMIN));
	ck_assert(auth_token_allows(&u, sv_from("b2"), AUTH_READ));
	ck_assert(!auth_token_allows(&u, sv_from("b1"), AUTH_ADMIN));
	ck_assert_int_eq(verify(tok.ptr, 5000, &u, NULL), AIS_ERR);
	t.admin = true;
	t.nb = 0;
	auth_jwt_make(&t, KEY, KLEN, &tok);
	ck_assert_int_eq(verify(tok.ptr, 0, &u, NULL), AIS_ERR); /* the old token text is still there */
	buf_free(&tok);
	auth_jwt_make(&t, KEY, KLEN, &tok);
	ck_assert_int_eq(verify(tok.ptr, 0, &u, NULL), AIS_OK);
	ck_assert(u.admin);
	ck_assert(auth_token_allows(&u, sv_from("anything"), AUTH_ALL));
	ck_assert(auth_token_allows(&u, sv_from(""), AUTH_ALL));
	buf_free(&tok);
}
END_TEST

START_TEST(test_jwt_strict)
{
	static const char *const hdr_ok = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
	static const char *const claims_ok = "{\"username\":\"u\",\"exp\":100}";
	static const struct {
		const char *hdr, *claims;
	} bad[] = {
		{"{\"alg\":\"none\"}", NULL},
		{"{\"alg\":\"HS512\",\"typ\":\"JWT\"}", NULL},
		{"{\"alg\":\"RS256\"}", NULL},
		{"{\"typ\":\"JWT\"}", NULL},
		{"{\"alg\":\"HS256\",\"kid\":\"x\"}", NULL},
		{"{\"alg\":\"HS256\",\"alg\":\"HS256\"}", NULL},
		{"[\"HS256\"]", NULL},
		{NULL, "{\"exp\":100}"},
		{NULL, "{\"username\":\"u\"}"},
		{NULL, "{\"username\":\"\",\"exp\":100}"},
		{NULL, "{\"username\":\"a:b\",\"exp\":100}"},
		{NULL, "{\"username\":7,\"exp\":100}"},
		{NULL, "{\"username\":\"u\",\"exp\":\"100\"}"},
		{NULL, "{\"username\":\"u\",\"exp\":-1}"},
		{NULL, "{\"username\":\"u\",\"exp\":100,\"admin\":1}"},
		{NULL, "{\"username\":\"u\",\"exp\":100,\"role\":\"x\"}"},
		{NULL, "{\"username\":\"u\",\"username\":\"v\",\"exp\":100}"},
		{NULL, "{\"username\":\"u\",\"exp\":100,\"buckets\":{}}"},
		{NULL, "{\"username\":\"u\",\"exp\":100,\"buckets\":[{\"bucket\":\"b\"}]}"},
		{NULL, "{\"username\":\"u\",\"exp\":100,\"buckets\":[{\"bucket\":\"a/b\",\"perm\":\"ro\"}]}"},
		{NULL, "{\"username\":\"u\",\"exp\":100,\"buckets\":[{\"bucket\":\"b\",\"perm\":\"all\"}]}"},
		{NULL, "{\"username\":\"u\",\"exp\":100,\"buckets\":[{\"bucket\":\"b\",\"perm\":\"ro\",\"x\":1}]}"},
		{NULL, "{\"username\":\"u\",\"exp\":100,\"buckets\":[\"b\"]}"},
		{NULL, "not json"},
	};
	buf_t tok = BUF_INIT;
	auth_token_t t;
	mk(hdr_ok, claims_ok, &tok);
	ck_assert_int_eq(verify(tok.ptr, 99, &t, NULL), AIS_OK);
	mk("{\"alg\":\"HS256\"}", claims_ok, &tok);
	ck_assert_int_eq(verify(tok.ptr, 99, &t, NULL), AIS_OK); /* typ optional */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mk(bad[i].hdr ? bad[i].hdr : hdr_ok, bad[i].claims ? bad[i].claims : claims_ok, &tok);
		if (verify(tok.ptr, 99, &t, NULL) != AIS_ERR)
			ck_abort_msg("accepted bad token %zu", i);
	}
	/* shapes: parts, padding, characters, length */
	mk(hdr_ok, claims_ok, &tok);
	char s[512];
	snprintf(s, sizeof(s), "%s=", tok.ptr);
	ck_assert_int_eq(verify(s, 99, &t, NULL), AIS_ERR);
	snprintf(s, sizeof(s), "%s.", tok.ptr);
	ck_assert_int_eq(verify(s, 99, &t, NULL), AIS_ERR);
	snprintf(s, sizeof(s), "%s", tok.ptr);
	*strrchr(s, '.') = '\0';
	ck_assert_int_eq(verify(s, 99, &t, NULL), AIS_ERR);
	snprintf(s, sizeof(s), "%s", tok.ptr);
	s[3] = '+';
	ck_assert_int_eq(verify(s, 99, &t, NULL), AIS_ERR);
	ck_assert_int_eq(verify("", 0, &t, NULL), AIS_ERR);
	ck_assert_int_eq(verify("..", 0, &t, NULL), AIS_ERR);
	char *big = malloc(AUTH_TOKEN_MAX + 2);
	memset(big, 'A', AUTH_TOKEN_MAX + 1);
	big[AUTH_TOKEN_MAX + 1] = '\0';
	ck_assert_int_eq(verify(big, 0, &t, NULL), AIS_ERR);
	free(big);
	buf_free(&tok);
}
END_TEST

/* A relay's signature over the node headers it forwards (auth_fwd_*). */
START_TEST(test_fwd_sig)
{
	char key[] = "kkkkkkkkkkkkkkkkkkkk", h[AUTHZ_HDR_TEST], in[AUTHZ_HDR_TEST];
	sv_t host = sv_from("127.0.0.1:1"), tgt = sv_from("/b/o?x=1"), lines = sv_from("ais-s3-client:10.0.0.1 0\n");
	auth_fwd_sign(key, 20, "GET", host, tgt, lines, 1700000000, "0123456789abcdef", h, sizeof(h));
	ck_assert(auth_fwd_check(key, 20, sv_from(h), "GET", host, tgt, lines, 1700000000));
	ck_assert(auth_fwd_check(key, 20, sv_from(h), "GET", sv_from("127.0.0.1:1"), tgt, lines, 1700000000 + 30));
	ck_assert(!auth_fwd_check(key, 20, sv_from(h), "GET", host, tgt, lines, 1700000000 + AUTH_INTRA_SKEW + 1));
	/* another claim, node, request or key */
	ck_assert(!auth_fwd_check(key, 20, sv_from(h), "GET", host, tgt, sv_from("ais-s3-client:127.0.0.2 0\n"),
				  1700000000));
	ck_assert(!auth_fwd_check(key, 20, sv_from(h), "GET", host, tgt, sv_from(""), 1700000000));
	ck_assert(!auth_fwd_check(key, 20, sv_from(h), "PUT", host, tgt, lines, 1700000000));
	ck_assert(!auth_fwd_check(key, 20, sv_from(h), "GET", sv_from("127.0.0.1:2"), tgt, lines, 1700000000));
	ck_assert(!auth_fwd_check(key, 20, sv_from(h), "GET", host, sv_from("/b/p?x=1"), lines, 1700000000));
	ck_assert(!auth_fwd_check("other-key-000000", 16, sv_from(h), "GET", host, tgt, lines, 1700000000));
	ck_assert(!auth_fwd_check("", 0, sv_from(h), "GET", host, tgt, lines, 1700000000));
	/* neither signature passes for the other */
	ck_assert(!auth_intra_check(key, 20, sv_from(h), "GET", host, tgt, 1700000000, NULL));
	auth_intra_sign(key, 20, "GET", "http://127.0.0.1:1/b/o?x=1", AUTH_BODY_UNSIGNED, 1700000000, "0123456789abcdef",
			in, sizeof(in));
	ck_assert(!auth_fwd_check(key, 20, sv_from(in), "GET", host, tgt, sv_from(""), 1700000000));
}
END_TEST

START_TEST(test_intra_sig)
{
	char key[21], h[AUTHZ_HDR_TEST], body[AUTH_SIG_HEX + 1];
	memset(key, 'k', 20);
	key[20] = '\0';
	const char *url = "http://127.0.0.1:1/v1/metasync?from=g1";
	sv_t host = sv_from("127.0.0.1:1"), tgt = sv_from("/v1/metasync?from=g1");
	auth_intra_val_t v;
	auth_body_digest("{\"x\":1}", 7, body);
	ck_assert_str_eq(body, "5041bf1f713df204784353e82f6a4a535931cb64f1f4b4a5aeaffcb720918b22");
	/* the canonical form, byte for byte */
	buf_t c = BUF_INIT;
	auth_intra_canon(1700000000, sv_from("0123456789abcdef"), "PUT", sv_from("127.0.0.1:1"), tgt, sv_from(body), &c);
	ck_assert_str_eq(c.ptr, "aisd-intra-v2\n1700000000\n0123456789abcdef\nPUT\n127.0.0.1:1\n/v1/metasync?from=g1\n"
				"5041bf1f713df204784353e82f6a4a535931cb64f1f4b4a5aeaffcb720918b22");
	buf_free(&c);
	/* Python: hmac(b"k"*20, that message, sha256) */
	auth_intra_sign(key, 20, "PUT", url, body, 1700000000, "0123456789abcdef", h, sizeof(h));
	ck_assert_str_eq(h, "1700000000.0123456789abcdef.5041bf1f713df204784353e82f6a4a535931cb64f1f4b4a5aeaffcb720918b22."
			    "b359e03ec59ea718d8eaf2add0adbcd6b259b5730c1a404729dc5d96f9d5e1ea");
	ck_assert(auth_intra_check(key, 20, sv_from(h), "PUT", host, tgt, 1700000000, &v));
	ck_assert(v.ts == 1700000000 && sv_eqstr(v.nonce, "0123456789abcdef") && sv_eqstr(v.body, body));
	ck_assert(auth_intra_check(key, 20, sv_from(h), "PUT", sv_from("127.0.0.1:1"), tgt, 1700000000 + AUTH_INTRA_SKEW,
				   NULL));
	ck_assert(!auth_intra_check(key, 20, sv_from(h), "PUT", host, tgt, 1700000000 + AUTH_INTRA_SKEW + 1, NULL));
	ck_assert(!auth_intra_check(key, 20, sv_from(h), "PUT", host, tgt, 1700000000 - AUTH_INTRA_SKEW - 1, NULL));
	ck_assert(!auth_intra_check(key, 20, sv_from(h), "GET", host, tgt, 1700000000, NULL));
	ck_assert(!auth_intra_check(key, 20, sv_from(h), "PUT", sv_from("127.0.0.1:2"), tgt, 1700000000, NULL));
	ck_assert(!auth_intra_check(key, 20, sv_from(h), "PUT", host, sv_from("/v1/metasync?from=t1"), 1700000000, NULL));
	ck_assert(!auth_intra_check("other-key-000000", 16, sv_from(h), "PUT", host, tgt, 1700000000, NULL));
	/* another body digest in the header: the signature no longer matches */
	char h2[AUTHZ_HDR_TEST];
	snprintf(h2, sizeof(h2), "%s", h);
	h2[28] = h2[28] == '0' ? '1' : '0';
	ck_assert(!auth_intra_check(key, 20, sv_from(h2), "PUT", host, tgt, 1700000000, NULL));
	/* the host is compared in lower case; the unsigned body marker */
	auth_intra_sign(key, 20, "GET", "http://Node-A:8080/v1/x", AUTH_BODY_UNSIGNED, 1700000000, "00000000000000ff", h2,
			sizeof(h2));
	ck_assert(auth_intra_check(key, 20, sv_from(h2), "GET", sv_from("node-a:8080"), sv_from("/v1/x"), 1700000000, &v));
	ck_assert(sv_eqstr(v.body, AUTH_BODY_UNSIGNED));
	/* malformed values */
	static const char *const bad[] = {"", "1700000000", "x.abc", "1700000000.0123456789abcdef.-",
					  "1700000000.0123456789ABCDEF.-.00", "1700000000.0123.-.00", "1.2.3.4.5",
					  "1700000000.0123456789abcdef.xyz.00"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert(!auth_intra_check(key, 20, sv_from(bad[i]), "GET", host, tgt, 1700000000, NULL));
	ck_assert(!auth_intra_check(key, 20, (sv_t){NULL, 0}, "GET", host, tgt, 0, NULL));
	/* an empty key verifies nothing, not even a value signed with it */
	auth_intra_sign("", 0, "GET", "http://node-a:8080/v1/x", AUTH_BODY_UNSIGNED, 1700000000, "00000000000000ff", h2,
			sizeof(h2));
	ck_assert(!auth_intra_check("", 0, sv_from(h2), "GET", sv_from("node-a:8080"), sv_from("/v1/x"), 1700000000, NULL));
	h[strlen(h) - 1] ^= 1;
	ck_assert(!auth_intra_check(key, 20, sv_from(h), "PUT", host, tgt, 1700000000, NULL));
	ck_assert(sv_eqstr(auth_url_target("http://h:1"), "/"));
	ck_assert(sv_eqstr(auth_url_target("https://h:1/a?b#c"), "/a?b"));
	ck_assert(sv_eqstr(auth_url_target("/p?q"), "/p?q"));
	ck_assert(sv_eqstr(auth_url_host("https://u@h:1/a?b"), "h:1"));
	ck_assert(sv_eqstr(auth_url_host("http://h:1"), "h:1"));
	ck_assert(sv_eqstr(auth_url_host("/p"), ""));
}
END_TEST

/* verify q (a Location's query) for GET /v1/ml/moss/a at now */
static int rverify(const char *q, int64_t now, auth_token_t *t, char body[AUTH_SIG_HEX + 1])
{
	buf_t err = BUF_INIT;
	int rc = auth_redirect_verify(KEY, KLEN, "GET", sv_from("/v1/ml/moss/a"), sv_from(q), now, t, body, &err);
	if (rc == AIS_ERR)
		ck_assert_ptr_nonnull(err.ptr);
	buf_free(&err);
	return rc;
}

START_TEST(test_redirect_sig)
{
	auth_token_t t, u;
	char body[AUTH_SIG_HEX + 1];
	buf_t q = BUF_INIT, c = BUF_INIT, m = BUF_INIT;
	memset(&t, 0, sizeof(t));
	snprintf(t.user, sizeof(t.user), "al ice");
	t.nb = 2;
	snprintf(t.b[0].bucket, sizeof(t.b[0].bucket), "a");
	t.b[0].perm = AUTH_READ | AUTH_LIST;
	snprintf(t.b[1].bucket, sizeof(t.b[1].bucket), "*");
	t.b[1].perm = AUTH_READ;

	/* the canonical form, and a vector from Python's hmac over it */
	auth_perm_encode(&t, &m);
	ck_assert_str_eq(m.ptr, "a:5,*:1");
	auth_redirect_canon(1700000060, "GET", sv_from("/v1/ml/moss/a"), sv_from("archpath=x"), sv_from("-"),
			    sv_from("al ice"), sv_of(&m), &c);
	ck_assert_str_eq(c.ptr, "aisd-redirect-v2\n1700000060\nGET\n/v1/ml/moss/a\narchpath=x\n-\nal ice\na:5,*:1");
	char hex[AUTH_SIG_HEX + 1];
	auth_hmac_hex("kkkkkkkkkkkkkkkkkkkk", 20, c.ptr, c.len, hex);
	ck_assert_str_eq(hex, "1e01a4377e92d5f242fdad1ef60f22d81c36ffa9bd04e297083f5c6cb51e6306");

	/* an earlier signature in the query is dropped; the rest kept in order */
	auth_redirect_query(KEY, KLEN, "GET", sv_from("/v1/ml/moss/a"), sv_from("archpath=x&ais_rsig=old&y=2"),
			    AUTH_BODY_UNSIGNED, 1700000060, &t, &q);
	ck_assert(!strncmp(q.ptr, "archpath=x&y=2&ais_rexp=1700000060&ais_ruser=al%20ice&ais_rperm=a:5,*:1&ais_rbody=-&ais_rsig=",
			   strlen("archpath=x&y=2&ais_rexp=1700000060&ais_ruser=al%20ice&ais_rperm=a:5,*:1&ais_rbody=-&ais_rsig=")));
	ck_assert_int_eq(rverify(q.ptr, 1700000000, &u, body), AIS_OK);
	ck_assert_str_eq(u.user, "al ice");
	ck_assert(u.exp == 1700000060 && !u.admin && u.nb == 2 && u.b[0].perm == 5 && !strcmp(u.b[1].bucket, "*"));
	ck_assert_str_eq(body, AUTH_BODY_UNSIGNED);
	ck_assert_int_eq(rverify(q.ptr, 1700000061, &u, body), AIS_ERR); /* expired */
	{
		/* the request id a gateway passes on (ais_id) is covered: changed, refused */
		buf_t qi = BUF_INIT;
		auth_redirect_query(KEY, KLEN, "GET", sv_from("/v1/ml/moss/a"), sv_from("ais_id=0a4b46cb-ac"),
				    AUTH_BODY_UNSIGNED, 1700000060, &t, &qi);
		ck_assert_int_eq(rverify(qi.ptr, 1700000000, &u, body), AIS_OK);
		char *p = strstr(qi.ptr, "0a4b46cb-ac");
		ck_assert_ptr_nonnull(p);
		p[0] = '1';
		ck_assert_int_eq(rverify(qi.ptr, 1700000000, &u, body), AIS_ERR);
		buf_free(&qi);
	}
	ck_assert_int_eq(rverify("archpath=x", 0, &u, body), AIS_DONE);  /* not a signed redirect */
	ck_assert_int_eq(rverify("", 0, &u, body), AIS_DONE);
	/* ais_prev: signed for one path under the key; never under an empty key */
	{
		buf_t pv = BUF_INIT;
		uint64_t pr = 0;
		auth_prev_sign(KEY, KLEN, 17, sv_from("/v1/objects/b/o"), &pv);
		ck_assert(!strncmp(pv.ptr, "17.", 3) && pv.len == 3 + AUTH_SIG_HEX);
		ck_assert(auth_prev_check(KEY, KLEN, sv_of(&pv), sv_from("/v1/objects/b/o"), &pr) && pr == 17);
		ck_assert(!auth_prev_check(KEY, KLEN, sv_of(&pv), sv_from("/v1/objects/b/p"), &pr)); /* another object */
		ck_assert(!auth_prev_check(KEY, KLEN, sv_from("17"), sv_from("/v1/objects/b/o"), &pr)); /* bare */
		pv.ptr[0] = '2'; /* another map version */
		ck_assert(!auth_prev_check(KEY, KLEN, sv_of(&pv), sv_from("/v1/objects/b/o"), &pr));
		buf_reset(&pv);
		auth_prev_sign("", 0, 17, sv_from("/v1/objects/b/o"), &pv);
		ck_assert(!auth_prev_check("", 0, sv_of(&pv), sv_from("/v1/objects/b/o"), &pr));
		buf_free(&pv);
	}
	/* signed with an empty key: refused by a verifier without a key */
	{
		buf_t e = BUF_INIT, q0 = BUF_INIT;
		auth_redirect_query("", 0, "GET", sv_from("/v1/ml/moss/a"), sv_from(""), AUTH_BODY_UNSIGNED, 1700000060, &t,
				    &q0);
		ck_assert_int_eq(auth_redirect_verify("", 0, "GET", sv_from("/v1/ml/moss/a"), sv_of(&q0), 1700000000, &u, body,
						      &e),
				 AIS_ERR);
		ck_assert_ptr_nonnull(strstr(e.ptr, "cluster.secret"));
		buf_free(&e);
		buf_free(&q0);
	}

	/* every part is bound: tamper with one at a time */
	static const char *const swaps[][2] = {
		{"archpath=x", "archpath=z"},     {"&y=2", ""},	{"ais_rexp=1700000060", "ais_rexp=1700009999"},
		{"al%20ice", "root"},             {"a:5", "a:31"},	{"a:5,*:1", "@admin"},
		{"ais_rbody=-", "ais_rbody=5041bf1f713df204784353e82f6a4a535931cb64f1f4b4a5aeaffcb720918b22"},
	};
	for (size_t i = 0; i < sizeof(swaps) / sizeof(swaps[0]); i++) {
		buf_t x = BUF_INIT;
		const char *at = strstr(q.ptr, swaps[i][0]);
		ck_assert_ptr_nonnull(at);
		buf_add(&x, q.ptr, (size_t)(at - q.ptr));
		buf_addstr(&x, swaps[i][1]);
		buf_addstr(&x, at + strlen(swaps[i][0]));
		ck_assert_msg(rverify(x.ptr, 1700000000, &u, body) == AIS_ERR, "swap %zu accepted", i);
		buf_free(&x);
	}
	/* another method or path */
	buf_t err = BUF_INIT;
	ck_assert_int_eq(auth_redirect_verify(KEY, KLEN, "PUT", sv_from("/v1/ml/moss/a"), sv_of(&q), 0, &u, body, &err),
			 AIS_ERR);
	ck_assert_int_eq(auth_redirect_verify(KEY, KLEN, "GET", sv_from("/v1/ml/moss/b"), sv_of(&q), 0, &u, body, &err),
			 AIS_ERR);
	buf_free(&err);
	/* the routing parameters (ais_hop, ais_prev: targets add them on) are
	 * outside the signature */
	buf_t r = BUF_INIT;
	buf_addf(&r, "%s&ais_hop=1&ais_prev=7", q.ptr);
	ck_assert_int_eq(rverify(r.ptr, 1700000000, &u, body), AIS_OK);
	buf_free(&r);
	/* a parameter twice, or missing */
	buf_t x = BUF_INIT;
	buf_addf(&x, "%s&ais_ruser=root", q.ptr);
	ck_assert_int_eq(rverify(x.ptr, 0, &u, body), AIS_ERR);
	ck_assert_int_eq(rverify("ais_rexp=1", 0, &u, body), AIS_ERR);
	buf_free(&x);

	/* an administrator's and a monitor's */
	memset(&t, 0, sizeof(t));
	snprintf(t.user, sizeof(t.user), "root");
	t.admin = t.monitor = true;
	buf_reset(&q);
	auth_redirect_query(KEY, KLEN, "GET", sv_from("/v1/ml/moss/a"), sv_from(""),
			    "5041bf1f713df204784353e82f6a4a535931cb64f1f4b4a5aeaffcb720918b22", 1700000060, &t, &q);
	ck_assert_int_eq(rverify(q.ptr, 0, &u, body), AIS_OK);
	ck_assert(u.admin && u.monitor && u.nb == 0);
	ck_assert_str_eq(body, "5041bf1f713df204784353e82f6a4a535931cb64f1f4b4a5aeaffcb720918b22");
	ck_assert_int_eq(auth_perm_decode(sv_from("a:0"), &u), AIS_ERR);
	ck_assert_int_eq(auth_perm_decode(sv_from("a:32"), &u), AIS_ERR);
	ck_assert_int_eq(auth_perm_decode(sv_from("bad/name:1"), &u), AIS_ERR);
	ck_assert_int_eq(auth_perm_decode(sv_from("a"), &u), AIS_ERR);
	ck_assert_int_eq(auth_perm_decode(sv_from(""), &u), AIS_OK);
	buf_free(&q);
	buf_free(&c);
	buf_free(&m);
}
END_TEST

START_TEST(test_grants)
{
	char g[4][256] = {"alice:photos:ro", "alice:logs:write", "bob:*:rw", "root:*:admin"};
	sv_t u, b;
	unsigned p;
	buf_t err = BUF_INIT;
	ck_assert(auth_grants_allow(g, 4, sv_from("alice"), sv_from("photos"), AUTH_READ));
	ck_assert(!auth_grants_allow(g, 4, sv_from("alice"), sv_from("photos"), AUTH_WRITE));
	ck_assert(auth_grants_allow(g, 4, sv_from("alice"), sv_from("logs"), AUTH_WRITE));
	ck_assert(!auth_grants_allow(g, 4, sv_from("alice"), sv_from("other"), AUTH_READ));
	ck_assert(!auth_grants_allow(g, 4, sv_from("alice"), sv_from(""), AUTH_ALL));
	ck_assert(auth_grants_allow(g, 4, sv_from("bob"), sv_from("any"), AUTH_RW));
	ck_assert(!auth_grants_allow(g, 4, sv_from("bob"), sv_from("any"), AUTH_ADMIN));
	ck_assert(!auth_grants_allow(g, 4, sv_from("bob"), sv_from(""), AUTH_ALL));
	ck_assert(auth_grants_allow(g, 4, sv_from("root"), sv_from(""), AUTH_ALL));
	ck_assert(!auth_grants_allow(g, 4, sv_from("carol"), sv_from("photos"), AUTH_READ));
	ck_assert(!auth_grants_allow(g, 4, sv_from("alic"), sv_from("photos"), AUTH_READ));
	ck_assert_int_eq(auth_grant_split("a:b:ro", &u, &b, &p, &err), AIS_OK);
	ck_assert_int_eq(auth_grant_split("a:b", &u, &b, &p, &err), AIS_ERR);
	ck_assert_int_eq(auth_grant_split(":b:ro", &u, &b, &p, &err), AIS_ERR);
	ck_assert_int_eq(auth_grant_split("a:b/c:ro", &u, &b, &p, &err), AIS_ERR);
	ck_assert_int_eq(auth_grant_split("a:b:rwx", &u, &b, &p, &err), AIS_ERR);
	ck_assert_int_eq(auth_grant_split("a b:b:ro", &u, &b, &p, &err), AIS_ERR);
	buf_free(&err);
}
END_TEST

/* The auth keys as the config parser and validator see them. */
START_TEST(test_conf_rules)
{
	conf_t *c = calloc(1, sizeof(*c));
	buf_t err = BUF_INIT;
	conf_defaults(c);
	ck_assert(!c->auth_enabled);
	ck_assert_int_eq(conf_set(c, "store.mountpaths", "/tmp/x", &err), AIS_OK);
	ck_assert_int_eq(conf_set(c, "auth.enabled", "on", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(c, &err), AIS_ERR); /* no auth.secret */
	buf_reset(&err);
	ck_assert_int_eq(conf_set(c, "auth.secret", "short", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(c, &err), AIS_ERR); /* < 16 bytes */
	buf_reset(&err);
	ck_assert_int_eq(conf_set(c, "auth.secret", "0123456789abcdef", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(c, &err), AIS_ERR); /* a lone target too needs cluster.secret */
	ck_assert_ptr_nonnull(strstr(err.ptr, "cluster.secret"));
	buf_reset(&err);
	ck_assert_int_eq(conf_set(c, "cluster.join", "http://127.0.0.1:1", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(c, &err), AIS_ERR); /* in a cluster: cluster.secret */
	buf_reset(&err);
	ck_assert_int_eq(conf_set(c, "cluster.secret", "fedcba9876543210", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(c, &err), AIS_OK);
	ck_assert_int_eq(conf_set(c, "auth.grant", "alice:b1:ro", &err), AIS_OK);
	ck_assert_int_eq(conf_set(c, "auth.grant", "bob:*:admin", &err), AIS_OK);
	ck_assert_int_eq(c->n_auth_grants, 2);
	ck_assert_int_eq(conf_set(c, "auth.grant", "bob:b1:rwx", &err), AIS_ERR);
	buf_reset(&err);
	ck_assert_int_eq(conf_set(c, "auth.grant", "nobucket", &err), AIS_ERR);
	buf_reset(&err);
	ck_assert_int_eq(conf_set(c, "auth.grant", "", &err), AIS_OK);
	ck_assert_int_eq(c->n_auth_grants, 0);
	/* a missing secret file is an error naming it */
	ck_assert_int_eq(conf_set(c, "auth.secret_file", "/nonexistent/aisd-secret", &err), AIS_OK);
	ck_assert_int_eq(conf_load_secrets(c, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "/nonexistent/aisd-secret"));
	buf_free(&err);
	free(c);
}
END_TEST

/* The one decision (authz_decide) over declared resources: rules 1-5 of
 * authz.h, deny winning over every allow and every undecided resource. */
START_TEST(test_decide)
{
	conf_t *c = calloc(1, sizeof(*c));
	buf_t err = BUF_INIT;
	size_t bad;
	conf_defaults(c);
	ck_assert_int_eq(conf_set(c, "auth.grant", "alice:b1:ro", &err), AIS_OK);
	ck_assert_int_eq(conf_set(c, "auth.grant", "root:*:admin", &err), AIS_OK);
	c->auth_enabled = true;
	authz_init(c);

	authz_who_t alice = {.kind = AUTHZ_USER, .user = SV("alice")}, anon = {.kind = AUTHZ_ANON};
	authz_who_t root = {.kind = AUTHZ_USER, .user = SV("root")}, peer = {.kind = AUTHZ_PEER};
	/* a copy into a public-read-write bucket: the destination allowed by
	 * its ACL, the source (private) refused: the request is refused */
	authz_res_t cp[2] = {
		{.bucket = SV("pub"), .perm = AUTH_WRITE, .acl = S3ACL_WRITE, .acl_have = S3ACL_READ | S3ACL_WRITE},
		{.bucket = SV("c"), .object = SV("z"), .perm = AUTH_READ, .acl = S3ACL_READ, .acl_have = 0},
	};
	ck_assert_int_eq(authz_decide(&anon, cp, 2, &bad), AUTHZ_DENY);
	ck_assert_uint_eq(bad, 1);
	ck_assert_int_eq(authz_decide(&alice, cp, 2, &bad), AUTHZ_DENY);
	ck_assert_uint_eq(bad, 1);
	ck_assert_int_eq(authz_decide(&root, cp, 2, &bad), AUTHZ_ALLOW);
	ck_assert_int_eq(authz_decide(&peer, cp, 2, &bad), AUTHZ_ALLOW);
	/* the source's object ACL not read yet: undecided, unless its grant
	 * decides; a refused resource wins over an undecided one */
	cp[1].acl_later = true;
	ck_assert_int_eq(authz_decide(&anon, cp, 2, &bad), AUTHZ_LATER);
	ck_assert_uint_eq(bad, 1);
	cp[1].bucket = SV("b1");
	authz_res_t src_ok = cp[1];
	ck_assert_int_eq(authz_decide(&alice, &src_ok, 1, &bad), AUTHZ_ALLOW); /* alice:b1:ro */
	cp[0].acl_have = S3ACL_READ;
	ck_assert_int_eq(authz_decide(&anon, cp, 2, &bad), AUTHZ_DENY);
	ck_assert_uint_eq(bad, 0);
	/* grants: the bucket's permission, never more */
	authz_res_t w = {.bucket = SV("b1"), .perm = AUTH_WRITE};
	ck_assert_int_eq(authz_decide(&alice, &w, 1, &bad), AUTHZ_DENY);
	/* cluster administration: no ACL grants it */
	authz_res_t be = {.bucket = SV("b1"), .perm = AUTHZ_CLUSTER, .acl = S3ACL_FULL, .acl_have = S3ACL_FULL};
	ck_assert_int_eq(authz_decide(&alice, &be, 1, &bad), AUTHZ_DENY);
	ck_assert_int_eq(authz_decide(&anon, &be, 1, &bad), AUTHZ_DENY);
	ck_assert_int_eq(authz_decide(&root, &be, 1, &bad), AUTHZ_ALLOW);
	/* a token: its buckets, admin, monitor */
	auth_token_t tok = {.user = "t", .nb = 1};
	snprintf(tok.b[0].bucket, sizeof(tok.b[0].bucket), "b1");
	tok.b[0].perm = AUTH_ALL;
	authz_who_t tw = {.kind = AUTHZ_TOKEN, .tok = &tok};
	authz_res_t adm = {.bucket = SV("b1"), .perm = AUTH_ADMIN}, mon = {.perm = AUTHZ_MONITOR};
	ck_assert_int_eq(authz_decide(&tw, &adm, 1, &bad), AUTHZ_ALLOW);
	ck_assert_int_eq(authz_decide(&tw, &be, 1, &bad), AUTHZ_DENY); /* bucket admin, not cluster admin */
	ck_assert_int_eq(authz_decide(&tw, &mon, 1, &bad), AUTHZ_DENY);
	tok.monitor = true;
	ck_assert_int_eq(authz_decide(&tw, &mon, 1, &bad), AUTHZ_ALLOW);
	tok.admin = true;
	ck_assert_int_eq(authz_decide(&tw, &be, 1, &bad), AUTHZ_ALLOW);
	ck_assert_int_eq(authz_decide(&tw, NULL, 0, &bad), AUTHZ_ALLOW); /* nothing declared: any principal */
	buf_t why = BUF_INIT;
	authz_why(&alice, &cp[1], &why);
	ck_assert_ptr_nonnull(strstr(why.ptr, "alice"));
	buf_free(&why);

	/* auth off: ACLs only, anonymous still without permissions of its own */
	c->auth_enabled = false;
	authz_init(c);
	cp[0].acl_have = S3ACL_WRITE;
	cp[1].acl_later = false;
	ck_assert_int_eq(authz_decide(&anon, cp, 2, &bad), AUTHZ_DENY);
	ck_assert_int_eq(authz_decide(&alice, cp, 2, &bad), AUTHZ_DENY);
	ck_assert_int_eq(authz_decide(&alice, &be, 1, &bad), AUTHZ_ALLOW);
	ck_assert_int_eq(authz_decide(&anon, &be, 1, &bad), AUTHZ_DENY);
	ck_assert_int_eq(authz_decide(&alice, &w, 1, &bad), AUTHZ_ALLOW); /* no ACL asks */
	buf_free(&err);
	free(c);
}
END_TEST

/* A bucket's access property (rule 1a): an explicit deny whatever the
 * principal, auth on or off; peers exempt; the message names it. */
START_TEST(test_decide_access)
{
	conf_t *c = calloc(1, sizeof(*c));
	buf_t err = BUF_INIT, why = BUF_INIT;
	size_t bad;
	conf_defaults(c);
	ck_assert_int_eq(conf_set(c, "auth.grant", "root:*:admin", &err), AIS_OK);
	const unsigned ro = BMD_ACCESS_GET | BMD_ACCESS_HEAD | BMD_ACCESS_LIST;
	auth_token_t tok = {.user = "adm", .admin = true};
	authz_who_t root = {.kind = AUTHZ_USER, .user = SV("root")}, peer = {.kind = AUTHZ_PEER};
	authz_who_t tw = {.kind = AUTHZ_TOKEN, .tok = &tok}, open = {.kind = AUTHZ_OPEN};
	for (int on = 0; on < 2; on++) {
		c->auth_enabled = on;
		authz_init(c);
		authz_res_t put = {.bucket = SV("b"), .object = SV("o"), .perm = AUTH_WRITE, .op = BMD_ACCESS_PUT,
				   .access = ro, .acl = S3ACL_WRITE, .acl_have = S3ACL_FULL};
		authz_res_t get = {.bucket = SV("b"), .object = SV("o"), .perm = AUTH_READ, .op = BMD_ACCESS_GET,
				   .access = ro};
		ck_assert_int_eq(authz_decide(&root, &put, 1, &bad), AUTHZ_DENY); /* no grant, no ACL opens it */
		ck_assert_int_eq(authz_decide(&tw, &put, 1, &bad), AUTHZ_DENY);   /* an admin token neither */
		ck_assert_int_eq(authz_decide(&peer, &put, 1, &bad), AUTHZ_ALLOW); /* rebalance, replication */
		ck_assert_int_eq(authz_decide(&root, &get, 1, &bad), AUTHZ_ALLOW);
		ck_assert_int_eq(authz_decide(&tw, &get, 1, &bad), AUTHZ_ALLOW);
		if (!on) {
			ck_assert_int_eq(authz_decide(&open, &put, 1, &bad), AUTHZ_DENY);
			ck_assert_int_eq(authz_decide(&open, &get, 1, &bad), AUTHZ_ALLOW);
		}
		/* deny wins: a copy whose source bucket lacks GET, into a writable one */
		authz_res_t cp[2] = {{.bucket = SV("d"), .perm = AUTH_WRITE, .op = BMD_ACCESS_PUT, .access = BMD_ACCESS_ALL},
				     {.bucket = SV("s"), .object = SV("x"), .perm = AUTH_READ, .op = BMD_ACCESS_GET,
				      .access = BMD_ACCESS_HEAD, .role = "the copy source"}};
		ck_assert_int_eq(authz_decide(&root, cp, 2, &bad), AUTHZ_DENY);
		ck_assert_uint_eq(bad, 1);
		/* an object ACL not read yet does not defer an access deny */
		get.access = BMD_ACCESS_HEAD;
		get.acl = S3ACL_READ;
		get.acl_later = true;
		ck_assert_int_eq(authz_decide(&root, &get, 1, &bad), AUTHZ_DENY);
		/* no op declared (a set-bprops of only "access"): not refused by it */
		authz_res_t unlock = {.bucket = SV("b"), .perm = AUTH_ADMIN, .access = 0};
		ck_assert_int_eq(authz_decide(&tw, &unlock, 1, &bad), AUTHZ_ALLOW);
		unlock.op = BMD_ACCESS_PATCH;
		ck_assert_int_eq(authz_decide(&tw, &unlock, 1, &bad), AUTHZ_DENY);
	}
	/* the message: the bucket, the operation, its access property */
	authz_res_t put = {.bucket = SV("b"), .perm = AUTH_WRITE, .op = BMD_ACCESS_PUT, .access = BMD_ACCESS_GET |
							 BMD_ACCESS_HEAD | BMD_ACCESS_LIST};
	authz_why(&tw, &put, &why);
	ck_assert_str_eq(why.ptr, "bucket ais://b does not allow PUT (access=ro)");
	buf_reset(&why);
	put.op = BMD_ACCESS_LIST, put.access = BMD_ACCESS_GET | BMD_ACCESS_HEAD;
	authz_why(&open, &put, &why);
	ck_assert_str_eq(why.ptr, "bucket ais://b does not allow LIST (access=get,head)");
	buf_reset(&why);
	put.op = BMD_ACCESS_DESTROY, put.access = BMD_ACCESS_ALL & ~(unsigned)BMD_ACCESS_DESTROY;
	authz_why(&root, &put, &why);
	ck_assert_str_eq(why.ptr, "bucket ais://b does not allow DESTROY (access=get,head,put,delete,list,patch)");
	buf_reset(&why);
	put.op = BMD_ACCESS_PATCH, put.access = 0;
	authz_why(&root, &put, &why);
	ck_assert_str_eq(why.ptr, "bucket ais://b does not allow PATCH (access=0)");
	/* without a lookup (no cluster), nothing is refused by it */
	authz_set_access_lookup(NULL, NULL);
	put.access = 0;
	authz_access_fill(&put, 1);
	ck_assert_uint_eq(put.access, BMD_ACCESS_ALL);
	buf_free(&why);
	buf_free(&err);
	free(c);
}
END_TEST

static Suite *auth_suite(void)
{
	Suite *s = suite_create("auth");
	TCase *tc = tcase_create("auth");
	tcase_add_test(tc, test_perm_words);
	tcase_add_test(tc, test_jwt_vector);
	tcase_add_test(tc, test_jwt_make_roundtrip);
	tcase_add_test(tc, test_jwt_strict);
	tcase_add_test(tc, test_intra_sig);
	tcase_add_test(tc, test_fwd_sig);
	tcase_add_test(tc, test_redirect_sig);
	tcase_add_test(tc, test_grants);
	tcase_add_test(tc, test_conf_rules);
	tcase_add_test(tc, test_decide);
	tcase_add_test(tc, test_decide_access);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(auth_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
