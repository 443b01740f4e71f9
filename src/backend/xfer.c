/*
 * xfer.c - one blocking HTTP exchange with a remote (backend.h), on a
 * libcurl easy handle kept per thread so that consecutive calls to one
 * remote reuse their connection.
 *
 * Guarantees:
 *  1. Nothing of the cluster leaks to a remote: no intra-cluster auth
 *     header (httpc adds one to every call; this does not use httpc), only
 *     the headers the backend gives; TLS is verified against the remote's
 *     own CA file when it has one.
 *  2. A body is handed to the sink only for a 2xx answer; any other
 *     answer's body (at most 64 KiB) is kept for its message.
 *  3. A stalled transfer ends: connect within 5 s, and no transfer runs
 *     slower than 1 byte/s for 30 s; bodiless requests take at most 60 s.
 *  4. Failures are classified once (bk_xfer): could not connect
 *     (EHOSTUNREACH), too slow (ETIMEDOUT), anything else (EREMOTEIO);
 *     the message names the remote's alias and the method, never a
 *     credential.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bk_int.h"
#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define ERRBODY_MAX (64u << 10)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t key;

static void easy_free(void *e) { curl_easy_cleanup(e); }
static void key_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	pthread_key_create(&key, easy_free);
}

static CURL *thread_easy(void)
{
	pthread_once(&once, key_init);
	CURL *e = pthread_getspecific(key);
	if (!e) {
		e = curl_easy_init();
		if (!e)
			fatalx("backend: curl_easy_init failed");
		pthread_setspecific(key, e);
	}
	curl_easy_reset(e);
	return e;
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
	bk_xfer_t *x = arg;
	size_t len = sz * n;
	/* a new status line (redirect followed, 100 Continue): start over */
	if (len > 5 && !memcmp(p, "HTTP/", 5)) {
		buf_reset(&x->hdrs);
		buf_reset(&x->resp);
	}
	buf_add(&x->hdrs, p, len);
	return len;
}

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
	bk_xfer_t *x = arg;
	size_t len = sz * n;
	long code = 0;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code < 200 || code >= 300) { /* rule 2: kept for the message */
		if (x->resp.len < ERRBODY_MAX)
			buf_add(&x->resp, p, MIN(len, ERRBODY_MAX - x->resp.len));
		return len;
	}
	if (x->sink ? x->sink(x->arg, p, len) != AIS_OK : x->resp.len + len > x->max_resp) {
		x->aborted = true;
		return 0;
	}
	if (!x->sink)
		buf_add(&x->resp, p, len);
	x->got += len;
	return len;
}

static size_t on_read(char *p, size_t sz, size_t n, void *arg)
{
	bk_xfer_t *x = arg;
	size_t want = MIN(sz * n, x->body_len - x->body_off);
	if (!want)
		return 0;
	ssize_t r = pread(x->body_fd, p, want, (off_t)x->body_off);
	if (r <= 0)
		return CURL_READFUNC_ABORT;
	x->body_off += (uint64_t)r;
	return (size_t)r;
}

static int on_seek(void *arg, curl_off_t off, int origin)
{
	bk_xfer_t *x = arg;
	if (origin != SEEK_SET || off < 0 || (uint64_t)off > x->body_len)
		return CURL_SEEKFUNC_CANTSEEK;
	x->body_off = (uint64_t)off;
	return CURL_SEEKFUNC_OK;
}

int bk_xfer(bk_xfer_t *x, buf_t *msg)
{
	CURL *e = thread_easy();
	struct curl_slist *hl = NULL;
	char ebuf[CURL_ERROR_SIZE] = "";
	int rc = AIS_OK;

	x->easy = e;
	x->status = 0;
	x->aborted = false;
	x->got = 0;
	x->body_off = 0;
	if (!x->max_resp)
		x->max_resp = 32u << 20;
	buf_reset(&x->hdrs);
	buf_reset(&x->resp);
	for (size_t i = 0; x->headers && x->headers[i]; i++)
		hl = curl_slist_append(hl, x->headers[i]);
	hl = curl_slist_append(hl, "Expect:");
	curl_easy_setopt(e, CURLOPT_URL, x->url);
	curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L); /* the path as built: no "." or ".." resolved */
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 512L * 1024);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 30L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, x->follow ? 1L : 0L);
	curl_easy_setopt(e, CURLOPT_MAXREDIRS, 3L);
	curl_easy_setopt(e, CURLOPT_UNRESTRICTED_AUTH, 1L); /* a gateway's 307 to its own target */
	httpc_curl_tls(e, x->r->ca_file, NULL, NULL, false);
	if (!strcmp(x->method, "HEAD")) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (!strcmp(x->method, "PUT")) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)x->body_len);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(e, CURLOPT_READDATA, x);
		curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(e, CURLOPT_SEEKDATA, x);
	} else if (strcmp(x->method, "GET")) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, x->method);
	}
	if (strcmp(x->method, "GET") && strcmp(x->method, "PUT"))
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 60000L);
	CURLcode cc = curl_easy_perform(e);
	long code = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	x->status = (int)code;
	if (cc != CURLE_OK && !(x->aborted && x->status)) {
		int err = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ? EHOSTUNREACH
			  : cc == CURLE_OPERATION_TIMEDOUT                                  ? ETIMEDOUT
											     : EREMOTEIO;
		buf_addf(msg, "remote \"%s\" (%s): %s %s", x->r->alias, x->r->url, x->method,
			 ebuf[0] ? ebuf : curl_easy_strerror(cc));
		errno = err;
		rc = AIS_ERR;
	} else if (x->aborted) {
		buf_addf(msg, "remote \"%s\": %s aborted", x->r->alias, x->method);
		errno = EREMOTEIO;
		rc = AIS_ERR;
	}
	curl_slist_free_all(hl);
	x->easy = NULL;
	return rc;
}

int bk_status_errno(const bk_xfer_t *x, const char *what, buf_t *msg)
{
	int s = x->status;
	if (s == 404) {
		buf_addf(msg, "%s: not found on remote \"%s\"", what, x->r->alias);
		errno = ENOENT;
		return AIS_ERR;
	}
	if (s == 412) {
		buf_addf(msg, "%s changed on remote \"%s\" meanwhile", what, x->r->alias);
		errno = ESTALE;
		return AIS_ERR;
	}
	buf_addf(msg, "remote \"%s\" (%s) answered %d to %s %s", x->r->alias, x->r->url, s, x->method, what);
	if (x->resp.len) {
		/* the start of its message: an S3 <Code>/<Message> or a JSON one */
		sv_t b = {x->resp.ptr, MIN(x->resp.len, 300)};
		buf_addstr(msg, ": ");
		for (size_t i = 0; i < b.len; i++)
			buf_addch(msg, b.ptr[i] == '\n' || b.ptr[i] == '\r' ? ' ' : b.ptr[i]);
	}
	errno = s == 503 ? EHOSTUNREACH : s == 504 ? ETIMEDOUT : EREMOTEIO;
	return AIS_ERR;
}

void bk_xfer_free(bk_xfer_t *x)
{
	buf_free(&x->hdrs);
	buf_free(&x->resp);
}

sv_t bk_hdr(const bk_xfer_t *x, const char *name)
{
	sv_t v = httpc_header_find(sv_of(&x->hdrs), name);
	while (v.len && (v.ptr[v.len - 1] == '\r' || v.ptr[v.len - 1] == ' '))
		v.len--;
	return v;
}

void bk_unquote(sv_t v, char *out, size_t outsz)
{
	if (v.len >= 2 && v.ptr[0] == '"' && v.ptr[v.len - 1] == '"')
		v.ptr++, v.len -= 2;
	snprintf(out, outsz, "%.*s", (int)MIN(v.len, outsz - 1), v.ptr ? v.ptr : "");
}

void bk_obj_from(const bk_xfer_t *x, bk_obj_t *o)
{
	uint64_t n = 0;
	int64_t t;
	sv_t v = bk_hdr(x, "Content-Range"); /* bytes a-b/SIZE */
	const char *slash = v.ptr ? memchr(v.ptr, '/', v.len) : NULL;
	memset(o, 0, sizeof(*o));
	if (slash && num_parse_u64(slash + 1, (size_t)(v.ptr + v.len - slash - 1), 0, UINT64_MAX, &n) == AIS_OK)
		o->size = n;
	else if ((v = bk_hdr(x, "Content-Length")).ptr && num_parse_u64(v.ptr, v.len, 0, UINT64_MAX, &n) == AIS_OK)
		o->size = n;
	bk_unquote(bk_hdr(x, "ETag"), o->etag, sizeof(o->etag));
	v = bk_hdr(x, "Last-Modified");
	if (v.ptr && time_parse_http_date(v.ptr, v.len, &t) == AIS_OK)
		o->mtime_ns = t;
}
