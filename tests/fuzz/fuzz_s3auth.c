/*
 * fuzz_s3auth.c - libFuzzer driver for the S3 request parsers: the SigV4
 * Authorization header parser, the presigned-URL parameter parser, SigV2's
 * "AWS AK:SIG" parser and the whole s3_auth_verify over a fuzzed request
 * (SigV2 on or off by a bit of the first byte).
 *
 * Input: one byte choosing the target, then the bytes. For the full
 * verification the bytes are "path?query" up to the first '\n', then
 * "name:value" header lines. Checks the parsers' contracts: results point
 * inside the input, signatures are 64 hex digits, errors carry a code and
 * a 4xx status, and a success names a key.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/s3auth.h"
#include "aisd/status.h"
#include "../../src/s3auth/s3_int.h"
#include "aisd/banned.h"

static bool inside(sv_t v, const char *p, size_t n)
{
	return v.len == 0 || (v.ptr >= p && v.ptr + v.len <= p + n);
}

static void check_err(const s3_autherr_t *e)
{
	if (!e->code || !e->code[0] || e->status < 400 || e->status > 499 || !e->message[0])
		abort();
}

static s3_authcfg_t cfg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!cfg.keys) {
		buf_t err = BUF_INIT;
		cfg.enabled = true;
		cfg.max_skew_s = 900;
		cfg.keys = s3_keys_new();
		if (s3_keys_add(cfg.keys, "AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY:u:n",
		                &err))
			abort();
		buf_free(&err);
	}
	if (size < 1)
		return 0;
	uint8_t mode = data[0] % 4;
	cfg.sigv2 = data[0] & 4;
	size_t n = size - 1;
	char *p = malloc(n ? n : 1); /* no terminator: parsers stay inside n */
	memcpy(p, data + 1, n);
	s3_autherr_t e;
	memset(&e, 0, sizeof(e));

	if (mode == 0) {
		s3_authz_t a;
		if (s3_parse_authz((sv_t){p, n}, &a, &e) == AIS_OK) {
			if (a.signature.len != 64 || !a.cred.access_key.len || a.cred.date.len != 8 ||
			    !inside(a.signature, p, n) || !inside(a.cred.access_key, p, n) ||
			    !inside(a.signed_headers, p, n) || !inside(a.cred.region, p, n))
				abort();
		} else {
			check_err(&e);
		}
	} else if (mode == 1) {
		s3_presign_t ps;
		int rc = s3_parse_presign((sv_t){p, n}, &ps, &e);
		if (rc == AIS_OK) {
			if (strlen(ps.signature) != 64 || ps.expires < 1 ||
			    ps.expires > S3_PRESIGN_MAX_EXPIRES)
				abort();
		} else if (rc == AIS_ERR) {
			check_err(&e);
		} else if (rc != AIS_DONE) {
			abort();
		}
	} else if (mode == 3) {
		sv_t ak, sig;
		if (s3_v2_parse_authz((sv_t){p, n}, &ak, &sig, &e) == AIS_OK) {
			if (!ak.len || !sig.len || !inside(ak, p, n) || !inside(sig, p, n))
				abort();
		} else {
			check_err(&e);
		}
	} else {
		http_hdr_t h[32];
		s3_req_t r = {.method = "PUT", .path = {p, 0}, .query = {"", 0}, .hdrs = h, .nhdrs = 0};
		const char *nl = memchr(p, '\n', n);
		size_t first = nl ? (size_t)(nl - p) : n;
		const char *q = memchr(p, '?', first);
		r.path = (sv_t){p, q ? (size_t)(q - p) : first};
		if (q)
			r.query = (sv_t){q + 1, first - r.path.len - 1};
		size_t off = nl ? first + 1 : n;
		while (off < n && r.nhdrs < 32) {
			const char *e2 = memchr(p + off, '\n', n - off);
			size_t ln = e2 ? (size_t)(e2 - (p + off)) : n - off;
			const char *colon = memchr(p + off, ':', ln);
			if (colon) {
				h[r.nhdrs].name = (sv_t){p + off, (size_t)(colon - (p + off))};
				h[r.nhdrs].value = (sv_t){colon + 1, ln - h[r.nhdrs].name.len - 1};
				r.nhdrs++;
			}
			off += ln + 1;
		}
		s3_auth_t a;
		if (s3_auth_verify(&cfg, &r, 1369353600, &a, &e) == AIS_OK) {
			if ((a.kind == S3_AUTH_HEADER || a.kind == S3_AUTH_PRESIGNED) && !a.key)
				abort();
			if (a.kind == S3_AUTH_ANON && a.key)
				abort();
		} else {
			check_err(&e);
		}
	}
	free(p);
	return 0;
}
