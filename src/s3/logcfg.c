/*
 * logcfg.c - S3 bucket logging, the pure configuration: the parser of a
 * PutBucketLogging body (<BucketLoggingStatus>, with AWS's fields and
 * Ceph's extensions LoggingType, ObjectRollTime, RecordsBatchSize and
 * Filter), the document GetBucketLogging answers, and the form the BMD
 * keeps (BMD_DOC_LOGGING).
 *
 * Rules:
 *  1. A body that parses says exactly what is served: an element S3's
 *     schema does not have is MalformedXML, a value out of its set
 *     (LoggingType, PartitionDateSource) MalformedXML, a feature not
 *     built (TargetGrants, filter rules other than prefix/suffix)
 *     NotImplemented, never dropped.
 *  2. The stored form is one line of printable ASCII that parses back to
 *     the same configuration (s3log_cfg_load(store(c)) == c), or the
 *     bucket's logging is treated as off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "s3log.h"
#include "aisd/banned.h"

struct lc_st {
	arena_t *a;
	s3log_cfg_t *out;
	bool root, has_target, has_prefix, has_format;
	sv_t rule_name, rule_value;
	enum s3log_verdict v;
	const char *why;
};

#define LE "BucketLoggingStatus/LoggingEnabled/"

static int lc_fail(struct lc_st *c, enum s3log_verdict v, const char *why)
{
	c->v = v;
	c->why = why;
	return AIS_ERR;
}

static bool printable(sv_t t)
{
	for (size_t i = 0; i < t.len; i++)
		if (t.ptr[i] < 0x20 || t.ptr[i] > 0x7e)
			return false;
	return true;
}

static sv_t keep(struct lc_st *c, sv_t t)
{
	return (sv_t){arena_strndup(c->a, t.ptr, t.len), t.len};
}

static int num(struct lc_st *c, sv_t t, uint64_t max, uint32_t *out)
{
	uint64_t v;
	if (num_parse_u64(t.ptr, t.len, 0, max, &v) != AIS_OK)
		return lc_fail(c, S3LOG_INVALID, "a number out of range in the logging configuration");
	*out = (uint32_t)v;
	return AIS_OK;
}

static int lc_cb(void *arg, const char *path, const char *text, size_t len)
{
	struct lc_st *c = arg;
	s3log_cfg_t *o = c->out;
	sv_t t = sv_trim((sv_t){text, len});

	if (!strncmp(path, LE, strlen(LE)) && !printable(t))
		return lc_fail(c, S3LOG_INVALID,
		               "only printable ASCII is supported in a logging configuration");
	if (!strcmp(path, "BucketLoggingStatus")) {
		c->root = true;
	} else if (!strcmp(path, "BucketLoggingStatus/LoggingEnabled")) {
		if (!c->has_target || !c->has_prefix)
			return lc_fail(c, S3LOG_MALFORMED, NULL); /* both are required, as S3 */
		o->enabled = true;
	} else if (!strcmp(path, LE "TargetBucket")) {
		if (!t.len)
			return lc_fail(c, S3LOG_INVALID, "TargetBucket is empty");
		o->target = keep(c, t), c->has_target = true;
	} else if (!strcmp(path, LE "TargetPrefix")) {
		o->prefix = keep(c, (sv_t){text, len}),
		c->has_prefix = true; /* as given: spaces are a prefix's */
		if (!printable(o->prefix))
			return lc_fail(c, S3LOG_INVALID,
			               "only printable ASCII is supported in a logging configuration");
	} else if (!strncmp(path, LE "TargetGrants", strlen(LE "TargetGrants"))) {
		return lc_fail(c, S3LOG_NYI, "TargetGrants (grants on delivered log objects)");
	} else if (!strcmp(path, LE "TargetObjectKeyFormat/SimplePrefix")) {
		o->partitioned = false, c->has_format = true;
	} else if (!strcmp(path, LE "TargetObjectKeyFormat/PartitionedPrefix/PartitionDateSource")) {
		if (sv_eqstr(t, "EventTime"))
			o->event_time = true;
		else if (sv_eqstr(t, "DeliveryTime"))
			o->event_time = false;
		else
			return lc_fail(c, S3LOG_MALFORMED, NULL);
	} else if (!strcmp(path, LE "TargetObjectKeyFormat/PartitionedPrefix")) {
		o->partitioned = true, c->has_format = true;
	} else if (!strcmp(path, LE "TargetObjectKeyFormat")) {
		/* (empty: SimplePrefix) */
	} else if (!strcmp(path, LE "LoggingType")) {
		if (sv_eqstr(t, "Standard"))
			o->type = S3LOG_STANDARD;
		else if (sv_eqstr(t, "Journal"))
			o->type = S3LOG_JOURNAL;
		else
			return lc_fail(c, S3LOG_MALFORMED, NULL);
	} else if (!strcmp(path, LE "ObjectRollTime")) {
		return num(c, t, S3LOG_ROLL_MAX, &o->roll_s);
	} else if (!strcmp(path, LE "RecordsBatchSize")) {
		return num(c, t, S3LOG_BATCH_MAX, &o->batch);
	} else if (!strcmp(path, LE "Filter/Key/FilterRule/Name") ||
	           !strcmp(path, LE "Filter/S3Key/FilterRule/Name")) {
		c->rule_name = keep(c, t);
	} else if (!strcmp(path, LE "Filter/Key/FilterRule/Value") ||
	           !strcmp(path, LE "Filter/S3Key/FilterRule/Value")) {
		c->rule_value = keep(c, t);
	} else if (!strcmp(path, LE "Filter/Key/FilterRule") || !strcmp(path, LE "Filter/S3Key/FilterRule")) {
		if (!strncasecmp(c->rule_name.ptr ? c->rule_name.ptr : "", "prefix", 7) &&
		    c->rule_name.len == 6)
			o->fprefix = c->rule_value;
		else if (!strncasecmp(c->rule_name.ptr ? c->rule_name.ptr : "", "suffix", 7) &&
		         c->rule_name.len == 6)
			o->fsuffix = c->rule_value;
		else
			return lc_fail(c, S3LOG_NYI, "filter rules other than prefix and suffix");
		c->rule_name = c->rule_value = (sv_t){NULL, 0};
	} else if (!strcmp(path, LE "Filter/Key") || !strcmp(path, LE "Filter/S3Key") ||
	           !strcmp(path, LE "Filter")) {
		/* (containers) */
	} else {
		return lc_fail(c, S3LOG_MALFORMED, NULL); /* an element S3's schema does not have */
	}
	return AIS_OK;
}

enum s3log_verdict s3log_cfg_parse(arena_t *a, const char *p, size_t n, s3log_cfg_t *out, const char **why)
{
	struct lc_st c = {.a = a, .out = out, .v = S3LOG_MALFORMED};
	memset(out, 0, sizeof(*out));
	*why = NULL;
	if (n > S3LOG_XML_MAX)
		return S3LOG_MALFORMED;
	if (s3_xml_parse(p, n, lc_cb, &c) != AIS_OK || !c.root) {
		*why = c.why;
		memset(out, 0, sizeof(*out));
		return c.v == S3LOG_OK ? S3LOG_MALFORMED : c.v;
	}
	if (!out->enabled)
		memset(out, 0, sizeof(*out));
	return S3LOG_OK;
}

static void cfg_xml(const s3log_cfg_t *c, uint32_t roll_default, buf_t *b)
{
	buf_addstr(b, "<BucketLoggingStatus xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	if (c->enabled) {
		s3_xml_open(b, "LoggingEnabled");
		s3_xml_elem(b, "TargetBucket", c->target.ptr, c->target.len);
		s3_xml_elem(b, "TargetPrefix", c->prefix.ptr ? c->prefix.ptr : "", c->prefix.len);
		s3_xml_open(b, "TargetObjectKeyFormat");
		if (c->partitioned)
			buf_addf(b,
			         "<PartitionedPrefix><PartitionDateSource>%s</PartitionDateSource></"
			         "PartitionedPrefix>",
			         c->event_time ? "EventTime" : "DeliveryTime");
		else
			buf_addstr(b, "<SimplePrefix></SimplePrefix>");
		s3_xml_close(b, "TargetObjectKeyFormat");
		if (c->roll_s || roll_default)
			s3_xml_elemf(b, "ObjectRollTime", "%u", c->roll_s ? c->roll_s : roll_default);
		s3_xml_elemstr(b, "LoggingType", c->type == S3LOG_JOURNAL ? "Journal" : "Standard");
		s3_xml_elemf(b, "RecordsBatchSize", "%u", c->batch);
		if (c->fprefix.len || c->fsuffix.len) {
			buf_addstr(b, "<Filter><Key>");
			if (c->fprefix.len) {
				buf_addstr(b, "<FilterRule><Name>prefix</Name>");
				s3_xml_elem(b, "Value", c->fprefix.ptr, c->fprefix.len);
				buf_addstr(b, "</FilterRule>");
			}
			if (c->fsuffix.len) {
				buf_addstr(b, "<FilterRule><Name>suffix</Name>");
				s3_xml_elem(b, "Value", c->fsuffix.ptr, c->fsuffix.len);
				buf_addstr(b, "</FilterRule>");
			}
			buf_addstr(b, "</Key></Filter>");
		}
		s3_xml_close(b, "LoggingEnabled");
	}
	s3_xml_close(b, "BucketLoggingStatus");
}

void s3log_cfg_xml(const s3log_cfg_t *c, uint32_t roll_default, buf_t *b)
{
	cfg_xml(c, roll_default, b);
}

void s3log_cfg_store(const s3log_cfg_t *c, buf_t *b)
{
	buf_addf(b, "%lld ", (long long)c->mtime_s);
	cfg_xml(c, 0, b);
}

int s3log_cfg_load(arena_t *a, const char *text, size_t n, s3log_cfg_t *out)
{
	const char *sp = text ? memchr(text, ' ', n) : NULL;
	uint64_t mt;
	const char *why;
	memset(out, 0, sizeof(*out));
	if (!sp || num_parse_u64(text, (size_t)(sp - text), 0, INT64_MAX, &mt) != AIS_OK)
		return AIS_ERR;
	sp++;
	if (s3log_cfg_parse(a, sp, n - (size_t)(sp - text), out, &why) != S3LOG_OK)
		return AIS_ERR;
	out->mtime_s = (int64_t)mt;
	return AIS_OK;
}

static bool sv_same(sv_t x, sv_t y)
{
	return x.len == y.len && (!x.len || !memcmp(x.ptr, y.ptr, x.len));
}

bool s3log_cfg_same(const s3log_cfg_t *x, const s3log_cfg_t *y)
{
	return x->enabled == y->enabled && sv_same(x->target, y->target) && sv_same(x->prefix, y->prefix) &&
	       x->partitioned == y->partitioned && x->event_time == y->event_time && x->type == y->type &&
	       x->roll_s == y->roll_s && x->batch == y->batch && sv_same(x->fprefix, y->fprefix) &&
	       sv_same(x->fsuffix, y->fsuffix);
}

bool s3log_filter_pass(const s3log_cfg_t *c, sv_t key)
{
	if (c->fprefix.len && !sv_startswith(key, c->fprefix.ptr ? c->fprefix.ptr : ""))
		return false;
	if (c->fsuffix.len && (key.len < c->fsuffix.len ||
	                       memcmp(key.ptr + key.len - c->fsuffix.len, c->fsuffix.ptr, c->fsuffix.len)))
		return false;
	return true;
}
