/*
 * tarindex.c - the tar index of a shard: member name -> (offset, size),
 * built once from the tar headers and kept in LevelDB beside the record.
 *
 * The key carries the object's file generation ("a"+bck+"\0"+obj+"\0"+gen),
 * so an index can only ever describe the bytes of the file it was built
 * from: an overwrite gets a new gen, and its commit deletes the old gen's
 * index in the record's batch (as do delete and bucket destroy). An index
 * is saved only while the record still names that gen (checked under the
 * commit mutex), so no stale key is left by a build racing an overwrite.
 * The index is a cache: it is written without sync, and a missing or
 * corrupt one is rebuilt from the file.
 *
 * Value, format 1: u8 format | varint n | n x (varint name length, name,
 * varint offset, varint size) in archive order | n x varint member number
 * in name order (ties: archive order), so a lookup is a binary search.
 * Decoding checks every length and number; a corrupt value is never
 * overread.
 *
 * Decoded indexes of recent versions stay in memory (store->tidx, an LRU
 * keyed by the index key and the version's meta), shared by reference:
 * an archpath read then costs the record read and a binary search.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/tar.h"
#include "aisd/util.h"
#include "store_int.h"
#include "aisd/banned.h"

typedef struct tidx_member {
	const char *name;
	size_t len;
	uint64_t off, size;
} tidx_member_t;

struct store_tar_index {
	char *data; /* the encoded value, which names point into */
	size_t bytes; /* memory held: the value and the arrays */
	atomic_int refs; /* holders: callers and the cache */
	size_t n;
	tidx_member_t *mem; /* archive order */
	uint32_t *sorted;   /* member numbers in name order */
};

static int name_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, MIN(al, bl));
	return c ? c : (al > bl) - (al < bl);
}

static int sort_cmp(const void *x, const void *y)
{
	const tidx_member_t *a = x, *b = y;
	int c = name_cmp(a->name, a->len, b->name, b->len);
	if (c)
		return c;
	return (a->off > b->off) - (a->off < b->off); /* offsets follow archive order */
}

void store_tar_index_free(store_tar_index_t *idx)
{
	if (!idx || atomic_fetch_sub(&idx->refs, 1) > 1)
		return;
	free(idx->data);
	free(idx->mem);
	free(idx->sorted);
	free(idx);
}

/* Decodes a value (takes data). AIS_OK, or AIS_ERR (corrupt). */
static int tidx_decode(char *data, size_t len, store_tar_index_t **out)
{
	const unsigned char *q = (const unsigned char *)data, *end = q + len;
	store_tar_index_t *idx = xcalloc(1, sizeof(*idx));
	uint64_t n, v;

	idx->data = data;
	atomic_init(&idx->refs, 1);
	if (len < 1 || *q++ != STORE_TIDX_FORMAT || store_varint_get(&q, end, &n) ||
	    n > (uint64_t)(end - q) / 3 || n > UINT32_MAX)
		goto bad;
	idx->n = (size_t)n;
	idx->mem = xcalloc(idx->n ? idx->n : 1, sizeof(*idx->mem));
	idx->sorted = xcalloc(idx->n ? idx->n : 1, sizeof(*idx->sorted));
	for (size_t i = 0; i < idx->n; i++) {
		tidx_member_t *m = &idx->mem[i];
		if (store_varint_get(&q, end, &v) || v > (uint64_t)(end - q))
			goto bad;
		m->name = (const char *)q;
		m->len = (size_t)v;
		q += v;
		if (store_varint_get(&q, end, &m->off) || store_varint_get(&q, end, &m->size))
			goto bad;
	}
	for (size_t i = 0; i < idx->n; i++) {
		if (store_varint_get(&q, end, &v) || v >= idx->n)
			goto bad;
		idx->sorted[i] = (uint32_t)v;
	}
	if (q != end)
		goto bad;
	idx->bytes = len + idx->n * (sizeof(*idx->mem) + sizeof(*idx->sorted));
	*out = idx;
	return AIS_OK;
bad:
	store_tar_index_free(idx);
	errno = EIO;
	return AIS_ERR;
}

/* Reads the tar headers of fd and encodes the index into val. */
static int tidx_build(int fd, uint64_t size, buf_t *val, buf_t *err)
{
	tar_iter_t it;
	tar_member_t tm;
	buf_t names = BUF_INIT;
	tidx_member_t *mem = NULL;
	size_t n = 0, cap = 0;
	int rc;

	tar_iter_init(&it, fd, size);
	/* names are copied into one buffer; pointers are fixed up after */
	while ((rc = tar_iter_next(&it, &tm)) == AIS_OK) {
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			mem = xrealloc(mem, cap * sizeof(*mem));
		}
		mem[n].name = (const char *)(uintptr_t)names.len;
		mem[n].len = tm.name_len;
		mem[n].off = tm.offset;
		mem[n].size = tm.size;
		buf_add(&names, tm.name, tm.name_len);
		n++;
	}
	if (rc == AIS_ERR) {
		int e = errno;
		buf_addstr(err, it.err);
		tar_iter_free(&it);
		free(mem);
		buf_free(&names);
		errno = e == EIO ? EIO : EINVAL;
		return AIS_ERR;
	}
	tar_iter_free(&it);
	if (n > UINT32_MAX) {
		buf_addstr(err, "too many members in the tar");
		free(mem);
		buf_free(&names);
		errno = EINVAL;
		return AIS_ERR;
	}
	buf_reset(val);
	buf_addch(val, STORE_TIDX_FORMAT);
	store_varint_put(val, n);
	for (size_t i = 0; i < n; i++) {
		mem[i].name = names.ptr + (uintptr_t)mem[i].name;
		store_varint_put(val, mem[i].len);
		buf_add(val, mem[i].name, mem[i].len);
		store_varint_put(val, mem[i].off);
		store_varint_put(val, mem[i].size);
	}
	/* name order: sort copies, then map back to member numbers by offset
	 * (offsets are unique and increasing in archive order) */
	tidx_member_t *by_name = xmalloc((n ? n : 1) * sizeof(*by_name));
	if (n)
		memcpy(by_name, mem, n * sizeof(*mem));
	qsort(by_name, n, sizeof(*by_name), sort_cmp);
	for (size_t i = 0; i < n; i++) {
		size_t lo = 0, hi = n; /* mem is sorted by offset */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (mem[mid].off < by_name[i].off)
				lo = mid + 1;
			else
				hi = mid;
		}
		store_varint_put(val, lo);
	}
	free(by_name);
	free(mem);
	buf_free(&names);
	return AIS_OK;
}

/* The cached index of key, with a reference for the caller, or NULL. */
static store_tar_index_t *cache_get(store_t *s, const buf_t *key)
{
	store_tar_index_t *idx = NULL;
	pthread_mutex_lock(&s->tidx_mu);
	for (int i = 0; i < STORE_TIDX_SLOTS; i++) {
		store_tidx_slot_t *sl = &s->tidx[i];
		if (sl->idx && sl->key.len == key->len && !memcmp(sl->key.ptr, key->ptr, key->len)) {
			idx = sl->idx;
			atomic_fetch_add(&idx->refs, 1);
			sl->used = ++s->tidx_tick;
			break;
		}
	}
	pthread_mutex_unlock(&s->tidx_mu);
	return idx;
}

static void slot_drop(store_t *s, store_tidx_slot_t *sl)
{
	s->tidx_bytes -= sl->idx->bytes;
	store_tar_index_free(sl->idx);
	sl->idx = NULL;
	buf_reset(&sl->key);
}

/* Keeps idx under key (the cache takes its own reference), evicting the
 * least recently used until it fits; an index over a quarter of the
 * budget is not kept. */
static void cache_put(store_t *s, const buf_t *key, store_tar_index_t *idx)
{
	if (idx->bytes > STORE_TIDX_BYTES / 4)
		return;
	pthread_mutex_lock(&s->tidx_mu);
	for (;;) {
		store_tidx_slot_t *free_sl = NULL, *lru = NULL;
		for (int i = 0; i < STORE_TIDX_SLOTS; i++) {
			store_tidx_slot_t *sl = &s->tidx[i];
			if (!sl->idx) {
				free_sl = free_sl ? free_sl : sl;
				continue;
			}
			if (sl->key.len == key->len && !memcmp(sl->key.ptr, key->ptr, key->len))
				goto out; /* a racing build was first */
			if (!lru || sl->used < lru->used)
				lru = sl;
		}
		if (free_sl && s->tidx_bytes + idx->bytes <= STORE_TIDX_BYTES) {
			buf_reset(&free_sl->key);
			buf_add(&free_sl->key, key->ptr, key->len);
			atomic_fetch_add(&idx->refs, 1);
			free_sl->idx = idx;
			free_sl->used = ++s->tidx_tick;
			s->tidx_bytes += idx->bytes;
			goto out;
		}
		slot_drop(s, lru); /* full: lru is set (an index fits in an empty cache) */
	}
out:
	pthread_mutex_unlock(&s->tidx_mu);
}

void store_tidx_cache_free(store_t *s)
{
	for (int i = 0; i < STORE_TIDX_SLOTS; i++) {
		if (s->tidx[i].idx)
			slot_drop(s, &s->tidx[i]);
		buf_free(&s->tidx[i].key);
	}
}

/* Is m the version the record names now? Then its gen keys the index:
 * tkey (LevelDB) and ckey (the cache: tkey + the version's meta) are set,
 * okey is the record's key, and the answer is true. */
static bool version_keys(store_t *s, store_mp_t *mp, const char *bck, size_t blen, const char *obj,
			 size_t olen, const store_meta_t *m, buf_t *okey, buf_t *tkey, buf_t *ckey, uint64_t *gen)
{
	store_rec_t r;
	store_key_obj(okey, bck, blen, obj, olen);
	if (store_rec_get(s, mp, okey, &r) != AIS_OK || r.m.version != m->version ||
	    r.m.mtime_ns != m->mtime_ns || r.m.size != m->size)
		return false;
	*gen = r.gen;
	store_key_tar(tkey, bck, blen, obj, olen, r.gen);
	buf_add(ckey, tkey->ptr, tkey->len);
	buf_add(ckey, &r.m.version, sizeof(r.m.version));
	buf_add(ckey, &r.m.mtime_ns, sizeof(r.m.mtime_ns));
	buf_add(ckey, &r.m.size, sizeof(r.m.size));
	return true;
}

static int tar_index(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
		     const store_meta_t *m, int fd, store_tar_index_t **out, buf_t *err)
{
	store_mp_t *mp = store_mp_of(s, bck, blen, obj, olen);
	buf_t okey = BUF_INIT, tkey = BUF_INIT, val = BUF_INIT, ckey = BUF_INIT;
	uint64_t gen = 0;
	int rc = AIS_ERR;

	bool cacheable = version_keys(s, mp, bck, blen, obj, olen, m, &okey, &tkey, &ckey, &gen);
	if (cacheable) {
		if ((*out = cache_get(s, &ckey))) {
			rc = AIS_OK;
			goto out;
		}
		size_t vlen = 0;
		char *v = store_db_get(s, mp, tkey.ptr, tkey.len, "tar index", &vlen);
		if (v) {
			char *copy = xmalloc(vlen ? vlen : 1);
			memcpy(copy, v, vlen);
			leveldb_free(v);
			if (tidx_decode(copy, vlen, out) == AIS_OK) {
				cache_put(s, &ckey, *out);
				rc = AIS_OK;
				goto out;
			}
			log_warnx("%s: corrupt tar index of %.*s/%.*s: rebuilding", mp->path, (int)blen,
				  bck, (int)MIN(olen, 256), obj);
		}
	}
	if (tidx_build(fd, m->size, &val, err) != AIS_OK)
		goto out;
	if (cacheable) {
		pthread_mutex_lock(&mp->commit_mu);
		store_rec_t now;
		if (store_rec_get(s, mp, &okey, &now) == AIS_OK && now.gen == gen) {
			char *lerr = NULL;
			leveldb_put(mp->db, s->wo_lazy, tkey.ptr, tkey.len, val.ptr, val.len, &lerr);
			if (lerr) {
				log_warnx("%s: leveldb put (tar index): %s", mp->path, lerr);
				leveldb_free(lerr);
			}
		}
		pthread_mutex_unlock(&mp->commit_mu);
	}
	size_t vlen = val.len;
	char *data = buf_detach(&val, &vlen);
	rc = tidx_decode(data ? data : xcalloc(1, 1), vlen, out);
	if (rc == AIS_OK && cacheable)
		cache_put(s, &ckey, *out);
out:
	buf_free(&ckey);
	buf_free(&okey);
	buf_free(&tkey);
	buf_free(&val);
	return rc;
}

int store_tar_index(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
		    const store_meta_t *m, int fd, store_tar_index_t **out, buf_t *err)
{
	store_rd(s); /* the mountpath stays open */
	int rc = tar_index(s, bck, blen, obj, olen, m, fd, out, err);
	int e = errno;
	store_unrd(s);
	errno = e;
	return rc;
}

int store_tar_index_cached(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
			   const store_meta_t *m, store_tar_index_t **out)
{
	buf_t okey = BUF_INIT, tkey = BUF_INIT, ckey = BUF_INIT;
	uint64_t gen;
	store_rd(s);
	store_mp_t *mp = store_mp_of(s, bck, blen, obj, olen);
	*out = version_keys(s, mp, bck, blen, obj, olen, m, &okey, &tkey, &ckey, &gen) ? cache_get(s, &ckey) : NULL;
	store_unrd(s);
	buf_free(&okey);
	buf_free(&tkey);
	buf_free(&ckey);
	return *out ? AIS_OK : AIS_ERR;
}

int store_tar_index_find(const store_tar_index_t *idx, const char *name, size_t len,
			 uint64_t *off, uint64_t *size)
{
	/* the first in name order that sorts after name; the one before it is
	 * the last (in archive order) of the members called name, if any */
	size_t lo = 0, hi = idx->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const tidx_member_t *m = &idx->mem[idx->sorted[mid]];
		if (name_cmp(m->name, m->len, name, len) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0) {
		const tidx_member_t *m = &idx->mem[idx->sorted[lo - 1]];
		if (m->len == len && !memcmp(m->name, name, len)) {
			*off = m->off;
			*size = m->size;
			return AIS_OK;
		}
	}
	errno = ENOENT;
	return AIS_ERR;
}

size_t store_tar_index_count(const store_tar_index_t *idx)
{
	return idx->n;
}

void store_tar_index_member(const store_tar_index_t *idx, size_t i, const char **name,
			    size_t *len, uint64_t *off, uint64_t *size)
{
	const tidx_member_t *m = &idx->mem[i];
	*name = m->name;
	*len = m->len;
	*off = m->off;
	*size = m->size;
}
