/*
 * tgzw.c - a tar file compressed into a .tgz (tgzw.h): zlib's deflate with
 * the gzip wrapper (windowBits 15 + 16), level 6, one member; the output is
 * complete (gzip trailer written and flushed) when AIS_OK is returned;
 * and back (inflate with the gzip wrapper only, windowBits 15 + 16, each
 * member's CRC-32 and length checked by zlib).
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

int tgzw_decompress(int fd, uint64_t len, uint64_t max, FILE *out, uint64_t *n, buf_t *err)
{
	unsigned char *in = xmalloc(PIECE), *z = xmalloc(PIECE);
	z_stream s;
	memset(&s, 0, sizeof(s));
	*n = 0;
	if (inflateInit2(&s, 15 + 16) != Z_OK) {
		buf_addstr(err, "gunzip: cannot start zlib");
		free(in);
		free(z);
		return AIS_ERR;
	}
	uint64_t at = 0;
	int rc = AIS_OK, zr = Z_OK;
	bool member = false; /* inside a member (its end not seen yet) */
	bool full = false;   /* the last inflate filled its output: it may have more */
	while (rc == AIS_OK && (at < len || s.avail_in || full)) {
		if (!s.avail_in) {
			size_t want = len - at < PIECE ? (size_t)(len - at) : PIECE;
			ssize_t r = pread(fd, in, want, (off_t)at);
			if (r <= 0) {
				buf_addf(err, "gunzip: reading the shard: %s", r < 0 ? strerror(errno) : "short read");
				rc = AIS_ERR;
				break;
			}
			at += (uint64_t)r;
			s.next_in = in;
			s.avail_in = (uInt)r;
		}
		if (zr == Z_STREAM_END && s.avail_in) { /* another member after the last one */
			inflateReset(&s);
			zr = Z_OK;
		}
		member = true;
		s.next_out = z;
		s.avail_out = PIECE;
		zr = inflate(&s, Z_NO_FLUSH);
		size_t have = PIECE - s.avail_out;
		full = s.avail_out == 0;
		if (zr != Z_OK && zr != Z_STREAM_END && !(zr == Z_BUF_ERROR && !have)) {
			buf_addf(err, "not a gzip-compressed shard (%s)", s.msg ? s.msg : "corrupt");
			rc = AIS_ERR;
		} else if (have > max - *n) {
			buf_addf(err, "the shard inflates past %llu bytes (net.max_body)", (unsigned long long)max);
			rc = AIS_ERR;
		} else if (have && fwrite(z, 1, have, out) != have) {
			buf_addf(err, "gunzip: %s", strerror(errno));
			rc = AIS_ERR;
		}
		if (rc == AIS_OK)
			*n += have;
		if (zr == Z_STREAM_END)
			member = false;
	}
	if (rc == AIS_OK && (member || zr != Z_STREAM_END)) {
		buf_addstr(err, len ? "a truncated gzip-compressed shard" : "an empty object is not a gzip-compressed shard");
		rc = AIS_ERR;
	}
	inflateEnd(&s);
	free(in);
	free(z);
	if (rc == AIS_OK && fflush(out) != 0) {
		buf_addf(err, "gunzip: %s", strerror(errno));
		rc = AIS_ERR;
	}
	return rc;
}
