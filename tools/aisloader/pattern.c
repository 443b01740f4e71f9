/*
 * pattern.c - the deterministic bytes of every benchmark object. One period
 * of PAT_PERIOD pseudo-random bytes (splitmix64 from a fixed seed, the same
 * in every run) is kept twice over, so any run of up to PAT_PERIOD bytes
 * starting anywhere in the period is one contiguous memcpy/memcmp. An object
 * named NAME holds the period rotated by xxh64(NAME): the same name always
 * has the same bytes, different names differ, and generating or checking
 * data costs no more than copying it, so the client is never the bottleneck.
 */
#include <string.h>
#include <xxhash.h>

#include "aisd/util.h"
#include "loader.h"
#include "aisd/banned.h"

static unsigned char *pat; /* 2 * PAT_PERIOD bytes: the period, twice */

void pat_init(void)
{
	uint64_t x = 0x6169736c6f616472ULL; /* fixed: data must match across runs */

	if (pat)
		return;
	pat = xmalloc(2 * PAT_PERIOD);
	for (size_t i = 0; i < PAT_PERIOD; i += 8) {
		uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		z ^= z >> 31;
		memcpy(pat + i, &z, 8);
	}
	memcpy(pat + PAT_PERIOD, pat, PAT_PERIOD);
}

uint64_t pat_shift(const char *name, size_t len)
{
	return XXH64(name, len, 0) & (PAT_PERIOD - 1);
}

void pat_fill(char *dst, size_t n, uint64_t shift, uint64_t off)
{
	while (n > 0) {
		size_t at = (size_t)((off + shift) & (PAT_PERIOD - 1));
		size_t k = MIN(n, PAT_PERIOD);
		memcpy(dst, pat + at, k);
		dst += k;
		off += k;
		n -= k;
	}
}

bool pat_check(const char *src, size_t n, uint64_t shift, uint64_t off)
{
	while (n > 0) {
		size_t at = (size_t)((off + shift) & (PAT_PERIOD - 1));
		size_t k = MIN(n, PAT_PERIOD);
		if (memcmp(src, pat + at, k) != 0)
			return false;
		src += k;
		off += k;
		n -= k;
	}
	return true;
}
