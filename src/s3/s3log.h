/*
 * s3log.h - S3 server access logging ("bucket logging"): the pure parts
 * (logcfg.c: the configuration; logrec.c: records and log object names)
 * and the node's side (logging.c: ?logging served, records batched and
 * delivered into the target bucket).
 *
 * The pure parts include no daemon header, so unit tests and the fuzz
 * driver use them alone.
 */
#ifndef AISD_S3LOG_H
#define AISD_S3LOG_H
#include <stdbool.h>
#include <stdint.h>

#include "aisd/arena.h"
#include "aisd/buf.h"

typedef enum s3log_type { S3LOG_STANDARD, S3LOG_JOURNAL } s3log_type_t;

#define S3LOG_XML_MAX   8192                       /* bytes of a PutBucketLogging body */
#define S3LOG_ROLL_MAX  86400                      /* ObjectRollTime, seconds */
#define S3LOG_BATCH_MAX 1000000                    /* RecordsBatchSize */
#define S3LOG_SERVICE   "logging.s3.amazonaws.com" /* the principal that delivers logs */

/* A bucket's logging configuration (all views point into the arena of
 * the parse). enabled false: logging off (the other fields unset). */
typedef struct s3log_cfg {
	bool enabled;
	sv_t target;           /* TargetBucket */
	sv_t prefix;           /* TargetPrefix (may be empty) */
	bool partitioned;      /* TargetObjectKeyFormat: PartitionedPrefix, else SimplePrefix */
	bool event_time;       /* PartitionDateSource EventTime (else DeliveryTime) */
	s3log_type_t type;     /* LoggingType (extension) */
	uint32_t roll_s;       /* ObjectRollTime (extension); 0: the node's s3.logging_roll_time */
	uint32_t batch;        /* RecordsBatchSize (extension); 0: no limit by count */
	sv_t fprefix, fsuffix; /* Filter key rules (extension; Journal records only) */
	int64_t mtime_s;       /* when it was set (GetBucketLogging's Last-Modified) */
} s3log_cfg_t;

/* What a PutBucketLogging body is. */
enum s3log_verdict {
	S3LOG_OK,
	S3LOG_MALFORMED, /* MalformedXML */
	S3LOG_INVALID,   /* InvalidArgument, *why says what */
	S3LOG_NYI,       /* NotImplemented, *why says what (TargetGrants, ...) */
};

/* Parses a <BucketLoggingStatus> body (n bytes, any bytes). S3LOG_OK with
 * *out (enabled false: an empty status, logging off); else what it is,
 * with *why for INVALID and NYI. mtime_s is left 0. */
enum s3log_verdict s3log_cfg_parse(arena_t *a, const char *p, size_t n, s3log_cfg_t *out, const char **why);
/* Appends the <BucketLoggingStatus> document GetBucketLogging answers (no
 * XML declaration; one line of printable ASCII when the values are):
 * every field, with the defaults filled in (roll_default for roll_s 0). */
void s3log_cfg_xml(const s3log_cfg_t *c, uint32_t roll_default, buf_t *b);
/* The BMD document (BMD_DOC_LOGGING): "MTIME_S " + the configuration as
 * s3log_cfg_xml writes it with roll_default 0 (an unset roll time stays
 * unset); and back. s3log_cfg_load: AIS_OK with *out, AIS_ERR for text
 * that is not such a document (treated as logging off). */
void s3log_cfg_store(const s3log_cfg_t *c, buf_t *b);
int s3log_cfg_load(arena_t *a, const char *text, size_t n, s3log_cfg_t *out);
/* Do two configurations say the same (mtime aside)? */
bool s3log_cfg_same(const s3log_cfg_t *x, const s3log_cfg_t *y);

/* One request, as a record says it. Strings may be NULL or empty: "-". */
typedef struct s3log_rec {
	const char *owner; /* the source bucket's owner */
	sv_t bucket;
	int64_t time_ns; /* when the request arrived (wall clock) */
	const char *remote_ip;
	const char *requester; /* user id; NULL: anonymous */
	const char *request_id;
	const char *operation; /* s3log_operation */
	sv_t key;              /* decoded; empty: "-" */
	sv_t method, target;   /* the request line's method and target (as received) */
	int status;
	const char *error_code;
	uint64_t bytes_sent;             /* body bytes; 0: "-" */
	int64_t object_size;             /* < 0: "-" */
	int64_t total_ms, turnaround_ms; /* < 0: "-" */
	sv_t referer, user_agent, version_id, etag;
	const char *host_id;     /* the node */
	const char *sig_version; /* "SigV2", "SigV4", NULL */
	const char *cipher;      /* TLS cipher suite, NULL: plain */
	const char *auth_type;   /* "AuthHeader", "QueryString", NULL: unsigned */
	sv_t host;
	const char *tls_version; /* NULL: plain */
	bool acl_required;
} s3log_rec_t;

/* Appends r as one line (with its '\n') in the type's format:
 * Standard, AWS's server access log record, 26 fields in AWS's order
 * (owner bucket [time] ip requester request-id operation key
 * "request-uri" status error-code bytes-sent object-size total-time
 * turn-around-time "referer" "user-agent" version-id host-id sigv cipher
 * auth-type host tls access-point-arn acl-required); Journal, 8 fields
 * (owner bucket [time] operation key object-size version-id etag). No
 * field has a space, '"', '[', ']' or a control character unquoted: keys
 * are percent-encoded ('/' kept), quoted fields have those bytes
 * percent-encoded, so a line always splits into its fields. */
void s3log_rec_format(const s3log_rec_t *r, s3log_type_t type, buf_t *out);

/* The operation name of a request (REST.GET.OBJECT, REST.PUT.PART,
 * REST.GET.BUCKET, REST.PUT.ACL, ...) into out (S3LOG_OP_MAX bytes will
 * do): method, whether it names a key, the query (raw) and whether it
 * copies (x-amz-copy-source). Returns out. */
#define S3LOG_OP_MAX 64
const char *s3log_operation(const char *method, bool has_key, sv_t query, bool copy, char *out, size_t outsz);
/* Does a Journal record of this operation go to the log: a change to an
 * object (PUT, POST upload completion, DELETE, copies) that succeeded. */
bool s3log_journal_op(const char *operation, int status);
/* Does key pass the configuration's filter (Journal only)? */
bool s3log_filter_pass(const s3log_cfg_t *c, sv_t key);

/* Appends the name of a log object delivered at now_s (and, for
 * EventTime partitions, whose first record is from event_s), unique by
 * uniq: SimplePrefix PREFIX + YYYY-mm-DD-HH-MM-SS-UNIQ, PartitionedPrefix
 * PREFIX + OWNER/REGION/BUCKET/YYYY/mm/DD/YYYY-mm-DD-HH-MM-SS-UNIQ. */
void s3log_object_name(const s3log_cfg_t *c, const char *owner, const char *region, sv_t bucket,
                       int64_t now_s, int64_t event_s, const char *uniq, buf_t *out);

/* --- logging.c: the node's side (s3api.h types) --------------------------------- */
struct s3_rq;
struct conf;
/* ?logging of a bucket: Get/Put/PostBucketLogging (POST flushes). */
int s3_bucket_logging(struct s3_rq *r);
/* Called where a request arrives from its client, before it is served:
 * a request on a bucket that logs gets its record appended when it
 * completes. */
void s3_log_arm(struct s3_rq *r);
/* One key of r's DeleteObjects, deleted (code NULL) or not: a record of
 * its own (REST.POST.DELETE_MULTI_OBJECT, as Ceph's RGW writes them). */
void s3_log_key(struct s3_rq *r, sv_t key, sv_t vid, const char *code);
/* An ACL decides r for a requester not the bucket's owner: its record's
 * aclRequired is Yes (access.c; bucket permissions only: an object's ACL
 * is decided where the object is served). */
void s3_log_acl_required(struct s3_rq *r);
/* The S3 error code r is answered with, for its record (errors.c). */
void s3_log_error(struct s3_rq *r, const char *code);
/* Settings (s3_init); s3_log_stop (aisd/s3.h) delivers what is pending. */
void s3_log_init(const struct conf *c);
#endif
