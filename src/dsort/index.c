/*
 * index.c - the indexes a target's dsort runs serve to their peers
 * (dsort.h, rule 2): GET /v1/dsort/ID (the index, once built),
 * ?stage=built (the barrier of rule 5), ?stage=committed (rule 6) and ?shard=I&off=&len= (bytes of the
 * tar this target made of a compressed input shard, read on the I/O pool).
 * A finished run's index is served for INDEX_KEEP_NS more, for peers slower
 * than it.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/dsort.h"
#include "aisd/http.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "dsort_int.h"
#include "aisd/banned.h"

#define INDEX_KEEP_NS (600 * 1000000000LL) /* a finished run's index is served this long */
#define SPAN_MAX DSORT_READ_MAX

struct ix {
	char id[JREG_ID_MAX + 1];
	enum ix_state state;
	enum ix_stage stage; /* what its run reached past the index (stage=built|committed) */
	int *tfd;   /* per input shard: its tar when it came compressed and is this target's (else -1) */
	size_t ntfd;
	buf_t body;
	char err[300];
	int64_t end_ns; /* 0: its run goes on */
	struct ix *next;
};

static pthread_mutex_t ixmu = PTHREAD_MUTEX_INITIALIZER;
static struct ix *ixhead;

static void ix_free(struct ix *e)
{
	buf_free(&e->body);
	free(e->tfd);
	free(e);
}

ix_t *ix_add(const char *id)
{
	int64_t now = time_now_ns();
	pthread_mutex_lock(&ixmu);
	for (struct ix **p = &ixhead; *p;) { /* the old ones, and an ended run of this id, go */
		struct ix *e = *p;
		if (e->end_ns && (!strcmp(e->id, id) || now - e->end_ns > INDEX_KEEP_NS)) {
			*p = e->next;
			ix_free(e);
		} else {
			p = &e->next;
		}
	}
	struct ix *e = xcalloc(1, sizeof(*e));
	snprintf(e->id, sizeof(e->id), "%s", id);
	e->next = ixhead;
	ixhead = e;
	pthread_mutex_unlock(&ixmu);
	return e;
}

void ix_set(struct ix *e, enum ix_state st, buf_t *body, const char *err)
{
	pthread_mutex_lock(&ixmu);
	e->state = st;
	if (body) {
		e->body = *body;
		*body = (buf_t)BUF_INIT;
	}
	if (err)
		snprintf(e->err, sizeof(e->err), "%s", err);
	pthread_mutex_unlock(&ixmu);
}

json_t *ix_parse(ix_t *e)
{
	pthread_mutex_lock(&ixmu);
	json_t *d = e->state == IX_READY ? json_loadb(e->body.ptr ? e->body.ptr : "", e->body.len, 0, NULL) : NULL;
	pthread_mutex_unlock(&ixmu);
	return d;
}

void ix_files(ix_t *e, size_t n)
{
	int *f = xcalloc(n + 1, sizeof(*f));
	for (size_t i = 0; i < n; i++)
		f[i] = -1;
	pthread_mutex_lock(&ixmu);
	free(e->tfd);
	e->tfd = f;
	e->ntfd = n;
	pthread_mutex_unlock(&ixmu);
}

void ix_set_file(ix_t *e, size_t i, int fd)
{
	pthread_mutex_lock(&ixmu);
	if (i < e->ntfd)
		e->tfd[i] = fd;
	else if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&ixmu);
}

int ix_file(ix_t *e, size_t i)
{
	pthread_mutex_lock(&ixmu);
	int fd = i < e->ntfd ? e->tfd[i] : -1;
	pthread_mutex_unlock(&ixmu);
	return fd;
}

void ix_free_ended(void)
{
	pthread_mutex_lock(&ixmu); /* (one still going keeps its own) */
	for (struct ix **p = &ixhead; *p;) {
		struct ix *e = *p;
		if (e->end_ns) {
			*p = e->next;
			ix_free(e);
		} else {
			p = &e->next;
		}
	}
	pthread_mutex_unlock(&ixmu);
}

void ix_reach(struct ix *e, enum ix_stage st)
{
	pthread_mutex_lock(&ixmu);
	e->stage = st;
	pthread_mutex_unlock(&ixmu);
}

/* (no peer reads the files after the barrier) */
void ix_end(struct ix *e)
{
	pthread_mutex_lock(&ixmu);
	e->end_ns = time_now_ns();
	for (size_t i = 0; i < e->ntfd; i++)
		if (e->tfd[i] >= 0)
			close(e->tfd[i]);
	free(e->tfd);
	e->tfd = NULL;
	e->ntfd = 0;
	pthread_mutex_unlock(&ixmu);
}

/* GET /v1/dsort/ID?shard=I&off=A&len=N: bytes of the tar this target made
 * of compressed input shard I (read on the I/O pool). */
struct rd {
	int fd;
	uint64_t off, len;
	buf_t out;
	int err;
};

static void rd_cleanup(void *arg)
{
	struct rd *r = arg;
	if (r->fd >= 0)
		close(r->fd);
	buf_free(&r->out);
}

static void rd_work(http_req_t *req)
{
	struct rd *r = req->state;
	buf_grow(&r->out, (size_t)r->len);
	ssize_t n = pread(r->fd, r->out.ptr, (size_t)r->len, (off_t)r->off);
	if (n == (ssize_t)r->len)
		r->out.len = (size_t)n;
	else
		r->err = n < 0 ? errno : EIO;
}

static void rd_done(http_req_t *req)
{
	struct rd *r = req->state;
	if (r->err) {
		http_resp_error(req, 500, "dsort: reading a member: %s", strerror(r->err));
		return;
	}
	http_resp_header(req, "Content-Type", "application/octet-stream");
	http_resp_send_buf(req, &r->out);
}

static void serve_range(http_req_t *req, struct ix *e, sv_t shard)
{
	sv_t so = {NULL, 0}, sl = {NULL, 0};
	uint64_t i, off, len;
	http_query_get(req, "off", &so);
	http_query_get(req, "len", &sl);
	if (num_parse_u64(shard.ptr, shard.len, 0, UINT32_MAX, &i) != AIS_OK || !so.ptr || !sl.ptr ||
	    num_parse_u64(so.ptr, so.len, 0, INT64_MAX, &off) != AIS_OK ||
	    num_parse_u64(sl.ptr, sl.len, 1, SPAN_MAX, &len) != AIS_OK) {
		pthread_mutex_unlock(&ixmu);
		http_resp_error(req, 400, "GET /v1/dsort/ID?shard=I&off=A&len=N (N at most %u)", SPAN_MAX);
		return;
	}
	int fd = i < e->ntfd && e->tfd[i] >= 0 ? dup(e->tfd[i]) : -1;
	pthread_mutex_unlock(&ixmu);
	if (fd < 0) {
		http_resp_error(req, 404, "dsort: input shard %llu is not a decompressed shard here", (unsigned long long)i);
		return;
	}
	struct rd *r = arena_zalloc(req->arena, sizeof(*r));
	*r = (struct rd){.fd = fd, .off = off, .len = len};
	req->state = r;
	arena_cleanup_add(req->arena, rd_cleanup, r);
	http_offload(req, rd_work, rd_done);
}

int dsort_h_index(struct http_req *req)
{
	char id[JREG_ID_MAX + 1];
	sv_t stage = {NULL, 0}, shard = {NULL, 0};
	int want = IX_STAGE_NONE;
	if (http_query_get(req, "stage", &stage))
		want = sv_eqstr(stage, "built") ? IX_STAGE_BUILT : sv_eqstr(stage, "committed") ? IX_STAGE_COMMITTED : 99;
	bool want_data = http_query_get(req, "shard", &shard);
	if (!jreg_id_valid(req->subpath.ptr, req->subpath.len) || want == 99) {
		http_resp_error(req, 400, "GET /v1/dsort/ID[?stage=built|committed]: a job id");
		return AIS_OK;
	}
	snprintf(id, sizeof(id), "%.*s", (int)req->subpath.len, req->subpath.ptr);
	pthread_mutex_lock(&ixmu);
	struct ix *e = ixhead;
	while (e && strcmp(e->id, id))
		e = e->next;
	if (!e) {
		pthread_mutex_unlock(&ixmu);
		http_resp_error(req, 404, "dsort: no run %s on this target", id);
	} else if (e->state == IX_FAILED) {
		char err[sizeof(e->err)];
		snprintf(err, sizeof(err), "%s", e->err);
		pthread_mutex_unlock(&ixmu);
		http_resp_error(req, 500, "%s", err);
	} else if (want_data && e->state == IX_BUILDING) { /* (a resumed run makes its files again) */
		pthread_mutex_unlock(&ixmu);
		http_resp_header(req, "Retry-After", "1");
		http_resp_error(req, 503, "dsort %s: the index is being built", id);
	} else if (want_data) {
		serve_range(req, e, shard); /* (unlocks) */
	} else if (e->state == IX_BUILDING || (int)e->stage < want) {
		pthread_mutex_unlock(&ixmu);
		http_resp_header(req, "Retry-After", "1");
		http_resp_error(req, 503, "dsort %s: the %s", id,
				e->state == IX_BUILDING	   ? "index is being built"
				: want == IX_STAGE_BUILT ? "output is being built"
							   : "output is being committed");
	} else if (want) {
		pthread_mutex_unlock(&ixmu);
		http_resp_header(req, "Content-Type", "application/json");
		http_resp_send(req, "{}", 2);
	} else {
		buf_t out = BUF_INIT;
		buf_add(&out, e->body.ptr, e->body.len);
		pthread_mutex_unlock(&ixmu);
		http_resp_header(req, "Content-Type", "application/json");
		http_resp_send_buf(req, &out);
	}
	return AIS_OK;
}

