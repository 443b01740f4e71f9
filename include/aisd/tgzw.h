/*
 * tgzw.h - writing compressed shards (.tgz / .tar.gz): a finished tar file
 * turned into one gzip member (RFC 1952, zlib's deflate), the format that
 * GNU tar -z, Python's tarfile "r:gz" and libarchive (larc.h) read.
 *
 * The jobs that build shards (ishard, archive) write the tar first, where a
 * member fetched again after a failure can simply be written over, and
 * compress the whole file at the end; an append to such a shard inflates
 * the old one back to its tar first (tgzw_decompress). Memory: zlib's
 * state and two 64 KiB buffers (inflate: its 32 KiB window too).
 * Blocking: call from a job's thread.
 */
#ifndef AISD_TGZW_H
#define AISD_TGZW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "aisd/buf.h"

/* Is a shard called name (len bytes) a compressed tar (".tgz", ".tar.gz")? */
bool tgzw_is_tgz(const char *name, size_t len);
/* Compresses the first len bytes of fd (read with pread from offset 0; fd
 * is not taken) into out at its position. AIS_OK, or AIS_ERR with err set
 * (a read, write or zlib error). */
int tgzw_compress(int fd, uint64_t len, FILE *out, buf_t *err);
/* The same, with the len bytes of fd from offset off. */
int tgzw_compress_at(int fd, uint64_t off, uint64_t len, FILE *out, buf_t *err);
/* Inflates the len bytes of fd (pread from offset 0), one gzip member or
 * several concatenated (as gzip -d does), into out at its position; *n
 * the bytes written, never more than max (a hostile shard cannot inflate
 * past what a client may write). AIS_OK, or AIS_ERR with err set: not
 * gzip, a corrupt or truncated stream (a CRC or length that does not
 * match), bytes after the last member that are not gzip, more than max
 * bytes inflated, a read or write error. */
int tgzw_decompress(int fd, uint64_t len, uint64_t max, FILE *out, uint64_t *n, buf_t *err);

#endif
