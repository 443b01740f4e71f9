/*
 * cmap.c - the cluster map: nodes, primary, version, HRW placement over the
 * active targets, strict JSON, and the rule for accepting a new version.
 *
 * The map is a plain value: the primary builds the next version on a clone
 * and pushes its JSON; every other node decodes it, asks cmap_accept and
 * swaps it in. Nothing here does I/O (persist.c does).
 *
 * Invariants (every function that returns a cmap_t or AIS_OK keeps them):
 *  1. version >= 1; a mutator that changes the map adds exactly 1, one that
 *     changes nothing leaves it, one that fails leaves the map untouched.
 *  2. Nodes are sorted by id, ids are unique and valid (cmap_id_valid),
 *     URLs are valid (cmap_url_valid), roles and states are in range.
 *  3. The primary is a node of the map, a gateway, and active.
 *  4. node.digest == hrw_digest(node.id) for every node; the caller's digest
 *     is never trusted.
 *  5. tgt/tdig list exactly the active targets in id order, so placement
 *     depends only on the map's content, never on the order of changes.
 *  6. Encoding is deterministic; decode(encode(m)) equals m, and decode
 *     accepts nothing that would break 1-4 or 7 (it returns a valid map or a
 *     clean error for any bytes).
 *  7. lost lists, sorted and unique, the ids of targets dropped without a
 *     decommission (cmap_drop) that have not joined again; none of them is
 *     a node of the map.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/cmap.h"
#include "aisd/names.h"
#include "aisd/hrw.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "cluster_int.h"
#include "aisd/banned.h"

struct cmap {
	char uuid[CMAP_ID_MAX + 1];
	uint64_t term; /* primary epoch, >= 1 */
	uint64_t version;
	char primary[CMAP_ID_MAX + 1];
	cmap_node_t *nodes; /* sorted by id */
	size_t n, cap;
	size_t *tgt;     /* indices of the active targets, id order */
	uint64_t *tdig;  /* their digests */
	size_t ntgt;
	char (*lost)[CMAP_ID_MAX + 1]; /* targets dropped, not back (rule 7) */
	size_t nlost;
};


static const char *const role_names[] = {"gateway", "target"};
static const char *const state_names[] = {"active", "maintenance", "decommissioning"};

const char *cmap_role_name(enum cmap_role r)
{
	return (unsigned)r < ARRAY_SIZE(role_names) ? role_names[r] : "unknown";
}

const char *cmap_state_name(enum cmap_state s)
{
	return (unsigned)s < ARRAY_SIZE(state_names) ? state_names[s] : "unknown";
}

static int name_index(const char *const *names, size_t n, const char *s, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(names[i]) == len && !memcmp(names[i], s, len))
			return (int)i;
	return -1;
}

int cmap_role_parse(const char *s, size_t len, enum cmap_role *out)
{
	int i = name_index(role_names, ARRAY_SIZE(role_names), s, len);
	if (i < 0)
		return AIS_ERR;
	*out = (enum cmap_role)i;
	return AIS_OK;
}

int cmap_state_parse(const char *s, size_t len, enum cmap_state *out)
{
	int i = name_index(state_names, ARRAY_SIZE(state_names), s, len);
	if (i < 0)
		return AIS_ERR;
	*out = (enum cmap_state)i;
	return AIS_OK;
}

bool cmap_id_valid(const char *s, size_t len)
{
	if (!s || len == 0 || len > CMAP_ID_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '-' || c == ':'))
			return false;
	}
	return true;
}

bool cmap_url_valid(const char *s, size_t len)
{
	size_t skip;
	if (!s || len > CMAP_URL_MAX)
		return false;
	if (len >= 7 && !memcmp(s, "http://", 7))
		skip = 7;
	else if (len >= 8 && !memcmp(s, "https://", 8))
		skip = 8;
	else
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	/* a host: non-empty, before any path, query or fragment; no userinfo */
	size_t h = skip;
	while (h < len && s[h] != '/' && s[h] != '?' && s[h] != '#') {
		if (s[h] == '@')
			return false;
		h++;
	}
	return h > skip && s[skip] != ':';
}

/* A node as the caller gave it, fields checked; digest not looked at. */
static int node_check(const cmap_node_t *n, buf_t *err)
{
	size_t idl = strnlen(n->id, sizeof(n->id));
	if (!cmap_id_valid(n->id, idl))
		return cmap_fail(err, EINVAL, "cmap: bad node id (1..%d of [A-Za-z0-9._:-])", CMAP_ID_MAX);
	if ((unsigned)n->role > CMAP_TARGET)
		return cmap_fail(err, EINVAL, "cmap: node %s: bad role %d", n->id, (int)n->role);
	if ((unsigned)n->state > CMAP_DECOMMISSIONING)
		return cmap_fail(err, EINVAL, "cmap: node %s: bad state %d", n->id, (int)n->state);
	if (!cmap_url_valid(n->pub_url, strnlen(n->pub_url, sizeof(n->pub_url))))
		return cmap_fail(err, EINVAL, "cmap: node %s: bad public URL (want http:// or https://host)", n->id);
	if (!cmap_url_valid(n->intra_url, strnlen(n->intra_url, sizeof(n->intra_url))))
		return cmap_fail(err, EINVAL, "cmap: node %s: bad intra-cluster URL (want http:// or https://host)",
			    n->id);
	return AIS_OK;
}

/* Index of id, or -(insertion point) - 1. */
static ptrdiff_t find(const cmap_t *m, const char *id, size_t len)
{
	return cmap_sorted_find(m->nodes, m->n, sizeof(*m->nodes), offsetof(cmap_node_t, id), id, len);
}

static void reindex(cmap_t *m)
{
	m->tgt = xrealloc(m->tgt, (m->n ? m->n : 1) * sizeof(*m->tgt));
	m->tdig = xrealloc(m->tdig, (m->n ? m->n : 1) * sizeof(*m->tdig));
	m->ntgt = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (m->nodes[i].role == CMAP_TARGET && m->nodes[i].state == CMAP_ACTIVE) {
			m->tgt[m->ntgt] = i;
			m->tdig[m->ntgt++] = m->nodes[i].digest;
		}
	}
}

/* Inserts a checked node; EEXIST on a duplicate id. Does not reindex. */
static int insert(cmap_t *m, const cmap_node_t *n, buf_t *err)
{
	ptrdiff_t at = find(m, n->id, strlen(n->id));
	if (at >= 0)
		return cmap_fail(err, EEXIST, "cmap: duplicate node id %s", n->id);
	if (m->n >= CMAP_NODES_MAX)
		return cmap_fail(err, EINVAL, "cmap: more than %d nodes", CMAP_NODES_MAX);
	size_t pos = (size_t)(-at - 1);
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 8;
		m->nodes = xrealloc(m->nodes, m->cap * sizeof(*m->nodes));
	}
	memmove(&m->nodes[pos + 1], &m->nodes[pos], (m->n - pos) * sizeof(*m->nodes));
	cmap_node_t *d = &m->nodes[pos];
	memset(d, 0, sizeof(*d));
	memcpy(d->id, n->id, strlen(n->id));
	d->role = n->role;
	d->state = n->state;
	d->drain = n->drain && n->state == CMAP_MAINTENANCE;
	memcpy(d->pub_url, n->pub_url, strlen(n->pub_url));
	memcpy(d->intra_url, n->intra_url, strlen(n->intra_url));
	d->digest = hrw_digest(d->id, strlen(d->id));
	m->n++;
	return AIS_OK;
}

static cmap_t *alloc_map(const char *uuid, size_t len)
{
	cmap_t *m = xcalloc(1, sizeof(*m));
	memcpy(m->uuid, uuid, len);
	return m;
}

cmap_t *cmap_new(const char *uuid, const cmap_node_t *primary, buf_t *err)
{
	if (!uuid || !cmap_id_valid(uuid, strlen(uuid))) {
		cmap_fail(err, EINVAL, "cmap: bad cluster uuid (1..%d of [A-Za-z0-9._:-])", CMAP_ID_MAX);
		return NULL;
	}
	if (node_check(primary, err) != AIS_OK)
		return NULL;
	if (primary->role != CMAP_GATEWAY || primary->state != CMAP_ACTIVE) {
		cmap_fail(err, EINVAL, "cmap: primary %s must be an active gateway", primary->id);
		return NULL;
	}
	cmap_t *m = alloc_map(uuid, strlen(uuid));
	m->term = 1;
	m->version = 1;
	memcpy(m->primary, primary->id, strlen(primary->id));
	insert(m, primary, NULL);
	reindex(m);
	return m;
}

void cmap_free(cmap_t *m)
{
	if (!m)
		return;
	free(m->nodes);
	free(m->tgt);
	free(m->tdig);
	free(m->lost);
	free(m);
}

cmap_t *cmap_clone(const cmap_t *m)
{
	cmap_t *c = xmalloc(sizeof(*c));
	*c = *m;
	c->cap = m->n ? m->n : 1;
	c->nodes = xmalloc(c->cap * sizeof(*c->nodes));
	if (m->n)
		memcpy(c->nodes, m->nodes, m->n * sizeof(*m->nodes));
	c->tgt = NULL;
	c->tdig = NULL;
	c->lost = xmalloc((m->nlost ? m->nlost : 1) * sizeof(*c->lost));
	if (m->nlost)
		memcpy(c->lost, m->lost, m->nlost * sizeof(*m->lost));
	reindex(c);
	return c;
}

bool cmap_equal(const cmap_t *a, const cmap_t *b)
{
	if (strcmp(a->uuid, b->uuid) || a->term != b->term || a->version != b->version ||
	    strcmp(a->primary, b->primary) ||
	    a->n != b->n || a->nlost != b->nlost ||
	    (a->nlost && memcmp(a->lost, b->lost, a->nlost * sizeof(*a->lost))))
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const cmap_node_t *x = &a->nodes[i], *y = &b->nodes[i];
		if (strcmp(x->id, y->id) || x->role != y->role || x->state != y->state || x->drain != y->drain ||
		    strcmp(x->pub_url, y->pub_url) || strcmp(x->intra_url, y->intra_url))
			return false;
	}
	return true;
}

const char *cmap_uuid(const cmap_t *m) { return m->uuid; }
uint64_t cmap_term(const cmap_t *m) { return m->term; }
uint64_t cmap_version(const cmap_t *m) { return m->version; }
const char *cmap_primary(const cmap_t *m) { return m->primary; }
size_t cmap_size(const cmap_t *m) { return m->n; }
const cmap_node_t *cmap_node(const cmap_t *m, size_t i) { return i < m->n ? &m->nodes[i] : NULL; }

const cmap_node_t *cmap_get(const cmap_t *m, const char *id, size_t len)
{
	if (!id)
		return NULL;
	ptrdiff_t i = find(m, id, len);
	return i >= 0 ? &m->nodes[i] : NULL;
}

size_t cmap_count(const cmap_t *m, int role, int state)
{
	size_t c = 0;
	for (size_t i = 0; i < m->n; i++)
		if ((role == CMAP_ANY || (int)m->nodes[i].role == role) &&
		    (state == CMAP_ANY || (int)m->nodes[i].state == state))
			c++;
	return c;
}

static void bump(cmap_t *m)
{
	m->version++;
	reindex(m);
}

/* Index of id in m->lost, or -(insertion point) - 1. */
static ptrdiff_t find_lost(const cmap_t *m, const char *id, size_t len)
{
	return cmap_sorted_find(m->lost, m->nlost, sizeof(*m->lost), 0, id, len);
}

/* Takes id off the lost list; true when it was on it. */
static bool unlose(cmap_t *m, const char *id)
{
	ptrdiff_t i = find_lost(m, id, strlen(id));
	if (i < 0)
		return false;
	memmove(&m->lost[i], &m->lost[i + 1], (m->nlost - (size_t)i - 1) * sizeof(*m->lost));
	m->nlost--;
	return true;
}

/* Puts a valid id on the lost list (sorted, once). */
static void lose(cmap_t *m, const char *id, size_t len)
{
	ptrdiff_t at = find_lost(m, id, len);
	if (at >= 0)
		return;
	size_t pos = (size_t)(-at - 1);
	m->lost = xrealloc(m->lost, (m->nlost + 1) * sizeof(*m->lost));
	memmove(&m->lost[pos + 1], &m->lost[pos], (m->nlost - pos) * sizeof(*m->lost));
	memset(m->lost[pos], 0, sizeof(m->lost[pos]));
	memcpy(m->lost[pos], id, len);
	m->nlost++;
}

int cmap_add(cmap_t *m, const cmap_node_t *n, buf_t *err)
{
	if (node_check(n, err) != AIS_OK)
		return AIS_ERR;
	if (insert(m, n, err) != AIS_OK)
		return AIS_ERR;
	unlose(m, n->id); /* back: it lists its objects again (rule 7) */
	bump(m);
	return AIS_OK;
}

int cmap_drop(cmap_t *m, const char *id, buf_t *err)
{
	const cmap_node_t *n = cmap_get(m, id, id ? strlen(id) : 0);
	bool target = n && n->role == CMAP_TARGET && n->state != CMAP_DECOMMISSIONING;
	if (cmap_remove(m, id, err) != AIS_OK)
		return AIS_ERR;
	if (target)
		lose(m, id, strlen(id));
	return AIS_OK;
}

int cmap_forget(cmap_t *m, const char *id)
{
	if (id && unlose(m, id))
		bump(m);
	return AIS_OK;
}

size_t cmap_lost_count(const cmap_t *m) { return m->nlost; }
const char *cmap_lost(const cmap_t *m, size_t i) { return i < m->nlost ? m->lost[i] : NULL; }

int cmap_remove(cmap_t *m, const char *id, buf_t *err)
{
	ptrdiff_t i = id ? find(m, id, strlen(id)) : -1;
	if (i < 0)
		return cmap_fail(err, ENOENT, "cmap: no node %s", id ? id : "(null)");
	if (!strcmp(m->primary, id))
		return cmap_fail(err, EBUSY, "cmap: %s is the primary; elect another one first", id);
	memmove(&m->nodes[i], &m->nodes[i + 1], (m->n - (size_t)i - 1) * sizeof(*m->nodes));
	m->n--;
	bump(m);
	return AIS_OK;
}

int cmap_set_state(cmap_t *m, const char *id, enum cmap_state st, buf_t *err)
{
	ptrdiff_t i = id ? find(m, id, strlen(id)) : -1;
	if (i < 0)
		return cmap_fail(err, ENOENT, "cmap: no node %s", id ? id : "(null)");
	if ((unsigned)st > CMAP_DECOMMISSIONING)
		return cmap_fail(err, EINVAL, "cmap: bad state %d", (int)st);
	if (m->nodes[i].state == st)
		return AIS_OK;
	if (st != CMAP_ACTIVE && !strcmp(m->primary, id))
		return cmap_fail(err, EBUSY, "cmap: %s is the primary; elect another one first", id);
	m->nodes[i].state = st;
	if (st != CMAP_MAINTENANCE)
		m->nodes[i].drain = false;
	bump(m);
	return AIS_OK;
}

int cmap_set_drain(cmap_t *m, const char *id, bool drain, buf_t *err)
{
	ptrdiff_t i = id ? find(m, id, strlen(id)) : -1;
	if (i < 0)
		return cmap_fail(err, ENOENT, "cmap: no node %s", id ? id : "(null)");
	if (m->nodes[i].state != CMAP_MAINTENANCE)
		return cmap_fail(err, EINVAL, "cmap: %s is not in maintenance", id);
	if (m->nodes[i].drain == drain)
		return AIS_OK;
	m->nodes[i].drain = drain;
	bump(m);
	return AIS_OK;
}

int cmap_set_primary(cmap_t *m, const char *id, buf_t *err)
{
	ptrdiff_t i = id ? find(m, id, strlen(id)) : -1;
	if (i < 0)
		return cmap_fail(err, ENOENT, "cmap: no node %s", id ? id : "(null)");
	if (m->nodes[i].role != CMAP_GATEWAY || m->nodes[i].state != CMAP_ACTIVE)
		return cmap_fail(err, EINVAL, "cmap: %s is not an active gateway", id);
	if (!strcmp(m->primary, id))
		return AIS_OK;
	memset(m->primary, 0, sizeof(m->primary));
	memcpy(m->primary, id, strlen(id));
	bump(m);
	return AIS_OK;
}

int cmap_set_term(cmap_t *m, uint64_t term, buf_t *err)
{
	if (term <= m->term || term > INT64_MAX)
		return cmap_fail(err, EINVAL, "cmap: term %llu is not newer than %llu", (unsigned long long)term,
				 (unsigned long long)m->term);
	m->term = term;
	bump(m);
	return AIS_OK;
}

void cmap_encode(const cmap_t *m, buf_t *out)
{
	buf_addstr(out, "{\"uuid\":");
	buf_add_json_str(out, m->uuid, strlen(m->uuid));
	buf_addf(out, ",\"term\":%llu,\"version\":%llu,\"primary\":", (unsigned long long)m->term,
		 (unsigned long long)m->version);
	buf_add_json_str(out, m->primary, strlen(m->primary));
	buf_addstr(out, ",\"nodes\":[");
	for (size_t i = 0; i < m->n; i++) {
		const cmap_node_t *n = &m->nodes[i];
		buf_addstr(out, i ? ",{\"id\":" : "{\"id\":");
		buf_add_json_str(out, n->id, strlen(n->id));
		buf_addf(out, ",\"role\":\"%s\",\"state\":\"%s\",\"public_url\":", cmap_role_name(n->role),
			 cmap_state_name(n->state));
		buf_add_json_str(out, n->pub_url, strlen(n->pub_url));
		buf_addstr(out, ",\"intra_url\":");
		buf_add_json_str(out, n->intra_url, strlen(n->intra_url));
		if (n->drain)
			buf_addstr(out, ",\"drain\":true");
		buf_addch(out, '}');
	}
	buf_addch(out, ']');
	for (size_t i = 0; i < m->nlost; i++) {
		buf_addstr(out, i ? "," : ",\"lost\":[");
		buf_add_json_str(out, m->lost[i], strlen(m->lost[i]));
	}
	buf_addstr(out, m->nlost ? "]}" : "}");
}

/* The optional "lost" array of a decoded map: valid ids, unique, none a
 * node of m (rule 7). */
static int decode_lost(cmap_t *m, json_t *lost, buf_t *err)
{
	if (!json_is_array(lost))
		return cmap_fail(err, EINVAL, "cmap: \"lost\" is not an array");
	if (json_array_size(lost) > CMAP_NODES_MAX)
		return cmap_fail(err, EINVAL, "cmap: more than %d lost targets", CMAP_NODES_MAX);
	for (size_t i = 0; i < json_array_size(lost); i++) {
		json_t *v = json_array_get(lost, i);
		const char *s = json_string_value(v);
		size_t len = json_string_length(v);
		if (!s || !cmap_id_valid(s, len))
			return cmap_fail(err, EINVAL, "cmap: lost[%zu]: bad id", i);
		if (find(m, s, len) >= 0 || find_lost(m, s, len) >= 0)
			return cmap_fail(err, EINVAL, "cmap: lost[%zu] (%s): a node of the map or listed twice", i, s);
		lose(m, s, len);
	}
	return AIS_OK;
}

static int decode_node(json_t *o, size_t idx, cmap_node_t *n, buf_t *err)
{
	static const char *const keys[] = {"id", "role", "state", "public_url", "intra_url", "drain"};
	char what[48];
	const char *s;
	size_t len;
	bool has_drain = json_object_get(o, "drain") != NULL;

	snprintf(what, sizeof(what), "cmap: nodes[%zu]", idx);
	memset(n, 0, sizeof(*n));
	if (cmap_json_keys(o, keys, ARRAY_SIZE(keys) - !has_drain, what, err) != AIS_OK)
		return AIS_ERR;
	if (has_drain && cmap_json_bool(o, "drain", what, &n->drain, err) != AIS_OK)
		return AIS_ERR;
	if (cmap_json_str(o, "id", what, &s, &len, err) != AIS_OK)
		return AIS_ERR;
	if (!cmap_id_valid(s, len))
		return cmap_fail(err, EINVAL, "%s: bad id (1..%d of [A-Za-z0-9._:-])", what, CMAP_ID_MAX);
	memcpy(n->id, s, len);
	if (cmap_json_str(o, "role", what, &s, &len, err) != AIS_OK)
		return AIS_ERR;
	if (cmap_role_parse(s, len, &n->role) != AIS_OK)
		return cmap_fail(err, EINVAL, "%s (%s): unknown role (want gateway or target)", what, n->id);
	if (cmap_json_str(o, "state", what, &s, &len, err) != AIS_OK)
		return AIS_ERR;
	if (cmap_state_parse(s, len, &n->state) != AIS_OK)
		return cmap_fail(err, EINVAL, "%s (%s): unknown state (want active, maintenance or decommissioning)",
			    what, n->id);
	if (cmap_json_str(o, "public_url", what, &s, &len, err) != AIS_OK)
		return AIS_ERR;
	if (!cmap_url_valid(s, len))
		return cmap_fail(err, EINVAL, "%s (%s): bad public_url (want http:// or https://host)", what, n->id);
	memcpy(n->pub_url, s, len);
	if (cmap_json_str(o, "intra_url", what, &s, &len, err) != AIS_OK)
		return AIS_ERR;
	if (!cmap_url_valid(s, len))
		return cmap_fail(err, EINVAL, "%s (%s): bad intra_url (want http:// or https://host)", what, n->id);
	memcpy(n->intra_url, s, len);
	return AIS_OK;
}

int cmap_decode(const char *json, size_t len, cmap_t **out, buf_t *err)
{
	const char *keys[6] = {"uuid", "version", "primary", "nodes"};
	size_t nkeys = 4;
	const char *s, *prim;
	size_t slen, plen;
	uint64_t version, term = 1;
	cmap_t *m = NULL;
	int rc = AIS_ERR;

	*out = NULL;
	json_t *root = cmap_json_parse(json, len, "cmap", err);
	if (!root)
		return AIS_ERR;
	/* "term" may be absent: a map saved before failover existed is term 1 */
	bool has_term = json_object_get(root, "term") != NULL;
	json_t *lost = json_object_get(root, "lost"); /* absent: none */
	if (has_term)
		keys[nkeys++] = "term";
	if (lost)
		keys[nkeys++] = "lost";
	if (cmap_json_keys(root, keys, nkeys, "cmap", err) != AIS_OK)
		goto out_root;
	if (has_term && cmap_json_u64(root, "term", "cmap", 1, INT64_MAX, &term, err) != AIS_OK)
		goto out_root;
	if (cmap_json_str(root, "uuid", "cmap", &s, &slen, err) != AIS_OK)
		goto out_root;
	if (!cmap_id_valid(s, slen)) {
		cmap_fail(err, EINVAL, "cmap: bad uuid (1..%d of [A-Za-z0-9._:-])", CMAP_ID_MAX);
		goto out_root;
	}
	if (cmap_json_u64(root, "version", "cmap", 1, INT64_MAX, &version, err) != AIS_OK)
		goto out_root;
	if (cmap_json_str(root, "primary", "cmap", &prim, &plen, err) != AIS_OK)
		goto out_root;
	if (!cmap_id_valid(prim, plen)) {
		cmap_fail(err, EINVAL, "cmap: bad primary id");
		goto out_root;
	}
	json_t *nodes = json_object_get(root, "nodes");
	if (!json_is_array(nodes)) {
		cmap_fail(err, EINVAL, "cmap: \"nodes\" is not an array");
		goto out_root;
	}
	if (json_array_size(nodes) > CMAP_NODES_MAX) {
		cmap_fail(err, EINVAL, "cmap: more than %d nodes", CMAP_NODES_MAX);
		goto out_root;
	}
	m = alloc_map(s, slen);
	m->term = term;
	m->version = version;
	memcpy(m->primary, prim, plen);
	for (size_t i = 0; i < json_array_size(nodes); i++) {
		cmap_node_t n;
		if (decode_node(json_array_get(nodes, i), i, &n, err) != AIS_OK)
			goto out_map;
		if (insert(m, &n, err) != AIS_OK) {
			errno = EINVAL;
			goto out_map;
		}
	}
	ptrdiff_t p = find(m, prim, plen);
	if (p < 0) {
		cmap_fail(err, EINVAL, "cmap: primary %s is not among the nodes", m->primary);
		goto out_map;
	}
	if (m->nodes[p].role != CMAP_GATEWAY || m->nodes[p].state != CMAP_ACTIVE) {
		cmap_fail(err, EINVAL, "cmap: primary %s is not an active gateway", m->primary);
		goto out_map;
	}
	if (lost && decode_lost(m, lost, err) != AIS_OK)
		goto out_map;
	reindex(m);
	*out = m;
	m = NULL;
	rc = AIS_OK;
out_map:
	cmap_free(m);
out_root:
	json_decref(root);
	return rc;
}

int cmap_cmp(const cmap_t *a, const cmap_t *b)
{
	if (a->term != b->term)
		return a->term < b->term ? -1 : 1;
	if (a->version != b->version)
		return a->version < b->version ? -1 : 1;
	return 0;
}

int cmap_accept(const cmap_t *cur, const cmap_t *incoming, buf_t *err)
{
	if (!cur)
		return AIS_OK;
	if (strcmp(cur->uuid, incoming->uuid))
		return cmap_fail(err, EXDEV, "cmap: from another cluster (uuid %s, ours %s)", incoming->uuid, cur->uuid);
	int c = cmap_cmp(incoming, cur);
	if (c < 0)
		return cmap_fail(err, ESTALE, "cmap: term %llu version %llu is older than ours (term %llu version %llu)",
				 (unsigned long long)incoming->term, (unsigned long long)incoming->version,
				 (unsigned long long)cur->term, (unsigned long long)cur->version);
	if (c > 0)
		return AIS_OK;
	if (cmap_equal(cur, incoming))
		return AIS_DONE;
	return cmap_fail(err, EEXIST, "cmap: term %llu version %llu differs from ours with the same version",
			 (unsigned long long)incoming->term, (unsigned long long)incoming->version);
}

/* What an object is placed by: its uname, a kept version's that of its
 * object (names.h), so every version lives where the object does. */
static size_t place_len(const char *uname, size_t len)
{
	size_t k = name_version_of(uname, len);
	return k ? k : len;
}

const cmap_node_t *cmap_owner(const cmap_t *m, const char *uname, size_t len)
{
	if (!m->ntgt)
		return NULL;
	size_t i = hrw_owner(hrw_name_hash(uname, place_len(uname, len)), m->tdig, m->ntgt);
	return &m->nodes[m->tgt[i]];
}

size_t cmap_top(const cmap_t *m, const char *uname, size_t len, size_t k, const cmap_node_t **out)
{
	size_t idx[HRW_TOP_MAX];
	if (!m->ntgt || !k)
		return 0;
	k = hrw_top(hrw_name_hash(uname, place_len(uname, len)), m->tdig, m->ntgt, idx, k);
	for (size_t i = 0; i < k; i++)
		out[i] = &m->nodes[m->tgt[idx[i]]];
	return k;
}

struct ranked {
	uint64_t w;
	const cmap_node_t *n;
};

static int ranked_cmp(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->w != y->w)
		return x->w > y->w ? -1 : 1;
	return strcmp(x->n->id, y->n->id);
}

size_t cmap_election_order(const cmap_t *m, const cmap_node_t **out, size_t cap)
{
	struct ranked *r = xmalloc((m->n ? m->n : 1) * sizeof(*r));
	uint64_t h = hrw_name_hash(m->uuid, strlen(m->uuid));
	size_t cnt = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (m->nodes[i].role == CMAP_GATEWAY && m->nodes[i].state == CMAP_ACTIVE) {
			r[cnt].w = hrw_weight(h, m->nodes[i].digest);
			r[cnt++].n = &m->nodes[i];
		}
	}
	qsort(r, cnt, sizeof(*r), ranked_cmp);
	for (size_t i = 0; i < cnt && i < cap; i++)
		out[i] = r[i].n;
	free(r);
	return cnt;
}
