/*
 * xchg.c - one request to a worker (worker.c rule 2), as a machine of
 * steps: the request (a head, then the object's bytes) is written while
 * the answer is read, each step doing what its descriptors allow. Two
 * drivers run the same steps:
 *  - etl_run, on a pool thread: poll(2) between steps, up to the
 *    transformer's timeout (it may first start a worker or wait for one);
 *  - etl_transform_start, on a client's request loop: events between
 *    steps, so a GET ?etl= that finds a live worker free and its object's
 *    pages cached costs no hand-over to a pool thread and back (two
 *    wake-ups of other threads on each GET, a third of the time of a
 *    1 MiB GET on a small host). Anything that could block (starting a
 *    worker, waiting for one, a disk read) goes to etl_run.
 *
 * Guarantees (both drivers):
 *  1. Every step is non-blocking: the worker's pipes and sockets are
 *     O_NONBLOCK, a file piece is spliced or sent from pages found cached
 *     (etl_transform_start) or read on the pool (etl_run, in_send).
 *  2. The exchange ends in exactly one of: the whole answer in out; its
 *     head read and the rest left for a stream (stream.c); a failure,
 *     after which the worker is killed (its pipe is out of step) or its
 *     connection closed. The worker is released and the transformer's
 *     reference dropped unless a stream took them.
 *  3. An exchange on a loop that its request outlives never runs again:
 *     etl_op_cancel (the request's arena cleanup) frees its events and
 *     ends it as a failure without a callback.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "etl_int.h"
#include "aisd/banned.h"

/* A stdio answer's first read: its frame line and the body's first bytes,
 * a whole pipe page. The page leaves the pipe with the read, so a worker
 * whose frame is a few bytes over the pipe's size (a 1 MiB body in a 1
 * MiB pipe) writes its last bytes at once, and the body is spliced to the
 * client in one piece instead of one more wake-up, splice and packet for
 * a few bytes. */
#define HEAD_READ 4096
#define HEAD_LINE_MAX 63 /* "STATUS LEN": a longer first line is malformed */
/* etl_transform_start: a bigger input goes to the pool (its pages are
 * checked cached before the first step; a big one is not worth it). */
#define LOOP_INPUT_MAX (8u << 20)

struct etl_op {
	etl_t *e;
	unsigned wi;
	bool http;
	int fd;      /* http: the connection; stdio: -1 (the worker's pipes) */
	bool kept;   /* http: fd was kept from an earlier request (worker.c rule 5) */
	bool broken; /* http: it stopped reading: it may still answer */
	bool reuse;  /* http, once answered: fd may carry the next request */
	buf_t hdr;   /* the request's head: a stdio frame header, meta and args; an HTTP head */
	etl_in_t in;
	uint64_t sent, total;
	int64_t deadline;
	buf_t *out;
	etl_stream_t *st;
	int wst; /* the worker's status */
	int *status;
	buf_t *msg;
	char head[HEAD_READ + 1]; /* stdio: the answer's first read */
	size_t hl, want;
	bool have_head;
	etl_answer_t a; /* http: the answer's reader */
	/* etl_transform_start */
	http_req_t *req;
	etl_op_t **opp;
	etl_stream_t **stp;
	void (*done)(http_req_t *req, int rc);
	struct event *evr, *evw;
	int evfd; /* the descriptor evr and evw were made for */
};

/* Sends the next piece of in (done bytes of it sent) to fd, a pipe or
 * (sock) a socket: from memory; from the file by sendfile to a socket or
 * splice to a pipe (the bytes never copied to user space); where those
 * cannot, read through a bounce buffer. A non-blocking splice from a file
 * whose pages are not cached may not progress (EAGAIN into a pipe poll
 * found writable): that piece is read through the bounce buffer, which
 * waits for the disk. The bytes sent; 0: the file ended early; -1 with
 * errno (EAGAIN: fd is full). */
static ssize_t in_send(const etl_in_t *in, uint64_t done, int fd, bool sock)
{
	size_t chunk = (size_t)MIN(in->len - done, (uint64_t)1 << 20);
	if (in->ptr)
		return sock ? send(fd, in->ptr + done, chunk, MSG_NOSIGNAL) : write(fd, in->ptr + done, chunk);
	off_t off = (off_t)(in->off + done);
	ssize_t n = sock ? sendfile(fd, in->fd, &off, chunk)
			 : splice(in->fd, &off, fd, NULL, chunk, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n >= 0 || (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP && (sock || errno != EAGAIN)))
		return n;
	char b[65536];
	n = pread(in->fd, b, MIN(chunk, sizeof(b)), (off_t)(in->off + done));
	if (n <= 0)
		return n;
	return sock ? send(fd, b, (size_t)n, MSG_NOSIGNAL) : write(fd, b, (size_t)n);
}

/* Whether every page of in's file range is in the page cache (a step on a
 * loop must not wait for the disk). */
static bool in_cached(const etl_in_t *in)
{
	if (in->ptr || in->len == 0)
		return true;
	long pg = sysconf(_SC_PAGESIZE);
	off_t start = (off_t)in->off & ~(off_t)(pg - 1);
	size_t span = (size_t)((off_t)in->off - start) + (size_t)in->len;
	size_t npg = (span + (size_t)pg - 1) / (size_t)pg;
	unsigned char vec[(LOOP_INPUT_MAX >> 12) + 2];
	if (npg > sizeof(vec))
		return false;
	void *p = mmap(NULL, span, PROT_READ, MAP_SHARED, in->fd, start);
	if (p == MAP_FAILED)
		return false;
	bool all = mincore(p, span, vec) == 0;
	for (size_t i = 0; all && i < npg; i++)
		all = vec[i] & 1;
	munmap(p, span);
	return all;
}

/* The exchange failed: status, and msg "transformer "NAME": what". */
static int fail(etl_op_t *x, int status, const char *what)
{
	buf_addf(x->msg, "transformer \"%s\": %s", x->e->spec.name, what);
	*x->status = status;
	return AIS_ERR;
}

/* The request to fd until it is all sent or fd took less than a whole
 * piece (full: in_send's try after a wait only, where EAGAIN means pages
 * not cached): AIS_OK or AIS_ERR; *gone: the peer stopped reading (EPIPE,
 * ECONNRESET). */
static int send_some(etl_op_t *x, int fd, bool *gone)
{
	bool sock = x->http;
	while (x->sent < x->total) {
		const char *h = x->hdr.ptr + x->sent;
		size_t hn = x->sent < x->hdr.len ? x->hdr.len - x->sent : 0;
		uint64_t want = hn ? hn : MIN(x->in.len - (x->sent - x->hdr.len), (uint64_t)1 << 20);
		ssize_t n = hn ? (sock ? send(fd, h, hn, MSG_NOSIGNAL) : write(fd, h, hn))
			       : in_send(&x->in, x->sent - x->hdr.len, fd, sock);
		if (n > 0) {
			x->sent += (uint64_t)n;
			if ((uint64_t)n < want)
				return AIS_OK; /* fd is full: the next try waits until it is writable (in_send) */
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return AIS_OK;
		if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
			*gone = true;
			return AIS_OK;
		}
		if (n == 0 && !hn) {
			*x->status = 500;
			buf_addstr(x->msg, "reading the object: short file");
			return AIS_ERR;
		}
		char m[160];
		snprintf(m, sizeof(m), "sending to its worker: %s", n == 0 ? "nothing written" : strerror(errno));
		return fail(x, 502, m);
	}
	return AIS_OK;
}

/* stdio: the answer's "STATUS LEN\n" line, found in head. AIS_AGAIN: not
 * all of it yet. */
static int stdio_head(etl_op_t *x)
{
	const char *nl = memchr(x->head, '\n', MIN(x->hl, (size_t)HEAD_LINE_MAX + 1));
	if (!nl)
		return x->hl <= HEAD_LINE_MAX ? AIS_AGAIN : fail(x, 502, "malformed answer (no frame header)");
	char m[160];
	size_t line = (size_t)(nl - x->head), extra = x->hl - line - 1;
	x->head[line] = '\0';
	unsigned code;
	unsigned long long len;
	char tail;
	if (sscanf(x->head, "%3u %llu%c", &code, &len, &tail) != 2 || code < 100 || code > 599) {
		snprintf(m, sizeof(m), "malformed answer header \"%.40s\"", x->head);
		return fail(x, 502, m);
	}
	if (len > etl_cfg.max_output) {
		snprintf(m, sizeof(m), "answer of %llu bytes is over etl.max_output (%llu)", len,
			 (unsigned long long)etl_cfg.max_output);
		return fail(x, 507, m);
	}
	if (extra > len) /* its next frame before our next request */
		return fail(x, 502, "malformed answer (bytes past its frame)");
	x->wst = (int)code;
	x->want = (size_t)len;
	x->have_head = true;
	buf_add(x->out, nl + 1, extra);
	return AIS_OK;
}

/* One stdio step: what wr (the worker's stdin writable) and rd (its
 * stdout readable) allow, then whether the exchange is over. */
static int stdio_step(etl_op_t *x, bool wr, bool rd)
{
	etl_worker_t *w = &x->e->w[x->wi];
	if (wr && x->sent < x->total) {
		bool gone = false;
		if (send_some(x, w->in, &gone) != AIS_OK)
			return AIS_ERR;
		if (gone)
			return fail(x, 502, "its worker stopped reading");
	}
	if (rd && x->have_head) {
		buf_grow(x->out, x->want - x->out->len + 1);
		ssize_t n = read(w->out, x->out->ptr + x->out->len, x->want - x->out->len);
		if (n == 0)
			return fail(x, 502, "its worker exited mid-answer");
		if (n > 0)
			x->out->len += (size_t)n;
	} else if (rd) {
		ssize_t n = read(w->out, x->head + x->hl, sizeof(x->head) - 1 - x->hl); /* the line and maybe some body */
		if (n == 0)
			return fail(x, 502, "its worker exited without answering");
		if (n > 0) {
			x->hl += (size_t)n;
			if (stdio_head(x) == AIS_ERR)
				return AIS_ERR;
		}
	}
	if (!x->have_head || x->sent < x->total)
		return AIS_AGAIN;
	if (x->out->len == x->want) /* the whole frame read: in step for the next */
		return AIS_OK;
	if (x->st && x->wst == 200 && x->want - x->out->len >= ETL_STREAM_MIN) {
		x->st->fd = w->out; /* worker.c rule 6: the rest of the frame stays in the pipe */
		x->st->len = x->want;
		x->st->left = x->want - x->out->len;
		return AIS_OK;
	}
	return AIS_AGAIN;
}

/* A header value: bytes outside printable ASCII, and '%', percent-encoded. */
static void pct_add(buf_t *b, const char *p, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c > 0x20 && c < 0x7f && c != '%')
			buf_add(b, p + i, 1);
		else
			buf_addf(b, "%%%c%c", hex[c >> 4], hex[c & 15]);
	}
}

/* http: a new connection to the worker's socket in x->fd. AIS_OK or
 * AIS_ERR. */
static int http_connect(etl_op_t *x)
{
	const etl_worker_t *w = &x->e->w[x->wi];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	x->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (x->fd < 0) {
		*x->status = 500;
		buf_addf(x->msg, "socket: %s", strerror(errno));
		return AIS_ERR;
	}
	int sz = 1 << 20; /* fewer wake-ups per object; best effort (wmem_max, rmem_max) */
	setsockopt(x->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(x->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", w->sock);
	if (connect(x->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) { /* AF_UNIX: at once, or the backlog is full */
		char m[160];
		snprintf(m, sizeof(m), "its worker is not serving on its socket (%s)", strerror(errno));
		close(x->fd);
		x->fd = -1;
		return fail(x, 502, m);
	}
	return AIS_OK;
}

/* http: the request (again) from its first byte on x->fd. */
static void http_restart(etl_op_t *x)
{
	x->sent = 0;
	x->broken = false;
	etl_answer_init(&x->a, x->out, etl_cfg.max_output);
}

/* One http step, as stdio_step on the connection (readable rd, writable
 * wr). A kept connection the worker closed before answering is replaced
 * once by a new one (worker.c rule 5): the request is sent again. */
static int http_step(etl_op_t *x, bool wr, bool rd)
{
	if (wr && x->sent < x->total) {
		bool gone = false;
		if (send_some(x, x->fd, &gone) != AIS_OK)
			return AIS_ERR;
		if (gone) {
			x->sent = x->total; /* it may have answered first */
			x->broken = true;
		}
	}
	if (rd) {
		size_t room = x->a.head_done ? (size_t)1 << 20 : 4096; /* rule 3 of answer.c: the body read in place */
		buf_grow(x->out, room + 1);
		ssize_t n = recv(x->fd, x->out->ptr + x->out->len, room, 0);
		if (n <= 0 && (n == 0 || errno == ECONNRESET) && x->a.fed == 0) {
			if (!x->kept)
				return fail(x, 502, "its worker closed the connection without answering");
			close(x->fd); /* a kept connection gone stale: once more on a new one */
			x->fd = -1;
			x->kept = false;
			if (http_connect(x) != AIS_OK)
				return AIS_ERR;
			http_restart(x);
			return AIS_AGAIN;
		}
		if (n >= 0 || errno == ECONNRESET) {
			int r = n > 0 ? etl_answer_feed(&x->a, x->out->ptr + x->out->len, (size_t)n) : etl_answer_eof(&x->a);
			if (r == AIS_ERR) {
				fail(x, x->a.err, x->a.why);
				if (x->a.err == 507)
					buf_addf(x->msg, " (%llu)", (unsigned long long)etl_cfg.max_output);
				return AIS_ERR;
			}
			if (r == AIS_OK) {
				x->wst = x->a.status;
				x->reuse = x->a.keep_alive && x->sent == x->total && !x->broken;
				return AIS_OK;
			}
		}
	}
	uint64_t rest;
	bool keep;
	if (x->st && x->sent == x->total && etl_answer_stream(&x->a, &rest, &keep) && rest >= ETL_STREAM_MIN) {
		x->st->fd = x->fd; /* worker.c rule 6: the rest of the body stays in the socket */
		x->st->http = true;
		x->st->keep = keep && !x->broken;
		x->st->len = x->a.clen;
		x->st->left = rest;
		x->wst = 200;
		return AIS_OK;
	}
	return AIS_AGAIN;
}

static int step(etl_op_t *x, bool wr, bool rd)
{
	if (time_mono_ns() >= x->deadline) {
		*x->status = 504;
		buf_addf(x->msg, "transformer \"%s\" timed out after %llu ms", x->e->spec.name,
			 (unsigned long long)x->e->spec.timeout_ms);
		return AIS_ERR;
	}
	return x->http ? http_step(x, wr, rd) : stdio_step(x, wr, rd);
}

/* The descriptors the next step waits on: *wfd -1 once all is sent. */
static void wait_fds(const etl_op_t *x, int *rfd, int *wfd)
{
	const etl_worker_t *w = &x->e->w[x->wi];
	*rfd = x->http ? x->fd : w->out;
	*wfd = x->sent < x->total ? (x->http ? x->fd : w->in) : -1;
}

/* A new exchange with worker wi of e (busy): its request head built and,
 * for http, its connection (kept or new). AIS_OK or AIS_ERR (status, msg;
 * nothing to undo but the worker). */
static int op_init(etl_op_t *x, etl_t *e, unsigned wi, const char *meta, sv_t args, const etl_in_t *in,
		   int64_t deadline, buf_t *out, etl_stream_t *st, int *status, buf_t *msg)
{
	etl_worker_t *w = &e->w[wi];
	x->e = e;
	x->wi = wi;
	x->http = etl_is_http(e);
	x->fd = -1;
	x->evfd = -1;
	x->in = *in;
	x->deadline = deadline;
	x->out = out;
	x->st = st;
	x->status = status;
	x->msg = msg;
	buf_reset(out);
	if (st)
		st->fd = -1;
	size_t ml = strlen(meta);
	if (!x->http) {
		buf_addf(&x->hdr, "AISETL 1 %zu %zu %llu\n", ml, args.len, (unsigned long long)in->len);
		buf_add(&x->hdr, meta, ml);
		buf_add(&x->hdr, args.ptr, args.len);
	} else {
		buf_addf(&x->hdr, "PUT / HTTP/1.1\r\nHost: aisd-etl\r\nContent-Length: %llu\r\n"
				  "Content-Type: application/octet-stream\r\nAis-Etl-Meta: ",
			 (unsigned long long)in->len);
		pct_add(&x->hdr, meta, ml);
		buf_addstr(&x->hdr, "\r\nAis-Etl-Args: ");
		pct_add(&x->hdr, args.ptr, args.len);
		buf_addstr(&x->hdr, "\r\n\r\n");
		etl_answer_init(&x->a, out, etl_cfg.max_output);
		x->kept = w->conn >= 0;
		x->fd = w->conn;
		w->conn = -1;
		if (!x->kept && http_connect(x) != AIS_OK)
			return AIS_ERR;
	}
	x->total = x->hdr.len + in->len;
	return AIS_OK;
}

/* Guarantee 2: the exchange's end with rc; AIS_OK (out holds a 200
 * answer, or the stream has the worker) or AIS_ERR (status, msg). */
static int op_end(etl_op_t *x, int rc)
{
	etl_t *e = x->e;
	unsigned i = x->wi;
	bool streamed = rc == AIS_OK && x->st && x->st->fd >= 0;
	if (x->http && !streamed) {
		if (rc == AIS_OK && x->reuse && e->w[i].pid > 0 && e->w[i].conn < 0)
			e->w[i].conn = x->fd;
		else if (x->fd >= 0)
			close(x->fd);
	}
	x->fd = -1;
	buf_free(&x->hdr);
	if (rc != AIS_OK) {
		etl_worker_kill(e, i, x->msg->ptr);
		buf_reset(x->out);
		etl_worker_release(e, i, false);
		return AIS_ERR;
	}
	if (streamed) { /* the worker stays busy until etl_stream_close */
		x->st->e = e;
		x->st->wi = i;
		x->st->budget_ns = x->deadline - time_mono_ns();
		x->st->pre = *x->out; /* what came with the head */
		*x->out = (buf_t)BUF_INIT;
		return AIS_OK;
	}
	etl_worker_release(e, i, true);
	if (x->wst != 200) {
		buf_t m = BUF_INIT;
		buf_addf(&m, "transformer \"%s\" failed (%d): %.*s", e->spec.name, x->wst, (int)MIN(x->out->len, 512),
			 x->out->ptr ? x->out->ptr : "");
		buf_addsv(x->msg, sv_of(&m));
		buf_free(&m);
		*x->status = 502;
		buf_reset(x->out);
		return AIS_ERR;
	}
	return AIS_OK;
}

static int isolation_ok(const etl_t *e, int *status, buf_t *msg)
{
	if (etl_cfg.ns_ok || etl_cfg.weak)
		return AIS_OK;
	*status = 503;
	buf_addf(msg, "transformer \"%s\": this machine cannot make the namespaces its workers need (%s); "
		      "etl.allow_weak_isolation would run them without",
		 e->spec.name, etl_cfg.ns_why);
	return AIS_ERR;
}

int etl_run(etl_t *e, const char *meta, sv_t args, const etl_in_t *in, buf_t *out, etl_stream_t *st, int *status,
	    buf_t *msg)
{
	int64_t deadline = time_mono_ns() + (int64_t)e->spec.timeout_ms * 1000000;
	unsigned i;
	if (isolation_ok(e, status, msg) != AIS_OK || etl_acquire(e, deadline, false, &i, status, msg) != AIS_OK)
		return AIS_ERR;
	etl_op_t x = {0};
	int rc = op_init(&x, e, i, meta, args, in, deadline, out, st, status, msg);
	bool wr = false, rd = false;
	while (rc == AIS_OK && (rc = step(&x, wr, rd)) == AIS_AGAIN) {
		int rfd, wfd;
		wait_fds(&x, &rfd, &wfd);
		struct pollfd p[2] = {{.fd = rfd, .events = POLLIN}, {.fd = wfd, .events = POLLOUT}};
		int64_t left = x.deadline - time_mono_ns();
		int r = poll(p, 2, (int)MAX(0, MIN(left / 1000000 + 1, 1000)));
		if (r < 0 && errno != EINTR) {
			*status = 500;
			buf_addf(msg, "poll: %s", strerror(errno));
			rc = AIS_ERR;
			break;
		}
		rd = r > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR));
		wr = r > 0 && (p[1].revents & (POLLOUT | POLLHUP | POLLERR));
		rc = AIS_OK;
	}
	return op_end(&x, rc);
}

/* --- on a request's loop ----------------------------------------------------------- */

/* Frees x; the transformer's reference goes with it unless a stream took
 * it (x->e NULL). */
static void op_free(etl_op_t *x)
{
	if (x->evr)
		event_free(x->evr);
	if (x->evw)
		event_free(x->evw);
	if (x->e)
		etl_unref(x->e);
	free(x);
}

static void on_event(evutil_socket_t fd, short what, void *arg);

/* The exchange waits on its descriptors, at most until its deadline. */
static void op_wait(etl_op_t *x)
{
	int rfd, wfd;
	wait_fds(x, &rfd, &wfd);
	if (rfd != x->evfd) { /* the first wait, or http on a new connection */
		if (x->evr)
			event_free(x->evr);
		if (x->evw)
			event_free(x->evw);
		struct event_base *b = http_req_base(x->req);
		x->evr = event_new(b, rfd, EV_READ, on_event, x);
		x->evw = event_new(b, x->http ? rfd : x->e->w[x->wi].in, EV_WRITE, on_event, x);
		x->evfd = rfd;
	}
	int64_t left = MAX(0, x->deadline - time_mono_ns());
	struct timeval tv = {.tv_sec = left / 1000000000, .tv_usec = left % 1000000000 / 1000 + 1};
	event_add(x->evr, &tv);
	if (wfd >= 0)
		event_add(x->evw, NULL);
}

/* Steps until one must wait; at the end, the caller's done. */
static void op_run(etl_op_t *x, bool wr, bool rd)
{
	int rc = step(x, wr, rd);
	if (rc == AIS_AGAIN) {
		op_wait(x);
		return;
	}
	rc = op_end(x, rc);
	if (rc == AIS_OK && x->st->fd >= 0) {
		*x->stp = x->st; /* with the worker and the reference */
		x->e = NULL;
	} else {
		etl_stream_close(x->st);
	}
	http_req_t *req = x->req;
	void (*done)(http_req_t *, int) = x->done;
	*x->opp = NULL;
	op_free(x);
	done(req, rc);
}

static void on_event(evutil_socket_t fd, short what, void *arg)
{
	etl_op_t *x = arg;
	(void)fd;
	event_del(x->evr); /* the next wait adds what it needs */
	event_del(x->evw);
	op_run(x, (what & EV_WRITE) != 0, (what & EV_READ) != 0); /* a timeout: step finds the deadline passed */
}

int etl_transform_start(http_req_t *req, const char *name, size_t nlen, sv_t bck, sv_t obj, int fd, uint64_t size,
			uint64_t version, sv_t args, buf_t *out, etl_stream_t **stp, int *status, buf_t *msg,
			void (*done)(http_req_t *req, int rc), etl_op_t **opp)
{
	etl_in_t in = {.ptr = NULL, .fd = fd, .off = 0, .len = size};
	*stp = NULL;
	*opp = NULL;
	if (size > LOOP_INPUT_MAX || size > etl_cfg.max_input || !in_cached(&in))
		return AIS_AGAIN;
	etl_t *e = etl_ref(name, nlen);
	if (!e)
		return AIS_AGAIN; /* etl_transform_open answers */
	unsigned i;
	int64_t deadline = time_mono_ns() + (int64_t)e->spec.timeout_ms * 1000000;
	int st0 = 0;
	buf_t m0 = BUF_INIT;
	int rc = isolation_ok(e, &st0, &m0) == AIS_OK ? etl_acquire(e, deadline, true, &i, &st0, &m0) : AIS_ERR;
	buf_free(&m0);
	if (rc != AIS_OK) { /* no live worker free: the pool starts one or waits */
		etl_unref(e);
		return AIS_AGAIN;
	}
	etl_op_t *x = xcalloc(1, sizeof(*x));
	char *meta = etl_meta(bck, obj, (sv_t){NULL, 0}, size, version);
	rc = op_init(x, e, i, meta, args, &in, deadline, out, etl_stream_new(), status, msg);
	free(meta);
	x->req = req;
	x->done = done;
	x->opp = opp;
	x->stp = stp;
	*opp = x;
	if (rc != AIS_OK) {
		op_end(x, AIS_ERR);
		etl_stream_close(x->st);
		*opp = NULL;
		op_free(x);
		done(req, AIS_ERR);
		return AIS_OK;
	}
	op_run(x, true, false);
	return AIS_OK;
}

void etl_op_cancel(etl_op_t *x)
{
	if (!x)
		return;
	etl_t *e = x->e;
	if (x->http) { /* the worker may go on answering into a closed connection: the next request connects anew */
		if (x->fd >= 0)
			close(x->fd);
	} else {
		log_info("etl %s: worker %u stopped: its request was cancelled (the client went away)", e->spec.name,
			 x->wi);
		etl_worker_kill(e, x->wi, NULL); /* its pipe is out of step */
	}
	etl_worker_release(e, x->wi, false);
	buf_free(&x->hdr);
	etl_stream_close(x->st);
	*x->opp = NULL;
	op_free(x);
}
