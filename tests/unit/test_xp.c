/*
 * test_xp.c - the node-to-node transport (xp.h) against a scripted peer:
 * a thread on a loopback socket that answers each request by its path
 * (a large body, a body that stalls, a connection cut mid-body, a chunked
 * answer, an echo of an uploaded body). Checks the bytes, the bounded
 * buffering under a slow consumer (xp_pause/xp_resume), the timeout and
 * cut-connection errors, keep-alive reuse, and chunked uploads; and the
 * blocking side's GET into a sink (xs_get_to): the bytes, reuse, an error
 * answer, a stall, a cut, a sink that refuses, a node stopping.
 *
 * Every wait has a deadline: a request that never ends fails the test.
 */
#include <check.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "aisd/httpc.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "aisd/banned.h"

#define MIB (1024u * 1024u)
#define BIG (24 * MIB)

static unsigned char pat(uint64_t i) { return (unsigned char)((i * 131u) ^ (i >> 9)); }

/* ---- the scripted peer ---------------------------------------------------------- */

static int g_lfd, g_port;
static atomic_int g_accepts;

static int read_head(int fd, char *b, size_t cap, size_t *got)
{
	*got = 0;
	while (*got < cap - 1) {
		ssize_t k = recv(fd, b + *got, cap - 1 - *got, 0);
		if (k <= 0)
			return -1;
		*got += (size_t)k;
		b[*got] = '\0';
		if (strstr(b, "\r\n\r\n"))
			return 0;
	}
	return -1;
}

static void send_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
		if (k <= 0)
			return;
		c += k;
		n -= (size_t)k;
	}
}

static void send_pat(int fd, uint64_t from, uint64_t n)
{
	char b[65536];
	while (n) {
		size_t k = MIN(n, sizeof(b));
		for (size_t i = 0; i < k; i++)
			b[i] = (char)pat(from + i);
		send_all(fd, b, k);
		from += k;
		n -= k;
	}
}

/* The request's chunked body: its decoded length (the peer of /echo). */
static uint64_t read_chunked(int fd, char *b, size_t have)
{
	uint64_t total = 0;
	size_t len = have;
	for (;;) {
		char *crlf;
		while (!(crlf = memmem(b, len, "\r\n", 2))) {
			ssize_t k = recv(fd, b + len, 65536 - len, 0);
			if (k <= 0)
				return total;
			len += (size_t)k;
		}
		uint64_t n = strtoull(b, NULL, 16);
		size_t skip = (size_t)(crlf + 2 - b);
		memmove(b, b + skip, len - skip);
		len -= skip;
		if (!n)
			return total; /* (the trailer's CRLF is left: the test closes) */
		uint64_t left = n + 2;
		while (left) {
			if (!len) {
				ssize_t k = recv(fd, b, 65536, 0);
				if (k <= 0)
					return total;
				len = (size_t)k;
			}
			size_t take = (size_t)MIN(left, len);
			memmove(b, b + take, len - take);
			len -= take;
			left -= take;
		}
		total += n;
	}
}

static void *peer_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char *b = xmalloc(65536);
	size_t got;
	char head[256];
	while (read_head(fd, b, 65536, &got) == 0) {
		char *end = strstr(b, "\r\n\r\n") + 4;
		size_t rest = got - (size_t)(end - b);
		if (!strncmp(b, "GET /big ", 9)) {
			snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %u\r\n\r\n", BIG);
			send_all(fd, head, strlen(head));
			send_pat(fd, 0, BIG);
		} else if (!strncmp(b, "GET /small ", 11)) {
			const char *a = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Test: yes\r\n\r\nhello";
			send_all(fd, a, strlen(a));
		} else if (!strncmp(b, "GET /chunked ", 13)) {
			const char *a = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n";
			send_all(fd, a, strlen(a));
		} else if (!strncmp(b, "GET /stall ", 11)) {
			const char *a = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
			send_all(fd, a, strlen(a));
			send_pat(fd, 0, 100);
			sleep(3); /* never the rest */
			break;
		} else if (!strncmp(b, "GET /cut ", 9)) {
			const char *a = "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n";
			send_all(fd, a, strlen(a));
			send_pat(fd, 0, 300000);
			break; /* closed mid-body */
		} else if (!strncmp(b, "GET /missing ", 13)) {
			const char *a = "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found";
			send_all(fd, a, strlen(a));
		} else if (!strncmp(b, "PUT /echo ", 10)) {
			memmove(b, end, rest);
			uint64_t n = read_chunked(fd, b, rest);
			char body[32];
			int bl = snprintf(body, sizeof(body), "%llu", (unsigned long long)n);
			snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", bl,
				 body);
			send_all(fd, head, strlen(head));
			break;
		} else {
			break;
		}
	}
	free(b);
	close(fd);
	return NULL;
}

static void *peer_main(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(g_lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		atomic_fetch_add(&g_accepts, 1);
		pthread_t t;
		pthread_create(&t, NULL, peer_conn, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
}

static void peer_start(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	g_lfd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(g_lfd, 0);
	ck_assert_int_eq(bind(g_lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(g_lfd, 16), 0);
	getsockname(g_lfd, (struct sockaddr *)&a, &al);
	g_port = ntohs(a.sin_port);
	pthread_t t;
	pthread_create(&t, NULL, peer_main, NULL);
	pthread_detach(t);
}

/* ---- the client side ------------------------------------------------------------ */

struct got {
	struct event_base *base;
	int status, err;
	int64_t clen;
	buf_t hdrs, body;
	uint64_t seen;         /* body bytes */
	bool bad;              /* a byte differs from the pattern */
	bool slow;             /* consume slowly: pause at 1 MiB held, resume from a timer */
	size_t held, max_held; /* bytes taken and not yet consumed */
	xp_req_t *r;
	struct event *tick;
	bool done;
	char msg[512];
};

static void on_head(xp_req_t *r, void *arg, int status, sv_t hdrs, int64_t clen)
{
	struct got *g = arg;
	(void)r;
	g->status = status;
	g->clen = clen;
	buf_add(&g->hdrs, hdrs.ptr, hdrs.len);
}

static void on_body(xp_req_t *r, void *arg, const char *p, size_t n)
{
	struct got *g = arg;
	for (size_t i = 0; i < n && g->clen > 0; i++)
		if ((unsigned char)p[i] != pat(g->seen + i))
			g->bad = true;
	if (g->clen <= 0 || g->clen < 1000)
		buf_add(&g->body, p, n);
	g->seen += n;
	if (g->slow) {
		g->held += n;
		g->max_held = MAX(g->max_held, g->held);
		if (g->held >= MIB)
			xp_pause(r);
	}
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct got *g = arg;
	(void)fd, (void)what;
	g->held = 0; /* consumed */
	if (g->r && !g->done)
		xp_resume(g->r);
}

static void on_done(xp_req_t *r, void *arg, int err, const char *msg)
{
	struct got *g = arg;
	(void)r;
	g->err = err;
	g->done = true;
	g->r = NULL;
	snprintf(g->msg, sizeof(g->msg), "%s", msg);
	event_base_loopbreak(g->base);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	event_base_loopbreak(arg);
}

/* Runs one GET of path to its end (or 10 s). */
static void get(struct event_base *base, const char *path, struct got *g, uint64_t timeout_ms)
{
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", g_port);
	g->base = base;
	xp_spec_t s = {.base = url, .method = "GET", .target = sv_from(path), .body_len = -1,
		       .timeout_ms = timeout_ms, .on_head = on_head, .on_body = on_body, .on_done = on_done,
		       .arg = g};
	if (g->slow) {
		g->tick = event_new(base, -1, EV_PERSIST, on_tick, g);
		struct timeval tv = {0, 2000};
		event_add(g->tick, &tv);
	}
	g->r = xp_start(base, &s);
	struct event *deadline = evtimer_new(base, on_deadline, base);
	struct timeval dl = {10, 0};
	evtimer_add(deadline, &dl);
	while (!g->done && event_base_dispatch(base) == 0 && !g->done) {
		if (!evtimer_pending(deadline, NULL))
			break;
	}
	event_free(deadline);
	if (g->tick)
		event_free(g->tick);
	g->tick = NULL;
	ck_assert_msg(g->done, "%s: no end within 10 s", path);
}

static void got_free(struct got *g)
{
	buf_free(&g->hdrs);
	buf_free(&g->body);
}

START_TEST(test_small_and_reuse)
{
	peer_start();
	struct event_base *base = event_base_new();
	struct got a = {0}, b = {0};
	get(base, "/small", &a, 5000);
	ck_assert_int_eq(a.err, 0);
	ck_assert_int_eq(a.status, 200);
	ck_assert(a.body.len == 5 && !memcmp(a.body.ptr, "hello", 5));
	ck_assert(memmem(a.hdrs.ptr, a.hdrs.len, "X-Test: yes", 11));
	get(base, "/small", &b, 5000);
	ck_assert_int_eq(b.err, 0);
	ck_assert_int_eq(atomic_load(&g_accepts), 1); /* the second went over the kept connection */
	got_free(&a);
	got_free(&b);
	xp_pool_free(base);
	event_base_free(base);
}
END_TEST

START_TEST(test_big_slow_consumer)
{
	peer_start();
	struct event_base *base = event_base_new();
	struct got g = {.slow = true};
	get(base, "/big", &g, 5000);
	ck_assert_msg(g.err == 0, "%s", g.msg);
	ck_assert_uint_eq(g.seen, BIG);
	ck_assert(!g.bad);
	/* paused at 1 MiB held: at most one more socket read arrives after it */
	ck_assert_msg(g.max_held <= MIB + 256 * 1024, "held %zu bytes", g.max_held);
	got_free(&g);
	xp_pool_free(base);
	event_base_free(base);
}
END_TEST

START_TEST(test_chunked_answer)
{
	peer_start();
	struct event_base *base = event_base_new();
	struct got g = {0};
	get(base, "/chunked", &g, 5000);
	ck_assert_int_eq(g.err, 0);
	ck_assert_int_eq(g.clen, -1);
	ck_assert(g.body.len == 7 && !memcmp(g.body.ptr, "abcdefg", 7));
	got_free(&g);
	xp_pool_free(base);
	event_base_free(base);
}
END_TEST

START_TEST(test_stall_times_out)
{
	peer_start();
	struct event_base *base = event_base_new();
	struct got g = {0};
	int64_t t0 = time_now_ns();
	get(base, "/stall", &g, 300);
	ck_assert_int_eq(g.err, ETIMEDOUT);
	ck_assert(strstr(g.msg, "/stall"));
	ck_assert_msg(time_now_ns() - t0 < 2500000000LL, "the timeout took too long");
	got_free(&g);
	xp_pool_free(base);
	event_base_free(base);
}
END_TEST

START_TEST(test_cut_mid_body)
{
	peer_start();
	struct event_base *base = event_base_new();
	struct got g = {0};
	get(base, "/cut", &g, 5000);
	ck_assert_msg(g.err != 0, "a cut body must not end as a whole answer");
	ck_assert(g.seen < 1000000);
	got_free(&g);
	xp_pool_free(base);
	event_base_free(base);
}
END_TEST

struct up {
	struct got g;
	uint64_t left;
};

static void up_drain(xp_req_t *r, void *arg)
{
	struct up *u = arg;
	char b[65536];
	if (!u->left)
		return;
	size_t k = (size_t)MIN(u->left, sizeof(b));
	memset(b, 'x', k);
	xp_send(r, b, k);
	u->left -= k;
	if (!u->left)
		xp_end(r);
}

START_TEST(test_chunked_upload)
{
	peer_start();
	struct event_base *base = event_base_new();
	struct up u = {.left = 3 * MIB + 17};
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", g_port);
	u.g.base = base;
	xp_spec_t s = {.base = url, .method = "PUT", .target = SV("/echo"), .body_len = -2, .timeout_ms = 5000,
		       .on_head = on_head, .on_body = on_body, .on_drain = up_drain, .on_done = on_done,
		       .arg = &u};
	xp_req_t *r = xp_start(base, &s);
	up_drain(r, &u); /* the first piece; the rest as the transport drains */
	struct event *deadline = evtimer_new(base, on_deadline, base);
	struct timeval dl = {10, 0};
	evtimer_add(deadline, &dl);
	event_base_dispatch(base);
	event_free(deadline);
	ck_assert(u.g.done);
	ck_assert_msg(u.g.err == 0, "%s", u.g.msg);
	ck_assert_int_eq(u.g.status, 200);
	char want[32];
	snprintf(want, sizeof(want), "%u", 3 * MIB + 17);
	ck_assert(u.g.body.len == strlen(want) && !memcmp(u.g.body.ptr, want, u.g.body.len));
	got_free(&u.g);
	xp_pool_free(base);
	event_base_free(base);
}
END_TEST

START_TEST(test_refused)
{
	/* a port nobody listens on: a clean error from the loop */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &al);
	g_port = ntohs(a.sin_port);
	close(fd);
	struct event_base *base = event_base_new();
	struct got g = {0};
	get(base, "/small", &g, 5000);
	ck_assert_int_eq(g.err, ECONNREFUSED);
	got_free(&g);
	xp_pool_free(base);
	event_base_free(base);
}
END_TEST

/* ---- the blocking side: xs_get_to ----------------------------------------------- */

struct xsink {
	uint64_t seen, refuse_at; /* refuse_at: AIS_ERR once this many bytes came (0: never) */
	bool bad;
	buf_t small;
};

static int xsink(void *arg, const char *p, size_t n)
{
	struct xsink *k = arg;
	if (k->refuse_at && k->seen >= k->refuse_at)
		return AIS_ERR;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] != pat(k->seen + i))
			k->bad = true;
	if (k->small.len < 64)
		buf_add(&k->small, p, MIN(n, 64 - k->small.len));
	k->seen += n;
	return AIS_OK;
}

static int xget(const char *path, uint64_t timeout_ms, struct xsink *k, int *status, buf_t *hdrs, buf_t *msg)
{
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", g_port, path);
	const char *h[] = {"X-Asked: 1", NULL};
	return xs_get_to(url, h, timeout_ms, xsink, k, hdrs, status, msg);
}

START_TEST(test_xs_get)
{
	peer_start();
	struct xsink k = {0};
	buf_t hdrs = BUF_INIT, msg = BUF_INIT;
	int status = 0;
	ck_assert_int_eq(xget("/big", 5000, &k, &status, &hdrs, &msg), AIS_OK);
	ck_assert_int_eq(status, 200);
	ck_assert_uint_eq(k.seen, BIG);
	ck_assert(!k.bad);
	/* the connection is kept: the next GETs go over it */
	int accepts = atomic_load(&g_accepts);
	struct xsink s = {0};
	ck_assert_int_eq(xget("/small", 5000, &s, &status, &hdrs, &msg), AIS_OK);
	ck_assert_int_eq(status, 200);
	ck_assert(s.small.len == 5 && !memcmp(s.small.ptr, "hello", 5));
	ck_assert_msg(strstr(hdrs.ptr, "X-Test: yes") != NULL, "%s", hdrs.ptr);
	struct xsink c = {0};
	ck_assert_int_eq(xget("/chunked", 5000, &c, &status, NULL, &msg), AIS_OK);
	ck_assert(c.small.len == 7 && !memcmp(c.small.ptr, "abcdefg", 7));
	/* an error answer: its body is the message, nothing goes to the sink */
	struct xsink m = {0};
	ck_assert_int_eq(xget("/missing", 5000, &m, &status, NULL, &msg), AIS_OK);
	ck_assert_int_eq(status, 404);
	ck_assert_uint_eq(m.seen, 0);
	ck_assert_str_eq(msg.ptr, "not found");
	ck_assert_int_eq(atomic_load(&g_accepts), accepts);
	xs_release();
	buf_free(&k.small);
	buf_free(&s.small);
	buf_free(&c.small);
	buf_free(&hdrs);
	buf_free(&msg);
}
END_TEST

START_TEST(test_xs_get_failures)
{
	peer_start();
	buf_t msg = BUF_INIT;
	int status = 0;
	/* a peer that stops mid-body: a timeout, after about timeout_ms */
	struct xsink k = {0};
	uint64_t t0 = time_mono_ns();
	ck_assert_int_eq(xget("/stall", 1200, &k, &status, NULL, &msg), AIS_ERR);
	uint64_t ms = (time_mono_ns() - t0) / 1000000;
	ck_assert_msg(errno == ETIMEDOUT && ms >= 1000 && ms < 2900, "errno %d after %llu ms: %s", errno,
		      (unsigned long long)ms, msg.ptr);
	ck_assert_uint_eq(k.seen, 100);
	/* a peer that closes mid-body */
	struct xsink c = {0};
	ck_assert_int_eq(xget("/cut", 5000, &c, &status, NULL, &msg), AIS_ERR);
	ck_assert_msg(c.seen == 300000 && !c.bad, "%llu bytes", (unsigned long long)c.seen);
	/* a sink that refuses: the transfer ends there */
	struct xsink r = {.refuse_at = MIB};
	ck_assert_int_eq(xget("/big", 5000, &r, &status, NULL, &msg), AIS_ERR);
	ck_assert_int_eq(errno, ECANCELED);
	ck_assert_msg(strstr(msg.ptr, "not taken") != NULL, "%s", msg.ptr);
	ck_assert_uint_lt(r.seen, 2 * MIB);
	xs_release();
	buf_free(&k.small);
	buf_free(&c.small);
	buf_free(&r.small);
	buf_free(&msg);
}
END_TEST

static void *abort_later(void *arg)
{
	(void)arg;
	usleep(300000);
	httpc_stream_abort();
	return NULL;
}

/* A node that stops: a transfer waiting on a stalled peer ends within about
 * a second, not its timeout. */
START_TEST(test_xs_get_abort)
{
	peer_start();
	buf_t msg = BUF_INIT;
	int status = 0;
	struct xsink k = {0};
	pthread_t t;
	pthread_create(&t, NULL, abort_later, NULL);
	uint64_t t0 = time_mono_ns();
	ck_assert_int_eq(xget("/stall", 20000, &k, &status, NULL, &msg), AIS_ERR);
	uint64_t ms = (time_mono_ns() - t0) / 1000000;
	pthread_join(t, NULL);
	ck_assert_msg(errno == ECANCELED && ms < 2500, "errno %d after %llu ms", errno, (unsigned long long)ms);
	buf_free(&k.small);
	buf_free(&msg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xp");
	TCase *t = tcase_create("xp");
	tcase_set_timeout(t, 30);
	tcase_add_test(t, test_small_and_reuse);
	tcase_add_test(t, test_big_slow_consumer);
	tcase_add_test(t, test_chunked_answer);
	tcase_add_test(t, test_stall_times_out);
	tcase_add_test(t, test_cut_mid_body);
	tcase_add_test(t, test_chunked_upload);
	tcase_add_test(t, test_refused);
	tcase_add_test(t, test_xs_get);
	tcase_add_test(t, test_xs_get_failures);
	tcase_add_test(t, test_xs_get_abort);
	suite_add_tcase(s, t);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
