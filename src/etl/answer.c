/*
 * answer.c - the reader of an http worker's answer (etl_int.h): bytes in,
 * in any split, the answer's status and body out. No I/O and no daemon
 * state, so the fuzz driver (tests/fuzz/fuzz_etl_answer.c) feeds it alone.
 *
 * Built on http-parser (HTTP_RESPONSE), the way xp.c reads a peer's
 * answer: a status line, headers, a body delimited by Content-Length,
 * chunked coding or the end of the connection. Guarantees:
 *  1. The body lands in out, at most max bytes of it: a Content-Length or
 *     a body past max is an error (507) before any byte over it is kept.
 *  2. The head (status line and headers) is at most ETL_ANSWER_HEAD_MAX
 *     bytes; an informational (1xx) status, a malformed line, a length
 *     that is not a number or a body cut short by the end of the
 *     connection is an error (502). Nothing is ever read past the bytes
 *     fed.
 *  3. Bytes fed from out's own spare room (out->ptr + out->len ..
 *     out->ptr + out->cap: the connection reads straight into it) are
 *     moved down, never copied out and back: a body with Content-Length
 *     read after its head stays where it was read.
 *  4. keep_alive says whether the connection may carry the next request:
 *     HTTP/1.1 without "Connection: close" (or 1.0 with keep-alive), a
 *     body not delimited by the close, and no byte after the answer.
 *  5. Once the head is read, etl_answer_stream says whether the rest of a
 *     200 answer may be taken by the caller as raw bytes (streamed to a
 *     client, stream.c): only a body of a declared Content-Length, not
 *     chunked, at most max; the bytes it names are exactly those still
 *     owed, so the caller counts them as the parser would.
 */
#include <string.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "etl_int.h"
#include "aisd/banned.h"

static etl_answer_t *of(http_parser *hp) { return hp->data; }

static int fail(etl_answer_t *a, int status, const char *why)
{
	a->err = status;
	a->why = why;
	return -1;
}

static int on_headers_complete(http_parser *hp)
{
	etl_answer_t *a = of(hp);
	a->head_done = true;
	a->status = (int)hp->status_code;
	if (hp->status_code < 200 || hp->status_code > 599)
		return fail(a, 502, "malformed answer (status not 2xx..5xx)");
	if ((hp->flags & F_CONTENTLENGTH) && hp->content_length > a->max)
		return fail(a, 507, "answer over etl.max_output");
	a->sized = (hp->flags & F_CONTENTLENGTH) && !(hp->flags & F_CHUNKED);
	a->clen = a->sized ? hp->content_length : 0;
	return 0;
}

static int on_body(http_parser *hp, const char *at, size_t len)
{
	etl_answer_t *a = of(hp);
	buf_t *o = a->out;
	if (o->len + len > a->max)
		return fail(a, 507, "answer over etl.max_output");
	if (o->ptr && at >= o->ptr && at < o->ptr + o->cap) { /* rule 3: at >= the body's end */
		if (at != o->ptr + o->len)
			memmove(o->ptr + o->len, at, len);
		o->len += len;
	} else {
		buf_add(o, at, len);
	}
	return 0;
}

static int on_message_complete(http_parser *hp)
{
	etl_answer_t *a = of(hp);
	a->done = true;
	a->keep_alive = http_should_keep_alive(hp) != 0;
	http_parser_pause(hp, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

void etl_answer_init(etl_answer_t *a, buf_t *out, uint64_t max)
{
	memset(a, 0, sizeof(*a));
	http_parser_init(&a->hp, HTTP_RESPONSE);
	a->hp.data = a;
	a->out = out;
	a->max = max;
	buf_reset(out);
}

int etl_answer_feed(etl_answer_t *a, const char *p, size_t n)
{
	if (a->err)
		return AIS_ERR;
	if (a->done) {
		a->keep_alive = a->keep_alive && n == 0;
		return AIS_OK;
	}
	size_t used = 0;
	while (used < n && !a->err && !a->done) {
		size_t k = n - used;
		if (!a->head_done && a->fed + k > ETL_ANSWER_HEAD_MAX) /* rule 2: the same verdict in any split */
			k = ETL_ANSWER_HEAD_MAX + 1 - (size_t)a->fed;
		size_t u = http_parser_execute(&a->hp, &settings, p + used, k);
		a->fed += u;
		used += u;
		if (a->err || a->done)
			break;
		if (HTTP_PARSER_ERRNO(&a->hp) != HPE_OK) {
			a->err = 502;
			a->why = "malformed answer (not an HTTP response)";
			break;
		}
		if (!a->head_done && a->fed > ETL_ANSWER_HEAD_MAX) {
			a->err = 502;
			a->why = "malformed answer (its head is over 16 KiB)";
			break;
		}
		if (u < k)
			break; /* not reached: http-parser takes all it is given or fails */
	}
	if (a->err)
		return AIS_ERR;
	if (a->done) {
		if (used < n)
			a->keep_alive = false; /* rule 4: bytes past the answer */
		return AIS_OK;
	}
	return AIS_AGAIN;
}

int etl_answer_eof(etl_answer_t *a)
{
	if (a->err)
		return AIS_ERR;
	if (a->done)
		return AIS_OK;
	if (a->fed == 0) {
		a->err = 502;
		a->why = "its worker closed the connection without answering";
		return AIS_ERR;
	}
	http_parser_execute(&a->hp, &settings, NULL, 0);
	if (a->err)
		return AIS_ERR;
	if (a->done) {
		a->keep_alive = false;
		return AIS_OK;
	}
	a->err = 502;
	a->why = a->head_done ? "its worker closed the connection mid-answer" : "malformed answer (no HTTP response head)";
	return AIS_ERR;
}

bool etl_answer_stream(const etl_answer_t *a, uint64_t *left, bool *keep_alive)
{
	if (!a->head_done || a->done || a->err || a->status != 200 || !a->sized || a->clen > a->max ||
	    a->out->len >= a->clen)
		return false;
	*left = a->clen - a->out->len;
	*keep_alive = http_should_keep_alive(&a->hp) != 0;
	return true;
}
