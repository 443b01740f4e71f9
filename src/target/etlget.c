/*
 * etlget.c - GET /v1/objects/B/O?etl=NAME[&etl_args=A] (and S3 GET with
 * ?etl=NAME or the x-ais-etl header): the object read here, handed whole
 * to a worker of the transformer (etl.h) and its answer sent back.
 *
 * With ?archpath=MEMBER (a plain tar shard) the member alone is handed to
 * the worker, found through the shard's tar index as archpath reads do.
 *
 * The object (member) must be at most etl.max_input bytes (413). The
 * object is opened on the loop and, when a live worker is free and its
 * pages are cached, the exchange runs there too, on events
 * (etl_transform_start); otherwise (a member's tar index, a transformer
 * to pull from the primary, a worker to start or wait for, a cold object)
 * it runs on the network pool, since a transformer may take up to its
 * timeout. Errors come from etl_transform: 404 unknown transformer, 5xx
 * naming it and the reason. A big answer is not read there: once its
 * head says 200 and its length, the response streams its body from the
 * worker (src/etl/stream.c: spliced on a plain connection); a worker that
 * fails after that cuts the client's connection short of the length.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/etl.h"
#include "aisd/names.h"
#include "aisd/store.h"
#include "aisd/ol.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "target_int.h"
#include "aisd/banned.h"

struct tetl {
	target_t *t;
	sv_t bck, obj, name, args;
	sv_t member; /* archpath: the member transformed; len 0: the object */
	bool s3;
	int status; /* 0: out holds the answer */
	int err;    /* the open failed: errno */
	buf_t out, msg;
	etl_stream_t *st; /* status 0: the answer's body still with its worker, else out holds it */
	int fd;           /* the object, open until its bytes went to the worker; -1 none */
	store_meta_t m;   /* its metadata, once open */
	etl_op_t *op;     /* the exchange running on the loop */
};

/* An S3 error document (S3 clients read the code): code, or by status:
 * NoSuchTransformer for 404, else the status's own. */
static void s3_err(http_req_t *req, int status, const char *code, const char *msg)
{
	buf_t b = BUF_INIT;
	if (!code)
		code = status == 404   ? "NoSuchTransformer"
		       : status == 413 ? "EntityTooLarge"
		       : status == 504 ? "TransformTimeout"
				       : "TransformFailed";
	buf_addf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>", code);
	for (const char *p = msg; *p; p++) {
		if (*p == '<')
			buf_addstr(&b, "&lt;");
		else if (*p == '>')
			buf_addstr(&b, "&gt;");
		else if (*p == '&')
			buf_addstr(&b, "&amp;");
		else
			buf_addch(&b, *p);
	}
	buf_addstr(&b, "</Message></Error>");
	http_resp_status(req, status);
	http_resp_header(req, "Content-Type", "application/xml");
	http_resp_send_buf(req, &b);
}

static void tetl_cleanup(void *arg)
{
	struct tetl *x = arg;
	etl_op_cancel(x->op);
	etl_stream_close(x->st);
	if (x->fd >= 0)
		close(x->fd);
	buf_free(&x->out);
	buf_free(&x->msg);
}

static int tetl_fill(http_req_t *req, buf_t *out)
{
	struct tetl *x = req->state;
	return etl_stream_fill(x->st, req, out);
}

/* An object stored encrypted is refused (403): true. */
static bool sse_refused(struct tetl *x)
{
	if (!tgt_sse_encrypted(x->m.custom))
		return false;
	close(x->fd);
	x->fd = -1;
	x->status = 403;
	buf_addstr(&x->msg, "the object is stored with S3 server-side encryption: a transformer gets no key");
	return true;
}

static void tetl_work(http_req_t *req)
{
	struct tetl *x = req->state;
	if (!etl_exists(x->name.ptr, x->name.len) && etl_pull(x->t->base.cl, x->name.ptr, x->name.len) != AIS_OK) {
		x->status = 404; /* not here, nor at the primary */
		buf_addf(&x->msg, "no transformer \"%.*s\" (aisctl etl ls)", (int)MIN(x->name.len, 64), x->name.ptr);
		return;
	}
	if (x->fd < 0) { /* else opened on the loop */
		if (ol_open_sync(x->t, x->bck, x->obj, true, &x->fd, &x->m, &x->msg) != AIS_OK) {
			x->fd = -1;
			x->err = errno ? errno : EIO;
			return;
		}
		if (sse_refused(x))
			return;
	}
	uint64_t off = 0, size = x->m.size;
	if (x->member.len) {
		store_tar_index_t *idx;
		if (store_tar_index(x->t->store, x->bck.ptr, x->bck.len, x->obj.ptr, x->obj.len, &x->m, x->fd, &idx,
				    &x->msg) != AIS_OK) {
			x->status = errno == EINVAL ? 400 : 500;
			buf_t b = BUF_INIT;
			buf_addf(&b, "%.*s/%.*s is not a valid tar archive: %s", (int)x->bck.len, x->bck.ptr,
				 (int)MIN(x->obj.len, 512), x->obj.ptr, x->msg.ptr ? x->msg.ptr : "bad header");
			buf_reset(&x->msg);
			buf_addsv(&x->msg, sv_of(&b));
			buf_free(&b);
			goto out_close;
		}
		int found = store_tar_index_find(idx, x->member.ptr, x->member.len, &off, &size);
		store_tar_index_free(idx);
		if (found != AIS_OK) {
			x->status = 404;
			buf_addf(&x->msg, "archpath \"%.*s\" not found in %.*s/%.*s", (int)MIN(x->member.len, 512),
				 x->member.ptr, (int)x->bck.len, x->bck.ptr, (int)MIN(x->obj.len, 512), x->obj.ptr);
			goto out_close;
		}
	}
	if (etl_transform_open(x->name.ptr, x->name.len, x->bck, x->obj, x->member, x->fd, off, size, x->m.version,
			       x->args, &x->out, &x->st, &x->status, &x->msg) == AIS_OK)
		x->status = 0;
out_close:
	close(x->fd); /* its bytes are all with the worker */
	x->fd = -1;
}

static void tetl_done(http_req_t *req)
{
	struct tetl *x = req->state;
	if (x->err) {
		if (x->s3)
			s3_err(req, x->err == ENOENT ? 404 : 500, x->err == ENOENT ? "NoSuchKey" : "InternalError",
			       x->msg.ptr ? x->msg.ptr : "cannot read the object");
		else
			ol_open_failed(req, x->bck, x->obj, x->err, x->msg.ptr);
		return;
	}
	if (x->status) {
		if (x->s3)
			s3_err(req, x->status, x->status == 403 ? "AccessDenied" : NULL,
			       x->msg.ptr ? x->msg.ptr : "transform failed");
		else
			http_resp_error(req, x->status, "%s", x->msg.ptr ? x->msg.ptr : "transform failed");
		return;
	}
	http_resp_header(req, "Content-Type", "application/octet-stream");
	http_resp_header(req, "Ais-Etl", "%.*s", (int)x->name.len, x->name.ptr);
	if (x->st)
		http_resp_send_stream_len(req, tetl_fill, etl_stream_len(x->st));
	else
		http_resp_send_buf(req, &x->out);
}

static void tetl_answered(http_req_t *req, int rc)
{
	struct tetl *x = req->state;
	close(x->fd); /* its bytes are all with the worker */
	x->fd = -1;
	if (rc == AIS_OK)
		x->status = 0;
	tetl_done(req);
}

/* The object opened on the loop: the exchange starts there when it can
 * without blocking, else on the network pool. */
static void tetl_opened(http_req_t *req, void *arg, int fd, store_meta_t *m, int err, const char *msg)
{
	struct tetl *x = arg;
	if (err) {
		x->err = err;
		buf_addstr(&x->msg, msg ? msg : "cannot read the object");
		tetl_done(req);
		return;
	}
	x->fd = fd;
	x->m = *m;
	if (sse_refused(x)) {
		tetl_done(req);
		return;
	}
	if (etl_transform_start(req, x->name.ptr, x->name.len, x->bck, x->obj, fd, m->size, m->version, x->args,
				&x->out, &x->st, &x->status, &x->msg, tetl_answered, &x->op) == AIS_AGAIN)
		http_offload_net(req, tetl_work, tetl_done);
}

static int get_etl(http_req_t *req, target_t *t, sv_t bck, sv_t obj, sv_t member, sv_t name, bool s3)
{
	struct tetl *x = arena_zalloc(req->arena, sizeof(*x));
	x->fd = -1;
	x->member = member;
	arena_cleanup_add(req->arena, tetl_cleanup, x);
	x->t = t;
	x->bck = bck;
	x->obj = obj;
	x->name = name;
	x->s3 = s3;
	if (!http_query_get(req, "etl_args", &x->args))
		x->args = (sv_t){"", 0};
	if (!etl_exists(name.ptr, name.len) && !t->base.cl) {
		buf_addf(&x->msg, "no transformer \"%.*s\" (aisctl etl ls)", (int)MIN(name.len, 64), name.ptr);
		if (s3)
			s3_err(req, 404, NULL, x->msg.ptr);
		else
			http_resp_error(req, 404, "%s", x->msg.ptr);
		return AIS_OK;
	}
	req->state = x;
	if (member.len || !etl_exists(name.ptr, name.len)) { /* a tar index, or the transformer pulled first */
		http_offload_net(req, tetl_work, tetl_done);
		return AIS_OK;
	}
	ol_open(req, t, bck, obj, http_req_has_header(req, TGT_INTRA) ? 0 : OL_VERIFY, tetl_opened, x);
	return AIS_OK;
}

int tgt_get_etl(http_req_t *req, target_t *t, sv_t bck, sv_t obj, sv_t name, bool s3)
{
	return get_etl(req, t, bck, obj, (sv_t){NULL, 0}, name, s3);
}

int tgt_get_etl_member(http_req_t *req, target_t *t, sv_t bck, sv_t obj, sv_t member, sv_t name)
{
	if (!name_archpath_valid(member.ptr, member.len)) {
		http_resp_error(req, 400, "invalid archpath: 1 to %d bytes of UTF-8 without NUL bytes", NAME_OBJECT_MAX);
		return AIS_OK;
	}
	return get_etl(req, t, bck, obj, member, name, false);
}
