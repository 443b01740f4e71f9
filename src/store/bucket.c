/*
 * bucket.c - the target's local bucket records: create, get, list, destroy.
 *
 * A bucket is the key "b" + name in the LevelDB of mountpath 0, with a small
 * versioned record (format byte, checksum type, creation time), written on
 * every mountpath. Create is atomic with respect to other creates
 * (bucket_mu).
 *
 * Destroy rules (crash safety):
 *  1. A destroy first writes, in one batch on every mountpath, the removal
 *     of the bucket key and a destroy mark "X" + name. From then on no new
 *     write can commit into the bucket (write.c rule 7) and the bucket does
 *     not exist for any read, so its old objects are gone for clients at
 *     once, crash or not.
 *  2. Then every record and file of the bucket is removed on every
 *     mountpath, a chunk at a time under each mountpath's commit mutex (the
 *     files through crash hints: reconcile.c rule 2), and only then is the
 *     mark deleted. The removal holds destroy_mu.
 *  3. A mark found at start-up (a crash cut the removal) is finished by the
 *     reconcile thread in the background (store_bucket_destroy_resume).
 *  4. A create of a name that still has a mark finishes the removal first
 *     (taking destroy_mu, so it waits for one in progress) and then puts
 *     the bucket key and deletes the mark in one batch: a bucket created
 *     again never sees an object of the one destroyed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "store_int.h"
#include "aisd/banned.h"

#define DESTROY_CHUNK 1024 /* records deleted per batch (and per lock hold) */

static int brec_decode(const char *v, size_t n, store_bucket_t *out)
{
	const unsigned char *p = (const unsigned char *)v;
	if (n != 10 || p[0] != STORE_BREC_FORMAT || p[1] > CKSUM_SHA256) {
		errno = EIO;
		return AIS_ERR;
	}
	uint64_t t = 0;
	for (int i = 0; i < 8; i++)
		t = (t << 8) | p[2 + i];
	out->cksum_type = (enum store_cksum)p[1];
	out->created_ns = (int64_t)t;
	return AIS_OK;
}

/* The destroy mark of a bucket (rule 1). */
static void key_mark(buf_t *k, const char *bck, size_t blen)
{
	buf_reset(k);
	buf_addch(k, 'X');
	buf_add(k, bck, blen);
}

int store_bucket_get(store_t *s, const char *bck, size_t blen, store_bucket_t *out)
{
	buf_t k = BUF_INIT;
	char *v;
	size_t vlen = 0;
	int rc = AIS_ERR;

	if (blen == 0 || blen >= sizeof(out->name)) {
		errno = blen ? ENOENT : EINVAL;
		return AIS_ERR;
	}
	store_key_bucket(&k, bck, blen);
	store_rd(s);
	store_mp_t *bmp = store_bmp(s);
	v = store_db_get(s, bmp, k.ptr, k.len, "bucket", &vlen);
	store_unrd(s);
	buf_free(&k);
	if (!v)
		return AIS_ERR;
	if (brec_decode(v, vlen, out) == AIS_OK) {
		memcpy(out->name, bck, blen);
		out->name[blen] = '\0';
		rc = AIS_OK;
	} else {
		log_warnx("%s: corrupt record of bucket %.*s", bmp->path, (int)blen, bck);
	}
	leveldb_free(v);
	return rc;
}

/* Writes batch wb on every open mountpath: any of them may become the one
 * bucket records are read from (store_bmp). Caller holds bucket_mu. */
static int bucket_db_write(store_t *s, leveldb_writebatch_t *wb, const char *what)
{
	int rc = AIS_OK;
	store_rd(s);
	for (int i = 0; i < store_nmp(s); i++)
		if (store_mp_open(s, i) && store_db_write(s, &s->mp[i], s->wo_commit, wb, what) != AIS_OK)
			rc = AIS_ERR;
	store_unrd(s);
	return rc;
}

/* Writes the bucket record, and deletes its destroy mark in the same batch
 * when unmark (rule 4). Caller holds bucket_mu. */
static int brec_put(store_t *s, const char *bck, size_t blen, enum store_cksum cksum, int64_t created_ns,
		    bool unmark, const char *what)
{
	buf_t k = BUF_INIT;
	unsigned char v[10];
	uint64_t t = (uint64_t)created_ns;
	v[0] = STORE_BREC_FORMAT;
	v[1] = (unsigned char)cksum;
	for (int i = 0; i < 8; i++)
		v[2 + i] = (unsigned char)(t >> (56 - 8 * i));
	store_key_bucket(&k, bck, blen);
	leveldb_writebatch_t *wb = leveldb_writebatch_create();
	leveldb_writebatch_put(wb, k.ptr, k.len, (const char *)v, sizeof(v));
	if (unmark) {
		key_mark(&k, bck, blen);
		leveldb_writebatch_delete(wb, k.ptr, k.len);
	}
	int rc = bucket_db_write(s, wb, what);
	leveldb_writebatch_destroy(wb);
	buf_free(&k);
	return rc;
}

static int bucket_marked(store_t *s, const char *bck, size_t blen);
static int destroy_objects(store_t *s, const char *bck, size_t blen, const atomic_bool *stop);

/* create (must not exist) or set (must exist: keeps its creation time). */
static int bucket_write(store_t *s, const char *bck, size_t blen, enum store_cksum cksum, bool create)
{
	store_bucket_t b;
	int rc = AIS_ERR;

	if (blen == 0 || blen >= sizeof(b.name) || cksum < CKSUM_NONE || cksum > CKSUM_SHA256) {
		errno = EINVAL;
		return AIS_ERR;
	}
again:;
	int marked = create ? bucket_marked(s, bck, blen) : 0;
	if (marked < 0)
		return AIS_ERR;
	if (marked) { /* rule 4: finish the old removal first */
		pthread_mutex_lock(&s->destroy_mu);
		if (destroy_objects(s, bck, blen, NULL) != AIS_OK) {
			pthread_mutex_unlock(&s->destroy_mu);
			return AIS_ERR;
		}
	}
	pthread_mutex_lock(&s->bucket_mu);
	if (store_bucket_get(s, bck, blen, &b) == AIS_OK) {
		if (create)
			errno = EEXIST;
		else
			rc = brec_put(s, bck, blen, cksum, b.created_ns, false, "set bucket checksum");
	} else if (errno == ENOENT && create) {
		if (!marked && bucket_marked(s, bck, blen) != 0) { /* a destroy began meanwhile */
			pthread_mutex_unlock(&s->bucket_mu);
			goto again;
		}
		rc = brec_put(s, bck, blen, cksum, time_now_ns(), marked, "create bucket");
	}
	pthread_mutex_unlock(&s->bucket_mu);
	if (marked)
		pthread_mutex_unlock(&s->destroy_mu);
	return rc;
}

int store_bucket_create(store_t *s, const char *bck, size_t blen, enum store_cksum cksum)
{
	return bucket_write(s, bck, blen, cksum, true);
}

int store_bucket_set_cksum(store_t *s, const char *bck, size_t blen, enum store_cksum cksum)
{
	return bucket_write(s, bck, blen, cksum, false);
}

int store_bucket_list(store_t *s, store_bucket_t **out, size_t *n)
{
	store_rd(s);
	store_mp_t *bmp = store_bmp(s);
	leveldb_iterator_t *it = leveldb_create_iterator(bmp->db, s->ro_scan);
	store_bucket_t *arr = NULL;
	size_t cnt = 0, cap = 0;
	char *err = NULL;

	for (leveldb_iter_seek(it, "b", 1); leveldb_iter_valid(it); leveldb_iter_next(it)) {
		size_t kl, vl;
		const char *k = leveldb_iter_key(it, &kl);
		if (kl < 1 || k[0] != 'b')
			break;
		const char *v = leveldb_iter_value(it, &vl);
		if (kl - 1 >= sizeof(arr->name))
			continue;
		if (cnt == cap) {
			cap = cap ? 2 * cap : 16;
			arr = xrealloc(arr, cap * sizeof(*arr));
		}
		if (brec_decode(v, vl, &arr[cnt]) != AIS_OK) {
			log_warnx("%s: corrupt bucket record %.*s", bmp->path, (int)(kl - 1), k + 1);
			continue;
		}
		memcpy(arr[cnt].name, k + 1, kl - 1);
		arr[cnt].name[kl - 1] = '\0';
		cnt++;
	}
	leveldb_iter_get_error(it, &err);
	leveldb_iter_destroy(it);
	store_unrd(s);
	if (err) {
		log_warnx("%s: leveldb scan (buckets): %s", bmp->path, err);
		leveldb_free(err);
		free(arr);
		errno = EIO;
		return AIS_ERR;
	}
	*out = arr;
	*n = cnt;
	return AIS_OK;
}

/* Deletes up to DESTROY_CHUNK records (and their files) of the bucket whose
 * object-key prefix is pfx on mp. Returns the number deleted, or -1. */
static long destroy_chunk(store_t *s, store_mp_t *mp, const buf_t *pfx)
{
	buf_t hk = BUF_INIT, uname = BUF_INIT;
	char (*h)[STORE_HASH_HEX + 1] = xmalloc(DESTROY_CHUNK * sizeof(*h));
	uint64_t *gens = xmalloc(DESTROY_CHUNK * sizeof(*gens));
	char path[STORE_PATH_MAX];
	long n = 0;
	int64_t bytes = 0;

	pthread_mutex_lock(&mp->commit_mu);
	leveldb_iterator_t *it = leveldb_create_iterator(mp->db, s->ro_scan);
	leveldb_writebatch_t *b = leveldb_writebatch_create();
	for (leveldb_iter_seek(it, pfx->ptr, pfx->len); leveldb_iter_valid(it) && n < DESTROY_CHUNK;
	     leveldb_iter_next(it)) {
		size_t kl, vl;
		const char *k = leveldb_iter_key(it, &kl);
		if (kl < pfx->len || memcmp(k, pfx->ptr, pfx->len))
			break;
		const char *v = leveldb_iter_value(it, &vl);
		store_rec_t r;
		buf_reset(&uname);
		buf_add(&uname, k + 1, kl - 1);
		uname.ptr[pfx->len - 2] = '/'; /* "o"+bck+"\0"+obj -> bck+"/"+obj */
		store_uname_hash(uname.ptr, uname.len, h[n]);
		gens[n] = store_rec_decode(v, vl, &r) == AIS_OK ? r.gen : UINT64_MAX;
		if (gens[n] != UINT64_MAX)
			bytes += (int64_t)r.m.size;
		store_key_hash(&hk, h[n]);
		leveldb_writebatch_delete(b, k, kl);
		leveldb_writebatch_delete(b, hk.ptr, hk.len);
		if (gens[n] != UINT64_MAX) { /* its tar index, if any */
			store_key_tar(&hk, k + 1, pfx->len - 2, k + pfx->len, kl - pfx->len,
				      gens[n]);
			leveldb_writebatch_delete(b, hk.ptr, hk.len);
			store_hint_batch(b, true, h[n], gens[n]); /* reconcile.c rule 2 */
		}
		n++;
	}
	leveldb_iter_destroy(it);
	if (n > 0 && store_db_write(s, mp, s->wo_commit, b, "destroy bucket") != AIS_OK)
		n = -1;
	else if (n > 0)
		store_count(mp, -n, -bytes);
	leveldb_writebatch_clear(b);
	for (long i = 0; i < n; i++) {
		if (gens[i] == UINT64_MAX)
			continue; /* corrupt record: its gen, so its file, is unknown (left) */
		store_path_obj(path, sizeof(path), mp, h[i], gens[i]);
		if (store_io.unlink(path) != 0 && errno != ENOENT)
			log_warn("unlink %s (start-up will remove it)", path);
		else
			store_hint_batch(b, false, h[i], gens[i]);
	}
	if (n > 0)
		store_db_write(s, mp, s->wo_lazy, b, "crash hints done"); /* a failure logs; start-up looks again */
	leveldb_writebatch_destroy(b);
	pthread_mutex_unlock(&mp->commit_mu);
	free(h);
	free(gens);
	buf_free(&hk);
	buf_free(&uname);
	return n;
}

/* Is there a destroy mark of bck (on the bucket slot)? 1 yes, 0 no, -1 on
 * a LevelDB error (errno EIO, logged). */
static int bucket_marked(store_t *s, const char *bck, size_t blen)
{
	buf_t k = BUF_INIT;
	size_t vl = 0;

	key_mark(&k, bck, blen);
	store_rd(s);
	char *v = store_db_get(s, store_bmp(s), k.ptr, k.len, "bucket destroy mark", &vl);
	store_unrd(s);
	buf_free(&k);
	if (v) {
		leveldb_free(v);
		return 1;
	}
	return errno == ENOENT ? 0 : -1;
}

/* Rule 2: removes every record and file of bck on every open mountpath;
 * stops between chunks once *stop (may be NULL). Caller holds destroy_mu.
 * AIS_OK when all are gone, else AIS_ERR (errno EIO, or EINTR when
 * stopped). */
static int destroy_objects(store_t *s, const char *bck, size_t blen, const atomic_bool *stop)
{
	buf_t k = BUF_INIT;
	int rc = AIS_OK;

	store_key_obj(&k, bck, blen, "", 0);
	store_rd(s);
	for (int i = 0; i < store_nmp(s) && rc == AIS_OK; i++) {
		long n;
		if (!store_mp_open(s, i))
			continue;
		while ((n = destroy_chunk(s, &s->mp[i], &k)) == DESTROY_CHUNK)
			if (stop && atomic_load(stop))
				break;
		if (n < 0) {
			errno = EIO;
			rc = AIS_ERR;
		} else if (n == DESTROY_CHUNK) {
			errno = EINTR;
			rc = AIS_ERR;
		}
	}
	store_unrd(s);
	buf_free(&k);
	return rc;
}

/* Rule 2's end: deletes the destroy mark on every mountpath. Caller holds
 * destroy_mu. */
static int unmark(store_t *s, const char *bck, size_t blen)
{
	buf_t k = BUF_INIT;

	key_mark(&k, bck, blen);
	leveldb_writebatch_t *wb = leveldb_writebatch_create();
	leveldb_writebatch_delete(wb, k.ptr, k.len);
	pthread_mutex_lock(&s->bucket_mu);
	int rc = bucket_db_write(s, wb, "bucket destroyed");
	pthread_mutex_unlock(&s->bucket_mu);
	leveldb_writebatch_destroy(wb);
	buf_free(&k);
	return rc;
}

int store_bucket_destroy(store_t *s, const char *bck, size_t blen)
{
	store_bucket_t b;
	buf_t k = BUF_INIT;
	int rc;

	pthread_mutex_lock(&s->destroy_mu);
	pthread_mutex_lock(&s->bucket_mu);
	rc = store_bucket_get(s, bck, blen, &b);
	if (rc == AIS_OK) { /* rule 1 */
		leveldb_writebatch_t *wb = leveldb_writebatch_create();
		store_key_bucket(&k, bck, blen);
		leveldb_writebatch_delete(wb, k.ptr, k.len);
		key_mark(&k, bck, blen);
		leveldb_writebatch_put(wb, k.ptr, k.len, "", 0);
		rc = bucket_db_write(s, wb, "destroy bucket");
		leveldb_writebatch_destroy(wb);
	}
	pthread_mutex_unlock(&s->bucket_mu);
	buf_free(&k);
	if (rc == AIS_OK && (rc = destroy_objects(s, bck, blen, NULL)) == AIS_OK)
		rc = unmark(s, bck, blen); /* a failure leaves the mark: start-up finishes it */
	pthread_mutex_unlock(&s->destroy_mu);
	return rc;
}

void store_bucket_destroy_resume(store_t *s, const atomic_bool *stop)
{
	char (*names)[sizeof(((store_bucket_t *)0)->name)] = NULL;
	size_t n = 0, cap = 0;
	char *err = NULL;

	pthread_mutex_lock(&s->destroy_mu);
	store_rd(s);
	store_mp_t *bmp = store_bmp(s);
	leveldb_iterator_t *it = leveldb_create_iterator(bmp->db, s->ro_scan);
	for (leveldb_iter_seek(it, "X", 1); leveldb_iter_valid(it); leveldb_iter_next(it)) {
		size_t kl;
		const char *k = leveldb_iter_key(it, &kl);
		if (kl < 1 || k[0] != 'X')
			break;
		if (kl - 1 >= sizeof(*names))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			names = xrealloc(names, cap * sizeof(*names));
		}
		memcpy(names[n], k + 1, kl - 1);
		names[n++][kl - 1] = '\0';
	}
	leveldb_iter_get_error(it, &err);
	leveldb_iter_destroy(it);
	store_unrd(s);
	if (err) {
		log_warnx("%s: leveldb scan (bucket destroy marks): %s", bmp->path, err);
		leveldb_free(err);
	}
	for (size_t i = 0; i < n && !atomic_load(stop); i++) {
		size_t len = strlen(names[i]);
		log_info("finishing the destroy of bucket %s that a restart cut", names[i]);
		if (destroy_objects(s, names[i], len, stop) == AIS_OK)
			unmark(s, names[i], len);
		else if (errno != EINTR)
			log_warnx("bucket %s: its old objects could not all be removed (the next start tries again)",
				  names[i]);
	}
	pthread_mutex_unlock(&s->destroy_mu);
	free(names);
}
