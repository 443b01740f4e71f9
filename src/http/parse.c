/*
 * parse.c - the pure HTTP request reader (see http_parse.h).
 *
 * http-parser does the byte-level work. This file keeps a private copy of
 * the head (at most max_head bytes) so header views stay valid however the
 * input was split, pauses the parser at the end of the head and at the end
 * of the message (so pipelined requests are handled one at a time), and
 * turns parser errors into the HTTP status a client should get.
 */
#include <string.h>
#include <strings.h>

#include "aisd/http_parse.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

static hp_t *self(http_parser *hp) { return hp->data; }

static void fail(hp_t *p, int status, const char *why)
{
	if (!p->status) {
		p->status = status;
		p->why = why;
	}
}

static int add_raw(hp_t *p, const char *at, size_t len)
{
	if (p->raw.len + len > p->max_head) {
		fail(p, p->head.nhdrs == 0 && p->last_cb == 0 ? 414 : 431,
		     p->last_cb == 0 ? "request line too long" : "request headers too large");
		return -1;
	}
	buf_add(&p->raw, at, len);
	return 0;
}

static int on_url(http_parser *hp, const char *at, size_t len)
{
	hp_t *p = self(hp);
	if (p->len_target == 0)
		p->off_target = p->raw.len;
	p->len_target += len;
	return add_raw(p, at, len);
}

/* While the head is read, a header's svs hold offsets into raw (which may
 * move as it grows); they become pointers when the head is complete. */
#define RAW_OFF(off) ((const char *)(uintptr_t)(off))

/* A chunked body's trailer field (the head must not move: kept apart). */
static int trailer_add(hp_t *p, int cb, const char *at, size_t len)
{
	if (p->trailer_over)
		return 0;
	/* a field after a value starts a line; a value after its field, ':' */
	char sep = cb == 1 && p->last_cb == 2 && p->trailers.len ? '\n' : cb == 2 && p->last_cb == 1 ? ':' : 0;
	if (p->trailers.len + (sep != 0) + len > p->max_head) {
		/* 431 at the message's end, not here (as for too many headers):
		 * a partial name or value is reported at the end of each read,
		 * so failing now would let the split decide between 431 and a
		 * later 400; the count is exact for the same reason */
		p->trailer_over = true;
		return 0;
	}
	if (sep)
		buf_addch(&p->trailers, sep);
	buf_add(&p->trailers, at, len);
	p->last_cb = cb;
	return 0;
}

static int on_header_field(http_parser *hp, const char *at, size_t len)
{
	hp_t *p = self(hp);
	if (p->got_head)
		return trailer_add(p, 1, at, len);
	if (p->too_many)
		return 0;
	if (p->last_cb != 1) {
		if (p->head.nhdrs >= HP_MAX_HEADERS) {
			/* 431 at the end of the head, not here: a partial name is
			 * reported at the end of each read, so failing now would
			 * let the split decide between 431 and a later 400 */
			p->too_many = true;
			return 0;
		}
		size_t i = p->head.nhdrs++;
		p->head.hdrs[i] = (http_hdr_t){{RAW_OFF(p->raw.len), 0}, {RAW_OFF(0), 0}};
		p->last_cb = 1;
	}
	p->head.hdrs[p->head.nhdrs - 1].name.len += len;
	return add_raw(p, at, len);
}

static int on_header_value(http_parser *hp, const char *at, size_t len)
{
	hp_t *p = self(hp);
	if (p->got_head)
		return trailer_add(p, 2, at, len);
	if (p->too_many)
		return 0;
	size_t i = p->head.nhdrs - 1;
	if (p->last_cb != 2) {
		p->head.hdrs[i].value.ptr = RAW_OFF(p->raw.len);
		p->last_cb = 2;
	}
	p->head.hdrs[i].value.len += len;
	return add_raw(p, at, len);
}

/* RFC 9110 5.6.2 tchar. */
static bool is_token(sv_t s)
{
	if (s.len == 0)
		return false;
	for (size_t i = 0; i < s.len; i++) {
		unsigned char c = (unsigned char)s.ptr[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      (c && strchr("!#$%&'*+-.^_`|~", c))))
			return false;
	}
	return true;
}

static int on_headers_complete(http_parser *hp)
{
	hp_t *p = self(hp);
	hp_head_t *h = &p->head;
	const char *base = p->raw.ptr ? p->raw.ptr : "";

	if (p->too_many) {
		fail(p, 431, "too many request headers");
		return -1;
	}

	h->method = (enum http_method)hp->method;
	h->http_major = hp->http_major;
	h->http_minor = hp->http_minor;
	h->target = (sv_t){base + p->off_target, p->len_target};
	h->content_length = -1;
	h->chunked = (hp->flags & F_CHUNKED) != 0;
	h->keep_alive = http_should_keep_alive(hp) != 0;
	h->expect_continue = false;
	for (size_t i = 0; i < h->nhdrs; i++) {
		h->hdrs[i].name = (sv_t){base + (uintptr_t)h->hdrs[i].name.ptr, h->hdrs[i].name.len};
		h->hdrs[i].value = sv_trim((sv_t){base + (uintptr_t)h->hdrs[i].value.ptr, h->hdrs[i].value.len});
		if (!is_token(h->hdrs[i].name)) {
			/* the lenient http-parser lets "Name : v" through (RFC 9112 5.1) */
			fail(p, 400, "invalid header name");
			return -1;
		}
		if (sv_eqcase(h->hdrs[i].name, SV("expect"))) {
			if (!h->hdrs[i].value.len)
				continue; /* an empty list: no expectation (RFC 9110 10.1.1, "#expectation") */
			if (!sv_eqcase(h->hdrs[i].value, SV("100-continue"))) {
				fail(p, 417, "unsupported Expect header");
				return -1;
			}
			h->expect_continue = true;
		} else if (sv_eqcase(h->hdrs[i].name, SV("transfer-encoding")) &&
			   (!h->chunked || !sv_eqcase(h->hdrs[i].value, SV("chunked")))) {
			/* only plain chunked: "gzip, chunked" would hand on coded bytes */
			fail(p, 501, "unsupported Transfer-Encoding");
			return -1;
		}
	}
	if (hp->flags & F_CONTENTLENGTH) {
		if (hp->content_length > (uint64_t)INT64_MAX) {
			fail(p, 400, "invalid Content-Length"); /* would read as negative: no body */
			return -1;
		}
		h->content_length = (int64_t)hp->content_length;
	}
	if (h->http_major != 1) {
		fail(p, 505, "HTTP version not supported");
		return -1;
	}
	if (h->content_length < 0 && !h->chunked &&
	    (h->method == HTTP_PUT || h->method == HTTP_POST) && h->http_minor == 0) {
		/* HTTP/1.0 body delimited by close: refuse, we need a length. */
		fail(p, 411, "Content-Length required");
		return -1;
	}
	h->has_body = h->chunked || h->content_length > 0;
	p->got_head = true;
	http_parser_pause(hp, 1);
	return 0;
}

/* Checks the CRLF due after a chunk's data, from q up to the end of the
 * bytes being fed; what is beyond is checked by the next hp_feed. */
static int check_crlf(hp_t *p, const char *q)
{
	while (p->crlf_next >= 0 && q < p->feed_end) {
		if (*q++ != "\r\n"[p->crlf_next]) {
			fail(p, 400, "invalid chunk: data longer than its size");
			return -1;
		}
		p->crlf_next = p->crlf_next == 1 ? -1 : 1;
	}
	return 0;
}

static int on_chunk_header(http_parser *hp)
{
	self(hp)->chunk_left = hp->content_length;
	return 0;
}

/* Body bytes go to the handler before their chunk's CRLF is checked, so
 * what the handler gets does not depend on how the input was split. */
static int on_body(http_parser *hp, const char *at, size_t len)
{
	hp_t *p = self(hp);
	if (p->body_fn)
		p->body_fn(p->body_arg, at, len);
	if (p->head.chunked) {
		p->chunk_left -= MIN(len, p->chunk_left);
		if (p->chunk_left == 0) {
			p->crlf_next = 0;
			if (check_crlf(p, at + len) < 0)
				return -1;
		}
	}
	return 0;
}

static int on_message_complete(http_parser *hp)
{
	hp_t *p = self(hp);
	if (p->trailer_over) {
		fail(p, 431, "chunked trailer fields too large");
		return -1;
	}
	p->got_end = true;
	http_parser_pause(hp, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_chunk_header = on_chunk_header,
	.on_message_complete = on_message_complete,
};

void hp_init(hp_t *p, size_t max_head, hp_body_fn fn, void *arg)
{
	memset(p, 0, sizeof(*p));
	p->max_head = max_head;
	p->body_fn = fn;
	p->body_arg = arg;
	hp_reset(p);
}

void hp_reset(hp_t *p)
{
	http_parser_init(&p->parser, HTTP_REQUEST);
	p->parser.data = p;
	buf_reset(&p->raw);
	buf_reset(&p->trailers);
	memset(&p->head, 0, sizeof(p->head));
	p->head.content_length = -1;
	p->head_bytes = 0;
	p->off_target = p->len_target = 0;
	p->last_cb = 0;
	p->got_head = p->got_end = false;
	p->too_many = false;
	p->trailer_over = false;
	p->status = 0;
	p->why = NULL;
	p->chunk_left = 0;
	p->crlf_next = -1;
	p->ls_prev = 0;
	p->ls_len = 0;
	p->ls_lines = 0;
	p->ls_done = false;
}

void hp_free(hp_t *p)
{
	buf_free(&p->raw);
	buf_free(&p->trailers);
}

sv_t hp_trailer(const hp_t *p, const char *name)
{
	sv_t rest = {p->trailers.ptr ? p->trailers.ptr : "", p->trailers.len}, key = sv_from(name);
	while (rest.len) {
		const char *nl = memchr(rest.ptr, '\n', rest.len);
		sv_t line = {rest.ptr, nl ? (size_t)(nl - rest.ptr) : rest.len};
		rest = nl ? (sv_t){nl + 1, rest.len - line.len - 1} : (sv_t){rest.ptr + rest.len, 0};
		const char *colon = memchr(line.ptr, ':', line.len);
		if (colon && sv_eqcase((sv_t){line.ptr, (size_t)(colon - line.ptr)}, key))
			return sv_trim((sv_t){colon + 1, line.len - (size_t)(colon + 1 - line.ptr)});
	}
	return (sv_t){NULL, 0};
}

static int status_of(enum http_errno e)
{
	switch (e) {
	case HPE_INVALID_METHOD: return 501;
	case HPE_INVALID_VERSION: return 505;
	case HPE_HEADER_OVERFLOW: return 431;
	case HPE_INVALID_CONTENT_LENGTH:
	case HPE_UNEXPECTED_CONTENT_LENGTH: return 400;
	default: return 400;
	}
}

/* Scans the line framing of the head bytes in data (up to the head's
 * empty line). Returns the offset of the first byte that breaks it (a bare
 * LF, or the blank that starts a folded line), with *why set; len if none.
 * Only that prefix goes to the parser, so the first error by position is
 * the one reported however the input is split. */
static size_t check_lines(hp_t *p, const char *data, size_t len, const char **why)
{
	for (size_t i = 0; i < len && !p->ls_done; i++) {
		char c = data[i];
		if (c == '\n') {
			if (p->ls_prev != '\r') {
				*why = "bare LF in the request head (lines end with CRLF)";
				return i;
			}
			if (p->ls_len > 1)
				p->ls_lines++;
			else if (p->ls_lines)
				p->ls_done = true; /* the empty line: the body follows */
			p->ls_len = 0;
		} else {
			if (p->ls_len == 0 && (c == ' ' || c == '\t') && p->ls_lines) {
				*why = "obsolete line folding in a header (obs-fold)";
				return i;
			}
			p->ls_len++;
		}
		p->ls_prev = c;
	}
	return len;
}

size_t hp_feed(hp_t *p, const char *data, size_t len, hp_event_t *ev)
{
	size_t n;

	*ev = HP_MORE;
	if (p->status) {
		*ev = HP_ERROR;
		return 0;
	}
	if (HTTP_PARSER_ERRNO(&p->parser) == HPE_PAUSED)
		http_parser_pause(&p->parser, 0);
	if (len == 0)
		return 0;
	bool in_head = !p->got_head;
	if (in_head && p->head_bytes >= p->max_head) {
		fail(p, 431, "request headers too large"); /* max_head 0 */
		*ev = HP_ERROR;
		return 0;
	}
	if (in_head && len > p->max_head - p->head_bytes)
		len = p->max_head - p->head_bytes; /* the parser never sees past the limit */
	const char *line_err = NULL;
	size_t whole = len;
	if (in_head)
		len = check_lines(p, data, len, &line_err);
	if (len == 0) { /* the bad byte comes first (a zero length would be EOF) */
		fail(p, 400, line_err);
		*ev = HP_ERROR;
		return 0;
	}
	p->feed_end = data + len;
	if (p->crlf_next >= 0 && check_crlf(p, data) < 0) {
		*ev = HP_ERROR;
		return 0;
	}
	n = http_parser_execute(&p->parser, &settings, data, len);
	enum http_errno e = HTTP_PARSER_ERRNO(&p->parser);

	if (in_head && !p->got_head && !p->status) {
		p->head_bytes += n;
		if (p->head_bytes >= p->max_head)
			fail(p, p->head.nhdrs == 0 && p->last_cb == 0 ? 414 : 431,
			     p->head.nhdrs == 0 && p->last_cb == 0 ? "request line too long"
								     : "request headers too large");
	}
	if (p->status) {
		*ev = HP_ERROR;
		return n;
	}
	if (e != HPE_OK && e != HPE_PAUSED) {
		fail(p, status_of(e), http_errno_description(e));
		*ev = HP_ERROR;
		return n;
	}
	if (line_err && len < whole && !p->got_head) {
		fail(p, 400, line_err);
		*ev = HP_ERROR;
		return n;
	}
	if (e == HPE_PAUSED) {
		if (p->got_end) {
			*ev = HP_END;
		} else if (in_head && p->got_head) {
			*ev = HP_HEAD;
		}
	}
	return n;
}

hp_event_t hp_eof(hp_t *p)
{
	if (p->status)
		return HP_ERROR;
	if (HTTP_PARSER_ERRNO(&p->parser) == HPE_PAUSED)
		http_parser_pause(&p->parser, 0);
	http_parser_execute(&p->parser, &settings, NULL, 0);
	if (p->got_end)
		return HP_END;
	if (HTTP_PARSER_ERRNO(&p->parser) != HPE_OK && HTTP_PARSER_ERRNO(&p->parser) != HPE_PAUSED) {
		fail(p, 400, "connection closed inside a request");
		return HP_ERROR;
	}
	return HP_MORE;
}
