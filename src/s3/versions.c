/*
 * versions.c - S3 versioning over the object layer's versions (olver.h,
 * whose rules say where versions live): GetBucketVersioning and
 * PutBucketVersioning (the bucket's history in the BMD, through the
 * primary), the x-amz-version-id of an object, the one version a request
 * with ?versionId reads or changes (GET, HEAD, GetObjectAttributes, ?acl,
 * ?tagging: s3_version_select), and ListObjectVersions.
 *
 * ListObjectVersions reads the bucket's listing under the prefix with the
 * kept versions (s3_list_page_v, every target's page merged), up to
 * VER_LIST_MAX entries, then orders it as S3 does (keys in byte order,
 * each key's versions newest first: the current one, then the kept ones
 * by id), resumes after key-marker/version-id-marker, rolls keys up into
 * CommonPrefixes at the delimiter and stops at max-keys. A prefix with
 * more versions than VER_LIST_MAX answers 503 with a message to list a
 * narrower prefix: never a short listing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

#define VER_LIST_MAX 100000
#define VER_PAGE 1000

unsigned s3_history(s3_rq_t *r)
{
	unsigned h = BMD_HIST_OFF;
	if (!r->node.cl)
		return h;
	const bmd_t *b;
	cluster_read_lock(r->node.cl, NULL, &b);
	const bmd_bucket_t *bk = b ? bmd_get(b, r->bucket.ptr, r->bucket.len) : NULL;
	if (bk)
		h = bk->props.history;
	cluster_read_unlock(r->node.cl);
	return h;
}

void s3_version_header(s3_rq_t *r, const char *custom, bool write)
{
	char id[NAME_VER_ID_LEN + 1];
	bool null;
	bool has = olver_id_of(custom, id, &null);
	if (write ? has && !null : has || s3_history(r) != BMD_HIST_OFF)
		http_resp_header(r->http, "x-amz-version-id", "%s", null ? "null" : id);
}

/* --- one version of an object, for the requests that take ?versionId ---------------- */

/* S3: a delete marker is not an object (405, the marker's id, Allow: DELETE). */
static void marker_refused(s3_rq_t *r)
{
	http_req_t *req = r->http;
	http_resp_header(req, "x-amz-delete-marker", "true");
	http_resp_header(req, "x-amz-version-id", "%.*s", (int)r->vid.len, r->vid.ptr);
	http_resp_header(req, "Allow", "DELETE");
	s3_error(r, "MethodNotAllowed", "The specified method is not allowed against this resource.");
}

int s3_version_select(s3_rq_t *r)
{
	http_req_t *req = r->http;
	sv_t vid = {NULL, 0};
	if (http_query_get(req, "versionId", &vid) && !sv_eqstr(vid, "null") && s3_history(r) == BMD_HIST_OFF) {
		s3_error(r, "InvalidArgument", "Invalid version id specified");
		return AIS_ERR;
	}
	if (vid.ptr && s3_history(r) != BMD_HIST_OFF) { /* one version (olver.h) */
		buf_t name = BUF_INIT;
		bool dm = false;
		if (!sv_eqstr(vid, "null") && !olver_id_valid(vid)) {
			s3_error(r, "InvalidArgument", "Invalid version id specified");
			return AIS_ERR;
		}
		r->vid = vid;
		if (olver_resolve(req->ctx, r->bucket, r->key, vid, &name, &dm) != AIS_OK) {
			buf_free(&name);
			s3_error(r, "NoSuchVersion", NULL);
			return AIS_ERR;
		}
		if (dm) {
			buf_free(&name);
			marker_refused(r);
			return AIS_ERR;
		}
		if (name.len != r->key.len) /* a kept version: the object itself if not kept */
			r->vkey = r->key;
		r->key = (sv_t){arena_strndup(req->arena, name.ptr, name.len), name.len};
		buf_free(&name);
	}
	return AIS_OK;
}

bool s3_version_missing(s3_rq_t *r, int err, unsigned flags, ol_open_fn cb)
{
	if (err == ENOENT && r->vid.ptr && !r->vcur && r->vkey.ptr) {
		r->vcur = true;
		r->key = r->vkey;
		ol_open(r->http, r->http->ctx, r->bucket, r->key, flags, cb, r);
		return true;
	}
	if (err == ENOENT && r->vid.ptr) {
		s3_error(r, "NoSuchVersion", NULL);
		return true;
	}
	return false;
}

int s3_version_opened(s3_rq_t *r, int fd, const store_meta_t *sm)
{
	if (!r->vid.ptr)
		return AIS_OK;
	char id[NAME_VER_ID_LEN + 1];
	bool null;
	bool has = olver_id_of(sm->custom, id, &null);
	if (r->vcur && (sv_eqstr(r->vid, "null") ? !null : !has || !sv_eqstr(r->vid, id))) {
		ol_close(r->http, fd);
		s3_error(r, "NoSuchVersion", NULL);
		return AIS_ERR;
	}
	if (strstr(sm->custom, OLVER_DM_KEY "=1")) {
		ol_close(r->http, fd);
		marker_refused(r);
		return AIS_ERR;
	}
	return AIS_OK;
}

/* --- ?versioning ---------------------------------------------------------------- */

static void put_body(s3_rq_t *r, buf_t *body)
{
	s3_versioning_req_t v;
	if (s3_parse_versioning(body->ptr ? body->ptr : "", body->len, &v) != AIS_OK || !v.status) {
		s3_error(r, "MalformedXML", NULL);
		return;
	}
	if (v.mfa) {
		s3_error(r, "NotImplemented", "MfaDelete is not implemented");
		return;
	}
	if (v.status != 1 && s3_bucket_lock_conf(r, NULL, 0)) { /* objlock.c: history stays enabled */
		s3_error(r, "InvalidBucketState", "An Object Lock configuration is present on this bucket, so the "
						  "versioning state cannot be changed.");
		return;
	}
	s3_bucket_set_history(r, v.status == 1 ? BMD_HIST_ENABLED : BMD_HIST_SUSPENDED);
}

int s3_versioning(s3_rq_t *r)
{
	if (!s3_bucket_exists(r)) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	if (r->http->method == HTTP_PUT) {
		s3_read_body(r, put_body);
		return AIS_OK;
	}
	buf_t b = BUF_INIT;
	unsigned h = s3_history(r);
	s3_xml_head(&b, "VersioningConfiguration");
	if (h != BMD_HIST_OFF)
		s3_xml_elemstr(&b, "Status", h == BMD_HIST_ENABLED ? "Enabled" : "Suspended");
	s3_xml_close(&b, "VersioningConfiguration");
	s3_send_xml(r, 200, &b);
	return AIS_OK;
}

/* --- ListObjectVersions ------------------------------------------------------------ */

/* One version: its key (the entry's name, or the part before the tag). */
struct ver {
	s3_entry_t *e;
	size_t klen;
	bool current;
	char sortid[NAME_VER_ID_LEN + 2]; /* the current one sorts first */
};

struct vls {
	char bck[NAME_BUCKET_MAX + 1];
	sv_t prefix, delim, kmarker, vmarker;
	size_t max_keys;
	bool url_enc;
	buf_t body;
	buf_t owner; /* <Owner>...</Owner>: the request's user, as ListObjects shows it (list.c) */
	int err;
	buf_t msg;
	s3_entry_t *e;
	size_t n;
};

static void vls_cleanup(void *arg)
{
	struct vls *l = arg;
	buf_free(&l->body);
	buf_free(&l->owner);
	buf_free(&l->msg);
	s3_entries_free(l->e, l->n);
}

static int ver_cmp(const void *a, const void *b)
{
	const struct ver *x = a, *y = b;
	int c = memcmp(x->e->name, y->e->name, MIN(x->klen, y->klen));
	if (!c)
		c = (x->klen > y->klen) - (x->klen < y->klen);
	return c ? c : -strcmp(x->sortid, y->sortid);
}

static const char *shown_id(const struct ver *v)
{
	return v->e->vnull || !v->e->vid[0] ? "null" : v->e->vid;
}

/* All entries under the prefix with the kept versions. */
static int load(s3_rq_t *r, struct vls *l)
{
	buf_t after = BUF_INIT;
	bool more = true;
	while (more) {
		s3_entry_t *e = NULL;
		size_t n = 0;
		if (s3_list_page_v(&r->node, l->bck, l->prefix, sv_of(&after), VER_PAGE, true, &e, &n, &more, &l->msg) !=
		    AIS_OK) {
			buf_free(&after);
			return AIS_ERR;
		}
		if (l->n + n > VER_LIST_MAX) {
			s3_entries_free(e, n);
			buf_free(&after);
			buf_addf(&l->msg, "more than %d versions under the prefix: list a narrower prefix", VER_LIST_MAX);
			errno = EAGAIN;
			return AIS_ERR;
		}
		l->e = xrealloc(l->e, (l->n + n + 1) * sizeof(*l->e));
		memcpy(l->e + l->n, e, n * sizeof(*e));
		l->n += n;
		free(e);
		if (!n)
			break;
		buf_reset(&after);
		buf_add(&after, l->e[l->n - 1].name, l->e[l->n - 1].len);
	}
	buf_free(&after);
	return AIS_OK;
}

static void one(struct vls *l, const struct ver *v, bool latest)
{
	buf_t *b = &l->body;
	char t[64];
	buf_addstr(b, v->e->dm ? "<DeleteMarker>" : "<Version>");
	s3_xml_elem_enc(b, "Key", v->e->name, v->klen, l->url_enc, true);
	s3_xml_elemstr(b, "VersionId", shown_id(v));
	s3_xml_elemstr(b, "IsLatest", latest ? "true" : "false");
	s3_time_iso(v->e->mtime_ns, t, sizeof(t));
	s3_xml_elemstr(b, "LastModified", t);
	if (!v->e->dm) {
		s3_xml_elemstr(b, "ETag", v->e->etag);
		s3_xml_elemf(b, "Size", "%llu", (unsigned long long)v->e->size);
		s3_xml_elemstr(b, "StorageClass", "STANDARD");
	}
	buf_addsv(b, (sv_t){l->owner.ptr, l->owner.len});
	buf_addstr(b, v->e->dm ? "</DeleteMarker>" : "</Version>");
}

static void vls_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct vls *l = r->op;
	if (load(r, l) != AIS_OK) {
		l->err = errno ? errno : EIO;
		return;
	}
	struct ver *v = xcalloc(l->n + 1, sizeof(*v));
	for (size_t i = 0; i < l->n; i++) {
		size_t k = name_version_of(l->e[i].name, l->e[i].len);
		v[i].e = &l->e[i];
		v[i].current = !k;
		v[i].klen = k ? k : l->e[i].len;
		if (k)
			snprintf(v[i].sortid, sizeof(v[i].sortid), "%s", l->e[i].name + k + NAME_VER_TAG_LEN);
		else
			snprintf(v[i].sortid, sizeof(v[i].sortid), "~"); /* above every hex id */
	}
	if (l->n)
		qsort(v, l->n, sizeof(*v), ver_cmp);

	buf_t items = BUF_INIT, last_key = BUF_INIT, last_pfx = BUF_INIT;
	const char *last_id = NULL;
	size_t count = 0, i = 0;
	bool truncated = false, skipping = l->kmarker.len > 0;
	while (i < l->n) {
		const struct ver *x = &v[i];
		sv_t key = {x->e->name, x->klen};
		bool first = i == 0 || v[i - 1].klen != x->klen || memcmp(v[i - 1].e->name, key.ptr, key.len);
		if (skipping) { /* after key-marker (and version-id-marker within it) */
			int c = memcmp(key.ptr, l->kmarker.ptr, MIN(key.len, l->kmarker.len));
			c = c ? c : (key.len > l->kmarker.len) - (key.len < l->kmarker.len);
			if (c < 0 || (c == 0 && !l->vmarker.len)) {
				i++;
				continue;
			}
			if (c == 0) {
				bool at = sv_eqstr(l->vmarker, shown_id(x));
				i++;
				if (at)
					skipping = false;
				continue;
			}
			skipping = false;
		}
		/* a common prefix at the delimiter */
		if (l->delim.len && key.len > l->prefix.len) {
			const char *d = memmem(key.ptr + l->prefix.len, key.len - l->prefix.len, l->delim.ptr, l->delim.len);
			if (d) {
				size_t pl = (size_t)(d - key.ptr) + l->delim.len;
				if (last_pfx.len == pl && !memcmp(last_pfx.ptr, key.ptr, pl)) {
					i++;
					continue;
				}
				if (count == l->max_keys) {
					truncated = true;
					break;
				}
				buf_reset(&last_pfx);
				buf_add(&last_pfx, key.ptr, pl);
				buf_addstr(&items, "<CommonPrefixes>");
				s3_xml_elem_enc(&items, "Prefix", key.ptr, pl, l->url_enc, true);
				buf_addstr(&items, "</CommonPrefixes>");
				count++;
				buf_reset(&last_key);
				buf_add(&last_key, key.ptr, pl);
				last_id = NULL;
				i++;
				continue;
			}
		}
		if (count == l->max_keys) {
			truncated = true;
			break;
		}
		buf_t save = l->body;
		l->body = items;
		one(l, x, first);
		items = l->body;
		l->body = save;
		count++;
		buf_reset(&last_key);
		buf_add(&last_key, key.ptr, key.len);
		last_id = shown_id(x);
		i++;
	}
	buf_t *b = &l->body;
	s3_xml_head(b, "ListVersionsResult");
	s3_xml_elemstr(b, "Name", l->bck);
	s3_xml_elem_enc(b, "Prefix", l->prefix.ptr, l->prefix.len, l->url_enc, true);
	s3_xml_elem_enc(b, "KeyMarker", l->kmarker.ptr, l->kmarker.len, l->url_enc, true);
	s3_xml_elem(b, "VersionIdMarker", l->vmarker.ptr, l->vmarker.len);
	if (truncated) {
		s3_xml_elem_enc(b, "NextKeyMarker", last_key.ptr ? last_key.ptr : "", last_key.len, l->url_enc, true);
		if (last_id)
			s3_xml_elemstr(b, "NextVersionIdMarker", last_id);
	}
	s3_xml_elemf(b, "MaxKeys", "%zu", l->max_keys);
	if (l->delim.len)
		s3_xml_elem_enc(b, "Delimiter", l->delim.ptr, l->delim.len, l->url_enc, true);
	if (l->url_enc)
		s3_xml_elemstr(b, "EncodingType", "url");
	s3_xml_elemstr(b, "IsTruncated", truncated ? "true" : "false");
	buf_addsv(b, sv_of(&items));
	s3_xml_close(b, "ListVersionsResult");
	buf_free(&items);
	buf_free(&last_key);
	buf_free(&last_pfx);
	free(v);
}

static void vls_done(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct vls *l = r->op;
	if (l->err == ENOENT)
		s3_error(r, "NoSuchBucket", NULL);
	else if (l->err == EAGAIN)
		s3_error(r, "ServiceUnavailable", "%s", l->msg.ptr);
	else if (l->err)
		s3_error(r, "InternalError", "%s", l->msg.ptr ? l->msg.ptr : strerror(l->err));
	else
		s3_send_xml(r, 200, &l->body);
}

int s3_list_versions(s3_rq_t *r)
{
	http_req_t *req = r->http;
	struct vls *l = arena_zalloc(req->arena, sizeof(*l));
	sv_t mk, et;
	uint64_t v = S3_MAX_KEYS;

	arena_cleanup_add(req->arena, vls_cleanup, l);
	r->op = l;
	snprintf(l->bck, sizeof(l->bck), "%.*s", (int)r->bucket.len, r->bucket.ptr);
	l->prefix = s3_query_str(req, "prefix");
	l->delim = s3_query_str(req, "delimiter");
	l->kmarker = s3_query_str(req, "key-marker");
	l->vmarker = s3_query_str(req, "version-id-marker");
	if (l->vmarker.len && !l->kmarker.len) {
		s3_error(r, "InvalidArgument", "A version-id marker cannot be specified without a key marker.");
		return AIS_OK;
	}
	if (l->vmarker.len && !sv_eqstr(l->vmarker, "null") && !olver_id_valid(l->vmarker)) {
		s3_error(r, "InvalidArgument", "Invalid version id specified");
		return AIS_OK;
	}
	if (http_query_get(req, "max-keys", &mk) && num_parse_u64(mk.ptr, mk.len, 0, INT32_MAX, &v) != AIS_OK) {
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
	s3_owner_xml(r, &l->owner, "Owner");
	s3_offload(r, vls_work, vls_done);
	return AIS_OK;
}
