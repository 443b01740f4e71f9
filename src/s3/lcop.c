/*
 * lcop.c - S3 bucket lifecycle served (lifecycle.c parses and writes the
 * XML): ?lifecycle of a bucket (Put/Get/DeleteBucketLifecycleConfiguration,
 * by docop.c with this file's row s3_lc_ops;
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

/* --- ?lifecycle (served by docop.c) ------------------------------------------------------ */

static int lc_load(arena_t *a, const char *text, size_t n, void *c) { return s3lc_parse_json(a, text, n, c, NULL); }

static int lc_parse(s3_rq_t *r, const char *p, size_t n, void *c, const char **code, const char **why)
{
	s3lc_t *lc = c;
	if (s3_lc_parse(r->http->arena, p, n, lc, code, why) != AIS_OK)
		return AIS_ERR;
	for (size_t i = 0; i < lc->n; i++)
		if (lc->rules[i].transitions) { /* rule 1 */
			*code = "NotImplemented";
			*why = "lifecycle transitions are not implemented: aisd has one storage class (STANDARD)";
			return AIS_ERR;
		}
	return AIS_OK;
}

static void lc_canonical(const void *c, buf_t *b) { s3lc_json(c, b); }
static void lc_answer(const void *c, buf_t *b) { s3_lc_xml(c, b); }
static bool lc_none(const void *c) { return !((const s3lc_t *)c)->n; }

const s3_doc_ops_t s3_lc_ops = {
	.kind = BMD_DOC_LIFECYCLE,
	.size = sizeof(s3lc_t),
	.none_code = "NoSuchLifecycleConfiguration",
	.none_msg = "The lifecycle configuration does not exist",
	.load = lc_load,
	.parse = lc_parse,
	.canonical = lc_canonical,
	.answer = lc_answer,
	.none = lc_none,
};

/* --- x-amz-expiration ----------------------------------------------------------------- */

void s3_lc_header(s3_rq_t *r, uint64_t size, int64_t start_ns, const s3_tags_t *tags)
{
	s3lc_t *c = arena_alloc(r->http->arena, sizeof(*c));
	if (r->vid.ptr || s3_doc_of_bucket(r, &s3_lc_ops, c) != AIS_OK || !c->n)
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
