/*
 * xp.c - the node-to-node byte transport (xp.h): HTTP/1.1 over plain TCP on
 * the worker's event loop, with a keep-alive pool per worker thread and the
 * server's parser (http-parser) for the answers.
 *
 * A request is one state machine on its socket: connect (non-blocking),
 * write what is pending (head, then body pieces as the caller adds them),
 * read and parse the answer while the caller is not paused, then hand the
 * connection back to the pool (keep-alive, the whole body sent and read)
 * or close it. A sized answer may be spliced into the caller's pipe
 * instead of read, and a sized request body spliced out of the caller's
 * pipe instead of written from memory (no copy through user space). Every
 * callback runs from the request's event handlers; a callback may cancel
 * the request (r->cb counts the nesting, r->dead makes the handler stop
 * and free it once the outermost callback is back), so nothing touches
 * freed memory.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <event2/event.h>
#include <fcntl.h>
#include <http_parser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "internal.h"
#include "aisd/banned.h"

#define XP_KEY_MAX 256
#define XP_IDLE_MAX 64           /* idle connections kept per worker */
#define XP_READ (256u << 10)     /* bytes per socket read */
#define XP_CONNECT_MS 3000
#define XP_SPLICE_MAX (1u << 20) /* bytes per splice into the caller's pipe */
#define XP_LOWAT (256u << 10)    /* splicing: the socket wakes us with this much (SO_RCVLOWAT) */
#define XP_SPLICE_RCVBUF (2u << 20) /* splicing: the socket's receive buffer (SO_RCVBUF) */

/* A connection to a peer. Its read event stays registered for the
 * socket's life (no epoll_ctl per request): it drives the request that
 * uses the connection, or, while the connection is idle in the pool, tells
 * that the peer closed it (or sent a stray byte), and it is closed. */
struct xconn {
	int fd;
	SSL *ssl;             /* https: the session goes on with the socket */
	char key[XP_KEY_MAX]; /* host:port */
	struct xconn *next;   /* idle: the pool's list */
	struct xpool *pool;
	struct event *rd;     /* EV_READ | EV_PERSIST (event_assign'ed in our memory: see pools_free_all) */
	xp_req_t *req;        /* the request it serves; NULL while idle */
};

struct xpool {
	struct event_base *base;
	struct xconn *idle;
	size_t nidle;
	char *rbuf; /* XP_READ bytes: every read of this worker (callbacks take the bytes at once) */
};

static __thread struct xpool *tl_pool;

struct xp_req {
	struct event_base *base;
	struct xpool *pool;
	xp_spec_t s;     /* the caller's spec; its strings point into own (xp_start copies them) */
	char *own;       /* base and method, NUL-terminated, one after the other */
	char key[XP_KEY_MAX];
	struct sockaddr_storage addr;
	socklen_t alen;
	struct xconn *c; /* the connection (NULL before it is opened, or once it is given back) */
	int fd;          /* c's socket, or -1 */
	SSL *ssl;        /* https peers (c's session while r holds c) */
	bool tls;
	char host[XP_KEY_MAX]; /* the peer's name, for its certificate */
	char port[16];         /* and its port: resolved (addr) only for a new connection */
	bool rd_wants_wr; /* SSL_read needs the socket writable */
	bool reused, connecting, retried;
	struct event *wr, *tmo, *kick;
	buf_t head;     /* the request head, kept for a retry */
	buf_t out;      /* bytes to write */
	size_t out_off;
	int64_t body_len;
	bool body_end, body_sent;
	buf_t in;
	http_parser hp;
	http_parser_settings hs;
	buf_t hdrs;     /* the answer's header lines */
	bool last_value; /* header parse: the last piece was a value */
	bool any_byte, head_done, msg_done;
	int status;
	bool paused;
	int spipe;       /* splicing: the caller's pipe (write end), else -1 */
	int bpipe;       /* the body from the caller's pipe (read end, xp_splice_from), else -1 */
	uint64_t bleft;  /* ... bytes in it not written yet (after out) */
	uint64_t sleft;  /* splicing: body bytes still on the socket */
	int lowat;       /* the socket's SO_RCVLOWAT when not 1 */
	int cb;         /* callback nesting */
	bool dead;      /* cancelled (or done) inside a callback: free on return */
	bool finished;  /* on_done ran */
};

/* --- the pool -------------------------------------------------------------------- */

static void sock_close(int fd, SSL *ssl)
{
	if (ssl)
		SSL_free(ssl); /* (no close_notify: the peer reads EOF, as for plain TCP) */
	close(fd);
}

/* Every pool, so that xp_pool_free may run on another thread than the
 * pool's worker (a server frees its workers' things after they stopped). */
static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;
static struct xpool *pools[256];
static size_t npools;

/* Closes c. loop_gone: its event_base may be freed already (the process's
 * exit): its event is not deleted from it, only its memory freed. */
static void conn_free(struct xconn *c, bool loop_gone)
{
	if (!loop_gone)
		event_del(c->rd);
	free(c->rd);
	sock_close(c->fd, c->ssl);
	free(c);
}

static void conn_close(struct xconn *c) { conn_free(c, false); }

static void pool_free(struct event_base *base, bool loop_gone);

/* At exit, the pools left (their workers' loops are gone by then). */
static void pools_free_all(void)
{
	for (;;) {
		pthread_mutex_lock(&pools_mu);
		struct event_base *b = npools ? pools[0]->base : NULL;
		pthread_mutex_unlock(&pools_mu);
		if (!b)
			return;
		pool_free(b, true);
	}
}

static pthread_once_t atexit_once = PTHREAD_ONCE_INIT;
static void atexit_init(void) { atexit(pools_free_all); }

static struct xpool *pool_of(struct event_base *base)
{
	if (!tl_pool || tl_pool->base != base) {
		pthread_once(&atexit_once, atexit_init);
		tl_pool = NULL;
		pthread_mutex_lock(&pools_mu);
		for (size_t i = 0; i < npools && !tl_pool; i++)
			if (pools[i]->base == base)
				tl_pool = pools[i];
		if (!tl_pool && npools < ARRAY_SIZE(pools)) {
			tl_pool = xcalloc(1, sizeof(*tl_pool));
			tl_pool->base = base;
			tl_pool->rbuf = xmalloc(XP_READ);
			pools[npools++] = tl_pool;
		}
		pthread_mutex_unlock(&pools_mu);
		if (!tl_pool)
			fatalx("xp: more than %zu event loops", ARRAY_SIZE(pools));
	}
	return tl_pool;
}

void xp_pool_free(struct event_base *base) { pool_free(base, false); }

static void pool_free(struct event_base *base, bool loop_gone)
{
	struct xpool *p = NULL;
	pthread_mutex_lock(&pools_mu);
	for (size_t i = 0; i < npools; i++) {
		if (pools[i]->base == base) {
			p = pools[i];
			pools[i] = pools[--npools];
			break;
		}
	}
	pthread_mutex_unlock(&pools_mu);
	if (!p)
		return;
	if (tl_pool == p)
		tl_pool = NULL;
	for (struct xconn *c = p->idle, *n; c; c = n) {
		n = c->next;
		conn_free(c, loop_gone);
	}
	free(p->rbuf);
	free(p);
}

/* An idle connection to key. check: make sure the peer has not closed
 * it (no byte and no EOF waiting), for a request that cannot be retried;
 * otherwise a close not yet seen by the idle event shows as a failure
 * before any answer byte, and the request is retried (contract 3). */
static struct xconn *pool_take(struct xpool *p, const char *key, bool check)
{
	for (struct xconn **pp = &p->idle, *c; (c = *pp);) {
		if (strcmp(c->key, key)) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		p->nidle--;
		if (!check)
			return c;
		char b;
		ssize_t k = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return c;
		conn_close(c); /* closed by the peer, or a stray byte: not reusable */
	}
	return NULL;
}

static void pool_put(struct xpool *p, struct xconn *c)
{
	if (p->nidle >= XP_IDLE_MAX) { /* drop the oldest (the list's tail) */
		struct xconn **pp = &p->idle;
		while ((*pp)->next)
			pp = &(*pp)->next;
		conn_close(*pp);
		*pp = NULL;
		p->nidle--;
	}
	c->req = NULL;
	event_add(c->rd, NULL); /* (no system call when it is registered already) */
	c->next = p->idle;
	p->idle = c;
	p->nidle++;
}

static void on_rd(evutil_socket_t fd, short what, void *arg);

/* The read event of a connection: its request's, or, idle, the peer's
 * close (or a stray byte): the connection goes. */
static void conn_rd(evutil_socket_t fd, short what, void *arg)
{
	struct xconn *c = arg;
	if (c->req) {
		on_rd(fd, what, c->req);
		return;
	}
	for (struct xconn **pp = &c->pool->idle; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			c->pool->nidle--;
			break;
		}
	}
	conn_close(c);
}

/* --- TLS ------------------------------------------------------------------------------ */

static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static SSL_CTX *ctx;

/* The client context of every https peer: the settings of httpc_tls_set
 * (CA bundle, client certificate for mTLS), peers' names verified. */
static void ctx_init(void)
{
	const char *ca, *cert, *key;
	httpc_tls_get(&ca, &cert, &key);
	SSL_CTX *c = SSL_CTX_new(TLS_client_method());
	if (!c)
		return;
	SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if ((ca ? SSL_CTX_load_verify_locations(c, ca, NULL) : SSL_CTX_set_default_verify_paths(c)) != 1 ||
	    (cert && SSL_CTX_use_certificate_chain_file(c, cert) != 1) ||
	    (key && SSL_CTX_use_PrivateKey_file(c, key, SSL_FILETYPE_PEM) != 1)) {
		log_warnx("xp: TLS client settings: %s", ERR_reason_error_string(ERR_get_error()));
		SSL_CTX_free(c);
		return;
	}
	ctx = c;
}

/* recv/send through the connection's TLS session when it has one. -1 with
 * errno EAGAIN: wait (SSL_read may need the socket writable: rd_wants_wr;
 * SSL_write readable: the read event brings it back, on_rd). */
static ssize_t x_recv(xp_req_t *r, char *b, size_t n)
{
	if (!r->ssl)
		return recv(r->fd, b, n, 0);
	ERR_clear_error();
	int k = SSL_read(r->ssl, b, (int)MIN(n, (size_t)INT_MAX));
	if (k > 0)
		return k;
	int e = SSL_get_error(r->ssl, k);
	if (e == SSL_ERROR_ZERO_RETURN)
		return 0;
	if (e == SSL_ERROR_WANT_WRITE)
		r->rd_wants_wr = true;
	errno = e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? EAGAIN
		: e == SSL_ERROR_SYSCALL && errno                     ? errno
								      : EPROTO;
	return -1;
}

static ssize_t x_send(xp_req_t *r, const char *p, size_t n, bool *want_rd)
{
	*want_rd = false;
	if (!r->ssl)
		return send(r->fd, p, n, MSG_NOSIGNAL);
	ERR_clear_error();
	int k = SSL_write(r->ssl, p, (int)MIN(n, (size_t)INT_MAX));
	if (k > 0)
		return k;
	int e = SSL_get_error(r->ssl, k);
	*want_rd = e == SSL_ERROR_WANT_READ;
	errno = e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? EAGAIN
		: e == SSL_ERROR_SYSCALL && errno                     ? errno
								      : EPROTO;
	return -1;
}

SSL *httpc_tls_client(int fd, const char *host)
{
	pthread_once(&ctx_once, ctx_init);
	SSL *ssl = ctx ? SSL_new(ctx) : NULL;
	if (!ssl) {
		errno = EPROTO;
		return NULL;
	}
	SSL_set_fd(ssl, fd);
	SSL_set_connect_state(ssl);
	SSL_set_tlsext_host_name(ssl, host);
	SSL_set1_host(ssl, host);
	return ssl;
}

/* The TLS session of a new connection (the handshake runs in the first
 * SSL_write). */
static int tls_start(xp_req_t *r)
{
	return (r->ssl = httpc_tls_client(r->fd, r->host)) ? AIS_OK : AIS_ERR;
}

/* --- the request ------------------------------------------------------------------ */

bool xp_supports(const char *base)
{
	if (base && !strncmp(base, "https://", 8)) {
		pthread_once(&ctx_once, ctx_init);
		return ctx != NULL;
	}
	return base && !strncmp(base, "http://", 7);
}

/* Closes the connection r holds. */
static void req_conn_close(xp_req_t *r)
{
	if (!r->c)
		return;
	r->c->ssl = r->ssl;
	conn_close(r->c);
	r->c = NULL;
	r->fd = -1;
	r->ssl = NULL;
}

static void req_free(xp_req_t *r)
{
	req_conn_close(r);
	if (r->wr)
		event_free(r->wr);
	if (r->tmo)
		event_free(r->tmo);
	if (r->kick)
		event_free(r->kick);
	buf_free(&r->head);
	buf_free(&r->out);
	buf_free(&r->in);
	buf_free(&r->hdrs);
	free(r->own);
	free(r);
}

/* r is ending: no event of it fires any more. */
static void quiesce(xp_req_t *r)
{
	r->finished = true;
	if (r->c)
		event_del(r->c->rd);
	if (r->wr)
		event_del(r->wr);
	event_del(r->tmo);
	if (r->kick)
		event_del(r->kick);
}

/* The socket wakes us once it holds n bytes (splicing: a wakeup per
 * packet would cost the sender a thread wakeup each on this host). */
static bool set_lowat(xp_req_t *r, int n)
{
	if (n == r->lowat || !n)
		return true;
	if (setsockopt(r->fd, SOL_SOCKET, SO_RCVLOWAT, &n, sizeof(n)))
		return false;
	r->lowat = n;
	return true;
}

/* Ends r: on_done (once), then r is freed (now, or when the callback that
 * is running returns). */
static void finish(xp_req_t *r, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void finish(xp_req_t *r, int err, const char *fmt, ...)
{
	char msg[512] = "";
	if (r->finished || r->dead)
		return;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		int n = snprintf(msg, sizeof(msg), "%s %s%.*s: ", r->s.method, r->s.base,
				 (int)MIN(r->s.target.len, 200), r->s.target.ptr);
		if (n > 0 && (size_t)n < sizeof(msg))
			vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	/* (a pooled socket wakes for every byte: the next answer may be small) */
	bool lowat_1 = r->lowat <= 1 || (r->fd >= 0 && set_lowat(r, 1));
	if (!err && r->c && !r->connecting && r->body_sent && lowat_1 && http_should_keep_alive(&r->hp)) {
		struct xconn *c = r->c; /* (given back before quiesce: its read event stays) */
		c->ssl = r->ssl;
		r->c = NULL;
		r->fd = -1;
		r->ssl = NULL;
		pool_put(r->pool, c);
	}
	quiesce(r);
	r->cb++;
	r->s.on_done(r, r->s.arg, err, msg);
	r->cb--;
	if (r->cb)
		r->dead = true;
	else
		req_free(r);
}

/* Runs after a user callback: false when r must not be touched any more. */
static bool alive(xp_req_t *r)
{
	if (!r->dead)
		return true;
	if (!r->cb)
		req_free(r);
	return false;
}

static void arm_timeout(xp_req_t *r)
{
	uint64_t ms = r->connecting ? XP_CONNECT_MS : r->s.timeout_ms;
	if (!ms) {
		event_del(r->tmo);
		return;
	}
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000)};
	event_add(r->tmo, &tv);
}

static void want_write(xp_req_t *r)
{
	if (r->fd >= 0 && !r->finished)
		event_add(r->wr, NULL);
}

static void want_read(xp_req_t *r)
{
	if (r->c && !r->finished && !r->paused)
		event_add(r->c->rd, NULL);
}

/* --- the answer -------------------------------------------------------------------- */

static xp_req_t *of(http_parser *hp) { return hp->data; }

static int h_field(http_parser *hp, const char *at, size_t n)
{
	xp_req_t *r = of(hp);
	if (r->last_value)
		buf_addstr(&r->hdrs, "\r\n");
	r->last_value = false;
	buf_add(&r->hdrs, at, n);
	return 0;
}

static int h_value(http_parser *hp, const char *at, size_t n)
{
	xp_req_t *r = of(hp);
	if (!r->last_value)
		buf_addstr(&r->hdrs, ": ");
	r->last_value = true;
	buf_add(&r->hdrs, at, n);
	return 0;
}

static int h_headers_done(http_parser *hp)
{
	xp_req_t *r = of(hp);
	if (r->last_value)
		buf_addstr(&r->hdrs, "\r\n");
	r->head_done = true;
	r->status = (int)hp->status_code;
	int64_t clen = (hp->flags & F_CHUNKED) || hp->content_length == ULLONG_MAX ? -1 : (int64_t)hp->content_length;
	r->cb++;
	r->s.on_head(r, r->s.arg, r->status, (sv_t){r->hdrs.ptr ? r->hdrs.ptr : "", r->hdrs.len}, clen);
	r->cb--;
	if (r->dead)
		return -1;
	return !strcmp(r->s.method, "HEAD") ? 1 : 0; /* 1: no body follows */
}

static int h_body(http_parser *hp, const char *at, size_t n)
{
	xp_req_t *r = of(hp);
	r->cb++;
	r->s.on_body(r, r->s.arg, at, n);
	r->cb--;
	return r->dead ? -1 : 0;
}

static int h_complete(http_parser *hp)
{
	of(hp)->msg_done = true;
	http_parser_pause(hp, 1); /* nothing after it is ours */
	return 0;
}

/* Feeds n bytes (0: the peer's EOF) to the parser. false: r is gone or ended. */
static bool parse(xp_req_t *r, const char *p, size_t n)
{
	r->cb++;
	http_parser_execute(&r->hp, &r->hs, p, n);
	r->cb--;
	if (!alive(r))
		return false;
	enum http_errno e = HTTP_PARSER_ERRNO(&r->hp);
	if (r->spipe >= 0) {
		r->sleft = r->hp.content_length; /* (http-parser counts it down) */
		set_lowat(r, (int)MIN(r->sleft, (uint64_t)XP_LOWAT));
	}
	if (r->msg_done) { /* (an answer before the whole body went: not pooled) */
		finish(r, 0, NULL);
		return false;
	}
	if (e != HPE_OK && e != HPE_PAUSED) {
		finish(r, EPROTO, "bad answer from the peer: %s", http_errno_description(e));
		return false;
	}
	return true;
}

static bool retry(xp_req_t *r);

/* Splicing: moves what the socket has of the body into the caller's pipe. */
static void on_splice(xp_req_t *r)
{
	ssize_t k = splice(r->fd, NULL, r->spipe, NULL, MIN(r->sleft, (uint64_t)XP_SPLICE_MAX),
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (k < 0 && errno == EAGAIN) {
		/* the socket has bytes and yet none moved: the pipe is full (a
		 * read event would fire again at once) */
		int q = 0;
		if (ioctl(r->fd, FIONREAD, &q) == 0 && q > 0)
			xp_pause(r);
		return;
	}
	if (k < 0 && errno == EINTR)
		return;
	if (k <= 0) {
		int e = k < 0 ? errno : ECONNRESET;
		finish(r, e, "%s", k < 0 ? strerror(e) : "the peer closed the connection mid-body");
		return;
	}
	r->sleft -= (uint64_t)k;
	set_lowat(r, (int)MIN(r->sleft, (uint64_t)XP_LOWAT));
	arm_timeout(r);
	r->cb++;
	r->s.on_body(r, r->s.arg, NULL, (size_t)k);
	r->cb--;
	if (alive(r) && !r->sleft)
		finish(r, 0, NULL);
}

static void on_read(xp_req_t *r)
{
	char *rb = r->pool->rbuf;
	for (int rounds = 0; rounds < 4 && !r->paused; rounds++) {
		if (r->spipe >= 0 && !r->finished) {
			on_splice(r);
			return;
		}
		ssize_t k = x_recv(r, rb, XP_READ);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (k <= 0) {
			int e = k < 0 ? errno : 0;
			if (!r->any_byte && r->reused && retry(r))
				return;
			if (k == 0 && r->head_done && !parse(r, NULL, 0))
				return; /* a body read to its EOF ended */
			finish(r, e ? e : ECONNRESET, "%s", e ? strerror(e) : "the peer closed the connection");
			return;
		}
		r->any_byte = true;
		arm_timeout(r);
		if (!parse(r, rb, (size_t)k))
			return;
		if ((size_t)k < XP_READ)
			return;
	}
}

/* --- the request's bytes -------------------------------------------------------------- */

/* Writes the body bytes waiting in the caller's pipe (after out). AIS_OK:
 * some or all went (on_drain may follow), AIS_AGAIN: the socket is full,
 * AIS_ERR: errno says why. */
static int pipe_write(xp_req_t *r)
{
	ssize_t k = splice(r->bpipe, NULL, r->fd, NULL, r->bleft, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (k < 0)
		return errno == EAGAIN || errno == EINTR ? AIS_AGAIN : AIS_ERR;
	if (k == 0) { /* (the caller said the bytes were there) */
		errno = EPIPE;
		return AIS_ERR;
	}
	r->bleft -= (uint64_t)k;
	return AIS_OK;
}

static void on_write(xp_req_t *r)
{
	bool piped = false;
	while (r->out_off < r->out.len || r->bleft) {
		if (r->out_off == r->out.len) { /* the buffer is out: the pipe's bytes follow */
			int rc = pipe_write(r);
			if (rc == AIS_AGAIN) {
				want_write(r);
				break;
			}
			if (rc == AIS_OK) {
				piped = true;
				arm_timeout(r);
				continue;
			}
			int e = errno;
			if (e == EPIPE || e == ECONNRESET) { /* read what the peer said (below) */
				r->bleft = 0;
				want_read(r);
				return;
			}
			finish(r, e, "%s", strerror(e));
			return;
		}
		bool want_rd;
		ssize_t k = x_send(r, r->out.ptr + r->out_off, r->out.len - r->out_off, &want_rd);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!want_rd)
				want_write(r); /* (else the read event brings it back: on_rd) */
			return;
		}
		if (k < 0) {
			int e = errno;
			if (!r->any_byte && r->reused && retry(r))
				return;
			/* the peer may have answered and closed: read what it said */
			if (e == EPIPE || e == ECONNRESET) {
				r->out.len = r->out_off = 0;
				want_read(r);
				return;
			}
			finish(r, e, "%s", strerror(e));
			return;
		}
		r->out_off += (size_t)k;
		arm_timeout(r);
	}
	r->out.len = r->out_off = 0;
	if (r->bleft && !piped)
		return; /* the socket is full: no room made */
	if (r->body_end)
		r->body_sent = !r->bleft;
	else if (r->s.on_drain) {
		r->cb++;
		r->s.on_drain(r, r->s.arg);
		r->cb--;
		alive(r);
	}
}

static void on_wr(evutil_socket_t fd, short what, void *arg)
{
	xp_req_t *r = arg;
	(void)fd, (void)what;
	if (r->connecting) {
		int e = 0;
		socklen_t el = sizeof(e);
		getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &e, &el);
		if (e) {
			finish(r, e, "connect: %s", strerror(e));
			return;
		}
		r->connecting = false;
		if (r->tls && tls_start(r) != AIS_OK) {
			finish(r, EPROTO, "TLS: no client context (see the log)");
			return;
		}
		arm_timeout(r);
		want_read(r);
	}
	r->cb++;
	on_write(r);
	r->cb--;
	if (!alive(r) || r->finished || !r->rd_wants_wr)
		return;
	r->rd_wants_wr = false;
	on_read(r); /* TLS: the read that waited for the socket to be writable */
}

static void on_rd(evutil_socket_t fd, short what, void *arg)
{
	xp_req_t *r = arg;
	(void)fd, (void)what;
	if (r->ssl && r->out_off < r->out.len) { /* TLS: a write that waited for a read (the handshake) */
		r->cb++;
		on_write(r);
		r->cb--;
		if (!alive(r) || r->finished)
			return;
	}
	on_read(r);
}

static void on_tmo(evutil_socket_t fd, short what, void *arg)
{
	xp_req_t *r = arg;
	(void)fd, (void)what;
	finish(r, ETIMEDOUT, "%s", r->connecting ? "connect timed out" : "no progress within the timeout");
}

/* The peer of base ("http(s)://HOST:PORT"): its pool key, name and port in
 * r, "HOST:PORT" in host (the Host header). */
static int parse_base(xp_req_t *r, const char *base, buf_t *host)
{
	r->tls = !strncmp(base, "https://", 8);
	const char *h = base + (r->tls ? 8 : 7), *slash = strchr(h, '/');
	size_t hl = slash ? (size_t)(slash - h) : strlen(h);
	const char *colon = memrchr(h, ':', hl);
	if (!colon || hl >= XP_KEY_MAX - 2)
		return AIS_ERR;
	buf_add(host, h, hl);
	snprintf(r->key, sizeof(r->key), "%s%.*s", r->tls ? "s:" : "", (int)hl, h); /* (a plain and a TLS pool apart) */
	size_t nl = (size_t)(colon - h);
	if (nl && h[0] == '[' && h[nl - 1] == ']')
		snprintf(r->host, sizeof(r->host), "%.*s", (int)nl - 2, h + 1);
	else
		snprintf(r->host, sizeof(r->host), "%.*s", (int)nl, h);
	snprintf(r->port, sizeof(r->port), "%.*s", (int)(hl - nl - 1), colon + 1);
	return AIS_OK;
}

/* The peer's address, for a new connection (a pooled one needs none:
 * most requests never resolve). */
static int resolve(xp_req_t *r)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai = NULL;
	if (r->alen)
		return AIS_OK;
	if (getaddrinfo(r->host, r->port, &hints, &ai) || !ai) {
		errno = EHOSTUNREACH;
		return AIS_ERR;
	}
	memcpy(&r->addr, ai->ai_addr, ai->ai_addrlen);
	r->alen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return AIS_OK;
}

/* Opens r's connection: a pooled one, else a new non-blocking connect. */
static int conn_open(xp_req_t *r, bool pooled)
{
	struct xconn *c = pooled ? pool_take(r->pool, r->key, r->body_len != -1) : NULL;
	r->reused = c != NULL;
	if (!c) {
		if (resolve(r) != AIS_OK)
			return AIS_ERR;
		int fd = socket(r->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return AIS_ERR;
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, (struct sockaddr *)&r->addr, r->alen) && errno != EINPROGRESS) {
			int e = errno;
			close(fd);
			errno = e;
			return AIS_ERR;
		}
		r->connecting = true;
		c = xcalloc(1, sizeof(*c));
		c->fd = fd;
		c->pool = r->pool;
		snprintf(c->key, sizeof(c->key), "%s", r->key);
		c->rd = xmalloc(event_get_struct_event_size());
		event_assign(c->rd, r->base, fd, EV_READ | EV_PERSIST, conn_rd, c);
	}
	c->req = r;
	r->c = c;
	r->fd = c->fd;
	r->ssl = c->ssl;
	r->wr = event_new(r->base, c->fd, EV_WRITE, on_wr, r);
	return AIS_OK;
}

/* A reused connection failed before any answer byte: once more on a new
 * one, when the whole request is still here (no streamed body). */
static bool retry(xp_req_t *r)
{
	if (r->retried || r->body_len != -1)
		return false;
	r->retried = true;
	event_free(r->wr);
	r->wr = NULL;
	req_conn_close(r);
	if (conn_open(r, false) != AIS_OK) {
		finish(r, errno, "connect: %s", strerror(errno));
		return true;
	}
	buf_reset(&r->out);
	r->out_off = 0;
	buf_add(&r->out, r->head.ptr, r->head.len);
	http_parser_init(&r->hp, HTTP_RESPONSE);
	r->hp.data = r;
	arm_timeout(r);
	want_write(r);
	return true;
}

static void start_cb(evutil_socket_t fd, short what, void *arg)
{
	xp_req_t *r = arg;
	(void)fd, (void)what;
	if (r->fd < 0) {
		finish(r, EHOSTUNREACH, "cannot connect to the peer (bad address or no socket)");
		return;
	}
	if (r->connecting) {
		want_write(r); /* (a new socket reports its connect by the write event) */
		return;
	}
	want_read(r);
	on_wr(r->fd, EV_WRITE, r); /* a pooled socket has room: the head goes now */
}

xp_req_t *xp_start(struct event_base *base, const xp_spec_t *s)
{
	xp_req_t *r = xcalloc(1, sizeof(*r));
	buf_t host = BUF_INIT;
	bool has_host = false, has_id = false;

	r->base = base;
	r->pool = pool_of(base);
	r->s = *s;
	r->fd = -1;
	r->spipe = -1;
	r->bpipe = -1;
	r->body_len = s->body_len;
	r->body_end = s->body_len == -1 || s->body_len == 0;
	r->body_sent = r->body_end;
	http_parser_init(&r->hp, HTTP_RESPONSE);
	r->hp.data = r;
	r->hs.on_header_field = h_field;
	r->hs.on_header_value = h_value;
	r->hs.on_headers_complete = h_headers_done;
	r->hs.on_body = h_body;
	r->hs.on_message_complete = h_complete;
	r->tmo = evtimer_new(base, on_tmo, r);
	buf_grow(&r->hdrs, 1024); /* (an answer's head, without reallocs on the way) */

	buf_grow(&r->head, 256 + s->target.len + s->header_block.len);
	buf_addstr(&r->head, s->method); /* (no printf on this path: a small request's cost) */
	buf_add(&r->head, " ", 1);
	buf_addsv(&r->head, s->target);
	buf_addstr(&r->head, " HTTP/1.1\r\n");
	for (size_t i = 0; s->headers && s->headers[i]; i++) {
		buf_addstr(&r->head, s->headers[i]);
		buf_addstr(&r->head, "\r\n");
		has_host = has_host || !strncasecmp(s->headers[i], "Host:", 5);
		has_id = has_id || !strncasecmp(s->headers[i], LOG_REQID_HDR ":", sizeof(LOG_REQID_HDR));
	}
	for (sv_t b = s->header_block; b.len;) { /* (a line starts at b) */
		has_host = has_host || (b.len >= 5 && !strncasecmp(b.ptr, "Host:", 5));
		/* a relayed request's own id line (its signature may cover it) goes as it is */
		has_id = has_id || (b.len > sizeof(LOG_REQID_HDR) &&
				    !strncasecmp(b.ptr, LOG_REQID_HDR ":", sizeof(LOG_REQID_HDR)));
		const char *nl = memchr(b.ptr, '\n', b.len);
		size_t k = nl ? (size_t)(nl - b.ptr) + 1 : b.len;
		b.ptr += k;
		b.len -= k;
	}
	buf_addsv(&r->head, s->header_block);
	char rid[HTTPC_REQID_LINE_MAX];
	httpc_reqid_line(rid);
	if (rid[0] && !has_id) {
		buf_addstr(&r->head, rid);
		buf_addstr(&r->head, "\r\n");
	}
	int rc = xp_supports(s->base) ? parse_base(r, s->base, &host) : AIS_ERR;
	if (!has_host)
		buf_addf(&r->head, "Host: %.*s\r\n", (int)host.len, host.ptr ? host.ptr : "");
	if (s->body_len >= 0)
		buf_addf(&r->head, "Content-Length: %lld\r\n", (long long)s->body_len);
	else if (s->body_len == -2)
		buf_addstr(&r->head, "Transfer-Encoding: chunked\r\n");
	buf_addstr(&r->head, "\r\n");
	buf_free(&host);
	buf_add(&r->out, r->head.ptr, r->head.len);
	/* nothing of the caller's is used after this returns (its URL, method
	 * and target may live on its stack or be freed): the messages of
	 * finish() read the copies, the target in the head (never rewritten) */
	size_t bl = strlen(s->base ? s->base : ""), ml = strlen(s->method);
	r->own = xmalloc(bl + ml + 2);
	memcpy(r->own, s->base ? s->base : "", bl + 1);
	memcpy(r->own + bl + 1, s->method, ml + 1);
	r->s.base = r->own;
	r->s.method = r->own + bl + 1;
	r->s.target = (sv_t){r->head.ptr + ml + 1, s->target.len};
	r->s.headers = NULL;
	r->s.header_block = (sv_t){NULL, 0};
	if (rc != AIS_OK || conn_open(r, true) != AIS_OK)
		r->fd = -1;
	arm_timeout(r);
	r->kick = evtimer_new(base, start_cb, r); /* from the loop, never inside xp_start */
	event_active(r->kick, EV_TIMEOUT, 0);
	return r;
}

void xp_send(xp_req_t *r, const char *p, size_t n)
{
	if (!n || r->finished)
		return;
	if (!p) { /* n more bytes in the pipe of xp_splice_from */
		if (r->bpipe < 0) {
			log_errx("xp: body bytes in a pipe without xp_splice_from");
			return;
		}
		r->bleft += n;
		if (!r->connecting && r->fd >= 0)
			want_write(r);
		return;
	}
	if (r->body_len == -2)
		buf_addf(&r->out, "%zx\r\n", n);
	buf_add(&r->out, p, n);
	if (r->body_len == -2)
		buf_addstr(&r->out, "\r\n");
	if (!r->connecting && r->fd >= 0)
		want_write(r);
}

void xp_end(xp_req_t *r)
{
	if (r->body_end || r->finished)
		return;
	r->body_end = true;
	if (r->body_len == -2)
		buf_addstr(&r->out, "0\r\n\r\n");
	if (r->out_off == r->out.len && !r->bleft)
		r->body_sent = true;
	else if (r->fd >= 0 && !r->connecting)
		want_write(r);
}

size_t xp_pending(const xp_req_t *r) { return r->out.len - r->out_off + (size_t)r->bleft; }

void xp_pause(xp_req_t *r)
{
	r->paused = true;
	if (r->c)
		event_del(r->c->rd);
	if (!r->connecting && r->out_off == r->out.len && !r->bleft)
		event_del(r->tmo); /* the caller is the slow side (a write re-arms it) */
}

void xp_resume(xp_req_t *r)
{
	if (!r->paused || r->finished)
		return;
	r->paused = false;
	if (r->c && !r->connecting) {
		event_add(r->c->rd, NULL);
		arm_timeout(r);
	}
}

bool xp_splice_to(xp_req_t *r, int pipe_wfd)
{
	if (r->ssl || !r->head_done || r->msg_done || (r->hp.flags & F_CHUNKED) ||
	    r->hp.content_length == ULLONG_MAX || !strcmp(r->s.method, "HEAD"))
		return false;
	r->spipe = pipe_wfd;
	r->sleft = r->hp.content_length;
	r->lowat = 1;
	/* a fixed receive buffer: autotuning, which takes each splice of a
	 * full pipe for a fast reader, would let the peer queue tens of MiB
	 * here while the client is the slow side (and the kernel collapse
	 * and drop them) */
	int rb = XP_SPLICE_RCVBUF;
	setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb));
	return true;
}

bool xp_splice_from(xp_req_t *r, int pipe_rfd)
{
	if (r->tls || r->body_len <= 0 || r->body_end || r->bpipe >= 0)
		return false;
	r->bpipe = pipe_rfd;
	return true;
}

void xp_cancel(xp_req_t *r)
{
	if (!r || r->dead)
		return;
	quiesce(r);
	if (r->cb)
		r->dead = true;
	else
		req_free(r);
}
