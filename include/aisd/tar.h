/*
 * tar.h - reading tar archives (WebDataset shards): a pure header parser and
 * an iterator that walks a file's headers without reading member data.
 *
 * Formats: ustar (POSIX, with the 155-byte name prefix), GNU (long names in
 * 'L' entries, base-256 sizes) and pax (extended headers 'x' whose path= and
 * size= override the next entry; global headers 'g' are skipped), as written
 * by GNU tar, Python's tarfile and the webdataset library. Old v7 headers
 * (no magic) are accepted when their checksum is right.
 *
 * Nothing here trusts the archive: every size is checked against the file
 * size, every header's checksum is verified, and the iterator advances by at
 * least one 512-byte block per step, so it ends (in at most file_size / 512
 * steps) with a member, the end of the archive, or a clean error.
 */
#ifndef AISD_TAR_H
#define AISD_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"

#define TAR_BLOCK 512
#define TAR_NAME_MAX 256              /* ustar: 155 prefix + '/' + 100 name */
#define TAR_LONGNAME_MAX (64 * 1024)  /* GNU 'L' / pax path= names we accept */
#define TAR_PAX_MAX (1024 * 1024)     /* largest pax extended header we read */

enum tar_kind {
	TAR_FILE,       /* '0', '\0', '7': a regular file (data follows) */
	TAR_HARDLINK,   /* '1' (no data) */
	TAR_SYMLINK,    /* '2' (no data) */
	TAR_DIR,        /* '5' (no data) */
	TAR_DEVICE,     /* '3', '4', '6': char/block device, FIFO (no data) */
	TAR_PAX,        /* 'x': pax extended header for the next entry */
	TAR_PAX_GLOBAL, /* 'g': pax global header (skipped) */
	TAR_GNU_LONGNAME, /* 'L': the data is the next entry's name */
	TAR_GNU_LONGLINK, /* 'K': the next entry's link target (skipped) */
	TAR_OTHER,      /* any other type: data of `size` bytes is skipped */
};

/* One parsed header. name is NUL-terminated (prefix + "/" + name for ustar). */
typedef struct tar_entry {
	char name[TAR_NAME_MAX + 1];
	size_t name_len;
	uint64_t size;       /* bytes of data that follow the header */
	char typeflag;       /* the raw type byte */
	enum tar_kind kind;
	bool has_data;       /* data blocks follow (size rounded up to 512) */
	const char *err;     /* on AIS_ERR: why (a static string) */
} tar_entry_t;

/*
 * Parses one 512-byte header block. Returns AIS_OK with *out filled,
 * AIS_DONE for an all-zero block (end of archive), or AIS_ERR with out->err
 * set (bad checksum, bad number, not a tar header). Pure: no I/O, no
 * allocation.
 */
int tar_parse_header(const unsigned char hdr[TAR_BLOCK], tar_entry_t *out);

/* Parses an octal (or GNU base-256) numeric field of n bytes. AIS_OK or
 * AIS_ERR (not a number, negative, over 2^63). */
int tar_parse_number(const unsigned char *p, size_t n, uint64_t *out);

/* A member (regular file) of the archive, as the iterator yields it. */
typedef struct tar_member {
	const char *name; /* valid until the next tar_iter_next; not NUL-free */
	size_t name_len;
	uint64_t offset;  /* of the first data byte in the file */
	uint64_t size;
} tar_member_t;

/*
 * The header walker over an open file: pread()s each header (and pax / GNU
 * long-name data), skips member data. Blocking: call from an I/O thread.
 */
typedef struct tar_iter {
	int fd;
	uint64_t file_size;
	uint64_t pos;        /* offset of the next header */
	buf_t name;          /* current member's name */
	buf_t next_name;     /* from a pax path= or GNU 'L': the next entry's */
	bool have_next_name;
	uint64_t next_size;  /* from a pax size= */
	bool have_next_size;
	buf_t scratch;
	bool done;
	char err[256];       /* on AIS_ERR: what is wrong and where */
} tar_iter_t;

void tar_iter_init(tar_iter_t *it, int fd, uint64_t file_size);
/* Returns AIS_OK with the next regular file in *m, AIS_DONE at the end of
 * the archive, or AIS_ERR with it->err set and errno EINVAL (the file is not
 * a valid tar: bad header, truncated, sizes beyond the file) or EIO (read
 * error). After AIS_DONE or AIS_ERR it keeps returning the same. */
int tar_iter_next(tar_iter_t *it, tar_member_t *m);
void tar_iter_free(tar_iter_t *it);

/* Finds key in pax extended-header records "LEN key=value\n...": finds key's value.
 * Returns AIS_OK with *val / *vlen set, AIS_DONE if key is absent, AIS_ERR
 * when the records are malformed. */
int tar_pax_find(const char *p, size_t n, const char *key, const char **val, size_t *vlen);

#endif
