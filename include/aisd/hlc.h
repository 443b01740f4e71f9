/*
 * hlc.h - the node's hybrid logical clock: the stamps that order writes
 * and deletes across the cluster without wall clocks that agree.
 *
 * A stamp is an int64 in the units of the wall clock (ns since the epoch),
 * so a record written before stamps existed reads its mtime as its stamp,
 * and a stamp still reads as a time (for the tombstone ttl, for a log).
 * The clock has two parts:
 *  - physical: this node's wall clock plus "ahead", the most any peer's
 *    clock was seen ahead of it (learnt from the Ais-Hlc header that every
 *    intra-cluster request carries: the primary's health checks and the
 *    followers' map fetches pass it round the cluster each keepalive), so
 *    every node's physical part runs with the fastest clock of the cluster
 *    and a write on a node whose clock runs behind is still stamped after
 *    one made a moment before on a node whose clock runs ahead;
 *  - logical: a stamp is always above every stamp this node issued or
 *    observed (+1 ns when the physical part has not moved on).
 * Guarantees:
 *  1. hlc_now is strictly increasing in this process (any thread).
 *  2. After hlc_observe(x) (accepted), every hlc_now is > x.
 *  3. A stamp more than HLC_MAX_AHEAD ahead of this node's wall clock is
 *     not taken (hlc_observe returns false): a peer with a clock set years
 *     wrong, or a forged header, cannot drag the cluster's stamps with it.
 *  4. Old stamps (records without one: their mtime) compare as times.
 * Knows nothing of the daemon (a small library, like hrw).
 */
#ifndef AISD_HLC_H
#define AISD_HLC_H

#include <stdbool.h>
#include <stdint.h>

#define HLC_HEADER "Ais-Hlc"                     /* on every intra-cluster request */
#define HLC_MAX_AHEAD (24LL * 3600 * 1000000000) /* 1 day, in ns */

/* A new stamp: > every stamp issued or observed here, >= wall + ahead. */
int64_t hlc_now(void);
/* The clock's value now, for a header: no stamp is used up. */
int64_t hlc_peek(void);
/* Merges a stamp seen on a peer's message. false (nothing changed) when it
 * is not positive or is more than HLC_MAX_AHEAD ahead of the wall clock. */
bool hlc_observe(int64_t stamp);
/* The same for a header value (decimal digits); false when it does not
 * parse or is refused. */
bool hlc_observe_text(const char *s, size_t len);
/* How far ahead of this node's wall clock the physical part runs (ns). */
int64_t hlc_ahead(void);
/* Tests: forget every stamp (ahead 0, nothing issued). */
void hlc_reset(void);

#endif
