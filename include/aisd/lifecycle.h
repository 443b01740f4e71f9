/*
 * lifecycle.h - the S3 lifecycle job of a target (src/lifecycle/job.c):
 * kind "lifecycle" of the job registry (jobreg.h), run every
 * s3.lifecycle_period over the buckets whose BMD entry has lifecycle rules
 * (s3lc.h), expiring what the rules say on the objects, versions and
 * multipart uploads this target owns, through the object layer.
 */
#ifndef AISD_LIFECYCLE_H
#define AISD_LIFECYCLE_H

#include "aisd/target.h"

/* Registers the kind and starts the schedule (a target in a cluster; a
 * standalone one has no BMD, hence no rules: nothing starts). */
void lc_start(target_t *t);
/* Stops the schedule and any run (between objects), before target_stop. */
void lc_stop(void);

#endif
