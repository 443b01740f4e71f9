/*
 * spec.c - the value of a copy-bck or etl-bck run, checked (xcopy.h), and
 * the extension renames it asks for. Pure: the gateway checks a value
 * before it starts a run, every target again at its start.
 */
#include <stdio.h>
#include <string.h>

#include "aisd/etl.h"
#include "aisd/names.h"
#include "aisd/xcopy.h"
#include "aisd/banned.h"

/* An extension without its dot: 1..XCOPY_EXT_LEN of anything but '/'
 * and '.'. */
static bool ext_ok(const char *s, size_t len)
{
	if (len && s[0] == '.')
		s++, len--;
	if (!len || len > XCOPY_EXT_LEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '/' || s[i] == '.' || !s[i])
			return false;
	return true;
}

int xcopy_ext_parse(json_t *o, xcopy_ext_t *out, buf_t *err)
{
	memset(out, 0, sizeof(*out));
	if (!o)
		return 0;
	const char *k;
	json_t *v;
	if (!json_is_object(o) || json_object_size(o) > XCOPY_EXT_MAX)
		goto bad;
	json_object_foreach(o, k, v)
	{
		if (!json_is_string(v) || !ext_ok(k, strlen(k)) || !ext_ok(json_string_value(v), json_string_length(v)))
			goto bad;
		snprintf(out->from[out->n], sizeof(out->from[0]), "%s", k + (k[0] == '.'));
		const char *t = json_string_value(v);
		snprintf(out->to[out->n], sizeof(out->to[0]), "%s", t + (t[0] == '.'));
		out->n++;
	}
	return 0;
bad:
	if (err)
		buf_addf(err, "value.ext: at most %d pairs {\"jpg\":\"npy\"} (extensions of 1..%d bytes, no '/')",
			 XCOPY_EXT_MAX, XCOPY_EXT_LEN);
	return -1;
}

bool xcopy_rename(const xcopy_ext_t *e, const char *name, size_t len, char *out, size_t outsz)
{
	const char *slash = memrchr(name, '/', len), *base = slash ? slash + 1 : name;
	const char *dot = memrchr(base, '.', len - (size_t)(base - name));
	size_t keep = len;
	const char *to = NULL;
	if (dot && dot > base) /* ".hidden" has no extension */
		for (size_t i = 0; i < e->n && !to; i++)
			if ((size_t)(name + len - dot - 1) == strlen(e->from[i]) &&
			    !memcmp(dot + 1, e->from[i], strlen(e->from[i]))) {
				keep = (size_t)(dot + 1 - name);
				to = e->to[i];
			}
	int n = snprintf(out, outsz, "%.*s%s", (int)keep, name, to ? to : "");
	return n > 0 && (size_t)n < outsz && name_object_valid(out, (size_t)n);
}

int xcopy_spec_check(json_t *v, bool etl, buf_t *err)
{
	json_t *pfx = json_object_get(v, "prefix"), *dry = json_object_get(v, "dry_run");
	json_t *tpl = json_object_get(v, "template"), *coer = json_object_get(v, "coer");
	json_t *en = json_object_get(v, "etl"), *ea = json_object_get(v, "etl_args");
	name_tpl_t t;
	xcopy_ext_t e;
	if (v && !json_is_object(v)) {
		buf_addstr(err, "value: a JSON object");
		return -1;
	}
	if ((pfx && !json_is_string(pfx)) || (dry && !json_is_boolean(dry)) || (coer && !json_is_boolean(coer))) {
		buf_addstr(err, "value: {\"prefix\":\"..\",\"dry_run\":bool,\"coer\":bool}");
		return -1;
	}
	if (tpl && (!json_is_string(tpl) || !name_tpl_parse(json_string_value(tpl), &t))) {
		buf_addstr(err, "value.template: one brace range, \"pre{0000..0999}post\"");
		return -1;
	}
	if (xcopy_ext_parse(json_object_get(v, "ext"), &e, err) != 0)
		return -1;
	if (etl && (!json_is_string(en) || !json_string_length(en) || json_string_length(en) > ETL_NAME_MAX)) {
		buf_addstr(err, "value: the transformer's name (\"id\" or \"etl\")");
		return -1;
	}
	if (!etl && (en || ea)) {
		buf_addstr(err, "copy-bck takes no transformer (etl-bck does)");
		return -1;
	}
	if (ea && !json_is_string(ea)) {
		buf_addstr(err, "value.etl_args: a string");
		return -1;
	}
	return 0;
}

