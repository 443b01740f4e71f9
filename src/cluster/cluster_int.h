/*
 * cluster_int.h - helpers shared by the files of src/cluster/ only: strict
 * JSON field readers (decode) and the atomic file write/read (persist).
 * Nothing outside src/cluster includes it.
 */
#ifndef AISD_CLUSTER_INT_H
#define AISD_CLUSTER_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "aisd/buf.h"

/* Appends the message to err (if any), sets errno = e, returns AIS_ERR:
 * the one error exit of the decoders and mutators. */
int cmap_fail(buf_t *err, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Byte order of a NUL-terminated key k against (s, len): <0, 0, >0. The
 * order of node ids in a cmap and of bucket names in a BMD. */
static inline int cmap_keycmp(const char *k, const char *s, size_t len)
{
	size_t kl = strlen(k);
	int c = memcmp(k, s, kl < len ? kl : len);
	return c ? c : (kl > len) - (kl < len);
}

/* Binary search of the key (s, len) among n records of `size` bytes at base,
 * sorted by the NUL-terminated key at offset `off` of each (cmap_keycmp
 * order). Returns the key's index, or -(insertion point) - 1. */
static inline ptrdiff_t cmap_sorted_find(const void *base, size_t n, size_t size, size_t off, const char *s,
					 size_t len)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmap_keycmp((const char *)base + mid * size + off, s, len);
		if (c == 0)
			return (ptrdiff_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -(ptrdiff_t)lo - 1;
}

/* Most bytes a metadata file or message may have (load refuses more). */
#define CMAP_JSON_MAX (64u << 20)

/* Parses len bytes into a JSON object (duplicate keys rejected, no NUL in
 * strings). NULL with a message in err (prefixed by what) otherwise. */
json_t *cmap_json_parse(const char *json, size_t len, const char *what, buf_t *err);
/* obj must be an object with exactly the keys named in keys[0..n). */
int cmap_json_keys(json_t *obj, const char *const *keys, size_t n, const char *what, buf_t *err);
/* obj[key] as a string: *s and *len borrow it. */
int cmap_json_str(json_t *obj, const char *key, const char *what, const char **s, size_t *len, buf_t *err);
/* obj[key] as an integer in [min, max]. */
int cmap_json_u64(json_t *obj, const char *key, const char *what, uint64_t min, uint64_t max, uint64_t *out,
		  buf_t *err);
int cmap_json_bool(json_t *obj, const char *key, const char *what, bool *out, buf_t *err);

/* Reads the whole file (at most CMAP_JSON_MAX bytes) into out. AIS_ERR with
 * errno ENOENT when missing (no message), EFBIG when too big, else errno of
 * the failing call. */
int cmap_persist_read(const char *path, buf_t *out, buf_t *err);

#endif
