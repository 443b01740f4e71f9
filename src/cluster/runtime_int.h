/*
 * runtime_int.h - what runtime.c and api.c (the cluster's moving parts)
 * share. Not for use outside src/cluster.
 */
#ifndef AISD_CLUSTER_RUNTIME_INT_H
#define AISD_CLUSTER_RUNTIME_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "aisd/cluster.h"

/* What the primary knows of each other node. */
struct peer {
	char id[CMAP_ID_MAX + 1];
	int64_t fail_since;        /* monotonic ns of the first failed check; 0 healthy */
	bool kept;                 /* in maintenance, past the grace, kept: said once */
	bool heard_kept;           /* failing its checks but heard from: said once */
	uint64_t cmap_ver, bmd_ver; /* versions the node acknowledged */
};

struct cluster {
	const conf_t *conf;
	cmap_node_t self;
	char dir[1024];
	pthread_rwlock_t rw; /* guards cmap and bmd (the pointers) */
	cmap_t *cmap;
	cmap_t *prev; /* the map before the last change of placement (place.h), or NULL */
	bmd_t *bmd;
	bmd_t *applied; /* DIR/bmd-applied.json when older than bmd: its callback may not have run */
	pthread_mutex_t wmu; /* one writer at a time; guards peers */
	struct peer peers[256];
	size_t npeers;
	cluster_bmd_fn bmd_fn;
	void *bmd_arg;
	cluster_cmap_fn cmap_fn;
	void *cmap_arg;
	pthread_t thread;
	bool started;
	bool joined, join_warned; /* keepalive thread only */
	atomic_bool stop;
	atomic_bool decommissioned; /* the primary decommissioned this node (DIR/decommissioned) */
	atomic_bool leaving;        /* its decommission completed: the process is stopping */
	pthread_mutex_t refresh_mu; /* one cluster_refresh at a time; guards refreshed_ns */
	int64_t refreshed_ns;       /* end of the last cluster_refresh (monotonic) */
	/* election (election.c) */
	int64_t primary_fail_since; /* keepalive thread: first failed check of the primary; 0 healthy */
	bool no_majority;           /* keepalive thread (primary): the last round reached a minority */
	bool minority_warned;       /* keepalive thread: said it cannot run for primary */
	cmap_vote_rec_t voted;      /* written under wmu and grant_mu; persisted in DIR/vote.json */
	int64_t voted_at;           /* wmu: monotonic ns of the last yes to another candidate */
	pthread_mutex_t sleep_mu;
	pthread_cond_t sleep_cv;
	/* the primary's lease (cluster.h rule 12) */
	pthread_mutex_t lease_mu; /* guards lease_until, acting */
	int64_t lease_until;      /* monotonic ns this node's lease as primary runs out; 0 none */
	bool acting;              /* acting as primary, as last logged (clu_lease_note) */
	pthread_mutex_t grant_mu; /* after wmu, before rw: a vote (its check and record) and a lease
	                           * grant never interleave; guards granted */
	cmap_lease_rec_t granted; /* the last lease this node granted (a yes vote is one) */
	bool local_warned;        /* keepalive thread: said its own shortage stops its checks */
};

/* When node id last called (monotonic ns; 0: never) or answered a health
 * check, however late (cluster_heard). */
int64_t clu_heard_at(const char *id);

int clu_install(cluster_t *cl, cmap_t *m, bmd_t *b, buf_t *err);
void clu_encode_meta(cluster_t *cl, buf_t *out);
/* Accepts {"cmap":..,"bmd":..} if newer (api.c). sender: the node id of a
 * push (only the primary may), NULL for an answer this node asked for.
 * Caller must not hold wmu. Returns AIS_OK, or AIS_ERR with errno (EINVAL
 * bad JSON, ESTALE older, EXDEV other cluster, EPERM pushed by a node that
 * is not the primary) and a message. */
int clu_accept_meta(cluster_t *cl, const char *json, size_t len, const char *sender, buf_t *err);
/* Called on a node that accepted a map with itself decommissioning: writes
 * DIR/decommissioned and stops rejoining, now and after restarts. */
void clu_mark_decommissioned(cluster_t *cl);
/* The decommission of this node completed: pm, the primary's map, no
 * longer has it. Logs why and stops the process (SIGTERM to itself: the
 * daemon's graceful stop), once. */
void clu_leave(cluster_t *cl, const cmap_t *pm);
/* Non-primary: joins the primary when this node is not in its map. pm is
 * the primary's map as it answered this round (NULL: no answer). */
void clu_join_if_needed(cluster_t *cl, const cmap_t *pm);

/* runtime.c */
/* cluster_call_all for the node's own rounds (keepalive, election): the
 * wait ends early when the node stops (cl->stop). */
static inline size_t clu_call_all(cluster_t *cl, cluster_call_t *calls, size_t n)
{
	return cluster_call_quorum(calls, n, SIZE_MAX, 0, &cl->stop, NULL);
}
/* Health check of one node, blocking. */
bool clu_alive(cluster_t *cl, const char *base_url, uint64_t timeout_ms);
/* Pushes the current metadata to every node that has not acknowledged it.
 * Caller holds wmu. need == SIZE_MAX (the keepalive): waits for every
 * answer, and skips nodes failing their health checks (their versions are
 * reset when they answer again, so the next round pushes). Else returns
 * once need nodes hold it and the others answered or the health-check
 * timeout passed: pushes still in flight go on in the background (nodes cut
 * off do not hold up the caller; the keepalive pushes again). Returns how
 * many nodes of the map hold it (this one included) as far as is known;
 * newer (if not NULL, CMAP_URL_MAX + 1 bytes) gets the URL of a node that
 * refused it as older than its own, or "". */
size_t clu_push_all(cluster_t *cl, char *newer, size_t need);
/* Majority rules apply: the map has two gateways or more (with one, no
 * other primary can arise). */
bool clu_quorum_rules(const cmap_t *m);
/* The lease in ns (conf_lease_ms) and the guard of a grant (V5 in cmap.h). */
int64_t clu_lease_ns(const cluster_t *cl);
int64_t clu_lease_guard_ns(const cluster_t *cl);
/* Extends this node's lease as primary to at least until (monotonic ns). */
void clu_lease_extend(cluster_t *cl, int64_t until);
/* Logs a change of this node's role: "primary role: acting" when its map
 * names it primary and it holds the lease (or majority rules do not apply),
 * "primary role: not acting" when that stops (with since when). Returns
 * whether it acts now. */
bool clu_lease_note(cluster_t *cl);
/* After failed calls: true (and a warning, once until it recovers) when
 * this node cannot open a socket itself (EMFILE, ENOMEM, ..: httpc_local_*):
 * then no peer is blamed for the calls that failed. what: the calls. */
bool clu_local_shortage(cluster_t *cl, const char *what);

/* election.c */
/* Gets {"cmap","bmd"} from the node at base_url and accepts them if newer.
 * Caller must not hold wmu. AIS_OK when something newer was installed. */
int clu_adopt_from(cluster_t *cl, const char *base_url);
/* Keepalive round of a non-primary node: checks the primary, follows a
 * newer map, joins when needed, and on a gateway runs for primary when the
 * primary failed its checks past cluster.grace. */
void clu_follower_round(cluster_t *cl);
/* Start-up of a node whose persisted map names it primary: follows a newer
 * map from any other node of that map. */
void clu_startup_sync(cluster_t *cl);
/* Loads DIR/vote.json into cl->voted (missing: never voted). */
void clu_vote_load(cluster_t *cl);
/* POST /v1/cluster/vote (api.c routes it here). */
void clu_handle_vote(http_req_t *req, cluster_t *cl);
/* POST /v1/cluster/lease (api.c routes it here): 200 {"lease":true,"term"}
 * when granted (L1 in cmap.h), 409 {"lease":false,"term","reason"} not. */
void clu_handle_lease(http_req_t *req, cluster_t *cl);

#endif
