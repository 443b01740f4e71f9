/*
 * httpc.h - outgoing HTTP for intra-cluster calls: libcurl's multi
 * interface driven by a libevent event_base, so an event loop never blocks
 * on a peer; and a small blocking helper for pool threads and tools.
 *
 * How a caller uses it:
 *  1. Each worker event loop owns one httpc_t (httpc_new on its base).
 *     Connections to peers stay open in the client's cache and are reused
 *     by later requests to the same host (at most max_host_conns at once;
 *     requests beyond that wait in curl's queue).
 *  2. httpc_start() sends a request described by an httpc_spec_t. The body
 *     comes from memory or from a pull callback; the response is buffered
 *     (up to max_resp bytes) or pushed to a write callback that can pause
 *     (AIS_AGAIN) until httpc_resume().
 *  3. The done callback runs exactly once per started request, unless the
 *     request is cancelled first (httpc_cancel: done never runs). After done
 *     returns the request is freed; take what you need inside done
 *     (httpc_body can be emptied with buf_detach or by swapping).
 *
 * Threads: everything except httpc_sync runs on the thread that drives the
 * client's event_base, and every callback (read, write, done) runs there
 * too. httpc_sync may be called from any thread and uses no event loop.
 *
 * Errors: a request "succeeds" (httpc_result() == AIS_OK) when a complete
 * response arrived, whatever its HTTP status; httpc_status() gives that
 * status. AIS_ERR means no complete response: httpc_error() says why in one
 * line that names the method and URL, httpc_errkind() classifies it.
 *
 * Retries: a request that failed to connect (or lost a reused connection
 * before any response byte) is tried again, up to `retries` more times with
 * exponential backoff, but only when its method is idempotent (GET, HEAD,
 * PUT, DELETE, OPTIONS) or HTTPC_F_RETRY is set, and never when its body is
 * streamed through a pull callback (the bytes cannot be replayed) or when
 * response bytes were already handed to a write callback. All attempts
 * share the request's one timeout. Redirects are never followed.
 */
#ifndef AISD_HTTPC_H
#define AISD_HTTPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"

struct event_base;
typedef struct httpc httpc_t;
typedef struct httpc_req httpc_req_t;

#define HTTPC_MAX_RESP_DEFAULT (64u << 20) /* buffered response bound */

typedef struct httpc_opts {
	uint64_t connect_timeout_ms; /* 0: 3000 */
	uint64_t timeout_ms;         /* whole request, retries included; 0: 30000 */
	long max_host_conns;         /* open connections per host; 0: 16 */
	long max_total_conns;        /* open connections in all; 0: no limit */
	const char *user_agent;      /* NULL: "aisd" (copied) */
	int retries;                 /* default for requests; 0: 2; < 0: none */
	uint64_t retry_backoff_ms;   /* first backoff, doubling, at most 1 s; 0: 20 */
} httpc_opts_t;

/*
 * Pull callback for a streamed request body: write up to cap bytes into p
 * and set *n. Returns AIS_OK (*n bytes given; 0 counts as AIS_AGAIN),
 * AIS_DONE (end of body; *n may hold a last piece), AIS_AGAIN (nothing now:
 * sending pauses until httpc_resume) or AIS_ERR (abort the request).
 */
typedef int (*httpc_read_fn)(httpc_req_t *r, void *arg, char *p, size_t cap, size_t *n);
/*
 * Push callback for a streamed response body (bytes of any status; check
 * httpc_status). Returns AIS_OK (all n bytes consumed), AIS_AGAIN (none
 * consumed: receiving pauses; after httpc_resume the same bytes come again)
 * or AIS_ERR (abort the request).
 */
typedef int (*httpc_write_fn)(httpc_req_t *r, void *arg, const char *p, size_t n);
typedef void (*httpc_done_fn)(httpc_req_t *r, void *arg);

enum {
	HTTPC_F_RETRY = 1 << 0,    /* retry even a non-idempotent method */
	HTTPC_F_NO_RETRY = 1 << 1, /* never retry */
	HTTPC_F_BIG_BUF = 1 << 2,  /* 512 KiB socket reads and body pieces (large bodies) */
};

typedef struct httpc_spec {
	const char *method;           /* "GET", "PUT", ... (copied) */
	const char *url;              /* http://host:port/path?query (copied) */
	const char *const *headers;   /* "Name: value" strings, NULL-terminated
				       * (copied); may be NULL */
	/* Request body: from memory (borrowed: valid until done or cancel), or
	 * streamed from read (read_len bytes, or chunked when read_len < 0).
	 * PUT, POST and PATCH always send a body (empty when none is given);
	 * any other method sends one when given one (a GET with a JSON body). */
	const void *body;
	size_t body_len;
	httpc_read_fn read;
	int64_t read_len;
	/* Response body: pushed to write, or buffered up to max_resp bytes
	 * (0: HTTPC_MAX_RESP_DEFAULT; a larger body fails with HTTPC_E_TOO_BIG). */
	httpc_write_fn write;
	uint64_t max_resp;
	/* The whole request: connect, retries, and the time a callback keeps
	 * it paused. 0: the client's default. */
	uint64_t timeout_ms;
	int retries;                  /* <= 0: the client's default */
	unsigned flags;               /* HTTPC_F_* */
	httpc_done_fn done;           /* required */
	void *arg;                    /* given to every callback */
} httpc_spec_t;

enum httpc_err {
	HTTPC_E_NONE = 0,
	HTTPC_E_CONNECT,   /* could not connect (refused, unreachable, resolve) */
	HTTPC_E_TIMEOUT,   /* the request's timeout passed */
	HTTPC_E_TOO_BIG,   /* buffered response over max_resp */
	HTTPC_E_ABORTED,   /* a read or write callback returned AIS_ERR */
	HTTPC_E_CLOSED,    /* httpc_free ran while the request was in flight */
	HTTPC_E_OTHER,     /* anything else (connection lost, bad URL, ...) */
};

typedef struct httpc_info {
	int64_t total_ns;    /* from httpc_start to done, retries included */
	int64_t connect_ns;  /* last attempt: until connected (0: reused) */
	int64_t ttfb_ns;     /* last attempt: until the first response byte */
	int attempts;        /* 1 + retries made */
	long new_conns;      /* connections the last attempt opened (0: reused) */
	int local_port;      /* of the last attempt's connection */
	uint64_t bytes_sent; /* request body bytes */
	uint64_t bytes_recv; /* response body bytes */
} httpc_info_t;

/* Creates a client on base (which the caller drives and outlives it).
 * o may be NULL for defaults. Never fails (out of memory aborts). */
httpc_t *httpc_new(struct event_base *base, const httpc_opts_t *o);
/* Completes every request in flight with HTTPC_E_CLOSED (their done runs
 * inside this call), closes the cached connections and frees c. Not to be
 * called from inside one of c's callbacks. */
void httpc_free(httpc_t *c);
/* Requests started and not yet completed or cancelled. */
size_t httpc_inflight(const httpc_t *c);

/*
 * httpc_start starts the request s describes and returns its handle, valid
 * until done returns or httpc_cancel. done never runs inside httpc_start:
 * a request that cannot even start (bad URL) completes with an error from
 * the event loop. Returns NULL only while c is being freed.
 */
httpc_req_t *httpc_start(httpc_t *c, const httpc_spec_t *s);
/* Lifts a pause (a read or write callback returned AIS_AGAIN); a no-op
 * when the request is not paused or has ended. From the loop thread,
 * anywhere but r's done: called inside a callback it takes effect as soon
 * as that callback returns; otherwise r's write callback may run inside
 * this call. */
void httpc_resume(httpc_req_t *r);
/* Stops r and frees it; its done never runs. May be called from any of c's
 * callbacks, r's own included (then r is freed after the callback returns);
 * a no-op in r's done (r is ending anyway). */
void httpc_cancel(httpc_req_t *r);

/* Accessors, valid in r's callbacks (status and headers once the response
 * head has arrived; the rest in done). */
int httpc_result(const httpc_req_t *r);        /* AIS_OK or AIS_ERR */
int httpc_status(const httpc_req_t *r);        /* HTTP status; 0: none */
enum httpc_err httpc_errkind(const httpc_req_t *r);
const char *httpc_error(const httpc_req_t *r); /* "" when none */
/* Value of the first response header called name (case-insensitive),
 * trimmed; {NULL, 0} when absent. Borrowed from r. */
sv_t httpc_resp_header(const httpc_req_t *r, const char *name);
/* Every response header as received: "Name: value\r\n" lines. */
sv_t httpc_resp_headers(const httpc_req_t *r);
/*
 * Walks "Name: value" lines (CRLF or LF; lines without a colon, such as a
 * status line, are skipped): the next header's name and trimmed value,
 * borrowed from *rest, which moves past it; false at the end.
 */
bool httpc_header_next(sv_t *rest, sv_t *name, sv_t *value);
/* The first header called name (case-insensitive) in such lines, trimmed;
 * {NULL, 0} when absent. */
sv_t httpc_header_find(sv_t headers, const char *name);
/* The buffered response body (empty when streamed); the caller may take it. */
buf_t *httpc_body(httpc_req_t *r);
const httpc_info_t *httpc_info(const httpc_req_t *r);
const char *httpc_method(const httpc_req_t *r);
const char *httpc_url(const httpc_req_t *r);

/*
 * TLS of every outgoing request, process-wide: ca is the PEM CA bundle
 * peers' certificates are verified against (NULL or "": the system's);
 * cert and key the client certificate presented to a peer that asks for
 * one (mTLS). Peers' names are always verified. Call once at start-up,
 * before any request; the strings are copied.
 */
void httpc_tls_set(const char *ca, const char *cert, const char *key);
/* Those settings (NULL when not set), for the transport's own TLS (xp.c). */
void httpc_tls_get(const char **ca, const char **cert, const char **key);
/* Whether the transport's blocking side (xsync.c) asks OpenSSL for kTLS on
 * its https connections (net.tls.ktls; off until set). */
void httpc_tls_ktls_set(bool on);
bool httpc_tls_ktls(void);
/* Applies those settings to a CURL easy handle made outside httpc. */
void httpc_easy_tls(void *curl_easy);
/*
 * The one place TLS options go onto a CURL easy handle (httpc's own and
 * the tools': aisctl, aisloader): CA bundle, client certificate and key
 * (each NULL or "" for none), and insecure to skip verifying the peer.
 */
void httpc_curl_tls(void *curl_easy, const char *ca, const char *cert, const char *key, bool insecure);
/*
 * Request signing, process-wide: the node registers a signer at start-up
 * (before any request), and every call httpc sends (httpc_start,
 * httpc_sync, the streams, the transport's PUTs) carries the header line
 * it writes, made anew for each attempt. The signer writes one line
 * "Name: value" (no CRLF) for method, url and body (NULL: streamed or
 * none) into out (outsz bytes, at most HTTPC_SIGN_MAX) and returns true,
 * or returns false (out empty) to send the call unsigned. Any thread.
 * NULL (the default): nothing is signed.
 */
#define HTTPC_SIGN_MAX 200
typedef bool (*httpc_signer_fn)(const char *method, const char *url, const void *body, size_t len, char *out,
				size_t outsz);
void httpc_set_signer(httpc_signer_fn fn);
/* The header line "X-Request-Id: ID" (LOG_REQID_HDR) of the request this
 * thread serves (log_request) into out, or "" when it serves none: every
 * call a node makes for a request carries the request's id on (the callee
 * takes it from a node it trusts: docs/api.md). Made when a call starts,
 * on the caller's thread. */
#define HTTPC_REQID_LINE_MAX 64
void httpc_reqid_line(char out[HTTPC_REQID_LINE_MAX]);
/* The registered signer's header line for a call, as above; false (out
 * empty) when none is registered or it signs nothing. */
bool httpc_sign(const char *method, const char *url, const void *body, size_t len, char *out, size_t outsz);

/*
 * httpc_sync sends one request and waits for the whole response, on the
 * calling thread (a pool thread or a tool; never an event loop). It keeps a
 * curl handle per thread, so consecutive calls to the same peer reuse the
 * connection; httpc_sync_release() (or thread exit) frees it. headers as in
 * httpc_spec_t; body (len bytes, borrowed) is sent for PUT/POST/PATCH or
 * when non-NULL. The response body (at most HTTPC_MAX_RESP_DEFAULT bytes)
 * replaces resp's content and *status is set.
 * Returns AIS_OK when a complete response arrived (any status), or AIS_ERR
 * with *status 0, the error message in resp and errno set: the system
 * error of the failed socket call when there was one (EMFILE, ENOMEM, ..:
 * a local shortage, httpc_local_errno), else ETIMEDOUT or EIO.
 */
int httpc_sync(const char *method, const char *url, const char *const *headers,
	       const void *body, size_t len, uint64_t timeout_ms, buf_t *resp, int *status);
void httpc_sync_release(void);
/* e is a shortage of this node's own (descriptors, memory, socket buffers:
 * EMFILE, ENFILE, ENOMEM, ENOBUFS), not a fault of the peer called. */
bool httpc_local_errno(int e);
/* Opens and closes a socket and counts the descriptors held: 0 when this
 * node can open sockets with room to spare, else the errno of the shortage
 * (httpc_local_errno) that stops it (EMFILE also when the descriptors held
 * are within a few of RLIMIT_NOFILE). A failed call followed by a failed
 * probe was this node's fault, not the peer's. */
int httpc_local_shortage(void);

/* A body handed over piece by piece (xs_get_to in xp.h): AIS_OK, or AIS_ERR
 * to end the transfer. */
typedef int (*httpc_sink_fn)(void *arg, const char *p, size_t n);
/* Makes every streamed transfer of this process (in flight or later, the
 * transport's blocking side included) fail at once: for a node that is
 * stopping. */
void httpc_stream_abort(void);

#endif
