/*
 * test_httpc.c - the intra-cluster HTTP client against the aisd server,
 * in-process over loopback: exact bytes both ways (buffered and streamed
 * with pause/resume), many requests over few connections, connection
 * reuse, timeouts, refused connections and their retries, cancel, the
 * bounded buffered response, and the blocking helper.
 *
 * Each test starts its own server (Check forks per test) and drives the
 * client's event_base in the test thread; every wait has a deadline, so a
 * request that never completes fails the test instead of hanging it.
 */
#include <check.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "aisd/http.h"
#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define MIB (1024u * 1024u)
#define BIG (20 * MIB)

static unsigned char pat(uint64_t i) { return (unsigned char)((i * 131u) ^ (i >> 9)); }

static void fill_pat(char *p, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)pat(off + i);
}

static bool check_pat(const char *p, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] != pat(off + i))
			return false;
	return true;
}

/* ---- the server ----------------------------------------------------------- */

static http_server_t *g_srv;
static int g_port;

static uint64_t query_u64(http_req_t *req, const char *key, uint64_t dflt)
{
	sv_t v;
	uint64_t n;
	if (http_query_get(req, key, &v) && num_parse_u64(v.ptr, v.len, 0, 1ull << 40, &n) == AIS_OK)
		return n;
	return dflt;
}

/* GET/HEAD /data?n=N: N pattern bytes. */
static int h_data(http_req_t *req)
{
	uint64_t n = query_u64(req, "n", 0);
	if (req->method == HTTP_HEAD) {
		http_resp_send_head(req, n);
		return AIS_OK;
	}
	buf_t b = BUF_INIT;
	buf_grow(&b, n + 1);
	fill_pat(b.ptr, 0, n);
	b.len = n;
	http_resp_header(req, "X-Test", "data-%llu", (unsigned long long)n);
	http_resp_send_buf(req, &b);
	return AIS_OK;
}

static void echo_free(void *arg) { buf_free(arg); }

static int echo_body(http_req_t *req, const char *p, size_t n)
{
	buf_add(req->state, p, n);
	return AIS_OK;
}

static void echo_end(http_req_t *req)
{
	buf_t *b = req->state;
	sv_t in = http_req_header(req, "X-In");
	http_resp_header(req, "X-Body-Read", "%llu", (unsigned long long)req->body_read);
	http_resp_header(req, "X-Method", "%s", http_method_name(req->method));
	if (in.len)
		http_resp_header(req, "X-Out", "%.*s", (int)in.len, in.ptr);
	http_resp_send_buf(req, b);
}

/* PUT/POST /echo: answers with the body it got. */
static int h_echo(http_req_t *req)
{
	buf_t *b = arena_zalloc(req->arena, sizeof(*b));
	arena_cleanup_add(req->arena, echo_free, b);
	req->state = b;
	if (!req->has_body) {
		echo_end(req);
		return AIS_OK;
	}
	req->on_body = echo_body;
	req->on_body_end = echo_end;
	return AIS_OK;
}

static void slow_work(http_req_t *req) { usleep((useconds_t)(uintptr_t)req->state * 1000); }
static void slow_done(http_req_t *req) { http_resp_send(req, "late", 4); }

/* GET /slow?ms=N: answers after N ms (2000 by default) of pool work. */
static int h_slow(http_req_t *req)
{
	req->state = (void *)(uintptr_t)query_u64(req, "ms", 2000);
	http_offload(req, slow_work, slow_done);
	return AIS_OK;
}

static const http_route_t routes[] = {
	{"/data", HTTP_M(HTTP_GET) | HTTP_M(HTTP_HEAD), 0, 0, h_data, "pattern bytes", 0},
	{"/echo", HTTP_M(HTTP_PUT) | HTTP_M(HTTP_POST) | HTTP_M(HTTP_GET), HTTP_ROUTE_BODY, 0,
	 h_echo, "echo", 0},
	{"/slow", HTTP_M(HTTP_GET), 0, 0, h_slow, "a late answer", 0},
};

static void start(void)
{
	buf_t err = BUF_INIT;
	http_server_opts_t o = {
		.host = "127.0.0.1",
		.workers = 2,
		.io_threads = 4,
		.max_conns = 1000,
		.max_header_bytes = 8192,
		.header_timeout_ms = 5000,
		.idle_timeout_ms = 5000,
		.body_timeout_ms = 5000,
		.routes = routes,
		.nroutes = ARRAY_SIZE(routes),
	};
	g_srv = http_server_new(&o, &err);
	ck_assert_msg(g_srv != NULL, "server: %s", err.ptr ? err.ptr : "");
	g_port = http_server_port(g_srv);
	buf_free(&err);
}

static void stop(void)
{
	http_server_free(g_srv);
	g_srv = NULL;
	ck_assert_uint_eq(log_error_count(), 0);
}

/* ---- the client loop -------------------------------------------------------- */

static struct event_base *g_base;
static httpc_t *g_c;
static struct event *g_tick;

static int64_t now_ms(void) { return time_mono_ns() / 1000000; }

static void tick(evutil_socket_t fd, short what, void *arg) {}

static void client_new(const httpc_opts_t *o)
{
	struct timeval tv = {0, 10000};
	g_base = event_base_new();
	ck_assert_ptr_nonnull(g_base);
	g_c = httpc_new(g_base, o);
	/* a heartbeat, so the loop below wakes to check its deadline */
	g_tick = event_new(g_base, -1, EV_PERSIST, tick, NULL);
	event_add(g_tick, &tv);
}

static void client_free(void)
{
	httpc_free(g_c);
	event_free(g_tick);
	event_base_free(g_base);
	g_c = NULL;
}

/* Runs the loop until *count reaches want or ms pass; true if reached. */
static bool run_until(const int *count, int want, int ms)
{
	int64_t end = now_ms() + ms;
	while (*count < want && now_ms() < end)
		event_base_loop(g_base, EVLOOP_ONCE);
	return *count >= want;
}

static void run_for(int ms)
{
	int never = 0;
	run_until(&never, 1, ms);
}

static char *url(const char *path)
{
	static char u[8][256];
	static int k;
	char *p = u[k++ % 8];
	snprintf(p, sizeof(u[0]), "http://127.0.0.1:%d%s", g_port, path);
	return p;
}

typedef struct res {
	int *ndone;
	int done;
	int result, status;
	enum httpc_err kind;
	buf_t body;
	httpc_info_t info;
	char err[512];
	char hdr[128];  /* the header named hname */
	const char *hname;
	struct strm *st; /* streamed requests */
	int64_t done_ms;
} res_t;

static void on_done(httpc_req_t *r, void *arg)
{
	res_t *x = arg;
	x->done++;
	if (x->ndone)
		(*x->ndone)++;
	x->result = httpc_result(r);
	x->status = httpc_status(r);
	x->kind = httpc_errkind(r);
	x->info = *httpc_info(r);
	x->done_ms = now_ms();
	snprintf(x->err, sizeof(x->err), "%s", httpc_error(r));
	if (x->hname) {
		sv_t v = httpc_resp_header(r, x->hname);
		snprintf(x->hdr, sizeof(x->hdr), "%.*s", (int)v.len, v.ptr ? v.ptr : "");
	}
	buf_t *b = httpc_body(r);
	buf_t t = x->body;
	x->body = *b;
	*b = t;
}

static httpc_req_t *go(const char *method, const char *u, const void *body, size_t len, res_t *x)
{
	httpc_spec_t s = {.method = method, .url = u, .body = body, .body_len = len,
			  .done = on_done, .arg = x};
	return httpc_start(g_c, &s);
}

static void wait1(res_t *x, int ms)
{
	ck_assert_msg(run_until(&x->done, 1, ms), "request did not complete in %d ms", ms);
	ck_assert_int_eq(x->done, 1);
}

/* ---- tests -------------------------------------------------------------- */

START_TEST(test_roundtrip)
{
	const size_t sizes[] = {0, 1, MIB};
	char *src = xmalloc(MIB);
	fill_pat(src, 0, MIB);
	start();
	client_new(NULL);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t n = sizes[i];
		char path[64];
		res_t g = {.hname = "X-Test"}, p = {.hname = "X-Body-Read"}, q = {.hname = "x-method"};

		snprintf(path, sizeof(path), "/data?n=%zu", n);
		go("GET", url(path), NULL, 0, &g);
		go("PUT", url("/echo"), src, n, &p);
		go("POST", url("/echo"), src, n, &q);
		wait1(&g, 5000);
		wait1(&p, 5000);
		wait1(&q, 5000);
		res_t *all[] = {&g, &p, &q};
		for (int k = 0; k < 3; k++) {
			ck_assert_msg(all[k]->result == AIS_OK, "%s", all[k]->err);
			ck_assert_int_eq(all[k]->status, 200);
			ck_assert_uint_eq(all[k]->body.len, n);
			ck_assert(check_pat(all[k]->body.ptr, 0, n));
			ck_assert_str_eq(all[k]->err, "");
			ck_assert_int_eq(all[k]->info.attempts, 1);
			ck_assert_uint_eq(all[k]->info.bytes_recv, n);
			buf_free(&all[k]->body);
		}
		char want[32];
		snprintf(want, sizeof(want), "data-%zu", n);
		ck_assert_str_eq(g.hdr, want);
		snprintf(want, sizeof(want), "%zu", n);
		ck_assert_str_eq(p.hdr, want);
		ck_assert_str_eq(q.hdr, "POST");
		ck_assert_uint_eq(p.info.bytes_sent, n);
	}

	/* HEAD: status and headers, no body */
	res_t h = {.hname = "Content-Length"};
	go("HEAD", url("/data?n=12345"), NULL, 0, &h);
	wait1(&h, 5000);
	ck_assert_int_eq(h.result, AIS_OK);
	ck_assert_int_eq(h.status, 200);
	ck_assert_uint_eq(h.body.len, 0);
	ck_assert_str_eq(h.hdr, "12345");

	/* extra request headers reach the server; a 404 is a response, not an error */
	const char *hdrs[] = {"X-In: hello there", NULL};
	res_t e = {.hname = "X-Out"}, nf = {0};
	httpc_spec_t s = {.method = "PUT", .url = url("/echo"), .headers = hdrs, .body = "ab",
			  .body_len = 2, .done = on_done, .arg = &e};
	httpc_start(g_c, &s);
	go("GET", url("/nope"), NULL, 0, &nf);
	wait1(&e, 5000);
	wait1(&nf, 5000);
	ck_assert_str_eq(e.hdr, "hello there");

	/* a GET with a body (list requests carry JSON) stays a GET */
	res_t gb = {.hname = "X-Method"};
	go("GET", url("/echo"), "{\"a\":1}", 7, &gb);
	wait1(&gb, 5000);
	ck_assert_int_eq(gb.status, 200);
	ck_assert_str_eq(gb.hdr, "GET");
	ck_assert_uint_eq(gb.body.len, 7);
	ck_assert(memcmp(gb.body.ptr, "{\"a\":1}", 7) == 0);
	buf_free(&gb.body);
	ck_assert_int_eq(nf.result, AIS_OK);
	ck_assert_int_eq(nf.status, 404);
	buf_free(&e.body);
	buf_free(&nf.body);
	ck_assert_uint_eq(httpc_inflight(g_c), 0);
	client_free();
	stop();
	free(src);
}
END_TEST

/* Streamed both ways, each side pausing now and then and resumed by a
 * timer a moment later. */
typedef struct strm {
	httpc_req_t *req;
	struct event *resume_ev;
	uint64_t sent, total, recvd;
	int rcalls, wcalls;
	int rpauses, wpauses;
	bool bad;
	bool cancel_after_first;
} strm_t;

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
	strm_t *st = arg;
	httpc_resume(st->req);
}

static void resume_soon(strm_t *st, httpc_req_t *r)
{
	struct timeval tv = {0, 1000};
	st->req = r;
	evtimer_add(st->resume_ev, &tv);
}

static int s_read(httpc_req_t *r, void *arg, char *p, size_t cap, size_t *n)
{
	res_t *x = arg;
	strm_t *st = x->st;
	if (++st->rcalls % 7 == 0) {
		st->rpauses++;
		resume_soon(st, r);
		return AIS_AGAIN;
	}
	size_t k = MIN(cap, st->total - st->sent);
	fill_pat(p, st->sent, k);
	st->sent += k;
	*n = k;
	return st->sent == st->total ? AIS_DONE : AIS_OK;
}

static int s_write(httpc_req_t *r, void *arg, const char *p, size_t n)
{
	res_t *x = arg;
	strm_t *st = x->st;
	if (st->cancel_after_first && st->recvd > 0) {
		httpc_cancel(r);
		return AIS_OK;
	}
	if (++st->wcalls % 5 == 0) {
		st->wpauses++;
		resume_soon(st, r);
		return AIS_AGAIN;
	}
	if (!check_pat(p, st->recvd, n))
		st->bad = true;
	st->recvd += n;
	return AIS_OK;
}

static void strm_go(const char *method, const char *u, strm_t *st, res_t *x, bool up)
{
	st->resume_ev = evtimer_new(g_base, resume_cb, st);
	x->st = st;
	httpc_spec_t s = {.method = method, .url = u, .read = up ? s_read : NULL,
			  .read_len = up ? (int64_t)st->total : 0, .write = s_write,
			  .done = on_done, .arg = x};
	st->req = httpc_start(g_c, &s);
}

START_TEST(test_stream_big)
{
	start();
	client_new(NULL);
	/* up: 20 MiB pulled with pauses, echoed back and pushed with pauses */
	strm_t up = {.total = BIG};
	res_t xu = {0};
	strm_go("PUT", url("/echo"), &up, &xu, true);
	/* down: 20 MiB GET pushed with pauses */
	strm_t dn = {0};
	res_t xd = {0};
	strm_go("GET", url("/data?n=20971520"), &dn, &xd, false);
	/* chunked upload (length unknown) */
	strm_t ch = {.total = MIB + 7};
	res_t xc = {0};
	ch.resume_ev = evtimer_new(g_base, resume_cb, &ch);
	xc.st = &ch;
	httpc_spec_t s = {.method = "POST", .url = url("/echo"), .read = s_read, .read_len = -1,
			  .write = s_write, .done = on_done, .arg = &xc};
	httpc_start(g_c, &s);

	ck_assert(run_until(&xu.done, 1, 15000));
	ck_assert(run_until(&xd.done, 1, 5000));
	ck_assert(run_until(&xc.done, 1, 5000));
	ck_assert_msg(xu.result == AIS_OK, "%s", xu.err);
	ck_assert_msg(xd.result == AIS_OK, "%s", xd.err);
	ck_assert_msg(xc.result == AIS_OK, "%s", xc.err);
	ck_assert_int_eq(xu.status, 200);
	ck_assert_uint_eq(up.sent, BIG);
	ck_assert_uint_eq(up.recvd, BIG);
	ck_assert_uint_eq(dn.recvd, BIG);
	ck_assert_uint_eq(ch.recvd, MIB + 7);
	ck_assert(!up.bad && !dn.bad && !ch.bad);
	ck_assert_int_gt(up.rpauses, 0);
	ck_assert_int_gt(up.wpauses, 0);
	ck_assert_int_gt(dn.wpauses, 0);
	ck_assert_uint_eq(xu.body.len, 0); /* streamed, not buffered */
	ck_assert_uint_eq(xu.info.bytes_sent, BIG);
	event_free(up.resume_ev);
	event_free(dn.resume_ev);
	event_free(ch.resume_ev);
	client_free();
	stop();
}
END_TEST

START_TEST(test_many_reuse)
{
	enum { N = 200, M = 50 };
	httpc_opts_t o = {.max_host_conns = 8};
	static res_t x[N];
	int ndone = 0;
	start();
	client_new(&o);
	memset(x, 0, sizeof(x));
	for (int i = 0; i < N; i++) {
		x[i].ndone = &ndone;
		go("GET", url(i % 2 ? "/data?n=1000" : "/data?n=70000"), NULL, 0, &x[i]);
	}
	ck_assert_uint_eq(httpc_inflight(g_c), N);
	ck_assert_msg(run_until(&ndone, N, 10000), "%d of %d done", ndone, N);
	int ports[N], nports = 0;
	long conns = 0;
	for (int i = 0; i < N; i++) {
		ck_assert_msg(x[i].result == AIS_OK, "%d: %s", i, x[i].err);
		ck_assert_uint_eq(x[i].body.len, i % 2 ? 1000 : 70000);
		ck_assert(check_pat(x[i].body.ptr, 0, x[i].body.len));
		conns += x[i].info.new_conns;
		bool seen = false;
		for (int k = 0; k < nports; k++)
			seen |= ports[k] == x[i].info.local_port;
		if (!seen)
			ports[nports++] = x[i].info.local_port;
		buf_free(&x[i].body);
	}
	ck_assert_msg(nports <= 8, "%d client ports", nports);
	ck_assert_msg(conns <= 8, "%ld connections", conns);

	/* a second wave reuses the open connections */
	ndone = 0;
	memset(x, 0, sizeof(x));
	for (int i = 0; i < M; i++) {
		x[i].ndone = &ndone;
		go("GET", url("/data?n=10"), NULL, 0, &x[i]);
	}
	ck_assert(run_until(&ndone, M, 5000));
	conns = 0;
	for (int i = 0; i < M; i++) {
		ck_assert_int_eq(x[i].result, AIS_OK);
		conns += x[i].info.new_conns;
		buf_free(&x[i].body);
	}
	ck_assert_msg(conns == 0, "%ld new connections in the second wave", conns);
	client_free();
	stop();
}
END_TEST

START_TEST(test_timeout)
{
	start();
	client_new(NULL);
	res_t slow = {0}, fast = {0};
	/* a timeout long enough that a loaded machine still serves the fast
	 * request inside it; the lower bound is the property, the upper one
	 * only catches a timeout that never fires */
	httpc_spec_t s = {.method = "GET", .url = url("/slow"), .timeout_ms = 2000,
			  .done = on_done, .arg = &slow};
	int64_t t0 = now_ms();
	httpc_start(g_c, &s);
	run_for(50);
	go("GET", url("/data?n=100"), NULL, 0, &fast);
	wait1(&fast, 10000);
	wait1(&slow, 15000);
	int64_t took = slow.done_ms - t0;
	ck_assert_int_eq(slow.result, AIS_ERR);
	ck_assert_int_eq(slow.kind, HTTPC_E_TIMEOUT);
	ck_assert_int_eq(slow.status, 0);
	ck_assert_msg(took >= 1950 && took < 15000, "timed out after %lld ms", (long long)took);
	ck_assert_msg(strstr(slow.err, "GET http://127.0.0.1") != NULL, "%s", slow.err);
	ck_assert_int_eq(slow.info.attempts, 1);
	ck_assert_int_eq(fast.result, AIS_OK);
	ck_assert_int_lt(fast.done_ms, slow.done_ms);
	buf_free(&fast.body);
	client_free();
	stop();
}
END_TEST

static int free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd); /* nothing listens there now */
	return ntohs(sa.sin_port);
}

static int r_once(httpc_req_t *r, void *arg, char *p, size_t cap, size_t *n)
{
	*n = 0;
	return AIS_DONE;
}

START_TEST(test_refused)
{
	httpc_opts_t o = {.retries = 2, .retry_backoff_ms = 10, .connect_timeout_ms = 1000};
	char u[128];
	snprintf(u, sizeof(u), "http://127.0.0.1:%d/x", free_port());
	client_new(&o);
	res_t g = {0}, p = {0}, st = {0}, nr = {0};
	go("GET", u, NULL, 0, &g);
	go("POST", u, "x", 1, &p); /* not idempotent: once */
	httpc_spec_t s = {.method = "PUT", .url = u, .read = r_once, .read_len = 0,
			  .done = on_done, .arg = &st}; /* streamed: once */
	httpc_start(g_c, &s);
	httpc_spec_t s2 = {.method = "GET", .url = u, .flags = HTTPC_F_NO_RETRY,
			    .done = on_done, .arg = &nr};
	httpc_start(g_c, &s2);
	wait1(&g, 3000);
	wait1(&p, 1000);
	wait1(&st, 1000);
	wait1(&nr, 1000);
	ck_assert_int_eq(g.result, AIS_ERR);
	ck_assert_int_eq(g.kind, HTTPC_E_CONNECT);
	ck_assert_int_eq(g.info.attempts, 3);
	ck_assert_msg(strstr(g.err, "(3 attempts)") != NULL, "%s", g.err);
	ck_assert_msg(strstr(g.err, u) != NULL, "%s", g.err);
	ck_assert_int_eq(p.kind, HTTPC_E_CONNECT);
	ck_assert_int_eq(p.info.attempts, 1);
	ck_assert_int_eq(st.kind, HTTPC_E_CONNECT);
	ck_assert_int_eq(st.info.attempts, 1);
	ck_assert_int_eq(nr.info.attempts, 1);

	/* a URL curl cannot use completes with an error, from the loop */
	res_t bad = {0};
	go("GET", "nonsense://x", NULL, 0, &bad);
	ck_assert_int_eq(bad.done, 0);
	wait1(&bad, 1000);
	ck_assert_int_eq(bad.result, AIS_ERR);
	ck_assert_str_ne(bad.err, "");
	client_free();
	ck_assert_uint_eq(log_error_count(), 0);
}
END_TEST

START_TEST(test_cancel)
{
	start();
	client_new(NULL);
	res_t slow = {0}, after = {0}, cb = {0};
	go("GET", url("/slow?ms=600"), NULL, 0, &slow);
	httpc_req_t *r = httpc_start(g_c, &(httpc_spec_t){.method = "GET", .url = url("/slow?ms=600"),
							   .done = on_done, .arg = &after});
	run_for(100);
	httpc_cancel(r);
	ck_assert_uint_eq(httpc_inflight(g_c), 1);
	wait1(&slow, 3000);
	ck_assert_int_eq(slow.result, AIS_OK);
	ck_assert_int_eq(after.done, 0);

	/* cancel from its own write callback, mid-way through 20 MiB */
	strm_t st = {.cancel_after_first = true};
	strm_go("GET", url("/data?n=20971520"), &st, &cb, false);
	for (int64_t end = now_ms() + 5000; httpc_inflight(g_c) > 0 && now_ms() < end;)
		event_base_loop(g_base, EVLOOP_ONCE);
	run_for(50);
	ck_assert_int_eq(cb.done, 0);
	ck_assert_uint_gt(st.recvd, 0);
	ck_assert_uint_lt(st.recvd, BIG);
	ck_assert_uint_eq(httpc_inflight(g_c), 0);

	/* the client still works */
	res_t ok = {0};
	go("GET", url("/data?n=3"), NULL, 0, &ok);
	wait1(&ok, 2000);
	ck_assert_int_eq(ok.result, AIS_OK);
	ck_assert_uint_eq(ok.body.len, 3);
	buf_free(&ok.body);
	buf_free(&slow.body);
	event_free(st.resume_ev);
	client_free();
	stop();
}
END_TEST

START_TEST(test_limits_and_free)
{
	start();
	client_new(NULL);
	/* a buffered response over max_resp */
	res_t big = {0};
	httpc_spec_t s = {.method = "GET", .url = url("/data?n=100000"), .max_resp = 1000,
			  .done = on_done, .arg = &big};
	httpc_start(g_c, &s);
	wait1(&big, 2000);
	ck_assert_int_eq(big.result, AIS_ERR);
	ck_assert_int_eq(big.kind, HTTPC_E_TOO_BIG);
	ck_assert_msg(strstr(big.err, "over 1000 bytes") != NULL, "%s", big.err);

	/* httpc_free completes what is in flight */
	res_t slow = {0};
	go("GET", url("/slow?ms=500"), NULL, 0, &slow);
	run_for(50);
	httpc_free(g_c);
	g_c = NULL;
	ck_assert_int_eq(slow.done, 1);
	ck_assert_int_eq(slow.kind, HTTPC_E_CLOSED);
	event_free(g_tick);
	event_base_free(g_base);
	stop();
}
END_TEST

START_TEST(test_sync)
{
	char *src = xmalloc(MIB);
	fill_pat(src, 0, MIB);
	buf_t resp = BUF_INIT;
	int status = -1;
	start();
	const char *hdrs[] = {"X-In: sync", NULL};
	ck_assert_int_eq(httpc_sync("PUT", url("/echo"), hdrs, src, MIB, 5000, &resp, &status), AIS_OK);
	ck_assert_int_eq(status, 200);
	ck_assert_uint_eq(resp.len, MIB);
	ck_assert(check_pat(resp.ptr, 0, MIB));
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(httpc_sync("GET", url("/data?n=1"), NULL, NULL, 0, 5000, &resp, &status), AIS_OK);
		ck_assert_int_eq(status, 200);
		ck_assert_uint_eq(resp.len, 1);
	}
	ck_assert_int_eq(httpc_sync("POST", url("/echo"), NULL, NULL, 0, 5000, &resp, &status), AIS_OK);
	ck_assert_int_eq(status, 200);
	ck_assert_uint_eq(resp.len, 0);
	ck_assert_int_eq(httpc_sync("GET", url("/nope"), NULL, NULL, 0, 5000, &resp, &status), AIS_OK);
	ck_assert_int_eq(status, 404);
	ck_assert_int_eq(httpc_sync("GET", url("/slow?ms=600"), NULL, NULL, 0, 200, &resp, &status), AIS_ERR);
	ck_assert_int_eq(status, 0);
	ck_assert_msg(strstr(resp.ptr, "GET http://") != NULL, "%s", resp.ptr);

	char u[128];
	snprintf(u, sizeof(u), "http://127.0.0.1:%d/", free_port());
	ck_assert_int_eq(httpc_sync("GET", u, NULL, NULL, 0, 1000, &resp, &status), AIS_ERR);
	ck_assert_int_eq(status, 0);
	ck_assert_uint_gt(resp.len, 0);
	httpc_sync_release();
	buf_free(&resp);
	free(src);
	stop();
}
END_TEST

static Suite *httpc_suite(void)
{
	const struct {
		const char *name;
		const TTest *fn;
	} tests[] = {
		{"roundtrip", test_roundtrip},
		{"stream_big", test_stream_big},
		{"many_reuse", test_many_reuse},
		{"timeout", test_timeout},
		{"refused", test_refused},
		{"cancel", test_cancel},
		{"limits_and_free", test_limits_and_free},
		{"sync", test_sync},
	};
	Suite *s = suite_create("httpc");
	for (size_t i = 0; i < ARRAY_SIZE(tests); i++) {
		TCase *t = tcase_create(tests[i].name); /* CK_RUN_CASE=name runs one */
		tcase_set_timeout(t, 30);
		tcase_add_test(t, tests[i].fn);
		suite_add_tcase(s, t);
	}
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(httpc_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
