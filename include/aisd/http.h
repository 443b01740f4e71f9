/*
 * http.h - the HTTP/1.1 server: worker threads with one event loop each,
 * a routing table, streamed request bodies, and responses from memory, from
 * a file (sendfile) or from a producer (chunked).
 *
 * How a handler sees a request:
 *  1. The dispatcher matched a route and checked method, body and size
 *     limits; for HTTP_ROUTE_JSON routes the whole body (<= max_body) is
 *     already in req->body.
 *  2. The handler answers at once (http_resp_*), or sets req->on_body and
 *     req->on_body_end to receive a streamed body, or starts blocking work
 *     with http_offload and answers from its completion.
 *  3. Everything the request allocates lives in req->arena and is released
 *     when the response is done; register cleanups there.
 * All handler callbacks run on the request's worker thread; only the work
 * function given to http_offload (http_offload_net) runs on an I/O
 * (network) pool thread, and while it runs nothing else touches the
 * request.
 */
#ifndef AISD_HTTP_H
#define AISD_HTTP_H

#include <http_parser.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "aisd/arena.h"
#include "aisd/buf.h"
#include "aisd/log.h"
#include "aisd/pool.h"

struct event_base;
typedef struct http_server http_server_t;
typedef struct http_req http_req_t;
typedef struct http_conn http_conn_t;
typedef struct http_tls http_tls_t;

/* A route's handler: AIS_OK when it answered or will (from its http_offload
 * completion or its body callbacks), AIS_ERR after answering with an
 * error. An AIS_ERR with no answer begun and nothing pending is answered
 * 500 by the dispatcher (and logged as an error). The authz hooks below
 * have the type too, with their own contract. */
typedef int (*http_handler_fn)(http_req_t *req);
/* Body bytes, in order. Must consume all n bytes (copy them). Returns AIS_OK
 * to go on, AIS_ERR after answering with an error (the rest of the body is
 * not read and the connection closes after the response). p NULL: the n
 * bytes went into the handler's pipe instead (http_req_splice_to). */
typedef int (*http_body_fn)(http_req_t *req, const char *p, size_t n);
/* How many more body bytes the handler can take now; 0 pauses reading until
 * http_req_resume(). Optional (NULL: unlimited). */
typedef size_t (*http_room_fn)(http_req_t *req);
typedef void (*http_end_fn)(http_req_t *req);
/* Producer of a streamed response body: append to out and return AIS_OK
 * (more to come), AIS_AGAIN (nothing now; call http_resp_stream_wake later),
 * AIS_DONE (finished; out may hold a last piece) or AIS_ERR (abort: close). */
typedef int (*http_fill_fn)(http_req_t *req, buf_t *out);
typedef void (*http_work_fn)(http_req_t *req);

#define HTTP_M(m) (1u << (m))

enum {
	HTTP_ROUTE_BODY = 1 << 0, /* may have a streamed request body */
	HTTP_ROUTE_JSON = 1 << 1, /* small body buffered whole into req->body */
	HTTP_ROUTE_NOLIMIT = 1 << 2, /* not subject to the per-client rate limit
				      * (health, cluster and node control, scrapes) */
	HTTP_ROUTE_PUBLIC = 1 << 3,  /* no credentials asked (health), whatever
				      * the server's authz hook says */
	HTTP_ROUTE_S3 = 1 << 4,      /* what the server refuses by itself (429 over
				      * the rate, 503 over the descriptor budget)
				      * is answered through the refuse_s3 hook */
};

typedef struct http_route {
	const char *prefix; /* matches the path itself or prefix + "/..."; "/" (last):
			     * every path, unless an earlier route matched the
			     * path but not the method (405 then) */
	unsigned methods;   /* HTTP_M(HTTP_GET) | ... */
	unsigned flags;     /* HTTP_ROUTE_* */
	uint64_t max_body;  /* HTTP_ROUTE_JSON: largest body accepted (413) */
	http_handler_fn handler;
	const char *doc;    /* one line, for logs and --help */
	unsigned fds;       /* descriptors a request may hold besides its connection
			     * (files, pipes, relay sockets), at most: taken from
			     * the server's descriptor budget when it is dispatched,
			     * given back when it completes (503 when the budget
			     * lacks them: the handler does not run) */
} http_route_t;

typedef struct http_hdr {
	sv_t name, value;
} http_hdr_t;

struct http_req {
	arena_t *arena;
	enum http_method method;
	sv_t target;    /* raw request-target */
	sv_t path;      /* raw path, percent-encoded */
	sv_t query;     /* raw query string (after '?'), may be empty */
	sv_t subpath;   /* path after the route prefix and its '/', encoded */
	http_hdr_t *hdrs;
	size_t nhdrs;
	int64_t content_length; /* -1: none given (chunked or no body) */
	bool chunked;
	bool has_body;
	const http_route_t *route;
	void *ctx;        /* the server's context (http_server_new) */
	void *state;      /* the handler's own */
	buf_t body;       /* HTTP_ROUTE_JSON: the whole body */
	uint64_t body_read; /* body bytes delivered so far */
	int64_t start_ns;
	uint64_t id;      /* request id, unique per process */
	const void *auth; /* who the authz hook let in (src/auth/authz.c); NULL: no hook, or public */
	char id_str[32];  /* as sent in X-Request-Id: random per-process prefix + id, hex */

	http_body_fn on_body;
	http_room_fn on_room;
	http_end_fn on_body_end;

	http_conn_t *conn;
	pool_task_t task;
	http_work_fn work_fn, done_fn;
	void (*on_done)(http_req_t *req, void *arg); /* http_req_on_done */
	void *on_done_arg;
};

/* Local descriptor hand-over (see http_server_opts_t.unix_path). */
#define HTTP_HDR_LOCAL_FD "Ais-Local-Fd"               /* request: "true" */
#define HTTP_HDR_LOCAL_FD_OFFSET "Ais-Local-Fd-Offset" /* answer: the body's first byte in the file */
#define HTTP_HDR_LOCAL_FD_SIZE "Ais-Local-Fd-Size"     /* answer: the body's length */
#define HTTP_HDR_LOCAL_SOCKET "Ais-Local-Socket"       /* answer to a TCP client of this host: the path */

typedef struct http_server_opts {
	const char *host;
	int port;               /* 0: any free port (see http_server_port) */
	int workers;            /* event loops */
	int io_threads;         /* the I/O pool: disk work (0: 4) */
	int net_threads;        /* the network pool: work waiting on other nodes (0: 16) */
	uint64_t max_conns;     /* 0: derived from the descriptor limit (fd_reserve kept free) */
	uint64_t max_conns_per_client; /* connections of one client address at once (0: a quarter of the
					* connection limit, at least 16); cluster nodes are exempt (is_peer) */
	uint64_t fd_reserve;    /* descriptors kept for files, databases and peers (0: 256) */
	uint64_t max_buffered;  /* HTTP_ROUTE_JSON bodies held at once, all connections (503 beyond); 0: 256 MiB */
	uint64_t max_header_bytes;
	uint64_t header_timeout_ms, idle_timeout_ms, body_timeout_ms;
	uint64_t max_body;      /* HTTP_ROUTE_BODY: largest request body (413); 0 none */
	uint64_t rate_limit;    /* requests per second per client address and worker; 0 off */
	uint64_t rate_burst;    /* bucket size (0: rate_limit) */
	const http_route_t *routes;
	size_t nroutes;
	void *ctx;
	/* HTTPS: PEM paths of the certificate chain and its key (NULL or "":
	 * plain HTTP); client_ca: require client certificates it signed (mTLS);
	 * ktls: let the kernel encrypt where it can (kTLS + SSL_sendfile). */
	const char *tls_cert, *tls_key, *tls_client_ca;
	bool tls_ktls;
	/* A unix socket (path; NULL or "": none) for clients on this host: a
	 * request on it asking "Ais-Local-Fd: true" gets a file body as an
	 * open descriptor (SCM_RIGHTS) instead of its bytes; TCP clients from
	 * this host learn the path from "Ais-Local-Socket" on file bodies. */
	const char *unix_path;
	bool unix_optional;     /* a unix socket that cannot be made is logged, not fatal */
	/* Access control, once per request after routing and before the body
	 * is read or the handler runs (not for HTTP_ROUTE_PUBLIC routes).
	 * Returns AIS_OK to go on, or AIS_ERR after answering (401, 403).
	 * NULL: everyone may do everything. */
	http_handler_fn authz;
	/* Then, right before the handler runs (for HTTP_ROUTE_JSON routes with
	 * the whole body in req->body): AIS_OK, or AIS_ERR answered (a body
	 * other than the one a signature bound). NULL: nothing. */
	http_handler_fn authz_body;
	/* Whether a client address (numeric, as inet_ntop writes it) is a node
	 * of the cluster: its connections are not held to the per-client cap.
	 * Asked only for a client at its cap; NULL: none is. */
	bool (*is_peer)(void *ctx, const char *addr);
	/* Whether a request is the cluster's own call (authz_cluster_call):
	 * it is not held to the per-client rate (net.rate_limit) and takes
	 * no token from its address. Asked only while a rate is set; NULL:
	 * none is. */
	bool (*is_cluster_call)(http_req_t *req);
	/* Answers a refusal on an HTTP_ROUTE_S3 route (an S3 error document
	 * with code and msg). NULL: JSON, as on every other route. */
	void (*refuse_s3)(http_req_t *req, int status, const char *code, const char *msg);
} http_server_opts_t;

/* The options a node's config sets (net.*, io.*): every field the config
 * holds; the caller adds routes, ctx, fd_reserve, the unix socket and the
 * authz hooks. */
struct conf;
void http_server_opts_conf(http_server_opts_t *o, const struct conf *c);
/* Binds the listeners (SO_REUSEPORT, one per worker) and starts the worker
 * threads. Returns NULL with a message in err on failure. */
http_server_t *http_server_new(const http_server_opts_t *o, buf_t *err);
int http_server_port(const http_server_t *s);
/* The connection limit in force (net.max_conns, or what the descriptor
 * limit leaves). */
uint64_t http_server_max_conns(const http_server_t *s);
/* The descriptor budget: descriptors that connections and the requests on
 * them (http_route_t.fds) may hold at once, and how many they hold now. */
uint64_t http_server_fd_budget(const http_server_t *s, uint64_t *held);
/* The per-client connection cap in force (net.max_conns_per_client). */
uint64_t http_server_max_conns_per_client(const http_server_t *s);
/* Requests with method m answered so far on the routes with this prefix,
 * summed over the workers (relaxed reads: for sampling a rate). */
uint64_t http_server_answered(http_server_t *s, const char *prefix, enum http_method m);
/* Stops accepting, closes connections, joins workers and the I/O pool. */
void http_server_free(http_server_t *s);
pool_t *http_server_pool(http_server_t *s);
/* HTTPS: reads the certificate, key and client CA files again; new
 * connections use them, open ones go on with the old ones. Returns AIS_OK,
 * or AIS_ERR with a message in err (the old certificate stays). AIS_DONE
 * when the server is plain HTTP. */
int http_server_reload_tls(http_server_t *s, buf_t *err);
bool http_server_tls(const http_server_t *s);

/* TLS contexts (tls.c), used by the server through its options. */
http_tls_t *http_tls_new(const char *cert, const char *key, const char *client_ca, bool ktls, buf_t *err);
int http_tls_reload(http_tls_t *t, buf_t *err);
void http_tls_free(http_tls_t *t);
/* Whether the kernel offers kTLS ("tls" in tcp_available_ulp). */
bool http_tls_ktls_offered(void);
/* Changes the per-client rate limit at run time (0: off). */
void http_server_set_rate_limit(http_server_t *s, uint64_t per_sec, uint64_t burst);
void http_server_rate_limit(http_server_t *s, uint64_t *per_sec, uint64_t *burst);
/* Counts the request as one of its client address's jobs (work much
 * larger than the request: GetBatch) until it completes. false, nothing
 * counted, when the address has max running already (0: no limit); nodes
 * of the cluster and clients on the unix socket are not held to it. */
bool http_req_client_job(http_req_t *req, uint64_t max);
/* The server a request arrived on. */
http_server_t *http_req_server(const http_req_t *req);

/* Request helpers. */
sv_t http_req_header(const http_req_t *req, const char *name);
bool http_req_has_header(const http_req_t *req, const char *name);
/* Removes every header named name from the request (the authz hook's
 * node headers that nobody vouched for): later lookups do not find it. */
void http_req_header_drop(http_req_t *req, const char *name);
/* Whether the request's client address is a node of the cluster (the
 * server's is_peer hook, asked once per connection, and again at most
 * every second while the answer is no; never for the unix socket). */
bool http_req_from_node(http_req_t *req);
/* The request's client address, numeric as inet_ntop writes it ("unix"
 * for the unix socket); valid while the request is. */
const char *http_req_peer(const http_req_t *req);
/* Whether the request came over TLS. */
bool http_req_tls(const http_req_t *req);
/* The header of request ids: every answer carries the request's id in it,
 * and the node's own calls made for a request send it (httpc), so one id
 * follows a request through every node it touches. */
#define HTTP_REQID_HDR LOG_REQID_HDR
#define HTTP_REQID_MAX 31 /* the longest id (id_str holds it) */
/* Whether id may be a request's id: 1 to HTTP_REQID_MAX letters, digits
 * and "._:-" (it goes into log lines and headers as it is). */
bool http_reqid_valid(sv_t id);
/* The request takes id (a caller's, whom the authz hook trusts) instead of
 * the one it was given: its answers and log lines carry it from now on.
 * False, nothing changed, when id is not valid (http_reqid_valid). */
bool http_req_adopt_id(http_req_t *req, sv_t id);
/* A trailer field of a chunked request body, once the body ended (in
 * on_body_end and later); {NULL, 0} when absent. */
sv_t http_req_trailer(const http_req_t *req, const char *name);
/* Query parameter by (decoded) key; *out is decoded into the arena.
 * Returns true if present. */
bool http_query_get(http_req_t *req, const char *key, sv_t *out);
/* Takes the next "key=value" pair off the raw query q: *key and *val are
 * views into it, still percent-encoded. Without an '=', val is empty and
 * starts where key ends, so an empty pair ("a&&b") is key.len == 0 &&
 * val.ptr == key.ptr. Returns false when q is empty. */
bool http_query_next(sv_t *q, sv_t *key, sv_t *val);
/* Percent-decodes in into the arena ('+' as space if plus_space).
 * Returns AIS_OK, or AIS_ERR on a malformed escape. */
int http_pct_decode(arena_t *a, sv_t in, bool plus_space, sv_t *out);
const char *http_method_name(enum http_method m);
/* Re-enables reading a paused body (after on_room returned 0, or a full
 * pipe of http_req_splice_to). A no-op while the body is not paused. */
void http_req_resume(http_req_t *req);
/* A handler that holds its body in memory (an S3 XML document) takes n
 * more bytes of the server's budget of buffered bodies (net.max_buffered_
 * body, shared with the JSON routes); they are given back when the request
 * ends. false: the budget has no room, nothing is taken (answer 503). */
bool http_req_buffer_take(http_req_t *req, uint64_t n);
/* The server's budget of buffered bodies, bytes (net.max_buffered_body). */
uint64_t http_req_buffer_max(const http_req_t *req);
/* From the handler, before the body is read: the rest of a sized body on
 * a plain TCP connection is moved from the client's socket into the pipe
 * whose write end is pipe_wfd (the handler's, non-blocking, open until the
 * request ends) by splice(2) instead of being read: no byte in user space.
 * on_body then runs with p NULL and n the bytes just put in the pipe;
 * bytes that came with the head still arrive first, with p set. on_room
 * bounds each splice as it bounds reads; when the pipe is full (splice
 * takes nothing while it holds bytes) the body pauses as if on_room had
 * said 0, and the handler resumes it (http_req_resume) once it took bytes
 * out: a handler must take bytes out whenever the pipe holds some. Bytes
 * that splice(2) will not move into an empty pipe are written into it
 * (at most 16 KiB at a time), also with p NULL. The body timeout, a client
 * that closes mid-body (the connection closes, the request's arena is
 * released) and Expect: 100-continue work as for a read body. false when
 * it cannot (TLS, a chunked body, no body): the body is read as before. */
bool http_req_splice_to(http_req_t *req, int pipe_wfd);
/* Runs work(req) on an I/O pool thread, then done(req) on the request's
 * worker. Nothing may touch req in between. For work bounded by this
 * node's disks only. */
void http_offload(http_req_t *req, http_work_fn work, http_work_fn done);
/* The same on the network pool: for work that waits on other nodes (calls
 * to peers, fan-outs, copies sent), so that stalled peers never hold the
 * I/O pool's threads. */
void http_offload_net(http_req_t *req, http_work_fn work, http_work_fn done);

/* Calls fn(req, arg) on the request's worker once it is complete (its
 * answer sent), before its arena is reset: what was answered is still
 * readable then (http_resp_info). One per request (a second replaces the
 * first); not called for a request whose connection closed before its
 * answer was complete. */
void http_req_on_done(http_req_t *req, void (*fn)(http_req_t *req, void *arg), void *arg);
/* The answer so far: status (0: none yet), body bytes sent (the head not
 * counted), and the value of a header it set (relayed ones too; ptr NULL
 * when none). */
typedef struct http_resp_info {
	int status;
	uint64_t body_out;
} http_resp_info_t;
void http_resp_info(const http_req_t *req, http_resp_info_t *out);
sv_t http_resp_header_get(const http_req_t *req, const char *name);

/* Response. Set status and headers, then exactly one of the send calls. */
void http_resp_status(http_req_t *req, int status);
void http_resp_header(http_req_t *req, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, with the value as it is (no formatting; CR, LF and NUL in it
 * become spaces). */
void http_resp_header_sv(http_req_t *req, sv_t name, sv_t value);
/* The same with a string or a number, for the headers of every answer:
 * no printf on the path of a small GET. */
void http_resp_header_str(http_req_t *req, const char *name, const char *value);
void http_resp_header_i64(http_req_t *req, const char *name, int64_t value);
/* Copies len bytes. */
void http_resp_send(http_req_t *req, const void *body, size_t len);
/* Takes b's memory; a big body is sent from it as http_resp_send_ref
 * sends (not copied). */
void http_resp_send_buf(http_req_t *req, buf_t *b);
/* Sends len bytes from body without copying them (plain connections: the
 * head and they go in one sendmsg; over TLS a body under 16 KiB is
 * copied, a bigger one written after the head): body must
 * stay valid and unchanged until the request ends (its arena is reset), e.g.
 * memory an arena cleanup of the request lets go of. */
void http_resp_send_ref(http_req_t *req, const void *body, size_t len);
/* Sends len bytes of fd from off with sendfile; takes fd (closes it).
 * Disk reads never block the event loop (page-cache residency is checked
 * and cold ranges are read ahead on the I/O pool). */
void http_resp_send_file(http_req_t *req, int fd, off_t off, uint64_t len);
/* For HEAD: headers with Content-Length: len, no body. */
void http_resp_send_head(http_req_t *req, uint64_t len);
/* Streamed body (chunked on HTTP/1.1). */
void http_resp_send_stream(http_req_t *req, http_fill_fn fill);
void http_resp_stream_wake(http_req_t *req);
/* Streamed body of exactly len bytes, sent with Content-Length (not
 * chunked); a producer that fails (AIS_ERR) closes the connection, so the
 * client sees a short body. */
void http_resp_send_stream_len(http_req_t *req, http_fill_fn fill, uint64_t len);
/* Inside a fill callback that returns AIS_OK: after what fill appended, the
 * stream carries len bytes of fd from off, sent like a file body (sendfile,
 * cold ranges read ahead on the I/O pool); fill is called again once they
 * are out. Takes fd (closes it). */
void http_resp_stream_file(http_req_t *req, int fd, off_t off, uint64_t len);
/* Inside a fill callback that returns AIS_OK: after what fill appended, the
 * stream carries the len bytes that the pipe whose read end is fd holds,
 * moved to the client by splice(2); fill is called again once they are
 * out. fd stays the caller's (open until the response ends). Only where
 * http_resp_can_splice(req) (plain TCP, no TLS). */
void http_resp_stream_pipe(http_req_t *req, int fd, uint64_t len);
bool http_resp_can_splice(const http_req_t *req);
/* The event_base of the worker that owns req (for httpc and timers whose
 * callbacks must run on the request's thread). */
struct event_base *http_req_base(const http_req_t *req);
/* Runs fn(arg) when the server stops, after req's worker loop ended and its
 * connections were freed, before its event_base is freed: for per-worker
 * state kept across requests (an httpc client). Call on req's worker. */
void http_worker_atexit(http_req_t *req, void (*fn)(void *), void *arg);
/* Appends target (a request-target) with the values of signature
 * parameters (presigned S3 URLs, signed redirects) replaced by REDACTED:
 * the one form in which any log line shows a request-target. */
void http_target_redact(sv_t target, buf_t *out);
/* JSON error body {"message": ..., "status": N}; a 5xx is logged (a
 * warning, with the target as http_target_redact writes it). */
void http_resp_error(http_req_t *req, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool http_resp_started(const http_req_t *req);
const char *http_status_text(int status);

/*
 * http_range_parse reads a Range header value for a body of size bytes:
 * "bytes=a-b", "bytes=a-", "bytes=-n". Returns AIS_OK with *start and
 * *len set (a satisfiable single range), AIS_DONE when the header is to be
 * ignored (absent, not bytes, malformed, or several ranges: serve it all),
 * or AIS_ERR when the range cannot be satisfied (416).
 */
int http_range_parse(sv_t h, uint64_t size, uint64_t *start, uint64_t *len);

#endif
