/*
 * store.h - a target's object store: mountpaths, object files, LevelDB
 * metadata, durable writes, checksums, local bucket metadata.
 *
 * Every function here may block on disk: the HTTP layer calls them from the
 * I/O thread pool, never from an event loop (except store_open_obj, see
 * below). All functions are thread-safe. On failure they return AIS_ERR with
 * errno set to one of:
 *   ENOENT  no such bucket or object          -> 404
 *   EEXIST  bucket exists                      -> 409
 *   EBADMSG checksum mismatch (nothing stored) -> 400
 *   ENOSPC  disk full / below store.min_free   -> 507
 *   EINVAL  bad argument (type, name)          -> 400
 *   EIO (or any other)                         -> 500
 * and, where given, a message in the caller's buf_t err.
 *
 * Names are passed as (ptr, len) and are already validated (names.h).
 */
#ifndef AISD_STORE_H
#define AISD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "aisd/buf.h"
#include "aisd/conf.h"

typedef struct store store_t;
typedef struct store_writer store_writer_t;

enum store_cksum { CKSUM_NONE = 0, CKSUM_XXHASH, CKSUM_MD5, CKSUM_SHA256 };
#define STORE_CKSUM_HEX_MAX 65 /* sha256: 64 hex + NUL */

/* "xxhash" (also "xxhash64"), "md5", "sha256", "none" <-> enum. */
int store_cksum_parse(const char *s, size_t len, enum store_cksum *out);
const char *store_cksum_name(enum store_cksum t);

/* Custom metadata, "k=v,..." with its NUL: room for S3's 2 KiB of user
 * metadata percent-encoded, plus the standard headers. */
#define STORE_CUSTOM_MAX 8192

typedef struct store_meta {
	uint64_t size;
	enum store_cksum cksum_type;
	char cksum[STORE_CKSUM_HEX_MAX]; /* lower-case hex; "" for none */
	uint64_t version;                /* 1 on first write, +1 per overwrite */
	int64_t mtime_ns;                /* time of the last write */
	int64_t atime_ns;                /* last access (updated lazily) */
	char custom[STORE_CUSTOM_MAX];   /* custom metadata, "k=v,k=v" ("" none) */
	int64_t md_ns;                   /* when custom was set: by store_set_custom, or on the copy it
					  * was copied from (store_writer_md_time); 0: with this write */
	int64_t stamp;                   /* the write's stamp (hlc.h): given by the target that took the
					  * client's write, kept by every copy of it; 0 in a record
					  * written before stamps: store_stamp reads its mtime_ns */
} store_meta_t;

/* Which of two writes (or a write and a delete) of one object came last is
 * decided by their stamps, never by mtime_ns (the wall clock of whichever
 * target stored that copy): a stamp is the hybrid logical clock of the
 * target that took the client's write (hlc.h), carried with every copy
 * (Ais-Stamp, store_writer_origin/store_writer_stamp), and a tombstone
 * holds the delete's stamp. A record written before stamps existed reads
 * its mtime_ns as its stamp. */
int64_t store_stamp(const store_meta_t *m);

/* When m's custom metadata was set (md_ns, else mtime_ns): copies of the
 * same bytes with different metadata keep the one set last. */
int64_t store_md_time(const store_meta_t *m);

typedef struct store_bucket {
	char name[65];
	enum store_cksum cksum_type;
	int64_t created_ns;
} store_bucket_t;

/* I/O function table: tests replace entries to inject EIO, ENOSPC, short
 * writes or fsync failures at any step (see tests/unit/test_store.c). */
typedef struct store_io {
	int (*open)(const char *path, int flags, mode_t mode);
	ssize_t (*write)(int fd, const void *buf, size_t n);
	int (*fsync)(int fd);
	int (*rename)(const char *from, const char *to);
	int (*unlink)(const char *path);
	int (*close)(int fd);
	/* moves up to n bytes from the pipe pfd to fd's position (splice(2)) */
	ssize_t (*splice)(int pfd, int fd, size_t n);
	/* a second name for a file (link(2)): a write's temp file into obj/ */
	int (*link)(const char *from, const char *to);
} store_io_t;
extern store_io_t store_io; /* the real syscalls by default */

/* Opens (creating as needed) every mountpath in c->mountpaths: its LevelDB,
 * its object and temp directories; removes leftovers of interrupted writes.
 * Returns AIS_OK with *out set, or AIS_ERR with a message in err. */
int store_open(const conf_t *c, store_t **out, buf_t *err);
void store_close(store_t *s);

/* Buckets (persisted; survive restart). */
int store_bucket_create(store_t *s, const char *bck, size_t len, enum store_cksum cksum);
int store_bucket_get(store_t *s, const char *bck, size_t len, store_bucket_t *out);
/* The checksum type of new objects in an existing bucket (ENOENT if none);
 * objects already stored keep theirs. */
int store_bucket_set_cksum(store_t *s, const char *bck, size_t len, enum store_cksum cksum);
/* Removes the bucket and every object in it. */
int store_bucket_destroy(store_t *s, const char *bck, size_t len);
/* Fills *out (malloc'd array, caller frees) with all buckets sorted by name. */
int store_bucket_list(store_t *s, store_bucket_t **out, size_t *n);

/* Writing an object: begin -> write* -> commit, or abort at any point.
 * The bytes go to a temp file and are checksummed as they stream; commit
 * verifies the client's checksum (if any), applies the fsync policy,
 * renames into place and records the metadata in LevelDB (synchronously),
 * in that order; only then is the new object visible. Until commit returns
 * AIS_OK nothing of the write is visible, and a reader of the previous
 * version keeps reading it whole. */
int store_writer_begin(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
		       store_writer_t **out);
int store_writer_write(store_writer_t *w, const void *p, size_t n);
/* The same for n bytes that wait in a pipe (pfd: its read end, holding at
 * least n bytes; a body spliced from a socket): moved into the temp file by
 * splice(2), never through user space, then checksummed from the file
 * (write.c rule 9). AIS_ERR with errno as store_writer_write, EIO also when
 * the pipe holds fewer than n bytes; the writer has failed then. */
int store_writer_splice(store_writer_t *w, int pfd, size_t n);
/* want_type/want_hex: client-supplied checksum to verify (CKSUM_NONE: no
 * check). custom: "k=v,..." or NULL. On success fills *out (may be NULL). */
int store_writer_commit(store_writer_t *w, enum store_cksum want_type, const char *want_hex,
			const char *custom, store_meta_t *out);
/* Addition, for replicated writes: seal = the first half of commit
 * (checksum verification, fsync of the data) with nothing visible yet; *out
 * gets the size and checksum (may be NULL). After it, store_writer_open_tmp
 * opens the sealed bytes for reading (the caller closes the descriptor; -1
 * with errno on failure), so they can be sent to other targets, and commit
 * or free decide whether the write becomes visible. commit ignores its
 * checksum arguments on a sealed writer. Sealing a sealed writer gives the
 * same result again. store_writer_open_tmp also works before the seal:
 * the bytes written so far, growing (a remote fetch streams them out). */
int store_writer_seal(store_writer_t *w, enum store_cksum want_type, const char *want_hex, store_meta_t *out);
int store_writer_open_tmp(store_writer_t *w);
/* Addition: from the first write on, the bytes are only checksummed and
 * counted, not kept (a write whose bytes went elsewhere as they came: the
 * slices of an erasure-coded object kept as slices only). Such a writer
 * seals (to verify a checksum) but does not commit or open_tmp (EINVAL).
 * No effect after a write. */
void store_writer_discard(store_writer_t *w);
/* Addition: reads fd (open on the version m describes) whole and checks it
 * against m's checksum: AIS_OK, or AIS_ERR with errno EBADMSG (mismatch)
 * or EIO. An object without a checksum passes. */
int store_verify_fd(int fd, const store_meta_t *m);
/* Frees w; removes its temp file unless committed. Always call it, after
 * commit too. */
void store_writer_free(store_writer_t *w);
/* Addition: asks w to also compute a checksum of this type, so that commit
 * can verify a client checksum of a type other than the bucket's (e.g. an
 * S3 Content-MD5 on an xxhash bucket). Call before the first write. Without
 * it, commit computes the bucket's type and xxhash only, and fails EINVAL
 * for another want_type. Returns AIS_OK, or AIS_ERR (EINVAL) after a write. */
int store_writer_also(store_writer_t *w, enum store_cksum type);
/* Addition: after a seal (or commit), the MD5 of the bytes in lower-case
 * hex when the writer computed one (an md5 bucket, or store_writer_also);
 * "" otherwise. */
const char *store_writer_md5(const store_writer_t *w);
/* The write is a copy of one stamped stamp (another target's, see
 * store_stamp): the copy keeps that stamp, and the commit fails with ESTALE
 * when, with no copy here, a tombstone with a later stamp is (checked under
 * the same lock as store_tomb_put, so a delete and a copy racing it cannot
 * both win). */
void store_writer_origin(store_writer_t *w, int64_t stamp);
/* The write is a copy of one stamped stamp (a replica of a client's write
 * on its way): the copy keeps that stamp; no tombstone check. */
void store_writer_stamp(store_writer_t *w, int64_t stamp);
/* The stamp the write will be committed with: taken at begin (hlc_now) for
 * a client's write, so that its replicas carry it before the commit; the
 * sender's for a copy. A client's write committed over a copy with a later
 * stamp (one from a peer whose clock this node has not seen yet) is
 * stamped anew above it. */
int64_t store_writer_stamp_of(const store_writer_t *w);
/* A client's write (no stamp given), before its commit, that a delete with
 * stamp came before (its tombstone here): the write is stamped anew above
 * it, since it commits after that delete; else nothing changes. */
void store_writer_after(store_writer_t *w, int64_t stamp);
/* The write is a copy whose metadata was set at md_ns (the sender's
 * store_md_time): the commit records it, so every copy of the same bytes
 * compares its metadata by when it was set, not by when it landed. */
void store_writer_md_time(store_writer_t *w, int64_t md_ns);
/* The write is expected to be size bytes in all: fails it (ENOSPC, its
 * file removed) unless that much more than store.min_free is free now.
 * Without it the write still stops (ENOSPC) once free space went below
 * store.min_free while its bytes land (write.c rule 8). */
int store_writer_reserve(store_writer_t *w, uint64_t size);
/* The same check before any writer: is there room for size more bytes of
 * bck/obj above store.min_free now? AIS_OK, or AIS_ERR with ENOSPC. */
int store_space_for(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen, uint64_t size);

/* Looks up an object's metadata. */
int store_lookup(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
		 store_meta_t *out);
/* Opens an object for reading: *fd is open on exactly the version *out
 * describes (consistent even while a PUT replaces it). Fast: a LevelDB get
 * and an open(); callable from an event loop. The caller closes *fd. */
int store_open_obj(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
		   int *fd, store_meta_t *out);
/* A hot object's bytes, held (not copied) until store_hot_release: they
 * stay valid and unchanged while held, even if the object is overwritten,
 * deleted or evicted meanwhile (a later read then no longer finds them). */
typedef struct store_hot_ref {
	const char *ptr;
	uint64_t len;
	void *ent; /* the cache's entry (hot.c); NULL: nothing held */
} store_hot_ref_t;
/* Opens an object for reading like store_open_obj, from memory when it can
 * (hot.c): a small object (store.hot_object_max) read recently is served
 * from the store's hot cache: *ref holds its bytes and *fd is -1; else *fd
 * is open as store_open_obj gives it and *ref holds nothing (the object is
 * cached on the way, *fd then -1 and *ref holding its bytes, when it is
 * small and its bytes are in the page cache). Callable from an event loop.
 * AIS_OK, or AIS_ERR with errno as store_open_obj. The caller releases
 * *ref (store_hot_release) in every case. */
int store_open_hot(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen, int *fd,
		   store_meta_t *m, store_hot_ref_t *ref);
/* Lets go of what *ref holds (nothing: no-op) and clears it. */
void store_hot_release(store_hot_ref_t *ref);
/* The hot cache's contents and counters since start (all 0 when it is off). */
typedef struct store_hot_stats {
	uint64_t entries, bytes; /* objects held now, bytes charged for them */
	uint64_t hits, misses;   /* reads served from memory, reads that were not */
	uint64_t fills;          /* objects put in */
} store_hot_stats_t;
void store_hot_stats(store_t *s, store_hot_stats_t *out);
/* Tests only (NULL otherwise): called by a fill of the hot cache between
 * reading the object and putting it in, to let a write race it. */
extern void (*store_hot_fill_hook)(void);

/* Records an access time (lazily: at most once per store.atime_interval per
 * object, none when it is 0; m, when given, is the object's record: a
 * recent enough atime costs nothing).
 * Never waits (callable from an event loop): the store's atime thread
 * writes the record soon after; store_close writes what is queued. */
void store_touch(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
		 const store_meta_t *m);
int store_delete(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen);
/* Tombstones (tomb.c): a client deleted bck/obj with stamp when_ns (the
 * delete's hybrid logical clock stamp, store_stamp; a copy with a smaller
 * stamp is a deleted one). store_tomb_get answers the newest one younger
 * than store.tombstone_ttl, or 0; store_tomb_sweep removes the older ones
 * and returns how many. With a ttl of 0 none is kept. */
int store_tomb_put(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen, int64_t when_ns);
int64_t store_tomb_get(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen);
size_t store_tomb_sweep(store_t *s);
/* Replaces an object's custom metadata (bytes and version unchanged), as
 * durably as a commit, if its version is still `version` (0: any) and its
 * metadata was not set after md_ns (its md_ns, from an earlier call or a
 * copy's sender, is not later), and records md_ns as its md_ns. AIS_OK, or AIS_ERR with errno ENOENT, ESTALE (overwritten
 * meanwhile, or metadata newer than md_ns there), EINVAL (too long) or
 * EIO. */
int store_set_custom(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen, uint64_t version,
		     const char *custom, int64_t md_ns);

/* Lists up to limit objects of bck in name (byte) order, with names that
 * start with prefix and sort after start_after (both may be empty). Calls
 * fn for each; sets *more when objects remain after the last one given.
 * Merges across mountpaths. limit 0 means no limit. ENOENT: no bucket. */
typedef void (*store_list_fn)(void *arg, const char *name, size_t len, const store_meta_t *m);
int store_list(store_t *s, const char *bck, size_t blen, const char *prefix, size_t plen,
	       const char *start_after, size_t salen, size_t limit, store_list_fn fn, void *arg,
	       bool *more);
/* The same, for a client's listing: kept versions (names.h
 * name_version_of) are skipped and not counted unless versions. */
int store_list_objects(store_t *s, const char *bck, size_t blen, const char *prefix, size_t plen,
		       const char *start_after, size_t salen, size_t limit, bool versions, store_list_fn fn,
		       void *arg, bool *more);

/* Per-mountpath capacity and counts, for stats and health. */
typedef struct store_mp_stats {
	char path[1024];
	uint64_t total_bytes, free_bytes;
	/* Addition: objects and their bytes on this mountpath. Kept as counters
	 * (changed by commit, delete, bucket destroy); what existed at open is
	 * counted by the background start-up thread from a LevelDB snapshot,
	 * so open stays O(1). Until that count is done, counting is true and
	 * objects/bytes are a lower bound in progress. */
	uint64_t objects, bytes;
	bool counting;
	/* Addition: the start-up reconcile (crash leftovers): object files its
	 * walk examined (only a store written by a build without crash hints is
	 * walked, once), crash hints it checked, files it removed;
	 * reconciling until it is done. */
	uint64_t rc_walked, rc_hints, rc_removed;
	bool reconciling;
	bool detaching; /* being drained by a detach (store_mp_detach_begin) */
	/* Addition: failed at run time (gone, replaced, read-only, or an I/O
	 * error on a write): out of use, nothing read from it; fault says why.
	 * Its objects are the ones it held; capacity is 0 when unreadable. */
	bool faulted;
	char fault[256];
} store_mp_stats_t;
int store_stats(store_t *s, store_mp_stats_t *out, int max, int *n);

/*
 * Addition: mountpaths on a running store (mountpath.c, whose notes give
 * the rules). An object lives on the HRW mountpath of its uname among the
 * active ones; after an attach or a detach some are elsewhere until the
 * resilver (store_misplaced + store_relocate, driven by src/jobs/resilver.c)
 * moves them, and reads find them wherever they are meanwhile.
 *
 * store_mp_attach opens path (creating its directories and database) and
 * makes it active at once: AIS_OK, or AIS_ERR with errno EEXIST (attached
 * already), EINVAL (bad path, too many) or EIO, and a message in err. An
 * attach of a path being detached calls the detach off.
 * store_mp_detach_begin takes path out of placement (its objects are still
 * read): ENOENT (no such mountpath), EBUSY (the last active one).
 * store_mp_detach_finish closes every detaching mountpath that holds no
 * object and has no write in flight (*closed tells whether one was):
 * AIS_OK, or AIS_AGAIN when one still holds objects (resilver again).
 */
typedef struct store_mp_info {
	char path[1024];
	bool detaching;
	bool faulted; /* failed at run time: out of use until detached */
} store_mp_info_t;
int store_mp_attach(store_t *s, const char *path, buf_t *err);
int store_mp_detach_begin(store_t *s, const char *path, buf_t *err);
int store_mp_detach_finish(store_t *s, bool *closed);
/* The open mountpaths (active, detaching and faulted), in slot order;
 * returns how many. A faulted mountpath (the store found it gone, replaced
 * or read-only at run time, see store.check_interval) is out of placement
 * and never read; a detach closes it at once, an attach of it is EBUSY
 * until then. */
int store_mp_list(store_t *s, store_mp_info_t *out, int max);
/* Bumped by every change that may leave objects off their HRW mountpath. */
uint64_t store_layout_gen(store_t *s);
/* A walk over objects stored off their HRW mountpath: each call gives up to
 * limit of them to fn (names valid during the call only) and advances the
 * cursor; 0 when the walk is over. Start with STORE_CURSOR_INIT; free
 * cur->after at the end. */
typedef struct store_cursor {
	int slot;
	buf_t after;
	uint64_t scanned, scanned_bytes; /* objects (and bytes) looked at so far */
} store_cursor_t;
#define STORE_CURSOR_INIT {0, BUF_INIT, 0, 0}
typedef void (*store_misplaced_fn)(void *arg, const char *bck, size_t blen, const char *obj, size_t olen,
				   uint64_t size);
size_t store_misplaced(store_t *s, store_cursor_t *cur, size_t limit, store_misplaced_fn fn, void *arg);
/* Moves bck/obj to its HRW mountpath (a copy no newer than the one there is
 * dropped instead). AIS_OK (moved: *bytes), AIS_DONE (nothing to move),
 * AIS_AGAIN (a client changed it meanwhile: nothing done), AIS_ERR (EIO). */
int store_relocate(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen, uint64_t *bytes);

/* Addition: waits until the start-up reconcile (removal of object files left
 * by a crash, started by store_open in a background thread) has finished.
 * For tests and tools; the daemon need not wait. */
void store_reconcile_wait(store_t *s);

/*
 * Addition: the tar index of a shard (a .tar object): each regular file
 * member's name, data offset and size, so that one member is served as a
 * byte range of the object's file. The index is kept in the object's
 * LevelDB under a key that includes the object's file generation, so an
 * overwrite makes the old index unreachable (commit, delete and bucket
 * destroy remove it in the same batch as the record).
 *
 * store_tar_index returns the index of exactly the version m describes and
 * fd is open on (both from store_open_obj): the saved one, or one built by
 * reading the tar headers from fd (then saved, unless the object changed
 * meanwhile). Blocking: call from the I/O pool. Returns AIS_OK with *out
 * set (free it with store_tar_index_free), or AIS_ERR with errno EINVAL and
 * a message in err when the object is not a valid tar (bad or corrupt
 * header, truncated), or EIO. Members keep archive order; a name that
 * appears twice resolves to its last occurrence, as tar extraction does.
 */
typedef struct store_tar_index store_tar_index_t;
int store_tar_index(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
		    const store_meta_t *m, int fd, store_tar_index_t **out, buf_t *err);
/* The index of the version m describes if it is in memory (no disk read
 * beyond the record's: fit for an event loop), else AIS_ERR. */
int store_tar_index_cached(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
			   const store_meta_t *m, store_tar_index_t **out);
/* Looks a member up by exact name (binary search). Returns AIS_OK with its
 * data offset in the object and its size, or AIS_ERR (errno ENOENT). */
int store_tar_index_find(const store_tar_index_t *idx, const char *name, size_t len,
			 uint64_t *off, uint64_t *size);
/* Number of members; the i-th in archive order (i < count). */
size_t store_tar_index_count(const store_tar_index_t *idx);
void store_tar_index_member(const store_tar_index_t *idx, size_t i, const char **name,
			    size_t *len, uint64_t *off, uint64_t *size);
void store_tar_index_free(store_tar_index_t *idx);

#endif
