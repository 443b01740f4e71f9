/*
 * logrec.c - S3 bucket logging, the pure records: one request as a line
 * of AWS's server access log format (Standard) or Ceph's Journal format,
 * the operation names (REST.GET.OBJECT, ...), and the names of delivered
 * log objects (SimplePrefix, PartitionedPrefix).
 *
 * Rules:
 *  1. A record is one line that splits into exactly its fields (26
 *     Standard, 8 Journal) by spaces, with "..." and [...] as single
 *     fields: no unquoted field holds a space, quote, bracket or control
 *     byte (keys are percent-encoded with '/' kept, "-" for empty), and a
 *     quoted field has '"', '[', ']', '\' and control bytes
 *     percent-encoded.
 *  2. Times are UTC, as AWS writes them: [06/Feb/2019:00:00:38 +0000].
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "aisd/buf.h"
#include "aisd/util.h"
#include "s3log.h"
#include "aisd/banned.h"

static void dash_or(buf_t *b, const char *s)
{
	buf_addstr(b, s && *s ? s : "-");
	buf_addch(b, ' ');
}

/* An unquoted token: anything outside 0x21..0x7e and '"', '[', ']', '%'
 * percent-encoded. */
static void token(buf_t *b, sv_t s, bool last)
{
	if (!s.len)
		buf_addch(b, '-');
	for (size_t i = 0; i < s.len; i++) {
		unsigned char ch = (unsigned char)s.ptr[i];
		if (ch <= 0x20 || ch >= 0x7f || ch == '"' || ch == '[' || ch == ']' || ch == '\\' ||
		    ch == '%')
			buf_addf(b, "%%%02X", ch);
		else
			buf_addch(b, (char)ch);
	}
	if (!last)
		buf_addch(b, ' ');
}

/* A quoted field: "-" when empty. */
static void quoted(buf_t *b, sv_t s)
{
	buf_addch(b, '"');
	if (!s.len)
		buf_addch(b, '-');
	for (size_t i = 0; i < s.len; i++) {
		unsigned char ch = (unsigned char)s.ptr[i];
		if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '[' || ch == ']' || ch == '\\')
			buf_addf(b, "%%%02X", ch);
		else
			buf_addch(b, (char)ch);
	}
	buf_add(b, "\" ", 2);
}

/* A key: percent-encoded as a URL path ('/' kept), "-" when none. */
static void key(buf_t *b, sv_t k)
{
	if (!k.len) {
		buf_add(b, "- ", 2);
		return;
	}
	buf_add_pct(b, k, true);
	buf_addch(b, ' ');
}

static void when(buf_t *b, int64_t ns)
{
	static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
	time_t t = (time_t)(ns / 1000000000LL);
	struct tm tm;
	gmtime_r(&t, &tm);
	buf_addf(b, "[%02d/%s/%04d:%02d:%02d:%02d +0000] ", tm.tm_mday, mon[tm.tm_mon % 12],
	         tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void number(buf_t *b, int64_t v)
{
	if (v < 0)
		buf_addch(b, '-');
	else
		buf_addi64(b, v);
	buf_addch(b, ' ');
}

void s3log_rec_format(const s3log_rec_t *r, s3log_type_t type, buf_t *out)
{
	token(out, sv_from(r->owner ? r->owner : ""), false);
	token(out, r->bucket, false);
	when(out, r->time_ns);
	if (type == S3LOG_JOURNAL) {
		dash_or(out, r->operation);
		key(out, r->key);
		number(out, r->object_size);
		token(out, r->version_id, false);
		token(out, r->etag, true);
		buf_addch(out, '\n');
		return;
	}
	token(out, sv_from(r->remote_ip ? r->remote_ip : ""), false);
	token(out, sv_from(r->requester ? r->requester : ""), false);
	token(out, sv_from(r->request_id ? r->request_id : ""), false);
	dash_or(out, r->operation);
	key(out, r->key);
	{ /* "METHOD TARGET HTTP/1.1" */
		buf_t line = BUF_INIT;
		buf_addsv(&line, r->method);
		buf_addch(&line, ' ');
		buf_addsv(&line, r->target);
		buf_addstr(&line, " HTTP/1.1");
		quoted(out, sv_of(&line));
		buf_free(&line);
	}
	number(out, r->status);
	dash_or(out, r->error_code);
	number(out, r->bytes_sent ? (int64_t)r->bytes_sent : -1);
	number(out, r->object_size);
	number(out, r->total_ms);
	number(out, r->turnaround_ms);
	quoted(out, r->referer);
	quoted(out, r->user_agent);
	token(out, r->version_id, false);
	dash_or(out, r->host_id);
	dash_or(out, r->sig_version);
	dash_or(out, r->cipher);
	dash_or(out, r->auth_type);
	token(out, r->host, false);
	dash_or(out, r->tls_version);
	buf_add(out, "- ", 2); /* access point ARN: none here */
	buf_addstr(out, r->acl_required ? "Yes" : "-");
	buf_addch(out, '\n');
}

/* Bucket sub-resources and the names their operations log, in the
 * order they are tested (the first one the query has wins). */
static const struct {
	const char *sub, *name;
} bucket_subs[] =
        {
                {"acl", "ACL"},
                {"versioning", "VERSIONING"},
                {"logging", "LOGGING_STATUS"},
                {"policyStatus", "BUCKETPOLICYSTATUS"},
                {"policy", "BUCKETPOLICY"},
                {"cors", "CORS"},
                {"tagging", "TAGGING"},
                {"location", "LOCATION"},
                {"uploads", "UPLOADS"},
                {"versions", "BUCKETVERSIONS"},
                {"delete", "MULTI_OBJECT_DELETE"},
                {"lifecycle", "LIFECYCLE"},
                {"object-lock", "OBJECT_LOCK_CONFIGURATION"},
                {"encryption", "ENCRYPTION"},
                {"publicAccessBlock", "PUBLIC_ACCESS_BLOCK"},
                {"notification", "NOTIFICATION"},
                {"website", "WEBSITE"},
                {"replication", "REPLICATION"},
                {"requestPayment", "REQUEST_PAYMENT"},
                {"ownershipControls", "OWNERSHIP_CONTROLS"},
                {"accelerate", "ACCELERATE"},
},
  object_subs[] = {
          {"acl", "ACL"},
          {"tagging", "OBJECT_TAGGING"},
          {"retention", "RETENTION"},
          {"legal-hold", "LEGAL_HOLD"},
          {"attributes", "OBJECT_ATTRIBUTES"},
          {"restore", "RESTORE"},
          {"select", "SELECT"},
};

static bool q_has(sv_t q, const char *k)
{
	size_t kl = strlen(k);
	const char *p = q.ptr, *end = q.ptr + q.len;
	while (p && p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;
		if ((size_t)(e - p) >= kl && !memcmp(p, k, kl) && ((size_t)(e - p) == kl || p[kl] == '='))
			return true;
		p = amp ? amp + 1 : NULL;
	}
	return false;
}

/* REST.<METHOD>.<NAME> into out. */
static const char *op_name(const char *method, const char *name, char *out, size_t outsz)
{
	snprintf(out, outsz, "REST.%s.%s", method, name);
	return out;
}

const char *s3log_operation(const char *method, bool has_key, sv_t query, bool copy, char *out, size_t outsz)
{
	if (!has_key) {
		for (size_t i = 0; i < ARRAY_SIZE(bucket_subs); i++)
			if (q_has(query, bucket_subs[i].sub))
				return op_name(method, bucket_subs[i].name, out, outsz);
		return op_name(method, "BUCKET", out, outsz);
	}
	for (size_t i = 0; i < ARRAY_SIZE(object_subs); i++)
		if (q_has(query, object_subs[i].sub))
			return op_name(method, object_subs[i].name, out, outsz);
	if (q_has(query, "uploads"))
		return op_name(method, "UPLOADS", out, outsz);
	if (q_has(query, "uploadId"))
		return op_name(method, !strcmp(method, "PUT") ? "PART" : "UPLOAD", out, outsz);
	(void)copy; /* a copy is logged as the PUT of its destination, as Ceph does */
	return op_name(method, "OBJECT", out, outsz);
}

bool s3log_journal_op(const char *op, int status)
{
	if (status < 200 || status > 299)
		return false;
	return !strcmp(op, "REST.PUT.OBJECT") || !strcmp(op, "REST.DELETE.OBJECT") ||
	       !strcmp(op, "REST.POST.UPLOAD") || !strcmp(op, "REST.POST.DELETE_MULTI_OBJECT") ||
	       !strcmp(op, "REST.PUT.OBJECT_TAGGING") || !strcmp(op, "REST.DELETE.OBJECT_TAGGING") ||
	       !strcmp(op, "REST.PUT.ACL") || !strcmp(op, "REST.PUT.RETENTION") ||
	       !strcmp(op, "REST.PUT.LEGAL_HOLD");
}

void s3log_object_name(const s3log_cfg_t *c, const char *owner, const char *region, sv_t bucket,
                       int64_t now_s, int64_t event_s, const char *uniq, buf_t *out)
{
	struct tm tm, pt;
	time_t t = (time_t)now_s, et = (time_t)(c->event_time && event_s > 0 ? event_s : now_s);
	gmtime_r(&t, &tm);
	gmtime_r(&et, &pt);
	buf_addsv(out, c->prefix);
	if (c->partitioned)
		buf_addf(out, "%s/%s/%.*s/%04d/%02d/%02d/", owner && *owner ? owner : "-",
		         region && *region ? region : "default", (int)bucket.len, bucket.ptr,
		         pt.tm_year + 1900, pt.tm_mon + 1, pt.tm_mday);
	buf_addf(out, "%04d-%02d-%02d-%02d-%02d-%02d-%s", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
	         tm.tm_hour, tm.tm_min, tm.tm_sec, uniq);
}
