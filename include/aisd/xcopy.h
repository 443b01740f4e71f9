/*
 * xcopy.h - the bucket-to-bucket job of a target (src/xcopy/copy.c): a
 * copy (kind "copy-bck") or an offline transform (kind "etl-bck"): one
 * job, whose transform is the identity for a copy. A gateway starts it on
 * every target (POST /v1/buckets/SRC?bck_to=DST {"action":"copy-bck"} or
 * {"action":"etl-bck","value":{"id":ETL}}) as one run id; each target:
 *  1. walks the objects of SRC it holds (those under the prefix and, with
 *     a template, of its names), in name order, a page at a time, and
 *     sends each object it is the owner of (HRW rank 0 under the current
 *     map: each object once in the cluster) to the owner of DST/NAME as a
 *     client's PUT: the receiver commits it whole through its object
 *     layer, with DST's copies or erasure coding (no partial object is
 *     ever visible in DST);
 *  1a. etl-bck: the object goes through the transformer first, with
 *     etl_transform_fd (the inline GET's path: its workers, framing,
 *     limits); what is sent is the worker's answer. NAME's extension may
 *     be renamed ("ext": {"jpg":"npy"}). A page is handled by as many
 *     threads as the transformer has workers (a copy: one);
 *  2. counts walked objects and bytes, sent objects and bytes, errors (the
 *     first JOB_ERRORS_LISTED listed, jobs.h); a dry run walks and counts
 *     what it would send, transforming nothing;
 *  2a. an object's error (the worker crashed, hung, answered garbage or
 *     an error; the write failed) is counted and the run goes on, unless
 *     "coer" is false: then the run stops failed, its last_error naming
 *     the object, and asks the primary gateway to stop the run on every
 *     target (PUT /v1/jobs {"action":"stop","id"}); a transformer removed or stopped (etl rm, etl stop)
 *     stops the run aborted, its last_error saying so;
 *  3. stops between objects; a run a restart cut resumes from the start
 *     of SRC (what it had sent is sent again: a PUT of the same bytes);
 *  4. a run waits (30 s at most) until both buckets are in this target's
 *     BMD, so it never walks under a BMD that lacks them (and finds
 *     nothing to send): past that it fails.
 *  5. Across providers: a SRC with a remote backend is walked through its
 *     remote's listing (each target lists it, and sends the names it owns),
 *     so objects not cached in SRC are copied too: the owner reads a cached
 *     one from its store and an uncached one through the object layer's
 *     cold GET (a GET to itself: the same fill, commit and one-fetch rule
 *     as a client's GET), which caches it in SRC as any cold GET does
 *     (aisctl bucket evict drops them again). A dry run reads nothing: it
 *     counts the listing's sizes. A DST with a remote backend takes each
 *     object as any client's PUT (rule 1): written through to its remote
 *     first, then committed here. One path for every pair of providers.
 * An object whose owner holds only erasure-coded slices of it (whole_copy
 * off) is not copied.
 */
#ifndef AISD_XCOPY_H
#define AISD_XCOPY_H

#include <jansson.h>
#include <stdbool.h>

#include "aisd/buf.h"
#include "aisd/store.h"

#define XCOPY_EXT_MAX 8  /* extension renames of one run */
#define XCOPY_EXT_LEN 31

/* Extension renames: from[i] -> to[i], without their dots. */
typedef struct xcopy_ext {
	size_t n;
	char from[XCOPY_EXT_MAX][XCOPY_EXT_LEN + 1], to[XCOPY_EXT_MAX][XCOPY_EXT_LEN + 1];
} xcopy_ext_t;

/* Checks a run's value (the gateway before it starts one, every target at
 * its start): {"prefix":"..","template":"pre{0..9}post","ext":{"jpg":"npy"},
 * "dry_run":bool,"coer":bool} and, for etl (kind etl-bck), "etl":NAME
 * (required) and "etl_args":"..". 0, or -1 with err. Pure. */
int xcopy_spec_check(json_t *v, bool etl, buf_t *err);
/* "ext" (NULL: none) into out. 0, or -1 with err (may be NULL). Pure. */
int xcopy_ext_parse(json_t *o, xcopy_ext_t *out, buf_t *err);
/* The destination name of name (len bytes): its extension (after the
 * last '.' of its last segment, not a leading one) renamed when e has it.
 * false when the result is not a valid object name or over outsz. Pure. */
bool xcopy_rename(const xcopy_ext_t *e, const char *name, size_t len, char *out, size_t outsz);

struct cluster;
/* Registers the kind with what it needs of the target (both kept until
 * xcopy_stop). */
void xcopy_register(struct cluster *cl, store_t *store);
/* Stops the runs in progress (a node's stop: their records stay running,
 * to resume) and waits a little for them. */
void xcopy_stop(void);

#endif
