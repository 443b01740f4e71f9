/*
 * conf.h - the daemon's configuration: one struct, one table of keys.
 *
 * The file format is one "key = value" per line, '#' starts a comment, keys
 * are dotted ("net.port"). Every key is listed in conf.c's table with its
 * type, default and a line of documentation, and in aisd.conf(5). The same
 * keys can be set on the command line (--set key=value).
 */
#ifndef AISD_CONF_H
#define AISD_CONF_H

#include <stdbool.h>
#include <stdint.h>
#include "aisd/buf.h"

#define CONF_MAX_MOUNTPATHS 64
#define CONF_MAX_S3_KEYS 64
#define CONF_MAX_GRANTS 256
#define CONF_SECRET_MAX 256

enum conf_fsync { CONF_FSYNC_ALWAYS = 0, CONF_FSYNC_NEVER };

typedef struct conf {
	char role[16];            /* "target" or "gateway" */
	char node_id[64];         /* node identity in the cluster; default host:port */
	char host[256];           /* listen address */
	uint64_t port;            /* listen port */
	uint64_t workers;         /* event-loop threads; 0 = number of cores */
	uint64_t io_threads;      /* blocking file work threads */
	uint64_t net_threads;     /* blocking work waiting on other nodes */
	uint64_t max_conns;       /* accepted connections at once, all workers (0: derived) */
	uint64_t max_conns_per_client; /* ... of one client address (0: a quarter of the limit, >= 16) */
	uint64_t max_buffered_body; /* JSON bodies held at once, all connections */
	uint64_t header_timeout_ms;
	uint64_t idle_timeout_ms;
	uint64_t body_timeout_ms;
	uint64_t max_header_bytes; /* request line + headers */
	uint64_t max_body;        /* largest streamed request body (object PUT); 0 none */
	uint64_t rate_limit;      /* requests/s per client address and worker; 0 off */
	uint64_t rate_burst;
	char tls_cert[1024];      /* PEM chain: HTTPS on the listener when set */
	char tls_key[1024];       /* PEM key of tls_cert */
	char tls_client_ca[1024]; /* mTLS: client certificates must chain to this */
	char tls_ca[1024];        /* CA bundle for verifying other nodes */
	bool tls_ktls;            /* use kernel TLS where offered */
	char unix_socket[1024];   /* target: local clients' unix socket ("auto", "off" or a path) */
	char mountpaths[CONF_MAX_MOUNTPATHS][1024];
	int n_mountpaths;
	int fsync;                /* enum conf_fsync */
	char checksum[16];        /* default checksum type of new buckets */
	uint64_t put_buffer;      /* bytes buffered per PUT before a disk write */
	uint64_t min_free_bytes;  /* PUT fails with 507 below this free space */
	uint64_t mp_check_ms;     /* how often the store checks its mountpaths (0: never) */
	char node_dir[1024];      /* where cluster metadata is persisted */
	char join[256];           /* URL of the primary gateway to join */
	char public_url[256];     /* how clients reach this node */
	uint64_t keepalive_ms;    /* primary's health-check period */
	uint64_t grace_ms;        /* a node failing this long leaves the map */
	uint64_t lease_ms;        /* the primary's lease; 0: 2/3 of grace_ms (conf_lease_ms) */
	char s3_domain[256];      /* virtual-hosted S3: BUCKET.<s3_domain> */
	uint64_t s3_mpu_max_age_ms; /* multipart uploads older than this are removed */
	uint64_t s3_max_uploads;    /* uploads in progress per bucket on a target; 0 = no limit */
	uint64_t s3_lifecycle_day_ms;    /* the length of a lifecycle rule's day (src/lifecycle) */
	uint64_t s3_lifecycle_period_ms; /* how often a target runs the lifecycle job; 0: never */
	uint64_t s3_logging_roll_ms;     /* server access logs: a batch's age at delivery (src/s3/logging.c) */
	uint64_t s3_logging_max_pending; /* server access logs: bytes of records held per node */
	char s3_sse_key_file[1024]; /* SSE-S3 master keys (src/s3/sse.c); empty: SSE-S3 off */
	char s3_kms_key_file[1024]; /* SSE-KMS local key store; empty: SSE-KMS off */
	bool s3_sse_c_plain_http;   /* SSE-C accepted without TLS */
	bool s3_native_etag;        /* native writes get an MD5 S3 ETag (olput.c rule 7) */
	uint64_t tomb_ttl_ms;       /* a deleted object's tombstone is kept this long */
	uint64_t delete_pause_ms;   /* debug.delete_pause: a client's delete waits before its slices go */
	uint64_t bmd_pause_ms;      /* debug.bmd_apply_pause: a new BMD waits, persisted, before its callback */
	uint64_t archive_pause_ms;  /* debug.archive_pause: the archive job waits after each member */
	uint64_t dsort_pause_ms;    /* debug.dsort_commit_pause: a dsort run waits before each commit */
	char clock_offset[32];      /* debug.clock_offset: [+-]duration this node's wall clock is shifted by */
	bool verify_on_read;      /* checksum a whole object before serving it */
	uint64_t hot_cache;       /* bytes of small objects kept in memory (store/hot.c); 0 off */
	uint64_t hot_object_max;  /* ... objects up to this size */
	uint64_t atime_ms;        /* a read rewrites an object's recorded atime older than this; 0 never */
	uint64_t ldb_cache;       /* LevelDB block cache per mountpath, bytes */
	uint64_t ldb_write_buffer; /* LevelDB memtable size per mountpath, bytes */
	uint64_t ldb_bloom_bits;  /* LevelDB bloom filter bits per key; 0 none */
	uint64_t ldb_max_open_files; /* LevelDB table files held open per mountpath */
	char mountpath_roots[4096]; /* attach-mp only under these (comma-separated; "": the mountpaths' parents) */
	bool allow_any_path;      /* attach-mp anywhere */
	uint64_t write_quorum;    /* copies durable before a PUT is acked; 0 = all */
	char delete_quorum[16];   /* "all" or "tombstone": holders a client's delete must reach (ol.h inv. 5) */
	uint64_t gb_max_entries;    /* GetBatch: entries per request at most */
	uint64_t gb_max_bytes;      /* ... tar bytes per answer at most */
	uint64_t dsort_memory_limit; /* dsort: a run's spool in memory and index at most */
	uint64_t gb_max_per_client; /* ... requests of one client address at once */
	uint64_t rebalance_workers; /* objects moved at once per target */
	uint64_t rebalance_peer_streams; /* of them, at most this many to one peer */
	uint64_t rebalance_rate;    /* bytes/s a target's rebalance sends at most; 0 no cap */
	uint64_t rebalance_busy_rate; /* the same while the target answers client reads */
	uint64_t drain_timeout_ms;  /* decommission waits this long for the drain */
	char log_level[16];
	char log_file[1024];
	bool s3_auth;             /* S3 requests must be signed (SigV4) */
	bool s3_sigv2;            /* S3 Signature Version 2 accepted too */
	char s3_region[64];       /* the cluster's S3 region */
	uint64_t s3_max_skew_ms;  /* allowed client clock difference */
	char s3_keys[CONF_MAX_S3_KEYS][512]; /* "AK:SK:USERID:DISPLAY NAME" */
	int n_s3_keys;
	char log_access[8];       /* "on" or "off" */
	char log_access_file[1024];
	bool auth_enabled;        /* native API and S3 keys checked for permissions */
	char auth_secret[CONF_SECRET_MAX];  /* HS256 key of bearer tokens */
	char auth_secret_file[1024];
	char auth_grants[CONF_MAX_GRANTS][256]; /* "USER:BUCKET:PERM" (S3 keys' users) */
	int n_auth_grants;
	char cluster_secret[CONF_SECRET_MAX]; /* signs intra-cluster calls and redirects */
	char cluster_secret_file[1024];
	/* remote backends: every exchange bounded (backend.h bk_limits_t) */
	uint64_t remote_connect_ms, remote_timeout_ms, remote_xfer_ms, remote_stall_ms;
	uint64_t remote_min_speed, remote_list_bytes, remote_cold_reads;
	/* transformers (etl.h) */
	uint64_t etl_max_input, etl_max_output, etl_memory_limit, etl_cpu_ms;
	bool etl_weak;
} conf_t;

/* Fills c with the defaults. */
void conf_defaults(conf_t *c);
/* Applies one "key=value" (as from --set). Returns AIS_OK, or AIS_ERR with a
 * message in err. */
int conf_set(conf_t *c, const char *key, const char *value, buf_t *err);
/* Parses a whole config text (pure: no I/O). On error returns AIS_ERR with
 * "line N: ..." in err; c may be partly updated. */
int conf_parse(conf_t *c, const char *text, size_t len, buf_t *err);
/* Reads and parses a file. */
int conf_load(conf_t *c, const char *path, buf_t *err);
/* Checks cross-key rules after everything is set. */
int conf_validate(const conf_t *c, buf_t *err);
/* Splits an s3.key value "ACCESS:SECRET:USERID:DISPLAY NAME" into its four
 * fields (views into spec) and checks them: access key [A-Za-z0-9_.-],
 * 3..128; secret 8..128 printable bytes, no ':', '#' or spaces; user id 1..128
 * printable bytes, no ':'; display name (may hold ':' and spaces) 1..128
 * printable bytes. Returns AIS_OK, or AIS_ERR with a message in err that
 * never repeats the secret. */
int conf_s3key_split(const char *spec, sv_t f[4], buf_t *err);
/* Reads auth.secret_file and cluster.secret_file (when set) into
 * auth.secret and cluster.secret: the first line, at most 255 bytes, at
 * least 16. Returns AIS_OK, or AIS_ERR with a message in err. */
int conf_load_secrets(conf_t *c, buf_t *err);
/* A duration: digits and a unit ms, s (or none), m or h, into ms.
 * AIS_OK or AIS_ERR. */
int conf_parse_ms(const char *v, uint64_t *out);
/* debug.clock_offset in ns (signed): AIS_OK, or AIS_ERR when it is not
 * [+|-]DURATION of at most a year. */
int conf_clock_offset(const conf_t *c, int64_t *ns);
/* The primary's lease (cluster.lease) and how long a node that granted it
 * refuses votes for another primary: the lease plus a clock-drift margin
 * of 1/8 (conf_validate keeps keepalive < lease and guard < grace).
 * cluster.lease 0 (the default) means midway between keepalive +
 * min(keepalive, 2s) (a renewal asked a round later arrives before the
 * lease runs out, even past a node that does not answer) and just under
 * 8/9 of grace (the guard stays below the election timeout); just under
 * 8/9 of grace when the first is larger. */
static inline uint64_t conf_lease_ms(const conf_t *c)
{
	if (c->lease_ms)
		return c->lease_ms;
	uint64_t lo = c->keepalive_ms + (c->keepalive_ms < 2000 ? c->keepalive_ms : 2000);
	uint64_t hi = c->grace_ms * 8 / 9;
	hi = hi ? hi - 1 : 0;
	return lo < hi ? lo + (hi - lo) / 2 : hi;
}
static inline uint64_t conf_lease_guard_ms(const conf_t *c)
{
	return conf_lease_ms(c) + conf_lease_ms(c) / 8;
}
/* Writes every key with its documentation (for --help-config). */
void conf_describe(buf_t *out);
/*
 * Appends c as one JSON object {"KEY": VALUE, ...}, every key of the table
 * in its order: counts and sizes as numbers, durations as "Nms", flags as
 * booleans, lists (mountpaths, s3.key, auth.grant) as arrays of strings,
 * the rest as strings. Secrets never appear: auth.secret and
 * cluster.secret are "****" when set ("" when not), and each s3.key shows
 * "ACCESS:****:USERID:DISPLAY NAME".
 */
void conf_encode(const conf_t *c, buf_t *out);

#endif
