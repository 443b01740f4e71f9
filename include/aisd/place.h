/*
 * place.h - where an object's copies live in the cluster, and whether a
 * change of the cluster map moves any of them. Pure functions over a cmap
 * and bucket properties: the target's data path, the rebalance walk and the
 * unit tests all ask the same questions here.
 *
 * Rules:
 *  1. A bucket wants place_copies(props) copies: mirror.copies when
 *     mirror.enabled, ec.parity_slices + 1 when ec.enabled, else 1.
 *     An object of an ec.enabled bucket of ec.objsize_limit bytes or more
 *     is erasure coded (place_ec): one whole copy, on the owner, and its
 *     slices on distinct targets (ec.h, src/target/ec*.c).
 *  2. The copies of uname live on the top-k active targets by HRW weight
 *     (cmap_top), k = min(wanted, active targets): distinct nodes, best
 *     first; the first is the owner, which takes PUTs and DELETEs.
 *  3. A map change moves objects exactly when the set of active targets
 *     changes (place_changed): HRW weights depend on nothing else.
 */
#ifndef AISD_PLACE_H
#define AISD_PLACE_H

#include <stdbool.h>
#include <stddef.h>

#include "aisd/bmd.h"
#include "aisd/cmap.h"
#include "aisd/hrw.h"

typedef struct place {
	size_t n;                             /* copies placed (0: no active target) */
	const cmap_node_t *node[HRW_TOP_MAX]; /* best first; borrowed from the map */
	int self;                             /* rank of self_id among them; -1: not a holder */
} place_t;

/* Number of copies a bucket wants (rule 1), at least 1. */
size_t place_copies(const bmd_props_t *p);
/* Is an object of size bytes of a bucket with props p erasure coded? */
bool place_ec(const bmd_props_t *p, uint64_t size);
/* Whole copies such an object wants: 1 when erasure coded, else place_copies. */
size_t place_copies_of(const bmd_props_t *p, uint64_t size);
/* Fills out with the holders of uname under m (rule 2). self_id may be NULL. */
void place_of(const cmap_t *m, const char *uname, size_t len, size_t copies, const char *self_id,
              place_t *out);
/* The holders of BUCKET/OBJECT under m with the copies its bucket wants
 * under b (1 when b lacks the bucket): the one placement every API and
 * every role uses. self_id may be NULL. */
void place_object(const cmap_t *m, const bmd_t *b, const char *bck, size_t blen, const char *obj, size_t olen,
		  const char *self_id, place_t *out);
/* True when a and b have different sets of active targets (rule 3). A NULL
 * map has none. */
bool place_changed(const cmap_t *a, const cmap_t *b);

#endif
