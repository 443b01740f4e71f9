/*
 * fuzz_jwt.c - libFuzzer driver for the access-control parsers (auth.h):
 * bearer tokens (auth_jwt_decode, auth_jwt_verify), the intra-cluster
 * signature header (auth_intra_check), permission words and auth.grant
 * values.
 *
 * Input: the token text itself (also read as a header value, a permission
 * list and a grant). Checks the contracts: a decoded token has a user, at
 * most AUTH_MAX_BUCKETS entries, valid bucket names and known permissions;
 * verify never accepts what decode refuses; and a decoded token re-made
 * with auth_jwt_make verifies to the same claims (the writer and the
 * parser agree on every token the parser accepts).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/auth.h"
#include "aisd/status.h"
#include "aisd/banned.h"

#define KEY "fuzz-key-0123456789"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy without a terminator: the parsers must stay inside len */
	char *p = malloc(size ? size : 1);
	memcpy(p, data, size);
	auth_token_t t, u;
	unsigned char sig[32];
	size_t sl = 0;
	buf_t err = BUF_INIT, tok = BUF_INIT;

	int d = auth_jwt_decode(p, size, &t, &sl, sig, &err);
	if (d == AIS_OK) {
		if (!t.user[0] || t.nb > AUTH_MAX_BUCKETS || sl >= size)
			abort();
		for (size_t i = 0; i < t.nb; i++)
			if (!t.b[i].perm || (t.b[i].perm & ~(unsigned)AUTH_ALL) ||
			    !(strcmp(t.b[i].bucket, "*") == 0 || name_bucket_valid(t.b[i].bucket, strlen(t.b[i].bucket))))
				abort();
		if (t.exp > 0) {
			auth_jwt_make(&t, KEY, sizeof(KEY) - 1, &tok);
			buf_reset(&err);
			if (auth_jwt_verify(tok.ptr, tok.len, KEY, sizeof(KEY) - 1, 0, &u, NULL, &err) != AIS_OK ||
			    strcmp(u.user, t.user) || u.admin != t.admin || u.exp != t.exp || u.nb != t.nb)
				abort();
			for (size_t i = 0; i < t.nb; i++)
				if (strcmp(u.b[i].bucket, t.b[i].bucket) || u.b[i].perm != t.b[i].perm)
					abort();
		}
	} else if (d != AIS_ERR || !err.len) {
		abort();
	}
	buf_reset(&err);
	if (auth_jwt_verify(p, size, KEY, sizeof(KEY) - 1, 0, &u, NULL, &err) == AIS_OK && d != AIS_OK)
		abort();

	auth_intra_check(KEY, sizeof(KEY) - 1, (sv_t){p, size}, "GET", (sv_t){"h:1", 3}, (sv_t){"/", 1}, 1700000000, NULL);
	unsigned bits;
	if (auth_perm_parse((sv_t){p, size}, &bits) == AIS_OK && (!bits || (bits & ~(unsigned)AUTH_ALL)))
		abort();
	if (size < 300 && !memchr(p, '\0', size)) {
		char s[301];
		sv_t gu, gb;
		memcpy(s, p, size);
		s[size] = '\0';
		buf_reset(&err);
		if (auth_grant_split(s, &gu, &gb, &bits, &err) == AIS_OK && (!gu.len || !gb.len || !bits))
			abort();
	}
	buf_free(&err);
	buf_free(&tok);
	free(p);
	return 0;
}
