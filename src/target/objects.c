/*
 * objects.c - the object API on a target: GET, HEAD, PUT and DELETE of
 * /v1/objects/BUCKET/OBJECT.
 *
 * GET/HEAD open the object on the event loop (a LevelDB get and an open),
 * check conditionals and Range, and hand the file to the HTTP layer, which
 * sends it without blocking the loop on disk. PUT streams the body through
 * two buffers of store.put_buffer bytes: the loop fills one while an I/O
 * thread writes the other, so memory per PUT is bounded and the socket and
 * the disk work in parallel; the commit (checksum check, fsync, rename,
 * LevelDB) runs on the I/O pool and the client hears 200 only after it.
 * The body is read (and an expected 100 Continue sent) only once the
 * writer is open, so a refusal (507, 404) comes before any body is sent.
 *
 * GET/HEAD with ?archpath=MEMBER serve one file of a tar shard: the shard
 * is opened on the loop, its tar index (store_tar_index: saved in LevelDB,
 * or built from the headers) is read on the I/O pool, and the member goes
 * out as a byte range of the shard's file (sendfile, Range relative to the
 * member). A PUT of a name ending in ".tar" builds the index right after
 * the commit, in the same pool task; a shard that is not a valid tar is
 * still stored (only archpath reads of it fail, with 400).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "aisd/larc.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/target.h"
#include "aisd/util.h"
#include "aisd/banned.h"

static void etag_of(const store_meta_t *m, char *out, size_t outsz)
{
	if (m->cksum[0])
		snprintf(out, outsz, "\"%s\"", m->cksum);
	else
		snprintf(out, outsz, "\"v%llx-%llx\"", (unsigned long long)m->version,
			 (unsigned long long)m->mtime_ns);
}

static void prop_headers(http_req_t *req, const store_meta_t *m)
{
	char t[64], etag[96];
	http_resp_header(req, "Ais-Checksum-Type", "%s", store_cksum_name(m->cksum_type));
	if (m->cksum[0])
		http_resp_header(req, "Ais-Checksum-Value", "%s", m->cksum);
	http_resp_header(req, "Ais-Version", "%llu", (unsigned long long)m->version);
	tgt_fmt_time(m->atime_ns ? m->atime_ns : m->mtime_ns, t, sizeof(t));
	http_resp_header(req, "Ais-Atime", "%s", t);
	if (m->custom[0])
		http_resp_header(req, "Ais-Custom-Md", "%s", m->custom);
	time_http_date(m->mtime_ns, t, sizeof(t));
	http_resp_header(req, "Last-Modified", "%s", t);
	http_resp_header(req, "Ais-Mtime-Ns", "%lld", (long long)m->mtime_ns);
	etag_of(m, etag, sizeof(etag));
	http_resp_header(req, "ETag", "%s", etag);
}

/* Does the If-Match / If-None-Match list h contain etag (or "*")? */
static bool etag_listed(sv_t h, const char *etag)
{
	sv_t e = sv_from(etag);
	const char *p = h.ptr, *end = h.ptr + h.len;
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end;
		sv_t item = sv_trim((sv_t){p, (size_t)(stop - p)});
		if (sv_startswith(item, "W/"))
			item.ptr += 2, item.len -= 2;
		if (sv_eqstr(item, "*") || sv_eq(item, e))
			return true;
		p = stop + 1;
	}
	return false;
}

/* Returns 0 to go on, or the status (304/412) the conditionals ask for. */
static int check_conditions(http_req_t *req, const store_meta_t *m)
{
	char etag[96];
	int64_t t;
	sv_t im = http_req_header(req, "If-Match"), inm = http_req_header(req, "If-None-Match");
	sv_t ims = http_req_header(req, "If-Modified-Since"), ius = http_req_header(req, "If-Unmodified-Since");
	int64_t mtime_s = m->mtime_ns / 1000000000LL;

	etag_of(m, etag, sizeof(etag));
	if (im.ptr) {
		if (!etag_listed(im, etag))
			return 412;
	} else if (ius.ptr && time_parse_http_date(ius.ptr, ius.len, &t) == AIS_OK) {
		if (mtime_s > t / 1000000000LL)
			return 412;
	}
	if (inm.ptr) {
		if (etag_listed(inm, etag))
			return req->method == HTTP_GET || req->method == HTTP_HEAD ? 304 : 412;
	} else if (ims.ptr && (req->method == HTTP_GET || req->method == HTTP_HEAD) &&
		   time_parse_http_date(ims.ptr, ims.len, &t) == AIS_OK) {
		if (mtime_s <= t / 1000000000LL)
			return 304;
	}
	return 0;
}

void tgt_not_found(http_req_t *req, sv_t bck, sv_t obj)
{
	target_t *t = req->ctx;
	store_bucket_t b;
	if (store_bucket_get(t->store, bck.ptr, bck.len, &b) != AIS_OK)
		http_resp_error(req, 404, "bucket \"%.*s\" does not exist", (int)bck.len, bck.ptr);
	else
		http_resp_error(req, 404, "object \"%.*s/%.*s\" does not exist", (int)bck.len, bck.ptr,
				(int)MIN(obj.len, 512), obj.ptr);
}

void tgt_open_failed(http_req_t *req, sv_t bck, sv_t obj)
{
	if (errno == ENOENT)
		tgt_not_found(req, bck, obj);
	else
		tgt_resp_errno(req, errno, "object");
}

/*
 * A GET or HEAD that needs the I/O pool before it can answer: the copy here
 * is missing (a cluster fetches it from another holder), unreadable, or
 * must be checksummed first (store.verify_on_read); a damaged copy is
 * deleted and replaced from another holder (mirror.c). Then the request
 * starts over, once.
 */
struct gfix {
	target_t *t;
	sv_t bck, obj;
	tgt_where_t *w;
	int fd;          /* verify: the open copy; -1 once closed or handed on */
	store_meta_t m;
	bool verify;     /* check fd first; else fetch */
	bool refetched;  /* the copy here was bad or missing: a new one was asked for */
	int err;
	buf_t msg;
};

static int get_object(http_req_t *req, target_t *t, sv_t bck, sv_t obj, tgt_where_t *w, bool again);
static void serve_open(http_req_t *req, target_t *t, sv_t bck, sv_t obj, int fd, store_meta_t *mp);

static void gfix_cleanup(void *arg)
{
	struct gfix *g = arg;
	if (g->fd >= 0)
		close(g->fd);
	buf_free(&g->msg);
}

static void gfix_work(http_req_t *req)
{
	struct gfix *g = req->state;
	if (g->verify) {
		if (store_verify_fd(g->fd, &g->m) == AIS_OK)
			return;
		g->err = errno;
		close(g->fd);
		g->fd = -1;
		log_warnx("%.*s/%.*s: the copy here does not match its checksum (%s): %s", (int)g->bck.len,
			  g->bck.ptr, (int)MIN(g->obj.len, 200), g->obj.ptr, g->m.cksum,
			  g->w->cluster ? "replacing it from another copy" : "damaged");
		if (!g->w->cluster)
			return;
		store_delete(g->t->store, g->bck.ptr, g->bck.len, g->obj.ptr, g->obj.len);
	}
	g->refetched = true;
	g->err = tgt_fetch(g->t, g->bck.ptr, g->bck.len, g->obj.ptr, g->obj.len, &g->msg) == AIS_OK ? 0 : errno;
}

static void gfix_done(http_req_t *req)
{
	struct gfix *g = req->state;
	if (g->fd >= 0 && !g->err) { /* verified */
		int fd = g->fd;
		g->fd = -1;
		serve_open(req, g->t, g->bck, g->obj, fd, &g->m);
		return;
	}
	if (g->err == EBADMSG && !g->w->cluster) {
		http_resp_error(req, 500, "object %.*s/%.*s is damaged: its data does not match its %s checksum",
				(int)g->bck.len, g->bck.ptr, (int)MIN(g->obj.len, 512), g->obj.ptr,
				store_cksum_name(g->m.cksum_type));
		return;
	}
	if (g->err && g->err != ENOENT) {
		http_resp_error(req, 502, "object %.*s/%.*s: no good copy could be fetched: %s", (int)g->bck.len,
				g->bck.ptr, (int)MIN(g->obj.len, 512), g->obj.ptr, g->msg.ptr ? g->msg.ptr : "");
		return;
	}
	get_object(req, g->t, g->bck, g->obj, g->w, true);
}

static void gfix_start(http_req_t *req, target_t *t, sv_t bck, sv_t obj, tgt_where_t *w, int fd,
		       const store_meta_t *m)
{
	struct gfix *g = arena_zalloc(req->arena, sizeof(*g));
	g->t = t;
	g->bck = bck;
	g->obj = obj;
	g->w = w;
	g->fd = fd;
	g->verify = fd >= 0;
	if (m)
		g->m = *m;
	req->state = g;
	arena_cleanup_add(req->arena, gfix_cleanup, g);
	http_offload(req, gfix_work, gfix_done);
}

static int get_object(http_req_t *req, target_t *t, sv_t bck, sv_t obj, tgt_where_t *w, bool again)
{
	store_meta_t m;
	int fd;

	if (store_open_obj(t->store, bck.ptr, bck.len, obj.ptr, obj.len, &fd, &m) != AIS_OK) {
		if (w->cluster && !again) {
			gfix_start(req, t, bck, obj, w, -1, NULL); /* missing or unreadable here */
			return AIS_OK;
		}
		tgt_open_failed(req, bck, obj);
		return AIS_OK;
	}
	if (!again && req->method == HTTP_GET && t->conf->verify_on_read && !http_req_has_header(req, "Range") &&
	    !http_req_has_header(req, TGT_INTRA)) {
		gfix_start(req, t, bck, obj, w, fd, &m);
		return AIS_OK;
	}
	serve_open(req, t, bck, obj, fd, &m);
	return AIS_OK;
}

static void serve_open(http_req_t *req, target_t *t, sv_t bck, sv_t obj, int fd, store_meta_t *mp)
{
	store_meta_t m = *mp;
	uint64_t start = 0, len;
	int cond = check_conditions(req, &m);
	if (cond) {
		close(fd);
		prop_headers(req, &m);
		http_resp_status(req, cond);
		http_resp_send(req, "", 0);
		return;
	}
	len = m.size;
	prop_headers(req, &m);
	if (tgt_resp_range(req, m.size, "application/octet-stream", "an object", &start, &len) != AIS_OK) {
		close(fd);
		return;
	}
	if (time_now_ns() - m.atime_ns > 60LL * 1000000000LL)
		store_touch(t->store, bck.ptr, bck.len, obj.ptr, obj.len, &m);
	http_resp_send_file(req, fd, (off_t)start, len);
}

/* --- GET/HEAD ?archpath= --------------------------------------------------- */

struct arch {
	target_t *t;
	sv_t bck, obj, path; /* path: the member's name */
	int fd;              /* the shard; -1 once handed to the response */
	store_meta_t m;
	uint64_t off, size;  /* the member's bytes in the shard */
	int err;             /* 0, ENOENT (no such member), EINVAL (not a tar), other */
	buf_t msg;
};

static void arch_cleanup(void *arg)
{
	struct arch *a = arg;
	if (a->fd >= 0)
		close(a->fd);
	buf_free(&a->msg);
}

static void arch_find(struct arch *a, store_tar_index_t *idx)
{
	if (store_tar_index_find(idx, a->path.ptr, a->path.len, &a->off, &a->size) != AIS_OK)
		a->err = ENOENT;
	store_tar_index_free(idx);
}

static void arch_work(http_req_t *req)
{
	struct arch *a = req->state;
	store_tar_index_t *idx;
	if (store_tar_index(a->t->store, a->bck.ptr, a->bck.len, a->obj.ptr, a->obj.len, &a->m, a->fd,
			    &idx, &a->msg) != AIS_OK) {
		a->err = errno == EINVAL ? EINVAL : (errno ? errno : EIO);
		return;
	}
	arch_find(a, idx);
}

const char *tgt_content_type(sv_t name)
{
	static const struct { const char *ext, *type; } types[] = {
		{".jpg", "image/jpeg"}, {".jpeg", "image/jpeg"}, {".png", "image/png"},
		{".json", "application/json"}, {".txt", "text/plain"}, {".cls", "text/plain"},
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		size_t el = strlen(types[i].ext);
		if (name.len >= el && !strncasecmp(name.ptr + name.len - el, types[i].ext, el))
			return types[i].type;
	}
	return "application/octet-stream";
}

static void arch_done(http_req_t *req)
{
	struct arch *a = req->state;
	uint64_t start = 0, len = a->size;

	if (a->err == ENOENT) {
		http_resp_error(req, 404, "archpath \"%.*s\" not found in %.*s/%.*s",
				(int)MIN(a->path.len, 512), a->path.ptr, (int)a->bck.len, a->bck.ptr,
				(int)MIN(a->obj.len, 512), a->obj.ptr);
		return;
	}
	if (a->err == EINVAL) {
		http_resp_error(req, 400, "%.*s/%.*s is not a valid tar archive: %s", (int)a->bck.len,
				a->bck.ptr, (int)MIN(a->obj.len, 512), a->obj.ptr,
				a->msg.ptr ? a->msg.ptr : "bad header");
		return;
	}
	if (a->err) {
		tgt_resp_errno(req, a->err, "object");
		return;
	}
	char lm[64];
	time_http_date(a->m.mtime_ns, lm, sizeof(lm));
	http_resp_header(req, "Ais-Version", "%llu", (unsigned long long)a->m.version);
	http_resp_header(req, "Last-Modified", "%s", lm);
	if (tgt_resp_range(req, a->size, tgt_content_type(a->path), "a member", &start, &len) != AIS_OK)
		return;
	int fd = a->fd;
	a->fd = -1;
	http_resp_send_file(req, fd, (off_t)(a->off + start), len);
}

static int get_archpath(http_req_t *req, target_t *t, sv_t bck, sv_t obj, sv_t path)
{
	struct arch *a;

	if (!name_object_valid(path.ptr, path.len)) {
		http_resp_error(req, 400, "invalid archpath: 1 to %d bytes of UTF-8 without NUL bytes",
				NAME_OBJECT_MAX);
		return AIS_OK;
	}
	a = arena_zalloc(req->arena, sizeof(*a));
	a->t = t;
	a->bck = bck;
	a->obj = obj;
	a->path = path;
	if (store_open_obj(t->store, bck.ptr, bck.len, obj.ptr, obj.len, &a->fd, &a->m) != AIS_OK) {
		tgt_open_failed(req, bck, obj);
		return AIS_OK;
	}
	arena_cleanup_add(req->arena, arch_cleanup, a);
	req->state = a;
	store_tar_index_t *idx;
	if (store_tar_index_cached(t->store, bck.ptr, bck.len, obj.ptr, obj.len, &a->m, &idx) == AIS_OK) {
		arch_find(a, idx); /* in memory: no trip through the I/O pool */
		arch_done(req);
	} else {
		http_offload(req, arch_work, arch_done);
	}
	return AIS_OK;
}

/* --- PUT ----------------------------------------------------------------- */

struct put {
	target_t *t;
	sv_t bck, obj;
	tgt_where_t *where;
	buf_t msg;         /* why a replicated PUT failed */
	store_writer_t *w;
	buf_t buf[2];
	int cur;           /* buffer the loop fills */
	int wbuf;          /* buffer the I/O thread writes */
	size_t bufsz;
	bool busy;         /* an I/O task is in flight */
	bool ended;        /* whole body received */
	bool opened;       /* the writer exists: the body is wanted */
	bool committing;
	bool failed;
	int err;           /* errno of the failed step */
	enum store_cksum want_type;
	char want_hex[STORE_CKSUM_HEX_MAX];
	char *custom;
	store_meta_t meta;
};

static void put_cleanup(void *arg)
{
	struct put *p = arg;
	store_writer_free(p->w);
	buf_free(&p->msg);
	buf_free(&p->buf[0]);
	buf_free(&p->buf[1]);
}

static void put_step(http_req_t *req);

static void put_fail(http_req_t *req, struct put *p)
{
	p->failed = true;
	if (p->err == ENOSPC)
		log_warnx("PUT %.*s/%.*s: insufficient storage", (int)p->bck.len, p->bck.ptr,
			  (int)MIN(p->obj.len, 256), p->obj.ptr);
	if (p->err == EAGAIN) {
		log_warnx("PUT %.*s/%.*s failed: %s", (int)p->bck.len, p->bck.ptr, (int)MIN(p->obj.len, 256),
			  p->obj.ptr, p->msg.ptr ? p->msg.ptr : "");
		http_resp_error(req, 503, "object not stored: %s", p->msg.ptr ? p->msg.ptr : "copies failed");
		return;
	}
	tgt_resp_errno(req, p->err, "object");
}

static void begin_work(http_req_t *req)
{
	struct put *p = req->state;
	if (store_writer_begin(p->t->store, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, &p->w) != AIS_OK ||
	    store_writer_also(p->w, p->want_type) != AIS_OK)
		p->err = errno ? errno : EIO;
}

static void write_work(http_req_t *req)
{
	struct put *p = req->state;
	buf_t *b = &p->buf[p->wbuf];
	if (store_writer_write(p->w, b->ptr, b->len) != AIS_OK)
		p->err = errno ? errno : EIO;
	b->len = 0;
}

/* Builds and saves the tar index of a just-written shard. Best effort: a
 * shard that is not a valid tar is still a fine object. */
static void put_index_tar(struct put *p)
{
	store_tar_index_t *idx;
	store_meta_t m;
	buf_t msg = BUF_INIT;
	int fd;

	if (store_open_obj(p->t->store, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, &fd, &m) != AIS_OK)
		return; /* deleted or replaced already */
	if (store_tar_index(p->t->store, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, &m, fd, &idx,
			    &msg) == AIS_OK)
		store_tar_index_free(idx);
	else
		log_info("PUT %.*s/%.*s: not indexed as a tar: %s", (int)p->bck.len, p->bck.ptr,
			 (int)MIN(p->obj.len, 256), p->obj.ptr, msg.ptr ? msg.ptr : strerror(errno));
	close(fd);
	buf_free(&msg);
}

static void commit_work(http_req_t *req)
{
	struct put *p = req->state;
	bool copies = p->where->cluster && p->where->n > 1;
	if (copies && tgt_replicate(p->t, p->w, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, p->where,
				    p->want_type, p->want_hex, p->custom, &p->msg) != AIS_OK) {
		p->err = errno ? errno : EIO;
		return;
	}
	if (store_writer_commit(p->w, p->want_type, p->want_hex, p->custom, &p->meta) != AIS_OK) {
		p->err = errno ? errno : EIO;
		if (copies)
			tgt_unreplicate(p->where, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len);
		return;
	}
	if (p->obj.len > 4 && !memcmp(p->obj.ptr + p->obj.len - 4, ".tar", 4))
		put_index_tar(p);
	tgt_placed_check(p->t, p->where, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len);
}

static void io_done(http_req_t *req)
{
	struct put *p = req->state;
	p->busy = false;
	if (p->err) {
		put_fail(req, p);
		return;
	}
	p->opened = true;
	if (p->committing) {
		prop_headers(req, &p->meta);
		http_resp_send(req, "", 0);
		return;
	}
	put_step(req);
	http_req_resume(req);
}

/* Starts the next I/O task if one is due: a full buffer (or the last
 * piece) to write, or the commit once everything is written. */
static void put_step(http_req_t *req)
{
	struct put *p = req->state;
	if (p->busy || p->failed || !p->w)
		return;
	buf_t *b = &p->buf[p->cur];
	if (b->len == p->bufsz || (p->ended && b->len > 0)) {
		p->wbuf = p->cur;
		p->cur ^= 1;
		p->busy = true;
		http_offload(req, write_work, io_done);
	} else if (p->ended) {
		p->busy = true;
		p->committing = true;
		http_offload(req, commit_work, io_done);
	}
}

static int put_body(http_req_t *req, const char *data, size_t n)
{
	struct put *p = req->state;
	if (p->failed)
		return AIS_ERR;
	buf_add(&p->buf[p->cur], data, n);
	put_step(req);
	return AIS_OK;
}

static size_t put_room(http_req_t *req)
{
	struct put *p = req->state;
	buf_t *b = &p->buf[p->cur];
	if (!p->opened)
		return 0; /* not before store_writer_begin succeeded (and 100 Continue went out) */
	return b->len < p->bufsz ? p->bufsz - b->len : 0;
}

static void put_end(http_req_t *req)
{
	struct put *p = req->state;
	p->ended = true;
	put_step(req);
}

static int put_object(http_req_t *req, target_t *t, sv_t bck, sv_t obj, tgt_where_t *w)
{
	store_bucket_t b;
	struct put *p;

	if (store_bucket_get(t->store, bck.ptr, bck.len, &b) != AIS_OK) {
		http_resp_error(req, 404, "bucket \"%.*s\" does not exist", (int)bck.len, bck.ptr);
		return AIS_OK;
	}
	p = arena_zalloc(req->arena, sizeof(*p));
	p->t = t;
	p->bck = bck;
	p->obj = obj;
	p->where = w;
	p->bufsz = t->conf->put_buffer;
	if (req->content_length >= 0 && (uint64_t)req->content_length < p->bufsz)
		p->bufsz = req->content_length > 0 ? (size_t)req->content_length : 1;

	sv_t ct = http_req_header(req, "Ais-Checksum-Type"), cv = http_req_header(req, "Ais-Checksum-Value");
	if (ct.ptr && ct.len) {
		if (store_cksum_parse(ct.ptr, ct.len, &p->want_type) != AIS_OK) {
			http_resp_error(req, 400, "unknown checksum type \"%.*s\": use xxhash, md5, sha256 or none",
					(int)MIN(ct.len, 64), ct.ptr);
			return AIS_OK;
		}
		if (p->want_type != CKSUM_NONE) {
			if (!cv.ptr || cv.len == 0 || cv.len >= sizeof(p->want_hex)) {
				http_resp_error(req, 400, "Ais-Checksum-Value missing or too long");
				return AIS_OK;
			}
			for (size_t i = 0; i < cv.len; i++)
				p->want_hex[i] = (char)(cv.ptr[i] >= 'A' && cv.ptr[i] <= 'F' ? cv.ptr[i] | 0x20 : cv.ptr[i]);
		}
	} else if (cv.ptr) {
		http_resp_error(req, 400, "Ais-Checksum-Value given without Ais-Checksum-Type");
		return AIS_OK;
	}
	sv_t md = http_req_header(req, "Ais-Custom-Md");
	if (md.ptr) {
		if (md.len >= sizeof(p->meta.custom)) {
			http_resp_error(req, 400, "custom metadata longer than %zu bytes", sizeof(p->meta.custom) - 1);
			return AIS_OK;
		}
		p->custom = arena_svdup(req->arena, md);
	}
	req->state = p;
	arena_cleanup_add(req->arena, put_cleanup, p);
	req->on_body = put_body;
	req->on_room = put_room;
	req->on_body_end = put_end;
	p->busy = true;
	http_offload(req, begin_work, io_done);
	return AIS_OK;
}

/* --- DELETE -------------------------------------------------------------- */

struct del {
	target_t *t;
	sv_t bck, obj;
	tgt_where_t *w;
	int err;
};

static void del_work(http_req_t *req)
{
	struct del *d = req->state;
	if (store_delete(d->t->store, d->bck.ptr, d->bck.len, d->obj.ptr, d->obj.len) != AIS_OK)
		d->err = errno ? errno : EIO;
	if (d->w->cluster && (!d->err || d->err == ENOENT) &&
	    tgt_delete_elsewhere(d->t, d->bck.ptr, d->bck.len, d->obj.ptr, d->obj.len) > 0)
		d->err = 0; /* deleted: other copies were there */
}

static void del_done(http_req_t *req)
{
	struct del *d = req->state;
	if (d->err == ENOENT)
		tgt_not_found(req, d->bck, d->obj);
	else if (d->err)
		tgt_resp_errno(req, d->err, "object");
	else
		http_resp_send(req, "", 0);
}

static int objects(http_req_t *req, bool may_doubt);

static void refresh_work(http_req_t *req)
{
	target_t *t = req->ctx;
	cluster_refresh(t->base.cl, 200);
}

static void refresh_done(http_req_t *req) { objects(req, false); }

int tgt_objects(http_req_t *req) { return objects(req, true); }

static int objects(http_req_t *req, bool may_doubt)
{
	target_t *t = req->ctx;
	sv_t bck, obj;

	if (tgt_parse_names(req, &bck, &obj, true) != AIS_OK)
		return AIS_OK;
	store_bucket_t sb;
	if (may_doubt && t->base.cl && store_bucket_get(t->store, bck.ptr, bck.len, &sb) != AIS_OK) {
		/* maybe created after this target's last BMD (it joined a moment ago) */
		http_offload(req, refresh_work, refresh_done);
		return AIS_OK;
	}
	tgt_where_t *w = arena_zalloc(req->arena, sizeof(*w));
	int rc = tgt_where(req, t, bck, obj, w, may_doubt);
	if (rc == AIS_AGAIN) {
		http_offload(req, refresh_work, refresh_done);
		return AIS_OK;
	}
	if (rc != AIS_OK)
		return AIS_OK; /* redirected to the owner */
	switch (req->method) {
	case HTTP_GET:
	case HTTP_HEAD: {
		sv_t ap;
		bool z = larc_kind_of(obj.ptr, obj.len) != LARC_NONE;
		if (http_query_get(req, "archpath", &ap))
			return z ? tgt_get_zshard(req, bck, obj, ap, false) : get_archpath(req, t, bck, obj, ap);
		if (http_query_get(req, "archregx", &ap))
			return z ? tgt_get_zshard(req, bck, obj, ap, true) : tgt_get_archregx(req, bck, obj, ap);
		return get_object(req, t, bck, obj, w, false);
	}
	case HTTP_PUT:
		return put_object(req, t, bck, obj, w);
	case HTTP_DELETE: {
		struct del *d = arena_zalloc(req->arena, sizeof(*d));
		d->w = w;
		d->t = t;
		d->bck = bck;
		d->obj = obj;
		req->state = d;
		http_offload(req, del_work, del_done);
		return AIS_OK;
	}
	default:
		http_resp_error(req, 405, "method not allowed");
		return AIS_OK;
	}
}
