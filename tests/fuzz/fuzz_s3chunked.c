/*
 * fuzz_s3chunked.c - libFuzzer driver for the aws-chunked body decoder and
 * the payload checks (s3_body_*).
 *
 * Input: a mode byte (payload mode, signed or not, checksum announced),
 * a split byte, then the body. The body is decoded twice: whole, and in
 * pieces of a fuzzed size. Checks: both runs agree (result, error code,
 * payload bytes), payload never exceeds the input, a successful finish
 * means the payload length equals x-amz-decoded-content-length, and
 * errors carry an S3 code and a 4xx status.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/s3auth.h"
#include "aisd/status.h"
#include "../../src/s3auth/s3_int.h"
#include "aisd/banned.h"

struct out {
	buf_t b;
};

static int sink(void *arg, const char *p, size_t n)
{
	buf_add(&((struct out *)arg)->b, p, n);
	return AIS_OK;
}

static int run(const s3_auth_t *a, const s3_req_t *r, const char *p, size_t n, size_t step, struct out *o,
               s3_autherr_t *e)
{
	arena_t *ar = arena_new(1024);
	int rc = AIS_ERR;
	s3_body_t *b = s3_body_new(ar, a, r, (int64_t)n, e);
	if (!b)
		goto out;
	for (size_t off = 0; off < n; off += step) {
		size_t m = n - off < step ? n - off : step;
		if (s3_body_feed(b, p + off, m, sink, o, e) != AIS_OK)
			goto out;
	}
	rc = s3_body_finish(b, e);
	if (rc == AIS_OK && s3_body_payload_len(b) != o->b.len)
		abort();
out:
	arena_destroy(ar);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t mode = data[0], split = data[1];
	size_t n = size - 2;
	char *p = malloc(n ? n : 1);
	memcpy(p, data + 2, n);

	s3_auth_t a;
	memset(&a, 0, sizeof(a));
	a.kind = S3_AUTH_HEADER;
	static const enum s3_payload modes[] = {S3_PAYLOAD_STREAM_SIGNED, S3_PAYLOAD_STREAM_SIGNED_TRAILER,
	                                        S3_PAYLOAD_STREAM_UNSIGNED_TRAILER, S3_PAYLOAD_UNSIGNED,
	                                        S3_PAYLOAD_SHA256};
	a.payload = modes[mode % 5];
	a.verify_chunks = (mode & 8) != 0;
	memcpy(a.amz_date, "20130524T000000Z", 17);
	memcpy(a.scope, "20130524/us-east-1/s3/aws4_request", 35);
	memset(a.seed_signature, 'a', 64);
	/* decoded length from the mode byte: small values hit the checks */
	char dl[32];
	snprintf(dl, sizeof(dl), "%u", (unsigned)(mode >> 4) * 3);
	http_hdr_t h[3] = {{SV("x-amz-decoded-content-length"), sv_from(dl)},
	                   {SV("x-amz-trailer"), SV("x-amz-checksum-crc32")},
	                   {SV("x-amz-checksum-crc32"), SV("AAAAAA==")}};
	s3_req_t r = {.method = "PUT", .path = SV("/b/k"), .query = SV(""), .hdrs = h, .nhdrs = (mode & 16) ? 3u : 2u};
	if (mode & 32)
		r.nhdrs = 1;

	struct out o1 = {BUF_INIT}, o2 = {BUF_INIT};
	s3_autherr_t e1, e2;
	memset(&e1, 0, sizeof(e1));
	memset(&e2, 0, sizeof(e2));
	int r1 = run(&a, &r, p, n, n ? n : 1, &o1, &e1);
	int r2 = run(&a, &r, p, n, split ? split : 1, &o2, &e2);
	if (r1 != r2 || o1.b.len > n ||
	    (r1 == AIS_OK && (o1.b.len != o2.b.len || (o1.b.len && memcmp(o1.b.ptr, o2.b.ptr, o1.b.len)))))
		abort();
	if (r1 != AIS_OK) {
		if (!e1.code || !e2.code || strcmp(e1.code, e2.code) || e1.status < 400 || e1.status > 499)
			abort();
	}
	buf_free(&o1.b);
	buf_free(&o2.b);
	free(p);
	return 0;
}
