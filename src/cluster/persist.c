/*
 * persist.c - cluster map and bucket metadata on disk: one JSON file each,
 * replaced atomically, read back strictly.
 *
 * Invariants:
 *  1. The file at path is always either the previous complete version or
 *     the new complete version, never a mix: the bytes go to <path>.tmp in
 *     the same directory, are fsynced, renamed over path, and the directory
 *     is fsynced, in that order; a failure at any step leaves path as it was
 *     and removes the temp file.
 *  2. Load reads only path: a leftover <path>.tmp from a crash is never
 *     looked at (and the next save truncates it).
 *  3. Load of a missing file is AIS_ERR with errno ENOENT and no message
 *     (a node that never had metadata); a file that does not decode is
 *     AIS_ERR with errno EINVAL and a message naming the file; nothing read
 *     from disk can crash the loader (the decoders are strict and fuzzed).
 *  4. Saves of one path are serialized by the caller (one writer: the
 *     metadata owner of the node).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aisd/bmd.h"
#include "aisd/cmap.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "cluster_int.h"
#include "aisd/banned.h"

static int io_fail(buf_t *err, const char *what, const char *path)
{
	int e = errno;
	if (err)
		buf_addf(err, "%s %s: %s", what, path, strerror(e));
	errno = e;
	return AIS_ERR;
}

int cmap_persist_read(const char *path, buf_t *out, buf_t *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return AIS_ERR;
		return io_fail(err, "open", path);
	}
	if (fstat(fd, &st) < 0) {
		io_fail(err, "stat", path);
		close(fd);
		return AIS_ERR;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return io_fail(err, "not a regular file:", path);
	}
	for (;;) {
		if (out->len >= CMAP_JSON_MAX) {
			close(fd);
			errno = EFBIG;
			return io_fail(err, "too big:", path);
		}
		buf_grow(out, 65536);
		ssize_t r = read(fd, out->ptr + out->len, MIN(out->cap - out->len - 1, CMAP_JSON_MAX - out->len + 1));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			io_fail(err, "read", path);
			close(fd);
			return AIS_ERR;
		}
		if (r == 0)
			break;
		out->len += (size_t)r;
		out->ptr[out->len] = '\0';
	}
	close(fd);
	return AIS_OK;
}

/* The typed decoders behind one signature (out: a cmap_t ** or bmd_t **). */
typedef int (*decode_fn)(const char *js, size_t len, void *out, buf_t *err);
static int cmap_dec(const char *js, size_t len, void *out, buf_t *err) { return cmap_decode(js, len, out, err); }
static int bmd_dec(const char *js, size_t len, void *out, buf_t *err) { return bmd_decode(js, len, out, err); }

/* Writes the encoded metadata in js (then frees it) as path, a line. */
static int save_json(buf_t *js, const char *path, buf_t *err)
{
	buf_addch(js, '\n');
	int rc = file_write_atomic(path, js->ptr, js->len, err);
	buf_free(js);
	return rc;
}

/* Reads path and decodes it with dec into out (invariant 3). */
static int load_json(const char *path, decode_fn dec, void *out, buf_t *err)
{
	buf_t js = BUF_INIT;
	int rc = cmap_persist_read(path, &js, err);
	if (rc == AIS_OK && (rc = dec(js.ptr ? js.ptr : "", js.len, out, err)) != AIS_OK) {
		if (err)
			buf_addf(err, " (in %s)", path);
		errno = EINVAL;
	}
	buf_free(&js);
	return rc;
}

int cmap_save(const cmap_t *m, const char *path, buf_t *err)
{
	buf_t js = BUF_INIT;
	cmap_encode(m, &js);
	return save_json(&js, path, err);
}

int cmap_load(const char *path, cmap_t **out, buf_t *err)
{
	*out = NULL;
	return load_json(path, cmap_dec, out, err);
}

int bmd_save(const bmd_t *b, const char *path, buf_t *err)
{
	buf_t js = BUF_INIT;
	bmd_encode(b, &js);
	return save_json(&js, path, err);
}

int bmd_load(const char *path, bmd_t **out, buf_t *err)
{
	*out = NULL;
	return load_json(path, bmd_dec, out, err);
}
