/*
 * fuzz_s3policy.c - libFuzzer driver for the S3 bucket policy parser and
 * evaluator (s3policy.h).
 *
 * The input is a policy document for bucket "b". Checks the contracts:
 * s3pol_parse answers a policy or an error message, never both and never
 * neither; a parsed policy evaluates (for an anonymous and a named
 * requester, with and without condition keys, RestrictPublicBuckets on
 * and off) to one of the three verdicts; s3pol_valid agrees with the
 * parser; the glob matcher terminates on the input split in two.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/arena.h"
#include "aisd/s3policy.h"
#include "aisd/status.h"
#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool ctx(void *arg, const char *key, sv_t *val)
{
	(void)arg;
	if (!strcmp(key, "aws:SourceIp"))
		*val = SV("10.1.2.3");
	else if (!strcmp(key, "s3:prefix"))
		*val = SV("home/x");
	else if (!strcmp(key, "s3:max-keys"))
		*val = SV("100");
	else if (!strcmp(key, "aws:SecureTransport"))
		*val = SV("false");
	else
		return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	arena_t *a = arena_new(4096);
	const s3pol_t *p = NULL;
	buf_t err = BUF_INIT, err2 = BUF_INIT;
	const char *text = (const char *)data;
	int rc = s3pol_parse(a, "b", text, size, &p, &err);
	if ((rc == AIS_OK) != (p != NULL) || (rc != AIS_OK && !err.len))
		abort();
	if (s3pol_valid("b", text, size, &err2) != (rc == AIS_OK))
		abort();
	if (p) {
		const char *users[] = {NULL, "u1"};
		for (int u = 0; u < 2; u++)
			for (int k = 0; k < 4; k++) {
				s3pol_req_t q = {.user = users[u], .user_name = "U One", .action = k & 1 ? "s3:GetObject" : "s3:ListBucket",
						 .bucket = SV("b"), .key = k & 1 ? SV("home/x/y") : SV(""), .ctx = k & 2 ? ctx : NULL};
				enum s3pol_effect e = s3pol_eval(p, &q, u == 0);
				if (e != S3POL_NONE && e != S3POL_ALLOW && e != S3POL_DENY)
					abort();
			}
		(void)s3pol_public(p);
		(void)s3pol_uses_key(p, "s3:ExistingObjectTag/");
	}
	size_t half = size / 2;
	(void)s3pol_glob((sv_t){text, half}, (sv_t){text + half, size - half}, size & 1);
	buf_free(&err);
	buf_free(&err2);
	arena_destroy(a);
	return 0;
}
