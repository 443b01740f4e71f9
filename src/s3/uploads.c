/*
 * uploads.c - ListMultipartUploads. Uploads live on their key's owner
 * target, so a gateway (or a target in a cluster) asks every active
 * target (GET /v1/s3uploads/BUCKET?prefix=, answered by s3_h_uploads) and
 * merges; a standalone target reads its own. The merged list is ordered by
 * key, then start time, then id; key-marker / upload-id-marker resume
 * after an item, max-uploads (<= 1000) bounds a page, and the delimiter
 * rolls keys up into CommonPrefixes as in a listing. Each upload's
 * Initiator and Owner is the user that created it (recorded with the
 * upload at CreateMultipartUpload), not the caller.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/httpc.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/target.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

static void uploads_free(s3_upload_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].key);
	free(v);
}

int s3_h_uploads(http_req_t *req)
{
	const node_base_t *nb = req->ctx; /* a target's */
	sv_t bck, prefix = {"", 0};
	s3_upload_t *v = NULL;
	size_t n = 0;
	buf_t out = BUF_INIT;

	if (tgt_parse_names(req, &bck, &(sv_t){0}, false) != AIS_OK)
		return AIS_OK;
	http_query_get(req, "prefix", &prefix);
	char *b = arena_svdup(req->arena, bck);
	s3_mpu_local_uploads(nb->conf, b, prefix, &v, &n);
	buf_addch(&out, '[');
	for (size_t i = 0; i < n; i++) {
		buf_addstr(&out, i ? ",{\"key\":" : "{\"key\":");
		buf_add_json_str(&out, v[i].key, v[i].klen);
		buf_addf(&out, ",\"upload_id\":\"%s\",\"initiated\":%lld,\"owner\":", v[i].id,
			 (long long)v[i].initiated);
		buf_add_json_str(&out, v[i].owner, strlen(v[i].owner));
		buf_addch(&out, '}');
	}
	buf_addch(&out, ']');
	uploads_free(v, n);
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &out);
	return AIS_OK;
}

static int up_cmp(const void *a, const void *b)
{
	const s3_upload_t *x = a, *y = b;
	int c = memcmp(x->key, y->key, MIN(x->klen, y->klen));
	if (c || x->klen != y->klen)
		return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
	if (x->initiated != y->initiated)
		return (x->initiated > y->initiated) - (x->initiated < y->initiated);
	return strcmp(x->id, y->id);
}

struct lu {
	char bck[NAME_BUCKET_MAX + 1];
	sv_t prefix, delim, key_marker, id_marker;
	size_t max;
	bool url_enc;
	s3_upload_t *v;
	size_t n;
	int err;
	buf_t out;
};

static void lu_cleanup(void *arg)
{
	struct lu *l = arg;
	uploads_free(l->v, l->n);
	buf_free(&l->out);
}

static void collect(s3_rq_t *r, struct lu *l)
{
	if (!r->node.cl) {
		s3_mpu_local_uploads(r->node.conf, l->bck, l->prefix, &l->v, &l->n);
		return;
	}
	const cmap_t *m;
	char (*urls)[CMAP_URL_MAX + 1];
	size_t nt = 0, cap = 0;
	cluster_read_lock(r->node.cl, &m, NULL);
	urls = xcalloc(cmap_size(m) + 1, sizeof(*urls));
	for (size_t i = 0; i < cmap_size(m); i++) {
		const cmap_node_t *x = cmap_node(m, i);
		if (x->role == CMAP_TARGET && x->state == CMAP_ACTIVE)
			snprintf(urls[nt++], sizeof(urls[0]), "%s", x->intra_url);
	}
	cluster_read_unlock(r->node.cl);
	for (size_t i = 0; i < nt && !l->err; i++) {
		buf_t url = BUF_INIT, resp = BUF_INIT;
		int status = 0;
		json_error_t je;
		buf_addf(&url, "%s/v1/s3uploads/%s?prefix=", urls[i], l->bck);
		buf_add_pct(&url, l->prefix, false);
		if (httpc_sync("GET", url.ptr, NULL, NULL, 0, 30000, &resp, &status) != AIS_OK || status != 200) {
			l->err = EIO;
		} else {
			json_t *a = json_loadb(resp.ptr, resp.len, 0, &je), *it;
			size_t k;
			json_array_foreach(a, k, it) {
				json_t *jk = json_object_get(it, "key");
				const char *id = json_string_value(json_object_get(it, "upload_id"));
				if (!json_is_string(jk) || !id)
					continue;
				if (l->n == cap)
					l->v = xrealloc(l->v, (cap = cap ? cap * 2 : 16) * sizeof(*l->v));
				s3_upload_t *u = &l->v[l->n++];
				u->key = xstrndup(json_string_value(jk), json_string_length(jk));
				u->klen = json_string_length(jk);
				snprintf(u->id, sizeof(u->id), "%s", id);
				u->initiated = (int64_t)json_integer_value(json_object_get(it, "initiated"));
				const char *own = json_string_value(json_object_get(it, "owner"));
				snprintf(u->owner, sizeof(u->owner), "%s", own ? own : "");
			}
			json_decref(a);
		}
		buf_free(&url);
		buf_free(&resp);
	}
	free(urls);
}

static void lu_elem(struct lu *l, buf_t *b, const char *tag, const char *s, size_t n)
{
	s3_xml_elem_enc(b, tag, s, n, l->url_enc, false);
}

static void lu_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct lu *l = r->op;
	buf_t ups = BUF_INIT, cps = BUF_INIT;
	size_t shown = 0, i = 0;
	bool trunc = false;
	const char *next_key = NULL, *next_id = "";
	size_t next_klen = 0;
	sv_t lastcp = {NULL, 0};
	char t[40];

	collect(r, l);
	if (l->err)
		return;
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), up_cmp);
	/* after the markers */
	for (; l->key_marker.len && i < l->n; i++) {
		s3_upload_t *u = &l->v[i];
		int c = memcmp(u->key, l->key_marker.ptr, MIN(u->klen, l->key_marker.len));
		if (!c)
			c = (u->klen > l->key_marker.len) - (u->klen < l->key_marker.len);
		if (c > 0)
			break;
		if (c == 0 && l->id_marker.len && strcmp(u->id, l->id_marker.ptr) == 0) {
			i++;
			break;
		}
		if (c == 0 && l->id_marker.len)
			continue;
	}
	for (; i < l->n; i++) {
		s3_upload_t *u = &l->v[i];
		const char *d = l->delim.len ? memmem(u->key + l->prefix.len, u->klen - l->prefix.len, l->delim.ptr,
						      l->delim.len)
					     : NULL;
		if (d) {
			size_t cl = (size_t)(d - u->key) + l->delim.len;
			if (lastcp.ptr && lastcp.len == cl && !memcmp(lastcp.ptr, u->key, cl))
				continue;
			if (shown == l->max) {
				trunc = true;
				break;
			}
			lastcp = (sv_t){u->key, cl};
			buf_addstr(&cps, "<CommonPrefixes>");
			lu_elem(l, &cps, "Prefix", u->key, cl);
			buf_addstr(&cps, "</CommonPrefixes>");
			next_key = u->key, next_klen = cl, next_id = "";
			shown++;
			continue;
		}
		if (shown == l->max) {
			trunc = true;
			break;
		}
		s3_time_iso(u->initiated, t, sizeof(t));
		buf_addstr(&ups, "<Upload>");
		lu_elem(l, &ups, "Key", u->key, u->klen);
		s3_xml_elemstr(&ups, "UploadId", u->id);
		s3_user_xml(&ups, "Initiator", u->owner);
		s3_user_xml(&ups, "Owner", u->owner);
		buf_addstr(&ups, "<StorageClass>STANDARD</StorageClass>");
		s3_xml_elemstr(&ups, "Initiated", t);
		buf_addstr(&ups, "</Upload>");
		next_key = u->key, next_klen = u->klen, next_id = u->id;
		shown++;
	}
	buf_t *b = &l->out;
	s3_xml_head(b, "ListMultipartUploadsResult");
	s3_xml_elemstr(b, "Bucket", l->bck);
	lu_elem(l, b, "KeyMarker", l->key_marker.ptr, l->key_marker.len);
	s3_xml_elem(b, "UploadIdMarker", l->id_marker.ptr, l->id_marker.len);
	if (trunc && next_key) {
		lu_elem(l, b, "NextKeyMarker", next_key, next_klen);
		s3_xml_elemstr(b, "NextUploadIdMarker", next_id);
	}
	if (l->delim.len)
		lu_elem(l, b, "Delimiter", l->delim.ptr, l->delim.len);
	lu_elem(l, b, "Prefix", l->prefix.ptr, l->prefix.len);
	s3_xml_elemf(b, "MaxUploads", "%zu", l->max);
	s3_xml_elemstr(b, "IsTruncated", trunc ? "true" : "false");
	if (l->url_enc)
		s3_xml_elemstr(b, "EncodingType", "url");
	buf_addsv(b, sv_of(&ups));
	buf_addsv(b, sv_of(&cps));
	s3_xml_close(b, "ListMultipartUploadsResult");
	buf_free(&ups);
	buf_free(&cps);
}

static void lu_done(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct lu *l = r->op;
	if (l->err)
		s3_error(r, "InternalError", "a target did not list its uploads");
	else
		s3_send_xml(r, 200, &l->out);
}

int s3_mpu_list_uploads(s3_rq_t *r)
{
	http_req_t *req = r->http;
	struct lu *l = arena_zalloc(req->arena, sizeof(*l));
	sv_t v;
	uint64_t max = 1000;

	arena_cleanup_add(req->arena, lu_cleanup, l);
	r->op = l;
	snprintf(l->bck, sizeof(l->bck), "%.*s", (int)r->bucket.len, r->bucket.ptr);
	l->prefix = l->delim = l->key_marker = l->id_marker = (sv_t){"", 0};
	http_query_get(req, "prefix", &l->prefix);
	http_query_get(req, "delimiter", &l->delim);
	http_query_get(req, "key-marker", &l->key_marker);
	http_query_get(req, "upload-id-marker", &l->id_marker);
	if (http_query_get(req, "encoding-type", &v)) {
		if (!sv_eqstr(v, "url")) {
			s3_error(r, "InvalidArgument", "Invalid Encoding Method specified in Request");
			return AIS_OK;
		}
		l->url_enc = true;
	}
	if (http_query_get(req, "max-uploads", &v) && num_parse_u64(v.ptr, v.len, 0, INT32_MAX, &max) != AIS_OK) {
		s3_error(r, "InvalidArgument", "max-uploads must be an integer from 0 to 2147483647");
		return AIS_OK;
	}
	l->max = max > 1000 ? 1000 : (size_t)max;
	s3_offload(r, lu_work, lu_done);
	return AIS_OK;
}
