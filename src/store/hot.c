/*
 * hot.c - the hot cache: recently read small objects, their bytes and their
 * metadata, kept in memory, so that a GET of one reads neither LevelDB nor
 * the disk (no open, read or close: the answer is one send). Sized by
 * store.hot_cache, objects up to store.hot_object_max; LRU in 16 shards,
 * each with its own mutex and a 16th of the budget.
 *
 * NOTES ON THE DESIGN (the cache never serves what the records no longer
 * say):
 *  1. Every change of an object record ("o" key) or tombstone ("d" key)
 *     goes through store_db_write, which drops the names its batch touches
 *     after the LevelDB write (store_hot_drop_batch). The access-time
 *     writer, the one direct put of an "o" record, changes only the
 *     atime: it sets the cached copy's atime to the record's instead
 *     (store_hot_touch; no drop, so hot objects stay hot when their atime
 *     is written once a minute). A bucket record change, a mountpath
 *     attach, detach or failure clears the whole cache (store_hot_clear).
 *  2. A drop bumps its shard's epoch under the shard's mutex. A fill takes
 *     the epoch before it reads the record and inserts only if the epoch is
 *     unchanged: a fill that read a record before a write's LevelDB write
 *     either inserted before the write's drop (which then removes it) or
 *     finds the epoch moved and inserts nothing.
 *  3. A write's drop precedes its answer to the client, so a read that
 *     starts after a write was acknowledged never sees the older bytes.
 *  4. The bytes cached are those of the generation the record names (a
 *     generation's file never changes once committed: write.c), read in full
 *     with preadv2(RWF_NOWAIT): a fill never waits on the disk; bytes not in
 *     the page cache are not cached (the next read, after the usual path
 *     brought them in, caches them).
 *  5. A hit copies the metadata out under the shard's mutex and takes a
 *     reference on the entry: its bytes are sent from the entry itself (no
 *     copy), and an entry dropped, evicted or replaced meanwhile is freed
 *     by its last reference (store_hot_release), never under a reader. A
 *     committed generation's bytes never change (rule 4), so bytes a reader
 *     still holds are those of the record it read; a read that starts
 *     after a drop no longer finds the entry (rule 3). Entries held past
 *     their removal are not charged to the cache: at most one per request
 *     in flight, each at most store.hot_object_max.
 * What the cache does not see: object files changed or removed behind the
 * daemon's back (outside the records), as any open-file cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "store_int.h"
#include "aisd/banned.h"

#define HOT_SHARDS 16

/* One cached object: its name (bucket, NUL, object), metadata and bytes. */
struct hot_ent {
	struct hot_ent *next;          /* hash chain */
	struct hot_ent *lprev, *lnext; /* LRU list, most recently used first */
	uint64_t hash;
	atomic_int refs;               /* the cache's (while linked) and readers' (rule 5) */
	size_t klen, clen, cost;       /* name, custom metadata (no NUL), bytes charged */
	uint64_t size;
	enum store_cksum cksum_type;
	char cksum[STORE_CKSUM_HEX_MAX];
	uint64_t version;
	int64_t mtime_ns, atime_ns, md_ns;
	char data[];                   /* name, custom + NUL, then the object's bytes */
};

struct hot_shard {
	pthread_mutex_t mu;
	struct hot_ent **tab; /* nb chains, nb a power of two */
	size_t nb, n, bytes;
	struct hot_ent *head, *tail;
	uint64_t epoch;       /* bumped by every drop (rule 2) */
	uint64_t hits, misses, fills;
} __attribute__((aligned(64)));

struct store_hot {
	size_t cap;     /* bytes per shard */
	uint64_t obj_max;
	struct hot_shard sh[HOT_SHARDS];
};

struct store_hot *store_hot_new(uint64_t bytes, uint64_t obj_max)
{
	if (bytes == 0)
		return NULL;
	struct store_hot *h = xcalloc(1, sizeof(*h));
	h->cap = (size_t)(bytes / HOT_SHARDS);
	h->obj_max = obj_max;
	for (int i = 0; i < HOT_SHARDS; i++) {
		if (pthread_mutex_init(&h->sh[i].mu, NULL))
			fatalx("pthread init");
		h->sh[i].nb = 256;
		h->sh[i].tab = xcalloc(h->sh[i].nb, sizeof(*h->sh[i].tab));
	}
	return h;
}

/* Drops a reference to e; the last one frees it (rule 5). */
static void ent_unref(struct hot_ent *e)
{
	if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1)
		free(e);
}

/* Empties a shard. Caller holds its mutex. */
static void shard_empty(struct hot_shard *sh)
{
	for (struct hot_ent *e = sh->head, *nx; e; e = nx) {
		nx = e->lnext;
		ent_unref(e);
	}
	memset(sh->tab, 0, sh->nb * sizeof(*sh->tab));
	sh->head = sh->tail = NULL;
	sh->n = sh->bytes = 0;
}

void store_hot_free(struct store_hot *h)
{
	if (!h)
		return;
	for (int i = 0; i < HOT_SHARDS; i++) {
		shard_empty(&h->sh[i]);
		free(h->sh[i].tab);
		pthread_mutex_destroy(&h->sh[i].mu);
	}
	free(h);
}

static uint64_t name_hash(const char *name, size_t n) { return XXH3_64bits(name, n); }
static struct hot_shard *shard_of(struct store_hot *h, uint64_t hash) { return &h->sh[hash >> 60]; }

/* The entry of name, or NULL; *pp the link that points to it (or the
 * chain's end). Caller holds the shard's mutex. */
static struct hot_ent *find(struct hot_shard *sh, uint64_t hash, const char *name, size_t n, struct hot_ent ***pp)
{
	struct hot_ent **p = &sh->tab[hash & (sh->nb - 1)];
	for (; *p; p = &(*p)->next)
		if ((*p)->hash == hash && (*p)->klen == n && !memcmp((*p)->data, name, n))
			break;
	if (pp)
		*pp = p;
	return *p;
}

static void lru_unlink(struct hot_shard *sh, struct hot_ent *e)
{
	if (e->lprev)
		e->lprev->lnext = e->lnext;
	else
		sh->head = e->lnext;
	if (e->lnext)
		e->lnext->lprev = e->lprev;
	else
		sh->tail = e->lprev;
	e->lprev = e->lnext = NULL;
}

static void lru_front(struct hot_shard *sh, struct hot_ent *e)
{
	e->lprev = NULL;
	e->lnext = sh->head;
	if (sh->head)
		sh->head->lprev = e;
	sh->head = e;
	if (!sh->tail)
		sh->tail = e;
}

/* Removes e and drops the cache's reference. Caller holds the shard's mutex. */
static void remove_ent(struct hot_shard *sh, struct hot_ent *e)
{
	struct hot_ent **p = &sh->tab[e->hash & (sh->nb - 1)];
	while (*p != e)
		p = &(*p)->next;
	*p = e->next;
	lru_unlink(sh, e);
	sh->n--;
	sh->bytes -= e->cost;
	ent_unref(e);
}

/* Doubles the chains when the entries outnumber them. */
static void maybe_grow(struct hot_shard *sh)
{
	if (sh->n <= sh->nb || sh->nb >= ((size_t)1 << 24))
		return;
	size_t nb = sh->nb * 2;
	struct hot_ent **tab = xcalloc(nb, sizeof(*tab));
	for (size_t i = 0; i < sh->nb; i++)
		for (struct hot_ent *e = sh->tab[i], *nx; e; e = nx) {
			nx = e->next;
			e->next = tab[e->hash & (nb - 1)];
			tab[e->hash & (nb - 1)] = e;
		}
	free(sh->tab);
	sh->tab = tab;
	sh->nb = nb;
}

/* The bytes of e (after its name and custom metadata). */
static char *ent_bytes(struct hot_ent *e) { return e->data + e->klen + e->clen + 1; }

/* Rule 5: a hit's metadata and a reference to its entry; NULL on a miss
 * (*epoch then the shard's epoch, for the fill). */
static struct hot_ent *hot_get(struct store_hot *h, const char *name, size_t n, uint64_t hash, store_meta_t *m,
			       uint64_t *epoch)
{
	struct hot_shard *sh = shard_of(h, hash);
	pthread_mutex_lock(&sh->mu);
	struct hot_ent *e = find(sh, hash, name, n, NULL);
	if (!e) {
		sh->misses++;
		*epoch = sh->epoch;
		pthread_mutex_unlock(&sh->mu);
		return NULL;
	}
	sh->hits++;
	if (sh->head != e) {
		lru_unlink(sh, e);
		lru_front(sh, e);
	}
	m->size = e->size;
	m->cksum_type = e->cksum_type;
	memcpy(m->cksum, e->cksum, sizeof(m->cksum));
	m->version = e->version;
	m->mtime_ns = e->mtime_ns;
	m->atime_ns = e->atime_ns;
	m->md_ns = e->md_ns;
	memcpy(m->custom, e->data + e->klen, e->clen + 1);
	atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&sh->mu);
	return e;
}

/* A new entry for name and m, its bytes still to be read (ent_bytes), one
 * reference (the caller's). */
static struct hot_ent *ent_new(const char *name, size_t n, uint64_t hash, const store_meta_t *m)
{
	size_t clen = strnlen(m->custom, sizeof(m->custom) - 1);
	size_t cost = sizeof(struct hot_ent) + n + clen + 1 + m->size;
	struct hot_ent *e = xmalloc(cost);
	*e = (struct hot_ent){.hash = hash, .klen = n, .clen = clen, .cost = cost, .size = m->size,
			      .cksum_type = m->cksum_type, .version = m->version, .mtime_ns = m->mtime_ns,
			      .atime_ns = m->atime_ns, .md_ns = m->md_ns};
	atomic_init(&e->refs, 1);
	memcpy(e->cksum, m->cksum, sizeof(e->cksum));
	memcpy(e->data, name, n);
	memcpy(e->data + n, m->custom, clen);
	e->data[n + clen] = '\0';
	return e;
}

/* Rule 2: inserts e (its bytes read) unless a drop moved the shard's epoch
 * since the caller's hot_get; the caller keeps its own reference either
 * way. */
static void hot_put(struct store_hot *h, struct hot_ent *e, uint64_t epoch)
{
	if (e->cost > h->cap)
		return;
	uint64_t hash = e->hash;
	const char *name = e->data;
	size_t n = e->klen, cost = e->cost;
	struct hot_shard *sh = shard_of(h, hash);
	pthread_mutex_lock(&sh->mu);
	if (sh->epoch != epoch) { /* written, deleted or dropped meanwhile */
		pthread_mutex_unlock(&sh->mu);
		return;
	}
	atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed); /* the cache's */
	struct hot_ent **p, *old = find(sh, hash, name, n, &p);
	if (old) /* another reader filled it first: same record (the epoch did not move) */
		remove_ent(sh, old);
	p = &sh->tab[hash & (sh->nb - 1)];
	e->next = *p;
	*p = e;
	lru_front(sh, e);
	sh->n++;
	sh->bytes += cost;
	sh->fills++;
	while (sh->bytes > h->cap && sh->tail)
		remove_ent(sh, sh->tail);
	maybe_grow(sh);
	pthread_mutex_unlock(&sh->mu);
}

/* Rules 1-2: forgets name (bucket, NUL, object) and moves its shard's epoch. */
static void hot_drop(struct store_hot *h, const char *name, size_t n)
{
	uint64_t hash = name_hash(name, n);
	struct hot_shard *sh = shard_of(h, hash);
	pthread_mutex_lock(&sh->mu);
	sh->epoch++;
	struct hot_ent *e = find(sh, hash, name, n, NULL);
	if (e)
		remove_ent(sh, e);
	pthread_mutex_unlock(&sh->mu);
}

void store_hot_touch(store_t *s, const char *key, size_t klen, int64_t atime_ns)
{
	struct store_hot *h = s->hot;
	if (!h || klen < 2 || key[0] != 'o')
		return;
	uint64_t hash = name_hash(key + 1, klen - 1);
	struct hot_shard *sh = shard_of(h, hash);
	pthread_mutex_lock(&sh->mu);
	struct hot_ent *e = find(sh, hash, key + 1, klen - 1, NULL);
	if (e && e->atime_ns < atime_ns)
		e->atime_ns = atime_ns;
	pthread_mutex_unlock(&sh->mu);
}

void store_hot_clear(store_t *s)
{
	struct store_hot *h = s->hot;
	if (!h)
		return;
	for (int i = 0; i < HOT_SHARDS; i++) {
		pthread_mutex_lock(&h->sh[i].mu);
		h->sh[i].epoch++;
		shard_empty(&h->sh[i]);
		pthread_mutex_unlock(&h->sh[i].mu);
	}
}

void store_hot_drop(store_t *s, const char *key, size_t klen)
{
	if (!s->hot || klen < 2)
		return;
	if (key[0] == 'o' || key[0] == 'd') /* an object record or a tombstone: its name follows */
		hot_drop(s->hot, key + 1, klen - 1);
	else if (key[0] == 'b') /* a bucket record (created, destroyed, changed) */
		store_hot_clear(s);
}

static void batch_put(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
	(void)v, (void)vlen;
	store_hot_drop(arg, k, klen);
}

static void batch_del(void *arg, const char *k, size_t klen) { store_hot_drop(arg, k, klen); }

void store_hot_drop_batch(store_t *s, leveldb_writebatch_t *b)
{
	if (s->hot)
		leveldb_writebatch_iterate(b, s, batch_put, batch_del);
}

/* Rule 4: reads all of fd's size bytes into p if they are in the page
 * cache. */
static bool read_resident(int fd, uint64_t size, char *p)
{
	size_t got = 0;
	while (got < size) {
		struct iovec iov = {p + got, size - got};
		ssize_t n = preadv2(fd, &iov, 1, (off_t)got, RWF_NOWAIT);
		if (n <= 0)
			return false; /* would block, short file, or an error: the usual path reports it */
		got += (size_t)n;
	}
	return true;
}

void store_hot_release(store_hot_ref_t *r)
{
	if (r->ent)
		ent_unref(r->ent);
	*r = (store_hot_ref_t){0};
}

void (*store_hot_fill_hook)(void);

int store_open_hot(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen, int *fd,
		   store_meta_t *m, store_hot_ref_t *ref)
{
	struct store_hot *h = s->hot;
	*ref = (store_hot_ref_t){0};
	if (!h)
		return store_open_obj(s, bck, blen, obj, olen, fd, m);
	buf_t k = BUF_INIT;
	store_key_obj(&k, bck, blen, obj, olen);
	const char *name = k.ptr + 1;
	size_t n = k.len - 1;
	uint64_t hash = name_hash(name, n), epoch;
	struct hot_ent *e = hot_get(h, name, n, hash, m, &epoch);
	if (e) {
		buf_free(&k);
		*fd = -1;
		*ref = (store_hot_ref_t){.ptr = ent_bytes(e), .len = e->size, .ent = e};
		return AIS_OK;
	}
	int rc = store_open_obj(s, bck, blen, obj, olen, fd, m);
	if (rc == AIS_OK && m->size <= h->obj_max) {
		e = ent_new(name, n, hash, m);
		if (read_resident(*fd, m->size, ent_bytes(e))) {
			if (store_hot_fill_hook)
				store_hot_fill_hook();
			hot_put(h, e, epoch);
			close(*fd);
			*fd = -1;
			*ref = (store_hot_ref_t){.ptr = ent_bytes(e), .len = e->size, .ent = e};
		} else {
			ent_unref(e);
		}
	}
	int err = errno;
	buf_free(&k);
	errno = err;
	return rc;
}

void store_hot_stats(store_t *s, store_hot_stats_t *out)
{
	memset(out, 0, sizeof(*out));
	struct store_hot *h = s->hot;
	if (!h)
		return;
	for (int i = 0; i < HOT_SHARDS; i++) {
		struct hot_shard *sh = &h->sh[i];
		pthread_mutex_lock(&sh->mu);
		out->entries += sh->n;
		out->bytes += sh->bytes;
		out->hits += sh->hits;
		out->misses += sh->misses;
		out->fills += sh->fills;
		pthread_mutex_unlock(&sh->mu);
	}
}
