/*
 * hrw.h - highest random weight placement (rendezvous hashing).
 *
 * For a name, every candidate (target node or mountpath) gets the weight
 * mix(xxh64(name, seed) ^ digest), digest = xxh64(candidate_id, seed); the
 * owner is the candidate with the highest weight, replicas the next ones.
 * No table: any process computes any placement from the list of candidates,
 * and adding or removing one of N candidates moves only ~1/N of the names.
 * Knows nothing of the daemon; tools and tests use it alone.
 */
#ifndef AISD_HRW_H
#define AISD_HRW_H

#include <stddef.h>
#include <stdint.h>

#define HRW_SEED 0x61697364ULL /* "aisd" */
#define HRW_TOP_MAX 64          /* hrw_top returns at most this many */

uint64_t hrw_digest(const void *id, size_t len);
uint64_t hrw_mix(uint64_t x);
static inline uint64_t hrw_weight(uint64_t name_hash, uint64_t digest) { return hrw_mix(name_hash ^ digest); }
uint64_t hrw_name_hash(const void *name, size_t len);
/* Index of the owner among n digests (n > 0). */
size_t hrw_owner(uint64_t name_hash, const uint64_t *digests, size_t n);
/* Fills out[0..k) with the indices of the top k candidates, best first;
 * k is clamped to n and HRW_TOP_MAX. Returns k. */
size_t hrw_top(uint64_t name_hash, const uint64_t *digests, size_t n, size_t *out, size_t k);

#endif
