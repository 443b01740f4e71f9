/*
 * fuzz_http_parse.c - libFuzzer driver for the request reader (hp_*).
 *
 * Input: byte 0 picks the head limit, byte 1 seeds the split points, the
 * rest is a byte stream from a client (any number of pipelined requests).
 * The stream is parsed whole and again in pseudo-random pieces; the two
 * transcripts of events, heads and body bytes must be identical. Along the
 * way: every head view lies inside the reader's own copy, the head survives
 * its body (trailers included), and hp_feed never claims more than it got.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/buf.h"
#include "aisd/http_parse.h"
#include "aisd/util.h"
#include "aisd/banned.h"

typedef struct tr {
	hp_t hp;
	buf_t log, body;
	bool err;
} tr_t;

static void on_body(void *arg, const char *p, size_t n)
{
	tr_t *t = arg;
	buf_add(&t->body, p, n);
}

static void inside(const hp_t *p, sv_t s)
{
	if (s.len == 0)
		return;
	if (!p->raw.ptr || s.ptr < p->raw.ptr || s.ptr + s.len > p->raw.ptr + p->raw.len)
		abort();
}

static void log_head(tr_t *t)
{
	const hp_head_t *h = &t->hp.head;
	if (h->nhdrs > HP_MAX_HEADERS || t->hp.raw.len > t->hp.max_head)
		abort();
	inside(&t->hp, h->target);
	buf_addf(&t->log, "H%d %u.%u %lld %d%d%d%d [", (int)h->method, h->http_major, h->http_minor,
		 (long long)h->content_length, h->chunked, h->keep_alive, h->expect_continue, h->has_body);
	buf_addsv(&t->log, h->target);
	for (size_t i = 0; i < h->nhdrs; i++) {
		inside(&t->hp, h->hdrs[i].name);
		inside(&t->hp, h->hdrs[i].value);
		buf_addch(&t->log, '|');
		buf_addsv(&t->log, h->hdrs[i].name);
		buf_addch(&t->log, '=');
		buf_addsv(&t->log, h->hdrs[i].value);
	}
	buf_addch(&t->log, ']');
}

static void feed(tr_t *t, const char *p, size_t n)
{
	for (int guard = 0; !t->err && guard < 1000000; guard++) {
		hp_event_t ev;
		size_t used = hp_feed(&t->hp, p, n, &ev);
		if (used > n)
			abort();
		p += used;
		n -= used;
		switch (ev) {
		case HP_HEAD:
			log_head(t);
			break;
		case HP_END:
			log_head(t); /* the head is still whole after its body */
			buf_addf(&t->log, "B%zu:", t->body.len);
			buf_addsv(&t->log, sv_of(&t->body));
			buf_addstr(&t->log, "E;");
			buf_reset(&t->body);
			hp_reset(&t->hp);
			break;
		case HP_ERROR:
			if (t->hp.status < 400 || t->hp.status > 599 || !t->hp.why)
				abort();
			buf_addf(&t->log, "X%d;", t->hp.status);
			t->err = true;
			return;
		case HP_MORE:
			if (n != 0)
				abort(); /* HP_MORE: every byte consumed */
			return;
		}
		if (n == 0)
			return;
	}
}

static char *run(const char *d, size_t n, size_t max_head, uint32_t seed)
{
	tr_t t;
	memset(&t, 0, sizeof(t));
	hp_init(&t.hp, max_head, on_body, &t);
	size_t pos = 0;
	while (pos < n) {
		size_t piece = n - pos;
		if (seed) {
			seed = seed * 1103515245u + 12345u;
			piece = MIN(piece, 1 + (seed >> 16) % 17);
		}
		feed(&t, d + pos, piece);
		pos += piece;
	}
	if (!t.err) {
		hp_event_t e = hp_eof(&t.hp);
		buf_addf(&t.log, "EOF%d", (int)e);
	}
	buf_addf(&t.log, "P%zu", t.body.len);
	buf_addsv(&t.log, sv_of(&t.body));
	hp_free(&t.hp);
	buf_free(&t.body);
	buf_addch(&t.log, '\0');
	return buf_detach(&t.log, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t limits[] = {16384, 64, 256, 1024, 8192, 17, 100, 4096};
	if (size < 2)
		return 0;
	size_t max_head = limits[data[0] % 8];
	uint32_t seed = (uint32_t)data[1] * 2654435761u + 1;
	const char *d = (const char *)data + 2;
	size -= 2;

	char *whole = run(d, size, max_head, 0);
	char *split = run(d, size, max_head, seed);
	char *bytes = NULL;
	if (size < 512) { /* byte by byte too */
		tr_t t;
		memset(&t, 0, sizeof(t));
		hp_init(&t.hp, max_head, on_body, &t);
		for (size_t i = 0; i < size; i++)
			feed(&t, d + i, 1);
		if (!t.err)
			buf_addf(&t.log, "EOF%d", (int)hp_eof(&t.hp));
		buf_addf(&t.log, "P%zu", t.body.len);
		buf_addsv(&t.log, sv_of(&t.body));
		buf_addch(&t.log, '\0');
		hp_free(&t.hp);
		buf_free(&t.body);
		bytes = buf_detach(&t.log, NULL);
	}
	if (strcmp(whole, split) || (bytes && strcmp(whole, bytes))) {
		fprintf(stderr, "whole: %s\nsplit: %s\nbytes: %s\n", whole, split, bytes ? bytes : "-");
		abort();
	}
	free(whole);
	free(split);
	free(bytes);
	return 0;
}
