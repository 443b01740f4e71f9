/*
 * tarw.h - writing tar streams: a pure header writer for regular files
 * (POSIX ustar, with a pax extended header before it when the name or the
 * size does not fit ustar), the padding after member data, and the end of
 * archive. Used by GetBatch and archregx to send members out as a tar.
 *
 * The output reads back with tar.c's parser, GNU tar and Python's tarfile.
 * Nothing here allocates except through the buf_t it appends to.
 */
#ifndef AISD_TARW_H
#define AISD_TARW_H

#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"

/*
 * Appends the header block(s) of a regular file called name (len bytes, any
 * bytes but NUL) with size bytes of data: one ustar block when the name fits
 * (100 bytes, or a 155-byte prefix + '/' + 100 bytes) and the size is under
 * 8 GiB, else a pax 'x' header carrying path= and/or size= first. mode 0644,
 * uid/gid 0, mtime_s seconds since the epoch (negative: 0).
 */
void tarw_header(buf_t *out, const char *name, size_t len, uint64_t size, int64_t mtime_s);
/* Bytes of zero padding that follow size bytes of member data (0..511). */
size_t tarw_pad_len(uint64_t size);
/* Appends that padding. */
void tarw_pad(buf_t *out, uint64_t size);
/* Appends the end of archive: two zero blocks. */
void tarw_end(buf_t *out);

#endif
