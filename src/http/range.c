/*
 * range.c - the Range request header (RFC 9110 section 14), single byte
 * ranges. Pure: no I/O, fuzzed by tests/fuzz/fuzz_range.c.
 */
#include <string.h>

#include "aisd/http.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

int http_range_parse(sv_t h, uint64_t size, uint64_t *start, uint64_t *len)
{
	uint64_t a, b;

	if (!h.ptr)
		return AIS_DONE;
	h = sv_trim(h);
	if (!sv_casestartswith(h, "bytes="))
		return AIS_DONE;
	sv_t spec = sv_trim((sv_t){h.ptr + 6, h.len - 6});
	if (memchr(spec.ptr, ',', spec.len))
		return AIS_DONE; /* several ranges: we serve the whole body */
	const char *dash = memchr(spec.ptr, '-', spec.len);
	if (!dash)
		return AIS_DONE;
	sv_t first = sv_trim((sv_t){spec.ptr, (size_t)(dash - spec.ptr)});
	sv_t last = sv_trim((sv_t){dash + 1, (size_t)(spec.ptr + spec.len - dash - 1)});

	if (first.len == 0) { /* suffix: last n bytes */
		if (num_parse_u64(last.ptr, last.len, 0, UINT64_MAX, &b) != AIS_OK)
			return AIS_DONE;
		if (b == 0 || size == 0)
			return AIS_ERR;
		if (b > size)
			b = size;
		*start = size - b;
		*len = b;
		return AIS_OK;
	}
	if (num_parse_u64(first.ptr, first.len, 0, UINT64_MAX, &a) != AIS_OK)
		return AIS_DONE;
	if (last.len == 0) {
		b = UINT64_MAX;
	} else if (num_parse_u64(last.ptr, last.len, 0, UINT64_MAX, &b) != AIS_OK || b < a) {
		return AIS_DONE;
	}
	if (a >= size)
		return AIS_ERR;
	if (b >= size)
		b = size - 1;
	*start = a;
	*len = b - a + 1;
	return AIS_OK;
}
