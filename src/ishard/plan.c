/*
 * plan.c - the plan of an initial sharding (ishard.h has the rules): one
 * listing in, samples grouped by key, ordered (key order or a seeded
 * shuffle), packed into shards of at most shard_size tar bytes and named
 * by a template. Pure and deterministic: the same spec gives the same plan
 * on every node.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/ishard.h"
#include "aisd/names.h"
#include "aisd/tarw.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define MISSING_KEYS_MAX 1000
#define END_BYTES 1024u /* two zero blocks */

uint64_t ishard_member_bytes(const char *name, uint64_t size)
{
	buf_t h = BUF_INIT;
	tarw_header(&h, name, strlen(name), size, 0);
	uint64_t n = h.len + size + tarw_pad_len(size);
	buf_free(&h);
	return n;
}

/* "{A..B}" in tpl: its offset, length, start, end and width. */
static bool brace(const char *tpl, size_t *at, size_t *len, size_t *lo, size_t *hi, int *width)
{
	const char *o = strchr(tpl, '{');
	if (!o)
		return false;
	char *e;
	unsigned long long a = strtoull(o + 1, &e, 10);
	if (e == o + 1 || strncmp(e, "..", 2))
		return false;
	const char *s2 = e + 2;
	unsigned long long b = strtoull(s2, &e, 10);
	if (e == s2 || *e != '}' || b < a)
		return false;
	*at = (size_t)(o - tpl);
	*len = (size_t)(e + 1 - o);
	*lo = a;
	*hi = b;
	*width = (int)(s2 - 2 - (o + 1));
	return true;
}

/* "%d" or "%0Nd" in tpl: its offset, length and width. */
static bool pct(const char *tpl, size_t *at, size_t *len, int *width)
{
	for (const char *p = strchr(tpl, '%'); p; p = strchr(p + 1, '%')) {
		const char *q = p + 1;
		int w = 0;
		if (*q == '0')
			q++;
		while (*q >= '0' && *q <= '9' && w < 100)
			w = w * 10 + (*q++ - '0');
		if (*q == 'd') {
			*at = (size_t)(p - tpl);
			*len = (size_t)(q + 1 - p);
			*width = w;
			return true;
		}
	}
	return false;
}

bool ishard_name(const char *tpl, size_t i, char *out)
{
	size_t at, len, lo = 0, hi = SIZE_MAX;
	int width;
	if (brace(tpl, &at, &len, &lo, &hi, &width)) {
		if (i > hi - lo)
			return false;
	} else if (!pct(tpl, &at, &len, &width)) {
		return false;
	}
	int n = snprintf(out, ISHARD_NAME_MAX + 1, "%.*s%0*zu%s", (int)at, tpl, width, lo + i, tpl + at + len);
	return n > 0 && n <= ISHARD_NAME_MAX;
}

int ishard_spec_check(json_t *spec, buf_t *err)
{
	json_t *ss = json_object_get(spec, "shard_size"), *tp = json_object_get(spec, "template");
	json_t *ext = json_object_get(spec, "ext"), *re = json_object_get(spec, "regex");
	json_t *mi = json_object_get(spec, "missing"), *sh = json_object_get(spec, "shuffle");
	json_t *pf = json_object_get(spec, "prefix"), *dry = json_object_get(spec, "dry_run"), *e;
	size_t i, at, len, lo, hi;
	int w;
	char nm[ISHARD_NAME_MAX + 1];
	if (!json_is_integer(ss) || json_integer_value(ss) < 2048) {
		buf_addstr(err, "ishard: value.shard_size wants a number of bytes, at least 2048");
		return 400;
	}
	const char *t = json_string_value(tp);
	if (!t || (!brace(t, &at, &len, &lo, &hi, &w) && !pct(t, &at, &len, &w)) || !ishard_name(t, 0, nm) ||
	    !name_object_valid(nm, strlen(nm))) {
		buf_addstr(err, "ishard: value.template wants an object name with %d, %06d or {0000..9999} "
				"(e.g. \"shard-%06d.tar\")");
		return 400;
	}
	if (ext && !json_is_array(ext)) {
		buf_addstr(err, "ishard: value.ext wants an array of extensions, e.g. [\".jpg\",\".cls\"]");
		return 400;
	}
	json_array_foreach(ext, i, e) {
		const char *x = json_string_value(e);
		if (!x || x[0] != '.' || !x[1] || strchr(x, '/')) {
			buf_addstr(err, "ishard: value.ext: each extension starts with a dot (\".jpg\")");
			return 400;
		}
	}
	if (re) {
		regex_t rx;
		if (!json_is_string(re) || regcomp(&rx, json_string_value(re), REG_EXTENDED) != 0) {
			buf_addstr(err, "ishard: value.regex is not a POSIX extended regular expression");
			return 400;
		}
		regfree(&rx);
	}
	const char *m = json_string_value(mi);
	if (mi && (!m || (strcmp(m, "skip") && strcmp(m, "fail") && strcmp(m, "list")))) {
		buf_addstr(err, "ishard: value.missing wants \"skip\", \"fail\" or \"list\"");
		return 400;
	}
	if (sh && (!json_is_integer(sh) || json_integer_value(sh) < 0)) {
		buf_addstr(err, "ishard: value.shuffle wants a seed (an integer >= 0)");
		return 400;
	}
	if ((pf && !json_is_string(pf)) || (dry && !json_is_boolean(dry))) {
		buf_addstr(err, "ishard: value.prefix wants a string, value.dry_run a boolean");
		return 400;
	}
	return 0;
}

/* The sample key of name: [key, key+*klen). regex (may be NULL): group
 * 1, else the whole match; false when it does not match. */
static bool key_of(const char *name, regex_t *rx, size_t *koff, size_t *klen)
{
	if (rx) {
		regmatch_t mt[2];
		if (regexec(rx, name, 2, mt, 0) != 0)
			return false;
		int g = mt[1].rm_so >= 0 ? 1 : 0;
		*koff = (size_t)mt[g].rm_so;
		*klen = (size_t)(mt[g].rm_eo - mt[g].rm_so);
		return true;
	}
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	const char *dot = strchr(base, '.');
	*koff = 0;
	*klen = dot ? (size_t)(dot - name) : strlen(name);
	return true;
}

/* The extension of name: from the first dot of its basename ("" none). */
static const char *ext_of(const char *name)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	const char *dot = strchr(base, '.');
	return dot ? dot : "";
}

struct ent {
	const char *name;
	uint64_t size;
	size_t koff, klen;
};

static int ent_cmp(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	size_t n = x->klen < y->klen ? x->klen : y->klen;
	int c = memcmp(x->name + x->koff, y->name + y->koff, n);
	if (c)
		return c;
	if (x->klen != y->klen)
		return x->klen < y->klen ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool same_key(const struct ent *x, const struct ent *y)
{
	return x->klen == y->klen && !memcmp(x->name + x->koff, y->name + y->koff, x->klen);
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void ishard_shuffle(size_t *order, size_t n, uint64_t seed)
{
	/* Fisher-Yates under splitmix64 of the seed */
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)(splitmix(&seed) % i), t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
}

size_t ishard_key_len(const char *name)
{
	size_t koff, klen;
	key_of(name, NULL, &koff, &klen);
	return klen;
}

const char *ishard_ext_of(const char *name) { return ext_of(name); }

bool ishard_name_match(const char *tpl, const char *name)
{
	size_t at, len, lo = 0, hi = SIZE_MAX, nl = strlen(name), tl = strlen(tpl);
	int width;
	if (!brace(tpl, &at, &len, &lo, &hi, &width) && !pct(tpl, &at, &len, &width))
		return false;
	size_t tail = tl - at - len;
	if (nl < at + tail + 1 || strncmp(name, tpl, at) || strcmp(name + nl - tail, tpl + at + len))
		return false;
	uint64_t v = 0;
	for (size_t i = at; i < nl - tail; i++) {
		if (name[i] < '0' || name[i] > '9' || v > UINT64_MAX / 10 - 1)
			return false;
		v = v * 10 + (uint64_t)(name[i] - '0');
	}
	return v >= lo && v <= hi;
}

int ishard_plan(json_t *spec, ishard_plan_t *p, buf_t *err)
{
	memset(p, 0, sizeof(*p));
	int rc = ishard_spec_check(spec, err);
	if (rc)
		return rc;
	json_t *objs = json_object_get(spec, "objects"), *o, *ext = json_object_get(spec, "ext");
	json_t *re = json_object_get(spec, "regex"), *sh = json_object_get(spec, "shuffle");
	const char *miss = json_string_value(json_object_get(spec, "missing"));
	uint64_t ssize = (uint64_t)json_integer_value(json_object_get(spec, "shard_size"));
	snprintf(p->tpl, sizeof(p->tpl), "%s", json_string_value(json_object_get(spec, "template")));
	if (!json_is_array(objs)) {
		buf_addstr(err, "ishard: no listing of the source");
		return 400;
	}
	regex_t rx;
	if (re)
		regcomp(&rx, json_string_value(re), REG_EXTENDED); /* (checked) */
	size_t nx = json_array_size(ext), i, n = 0;
	struct ent *v = xcalloc(json_array_size(objs) + 1, sizeof(*v));
	json_array_foreach(objs, i, o) {
		const char *nm = json_string_value(json_array_get(o, 0));
		json_t *sz = json_array_get(o, 1);
		if (!nm || !json_is_integer(sz)) {
			buf_addstr(err, "ishard: value.objects wants [[NAME,SIZE],..]");
			rc = 400;
			goto out;
		}
		struct ent *e = &v[n];
		e->name = nm;
		e->size = (uint64_t)json_integer_value(sz);
		bool want = key_of(nm, re ? &rx : NULL, &e->koff, &e->klen);
		if (want && nx) {
			want = false;
			for (size_t k = 0; k < nx; k++)
				want |= !strcmp(ext_of(nm), json_string_value(json_array_get(ext, k)));
		}
		if (want)
			n++;
		else
			p->skipped_files++;
	}
	qsort(v, n, sizeof(*v), ent_cmp);
	p->members = xcalloc(n + 1, sizeof(*p->members));
	p->samples = xcalloc(n + 1, sizeof(*p->samples));
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a + 1; b < n && same_key(&v[a], &v[b]);)
			b++;
		bool ok = true;
		for (size_t k = 0; k < nx && ok; k++) {
			bool has = false;
			for (size_t j = a; j < b; j++)
				has |= !strcmp(ext_of(v[j].name), json_string_value(json_array_get(ext, k)));
			ok = has;
		}
		if (!ok) {
			p->missing++;
			p->skipped_files += b - a;
			if (miss && !strcmp(miss, "fail")) {
				buf_addf(err, "ishard: sample \"%.*s\" lacks an extension of value.ext (missing: "
					      "\"fail\"; \"skip\" or \"list\" leave such samples out)",
					 (int)v[a].klen, v[a].name + v[a].koff);
				rc = 400;
				goto out;
			}
			if (miss && !strcmp(miss, "list") && json_array_size(p->missing_keys) < MISSING_KEYS_MAX) {
				if (!p->missing_keys)
					p->missing_keys = json_array();
				json_array_append_new(p->missing_keys,
						      json_stringn(v[a].name + v[a].koff, v[a].klen));
			}
			continue;
		}
		ishard_sample_t *s = &p->samples[p->nsamples++];
		s->first = p->nmembers;
		for (size_t j = a; j < b; j++) {
			p->members[p->nmembers++] = (ishard_member_t){v[j].name, v[j].size};
			s->bytes += ishard_member_bytes(v[j].name, v[j].size);
			s->n++;
		}
	}
	p->order = xcalloc(p->nsamples + 1, sizeof(*p->order));
	for (i = 0; i < p->nsamples; i++)
		p->order[i] = i;
	if (sh)
		ishard_shuffle(p->order, p->nsamples, (uint64_t)json_integer_value(sh));
	p->shards = xcalloc(p->nsamples + 1, sizeof(*p->shards));
	for (i = 0; i < p->nsamples; i++) {
		uint64_t b = p->samples[p->order[i]].bytes;
		ishard_shard_t *cur = p->nshards ? &p->shards[p->nshards - 1] : NULL;
		if (!cur || cur->bytes + b > ssize) {
			cur = &p->shards[p->nshards++];
			cur->first = i;
			cur->bytes = END_BYTES;
		}
		if (END_BYTES + b > ssize)
			p->oversize++;
		cur->n++;
		cur->bytes += b;
	}
	char nm[ISHARD_NAME_MAX + 1];
	if (p->nshards && !ishard_name(p->tpl, p->nshards - 1, nm)) {
		buf_addf(err, "ishard: the template \"%s\" cannot name %zu shards (widen its range, or raise "
			      "shard_size)", p->tpl, p->nshards);
		rc = 400;
	}
out:
	free(v);
	if (re)
		regfree(&rx);
	if (rc)
		ishard_plan_free(p);
	return rc;
}

void ishard_plan_free(ishard_plan_t *p)
{
	free(p->members);
	free(p->samples);
	free(p->order);
	free(p->shards);
	json_decref(p->missing_keys);
	memset(p, 0, sizeof(*p));
}

void ishard_plan_summary(const ishard_plan_t *p, json_t *out)
{
	uint64_t bmin = UINT64_MAX, bmax = 0, btot = 0;
	size_t smin = SIZE_MAX, smax = 0;
	char nm[ISHARD_NAME_MAX + 1];
	for (size_t i = 0; i < p->nshards; i++) {
		const ishard_shard_t *s = &p->shards[i];
		bmin = s->bytes < bmin ? s->bytes : bmin;
		bmax = s->bytes > bmax ? s->bytes : bmax;
		smin = s->n < smin ? s->n : smin;
		smax = s->n > smax ? s->n : smax;
		btot += s->bytes;
	}
	double ns = p->nshards ? (double)p->nshards : 1;
	json_object_set_new(out, "shards", json_integer((json_int_t)p->nshards));
	json_object_set_new(out, "samples", json_integer((json_int_t)p->nsamples));
	json_object_set_new(out, "files", json_integer((json_int_t)p->nmembers));
	json_object_set_new(out, "skipped_files", json_integer((json_int_t)p->skipped_files));
	json_object_set_new(out, "missing", json_integer((json_int_t)p->missing));
	json_object_set_new(out, "oversize", json_integer((json_int_t)p->oversize));
	json_object_set_new(out, "bytes", json_integer((json_int_t)btot));
	json_object_set_new(out, "shard_bytes",
			    json_pack("{s:I,s:I,s:f}", "min", (json_int_t)(p->nshards ? bmin : 0), "max",
				      (json_int_t)bmax, "mean", (double)btot / ns));
	json_object_set_new(out, "samples_per_shard",
			    json_pack("{s:I,s:I,s:f}", "min", (json_int_t)(p->nshards ? smin : 0), "max",
				      (json_int_t)smax, "mean", (double)p->nsamples / ns));
	if (p->nshards && ishard_name(p->tpl, 0, nm))
		json_object_set_new(out, "first", json_string(nm));
	if (p->nshards && ishard_name(p->tpl, p->nshards - 1, nm))
		json_object_set_new(out, "last", json_string(nm));
	if (p->missing_keys)
		json_object_set(out, "missing_keys", p->missing_keys);
}
