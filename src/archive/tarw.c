/*
 * tarw.c - the tar writer: headers for regular files, padding, the end.
 *
 * A header is built in a 512-byte block on the stack and appended whole, so
 * out only ever grows by complete blocks. Numbers are octal with a NUL
 * terminator; the checksum is the unsigned sum with the checksum field taken
 * as spaces, written "%06o\0 " as GNU tar does. A name that fits neither the
 * 100-byte name field nor a split at a '/' into the 155-byte prefix and the
 * name, or a size of 8 GiB or more, goes into a pax 'x' header (path=,
 * size=) that precedes the ustar block; the ustar block then carries a
 * truncated name and a zero size, which pax readers override.
 */
#include <stdio.h>
#include <string.h>

#include "aisd/tar.h"
#include "aisd/tarw.h"
#include "aisd/banned.h"

#define USTAR_SIZE_MAX 077777777777ULL /* 11 octal digits */
#define F_NAME 0
#define F_MODE 100
#define F_UID 108
#define F_GID 116
#define F_SIZE 124
#define F_MTIME 136
#define F_CKSUM 148
#define F_TYPE 156
#define F_MAGIC 257
#define F_VERSION 263
#define F_PREFIX 345

/* Writes v in octal into the n-byte field at p: n-1 digits and a NUL. */
static void octal(unsigned char *p, size_t n, uint64_t v)
{
	p[n - 1] = '\0';
	for (size_t i = n - 1; i > 0; i--) {
		p[i - 1] = (unsigned char)('0' + (v & 7));
		v >>= 3;
	}
}

/* Splits name into ustar prefix and name at a '/': returns the length of
 * the prefix (0: no prefix needed) or -1 when it cannot fit. */
static long ustar_split(const char *name, size_t len)
{
	if (len <= 100)
		return 0;
	if (len > 256)
		return -1;
	/* the prefix must be <= 155 bytes and the rest <= 100: find a '/' in
	 * [len - 101, 155] (the slash itself belongs to neither) */
	size_t lo = len - 101;
	for (size_t i = lo; i <= 155 && i < len; i++)
		if (name[i] == '/' && i > 0)
			return (long)i;
	return -1;
}

static void block(buf_t *out, const char *name, size_t len, long split, uint64_t size,
		  int64_t mtime_s, char type)
{
	unsigned char h[TAR_BLOCK];
	unsigned sum = 0;

	memset(h, 0, sizeof(h));
	if (split > 0) {
		memcpy(h + F_PREFIX, name, (size_t)split);
		memcpy(h + F_NAME, name + split + 1, len - (size_t)split - 1);
	} else {
		memcpy(h + F_NAME, name, len < 100 ? len : 100);
	}
	octal(h + F_MODE, 8, 0644);
	octal(h + F_UID, 8, 0);
	octal(h + F_GID, 8, 0);
	octal(h + F_SIZE, 12, size);
	octal(h + F_MTIME, 12, mtime_s > 0 ? (uint64_t)mtime_s : 0);
	h[F_TYPE] = (unsigned char)type;
	memcpy(h + F_MAGIC, "ustar", 6);
	memcpy(h + F_VERSION, "00", 2);
	memset(h + F_CKSUM, ' ', 8);
	for (size_t i = 0; i < TAR_BLOCK; i++)
		sum += h[i];
	octal(h + F_CKSUM, 7, sum);
	h[F_CKSUM + 7] = ' ';
	buf_add(out, h, sizeof(h));
}

/* Appends one pax record "LEN key=value\n" (LEN counts itself). */
static void pax_record(buf_t *rec, const char *key, const char *val, size_t vlen)
{
	size_t base = 1 + strlen(key) + 1 + vlen + 1; /* ' ' key '=' val '\n' */
	size_t digits = 1, total;
	for (;;) {
		total = base + digits;
		size_t d = 1;
		for (size_t t = total; t >= 10; t /= 10)
			d++;
		if (d == digits)
			break;
		digits = d;
	}
	buf_addf(rec, "%zu %s=", total, key);
	buf_add(rec, val, vlen);
	buf_addch(rec, '\n');
}

void tarw_header(buf_t *out, const char *name, size_t len, uint64_t size, int64_t mtime_s)
{
	long split = ustar_split(name, len);
	bool big = size > USTAR_SIZE_MAX;

	if (split < 0 || big) {
		buf_t rec = BUF_INIT;
		if (split < 0)
			pax_record(&rec, "path", name, len);
		if (big) {
			char num[24];
			int n = snprintf(num, sizeof(num), "%llu", (unsigned long long)size);
			pax_record(&rec, "size", num, (size_t)n);
		}
		block(out, "././@PaxHeader", 14, 0, rec.len, mtime_s, 'x');
		buf_add(out, rec.ptr, rec.len);
		tarw_pad(out, rec.len);
		buf_free(&rec);
		if (split < 0)
			split = 0; /* the ustar block keeps the first 100 bytes */
	}
	block(out, name, split == 0 && len > 100 ? 100 : len, split, big ? 0 : size, mtime_s, '0');
}

size_t tarw_pad_len(uint64_t size)
{
	return (size_t)((TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK);
}

void tarw_pad(buf_t *out, uint64_t size)
{
	static const char zero[TAR_BLOCK];
	buf_add(out, zero, tarw_pad_len(size));
}

void tarw_end(buf_t *out)
{
	static const char zero[2 * TAR_BLOCK];
	buf_add(out, zero, sizeof(zero));
}
