/*
 * spec.c - the spec of an archive request (xarch.h): its options checked
 * and its object names expanded, the same on the gateway (which answers
 * 400) and on the targets. Pure.
 */
#include <stdio.h>
#include <string.h>

#include "aisd/ishard.h"
#include "aisd/names.h"
#include "aisd/tgzw.h"
#include "aisd/xarch.h"
#include "aisd/banned.h"

/* The number of names tpl makes: one brace range "{A..B}" required (a
 * printf template names without end). 0 when tpl has none. */
static size_t tpl_count(const char *tpl)
{
	const char *o = strchr(tpl, '{');
	char nm[ISHARD_NAME_MAX + 1];
	if (!o || !strstr(o, "..") || !ishard_name(tpl, 0, nm))
		return 0;
	size_t lo = 0, hi = XARCH_NAMES_MAX + 1; /* the first index it cannot name */
	while (lo + 1 < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ishard_name(tpl, mid, nm))
			lo = mid;
		else
			hi = mid;
	}
	return lo + 1;
}

static bool is_bool_or_absent(json_t *x)
{
	return !x || json_is_boolean(x);
}

int xarch_spec_check(json_t *v, buf_t *err)
{
	json_t *an = json_object_get(v, "archname"), *mime = json_object_get(v, "mime");
	json_t *list = json_object_get(v, "list"), *tpl = json_object_get(v, "template"), *e;
	size_t i;
	if (!json_is_object(v)) {
		buf_addstr(err, "archive: value wants {\"archname\":SHARD,\"list\":[..] or \"template\":\"..\"}");
		return 400;
	}
	const char *a = json_string_value(an);
	size_t alen = a ? strlen(a) : 0;
	if (!a || !name_object_valid(a, alen)) {
		buf_addstr(err, "archive: value.archname wants the shard's object name (e.g. \"shards/s-0001.tar\")");
		return 400;
	}
	bool tgz = tgzw_is_tgz(a, alen), tar = alen > 4 && !strcmp(a + alen - 4, ".tar");
	if (!tgz && !tar && json_is_true(json_object_get(v, "append"))) {
		buf_addf(err, "archive: append: \"%.200s\" is not a shard this cluster can append to: only tar "
			      "(.tar) and gzip-compressed tar (.tgz, .tar.gz) shards are appended to", a);
		return 400;
	}
	if (!tgz && !tar) {
		buf_addf(err, "archive: unknown format of \"%.200s\": shards are tar (.tar) or gzip-compressed tar "
			      "(.tgz, .tar.gz), named so", a);
		return 400;
	}
	if (mime) {
		const char *m = json_string_value(mime);
		if (m && *m == '.')
			m++;
		bool mt = m && !strcmp(m, "tar"), mz = m && (!strcmp(m, "tgz") || !strcmp(m, "tar.gz"));
		if (!mt && !mz) {
			buf_addstr(err, "archive: unknown format in value.mime: \".tar\", \".tgz\" or \".tar.gz\"");
			return 400;
		}
		if (mt != tar) {
			buf_addf(err, "archive: value.mime \"%s\" does not agree with the shard's name \"%.200s\"",
				 json_string_value(mime), a);
			return 400;
		}
	}
	if (!is_bool_or_absent(json_object_get(v, "append")) || !is_bool_or_absent(json_object_get(v, "overwrite")) ||
	    !is_bool_or_absent(json_object_get(v, "inclsrcname"))) {
		buf_addstr(err, "archive: value.append, value.overwrite and value.inclsrcname are true or false");
		return 400;
	}
	if (!list == !tpl) {
		buf_addstr(err, "archive: value wants one of \"list\" (object names) and \"template\" "
				"(\"prefix{000..099}suffix\")");
		return 400;
	}
	if (list) {
		bool ok = json_is_array(list) && json_array_size(list) > 0 &&
			  json_array_size(list) <= XARCH_NAMES_MAX;
		json_array_foreach(list, i, e) ok = ok && json_is_string(e) &&
						    name_object_valid(json_string_value(e), json_string_length(e));
		if (!ok) {
			buf_addf(err, "archive: value.list wants 1 to %d object names (UTF-8, no NUL, no \".\" or "
				      "\"..\" segment)", XARCH_NAMES_MAX);
			return 400;
		}
		return 0;
	}
	const char *t = json_string_value(tpl);
	size_t n = t ? tpl_count(t) : 0;
	char nm[ISHARD_NAME_MAX + 1];
	if (!n || n > XARCH_NAMES_MAX || !ishard_name(t, 0, nm) || !name_object_valid(nm, strlen(nm))) {
		buf_addf(err, "archive: value.template wants object names with one range, e.g. "
			      "\"img-{0000..0999}.jpg\" (at most %d names)", XARCH_NAMES_MAX);
		return 400;
	}
	return 0;
}

json_t *xarch_names(json_t *v)
{
	json_t *list = json_object_get(v, "list");
	if (list)
		return json_deep_copy(list);
	const char *t = json_string_value(json_object_get(v, "template"));
	json_t *out = json_array();
	char nm[ISHARD_NAME_MAX + 1];
	for (size_t i = 0; t && i < XARCH_NAMES_MAX && ishard_name(t, i, nm); i++)
		json_array_append_new(out, json_string(nm));
	return out;
}

bool xarch_is_tgz(json_t *v)
{
	const char *a = json_string_value(json_object_get(v, "archname"));
	return a && tgzw_is_tgz(a, strlen(a));
}
