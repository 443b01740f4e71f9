/*
 * internal.h - what the files of src/http share: the worker, the
 * connection and its state machine. Not for use outside src/http.
 */
#ifndef AISD_HTTP_INTERNAL_H
#define AISD_HTTP_INTERNAL_H

#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/socket.h>
#include <unistd.h>

#include "aisd/http.h"
#include "aisd/http_parse.h"

#define REQ_OF_TASK(t) ((http_req_t *)((char *)(t) - offsetof(http_req_t, task)))
#define HTTP_READ_CHUNK (256 * 1024) /* body bytes read per read(2) */
#define HTTP_HEAD_CHUNK 4096         /* head bytes read per read(2) */
#define HTTP_SMALL_FILE (64 * 1024)  /* file bodies up to this are copied */
#define HTTP_FILE_CHUNK (2 * 1024 * 1024)
#define HTTP_SPLICE_MAX (1 << 20)    /* request body bytes per splice(2) into a handler's pipe */
#define HTTP_SPLICE_RCVBUF (2 << 20) /* the receive buffer of a socket whose body is spliced (SO_RCVBUF) */
#define HTTP_SPLICE_COPY (16 << 10)  /* body bytes copied into an empty pipe that splice(2) would not fill */
#define HTTP_SPLICE_LOWAT (256 << 10) /* splicing a body: the socket wakes the loop with this much (SO_RCVLOWAT) */
#define HTTP_PIECE_REF (16 * 1024)   /* stream pieces from this size are written from their buffer */
#define HTTP_TLS_PIECE (256 * 1024) /* HTTPS without kTLS: file bytes per SSL_write */
#define HTTP_DRAIN_SECS 10 /* a stopping server waits this long for requests */
#define HTTP_DRAIN_HEAD_MS 1000 /* ... and this long for the rest of a head begun */
#define HTTP_DISCARD_MAX (1 << 20)   /* unwanted body bytes drained at most */
#define HTTP_LINGER_MS 2000          /* CS_LINGER: how long a closing connection drains */
#define HTTP_LINGER_MAX (8 << 20)    /* CS_LINGER: bytes drained at most */
#define HTTP_EMFILE_PAUSE_MS 100     /* no accepts this long after EMFILE/ENFILE */
#define HTTP_EMFILE_LOG_SECS 10      /* one log line per this many seconds of them */
#define CL_BUCKETS 4096              /* climit.c: hash chains of client addresses (power of two) */

struct worker_atexit {
	void (*fn)(void *);
	void *arg;
	struct worker_atexit *next;
};

/*
 * A worker's counters (metrics.c). Only the worker writes them (a relaxed
 * load and store, no lock, no atomic read-modify-write); a scrape reads
 * every worker's and sums. Route index HM_ROUTES is "no route matched".
 */
#define HM_ROUTES 32
#define HM_METHODS 6 /* GET HEAD PUT POST DELETE other */
#define HM_BUCKETS 17 /* 16 latency bounds, then +Inf */
typedef _Atomic uint64_t hm_ctr_t;
struct http_wstats {
	hm_ctr_t req[HM_ROUTES + 1][HM_METHODS][5]; /* by status class 1xx..5xx */
	hm_ctr_t lat[HM_ROUTES + 1][HM_METHODS][HM_BUCKETS];
	hm_ctr_t lat_us[HM_ROUTES + 1][HM_METHODS];
	hm_ctr_t bytes_in, bytes_out;
	hm_ctr_t accepted, rejected;
	hm_ctr_t fds_passed; /* file bodies handed over as descriptors */
	hm_ctr_t spliced;    /* response bytes spliced from a pipe (a relay's) */
	hm_ctr_t spliced_in; /* request body bytes spliced into a handler's pipe */
	hm_ctr_t served_local, served_net; /* body bytes to clients on this host (incl. descriptors) / elsewhere */
	hm_ctr_t parse_errors, timeouts, aborted, rate_limited, too_large;
	hm_ctr_t evicted, emfile;
	hm_ctr_t fd_refused;    /* requests answered 503: the descriptor budget lacked their route's fds */
	hm_ctr_t client_capped; /* connections refused: their address was at net.max_conns_per_client */
};
#define HM_INC(x, n) \
	atomic_store_explicit(&(x), atomic_load_explicit(&(x), memory_order_relaxed) + (n), memory_order_relaxed)

struct worker {
	http_server_t *srv;
	int idx;
	struct event_base *base;
	pthread_t thread;
	int lfd;
	struct event *lev;
	struct event *uev; /* the unix socket's listener (shared by every worker) */
	int efd; /* eventfd: offload completions and stop */
	struct event *eev;
	pthread_mutex_t mu;
	http_req_t *done_head, *done_tail; /* completed offloads (task.next) */
	bool stopping;      /* set by http_server_free (under mu) */
	bool draining;      /* worker-local: no accepts; close when idle */
	http_conn_t *conns; /* all connections of this worker, newest first */
	http_conn_t *conns_tail; /* ... and the oldest */
	struct event *pause_ev; /* accepts paused after EMFILE/ENFILE: resumes them */
	atomic_int evict_wanted; /* idle connections other workers asked it to close (on_wake) */
	bool accept_paused;
	char date[40];
	int64_t date_sec;
	struct worker_atexit *atexit; /* http_worker_atexit, last first */

	struct http_wstats st;
	struct rl_slot *rl; /* rate-limit buckets by client address (ratelimit.c) */
};

struct http_server {
	http_server_opts_t o;
	int port;
	int nworkers;
	struct worker *workers;
	pool_t *pool;  /* disk work (io.threads) */
	pool_t *npool; /* work that waits on other nodes (io.net_threads) */
	atomic_ulong nconns;
	/* The descriptor budget: what connections (one each) and the requests
	 * on them (their route's fds, from dispatch to completion) hold, at
	 * most fd_budget; requests that take descriptors stop fd_headroom
	 * short of it (nodes of the cluster excepted), so that a connection for
	 * a request that takes none (health, control) still finds one. */
	_Atomic uint64_t fds;
	uint64_t fd_budget, fd_headroom;
	/* Connections per client address (climit.c). */
	uint64_t max_per_client;
	pthread_mutex_t cl_mu;
	struct cl_entry *cl_tab[CL_BUCKETS];
	_Atomic uint64_t buffered; /* HTTP_ROUTE_JSON body bytes reserved, all connections */
	_Atomic int64_t emfile_logged; /* when the last EMFILE line was logged (s) */
	_Atomic uint64_t emfile_count; /* EMFILE/ENFILE since then */
	atomic_ulong next_id;
	uint32_t id_prefix; /* random: request ids differ across processes */
	_Atomic uint64_t rate, burst; /* per-client rate limit (ratelimit.c) */
	http_tls_t *tls; /* NULL: plain HTTP (tls.c) */
	int ufd;         /* the unix socket's listener, or -1 */
	int port_fd;     /* the port's claim (server.c: port_claim), or -1 */
	char *unix_path; /* its path, or NULL */
};

/*
 * The connection state machine. Each state in one line:
 *   CS_HEAD   reading a request head (idle and header timeouts apply)
 *   CS_BODY   the handler has the head; reading the body into it until the
 *             message ends (for a bodiless request that is at once)
 *   CS_WAIT   message read; waiting for the handler to answer (offload)
 *   CS_WRITE  writing the response (head, then memory, file or stream)
 *   CS_LINGER an error answered before the client finished sending: our
 *             side is shut down, and what the client still sends is read
 *             and dropped (for HTTP_LINGER_MS, up to HTTP_LINGER_MAX bytes)
 *             so that the kernel does not reset the connection and destroy
 *             the response before the client has read it
 *   CS_CLOSED socket closed; freed when no offload is in flight
 * conn_run() is the only driver: every event (readable, writable, timer,
 * offload completion, resume, response ready) calls it, and it advances
 * states until it must wait; each state's step is one function of conn.c.
 */
enum conn_state { CS_HEAD, CS_BODY, CS_WAIT, CS_WRITE, CS_LINGER, CS_CLOSED };

/*
 * The request body's reader (c->bstate), one line each:
 *   BS_FEED    bytes go to the handler's on_body, as much as its on_room
 *              allows (dropped once it answered); also between requests;
 *              with bpipe, once the bytes read with the head are fed, the
 *              rest is spliced from the socket into the handler's pipe
 *   BS_PAUSED  on_room said 0, or bpipe is full (holds bytes and takes no
 *              more): nothing is read until http_req_resume
 *   BS_LATER   the handler went to the pool before saying whether it wants
 *              the body: nothing is read until its task is back
 *   BS_JSON    buffered into req->body (HTTP_ROUTE_JSON, within the
 *              server's budget); the handler runs at the message end
 *   BS_DISCARD unwanted: read and dropped, up to HTTP_DISCARD_MAX, then 413
 *   BS_REFUSED over a limit (c->refusal says which): dropped; answered 413
 *              (503 over the budget) after the feed that found it, then close
 *   BS_DONE    the message was read to its end, or no more of it will be
 */
enum body_state { BS_FEED, BS_PAUSED, BS_LATER, BS_JSON, BS_DISCARD, BS_REFUSED, BS_DONE };
enum body_refusal {
	BR_MAX_BODY,  /* the body passed net.max_body: 413 */
	BR_ROUTE_MAX, /* a JSON body passed its route's max_body: 413 */
	BR_BUDGET,    /* a JSON body did not fit net.max_buffered_body: 503 */
};

/*
 * The response writer (c->rstate), one line each:
 *   RS_IDLE         no response begun
 *   RS_SENDING      head and body are being written
 *   RS_STREAM_AGAIN a stream's fill had nothing more after earlier pieces
 *                   of this write: once they are out, RS_STREAM_WAIT
 *   RS_STREAM_WAIT  waiting for http_resp_stream_wake (a wake that comes
 *                   in RS_STREAM_AGAIN makes it RS_SENDING at once)
 *   RS_STREAM_END   the fill ended: what is buffered is the rest
 */
enum resp_state { RS_IDLE, RS_SENDING, RS_STREAM_AGAIN, RS_STREAM_WAIT, RS_STREAM_END };

enum resp_kind { RB_NONE, RB_MEM, RB_FILE, RB_STREAM };

struct http_conn {
	struct worker *w;
	http_conn_t *prev, *next;
	int fd;
	struct event *rev, *wev, *tev;
	enum conn_state state;
	enum body_state bstate;
	enum body_refusal refusal; /* BS_REFUSED: why */
	bool running, again;   /* conn_run re-entry guard */
	bool read_wanted;      /* the last wait_for asked for EV_READ (see wait_for) */
	bool offloaded;        /* a pool task holds the request */
	bool keep_alive;
	bool close_after;      /* close once the response is written */
	bool just_answered;    /* a response was just completed */
	bool continue_due;     /* Expect: 100-continue: send it when the body is first wanted */
	uint64_t reserved;     /* bytes of the server's buffered budget this request holds */
	struct ssl_st *ssl;    /* HTTPS: the connection's TLS state (tls.c); NULL: plain */
	short tls_want;        /* HTTPS: the direction the last SSL call waits for */
	bool tls_dead;         /* HTTPS: a fatal TLS error or close_notify: no more I/O */
	bool tls_plain;        /* HTTPS: the client spoke plain HTTP (answered 400 in plain text) */
	bool local;            /* accepted on the unix socket: file bodies may go as descriptors */
	bool same_host;        /* TCP from an address of this host: told of the unix socket */
	bool peer_here;        /* the unix socket, or TCP from an address of this host (served_local) */
	bool counted;          /* counted in its client address's connections (climit.c) */
	bool job_counted;      /* the current request counts as one of its address's jobs (climit.c) */
	signed char is_node;   /* the client is a node of the cluster: 1 yes, 0 no, -1 not asked yet */
	int64_t is_node_at;    /* when a "no" was last asked (monotonic ns): asked again after 1 s */
	unsigned fds_held;     /* descriptors of the budget the current request holds (its route's fds) */
	char peer[48];         /* client address, for logs */
	unsigned char peer_key[16]; /* client address as IPv6 (v4-mapped), for the rate limit */
	hp_t hp;
	buf_t in;
	size_t in_off;
	int64_t req_start_mono; /* first byte of the current request */
	bool had_request;       /* a request began on it (evict_idle) */
	int64_t linger_until;   /* CS_LINGER: monotonic deadline */
	uint64_t lingered;      /* CS_LINGER: bytes dropped */
	uint64_t discarded;
	int bpipe;              /* BS_FEED: the handler's pipe the body is spliced into (http_req_splice_to), or -1 */
	int lowat;              /* the socket's SO_RCVLOWAT while a body is spliced; 0: the default (1) */
	arena_t *arena;
	http_req_t req;

	/* response */
	enum resp_state rstate;
	int status;
	buf_t rhdrs;      /* extra header lines */
	bool head_only;   /* HEAD request or status without body */
	enum resp_kind kind;
	buf_t out;        /* bytes to write: head, memory body, chunks */
	size_t out_off;
	const char *mref; /* RB_MEM: a body written by reference after out (the request's
			   * memory, or spiece that http_resp_send_buf took) */
	size_t mref_len, mref_off;
	int ffd;          /* RB_FILE */
	int pass_fd;      /* a descriptor sent with the head (SCM_RIGHTS), or -1 */
	off_t foff;
	uint64_t fleft;
	void *fmap;
	size_t fmap_len;
	off_t checked_end; /* file bytes known resident up to here */
	bool fsmall_read;  /* RB_FILE small: bytes copied into out */
	http_fill_fn fill; /* RB_STREAM */
	buf_t spiece;      /* RB_STREAM: the buffer fill appends to (reused); RB_MEM: a body
			    * http_resp_send_buf took, sent as mref */
	bool spend;        /* RB_STREAM: spiece (from spoff) then after are still to write */
	size_t spoff;
	buf_t after;       /* RB_STREAM: chunk framing that follows a pending spiece */
	size_t after_off;
	bool chunked;
	bool sfile;        /* RB_STREAM: a file segment (ffd) is being sent */
	bool stream_sized; /* RB_STREAM with a Content-Length (not chunked) */
	bool spipe;        /* RB_STREAM: a pipe segment (pfd, the producer's) is being sent */
	int pfd;
	uint64_t pleft;
	uint64_t bytes_out;
	uint64_t head_out; /* of bytes_out, the head's (resp_build_head) */
};

/*
 * tls.c: the connection's I/O through OpenSSL, errno-style like read(2) and
 * send(2): > 0 bytes, 0 end of stream (reads), -1 with errno EAGAIN when
 * it must wait (c->tls_want says for what) or another errno on failure.
 */
int tls_conn_start(http_conn_t *c, http_tls_t *t);
void tls_conn_end(http_conn_t *c);
ssize_t tls_read(http_conn_t *c, void *p, size_t n);
ssize_t tls_write(http_conn_t *c, const void *p, size_t n);
/* True when the kernel encrypts this connection's records (kTLS). */
bool tls_ktls_send(http_conn_t *c);
ssize_t tls_sendfile(http_conn_t *c, int fd, off_t off, size_t n);

/* Reads and writes of a connection, plain or TLS. */
static inline ssize_t conn_recv(http_conn_t *c, void *p, size_t n)
{
	return c->ssl ? tls_read(c, p, n) : read(c->fd, p, n);
}
static inline ssize_t conn_send(http_conn_t *c, const void *p, size_t n)
{
	return c->ssl ? tls_write(c, p, n) : send(c->fd, p, n, MSG_NOSIGNAL);
}

static inline bool resp_started(const http_conn_t *c) { return c->rstate != RS_IDLE; }

void conn_accept(struct worker *w, int fd, const struct sockaddr_storage *ss, bool local);
/* A connection not let in: a 503 (JSON, message why) written as it is
 * accepted, and closed; the caller has counted nothing for it. */
void accept_refuse(http_server_t *s, int fd, bool local, const char *why);
void conn_run(http_conn_t *c);
void conn_free(http_conn_t *c);
void conn_close(http_conn_t *c);
/* Internal offload for the response path (file read-ahead). */
void conn_offload(http_conn_t *c, http_work_fn work, http_work_fn done);
/* Builds the response head into c->out (resp.c). */
void resp_build_head(http_conn_t *c, uint64_t length, bool chunked);
/* Advances the response; AIS_OK when all written, AIS_AGAIN when the
 * socket is full (or read-ahead is in flight), AIS_ERR to close. */
int resp_flush(http_conn_t *c);
void resp_reset(http_conn_t *c);
const char *worker_date(struct worker *w);
/* metrics.c: a request's counters and its access-log line. */
void hm_request_done(http_conn_t *c);
/* ratelimit.c: true (and a 429 answered) when the client is over the
 * limit; false to go on. */
bool http_rate_check(http_conn_t *c);
/* climit.c: counts the connection against its client address; false when
 * the address is at its cap (and not a node of the cluster): then nothing
 * is counted. climit_release undoes a take (none: nothing). */
bool climit_take(http_conn_t *c);
void climit_release(http_conn_t *c);
/* Gives back the current request's job (http_req_client_job), if any. */
void climit_job_release(http_conn_t *c);
void climit_free(http_server_t *s);
/* Answers a request the server refuses by itself (code: the S3 error code
 * for an HTTP_ROUTE_S3 route; else a JSON error). */
void conn_refuse(http_req_t *req, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Whether the connection's client is a node of the cluster (asked once). */
bool conn_is_node(http_conn_t *c);
/* Scrape-time collector for the whole server (registered by server.c). */
void hm_collect(void *arg, buf_t *out);

#endif
