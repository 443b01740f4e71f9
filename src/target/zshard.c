/*
 * zshard.c - compressed shards (.tgz / .tar.gz, .zip): archpath reads of one
 * member, archregx tars of the matching members, and their members in
 * listings, all through libarchive (larc.h) without an index.
 *
 * A read walks the archive from its start on the I/O pool (decoding gzip,
 * or following zip's central directory), and the member's bytes are decoded
 * on the pool ZS_PIECE bytes at a time: the worker sends a piece while the
 * pool decodes the next, so memory per request is two pieces plus
 * libarchive's state whatever the sizes. archpath answers with the member's
 * size as Content-Length (Range: the bytes before are decoded and dropped);
 * archregx streams a tar (chunked) of the matches in archive order. A file
 * that is not an archive of its kind, truncated or corrupt is a 400 when
 * that shows before the answer started, else the connection is closed
 * (the client sees a short body).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/archmatch.h"
#include "aisd/larc.h"
#include "aisd/log.h"
#include "aisd/ol.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "target_int.h"
#include "aisd/tarw.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define ZS_PIECE (256u << 10)

struct zs {
	target_t *t;
	sv_t bck, obj, path;    /* path: archpath (one member) */
	bool regx;              /* archregx: a tar of the matches */
	sv_t mode_name;
	archmatch_t m;
	int fd;
	store_meta_t meta;
	larc_t *a;
	/* the current member */
	bool found;             /* archpath: found; archregx: a match is current */
	uint64_t size, skip, left; /* left: data still to decode (after skip) */
	bool pad_due;
	bool eof;               /* everything produced */
	bool failed;
	buf_t ready;            /* produced, not yet handed to the connection */
	buf_t msg;
	bool busy;              /* a piece is being produced on the pool */
	bool hit;               /* the first member was found (found moves on) */
	bool whole;             /* the member is read to its end (not a Range) */
};

static void zs_cleanup(void *arg)
{
	struct zs *z = arg;
	larc_close(z->a);
	if (z->fd >= 0)
		close(z->fd);
	archmatch_free(&z->m);
	buf_free(&z->ready);
	buf_free(&z->msg);
}

static void zs_failmsg(struct zs *z)
{
	z->failed = true;
	buf_reset(&z->msg);
	buf_addstr(&z->msg, larc_error(z->a));
}

/* Advances to the next member to send: archpath: the one named path;
 * archregx: the next match. Sets found (false at the end) or failed. */
static void zs_seek(struct zs *z)
{
	const char *name;
	size_t len;
	uint64_t size;
	int rc;

	z->found = false;
	while ((rc = larc_next(z->a, &name, &len, &size)) == AIS_OK) {
		if (z->regx ? archmatch_test(&z->m, name, len) : sv_eq((sv_t){name, len}, z->path)) {
			z->found = true;
			z->size = z->left = size;
			if (z->regx)
				tarw_header(&z->ready, name, len, size, z->meta.mtime_ns / 1000000000LL);
			return;
		}
	}
	if (rc == AIS_ERR)
		zs_failmsg(z);
}

/* I/O pool: produces up to ZS_PIECE bytes into ready. */
static void zs_produce(struct zs *z)
{
	char tmp[64 * 1024];

	while (!z->eof && !z->failed && z->ready.len < ZS_PIECE) {
		if (z->found && (z->left > 0 || z->skip > 0)) {
			size_t want = sizeof(tmp);
			ssize_t n = larc_read(z->a, tmp, want);
			if (n < 0) {
				zs_failmsg(z);
				return;
			}
			if (n == 0) {
				buf_reset(&z->msg);
				buf_addstr(&z->msg, "bad archive: a member ended before its size");
				z->failed = true;
				return;
			}
			size_t k = (size_t)n, off = 0;
			if (z->skip) {
				off = (size_t)MIN((uint64_t)k, z->skip);
				z->skip -= off;
			}
			size_t take = (size_t)MIN((uint64_t)(k - off), z->left);
			buf_add(&z->ready, tmp + off, take);
			z->left -= take;
			continue;
		}
		/* the member is all out: read on to its end, so that a zip
		 * entry's CRC is checked before its last piece goes out */
		if (z->found && z->whole) {
			ssize_t n = larc_read(z->a, tmp, 1);
			if (n != 0) {
				if (n > 0) {
					buf_reset(&z->msg);
					buf_addstr(&z->msg, "bad archive: a member is longer than its size");
					z->failed = true;
				} else {
					zs_failmsg(z);
				}
				return;
			}
		}
		if (!z->regx) { /* archpath: done */
			z->eof = true;
			return;
		}
		if (z->found) {
			tarw_pad(&z->ready, z->size);
			z->found = false;
		}
		zs_seek(z);
		if (!z->found && !z->failed) {
			tarw_end(&z->ready);
			z->eof = true;
		}
	}
}

static void zs_produce_work(http_req_t *req) { zs_produce(req->state); }

static void zs_produce_done(http_req_t *req)
{
	struct zs *z = req->state;
	z->busy = false;
	http_resp_stream_wake(req);
}

static int zs_fill(http_req_t *req, buf_t *out)
{
	struct zs *z = req->state;

	if (z->busy)
		return AIS_AGAIN; /* the pool owns the state until zs_produce_done */
	if (z->failed) { /* never the piece a failed check ended */
		log_warnx("%.*s/%.*s: closing the answer: %s", (int)z->bck.len, z->bck.ptr,
			  (int)MIN(z->obj.len, 256), z->obj.ptr, z->msg.ptr ? z->msg.ptr : "bad archive");
		return AIS_ERR;
	}
	if (z->ready.len) {
		buf_t t = *out;
		*out = z->ready; /* hand the piece over without a copy */
		z->ready = t;
		buf_reset(&z->ready);
		if (z->eof) /* decided before the pool may touch z again */
			return AIS_DONE;
		z->busy = true;
		http_offload(req, zs_produce_work, zs_produce_done);
		return AIS_OK;
	}
	if (z->eof)
		return AIS_DONE;
	z->busy = true;
	http_offload(req, zs_produce_work, zs_produce_done);
	return AIS_AGAIN;
}

/* I/O pool: open, find the (first) member, produce the first piece. */
static void zs_start_work(http_req_t *req)
{
	struct zs *z = req->state;
	z->a = larc_open(z->fd, z->meta.size, larc_kind_of(z->obj.ptr, z->obj.len));
	if (!z->a) {
		buf_addstr(&z->msg, "cannot set up libarchive");
		z->failed = true;
		return;
	}
	zs_seek(z);
	z->hit = z->found;
	z->whole = true;
	if (z->found && !z->regx) {
		uint64_t start = 0, len = z->size;
		/* Range relative to the member: decode and drop what comes before */
		if (http_range_parse(http_req_header(req, "Range"), z->size, &start, &len) == AIS_OK) {
			z->skip = start;
			z->left = len;
			z->whole = start == 0 && len == z->size;
		}
	}
	if (z->found && req->method == HTTP_GET)
		zs_produce(z);
}

static void zs_start_done(http_req_t *req)
{
	struct zs *z = req->state;

	if (z->failed) {
		http_resp_error(req, 400, "%.*s/%.*s is not a valid %s archive: %s", (int)z->bck.len, z->bck.ptr,
				(int)MIN(z->obj.len, 512), z->obj.ptr,
				larc_kind_of(z->obj.ptr, z->obj.len) == LARC_ZIP ? "zip" : "tar.gz",
				z->msg.ptr ? z->msg.ptr : "bad archive");
		return;
	}
	if (!z->hit && z->regx) {
		http_resp_error(req, 404, "no file in %.*s/%.*s matches archregx \"%.*s\" (archmode %.*s)",
				(int)z->bck.len, z->bck.ptr, (int)MIN(z->obj.len, 512), z->obj.ptr,
				(int)MIN(z->m.len, 512), z->m.pat, (int)(z->mode_name.len ? z->mode_name.len : 6),
				z->mode_name.len ? z->mode_name.ptr : "regexp");
		return;
	}
	if (!z->hit) {
		http_resp_error(req, 404, "archpath \"%.*s\" not found in %.*s/%.*s", (int)MIN(z->path.len, 512),
				z->path.ptr, (int)z->bck.len, z->bck.ptr, (int)MIN(z->obj.len, 512), z->obj.ptr);
		return;
	}
	char lm[64];
	time_http_date(z->meta.mtime_ns, lm, sizeof(lm));
	http_resp_header(req, "Ais-Version", "%llu", (unsigned long long)z->meta.version);
	http_resp_header(req, "Last-Modified", "%s", lm);
	if (z->regx) {
		http_resp_header(req, "Content-Type", "application/x-tar");
		http_resp_send_stream(req, zs_fill);
		return;
	}
	uint64_t start = 0, len = z->size;
	if (tgt_resp_range(req, z->size, tgt_content_type(z->path), "a member", &start, &len) != AIS_OK)
		return;
	if (req->method == HTTP_HEAD || len == 0) {
		http_resp_send_head(req, len);
		return;
	}
	http_resp_send_stream_len(req, zs_fill, len);
}

static void zs_opened(http_req_t *req, void *arg, int fd, store_meta_t *m, int err, const char *msg)
{
	struct zs *z = arg;
	if (err) {
		ol_open_failed(req, z->bck, z->obj, err, msg);
		return;
	}
	z->fd = fd;
	z->meta = *m;
	req->state = z;
	http_offload(req, zs_start_work, zs_start_done);
}

int tgt_get_zshard(http_req_t *req, sv_t bck, sv_t obj, sv_t path, bool regx)
{
	target_t *t = req->ctx;
	struct zs *z = arena_zalloc(req->arena, sizeof(*z));
	buf_t err = BUF_INIT;

	z->t = t;
	z->bck = bck;
	z->obj = obj;
	z->fd = -1;
	z->regx = regx;
	arena_cleanup_add(req->arena, zs_cleanup, z);
	if (regx) {
		enum archmode mode;
		http_query_get(req, "archmode", &z->mode_name);
		if (archmatch_mode(z->mode_name.ptr, z->mode_name.len, &mode) != AIS_OK) {
			http_resp_error(req, 400, "unknown archmode \"%.*s\": use regexp, prefix, suffix, substr or wdskey",
					(int)MIN(z->mode_name.len, 64), z->mode_name.ptr);
			return AIS_OK;
		}
		if (archmatch_init(&z->m, mode, path.ptr, path.len, &err) != AIS_OK) {
			http_resp_error(req, 400, "archregx: %s", err.ptr ? err.ptr : "invalid pattern");
			buf_free(&err);
			return AIS_OK;
		}
	} else {
		if (!name_archpath_valid(path.ptr, path.len)) {
			http_resp_error(req, 400, "invalid archpath: 1 to %d bytes of UTF-8 without NUL bytes",
					NAME_OBJECT_MAX);
			return AIS_OK;
		}
		z->path = path;
	}
	ol_open(req, t, bck, obj, 0, zs_opened, z);
	return AIS_OK;
}

int tgt_zshard_members(store_t *s, sv_t bck, sv_t obj, buf_t *out)
{
	store_meta_t m;
	larc_t *a;
	const char *name;
	size_t len, mark = out->len;
	uint64_t size;
	int fd, rc;

	if (store_open_obj(s, bck.ptr, bck.len, obj.ptr, obj.len, &fd, &m) != AIS_OK)
		return AIS_ERR;
	a = larc_open(fd, m.size, larc_kind_of(obj.ptr, obj.len));
	if (!a) {
		close(fd);
		return AIS_ERR;
	}
	buf_t full = BUF_INIT;
	while ((rc = larc_next(a, &name, &len, &size)) == AIS_OK) {
		buf_reset(&full);
		buf_addsv(&full, obj);
		buf_addch(&full, '/');
		buf_add(&full, name, len);
		buf_addstr(out, ",{\"name\":");
		buf_add_json_str(out, full.ptr, full.len);
		buf_addf(out, ",\"size\":%llu,\"flags\":%d}", (unsigned long long)size, TGT_ENTRY_IN_ARCH);
	}
	if (rc == AIS_ERR) {
		log_info("listing %.*s/%.*s: not listed as an archive: %s", (int)bck.len, bck.ptr,
			 (int)MIN(obj.len, 256), obj.ptr, larc_error(a));
		out->len = mark;
	}
	buf_free(&full);
	larc_close(a);
	close(fd);
	return rc == AIS_ERR ? AIS_ERR : AIS_OK;
}
