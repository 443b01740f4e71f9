/*
 * test_s3_botocore.c - the verifier against a real client: requests signed
 * by botocore (tests/unit/s3_botocore.py, the library under boto3 and the
 * aws CLI) must verify, bodies included (hex sha256 payloads,
 * UNSIGNED-PAYLOAD, aws-chunked STREAMING-UNSIGNED-PAYLOAD-TRAILER with
 * x-amz-checksum-* trailers, x-amz-checksum-* headers), presigned URLs must
 * verify until they expire, and tampered copies must fail with the right
 * S3 code. Runs the script with Debian's /usr/bin/python3 (python3-botocore,
 * required) and, when it is another interpreter with botocore, the first
 * python3 on PATH too (a newer botocore: CRC32 checksums by default).
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/s3auth.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "../../src/s3auth/s3_int.h"
#include "aisd/banned.h"

#define AK "AKIDBOTOCORE"
#define SK "boto/Secret+Key=0123456789"

struct counts {
	int ok, refused, trailer, checksum, presigned, sha256;
};

static int emit_nothing(void *arg, const char *p, size_t n)
{
	*(uint64_t *)arg += n;
	return AIS_OK;
}

/* Verifies one request; returns NULL if the outcome is the expected one,
 * else a description (static). */
static const char *run_case(const s3_authcfg_t *cfg, json_t *c, struct counts *k)
{
	static char why[512];
	const char *expect = json_string_value(json_object_get(c, "expect"));
	json_t *hs = json_object_get(c, "headers");
	size_t nh = json_array_size(hs);
	http_hdr_t *h = xcalloc(nh ? nh : 1, sizeof(*h));
	for (size_t i = 0; i < nh; i++) {
		h[i].name = sv_from(json_string_value(json_array_get(json_array_get(hs, i), 0)));
		h[i].value = sv_from(json_string_value(json_array_get(json_array_get(hs, i), 1)));
	}
	s3_req_t r = {.method = json_string_value(json_object_get(c, "method")),
		      .path = sv_from(json_string_value(json_object_get(c, "path"))),
		      .query = sv_from(json_string_value(json_object_get(c, "query"))),
		      .hdrs = h,
		      .nhdrs = nh};
	const char *b64 = json_string_value(json_object_get(c, "body"));
	size_t blen = strlen(b64);
	unsigned char *body = xmalloc(blen + 1);
	long n = s3_b64_decode((sv_t){b64, blen}, body, blen + 1);
	ck_assert(n >= 0);
	int64_t now = json_integer_value(json_object_get(c, "now"));
	int64_t cl = json_integer_value(json_object_get(c, "content_length"));

	s3_auth_t a;
	s3_autherr_t e = {0};
	const char *got = "ok";
	uint64_t payload = 0;
	arena_t *ar = arena_new(4096);
	if (s3_auth_verify(cfg, &r, now, &a, &e) != AIS_OK || s3_auth_require(cfg, &a, &e) != AIS_OK) {
		got = e.code;
	} else {
		s3_body_t *b = s3_body_new(ar, &a, &r, cl, &e);
		/* odd piece sizes: the decoder must not care where input splits */
		for (long off = 0, step = 1; b && off < n; off += step, step = step * 3 + 1) {
			long m = MIN(step, n - off);
			if (s3_body_feed(b, (const char *)body + off, (size_t)m, emit_nothing, &payload,
			                 &e) != AIS_OK) {
				b = NULL;
				break;
			}
		}
		if (!b || s3_body_finish(b, &e) != AIS_OK) {
			got = e.code;
		} else {
			const char *cn, *cv;
			k->trailer += a.payload == S3_PAYLOAD_STREAM_UNSIGNED_TRAILER;
			k->checksum += s3_body_checksum(b, &cn, &cv);
			k->sha256 += a.payload == S3_PAYLOAD_SHA256 && n > 0;
			k->presigned += a.kind == S3_AUTH_PRESIGNED;
		}
	}
	const char *res = NULL;
	if (strcmp(got, expect)) {
		snprintf(why, sizeof(why), "%s: got %s (%s), want %s",
		         json_string_value(json_object_get(c, "name")), got,
		         strcmp(got, "ok") ? e.message : "", expect);
		res = why;
	} else if (!strcmp(got, "ok")) {
		k->ok++;
	} else {
		k->refused++;
	}
	arena_destroy(ar);
	free(body);
	free(h);
	return res;
}

/* Runs the script with python; returns its exit status (77: no botocore). */
static int run_python(const char *python, struct counts *k, int *failures)
{
	s3_authcfg_t cfg = {.enabled = true, .max_skew_s = 900};
	buf_t err = BUF_INIT, cmd = BUF_INIT;
	cfg.keys = s3_keys_new();
	ck_assert_int_eq(s3_keys_add(cfg.keys, AK ":" SK ":boto:Boto Core", &err), AIS_OK);
	buf_addf(&cmd, "%s tests/unit/s3_botocore.py", python);
	FILE *f = popen(cmd.ptr, "r");
	ck_assert_ptr_nonnull(f);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		json_error_t je;
		json_t *c = json_loadb(line, (size_t)len, 0, &je);
		ck_assert_msg(c != NULL, "bad line from %s: %s", python, je.text);
		const char *why = run_case(&cfg, c, k);
		if (why) {
			fprintf(stderr, "%s: %s\n", python, why);
			(*failures)++;
		}
		json_decref(c);
	}
	free(line);
	int st = pclose(f);
	s3_authcfg_free(&cfg);
	buf_free(&err);
	buf_free(&cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

START_TEST(test_debian_botocore)
{
	struct counts k = {0};
	int failures = 0;
	int rc = run_python("/usr/bin/python3", &k, &failures);
	ck_assert_msg(rc == 0, "/usr/bin/python3 s3_botocore.py exited %d (python3-botocore installed?)", rc);
	ck_assert_int_eq(failures, 0);
	fprintf(stderr,
	        "debian botocore: %d verified (%d presigned, %d sha256 bodies, %d trailer, %d checksum), "
	        "%d refused as expected\n",
	        k.ok, k.presigned, k.sha256, k.trailer, k.checksum, k.refused);
	/* the script really ran its cases */
	ck_assert_int_ge(k.ok, 80);
	ck_assert_int_ge(k.refused, 15);
	ck_assert_int_ge(k.presigned, 4);
	ck_assert_int_ge(k.sha256, 10);
	ck_assert_int_ge(k.checksum, 4);
}
END_TEST

START_TEST(test_path_botocore)
{
	struct counts k = {0};
	int failures = 0;
	/* "python3" from PATH, when it has botocore (77: skip) */
	int rc = run_python("python3", &k, &failures);
	if (rc == 77 || rc == 127) {
		fprintf(stderr, "python3 on PATH has no botocore: skipped\n");
		return;
	}
	ck_assert_msg(rc == 0, "python3 s3_botocore.py exited %d", rc);
	ck_assert_int_eq(failures, 0);
	fprintf(stderr,
	        "PATH botocore: %d verified (%d presigned, %d sha256 bodies, %d trailer, %d checksum), "
	        "%d refused as expected\n",
	        k.ok, k.presigned, k.sha256, k.trailer, k.checksum, k.refused);
	ck_assert_int_ge(k.ok, 80);
	ck_assert_int_ge(k.refused, 15);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_botocore");
	TCase *tc = tcase_create("botocore");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_debian_botocore);
	tcase_add_test(tc, test_path_botocore);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
