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

/* A request's input: len bytes at ptr, or (ptr NULL) at off in the file
 * fd, streamed to the worker (worker.c rule 6). */
typedef struct etl_in {
	const char *ptr;
	int fd;
	uint64_t off, len;
} etl_in_t;

int etl_run(etl_t *e, const char *meta, sv_t args, const etl_in_t *in, buf_t *out, int *status, buf_t *msg);
void etl_worker_kill(etl_t *e, unsigned i, const char *why);
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

#endif
