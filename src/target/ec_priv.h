/*
 * ec_priv.h - what the files of a target's erasure coding share, and
 * nothing else includes: ec.c (the write: encode and send slices, ask
 * every target, delete), ecread.c (reads from the slices) and ecrepair.c
 * (the repair and the rebalance's placement of slices). What the object
 * layer, the rebalance and the routes call is ec_int.h.
 */
#ifndef AISD_EC_PRIV_H
#define AISD_EC_PRIV_H

#include <pthread.h>

#include "ec_int.h"
#include "aisd/httpc.h"

/* Room for the slices of one object (D+P) in per-index arrays. */
#define EC_NSL (2 * EC_SLICES_MAX)
/* A target's intra-cluster URL. */
typedef char ec_url_t[CMAP_URL_MAX + 1];

/* The aisd_ec_* counters of /metrics (ec.c names them). */
enum {
	EC_M_WRITTEN,
	EC_M_DAMAGED,
	EC_M_REBUILDS,
	EC_M_REBUILD_FAILURES,
	EC_M_RANGE_READS,
	EC_M_RANGE_BYTES,
	EC_M_MOVED,
	EC_M_STREAMED,
	EC_M_N
};
/* Adds n to counter m. */
void ec_count(int m, uint64_t n);

/* An unlinked temporary file on the first mountpath; -1 (logged) when it
 * cannot be made. */
int ec_tmp_file(target_t *t);
/* The active targets' intra URLs in *out (the caller frees it), the first
 * D+P in HRW order of bck/obj; returns how many. */
size_t ec_targets(target_t *t, const char *bck, size_t blen, const char *obj, size_t olen, ec_url_t **out);

/* --- sending slices (ec.c) --- */

/* A slice's metadata but its index: the bucket's layout, sm's size and
 * checksum, versioned now. */
void ec_meta_template(ec_meta_t *m, const bmd_props_t *bp, const store_meta_t *sm);
/*
 * Encodes the object in fd (layout l) and sends slice i to dest[i] for
 * every i with dest[i] non-NULL (ec.c rule 3). ok[i] tells which answered
 * 200. Returns how many did; msg says why the others failed.
 */
size_t ec_encode_send(target_t *t, int fd, const ec_layout_t *l, const ec_meta_t *tmpl, const char *custom,
		      const char *const *dest, const char *bck, size_t blen, const char *obj, size_t olen,
		      bool *ok, buf_t *msg);
/* Sends the local slice (fd; sm its store metadata, me its slice
 * metadata) to base as a move under cmap_v (ecslice.c rule 4); true on
 * 200 (taken, or the receiver had it), else msg says why. */
bool ec_move_slice(const char *base, int fd, const store_meta_t *sm, const ec_meta_t *me, uint64_t cmap_v,
		   const char *bck, size_t blen, const char *obj, size_t olen, buf_t *msg);

/* --- asking every target (ec.c) --- */

/* One request to one target, on a thread of its own: DELETE, GET ?meta
 * (the text in resp) or GET into a temporary file (fd >= 0); a GET keeps
 * the answer's head in hdrs. */
struct ec_ask {
	pthread_t th;
	bool started;
	const char *method;
	buf_t url, resp, hdrs;
	const char *hdr; /* an extra header line, or NULL */
	int fd;
	httpc_sink_fn sink; /* a GET's body goes here instead (with sink_arg) */
	void *sink_arg;
	int status;
};
/* Asks every one of u[0..n) in parallel, for bck/obj's slice with query
 * appended (hdr: an extra header line, or NULL; a GET's body to fds[i],
 * or to sinks[i] (with args[i]) where not NULL); a[i] holds the answers
 * (ec_ask_free). ec_ask_all: with no sinks. */
struct ec_ask *ec_ask_each(const ec_url_t *u, size_t n, const char *method, const char *query, int *fds,
			   httpc_sink_fn *sinks, void **args, const char *hdr, const char *bck, size_t blen,
			   const char *obj, size_t olen);
struct ec_ask *ec_ask_all(const ec_url_t *u, size_t n, const char *method, const char *query, int *fds,
			  const char *hdr, const char *bck, size_t blen, const char *obj, size_t olen);
void ec_ask_free(struct ec_ask *a, size_t n);
/* ec.c rule 6: the newest tombstone of bck/obj here and in the answers
 * a[0..n) (0: none). */
int64_t ec_deleted_at(target_t *t, const struct ec_ask *a, size_t n, const char *bck, size_t blen,
		      const char *obj, size_t olen);

/* --- reads (ecread.c) --- */

/* The object's metadata as its slices tell it: the write ref, and cm its
 * custom metadata. */
void ec_meta_of_write(const ec_meta_t *ref, sv_t cm, store_meta_t *out);

#endif
