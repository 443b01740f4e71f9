/*
 * tagging.c - S3 tags: the pure parsers of a tag set (the <Tagging> body
 * of PutObjectTagging, the x-amz-tagging header of PutObject, CopyObject
 * and CreateMultipartUpload), S3's limits, and GetObjectTagging,
 * PutObjectTagging and DeleteObjectTagging.
 *
 * An object's tags live in its S3 metadata (meta.c: items "s3.t.KEY=VALUE"
 * of the custom metadata), so they are written with the object in one
 * record (PUT, copy, Complete) and changed on every copy through the
 * object layer like an ACL (s3_meta_set: ol_set_custom, the bytes stay),
 * each version its own (?versionId names one: s3_version_select; every
 * answer names the version's x-amz-version-id, as S3).
 * A tag set is kept sorted by key, so GET answers the same order on every
 * copy whatever order the client sent. Limits as S3 has them: at most 10
 * tags on an object, keys of 1 to 128 characters, values of at most 256
 * (UTF-8 characters counted), no key twice, no "aws:" prefix (InvalidTag);
 * a body that is not a <Tagging> document is MalformedXML.
 */
#include <stdlib.h>
#include <string.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

/* --- the pure parsers ----------------------------------------------------------- */

static void tag_add(arena_t *a, s3_tags_t *t, sv_t k, sv_t v)
{
	if (t->n < ARRAY_SIZE(t->t)) {
		t->t[t->n].key = arena_svdup(a, k);
		t->t[t->n].value = arena_svdup(a, v);
	}
	t->n++;
}

/* The parser's text lives until its next callback only. */
static sv_t keep(arena_t *a, const char *text, size_t len)
{
	return (sv_t){arena_strndup(a, text, len), len};
}

int s3_tags_from_query(arena_t *a, sv_t q, s3_tags_t *out)
{
	sv_t k, v, dk, dv;
	memset(out, 0, sizeof(*out));
	while (http_query_next(&q, &k, &v)) {
		if (!k.len && !v.len)
			continue; /* "a&&b" */
		if (http_pct_decode(a, k, true, &dk) != AIS_OK || http_pct_decode(a, v, true, &dv) != AIS_OK)
			return AIS_ERR;
		tag_add(a, out, dk, dv);
	}
	return AIS_OK;
}

struct tx_st {
	arena_t *a;
	s3_tags_t *out;
	bool root, key_seen;
	sv_t key, value;
};

static int tx_cb(void *arg, const char *path, const char *text, size_t len)
{
	struct tx_st *c = arg;
	if (!strcmp(path, "Tagging")) {
		c->root = true;
	} else if (!strcmp(path, "Tagging/TagSet/Tag/Key")) {
		if (c->key_seen)
			return AIS_ERR;
		c->key = keep(c->a, text, len);
		c->key_seen = true;
	} else if (!strcmp(path, "Tagging/TagSet/Tag/Value")) {
		c->value = keep(c->a, text, len);
	} else if (!strcmp(path, "Tagging/TagSet/Tag")) {
		if (!c->key_seen)
			return AIS_ERR;
		tag_add(c->a, c->out, c->key, c->value);
		c->key_seen = false;
		c->key = c->value = (sv_t){"", 0};
	} else if (strcmp(path, "Tagging/TagSet")) {
		return AIS_ERR; /* an element S3's schema does not have */
	}
	return AIS_OK;
}

int s3_tags_from_xml(arena_t *a, const char *p, size_t n, s3_tags_t *out)
{
	struct tx_st c = {.a = a, .out = out, .key = {"", 0}, .value = {"", 0}};
	memset(out, 0, sizeof(*out));
	if (s3_xml_parse(p, n, tx_cb, &c) != AIS_OK || !c.root)
		return AIS_ERR;
	return AIS_OK;
}

/* Characters of UTF-8 text (continuation bytes not counted). */
static size_t utf8_chars(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static int tag_cmp(const void *x, const void *y)
{
	return strcmp(((const struct s3_tag *)x)->key, ((const struct s3_tag *)y)->key);
}

const char *s3_tags_check(s3_tags_t *t, size_t max)
{
	if (t->n > max)
		return max == S3_OBJECT_TAGS_MAX ? "Object tags cannot be greater than 10"
						 : "Bucket tag count cannot be greater than 50";
	for (size_t i = 0; i < t->n; i++) {
		const char *k = t->t[i].key, *v = t->t[i].value;
		if (!*k || utf8_chars(k) > S3_TAG_KEY_MAX)
			return "The TagKey you have provided is invalid";
		if (utf8_chars(v) > S3_TAG_VALUE_MAX)
			return "The TagValue you have provided is invalid";
		if (!strncmp(k, "aws:", 4))
			return "Your TagKey cannot be prefixed with aws:";
		for (const char *c = k; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				return "The TagKey you have provided is invalid";
		for (const char *c = v; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				return "The TagValue you have provided is invalid";
	}
	qsort(t->t, t->n, sizeof(t->t[0]), tag_cmp);
	for (size_t i = 1; i < t->n; i++)
		if (!strcmp(t->t[i - 1].key, t->t[i].key))
			return "Cannot provide multiple Tags with the same key";
	return NULL;
}

void s3_tags_xml(const s3_tags_t *t, buf_t *b)
{
	s3_xml_head(b, "Tagging");
	s3_xml_open(b, "TagSet");
	for (size_t i = 0; i < t->n && i < ARRAY_SIZE(t->t); i++) {
		s3_xml_open(b, "Tag");
		s3_xml_elemstr(b, "Key", t->t[i].key);
		s3_xml_elemstr(b, "Value", t->t[i].value);
		s3_xml_close(b, "Tag");
	}
	s3_xml_close(b, "TagSet");
	s3_xml_close(b, "Tagging");
}

/* --- the request's tags ----------------------------------------------------------- */

int s3_tags_from_req(s3_rq_t *r, s3_tags_t *out)
{
	sv_t h = http_req_header(r->http, "x-amz-tagging");
	memset(out, 0, sizeof(*out));
	if (!h.ptr)
		return AIS_OK;
	if (s3_tags_from_query(r->http->arena, sv_trim(h), out) != AIS_OK) {
		s3_error(r, "InvalidArgument", "The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded "
					       "URL query parameters without tag name duplicates.");
		return AIS_ERR;
	}
	const char *why = s3_tags_check(out, S3_OBJECT_TAGS_MAX);
	if (why) {
		s3_error(r, "InvalidTag", "%s", why);
		return AIS_ERR;
	}
	return AIS_OK;
}

/* --- GET, PUT and DELETE ?tagging of an object --------------------------------------- */

static void get_then(s3_rq_t *r, store_meta_t *sm, s3_meta_t *m, void *arg)
{
	buf_t b = BUF_INIT;
	(void)arg;
	s3_version_header(r, sm->custom, false);
	s3_tags_xml(&m->tags, &b);
	s3_send_xml(r, 200, &b);
}

static void del_then(s3_rq_t *r, store_meta_t *sm, s3_meta_t *m, void *arg)
{
	(void)arg;
	m->tags.n = 0;
	s3_meta_set(r, sm->version, m, 204, "tags");
}

static void put_then(s3_rq_t *r, store_meta_t *sm, s3_meta_t *m, void *arg)
{
	m->tags = *(s3_tags_t *)arg;
	s3_meta_set(r, sm->version, m, 200, "tags");
}

static void put_body(s3_rq_t *r, buf_t *body)
{
	s3_tags_t *t = arena_alloc(r->http->arena, sizeof(*t));
	if (s3_tags_from_xml(r->http->arena, body->ptr ? body->ptr : "", body->len, t) != AIS_OK) {
		s3_error(r, "MalformedXML", NULL);
		return;
	}
	const char *why = s3_tags_check(t, S3_OBJECT_TAGS_MAX);
	if (why) {
		s3_error(r, "InvalidTag", "%s", why);
		return;
	}
	r->req_tags = t; /* s3:RequestObjectTag/, decided with the object's metadata */
	s3_meta_fetch(r, put_then, t);
}

int s3_object_tagging(s3_rq_t *r)
{
	switch (r->http->method) {
	case HTTP_GET:
		s3_meta_fetch(r, get_then, NULL);
		return AIS_OK;
	case HTTP_PUT:
		s3_read_body(r, put_body);
		return AIS_OK;
	case HTTP_DELETE:
		s3_meta_fetch(r, del_then, NULL);
		return AIS_OK;
	default:
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
}
