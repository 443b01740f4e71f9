/*
 * xcopy.h - the bucket-to-bucket copy job of a target (src/xcopy/copy.c),
 * kind "copy-bck" of the job registry (jobreg.h). A gateway starts it on
 * every target (POST /v1/buckets/SRC?bck_to=DST {"action":"copy-bck"}) as
 * one run id; each target:
 *  1. walks the objects of SRC it holds (those under the prefix), in name
 *     order, a page at a time, and sends each object it is the owner of
 *     (HRW rank 0 under the current map: each object once in the cluster)
 *     to the owner of DST/NAME as a client's PUT: the receiver commits it
 *     through its object layer, with DST's copies or erasure coding;
 *  2. counts walked objects and bytes, sent objects and bytes, errors (the
 *     last one kept); a dry run walks and counts what it would send;
 *  3. stops between objects; a run a restart cut resumes from the start
 *     of SRC (what it had sent is sent again: a PUT of the same bytes);
 *  4. a run waits (30 s at most) until both buckets are in this target's
 *     BMD, so it never walks under a BMD that lacks them (and finds
 *     nothing to send): past that it fails.
 * An object whose owner holds only erasure-coded slices of it (whole_copy
 * off) is not copied.
 */
#ifndef AISD_XCOPY_H
#define AISD_XCOPY_H

#include "aisd/store.h"

struct cluster;
/* Registers the kind with what it needs of the target (both kept until
 * xcopy_stop). */
void xcopy_register(struct cluster *cl, store_t *store);
/* Stops the runs in progress (a node's stop: their records stay running,
 * to resume) and waits a little for them. */
void xcopy_stop(void);

#endif
