/*
 * ais.c - the aisd backend: another aisd cluster as the remote, through
 * its native API (/v1/objects, /v1/buckets). Its gateway answers object
 * requests with a 307 to the owning target, which the transfer follows
 * (with the body again for a PUT: the body is read from a file, so it can
 * be re-sent). A bearer token, when the remote has one, goes with every
 * request.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "bk_int.h"
#include "aisd/s3auth.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

void bk_ais_prepare(const bk_bucket_t *b, sv_t obj, const char *query, const char *const *extra, bk_req_t *q)
{
	size_t nv = 0;
	size_t ul = strlen(b->r.url);
	while (ul && b->r.url[ul - 1] == '/')
		ul--;
	buf_addf(&q->url, "%.*s/v1/%s/%s%s", (int)ul, b->r.url, obj.len ? "objects" : "buckets", b->bucket,
		 obj.len ? "/" : "");
	buf_add_pct(&q->url, obj, true);
	if (*query)
		buf_addf(&q->url, "?%s", query);
	for (size_t i = 0; extra && extra[i] && nv < ARRAY_SIZE(q->hv) - 1; i++)
		buf_addstr(&q->hv[nv++], extra[i]);
	if (b->r.token[0])
		buf_addf(&q->hv[nv++], "Authorization: Bearer %s", b->r.token);
	for (size_t i = 0; i < nv; i++)
		q->hp[i] = q->hv[i].ptr;
	q->hp[nv] = NULL;
}

/* Values in a listing page, at most, before it is parsed: a page of a
 * million empty entries ("[{},{},...]", 3 bytes each) would take hundreds
 * of bytes of parse tree per entry. An entry is an object of a few
 * properties and its custom metadata. */
#define VALUES_PER_ENTRY 64

size_t bk_json_values(sv_t s)
{
	size_t n = 1;
	bool in_str = false;
	for (size_t i = 0; i < s.len; i++) {
		char c = s.ptr[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == ',' || c == ':' || c == '[' || c == '{') {
			n++;
		}
	}
	return n;
}

int bk_ais_list(const bk_bucket_t *b, sv_t prefix, sv_t start_after, size_t pagesize, bk_list_fn fn, void *arg,
		bool *more, buf_t *msg)
{
	bk_req_t q = {0};
	buf_t query = BUF_INIT;
	bk_xfer_t x = {.r = &b->r, .bucket = b->bucket, .method = "GET", .body_fd = -1, .follow = true,
		       .max_resp = bk_limits()->list_bytes};
	json_t *doc = NULL;
	int rc = AIS_ERR;

	buf_addf(&query, "pagesize=%zu&props=name,size,checksum,custom,mtime", pagesize);
	if (prefix.len) {
		buf_addstr(&query, "&prefix=");
		buf_add_pct(&query, prefix, false);
	}
	if (start_after.len) {
		buf_addstr(&query, "&start_after=");
		buf_add_pct(&query, start_after, false);
	}
	bk_ais_prepare(b, (sv_t){"", 0}, query.ptr, NULL, &q);
	x.url = q.url.ptr;
	x.headers = q.hp;
	if (bk_xfer(&x, msg) != AIS_OK)
		goto out;
	if (x.status != 200) {
		bk_status_errno(&x, "listing", msg);
		goto out;
	}
	if (bk_json_values(sv_of(&x.resp)) > pagesize * VALUES_PER_ENTRY + 64) {
		buf_addf(msg, "remote \"%s\": listing: more entries than the page asked for", b->r.alias);
		errno = EREMOTEIO;
		goto out;
	}
	doc = json_loadb(x.resp.ptr ? x.resp.ptr : "", x.resp.len, 0, NULL);
	json_t *ents = json_object_get(doc, "entries"), *en;
	const char *tok = json_string_value(json_object_get(doc, "continuation_token"));
	size_t i;
	if (!json_is_array(ents)) {
		buf_addf(msg, "remote \"%s\": not a listing", b->r.alias);
		errno = EREMOTEIO;
		goto out;
	}
	json_array_foreach(ents, i, en) {
		json_t *n = json_object_get(en, "name"), *sz = json_object_get(en, "size");
		json_t *ck = json_object_get(en, "checksum"), *mt = json_object_get(en, "mtime_ns");
		if (!json_is_string(n))
			continue;
		bk_entry_t e = {.name = json_string_value(n), .len = json_string_length(n),
				.size = json_is_integer(sz) ? (uint64_t)json_integer_value(sz) : 0,
				.etag = json_is_string(ck) ? json_string_value(ck) : "",
				.mtime_ns = json_is_integer(mt) ? (int64_t)json_integer_value(mt) : 0};
		fn(arg, &e);
	}
	*more = tok && *tok;
	rc = AIS_OK;
out:
	json_decref(doc);
	buf_free(&query);
	bk_xfer_free(&x);
	bk_req_free(&q);
	return rc;
}
