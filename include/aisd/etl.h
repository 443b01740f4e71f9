/*
 * etl.h - transformers that run next to the data (src/etl).
 *
 * A transformer is a command registered cluster-wide under a name
 * (PUT /v1/etl/NAME on a gateway, which applies it on every node, like a
 * remote). Each target keeps the table in DIR/etl.json and runs up to
 * `workers` processes of each running transformer, started on first use
 * and restarted with back-off after a crash. A worker reads framed
 * requests on its standard input and writes framed answers on its
 * standard output (comm "stdio"), or serves HTTP on a unix socket aisd
 * hands it (comm "http"; both in docs/api.md); its standard error goes to
 * a bounded log per worker.
 *
 * Workers are sandboxed (etl_spawn in worker.c): their own mount and
 * network namespaces (the network one unless the transformer asked for
 * `net`), the mountpaths and the node directory hidden under empty
 * read-only tmpfs, user nobody when the target runs as root, and
 * RLIMIT_AS / RLIMIT_CPU / RLIMIT_NOFILE limits. Where the namespaces
 * cannot be made, a worker is not started (the request fails with 503)
 * unless etl.allow_weak_isolation is set.
 */
#ifndef AISD_ETL_H
#define AISD_ETL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"
#include "aisd/conf.h"
#include "aisd/http.h"

#define ETL_NAME_MAX 64
#define ETL_CMD_MAX 1024
#define ETL_ENV_MAX 16
#define ETL_WORKERS_MAX 16
#define ETL_MAX 32

typedef struct etl_spec {
	char name[ETL_NAME_MAX + 1];
	char cmd[ETL_CMD_MAX + 1]; /* run with /bin/sh -c */
	char comm[8];              /* "stdio" (framed pipes) or "http" (a server on a unix socket) */
	uint32_t workers;          /* 1..ETL_WORKERS_MAX */
	uint64_t timeout_ms;       /* per object */
	bool net;                  /* keep the host's network */
	bool stopped;              /* registered, no worker runs */
	size_t nenv;
	char env[ETL_ENV_MAX][256]; /* K=V */
} etl_spec_t;

/* Loads DIR/etl.json (none: an empty table) and keeps c's etl.* limits,
 * mountpaths and node directory (hidden from workers). AIS_OK or AIS_ERR
 * (err). */
int etl_init(const char *dir, const conf_t *c, buf_t *err);
/* Stops every worker (SIGKILL, reaped). */
void etl_shutdown(void);

/* Transforms in (inlen bytes) with transformer name; blocking (the I/O
 * pool). meta is a JSON object sent as the request's metadata, args the
 * client's etl_args. AIS_OK with *out (the answer's bytes, at most
 * etl.max_output); else AIS_ERR with *status (404 unknown transformer,
 * 503 stopped or cannot start, 502 the worker failed or answered an
 * error, 504 it timed out, 507 its answer is over etl.max_output) and
 * msg naming the transformer and the reason. */
int etl_transform(const char *name, size_t nlen, const char *meta, sv_t args, const char *in, size_t inlen,
		  buf_t *out, int *status, buf_t *msg);
/* The one path from a stored object to a transform (inline GET and the
 * etl-bck job): size bytes of fd (an object's file, read from its start)
 * given to etl_transform with the metadata {"bucket","object","size",
 * "version"}. As etl_transform, and 413 when size is over etl.max_input,
 * 500 when the file cannot be read. fd stays open. */
int etl_transform_fd(const char *name, size_t nlen, sv_t bck, sv_t obj, int fd, uint64_t size, uint64_t version,
		     sv_t args, buf_t *out, int *status, buf_t *msg);
/* etl_transform_fd of size bytes at off in fd: a member of a tar shard
 * (archpath reads, GetBatch entries); the metadata adds "archpath":
 * member when member.len. As etl_transform_fd. */
int etl_transform_at(const char *name, size_t nlen, sv_t bck, sv_t obj, sv_t member, int fd, uint64_t off,
		     uint64_t size, uint64_t version, sv_t args, buf_t *out, int *status, buf_t *msg);
/* An answer streamed to a client as it leaves the worker (src/etl/stream.c). */
typedef struct etl_stream etl_stream_t;
/* etl_transform_at for a client's GET: AIS_OK with *st (its body not read
 * yet: a 200 answer of a declared length big enough to stream), or with
 * *st NULL and the whole answer in out. As etl_transform_at otherwise. */
int etl_transform_open(const char *name, size_t nlen, sv_t bck, sv_t obj, sv_t member, int fd, uint64_t off,
		       uint64_t size, uint64_t version, sv_t args, buf_t *out, etl_stream_t **st, int *status,
		       buf_t *msg);
/* etl_transform_open of a whole object for a client's GET, on req's loop
 * without blocking (src/etl/xchg.c): done(req, rc) runs on the loop once
 * the answer's head is read or the exchange failed, with *st, out, *status
 * and msg as etl_transform_open leaves them (rc its result); it may run
 * before this returns. AIS_AGAIN: nothing was started (no live worker
 * free, the object's pages not all cached, a big object, no such
 * transformer): call etl_transform_open on the network pool. While it
 * runs *op is set; a request that ends first cancels it (etl_op_cancel:
 * done never runs then). */
typedef struct etl_op etl_op_t;
int etl_transform_start(http_req_t *req, const char *name, size_t nlen, sv_t bck, sv_t obj, int fd, uint64_t size,
			uint64_t version, sv_t args, buf_t *out, etl_stream_t **st, int *status, buf_t *msg,
			void (*done)(http_req_t *req, int rc), etl_op_t **op);
/* Ends an exchange still running (NULL: nothing): its worker is killed
 * (stdio) or its connection closed (http), and released. */
void etl_op_cancel(etl_op_t *op);
/* The body's length (the response's Content-Length). */
uint64_t etl_stream_len(const etl_stream_t *st);
/* An http_fill_fn's work for a response sent with http_resp_send_stream_len
 * (req's worker): the next bytes, spliced from the worker where req's
 * connection allows (http_resp_stream_pipe), else read into out, at most
 * 256 KiB at a time. AIS_OK, AIS_AGAIN (it wakes the response once the
 * worker wrote more), AIS_DONE (exactly the declared bytes sent, the
 * framing checked), AIS_ERR (the worker died, hung past its timeout, or
 * wrote more or less than it declared: it is killed, and the client's
 * connection is cut). */
int etl_stream_fill(etl_stream_t *st, http_req_t *req, buf_t *out);
/* Ends a stream, finished or not (an arena cleanup of the request): the
 * worker is kept after a body read whole, else killed (stdio) or its
 * connection closed (http); the reference to the transformer dropped. */
void etl_stream_close(etl_stream_t *st);

/* A transformer this node lacks (it joined after the registration) taken
 * from the primary's table; blocking (network pool). AIS_OK when name is
 * now registered here. */
struct cluster;
int etl_pull(struct cluster *cl, const char *name, size_t nlen);
/* Whether name is registered here. */
bool etl_exists(const char *name, size_t nlen);
/* How many workers name runs on a target (its --workers); 0 when unknown. */
unsigned etl_workers(const char *name, size_t nlen);
/* The biggest object a transform takes (etl.max_input). */
uint64_t etl_input_limit(void);

/* The /v1/etl route, gateway and target: GET (list; ?what=logs&name=N:
 * this node's worker logs), PUT /v1/etl/NAME (register), PUT
 * /v1/etl/NAME?action=stop|start, DELETE /v1/etl/NAME. A gateway applies
 * PUT/DELETE on every node of its map (?local=true there) and gathers
 * logs from every target. */
int etl_h(http_req_t *req);

#endif
