/*
 * buckets.c - the bucket API on a target, AIStore's v1 shapes:
 *   GET    /v1/buckets/              list buckets
 *   POST   /v1/buckets/B  {"action":"create-bck"[,"value":{props}]}
 *   DELETE /v1/buckets/B  {"action":"destroy-bck"} (or no body)
 *   GET    /v1/buckets/B  {"action":"list","value":{prefix, start_after,
 *          continuation_token, pagesize, props}} (or the same as query
 *          parameters) -> {"entries":[...],"continuation_token":"..."}
 *   HEAD   /v1/buckets/B  200 with Ais-Bucket-Props, or 404
 * Bodies are small JSON documents, buffered by the dispatcher. Store work
 * (LevelDB writes and scans) runs on the I/O pool.
 *
 * The "location" property names this target (id, host, public URL) on
 * every entry it lists: a target lists only the copies it holds, so the
 * gateway's union of the targets' pages says where every copy is at the
 * time each target read its page (see gateway.c).
 */
#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ec_int.h"
#include "ol_int.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "target_int.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define LIST_PAGE_DEFAULT 1000
#define LIST_PAGE_MAX 10000

/* P_ALL is the default; custom (the object's custom metadata) and mtime (ns
 * since the epoch, an integer) only when asked for (S3 listings do). */
enum {
	P_NAME = 1, P_SIZE = 2, P_CKSUM = 4, P_ATIME = 8, P_VERSION = 16, P_ALL = 31,
	P_CUSTOM = 32, P_MTIME = 64, P_LOCATION = 128
};

struct bop {
	target_t *t;
	sv_t bck;
	int err;
	enum store_cksum cksum;
	/* list */
	sv_t prefix, start_after;
	size_t pagesize;
	unsigned props;
	bool arch;         /* flags & LS_ARCH_DIR: shards' members too */
	bool versions;     /* ?versions=true: kept versions too (olver.h) */
	buf_t out, members;
	buf_t loc;         /* P_LOCATION: ',"location":[{this target}]' */
	size_t n;
	bool more;
	char *last;
	size_t last_len;
	/* a remote bucket (olremote.c): its listing, each entry flagged cached or not */
	bk_bucket_t *bk;
	bool cached_only;      /* flags & TGT_LS_CACHED: what is here only */
	bool ec;               /* an erasure-coded bucket: its slices here list objects too */
	unsigned entry_flags;  /* of the entry being listed */
	bool not_here;         /* the entry is a remote one with no copy here */
	buf_t msg;
};

static void bop_cleanup(void *arg)
{
	struct bop *b = arg;
	buf_free(&b->out);
	buf_free(&b->members);
	buf_free(&b->loc);
	buf_free(&b->msg);
	free(b->bk);
	free(b->last);
}

static struct bop *bop_new(http_req_t *req, sv_t bck)
{
	struct bop *b = arena_zalloc(req->arena, sizeof(*b));
	b->t = req->ctx;
	b->bck = bck;
	req->state = b;
	arena_cleanup_add(req->arena, bop_cleanup, b);
	return b;
}

static void answer(http_req_t *req, struct bop *b, const char *what)
{
	if (b->err) {
		char w[128];
		snprintf(w, sizeof(w), "%s \"%.*s\"", what, (int)b->bck.len, b->bck.ptr);
		tgt_resp_errno(req, b->err, w);
		return;
	}
	http_resp_send(req, "", 0);
}

/* --- create / destroy ---------------------------------------------------- */

static void create_work(http_req_t *req)
{
	struct bop *b = req->state;
	if (store_bucket_create(b->t->store, b->bck.ptr, b->bck.len, b->cksum) != AIS_OK)
		b->err = errno ? errno : EIO;
}

static void create_done(http_req_t *req) { answer(req, req->state, "bucket"); }

static void destroy_work(http_req_t *req)
{
	struct bop *b = req->state;
	if (store_bucket_destroy(b->t->store, b->bck.ptr, b->bck.len) != AIS_OK)
		b->err = errno ? errno : EIO;
}

static void destroy_done(http_req_t *req) { answer(req, req->state, "bucket"); }

/* --- list objects -------------------------------------------------------- */

static void list_entry(void *arg, const char *name, size_t len, const store_meta_t *m)
{
	struct bop *b = arg;
	char t[64];
	buf_addstr(&b->out, b->n ? ",{\"name\":" : "{\"name\":");
	buf_add_json_str(&b->out, name, len);
	if (b->props & P_SIZE)
		buf_addf(&b->out, ",\"size\":%llu", (unsigned long long)m->size);
	if (b->props & P_CKSUM) {
		buf_addstr(&b->out, ",\"checksum\":");
		buf_add_json_str(&b->out, m->cksum, strlen(m->cksum));
	}
	if (b->props & P_ATIME) {
		tgt_fmt_time(m->atime_ns ? m->atime_ns : m->mtime_ns, t, sizeof(t));
		buf_addf(&b->out, ",\"atime\":\"%s\"", t);
	}
	if (b->props & P_VERSION)
		buf_addf(&b->out, ",\"version\":\"%llu\"", (unsigned long long)m->version);
	if (b->props & P_CUSTOM) {
		buf_addstr(&b->out, ",\"custom\":");
		buf_add_json_str(&b->out, m->custom, strlen(m->custom));
	}
	if (b->props & P_MTIME)
		buf_addf(&b->out, ",\"mtime_ns\":%lld", (long long)m->mtime_ns);
	if (b->props & P_LOCATION) /* a remote entry not cached here: no copy here to name */
		buf_addsv(&b->out, b->not_here ? SV(",\"location\":[]") : sv_of(&b->loc));
	buf_reset(&b->members);
	unsigned fl = b->entry_flags;
	if (b->arch && tgt_list_members(b->t->store, b->bck, (sv_t){name, len}, &b->members) == AIS_OK)
		fl |= TGT_ENTRY_IS_ARCHIVE;
	if (fl)
		buf_addf(&b->out, ",\"flags\":%u", fl);
	buf_addch(&b->out, '}');
	buf_addsv(&b->out, sv_of(&b->members));
	b->n++;
	free(b->last);
	b->last = xstrndup(name, len);
	b->last_len = len;
}

/* One entry of a remote bucket's listing: what the remote says (size,
 * mtime, its ETag as the S3 one), cached or not, so that every entry
 * carries the same fields from the same source; a copy here only sets
 * the cached flag. The remote has no checksum or version of this
 * cluster's: those props are left out of the whole listing (list_objects). */
static void remote_entry(void *arg, const bk_entry_t *e)
{
	struct bop *b = arg;
	store_meta_t m;
	b->entry_flags =
		store_lookup(b->t->store, b->bck.ptr, b->bck.len, e->name, e->len, &m) == AIS_OK ? TGT_ENTRY_CACHED : 0;
	b->not_here = !(b->entry_flags & TGT_ENTRY_CACHED);
	memset(&m, 0, sizeof(m));
	m.size = e->size;
	m.mtime_ns = e->mtime_ns;
	if (e->etag[0] && strlen(e->etag) < 200 && !strpbrk(e->etag, ",="))
		snprintf(m.custom, sizeof(m.custom), "s3.etag=%s", e->etag);
	list_entry(b, e->name, e->len, &m);
	b->entry_flags = 0;
	b->not_here = false;
}

/* --- an erasure-coded bucket's listing ----------------------------------------------
 * An object kept as slices only (ec.c rule 5) has no whole copy anywhere:
 * its slice here lists it, with the object's properties from the slice's
 * metadata. A page merges the whole copies here with the slices here by
 * name, each name once (the whole copy's properties when both): the first
 * pagesize names of the union are among the first pagesize of each. */

struct lent {
	char *name, *custom;
	size_t len;
	store_meta_t *m; /* custom emptied: kept in custom */
};

struct lents {
	struct lent *e;
	size_t n, cap;
	bool slices;
};

static void lent_add(void *arg, const char *name, size_t len, const store_meta_t *m)
{
	struct lents *l = arg;
	ec_meta_t em;
	const char *custom = m->custom;
	if (l->slices) { /* the object's size, checksum and write time, and its custom metadata */
		const char *nl = strchr(m->custom, '\n'), *colon;
		if (ec_meta_of(m->custom, &em) != AIS_OK)
			return;
		custom = nl ? nl + 1 : "";
		colon = strchr(em.cksum, ':');
		enum store_cksum ct = CKSUM_NONE;
		if (colon && store_cksum_parse(em.cksum, (size_t)(colon - em.cksum), &ct) != AIS_OK)
			ct = CKSUM_NONE;
		if (l->n == l->cap)
			l->e = xrealloc(l->e, (l->cap = l->cap ? 2 * l->cap : 64) * sizeof(*l->e));
		store_meta_t *x = xcalloc(1, offsetof(store_meta_t, custom) + 1);
		x->size = em.size;
		x->cksum_type = ct;
		if (ct != CKSUM_NONE)
			snprintf(x->cksum, sizeof(x->cksum), "%s", colon + 1);
		x->version = m->version;
		x->mtime_ns = (int64_t)em.version;
		x->atime_ns = m->atime_ns;
		l->e[l->n++] = (struct lent){xstrndup(name, len), xstrdup(custom), len, x};
		return;
	}
	if (l->n == l->cap)
		l->e = xrealloc(l->e, (l->cap = l->cap ? 2 * l->cap : 64) * sizeof(*l->e));
	store_meta_t *x = xcalloc(1, offsetof(store_meta_t, custom) + 1);
	memcpy(x, m, offsetof(store_meta_t, custom));
	l->e[l->n++] = (struct lent){xstrndup(name, len), xstrdup(custom), len, x};
}

static void lents_free(struct lents *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].name), free(l->e[i].custom), free(l->e[i].m);
	free(l->e);
}

static int name_cmp(const struct lent *a, const struct lent *b)
{
	int c = memcmp(a->name, b->name, MIN(a->len, b->len));
	return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int list_ec(struct bop *b)
{
	struct lents w = {0}, sl = {.slices = true};
	bool mw = false, ms = false;
	char sb[24];
	int rc = AIS_ERR;
	store_meta_t *m = xmalloc(sizeof(*m));
	ec_slice_bucket(b->bck.ptr, b->bck.len, sb);
	if (store_list_objects(b->t->store, b->bck.ptr, b->bck.len, b->prefix.ptr, b->prefix.len,
			       b->start_after.ptr, b->start_after.len, b->pagesize, b->versions, lent_add, &w,
			       &mw) != AIS_OK)
		goto out;
	if (store_list(b->t->store, sb, strlen(sb), b->prefix.ptr, b->prefix.len, b->start_after.ptr,
		       b->start_after.len, b->pagesize, lent_add, &sl, &ms) != AIS_OK)
		sl.n = 0, ms = false; /* no slice here yet */
	size_t i = 0, j = 0, k = 0;
	while (k < b->pagesize && (i < w.n || j < sl.n)) {
		int c = i == w.n ? 1 : j == sl.n ? -1 : name_cmp(&w.e[i], &sl.e[j]);
		const struct lent *e = c <= 0 ? &w.e[i++] : &sl.e[j++];
		j += c == 0;
		memcpy(m, e->m, offsetof(store_meta_t, custom));
		snprintf(m->custom, sizeof(m->custom), "%s", e->custom);
		list_entry(b, e->name, e->len, m);
		k++;
	}
	b->more = mw || ms || i < w.n || j < sl.n;
	rc = AIS_OK;
out:
	lents_free(&w);
	lents_free(&sl);
	free(m);
	return rc;
}

static void list_work(http_req_t *req)
{
	struct bop *b = req->state;
	buf_addstr(&b->out, "{\"entries\":[");
	if (b->bk && !b->cached_only) {
		if (bk_list(b->bk, b->prefix, b->start_after, b->pagesize, remote_entry, b, &b->more, &b->msg) != AIS_OK) {
			b->err = errno ? errno : EIO;
			return;
		}
	} else if (b->ec ? list_ec(b) != AIS_OK
			 : store_list_objects(b->t->store, b->bck.ptr, b->bck.len, b->prefix.ptr, b->prefix.len,
					      b->start_after.ptr, b->start_after.len, b->pagesize, b->versions,
					      list_entry, b, &b->more) != AIS_OK) {
		b->err = errno ? errno : EIO;
		return;
	}
	buf_addstr(&b->out, "],\"continuation_token\":");
	if (b->more && b->last)
		buf_add_json_str(&b->out, b->last, b->last_len);
	else
		buf_addstr(&b->out, "\"\"");
	buf_addch(&b->out, '}');
}

/* A remote bucket's listing failed on its remote: the status of its class
 * (backend.h) and a JSON error that names the remote ("remote": alias),
 * by which the gateway tells it from a failure of this target and passes
 * it on with the same status (native and S3 listings). */
static void list_remote_failed(http_req_t *req, struct bop *b)
{
	const ais_errno_t *e = ais_errno(b->err);
	int status = e->remote ? e->status : 502;
	buf_t msg = BUF_INIT, body = BUF_INIT;
	buf_addf(&msg, "listing %.*s: %s", (int)b->bck.len, b->bck.ptr, b->msg.ptr);
	buf_addstr(&body, "{\"message\":");
	buf_add_json_str(&body, msg.ptr, msg.len);
	buf_addf(&body, ",\"status\":%d,\"remote\":", status);
	buf_add_json_str(&body, b->bk->r.alias, strlen(b->bk->r.alias));
	buf_addch(&body, '}');
	log_warnx("listing %.*s: %d %s", (int)b->bck.len, b->bck.ptr, status, b->msg.ptr);
	http_resp_status(req, status);
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &body);
	buf_free(&msg);
}

static void list_done(http_req_t *req)
{
	struct bop *b = req->state;
	const ais_errno_t *e = ais_errno(b->err);
	if (b->err && b->bk && !b->cached_only && b->msg.len) {
		list_remote_failed(req, b);
		return;
	}
	if (e->remote || (b->err && b->err != ENOENT && b->msg.len)) {
		http_resp_error(req, e->remote ? e->status : 502, "listing %.*s: %s",
				(int)b->bck.len, b->bck.ptr, b->msg.ptr);
		return;
	}
	if (b->err) {
		answer(req, b, "bucket");
		return;
	}
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &b->out);
}

static int parse_props(sv_t s, unsigned *out)
{
	unsigned p = P_NAME;
	const char *q = s.ptr, *end = s.ptr + s.len;
	while (q < end) {
		const char *c = memchr(q, ',', (size_t)(end - q));
		sv_t it = sv_trim((sv_t){q, (size_t)((c ? c : end) - q)});
		if (sv_eqstr(it, "name") || it.len == 0)
			;
		else if (sv_eqstr(it, "size"))
			p |= P_SIZE;
		else if (sv_eqstr(it, "checksum"))
			p |= P_CKSUM;
		else if (sv_eqstr(it, "atime"))
			p |= P_ATIME;
		else if (sv_eqstr(it, "version"))
			p |= P_VERSION;
		else if (sv_eqstr(it, "custom"))
			p |= P_CUSTOM;
		else if (sv_eqstr(it, "mtime"))
			p |= P_MTIME;
		else if (sv_eqstr(it, "location"))
			p |= P_LOCATION;
		else if (!sv_eqstr(it, "copies") && !sv_eqstr(it, "status"))
			return AIS_ERR;
		q = (c ? c : end) + 1;
	}
	*out = p;
	return AIS_OK;
}

/* This target as a location: ',"location":[{"id","host","url"}]' (the
 * node's id and public URL in the cluster map; standalone, the same rule
 * from the config and the listening port); host is the URL's host part. */
static void self_location(const target_t *t, buf_t *out)
{
	char id[CMAP_ID_MAX + 1], url[CMAP_URL_MAX + 1];
	if (t->base.cl) {
		const cmap_node_t *me = cluster_self(t->base.cl);
		snprintf(id, sizeof(id), "%s", me->id);
		snprintf(url, sizeof(url), "%s", me->pub_url);
	} else {
		int port = http_server_port(t->srv);
		if (t->conf->node_id[0])
			snprintf(id, sizeof(id), "%s", t->conf->node_id);
		else
			snprintf(id, sizeof(id), "%.50s:%d", t->conf->host, port);
		if (t->conf->public_url[0])
			snprintf(url, sizeof(url), "%s", t->conf->public_url);
		else
			snprintf(url, sizeof(url), "%s://%.200s:%d", t->conf->tls_cert[0] ? "https" : "http",
				 t->conf->host, port);
	}
	const char *h = strstr(url, "://");
	h = h ? h + 3 : url;
	size_t hl = *h == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":/");
	if (*h == '[' && hl > 2) /* [v6]: the address without brackets */
		h++, hl -= 2;
	buf_addstr(out, ",\"location\":[{\"id\":");
	buf_add_json_str(out, id, strlen(id));
	buf_addstr(out, ",\"host\":");
	buf_add_json_str(out, h, MIN(hl, strlen(h)));
	buf_addstr(out, ",\"url\":");
	buf_add_json_str(out, url, strlen(url));
	buf_addstr(out, "}]");
}

static bool json_sv(json_t *v, arena_t *a, sv_t *out)
{
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v))
		return false;
	*out = (sv_t){arena_strndup(a, json_string_value(v), json_string_length(v)), json_string_length(v)};
	return true;
}

/* "flags": an integer (AIStore's LsoMsg flags; LsCached and LsArchDir are read). */
static bool json_flags(json_t *v, bool *arch, bool *cached)
{
	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*arch = json_integer_value(v) & TGT_LS_ARCH_DIR;
	*cached = json_integer_value(v) & TGT_LS_CACHED;
	return true;
}

static int list_objects(http_req_t *req, sv_t bck, json_t *value)
{
	struct bop *b = bop_new(req, bck);
	sv_t token = {"", 0}, pagesize = {NULL, 0}, props = {NULL, 0};
	uint64_t ps = LIST_PAGE_DEFAULT;

	b->prefix = b->start_after = (sv_t){"", 0};
	if (value) {
		json_t *jps = json_object_get(value, "pagesize");
		if (!json_sv(json_object_get(value, "prefix"), req->arena, &b->prefix) ||
		    !json_sv(json_object_get(value, "start_after"), req->arena, &b->start_after) ||
		    !json_sv(json_object_get(value, "continuation_token"), req->arena, &token) ||
		    !json_sv(json_object_get(value, "props"), req->arena, &props) ||
		    !json_flags(json_object_get(value, "flags"), &b->arch, &b->cached_only) ||
		    (jps && !json_is_null(jps) && (!json_is_integer(jps) || json_integer_value(jps) < 0))) {
			http_resp_error(req, 400, "invalid list request: prefix, start_after, continuation_token and "
						  "props are strings, pagesize and flags non-negative integers");
			return AIS_OK;
		}
		if (jps && json_is_integer(jps) && json_integer_value(jps) > 0)
			ps = (uint64_t)json_integer_value(jps);
	} else {
		http_query_get(req, "prefix", &b->prefix);
		http_query_get(req, "start_after", &b->start_after);
		http_query_get(req, "continuation_token", &token);
		http_query_get(req, "props", &props);
		sv_t fl;
		uint64_t f;
		if (http_query_get(req, "flags", &fl) && num_parse_u64(fl.ptr, fl.len, 0, UINT32_MAX, &f) == AIS_OK) {
			b->arch = f & TGT_LS_ARCH_DIR;
			b->cached_only = f & TGT_LS_CACHED;
		}
		if (http_query_get(req, "pagesize", &pagesize) && pagesize.len &&
		    num_parse_u64(pagesize.ptr, pagesize.len, 0, UINT32_MAX, &ps) != AIS_OK) {
			http_resp_error(req, 400, "pagesize must be a non-negative integer");
			return AIS_OK;
		}
		if (ps == 0)
			ps = LIST_PAGE_DEFAULT;
	}
	b->pagesize = ps > LIST_PAGE_MAX ? LIST_PAGE_MAX : ps;
	sv_t qv;
	b->versions = http_query_get(req, "versions", &qv) && sv_eqstr(qv, "true");
	b->props = P_ALL;
	if (props.ptr && props.len && parse_props(props, &b->props) != AIS_OK) {
		http_resp_error(req, 400, "props: a comma-separated list of name, size, checksum, atime, version, custom, "
					  "mtime, location");
		return AIS_OK;
	}
	if (b->props & P_LOCATION)
		self_location(b->t, &b->loc);
	/* the token is the last name of the previous page: resume after it */
	if (token.len) {
		int c = memcmp(token.ptr, b->start_after.ptr, MIN(token.len, b->start_after.len));
		if (c > 0 || (c == 0 && token.len > b->start_after.len))
			b->start_after = token;
	}
	int berr;
	b->bk = olr_backend(b->t, bck, &berr, &b->msg);
	if (berr) {
		http_resp_error(req, 503, "%s", b->msg.ptr);
		return AIS_OK;
	}
	if (b->bk && !b->cached_only)
		b->props &= ~(unsigned)(P_CKSUM | P_VERSION); /* the remote's fields only (remote_entry) */
	bmd_props_t bp;
	b->ec = !b->bk && ec_props(b->t, bck, &bp) && bp.ec_enabled;
	/* a remote bucket's listing asks its remote */
	(b->bk && !b->cached_only ? http_offload_net : http_offload)(req, list_work, list_done);
	return AIS_OK;
}

/* --- list buckets, props -------------------------------------------------- */

static void list_buckets(http_req_t *req)
{
	target_t *t = req->ctx;
	store_bucket_t *bs = NULL;
	size_t n = 0;
	buf_t out = BUF_INIT;

	if (store_bucket_list(t->store, &bs, &n) != AIS_OK) {
		tgt_resp_errno(req, errno, "bucket list");
		return;
	}
	buf_addch(&out, '[');
	for (size_t i = 0; i < n; i++) {
		tgt_bucket_json(&out, bs[i].name, i == 0);
	}
	buf_addch(&out, ']');
	free(bs);
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &out);
}

static void head_bucket(http_req_t *req, sv_t bck)
{
	target_t *t = req->ctx;
	store_bucket_t b;
	if (store_bucket_get(t->store, bck.ptr, bck.len, &b) != AIS_OK) {
		http_resp_error(req, 404, "bucket \"%.*s\" does not exist", (int)bck.len, bck.ptr);
		return;
	}
	char created[64];
	tgt_fmt_time(b.created_ns, created, sizeof(created));
	http_resp_header(req, "Ais-Bucket-Props",
			 "{\"provider\":\"ais\",\"checksum\":{\"type\":\"%s\"},\"created\":\"%s\"}",
			 store_cksum_name(b.cksum_type), created);
	http_resp_send_head(req, 0);
}

/* --- dispatch ------------------------------------------------------------- */

int tgt_buckets(http_req_t *req)
{
	target_t *t = req->ctx;
	sv_t bck, obj;
	json_t *doc = NULL, *value = NULL;
	const char *action = NULL;
	json_error_t jerr;

	if (req->subpath.len == 0) {
		if (req->method == HTTP_GET)
			list_buckets(req);
		else
			http_resp_error(req, 400, "bucket name required: /v1/buckets/BUCKET");
		return AIS_OK;
	}
	if (tgt_parse_names(req, &bck, &obj, false) != AIS_OK)
		return AIS_OK;
	if (req->body.len) {
		doc = json_loadb(req->body.ptr, req->body.len, JSON_REJECT_DUPLICATES, &jerr);
		if (!doc || !json_is_object(doc)) {
			http_resp_error(req, 400, "invalid JSON body: %s", doc ? "not an object" : jerr.text);
			goto out;
		}
		json_t *ja = json_object_get(doc, "action");
		if (!json_is_string(ja)) {
			http_resp_error(req, 400, "JSON body needs an \"action\" string");
			goto out;
		}
		action = json_string_value(ja);
		value = json_object_get(doc, "value");
		if (value && json_is_null(value))
			value = NULL;
		if (value && !json_is_object(value)) {
			http_resp_error(req, 400, "\"value\" must be an object");
			goto out;
		}
	}

	switch (req->method) {
	case HTTP_HEAD:
		head_bucket(req, bck);
		break;
	case HTTP_GET:
		if (action && strcmp(action, "list")) {
			http_resp_error(req, 400, "unknown action \"%s\" for GET (want \"list\")", action);
			break;
		}
		{
			store_bucket_t sb;
			if (store_bucket_get(t->store, bck.ptr, bck.len, &sb) != AIS_OK) {
				http_resp_error(req, 404, "bucket \"%.*s\" does not exist", (int)bck.len, bck.ptr);
				break;
			}
		}
		list_objects(req, bck, value);
		break;
	case HTTP_POST: {
		if (!action || strcmp(action, "create-bck")) {
			http_resp_error(req, 400, "unknown action \"%s\" for POST (want \"create-bck\")",
					action ? action : "");
			break;
		}
		struct bop *b = bop_new(req, bck);
		if (store_cksum_parse(t->conf->checksum, strlen(t->conf->checksum), &b->cksum) != AIS_OK)
			b->cksum = CKSUM_XXHASH;
		json_t *ck = value ? json_object_get(json_object_get(value, "checksum"), "type") : NULL;
		if (ck) {
			if (!json_is_string(ck) ||
			    store_cksum_parse(json_string_value(ck), json_string_length(ck), &b->cksum) != AIS_OK) {
				http_resp_error(req, 400, "checksum.type must be xxhash, md5, sha256 or none");
				break;
			}
		}
		http_offload(req, create_work, create_done);
		break;
	}
	case HTTP_DELETE:
		if (action && strcmp(action, "destroy-bck")) {
			http_resp_error(req, 400, "unknown action \"%s\" for DELETE (want \"destroy-bck\")", action);
			break;
		}
		bop_new(req, bck);
		http_offload(req, destroy_work, destroy_done);
		break;
	default:
		http_resp_error(req, 405, "method not allowed");
	}
out:
	json_decref(doc);
	return AIS_OK;
}
