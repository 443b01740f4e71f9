/*
 * ecrepair.c - erasure-coded objects as the rebalance keeps them
 * (ec_int.h): the repair of an object's missing slices (ec_repair), and
 * the fate of a slice this target has after a map change or a change of
 * its bucket's erasure coding (ec_place_slice): kept, moved to a holder,
 * or dropped. The write of slices is ec.c, reads from them ecread.c.
 *
 * NOTES ON THE DESIGN
 *  1. The repair (from the whole copy: the rebalance's walk and queue)
 *     asks the holders (the first D+P active targets by HRW) for their
 *     slices, encodes only the indices none of them holds and sends each
 *     to a holder with no current slice, or one whose index a holder
 *     before it in HRW order has too. Only the owner encodes an object
 *     none of whose holders has a slice (a bucket converted to erasure
 *     coding): one encoder, so every slice is of one write (version).
 *  2. A slice on a target that is not one of its holders (a map change:
 *     decommission, maintenance with drain, a target joined or rejoined)
 *     is moved by that target's rebalance walk to the first holder that
 *     lacks a slice of that write (ecslice.c rule 4), then dropped here;
 *     the whole copy moves as any object does.
 *  3. A slice is dropped off a non-holder only when one holder says it has
 *     that slice (or D slices of a newer write) under a map at least as
 *     new as the walk's (ecslice.c rule 5), or took it with a move; and
 *     only if the map is still the walk's, checked under the map lock. A
 *     holder answers for its slice under that lock too, so two targets
 *     with different maps never each drop their slice on the other's word.
 *  4. The owner's walk of its slices fetches the whole copy it lacks (its
 *     owner was lost), or rebuilds it from the slices (ecread.c rule 1),
 *     which queues the repair of the missing slices (rule 1).
 *  5. In a bucket whose erasure coding was turned off (a re-encode to
 *     copies), or of an object now below a raised ec.objsize_limit, a
 *     slice is dropped only once every holder of the object under the new
 *     props has a whole copy (with ec.whole_copy=false the holder of
 *     slice 0 rebuilds one first, and the rebalance copies it); a slice of
 *     a former D+P (a re-encode to another layout) only once the holders
 *     under the new one confirm D slices of the newer write (rule 3).
 *  6. Deletes win over slices (ec.c rule 6): the rebalance drops a slice
 *     of a deleted object instead of moving it (a holder asks the first
 *     other holder once per walk, a non-holder asks them all as rule 3
 *     does), and a whole copy written before such a tombstone is not
 *     encoded by the repair but dropped (EC_GONE). A repair that finds no
 *     current slice versions the new ones with the whole copy's mtime (or
 *     one more than the newest slice it saw: a former layout's, rule 5),
 *     not the time of the repair, so a receiver with a newer tombstone
 *     refuses them.
 *  7. In a bucket kept as slices only (ec.c rule 5) the repair runs from
 *     the slices: the first holder in HRW order with a current slice asks
 *     the others, and only when an index is missing reads the object
 *     (ecread.c rule 3) and encodes the missing slices (rule 1). A whole
 *     copy left of a bucket converted to this mode is dropped by its owner
 *     once all D+P slices are confirmed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ec_priv.h"
#include "aisd/ec.h"
#include "aisd/httpc.h"
#include "aisd/jobs.h"
#include "aisd/log.h"
#include "aisd/place.h"
#include "aisd/util.h"
#include "aisd/banned.h"

static const char *self_intra(target_t *t) { return cluster_self(t->base.cl)->intra_url; }
static const char *self_id(target_t *t) { return cluster_self(t->base.cl)->id; }

/* --- repair ------------------------------------------------------------------------- */

/* Rule 1 with the whole copy here (fd; sm its metadata), or, with fd < 0,
 * on a holder of a slice of the write sm describes in a bucket kept as
 * slices only (rule 7): the object is read from the slices only when an
 * index is missing. With ec.whole_copy=false the whole copy here is
 * dropped once all D+P slices are there (rule 7). Returns as ec_repair;
 * closes fd. */
static int repair(target_t *t, const bmd_props_t *bpp, const char *bck, size_t blen, const char *obj, size_t olen,
		  int fd, const store_meta_t *sm, buf_t *msg)
{
	bmd_props_t bp = *bpp;
	bool whole = fd >= 0;
	store_meta_t *smp = xmalloc(sizeof(*smp));
	*smp = *sm;
	ec_url_t *u;
	unsigned ns = bp.ec_data + bp.ec_parity, missing = 0, placed = 0;
	size_t all = ec_targets(t, bck, blen, obj, olen, &u), n = MIN(all, ns); /* the holders (rule 1) */
	/* from the slices: the other targets too, whose slices the rebalance
	 * moves to the holders instead of a read of the whole object here */
	size_t na = whole ? n : all;
	struct ec_ask *a = ec_ask_all(u, na, "GET", "?meta=true", NULL, NULL, bck, blen, obj, olen);
	ec_meta_t tmpl, m;
	ec_meta_template(&tmpl, &bp, smp);
	bool have_idx[EC_NSL] = {false}, taken[EC_NSL] = {false}, moving[EC_NSL] = {false};
	const char *dest[EC_NSL] = {NULL};
	uint64_t ver = 0, seen = 0;
	for (size_t i = 0; i < na; i++) {
		if (a[i].status != 200 || ec_meta_parse(a[i].resp.ptr, a[i].resp.len, &m) != AIS_OK)
			continue;
		seen = MAX(seen, m.version);
		/* current: the same object (size, checksum) in the bucket's layout,
		 * and an index no holder before it in HRW order has */
		if (m.d != tmpl.d || m.p != tmpl.p || m.size != tmpl.size || strcmp(m.cksum, tmpl.cksum) ||
		    have_idx[m.idx])
			continue;
		if (i >= n) {
			moving[m.idx] = true;
			continue;
		}
		taken[i] = have_idx[m.idx] = true;
		ver = MAX(ver, m.version);
	}
	int wrote = 0;
	size_t next = 0;
	if (ec_deleted_at(t, a, na, bck, blen, obj, olen) > store_stamp(smp)) { /* rule 6 */
		log_info("%.*s/%.*s: a client deleted it after the whole copy here was written: dropped, not encoded",
			 (int)blen, bck, (int)MIN(olen, 200), obj);
		wrote = EC_GONE;
		goto out;
	}
	if (!ver && n && whole && strcmp(u[0], self_intra(t))) { /* rule 1: the first slices are the owner's */
		buf_addf(msg, "no slice of it on its holders yet: its owner encodes them");
		wrote = -1;
		goto out;
	}
	for (unsigned k = 0; k < ns; k++) {
		if (have_idx[k] || moving[k])
			continue; /* (a slice on its way here: rule 2) */
		missing++;
		while (next < n && taken[next])
			next++;
		if (next < n)
			dest[k] = u[next++], placed++;
	}
	if (missing) {
		if (placed < missing)
			log_info("%.*s/%.*s: %u of its %u slices missing, only %u active targets without one: "
				 "erasure-coded with less redundancy until targets join",
				 (int)blen, bck, (int)MIN(olen, 200), obj, missing, ns, placed);
		/* the repaired slices join the surviving ones' write; new ones are
		 * newer than any slice seen (a former layout's: rule 5) and no
		 * younger than the whole copy otherwise (rule 6) */
		tmpl.version = ver ? ver : MAX((uint64_t)store_stamp(smp), seen + 1);
		ec_layout_t l;
		bool ok[EC_NSL];
		ec_layout(smp->size, bp.ec_data, bp.ec_parity, EC_CELL, &l);
		if (placed && fd < 0 &&
		    (ec_read_whole(t, (sv_t){bck, blen}, (sv_t){obj, olen}, &fd, smp, msg) != AIS_OK ||
		     smp->size != sm->size || strcmp(smp->cksum, sm->cksum))) {
			if (fd >= 0)
				buf_addstr(msg, "overwritten meanwhile: the next run repairs it");
			wrote = -1;
			goto out;
		}
		if (placed) {
			size_t good = ec_encode_send(t, fd, &l, &tmpl, smp->custom, dest, bck, blen, obj, olen, ok, msg);
			wrote = good < placed ? -1 : (int)good;
			if (good)
				log_info("%.*s/%.*s: rebuilt %zu missing slice(s)", (int)blen, bck, (int)MIN(olen, 200),
					 obj, good);
		}
	}
	if (whole && bp.ec_no_whole && wrote >= 0 && (unsigned)wrote == missing) {
		/* every slice is there: a converted bucket's whole copy goes */
		store_meta_t *now = xmalloc(sizeof(*now));
		if (store_lookup(t->store, bck, blen, obj, olen, now) == AIS_OK && now->mtime_ns == sm->mtime_ns &&
		    !strcmp(now->cksum, sm->cksum) && store_delete(t->store, bck, blen, obj, olen) == AIS_OK)
			log_info("%.*s/%.*s: its %u slices are all there: the whole copy dropped (ec.whole_copy=false)",
				 (int)blen, bck, (int)MIN(olen, 200), obj, ns);
		free(now);
	}
out:
	if (fd >= 0)
		close(fd);
	ec_ask_free(a, na);
	free(u);
	free(smp);
	return wrote;
}

int ec_repair(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen, buf_t *msg)
{
	bmd_props_t bp;
	store_meta_t *sm = xmalloc(sizeof(*sm));
	int fd, rc = 0;
	if (!ec_props(t, (sv_t){bck, blen}, &bp)) {
	} else if (store_open_obj(t->store, bck, blen, obj, olen, &fd, sm) == AIS_OK) {
		if (place_ec(&bp, sm->size))
			rc = repair(t, &bp, bck, blen, obj, olen, fd, sm, msg);
		else
			close(fd);
	} else if (bp.ec_enabled && bp.ec_no_whole && ec_stat(t, (sv_t){bck, blen}, (sv_t){obj, olen}, sm, msg) == AIS_OK &&
		   place_ec(&bp, sm->size)) { /* kept as slices only (rule 7) */
		rc = repair(t, &bp, bck, blen, obj, olen, -1, sm, msg);
	}
	free(sm);
	return rc;
}

/* --- a slice off its holders (the rebalance) ---------------------------------------- */

/* Deletes the local slice if the map is still cmap_v and the slice still
 * the one decided on (me; NULL: any), under the map lock (rule 3). deleted:
 * the client's delete it goes for (its stamp; 0: none), kept as the
 * slice's tombstone, so that delete, asking here a moment later, hears the
 * slice was there (ecslice.c rule 6). */
static bool drop_slice(target_t *t, const char *sb, const char *obj, size_t olen, uint64_t cmap_v,
		       const ec_meta_t *me, int64_t deleted)
{
	const cmap_t *m;
	store_meta_t sm;
	ec_meta_t now;
	bool gone = false;
	cluster_read_lock(t->base.cl, &m, NULL);
	if (m && cmap_version(m) == cmap_v &&
	    (!me || (store_lookup(t->store, sb, strlen(sb), obj, olen, &sm) == AIS_OK &&
		     ec_meta_of(sm.custom, &now) == AIS_OK && ec_same_write(&now, me) && now.idx == me->idx)))
		gone = (deleted <= store_tomb_get(t->store, sb, strlen(sb), obj, olen) ||
			store_tomb_put(t->store, sb, strlen(sb), obj, olen, deleted) == AIS_OK) &&
		       store_delete(t->store, sb, strlen(sb), obj, olen) == AIS_OK;
	cluster_read_unlock(t->base.cl);
	return gone;
}

/* Rule 5: do all the holders of bck/obj (size bytes) under the bucket's
 * props bp have a whole copy? msg names one that lacks it. */
static bool copies_there(target_t *t, const bmd_props_t *bp, const char *bck, size_t blen, const char *obj,
			 size_t olen, uint64_t size, buf_t *msg)
{
	const cmap_t *m;
	place_t p;
	ec_url_t h[BMD_COPIES_MAX];
	size_t n = 0;
	bool all = true;
	char hv[64];
	const char *hp[] = {hv, NULL};
	buf_t url = BUF_INIT, resp = BUF_INIT;
	cluster_read_lock(t->base.cl, &m, NULL);
	ec_place_of(m, NULL, bck, blen, obj, olen, MIN(place_copies_of(bp, size), BMD_COPIES_MAX), &p);
	for (size_t i = 0; i < p.n; i++)
		snprintf(h[n++], sizeof(h[0]), "%s", p.node[i]->intra_url);
	cluster_read_unlock(t->base.cl);
	snprintf(hv, sizeof(hv), "%s: ec", TGT_INTRA);
	for (size_t i = 0; i < n && all; i++) {
		int status = 0;
		buf_reset(&url);
		tgt_url_obj(&url, h[i], bck, blen, obj, olen);
		all = httpc_sync("HEAD", url.ptr, hp, NULL, 0, 10000, &resp, &status) == AIS_OK && status == 200;
		if (!all)
			buf_addf(msg, "erasure coding is off: the slice stays until %s has a whole copy", h[i]);
	}
	buf_free(&url);
	buf_free(&resp);
	return n && all;
}

int ec_place_slice(target_t *t, const bmd_props_t *bp, const char *bck, size_t blen, const char *obj,
		   size_t olen, uint64_t cmap_v, uint64_t *bytes, buf_t *msg)
{
	char sb[24];
	store_meta_t sm;
	ec_meta_t me;
	ec_url_t top[EC_NSL];
	size_t n = 0;
	bool had = false, moved = false;

	ec_slice_bucket(bck, blen, sb);
	if (store_lookup(t->store, sb, strlen(sb), obj, olen, &sm) != AIS_OK)
		return EC_SLICE_KEPT; /* gone meanwhile */
	/* rule 5: erasure coding off, or the object now below ec.objsize_limit */
	bool coded = ec_meta_of(sm.custom, &me) == AIS_OK && place_ec(bp, me.size);
	if (!coded && (ec_meta_of(sm.custom, &me) != AIS_OK || copies_there(t, bp, bck, blen, obj, olen, me.size, msg)))
		return drop_slice(t, sb, obj, olen, cmap_v, NULL, 0) ? EC_SLICE_DROPPED : EC_SLICE_KEPT;
	if (!coded) { /* rule 5: kept until the copies are there */
		store_meta_t *wm = xmalloc(sizeof(*wm));
		if (bp->ec_no_whole && me.idx == 0 && store_lookup(t->store, bck, blen, obj, olen, wm) != AIS_OK &&
		    (tgt_fetch(t, bck, blen, obj, olen, msg) == AIS_OK ||
		     (buf_reset(msg), ec_restore(t, (sv_t){bck, blen}, (sv_t){obj, olen}, msg)) == AIS_OK) && t->reb)
			/* slices only before: the holder of slice 0 fetches or
			 * rebuilds a whole copy, which the rebalance then copies */
			reb_enqueue(t->reb, bck, blen, obj, olen);
		free(wm);
		return AIS_ERR;
	}
	const cmap_t *cm;
	place_t p;
	cluster_read_lock(t->base.cl, &cm, NULL);
	bool current = cm && cmap_version(cm) == cmap_v;
	/* the holders under the bucket's layout; a slice of another one (a
	 * re-encode) stays only until the new layout is complete */
	bool stale = me.d != bp->ec_data || me.p != bp->ec_parity;
	ec_place_of(cm, self_id(t), bck, blen, obj, olen, bp->ec_data + bp->ec_parity, &p);
	for (size_t i = 0; i < p.n && i < EC_NSL; i++)
		snprintf(top[n++], sizeof(top[0]), "%s", p.node[i]->intra_url);
	cluster_read_unlock(t->base.cl);
	bool owner_has = false;
	if (current && p.self >= 0 && n > 1) {
		/* rule 6: a holder's slice of a deleted object (this target missed
		 * the delete) goes; the first other holder knows of the delete */
		struct ec_ask *a = ec_ask_all(&top[p.self == 0], 1, "GET", "?meta=true", NULL, NULL, bck, blen, obj, olen);
		int64_t del = ec_deleted_at(t, a, 1, bck, blen, obj, olen);
		bool gone = del > (int64_t)me.version;
		ec_meta_t om;
		owner_has = p.self > 0 && a[0].status == 200 && ec_meta_parse(a[0].resp.ptr, a[0].resp.len, &om) == AIS_OK &&
			    (ec_same_write(&om, &me) || om.version > me.version);
		ec_ask_free(a, 1);
		if (gone)
			return drop_slice(t, sb, obj, olen, cmap_v, &me, del) ? EC_SLICE_DROPPED : EC_SLICE_KEPT;
	}
	if (current && p.self >= 0 && bp->ec_no_whole) {
		/* rule 7: the first holder with a slice repairs the others */
		if (owner_has)
			return EC_SLICE_KEPT;
		const char *nl = strchr(sm.custom, '\n');
		store_meta_t *om = xmalloc(sizeof(*om));
		ec_meta_of_write(&me, sv_from(nl ? nl + 1 : ""), om);
		int w = repair(t, bp, bck, blen, obj, olen, -1, om, msg);
		free(om);
		if (w == EC_GONE)
			return drop_slice(t, sb, obj, olen, cmap_v, &me, 0) ? EC_SLICE_DROPPED : EC_SLICE_KEPT;
		return w < 0 ? AIS_ERR : EC_SLICE_KEPT;
	}
	if (current && p.self == 0 && !bp->ec_no_whole && store_lookup(t->store, bck, blen, obj, olen, &sm) != AIS_OK) {
		/* rule 4: the owner without the whole copy fetches or rebuilds it */
		int fd;
		if (ol_open_sync(t, (sv_t){bck, blen}, (sv_t){obj, olen}, true, &fd, &sm, msg) != AIS_OK)
			return AIS_ERR;
		close(fd);
	}
	if (!current || p.self >= 0)
		return EC_SLICE_KEPT; /* a newer map: its run decides; or a holder (the
					 * owner's repair replaces a slice of a former layout) */

	/* rule 3: dropped only when a holder under a map as new has this slice
	 * (or D slices of a newer write) */
	char vh[64];
	snprintf(vh, sizeof(vh), "%s: %llu", TGT_CMAP_VERSION, (unsigned long long)cmap_v);
	struct ec_ask *a = ec_ask_all(top, n, "GET", "?meta=true", NULL, vh, bck, blen, obj, olen);
	int64_t del = ec_deleted_at(t, a, n, bck, blen, obj, olen);
	if (del > (int64_t)me.version) { /* rule 6: not moved */
		ec_ask_free(a, n);
		return drop_slice(t, sb, obj, olen, cmap_v, &me, del) ? EC_SLICE_DROPPED : EC_SLICE_KEPT;
	}
	bool cand[EC_NSL] = {false}, conf[EC_NSL] = {false}, ok[EC_NSL] = {false};
	ec_meta_t am[EC_NSL];
	const ec_meta_t *newest = NULL;
	for (size_t i = 0; i < n; i++) {
		cand[i] = a[i].status == 404;
		if (a[i].status != 200 || ec_meta_parse(a[i].resp.ptr, a[i].resp.len, &am[i]) != AIS_OK)
			continue;
		ok[i] = true;
		sv_t hv = httpc_header_find(sv_of(&a[i].hdrs), EC_HOLDER_HDR);
		conf[i] = hv.ptr && sv_eqstr(hv, "true");
		if (ec_same_write(&am[i], &me)) {
			cand[i] = am[i].idx == me.idx; /* it answers a move with 200 */
			had |= cand[i] && conf[i];
		} else if (am[i].version > me.version) {
			if (conf[i] && (!newest || am[i].version > newest->version))
				newest = &am[i];
		} else {
			cand[i] = true; /* an older write's slice: ours replaces it */
		}
	}
	if (newest && !had) {
		bool seen[EC_NSL] = {false};
		unsigned cnt = 0;
		for (size_t i = 0; i < n; i++)
			if (ok[i] && conf[i] && ec_same_write(&am[i], newest) && !seen[am[i].idx])
				seen[am[i].idx] = true, cnt++;
		had = cnt >= newest->d; /* ours is of an overwritten version */
	}
	ec_ask_free(a, n);
	if (!had && stale) {
		buf_addstr(msg, "a slice of the bucket's former erasure-coding layout: kept until the new one is complete");
		return AIS_ERR;
	}
	if (!had) { /* rule 2: to the first holder without a slice of this write */
		int fd;
		store_meta_t om;
		if (store_open_obj(t->store, sb, strlen(sb), obj, olen, &fd, &om) != AIS_OK)
			return EC_SLICE_KEPT;
		for (size_t i = 0; i < n && !moved; i++)
			if (cand[i])
				moved = ec_move_slice(top[i], fd, &om, &me, cmap_v, bck, blen, obj, olen, msg);
		close(fd);
		if (!moved) {
			if (!msg->len)
				buf_addstr(msg, "every holder has another slice of it");
			return AIS_ERR;
		}
		*bytes = om.size;
		ec_count(EC_M_MOVED, 1);
	}
	if (!drop_slice(t, sb, obj, olen, cmap_v, &me, 0))
		return moved ? EC_SLICE_MOVED : EC_SLICE_KEPT;
	return moved ? EC_SLICE_MOVED : EC_SLICE_DROPPED;
}

