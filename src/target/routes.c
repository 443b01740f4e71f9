/*
 * routes.c - the target's route table and its life cycle: open the store,
 * start the HTTP server with these routes, stop both.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "aisd/authz.h"
#include "aisd/httpc.h"
#include "aisd/jobreg.h"
#include "aisd/jobs.h"
#include "aisd/ishard.h"
#include "aisd/xarch.h"
#include "aisd/dsort.h"
#include "aisd/xcopy.h"
#include "aisd/log.h"
#include "aisd/metrics.h"
#include "aisd/place.h"
#include "aisd/s3.h"
#include "aisd/backend.h"
#include "aisd/etl.h"
#include "aisd/ol.h"
#include "aisd/status.h"
#include "target_int.h"
#include "ec_int.h"
#include "getbatch_int.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define M(x) HTTP_M(HTTP_##x)

static int tgt_jobs(http_req_t *req);

static const http_route_t routes[] = {
	{"/v1/objects", M(GET) | M(HEAD) | M(PUT) | M(DELETE) | M(PATCH), HTTP_ROUTE_BODY, 0, tgt_objects,
	 "object data: GET, HEAD, PUT, DELETE /v1/objects/BUCKET/OBJECT; PATCH (metadata) between targets",
	 5 /* PUT: the file, its pipes (body and copies); GET: the file */},
	{"/v1/ec", M(GET) | M(PUT) | M(DELETE), HTTP_ROUTE_BODY, 0, tgt_ec,
	 "erasure-coded slices, between targets only: GET, PUT, DELETE /v1/ec/BUCKET/OBJECT", 3},
	{"/v1/buckets", M(GET) | M(HEAD) | M(POST) | M(DELETE), HTTP_ROUTE_JSON, 1 << 20, tgt_buckets,
	 "buckets: list, create-bck, destroy-bck, list objects, props", 0},
	{"/v1/health", M(GET) | M(HEAD), HTTP_ROUTE_NOLIMIT | HTTP_ROUTE_PUBLIC, 0, tgt_health, "health: 200 when serving", 0},
	{"/v1/ml/moss", M(GET), HTTP_ROUTE_JSON, 64 << 20, tgt_getbatch,
	 "GetBatch: one tar of many objects and shard members, in request order",
	 1 + GB_INFLIGHT /* the local entry's file, the fetches from peers */},
	{"/v1/cluster", M(GET) | M(POST) | M(PUT), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 1 << 20, cluster_h_cluster,
	 "cluster: ?what=smap|bmd, PUT node actions: 307 to the primary (when in a cluster)", 0},
	{"/v1/metasync", M(PUT), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 64 << 20, cluster_h_metasync,
	 "metadata pushed by the primary", 0},
	{"/v1/daemon/mountpaths", M(GET) | M(PUT) | M(DELETE), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 4096,
	 tgt_mountpaths,
	 "mountpaths: GET the list; PUT {\"action\":\"attach-mp\",\"value\":PATH}; DELETE {\"action\":\"detach-mp\",..}", 0},
	{"/v1/daemon", M(GET) | M(PUT), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 64 << 10, cluster_h_daemon,
	 "this node: ?what=stats (default)|config|smap|bmd; PUT set-config", 0},
	{"/metrics", M(GET), HTTP_ROUTE_NOLIMIT, 0, cluster_h_metrics, "Prometheus metrics", 0},
	/* (64 MiB: an ishard start carries the gateway's listing, ishard.h) */
	{"/v1/jobs", M(GET) | M(PUT), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 64 << 20, tgt_jobs,
	 "this target's jobs: GET progress (?what=rebalance|resilver), PUT {\"action\":\"start\"|\"stop\"}; "
	 "?list|kind|id|all: the runs of every kind, PUT {\"action\":\"stop\",\"id\"|\"kind\"}", 0},
	{"/v1/etl", M(GET) | M(PUT) | M(DELETE), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 64 << 10, etl_h,
	 "transformers: GET the list (?what=logs&name=N: this target's worker logs), PUT/DELETE /v1/etl/NAME "
	 "(?action=stop|start)", 0},
	{"/v1/remotes", M(GET) | M(PUT) | M(DELETE), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 64 << 10, bk_h_remotes,
	 "remote backends: GET the list (no secrets), PUT/DELETE /v1/remotes/ALIAS", 0},
	{"/v1/dsort", M(GET), 0, 0, dsort_h_index, "a dsort run's index of this target (targets only): GET /v1/dsort/ID",
	 0},
	{"/v1/s3uploads", M(GET), 0, 0, s3_h_uploads, "S3 multipart uploads on this target (for a gateway's list)", 0},
	{"/", S3_ROUTE_METHODS, HTTP_ROUTE_BODY | HTTP_ROUTE_S3, 0, s3_h_target,
	 "S3: /BUCKET/KEY and /s3/BUCKET/KEY (and BUCKET.<s3.domain>), served from this target", 5},
};

int tgt_health(http_req_t *req)
{
	http_resp_header(req, "Content-Type", "application/json");
	static const char ok[] = "{\"status\":\"ok\",\"role\":\"target\"}";
	http_resp_send(req, ok, sizeof(ok) - 1);
	return AIS_OK;
}

/* /v1/jobs: the remote buckets' jobs (bkjobs.c), else the rebalance and
 * resilver (src/jobs/api.c). */
static int tgt_jobs(http_req_t *req)
{
	target_t *t = req->ctx;
	sv_t what = {NULL, 0};
	if (http_query_get(req, "what", &what) && bkj_kind(what))
		return bkj_h_target(req, what);
	if (jobs_is_runs_req(req))
		return jobs_h_runs(req); /* the registry's runs, every kind (jobreg.h) */
	if (what.ptr && sv_eqstr(what, "copy-bck"))
		return jobs_h_kind(req, "copy-bck"); /* (src/xcopy) */
	if (what.ptr && sv_eqstr(what, "etl-bck"))
		return jobs_h_kind(req, "etl-bck"); /* (src/xcopy) */
	if (what.ptr && sv_eqstr(what, "ishard"))
		return jobs_h_kind(req, "ishard"); /* (src/ishard) */
	if (what.ptr && sv_eqstr(what, "archive"))
		return jobs_h_kind(req, "archive"); /* (src/xarch) */
	if (what.ptr && sv_eqstr(what, "dsort"))
		return jobs_h_kind(req, "dsort"); /* (src/dsort) */
	return jobs_h_target(req, t->reb, t->res);
}

/* --- what the rebalance job needs of this target (jobs.h: reb_env_t) --- */

_Static_assert(REB_GONE == TGT_GONE, "send_copy answers tgt_send_copy's codes");
_Static_assert(REB_EC_GONE == EC_GONE, "repair answers ec_repair's codes");
_Static_assert((int)REB_SLICE_KEPT == (int)EC_SLICE_KEPT && (int)REB_SLICE_MOVED == (int)EC_SLICE_MOVED &&
		       (int)REB_SLICE_DROPPED == (int)EC_SLICE_DROPPED,
	       "place_slice answers ec_place_slice's codes");

static int reb_send_copy(void *arg, const char *base, const char *bck, size_t blen, const char *obj, size_t olen,
			 const char *why, uint64_t cmap_v, uint64_t bmd_v, bool cond, uint64_t *bytes, buf_t *msg)
{
	return tgt_send_copy(arg, base, bck, blen, obj, olen, why, cmap_v, bmd_v, cond, bytes, msg);
}

static int reb_repair(void *arg, const char *bck, size_t blen, const char *obj, size_t olen, buf_t *msg)
{
	return ec_repair(arg, bck, blen, obj, olen, msg);
}

static int reb_place_slice(void *arg, const bmd_props_t *bp, const char *bck, size_t blen, const char *obj,
			   size_t olen, uint64_t cmap_v, uint64_t *bytes, buf_t *msg)
{
	return ec_place_slice(arg, bp, bck, blen, obj, olen, cmap_v, bytes, msg);
}

/* /metrics: the progress of this target's jobs. */
/* dsort's delete of a failed run's output (dsort_env_t.del). */
static int dsort_del(void *arg, const char *bck, const char *obj, buf_t *why)
{
	if (ol_delete_msg(arg, sv_from(bck), sv_from(obj), true, why) == AIS_OK)
		return 0;
	return errno == ENOENT ? 1 : -1;
}

/* dsort's output shards built in place (dsort_env_t.stage_*: olstage.c). */
static void *dsort_stage_open(void *arg, const char *bck, const char *obj, buf_t *why)
{
	return ol_stage_open(arg, bck, obj, why);
}

static int dsort_stage_write(void *st, const void *p, size_t n) { return ol_stage_write(st, p, n); }
static int dsort_stage_commit(void *st, const char *custom, buf_t *why) { return ol_stage_commit(st, custom, why); }
static int dsort_stage_fd(void *st) { return ol_stage_fd(st); }
static void dsort_stage_free(void *st) { ol_stage_free(st); }

static void jobs_collect(void *arg, buf_t *out)
{
	target_t *t = arg;
	job_stats_t st[4];
	const char *kinds[4];
	size_t n = 0;
	if (t->reb) {
		reb_stats(t->reb, &st[n]);
		kinds[n++] = "rebalance";
	}
	res_stats(t->res, &st[n]);
	kinds[n++] = "resilver";
	if (t->base.cl) { /* remote buckets (bkjobs.c) */
		bkj_stats(SV("prefetch"), &st[n]);
		kinds[n++] = "prefetch";
		bkj_stats(SV("evict"), &st[n]);
		kinds[n++] = "evict";
	}
	job_metrics(st, kinds, n, out);
	jreg_metrics(out);
}

/* Opens the store on the saved mountpath list (DIR/mountpaths) when there
 * is one, else on store.mountpaths; the detaches the list names go on. */
static int open_store(target_t *t, const conf_t *c, buf_t *err)
{
	conf_t *c2 = xmalloc(sizeof(*c2));
	char (*det)[1024] = xcalloc(CONF_MAX_MOUNTPATHS, sizeof(*det));
	int ndet = 0;
	*c2 = *c;
	bool saved = tgt_mountpaths_load(c, c2, det, &ndet) == AIS_OK;
	int rc = store_open(saved ? c2 : c, &t->store, err);
	for (int i = 0; rc == AIS_OK && i < ndet; i++) {
		buf_t e = BUF_INIT;
		if (store_mp_detach_begin(t->store, det[i], &e) != AIS_OK)
			log_warnx("mountpath %s: %s", det[i], e.ptr ? e.ptr : "cannot detach");
		buf_free(&e);
	}
	free(c2);
	free(det);
	return rc;
}

/* A new BMD was accepted: create the buckets this target lacks, destroy
 * those the cluster removed (only those: local buckets the cluster never
 * knew are left alone). Runs on the thread that accepted the BMD. */
static void on_bmd(void *arg, const bmd_t *old, const bmd_t *cur)
{
	target_t *t = arg;
	store_bucket_t sb;
	for (size_t i = 0; i < bmd_size(cur); i++) {
		const bmd_bucket_t *b = bmd_bucket(cur, i);
		if (store_bucket_get(t->store, b->name, strlen(b->name), &sb) != AIS_OK) {
			if (store_bucket_create(t->store, b->name, strlen(b->name), b->props.cksum) != AIS_OK)
				log_warn("creating bucket %s from the cluster's metadata", b->name);
		} else if (sb.cksum_type != b->props.cksum &&
			   store_bucket_set_cksum(t->store, b->name, strlen(b->name), b->props.cksum) != AIS_OK) {
			log_warn("setting the checksum of bucket %s from the cluster's metadata", b->name);
		}
	}
	for (size_t i = 0; old && i < bmd_size(old); i++) {
		const bmd_bucket_t *b = bmd_bucket(old, i);
		const bmd_bucket_t *nb = bmd_get(cur, b->name, strlen(b->name));
		if (nb && bmd_ec_differs(&nb->props, &b->props)) {
			reb_encode(t->reb, b->name, bmd_version(cur)); /* the re-encode job (jobs.h) */
		} else if (nb && place_copies(&nb->props) != place_copies(&b->props) && t->reb) {
			char why[128];
			snprintf(why, sizeof(why), "bucket %s now wants %zu copies", b->name, place_copies(&nb->props));
			reb_kick(t->reb, why);
		}
		if (!nb &&
		    store_bucket_destroy(t->store, b->name, strlen(b->name)) != AIS_OK && errno != ENOENT)
			log_warn("destroying bucket %s removed from the cluster's metadata", b->name);
		char esb[24];
		ec_slice_bucket(b->name, strlen(b->name), esb);
		if (!nb && store_bucket_destroy(t->store, esb, strlen(esb)) != AIS_OK && errno != ENOENT)
			log_warn("destroying the slices of bucket %s removed from the cluster's metadata", b->name);
	}
}

/* A new cluster map: when it moves objects, (re)start the rebalance. */
static void on_cmap(void *arg, const cmap_t *old, const cmap_t *cur)
{
	target_t *t = arg;
	/* the first map since start: this target may have missed changes while it was down */
	bool first = !t->reb_kicked;
	t->reb_kicked = true;
	/* this node's drain flag (maintenance) moves its objects, or stops moving them */
	const char *me = t->base.cl ? cluster_self(t->base.cl)->id : NULL;
	const cmap_node_t *o = me && old ? cmap_get(old, me, strlen(me)) : NULL;
	const cmap_node_t *c = me ? cmap_get(cur, me, strlen(me)) : NULL;
	bool drain_changed = (o && o->drain) != (c && c->drain);
	tgt_lost_note(old, cur, me); /* targets gone without a decommission (lost.c) */
	if (!t->reb || (!first && !drain_changed && !place_changed(old, cur)))
		return;
	char why[96];
	snprintf(why, sizeof(why), "cluster map v%llu moves objects", (unsigned long long)cmap_version(cur));
	reb_kick(t->reb, why);
}

target_t *target_start(const conf_t *c, buf_t *err)
{
	/* Streamed bodies (GetBatch entries, archive pieces) allocate and free
	 * buffers of 100 KB - 1 MB per request: keep them in the heap for reuse
	 * instead of a fresh mmap (and its page faults) each time. */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	target_t *t = xcalloc(1, sizeof(*t));
	t->conf = t->base.conf = c;
	t->start_ns = time_now_ns();
	if (s3_init(c, err) != AIS_OK) {
		free(t);
		return NULL;
	}
	if (open_store(t, c, err) != AIS_OK) {
		free(t);
		return NULL;
	}
	t->base.store = t->store;
	if (mkdir(tgt_state_dir(c), 0755) == 0)
		chmod(tgt_state_dir(c), 0755); /* past the umask: a local-read socket may live here */
	if (bk_remotes_init(tgt_state_dir(c), c, err) != AIS_OK) {
		store_close(t->store);
		free(t);
		return NULL;
	}
	if (etl_init(tgt_state_dir(c), c, err) != AIS_OK) {
		store_close(t->store);
		free(t);
		return NULL;
	}
	jreg_init(tgt_state_dir(c)); /* the runs of jobs before this start (jobreg.h) */
	t->res = res_new(t->store, tgt_state_dir(c), tgt_mountpaths_save, t);
	metrics_collector_add(jobs_collect, t);
	ec_metrics_init();
	ol_metrics_init();
	s3_mpu_gc(c); /* S3 multipart uploads past s3.mpu_max_age */
	char usock[1100] = "";
	bool usock_auto = !strcmp(c->unix_socket, "auto");
	if (usock_auto) {
		/* not with mTLS: a local process would skip the certificate check */
		if (!c->tls_client_ca[0]) {
			snprintf(usock, sizeof(usock), "%s/aisd.sock", tgt_state_dir(c));
			if (mkdir(tgt_state_dir(c), 0755) == 0) /* a node.dir the cluster code has not made yet */
				chmod(tgt_state_dir(c), 0755); /* past the umask: the socket is for local clients */
		}
		if (strlen(usock) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
			log_info("no unix socket for local clients: %s is too long a path (set net.unix_socket)", usock);
			usock[0] = 0;
		}
	} else if (strcmp(c->unix_socket, "off") != 0) {
		snprintf(usock, sizeof(usock), "%s", c->unix_socket);
	}
	http_server_opts_t o = {
		/* object files and peer calls, and per mountpath LevelDB's table files */
		.fd_reserve = 256 + 1024 * (uint64_t)c->n_mountpaths,
		.routes = routes,
		.nroutes = ARRAY_SIZE(routes),
		.ctx = t,
		.unix_path = usock,
		.unix_optional = usock_auto,
		.authz = authz_check,
		.authz_body = authz_check_body,
		.is_peer = cluster_node_addr,
		.is_cluster_call = authz_cluster_call,
		.refuse_s3 = s3_refuse,
	};
	http_server_opts_conf(&o, c);
	t->srv = http_server_new(&o, err);
	if (!t->srv) {
		metrics_collector_remove(jobs_collect, t);
		res_free(t->res);
		store_close(t->store);
		free(t);
		return NULL;
	}
	if (c->join[0]) {
		cluster_t *cl = cluster_new(c, CMAP_TARGET, http_server_port(t->srv), err);
		if (cl) {
			cluster_on_bmd(cl, on_bmd, t);
			cluster_on_cmap(cl, on_cmap, t);
			t->base.cl = cl; /* the job reads it; requests wait for the release below */
			t->reb_env = (reb_env_t){.cl = cl,
						 .store = t->store,
						 .conf = c,
						 .srv = t->srv,
						 .arg = t,
						 .send_copy = reb_send_copy,
						 .repair = reb_repair,
						 .place_slice = reb_place_slice,
						 .slice_bucket = ec_slice_bucket};
			t->reb = reb_new(&t->reb_env);
			bkj_register(t);
			xcopy_register(cl, t->store);
			ishard_register(cl, t->store);
			xarch_register(cl, t->store, t->conf);
			dsort_register(&(dsort_env_t){.cl = cl,
						      .store = t->store,
						      .memory_limit = c->dsort_memory_limit,
						      .pause_ms = c->dsort_pause_ms,
						      .del = dsort_del,
						      .stage_open = dsort_stage_open,
						      .stage_write = dsort_stage_write,
						      .stage_commit = dsort_stage_commit,
						      .stage_fd = dsort_stage_fd,
						      .stage_free = dsort_stage_free,
						      .arg = t});
			if (cluster_start(cl, err) == AIS_OK) {
				__atomic_store_n(&t->base.cl, cl, __ATOMIC_RELEASE);
				jreg_resume();
				return t;
			}
		}
		http_server_free(t->srv);
		reb_stop(t->reb);
		cluster_free(cl);
		metrics_collector_remove(jobs_collect, t);
		reb_free(t->reb);
		res_free(t->res);
		store_close(t->store);
		jreg_shutdown();
		free(t);
		return NULL;
	}
	jreg_resume(); /* standalone: the resilver's kind only */
	return t;
}

void target_stop(target_t *t)
{
	if (!t)
		return;
	s3_log_stop(); /* pending access log records delivered while the map is known */
	httpc_stream_abort(); /* copies to and from peers that may be stopping too */
	cluster_stop(t->base.cl); /* and no keepalive rounds to them */
	http_server_free(t->srv);
	log_debug("stop: HTTP server stopped");
	olr_stop(); /* remote fetches write into the store */
	etl_shutdown(); /* the transformers' workers: killed and reaped */
	ec_read_stop(); /* reads from slices use the store's temp files */
	bkj_stop();
	xcopy_stop();
	ishard_stop();
	xarch_stop();
	dsort_stop();
	reb_stop(t->reb); /* before the cluster: the job reads the map */
	log_debug("stop: rebalance stopped");
	cluster_free(t->base.cl);
	log_debug("stop: cluster thread stopped");
	metrics_collector_remove(jobs_collect, t);
	reb_free(t->reb); /* after it: a map change may still kick it */
	res_free(t->res);
	store_close(t->store);
	jreg_shutdown();
	free(t);
}

http_server_t *target_server(const target_t *t) { return t->srv; }
