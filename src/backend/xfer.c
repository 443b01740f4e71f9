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
 *  2. Memory is bounded by the caller, never by the remote: a body is
 *     handed to the sink only for a 2xx answer and only up to max_body
 *     bytes (a range answer longer than the range ends the transfer); a
 *     buffered answer (a listing page) is at most max_resp bytes; any other
 *     answer's body is kept for its message up to 64 KiB, and a message
 *     quotes at most 200 printable bytes of it.
 *  3. Every exchange ends (bk_limits, the remote.* keys): connect within
 *     connect_ms; no transfer slower than min_speed bytes/s for stall_ms;
 *     a request without object data within timeout_ms, a GET or PUT of
 *     object data within xfer_ms, redirects included.
 *  4. Failures are classified once: an exchange that did not end in an
 *     answer (bk_xfer): could not connect (EHOSTUNREACH), too slow
 *     (ETIMEDOUT), anything else (EREMOTEIO); an answer that is an error
 *     (bk_status_errno): 404 ENOENT (an S3 NoSuchBucket: EREMOTEIO, the
 *     remote bucket is gone), 412 ESTALE, 401/403 EKEYREJECTED (the remote
 *     refused the cluster's credentials: 403 to the client, never a "try
 *     again"), 503 EHOSTUNREACH, 504 ETIMEDOUT, anything else EREMOTEIO.
 *     The message names the remote's alias and the method, never a
 *     credential.
 *  5. The path is sent as built (no "." or ".." resolved by libcurl), and
 *     redirects are followed only where the caller allows them (an aisd
 *     gateway's 307 to its target), at most 3, only 307/308, only to the
 *     remote's own scheme and host, and without the Authorization header:
 *     a remote cannot send our credentials elsewhere or make this node a
 *     proxy to other hosts.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bk_int.h"
#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define ERRBODY_MAX (64u << 10)
#define QUOTE_MAX 200
#define REDIRECTS_MAX 3

/* Set once at start (bk_limits_set), before any transfer. */
static bk_limits_t limits = {
	.connect_ms = 5000,
	.timeout_ms = 60000,
	.xfer_ms = 3600000,
	.stall_ms = 30000,
	.min_speed = 1024,
	.list_bytes = 16u << 20,
	.cold_reads = 64,
};

void bk_limits_set(const bk_limits_t *l) { limits = *l; }
const bk_limits_t *bk_limits(void) { return &limits; }

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
	x->too_big = (x->max_body && x->got + len > x->max_body) || (!x->sink && x->resp.len + len > x->max_resp);
	if (x->too_big || (x->sink && x->sink(x->arg, p, len) != AIS_OK)) {
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

/* scheme and host of url (lower case), and whether it has user info. */
static int url_origin(const char *url, char *out, size_t outsz, bool *userinfo)
{
	CURLU *h = curl_url();
	char *scheme = NULL, *host = NULL, *user = NULL;
	int rc = AIS_ERR;
	if (h && curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
		*userinfo = curl_url_get(h, CURLUPART_USER, &user, 0) == CURLUE_OK;
		snprintf(out, outsz, "%s://%s", scheme, host);
		for (char *c = out; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		rc = AIS_OK;
	}
	curl_free(scheme);
	curl_free(host);
	curl_free(user);
	curl_url_cleanup(h);
	return rc;
}

bool bk_redirect_ok(const bk_remote_t *r, const char *loc)
{
	char a[600], b[600];
	bool ua, ub;
	return url_origin(r->url, a, sizeof(a), &ua) == AIS_OK && url_origin(loc, b, sizeof(b), &ub) == AIS_OK &&
	       !ub && !strcmp(a, b);
}

static bool is_auth(const char *h) { return !strncasecmp(h, "Authorization:", 14); }

int bk_xfer(bk_xfer_t *x, buf_t *msg)
{
	CURL *e = thread_easy();
	struct curl_slist *hl = NULL, *hl_hop = NULL; /* hl_hop: after a redirect, no credentials */
	char ebuf[CURL_ERROR_SIZE] = "";
	char *next = NULL;
	const char *url = x->url;
	int rc = AIS_OK;
	uint64_t budget = x->data ? limits.xfer_ms : limits.timeout_ms;
	int64_t deadline = budget ? time_now_ns() + (int64_t)budget * 1000000 : 0;
	CURLcode cc = CURLE_OK;

	x->easy = e;
	x->status = 0;
	x->aborted = x->too_big = false;
	if (!x->max_resp)
		x->max_resp = 32u << 20;
	for (size_t i = 0; x->headers && x->headers[i]; i++) {
		hl = curl_slist_append(hl, x->headers[i]);
		if (!is_auth(x->headers[i]))
			hl_hop = curl_slist_append(hl_hop, x->headers[i]);
	}
	hl = curl_slist_append(hl, "Expect:");
	hl_hop = curl_slist_append(hl_hop, "Expect:");
	curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L); /* rule 5: no "." or ".." resolved */
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 512L * 1024);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)MAX(limits.connect_ms, 1));
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, (long)limits.min_speed);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)MAX((limits.stall_ms + 999) / 1000, 1));
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L); /* rule 5: followed here */
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
	for (int hop = 0;; hop++) {
		long code = 0;
		x->got = 0;
		x->body_off = 0;
		buf_reset(&x->hdrs);
		buf_reset(&x->resp);
		if (deadline) {
			int64_t left = (deadline - time_now_ns()) / 1000000;
			curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)MAX(left, 1));
		}
		curl_easy_setopt(e, CURLOPT_URL, url);
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, hop ? hl_hop : hl);
		cc = curl_easy_perform(e);
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
		x->status = (int)code;
		if (cc != CURLE_OK || !x->follow || (code != 307 && code != 308))
			break;
		char *loc = NULL;
		curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &loc);
		if (!loc || hop == REDIRECTS_MAX || !bk_redirect_ok(x->r, loc)) {
			buf_addf(msg, "remote \"%s\": %s: %s", x->r->alias, x->method,
				 !loc ? "a redirect without a Location"
				 : hop == REDIRECTS_MAX ? "too many redirects"
							: "a redirect to another host (not followed)");
			errno = EREMOTEIO;
			rc = AIS_ERR;
			goto out;
		}
		free(next);
		url = next = xstrdup(loc);
	}
	if (cc != CURLE_OK && !(x->aborted && x->status)) {
		int err = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ? EHOSTUNREACH
			  : cc == CURLE_OPERATION_TIMEDOUT                                  ? ETIMEDOUT
											     : EREMOTEIO;
		buf_addf(msg, "remote \"%s\" (%s): %s %s", x->r->alias, x->r->url, x->method,
			 ebuf[0] ? ebuf : curl_easy_strerror(cc));
		errno = err;
		rc = AIS_ERR;
	} else if (x->aborted) {
		if (x->too_big)
			buf_addf(msg, "remote \"%s\": %s: answer larger than the %llu bytes %s", x->r->alias,
				 x->method, (unsigned long long)(x->max_body ? x->max_body : x->max_resp),
				 x->data ? "asked for" : "allowed");
		else
			buf_addf(msg, "remote \"%s\": %s aborted", x->r->alias, x->method);
		errno = EREMOTEIO;
		rc = AIS_ERR;
	}
out:
	free(next);
	curl_slist_free_all(hl);
	curl_slist_free_all(hl_hop);
	x->easy = NULL;
	return rc;
}

int bk_status_errno(const bk_xfer_t *x, const char *what, buf_t *msg)
{
	int s = x->status;
	if (s == 412) {
		buf_addf(msg, "%s changed on remote \"%s\" meanwhile", what, x->r->alias);
		errno = ESTALE;
		return AIS_ERR;
	}
	bool nobucket = s == 404 && x->resp.len && memmem(x->resp.ptr, x->resp.len, "NoSuchBucket", 12);
	if (s == 404 && !nobucket) {
		buf_addf(msg, "%s: not found on remote \"%s\"", what, x->r->alias);
		errno = ENOENT;
		return AIS_ERR;
	}
	if (s == 401 || s == 403)
		buf_addf(msg, "remote \"%s\" (%s) refused the credentials: answered %d to %s %s", x->r->alias,
			 x->r->url, s, x->method, what);
	else if (nobucket)
		buf_addf(msg, "remote \"%s\" (%s) has no bucket \"%s\": answered 404 to %s %s", x->r->alias,
			 x->r->url, x->bucket ? x->bucket : "", x->method, what);
	else
		buf_addf(msg, "remote \"%s\" (%s) answered %d to %s %s", x->r->alias, x->r->url, s, x->method,
			 what);
	if (x->resp.len) {
		/* the start of its message (an S3 <Code>/<Message> or a JSON one),
		 * printable ASCII only (rule 2) */
		sv_t b = {x->resp.ptr, MIN(x->resp.len, QUOTE_MAX)};
		buf_addstr(msg, ": ");
		for (size_t i = 0; i < b.len; i++)
			buf_addch(msg, b.ptr[i] >= 0x20 && b.ptr[i] < 0x7f ? b.ptr[i] : ' ');
	}
	errno = s == 401 || s == 403 ? EKEYREJECTED : s == 503 ? EHOSTUNREACH : s == 504 ? ETIMEDOUT : EREMOTEIO;
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
