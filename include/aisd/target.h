/*
 * target.h - the target role as the rest of the daemon sees it: start and
 * stop, and the few helpers that a gateway and the S3 layer share with it.
 * The target's own state, handlers and copies between targets are
 * src/target/target_int.h; its object layer is aisd/ol.h.
 *
 * A target owns its mountpaths (the store) and answers the native v1 API:
 * /v1/objects (data), /v1/buckets (buckets and listing), /v1/health.
 */
#ifndef AISD_TARGET_H
#define AISD_TARGET_H

#include <stdbool.h>
#include <stddef.h>

#include "aisd/buf.h"
#include "aisd/conf.h"
#include "aisd/http.h"

typedef struct target target_t;

/* Opens the store and starts serving; with cluster.join set, joins the
 * cluster and keeps its buckets in step with the cluster's BMD. Returns
 * NULL with a message in err. */
target_t *target_start(const conf_t *c, buf_t *err);
void target_stop(target_t *t);
/* The target's HTTP server (its port, a TLS reload). */
http_server_t *target_server(const target_t *t);

/* Split "BUCKET/OBJECT" from req->subpath, decode and validate both; on
 * failure answers 400 and returns AIS_ERR. */
int tgt_parse_names(http_req_t *req, sv_t *bck, sv_t *obj, bool need_obj);
struct moss_req;
/* GetBatch: declares every entry (its bucket, read) and asks the one
 * decision (authz_request): may the request read them all? false after
 * answering 403. */
bool tgt_moss_allowed(http_req_t *req, const struct moss_req *mr);
/* Appends one entry of the bucket list (GET /v1/buckets/), AIStore's
 * shape, preceded by a comma unless first. Gateways answer the same. */
void tgt_bucket_json(buf_t *out, const char *name, bool first);
/* The flag of a listing entry that is a member of a shard ("SHARD/MEMBER",
 * listed with the archive flag: target_int.h TGT_LS_ARCH_DIR). */
#define TGT_ENTRY_IN_ARCH 128
/* The listing flag of a remote bucket's cached copies only (AIStore's
 * LsCached): each target lists what it holds, as in a plain bucket. */
#define TGT_LS_CACHED 1
/* Appends base + "/v1/objects/BCK/OBJ" with obj percent-encoded. */
void tgt_url_obj(buf_t *out, const char *base, const char *bck, size_t blen, const char *obj, size_t olen);
/* Is kind one of the remote buckets' jobs that targets run ("prefetch",
 * "evict": bkjobs.c)? */
bool bkj_kind(sv_t kind);

#endif
