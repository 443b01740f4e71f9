/*
 * bk_int.h - what the backend's files share (src/backend): one blocking
 * HTTP exchange with a remote (xfer.c) and the per-kind operations
 * (s3.c, ais.c) that backend.c dispatches to.
 */
#ifndef AISD_BK_INT_H
#define AISD_BK_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "aisd/backend.h"
#include "aisd/buf.h"

typedef struct bk_xfer {
	const bk_remote_t *r;
	const char *bucket;         /* the remote bucket, for messages (NULL: unnamed) */
	const char *method;
	const char *url;
	const char *const *headers; /* "Name: value", NULL-terminated; may be NULL */
	int body_fd;                /* PUT: body_len bytes of body_fd from 0 */
	uint64_t body_len;
	bk_sink_fn sink;            /* 2xx body; NULL: buffered into resp */
	void *arg;
	uint64_t max_resp;          /* buffered 2xx body bound (0: 32 MiB) */
	uint64_t max_body;          /* 2xx body bound, sink or not (0: none) */
	bool data;                  /* object data (GET, PUT): limits.xfer_ms, else timeout_ms */
	bool follow;                /* follow a 307/308 to the remote's own host (an
				       aisd gateway's to its target), without credentials */
	/* results */
	int status;                 /* HTTP status; 0 none */
	buf_t hdrs;                 /* the raw response head */
	buf_t resp;                 /* buffered body, or the start of an error's */
	uint64_t got;               /* 2xx body bytes */
	/* private */
	void *easy;
	bool aborted, too_big;
	uint64_t body_off;
} bk_xfer_t;

/* AIS_OK when a whole answer came (any status), else AIS_ERR with errno
 * (EHOSTUNREACH, ETIMEDOUT, EREMOTEIO) and msg. */
int bk_xfer(bk_xfer_t *x, buf_t *msg);
void bk_xfer_free(bk_xfer_t *x);
/* AIS_ERR with errno and msg for a non-2xx answer about what. */
int bk_status_errno(const bk_xfer_t *x, const char *what, buf_t *msg);
sv_t bk_hdr(const bk_xfer_t *x, const char *name);
void bk_unquote(sv_t v, char *out, size_t outsz);
/* xfer.c rule 5: a redirect from the remote r to loc may be followed:
 * the same scheme and host (any port), no user info. */
bool bk_redirect_ok(const bk_remote_t *r, const char *loc);
/* ais.c: an upper bound of the values in JSON text s (one per ',', ':',
 * '[' or '{' outside strings, plus the first), counted before parsing. */
size_t bk_json_values(sv_t s);
/* size (Content-Range total, else Content-Length), ETag, Last-Modified. */
void bk_obj_from(const bk_xfer_t *x, bk_obj_t *o);

/* One operation of a kind: the request for obj (or the bucket: obj.len 0)
 * prepared in x (url and headers into the arena-like bufs given). */
typedef struct bk_req {
	buf_t url;
	buf_t hv[8];              /* header lines */
	const char *hp[9];
} bk_req_t;
void bk_req_free(bk_req_t *q);

/* s3.c: builds method url?query with SigV4 headers for b. query: raw,
 * already encoded ("" none); extra: more headers to sign ("range: ..."),
 * NULL-terminated, lower-case names. */
void bk_s3_prepare(const bk_bucket_t *b, const char *method, sv_t obj, const char *query,
		   const char *const *extra, bool unsigned_payload, bk_req_t *q);
int bk_s3_list(const bk_bucket_t *b, sv_t prefix, sv_t start_after, size_t pagesize, bk_list_fn fn, void *arg,
	       bool *more, buf_t *msg);
/* ais.c */
void bk_ais_prepare(const bk_bucket_t *b, sv_t obj, const char *query, const char *const *extra, bk_req_t *q);
int bk_ais_list(const bk_bucket_t *b, sv_t prefix, sv_t start_after, size_t pagesize, bk_list_fn fn, void *arg,
		bool *more, buf_t *msg);

#endif
