/*
 * larc.h - reading compressed shards (.tgz / .tar.gz, .zip) through
 * libarchive: a walker over an open file that yields each regular file's
 * name and size, then (if wanted) its data in pieces.
 *
 * No index is kept: reading a member walks to it, decoding (gzip) or
 * skipping (zip, whose central directory gives every entry's offset and
 * size) what comes before. Memory is libarchive's own decoding state plus
 * the caller's buffer, whatever the shard's size. The file is read with
 * pread at the walker's own offset, so the fd may be shared. Blocking: call
 * from an I/O thread.
 *
 * Nothing is trusted: a file that is not an archive of its kind, a
 * truncated one, a corrupt header or corrupt compressed data ends in
 * AIS_ERR with libarchive's message, never a crash or a loop (fuzz_larc).
 */
#ifndef AISD_LARC_H
#define AISD_LARC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum larc_kind { LARC_NONE, LARC_TGZ, LARC_ZIP };

typedef struct larc larc_t;

/* The kind of shard a name says: ".tgz" and ".tar.gz" are LARC_TGZ,
 * ".zip" LARC_ZIP, else LARC_NONE (".tar" is read by tar.c). */
enum larc_kind larc_kind_of(const char *name, size_t len);
/* Starts reading size bytes of fd (not taken: the caller closes it after
 * larc_close). Returns NULL only when libarchive cannot be set up (out of
 * memory); a bad file shows at the first larc_next. */
larc_t *larc_open(int fd, uint64_t size, enum larc_kind kind);
/* The next regular file: AIS_OK with *name (NUL-terminated, valid until the
 * next call), *len and *size; AIS_DONE at the end; AIS_ERR (larc_error says
 * why). Directories, links and other entries are skipped, and so is the
 * unread data of the current member. */
int larc_next(larc_t *a, const char **name, size_t *len, uint64_t *size);
/* Reads up to n bytes of the current member's data into p: the count, 0 at
 * the member's end, -1 on error (larc_error). */
ssize_t larc_read(larc_t *a, void *p, size_t n);
const char *larc_error(const larc_t *a);
void larc_close(larc_t *a);

#endif
