/*
 * s3.h - the S3 API of a node: path-style at the root ("/BUCKET/KEY") and
 * under "/s3/", virtual-hosted style ("BUCKET.<s3.domain>") when s3.domain
 * is set. The native API keeps "/v1/", so "v1" is not an S3 bucket name.
 *
 * Both roles serve S3 with the same semantics:
 *  - a target serves object requests from its store; in a cluster it
 *    serves any object addressed to it, and forwards bucket changes to the
 *    primary like the native API;
 *  - a gateway never redirects S3 (SDKs do not follow 307s): it forwards an
 *    object request to the owner target (HRW) as a stream both ways with
 *    bounded buffers, and answers bucket requests itself (the BMD, the
 *    primary, a listing fan-out).
 * Every answer carries x-amz-request-id; errors are S3's XML documents.
 *
 * Objects written through S3 are ordinary objects: the native API reads
 * them and S3 reads native ones. S3's own metadata (ETag = MD5, Content-*,
 * x-amz-meta-*) lives in the object's custom metadata (store.h) under keys
 * that start with "s3.".
 */
#ifndef AISD_S3_H
#define AISD_S3_H

#include "aisd/buf.h"
#include "aisd/http.h"

/* Reads the s3.* keys (auth on/off, keys, region, skew) once per process,
 * before serving. Returns AIS_OK, or AIS_ERR with a message in err (a
 * malformed s3.key). */
struct conf;
int s3_init(const struct conf *c, buf_t *err);
/* Delivers the server access log records this node holds (one attempt
 * each: peers may be stopping too); before the node leaves its cluster. */
void s3_log_stop(void);

/* Catch-all routes ("/"), the last entry of each role's table; req->ctx is
 * a target_t or a gateway_t. */
int s3_h_target(http_req_t *req);
int s3_h_gateway(http_req_t *req);

/* GET /v1/s3uploads/BUCKET?prefix=P on a target (intra-cluster, for a
 * ListMultipartUploads fan-out): its multipart uploads as JSON
 * [{"key","upload_id","initiated"}]. */
int s3_h_uploads(http_req_t *req);

/* An S3 error document (code, msg) for a request the HTTP server refuses
 * before the S3 handler runs (http_server_opts_t.refuse_s3). */
void s3_refuse(http_req_t *req, int status, const char *code, const char *msg);

/* Methods and flags of the S3 route. */
#define S3_ROUTE_METHODS                                                                        \
	(HTTP_M(HTTP_GET) | HTTP_M(HTTP_HEAD) | HTTP_M(HTTP_PUT) | HTTP_M(HTTP_POST) |          \
	 HTTP_M(HTTP_DELETE) | HTTP_M(HTTP_OPTIONS))

/* Removes multipart uploads older than s3.mpu_max_age from a target's
 * first mountpath. Blocking; the target calls it at start and then from
 * its housekeeping. Returns how many were removed. */
int s3_mpu_gc(const struct conf *c);

/* For the lifecycle job (src/lifecycle/, s3lc.h): the tags of an object's
 * S3 metadata (its custom metadata) in arena memory, and how many; and the
 * abort of this target's multipart uploads in bucket bck that lc's rules
 * make due at now_ns with days of day_ns (how many were removed).
 * Blocking. */
struct arena;
struct s3lc;
struct s3lc_tag;
size_t s3_lc_tags(struct arena *a, const char *custom, struct s3lc_tag **out);
uint64_t s3_lc_uploads(const struct conf *c, const char *bck, const struct s3lc *lc, int64_t now_ns, int64_t day_ns);

#endif
