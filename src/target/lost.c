/*
 * lost.c - the holders a client's delete must reach: every target that may
 * hold a copy, also one that is down and out of the cluster map.
 *
 * A target that fails its health checks for cluster.grace leaves the map
 * (runtime.c), but not the cluster: it comes back with its copies, and a
 * copy nobody contests stays (with copies=1 it is the only holder again).
 * So a delete acknowledged while that target was away would be undone when
 * it returns. The cluster map says which targets are away so: its lost
 * list (cmap_drop: dropped while not decommissioning, until it joins again
 * or an administrator writes it off with decommission-node), the same list
 * that tells a listing it may be incomplete. This file places an object
 * under the map with the lost targets back and every target in maintenance
 * counted active: those holders (of its copies; of an erasure-coded
 * bucket's, its D+P slice holders) are the ones a delete must reach
 * (ol_delete, the rule mirror.delete_quorum).
 *
 * Guarantees:
 *  1. A target is lost exactly while the installed map lists it lost; this
 *     file only remembers the addresses of the targets it saw leave (from
 *     the map before), so a delete can still be sent to a lost target that
 *     answers again before it rejoins.
 *  2. A lost target whose address this target never saw (it left before
 *     this target started) is still a holder: placement needs its id only,
 *     and the delete cannot reach it (no URL), so it is named as missed.
 *  3. tgt_lost_holders never blocks on the network; it copies what it
 *     returns, so the caller holds no lock.
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
#define UNKNOWN_URL "http://address-unknown.invalid" /* guarantee 2 */

/* One target per process: the set is the process's. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static cmap_node_t g_lost[LOST_MAX]; /* the addresses of lost targets */
static size_t g_n;

static bool is_lost(const cmap_t *m, const char *id)
{
	for (size_t i = 0; i < cmap_lost_count(m); i++)
		if (!strcmp(cmap_lost(m, i), id))
			return true;
	return false;
}

static void lost_drop(size_t i)
{
	memmove(&g_lost[i], &g_lost[i + 1], (g_n - i - 1) * sizeof(g_lost[0]));
	g_n--;
}

void tgt_lost_note(const cmap_t *old, const cmap_t *cur, const char *self)
{
	pthread_mutex_lock(&g_mu);
	for (size_t i = 0; i < g_n;) /* back in the map, or written off: not lost */
		if (cmap_get(cur, g_lost[i].id, strlen(g_lost[i].id)) || !is_lost(cur, g_lost[i].id))
			lost_drop(i);
		else
			i++;
	for (size_t i = 0; old && i < cmap_size(old); i++) {
		const cmap_node_t *nd = cmap_node(old, i);
		if (nd->role != CMAP_TARGET || (self && !strcmp(nd->id, self)) || !is_lost(cur, nd->id))
			continue;
		size_t j;
		for (j = 0; j < g_n && strcmp(g_lost[j].id, nd->id); j++)
			;
		if (j < g_n)
			continue;
		if (g_n == LOST_MAX)
			lost_drop(0);
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
	size_t nlost = m ? MIN(cmap_lost_count(m), (size_t)LOST_MAX) : 0;
	char lost[LOST_MAX][CMAP_ID_MAX + 1];
	for (size_t i = 0; i < nlost; i++)
		snprintf(lost[i], sizeof(lost[i]), "%s", cmap_lost(m, i));
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
	for (size_t i = 0; i < nlost; i++) { /* guarantees 1 and 2 */
		cmap_node_t nd = {.role = CMAP_TARGET};
		size_t j;
		for (j = 0; j < g_n && strcmp(g_lost[j].id, lost[i]); j++)
			;
		if (j < g_n)
			nd = g_lost[j];
		else { /* placed by its id; the URL only passes cmap_add, out blank */
			snprintf(nd.id, sizeof(nd.id), "%.*s", CMAP_ID_MAX, lost[i]);
			snprintf(nd.pub_url, sizeof(nd.pub_url), "%s", UNKNOWN_URL);
			snprintf(nd.intra_url, sizeof(nd.intra_url), "%s", UNKNOWN_URL);
		}
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
	for (size_t i = 0; i < p.n && n < cap; i++) {
		out[n] = *p.node[i];
		if (!strcmp(out[n].intra_url, UNKNOWN_URL))
			out[n].intra_url[0] = out[n].pub_url[0] = '\0';
		n++;
	}
	cmap_free(full);
	buf_free(&uname);
	buf_free(&err);
	return n;
}
