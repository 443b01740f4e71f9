/*
 * target_int.h - the target's own functions and types, as the files of
 * src/target share them: the target's state (struct target), its route
 * handlers, the helpers they share (util.c), copies between targets
 * (mirror.c) and the remote buckets' jobs (bkjobs.c). Not for use outside
 * src/target: other subsystems see the target through aisd/target.h, and
 * the jobs through the narrow interface of aisd/jobs.h (reb_env_t).
 */
#ifndef AISD_TARGET_INT_H
#define AISD_TARGET_INT_H

#include "aisd/cluster.h"
#include "aisd/conf.h"
#include "aisd/http.h"
#include "aisd/jobs.h"
#include "aisd/status.h"
#include "aisd/store.h"
#include "aisd/target.h"

struct target {
	node_base_t base; /* first: cluster handlers find it; cl NULL when standalone */
	const conf_t *conf;
	store_t *store;
	http_server_t *srv;
	int64_t start_ns;
	reb_env_t reb_env; /* what the rebalance job reads of this target */
	reb_t *reb;        /* the rebalance job (src/jobs/rebalance.c); NULL standalone */
	bool reb_kicked;   /* a map was installed since start (cluster thread only) */
	res_t *res;        /* the resilver job (src/jobs/resilver.c) */
};

/* Handlers (one file each: objects.c, buckets.c, routes.c). */
int tgt_objects(http_req_t *req);
int tgt_buckets(http_req_t *req);
int tgt_health(http_req_t *req);
/* GET /v1/ml/moss[/BUCKET]: GetBatch as the designated target (getbatch.c). */
int tgt_getbatch(http_req_t *req);

/* /v1/daemon/mountpaths: attach, detach, list (mountpaths.c). */
int tgt_mountpaths(http_req_t *req);
/* Where the target keeps its state files: node.dir, else the first
 * configured mountpath. */
const char *tgt_state_dir(const conf_t *c);
/* Saves the open mountpaths to DIR/mountpaths (arg: the target). */
void tgt_mountpaths_save(void *arg);
/* Reads DIR/mountpaths into out's mountpaths (out a copy of c), the
 * detaching ones also into detaching[*ndet]. AIS_OK; AIS_DONE: no file
 * (use c's); AIS_ERR: a bad file (logged; use c's). */
int tgt_mountpaths_load(const conf_t *c, conf_t *out, char (*detaching)[1024], int *ndet);

/* Helpers the handlers share (util.c; the ones other subsystems use are in
 * target.h). */
/* Answers with the HTTP status and message that errno maps to (ais_errno):
 * "WHAT does not exist", "WHAT: insufficient storage", ... */
void tgt_resp_errno(http_req_t *req, int err, const char *what);
/* The same for the answer e (ais_errno, ais_errno_read) of err, with msg
 * (when not empty) after it: "WHAT PHRASE: MSG". */
void tgt_resp_errmsg(http_req_t *req, const ais_errno_t *e, int err, const char *what, const char *msg);
/* 404 for a missing object: names the bucket when that is what is missing. */
void tgt_not_found(http_req_t *req, sv_t bck, sv_t obj);
/* GET ?archregx=PATTERN[&archmode=M] (archive.c): a tar of the matching
 * members of a shard. */
int tgt_get_archregx(http_req_t *req, sv_t bck, sv_t obj, sv_t pattern);
/* Listing with the archive flag (AIStore's apc.LsArchDir): each shard
 * (.tar) is followed by its members, "SHARD/MEMBER", with their sizes and
 * the flag TGT_ENTRY_IN_ARCH; the shard gets TGT_ENTRY_IS_ARCHIVE. */
#define TGT_LS_ARCH_DIR 8
/* Remote buckets: flags & TGT_LS_CACHED (target.h) lists what is cached
 * here only (AIStore's LsCached); an entry that is cached has
 * TGT_ENTRY_CACHED. */
#define TGT_ENTRY_CACHED 64
#define TGT_ENTRY_IS_ARCHIVE 512
/* Appends the member entries of shard obj to out (each preceded by a comma).
 * Returns AIS_OK, or AIS_ERR when obj is not a shard this target can read
 * (out unchanged). Blocking: the I/O pool. */
int tgt_list_members(store_t *s, sv_t bck, sv_t obj, buf_t *out);
/* Is name one of the shard kinds archpath, archregx and listing read? */
bool tgt_is_shard_name(sv_t name);
/* Compressed shards (.tgz, .tar.gz, .zip; zshard.c): GET ?archpath=
 * (regx false) or ?archregx= (regx true); and their members for listings
 * (as tgt_list_members). */
int tgt_get_zshard(http_req_t *req, sv_t bck, sv_t obj, sv_t path, bool regx);
int tgt_zshard_members(store_t *s, sv_t bck, sv_t obj, buf_t *out);
/* The Range part of a GET or HEAD of size bytes: sets Accept-Ranges and
 * Content-Type, then either 206 with Content-Range and the range in
 * *start, *len (AIS_OK), the whole body (AIS_OK, 0 and size), or answers
 * 416 naming what ("an object", "a member") and returns AIS_ERR: the
 * caller then only releases what it holds. */
int tgt_resp_range(http_req_t *req, uint64_t size, const char *ctype, const char *what, uint64_t *start,
		   uint64_t *len);
/* Content-Type from a member's extension (WebDataset's usual ones). */
const char *tgt_content_type(sv_t name);
/* RFC 3339 UTC time with nanoseconds. */
void tgt_fmt_time(int64_t ns, char *out, size_t outsz);

/*
 * Copies across targets (mirror.c). Requests between targets carry the
 * header TGT_INTRA (value: why: replica, fetch, rebalance, delete) and are
 * served by the target they reach, never redirected or replicated.
 */
#define TGT_INTRA "Ais-Intra"
/* A sized intra-cluster PUT body this big or bigger goes socket -> pipe
 * -> temp file by splice(2) (olput.c rule 6); smaller ones are read. */
#define TGT_SPLICE_MIN (1u << 20)
/* The TGT_INTRA value of a client's delete passed on to the other targets
 * (each records a tombstone: ol_delete). */
#define TGT_DELETE "delete"
/* The stamp of the write a copy is of (store_stamp: the hybrid logical
 * clock of the target that took the client's write), on every copy sent
 * between targets and every answer to another target; and the stamp of a
 * client's delete on the DELETEs that pass it on (each tombstone holds it).
 * Writes and deletes are ordered by it, never by a target's wall clock. */
#define TGT_STAMP "Ais-Stamp"
/* The stamp in h (a TGT_STAMP value), or 0 when absent or not a number. */
int64_t tgt_stamp_parse(sv_t h);
/* On a copy another target sends: the versions of the cluster map and the
 * bucket metadata its sender placed it under (ol_where puts them in
 * w->cmap_version and w->bmd_version). */
#define TGT_CMAP_VERSION "Ais-Cmap-Version"
#define TGT_BMD_VERSION "Ais-Bmd-Version"
typedef struct ol_where ol_where_t;
/* Copies bucket bck wants under b (place_copies; 1 when b lacks it). */
size_t tgt_bucket_copies(const bmd_t *b, const char *bck, size_t blen);
/* Pool thread: seals sw and sends it to the other holders (w->urls[1..]).
 * AIS_OK when the write quorum is durable (the caller commits sw), else
 * AIS_ERR with errno (EAGAIN: quorum missed, copies rolled back) and msg. */
int tgt_replicate(target_t *t, store_writer_t *sw, const char *bck, size_t blen, const char *obj, size_t olen,
		  const ol_where_t *w, enum store_cksum want_type, const char *want_hex, const char *custom,
		  buf_t *msg);
/* How this target stands to a copy another target sends (w: ol_where of
 * that intra request); *cmap_v (when not NULL): this target's map version. */
enum tgt_stance {
	TGT_HOLDER, /* a holder under this target's map */
	TGT_BEHIND, /* not one, but the sender's map is newer (or the same map
	               and newer bucket metadata): their arrival starts a full
	               rebalance walk here */
	TGT_STRAY,  /* not one under a map and bucket metadata as new as the
	               sender's (or newer) */
};
enum tgt_stance tgt_stance(target_t *t, const ol_where_t *w, const char *bck, size_t blen, const char *obj,
			   size_t olen, uint64_t *cmap_v);
/* Pool thread, after a write committed: when the cluster map changed since
 * ol_where placed it, or a copy another target sent is TGT_STRAY here,
 * the rebalance may have walked past it already, so the object is handed
 * to the rebalance job to be placed again (and the stray copy dropped). */
void tgt_placed_check(target_t *t, const ol_where_t *w, const char *bck, size_t blen, const char *obj,
		      size_t olen);
/* Replicas streamed while the body arrives (pool threads): open sends the
 * head of a chunked PUT to every other holder (NULL when there are none,
 * or a holder is https: then tgt_replicate after the body); write sends
 * each piece as it is written here; commit seals the local write, ends
 * every stream with the checksum (and custom metadata) as trailer fields,
 * which each receiver verifies before it commits, and applies the write
 * quorum as tgt_replicate does (rolling back landed copies when it is
 * missed: AIS_ERR, errno EAGAIN, msg); free cuts what was not finished. */
typedef struct tgt_repl tgt_repl_t;
tgt_repl_t *tgt_repl_open(target_t *t, const ol_where_t *w, const char *bck, size_t blen, const char *obj,
			  size_t olen, int64_t stamp);
void tgt_repl_write(tgt_repl_t *r, const void *p, size_t n);
int tgt_repl_commit(target_t *t, tgt_repl_t *r, store_writer_t *sw, const ol_where_t *w, const char *bck,
		    size_t blen, const char *obj, size_t olen, enum store_cksum want_type, const char *want_hex,
		    const char *custom, buf_t *msg);
void tgt_repl_free(tgt_repl_t *r);
/* Pool thread: deletes the copies tgt_replicate made (the local commit failed). */
void tgt_unreplicate(const ol_where_t *w, const char *bck, size_t blen, const char *obj, size_t olen);
/* Pool thread: stores a good copy of bck/obj from another target, never
 * one older than a client's delete recorded here (ol_deleted). AIS_OK, or
 * AIS_ERR with errno ENOENT (no target has it; or some did not answer and
 * a tombstone here says a client deleted it), ENOSPC (this target has no
 * space for the copy) or EIO (msg says why). */
int tgt_fetch(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen, buf_t *msg);
/* Pool thread: deletes bck/obj on every other target that may hold it (a
 * client's delete of that stamp: each keeps a tombstone of it), the lost
 * ones too (lost.c); returns how many had it. Of the holders under the map
 * with the lost targets back (tgt_lost_holders), the ids of the ones that
 * did not answer go to missed (", " between), and *kept tells whether one
 * took it (or is this target). */
size_t tgt_delete_elsewhere(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen,
			    int64_t stamp, buf_t *missed, bool *kept);
/* The cluster map's lost targets (cmap_drop; lost.c): tgt_lost_note keeps
 * the addresses of the ones this target saw leave (on_cmap);
 * tgt_lost_holders fills out (at most cap) with the holders of bck/obj
 * under the current map with them back and every target in maintenance
 * counted active, best first, and returns how many (a lost target whose
 * address is not known here has an empty intra_url). */
void tgt_lost_note(const cmap_t *old, const cmap_t *cur, const char *self);
size_t tgt_lost_holders(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen, cmap_node_t *out,
			size_t cap);
/* Pool thread: sets the custom metadata of bck/obj to custom, set at
 * md_ns, on every other target that may hold a copy with checksum cksum
 * (intra PATCH; a target without that copy, or with metadata set later,
 * answers 404 or 409 and is skipped). AIS_ERR (msg says which) when one of
 * the object's holders under the current map did not take it; other
 * targets' failures are logged. */
int tgt_custom_elsewhere(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen,
			 const char *cksum, const char *custom, int64_t md_ns, buf_t *msg);
/* Another target's copy of bck/obj has checksum cksum and metadata custom
 * set at md (TGT_MD_NS, as text; the values of its headers, any of them
 * absent): the copy here (m) takes that metadata when it has the same
 * checksum, other metadata, and metadata set before md. True when taken.
 * Blocking (a durable record write); errors are logged. */
bool tgt_md_take_newer(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen,
		       const store_meta_t *m, sv_t cksum, sv_t custom, sv_t md);
/* Blocking: PUTs the local copy of bck/obj to base (intra, reason why,
 * placed under map version cmap_v and bucket metadata version bmd_v; with
 * sendfile over plain http). cond:
 * the receiver takes it only when it lacks this version (same checksum, or
 * an mtime as new): it answers at once otherwise, without the body; and
 * it refuses (409) when it is TGT_STRAY, so the sender keeps its copy.
 * AIS_OK with *bytes sent, AIS_DONE (cond) when the receiver had it,
 * TGT_GONE (cond) when a client deleted it since this copy was written
 * (a tombstone there: this copy is to go too), or AIS_ERR (errno ENOENT:
 * no local copy; EIO with msg). */
#define TGT_GONE 2
int tgt_send_copy(target_t *t, const char *base, const char *bck, size_t blen, const char *obj, size_t olen,
		  const char *why, uint64_t cmap_v, uint64_t bmd_v, bool cond, uint64_t *bytes, buf_t *msg);
/* The headers of a conditional copy (tgt_send_copy): the sender's checksum
 * value and its copy's stamp (store_stamp; the header keeps its old name);
 * a receiver whose copy has that checksum or is as new
 * answers 200 with TGT_HAD and reads no body. */
#define TGT_HAVE_CKSUM "Ais-Have-Cksum"
#define TGT_HAVE_MTIME "Ais-Have-Mtime-Ns"
#define TGT_HAD "Ais-Had"
/* When a copy's custom metadata was set (store_md_time), on every copy sent
 * between targets, every metadata PATCH, and answers to other targets: of
 * two copies with the same checksum and different metadata, the receiver of
 * a conditional copy keeps (or takes, or hands back) the one set last, so
 * a holder that missed an ACL change while it was away is repaired by the
 * next rebalance. */
#define TGT_MD_NS "Ais-Md-Ns"
#define TGT_HAD_DELETED "deleted" /* its value when the receiver has a newer tombstone */

/* The prefetch and evict jobs of remote buckets (bkjobs.c): kind
 * "prefetch" or "evict"; GET/PUT /v1/jobs?what=KIND on a target. Runs of
 * either kind go on at once, each with its id (jobreg.h); bkj_register
 * registers both kinds (once, at start). */
struct job_stats;
void bkj_register(target_t *t);
int bkj_h_target(http_req_t *req, sv_t kind);
void bkj_stats(sv_t kind, struct job_stats *out);
/* Stops the runs in progress (target_stop). */
void bkj_stop(void);

/* Whether custom metadata carries an S3 server-side encryption record
 * (src/s3/sse.c: "s3.sse"): the stored bytes are ciphertext whose key only
 * the S3 API gets from its client or key file, so the native GET, ETL and
 * GetBatch refuse to send them to a client (403) rather than send
 * ciphertext as if it were the object. */
bool tgt_sse_encrypted(const char *custom);

#endif
