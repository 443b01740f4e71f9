/*
 * xarch.h - archive create in the cluster: a list or a template of objects
 * of a bucket packed into a new shard (tar, or gzip-compressed tar), or
 * appended to an existing one, by the target that owns the shard.
 *
 * POST /v1/buckets/SRC?bck_to=DST {"action":"archive","value":{..}} (the
 * value below; bck_to may be left out or be SRC itself). The gateway
 * checks the spec (xarch_spec_check), expands the names, lists SRC once
 * to find them (a missing one is a 404 naming it) and DST for the shard
 * (there without "append" or "overwrite": a 409), then starts the job
 * "archive" on every target with the listing's sizes in "objects". The
 * rules:
 *  1. Only the target that owns DST/ARCHNAME by HRW works; the others end
 *     at once (done, nothing to do). It reads the members it holds from
 *     its store and fetches the others from their owners (ishard_fetch),
 *     in the order given (a template: index order), into a temporary tar.
 *  2. The shard's format is its name's: ".tar" a tar, ".tgz" or ".tar.gz"
 *     the tar compressed (tgzw.h); "mime", when given, must agree. Any
 *     other name is a 400.
 *  3. Append: the shard as it is (fetched whole; a .tgz inflated back to
 *     its tar), cut before its end-of-archive blocks, the new members
 *     after it, then (a .tgz) compressed again: a new version, written
 *     whole as in rule 4. A shard that is absent is created. A shard that
 *     is not a valid tar (a .tgz: not gzip, or not a tar inside) fails the
 *     run and is left as it was. Only tar formats are appended to: any
 *     other name (.zip) is a 400 that says so.
 *  4. The finished file is PUT to the shard's owner as a client's write
 *     (ishard_put): a new version committed atomically, with its copies,
 *     erasure coding and tar index; a listing never shows a partial
 *     shard, and a failed or stopped run leaves the old version (or none).
 *  5. A member's name in the shard is the object's name, or "SRC/NAME"
 *     with "inclsrcname". A member whose size changed since the listing
 *     fails the run.
 *  6. A run cut by a restart (its record says running) resumes under its
 *     id: the owner builds the shard again from the start (for an append:
 *     from the shard as it is, still the old version). The version a run
 *     commits carries the custom metadata archive.run=ID, so a run cut
 *     after its commit finds it there and ends done without building
 *     again: an append is never applied twice. Until the commit the
 *     shard is the old version (or absent), whole.
 */
#ifndef AISD_XARCH_H
#define AISD_XARCH_H

#include <jansson.h>
#include <stdbool.h>

#include "aisd/buf.h"
#include "aisd/conf.h"
#include "aisd/store.h"

#define XARCH_NAMES_MAX 100000 /* objects of one archive request */
#define XARCH_RUN_KEY "archive.run" /* custom metadata of a shard: the run that wrote it (rule 6) */

/* Checks an archive request's value: {"archname":SHARD,"mime":".tar"|
 * ".tgz"|".tar.gz" (optional),"list":[NAME,..] | "template":"p{000..099}s",
 * "append":bool,"overwrite":bool,"inclsrcname":bool}. 0, or 400 with err
 * saying what to fix. Pure. */
int xarch_spec_check(json_t *v, buf_t *err);
/* The object names of a checked value, in archive order (a new array). */
json_t *xarch_names(json_t *v);
/* Is the shard a compressed tar (by its name)? */
bool xarch_is_tgz(json_t *v);

struct cluster;
/* Registers the job kind "archive" (src/xarch/job.c). From c: each member
 * packed waits debug.archive_pause (a test hook; 0: none); an appended
 * .tgz inflates to at most net.max_body. */
void xarch_register(struct cluster *cl, store_t *store, const conf_t *c);
/* Stops the runs in progress. */
void xarch_stop(void);

#endif
