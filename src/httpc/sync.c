/*
 * sync.c - the blocking client (httpc_sync) for pool threads and tools, and
 * what both clients share: the one-time curl setup and the options every
 * handle gets.
 *
 * Guarantees: each thread keeps one easy handle (created on first use, freed
 * at thread exit or by httpc_sync_release), so consecutive calls reuse the
 * connection; the response is bounded (HTTPC_MAX_RESP_DEFAULT); no signals
 * are used (safe in threaded programs).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "aisd/hlc.h"
#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "aisd/banned.h"

#define HTTPC_IO_BUFFER (256 * 1024)

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;

static void easy_destroy(void *e) { curl_easy_cleanup(e); }

static void global_init(void)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		fatalx("httpc: curl_global_init failed");
	if (pthread_key_create(&g_key, easy_destroy) != 0)
		fatalx("httpc: pthread_key_create failed");
}

void httpc_global_init(void) { pthread_once(&g_once, global_init); }

/* The one libcurl handle a thread keeps between its blocking transfers
 * (and so its connections): taken for a transfer, kept back after; a
 * transfer that finds it taken (one inside another) makes its own. The
 * thread-specific key frees it when the thread exits. */
CURL *httpc_easy_take(void)
{
	httpc_global_init();
	CURL *e = pthread_getspecific(g_key);
	pthread_setspecific(g_key, NULL);
	if (e)
		curl_easy_reset(e);
	else if (!(e = curl_easy_init()))
		fatalx("httpc: curl_easy_init failed");
	return e;
}

void httpc_easy_keep(CURL *e)
{
	if (pthread_getspecific(g_key))
		curl_easy_cleanup(e);
	else
		pthread_setspecific(g_key, e);
}

/* TLS of every outgoing request: set once at start-up, before any request
 * (httpc_tls_set), read without a lock afterwards. */
static char *g_tls_ca, *g_tls_cert, *g_tls_key;
static bool g_tls_ktls;

void httpc_tls_set(const char *ca, const char *cert, const char *key)
{
	g_tls_ca = ca && *ca ? xstrdup(ca) : NULL;
	g_tls_cert = cert && *cert ? xstrdup(cert) : NULL;
	g_tls_key = key && *key ? xstrdup(key) : NULL;
}

void httpc_tls_ktls_set(bool on) { g_tls_ktls = on; }

bool httpc_tls_ktls(void) { return g_tls_ktls; }

void httpc_tls_get(const char **ca, const char **cert, const char **key)
{
	*ca = g_tls_ca;
	*cert = g_tls_cert;
	*key = g_tls_key;
}

/* The signer: set once at start-up (httpc_set_signer), read without a
 * lock afterwards. */
static httpc_signer_fn g_signer;

void httpc_set_signer(httpc_signer_fn fn) { g_signer = fn; }

void httpc_reqid_line(char out[HTTPC_REQID_LINE_MAX])
{
	const char *id = log_request();
	out[0] = '\0';
	if (id && *id && strlen(id) < HTTPC_REQID_LINE_MAX - sizeof(LOG_REQID_HDR ": "))
		snprintf(out, HTTPC_REQID_LINE_MAX, LOG_REQID_HDR ": %s", id);
}

bool httpc_sign(const char *method, const char *url, const void *body, size_t len, char *out, size_t outsz)
{
	if (!g_signer) {
		if (outsz)
			out[0] = '\0';
		return false;
	}
	return g_signer(method, url, body, len, out, outsz);
}

void httpc_curl_tls(void *easy, const char *ca, const char *cert, const char *key, bool insecure)
{
	CURL *e = easy;
	if (ca && *ca)
		curl_easy_setopt(e, CURLOPT_CAINFO, ca);
	if (cert && *cert)
		curl_easy_setopt(e, CURLOPT_SSLCERT, cert);
	if (key && *key)
		curl_easy_setopt(e, CURLOPT_SSLKEY, key);
	if (insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
}

void httpc_easy_tls(void *easy)
{
	httpc_curl_tls(easy, g_tls_ca, g_tls_cert, g_tls_key, false);
}

void httpc_easy_common(CURL *e, const char *user_agent)
{
	httpc_easy_tls(e);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, (long)HTTPC_IO_BUFFER);
	curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, (long)HTTPC_IO_BUFFER);
	curl_easy_setopt(e, CURLOPT_USERAGENT, user_agent);
	/* the path goes out as written: an object named "a/../b" stays that
	 * name, and the cluster signature covers the bytes the peer reads */
	curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
}

/* hl with line set: a line of the same name ("Name:") replaced, else added. */
static struct curl_slist *slist_set(struct curl_slist *hl, const char *line)
{
	const char *colon = strchr(line, ':');
	size_t name = colon ? (size_t)(colon - line) + 1 : strlen(line);
	for (struct curl_slist *l = hl; l; l = l->next) {
		if (!strncmp(l->data, line, name)) {
			free(l->data);
			l->data = xstrdup(line);
			return hl;
		}
	}
	return curl_slist_append(hl, line);
}

void httpc_hlc_line(char *out, size_t outsz)
{
	snprintf(out, outsz, "%s: %lld", HLC_HEADER, (long long)hlc_peek());
}

struct curl_slist *httpc_intra_auth(struct curl_slist *hl, const char *method, const char *url, const void *body,
				    size_t len)
{
	char h[HTTPC_SIGN_MAX];
	httpc_hlc_line(h, sizeof(h)); /* the sender's clock, anew on a retry (hlc.h) */
	hl = slist_set(hl, h);
	if (!httpc_sign(method, url, body, len, h, sizeof(h)))
		return hl;
	/* a retry signs anew: the receiver takes each signature once, so the
	 * line of the same name is replaced */
	return slist_set(hl, h);
}

int httpc_idempotent(const char *m)
{
	return !strcmp(m, "GET") || !strcmp(m, "HEAD") || !strcmp(m, "PUT") ||
	       !strcmp(m, "DELETE") || !strcmp(m, "OPTIONS");
}

int httpc_body_method(const char *m)
{
	return !strcmp(m, "PUT") || !strcmp(m, "POST") || !strcmp(m, "PATCH");
}

typedef struct sync_io {
	const char *body;
	size_t len, off;
	buf_t *resp;
	bool too_big;
} sync_io_t;

static size_t sync_read(char *p, size_t size, size_t n, void *arg)
{
	sync_io_t *io = arg;
	size_t k = MIN(size * n, io->len - io->off);
	if (k)
		memcpy(p, io->body + io->off, k);
	io->off += k;
	return k;
}

static size_t sync_write(char *p, size_t size, size_t n, void *arg)
{
	sync_io_t *io = arg;
	size_t len = size * n;
	if (io->resp->len + len > HTTPC_MAX_RESP_DEFAULT) {
		io->too_big = true;
		return 0;
	}
	buf_add(io->resp, p, len);
	return len;
}

int httpc_sync(const char *method, const char *url, const char *const *headers,
	       const void *body, size_t len, uint64_t timeout_ms, buf_t *resp, int *status)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hl = NULL;
	sync_io_t io = {.body = body, .len = body ? len : 0, .resp = resp};
	bool has_expect = false;
	long code = 0;

	CURL *e = httpc_easy_take();
	*status = 0;
	buf_reset(resp);
	for (size_t i = 0; headers && headers[i]; i++) {
		if (strncasecmp(headers[i], "Expect:", 7) == 0)
			has_expect = true;
		hl = curl_slist_append(hl, headers[i]);
	}
	if (!has_expect)
		hl = curl_slist_append(hl, "Expect:");
	char rid[HTTPC_REQID_LINE_MAX];
	httpc_reqid_line(rid);
	if (rid[0])
		hl = curl_slist_append(hl, rid);
	hl = httpc_intra_auth(hl, method, url, body, body ? len : 0);

	httpc_easy_common(e, "aisd");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)MIN(timeout_ms ? timeout_ms : 3000, 3000));
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(timeout_ms ? timeout_ms : 30000));
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sync_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &io);
	curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)HTTPC_MAX_RESP_DEFAULT);
	if (body || httpc_body_method(method)) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, sync_read);
		curl_easy_setopt(e, CURLOPT_READDATA, &io);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)io.len);
	} else if (strcmp(method, "GET") == 0) {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	}

	CURLcode cc = curl_easy_perform(e);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hl);
	long oserr = 0;
	if (cc == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	else
		curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &oserr);
	httpc_easy_keep(e);
	if (cc != CURLE_OK) {
		buf_reset(resp);
		if (io.too_big || cc == CURLE_FILESIZE_EXCEEDED)
			buf_addf(resp, "%s %s: response body over %u bytes", method, url,
				 HTTPC_MAX_RESP_DEFAULT);
		else
			buf_addf(resp, "%s %s: %s", method, url,
				 errbuf[0] ? errbuf : curl_easy_strerror(cc));
		errno = cc == CURLE_OUT_OF_MEMORY ? ENOMEM
			: oserr                   ? (int)oserr
			: cc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT
							 : EIO;
		return AIS_ERR;
	}
	*status = (int)code;
	return AIS_OK;
}

bool httpc_local_errno(int e)
{
	return e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOBUFS;
}

/* Descriptors this process holds (/proc/self/fd), or -1 when it cannot
 * tell; *emfile when listing them needed one it could not get. */
static long open_fds(bool *emfile)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		*emfile = errno == EMFILE || errno == ENFILE;
		return -1;
	}
	long n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", ".." and the directory's own */
}

/* Descriptors below the limit that still count as being out of them: a
 * failed call and the probe are moments apart, and a descriptor another
 * thread closed in between must not turn our shortage into a peer's fault. */
#define FD_HEADROOM 8

int httpc_local_shortage(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return httpc_local_errno(errno) ? errno : 0;
	close(fd);
	struct rlimit rl;
	bool emfile = false;
	long n = open_fds(&emfile);
	if (emfile)
		return EMFILE;
	if (n >= 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (rlim_t)n + FD_HEADROOM >= rl.rlim_cur)
		return EMFILE;
	return 0;
}

void httpc_sync_release(void)
{
	xs_release(); /* the thread's transport connections too */
	httpc_global_init();
	CURL *e = pthread_getspecific(g_key);
	if (e) {
		curl_easy_cleanup(e);
		pthread_setspecific(g_key, NULL);
	}
}
