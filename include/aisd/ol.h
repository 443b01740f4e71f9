/*
 * ol.h - the object layer: the one path by which every API of a target
 * (native /v1/objects, S3, archpath, archregx, compressed-shard members,
 * GetBatch, CopyObject) reaches an object's bytes.
 *
 * An API handler parses its request, asks the object layer, and formats the
 * answer in its own dialect (JSON errors or S3 XML). The object layer owns:
 *  - placement: which targets hold an object's copies (HRW with the
 *    bucket's copies), whether this target serves the request, where to
 *    send it otherwise, and the hop count that stops a request bouncing
 *    between nodes whose cluster maps disagree (ol_where);
 *  - open-or-fetch: a read on a holder that lacks its copy (a rebalance
 *    not done yet, a lost disk, a damaged copy with store.verify_on_read)
 *    fetches a good copy from another holder or the previous owner first
 *    (ol_open, ol_open_sync);
 *  - the PUT pipeline: the body streamed through two bounded buffers onto
 *    the I/O pool (ol_stream; a large copy from another target spliced
 *    from the socket into the file instead), an optional codec decoder in front (S3's
 *    aws-chunked and payload checks), and the commit: the write sealed,
 *    sent to the other holders, committed only when the write quorum of
 *    copies is durable (ol_put_commit);
 *  - delete everywhere (ol_delete), metadata everywhere (ol_set_custom) and
 *    the conditionals (ol_conditions).
 *
 * Invariants:
 *  1. No API commits an object except through ol_put_commit, so every
 *     acknowledged write has the bucket's copies (or its write quorum).
 *  2. No API deletes an object except through ol_delete, which removes
 *     every copy a target may hold (current and previous holders) and
 *     leaves tombstones, so that a copy the delete missed is dropped when
 *     it is offered again (a conditional copy, a fetch) instead of coming
 *     back.
 *  3. No API reads an object except through ol_open / ol_open_sync, so a
 *     holder that lacks a copy fetches it instead of answering 404 (a
 *     native GET/HEAD of an object a rebalance has not moved here yet may
 *     first be sent to its old holder instead: ol_moved).
 *  4. A request from outside the cluster is routed on (redirected or
 *     forwarded) by targets at most OL_MAX_HOPS times; one that would go
 *     further is answered 508 with a message, never looped.
 *  5. A client's delete is acknowledged only when every holder of the
 *     object took it: the holders under the current map with the targets
 *     that left it without a decommission back and those in maintenance
 *     counted (lost.c); else it answers 503 naming the ones it could not
 *     reach (the copies it reached are gone). With
 *     mirror.delete_quorum=tombstone one holder that took it is enough:
 *     its tombstone, stamped after every copy (hlc.h), makes the others
 *     drop theirs when they return (their rebalance offers them to it).
 *  6. A conditional write (ol_put_t.precond) is checked against the copy
 *     on the owner and committed there before another conditional write
 *     of the same object is checked: of two writes that both require the
 *     object to be absent (If-None-Match: *), exactly one commits. A plain
 *     write does not wait for them (it may land between the check and the
 *     commit of a conditional one, as with any two writes racing), except
 *     in a bucket with versions, where every client write and delete of
 *     the name is ordered so (olver.c rule 6). A write committed after a
 *     delete of its name is newer than that delete on every copy (olput.c
 *     rule 9).
 */
#ifndef AISD_OL_H
#define AISD_OL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/auth.h"
#include "aisd/buf.h"
#include "aisd/cmap.h"
#include "aisd/http.h"
#include "aisd/store.h"

struct target;

/* The query parameter (redirects) and header (forwards) that count how
 * many times a target routed a request on (a gateway's first routing is
 * not counted): a request between two targets whose maps disagree is
 * refused at its OL_MAX_HOPS-th return. */
#define OL_HOP_PARAM AUTH_REDIR_HOP
#define OL_HOP_HDR "Ais-Hops"
#define OL_MAX_HOPS 2
/* The query parameter (redirects) and header (S3 forwards) of a read sent
 * on to its holder under the previous map (ol_moved): the sender's map
 * version. */
#define OL_PREV_PARAM AUTH_REDIR_PREV
#define OL_PREV_HDR "Ais-Prev"

/* Where an object lives, for one request. */
typedef struct ol_where {
	bool cluster;                    /* in a cluster, request from outside it */
	size_t n;                        /* holders of the object's copies */
	int self;                        /* this target's rank among them; -1: none */
	unsigned hops;                   /* times the request was routed so far */
	char owner[CMAP_URL_MAX + 1];    /* the owner's public URL */
	char owner_intra[CMAP_URL_MAX + 1]; /* the owner's intra-cluster URL */
	char (*urls)[CMAP_URL_MAX + 1];  /* the holders' intra URLs, best first (arena) */
	uint64_t cmap_version;           /* of the map they come from */
	uint64_t bmd_version;            /* and of the bucket metadata */
} ol_where_t;

/* What ol_where decided. */
enum ol_route {
	OL_HERE,  /* serve it here (always when standalone or intra-cluster) */
	OL_DOUBT, /* not here by this map, which may be older than the sender's:
	             cluster_refresh, then ask again with may_doubt false */
	OL_OWNER, /* not here: send it to w->owner (redirect) or w->owner_intra
	             (forward), as hop w->hops + 1 */
	OL_NONE,  /* no active target in the cluster */
	OL_LOOP,  /* not here, and routed OL_MAX_HOPS times already */
};

/* Finds the holders of bck/obj and whether this target serves the request:
 * writes (write true) on the owner, reads on any holder. */
enum ol_route ol_where(http_req_t *req, struct target *t, sv_t bck, sv_t obj, bool write, bool may_doubt,
		       ol_where_t *w);
/* Answers OL_OWNER/OL_NONE/OL_LOOP for the native API: 307 to the owner
 * (as hop w->hops + 1), 503, or 508. */
void ol_answer_native(http_req_t *req, enum ol_route r, const ol_where_t *w);
/* The message for OL_LOOP answers. */
void ol_loop_msg(const ol_where_t *w, buf_t *out);
/* Times req was routed between nodes (its hop parameter or header). */
unsigned ol_hops(http_req_t *req);
/* The holders of bck/obj by the current map, as ol_where finds them for a
 * request from outside the cluster (w->cluster true, hops 0), for the
 * object layer's own work on this target (a job that writes or deletes as
 * the owner, a staged write's commit); w->urls is urls (HRW_TOP_MAX
 * entries, the caller's). Not in a cluster: w->cluster false. */
void ol_where_of(struct target *t, sv_t bck, sv_t obj, ol_where_t *w, char (*urls)[CMAP_URL_MAX + 1]);

/* --- reads ----------------------------------------------------------------------- */

/* Reads during a rebalance (olmoved.c). ol_moved: a GET/HEAD this target
 * serves by the current map (OL_HERE) but has no copy of yet, of an object
 * the previous map placed on another active target that is no holder now:
 * asks that target (network pool) and, when it has a copy, sends the read
 * there: there(req, arg, its intra URL, hop, map version) (an S3 forward
 * with OL_PREV_HDR), or with there NULL a 307 to its public URL (hop
 * counted, OL_PREV_PARAM); else calls here(req, arg) on the loop to serve
 * it here (ol_open fetches it). Either is called with req->state the
 * caller's again. Returns true when it took the request; false: serve it
 * here now. ol_moved_here: a read routed elsewhere by this map (not
 * OL_HERE) that ol_moved of a target on the same map sent here, and this
 * target was a holder under the previous map and has a copy: true, serve
 * it here. */
typedef void (*ol_here_fn)(http_req_t *req, void *arg);
typedef void (*ol_there_fn)(http_req_t *req, void *arg, const char *intra_url, unsigned hops, uint64_t cmap_version);
bool ol_moved(http_req_t *req, struct target *t, sv_t bck, sv_t obj, const ol_where_t *w, ol_here_fn here,
	      ol_there_fn there, void *arg);
bool ol_moved_here(http_req_t *req, struct target *t, sv_t bck, sv_t obj, const ol_where_t *w);

#define OL_VERIFY 1u /* check the copy against its checksum first (store.verify_on_read) */
#define OL_STREAM 2u /* the caller sends the body with ol_send: a cold object of a remote
			bucket is given while it is fetched (olremote.c), a small one
			may come from memory (OL_FD_MEM) */
/* With OL_STREAM, the fd a hit of the store's hot cache gives (store_open_hot):
 * the bytes are held for the request; ol_send sends them, ol_close drops them. */
#define OL_FD_MEM (-2)

/* Called on the loop with an open copy (err 0: fd and *m; the callee owns
 * fd) or a failure: err ENOENT (no copy anywhere), EBADMSG (damaged, no
 * good copy, standalone), EIO (no copy could be fetched: msg says why), or
 * another errno from the store. */
typedef void (*ol_open_fn)(http_req_t *req, void *arg, int fd, store_meta_t *m, int err, const char *msg);
/* Opens bck/obj for a read on this target, fetching a good copy first when
 * the one here is missing or bad (in a cluster, for a request from outside
 * it). done may run before ol_open returns. req->state is the caller's
 * again when done runs. */
void ol_open(http_req_t *req, struct target *t, sv_t bck, sv_t obj, unsigned flags, ol_open_fn done, void *arg);
/* The same, blocking (the I/O pool). fetch: may fetch from other targets
 * (false for intra-cluster requests). AIS_OK with *fd and *m, or AIS_ERR
 * with errno as above. */
int ol_open_sync(struct target *t, sv_t bck, sv_t obj, bool fetch, int *fd, store_meta_t *m, buf_t *msg);
/* Sends len bytes from start of an fd ol_open (OL_STREAM) gave: the file
 * (sendfile), or, for a cold object of a remote bucket, the bytes as the
 * fetch writes them (a Range: only that range, fetched then). Takes fd. */
void ol_send(http_req_t *req, int fd, uint64_t start, uint64_t len);
/* Releases an fd ol_open gave that will not be sent (OL_FD_MEM or a descriptor). */
void ol_close(http_req_t *req, int fd);
/* GET ?etl=NAME (target/etlget.c, native and S3): the object read here,
 * transformed by transformer name (etl.h) and sent; s3: errors as S3 XML
 * (NoSuchTransformer, TransformFailed, ...). AIS_OK (answered or will be). */
int tgt_get_etl(http_req_t *req, struct target *t, sv_t bck, sv_t obj, sv_t name, bool s3);
/* The same over one member of a plain tar shard (?archpath=MEMBER&etl=NAME):
 * 400 for an invalid archpath, 404 when the shard lacks it. */
int tgt_get_etl_member(http_req_t *req, struct target *t, sv_t bck, sv_t obj, sv_t member, sv_t name);
/* Stops the remote fetches in progress and waits for them (target_stop). */
void olr_stop(void);
/* Answers a failed open for the native API (404 naming the bucket or the
 * object, 500 damaged, 502 no good copy, else by errno). */
void ol_open_failed(http_req_t *req, sv_t bck, sv_t obj, int err, const char *msg);

/* 0, 304 or 412: If-Match, then If-Unmodified-Since unless If-Match was
 * given (412); If-None-Match, then If-Modified-Since unless If-None-Match
 * was given (304 for reads, 412 for writes). etag quoted; prefix "" or
 * "x-amz-copy-source-" for the headers' names. */
int ol_conditions(http_req_t *req, const char *etag, int64_t mtime_ns, const char *prefix, bool read);

/* --- writes ---------------------------------------------------------------------- */

/* One object write (blocking steps, the I/O pool): begin, write..., commit
 * (sealed, replicated to the other holders, committed under the write
 * quorum, tar shards indexed, handed to the rebalance when the map moved
 * meanwhile), free. */
typedef struct ol_put {
	struct target *t;
	sv_t bck, obj;
	const ol_where_t *w;                  /* NULL: standalone or intra */
	enum store_cksum want_type;           /* a checksum the client declared */
	char want_hex[STORE_CKSUM_HEX_MAX];
	const char *custom;                   /* custom metadata to store */
	int64_t origin_ns;                    /* a copy of a write of that stamp (store_writer_origin) */
	int64_t stamp;                        /* a copy's stamp (TGT_STAMP, store_writer_stamp); 0: new */
	int64_t md_ns;                        /* a copy's metadata time (store_writer_md_time); 0: new */
	store_writer_t *sw;
	store_meta_t meta;                    /* after the commit */
	buf_t msg;                            /* why the copies failed */
	struct tgt_repl *repl;                /* copies streamed as the bytes come (mirror.c) */
	uint64_t size;                        /* the body's payload bytes when known at begin, else 0 */
	struct ec_stream *ecs;                /* slices encoded as the bytes come (ec.c) */
	bool md5_etag;                        /* a client's write through an API without an ETag of
						 its own (native PUT, copy-bck, ishard): the MD5 of the
						 bytes is computed as they land and kept as the S3
						 ETag ("s3.etag" in custom, unless custom has one), so
						 every copy carries it (olput.c rule 7) */
	/* A conditional write (S3's If-Match / If-None-Match), NULL: none.
	 * ol_put_commit calls it before any copy or slice commits, with the
	 * metadata of the object's copy here (NULL: none), and no other
	 * conditional write of the same bck/obj on this target passes its
	 * check until this one committed or failed (invariant 6); AIS_ERR
	 * (errno set) fails the write with nothing of it visible. */
	int (*precond)(struct ol_put *p, const store_meta_t *cur);
	void *precond_arg;                    /* the caller's, for precond */
	char *vcustom;                        /* custom with the version id (olver.c), owned */
} ol_put_t;
/* Whether the write's steps wait on other nodes: copies go to other
 * holders, erasure-coded slices to other targets, or the object to a
 * remote bucket's remote first (in a cluster, for a request from outside
 * it). Those steps run on the network pool. */
bool ol_put_remote(const ol_put_t *p);
int ol_put_begin(ol_put_t *p);
int ol_put_write(ol_put_t *p, const void *b, size_t n);
/* The same for n bytes waiting in the pipe pfd (store_writer_splice): only
 * for a write without copies or slices streamed (EINVAL). */
int ol_put_splice(ol_put_t *p, int pfd, size_t n);
/* AIS_OK once committed with its copies; AIS_ERR with errno (EAGAIN: the
 * write quorum was missed, msg says why; nothing stays visible). */
int ol_put_commit(ol_put_t *p);
void ol_put_free(ol_put_t *p);

/* A staged write (olstage.c): an object a job builds in place, bytes
 * written where the object layer puts them (its temporary object on the
 * object's mountpath, invisible), committed long after, once, by the
 * object layer as a client's write: ol_put_commit (the bucket's checksum,
 * copies or erasure-coded slices, made then from the staged bytes; the
 * rename that makes it visible), so the owner's bytes are written once. */
typedef struct ol_stage ol_stage_t;
/* A staged write of bck/obj (NULL with why set: no bucket, no space). */
ol_stage_t *ol_stage_open(struct target *t, const char *bck, const char *obj, buf_t *why);
int ol_stage_write(ol_stage_t *st, const void *p, size_t n);
/* Commits it with custom metadata custom ("k=v,.."): AIS_OK, or AIS_ERR
 * with errno and why: EXDEV when this target is not the object's owner by
 * the map of the moment (nothing done), EAGAIN when its copies missed the
 * write quorum (nothing visible). */
int ol_stage_commit(ol_stage_t *st, const char *custom, buf_t *why);
/* The staged bytes, sealed, open for reading (the caller closes it; a
 * write that could not commit here is sent elsewhere), or -1 with errno. */
int ol_stage_fd(ol_stage_t *st);
/* Frees st; what was not committed goes. */
void ol_stage_free(ol_stage_t *st);

/* A request body streamed to a sink: the loop fills one of two buffers
 * while a pool thread hands the other to the sink, so memory is bounded and a
 * slow disk stops the socket. The body is read (and 100 Continue sent)
 * only once the sink began. */
typedef struct ol_stream ol_stream_t;
typedef struct ol_stream_ops {
	int (*begin)(ol_stream_t *s);                          /* pool; AIS_ERR with errno */
	int (*write)(ol_stream_t *s, const char *b, size_t n); /* pool; AIS_ERR with errno */
	int (*commit)(ol_stream_t *s);                         /* pool; AIS_ERR with errno */
	/* pool, optional: n body bytes that wait in the pipe pfd into the
	 * sink, instead of write (a spliced body: splice_min); AIS_ERR with errno */
	int (*splice)(ol_stream_t *s, int pfd, size_t n);
	/* loop, optional: body bytes through the API's decoder, which passes
	 * the payload to ol_stream_emit (never more bytes than came in);
	 * AIS_ERR after answering */
	int (*feed)(ol_stream_t *s, const char *p, size_t n);
	/* loop, optional: the body is whole; AIS_ERR after answering */
	int (*end)(ol_stream_t *s);
	void (*reply)(ol_stream_t *s);          /* loop: the answer after the commit */
	void (*fail)(ol_stream_t *s, int err);  /* loop: answer a failed pool step */
	void (*cleanup)(ol_stream_t *s);        /* frees the sink (optional) */
} ol_stream_ops_t;
struct ol_stream {
	const ol_stream_ops_t *ops;
	http_req_t *req; /* set by ol_stream_start */
	void *arg;      /* the API's own */
	uint64_t size;  /* payload bytes written */
	const ol_put_t *put; /* the object write the sink makes, if any: when it
	                        waits on other nodes (ol_put_remote), its steps
	                        run on the network pool */
	uint64_t splice_min; /* a sized body of this many bytes or more on plain
	                        TCP goes socket -> pipe -> ops->splice, never
	                        through user space (when there is no feed and
	                        the write is not remote); 0: never */
	void *priv;     /* ol's */
};
/* Starts; req->state becomes s until the answer. bufsz 0: store.put_buffer. */
void ol_stream_start(http_req_t *req, ol_stream_t *s);
/* Registers the spliced-body counter at 0 (aisd_put_spliced_bytes_total). */
void ol_metrics_init(void);
void ol_stream_emit(ol_stream_t *s, const char *p, size_t n);

/* Blocking: deletes bck/obj here and on every other target that may hold a
 * copy (all = false: here only, for an intra-cluster request). AIS_OK if a
 * copy was removed somewhere; AIS_ERR with errno (ENOENT: none anywhere).
 * A client's delete (all, in a cluster) leaves a tombstone on every target
 * it reaches (ol_tombstone; the intra requests carry TGT_DELETE). */
int ol_delete(struct target *t, sv_t bck, sv_t obj, bool all);
/* The same; when a target that may hold a copy could not be reached and
 * mirror.delete_quorum does not let the delete complete without it
 * (invariant 5), AIS_ERR with errno EHOSTDOWN (503) and why (may be NULL)
 * naming the targets. */
int ol_delete_msg(struct target *t, sv_t bck, sv_t obj, bool all, buf_t *why);
/* Blocking: records that a client deleted bck/obj with the delete's stamp
 * (store_tomb_put; store_stamp says why stamps, not wall clocks). */
void ol_tombstone(struct target *t, sv_t bck, sv_t obj, int64_t stamp);
/* Blocking: is a copy of bck/obj of the write stamped stamp (store_stamp)
 * one that a client deleted since (a tombstone here is stamped later)? */
bool ol_deleted(struct target *t, sv_t bck, sv_t obj, int64_t stamp);
/* Blocking: sets the custom metadata (the S3 metadata and ACL) of the copy
 * of bck/obj here, if it is still version `version`, and of every other
 * copy with the same checksum (all = false: here only). AIS_ERR with errno
 * ESTALE (overwritten meanwhile), another store errno, or EIO when one of
 * the object's holders did not take it (msg says which; the copy here has
 * the new metadata: a retry sets it everywhere). The change is stamped
 * with its time (store_md_time), so a holder that was away gets it from
 * the next rebalance (TGT_MD_NS in target_int.h). */
int ol_set_custom(struct target *t, sv_t bck, sv_t obj, uint64_t version, const char *custom, bool all,
		  buf_t *msg);

#endif
