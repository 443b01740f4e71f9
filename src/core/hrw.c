/*
 * hrw.c - highest random weight placement (see hrw.h).
 */
#include <xxhash.h>

#include "aisd/hrw.h"
#include "aisd/banned.h"

uint64_t hrw_mix(uint64_t x)
{
	/* splitmix64 finalizer */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

uint64_t hrw_digest(const void *id, size_t len) { return XXH64(id, len, HRW_SEED); }
uint64_t hrw_name_hash(const void *name, size_t len) { return XXH64(name, len, HRW_SEED); }

size_t hrw_owner(uint64_t name_hash, const uint64_t *digests, size_t n)
{
	size_t best = 0;
	uint64_t bw = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t w = hrw_weight(name_hash, digests[i]);
		if (i == 0 || w > bw)
			best = i, bw = w;
	}
	return best;
}

size_t hrw_top(uint64_t name_hash, const uint64_t *digests, size_t n, size_t *out, size_t k)
{
	uint64_t w[HRW_TOP_MAX];
	size_t got = 0;
	if (k > n)
		k = n;
	if (k > HRW_TOP_MAX)
		k = HRW_TOP_MAX;
	/* insertion into a sorted list of k best: n is small (nodes, disks) */
	for (size_t i = 0; i < n; i++) {
		uint64_t wi = hrw_weight(name_hash, digests[i]);
		size_t pos = got;
		while (pos > 0 && w[pos - 1] < wi)
			pos--;
		if (pos >= k)
			continue;
		size_t last = got < k ? got : k - 1;
		for (size_t j = last; j > pos; j--)
			w[j] = w[j - 1], out[j] = out[j - 1];
		w[pos] = wi;
		out[pos] = i;
		if (got < k)
			got++;
	}
	return got;
}
