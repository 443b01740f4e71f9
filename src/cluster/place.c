/*
 * place.c - object placement in the cluster (place.h): the holders of an
 * object's copies, and whether a map change moves anything. Pure: no I/O,
 * no locks; callers hold the map.
 */
#include <stdlib.h>
#include <string.h>

#include "aisd/util.h"

#include "aisd/place.h"
#include "aisd/banned.h"

size_t place_copies(const bmd_props_t *p)
{
	if (p && p->ec_enabled)
		return p->ec_parity + 1;
	if (!p || !p->mirror_enabled || p->mirror_copies < 1)
		return 1;
	return p->mirror_copies;
}

bool place_ec(const bmd_props_t *p, uint64_t size)
{
	return p && p->ec_enabled && size >= p->ec_objsize_limit;
}

size_t place_copies_of(const bmd_props_t *p, uint64_t size)
{
	return place_ec(p, size) ? 1 : place_copies(p);
}

void place_of(const cmap_t *m, const char *uname, size_t len, size_t copies, const char *self_id,
              place_t *out)
{
	out->n = m ? cmap_top(m, uname, len, copies ? copies : 1, out->node) : 0;
	out->self = -1;
	for (size_t i = 0; self_id && i < out->n; i++)
		if (!strcmp(out->node[i]->id, self_id))
			out->self = (int)i;
}

void place_object(const cmap_t *m, const bmd_t *b, const char *bck, size_t blen, const char *obj, size_t olen,
		  const char *self_id, place_t *out)
{
	const bmd_bucket_t *bk = b ? bmd_get(b, bck, blen) : NULL;
	char stack[512];
	char *uname = blen + 1 + olen <= sizeof(stack) ? stack : xmalloc(blen + 1 + olen);
	memcpy(uname, bck, blen);
	uname[blen] = '/';
	memcpy(uname + blen + 1, obj, olen);
	place_of(m, uname, blen + 1 + olen, bk ? place_copies(&bk->props) : 1, self_id, out);
	if (uname != stack)
		free(uname);
}

static bool active_target(const cmap_node_t *n)
{
	return n->role == CMAP_TARGET && n->state == CMAP_ACTIVE;
}

/* Is every active target of a an active target of b? */
static bool active_subset(const cmap_t *a, const cmap_t *b)
{
	for (size_t i = 0; a && i < cmap_size(a); i++) {
		const cmap_node_t *n = cmap_node(a, i);
		if (!active_target(n))
			continue;
		const cmap_node_t *o = b ? cmap_get(b, n->id, strlen(n->id)) : NULL;
		if (!o || !active_target(o))
			return false;
	}
	return true;
}

bool place_changed(const cmap_t *a, const cmap_t *b)
{
	return !active_subset(a, b) || !active_subset(b, a);
}
