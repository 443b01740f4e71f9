/*
 * olput.c - the object layer's PUT pipeline (ol.h): the request body
 * streamed to a sink through two bounded buffers (ol_stream), and the
 * object write that every API commits through (ol_put_*).
 *
 * Guarantees:
 *  1. Memory per upload is two buffers of store.put_buffer bytes (less for
 *     a smaller declared body): the loop fills one while a pool thread
 *     hands the other to the sink; when both are busy on_room says 0 and
 *     the socket is not read (TCP backpressure).
 *  2. The body is read (and 100 Continue sent) only once the sink's begin
 *     succeeded, so a refusal (no bucket, no space) comes before the
 *     client sends the body.
 *  3. The sink commits only after the API's decoder accepted the whole
 *     body (end), and the client hears success only after the commit.
 *  4. ol_put_commit is the one commit of an object: in a cluster with
 *     copies the bytes go to the other holders while they arrive (a
 *     chunked PUT per holder over the transport, http or https, opened at
 *     begin, fed by every write), the write is sealed
 *     (checksummed, fsynced, not visible), the checksum ends each stream
 *     as a trailer field that the receiver verifies before its commit,
 *     and the write is committed here only when the write quorum is
 *     durable; else the copies that landed
 *     are deleted and nothing of the write stays visible (mirror.c rule 2).
 *     In an erasure-coded bucket an object of ec.objsize_limit bytes or
 *     more gets its D+P slices instead of copies (ec.c rule 2), all durable
 *     before the whole copy here commits; with ec.whole_copy=false the
 *     slices are all that is committed (ec.c rule 5).
 *     Then a tar shard is indexed, and an object committed under a map
 *     older than the one installed meanwhile is handed to the rebalance.
 *  5. The steps of a write that sends copies or slices (ol_put_remote) run
 *     on the network pool, the others on the I/O pool: a stalled holder
 *     delays only the writes that wait on it, never another write's
 *     commit.
 *  6. A body the API lets go by splice (s->splice_min: a copy from another
 *     target), sized at least that, on plain TCP, into a sink with nothing
 *     that needs its bytes in memory (no decoder, copies or slices), never
 *     enters user space: the server splices the socket into a pipe of
 *     OL_PIPE bytes (http_req_splice_to) and a pool thread splices what the
 *     pipe holds into the temp file (ops->splice: store_writer_splice,
 *     which checksums what landed), by a pipe of its own: the file write
 *     holds the lock of the pipe it reads, which the loop's splices into
 *     the first pipe must never wait for. The pipe is the only buffer: on_room
 *     is its free bytes, so a full pipe (or a slow disk) stops the socket's
 *     reads. Whenever the pipe holds bytes and no pool task is in flight,
 *     one takes them, so a pipe that filled by its slots before its bytes
 *     never waits. The commit is the same (checksum against the sender's,
 *     fsync, then visible); a sender that stops or goes mid-body ends the
 *     request as for a read body (the body timeout, the closed connection),
 *     and the writer's temp file is removed with the request.
 *  7. An object written through an API that has no ETag of its own
 *     (md5_etag: a native PUT from outside the cluster, copy-bck, ishard)
 *     gets one as S3 has it: the MD5 of its bytes, computed with the
 *     bucket's checksum as they land (store_writer_also), recorded as
 *     "s3.etag" in the custom metadata before the write is sealed out to
 *     the other holders or slices, so every copy, and every copy of a copy,
 *     answers S3 with the same MD5 ETag (s3cmd and rclone verify it). A
 *     write whose custom metadata has an ETag already (S3's, a remote's)
 *     keeps that one.
 *  8. A conditional write (p->precond, ol.h invariant 6) is checked and
 *     committed under its name's lock (ol_name_lock), which every
 *     conditional write of the name and every client write of a versioned
 *     bucket's object (olver.c rule 6) takes, against the copy here (or,
 *     for an object kept as slices only, its slices' metadata), before any
 *     copy or slice commits.
 *  9. A client's write is stamped as it begins (its copies stream with
 *     that stamp), but it is committed after a delete of its name that
 *     came while its body did: at the commit it is stamped anew above that
 *     delete's tombstone (store_writer_after), and every copy takes the
 *     new stamp from the stream's trailer (Ais-Stamp), so no holder, no
 *     rebalance and no repair takes the acknowledged write for a deleted
 *     one.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ec_int.h"
#include "ol_int.h"
#include "aisd/log.h"
#include "aisd/metrics.h"
#include "aisd/hrw.h"
#include "aisd/ol.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "target_int.h"
#include "aisd/util.h"
#include "aisd/banned.h"

/* --- the object write ---------------------------------------------------------- */

bool ol_put_remote(const ol_put_t *p)
{
	bmd_props_t bp;
	if (!p->w || !p->w->cluster)
		return false;
	return p->w->n > 1 || (ec_props(p->t, p->bck, &bp) && (bp.ec_enabled || bp.backend.provider[0]));
}

int ol_put_begin(ol_put_t *p)
{
	if (store_writer_begin(p->t->store, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, &p->sw) != AIS_OK ||
	    store_writer_also(p->sw, p->want_type) != AIS_OK ||
	    (p->md5_etag && store_writer_also(p->sw, CKSUM_MD5) != AIS_OK) ||
	    (p->size && store_writer_reserve(p->sw, p->size) != AIS_OK))
		return AIS_ERR;
	if (p->stamp) /* a copy: the stamp of the write it is of */
		store_writer_stamp(p->sw, p->stamp);
	if (p->origin_ns) /* a delete since that write wins (ol.h invariant 2) */
		store_writer_origin(p->sw, p->origin_ns);
	if (p->md_ns) /* the sender's metadata time travels with the copy */
		store_writer_md_time(p->sw, p->md_ns);
	/* rule 4: the copies go to the other holders as the bytes come */
	p->repl = tgt_repl_open(p->t, p->w, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len,
				store_writer_stamp_of(p->sw));
	if (!p->repl && p->size && p->w && p->w->cluster) /* or the slices, encoded as they come */
		p->ecs = ec_stream_open(p, p->size);
	bmd_props_t bp;
	if (p->ecs && ec_props(p->t, p->bck, &bp) && bp.ec_no_whole && !bp.backend.provider[0])
		store_writer_discard(p->sw); /* kept as slices only: the bytes are in the streams */
	return AIS_OK;
}

int ol_put_splice(ol_put_t *p, int pfd, size_t n)
{
	if (p->repl || p->ecs) { /* (they take the bytes from memory) */
		errno = EINVAL;
		return AIS_ERR;
	}
	return store_writer_splice(p->sw, pfd, n);
}

int ol_put_write(ol_put_t *p, const void *b, size_t n)
{
	if (store_writer_write(p->sw, b, n) != AIS_OK)
		return AIS_ERR;
	if (p->repl)
		tgt_repl_write(p->repl, b, n);
	if (p->ecs)
		ec_stream_write(p->ecs, b, n);
	return AIS_OK;
}

/* Builds and saves the tar index of a just-written shard. Best effort: a
 * shard that is not a valid tar is still a fine object. */
static void index_tar(ol_put_t *p)
{
	store_tar_index_t *idx;
	store_meta_t m;
	buf_t msg = BUF_INIT;
	int fd;

	if (store_open_obj(p->t->store, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, &fd, &m) != AIS_OK)
		return; /* deleted or replaced already */
	if (store_tar_index(p->t->store, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, &m, fd, &idx, &msg) ==
	    AIS_OK)
		store_tar_index_free(idx);
	else
		log_info("PUT %.*s/%.*s: not indexed as a tar: %s", (int)p->bck.len, p->bck.ptr,
			 (int)MIN(p->obj.len, 256), p->obj.ptr, msg.ptr ? msg.ptr : strerror(errno));
	close(fd);
	buf_free(&msg);
}

/* Does custom ("k=v,k=v") have an s3.etag item? */
static bool has_etag(const char *custom)
{
	for (const char *p = custom; p && *p; p = strchr(p, ','), p = p ? p + 1 : NULL)
		if (!strncmp(p, "s3.etag=", 8))
			return true;
	return false;
}

/* custom with "s3.etag=md5" added (malloc'd), or NULL when there is no MD5
 * or no room for it (the object then answers S3 with its checksum). */
static char *with_etag(const char *custom, const char *md5)
{
	size_t cl = custom ? strlen(custom) : 0;
	if (strlen(md5) != 32 || cl + 42 >= STORE_CUSTOM_MAX)
		return NULL;
	buf_t b = BUF_INIT;
	if (cl)
		buf_addf(&b, "%s,", custom);
	buf_addf(&b, "s3.etag=%s", md5);
	return buf_detach(&b, NULL);
}

static int put_commit(ol_put_t *p)
{
	/* a versioned bucket: the current version kept first (olver.c) */
	if (!p->vcustom && olver_put_prepare(p, &p->vcustom) != AIS_OK)
		return AIS_ERR;
	if (p->vcustom)
		p->custom = p->vcustom;
	if (p->w && p->w->cluster && !p->stamp) /* rule 9 */
		store_writer_after(p->sw, store_tomb_get(p->t->store, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len));
	const char *want = p->want_type != CKSUM_NONE ? p->want_hex : NULL;
	bool copies = p->w && p->w->cluster && p->w->n > 1;
	const char *custom = p->custom;
	char *through = NULL;
	if (p->w && p->w->cluster) { /* a remote bucket: the remote takes it first (olremote.c) */
		int berr;
		bk_bucket_t *bk = olr_backend(p->t, p->bck, &berr, &p->msg);
		int rc = bk ? olr_put(p->t, bk, p, &through) : AIS_OK, e = errno;
		free(bk);
		if (berr || rc != AIS_OK) {
			errno = berr ? EAGAIN : e;
			return AIS_ERR;
		}
		if (through)
			custom = through;
	}
	if (p->md5_etag && !has_etag(custom)) { /* rule 7 */
		if (store_writer_seal(p->sw, p->want_type, want, NULL) != AIS_OK) {
			free(through);
			return AIS_ERR;
		}
		char *c2 = with_etag(custom, store_writer_md5(p->sw));
		if (c2) {
			free(through);
			custom = through = c2;
		}
	}
	bmd_props_t bp;
	store_meta_t sm;
	bool ec = false;
	if (p->w && p->w->cluster && ec_props(p->t, p->bck, &bp) && bp.ec_enabled &&
	    store_writer_seal(p->sw, p->want_type, want, &sm) == AIS_OK && place_ec(&bp, sm.size)) {
		/* erasure coded (ec.c): the slices first, then the whole copy here */
		copies = false;
		ec = true;
		const char *c0 = p->custom;
		p->custom = custom;
		int erc = ec_put(p, &bp);
		p->custom = c0;
		if (erc != AIS_OK) {
			free(through);
			return AIS_ERR;
		}
		/* whole copies of an earlier small write on the other holders go */
		tgt_unreplicate(p->w, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len);
		if (bp.ec_no_whole) { /* the slices are the object (ec.c rule 5): p->meta is theirs */
			free(through);
			if (store_delete(p->t->store, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len) != AIS_OK &&
			    errno != ENOENT)
				log_warn("PUT %.*s/%.*s: the whole copy of an earlier write stays", (int)p->bck.len,
					 p->bck.ptr, (int)MIN(p->obj.len, 256), p->obj.ptr);
			tgt_placed_check(p->t, p->w, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len);
			return AIS_OK;
		}
	}
	if (copies && (p->repl ? tgt_repl_commit(p->t, p->repl, p->sw, p->w, p->bck.ptr, p->bck.len, p->obj.ptr,
						 p->obj.len, p->want_type, want, custom, &p->msg)
			       : tgt_replicate(p->t, p->sw, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, p->w,
					       p->want_type, want, custom, &p->msg)) != AIS_OK) {
		free(through);
		return AIS_ERR;
	}
	int rc = store_writer_commit(p->sw, p->want_type, want, custom, &p->meta);
	free(through);
	if (rc != AIS_OK) {
		int e = errno;
		if (copies)
			tgt_unreplicate(p->w, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len);
		else if (ec)
			ec_delete_slices(p->t, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, 0);
		errno = e;
		return AIS_ERR;
	}
	if (p->obj.len > 4 && !memcmp(p->obj.ptr + p->obj.len - 4, ".tar", 4))
		index_tar(p);
	if (p->w)
		tgt_placed_check(p->t, p->w, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len);
	if (!ec && p->t->reb && ec_props(p->t, p->bck, &bp) && bp.ec_no_whole && place_ec(&bp, p->meta.size))
		/* a whole copy (another target's rebalance sent it) of an object
		 * kept as slices only: the repair encodes what is missing and
		 * drops it (ecrepair.c rule 7) */
		reb_enqueue(p->t->reb, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len);
	return AIS_OK;
}

#define NAME_LOCKS 1024 /* (a long commit, an EC encode or a large version kept, holds 1 in 1024 of the names) */
static pthread_mutex_t name_mu[NAME_LOCKS];
static pthread_once_t name_once = PTHREAD_ONCE_INIT;

static void name_init(void)
{
	for (size_t i = 0; i < NAME_LOCKS; i++)
		pthread_mutex_init(&name_mu[i], NULL);
}

static pthread_mutex_t *name_lock_of(sv_t bck, sv_t obj)
{
	pthread_once(&name_once, name_init);
	return &name_mu[(hrw_name_hash(bck.ptr, bck.len) ^ hrw_mix(hrw_name_hash(obj.ptr, obj.len))) % NAME_LOCKS];
}

void ol_name_lock(sv_t bck, sv_t obj) { pthread_mutex_lock(name_lock_of(bck, obj)); }

void ol_name_unlock(sv_t bck, sv_t obj) { pthread_mutex_unlock(name_lock_of(bck, obj)); }

/* Rule 8: a conditional write's check, against the copy here (or an
 * object kept as slices only: its slices' metadata). */
static int precond_check(ol_put_t *p)
{
	store_meta_t cur;
	bmd_props_t bp;
	if (store_lookup(p->t->store, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, &cur) == AIS_OK)
		return p->precond(p, &cur);
	if (errno != ENOENT)
		return AIS_ERR;
	if (p->w && p->w->cluster && ec_props(p->t, p->bck, &bp) && bp.ec_enabled && bp.ec_no_whole) {
		int rc = ec_stat(p->t, p->bck, p->obj, &cur, &p->msg);
		return rc == AIS_OK ? p->precond(p, &cur) : errno == ENOENT ? p->precond(p, NULL) : AIS_ERR;
	}
	return p->precond(p, NULL);
}

int ol_put_commit(ol_put_t *p)
{
	if (!p->precond && !olver_put_serial(p))
		return put_commit(p);
	ol_name_lock(p->bck, p->obj); /* rule 8; olver.c rule 6 */
	int rc = p->precond ? precond_check(p) : AIS_OK;
	if (rc == AIS_OK)
		rc = put_commit(p);
	int e = errno;
	ol_name_unlock(p->bck, p->obj);
	errno = e;
	return rc;
}

void ol_put_free(ol_put_t *p)
{
	tgt_repl_free(p->repl); /* (unfinished: the receivers keep nothing) */
	p->repl = NULL;
	ec_stream_free(p->ecs);
	p->ecs = NULL;
	store_writer_free(p->sw);
	p->sw = NULL;
	free(p->vcustom);
	p->vcustom = NULL;
	buf_free(&p->msg);
}

/* --- the streamed body ----------------------------------------------------------- */

#define OL_PIPE (1u << 20) /* rule 6: the pipe of a spliced body (the default 64 KiB if refused) */

static _Atomic uint64_t *spliced_ctr; /* body bytes spliced into sinks (ol_metrics_init) */

void ol_metrics_init(void)
{
	spliced_ctr = metrics_counter("aisd_put_spliced_bytes_total", "",
				      "Object bytes received from another target by splice(2), socket to pipe "
				      "to the temp file, never copied through this process.");
}

struct pipe {
	int pfd[2];        /* rule 6: the spliced body's pipe, else -1 */
	int own[2];        /* ... and the pool task's, where its bytes go before the file */
	uint64_t inpipe;   /* bytes in it that no pool task took yet */
	size_t pipesz;     /* its capacity */
	size_t take;       /* bytes the pool task in flight moves out of it */
	buf_t buf[2];
	int cur;      /* the buffer the loop fills */
	int wbuf;     /* the buffer the pool writes */
	size_t bufsz;
	bool busy;    /* a pool task is in flight */
	bool ended;   /* the body is whole and accepted */
	bool opened;  /* the sink began: the body is wanted */
	bool committing, failed;
	bool net;     /* the steps wait on other nodes: the network pool */
	int err;      /* errno of the failed pool step */
};

static void io_done(http_req_t *req);

static void offload(http_req_t *req, http_work_fn work)
{
	struct pipe *q = ((ol_stream_t *)req->state)->priv;
	(q->net ? http_offload_net : http_offload)(req, work, io_done);
}

static void pipe_cleanup(void *arg)
{
	ol_stream_t *s = arg;
	struct pipe *q = s->priv;
	if (s->ops->cleanup)
		s->ops->cleanup(s);
	buf_free(&q->buf[0]);
	buf_free(&q->buf[1]);
	for (int i = 0; i < 2; i++) {
		if (q->pfd[i] >= 0)
			close(q->pfd[i]);
		if (q->own[i] >= 0)
			close(q->own[i]);
	}
}

static void step(http_req_t *req);

static void begin_work(http_req_t *req)
{
	ol_stream_t *s = req->state;
	struct pipe *q = s->priv;
	if (s->ops->begin(s) != AIS_OK)
		q->err = errno ? errno : EIO;
}

static void write_work(http_req_t *req)
{
	ol_stream_t *s = req->state;
	struct pipe *q = s->priv;
	buf_t *b = &q->buf[q->wbuf];
	if (s->ops->write(s, b->ptr, b->len) != AIS_OK)
		q->err = errno ? errno : EIO;
	s->size += b->len;
	b->len = 0;
}

/* Rule 6: the bytes the loop put in the pipe go first into the task's own
 * pipe (its buffers moved, no copy), then to the sink: the file write
 * holds its pipe's lock, and the loop must never wait for it. */
static void splice_work(http_req_t *req)
{
	ol_stream_t *s = req->state;
	struct pipe *q = s->priv;
	for (size_t left = q->take; left > 0;) {
		ssize_t n = splice(q->pfd[0], NULL, q->own[1], NULL, left, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_warn("PUT: the body out of its pipe (%zu bytes short)", left);
			q->err = EIO;
			return;
		}
		if (s->ops->splice(s, q->own[0], (size_t)n) != AIS_OK) {
			q->err = errno ? errno : EIO;
			return;
		}
		s->size += (uint64_t)n;
		left -= (size_t)n;
		if (spliced_ctr)
			METRICS_ADD(spliced_ctr, (uint64_t)n);
	}
}

static void commit_work(http_req_t *req)
{
	ol_stream_t *s = req->state;
	struct pipe *q = s->priv;
	if (s->ops->commit(s) != AIS_OK)
		q->err = errno ? errno : EIO;
}

static void io_done(http_req_t *req)
{
	ol_stream_t *s = req->state;
	struct pipe *q = s->priv;
	q->busy = false;
	q->inpipe -= q->take;
	q->take = 0;
	if (q->err) {
		q->failed = true;
		s->ops->fail(s, q->err);
		return;
	}
	q->opened = true;
	if (q->committing) {
		s->ops->reply(s);
		return;
	}
	step(req);
	http_req_resume(req);
}

/* Starts the next pool task if one is due: a full buffer (or the last
 * piece) to write, or the commit once everything is written. */
static void step(http_req_t *req)
{
	ol_stream_t *s = req->state;
	struct pipe *q = s->priv;
	if (q->busy || q->failed || !q->opened)
		return;
	if (q->pfd[0] >= 0 && q->inpipe > 0) { /* rule 6 */
		q->take = (size_t)q->inpipe;
		q->busy = true;
		offload(req, splice_work);
		return;
	}
	buf_t *b = &q->buf[q->cur];
	if (b->len == q->bufsz || (q->ended && b->len > 0)) {
		q->wbuf = q->cur;
		q->cur ^= 1;
		q->busy = true;
		offload(req, write_work);
	} else if (q->ended) {
		q->busy = true;
		q->committing = true;
		offload(req, commit_work);
	}
}

void ol_stream_emit(ol_stream_t *s, const char *p, size_t n)
{
	struct pipe *q = s->priv;
	buf_add(&q->buf[q->cur], p, n);
}

static int on_body(http_req_t *req, const char *data, size_t n)
{
	ol_stream_t *s = req->state;
	struct pipe *q = s->priv;
	if (q->failed)
		return AIS_ERR;
	if (q->pfd[0] >= 0) { /* rule 6: n more bytes in the pipe, or those that came with the head */
		if (data && write(q->pfd[1], data, n) != (ssize_t)n) { /* (on_room: they fit) */
			log_warn("PUT: the body's first bytes into its pipe");
			q->failed = true;
			http_resp_error(req, 500, "cannot buffer the request body");
			return AIS_ERR;
		}
		q->inpipe += n;
	} else if (s->ops->feed) {
		if (s->ops->feed(s, data, n) != AIS_OK) {
			q->failed = true;
			return AIS_ERR;
		}
	} else {
		ol_stream_emit(s, data, n);
	}
	step(req);
	return AIS_OK;
}

static size_t on_room(http_req_t *req)
{
	ol_stream_t *s = req->state;
	struct pipe *q = s->priv;
	buf_t *b = &q->buf[q->cur];
	if (!q->opened)
		return 0; /* rule 2 */
	if (q->pfd[0] >= 0)
		return q->inpipe < q->pipesz ? q->pipesz - (size_t)q->inpipe : 0;
	return b->len < q->bufsz ? q->bufsz - b->len : 0;
}

static void on_end(http_req_t *req)
{
	ol_stream_t *s = req->state;
	struct pipe *q = s->priv;
	if (q->failed || q->ended)
		return;
	if (s->ops->end && s->ops->end(s) != AIS_OK) {
		q->failed = true;
		return;
	}
	q->ended = true;
	step(req);
}

/* A pipe of OL_PIPE bytes (the default if refused); its capacity. 0: none. */
static size_t ol_pipe(int p[2])
{
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) {
		p[0] = p[1] = -1;
		return 0;
	}
	fcntl(p[1], F_SETPIPE_SZ, OL_PIPE);
	int sz = fcntl(p[1], F_GETPIPE_SZ);
	return sz > 0 ? (size_t)sz : 4096;
}

/* Rule 6: the body goes by the pipe if the connection allows it. */
static void splice_body(http_req_t *req, struct pipe *q)
{
	if (!http_resp_can_splice(req))
		return;
	q->pipesz = ol_pipe(q->pfd);
	if (q->pipesz && ol_pipe(q->own) && http_req_splice_to(req, q->pfd[1]))
		return;
	for (int i = 0; i < 2; i++) { /* (a chunked body, no descriptors) */
		if (q->pfd[i] >= 0)
			close(q->pfd[i]);
		if (q->own[i] >= 0)
			close(q->own[i]);
		q->pfd[i] = q->own[i] = -1;
	}
}

void ol_stream_start(http_req_t *req, ol_stream_t *s)
{
	const target_t *t = req->ctx;
	struct pipe *q = arena_zalloc(req->arena, sizeof(*q));

	s->priv = q;
	s->req = req;
	req->state = s;
	q->pfd[0] = q->pfd[1] = q->own[0] = q->own[1] = -1;
	arena_cleanup_add(req->arena, pipe_cleanup, s);
	q->bufsz = t->conf->put_buffer;
	if (req->content_length >= 0 && (uint64_t)req->content_length < q->bufsz)
		q->bufsz = req->content_length > 0 ? (size_t)req->content_length : 1;
	req->on_body = on_body;
	req->on_room = on_room;
	req->on_body_end = on_end;
	q->net = s->put && ol_put_remote(s->put);
	if (s->ops->splice && s->splice_min && req->content_length >= 0 &&
	    (uint64_t)req->content_length >= s->splice_min && !s->ops->feed && !q->net)
		splice_body(req, q);
	q->busy = true;
	offload(req, begin_work);
	if (!req->has_body)
		on_end(req); /* no body at all: checked now, committed after begin */
}
