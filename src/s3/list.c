/*
 * list.c - ListObjects (V1), ListObjectsV2 and ListObjectVersions.
 *
 * Names come in raw byte order from s3_list_page: the store's own listing
 * on a standalone target, or in a cluster every active target's page after
 * the same name, asked in parallel (cluster_call_all, as the native list),
 * merged (the native list's rule: the union's first N are the cluster's
 * first N; a name listed by several targets, the copies of a mirrored
 * object, is taken once; a listing that may lack objects because a target
 * holding some was not heard from fails, cluster_lsfan). The S3 layer on top rolls keys up into CommonPrefixes at the
 * delimiter, counts keys and prefixes against max-keys, and resumes after
 * the last item returned: a key, or a common prefix, whose keys are all
 * skipped (the marker's own prefix too, as S3 does). The V2 continuation
 * token is that item in base64.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/backend.h"
#include "aisd/log.h"
#include "aisd/olver.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

#define FANOUT_PAGE 1000

void s3_entries_free(s3_entry_t *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].name);
	free(e);
}

/* The quoted ETag of a listed object from its custom metadata. */
static void entry_etag(s3_entry_t *e, const char *custom, const char *cksum, uint64_t version, int64_t mtime)
{
	const char *p = strstr(custom, "s3.etag=");
	if (p && (p == custom || p[-1] == ',')) {
		p += 8;
		size_t n = strcspn(p, ",");
		snprintf(e->etag, sizeof(e->etag), "\"%.*s\"", (int)MIN(n, sizeof(e->etag) - 3), p);
	} else if (cksum && *cksum) {
		snprintf(e->etag, sizeof(e->etag), "\"%s\"", cksum);
	} else {
		snprintf(e->etag, sizeof(e->etag), "\"v%llx-%llx\"", (unsigned long long)version,
			 (unsigned long long)mtime);
	}
}

struct collect {
	s3_entry_t *e;
	size_t n, cap;
};

/* The entry's version from its custom metadata (olver.h). */
static void entry_version(s3_entry_t *e, const char *custom)
{
	olver_id_of(custom, e->vid, &e->vnull);
	e->dm = strstr(custom, OLVER_DM_KEY "=1") != NULL;
}

static s3_entry_t *collect_add(struct collect *c)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->e = xrealloc(c->e, c->cap * sizeof(*c->e));
	}
	memset(&c->e[c->n], 0, sizeof(c->e[0]));
	return &c->e[c->n++];
}

static void local_entry(void *arg, const char *name, size_t len, const store_meta_t *m)
{
	s3_entry_t *e = collect_add(arg);
	e->name = xstrndup(name, len);
	e->len = len;
	e->size = m->size;
	e->mtime_ns = m->mtime_ns;
	entry_etag(e, m->custom, m->cksum, m->version, m->mtime_ns);
	entry_version(e, m->custom);
}

static int entry_cmp(const void *a, const void *b)
{
	const s3_entry_t *x = a, *y = b;
	int c = memcmp(x->name, y->name, MIN(x->len, y->len));
	if (!c)
		c = (x->len > y->len) - (x->len < y->len);
	return c ? c : (x->src > y->src) - (x->src < y->src);
}

/* The URL of one target's page. */
static void page_url(buf_t *url, const char *base, const char *bck, sv_t prefix, sv_t after, size_t limit,
		     bool versions)
{
	buf_addf(url, "%s/v1/buckets/", base);
	buf_add_pct(url, sv_from(bck), false);
	buf_addf(url, "?props=name,size,checksum,version,custom,mtime&pagesize=%zu%s&prefix=", limit,
		 versions ? "&versions=true" : "");
	buf_add_pct(url, prefix, false);
	buf_addstr(url, "&start_after=");
	buf_add_pct(url, after, false);
}

/* The target at base answered c: its page, appended to out. AIS_ERR with
 * errno ENOENT (no such bucket), a remote backend's errno (the target's
 * answer names the remote: status.h) or EIO (err says why). */
static int page_take(const cluster_call_t *c, const char *base, size_t src, struct collect *out, bool *more,
		     buf_t *err)
{
	json_error_t jerr;

	if (!c->status) {
		buf_addf(err, "target %s: %s", base, c->resp.ptr ? c->resp.ptr : "no answer");
		errno = EIO;
		return AIS_ERR;
	}
	if (c->status == 404) {
		errno = ENOENT;
		return AIS_ERR;
	}
	json_t *doc = json_loadb(c->resp.ptr ? c->resp.ptr : "", c->resp.len, 0, &jerr);
	json_t *ents = json_object_get(doc, "entries");
	int re = c->status != 200 && json_is_string(json_object_get(doc, "remote")) ? ais_errno_of_remote(c->status) : 0;
	if (re) {
		const char *m = json_string_value(json_object_get(doc, "message"));
		buf_addstr(err, m ? m : "the remote backend failed");
		json_decref(doc);
		errno = re;
		return AIS_ERR;
	}
	if (c->status != 200 || !json_is_array(ents)) {
		buf_addf(err, "target %s: listing answered %d", base, c->status);
		json_decref(doc);
		errno = EIO;
		return AIS_ERR;
	}
	size_t i;
	json_t *it;
	json_array_foreach(ents, i, it) {
		json_t *jn = json_object_get(it, "name");
		if (!json_is_string(jn))
			continue;
		s3_entry_t *e = collect_add(out);
		e->name = xstrndup(json_string_value(jn), json_string_length(jn));
		e->len = json_string_length(jn);
		e->src = src;
		e->size = (uint64_t)json_integer_value(json_object_get(it, "size"));
		e->mtime_ns = (int64_t)json_integer_value(json_object_get(it, "mtime_ns"));
		const char *custom = json_string_value(json_object_get(it, "custom"));
		const char *ver = json_string_value(json_object_get(it, "version"));
		entry_etag(e, custom ? custom : "", json_string_value(json_object_get(it, "checksum")),
			   ver ? strtoull(ver, NULL, 10) : 0, e->mtime_ns);
		entry_version(e, custom ? custom : "");
	}
	const char *tok = json_string_value(json_object_get(doc, "continuation_token"));
	if (tok && *tok)
		*more = true;
	json_decref(doc);
	return AIS_OK;
}

/* Every active target's page, asked in parallel (cluster_call_all, as the
 * native list), appended to out; the first error in map order wins. When
 * the answers may lack objects (cluster_lsfan: a target holding part of
 * the bucket not heard from) it fails with EAGAIN naming the missing
 * targets: S3 has no way to mark a listing partial. */
static int fan_out(cluster_t *cl, const char *bck, sv_t prefix, sv_t after, size_t limit, bool versions,
		   struct collect *out, bool *more, buf_t *err)
{
	cluster_lsfan_t f;
	buf_t *urls;
	int rc = AIS_OK, e = 0;
	uint64_t call_ms = bk_list_call_ms(cl, sv_from(bck), 30000);

	cluster_lsfan_init(cl, bck, false, &f);
	urls = xcalloc(f.n + 1, sizeof(*urls));
	for (size_t i = 0; i < f.n; i++) {
		page_url(&urls[i], f.urls[i], bck, prefix, after, limit, versions);
		f.calls[i].url_long = urls[i].ptr;
		f.calls[i].method = "GET";
		f.calls[i].timeout_ms = call_ms;
	}
	cluster_lsfan_call(&f);
	size_t missing = 0;
	for (size_t i = 0; i < f.n; i++) {
		/* a target that does not know the bucket yet (it joined a moment
		 * ago, its BMD is on its way) holds none of its objects */
		if (f.calls[i].status == 404)
			missing++;
		else if (rc == AIS_OK && !f.gone[i] && page_take(&f.calls[i], f.urls[i], i, out, more, err) != AIS_OK) {
			rc = AIS_ERR;
			e = errno;
		}
		buf_free(&urls[i]);
	}
	if (rc == AIS_OK && f.n && missing == f.n) {
		rc = AIS_ERR;
		e = ENOENT;
	} else if (rc == AIS_OK && f.incomplete) {
		buf_addf(err, "the listing would be incomplete: %zu target(s) holding objects of the bucket not heard "
			      "from: %s; try again later", f.nmissing, f.missing.ptr);
		rc = AIS_ERR;
		e = EAGAIN;
	}
	cluster_lsfan_free(&f);
	free(urls);
	errno = e;
	return rc;
}

int s3_list_page(s3_node_t *nd, const char *bck, sv_t prefix, sv_t start_after, size_t limit,
		 s3_entry_t **out, size_t *n, bool *more, buf_t *err)
{
	return s3_list_page_v(nd, bck, prefix, start_after, limit, false, out, n, more, err);
}

int s3_list_page_v(s3_node_t *nd, const char *bck, sv_t prefix, sv_t start_after, size_t limit, bool versions,
		   s3_entry_t **out, size_t *n, bool *more, buf_t *err)
{
	struct collect c = {0};
	*more = false;
	if (!nd->cl) {
		if (store_list_objects(nd->store, bck, strlen(bck), prefix.ptr, prefix.len, start_after.ptr,
				       start_after.len, limit, versions, local_entry, &c, more) != AIS_OK) {
			int e = errno;
			s3_entries_free(c.e, c.n);
			errno = e;
			return AIS_ERR;
		}
		*out = c.e;
		*n = c.n;
		return AIS_OK;
	}
	if (fan_out(nd->cl, bck, prefix, start_after, limit, versions, &c, more, err) != AIS_OK) {
		int e = errno;
		s3_entries_free(c.e, c.n);
		errno = e;
		return AIS_ERR;
	}
	if (c.n)
		qsort(c.e, c.n, sizeof(*c.e), entry_cmp);
	/* a mirrored object is listed by every target holding a copy: each
	 * name once, the first copy's properties (as the native listing) */
	size_t k = 0;
	for (size_t i = 0; i < c.n; i++) {
		if (k && c.e[k - 1].len == c.e[i].len && !memcmp(c.e[k - 1].name, c.e[i].name, c.e[i].len)) {
			free(c.e[i].name);
			continue;
		}
		c.e[k++] = c.e[i];
	}
	c.n = k;
	if (c.n > limit) {
		for (size_t i = limit; i < c.n; i++)
			free(c.e[i].name);
		c.n = limit;
		*more = true;
	}
	*out = c.e;
	*n = c.n;
	return AIS_OK;
}

/* --- the S3 listing ------------------------------------------------------------ */

struct lst {
	int version;         /* 1, 2, or 0 (versions) */
	char bck[NAME_BUCKET_MAX + 1];
	sv_t prefix, delim, start, marker, token, start_after;
	bool url_enc, fetch_owner;
	buf_t owner; /* <Owner>...</Owner> of the request's user */
	size_t max_keys;
	/* results */
	buf_t body;
	size_t count;
	bool truncated;
	buf_t last; /* the last item returned (key or prefix) */
	int err;
	buf_t msg;
};

static void lst_cleanup(void *arg)
{
	struct lst *l = arg;
	buf_free(&l->body);
	buf_free(&l->last);
	buf_free(&l->msg);
	buf_free(&l->owner);
}

static void enc_elem(struct lst *l, buf_t *b, const char *tag, const char *s, size_t n)
{
	s3_xml_elem_enc(b, tag, s, n, l->url_enc, true);
}

/* Length of the common prefix of name (prefix + ... + delim), or 0. */
static size_t cp_len(struct lst *l, const char *name, size_t len)
{
	if (!l->delim.len || len < l->prefix.len)
		return 0;
	const char *p = memmem(name + l->prefix.len, len - l->prefix.len, l->delim.ptr, l->delim.len);
	return p ? (size_t)(p - name) + l->delim.len : 0;
}

static void add_content(struct lst *l, buf_t *contents, const s3_entry_t *e)
{
	char t[40];
	s3_time_iso(e->mtime_ns, t, sizeof(t));
	buf_addstr(contents, l->version == 0 ? "<Version>" : "<Contents>");
	enc_elem(l, contents, "Key", e->name, e->len);
	if (l->version == 0)
		buf_addstr(contents, "<VersionId>null</VersionId><IsLatest>true</IsLatest>");
	s3_xml_elemstr(contents, "LastModified", t);
	s3_xml_elemstr(contents, "ETag", e->etag);
	s3_xml_elemf(contents, "Size", "%llu", (unsigned long long)e->size);
	if (l->version != 2 || l->fetch_owner)
		buf_addsv(contents, (sv_t){l->owner.ptr, l->owner.len});
	buf_addstr(contents, "<StorageClass>STANDARD</StorageClass>");
	buf_addstr(contents, l->version == 0 ? "</Version>" : "</Contents>");
}

static void lst_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct lst *l = r->op;
	buf_t contents = BUF_INIT, prefixes = BUF_INIT, cursor = BUF_INIT, lastcp = BUF_INIT;

	buf_addsv(&cursor, l->start);
	/* the marker's own common prefix was returned already: skip its keys */
	size_t ml = cp_len(l, l->start.ptr, l->start.len);
	if (ml && l->start.len >= l->prefix.len && !memcmp(l->start.ptr, l->prefix.ptr, l->prefix.len)) {
		buf_add(&lastcp, l->start.ptr, ml);
		buf_reset(&cursor);
		buf_add(&cursor, l->start.ptr, ml);
		buf_addch(&cursor, (char)0xff);
	}
	bool done = l->max_keys == 0;
	while (!done) {
		s3_entry_t *e = NULL;
		size_t n = 0;
		bool more = false;
		if (s3_list_page(&r->node, l->bck, l->prefix, sv_of(&cursor), FANOUT_PAGE, &e, &n, &more, &l->msg) !=
		    AIS_OK) {
			l->err = errno ? errno : EIO;
			break;
		}
		for (size_t i = 0; i < n && !done; i++) {
			size_t cl = cp_len(l, e[i].name, e[i].len);
			buf_reset(&cursor);
			buf_add(&cursor, e[i].name, e[i].len);
			if (cl) {
				if (lastcp.len == cl && !memcmp(lastcp.ptr, e[i].name, cl))
					continue;
				if (l->count == l->max_keys) {
					l->truncated = done = true;
					break;
				}
				buf_reset(&lastcp);
				buf_add(&lastcp, e[i].name, cl);
				buf_addstr(&prefixes, "<CommonPrefixes>");
				enc_elem(l, &prefixes, "Prefix", e[i].name, cl);
				buf_addstr(&prefixes, "</CommonPrefixes>");
				buf_reset(&l->last);
				buf_add(&l->last, e[i].name, cl);
			} else {
				if (l->count == l->max_keys) {
					l->truncated = done = true;
					break;
				}
				add_content(l, &contents, &e[i]);
				buf_reset(&l->last);
				buf_add(&l->last, e[i].name, e[i].len);
			}
			l->count++;
		}
		/* past the rest of the last common prefix in one step */
		if (lastcp.len && cursor.len >= lastcp.len && !memcmp(cursor.ptr, lastcp.ptr, lastcp.len)) {
			buf_reset(&cursor);
			buf_addsv(&cursor, sv_of(&lastcp));
			buf_addch(&cursor, (char)0xff);
		}
		s3_entries_free(e, n);
		if (!more)
			break;
	}
	if (!l->err) {
		buf_t *b = &l->body;
		const char *root = l->version == 0 ? "ListVersionsResult" : "ListBucketResult";
		s3_xml_head(b, root);
		s3_xml_elemstr(b, "Name", l->bck);
		if (l->version == 1) /* V1 echoes its prefix as given, encoding-type or not (as S3; botocore reads it so) */
			s3_xml_elem(b, "Prefix", l->prefix.ptr, l->prefix.len);
		else
			enc_elem(l, b, "Prefix", l->prefix.ptr, l->prefix.len);
		if (l->version == 1) {
			enc_elem(l, b, "Marker", l->marker.ptr, l->marker.len);
			if (l->truncated)
				enc_elem(l, b, "NextMarker", l->last.ptr, l->last.len);
		} else if (l->version == 2) {
			if (l->start_after.len)
				enc_elem(l, b, "StartAfter", l->start_after.ptr, l->start_after.len);
			if (l->token.ptr)
				s3_xml_elem(b, "ContinuationToken", l->token.ptr, l->token.len);
			if (l->truncated)
				s3_token_xml(b, "NextContinuationToken", (sv_t){l->last.ptr, l->last.len});
			s3_xml_elemf(b, "KeyCount", "%zu", l->count);
		} else {
			enc_elem(l, b, "KeyMarker", l->marker.ptr, l->marker.len);
			s3_xml_elemstr(b, "VersionIdMarker", "");
			if (l->truncated) {
				enc_elem(l, b, "NextKeyMarker", l->last.ptr, l->last.len);
				s3_xml_elemstr(b, "NextVersionIdMarker", "null");
			}
		}
		s3_xml_elemf(b, "MaxKeys", "%zu", l->max_keys);
		if (l->delim.len)
			enc_elem(l, b, "Delimiter", l->delim.ptr, l->delim.len);
		s3_xml_elemstr(b, "IsTruncated", l->truncated ? "true" : "false");
		if (l->url_enc)
			s3_xml_elemstr(b, "EncodingType", "url");
		buf_addsv(b, sv_of(&contents));
		buf_addsv(b, sv_of(&prefixes));
		s3_xml_close(b, root);
	}
	buf_free(&contents);
	buf_free(&prefixes);
	buf_free(&cursor);
	buf_free(&lastcp);
}

static void lst_done(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct lst *l = r->op;
	if (l->err == ENOENT)
		s3_error(r, "NoSuchBucket", NULL);
	else if (l->err == EAGAIN)
		s3_error(r, "ServiceUnavailable", "%s", l->msg.ptr);
	else if (ais_errno(l->err)->remote)
		s3_error_msg(r, l->err, false, l->msg.ptr);
	else if (l->err)
		s3_error(r, "InternalError", "%s", l->msg.ptr ? l->msg.ptr : strerror(l->err));
	else
		s3_send_xml(r, 200, &l->body);
}

int s3_list_objects(s3_rq_t *r, int version)
{
	http_req_t *req = r->http;
	struct lst *l = arena_zalloc(req->arena, sizeof(*l));
	sv_t mk, et;
	uint64_t v = S3_MAX_KEYS;

	arena_cleanup_add(req->arena, lst_cleanup, l);
	r->op = l;
	l->version = version;
	snprintf(l->bck, sizeof(l->bck), "%.*s", (int)r->bucket.len, r->bucket.ptr);
	l->prefix = s3_query_str(req, "prefix");
	l->delim = s3_query_str(req, "delimiter");
	if (http_query_get(req, "max-keys", &mk) &&
	    num_parse_u64(mk.ptr, mk.len, 0, INT32_MAX, &v) != AIS_OK) {
		s3_error(r, "InvalidArgument", "max-keys must be an integer from 0 to 2147483647");
		return AIS_OK;
	}
	l->max_keys = v > S3_MAX_KEYS ? S3_MAX_KEYS : (size_t)v;
	if (http_query_get(req, "encoding-type", &et)) {
		if (!sv_eqstr(et, "url")) {
			s3_error(r, "InvalidArgument", "Invalid Encoding Method specified in Request");
			return AIS_OK;
		}
		l->url_enc = true;
	}
	sv_t un; /* Ceph's extension: an order is not needed (ours is kept), but a delimiter needs one */
	if (http_query_get(req, "allow-unordered", &un) && sv_eqstr(un, "true") && l->delim.len) {
		s3_error(r, "InvalidArgument", "allow-unordered cannot be used with a delimiter");
		return AIS_OK;
	}
	if (version == 2) {
		sv_t fo, tok = {NULL, 0};
		l->start_after = s3_query_str(req, "start-after");
		l->fetch_owner = http_query_get(req, "fetch-owner", &fo) && sv_eqstr(fo, "true");
		l->start = l->start_after;
		if (http_query_get(req, "continuation-token", &tok) && !tok.len) {
			l->token = tok; /* empty: from the start, echoed (as S3) */
		} else if (tok.ptr) {
			if (s3_token_decode(req, tok, &l->start) != AIS_OK) {
				s3_error(r, "InvalidArgument", "The continuation token provided is incorrect");
				return AIS_OK;
			}
			l->token = tok;
		}
	} else {
		l->marker = s3_query_str(req, version == 1 ? "marker" : "key-marker");
		l->start = l->marker;
	}
	s3_owner_xml(r, &l->owner, "Owner");
	s3_offload(r, lst_work, lst_done);
	return AIS_OK;
}
