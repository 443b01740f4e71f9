/*
 * policy.c - S3 bucket policies (s3policy.h): the JSON document parsed
 * (jansson, duplicate keys refused) into statements held in an arena, and
 * their evaluation for one request.
 *
 * Guarantees: for any bytes s3pol_parse returns a policy or a one-sentence
 * error, never both; a parsed policy has at least one statement, each with
 * an effect, a principal, an action and a resource set (each non-empty),
 * and conditions of known operators with at least one value each (IP
 * ranges already parsed). Evaluation reads only the policy and the request
 * and takes time bounded by their sizes (the glob match is quadratic at
 * worst, on strings of at most S3POL_MAX and a key's length).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aisd/s3policy.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define ARN_S3 "arn:aws:s3:::"
#define SERVICE_TAG "\001service:" /* a Service principal in a statement's list */

enum op_kind { OP_STR, OP_STR_NOCASE, OP_LIKE, OP_NUM_EQ, OP_NUM_LT, OP_NUM_LE, OP_NUM_GT, OP_NUM_GE, OP_BOOL, OP_IP, OP_NULL };

static const struct {
	const char *name;
	enum op_kind kind;
	bool neg;
} ops[] = {
	{"StringEquals", OP_STR, false},
	{"StringNotEquals", OP_STR, true},
	{"StringEqualsIgnoreCase", OP_STR_NOCASE, false},
	{"StringNotEqualsIgnoreCase", OP_STR_NOCASE, true},
	{"StringLike", OP_LIKE, false},
	{"StringNotLike", OP_LIKE, true},
	{"NumericEquals", OP_NUM_EQ, false},
	{"NumericNotEquals", OP_NUM_EQ, true},
	{"NumericLessThan", OP_NUM_LT, false},
	{"NumericLessThanEquals", OP_NUM_LE, false},
	{"NumericGreaterThan", OP_NUM_GT, false},
	{"NumericGreaterThanEquals", OP_NUM_GE, false},
	{"Bool", OP_BOOL, false},
	{"IpAddress", OP_IP, false},
	{"NotIpAddress", OP_IP, true},
	{"ArnEquals", OP_STR, false},
	{"ArnLike", OP_LIKE, false},
	{"ArnNotEquals", OP_STR, true},
	{"ArnNotLike", OP_LIKE, true},
	{"Null", OP_NULL, false},
};

/* An IP range: 16 bytes (IPv4 as v4-mapped IPv6) and a prefix length. */
typedef struct ipnet {
	unsigned char a[16];
	unsigned bits;
} ipnet_t;

typedef struct cond {
	enum op_kind kind;
	bool neg, if_exists;
	const char *key;
	size_t n;
	sv_t *vals;
	double *nums; /* OP_NUM_* */
	ipnet_t *nets; /* OP_IP */
} cond_t;

typedef struct list {
	size_t n;
	sv_t *v;
} list_t;

typedef struct stmt {
	bool deny;
	bool not_principal, not_action, not_resource;
	list_t principal; /* "*" is everyone */
	list_t action, resource;
	size_t ncond;
	cond_t *cond;
} stmt_t;

struct s3pol {
	size_t n;
	stmt_t *st;
};

struct pctx {
	arena_t *a;
	const char *bucket;
	buf_t *err;
	size_t si; /* the statement being parsed, for messages */
};

static int fail(struct pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct pctx *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	buf_reset(c->err);
	buf_addstr(c->err, msg);
	return AIS_ERR;
}

bool s3pol_glob(sv_t pat, sv_t s, bool nocase)
{
	size_t p = 0, i = 0, star = SIZE_MAX, mark = 0;
	while (i < s.len) {
		if (p < pat.len && pat.ptr[p] == '*') {
			star = p++;
			mark = i;
		} else if (p < pat.len && (pat.ptr[p] == '?' || pat.ptr[p] == s.ptr[i] ||
					   (nocase && (unsigned char)pat.ptr[p] < 0x80 &&
					    tolower((unsigned char)pat.ptr[p]) == tolower((unsigned char)s.ptr[i])))) {
			p++, i++;
		} else if (star != SIZE_MAX) {
			p = star + 1;
			i = ++mark;
		} else {
			return false;
		}
	}
	while (p < pat.len && pat.ptr[p] == '*')
		p++;
	return p == pat.len;
}

/* A string or an array of strings (non-empty) into *out. */
static int str_list(struct pctx *c, json_t *v, const char *what, list_t *out)
{
	size_t n = json_is_array(v) ? json_array_size(v) : 1;
	if (!json_is_string(v) && !(json_is_array(v) && n))
		return fail(c, "Statement %zu: %s must be a string or a non-empty array of strings", c->si, what);
	out->n = n;
	out->v = arena_alloc(c->a, n * sizeof(sv_t));
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
		if (!json_is_string(e))
			return fail(c, "Statement %zu: %s must be a string or a non-empty array of strings", c->si,
				    what);
		out->v[i] = (sv_t){arena_strndup(c->a, json_string_value(e), json_string_length(e)),
				   json_string_length(e)};
	}
	return AIS_OK;
}

static int principal_parse(struct pctx *c, json_t *v, list_t *out)
{
	const char *k;
	json_t *x;
	size_t total = 0;
	if (json_is_string(v)) {
		if (strcmp(json_string_value(v), "*"))
			return fail(c, "Statement %zu: Principal must be \"*\" or an object ({\"AWS\": ...})", c->si);
		return str_list(c, v, "Principal", out);
	}
	if (!json_is_object(v) || !json_object_size(v))
		return fail(c, "Statement %zu: Principal must be \"*\" or an object ({\"AWS\": ...})", c->si);
	json_object_foreach(v, k, x) {
		if (strcmp(k, "AWS") && strcmp(k, "CanonicalUser") && strcmp(k, "Service"))
			return fail(c, "Statement %zu: unsupported principal type \"%.64s\" (AWS, CanonicalUser or Service)",
				    c->si, k);
		total += json_is_array(x) ? json_array_size(x) : 1;
	}
	out->n = 0;
	out->v = arena_alloc(c->a, MAX(total, 1) * sizeof(sv_t));
	json_object_foreach(v, k, x) {
		list_t l;
		if (str_list(c, x, "Principal", &l) != AIS_OK)
			return AIS_ERR;
		for (size_t i = 0; i < l.n && out->n < total; i++) {
			if (!l.v[i].len)
				return fail(c, "Statement %zu: Principal: an empty principal", c->si);
			if (!strcmp(k, "Service")) { /* kept as SERVICE_TAG + name: never a user's */
				char *t = arena_printf(c->a, SERVICE_TAG "%.*s", (int)l.v[i].len, l.v[i].ptr);
				l.v[i] = (sv_t){t, strlen(t)};
			}
			out->v[out->n++] = l.v[i];
		}
	}
	return AIS_OK;
}

static int action_parse(struct pctx *c, json_t *v, const char *what, list_t *out)
{
	if (str_list(c, v, what, out) != AIS_OK)
		return AIS_ERR;
	for (size_t i = 0; i < out->n; i++) {
		sv_t a = out->v[i];
		if (sv_eqstr(a, "*"))
			continue;
		if (a.len < 4 || strncasecmp(a.ptr, "s3:", 3))
			return fail(c, "Statement %zu: Policy has invalid action \"%.64s\" (s3:NAME or *)", c->si,
				    a.ptr);
		for (size_t j = 3; j < a.len; j++)
			if (!(isalnum((unsigned char)a.ptr[j]) || a.ptr[j] == '*' || a.ptr[j] == '?'))
				return fail(c, "Statement %zu: Policy has invalid action \"%.64s\"", c->si, a.ptr);
	}
	return AIS_OK;
}

static int resource_parse(struct pctx *c, json_t *v, const char *what, list_t *out)
{
	if (str_list(c, v, what, out) != AIS_OK)
		return AIS_ERR;
	size_t bl = strlen(c->bucket);
	for (size_t i = 0; i < out->n; i++) {
		sv_t r = out->v[i];
		if (sv_eqstr(r, "*"))
			continue;
		if (!sv_startswith(r, ARN_S3))
			return fail(c, "Statement %zu: Policy has invalid resource \"%.64s\" (arn:aws:s3:::BUCKET[/KEY])",
				    c->si, r.ptr);
		if (strstr(r.ptr, "${"))
			return fail(c, "Statement %zu: policy variables (${...}) are not supported: \"%.64s\"", c->si,
				    r.ptr);
		sv_t rest = {r.ptr + strlen(ARN_S3), r.len - strlen(ARN_S3)};
		const char *slash = memchr(rest.ptr, '/', rest.len);
		sv_t b = {rest.ptr, slash ? (size_t)(slash - rest.ptr) : rest.len};
		/* the bucket part may be a pattern, but it must be able to name this bucket */
		if (!s3pol_glob(b, (sv_t){c->bucket, bl}, false))
			return fail(c, "Statement %zu: Policy has invalid resource \"%.64s\": not of bucket %.64s",
				    c->si, r.ptr, c->bucket);
	}
	return AIS_OK;
}

static int ip_parse(const char *s, size_t len, ipnet_t *out)
{
	char tmp[64];
	const char *slash = memchr(s, '/', len);
	size_t al = slash ? (size_t)(slash - s) : len;
	unsigned max;
	if (al == 0 || al >= sizeof(tmp))
		return AIS_ERR;
	memcpy(tmp, s, al);
	tmp[al] = '\0';
	memset(out, 0, sizeof(*out));
	struct in_addr v4;
	if (inet_pton(AF_INET, tmp, &v4) == 1) {
		out->a[10] = out->a[11] = 0xff;
		memcpy(out->a + 12, &v4, 4);
		max = 32;
	} else if (inet_pton(AF_INET6, tmp, out->a) == 1) {
		max = 128;
	} else {
		return AIS_ERR;
	}
	out->bits = 128;
	if (slash) {
		size_t dl = len - al - 1;
		unsigned bits = 0;
		if (dl < 1 || dl > 3)
			return AIS_ERR;
		for (size_t i = 0; i < dl; i++) {
			if (!isdigit((unsigned char)slash[1 + i]))
				return AIS_ERR;
			bits = bits * 10 + (unsigned)(slash[1 + i] - '0');
		}
		if (bits > max)
			return AIS_ERR;
		out->bits = bits + (128 - max);
	}
	return AIS_OK;
}

static bool ip_in(const ipnet_t *n, const ipnet_t *ip)
{
	unsigned full = n->bits / 8, rest = n->bits % 8;
	if (memcmp(n->a, ip->a, full))
		return false;
	if (!rest)
		return true;
	unsigned char m = (unsigned char)(0xff << (8 - rest));
	return (n->a[full] & m) == (ip->a[full] & m);
}

static bool num_parse(const char *s, size_t len, double *out)
{
	char tmp[64], *end;
	if (!len || len >= sizeof(tmp))
		return false;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	*out = strtod(tmp, &end);
	return *end == '\0' && !isspace((unsigned char)tmp[0]);
}

/* One operator's block: {KEY: value | [values]}. */
static int cond_block(struct pctx *c, const char *opname, json_t *blk, stmt_t *st, size_t *at)
{
	size_t ol = strlen(opname), i;
	bool if_exists = ol > 8 && !strcmp(opname + ol - 8, "IfExists");
	size_t base = if_exists ? ol - 8 : ol;
	for (i = 0; i < ARRAY_SIZE(ops); i++)
		if (strlen(ops[i].name) == base && !strncmp(ops[i].name, opname, base))
			break;
	if (i == ARRAY_SIZE(ops) || (if_exists && ops[i].kind == OP_NULL))
		return fail(c, "Statement %zu: unknown condition operator \"%.64s\"", c->si, opname);
	if (!json_is_object(blk) || !json_object_size(blk))
		return fail(c, "Statement %zu: Condition %s must be a non-empty object of keys", c->si, ops[i].name);
	const char *k;
	json_t *v;
	json_object_foreach(blk, k, v) {
		cond_t *cd = &st->cond[(*at)++];
		size_t n = json_is_array(v) ? json_array_size(v) : 1;
		if (strncasecmp(k, "aws:", 4) && strncasecmp(k, "s3:", 3))
			return fail(c, "Statement %zu: Policy has an invalid condition key \"%.64s\"", c->si, k);
		if (!n || (json_is_array(v) && n > 1024))
			return fail(c, "Statement %zu: Condition %s: %.64s needs 1 to 1024 values", c->si, opname, k);
		cd->kind = ops[i].kind;
		cd->neg = ops[i].neg;
		cd->if_exists = if_exists;
		cd->key = arena_strndup(c->a, k, strlen(k));
		cd->n = n;
		cd->vals = arena_alloc(c->a, n * sizeof(sv_t));
		if (cd->kind >= OP_NUM_EQ && cd->kind <= OP_NUM_GE)
			cd->nums = arena_alloc(c->a, n * sizeof(double));
		if (cd->kind == OP_IP)
			cd->nets = arena_alloc(c->a, n * sizeof(ipnet_t));
		for (size_t j = 0; j < n; j++) {
			json_t *e = json_is_array(v) ? json_array_get(v, j) : v;
			char num[64];
			const char *s;
			size_t sl;
			if (json_is_string(e)) {
				s = json_string_value(e), sl = json_string_length(e);
			} else if (json_is_true(e) || json_is_false(e)) {
				s = json_is_true(e) ? "true" : "false", sl = strlen(s);
			} else if (json_is_integer(e)) {
				snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(e));
				s = num, sl = strlen(num);
			} else if (json_is_real(e)) {
				snprintf(num, sizeof(num), "%.17g", json_real_value(e));
				s = num, sl = strlen(num);
			} else {
				return fail(c, "Statement %zu: Condition %s: %.64s: values must be strings, numbers or "
					    "booleans", c->si, opname, k);
			}
			cd->vals[j] = (sv_t){arena_strndup(c->a, s, sl), sl};
			if (strstr(cd->vals[j].ptr, "${"))
				return fail(c, "Statement %zu: Condition %s: %.64s: policy variables (${...}) are not "
					    "supported", c->si, opname, k);
			if (cd->nums && !num_parse(s, sl, &cd->nums[j]))
				return fail(c, "Statement %zu: Condition %s: %.64s: \"%.64s\" is not a number", c->si,
					    opname, k, s);
			if (cd->nets && ip_parse(s, sl, &cd->nets[j]) != AIS_OK)
				return fail(c, "Statement %zu: Condition %s: %.64s: \"%.64s\" is not an IP address or "
					    "CIDR range", c->si, opname, k, s);
			if ((cd->kind == OP_BOOL || cd->kind == OP_NULL) && strcasecmp(s, "true") &&
			    strcasecmp(s, "false"))
				return fail(c, "Statement %zu: Condition %s: %.64s: \"%.64s\" is not true or false",
					    c->si, opname, k, s);
		}
	}
	return AIS_OK;
}

static int cond_parse(struct pctx *c, json_t *v, stmt_t *st)
{
	const char *k;
	json_t *x;
	size_t n = 0, at = 0;
	if (!json_is_object(v))
		return fail(c, "Statement %zu: Condition must be an object", c->si);
	json_object_foreach(v, k, x) n += json_is_object(x) ? json_object_size(x) : 1;
	st->cond = arena_zalloc(c->a, MAX(n, 1) * sizeof(cond_t));
	json_object_foreach(v, k, x) {
		if (cond_block(c, k, x, st, &at) != AIS_OK)
			return AIS_ERR;
	}
	st->ncond = at;
	return AIS_OK;
}

/* One of "X" / "NotX": exactly one present. */
static json_t *either(struct pctx *c, json_t *o, const char *yes, const char *no, bool *neg)
{
	json_t *y = json_object_get(o, yes), *n = json_object_get(o, no);
	if (y && n) {
		fail(c, "Statement %zu: %s and %s together", c->si, yes, no);
		return NULL;
	}
	if (!y && !n) {
		fail(c, "Statement %zu: missing %s", c->si, yes);
		return NULL;
	}
	*neg = n != NULL;
	return y ? y : n;
}

static int stmt_parse(struct pctx *c, json_t *o, stmt_t *st)
{
	static const char *const keys[] = {"Sid",       "Effect",   "Principal",   "NotPrincipal", "Action",
					   "NotAction", "Resource", "NotResource", "Condition"};
	const char *k;
	json_t *v;
	if (!json_is_object(o))
		return fail(c, "Statement %zu must be an object", c->si);
	json_object_foreach(o, k, v) {
		size_t i;
		for (i = 0; i < ARRAY_SIZE(keys) && strcmp(keys[i], k); i++)
			;
		if (i == ARRAY_SIZE(keys))
			return fail(c, "Statement %zu: unknown field \"%.64s\"", c->si, k);
	}
	if ((v = json_object_get(o, "Sid")) && !json_is_string(v))
		return fail(c, "Statement %zu: Sid must be a string", c->si);
	v = json_object_get(o, "Effect");
	if (!v || !json_is_string(v) || (strcmp(json_string_value(v), "Allow") && strcmp(json_string_value(v), "Deny")))
		return fail(c, "Statement %zu: Effect must be \"Allow\" or \"Deny\"", c->si);
	st->deny = !strcmp(json_string_value(v), "Deny");
	if (!(v = either(c, o, "Principal", "NotPrincipal", &st->not_principal)) ||
	    principal_parse(c, v, &st->principal) != AIS_OK)
		return AIS_ERR;
	if (st->not_principal && !st->deny)
		return fail(c, "Statement %zu: NotPrincipal only with \"Effect\": \"Deny\"", c->si);
	if (!(v = either(c, o, "Action", "NotAction", &st->not_action)) ||
	    action_parse(c, v, st->not_action ? "NotAction" : "Action", &st->action) != AIS_OK)
		return AIS_ERR;
	if (!(v = either(c, o, "Resource", "NotResource", &st->not_resource)) ||
	    resource_parse(c, v, st->not_resource ? "NotResource" : "Resource", &st->resource) != AIS_OK)
		return AIS_ERR;
	if ((v = json_object_get(o, "Condition")) && cond_parse(c, v, st) != AIS_OK)
		return AIS_ERR;
	return AIS_OK;
}

int s3pol_parse(arena_t *a, const char *bucket, const char *text, size_t len, const s3pol_t **out, buf_t *err)
{
	struct pctx c = {.a = a, .bucket = bucket, .err = err};
	json_error_t je;
	json_t *doc, *v, *sts;
	const char *k;
	int rc = AIS_ERR;

	*out = NULL;
	if (len > S3POL_MAX)
		return fail(&c, "Policies must be at most %d bytes (this one has %zu)", S3POL_MAX, len);
	if (!len)
		return fail(&c, "Policies must be valid JSON and the first byte must be '{'");
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return fail(&c, "Policies must be valid JSON: %.120s (at %d:%d)", je.text, je.line, je.column);
	if (!json_is_object(doc)) {
		fail(&c, "Policies must be valid JSON and the first byte must be '{'");
		goto out;
	}
	json_object_foreach(doc, k, v) {
		if (strcmp(k, "Version") && strcmp(k, "Id") && strcmp(k, "Statement")) {
			fail(&c, "unknown field \"%.64s\" (Version, Id, Statement)", k);
			goto out;
		}
	}
	if ((v = json_object_get(doc, "Version")) &&
	    (!json_is_string(v) ||
	     (strcmp(json_string_value(v), "2012-10-17") && strcmp(json_string_value(v), "2008-10-17")))) {
		fail(&c, "Version must be \"2012-10-17\" or \"2008-10-17\"");
		goto out;
	}
	if ((v = json_object_get(doc, "Id")) && !json_is_string(v)) {
		fail(&c, "Id must be a string");
		goto out;
	}
	sts = json_object_get(doc, "Statement");
	if (!sts || !(json_is_object(sts) || (json_is_array(sts) && json_array_size(sts)))) {
		fail(&c, "Missing required field Statement (an object or a non-empty array)");
		goto out;
	}
	s3pol_t *p = arena_zalloc(a, sizeof(*p));
	p->n = json_is_array(sts) ? json_array_size(sts) : 1;
	p->st = arena_zalloc(a, p->n * sizeof(stmt_t));
	for (size_t i = 0; i < p->n; i++) {
		c.si = i;
		if (stmt_parse(&c, json_is_array(sts) ? json_array_get(sts, i) : sts, &p->st[i]) != AIS_OK)
			goto out;
	}
	*out = p;
	rc = AIS_OK;
out:
	json_decref(doc);
	return rc;
}

bool s3pol_valid(const char *bucket, const char *text, size_t len, buf_t *err)
{
	arena_t *a = arena_new(16384);
	const s3pol_t *p;
	bool ok = s3pol_parse(a, bucket, text, len, &p, err) == AIS_OK;
	arena_destroy(a);
	return ok;
}

/* --- evaluation ------------------------------------------------------------------ */

static bool principal_match(const list_t *l, const s3pol_req_t *q)
{
	for (size_t i = 0; i < l->n; i++) {
		sv_t p = l->v[i];
		bool svc = sv_startswith(p, SERVICE_TAG);
		if (q->service || svc) { /* a service only by its name, never by "*" or a user's */
			if (q->service && svc && p.len - strlen(SERVICE_TAG) == strlen(q->service) &&
			    !memcmp(p.ptr + strlen(SERVICE_TAG), q->service, strlen(q->service)))
				return true;
			continue;
		}
		if (sv_eqstr(p, "*"))
			return true;
		if (!q->user)
			continue;
		if (sv_eqstr(p, q->user))
			return true;
		if (!sv_startswith(p, "arn:aws:iam::"))
			continue;
		const char *colon = memrchr(p.ptr, ':', p.len);
		sv_t tail = {colon + 1, p.len - (size_t)(colon + 1 - p.ptr)};
		sv_t acct = {p.ptr + 13, (size_t)(colon - p.ptr) - 13};
		if (sv_eqstr(tail, "root") && sv_eqstr(acct, q->user))
			return true;
		if (sv_startswith(tail, "user/")) {
			sv_t name = {tail.ptr + 5, tail.len - 5};
			if (sv_eqstr(name, q->user) || (q->user_name && sv_eqstr(name, q->user_name)))
				return true;
		}
	}
	return false;
}

static bool action_match(const list_t *l, const char *action)
{
	for (size_t i = 0; i < l->n; i++)
		if (s3pol_glob(l->v[i], sv_from(action), true))
			return true;
	return false;
}

static bool resource_match(const list_t *l, const s3pol_req_t *q)
{
	char arn[1600];
	int n = snprintf(arn, sizeof(arn), ARN_S3 "%.*s%s%.*s", (int)q->bucket.len, q->bucket.ptr, q->key.len ? "/" : "",
			 (int)q->key.len, q->key.ptr);
	sv_t s = {arn, MIN((size_t)n, sizeof(arn) - 1)};
	for (size_t i = 0; i < l->n; i++)
		if (sv_eqstr(l->v[i], "*") || s3pol_glob(l->v[i], s, false))
			return true;
	return false;
}

static bool value_match(const cond_t *cd, size_t j, sv_t v)
{
	double x;
	switch (cd->kind) {
	case OP_STR:
		return sv_eq(cd->vals[j], v);
	case OP_STR_NOCASE:
		return sv_eqcase(cd->vals[j], v);
	case OP_LIKE:
		return s3pol_glob(cd->vals[j], v, false);
	case OP_BOOL:
		return sv_eqcase(cd->vals[j], v);
	case OP_IP: {
		ipnet_t ip;
		return ip_parse(v.ptr, v.len, &ip) == AIS_OK && ip.bits == 128 && ip_in(&cd->nets[j], &ip);
	}
	default:
		if (!num_parse(v.ptr, v.len, &x))
			return false;
		switch (cd->kind) {
		case OP_NUM_EQ:
			return x == cd->nums[j];
		case OP_NUM_LT:
			return x < cd->nums[j];
		case OP_NUM_LE:
			return x <= cd->nums[j];
		case OP_NUM_GT:
			return x > cd->nums[j];
		case OP_NUM_GE:
			return x >= cd->nums[j];
		default:
			return false;
		}
	}
}

static bool cond_match(const cond_t *cd, const s3pol_req_t *q)
{
	sv_t v = {NULL, 0};
	bool have = q->ctx && q->ctx(q->arg, cd->key, &v);
	if (cd->kind == OP_NULL) /* "true": the key is absent */
		return sv_eqcase(cd->vals[0], SV("true")) ? !have : have;
	if (!have)
		return cd->if_exists || cd->neg;
	bool any = false;
	for (size_t j = 0; j < cd->n && !any; j++)
		any = value_match(cd, j, v);
	return cd->neg ? !any : any;
}

static bool stmt_public(const stmt_t *st)
{
	static const char *const narrow[] = {"aws:SourceIp",     "aws:SourceVpc",  "aws:SourceVpce",
					     "aws:SourceArn",    "aws:SourceAccount", "aws:PrincipalOrgID",
					     "aws:userid",       "aws:PrincipalAccount"};
	if (st->deny)
		return false;
	if (!st->not_principal) {
		bool star = false;
		for (size_t i = 0; i < st->principal.n; i++)
			star |= sv_eqstr(st->principal.v[i], "*");
		if (!star)
			return false;
	}
	for (size_t i = 0; i < st->ncond; i++)
		for (size_t k = 0; k < ARRAY_SIZE(narrow); k++)
			if (!strcasecmp(st->cond[i].key, narrow[k]) && !st->cond[i].neg && st->cond[i].kind != OP_NULL)
				return false;
	return true;
}

enum s3pol_effect s3pol_eval(const s3pol_t *p, const s3pol_req_t *q, bool no_public)
{
	enum s3pol_effect e = S3POL_NONE;
	for (size_t i = 0; i < p->n; i++) {
		const stmt_t *st = &p->st[i];
		if (e == S3POL_ALLOW && !st->deny)
			continue; /* only a Deny can change it now */
		if (!st->deny && no_public && stmt_public(st))
			continue;
		if (principal_match(&st->principal, q) == st->not_principal)
			continue;
		if (action_match(&st->action, q->action) == st->not_action)
			continue;
		if (resource_match(&st->resource, q) == st->not_resource)
			continue;
		bool all = true;
		for (size_t k = 0; k < st->ncond && all; k++)
			all = cond_match(&st->cond[k], q);
		if (!all)
			continue;
		if (st->deny)
			return S3POL_DENY;
		e = S3POL_ALLOW;
	}
	return e;
}

bool s3pol_public(const s3pol_t *p)
{
	for (size_t i = 0; i < p->n; i++)
		if (stmt_public(&p->st[i]))
			return true;
	return false;
}

bool s3pol_uses_key(const s3pol_t *p, const char *prefix)
{
	size_t pl = strlen(prefix);
	for (size_t i = 0; i < p->n; i++)
		for (size_t k = 0; k < p->st[i].ncond; k++)
			if (!strncasecmp(p->st[i].cond[k].key, prefix, pl))
				return true;
	return false;
}
