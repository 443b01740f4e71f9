/*
 * larc.c - compressed shards through libarchive (see larc.h).
 *
 * The reader gives libarchive a read, skip and seek callback over pread at
 * an offset of its own, bounded by the size the caller gives (the object's
 * size from its metadata), so a file that grows or shrinks under it is read
 * as the version that was opened. .tgz enables the gzip filter and the tar
 * format only; .zip the seekable zip format only (it reads the central
 * directory, so sizes are known before the data, even for entries written
 * with data descriptors). Anything else in the file is "not an archive".
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/larc.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define LARC_BLOCK (64 * 1024)

struct larc {
	struct archive *a;
	int fd;
	uint64_t size, pos;
	char buf[LARC_BLOCK];
	bool opened, failed;
	char err[256];
};

enum larc_kind larc_kind_of(const char *name, size_t len)
{
	static const struct { const char *ext; enum larc_kind kind; } exts[] = {
		{".tgz", LARC_TGZ}, {".tar.gz", LARC_TGZ}, {".zip", LARC_ZIP},
	};
	for (size_t i = 0; i < ARRAY_SIZE(exts); i++) {
		size_t el = strlen(exts[i].ext);
		if (len > el && !memcmp(name + len - el, exts[i].ext, el))
			return exts[i].kind;
	}
	return LARC_NONE;
}

static la_ssize_t cb_read(struct archive *a, void *arg, const void **out)
{
	larc_t *r = arg;
	size_t want = (size_t)MIN((uint64_t)LARC_BLOCK, r->size - r->pos);
	*out = r->buf;
	if (want == 0)
		return 0;
	for (;;) {
		ssize_t n = pread(r->fd, r->buf, want, (off_t)r->pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			archive_set_error(a, errno, "read: %s", strerror(errno));
			return -1;
		}
		if (n == 0) {
			archive_set_error(a, EIO, "the file ended early");
			return -1;
		}
		r->pos += (uint64_t)n;
		return n;
	}
}

static la_int64_t cb_skip(struct archive *a, void *arg, la_int64_t n)
{
	larc_t *r = arg;
	uint64_t left = r->size - r->pos;
	uint64_t k = n < 0 ? 0 : MIN((uint64_t)n, left);
	r->pos += k;
	return (la_int64_t)k;
}

static la_int64_t cb_seek(struct archive *a, void *arg, la_int64_t off, int whence)
{
	larc_t *r = arg;
	int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (int64_t)r->pos : (int64_t)r->size;
	int64_t to = base + off;
	if (to < 0 || (uint64_t)to > r->size) {
		archive_set_error(a, EINVAL, "seek outside the file");
		return ARCHIVE_FATAL;
	}
	r->pos = (uint64_t)to;
	return to;
}

larc_t *larc_open(int fd, uint64_t size, enum larc_kind kind)
{
	larc_t *r = xcalloc(1, sizeof(*r));
	r->fd = fd;
	r->size = size;
	r->a = archive_read_new();
	if (!r->a) {
		free(r);
		return NULL;
	}
	if (kind == LARC_ZIP) {
		archive_read_support_format_zip_seekable(r->a);
	} else {
		archive_read_support_filter_gzip(r->a);
		archive_read_support_format_tar(r->a);
	}
	archive_read_set_read_callback(r->a, cb_read);
	archive_read_set_skip_callback(r->a, cb_skip);
	archive_read_set_seek_callback(r->a, cb_seek);
	archive_read_set_callback_data(r->a, r);
	return r;
}

static int fail(larc_t *r, const char *what)
{
	const char *e = archive_error_string(r->a);
	snprintf(r->err, sizeof(r->err), "%s%s%s", what, e ? ": " : "", e ? e : "");
	r->failed = true;
	return AIS_ERR;
}

int larc_next(larc_t *r, const char **name, size_t *len, uint64_t *size)
{
	struct archive_entry *e;

	if (r->failed)
		return AIS_ERR;
	if (!r->opened) {
		r->opened = true;
		if (archive_read_open1(r->a) != ARCHIVE_OK)
			return fail(r, "not a readable archive");
	}
	for (;;) {
		int rc = archive_read_next_header(r->a, &e);
		if (rc == ARCHIVE_EOF)
			return AIS_DONE;
		if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
			return fail(r, "bad archive");
		if (archive_entry_filetype(e) != AE_IFREG)
			continue;
		const char *p = archive_entry_pathname(e);
		if (!p || !*p)
			continue;
		int64_t s = archive_entry_size_is_set(e) ? archive_entry_size(e) : -1;
		if (s < 0) {
			snprintf(r->err, sizeof(r->err), "bad archive: %s has no size", p);
			r->failed = true;
			return AIS_ERR;
		}
		*name = p;
		*len = strlen(p);
		*size = (uint64_t)s;
		return AIS_OK;
	}
}

ssize_t larc_read(larc_t *r, void *p, size_t n)
{
	if (r->failed)
		return -1;
	la_ssize_t got = archive_read_data(r->a, p, n);
	if (got < 0) {
		fail(r, "bad archive data");
		return -1;
	}
	return (ssize_t)got;
}

const char *larc_error(const larc_t *r) { return r->err[0] ? r->err : "bad archive"; }

void larc_close(larc_t *r)
{
	if (!r)
		return;
	archive_read_free(r->a);
	free(r);
}
