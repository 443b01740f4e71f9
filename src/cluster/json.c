/*
 * json.c - strict readers of JSON fields for the cluster metadata decoders.
 *
 * Invariants:
 *  1. Every reader checks presence and type before it looks at a value; a
 *     missing key, a wrong type or a value out of range is AIS_ERR with
 *     errno EINVAL and one message naming the object and the key.
 *  2. Parsing rejects duplicate keys, NUL inside strings, trailing bytes and
 *     anything but an object at the top; jansson bounds the nesting depth,
 *     so no input recurses without limit.
 *  3. Integers are whole JSON integers (never reals), non-negative.
 */
#include <errno.h>
#include <string.h>

#include "aisd/status.h"
#include "cluster_int.h"
#include "aisd/banned.h"

int cmap_fail(buf_t *err, int e, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		buf_vaddf(err, fmt, ap);
		va_end(ap);
	}
	errno = e;
	return AIS_ERR;
}

json_t *cmap_json_parse(const char *json, size_t len, const char *what, buf_t *err)
{
	json_error_t je;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		cmap_fail(err, EINVAL, "%s: bad JSON at byte %d: %s", what, je.position, je.text);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		cmap_fail(err, EINVAL, "%s: not a JSON object", what);
		return NULL;
	}
	return root;
}

int cmap_json_keys(json_t *obj, const char *const *keys, size_t n, const char *what, buf_t *err)
{
	if (!json_is_object(obj))
		return cmap_fail(err, EINVAL, "%s: not a JSON object", what);
	for (size_t i = 0; i < n; i++)
		if (!json_object_get(obj, keys[i]))
			return cmap_fail(err, EINVAL, "%s: missing \"%s\"", what, keys[i]);
	const char *k;
	json_t *v;
	json_object_foreach(obj, k, v) {
		size_t i = 0;
		while (i < n && strcmp(k, keys[i]))
			i++;
		if (i == n) {
			buf_t q = BUF_INIT;
			buf_add_json_str(&q, k, strlen(k));
			int rc = cmap_fail(err, EINVAL, "%s: unknown key %s", what, q.ptr);
			buf_free(&q);
			return rc;
		}
	}
	return AIS_OK;
}

int cmap_json_str(json_t *obj, const char *key, const char *what, const char **s, size_t *len, buf_t *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return cmap_fail(err, EINVAL, "%s: missing \"%s\"", what, key);
	if (!json_is_string(v))
		return cmap_fail(err, EINVAL, "%s: \"%s\" is not a string", what, key);
	*s = json_string_value(v);
	*len = json_string_length(v);
	return AIS_OK;
}

int cmap_json_u64(json_t *obj, const char *key, const char *what, uint64_t min, uint64_t max, uint64_t *out,
		  buf_t *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return cmap_fail(err, EINVAL, "%s: missing \"%s\"", what, key);
	if (!json_is_integer(v))
		return cmap_fail(err, EINVAL, "%s: \"%s\" is not an integer", what, key);
	json_int_t i = json_integer_value(v);
	if (i < 0 || (uint64_t)i < min || (uint64_t)i > max)
		return cmap_fail(err, EINVAL, "%s: \"%s\" out of range [%llu, %llu]", what, key, (unsigned long long)min,
			    (unsigned long long)max);
	*out = (uint64_t)i;
	return AIS_OK;
}

int cmap_json_bool(json_t *obj, const char *key, const char *what, bool *out, buf_t *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return cmap_fail(err, EINVAL, "%s: missing \"%s\"", what, key);
	if (!json_is_boolean(v))
		return cmap_fail(err, EINVAL, "%s: \"%s\" is not a boolean", what, key);
	*out = json_is_true(v);
	return AIS_OK;
}
