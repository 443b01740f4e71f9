/*
 * stream.c - a transformer's answer sent to the client as it leaves the
 * worker (etl.h: etl_transform_open, etl_stream_*), instead of read whole
 * into memory first.
 *
 * The exchange (xchg.c, on the network pool or the request's loop) reads
 * the answer's head (stdio: the frame's "STATUS LEN" line; http: the
 * response's head, answer.c) and stops there; the client's response then goes out with Content-Length: LEN,
 * its body pulled by the connection's fill calls on the request's worker.
 * Guarantees:
 *  1. No copy through user space where the client's connection is plain
 *     TCP: a stdio worker's stdout is itself the pipe the body is spliced
 *     from (http_resp_stream_pipe); an http worker's socket is spliced
 *     into a pipe kept with the worker (empty between its answers), and
 *     from there to the client. Over
 *     TLS, a bounded copy: at most STREAM_PIECE bytes read per fill.
 *  2. Exactly LEN bytes reach the client, never a byte past the frame: a
 *     splice or read takes at most what is still owed. A worker that
 *     closes or exits before LEN bytes, writes more than LEN (stdio: bytes
 *     past the frame found in its pipe), or waits longer than what is
 *     left of the transformer's timeout, is killed (a warning naming the
 *     transformer and the reason) and the client's connection is cut: a
 *     short body under its Content-Length, never a wrong body that looks
 *     complete, never a hang.
 *  3. The timeout counts only the waits on the worker (a slow client is
 *     not the worker's fault); every wait is an event with that timeout,
 *     so a stream never waits unbounded.
 *  4. The worker is busy (worker.c rule 1) until etl_stream_close: kept
 *     for the next request after a body read whole (http: its connection
 *     kept when the answer allowed it and nothing followed the body);
 *     otherwise a stdio worker is killed (its pipe is out of step) and an
 *     http worker's connection closed. The stream holds a reference to
 *     the transformer: etl rm during a stream frees it after the stream.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "etl_int.h"
#include "aisd/banned.h"

#define STREAM_PIECE (256u << 10) /* TLS: bytes read into memory per fill (rule 1) */
#define STREAM_PIPE (1u << 20)    /* http: the pipe between the worker's socket and the client */

etl_stream_t *etl_stream_new(void)
{
	etl_stream_t *st = xcalloc(1, sizeof(*st));
	st->fd = -1;
	return st;
}

uint64_t etl_stream_len(const etl_stream_t *st) { return st->len; }

/* Rule 2: the worker killed for why; the client's connection is cut. */
static int fail(etl_stream_t *st, const char *why)
{
	buf_t m = BUF_INIT;
	buf_addf(&m, "%s (%llu of %llu bytes sent to the client)", why, (unsigned long long)(st->len - st->left),
		 (unsigned long long)st->len);
	etl_worker_kill(st->e, st->wi, m.ptr);
	buf_free(&m);
	if (!st->http)
		st->fd = -1; /* the worker's stdout, closed with it */
	st->failed = true;
	return AIS_ERR;
}

static void on_ready(evutil_socket_t fd, short what, void *arg)
{
	etl_stream_t *st = arg;
	(void)fd;
	(void)what;
	http_resp_stream_wake(st->req); /* (may end the request: st is not touched after) */
}

/* Rule 3: nothing to send now; the response waits for fd to be readable,
 * at most what is left of the timeout. */
static int wait_worker(etl_stream_t *st, http_req_t *req)
{
	if (st->budget_ns <= 0) {
		buf_t m = BUF_INIT;
		buf_addf(&m, "timed out after %llu ms mid-answer", (unsigned long long)st->e->spec.timeout_ms);
		int rc = fail(st, m.ptr);
		buf_free(&m);
		return rc;
	}
	if (!st->ev)
		st->ev = event_new(http_req_base(req), st->fd, EV_READ, on_ready, st);
	struct timeval tv = {.tv_sec = st->budget_ns / 1000000000, .tv_usec = st->budget_ns % 1000000000 / 1000 + 1};
	event_add(st->ev, &tv);
	st->wait_ns = time_mono_ns();
	return AIS_AGAIN;
}

/* The body was all sent: what follows it in the worker's pipe or socket
 * decides whether the worker stays in step (rule 4). */
static int finish(etl_stream_t *st)
{
	if (!st->http) {
		int avail = 0;
		if (ioctl(st->fd, FIONREAD, &avail) == 0 && avail > 0)
			return fail(st, "malformed answer (bytes past its frame)");
	} else {
		char c;
		if (st->keep && recv(st->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) != -1)
			st->keep = false; /* bytes past the answer, or its end (answer.c rule 4) */
	}
	st->done = true;
	return AIS_DONE;
}

/* Rule 1, over TLS (or where splice cannot): up to STREAM_PIECE bytes
 * read into out. */
static int fill_copy(etl_stream_t *st, http_req_t *req, buf_t *out)
{
	size_t k = (size_t)MIN(st->left, (uint64_t)STREAM_PIECE);
	buf_grow(out, k);
	ssize_t n = read(st->fd, out->ptr + out->len, k);
	if (n > 0) {
		out->len += (size_t)n;
		st->left -= (uint64_t)n;
		return AIS_OK;
	}
	if (n == 0)
		return fail(st, st->http ? "closed the connection mid-answer" : "exited mid-answer");
	if (errno != EAGAIN && errno != EINTR)
		return fail(st, strerror(errno));
	return wait_worker(st, req);
}

/* Rule 1, stdio to a plain connection: what the worker's stdout holds (at
 * most what is owed) spliced to the client. */
static int fill_pipe(etl_stream_t *st, http_req_t *req)
{
	int avail = 0;
	if (ioctl(st->fd, FIONREAD, &avail) == 0 && avail > 0) {
		if ((uint64_t)avail > st->left)
			return fail(st, "malformed answer (bytes past its frame)");
		http_resp_stream_pipe(req, st->fd, (uint64_t)avail);
		st->left -= (uint64_t)avail;
		return AIS_OK;
	}
	struct pollfd p = {.fd = st->fd, .events = POLLIN};
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR)))
		return fail(st, "exited mid-answer"); /* empty, and no writer left */
	return wait_worker(st, req);
}

/* Rule 1, http to a plain connection: the socket spliced into the stream's
 * pipe (empty: its last segment is out), the pipe to the client. */
static int fill_sock(etl_stream_t *st, http_req_t *req, buf_t *out)
{
	if (!st->pipe) {
		int *p = st->e->w[st->wi].spipe; /* kept across the worker's requests: empty after each */
		if (p[0] < 0) {
			if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) {
				p[0] = p[1] = -1;
				st->copy = true;
				return fill_copy(st, req, out);
			}
			fcntl(p[1], F_SETPIPE_SZ, STREAM_PIPE); /* best effort (pipe-max-size) */
		}
		st->pipe = p;
	}
	ssize_t n = splice(st->fd, NULL, st->pipe[1], NULL, (size_t)MIN(st->left, (uint64_t)STREAM_PIPE),
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n > 0) {
		http_resp_stream_pipe(req, st->pipe[0], (uint64_t)n);
		st->left -= (uint64_t)n;
		return AIS_OK;
	}
	if (n == 0)
		return fail(st, "closed the connection mid-answer");
	if (errno == EINVAL || errno == ENOSYS) { /* a kernel that will not splice this socket */
		st->copy = true;
		return fill_copy(st, req, out);
	}
	if (errno != EAGAIN && errno != EINTR)
		return fail(st, strerror(errno));
	return wait_worker(st, req);
}

int etl_stream_fill(etl_stream_t *st, http_req_t *req, buf_t *out)
{
	if (st->failed)
		return AIS_ERR;
	if (st->done)
		return AIS_DONE;
	st->req = req;
	if (st->wait_ns) { /* rule 3: only the waits on the worker count */
		st->budget_ns -= time_mono_ns() - st->wait_ns;
		st->wait_ns = 0;
	}
	if (st->pre_off < st->pre.len) { /* the bytes that came with the head */
		buf_add(out, st->pre.ptr + st->pre_off, st->pre.len - st->pre_off);
		st->pre_off = st->pre.len;
		return AIS_OK;
	}
	if (st->left == 0)
		return finish(st);
	if (st->copy || !http_resp_can_splice(req))
		return fill_copy(st, req, out);
	return st->http ? fill_sock(st, req, out) : fill_pipe(st, req);
}

void etl_stream_close(etl_stream_t *st)
{
	if (!st)
		return;
	if (st->ev)
		event_free(st->ev);
	if (st->e) {
		etl_worker_t *w = &st->e->w[st->wi];
		if (st->http) {
			if (st->done && st->keep && w->conn < 0 && w->pid > 0)
				w->conn = st->fd; /* worker.c rule 5 */
			else
				close(st->fd);
			if (!st->done)
				etl_worker_spipe_close(w); /* bytes may be left in it */
		} else if (!st->done && !st->failed && w->pid > 0) {
			log_info("etl %s: worker %u stopped: its answer was not read whole (the client went away)",
				 st->e->spec.name, st->wi);
			etl_worker_kill(st->e, st->wi, NULL);
		}
		etl_worker_release(st->e, st->wi, st->done);
		etl_unref(st->e);
	} else if (st->fd >= 0 && st->http) {
		close(st->fd);
	}
	buf_free(&st->pre);
	free(st);
}
