/*
 * httpc.c - the asynchronous HTTP client: one curl multi handle driven by a
 * libevent event_base (curl tells us which sockets to watch and when its
 * timer is due; we tell curl what happened with curl_multi_socket_action).
 *
 * Guarantees: nothing here blocks the loop (curl does DNS, connect, send
 * and receive without blocking); every started request ends exactly once,
 * in done or by httpc_cancel; easy handles are pooled and connections stay
 * in the multi's cache for reuse; a request is retried only under the rules
 * of httpc.h, within its one deadline.
 *
 * A request's states, each in one line:
 *   RQ_RUNNING  its easy handle is in the multi
 *   RQ_WAIT     out of the multi, its timer armed: a retry after backoff,
 *               or the completion of a request that could not start
 *   RQ_CB       inside a read/write callback that asked to be cancelled
 */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "internal.h"
#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define HTTPC_POOL_MAX 64        /* idle easy handles kept */
#define HTTPC_BACKOFF_MAX_MS 1000

/* A socket curl uses. When curl stops watching it (CURL_POLL_REMOVE: an
 * idle connection in its cache) it is parked, not dropped: its read event
 * stays registered, so reusing the connection for the next request costs
 * no epoll_ctl (two per request before). A wakeup while parked (the peer
 * closed or sent something unasked) only disarms it. It is freed when
 * curl closes the socket (cb_closesocket, before the close). */
typedef struct sockinfo {
	struct httpc *c;
	struct event *ev;
	curl_socket_t fd;
	short kind;  /* EV_READ/EV_WRITE registered now (0: none) */
	bool parked; /* curl does not watch it */
} sockinfo_t;

struct httpc {
	struct event_base *base;
	CURLM *multi;
	struct event *timer;
	httpc_opts_t o;
	char *user_agent;
	httpc_req_t *reqs; /* live requests */
	size_t nreqs;
	sockinfo_t **socks; /* by fd */
	size_t nsocks;
	CURL *pool[HTTPC_POOL_MAX];
	int npool;
	bool closing;
	bool in_curl;  /* inside curl_multi_socket_action or curl_easy_pause */
	int ncancel;   /* cancelled while in_curl, still in the multi */
};

enum rq_state { RQ_RUNNING, RQ_WAIT };

struct httpc_req {
	httpc_t *c;
	httpc_req_t *prev, *next;
	enum rq_state state;
	CURL *easy;
	struct curl_slist *hdrs;
	char *method, *url;
	const char *body;
	size_t body_len, body_off;
	httpc_read_fn read;
	int64_t read_len;
	bool read_eof;
	httpc_write_fn write;
	uint64_t max_resp;
	int retries;
	unsigned flags;
	httpc_done_fn done;
	void *arg;
	int64_t start_ns, deadline_ns;
	struct event *tev;
	bool in_cb, in_done, cancelled, finished_early;
	bool resume_due; /* httpc_resume from inside curl: done from the timer */
	bool too_big, aborted;
	bool delivered; /* response bytes given to a write callback */
	int result, status;
	enum httpc_err kind;
	buf_t rhdrs, resp, err;
	char errbuf[CURL_ERROR_SIZE];
	httpc_info_t info;
};

static void req_attempt(httpc_req_t *r);
static void req_drop(httpc_req_t *r);
static int cb_closesocket(void *arg, curl_socket_t fd);

/* ---- easy handle pool ---------------------------------------------------- */

static CURL *easy_get(httpc_t *c)
{
	if (c->npool > 0) {
		CURL *e = c->pool[--c->npool];
		curl_easy_reset(e);
		return e;
	}
	CURL *e = curl_easy_init();
	if (!e)
		fatalx("httpc: curl_easy_init failed");
	return e;
}

static void easy_put(httpc_t *c, CURL *e)
{
	if (c->npool < HTTPC_POOL_MAX)
		c->pool[c->npool++] = e;
	else
		curl_easy_cleanup(e);
}

/* ---- the request's life -------------------------------------------------- */

static void req_unlink(httpc_req_t *r)
{
	httpc_t *c = r->c;
	if (r->prev)
		r->prev->next = r->next;
	else
		c->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	c->nreqs--;
}

static void req_free(httpc_req_t *r)
{
	req_unlink(r);
	if (r->easy)
		easy_put(r->c, r->easy);
	event_free(r->tev);
	curl_slist_free_all(r->hdrs);
	free(r->method);
	free(r->url);
	buf_free(&r->rhdrs);
	buf_free(&r->resp);
	buf_free(&r->err);
	free(r);
}

/* Takes r out of the multi (if there) and frees it; done never runs. */
static void req_drop(httpc_req_t *r)
{
	if (r->state == RQ_RUNNING)
		curl_multi_remove_handle(r->c->multi, r->easy);
	req_free(r);
}

/* Runs done and frees r. r is out of the multi. */
static void req_finish(httpc_req_t *r)
{
	r->info.total_ns = time_mono_ns() - r->start_ns;
	if (r->result != AIS_OK && r->err.len == 0)
		buf_addf(&r->err, "%s %s: failed", r->method, r->url);
	r->in_done = true;
	r->done(r, r->arg);
	req_free(r);
}

static void req_fail(httpc_req_t *r, enum httpc_err kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void req_fail(httpc_req_t *r, enum httpc_err kind, const char *fmt, ...)
{
	va_list ap;
	r->result = AIS_ERR;
	r->kind = kind;
	buf_reset(&r->err);
	buf_addf(&r->err, "%s %s: ", r->method, r->url);
	va_start(ap, fmt);
	buf_vaddf(&r->err, fmt, ap);
	va_end(ap);
}

/* Backoff expired (RQ_WAIT with a retry due), or a failed start to report. */
static void req_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	httpc_req_t *r = arg;
	if (r->state == RQ_RUNNING) {
		if (r->resume_due)
			httpc_resume(r);
		return;
	}
	if (r->finished_early) {
		req_finish(r);
		return;
	}
	req_attempt(r);
}

static void req_wait(httpc_req_t *r, uint64_t ms)
{
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
	r->state = RQ_WAIT;
	evtimer_add(r->tev, &tv);
}

/* ---- curl callbacks (run inside curl_multi_socket_action) ------------------ */

static size_t cb_header(char *p, size_t size, size_t n, void *arg)
{
	httpc_req_t *r = arg;
	size_t len = size * n;
	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		/* a new head (after 100 Continue): forget the previous one */
		buf_reset(&r->rhdrs);
		const char *sp = memchr(p, ' ', len);
		r->status = 0;
		if (sp) {
			uint64_t st;
			size_t left = len - (size_t)(sp + 1 - p);
			if (left >= 3 && num_parse_u64(sp + 1, 3, 100, 999, &st) == AIS_OK)
				r->status = (int)st;
		}
		return len;
	}
	buf_add(&r->rhdrs, p, len);
	return len;
}

static size_t cb_write(char *p, size_t size, size_t n, void *arg)
{
	httpc_req_t *r = arg;
	size_t len = size * n;
	if (!r->write) {
		if (r->resp.len + len > r->max_resp) {
			r->too_big = true;
			return 0;
		}
		buf_add(&r->resp, p, len);
		return len;
	}
	r->in_cb = true;
	int rc = r->write(r, r->arg, p, len);
	r->in_cb = false;
	if (r->cancelled)
		return 0;
	switch (rc) {
	case AIS_OK:
		r->delivered = true;
		return len;
	case AIS_AGAIN:
		return CURL_WRITEFUNC_PAUSE;
	default:
		r->aborted = true;
		return 0;
	}
}

static size_t cb_read(char *p, size_t size, size_t n, void *arg)
{
	httpc_req_t *r = arg;
	size_t cap = size * n;
	if (!r->read) {
		size_t k = MIN(cap, r->body_len - r->body_off);
		if (k)
			memcpy(p, r->body + r->body_off, k);
		r->body_off += k;
		return k;
	}
	if (r->read_eof)
		return 0;
	size_t got = 0;
	r->in_cb = true;
	int rc = r->read(r, r->arg, p, cap, &got);
	r->in_cb = false;
	if (r->cancelled)
		return CURL_READFUNC_ABORT;
	if (got > cap)
		fatalx("httpc: read callback gave %zu bytes for %zu", got, cap);
	switch (rc) {
	case AIS_OK:
		return got ? got : CURL_READFUNC_PAUSE;
	case AIS_DONE:
		r->read_eof = true;
		return got;
	case AIS_AGAIN:
		return CURL_READFUNC_PAUSE;
	default:
		r->aborted = true;
		return CURL_READFUNC_ABORT;
	}
}

/* ---- attempts ------------------------------------------------------------ */

static void req_setup(httpc_req_t *r)
{
	httpc_t *c = r->c;
	CURL *e = r->easy;
	int64_t left_ms = (r->deadline_ns - time_mono_ns()) / 1000000;

	httpc_easy_common(e, c->user_agent);
	curl_easy_setopt(e, CURLOPT_URL, r->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)c->o.connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)MAX(left_ms, 1));
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, cb_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, cb_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, cb_closesocket);
	curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, c);
	if (!r->write)
		curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)r->max_resp);
	if (r->flags & HTTPC_F_BIG_BUF) {
		curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 512L << 10);
		curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 512L << 10);
	}

	if (r->body || r->read || httpc_body_method(r->method)) {
		/* any method with a body (a GET with a JSON body too) */
		curl_off_t size = r->read ? (curl_off_t)r->read_len : (curl_off_t)r->body_len;
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, cb_read);
		curl_easy_setopt(e, CURLOPT_READDATA, r);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, size < 0 ? (curl_off_t)-1 : size);
	} else if (strcmp(r->method, "GET") == 0) {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(r->method, "HEAD") == 0) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
	}
}

static void req_attempt(httpc_req_t *r)
{
	httpc_t *c = r->c;
	r->hdrs = httpc_intra_auth(r->hdrs, r->method, r->url, r->read ? NULL : r->body, r->body_len);
	r->info.attempts++;
	r->body_off = 0;
	r->status = 0;
	r->errbuf[0] = '\0';
	buf_reset(&r->rhdrs);
	buf_reset(&r->resp);
	if (!r->easy)
		r->easy = easy_get(c);
	else
		curl_easy_reset(r->easy);
	req_setup(r);
	CURLMcode mc = curl_multi_add_handle(c->multi, r->easy);
	if (mc != CURLM_OK) {
		req_fail(r, HTTPC_E_OTHER, "%s", curl_multi_strerror(mc));
		r->finished_early = true;
		req_wait(r, 0);
		return;
	}
	r->state = RQ_RUNNING;
}

static bool is_conn_error(CURLcode cc)
{
	return cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
	       cc == CURLE_GOT_NOTHING || cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR;
}

static bool may_retry(httpc_req_t *r, CURLcode cc)
{
	if (!is_conn_error(cc) || r->read || r->delivered || r->status != 0)
		return false;
	if (r->flags & HTTPC_F_NO_RETRY)
		return false;
	if (!(r->flags & HTTPC_F_RETRY) && !httpc_idempotent(r->method))
		return false;
	return r->info.attempts <= r->retries;
}

static void collect_info(httpc_req_t *r)
{
	curl_off_t t = 0, u = 0, d = 0;
	long nc = 0, port = 0;
	curl_easy_getinfo(r->easy, CURLINFO_CONNECT_TIME_T, &t);
	r->info.connect_ns = (int64_t)t * 1000;
	t = 0;
	curl_easy_getinfo(r->easy, CURLINFO_STARTTRANSFER_TIME_T, &t);
	r->info.ttfb_ns = (int64_t)t * 1000;
	curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &nc);
	r->info.new_conns = nc;
	curl_easy_getinfo(r->easy, CURLINFO_LOCAL_PORT, &port);
	r->info.local_port = (int)port;
	curl_easy_getinfo(r->easy, CURLINFO_SIZE_UPLOAD_T, &u);
	curl_easy_getinfo(r->easy, CURLINFO_SIZE_DOWNLOAD_T, &d);
	r->info.bytes_sent = (uint64_t)u;
	r->info.bytes_recv = (uint64_t)d;
}

/* A transfer ended: finish, retry, or (cancelled in a callback) drop it. */
static void req_ended(httpc_req_t *r, CURLcode cc)
{
	curl_multi_remove_handle(r->c->multi, r->easy);
	r->state = RQ_WAIT;
	if (r->cancelled) {
		req_free(r);
		return;
	}
	collect_info(r);
	if (cc == CURLE_OK) {
		long code = 0;
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
		r->status = (int)code;
		r->result = AIS_OK;
		r->kind = HTTPC_E_NONE;
		req_finish(r);
		return;
	}
	const char *why = r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc);
	if (may_retry(r, cc)) {
		int64_t left_ms = (r->deadline_ns - time_mono_ns()) / 1000000;
		uint64_t ms = r->c->o.retry_backoff_ms << MIN(r->info.attempts - 1, 16);
		ms = MIN(ms, HTTPC_BACKOFF_MAX_MS);
		if (left_ms > (int64_t)ms) {
			log_debug("httpc: %s %s: %s; retry %d in %llu ms", r->method, r->url, why,
				  r->info.attempts, (unsigned long long)ms);
			req_wait(r, ms);
			return;
		}
	}
	if (r->too_big || cc == CURLE_FILESIZE_EXCEEDED)
		req_fail(r, HTTPC_E_TOO_BIG, "response body over %llu bytes",
			 (unsigned long long)r->max_resp);
	else if (r->aborted)
		req_fail(r, HTTPC_E_ABORTED, "aborted by the %s callback",
			 cc == CURLE_ABORTED_BY_CALLBACK || cc == CURLE_READ_ERROR ? "read" : "write");
	else if (cc == CURLE_OPERATION_TIMEDOUT)
		req_fail(r, HTTPC_E_TIMEOUT, "%s", why);
	else if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST)
		req_fail(r, HTTPC_E_CONNECT, "%s", why);
	else
		req_fail(r, HTTPC_E_OTHER, "%s", why);
	if (r->info.attempts > 1)
		buf_addf(&r->err, " (%d attempts)", r->info.attempts);
	req_finish(r);
}

static void check_multi_info(httpc_t *c)
{
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(c->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		CURL *e = m->easy_handle;
		CURLcode cc = m->data.result;
		httpc_req_t *r = NULL;
		curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
		req_ended(r, cc);
	}
}

/* Frees the requests cancelled from inside a curl callback of another
 * request (curl forbids removing a handle there) that have not ended. */
static void sweep_cancelled(httpc_t *c)
{
	httpc_req_t *r, *next;
	if (!c->ncancel)
		return;
	for (r = c->reqs; r; r = next) {
		next = r->next;
		if (r->cancelled)
			req_drop(r);
	}
	c->ncancel = 0;
}

/* ---- the multi handle on the event loop --------------------------------- */

static void on_socket(evutil_socket_t fd, short what, void *arg)
{
	sockinfo_t *si = arg;
	httpc_t *c = si->c; /* si may be freed inside curl (the socket closed) */
	int running;
	if (si->parked) {
		event_del(si->ev);
		si->kind = 0;
		return;
	}
	int action = ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
	c->in_curl = true;
	curl_multi_socket_action(c->multi, fd, action, &running);
	c->in_curl = false;
	check_multi_info(c);
	sweep_cancelled(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	httpc_t *c = arg;
	int running;
	c->in_curl = true;
	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	c->in_curl = false;
	check_multi_info(c);
	sweep_cancelled(c);
}

static int multi_timer_cb(CURLM *multi, long timeout_ms, void *arg)
{
	httpc_t *c = arg;
	if (timeout_ms < 0) {
		evtimer_del(c->timer);
		return 0;
	}
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	evtimer_add(c->timer, &tv);
	return 0;
}

static void sock_free(httpc_t *c, sockinfo_t *si)
{
	c->socks[si->fd] = NULL;
	event_free(si->ev);
	free(si);
}

/* CURLOPT_CLOSESOCKETFUNCTION: curl closes fd (after CURL_POLL_REMOVE). */
static int cb_closesocket(void *arg, curl_socket_t fd)
{
	httpc_t *c = arg;
	if (fd >= 0 && (size_t)fd < c->nsocks && c->socks[fd])
		sock_free(c, c->socks[fd]); /* before the close: the epoll entry goes with a live fd */
	return close(fd);
}

static int multi_socket_cb(CURL *e, curl_socket_t fd, int what, void *arg, void *sockp)
{
	httpc_t *c = arg;
	sockinfo_t *si = sockp;
	if (fd < 0)
		return 0;
	if (what == CURL_POLL_REMOVE) {
		if (si) {
			si->parked = true;
			if (si->kind & EV_WRITE) { /* a writable socket would wake us for ever */
				event_del(si->ev);
				si->kind = 0;
			}
		}
		return 0;
	}
	short kind = (short)(((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0));
	if (!si && (size_t)fd < c->nsocks)
		si = c->socks[fd]; /* a parked one */
	if (!si) {
		if ((size_t)fd >= c->nsocks) {
			size_t n = MAX((size_t)fd + 1, c->nsocks * 2);
			c->socks = xrealloc(c->socks, n * sizeof(*c->socks));
			memset(c->socks + c->nsocks, 0, (n - c->nsocks) * sizeof(*c->socks));
			c->nsocks = n;
		}
		si = xcalloc(1, sizeof(*si));
		si->c = c;
		si->fd = fd;
		si->ev = event_new(c->base, fd, EV_PERSIST, on_socket, si);
		c->socks[fd] = si;
	}
	si->parked = false;
	curl_multi_assign(c->multi, fd, si);
	if (si->kind != kind) {
		if (si->kind)
			event_del(si->ev);
		event_assign(si->ev, c->base, fd, (short)(kind | EV_PERSIST), on_socket, si);
		if (kind)
			event_add(si->ev, NULL);
		si->kind = kind;
	}
	return 0;
}

/* ---- public ---------------------------------------------------------------- */

httpc_t *httpc_new(struct event_base *base, const httpc_opts_t *o)
{
	httpc_global_init();
	httpc_t *c = xcalloc(1, sizeof(*c));
	if (o)
		c->o = *o;
	if (!c->o.connect_timeout_ms)
		c->o.connect_timeout_ms = 3000;
	if (!c->o.timeout_ms)
		c->o.timeout_ms = 30000;
	if (!c->o.max_host_conns)
		c->o.max_host_conns = 16;
	if (c->o.retries == 0)
		c->o.retries = 2;
	else if (c->o.retries < 0)
		c->o.retries = 0;
	if (!c->o.retry_backoff_ms)
		c->o.retry_backoff_ms = 20;
	c->user_agent = xstrdup(c->o.user_agent ? c->o.user_agent : "aisd");
	c->o.user_agent = c->user_agent;
	c->base = base;
	c->multi = curl_multi_init();
	if (!c->multi)
		fatalx("httpc: curl_multi_init failed");
	c->timer = evtimer_new(base, on_timer, c);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, multi_socket_cb);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, multi_timer_cb);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, c->o.max_host_conns);
	if (c->o.max_total_conns > 0)
		curl_multi_setopt(c->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, c->o.max_total_conns);
	/* keep as many idle connections as may be open to a handful of peers */
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, MAX(c->o.max_host_conns * 4, 32L));
	return c;
}

void httpc_free(httpc_t *c)
{
	if (!c)
		return;
	c->closing = true;
	while (c->reqs) {
		httpc_req_t *r = c->reqs;
		if (r->cancelled) {
			req_drop(r);
			continue;
		}
		if (r->state == RQ_RUNNING)
			curl_multi_remove_handle(c->multi, r->easy);
		r->state = RQ_WAIT;
		evtimer_del(r->tev);
		if (!r->finished_early)
			req_fail(r, HTTPC_E_CLOSED, "client closed");
		req_finish(r);
	}
	for (int i = 0; i < c->npool; i++)
		curl_easy_cleanup(c->pool[i]);
	curl_multi_cleanup(c->multi);
	for (size_t i = 0; i < c->nsocks; i++)
		if (c->socks[i])
			sock_free(c, c->socks[i]);
	free(c->socks);
	event_free(c->timer);
	free(c->user_agent);
	free(c);
}

size_t httpc_inflight(const httpc_t *c) { return c->nreqs; }

httpc_req_t *httpc_start(httpc_t *c, const httpc_spec_t *s)
{
	if (c->closing)
		return NULL;
	if (!s->done)
		fatalx("httpc_start: no done callback");
	httpc_req_t *r = xcalloc(1, sizeof(*r));
	r->c = c;
	r->method = xstrdup(s->method ? s->method : "GET");
	r->url = xstrdup(s->url ? s->url : "");
	r->body = s->body;
	r->body_len = s->body ? s->body_len : 0;
	r->read = s->read;
	r->read_len = s->read_len;
	r->write = s->write;
	r->max_resp = s->max_resp ? s->max_resp : HTTPC_MAX_RESP_DEFAULT;
	r->retries = s->retries > 0 ? s->retries : c->o.retries;
	r->flags = s->flags;
	r->done = s->done;
	r->arg = s->arg;
	r->result = AIS_ERR;
	r->start_ns = time_mono_ns();
	r->deadline_ns = r->start_ns + (int64_t)(s->timeout_ms ? s->timeout_ms : c->o.timeout_ms) * 1000000;
	r->tev = evtimer_new(c->base, req_timer_cb, r);

	bool has_expect = false;
	for (size_t i = 0; s->headers && s->headers[i]; i++) {
		if (strncasecmp(s->headers[i], "Expect:", 7) == 0)
			has_expect = true;
		r->hdrs = curl_slist_append(r->hdrs, s->headers[i]);
	}
	/* no 100-continue round trip between peers that know each other */
	if (!has_expect)
		r->hdrs = curl_slist_append(r->hdrs, "Expect:");
	char rid[HTTPC_REQID_LINE_MAX];
	httpc_reqid_line(rid);
	if (rid[0])
		r->hdrs = curl_slist_append(r->hdrs, rid);

	r->next = c->reqs;
	if (c->reqs)
		c->reqs->prev = r;
	c->reqs = r;
	c->nreqs++;
	req_attempt(r);
	return r;
}

void httpc_resume(httpc_req_t *r)
{
	httpc_t *c = r->c;
	if (r->state != RQ_RUNNING || r->cancelled)
		return;
	if (r->in_cb || c->in_curl) {
		/* curl is in a callback: unpause from the loop, at once */
		struct timeval tv = {0, 0};
		r->resume_due = true;
		evtimer_add(r->tev, &tv);
		return;
	}
	r->resume_due = false;
	c->in_curl = true;
	CURLcode cc = curl_easy_pause(r->easy, CURLPAUSE_CONT);
	c->in_curl = false;
	if (r->cancelled) {
		/* cancelled by its own write callback, run inside the pause call */
		req_drop(r);
		sweep_cancelled(c);
		return;
	}
	sweep_cancelled(c);
	if (cc != CURLE_OK) {
		/* the write callback failed on the held bytes: end it from the loop */
		curl_multi_remove_handle(c->multi, r->easy);
		if (r->aborted)
			req_fail(r, HTTPC_E_ABORTED, "aborted by the write callback");
		else
			req_fail(r, HTTPC_E_OTHER, "resume: %s", curl_easy_strerror(cc));
		r->finished_early = true;
		req_wait(r, 0);
	}
}

void httpc_cancel(httpc_req_t *r)
{
	if (r->cancelled || r->in_done)
		return;
	if (r->in_cb || r->c->in_curl) {
		/* curl cannot drop a handle from inside a callback: the
		 * request's own callback aborts it, or the sweep after the
		 * curl call frees it */
		r->cancelled = true;
		r->c->ncancel++;
		return;
	}
	req_drop(r);
}

int httpc_result(const httpc_req_t *r) { return r->result; }
int httpc_status(const httpc_req_t *r) { return r->status; }
enum httpc_err httpc_errkind(const httpc_req_t *r) { return r->kind; }
const char *httpc_error(const httpc_req_t *r) { return r->err.ptr ? r->err.ptr : ""; }
buf_t *httpc_body(httpc_req_t *r) { return &r->resp; }
const httpc_info_t *httpc_info(const httpc_req_t *r) { return &r->info; }
const char *httpc_method(const httpc_req_t *r) { return r->method; }
const char *httpc_url(const httpc_req_t *r) { return r->url; }

sv_t httpc_resp_headers(const httpc_req_t *r) { return sv_of(&r->rhdrs); }

bool httpc_header_next(sv_t *rest, sv_t *name, sv_t *value)
{
	if (!rest->ptr)
		return false;
	const char *p = rest->ptr, *end = rest->ptr + rest->len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		const char *vend = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
		const char *colon = memchr(p, ':', (size_t)(vend - p));
		const char *next = eol < end ? eol + 1 : end;
		if (colon) {
			*name = (sv_t){p, (size_t)(colon - p)};
			*value = sv_trim((sv_t){colon + 1, (size_t)(vend - colon - 1)});
			*rest = (sv_t){next, (size_t)(end - next)};
			return true;
		}
		p = next;
	}
	*rest = (sv_t){end, 0};
	return false;
}

sv_t httpc_header_find(sv_t headers, const char *name)
{
	sv_t key = sv_from(name), n, v;
	while (httpc_header_next(&headers, &n, &v))
		if (sv_eqcase(n, key))
			return v;
	return (sv_t){NULL, 0};
}

sv_t httpc_resp_header(const httpc_req_t *r, const char *name) { return httpc_header_find(sv_of(&r->rhdrs), name); }
