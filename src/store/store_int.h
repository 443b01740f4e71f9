/*
 * store_int.h - the store's private types and helpers, shared by the files of
 * src/store/ only. Nothing outside src/store includes it (but the unit test
 * of the store, for the record codec).
 *
 * On-disk layout of one mountpath:
 *   <mp>/meta/           LevelDB: "o"+bucket+"\0"+object -> object record,
 *                        "d"+bucket+"\0"+object -> delete time (tomb.c),
 *                        "h"+<32 hex> -> uname, "b"+bucket -> bucket record,
 *                        "a"+bucket+"\0"+object+"\0"+gen (8 bytes, big
 *                        endian) -> tar index of that generation (tarindex.c)
 *                        (bucket keys only in mountpath 0),
 *                        "u"+"<h>.<gen>" -> "" a file a crash may have left
 *                        unused (reconcile.c), "r" -> "1" hints are kept
 *   <mp>/obj/<xx>/<h>.<gen>  object bytes; h = hex XXH3-128 of the uname,
 *                        xx = its first two hex digits, gen = 16 hex digits
 *   <mp>/tmp/<h>.<gen>   writes in progress (emptied at store_open)
 */
#ifndef AISD_STORE_INT_H
#define AISD_STORE_INT_H

#include <leveldb/c.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#define XXH_STATIC_LINKING_ONLY /* XXH64_state_t on the stack */
#include <xxhash.h>

#include "aisd/buf.h"
#include "aisd/store.h"

#define STORE_HASH_HEX 32         /* hex digits of the XXH3-128 file name hash */
#define STORE_REC_FORMAT 1        /* first byte of an object record */
#define STORE_BREC_FORMAT 1       /* first byte of a bucket record */
#define STORE_TIDX_FORMAT 1       /* first byte of a tar index */
#define STORE_OPEN_RETRIES 8      /* store_open_obj: re-reads after a lost race */
#define STORE_ATIME_QUEUE 4096 /* access times waiting to be written, at most */
#define STORE_PATH_MAX 1200
#define STORE_GEN_RESERVE (1ULL << 24) /* gens reserved per LevelDB write */

/* A mountpath slot's state (mountpath.c). Slots are never freed while the
 * store is open: a detached one is closed (MP_OFF) and may be attached
 * again. Readers skip MP_OFF slots and hold s->mp_rw for reading while they
 * use a slot's database; closing takes it for writing. */
/* MP_FAULTED: the mountpath failed at run time (its directory vanished or
 * was replaced, its file system turned read-only, or a write found either):
 * out of placement and never read, its database still open until a detach
 * closes it (mpcheck.c). */
enum store_mp_state { MP_ACTIVE = 0, MP_DETACHING, MP_OFF, MP_FAULTED };

typedef struct store_mp {
	char path[1024];
	_Atomic int state;  /* enum store_mp_state */
	_Atomic int users;  /* writers in progress on this mountpath */
	dev_t dev;          /* the directory's device and inode at open: a */
	ino_t ino;          /* different one means it was unmounted or replaced */
	char fault[256];    /* MP_FAULTED: why (under the store's mp_mu) */
	leveldb_t *db;
	leveldb_options_t *opts;
	leveldb_cache_t *cache;
	leveldb_filterpolicy_t *bloom;
	/* Serializes read-modify-write of this mountpath's object records:
	 * commit, delete, touch, bucket destroy (see write.c). */
	pthread_mutex_t commit_mu;
	/* Deletes of crash hints whose files are gone, not written yet
	 * (reconcile.c rule 2): the next commit batch carries them. Under
	 * hint_mu, taken after commit_mu when both are. */
	pthread_mutex_t hint_mu;
	leveldb_writebatch_t *hint_done;
	unsigned hint_done_n;
	_Atomic uint64_t next_gen; /* next file generation to hand out */
	uint64_t gen0;             /* first generation of this process */
	/* Generations below gen_limit are reserved for this process: the key
	 * "g" holds the limit, so that a restart (even with the clock set
	 * back) starts above every gen a previous run could have used. */
	_Atomic uint64_t gen_limit;
	pthread_mutex_t gen_mu;
	/* Object count and bytes (store_stats): base is what the records held
	 * at open, counted from a LevelDB snapshot by the reconcile thread
	 * (count_done tells when it is complete); delta is every change since
	 * open (commit, delete, bucket destroy, updated under commit_mu). */
	const leveldb_snapshot_t *count_snap;
	_Atomic uint64_t base_objects, base_bytes;
	_Atomic int64_t delta_objects, delta_bytes;
	atomic_bool count_done;
	/* The start-up reconcile of this mountpath (reconcile.c): object files
	 * its walk examined (a store without hints only), crash hints it
	 * checked, files it removed; rc_finished once it is done. */
	_Atomic uint64_t rc_walked, rc_hints, rc_removed;
	atomic_bool rc_finished;
} store_mp_t;

/* tarindex.c: decoded tar indexes of recent shard versions (an LRU of
 * STORE_TIDX_SLOTS, at most STORE_TIDX_BYTES), so an archpath read costs a
 * lookup, not a decode of the whole index. */
#define STORE_TIDX_SLOTS 64
#define STORE_TIDX_BYTES (64u << 20)
typedef struct store_tidx_slot {
	buf_t key;                   /* the index key + the version's meta: one version only */
	struct store_tar_index *idx; /* the cache's reference; NULL: free slot */
	uint64_t used;               /* tick of the last hit */
} store_tidx_slot_t;

struct store {
	_Atomic int n_mp;        /* slots in use (only grows: attach of a new path) */
	_Atomic int bmp;         /* the slot bucket records are read from: the first active */
	pthread_rwlock_t mp_rw;  /* read: using a slot's database; write: closing one */
	pthread_mutex_t mp_mu;   /* serializes attach, detach and their bookkeeping */
	pthread_mutex_t bucket_mu; /* serializes bucket record changes (on every slot) */
	pthread_mutex_t destroy_mu; /* held while a bucket's objects are removed (bucket.c); before bucket_mu */
	_Atomic uint64_t layout_gen; /* bumped when objects may sit off their HRW mountpath */
	/* The mountpath check thread (mpcheck.c). */
	uint64_t check_ms;
	pthread_t ck_thread;
	bool ck_started, ck_stop;
	pthread_mutex_t ck_mu;
	pthread_cond_t ck_cond;
	int fsync;               /* enum conf_fsync */
	uint64_t tomb_ttl_ns;    /* tombstones younger than this count (tomb.c) */
	int64_t tomb_swept_ns;   /* last sweep (the check thread's) */
	uint64_t min_free_bytes;
	int64_t start_ns;        /* wall clock at store_open */
	uint64_t digests[CONF_MAX_MOUNTPATHS];
	leveldb_writeoptions_t *wo_commit; /* sync iff fsync == always */
	leveldb_writeoptions_t *wo_lazy;   /* never sync (atime) */
	leveldb_readoptions_t *ro;         /* point lookups */
	leveldb_readoptions_t *ro_scan;    /* scans: do not fill the cache */
	/* Access times waiting for the atime thread (atime.c). */
	pthread_t at_thread;
	bool at_started, at_stop;
	pthread_mutex_t at_mu;
	pthread_cond_t at_cond;
	struct store_atime *at_head, *at_tail;
	size_t at_n;
	/* Start-up reconcile (reconcile.c). */
	pthread_t rc_thread;
	bool rc_started;
	atomic_bool rc_stop;
	pthread_mutex_t rc_mu;
	pthread_cond_t rc_cond;
	bool rc_done;
	store_mp_t mp[CONF_MAX_MOUNTPATHS];
	pthread_mutex_t tidx_mu;
	store_tidx_slot_t tidx[STORE_TIDX_SLOTS];
	uint64_t tidx_tick;
	size_t tidx_bytes;
	struct store_hot *hot;   /* hot.c; NULL when store.hot_cache is 0 */
	int64_t atime_ns;        /* store.atime_interval (atime.c); 0: reads record none */
	/* each mountpath's LevelDB options (store.leveldb_*) */
	uint64_t ldb_cache, ldb_write_buffer, ldb_bloom_bits, ldb_max_open_files;
};

/* Is slot i open (active or detaching)? A faulted slot is not: nothing
 * reads it. */
static inline bool store_mp_open(store_t *s, int i)
{
	int st = atomic_load_explicit(&s->mp[i].state, memory_order_acquire);
	return st == MP_ACTIVE || st == MP_DETACHING;
}
static inline int store_nmp(store_t *s) { return atomic_load_explicit(&s->n_mp, memory_order_acquire); }
static inline void store_rd(store_t *s) { pthread_rwlock_rdlock(&s->mp_rw); }
static inline void store_unrd(store_t *s) { pthread_rwlock_unlock(&s->mp_rw); }

void store_tidx_cache_free(store_t *s);

/* store.leveldb_cache 0 (auto): each mountpath's block cache for a machine
 * of phys bytes of memory and nmp mountpaths: 1/32 of the memory shared
 * by the mountpaths, within [STORE_LDB_CACHE_MIN, STORE_LDB_CACHE_MAX].
 * The cache holds only blocks read, so a small store pays for what it
 * reads, not for the bound. */
#define STORE_LDB_CACHE_MIN (8ULL << 20)
#define STORE_LDB_CACHE_MAX (1ULL << 30)
uint64_t store_ldb_cache_auto(uint64_t phys, int nmp);

/* hot.c: recently read small objects in memory. store_hot_new returns NULL
 * for 0 bytes (off). Every change of an object record or tombstone drops
 * its name (store_db_write calls store_hot_drop_batch after each batch;
 * store_hot_drop for a key written another way; an atime-only write calls
 * store_hot_touch); a bucket record change
 * and any mountpath state change clear the whole cache. Safe from any
 * thread; no-ops when the cache is off. */
struct store_hot *store_hot_new(uint64_t bytes, uint64_t obj_max);
void store_hot_free(struct store_hot *h);
void store_hot_drop(store_t *s, const char *key, size_t klen);
void store_hot_drop_batch(store_t *s, leveldb_writebatch_t *b);
void store_hot_clear(store_t *s);
/* The access-time writer: the cached copy of the "o" key's object (if any)
 * takes atime_ns when newer; nothing else changes. */
void store_hot_touch(store_t *s, const char *key, size_t klen, int64_t atime_ns);

/* mpcheck.c: takes mp out of use (MP_FAULTED) for the reason given, unless
 * it is the last active mountpath (then it only logs). Safe from any
 * thread; a second call for the same slot does nothing. */
void store_mp_fault(store_t *s, store_mp_t *mp, const char *why);
/* The check thread: started by store_open, stopped by store_close. */
int store_mpcheck_start(store_t *s);
void store_mpcheck_stop(store_t *s);
/* atime.c: the thread that writes the access times store_touch queues. */
int store_atime_start(store_t *s);
void store_atime_stop(store_t *s);
/* The first active slot becomes the bucket slot. Caller holds mp_mu. */
void store_pick_bmp(store_t *s);
int store_count_state(store_t *s, int state);

/* An object record: the public meta plus the file generation. */
typedef struct store_rec {
	store_meta_t m;
	uint64_t gen;
} store_rec_t;

/* meta.c: keys, records, LevelDB access. */
void store_key_obj(buf_t *k, const char *bck, size_t blen, const char *obj, size_t olen);
void store_key_hash(buf_t *k, const char *hhex);
void store_key_bucket(buf_t *k, const char *bck, size_t blen);
/* The tar index key of one generation of bck/obj. */
void store_key_tar(buf_t *k, const char *bck, size_t blen, const char *obj, size_t olen,
		   uint64_t gen);
/* LEB128 varints (the record encoding), for the other encoders of src/store. */
void store_varint_put(buf_t *b, uint64_t v);
int store_varint_get(const unsigned char **p, const unsigned char *end, uint64_t *out);
void store_rec_encode(buf_t *out, const store_rec_t *r);
int store_rec_decode(const char *p, size_t n, store_rec_t *r);
/* Reads key from mp's LevelDB: the value (leveldb_free it), or NULL with
 * errno ENOENT (none) or EIO (logged as "PATH: leveldb get (WHAT): ...";
 * what NULL: no parenthesis). */
char *store_db_get(store_t *s, store_mp_t *mp, const char *key, size_t klen, const char *what, size_t *vlen);
/* Reads an object record: AIS_OK, or AIS_ERR with errno ENOENT (none) or EIO. */
int store_rec_get(store_t *s, store_mp_t *mp, const buf_t *okey, store_rec_t *r);
/* Hash of a uname: 32 lower-case hex digits + NUL into hex. */
void store_uname_hash(const char *uname, size_t n, char hex[STORE_HASH_HEX + 1]);
/* The active mountpath that owns bucket/object (HRW over active slots). */
store_mp_t *store_mp_of(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen);
/* Paths of a generation: <mp>/obj/<xx>/<h>.<gen> and <mp>/tmp/<h>.<gen>. */
void store_path_obj(char *out, size_t sz, const store_mp_t *mp, const char *hhex, uint64_t gen);
void store_path_tmp(char *out, size_t sz, const store_mp_t *mp, const char *hhex, uint64_t gen);
/* The errno of a LevelDB error message: ENOSPC for a full disk, else EIO. */
int store_db_errno(const char *err);
/* Writes a batch with the commit options; on failure logs, errno as
 * store_db_errno says. */
int store_db_write(store_t *s, store_mp_t *mp, leveldb_writeoptions_t *wo, leveldb_writebatch_t *b,
		   const char *what);

/* tomb.c: is there a tombstone of bck/obj on mp stamped after stamp (and
 * younger than the ttl)? Caller holds mp->commit_mu. */
bool store_tomb_newer(store_t *s, store_mp_t *mp, const char *bck, size_t blen, const char *obj, size_t olen,
		      int64_t stamp);

/* cksum.c: streaming checksums. */
typedef struct store_hasher {
	enum store_cksum type;
	XXH64_state_t *xx;
	EVP_MD_CTX *md;
} store_hasher_t;
void store_hasher_init(store_hasher_t *h, enum store_cksum type);
void store_hasher_update(store_hasher_t *h, const void *p, size_t n);
/* Writes the lower-case hex digest ("" for none) and releases the state. */
void store_hasher_final(store_hasher_t *h, char hex[STORE_CKSUM_HEX_MAX]);
void store_hasher_free(store_hasher_t *h);

/* store.c: a new, never used file generation of mp. AIS_ERR (EIO) when the
 * reservation cannot be persisted. */
int store_gen_alloc(store_t *s, store_mp_t *mp, uint64_t *gen);
/* Opens mp at path (directories, LevelDB, generations), or closes it. */
int store_mp_open_at(const store_t *s, store_mp_t *mp, const char *path, buf_t *err);
void store_mp_close(store_mp_t *mp);
/* The bucket records' slot. */
static inline store_mp_t *store_bmp(store_t *s) { return &s->mp[atomic_load(&s->bmp)]; }

/* reconcile.c */
/* Applies a change of (objects, bytes) to mp's counters. */
static inline void store_count(store_mp_t *mp, int64_t objects, int64_t bytes)
{
	atomic_fetch_add_explicit(&mp->delta_objects, objects, memory_order_relaxed);
	atomic_fetch_add_explicit(&mp->delta_bytes, bytes, memory_order_relaxed);
}
/* read.c: deletes bck/obj on mp if its record names gen (0: any). */
int store_delete_on(store_t *s, store_mp_t *mp, const char *bck, size_t blen, const char *obj, size_t olen,
		    uint64_t gen);
int store_reconcile_start(store_t *s);
/* bucket.c: finishes the destroys a crash cut (bucket.c rule 3); stops
 * between chunks once *stop. Run by the reconcile thread after its count. */
void store_bucket_destroy_resume(store_t *s, const atomic_bool *stop);
/* Counts mp's records from mp->count_snap into base_* (then releases it). */
void store_count_mp(store_t *s, store_mp_t *mp);
void store_reconcile_stop(store_t *s);
/* Crash hints (reconcile.c rules 1-3): the key of file h.gen; its put or
 * delete added to a batch; written alone with the commit options before a
 * file is renamed into obj/ (AIS_OK, or AIS_ERR with errno as
 * store_db_write); deleted once the file is gone, by store_hint_done, which
 * queues the delete for mp's next commit batch (store_hint_fold adds the
 * queue to a batch; caller holds mp's commit mutex) or writes the queue
 * lazily once STORE_HINT_DONE_MAX wait (a lost delete only costs start-up
 * a lookup: rule 3). */
#define STORE_HINT_DONE_MAX 64
void store_hint_fold(store_mp_t *mp, leveldb_writebatch_t *b);
void store_key_hint(buf_t *k, const char *h, uint64_t gen);
void store_hint_batch(leveldb_writebatch_t *b, bool put, const char *h, uint64_t gen);
/* "<32 hex>.<16 hex>" (an object file's name) into h and gen. */
bool store_parse_name(const char *name, char h[STORE_HASH_HEX + 1], uint64_t *gen);
/* Is file h.gen the current version of its object? 1 yes, 0 no, -1 cannot
 * tell (LevelDB error). Caller holds mp's commit mutex (or is open). */
int store_file_live(store_t *s, store_mp_t *mp, const char *h, uint64_t gen);
int store_hint_put(store_t *s, store_mp_t *mp, const char *h, uint64_t gen);
void store_hint_done(store_t *s, store_mp_t *mp, const char *h, uint64_t gen);

#endif
