/*
 * server.c - HTTP server threads: one event loop per worker, each with its
 * own SO_REUSEPORT listener (the kernel spreads connections), an eventfd
 * for completions from the I/O pool, and the shared connection limit.
 * The port is this process's alone (port_claim): the kernel lets any
 * process of the same user join a SO_REUSEPORT group and take a share of
 * its connections, so before binding, the server holds a name for the
 * address in the abstract unix namespace (another aisd on the port fails
 * to take it) and checks with a plain bind that no other program listens.
 *
 * Guarantees: a connection lives on one worker for its whole life; a
 * request handed to a pool is completed on its own worker; nothing blocks
 * an event loop on disk (blocking work goes through http_offload). Two
 * pools: the I/O pool runs work bounded by this node's disks, the network
 * pool (http_offload_net) work that waits on other nodes, so peers that
 * stall or die can fill only the latter, never delay a PUT's commit.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netdb.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"
#include "aisd/conf.h"
#include "aisd/log.h"
#include "aisd/metrics.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

const char *worker_date(struct worker *w)
{
	int64_t now = time_now_ns();
	if (now / 1000000000LL != w->date_sec) {
		w->date_sec = now / 1000000000LL;
		time_http_date(now, w->date, sizeof(w->date));
	}
	return w->date;
}

/* A socket bound to host:port: with listen, in the SO_REUSEPORT group of
 * the server's listeners, listening; without, a probe: bound only, without
 * SO_REUSEPORT, so its bind fails (EADDRINUSE) while anything listens on
 * the port. */
static int listen_socket(const char *host, int port, bool listen_too, buf_t *err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res;
	char ports[16];
	int one = 1, fd = -1;

	snprintf(ports, sizeof(ports), "%d", port);
	int rc = getaddrinfo(host && *host ? host : NULL, ports, &hints, &res);
	if (rc) {
		buf_addf(err, "cannot resolve %s: %s", host, gai_strerror(rc));
		return -1;
	}
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)); /* past TIME_WAIT, not a listener */
		if (listen_too)
			setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && (!listen_too || listen(fd, 1024) == 0))
			break;
		close(fd);
		fd = -1;
	}
	if (fd < 0 && errno == EADDRINUSE)
		buf_addf(err, "cannot listen on %s:%d: the port is in use (another program listens on it)",
			 host && *host ? host : "*", port);
	else if (fd < 0)
		buf_addf(err, "cannot listen on %s:%d: %s", host, port, strerror(errno));
	freeaddrinfo(res);
	return fd;
}

/* One node, one process, one port: holds "aisd-port <host>:<port>" in the
 * abstract unix namespace (per network namespace, as ports are; released
 * by the kernel however the process ends) and probes that nothing else
 * listens there. Returns the name's socket, kept for the server's life,
 * or -1 with err. Port 0 (the kernel picks a free one) needs neither. */
static int port_claim(const char *host, int port, buf_t *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *h = host && *host ? host : "*";
	if (port == 0)
		return -1;
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "aisd-port %s:%d", h, port);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				    (size_t)MIN(n, (int)sizeof(sa.sun_path) - 2));
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) < 0) {
		if (errno == EADDRINUSE)
			buf_addf(err, "cannot listen on %s:%d: the port is in use by another aisd", h, port);
		else
			buf_addf(err, "cannot claim port %d: %s", port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int probe = listen_socket(host, port, false, err);
	if (probe < 0) {
		close(fd);
		return -1;
	}
	close(probe);
	return fd;
}

/* The unix socket local clients reach the server on: a stale socket file
 * is replaced; anything else at the path is an error. Mode 0660. */
static int unix_listen(const char *path, buf_t *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		buf_addf(err, "unix socket path %s is longer than %zu bytes", path, sizeof(sa.sun_path) - 1);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			buf_addf(err, "%s exists and is not a socket", path);
			return -1;
		}
		unlink(path);
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0660) < 0 ||
	    listen(fd, 1024) < 0) {
		buf_addf(err, "cannot listen on unix socket %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void port_release(http_server_t *s)
{
	if (s->port_fd >= 0)
		close(s->port_fd);
	s->port_fd = -1;
}

static void unix_close(http_server_t *s)
{
	if (s->ufd >= 0) {
		close(s->ufd);
		unlink(s->unix_path);
	}
	free(s->unix_path);
}

static int socket_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -1;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void accept_listen(struct worker *w, bool on)
{
	if (on) {
		event_add(w->lev, NULL);
		if (w->uev)
			event_add(w->uev, NULL);
	} else {
		event_del(w->lev);
		if (w->uev)
			event_del(w->uev);
	}
}

static void on_pause_end(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	w->accept_paused = false;
	if (!w->draining)
		accept_listen(w, true);
}

/*
 * Out of descriptors (EMFILE, ENFILE): the pending connection stays in the
 * backlog, so a level-triggered listener would fire again at once and
 * spin. Accepting stops for HTTP_EMFILE_PAUSE_MS instead (responses and
 * closes go on and free descriptors), with one log line per
 * HTTP_EMFILE_LOG_SECS for the whole server.
 */
static void accept_pause(struct worker *w, int err)
{
	http_server_t *s = w->srv;
	struct timeval tv = {0, HTTP_EMFILE_PAUSE_MS * 1000};
	int64_t now = time_now_ns() / 1000000000LL, last = atomic_load(&s->emfile_logged);
	uint64_t n = atomic_fetch_add(&s->emfile_count, 1) + 1;

	HM_INC(w->st.emfile, 1);
	if (now - last >= HTTP_EMFILE_LOG_SECS && atomic_compare_exchange_strong(&s->emfile_logged, &last, now)) {
		atomic_fetch_sub(&s->emfile_count, n);
		log_warnx("accept: %s (%llu times in %llds): not accepting for %d ms at a time; open connections %lu of "
			  "at most %llu", strerror(err), (unsigned long long)n, (long long)(last ? now - last : 0),
			  HTTP_EMFILE_PAUSE_MS, (unsigned long)atomic_load(&s->nconns),
			  (unsigned long long)s->o.max_conns);
	}
	accept_listen(w, false);
	w->accept_paused = true;
	event_add(w->pause_ev, &tv);
}

/* Connections a worker may let in over the limit while it asks another
 * worker to close an idle one (it had none itself). */
#define EVICT_SLACK 16

/* At the connection limit, or the descriptor budget used up (a connection
 * takes one)? slack: how far over still counts as not full. */
static bool server_full(http_server_t *s, uint64_t slack)
{
	return atomic_load(&s->nconns) >= s->o.max_conns + slack || atomic_load(&s->fds) >= s->fd_budget + slack;
}

/* accept_refuse's 503 written on fd (plain connections only), fd left open. */
static void refuse_write(http_server_t *s, int fd, bool local, const char *why)
{
	buf_t body = BUF_INIT, msg = BUF_INIT;
	if (!s->tls || local) { /* over TLS a plain answer would be noise */
		buf_addstr(&body, "{\"message\":");
		buf_add_json_str(&body, why, strlen(why));
		buf_addstr(&body, ",\"status\":503}");
		buf_addf(&msg, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%.*s",
			 body.len, (int)body.len, body.ptr);
		ssize_t n = write(fd, msg.ptr, msg.len);
		(void)n;
	}
	buf_free(&body);
	buf_free(&msg);
}

void accept_refuse(http_server_t *s, int fd, bool local, const char *why)
{
	refuse_write(s, fd, local, why);
	close(fd);
}

/* Has the client sent bytes this server has not read yet? */
static bool unread_input(const http_conn_t *c)
{
	int n = 0;
	return ioctl(c->fd, FIONREAD, &n) == 0 && n > 0;
}

/* At the connection limit: closes this worker's longest-idle connection
 * (no request begun, nothing in flight, no bytes waiting in the kernel:
 * a request that arrived but was not read yet is not idle, and closing
 * over unread bytes would reset it), so that idle connections cannot lock
 * others out. One that never began a request gets the 503 a refused
 * connection gets: its client may have connected and be sending its first
 * request now, and reads that answer to it (retry later) rather than a
 * close with no answer. false when none is idle. */
static bool evict_idle(struct worker *w)
{
	for (http_conn_t *c = w->conns_tail; c; c = c->prev) {
		if (c->state == CS_HEAD && c->in_off == c->in.len && !c->req_start_mono && !c->offloaded && !c->running &&
		    !unread_input(c)) {
			if (!c->had_request) /* (over TLS refuse_write writes nothing) */
				refuse_write(w->srv, c->fd, c->local, "too many connections");
			HM_INC(w->st.evicted, 1);
			conn_free(c);
			return true;
		}
	}
	return false;
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct worker *w = arg;
	http_server_t *s = w->srv;
	bool local = lfd == s->ufd;

	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				accept_pause(w, errno);
			return;
		}
		HM_INC(w->st.accepted, 1);
		uint64_t slack = 0;
		if (server_full(s, 0) && !evict_idle(w) && s->nworkers > 1) {
			/* none idle here: the next worker closes one of its own, and
			 * this one is let in meanwhile (at most EVICT_SLACK over) */
			struct worker *o = &s->workers[(w->idx + 1) % s->nworkers];
			atomic_fetch_add(&o->evict_wanted, 1);
			uint64_t one = 1;
			ssize_t n = write(o->efd, &one, sizeof(one));
			(void)n;
			slack = EVICT_SLACK;
		}
		uint64_t had_conns = atomic_fetch_add(&s->nconns, 1), had_fds = atomic_fetch_add(&s->fds, 1);
		if (had_conns >= s->o.max_conns + slack || had_fds >= s->fd_budget + slack) {
			HM_INC(w->st.rejected, 1);
			accept_refuse(s, fd, local, "too many connections");
			atomic_fetch_sub(&s->nconns, 1);
			atomic_fetch_sub(&s->fds, 1);
			continue;
		}
		int one = 1;
		if (!local)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		conn_accept(w, fd, &ss, local);
	}
}

/*
 * Stopping: no new connections; idle ones close now, busy ones after their
 * response; the loop ends when none is left or after HTTP_DRAIN_SECS.
 */
static void start_drain(struct worker *w)
{
	struct timeval tv = {HTTP_DRAIN_SECS, 0};
	w->draining = true;
	accept_listen(w, false);
	event_del(w->pause_ev);
	/* closed, not just unwatched: a peer's connect is refused at once
	 * instead of waiting in the backlog for its timeout (every node of a
	 * cluster may be stopping, each with calls to the others) */
	close(w->lfd);
	w->lfd = -1;
	for (http_conn_t *c = w->conns, *next; c; c = next) {
		next = c->next;
		if (((c->state == CS_HEAD && c->in_off == c->in.len && !c->req_start_mono) || c->state == CS_LINGER) &&
		    !c->offloaded && !c->running) {
			conn_free(c);
		} else if (c->state == CS_HEAD && c->req_start_mono && !c->offloaded && !c->running) {
			/* a head begun but stalled is not a request in progress:
			 * HTTP_DRAIN_HEAD_MS for the rest (then 408), not the header
			 * timeout */
			struct timeval hv = {HTTP_DRAIN_HEAD_MS / 1000, (HTTP_DRAIN_HEAD_MS % 1000) * 1000};
			event_add(c->tev, &hv);
		}
	}
	if (!w->conns)
		event_base_loopbreak(w->base);
	else
		event_base_loopexit(w->base, &tv);
}

/* Completed offloads come back here, on the request's own worker. */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	uint64_t v;
	ssize_t n = read(fd, &v, sizeof(v));
	(void)n;

	pthread_mutex_lock(&w->mu);
	http_req_t *list = w->done_head;
	w->done_head = w->done_tail = NULL;
	bool stop = w->stopping;
	pthread_mutex_unlock(&w->mu);
	for (int k = atomic_exchange(&w->evict_wanted, 0); k > 0 && evict_idle(w); k--)
		;

	while (list) {
		http_req_t *req = list;
		list = req->task.next ? REQ_OF_TASK(req->task.next) : NULL;
		http_conn_t *c = req->conn;
		http_work_fn done = req->done_fn;
		c->offloaded = false;
		req->work_fn = req->done_fn = NULL;
		if (c->state == CS_CLOSED) {
			conn_free(c);
			continue;
		}
		c->running = true; /* calls made by done() only mark the conn */
		log_set_request(req->id ? req->id_str : NULL);
		if (done)
			done(req);
		c->running = false;
		conn_run(c);
	}
	if (stop && !w->draining)
		start_drain(w);
}

static void offload_main(pool_task_t *t)
{
	http_req_t *req = REQ_OF_TASK(t);
	struct worker *w = req->conn->w;
	log_set_request(req->id ? req->id_str : NULL);
	if (req->work_fn)
		req->work_fn(req);
	log_set_request(NULL);
	pthread_mutex_lock(&w->mu);
	t->next = NULL;
	if (w->done_tail)
		w->done_tail->task.next = t;
	else
		w->done_head = req;
	w->done_tail = req;
	pthread_mutex_unlock(&w->mu);
	uint64_t one = 1;
	ssize_t n = write(w->efd, &one, sizeof(one));
	(void)n;
}

static void offload_to(http_conn_t *c, pool_t *pool, http_work_fn work, http_work_fn done)
{
	if (c->offloaded)
		fatalx("two offloads in flight on one request");
	c->offloaded = true;
	c->req.work_fn = work;
	c->req.done_fn = done;
	pool_submit(pool, &c->req.task, offload_main);
}

void conn_offload(http_conn_t *c, http_work_fn work, http_work_fn done)
{
	offload_to(c, c->w->srv->pool, work, done);
}

void http_offload(http_req_t *req, http_work_fn work, http_work_fn done)
{
	offload_to(req->conn, req->conn->w->srv->pool, work, done);
}

void http_offload_net(http_req_t *req, http_work_fn work, http_work_fn done)
{
	offload_to(req->conn, req->conn->w->srv->npool, work, done);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	event_base_dispatch(w->base);
	return NULL;
}

/*
 * The descriptor budget and the connection limit. The budget is what the
 * descriptor limit leaves after fd_reserve (files, databases, calls to
 * peers, idle connections to peers kept for reuse), or half the limit when
 * it is too small for that: client connections (one descriptor each) and
 * what their requests hold (their route's fds) stay within it, so the
 * node's own work never meets EMFILE. The connection limit is the budget,
 * or net.max_conns when that is lower. Without this a limit below
 * net.max_conns is hit in accept(2) (EMFILE), where a client gets no
 * answer, and the node's own calls fail with it.
 */
static uint64_t fd_budget(const http_server_opts_t *o)
{
	struct rlimit rl;
	uint64_t reserve = o->fd_reserve ? o->fd_reserve : 256, lim;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		lim = (uint64_t)rl.rlim_cur;
	else
		lim = 1 << 20;
	return lim > 2 * reserve ? lim - reserve : lim / 2;
}

static uint64_t conn_limit(const http_server_opts_t *o, uint64_t derived)
{
	if (o->max_conns && o->max_conns > derived)
		log_warnx("net.max_conns %llu is more than the descriptor limit leaves (%llu): %llu it is",
			  (unsigned long long)o->max_conns, (unsigned long long)derived, (unsigned long long)derived);
	return o->max_conns ? MIN(o->max_conns, derived) : derived;
}

void http_server_opts_conf(http_server_opts_t *o, const conf_t *c)
{
	o->host = c->host;
	o->port = (int)c->port;
	o->workers = (int)c->workers;
	o->io_threads = (int)c->io_threads;
	o->net_threads = (int)c->net_threads;
	o->max_conns = c->max_conns;
	o->max_conns_per_client = c->max_conns_per_client;
	o->max_buffered = c->max_buffered_body;
	o->max_header_bytes = c->max_header_bytes;
	o->header_timeout_ms = c->header_timeout_ms;
	o->idle_timeout_ms = c->idle_timeout_ms;
	o->body_timeout_ms = c->body_timeout_ms;
	o->max_body = c->max_body;
	o->rate_limit = c->rate_limit;
	o->rate_burst = c->rate_burst;
	o->tls_cert = c->tls_cert;
	o->tls_key = c->tls_key;
	o->tls_client_ca = c->tls_client_ca;
	o->tls_ktls = c->tls_ktls;
}

http_server_t *http_server_new(const http_server_opts_t *o, buf_t *err)
{
	http_server_t *s = xcalloc(1, sizeof(*s));
	s->o = *o;
	s->nworkers = o->workers > 0 ? o->workers : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (s->nworkers < 1)
		s->nworkers = 1;
	s->fd_budget = fd_budget(o);
	s->fd_headroom = MIN(MAX(s->fd_budget / 16, 4), s->fd_budget / 2);
	s->o.max_conns = conn_limit(o, s->fd_budget);
	/* by default a quarter of the connections, at least 16 (so a small
	 * limit does not leave a client a handful) */
	s->max_per_client = o->max_conns_per_client ? o->max_conns_per_client
						    : MAX(s->o.max_conns / 4, MIN(s->o.max_conns, 16));
	pthread_mutex_init(&s->cl_mu, NULL);
	if (!s->o.max_buffered)
		s->o.max_buffered = 256 << 20;
	if (!s->o.max_header_bytes)
		s->o.max_header_bytes = 16384;
	if (s->o.nroutes > HM_ROUTES)
		fatalx("%zu routes: the request counters hold %d", s->o.nroutes, HM_ROUTES);
	s->workers = xcalloc((size_t)s->nworkers, sizeof(struct worker));
	s->port = o->port;
	s->ufd = -1;
	s->port_fd = port_claim(o->host, o->port, err);
	if (s->port_fd < 0 && o->port) {
		free(s->workers);
		free(s);
		return NULL;
	}
	if (o->unix_path && *o->unix_path) {
		buf_t uerr = BUF_INIT;
		s->ufd = unix_listen(o->unix_path, &uerr);
		if (s->ufd < 0 && !o->unix_optional) {
			buf_addsv(err, sv_of(&uerr));
			buf_free(&uerr);
			port_release(s);
			free(s->workers);
			free(s);
			return NULL;
		}
		if (s->ufd < 0)
			log_warnx("%.*s: no local reads (set net.unix_socket)", (int)uerr.len, uerr.ptr);
		else
			s->unix_path = xstrdup(o->unix_path);
		buf_free(&uerr);
	}
	if (getrandom(&s->id_prefix, sizeof(s->id_prefix), GRND_NONBLOCK) != sizeof(s->id_prefix))
		s->id_prefix = (uint32_t)(time_now_ns() ^ getpid());
	http_server_set_rate_limit(s, o->rate_limit, o->rate_burst);
	if (o->tls_cert && *o->tls_cert) {
		s->tls = http_tls_new(o->tls_cert, o->tls_key, o->tls_client_ca, o->tls_ktls, err);
		if (!s->tls) {
			unix_close(s);
			port_release(s);
			free(s->workers);
			free(s);
			return NULL;
		}
	}

	for (int i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->workers[i];
		w->srv = s;
		w->idx = i;
		w->lfd = listen_socket(o->host, s->port, true, err);
		if (w->lfd < 0)
			goto fail;
		if (s->port == 0)
			s->port = socket_port(w->lfd);
		w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		w->base = event_base_new();
		if (w->efd < 0 || !w->base)
			fatal("cannot create an event loop");
		pthread_mutex_init(&w->mu, NULL);
		w->lev = event_new(w->base, w->lfd, EV_READ | EV_PERSIST, on_accept, w);
		w->eev = event_new(w->base, w->efd, EV_READ | EV_PERSIST, on_wake, w);
		w->pause_ev = evtimer_new(w->base, on_pause_end, w);
		event_add(w->lev, NULL);
		event_add(w->eev, NULL);
		if (s->ufd >= 0) {
			w->uev = event_new(w->base, s->ufd, EV_READ | EV_PERSIST, on_accept, w);
			event_add(w->uev, NULL);
		}
	}
	s->pool = pool_new(o->io_threads > 0 ? o->io_threads : 4, "io");
	s->npool = pool_new(o->net_threads > 0 ? o->net_threads : 16, "net");
	for (int i = 0; i < s->nworkers; i++) {
		if (pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]))
			fatal("pthread_create");
		char tn[16];
		snprintf(tn, sizeof(tn), "http%d", i);
		pthread_setname_np(s->workers[i].thread, tn);
	}
	metrics_collector_add(hm_collect, s);
	return s;
fail:
	for (int i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->workers[i];
		if (w->lev)
			event_free(w->lev);
		if (w->uev)
			event_free(w->uev);
		if (w->eev)
			event_free(w->eev);
		if (w->pause_ev)
			event_free(w->pause_ev);
		if (w->base)
			event_base_free(w->base);
		if (w->lfd > 0)
			close(w->lfd);
		if (w->efd > 0)
			close(w->efd);
	}
	unix_close(s);
	port_release(s);
	http_tls_free(s->tls);
	free(s->workers);
	free(s);
	return NULL;
}

int http_server_reload_tls(http_server_t *s, buf_t *err)
{
	return s->tls ? http_tls_reload(s->tls, err) : AIS_DONE;
}

bool http_server_tls(const http_server_t *s) { return s->tls != NULL; }

int http_server_port(const http_server_t *s) { return s->port; }
uint64_t http_server_max_conns(const http_server_t *s) { return s->o.max_conns; }
uint64_t http_server_max_conns_per_client(const http_server_t *s) { return s->max_per_client; }

uint64_t http_server_fd_budget(const http_server_t *s, uint64_t *held)
{
	if (held)
		*held = atomic_load(&((http_server_t *)s)->fds);
	return s->fd_budget;
}
http_server_t *http_req_server(const http_req_t *req) { return req->conn->w->srv; }
pool_t *http_server_pool(http_server_t *s) { return s->pool; }

struct event_base *http_req_base(const http_req_t *req) { return req->conn->w->base; }

void http_worker_atexit(http_req_t *req, void (*fn)(void *), void *arg)
{
	struct worker *w = req->conn->w;
	struct worker_atexit *a = xcalloc(1, sizeof(*a));
	a->fn = fn;
	a->arg = arg;
	a->next = w->atexit;
	w->atexit = a;
}

void http_server_free(http_server_t *s)
{
	if (!s)
		return;
	metrics_collector_remove(hm_collect, s);
	for (int i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->workers[i];
		pthread_mutex_lock(&w->mu);
		w->stopping = true;
		pthread_mutex_unlock(&w->mu);
		uint64_t one = 1;
		ssize_t n = write(w->efd, &one, sizeof(one));
		(void)n;
	}
	for (int i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i].thread, NULL);
	/* Let in-flight blocking work finish; its completions are dropped below. */
	pool_destroy(s->pool);
	pool_destroy(s->npool);
	for (int i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->workers[i];
		while (w->conns) {
			http_conn_t *c = w->conns;
			c->offloaded = false;
			conn_close(c);
			conn_free(c);
		}
		while (w->atexit) {
			struct worker_atexit *a = w->atexit;
			w->atexit = a->next;
			a->fn(a->arg);
			free(a);
		}
		event_free(w->lev);
		if (w->uev)
			event_free(w->uev);
		event_free(w->eev);
		event_free(w->pause_ev);
		event_base_free(w->base);
		if (w->lfd >= 0)
			close(w->lfd);
		close(w->efd);
		pthread_mutex_destroy(&w->mu);
		free(w->rl);
	}
	unix_close(s);
	port_release(s);
	http_tls_free(s->tls);
	climit_free(s);
	pthread_mutex_destroy(&s->cl_mu);
	free(s->workers);
	free(s);
}
