/*
 * backend.c - the backend operations of backend.h, one function per
 * operation for every kind (s3.c and ais.c build the requests), and a
 * bucket's backend from the BMD.
 *
 * Guarantees:
 *  1. Requests that change nothing (HEAD, listing) and DELETE are retried
 *     with backoff (100 ms, then 400 ms) when the remote could not be
 *     reached or answered 5xx, a retry only while remote.timeout since the
 *     first attempt has not passed (so a request and its retries end
 *     within twice remote.timeout); GET and PUT are not retried here (the
 *     cold fetch retries a GET that delivered no byte; a PUT's client
 *     retries).
 *  2. A GET pins the version it reads with If-Match when it is given one:
 *     an object that changed on the remote is ESTALE, never a mix.
 *  3. Every error names the remote's alias (errors in backend.h).
 *  4. No object name with a "." or ".." segment becomes a remote path
 *     (names.h; EINVAL): whatever the callers checked, a request never
 *     reaches another bucket or route of the remote.
 *  5. A range answer is never more than the range (xfer.c rule 2).
 *  6. A listing page is checked before its entries are believed: at most
 *     the entries asked for, every name after start_after (so a listing
 *     always advances: a remote that repeats a page or its continuation
 *     ends the listing with an error, never loops it), and names this
 *     cluster could not hold are left out. Anything else is EREMOTEIO.
 *  7. A DELETE says whether the object was there: an S3 remote answers
 *     204 to a DELETE of a key it does not have, so the object is HEADed
 *     first there and a 404 is ENOENT without a DELETE sent (an aisd
 *     remote answers 404 itself).
 *  8. A listing of a bucket the remote does not have is EREMOTEIO naming
 *     the remote and its bucket, never ENOENT: the bucket of this cluster
 *     exists, its backend is what is missing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bk_int.h"
#include "aisd/bmd.h"
#include "aisd/cluster.h"
#include "aisd/names.h"
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
	x->bucket = b->bucket;
	x->method = method;
	x->url = q->url.ptr;
	x->headers = q->hp;
	x->body_fd = -1;
	x->follow = b->r.kind == BK_AIS;
}

static bool retryable(int rc, const bk_xfer_t *x, int attempt, int64_t t0)
{
	int64_t pause_ms = attempt ? 400 : 100, budget = (int64_t)bk_limits()->timeout_ms;
	if (attempt >= 2)
		return false;
	if (rc == AIS_OK ? x->status < 500 : errno != EHOSTUNREACH && errno != EREMOTEIO)
		return false;
	/* rule 1: no retry starts past the budget */
	if (budget && (time_now_ns() - t0) / 1000000 + pause_ms >= budget)
		return false;
	usleep((useconds_t)pause_ms * 1000);
	return true;
}

/* Rule 4: AIS_OK, or AIS_ERR (EINVAL) for a name no request may carry. */
static int name_ok(const bk_bucket_t *b, sv_t obj, buf_t *msg)
{
	if (!name_has_dot_segment(obj.ptr, obj.len))
		return AIS_OK;
	buf_addf(msg, "remote \"%s\": an object name with a \".\" or \"..\" segment is not sent", b->r.alias);
	errno = EINVAL;
	return AIS_ERR;
}

/* One bodiless request, retried (rule 1); AIS_OK with the answer in *x. */
static int simple(const bk_bucket_t *b, const char *method, sv_t obj, bk_xfer_t *x, buf_t *msg)
{
	int64_t t0 = time_now_ns();
	memset(x, 0, sizeof(*x));
	if (obj.len && name_ok(b, obj, msg) != AIS_OK)
		return AIS_ERR;
	for (int attempt = 0;; attempt++) {
		bk_req_t q = {0};
		buf_t m = BUF_INIT;
		prepare(b, method, obj, NULL, false, &q, x);
		int rc = bk_xfer(x, &m), e = errno;
		bk_req_free(&q);
		if (retryable(rc, x, attempt, t0)) {
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
	if (b->r.kind == BK_S3) { /* rule 7 */
		bk_obj_t o;
		if (bk_head(b, obj, &o, msg) != AIS_OK)
			return AIS_ERR;
	}
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

	if (name_ok(b, obj, msg) != AIS_OK)
		return AIS_ERR;
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
	x.max_body = len; /* rule 5 */
	x.data = true;
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
	if (name_ok(b, obj, msg) != AIS_OK)
		return AIS_ERR;
	prepare(b, "PUT", obj, NULL, true, &q, &x);
	x.body_fd = fd;
	x.body_len = len;
	x.data = true;
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

/* Rule 6: a page's entries, kept (at most max) until the page is known
 * good, then handed to the caller's fn: a page that fails, retried or
 * not, gave the caller nothing. */
struct page {
	sv_t after;
	size_t n, max;
	bool over, back;
	bk_entry_t *ents; /* n of them; name and etag owned */
};

static bool sv_after(sv_t a, sv_t b) /* a > b, bytewise */
{
	int c = b.len && a.len ? memcmp(a.ptr, b.ptr, MIN(a.len, b.len)) : 0;
	return c > 0 || (c == 0 && a.len > b.len);
}

static void page_entry(void *arg, const bk_entry_t *e)
{
	struct page *p = arg;
	sv_t name = {e->name, e->len};
	if (p->over || p->back)
		return;
	if (p->n == p->max) {
		p->over = true;
		return;
	}
	sv_t prev = p->n ? (sv_t){p->ents[p->n - 1].name, p->ents[p->n - 1].len} : p->after;
	if ((p->n || p->after.len) && !sv_after(name, prev)) {
		p->back = true;
		return;
	}
	if (!p->ents)
		p->ents = xcalloc(p->max, sizeof(*p->ents));
	bk_entry_t *k = &p->ents[p->n++];
	*k = *e;
	char *nm = xmalloc(e->len + 1); /* (a name may hold a NUL: its length counts) */
	memcpy(nm, e->name, e->len);
	nm[e->len] = '\0';
	k->name = nm;
	k->etag = xstrdup(e->etag ? e->etag : "");
}

static void page_free(struct page *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free((char *)p->ents[i].name);
		free((char *)p->ents[i].etag);
	}
	free(p->ents);
}

/* One page, checked (rule 6). */
static int list_page(const bk_bucket_t *b, sv_t prefix, sv_t start_after, size_t pagesize, bk_list_fn fn, void *arg,
		     bool *more, buf_t *msg)
{
	struct page p = {.after = start_after, .max = pagesize ? pagesize : 1};
	*more = false;
	int rc = b->r.kind == BK_S3 ? bk_s3_list(b, prefix, start_after, p.max, page_entry, &p, more, msg)
				    : bk_ais_list(b, prefix, start_after, p.max, page_entry, &p, more, msg);
	if (rc == AIS_OK && (p.over || p.back || (*more && !p.n))) {
		buf_addf(msg, "remote \"%s\": listing: %s", b->r.alias,
			 p.over   ? "more entries than the page asked for"
			 : p.back ? "a name not after the one before it (the listing does not advance)"
				  : "an empty page that says more follow");
		errno = EREMOTEIO;
		rc = AIS_ERR;
	}
	for (size_t i = 0; rc == AIS_OK && i < p.n; i++)
		fn(arg, &p.ents[i]);
	page_free(&p);
	return rc;
}

int bk_list(const bk_bucket_t *b, sv_t prefix, sv_t start_after, size_t pagesize, bk_list_fn fn, void *arg,
	    bool *more, buf_t *msg)
{
	int64_t t0 = time_now_ns();
	*more = false;
	for (int attempt = 0;; attempt++) {
		buf_t m = BUF_INIT;
		int rc = list_page(b, prefix, start_after, pagesize, fn, arg, more, &m);
		int e = errno;
		bk_xfer_t none = {.status = 0};
		if (rc != AIS_OK && retryable(rc, &none, attempt, t0)) {
			buf_free(&m);
			continue;
		}
		if (rc != AIS_OK && e == ENOENT) { /* rule 8 */
			buf_reset(&m);
			buf_addf(&m, "remote \"%s\" (%s) has no bucket \"%s\"", b->r.alias, b->r.url, b->bucket);
			e = EREMOTEIO;
		}
		buf_addsv(msg, sv_of(&m));
		buf_free(&m);
		errno = e;
		return rc;
	}
}

/* The backend be with its remote: AIS_ERR when the remote is not attached
 * here (or is of another kind). */
static int backend_of(const bmd_backend_t *be, bk_bucket_t *out)
{
	memset(out, 0, sizeof(*out));
	if (bk_remote_get(be->remote, strlen(be->remote), &out->r) != AIS_OK ||
	    out->r.kind != bk_kind_parse(be->provider, strlen(be->provider)))
		return AIS_ERR;
	snprintf(out->bucket, sizeof(out->bucket), "%s", be->bucket);
	out->validate_warm_get = be->validate_warm_get;
	out->sync = be->sync;
	return AIS_OK;
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
	if (backend_of(&be, out) != AIS_OK) {
		buf_addf(msg, "bucket \"%.*s\": remote \"%s\" (%s) is not attached on this node", (int)bck.len, bck.ptr,
			 be.remote, be.provider);
		errno = EINVAL;
		return AIS_ERR;
	}
	return AIS_OK;
}

uint64_t bk_list_call_ms(struct cluster *cl, sv_t bck, uint64_t base_ms)
{
	bk_bucket_t b;
	buf_t msg = BUF_INIT;
	uint64_t t = bk_limits()->timeout_ms, ms = base_ms;
	if (t && bk_bucket_of(cl, bck, &b, &msg) == AIS_OK)
		ms = MAX(base_ms, 2 * t + 5000);
	buf_free(&msg);
	return ms;
}

int bk_backend_check(const bmd_backend_t *be, buf_t *msg)
{
	bk_bucket_t b;
	buf_t m = BUF_INIT;
	if (backend_of(be, &b) != AIS_OK) {
		buf_addf(msg, "backend %s://@%s/%s: remote \"%s\" is not attached (aisctl remote attach)", be->provider,
			 be->remote, be->bucket, be->remote);
		errno = EINVAL;
		return AIS_ERR;
	}
	if (bk_head_bucket(&b, &m) == AIS_OK) {
		buf_free(&m);
		return AIS_OK;
	}
	int e = errno;
	if (e == ENOENT) {
		buf_addf(msg, "backend %s://@%s/%s: remote \"%s\" (%s) has no bucket \"%s\"", be->provider, be->remote,
			 be->bucket, b.r.alias, b.r.url, be->bucket);
		e = EINVAL;
	} else {
		buf_addf(msg, "backend %s://@%s/%s: could not check that the remote bucket exists: %s", be->provider,
			 be->remote, be->bucket, m.ptr ? m.ptr : "");
	}
	buf_free(&m);
	errno = e;
	return AIS_ERR;
}
