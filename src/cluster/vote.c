/*
 * vote.c - the election's pure part: the voter's rule (cmap_vote, rules
 * V1-V4 in cmap.h), the quorum, and the ballot's strict JSON.
 *
 * Why the rules give one primary per term and lose no acknowledged change
 * (with the runtime rules of cluster.h):
 *  1. A node votes at most once per term (V4, the vote persisted before the
 *     answer), and a winner needs a majority: two majorities share a node,
 *     so two candidates never both win the same term.
 *  2. A primary acknowledges a change only after a majority of nodes took
 *     it; a candidate needs a majority of votes, and a voter that took the
 *     change refuses a candidate that lacks it (V3). So the winner has every
 *     acknowledged change.
 *  3. Terms only grow (V4 and cmap_accept order by term first): a deposed
 *     primary's maps are older than the winner's whatever their version.
 *  4. A primary acts only while a majority's lease grants are younger than
 *     the lease (L1), and a granting node votes for no one else until its
 *     grant is older than the lease plus a drift margin (V5): a winning
 *     majority shares a node with the old primary's last majority, so the
 *     old primary's lease had run out before the first yes vote that
 *     elected the new one (cluster.h rule 12).
 * Nothing here does I/O.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "aisd/cmap.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "cluster_int.h"
#include "aisd/banned.h"

size_t cmap_quorum(const cmap_t *m)
{
	return cmap_size(m) / 2 + 1;
}

static enum cmap_vote_res no(buf_t *why, enum cmap_vote_res r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static enum cmap_vote_res no(buf_t *why, enum cmap_vote_res r, const char *fmt, ...)
{
	if (why) {
		va_list ap;
		va_start(ap, fmt);
		buf_vaddf(why, fmt, ap);
		va_end(ap);
	}
	return r;
}

enum cmap_vote_res cmap_vote(const cmap_t *mine, uint64_t my_bmd_version, const cmap_vote_rec_t *voted,
                             const cmap_ballot_t *b, bool primary_alive, buf_t *why)
{
	unsigned long long mt = cmap_term(mine), mv = cmap_version(mine);

	/* V1 */
	if (strcmp(b->uuid, cmap_uuid(mine)))
		return no(why, CMAP_VOTE_NO, "another cluster (uuid %s, ours %s)", b->uuid, cmap_uuid(mine));
	/* V3 before V1's primary check: a voter with a newer map tells the
	 * candidate, whoever it thinks is primary */
	if (b->cmap_term < mt || (b->cmap_term == mt && b->cmap_version < mv))
		return no(why, CMAP_VOTE_STALE,
		          "the candidate's cluster map (term %llu version %llu) is older than "
		          "ours (term %llu version %llu)",
		          (unsigned long long)b->cmap_term, (unsigned long long)b->cmap_version, mt, mv);
	if (b->bmd_version < my_bmd_version)
		return no(why, CMAP_VOTE_STALE,
		          "the candidate's bucket metadata (version %llu) is older than ours (%llu)",
		          (unsigned long long)b->bmd_version, (unsigned long long)my_bmd_version);
	if (strcmp(b->primary, cmap_primary(mine)))
		return no(why, CMAP_VOTE_NO, "the primary is %s, not %s", cmap_primary(mine), b->primary);
	const cmap_node_t *c = cmap_get(mine, b->candidate, strlen(b->candidate));
	if (!c || c->role != CMAP_GATEWAY || c->state != CMAP_ACTIVE || !strcmp(b->candidate, b->primary))
		return no(why, CMAP_VOTE_NO, "%s is not another active gateway of the cluster", b->candidate);
	/* V2 */
	if (primary_alive)
		return no(why, CMAP_VOTE_NO, "the primary %s answers this node", b->primary);
	/* V4 */
	if (b->term <= mt)
		return no(why, CMAP_VOTE_NO, "term %llu is not above the map's term %llu",
		          (unsigned long long)b->term, mt);
	if (b->term < voted->term || (b->term == voted->term && strcmp(voted->candidate, b->candidate)))
		return no(why, CMAP_VOTE_NO, "already voted in term %llu for %s",
		          (unsigned long long)voted->term, voted->candidate);
	return CMAP_VOTE_YES;
}

void cmap_ballot_encode(const cmap_ballot_t *b, buf_t *out)
{
	buf_addstr(out, "{\"uuid\":");
	buf_add_json_str(out, b->uuid, strlen(b->uuid));
	buf_addf(out, ",\"term\":%llu,\"candidate\":", (unsigned long long)b->term);
	buf_add_json_str(out, b->candidate, strlen(b->candidate));
	buf_addstr(out, ",\"primary\":");
	buf_add_json_str(out, b->primary, strlen(b->primary));
	buf_addf(out, ",\"cmap_term\":%llu,\"cmap_version\":%llu,\"bmd_version\":%llu}",
	         (unsigned long long)b->cmap_term, (unsigned long long)b->cmap_version,
	         (unsigned long long)b->bmd_version);
}

static int id_field(json_t *o, const char *key, const char *what, char *out, buf_t *err)
{
	const char *s;
	size_t len;
	if (cmap_json_str(o, key, what, &s, &len, err) != AIS_OK)
		return AIS_ERR;
	if (!cmap_id_valid(s, len))
		return cmap_fail(err, EINVAL, "%s: bad \"%s\" (1..%d of [A-Za-z0-9._:-])", what, key,
		                 CMAP_ID_MAX);
	memcpy(out, s, len);
	out[len] = '\0';
	return AIS_OK;
}

int cmap_ballot_decode(const char *json, size_t len, cmap_ballot_t *out, buf_t *err)
{
	static const char *const keys[] = {"uuid",      "term",         "candidate",  "primary",
	                                   "cmap_term", "cmap_version", "bmd_version"};
	int rc = AIS_ERR;

	memset(out, 0, sizeof(*out));
	json_t *root = cmap_json_parse(json, len, "ballot", err);
	if (!root)
		return AIS_ERR;
	if (cmap_json_keys(root, keys, ARRAY_SIZE(keys), "ballot", err) != AIS_OK ||
	    id_field(root, "uuid", "ballot", out->uuid, err) != AIS_OK ||
	    id_field(root, "candidate", "ballot", out->candidate, err) != AIS_OK ||
	    id_field(root, "primary", "ballot", out->primary, err) != AIS_OK ||
	    cmap_json_u64(root, "term", "ballot", 1, INT64_MAX, &out->term, err) != AIS_OK ||
	    cmap_json_u64(root, "cmap_term", "ballot", 1, INT64_MAX, &out->cmap_term, err) != AIS_OK ||
	    cmap_json_u64(root, "cmap_version", "ballot", 1, INT64_MAX, &out->cmap_version, err) != AIS_OK ||
	    cmap_json_u64(root, "bmd_version", "ballot", 0, INT64_MAX, &out->bmd_version, err) != AIS_OK) {
		memset(out, 0, sizeof(*out));
		goto out;
	}
	rc = AIS_OK;
out:
	json_decref(root);
	return rc;
}

/* --- the primary's lease ------------------------------------------------- */

static bool refuse(buf_t *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool refuse(buf_t *why, const char *fmt, ...)
{
	if (why) {
		va_list ap;
		va_start(ap, fmt);
		buf_vaddf(why, fmt, ap);
		va_end(ap);
	}
	return false;
}

bool cmap_lease_grant(const cmap_t *mine, const cmap_vote_rec_t *voted, const cmap_lease_req_t *r, buf_t *why)
{
	unsigned long long mt = cmap_term(mine);

	if (strcmp(r->uuid, cmap_uuid(mine)))
		return refuse(why, "another cluster (uuid %s, ours %s)", r->uuid, cmap_uuid(mine));
	const cmap_node_t *a = cmap_get(mine, r->primary, strlen(r->primary));
	if (!a || a->role != CMAP_GATEWAY)
		return refuse(why, "%s is not a gateway of this node's cluster map", r->primary);
	if (r->term < mt)
		return refuse(why, "term %llu is older than this node's map (term %llu, primary %s)",
		              (unsigned long long)r->term, mt, cmap_primary(mine));
	if (r->term < voted->term)
		return refuse(why, "this node voted in the newer term %llu (for %s)",
		              (unsigned long long)voted->term, voted->candidate);
	if (r->term == mt && strcmp(r->primary, cmap_primary(mine)))
		return refuse(why, "the primary of term %llu is %s, not %s", mt, cmap_primary(mine), r->primary);
	return true;
}

bool cmap_lease_binds(const cmap_lease_rec_t *g, const char *candidate, int64_t now_ns, int64_t guard_ns)
{
	if (!g->at_ns || now_ns - g->at_ns >= guard_ns)
		return false;
	return !g->to[0] || strcmp(g->to, candidate);
}

void cmap_lease_encode(const cmap_lease_req_t *r, buf_t *out)
{
	buf_addstr(out, "{\"uuid\":");
	buf_add_json_str(out, r->uuid, strlen(r->uuid));
	buf_addstr(out, ",\"primary\":");
	buf_add_json_str(out, r->primary, strlen(r->primary));
	buf_addf(out, ",\"term\":%llu}", (unsigned long long)r->term);
}

int cmap_lease_decode(const char *json, size_t len, cmap_lease_req_t *out, buf_t *err)
{
	static const char *const keys[] = {"uuid", "primary", "term"};
	int rc = AIS_ERR;

	memset(out, 0, sizeof(*out));
	json_t *root = cmap_json_parse(json, len, "lease", err);
	if (!root)
		return AIS_ERR;
	if (cmap_json_keys(root, keys, ARRAY_SIZE(keys), "lease", err) != AIS_OK ||
	    id_field(root, "uuid", "lease", out->uuid, err) != AIS_OK ||
	    id_field(root, "primary", "lease", out->primary, err) != AIS_OK ||
	    cmap_json_u64(root, "term", "lease", 1, INT64_MAX, &out->term, err) != AIS_OK) {
		memset(out, 0, sizeof(*out));
		goto out;
	}
	rc = AIS_OK;
out:
	json_decref(root);
	return rc;
}
