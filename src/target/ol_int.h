/*
 * ol_int.h - the object layer's remote-bucket half (olremote.c), as the
 * rest of the object layer (ol.c, olput.c) calls it. A bucket whose BMD
 * props name a backend is a cache of a remote bucket: reads of a missing
 * copy fetch it from the remote, writes and deletes go through to it.
 */
#ifndef AISD_OL_INT_H
#define AISD_OL_INT_H

#include "aisd/backend.h"
#include "aisd/ol.h"

struct target;

/* The backend of bck, for a request from outside the cluster (intra
 * false): a heap copy in *out (free it), or NULL for a bucket of this
 * cluster only, or when the remote is not attached here (then *err is
 * EINVAL and msg says why). */
bk_bucket_t *olr_backend(struct target *t, sv_t bck, int *err, buf_t *msg);

/* Pool: with the copy here open on *fd (or -1) and described by *m,
 * makes it current: validate_warm_get (HEAD: a changed object is
 * fetched again; one deleted there is deleted here when sync is on), or
 * fetch a missing one. stream: a GET/HEAD that sends with ol_send, so a
 * cold object may be answered while it is fetched (*rd set, *fd a
 * placeholder and *m the remote's). lazy (with stream): a Range read or
 * a HEAD, whose cold object is not fetched now (a range is fetched at
 * ol_send, a HEAD fetches nothing). AIS_OK with *fd; AIS_ERR with errno
 * (ENOENT, or a backend errno: backend.h) and msg. */
struct olr_reader;
int olr_open(struct target *t, const bk_bucket_t *b, sv_t bck, sv_t obj, bool stream, bool lazy, int *fd,
	     store_meta_t *m, struct olr_reader **rd, buf_t *msg);
/* Loop (ol.c): sends the bytes ol_open held for req (fd OL_FD_MEM); false
 * when fd is not OL_FD_MEM. */
bool ol_mem_send(http_req_t *req, int fd, uint64_t start, uint64_t len);
/* Loop: ties rd to req and fd (for ol_send) until req ends. */
void olr_reader_attach(http_req_t *req, struct olr_reader *rd, int fd);
/* Drops an unattached reader. */
void olr_reader_free(struct olr_reader *rd);

/* Pool: the write-through of a sealed write: PUT to the remote; *custom
 * (heap) the commit's custom metadata with the remote's ETag. AIS_OK, or
 * AIS_ERR with errno EAGAIN and msg naming the remote. */
int olr_put(struct target *t, const bk_bucket_t *b, ol_put_t *p, char **custom);
/* Pool: DELETE on the remote (ENOENT: not there). */
int olr_delete(const bk_bucket_t *b, sv_t obj, buf_t *msg);

/* Pool (olver.c), at the start of ol_put_commit: in a bucket whose
 * history is not off, keeps the current version of p's object (rule 4)
 * and sets *custom (heap) to the metadata to commit with (its version id
 * when enabled); *custom NULL otherwise. AIS_ERR with errno EAGAIN and
 * p->msg when the current version could not be kept; EACCES and p->msg
 * for a client's write of the name of a kept version that S3 object lock
 * holds (rule 8). The object layer's own writes come with vcustom. */
int olver_put_prepare(ol_put_t *p, char **custom);
/* Is p a client's write of an object's own name in a bucket whose history
 * is not off, whose keep and commit run under the name's lock (olver.c
 * rule 6)? */
bool olver_put_serial(const ol_put_t *p);

/* The lock a name's writes that must not overlap take (olput.c rule 8,
 * olver.c rule 6): one of a fixed set, by the hash of bucket and name
 * (two names may share one: they only wait). Held across the commit,
 * copies and slices included; never taken twice by one thread (the object
 * layer's own writes under it, with vcustom, take none). */
void ol_name_lock(sv_t bck, sv_t obj);
void ol_name_unlock(sv_t bck, sv_t obj);

#endif
