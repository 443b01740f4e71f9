/*
 * resp.c - building and writing responses: the head, then a body from
 * memory, from a file, or from a producer in chunked encoding.
 *
 * File bodies never block the event loop on a disk read: a small file is
 * read with preadv2(RWF_NOWAIT) and, if that would block, on the I/O pool;
 * a large file is sent with sendfile(2) in chunks whose page-cache residency
 * is checked first with mincore(2) — a cold chunk is read ahead on the I/O
 * pool, then sent from the cache. So one client's cold read never delays
 * other clients of the same worker.
 *
 * A memory body is not copied when it is big or held elsewhere: the body
 * by reference (c->mref) goes out after the head in one sendmsg. It is the
 * one such mechanism: http_resp_send_ref points it at memory the request
 * holds until its end (a hot-cache entry, let go of by the request's arena
 * cleanup, once, whether the answer ends or the connection dies), and
 * http_resp_send_buf at a big buffer it hands to the connection (c->spiece,
 * kept as the next stream's piece buffer). Over TLS a small body is copied
 * after the head instead (one SSL_write, not two).
 *
 * A stream's pieces are not copied again: a piece of HTTP_PIECE_REF bytes
 * or more is written from the producer's buffer by one sendmsg with its
 * chunk framing around it (c->out, the piece, c->after); bytes that a file
 * segment follows go with MSG_MORE, so a header and the file's first bytes
 * share packets; a file segment's closing CRLF waits for the next piece.
 * A pipe segment (a relay's bytes spliced from another socket) goes to the
 * client by splice(2), the same way: no copy through user space.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <strings.h>

#include "internal.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

void resp_reset(http_conn_t *c)
{
	if (c->ffd >= 0)
		close(c->ffd);
	if (c->pass_fd >= 0)
		close(c->pass_fd);
	c->pass_fd = -1;
	if (c->fmap)
		munmap(c->fmap, c->fmap_len);
	c->ffd = -1;
	c->fmap = NULL;
	c->fmap_len = 0;
	c->foff = 0;
	c->fleft = 0;
	c->checked_end = 0;
	c->fsmall_read = false;
	c->fill = NULL;
	c->sfile = false;
	c->spipe = false;
	c->pleft = 0;
	c->stream_sized = false;
	c->chunked = false;
	c->spend = false;
	c->spoff = 0;
	c->after_off = 0;
	buf_reset(&c->after);
	c->status = 0;
	c->rstate = RS_IDLE;
	c->head_only = false;
	c->kind = RB_NONE;
	c->out_off = 0;
	c->mref = NULL;
	c->mref_len = c->mref_off = 0;
	c->bytes_out = 0;
	c->head_out = 0;
	buf_reset(&c->out);
	buf_reset(&c->rhdrs);
	if (c->out.cap > (1 << 20))
		buf_free(&c->out);
	c->spiece.len = 0; /* a body sent by http_resp_send_buf */
	if (c->spiece.cap > (1 << 20))
		buf_free(&c->spiece);
}

void http_resp_status(http_req_t *req, int status) { req->conn->status = status; }

void http_resp_info(const http_req_t *req, http_resp_info_t *out)
{
	const http_conn_t *c = req->conn;
	out->status = c->status;
	out->body_out = c->bytes_out > c->head_out ? c->bytes_out - c->head_out : 0;
}

sv_t http_resp_header_get(const http_req_t *req, const char *name)
{
	const buf_t *h = &req->conn->rhdrs;
	size_t nl = strlen(name);
	const char *p = h->ptr, *end = h->ptr + h->len;
	while (p && p < end) {
		const char *eol = memchr(p, '\r', (size_t)(end - p));
		if (!eol)
			break;
		if ((size_t)(eol - p) > nl && p[nl] == ':' && !strncasecmp(p, name, nl))
			return sv_trim((sv_t){p + nl + 1, (size_t)(eol - p) - nl - 1});
		p = eol + 2;
	}
	return (sv_t){NULL, 0};
}
bool http_resp_started(const http_req_t *req) { return resp_started(req->conn); }

/* Ends a header line whose value starts at start. */
static void header_end(buf_t *h, size_t start)
{
	for (size_t i = start; i < h->len; i++) /* no response splitting */
		if (h->ptr[i] == '\r' || h->ptr[i] == '\n' || h->ptr[i] == '\0')
			h->ptr[i] = ' ';
	buf_add(h, "\r\n", 2);
}

void http_resp_header(http_req_t *req, const char *name, const char *fmt, ...)
{
	buf_t *h = &req->conn->rhdrs;
	va_list ap;
	buf_addstr(h, name);
	buf_add(h, ": ", 2);
	size_t start = h->len;
	va_start(ap, fmt);
	buf_vaddf(h, fmt, ap);
	va_end(ap);
	header_end(h, start);
}

void http_resp_header_sv(http_req_t *req, sv_t name, sv_t value)
{
	buf_t *h = &req->conn->rhdrs;
	buf_addsv(h, name);
	buf_add(h, ": ", 2);
	size_t start = h->len;
	buf_addsv(h, value);
	header_end(h, start);
}

void http_resp_header_str(http_req_t *req, const char *name, const char *value)
{
	http_resp_header_sv(req, sv_from(name), sv_from(value));
}

void http_resp_header_i64(http_req_t *req, const char *name, int64_t value)
{
	buf_t *h = &req->conn->rhdrs;
	buf_addstr(h, name);
	buf_add(h, ": ", 2);
	buf_addi64(h, value);
	buf_add(h, "\r\n", 2);
}

void resp_build_head(http_conn_t *c, uint64_t length, bool chunked)
{
	int st = c->status ? c->status : 200;
	bool nobody_status = st < 200 || st == 204 || st == 304;

	c->status = st;
	c->rstate = RS_SENDING;
	if (c->req.method == HTTP_HEAD || nobody_status)
		c->head_only = true;
	if (c->req.has_body && c->bstate != BS_DONE && c->bstate != BS_JSON)
		c->close_after = true;
	if (c->hp.head.http_minor == 0 && chunked) {
		chunked = false; /* HTTP/1.0: end of body = close */
		c->close_after = true;
	}
	c->chunked = chunked;
	/* piece by piece, no printf: this is every answer's head */
	buf_t *o = &c->out;
	buf_addstr(o, "HTTP/1.1 ");
	buf_addi64(o, st);
	buf_addch(o, ' ');
	buf_addstr(o, http_status_text(st));
	buf_addstr(o, "\r\nDate: ");
	buf_addstr(o, worker_date(c->w));
	buf_addstr(o, "\r\nServer: aisd\r\n");
	if (!nobody_status) {
		if (chunked) {
			buf_addstr(o, "Transfer-Encoding: chunked\r\n");
		} else if (c->kind != RB_STREAM || c->stream_sized) {
			buf_addstr(o, "Content-Length: ");
			buf_addu64(o, length);
			buf_addstr(o, "\r\n");
		}
	}
	if (c->req.id) {
		buf_addstr(o, HTTP_REQID_HDR ": ");
		buf_addstr(o, c->req.id_str);
		buf_addstr(o, "\r\n");
	}
	if (c->close_after || !c->keep_alive)
		buf_addstr(o, "Connection: close\r\n");
	else if (c->hp.head.http_minor == 0)
		buf_addstr(o, "Connection: keep-alive\r\n");
	if (c->same_host) { /* a client on this host: where it may read files locally */
		buf_addstr(o, HTTP_HDR_LOCAL_SOCKET ": ");
		buf_addstr(o, c->w->srv->unix_path);
		buf_addstr(o, "\r\n");
	}
	buf_addsv(&c->out, sv_of(&c->rhdrs));
	buf_add(&c->out, "\r\n", 2);
	c->head_out = c->out.len;
}

static bool begin(http_req_t *req, enum resp_kind kind)
{
	http_conn_t *c = req->conn;
	if (resp_started(c)) {
		buf_t t = BUF_INIT;
		http_target_redact(req->target, &t);
		log_errx("response sent twice for %.*s", (int)MIN(t.len, 256), t.ptr ? t.ptr : "");
		buf_free(&t);
		return false;
	}
	c->kind = kind;
	return true;
}

void http_resp_send(http_req_t *req, const void *body, size_t len)
{
	http_conn_t *c = req->conn;
	if (!begin(req, RB_MEM))
		return;
	resp_build_head(c, len, false);
	if (!c->head_only)
		buf_add(&c->out, body, len);
	conn_run(c);
}

void http_resp_send_ref(http_req_t *req, const void *body, size_t len)
{
	http_conn_t *c = req->conn;
	if (c->ssl && len < HTTP_PIECE_REF) { /* one SSL_write with the head */
		http_resp_send(req, body, len);
		return;
	}
	if (!begin(req, RB_MEM))
		return;
	resp_build_head(c, len, false);
	if (!c->head_only && len) {
		c->mref = body;
		c->mref_len = len;
	}
	conn_run(c);
}

/* A body of HTTP_PIECE_REF bytes or more is not copied: the connection
 * takes its buffer (as c->spiece, which outlives the request) and sends it
 * by reference. */
void http_resp_send_buf(http_req_t *req, buf_t *b)
{
	http_conn_t *c = req->conn;
	if (b->len >= HTTP_PIECE_REF && !resp_started(c)) {
		buf_free(&c->spiece);
		c->spiece = *b;
		*b = (buf_t)BUF_INIT;
		http_resp_send_ref(req, c->spiece.ptr, c->spiece.len);
		return;
	}
	http_resp_send(req, b->ptr ? b->ptr : "", b->len); /* twice: logged there */
	buf_free(b);
}

void http_resp_send_head(http_req_t *req, uint64_t len)
{
	http_conn_t *c = req->conn;
	if (!begin(req, RB_NONE))
		return;
	resp_build_head(c, len, false);
	c->head_only = true;
	conn_run(c);
}

/* Whether the request asks for file bodies as descriptors ("Ais-Local-Fd:
 * true"); only a unix-socket connection can have them. */
static bool wants_fd(const http_req_t *req)
{
	sv_t v = http_req_header(req, HTTP_HDR_LOCAL_FD);
	return req->conn->local && v.len && !sv_eqstr(v, "0") && !sv_eqcase(v, sv_from("false"));
}

void http_resp_send_file(http_req_t *req, int fd, off_t off, uint64_t len)
{
	http_conn_t *c = req->conn;
	if (!begin(req, RB_FILE)) {
		close(fd);
		return;
	}
	if (!c->head_only && wants_fd(req)) {
		/* the bytes are [off, off + len) of the descriptor sent with the head */
		http_resp_header(req, HTTP_HDR_LOCAL_FD_OFFSET, "%lld", (long long)off);
		http_resp_header(req, HTTP_HDR_LOCAL_FD_SIZE, "%llu", (unsigned long long)len);
		resp_build_head(c, 0, false);
		c->kind = RB_NONE;
		c->pass_fd = fd;
		HM_INC(c->w->st.fds_passed, 1);
		HM_INC(c->w->st.served_local, len);
		conn_run(c);
		return;
	}
	resp_build_head(c, len, false);
	if (c->head_only || len == 0) {
		close(fd);
		c->kind = RB_NONE;
	} else {
		c->ffd = fd;
		c->foff = off;
		c->fleft = len;
	}
	conn_run(c);
}

void http_resp_send_stream(http_req_t *req, http_fill_fn fill)
{
	http_conn_t *c = req->conn;
	if (!begin(req, RB_STREAM))
		return;
	c->fill = fill;
	resp_build_head(c, 0, true);
	if (c->head_only)
		c->kind = RB_NONE;
	conn_run(c);
}

void http_resp_send_stream_len(http_req_t *req, http_fill_fn fill, uint64_t len)
{
	http_conn_t *c = req->conn;
	if (!begin(req, RB_STREAM))
		return;
	c->fill = fill;
	c->stream_sized = true;
	resp_build_head(c, len, false);
	if (c->head_only)
		c->kind = RB_NONE;
	conn_run(c);
}

void http_resp_stream_file(http_req_t *req, int fd, off_t off, uint64_t len)
{
	http_conn_t *c = req->conn;
	if (c->kind != RB_STREAM || c->sfile || c->ffd >= 0 || len == 0) {
		if (c->kind != RB_STREAM || c->sfile || c->ffd >= 0)
			log_errx("stream file outside a stream fill");
		close(fd);
		return;
	}
	c->ffd = fd;
	c->foff = off;
	c->fleft = len;
	c->sfile = true;
}

bool http_resp_can_splice(const http_req_t *req) { return !req->conn->ssl; }

void http_resp_stream_pipe(http_req_t *req, int fd, uint64_t len)
{
	http_conn_t *c = req->conn;
	if (c->kind != RB_STREAM || c->sfile || c->spipe || c->ssl || len == 0) {
		if (len)
			log_errx("stream pipe outside a plain stream fill");
		return;
	}
	c->pfd = fd;
	c->pleft = len;
	c->spipe = true;
}

void http_resp_stream_wake(http_req_t *req)
{
	http_conn_t *c = req->conn;
	if (c->rstate == RS_STREAM_AGAIN) { /* woken before its wait began: fill runs next */
		c->rstate = RS_SENDING;
		return;
	}
	if (c->rstate != RS_STREAM_WAIT)
		return;
	c->rstate = RS_SENDING;
	conn_run(c);
}

void http_resp_error(http_req_t *req, int status, const char *fmt, ...)
{
	buf_t msg = BUF_INIT, body = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	buf_addstr(&body, "{\"message\":");
	buf_add_json_str(&body, msg.ptr ? msg.ptr : "", msg.len);
	buf_addf(&body, ",\"status\":%d}", status);
	if (status >= 500) {
		buf_t t = BUF_INIT;
		http_target_redact(req->target, &t);
		log_warnx("%s %.*s: %d %s", http_method_name(req->method), (int)MIN(t.len, 256), t.ptr ? t.ptr : "",
			  status, msg.ptr ? msg.ptr : "");
		buf_free(&t);
	}
	http_resp_status(req, status);
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &body);
	buf_free(&msg);
}

/* n more response bytes went to the client. */
static void count_out(http_conn_t *c, uint64_t n)
{
	c->bytes_out += n;
	HM_INC(c->w->st.bytes_out, n);
	HM_INC(*(c->peer_here ? &c->w->st.served_local : &c->w->st.served_net), n);
}

/* --- file bodies --------------------------------------------------------- */

/* Per pool thread read-ahead buffer, freed when the thread exits. */
#define SCRATCH (256 * 1024)
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_init(void) { pthread_key_create(&scratch_key, free); }

static char *scratch(void)
{
	pthread_once(&scratch_once, scratch_init);
	char *p = pthread_getspecific(scratch_key);
	if (!p) {
		p = xmalloc(SCRATCH);
		pthread_setspecific(scratch_key, p);
	}
	return p;
}

/* I/O pool: pull [foff, foff + chunk) into the page cache. */
static void readahead_work(http_req_t *req)
{
	http_conn_t *c = req->conn;
	uint64_t len = MIN(c->fleft, (uint64_t)HTTP_FILE_CHUNK);
	off_t off = c->foff;
	char *buf = scratch();
	posix_fadvise(c->ffd, off, (off_t)len, POSIX_FADV_WILLNEED);
	while (len > 0) {
		ssize_t n = pread(c->ffd, buf, MIN(len, (uint64_t)SCRATCH), off);
		if (n <= 0)
			break; /* sendfile will report it */
		off += n;
		len -= (uint64_t)n;
	}
	c->checked_end = off;
}

/* I/O pool: read a small file body into c->out. */
static void small_read_work(http_req_t *req)
{
	http_conn_t *c = req->conn;
	while (c->fleft > 0) {
		ssize_t n = pread(c->ffd, c->out.ptr + c->out.len, c->fleft, c->foff);
		if (n <= 0) {
			/* send what we have; the short body and the close tell the client */
			log_warn("reading object file");
			c->kind = RB_NONE;
			c->close_after = true;
			return;
		}
		c->out.len += (size_t)n;
		c->foff += n;
		c->fleft -= (uint64_t)n;
	}
}

static bool resident(http_conn_t *c, off_t off, size_t len)
{
	static long pg;
	unsigned char vec[(HTTP_FILE_CHUNK >> 12) + 2];
	if (!pg)
		pg = sysconf(_SC_PAGESIZE);
	if (!c->fmap) {
		c->fmap_len = (size_t)(c->foff + (off_t)c->fleft);
		c->fmap = mmap(NULL, c->fmap_len, PROT_READ, MAP_SHARED, c->ffd, 0);
		if (c->fmap == MAP_FAILED) {
			c->fmap = NULL;
			return false;
		}
	}
	off_t start = off & ~(off_t)(pg - 1);
	size_t span = (size_t)(off - start) + len;
	if ((size_t)((span + (size_t)pg - 1) / (size_t)pg) > sizeof(vec))
		return false;
	if (mincore((char *)c->fmap + start, span, vec) < 0)
		return false;
	for (size_t i = 0; i < (span + (size_t)pg - 1) / (size_t)pg; i++)
		if (!(vec[i] & 1))
			return false;
	return true;
}

/*
 * HTTPS without kTLS: the next piece of a resident file chunk is copied
 * into c->out (a read from the page cache: it does not block) and goes out
 * through SSL_write with the rest of c->out.
 */
static int tls_file_piece(http_conn_t *c, size_t chunk)
{
	size_t len = MIN(chunk, (size_t)HTTP_TLS_PIECE);
	buf_grow(&c->out, len);
	ssize_t n = pread(c->ffd, c->out.ptr + c->out.len, len, c->foff);
	if (n <= 0) {
		if (n == 0)
			log_warnx("object file shorter than its metadata says");
		else
			log_warn("reading object file");
		return AIS_ERR;
	}
	c->out.len += (size_t)n;
	c->foff += n;
	c->fleft -= (uint64_t)n;
	return AIS_OK;
}

static int file_step(http_conn_t *c)
{
	if (c->fleft <= HTTP_SMALL_FILE && !c->fsmall_read) {
		c->fsmall_read = true;
		buf_grow(&c->out, c->fleft);
		struct iovec iov = {c->out.ptr + c->out.len, c->fleft};
		ssize_t n = preadv2(c->ffd, &iov, 1, c->foff, RWF_NOWAIT);
		if (n > 0) {
			c->out.len += (size_t)n;
			c->foff += n;
			c->fleft -= (uint64_t)n;
		}
		if (c->fleft == 0)
			return AIS_OK;
		if (n < 0 && errno != EAGAIN && errno != EOPNOTSUPP && errno != EINVAL) {
			log_warn("reading object file");
			return AIS_ERR;
		}
		conn_offload(c, small_read_work, NULL);
		return AIS_AGAIN;
	}
	size_t chunk = (size_t)MIN(c->fleft, (uint64_t)HTTP_FILE_CHUNK);
	if (c->foff + (off_t)chunk > c->checked_end) {
		if (!resident(c, c->foff, chunk)) {
			conn_offload(c, readahead_work, NULL);
			return AIS_AGAIN;
		}
		c->checked_end = c->foff + (off_t)chunk;
	}
	ssize_t n;
	if (c->ssl) {
		if (!tls_ktls_send(c))
			return tls_file_piece(c, chunk);
		n = tls_sendfile(c, c->ffd, c->foff, chunk);
		if (n > 0)
			c->foff += n;
	} else {
		n = sendfile(c->fd, c->ffd, &c->foff, chunk);
	}
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return errno == EAGAIN ? AIS_AGAIN : AIS_OK;
		if (errno != EPIPE && errno != ECONNRESET)
			log_warn("sendfile");
		return AIS_ERR;
	}
	if (n == 0) {
		log_warnx("object file shorter than its metadata says");
		return AIS_ERR;
	}
	c->fleft -= (uint64_t)n;
	count_out(c, (uint64_t)n);
	return AIS_OK;
}

/* The next bytes of a pipe segment, spliced to the client. */
static int pipe_step(http_conn_t *c)
{
	ssize_t n = splice(c->pfd, NULL, c->fd, NULL, MIN(c->pleft, (uint64_t)HTTP_FILE_CHUNK),
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return errno == EAGAIN ? AIS_AGAIN : AIS_OK;
		if (errno != EPIPE && errno != ECONNRESET)
			log_warn("splice to the client");
		return AIS_ERR;
	}
	if (n == 0) {
		log_errx("stream pipe ended %llu bytes early", (unsigned long long)c->pleft);
		return AIS_ERR;
	}
	c->pleft -= (uint64_t)n;
	HM_INC(c->w->st.spliced, (uint64_t)n);
	count_out(c, (uint64_t)n);
	return AIS_OK;
}

/* A file segment of a stream was sent: release it, close its chunk. */
static void stream_file_end(http_conn_t *c)
{
	close(c->ffd);
	if (c->fmap)
		munmap(c->fmap, c->fmap_len);
	c->ffd = -1;
	c->fmap = NULL;
	c->fmap_len = 0;
	c->checked_end = 0;
	c->fsmall_read = false;
	c->sfile = false;
	if (c->chunked)
		buf_add(&c->out, "\r\n", 2);
}

/* One fill call and its framing. */
static int stream_piece(http_conn_t *c)
{
	buf_t piece = c->spiece; /* kept across calls: no allocation per piece */
	piece.len = 0;
	c->spiece = (buf_t)BUF_INIT;
	int r = c->fill(&c->req, &piece);
	c->spiece = piece;
	c->spiece.len = 0;
	if (r == AIS_ERR)
		return AIS_ERR;
	buf_t *tail = &c->out; /* where what follows the piece goes */
	if (piece.len) {
		if (c->chunked)
			buf_addf(&c->out, "%zx\r\n", piece.len);
		if (piece.len >= HTTP_PIECE_REF) { /* written from its buffer */
			c->spiece.len = piece.len;
			c->spend = true;
			c->spoff = 0;
			tail = &c->after;
		} else {
			buf_addsv(&c->out, sv_of(&piece));
		}
		if (c->chunked)
			buf_add(tail, "\r\n", 2);
	}
	if ((c->sfile || c->spipe) && c->chunked)
		buf_addf(tail, "%llx\r\n", (unsigned long long)(c->sfile ? c->fleft : c->pleft));
	if ((c->sfile || c->spipe) && r == AIS_DONE) {
		log_errx("stream fill queued a file or pipe and ended in one call");
		return AIS_ERR;
	}
	if (r == AIS_DONE) {
		c->rstate = RS_STREAM_END;
		if (c->chunked)
			buf_addstr(tail, "0\r\n\r\n");
	} else if (r == AIS_AGAIN && c->out.len == c->out_off && !c->spend) {
		c->rstate = RS_STREAM_WAIT;
		return AIS_AGAIN;
	} else if (r == AIS_AGAIN && !piece.len) {
		c->rstate = RS_STREAM_AGAIN; /* earlier pieces go out first, then wait */
	}
	return r;
}

/* Fills the next bytes to write: small pieces gather in c->out (up to 16
 * fill calls) until HTTP_PIECE_REF bytes, a piece written from its buffer,
 * a file segment, the end, or a producer with nothing more now. */
static int stream_step(http_conn_t *c)
{
	for (int i = 0; i < 16; i++) {
		int r = stream_piece(c);
		if (r != AIS_OK || c->sfile || c->spipe || c->spend || c->out.len - c->out_off >= HTTP_PIECE_REF)
			return r == AIS_ERR || (r == AIS_AGAIN && c->rstate == RS_STREAM_WAIT) ? r : AIS_OK;
	}
	return AIS_OK;
}

/* A pending piece goes into c->out after all (a small file segment is
 * about to be read into c->out behind it). */
static void stream_flatten(http_conn_t *c)
{
	if (!c->spend)
		return;
	buf_add(&c->out, c->spiece.ptr + c->spoff, c->spiece.len - c->spoff);
	buf_add(&c->out, c->after.ptr + c->after_off, c->after.len - c->after_off);
	c->spend = false;
	c->spoff = c->after_off = 0;
	c->spiece.len = 0;
	buf_reset(&c->after);
}

/* Writes what c->out (and a pending piece with its framing) hold, with
 * MSG_MORE when a file's bytes follow (over TLS: the first of them).
 * Returns the bytes written, or -1 (errno). */
static ssize_t out_write(http_conn_t *c)
{
	struct iovec iov[4];
	struct msghdr mh = {.msg_iov = iov};
	int flags = MSG_NOSIGNAL;

	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int))];
	} cm;

	if (c->out_off < c->out.len)
		iov[mh.msg_iovlen++] = (struct iovec){c->out.ptr + c->out_off, c->out.len - c->out_off};
	if (c->pass_fd >= 0) { /* rides with the head's first bytes */
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.space;
		mh.msg_controllen = sizeof(cm.space);
		struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &c->pass_fd, sizeof(int));
	}
	if (c->mref_off < c->mref_len) /* RB_MEM by reference: after the head (TLS: once out is written) */
		iov[mh.msg_iovlen++] = (struct iovec){(void *)(c->mref + c->mref_off), c->mref_len - c->mref_off};
	if (c->spend) {
		if (c->spoff < c->spiece.len)
			iov[mh.msg_iovlen++] = (struct iovec){c->spiece.ptr + c->spoff, c->spiece.len - c->spoff};
		if (c->after_off < c->after.len)
			iov[mh.msg_iovlen++] = (struct iovec){c->after.ptr + c->after_off, c->after.len - c->after_off};
	}
	if ((c->fleft > HTTP_SMALL_FILE && ((c->kind == RB_STREAM && c->sfile) || c->kind == RB_FILE)) ||
	    (c->kind == RB_STREAM && c->spipe))
		flags |= MSG_MORE;
	/* TLS: one buffer per SSL_write (a retry after EAGAIN repeats it) */
	ssize_t n = c->ssl ? tls_write(c, iov[0].iov_base, iov[0].iov_len) : sendmsg(c->fd, &mh, flags);
	if (n <= 0)
		return n;
	if (c->pass_fd >= 0) { /* the client has its own copy now */
		close(c->pass_fd);
		c->pass_fd = -1;
	}
	size_t k = (size_t)n, m;
	m = MIN(k, c->out.len - c->out_off);
	c->out_off += m;
	k -= m;
	m = MIN(k, c->mref_len - c->mref_off);
	c->mref_off += m;
	k -= m;
	if (c->spend) {
		m = MIN(k, c->spiece.len - c->spoff);
		c->spoff += m;
		k -= m;
		c->after_off += k;
		if (c->spoff == c->spiece.len && c->after_off == c->after.len) {
			c->spend = false;
			c->spoff = c->after_off = 0;
			c->spiece.len = 0;
			buf_reset(&c->after);
		}
	}
	return n;
}

int resp_flush(http_conn_t *c)
{
	/* A small file body joins the head in one send. */
	if (c->kind == RB_FILE && !c->fsmall_read && c->fleft > 0 && c->fleft <= HTTP_SMALL_FILE) {
		int r = file_step(c);
		if (r != AIS_OK)
			return r;
	}
	for (;;) {
		/* A small file segment of a stream joins what precedes it in one send. */
		if (c->kind == RB_STREAM && c->sfile && !c->fsmall_read && c->fleft > 0 &&
		    c->fleft <= HTTP_SMALL_FILE) {
			stream_flatten(c);
			int r = file_step(c);
			if (r != AIS_OK)
				return r;
		}
		if (c->out_off < c->out.len || c->mref_off < c->mref_len || c->spend) {
			ssize_t n = out_write(c);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					return AIS_AGAIN;
				return AIS_ERR;
			}
			count_out(c, (uint64_t)n);
			continue;
		}
		c->out.len = 0;
		c->out_off = 0;
		int r;
		switch (c->kind) {
		case RB_FILE:
			if (c->fleft == 0 && !c->fsmall_read)
				return AIS_OK;
			if (c->fleft == 0 && c->out.len == 0 && c->fsmall_read) {
				c->fsmall_read = false;
				return AIS_OK;
			}
			r = file_step(c);
			break;
		case RB_STREAM:
			if (c->sfile) { /* a file segment inside the stream */
				if (c->fleft > 0) {
					r = file_step(c);
					break;
				}
				stream_file_end(c); /* its CRLF joins the next piece */
			}
			if (c->spipe) {
				if (c->pleft > 0) {
					r = pipe_step(c);
					break;
				}
				c->spipe = false;
				if (c->chunked)
					buf_add(&c->out, "\r\n", 2);
			}
			if (c->rstate == RS_STREAM_END)
				return AIS_OK;
			if (c->rstate == RS_STREAM_AGAIN) {
				c->rstate = RS_STREAM_WAIT;
				return AIS_AGAIN;
			}
			r = stream_step(c);
			break;
		default:
			return AIS_OK;
		}
		if (r != AIS_OK)
			return r;
	}
}
