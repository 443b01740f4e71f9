/*
 * write.c - the object writer: stream to a temp file, checksum, commit.
 *
 * A write is invisible until store_writer_commit returns AIS_OK, and then it
 * is durable (under fsync policy "always") and complete. A failure at any
 * step leaves the store as it was: the previous version, if any, intact and
 * readable, LevelDB unchanged, no file of the failed write left behind
 * (except where unlink itself fails; start-up removes those, see rule 6).
 *
 * NOTES ON THE DESIGN (durability rules, numbered so comments can cite them)
 *
 *  1. Bytes go only to <mp>/tmp/<h>.<gen>, created O_EXCL; gen is unique per
 *     write and never reused, also across restarts (per-mountpath counter
 *     started from the wall clock in us, above a limit persisted in
 *     LevelDB; store.c), so two writers of one object never share a file
 *     and a rename never replaces a file a record may point to.
 *  2. Every file syscall of the write and delete paths goes through store_io
 *     so that tests inject EIO, ENOSPC, short writes and fsync failures.
 *  3. Data is fsynced before the rename (policy "always"): a renamed file is
 *     never a file whose bytes can vanish at a crash.
 *  4. link(tmp, obj/<xx>/<h>.<gen>), then fsync of obj/<xx>: the name is
 *     durable before LevelDB points to it. A new gen never replaces an
 *     existing file, so the link cannot disturb the live version. The
 *     temp name is removed only after the commit (rule 5): until then it
 *     is the crash hint of the new gen (reconcile.c rule 1).
 *  5. The record {o-key, h-key} is written in one LevelDB batch (sync under
 *     policy "always") under the mountpath's commit mutex, which serializes
 *     every read-modify-write of records (version = old + 1). This write is
 *     the commit point: before it, readers see the old version; after it,
 *     the new one.
 *  6. Only after the record points to the new gen is the old gen unlinked.
 *     A reader that opened the old file keeps reading it whole (POSIX keeps
 *     an unlinked file while open). A crash between 4 and 5, or between 5
 *     and 6, leaves a file no record points to; the start-up reconcile
 *     removes it (reconcile.c).
 *  7. If the bucket was destroyed while the write streamed, the commit fails
 *     ENOENT (checked under the commit mutex, which bucket destroy takes
 *     too), and removes its file.
 *  8. Errors are returned, never fatal: errno is ENOSPC for a full disk
 *     (ENOSPC/EDQUOT, or free space below store.min_free: at begin, with
 *     the size the caller expects (store_writer_reserve) on top, and again
 *     every WRITER_FREE_STEP bytes as they land, so a write of unknown
 *     size stops within a step of the reserve and leaves nothing),
 *     EBADMSG for a checksum mismatch, ENOENT for a missing bucket, EINVAL
 *     for misuse, EIO for everything else.
 *  9. The checksum is of the bytes that landed: written bytes are hashed
 *     from the caller's buffer as they are written; bytes spliced from a
 *     pipe (store_writer_splice, a body that never entered user space) are
 *     hashed once the splice returned, read back from the temp file (the
 *     page cache), so what is verified at the seal is what the file holds.
 *     A pipe that ends short fails the write (EIO), like a failed write.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "aisd/hlc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "store_int.h"
#include "aisd/banned.h"

#define WRITER_HASHERS 4 /* the bucket's type, xxhash, md5, sha256 at most */
#define WRITER_RB (256u << 10) /* bytes per read-back of spliced bytes for their checksum */
#define WRITER_FREE_STEP (8u << 20) /* free space checked again after this many bytes (one statvfs) */

enum writer_state { W_OPEN = 0, W_SEALED, W_FAILED, W_COMMITTED };

struct store_writer {
	store_t *s;
	store_mp_t *mp;
	char *bck, *obj;
	size_t blen, olen;
	char h[STORE_HASH_HEX + 1];
	uint64_t gen;
	uint64_t size;
	int fd;
	bool tmp_exists;   /* tmp path exists and is ours to remove */
	enum writer_state state;
	int err;           /* errno of the failure, when W_FAILED */
	char tmp[STORE_PATH_MAX];
	enum store_cksum bck_type;
	store_hasher_t hs[WRITER_HASHERS]; /* [0] the bucket's type, [1] xxhash, [2..] extra */
	int n_hs;
	char md5[33];        /* after the seal: the MD5 in hex when one of hs was MD5, else "" */
	store_meta_t sealed; /* W_SEALED: checksum and size, verified */
	int64_t origin_ns;   /* a copy of a write of that stamp (store_writer_origin); 0: new */
	int64_t stamp;       /* the write's stamp (store_writer_stamp_of) */
	bool stamp_given;    /* ... the sender's (a copy), kept as it is */
	int64_t md_ns;       /* a copy's metadata time (store_writer_md_time); 0: new */
	bool discard;        /* store_writer_discard: checksummed and counted, not kept */
	char *rb;            /* store_writer_splice: the read-back buffer (WRITER_RB bytes), or NULL */
};

/* errno of a failed file syscall, as the API reports it (rule 8): a full
 * disk is ENOSPC; errnos that mean something else in store.h (ENOENT: no
 * such object) become EIO. */
static int map_errno(int e)
{
	switch (e) {
	case ENOSPC:
	case EDQUOT: return ENOSPC;
	case 0:
	case ENOENT:
	case EEXIST:
	case EBADMSG:
	case EINVAL: return EIO;
	default: return e;
	}
}

/* Marks w failed with errno e: closes and removes its temp file at once (a
 * failed writer holds no disk space), returns AIS_ERR with errno = e. */
static int writer_fail(store_writer_t *w, int e)
{
	w->state = W_FAILED;
	w->err = e;
	if (w->fd >= 0)
		store_io.close(w->fd);
	w->fd = -1;
	if (w->tmp_exists && (store_io.unlink(w->tmp) == 0 || errno == ENOENT))
		w->tmp_exists = false; /* else store_writer_free tries again */
	errno = e;
	return AIS_ERR;
}

static bool writer_has(const store_writer_t *w, enum store_cksum t)
{
	for (int i = 0; i < w->n_hs; i++)
		if (w->hs[i].type == t)
			return true;
	return false;
}

/* Is there store.min_free and more bytes free on mp? AIS_ERR (ENOSPC,
 * logged; or EIO) when not. */
static int check_free(store_t *s, store_mp_t *mp, uint64_t more)
{
	struct statvfs sv;
	if (s->min_free_bytes == 0)
		return AIS_OK;
	if (statvfs(mp->path, &sv) != 0) {
		log_warn("statvfs %s", mp->path);
		errno = EIO;
		return AIS_ERR;
	}
	uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (avail < s->min_free_bytes) {
		log_warnx("%s: %llu bytes free, below store.min_free (%llu): refusing writes", mp->path,
			  (unsigned long long)avail, (unsigned long long)s->min_free_bytes);
		errno = ENOSPC;
		return AIS_ERR;
	}
	if (avail - s->min_free_bytes < more) {
		log_warnx("%s: %llu bytes free: a write of %llu more would go below store.min_free (%llu): refused",
			  mp->path, (unsigned long long)avail, (unsigned long long)more,
			  (unsigned long long)s->min_free_bytes);
		errno = ENOSPC;
		return AIS_ERR;
	}
	return AIS_OK;
}

/* Rule 8: n more bytes land; free space checked again when they cross a
 * WRITER_FREE_STEP boundary. AIS_ERR: w failed (ENOSPC, its file gone). */
static int landed_free(store_writer_t *w, size_t n)
{
	if (w->s->min_free_bytes == 0 || (w->size + n) / WRITER_FREE_STEP == w->size / WRITER_FREE_STEP)
		return AIS_OK;
	if (check_free(w->s, w->mp, 0) != AIS_OK)
		return writer_fail(w, errno);
	return AIS_OK;
}

int store_space_for(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen, uint64_t size)
{
	store_rd(s);
	store_mp_t *mp = store_mp_of(s, bck, blen, obj, olen);
	int rc = check_free(s, mp, size), e = errno;
	store_unrd(s);
	errno = e;
	return rc;
}

int store_writer_reserve(store_writer_t *w, uint64_t size)
{
	if (w->state != W_OPEN) {
		errno = w->state == W_FAILED ? w->err : EINVAL;
		return AIS_ERR;
	}
	if (size > w->size && check_free(w->s, w->mp, size - w->size) != AIS_OK)
		return writer_fail(w, errno);
	return AIS_OK;
}

int store_writer_begin(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
		       store_writer_t **out)
{
	store_bucket_t b;
	if (store_bucket_get(s, bck, blen, &b) != AIS_OK)
		return AIS_ERR; /* errno ENOENT or EIO */
	/* users keeps a detach from closing mp under this writer (mountpath.c) */
	store_rd(s);
	store_mp_t *mp = store_mp_of(s, bck, blen, obj, olen);
	atomic_fetch_add(&mp->users, 1);
	store_unrd(s);
	if (check_free(s, mp, 0) != AIS_OK) {
		atomic_fetch_sub(&mp->users, 1);
		return AIS_ERR;
	}

	store_writer_t *w = xcalloc(1, sizeof(*w));
	w->s = s;
	w->mp = mp;
	w->bck = xstrndup(bck, blen);
	w->obj = xstrndup(obj, olen);
	w->blen = blen;
	w->olen = olen;
	w->fd = -1;
	w->stamp = hlc_now(); /* a client's write: stamped as it begins (store_writer_stamp_of) */
	buf_t uname = BUF_INIT;
	buf_add(&uname, bck, blen);
	buf_addch(&uname, '/');
	buf_add(&uname, obj, olen);
	store_uname_hash(uname.ptr, uname.len, w->h);
	buf_free(&uname);
	if (store_gen_alloc(s, mp, &w->gen) != AIS_OK) {
		int e = errno == ENOSPC ? ENOSPC : EIO;
		store_writer_free(w);
		errno = e;
		return AIS_ERR;
	}
	store_path_tmp(w->tmp, sizeof(w->tmp), mp, w->h, w->gen);
	w->bck_type = b.cksum_type;
	store_hasher_init(&w->hs[w->n_hs++], b.cksum_type);
	if (b.cksum_type != CKSUM_XXHASH)
		store_hasher_init(&w->hs[w->n_hs++], CKSUM_XXHASH);

	/* (read too: spliced bytes are checksummed from the page cache) */
	w->fd = store_io.open(w->tmp, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		int e = map_errno(errno);
		log_warn("create %s", w->tmp);
		/* the disk went read-only or its directories are gone: the
		 * mountpath goes out of use (a later PUT lands elsewhere); an
		 * EIO may pass and only fails this write */
		if (errno == EROFS || errno == ENOENT || errno == ENOTDIR) {
			char why[300];
			snprintf(why, sizeof(why), "creating a file in its tmp/: %s", strerror(errno));
			store_mp_fault(s, mp, why);
		}
		w->fd = -1;
		store_writer_free(w);
		errno = e;
		return AIS_ERR;
	}
	w->tmp_exists = true;
	*out = w;
	return AIS_OK;
}

int store_writer_also(store_writer_t *w, enum store_cksum type)
{
	if (w->state != W_OPEN || w->size > 0 || type < CKSUM_NONE || type > CKSUM_SHA256) {
		errno = EINVAL;
		return AIS_ERR;
	}
	if (type != CKSUM_NONE && !writer_has(w, type))
		store_hasher_init(&w->hs[w->n_hs++], type);
	return AIS_OK;
}

const char *store_writer_md5(const store_writer_t *w) { return w->md5; }

void store_writer_origin(store_writer_t *w, int64_t stamp)
{
	w->origin_ns = stamp;
	store_writer_stamp(w, stamp);
}

void store_writer_stamp(store_writer_t *w, int64_t stamp)
{
	if (stamp <= 0)
		return;
	w->stamp = stamp;
	w->stamp_given = true;
	hlc_observe(stamp); /* what this node stamps next comes after it */
}

int64_t store_writer_stamp_of(const store_writer_t *w) { return w->stamp; }

void store_writer_after(store_writer_t *w, int64_t stamp)
{
	if (w->stamp_given || (w->state != W_OPEN && w->state != W_SEALED) || stamp < w->stamp)
		return;
	hlc_observe(stamp);
	w->stamp = hlc_now();
	if (w->state == W_SEALED)
		w->sealed.stamp = w->stamp;
}

void store_writer_md_time(store_writer_t *w, int64_t md_ns) { w->md_ns = md_ns > 0 ? md_ns : 0; }

int store_writer_write(store_writer_t *w, const void *p, size_t n)
{
	const char *q = p;
	size_t left = n;
	if (w->state != W_OPEN) {
		errno = w->state == W_FAILED ? w->err : EINVAL;
		return AIS_ERR;
	}
	while (left > 0 && !w->discard) {
		ssize_t r = store_io.write(w->fd, q, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r == 0 ? EIO : map_errno(errno);
			errno = e;
			log_warn("write %s", w->tmp);
			return writer_fail(w, e);
		}
		q += r;
		left -= (size_t)r;
	}
	for (int i = 0; i < w->n_hs; i++)
		store_hasher_update(&w->hs[i], p, n);
	if (landed_free(w, n) != AIS_OK)
		return AIS_ERR;
	w->size += n;
	return AIS_OK;
}

/* Rule 9: the n bytes just spliced at off, read back from the page cache
 * in WRITER_RB blocks into every hasher. */
static int hash_landed(store_writer_t *w, uint64_t off, size_t n)
{
	if (!w->rb)
		w->rb = xmalloc(WRITER_RB);
	while (n > 0) {
		ssize_t r = pread(w->fd, w->rb, MIN(n, (size_t)WRITER_RB), (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			log_warn("read back %s", w->tmp);
			return AIS_ERR;
		}
		for (int i = 0; i < w->n_hs; i++)
			store_hasher_update(&w->hs[i], w->rb, (size_t)r);
		off += (uint64_t)r;
		n -= (size_t)r;
	}
	return AIS_OK;
}

int store_writer_splice(store_writer_t *w, int pfd, size_t n)
{
	size_t left = n;
	if (w->state != W_OPEN || w->discard) {
		errno = w->state == W_FAILED ? w->err : EINVAL;
		return AIS_ERR;
	}
	while (left > 0) {
		ssize_t r = store_io.splice(pfd, w->fd, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) { /* 0 or EAGAIN: the pipe ended before n bytes */
			int e = r == 0 || errno == EAGAIN ? EIO : map_errno(errno);
			if (r == 0 || errno == EAGAIN)
				log_warnx("splice into %s: the pipe ended %zu bytes short", w->tmp, left);
			else
				log_warn("splice into %s", w->tmp);
			return writer_fail(w, e);
		}
		left -= (size_t)r;
	}
	if (hash_landed(w, w->size, n) != AIS_OK)
		return writer_fail(w, EIO);
	if (landed_free(w, n) != AIS_OK)
		return AIS_ERR;
	w->size += n;
	return AIS_OK;
}

/* fsync of a directory, so that a rename or unlink in it is durable. */
static int fsync_dir(const char *dir)
{
	int fd = store_io.open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0) {
		int e = map_errno(errno);
		log_warn("open directory %s", dir);
		errno = e;
		return AIS_ERR;
	}
	int rc = store_io.fsync(fd);
	int e = map_errno(errno);
	if (rc != 0)
		log_warn("fsync directory %s", dir);
	store_io.close(fd);
	errno = e;
	return rc == 0 ? AIS_OK : AIS_ERR;
}

/* Verifies the checksums: fills m->cksum with the bucket's type. */
static int writer_verify(store_writer_t *w, enum store_cksum want_type, const char *want_hex,
			 store_meta_t *m)
{
	char hex[WRITER_HASHERS][STORE_CKSUM_HEX_MAX];
	int rc = AIS_OK;
	for (int i = 0; i < w->n_hs; i++) {
		store_hasher_final(&w->hs[i], hex[i]);
		if (w->hs[i].type == CKSUM_MD5 && strlen(hex[i]) == 32)
			memcpy(w->md5, hex[i], 33);
	}
	m->cksum_type = w->bck_type;
	snprintf(m->cksum, sizeof(m->cksum), "%s", hex[0]);
	if (want_type == CKSUM_NONE)
		return AIS_OK;
	if (want_type < CKSUM_NONE || want_type > CKSUM_SHA256 || !want_hex) {
		errno = EINVAL;
		return AIS_ERR;
	}
	int i;
	for (i = 0; i < w->n_hs && w->hs[i].type != want_type; i++)
		;
	if (i == w->n_hs) {
		log_warnx("%s/%s: cannot verify a %s checksum: the bucket's type is %s and "
			  "store_writer_also() was not called before writing",
			  w->bck, w->obj, store_cksum_name(want_type), store_cksum_name(w->bck_type));
		errno = EINVAL;
		rc = AIS_ERR;
	} else if (strlen(want_hex) != strlen(hex[i]) || strcasecmp(want_hex, hex[i]) != 0) {
		log_warnx("%s/%s: %s checksum mismatch: client %s, data %s", w->bck, w->obj,
			  store_cksum_name(want_type), want_hex, hex[i]);
		errno = EBADMSG;
		rc = AIS_ERR;
	}
	return rc;
}

/* Rules 5-7: under the commit mutex, point the record at the new gen and
 * unlink the old one. Returns AIS_OK, or AIS_ERR with errno (nothing
 * changed). */
static int writer_record(store_writer_t *w, store_rec_t *nr)
{
	store_t *s = w->s;
	store_mp_t *mp = w->mp;
	store_bucket_t b;
	store_rec_t old;
	buf_t okey = BUF_INIT, hkey = BUF_INIT, val = BUF_INIT;
	char oldpath[STORE_PATH_MAX];
	int rc = AIS_ERR, have_old = 0;

	store_key_obj(&okey, w->bck, w->blen, w->obj, w->olen);
	store_key_hash(&hkey, w->h);
	pthread_mutex_lock(&mp->commit_mu);
	if (store_bucket_get(s, w->bck, w->blen, &b) != AIS_OK) /* rule 7 */
		goto out_unlock;
	if (store_rec_get(s, mp, &okey, &old) == AIS_OK)
		have_old = 1;
	else if (errno != ENOENT)
		goto out_unlock;
	if (!have_old && w->origin_ns && store_tomb_newer(s, mp, w->bck, w->blen, w->obj, w->olen, w->origin_ns)) {
		errno = ESTALE; /* a client deleted it after this copy was written */
		goto out_unlock;
	}
	if (have_old && !w->stamp_given && nr->m.stamp <= store_stamp(&old.m)) {
		/* a client's write over a copy stamped later (by a peer whose clock
		 * this node had not seen yet): this one came last here */
		hlc_observe(store_stamp(&old.m));
		nr->m.stamp = hlc_now();
	}
	nr->m.version = have_old ? old.m.version + 1 : 1;
	if (!have_old && store_nmp(s) > 1) { /* a copy the resilver has not moved yet */
		store_rec_t o2;
		store_rd(s);
		for (int i = 0; i < store_nmp(s); i++)
			if (&s->mp[i] != mp && store_mp_open(s, i) && store_rec_get(s, &s->mp[i], &okey, &o2) == AIS_OK) {
				nr->m.version = o2.m.version + 1;
				break;
			}
		store_unrd(s);
	}
	store_rec_encode(&val, nr);
	leveldb_writebatch_t *batch = leveldb_writebatch_create();
	leveldb_writebatch_put(batch, okey.ptr, okey.len, val.ptr, val.len);
	buf_reset(&val);
	buf_add(&val, w->bck, w->blen);
	buf_addch(&val, '/');
	buf_add(&val, w->obj, w->olen);
	leveldb_writebatch_put(batch, hkey.ptr, hkey.len, val.ptr, val.len);
	if (have_old) { /* the old gen's tar index (tarindex.c), if any */
		store_key_tar(&val, w->bck, w->blen, w->obj, w->olen, old.gen);
		leveldb_writebatch_delete(batch, val.ptr, val.len);
	}
	/* reconcile.c rule 2: the old gen may outlive its record until it is
	 * unlinked */
	if (have_old && old.gen != w->gen)
		store_hint_batch(batch, true, w->h, old.gen);
	store_hint_fold(mp, batch); /* earlier gens' hints whose files are gone */
	rc = store_db_write(s, mp, s->wo_commit, batch, "commit");
	leveldb_writebatch_destroy(batch);
	if (rc == AIS_OK)
		store_count(mp, have_old ? 0 : 1,
			    (int64_t)nr->m.size - (have_old ? (int64_t)old.m.size : 0));
	/* A mountpath attached or detached while this write streamed: the
	 * object may now belong on another mountpath; the resilver looks again. */
	if (rc == AIS_OK && (mp->state != MP_ACTIVE || store_mp_of(s, w->bck, w->blen, w->obj, w->olen) != mp))
		atomic_fetch_add(&s->layout_gen, 1);
	if (rc == AIS_OK && have_old && old.gen != w->gen) { /* rule 6 */
		store_path_obj(oldpath, sizeof(oldpath), mp, w->h, old.gen);
		if (store_io.unlink(oldpath) != 0 && errno != ENOENT)
			log_warn("unlink old version %s (start-up will remove it)", oldpath);
		else
			store_hint_done(s, mp, w->h, old.gen);
	}
out_unlock:
	pthread_mutex_unlock(&mp->commit_mu);
	buf_free(&okey);
	buf_free(&hkey);
	buf_free(&val);
	return rc;
}

int store_writer_commit(store_writer_t *w, enum store_cksum want_type, const char *want_hex,
			const char *custom, store_meta_t *out)
{
	store_t *s = w->s;
	store_rec_t nr;
	char path[STORE_PATH_MAX], dir[STORE_PATH_MAX];
	int e;

	if ((w->state != W_OPEN && w->state != W_SEALED) || w->discard) {
		errno = w->state == W_FAILED ? w->err : EINVAL;
		return AIS_ERR;
	}
	memset(&nr, 0, sizeof(nr));
	if (custom && strlen(custom) >= sizeof(nr.m.custom)) {
		log_warnx("%s/%s: custom metadata too long (%zu bytes)", w->bck, w->obj, strlen(custom));
		return writer_fail(w, EINVAL);
	}
	if (w->state == W_SEALED) {
		nr.m = w->sealed;
	} else if (store_writer_seal(w, want_type, want_hex, &nr.m) != AIS_OK) {
		return AIS_ERR;
	}
	int fd = w->fd;
	w->fd = -1; /* closed even when close fails */
	if (store_io.close(fd) != 0) {
		e = map_errno(errno);
		log_warn("close %s", w->tmp);
		return writer_fail(w, e);
	}

	store_path_obj(path, sizeof(path), w->mp, w->h, w->gen);
	/* rule 4; the temp name stays until the commit: the crash hint of this
	 * gen (reconcile.c rule 1) */
	if (store_io.link(w->tmp, path) != 0) {
		e = map_errno(errno);
		log_warn("link %s -> %s", w->tmp, path);
		return writer_fail(w, e);
	}
	snprintf(dir, sizeof(dir), "%s/obj/%.2s", w->mp->path, w->h);
	if (s->fsync == CONF_FSYNC_ALWAYS && fsync_dir(dir) != AIS_OK) {
		e = errno;
		goto out_unlink;
	}

	nr.gen = w->gen;
	nr.m.size = w->size;
	nr.m.mtime_ns = time_now_ns();
	nr.m.atime_ns = nr.m.mtime_ns;
	nr.m.md_ns = w->md_ns;
	nr.m.stamp = w->stamp;
	if (custom)
		snprintf(nr.m.custom, sizeof(nr.m.custom), "%s", custom);
	if (writer_record(w, &nr) != AIS_OK) { /* rule 5 */
		e = errno;
		goto out_unlink;
	}
	w->state = W_COMMITTED;
	if (store_io.unlink(w->tmp) == 0 || errno == ENOENT) /* named by its record now */
		w->tmp_exists = false; /* else store_writer_free tries again */
	if (out)
		*out = nr.m;
	return AIS_OK;

out_unlink:
	if (store_io.unlink(path) != 0 && errno != ENOENT) {
		log_warn("unlink %s (start-up will remove it)", path);
		w->tmp_exists = false; /* the temp name stays: its crash hint */
	}
	return writer_fail(w, e);
}

int store_writer_seal(store_writer_t *w, enum store_cksum want_type, const char *want_hex, store_meta_t *out)
{
	if (w->state == W_SEALED) { /* sealed already (a write-through before the copies) */
		if (out)
			*out = w->sealed;
		return AIS_OK;
	}
	if (w->state != W_OPEN) {
		errno = w->state == W_FAILED ? w->err : EINVAL;
		return AIS_ERR;
	}
	memset(&w->sealed, 0, sizeof(w->sealed));
	if (writer_verify(w, want_type, want_hex, &w->sealed) != AIS_OK)
		return writer_fail(w, errno);
	w->sealed.stamp = w->stamp; /* its replicas carry it (store_writer_stamp_of) */
	if (w->s->fsync == CONF_FSYNC_ALWAYS && store_io.fsync(w->fd) != 0) { /* rule 3 */
		int e = map_errno(errno);
		log_warn("fsync %s", w->tmp);
		return writer_fail(w, e);
	}
	w->sealed.size = w->size;
	w->state = W_SEALED;
	if (out)
		*out = w->sealed;
	return AIS_OK;
}

void store_writer_discard(store_writer_t *w)
{
	if (!w->size)
		w->discard = true;
}

int store_writer_open_tmp(store_writer_t *w)
{
	if ((w->state != W_SEALED && w->state != W_OPEN) || w->discard) {
		errno = EINVAL;
		return -1;
	}
	int fd = open(w->tmp, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		errno = EIO;
	return fd;
}

void store_writer_free(store_writer_t *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		store_io.close(w->fd);
	if (w->tmp_exists && store_io.unlink(w->tmp) != 0 && errno != ENOENT)
		log_warn("unlink %s (start-up will remove it)", w->tmp);
	for (int i = 0; i < w->n_hs; i++)
		store_hasher_free(&w->hs[i]);
	free(w->rb);
	atomic_fetch_sub(&w->mp->users, 1);
	free(w->bck);
	free(w->obj);
	free(w);
}
