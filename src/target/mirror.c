/*
 * mirror.c - the blocking copy primitives under the object layer (ol.c,
 * olput.c): the extra copies of a replicated PUT, fetching a missing or damaged copy from another holder,
 * and deleting every copy.
 *
 * Guarantees:
 *  1. Requests between targets carry the "Ais-Intra" header and are served
 *     where they land, never redirected, replicated or fetched for.
 *  2. A replicated PUT is acknowledged only when mirror.write_quorum copies
 *     (default: all) are durable: the local write is sealed (checksummed and
 *     fsynced, not yet visible), sent to the other holders in parallel from
 *     its temp file with its checksum (each receiver verifies it), and
 *     committed only when enough of them answered 200. Otherwise the copies
 *     that did land are deleted and the local write is dropped: the client
 *     gets a 503 and no copy of the failed write stays visible.
 *  3. A fetch tries the other holders under the current map, then the
 *     holders under the previous map (objects a rebalance has not moved
 *     yet), then every other target, and keeps the first copy whose bytes
 *     match the checksum its sender declares. A copy that does not match is
 *     never stored. When this target has no space for the copy the fetch
 *     stops with ENOSPC (a read answers 507, naming the target that has it).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/authz.h"
#include "aisd/httpc.h"
#include "aisd/jobs.h"
#include "aisd/log.h"
#include "aisd/ol.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "target_int.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "aisd/banned.h"

int64_t tgt_stamp_parse(sv_t h)
{
	uint64_t v;
	return h.ptr && num_parse_u64(h.ptr, h.len, 1, INT64_MAX, &v) == AIS_OK ? (int64_t)v : 0;
}

void tgt_url_obj(buf_t *out, const char *base, const char *bck, size_t blen, const char *obj, size_t olen)
{
	buf_addf(out, "%s/v1/objects/%.*s/", base, (int)blen, bck);
	buf_add_pct(out, (sv_t){obj, olen}, true);
}

size_t tgt_bucket_copies(const bmd_t *b, const char *bck, size_t blen)
{
	const bmd_bucket_t *bk = b ? bmd_get(b, bck, blen) : NULL;
	return bk ? place_copies(&bk->props) : 1;
}

enum tgt_stance tgt_stance(target_t *t, const ol_where_t *w, const char *bck, size_t blen, const char *obj,
			   size_t olen, uint64_t *cmap_v)
{
	const cmap_t *m;
	const bmd_t *b;
	place_t p;
	if (!t->base.cl)
		return TGT_HOLDER;
	cluster_read_lock(t->base.cl, &m, &b);
	uint64_t v = m ? cmap_version(m) : 0, bv = b ? bmd_version(b) : 0;
	place_object(m, b, bck, blen, obj, olen, cluster_self(t->base.cl)->id, &p);
	cluster_read_unlock(t->base.cl);
	if (cmap_v)
		*cmap_v = v;
	if (p.self >= 0)
		return TGT_HOLDER;
	bool behind = w->cmap_version > v || (w->cmap_version == v && w->bmd_version > bv);
	return behind ? TGT_BEHIND : TGT_STRAY;
}

void tgt_placed_check(target_t *t, const ol_where_t *w, const char *bck, size_t blen, const char *obj,
		      size_t olen)
{
	const cmap_t *m;
	const bmd_t *b;
	if (!t->base.cl || !t->reb)
		return;
	if (w->cluster) { /* placed here under an older map or bucket metadata? */
		cluster_read_lock(t->base.cl, &m, &b);
		bool same = (m ? cmap_version(m) : 0) == w->cmap_version && (b ? bmd_version(b) : 0) == w->bmd_version;
		cluster_read_unlock(t->base.cl);
		if (same)
			return;
	} else if (tgt_stance(t, w, bck, blen, obj, olen, NULL) != TGT_STRAY) {
		return; /* a holder, or this map is behind the sender's */
	}
	/* the rebalance may have walked past the name already */
	reb_enqueue(t->reb, bck, blen, obj, olen);
}

/* --- replicated PUT ----------------------------------------------------------- */

/* The headers of an intra-cluster copy of an object described by m. */
#define COPY_HDRS 8
static void copy_headers(const char *why, uint64_t cmap_v, uint64_t bmd_v, const store_meta_t *m,
			 char hv[COPY_HDRS][STORE_CUSTOM_MAX + 64], const char *hp[COPY_HDRS + 1])
{
	int n = 0;
	snprintf(hv[n], sizeof(hv[n]), "%s: %s", TGT_INTRA, why);
	hp[n] = hv[n], n++;
	snprintf(hv[n], sizeof(hv[n]), "%s: %llu", TGT_CMAP_VERSION, (unsigned long long)cmap_v);
	hp[n] = hv[n], n++;
	snprintf(hv[n], sizeof(hv[n]), "%s: %llu", TGT_BMD_VERSION, (unsigned long long)bmd_v);
	hp[n] = hv[n], n++;
	snprintf(hv[n], sizeof(hv[n]), "Ais-Checksum-Type: %s", store_cksum_name(m->cksum_type));
	hp[n] = hv[n], n++;
	if (m->cksum[0]) {
		snprintf(hv[n], sizeof(hv[n]), "Ais-Checksum-Value: %s", m->cksum);
		hp[n] = hv[n], n++;
	}
	if (m->custom[0]) {
		snprintf(hv[n], sizeof(hv[n]), "Ais-Custom-Md: %s", m->custom);
		hp[n] = hv[n], n++;
	}
	if (store_md_time(m) > 0) {
		snprintf(hv[n], sizeof(hv[n]), "%s: %lld", TGT_MD_NS, (long long)store_md_time(m));
		hp[n] = hv[n], n++;
	}
	if (store_stamp(m) > 0) { /* the copy keeps the stamp of the write it is of */
		snprintf(hv[n], sizeof(hv[n]), "%s: %lld", TGT_STAMP, (long long)store_stamp(m));
		hp[n] = hv[n], n++;
	}
	hp[n] = NULL;
}

/* Time a copy of size bytes may take: 60 s plus 1 s per 16 MiB. */
static uint64_t copy_timeout_ms(uint64_t size)
{
	return 60000 + size / (16 << 10);
}

/* One copy of a sealed write on its way to a holder (a thread of its own
 * when there are several). */
struct put1 {
	const char *url;
	const char *const *hp;
	int fd;
	uint64_t size;
	int status;
	buf_t *msg;
	pthread_t th;
	bool started;
};

static void *put1_run(void *arg)
{
	struct put1 *p = arg;
	bool sent = false;
	buf_t rh = BUF_INIT;
	if (!xs_supports(p->url))
		buf_addf(p->msg, "%s: cannot be reached (TLS settings: see the log)", p->url);
	else if (xs_put_file(p->url, p->hp, p->fd, p->size, copy_timeout_ms(p->size), &p->status, &sent, &rh,
			     p->msg) != AIS_OK)
		p->status = 0;
	buf_free(&rh);
	return NULL;
}

/* Sends size bytes of fd to every one of urls at once over the transport
 * (sendfile, xsync.c); status[i] 0 when no answer came (msgs[i] says
 * why, or holds the start of an error answer). Returns how many answered
 * 200. */
static size_t put_copies(const char *const *urls, size_t n, const char *const *hp, int fd, uint64_t size,
			 int *status, buf_t *msgs)
{
	struct put1 *p = xcalloc(n, sizeof(*p));
	size_t ok = 0;
	for (size_t i = 0; i < n; i++) {
		p[i] = (struct put1){.url = urls[i], .hp = hp, .fd = fd, .size = size, .msg = &msgs[i]};
		if (i + 1 < n) /* (the last one goes from this thread) */
			p[i].started = pthread_create(&p[i].th, NULL, put1_run, &p[i]) == 0;
		if (!p[i].started)
			put1_run(&p[i]);
	}
	for (size_t i = 0; i < n; i++) {
		if (p[i].started)
			pthread_join(p[i].th, NULL);
		status[i] = p[i].status;
		ok += p[i].status == 200;
	}
	free(p);
	return ok;
}

/* DELETE of bck/obj on each url (intra, reason why: only that copy; a
 * client's delete's stamp, 0: none); st (may be NULL): each one's answer
 * (0: none). Errors are logged. Returns how many had a copy. */
static size_t delete_on(const char *why, const char *const *bases, size_t n, const char *bck, size_t blen,
			const char *obj, size_t olen, int64_t stamp, int *st)
{
	char hv[64], sv[64];
	const char *hp[] = {hv, stamp ? sv : NULL, NULL};
	buf_t url = BUF_INIT, resp = BUF_INIT;
	size_t gone = 0;
	snprintf(hv, sizeof(hv), "%s: %s", TGT_INTRA, why);
	snprintf(sv, sizeof(sv), "%s: %lld", TGT_STAMP, (long long)stamp);
	for (size_t i = 0; i < n; i++) {
		int status = 0;
		buf_reset(&url);
		tgt_url_obj(&url, bases[i], bck, blen, obj, olen);
		if (httpc_sync("DELETE", url.ptr, hp, NULL, 0, 10000, &resp, &status) != AIS_OK)
			status = 0;
		if (st)
			st[i] = status;
		if (status == 200 || status == 404)
			gone += status == 200;
		else
			log_warnx("deleting the copy of %.*s/%.*s on %s: %s", (int)blen, bck,
			          (int)MIN(olen, 200), obj, bases[i],
			          status     ? "refused"
			          : resp.ptr ? resp.ptr
			                     : "no answer");
	}
	buf_free(&url);
	buf_free(&resp);
	return gone;
}

int tgt_replicate(target_t *t, store_writer_t *sw, const char *bck, size_t blen, const char *obj, size_t olen,
                  const ol_where_t *w, enum store_cksum want_type, const char *want_hex, const char *custom,
                  buf_t *msg)
{
	store_meta_t m;
	char hv[COPY_HDRS][STORE_CUSTOM_MAX + 64];
	const char *hp[COPY_HDRS + 1];
	size_t n = w->n - 1, quorum = t->conf->write_quorum ? MIN(t->conf->write_quorum, w->n) : w->n;
	int fd;

	if (store_writer_seal(sw, want_type, want_hex, &m) != AIS_OK)
		return AIS_ERR;
	if (custom)
		snprintf(m.custom, sizeof(m.custom), "%s", custom);
	if ((fd = store_writer_open_tmp(sw)) < 0)
		return AIS_ERR;
	const char **urls = xcalloc(n, sizeof(*urls));
	buf_t *ub = xcalloc(n, sizeof(*ub)), *msgs = xcalloc(n, sizeof(*msgs));
	int *status = xcalloc(n, sizeof(*status));
	for (size_t i = 0; i < n; i++) {
		tgt_url_obj(&ub[i], w->urls[i + 1], bck, blen, obj, olen);
		urls[i] = ub[i].ptr;
	}
	copy_headers("replica", w->cmap_version, w->bmd_version, &m, hv, hp);
	size_t ok = put_copies(urls, n, hp, fd, m.size, status, msgs);
	close(fd);
	int rc = AIS_OK;
	if (1 + ok < quorum) {
		buf_addf(msg, "%zu of %zu copies durable, write quorum %zu", 1 + ok, w->n, quorum);
		const char **landed = xcalloc(n, sizeof(*landed));
		size_t nl = 0;
		for (size_t i = 0; i < n; i++) {
			if (status[i] == 200)
				landed[nl++] = w->urls[i + 1];
			else
				buf_addf(msg, "; %s: %s%.200s", w->urls[i + 1],
				         status[i] ? "HTTP error " : "", msgs[i].ptr ? msgs[i].ptr : "");
		}
		delete_on("unreplicate", landed, nl, bck, blen, obj, olen, 0, NULL); /* rule 2: no copy of a failed write stays */
		free(landed);
		errno = EAGAIN;
		rc = AIS_ERR;
	} else if (ok < n) {
		for (size_t i = 0; i < n; i++)
			if (status[i] != 200)
				log_warnx("PUT %.*s/%.*s: copy on %s failed (the quorum was met; a rebalance "
				          "restores it): %.200s",
				          (int)blen, bck, (int)MIN(olen, 200), obj, w->urls[i + 1],
				          msgs[i].ptr ? msgs[i].ptr : "");
	}
	for (size_t i = 0; i < n; i++) {
		buf_free(&ub[i]);
		buf_free(&msgs[i]);
	}
	free(urls);
	free(ub);
	free(msgs);
	free(status);
	return rc;
}

/* --- replicas streamed while the body arrives ---------------------------------- */

struct tgt_repl {
	size_t n;             /* other holders: w->urls[1..n] */
	xs_stream_t **s;      /* NULL: could not be reached */
	buf_t *msg;           /* per holder: why it failed */
};

tgt_repl_t *tgt_repl_open(target_t *t, const ol_where_t *w, const char *bck, size_t blen, const char *obj,
			  size_t olen, int64_t stamp)
{
	store_bucket_t b;
	char ct[64], cv[64], bv[64], st[64];
	const char *hp[] = {TGT_INTRA ": replica", ct, cv, bv, st, "Trailer: Ais-Checksum-Value, Ais-Custom-Md, " TGT_STAMP, NULL};
	if (!w || !w->cluster || w->n < 2)
		return NULL;
	snprintf(st, sizeof(st), "%s: %lld", TGT_STAMP, (long long)stamp);
	snprintf(cv, sizeof(cv), "%s: %llu", TGT_CMAP_VERSION, (unsigned long long)w->cmap_version);
	snprintf(bv, sizeof(bv), "%s: %llu", TGT_BMD_VERSION, (unsigned long long)w->bmd_version);
	const bmd_t *bm;
	cluster_read_lock(t->base.cl, NULL, &bm);
	const bmd_bucket_t *bk = bm ? bmd_get(bm, bck, blen) : NULL;
	bool ec = bk && bk->props.ec_enabled;
	cluster_read_unlock(t->base.cl);
	if (ec)
		return NULL; /* slices or copies: decided by the size, at the commit (ec.c) */
	if (store_bucket_get(t->store, bck, blen, &b) != AIS_OK)
		return NULL;
	snprintf(ct, sizeof(ct), "Ais-Checksum-Type: %s", store_cksum_name(b.cksum_type));
	tgt_repl_t *r = xcalloc(1, sizeof(*r));
	r->n = w->n - 1;
	r->s = xcalloc(r->n, sizeof(*r->s));
	r->msg = xcalloc(r->n, sizeof(*r->msg));
	buf_t url = BUF_INIT;
	for (size_t i = 0; i < r->n; i++) {
		buf_reset(&url);
		tgt_url_obj(&url, w->urls[i + 1], bck, blen, obj, olen);
		r->s[i] = xs_stream_open(url.ptr, hp, copy_timeout_ms(0), &r->msg[i]);
	}
	buf_free(&url);
	return r;
}

void tgt_repl_write(tgt_repl_t *r, const void *p, size_t n)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->s[i])
			xs_stream_write(r->s[i], p, n);
}

int tgt_repl_commit(target_t *t, tgt_repl_t *r, store_writer_t *sw, const ol_where_t *w, const char *bck,
		    size_t blen, const char *obj, size_t olen, enum store_cksum want_type, const char *want_hex,
		    const char *custom, buf_t *msg)
{
	store_meta_t m;
	char cv[STORE_CKSUM_HEX_MAX + 32], md[STORE_CUSTOM_MAX + 32], st[64];
	const char *tr[4] = {NULL, NULL, NULL, NULL};
	size_t nt = 0, ok = 0, quorum = t->conf->write_quorum ? MIN(t->conf->write_quorum, w->n) : w->n;
	int rc = AIS_OK;

	if (store_writer_seal(sw, want_type, want_hex, &m) != AIS_OK)
		return AIS_ERR; /* (the streams are cut when freed: nothing lands) */
	if (m.cksum[0]) {
		snprintf(cv, sizeof(cv), "Ais-Checksum-Value: %s", m.cksum);
		tr[nt++] = cv;
	}
	if (custom && *custom) {
		snprintf(md, sizeof(md), "Ais-Custom-Md: %s", custom);
		tr[nt++] = md;
	}
	snprintf(st, sizeof(st), "%s: %lld", TGT_STAMP, (long long)m.stamp); /* olput.c rule 9 */
	tr[nt++] = st;
	int *status = xcalloc(r->n, sizeof(*status));
	buf_t rh = BUF_INIT;
	for (size_t i = 0; i < r->n; i++) {
		if (r->s[i] && xs_stream_finish(r->s[i], tr, &status[i], &rh, &r->msg[i]) == AIS_OK && status[i] == 200)
			ok++;
		else
			status[i] = status[i] == 200 ? 0 : status[i];
	}
	buf_free(&rh);
	if (1 + ok < quorum) {
		buf_addf(msg, "%zu of %zu copies durable, write quorum %zu", 1 + ok, w->n, quorum);
		const char **landed = xcalloc(r->n, sizeof(*landed));
		size_t nl = 0;
		for (size_t i = 0; i < r->n; i++) {
			if (status[i] == 200)
				landed[nl++] = w->urls[i + 1];
			else
				buf_addf(msg, "; %s: %.200s", w->urls[i + 1], r->msg[i].ptr ? r->msg[i].ptr : "no answer");
		}
		delete_on("unreplicate", landed, nl, bck, blen, obj, olen, 0, NULL); /* rule 2: no copy of a failed write stays */
		free(landed);
		errno = EAGAIN;
		rc = AIS_ERR;
	} else {
		for (size_t i = 0; i < r->n; i++)
			if (status[i] != 200)
				log_warnx("PUT %.*s/%.*s: copy on %s failed (the quorum was met; a rebalance restores it): %.200s",
					  (int)blen, bck, (int)MIN(olen, 200), obj, w->urls[i + 1],
					  r->msg[i].ptr ? r->msg[i].ptr : "");
	}
	free(status);
	return rc;
}

void tgt_repl_free(tgt_repl_t *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		xs_stream_free(r->s[i]);
		buf_free(&r->msg[i]);
	}
	free(r->s);
	free(r->msg);
	free(r);
}

void tgt_unreplicate(const ol_where_t *w, const char *bck, size_t blen, const char *obj, size_t olen)
{
	const char **bases = xcalloc(w->n, sizeof(*bases));
	for (size_t i = 1; i < w->n; i++)
		bases[i - 1] = w->urls[i];
	delete_on("unreplicate", bases, w->n - 1, bck, blen, obj, olen, 0, NULL);
	free(bases);
}

/* --- where else copies may be ------------------------------------------------ */

/* Appends the intra URLs of every target that may hold a copy, in the order
 * of rule 3, without self and without repeats. Returns how many. */
static size_t sources(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen,
                      char (**out)[CMAP_URL_MAX + 1])
{
	cluster_t *cl = t->base.cl;
	const cmap_t *m, *prev;
	const bmd_t *b;
	place_t p;
	buf_t uname = BUF_INIT;
	size_t n = 0, cap;
	const char *self = cluster_self(cl)->id;

	buf_add(&uname, bck, blen);
	buf_addch(&uname, '/');
	buf_add(&uname, obj, olen);
	cluster_read_lock_prev(cl, &m, &prev, &b);
	cap = (m ? cmap_size(m) : 0) + (prev ? cmap_size(prev) : 0) + 1;
	char(*urls)[CMAP_URL_MAX + 1] = xcalloc(cap, sizeof(*urls));
	const cmap_t *maps[2] = {m, prev};
	size_t k = tgt_bucket_copies(b, bck, blen);
	for (int pass = 0; pass < 3; pass++) {
		const cmap_t *mm = maps[pass == 1];
		size_t cnt;
		if (!mm)
			continue;
		if (pass < 2) {
			place_of(mm, uname.ptr, uname.len, k, NULL, &p);
			cnt = p.n;
		} else {
			cnt = cmap_size(mm);
		}
		for (size_t i = 0; i < cnt; i++) {
			const cmap_node_t *nd = pass < 2 ? p.node[i] : cmap_node(mm, i);
			if (nd->role != CMAP_TARGET || !strcmp(nd->id, self))
				continue;
			size_t j;
			for (j = 0; j < n && strcmp(urls[j], nd->intra_url); j++)
				;
			if (j == n && n < cap)
				snprintf(urls[n++], sizeof(urls[0]), "%s", nd->intra_url);
		}
	}
	cluster_read_unlock(cl);
	buf_free(&uname);
	*out = urls;
	return n;
}

struct sink {
	store_writer_t *w;
	int err;
};

static int sink_write(void *arg, const char *p, size_t n)
{
	struct sink *s = arg;
	if (store_writer_write(s->w, p, n) != AIS_OK) {
		s->err = errno ? errno : EIO;
		return AIS_ERR;
	}
	return AIS_OK;
}

/* GETs one copy from base into the store. AIS_OK, or AIS_ERR with errno
 * ENOENT (none there) or another error. */
static int fetch_from(target_t *t, const char *base, const char *bck, size_t blen, const char *obj,
                      size_t olen, buf_t *msg)
{
	char hv[64], want[STORE_CKSUM_HEX_MAX] = "", custom[STORE_CUSTOM_MAX] = "";
	const char *hp[] = {hv, NULL};
	buf_t url = BUF_INIT, hdrs = BUF_INIT, emsg = BUF_INIT;
	struct sink s = {0};
	enum store_cksum type = CKSUM_NONE;
	int status = 0, rc = AIS_ERR;

	snprintf(hv, sizeof(hv), "%s: fetch", TGT_INTRA);
	tgt_url_obj(&url, base, bck, blen, obj, olen);
	if (store_writer_begin(t->store, bck, blen, obj, olen, &s.w) != AIS_OK)
		goto out;
	if (xs_get_to(url.ptr, hp, 60000, sink_write, &s, &hdrs, &status, &emsg) != AIS_OK ||
	    status != 200) {
		if (s.err == ENOSPC) { /* the copy is there; this target has no room for it */
			buf_addf(msg, "%s has a copy; this target has no space to store it; ", base);
			errno = ENOSPC;
			goto out;
		}
		errno = status == 404 ? ENOENT : status == 0 ? EHOSTDOWN : EIO; /* (0: no answer) */
		if (status != 404)
			buf_addf(msg, "%s: %s; ", base, emsg.ptr ? emsg.ptr : "error");
		goto out;
	}
	sv_t ct = httpc_header_find(sv_of(&hdrs), "Ais-Checksum-Type"),
	     cv = httpc_header_find(sv_of(&hdrs), "Ais-Checksum-Value");
	sv_t md = httpc_header_find(sv_of(&hdrs), "Ais-Custom-Md");
	/* the stamp of the write it is of (a sender of before stamps: its mtime) */
	int64_t stamp = tgt_stamp_parse(httpc_header_find(sv_of(&hdrs), TGT_STAMP));
	if (!stamp)
		stamp = tgt_stamp_parse(httpc_header_find(sv_of(&hdrs), "Ais-Mtime-Ns"));
	if (stamp)
		store_writer_origin(s.w, stamp); /* a delete since that write wins */
	sv_t mdt = httpc_header_find(sv_of(&hdrs), TGT_MD_NS);
	uint64_t md_ns = 0;
	if (mdt.ptr && num_parse_u64(mdt.ptr, mdt.len, 1, INT64_MAX, &md_ns) == AIS_OK)
		store_writer_md_time(s.w, (int64_t)md_ns); /* when its metadata was set */
	if (ct.ptr && store_cksum_parse(ct.ptr, ct.len, &type) != AIS_OK)
		type = CKSUM_NONE;
	if (type != CKSUM_NONE && cv.ptr && cv.len < sizeof(want))
		memcpy(want, cv.ptr, cv.len);
	else
		type = CKSUM_NONE;
	if (md.ptr && md.len < sizeof(custom))
		memcpy(custom, md.ptr, md.len);
	/* the sender's type is the bucket's, which the writer computes */
	if (store_writer_commit(s.w, type, want, custom[0] ? custom : NULL, NULL) != AIS_OK) {
		if (errno == ESTALE) { /* a copy a client's delete missed (ol.h invariant 2) */
			log_info("%.*s/%.*s on %s: deleted since that copy was written: not fetched", (int)blen, bck,
				 (int)MIN(olen, 200), obj, base);
			errno = ENOENT;
			goto out;
		}
		if (errno == EBADMSG)
			log_warnx("the copy of %.*s/%.*s on %s does not match its checksum: not stored",
			          (int)blen, bck, (int)MIN(olen, 200), obj, base);
		buf_addf(msg, "%s: %s; ", base, errno == EBADMSG ? "checksum mismatch" : strerror(errno));
		goto out;
	}
	rc = AIS_OK;
out:
	store_writer_free(s.w);
	buf_free(&url);
	buf_free(&hdrs);
	buf_free(&emsg);
	return rc;
}

int tgt_fetch(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen, buf_t *msg)
{
	char(*urls)[CMAP_URL_MAX + 1] = NULL;
	size_t n = t->base.cl ? sources(t, bck, blen, obj, olen, &urls) : 0, silent = 0, k = 1;
	int rc = AIS_ERR, e = ENOENT;
	bool bad = false; /* a source answered with an error or a bad copy */
	if (t->base.cl) {
		const bmd_t *b;
		cluster_read_lock(t->base.cl, NULL, &b);
		k = tgt_bucket_copies(b, bck, blen);
		cluster_read_unlock(t->base.cl);
	}
	for (size_t i = 0; i < n && rc != AIS_OK && e != ENOSPC; i++) { /* no space: no other source helps */
		rc = fetch_from(t, urls[i], bck, blen, obj, olen, msg);
		if (rc != AIS_OK && errno != ENOENT) {
			e = errno == ENOSPC ? ENOSPC : EIO;
			silent += errno == EHOSTDOWN;
			bad |= errno != EHOSTDOWN;
		}
	}
	free(urls);
	/* some targets did not answer, none had a copy newer than a client's
	 * delete recorded here: deleted, not unreachable */
	if (rc != AIS_OK && e == EIO && ol_deleted(t, (sv_t){bck, blen}, (sv_t){obj, olen}, INT64_MIN + 1))
		e = ENOENT;
	/* every target was asked; an object has its write quorum of copies on
	 * distinct targets (a rebalance drops one only once its new holder has
	 * it): fewer silent targets than that, and no copy anywhere else, is
	 * no object (not a target that may hold it being down) */
	size_t quorum = t->conf->write_quorum && t->conf->write_quorum < k ? t->conf->write_quorum : k;
	if (rc != AIS_OK && e == EIO && !bad && silent < quorum)
		e = ENOENT;
	if (rc == AIS_OK)
		log_info("restored %.*s/%.*s from another target", (int)blen, bck, (int)MIN(olen, 200), obj);
	else
		errno = e;
	return rc;
}

size_t tgt_delete_elsewhere(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen,
			    int64_t stamp, buf_t *missed, bool *kept)
{
	char(*urls)[CMAP_URL_MAX + 1] = NULL;
	cmap_node_t *hold = xcalloc(HRW_TOP_MAX, sizeof(*hold));
	size_t n = sources(t, bck, blen, obj, olen, &urls);
	size_t nh = tgt_lost_holders(t, bck, blen, obj, olen, hold, HRW_TOP_MAX), nb = n;
	const char **bases = xcalloc(n + nh + 1, sizeof(*bases));
	int *st = xcalloc(n + nh + 1, sizeof(*st));
	/* every target that may hold one: stray copies go too, and the holders
	 * under the map with the lost targets back (lost.c) */
	for (size_t i = 0; i < n; i++)
		bases[i] = urls[i];
	const char *self = cluster_self(t->base.cl)->id;
	for (size_t i = 0; i < nh; i++) {
		size_t j;
		for (j = 0; j < nb && strcmp(bases[j], hold[i].intra_url); j++)
			;
		if (j == nb && strcmp(hold[i].id, self) && hold[i].intra_url[0]) /* (no address: missed) */
			bases[nb++] = hold[i].intra_url;
	}
	size_t gone = delete_on(TGT_DELETE, bases, nb, bck, blen, obj, olen, stamp, st);
	*kept = false;
	for (size_t i = 0; i < nh; i++) { /* which holders took it (and keep its tombstone) */
		size_t j;
		for (j = 0; j < nb && strcmp(bases[j], hold[i].intra_url); j++)
			;
		if (!strcmp(hold[i].id, self) || (hold[i].intra_url[0] && j < nb && (st[j] == 200 || st[j] == 404)))
			*kept = true;
		else
			buf_addf(missed, "%s%s", missed->len ? ", " : "", hold[i].id);
	}
	free(st);
	free(bases);
	free(hold);
	free(urls);
	return gone;
}

int tgt_custom_elsewhere(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen,
			 const char *cksum, const char *custom, int64_t md_ns, buf_t *msg)
{
	cluster_where_t w;
	char holders[HRW_TOP_MAX][CMAP_URL_MAX + 1];
	char(*urls)[CMAP_URL_MAX + 1] = NULL;
	char hv[4][STORE_CUSTOM_MAX + 64];
	const char *hp[] = {hv[0], hv[1], hv[2], hv[3], NULL};
	buf_t url = BUF_INIT, resp = BUF_INIT;
	int rc = AIS_OK;

	cluster_where(t->base.cl, (sv_t){bck, blen}, (sv_t){obj, olen}, true, &w, holders, HRW_TOP_MAX);
	size_t n = sources(t, bck, blen, obj, olen, &urls);
	snprintf(hv[0], sizeof(hv[0]), "%s: custom", TGT_INTRA);
	snprintf(hv[1], sizeof(hv[1]), "%s: %s", TGT_HAVE_CKSUM, cksum[0] ? cksum : "-");
	snprintf(hv[2], sizeof(hv[2]), "Ais-Custom-Md: %s", custom);
	snprintf(hv[3], sizeof(hv[3]), "%s: %lld", TGT_MD_NS, (long long)md_ns);
	for (size_t i = 0; i < n; i++) {
		int status = 0;
		buf_reset(&url);
		buf_reset(&resp);
		tgt_url_obj(&url, urls[i], bck, blen, obj, olen);
		if (httpc_sync("PATCH", url.ptr, hp, NULL, 0, 10000, &resp, &status) == AIS_OK &&
		    (status == 200 || status == 404 || status == 409))
			continue;
		bool holder = false;
		for (size_t k = 0; k < w.n && k < HRW_TOP_MAX; k++)
			holder |= !strcmp(holders[k], urls[i]);
		if (holder) {
			buf_addf(msg, "%s%s: %s%.200s", rc == AIS_OK ? "" : "; ", urls[i], status ? "HTTP error: " : "",
				 resp.ptr ? resp.ptr : "no answer");
			rc = AIS_ERR;
		} else {
			log_warnx("metadata of %.*s/%.*s on %s: %s", (int)blen, bck, (int)MIN(olen, 200), obj, urls[i],
				  status ? "refused" : "no answer");
		}
	}
	buf_free(&url);
	buf_free(&resp);
	free(urls);
	return rc;
}

bool tgt_md_take_newer(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen,
		       const store_meta_t *m, sv_t cksum, sv_t custom, sv_t md)
{
	uint64_t when;
	char c[STORE_CUSTOM_MAX];
	if (!md.ptr || num_parse_u64(md.ptr, md.len, 1, INT64_MAX, &when) != AIS_OK || (int64_t)when <= store_md_time(m) ||
	    !m->cksum[0] || !cksum.ptr || !sv_eqstr(cksum, m->cksum) || custom.len >= sizeof(c))
		return false;
	if (!custom.ptr)
		custom = (sv_t){"", 0};
	if (sv_eqstr(custom, m->custom))
		return false; /* the same metadata: nothing to write */
	memcpy(c, custom.ptr, custom.len);
	c[custom.len] = '\0';
	if (store_set_custom(t->store, bck, blen, obj, olen, m->version, c, (int64_t)when) != AIS_OK) {
		if (errno != ESTALE && errno != ENOENT)
			log_warn("%.*s/%.*s: taking the metadata set later on another copy", (int)blen, bck,
				 (int)MIN(olen, 200), obj);
		return false;
	}
	log_info("%.*s/%.*s: metadata set while this copy was away taken from another copy", (int)blen, bck,
		 (int)MIN(olen, 200), obj);
	return true;
}

int tgt_send_copy(target_t *t, const char *base, const char *bck, size_t blen, const char *obj, size_t olen,
                  const char *why, uint64_t cmap_v, uint64_t bmd_v, bool cond, uint64_t *bytes, buf_t *msg)
{
	store_meta_t m;
	char hv[COPY_HDRS + 2][STORE_CUSTOM_MAX + 64];
	const char *hp[COPY_HDRS + 3];
	int fd, status = 0;
	bool sent = true;
	buf_t url = BUF_INIT, emsg = BUF_INIT, rh = BUF_INIT;

	if (store_open_obj(t->store, bck, blen, obj, olen, &fd, &m) != AIS_OK)
		return AIS_ERR;
	copy_headers(why, cmap_v, bmd_v, &m, hv, hp);
	size_t nh = 0;
	while (hp[nh])
		nh++;
	if (cond) { /* the receiver answers at once when it has this version or a newer one */
		snprintf(hv[COPY_HDRS], sizeof(hv[0]), "%s: %s", TGT_HAVE_CKSUM, m.cksum[0] ? m.cksum : "-");
		snprintf(hv[COPY_HDRS + 1], sizeof(hv[0]), "%s: %lld", TGT_HAVE_MTIME, (long long)store_stamp(&m));
		hp[nh++] = hv[COPY_HDRS];
		hp[nh++] = hv[COPY_HDRS + 1];
		hp[nh] = NULL;
	}
	tgt_url_obj(&url, base, bck, blen, obj, olen);
	/* sendfile (or SSL_sendfile), after the receiver's 100 */
	if (xs_put_file(url.ptr, hp, fd, m.size, copy_timeout_ms(m.size), &status, &sent, &rh, &emsg) != AIS_OK)
		status = 0;
	close(fd);
	int rc = status == 200 ? AIS_OK : AIS_ERR;
	if (rc != AIS_OK) {
		buf_addf(msg, "%s: %s%.200s", base, status ? "HTTP error: " : "", emsg.ptr ? emsg.ptr : "");
		errno = EIO;
	} else if (cond && sv_eqstr(httpc_header_find(sv_of(&rh), TGT_HAD), TGT_HAD_DELETED)) {
		rc = TGT_GONE;
	} else if (cond && (!sent || httpc_header_find(sv_of(&rh), TGT_HAD).ptr)) {
		rc = AIS_DONE;
		/* it has these bytes: and maybe an ACL set while this target was away */
		tgt_md_take_newer(t, bck, blen, obj, olen, &m, httpc_header_find(sv_of(&rh), "Ais-Checksum-Value"),
				  httpc_header_find(sv_of(&rh), "Ais-Custom-Md"), httpc_header_find(sv_of(&rh), TGT_MD_NS));
	} else if (bytes) {
		*bytes = m.size;
	}
	buf_free(&url);
	buf_free(&emsg);
	buf_free(&rh);
	return rc;
}
