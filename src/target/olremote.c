/*
 * olremote.c - the object layer's remote buckets (ol_int.h): cold reads
 * fetched from the remote while they are sent, validate_warm_get and
 * sync, write-through and delete-through.
 *
 * A cold read starts (or joins) a "fill": one thread that GETs the object
 * from the remote into a store writer (the same temp file, checksum and
 * commit as a PUT) and counts the bytes written. Readers (GETs answered
 * with ol_send) stream the temp file's bytes to their clients as they
 * land (grow.h); blocking callers (ol_open_sync: GetBatch, archive reads)
 * wait for the commit.
 *
 * NOTES ON THE DESIGN (numbered invariants):
 *  1. One fetch per object: fills are in one table by bucket/object; a
 *     cold read joins the fill in progress instead of starting another.
 *  2. No partial object is ever visible: the object is committed only
 *     when the remote answered 200 with exactly the size its HEAD gave;
 *     otherwise the writer is dropped (its temp file too, and a kill -9
 *     leaves a temp file that start-up removes).
 *  3. Never a mix of versions: the GET carries If-Match with the ETag the
 *     readers were promised (their Content-Length and ETag came from the
 *     same HEAD); a remote that changed the object meanwhile answers 412
 *     and the fill fails; readers whose bytes are not all there are cut
 *     short (the client sees fewer bytes than Content-Length).
 *  4. A Range read of a cold object fetches only that range (If-Match
 *     too), into an unnamed temp file: nothing of it is cached; the next
 *     whole read caches the object. A HEAD of a cold object is the
 *     remote's HEAD only: nothing is fetched.
 *  5. Warm copies are served without asking the remote unless the
 *     bucket's validate_warm_get is on; then a changed ETag refetches, a
 *     deletion there deletes here when sync is on, and a remote that does
 *     not answer leaves the cached copy served.
 *  6. A write is acknowledged only after the remote took it (PUT from the
 *     sealed temp file) and then the local commit; a delete removes the
 *     remote object first.
 *  7. A blob download (objects of the remote's blob_min or more): BLOB_WORKERS
 *     threads GET BLOB_CHUNK ranges at once (each with If-Match, a range
 *     retried while nothing of it was written); the ranges are written in
 *     order, so the checksum, the readers and rule 2 see one stream.
 *     Memory: BLOB_WORKERS chunks (a range answer longer than its range
 *     ends that GET: backend.c rule 5).
 *  8. One remote cannot starve the others: at most remote.max_cold_reads
 *     fills of one remote run at once (FILLS_MAX of all); a cold read
 *     beyond that is 503 at once, naming the remote. A fill is bounded in
 *     time by the remote.* deadlines (xfer.c rule 3).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ec_int.h"
#include "grow.h"
#include "ol_int.h"
#include "aisd/hrw.h"
#include "aisd/log.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "target_int.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define FILLS_MAX 512
#define BLOB_CHUNK (8u << 20)
#define BLOB_WORKERS 4

struct fill {
	/* set before the thread starts, read-only after */
	target_t *t;
	bk_bucket_t bk;
	char *bck, *obj;
	size_t blen, olen;
	bool whole;       /* the object, into sw; else [off, off+len) into wfd */
	uint64_t off, len;
	bk_obj_t want;    /* the remote's size and ETag, from its HEAD */
	store_writer_t *sw;
	int wfd;
	buf_t msg;        /* the fill thread's: why it fails */
	/* shared */
	grow_t g;         /* the bytes, read side in g.fd (set before g.have moves) */
	_Atomic int refs;
	struct fill *next; /* in the table (whole fills) */
};

struct olr_reader {
	struct fill *f;   /* NULL: lazy (HEAD, or a range fetched at ol_send) */
	target_t *t;
	bk_bucket_t *bk;  /* lazy: for the range */
	char *obj;
	size_t olen;
	bk_obj_t want;
	http_req_t *req;
	int fd;           /* the placeholder the caller was given */
	struct olr_reader *lnext; /* in this worker's attached list */
};

static pthread_mutex_t tbl_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tbl_cv = PTHREAD_COND_INITIALIZER;
static struct fill *tbl;
static int active;            /* fill threads running */
static atomic_bool stopping;

static __thread struct olr_reader *attached; /* this worker's readers not sent yet */

/* Rule 8: fills running per remote (by alias), under tbl_mu. */
static struct {
	char alias[BK_ALIAS_MAX + 1];
	uint64_t n;
} per_remote[64];

/* Counts a fill of remote alias, or false when it has its share (or, in
 * the rare case of more than 64 remotes with fills at once, no slot). */
static bool remote_take(const char *alias)
{
	size_t i, free_slot = ARRAY_SIZE(per_remote);
	for (i = 0; i < ARRAY_SIZE(per_remote); i++) {
		if (per_remote[i].n && !strcmp(per_remote[i].alias, alias))
			break;
		if (!per_remote[i].n && free_slot == ARRAY_SIZE(per_remote))
			free_slot = i;
	}
	if (i == ARRAY_SIZE(per_remote)) {
		if (free_slot == ARRAY_SIZE(per_remote))
			return false;
		i = free_slot;
		snprintf(per_remote[i].alias, sizeof(per_remote[i].alias), "%s", alias);
	}
	if (per_remote[i].n >= bk_limits()->cold_reads)
		return false;
	per_remote[i].n++;
	return true;
}

static void remote_put(const char *alias)
{
	for (size_t i = 0; i < ARRAY_SIZE(per_remote); i++)
		if (per_remote[i].n && !strcmp(per_remote[i].alias, alias)) {
			per_remote[i].n--;
			return;
		}
}

/* --- the backend of a bucket --------------------------------------------------- */

bk_bucket_t *olr_backend(target_t *t, sv_t bck, int *err, buf_t *msg)
{
	bk_bucket_t tmp;
	*err = 0;
	int rc = bk_bucket_of(t->base.cl, bck, &tmp, msg);
	if (rc == AIS_DONE)
		return NULL;
	if (rc != AIS_OK) {
		*err = errno;
		return NULL;
	}
	bk_bucket_t *b = xmalloc(sizeof(*b));
	*b = tmp;
	return b;
}

/* The remote ETag a cached copy was stored with ("" none). */
static void cached_etag(const store_meta_t *m, char *out, size_t outsz)
{
	const char *p = strstr(m->custom, "bk.etag=");
	out[0] = '\0';
	if (!p || (p != m->custom && p[-1] != ','))
		return;
	p += 8;
	size_t n = strcspn(p, ",");
	snprintf(out, outsz, "%.*s", (int)MIN(n, outsz - 1), p);
}

/* custom metadata of a copy of the remote's version o: its ETag as the S3
 * ETag and as the one validate_warm_get compares (only [A-Za-z0-9._-]
 * kept: ETags are hex, "hex-N" or quoted-string tokens). */
static void remote_custom(const char *etag, const char *base, buf_t *out)
{
	char e[BK_ETAG_MAX];
	size_t k = 0;
	for (const char *p = etag; *p && k + 1 < sizeof(e); p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		    *p == '.' || *p == '_')
			e[k++] = *p;
	e[k] = '\0';
	if (base && *base) {
		buf_addstr(out, base);
		if (e[0])
			buf_addf(out, ",bk.etag=%s", e);
	} else if (e[0]) {
		buf_addf(out, "s3.etag=%s,bk.etag=%s", e, e);
	}
}

/* --- fills ------------------------------------------------------------------- */

static void fill_unref(struct fill *f)
{
	if (atomic_fetch_sub(&f->refs, 1) != 1)
		return;
	grow_destroy(&f->g);
	if (f->wfd >= 0)
		close(f->wfd);
	store_writer_free(f->sw);
	buf_free(&f->msg);
	free(f->bck);
	free(f->obj);
	free(f);
}

static int fill_sink(void *arg, const char *p, size_t n)
{
	struct fill *f = arg;
	if (atomic_load(&stopping))
		return AIS_ERR;
	if (atomic_load(&f->g.have) + n > f->len)
		return AIS_ERR; /* more than promised */
	if (f->whole ? store_writer_write(f->sw, p, n) != AIS_OK : fd_write_all(f->wfd, p, n) != AIS_OK)
		return AIS_ERR;
	grow_add(&f->g, n);
	return AIS_OK;
}

/* --- blob download (rule 7) ---------------------------------------------------- */

struct blob {
	struct fill *f;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t next_fetch, next_write, nchunks;
	bool failed;
	int err;
	buf_t msg;
};

static int chunk_sink(void *arg, const char *p, size_t n)
{
	buf_add(arg, p, n);
	return atomic_load(&stopping) ? AIS_ERR : AIS_OK;
}

static void *blob_worker(void *arg)
{
	struct blob *b = arg;
	struct fill *f = b->f;
	buf_t buf = BUF_INIT, msg = BUF_INIT;
	for (;;) {
		pthread_mutex_lock(&b->mu);
		if (b->failed || b->next_fetch == b->nchunks) {
			pthread_mutex_unlock(&b->mu);
			break;
		}
		uint64_t k = b->next_fetch++, off = k * BLOB_CHUNK, len = MIN(BLOB_CHUNK, f->len - off);
		pthread_mutex_unlock(&b->mu);
		int rc = AIS_ERR, e = EIO;
		for (int attempt = 0; attempt < 3 && !atomic_load(&stopping); attempt++) {
			bk_obj_t got;
			buf_reset(&buf);
			buf_grow(&buf, len); /* once: an answer never holds more than len (backend.c rule 5) */
			buf_reset(&msg);
			rc = bk_get(&f->bk, (sv_t){f->obj, f->olen}, off, len, f->want.etag, chunk_sink, &buf, &got, &msg);
			e = errno;
			if (rc == AIS_OK && buf.len != len) {
				rc = AIS_ERR;
				e = EREMOTEIO;
				buf_addf(&msg, "remote \"%s\": range at %llu: %zu of %llu bytes", f->bk.r.alias,
					 (unsigned long long)off, buf.len, (unsigned long long)len);
			}
			if (rc == AIS_OK || (e != EHOSTUNREACH && e != EREMOTEIO))
				break;
			usleep(attempt ? 400000 : 100000);
		}
		pthread_mutex_lock(&b->mu);
		while (!b->failed && b->next_write != k)
			pthread_cond_wait(&b->cv, &b->mu);
		if (!b->failed && rc != AIS_OK) {
			b->failed = true;
			b->err = e;
			buf_addsv(&b->msg, sv_of(&msg));
		}
		bool mine = !b->failed;
		pthread_mutex_unlock(&b->mu);
		if (mine && fill_sink(f, buf.ptr, buf.len) != AIS_OK) {
			pthread_mutex_lock(&b->mu);
			b->failed = true;
			b->err = errno ? errno : EIO;
			buf_addf(&b->msg, "storing the fetched object: %s", strerror(b->err));
			pthread_mutex_unlock(&b->mu);
		}
		pthread_mutex_lock(&b->mu);
		b->next_write++;
		pthread_cond_broadcast(&b->cv);
		pthread_mutex_unlock(&b->mu);
	}
	buf_free(&buf);
	buf_free(&msg);
	return NULL;
}

/* The whole object in parallel ranges: AIS_OK, or AIS_ERR with *e and f->msg. */
static int blob_fetch(struct fill *f, int *e)
{
	struct blob b = {.f = f, .nchunks = (f->len + BLOB_CHUNK - 1) / BLOB_CHUNK};
	pthread_t th[BLOB_WORKERS];
	int n = 0;
	pthread_mutex_init(&b.mu, NULL);
	pthread_cond_init(&b.cv, NULL);
	for (int i = 0; i < BLOB_WORKERS; i++)
		if (pthread_create(&th[n], NULL, blob_worker, &b) == 0)
			n++;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (!n || (!b.failed && b.next_write != b.nchunks)) {
		b.failed = true;
		b.err = EAGAIN;
		buf_addstr(&b.msg, "blob download: no worker ran");
	}
	buf_addsv(&f->msg, sv_of(&b.msg));
	if (!b.failed)
		log_info("blob download %s/%.*s: %llu bytes in %llu ranges", f->bk.bucket, (int)MIN(f->olen, 256), f->obj,
			 (unsigned long long)f->len, (unsigned long long)b.nchunks);
	*e = b.err;
	buf_free(&b.msg);
	pthread_cond_destroy(&b.cv);
	pthread_mutex_destroy(&b.mu);
	return b.failed ? AIS_ERR : AIS_OK;
}

/* The bucket's other copies of an object just fetched (mirror on), sent
 * from the committed copy like a replicated PUT's. Best effort, logged:
 * a holder that lacks its copy fetches it on a read anyway. */
static void fetched_copies(struct fill *f)
{
	cluster_where_t w;
	char urls[HRW_TOP_MAX][CMAP_URL_MAX + 1];
	cluster_where(f->t->base.cl, (sv_t){f->bck, f->blen}, (sv_t){f->obj, f->olen}, true, &w, urls, HRW_TOP_MAX);
	for (size_t i = 0; i < w.n; i++) {
		if ((int)i == w.self)
			continue;
		buf_t msg = BUF_INIT;
		if (tgt_send_copy(f->t, urls[i], f->bck, f->blen, f->obj, f->olen, "replica", w.cmap_version, w.bmd_version, false,
				  NULL, &msg) != AIS_OK)
			log_warnx("cold GET %.*s/%.*s: no copy on %s: %s", (int)f->blen, f->bck, (int)MIN(f->olen, 256),
				  f->obj, urls[i], msg.ptr ? msg.ptr : "");
		buf_free(&msg);
	}
}

/* Opens the writer (whole) or the unnamed temp file (range) and rfd. */
static int fill_open(struct fill *f)
{
	if (f->whole) {
		/* the whole size from the remote's HEAD, reserved: not only the
		 * space at the start (the writer checks again as bytes land) */
		if (store_writer_begin(f->t->store, f->bck, f->blen, f->obj, f->olen, &f->sw) != AIS_OK ||
		    store_writer_reserve(f->sw, f->len) != AIS_OK)
			return AIS_ERR;
		f->g.fd = store_writer_open_tmp(f->sw);
		return f->g.fd >= 0 ? AIS_OK : AIS_ERR;
	}
	const char *dir = tgt_state_dir(f->t->conf);
	f->wfd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (f->wfd < 0)
		return AIS_ERR;
	f->g.fd = dup(f->wfd);
	return f->g.fd >= 0 ? AIS_OK : AIS_ERR;
}

static void *fill_main(void *arg)
{
	struct fill *f = arg;
	sv_t obj = {f->obj, f->olen};
	bk_obj_t got;
	int rc = AIS_ERR, e = EIO;

	if (fill_open(f) != AIS_OK) {
		e = errno ? errno : EIO;
		buf_addf(&f->msg, "cannot store the fetched object: %s", strerror(e));
		goto out;
	}
	uint64_t blob_min = f->bk.r.blob_min ? f->bk.r.blob_min : BK_BLOB_MIN_DEFAULT;
	if (f->whole && f->len >= blob_min && f->len > BLOB_CHUNK) {
		rc = blob_fetch(f, &e);
		goto fetched;
	}
	for (int attempt = 0;; attempt++) {
		buf_reset(&f->msg);
		rc = bk_get(&f->bk, obj, f->whole ? 0 : f->off, f->whole ? 0 : f->len, f->want.etag, fill_sink, f, &got,
			    &f->msg);
		e = errno;
		/* retried only while nothing was written (rule 1 of backend.c) */
		if (rc == AIS_OK || attempt == 2 || atomic_load(&f->g.have) || atomic_load(&stopping) ||
		    (e != EHOSTUNREACH && e != EREMOTEIO))
			break;
		usleep(attempt ? 400000 : 100000);
	}
fetched:
	if (rc == AIS_OK && atomic_load(&f->g.have) != f->len) {
		buf_reset(&f->msg);
		buf_addf(&f->msg, "remote \"%s\": %s/%.*s: got %llu of %llu bytes", f->bk.r.alias, f->bk.bucket,
			 (int)MIN(f->olen, 256), f->obj, (unsigned long long)atomic_load(&f->g.have),
			 (unsigned long long)f->len);
		rc = AIS_ERR;
		e = EREMOTEIO;
	}
	if (rc == AIS_OK && f->whole) {
		buf_t custom = BUF_INIT;
		remote_custom(f->want.etag, NULL, &custom);
		rc = store_writer_commit(f->sw, CKSUM_NONE, NULL, custom.ptr, NULL);
		e = errno;
		buf_free(&custom);
		if (rc != AIS_OK)
			buf_addf(&f->msg, "storing the fetched object: %s", strerror(e));
		else
			fetched_copies(f);
	}
	if (rc != AIS_OK && e == ESTALE)
		log_info("cold GET %.*s/%.*s: %s", (int)f->blen, f->bck, (int)MIN(f->olen, 256), f->obj, f->msg.ptr);
out:
	pthread_mutex_lock(&tbl_mu);
	for (struct fill **pp = &tbl; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	pthread_mutex_unlock(&tbl_mu);
	grow_end(&f->g, rc == AIS_OK ? 0 : e ? e : EIO, f->msg.ptr);
	char alias[BK_ALIAS_MAX + 1];
	snprintf(alias, sizeof(alias), "%s", f->bk.r.alias);
	fill_unref(f);
	pthread_mutex_lock(&tbl_mu);
	remote_put(alias);
	active--;
	pthread_cond_broadcast(&tbl_cv);
	pthread_mutex_unlock(&tbl_mu);
	return NULL;
}

static struct fill *fill_new(target_t *t, const bk_bucket_t *b, sv_t bck, sv_t obj, const bk_obj_t *want, bool whole,
			     uint64_t off, uint64_t len)
{
	struct fill *f = xcalloc(1, sizeof(*f));
	f->t = t;
	f->bk = *b;
	f->bck = xstrndup(bck.ptr, bck.len);
	f->blen = bck.len;
	f->obj = xstrndup(obj.ptr, obj.len);
	f->olen = obj.len;
	f->whole = whole;
	f->off = off;
	f->len = whole ? want->size : len;
	f->want = *want;
	f->wfd = -1;
	grow_init(&f->g);
	atomic_init(&f->refs, 2); /* the thread's and the caller's */
	return f;
}

/* Starts f's thread (active counted under tbl_mu by the caller). AIS_ERR:
 * none started (f unreferenced once). */
static int fill_start(struct fill *f)
{
	pthread_t th;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&th, &a, fill_main, f);
	pthread_attr_destroy(&a);
	if (rc != 0) {
		pthread_mutex_lock(&tbl_mu);
		for (struct fill **pp = &tbl; *pp; pp = &(*pp)->next)
			if (*pp == f) {
				*pp = f->next;
				break;
			}
		remote_put(f->bk.r.alias);
		active--;
		pthread_mutex_unlock(&tbl_mu);
		fill_unref(f);
		errno = EAGAIN;
		return AIS_ERR;
	}
	return AIS_OK;
}

static struct fill *tbl_find(sv_t bck, sv_t obj)
{
	for (struct fill *f = tbl; f; f = f->next)
		if (f->blen == bck.len && f->olen == obj.len && !memcmp(f->bck, bck.ptr, bck.len) &&
		    !memcmp(f->obj, obj.ptr, obj.len))
			return f;
	return NULL;
}

/* The fill of the whole object (rule 1): the one in progress, or a new one
 * for the version want (HEADed by the caller). A reference for the caller. */
static struct fill *fill_whole(target_t *t, const bk_bucket_t *b, sv_t bck, sv_t obj, const bk_obj_t *want,
			       buf_t *msg)
{
	pthread_mutex_lock(&tbl_mu);
	struct fill *f = tbl_find(bck, obj);
	if (f) {
		atomic_fetch_add(&f->refs, 1);
		pthread_mutex_unlock(&tbl_mu);
		return f;
	}
	if (active >= FILLS_MAX || atomic_load(&stopping)) {
		pthread_mutex_unlock(&tbl_mu);
		buf_addf(msg, "%d remote fetches in progress: try again", FILLS_MAX);
		errno = EHOSTUNREACH;
		return NULL;
	}
	/* the whole size reserved before any reader is answered (a 507 then,
	 * not a body cut short); the writer checks again as bytes land */
	if (store_space_for(t->store, bck.ptr, bck.len, obj.ptr, obj.len, want->size) != AIS_OK) {
		int e = errno;
		pthread_mutex_unlock(&tbl_mu);
		buf_addf(msg, "no room for its %llu bytes above store.min_free", (unsigned long long)want->size);
		errno = e;
		return NULL;
	}
	if (!remote_take(b->r.alias)) {
		pthread_mutex_unlock(&tbl_mu);
		buf_addf(msg, "remote \"%s\": %llu cold reads in progress (remote.max_cold_reads): try again",
			 b->r.alias, (unsigned long long)bk_limits()->cold_reads);
		errno = EHOSTUNREACH;
		return NULL;
	}
	f = fill_new(t, b, bck, obj, want, true, 0, 0);
	f->next = tbl;
	tbl = f;
	active++;
	pthread_mutex_unlock(&tbl_mu);
	if (fill_start(f) != AIS_OK) {
		fill_unref(f);
		buf_addstr(msg, "cannot start a remote fetch");
		errno = EHOSTUNREACH;
		return NULL;
	}
	return f;
}

/* Blocks until f ended: AIS_OK, or AIS_ERR with errno and msg. */
static int fill_wait(struct fill *f, buf_t *msg)
{
	return grow_wait(&f->g, msg);
}

void olr_stop(void)
{
	atomic_store(&stopping, true);
	pthread_mutex_lock(&tbl_mu);
	while (active > 0)
		pthread_cond_wait(&tbl_cv, &tbl_mu);
	pthread_mutex_unlock(&tbl_mu);
}

/* --- opening ------------------------------------------------------------------ */

static void meta_of(const bk_obj_t *o, store_meta_t *m)
{
	buf_t c = BUF_INIT;
	memset(m, 0, sizeof(*m));
	m->size = o->size;
	m->version = 1;
	m->mtime_ns = o->mtime_ns ? o->mtime_ns : time_now_ns();
	m->atime_ns = time_now_ns(); /* nothing to touch: not stored yet */
	remote_custom(o->etag, NULL, &c);
	snprintf(m->custom, sizeof(m->custom), "%s", c.ptr ? c.ptr : "");
	buf_free(&c);
}

static struct olr_reader *reader_new(target_t *t, const bk_bucket_t *b, sv_t obj, const bk_obj_t *want,
				     struct fill *f)
{
	struct olr_reader *r = xcalloc(1, sizeof(*r));
	r->f = f;
	r->t = t;
	r->want = *want;
	r->fd = -1;
	if (!f) {
		r->bk = xmalloc(sizeof(*r->bk));
		*r->bk = *b;
		r->obj = xstrndup(obj.ptr, obj.len);
		r->olen = obj.len;
	}
	return r;
}

void olr_reader_free(struct olr_reader *r)
{
	if (!r)
		return;
	if (r->f)
		fill_unref(r->f);
	free(r->bk);
	free(r->obj);
	free(r);
}

/* Rule 5: the cached copy on *fd against the remote. AIS_OK: serve it;
 * AIS_DONE: fetch again (fd closed); AIS_ERR: ENOENT (deleted, sync). */
static int validate(target_t *t, const bk_bucket_t *b, sv_t bck, sv_t obj, int *fd, const store_meta_t *m,
		    bk_obj_t *ro, buf_t *msg)
{
	char have[BK_ETAG_MAX];
	buf_t hm = BUF_INIT;
	int rc = bk_head(b, obj, ro, &hm);
	if (rc != AIS_OK && errno == ENOENT && b->sync) {
		close(*fd);
		*fd = -1;
		ol_delete(t, bck, obj, true);
		buf_addsv(msg, sv_of(&hm));
		buf_free(&hm);
		errno = ENOENT;
		return AIS_ERR;
	}
	if (rc != AIS_OK) {
		log_info("GET %.*s/%.*s: serving the cached copy unvalidated: %s", (int)bck.len, bck.ptr,
			 (int)MIN(obj.len, 256), obj.ptr, hm.ptr);
		buf_free(&hm);
		return AIS_OK;
	}
	buf_free(&hm);
	cached_etag(m, have, sizeof(have));
	buf_t want = BUF_INIT;
	remote_custom(ro->etag, NULL, &want);
	bool same = want.ptr && strstr(want.ptr, "bk.etag=") && !strcmp(strstr(want.ptr, "bk.etag=") + 8, have);
	buf_free(&want);
	if (same)
		return AIS_OK;
	log_info("GET %.*s/%.*s: changed on remote \"%s\" (ETag %s, cached %s): fetching it again", (int)bck.len,
		 bck.ptr, (int)MIN(obj.len, 256), obj.ptr, b->r.alias, ro->etag, have[0] ? have : "none");
	close(*fd);
	*fd = -1;
	return AIS_DONE;
}

int olr_open(target_t *t, const bk_bucket_t *b, sv_t bck, sv_t obj, bool stream, bool lazy, int *fd,
	     store_meta_t *m, struct olr_reader **rd, buf_t *msg)
{
	bk_obj_t ro;
	bool have_ro = false;
	*rd = NULL;
	if (*fd >= 0) {
		if (!b->validate_warm_get)
			return AIS_OK;
		int v = validate(t, b, bck, obj, fd, m, &ro, msg);
		if (v != AIS_DONE)
			return v;
		have_ro = true;
	}
	/* a fill in progress gives the version (rule 1); else HEAD */
	pthread_mutex_lock(&tbl_mu);
	struct fill *f = tbl_find(bck, obj);
	if (f) {
		ro = f->want;
		have_ro = true;
	}
	pthread_mutex_unlock(&tbl_mu);
	if (!have_ro && bk_head(b, obj, &ro, msg) != AIS_OK)
		return AIS_ERR;
	if (stream && lazy) { /* rule 4: the range at ol_send; a HEAD: nothing */
		*rd = reader_new(t, b, obj, &ro, NULL);
	} else {
		f = fill_whole(t, b, bck, obj, &ro, msg);
		if (!f)
			return AIS_ERR;
		if (stream) {
			*rd = reader_new(t, b, obj, &ro, f);
		} else {
			int rc = fill_wait(f, msg);
			fill_unref(f);
			if (rc != AIS_OK)
				return AIS_ERR;
			return store_open_obj(t->store, bck.ptr, bck.len, obj.ptr, obj.len, fd, m);
		}
	}
	*fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		olr_reader_free(*rd);
		*rd = NULL;
		return AIS_ERR;
	}
	meta_of(&ro, m);
	return AIS_OK;
}

/* --- streaming (loop) --------------------------------------------------------- */

static void reader_cleanup(void *arg)
{
	struct olr_reader *r = arg;
	for (struct olr_reader **pp = &attached; *pp; pp = &(*pp)->lnext)
		if (*pp == r) {
			*pp = r->lnext;
			break;
		}
	olr_reader_free(r);
}

void olr_reader_attach(http_req_t *req, struct olr_reader *r, int fd)
{
	r->req = req;
	r->fd = fd;
	r->lnext = attached;
	attached = r;
	arena_cleanup_add(req->arena, reader_cleanup, r);
}

static void release(void *arg) { fill_unref(arg); }

void ol_send(http_req_t *req, int fd, uint64_t start, uint64_t len)
{
	if (ol_mem_send(req, fd, start, len)) /* a hot object, from memory (ol.c) */
		return;
	if (ec_read_send(req, fd, start, len)) /* kept as slices only, streamed as read (ecread.c) */
		return;
	struct olr_reader *r = NULL;
	for (struct olr_reader **pp = &attached; *pp; pp = &(*pp)->lnext)
		if ((*pp)->req == req && (*pp)->fd == fd) {
			r = *pp;
			*pp = r->lnext;
			break;
		}
	if (!r) {
		http_resp_send_file(req, fd, (off_t)start, len);
		return;
	}
	close(fd);
	if (req->method == HTTP_HEAD || !len) {
		http_resp_send_head(req, len);
		return;
	}
	if (!r->f) {
		buf_t msg = BUF_INIT;
		pthread_mutex_lock(&tbl_mu);
		bool room = active < FILLS_MAX && !atomic_load(&stopping) && remote_take(r->bk->r.alias);
		if (room)
			active++;
		pthread_mutex_unlock(&tbl_mu);
		struct fill *f = room ? fill_new(r->t, r->bk, (sv_t){"", 0}, (sv_t){r->obj, r->olen}, &r->want, false,
						 start, len)
				      : NULL;
		if (!f || fill_start(f) != AIS_OK) {
			if (f)
				fill_unref(f);
			buf_free(&msg);
			http_resp_error(req, 503, "remote \"%s\": too many fetches in progress: try again", r->bk->r.alias);
			return;
		}
		buf_free(&msg);
		r->f = f;
		start = 0;
	}
	char what[600];
	snprintf(what, sizeof(what), "%.*s/%.*s", (int)r->f->blen, r->f->bck, (int)MIN(r->f->olen, 256), r->f->obj);
	grow_send(req, &r->f->g, start, len, release, r->f, what); /* (the reader's reference goes with it) */
	r->f = NULL;
}

/* --- writes and deletes ------------------------------------------------------ */

int olr_put(target_t *t, const bk_bucket_t *b, ol_put_t *p, char **custom)
{
	store_meta_t sealed;
	bk_obj_t ro;
	buf_t c = BUF_INIT;
	const char *want = p->want_type != CKSUM_NONE ? p->want_hex : NULL;
	(void)t;
	if (store_writer_seal(p->sw, p->want_type, want, &sealed) != AIS_OK)
		return AIS_ERR;
	int fd = store_writer_open_tmp(p->sw);
	if (fd < 0)
		return AIS_ERR;
	int rc = bk_put_fd(b, p->obj, fd, sealed.size, &ro, &p->msg);
	int e = errno;
	close(fd);
	if (rc != AIS_OK) {
		log_warnx("PUT %.*s/%.*s: not written through: %s", (int)p->bck.len, p->bck.ptr,
			  (int)MIN(p->obj.len, 256), p->obj.ptr, p->msg.ptr);
		errno = e; /* the backend's class (backend.h): a refused credential is not a "try again" */
		return AIS_ERR;
	}
	remote_custom(ro.etag, p->custom, &c);
	*custom = buf_detach(&c, NULL);
	return AIS_OK;
}

int olr_delete(const bk_bucket_t *b, sv_t obj, buf_t *msg) { return bk_delete(b, obj, msg); }
