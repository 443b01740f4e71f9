/*
 * tgzw.c - a tar file compressed into a .tgz (tgzw.h): zlib's deflate with
 * the gzip wrapper (windowBits 15 + 16), level 6, one member; the output is
 * complete (gzip trailer written and flushed) when AIS_OK is returned.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "aisd/status.h"
#include "aisd/tgzw.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define PIECE (64u << 10)

bool tgzw_is_tgz(const char *name, size_t len)
{
	return (len > 4 && !memcmp(name + len - 4, ".tgz", 4)) || (len > 7 && !memcmp(name + len - 7, ".tar.gz", 7));
}

int tgzw_compress(int fd, uint64_t len, FILE *out, buf_t *err) { return tgzw_compress_at(fd, 0, len, out, err); }

int tgzw_compress_at(int fd, uint64_t off, uint64_t len, FILE *out, buf_t *err)
{
	unsigned char *in = xmalloc(PIECE), *z = xmalloc(PIECE);
	z_stream s;
	memset(&s, 0, sizeof(s));
	if (deflateInit2(&s, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		buf_addstr(err, "gzip: cannot start zlib");
		free(in);
		free(z);
		return AIS_ERR;
	}
	uint64_t at = 0;
	int rc = AIS_OK, flush = Z_NO_FLUSH;
	do {
		size_t want = len - at < PIECE ? (size_t)(len - at) : PIECE;
		ssize_t r = want ? pread(fd, in, want, (off_t)(off + at)) : 0;
		if (r < 0 || (size_t)r != want) {
			buf_addf(err, "gzip: reading the tar: %s", r < 0 ? strerror(errno) : "short read");
			rc = AIS_ERR;
			break;
		}
		at += (uint64_t)r;
		flush = at == len ? Z_FINISH : Z_NO_FLUSH;
		s.next_in = in;
		s.avail_in = (uInt)r;
		do {
			s.next_out = z;
			s.avail_out = PIECE;
			int zr = deflate(&s, flush);
			size_t have = PIECE - s.avail_out;
			if (zr == Z_STREAM_ERROR || (have && fwrite(z, 1, have, out) != have)) {
				buf_addf(err, "gzip: %s", zr == Z_STREAM_ERROR ? "zlib stream error" : strerror(errno));
				rc = AIS_ERR;
				break;
			}
		} while (s.avail_out == 0);
	} while (rc == AIS_OK && flush != Z_FINISH);
	deflateEnd(&s);
	free(in);
	free(z);
	if (rc == AIS_OK && fflush(out) != 0) {
		buf_addf(err, "gzip: %s", strerror(errno));
		rc = AIS_ERR;
	}
	return rc;
}
