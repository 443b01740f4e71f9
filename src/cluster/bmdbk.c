/*
 * bmdbk.c - a bucket's remote backend in the BMD (bmd.h bmd_backend_t):
 * its JSON block, strict decode, the set-bprops group and the range
 * check. Only the remote's alias is kept here, never its endpoint or
 * credentials (backend.h): the BMD is pushed to every node and shown to
 * every client that may read bucket props.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "aisd/bmd.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "cluster_int.h"
#include "aisd/banned.h"

int bmd_backend_check(const bmd_backend_t *bk, buf_t *err)
{
	if (!bk->provider[0])
		return AIS_OK;
	if (strcmp(bk->provider, "s3") && strcmp(bk->provider, "ais"))
		return cmap_fail(err, EINVAL, "backend.provider must be \"s3\" or \"ais\"");
	if (!name_ident_valid(bk->remote, strlen(bk->remote), BMD_REMOTE_MAX))
		return cmap_fail(err, EINVAL, "backend.remote must be an attached remote's alias ([A-Za-z0-9_-], 1..%d)",
				 BMD_REMOTE_MAX);
	if (!name_bucket_valid(bk->bucket, strlen(bk->bucket)))
		return cmap_fail(err, EINVAL, "backend.bucket must be a valid bucket name");
	return AIS_OK;
}

void bmd_backend_encode(const bmd_backend_t *bk, buf_t *out)
{
	if (!bk->provider[0])
		return;
	/* every field is checked to be [A-Za-z0-9._-] (bmd_backend_check) */
	buf_addf(out,
		 ",\"backend\":{\"provider\":\"%s\",\"remote\":\"%s\",\"bucket\":\"%s\",\"validate_warm_get\":%s,"
		 "\"sync\":%s}",
		 bk->provider, bk->remote, bk->bucket, bk->validate_warm_get ? "true" : "false",
		 bk->sync ? "true" : "false");
}

static int str_field(json_t *o, const char *key, const char *what, char *out, size_t outsz, buf_t *err)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return AIS_OK;
	if (!json_is_string(v) || json_string_length(v) >= outsz)
		return cmap_fail(err, EINVAL, "%s: \"%s\" must be a string of at most %zu bytes", what, key,
				 outsz - 1);
	memcpy(out, json_string_value(v), json_string_length(v) + 1);
	return AIS_OK;
}

static int bool_field(json_t *o, const char *key, const char *what, bool *out, buf_t *err)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return AIS_OK;
	if (!json_is_boolean(v))
		return cmap_fail(err, EINVAL, "%s: \"%s\" must be true or false", what, key);
	*out = json_is_true(v);
	return AIS_OK;
}

/* Applies the keys of o to *bk; unknown keys are EINVAL. */
static int apply(json_t *o, const char *what, bmd_backend_t *bk, buf_t *err)
{
	static const char *const keys[] = {"provider", "remote", "bucket", "validate_warm_get", "sync"};
	const char *k;
	json_t *v;
	if (!json_is_object(o))
		return cmap_fail(err, EINVAL, "%s must be an object", what);
	json_object_foreach(o, k, v) {
		size_t i = 0;
		while (i < ARRAY_SIZE(keys) && strcmp(k, keys[i]))
			i++;
		if (i == ARRAY_SIZE(keys))
			return cmap_fail(err, EINVAL, "%s: unknown property \"%s\"", what, k);
	}
	if (str_field(o, "provider", what, bk->provider, sizeof(bk->provider), err) != AIS_OK ||
	    str_field(o, "remote", what, bk->remote, sizeof(bk->remote), err) != AIS_OK ||
	    str_field(o, "bucket", what, bk->bucket, sizeof(bk->bucket), err) != AIS_OK ||
	    bool_field(o, "validate_warm_get", what, &bk->validate_warm_get, err) != AIS_OK ||
	    bool_field(o, "sync", what, &bk->sync, err) != AIS_OK)
		return AIS_ERR;
	if (!strcmp(bk->provider, "none"))
		bk->provider[0] = '\0';
	if (!bk->provider[0])
		memset(bk, 0, sizeof(*bk));
	return bmd_backend_check(bk, err);
}

int bmd_backend_decode(const struct json_t *o, const char *what, bmd_backend_t *bk, buf_t *err)
{
	memset(bk, 0, sizeof(*bk));
	if (!json_object_get((json_t *)o, "provider") || !json_object_get((json_t *)o, "remote") ||
	    !json_object_get((json_t *)o, "bucket"))
		return cmap_fail(err, EINVAL, "%s.backend: wants provider, remote and bucket", what);
	return apply((json_t *)o, what, bk, err);
}

int bmd_backend_patch(const struct json_t *g, bmd_backend_t *bk, buf_t *err)
{
	bmd_backend_t n = *bk;
	if (apply((json_t *)g, "set-bprops: backend", &n, err) != AIS_OK)
		return AIS_ERR;
	*bk = n;
	return AIS_OK;
}
