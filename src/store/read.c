/*
 * read.c - looking up, opening, touching, deleting and listing objects.
 *
 * store_open_obj returns a descriptor on exactly the version its meta
 * describes: it reads the record, opens that generation's file, and if a
 * concurrent overwrite has meanwhile unlinked it (write.c rule 6), reads the
 * record again. store_delete removes the record first (one batch, the
 * commit point) and the file after, under the commit mutex. store_list
 * merges the mountpaths' LevelDB scans by key, so a listing is in byte order
 * of names whatever the number of mountpaths, and costs one seek per
 * mountpath plus one step per name listed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "store_int.h"
#include "aisd/banned.h"

/* Reads bck/obj's record; *mp_out its mountpath, h its file hash. The HRW
 * mountpath first; while a resilver has not moved the object there yet, the
 * other open mountpaths (mountpath.c). Caller holds store_rd. */
static int rec_lookup(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
		      store_rec_t *r, store_mp_t **mp_out, char h[STORE_HASH_HEX + 1])
{
	buf_t k = BUF_INIT;
	store_mp_t *mp = store_mp_of(s, bck, blen, obj, olen);
	store_key_obj(&k, bck, blen, obj, olen);
	int rc = store_rec_get(s, mp, &k, r);
	for (int i = 0, n = store_nmp(s); rc != AIS_OK && errno == ENOENT && n > 1 && i < n; i++) {
		if (&s->mp[i] == mp || !store_mp_open(s, i))
			continue;
		if ((rc = store_rec_get(s, &s->mp[i], &k, r)) == AIS_OK)
			mp = &s->mp[i];
	}
	if (h) {
		/* uname = "o"-key minus the 'o', with the NUL made a '/' */
		k.ptr[1 + blen] = '/';
		store_uname_hash(k.ptr + 1, k.len - 1, h);
	}
	buf_free(&k);
	if (mp_out)
		*mp_out = mp;
	return rc;
}

int store_lookup(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
		 store_meta_t *out)
{
	store_rec_t r;
	store_rd(s);
	int rc = rec_lookup(s, bck, blen, obj, olen, &r, NULL, NULL);
	store_unrd(s);
	if (rc != AIS_OK)
		return AIS_ERR;
	*out = r.m;
	return AIS_OK;
}

/* Objects are opened with O_NOATIME: a read writes no inode (the access
 * time the store keeps is its record's, atime.c). Where the kernel refuses
 * it (EPERM: files of another owner), plain opens from then on. */
static atomic_bool noatime_refused;

static int open_noatime(const char *path)
{
	if (!atomic_load_explicit(&noatime_refused, memory_order_relaxed)) {
		int f = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
		if (f >= 0 || errno != EPERM)
			return f;
		atomic_store_explicit(&noatime_refused, true, memory_order_relaxed);
	}
	return open(path, O_RDONLY | O_CLOEXEC);
}

static int open_obj(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
		    int *fd, store_meta_t *out)
{
	store_rec_t r;
	store_mp_t *mp;
	char h[STORE_HASH_HEX + 1], path[STORE_PATH_MAX];

	for (int i = 0; i < STORE_OPEN_RETRIES; i++) {
		if (rec_lookup(s, bck, blen, obj, olen, &r, &mp, h) != AIS_OK)
			return AIS_ERR;
		store_path_obj(path, sizeof(path), mp, h, r.gen);
		int f = open_noatime(path);
		if (f >= 0) {
			*fd = f;
			*out = r.m;
			return AIS_OK;
		}
		if (errno != ENOENT) {
			int e = errno;
			log_warn("open %s", path);
			errno = e == EMFILE || e == ENFILE ? e : EIO;
			return AIS_ERR;
		}
		/* replaced and unlinked between our get and open: read again */
	}
	log_warnx("%s: record of %.*s/%.*s points to a missing file", path, (int)blen, bck, (int)olen,
		  obj);
	errno = EIO;
	return AIS_ERR;
}

int store_open_obj(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
		   int *fd, store_meta_t *out)
{
	store_rd(s);
	int rc = open_obj(s, bck, blen, obj, olen, fd, out);
	int e = errno;
	store_unrd(s);
	errno = e;
	return rc;
}

int store_set_custom(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen, uint64_t version,
		     const char *custom, int64_t md_ns)
{
	store_rec_t r;
	store_mp_t *mp;
	buf_t k = BUF_INIT, v = BUF_INIT;
	int rc = AIS_ERR;
	size_t n = strlen(custom);

	if (n >= sizeof(r.m.custom)) {
		errno = EINVAL;
		return AIS_ERR;
	}
	store_rd(s);
	if (rec_lookup(s, bck, blen, obj, olen, &r, &mp, NULL) != AIS_OK)
		goto out;
	store_key_obj(&k, bck, blen, obj, olen);
	/* under the mutex, checking the version again: never over a newer commit */
	pthread_mutex_lock(&mp->commit_mu);
	if (store_rec_get(s, mp, &k, &r) == AIS_OK) {
		/* (md_ns, not the mtime: a copy's mtime is when it landed here,
		 * by this node's clock, and says nothing of its metadata) */
		if ((version && r.m.version != version) || r.m.md_ns > md_ns) {
			errno = ESTALE; /* overwritten, or metadata set later than this */
		} else {
			leveldb_writebatch_t *wb = leveldb_writebatch_create();
			memcpy(r.m.custom, custom, n + 1);
			r.m.md_ns = md_ns;
			store_rec_encode(&v, &r);
			leveldb_writebatch_put(wb, k.ptr, k.len, v.ptr, v.len);
			rc = store_db_write(s, mp, s->wo_commit, wb, "custom metadata");
			leveldb_writebatch_destroy(wb);
		}
	}
	pthread_mutex_unlock(&mp->commit_mu);
out:
	store_unrd(s);
	buf_free(&k);
	buf_free(&v);
	return rc;
}

/* Deletes bck/obj's record on mp (and then its file), if the record names
 * gen (any gen when gen is 0). AIS_OK, or AIS_ERR with errno ENOENT (none,
 * or another gen) or EIO. */
int store_delete_on(store_t *s, store_mp_t *mp, const char *bck, size_t blen, const char *obj, size_t olen,
		    uint64_t gen)
{
	store_rec_t r;
	buf_t k = BUF_INIT, hk = BUF_INIT;
	char h[STORE_HASH_HEX + 1], path[STORE_PATH_MAX];
	int rc;

	store_key_obj(&k, bck, blen, obj, olen);
	pthread_mutex_lock(&mp->commit_mu);
	rc = store_rec_get(s, mp, &k, &r);
	if (rc != AIS_OK)
		goto out_unlock;
	if (gen && r.gen != gen) {
		errno = ENOENT;
		rc = AIS_ERR;
		goto out_unlock;
	}
	k.ptr[1 + blen] = '/';
	store_uname_hash(k.ptr + 1, k.len - 1, h);
	k.ptr[1 + blen] = '\0';
	store_key_hash(&hk, h);
	leveldb_writebatch_t *b = leveldb_writebatch_create();
	leveldb_writebatch_delete(b, k.ptr, k.len);
	leveldb_writebatch_delete(b, hk.ptr, hk.len);
	store_key_tar(&hk, bck, blen, obj, olen, r.gen); /* its tar index, if any */
	leveldb_writebatch_delete(b, hk.ptr, hk.len);
	store_hint_batch(b, true, h, r.gen); /* reconcile.c rule 2 */
	store_hint_fold(mp, b);
	rc = store_db_write(s, mp, s->wo_commit, b, "delete");
	leveldb_writebatch_destroy(b);
	if (rc == AIS_OK) {
		store_count(mp, -1, -(int64_t)r.m.size);
		store_path_obj(path, sizeof(path), mp, h, r.gen);
		if (store_io.unlink(path) != 0 && errno != ENOENT)
			log_warn("unlink %s (start-up will remove it)", path);
		else
			store_hint_done(s, mp, h, r.gen);
	}
out_unlock:
	pthread_mutex_unlock(&mp->commit_mu);
	buf_free(&k);
	buf_free(&hk);
	return rc == AIS_OK ? AIS_OK : AIS_ERR;
}

/* Every open mountpath's copy goes: a stale one left off its HRW mountpath
 * (resilver in progress) must not come back. */
int store_delete(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen)
{
	int rc = AIS_ERR, e = ENOENT;
	store_rd(s);
	for (int i = 0; i < store_nmp(s); i++) {
		if (!store_mp_open(s, i))
			continue;
		if (store_delete_on(s, &s->mp[i], bck, blen, obj, olen, 0) == AIS_OK)
			rc = AIS_OK;
		else if (errno != ENOENT)
			e = errno;
	}
	store_unrd(s);
	if (rc != AIS_OK || e != ENOENT)
		errno = e;
	return e != ENOENT ? AIS_ERR : rc;
}

/* One mountpath's cursor in the k-way merge of store_list. */
typedef struct list_cur {
	leveldb_iterator_t *it;
	const char *key;
	size_t klen;
} list_cur_t;

static void cur_load(list_cur_t *c, const buf_t *pfx)
{
	c->key = NULL;
	if (!leveldb_iter_valid(c->it))
		return;
	const char *k = leveldb_iter_key(c->it, &c->klen);
	if (c->klen >= pfx->len && !memcmp(k, pfx->ptr, pfx->len))
		c->key = k;
}

static int key_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, MIN(al, bl));
	return c ? c : (al > bl) - (al < bl);
}

static int list_impl(store_t *s, const char *bck, size_t blen, const char *prefix, size_t plen,
		     const char *start_after, size_t salen, size_t limit, bool versions, store_list_fn fn,
		     void *arg, bool *more)
{
	buf_t pfx = BUF_INIT, seek = BUF_INIT;
	list_cur_t cur[CONF_MAX_MOUNTPATHS];
	size_t name_off = 1 + blen + 1, given = 0;
	int rc = AIS_OK;
	store_bucket_t b;

	*more = false;
	if (store_bucket_get(s, bck, blen, &b) != AIS_OK)
		return AIS_ERR;
	store_rd(s);
	int nmp = store_nmp(s);
	store_key_obj(&pfx, bck, blen, prefix, plen);
	store_key_obj(&seek, bck, blen, start_after, salen);
	if (key_cmp(seek.ptr, seek.len, pfx.ptr, pfx.len) < 0)
		store_key_obj(&seek, bck, blen, prefix, plen);
	for (int i = 0; i < nmp; i++) {
		cur[i].it = NULL;
		cur[i].key = NULL;
		if (!store_mp_open(s, i))
			continue;
		cur[i].it = leveldb_create_iterator(s->mp[i].db, s->ro_scan);
		leveldb_iter_seek(cur[i].it, seek.ptr, seek.len);
		cur_load(&cur[i], &pfx);
		/* names <= start_after are skipped: only an equal one can be here */
		if (salen && cur[i].key && cur[i].klen == name_off + salen &&
		    !memcmp(cur[i].key + name_off, start_after, salen)) {
			leveldb_iter_next(cur[i].it);
			cur_load(&cur[i], &pfx);
		}
	}
	for (;;) {
		int best = -1;
		for (int i = 0; i < nmp; i++)
			if (cur[i].key && (best < 0 || key_cmp(cur[i].key, cur[i].klen, cur[best].key,
							       cur[best].klen) < 0))
				best = i;
		if (best < 0)
			break;
		if (limit && given == limit) {
			*more = true;
			break;
		}
		size_t vlen;
		const char *v = leveldb_iter_value(cur[best].it, &vlen);
		store_rec_t r;
		if (!versions && name_version_of(cur[best].key + name_off, cur[best].klen - name_off)) {
			/* a kept version: not an object of the listing, not counted */
		} else if (store_rec_decode(v, vlen, &r) != AIS_OK) {
			log_warnx("%s: corrupt record of %.*s in listing", s->mp[best].path,
				  (int)(cur[best].klen - name_off), cur[best].key + name_off);
		} else {
			fn(arg, cur[best].key + name_off, cur[best].klen - name_off, &r.m);
			given++;
		}
		/* the same name on two mountpaths (a stale copy): list it once */
		for (int i = 0; i < nmp; i++) {
			if (i != best && cur[i].key &&
			    !key_cmp(cur[i].key, cur[i].klen, cur[best].key, cur[best].klen)) {
				leveldb_iter_next(cur[i].it);
				cur_load(&cur[i], &pfx);
			}
		}
		leveldb_iter_next(cur[best].it);
		cur_load(&cur[best], &pfx);
	}
	for (int i = 0; i < nmp; i++) {
		char *err = NULL;
		if (!cur[i].it)
			continue;
		leveldb_iter_get_error(cur[i].it, &err);
		if (err) {
			log_warnx("%s: leveldb scan: %s", s->mp[i].path, err);
			leveldb_free(err);
			errno = EIO;
			rc = AIS_ERR;
		}
		leveldb_iter_destroy(cur[i].it);
	}
	store_unrd(s);
	buf_free(&pfx);
	buf_free(&seek);
	return rc;
}

int store_list(store_t *s, const char *bck, size_t blen, const char *prefix, size_t plen,
	       const char *start_after, size_t salen, size_t limit, store_list_fn fn, void *arg,
	       bool *more)
{
	return list_impl(s, bck, blen, prefix, plen, start_after, salen, limit, true, fn, arg, more);
}

int store_list_objects(store_t *s, const char *bck, size_t blen, const char *prefix, size_t plen,
		       const char *start_after, size_t salen, size_t limit, bool versions, store_list_fn fn,
		       void *arg, bool *more)
{
	return list_impl(s, bck, blen, prefix, plen, start_after, salen, limit, versions, fn, arg, more);
}
