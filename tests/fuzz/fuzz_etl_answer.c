/*
 * fuzz_etl_answer.c - libFuzzer driver for the reader of an http ETL
 * worker's answer (src/etl/answer.c): what a worker process, the code of
 * whoever registered the transformer, writes back to the target.
 *
 * Input: one byte of options (bits 0-2: the size of the pieces fed, 1..8
 * bytes or, for 0, all at once; bit 3: a small etl.max_output of 64 bytes
 * instead of 1 MiB; bit 4: the connection ends after the input), then the
 * worker's answer as sent.
 * Each input is read three ways: whole from a separate buffer, in pieces
 * from a separate buffer, and in pieces from the body buffer's own spare
 * room (as the target reads it, answer.c rule 3). Checks the contract:
 * the three agree on the verdict, the status, the body and keep_alive; a
 * body is at most max bytes; an error is 502 or 507 with a reason; a
 * complete answer's status is 200..599; keep_alive never holds for an
 * answer the end of the connection delimited. Where etl_answer_stream
 * says the rest may be streamed (answer.c rule 5), the bytes it owes are
 * exactly those the parser, fed on, takes into the body: a complete
 * answer's body is the part read so far and the next `left` input bytes;
 * an incomplete one had fewer than `left` left.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/status.h"
#include "../../src/etl/etl_int.h"
#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct verdict {
	int rc, status, err;
	bool keep_alive;
	buf_t body;
};

/* Feeds d (n bytes) in pieces of step (0: whole); inplace: each piece is
 * first copied into the body buffer's spare room. */
static void run(const char *d, size_t n, size_t step, bool inplace, uint64_t max, bool eof, struct verdict *v)
{
	etl_answer_t a;
	buf_t out = BUF_INIT;
	etl_answer_init(&a, &out, max);
	int rc = AIS_AGAIN;
	size_t off = 0, s_off = 0, s_pre = 0;
	uint64_t s_left = 0;
	bool streamable = false, keep;
	do {
		size_t k = step ? (n - off < step ? n - off : step) : n - off;
		if (inplace) {
			buf_grow(&out, k + 1);
			memcpy(out.ptr + out.len, d + off, k);
			rc = etl_answer_feed(&a, out.ptr + out.len, k);
		} else {
			rc = etl_answer_feed(&a, d + off, k);
		}
		off += k;
		if (rc == AIS_AGAIN && !streamable && etl_answer_stream(&a, &s_left, &keep)) {
			streamable = true;
			s_off = off;
			s_pre = out.len;
			if (a.status != 200 || s_left == 0 || s_pre + s_left > max || s_pre + s_left != a.clen)
				abort();
		}
	} while (off < n && rc == AIS_AGAIN);
	if (rc == AIS_OK && off < n) /* what the worker sent past its answer */
		rc = etl_answer_feed(&a, d + off, n - off);
	if (rc == AIS_AGAIN && eof)
		rc = etl_answer_eof(&a);
	v->rc = rc;
	v->status = rc == AIS_OK ? a.status : 0;
	v->err = rc == AIS_ERR ? a.err : 0;
	v->keep_alive = rc == AIS_OK && a.keep_alive;
	if (rc == AIS_ERR && (!a.why || (a.err != 502 && a.err != 507)))
		abort();
	if (rc == AIS_OK && (a.status < 200 || a.status > 599 || out.len > max))
		abort();
	if (streamable && rc == AIS_OK &&
	    (out.len != s_pre + s_left || n - s_off < s_left || memcmp(out.ptr + s_pre, d + s_off, (size_t)s_left)))
		abort();
	if (streamable && rc != AIS_OK && n - s_off >= s_left)
		abort();
	v->body = out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned opt = data[0];
	const char *d = (const char *)data + 1;
	size_t n = size - 1, step = opt & 7;
	uint64_t max = (opt & 8) ? 64 : 1 << 20;
	bool eof = (opt & 16) != 0;
	struct verdict v[3];
	run(d, n, 0, false, max, eof, &v[0]);
	run(d, n, step ? step : 1, false, max, eof, &v[1]);
	run(d, n, step ? step : 3, true, max, eof, &v[2]);
	for (int i = 1; i < 3; i++) {
		if (v[i].rc != v[0].rc || v[i].status != v[0].status || v[i].err != v[0].err ||
		    v[i].keep_alive != v[0].keep_alive)
			abort();
		if (v[0].rc == AIS_OK &&
		    (v[i].body.len != v[0].body.len || (v[0].body.len && memcmp(v[i].body.ptr, v[0].body.ptr, v[0].body.len))))
			abort();
	}
	for (int i = 0; i < 3; i++)
		buf_free(&v[i].body);
	return 0;
}
