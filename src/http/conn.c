/*
 * conn.c - one client connection: reading, parsing and dispatching
 * requests one at a time (pipelined ones wait in the input buffer), feeding
 * bodies to handlers with backpressure (or splicing them into a handler's
 * pipe, http_req_splice_to: paused only while the pipe holds bytes, so a
 * handler that drains it never leaves the body waiting), and driving the
 * response writer.
 *
 * Guarantees: memory per connection is bounded (a head of at most
 * max_header_bytes, one read chunk of body, the response's own buffer);
 * a slow client is cut off by the idle, header and body timeouts; a
 * request's arena is released only when no I/O-pool task holds it.
 * The states are documented in internal.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "internal.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define REQS_PER_RUN 16 /* pipelined requests served before yielding */

static void on_event(evutil_socket_t fd, short what, void *arg);
static void on_timer(evutil_socket_t fd, short what, void *arg);

/*
 * The server's budget of buffered bodies (HTTP_ROUTE_JSON ones, and those
 * a streaming handler keeps in memory: http_req_buffer_take): a request
 * takes its Content-Length before the body is read (or each piece of a
 * chunked one as it comes) and gives it back when it ends, so the bodies
 * held at once stay within max_buffered whatever the clients do.
 */
static bool budget_take(http_conn_t *c, uint64_t n)
{
	http_server_t *s = c->w->srv;
	uint64_t had = atomic_fetch_add(&s->buffered, n);
	if (had + n > s->o.max_buffered) {
		atomic_fetch_sub(&s->buffered, n);
		return false;
	}
	c->reserved += n;
	return true;
}

static void budget_release(http_conn_t *c)
{
	if (c->reserved)
		atomic_fetch_sub(&c->w->srv->buffered, c->reserved);
	c->reserved = 0;
}

bool http_req_buffer_take(http_req_t *req, uint64_t n)
{
	return !n || (req->conn && budget_take(req->conn, n));
}

uint64_t http_req_buffer_max(const http_req_t *req)
{
	return req->conn ? req->conn->w->srv->o.max_buffered : 0;
}

static void budget_refuse(http_req_t *req)
{
	http_resp_header(req, "Retry-After", "1");
	http_resp_error(req, 503, "too many request bodies buffered on this node (net.max_buffered_body is %llu "
			"bytes): try again", (unsigned long long)req->conn->w->srv->o.max_buffered);
}

bool conn_is_node(http_conn_t *c)
{
	http_server_t *s = c->w->srv;
	if (c->is_node == 1)
		return true;
	/* a "no" may change: a node's keep-alive connection, opened before
	 * its join put it in the map, carries its calls after that */
	int64_t now = time_mono_ns();
	if (c->is_node < 0 || now - c->is_node_at > 1000000000LL) {
		c->is_node = !c->local && s->o.is_peer && s->o.is_peer(s->o.ctx, c->peer);
		c->is_node_at = now;
	}
	return c->is_node == 1;
}

bool http_req_from_node(http_req_t *req) { return conn_is_node(req->conn); }

void http_req_on_done(http_req_t *req, void (*fn)(http_req_t *req, void *arg), void *arg)
{
	req->on_done = fn;
	req->on_done_arg = arg;
}
const char *http_req_peer(const http_req_t *req) { return req->conn->peer; }
bool http_req_tls(const http_req_t *req) { return req->conn->ssl != NULL; }

/*
 * The descriptor budget (server.c says how it is sized): a request of a
 * route that holds descriptors takes its route's fds when it is
 * dispatched, before its handler opens any, and gives them back when it
 * completes (its arena, and with it its files, pipes and relays, gone).
 * A client's request stops fd_headroom short of the budget, so that
 * connections for requests that take none (health, control) still get in;
 * a node of the cluster may use the headroom (its calls are what keeps the
 * cluster together).
 */
static bool fds_take(http_conn_t *c, unsigned n)
{
	http_server_t *s = c->w->srv;
	uint64_t had = atomic_fetch_add(&s->fds, n);
	if (had + n > s->fd_budget - s->fd_headroom && (had + n > s->fd_budget || !conn_is_node(c))) {
		atomic_fetch_sub(&s->fds, n);
		return false;
	}
	c->fds_held += n;
	return true;
}

static void fds_release(http_conn_t *c)
{
	if (c->fds_held)
		atomic_fetch_sub(&c->w->srv->fds, c->fds_held);
	c->fds_held = 0;
}

void conn_refuse(http_req_t *req, int status, const char *code, const char *fmt, ...)
{
	http_server_t *s = req->conn->w->srv;
	buf_t msg = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	if (req->route && (req->route->flags & HTTP_ROUTE_S3) && s->o.refuse_s3)
		s->o.refuse_s3(req, status, code, msg.ptr ? msg.ptr : "");
	else
		http_resp_error(req, status, "%s", msg.ptr ? msg.ptr : "");
	buf_free(&msg);
}

static void fds_refuse(http_req_t *req)
{
	http_server_t *s = req->conn->w->srv;
	HM_INC(req->conn->w->st.fd_refused, 1);
	http_resp_header(req, "Retry-After", "1");
	conn_refuse(req, 503, "SlowDown",
		    "too many descriptors in use on this node (%llu of %llu for clients): try again",
		    (unsigned long long)atomic_load(&s->fds), (unsigned long long)s->fd_budget);
}

static void refuse(http_conn_t *c, enum body_refusal why)
{
	c->bstate = BS_REFUSED;
	c->refusal = why;
}

static void body_cb(void *arg, const char *p, size_t n)
{
	http_conn_t *c = arg;
	http_req_t *req = &c->req;

	req->body_read += n;
	uint64_t max = c->w->srv->o.max_body;
	if (max && req->body_read > max && c->bstate != BS_JSON && c->bstate != BS_REFUSED)
		refuse(c, BR_MAX_BODY); /* answered by body_step after this feed */
	if (c->bstate == BS_DISCARD || c->bstate == BS_REFUSED) {
		c->discarded += n;
		return;
	}
	if (c->bstate == BS_JSON) {
		if (req->body.len + n > req->route->max_body)
			refuse(c, BR_ROUTE_MAX);
		else if (req->body.len + n > c->reserved && !budget_take(c, req->body.len + n - c->reserved))
			refuse(c, BR_BUDGET);
		else
			buf_add(&req->body, p, n);
		return;
	}
	if (resp_started(c) || !req->on_body)
		return;
	req->on_body(req, p, n);
}

static void set_peer(http_conn_t *c, const struct sockaddr_storage *ss)
{
	snprintf(c->peer, sizeof(c->peer), "%s", ss->ss_family == AF_UNIX ? "unix" : "-");
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &a->sin_addr, c->peer, sizeof(c->peer));
		c->peer_key[10] = c->peer_key[11] = 0xff;
		memcpy(c->peer_key + 12, &a->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, c->peer, sizeof(c->peer));
		memcpy(c->peer_key, &a->sin6_addr, 16);
	}
}

/* Whether a TCP peer connected from an address of this host: its own
 * address (getsockname) or loopback. */
static bool peer_is_host(int fd, const struct sockaddr_storage *ss)
{
	struct sockaddr_storage me;
	socklen_t len = sizeof(me);
	if (getsockname(fd, (struct sockaddr *)&me, &len) < 0 || me.ss_family != ss->ss_family)
		return false;
	if (ss->ss_family == AF_INET) {
		const struct in_addr *p = &((const struct sockaddr_in *)ss)->sin_addr;
		return (ntohl(p->s_addr) >> 24) == 127 ||
		       p->s_addr == ((const struct sockaddr_in *)&me)->sin_addr.s_addr;
	}
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *p = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(p) || !memcmp(p, &((const struct sockaddr_in6 *)&me)->sin6_addr, sizeof(*p));
	}
	return false;
}

void conn_accept(struct worker *w, int fd, const struct sockaddr_storage *ss, bool local)
{
	http_server_t *s = w->srv;
	http_conn_t *c = xcalloc(1, sizeof(*c));
	c->w = w;
	c->fd = fd;
	set_peer(c, ss);
	c->local = local;
	c->is_node = -1;
	if (!climit_take(c)) {
		char why[160];
		HM_INC(w->st.client_capped, 1);
		snprintf(why, sizeof(why), "too many connections from %s (net.max_conns_per_client is %llu)", c->peer,
			 (unsigned long long)s->max_per_client);
		accept_refuse(s, fd, local, why);
		atomic_fetch_sub(&s->nconns, 1);
		atomic_fetch_sub(&s->fds, 1);
		free(c);
		return;
	}
	c->peer_here = local || peer_is_host(fd, ss);
	c->same_host = !local && w->srv->unix_path && c->peer_here;
	c->ffd = -1;
	c->pass_fd = -1;
	c->bpipe = -1;
	c->rev = event_new(w->base, fd, EV_READ | EV_PERSIST, on_event, c);
	c->wev = event_new(w->base, fd, EV_WRITE | EV_PERSIST, on_event, c);
	c->tev = evtimer_new(w->base, on_timer, c);
	c->arena = arena_new(16384);
	hp_init(&c->hp, w->srv->o.max_header_bytes, body_cb, c);
	c->req.conn = c;
	c->req.arena = c->arena;
	c->req.ctx = w->srv->o.ctx;
	c->state = CS_HEAD;
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	else
		w->conns_tail = c;
	w->conns = c;
	if (w->srv->tls && !local && tls_conn_start(c, w->srv->tls) != AIS_OK)
		conn_close(c); /* freed by conn_run below */
	conn_run(c);
}

void conn_close(http_conn_t *c)
{
	if (c->state == CS_CLOSED)
		return;
	event_del(c->rev);
	event_del(c->wev);
	event_del(c->tev);
	if ((c->state != CS_HEAD && c->state != CS_LINGER) || c->req_start_mono)
		HM_INC(c->w->st.aborted, 1); /* closed with a request in progress */
	if (c->ssl)
		tls_conn_end(c);
	close(c->fd);
	c->fd = -1;
	c->state = CS_CLOSED;
	atomic_fetch_sub(&c->w->srv->nconns, 1);
	atomic_fetch_sub(&c->w->srv->fds, 1);
	climit_release(c);
}

void conn_free(http_conn_t *c)
{
	struct worker *w = c->w;
	conn_close(c);
	resp_reset(c);
	arena_destroy(c->arena);
	hp_free(&c->hp);
	buf_free(&c->in);
	buf_free(&c->out);
	buf_free(&c->rhdrs);
	buf_free(&c->spiece);
	buf_free(&c->after);
	buf_free(&c->req.body);
	event_free(c->rev);
	event_free(c->wev);
	event_free(c->tev);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		w->conns_tail = c->prev;
	budget_release(c);
	fds_release(c); /* (after arena_destroy: the request's files are closed) */
	climit_job_release(c);
	free(c);
	if (w->draining && !w->conns)
		event_base_loopbreak(w->base);
}

static void wait_for(http_conn_t *c, short what, uint64_t ms)
{
	if (c->ssl && what) {
		if (c->tls_want)
			what = c->tls_want; /* a read that must write, or a write that must read */
		else if ((what & EV_READ) && SSL_has_pending(c->ssl))
			event_active(c->rev, EV_READ, 0); /* decrypted bytes wait in OpenSSL */
	}
	/* Once the request is read (CS_WAIT, CS_WRITE) the read event is
	 * dropped lazily: it stays registered, and on_event drops it only if
	 * it fires meanwhile (a client sending ahead of its answer, or gone),
	 * which few do. A keep-alive request so costs no epoll_ctl (it cost
	 * two: one to drop the read, one to take it back). A body paused for
	 * backpressure has bytes waiting: its read is dropped at once. */
	c->read_wanted = (what & EV_READ) != 0;
	if (what & EV_READ)
		event_add(c->rev, NULL);
	else if (c->state == CS_BODY)
		event_del(c->rev);
	if (what & EV_WRITE)
		event_add(c->wev, NULL);
	else
		event_del(c->wev);
	if (ms) {
		struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
		event_add(c->tev, &tv);
	} else {
		event_del(c->tev);
	}
}

/* Reads what the socket has into c->in. AIS_OK, AIS_AGAIN, AIS_DONE (EOF)
 * or AIS_ERR. */
static int read_more(http_conn_t *c)
{
	buf_t *in = &c->in;
	if (c->in_off == in->len) {
		in->len = 0;
		c->in_off = 0;
	} else if (c->in_off > 0 && c->in_off >= in->len / 2) {
		buf_consume(in, c->in_off);
		c->in_off = 0;
	}
	/* a head needs little room: idle connections stay small */
	buf_grow(in, c->state == CS_BODY ? HTTP_READ_CHUNK : HTTP_HEAD_CHUNK);
	for (;;) {
		ssize_t n = conn_recv(c, in->ptr + in->len, in->cap - in->len - 1);
		if (n > 0) {
			in->len += (size_t)n;
			in->ptr[in->len] = '\0';
			HM_INC(c->w->st.bytes_in, (uint64_t)n);
			return AIS_OK;
		}
		if (n == 0)
			return AIS_DONE;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return AIS_AGAIN;
		return AIS_ERR;
	}
}

static sv_t target_path(sv_t t, sv_t *query)
{
	/* absolute-form: http://host[:port]/path?query */
	if (sv_casestartswith(t, "http://") || sv_casestartswith(t, "https://")) {
		const char *p = (const char *)memchr(t.ptr, ':', t.len) + 3;
		const char *end = t.ptr + t.len;
		const char *slash = memchr(p, '/', (size_t)(end - p));
		t = slash ? (sv_t){slash, (size_t)(end - slash)} : SV("/");
	}
	const char *q = memchr(t.ptr, '?', t.len);
	if (q) {
		*query = (sv_t){q + 1, t.len - (size_t)(q - t.ptr) - 1};
		t.len = (size_t)(q - t.ptr);
	} else {
		*query = (sv_t){"", 0};
	}
	const char *hash = memchr(t.ptr, '#', t.len);
	if (hash)
		t.len = (size_t)(hash - t.ptr);
	return t;
}

static void send_continue(http_conn_t *c)
{
	static const char msg[] = "HTTP/1.1 100 Continue\r\n\r\n";
	ssize_t n = conn_send(c, msg, sizeof(msg) - 1);
	if (n != (ssize_t)sizeof(msg) - 1)
		c->close_after = true;
}

/* A request starts being answered: its clock and its id (returned as
 * X-Request-Id and put on every log line about it). */
static void req_begin(http_conn_t *c)
{
	http_server_t *s = c->w->srv;
	http_req_t *req = &c->req;
	req->start_ns = time_now_ns();
	req->id = atomic_fetch_add(&s->next_id, 1) + 1;
	/* "%08x-%llx" of the prefix and the id, digit by digit: every request's */
	static const char hx[] = "0123456789abcdef";
	char *p = req->id_str;
	for (int i = 28; i >= 0; i -= 4)
		*p++ = hx[(s->id_prefix >> i) & 0xf];
	*p++ = '-';
	int top = 60;
	while (top > 0 && !((req->id >> top) & 0xf))
		top -= 4;
	for (int i = top; i >= 0; i -= 4)
		*p++ = hx[(req->id >> i) & 0xf];
	*p = '\0';
	log_set_request(req->id_str);
}

bool http_reqid_valid(sv_t id)
{
	if (!id.len || id.len > HTTP_REQID_MAX)
		return false;
	for (size_t i = 0; i < id.len; i++) {
		unsigned char ch = (unsigned char)id.ptr[i];
		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '.' ||
		      ch == '_' || ch == ':' || ch == '-'))
			return false;
	}
	return true;
}

bool http_req_adopt_id(http_req_t *req, sv_t id)
{
	_Static_assert(HTTP_REQID_MAX < sizeof(req->id_str), "an id fits id_str");
	if (!http_reqid_valid(id))
		return false;
	memcpy(req->id_str, id.ptr, id.len);
	req->id_str[id.len] = '\0';
	log_set_request(req->id_str);
	return true;
}

/* The authz hook's second look, at the body a signature may bind. */
static bool authz_body_ok(http_conn_t *c)
{
	http_server_t *s = c->w->srv;
	return !s->o.authz_body || (c->req.route->flags & HTTP_ROUTE_PUBLIC) || s->o.authz_body(&c->req) == AIS_OK;
}

/* Calls the route's handler and holds it to its contract (http.h): an
 * AIS_ERR with no answer begun and nothing pending (a pool task, a body to
 * read) would leave the client waiting for the idle timeout, so it gets a
 * 500 here, and the log says which route failed to answer. */
static void call_handler(http_conn_t *c)
{
	http_req_t *req = &c->req;
	if (req->route->handler(req) == AIS_OK || http_resp_started(req) || c->offloaded || req->on_body ||
	    req->on_body_end)
		return;
	log_errx("%s %s: the handler failed without answering", http_method_name(req->method), req->route->prefix);
	http_resp_error(req, 500, "%s: no answer (internal error)", req->route->prefix);
}

/* The head is complete: fill in the request, route it, call the handler. */
static void dispatch(http_conn_t *c)
{
	http_server_t *s = c->w->srv;
	http_req_t *req = &c->req;
	hp_head_t *h = &c->hp.head;
	unsigned allow = 0;

	req->method = h->method;
	req->target = h->target;
	req->hdrs = h->hdrs;
	req->nhdrs = h->nhdrs;
	req->content_length = h->content_length;
	req->chunked = h->chunked;
	req->has_body = h->has_body;
	req_begin(c);
	c->keep_alive = h->keep_alive;

	if (req->target.len == 0 || (req->target.ptr[0] != '/' && !sv_casestartswith(req->target, "http"))) {
		http_resp_error(req, 400, "invalid request target");
		return;
	}
	req->path = target_path(req->target, &req->query);
	for (size_t i = 0; i < s->o.nroutes; i++) {
		const http_route_t *r = &s->o.routes[i];
		size_t pl = strlen(r->prefix);
		if (pl == 1 && allow)
			break; /* the catch-all "/" never takes a known path's other methods */
		if (req->path.len < pl || memcmp(req->path.ptr, r->prefix, pl) ||
		    (req->path.len > pl && req->path.ptr[pl] != '/' && r->prefix[pl - 1] != '/'))
			continue;
		if (!(r->methods & HTTP_M(req->method))) {
			allow |= r->methods;
			continue;
		}
		req->route = r;
		size_t skip = pl + (req->path.len > pl && req->path.ptr[pl] == '/' ? 1 : 0);
		req->subpath = (sv_t){req->path.ptr + skip, req->path.len - skip};
		break;
	}
	if (!req->route) {
		if (allow) {
			buf_t a = BUF_INIT;
			for (int m = 0; m < 32; m++)
				if (allow & HTTP_M(m))
					buf_addf(&a, "%s%s", a.len ? ", " : "", http_method_name((enum http_method)m));
			http_resp_header(req, "Allow", "%s", a.ptr);
			buf_free(&a);
			http_resp_error(req, 405, "method %s not allowed here", http_method_name(req->method));
		} else {
			http_resp_error(req, 404, "no such resource: %.*s", (int)MIN(req->path.len, 256),
					req->path.ptr);
		}
		return;
	}
	unsigned fl = req->route->flags;
	if (!(fl & HTTP_ROUTE_NOLIMIT) && http_rate_check(c))
		return; /* answered 429 */
	if (s->o.authz && !(fl & HTTP_ROUTE_PUBLIC) && s->o.authz(req) != AIS_OK)
		return; /* answered 401 or 403 */
	if (req->route->fds && !fds_take(c, req->route->fds)) {
		fds_refuse(req);
		return; /* answered 503: nothing opened */
	}
	if ((fl & HTTP_ROUTE_BODY) && s->o.max_body && req->content_length > (int64_t)s->o.max_body) {
		HM_INC(c->w->st.too_large, 1);
		http_resp_error(req, 413, "request body too large (net.max_body is %llu bytes)",
				(unsigned long long)s->o.max_body);
		return;
	}
	if (req->has_body && (fl & HTTP_ROUTE_JSON) && !(fl & HTTP_ROUTE_BODY)) {
		if (req->content_length > (int64_t)req->route->max_body) {
			http_resp_error(req, 413, "request body too large (at most %llu bytes)",
					(unsigned long long)req->route->max_body);
			return;
		}
		if (req->content_length > (int64_t)s->o.max_buffered) {
			http_resp_error(req, 413, "request body too large (net.max_buffered_body is %llu bytes)",
					(unsigned long long)s->o.max_buffered);
			return;
		}
		if (req->content_length > 0) {
			if (!budget_take(c, (uint64_t)req->content_length)) {
				budget_refuse(req);
				return;
			}
			buf_grow(&req->body, (size_t)req->content_length); /* exactly: no doubling */
		}
		c->bstate = BS_JSON;
		if (h->expect_continue)
			send_continue(c);
		return;
	}
	if (req->has_body && !(fl & HTTP_ROUTE_BODY))
		c->bstate = BS_DISCARD;
	/* Expect: 100-continue with an empty body: the 100 still comes first.
	 * RFC 7231 lets a server skip it, but botocore then reuses the final
	 * status it read while waiting as the next request's status (a
	 * zero-byte PutObject followed by an UploadPart on that connection). */
	if (h->expect_continue && !req->has_body && h->http_minor >= 1)
		send_continue(c);
	if (!authz_body_ok(c))
		return;
	call_handler(c);
	if (!req->has_body || resp_started(c))
		return;
	/* A handler that went to the pool first (a map refresh, say) says
	 * whether it wants the body when its task is back: until then the body
	 * stays unread (body_step waits, then body_decided). */
	if (!req->on_body && c->offloaded)
		c->bstate = BS_LATER;
	else if (!req->on_body)
		c->bstate = BS_DISCARD;
	/* 100 Continue only once the handler asks for the body (on_room > 0),
	 * so that a handler refusing after blocking work (a full disk, a
	 * missing bucket) answers before the client sends anything. */
	if (h->expect_continue && c->bstate == BS_FEED)
		c->continue_due = true;
}

/* BS_LATER, the handler's task is back: its on_body says whether it wants
 * the body (a route without HTTP_ROUTE_BODY never does). */
static void body_decided(http_conn_t *c)
{
	http_req_t *req = &c->req;
	c->bstate = req->on_body && (req->route->flags & HTTP_ROUTE_BODY) ? BS_FEED : BS_DISCARD;
	if (req->on_body && c->hp.head.expect_continue)
		c->continue_due = true;
}

/* The socket wakes the loop once it holds n bytes (0: back to 1 byte).
 * While a body is spliced: a wakeup per packet would cost a splice, and
 * the handler a pool task, for each (the transport's answers do the same). */
static void set_lowat(http_conn_t *c, int n)
{
	if (n == c->lowat || (n <= 1 && c->lowat <= 1))
		return;
	int v = n > 1 ? n : 1;
	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)) == 0)
		c->lowat = n > 1 ? n : 0;
}

static void message_end(http_conn_t *c)
{
	http_req_t *req = &c->req;
	bool json = c->bstate == BS_JSON; /* (a refused one was answered already) */
	c->bstate = BS_DONE;
	if (json) {
		if (authz_body_ok(c))
			call_handler(c);
	} else if (req->on_body_end && !resp_started(c)) {
		req->on_body_end(req);
	}
}

static void request_done(http_conn_t *c)
{
	http_req_t *req = &c->req;
	hm_request_done(c);
	if (req->on_done)
		req->on_done(req, req->on_done_arg);
	if (log_get_level() <= LOG_DEBUG) {
		buf_t t = BUF_INIT;
		http_target_redact(req->target, &t);
		log_debug("%s %.*s %d %llu bytes %.3f ms", http_method_name(req->method), (int)MIN(t.len, 512),
			  t.ptr ? t.ptr : "", c->status, (unsigned long long)c->bytes_out,
			  (double)(time_now_ns() - req->start_ns) / 1e6);
		buf_free(&t);
	}
	log_set_request(NULL);
	arena_reset(c->arena);
	resp_reset(c);
	buf_free(&req->body);
	budget_release(c);
	fds_release(c);
	climit_job_release(c);
	hp_reset(&c->hp);
	memset(req, 0, sizeof(*req));
	req->conn = c;
	req->arena = c->arena;
	req->ctx = c->w->srv->o.ctx;
	c->bstate = BS_FEED;
	c->bpipe = -1;
	set_lowat(c, 0); /* (the next head wakes the loop at its first byte) */
	c->continue_due = false;
	c->discarded = 0;
	c->req_start_mono = 0;
	c->just_answered = true;
	c->state = CS_HEAD;
}

/* Enters CS_LINGER (our side is shut for writing): HTTP_LINGER_MS from now. */
static void linger_start(http_conn_t *c)
{
	c->state = CS_LINGER;
	c->linger_until = time_mono_ns() + (int64_t)HTTP_LINGER_MS * 1000000;
	c->lingered = 0;
	set_lowat(c, 0); /* (a spliced body cut short: its rest is dropped as it comes) */
}

/* CS_LINGER: drops what the client still sends until it closes, the
 * deadline passes or HTTP_LINGER_MAX bytes came; then closes. */
static void linger(http_conn_t *c)
{
	char scratch[16384];
	c->in_off = c->in.len;
	for (;;) {
		ssize_t n = read(c->fd, scratch, sizeof(scratch));
		if (n > 0) {
			c->lingered += (uint64_t)n;
			if (c->lingered > HTTP_LINGER_MAX)
				break;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int64_t left = c->linger_until - time_mono_ns();
			if (left <= 0)
				break;
			wait_for(c, EV_READ, (uint64_t)left / 1000000 + 1);
			return;
		}
		break; /* EOF or error */
	}
	conn_close(c);
}

/* CS_HEAD with nothing left to parse: how long to wait for more (the idle
 * timeout; for a TLS handshake or a head begun, what is left of the header
 * timeout, less when stopping: see start_drain). A connection that sends
 * nothing is idle: at the connection limit it is the first closed. */
static uint64_t head_wait_ms(http_conn_t *c)
{
	http_server_t *s = c->w->srv;
	if (!c->req_start_mono)
		return c->ssl && !SSL_is_init_finished(c->ssl) ? s->o.header_timeout_ms : s->o.idle_timeout_ms;
	int64_t left = c->req_start_mono + (int64_t)s->o.header_timeout_ms * 1000000 - time_mono_ns();
	uint64_t ms = left > 1000000 ? (uint64_t)left / 1000000 : 1;
	return c->w->draining ? MIN(ms, HTTP_DRAIN_HEAD_MS) : ms;
}

/*
 * Each state's step (conn_drive runs them): true to go on with the state
 * it leaves behind, false when the connection waits (its events are set)
 * or was closed.
 */

/* CS_HEAD: reads and parses a request head; dispatches it once whole. */
static bool head_step(http_conn_t *c)
{
	hp_event_t ev;
	if (c->in_off == c->in.len) {
		/* Right after a response the next request has rarely
		 * arrived: wait for it instead of a read that fails. */
		int r = c->just_answered ? AIS_AGAIN : read_more(c);
		c->just_answered = false;
		if (r == AIS_AGAIN && c->w->draining && !c->req_start_mono) {
			conn_close(c); /* stopping: no new requests */
			return false;
		}
		if (r == AIS_AGAIN) {
			wait_for(c, EV_READ, head_wait_ms(c));
			return false;
		}
		if (r != AIS_OK && c->tls_plain && shutdown(c->fd, SHUT_WR) == 0) {
			/* refused in plain text: let the client read it */
			tls_conn_end(c);
			linger_start(c);
			return true;
		}
		if (r != AIS_OK) {
			conn_close(c);
			return false;
		}
	}
	if (!c->req_start_mono) {
		c->req_start_mono = time_mono_ns();
		c->had_request = true;
	}
	c->in_off += hp_feed(&c->hp, c->in.ptr + c->in_off, c->in.len - c->in_off, &ev);
	if (ev == HP_HEAD) {
		c->state = CS_BODY;
		dispatch(c);
	} else if (ev == HP_ERROR) {
		/* nothing more is read: write the error, then close */
		HM_INC(c->w->st.parse_errors, 1);
		req_begin(c);
		c->close_after = true;
		c->bstate = BS_DONE;
		c->state = CS_WRITE;
		http_resp_error(&c->req, c->hp.status, "%s", c->hp.why ? c->hp.why : "bad request");
	}
	return true;
}

/* BS_REFUSED after a feed, not answered yet: 413 (503 over the budget of
 * buffered bodies); then the connection closes. */
static void body_refused(http_conn_t *c)
{
	http_req_t *req = &c->req;
	HM_INC(c->w->st.too_large, 1);
	c->close_after = true;
	c->bstate = BS_DONE;
	if (c->refusal == BR_BUDGET)
		budget_refuse(req);
	else if (c->refusal == BR_ROUTE_MAX)
		http_resp_error(req, 413, "request body too large (at most %llu bytes)",
				(unsigned long long)req->route->max_body);
	else
		http_resp_error(req, 413, "request body too large (net.max_body is %llu bytes)",
				(unsigned long long)c->w->srv->o.max_body);
	c->state = CS_WRITE;
}

/* Body bytes just put in the handler's pipe (n of them; spliced, or
 * copied by body_copy): counted and handed to on_body as p NULL. */
static void body_piped(http_conn_t *c, size_t n, bool spliced)
{
	http_req_t *req = &c->req;
	req->body_read += (uint64_t)n;
	set_lowat(c, (int)MIN((uint64_t)req->content_length - req->body_read, (uint64_t)HTTP_SPLICE_LOWAT));
	HM_INC(c->w->st.bytes_in, (uint64_t)n);
	if (spliced)
		HM_INC(c->w->st.spliced_in, (uint64_t)n);
	req->on_body(req, NULL, n);
	if (req->body_read == (uint64_t)req->content_length)
		message_end(c); /* (the parser never saw these bytes: hp_reset follows) */
}

/* The socket has bytes that splice(2) would not take although the pipe is
 * empty (it happens on loopback, with small segments): at most
 * HTTP_SPLICE_COPY of them are read and written into the pipe, so the body
 * goes on (an empty pipe has room for that many). */
static bool body_copy(http_conn_t *c, size_t limit)
{
	char tmp[HTTP_SPLICE_COPY];
	ssize_t n = read(c->fd, tmp, MIN(limit, sizeof(tmp)));
	if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		return true;
	if (n <= 0) {
		conn_close(c); /* client went away mid-body */
		return false;
	}
	if (write(c->bpipe, tmp, (size_t)n) != n) {
		log_warn("request body into the handler's pipe");
		conn_close(c);
		return false;
	}
	body_piped(c, (size_t)n, false);
	return true;
}

/* CS_BODY, the body going into the handler's pipe (bpipe) and every byte
 * read with the head fed: splices what the socket has, at most limit (the
 * handler's room) and what is left of the body. The pipe holding bytes
 * when splice says EAGAIN while the socket has some (a full pipe): paused
 * until http_req_resume. */
static bool body_splice(http_conn_t *c, size_t limit)
{
	http_req_t *req = &c->req;
	uint64_t left = (uint64_t)req->content_length - req->body_read;
	limit = (size_t)MIN(MIN(left, (uint64_t)limit), (uint64_t)HTTP_SPLICE_MAX);
	ssize_t n = splice(c->fd, NULL, c->bpipe, NULL, limit, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n < 0 && errno == EINTR)
		return true;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		int q = 0, inpipe = 0;
		if (ioctl(c->fd, FIONREAD, &q) == 0 && q > 0) {
			if (ioctl(c->bpipe, FIONREAD, &inpipe) == 0 && inpipe == 0)
				return body_copy(c, limit);
			c->bstate = BS_PAUSED;
			wait_for(c, 0, 0);
		} else {
			wait_for(c, EV_READ, c->w->srv->o.body_timeout_ms);
		}
		return false;
	}
	if (n <= 0) {
		if (n < 0 && errno != ECONNRESET)
			log_warn("splice from the client");
		conn_close(c); /* client went away mid-body */
		return false;
	}
	body_piped(c, (size_t)n, true);
	return true;
}

/* CS_BODY: feeds the body to its reader (bstate) until the message ends
 * or it is answered; reads only as much as the handler has room for. */
static bool body_step(http_conn_t *c)
{
	http_req_t *req = &c->req;
	hp_event_t ev;
	if (resp_started(c) && c->bstate != BS_DONE && req->has_body) {
		c->close_after = true; /* answered before the body was read: close afterwards */
		c->state = CS_WRITE;
		return true;
	}
	if (c->bstate == BS_DONE) {
		c->state = CS_WAIT;
		return true;
	}
	if (c->bstate == BS_LATER && c->offloaded) {
		wait_for(c, 0, 0);
		return false;
	}
	if (c->bstate == BS_LATER)
		body_decided(c);
	if ((c->bstate == BS_DISCARD || c->bstate == BS_REFUSED) && c->discarded > HTTP_DISCARD_MAX) {
		c->close_after = true;
		if (!resp_started(c))
			http_resp_error(req, 413, "request body not accepted here");
		c->state = CS_WRITE;
		return true;
	}
	size_t limit = SIZE_MAX;
	if (req->on_room && (c->bstate == BS_FEED || c->bstate == BS_PAUSED) && !resp_started(c)) {
		limit = req->on_room(req);
		if (limit == 0) {
			c->bstate = BS_PAUSED;
			wait_for(c, 0, 0);
			return false;
		}
	}
	if (c->continue_due) {
		c->continue_due = false;
		if (!resp_started(c))
			send_continue(c);
	}
	if (c->in_off == c->in.len && c->bpipe >= 0 && c->bstate == BS_FEED)
		return body_splice(c, limit);
	if (c->in_off == c->in.len) {
		int r = read_more(c);
		if (r == AIS_AGAIN) {
			wait_for(c, EV_READ, c->w->srv->o.body_timeout_ms);
			return false;
		}
		if (r != AIS_OK) {
			conn_close(c); /* client went away mid-body */
			return false;
		}
	}
	size_t avail = c->in.len - c->in_off;
	c->in_off += hp_feed(&c->hp, c->in.ptr + c->in_off, MIN(avail, limit), &ev);
	if (c->bstate == BS_REFUSED && !resp_started(c)) {
		body_refused(c);
	} else if (ev == HP_END) {
		message_end(c);
	} else if (ev == HP_ERROR) {
		HM_INC(c->w->st.parse_errors, 1);
		c->close_after = true;
		if (!resp_started(c))
			http_resp_error(req, c->hp.status, "%s", c->hp.why ? c->hp.why : "bad request body");
		c->bstate = BS_DONE;
		c->state = CS_WRITE;
	}
	return true;
}

/* CS_WAIT: the message is read; the handler answers (from the pool, maybe). */
static bool wait_step(http_conn_t *c)
{
	if (!resp_started(c) || c->offloaded) {
		wait_for(c, 0, 0);
		return false;
	}
	c->state = CS_WRITE;
	return true;
}

/* The response is written (ok) or failed and the connection closes: through
 * CS_LINGER after an error answered while the client was still sending. */
static bool write_end(http_conn_t *c, bool ok)
{
	bool linger = ok && c->close_after && !c->w->draining;
	if (ok)
		request_done(c);
	if (linger && c->ssl)
		tls_conn_end(c); /* close_notify; what the client still sends is dropped raw */
	if (linger && shutdown(c->fd, SHUT_WR) == 0) {
		linger_start(c);
		return true;
	}
	conn_close(c);
	return false;
}

/* CS_WRITE: writes the response; then the next request (CS_HEAD), or the
 * close. After REQS_PER_RUN requests of one run, pipelined ones wait for
 * the next turn of the loop. */
static bool write_step(http_conn_t *c, int *served)
{
	if (c->offloaded) {
		wait_for(c, 0, 0);
		return false;
	}
	int r = resp_flush(c);
	if (r == AIS_AGAIN) {
		if (c->offloaded || c->rstate == RS_STREAM_WAIT)
			wait_for(c, 0, 0);
		else
			wait_for(c, EV_WRITE, c->w->srv->o.body_timeout_ms);
		return false;
	}
	if (r != AIS_OK || c->close_after || !c->keep_alive || c->bstate != BS_DONE || c->w->draining)
		return write_end(c, r == AIS_OK);
	request_done(c);
	if (++*served >= REQS_PER_RUN && c->in_off < c->in.len) {
		c->read_wanted = true;
		event_active(c->rev, EV_READ, 0);
		return false;
	}
	return true;
}

/* Advances the connection until it must wait. */
static void conn_drive(http_conn_t *c)
{
	int served = 0;
	bool go = true;
	while (go) {
		switch (c->state) {
		case CS_HEAD:
			go = head_step(c);
			break;
		case CS_BODY:
			go = body_step(c);
			break;
		case CS_WAIT:
			go = wait_step(c);
			break;
		case CS_WRITE:
			go = write_step(c, &served);
			break;
		case CS_LINGER:
			linger(c);
			return;
		case CS_CLOSED:
			return;
		}
	}
}

void conn_run(http_conn_t *c)
{
	if (c->running) {
		c->again = true;
		return;
	}
	c->running = true;
	log_set_request(c->req.id ? c->req.id_str : NULL);
	do {
		c->again = false;
		conn_drive(c);
	} while (c->again && c->state != CS_CLOSED);
	c->running = false;
	log_set_request(NULL);
	if (c->state == CS_CLOSED && !c->offloaded)
		conn_free(c);
}

static void on_event(evutil_socket_t fd, short what, void *arg)
{
	http_conn_t *c = arg;
	if ((what & EV_READ) && !c->read_wanted) {
		event_del(c->rev); /* readable while not reading: see wait_for */
		return;
	}
	conn_run(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	http_conn_t *c = arg;
	if ((c->state != CS_HEAD && c->state != CS_LINGER) || c->req_start_mono)
		HM_INC(c->w->st.timeouts, 1); /* not an idle or lingering connection */
	if (c->state == CS_HEAD && c->req_start_mono && !resp_started(c)) {
		c->close_after = true;
		c->bstate = BS_DONE;
		c->state = CS_WRITE;
		/* written at once through conn_run; c may be freed after this */
		http_resp_error(&c->req, 408, "request head not received in time");
		return;
	}
	log_debug("closing connection: timed out in state %d", c->state);
	conn_close(c);
	if (!c->offloaded && !c->running)
		conn_free(c);
}

void http_req_resume(http_req_t *req)
{
	http_conn_t *c = req->conn;
	if (c->bstate != BS_PAUSED)
		return;
	c->bstate = BS_FEED;
	conn_run(c);
}

bool http_req_splice_to(http_req_t *req, int pipe_wfd)
{
	http_conn_t *c = req->conn;
	if (c->ssl || !req->has_body || req->chunked || req->content_length <= 0 || c->state != CS_BODY)
		return false;
	c->bpipe = pipe_wfd;
	/* a fixed receive buffer: autotuning, which takes each splice of a
	 * full pipe for a fast reader, would let the client queue tens of MiB
	 * here while the handler's peer is the slow side */
	int rb = HTTP_SPLICE_RCVBUF;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb));
	return true;
}

sv_t http_req_trailer(const http_req_t *req, const char *name)
{
	return req->conn ? hp_trailer(&req->conn->hp, name) : (sv_t){NULL, 0};
}
