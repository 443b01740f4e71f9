/*
 * backend.c - the backend operations of backend.h, one function per
 * operation for every kind (s3.c and ais.c build the requests), and a
 * bucket's backend from the BMD.
 *
 * Guarantees:
 *  1. Requests that change nothing (HEAD, listing) and DELETE are retried
 *     with backoff (100 ms, then 400 ms) when the remote could not be
 *     reached or answered 5xx; GET and PUT are not retried here (the cold
 *     fetch retries a GET that delivered no byte; a PUT's client retries).
 *  2. A GET pins the version it reads with If-Match when it is given one:
 *     an object that changed on the remote is ESTALE, never a mix.
 *  3. Every error names the remote's alias (errors in backend.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bk_int.h"
#include "aisd/bmd.h"
#include "aisd/cluster.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

const char *bk_kind_name(enum bk_kind k) { return k == BK_S3 ? "s3" : k == BK_AIS ? "ais" : "none"; }

enum bk_kind bk_kind_parse(const char *s, size_t len)
{
	sv_t v = {s, len};
	return sv_eqstr(v, "s3") ? BK_S3 : sv_eqstr(v, "ais") ? BK_AIS : BK_NONE;
}

/* Prepares method on obj (len 0: the bucket) for b's kind. */
static void prepare(const bk_bucket_t *b, const char *method, sv_t obj, const char *const *extra, bool upload,
		    bk_req_t *q, bk_xfer_t *x)
{
	if (b->r.kind == BK_S3)
		bk_s3_prepare(b, method, obj, "", extra, upload, q);
	else
		bk_ais_prepare(b, obj, "", extra, q);
	memset(x, 0, sizeof(*x));
	x->r = &b->r;
	x->method = method;
	x->url = q->url.ptr;
	x->headers = q->hp;
	x->body_fd = -1;
	x->follow = b->r.kind == BK_AIS;
}

static bool retryable(int rc, const bk_xfer_t *x, int attempt)
{
	if (attempt >= 2)
		return false;
	if (rc == AIS_OK ? x->status < 500 : errno != EHOSTUNREACH && errno != EREMOTEIO)
		return false;
	usleep(attempt ? 400000 : 100000);
	return true;
}

/* One bodiless request, retried (rule 1); AIS_OK with the answer in *x. */
static int simple(const bk_bucket_t *b, const char *method, sv_t obj, bk_xfer_t *x, buf_t *msg)
{
	for (int attempt = 0;; attempt++) {
		bk_req_t q = {0};
		buf_t m = BUF_INIT;
		prepare(b, method, obj, NULL, false, &q, x);
		int rc = bk_xfer(x, &m), e = errno;
		bk_req_free(&q);
		if (retryable(rc, x, attempt)) {
			buf_free(&m);
			bk_xfer_free(x);
			continue;
		}
		buf_addsv(msg, sv_of(&m));
		buf_free(&m);
		errno = e;
		return rc;
	}
}

int bk_head(const bk_bucket_t *b, sv_t obj, bk_obj_t *out, buf_t *msg)
{
	bk_xfer_t x;
	int rc = simple(b, "HEAD", obj, &x, msg);
	if (rc == AIS_OK && x.status != 200)
		rc = bk_status_errno(&x, "HEAD", msg);
	if (rc == AIS_OK)
		bk_obj_from(&x, out);
	bk_xfer_free(&x);
	return rc;
}

int bk_head_bucket(const bk_bucket_t *b, buf_t *msg)
{
	bk_xfer_t x;
	int rc = simple(b, "HEAD", (sv_t){"", 0}, &x, msg);
	if (rc == AIS_OK && x.status != 200)
		rc = bk_status_errno(&x, "bucket", msg);
	bk_xfer_free(&x);
	return rc;
}

int bk_delete(const bk_bucket_t *b, sv_t obj, buf_t *msg)
{
	bk_xfer_t x;
	int rc = simple(b, "DELETE", obj, &x, msg);
	if (rc == AIS_OK && x.status != 200 && x.status != 204)
		rc = bk_status_errno(&x, "DELETE", msg);
	bk_xfer_free(&x);
	return rc;
}

int bk_get(const bk_bucket_t *b, sv_t obj, uint64_t off, uint64_t len, const char *if_match, bk_sink_fn sink,
	   void *arg, bk_obj_t *out, buf_t *msg)
{
	char range[80], im[BK_ETAG_MAX + 16];
	const char *extra[3];
	size_t ne = 0;
	bk_req_t q = {0};
	bk_xfer_t x;

	if (off || len) {
		if (len)
			snprintf(range, sizeof(range), "range: bytes=%llu-%llu", (unsigned long long)off,
				 (unsigned long long)(off + len - 1));
		else
			snprintf(range, sizeof(range), "range: bytes=%llu-", (unsigned long long)off);
		extra[ne++] = range;
	}
	if (if_match && *if_match) {
		snprintf(im, sizeof(im), "if-match: \"%s\"", if_match);
		extra[ne++] = im;
	}
	extra[ne] = NULL;
	prepare(b, "GET", obj, extra, false, &q, &x);
	x.sink = sink;
	x.arg = arg;
	int rc = bk_xfer(&x, msg);
	if (rc == AIS_OK && x.status != 200 && x.status != 206)
		rc = bk_status_errno(&x, "GET", msg);
	if (rc == AIS_OK)
		bk_obj_from(&x, out);
	bk_xfer_free(&x);
	bk_req_free(&q);
	return rc;
}

int bk_put_fd(const bk_bucket_t *b, sv_t obj, int fd, uint64_t len, bk_obj_t *out, buf_t *msg)
{
	bk_req_t q = {0};
	bk_xfer_t x;
	prepare(b, "PUT", obj, NULL, true, &q, &x);
	x.body_fd = fd;
	x.body_len = len;
	int rc = bk_xfer(&x, msg);
	if (rc == AIS_OK && x.status != 200 && x.status != 201 && x.status != 204)
		rc = bk_status_errno(&x, "PUT", msg);
	if (rc == AIS_OK) {
		bk_obj_from(&x, out);
		out->size = len;
	}
	bk_xfer_free(&x);
	bk_req_free(&q);
	return rc;
}

int bk_list(const bk_bucket_t *b, sv_t prefix, sv_t start_after, size_t pagesize, bk_list_fn fn, void *arg,
	    bool *more, buf_t *msg)
{
	*more = false;
	for (int attempt = 0;; attempt++) {
		buf_t m = BUF_INIT;
		int rc = b->r.kind == BK_S3 ? bk_s3_list(b, prefix, start_after, pagesize, fn, arg, more, &m)
					    : bk_ais_list(b, prefix, start_after, pagesize, fn, arg, more, &m);
		int e = errno;
		bk_xfer_t none = {.status = 0};
		if (rc != AIS_OK && retryable(rc, &none, attempt)) {
			buf_free(&m);
			continue;
		}
		buf_addsv(msg, sv_of(&m));
		buf_free(&m);
		errno = e;
		return rc;
	}
}

int bk_bucket_of(struct cluster *cl, sv_t bck, bk_bucket_t *out, buf_t *msg)
{
	const bmd_t *b;
	bmd_backend_t be;
	if (!cl)
		return AIS_DONE;
	cluster_read_lock(cl, NULL, &b);
	const bmd_bucket_t *k = b ? bmd_get(b, bck.ptr, bck.len) : NULL;
	if (k)
		be = k->props.backend;
	cluster_read_unlock(cl);
	if (!k || !be.provider[0])
		return AIS_DONE;
	memset(out, 0, sizeof(*out));
	if (bk_remote_get(be.remote, strlen(be.remote), &out->r) != AIS_OK ||
	    out->r.kind != bk_kind_parse(be.provider, strlen(be.provider))) {
		buf_addf(msg, "bucket \"%.*s\": remote \"%s\" (%s) is not attached on this node", (int)bck.len, bck.ptr,
			 be.remote, be.provider);
		errno = EINVAL;
		return AIS_ERR;
	}
	snprintf(out->bucket, sizeof(out->bucket), "%s", be.bucket);
	out->validate_warm_get = be.validate_warm_get;
	out->sync = be.sync;
	return AIS_OK;
}
