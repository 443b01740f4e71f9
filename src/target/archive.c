/*
 * archive.c - reading many files of a shard at once: GET
 * /v1/objects/B/SHARD?archregx=PATTERN&archmode=MODE answers a tar of the
 * members whose names match (archmatch.h), in archive order, named as in
 * the shard; and the members of shards in object listings (flag LsArchDir).
 *
 * archregx on a tar shard: the tar index gives every member's byte range,
 * so the answer is a stream of tar headers (written here, tarw.c) and file
 * segments of the shard (sendfile, like a plain GET): the target never holds
 * member data in memory. The index and the list of matches are the only
 * memory it takes. No match is a 404; a bad pattern or mode a 400; a shard
 * that is not a valid tar a 400, as for archpath.
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
#include "aisd/status.h"
#include "target_int.h"
#include "aisd/tarw.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define RX_PIECE (256u << 10)

struct rx {
	target_t *t;
	sv_t bck, obj, pat, mode;
	archmatch_t m;
	int fd;                  /* the shard */
	store_meta_t meta;
	store_tar_index_t *idx;
	uint32_t *hits;          /* member numbers that match, archive order */
	size_t nhits, cur;
	bool pad_due;
	uint64_t pad_of;
	int err;                 /* 0, ENOENT (shard), EINVAL (not a tar), other */
	buf_t msg;
};

static void rx_cleanup(void *arg)
{
	struct rx *x = arg;
	if (x->fd >= 0)
		close(x->fd);
	store_tar_index_free(x->idx);
	free(x->hits);
	archmatch_free(&x->m);
	buf_free(&x->msg);
}

static void rx_work(http_req_t *req)
{
	struct rx *x = req->state;
	size_t cap = 0;

	if (store_tar_index(x->t->store, x->bck.ptr, x->bck.len, x->obj.ptr, x->obj.len, &x->meta, x->fd,
			    &x->idx, &x->msg) != AIS_OK) {
		x->err = errno == EINVAL ? EINVAL : (errno ? errno : EIO);
		x->idx = NULL;
		return;
	}
	for (size_t i = 0; i < store_tar_index_count(x->idx); i++) {
		const char *name;
		size_t len;
		uint64_t off, size;
		store_tar_index_member(x->idx, i, &name, &len, &off, &size);
		if (!archmatch_test(&x->m, name, len))
			continue;
		if (x->nhits == cap) {
			cap = cap ? cap * 2 : 64;
			x->hits = xrealloc(x->hits, cap * sizeof(*x->hits));
		}
		x->hits[x->nhits++] = (uint32_t)i;
	}
}

static int rx_fill(http_req_t *req, buf_t *out)
{
	struct rx *x = req->state;

	while (out->len < RX_PIECE) {
		if (x->pad_due) {
			tarw_pad(out, x->pad_of);
			x->pad_due = false;
		}
		if (x->cur == x->nhits) {
			tarw_end(out);
			return AIS_DONE;
		}
		const char *name;
		size_t len;
		uint64_t off, size;
		store_tar_index_member(x->idx, x->hits[x->cur++], &name, &len, &off, &size);
		tarw_header(out, name, len, size, x->meta.mtime_ns / 1000000000LL);
		x->pad_due = true;
		x->pad_of = size;
		if (size) {
			int fd = dup(x->fd);
			if (fd < 0) {
				log_warn("archregx: dup");
				return AIS_ERR;
			}
			http_resp_stream_file(req, fd, (off_t)off, size);
			return AIS_OK; /* the member's bytes follow */
		}
	}
	return AIS_OK;
}

static void rx_done(http_req_t *req)
{
	struct rx *x = req->state;

	if (x->err == EINVAL) {
		http_resp_error(req, 400, "%.*s/%.*s is not a valid tar archive: %s", (int)x->bck.len,
				x->bck.ptr, (int)MIN(x->obj.len, 512), x->obj.ptr,
				x->msg.ptr ? x->msg.ptr : "bad header");
		return;
	}
	if (x->err) {
		tgt_resp_errno(req, x->err, "object");
		return;
	}
	if (!x->nhits) {
		http_resp_error(req, 404, "no file in %.*s/%.*s matches archregx \"%.*s\" (archmode %.*s)",
				(int)x->bck.len, x->bck.ptr, (int)MIN(x->obj.len, 512), x->obj.ptr,
				(int)MIN(x->pat.len, 512), x->pat.ptr, (int)(x->mode.len ? x->mode.len : 6),
				x->mode.len ? x->mode.ptr : "regexp");
		return;
	}
	http_resp_header(req, "Content-Type", "application/x-tar");
	http_resp_header(req, "Ais-Version", "%llu", (unsigned long long)x->meta.version);
	http_resp_send_stream(req, rx_fill);
}

static void rx_opened(http_req_t *req, void *arg, int fd, store_meta_t *m, int err, const char *msg)
{
	struct rx *x = arg;
	if (err) {
		ol_open_failed(req, x->bck, x->obj, err, msg);
		return;
	}
	x->fd = fd;
	x->meta = *m;
	req->state = x;
	http_offload(req, rx_work, rx_done);
}

int tgt_get_archregx(http_req_t *req, sv_t bck, sv_t obj, sv_t pat)
{
	target_t *t = req->ctx;
	struct rx *x;
	enum archmode mode;
	buf_t err = BUF_INIT;

	x = arena_zalloc(req->arena, sizeof(*x));
	x->t = t;
	x->bck = bck;
	x->obj = obj;
	x->pat = pat;
	x->fd = -1;
	http_query_get(req, "archmode", &x->mode);
	if (archmatch_mode(x->mode.ptr, x->mode.len, &mode) != AIS_OK) {
		http_resp_error(req, 400, "unknown archmode \"%.*s\": use regexp, prefix, suffix, substr or wdskey",
				(int)MIN(x->mode.len, 64), x->mode.ptr);
		return AIS_OK;
	}
	arena_cleanup_add(req->arena, rx_cleanup, x);
	if (archmatch_init(&x->m, mode, pat.ptr, pat.len, &err) != AIS_OK) {
		http_resp_error(req, 400, "archregx: %s", err.ptr ? err.ptr : "invalid pattern");
		buf_free(&err);
		return AIS_OK;
	}
	ol_open(req, t, bck, obj, 0, rx_opened, x);
	return AIS_OK;
}

/* --- listing ------------------------------------------------------------------ */

bool tgt_is_shard_name(sv_t name)
{
	return (name.len > 4 && !memcmp(name.ptr + name.len - 4, ".tar", 4)) ||
	       larc_kind_of(name.ptr, name.len) != LARC_NONE;
}

int tgt_list_members(store_t *s, sv_t bck, sv_t obj, buf_t *out)
{
	store_tar_index_t *idx;
	store_meta_t m;
	buf_t msg = BUF_INIT;
	int fd;

	if (!tgt_is_shard_name(obj))
		return AIS_ERR;
	if (larc_kind_of(obj.ptr, obj.len) != LARC_NONE)
		return tgt_zshard_members(s, bck, obj, out);
	if (store_open_obj(s, bck.ptr, bck.len, obj.ptr, obj.len, &fd, &m) != AIS_OK)
		return AIS_ERR;
	if (store_tar_index(s, bck.ptr, bck.len, obj.ptr, obj.len, &m, fd, &idx, &msg) != AIS_OK) {
		log_info("listing %.*s/%.*s: not listed as a tar: %s", (int)bck.len, bck.ptr,
			 (int)MIN(obj.len, 256), obj.ptr, msg.ptr ? msg.ptr : strerror(errno));
		close(fd);
		buf_free(&msg);
		return AIS_ERR;
	}
	close(fd);
	for (size_t i = 0; i < store_tar_index_count(idx); i++) {
		const char *name;
		size_t len;
		uint64_t off, size;
		store_tar_index_member(idx, i, &name, &len, &off, &size);
		buf_addstr(out, ",{\"name\":");
		buf_t full = BUF_INIT;
		buf_addsv(&full, obj);
		buf_addch(&full, '/');
		buf_add(&full, name, len);
		buf_add_json_str(out, full.ptr, full.len);
		buf_free(&full);
		buf_addf(out, ",\"size\":%llu,\"flags\":%d}", (unsigned long long)size, TGT_ENTRY_IN_ARCH);
	}
	store_tar_index_free(idx);
	buf_free(&msg);
	return AIS_OK;
}
