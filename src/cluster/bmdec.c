/*
 * bmdec.c - a bucket's erasure-coding properties in the BMD (bmd.h
 * ec_*): the JSON block, strict decode, the set-bprops group "ec" and the
 * range check. Whether a cluster has enough targets, and whether the
 * bucket is empty when the layout changes, are the primary gateway's
 * checks (gateway.c), which know the map and the targets.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "aisd/bmd.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "cluster_int.h"
#include "aisd/banned.h"

int bmd_ec_check(const bmd_props_t *p, buf_t *err)
{
	if (p->ec_data < 1 || p->ec_data > BMD_EC_SLICES_MAX)
		return cmap_fail(err, EINVAL, "ec.data_slices %u out of range [1, %d]", p->ec_data, BMD_EC_SLICES_MAX);
	if (p->ec_parity < 1 || p->ec_parity > BMD_EC_SLICES_MAX)
		return cmap_fail(err, EINVAL, "ec.parity_slices %u out of range [1, %d]", p->ec_parity,
				 BMD_EC_SLICES_MAX);
	if (p->ec_enabled && p->mirror_enabled)
		return cmap_fail(err, EINVAL, "ec.enabled and mirror.enabled exclude each other: "
					      "an erasure-coded bucket keeps ec.parity_slices + 1 copies of small objects");
	return AIS_OK;
}

bool bmd_ec_differs(const bmd_props_t *a, const bmd_props_t *b)
{
	if (a->ec_enabled != b->ec_enabled)
		return true;
	return a->ec_enabled && (a->ec_data != b->ec_data || a->ec_parity != b->ec_parity ||
				 a->ec_objsize_limit != b->ec_objsize_limit || a->ec_no_whole != b->ec_no_whole);
}

void bmd_ec_encode(const bmd_props_t *p, bool always, buf_t *out)
{
	if (!always && !p->ec_enabled && p->ec_data == 2 && p->ec_parity == 2 &&
	    p->ec_objsize_limit == BMD_EC_LIMIT_DEFAULT && !p->ec_no_whole)
		return; /* older BMDs decode as they are */
	buf_addf(out, ",\"ec\":{\"enabled\":%s,\"data_slices\":%u,\"parity_slices\":%u,\"objsize_limit\":%llu",
		 p->ec_enabled ? "true" : "false", p->ec_data, p->ec_parity,
		 (unsigned long long)p->ec_objsize_limit);
	if (always || p->ec_no_whole) /* (absent in older BMDs: true) */
		buf_addf(out, ",\"whole_copy\":%s", p->ec_no_whole ? "false" : "true");
	buf_addch(out, '}');
}

/* Applies the keys of o that are there; strict about unknown keys and types. */
static int apply(const json_t *o, const char *what, bmd_props_t *p, buf_t *err)
{
	const char *k;
	json_t *v;
	if (!json_is_object(o))
		return cmap_fail(err, EINVAL, "%s must be an object", what);
	json_object_foreach((json_t *)o, k, v) {
		if (!strcmp(k, "enabled") || !strcmp(k, "whole_copy")) {
			if (!json_is_boolean(v))
				return cmap_fail(err, EINVAL, "%s.%s must be true or false", what, k);
			if (k[0] == 'e')
				p->ec_enabled = json_is_true(v);
			else
				p->ec_no_whole = !json_is_true(v);
		} else if (!strcmp(k, "data_slices") || !strcmp(k, "parity_slices")) {
			if (!json_is_integer(v) || json_integer_value(v) < 1 ||
			    json_integer_value(v) > BMD_EC_SLICES_MAX)
				return cmap_fail(err, EINVAL, "%s.%s must be 1..%d", what, k, BMD_EC_SLICES_MAX);
			*(k[0] == 'd' ? &p->ec_data : &p->ec_parity) = (uint32_t)json_integer_value(v);
		} else if (!strcmp(k, "objsize_limit")) {
			if (!json_is_integer(v) || json_integer_value(v) < 0)
				return cmap_fail(err, EINVAL, "%s.objsize_limit must be a byte count >= 0", what);
			p->ec_objsize_limit = (uint64_t)json_integer_value(v);
		} else {
			return cmap_fail(err, EINVAL, "%s: unknown property \"%s\"", what, k);
		}
	}
	return AIS_OK;
}

int bmd_ec_decode(const json_t *o, const char *what, bmd_props_t *p, buf_t *err)
{
	char w[80];
	snprintf(w, sizeof(w), "%s.ec", what);
	return apply(o, w, p, err);
}

int bmd_ec_patch(const json_t *g, bmd_props_t *p, buf_t *err)
{
	bmd_props_t n = *p;
	if (apply(g, "set-bprops: ec", &n, err) != AIS_OK)
		return AIS_ERR;
	*p = n;
	return AIS_OK;
}
