/*
 * s3.c - the S3 backend: requests to any S3-compatible endpoint, signed
 * with SigV4 by the project's own signer (s3_sign), path-style
 * (ENDPOINT/BUCKET/KEY) or virtual-hosted (BUCKET.HOST/KEY), and the
 * ListObjectsV2 page parser (expat).
 *
 * Guarantees: every header sent is signed (host, x-amz-date,
 * x-amz-content-sha256 and the extras: range, if-match); keys are
 * URI-encoded once as SigV4 wants, so the canonical path is the path
 * sent; a remote without an access key gets unsigned requests (public
 * buckets, test endpoints).
 */
#include <errno.h>
#include <expat.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bk_int.h"
#include "aisd/s3auth.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

void bk_req_free(bk_req_t *q)
{
	buf_free(&q->url);
	for (size_t i = 0; i < ARRAY_SIZE(q->hv); i++)
		buf_free(&q->hv[i]);
}

/* scheme "://" | host[:port] | base path of r->url. */
static void split_url(const char *url, sv_t *scheme, sv_t *host, sv_t *base)
{
	const char *p = strstr(url, "://");
	const char *h = p ? p + 3 : url;
	const char *slash = strchr(h, '/');
	*scheme = (sv_t){url, (size_t)(h - url)};
	*host = (sv_t){h, slash ? (size_t)(slash - h) : strlen(h)};
	*base = slash ? sv_from(slash) : (sv_t){"", 0};
	while (base->len && base->ptr[base->len - 1] == '/')
		base->len--;
}

void bk_s3_prepare(const bk_bucket_t *b, const char *method, sv_t obj, const char *query,
		   const char *const *extra, bool unsigned_payload, bk_req_t *q)
{
	sv_t scheme, host, base;
	buf_t path = BUF_INIT, hostv = BUF_INIT;
	char date[17];
	struct tm tm;
	time_t now = (time_t)(time_now_ns() / 1000000000LL);
	http_hdr_t h[8];
	size_t nh = 0, nv = 0;

	split_url(b->r.url, &scheme, &host, &base);
	if (b->r.virtual_host) {
		buf_addf(&hostv, "%s.%.*s", b->bucket, (int)host.len, host.ptr);
		buf_addsv(&path, base);
		buf_addch(&path, '/');
	} else {
		buf_addsv(&hostv, host);
		buf_addf(&path, "%.*s/%s%s", (int)base.len, base.ptr, b->bucket, obj.len ? "/" : "");
	}
	buf_add_pct(&path, obj, true);
	buf_addf(&q->url, "%.*s%s%s%s%s", (int)scheme.len, scheme.ptr, hostv.ptr, path.ptr, *query ? "?" : "", query);

	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
	const char *ph = unsigned_payload ? "UNSIGNED-PAYLOAD" : EMPTY_SHA256;
	h[nh++] = (http_hdr_t){SV("host"), sv_of(&hostv)};
	h[nh++] = (http_hdr_t){SV("x-amz-content-sha256"), sv_from(ph)};
	h[nh++] = (http_hdr_t){SV("x-amz-date"), {date, 16}};
	for (size_t i = 0; extra && extra[i] && nh < ARRAY_SIZE(h); i++) {
		const char *c = strchr(extra[i], ':');
		sv_t v = sv_trim(sv_from(c + 1));
		h[nh++] = (http_hdr_t){{extra[i], (size_t)(c - extra[i])}, v};
	}
	for (size_t i = 0; i < nh; i++)
		buf_addf(&q->hv[nv++], "%.*s: %.*s", (int)h[i].name.len, h[i].name.ptr, (int)h[i].value.len,
			 h[i].value.ptr);
	if (b->r.access_key[0]) {
		s3_key_t key = {.access_key = b->r.access_key, .secret_key = b->r.secret_key};
		s3_req_t rq = {.method = method, .path = sv_of(&path), .query = sv_from(query), .hdrs = h, .nhdrs = nh};
		buf_addstr(&q->hv[nv], "Authorization: ");
		s3_sign(&key, b->r.region[0] ? b->r.region : "us-east-1", date, &rq, ph, &q->hv[nv]);
		nv++;
	}
	for (size_t i = 0; i < nv; i++)
		q->hp[i] = q->hv[i].ptr;
	q->hp[nv] = NULL;
	buf_free(&path);
	buf_free(&hostv);
}

/* --- ListObjectsV2 ------------------------------------------------------------ */

struct lsx {
	XML_Parser p;
	int depth;
	bool in_contents;
	buf_t text, key, etag;
	uint64_t size;
	int64_t mtime_ns;
	bool truncated;
	size_t n;
	buf_t last;
	bk_list_fn fn;
	void *arg;
	bool bad;         /* not XML */
};

static void on_start(void *arg, const XML_Char *name, const XML_Char **attrs)
{
	struct lsx *x = arg;
	(void)attrs;
	x->depth++;
	buf_reset(&x->text);
	if (x->depth == 2 && !strcmp(name, "Contents")) {
		x->in_contents = true;
		buf_reset(&x->key);
		buf_reset(&x->etag);
		x->size = 0;
		x->mtime_ns = 0;
	}
}

static int64_t iso_time(const char *s)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	if (!strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
		return 0;
	return (int64_t)timegm(&tm) * 1000000000LL;
}

static void on_end(void *arg, const XML_Char *name)
{
	struct lsx *x = arg;
	buf_addch(&x->text, '\0');
	x->text.len--;
	if (x->in_contents && x->depth == 3) {
		if (!strcmp(name, "Key"))
			buf_addsv(&x->key, sv_of(&x->text));
		else if (!strcmp(name, "ETag"))
			buf_addsv(&x->etag, sv_of(&x->text));
		else if (!strcmp(name, "Size"))
			num_parse_u64(x->text.ptr, x->text.len, 0, UINT64_MAX, &x->size);
		else if (!strcmp(name, "LastModified"))
			x->mtime_ns = iso_time(x->text.ptr);
	} else if (x->depth == 2 && !strcmp(name, "Contents")) {
		char etag[BK_ETAG_MAX];
		bk_unquote(sv_of(&x->etag), etag, sizeof(etag));
		bk_entry_t e = {.name = x->key.ptr ? x->key.ptr : "", .len = x->key.len, .size = x->size,
				.etag = etag, .mtime_ns = x->mtime_ns};
		x->in_contents = false;
		x->fn(x->arg, &e);
		buf_reset(&x->last);
		buf_addsv(&x->last, sv_of(&x->key));
		x->n++;
	} else if (x->depth == 2 && !strcmp(name, "IsTruncated")) {
		x->truncated = sv_eqstr(sv_of(&x->text), "true");
	}
	buf_reset(&x->text);
	x->depth--;
}

static void on_text(void *arg, const XML_Char *s, int len)
{
	struct lsx *x = arg;
	if (x->text.len + (size_t)len < 4096)
		buf_add(&x->text, s, (size_t)len);
}

/* The page is parsed as it arrives (memory: one entry, not the page). */
static int list_sink(void *arg, const char *p, size_t n)
{
	struct lsx *x = arg;
	if (XML_Parse(x->p, p, (int)n, 0) != XML_STATUS_OK) {
		x->bad = true;
		return AIS_ERR;
	}
	return AIS_OK;
}

int bk_s3_list(const bk_bucket_t *b, sv_t prefix, sv_t start_after, size_t pagesize, bk_list_fn fn, void *arg,
	       bool *more, buf_t *msg)
{
	bk_req_t q = {0};
	buf_t query = BUF_INIT;
	bk_xfer_t x = {.r = &b->r, .bucket = b->bucket, .method = "GET", .body_fd = -1, .sink = list_sink,
		       .max_body = bk_limits()->list_bytes};
	struct lsx l = {.fn = fn, .arg = arg};
	int rc = AIS_ERR;

	/* parameters in canonical (sorted) order */
	buf_addstr(&query, "list-type=2");
	buf_addf(&query, "&max-keys=%zu", pagesize);
	if (prefix.len) {
		buf_addstr(&query, "&prefix=");
		buf_add_pct(&query, prefix, false);
	}
	if (start_after.len) {
		buf_addstr(&query, "&start-after=");
		buf_add_pct(&query, start_after, false);
	}
	bk_s3_prepare(b, "GET", (sv_t){"", 0}, query.ptr, NULL, false, &q);
	x.url = q.url.ptr;
	x.headers = q.hp;
	x.arg = &l;
	l.p = XML_ParserCreate("UTF-8");
	XML_SetUserData(l.p, &l);
	XML_SetElementHandler(l.p, on_start, on_end);
	XML_SetCharacterDataHandler(l.p, on_text);
	buf_t xm = BUF_INIT;
	int xrc = bk_xfer(&x, &xm), e = errno;
	if (xrc != AIS_OK && !l.bad)
		buf_addsv(msg, sv_of(&xm));
	buf_free(&xm);
	errno = e;
	if (xrc != AIS_OK && !l.bad)
		goto out;
	if (!l.bad && x.status != 200) {
		bk_status_errno(&x, "listing", msg);
		goto out;
	}
	if (l.bad || XML_Parse(l.p, "", 0, 1) != XML_STATUS_OK) {
		buf_addf(msg, "remote \"%s\": listing is not valid XML (%s)", b->r.alias,
			 XML_ErrorString(XML_GetErrorCode(l.p)));
		errno = EREMOTEIO;
	} else {
		*more = l.truncated && l.n > 0;
		rc = AIS_OK;
	}
out:
	XML_ParserFree(l.p);
	buf_free(&l.text);
	buf_free(&l.key);
	buf_free(&l.etag);
	buf_free(&l.last);
	buf_free(&query);
	bk_xfer_free(&x);
	bk_req_free(&q);
	return rc;
}
