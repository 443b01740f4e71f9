/*
 * cors.c - S3 CORS, the pure part: the parser of a <CORSConfiguration>
 * (PutBucketCors) with S3's checks and limits, its canonical XML (what the
 * BMD keeps beside the bucket, bmd_doc, and GetBucketCors answers), and
 * the matching of a request against the rules (corsop.c serves them).
 *
 * Rules:
 *  1. The first rule whose AllowedOrigin, AllowedMethod and (preflight)
 *     every requested header match is the one applied (S3's order).
 *     Origins match case-sensitively, headers case-insensitively, each
 *     pattern with at most one '*' standing for any run of characters.
 *  2. A configuration that parses has 1..S3_CORS_RULES_MAX rules, each
 *     with at least one AllowedOrigin and AllowedMethod, every value
 *     printable ASCII, so its canonical form is one line of 0x20..0x7e
 *     (what the BMD accepts for BMD_DOC_CORS) and parses back to the
 *     same rules.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

/* --- the pure parser ------------------------------------------------------------------ */

static void list_add(arena_t *a, s3_cors_list_t *l, const char *text, size_t len)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 4;
		sv_t *v = arena_alloc(a, cap * sizeof(*v));
		if (l->n)
			memcpy(v, l->v, l->n * sizeof(*v));
		l->v = v, l->cap = cap;
	}
	l->v[l->n++] = (sv_t){arena_strndup(a, text, len), len};
}

struct cx_st {
	arena_t *a;
	s3_cors_t *out;
	s3_cors_rule_t cur;
	bool root;
	const char *why;
	char *whybuf;
};

static const char *const cx_methods[] = {"GET", "PUT", "HEAD", "POST", "DELETE"};

static size_t stars(sv_t s)
{
	size_t n = 0;
	for (size_t i = 0; i < s.len; i++)
		n += s.ptr[i] == '*';
	return n;
}

static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

static int cx_invalid(struct cx_st *c, const char *fmt, const char *what, size_t len)
{
	size_t sz = 256 + MIN(len, 256);
	c->whybuf = arena_alloc(c->a, sz);
	snprintf(c->whybuf, sz, fmt, (int)MIN(len, 256), what);
	c->why = c->whybuf;
	return AIS_ERR;
}

static int cx_cb(void *arg, const char *path, const char *text, size_t len)
{
	struct cx_st *c = arg;
	s3_cors_rule_t *u = &c->cur;
	sv_t t = sv_trim((sv_t){text, len});

	if (!strncmp(path, "CORSConfiguration/CORSRule/", 27) && !printable(t.ptr, t.len))
		return cx_invalid(c, "%.*sOnly printable ASCII is supported in a CORS configuration", "", 0);
	if (!strcmp(path, "CORSConfiguration")) {
		c->root = true;
	} else if (!strcmp(path, "CORSConfiguration/CORSRule/AllowedOrigin")) {
		if (stars(t) > 1)
			return cx_invalid(c, "AllowedOrigin \"%.*s\" can not have more than one wildcard.", t.ptr, t.len);
		list_add(c->a, &u->origins, t.ptr, t.len);
	} else if (!strcmp(path, "CORSConfiguration/CORSRule/AllowedMethod")) {
		size_t i;
		for (i = 0; i < ARRAY_SIZE(cx_methods) && !sv_eqstr(t, cx_methods[i]); i++)
			;
		if (i == ARRAY_SIZE(cx_methods))
			return cx_invalid(c, "Found unsupported HTTP method in CORS config. Unsupported method is %.*s",
					  t.ptr, t.len);
		list_add(c->a, &u->methods, t.ptr, t.len);
	} else if (!strcmp(path, "CORSConfiguration/CORSRule/AllowedHeader")) {
		if (stars(t) > 1)
			return cx_invalid(c, "AllowedHeader \"%.*s\" can not have more than one wildcard.", t.ptr, t.len);
		list_add(c->a, &u->headers, t.ptr, t.len);
	} else if (!strcmp(path, "CORSConfiguration/CORSRule/ExposeHeader")) {
		if (stars(t))
			return cx_invalid(c, "ExposeHeader \"%.*s\" contains wildcard. We currently do not support "
					     "wildcard for ExposeHeader.",
					  t.ptr, t.len);
		list_add(c->a, &u->expose, t.ptr, t.len);
	} else if (!strcmp(path, "CORSConfiguration/CORSRule/MaxAgeSeconds")) {
		uint64_t v;
		if (num_parse_u64(t.ptr, t.len, 0, INT32_MAX, &v) != AIS_OK)
			return AIS_ERR; /* MalformedXML, as S3 */
		u->max_age = (int64_t)v;
	} else if (!strcmp(path, "CORSConfiguration/CORSRule/ID")) {
		if (t.len > S3_CORS_ID_MAX)
			return cx_invalid(c, "%.*sThe ID of a CORS rule is longer than 255 characters", "", 0);
		u->id = (sv_t){arena_strndup(c->a, t.ptr, t.len), t.len};
	} else if (!strcmp(path, "CORSConfiguration/CORSRule")) {
		if (!u->origins.n || !u->methods.n)
			return AIS_ERR; /* MalformedXML, as S3 */
		if (c->out->n == S3_CORS_RULES_MAX)
			return cx_invalid(c, "%.*sThe number of CORS rules should not exceed allowed limit of 100 rules.",
					  "", 0);
		s3_cors_rule_t *v = arena_alloc(c->a, (c->out->n + 1) * sizeof(*v));
		if (c->out->n)
			memcpy(v, c->out->rules, c->out->n * sizeof(*v));
		v[c->out->n++] = *u;
		c->out->rules = v;
		memset(u, 0, sizeof(*u));
		u->max_age = -1;
	} else {
		return AIS_ERR; /* an element S3's schema does not have */
	}
	return AIS_OK;
}

int s3_cors_parse(arena_t *a, const char *p, size_t n, s3_cors_t *out, const char **why)
{
	struct cx_st c = {.a = a, .out = out};
	memset(out, 0, sizeof(*out));
	c.cur.max_age = -1;
	*why = NULL;
	if (n > S3_CORS_XML_MAX) {
		*why = "The CORS configuration is larger than 64 KB";
		return AIS_ERR;
	}
	if (s3_xml_parse(p, n, cx_cb, &c) != AIS_OK || !c.root || !out->n) {
		*why = c.why;
		memset(out, 0, sizeof(*out));
		return AIS_ERR;
	}
	return AIS_OK;
}

static void list_xml(buf_t *b, const char *tag, const s3_cors_list_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		s3_xml_elem(b, tag, l->v[i].ptr, l->v[i].len);
}

void s3_cors_xml(const s3_cors_t *c, buf_t *b)
{
	/* no XML declaration: the canonical form is one line of printable ASCII */
	buf_addstr(b, "<CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	for (size_t i = 0; i < c->n; i++) {
		const s3_cors_rule_t *u = &c->rules[i];
		s3_xml_open(b, "CORSRule");
		if (u->id.len)
			s3_xml_elem(b, "ID", u->id.ptr, u->id.len);
		list_xml(b, "AllowedHeader", &u->headers);
		list_xml(b, "AllowedMethod", &u->methods);
		list_xml(b, "AllowedOrigin", &u->origins);
		list_xml(b, "ExposeHeader", &u->expose);
		if (u->max_age >= 0)
			s3_xml_elemf(b, "MaxAgeSeconds", "%lld", (long long)u->max_age);
		s3_xml_close(b, "CORSRule");
	}
	s3_xml_close(b, "CORSConfiguration");
}

/* --- matching ----------------------------------------------------------------------- */

/* pat with at most one '*' against s. */
static bool glob1(sv_t pat, sv_t s, bool nocase)
{
	const char *st = memchr(pat.ptr, '*', pat.len);
	int (*cmp)(const char *, const char *, size_t) = nocase ? strncasecmp : strncmp;
	if (!st)
		return pat.len == s.len && (!s.len || !cmp(pat.ptr, s.ptr, s.len));
	size_t pre = (size_t)(st - pat.ptr), suf = pat.len - pre - 1;
	if (s.len < pre + suf)
		return false;
	return (!pre || !cmp(pat.ptr, s.ptr, pre)) && (!suf || !cmp(st + 1, s.ptr + s.len - suf, suf));
}

static bool list_match(const s3_cors_list_t *l, sv_t s, bool nocase)
{
	for (size_t i = 0; i < l->n; i++)
		if (glob1(l->v[i], s, nocase))
			return true;
	return false;
}

const s3_cors_rule_t *s3_cors_match(const s3_cors_t *c, sv_t origin, sv_t method, sv_t req_headers)
{
	for (size_t i = 0; i < c->n; i++) {
		const s3_cors_rule_t *u = &c->rules[i];
		if (!list_match(&u->origins, origin, false) || !list_match(&u->methods, method, false))
			continue;
		bool all = true;
		sv_t q = req_headers;
		while (all && q.len) {
			const char *comma = memchr(q.ptr, ',', q.len);
			size_t l = comma ? (size_t)(comma - q.ptr) : q.len;
			sv_t h = sv_trim((sv_t){q.ptr, l});
			q = comma ? (sv_t){comma + 1, q.len - l - 1} : (sv_t){q.ptr + q.len, 0};
			if (h.len && !list_match(&u->headers, h, true))
				all = false;
		}
		if (all)
			return u;
	}
	return NULL;
}

bool s3_cors_origin_any(const s3_cors_rule_t *u, sv_t origin)
{
	for (size_t i = 0; i < u->origins.n; i++)
		if (!sv_eqstr(u->origins.v[i], "*") && glob1(u->origins.v[i], origin, false))
			return false;
	return true;
}
