/*
 * cluster.h - a node's life in the cluster: its view of the cluster map
 * and bucket metadata, joining, metadata sync, (on the primary gateway)
 * membership by health checks, and primary failover.
 *
 * The model (see DESIGN.md "Cluster metadata"):
 *  1. Only the primary gateway makes new versions of the cmap and BMD
 *     (cluster_update), persists them, and pushes them to every node
 *     (PUT /v1/metasync). A node persists what it accepts and never accepts
 *     an older version (cmap_accept, bmd_accept).
 *  2. A node joins by POST /v1/cluster/join to the primary (config
 *     cluster.join, or the primary of its persisted cmap) and retries until
 *     it is in the map; a node that finds itself dropped joins again.
 *  3. The primary checks every node's /v1/health each cluster.keepalive; a
 *     node failing for longer than cluster.grace leaves the map. Nodes that
 *     missed a push are pushed to again.
 *  4. Node states (PUT /v1/cluster {"action","value":{"sid"}}, primary
 *     only): start-maintenance / stop-maintenance set maintenance / active
 *     (a node in maintenance gets no new objects and is not dropped for
 *     failing health checks); decommission-node pushes the node as
 *     decommissioning (it remembers that in node.dir and never rejoins),
 *     waits until the node has moved its objects off (its rebalance,
 *     jobs.h), then removes it.
 *
 * Failover (election.c, vote.c; the majority rules apply when the map has
 * two gateways or more: with one, no other primary can arise):
 *  5. Every map has a term (the primary's epoch); maps compare by (term,
 *     version), so whatever a deposed primary makes in its old term loses.
 *  6. Non-primary nodes check the primary every cluster.keepalive. When it
 *     fails past cluster.grace, the first gateway of the election order
 *     (cmap_election_order, the primary skipped) that answers, and that
 *     reaches a majority of nodes, runs for primary: POST
 *     /v1/cluster/vote to every other node of its map. It wins
 *     with a majority of the map's nodes (the dead primary counted), each
 *     voter following cmap_vote (V1-V4 in cmap.h: it cannot reach the
 *     primary either, the candidate's metadata is not older, one vote per
 *     term, persisted in DIR/vote.json). The winner installs the map with
 *     the new term, itself primary and the old primary removed, and pushes.
 *  7. A primary changes metadata only while a majority of nodes answers it
 *     (checked before each change), and a change is confirmed (200) only
 *     when a majority took it (not waiting for nodes that do not answer
 *     once it has); otherwise 503. So a partitioned primary
 *     changes nothing, and every confirmed change is on a voter of any
 *     winning majority.
 *  8. A node that voted for another candidate refuses older-term pushes
 *     for 2 x cluster.grace.
 *  9. A primary whose push is refused as older, or that reaches only a
 *     minority, asks the others for their map and follows a newer one (and
 *     then joins its primary as a non-primary gateway). A push of a newer
 *     term replaces the BMD even when it is not newer: the old term's
 *     unconfirmed bucket changes are dropped.
 * 10. A gateway whose persisted map names it primary asks the other nodes
 *     of that map at start and follows a newer map instead of resuming; a
 *     node whose primary does not answer asks the other nodes each round
 *     (a new primary may have been elected while it was away).
 * 11. set-primary (PUT /v1/cluster, or PUT /v1/cluster/proxy/ID): the
 *     primary pushes a map with term + 1 and the new primary (which must
 *     answer its health check); it stays a gateway.
 * 12. The lease (L1 and V5 in cmap.h; monotonic clocks only): the primary
 *     acts as primary (metadata changes, pushes, node removals) only while
 *     a majority of the map's nodes, itself counted, granted it within
 *     cluster.lease, timed from the start of the round that asked (each
 *     keepalive round asks every node: POST /v1/cluster/lease; a change
 *     asks first); a won election is a grant by each yes voter. A node that
 *     granted the lease votes for no other gateway for cluster.lease + 1/8
 *     (the clock-drift margin), which is below cluster.grace; so the old
 *     primary has stopped before any other can be elected. Without its
 *     lease the primary answers cluster writes 503 and goes on asking.
 *     Calls that fail while this node cannot open a socket itself (EMFILE,
 *     ENFILE, ENOMEM, ENOBUFS) fail no peer's health check.
 * Readers take a consistent snapshot with cluster_read_lock; the pointers
 * are valid until cluster_read_unlock and must not be kept.
 */
#ifndef AISD_CLUSTER_H
#define AISD_CLUSTER_H

#include <stdatomic.h>

#include "aisd/bmd.h"
#include "aisd/cmap.h"
#include "aisd/conf.h"
#include "aisd/http.h"

typedef struct cluster cluster_t;

/* The first member of a role's context (target_t, gateway_t), so that the
 * cluster's HTTP handlers find the cluster from req->ctx. */
typedef struct node_base {
	cluster_t *cl; /* NULL: not in a cluster (standalone target) */
	struct store *store; /* a target's store (GET /v1/daemon stats); NULL on a gateway */
	const conf_t *conf;  /* the node's configuration */
} node_base_t;

/* Called (on the thread that accepted it) after a new BMD is accepted. */
typedef void (*cluster_bmd_fn)(void *arg, const bmd_t *old, const bmd_t *cur);
/* Called (on the thread that accepted it, holding no lock) after a new
 * cluster map is installed; old may be NULL. Both valid during the call. */
typedef void (*cluster_cmap_fn)(void *arg, const cmap_t *old, const cmap_t *cur);

/* The directory of the node's cluster metadata: cluster.node_dir, else the
 * first mountpath. */
const char *cluster_node_dir(const conf_t *c);
/* Whether this node's decommission was recorded in its node dir (the file
 * "decommissioned" there); its path goes to marker (may be NULL). A node
 * so marked does not start (aisd exits 0 saying so): it is no member, and
 * what a target still holds is stale. */
bool cluster_was_decommissioned(const conf_t *c, char *marker, size_t markersz);
/* Loads the persisted cmap/BMD from conf->node_dir. port is the actual
 * listening port (for the default id and URL). NULL + err on failure. */
cluster_t *cluster_new(const conf_t *c, enum cmap_role role, int port, buf_t *err);
void cluster_on_bmd(cluster_t *cl, cluster_bmd_fn fn, void *arg);
void cluster_on_cmap(cluster_t *cl, cluster_cmap_fn fn, void *arg);
/* Becomes primary (a gateway with nothing to join) or starts joining, and
 * starts the keepalive thread. */
int cluster_start(cluster_t *cl, buf_t *err);
/* The first step of stopping (any thread, more than once is fine): the
 * keepalive thread starts no new round, and the fan-outs of its round in
 * progress stop waiting for peers, which may be stopping too. The node
 * still serves (cluster_free ends it). */
void cluster_stop(cluster_t *cl);
/* Stops (cluster_stop) and joins the keepalive thread; frees cl. */
void cluster_free(cluster_t *cl);

void cluster_read_lock(cluster_t *cl, const cmap_t **m, const bmd_t **b);
void cluster_read_unlock(cluster_t *cl);
/* Like cluster_read_lock, plus *prev: the map in force before the last
 * change of placement (place_changed), or NULL. Objects not yet moved by a
 * rebalance are found on their holders under *prev. */
void cluster_read_lock_prev(cluster_t *cl, const cmap_t **m, const cmap_t **prev, const bmd_t **b);
const cmap_node_t *cluster_self(const cluster_t *cl);

/* Where BUCKET/OBJECT lives, copied out of the map under the read lock:
 * the one way every role goes from a name to its owner (place_object). */
typedef struct cluster_where {
	bool bucket;                        /* the BMD has the bucket */
	size_t n;                           /* holders, best first (0: no active target) */
	int self;                           /* this node's rank among them; -1: none */
	uint64_t cmap_version;              /* of the map used */
	uint64_t bmd_version;               /* of the bucket metadata used */
	char owner[CMAP_URL_MAX + 1];       /* holder 0's public URL */
	char owner_intra[CMAP_URL_MAX + 1]; /* holder 0's intra-cluster URL */
} cluster_where_t;
/* Fills w for BUCKET/OBJECT (as_self: rank this node among the holders;
 * a gateway passes false). With urls, also the first max holders'
 * intra-cluster URLs, best first. */
void cluster_where(cluster_t *cl, sv_t bck, sv_t obj, bool as_self, cluster_where_t *w,
		   char (*urls)[CMAP_URL_MAX + 1], size_t max);
/* The cluster map names this node primary. */
bool cluster_is_primary(cluster_t *cl);
/* The map names this node primary and it holds the primary's lease (or
 * majority rules do not apply): it may change metadata and push it. */
bool cluster_acting_primary(cluster_t *cl);
/* Whether addr (a numeric client address) is the host of a node in the
 * cluster map (its public or intra-cluster URL). ctx: the node's
 * node_base_t, as the HTTP server's is_peer hook gets it. */
bool cluster_node_addr(void *ctx, const char *addr);
/* Copies the primary's public URL into out; false if unknown. */
bool cluster_primary_url(cluster_t *cl, char *out, size_t outsz);

/* Blocking (pool thread): asks the primary for its cluster map and BMD and
 * installs them if newer; one refresh at a time, at most once per
 * min_interval_ms (concurrent callers wait for the one in flight). For a
 * node that doubts its map: a request routed to it by a node with a newer
 * one. Returns true when the map changed. */
bool cluster_refresh(cluster_t *cl, uint64_t min_interval_ms);

/* Primary only, blocking (call from the I/O pool): applies fn to copies of
 * the cmap and BMD; if it returns AIS_OK, persists and installs them and
 * pushes them to every node, and returns once a majority of the nodes holds
 * them and the others answered or a health check's timeout passed (pushes
 * to nodes cut off go on in the background). fn reports errors with errno
 * and err. */
typedef int (*cluster_update_fn)(cmap_t *m, bmd_t *b, void *arg, buf_t *err);
int cluster_update(cluster_t *cl, cluster_update_fn fn, void *arg, buf_t *err);

/*
 * Fan-out of blocking intra-cluster requests (call.c), for pool and
 * cluster threads: each call is one httpc_sync on a thread of its own, at
 * most CLUSTER_CALL_PARALLEL at a time, so a round costs the slowest
 * answer, not the sum.
 */
#define CLUSTER_CALL_PARALLEL 64
#define CLUSTER_CALL_URL_MAX (CMAP_URL_MAX + 2400) /* a base URL, a path and a query */
typedef struct cluster_call {
	char url[CLUSTER_CALL_URL_MAX];
	const char *url_long; /* borrowed (copied for the call): a URL longer than url holds; NULL: url */
	const char *method;
	const buf_t *body;   /* borrowed (copied for the call); NULL: none. JSON */
	const char *hdr;     /* a static header line besides ("Ais-Intra: list"); NULL: none */
	uint64_t timeout_ms;
	buf_t resp;          /* the answer's body, or the error; the caller frees */
	int status;          /* HTTP status; 0: no answer */
	int err;             /* no answer: errno of the failure (httpc_sync), 0 unknown */
	char heard[CMAP_ID_MAX + 1]; /* a node id: any answer, even after the caller stopped waiting,
	                              * is life (cluster_heard); "": none */
} cluster_call_t;
/* Node id (len bytes) was heard from just now: it answered a health check
 * (however late) or called for the map itself. Process-wide; the primary's
 * keepalive removes only nodes not heard from for cluster.grace. */
void cluster_heard(const char *id, size_t len);
/* Makes every call and returns when all have ended: how many answered 2xx. */
size_t cluster_call_all(cluster_call_t *calls, size_t n);
/* Makes every call and returns once `need` of them answered 2xx and then
 * the others ended or grace_ms passed (or, short of need, when all ended),
 * or as soon as *cancel (may be NULL) is true. Calls still running go on
 * in the background, their answers dropped: they have status 0 and done[i]
 * (done may be NULL) false. Returns how many answered 2xx. */
size_t cluster_call_quorum(cluster_call_t *calls, size_t n, size_t need, uint64_t grace_ms,
			   const atomic_bool *cancel, bool *done);

/*
 * A listing's fan-out (lsfan.c, rules there): one call to every target in
 * the map, and whether the union of the answers can lack objects of the
 * bucket: a target that holds part of it and was not heard from (no
 * answer, or lost: cmap_drop) may hold the only copies of some. Use:
 * cluster_lsfan_init (under the read lock: the targets, the bucket's
 * copies, the map's lost targets), fill calls[i] (url, method, body),
 * cluster_lsfan_call, read the answers of the targets not gone,
 * cluster_lsfan_free.
 */
typedef struct cluster_lsfan {
	cluster_call_t *calls;          /* one per target in the map, map order */
	char (*ids)[CMAP_ID_MAX + 1];   /* calls[i]'s target */
	char (*urls)[CMAP_URL_MAX + 1]; /* its intra-cluster URL */
	bool *gone;                     /* after the call: calls[i] had no answer */
	bool *optional;                 /* calls[i] is to a target in maintenance or decommissioning (named so when missing) */
	size_t n;
	size_t copies;                  /* the bucket's (place_copies) */
	bool remote;                    /* every target lists the remote's page */
	char (*lost)[CMAP_ID_MAX + 1];  /* the map's lost targets */
	size_t nlost;
	/* after cluster_lsfan_call */
	buf_t missing;    /* "ID (why), ..." of the targets not heard from */
	char (*miss)[CMAP_ID_MAX + 1]; /* their ids */
	size_t nmissing;
	bool incomplete;  /* the answers may lack objects */
} cluster_lsfan_t;
/* cached_only: the listing asks for the cached copies of a remote bucket
 * only (as a plain bucket's). */
void cluster_lsfan_init(cluster_t *cl, const char *bucket, bool cached_only, cluster_lsfan_t *f);
void cluster_lsfan_call(cluster_lsfan_t *f);
/* Frees what init allocated and the answers' bodies. */
void cluster_lsfan_free(cluster_lsfan_t *f);

/* HTTP handlers, for every role's route table. */
/* GET /v1/cluster?what=smap|bmd|meta, POST /v1/cluster/join, POST
 * /v1/cluster/vote (a ballot: {"vote","stale","term","voted_term","reason"}),
 * POST /v1/cluster/lease (200 granted, 409 refused: {"lease","term",..}),
 * PUT /v1/cluster {"action":"start-maintenance|stop-maintenance|
 * decommission-node|set-primary","value":{"sid":ID}} or PUT
 * /v1/cluster/proxy/ID (set-primary): 200 with the new map, 400, 404 (no
 * such node), 409 (the primary), 503 (no majority, node not answering), 307
 * to the primary on other nodes. */
int cluster_h_cluster(http_req_t *req);
int cluster_h_metasync(http_req_t *req); /* PUT /v1/metasync */
/* GET /v1/daemon?what=stats|smap|bmd: this node (stats.c). */
int cluster_h_daemon(http_req_t *req);
/* GET /v1/cluster?what=stats (stats.c): every node's stats, fanned out. */
int cluster_stats_cluster(http_req_t *req);
/* Sends doc, compact ("{}" if it cannot be encoded), as the application/json
 * answer (200 unless a status was set) (stats.c). */
struct json_t;
void cluster_resp_json(http_req_t *req, const struct json_t *doc);
/* A set-config body, parsed (cfgparse.c, pure): up to CLUSTER_CFG_MAX
 * changes; key 0 log.level, 1 log.access, 2 net.rate_limit,
 * 3 net.rate_burst, each value checked. Returns AIS_OK, or AIS_ERR with a
 * message in err and nothing to apply. */
#define CLUSTER_CFG_MAX 16
typedef struct cluster_cfg_change {
	int key;
	char value[64];
} cluster_cfg_change_t;
int cluster_cfg_parse(const char *body, size_t len, cluster_cfg_change_t *ch, size_t *n, buf_t *err);
const char *cluster_cfg_key(int key);
/* PUT /v1/daemon {"action":"set-config",..} (config.c): this node. */
int cluster_daemon_put(http_req_t *req);
/* PUT /v1/cluster {"action":"set-config",..} on the primary: every node. */
void cluster_config_all(http_req_t *req, cluster_t *cl);
/* GET /metrics (metrics.c): Prometheus text format, on every node. */
int cluster_h_metrics(http_req_t *req);

/* What the jobs (src/jobs) add to the cluster's API, so that the cluster
 * does not call into them: set once at start (jobs_cluster_register),
 * before the server takes requests; until then the job routes answer 503
 * and a decommission does not wait for a drain. */
typedef struct cluster_jobs_ops {
	/* GET /v1/cluster?what=rebalance|resilver|jobs|prefetch|evict */
	int (*status)(http_req_t *req);
	/* PUT /v1/cluster {"action":"rebalance"|"stop-rebalance"} */
	int (*action)(http_req_t *req, bool start);
	/* decommission-node: waits until the target sid has moved its objects
	 * off (jobs_wait_drained) */
	int (*wait_drained)(cluster_t *cl, const char *sid, uint64_t version, uint64_t timeout_ms, buf_t *msg);
} cluster_jobs_ops_t;
void cluster_jobs_set(const cluster_jobs_ops_t *ops);

#endif
