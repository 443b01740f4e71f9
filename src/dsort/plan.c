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

static const char *const alg_names[] = {"shuffle", "alphanumeric", "numeric", "content", "order"};

static bool has_suffix(const char *s, const char *sfx)
{
	size_t n = strlen(s), m = strlen(sfx);
	return n >= m && !strcmp(s + n - m, sfx);
}

static bool out_suffix(const char *s)
{
	return has_suffix(s, ".tar") || has_suffix(s, ".tgz") || has_suffix(s, ".tar.gz");
}

bool dsort_out_name_ok(const char *name)
{
	size_t n = strlen(name);
	return n <= ISHARD_NAME_MAX && name_object_valid(name, n) && out_suffix(name);
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
		buf_addstr(err, "dsort: value.algorithm wants \"shuffle\", \"alphanumeric\", \"numeric\", \"content\" "
				"or \"order\"");
		return 400;
	}
	s->alg = (enum dsort_alg)k;
	if (sd && (!json_is_integer(sd) || json_integer_value(sd) < 0)) {
		buf_addstr(err, "dsort: value.seed wants an integer >= 0");
		return 400;
	}
	s->seed = sd ? (uint64_t)json_integer_value(sd) : 0;
	bool ord = s->alg == DSORT_ORDER;
	if (ord && (ss || ps)) {
		buf_addstr(err, "dsort: algorithm \"order\": the order file names the output shards (no shard_size "
				"nor samples_per_shard)");
		return 400;
	}
	if ((!ord && (ss != NULL) == (ps != NULL)) || (ss && (!json_is_integer(ss) || json_integer_value(ss) < 2048)) ||
	    (ps && (!json_is_integer(ps) || json_integer_value(ps) < 1))) {
		buf_addstr(err, "dsort: value wants one of \"shard_size\" (bytes of tar, at least 2048) and "
				"\"samples_per_shard\" (at least 1)");
		return 400;
	}
	s->shard_size = ss ? (uint64_t)json_integer_value(ss) : 0;
	s->per_shard = ps ? (uint64_t)json_integer_value(ps) : 0;
	const char *t = json_string_value(tp);
	char nm[ISHARD_NAME_MAX + 1];
	if ((tp || !ord) &&
	    (!t || strlen(t) > ISHARD_NAME_MAX || !ishard_name(t, 0, nm) || !name_object_valid(nm, strlen(nm)) ||
	     !ishard_name_match(t, nm))) {
		buf_addstr(err, "dsort: value.template wants an object name with %d, %06d or {0000..9999} "
				"(e.g. \"out-%06d.tar\")");
		return 400;
	}
	if (t && !out_suffix(t)) {
		buf_addstr(err, "dsort: value.template: output shards are tar, named \"....tar\" (or gzip-compressed "
				"tar, \"....tgz\" or \"....tar.gz\")");
		return 400;
	}
	snprintf(s->tpl, sizeof(s->tpl), "%s", t ? t : "");
	json_t *of = json_object_get(spec, "order_file"), *ul = json_object_get(spec, "unlisted_shard");
	const char *o = json_string_value(of), *u = json_string_value(ul), *sl = o ? strchr(o, '/') : NULL;
	if (!ord && (of || ul)) {
		buf_addstr(err, "dsort: value.order_file and unlisted_shard go with algorithm \"order\"");
		return 400;
	}
	if (ord && (!sl || sl == o || (size_t)(sl - o) > NAME_BUCKET_MAX || !name_bucket_valid(o, (size_t)(sl - o)) ||
		    !sl[1] || strlen(sl + 1) > ISHARD_NAME_MAX || !name_object_valid(sl + 1, strlen(sl + 1)))) {
		buf_addstr(err, "dsort: algorithm \"order\" wants value.order_file, the order file's BUCKET/OBJECT "
				"(lines KEY<TAB>OUTPUT-SHARD)");
		return 400;
	}
	if (ul && (!u || !dsort_out_name_ok(u) || (s->tpl[0] && !ishard_name_match(s->tpl, u)))) {
		buf_addstr(err, "dsort: value.unlisted_shard wants the name of the output shard of the samples the "
				"order file does not list (ending .tar, .tgz or .tar.gz, named by the template when "
				"there is one)");
		return 400;
	}
	snprintf(s->order_file, sizeof(s->order_file), "%s", o ? o : "");
	snprintf(s->unlisted, sizeof(s->unlisted), "%s", u ? u : "");
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

static int str_qcmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

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
	dsort_ofile_t of = {0};
	const char **names = NULL; /* "order": the file's shard names, sorted */
	if (s.alg == DSORT_ORDER) {
		json_t *ot = json_object_get(spec, "order_text");
		if (!json_is_string(ot)) {
			buf_addf(err, "dsort: the order file %s was not read", s.order_file);
			rc = 400;
			goto out;
		}
		if (dsort_ofile_parse(json_string_value(ot), json_string_length(ot), s.tpl, &of, err) != 0) {
			rc = 400;
			goto out;
		}
		names = xcalloc(of.nshards + 1, sizeof(*names));
		memcpy(names, of.shards, of.nshards * sizeof(*names));
		qsort(names, of.nshards, sizeof(*names), str_qcmp);
	}
	json_array_foreach(listing, i, e) {
		const char *nm = json_string_value(json_array_get(e, 0));
		json_int_t sz = json_integer_value(json_array_get(e, 1));
		if (!nm)
			continue;
		if (same && s.tpl[0] && ishard_name_match(s.tpl, nm)) {
			buf_addf(err, "dsort: the output template \"%s\" names \"%s\", an object of the input bucket "
				      "(choose another template or another destination bucket)", s.tpl, nm);
			rc = 400;
			goto out;
		}
		if (same && (!strcmp(nm, s.unlisted) ||
			     (names && bsearch(&nm, names, of.nshards, sizeof(*names), str_qcmp)))) {
			buf_addf(err, "dsort: the order file or unlisted_shard names \"%s\", an object of the input "
				      "bucket (choose other names or another destination bucket)", nm);
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
	if (s.per_shard) { /* every input shard holds a sample at least */
		uint64_t need = ((uint64_t)json_array_size(objs) + s.per_shard - 1) / s.per_shard;
		char nm[ISHARD_NAME_MAX + 1];
		if (need > 1 && !ishard_name(s.tpl, need - 1, nm)) {
			buf_addf(err, "dsort: the template \"%s\" cannot name the at least %llu shards of %llu samples "
				      "that %zu input shards make (widen its range, or raise samples_per_shard)",
				 s.tpl, (unsigned long long)need, (unsigned long long)s.per_shard, json_array_size(objs));
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
	free(names);
	dsort_ofile_free(&of);
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
	dsort_ofile_t of = {0};
	json_t *ot = json_object_get(spec, "order_text");
	if (s.alg == DSORT_ORDER && dsort_ofile_parse(json_string_value(ot) ? json_string_value(ot) : "",
						      json_string_length(ot), s.tpl, &of, &err) == 0)
		snprintf(nm, sizeof(nm), "%s", of.shards[0]);
	else if (s.tpl[0])
		ishard_name(s.tpl, 0, nm);
	json_t *o = json_pack("{s:s}", "first", nm);
	if (s.alg == DSORT_ORDER)
		json_object_set_new(o, "shards_named", json_integer((json_int_t)of.nshards));
	dsort_ofile_free(&of);
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

/* --- order files ------------------------------------------------------------ */

static uint64_t fnv(const char *p)
{
	uint64_t h = 1469598103934665603ull;
	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}

static int okey_cmp(const void *a, const void *b)
{
	return strcmp(((const dsort_okey_t *)a)->key, ((const dsort_okey_t *)b)->key);
}

int dsort_ofile_parse(const char *text, size_t len, const char *tpl, dsort_ofile_t *of, buf_t *err)
{
	memset(of, 0, sizeof(*of));
	if (len > DSORT_ORDER_MAX) {
		buf_addf(err, "dsort: the order file has more than %u bytes", DSORT_ORDER_MAX);
		return 400;
	}
	if (memchr(text, '\0', len)) {
		buf_addstr(err, "dsort: the order file is not text (a NUL byte)");
		return 400;
	}
	of->text = xmalloc(len + 1);
	memcpy(of->text, text, len);
	of->text[len] = '\0';
	size_t lines = 1, tcap = 16, line = 0;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	while (tcap < 2 * lines)
		tcap *= 2;
	uint32_t *tab = xcalloc(tcap, sizeof(*tab)); /* shard name -> its index + 1 */
	of->shards = xcalloc(lines, sizeof(*of->shards));
	of->keys = xcalloc(lines, sizeof(*of->keys));
	int rc = 0;
	for (char *p = of->text, *nl; p && *p && !rc; p = nl) {
		line++;
		if ((nl = strchr(p, '\n')))
			*nl++ = '\0';
		size_t n = strlen(p);
		if (n && p[n - 1] == '\r')
			p[--n] = '\0';
		if (!n || p[0] == '#')
			continue;
		char *t = strchr(p, '\t');
		if (!t || t == p) {
			buf_addf(err, "dsort: order file line %zu: wants KEY<TAB>OUTPUT-SHARD", line);
			rc = 400;
			break;
		}
		*t++ = '\0';
		if (!dsort_out_name_ok(t) || (tpl[0] && !ishard_name_match(tpl, t))) {
			buf_addf(err, "dsort: order file line %zu: \"%.200s\" is not an output shard name (an object name "
				      "ending .tar, .tgz or .tar.gz%s%s%s)", line, t, tpl[0] ? " named by the template \"" : "",
				 tpl, tpl[0] ? "\"" : "");
			rc = 400;
			break;
		}
		size_t h = (size_t)fnv(t) & (tcap - 1);
		while (tab[h] && strcmp(of->shards[tab[h] - 1], t))
			h = (h + 1) & (tcap - 1);
		if (!tab[h]) {
			of->shards[of->nshards++] = t;
			tab[h] = (uint32_t)of->nshards;
		}
		of->keys[of->nkeys++] = (dsort_okey_t){.key = p, .shard = tab[h] - 1, .line = (uint32_t)line};
	}
	free(tab);
	if (!rc && !of->nkeys) {
		buf_addstr(err, "dsort: the order file lists no sample (lines KEY<TAB>OUTPUT-SHARD)");
		rc = 400;
	}
	if (!rc) {
		qsort(of->keys, of->nkeys, sizeof(*of->keys), okey_cmp);
		for (size_t i = 1; i < of->nkeys && !rc; i++)
			if (!strcmp(of->keys[i - 1].key, of->keys[i].key)) {
				buf_addf(err, "dsort: order file lines %u and %u: key \"%.200s\" listed twice",
					 MIN(of->keys[i - 1].line, of->keys[i].line), MAX(of->keys[i - 1].line, of->keys[i].line),
					 of->keys[i].key);
				rc = 400;
			}
	}
	if (rc)
		dsort_ofile_free(of);
	return rc;
}

void dsort_ofile_free(dsort_ofile_t *of)
{
	free(of->text);
	free(of->shards);
	free(of->keys);
	memset(of, 0, sizeof(*of));
}

const dsort_okey_t *dsort_ofile_find(const dsort_ofile_t *of, const char *key)
{
	dsort_okey_t k = {.key = key};
	return of && of->nkeys ? bsearch(&k, of->keys, of->nkeys, sizeof(k), okey_cmp) : NULL;
}

/* "order": the file's shard index of unlisted_shard (nshards: a shard of
 * its own). */
static uint32_t unlisted_idx(const dsort_spec_t *s)
{
	uint32_t i = 0;
	while (i < s->of->nshards && strcmp(s->of->shards[i], s->unlisted))
		i++;
	return i;
}

/* "order": record r's shard and rank; false when the file does not list it. */
static bool placed(const dsort_spec_t *s, uint32_t unl, const dsort_rec_t *r, uint32_t *shard, uint32_t *line)
{
	const dsort_okey_t *k = dsort_ofile_find(s->of, r->key);
	*shard = k ? k->shard : unl;
	*line = k ? k->line : UINT32_MAX;
	return k != NULL;
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

/* "order": records by the file's shard and line, then canonical. */
struct place {
	uint32_t shard, line;
};
static _Thread_local const struct place *cmp_place;

static int place_qcmp(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct place *x = &cmp_place[i], *y = &cmp_place[j];
	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return canon_cmp(&cmp_recs[i], &cmp_recs[j]);
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
	} else if (s->alg == DSORT_ORDER) {
		struct place *pl = xcalloc(n + 1, sizeof(*pl));
		uint32_t unl = unlisted_idx(s);
		for (size_t i = 0; i < n; i++)
			placed(s, unl, &recs[i], &pl[i].shard, &pl[i].line);
		cmp_place = pl;
		qsort(order, n, sizeof(*order), place_qcmp);
		cmp_place = NULL;
		free(pl);
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
	bool ord = s->alg == DSORT_ORDER;
	uint32_t unl = ord ? unlisted_idx(s) : 0, sh = 0, line;
	for (size_t i = 0; i < n; i++) {
		const dsort_rec_t *r = &recs[order[i]];
		uint64_t b = r->bytes;
		dsort_out_t *cur = no ? &o[no - 1] : NULL;
		if (ord && !placed(s, unl, r, &sh, &line) && !s->unlisted[0]) {
			buf_addf(err, "dsort: sample \"%.200s\" is not in the order file (list it, or name a shard for "
				      "such samples with unlisted_shard)", r->key);
			free(o);
			return 400;
		}
		if (!cur || (ord ? cur->oshard != sh
				 : s->shard_size ? cur->bytes + b > s->shard_size : cur->n >= s->per_shard)) {
			cur = &o[no++];
			cur->first = i;
			cur->bytes = END_BYTES;
			cur->oshard = sh;
		}
		cur->n++;
		cur->bytes += b;
	}
	char nm[ISHARD_NAME_MAX + 1];
	if (!ord && no && !ishard_name(s->tpl, no - 1, nm)) {
		buf_addf(err, "dsort: the template \"%s\" cannot name the %zu output shards (widen its range, or raise "
			      "shard_size or samples_per_shard)", s->tpl, no);
		free(o);
		return 400;
	}
	*outs = o;
	*nouts = no;
	return 0;
}

void dsort_out_name(const dsort_spec_t *s, const dsort_out_t *outs, size_t i, char *nm)
{
	if (s->alg != DSORT_ORDER) {
		ishard_name(s->tpl, i, nm);
		return;
	}
	uint32_t k = outs[i].oshard;
	snprintf(nm, ISHARD_NAME_MAX + 1, "%s", k < s->of->nshards ? s->of->shards[k] : s->unlisted);
}
