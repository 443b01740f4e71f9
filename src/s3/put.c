/*
 * put.c - the body of an S3 upload (PutObject, UploadPart) streamed to a
 * sink: the event loop fills one of two buffers of store.put_buffer bytes
 * while an I/O thread hands the other to the sink and feeds it to MD5, so
 * memory per upload is bounded and a slow disk stops the socket (on_room
 * returns 0). After the whole body: MD5 is finished, checked against
 * Content-MD5 (BadDigest: nothing is committed), and the sink commits on
 * the pool; the client hears 200 only after that. The body is read (and
 * 100 Continue sent) only once the sink has begun, so a refusal comes
 * before the client sends anything.
 */
#include <errno.h>
#include <openssl/evp.h>
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
	EVP_MD_CTX *md5;
	unsigned char want[16];
	bool has_want;
};

static void pipe_cleanup(void *arg)
{
	s3_put_t *p = arg;
	struct pipe *q = p->priv;
	if (p->ops->cleanup)
		p->ops->cleanup(p);
	buf_free(&q->buf[0]);
	buf_free(&q->buf[1]);
	EVP_MD_CTX_free(q->md5);
}

int s3_content_md5(s3_rq_t *r, unsigned char out[16])
{
	sv_t h = http_req_header(r->http, "Content-MD5");
	unsigned char raw[32];
	if (!h.ptr)
		return AIS_DONE;
	h = sv_trim(h);
	if (h.len != 24 || EVP_DecodeBlock(raw, (const unsigned char *)h.ptr, 24) != 18 || h.ptr[22] != '=' ||
	    h.ptr[23] != '=') {
		s3_error(r, "InvalidDigest", NULL);
		return AIS_ERR;
	}
	memcpy(out, raw, 16);
	return AIS_OK;
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
	EVP_DigestUpdate(q->md5, b->ptr, b->len);
	if (p->ops->write(p, b->ptr, b->len) != AIS_OK)
		q->err = errno ? errno : EIO;
	p->size += b->len;
	b->len = 0;
}

static void commit_work(http_req_t *req)
{
	s3_put_t *p = ((s3_rq_t *)req->state)->op;
	struct pipe *q = p->priv;
	unsigned int n = 0;
	EVP_DigestFinal_ex(q->md5, p->md5, &n);
	hex_encode(p->md5, 16, p->md5hex);
	if (q->has_want && memcmp(q->want, p->md5, 16)) {
		p->code = "BadDigest";
		q->err = EBADMSG;
		return;
	}
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

/* Decoded body bytes (the SigV4 layer's streaming decoder, when wired,
 * sits in front of this). */
static int on_body(http_req_t *req, const char *data, size_t n)
{
	s3_put_t *p = ((s3_rq_t *)req->state)->op;
	struct pipe *q = p->priv;
	if (q->failed)
		return AIS_ERR;
	buf_add(&q->buf[q->cur], data, n);
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
	if (req->content_length >= 0 && req->body_read < (uint64_t)req->content_length) {
		s3_error(p->r, "IncompleteBody", NULL);
		return;
	}
	q->ended = true;
	step(req);
}

void s3_put_start(s3_rq_t *r, s3_put_t *p)
{
	http_req_t *req = r->http;
	struct pipe *q = arena_zalloc(req->arena, sizeof(*q));
	int rc;

	p->r = r;
	p->priv = q;
	r->op = p;
	req->state = r;
	q->md5 = EVP_MD_CTX_new();
	EVP_DigestInit_ex(q->md5, EVP_md5(), NULL);
	arena_cleanup_add(req->arena, pipe_cleanup, p);
	rc = s3_content_md5(r, q->want);
	if (rc == AIS_ERR)
		return;
	q->has_want = rc == AIS_OK;
	q->bufsz = r->node.conf->put_buffer;
	if (req->content_length >= 0 && (uint64_t)req->content_length < q->bufsz)
		q->bufsz = req->content_length > 0 ? (size_t)req->content_length : 1;
	req->on_body = on_body;
	req->on_room = on_room;
	req->on_body_end = on_end;
	q->busy = true;
	http_offload(req, begin_work, io_done);
	if (!req->has_body) {
		/* no body at all: the end comes after the sink has begun */
		q->ended = true;
	}
}
