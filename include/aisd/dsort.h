/*
 * dsort.h - distributed resharding and shuffling of WebDataset shards
 * inside the cluster: the samples of SRC's tar shards, reordered (a seeded
 * shuffle, a sort by key or by a member's content) and cut into new shards
 * of DST named by a template.
 *
 * The gateway lists SRC once, keeps the input shards (by prefix or input
 * template), assigns each to one target of the map of the moment (HRW of
 * SRC/NAME among the active targets) and hands the same spec to every target
 * (POST /v1/buckets/SRC?bck_to=DST {"action":"dsort"}); bad specs are 400
 * there, before any target starts. The rules of a run:
 *  1. A sample (record) is the set of members of one input shard with one
 *     WebDataset key (the name up to the first dot of its basename,
 *     ishard_key_len); members keep their names, bytes and order in the
 *     shard. A sample of two shards with one key is two records.
 *  2. Phase 1: each target reads the headers of the input shards assigned
 *     to it (and, for "content", the member with content_ext) and keeps its
 *     index: per record its key, sort key and members' offsets and sizes.
 *     A compressed shard (.tgz, .tar.gz, .zip) is first made a tar (a
 *     temporary file on a mountpath) through libarchive; offsets are the
 *     tar's, and peers read its members' bytes from this target
 *     (GET /v1/dsort/ID?shard=I&off=&len=). Peers read the index from
 *     GET /v1/dsort/ID (targets only).
 *  3. Every target reads every index and computes the same global order:
 *     records in canonical order (key, input shard, position), then sorted
 *     (alphanumeric: key bytes; numeric: the key's last run of digits as a
 *     number; content: the member's text as a number or a string; ties in
 *     canonical order) or shuffled (Fisher-Yates under the seed). Every
 *     input shard must be indexed exactly once, else the run fails.
 *  4. The order is cut greedily into output shards: at most shard_size
 *     tar bytes (a sample is never split; a larger one is alone), or
 *     samples_per_shard samples; shard i is named by the template
 *     (ishard_name), and a plan with more shards than it names fails.
 *     Algorithm "order" cuts by the order file instead: each shard it
 *     names gets the samples it lists, the others go to unlisted_shard
 *     (or fail the run). The gateway reads the file (order_file) once and
 *     hands its text to the targets in the spec ("order_text").
 *  5. Phase 2: the builder of output shard i is the HRW owner of DST/NAME
 *     among the spec's targets. It writes every shard it builds (members'
 *     data read from its store, or with ranged GETs of the input shard
 *     through the object layer: records move target to target, never
 *     through a gateway; a few threads read the remote samples ahead of
 *     the builder, within a quarter of dsort.memory_limit and 32 MiB)
 *     in place: a staged write of the object layer (dsort_env_t.stage_*),
 *     where it keeps DST/NAME, invisible until committed. A shard named
 *     ".tgz" or ".tar.gz" (gzip-compressed once built, tgzw.h), and those
 *     past STAGE_MAX, go to one spool instead: memory up to the rest of
 *     dsort.memory_limit, then a temporary file on a mountpath. When every
 *     target has built its shards (a barrier: GET /v1/dsort/ID?stage=built),
 *     each commits its shards (a few at once) as a client's writes: the
 *     object layer's rename of a staged one (its copies or slices made
 *     then; one whose owner is another target by the map of the moment is
 *     PUT there instead), a PUT to DST's owner of a spooled one (copies,
 *     erasure coding hold; a listing never shows a partial shard).
 *  6. A run that fails (a peer gone or failed, an input changed or
 *     unreadable) ends failed with the reason; its index then answers 500
 *     with the first failure's reason, so its peers fail at once with it
 *     (a peer gone: after PEER_WAIT_MS without an answer). A failure
 *     before the barrier leaves no output at all. Past the barrier, every
 *     output shard is PUT with the custom metadata DSORT_TAG=ID, and a run
 *     is done only when every peer has committed its shards too
 *     (?stage=committed), so a target lost during the commits fails the
 *     others' runs. A failed run deletes (through the object layer: every
 *     copy) the shards it committed and, once past the barrier, every
 *     object of DST it holds tagged with its id: its peers' commits, a
 *     lost target's. A run cut by a restart starts again from its spec
 *     (the same index, plan and shards): when its peers were still waiting
 *     for it (within PEER_WAIT_MS), the job goes on; else it fails with
 *     their reason and deletes the tagged shards it holds (those its
 *     former self committed). So once every target of a failed run is
 *     back, DST holds no output shard of it. (A target lost after every
 *     peer saw it commit, before one confirmed it, can still leave the
 *     others' runs done and that one's failed.)
 */
#ifndef AISD_DSORT_H
#define AISD_DSORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "aisd/buf.h"
#include "aisd/ishard.h"
#include "aisd/names.h"

enum dsort_alg { DSORT_SHUFFLE, DSORT_ALPHA, DSORT_NUMERIC, DSORT_CONTENT, DSORT_ORDER };

#define DSORT_EXT_MAX 63
#define DSORT_CONTENT_MAX 256 /* bytes of a content_ext member used as its sort key */
#define DSORT_ORDER_MAX (16u << 20) /* bytes of an order file */
#define DSORT_TAG "dsort.run" /* custom metadata of an output shard: DSORT_TAG=ID of its run (rule 6) */

/*
 * An order file (algorithm "order"): text, one sample per line,
 * "KEY<TAB>OUTPUT-SHARD-NAME" (a trailing CR ignored; empty lines and lines
 * starting with '#' skipped). The samples of a shard are in the file's
 * order (several records of one key: in canonical order), shards in the
 * order of their first line. A key listed twice, a line without a TAB or
 * with an empty key, and a shard name that is not an object name ending in
 * .tar, .tgz or .tar.gz (or, with a template, that the template does not
 * name) are errors. Keys listed that no input holds are ignored.
 */
typedef struct dsort_okey {
	const char *key; /* into text */
	uint32_t shard;  /* index in shards */
	uint32_t line;   /* its rank in the file */
} dsort_okey_t;

typedef struct dsort_ofile {
	char *text;          /* the file, NULs put in */
	const char **shards; /* into text, in the order of their first line */
	size_t nshards;
	dsort_okey_t *keys;  /* sorted by key */
	size_t nkeys;
} dsort_ofile_t;

/* Parses an order file of len bytes (copied); tpl: "" or the template
 * shard names must match. 0, or 400 with err naming the line. Pure. */
int dsort_ofile_parse(const char *text, size_t len, const char *tpl, dsort_ofile_t *of, buf_t *err);
void dsort_ofile_free(dsort_ofile_t *of);
/* The entry of key, or NULL when the file does not list it. */
const dsort_okey_t *dsort_ofile_find(const dsort_ofile_t *of, const char *key);
/* Is name a dsort output shard name (an object name ending in .tar, .tgz
 * or .tar.gz)? .tgz and .tar.gz shards are gzip-compressed tars. */
bool dsort_out_name_ok(const char *name);

typedef struct dsort_spec {
	enum dsort_alg alg;
	uint64_t seed;
	char content_ext[DSORT_EXT_MAX + 1];
	bool content_num; /* content_type "number" (else "string") */
	uint64_t shard_size, per_shard; /* exactly one is set */
	char tpl[ISHARD_NAME_MAX + 1];
	char in_tpl[ISHARD_NAME_MAX + 1]; /* "" none */
	char prefix[ISHARD_NAME_MAX + 1];
	/* algorithm "order": "order_file" (BUCKET/OBJECT), "unlisted_shard"
	 * ("": a sample the file does not list fails the run) */
	char order_file[NAME_BUCKET_MAX + 1 + ISHARD_NAME_MAX + 1];
	char unlisted[ISHARD_NAME_MAX + 1];
	const dsort_ofile_t *of; /* set by the caller before dsort_order and dsort_cut */
} dsort_spec_t;

/* Checks and reads the options of spec ({"algorithm","seed","content_ext",
 * "content_type","shard_size"|"samples_per_shard","template",
 * "input_template","prefix","dry_run","order_file","unlisted_shard"}).
 * Algorithm "order" takes no shard_size nor samples_per_shard (the file
 * names the shards) and its template is optional. 0, or 400 with err
 * saying what to fix. Pure. */
int dsort_spec_parse(json_t *spec, dsort_spec_t *s, buf_t *err);

/* The gateway's part (pure): from the listing of SRC ([[NAME,SIZE],..])
 * and the active targets ([[ID,INTRA_URL],..]), sets spec's "objects"
 * ([[NAME,SIZE,TARGET],..]: the input shards and the target index each is
 * assigned to) and "targets". same: DST is SRC (its output must not be
 * named like an input). Algorithm "order": spec's "order_text" (the order
 * file, put there by the gateway) is parsed and checked too. 0, or 400
 * with err. */
int dsort_select(json_t *spec, const char *src, json_t *listing, json_t *targets, bool same, buf_t *err);
/* A dry run's answer: {"input_shards","input_bytes","skipped","targets":
 * {ID:{"shards","bytes"}},"algorithm","output":{"first","estimated_shards"}}. */
void dsort_dry_summary(json_t *spec, json_t *out);

/* One record of the global order (rule 1). Strings are borrowed from the
 * indexes (JSON) they came from. */
typedef struct dsort_rec {
	uint32_t shard;   /* input shard: its index in spec's "objects" */
	uint32_t pos;     /* its first member's position in the shard */
	const char *key;  /* NUL-terminated */
	const char *skey; /* content: the member's text (NULL: numeric's from the key) */
	size_t sklen;
	json_t *members;  /* [[NAME,OFFSET,SIZE],..] */
	uint64_t bytes;   /* its tar bytes in an output shard */
} dsort_rec_t;

typedef struct dsort_out {
	size_t first, n; /* order[first .. first+n) */
	uint64_t bytes;  /* tar bytes, end blocks included */
	uint32_t oshard; /* "order": its index in the file's shards (nshards: unlisted_shard) */
} dsort_out_t;

/* Rule 3: fills order[0..n) with the records' global order ("order": by
 * the file's shard and line, unlisted records last in canonical order).
 * Pure. */
void dsort_order(const dsort_spec_t *s, const dsort_rec_t *recs, size_t n, size_t *order);
/* Compares two decimal numbers given as text (optional sign, digits,
 * fraction): <0, 0, >0; *ok false when either is not such a number. Pure. */
int dsort_numcmp(const char *a, size_t alen, const char *b, size_t blen, bool *ok);
/* Rule 4: the output shards of order (*outs: caller frees); "order":
 * one per shard of the file that holds a sample, the unlisted_shard last.
 * 0, or 400 with err (the template cannot name them all; a sample the
 * order file does not list, without unlisted_shard). Pure. */
int dsort_cut(const dsort_spec_t *s, const dsort_rec_t *recs, const size_t *order, size_t n, dsort_out_t **outs,
	      size_t *nouts, buf_t *err);

/* The name of output shard i of outs into nm (ISHARD_NAME_MAX + 1). */
void dsort_out_name(const dsort_spec_t *s, const dsort_out_t *outs, size_t i, char *nm);

struct cluster;
struct http_req;
/* What a target gives its dsort runs (kept until dsort_stop). */
typedef struct dsort_env {
	struct cluster *cl;
	store_t *store;
	uint64_t memory_limit; /* dsort.memory_limit */
	uint64_t pause_ms;     /* debug.dsort_commit_pause */
	/* Deletes bck/obj through the object layer: every copy, wherever it
	 * is (a client's delete). 0, 1 when there was none, or -1 with why
	 * (may be NULL) set. */
	int (*del)(void *arg, const char *bck, const char *obj, buf_t *why);
	/* A staged write of bck/obj (rule 5: an output shard built where the
	 * object layer puts it): open (NULL with why set), write (AIS_OK or
	 * AIS_ERR), commit with custom metadata as a client's write by the
	 * object layer's rename, with the bucket's checksum, copies or slices
	 * (AIS_OK, or AIS_ERR with why; nothing visible then), fd: the staged
	 * bytes to read (a write that could not commit here, sent to its owner
	 * instead; -1 on failure), free (what was not committed goes). */
	void *(*stage_open)(void *arg, const char *bck, const char *obj, buf_t *why);
	int (*stage_write)(void *st, const void *p, size_t n);
	int (*stage_commit)(void *st, const char *custom, buf_t *why);
	int (*stage_fd)(void *st);
	void (*stage_free)(void *st);
	void *arg;
} dsort_env_t;
/* Registers the job kind "dsort" (env copied). */
void dsort_register(const dsort_env_t *env);
void dsort_stop(void);
/* GET /v1/dsort/ID (targets only): this target's index of run ID (rule 2):
 * 200 {"target","shards":[..],"records":[[SHARD,POS,KEY,SORTKEY,MEMBERS],..]},
 * 503 while it is built, 500 with the reason when it failed, 404 for
 * a run this target does not know. */
int dsort_h_index(struct http_req *req);

#endif
