/*
 * hlc.c - the hybrid logical clock of hlc.h: two atomics, no lock.
 *
 * g_last is the last stamp issued or observed; g_ahead how far ahead of the
 * local wall clock the fastest clock seen runs. hlc_now takes
 * max(wall + ahead, last + 1) by compare-and-swap, so concurrent callers get
 * distinct increasing stamps (hlc.h guarantee 1); hlc_observe raises both
 * (guarantee 2), unless the stamp is implausibly far ahead (guarantee 3).
 */
#include <stdatomic.h>
#include <stddef.h>

#include "aisd/hlc.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

static _Atomic int64_t g_last;
static _Atomic int64_t g_ahead;

static int64_t physical(void) { return time_now_ns() + atomic_load(&g_ahead); }

int64_t hlc_now(void)
{
	int64_t pt = physical(), last = atomic_load(&g_last), next;
	do
		next = pt > last ? pt : last + 1;
	while (!atomic_compare_exchange_weak(&g_last, &last, next));
	return next;
}

int64_t hlc_peek(void)
{
	int64_t pt = physical(), last = atomic_load(&g_last);
	return pt > last ? pt : last;
}

bool hlc_observe(int64_t stamp)
{
	int64_t wall = time_now_ns();
	if (stamp <= 0 || stamp - wall > HLC_MAX_AHEAD)
		return false;
	int64_t d = stamp - wall, a = atomic_load(&g_ahead);
	while (d > a && !atomic_compare_exchange_weak(&g_ahead, &a, d))
		;
	int64_t last = atomic_load(&g_last);
	while (stamp > last && !atomic_compare_exchange_weak(&g_last, &last, stamp))
		;
	return true;
}

bool hlc_observe_text(const char *s, size_t len)
{
	uint64_t v;
	if (!s || num_parse_u64(s, len, 1, INT64_MAX, &v) != AIS_OK)
		return false;
	return hlc_observe((int64_t)v);
}

int64_t hlc_ahead(void) { return atomic_load(&g_ahead); }

void hlc_reset(void)
{
	atomic_store(&g_last, 0);
	atomic_store(&g_ahead, 0);
}
