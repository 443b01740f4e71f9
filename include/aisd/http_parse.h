/*
 * http_parse.h - the pure request reader: bytes in, request events out.
 *
 * Wraps http-parser (Content-Length and chunked bodies, strict header
 * syntax, rejection of Content-Length together with Transfer-Encoding)
 * and adds aisd's limits. No I/O: the connection feeds it whatever it read,
 * in any split, and unit tests feed it one byte at a time.
 *
 * hp_feed parses at most len bytes and stops after the first event:
 *   HP_MORE  every byte consumed; feed more
 *   HP_HEAD  the request head is complete (p->head describes it)
 *   HP_END   the message (head + body) is complete; the bytes after it are
 *            the next pipelined request: hp_reset, then feed them
 *   HP_ERROR malformed or over a limit: ev->status (400, 413, 414, 431,
 *            501, 505) and ev->why say what; the connection must close
 * Body bytes are passed to the body callback while feeding, in order.
 */
#ifndef AISD_HTTP_PARSE_H
#define AISD_HTTP_PARSE_H

#include <http_parser.h>
#include <stdbool.h>
#include <stdint.h>

#include "aisd/buf.h"
#include "aisd/http.h"

#define HP_MAX_HEADERS 128

typedef enum { HP_MORE, HP_HEAD, HP_END, HP_ERROR } hp_event_t;

typedef struct hp_head {
	enum http_method method;
	unsigned short http_major, http_minor;
	sv_t target;
	http_hdr_t hdrs[HP_MAX_HEADERS];
	size_t nhdrs;
	int64_t content_length; /* -1 if absent */
	bool chunked;
	bool keep_alive;
	bool expect_continue;
	bool has_body;
} hp_head_t;

typedef void (*hp_body_fn)(void *arg, const char *p, size_t n);

typedef struct hp {
	http_parser parser;
	hp_head_t head;
	buf_t raw;          /* copy of the head bytes; head svs point here */
	size_t head_bytes;  /* head bytes seen so far */
	size_t max_head;
	/* the target's span as an offset in raw while parsing (the headers'
	 * are kept in head.hdrs as offsets until the head is complete) */
	size_t off_target, len_target;
	int last_cb;        /* 0 none, 1 field, 2 value */
	bool too_many;
	bool trailer_over;  /* trailer fields past max_head: 431 at the message's end */
	bool got_head, got_end;
	hp_body_fn body_fn;
	void *body_arg;
	/* chunk framing, checked here because the lenient http-parser takes
	 * any two bytes after a chunk's data as its CRLF */
	uint64_t chunk_left;  /* data bytes of the current chunk not yet seen */
	int crlf_next;        /* -1 none due; 0 or 1: index in "\r\n" expected next */
	const char *feed_end; /* end of the bytes of the hp_feed call under way */
	/* line framing of the head, checked here because the lenient
	 * http-parser takes a bare LF as a line end and folds continuation
	 * lines (obs-fold) into the value before them: both 400 (RFC 9112 2.2,
	 * 5.2), so that no proxy in front reads the head differently */
	char ls_prev;         /* the head byte before this one */
	size_t ls_len;        /* bytes of the current line so far */
	unsigned ls_lines;    /* non-empty lines seen */
	bool ls_done;         /* the head's empty line seen */
	/* a chunked body's trailer fields, "name: value\n" lines (at most
	 * max_head bytes; more is 431) */
	buf_t trailers;
	const char *why;
	int status;
} hp_t;

void hp_init(hp_t *p, size_t max_head, hp_body_fn fn, void *arg);
/* Prepares for the next request on the same connection. */
void hp_reset(hp_t *p);
void hp_free(hp_t *p);
/* The trailer field called name (case-insensitive) of the message just
 * read; {NULL, 0} when absent. Valid until the next hp_reset. */
sv_t hp_trailer(const hp_t *p, const char *name);
size_t hp_feed(hp_t *p, const char *data, size_t len, hp_event_t *ev);
/* The connection closed: for a body delimited by close this ends it.
 * Returns HP_END, HP_MORE (nothing pending) or HP_ERROR (truncated). */
hp_event_t hp_eof(hp_t *p);

#endif
