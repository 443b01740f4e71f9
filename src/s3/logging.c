/*
 * logging.c - S3 server access logging served: ?logging of a bucket
 * (GetBucketLogging, PutBucketLogging, and Ceph's PostBucketLogging that
 * delivers the pending records at once), the record of every S3 request
 * on a bucket that logs, and the delivery of records, in batches, as log
 * objects into the target bucket (logcfg.c parses, logrec.c formats).
 *
 * Rules:
 *  1. The configuration is the bucket's BMD_DOC_LOGGING document, so every
 *     node knows which buckets log, and where, from its own BMD. Putting
 *     the same configuration again keeps it (and its Last-Modified).
 *  2. A request is recorded by the node its client sent it to (the one
 *     that answers the client: the gateway for a request it forwards),
 *     once: a request forwarded by a node of the cluster (S3_CLIENT_HDR
 *     from a node) is not recorded again where it is served. The record
 *     is made when the answer is complete (status, bytes sent, the
 *     serving target's relayed x-amz-request-id, ETag and version id).
 *  3. Records wait in memory on that node, in one batch per target bucket
 *     and prefix (and source bucket, for PartitionedPrefix names, which
 *     name it), as Ceph's RGW batches them, at most
 *     s3.logging_max_pending bytes for all buckets
 *     together (records beyond are dropped and counted, never blocking a
 *     request). A batch is delivered as one log object when it is
 *     ObjectRollTime (else s3.logging_roll_time) old, when it holds
 *     RecordsBatchSize records or S3LOG_OBJECT_MAX bytes, on
 *     PostBucketLogging of a bucket whose records it holds, and when
 *     the node stops. A crash loses the batch not yet delivered, nothing
 *     else; a delivery that fails after its retries is dropped with a
 *     warning.
 *  4. A log object is written as a client's PUT to the key's owner
 *     (ishard_put: the target bucket's copies or erasure coding hold), as
 *     the service S3LOG_SERVICE: the target bucket's policy must allow it
 *     s3:PutObject on TARGET/PREFIX (with aws:SourceArn and
 *     aws:SourceAccount of the source bucket), checked when the
 *     configuration is put (AccessDenied) and again at each delivery (for
 *     the batch's first source bucket: a batch of several sources, all
 *     checked when their configurations were put, is one object).
 *  5. A bucket that is a logging target cannot log itself, nor be its own
 *     target, and a bucket that logs cannot be a target (InvalidArgument),
 *     so a delivery never makes records.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "aisd/bmd.h"
#include "aisd/cluster.h"
#include "aisd/cmap.h"
#include "aisd/conf.h"
#include "aisd/ishard.h"
#include "aisd/log.h"
#include "aisd/s3.h"
#include "aisd/s3policy.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "s3log.h"
#include "aisd/banned.h"

#define S3LOG_OBJECT_MAX (4u << 20) /* a batch is delivered once it holds this many bytes */
#define S3LOG_TICK_MS    100        /* how often the delivery thread looks at the batches' ages */

/* Records waiting on this node for one target bucket and prefix (rule 3);
 * bucket and owner: of its first record (the partitioned name's). */
struct batch {
	struct batch *next;
	char *bucket, *owner, *target, *prefix;
	bool partitioned, event_time;
	uint32_t roll_s, max_n;
	buf_t data;
	size_t n;
	int64_t first_mono, first_wall_s;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct batch *pending; /* one per target and prefix (rule 3) */
	struct batch *due;     /* taken off pending, for the thread to deliver */
	size_t bytes;          /* pending + due */
	bool started, stop;
	pthread_t th;
	cluster_t *cl;
	uint64_t roll_ms, max_pending;
	char region[64];
	uint64_t seq;
	atomic_ullong dropped, delivered, failed;
	atomic_bool stopping; /* s3_log_stop: a delivery in progress makes no more attempts */
} lg = {.mu = PTHREAD_MUTEX_INITIALIZER, .roll_ms = 300000, .max_pending = 64u << 20};

/* --- the bucket's configuration --------------------------------------------------------- */

struct bck_view {
	bool found;
	char owner[S3ACL_UID_MAX + 1];
	s3log_cfg_t cfg;
	const char *policy; /* arena copy, NULL: none */
};

/* The bucket's owner, logging configuration (off when none or not
 * parsing) and policy, from the BMD, into a's memory. */
static void bck_view(cluster_t *cl, arena_t *a, sv_t bucket, struct bck_view *v)
{
	const bmd_t *b;
	char *doc = NULL;
	memset(v, 0, sizeof(*v));
	cluster_read_lock(cl, NULL, &b);
	const bmd_bucket_t *bk = b ? bmd_get(b, bucket.ptr, bucket.len) : NULL;
	if (bk) {
		v->found = true;
		snprintf(v->owner, sizeof(v->owner), "%s", bk->props.s3owner);
		const char *d = bmd_doc(b, BMD_DOC_LOGGING, bucket.ptr, bucket.len);
		doc = d ? arena_strndup(a, d, strlen(d)) : NULL;
		const char *p = bmd_policy(b, bucket.ptr, bucket.len);
		v->policy = p ? arena_strndup(a, p, strlen(p)) : NULL;
	}
	cluster_read_unlock(cl);
	if (doc && s3log_cfg_load(a, doc, strlen(doc), &v->cfg) != AIS_OK)
		memset(&v->cfg, 0, sizeof(v->cfg));
}

static const char *owner_or_default(const char *owner)
{
	if (owner && *owner)
		return owner;
	if (s3_cfg.keys && s3_keys_count(s3_cfg.keys) && s3_keys_at(s3_cfg.keys, 0)->user_id)
		return s3_keys_at(s3_cfg.keys, 0)->user_id;
	return "aisd";
}

struct pctx {
	const char *src_arn, *src_account;
};

static bool pol_key(void *arg, const char *key, sv_t *val)
{
	struct pctx *c = arg;
	if (!strcasecmp(key, "aws:SourceArn"))
		*val = sv_from(c->src_arn);
	else if (!strcasecmp(key, "aws:SourceAccount"))
		*val = sv_from(c->src_account);
	else
		return false;
	return true;
}

/* Does the target bucket's policy let the log service put TARGET/PREFIX
 * for source bucket src of owner (rule 4)? */
static bool delivery_allowed(arena_t *a, const char *target, const char *policy, const char *prefix,
                             const char *src, const char *owner)
{
	const s3pol_t *p;
	buf_t err = BUF_INIT;
	if (!policy)
		return false;
	int rc = s3pol_parse(a, target, policy, strlen(policy), &p, &err);
	buf_free(&err);
	if (rc != AIS_OK)
		return false;
	struct pctx c = {arena_printf(a, "arn:aws:s3:::%s", src), owner};
	s3pol_req_t q = {.service = S3LOG_SERVICE,
	                 .action = "s3:PutObject",
	                 .bucket = sv_from(target),
	                 .key = sv_from(prefix),
	                 .ctx = pol_key,
	                 .arg = &c};
	return s3pol_eval(p, &q, false) == S3POL_ALLOW;
}

/* --- batches ------------------------------------------------------------------------------ */

static void batch_free(struct batch *b)
{
	if (!b)
		return;
	free(b->bucket);
	free(b->owner);
	free(b->target);
	free(b->prefix);
	buf_free(&b->data);
	free(b);
}

static char *dup_sv(sv_t s)
{
	char *p = xmalloc(s.len + 1);
	if (s.len)
		memcpy(p, s.ptr, s.len);
	p[s.len] = '\0';
	return p;
}

/* Moves *pp (a pending batch) to the due list. Caller holds lg.mu. */
static void do_make_due(struct batch **pp)
{
	struct batch *b = *pp;
	*pp = b->next;
	b->next = lg.due;
	lg.due = b;
	pthread_cond_signal(&lg.cv);
}

static uint32_t roll_of(const struct batch *b)
{
	return b->roll_s ? b->roll_s : (uint32_t)MAX(lg.roll_ms / 1000, 1);
}

/* Is b the batch of bucket's records under configuration c (rule 3: one
 * per target and prefix, and per source bucket for partitioned names)? */
static bool batch_is(const struct batch *b, sv_t bucket, const s3log_cfg_t *c)
{
	return sv_eqstr(c->target, b->target) && sv_eqstr(c->prefix, b->prefix) &&
	       b->partitioned == c->partitioned && (!c->partitioned || sv_eqstr(bucket, b->bucket));
}

/* Appends one record line to bucket's batch (rule 3). */
static void append(sv_t bucket, const char *owner, const s3log_cfg_t *c, const buf_t *line)
{
	pthread_mutex_lock(&lg.mu);
	if (lg.stop) { /* (the node stops: what it held is delivered already) */
		pthread_mutex_unlock(&lg.mu);
		atomic_fetch_add(&lg.dropped, 1);
		return;
	}
	if (lg.bytes + line->len > lg.max_pending) {
		pthread_mutex_unlock(&lg.mu);
		if (atomic_fetch_add(&lg.dropped, 1) % 10000 == 0)
			log_warnx("S3 access log: records of %.*s dropped: %llu bytes wait for delivery "
			          "(s3.logging_max_pending)",
			          (int)MIN(bucket.len, 64), bucket.ptr, (unsigned long long)lg.max_pending);
		return;
	}
	struct batch **pp = &lg.pending;
	while (*pp && !batch_is(*pp, bucket, c))
		pp = &(*pp)->next;
	if (!*pp) {
		struct batch *b = xcalloc(1, sizeof(*b));
		b->bucket = dup_sv(bucket);
		b->owner = dup_sv(sv_from(owner));
		b->target = dup_sv(c->target);
		b->prefix = dup_sv(c->prefix);
		b->first_mono = time_mono_ns();
		b->first_wall_s = time_now_ns() / 1000000000LL;
		*pp = b;
	}
	struct batch *b = *pp;
	b->partitioned = c->partitioned, b->event_time = c->event_time;
	b->roll_s = c->roll_s, b->max_n = c->batch;
	buf_addsv(&b->data, sv_of(line));
	b->n++;
	lg.bytes += line->len;
	if ((b->max_n && b->n >= b->max_n) || b->data.len >= S3LOG_OBJECT_MAX)
		do_make_due(pp);
	pthread_mutex_unlock(&lg.mu);
}

/* Writes b as a log object. Returns its name (malloc'd) or NULL when it
 * could not be delivered (logged). Attempts again while the target's
 * owner is away (ishard_put), but once the node stops. */
static char *deliver(struct batch *b)
{
	arena_t *a = arena_new(4096);
	struct bck_view t;
	char *name = NULL;
	bck_view(lg.cl, a, sv_from(b->target), &t);
	if (!t.found || !delivery_allowed(a, b->target, t.policy, b->prefix, b->bucket, b->owner)) {
		log_warnx("S3 access log of %s: %zu records not delivered: bucket %s %s", b->bucket, b->n,
		          b->target,
		          t.found ? "does not allow " S3LOG_SERVICE " s3:PutObject (its policy)"
		                  : "does not exist");
		atomic_fetch_add(&lg.failed, 1);
		goto out;
	}
	{
		char uniq[96];
		const cmap_node_t *self = cluster_self(lg.cl);
		pthread_mutex_lock(&lg.mu);
		uint64_t seq = ++lg.seq;
		pthread_mutex_unlock(&lg.mu);
		size_t u = 0; /* the node's id (its letters and digits), then a number unique on it */
		for (const char *q = self ? self->id : "node"; *q && u < 40; q++)
			if ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))
				uniq[u++] = *q;
		snprintf(uniq + u, sizeof(uniq) - u, "-%llX%llX",
		         (unsigned long long)(time_now_ns() / 1000000 % 0xFFFFFFFFull),
		         (unsigned long long)seq);
		s3log_cfg_t c = {.enabled = true,
		                 .prefix = sv_from(b->prefix),
		                 .partitioned = b->partitioned,
		                 .event_time = b->event_time};
		buf_t nm = BUF_INIT;
		s3log_object_name(&c, b->owner, lg.region, sv_from(b->bucket), time_now_ns() / 1000000000LL,
		                  b->first_wall_s, uniq, &nm);
		int fd = memfd_create("s3log", MFD_CLOEXEC);
		FILE *f = fd >= 0 ? fdopen(fd, "w+") : NULL;
		if (!f) {
			if (fd >= 0)
				close(fd);
			log_warnx("S3 access log of %s: %zu records not delivered: %s", b->bucket, b->n,
			          strerror(errno));
			atomic_fetch_add(&lg.failed, 1);
			buf_free(&nm);
			goto out;
		}
		char why[256];
		int st = fwrite(b->data.ptr, 1, b->data.len, f) == b->data.len
		                 ? ishard_put(lg.cl, b->target, nm.ptr, f, NULL, &lg.stopping,
		                              "S3 access log", why, sizeof(why))
		                 : (snprintf(why, sizeof(why), "writing memory: %s", strerror(errno)), 500);
		fclose(f);
		if (st) {
			log_warnx("S3 access log of %s: %zu records not delivered to %s/%s: %s", b->bucket,
			          b->n, b->target, nm.ptr, why);
			atomic_fetch_add(&lg.failed, 1);
			buf_free(&nm);
			goto out;
		}
		atomic_fetch_add(&lg.delivered, 1);
		name = dup_sv(sv_of(&nm));
		buf_free(&nm);
	}
out:
	arena_destroy(a);
	pthread_mutex_lock(&lg.mu);
	lg.bytes -= b->data.len;
	pthread_mutex_unlock(&lg.mu);
	return name;
}

/* The delivery thread: batches due, or as old as their roll time. */
static void *log_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lg.mu);
	while (!lg.stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += S3LOG_TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		if (!lg.due)
			pthread_cond_timedwait(&lg.cv, &lg.mu, &ts);
		int64_t now = time_mono_ns();
		for (struct batch **pp = &lg.pending; *pp;) {
			if (now - (*pp)->first_mono >= (int64_t)roll_of(*pp) * 1000000000LL)
				do_make_due(pp);
			else
				pp = &(*pp)->next;
		}
		struct batch *due = lg.due;
		lg.due = NULL;
		pthread_mutex_unlock(&lg.mu);
		while (due) {
			struct batch *b = due;
			due = b->next;
			free(deliver(b));
			batch_free(b);
		}
		pthread_mutex_lock(&lg.mu);
	}
	pthread_mutex_unlock(&lg.mu);
	return NULL;
}

/* Starts the delivery thread once a node of a cluster records (lg.mu held). */
static void do_start(cluster_t *cl)
{
	if (lg.started || lg.stop)
		return;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&lg.cv, &ca);
	pthread_condattr_destroy(&ca);
	lg.cl = cl;
	if (pthread_create(&lg.th, NULL, log_thread, NULL) != 0) {
		log_warnx("S3 access log: cannot start its thread: %s", strerror(errno));
		return;
	}
	lg.started = true;
}

void s3_log_init(const conf_t *c)
{
	pthread_mutex_lock(&lg.mu);
	lg.roll_ms = c->s3_logging_roll_ms ? c->s3_logging_roll_ms : 1000;
	lg.max_pending = c->s3_logging_max_pending;
	snprintf(lg.region, sizeof(lg.region), "%s", c->s3_region);
	pthread_mutex_unlock(&lg.mu);
}

void s3_log_stop(void)
{
	pthread_mutex_lock(&lg.mu);
	bool started = lg.started;
	lg.stop = true;
	atomic_store(&lg.stopping, true);
	if (started)
		pthread_cond_signal(&lg.cv);
	pthread_mutex_unlock(&lg.mu);
	if (!started)
		return;
	pthread_join(lg.th, NULL);
	/* what is left: one attempt each (the node stops; peers may be stopping too) */
	pthread_mutex_lock(&lg.mu);
	struct batch *all = lg.due, *p = lg.pending;
	lg.due = lg.pending = NULL;
	while (p) {
		struct batch *n = p->next;
		p->next = all, all = p, p = n;
	}
	pthread_mutex_unlock(&lg.mu);
	while (all) {
		struct batch *b = all;
		all = b->next;
		free(deliver(b));
		batch_free(b);
	}
	lg.started = false;
}

/* --- records -------------------------------------------------------------------------------- */

/* What a request's record needs that is known when it arrives. */
struct logctx {
	s3_rq_t *r;
	s3log_cfg_t cfg;
	const char *owner;
	int64_t wall_ns, mono_ns;
	char ip[64];
	bool tls;
	char err[48];                 /* the S3 error code this node answered (s3_log_error) */
	bool acl_required;            /* s3_log_acl_required */
	struct keyrec *keys, **ktail; /* DeleteObjects: each key's outcome (s3_log_key) */
};

/* One key of a DeleteObjects. */
struct keyrec {
	struct keyrec *next;
	sv_t key, vid;
	const char *code; /* NULL: deleted */
};

void s3_log_acl_required(s3_rq_t *r)
{
	if (r->log)
		r->log->acl_required = true;
}

void s3_log_key(s3_rq_t *r, sv_t key, sv_t vid, const char *code)
{
	struct logctx *x = r->log;
	if (!x)
		return;
	arena_t *a = r->http->arena;
	struct keyrec *k = arena_zalloc(a, sizeof(*k));
	k->key = (sv_t){arena_strndup(a, key.ptr, key.len), key.len};
	if (vid.ptr)
		k->vid = (sv_t){arena_strndup(a, vid.ptr, vid.len), vid.len};
	k->code = code;
	*x->ktail = k;
	x->ktail = &k->next;
}

/* Appends rec to its batch, unless a Journal configuration leaves it out. */
static void emit(struct logctx *x, const s3log_rec_t *rec)
{
	if (x->cfg.type == S3LOG_JOURNAL &&
	    (!s3log_journal_op(rec->operation, rec->status) || !s3log_filter_pass(&x->cfg, rec->key)))
		return;
	buf_t line = BUF_INIT;
	s3log_rec_format(rec, x->cfg.type, &line);
	append(rec->bucket, x->owner, &x->cfg, &line);
	buf_free(&line);
}

void s3_log_error(s3_rq_t *r, const char *code)
{
	if (r->log)
		snprintf(r->log->err, sizeof(r->log->err), "%s", code);
}

/* The requester a signature claims (verified where the request is
 * served; a forwarded one's, by the key it names). */
static const char *requester(s3_rq_t *r, const char **auth_type, const char **sigv)
{
	http_req_t *req = r->http;
	sv_t h = http_req_header(req, "Authorization"), ak = {NULL, 0}, v;
	*auth_type = NULL, *sigv = NULL;
	if (h.ptr && sv_startswith(h, "AWS4-HMAC-SHA256")) {
		*auth_type = "AuthHeader", *sigv = "SigV4";
		const char *c = memmem(h.ptr, h.len, "Credential=", 11);
		if (c) {
			const char *s = c + 11, *e = memchr(s, '/', (size_t)(h.ptr + h.len - s));
			ak = (sv_t){s, e ? (size_t)(e - s) : 0};
		}
	} else if (h.ptr && sv_startswith(h, "AWS ")) {
		*auth_type = "AuthHeader", *sigv = "SigV2";
		const char *s = h.ptr + 4, *e = memchr(s, ':', h.len - 4);
		ak = (sv_t){s, e ? (size_t)(e - s) : 0};
	} else if (http_query_get(req, "X-Amz-Credential", &v)) {
		*auth_type = "QueryString", *sigv = "SigV4";
		sv_t dec;
		if (http_pct_decode(req->arena, v, true, &dec) == AIS_OK) {
			const char *e = memchr(dec.ptr, '/', dec.len);
			ak = (sv_t){dec.ptr, e ? (size_t)(e - dec.ptr) : 0};
		}
	} else if (http_query_get(req, "AWSAccessKeyId", &v)) {
		*auth_type = "QueryString", *sigv = "SigV2";
		ak = v;
	}
	if (r->auth.key && r->auth.key->user_id)
		return r->auth.key->user_id;
	const s3_key_t *k = ak.len && s3_cfg.keys ? s3_keys_find(s3_cfg.keys, ak) : NULL;
	return k && k->user_id ? k->user_id : NULL;
}

static sv_t unquoted(sv_t s)
{
	if (s.len >= 2 && s.ptr[0] == '"' && s.ptr[s.len - 1] == '"')
		return (sv_t){s.ptr + 1, s.len - 2};
	return s;
}

static void log_done(http_req_t *req, void *arg)
{
	struct logctx *x = arg;
	s3_rq_t *r = x->r;
	http_resp_info_t in;
	s3log_rec_t rec = {0};
	char op[S3LOG_OP_MAX];
	const char *method = http_method_name(req->method);

	http_resp_info(req, &in);
	s3log_operation(method, r->key.len > 0, req->query,
	                http_req_header(req, "x-amz-copy-source").ptr != NULL, op, sizeof(op));
	rec.owner = x->owner;
	rec.bucket = r->bucket;
	rec.time_ns = x->wall_ns;
	rec.remote_ip = x->ip;
	rec.requester = requester(r, &rec.auth_type, &rec.sig_version);
	sv_t rid = http_resp_header_get(req, "x-amz-request-id");
	rec.request_id = rid.ptr ? arena_strndup(req->arena, rid.ptr, rid.len) : req->id_str;
	rec.operation = op;
	rec.key = s3_key_named(r);
	rec.method = sv_from(method);
	rec.target = req->target;
	rec.status = in.status;
	rec.error_code = in.status >= 300 && x->err[0] ? x->err : NULL;
	rec.bytes_sent = in.body_out;
	rec.object_size = -1;
	uint64_t v;
	sv_t cl = http_resp_header_get(req, "Content-Length"),
	     cr = http_resp_header_get(req, "Content-Range");
	const char *slash = cr.ptr ? memchr(cr.ptr, '/', cr.len) : NULL;
	if (slash &&
	    num_parse_u64(slash + 1, (size_t)(cr.ptr + cr.len - slash - 1), 0, INT64_MAX, &v) == AIS_OK)
		rec.object_size = (int64_t)v;
	else if (in.status / 100 == 2 && (req->method == HTTP_GET || req->method == HTTP_HEAD) &&
	         r->key.len && cl.ptr && num_parse_u64(cl.ptr, cl.len, 0, INT64_MAX, &v) == AIS_OK)
		rec.object_size = (int64_t)v;
	else if (in.status == 200 && req->method == HTTP_GET && r->key.len && !req->query.len)
		rec.object_size = (int64_t)in.body_out;
	else if (req->method == HTTP_PUT && r->key.len) {
		sv_t d = http_req_header(req, "x-amz-decoded-content-length");
		if (d.ptr && num_parse_u64(d.ptr, d.len, 0, INT64_MAX, &v) == AIS_OK)
			rec.object_size = (int64_t)v;
		else if (req->content_length >= 0)
			rec.object_size = req->content_length;
	}
	int64_t ms = (time_mono_ns() - x->mono_ns) / 1000000;
	rec.total_ms = rec.turnaround_ms = ms < 0 ? 0 : ms;
	rec.referer = http_req_header(req, "Referer");
	rec.user_agent = http_req_header(req, "User-Agent");
	rec.version_id = http_resp_header_get(req, "x-amz-version-id");
	rec.etag = unquoted(http_resp_header_get(req, "ETag"));
	rec.host_id = req->id_str;
	rec.host = http_req_header(req, "Host");
	rec.tls_version = x->tls ? "TLS" : NULL;
	rec.acl_required = x->acl_required && in.status / 100 == 2;
	emit(x, &rec);
	for (const struct keyrec *k = x->keys; k; k = k->next) { /* a record per key, as Ceph's RGW */
		s3log_rec_t kr = rec;
		kr.operation = "REST.POST.DELETE_MULTI_OBJECT";
		kr.key = k->key;
		kr.version_id = k->vid;
		kr.status = k->code ? s3_error_http_status(k->code) : 204;
		kr.error_code = k->code;
		kr.bytes_sent = 0;
		kr.object_size = -1;
		kr.etag = (sv_t){NULL, 0};
		emit(x, &kr);
	}
}

void s3_log_arm(s3_rq_t *r)
{
	http_req_t *req = r->http;
	if (!r->bucket.len || !r->node.cl || req->method == HTTP_OPTIONS)
		return;
	if (http_req_header(req, S3_CLIENT_HDR).ptr && http_req_from_node(req))
		return; /* recorded where it arrived (rule 2) */
	struct logctx *x = arena_zalloc(req->arena, sizeof(*x));
	struct bck_view v;
	bck_view(r->node.cl, req->arena, r->bucket, &v);
	if (!v.cfg.enabled)
		return;
	x->r = r;
	x->cfg = v.cfg;
	x->owner = arena_strndup(req->arena, owner_or_default(v.owner), strlen(owner_or_default(v.owner)));
	x->wall_ns = time_now_ns();
	x->mono_ns = time_mono_ns();
	s3_client(r, x->ip, sizeof(x->ip), &x->tls);
	pthread_mutex_lock(&lg.mu);
	do_start(r->node.cl);
	pthread_mutex_unlock(&lg.mu);
	x->ktail = &x->keys;
	r->log = x;
	http_req_on_done(req, log_done, x);
}

/* --- ?logging ------------------------------------------------------------------------------ */

static void put_body(s3_rq_t *r, buf_t *body)
{
	arena_t *a = r->http->arena;
	s3log_cfg_t c;
	const char *why;
	switch (s3log_cfg_parse(a, body->ptr ? body->ptr : "", body->len, &c, &why)) {
	case S3LOG_OK: break;
	case S3LOG_INVALID:
		s3_error(r, "InvalidArgument", "%s", why ? why : "invalid logging configuration");
		return;
	case S3LOG_NYI:
		s3_error(r, "NotImplemented", "%s is not implemented", why ? why : "this logging setting");
		return;
	case S3LOG_MALFORMED:
	default: s3_error(r, "MalformedXML", NULL); return;
	}
	struct bck_view src, tgt;
	bck_view(r->node.cl, a, r->bucket, &src);
	if (!src.found) {
		s3_error(r, "NoSuchBucket", NULL);
		return;
	}
	const char *owner = owner_or_default(src.owner);
	/* only the bucket's owner, whatever its policy or ACL say (as S3) */
	if (s3_cfg.keys && s3_keys_count(s3_cfg.keys) &&
	    (!r->auth.key || !r->auth.key->user_id || strcmp(r->auth.key->user_id, owner))) {
		s3_error(r, "AccessDenied", "only the bucket's owner may change its logging");
		return;
	}
	if (!c.enabled) {
		if (src.cfg.enabled)
			s3_bucket_set_doc(r, BMD_DOC_LOGGING, NULL, 200);
		else
			s3_send_xml(r, 200, &(buf_t)BUF_INIT);
		return;
	}
	if (sv_eq(c.target, r->bucket)) {
		s3_error(r, "InvalidArgument", "a bucket cannot be its own logging target");
		return;
	}
	bck_view(r->node.cl, a, c.target, &tgt);
	if (!tgt.found) {
		s3_error_status(r, 400, "InvalidTargetBucketForLogging",
		                "The target bucket for logging does not exist");
		return;
	}
	if (tgt.cfg.enabled) {
		s3_error(r, "InvalidArgument", "the target bucket logs itself: a target bucket cannot log");
		return;
	}
	{ /* is this bucket another's target? (rule 5) */
		const bmd_t *b;
		bool is_target = false;
		cluster_read_lock(r->node.cl, NULL, &b);
		for (size_t i = 0; b && i < bmd_size(b) && !is_target; i++) {
			const bmd_bucket_t *bk = bmd_bucket(b, i);
			const char *d = bmd_doc(b, BMD_DOC_LOGGING, bk->name, strlen(bk->name));
			const char *t = d ? strstr(d, "<TargetBucket>") : NULL;
			is_target = t && !strncmp(t + 14, r->bucket.ptr, r->bucket.len) &&
			            t[14 + r->bucket.len] == '<';
		}
		cluster_read_unlock(r->node.cl);
		if (is_target) {
			s3_error(r, "InvalidArgument",
			         "the bucket is a logging target: a target bucket cannot log");
			return;
		}
	}
	char *tname = arena_strndup(a, c.target.ptr, c.target.len);
	char *sname = arena_strndup(a, r->bucket.ptr, r->bucket.len);
	if (!delivery_allowed(a, tname, tgt.policy, c.prefix.ptr ? c.prefix.ptr : "", sname, owner)) {
		s3_error(r, "AccessDenied",
		         "the target bucket's policy does not allow " S3LOG_SERVICE
		         " s3:PutObject on %s/%.*s",
		         tname, (int)c.prefix.len, c.prefix.ptr ? c.prefix.ptr : "");
		return;
	}
	if (src.cfg.enabled && s3log_cfg_same(&src.cfg, &c)) { /* rule 1: unchanged */
		s3_send_xml(r, 200, &(buf_t)BUF_INIT);
		return;
	}
	c.mtime_s = time_now_ns() / 1000000000LL;
	buf_t doc = BUF_INIT;
	s3log_cfg_store(&c, &doc);
	if (doc.len > BMD_S3LOGGING_MAX) {
		buf_free(&doc);
		s3_error(r, "InvalidArgument", "the logging configuration is over %d bytes",
		         BMD_S3LOGGING_MAX);
		return;
	}
	s3_bucket_set_doc(r, BMD_DOC_LOGGING, arena_strndup(a, doc.ptr, doc.len), 200);
	buf_free(&doc);
}

/* PostBucketLogging: the bucket's pending records delivered now. */
struct flush {
	s3_rq_t *r;
	struct batch *b;
	char *name;
};

static void flush_work(http_req_t *req)
{
	struct flush *f = ((s3_rq_t *)req->state)->op;
	if (f->b)
		f->name = deliver(f->b);
}

static void flush_done(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct flush *f = r->op;
	bool had = f->b != NULL;
	batch_free(f->b);
	f->b = NULL;
	if (had && !f->name) {
		s3_error(r, "ServiceUnavailable",
		         "the pending log records could not be delivered (see the node's log)");
		return;
	}
	buf_t b = BUF_INIT;
	s3_xml_head(&b, "PostBucketLoggingOutput");
	s3_xml_elemstr(&b, "FlushedLoggingObject", f->name ? f->name : "");
	s3_xml_close(&b, "PostBucketLoggingOutput");
	free(f->name);
	f->name = NULL;
	s3_send_xml(r, 200, &b);
}

static void flush_cleanup(void *arg)
{
	struct flush *f = arg;
	batch_free(f->b);
	free(f->name);
}

int s3_bucket_logging(s3_rq_t *r)
{
	http_req_t *req = r->http;
	if (!r->node.cl) {
		s3_error(r, "NotImplemented", "bucket logging is served by the nodes of a cluster");
		return AIS_OK;
	}
	struct bck_view v;
	bck_view(r->node.cl, req->arena, r->bucket, &v);
	if (!v.found) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	switch (req->method) {
	case HTTP_GET: {
		buf_t b = BUF_INIT;
		buf_addstr(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
		s3log_cfg_xml(&v.cfg, (uint32_t)MAX(lg.roll_ms / 1000, 1), &b);
		if (v.cfg.enabled && v.cfg.mtime_s > 0) {
			char when[64];
			time_t t = (time_t)v.cfg.mtime_s;
			struct tm tm;
			gmtime_r(&t, &tm);
			strftime(when, sizeof(when), "%a, %d %b %Y %H:%M:%S GMT", &tm);
			http_resp_header_str(req, "Last-Modified", when);
		}
		s3_send_xml(r, 200, &b);
		return AIS_OK;
	}
	case HTTP_PUT: s3_read_body(r, put_body); return AIS_OK;
	case HTTP_POST: {
		if (!v.cfg.enabled) {
			s3_error(r, "InvalidArgument", "the bucket does not log (PutBucketLogging)");
			return AIS_OK;
		}
		struct flush *f = arena_zalloc(req->arena, sizeof(*f));
		f->r = r;
		pthread_mutex_lock(&lg.mu);
		for (struct batch **pp = &lg.pending; *pp; pp = &(*pp)->next)
			if (batch_is(*pp, r->bucket, &v.cfg)) {
				f->b = *pp;
				*pp = f->b->next;
				f->b->next = NULL;
				break;
			}
		pthread_mutex_unlock(&lg.mu);
		arena_cleanup_add(req->arena, flush_cleanup, f);
		r->op = f;
		req->state = r;
		s3_offload(r, flush_work, flush_done);
		return AIS_OK;
	}
	default: s3_error(r, "MethodNotAllowed", NULL); return AIS_OK;
	}
}
