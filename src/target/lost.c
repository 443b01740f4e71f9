/*
 * lost.c - the holders a client's delete must reach: every target that may
 * hold a copy, also one that is down and out of the cluster map.
 *
 * A target that fails its health checks for cluster.grace leaves the map
 * (runtime.c), but not the cluster: it comes back with its copies, and a
 * copy nobody contests stays (with copies=1 it is the only holder again).
 * So a delete acknowledged while that target was away would be undone when
 * it returns. This file remembers, on this target, the targets it saw
 * leave the map without a decommission ("lost"), and places an object
 * under the map with them back and every target in maintenance counted
 * active: those holders (of its copies; of an erasure-coded bucket's, its
 * D+P slice holders) are the ones a delete must reach (ol_delete, the rule
 * mirror.delete_quorum).
 *
 * Guarantees:
 *  1. A target is lost from the first map without it that this target
 *     installs (having seen it in the map before, active or in
 *     maintenance) until a map lists it again; a target that left
 *     decommissioning (drained) is not lost.
 *  2. tgt_lost_holders never blocks on the network; it copies what it
 *     returns, so the caller holds no lock.
 *  3. A target lost for longer than store.tombstone_ttl is forgotten: by
 *     then the tombstones of the deletes it missed are gone too, and a
 *     target that is never coming back (and never decommissioned) does not
 *     hold deletes up for ever.
 * Not kept across a restart of this target: a target lost before it
 * restarted is not known here (deletes on the other targets still know it).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "aisd/log.h"
#include "aisd/place.h"
#include "target_int.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define LOST_MAX 64 /* targets remembered at most (the oldest go first) */

/* One target per process: the set is the process's. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static cmap_node_t g_lost[LOST_MAX];
static int64_t g_since[LOST_MAX]; /* when it was lost (monotonic ns) */
static size_t g_n;

static void lost_drop(size_t i)
{
	memmove(&g_lost[i], &g_lost[i + 1], (g_n - i - 1) * sizeof(g_lost[0]));
	memmove(&g_since[i], &g_since[i + 1], (g_n - i - 1) * sizeof(g_since[0]));
	g_n--;
}

void tgt_lost_note(const cmap_t *old, const cmap_t *cur, const char *self)
{
	pthread_mutex_lock(&g_mu);
	for (size_t i = 0; i < g_n;) /* back in the map: not lost */
		if (cmap_get(cur, g_lost[i].id, strlen(g_lost[i].id)))
			lost_drop(i);
		else
			i++;
	for (size_t i = 0; old && i < cmap_size(old); i++) {
		const cmap_node_t *nd = cmap_node(old, i);
		if (nd->role != CMAP_TARGET || nd->state == CMAP_DECOMMISSIONING || (self && !strcmp(nd->id, self)) ||
		    cmap_get(cur, nd->id, strlen(nd->id)))
			continue;
		size_t j;
		for (j = 0; j < g_n && strcmp(g_lost[j].id, nd->id); j++)
			;
		if (j < g_n)
			continue;
		if (g_n == LOST_MAX)
			lost_drop(0);
		g_since[g_n] = time_mono_ns();
		g_lost[g_n++] = *nd;
		log_info("target %s left the cluster map without a decommission: deletes of objects it may hold "
			 "wait for it (mirror.delete_quorum)", nd->id);
	}
	pthread_mutex_unlock(&g_mu);
}

size_t tgt_lost_holders(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen, cmap_node_t *out,
			size_t cap)
{
	const cmap_t *m;
	const bmd_t *b;
	place_t p;
	buf_t uname = BUF_INIT, err = BUF_INIT;
	size_t n = 0;
	if (!t->base.cl)
		return 0;
	cluster_read_lock(t->base.cl, &m, &b);
	cmap_t *full = m ? cmap_clone(m) : NULL;
	/* an erasure-coded bucket's: the D+P targets of its slices (and copies) */
	const bmd_bucket_t *bk = b ? bmd_get(b, bck, blen) : NULL;
	size_t k = bk && bk->props.ec_enabled ? bk->props.ec_data + bk->props.ec_parity : tgt_bucket_copies(b, bck, blen);
	cluster_read_unlock(t->base.cl);
	if (!full)
		return 0;
	for (size_t i = 0; i < cmap_size(full); i++) { /* in maintenance: down, maybe, not gone */
		const cmap_node_t *nd = cmap_node(full, i);
		if (nd->role == CMAP_TARGET && nd->state == CMAP_MAINTENANCE)
			cmap_set_state(full, nd->id, CMAP_ACTIVE, &err);
	}
	pthread_mutex_lock(&g_mu);
	int64_t oldest = time_mono_ns() - (int64_t)t->conf->tomb_ttl_ms * 1000000;
	for (size_t i = 0; i < g_n;) /* guarantee 3 */
		if (g_since[i] < oldest)
			lost_drop(i);
		else
			i++;
	for (size_t i = 0; i < g_n; i++) {
		cmap_node_t nd = g_lost[i];
		nd.state = CMAP_ACTIVE;
		nd.drain = false;
		if (!cmap_get(full, nd.id, strlen(nd.id)))
			cmap_add(full, &nd, &err);
	}
	pthread_mutex_unlock(&g_mu);
	buf_add(&uname, bck, blen);
	buf_addch(&uname, '/');
	buf_add(&uname, obj, olen);
	place_of(full, uname.ptr, uname.len, k, NULL, &p);
	for (size_t i = 0; i < p.n && n < cap; i++)
		out[n++] = *p.node[i];
	cmap_free(full);
	buf_free(&uname);
	buf_free(&err);
	return n;
}
