/*
 * tomb.c - tombstones: when an object was deleted by a client.
 *
 * A copy that a target missed a delete on (it was down or cut off) must
 * not come back when that target returns and offers its copy to the
 * others (rebalance) or a holder fetches it. So the object layer records
 * each client delete on every target it reaches, and a target without a
 * copy compares: a copy older than the tombstone is a deleted one.
 *
 * Key "d" + bucket + "\0" + object -> the delete time (8 bytes, big
 * endian, wall-clock ns) in the LevelDB of the object's HRW mountpath.
 *
 * Guarantees:
 *  1. store_tomb_get sees a tombstone of any open mountpath, and none older
 *     than the store's tombstone_ttl.
 *  2. Space is bounded by the deletes of one tombstone_ttl: store_tomb_sweep
 *     (the mountpath check thread, at most once a minute, and at open)
 *     removes the older ones.
 */
#include <errno.h>
#include <string.h>

#include "store_int.h"
#include "aisd/hlc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define SWEEP_BATCH 4096 /* deletes per LevelDB write of a sweep */

static void tomb_key(buf_t *k, const char *bck, size_t blen, const char *obj, size_t olen)
{
	store_key_obj(k, bck, blen, obj, olen);
	k->ptr[0] = 'd';
}

static int64_t be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return (int64_t)v;
}

int store_tomb_put(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen, int64_t when_ns)
{
	buf_t k = BUF_INIT;
	unsigned char v[8];
	int rc = AIS_ERR;
	hlc_observe(when_ns); /* a write here after this delete is stamped after it */
	if (!s->tomb_ttl_ns)
		return AIS_OK;
	for (int i = 0; i < 8; i++)
		v[i] = (unsigned char)((uint64_t)when_ns >> (56 - 8 * i));
	tomb_key(&k, bck, blen, obj, olen);
	store_rd(s);
	store_mp_t *mp = store_mp_of(s, bck, blen, obj, olen);
	if (mp) { /* under the lock a commit checks it under (store_writer_origin) */
		leveldb_writebatch_t *b = leveldb_writebatch_create();
		leveldb_writebatch_put(b, k.ptr, k.len, (const char *)v, sizeof(v));
		pthread_mutex_lock(&mp->commit_mu);
		rc = store_db_write(s, mp, s->wo_commit, b, "tombstone");
		pthread_mutex_unlock(&mp->commit_mu);
		leveldb_writebatch_destroy(b);
	} else {
		errno = ENOSPC;
	}
	store_unrd(s);
	buf_free(&k);
	return rc;
}

/* The tombstone's time on mp, if younger than the ttl; else 0. */
static int64_t tomb_on(store_t *s, store_mp_t *mp, const buf_t *k, int64_t oldest)
{
	size_t vl = 0;
	char *v = store_db_get(s, mp, k->ptr, k->len, "tombstone", &vl);
	if (!v)
		return 0;
	int64_t t = vl == 8 ? be64((const unsigned char *)v) : 0;
	leveldb_free(v);
	return t > oldest ? t : 0;
}

bool store_tomb_newer(store_t *s, store_mp_t *mp, const char *bck, size_t blen, const char *obj, size_t olen,
		      int64_t stamp)
{
	buf_t k = BUF_INIT;
	if (!s->tomb_ttl_ns)
		return false;
	tomb_key(&k, bck, blen, obj, olen);
	int64_t t = tomb_on(s, mp, &k, time_now_ns() - (int64_t)s->tomb_ttl_ns);
	buf_free(&k);
	return t > stamp;
}

int64_t store_tomb_get(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen)
{
	buf_t k = BUF_INIT;
	int64_t when = 0, oldest = time_now_ns() - (int64_t)s->tomb_ttl_ns;
	if (!s->tomb_ttl_ns)
		return 0;
	tomb_key(&k, bck, blen, obj, olen);
	store_rd(s);
	for (int i = 0; i < store_nmp(s); i++) {
		int64_t t = store_mp_open(s, i) ? tomb_on(s, &s->mp[i], &k, oldest) : 0;
		if (t > when)
			when = t;
	}
	store_unrd(s);
	buf_free(&k);
	return when;
}

size_t store_tomb_sweep(store_t *s)
{
	size_t gone = 0;
	int64_t oldest = time_now_ns() - (int64_t)s->tomb_ttl_ns;
	store_rd(s);
	for (int i = 0; i < store_nmp(s); i++) {
		if (!store_mp_open(s, i))
			continue;
		store_mp_t *mp = &s->mp[i];
		leveldb_iterator_t *it = leveldb_create_iterator(mp->db, s->ro_scan);
		leveldb_writebatch_t *b = leveldb_writebatch_create();
		size_t n = 0;
		for (leveldb_iter_seek(it, "d", 1); leveldb_iter_valid(it); leveldb_iter_next(it)) {
			size_t kl, vl;
			const char *k = leveldb_iter_key(it, &kl);
			const char *v = leveldb_iter_value(it, &vl);
			if (kl < 1 || k[0] != 'd')
				break;
			if (s->tomb_ttl_ns && vl == 8 && be64((const unsigned char *)v) > oldest)
				continue;
			leveldb_writebatch_delete(b, k, kl);
			if (++n == SWEEP_BATCH) { /* bounded memory, whatever the count */
				if (store_db_write(s, mp, s->wo_lazy, b, "tombstone sweep") == AIS_OK)
					gone += n;
				leveldb_writebatch_clear(b);
				n = 0;
			}
		}
		leveldb_iter_destroy(it);
		if (n && store_db_write(s, mp, s->wo_lazy, b, "tombstone sweep") == AIS_OK)
			gone += n;
		leveldb_writebatch_destroy(b);
	}
	store_unrd(s);
	return gone;
}
