/*
 * test_s3post.c - S3 browser POST forms (s3post.h): the multipart/form-data
 * parser (fields, the file's bytes exactly, in every split, bytes that look
 * like a boundary, quoted names, Content-Type boundaries, refusals: no
 * boundary, a nameless part, two files, fields over the limit, a form cut
 * short, no file); the POST policy's conditions (exact match, eq,
 * starts-with, content-length-range, bucket, extra fields, expiration,
 * malformed documents); the signatures (SigV4 with the signing key, SigV2,
 * a wrong one, an unknown key, anonymous, auth off).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/arena.h"
#include "aisd/s3post.h"
#include "aisd/status.h"
#include "../../src/s3auth/s3_int.h"
#include "aisd/banned.h"

#define CT "multipart/form-data; boundary=\"b0\""

struct got {
	buf_t file;
	int rc;      /* the last feed's, or the finish's */
	int file_at; /* feeds that returned S3_FORM_FILE */
};

static int sink(void *arg, const char *p, size_t n)
{
	buf_add(&((struct got *)arg)->file, p, n);
	return AIS_OK;
}

/* Parses body in pieces of step bytes; the finish's result when no feed failed. */
static int parse(arena_t *a, s3_form_t *f, const char *body, size_t n, size_t step, struct got *g)
{
	memset(g, 0, sizeof(*g));
	ck_assert_int_eq(s3_form_init(f, a, SV(CT)), AIS_OK);
	for (size_t off = 0; off < n;) {
		size_t k = n - off < step ? n - off : step, used;
		g->rc = s3_form_feed(f, body + off, k, &used, sink, g);
		if (g->rc == S3_FORM_ERR)
			return S3_FORM_ERR;
		if (g->rc == S3_FORM_FILE)
			g->file_at++;
		off += used;
	}
	return g->rc = s3_form_finish(f);
}

static const char form[] = "preamble\r\n--b0\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nup/${filename}\r\n"
			   "--b0\r\ncontent-disposition: form-data; name=\"x-amz-meta-a\"\r\n\r\nline1\r\nline2\r\n"
			   "--b0\r\nContent-Disposition: form-data; name=\"file\"; filename=\"C:\\\\dir\\\\a \\\"q\\\".txt\"\r\n"
			   "Content-Type: text/plain\r\n\r\n"
			   "data\r\n--b\r\r\n--b1\r\nend\r\n--b0  \r\nContent-Disposition: form-data; name=\"after\"\r\n\r\nz\r\n"
			   "--b0--\r\nepilogue";

START_TEST(test_form_every_split)
{
	for (size_t step = 1; step <= sizeof(form); step++) {
		arena_t *a = arena_new(4096);
		s3_form_t f;
		struct got g;
		ck_assert_int_eq(parse(a, &f, form, sizeof(form) - 1, step, &g), AIS_OK);
		ck_assert_int_eq(g.file_at, 1);
		ck_assert_uint_eq(f.nfields, 2); /* a field after the file is not kept */
		ck_assert_str_eq(s3_form_get(&f, "KEY", NULL), "up/${filename}");
		size_t l;
		ck_assert_str_eq(s3_form_get(&f, "x-amz-meta-a", &l), "line1\r\nline2");
		ck_assert_uint_eq(l, 12);
		ck_assert_ptr_null(s3_form_get(&f, "after", NULL));
		ck_assert_str_eq(f.filename, "C:\\dir\\a \"q\".txt");
		ck_assert_str_eq(f.file_ctype, "text/plain");
		static const char want[] = "data\r\n--b\r\r\n--b1\r\nend";
		ck_assert_uint_eq(g.file.len, sizeof(want) - 1);
		ck_assert_int_eq(memcmp(g.file.ptr, want, sizeof(want) - 1), 0);
		ck_assert_uint_eq(f.file_len, sizeof(want) - 1);
		buf_free(&g.file);
		arena_destroy(a);
	}
}
END_TEST

START_TEST(test_form_refusals)
{
	static const struct {
		const char *body, *word;
		int rc;
	} bad[] = {
		{"--b0\r\nContent-Disposition: form-data\r\n\r\nv\r\n--b0--", "field name", S3_FORM_ERR},
		{"--b0\r\nContent-Type: text/plain\r\n\r\nv\r\n--b0--", "field name", S3_FORM_ERR},
		{"--b0\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nv\r\n--b0--", "form-data", S3_FORM_ERR},
		{"--b0\r\nno colon\r\n\r\nv\r\n--b0--", "colon", S3_FORM_ERR},
		{"--b0X\r\n", "boundary", S3_FORM_ERR},
		{"--b0\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nv\r\n--b0\r\n"
		 "Content-Disposition: form-data; name=\"file\"\r\n\r\nw\r\n--b0--", "more than one file", S3_FORM_ERR},
		{"--b0\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--b0--", "exactly one file", AIS_ERR},
		{"--b0\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nv\r\n--b", "closing boundary", AIS_ERR},
		{"garbage without any boundary", "exactly one file", AIS_ERR},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (size_t step = 1; step <= strlen(bad[i].body); step += 3) {
			arena_t *a = arena_new(4096);
			s3_form_t f;
			struct got g;
			int rc = parse(a, &f, bad[i].body, strlen(bad[i].body), step, &g);
			ck_assert_msg(rc == bad[i].rc, "case %zu step %zu: rc %d", i, step, rc);
			ck_assert_msg(strstr(f.err, bad[i].word), "case %zu: '%s' lacks '%s'", i, f.err, bad[i].word);
			buf_free(&g.file);
			arena_destroy(a);
		}
	}
	/* Content-Type without a usable boundary */
	arena_t *a = arena_new(4096);
	s3_form_t f;
	ck_assert_int_eq(s3_form_init(&f, a, SV("multipart/form-data")), AIS_ERR);
	ck_assert_int_eq(s3_form_init(&f, a, SV("text/plain; boundary=x")), AIS_ERR);
	ck_assert_int_eq(s3_form_init(&f, a, SV("multipart/form-data; boundary=")), AIS_ERR);
	ck_assert_int_eq(s3_form_init(&f, a, SV("multipart/form-data; charset=x; boundary=abc")), AIS_OK);
	arena_destroy(a);
}
END_TEST

START_TEST(test_form_limits)
{
	/* fields before the file over S3_FORM_HEAD_MAX: refused, memory bounded */
	buf_t b = BUF_INIT;
	buf_addstr(&b, "--b0\r\nContent-Disposition: form-data; name=\"pad\"\r\n\r\n");
	for (size_t i = 0; i < S3_FORM_HEAD_MAX + 10; i++)
		buf_add(&b, "p", 1);
	arena_t *a = arena_new(4096);
	s3_form_t f;
	struct got g;
	ck_assert_int_eq(parse(a, &f, b.ptr, b.len, 4096, &g), S3_FORM_ERR);
	ck_assert_ptr_nonnull(strstr(f.err, "limit"));
	ck_assert_uint_le(f.cur.len, S3_FORM_HEAD_MAX);
	arena_destroy(a);
	/* too many fields */
	buf_reset(&b);
	for (int i = 0; i <= S3_FORM_FIELDS; i++)
		buf_addf(&b, "--b0\r\nContent-Disposition: form-data; name=\"f%d\"\r\n\r\nv\r\n", i);
	buf_addstr(&b, "--b0--\r\n");
	a = arena_new(4096);
	ck_assert_int_eq(parse(a, &f, b.ptr, b.len, 100, &g), S3_FORM_ERR);
	ck_assert_ptr_nonnull(strstr(f.err, "too many"));
	arena_destroy(a);
	/* a part's headers without an end */
	buf_reset(&b);
	buf_addstr(&b, "--b0\r\n");
	for (int i = 0; i < 2000; i++)
		buf_addstr(&b, "X-Pad: 1234567\r\n");
	a = arena_new(4096);
	ck_assert_int_eq(parse(a, &f, b.ptr, b.len, 1000, &g), S3_FORM_ERR);
	arena_destroy(a);
	buf_free(&b);
}
END_TEST

/* --- the policy ---------------------------------------------------------------------- */

#define NOW 1800000000 /* 2027-01-15T08:00:00Z */

/* A form of the given "name=value" fields (policy: the base64 of doc). */
static void form_of(arena_t *a, s3_form_t *f, const char *doc, const char *const *kv)
{
	memset(f, 0, sizeof(*f));
	size_t n = 0;
	if (doc) {
		char *b64 = arena_alloc(a, strlen(doc) * 2 + 8);
		s3_b64_encode((const unsigned char *)doc, strlen(doc), b64);
		f->fields[n++] = (s3_form_field_t){arena_strndup(a, "policy", 6), b64, strlen(b64)};
	}
	for (; kv && *kv; kv++) {
		const char *eq = strchr(*kv, '=');
		f->fields[n++] = (s3_form_field_t){arena_strndup(a, *kv, (size_t)(eq - *kv)), (char *)eq + 1, strlen(eq + 1)};
	}
	f->nfields = n;
}

static int check(const char *doc, const char *const *kv, const char *key, s3_autherr_t *e, uint64_t *lo, uint64_t *hi)
{
	arena_t *a = arena_new(4096);
	s3_form_t f;
	uint64_t l, h;
	memset(e, 0, sizeof(*e));
	form_of(a, &f, doc, kv);
	int rc = s3_post_policy_check(a, &f, SV("bck"), sv_from(key), NOW, lo ? lo : &l, hi ? hi : &h, e);
	arena_destroy(a);
	return rc;
}

#define EXP "\"expiration\":\"2030-01-01T00:00:00.000Z\""

START_TEST(test_policy_conditions)
{
	s3_autherr_t e;
	uint64_t lo, hi;
	static const char *const kv[] = {"key=user/a.txt", "Content-Type=image/png", "x-amz-meta-tag=v1", NULL};
	const char *ok = "{" EXP ",\"conditions\":[{\"bucket\":\"bck\"},[\"starts-with\",\"$key\",\"user/\"],"
			 "[\"eq\",\"$Content-Type\",\"image/png\"],{\"x-amz-meta-tag\":\"v1\"},[\"content-length-range\",1,\"100\"]]}";
	ck_assert_int_eq(check(ok, kv, "user/a.txt", &e, &lo, &hi), AIS_OK);
	ck_assert_uint_eq(lo, 1);
	ck_assert_uint_eq(hi, 100);
	/* starts-with "" allows any value, the field's absence too (not eq "", nor another prefix) */
	const char *any = "{" EXP ",\"conditions\":[[\"starts-with\",\"$key\",\"\"],[\"eq\",\"$Content-Type\",\"image/png\"],"
			  "{\"x-amz-meta-tag\":\"v1\"},[\"starts-with\",\"$x-amz-server-side-encryption\",\"\"]]}";
	ck_assert_int_eq(check(any, kv, "user/a.txt", &e, NULL, NULL), AIS_OK);

	static const struct {
		const char *doc, *key, *code, *word;
		int status;
	} bad[] = {
		{"{" EXP ",\"conditions\":[{\"bucket\":\"other\"},[\"starts-with\",\"$key\",\"\"],[\"eq\",\"$Content-Type\",\"image/png\"],{\"x-amz-meta-tag\":\"v1\"}]}",
		 "user/a.txt", "AccessDenied", "Condition failed", 403},
		{"{" EXP ",\"conditions\":[[\"starts-with\",\"$key\",\"admin/\"],[\"eq\",\"$Content-Type\",\"image/png\"],{\"x-amz-meta-tag\":\"v1\"}]}",
		 "user/a.txt", "AccessDenied", "Condition failed", 403},
		{"{" EXP ",\"conditions\":[[\"starts-with\",\"$key\",\"\"],[\"eq\",\"$Content-Type\",\"image/jpeg\"],{\"x-amz-meta-tag\":\"v1\"}]}",
		 "user/a.txt", "AccessDenied", "Condition failed", 403},
		{"{" EXP ",\"conditions\":[[\"starts-with\",\"$key\",\"\"],[\"eq\",\"$Content-Type\",\"image/png\"]]}",
		 "user/a.txt", "AccessDenied", "Extra input fields: x-amz-meta-tag", 403},
		{"{" EXP ",\"conditions\":[[\"starts-with\",\"$key\",\"\"],[\"eq\",\"$Content-Type\",\"image/png\"],{\"x-amz-meta-tag\":\"v1\"},{\"x-amz-meta-missing\":\"\"}]}",
		 "user/a.txt", "AccessDenied", "Condition failed", 403},
		{"{" EXP ",\"conditions\":[[\"starts-with\",\"$key\",\"\"],[\"eq\",\"$Content-Type\",\"image/png\"],{\"x-amz-meta-tag\":\"v1\"},[\"starts-with\",\"$x-amz-meta-missing\",\"a\"]]}",
		 "user/a.txt", "AccessDenied", "Condition failed", 403},
		{"{\"expiration\":\"2020-01-01T00:00:00Z\",\"conditions\":[]}", "k", "AccessDenied", "Policy expired", 403},
		{"{\"conditions\":[]}", "k", "InvalidPolicyDocument", "missing expiration", 400},
		{"{" EXP "}", "k", "InvalidPolicyDocument", "missing conditions", 400},
		{"{\"expiration\":\"tomorrow\",\"conditions\":[]}", "k", "InvalidPolicyDocument", "expiration", 400},
		{"{" EXP ",\"conditions\":[[\"content-length-range\",9,2]]}", "k", "InvalidPolicyDocument", "range", 400},
		{"{" EXP ",\"conditions\":[[\"matches\",\"$key\",\"x\"]]}", "k", "InvalidPolicyDocument", "condition", 400},
		{"{" EXP ",\"conditions\":[[\"eq\",\"key\",\"x\"]]}", "k", "InvalidPolicyDocument", "'$'", 400},
		{"{" EXP ",\"conditions\":[{\"a\":\"1\",\"b\":\"2\"}]}", "k", "InvalidPolicyDocument", "one field", 400},
		{"{" EXP ",\"conditions\":[7]}", "k", "InvalidPolicyDocument", "condition", 400},
		{"not json", "k", "InvalidPolicyDocument", "JSON", 400},
		{"{" EXP "," EXP ",\"conditions\":[]}", "k", "InvalidPolicyDocument", "JSON", 400},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(check(bad[i].doc, kv, bad[i].key, &e, NULL, NULL) == AIS_ERR, "case %zu passed", i);
		ck_assert_msg(!strcmp(e.code, bad[i].code) && e.status == bad[i].status, "case %zu: %d %s", i, e.status,
			      e.code);
		ck_assert_msg(strstr(e.message, bad[i].word), "case %zu: '%s' lacks '%s'", i, e.message, bad[i].word);
	}
	/* fields the policy need not name; no policy: no conditions */
	static const char *const exempt[] = {"signature=x", "AWSAccessKeyId=y", "x-ignore-me=1", "x-amz-signature=z", NULL};
	ck_assert_int_eq(check("{" EXP ",\"conditions\":[]}", exempt, "k", &e, &lo, &hi), AIS_OK);
	ck_assert_uint_eq(hi, UINT64_MAX);
	ck_assert_int_eq(check(NULL, kv, "k", &e, NULL, NULL), AIS_OK);
	/* a policy that is not base64 */
	arena_t *a = arena_new(4096);
	s3_form_t f;
	static const char *const nb[] = {"policy=!!notbase64", NULL};
	form_of(a, &f, NULL, nb);
	ck_assert_int_eq(s3_post_policy_check(a, &f, SV("bck"), SV("k"), NOW, &lo, &hi, &e), AIS_ERR);
	ck_assert_str_eq(e.code, "InvalidPolicyDocument");
	arena_destroy(a);
}
END_TEST

/* --- the signatures ------------------------------------------------------------------- */

START_TEST(test_post_signatures)
{
	s3_authcfg_t cfg = {.enabled = true, .max_skew_s = 900};
	buf_t err = BUF_INIT;
	cfg.keys = s3_keys_new();
	ck_assert_int_eq(s3_keys_add(cfg.keys, "AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY:u1:User One", &err), AIS_OK);
	arena_t *a = arena_new(4096);
	s3_form_t f;
	s3_auth_t au;
	s3_autherr_t e;
	/* a policy signed with the derivation of AWS's documentation, computed
	 * independently (Python's hmac) */
	static const char pol[] = "eyJleHBpcmF0aW9uIjoiMjAzMC0wMS0wMVQwMDowMDowMFoiLCJjb25kaXRpb25zIjpbXX0=";
	static const char sig[] = "6798d86cef9b1947a44c1f9666ea416b62298824e607c3748dfd84fd647398c5";
	s3_keys_free(cfg.keys);
	cfg.keys = s3_keys_new();
	ck_assert_int_eq(s3_keys_add(cfg.keys, "AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY:u1:User One", &err),
			 AIS_OK);
	const char *v4[] = {"x-amz-credential=AKIAIOSFODNN7EXAMPLE/20151229/us-east-1/s3/aws4_request",
			    "x-amz-algorithm=AWS4-HMAC-SHA256", "x-amz-date=20151229T000000Z", NULL, NULL, NULL};
	v4[3] = arena_printf(a, "policy=%s", pol);
	v4[4] = arena_printf(a, "x-amz-signature=%s", sig);
	form_of(a, &f, NULL, v4);
	ck_assert_int_eq(s3_post_verify(&cfg, &f, NOW, &au, &e), AIS_OK);
	ck_assert_int_eq(au.kind, S3_AUTH_PRESIGNED);
	ck_assert_str_eq(au.key->user_id, "u1");
	v4[4] = "x-amz-signature=0000000000000000000000000000000000000000000000000000000000000000";
	form_of(a, &f, NULL, v4);
	ck_assert_int_eq(s3_post_verify(&cfg, &f, NOW, &au, &e), AIS_ERR);
	ck_assert_str_eq(e.code, "SignatureDoesNotMatch");
	v4[0] = "x-amz-credential=NOSUCHKEY/20151229/us-east-1/s3/aws4_request";
	v4[4] = arena_printf(a, "x-amz-signature=%s", sig);
	form_of(a, &f, NULL, v4);
	ck_assert_int_eq(s3_post_verify(&cfg, &f, NOW, &au, &e), AIS_ERR);
	ck_assert_str_eq(e.code, "InvalidAccessKeyId");
	v4[3] = "x-amz-meta-x=1"; /* no policy */
	form_of(a, &f, NULL, v4);
	ck_assert_int_eq(s3_post_verify(&cfg, &f, NOW, &au, &e), AIS_ERR);
	ck_assert_str_eq(e.code, "InvalidArgument");

	/* SigV2: base64 HMAC-SHA1 of the policy (computed with Python's hmac) */
	const char *v2[] = {"AWSAccessKeyId=jefeaccess", "policy=what do ya want for nothing?",
			    "signature=LOzRVPciZgATkprh9twVJWIwXks=", NULL};
	s3_keys_free(cfg.keys);
	cfg.keys = s3_keys_new();
	ck_assert_int_eq(s3_keys_add(cfg.keys, "jefeaccess:jefesecret:u2:Jefe", &err), AIS_OK);
	form_of(a, &f, NULL, v2);
	ck_assert_int_eq(s3_post_verify(&cfg, &f, NOW, &au, &e), AIS_OK);
	ck_assert_str_eq(au.key->user_id, "u2");
	v2[2] = "signature=AAAAVPciZgATkprh9twVJWIwXks=";
	form_of(a, &f, NULL, v2);
	ck_assert_int_eq(s3_post_verify(&cfg, &f, NOW, &au, &e), AIS_ERR);
	ck_assert_str_eq(e.code, "SignatureDoesNotMatch");

	/* anonymous; auth off */
	static const char *const anon[] = {"key=k", NULL};
	form_of(a, &f, NULL, anon);
	ck_assert_int_eq(s3_post_verify(&cfg, &f, NOW, &au, &e), AIS_OK);
	ck_assert_int_eq(au.kind, S3_AUTH_ANON);
	cfg.enabled = false;
	form_of(a, &f, NULL, v2);
	ck_assert_int_eq(s3_post_verify(&cfg, &f, NOW, &au, &e), AIS_OK);
	ck_assert_int_eq(au.kind, S3_AUTH_OFF);
	s3_keys_free(cfg.keys);
	buf_free(&err);
	arena_destroy(a);
}
END_TEST

static Suite *s3post_suite(void)
{
	Suite *s = suite_create("s3post");
	TCase *tc = tcase_create("s3post");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_form_every_split);
	tcase_add_test(tc, test_form_refusals);
	tcase_add_test(tc, test_form_limits);
	tcase_add_test(tc, test_policy_conditions);
	tcase_add_test(tc, test_post_signatures);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(s3post_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
