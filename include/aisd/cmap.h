/*
 * cmap.h - the cluster map: which nodes form the cluster, who is primary,
 * and where an object lives (HRW over the active targets).
 *
 * A cmap_t is a versioned value: cluster uuid, term (the primary's epoch,
 * >= 1: a new primary elected or handed over starts a higher one), version
 * (monotonic, >= 1), the primary gateway's id, and the nodes (id, role, public URL,
 * intra-cluster URL, state), kept sorted by id. Every cmap_t in memory is
 * valid: it has a primary, the primary is an active gateway in the map, ids
 * are unique, URLs are http:// or https://. The functions that change a map
 * keep it so, and bump the version by one when they change anything.
 *
 * Only the primary calls the mutators (cmap_add, cmap_remove,
 * cmap_set_state, cmap_set_primary), on its own copy (cmap_clone), then
 * pushes the encoded result to every node; a node checks an incoming map with
 * cmap_accept before it installs and persists it, so it never goes back to an
 * older (term, version): maps compare by term first, then version, so what a
 * deposed primary makes in its old term loses to the new term's maps. A cmap_t is not locked: share it read-only (swap pointers to
 * publish a new one) or guard it.
 *
 * Placement: a node's digest is hrw_digest(id); an object's owner is the
 * active target (not in maintenance, not decommissioning) with the highest
 * hrw_weight(hrw_name_hash(uname), digest), the same rule as hrw.h.
 *
 * Errors: functions that can fail return AIS_ERR with errno set and, where a
 * buf_t err is given, one line appended to it:
 *   EINVAL  bad argument or malformed JSON / field
 *   EEXIST  node id already in the map; same version with other content
 *   ENOENT  no such node; no such file (cmap_load)
 *   EBUSY   the change would leave the map without an active primary
 *   ESTALE  incoming map is older than the current one
 *   EXDEV   incoming map belongs to another cluster (uuid)
 */
#ifndef AISD_CMAP_H
#define AISD_CMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"

#define CMAP_ID_MAX 64   /* node id and cluster uuid: [A-Za-z0-9._-:], 1..64 */
#define CMAP_URL_MAX 256 /* http(s)://host[:port][/path], printable ASCII */
#define CMAP_NODES_MAX 4096

enum cmap_role { CMAP_GATEWAY = 0, CMAP_TARGET = 1 };
enum cmap_state { CMAP_ACTIVE = 0, CMAP_MAINTENANCE = 1, CMAP_DECOMMISSIONING = 2 };
#define CMAP_ANY (-1) /* wildcard for cmap_count */

typedef struct cmap_node {
	char id[CMAP_ID_MAX + 1];
	enum cmap_role role;
	enum cmap_state state;
	bool drain; /* in maintenance: move its objects off (else they stay) */
	char pub_url[CMAP_URL_MAX + 1];
	char intra_url[CMAP_URL_MAX + 1];
	uint64_t digest; /* hrw_digest(id): filled by the map, not the caller */
} cmap_node_t;

typedef struct cmap cmap_t;

/* "gateway"/"target", "active"/"maintenance"/"decommissioning" <-> enum.
 * The parsers return AIS_OK or AIS_ERR; the names are "unknown" out of range. */
const char *cmap_role_name(enum cmap_role r);
const char *cmap_state_name(enum cmap_state s);
int cmap_role_parse(const char *s, size_t len, enum cmap_role *out);
int cmap_state_parse(const char *s, size_t len, enum cmap_state *out);
bool cmap_id_valid(const char *s, size_t len);
bool cmap_url_valid(const char *s, size_t len);

/* A new map, version 1, holding only the primary (which must be an active
 * gateway with a valid id and URLs). Returns NULL with errno and err set on a
 * bad argument. */
cmap_t *cmap_new(const char *uuid, const cmap_node_t *primary, buf_t *err);
void cmap_free(cmap_t *m);
cmap_t *cmap_clone(const cmap_t *m);
/* True when a and b hold the same uuid, version, primary and nodes. */
bool cmap_equal(const cmap_t *a, const cmap_t *b);

const char *cmap_uuid(const cmap_t *m);
uint64_t cmap_term(const cmap_t *m);
uint64_t cmap_version(const cmap_t *m);
const char *cmap_primary(const cmap_t *m);
/* Nodes by index 0..cmap_size()-1, in id order. */
size_t cmap_size(const cmap_t *m);
const cmap_node_t *cmap_node(const cmap_t *m, size_t i);
/* The node with this id, or NULL. */
const cmap_node_t *cmap_get(const cmap_t *m, const char *id, size_t len);
/* Number of nodes with this role and state; CMAP_ANY matches all. */
size_t cmap_count(const cmap_t *m, int role, int state);

/*
 * Mutators, for the primary only. Each returns AIS_OK after a change (the
 * version is then one higher) or when nothing had to change (the version
 * stays), and AIS_ERR (errno, err) otherwise, leaving the map as it was.
 *  cmap_add: n's id must be new (EEXIST); digest is computed here.
 *  cmap_remove: ENOENT; EBUSY for the primary (elect another one first).
 *  cmap_set_state: ENOENT; EBUSY to take the primary out of active. Any
 *    state but maintenance clears the node's drain flag.
 *  cmap_set_drain: ENOENT; EINVAL unless the node is in maintenance.
 *  cmap_set_primary: the node must be an active gateway (EINVAL, ENOENT).
 *  cmap_set_term: term must be higher than the map's (EINVAL).
 */
int cmap_add(cmap_t *m, const cmap_node_t *n, buf_t *err);
int cmap_remove(cmap_t *m, const char *id, buf_t *err);
int cmap_set_state(cmap_t *m, const char *id, enum cmap_state st, buf_t *err);
int cmap_set_drain(cmap_t *m, const char *id, bool drain, buf_t *err);
int cmap_set_primary(cmap_t *m, const char *id, buf_t *err);
int cmap_set_term(cmap_t *m, uint64_t term, buf_t *err);
/*
 * Lost targets: a target dropped from the map because it stopped answering
 * (cmap_drop; not decommissioned, so its objects were never moved off) may
 * hold the only copies of some objects until it is back. The map keeps its
 * id on a lost list so that every node knows a listing made without it may
 * lack objects (gateway.c). cmap_add of that id takes it off (it lists its
 * objects again); cmap_forget takes it off without it (an administrator
 * wrote the node off). cmap_remove (decommission, a re-join, the failed
 * primary) leaves the list alone.
 *  cmap_drop: cmap_remove, and a target not decommissioning goes on the
 *    lost list (in the same version).
 *  cmap_forget: AIS_OK; the version moves only when id was on the list.
 */
int cmap_drop(cmap_t *m, const char *id, buf_t *err);
int cmap_forget(cmap_t *m, const char *id);
size_t cmap_lost_count(const cmap_t *m);
/* The i-th lost target's id (id order), NULL past the end. */
const char *cmap_lost(const cmap_t *m, size_t i);

/* Appends the map as compact JSON, nodes in id order:
 * {"uuid":..,"term":N,"version":N,"primary":..,"nodes":[{"id","role","state",
 *  "public_url","intra_url"[,"drain":true]},..][,"lost":[ID,..]]} ("drain"
 *  only when set, "lost" only when not empty). Deterministic: equal maps,
 *  equal bytes. */
void cmap_encode(const cmap_t *m, buf_t *out);
/* Parses exactly len bytes (no NUL needed). Strict: every field present and
 * of its type ("term" may be absent: term 1, a map saved before terms
 * existed; "lost" may be absent: none; its ids unique, none a node), no unknown or duplicate keys, known roles and states, unique
 * valid ids, valid URLs, term and version >= 1, a primary that is an active gateway
 * in the map. AIS_OK with *out set (caller frees), or AIS_ERR with errno
 * EINVAL, *out NULL and one line in err. */
int cmap_decode(const char *json, size_t len, cmap_t **out, buf_t *err);

/* Order of (term, version): <0 when a is older than b, 0 same, >0 newer. */
int cmap_cmp(const cmap_t *a, const cmap_t *b);
/*
 * cmap_accept decides whether a node holding cur installs incoming:
 *   AIS_OK    incoming is newer by (term, version) (or cur is NULL);
 *   AIS_DONE  same term, version and content: nothing to do;
 *   AIS_ERR   errno EXDEV (other cluster uuid), ESTALE (older) or EEXIST
 *             (same term and version, other content: two writers).
 */
int cmap_accept(const cmap_t *cur, const cmap_t *incoming, buf_t *err);

/* The owner of uname: the active target with the highest HRW weight, or NULL
 * when there is no active target. */
const cmap_node_t *cmap_owner(const cmap_t *m, const char *uname, size_t len);
/* Fills out[0..k) with the top k active targets for uname, best first, all
 * distinct; k is clamped to the number of active targets and HRW_TOP_MAX.
 * Returns k. out[0] is cmap_owner(). */
size_t cmap_top(const cmap_t *m, const char *uname, size_t len, size_t k, const cmap_node_t **out);

/* The active gateways in election order, best first: by HRW weight of the
 * cluster uuid, ties by id. Every node holding the same map computes the same
 * order, so the successor of a failed primary is the first live gateway in it
 * other than the primary. Fills at most cap entries; returns how many there
 * are in all. */
size_t cmap_election_order(const cmap_t *m, const cmap_node_t **out, size_t cap);

/*
 * Election (vote.c, pure). A candidate gateway asks every node of its map
 * for a vote with a ballot (POST /v1/cluster/vote); it wins with the yes
 * votes (its own included) of a majority of the nodes of its map
 * (cmap_quorum), the failed primary counted. cmap_vote is the voter's rule:
 * yes only when
 *  V1. the ballot is for this cluster (uuid) and replaces the primary of
 *      the voter's map, and the candidate is another active gateway in it;
 *  V2. the voter cannot reach that primary itself (primary_alive false);
 *  V3. the candidate's metadata is not older than the voter's: (cmap_term,
 *      cmap_version) and bmd_version (else CMAP_VOTE_STALE: the candidate
 *      fetches the voter's metadata, catches up and tries again);
 *  V4. the term asked for is above the voter's map term, and above the
 *      term of the voter's last vote, or equal to it with the same
 *      candidate (a retry): one vote per term, so one winner per term.
 * The caller records (persists) {term, candidate} before it answers yes.
 */
typedef struct cmap_ballot {
	char uuid[CMAP_ID_MAX + 1];
	char candidate[CMAP_ID_MAX + 1];
	char primary[CMAP_ID_MAX + 1]; /* the primary it replaces */
	uint64_t term;                 /* the term asked for */
	uint64_t cmap_term, cmap_version, bmd_version; /* the candidate's metadata */
} cmap_ballot_t;

typedef struct cmap_vote_rec {
	uint64_t term; /* the highest term voted in; 0 never */
	char candidate[CMAP_ID_MAX + 1];
} cmap_vote_rec_t;

enum cmap_vote_res { CMAP_VOTE_YES = 0, CMAP_VOTE_NO = 1, CMAP_VOTE_STALE = 2 };

enum cmap_vote_res cmap_vote(const cmap_t *mine, uint64_t my_bmd_version, const cmap_vote_rec_t *voted,
			     const cmap_ballot_t *b, bool primary_alive, buf_t *why);
/*
 * The primary's lease (vote.c, pure; the timing rule is cluster.h rule 12).
 * Each keepalive round the primary asks every node for its lease (POST
 * /v1/cluster/lease) and acts as primary only while the grants of a
 * majority (its own counted) are younger than cluster.lease, measured from
 * the round's start on its monotonic clock. A node grants it when
 *  L1. the request is for this cluster from a gateway of the node's map,
 *      its term is neither below the node's map term nor below the term
 *      of the node's last vote (a node that voted in a newer term promised
 *      that term), and when it equals the map's term, the asker is that
 *      map's primary;
 * and then records {primary, term, its own monotonic time}. A yes vote
 * records a grant to the candidate the same way. And
 *  V5. a node that granted a lease to one gateway votes for no other one
 *      until the grant is older than the lease plus a clock-drift margin
 *      (conf_lease_guard_ms); a node just started holds an unknown grant
 *      for that long (it may have granted one before it stopped).
 * So any majority that elects a new primary holds a node whose last grant
 * to the old one had expired on the old one's clock too: the old primary
 * stopped acting before the new one starts (no two primaries at any time).
 */
typedef struct cmap_lease_req {
	char uuid[CMAP_ID_MAX + 1];
	char primary[CMAP_ID_MAX + 1]; /* the asker */
	uint64_t term;                 /* the asker's map term */
} cmap_lease_req_t;

typedef struct cmap_lease_rec {
	char to[CMAP_ID_MAX + 1]; /* granted to; "" unknown (binds every candidate) */
	uint64_t term;
	int64_t at_ns; /* monotonic; 0: never */
} cmap_lease_rec_t;

/* L1: true when the node whose map is mine and whose last vote is voted
 * grants r; else false with the reason in why (if not NULL). */
bool cmap_lease_grant(const cmap_t *mine, const cmap_vote_rec_t *voted, const cmap_lease_req_t *r, buf_t *why);
/* V5: true when grant g (made at g->at_ns) still forbids a yes vote for
 * candidate at monotonic time now_ns, the guard being guard_ns. */
bool cmap_lease_binds(const cmap_lease_rec_t *g, const char *candidate, int64_t now_ns, int64_t guard_ns);
/* Lease request JSON: {"uuid","primary","term"}; decode is strict. */
void cmap_lease_encode(const cmap_lease_req_t *r, buf_t *out);
int cmap_lease_decode(const char *json, size_t len, cmap_lease_req_t *out, buf_t *err);

/* Yes votes a candidate needs: a majority of the map's nodes. */
size_t cmap_quorum(const cmap_t *m);
/* Ballot JSON: {"uuid","term","candidate","primary","cmap_term",
 * "cmap_version","bmd_version"}. Decode is strict like cmap_decode. */
void cmap_ballot_encode(const cmap_ballot_t *b, buf_t *out);
int cmap_ballot_decode(const char *json, size_t len, cmap_ballot_t *out, buf_t *err);

/* Persistence (persist.c): atomic save (temp file in the same directory,
 * fsync, rename, fsync of the directory) and load. Saves of one path must be
 * serialized by the caller. Load: errno ENOENT for a missing file, EINVAL for
 * a corrupt one (with err), EIO etc. for other I/O errors. */
int cmap_save(const cmap_t *m, const char *path, buf_t *err);
int cmap_load(const char *path, cmap_t **out, buf_t *err);

#endif
