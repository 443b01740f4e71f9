/*
 * ec.c - erasure-coded objects across targets (ec_int.h): the encode and
 * placement of a PUT's slices, the rebuild of an object from its slices,
 * the repair of missing slices, and the delete of all of them.
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
 *  4. After map changes slices may be anywhere, one per target: a rebuild
 *     asks every active target for its slice, keeps those whose metadata
 *     names the newest version with at least D slices, and checks the
 *     rebuilt object against the checksum the slices carry. A slice that
 *     fails its own checksum is refused by its target (ecslice.c rule 3),
 *     so wrong bytes are never decoded and never served.
 *  5. The repair (from the whole copy: the rebalance's walk and queue)
 *     asks the holders (the first D+P active targets by HRW) for their
 *     slices, encodes only the indices none of them holds and sends each
 *     to a holder with no current slice, or one whose index a holder
 *     before it in HRW order has too. Only the owner encodes an object
 *     none of whose holders has a slice (a bucket converted to erasure
 *     coding): one encoder, so every slice is of one write (version).
 *  6. A slice on a target that is not one of its holders (a map change:
 *     decommission, maintenance with drain, a target joined or rejoined)
 *     is moved by that target's rebalance walk to the first holder that
 *     lacks a slice of that write (ecslice.c rule 4), then dropped here;
 *     the whole copy moves as any object does.
 *  7. A slice is dropped off a non-holder only when one holder says it has
 *     that slice (or D slices of a newer write) under a map at least as
 *     new as the walk's (ecslice.c rule 5), or took it with a move; and
 *     only if the map is still the walk's, checked under the map lock. A
 *     holder answers for its slice under that lock too, so two targets
 *     with different maps never each drop their slice on the other's word.
 *  8. The owner's walk of its slices fetches the whole copy it lacks (its
 *     owner was lost), or rebuilds it from the slices, which queues the
 *     repair of the missing slices (rule 5).
 *  9. A Range read with no whole copy to fetch decodes only the stripes
 *     the range touches: one ranged GET per slice index of the newest
 *     write, into temporary files, decoded from D of them and checked
 *     against every other one (a ranged slice is not checked against its
 *     own checksum, which covers the whole slice); with only D reachable,
 *     or slices that disagree, the whole object is rebuilt instead (rule
 *     4: checked against the object's checksum). The bytes land at their
 *     offsets in a sparse temporary file of the object's size.
 * 10. In a bucket whose erasure coding was turned off (a re-encode to
 *     copies), or of an object now below a raised ec.objsize_limit, a
 *     slice is dropped only once every holder of the object under the new
 *     props has a whole copy (with ec.whole_copy=false the holder of
 *     slice 0 rebuilds one first, and the rebalance copies it); a slice of a former D+P (a
 *     re-encode to another layout) only once the holders under the new
 *     one confirm D slices of the newer write (rule 7).
 * 11. Deletes win over slices (ol.h invariant 2): a client's delete leaves
 *     tombstones on every active target (of the object, and of the slice
 *     where one was: ecslice.c rule 6), and every slice answer carries the
 *     newest tombstone of its target. A slice whose write (its version) is
 *     older than a tombstone seen here or in an answer is of a deleted
 *     object: a rebuild or a range read never decodes it, the rebalance
 *     drops it instead of moving it (a holder asks the first other holder
 *     once per walk, a non-holder asks them all as rule 7 does), and a
 *     whole copy written before such a tombstone is not encoded by the
 *     repair but dropped (EC_GONE). A repair that finds no current slice
 *     versions the new ones with the whole copy's mtime (or one more than
 *     the newest slice it saw: a former layout's, rule 10), not the time
 *     of the repair, so a receiver with a newer tombstone refuses them.
 * 12. A PUT whose size is known when its body starts (a native PUT with a
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
 * 13. A bucket with ec.whole_copy=false keeps no whole copy of an object
 *     it erasure codes (space 1 + P/D per byte): the PUT commits only the
 *     slices (rule 2 otherwise as before), and drops whole copies of an
 *     earlier write on the owner and the holders of small objects' copies.
 *     A read fetches the D data slices whole (each checked against its
 *     checksum by its holder) straight to their offsets in an unlinked
 *     temporary file, or decodes from any D slices when one is missing or
 *     damaged (rule 4), checks the result against the object's checksum
 *     and serves that file; a HEAD asks the slices' metadata only, a Range
 *     read decodes its stripes (rule 9). The repair runs from the slices:
 *     the first holder in HRW order with a current slice asks the others,
 *     and only when an index is missing reads the object as above and
 *     encodes the missing slices (rule 5). A whole copy left of a bucket
 *     converted to this mode is dropped by its owner once all D+P slices
 *     are confirmed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "ec_int.h"
#include "grow.h"
#include "aisd/ec.h"
#include "aisd/httpc.h"
#include "aisd/jobs.h"
#include "aisd/log.h"
#include "aisd/metrics.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "aisd/banned.h"

#define NSL (2 * EC_SLICES_MAX)
typedef char url_t[CMAP_URL_MAX + 1];

/* Counters for /metrics, registered at 0 by ec_metrics_init so a scrape
 * (and a dashboard) sees them before the first erasure-coded write. */
enum {
	EC_M_WRITTEN,
	EC_M_DAMAGED,
	EC_M_REBUILDS,
	EC_M_REBUILD_FAILURES,
	EC_M_RANGE_READS,
	EC_M_RANGE_BYTES,
	EC_M_MOVED,
	EC_M_STREAMED,
	EC_M_N
};
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

static void count(int m, uint64_t n)
{
	METRICS_ADD(metrics_counter(ec_metrics[m].name, "", ec_metrics[m].help), n);
}

void ec_metrics_init(void)
{
	for (int m = 0; m < EC_M_N; m++)
		count(m, 0);
}

static uint64_t slice_timeout_ms(uint64_t size) { return 60000 + size / (16 << 10); }

static int tmp_file(target_t *t)
{
	int fd = open(t->conf->mountpaths[0], O_TMPFILE | O_RDWR, 0600);
	if (fd < 0)
		log_warn("erasure coding: temporary file in %s", t->conf->mountpaths[0]);
	return fd;
}

/* The active targets' intra URLs; the first D+P in HRW order of bck/obj. */
static size_t targets(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen, url_t **out)
{
	const cmap_t *m;
	place_t p;
	cluster_read_lock(t->base.cl, &m, NULL);
	size_t cap = m ? cmap_size(m) : 0, n = 0;
	url_t *u = xcalloc(cap + 1, sizeof(*u));
	ec_place_of(m, NULL, bck, blen, obj, olen, cap, &p);
	for (size_t i = 0; i < p.n; i++)
		snprintf(u[n++], sizeof(u[0]), "%s", p.node[i]->intra_url);
	cluster_read_unlock(t->base.cl);
	*out = u;
	return n;
}

static const char *self_intra(target_t *t) { return cluster_self(t->base.cl)->intra_url; }
static const char *self_id(target_t *t) { return cluster_self(t->base.cl)->id; }

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
		const char *u[1] = {s->url.ptr};
		httpc_sync_put_fd(u, 1, hp, s->fd, s->len, slice_timeout_ms(s->len), &s->status, &s->msg);
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

/*
 * Encodes the object in fd (layout l) and sends slice i to dest[i] for
 * every i with dest[i] non-NULL (rule 3). ok[i] tells which answered 200.
 * Returns how many did; msg says why the others failed.
 */
static size_t encode_send(target_t *t, int fd, const ec_layout_t *l, const ec_meta_t *tmpl, const char *custom,
			  const char *const *dest, const char *bck, size_t blen, const char *obj, size_t olen,
			  bool *ok, buf_t *msg)
{
	unsigned n = l->d + l->p;
	struct send s[NSL];
	unsigned char *cell[NSL];
	ec_codec_t *c = ec_codec_new(l->d, l->p);
	size_t good = 0;
	bool failed = false;

	memset(s, 0, sizeof(s));
	for (unsigned i = 0; i < n; i++) {
		ok[i] = false;
		s[i].fd = -1;
		cell[i] = xmalloc(l->cell);
		if (dest[i] && (s[i].fd = tmp_file(t)) < 0)
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
		unsigned char *out[NSL];
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
	count(EC_M_WRITTEN, good);
	return good;
}

static void meta_template(ec_meta_t *m, const bmd_props_t *bp, const store_meta_t *sm)
{
	memset(m, 0, sizeof(*m));
	m->d = bp->ec_data;
	m->p = bp->ec_parity;
	m->cell = EC_CELL;
	m->size = sm->size;
	m->version = (uint64_t)time_now_ns();
	snprintf(m->cksum, sizeof(m->cksum), "%s:%s", store_cksum_name(sm->cksum_type),
		 sm->cksum[0] ? sm->cksum : "-");
}


/* --- a PUT encoded while its body arrives (rule 12) -------------------------------- */

struct ec_stream {
	ec_layout_t l;
	ec_codec_t *c;
	unsigned n;               /* D + P */
	uint64_t got;             /* object bytes taken */
	uint64_t st;              /* the stripe being filled */
	uint64_t fill;            /* its bytes so far */
	unsigned char *stripe;    /* D cells: the stripe's object bytes */
	unsigned char *cell[NSL]; /* the parity (and a short stripe's data) */
	xs_stream_t *s[NSL];      /* slice i's PUT to dest[i] */
	XXH64_state_t *xx[NSL];   /* slice i's checksum */
	buf_t msg[NSL];
	url_t dest[NSL];
	bool over; /* more bytes than declared: ec_put encodes the sealed file */
};

ec_stream_t *ec_stream_open(ol_put_t *p, uint64_t size)
{
	bmd_props_t bp;
	url_t *u;
	if (!p->t->base.cl || !ec_props(p->t, p->bck, &bp) || !bp.ec_enabled || !place_ec(&bp, size))
		return NULL;
	unsigned n = bp.ec_data + bp.ec_parity;
	size_t nt = targets(p->t, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, &u);
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
	unsigned char *out[NSL];
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

/* Rule 12: ends the slices' streams with their trailers. AIS_OK when all
 * D+P answered 200; else AIS_ERR (EAGAIN, p->msg says why) after deleting
 * the slices that landed. */
static int stream_finish(ol_put_t *p, ec_stream_t *e, const ec_meta_t *tmpl)
{
	char mh[EC_META_MAX + 32], cv[64], md[STORE_CUSTOM_MAX + 32];
	const char *tr[] = {mh, cv, p->custom && p->custom[0] ? md : NULL, NULL};
	bool ok[NSL];
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
	count(EC_M_WRITTEN, good);
	if (good == e->n) {
		count(EC_M_STREAMED, 1);
		return AIS_OK;
	}
	for (unsigned i = 0; i < e->n; i++) /* rule 2 */
		if (ok[i])
			delete_slice_on(e->dest[i], p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len);
	errno = EAGAIN;
	return AIS_ERR;
}

/* The metadata of a PUT whose slices are durable (sealed as sm, written
 * as tmpl), for the answer when no whole copy commits (rule 13). */
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
	url_t *u;
	const char *dest[NSL] = {NULL};
	bool ok[NSL];
	unsigned n = bp->ec_data + bp->ec_parity;
	int fd, rc = AIS_ERR;

	if (store_writer_seal(p->sw, p->want_type, p->want_type != CKSUM_NONE ? p->want_hex : NULL, &sm) != AIS_OK)
		return AIS_ERR;
	ec_stream_t *e = p->ecs;
	if (e && !e->over && e->got == sm.size && e->st == e->l.stripes && e->l.d == bp->ec_data && e->l.p == bp->ec_parity) {
		meta_template(&tmpl, bp, &sm); /* rule 12: the slices are sent, but for their trailers */
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
	size_t nt = targets(t, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, &u);
	ec_layout(sm.size, bp->ec_data, bp->ec_parity, EC_CELL, &l);
	meta_template(&tmpl, bp, &sm);
	if (nt < n) {
		buf_addf(&p->msg, "erasure coding %u+%u needs %u active targets, the cluster has %zu", bp->ec_data,
			 bp->ec_parity, n, nt);
		errno = EAGAIN;
		goto out;
	}
	for (unsigned i = 0; i < n; i++)
		dest[i] = u[i]; /* rule 1 */
	size_t good = encode_send(t, fd, &l, &tmpl, p->custom, dest, p->bck.ptr, p->bck.len, p->obj.ptr,
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

/* One request to one target, on a thread of its own: DELETE, GET ?meta
 * (the text in resp) or GET into a temporary file (fd >= 0); a GET keeps
 * the answer's head in hdrs. */
struct ask {
	pthread_t th;
	bool started;
	const char *method;
	buf_t url, resp, hdrs;
	const char *hdr; /* an extra header line, or NULL */
	int fd;
	httpc_sink_fn sink; /* a GET's body goes here instead (with sink_arg) */
	void *sink_arg;
	int status;
};

static int to_fd(void *arg, const char *p, size_t n)
{
	struct ask *a = arg;
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
	buf_add(&((struct ask *)arg)->resp, p, n);
	return AIS_OK;
}

static void *ask_one(void *arg)
{
	struct ask *a = arg;
	char hv[64];
	const char *hp[] = {hv, a->hdr, NULL};
	/* the only DELETE asked of all is a client's (rule 11: tombstones) */
	snprintf(hv, sizeof(hv), "%s: %s", TGT_INTRA, strcmp(a->method, "DELETE") ? "ec" : TGT_DELETE);
	if (!strcmp(a->method, "GET")) { /* the answer's head too (EC_META_HDR, EC_HOLDER_HDR) */
		bool body = a->fd >= 0 || a->sink;
		if (httpc_sync_get_to(a->url.ptr, hp, body ? 600000 : 10000, a->sink ? a->sink : body ? to_fd : to_buf,
				      a->sink ? a->sink_arg : a, &a->hdrs, &a->status, &a->resp) != AIS_OK)
			a->status = 0;
	} else if (httpc_sync(a->method, a->url.ptr, hp, NULL, 0, 10000, &a->resp, &a->status) != AIS_OK) {
		a->status = 0;
	}
	return NULL;
}

/* Asks every one of u[0..n) in parallel (hdr: an extra header line, or
 * NULL; a GET's body to fds[i], or to sinks[i] (with args[i]) where not
 * NULL); a[i] holds the answers. */
static struct ask *ask_each(const url_t *u, size_t n, const char *method, const char *query, int *fds,
			    httpc_sink_fn *sinks, void **args, const char *hdr, const char *bck, size_t blen,
			    const char *obj, size_t olen)
{
	struct ask *a = xcalloc(n + 1, sizeof(*a));
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

static struct ask *ask_all(const url_t *u, size_t n, const char *method, const char *query, int *fds,
			   const char *hdr, const char *bck, size_t blen, const char *obj, size_t olen)
{
	return ask_each(u, n, method, query, fds, NULL, NULL, hdr, bck, blen, obj, olen);
}

/* Rule 11: the newest tombstone of bck/obj here and in the answers a[0..n). */
static int64_t deleted_at(target_t *t, const struct ask *a, size_t n, const char *bck, size_t blen, const char *obj,
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

static void ask_free(struct ask *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		buf_free(&a[i].url);
		buf_free(&a[i].resp);
		buf_free(&a[i].hdrs);
	}
	free(a);
}

size_t ec_delete_slices(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen)
{
	url_t *u;
	size_t n = targets(t, bck, blen, obj, olen, &u), gone = 0;
	struct ask *a = ask_all(u, n, "DELETE", "", NULL, NULL, bck, blen, obj, olen);
	for (size_t i = 0; i < n; i++)
		gone += a[i].status == 200;
	ask_free(a, n);
	free(u);
	return gone;
}

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

/* Rule 4: the answer (of m[0..n) with have[i]) of the newest write with at
 * least D distinct slices, *cnt of them; -1 when none has. have[i] of a
 * write older than the tombstone tomb (rule 11) is cleared first. */
static ssize_t pick_write(const ec_meta_t *m, bool *have, size_t n, int64_t tomb, size_t *cnt)
{
	ssize_t ref = -1;
	for (size_t i = 0; i < n; i++)
		have[i] = have[i] && (int64_t)m[i].version >= tomb;
	for (size_t i = 0; i < n; i++) {
		if (!have[i])
			continue;
		size_t c = 0;
		bool idx_seen[NSL] = {false};
		for (size_t j = 0; j < n; j++)
			if (have[j] && ec_same_write(&m[j], &m[i]) && !idx_seen[m[j].idx])
				idx_seen[m[j].idx] = true, c++;
		if (c >= m[i].d && (ref < 0 || m[i].version > m[ref].version || (m[i].version == m[ref].version && c > *cnt)))
			ref = (ssize_t)i, *cnt = c;
	}
	return ref;
}

/* Rule 4 with the answers' metadata m[0..n) (have[i]: a slice there):
 * the newest write with at least D slices, *best of them (have[] of older
 * writes than the newest tombstone cleared); -1 with *e = ENOENT (no
 * slice), ESTALE (all of a deleted write) or EIO (too few; msg says why). */
static ssize_t newest_write(target_t *t, sv_t bck, sv_t obj, const struct ask *a, size_t n, const ec_meta_t *m,
			    bool *have, size_t *best, int *e, buf_t *msg)
{
	size_t any = 0, live = 0;
	for (size_t i = 0; i < n; i++)
		any += have[i];
	int64_t tomb = deleted_at(t, a, n, bck.ptr, bck.len, obj.ptr, obj.len);
	ssize_t r = pick_write(m, have, n, tomb, best);
	for (size_t i = 0; i < n; i++)
		live += have[i];
	*e = ENOENT;
	if (r < 0 && !live && tomb && any) { /* rule 11 */
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
static sv_t custom_of(const struct ask *a) { return httpc_header_find(sv_of(&a->hdrs), "Ais-Custom-Md"); }

/* The object's metadata as its slices tell it: the write ref, and custom. */
static void meta_of_write(const ec_meta_t *ref, sv_t cm, store_meta_t *out)
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
static struct ask *ask_metas(target_t *t, sv_t bck, sv_t obj, url_t **u, size_t *n, ec_meta_t **m, bool **have)
{
	*n = targets(t, bck.ptr, bck.len, obj.ptr, obj.len, u);
	struct ask *a = ask_all(*u, *n, "GET", "?meta=true", NULL, NULL, bck.ptr, bck.len, obj.ptr, obj.len);
	*m = xcalloc(*n + 1, sizeof(**m));
	*have = xcalloc(*n + 1, sizeof(**have));
	for (size_t i = 0; i < *n; i++)
		(*have)[i] = a[i].status == 200 && ec_meta_parse(a[i].resp.ptr, a[i].resp.len, &(*m)[i]) == AIS_OK;
	return a;
}

int ec_stat(target_t *t, sv_t bck, sv_t obj, store_meta_t *out, buf_t *msg)
{
	url_t *u;
	size_t n, best = 0;
	ec_meta_t *m;
	bool *have;
	int e;
	struct ask *a = ask_metas(t, bck, obj, &u, &n, &m, &have);
	ssize_t r = newest_write(t, bck, obj, a, n, m, have, &best, &e, msg);
	if (r >= 0)
		meta_of_write(&m[r], custom_of(&a[r]), out);
	ask_free(a, n);
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
	if (to_fd(&(struct ask){.fd = k->fd}, p, n) != AIS_OK)
		return AIS_ERR;
	k->at += n;
	if (k->moved)
		k->moved(k->marg, k->at);
	return AIS_OK;
}

/*
 * Rule 4: GETs the slice of bck/obj on every active target (each checked
 * against its own checksum there), picks the newest write with D of them
 * and writes the decoded object to k. *ref gets that write's metadata,
 * *custom its custom metadata (the caller frees it), *best how many of
 * its slices were found. AIS_OK, or AIS_ERR with errno as newest_write's.
 */
static int rebuild(target_t *t, sv_t bck, sv_t obj, struct sink *k, ec_meta_t *ref_out, store_meta_t *sm,
		   size_t *best, buf_t *msg)
{
	url_t *u;
	size_t n = targets(t, bck.ptr, bck.len, obj.ptr, obj.len, &u);
	int *fds = xcalloc(n + 1, sizeof(*fds));
	ec_meta_t *m = xcalloc(n + 1, sizeof(*m));
	bool *have = xcalloc(n + 1, sizeof(*have));
	int rc = AIS_ERR, e = ENOENT;

	for (size_t i = 0; i < n; i++)
		fds[i] = tmp_file(t);
	struct ask *a = ask_all(u, n, "GET", "", fds, NULL, bck.ptr, bck.len, obj.ptr, obj.len);
	for (size_t i = 0; i < n; i++) {
		sv_t mh = httpc_header_find(sv_of(&a[i].hdrs), EC_META_HDR);
		if (a[i].status == 410)
			count(EC_M_DAMAGED, 1),
				log_warnx("%.*s/%.*s: the slice on %s is damaged; rebuilding from the others",
						  (int)bck.len, bck.ptr, (int)MIN(obj.len, 200), obj.ptr, u[i]);
		have[i] = a[i].status == 200 && fds[i] >= 0 && mh.ptr && ec_meta_parse(mh.ptr, mh.len, &m[i]) == AIS_OK;
	}
	ssize_t r = newest_write(t, bck, obj, a, n, m, have, best, &e, msg);
	if (r < 0)
		goto out;
	const ec_meta_t *ref = &m[r];
	*ref_out = *ref;
	meta_of_write(ref, custom_of(&a[r]), sm);
	e = EIO;
	int sfd[NSL];
	bool got[NSL] = {false};
	for (unsigned j = 0; j < NSL; j++)
		sfd[j] = -1;
	for (size_t i = 0; i < n; i++)
		if (have[i] && ec_same_write(&m[i], ref) && !got[m[i].idx])
			got[m[i].idx] = true, sfd[m[i].idx] = fds[i];
	ec_layout_t l;
	ec_layout(ref->size, ref->d, ref->p, ref->cell, &l);
	ec_codec_t *c = ec_codec_new(ref->d, ref->p);
	unsigned char *cell[NSL];
	unsigned ns = ref->d + ref->p;
	for (unsigned j = 0; j < ns; j++)
		cell[j] = xmalloc(ref->cell);
	rc = AIS_OK;
	for (uint64_t st = 0; st < l.stripes && rc == AIS_OK; st++) {
		uint32_t cs = ec_stripe_cell(&l, st);
		bool hv[NSL];
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
	ask_free(a, n);
	free(fds), free(m), free(have), free(u);
	if (rc != AIS_OK)
		errno = e;
	return rc;
}

static void rebuilt(sv_t bck, sv_t obj, int rc, size_t best, unsigned ns)
{
	if (rc == AIS_OK) {
		count(EC_M_REBUILDS, 1);
		log_info("rebuilt %.*s/%.*s from %zu of its %u slices", (int)bck.len, bck.ptr, (int)MIN(obj.len, 200),
			 obj.ptr, best, ns);
	} else {
		count(EC_M_REBUILD_FAILURES, 1);
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
		/* the rebuilt bytes must match the object's checksum (rule 4) */
		buf_addf(msg, "the object rebuilt from %zu slices does not match its checksum: %s", best,
			 strerror(errno));
		rc = AIS_ERR, e = EIO;
	}
	store_writer_free(k.w);
	if (rc == AIS_OK || e == EIO)
		rebuilt(bck, obj, rc, best, ref.d + ref.p);
	if (rc == AIS_OK && t->reb && best < ref.d + ref.p) /* rule 5: the rebalance rebuilds the missing slices */
		reb_enqueue(t->reb, bck.ptr, bck.len, obj.ptr, obj.len);
	errno = e;
	return rc;
}

/* --- reads with no whole copy (rule 13) ----------------------------------------- */

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
	url_t *u;
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
	url_t sel[EC_SLICES_MAX];
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
	struct ask *a = ask_each(sel, k, "GET", "", NULL, fns, args, NULL, r->bck, r->blen, r->obj, r->olen);
	bool ok = true;
	for (unsigned i = 0; i < k; i++) {
		sv_t mh = httpc_header_find(sv_of(&a[i].hdrs), EC_META_HDR);
		ec_meta_t sm;
		if (a[i].status == 410)
			count(EC_M_DAMAGED, 1), log_warnx("%.*s/%.*s: the slice on %s is damaged; decoding from the others",
							  (int)r->blen, r->bck, (int)MIN(r->olen, 200), r->obj, sel[i]);
		ok = ok && a[i].status == 200 && mh.ptr && ec_meta_parse(mh.ptr, mh.len, &sm) == AIS_OK &&
		     ec_same_write(&sm, &r->ref) && sm.idx == at[i].j && at[i].so == r->l.slice_size;
	}
	ask_free(a, k);
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
		if (!err && r->t->reb) /* rule 5: the rebalance rebuilds the missing slices */
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
	struct ask *a = ask_metas(t, bck, obj, &r->u, &r->n, &r->m, &r->have_slice);
	ssize_t w = newest_write(t, bck, obj, a, r->n, r->m, r->have_slice, &best, &e, msg);
	if (w >= 0) {
		meta_of_write(&r->m[w], custom_of(&a[w]), m);
		r->ref = r->m[w];
	}
	ask_free(a, r->n);
	atomic_init(&r->refs, 2); /* the thread's and the caller's */
	if (w < 0)
		goto fail;
	e = EIO;
	ec_layout(r->ref.size, r->ref.d, r->ref.p, r->ref.cell, &r->l);
	if ((r->g.fd = tmp_file(t)) < 0 || ftruncate(r->g.fd, (off_t)r->ref.size) != 0) {
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
	url_t *u, sel[NSL];
	size_t n, best = 0, k = 0;
	ec_meta_t *m;
	bool *have, got[NSL] = {false}, idx_taken[NSL] = {false};
	struct ask *a = ask_metas(t, bck, obj, &u, &n, &m, &have), *b = NULL;
	int fds[NSL], sfd[NSL], ofd = -1, rc = AIS_ERR, e = EAGAIN;
	unsigned sidx[NSL], ngot = 0;
	uint64_t start, len, fetched = 0;

	ssize_t r = pick_write(m, have, n, deleted_at(t, a, n, bck.ptr, bck.len, obj.ptr, obj.len), &best);
	/* D slices decode; one more checks them (rule 9) */
	if (r < 0 || best <= m[r].d || http_range_parse(range, m[r].size, &start, &len) != AIS_OK) {
		ask_free(a, n);
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
			fds[k] = tmp_file(t);
			snprintf(sel[k++], sizeof(sel[0]), "%s", u[i]);
		}
	for (unsigned j = 0; j < NSL; j++)
		sfd[j] = -1;
	b = ask_all(sel, k, "GET", "", fds, rh, bck.ptr, bck.len, obj.ptr, obj.len);
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
	unsigned char *cell[NSL], *chk[NSL];
	ec_codec_t *c = ec_codec_new(l.d, l.p);
	for (unsigned j = 0; j < ns; j++)
		cell[j] = xmalloc(l.cell), chk[j] = xmalloc(l.cell);
	if (ngot <= l.d || (ofd = tmp_file(t)) < 0 || ftruncate(ofd, (off_t)ref->size) != 0)
		goto done;
	e = EIO;
	for (uint64_t st = s0; st <= s1; st++) {
		uint32_t cs = ec_stripe_cell(&l, st);
		bool hv[NSL], dec[NSL];
		unsigned char *frag[NSL];
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
			if (hv[j] && !dec[j] && memcmp(chk[j], cell[j], cs)) { /* rule 9 */
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
	meta_of_write(ref, custom_of(&a[r]), out);
	*out_fd = ofd;
	ofd = -1;
	rc = AIS_OK;
	count(EC_M_RANGE_READS, 1);
	count(EC_M_RANGE_BYTES, fetched);
done:
	if (ofd >= 0)
		close(ofd);
	for (unsigned j = 0; j < ns; j++)
		free(cell[j]), free(chk[j]);
	ec_codec_free(c);
	for (size_t j = 0; j < k; j++)
		if (fds[j] >= 0)
			close(fds[j]);
	ask_free(b, k);
	ask_free(a, n);
	free(m), free(have), free(u);
	if (rc != AIS_OK)
		errno = e;
	return rc;
}

/* --- repair ------------------------------------------------------------------------- */

/* Rule 5 with the whole copy here (fd; sm its metadata), or, with fd < 0,
 * on a holder of a slice of the write sm describes in a bucket kept as
 * slices only (rule 13): the object is read from the slices only when an
 * index is missing. With ec.whole_copy=false the whole copy here is
 * dropped once all D+P slices are there (rule 13). Returns as ec_repair;
 * closes fd. */
static int repair(target_t *t, const bmd_props_t *bpp, const char *bck, size_t blen, const char *obj, size_t olen,
		  int fd, const store_meta_t *sm, buf_t *msg)
{
	bmd_props_t bp = *bpp;
	bool whole = fd >= 0;
	store_meta_t *smp = xmalloc(sizeof(*smp));
	*smp = *sm;
	url_t *u;
	unsigned ns = bp.ec_data + bp.ec_parity, missing = 0, placed = 0;
	size_t all = targets(t, bck, blen, obj, olen, &u), n = MIN(all, ns); /* the holders (rule 5) */
	/* from the slices: the other targets too, whose slices the rebalance
	 * moves to the holders instead of a read of the whole object here */
	size_t na = whole ? n : all;
	struct ask *a = ask_all(u, na, "GET", "?meta=true", NULL, NULL, bck, blen, obj, olen);
	ec_meta_t tmpl, m;
	meta_template(&tmpl, &bp, smp);
	bool have_idx[NSL] = {false}, taken[NSL] = {false}, moving[NSL] = {false};
	const char *dest[NSL] = {NULL};
	uint64_t ver = 0, seen = 0;
	for (size_t i = 0; i < na; i++) {
		if (a[i].status != 200 || ec_meta_parse(a[i].resp.ptr, a[i].resp.len, &m) != AIS_OK)
			continue;
		seen = MAX(seen, m.version);
		/* current: the same object (size, checksum) in the bucket's layout,
		 * and an index no holder before it in HRW order has */
		if (m.d != tmpl.d || m.p != tmpl.p || m.size != tmpl.size || strcmp(m.cksum, tmpl.cksum) ||
		    have_idx[m.idx])
			continue;
		if (i >= n) {
			moving[m.idx] = true;
			continue;
		}
		taken[i] = have_idx[m.idx] = true;
		ver = MAX(ver, m.version);
	}
	int wrote = 0;
	size_t next = 0;
	if (deleted_at(t, a, na, bck, blen, obj, olen) > smp->mtime_ns) { /* rule 11 */
		log_info("%.*s/%.*s: a client deleted it after the whole copy here was written: dropped, not encoded",
			 (int)blen, bck, (int)MIN(olen, 200), obj);
		wrote = EC_GONE;
		goto out;
	}
	if (!ver && n && whole && strcmp(u[0], self_intra(t))) { /* rule 5: the first slices are the owner's */
		buf_addf(msg, "no slice of it on its holders yet: its owner encodes them");
		wrote = -1;
		goto out;
	}
	for (unsigned k = 0; k < ns; k++) {
		if (have_idx[k] || moving[k])
			continue; /* (a slice on its way here: rule 6) */
		missing++;
		while (next < n && taken[next])
			next++;
		if (next < n)
			dest[k] = u[next++], placed++;
	}
	if (missing) {
		if (placed < missing)
			log_info("%.*s/%.*s: %u of its %u slices missing, only %u active targets without one: "
				 "erasure-coded with less redundancy until targets join",
				 (int)blen, bck, (int)MIN(olen, 200), obj, missing, ns, placed);
		/* the repaired slices join the surviving ones' write; new ones are
		 * newer than any slice seen (a former layout's: rule 10) and no
		 * younger than the whole copy otherwise (rule 11) */
		tmpl.version = ver ? ver : MAX((uint64_t)smp->mtime_ns, seen + 1);
		ec_layout_t l;
		bool ok[NSL];
		ec_layout(smp->size, bp.ec_data, bp.ec_parity, EC_CELL, &l);
		if (placed && fd < 0 &&
		    (ec_read_whole(t, (sv_t){bck, blen}, (sv_t){obj, olen}, &fd, smp, msg) != AIS_OK ||
		     smp->size != sm->size || strcmp(smp->cksum, sm->cksum))) {
			if (fd >= 0)
				buf_addstr(msg, "overwritten meanwhile: the next run repairs it");
			wrote = -1;
			goto out;
		}
		if (placed) {
			size_t good = encode_send(t, fd, &l, &tmpl, smp->custom, dest, bck, blen, obj, olen, ok, msg);
			wrote = good < placed ? -1 : (int)good;
			if (good)
				log_info("%.*s/%.*s: rebuilt %zu missing slice(s)", (int)blen, bck, (int)MIN(olen, 200),
					 obj, good);
		}
	}
	if (whole && bp.ec_no_whole && wrote >= 0 && (unsigned)wrote == missing) {
		/* every slice is there: a converted bucket's whole copy goes */
		store_meta_t *now = xmalloc(sizeof(*now));
		if (store_lookup(t->store, bck, blen, obj, olen, now) == AIS_OK && now->mtime_ns == sm->mtime_ns &&
		    !strcmp(now->cksum, sm->cksum) && store_delete(t->store, bck, blen, obj, olen) == AIS_OK)
			log_info("%.*s/%.*s: its %u slices are all there: the whole copy dropped (ec.whole_copy=false)",
				 (int)blen, bck, (int)MIN(olen, 200), obj, ns);
		free(now);
	}
out:
	if (fd >= 0)
		close(fd);
	ask_free(a, na);
	free(u);
	free(smp);
	return wrote;
}

int ec_repair(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen, buf_t *msg)
{
	bmd_props_t bp;
	store_meta_t *sm = xmalloc(sizeof(*sm));
	int fd, rc = 0;
	if (!ec_props(t, (sv_t){bck, blen}, &bp)) {
	} else if (store_open_obj(t->store, bck, blen, obj, olen, &fd, sm) == AIS_OK) {
		if (place_ec(&bp, sm->size))
			rc = repair(t, &bp, bck, blen, obj, olen, fd, sm, msg);
		else
			close(fd);
	} else if (bp.ec_enabled && bp.ec_no_whole && ec_stat(t, (sv_t){bck, blen}, (sv_t){obj, olen}, sm, msg) == AIS_OK &&
		   place_ec(&bp, sm->size)) { /* kept as slices only (rule 13) */
		rc = repair(t, &bp, bck, blen, obj, olen, -1, sm, msg);
	}
	free(sm);
	return rc;
}

/* --- a slice off its holders (the rebalance) ---------------------------------------- */

/* Deletes the local slice if the map is still cmap_v and the slice still
 * the one decided on (me; NULL: any), under the map lock (rule 7). */
static bool drop_slice(target_t *t, const char *sb, const char *obj, size_t olen, uint64_t cmap_v,
		       const ec_meta_t *me)
{
	const cmap_t *m;
	store_meta_t sm;
	ec_meta_t now;
	bool gone = false;
	cluster_read_lock(t->base.cl, &m, NULL);
	if (m && cmap_version(m) == cmap_v &&
	    (!me || (store_lookup(t->store, sb, strlen(sb), obj, olen, &sm) == AIS_OK &&
		     ec_meta_of(sm.custom, &now) == AIS_OK && ec_same_write(&now, me) && now.idx == me->idx)))
		gone = store_delete(t->store, sb, strlen(sb), obj, olen) == AIS_OK;
	cluster_read_unlock(t->base.cl);
	return gone;
}

/* Rule 10: do all the holders of bck/obj (size bytes) under the bucket's
 * props bp have a whole copy? msg names one that lacks it. */
static bool copies_there(target_t *t, const bmd_props_t *bp, const char *bck, size_t blen, const char *obj,
			 size_t olen, uint64_t size, buf_t *msg)
{
	const cmap_t *m;
	place_t p;
	url_t h[BMD_COPIES_MAX];
	size_t n = 0;
	bool all = true;
	char hv[64];
	const char *hp[] = {hv, NULL};
	buf_t url = BUF_INIT, resp = BUF_INIT;
	cluster_read_lock(t->base.cl, &m, NULL);
	ec_place_of(m, NULL, bck, blen, obj, olen, MIN(place_copies_of(bp, size), BMD_COPIES_MAX), &p);
	for (size_t i = 0; i < p.n; i++)
		snprintf(h[n++], sizeof(h[0]), "%s", p.node[i]->intra_url);
	cluster_read_unlock(t->base.cl);
	snprintf(hv, sizeof(hv), "%s: ec", TGT_INTRA);
	for (size_t i = 0; i < n && all; i++) {
		int status = 0;
		buf_reset(&url);
		tgt_url_obj(&url, h[i], bck, blen, obj, olen);
		all = httpc_sync("HEAD", url.ptr, hp, NULL, 0, 10000, &resp, &status) == AIS_OK && status == 200;
		if (!all)
			buf_addf(msg, "erasure coding is off: the slice stays until %s has a whole copy", h[i]);
	}
	buf_free(&url);
	buf_free(&resp);
	return n && all;
}

/* Sends the local slice (fd, meta me) to base as a move under cmap_v;
 * true on 200 (taken, or the receiver had it). */
static bool move_to(const char *base, int fd, const store_meta_t *sm, const ec_meta_t *me, uint64_t cmap_v,
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

int ec_place_slice(target_t *t, const bmd_props_t *bp, const char *bck, size_t blen, const char *obj,
		   size_t olen, uint64_t cmap_v, uint64_t *bytes, buf_t *msg)
{
	char sb[24];
	store_meta_t sm;
	ec_meta_t me;
	url_t top[NSL];
	size_t n = 0;
	bool had = false, moved = false;

	ec_slice_bucket(bck, blen, sb);
	if (store_lookup(t->store, sb, strlen(sb), obj, olen, &sm) != AIS_OK)
		return EC_SLICE_KEPT; /* gone meanwhile */
	/* rule 10: erasure coding off, or the object now below ec.objsize_limit */
	bool coded = ec_meta_of(sm.custom, &me) == AIS_OK && place_ec(bp, me.size);
	if (!coded && (ec_meta_of(sm.custom, &me) != AIS_OK || copies_there(t, bp, bck, blen, obj, olen, me.size, msg)))
		return drop_slice(t, sb, obj, olen, cmap_v, NULL) ? EC_SLICE_DROPPED : EC_SLICE_KEPT;
	if (!coded) { /* rule 10: kept until the copies are there */
		store_meta_t *wm = xmalloc(sizeof(*wm));
		if (bp->ec_no_whole && me.idx == 0 && store_lookup(t->store, bck, blen, obj, olen, wm) != AIS_OK &&
		    (tgt_fetch(t, bck, blen, obj, olen, msg) == AIS_OK ||
		     (buf_reset(msg), ec_restore(t, (sv_t){bck, blen}, (sv_t){obj, olen}, msg)) == AIS_OK) && t->reb)
			/* slices only before: the holder of slice 0 fetches or
			 * rebuilds a whole copy, which the rebalance then copies */
			reb_enqueue(t->reb, bck, blen, obj, olen);
		free(wm);
		return AIS_ERR;
	}
	const cmap_t *cm;
	place_t p;
	cluster_read_lock(t->base.cl, &cm, NULL);
	bool current = cm && cmap_version(cm) == cmap_v;
	/* the holders under the bucket's layout; a slice of another one (a
	 * re-encode) stays only until the new layout is complete */
	bool stale = me.d != bp->ec_data || me.p != bp->ec_parity;
	ec_place_of(cm, self_id(t), bck, blen, obj, olen, bp->ec_data + bp->ec_parity, &p);
	for (size_t i = 0; i < p.n && i < NSL; i++)
		snprintf(top[n++], sizeof(top[0]), "%s", p.node[i]->intra_url);
	cluster_read_unlock(t->base.cl);
	bool owner_has = false;
	if (current && p.self >= 0 && n > 1) {
		/* rule 11: a holder's slice of a deleted object (this target missed
		 * the delete) goes; the first other holder knows of the delete */
		struct ask *a = ask_all(&top[p.self == 0], 1, "GET", "?meta=true", NULL, NULL, bck, blen, obj, olen);
		bool gone = deleted_at(t, a, 1, bck, blen, obj, olen) > (int64_t)me.version;
		ec_meta_t om;
		owner_has = p.self > 0 && a[0].status == 200 && ec_meta_parse(a[0].resp.ptr, a[0].resp.len, &om) == AIS_OK &&
			    (ec_same_write(&om, &me) || om.version > me.version);
		ask_free(a, 1);
		if (gone)
			return drop_slice(t, sb, obj, olen, cmap_v, &me) ? EC_SLICE_DROPPED : EC_SLICE_KEPT;
	}
	if (current && p.self >= 0 && bp->ec_no_whole) {
		/* rule 13: the first holder with a slice repairs the others */
		if (owner_has)
			return EC_SLICE_KEPT;
		const char *nl = strchr(sm.custom, '\n');
		store_meta_t *om = xmalloc(sizeof(*om));
		meta_of_write(&me, sv_from(nl ? nl + 1 : ""), om);
		int w = repair(t, bp, bck, blen, obj, olen, -1, om, msg);
		free(om);
		if (w == EC_GONE)
			return drop_slice(t, sb, obj, olen, cmap_v, &me) ? EC_SLICE_DROPPED : EC_SLICE_KEPT;
		return w < 0 ? AIS_ERR : EC_SLICE_KEPT;
	}
	if (current && p.self == 0 && !bp->ec_no_whole && store_lookup(t->store, bck, blen, obj, olen, &sm) != AIS_OK) {
		/* rule 8: the owner without the whole copy fetches or rebuilds it */
		int fd;
		if (ol_open_sync(t, (sv_t){bck, blen}, (sv_t){obj, olen}, true, &fd, &sm, msg) != AIS_OK)
			return AIS_ERR;
		close(fd);
	}
	if (!current || p.self >= 0)
		return EC_SLICE_KEPT; /* a newer map: its run decides; or a holder (the
					 * owner's repair replaces a slice of a former layout) */

	/* rule 7: dropped only when a holder under a map as new has this slice
	 * (or D slices of a newer write) */
	char vh[64];
	snprintf(vh, sizeof(vh), "%s: %llu", TGT_CMAP_VERSION, (unsigned long long)cmap_v);
	struct ask *a = ask_all(top, n, "GET", "?meta=true", NULL, vh, bck, blen, obj, olen);
	if (deleted_at(t, a, n, bck, blen, obj, olen) > (int64_t)me.version) { /* rule 11: not moved */
		ask_free(a, n);
		return drop_slice(t, sb, obj, olen, cmap_v, &me) ? EC_SLICE_DROPPED : EC_SLICE_KEPT;
	}
	bool cand[NSL] = {false}, conf[NSL] = {false}, ok[NSL] = {false};
	ec_meta_t am[NSL];
	const ec_meta_t *newest = NULL;
	for (size_t i = 0; i < n; i++) {
		cand[i] = a[i].status == 404;
		if (a[i].status != 200 || ec_meta_parse(a[i].resp.ptr, a[i].resp.len, &am[i]) != AIS_OK)
			continue;
		ok[i] = true;
		sv_t hv = httpc_header_find(sv_of(&a[i].hdrs), EC_HOLDER_HDR);
		conf[i] = hv.ptr && sv_eqstr(hv, "true");
		if (ec_same_write(&am[i], &me)) {
			cand[i] = am[i].idx == me.idx; /* it answers a move with 200 */
			had |= cand[i] && conf[i];
		} else if (am[i].version > me.version) {
			if (conf[i] && (!newest || am[i].version > newest->version))
				newest = &am[i];
		} else {
			cand[i] = true; /* an older write's slice: ours replaces it */
		}
	}
	if (newest && !had) {
		bool seen[NSL] = {false};
		unsigned cnt = 0;
		for (size_t i = 0; i < n; i++)
			if (ok[i] && conf[i] && ec_same_write(&am[i], newest) && !seen[am[i].idx])
				seen[am[i].idx] = true, cnt++;
		had = cnt >= newest->d; /* ours is of an overwritten version */
	}
	ask_free(a, n);
	if (!had && stale) {
		buf_addstr(msg, "a slice of the bucket's former erasure-coding layout: kept until the new one is complete");
		return AIS_ERR;
	}
	if (!had) { /* rule 6: to the first holder without a slice of this write */
		int fd;
		store_meta_t om;
		if (store_open_obj(t->store, sb, strlen(sb), obj, olen, &fd, &om) != AIS_OK)
			return EC_SLICE_KEPT;
		for (size_t i = 0; i < n && !moved; i++)
			if (cand[i])
				moved = move_to(top[i], fd, &om, &me, cmap_v, bck, blen, obj, olen, msg);
		close(fd);
		if (!moved) {
			if (!msg->len)
				buf_addstr(msg, "every holder has another slice of it");
			return AIS_ERR;
		}
		*bytes = om.size;
		count(EC_M_MOVED, 1);
	}
	if (!drop_slice(t, sb, obj, olen, cmap_v, &me))
		return moved ? EC_SLICE_MOVED : EC_SLICE_KEPT;
	return moved ? EC_SLICE_MOVED : EC_SLICE_DROPPED;
}
