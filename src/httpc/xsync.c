/*
 * xsync.c - the node-to-node transport for threads that may block (the I/O
 * pool, the rebalance and resilver jobs): an object file PUT to another
 * target with sendfile, a streamed PUT, and a GET whose body goes to a
 * sink as it arrives (a copy fetched for a read, an erasure-coded slice),
 * over a keep-alive connection per thread and peer (xp.h, "blocking
 * side"), plain http or https.
 *
 * Guarantees:
 *  1. The head goes out with "Expect: 100-continue" and the body only
 *     after the receiver's 100: a receiver that already has the object
 *     (a conditional send, Ais-Have-*) or refuses it answers at once, and
 *     no byte of the body crosses the network.
 *  2. The body goes from the file to the socket with sendfile (no copy in
 *     user space); over https with SSL_sendfile when the kernel took the
 *     session's encryption (kTLS, asked for when net.tls.ktls is on), else
 *     read and encrypted in 256 KiB pieces.
 *  3. A connection is reused only after a whole answer with keep-alive and
 *     a body sent whole (or never promised); a reused connection that fails
 *     before any answer byte is retried once on a new one (the body is a
 *     file: it can be sent again; a GET's sink has had nothing yet).
 *  4. Every socket wait is bounded by the request's timeout (the TLS
 *     handshake by the connect's 3 s); an answer is read in waits of at
 *     most XS_WAIT_MS, so that a node that is stopping
 *     (httpc_stream_abort) ends its transfers within that.
 *  5. https peers get the client context of xp.c (httpc_tls_client: the
 *     CA bundle, the client certificate for mTLS, the peer's name
 *     verified); a plain and a TLS connection to one peer are pooled apart.
 */
#include <errno.h>
#include <http_parser.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "aisd/httpc.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "internal.h"
#include "aisd/banned.h"

#define XS_IDLE 8
#define XS_RESP_MAX (64u << 10)
#define XS_TLS_PIECE (256u << 10)
#define XS_READ (256u << 10) /* bytes asked of the socket per read of an answer */
#define XS_WAIT_MS 1000u     /* rule 4 */
#define XS_ERRBODY 4096u     /* an error answer's body kept for the message of xs_get_to */

/* A connection: its socket and, to an https peer, its TLS session. */
typedef struct {
	int fd;
	SSL *ssl;
} xconn_t;

static __thread struct {
	char key[256];
	bool tls;
	xconn_t c;
} tl_idle[XS_IDLE];
static __thread int tl_nidle;

static void c_close(xconn_t *c)
{
	if (c->ssl)
		SSL_free(c->ssl); /* (no close_notify: the peer reads EOF, as for plain TCP) */
	if (c->fd >= 0)
		close(c->fd);
	c->ssl = NULL;
	c->fd = -1;
}

void xs_release(void)
{
	for (int i = 0; i < tl_nidle; i++)
		c_close(&tl_idle[i].c);
	tl_nidle = 0;
}

static atomic_bool g_stopping; /* httpc_stream_abort: the node is stopping (rule 4) */

void httpc_stream_abort(void) { atomic_store(&g_stopping, true); }

bool httpc_stopping(void) { return atomic_load(&g_stopping); }

/* A pooled connection to key the peer has not closed (nothing readable on
 * it, no TLS bytes held back), or fd -1. */
static xconn_t idle_take(const char *key, bool tls)
{
	for (int i = 0; i < tl_nidle; i++) {
		if (tl_idle[i].tls != tls || strcmp(tl_idle[i].key, key))
			continue;
		xconn_t c = tl_idle[i].c;
		tl_idle[i] = tl_idle[--tl_nidle];
		char b;
		ssize_t k = recv(c.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && (!c.ssl || !SSL_pending(c.ssl)))
			return c;
		c_close(&c);
		i = -1; /* (the array changed: look again) */
	}
	return (xconn_t){.fd = -1};
}

/* A thread that exits closes its pooled connections (a thread made for one
 * transfer, as the erasure-coded reads' are, would leak them otherwise). */
static pthread_key_t idle_key;
static pthread_once_t idle_once = PTHREAD_ONCE_INIT;

static void idle_exit(void *unused)
{
	(void)unused;
	xs_release();
}

static void idle_key_make(void) { pthread_key_create(&idle_key, idle_exit); }

static void idle_put(const char *key, bool tls, xconn_t *c)
{
	pthread_once(&idle_once, idle_key_make);
	pthread_setspecific(idle_key, &tl_nidle); /* any non-NULL value: idle_exit runs */
	if (tl_nidle == XS_IDLE) {
		c_close(&tl_idle[0].c);
		tl_idle[0] = tl_idle[--tl_nidle];
	}
	snprintf(tl_idle[tl_nidle].key, sizeof(tl_idle[0].key), "%s", key);
	tl_idle[tl_nidle].tls = tls;
	tl_idle[tl_nidle++].c = *c;
	*c = (xconn_t){.fd = -1};
}

/* "http(s)://HOST:PORT/path?q": the key HOST:PORT, whether it is https,
 * and the request-target. */
static int split_url(const char *url, char *key, size_t ksz, bool *tls, const char **target)
{
	*tls = !strncmp(url, "https://", 8);
	if (!*tls && strncmp(url, "http://", 7))
		return AIS_ERR;
	const char *h = url + (*tls ? 8 : 7), *slash = strchr(h, '/');
	size_t hl = slash ? (size_t)(slash - h) : strlen(h);
	if (!hl || hl >= ksz)
		return AIS_ERR;
	memcpy(key, h, hl);
	key[hl] = '\0';
	*target = slash ? slash : "/";
	return AIS_OK;
}

static void set_timeout(int fd, uint64_t ms)
{
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000)};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A new connection to HOST:PORT (blocking, connect and TLS handshake
 * bounded by 3 s each); fd -1 with errno and msg on failure. */
static xconn_t dial(const char *key, bool tls, buf_t *msg)
{
	char name[256], port[16];
	xconn_t c = {.fd = -1};
	const char *colon = strrchr(key, ':');
	if (!colon) {
		errno = EINVAL;
		buf_addf(msg, "%s: no port", key);
		return c;
	}
	size_t nl = (size_t)(colon - key);
	if (nl && key[0] == '[' && key[nl - 1] == ']')
		snprintf(name, sizeof(name), "%.*s", (int)nl - 2, key + 1);
	else
		snprintf(name, sizeof(name), "%.*s", (int)nl, key);
	snprintf(port, sizeof(port), "%s", colon + 1);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai = NULL;
	if (getaddrinfo(name, port, &hints, &ai) || !ai) {
		errno = EHOSTUNREACH;
		buf_addf(msg, "%s: connect: %s", key, strerror(errno));
		return c;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		set_timeout(fd, 3000);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			int e = errno;
			close(fd);
			fd = -1;
			errno = e == EINPROGRESS || e == EAGAIN ? ETIMEDOUT : e;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		buf_addf(msg, "%s: connect: %s", key, strerror(errno));
		return c;
	}
	c.fd = fd;
	if (!tls)
		return c;
	if (!(c.ssl = httpc_tls_client(fd, name))) {
		buf_addf(msg, "%s: TLS: no client context (see the log)", key);
		c_close(&c);
		errno = EPROTO;
		return c;
	}
	/* net.tls.ktls: the kernel encrypts where it can, file bodies then go
	 * with SSL_sendfile */
	if (httpc_tls_ktls())
		SSL_set_options(c.ssl, SSL_OP_ENABLE_KTLS);
	ERR_clear_error();
	if (SSL_connect(c.ssl) != 1) {
		unsigned long e = ERR_get_error();
		long v = SSL_get_verify_result(c.ssl);
		buf_addf(msg, "%s: TLS handshake: %s", key,
			 v != X509_V_OK ? X509_verify_cert_error_string(v)
			 : e            ? ERR_reason_error_string(e)
			 : errno        ? strerror(errno)
					: "connection closed");
		c_close(&c);
		errno = EPROTO;
	}
	return c;
}

/* SSL_get_error of k as errno (-1). */
static ssize_t ssl_fail(SSL *ssl, int k)
{
	int e = SSL_get_error(ssl, k);
	errno = e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? ETIMEDOUT /* (a socket timeout) */
		: e == SSL_ERROR_SYSCALL && errno                     ? errno
		: e == SSL_ERROR_ZERO_RETURN                          ? ECONNRESET
								      : EPROTO;
	return -1;
}

static ssize_t c_recv(xconn_t *c, char *b, size_t n)
{
	if (!c->ssl)
		return recv(c->fd, b, n, 0);
	ERR_clear_error();
	int k = SSL_read(c->ssl, b, (int)MIN(n, (size_t)INT_MAX));
	if (k > 0)
		return k;
	if (SSL_get_error(c->ssl, k) == SSL_ERROR_ZERO_RETURN)
		return 0;
	return ssl_fail(c->ssl, k);
}

/* The receive timeout of c's socket for recv_wait: MIN(timeout_ms,
 * XS_WAIT_MS), set once per answer (not per read). */
static void recv_wait_arm(xconn_t *c, uint64_t timeout_ms)
{
	uint64_t wait = MIN(timeout_ms, XS_WAIT_MS);
	struct timeval tv = {(time_t)(wait / 1000), (suseconds_t)(wait % 1000 * 1000)};
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* c_recv in waits of at most XS_WAIT_MS (the socket's timeout, armed by
 * recv_wait_arm) until timeout_ms passed without a byte or the node stops
 * (rule 4). */
static ssize_t recv_wait(xconn_t *c, char *b, size_t n, uint64_t timeout_ms)
{
	uint64_t waited = 0, wait = MIN(timeout_ms, XS_WAIT_MS);
	for (;;) {
		ssize_t k = c_recv(c, b, n);
		bool idle = k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ETIMEDOUT);
		if (!idle && !(k < 0 && errno == EINTR))
			return k;
		if (httpc_stopping()) {
			errno = ECANCELED;
			return -1;
		}
		if (idle && (waited += wait) >= timeout_ms) {
			errno = ETIMEDOUT;
			return -1;
		}
	}
}

static int send_all(xconn_t *c, const char *p, size_t n)
{
	while (n) {
		ssize_t k;
		if (c->ssl) {
			ERR_clear_error();
			int w = SSL_write(c->ssl, p, (int)MIN(n, (size_t)INT_MAX));
			k = w > 0 ? w : ssl_fail(c->ssl, w);
		} else {
			k = send(c->fd, p, n, MSG_NOSIGNAL);
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return AIS_ERR;
		p += k;
		n -= (size_t)k;
	}
	return AIS_OK;
}

/* len bytes of the file fd from off onto the connection (rule 2). */
static int send_file(xconn_t *c, int fd, off_t off, uint64_t len)
{
	uint64_t left = len;
	bool ktls = c->ssl && BIO_get_ktls_send(SSL_get_wbio(c->ssl));
	char *piece = c->ssl && !ktls ? xmalloc(MIN(len, XS_TLS_PIECE)) : NULL;
	while (left) {
		ssize_t k;
		if (!c->ssl) {
			k = sendfile(c->fd, fd, &off, MIN(left, 1u << 30));
		} else if (ktls) {
			ERR_clear_error();
			ossl_ssize_t w = SSL_sendfile(c->ssl, fd, off, MIN(left, 1u << 30), 0);
			k = w > 0 ? (ssize_t)w : ssl_fail(c->ssl, (int)w);
			if (k > 0)
				off += k;
		} else {
			k = pread(fd, piece, MIN(left, XS_TLS_PIECE), off);
			if (k > 0 && send_all(c, piece, (size_t)k) != AIS_OK)
				k = -1;
			if (k > 0)
				off += k;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (!k)
				errno = EIO; /* the file is shorter than it said */
			break;
		}
		left -= (uint64_t)k;
	}
	free(piece);
	return left ? AIS_ERR : AIS_OK;
}

/* --- one answer, read with http-parser ---------------------------------------------- */

struct ans {
	http_parser hp;
	buf_t *hdrs, *body;
	httpc_sink_fn sink; /* a 2xx answer's body goes here as it comes (xs_get_to) */
	void *arg;
	size_t body_max;    /* else at most this much of it is kept in body */
	bool to_sink, sink_failed;
	bool last_value, done;
};

static int a_field(http_parser *hp, const char *at, size_t n)
{
	struct ans *a = hp->data;
	if (a->last_value)
		buf_addstr(a->hdrs, "\r\n");
	a->last_value = false;
	buf_add(a->hdrs, at, n);
	return 0;
}

static int a_value(http_parser *hp, const char *at, size_t n)
{
	struct ans *a = hp->data;
	if (!a->last_value)
		buf_addstr(a->hdrs, ": ");
	a->last_value = true;
	buf_add(a->hdrs, at, n);
	return 0;
}

static int a_hdone(http_parser *hp)
{
	struct ans *a = hp->data;
	if (a->last_value)
		buf_addstr(a->hdrs, "\r\n");
	a->to_sink = a->sink && hp->status_code / 100 == 2;
	return 0;
}

static int a_body(http_parser *hp, const char *at, size_t n)
{
	struct ans *a = hp->data;
	if (a->to_sink) {
		if (a->sink(a->arg, at, n) == AIS_OK)
			return 0;
		a->sink_failed = true;
		return -1;
	}
	if (a->body->len < a->body_max)
		buf_add(a->body, at, MIN(n, a->body_max - a->body->len));
	return 0;
}

static int a_done(http_parser *hp)
{
	((struct ans *)hp->data)->done = true;
	http_parser_pause(hp, 1);
	return 0;
}

static const http_parser_settings a_settings = {
	.on_header_field = a_field,
	.on_header_value = a_value,
	.on_headers_complete = a_hdone,
	.on_body = a_body,
	.on_message_complete = a_done,
};

/* Reads one answer (a 100 Continue is one too) from what is left in *rb
 * (bytes read with an earlier answer), then the socket, waiting at most
 * timeout_ms for each read; a 2xx answer's body goes to sink when there is
 * one (else at most XS_RESP_MAX of it to body). Bytes after the answer stay
 * in *rb. AIS_OK with *status, or AIS_ERR (errno: ECANCELED when the sink
 * refused; *got says whether any byte came). */
static int read_answer(xconn_t *c, buf_t *rb, uint64_t timeout_ms, httpc_sink_fn sink, void *arg, int *status,
		       buf_t *hdrs, buf_t *body, bool *keep, bool *got)
{
	struct ans a = {.hdrs = hdrs, .body = body, .sink = sink, .arg = arg, .body_max = sink ? XS_ERRBODY : XS_RESP_MAX};
	http_parser_init(&a.hp, HTTP_RESPONSE);
	a.hp.data = &a;
	buf_reset(hdrs);
	buf_reset(body);
	recv_wait_arm(c, timeout_ms);
	while (!a.done) {
		if (!rb->len) {
			size_t want = sink ? XS_READ : 16384;
			buf_grow(rb, want);
			ssize_t k = recv_wait(c, rb->ptr, want, timeout_ms);
			if (k < 0)
				return AIS_ERR;
			if (k == 0) {
				errno = ECONNRESET;
				return AIS_ERR;
			}
			rb->len = (size_t)k;
			*got = true;
		}
		size_t used = http_parser_execute(&a.hp, &a_settings, rb->ptr, rb->len);
		if (!a.done && HTTP_PARSER_ERRNO(&a.hp) != HPE_OK) {
			errno = a.sink_failed ? ECANCELED : EPROTO;
			return AIS_ERR;
		}
		buf_consume(rb, MIN(used, rb->len));
	}
	*status = (int)a.hp.status_code;
	*keep = http_should_keep_alive(&a.hp);
	return AIS_OK;
}

bool xs_supports(const char *url) { return xp_supports(url); }

/* --- the PUT --------------------------------------------------------------------------- */

/* One request: the head after its request line and Host (extra, each line
 * ending in CRLF), the caller's hdrs and the signature; a 2xx answer's body
 * to sink (NULL: kept in body, bounded). */
struct xreq {
	const char *method, *url, *key, *target, *extra;
	bool tls;
	const char *const *hdrs;
	uint64_t timeout_ms;
	httpc_sink_fn sink;
	void *arg;
};

/* Sends q's head on a pooled connection to its peer, or a new one, and
 * reads the first answer. AIS_OK with *c open, *st and *keep; AIS_AGAIN: a
 * reused connection failed before any byte of an answer (the peer had
 * closed it: try a new one, rule 3); AIS_ERR with errno and msg. The head
 * is signed anew for each attempt (a receiver takes a signature once). */
static int first_answer(const struct xreq *q, xconn_t *c, buf_t *rb, int *st, buf_t *resp_hdrs, buf_t *body,
			bool *keep, buf_t *msg)
{
	char auth[HTTPC_SIGN_MAX], rid[HTTPC_REQID_LINE_MAX];
	buf_t head = BUF_INIT;
	int rc = AIS_OK;
	buf_addf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\n%s", q->method, q->target, q->key, q->extra);
	for (size_t i = 0; q->hdrs && q->hdrs[i]; i++)
		buf_addf(&head, "%s\r\n", q->hdrs[i]);
	httpc_hlc_line(auth, sizeof(auth));
	buf_addf(&head, "%s\r\n", auth);
	if (httpc_sign(q->method, q->url, NULL, 0, auth, sizeof(auth)))
		buf_addf(&head, "%s\r\n", auth);
	httpc_reqid_line(rid);
	if (rid[0])
		buf_addf(&head, "%s\r\n", rid);
	buf_addstr(&head, "\r\n");
	*c = idle_take(q->key, q->tls);
	bool reused = c->fd >= 0, got = false;
	if (c->fd < 0 && (*c = dial(q->key, q->tls, msg)).fd < 0) {
		rc = AIS_ERR;
	} else {
		set_timeout(c->fd, q->timeout_ms);
		buf_reset(rb);
		if (send_all(c, head.ptr, head.len) != AIS_OK ||
		    read_answer(c, rb, q->timeout_ms, q->sink, q->arg, st, resp_hdrs, body, keep, &got) != AIS_OK) {
			int e = errno;
			c_close(c);
			if (reused && !got) {
				rc = AIS_AGAIN;
			} else {
				buf_addf(msg, "%s: %s", q->key,
					 e == ECANCELED && !httpc_stopping() ? "the body was not taken" : strerror(e));
				errno = e;
				rc = AIS_ERR;
			}
		}
	}
	buf_free(&head);
	return rc;
}

/* Keeps c for the next request to its peer when the answer allows it and
 * nothing follows it, else closes it. */
static void done_with(const struct xreq *q, xconn_t *c, bool keep, const buf_t *rb)
{
	if (keep && !rb->len)
		idle_put(q->key, q->tls, c);
	else
		c_close(c);
}

int xs_put_file(const char *url, const char *const *hdrs, int fd, uint64_t len, uint64_t timeout_ms, int *status,
		bool *sent, buf_t *resp_hdrs, buf_t *msg)
{
	return xs_put_file_at(url, hdrs, fd, 0, len, timeout_ms, status, sent, resp_hdrs, msg);
}

int xs_put_file_at(const char *url, const char *const *hdrs, int fd, uint64_t off, uint64_t len, uint64_t timeout_ms,
		   int *status, bool *sent, buf_t *resp_hdrs, buf_t *msg)
{
	char key[256], extra[96];
	buf_t body = BUF_INIT, rb = BUF_INIT;
	struct xreq q = {.method = "PUT", .url = url, .key = key, .extra = extra, .hdrs = hdrs, .timeout_ms = timeout_ms};
	int rc = AIS_ERR;

	*status = 0;
	*sent = false;
	if (split_url(url, key, sizeof(key), &q.tls, &q.target) != AIS_OK) {
		buf_addf(msg, "%s: not an http(s) URL", url);
		errno = EINVAL;
		return AIS_ERR;
	}
	/* the body is the object's: its checksum covers it */
	snprintf(extra, sizeof(extra), "Content-Length: %llu\r\nExpect: 100-continue\r\n", (unsigned long long)len);
	for (int attempt = 0; attempt < 2; attempt++) {
		xconn_t s;
		int st = 0;
		bool keep = false, got = false;
		int r = first_answer(&q, &s, &rb, &st, resp_hdrs, &body, &keep, msg);
		if (r == AIS_AGAIN)
			continue; /* rule 3: the body is a file, it can be sent again */
		if (r != AIS_OK)
			break;
		if (st == 100) { /* the body, then the final answer */
			if (send_file(&s, fd, (off_t)off, len) != AIS_OK ||
			    read_answer(&s, &rb, timeout_ms, NULL, NULL, &st, resp_hdrs, &body, &keep, &got) != AIS_OK) {
				int e = errno;
				c_close(&s);
				buf_addf(msg, "%s: %s", key, strerror(e));
				errno = e;
				break;
			}
			*sent = true;
			done_with(&q, &s, keep, &rb);
		} else {
			c_close(&s); /* the body was promised and not sent: the connection cannot go on */
		}
		*status = st;
		if (st != 200 && body.len)
			buf_addf(msg, "%.*s", (int)MIN(body.len, 300), body.ptr);
		rc = AIS_OK;
		break;
	}
	buf_free(&body);
	buf_free(&rb);
	return rc;
}

/* --- a GET into a sink ------------------------------------------------------------------- */

int xs_get_to(const char *url, const char *const *hdrs, uint64_t timeout_ms, httpc_sink_fn sink, void *arg,
	      buf_t *resp_hdrs, int *status, buf_t *msg)
{
	char key[256];
	buf_t body = BUF_INIT, rb = BUF_INIT, own = BUF_INIT;
	struct xreq q = {.method = "GET", .url = url, .key = key, .extra = "", .hdrs = hdrs, .timeout_ms = timeout_ms,
			 .sink = sink, .arg = arg};
	int rc = AIS_ERR;

	*status = 0;
	buf_reset(msg);
	if (split_url(url, key, sizeof(key), &q.tls, &q.target) != AIS_OK) {
		buf_addf(msg, "%s: not an http(s) URL", url);
		errno = EINVAL;
		return AIS_ERR;
	}
	for (int attempt = 0; attempt < 2; attempt++) {
		xconn_t s;
		int st = 0;
		bool keep = false;
		int r = first_answer(&q, &s, &rb, &st, resp_hdrs ? resp_hdrs : &own, &body, &keep, msg);
		if (r == AIS_AGAIN)
			continue; /* rule 3: nothing reached the sink */
		if (r != AIS_OK)
			break;
		done_with(&q, &s, keep, &rb);
		*status = st;
		if (st / 100 != 2 && body.len)
			buf_add(msg, body.ptr, body.len);
		rc = AIS_OK;
		break;
	}
	buf_free(&body);
	buf_free(&rb);
	buf_free(&own);
	return rc;
}

/* --- a streamed PUT (chunked, trailers at the end) -------------------------------- */

struct xs_stream {
	xconn_t c;
	char key[256];
	bool tls, dead;
	uint64_t timeout_ms;
	buf_t rb;  /* bytes of an early answer */
	buf_t out; /* https: a chunk with its framing, encrypted in one go */
};

xs_stream_t *xs_stream_open(const char *url, const char *const *hdrs, uint64_t timeout_ms, buf_t *msg)
{
	char auth[HTTPC_SIGN_MAX], rid[HTTPC_REQID_LINE_MAX];
	const char *target;
	xs_stream_t *s = xcalloc(1, sizeof(*s));
	buf_t head = BUF_INIT;

	if (split_url(url, s->key, sizeof(s->key), &s->tls, &target) != AIS_OK) {
		buf_addf(msg, "%s: not an http(s) URL", url);
		free(s);
		return NULL;
	}
	/* a pooled connection the peer has not closed, else a new one: the
	 * body cannot be sent again, so no retry on a stale one */
	if ((s->c = idle_take(s->key, s->tls)).fd < 0 && (s->c = dial(s->key, s->tls, msg)).fd < 0) {
		free(s);
		return NULL;
	}
	set_timeout(s->c.fd, timeout_ms);
	s->timeout_ms = timeout_ms;
	buf_addf(&head, "PUT %s HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n", target, s->key);
	for (size_t i = 0; hdrs && hdrs[i]; i++)
		buf_addf(&head, "%s\r\n", hdrs[i]);
	httpc_hlc_line(auth, sizeof(auth));
	buf_addf(&head, "%s\r\n", auth);
	if (httpc_sign("PUT", url, NULL, 0, auth, sizeof(auth)))
		buf_addf(&head, "%s\r\n", auth);
	httpc_reqid_line(rid);
	if (rid[0])
		buf_addf(&head, "%s\r\n", rid);
	buf_addstr(&head, "\r\n");
	if (send_all(&s->c, head.ptr, head.len) != AIS_OK)
		s->dead = true;
	buf_free(&head);
	return s;
}

int xs_stream_write(xs_stream_t *s, const void *p, size_t n)
{
	char hdr[32];
	if (s->dead)
		return AIS_ERR;
	if (!n)
		return AIS_OK;
	int hl = snprintf(hdr, sizeof(hdr), "%zx\r\n", n);
	if (s->c.ssl) { /* one TLS record train for the chunk and its framing */
		buf_reset(&s->out);
		buf_add(&s->out, hdr, (size_t)hl);
		buf_add(&s->out, p, n);
		buf_addstr(&s->out, "\r\n");
		if (send_all(&s->c, s->out.ptr, s->out.len) != AIS_OK)
			s->dead = true;
		return s->dead ? AIS_ERR : AIS_OK;
	}
	struct iovec iov[3] = {{hdr, (size_t)hl}, {(void *)p, n}, {(void *)"\r\n", 2}};
	size_t left = (size_t)hl + n + 2;
	int i = 0;
	while (left) {
		struct msghdr mh = {.msg_iov = iov + i, .msg_iovlen = (size_t)(3 - i)};
		ssize_t k = sendmsg(s->c.fd, &mh, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			s->dead = true; /* (the peer may have answered early: xs_stream_finish reads it) */
			return AIS_ERR;
		}
		left -= (size_t)k;
		while (k > 0 && i < 3) {
			if ((size_t)k >= iov[i].iov_len) {
				k -= (ssize_t)iov[i].iov_len;
				iov[i++].iov_len = 0;
			} else {
				iov[i].iov_base = (char *)iov[i].iov_base + k;
				iov[i].iov_len -= (size_t)k;
				k = 0;
			}
		}
	}
	return AIS_OK;
}

int xs_stream_finish(xs_stream_t *s, const char *const *trailers, int *status, buf_t *resp_hdrs, buf_t *msg)
{
	buf_t t = BUF_INIT, body = BUF_INIT;
	bool keep = false, got = false;
	*status = 0;
	if (!s->dead) {
		buf_addstr(&t, "0\r\n");
		for (size_t i = 0; trailers && trailers[i]; i++)
			buf_addf(&t, "%s\r\n", trailers[i]);
		buf_addstr(&t, "\r\n");
		if (send_all(&s->c, t.ptr, t.len) != AIS_OK)
			s->dead = true;
	}
	int rc = read_answer(&s->c, &s->rb, s->timeout_ms, NULL, NULL, status, resp_hdrs, &body, &keep, &got);
	if (rc != AIS_OK)
		buf_addf(msg, "%s: %s", s->key, s->dead ? "connection lost while sending" : strerror(errno));
	else if (*status != 200)
		buf_addf(msg, "%s: HTTP %d %.*s", s->key, *status, (int)MIN(body.len, 300), body.ptr ? body.ptr : "");
	if (rc == AIS_OK && keep && !s->dead && !s->rb.len)
		idle_put(s->key, s->tls, &s->c);
	buf_free(&t);
	buf_free(&body);
	return rc == AIS_OK && !s->dead ? AIS_OK : AIS_ERR;
}

void xs_stream_free(xs_stream_t *s)
{
	if (!s)
		return;
	c_close(&s->c); /* a body cut short: the receiver keeps nothing of it */
	buf_free(&s->rb);
	buf_free(&s->out);
	free(s);
}
