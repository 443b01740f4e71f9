/*
 * etl_int.h - what etl.c (the table, the HTTP side) and worker.c (the
 * processes) share.
 */
#ifndef AISD_ETL_INT_H
#define AISD_ETL_INT_H

#include <http_parser.h>
#include <pthread.h>
#include <sys/types.h>

#include "aisd/etl.h"

#define ETL_HIDE_MAX (CONF_MAX_MOUNTPATHS + 2)

typedef struct etl_cfg {
	char dir[1024];       /* the node's state directory: etl.json, etl-logs/ */
	uint64_t max_input, max_output, mem, cpu_s;
	bool weak;            /* etl.allow_weak_isolation */
	bool ns_ok;           /* etl_probe_ns: namespaces can be made */
	char ns_why[128];
	size_t nhide;
	char hide[ETL_HIDE_MAX][1024]; /* covered by tmpfs in a worker's mount namespace */
} etl_cfg_t;

extern etl_cfg_t etl_cfg;

typedef struct etl_worker {
	pid_t pid;                /* 0: not running */
	int in, out;              /* stdio: its stdin (we write), its stdout (we read); http: -1 */
	char sock[108];           /* http: the unix socket it serves on (we connect) */
	int conn;                 /* http: the connection kept open to it across requests; -1 none */
	int spipe[2];             /* http: the empty pipe its answers are spliced through (stream.c); -1 none */
	bool busy;                /* one request owns it */
	unsigned starts, crashes;
	unsigned backoff_ms;
	int64_t next_start_ns;    /* monotonic: not started again before */
} etl_worker_t;

/* A registered transformer. refs: requests using it; a removed one (gone)
 * is freed by the last. */
typedef struct etl {
	etl_spec_t spec;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	etl_worker_t w[ETL_WORKERS_MAX];
	int refs;
	bool gone;
} etl_t;

/* Whether e's workers speak http (spec.comm), else stdio. */
static inline bool etl_is_http(const etl_t *e) { return e->spec.comm[0] == 'h'; }

/* A request's input: len bytes at ptr, or (ptr NULL) at off in the file
 * fd, streamed to the worker (worker.c rule 6). */
typedef struct etl_in {
	const char *ptr;
	int fd;
	uint64_t off, len;
} etl_in_t;

/* The smallest body streamed (etl_transform_open): a smaller one is read
 * whole, then sent in one write. */
#define ETL_STREAM_MIN (64u << 10)

struct event;

/* An answer whose head is read and whose body is still in its worker's
 * pipe or socket (stream.c). The worker stays busy (rule 1 of worker.c)
 * and e referenced until etl_stream_close. */
struct etl_stream {
	etl_t *e;
	unsigned wi;         /* the worker */
	int fd;              /* the body's source: stdio the worker's stdout, http the connection */
	bool http;
	bool keep;           /* http: the connection may carry the next request once the body is read */
	buf_t pre;           /* body bytes read with the head: sent first */
	size_t pre_off;
	uint64_t len;        /* the body's declared length */
	uint64_t left;       /* its bytes still in fd */
	int *pipe;           /* http to a plain client: socket -> the worker's spipe -> client, by splice */
	int64_t budget_ns;   /* what is left of the transformer's timeout, spent only waiting on the worker */
	int64_t wait_ns;     /* monotonic: the wait on fd began; 0 none */
	struct event *ev;    /* readable fd, or the budget spent: wakes the response */
	http_req_t *req;
	bool copy;           /* read through memory (TLS, or a socket splice refused) */
	bool done;           /* every byte sent, the framing checked */
	bool failed;         /* the worker was killed: the client's connection is cut */
};

/* A stream not started (fd -1, no pipe): etl_run fills it in. */
etl_stream_t *etl_stream_new(void);

/* etl_run: st NULL, the whole answer in out; st set, the caller takes a
 * stream: AIS_OK with st->fd >= 0 when a 200 answer of at least
 * ETL_STREAM_MIN bytes is streamed (out empty), st->fd -1 when out holds
 * the whole answer. */
int etl_run(etl_t *e, const char *meta, sv_t args, const etl_in_t *in, buf_t *out, etl_stream_t *st, int *status,
	    buf_t *msg);
/* Rule 1 of worker.c: a worker for one request until deadline (at_once:
 * only a live one free now; none is started or waited for). AIS_OK with
 * *idx (busy), or AIS_ERR with *status and msg. */
int etl_acquire(etl_t *e, int64_t deadline, bool at_once, unsigned *idx, int *status, buf_t *msg);
/* The transformer named, with a reference the caller drops (etl_unref);
 * NULL when there is none. */
etl_t *etl_ref(const char *name, size_t nlen);
/* A request's metadata for its worker, JSON {"bucket","object","size",
 * "version"[,"archpath"]} (member.len: the member's path): malloc'd. */
char *etl_meta(sv_t bck, sv_t obj, sv_t member, uint64_t size, uint64_t version);
/* A worker's request ends (busy cleared): good resets its back-off. */
void etl_worker_release(etl_t *e, unsigned i, bool good);
/* Drops a reference taken by a request (etl.c). */
void etl_unref(etl_t *e);
void etl_worker_kill(etl_t *e, unsigned i, const char *why);
/* Closes w's spipe (killed, or a stream left bytes in it). */
void etl_worker_spipe_close(etl_worker_t *w);
void etl_log_path(const etl_t *e, unsigned i, char *out, size_t outsz);
void etl_probe_ns(void);
/* Removes the directory of the http workers' sockets (etl_shutdown). */
void etl_sockdir_remove(void);

/* The reader of an http worker's answer (answer.c, pure). */
#define ETL_ANSWER_HEAD_MAX 16384

typedef struct etl_answer {
	http_parser hp;
	buf_t *out;      /* the body */
	uint64_t max;    /* etl.max_output */
	uint64_t fed;    /* bytes taken so far */
	int status;      /* the worker's HTTP status, once head_done */
	bool head_done, done;
	bool keep_alive; /* once done: the connection may carry the next request */
	bool sized;      /* once head_done: the body has a Content-Length (clen), not chunked */
	uint64_t clen;
	int err;         /* 502 malformed, 507 over max: with why */
	const char *why;
} etl_answer_t;

/* Starts reading an answer into out (emptied), its body at most max. */
void etl_answer_init(etl_answer_t *a, buf_t *out, uint64_t max);
/* Takes n bytes at p (which may lie in out's spare room: see answer.c).
 * AIS_AGAIN: more wanted; AIS_OK: complete (status, out, keep_alive);
 * AIS_ERR: err and why. */
int etl_answer_feed(etl_answer_t *a, const char *p, size_t n);
/* The connection ended: AIS_OK when that completes the answer, else
 * AIS_ERR (err, why). */
int etl_answer_eof(etl_answer_t *a);
/* Rule 5 of answer.c: after the head of a 200 answer whose body has a
 * Content-Length and is not complete yet, true with *left (the body's
 * bytes not fed yet) and *keep_alive (the connection may carry the next
 * request once they are read, nothing past them); else false. */
bool etl_answer_stream(const etl_answer_t *a, uint64_t *left, bool *keep_alive);

#endif
