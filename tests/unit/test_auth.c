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
#include "aisd/conf.h"
#include "aisd/status.h"
#include "aisd/banned.h"

#define KEY "0123456789abcdef-secret"
#define KLEN (sizeof(KEY) - 1)
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

START_TEST(test_intra_sig)
{
	char key[21], h[200];
	memset(key, 'k', 20);
	key[20] = '\0';
	sv_t tgt = sv_from("/v1/objects/b/o?x=1");
	/* Python: hmac(b"k"*20, b"aisd-intra\n1700000000\nGET\n/v1/objects/b/o?x=1") */
	auth_intra_sign(key, 20, "GET", "http://127.0.0.1:1/v1/objects/b/o?x=1", 1700000000, h, sizeof(h));
	ck_assert_str_eq(h, "1700000000.1c2fe4f9cb4673bafdbd152bac2a6843b4c389228d7ba475ab1cfda7e5653f08");
	ck_assert(auth_intra_check(key, 20, sv_from(h), "GET", tgt, 1700000000));
	ck_assert(auth_intra_check(key, 20, sv_from(h), "GET", tgt, 1700000000 + AUTH_INTRA_SKEW));
	ck_assert(!auth_intra_check(key, 20, sv_from(h), "GET", tgt, 1700000000 + AUTH_INTRA_SKEW + 1));
	ck_assert(!auth_intra_check(key, 20, sv_from(h), "GET", tgt, 1700000000 - AUTH_INTRA_SKEW - 1));
	ck_assert(!auth_intra_check(key, 20, sv_from(h), "PUT", tgt, 1700000000));
	ck_assert(!auth_intra_check(key, 20, sv_from(h), "GET", sv_from("/v1/objects/b/o"), 1700000000));
	ck_assert(!auth_intra_check("other-key-000000", 16, sv_from(h), "GET", tgt, 1700000000));
	ck_assert(!auth_intra_check(key, 20, sv_from("1700000000"), "GET", tgt, 1700000000));
	ck_assert(!auth_intra_check(key, 20, sv_from("x.abc"), "GET", tgt, 0));
	ck_assert(!auth_intra_check(key, 20, (sv_t){NULL, 0}, "GET", tgt, 0));
	h[strlen(h) - 1] ^= 1;
	ck_assert(!auth_intra_check(key, 20, sv_from(h), "GET", tgt, 1700000000));
	ck_assert(sv_eqstr(auth_url_target("http://h:1"), "/"));
	ck_assert(sv_eqstr(auth_url_target("https://h:1/a?b#c"), "/a?b"));
	ck_assert(sv_eqstr(auth_url_target("/p?q"), "/p?q"));
}
END_TEST

START_TEST(test_redirect_sig)
{
	char a[AUTH_SIG_HEX + 1], b[AUTH_SIG_HEX + 1];
	auth_redirect_sig(KEY, KLEN, "GET", sv_from("/v1/objects/b/o"), 100, a);
	auth_redirect_sig(KEY, KLEN, "GET", sv_from("/v1/objects/b/o"), 100, b);
	ck_assert(auth_sig_eq(sv_from(b), a));
	auth_redirect_sig(KEY, KLEN, "PUT", sv_from("/v1/objects/b/o"), 100, b);
	ck_assert(!auth_sig_eq(sv_from(b), a));
	auth_redirect_sig(KEY, KLEN, "GET", sv_from("/v1/objects/b/o2"), 100, b);
	ck_assert(!auth_sig_eq(sv_from(b), a));
	auth_redirect_sig(KEY, KLEN, "GET", sv_from("/v1/objects/b/o"), 101, b);
	ck_assert(!auth_sig_eq(sv_from(b), a));
	ck_assert(!auth_sig_eq((sv_t){a, 63}, a));
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
	ck_assert_int_eq(conf_validate(c, &err), AIS_OK); /* a standalone target */
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

static Suite *auth_suite(void)
{
	Suite *s = suite_create("auth");
	TCase *tc = tcase_create("auth");
	tcase_add_test(tc, test_perm_words);
	tcase_add_test(tc, test_jwt_vector);
	tcase_add_test(tc, test_jwt_make_roundtrip);
	tcase_add_test(tc, test_jwt_strict);
	tcase_add_test(tc, test_intra_sig);
	tcase_add_test(tc, test_redirect_sig);
	tcase_add_test(tc, test_grants);
	tcase_add_test(tc, test_conf_rules);
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
