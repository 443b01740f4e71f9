/*
 * olstage.c - staged writes (ol.h): an object a job builds in place. The
 * bytes go where a client's write of the object would put them (the
 * store writer's temporary file on the object's mountpath, invisible) as
 * the job makes them; the commit, maybe much later, is ol_put_commit's,
 * as for a client's write: the checksum sealed, the bucket's copies or
 * erasure-coded slices made then from the staged bytes (not streamed
 * while they come: nothing waits on other targets before the commit), the
 * store writer's rename and record that make it visible, the tar index.
 * So the owner's copy is written once, never spooled and written again.
 *
 * Guarantees:
 *  1. Nothing of a staged write is visible before ol_stage_commit returns
 *     AIS_OK; ol_stage_free of one not committed removes its bytes, and a
 *     crash leaves only a temporary file that the store removes at start.
 *  2. The commit places the object by the map of the moment: a target
 *     that is no longer its owner commits nothing (EXDEV) and the caller
 *     sends the sealed bytes (ol_stage_fd) to the owner as a client's
 *     write instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/hrw.h"
#include "aisd/ol.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "target_int.h"
#include "aisd/banned.h"

struct ol_stage {
	target_t *t;
	char *bck, *obj;
	ol_put_t p;
	ol_where_t w;
	char urls[HRW_TOP_MAX][CMAP_URL_MAX + 1];
};

ol_stage_t *ol_stage_open(target_t *t, const char *bck, const char *obj, buf_t *why)
{
	store_bucket_t b;
	if (store_bucket_get(t->store, bck, strlen(bck), &b) != AIS_OK) {
		buf_addf(why, "bucket \"%s\" does not exist here", bck);
		return NULL;
	}
	ol_stage_t *st = xcalloc(1, sizeof(*st));
	st->t = t;
	st->bck = xstrdup(bck);
	st->obj = xstrdup(obj);
	st->p.t = t;
	st->p.bck = sv_from(st->bck);
	st->p.obj = sv_from(st->obj);
	st->p.md5_etag = t->conf->s3_native_etag; /* a client's write (olput.c rule 7) */
	/* p.w stays NULL until the commit: no copies nor slices streamed */
	if (ol_put_begin(&st->p) != AIS_OK) {
		buf_addf(why, "starting the write: %s", strerror(errno));
		ol_stage_free(st);
		return NULL;
	}
	return st;
}

int ol_stage_write(ol_stage_t *st, const void *p, size_t n) { return ol_put_write(&st->p, p, n); }

int ol_stage_commit(ol_stage_t *st, const char *custom, buf_t *why)
{
	if (st->t->base.cl) { /* rule 2 */
		ol_where_of(st->t, st->p.bck, st->p.obj, &st->w, st->urls);
		if (st->w.self != 0) {
			buf_addf(why, "not its owner under cluster map v%llu", (unsigned long long)st->w.cmap_version);
			errno = EXDEV;
			return AIS_ERR;
		}
		st->p.w = &st->w;
	}
	st->p.custom = custom;
	if (ol_put_commit(&st->p) != AIS_OK) {
		int e = errno;
		buf_addf(why, "%s", st->p.msg.len ? st->p.msg.ptr : strerror(e));
		errno = e;
		return AIS_ERR;
	}
	return AIS_OK;
}

int ol_stage_fd(ol_stage_t *st)
{
	if (store_writer_seal(st->p.sw, CKSUM_NONE, NULL, NULL) != AIS_OK)
		return -1;
	return store_writer_open_tmp(st->p.sw);
}

void ol_stage_free(ol_stage_t *st)
{
	if (!st)
		return;
	ol_put_free(&st->p);
	free(st->bck);
	free(st->obj);
	free(st);
}
