/*
 * metrics.h - a small process-wide registry of metrics for GET /metrics in
 * the Prometheus text exposition format (version 0.0.4).
 *
 * Two ways to appear in a scrape:
 *  - a variable: metrics_counter()/metrics_gauge() return a pointer to a
 *    64-bit atomic that the owner updates with relaxed atomics (no lock on
 *    the hot path); the registry keeps it for the life of the process;
 *  - a collector: a function called at scrape time (on an I/O pool thread,
 *    so it may block briefly) that appends whole metric families, for
 *    values that live elsewhere (per-worker arrays summed at scrape, store
 *    counters, map versions).
 * Names follow Prometheus rules ([a-zA-Z_:][a-zA-Z0-9_:]*); labels are given
 * already formatted ("mountpath=\"/d1\"" or ""); use metrics_label() to
 * escape values.
 */
#ifndef AISD_METRICS_H
#define AISD_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "aisd/buf.h"

typedef void (*metrics_collect_fn)(void *arg, buf_t *out);

/* Returns the counter name{labels}, registering it at the first call (help
 * is used only then). Never NULL; valid until the process exits. */
_Atomic uint64_t *metrics_counter(const char *name, const char *labels, const char *help);
/* Same for a gauge (may go down; stored as a signed value). */
_Atomic int64_t *metrics_gauge(const char *name, const char *labels, const char *help);

/* Adds a collector; metrics_collector_remove() with the same pair removes
 * it and returns only when no scrape is running it. */
void metrics_collector_add(metrics_collect_fn fn, void *arg);
void metrics_collector_remove(metrics_collect_fn fn, void *arg);

/* Appends every variable and then every collector's output. */
void metrics_write(buf_t *out);

/* Exposition helpers for collectors. */
void metrics_family(buf_t *out, const char *name, const char *type, const char *help);
/* Appends a label value, quoted and escaped (\\, \", \n). */
void metrics_label(buf_t *out, const char *name, const char *value, size_t len);

#define METRICS_ADD(p, n) atomic_fetch_add_explicit((p), (n), memory_order_relaxed)

#endif
