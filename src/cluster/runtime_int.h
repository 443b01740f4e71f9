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
	atomic_bool decommissioned;
	pthread_mutex_t refresh_mu; /* one cluster_refresh at a time; guards refreshed_ns */
	int64_t refreshed_ns;       /* end of the last cluster_refresh (monotonic) */ /* the primary decommissioned this node (DIR/decommissioned) */
	pthread_mutex_t sleep_mu;
	pthread_cond_t sleep_cv;
};

int clu_install(cluster_t *cl, cmap_t *m, bmd_t *b, buf_t *err);
void clu_encode_meta(cluster_t *cl, buf_t *out);
/* Accepts {"cmap":..,"bmd":..} if newer (api.c). Caller must not hold wmu.
 * Returns AIS_OK, or AIS_ERR with errno (EINVAL bad JSON, ESTALE older,
 * EXDEV other cluster) and a message. */
int clu_accept_meta(cluster_t *cl, const char *json, size_t len, buf_t *err);
/* Called on a node that accepted a map with itself decommissioning: writes
 * DIR/decommissioned and stops rejoining, now and after restarts. */
void clu_mark_decommissioned(cluster_t *cl);
/* Non-primary: joins the primary when this node is not in its map. */
void clu_join_if_needed(cluster_t *cl);

#endif
