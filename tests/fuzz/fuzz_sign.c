/*
 * fuzz_sign.c - libFuzzer driver for the verifiers of the cluster secret's
 * signatures (auth.h): signed redirects (auth_redirect_verify on a query
 * string), intra-cluster headers (auth_intra_check) and a relay's over
 * node headers (auth_fwd_check).
 *
 * Input: a query string (also read as a header value). Checks the
 * contracts: a verdict is AIS_OK, AIS_ERR with a reason, or AIS_DONE only
 * when no ais_r* parameter is present; an accepted redirect names a user
 * and valid permissions; and what the signers make from the input's pieces
 * (the query as a request's own, any user and permissions decoded from it)
 * verifies to the same claims, while one flipped byte of the signature
 * does not.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/auth.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/banned.h"

#define KEY "fuzz-key-0123456789"
#define KL (sizeof(KEY) - 1)
#define NOW 1700000000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_token(const auth_token_t *t)
{
	if (t->nb > AUTH_MAX_BUCKETS || strlen(t->user) > AUTH_USER_MAX)
		abort();
	for (size_t i = 0; i < t->nb; i++)
		if (!t->b[i].perm || (t->b[i].perm & ~(unsigned)AUTH_ALL) ||
		    !(strcmp(t->b[i].bucket, "*") == 0 || name_bucket_valid(t->b[i].bucket, strlen(t->b[i].bucket))))
			abort();
}

/* Does q hold a parameter named like one of a signed redirect's? */
static bool has_redir_param(sv_t q)
{
	static const char *const names[] = {AUTH_REDIR_EXP, AUTH_REDIR_USER, AUTH_REDIR_PERM, AUTH_REDIR_BODY,
					    AUTH_REDIR_SIG};
	while (q.len) {
		const char *amp = memchr(q.ptr, '&', q.len);
		sv_t kv = {q.ptr, amp ? (size_t)(amp - q.ptr) : q.len};
		const char *eq = memchr(kv.ptr, '=', kv.len);
		sv_t k = {kv.ptr, eq ? (size_t)(eq - kv.ptr) : kv.len};
		for (size_t i = 0; i < 5; i++)
			if (sv_eqstr(k, names[i]))
				return true;
		q = amp ? (sv_t){amp + 1, q.len - kv.len - 1} : (sv_t){q.ptr + q.len, 0};
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *p = malloc(size ? size : 1); /* no terminator: the parsers stay inside len */
	memcpy(p, data, size);
	sv_t q = {p, size}, path = {"/v1/objects/b/o", 15};
	auth_token_t t, u;
	char body[AUTH_SIG_HEX + 1], body2[AUTH_SIG_HEX + 1];
	buf_t err = BUF_INIT, mine = BUF_INIT;

	int rc = auth_redirect_verify(KEY, KL, "GET", path, q, NOW, &t, body, &err);
	if (rc == AIS_OK)
		check_token(&t);
	else if (rc == AIS_ERR ? !err.len : rc != AIS_DONE || has_redir_param(q))
		abort();

	/* sign for a token decoded from the input (or a plain one), with the
	 * input as the request's own query: the verifier must agree */
	memset(&u, 0, sizeof(u));
	if (size >= 512 || auth_perm_decode(q, &u) != AIS_OK)
		memset(&u, 0, sizeof(u)); /* what a failed decode left is unspecified */
	memcpy(u.user, "u", 2);
	check_token(&u);
	auth_redirect_query(KEY, KL, "GET", path, q, AUTH_BODY_UNSIGNED, NOW + 5, &u, &mine);
	buf_reset(&err);
	auth_token_t v;
	if (auth_redirect_verify(KEY, KL, "GET", path, sv_of(&mine), NOW, &v, body2, &err) != AIS_OK ||
	    strcmp(v.user, u.user) || v.admin != u.admin || v.monitor != u.monitor || v.nb != u.nb ||
	    v.exp != NOW + 5 || strcmp(body2, AUTH_BODY_UNSIGNED))
		abort();
	for (size_t i = 0; i < u.nb; i++)
		if (strcmp(v.b[i].bucket, u.b[i].bucket) || v.b[i].perm != u.b[i].perm)
			abort();
	mine.ptr[mine.len - 1] ^= 1; /* the signature's last digit */
	buf_reset(&err);
	if (auth_redirect_verify(KEY, KL, "GET", path, sv_of(&mine), NOW, &v, body2, &err) == AIS_OK)
		abort();

	/* the intra-cluster header */
	auth_intra_val_t iv;
	if (auth_intra_check(KEY, KL, q, "PUT", (sv_t){"h:1", 3}, path, NOW, &iv) &&
	    (iv.nonce.len != AUTH_NONCE_HEX || iv.sig.len != AUTH_SIG_HEX))
		abort();
	char h[256];
	auth_intra_sign(KEY, KL, "PUT", "http://h:1/v1/objects/b/o", AUTH_BODY_UNSIGNED, NOW, "0123456789abcdef", h,
			sizeof(h));
	if (!auth_intra_check(KEY, KL, (sv_t){h, strlen(h)}, "PUT", (sv_t){"H:1", 3}, path, NOW, NULL))
		abort();

	/* a relay's header over node headers (the input as the lines): its own
	 * value passes, for those lines only; never as an intra-cluster one */
	(void)auth_fwd_check(KEY, KL, q, "GET", (sv_t){"h:1", 3}, path, q, NOW);
	auth_fwd_sign(KEY, KL, "GET", (sv_t){"h:1", 3}, path, q, NOW, "0123456789abcdef", h, sizeof(h));
	if (!auth_fwd_check(KEY, KL, (sv_t){h, strlen(h)}, "GET", (sv_t){"H:1", 3}, path, q, NOW) ||
	    auth_intra_check(KEY, KL, (sv_t){h, strlen(h)}, "GET", (sv_t){"h:1", 3}, path, NOW, NULL) ||
	    (q.len && auth_fwd_check(KEY, KL, (sv_t){h, strlen(h)}, "GET", (sv_t){"h:1", 3}, path,
				     (sv_t){q.ptr, q.len - 1}, NOW)))
		abort();
	buf_free(&err);
	buf_free(&mine);
	free(p);
	return 0;
}
