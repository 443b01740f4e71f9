/*
 * status.h - the one set of return codes used across aisd, and the one map
 * from the errno of a failure to the answer a client gets.
 *
 * Functions that can fail return one of these. The HTTP status of a request
 * lives in its response, never in a return code.
 */
#ifndef AISD_STATUS_H
#define AISD_STATUS_H

#include <stdbool.h>

#include "aisd/buf.h"

enum {
	AIS_OK = 0,     /* done, go on */
	AIS_ERR = -1,   /* failed; errno or an error message says why */
	AIS_AGAIN = -2, /* not now: call again when the resource is ready */
	AIS_DONE = 1,   /* finished; nothing more will come (end of stream) */
};

/* What an errno means to a client (status.c): the native API's status and
 * message, and S3's error code, whose status in the S3 error table
 * (src/s3/errors.c) is the same (a unit test checks). */
typedef struct ais_errno {
	int status;         /* HTTP status */
	const char *s3code; /* S3 error code (ENOENT: NoSuchKey; a caller that
			     * knows the bucket is missing says NoSuchBucket) */
	const char *phrase; /* the native message after its subject ("object"
			     * + " does not exist"); NULL: ": " + strerror */
	bool remote;        /* a remote backend's failure (502, 503, 504) */
} ais_errno_t;

/* The answer for err. Never NULL: an errno not in the map is 500
 * InternalError with no phrase. The map:
 *   ENOENT 404, EEXIST 409, EBUSY 409, ENOTEMPTY 409, EBADMSG 400 (checksum
 *   mismatch of a write), EINVAL 400, ENOSPC 507, EAGAIN 503, EPERM 503
 *   (cluster_update: not the primary), EACCES 403 (a version under S3 object
 *   lock, olver.h), and a remote backend's
 *   EHOSTUNREACH 503, ETIMEDOUT 504, EREMOTEIO 502, ESTALE 502 (the
 *   object changed while read), EKEYREJECTED 403 (the remote refused the
 *   cluster's credentials); anything else 500. */
const ais_errno_t *ais_errno(int err);
static inline int ais_errno_status(int err) { return ais_errno(err)->status; }
/* The errno of a remote backend's failure answered with status (a node's
 * answer that names the remote passed on: 403, 502, 503, 504), 0 for a
 * status no remote failure has. The first of the map wins (502:
 * EREMOTEIO). */
int ais_errno_of_remote(int status);
/* The same for a failed read of an object (a GET): EBADMSG is data stored
 * here that fails its checksum (500, not the client's 400), and EIO with a
 * message (with_msg) is no good copy fetched from the other holders (502). */
const ais_errno_t *ais_errno_read(int err, bool with_msg);
/* Appends the native message of e (the answer to err) about what, and msg
 * when not empty: "WHAT PHRASE[: MSG]" ("bucket \"b\" does not exist",
 * "object: insufficient storage: ..."), or "WHAT: strerror[: MSG]". */
void ais_errno_msg(buf_t *out, const ais_errno_t *e, int err, const char *what, const char *msg);

#endif
