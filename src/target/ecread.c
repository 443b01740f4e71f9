/*
 * ecread.c - reads of erasure-coded objects from their slices (ec_int.h):
 * the rebuild of the whole object from any D slices (ec_restore), a Range
 * read that decodes only the stripes it touches (ec_read_range), and, for
 * a bucket that keeps no whole copy, the read of the object into a
 * temporary file that responses stream as it fills (ec_read_open, grow.c)
 * and its metadata from the slices' (ec_stat). The write of slices is
 * ec.c; their repair and placement ecrepair.c.
 *
 * NOTES ON THE DESIGN
 *  1. After map changes slices may be anywhere, one per target: a rebuild
 *     asks every active target for its slice, keeps those whose metadata
 *     names the newest version with at least D slices, and checks the
 *     rebuilt object against the checksum the slices carry. A slice that
 *     fails its own checksum is refused by its target (ecslice.c rule 3),
 *     so wrong bytes are never decoded and never served. A rebuild from
 *     fewer than D+P slices queues the object for the rebalance, whose
 *     repair encodes the missing ones (ecrepair.c rule 1).
 *  2. A Range read with no whole copy to fetch decodes only the stripes
 *     the range touches: one ranged GET per slice index of the newest
 *     write, into temporary files, decoded from D of them and checked
 *     against every other one (a ranged slice is not checked against its
 *     own checksum, which covers the whole slice); with only D reachable,
 *     or slices that disagree, the whole object is rebuilt instead (rule
 *     1: checked against the object's checksum). The bytes land at their
 *     offsets in a sparse temporary file of the object's size.
 *  3. In a bucket with ec.whole_copy=false (slices only, ec.c rule 5) a
 *     read fetches the D data slices whole (each checked against its
 *     checksum by its holder) straight to their offsets in an unlinked
 *     temporary file, on a thread of its own, or decodes from any D slices
 *     when one is missing or damaged (rule 1), checks the result against
 *     the object's checksum and serves that file: a GET streams it as its
 *     filled prefix grows (grow.c), other readers wait for the end. A HEAD
 *     asks the slices' metadata only, a Range read decodes its stripes
 *     (rule 2).
 *  4. A slice whose write (its version) is older than a tombstone seen
 *     here or in a slice answer is of a deleted object (ec.c rule 6): a
 *     rebuild or a range read never decodes it; with only such slices
 *     found the read fails with ESTALE.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ec_priv.h"
#include "grow.h"
#include "aisd/ec.h"
#include "aisd/httpc.h"
#include "aisd/jobs.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

/* --- rebuild ---------------------------------------------------------------------- */

/* The object's checksum type from slice metadata; *colon at the ':'
 * before its value. */
static enum store_cksum cksum_of(const ec_meta_t *m, const char **colon)
{
	enum store_cksum ct = CKSUM_NONE;
	*colon = strchr(m->cksum, ':');
	if (!*colon || store_cksum_parse(m->cksum, (size_t)(*colon - m->cksum), &ct) != AIS_OK)
		ct = CKSUM_NONE;
	return ct;
}

/* Rule 1: the answer (of m[0..n) with have[i]) of the newest write with at
 * least D distinct slices, *cnt of them; -1 when none has. have[i] of a
 * write older than the tombstone tomb (rule 4) is cleared first. */
static ssize_t pick_write(const ec_meta_t *m, bool *have, size_t n, int64_t tomb, size_t *cnt)
{
	ssize_t ref = -1;
	for (size_t i = 0; i < n; i++)
		have[i] = have[i] && (int64_t)m[i].version >= tomb;
	for (size_t i = 0; i < n; i++) {
		if (!have[i])
			continue;
		size_t c = 0;
		bool idx_seen[EC_NSL] = {false};
		for (size_t j = 0; j < n; j++)
			if (have[j] && ec_same_write(&m[j], &m[i]) && !idx_seen[m[j].idx])
				idx_seen[m[j].idx] = true, c++;
		if (c >= m[i].d && (ref < 0 || m[i].version > m[ref].version || (m[i].version == m[ref].version && c > *cnt)))
			ref = (ssize_t)i, *cnt = c;
	}
	return ref;
}

/* Rule 1 with the answers' metadata m[0..n) (have[i]: a slice there):
 * the newest write with at least D slices, *best of them (have[] of older
 * writes than the newest tombstone cleared); -1 with *e = ENOENT (no
 * slice), ESTALE (all of a deleted write) or EIO (too few; msg says why). */
static ssize_t newest_write(target_t *t, sv_t bck, sv_t obj, const struct ec_ask *a, size_t n, const ec_meta_t *m,
			    bool *have, size_t *best, int *e, buf_t *msg)
{
	size_t any = 0, live = 0;
	for (size_t i = 0; i < n; i++)
		any += have[i];
	int64_t tomb = ec_deleted_at(t, a, n, bck.ptr, bck.len, obj.ptr, obj.len);
	ssize_t r = pick_write(m, have, n, tomb, best);
	for (size_t i = 0; i < n; i++)
		live += have[i];
	*e = ENOENT;
	if (r < 0 && !live && tomb && any) { /* rule 4 */
		*e = ESTALE;
		buf_addf(msg, "deleted: %zu slice(s) found, all of a write a client deleted since", any);
	} else if (r < 0 && live) {
		*e = EIO;
		buf_addf(msg, "erasure-coded: only %zu slice(s) found on %zu active targets, fewer than the data "
			      "slices needed to rebuild it", live, n);
	}
	return r;
}

/* The custom metadata an answer's head carries. */
static sv_t custom_of(const struct ec_ask *a) { return httpc_header_find(sv_of(&a->hdrs), "Ais-Custom-Md"); }

void ec_meta_of_write(const ec_meta_t *ref, sv_t cm, store_meta_t *out)
{
	const char *colon;
	memset(out, 0, sizeof(*out));
	out->size = ref->size;
	out->cksum_type = cksum_of(ref, &colon);
	if (out->cksum_type != CKSUM_NONE)
		snprintf(out->cksum, sizeof(out->cksum), "%s", colon + 1);
	out->version = 1;
	out->mtime_ns = out->atime_ns = (int64_t)ref->version;
	snprintf(out->custom, sizeof(out->custom), "%.*s", (int)cm.len, cm.ptr ? cm.ptr : "");
}

/* The slices' metadata from every active target (GET ?meta=true): m[i]
 * and have[i] for each answer. */
static struct ec_ask *ask_metas(target_t *t, sv_t bck, sv_t obj, ec_url_t **u, size_t *n, ec_meta_t **m, bool **have)
{
	*n = ec_targets(t, bck.ptr, bck.len, obj.ptr, obj.len, u);
	struct ec_ask *a = ec_ask_all(*u, *n, "GET", "?meta=true", NULL, NULL, bck.ptr, bck.len, obj.ptr, obj.len);
	*m = xcalloc(*n + 1, sizeof(**m));
	*have = xcalloc(*n + 1, sizeof(**have));
	for (size_t i = 0; i < *n; i++)
		(*have)[i] = a[i].status == 200 && ec_meta_parse(a[i].resp.ptr, a[i].resp.len, &(*m)[i]) == AIS_OK;
	return a;
}

int ec_stat(target_t *t, sv_t bck, sv_t obj, store_meta_t *out, buf_t *msg)
{
	ec_url_t *u;
	size_t n, best = 0;
	ec_meta_t *m;
	bool *have;
	int e;
	struct ec_ask *a = ask_metas(t, bck, obj, &u, &n, &m, &have);
	ssize_t r = newest_write(t, bck, obj, a, n, m, have, &best, &e, msg);
	if (r >= 0)
		ec_meta_of_write(&m[r], custom_of(&a[r]), out);
	ec_ask_free(a, n);
	free(m), free(have), free(u);
	errno = e;
	return r >= 0 ? AIS_OK : AIS_ERR;
}

/* Where rebuilt bytes go: a store write (ec_restore) or a file. */
struct sink {
	store_writer_t *w;
	int fd;
	void (*moved)(void *arg, uint64_t at); /* a file's bytes in place so far */
	void *marg;
	uint64_t at;
};

static int sink_write(struct sink *k, const void *p, size_t n)
{
	if (k->w)
		return store_writer_write(k->w, p, n);
	if (fd_write_all(k->fd, p, n) != AIS_OK)
		return AIS_ERR;
	k->at += n;
	if (k->moved)
		k->moved(k->marg, k->at);
	return AIS_OK;
}

/*
 * Rule 1: GETs the slice of bck/obj on every active target (each checked
 * against its own checksum there), picks the newest write with D of them
 * and writes the decoded object to k. *ref gets that write's metadata,
 * *custom its custom metadata (the caller frees it), *best how many of
 * its slices were found. AIS_OK, or AIS_ERR with errno as newest_write's.
 */
static int rebuild(target_t *t, sv_t bck, sv_t obj, struct sink *k, ec_meta_t *ref_out, store_meta_t *sm,
		   size_t *best, buf_t *msg)
{
	ec_url_t *u;
	size_t n = ec_targets(t, bck.ptr, bck.len, obj.ptr, obj.len, &u);
	int *fds = xcalloc(n + 1, sizeof(*fds));
	ec_meta_t *m = xcalloc(n + 1, sizeof(*m));
	bool *have = xcalloc(n + 1, sizeof(*have));
	int rc = AIS_ERR, e = ENOENT;

	for (size_t i = 0; i < n; i++)
		fds[i] = ec_tmp_file(t);
	struct ec_ask *a = ec_ask_all(u, n, "GET", "", fds, NULL, bck.ptr, bck.len, obj.ptr, obj.len);
	for (size_t i = 0; i < n; i++) {
		sv_t mh = httpc_header_find(sv_of(&a[i].hdrs), EC_META_HDR);
		if (a[i].status == 410)
			ec_count(EC_M_DAMAGED, 1),
				log_warnx("%.*s/%.*s: the slice on %s is damaged; rebuilding from the others",
						  (int)bck.len, bck.ptr, (int)MIN(obj.len, 200), obj.ptr, u[i]);
		have[i] = a[i].status == 200 && fds[i] >= 0 && mh.ptr && ec_meta_parse(mh.ptr, mh.len, &m[i]) == AIS_OK;
	}
	ssize_t r = newest_write(t, bck, obj, a, n, m, have, best, &e, msg);
	if (r < 0)
		goto out;
	const ec_meta_t *ref = &m[r];
	*ref_out = *ref;
	ec_meta_of_write(ref, custom_of(&a[r]), sm);
	e = EIO;
	int sfd[EC_NSL];
	bool got[EC_NSL] = {false};
	for (unsigned j = 0; j < EC_NSL; j++)
		sfd[j] = -1;
	for (size_t i = 0; i < n; i++)
		if (have[i] && ec_same_write(&m[i], ref) && !got[m[i].idx])
			got[m[i].idx] = true, sfd[m[i].idx] = fds[i];
	ec_layout_t l;
	ec_layout(ref->size, ref->d, ref->p, ref->cell, &l);
	ec_codec_t *c = ec_codec_new(ref->d, ref->p);
	unsigned char *cell[EC_NSL];
	unsigned ns = ref->d + ref->p;
	for (unsigned j = 0; j < ns; j++)
		cell[j] = xmalloc(ref->cell);
	rc = AIS_OK;
	for (uint64_t st = 0; st < l.stripes && rc == AIS_OK; st++) {
		uint32_t cs = ec_stripe_cell(&l, st);
		bool hv[EC_NSL];
		for (unsigned j = 0; j < ns; j++)
			hv[j] = got[j] && pread(sfd[j], cell[j], cs, (off_t)(st * l.cell)) == (ssize_t)cs;
		if (ec_decode(c, cs, hv, cell) != AIS_OK) {
			buf_addf(msg, "rebuilding from slices: a slice is short");
			rc = AIS_ERR;
			break;
		}
		uint64_t bytes = ec_stripe_bytes(&l, st);
		for (unsigned j = 0; j < l.d && rc == AIS_OK; j++) {
			uint64_t off = (uint64_t)j * cs, want = off < bytes ? MIN(cs, bytes - off) : 0;
			if (want && sink_write(k, cell[j], want) != AIS_OK) {
				buf_addf(msg, "rebuilding from slices: %s", strerror(errno));
				rc = AIS_ERR;
			}
		}
	}
	for (unsigned j = 0; j < ns; j++)
		free(cell[j]);
	ec_codec_free(c);
out:
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	ec_ask_free(a, n);
	free(fds), free(m), free(have), free(u);
	if (rc != AIS_OK)
		errno = e;
	return rc;
}

static void rebuilt(sv_t bck, sv_t obj, int rc, size_t best, unsigned ns)
{
	if (rc == AIS_OK) {
		ec_count(EC_M_REBUILDS, 1);
		log_info("rebuilt %.*s/%.*s from %zu of its %u slices", (int)bck.len, bck.ptr, (int)MIN(obj.len, 200),
			 obj.ptr, best, ns);
	} else {
		ec_count(EC_M_REBUILD_FAILURES, 1);
	}
}

int ec_restore(target_t *t, sv_t bck, sv_t obj, buf_t *msg)
{
	struct sink k = {.fd = -1};
	ec_meta_t ref;
	store_meta_t sm;
	size_t best = 0;
	if (store_writer_begin(t->store, bck.ptr, bck.len, obj.ptr, obj.len, &k.w) != AIS_OK) {
		buf_addf(msg, "rebuilding from slices: %s", strerror(errno));
		errno = EIO;
		return AIS_ERR;
	}
	int rc = rebuild(t, bck, obj, &k, &ref, &sm, &best, msg), e = errno;
	if (rc == AIS_OK && store_writer_commit(k.w, sm.cksum_type, sm.cksum[0] ? sm.cksum : NULL,
						sm.custom[0] ? sm.custom : NULL, NULL) != AIS_OK) {
		/* the rebuilt bytes must match the object's checksum (rule 1) */
		buf_addf(msg, "the object rebuilt from %zu slices does not match its checksum: %s", best,
			 strerror(errno));
		rc = AIS_ERR, e = EIO;
	}
	store_writer_free(k.w);
	if (rc == AIS_OK || e == EIO)
		rebuilt(bck, obj, rc, best, ref.d + ref.p);
	/* ecrepair.c rule 1: the rebalance rebuilds the missing slices */
	if (rc == AIS_OK && t->reb && best < ref.d + ref.p)
		reb_enqueue(t->reb, bck.ptr, bck.len, obj.ptr, obj.len);
	errno = e;
	return rc;
}

/* --- reads with no whole copy (rule 3) ----------------------------------------- */

/*
 * One read of an object kept as slices only: a thread fetches the D data
 * slices into an unlinked temporary file (or decodes into it), and counts
 * the bytes from 0 that are in place (have); responses stream the file as
 * those grow (ec_read_send), blocking callers wait for the end.
 */
struct ec_read {
	_Atomic int refs;
	target_t *t;
	char *bck, *obj;
	size_t blen, olen;
	grow_t g; /* the object's temporary file, filled by the read's thread */
	ec_layout_t l;
	ec_meta_t ref;
	ec_url_t *u;
	size_t n;
	ec_meta_t *m;
	bool *have_slice;
	_Atomic uint64_t so[EC_SLICES_MAX]; /* data slice j's bytes taken */
};

static pthread_mutex_t rd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rd_cv = PTHREAD_COND_INITIALIZER;
static int rd_active; /* read threads running */
static atomic_bool rd_stopping;

static void ecr_unref(struct ec_read *r)
{
	if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	grow_destroy(&r->g);
	free(r->bck), free(r->obj), free(r->u), free(r->m), free(r->have_slice);
	free(r);
}

/* A data slice's bytes, as they come, to their offsets in the object. */
struct at_obj {
	struct ec_read *r;
	unsigned j;  /* the slice's index (< D) */
	uint64_t so; /* slice bytes taken */
};

static int to_object(void *arg, const char *p, size_t n)
{
	struct at_obj *s = arg;
	struct ec_read *r = s->r;
	const ec_layout_t *l = &r->l;
	while (n) {
		uint64_t st = MIN(s->so / l->cell, l->stripes - 1);
		uint32_t cs = ec_stripe_cell(l, st);
		uint64_t in = s->so - st * l->cell, start = ec_stripe_start(l, st);
		if (in >= cs)
			return AIS_ERR; /* longer than its layout */
		uint64_t k = MIN(cs - in, n), at = start + (uint64_t)s->j * cs + in,
			 end = start + ec_stripe_bytes(l, st); /* (the last stripe's padding is not the object's) */
		if (at < end) {
			size_t w = (size_t)MIN(k, end - at);
			if (pwrite(r->g.fd, p, w, (off_t)at) != (ssize_t)w)
				return AIS_ERR;
		}
		s->so += k, p += k, n -= k;
	}
	/* the stripes every data slice has filled are in place */
	atomic_store(&r->so[s->j], s->so);
	uint64_t lo = l->stripes;
	for (unsigned j = 0; j < l->d; j++) {
		uint64_t so = atomic_load(&r->so[j]);
		lo = MIN(lo, so >= l->slice_size ? l->stripes : so / l->cell);
	}
	grow_moved(&r->g, lo >= l->stripes ? l->size : lo * l->d * (uint64_t)l->cell);
	return AIS_OK;
}

/* Fetches the D data slices of write r->ref whole (each checked against
 * its own checksum by its holder) straight to their offsets. false when
 * one is missing, damaged or short. */
static bool data_slices(struct ec_read *r)
{
	ec_url_t sel[EC_SLICES_MAX];
	struct at_obj at[EC_SLICES_MAX];
	httpc_sink_fn fns[EC_SLICES_MAX];
	void *args[EC_SLICES_MAX];
	bool found[EC_SLICES_MAX] = {false};
	unsigned k = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->have_slice[i] && ec_same_write(&r->m[i], &r->ref) && r->m[i].idx < r->ref.d && !found[r->m[i].idx]) {
			found[r->m[i].idx] = true;
			at[k] = (struct at_obj){.r = r, .j = r->m[i].idx};
			fns[k] = to_object, args[k] = &at[k];
			snprintf(sel[k++], sizeof(sel[0]), "%s", r->u[i]);
		}
	if (k < r->ref.d || !r->l.stripes)
		return k == r->ref.d;
	struct ec_ask *a = ec_ask_each(sel, k, "GET", "", NULL, fns, args, NULL, r->bck, r->blen, r->obj, r->olen);
	bool ok = true;
	for (unsigned i = 0; i < k; i++) {
		sv_t mh = httpc_header_find(sv_of(&a[i].hdrs), EC_META_HDR);
		ec_meta_t sm;
		if (a[i].status == 410)
			ec_count(EC_M_DAMAGED, 1), log_warnx("%.*s/%.*s: the slice on %s is damaged; decoding from the others",
							  (int)r->blen, r->bck, (int)MIN(r->olen, 200), r->obj, sel[i]);
		ok = ok && a[i].status == 200 && mh.ptr && ec_meta_parse(mh.ptr, mh.len, &sm) == AIS_OK &&
		     ec_same_write(&sm, &r->ref) && sm.idx == at[i].j && at[i].so == r->l.slice_size;
	}
	ec_ask_free(a, k);
	return ok;
}

static void rebuild_moved(void *arg, uint64_t at) { grow_moved(&((struct ec_read *)arg)->g, at); }

static void *ecr_main(void *arg)
{
	struct ec_read *r = arg;
	sv_t bck = {r->bck, r->blen}, obj = {r->obj, r->olen};
	int err = 0;
	buf_t msg = BUF_INIT;
	if (!data_slices(r)) {
		/* a data slice missing or damaged: decode from any D (the bytes
		 * in place stay: they are the same), and check the result
		 * against the object's checksum */
		struct sink k = {.fd = r->g.fd, .moved = rebuild_moved, .marg = r};
		ec_meta_t ref = {0};
		store_meta_t *sm = xmalloc(sizeof(*sm));
		size_t best = 0;
		if (lseek(r->g.fd, 0, SEEK_SET) != 0 || rebuild(r->t, bck, obj, &k, &ref, sm, &best, &msg) != AIS_OK) {
			err = errno == ENOENT || errno == ESTALE ? errno : EIO;
		} else if (!ec_same_write(&ref, &r->ref) || store_verify_fd(r->g.fd, sm) != AIS_OK) {
			err = EIO;
			buf_addf(&msg, "the object decoded from its slices does not match its checksum (or was overwritten)");
		}
		rebuilt(bck, obj, err ? AIS_ERR : AIS_OK, best, ref.d + ref.p);
		if (!err && r->t->reb) /* ecrepair.c rule 1: the rebalance rebuilds the missing slices */
			reb_enqueue(r->t->reb, r->bck, r->blen, r->obj, r->olen);
		free(sm);
	}
	grow_end(&r->g, err, msg.ptr);
	buf_free(&msg);
	ecr_unref(r);
	pthread_mutex_lock(&rd_mu);
	rd_active--;
	pthread_cond_broadcast(&rd_cv);
	pthread_mutex_unlock(&rd_mu);
	httpc_sync_release();
	return NULL;
}

/* Starts a read of bck/obj from its slices: *m its metadata, r->fd its
 * file, filled by the read's thread. NULL with errno as ec_read_whole's. */
static struct ec_read *ecr_start(target_t *t, sv_t bck, sv_t obj, store_meta_t *m, buf_t *msg)
{
	size_t best = 0;
	int e;
	struct ec_read *r = xcalloc(1, sizeof(*r));
	grow_init(&r->g);
	struct ec_ask *a = ask_metas(t, bck, obj, &r->u, &r->n, &r->m, &r->have_slice);
	ssize_t w = newest_write(t, bck, obj, a, r->n, r->m, r->have_slice, &best, &e, msg);
	if (w >= 0) {
		ec_meta_of_write(&r->m[w], custom_of(&a[w]), m);
		r->ref = r->m[w];
	}
	ec_ask_free(a, r->n);
	atomic_init(&r->refs, 2); /* the thread's and the caller's */
	if (w < 0)
		goto fail;
	e = EIO;
	ec_layout(r->ref.size, r->ref.d, r->ref.p, r->ref.cell, &r->l);
	if ((r->g.fd = ec_tmp_file(t)) < 0 || ftruncate(r->g.fd, (off_t)r->ref.size) != 0) {
		buf_addf(msg, "a temporary file for the decoded object: %s", strerror(errno));
		goto fail;
	}
	r->t = t;
	r->bck = xstrndup(bck.ptr, bck.len), r->blen = bck.len;
	r->obj = xstrndup(obj.ptr, obj.len), r->olen = obj.len;
	pthread_mutex_lock(&rd_mu);
	bool go = !atomic_load(&rd_stopping);
	rd_active += go;
	pthread_mutex_unlock(&rd_mu);
	pthread_t th;
	if (go && pthread_create(&th, NULL, ecr_main, r) == 0) {
		pthread_detach(th);
		return r;
	}
	if (go) {
		pthread_mutex_lock(&rd_mu);
		rd_active--;
		pthread_mutex_unlock(&rd_mu);
	}
	buf_addstr(msg, go ? "no thread for the read" : "stopping");
fail:
	atomic_store(&r->refs, 1);
	ecr_unref(r);
	errno = e;
	return NULL;
}

void ec_read_stop(void)
{
	atomic_store(&rd_stopping, true);
	pthread_mutex_lock(&rd_mu);
	while (rd_active > 0)
		pthread_cond_wait(&rd_cv, &rd_mu);
	pthread_mutex_unlock(&rd_mu);
}

int ec_read_open(target_t *t, sv_t bck, sv_t obj, bool stream, int *fd, store_meta_t *m, struct ec_read **out,
		 buf_t *msg)
{
	struct ec_read *r = ecr_start(t, bck, obj, m, msg);
	if (!r)
		return AIS_ERR;
	if (!stream && grow_wait(&r->g, msg) != AIS_OK) { /* the whole object first */
		int e = errno;
		ecr_unref(r);
		errno = e;
		return AIS_ERR;
	}
	if ((*fd = dup(r->g.fd)) < 0) {
		buf_addf(msg, "dup: %s", strerror(errno));
		ecr_unref(r);
		errno = EIO;
		return AIS_ERR;
	}
	if (stream)
		*out = r;
	else
		ecr_unref(r);
	return AIS_OK;
}

int ec_read_whole(target_t *t, sv_t bck, sv_t obj, int *fd, store_meta_t *m, buf_t *msg)
{
	return ec_read_open(t, bck, obj, false, fd, m, NULL, msg);
}

void ec_read_free(struct ec_read *r) { ecr_unref(r); }

/* --- streaming it ------------------------------------------------------------------ */

/* A read tied to a response until ol_send (ec_read_attach). */
struct attached {
	struct ec_read *r; /* NULL once sent */
	http_req_t *req;
	int fd; /* the descriptor the caller was given */
	struct attached *next;
};
static __thread struct attached *rd_attached; /* this worker's */

static void attached_cleanup(void *arg)
{
	struct attached *x = arg;
	for (struct attached **pp = &rd_attached; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	ecr_unref(x->r); /* (not sent) */
	free(x);
}

void ec_read_attach(http_req_t *req, struct ec_read *r, int fd)
{
	struct attached *x = xcalloc(1, sizeof(*x));
	*x = (struct attached){.r = r, .req = req, .fd = fd, .next = rd_attached};
	rd_attached = x;
	arena_cleanup_add(req->arena, attached_cleanup, x);
}

static void release(void *arg) { ecr_unref(arg); }

bool ec_read_send(http_req_t *req, int fd, uint64_t start, uint64_t len)
{
	struct ec_read *r = NULL;
	for (struct attached *x = rd_attached; x && !r; x = x->next)
		if (x->req == req && x->fd == fd && x->r)
			r = x->r, x->r = NULL; /* the response takes the reference */
	if (!r)
		return false;
	close(fd);
	if (req->method == HTTP_HEAD || !len) {
		ecr_unref(r);
		http_resp_send_head(req, len);
		return true;
	}
	char what[600];
	snprintf(what, sizeof(what), "%.*s/%.*s", (int)r->blen, r->bck, (int)MIN(r->olen, 256), r->obj);
	grow_send(req, &r->g, start, len, release, r, what); /* (its reference goes with it) */
	return true;
}

/* --- range reads ------------------------------------------------------------------ */

int ec_read_range(target_t *t, sv_t bck, sv_t obj, sv_t range, int *out_fd, store_meta_t *out, buf_t *msg)
{
	ec_url_t *u, sel[EC_NSL];
	size_t n, best = 0, k = 0;
	ec_meta_t *m;
	bool *have, got[EC_NSL] = {false}, idx_taken[EC_NSL] = {false};
	struct ec_ask *a = ask_metas(t, bck, obj, &u, &n, &m, &have), *b = NULL;
	int fds[EC_NSL], sfd[EC_NSL], ofd = -1, rc = AIS_ERR, e = EAGAIN;
	unsigned sidx[EC_NSL], ngot = 0;
	uint64_t start, len, fetched = 0;

	ssize_t r = pick_write(m, have, n, ec_deleted_at(t, a, n, bck.ptr, bck.len, obj.ptr, obj.len), &best);
	/* D slices decode; one more checks them (rule 2) */
	if (r < 0 || best <= m[r].d || http_range_parse(range, m[r].size, &start, &len) != AIS_OK) {
		ec_ask_free(a, n);
		free(m), free(have), free(u);
		errno = EAGAIN;
		return AIS_ERR;
	}
	const ec_meta_t *ref = &m[r];
	ec_layout_t l;
	ec_layout(ref->size, ref->d, ref->p, ref->cell, &l);
	uint64_t sbytes = (uint64_t)l.d * l.cell, s0 = start / sbytes, s1 = (start + len - 1) / sbytes;
	char rh[96];
	snprintf(rh, sizeof(rh), "Range: bytes=%llu-%llu", (unsigned long long)(s0 * l.cell),
		 (unsigned long long)(s1 * l.cell + ec_stripe_cell(&l, s1) - 1));
	for (size_t i = 0; i < n; i++)
		if (have[i] && ec_same_write(&m[i], ref) && !idx_taken[m[i].idx]) {
			idx_taken[m[i].idx] = true;
			sidx[k] = m[i].idx;
			fds[k] = ec_tmp_file(t);
			snprintf(sel[k++], sizeof(sel[0]), "%s", u[i]);
		}
	for (unsigned j = 0; j < EC_NSL; j++)
		sfd[j] = -1;
	b = ec_ask_all(sel, k, "GET", "", fds, rh, bck.ptr, bck.len, obj.ptr, obj.len);
	for (size_t j = 0; j < k; j++) {
		sv_t mh = httpc_header_find(sv_of(&b[j].hdrs), EC_META_HDR);
		ec_meta_t sm;
		if (b[j].status == 206 && fds[j] >= 0 && mh.ptr && ec_meta_parse(mh.ptr, mh.len, &sm) == AIS_OK &&
		    ec_same_write(&sm, ref) && sm.idx == sidx[j]) {
			got[sidx[j]] = true, sfd[sidx[j]] = fds[j], ngot++;
			struct stat st;
			fetched += fstat(fds[j], &st) == 0 ? (uint64_t)st.st_size : 0;
		}
	}
	unsigned ns = l.d + l.p;
	unsigned char *cell[EC_NSL], *chk[EC_NSL];
	ec_codec_t *c = ec_codec_new(l.d, l.p);
	for (unsigned j = 0; j < ns; j++)
		cell[j] = xmalloc(l.cell), chk[j] = xmalloc(l.cell);
	if (ngot <= l.d || (ofd = ec_tmp_file(t)) < 0 || ftruncate(ofd, (off_t)ref->size) != 0)
		goto done;
	e = EIO;
	for (uint64_t st = s0; st <= s1; st++) {
		uint32_t cs = ec_stripe_cell(&l, st);
		bool hv[EC_NSL], dec[EC_NSL];
		unsigned char *frag[EC_NSL];
		unsigned used = 0;
		for (unsigned j = 0; j < ns; j++) {
			hv[j] = got[j] && pread(sfd[j], cell[j], cs, (off_t)((st - s0) * l.cell)) == (ssize_t)cs;
			dec[j] = hv[j] && used < l.d;
			used += dec[j];
			frag[j] = dec[j] ? cell[j] : chk[j];
		}
		if (ec_decode(c, cs, dec, frag) != AIS_OK)
			goto done;
		for (unsigned j = 0; j < ns; j++)
			if (hv[j] && !dec[j] && memcmp(chk[j], cell[j], cs)) { /* rule 2 */
				buf_addf(msg, "the slices of stripe %llu do not agree", (unsigned long long)st);
				goto done;
			}
		uint64_t at = ec_stripe_start(&l, st), bytes = ec_stripe_bytes(&l, st);
		for (unsigned j = 0; j < l.d; j++) { /* the cell's bytes inside [start, start + len) */
			uint64_t lo = MAX(at + (uint64_t)j * cs, start), hi = MIN(at + MIN((uint64_t)(j + 1) * cs, bytes),
										 start + len);
			if (lo < hi && pwrite(ofd, frag[j] + (lo - at - (uint64_t)j * cs), hi - lo, (off_t)lo) !=
					       (ssize_t)(hi - lo))
				goto done;
		}
	}
	ec_meta_of_write(ref, custom_of(&a[r]), out);
	*out_fd = ofd;
	ofd = -1;
	rc = AIS_OK;
	ec_count(EC_M_RANGE_READS, 1);
	ec_count(EC_M_RANGE_BYTES, fetched);
done:
	if (ofd >= 0)
		close(ofd);
	for (unsigned j = 0; j < ns; j++)
		free(cell[j]), free(chk[j]);
	ec_codec_free(c);
	for (size_t j = 0; j < k; j++)
		if (fds[j] >= 0)
			close(fds[j]);
	ec_ask_free(b, k);
	ec_ask_free(a, n);
	free(m), free(have), free(u);
	if (rc != AIS_OK)
		errno = e;
	return rc;
}

