/*
 * backend.h - remote backends: a bucket of this cluster that is a cache in
 * front of a bucket elsewhere (an S3-compatible store, or another aisd
 * cluster through its native API).
 *
 * Two halves:
 *  - the remotes (remotes.c): each cluster keeps its remotes (alias, kind,
 *    endpoint, region, credentials, addressing, CA file) in one file per
 *    node, DIR/remotes.json, mode 0600, written by `aisctl remote attach`
 *    (PUT /v1/remotes/ALIAS on a gateway, which applies it on every node)
 *    or by hand. Secrets never leave that file except to sign requests:
 *    the BMD names only the alias, and listings, logs and metrics of
 *    remotes show endpoint and alias only.
 *  - the backend operations (backend.c, s3.c, ais.c): blocking calls for
 *    pool, fetch and job threads: HEAD, GET (whole or a range, streamed to
 *    a sink), PUT (from a file), DELETE and one page of a listing.
 *
 * Errors: AIS_ERR with errno and a message naming the remote:
 *   ENOENT       no such object (or bucket) on the remote      -> 404
 *   EHOSTUNREACH the remote could not be reached               -> 503
 *   ETIMEDOUT    the remote did not answer in time             -> 504
 *   ESTALE       the object changed on the remote (If-Match)   -> retry
 *   EREMOTEIO    the remote answered with an error or garbage,
 *                or lacks the bucket (S3 NoSuchBucket; a listing) -> 502
 *   EKEYREJECTED the remote refused the credentials (401, 403)  -> 403
 *   EINVAL       no such remote attached / bad bucket backend
 * (status.h maps them; the same status on every route and API.)
 */
#ifndef AISD_BACKEND_H
#define AISD_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"
#include "aisd/http.h"

#define BK_ALIAS_MAX 32
#define BK_ETAG_MAX 128

enum bk_kind { BK_NONE = 0, BK_S3, BK_AIS };

/* One remote, as attached. */
typedef struct bk_remote {
	char alias[BK_ALIAS_MAX + 1]; /* [A-Za-z0-9_-], 1..32 */
	enum bk_kind kind;
	char url[512];                /* http(s)://host[:port][/base] */
	char region[64];              /* S3: signing region ("" us-east-1) */
	char access_key[129];         /* S3: SigV4 key ("" unsigned requests) */
	char secret_key[129];
	char token[1024];             /* ais: bearer token ("" none) */
	bool virtual_host;            /* S3: BUCKET.host addressing, else path-style */
	char ca_file[1024];           /* PEM bundle for https ("" the system's) */
	uint64_t blob_min;            /* cold reads of objects this big or bigger fetch
					 in parallel ranges (0: BK_BLOB_MIN_DEFAULT) */
} bk_remote_t;
#define BK_BLOB_MIN_DEFAULT (256ull << 20)

/* "s3" or "ais"; and back (BK_NONE for anything else). */
const char *bk_kind_name(enum bk_kind k);
enum bk_kind bk_kind_parse(const char *s, size_t len);
bool bk_alias_valid(const char *s, size_t len);

/* --- limits of every exchange with a remote (xfer.c; remote.* keys) --------- */

typedef struct bk_limits {
	uint64_t connect_ms; /* connect (TCP and TLS) within */
	uint64_t timeout_ms; /* a request without object data (HEAD, DELETE, a listing page)
				ends within, redirects included (0: none) */
	uint64_t xfer_ms;    /* a GET or PUT of object data ends within (0: none) */
	uint64_t stall_ms;   /* a transfer slower than min_speed this long ends */
	uint64_t min_speed;  /* bytes/s (0: no stall check) */
	uint64_t list_bytes; /* one listing page's answer at most */
	uint64_t cold_reads; /* cold reads of one remote running at once on a target */
} bk_limits_t;
/* Sets the limits, once at start before any transfer (defaults: the
 * remote.* defaults of aisd.conf(5)). */
void bk_limits_set(const bk_limits_t *l);
const bk_limits_t *bk_limits(void);

/* --- the remotes of this node (remotes.c) ----------------------------------- */

/* Loads DIR/remotes.json (absent: none) and sets the limits from c's
 * remote.* keys. A file readable by others is made 0600 first (and
 * logged). AIS_OK, or AIS_ERR with a message. */
struct conf;
int bk_remotes_init(const char *dir, const struct conf *c, buf_t *err);
/* A copy of the remote called alias: AIS_OK, or AIS_ERR (EINVAL). */
int bk_remote_get(const char *alias, size_t len, bk_remote_t *out);
/* GET/PUT/DELETE /v1/remotes[/ALIAS] on a node (GET: {"remotes":[...]},
 * bk_remotes_json). On a gateway a PUT or DELETE from outside the cluster
 * is applied on every node of the map. */
int bk_h_remotes(http_req_t *req);
/* Appends the remotes as JSON, secrets left out: [{"alias","kind","url",
 * "region","addressing","ca_file","blob_min","access_key_set"},...]. */
void bk_remotes_json(buf_t *out);

/* --- a bucket's backend (its BMD props name the remote) ---------------------- */

typedef struct bk_bucket {
	bk_remote_t r;
	char bucket[65];        /* the bucket's name on the remote */
	bool validate_warm_get; /* HEAD the remote before serving a cached copy */
	bool sync;              /* a copy deleted on the remote is deleted here */
} bk_bucket_t;

/* What the remote says about an object. */
typedef struct bk_obj {
	uint64_t size;
	char etag[BK_ETAG_MAX]; /* unquoted */
	int64_t mtime_ns;       /* Last-Modified; 0 unknown */
} bk_obj_t;

/* Streamed GET body: AIS_OK to go on, AIS_ERR to abort. */
typedef int (*bk_sink_fn)(void *arg, const char *p, size_t n);
/* One listing entry. */
typedef struct bk_entry {
	const char *name;
	size_t len;
	uint64_t size;
	const char *etag; /* unquoted, may be "" */
	int64_t mtime_ns;
} bk_entry_t;
typedef void (*bk_list_fn)(void *arg, const bk_entry_t *e);

int bk_head(const bk_bucket_t *b, sv_t obj, bk_obj_t *out, buf_t *msg);
/* GET len bytes from off (len 0: to the end; off 0 len 0: whole object),
 * only if the remote's ETag is still if_match (NULL or "": any); the body
 * of a 200/206 goes to sink. *out from the response's headers. */
int bk_get(const bk_bucket_t *b, sv_t obj, uint64_t off, uint64_t len, const char *if_match, bk_sink_fn sink,
	   void *arg, bk_obj_t *out, buf_t *msg);
/* PUT len bytes of fd (from 0); out->etag the remote's. */
int bk_put_fd(const bk_bucket_t *b, sv_t obj, int fd, uint64_t len, bk_obj_t *out, buf_t *msg);
/* DELETE: AIS_OK, or ENOENT when the remote had no such object. */
int bk_delete(const bk_bucket_t *b, sv_t obj, buf_t *msg);
/* One page of names in order after start_after (a name, as continuation
 * token) with prefix; *more when names remain. */
int bk_list(const bk_bucket_t *b, sv_t prefix, sv_t start_after, size_t pagesize, bk_list_fn fn, void *arg,
	    bool *more, buf_t *msg);
/* HEAD of the remote bucket: AIS_OK, ENOENT, or a remote error. */
int bk_head_bucket(const bk_bucket_t *b, buf_t *msg);

/* The backend of bucket bck in the cluster's BMD, with its remote:
 * AIS_OK (*out set), AIS_DONE (a bucket of this cluster only), AIS_ERR
 * (EINVAL: its remote is not attached here; msg says which). cl may be NULL. */
struct cluster;
int bk_bucket_of(struct cluster *cl, sv_t bck, bk_bucket_t *out, buf_t *msg);
/* The bound of a call to a node for a page of bck's listing: base_ms, or
 * for a bucket with a remote backend long enough for the remote's own
 * deadline and retries (twice remote.timeout, backend.c rule 1) to come
 * first, so that a slow remote is its 504 naming it, not a node that did
 * not answer. */
uint64_t bk_list_call_ms(struct cluster *cl, sv_t bck, uint64_t base_ms);
/* A bucket about to get backend be (its creation, a change of its
 * backend): AIS_OK when its remote is attached here and has the bucket
 * (a HEAD of it); else AIS_ERR, msg saying why: EINVAL (not attached, or
 * no such bucket there), or the remote's errno when it could not be
 * asked (unreachable, refused the credentials: nothing was checked). */
struct bmd_backend;
int bk_backend_check(const struct bmd_backend *be, buf_t *msg);

#endif
