/*
 * lifecycle.c - S3 bucket lifecycle configurations, the pure part: the
 * parser of a <LifecycleConfiguration> (PutBucketLifecycleConfiguration)
 * into the values of s3lc.h, with S3's checks (s3lc_check), and the XML
 * that GetBucketLifecycleConfiguration answers (lcop.c serves them).
 *
 * Guarantees: for any bytes the parser returns a configuration that
 * passed s3lc_check or an S3 error code, never both; the XML written of a
 * configuration parses back to the same values (transitions aside: they
 * are never kept, lcop.c rule 1).
 */
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

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

#define RULE "LifecycleConfiguration/Rule/" /* a rule's elements' paths start so */

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

/* A lifecycle Date: an ISO 8601 midnight UTC, "YYYY-MM-DD" with
 * "T00:00:00" (fractions of zeros) and "Z" or nothing after it, into Unix
 * seconds. Anything else, another time of day included, is S3's
 * InvalidArgument. */
static int lx_date(struct lx_st *c, sv_t t, int64_t *out)
{
	const char *s = t.ptr;
	size_t i = 10;
	struct tm tm;
	bool ok = t.len >= 10 && s[4] == '-' && s[7] == '-';
	for (size_t k = 0; ok && k < 10; k++)
		ok = k == 4 || k == 7 || (s[k] >= '0' && s[k] <= '9');
	if (ok && t.len > 10) {
		ok = t.len >= 19 && !memcmp(s + 10, "T00:00:00", 9);
		i = 19;
		if (ok && i < t.len && s[i] == '.')
			for (i++; i < t.len && s[i] == '0'; i++)
				;
		if (ok && i < t.len && (s[i] == 'Z' || s[i] == 'z'))
			i++;
		ok = ok && i == t.len;
	}
	if (ok) {
		memset(&tm, 0, sizeof(tm));
		tm.tm_year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0') - 1900;
		tm.tm_mon = (s[5] - '0') * 10 + (s[6] - '0') - 1;
		tm.tm_mday = (s[8] - '0') * 10 + (s[9] - '0');
		ok = tm.tm_year >= 70 && tm.tm_mon >= 0 && tm.tm_mon < 12 && tm.tm_mday >= 1 && tm.tm_mday <= 31;
	}
	if (ok) {
		int mday = tm.tm_mday;
		*out = (int64_t)timegm(&tm);
		ok = tm.tm_mday == mday; /* not normalized: a real day */
	}
	if (!ok)
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
	if (strncmp(path, RULE, sizeof(RULE) - 1)) {
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
	const char *p = path + sizeof(RULE) - 1;
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
				struct tm tm;
				time_gmtime(u->exp_date, &tm);
				s3_xml_elemf(b, "Date", "%04d-%02d-%02dT00:00:00.000Z", tm.tm_year + 1900, tm.tm_mon + 1,
					     tm.tm_mday);
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

