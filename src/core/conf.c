/*
 * conf.c - configuration keys, defaults and the config-file parser.
 *
 * The table below is the single list of keys: parser, --set, defaults and
 * --help-config all read it. aisd.conf(5) documents the same keys.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/perm.h"
#include "aisd/conf.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

enum ktype { K_STR, K_U64, K_SIZE, K_MS, K_FSYNC, K_MPATHS, K_BOOL, K_S3KEY, K_GRANT };

struct key {
	const char *name;
	enum ktype type;
	size_t off;      /* offset in conf_t */
	size_t size;     /* for K_STR: buffer size */
	const char *def; /* default, as text */
	const char *doc;
};

#define S(f) offsetof(conf_t, f), sizeof(((conf_t *)0)->f)
#define N(f) offsetof(conf_t, f), 0

static const struct key keys[] = {
	{"role", K_STR, S(role), "target", "node role: target (stores objects) or gateway"},
	{"node.id", K_STR, S(node_id), "", "node id in the cluster (default: HOST:PORT)"},
	{"net.host", K_STR, S(host), "127.0.0.1", "address to listen on"},
	{"net.port", K_U64, N(port), "8080", "TCP port to listen on (0 = any free port)"},
	{"net.workers", K_U64, N(workers), "0", "event-loop threads (0 = one per core)"},
	{"net.max_conns", K_U64, N(max_conns), "0",
	 "open client connections at most (0 = what the descriptor limit leaves after files, databases and peers); "
	 "at the limit a new connection closes the longest-idle one, else gets 503"},
	{"net.max_conns_per_client", K_U64, N(max_conns_per_client), "0",
	 "open connections of one client address at most (0 = a quarter of the connection limit, at least 16); "
	 "more get 503; nodes of the cluster are not held to it"},
	{"net.max_buffered_body", K_SIZE, N(max_buffered_body), "256MiB",
	 "JSON request bodies (GetBatch, bucket and cluster actions) and S3 XML bodies held in memory at once, "
	 "all connections together (503 beyond; a single larger body 413)"},
	{"net.max_header_bytes", K_SIZE, N(max_header_bytes), "16KiB",
	 "request line plus headers at most (431/414 beyond)"},
	{"net.header_timeout", K_MS, N(header_timeout_ms), "10s",
	 "time a client has to send a complete request head"},
	{"net.idle_timeout", K_MS, N(idle_timeout_ms), "60s", "keep-alive connection idle limit"},
	{"net.body_timeout", K_MS, N(body_timeout_ms), "60s",
	 "longest a request body or response may stall without progress"},
	{"net.max_body", K_SIZE, N(max_body), "5TiB",
	 "largest object body a PUT may send (413 beyond; 0 = no limit)"},
	{"net.rate_limit", K_U64, N(rate_limit), "0",
	 "object and bucket requests per second per client address and event-loop thread (429 beyond; 0 = off)"},
	{"net.rate_burst", K_U64, N(rate_burst), "0", "requests a client may send at once before net.rate_limit applies (0 = net.rate_limit)"},
	{"net.tls.cert", K_STR, S(tls_cert), "",
	 "PEM certificate chain of this node: set (with net.tls.key) to serve HTTPS only; also its client certificate for intra-cluster calls"},
	{"net.tls.key", K_STR, S(tls_key), "", "PEM private key of net.tls.cert"},
	{"net.tls.client_ca", K_STR, S(tls_client_ca), "",
	 "PEM CA bundle: when set, every connection must present a client certificate it signed (mTLS)"},
	{"net.tls.ca", K_STR, S(tls_ca), "",
	 "PEM CA bundle this node verifies other nodes' certificates with (empty: the system's CAs)"},
	{"net.tls.ktls", K_BOOL, N(tls_ktls), "on",
	 "on: hand TLS record encryption to the kernel (kTLS) where it offers it, so file bodies go out with sendfile"},
	{"net.unix_socket", K_STR, S(unix_socket), "auto",
	 "target: unix socket on which clients on this host get object files as open descriptors "
	 "(auto: aisd.sock in node.dir, none when net.tls.client_ca is set; off: none; or a path)"},
	{"io.threads", K_U64, N(io_threads), "8", "threads doing blocking disk work"},
	{"io.net_threads", K_U64, N(net_threads), "16",
	 "threads for blocking work that waits on other nodes (fan-outs, forwarded deletes, copies)"},
	{"store.mountpaths", K_MPATHS, N(mountpaths), "", "comma-separated data directories, one per disk"},
	{"store.fsync", K_FSYNC, N(fsync), "always",
	 "always: fsync data, directory and metadata before a PUT is acknowledged; never: leave it to the OS"},
	{"store.checksum", K_STR, S(checksum), "xxhash",
	 "default checksum of new buckets: xxhash, md5, sha256 or none"},
	{"store.put_buffer", K_SIZE, N(put_buffer), "1MiB", "bytes of a PUT body buffered per disk write"},
	{"store.min_free", K_SIZE, N(min_free_bytes), "64MiB",
	 "writes are refused (507) when a mountpath has less free space than this (with the size, when known, on top; checked again as bytes land)"},
	{"store.tombstone_ttl", K_MS, N(tomb_ttl_ms), "168h",
	 "how long a target remembers that a client deleted an object, so that a copy missed by the delete "
	 "(its target was away) is dropped instead of coming back (0: not remembered)"},
	{"store.check_interval", K_MS, N(mp_check_ms), "2s",
	 "how often a target checks that each mountpath is still its directory and writable; a failed one goes out of use (0: never)"},
	{"node.dir", K_STR, S(node_dir), "",
	 "directory for cluster metadata (default: a target's first mountpath; required for a gateway)"},
	{"cluster.join", K_STR, S(join), "",
	 "URL of the primary gateway to join (empty: a gateway becomes primary, a target runs standalone)"},
	{"cluster.public_url", K_STR, S(public_url), "", "URL clients use for this node (default http://HOST:PORT, https:// with net.tls.cert)"},
	{"cluster.keepalive", K_MS, N(keepalive_ms), "2s", "how often the primary checks every node's health"},
	{"cluster.grace", K_MS, N(grace_ms), "6s", "a node failing health checks this long leaves the cluster map"},
	{"cluster.lease", K_MS, N(lease_ms), "0",
	 "how long a majority's grants keep the primary acting as primary (0: derived from cluster.keepalive and cluster.grace)"},
	{"s3.domain", K_STR, S(s3_domain), "",
	 "base domain for virtual-hosted S3 (BUCKET.DOMAIN); empty: path-style only"},
	{"s3.mpu_max_age", K_MS, N(s3_mpu_max_age_ms), "168h",
	 "S3 multipart uploads neither completed nor aborted are removed after this long"},
	{"s3.native_etag", K_BOOL, N(s3_native_etag), "on",
	 "on: an object written through the native API (or copy-bck, ishard) gets the MD5 of its bytes as its S3 "
	 "ETag, computed as it is written; off: no MD5 (less CPU), S3 shows its checksum as its ETag"},
	{"s3.sse_key_file", K_STR, S(s3_sse_key_file), "",
	 "SSE-S3 master keys: \"ID BASE64KEY\" lines (32-byte keys), mode 0600; the last is used for new writes; "
	 "empty: SSE-S3 answers 501"},
	{"s3.kms_key_file", K_STR, S(s3_kms_key_file), "",
	 "SSE-KMS local key store: \"NAME BASE64KEY\" lines, the KMS key id is the NAME (the last is the default), "
	 "mode 0600; empty: SSE-KMS answers 501"},
	{"s3.sse_c_plain_http", K_BOOL, N(s3_sse_c_plain_http), "off",
	 "on: SSE-C (customer keys) accepted over plain HTTP; off: only when the node listens with TLS (else 400 "
	 "InvalidRequest, as S3)"},
	{"s3.lifecycle_day", K_MS, N(s3_lifecycle_day_ms), "24h",
	 "the length of a day of S3 lifecycle rules (Days, NoncurrentDays, DaysAfterInitiation); 24h counts "
	 "calendar days as S3 does, a shorter one (a test cluster's) counts exact multiples"},
	{"s3.lifecycle_period", K_MS, N(s3_lifecycle_period_ms), "1h",
	 "how often each target runs the lifecycle job over the buckets that have lifecycle rules (0: never)"},
	{"s3.logging_roll_time", K_MS, N(s3_logging_roll_ms), "300s",
	 "S3 server access logging: a batch of a bucket's records is delivered as a log object this long after its "
	 "first record (a bucket's ObjectRollTime overrides it); the batch not yet delivered is what a crash loses"},
	{"s3.logging_max_pending", K_SIZE, N(s3_logging_max_pending), "64MiB",
	 "S3 server access logging: records held in memory on a node, all buckets together, before delivery; "
	 "records beyond are dropped and counted"},
	{"s3.max_uploads", K_U64, N(s3_max_uploads), "1000",
	 "S3 multipart uploads in progress per bucket on each target (CreateMultipartUpload beyond: 400 "
	 "TooManyUploads; 0 = no limit)"},
	{"store.mountpath_roots", K_STR, S(mountpath_roots), "",
	 "comma-separated directories under which attach-mp may add a mountpath (empty: the parent directories of "
	 "store.mountpaths)"},
	{"store.allow_any_path", K_BOOL, N(allow_any_path), "off",
	 "on: attach-mp may add any directory (with auth.enabled only an administrator may attach)"},
	{"store.verify_on_read", K_BOOL, N(verify_on_read), "false",
	 "true: a GET of a whole object checksums it first; a bad copy is replaced from another copy"},
	{"store.hot_cache", K_SIZE, N(hot_cache), "256MiB",
	 "memory a target keeps recently read small objects in (bytes and metadata), so their GETs read neither "
	 "LevelDB nor the disk (0: off)"},
	{"store.hot_object_max", K_SIZE, N(hot_object_max), "64KiB",
	 "objects up to this size are kept in store.hot_cache (0 to 1MiB)"},
	{"store.atime_interval", K_MS, N(atime_ms), "1m",
	 "a read records the object's access time (Ais-Atime, listings' atime) when the one recorded is older than "
	 "this: at most one metadata write per object per interval (0: reads write nothing; the access time "
	 "stays the last write's)"},
	{"store.leveldb_cache", K_SIZE, N(ldb_cache), "0",
	 "each mountpath's LevelDB block cache: the object records read most often stay decoded in memory (1MiB to "
	 "64GiB; 0: 1/32 of the machine's memory shared by the mountpaths, 8MiB to 1GiB each)"},
	{"store.leveldb_write_buffer", K_SIZE, N(ldb_write_buffer), "16MiB",
	 "each mountpath's LevelDB memtable: records written are gathered this much before they go to a table file "
	 "(1MiB to 1GiB; up to twice this much memory, and as much log to replay at start)"},
	{"store.leveldb_bloom_bits", K_U64, N(ldb_bloom_bits), "10",
	 "bits per record in each LevelDB table's bloom filter, so a lookup of a missing name skips most tables "
	 "(0: no filter; at most 64)"},
	{"store.leveldb_max_open_files", K_U64, N(ldb_max_open_files), "1000",
	 "LevelDB table files each mountpath keeps open (64 to 1000000; counts against the process's descriptors)"},
	{"getbatch.max_entries", K_U64, N(gb_max_entries), "10000",
	 "entries one GetBatch request may list at most (400 beyond; 1 to 100000)"},
	{"getbatch.max_bytes", K_SIZE, N(gb_max_bytes), "4GiB",
	 "bytes one GetBatch answer (the tar) may hold at most: 400 before the first byte when this target's own "
	 "entries pass it, else the stream is cut where it passes (0 = no limit)"},
	{"getbatch.max_per_client", K_U64, N(gb_max_per_client), "4",
	 "GetBatch requests one client address may have running on a target at once (429 beyond; 0 = no limit); "
	 "nodes of the cluster are not held to it"},
	{"dsort.memory_limit", K_SIZE, N(dsort_memory_limit), "256MiB",
	 "memory one dsort run of a target may hold of the output shards it builds (the rest goes to a temporary file "
	 "on a mountpath) and of its index (a larger index fails the run); 1MiB to 64GiB"},
	{"mirror.delete_quorum", K_STR, S(delete_quorum), "all",
	 "all: a client's delete answers 503, naming them, unless every holder of a copy took it (a target down and "
	 "out of the map too); tombstone: one holder that took it is enough (its tombstone wins when the others return)"},
	{"mirror.write_quorum", K_U64, N(write_quorum), "0",
	 "copies that must be durable before a replicated PUT is acknowledged (0 = all of them)"},
	{"rebalance.workers", K_U64, N(rebalance_workers), "4",
	 "objects a target moves at once during a rebalance (each streams with bounded memory)"},
	{"rebalance.peer_streams", K_U64, N(rebalance_peer_streams), "2",
	 "objects a target sends to one other target at once during a rebalance (1 to 64)"},
	{"rebalance.rate", K_SIZE, N(rebalance_rate), "0",
	 "bytes per second a target's rebalance sends at most (0: no cap)"},
	{"rebalance.busy_rate", K_SIZE, N(rebalance_busy_rate), "0",
	 "bytes per second a target's rebalance sends at most while the target answers client reads, the rest "
	 "left to them (0: no cap)"},
	{"rebalance.drain_timeout", K_MS, N(drain_timeout_ms), "10m",
	 "decommission-node waits this long for the node to move its objects off"},
	{"remote.connect_timeout", K_MS, N(remote_connect_ms), "5s", "a remote backend must accept a connection (TCP and TLS) within this"},
	{"remote.timeout", K_MS, N(remote_timeout_ms), "60s",
	 "a request to a remote without object data (HEAD, DELETE, one listing page) ends within this, redirects included (0: no limit)"},
	{"remote.xfer_timeout", K_MS, N(remote_xfer_ms), "1h",
	 "one GET or PUT of object data from or to a remote ends within this (each range of a blob download on its own; 0: no limit)"},
	{"remote.stall_timeout", K_MS, N(remote_stall_ms), "30s",
	 "a transfer with a remote slower than remote.min_speed for this long ends (504)"},
	{"remote.min_speed", K_SIZE, N(remote_min_speed), "1KiB",
	 "bytes per second, over remote.stall_timeout, below which a transfer with a remote counts as stalled (0: no check)"},
	{"remote.max_list_bytes", K_SIZE, N(remote_list_bytes), "16MiB",
	 "largest answer of a remote to one listing page (502 beyond); a page also holds at most the entries asked for"},
	{"remote.max_cold_reads", K_U64, N(remote_cold_reads), "64",
	 "cold reads (fetches from the remote) of one remote running at once on a target; more answer 503 (1 to 512)"},
	{"etl.max_input", K_SIZE, N(etl_max_input), "256MiB",
	 "largest object an inline transform (GET ?etl=NAME) takes; a bigger one answers 413"},
	{"etl.max_output", K_SIZE, N(etl_max_output), "256MiB",
	 "largest answer a transformer's worker may give for one object; more is 507 naming the transformer"},
	{"etl.memory_limit", K_SIZE, N(etl_memory_limit), "2GiB", "address space of one worker process (RLIMIT_AS; 0: none)"},
	{"etl.cpu_limit", K_MS, N(etl_cpu_ms), "1h", "CPU time of one worker process before the kernel ends it (RLIMIT_CPU; 0: none)"},
	{"etl.allow_weak_isolation", K_BOOL, N(etl_weak), "off",
	 "start workers without their own mount and network namespaces where the machine cannot make them (else they are refused)"},
	{"log.level", K_STR, S(log_level), "info", "debug, info, warn or error"},
	{"debug.clock_offset", K_STR, S(clock_offset), "0",
	 "test hook: shift this node's wall clock by [+|-]DURATION (e.g. -10m), to test a cluster whose clocks disagree"},
	{"debug.delete_pause", K_MS, N(delete_pause_ms), "0",
	 "test hook: a client's delete waits this long on the target serving it after its tombstones are placed, "
	 "before it deletes the slices of an erasure-coded object (0: none)"},
	{"debug.bmd_apply_pause", K_MS, N(bmd_pause_ms), "0",
	 "test hook: a node waits this long between persisting new bucket metadata and acting on it (creating "
	 "and destroying its buckets) (0: none)"},
	{"debug.archive_pause", K_MS, N(archive_pause_ms), "0",
	 "test hook: the archive job waits this long after each member it packs (at most 10 s), so that a test "
	 "can cut a run (0: none)"},
	{"debug.dsort_commit_pause", K_MS, N(dsort_pause_ms), "0",
	 "test hook: a dsort run of a target waits this long before each output shard it commits (past its "
	 "barrier) (0: none)"},
	{"log.file", K_STR, S(log_file), "", "log file (default: standard error)"},
	{"s3.auth", K_BOOL, N(s3_auth), "on",
	 "on: S3 requests must be signed (SigV4) with an s3.key; off: no checks (trusted networks only)"},
	{"s3.sigv2", K_BOOL, N(s3_sigv2), "off",
	 "on: S3 also accepts AWS Signature Version 2 (HMAC-SHA1, header and presigned URL) from older clients; "
	 "off: such a request answers 400 InvalidRequest naming this key (SigV2 is weaker than SigV4: SHA-1, "
	 "no scope, and AWS retired it)"},
	{"s3.region", K_STR, S(s3_region), "us-east-1", "the cluster's S3 region: GetBucketLocation answers it, CreateBucket accepts it as LocationConstraint (clients may sign for any)"},
	{"s3.max_skew", K_MS, N(s3_max_skew_ms), "15m",
	 "largest difference between a signed request's time and the clock"},
	{"s3.key", K_S3KEY, N(s3_keys), "",
	 "an S3 key pair ACCESS_KEY:SECRET_KEY:USER_ID:DISPLAY NAME; repeat the key for more (empty: none)"},
	{"log.access", K_STR, S(log_access), "off", "access log, one line per request: on or off"},
	{"log.access_file", K_STR, S(log_access_file), "",
	 "access log file (default: the main log; - for standard error)"},
	{"auth.enabled", K_BOOL, N(auth_enabled), "off",
	 "on: every request but /v1/health needs credentials (a bearer token, a signed redirect, an S3 key with a grant)"},
	{"auth.secret", K_STR, S(auth_secret), "", "HS256 key that signs bearer tokens (16..255 bytes; or auth.secret_file)"},
	{"auth.secret_file", K_STR, S(auth_secret_file), "", "file whose first line is auth.secret"},
	{"auth.grant", K_GRANT, N(auth_grants), "",
	 "USER:BUCKET:PERM, what an S3 key's user may do (PERM: ro, rw, admin or read,write,list,delete; BUCKET * = all; USER:*:admin = administrator); repeat for more"},
	{"cluster.secret", K_STR, S(cluster_secret), "",
	 "shared by every node: signs intra-cluster calls and redirects (16..255 bytes; or cluster.secret_file); empty: intra-cluster calls are not authenticated (and auth.enabled is refused)"},
	{"cluster.secret_file", K_STR, S(cluster_secret_file), "", "file whose first line is cluster.secret"},
};

static const struct key *find_key(const char *name, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (strlen(keys[i].name) == len && !memcmp(keys[i].name, name, len))
			return &keys[i];
	return NULL;
}

int conf_parse_ms(const char *v, uint64_t *out)
{
	size_t n = strlen(v), d = 0;
	uint64_t x, mult;
	while (d < n && v[d] >= '0' && v[d] <= '9')
		d++;
	if (num_parse_u64(v, d, 0, UINT64_MAX / 3600000, &x) != AIS_OK)
		return AIS_ERR;
	const char *u = v + d;
	if (!strcmp(u, "ms"))
		mult = 1;
	else if (!strcmp(u, "s") || !*u)
		mult = 1000;
	else if (!strcmp(u, "m"))
		mult = 60000;
	else if (!strcmp(u, "h"))
		mult = 3600000;
	else
		return AIS_ERR;
	*out = x * mult;
	return AIS_OK;
}

int conf_clock_offset(const conf_t *c, int64_t *ns)
{
	uint64_t ms = 0;
	const char *v = c->clock_offset + (c->clock_offset[0] == '+' || c->clock_offset[0] == '-');
	if (conf_parse_ms(v, &ms) != AIS_OK || ms > 365ULL * 24 * 3600 * 1000)
		return AIS_ERR;
	*ns = (c->clock_offset[0] == '-' ? -1 : 1) * (int64_t)ms * 1000000;
	return AIS_OK;
}

static int set_key(conf_t *c, const struct key *k, const char *v, buf_t *err)
{
	char *base = (char *)c;
	uint64_t x;
	sv_t gu, gb;
	unsigned gp;

	switch (k->type) {
	case K_STR:
		if (strlen(v) >= k->size)
			goto bad;
		memcpy(base + k->off, v, strlen(v) + 1);
		return AIS_OK;
	case K_U64:
		if (num_parse_u64(v, strlen(v), 0, UINT32_MAX, &x) != AIS_OK)
			goto bad;
		*(uint64_t *)(base + k->off) = x;
		return AIS_OK;
	case K_SIZE:
		if (num_parse_size(v, &x) != AIS_OK)
			goto bad;
		*(uint64_t *)(base + k->off) = x;
		return AIS_OK;
	case K_MS:
		if (conf_parse_ms(v, &x) != AIS_OK)
			goto bad;
		*(uint64_t *)(base + k->off) = x;
		return AIS_OK;
	case K_FSYNC:
		if (!strcmp(v, "always"))
			c->fsync = CONF_FSYNC_ALWAYS;
		else if (!strcmp(v, "never"))
			c->fsync = CONF_FSYNC_NEVER;
		else
			goto bad;
		return AIS_OK;
	case K_BOOL:
		if (!strcmp(v, "on") || !strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
			*(bool *)(base + k->off) = true;
		else if (!strcmp(v, "off") || !strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
			*(bool *)(base + k->off) = false;
		else
			goto bad;
		return AIS_OK;
	case K_S3KEY: {
		/* each line adds a key; an empty value clears the list */
		sv_t f[4];
		if (!*v) {
			c->n_s3_keys = 0;
			return AIS_OK;
		}
		if (conf_s3key_split(v, f, err) != AIS_OK)
			return AIS_ERR;
		for (int i = 0; i < c->n_s3_keys; i++) {
			if (!strncmp(c->s3_keys[i], v, f[0].len + 1)) {
				buf_addf(err, "%s: access key %.*s is given twice", k->name, (int)f[0].len,
				         f[0].ptr);
				return AIS_ERR;
			}
		}
		if (c->n_s3_keys >= CONF_MAX_S3_KEYS) {
			buf_addf(err, "%s: more than %d keys", k->name, CONF_MAX_S3_KEYS);
			return AIS_ERR;
		}
		memcpy(c->s3_keys[c->n_s3_keys++], v, strlen(v) + 1);
		return AIS_OK;
	}
	case K_GRANT: {
		/* each line adds a grant; an empty value clears the list */
		if (!*v) {
			c->n_auth_grants = 0;
			return AIS_OK;
		}
		if (strlen(v) >= sizeof(c->auth_grants[0])) {
			buf_addf(err, "%s: too long", k->name);
			return AIS_ERR;
		}
		if (auth_grant_split(v, &gu, &gb, &gp, err) != AIS_OK)
			return AIS_ERR;
		if (c->n_auth_grants >= CONF_MAX_GRANTS) {
			buf_addf(err, "%s: more than %d grants", k->name, CONF_MAX_GRANTS);
			return AIS_ERR;
		}
		memcpy(c->auth_grants[c->n_auth_grants++], v, strlen(v) + 1);
		return AIS_OK;
	}
	case K_MPATHS: {
		c->n_mountpaths = 0;
		const char *p = v;
		while (*p) {
			const char *e = strchr(p, ',');
			size_t n = e ? (size_t)(e - p) : strlen(p);
			sv_t item = sv_trim((sv_t){p, n}); /* "/d1, /d2" */
			if (item.len) {
				if (c->n_mountpaths >= CONF_MAX_MOUNTPATHS ||
				    item.len >= sizeof(c->mountpaths[0]))
					goto bad;
				memcpy(c->mountpaths[c->n_mountpaths], item.ptr, item.len);
				c->mountpaths[c->n_mountpaths++][item.len] = '\0';
			}
			p += n + (e ? 1 : 0);
		}
		return AIS_OK;
	}
	}
bad:
	buf_addf(err, "invalid value for %s: '%s'", k->name, v);
	return AIS_ERR;
}

static bool all_bytes(sv_t s, const char *what)
{
	for (size_t i = 0; i < s.len; i++) {
		unsigned char ch = (unsigned char)s.ptr[i];
		bool ok = what[0] == 'a'
		                  ? (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		                            (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-'
		          : what[0] == 's' ? ch > ' ' && ch < 0x7f && ch != ':' && ch != '#'
		          : what[0] == 'u' ? ch >= ' ' && ch != 0x7f && ch != ':'
		                           : ch >= ' ' && ch != 0x7f;
		if (!ok)
			return false;
	}
	return true;
}

int conf_s3key_split(const char *spec, sv_t f[4], buf_t *err)
{
	const char *p = spec;
	for (int i = 0; i < 3; i++) {
		const char *c = strchr(p, ':');
		if (!c) {
			buf_addstr(err, "s3.key must be ACCESS_KEY:SECRET_KEY:USER_ID:DISPLAY NAME");
			return AIS_ERR;
		}
		f[i] = (sv_t){p, (size_t)(c - p)};
		p = c + 1;
	}
	f[3] = sv_from(p);
	if (f[0].len < 3 || f[0].len > 128 || !all_bytes(f[0], "access")) {
		buf_addstr(err, "s3.key: the access key must be 3 to 128 of A-Z a-z 0-9 _ . -");
		return AIS_ERR;
	}
	if (f[1].len < 8 || f[1].len > 128 || !all_bytes(f[1], "secret")) {
		buf_addstr(err,
		           "s3.key: the secret key must be 8 to 128 printable characters, no ':', '#' or spaces");
		return AIS_ERR;
	}
	if (!f[2].len || f[2].len > 128 || !all_bytes(f[2], "uid")) {
		buf_addstr(err, "s3.key: the user id must be 1 to 128 printable characters, no ':'");
		return AIS_ERR;
	}
	if (!f[3].len || f[3].len > 128 || !all_bytes(f[3], "name")) {
		buf_addstr(err, "s3.key: the display name must be 1 to 128 printable characters");
		return AIS_ERR;
	}
	return AIS_OK;
}

void conf_defaults(conf_t *c)
{
	buf_t err = BUF_INIT;
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (set_key(c, &keys[i], keys[i].def, &err) != AIS_OK)
			fatalx("bad default: %s", err.ptr);
	buf_free(&err);
}

int conf_set(conf_t *c, const char *key, const char *value, buf_t *err)
{
	const struct key *k = find_key(key, strlen(key));
	if (!k) {
		buf_addf(err, "unknown config key '%s'", key);
		return AIS_ERR;
	}
	return set_key(c, k, value, err);
}

int conf_parse(conf_t *c, const char *text, size_t len, buf_t *err)
{
	size_t pos = 0;
	int lineno = 0;
	char kbuf[128], vbuf[8192];

	while (pos < len) {
		const char *line = text + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;
		pos += n + (nl ? 1 : 0);
		lineno++;

		sv_t l = {line, n};
		const char *hash = memchr(l.ptr, '#', l.len);
		if (hash)
			l.len = (size_t)(hash - l.ptr);
		if (l.len && l.ptr[l.len - 1] == '\r')
			l.len--;
		l = sv_trim(l);
		if (!l.len)
			continue;
		const char *eq = memchr(l.ptr, '=', l.len);
		if (!eq) {
			buf_addf(err, "line %d: expected 'key = value'", lineno);
			return AIS_ERR;
		}
		sv_t k = sv_trim((sv_t){l.ptr, (size_t)(eq - l.ptr)});
		sv_t v = sv_trim((sv_t){eq + 1, l.len - (size_t)(eq - l.ptr) - 1});
		if (k.len >= sizeof(kbuf) || v.len >= sizeof(vbuf) || memchr(v.ptr, '\0', v.len)) {
			buf_addf(err, "line %d: key or value too long", lineno);
			return AIS_ERR;
		}
		memcpy(kbuf, k.ptr, k.len);
		kbuf[k.len] = '\0';
		memcpy(vbuf, v.ptr, v.len);
		vbuf[v.len] = '\0';
		if (conf_set(c, kbuf, vbuf, err) != AIS_OK) {
			buf_t msg = BUF_INIT;
			buf_addf(&msg, "line %d: %s", lineno, err->ptr);
			buf_reset(err);
			buf_addsv(err, sv_of(&msg));
			buf_free(&msg);
			return AIS_ERR;
		}
	}
	return AIS_OK;
}

int conf_load(conf_t *c, const char *path, buf_t *err)
{
	buf_t text = BUF_INIT;
	char chunk[8192];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		buf_addf(err, "%s: %s", path, strerror(errno));
		return AIS_ERR;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) > 0 && text.len <= (1 << 20))
		buf_add(&text, chunk, (size_t)n);
	if (n < 0 || text.len > (1 << 20)) {
		/* EISDIR and friends, or not a config file: never run on defaults */
		buf_addf(err, "%s: %s", path, n < 0 ? strerror(errno) : "larger than 1MiB");
		close(fd);
		buf_free(&text);
		return AIS_ERR;
	}
	close(fd);
	int rc = conf_parse(c, text.ptr ? text.ptr : "", text.len, err);
	if (rc != AIS_OK) {
		buf_t msg = BUF_INIT;
		buf_addf(&msg, "%s: %s", path, err->ptr);
		buf_reset(err);
		buf_addsv(err, sv_of(&msg));
		buf_free(&msg);
	}
	buf_free(&text);
	return rc;
}

int conf_validate(const conf_t *c, buf_t *err)
{
	if (strcmp(c->role, "target") && strcmp(c->role, "gateway")) {
		buf_addf(err, "role must be 'target' or 'gateway', not '%s'", c->role);
		return AIS_ERR;
	}
	if (!strcmp(c->role, "gateway") && !c->node_dir[0]) {
		buf_addstr(err, "a gateway needs node.dir (--dir DIR) for its cluster metadata");
		return AIS_ERR;
	}
	if ((c->join[0] && strncmp(c->join, "http://", 7) && strncmp(c->join, "https://", 8)) ||
	    (c->public_url[0] && strncmp(c->public_url, "http://", 7) && strncmp(c->public_url, "https://", 8))) {
		buf_addstr(err, "cluster.join and cluster.public_url must be http:// or https:// URLs");
		return AIS_ERR;
	}
	if (!c->tls_cert[0] != !c->tls_key[0] || ((c->tls_client_ca[0] || c->tls_ca[0]) && !c->tls_cert[0])) {
		buf_addstr(err, "net.tls.cert and net.tls.key go together, and net.tls.client_ca and net.tls.ca need them");
		return AIS_ERR;
	}
	if (c->tls_cert[0] && ((c->join[0] && strncmp(c->join, "https://", 8)) ||
			       (c->public_url[0] && strncmp(c->public_url, "https://", 8)))) {
		buf_addstr(err, "with net.tls.cert, cluster.join and cluster.public_url must be https:// URLs");
		return AIS_ERR;
	}
	if (c->keepalive_ms < 100 || c->grace_ms < c->keepalive_ms) {
		buf_addstr(err, "cluster.keepalive must be at least 100ms and cluster.grace at least cluster.keepalive");
		return AIS_ERR;
	}
	uint64_t lease = conf_lease_ms(c);
	if (lease <= c->keepalive_ms || conf_lease_guard_ms(c) >= c->grace_ms) {
		buf_addf(err, "the primary's lease (cluster.lease, %llu ms%s) must be longer than cluster.keepalive and, "
			      "with its clock-drift margin of 1/8, shorter than cluster.grace",
			 (unsigned long long)lease, c->lease_ms ? "" : ", derived from cluster.keepalive and cluster.grace");
		return AIS_ERR;
	}
	if (!strcmp(c->role, "target") && c->n_mountpaths == 0) {
		buf_addstr(err, "a target needs at least one mountpath (store.mountpaths or --mountpath)");
		return AIS_ERR;
	}
	if (c->port > 65535) {
		buf_addf(err, "net.port %llu is not a port", (unsigned long long)c->port);
		return AIS_ERR;
	}
	if (strcmp(c->checksum, "xxhash") && strcmp(c->checksum, "md5") &&
	    strcmp(c->checksum, "sha256") && strcmp(c->checksum, "none")) {
		buf_addf(err, "store.checksum must be xxhash, md5, sha256 or none, not '%s'", c->checksum);
		return AIS_ERR;
	}
	int64_t off;
	if (conf_clock_offset(c, &off) != AIS_OK) {
		buf_addf(err, "debug.clock_offset must be [+|-]DURATION (e.g. -10m) of at most a year, not '%s'",
			 c->clock_offset);
		return AIS_ERR;
	}
	enum log_level lv;
	if (log_parse_level(c->log_level, &lv) != AIS_OK) {
		buf_addf(err, "log.level must be debug, info, warn or error, not '%s'", c->log_level);
		return AIS_ERR;
	}
	if (strcmp(c->log_access, "on") && strcmp(c->log_access, "off")) {
		buf_addf(err, "log.access must be on or off, not '%s'", c->log_access);
		return AIS_ERR;
	}
	if (c->max_header_bytes < 1024 || c->max_header_bytes > (1 << 20)) {
		buf_addstr(err, "net.max_header_bytes must be between 1KiB and 1MiB");
		return AIS_ERR;
	}
	if (c->put_buffer < 4096 || c->put_buffer > (64 << 20)) {
		buf_addstr(err, "store.put_buffer must be between 4KiB and 64MiB");
		return AIS_ERR;
	}
	if ((c->ldb_cache && c->ldb_cache < (1 << 20)) || c->ldb_cache > (64ULL << 30) || c->ldb_write_buffer < (1 << 20) ||
	    c->ldb_write_buffer > (1ULL << 30) || c->ldb_bloom_bits > 64 || c->ldb_max_open_files < 64 ||
	    c->ldb_max_open_files > 1000000) {
		buf_addstr(err, "store.leveldb_cache must be 0 or between 1MiB and 64GiB, store.leveldb_write_buffer between "
				"1MiB and 1GiB, store.leveldb_bloom_bits at most 64 and store.leveldb_max_open_files "
				"between 64 and 1000000");
		return AIS_ERR;
	}
	if (c->hot_object_max > (1 << 20)) {
		buf_addstr(err, "store.hot_object_max must be between 0 and 1MiB");
		return AIS_ERR;
	}
	if (c->s3_max_skew_ms < 1000 || c->s3_max_skew_ms > 24 * 3600 * 1000) {
		buf_addstr(err, "s3.max_skew must be between 1s and 24h");
		return AIS_ERR;
	}
	if (!c->s3_region[0] ||
	    strspn(c->s3_region, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") !=
	            strlen(c->s3_region)) {
		buf_addstr(err, "s3.region must be letters, digits, '-' and '_' (e.g. us-east-1)");
		return AIS_ERR;
	}
	if (c->dsort_memory_limit < (1u << 20) || c->dsort_memory_limit > (64ull << 30)) {
		buf_addstr(err, "dsort.memory_limit must be between 1MiB and 64GiB");
		return AIS_ERR;
	}
	if (c->gb_max_entries == 0 || c->gb_max_entries > 100000) { /* (MOSS_MAX_ENTRIES) */
		buf_addstr(err, "getbatch.max_entries must be between 1 and 100000");
		return AIS_ERR;
	}
	if (c->rebalance_workers == 0 || c->rebalance_workers > 64) {
		buf_addstr(err, "rebalance.workers must be between 1 and 64");
		return AIS_ERR;
	}
	if (c->rebalance_peer_streams == 0 || c->rebalance_peer_streams > 64) {
		buf_addstr(err, "rebalance.peer_streams must be between 1 and 64");
		return AIS_ERR;
	}
	if (c->remote_cold_reads == 0 || c->remote_cold_reads > 512) {
		buf_addstr(err, "remote.max_cold_reads must be between 1 and 512");
		return AIS_ERR;
	}
	if (c->remote_connect_ms == 0 || c->remote_stall_ms == 0 || c->remote_list_bytes < 4096) {
		buf_addstr(err, "remote.connect_timeout and remote.stall_timeout must be more than 0, "
				"remote.max_list_bytes at least 4KiB");
		return AIS_ERR;
	}
	if (strcmp(c->delete_quorum, "all") && strcmp(c->delete_quorum, "tombstone")) {
		buf_addf(err, "mirror.delete_quorum must be all or tombstone, not '%s'", c->delete_quorum);
		return AIS_ERR;
	}
	if (c->write_quorum > 32) {
		buf_addstr(err, "mirror.write_quorum must be between 0 (all copies) and 32");
		return AIS_ERR;
	}
	if (c->io_threads == 0 || c->io_threads > 256) {
		buf_addstr(err, "io.threads must be between 1 and 256");
		return AIS_ERR;
	}
	if (c->net_threads == 0 || c->net_threads > 1024) {
		buf_addstr(err, "io.net_threads must be between 1 and 1024");
		return AIS_ERR;
	}
	if (c->auth_enabled && !c->auth_secret[0]) {
		buf_addstr(err, "auth.enabled needs auth.secret (or auth.secret_file)");
		return AIS_ERR;
	}
	/* every role, a lone target too: it takes signed redirects and
	 * intra-cluster calls, and without a key anyone could sign them */
	if (c->auth_enabled && !c->cluster_secret[0]) {
		buf_addstr(err, "auth.enabled needs cluster.secret (or cluster.secret_file) on every node, a lone "
				"target too: it signs and checks redirects and intra-cluster calls");
		return AIS_ERR;
	}
	if ((c->auth_secret[0] && strlen(c->auth_secret) < 16) ||
	    (c->cluster_secret[0] && strlen(c->cluster_secret) < 16)) {
		buf_addstr(err, "auth.secret and cluster.secret must be at least 16 bytes");
		return AIS_ERR;
	}
	return AIS_OK;
}

static int read_secret(const char *path, char *out, size_t outsz, buf_t *err)
{
	char tmp[1024];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		buf_addf(err, "%s: %s", path, strerror(errno));
		return AIS_ERR;
	}
	ssize_t n = read(fd, tmp, sizeof(tmp) - 1);
	int e = errno;
	close(fd);
	if (n < 0) {
		buf_addf(err, "%s: %s", path, strerror(e));
		return AIS_ERR;
	}
	tmp[n] = '\0';
	size_t l = strcspn(tmp, "\r\n");
	if (l < 16 || l >= outsz || memchr(tmp, '\0', l)) {
		buf_addf(err, "%s: the secret (its first line) must be 16..%zu bytes", path, outsz - 1);
		return AIS_ERR;
	}
	memcpy(out, tmp, l);
	out[l] = '\0';
	explicit_bzero(tmp, sizeof(tmp));
	return AIS_OK;
}

int conf_load_secrets(conf_t *c, buf_t *err)
{
	if (c->auth_secret_file[0] &&
	    read_secret(c->auth_secret_file, c->auth_secret, sizeof(c->auth_secret), err) != AIS_OK)
		return AIS_ERR;
	if (c->cluster_secret_file[0] &&
	    read_secret(c->cluster_secret_file, c->cluster_secret, sizeof(c->cluster_secret), err) != AIS_OK)
		return AIS_ERR;
	return AIS_OK;
}

/* Keys whose values are secrets: shown only as whether they are set. */
static bool key_secret(const struct key *k)
{
	return !strcmp(k->name, "auth.secret") || !strcmp(k->name, "cluster.secret");
}

void conf_encode(const conf_t *c, buf_t *out)
{
	const char *base = (const char *)c;
	buf_addch(out, '{');
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const struct key *k = &keys[i];
		const void *f = base + k->off;
		if (i)
			buf_addch(out, ',');
		buf_add_json_str(out, k->name, strlen(k->name));
		buf_addch(out, ':');
		switch (k->type) {
		case K_STR:
			if (key_secret(k))
				buf_addstr(out, *(const char *)f ? "\"****\"" : "\"\"");
			else
				buf_add_json_str(out, f, strnlen(f, k->size));
			break;
		case K_U64:
		case K_SIZE: buf_addu64(out, *(const uint64_t *)f); break;
		case K_MS: buf_addf(out, "\"%llums\"", (unsigned long long)*(const uint64_t *)f); break;
		case K_FSYNC: buf_addstr(out, c->fsync == CONF_FSYNC_NEVER ? "\"never\"" : "\"always\""); break;
		case K_BOOL: buf_addstr(out, *(const bool *)f ? "true" : "false"); break;
		case K_MPATHS:
			buf_addch(out, '[');
			for (int m = 0; m < c->n_mountpaths; m++) {
				if (m)
					buf_addch(out, ',');
				buf_add_json_str(out, c->mountpaths[m], strlen(c->mountpaths[m]));
			}
			buf_addch(out, ']');
			break;
		case K_S3KEY:
			/* ACCESS:****:USERID:DISPLAY NAME: the secret never leaves */
			buf_addch(out, '[');
			for (int m = 0; m < c->n_s3_keys; m++) {
				const char *ak = c->s3_keys[m], *c1 = strchr(ak, ':');
				const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
				buf_t v = BUF_INIT;
				buf_add(&v, ak, c1 ? (size_t)(c1 - ak) : strlen(ak));
				buf_addf(&v, ":****%s", c2 ? c2 : "");
				if (m)
					buf_addch(out, ',');
				buf_add_json_str(out, v.ptr, v.len);
				buf_free(&v);
			}
			buf_addch(out, ']');
			break;
		case K_GRANT:
			buf_addch(out, '[');
			for (int m = 0; m < c->n_auth_grants; m++) {
				if (m)
					buf_addch(out, ',');
				buf_add_json_str(out, c->auth_grants[m], strlen(c->auth_grants[m]));
			}
			buf_addch(out, ']');
			break;
		}
	}
	buf_addch(out, '}');
}

void conf_describe(buf_t *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		buf_addf(out, "  %-22s %s (default: %s)\n", keys[i].name, keys[i].doc,
			 *keys[i].def ? keys[i].def : "none");
}
