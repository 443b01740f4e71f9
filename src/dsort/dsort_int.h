/*
 * dsort_int.h - what the two halves of a target's dsort share (src/dsort):
 * the indexes this target serves to its peers (index.c), which the runs
 * (job.c) fill. Every function here is thread-safe.
 */
#ifndef AISD_DSORT_INT_H
#define AISD_DSORT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"
#include "aisd/jobreg.h"

/* Bytes one GET /v1/dsort/ID?shard= reads at most (and the most a
 * builder asks of any peer in one GET). */
#define DSORT_READ_MAX (16u << 20)

enum ix_state { IX_BUILDING, IX_READY, IX_FAILED };

/* The index of one run on this target, served on GET /v1/dsort/ID. */
typedef struct ix ix_t;

/* A new index of run id, being built (a former one of that id goes, and
 * so do those of runs that ended long ago). */
ix_t *ix_add(const char *id);
/* Its state: READY takes body (left empty), FAILED keeps err. */
void ix_set(ix_t *e, enum ix_state st, buf_t *body, const char *err);
/* Parses its body (READY); NULL when none. */
json_t *ix_parse(ix_t *e);
/* n input shards; file i (-1: none) is the tar this target made of
 * compressed input shard i, which peers read. The run alone sets them. */
void ix_files(ix_t *e, size_t n);
void ix_set_file(ix_t *e, size_t i, int fd);
int ix_file(ix_t *e, size_t i);
/* The stages a run reaches past its index, which peers wait for
 * (GET /v1/dsort/ID?stage=built|committed): its output shards built (the
 * barrier of rule 5), then committed (the confirmation of rule 6). */
enum ix_stage { IX_STAGE_NONE, IX_STAGE_BUILT, IX_STAGE_COMMITTED };
void ix_reach(ix_t *e, enum ix_stage st);
/* The run ended: its files close; the index is served a while yet. */
void ix_end(ix_t *e);
/* Frees the indexes of the runs that ended (at the node's stop). */
void ix_free_ended(void);

#endif
