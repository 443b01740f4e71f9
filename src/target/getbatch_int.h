/*
 * getbatch_int.h - what getbatch.c (the designated target: order, local
 * entries, the response) and gbpeer.c (entries streamed from their owners)
 * share. Not for use outside src/target.
 */
#ifndef AISD_GETBATCH_INT_H
#define AISD_GETBATCH_INT_H

#include <event2/event.h>

#include "aisd/httpc.h"
#include "aisd/xp.h"
#include "aisd/moss.h"
#include "target_int.h"

#define GB_INFLIGHT 16             /* peer fetches at once per request */
#define GB_WINDOW 256              /* fetches start at most this far ahead */
#define GB_SLOT_MAX (1u << 20)     /* bytes buffered per fetched entry */
#define GB_MEM_MAX (16u << 20)     /* bytes buffered per request */
#define GB_PIECE (256u << 10)      /* bytes produced per fill call */
#define GB_INLINE_MAX (64u << 10)  /* local entries up to this are copied from the page cache */
#define GB_ERRMSG_MAX 1024         /* bytes of a peer's error body kept */
#define GB_FETCH_TIMEOUT_MS 300000 /* a fetch without progress (its pauses not counted) */
#define GB_SPARES 8                /* entry buffers kept for reuse */
#define GB_HANDOFF_MIN (16u << 10) /* a peer entry's buffer of this many bytes becomes the piece (no copy) */

enum ph { PH_HDR, PH_DATA, PH_PAD };

struct gb_ent {
	moss_in_t *in;
	int owner;           /* index into gb->peers; -1: this target */
	bool failed;
	int status;          /* failed: the HTTP status it maps to */
	char *msg;           /* failed: why (malloc'd) */
	uint64_t off, size;  /* local member: its bytes in the shard (before start/length) */
	uint64_t version;    /* local member: the shard version off/size are of */
	int64_t mtime_ns;    /* its mtime (the tar header's); local: of that version */
	/* peer fetch */
	xp_req_t *r;
	buf_t data;          /* received and not yet sent */
	bool head, ended, paused;
	bool rhead;          /* this fetch's answer head was checked */
	bool resumed;        /* this fetch asks the rest of a partly received entry */
	bool lost;           /* failed: no holder of a copy could be reached */
	bool xf;             /* local, transformed (etl): all its size bytes in data */
	bool xfail;          /* failed: its transform did (coer sends it as missing) */
	uint64_t recvd;
};

struct gb {
	target_t *t;
	http_req_t *req;
	moss_req_t mr;
	struct gb_ent *e;
	struct gb_peer *peers;
	size_t npeers, cap;
	bool routed;         /* entries were placed by the cluster map (not a peer's sub-request) */
	bool on_pool;        /* prepare_work runs on the I/O pool: it may fetch missing copies */
	bool need_fetch;     /* prepare_work on the loop found a local entry missing */
	bool etl_unknown;    /* prepare_work: mr.etl is registered nowhere (404) */
	struct event *wake;
	size_t next_fetch, inflight;
	uint64_t buffered;
	size_t cur;          /* entry being sent */
	enum ph phase;
	uint64_t left;       /* of cur's data still to send */
	uint64_t sent_size;  /* cur's size as written in its header */
	bool started;
	int64_t mtime_s;
	uint64_t local_bytes; /* tar bytes of this target's own entries (prepare_work) */
	uint64_t out_bytes;   /* tar bytes of the entries whose headers are out */
	buf_t spare[GB_SPARES]; /* data buffers of sent entries, for reuse */
	size_t nspare;
};

/*
 * An owner of entries. A peer target (batch) gets one GetBatch sub-request
 * for all its entries, in request order, and its tar stream is split back
 * into the entries' buffers; this target's own members of compressed shards
 * (not batch) are fetched one GET each from its own archpath API.
 */
enum ps { PS_HDR, PS_PAX, PS_DATA, PS_PAD, PS_END };

struct gb_peer {
	char url[CMAP_URL_MAX + 1];
	bool batch;
	size_t *ents;            /* its entries, in request order */
	size_t n, cap;
	size_t pos;              /* the entry its stream is at */
	xp_req_t *r;             /* the sub-request, over the transport */
	buf_t body;              /* the sub-request, borrowed by r */
	enum ps st;
	unsigned char hbuf[512]; /* a tar header being received */
	size_t hlen;
	uint64_t left;           /* PS_DATA, PS_PAX, PS_PAD: bytes to come */
	uint64_t pax_size;
	buf_t pax, next_name;
	bool have_next_name, have_next_size;
	uint64_t next_size;
	buf_t stash;             /* received while blocked, not yet parsed */
	bool blocked, paused, ended;
	bool dead;               /* connection lost or refused, or a 5xx: never asked again */
	buf_t errbody;
};

void gb_ent_fail(struct gb_ent *e, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void gb_wake(struct gb *g);
/* Entry i's owner p could not serve it: p is marked dead and the entry
 * goes to the next holder of a copy (getbatch.c, invariant 5). When none is
 * left it fails: status 0 (p is gone: connection refused or lost) as lost
 * (503, which coer=true sends as __404__/NAME); else with status (504 after
 * a timeout, which may be a live peer's paused transfer; 502 after a 5xx). */
void gb_ent_reroute(struct gb *g, size_t i, struct gb_peer *p, int status, const char *why);
/* An empty buffer for an entry's data (a spare one when there is). */
void gb_take_spare(struct gb *g, buf_t *b);
/* gbpeer.c */
void gb_peer_add(struct gb_peer *p, size_t i);
void gb_peers_start(struct gb *g);
void gb_peer_kick(struct gb *g, struct gb_peer *p);
void gb_peers_cancel(struct gb *g);

#endif
