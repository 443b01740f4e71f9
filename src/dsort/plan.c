/*
 * plan.c - the pure half of dsort (dsort.h has the rules): the spec's
 * checks, the gateway's choice of input shards and their targets, the
 * global order of the records and its cut into output shards. Deterministic:
 * the same spec and indexes give the same order and shards on every node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/dsort.h"
#include "aisd/hrw.h"
#include "aisd/larc.h"
#include "aisd/names.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define END_BYTES 1024u  /* two zero blocks */
#define TAR_RECORD 10240u /* GNU tar and tarfile pad an archive to this */

static const char *const alg_names[] = {"shuffle", "alphanumeric", "numeric", "content"};

static bool has_suffix(const char *s, const char *sfx)
{
	size_t n = strlen(s), m = strlen(sfx);
	return n >= m && !strcmp(s + n - m, sfx);
}

int dsort_spec_parse(json_t *spec, dsort_spec_t *s, buf_t *err)
{
	memset(s, 0, sizeof(*s));
	if (!json_is_object(spec)) {
		buf_addstr(err, "dsort: value wants {\"template\":\"out-%06d.tar\",\"shard_size\":BYTES or "
				"\"samples_per_shard\":N,\"algorithm\":..}");
		return 400;
	}
	json_t *al = json_object_get(spec, "algorithm"), *sd = json_object_get(spec, "seed");
	json_t *ss = json_object_get(spec, "shard_size"), *ps = json_object_get(spec, "samples_per_shard");
	json_t *tp = json_object_get(spec, "template"), *it = json_object_get(spec, "input_template");
	json_t *pf = json_object_get(spec, "prefix"), *ce = json_object_get(spec, "content_ext");
	json_t *ct = json_object_get(spec, "content_type"), *dry = json_object_get(spec, "dry_run");
	const char *a = al ? json_string_value(al) : "alphanumeric";
	size_t k;
	for (k = 0; a && k < ARRAY_SIZE(alg_names) && strcmp(a, alg_names[k]); k++)
		;
	if (!a || k == ARRAY_SIZE(alg_names)) {
		buf_addstr(err, "dsort: value.algorithm wants \"shuffle\", \"alphanumeric\", \"numeric\" or \"content\"");
		return 400;
	}
	s->alg = (enum dsort_alg)k;
	if (sd && (!json_is_integer(sd) || json_integer_value(sd) < 0)) {
		buf_addstr(err, "dsort: value.seed wants an integer >= 0");
		return 400;
	}
	s->seed = sd ? (uint64_t)json_integer_value(sd) : 0;
	if ((ss != NULL) == (ps != NULL) || (ss && (!json_is_integer(ss) || json_integer_value(ss) < 2048)) ||
	    (ps && (!json_is_integer(ps) || json_integer_value(ps) < 1))) {
		buf_addstr(err, "dsort: value wants one of \"shard_size\" (bytes of tar, at least 2048) and "
				"\"samples_per_shard\" (at least 1)");
		return 400;
	}
	s->shard_size = ss ? (uint64_t)json_integer_value(ss) : 0;
	s->per_shard = ps ? (uint64_t)json_integer_value(ps) : 0;
	const char *t = json_string_value(tp);
	char nm[ISHARD_NAME_MAX + 1];
	if (!t || strlen(t) > ISHARD_NAME_MAX || !ishard_name(t, 0, nm) || !name_object_valid(nm, strlen(nm)) ||
	    !ishard_name_match(t, nm)) {
		buf_addstr(err, "dsort: value.template wants an object name with %d, %06d or {0000..9999} "
				"(e.g. \"out-%06d.tar\")");
		return 400;
	}
	if (!has_suffix(t, ".tar")) {
		buf_addstr(err, "dsort: value.template: output shards are tar, named \"....tar\"");
		return 400;
	}
	snprintf(s->tpl, sizeof(s->tpl), "%s", t);
	const char *i = json_string_value(it);
	if (it && (!i || strlen(i) > ISHARD_NAME_MAX || !ishard_name(i, 0, nm))) {
		buf_addstr(err, "dsort: value.input_template wants shard names with %d or {0000..9999} "
				"(e.g. \"in-{000..099}.tar\")");
		return 400;
	}
	snprintf(s->in_tpl, sizeof(s->in_tpl), "%s", i ? i : "");
	if ((pf && (!json_is_string(pf) || json_string_length(pf) > ISHARD_NAME_MAX)) ||
	    (dry && !json_is_boolean(dry))) {
		buf_addstr(err, "dsort: value.prefix wants a string, value.dry_run a boolean");
		return 400;
	}
	snprintf(s->prefix, sizeof(s->prefix), "%s", pf ? json_string_value(pf) : "");
	const char *e = json_string_value(ce), *c = json_string_value(ct);
	if (s->alg == DSORT_CONTENT) {
		if (!e || e[0] != '.' || !e[1] || strlen(e) > DSORT_EXT_MAX || strchr(e, '/') || strchr(e + 1, '.') ==
		    e + 1) {
			buf_addstr(err, "dsort: algorithm \"content\" wants value.content_ext, the extension of the "
					"member to sort by (e.g. \".cls\")");
			return 400;
		}
		if (ct && (!c || (strcmp(c, "number") && strcmp(c, "string")))) {
			buf_addstr(err, "dsort: value.content_type wants \"number\" or \"string\"");
			return 400;
		}
		snprintf(s->content_ext, sizeof(s->content_ext), "%s", e);
		s->content_num = !c || !strcmp(c, "number");
	} else if (ce || ct) {
		buf_addstr(err, "dsort: value.content_ext and content_type go with algorithm \"content\"");
		return 400;
	}
	return 0;
}

int dsort_select(json_t *spec, const char *src, json_t *listing, json_t *targets, bool same, buf_t *err)
{
	dsort_spec_t s;
	int rc = dsort_spec_parse(spec, &s, err);
	if (rc)
		return rc;
	size_t nt = json_array_size(targets), i;
	if (!nt) {
		buf_addstr(err, "dsort: no active target in the cluster");
		return 503;
	}
	uint64_t *dig = xcalloc(nt, sizeof(*dig));
	for (i = 0; i < nt; i++) {
		const char *id = json_string_value(json_array_get(json_array_get(targets, i), 0));
		dig[i] = hrw_digest(id ? id : "", id ? strlen(id) : 0);
	}
	json_t *objs = json_array(), *e, *skipped = json_array();
	uint64_t bytes = 0;
	buf_t un = BUF_INIT;
	json_array_foreach(listing, i, e) {
		const char *nm = json_string_value(json_array_get(e, 0));
		json_int_t sz = json_integer_value(json_array_get(e, 1));
		if (!nm)
			continue;
		if (same && ishard_name_match(s.tpl, nm)) {
			buf_addf(err, "dsort: the output template \"%s\" names \"%s\", an object of the input bucket "
				      "(choose another template or another destination bucket)", s.tpl, nm);
			rc = 400;
			goto out;
		}
		if (strncmp(nm, s.prefix, strlen(s.prefix)) || (s.in_tpl[0] && !ishard_name_match(s.in_tpl, nm)))
			continue;
		if (!has_suffix(nm, ".tar") && larc_kind_of(nm, strlen(nm)) == LARC_NONE) {
			if (json_array_size(skipped) < 100)
				json_array_append_new(skipped, json_string(nm));
			continue;
		}
		un.len = 0;
		buf_addf(&un, "%s/%s", src, nm);
		size_t owner = hrw_owner(hrw_name_hash(un.ptr, un.len), dig, nt);
		json_array_append_new(objs, json_pack("[s,I,I]", nm, sz, (json_int_t)owner));
		bytes += (uint64_t)sz;
	}
	if (!json_array_size(objs)) {
		buf_addf(err, "dsort: no input shard (a .tar, .tgz, .tar.gz or .zip object) under prefix \"%s\"%s%s%s", s.prefix,
			 s.in_tpl[0] ? " matching \"" : "", s.in_tpl, s.in_tpl[0] ? "\"" : "");
		rc = 400;
		goto out;
	}
	if (s.shard_size) { /* output tar is at least the input's less its end blocks and headers, /4 */
		uint64_t end = (uint64_t)json_array_size(objs) * TAR_RECORD;
		uint64_t need = bytes > end ? (bytes - end) / 4 / s.shard_size : 0;
		char nm[ISHARD_NAME_MAX + 1];
		if (need > 1 && !ishard_name(s.tpl, need - 1, nm)) {
			buf_addf(err, "dsort: the template \"%s\" cannot name the at least %llu shards of %llu bytes "
				      "that %llu bytes of input make (widen its range, or raise shard_size)",
				 s.tpl, (unsigned long long)need, (unsigned long long)s.shard_size,
				 (unsigned long long)bytes);
			rc = 400;
			goto out;
		}
	}
	json_object_set(spec, "objects", objs);
	json_object_set(spec, "targets", targets);
	json_object_set(spec, "skipped", skipped);
	if (!json_object_get(spec, "seed") && s.alg == DSORT_SHUFFLE)
		json_object_set_new(spec, "seed", json_integer((json_int_t)(time_now_ns() & 0x7fffffffffffll)));
out:
	buf_free(&un);
	free(dig);
	json_decref(objs);
	json_decref(skipped);
	return rc;
}

void dsort_dry_summary(json_t *spec, json_t *out)
{
	json_t *objs = json_object_get(spec, "objects"), *targets = json_object_get(spec, "targets"), *e;
	json_t *per = json_object();
	size_t i, nt = json_array_size(targets);
	uint64_t bytes = 0, *tb = xcalloc(nt + 1, sizeof(*tb)), *tn = xcalloc(nt + 1, sizeof(*tn));
	json_array_foreach(objs, i, e) {
		size_t t = (size_t)json_integer_value(json_array_get(e, 2));
		uint64_t sz = (uint64_t)json_integer_value(json_array_get(e, 1));
		bytes += sz;
		if (t < nt) {
			tb[t] += sz;
			tn[t]++;
		}
	}
	for (i = 0; i < nt; i++)
		json_object_set_new(per, json_string_value(json_array_get(json_array_get(targets, i), 0)),
				    json_pack("{s:I,s:I}", "shards", (json_int_t)tn[i], "bytes", (json_int_t)tb[i]));
	dsort_spec_t s;
	buf_t err = BUF_INIT;
	dsort_spec_parse(spec, &s, &err);
	char nm[ISHARD_NAME_MAX + 1] = "";
	ishard_name(s.tpl, 0, nm);
	json_t *o = json_pack("{s:s}", "first", nm);
	if (s.shard_size)
		json_object_set_new(o, "estimated_shards", json_integer((json_int_t)((bytes + s.shard_size - 1) /
										      s.shard_size)));
	json_object_set_new(out, "input_shards", json_integer((json_int_t)json_array_size(objs)));
	json_object_set_new(out, "input_bytes", json_integer((json_int_t)bytes));
	json_object_set(out, "skipped", json_object_get(spec, "skipped"));
	json_object_set_new(out, "targets", per);
	json_object_set_new(out, "algorithm", json_string(alg_names[s.alg]));
	if (json_object_get(spec, "seed"))
		json_object_set(out, "seed", json_object_get(spec, "seed"));
	json_object_set_new(out, "output", o);
	buf_free(&err);
	free(tb);
	free(tn);
}

/* A decimal number's parts: sign, integer digits (no leading zeros) and
 * fraction digits (no trailing zeros). */
struct num {
	bool neg;
	const char *ip, *fp;
	size_t il, fl;
};

static bool num_of(const char *p, size_t n, struct num *x)
{
	size_t i = 0;
	memset(x, 0, sizeof(*x));
	if (i < n && (p[i] == '-' || p[i] == '+'))
		x->neg = p[i++] == '-';
	size_t d0 = i;
	while (i < n && p[i] >= '0' && p[i] <= '9')
		i++;
	x->ip = p + d0;
	x->il = i - d0;
	if (i < n && p[i] == '.') {
		x->fp = p + ++i;
		while (i < n && p[i] >= '0' && p[i] <= '9')
			i++;
		x->fl = (size_t)(p + i - x->fp);
	}
	if (i != n || x->il + x->fl == 0)
		return false;
	while (x->il && x->ip[0] == '0')
		x->ip++, x->il--;
	while (x->fl && x->fp[x->fl - 1] == '0')
		x->fl--;
	if (!x->il && !x->fl)
		x->neg = false; /* -0 is 0 */
	return true;
}

int dsort_numcmp(const char *a, size_t alen, const char *b, size_t blen, bool *ok)
{
	struct num x, y;
	*ok = num_of(a, alen, &x) && num_of(b, blen, &y);
	if (!*ok)
		return 0;
	if (x.neg != y.neg)
		return x.neg ? -1 : 1;
	int c = x.il != y.il ? (x.il < y.il ? -1 : 1) : memcmp(x.ip, y.ip, x.il);
	if (!c) {
		size_t m = MIN(x.fl, y.fl);
		c = memcmp(x.fp ? x.fp : "", y.fp ? y.fp : "", m);
		if (!c && x.fl != y.fl)
			c = x.fl < y.fl ? -1 : 1;
	}
	c = c < 0 ? -1 : c > 0;
	return x.neg ? -c : c;
}

/* numeric: the key's last run of digits; false when it has none. */
static bool digits_of(const char *k, const char **p, size_t *n)
{
	size_t e = strlen(k);
	while (e && (k[e - 1] < '0' || k[e - 1] > '9'))
		e--;
	size_t b = e;
	while (b && k[b - 1] >= '0' && k[b - 1] <= '9')
		b--;
	*p = k + b;
	*n = e - b;
	return e > b;
}

static _Thread_local const dsort_rec_t *cmp_recs;
static _Thread_local const dsort_spec_t *cmp_spec;

static int canon_cmp(const dsort_rec_t *x, const dsort_rec_t *y)
{
	int c = strcmp(x->key, y->key);
	if (c)
		return c;
	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

static int order_cmp(const void *a, const void *b)
{
	const dsort_rec_t *x = &cmp_recs[*(const size_t *)a], *y = &cmp_recs[*(const size_t *)b];
	const dsort_spec_t *s = cmp_spec;
	int c = 0;
	bool ok = true;
	if (s->alg == DSORT_NUMERIC) {
		const char *xp, *yp;
		size_t xn, yn;
		bool xd = digits_of(x->key, &xp, &xn), yd = digits_of(y->key, &yp, &yn);
		if (xd != yd)
			return xd ? -1 : 1; /* keys without a number after the numbered */
		if (xd)
			c = dsort_numcmp(xp, xn, yp, yn, &ok);
	} else if (s->alg == DSORT_CONTENT) {
		if (s->content_num)
			c = dsort_numcmp(x->skey, x->sklen, y->skey, y->sklen, &ok);
		if (!s->content_num || !ok) { /* (the index checked numbers; text order as a fallback) */
			c = memcmp(x->skey, y->skey, MIN(x->sklen, y->sklen));
			if (!c && x->sklen != y->sklen)
				c = x->sklen < y->sklen ? -1 : 1;
		}
	}
	return c ? c : canon_cmp(x, y);
}

static int canon_qcmp(const void *a, const void *b)
{
	return canon_cmp(&cmp_recs[*(const size_t *)a], &cmp_recs[*(const size_t *)b]);
}

void dsort_order(const dsort_spec_t *s, const dsort_rec_t *recs, size_t n, size_t *order)
{
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	cmp_recs = recs;
	cmp_spec = s;
	if (s->alg == DSORT_SHUFFLE) {
		qsort(order, n, sizeof(*order), canon_qcmp);
		ishard_shuffle(order, n, s->seed);
	} else {
		qsort(order, n, sizeof(*order), order_cmp);
	}
	cmp_recs = NULL;
	cmp_spec = NULL;
}

int dsort_cut(const dsort_spec_t *s, const dsort_rec_t *recs, const size_t *order, size_t n, dsort_out_t **outs,
	      size_t *nouts, buf_t *err)
{
	dsort_out_t *o = xcalloc(n + 1, sizeof(*o));
	size_t no = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t b = recs[order[i]].bytes;
		dsort_out_t *cur = no ? &o[no - 1] : NULL;
		if (!cur || (s->shard_size ? cur->bytes + b > s->shard_size : cur->n >= s->per_shard)) {
			cur = &o[no++];
			cur->first = i;
			cur->bytes = END_BYTES;
		}
		cur->n++;
		cur->bytes += b;
	}
	char nm[ISHARD_NAME_MAX + 1];
	if (no && !ishard_name(s->tpl, no - 1, nm)) {
		buf_addf(err, "dsort: the template \"%s\" cannot name the %zu output shards (widen its range, or raise "
			      "shard_size or samples_per_shard)", s->tpl, no);
		free(o);
		return 400;
	}
	*outs = o;
	*nouts = no;
	return 0;
}
