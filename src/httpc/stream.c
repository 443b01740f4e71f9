/*
 * stream.c - a blocking streamed transfer for pool and job threads: one file
 * PUT to several peers at once (httpc_sync_put_fd; GETs into a sink are the
 * transport's, xs_get_to in xsync.c), so memory per transfer is curl's
 * buffer, whatever the object size.
 *
 * Guarantees: every transfer is bounded by its timeout; a PUT of n URLs
 * reads the file with pread at its own offset per URL, so the copies go out
 * in parallel from one descriptor; error bodies are kept (at most 4 KiB) for
 * the caller's message; nothing is retried (the caller decides); after
 * httpc_stream_abort every transfer in flight or to come fails at once (a
 * stopping node does not wait for peers that are stopping too).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "internal.h"
#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define ERR_BODY_MAX 4096

struct xfer {
	CURL *e;
	struct curl_slist *hl;
	int fd;
	uint64_t off, len;
	buf_t *msg;
	char errbuf[CURL_ERROR_SIZE];
	buf_t *hdrs;
	bool reused; /* the handle goes back to the thread (httpc_easy_keep) */
};

static size_t fd_read(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t want = MIN(size * n, x->len - x->off);
	if (!want)
		return 0;
	ssize_t r;
	do
		r = pread(x->fd, p, want, (off_t)x->off);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return CURL_READFUNC_ABORT;
	x->off += (uint64_t)r;
	return (size_t)r;
}

static long code_of(CURL *e)
{
	long code = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	return code;
}

/* Response body: kept (bounded) for the error message. */
static size_t body_write(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	if (x->msg->len < ERR_BODY_MAX)
		buf_add(x->msg, p, MIN(len, ERR_BODY_MAX - x->msg->len));
	return len;
}

static size_t hdr_write(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	if (x->hdrs) {
		if (len >= 5 && !strncmp(p, "HTTP/", 5))
			buf_reset(x->hdrs); /* a new response head (after 100 Continue) */
		buf_add(x->hdrs, p, len);
	}
	return len;
}

static atomic_bool g_abort; /* httpc_stream_abort: the process is stopping */

void httpc_stream_abort(void)
{
	atomic_store(&g_abort, true);
}

bool httpc_stopping(void) { return atomic_load(&g_abort); }

static int xfer_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)arg, (void)dt, (void)dn, (void)ut, (void)un;
	return httpc_stopping() ? 1 : 0;
}

static void xfer_setup(struct xfer *x, const char *method, const char *url, const char *const *headers,
                       uint64_t timeout_ms, bool reuse)
{
	httpc_global_init();
	x->e = reuse ? httpc_easy_take() : curl_easy_init(); /* single transfers reuse the thread's handle */
	x->reused = reuse;
	if (!x->e)
		fatalx("httpc: curl_easy_init failed");
	for (size_t i = 0; headers && headers[i]; i++)
		x->hl = curl_slist_append(x->hl, headers[i]);
	x->hl = curl_slist_append(x->hl, "Expect:");
	x->hl = httpc_intra_auth(x->hl, method, url, NULL, 0); /* a file body: its checksum covers it */
	httpc_easy_common(x->e, "aisd");
	curl_easy_setopt(x->e, CURLOPT_URL, url);
	curl_easy_setopt(x->e, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(x->e, CURLOPT_CONNECTTIMEOUT_MS, (long)MIN(timeout_ms, 3000));
	curl_easy_setopt(x->e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(x->e, CURLOPT_HTTPHEADER, x->hl);
	curl_easy_setopt(x->e, CURLOPT_WRITEFUNCTION, body_write);
	curl_easy_setopt(x->e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->e, CURLOPT_HEADERFUNCTION, hdr_write);
	curl_easy_setopt(x->e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(x->e, CURLOPT_PRIVATE, x);
	curl_easy_setopt(x->e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(x->e, CURLOPT_XFERINFOFUNCTION, xfer_progress);
}

static void xfer_end(struct xfer *x, CURLcode cc, int *status)
{
	*status = 0;
	if (cc == CURLE_OK) {
		*status = (int)code_of(x->e);
	} else {
		char url[512] = "";
		char *u = NULL;
		curl_easy_getinfo(x->e, CURLINFO_EFFECTIVE_URL, &u);
		snprintf(url, sizeof(url), "%s", u ? u : "");
		buf_reset(x->msg);
		buf_addf(x->msg, "%s: %s", url, x->errbuf[0] ? x->errbuf : curl_easy_strerror(cc));
	}
	curl_easy_setopt(x->e, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(x->e, CURLOPT_ERRORBUFFER, NULL);
	if (x->reused)
		httpc_easy_keep(x->e);
	else
		curl_easy_cleanup(x->e);
	curl_slist_free_all(x->hl);
	x->e = NULL;
	x->hl = NULL;
}

int httpc_sync_put_fd(const char *const *urls, size_t n, const char *const *headers, int fd, uint64_t len,
                      uint64_t timeout_ms, int *status, buf_t *msgs)
{
	struct xfer *xs = xcalloc(n ? n : 1, sizeof(*xs));
	CURLM *mh = curl_multi_init();
	int running = 0, ok = 0;

	httpc_global_init();
	if (n == 1) { /* one copy: no multi handle, this thread's connection */
		struct xfer *x = &xs[0];
		x->fd = fd;
		x->len = len;
		x->msg = &msgs[0];
		buf_reset(x->msg);
		xfer_setup(x, "PUT", urls[0], headers, timeout_ms ? timeout_ms : 30000, true);
		curl_easy_setopt(x->e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(x->e, CURLOPT_CUSTOMREQUEST, "PUT");
		curl_easy_setopt(x->e, CURLOPT_READFUNCTION, fd_read);
		curl_easy_setopt(x->e, CURLOPT_READDATA, x);
		curl_easy_setopt(x->e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
		xfer_end(x, curl_easy_perform(x->e), &status[0]);
		curl_multi_cleanup(mh);
		free(xs);
		return status[0] == 200;
	}
	for (size_t i = 0; i < n; i++) {
		struct xfer *x = &xs[i];
		x->fd = fd;
		x->len = len;
		x->msg = &msgs[i];
		buf_reset(x->msg);
		status[i] = 0;
		xfer_setup(x, "PUT", urls[i], headers, timeout_ms ? timeout_ms : 30000, false);
		curl_easy_setopt(x->e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(x->e, CURLOPT_CUSTOMREQUEST, "PUT");
		curl_easy_setopt(x->e, CURLOPT_READFUNCTION, fd_read);
		curl_easy_setopt(x->e, CURLOPT_READDATA, x);
		curl_easy_setopt(x->e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
		curl_multi_add_handle(mh, x->e);
	}
	do {
		if (curl_multi_perform(mh, &running) != CURLM_OK)
			break;
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(mh, &left))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			struct xfer *x = NULL;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			CURLcode cc = m->data.result;
			curl_multi_remove_handle(mh, m->easy_handle);
			xfer_end(x, cc, &status[x - xs]);
			if (status[x - xs] == 200)
				ok++;
		}
		if (running)
			curl_multi_poll(mh, NULL, 0, 100, NULL);
	} while (running);
	for (size_t i = 0; i < n; i++) { /* only after a multi error */
		if (xs[i].e) {
			curl_multi_remove_handle(mh, xs[i].e);
			xfer_end(&xs[i], CURLE_FAILED_INIT, &status[i]);
		}
	}
	curl_multi_cleanup(mh);
	free(xs);
	return ok;
}
