/*
 * ec.c - erasure-coded objects across targets (ec_int.h), the write side:
 * the encode and placement of a PUT's slices (from the sealed file, or
 * while its body arrives), the sending of slices, the requests that ask
 * every target for its slice (ec_priv.h), and the delete of all of an
 * object's slices. Reads from the slices are ecread.c; the repair of
 * missing slices and the rebalance's placement of slices ecrepair.c; the
 * route that keeps a slice on its target ecslice.c.
 *
 * NOTES ON THE DESIGN
 *  1. The owner (HRW rank 0) keeps the whole object; slice i of D+P goes to
 *     HRW rank i under the map of the PUT (the owner holds slice 0 too), so
 *     a PUT needs D+P active targets. The whole copy serves reads at the
 *     speed of an unencoded object; the slices let the object survive any
 *     P lost targets. Space: 1 + (D+P)/D per byte (2.5 for 4+2).
 *  2. A PUT is acknowledged only when the whole copy is sealed (checksum,
 *     fsync) and all D+P slices answered 200 (each fsynced and committed by
 *     its target's store), then the whole copy is committed. With any
 *     slice missing the landed slices are deleted and the PUT fails (503):
 *     nothing of the write stays visible.
 *  3. Memory is bounded: one stripe (D+P cells of EC_CELL bytes) at a time;
 *     the data cells are read from a mapping of the sealed file (no copy
 *     but the short last stripe's), slices are encoded into unlinked
 *     temporary files on the first mountpath and sent from there
 *     (sendfile on the intra transport).
 *  4. A PUT whose size is known when its body starts (a native PUT with a
 *     Content-Length) is encoded while the body arrives: at begin the
 *     owner opens one chunked PUT per slice (the transport's streams, to
 *     the same targets as rule 1), every stripe is encoded as soon as its
 *     bytes came and its cells written to the streams, so memory is one
 *     stripe and the slices are on their targets when the body ends. The
 *     trailer of each stream carries the slice's metadata (the object's
 *     checksum is known only then) and its own checksum, which the
 *     receiver verifies before it commits (ecslice.c rule 7); rule 2 holds
 *     as before (all D+P 200 before the whole copy commits). A body of
 *     another size than declared, https peers or a layout changed
 *     meanwhile fall back to encoding the sealed file (rule 3).
 *  5. A bucket with ec.whole_copy=false keeps no whole copy of an object
 *     it erasure codes (space 1 + P/D per byte): the PUT commits only the
 *     slices (rule 2 otherwise as before), and drops whole copies of an
 *     earlier write on the owner and the holders of small objects' copies.
 *     Such an object is read from its slices (ecread.c rule 3) and
 *     repaired from them (ecrepair.c rule 7).
 *  6. Deletes win over slices (ol.h invariant 2): a client's delete leaves
 *     tombstones on every active target (of the object, and of the slice
 *     where one was: ecslice.c rule 6), and every slice answer carries the
 *     newest tombstone of its target. A slice whose write (its version) is
 *     older than a tombstone seen here or in an answer (ec_deleted_at) is
 *     of a deleted object: reads never decode it (ecread.c rule 4), the
 *     rebalance drops it, and the repair drops a whole copy written before
 *     such a tombstone instead of encoding it (ecrepair.c rule 6).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "ec_priv.h"
#include "aisd/hlc.h"
#include "aisd/ec.h"
#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/metrics.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "aisd/banned.h"

/* Counters for /metrics, registered at 0 by ec_metrics_init so a scrape
 * (and a dashboard) sees them before the first erasure-coded write. */
static const struct {
	const char *name, *help;
} ec_metrics[EC_M_N] = {
	[EC_M_WRITTEN] = {"aisd_ec_slices_written_total", "Erasure-coded slices written (PUTs and repairs)."},
	[EC_M_DAMAGED] = {"aisd_ec_slices_damaged_total", "Slices found damaged (checksum mismatch) by a rebuild."},
	[EC_M_REBUILDS] = {"aisd_ec_rebuilds_total", "Objects rebuilt from their slices."},
	[EC_M_REBUILD_FAILURES] = {"aisd_ec_rebuild_failures_total", "Rebuilds from slices that failed."},
	[EC_M_RANGE_READS] = {"aisd_ec_range_reads_total",
			      "Range reads decoded from the slices of the stripes they touch."},
	[EC_M_RANGE_BYTES] = {"aisd_ec_range_slice_bytes_total", "Slice bytes fetched for those range reads."},
	[EC_M_MOVED] = {"aisd_ec_slices_moved_total", "Slices moved to their holders by the rebalance."},
	[EC_M_STREAMED] = {"aisd_ec_puts_streamed_total",
			   "Erasure-coded PUTs whose slices were encoded and sent while the body arrived."},
};

void ec_count(int m, uint64_t n)
{
	METRICS_ADD(metrics_counter(ec_metrics[m].name, "", ec_metrics[m].help), n);
}

void ec_metrics_init(void)
{
	for (int m = 0; m < EC_M_N; m++)
		ec_count(m, 0);
}

static uint64_t slice_timeout_ms(uint64_t size) { return 60000 + size / (16 << 10); }

int ec_tmp_file(target_t *t)
{
	int fd = open(t->conf->mountpaths[0], O_TMPFILE | O_RDWR, 0600);
	if (fd < 0)
		log_warn("erasure coding: temporary file in %s", t->conf->mountpaths[0]);
	return fd;
}

size_t ec_targets(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen, ec_url_t **out)
{
	const cmap_t *m;
	place_t p;
	cluster_read_lock(t->base.cl, &m, NULL);
	size_t cap = m ? cmap_size(m) : 0, n = 0;
	ec_url_t *u = xcalloc(cap + 1, sizeof(*u));
	ec_place_of(m, NULL, bck, blen, obj, olen, cap, &p);
	for (size_t i = 0; i < p.n; i++)
		snprintf(u[n++], sizeof(u[0]), "%s", p.node[i]->intra_url);
	cluster_read_unlock(t->base.cl);
	*out = u;
	return n;
}

static void slice_url(buf_t *out, const char *base, const char *bck, size_t blen, const char *obj, size_t olen)
{
	buf_t u = BUF_INIT;
	tgt_url_obj(&u, base, bck, blen, obj, olen); /* ".../v1/objects/B/O" */
	const char *at = strstr(u.ptr + strlen(base), "/v1/objects/");
	buf_add(out, u.ptr, (size_t)(at - u.ptr));
	buf_addstr(out, "/v1/ec/");
	buf_addstr(out, at + strlen("/v1/objects/"));
	buf_free(&u);
}

/* --- sending slices ------------------------------------------------------------------ */

struct send {
	pthread_t th;
	const char *base;
	buf_t url, msg, meta;
	const char *custom;
	uint64_t cmap_v; /* non-zero: a move (ecslice.c rule 4) under this map */
	int fd;
	uint64_t len;
	int status;
};

static void *send_one(void *arg)
{
	struct send *s = arg;
	char h0[64], h1[EC_META_MAX + 32], h2[STORE_CUSTOM_MAX + 32], h3[64], h4[64];
	const char *hp[6] = {h0, h1, NULL};
	size_t nh = 2;
	bool sent = true;
	snprintf(h0, sizeof(h0), "%s: ec", TGT_INTRA);
	snprintf(h1, sizeof(h1), "%s: %s", EC_META_HDR, s->meta.ptr);
	if (s->custom && s->custom[0]) {
		snprintf(h2, sizeof(h2), "Ais-Custom-Md: %s", s->custom);
		hp[nh++] = h2;
	}
	if (s->cmap_v) {
		snprintf(h3, sizeof(h3), "%s: %llu", TGT_CMAP_VERSION, (unsigned long long)s->cmap_v);
		snprintf(h4, sizeof(h4), "%s: true", EC_MOVE_HDR);
		hp[nh++] = h3;
		hp[nh++] = h4;
	}
	hp[nh] = NULL;
	if (xs_supports(s->base)) {
		buf_t rh = BUF_INIT;
		if (xs_put_file(s->url.ptr, hp, s->fd, s->len, slice_timeout_ms(s->len), &s->status, &sent, &rh,
				&s->msg) != AIS_OK)
			s->status = 0;
		buf_free(&rh);
		xs_release();
	} else {
		buf_addf(&s->msg, "%s: cannot be reached (TLS settings: see the log)", s->base);
	}
	return NULL;
}

static void delete_slice_on(const char *base, const char *bck, size_t blen, const char *obj, size_t olen)
{
	char hv[64];
	const char *hp[] = {hv, NULL};
	buf_t url = BUF_INIT, resp = BUF_INIT;
	int status = 0;
	snprintf(hv, sizeof(hv), "%s: ec", TGT_INTRA); /* not a client's: no tombstone */
	slice_url(&url, base, bck, blen, obj, olen);
	httpc_sync("DELETE", url.ptr, hp, NULL, 0, 10000, &resp, &status);
	buf_free(&url);
	buf_free(&resp);
}

bool ec_move_slice(const char *base, int fd, const store_meta_t *sm, const ec_meta_t *me, uint64_t cmap_v,
		   const char *bck, size_t blen, const char *obj, size_t olen, buf_t *msg)
{
	struct send s = {.base = base, .fd = fd, .len = sm->size, .cmap_v = cmap_v};
	const char *nl = strchr(sm->custom, '\n');
	s.custom = nl ? nl + 1 : NULL;
	ec_meta_format(me, &s.meta);
	slice_url(&s.url, base, bck, blen, obj, olen);
	send_one(&s);
	if (s.status != 200)
		buf_addf(msg, "%s%s: %s%.200s", msg->len ? "; " : "", base, s.status ? "HTTP error " : "",
			 s.msg.ptr ? s.msg.ptr : "no answer");
	buf_free(&s.url);
	buf_free(&s.msg);
	buf_free(&s.meta);
	return s.status == 200;
}

size_t ec_encode_send(target_t *t, int fd, const ec_layout_t *l, const ec_meta_t *tmpl, const char *custom,
		      const char *const *dest, const char *bck, size_t blen, const char *obj, size_t olen,
		      bool *ok, buf_t *msg)
{
	unsigned n = l->d + l->p;
	struct send s[EC_NSL];
	unsigned char *cell[EC_NSL];
	ec_codec_t *c = ec_codec_new(l->d, l->p);
	size_t good = 0;
	bool failed = false;

	memset(s, 0, sizeof(s));
	for (unsigned i = 0; i < n; i++) {
		ok[i] = false;
		s[i].fd = -1;
		cell[i] = xmalloc(l->cell);
		if (dest[i] && (s[i].fd = ec_tmp_file(t)) < 0)
			failed = true;
	}
	/* rule 3: the data cells straight from a mapping of the sealed file
	 * (pread into one stripe buffer if it cannot be mapped) */
	unsigned char *map = l->size ? mmap(NULL, l->size, PROT_READ, MAP_SHARED, fd, 0) : NULL, *sbuf = NULL;
	if (map == MAP_FAILED) {
		map = NULL;
		sbuf = xmalloc((size_t)l->d * l->cell);
	} else if (map) {
		madvise(map, l->size, MADV_SEQUENTIAL);
	}
	for (uint64_t st = 0; st < l->stripes && !failed; st++) {
		uint32_t cs = ec_stripe_cell(l, st);
		uint64_t at = ec_stripe_start(l, st), bytes = ec_stripe_bytes(l, st);
		unsigned char *out[EC_NSL];
		if (!map) {
			ssize_t r = pread(fd, sbuf, bytes, (off_t)at);
			if (r < 0 || (uint64_t)r != bytes) {
				buf_addf(msg, "reading the object to encode: %s", r < 0 ? strerror(errno) : "short read");
				failed = true;
				break;
			}
		}
		ec_encode_stripe(c, l, st, map ? map + at : sbuf, cell, out);
		for (unsigned i = 0; i < n; i++)
			if (s[i].fd >= 0 && pwrite(s[i].fd, out[i], cs, (off_t)(st * l->cell)) != (ssize_t)cs) {
				buf_addf(msg, "writing a slice: %s", strerror(errno));
				failed = true;
			}
	}
	if (map)
		munmap(map, l->size);
	free(sbuf);
	for (unsigned i = 0; i < n && !failed; i++) {
		if (!dest[i])
			continue;
		ec_meta_t m = *tmpl;
		m.idx = i;
		s[i].base = dest[i];
		s[i].len = l->slice_size;
		s[i].custom = custom;
		ec_meta_format(&m, &s[i].meta);
		slice_url(&s[i].url, dest[i], bck, blen, obj, olen);
		if (pthread_create(&s[i].th, NULL, send_one, &s[i]) != 0)
			send_one(&s[i]), s[i].base = NULL; /* ran here: nothing to join */
	}
	for (unsigned i = 0; i < n; i++) {
		if (!failed && dest[i] && s[i].base)
			pthread_join(s[i].th, NULL);
		if (!failed && dest[i]) {
			ok[i] = s[i].status == 200;
			good += ok[i];
			if (!ok[i])
				buf_addf(msg, "%sslice %u on %s: %s%.200s", msg->len ? "; " : "", i, dest[i],
					 s[i].status ? "HTTP error " : "", s[i].msg.ptr ? s[i].msg.ptr : "no answer");
		}
		if (s[i].fd >= 0)
			close(s[i].fd);
		buf_free(&s[i].url);
		buf_free(&s[i].msg);
		buf_free(&s[i].meta);
		free(cell[i]);
	}
	ec_codec_free(c);
	ec_count(EC_M_WRITTEN, good);
	return good;
}

void ec_meta_template(ec_meta_t *m, const bmd_props_t *bp, const store_meta_t *sm)
{
	memset(m, 0, sizeof(*m));
	m->d = bp->ec_data;
	m->p = bp->ec_parity;
	m->cell = EC_CELL;
	m->size = sm->size;
	m->version = (uint64_t)hlc_now(); /* a stamp: compared with tombstones' (store_stamp) */
	snprintf(m->cksum, sizeof(m->cksum), "%s:%s", store_cksum_name(sm->cksum_type),
		 sm->cksum[0] ? sm->cksum : "-");
}


/* --- a PUT encoded while its body arrives (rule 4) -------------------------------- */

struct ec_stream {
	ec_layout_t l;
	ec_codec_t *c;
	unsigned n;               /* D + P */
	uint64_t got;             /* object bytes taken */
	uint64_t st;              /* the stripe being filled */
	uint64_t fill;            /* its bytes so far */
	unsigned char *stripe;    /* D cells: the stripe's object bytes */
	unsigned char *cell[EC_NSL]; /* the parity (and a short stripe's data) */
	xs_stream_t *s[EC_NSL];      /* slice i's PUT to dest[i] */
	XXH64_state_t *xx[EC_NSL];   /* slice i's checksum */
	buf_t msg[EC_NSL];
	ec_url_t dest[EC_NSL];
	bool over; /* more bytes than declared: ec_put encodes the sealed file */
};

ec_stream_t *ec_stream_open(ol_put_t *p, uint64_t size)
{
	bmd_props_t bp;
	ec_url_t *u;
	if (!p->t->base.cl || !ec_props(p->t, p->bck, &bp) || !bp.ec_enabled || !place_ec(&bp, size))
		return NULL;
	unsigned n = bp.ec_data + bp.ec_parity;
	size_t nt = ec_targets(p->t, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, &u);
	bool plain = nt >= n;
	for (unsigned i = 0; i < n && plain; i++)
		plain = xs_supports(u[i]);
	if (!plain) { /* too few targets (ec_put says so) or https peers: from the sealed file */
		free(u);
		return NULL;
	}
	ec_stream_t *e = xcalloc(1, sizeof(*e));
	ec_layout(size, bp.ec_data, bp.ec_parity, EC_CELL, &e->l);
	e->c = ec_codec_new(bp.ec_data, bp.ec_parity);
	e->n = n;
	e->stripe = xmalloc((size_t)e->l.d * e->l.cell);
	const char *hp[] = {TGT_INTRA ": ec", "Ais-Checksum-Type: xxhash",
			    "Trailer: " EC_META_HDR ", Ais-Checksum-Value, Ais-Custom-Md", NULL};
	buf_t url = BUF_INIT;
	for (unsigned i = 0; i < n; i++) { /* rule 1: slice i to HRW rank i */
		snprintf(e->dest[i], sizeof(e->dest[i]), "%s", u[i]);
		e->cell[i] = xmalloc(e->l.cell);
		e->xx[i] = XXH64_createState();
		XXH64_reset(e->xx[i], 0);
		buf_reset(&url);
		slice_url(&url, u[i], p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len);
		e->s[i] = xs_stream_open(url.ptr, hp, slice_timeout_ms(size), &e->msg[i]);
	}
	buf_free(&url);
	free(u);
	return e;
}

/* Encodes the full stripe e->st and sends its cells, one to each slice. */
static void stream_stripe(ec_stream_t *e)
{
	unsigned char *out[EC_NSL];
	uint32_t cs = ec_stripe_cell(&e->l, e->st);
	ec_encode_stripe(e->c, &e->l, e->st, e->stripe, e->cell, out);
	for (unsigned i = 0; i < e->n; i++) {
		XXH64_update(e->xx[i], out[i], cs);
		if (e->s[i])
			xs_stream_write(e->s[i], out[i], cs); /* (a dead stream: finish says why) */
	}
	e->st++;
	e->fill = 0;
}

void ec_stream_write(ec_stream_t *e, const void *b, size_t len)
{
	const unsigned char *q = b;
	if (!e || e->over || (e->over = e->got + len > e->l.size))
		return;
	e->got += len;
	while (len) {
		uint64_t want = ec_stripe_bytes(&e->l, e->st), k = MIN(want - e->fill, len);
		memcpy(e->stripe + e->fill, q, k);
		e->fill += k, q += k, len -= k;
		if (e->fill == want)
			stream_stripe(e);
	}
}

void ec_stream_free(ec_stream_t *e)
{
	if (!e)
		return;
	for (unsigned i = 0; i < e->n; i++) {
		xs_stream_free(e->s[i]); /* unfinished: the receiver keeps nothing */
		XXH64_freeState(e->xx[i]);
		buf_free(&e->msg[i]);
		free(e->cell[i]);
	}
	ec_codec_free(e->c);
	free(e->stripe);
	free(e);
}

/* Rule 4: ends the slices' streams with their trailers. AIS_OK when all
 * D+P answered 200; else AIS_ERR (EAGAIN, p->msg says why) after deleting
 * the slices that landed. */
static int stream_finish(ol_put_t *p, ec_stream_t *e, const ec_meta_t *tmpl)
{
	char mh[EC_META_MAX + 32], cv[64], md[STORE_CUSTOM_MAX + 32];
	const char *tr[] = {mh, cv, p->custom && p->custom[0] ? md : NULL, NULL};
	bool ok[EC_NSL];
	size_t good = 0;
	buf_t meta = BUF_INIT, rh = BUF_INIT;
	snprintf(md, sizeof(md), "Ais-Custom-Md: %s", p->custom ? p->custom : "");
	for (unsigned i = 0; i < e->n; i++) {
		ec_meta_t m = *tmpl;
		int status = 0;
		m.idx = i;
		buf_reset(&meta);
		ec_meta_format(&m, &meta);
		snprintf(mh, sizeof(mh), "%s: %s", EC_META_HDR, meta.ptr);
		snprintf(cv, sizeof(cv), "Ais-Checksum-Value: %016llx", (unsigned long long)XXH64_digest(e->xx[i]));
		ok[i] = e->s[i] && xs_stream_finish(e->s[i], tr, &status, &rh, &e->msg[i]) == AIS_OK && status == 200;
		good += ok[i];
		if (!ok[i])
			buf_addf(&p->msg, "%sslice %u on %s: %s%.200s", p->msg.len ? "; " : "", i, e->dest[i],
				 status ? "HTTP error " : "", e->msg[i].ptr ? e->msg[i].ptr : "no answer");
	}
	buf_free(&meta);
	buf_free(&rh);
	ec_count(EC_M_WRITTEN, good);
	if (good == e->n) {
		ec_count(EC_M_STREAMED, 1);
		return AIS_OK;
	}
	for (unsigned i = 0; i < e->n; i++) /* rule 2 */
		if (ok[i])
			delete_slice_on(e->dest[i], p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len);
	errno = EAGAIN;
	return AIS_ERR;
}

/* The metadata of a PUT whose slices are durable (sealed as sm, written
 * as tmpl), for the answer when no whole copy commits (rule 5). */
static void put_meta(ol_put_t *p, const store_meta_t *sm, const ec_meta_t *tmpl)
{
	p->meta = *sm;
	p->meta.version = 1;
	p->meta.mtime_ns = p->meta.atime_ns = (int64_t)tmpl->version;
	snprintf(p->meta.custom, sizeof(p->meta.custom), "%s", p->custom ? p->custom : "");
}

int ec_put(ol_put_t *p, const bmd_props_t *bp)
{
	target_t *t = p->t;
	store_meta_t sm;
	ec_layout_t l;
	ec_meta_t tmpl;
	ec_url_t *u;
	const char *dest[EC_NSL] = {NULL};
	bool ok[EC_NSL];
	unsigned n = bp->ec_data + bp->ec_parity;
	int fd, rc = AIS_ERR;

	if (store_writer_seal(p->sw, p->want_type, p->want_type != CKSUM_NONE ? p->want_hex : NULL, &sm) != AIS_OK)
		return AIS_ERR;
	ec_stream_t *e = p->ecs;
	if (e && !e->over && e->got == sm.size && e->st == e->l.stripes && e->l.d == bp->ec_data && e->l.p == bp->ec_parity) {
		ec_meta_template(&tmpl, bp, &sm); /* rule 4: the slices are sent, but for their trailers */
		rc = stream_finish(p, e, &tmpl);
		if (rc == AIS_OK)
			put_meta(p, &sm, &tmpl);
		return rc;
	}
	ec_stream_free(e); /* (cut: its receivers keep nothing) */
	p->ecs = NULL;
	if ((fd = store_writer_open_tmp(p->sw)) < 0) {
		if (errno == EINVAL) { /* the bytes were not kept (slices only): the layout changed meanwhile */
			buf_addstr(&p->msg, "the bucket's erasure coding changed during the PUT: retry it");
			errno = EAGAIN;
		}
		return AIS_ERR;
	}
	size_t nt = ec_targets(t, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, &u);
	ec_layout(sm.size, bp->ec_data, bp->ec_parity, EC_CELL, &l);
	ec_meta_template(&tmpl, bp, &sm);
	if (nt < n) {
		buf_addf(&p->msg, "erasure coding %u+%u needs %u active targets, the cluster has %zu", bp->ec_data,
			 bp->ec_parity, n, nt);
		errno = EAGAIN;
		goto out;
	}
	for (unsigned i = 0; i < n; i++)
		dest[i] = u[i]; /* rule 1 */
	size_t good = ec_encode_send(t, fd, &l, &tmpl, p->custom, dest, p->bck.ptr, p->bck.len, p->obj.ptr,
				     p->obj.len, ok, &p->msg);
	if (good < n) { /* rule 2 */
		for (unsigned i = 0; i < n; i++)
			if (ok[i])
				delete_slice_on(dest[i], p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len);
		errno = EAGAIN;
		goto out;
	}
	rc = AIS_OK;
	put_meta(p, &sm, &tmpl);
out:
	close(fd);
	free(u);
	return rc;
}

/* --- asking every target --------------------------------------------------------- */
/* (struct ec_ask and the contracts: ec_priv.h) */

static int to_fd(void *arg, const char *p, size_t n)
{
	struct ec_ask *a = arg;
	while (n) {
		ssize_t w = write(a->fd, p, n);
		if (w <= 0)
			return AIS_ERR;
		p += w;
		n -= (size_t)w;
	}
	return AIS_OK;
}

static int to_buf(void *arg, const char *p, size_t n)
{
	buf_add(&((struct ec_ask *)arg)->resp, p, n);
	return AIS_OK;
}

static void *ask_one(void *arg)
{
	struct ec_ask *a = arg;
	char hv[64];
	const char *hp[] = {hv, a->hdr, NULL};
	/* the only DELETE asked of all is a client's (rule 6: tombstones) */
	snprintf(hv, sizeof(hv), "%s: %s", TGT_INTRA, strcmp(a->method, "DELETE") ? "ec" : TGT_DELETE);
	if (!strcmp(a->method, "GET")) { /* the answer's head too (EC_META_HDR, EC_HOLDER_HDR) */
		bool body = a->fd >= 0 || a->sink;
		if (xs_get_to(a->url.ptr, hp, body ? 60000 : 10000, a->sink ? a->sink : body ? to_fd : to_buf,
			      a->sink ? a->sink_arg : a, &a->hdrs, &a->status, &a->resp) != AIS_OK)
			a->status = 0;
	} else if (httpc_sync(a->method, a->url.ptr, hp, NULL, 0, 10000, &a->resp, &a->status) != AIS_OK) {
		a->status = 0;
	}
	return NULL;
}

struct ec_ask *ec_ask_each(const ec_url_t *u, size_t n, const char *method, const char *query, int *fds,
			   httpc_sink_fn *sinks, void **args, const char *hdr, const char *bck, size_t blen,
			   const char *obj, size_t olen)
{
	struct ec_ask *a = xcalloc(n + 1, sizeof(*a));
	for (size_t i = 0; i < n; i++) {
		a[i].method = method;
		a[i].hdr = hdr;
		a[i].fd = fds ? fds[i] : -1;
		a[i].sink = sinks ? sinks[i] : NULL;
		a[i].sink_arg = args ? args[i] : NULL;
		slice_url(&a[i].url, u[i], bck, blen, obj, olen);
		buf_addstr(&a[i].url, query);
		a[i].started = pthread_create(&a[i].th, NULL, ask_one, &a[i]) == 0;
		if (!a[i].started)
			ask_one(&a[i]);
	}
	for (size_t i = 0; i < n; i++)
		if (a[i].started)
			pthread_join(a[i].th, NULL);
	return a;
}

struct ec_ask *ec_ask_all(const ec_url_t *u, size_t n, const char *method, const char *query, int *fds,
			  const char *hdr, const char *bck, size_t blen, const char *obj, size_t olen)
{
	return ec_ask_each(u, n, method, query, fds, NULL, NULL, hdr, bck, blen, obj, olen);
}

int64_t ec_deleted_at(target_t *t, const struct ec_ask *a, size_t n, const char *bck, size_t blen, const char *obj,
		      size_t olen)
{
	int64_t when = store_tomb_get(t->store, bck, blen, obj, olen);
	for (size_t i = 0; i < n; i++) {
		sv_t h = httpc_header_find(sv_of(&a[i].hdrs), EC_DELETED_HDR);
		uint64_t v;
		if (h.ptr && num_parse_u64(h.ptr, h.len, 1, INT64_MAX, &v) == AIS_OK && (int64_t)v > when)
			when = (int64_t)v;
	}
	return when;
}

void ec_ask_free(struct ec_ask *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		buf_free(&a[i].url);
		buf_free(&a[i].resp);
		buf_free(&a[i].hdrs);
	}
	free(a);
}

size_t ec_delete_slices(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen, int64_t stamp)
{
	ec_url_t *u;
	char sh[64];
	size_t n = ec_targets(t, bck, blen, obj, olen, &u), gone = 0;
	snprintf(sh, sizeof(sh), "%s: %lld", TGT_STAMP, (long long)stamp);
	struct ec_ask *a = ec_ask_all(u, n, "DELETE", "", NULL, stamp ? sh : NULL, bck, blen, obj, olen);
	for (size_t i = 0; i < n; i++)
		gone += a[i].status == 200;
	ec_ask_free(a, n);
	free(u);
	return gone;
}

