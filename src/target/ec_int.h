/*
 * ec_int.h - erasure coding on a target (ec.c: the write; ecread.c: reads
 * from the slices; ecrepair.c: repair and placement; ecslice.c: the slices
 * here), as the object layer (olput.c, ol.c), the rebalance (src/jobs) and
 * the route table call it. What those files share among themselves is
 * ec_priv.h; the pure parts (layout, slice metadata, the codec) are ec.h.
 *
 * A slice of bucket B lives in the target's local store bucket
 * ec_slice_bucket(B) ("%ec%" + a hash of B: not a cluster bucket name, so
 * listings, the rebalance walk and the BMD never see it), under the
 * object's own name, at most one slice of an object per target. Its custom
 * metadata is the slice's ec_meta text, a newline, and the object's custom
 * metadata. Slices move between targets as intra-cluster requests on
 * /v1/ec/B/OBJ (Ais-Intra; headers Ais-Ec-Meta, Ais-Custom-Md).
 */
#ifndef AISD_EC_INT_H
#define AISD_EC_INT_H

#include "aisd/bmd.h"
#include "aisd/cmap.h"
#include "aisd/ec.h"
#include "aisd/ol.h"
#include "aisd/place.h"
#include "target_int.h"

#define EC_META_HDR "Ais-Ec-Meta"
/* On a slice PUT: a rebalance moves it here (ecslice.c rule 4); with TGT_CMAP_VERSION. */
#define EC_MOVE_HDR "Ais-Ec-Move"
/* On the answer to GET ?meta=true with TGT_CMAP_VERSION: "true" when the
 * target holds the slice as one of its holders under a map at least that
 * new (ecslice.c rule 5). */
#define EC_HOLDER_HDR "Ais-Ec-Holder"
/* On every answer to a slice GET (?meta=true too, 404 too): when a client
 * deleted the object, the time of the newest delete this target recorded
 * (its tombstone, ns). A slice of a write older than that is of a deleted
 * object (ecslice.c rule 6). */
#define EC_DELETED_HDR "Ais-Ec-Deleted"

/* A slice's metadata from its store custom metadata (the text before the
 * newline). AIS_OK or AIS_ERR (EINVAL). */
int ec_meta_of(const char *custom, ec_meta_t *out);
/* Do two slices' metadata name the same write (layout, size, version, checksum)? */
bool ec_same_write(const ec_meta_t *a, const ec_meta_t *b);
/* Caller holds m: the first n (at most HRW_TOP_MAX) active targets of
 * bck/obj by HRW under m (place_of; self_id may be NULL). */
void ec_place_of(const cmap_t *m, const char *self_id, const char *bck, size_t blen, const char *obj, size_t olen,
		 size_t n, place_t *out);
/* Caller holds m: is self_id one of the first n active targets of bck/obj
 * by HRW under m (the holders of its n slices)? */
bool ec_slice_holder(const cmap_t *m, const char *self_id, const char *bck, size_t blen, const char *obj,
		     size_t olen, unsigned n);

/* Registers the aisd_ec_* counters of /metrics at 0 (once, at start). */
void ec_metrics_init(void);
/* The local store bucket of bck's slices, NUL-terminated (21 bytes). */
void ec_slice_bucket(const char *bck, size_t blen, char out[24]);
/* The bucket's props from the current BMD; false when it lacks the bucket. */
bool ec_props(target_t *t, sv_t bck, bmd_props_t *out);

/* Pool (ol_put_begin, with the body's size known): opens the streams of
 * an erasure-coded PUT's D+P slices, encoded as the body arrives (ec.c
 * rule 4); NULL when the object is not erasure coded or cannot be
 * streamed (ec_put then encodes the sealed file). write feeds the body's
 * bytes; ec_put finishes the streams; free cuts them if unfinished. */
typedef struct ec_stream ec_stream_t;
ec_stream_t *ec_stream_open(ol_put_t *p, uint64_t size);
void ec_stream_write(ec_stream_t *e, const void *b, size_t len);
void ec_stream_free(ec_stream_t *e);
/* Pool (ol_put_commit): seals p's write, encodes it into D+P slices and
 * PUTs each to a distinct target in HRW order. AIS_OK when every slice is
 * durable (the caller then commits the whole copy here); else AIS_ERR
 * with errno (EAGAIN: slices failed, those that landed are deleted; msg
 * says why). */
int ec_put(ol_put_t *p, const bmd_props_t *bp);
/* Pool (ol_open_sync): rebuilds bck/obj here from any D current slices on
 * the active targets (a slice that fails its checksum there is dropped),
 * verifying the result against the object's checksum, then hands the
 * object to the rebalance, which rebuilds the missing slices. AIS_OK, or
 * AIS_ERR with errno ENOENT (no slice anywhere), ESTALE (every slice found
 * is of a write a client deleted since: a tombstone is newer) or EIO (msg
 * says why). */
int ec_restore(target_t *t, sv_t bck, sv_t obj, buf_t *msg);
/* Pool (ol_open in a bucket with ec.whole_copy=false, ecread.c rule 3): the
 * object read whole from its slices into an unlinked temporary file
 * (*fd; *m its size, checksum, custom metadata): the D data slices
 * straight to their offsets, or a decode from any D when one is missing
 * or damaged; checked against the object's checksum. AIS_OK, or AIS_ERR
 * with errno as ec_restore's. ec_stat: the metadata only (a HEAD). */
int ec_read_whole(target_t *t, sv_t bck, sv_t obj, int *fd, store_meta_t *m, buf_t *msg);
/* The same, streamed (stream true): returns once the metadata is known,
 * with *fd the file being filled and *r the read (then either
 * ec_read_attach(req, r, fd) before the answer, so that ec_read_send
 * streams the bytes as they land, or ec_read_free(r)). A read cut short
 * (every source failed mid-way) ends the client's body short. */
struct ec_read;
int ec_read_open(target_t *t, sv_t bck, sv_t obj, bool stream, int *fd, store_meta_t *m, struct ec_read **r,
		 buf_t *msg);
void ec_read_attach(http_req_t *req, struct ec_read *r, int fd);
void ec_read_free(struct ec_read *r);
/* Loop (ol_send): sends [start, start+len) of fd if it is an attached
 * read's file, as it lands; false if it is not one. */
bool ec_read_send(http_req_t *req, int fd, uint64_t start, uint64_t len);
/* At stop: no new read threads; waits for those running. */
void ec_read_stop(void);
int ec_stat(target_t *t, sv_t bck, sv_t obj, store_meta_t *m, buf_t *msg);
/* Pool (ol_open for a Range read, when no whole copy can be fetched):
 * decodes only the stripes that range (a Range header value) touches from
 * D slices, checked against one more (ecread.c rule 2), into a sparse
 * temporary file of the object's size: *fd holds the range's bytes at
 * their offsets, *m the object's size, checksum and custom metadata.
 * AIS_OK; AIS_ERR with errno EAGAIN (fewer than D+1 slices, or the range
 * is not one the object satisfies: rebuild it whole instead) or EIO (the
 * slices disagree; msg says why). */
int ec_read_range(target_t *t, sv_t bck, sv_t obj, sv_t range, int *fd, store_meta_t *m, buf_t *msg);
/* Pool or job thread: with the whole object here (or, in a bucket with
 * ec.whole_copy=false, none: read from the slices if one is missing,
 * ecrepair.c rule 7), makes sure D+P current slices are on distinct active
 * targets, encoding and sending the missing ones. Returns how many slices it
 * wrote; AIS_ERR (-1) with msg on a failed send; EC_GONE when a client
 * deleted the object after the whole copy here was written (a holder's
 * tombstone is newer; ecrepair.c rule 6): nothing is sent and the caller
 * drops that copy. */
#define EC_GONE (-2)
int ec_repair(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen, buf_t *msg);
/* Job thread (the rebalance walk under map version cmap_v): with this
 * target not a holder of its local slice of bck/obj (ecrepair.c rules 2,
 * 3), moves the slice to a holder that lacks it, or drops it once a holder
 * under a map as new has it; on the owner, fetches or rebuilds the whole
 * copy when it lacks it (rule 4). Returns EC_SLICE_KEPT (a holder here,
 * or the map moved on: the next run decides), EC_SLICE_MOVED,
 * EC_SLICE_DROPPED, or AIS_ERR (kept; msg says why). bp: the bucket's
 * props; a slice of a bucket whose erasure coding is off is dropped. */
enum { EC_SLICE_KEPT = 0, EC_SLICE_MOVED, EC_SLICE_DROPPED };
int ec_place_slice(target_t *t, const bmd_props_t *bp, const char *bck, size_t blen, const char *obj,
		   size_t olen, uint64_t cmap_v, uint64_t *bytes, buf_t *msg);
/* Blocking: deletes every slice of bck/obj on every active target;
 * returns how many were there. */
size_t ec_delete_slices(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen, int64_t stamp);

/* /v1/ec/BUCKET/OBJECT between targets: PUT a slice, GET it (checked
 * against its checksum first: a damaged slice is deleted and answered
 * 410), GET ?meta=true its metadata text only, DELETE it. */
int tgt_ec(http_req_t *req);

#endif
