/*
 * lcop.c - S3 bucket lifecycle served (lifecycle.c parses and writes the
 * XML): ?lifecycle of a bucket (Put/Get/DeleteBucketLifecycleConfiguration,
 * kept as the canonical JSON of s3lc.h in the BMD beside the bucket,
 * bmd_doc BMD_DOC_LIFECYCLE, changed through the primary like its CORS
 * rules), the x-amz-expiration header of an object's answers, and what
 * the lifecycle job (src/lifecycle/) asks of S3 (s3.h: an object's tags,
 * the abort of due uploads).
 *
 * Rules:
 *  1. A configuration is checked whole before it is kept: the XML schema
 *     (MalformedXML), then S3's values (s3lc_check: InvalidArgument,
 *     InvalidRequest). Transitions (Transition, NoncurrentVersionTransition)
 *     are parsed and checked like the rest, then refused with 501
 *     NotImplemented: aisd has one storage class (STANDARD), so there is
 *     nothing to move an object to, and a rule that would silently do
 *     nothing is not accepted.
 *  2. x-amz-expiration (GET, HEAD and PUT of an object's current version)
 *     names the earliest Expiration of an enabled rule that matches the
 *     object, in S3's calendar days (s3lc.h rule 3), whatever the length
 *     of the job's day (s3.lifecycle_day).
 *  3. A stored configuration that no longer parses is treated as none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/bmd.h"
#include "aisd/cluster.h"
#include "aisd/s3lc.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

/* --- ?lifecycle ----------------------------------------------------------------------- */

/* The bucket's configuration into c (none: c->n 0); AIS_ERR: no such
 * bucket. */
static int bucket_lc(s3_rq_t *r, s3lc_t *c)
{
	char *text = NULL;
	memset(c, 0, sizeof(*c));
	if (!r->node.cl)
		return s3_bucket_exists(r) ? AIS_OK : AIS_ERR; /* a standalone target keeps none */
	const bmd_t *b;
	cluster_read_lock(r->node.cl, NULL, &b);
	bool found = b && bmd_get(b, r->bucket.ptr, r->bucket.len);
	const char *doc = found ? bmd_doc(b, BMD_DOC_LIFECYCLE, r->bucket.ptr, r->bucket.len) : NULL;
	if (doc)
		text = arena_strndup(r->http->arena, doc, strlen(doc));
	cluster_read_unlock(r->node.cl);
	if (!found)
		return AIS_ERR;
	if (text && s3lc_parse_json(r->http->arena, text, strlen(text), c, NULL) != AIS_OK)
		memset(c, 0, sizeof(*c)); /* rule 3 */
	return AIS_OK;
}

static void lc_body(s3_rq_t *r, buf_t *body)
{
	s3lc_t *c = arena_alloc(r->http->arena, sizeof(*c));
	const char *code, *why;
	buf_t x = BUF_INIT;
	if (s3_lc_parse(r->http->arena, body->ptr ? body->ptr : "", body->len, c, &code, &why) != AIS_OK) {
		if (why)
			s3_error(r, code, "%s", why);
		else
			s3_error(r, code, NULL);
		return;
	}
	for (size_t i = 0; i < c->n; i++)
		if (c->rules[i].transitions) { /* rule 1 */
			s3_error(r, "NotImplemented",
				 "lifecycle transitions are not implemented: aisd has one storage class (STANDARD)");
			return;
		}
	s3lc_json(c, &x);
	if (x.len > BMD_S3LC_MAX) {
		buf_free(&x);
		s3_error(r, "InvalidRequest", "The lifecycle configuration is over %d bytes in its canonical form",
			 BMD_S3LC_MAX);
		return;
	}
	s3_bucket_set_doc(r, BMD_DOC_LIFECYCLE, arena_strndup(r->http->arena, x.ptr, x.len), 200);
	buf_free(&x);
}

int s3_bucket_lifecycle(s3_rq_t *r)
{
	s3lc_t *c = arena_alloc(r->http->arena, sizeof(*c));
	buf_t b = BUF_INIT;
	if (bucket_lc(r, c) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	switch (r->http->method) {
	case HTTP_GET:
		if (!c->n) {
			s3_error(r, "NoSuchLifecycleConfiguration", "The lifecycle configuration does not exist");
			return AIS_OK;
		}
		s3_lc_xml(c, &b);
		s3_send_xml(r, 200, &b);
		return AIS_OK;
	case HTTP_PUT:
		s3_read_body(r, lc_body);
		return AIS_OK;
	case HTTP_DELETE:
		s3_bucket_set_doc(r, BMD_DOC_LIFECYCLE, NULL, 204);
		return AIS_OK;
	default:
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
}

/* --- x-amz-expiration ----------------------------------------------------------------- */

void s3_lc_header(s3_rq_t *r, uint64_t size, int64_t start_ns, const s3_tags_t *tags)
{
	s3lc_t *c = arena_alloc(r->http->arena, sizeof(*c));
	if (r->vid.ptr || bucket_lc(r, c) != AIS_OK || !c->n)
		return;
	s3lc_tag_t *t = arena_alloc(r->http->arena, (tags->n + 1) * sizeof(*t));
	for (size_t i = 0; i < tags->n && i < ARRAY_SIZE(tags->t); i++)
		t[i] = (s3lc_tag_t){tags->t[i].key, tags->t[i].value};
	s3lc_obj_t o = {.key = r->key.ptr, .klen = r->key.len, .size = size, .tags = t,
			.ntags = MIN(tags->n, ARRAY_SIZE(tags->t))};
	const s3lc_rule_t *u;
	int64_t when;
	char date[64];
	if (!s3lc_expiry(c, &o, start_ns, &when, &u))
		return;
	time_http_date(when, date, sizeof(date));
	buf_t v = BUF_INIT;
	buf_addf(&v, "expiry-date=\"%s\", rule-id=\"", date);
	for (const char *p = u->id; *p; p++) /* a quoted-string: '"' and '\' escaped, controls dropped */
		if ((unsigned char)*p >= 0x20 && *p != 0x7f) {
			if (*p == '"' || *p == '\\')
				buf_addstr(&v, "\\");
			buf_add(&v, p, 1);
		}
	buf_addstr(&v, "\"");
	http_resp_header_sv(r->http, SV("x-amz-expiration"), sv_of(&v));
	buf_free(&v);
}

/* --- for the lifecycle job (s3.h) ----------------------------------------------------- */

size_t s3_lc_tags(arena_t *a, const char *custom, s3lc_tag_t **out)
{
	s3_meta_t *m = arena_alloc(a, sizeof(*m));
	s3_meta_decode(a, custom, m);
	*out = arena_alloc(a, (m->tags.n + 1) * sizeof(**out));
	for (size_t i = 0; i < m->tags.n; i++)
		(*out)[i] = (s3lc_tag_t){m->tags.t[i].key, m->tags.t[i].value};
	return m->tags.n;
}

uint64_t s3_lc_uploads(const conf_t *c, const char *bck, const s3lc_t *lc, int64_t now_ns, int64_t day_ns)
{
	s3_upload_t *v;
	size_t n;
	uint64_t removed = 0;
	if (s3_mpu_local_uploads(c, bck, (sv_t){"", 0}, &v, &n) != AIS_OK)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (s3lc_upload_due(lc, v[i].key, v[i].klen, v[i].initiated, now_ns, day_ns)) {
			s3_mpu_local_remove(c, v[i].id);
			removed++;
		}
		free(v[i].key);
	}
	free(v);
	return removed;
}
