/*
 * jobs.h - background jobs of a target, with progress and abort. One job
 * so far: rebalance, which also adds and removes mirror copies and drains
 * a node that is decommissioned (src/jobs/rebalance.c).
 *
 * The rebalance walk, on every target, for every local object of every
 * bucket in the BMD (place.h decides the holders under the current map):
 *  1. each holder other than this target that lacks the object (HEAD: 404)
 *     or holds an older other version (checksum differs, Ais-Mtime-Ns
 *     older) is sent a copy (streamed PUT with its checksum, which the
 *     receiver verifies);
 *  2. when this target is not a holder and every holder is known to have
 *     the object durably, the local copy is deleted: never before;
 *  3. a target in maintenance (without drain), or not in the map at all
 *     (not joined yet, or dropped after failing health checks: it comes
 *     back), keeps its data and walks nothing; a decommissioned one, and
 *     one in maintenance with drain, is no holder and moves everything off;
 *  4. after a bucket's objects, the walk places its erasure-coded slices
 *     here (ec_place_slice: moved to a holder that lacks them, dropped
 *     once a holder has them, the owner's whole copy rebuilt).
 * A run starts on every change of placement (place_changed), of a
 * bucket's copies, on request, and at start-up when the marker file
 * DIR/rebalance.marker says a run was interrupted; a newer change restarts
 * it on the newest map. A run with errors is retried (5 s, then up to a
 * minute apart) until one ends clean. Reads never depend on it: a holder
 * that lacks an object fetches it (mirror.c).
 */
#ifndef AISD_JOBS_H
#define AISD_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include "aisd/bmd.h"
#include "aisd/buf.h"
#include "aisd/conf.h"
#include "aisd/http.h"
#include "aisd/store.h"

enum job_state { JOB_IDLE = 0, JOB_RUNNING, JOB_DONE, JOB_ABORTED, JOB_FAILED };

typedef struct job_stats {
	enum job_state state;
	uint64_t cmap_version;       /* the map the last run walked under */
	int64_t start_ns, end_ns;    /* wall clock of the last run; end 0 while running */
	uint64_t runs;               /* runs started since this process started */
	uint64_t total;              /* objects here when the run started */
	uint64_t total_bytes;        /* their bytes */
	uint64_t walked;             /* objects looked at */
	uint64_t walked_bytes;       /* their bytes */
	uint64_t moved, moved_bytes; /* copies sent to other targets */
	uint64_t deleted;            /* local copies removed once their holders had them */
	uint64_t errors;
	uint64_t objects; /* objects here now */
	uint64_t peer_streams_max; /* rebalance: the most sends to one peer at once in the run */
	char last_error[256];
	/* the run's first errors, one "NAME: why" per line (job_error_add):
	 * at most JOB_ERRORS_LISTED, what fits */
	char error_list[1024];
} job_stats_t;

#define JOB_ERRORS_LISTED 8

/* Counts an error of a run: errors + 1, last_error = "what: why", and the
 * line added to error_list while fewer than JOB_ERRORS_LISTED are there
 * (cut to fit). Pure. */
void job_error_add(job_stats_t *s, const char *what, const char *why);

/* "idle", "running", "done", "aborted", "failed"; "unknown" out of range. */
const char *job_state_name(enum job_state s);
/* The state of that name; JOB_IDLE for NULL or any other. Pure. */
enum job_state job_state_of(const char *name);
/* Appends {"kind","state","cmap_version","runs","total","total_bytes",
 * "walked","remaining","remaining_bytes","moved","moved_bytes","deleted",
 * "errors","objects","peer_streams_max","start","end","last_error","error_list":[..]}
 * (times in ns since the epoch, 0 when none). Pure. */
void job_stats_json(const job_stats_t *s, const char *kind, buf_t *out);
/* Objects left to look at in the current run (0 unless running). */
uint64_t job_remaining(const job_stats_t *s);
/* Their bytes (0 unless running). */
uint64_t job_remaining_bytes(const job_stats_t *s);
/* Appends the jobs' progress as Prometheus families (metrics.h), one
 * series per job labeled job="KIND": aisd_job_state (0 idle, 1 running,
 * 2 done, 3 aborted, 4 failed), aisd_job_runs_total,
 * aisd_job_objects_{walked,remaining,moved,deleted}, aisd_job_bytes_{moved,
 * remaining}, aisd_job_errors. Pure. */
void job_metrics(const job_stats_t *st, const char *const *kinds, size_t n, buf_t *out);
/* The state of a cluster from its targets' states: running if any runs,
 * else failed, else aborted, else done if any is done, else idle. */
enum job_state job_state_merge(const enum job_state *st, size_t n);

/* The rebalance job of a target (rebalance.c). */
typedef struct reb reb_t;
/* What the rebalance needs of its target, which fills it in at start and
 * keeps it until reb_free: the cluster, the store, the configuration, and
 * the target's sends (arg is the first argument of each). The functions
 * are blocking, for the job's threads. */
struct cluster;
typedef struct reb_env {
	struct cluster *cl; /* the map and BMD that place the objects */
	store_t *store;     /* the local objects and slices */
	const conf_t *conf; /* rebalance.*; node.dir (else the first mountpath) holds the marker */
	struct http_server *srv; /* its client reads (rebalance.busy_rate); NULL: none counted */
	void *arg;
	/* PUTs the local copy of bck/obj to the target at base (intra, reason
	 * why, placed under map cmap_v and BMD bmd_v), with cond only when the
	 * receiver lacks this version and is a holder there. AIS_OK with
	 * *bytes sent, AIS_DONE (cond) when it had it, REB_GONE (cond) when a
	 * client deleted it since (the local copy is to go too), or AIS_ERR
	 * (errno ENOENT: no local copy; EIO with msg). */
	int (*send_copy)(void *arg, const char *base, const char *bck, size_t blen, const char *obj, size_t olen,
			 const char *why, uint64_t cmap_v, uint64_t bmd_v, bool cond, uint64_t *bytes, buf_t *msg);
	/* With the whole erasure-coded object here, or of a bucket that keeps
	 * slices only: makes sure its slices are on their targets. How many
	 * slices it wrote; REB_EC_GONE when a client deleted it since (the
	 * whole copy is to go); AIS_ERR (-1) with msg. */
	int (*repair)(void *arg, const char *bck, size_t blen, const char *obj, size_t olen, buf_t *msg);
	/* A slice of bck/obj here, walked under map cmap_v (bp: the bucket's
	 * props): REB_SLICE_KEPT, REB_SLICE_MOVED (*bytes sent),
	 * REB_SLICE_DROPPED, or AIS_ERR (kept; msg says why). */
	int (*place_slice)(void *arg, const bmd_props_t *bp, const char *bck, size_t blen, const char *obj,
			   size_t olen, uint64_t cmap_v, uint64_t *bytes, buf_t *msg);
	/* The local store bucket that holds bck's slices. */
	void (*slice_bucket)(const char *bck, size_t blen, char out[24]);
} reb_env_t;
#define REB_GONE 2
#define REB_EC_GONE (-2) /* repair: a client deleted the object after the whole copy here was written */
enum { REB_SLICE_KEPT = 0, REB_SLICE_MOVED, REB_SLICE_DROPPED };
/* Starts the job's thread; resumes an interrupted run (marker file). env
 * stays the caller's and must outlive the job. */
reb_t *reb_new(const reb_env_t *env);
/* Stops the thread (a run in progress is abandoned; its marker stays, so
 * the next start resumes it); kicks after it do nothing. reb_free stops
 * and frees. NULL is fine for both. */
void reb_stop(reb_t *r);
void reb_free(reb_t *r);
/* Starts a run, or restarts the one in progress; why is logged. */
void reb_kick(reb_t *r, const char *why);
/* Aborts the run in progress (no resume). */
void reb_abort(reb_t *r);
/* Queues one object to be placed under the current map (a write that
 * raced a map change); the job's thread places queued objects between
 * runs, and a run in progress places them when it ends. Beyond
 * REB_QUEUE_MAX queued, a full run is kicked instead. */
void reb_enqueue(reb_t *r, const char *bck, size_t blen, const char *obj, size_t olen);
void reb_stats(reb_t *r, job_stats_t *out);
/* A bucket's erasure-coding or mirror layout changed (BMD version bmd_v):
 * the re-encode job ("ec-encode") is the rebalance run that places its
 * objects under the new layout; this records it and kicks the run. */
void reb_encode(reb_t *r, const char *bck, uint64_t bmd_v);
/* The re-encode job's progress on this target: the rebalance's stats, its
 * state running until a run under a BMD at least bmd_v ended clean (a
 * failed run with its retry due counts as running), then done; idle with
 * zero stats when no layout changed since this process started. bck (bsz
 * bytes) gets the bucket's name. */
void reb_encode_stats(reb_t *r, job_stats_t *out, char *bck, size_t bsz);

/* The resilver job of a target (resilver.c): moves objects to their HRW
 * mountpath after an attach or detach, and finishes detaches. dir holds
 * its marker; hook(arg) runs after a detach completes (the target saves its
 * mountpath list). Works standalone and in a cluster. */
typedef struct res res_t;
res_t *res_new(store_t *s, const char *dir, void (*hook)(void *), void *hook_arg);
void res_free(res_t *r);
void res_kick(res_t *r, const char *why);
void res_abort(res_t *r);
void res_stats(res_t *r, job_stats_t *out);

/* HTTP (api.c). On a target: GET /v1/jobs (its rebalance reb, NULL
 * when standalone; ?what=resilver: res; ?what=ec-encode) and PUT /v1/jobs
 * {"action":"start"|"stop"}. */
int jobs_h_target(http_req_t *req, reb_t *reb, res_t *res);
/* On a gateway (or any node in a cluster): GET /v1/cluster?what=rebalance:
 * every target's job and the totals; PUT /v1/cluster
 * {"action":"rebalance"|"stop-rebalance"}: sent to every target. */
int jobs_h_cluster_status(http_req_t *req);
int jobs_h_cluster_action(http_req_t *req, bool start);
/* The same with the body given ({"action":"start","value":{..}}), for the
 * job ?what= names (prefetch, evict of remote buckets). */
int jobs_h_cluster_start(http_req_t *req, const char *kind, const char *body);
/* The job registry's runs (jobreg.h) over HTTP. jobs_is_runs_req: does a
 * GET/PUT /v1/jobs ask for them (?list, ?kind=, ?id=, ?all=)? On a target,
 * jobs_h_runs: GET {"runs":[..]} (?kind=, ?id=, ?all=true: the finished
 * ones too), PUT {"action":"stop","id"|"kind"} -> {"stopped":n,"runs":[..]}.
 * On a gateway, jobs_h_cluster_runs: the same asked of every target, each
 * run one entry (its targets' runs of that id summed, "targets" each
 * one's), "unreachable" {id: why}; 404 for an ?id= no target knows or a
 * stop that stopped nothing. */
bool jobs_is_runs_req(http_req_t *req);
/* On a target, a kind of the registry that starts on request (the caller
 * checked the permission): GET /v1/jobs?what=KIND, its newest run
 * (job_stats_json's keys and "id"); PUT {"action":"start","value":{..,
 * "id"}} starts a run under value.id (a gateway's, else a fresh one),
 * {"action":"stop"} stops every run of the kind. */
int jobs_h_kind(http_req_t *req, const char *kind);
int jobs_h_runs(http_req_t *req);
int jobs_h_cluster_runs(http_req_t *req);
/* Primary, blocking: waits until the target sid has moved every object off
 * (its run under a map >= version is done and it holds none), at most
 * timeout_ms. AIS_OK; AIS_ERR with errno ETIMEDOUT (msg says what is left)
 * or EHOSTUNREACH (the node does not answer: nothing can be drained). */
int jobs_wait_drained(struct cluster *cl, const char *sid, uint64_t version, uint64_t timeout_ms, buf_t *msg);
/* Hands the three above to the cluster's API (cluster_jobs_set); once at
 * start, before any node starts. other_kind: the other jobs a ?what= of
 * the cluster's job routes may name (the targets' remote-bucket jobs). */
void jobs_cluster_register(bool (*other_kind)(sv_t kind));

#endif
