/*
 * reconcile.c - crash leftovers: object files no record uses, found from a
 * journal of hints, not by walking the disks.
 *
 * A crash between rename and the LevelDB commit, or between the commit and
 * the unlink of the old version (write.c rules 4-6), leaves a file in obj/
 * that no record points to. Every code path that can leave such a file
 * first records a hint, key "u" + "<h>.<gen>" (the file's name) in the
 * mountpath's LevelDB:
 *
 *  1. A PUT's new gen keeps its temp name tmp/<h>.<gen> beside its
 *     obj/ name (write.c rule 4) until its commit is done, so a crash
 *     leaves the temp name of every gen that may have no record; store
 *     open checks each (store_clean_tmp). A resilver copy renames into
 *     obj/ instead, after writing its hint with the commit options (synced
 *     under fsync policy "always"); the commit batch deletes that hint.
 *  2. A commit that replaces or deletes a record puts the old gen's hint
 *     in the same batch (atomic with the record change); once the old
 *     file is unlinked, the hint's delete rides in the mountpath's next
 *     commit batch (or a lazy write of up to STORE_HINT_DONE_MAX queued
 *     deletes, or the close), so an overwrite costs one LevelDB write,
 *     not two. An unlink that fails keeps it. A gen is never reused, so a
 *     queued delete never meets a newer put of the same hint.
 *  3. A hint is only a "look here": the file it names is removed only when
 *     the record of its object ("h"+h -> uname -> "o"-record) is missing or
 *     names another gen, checked under the commit mutex; extra hints cost
 *     a lookup, never a live file.
 *
 * After store_open a background thread first counts each mountpath's
 * objects and bytes as of open (store_count_mp, which store_stats
 * reports), then checks the hints of earlier runs (gen below the
 * mountpath's first gen of this run): O(writes in flight at the crash),
 * not O(objects). Between the two it finishes the bucket destroys a crash
 * cut (bucket.c rule 3). A store last written by a build without hints (no key
 * "r") is walked once instead, obj/<xx>/ by obj/<xx>/, removing each file
 * of an earlier run that no record uses; "r" is written when that walk
 * completes (at once on a store that had no records at open). Files written by
 * this process are never touched, so either runs safely beside new
 * writes. store_close stops it early; store_reconcile_wait waits for it.
 * A file that no hint names and no record uses (a power loss under fsync
 * policies other than "always", or a file copied in by hand) is left.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "store_int.h"
#include "aisd/banned.h"

/* Parses "<32 hex>.<16 hex>". */
bool store_parse_name(const char *name, char h[STORE_HASH_HEX + 1], uint64_t *gen)
{
	unsigned char g[8];
	if (strlen(name) != STORE_HASH_HEX + 1 + 16 || name[STORE_HASH_HEX] != '.')
		return false;
	for (int i = 0; i < STORE_HASH_HEX; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	if (hex_decode(name + STORE_HASH_HEX + 1, 16, g, sizeof(g)) != AIS_OK)
		return false;
	*gen = 0;
	for (int i = 0; i < 8; i++)
		*gen = (*gen << 8) | g[i];
	memcpy(h, name, STORE_HASH_HEX);
	h[STORE_HASH_HEX] = '\0';
	return true;
}

/* Is the file h.gen the current version of its object? Caller holds the
 * commit mutex. Returns 1 yes, 0 no, -1 cannot tell (LevelDB error). */
int store_file_live(store_t *s, store_mp_t *mp, const char *h, uint64_t gen)
{
	buf_t k = BUF_INIT;
	size_t ul = 0;
	store_key_hash(&k, h);
	char *uname = store_db_get(s, mp, k.ptr, k.len, NULL, &ul);
	if (!uname) {
		buf_free(&k);
		return errno == ENOENT ? 0 : -1;
	}
	char *slash = memchr(uname, '/', ul);
	int live = 0;
	if (slash) {
		store_rec_t r;
		size_t blen = (size_t)(slash - uname);
		store_key_obj(&k, uname, blen, slash + 1, ul - blen - 1);
		if (store_rec_get(s, mp, &k, &r) == AIS_OK)
			live = r.gen == gen;
		else if (errno != ENOENT)
			live = -1;
	}
	leveldb_free(uname);
	buf_free(&k);
	return live;
}

static unsigned long reconcile_dir(store_t *s, store_mp_t *mp, int xx)
{
	char dir[STORE_PATH_MAX], path[STORE_PATH_MAX], h[STORE_HASH_HEX + 1];
	unsigned long removed = 0;
	snprintf(dir, sizeof(dir), "%s/obj/%02x", mp->path, xx);
	DIR *d = opendir(dir);
	if (!d) {
		log_warn("reconcile: opendir %s", dir);
		return 0;
	}
	struct dirent *de;
	while ((de = readdir(d)) && !atomic_load(&s->rc_stop)) {
		uint64_t gen;
		struct stat st;
		if (de->d_name[0] == '.')
			continue;
		atomic_fetch_add_explicit(&mp->rc_walked, 1, memory_order_relaxed);
		if (!store_parse_name(de->d_name, h, &gen)) {
			log_warnx("reconcile: %s/%s: not an object file, left alone", dir, de->d_name);
			continue;
		}
		store_path_obj(path, sizeof(path), mp, h, gen);
		if (gen >= mp->gen0 || stat(path, &st) != 0)
			continue; /* written by this process, or gone already */
		if ((int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec >= s->start_ns)
			continue;
		pthread_mutex_lock(&mp->commit_mu);
		if (store_file_live(s, mp, h, gen) == 0) {
			if (unlink(path) == 0) {
				log_info("reconcile: removed %s (no record uses it)", path);
				removed++;
			} else if (errno != ENOENT) {
				log_warn("reconcile: unlink %s", path);
			}
		}
		pthread_mutex_unlock(&mp->commit_mu);
	}
	closedir(d);
	return removed;
}

/* The key "r": crash hints are kept on mp from now on. */
static void reconcile_mark(store_t *s, store_mp_t *mp)
{
	char *lerr = NULL;
	leveldb_put(mp->db, s->wo_lazy, "r", 1, "1", 1, &lerr);
	if (lerr) {
		log_warnx("%s: leveldb put (reconcile marker): %s", mp->path, lerr);
		leveldb_free(lerr);
	}
}

/* The walk of a store without hints: every obj/<xx>/ of mp, then the key
 * "r" that says hints are kept from now on. */
static unsigned long reconcile_walk(store_t *s, store_mp_t *mp)
{
	unsigned long n = 0;
	for (int xx = 0; xx < 256 && !atomic_load(&s->rc_stop); xx++)
		n += reconcile_dir(s, mp, xx);
	if (atomic_load(&s->rc_stop))
		return n; /* walked again at the next start */
	reconcile_mark(s, mp);
	log_info("%s: walked %" PRIu64 " object files once (a store without crash hints)", mp->path,
		 atomic_load(&mp->rc_walked));
	return n;
}

void store_key_hint(buf_t *k, const char *h, uint64_t gen)
{
	buf_reset(k);
	buf_addf(k, "u%s.%016" PRIx64, h, gen);
}

void store_hint_batch(leveldb_writebatch_t *b, bool put, const char *h, uint64_t gen)
{
	buf_t k = BUF_INIT;
	store_key_hint(&k, h, gen);
	if (put)
		leveldb_writebatch_put(b, k.ptr, k.len, "", 0);
	else
		leveldb_writebatch_delete(b, k.ptr, k.len);
	buf_free(&k);
}

int store_hint_put(store_t *s, store_mp_t *mp, const char *h, uint64_t gen)
{
	leveldb_writebatch_t *b = leveldb_writebatch_create();
	store_hint_batch(b, true, h, gen);
	int rc = store_db_write(s, mp, s->wo_commit, b, "crash hint");
	leveldb_writebatch_destroy(b);
	return rc;
}

void store_hint_done(store_t *s, store_mp_t *mp, const char *h, uint64_t gen)
{
	pthread_mutex_lock(&mp->hint_mu);
	if (!mp->hint_done)
		mp->hint_done = leveldb_writebatch_create();
	store_hint_batch(mp->hint_done, false, h, gen);
	if (++mp->hint_done_n >= STORE_HINT_DONE_MAX) {
		/* a failure logs; start-up looks again */
		store_db_write(s, mp, s->wo_lazy, mp->hint_done, "crash hints done");
		leveldb_writebatch_clear(mp->hint_done);
		mp->hint_done_n = 0;
	}
	pthread_mutex_unlock(&mp->hint_mu);
}

void store_hint_fold(store_mp_t *mp, leveldb_writebatch_t *b)
{
	pthread_mutex_lock(&mp->hint_mu);
	if (mp->hint_done_n) {
		leveldb_writebatch_append(b, mp->hint_done);
		leveldb_writebatch_clear(mp->hint_done);
		mp->hint_done_n = 0;
	}
	pthread_mutex_unlock(&mp->hint_mu);
}

/* Checks the hints of earlier runs on mp (rule 3): removes each file whose
 * object's record does not name it, and the hint once its file is known
 * live or gone. Returns the files removed. */
static unsigned long reconcile_hints(store_t *s, store_mp_t *mp)
{
	char h[STORE_HASH_HEX + 1], name[STORE_HASH_HEX + 18], path[STORE_PATH_MAX];
	unsigned long removed = 0;
	leveldb_iterator_t *it = leveldb_create_iterator(mp->db, s->ro_scan);
	for (leveldb_iter_seek(it, "u", 1); leveldb_iter_valid(it) && !atomic_load(&s->rc_stop);
	     leveldb_iter_next(it)) {
		size_t kl;
		uint64_t gen;
		const char *k = leveldb_iter_key(it, &kl);
		if (kl < 1 || k[0] != 'u')
			break;
		if (kl - 1 >= sizeof(name)) {
			log_warnx("%s: reconcile: a crash hint of %zu bytes, ignored", mp->path, kl);
			continue;
		}
		memcpy(name, k + 1, kl - 1);
		name[kl - 1] = '\0';
		if (!store_parse_name(name, h, &gen)) {
			log_warnx("%s: reconcile: a crash hint that names no object file, ignored", mp->path);
			continue;
		}
		if (gen >= mp->gen0)
			continue; /* a write of this process, in flight */
		atomic_fetch_add_explicit(&mp->rc_hints, 1, memory_order_relaxed);
		store_path_obj(path, sizeof(path), mp, h, gen);
		pthread_mutex_lock(&mp->commit_mu);
		int live = store_file_live(s, mp, h, gen);
		bool gone = live == 1;
		if (live == 0) {
			if (unlink(path) == 0) {
				log_info("reconcile: removed %s (a crash left it; no record uses it)", path);
				removed++;
				gone = true;
			} else if (errno == ENOENT) {
				gone = true;
			} else {
				log_warn("reconcile: unlink %s", path);
			}
		}
		if (gone)
			store_hint_done(s, mp, h, gen);
		pthread_mutex_unlock(&mp->commit_mu);
	}
	leveldb_iter_destroy(it);
	return removed;
}

/* Counts the object records ("o" keys) of mp's snapshot taken at open into
 * base_objects/base_bytes (published as it goes, so stats show progress),
 * then releases the snapshot. Changes since open are in the delta counters
 * (store_count), so base + delta is exact once count_done is set. A
 * sequential LevelDB scan that decodes only the size varint: about a
 * second per million objects, off the start-up path. A corrupt record
 * counts as an object of 0 bytes, as bucket destroy uncounts it. */
void store_count_mp(store_t *s, store_mp_t *mp)
{
	leveldb_readoptions_t *ro = leveldb_readoptions_create();
	leveldb_readoptions_set_fill_cache(ro, 0);
	leveldb_readoptions_set_snapshot(ro, mp->count_snap);
	leveldb_iterator_t *it = leveldb_create_iterator(mp->db, ro);
	uint64_t objs = 0, bytes = 0;
	for (leveldb_iter_seek(it, "o", 1); leveldb_iter_valid(it); leveldb_iter_next(it)) {
		size_t kl, vl;
		const char *k = leveldb_iter_key(it, &kl);
		if (kl < 1 || k[0] != 'o')
			break;
		const unsigned char *v = (const unsigned char *)leveldb_iter_value(it, &vl);
		uint64_t size = 0;
		const unsigned char *q = v + 1;
		if (vl < 2 || v[0] != STORE_REC_FORMAT || store_varint_get(&q, v + vl, &size) != AIS_OK)
			size = 0;
		objs++;
		bytes += size;
		if ((objs & 4095) == 0) {
			atomic_store(&mp->base_objects, objs);
			atomic_store(&mp->base_bytes, bytes);
			if (atomic_load(&s->rc_stop))
				break;
		}
	}
	leveldb_iter_destroy(it);
	leveldb_readoptions_destroy(ro);
	leveldb_release_snapshot(mp->db, mp->count_snap);
	mp->count_snap = NULL;
	atomic_store(&mp->base_objects, objs);
	atomic_store(&mp->base_bytes, bytes);
	if (!atomic_load(&s->rc_stop))
		atomic_store(&mp->count_done, true);
}

static void *reconcile_main(void *arg)
{
	store_t *s = arg;
	log_set_action("store reconcile");
	int nmp = s->n_mp; /* the mountpaths of store_open; attach counts its own */
	for (int i = 0; i < nmp && !atomic_load(&s->rc_stop); i++) {
		int64_t t0 = time_now_ns();
		store_count_mp(s, &s->mp[i]);
		log_debug("%s: counted %" PRIu64 " objects, %" PRIu64 " bytes in %.3f s", s->mp[i].path,
			  atomic_load(&s->mp[i].base_objects), atomic_load(&s->mp[i].base_bytes),
			  (double)(time_now_ns() - t0) / 1e9);
	}
	if (!atomic_load(&s->rc_stop))
		store_bucket_destroy_resume(s, &s->rc_stop); /* after the count: its deltas apply to it */
	for (int i = 0; i < nmp && !atomic_load(&s->rc_stop); i++) {
		store_mp_t *mp = &s->mp[i];
		size_t vl = 0;
		char *v = store_db_get(s, mp, "r", 1, "reconcile marker", &vl);
		if (!v && errno != ENOENT)
			continue; /* logged; looked at again at the next start */
		unsigned long n = 0;
		if (v)
			n = reconcile_hints(s, mp);
		else if (atomic_load(&mp->count_done) && atomic_load(&mp->base_objects) == 0)
			reconcile_mark(s, mp); /* no records at open: a new store, nothing to walk for */
		else
			n = reconcile_walk(s, mp);
		leveldb_free(v);
		atomic_fetch_add(&mp->rc_removed, n);
		if (n)
			log_info("%s: reconcile removed %lu stray object files", mp->path, n);
		if (!atomic_load(&s->rc_stop))
			atomic_store(&mp->rc_finished, true);
	}
	pthread_mutex_lock(&s->rc_mu);
	s->rc_done = true;
	pthread_cond_broadcast(&s->rc_cond);
	pthread_mutex_unlock(&s->rc_mu);
	return NULL;
}

int store_reconcile_start(store_t *s)
{
	atomic_init(&s->rc_stop, false);
	s->rc_done = false;
	if (pthread_create(&s->rc_thread, NULL, reconcile_main, s) != 0)
		return AIS_ERR;
	s->rc_started = true;
	return AIS_OK;
}

void store_reconcile_stop(store_t *s)
{
	if (!s->rc_started)
		return;
	atomic_store(&s->rc_stop, true);
	pthread_join(s->rc_thread, NULL);
	s->rc_started = false;
}

void store_reconcile_wait(store_t *s)
{
	pthread_mutex_lock(&s->rc_mu);
	while (s->rc_started && !s->rc_done)
		pthread_cond_wait(&s->rc_cond, &s->rc_mu);
	pthread_mutex_unlock(&s->rc_mu);
}
