/*
 * moss.c - the GetBatch request parser (see moss.h).
 *
 * Pure: bytes in, a validated request out, nothing trusted. Every name is
 * checked with the same rules as the object API (names.h), numbers must be
 * non-negative integers, unknown output formats and non-ais providers are
 * refused, and the entry count is bounded by the caller's maximum (at most
 * MOSS_MAX_ENTRIES) before any entry is read.
 */
#include <jansson.h>
#include <stdarg.h>
#include <string.h>

#include "aisd/moss.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/banned.h"

static int fail(buf_t *err, json_t *doc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(buf_t *err, json_t *doc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(err, fmt, ap);
	va_end(ap);
	json_decref(doc);
	return AIS_ERR;
}

/* Optional string member: AIS_OK (absent: s = {NULL,0}) or AIS_ERR. */
static int opt_str(json_t *o, const char *key, sv_t *s)
{
	json_t *v = json_object_get(o, key);
	*s = (sv_t){NULL, 0};
	if (!v || json_is_null(v))
		return AIS_OK;
	if (!json_is_string(v))
		return AIS_ERR;
	*s = (sv_t){json_string_value(v), json_string_length(v)};
	return AIS_OK;
}

static int opt_u64(json_t *o, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	*out = 0;
	if (!v || json_is_null(v))
		return AIS_OK;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return AIS_ERR;
	*out = (uint64_t)json_integer_value(v);
	return AIS_OK;
}

static int opt_bool(json_t *o, const char *key, bool *out)
{
	json_t *v = json_object_get(o, key);
	*out = false;
	if (!v || json_is_null(v))
		return AIS_OK;
	if (!json_is_boolean(v))
		return AIS_ERR;
	*out = json_is_true(v);
	return AIS_OK;
}

int moss_parse(arena_t *a, const char *p, size_t len, sv_t dflt, size_t max, moss_req_t *out, buf_t *err)
{
	json_error_t jerr;
	json_t *doc = json_loadb(p, len, JSON_REJECT_DUPLICATES, &jerr), *req = doc, *in;
	sv_t mime;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(doc))
		return fail(err, doc, "invalid JSON body: want {\"in\":[{\"objname\":...},...]}");
	if (json_object_get(doc, "action")) { /* {"action":"getbatch","value":{...}} */
		json_t *act = json_object_get(doc, "action");
		if (!json_is_string(act) || strcmp(json_string_value(act), "getbatch"))
			return fail(err, doc, "unknown action (want \"getbatch\")");
		req = json_object_get(doc, "value");
		if (!json_is_object(req))
			return fail(err, doc, "\"value\" must be an object");
	}
	in = json_object_get(req, "in");
	if (!json_is_array(in) || json_array_size(in) == 0)
		return fail(err, doc, "\"in\" must be a non-empty array of entries");
	if (!max || max > MOSS_MAX_ENTRIES)
		max = MOSS_MAX_ENTRIES;
	if (json_array_size(in) > max)
		return fail(err, doc, "too many entries (%zu): at most %zu per request (getbatch.max_entries)",
			    json_array_size(in), max);
	if (opt_str(req, "mime", &mime) != AIS_OK ||
	    (mime.len && strcmp(mime.ptr, ".tar") && strcmp(mime.ptr, "tar")))
		return fail(err, doc, "unsupported \"mime\": only \".tar\" output is supported");
	if (opt_bool(req, "coer", &out->coer) != AIS_OK || opt_bool(req, "onob", &out->onob) != AIS_OK ||
	    opt_bool(req, "strm", &out->strm) != AIS_OK)
		return fail(err, doc, "\"coer\", \"onob\" and \"strm\" must be booleans");
	sv_t etl, eargs;
	if (opt_str(req, "etl", &etl) != AIS_OK || opt_str(req, "etl_args", &eargs) != AIS_OK)
		return fail(err, doc, "\"etl\" and \"etl_args\" must be strings");
	if (etl.len && !name_ident_valid(etl.ptr, etl.len, 64))
		return fail(err, doc, "invalid \"etl\": a transformer's name");
	if (!etl.len && eargs.len)
		return fail(err, doc, "\"etl_args\" without \"etl\"");
	out->etl = (sv_t){etl.len ? arena_svdup(a, etl) : "", etl.len};
	out->etl_args = (sv_t){eargs.len ? arena_svdup(a, eargs) : "", eargs.len};

	out->n = json_array_size(in);
	out->in = arena_zalloc(a, out->n * sizeof(*out->in));
	for (size_t i = 0; i < out->n; i++) {
		json_t *e = json_array_get(in, i);
		moss_in_t *m = &out->in[i];
		sv_t obj, bck, arch, prov;
		if (!json_is_object(e))
			return fail(err, doc, "entry %zu: not an object", i);
		if (opt_str(e, "objname", &obj) != AIS_OK || !obj.ptr)
			return fail(err, doc, "entry %zu: \"objname\" (a string) is required", i);
		if (!name_object_valid(obj.ptr, obj.len))
			return fail(err, doc, "entry %zu: invalid objname (1 to 1024 bytes of UTF-8, no NUL, no \".\" or \"..\" segment)", i);
		if (opt_str(e, "bucket", &bck) != AIS_OK)
			return fail(err, doc, "entry %zu: \"bucket\" must be a string", i);
		if (!bck.len)
			bck = dflt;
		if (!bck.len)
			return fail(err, doc, "entry %zu: no bucket (give one in the URL or the entry)", i);
		if (!name_bucket_valid(bck.ptr, bck.len))
			return fail(err, doc, "entry %zu: invalid bucket name", i);
		if (opt_str(e, "provider", &prov) != AIS_OK || (prov.len && strcmp(prov.ptr, "ais")))
			return fail(err, doc, "entry %zu: only the \"ais\" provider is supported", i);
		if (opt_str(e, "archpath", &arch) != AIS_OK ||
		    (arch.len && !name_archpath_valid(arch.ptr, arch.len)))
			return fail(err, doc, "entry %zu: invalid archpath", i);
		if (opt_u64(e, "start", &m->start) != AIS_OK || opt_u64(e, "length", &m->length) != AIS_OK)
			return fail(err, doc, "entry %zu: \"start\" and \"length\" must be non-negative integers", i);
		if (out->etl.len && (m->start || m->length))
			return fail(err, doc, "entry %zu: \"start\" and \"length\" cannot be combined with \"etl\"", i);
		m->bck = (sv_t){arena_svdup(a, bck), bck.len};
		m->obj = (sv_t){arena_svdup(a, obj), obj.len};
		m->arch = (sv_t){arch.len ? arena_svdup(a, arch) : "", arch.len};
		size_t nl = (out->onob ? 0 : bck.len + 1) + obj.len + (arch.len ? arch.len + 1 : 0);
		char *name = arena_alloc(a, nl + 1), *q = name;
		if (!out->onob) {
			memcpy(q, bck.ptr, bck.len);
			q += bck.len;
			*q++ = '/';
		}
		memcpy(q, obj.ptr, obj.len);
		q += obj.len;
		if (arch.len) {
			*q++ = '/';
			memcpy(q, arch.ptr, arch.len);
			q += arch.len;
		}
		*q = '\0';
		m->name = (sv_t){name, nl};
	}
	json_decref(doc);
	return AIS_OK;
}
