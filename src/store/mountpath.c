/*
 * mountpath.c - mountpaths on a running store: attach, detach, and the
 * resilver primitives that move objects to their HRW mountpath.
 *
 * NOTES ON THE DESIGN
 *
 *  1. Slots: store_t has CONF_MAX_MOUNTPATHS slots; n_mp only grows. A slot
 *     is active (in the HRW set: new writes may go there), detaching (out
 *     of the HRW set, still open and read) or off (closed). A detached path
 *     attached again reuses its slot.
 *  2. Reads never miss an object that is on some open mountpath: a lookup
 *     tries the HRW mountpath, then every other open one (read.c), and a
 *     delete removes every copy.
 *  3. A slot's database is closed only under mp_rw held for writing, with
 *     no writer on it (users == 0), no object record left on it and the
 *     start-up reconcile finished; every reader of a slot holds mp_rw for
 *     reading. So no thread ever uses a closed database.
 *  4. Bucket records are written to every open slot and read from the
 *     first active one (bmp); an attached slot gets a copy of them before
 *     it becomes active.
 *  5. store_relocate moves one object: copy (a hard link when both are on
 *     one file system) to a new gen on the HRW mountpath, fsync, rename;
 *     then, under both commit mutexes (lower slot first), and only if the
 *     source record still names the gen copied and the destination's
 *     record did not change meanwhile, one batch that records it on the
 *     destination, then the source's record and file go. A crash in
 *     between leaves two records: lookups take the HRW one, and the next
 *     resilver drops the other (same mtime).
 *  6. layout_gen counts changes that may leave objects off their HRW
 *     mountpath (attach, detach, a write that committed to a mountpath
 *     that stopped being the HRW one while it streamed): the resilver job
 *     walks until a walk starts and ends at the same value.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/hrw.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "store_int.h"
#include "aisd/banned.h"

static int find_slot(store_t *s, const char *path)
{
	for (int i = 0; i < store_nmp(s); i++)
		if (!strcmp(s->mp[i].path, path))
			return i;
	return -1;
}

int store_count_state(store_t *s, int state)
{
	int n = 0;
	for (int i = 0; i < store_nmp(s); i++)
		n += s->mp[i].state == state;
	return n;
}

/* The first active slot becomes the bucket slot (rule 4). Caller holds mp_mu. */
void store_pick_bmp(store_t *s)
{
	for (int i = 0; i < store_nmp(s); i++)
		if (s->mp[i].state == MP_ACTIVE) {
			atomic_store(&s->bmp, i);
			return;
		}
}

/* Copies every bucket record of the bucket slot to mp. Caller holds bucket_mu. */
static int copy_buckets(store_t *s, store_mp_t *mp)
{
	store_mp_t *from = store_bmp(s);
	leveldb_iterator_t *it = leveldb_create_iterator(from->db, s->ro_scan);
	leveldb_writebatch_t *wb = leveldb_writebatch_create();
	for (leveldb_iter_seek(it, "b", 1); leveldb_iter_valid(it); leveldb_iter_next(it)) {
		size_t kl, vl;
		const char *k = leveldb_iter_key(it, &kl);
		if (kl < 1 || k[0] != 'b')
			break;
		const char *v = leveldb_iter_value(it, &vl);
		leveldb_writebatch_put(wb, k, kl, v, vl);
	}
	leveldb_iter_destroy(it);
	int rc = store_db_write(s, mp, s->wo_commit, wb, "attach: bucket records");
	leveldb_writebatch_destroy(wb);
	return rc;
}

int store_mp_attach(store_t *s, const char *path, buf_t *err)
{
	int rc = AIS_ERR;
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof(s->mp[0].path) - 64 || path[0] != '/') {
		buf_addf(err, "mountpath: want an absolute path of at most %zu bytes", sizeof(s->mp[0].path) - 64);
		errno = EINVAL;
		return AIS_ERR;
	}
	pthread_mutex_lock(&s->mp_mu);
	int i = find_slot(s, path);
	if (i >= 0 && s->mp[i].state == MP_ACTIVE) {
		buf_addf(err, "mountpath %s is attached already", path);
		errno = EEXIST;
		goto out;
	}
	if (i >= 0 && s->mp[i].state == MP_FAULTED) {
		buf_addf(err, "mountpath %s failed (%s): detach it first", path, s->mp[i].fault);
		errno = EBUSY;
		goto out;
	}
	if (i >= 0 && s->mp[i].state == MP_DETACHING) { /* a detach in progress is called off */
		atomic_store(&s->mp[i].state, MP_ACTIVE);
		atomic_fetch_add(&s->layout_gen, 1);
		store_hot_clear(s);
		log_info("mountpath %s: attached again (its detach is called off)", path);
		rc = AIS_OK;
		goto out;
	}
	if (i < 0 && store_nmp(s) >= CONF_MAX_MOUNTPATHS) {
		buf_addf(err, "at most %d mountpaths", CONF_MAX_MOUNTPATHS);
		errno = EINVAL;
		goto out;
	}
	int slot = i >= 0 ? i : store_nmp(s);
	store_mp_t *mp = &s->mp[slot];
	/* an unused slot (past n_mp) or a closed one: no reader uses it (rule 1) */
	if (slot == store_nmp(s)) {
		memset(mp, 0, sizeof(*mp));
		atomic_init(&mp->state, MP_OFF);
	}
	atomic_store(&mp->users, 0);
	atomic_store(&mp->base_objects, 0);
	atomic_store(&mp->base_bytes, 0);
	atomic_store(&mp->delta_objects, 0);
	atomic_store(&mp->delta_bytes, 0);
	atomic_store(&mp->count_done, false);
	if (store_mp_open_at(s, mp, path, err) != AIS_OK) {
		store_mp_close(mp);
		atomic_store(&mp->state, MP_OFF);
		errno = EIO;
		goto out;
	}
	s->digests[slot] = hrw_digest(path, len);
	mp->count_snap = leveldb_create_snapshot(mp->db);
	store_count_mp(s, mp); /* what it holds already (a disk attached again) */
	atomic_store(&mp->count_done, true);
	pthread_mutex_lock(&s->bucket_mu);
	rc = copy_buckets(s, mp);
	if (rc == AIS_OK) {
		atomic_store_explicit(&mp->state, MP_ACTIVE, memory_order_release);
		if (slot == store_nmp(s))
			atomic_store_explicit(&s->n_mp, slot + 1, memory_order_release);
	}
	pthread_mutex_unlock(&s->bucket_mu);
	if (rc != AIS_OK) {
		store_mp_close(mp);
		buf_addf(err, "mountpath %s: cannot copy the bucket records", path);
		errno = EIO;
		goto out;
	}
	atomic_fetch_add(&s->layout_gen, 1);
	store_hot_clear(s);
	log_info("mountpath %s attached (%llu objects on it)", path,
		 (unsigned long long)atomic_load(&mp->base_objects));
out:
	pthread_mutex_unlock(&s->mp_mu);
	return rc;
}

int store_mp_detach_begin(store_t *s, const char *path, buf_t *err)
{
	int rc = AIS_ERR;
	pthread_mutex_lock(&s->mp_mu);
	int i = find_slot(s, path);
	if (i < 0 || s->mp[i].state == MP_OFF) {
		buf_addf(err, "no mountpath %s", path);
		errno = ENOENT;
	} else if (s->mp[i].state == MP_DETACHING) {
		rc = AIS_OK;
	} else if (s->mp[i].state == MP_FAULTED) {
		/* nothing can be moved off a failed disk: closed at once (rule 3) */
		pthread_rwlock_wrlock(&s->mp_rw);
		if (atomic_load(&s->mp[i].users) == 0) {
			store_mp_close(&s->mp[i]);
			atomic_store(&s->mp[i].state, MP_OFF);
			store_hot_clear(s);
			log_info("mountpath %s (failed: %s) detached", path, s->mp[i].fault);
			rc = AIS_OK;
		} else {
			buf_addf(err, "mountpath %s: a write on it is still failing; try again", path);
			errno = EBUSY;
		}
		pthread_rwlock_unlock(&s->mp_rw);
	} else if (store_count_state(s, MP_ACTIVE) == 1) {
		buf_addf(err, "mountpath %s is the last one: attach another first", path);
		errno = EBUSY;
	} else {
		atomic_store(&s->mp[i].state, MP_DETACHING);
		store_pick_bmp(s);
		atomic_fetch_add(&s->layout_gen, 1);
		store_hot_clear(s);
		log_info("mountpath %s: detaching (its objects move to the other mountpaths)", path);
		rc = AIS_OK;
	}
	pthread_mutex_unlock(&s->mp_mu);
	return rc;
}

int store_mp_detach_finish(store_t *s, bool *closed)
{
	int rc = AIS_OK;
	*closed = false;
	store_reconcile_wait(s); /* rule 3: it reads every slot */
	pthread_mutex_lock(&s->mp_mu);
	for (int i = 0; i < store_nmp(s); i++) {
		store_mp_t *mp = &s->mp[i];
		if (mp->state != MP_DETACHING)
			continue;
		pthread_rwlock_wrlock(&s->mp_rw);
		int64_t objs = (int64_t)atomic_load(&mp->base_objects) + atomic_load(&mp->delta_objects);
		if (atomic_load(&mp->users) == 0 && objs <= 0) {
			store_mp_close(mp);
			atomic_store(&mp->state, MP_OFF);
			store_hot_clear(s);
			*closed = true;
			log_info("mountpath %s detached", mp->path);
		} else {
			rc = AIS_AGAIN; /* a write still in flight, or objects to move */
		}
		pthread_rwlock_unlock(&s->mp_rw);
	}
	pthread_mutex_unlock(&s->mp_mu);
	return rc;
}

int store_mp_list(store_t *s, store_mp_info_t *out, int max)
{
	int n = 0;
	pthread_mutex_lock(&s->mp_mu);
	for (int i = 0; i < store_nmp(s) && n < max; i++) {
		if (s->mp[i].state == MP_OFF)
			continue;
		snprintf(out[n].path, sizeof(out[n].path), "%s", s->mp[i].path);
		out[n].detaching = s->mp[i].state == MP_DETACHING;
		out[n].faulted = s->mp[i].state == MP_FAULTED;
		n++;
	}
	pthread_mutex_unlock(&s->mp_mu);
	return n;
}

uint64_t store_layout_gen(store_t *s)
{
	return atomic_load(&s->layout_gen);
}

size_t store_misplaced(store_t *s, store_cursor_t *cur, size_t limit, store_misplaced_fn fn, void *arg)
{
	size_t given = 0;
	store_rd(s);
	for (; cur->slot < store_nmp(s) && given < limit; cur->slot++, buf_reset(&cur->after)) {
		store_mp_t *mp = &s->mp[cur->slot];
		if (!store_mp_open(s, cur->slot))
			continue;
		leveldb_iterator_t *it = leveldb_create_iterator(mp->db, s->ro_scan);
		if (cur->after.len)
			leveldb_iter_seek(it, cur->after.ptr, cur->after.len);
		else
			leveldb_iter_seek(it, "o", 1);
		if (cur->after.len && leveldb_iter_valid(it)) {
			size_t kl;
			const char *k = leveldb_iter_key(it, &kl);
			if (kl == cur->after.len && !memcmp(k, cur->after.ptr, kl))
				leveldb_iter_next(it);
		}
		for (; leveldb_iter_valid(it) && given < limit; leveldb_iter_next(it)) {
			size_t kl, vl;
			const char *k = leveldb_iter_key(it, &kl);
			if (kl < 1 || k[0] != 'o')
				break;
			buf_reset(&cur->after);
			buf_add(&cur->after, k, kl);
			const char *nul = memchr(k + 1, '\0', kl - 1);
			if (!nul)
				continue;
			size_t blen = (size_t)(nul - (k + 1)), olen = kl - 2 - blen;
			const unsigned char *v = (const unsigned char *)leveldb_iter_value(it, &vl);
			const unsigned char *q = v + 1;
			uint64_t size = 0;
			if (vl < 2 || store_varint_get(&q, v + vl, &size) != AIS_OK)
				size = 0;
			cur->scanned++;
			cur->scanned_bytes += size;
			if (store_mp_of(s, k + 1, blen, nul + 1, olen) == mp)
				continue;
			fn(arg, k + 1, blen, nul + 1, olen, size);
			given++;
		}
		leveldb_iter_destroy(it);
		if (given >= limit)
			break; /* the cursor stays on this slot, after the last key */
	}
	store_unrd(s);
	return given;
}

/* Copies the file src to a new file dst (fsynced under policy always):
 * a hard link when both are on one file system. */
static int copy_file(store_t *s, const char *src, const char *dst)
{
	if (link(src, dst) == 0)
		return AIS_OK;
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return AIS_ERR;
	int out = store_io.open(dst, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return AIS_ERR;
	}
	char *b = xmalloc(1 << 20);
	ssize_t n;
	int rc = AIS_OK;
	while ((n = read(in, b, 1 << 20)) > 0)
		if (store_io.write(out, b, (size_t)n) != n) {
			rc = AIS_ERR;
			break;
		}
	if (n < 0)
		rc = AIS_ERR;
	if (rc == AIS_OK && s->fsync == CONF_FSYNC_ALWAYS && store_io.fsync(out) != 0)
		rc = AIS_ERR;
	free(b);
	close(in);
	if (store_io.close(out) != 0)
		rc = AIS_ERR;
	if (rc != AIS_OK)
		unlink(dst);
	return rc;
}

/* Rule 5, the commit: under both mutexes. AIS_OK, AIS_AGAIN (raced: try
 * later) or AIS_ERR. */
static int relocate_commit(store_t *s, store_mp_t *src, store_mp_t *dst, const buf_t *okey, const char *h,
			   const store_rec_t *was, const store_rec_t *dst_was, bool dst_had, uint64_t gen,
			   const char *uname, size_t ulen)
{
	store_mp_t *first = src < dst ? src : dst, *second = src < dst ? dst : src;
	store_rec_t now, dnow;
	buf_t val = BUF_INIT, hk = BUF_INIT;
	char path[STORE_PATH_MAX];
	int rc = AIS_AGAIN;

	pthread_mutex_lock(&first->commit_mu);
	pthread_mutex_lock(&second->commit_mu);
	if (store_rec_get(s, src, okey, &now) != AIS_OK || now.gen != was->gen)
		goto out; /* overwritten or deleted meanwhile */
	bool dhas = store_rec_get(s, dst, okey, &dnow) == AIS_OK;
	if (dhas != dst_had || (dhas && dnow.gen != dst_was->gen))
		goto out; /* a client wrote it meanwhile */
	store_rec_t nr = *was;
	nr.gen = gen;
	store_rec_encode(&val, &nr);
	store_key_hash(&hk, h);
	leveldb_writebatch_t *b = leveldb_writebatch_create();
	leveldb_writebatch_put(b, okey->ptr, okey->len, val.ptr, val.len);
	leveldb_writebatch_put(b, hk.ptr, hk.len, uname, ulen);
	store_hint_batch(b, false, h, gen); /* reconcile.c rules 1-2 */
	if (dhas)
		store_hint_batch(b, true, h, dnow.gen);
	rc = store_db_write(s, dst, s->wo_commit, b, "resilver");
	leveldb_writebatch_destroy(b);
	if (rc != AIS_OK)
		goto out;
	store_count(dst, dhas ? 0 : 1, (int64_t)nr.m.size - (dhas ? (int64_t)dnow.m.size : 0));
	if (dhas) {
		store_path_obj(path, sizeof(path), dst, h, dnow.gen);
		if (store_io.unlink(path) != 0 && errno != ENOENT)
			log_warn("unlink %s (start-up will remove it)", path);
		else
			store_hint_done(s, dst, h, dnow.gen);
	}
	rc = AIS_OK;
out:
	pthread_mutex_unlock(&second->commit_mu);
	pthread_mutex_unlock(&first->commit_mu);
	buf_free(&val);
	buf_free(&hk);
	return rc;
}

int store_relocate(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen, uint64_t *bytes)
{
	buf_t okey = BUF_INIT, uname = BUF_INIT;
	char h[STORE_HASH_HEX + 1], from[STORE_PATH_MAX], tmp[STORE_PATH_MAX], to[STORE_PATH_MAX];
	store_rec_t r, d;
	int rc = AIS_DONE;

	*bytes = 0;
	store_key_obj(&okey, bck, blen, obj, olen);
	buf_add(&uname, bck, blen);
	buf_addch(&uname, '/');
	buf_add(&uname, obj, olen);
	store_uname_hash(uname.ptr, uname.len, h);
	store_rd(s);
	store_mp_t *dst = store_mp_of(s, bck, blen, obj, olen);
	for (int i = 0; i < store_nmp(s); i++) {
		store_mp_t *src = &s->mp[i];
		if (src == dst || !store_mp_open(s, i) || store_rec_get(s, src, &okey, &r) != AIS_OK)
			continue;
		bool dhas = store_rec_get(s, dst, &okey, &d) == AIS_OK;
		if (dhas && store_stamp(&d.m) >= store_stamp(&r.m)) { /* the HRW copy is as new: drop this one */
			store_delete_on(s, src, bck, blen, obj, olen, r.gen);
			continue;
		}
		uint64_t gen;
		if (store_gen_alloc(s, dst, &gen) != AIS_OK) {
			rc = AIS_ERR;
			break;
		}
		store_path_obj(from, sizeof(from), src, h, r.gen);
		store_path_tmp(tmp, sizeof(tmp), dst, h, gen);
		store_path_obj(to, sizeof(to), dst, h, gen);
		if (copy_file(s, from, tmp) != AIS_OK) {
			if (errno == ENOENT) /* replaced or deleted meanwhile */
				continue;
			log_warn("resilver: copy %s -> %s", from, tmp);
			rc = AIS_ERR;
			break;
		}
		if (store_hint_put(s, dst, h, gen) != AIS_OK) { /* logged */
			unlink(tmp);
			rc = AIS_ERR;
			break;
		}
		if (store_io.rename(tmp, to) != 0) {
			log_warn("resilver: rename %s -> %s", tmp, to);
			unlink(tmp);
			rc = AIS_ERR;
			break;
		}
		int c = relocate_commit(s, src, dst, &okey, h, &r, &d, dhas, gen, uname.ptr, uname.len);
		if (c != AIS_OK) {
			if (unlink(to) == 0 || errno == ENOENT)
				store_hint_done(s, dst, h, gen);
			if (c == AIS_ERR) {
				rc = AIS_ERR;
				break;
			}
			rc = AIS_AGAIN;
			continue;
		}
		store_delete_on(s, src, bck, blen, obj, olen, r.gen);
		*bytes += r.m.size;
		rc = AIS_OK;
	}
	store_unrd(s);
	buf_free(&okey);
	buf_free(&uname);
	if (rc == AIS_ERR)
		errno = EIO;
	return rc;
}
