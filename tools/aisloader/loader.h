/*
 * loader.h - aisloader's internal interfaces: the run configuration, the
 * deterministic data pattern, the latency histogram and the libcurl engine.
 *
 * Rules:
 *  1. The object at NAME holds, at byte offset o, pat_byte(NAME, o); PUT data
 *     is generated from it and --verify checks GET data against it, so any
 *     aisloader run can verify what any other one wrote.
 *  2. Nothing on the request path allocates: handles, URLs and buffers are
 *     made once per slot and reused for every request (with --s3, the
 *     SigV4 signer's own scratch buffers are the one exception).
 *  3. Statistics are per thread and merged once at the end; the only shared
 *     state while running is the ticket counter and the error-print budget.
 */
#ifndef AISLOADER_LOADER_H
#define AISLOADER_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ldr_op { LDR_GET = 0, LDR_PUT = 1, LDR_MIX = 2 };

struct ldr_conf {
	const char *url;      /* base URL, no trailing slash; object URL = url/NAME */
	enum ldr_op op;
	unsigned put_pct;     /* for LDR_MIX: share of PUTs, 0..100 */
	uint64_t size;        /* PUT size; expected GET size when verifying */
	uint64_t objects;     /* key space obj-000000 .. */
	unsigned workers;     /* concurrent transfers, all threads together */
	unsigned threads;     /* event-loop threads */
	int64_t duration_ns;  /* 0: no time limit */
	uint64_t count;       /* 0: no count limit */
	bool seq;             /* sequential keys instead of random */
	const char *name;     /* single object name, or NULL */
	bool verify;
	bool keepalive;
	bool follow;          /* follow redirects (a gateway's 307 to the target) */
	bool redirects_only;  /* do not follow; a 3xx counts as a success */
	const char *cacert, *cert, *key; /* https: CA bundle, client certificate and key */
	bool insecure;        /* https: no peer verification */
	uint64_t seed;
	/* S3: sign every request with SigV4 (UNSIGNED-PAYLOAD) as this key;
	 * url is then an S3 bucket URL (http://HOST/BUCKET). NULL: unsigned. */
	const char *s3_ak, *s3_sk, *s3_region;
};

/* Data pattern (pattern.c). pat_init must run once before anything else. */
#define PAT_PERIOD ((size_t)1 << 20)
void pat_init(void);
/* Shift of NAME's pattern: its byte at offset o is pat_base()[(o + shift) % PAT_PERIOD]. */
uint64_t pat_shift(const char *name, size_t len);
/* Fills dst with n bytes of the object whose shift is given, from offset off. */
void pat_fill(char *dst, size_t n, uint64_t shift, uint64_t off);
/* Returns true when src (n bytes at offset off) matches the pattern. */
bool pat_check(const char *src, size_t n, uint64_t shift, uint64_t off);

/* Log-linear latency histogram in nanoseconds (hist.c): <= 0.4% error. */
#define HIST_SUB_BITS 7
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)
struct hist {
	uint64_t n;
	uint64_t max;
	uint64_t sum;
	uint64_t c[HIST_BUCKETS];
};
void hist_add(struct hist *h, uint64_t v);
void hist_merge(struct hist *dst, const struct hist *src);
/* Value at quantile q (0..1), midpoint of its bucket; 0 when empty. */
uint64_t hist_quantile(const struct hist *h, double q);

struct ldr_stats {
	uint64_t ops;      /* completed with 2xx (and verified, with --verify) */
	uint64_t errors;   /* non-2xx, transport failures, verify mismatches */
	uint64_t bytes;    /* body bytes moved, partial transfers included */
	uint64_t aborted;  /* in flight when the time ran out (not errors) */
	uint64_t redirects; /* redirects followed (--follow) or answered (--redirects-only) */
	uint64_t connects; /* new connections opened (keep-alive working: ~ workers x hosts) */
	struct hist lat;   /* latency of completed requests (errors included) */
};

struct ldr_result {
	struct ldr_stats st[2]; /* [LDR_GET], [LDR_PUT] */
	double secs;
};

/*
 * engine_run drives the transfers of one phase: op (LDR_MIX draws each
 * request), at most count requests (0: no limit) and for at most duration_ns
 * (0: no limit), with c->workers transfers in flight over c->threads threads.
 * Fills *res. Returns 0, or -1 when it could not start (message printed).
 */
int engine_run(const struct ldr_conf *c, enum ldr_op op, uint64_t count, int64_t duration_ns,
	       bool seq, struct ldr_result *res);

#endif
