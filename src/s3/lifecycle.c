/*
 * lifecycle.c - S3 bucket lifecycle served: ?lifecycle of a bucket
 * (Put/Get/DeleteBucketLifecycleConfiguration: the XML parsed into the
 * values of s3lc.h, kept as their canonical JSON in the BMD beside the
 * bucket, bmd_doc BMD_DOC_LIFECYCLE, changed through the primary like its
 * CORS rules) and the x-amz-expiration header of an object's answers. The
 * expiration itself is the "lifecycle" job of the targets (src/lifecycle/).
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

/* --- the XML -------------------------------------------------------------------------- */

struct lx_st {
	arena_t *a;
	s3lc_t *out;
	size_t cap;
	s3lc_rule_t cur;
	bool status, root;
	s3lc_tag_t tag; /* the <Tag> being read */
	const char *code, *why;
};

#define R "LifecycleConfiguration/Rule/"

static int lx_fail(struct lx_st *c, const char *code, const char *why)
{
	c->code = code;
	c->why = why;
	return AIS_ERR;
}

/* A decimal integer (a sign allowed, so that "-1" is S3's InvalidArgument,
 * not a schema error). */
static int lx_int(struct lx_st *c, sv_t t, int64_t *out)
{
	uint64_t v;
	bool neg = t.len && t.ptr[0] == '-';
	if (num_parse_u64(t.ptr + neg, t.len - neg, 0, INT64_MAX / 2, &v) != AIS_OK)
		return lx_fail(c, "InvalidArgument", "a number is not an integer in range");
	*out = neg ? -(int64_t)v : (int64_t)v;
	return AIS_OK;
}

/* An ISO 8601 date (a bare YYYY-MM-DD is midnight) into Unix seconds,
 * which must be a midnight UTC. */
static int lx_date(struct lx_st *c, sv_t t, int64_t *out)
{
	char b[40];
	if (t.len == 10)
		snprintf(b, sizeof(b), "%.10sT00:00:00Z", t.ptr);
	else
		snprintf(b, sizeof(b), "%.*s", (int)MIN(t.len, sizeof(b) - 1), t.ptr);
	if (t.len >= sizeof(b) || s3_time_parse_iso(b, strlen(b), out) != AIS_OK || *out < 0 || *out % 86400)
		return lx_fail(c, "InvalidArgument", "'Date' must be at midnight GMT");
	return AIS_OK;
}

static s3lc_tag_t *tags_add(arena_t *a, s3lc_tag_t *v, size_t n, s3lc_tag_t t)
{
	s3lc_tag_t *w = arena_alloc(a, (n + 1) * sizeof(*w));
	if (n)
		memcpy(w, v, n * sizeof(*w));
	w[n] = t;
	return w;
}

/* The conditions an element of a Filter (or of its And) sets. */
static int lx_cond(struct lx_st *c, s3lc_cond_t *f, const char *rest, sv_t t)
{
	if (!strcmp(rest, "Prefix")) {
		f->prefix = arena_strndup(c->a, t.ptr, t.len);
	} else if (!strcmp(rest, "ObjectSizeGreaterThan")) {
		return lx_int(c, t, &f->gt);
	} else if (!strcmp(rest, "ObjectSizeLessThan")) {
		return lx_int(c, t, &f->lt);
	} else if (!strcmp(rest, "Tag/Key")) {
		c->tag.key = arena_strndup(c->a, t.ptr, t.len);
	} else if (!strcmp(rest, "Tag/Value")) {
		c->tag.value = arena_strndup(c->a, t.ptr, t.len);
	} else if (!strcmp(rest, "Tag")) {
		if (!c->tag.key)
			return AIS_ERR;
		if (!c->tag.value)
			c->tag.value = arena_strndup(c->a, "", 0);
		if (f->ntags >= S3LC_TAGS_MAX)
			return lx_fail(c, "InvalidArgument", "A filter has at most 50 tags");
		f->tags = tags_add(c->a, f->tags, f->ntags++, c->tag);
		memset(&c->tag, 0, sizeof(c->tag));
	} else {
		return AIS_ERR;
	}
	return AIS_OK;
}

static int lx_cb(void *arg, const char *path, const char *text, size_t len)
{
	struct lx_st *c = arg;
	s3lc_rule_t *u = &c->cur;
	sv_t t = {text, len}; /* keys and prefixes as given: spaces count */
	sv_t tt = sv_trim(t);
	int64_t x;

	if (!strcmp(path, "LifecycleConfiguration")) {
		c->root = true;
		return AIS_OK;
	}
	if (strncmp(path, R, sizeof(R) - 1)) {
		if (!strcmp(path, "LifecycleConfiguration/Rule")) {
			if (!c->status)
				return AIS_ERR; /* Status is required */
			if (c->out->n == S3LC_RULES_MAX)
				return lx_fail(c, "InvalidRequest", "A lifecycle configuration has at most 1000 rules");
			if (c->out->n == c->cap) {
				c->cap = c->cap ? 2 * c->cap : 8;
				s3lc_rule_t *v = arena_alloc(c->a, c->cap * sizeof(*v));
				if (c->out->n)
					memcpy(v, c->out->rules, c->out->n * sizeof(*v));
				c->out->rules = v;
			}
			c->out->rules[c->out->n++] = *u;
			s3lc_rule_init(u);
			c->status = false;
			return AIS_OK;
		}
		return AIS_ERR;
	}
	const char *p = path + sizeof(R) - 1;
	if (!strcmp(p, "ID")) {
		u->id = arena_strndup(c->a, t.ptr, t.len);
	} else if (!strcmp(p, "Status")) {
		if (!sv_eqstr(tt, "Enabled") && !sv_eqstr(tt, "Disabled"))
			return AIS_ERR; /* MalformedXML, as S3 */
		u->enabled = sv_eqstr(tt, "Enabled");
		c->status = true;
	} else if (!strcmp(p, "Prefix")) {
		u->prefix = arena_strndup(c->a, t.ptr, t.len);
	} else if (!strcmp(p, "Filter")) {
		u->filter = true;
	} else if (!strcmp(p, "Filter/And")) {
		u->has_and = true;
	} else if (!strncmp(p, "Filter/And/", 11)) {
		return lx_cond(c, &u->a, p + 11, t);
	} else if (!strncmp(p, "Filter/", 7)) {
		if (!strcmp(p + 7, "Tag") && u->f.ntags)
			return AIS_ERR; /* several tags need And */
		return lx_cond(c, &u->f, p + 7, t);
	} else if (!strcmp(p, "Expiration/Days")) {
		return lx_int(c, tt, &u->exp_days);
	} else if (!strcmp(p, "Expiration/Date")) {
		return lx_date(c, tt, &u->exp_date);
	} else if (!strcmp(p, "Expiration/ExpiredObjectDeleteMarker")) {
		if (!sv_eqstr(tt, "true") && !sv_eqstr(tt, "false"))
			return AIS_ERR;
		u->exp_dm = sv_eqstr(tt, "true");
	} else if (!strcmp(p, "Expiration")) {
		if (u->exp_days == -1 && u->exp_date == -1 && u->exp_dm == -1)
			return AIS_ERR; /* an empty Expiration */
	} else if (!strcmp(p, "NoncurrentVersionExpiration/NoncurrentDays")) {
		return lx_int(c, tt, &u->nc_days);
	} else if (!strcmp(p, "NoncurrentVersionExpiration/NewerNoncurrentVersions")) {
		return lx_int(c, tt, &u->nc_newer);
	} else if (!strcmp(p, "NoncurrentVersionExpiration")) {
		if (u->nc_days == -1)
			return AIS_ERR;
	} else if (!strcmp(p, "AbortIncompleteMultipartUpload/DaysAfterInitiation")) {
		return lx_int(c, tt, &u->mpu_days);
	} else if (!strcmp(p, "AbortIncompleteMultipartUpload")) {
		if (u->mpu_days == -1)
			return AIS_ERR;
	} else if (!strcmp(p, "Transition/Days") || !strcmp(p, "NoncurrentVersionTransition/NoncurrentDays") ||
		   !strcmp(p, "NoncurrentVersionTransition/NewerNoncurrentVersions")) {
		if (lx_int(c, tt, &x) != AIS_OK || x < 0)
			return lx_fail(c, "InvalidArgument", "'Days' for a Transition must be a non-negative integer");
	} else if (!strcmp(p, "Transition/Date")) {
		return lx_date(c, tt, &x);
	} else if (!strcmp(p, "Transition/StorageClass") || !strcmp(p, "NoncurrentVersionTransition/StorageClass")) {
		if (!tt.len)
			return AIS_ERR;
	} else if (!strcmp(p, "Transition") || !strcmp(p, "NoncurrentVersionTransition")) {
		u->transitions++;
	} else {
		return AIS_ERR; /* an element S3's schema does not have */
	}
	return AIS_OK;
}

int s3_lc_parse(arena_t *a, const char *p, size_t n, s3lc_t *out, const char **code, const char **why)
{
	struct lx_st c = {.a = a, .out = out};
	memset(out, 0, sizeof(*out));
	s3lc_rule_init(&c.cur);
	*code = "MalformedXML";
	*why = NULL;
	if (s3_xml_parse(p, n, lx_cb, &c) != AIS_OK || !c.root) {
		if (c.code) {
			*code = c.code;
			*why = c.why;
		}
		return AIS_ERR;
	}
	if ((*code = s3lc_check(a, out, why)))
		return AIS_ERR;
	return AIS_OK;
}

static void xml_cond(buf_t *b, const s3lc_cond_t *f)
{
	if (f->prefix)
		s3_xml_elemstr(b, "Prefix", f->prefix);
	for (size_t i = 0; i < f->ntags; i++) {
		s3_xml_open(b, "Tag");
		s3_xml_elemstr(b, "Key", f->tags[i].key);
		s3_xml_elemstr(b, "Value", f->tags[i].value);
		s3_xml_close(b, "Tag");
	}
	if (f->gt >= 0)
		s3_xml_elemf(b, "ObjectSizeGreaterThan", "%lld", (long long)f->gt);
	if (f->lt >= 0)
		s3_xml_elemf(b, "ObjectSizeLessThan", "%lld", (long long)f->lt);
}

void s3_lc_xml(const s3lc_t *c, buf_t *b)
{
	char date[40];
	s3_xml_head(b, "LifecycleConfiguration");
	for (size_t i = 0; i < c->n; i++) {
		const s3lc_rule_t *u = &c->rules[i];
		s3_xml_open(b, "Rule");
		s3_xml_elemstr(b, "ID", u->id);
		if (u->prefix)
			s3_xml_elemstr(b, "Prefix", u->prefix);
		if (u->filter) {
			s3_xml_open(b, "Filter");
			xml_cond(b, &u->f);
			if (u->has_and) {
				s3_xml_open(b, "And");
				xml_cond(b, &u->a);
				s3_xml_close(b, "And");
			}
			s3_xml_close(b, "Filter");
		}
		s3_xml_elemstr(b, "Status", u->enabled ? "Enabled" : "Disabled");
		if (u->exp_days != -1 || u->exp_date != -1 || u->exp_dm != -1) {
			s3_xml_open(b, "Expiration");
			if (u->exp_days != -1)
				s3_xml_elemf(b, "Days", "%lld", (long long)u->exp_days);
			if (u->exp_date != -1) {
				s3_time_iso(u->exp_date * 1000000000, date, sizeof(date));
				s3_xml_elemstr(b, "Date", date);
			}
			if (u->exp_dm != -1)
				s3_xml_elemstr(b, "ExpiredObjectDeleteMarker", u->exp_dm ? "true" : "false");
			s3_xml_close(b, "Expiration");
		}
		if (u->nc_days != -1) {
			s3_xml_open(b, "NoncurrentVersionExpiration");
			s3_xml_elemf(b, "NoncurrentDays", "%lld", (long long)u->nc_days);
			if (u->nc_newer != -1)
				s3_xml_elemf(b, "NewerNoncurrentVersions", "%lld", (long long)u->nc_newer);
			s3_xml_close(b, "NoncurrentVersionExpiration");
		}
		if (u->mpu_days != -1) {
			s3_xml_open(b, "AbortIncompleteMultipartUpload");
			s3_xml_elemf(b, "DaysAfterInitiation", "%lld", (long long)u->mpu_days);
			s3_xml_close(b, "AbortIncompleteMultipartUpload");
		}
		s3_xml_close(b, "Rule");
	}
	s3_xml_close(b, "LifecycleConfiguration");
}

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
