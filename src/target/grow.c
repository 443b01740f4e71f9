/*
 * grow.c - a file filled by one thread and streamed as it grows (grow.h).
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "grow.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

struct grow_reader {
	grow_t *g;
	http_req_t *req;
	int efd;
	struct event *ev;
	uint64_t off, end;
	bool waiting; /* under g->mu */
	struct grow_reader *next;
	void (*release)(void *);
	void *arg;
	char *what;
};

void grow_init(grow_t *g)
{
	memset(g, 0, sizeof(*g));
	g->fd = -1;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
}

void grow_destroy(grow_t *g)
{
	if (g->fd >= 0)
		close(g->fd);
	buf_free(&g->msg);
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cv);
}

/* Caller holds g->mu. */
static void wake_locked(grow_t *g, bool all)
{
	uint64_t one = 1;
	for (struct grow_reader *x = g->readers; x; x = x->next)
		if (x->waiting || all) {
			x->waiting = false;
			if (write(x->efd, &one, sizeof(one)) < 0)
				log_debug("grow: eventfd: %s", strerror(errno));
		}
}

void grow_moved(grow_t *g, uint64_t have)
{
	uint64_t old = atomic_load(&g->have);
	while (have > old && !atomic_compare_exchange_weak(&g->have, &old, have))
		;
	if (have > old) {
		pthread_mutex_lock(&g->mu);
		wake_locked(g, false);
		pthread_mutex_unlock(&g->mu);
	}
}

void grow_add(grow_t *g, uint64_t n)
{
	atomic_fetch_add(&g->have, n);
	if (n) {
		pthread_mutex_lock(&g->mu);
		wake_locked(g, false);
		pthread_mutex_unlock(&g->mu);
	}
}

void grow_end(grow_t *g, int err, const char *msg)
{
	pthread_mutex_lock(&g->mu);
	g->done = true;
	g->err = err;
	if (err && msg)
		buf_addstr(&g->msg, msg);
	wake_locked(g, true);
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

int grow_wait(grow_t *g, buf_t *msg)
{
	pthread_mutex_lock(&g->mu);
	while (!g->done)
		pthread_cond_wait(&g->cv, &g->mu);
	int err = g->err;
	if (err)
		buf_addsv(msg, sv_of(&g->msg));
	pthread_mutex_unlock(&g->mu);
	errno = err;
	return err ? AIS_ERR : AIS_OK;
}

static void reader_cleanup(void *arg)
{
	struct grow_reader *x = arg;
	grow_t *g = x->g;
	pthread_mutex_lock(&g->mu);
	for (struct grow_reader **pp = &g->readers; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	pthread_mutex_unlock(&g->mu);
	if (x->ev)
		event_free(x->ev);
	if (x->efd >= 0)
		close(x->efd);
	free(x->what);
	x->release(x->arg); /* rule 3: the last use of g */
	free(x);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct grow_reader *x = arg;
	uint64_t v;
	(void)what;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_debug("grow: eventfd: %s", strerror(errno));
	http_resp_stream_wake(x->req);
}

static int produce(http_req_t *req, buf_t *out)
{
	struct grow_reader *x = req->state;
	grow_t *g = x->g;
	(void)out;
	for (;;) {
		if (x->off >= x->end)
			return AIS_DONE;
		uint64_t have = atomic_load(&g->have), avail = MIN(have, x->end); /* (one load: MIN reads twice) */
		if (avail > x->off) { /* rule 1 */
			int d = dup(g->fd);
			if (d < 0)
				return AIS_ERR;
			http_resp_stream_file(req, d, (off_t)x->off, avail - x->off);
			x->off = avail;
			return AIS_OK;
		}
		pthread_mutex_lock(&g->mu);
		bool again = atomic_load(&g->have) > x->off, failed = !again && g->done;
		if (!again && !failed)
			x->waiting = true;
		pthread_mutex_unlock(&g->mu);
		if (failed) { /* rule 2 */
			log_warnx("GET %s: cut short at byte %llu: %s", x->what, (unsigned long long)x->off,
				  g->msg.ptr ? g->msg.ptr : "the read failed");
			return AIS_ERR;
		}
		if (!again)
			return AIS_AGAIN;
	}
}

void grow_send(http_req_t *req, grow_t *g, uint64_t start, uint64_t len, void (*release)(void *), void *arg,
	       const char *what)
{
	struct grow_reader *x = xcalloc(1, sizeof(*x));
	x->g = g;
	x->req = req;
	x->off = start;
	x->end = start + len;
	x->release = release;
	x->arg = arg;
	x->what = xstrdup(what);
	x->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	arena_cleanup_add(req->arena, reader_cleanup, x);
	if (x->efd < 0) {
		http_resp_error(req, 500, "eventfd: %s", strerror(errno));
		return;
	}
	x->ev = event_new(http_req_base(req), x->efd, EV_READ | EV_PERSIST, on_wake, x);
	event_add(x->ev, NULL);
	pthread_mutex_lock(&g->mu);
	x->next = g->readers;
	g->readers = x;
	pthread_mutex_unlock(&g->mu);
	req->state = x;
	http_resp_send_stream_len(req, produce, len);
}
