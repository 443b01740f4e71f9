/*
 * fuzz_xpanswer.c - libFuzzer driver for the node-to-node transport's
 * answer handling (xp.c), on which the gateway's S3 forward relays a
 * target's answer and builds its error messages: a peer on a loopback
 * socket answers each request with the input's bytes and closes.
 *
 * Input: one byte of options (bit 0-1: GET, HEAD, PUT with a body, PUT
 * chunked; bit 2: pause in on_head, resume a few loop turns later or in
 * the next on_body; bit 3: cancel the request from on_body), then the
 * peer's answer, as sent.
 * The base URL, method and target given to xp_start live in a heap block
 * that is scribbled over and freed as soon as xp_start returns (the S3
 * forward's URL lived on a stack frame that returned), so any later read
 * of them is caught (ASan; in a plain build, the message check below).
 * Checks the contract: on_done runs exactly once unless the request was
 * cancelled, never after a cancel; a failure's message starts with the
 * request as sent ("METHOD http://127.0.0.1:PORT/fz/o: ") and is text;
 * on_head comes at most once, before any body byte.
 */
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct event_base *base;
static int lfd = -1, port;

struct peer {
	int fd;
	struct event *ev;
	const uint8_t *ans;
	size_t n;
	size_t seen;
	bool answered;
};

struct run {
	xp_req_t *r;
	unsigned opt;
	int heads, dones;
	uint64_t body;
	bool paused, cancelled;
	char want[128]; /* the message's prefix */
};

static void peer_close(struct peer *p)
{
	if (p->ev)
		event_free(p->ev);
	p->ev = NULL;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

/* Reads the request (whatever comes), answers once the head is in. */
static void peer_rd(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;
	char b[4096];
	(void)what;
	ssize_t k = read(fd, b, sizeof(b));
	if (k > 0)
		p->seen += (size_t)k;
	if (!p->answered && (k <= 0 || p->seen >= 4)) {
		p->answered = true;
		size_t off = 0;
		while (off < p->n) {
			ssize_t w = write(fd, p->ans + off, p->n - off);
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		shutdown(fd, SHUT_WR);
	}
	if (k == 0 || (k < 0 && errno != EAGAIN))
		peer_close(p);
}

static void on_head(xp_req_t *r, void *arg, int status, sv_t hdrs, int64_t clen)
{
	struct run *x = arg;
	(void)status, (void)hdrs, (void)clen;
	if (x->heads++ || x->body)
		abort(); /* one head, before the body */
	if (x->opt & 4) {
		xp_pause(r);
		x->paused = true;
	}
}

static void on_body(xp_req_t *r, void *arg, const char *p, size_t n)
{
	struct run *x = arg;
	if (!x->heads || x->dones || x->cancelled)
		abort();
	if (p && n)
		(void)((volatile const char *)p)[n - 1]; /* the bytes are readable */
	x->body += n;
	if (x->paused) {
		x->paused = false;
		xp_resume(r);
	}
	if (x->opt & 8) {
		x->cancelled = true;
		xp_cancel(r);
		x->r = NULL;
	}
}

static void on_done(xp_req_t *r, void *arg, int err, const char *msg)
{
	struct run *x = arg;
	(void)r;
	if (x->dones++ || x->cancelled)
		abort();
	if (err) {
		if (!msg || strncmp(msg, x->want, strlen(x->want)))
			abort(); /* the request as sent, read back intact */
		for (const char *c = msg; *c; c++)
			if ((unsigned char)*c < 32 || *c == 127)
				abort();
	}
	x->r = NULL;
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	event_base_loopbreak(arg);
}

static void setup(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	base = event_base_new();
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (!base || lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 16) ||
	    getsockname(lfd, (struct sockaddr *)&a, &al))
		abort();
	port = ntohs(a.sin_port);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = {"GET", "HEAD", "PUT", "PUT"};
	if (size < 1)
		return 0;
	if (!base)
		setup();
	struct run x = {.opt = data[0]};
	const char *m = methods[x.opt & 3];
	snprintf(x.want, sizeof(x.want), "%s http://127.0.0.1:%d/fz/o: ", m, port);

	/* the caller's strings: gone once xp_start returns */
	size_t blen = 64;
	char *blk = xmalloc(blen * 3);
	snprintf(blk, blen, "http://127.0.0.1:%d", port);
	snprintf(blk + blen, blen, "%s", m);
	snprintf(blk + 2 * blen, blen, "/fz/o");
	const char *hdrs[] = {"X-Fuzz: 1", NULL};
	xp_spec_t s = {
		.base = blk, .method = blk + blen, .target = sv_from(blk + 2 * blen), .headers = hdrs,
		.body_len = (x.opt & 3) == 2 ? 5 : (x.opt & 3) == 3 ? -2 : -1, .timeout_ms = 300,
		.on_head = on_head, .on_body = on_body, .on_done = on_done, .arg = &x,
	};
	x.r = xp_start(base, &s);
	memset(blk, 'X', blen * 3 - 1);
	blk[blen * 3 - 1] = '\0';
	free(blk);
	if ((x.opt & 3) >= 2) {
		xp_send(x.r, "hello", 5);
		xp_end(x.r);
	}

	/* the peer: accept the one connection, answer with the input */
	struct peer p = {.fd = -1, .ans = data + 1, .n = size - 1};
	struct event *stop = evtimer_new(base, on_stop, base);
	struct timeval tick = {0, 2000};
	for (int i = 0; i < 2000 && (x.r || p.fd >= 0); i++) { /* (at most ~4 s: the timeout ends it first) */
		if (p.fd < 0 && !p.answered) {
			p.fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (p.fd >= 0) {
				p.ev = event_new(base, p.fd, EV_READ | EV_PERSIST, peer_rd, &p);
				event_add(p.ev, NULL);
			}
		}
		if (x.paused && x.r && i % 4 == 3) { /* (a paused answer is resumed by its reader) */
			x.paused = false;
			xp_resume(x.r);
		}
		evtimer_add(stop, &tick);
		event_base_loop(base, EVLOOP_ONCE);
	}
	if (x.r && !x.cancelled)
		abort(); /* never finished: the timeout did not fire */
	event_free(stop);
	peer_close(&p);
	xp_pool_free(base);
	if (!x.cancelled && x.dones != 1)
		abort();
	return 0;
}
