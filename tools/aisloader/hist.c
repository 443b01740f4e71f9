/*
 * hist.c - log-linear latency histogram (HdrHistogram's idea, fixed size).
 * Values below HIST_SUB are counted exactly; above, each power of two is
 * split into HIST_SUB equal buckets, so a reported quantile (the midpoint of
 * its bucket) is within 1/(2*HIST_SUB) = 0.4% of a recorded value. Adding is
 * O(1) with no allocation; the maximum is kept exactly.
 */
#include <string.h>

#include "loader.h"
#include "aisd/banned.h"

static unsigned hist_index(uint64_t v)
{
	if (v < HIST_SUB)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= HIST_SUB_BITS */
	unsigned sub = (unsigned)(v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1);
	return (e - HIST_SUB_BITS + 1) * HIST_SUB + sub;
}

/* Midpoint of bucket i. */
static uint64_t hist_value(unsigned i)
{
	if (i < HIST_SUB)
		return i;
	unsigned e = i / HIST_SUB + HIST_SUB_BITS - 1;
	uint64_t sub = i % HIST_SUB;
	uint64_t width = 1ULL << (e - HIST_SUB_BITS);
	return ((HIST_SUB + sub) << (e - HIST_SUB_BITS)) + width / 2;
}

void hist_add(struct hist *h, uint64_t v)
{
	h->c[hist_index(v)]++;
	h->n++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		dst->c[i] += src->c[i];
	dst->n += src->n;
	dst->sum += src->sum;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	if (h->n == 0)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)h->n + 0.5);
	if (rank < 1)
		rank = 1;
	if (rank > h->n)
		rank = h->n;
	uint64_t seen = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->c[i];
		if (seen >= rank) {
			uint64_t v = hist_value(i);
			return v > h->max ? h->max : v;
		}
	}
	return h->max;
}
