/*
 * xp.h - the node-to-node byte transport: HTTP/1.1 requests to other nodes
 * driven on the calling worker's own event loop, without libcurl.
 *
 * Each worker thread has one pool (xp_pool_of) of keep-alive connections
 * per peer (host:port). A request's head goes out in one write with the
 * first body bytes; the answer's head and body are read by http-parser
 * (the parser the server uses), and body bytes are handed to the caller
 * straight from the socket's read buffer.
 *
 * Contract:
 *  1. xp_start returns a request whose callbacks all run on the loop:
 *     on_head once (status, the head's header lines, Content-Length or -1),
 *     on_body for each piece of the (de-chunked) body, then on_done
 *     exactly once (err 0: the whole answer arrived; else an errno and a
 *     message naming the peer), unless xp_cancel came first.
 *  2. Backpressure: the caller stops the answer with xp_pause (no more
 *     socket reads; bytes already read are still delivered) and restarts
 *     it with xp_resume. The request body is appended with xp_send (any
 *     pieces; xp_pending says how much is not written yet) and ended with
 *     xp_end; on_drain runs when the pending bytes are written (or, with
 *     a pipe, some of them: contract 6).
 *  3. A connection goes back to the pool only after a whole answer with
 *     keep-alive. Its read event stays registered while it is idle (no
 *     epoll_ctl per request), so a peer's close drops it from the pool; a
 *     request with a body also checks that before reuse, and a request
 *     without a body that fails before any answer byte on a reused
 *     connection is retried once on a new one (never a request lost on a
 *     stale socket). On a pooled connection the head is written at once.
 *  4. Timeouts: connect within 3 s; then no more than timeout_ms without
 *     progress while not paused (0: none: the caller's side bounds it).
 *  5. Zero-copy answers (xp_splice_to, plain http and a body of known
 *     length): the body's bytes are moved from the socket into the caller's
 *     pipe by splice(2) instead of being read; on_body then runs with p
 *     NULL and n the bytes just put in the pipe. Bytes that came with the
 *     head still arrive first, with p set. When the pipe is full, r
 *     pauses itself (as xp_pause); the caller resumes it once it has taken
 *     bytes out. While r is paused its timeout does not run (the caller is
 *     the slow side, not the peer). The socket's receive buffer is fixed
 *     (2 MiB) from then on, so the kernel holds little behind a pause.
 *  6. Zero-copy request bodies (xp_splice_from, plain http and a body of
 *     known length): xp_send with p NULL says that the body's next n bytes
 *     are in the caller's pipe; they are moved to the socket by splice(2)
 *     after the bytes xp_send queued before (which come first: no bytes
 *     from memory after piped ones). xp_pending counts them; on_drain
 *     runs after each write that took bytes out of the pipe (room for
 *     more), and the timeout counts those writes as progress. A peer
 *     that closes mid-body ends the request with its answer, if it sent
 *     one, else an error.
 *  7. https peers get TLS with the settings of httpc_tls_set (the CA
 *     bundle, the client certificate for mTLS), their names verified; the
 *     session stays with its pooled connection. xp_supports says whether
 *     base can be reached (false for https when the TLS settings fail).
 *     The blocking side (xsync.c) shares that client context.
 */
#ifndef AISD_XP_H
#define AISD_XP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"
#include "aisd/httpc.h" /* httpc_sink_fn */

struct event_base;
typedef struct xp_req xp_req_t;

typedef struct xp_spec {
	const char *base;           /* "http://HOST:PORT" or "https://HOST:PORT" */
	const char *method;
	sv_t target;                /* path and query, as sent */
	const char *const *headers; /* "Name: value" lines, NULL-terminated; copied */
	sv_t header_block;          /* more lines, each "Name: value\r\n", copied as they are */
	int64_t body_len;           /* -1: no body; -2: chunked (unknown length); else Content-Length */
	uint64_t timeout_ms;        /* without progress; 0: none */
	void (*on_head)(xp_req_t *r, void *arg, int status, sv_t headers, int64_t clen);
	void (*on_body)(xp_req_t *r, void *arg, const char *p, size_t n);
	void (*on_drain)(xp_req_t *r, void *arg); /* optional */
	void (*on_done)(xp_req_t *r, void *arg, int err, const char *msg);
	void *arg;
} xp_spec_t;

/* Can the transport reach base (http, or https with usable TLS settings)? */
bool xp_supports(const char *base);
/* Starts s on base's loop. Never NULL; a bad URL or a failed connect
 * completes through on_done from the loop, never inside xp_start. s and
 * every string it points to (base, method, target, headers) are copied:
 * they may be freed, or go out of scope, once xp_start returns. */
xp_req_t *xp_start(struct event_base *base, const xp_spec_t *s);
void xp_send(xp_req_t *r, const char *p, size_t n);
void xp_end(xp_req_t *r);
size_t xp_pending(const xp_req_t *r);
void xp_pause(xp_req_t *r);
void xp_resume(xp_req_t *r);
/* From on_head: the rest of the body goes into the pipe pipe_wfd (its
 * write end, non-blocking, the caller's) by splice (contract 5). false
 * when r cannot (TLS, a chunked or unsized body, HEAD): the body goes on
 * through on_body with p set. */
bool xp_splice_to(xp_req_t *r, int pipe_wfd);
/* Before any body byte is sent: the body's bytes may come from the pipe
 * pipe_rfd (its read end, non-blocking, the caller's, open until r ends)
 * by xp_send(r, NULL, n) (contract 6). false when r cannot (TLS, a
 * chunked or empty body): the caller sends them from memory. */
bool xp_splice_from(xp_req_t *r, int pipe_rfd);
/* Stops r (its connection is closed) and frees it; on_done never runs. Not
 * from inside r's on_done. */
void xp_cancel(xp_req_t *r);
/* Closes the idle connections of the pool on base (a worker's loop about
 * to go). Pools left are freed at the process's exit. */
void xp_pool_free(struct event_base *base);

/*
 * The blocking side (xsync.c), for threads that may block (the I/O pool,
 * jobs): PUTs len bytes of the object file fd (from its start) to url
 * (http, or https: SSL_sendfile under kTLS, else encrypted in pieces)
 * with sendfile, after the receiver's 100 Continue; hdrs
 * are extra "Name: value" lines. A receiver may answer at once without
 * taking the body (*sent false): a conditional send it already has, or a
 * refusal. AIS_OK with the final *status and its headers in resp_hdrs
 * (msg holds an error answer's body), or AIS_ERR with errno and msg (no
 * answer). Connections are kept per thread and peer until xs_release.
 */
bool xs_supports(const char *url); /* as xp_supports */
int xs_put_file(const char *url, const char *const *hdrs, int fd, uint64_t len, uint64_t timeout_ms, int *status,
		bool *sent, buf_t *resp_hdrs, buf_t *msg);
/* The same, with the len bytes of fd from offset off. */
int xs_put_file_at(const char *url, const char *const *hdrs, int fd, uint64_t off, uint64_t len, uint64_t timeout_ms,
		   int *status, bool *sent, buf_t *resp_hdrs, buf_t *msg);
void xs_release(void);
/*
 * A GET (blocking side): a 2xx answer's body goes to sink as it arrives
 * (AIS_ERR from sink ends the transfer); another answer's body (at most
 * 4 KiB) to msg; resp_hdrs (may be NULL) gets the answer's head lines.
 * AIS_OK when a whole answer came (any *status), else AIS_ERR with errno
 * and msg. A wait longer than timeout_ms without a byte fails; so does
 * every transfer once httpc_stream_abort was called.
 */
int xs_get_to(const char *url, const char *const *hdrs, uint64_t timeout_ms, httpc_sink_fn sink, void *arg,
	      buf_t *resp_hdrs, int *status, buf_t *msg);
/*
 * A streamed PUT (blocking side): the head at once, the body as chunks
 * while the caller produces it, trailer fields at the end (a checksum known
 * only then), then the answer. open: NULL (msg says why) when the peer
 * cannot be reached; write: AIS_ERR once the connection is lost (the
 * stream is dead; finish still reads an early answer); finish: AIS_OK with
 * the final *status, else AIS_ERR with msg; free closes a stream not
 * finished (the receiver then keeps nothing of it).
 */
typedef struct xs_stream xs_stream_t;
xs_stream_t *xs_stream_open(const char *url, const char *const *hdrs, uint64_t timeout_ms, buf_t *msg);
int xs_stream_write(xs_stream_t *s, const void *p, size_t n);
int xs_stream_finish(xs_stream_t *s, const char *const *trailers, int *status, buf_t *resp_hdrs, buf_t *msg);
void xs_stream_free(xs_stream_t *s);

#endif
