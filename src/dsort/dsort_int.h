/*
 * dsort_int.h - what the parts of a target's dsort share (src/dsort): the
 * indexes this target serves to its peers (index.c), which the runs fill
 * (thread-safe); a run (struct drun: job.c runs it) with the helpers its
 * read-ahead (ahead.c) and its commit and undo (commit.c) use.
 */
#ifndef AISD_DSORT_INT_H
#define AISD_DSORT_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"
#include "aisd/dsort.h"
#include "aisd/jobreg.h"
#include "aisd/util.h"

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

/* --- a run (job.c) ---------------------------------------------------------- */

#define DSORT_IO_TIMEOUT_MS 120000 /* one GET or PUT between targets */

struct drun {
	jtrun_t r; /* id, stats, abort (jobreg.h) */
	char src[NAME_BUCKET_MAX + 1], dst[NAME_BUCKET_MAX + 1];
	json_t *spec;
	dsort_spec_t s;
	ix_t *ix;
	size_t me;    /* this target's index in the spec's targets */
	json_t *objs; /* the spec's "objects" */
	int *fds;     /* per input shard: its file here (-1: not here, -2: not opened yet) */
	json_t *written; /* names of the output shards this run PUT */
	bool committing; /* past the barrier: output shards of the run may be anywhere (rule 6) */
	bool resumed;    /* started again after a restart: its former self may have committed some */
	int64_t ms[6];   /* when each step ended: index, plan, build, barrier, commit, confirmation (the log's) */
	/* the spool of every output shard this target builds (rule 5) */
	int spfd;
	bool spfile; /* spilled to a mountpath */
	uint64_t splen;
	json_t *built; /* [[NAME,OFFSET,LENGTH],..] in the spool (or staged: stage) */
	/* output shards built in place (rule 5): stage[i], the staged write
	 * (dsort_env_t.stage_*) of built[i] (OFFSET 0), NULL: in the spool;
	 * cur: the one being built, its bytes gathered in wb, curlen in all */
	void **stage;
	size_t nstaged;
	void *cur;
	buf_t wb;
	uint64_t curlen;
	char cause[300]; /* a peer's failure that failed this run: passed on as it is */
	dsort_ofile_t of; /* "order": the order file (the spec's "order_text") */
};

/* What the target gave dsort_register. */
extern dsort_env_t dsort_denv;

/* Counts an error of the run: name (an object, a step) and why; the first
 * fails the run. */
void dsort_fail(struct drun *x, const char *name, const char *why);
/* Has the run failed or been stopped? */
bool dsort_failed(struct drun *x);
/* The tar of input shard i when this target can read it (its store's
 * object, or the tar it made of a compressed one); -1 else. Not
 * thread-safe for a shard not opened yet. */
int dsort_shard_fd(struct drun *x, size_t i);
/* GETs bytes [off, off+len) of input shard i from its holder into w(arg);
 * len 0: the whole object. false with x's error set. */
bool dsort_fetch(struct drun *x, size_t i, uint64_t off, uint64_t len, int (*w)(void *, const char *, size_t),
		 void *arg);
/* A sink that appends to a buf_t (arg). */
int dsort_buf_sink(void *arg, const char *p, size_t n);

/* --- the read-ahead of phase 2 (ahead.c) -------------------------------------- */

#define DSORT_AHEAD_THREADS 4
#define DSORT_AHEAD_SLOTS 32

/* Bytes the read-ahead holds at most, out of dsort.memory_limit. */
static inline uint64_t dsort_ahead_max(void) { return MIN(dsort_denv.memory_limit / 4, 32u << 20); }

/* The builder's read-ahead of the remote records it takes in order. */
struct ahead {
	struct drun *x;
	const dsort_rec_t **seq; /* the records in build order */
	uint64_t *lo, *hi;       /* per record: its span, hi 0: not fetched ahead */
	size_t n, pos;           /* pos: the builder's record (it alone moves it) */
	pthread_mutex_t mu;      /* what follows */
	pthread_cond_t cv;
	size_t next;             /* the next record to fetch */
	uint64_t inflight;       /* bytes fetched or fetching, not yet taken */
	bool stop;
	struct {
		size_t k; /* its record */
		int state;
		buf_t b;
	} slot[DSORT_AHEAD_SLOTS];
	pthread_t th[DSORT_AHEAD_THREADS];
	int nth;
};

/* The read-ahead of records seq[0..n) (threads started when any is
 * remote); the builder then takes each record in turn (take, next) and
 * ends with stop. */
void dsort_ahead_start(struct ahead *a, struct drun *x, const dsort_rec_t **seq, size_t n);
/* The builder's record a->pos: its span's bytes (at *lo of its shard) when
 * fetched ahead, else NULL (the builder reads it itself); *failed when the
 * fetch failed (x's error set). */
const buf_t *dsort_ahead_take(struct ahead *a, uint64_t *lo, bool *failed);
/* The builder is done with record a->pos: the next. */
void dsort_ahead_next(struct ahead *a);
/* Stops the threads and frees what a holds. */
void dsort_ahead_stop(struct ahead *a);

/* --- the commit and the undo of rule 6 (commit.c) ------------------------------ */

/* Commits the output shards built (x->built): each to DST's owner, tagged
 * DSORT_TAG=ID, a few at once; x->written names those committed. x's error
 * set on a failure. */
void dsort_commit(struct drun *x);
/* A failed run: its output shards go (rule 6). */
void dsort_undo(struct drun *x);

#endif
