/*
 * http.c - aisctl's HTTP layer on one reused libcurl easy handle: send a
 * request (JSON body, streamed upload from an fd, or nothing), follow
 * redirects with the method and body kept, stream a 2xx body to an fd or keep
 * it in memory, capture the final response's headers, and turn error
 * responses into one line "aisctl: <message> (HTTP N)". Also URL escaping of
 * names and the BUCKET/OBJECT argument split.
 *
 * Guarantees: memory use does not grow with the size of an upload or a
 * streamed download; only a 2xx body ever reaches the sink fd (redirect and
 * error bodies never do), and for a Range request only a 206 body; an error
 * body is kept up to ERR_BODY_MAX bytes. The same setup and finish serve
 * one blocking request (cli_http) and many on a curl multi handle (put -r).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "aisd/httpc.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

#define ERR_BODY_MAX (64 * 1024)

int cli_split_uname(const char *arg, bool need_object, char **bucket, char **object)
{
	if (strncmp(arg, "ais://", 6) == 0)
		arg += 6;
	const char *slash = strchr(arg, '/');
	size_t blen = slash ? (size_t)(slash - arg) : strlen(arg);
	const char *obj = slash ? slash + 1 : "";
	if (blen == 0 || (need_object && *obj == '\0'))
		return AIS_ERR;
	*bucket = xstrndup(arg, blen);
	*object = xstrdup(obj);
	return AIS_OK;
}

json_t *cli_list_of(const char *s)
{
	json_t *a = json_array();
	while (s && *s) {
		const char *c = strchr(s, ',');
		size_t n = c ? (size_t)(c - s) : strlen(s);
		if (n)
			json_array_append_new(a, json_stringn(s, n));
		s = c ? c + 1 : NULL;
	}
	return a;
}

const char *cli_resp_header(const struct cli_resp *rs, const char *name)
{
	for (size_t i = 0; i < rs->nhdrs; i++)
		if (strcasecmp(rs->hdrs[i].name, name) == 0)
			return rs->hdrs[i].value;
	return NULL;
}

static void hdrs_clear(struct cli_resp *rs)
{
	for (size_t i = 0; i < rs->nhdrs; i++) {
		free(rs->hdrs[i].name);
		free(rs->hdrs[i].value);
	}
	free(rs->hdrs);
	rs->hdrs = NULL;
	rs->nhdrs = 0;
}

void cli_resp_free(struct cli_resp *rs)
{
	hdrs_clear(rs);
	buf_free(&rs->reason);
	buf_free(&rs->body);
}

/*
 * Header callback: a status line starts a new response (after a redirect or
 * a 100 Continue), so it drops what was kept of the previous one.
 */
static size_t on_header(char *data, size_t size, size_t nitems, void *arg)
{
	struct cli_xfer *x = arg;
	struct cli_resp *rs = x->rs;
	size_t n = size * nitems;
	sv_t line = {data, n};
	while (line.len && (line.ptr[line.len - 1] == '\n' || line.ptr[line.len - 1] == '\r'))
		line.len--;
	line = sv_trim(line);

	if (sv_startswith(line, "HTTP/")) {
		hdrs_clear(rs);
		buf_reset(&rs->reason);
		buf_reset(&rs->body);
		/* "HTTP/1.1 404 Not Found": the reason is after the second space */
		const char *sp = memchr(line.ptr, ' ', line.len);
		if (sp) {
			const char *end = line.ptr + line.len;
			const char *sp2 = memchr(sp + 1, ' ', (size_t)(end - sp - 1));
			if (sp2)
				buf_add(&rs->reason, sp2 + 1, (size_t)(end - sp2 - 1));
		}
		return n;
	}
	const char *colon = memchr(line.ptr, ':', line.len);
	if (!colon)
		return n;
	sv_t value = sv_trim((sv_t){colon + 1, (size_t)(line.ptr + line.len - colon - 1)});
	rs->hdrs = xrealloc(rs->hdrs, (rs->nhdrs + 1) * sizeof(*rs->hdrs));
	rs->hdrs[rs->nhdrs].name = xstrndup(line.ptr, (size_t)(colon - line.ptr));
	rs->hdrs[rs->nhdrs].value = xstrndup(value.ptr, value.len);
	rs->nhdrs++;
	return n;
}

/*
 * Write callback: a 2xx body goes to the sink fd (when there is one), any
 * other body into rs->body (bounded); a redirect's body is dropped.
 */
static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct cli_xfer *x = arg;
	struct cli_resp *rs = x->rs;
	size_t n = size * nmemb;
	long code = 0;

	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 300 && code < 400)
		return n;
	if (code >= 200 && code < 300 && x->rq->range && code != 206) {
		/* never hand the whole object to a caller who asked for a part */
		x->range_ignored = true;
		return 0;
	}
	if (code >= 200 && code < 300 && x->rq->sink_fd >= 0) {
		if (fd_write_all(x->rq->sink_fd, data, n) != AIS_OK) {
			rs->sink_errno = errno;
			return 0; /* makes curl fail with CURLE_WRITE_ERROR */
		}
		rs->sunk += n;
		return n;
	}
	if (code >= 200 && code < 300)
		buf_add(&rs->body, data, n); /* a JSON answer the caller asked for */
	else if (rs->body.len < ERR_BODY_MAX)
		buf_add(&rs->body, data, MIN(n, ERR_BODY_MAX - rs->body.len));
	return n;
}

static size_t on_read(char *dst, size_t size, size_t nitems, void *arg)
{
	struct cli_xfer *x = arg;
	size_t want = size * nitems;
	for (;;) {
		ssize_t r = read(x->rq->upload_fd, dst, want);
		if (r >= 0) {
			x->uploaded += (uint64_t)r;
			return (size_t)r;
		}
		if (errno != EINTR)
			return CURL_READFUNC_ABORT;
	}
}

/*
 * Seek callback: curl rewinds the body to send it again after a redirect.
 * An fd that cannot seek (a pipe) can still be "rewound" when nothing was
 * read from it yet (the server redirected before the body was sent).
 */
static int on_seek(void *arg, curl_off_t offset, int origin)
{
	struct cli_xfer *x = arg;
	if (origin != SEEK_SET)
		return CURL_SEEKFUNC_CANTSEEK;
	if (x->upload_start < 0)
		return (offset == 0 && x->uploaded == 0) ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_CANTSEEK;
	if (lseek(x->rq->upload_fd, (off_t)(x->upload_start + offset), SEEK_SET) < 0)
		return CURL_SEEKFUNC_FAIL;
	x->uploaded = (uint64_t)offset;
	return CURL_SEEKFUNC_OK;
}

/* Progress callback: feeds rq->progress with the bytes moved so far. */
static int on_xferinfo(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct cli_xfer *x = arg;
	struct cli_progress *p = x->rq->progress;
	(void)ultotal;
	if (x->rq->upload_fd >= 0) {
		cli_progress_set(p, (uint64_t)ulnow, p->files_done);
	} else {
		long code = 0;
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
		if (code < 200 || code >= 300)
			return 0; /* a redirect or an error: not the object's bytes */
		if (!p->total && dltotal > 0)
			p->total = (uint64_t)dltotal;
		cli_progress_set(p, (uint64_t)dlnow, p->files_done);
	}
	return 0;
}

void cli_tls(const struct cli *c, CURL *h)
{
	httpc_curl_tls(h, c->cacert, c->cert, c->key, c->insecure);
}

void cli_xfer_setup(struct cli *c, CURL *h, const struct cli_req *rq, struct cli_resp *rs,
		    struct cli_xfer *x)
{
	*x = (struct cli_xfer){.c = c, .h = h, .rq = rq, .rs = rs, .upload_start = -1};
	buf_addstr(&x->url, c->endpoint);
	buf_addstr(&x->url, rq->path);

	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, x->url.ptr);
	cli_tls(c, h);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "aisctl/" CLI_VERSION);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	/* "a/../b" is an object name, not a path to squash */
	curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 8L);
	curl_easy_setopt(h, CURLOPT_POSTREDIR, (long)CURL_REDIR_POST_ALL);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, c->timeout_s ? MIN(c->timeout_s, 10L) : 10L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, c->timeout_s);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_PRIVATE, x);
	if (c->verbose >= 2)
		curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);
	if (rq->progress) {
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_xferinfo);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}

	for (const struct curl_slist *s = rq->headers; s; s = s->next)
		x->hdrs = curl_slist_append(x->hdrs, s->data);
	if (c->token) {
		/* curl drops it on a redirect to another node; the redirect is
		 * signed by the node that checked it (aisd.8, ACCESS CONTROL) */
		buf_t ah = BUF_INIT;
		buf_addf(&ah, "Authorization: Bearer %s", c->token);
		x->hdrs = curl_slist_append(x->hdrs, ah.ptr);
		buf_free(&ah);
	}

	if (strcmp(rq->method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (rq->upload_fd >= 0) {
		/* PUT of a stream; unknown size means chunked transfer encoding. */
		off_t pos = lseek(rq->upload_fd, 0, SEEK_CUR);
		x->upload_start = pos < 0 ? -1 : (int64_t)pos;
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, x);
		curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(h, CURLOPT_SEEKDATA, x);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)rq->upload_size);
		if (strcmp(rq->method, "PUT") != 0)
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
		x->hdrs = curl_slist_append(x->hdrs, "Content-Type: application/octet-stream");
	} else if (rq->json) {
		/* A body on any method (GET with a list request, DELETE, POST, PATCH). */
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->json);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(rq->json));
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
		x->hdrs = curl_slist_append(x->hdrs, "Content-Type: application/json");
		x->hdrs = curl_slist_append(x->hdrs, "Expect:");
	} else if (strcmp(rq->method, "GET") != 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
	}
	if (rq->range)
		curl_easy_setopt(h, CURLOPT_RANGE, rq->range);
	if (x->hdrs)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, x->hdrs);

	if (c->verbose)
		fprintf(stderr, "> %s %s\n", rq->method, x->url.ptr);
	x->t0 = time_mono_ns();
}

/* Does the libcurl error text err contain any of the needles? */
static bool err_has(const char *err, const char *const *needles)
{
	for (; *needles; needles++)
		if (strcasestr(err, *needles))
			return true;
	return false;
}

/*
 * The one place that turns a libcurl failure into what the user should do.
 * The code alone does not tell a missing client certificate from a server
 * that closed the connection, so the text of the error (OpenSSL's alerts)
 * is read too; an error this does not know gets no hint (returns false).
 */
bool cli_curl_hint(CURLcode cc, const char *err, const char *endpoint, bool have_cacert, bool have_cert,
		   buf_t *out)
{
	static const char *const plain_answer[] = {"wrong version number", "packet length too long",
						   "http request", "unknown protocol", NULL};
	static const char *const cert_needed[] = {"certificate required", "alert handshake failure",
						  "alert bad certificate", "peer did not return a certificate",
						  "unknown ca", "certificate unknown", NULL};
	static const char *const not_trusted[] = {"unable to get local issuer", "self signed", "self-signed",
						  "certificate verify failed", "unknown issuer",
						  "certificate has expired", NULL};
	static const char *const wrong_name[] = {"does not match", "no alternative certificate subject name",
						 NULL};
	bool https = strncmp(endpoint, "https://", 8) == 0;

	if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST) {
		buf_addf(out, "cannot connect to %s (%s): is the cluster running at %s? (--endpoint / AIS_ENDPOINT)",
			 endpoint, err, endpoint);
		return true;
	}
	if (cc == CURLE_SSL_CACERT_BADFILE) {
		buf_addf(out, "cannot use the CA bundle (%s): --cacert / AIS_CACERT must name a readable PEM file", err);
		return true;
	}
	if (cc == CURLE_SSL_CERTPROBLEM) {
		buf_addf(out, "cannot use the client certificate (%s): --cert FILE and --key FILE (AIS_CERT, AIS_KEY) "
			      "must name a PEM certificate and its private key", err);
		return true;
	}
	if (!https && (cc == CURLE_GOT_NOTHING || cc == CURLE_RECV_ERROR || cc == CURLE_WEIRD_SERVER_REPLY ||
		       cc == CURLE_UNSUPPORTED_PROTOCOL)) {
		buf_addf(out, "%s gave no HTTP answer (%s): does the cluster serve HTTPS? then use https:// in "
			      "--endpoint / AIS_ENDPOINT", endpoint, err);
		return true;
	}
	if (!https)
		return false;
	if (err_has(err, plain_answer)) {
		buf_addf(out, "%s does not speak TLS (%s): use http:// in --endpoint / AIS_ENDPOINT", endpoint, err);
		return true;
	}
	if (cc == CURLE_PEER_FAILED_VERIFICATION && err_has(err, wrong_name)) {
		buf_addf(out, "the cluster's certificate is not for this host name (%s): use the name or address "
			      "the certificate was made for in --endpoint", err);
		return true;
	}
	if (cc == CURLE_PEER_FAILED_VERIFICATION || err_has(err, not_trusted)) {
		buf_addf(out, "the cluster's certificate is not trusted (%s): pass --cacert FILE or set AIS_CACERT "
			      "(the CA that signed it)%s", err, have_cacert ? "; the --cacert given did not sign it" : "");
		return true;
	}
	if (err_has(err, cert_needed) ||
	    (!have_cert && (cc == CURLE_SSL_CONNECT_ERROR || cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR ||
			    cc == CURLE_GOT_NOTHING))) {
		buf_addf(out, "the cluster refused the TLS connection (%s): it requires a client certificate: "
			      "pass --cert FILE --key FILE (or set AIS_CERT, AIS_KEY)%s", err,
			 have_cert ? "; the one given was not accepted (signed by a CA the cluster trusts?)" : "");
		return true;
	}
	return false;
}

int cli_xfer_finish(struct cli_xfer *x, CURLcode cc)
{
	const struct cli_req *rq = x->rq;
	struct cli_resp *rs = x->rs;
	const char *url = x->url.ptr;
	const char *err = x->errbuf[0] ? x->errbuf : curl_easy_strerror(cc);
	int rc = AIS_ERR;

	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &rs->status);
	if (x->c->verbose) {
		char *eff = NULL;
		curl_easy_getinfo(x->h, CURLINFO_EFFECTIVE_URL, &eff);
		bool moved = eff && strcmp(eff, url) != 0;
		fprintf(stderr, "< %ld %s (%.3fs%s%s)\n", rs->status, rs->reason.ptr ? rs->reason.ptr : "",
			(double)(time_mono_ns() - x->t0) / 1e9, moved ? ", from " : "", moved ? eff : "");
	}

	if (cc == CURLE_OK || (cc == CURLE_WRITE_ERROR && x->range_ignored)) {
		rc = AIS_OK; /* the caller sees the status (not 206) and says why */
	} else if (rs->sink_errno) {
		cli_err("writing the download: %s", strerror(rs->sink_errno));
	} else if (cc == CURLE_OPERATION_TIMEDOUT) {
		cli_err("%s %s: timed out: %s", rq->method, url, err);
	} else if (cc == CURLE_SEND_FAIL_REWIND) {
		cli_err("%s %s: the server redirected the request after part of the body was sent, "
			"and standard input cannot be sent again; upload from a file instead",
			rq->method, url);
	} else {
		buf_t hint = BUF_INIT;
		if (cli_curl_hint(cc, err, x->c->endpoint, x->c->cacert != NULL, x->c->cert != NULL, &hint))
			cli_err("%s", hint.ptr);
		else
			cli_err("%s %s: %s", rq->method, url, err);
		buf_free(&hint);
	}
	curl_slist_free_all(x->hdrs);
	x->hdrs = NULL;
	buf_free(&x->url);
	return rc;
}

int cli_http(struct cli *c, const struct cli_req *rq, struct cli_resp *rs)
{
	struct cli_xfer x;
	cli_xfer_setup(c, c->curl, rq, rs, &x);
	CURLcode cc = curl_easy_perform(c->curl);
	return cli_xfer_finish(&x, cc);
}

int cli_http_check(const struct cli_resp *rs, const char *what)
{
	if (rs->status >= 200 && rs->status < 300)
		return AIS_OK;

	buf_t msg = BUF_INIT;
	if (rs->body.len) {
		json_t *j = json_loadb(rs->body.ptr, rs->body.len, 0, NULL);
		const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
		if (m && *m) {
			buf_addstr(&msg, m);
		} else if (!j) {
			/* Not JSON: the first line of the text, if it is text. */
			sv_t t = sv_of(&rs->body);
			while (t.len && (t.ptr[0] == '\n' || t.ptr[0] == '\r' || t.ptr[0] == ' '))
				t.ptr++, t.len--;
			const char *nl = memchr(t.ptr, '\n', t.len);
			size_t n = MIN(nl ? (size_t)(nl - t.ptr) : t.len, (size_t)300);
			while (n && (t.ptr[n - 1] == '\r' || t.ptr[n - 1] == ' '))
				n--;
			bool printable = n > 0;
			for (size_t i = 0; i < n && printable; i++)
				printable = (unsigned char)t.ptr[i] >= 0x20 || t.ptr[i] == '\t';
			if (printable)
				buf_addf(&msg, "%s: %.*s", what, (int)n, t.ptr);
		}
		json_decref(j);
	}
	if (!msg.len)
		buf_addf(&msg, "%s: %s", what,
			 rs->reason.len ? rs->reason.ptr
					: (rs->status == 404 ? "not found" : "request failed"));
	if (rs->status == 404)
		cli_err_notfound("%s (HTTP %ld)", msg.ptr, rs->status);
	else
		cli_err("%s (HTTP %ld)", msg.ptr, rs->status);
	buf_free(&msg);
	return AIS_ERR;
}
