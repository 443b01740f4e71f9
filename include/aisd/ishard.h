/*
 * ishard.h - initial sharding in the cluster: loose objects of a bucket
 * (any layout) packed into tar shards of a destination bucket.
 *
 * The plan (src/ishard/plan.c, pure) turns one listing of SRC into shards;
 * the gateway lists SRC once and hands the same listing to every target
 * (POST /v1/buckets/SRC?bck_to=DST {"action":"ishard"}), so every target
 * computes the same plan. The rules:
 *  1. A sample is the set of objects with one key: by default WebDataset's
 *     (the name up to the first dot of its basename: a/000123.jpg and
 *     a/000123.cls are sample a/000123), or the first group (else the whole
 *     match) of a user regex (names that do not match are skipped).
 *  2. With required extensions (ext), members with other extensions are
 *     left out, and a sample lacking one of them is left out (skip), lets
 *     the plan fail (fail), or is left out and named in the answer (list).
 *  3. Samples go in key order, or in the order of a seeded shuffle (the
 *     same seed, the same order, on every node); members of a sample in
 *     name order, one after the other: a sample is never split.
 *  4. Shards are filled greedily up to shard_size bytes of tar (headers,
 *     padding and the end blocks counted); a sample larger than shard_size
 *     alone gets a shard of its own (counted "oversize").
 *  5. Shard i is named by the template: "p-%06d.tar" (printf's %d with an
 *     optional 0-width) or "p-{0000..9999}.tar" (a brace range: index
 *     start+i, zero-padded to the start's width; a plan with more shards
 *     than the range names fails). A template ending in .tgz or .tar.gz
 *     makes gzip-compressed shards (tgzw.h); shard_size bounds their tar
 *     bytes before compression.
 * The job (src/ishard/job.c, kind "ishard"): each target builds the shards
 * it owns in DST by HRW, reading members it holds from its store and the
 * others from their owners (GET /v1/objects on their intra-cluster URL),
 * and PUTs each shard to DST's owner as a client's write, so DST's copies
 * and erasure coding hold. A run a restart cut resumes with its persisted
 * spec, and rebuilds the shards it owns (a PUT of the same bytes).
 */
#ifndef AISD_ISHARD_H
#define AISD_ISHARD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "aisd/buf.h"
#include "aisd/store.h"

#define ISHARD_NAME_MAX 1024
#define ISHARD_RETRY_MS 90000 /* how long a fetch or a PUT is retried while its peer is away (a restart) */

typedef struct ishard_member {
	const char *name; /* borrowed from the listing */
	uint64_t size;
} ishard_member_t;

typedef struct ishard_sample {
	size_t first, n; /* members[first .. first+n) */
	uint64_t bytes;  /* tar bytes of its members */
} ishard_sample_t;

typedef struct ishard_shard {
	size_t first, n; /* order[first .. first+n): sample indexes */
	uint64_t bytes;  /* tar bytes, end blocks included */
} ishard_shard_t;

typedef struct ishard_plan {
	ishard_member_t *members;
	size_t nmembers;
	ishard_sample_t *samples;
	size_t nsamples;
	size_t *order; /* the samples' order in the shards */
	ishard_shard_t *shards;
	size_t nshards;
	uint64_t skipped_files; /* not matching the regex, or of an extension not asked for */
	uint64_t missing;       /* samples left out for a missing extension */
	uint64_t oversize;      /* samples larger than shard_size */
	json_t *missing_keys;   /* ("list") the keys of those samples (at most 1000) */
	char tpl[ISHARD_NAME_MAX + 1];
} ishard_plan_t;

/* Builds the plan of spec ({"objects":[[NAME,SIZE],..],"shard_size",
 * "template","ext":[..],"regex","missing","shuffle"}); spec must outlive
 * the plan (names are borrowed). 0, or 400 with err saying what to fix. */
int ishard_plan(json_t *spec, ishard_plan_t *p, buf_t *err);
void ishard_plan_free(ishard_plan_t *p);
/* Checks the spec's options alone (not "objects"): 0, or 400 with err. */
int ishard_spec_check(json_t *spec, buf_t *err);
/* Names shard i by template tpl into out (ISHARD_NAME_MAX + 1); false
 * when the template cannot name it (a brace range too small). Pure. */
bool ishard_name(const char *tpl, size_t i, char *out);
/* The template's number space holds name (its fixed parts around a run of
 * digits, within a brace range's bounds). Pure. */
bool ishard_name_match(const char *tpl, const char *name);
/* WebDataset's sample key of name (rule 1's default): its first *return
 * bytes, up to the first dot of its basename. Pure. */
size_t ishard_key_len(const char *name);
/* The extension of name: from the first dot of its basename ("" none). */
const char *ishard_ext_of(const char *name);
/* Shuffles order[0..n) by Fisher-Yates under splitmix64 of seed: the same
 * seed, the same order, on every node. Pure. */
void ishard_shuffle(size_t *order, size_t n, uint64_t seed);
/* The tar bytes of one member (header(s), data, padding). Pure. */
uint64_t ishard_member_bytes(const char *name, uint64_t size);
/* Appends the plan's summary: {"shards","samples","files","skipped_files",
 * "missing","oversize","bytes","shard_bytes":{"min","max","mean"},
 * "samples_per_shard":{"min","max","mean"},"first","last"[,"missing_keys"]}. */
void ishard_plan_summary(const ishard_plan_t *p, json_t *out);

struct cluster;
/* Registers the job kind "ishard" (cl and store kept until ishard_stop). */
void ishard_register(struct cluster *cl, store_t *store);
/* Stops the runs in progress (their records stay running, to resume). */
void ishard_stop(void);

/* --- the transfers of the jobs that build shards (src/ishard/io.c) ----
 * ishard and archive (xarch.h). job names the job in log lines. */
#include <stdatomic.h>
#include <stdio.h>
/* Appends object bck/name to f: from store when it holds it, else fetched
 * from its owner (GET /v1/objects on its intra-cluster URL; a failed fetch
 * is written over). 0 with *n, the bytes appended; else the HTTP status
 * of the failure (404: no such object) with why set. */
int ishard_fetch(struct cluster *cl, store_t *store, const char *bck, const char *name, FILE *f,
		 atomic_bool *abort, const char *job, uint64_t *n, char *why, size_t whysz);
/* PUTs the whole of f as bck/name to its owner, as a client's write (its
 * copies, erasure coding and tar index follow), with custom metadata
 * custom ("k=v,..", NULL: none). 0, or the HTTP status of the failure with
 * why set. */
int ishard_put(struct cluster *cl, const char *bck, const char *name, FILE *f, const char *custom,
	       atomic_bool *abort, const char *job, char *why, size_t whysz);

#endif
