/*
 * put.c - the body of an S3 upload (PutObject, UploadPart) streamed to a
 * sink: the event loop fills one of two buffers of store.put_buffer bytes
 * while an I/O thread hands the other to the sink, so memory per upload is
 * bounded and a slow disk stops the socket (on_room returns 0). Every HTTP
 * body byte first goes through the SigV4 layer's decoder (s3auth.h:
 * aws-chunked framing off, chunk signatures, payload hash, Content-MD5,
 * x-amz-checksum-*, and the MD5 that becomes the ETag); only when its
 * finish succeeds at the end of the body does the sink commit, on the
 * pool, and the client hears 200 after that. The body is read (and 100
 * Continue sent) only once the sink has begun, so a refusal comes before
 * the client sends anything.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

struct pipe {
	buf_t buf[2];
	int cur, wbuf;
	size_t bufsz;
	bool busy, ended, opened, committing, failed, begun;
	int err;
	s3_body_t *dec;
};

static void pipe_cleanup(void *arg)
{
	s3_put_t *p = arg;
	struct pipe *q = p->priv;
	if (p->ops->cleanup)
		p->ops->cleanup(p);
	buf_free(&q->buf[0]);
	buf_free(&q->buf[1]);
}

static void step(http_req_t *req);

static void fail(s3_put_t *p, int err)
{
	struct pipe *q = p->priv;
	q->failed = true;
	if (p->code)
		s3_error(p->r, p->code, NULL);
	else
		s3_error_errno(p->r, err, true);
}

static void begin_work(http_req_t *req)
{
	s3_put_t *p = ((s3_rq_t *)req->state)->op;
	struct pipe *q = p->priv;
	if (p->ops->begin(p) != AIS_OK)
		q->err = errno ? errno : EIO;
	else
		q->begun = true;
}

static void write_work(http_req_t *req)
{
	s3_put_t *p = ((s3_rq_t *)req->state)->op;
	struct pipe *q = p->priv;
	buf_t *b = &q->buf[q->wbuf];
	if (p->ops->write(p, b->ptr, b->len) != AIS_OK)
		q->err = errno ? errno : EIO;
	p->size += b->len;
	b->len = 0;
}

static void commit_work(http_req_t *req)
{
	s3_put_t *p = ((s3_rq_t *)req->state)->op;
	struct pipe *q = p->priv;
	if (p->ops->commit(p) != AIS_OK)
		q->err = errno ? errno : EIO;
}

static void io_done(http_req_t *req)
{
	s3_put_t *p = ((s3_rq_t *)req->state)->op;
	struct pipe *q = p->priv;
	q->busy = false;
	if (q->err) {
		fail(p, q->err);
		return;
	}
	q->opened = true;
	if (q->committing) {
		p->ops->reply(p);
		return;
	}
	step(req);
	http_req_resume(req);
}

static void step(http_req_t *req)
{
	s3_put_t *p = ((s3_rq_t *)req->state)->op;
	struct pipe *q = p->priv;
	if (q->busy || q->failed || !q->begun)
		return;
	buf_t *b = &q->buf[q->cur];
	if (b->len == q->bufsz || (q->ended && b->len > 0)) {
		q->wbuf = q->cur;
		q->cur ^= 1;
		q->busy = true;
		http_offload(req, write_work, io_done);
	} else if (q->ended) {
		q->busy = true;
		q->committing = true;
		http_offload(req, commit_work, io_done);
	}
}

static int emit(void *arg, const char *data, size_t n)
{
	struct pipe *q = arg;
	buf_add(&q->buf[q->cur], data, n);
	return AIS_OK;
}

/* HTTP body bytes: decoded into the current buffer (never more bytes than
 * came in, so the buffer stays within what on_room allowed). */
static int on_body(http_req_t *req, const char *data, size_t n)
{
	s3_put_t *p = ((s3_rq_t *)req->state)->op;
	struct pipe *q = p->priv;
	s3_autherr_t e;
	if (q->failed)
		return AIS_ERR;
	if (s3_body_feed(q->dec, data, n, emit, q, &e) != AIS_OK) {
		q->failed = true;
		s3_error_auth(p->r, &e);
		return AIS_ERR;
	}
	step(req);
	return AIS_OK;
}

static size_t on_room(http_req_t *req)
{
	s3_put_t *p = ((s3_rq_t *)req->state)->op;
	struct pipe *q = p->priv;
	buf_t *b = &q->buf[q->cur];
	if (!q->opened)
		return 0;
	return b->len < q->bufsz ? q->bufsz - b->len : 0;
}

static void on_end(http_req_t *req)
{
	s3_put_t *p = ((s3_rq_t *)req->state)->op;
	struct pipe *q = p->priv;
	s3_autherr_t e;
	if (q->failed || q->ended)
		return;
	if (s3_body_finish(q->dec, &e) != AIS_OK) {
		q->failed = true;
		s3_error_auth(p->r, &e);
		return;
	}
	s3_body_md5(q->dec, p->md5);
	hex_encode(p->md5, 16, p->md5hex);
	q->ended = true;
	step(req);
}

void s3_put_start(s3_rq_t *r, s3_put_t *p)
{
	http_req_t *req = r->http;
	struct pipe *q = arena_zalloc(req->arena, sizeof(*q));

	p->r = r;
	p->priv = q;
	r->op = p;
	req->state = r;
	arena_cleanup_add(req->arena, pipe_cleanup, p);
	if (!(q->dec = s3_body_for(r)))
		return;
	q->bufsz = r->node.conf->put_buffer;
	if (req->content_length >= 0 && (uint64_t)req->content_length < q->bufsz)
		q->bufsz = req->content_length > 0 ? (size_t)req->content_length : 1;
	req->on_body = on_body;
	req->on_room = on_room;
	req->on_body_end = on_end;
	q->busy = true;
	http_offload(req, begin_work, io_done);
	if (!req->has_body)
		on_end(req); /* no body at all: checked now, committed after begin */
}
