/*
 * tar.c - the tar header parser and the header walker behind archpath reads.
 *
 * tar_parse_header is pure: it reads one 512-byte block, verifies its
 * checksum (unsigned or signed sum, as old tars wrote either) and decodes
 * name, size and type; it never reads outside the block. tar_iter walks a
 * file by pread: one header, then a jump over the member's data rounded up
 * to 512 bytes. Pax 'x' headers and GNU 'L' long names are read (bounded by
 * TAR_PAX_MAX / TAR_LONGNAME_MAX) and applied to the entry that follows.
 * Every step advances by at least one block and every size is checked
 * against the file size before it is used, so a hostile or truncated file
 * ends in a clean error, never a crash, an overread or an endless loop.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "aisd/status.h"
#include "aisd/tar.h"
#include "aisd/banned.h"

/* Header field offsets and lengths (POSIX ustar). */
#define F_NAME 0
#define L_NAME 100
#define F_SIZE 124
#define L_SIZE 12
#define F_CKSUM 148
#define L_CKSUM 8
#define F_TYPE 156
#define F_MAGIC 257
#define F_VERSION 263
#define F_PREFIX 345
#define L_PREFIX 155

static bool is_blank(unsigned char c)
{
	return c == ' ' || c == '\0';
}

int tar_parse_number(const unsigned char *p, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (n == 0)
		return AIS_ERR;
	if (p[0] & 0x80) { /* GNU base-256, big-endian; 0xff: negative */
		if (p[0] == 0xff)
			return AIS_ERR;
		v = p[0] & 0x7f;
		for (i = 1; i < n; i++) {
			if (v > (UINT64_MAX >> 8))
				return AIS_ERR;
			v = (v << 8) | p[i];
		}
		if (v > (uint64_t)INT64_MAX)
			return AIS_ERR;
		*out = v;
		return AIS_OK;
	}
	while (i < n && p[i] == ' ')
		i++;
	for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) {
		if (v > ((uint64_t)INT64_MAX >> 3))
			return AIS_ERR;
		v = (v << 3) | (uint64_t)(p[i] - '0');
	}
	for (; i < n; i++) /* the rest: terminators only */
		if (!is_blank(p[i]))
			return AIS_ERR;
	*out = v;
	return AIS_OK;
}

static enum tar_kind kind_of(char t)
{
	switch (t) {
	case '0': case '\0': case '7': return TAR_FILE;
	case '1': return TAR_HARDLINK;
	case '2': return TAR_SYMLINK;
	case '3': case '4': case '6': return TAR_DEVICE;
	case '5': return TAR_DIR;
	case 'x': return TAR_PAX;
	case 'g': return TAR_PAX_GLOBAL;
	case 'L': return TAR_GNU_LONGNAME;
	case 'K': return TAR_GNU_LONGLINK;
	default: return TAR_OTHER;
	}
}

int tar_parse_header(const unsigned char hdr[TAR_BLOCK], tar_entry_t *out)
{
	uint64_t want, usum = 0;
	int64_t ssum = 0;
	size_t i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < TAR_BLOCK && hdr[i] == 0; i++)
		;
	if (i == TAR_BLOCK)
		return AIS_DONE;
	if (tar_parse_number(hdr + F_CKSUM, L_CKSUM, &want) != AIS_OK) {
		out->err = "not a tar header (bad checksum field)";
		return AIS_ERR;
	}
	for (i = 0; i < TAR_BLOCK; i++) {
		bool in_ck = i >= F_CKSUM && i < F_CKSUM + L_CKSUM;
		usum += in_ck ? ' ' : hdr[i];
		ssum += in_ck ? ' ' : (signed char)hdr[i];
	}
	if (want != usum && (int64_t)want != ssum) {
		out->err = "tar header checksum mismatch";
		return AIS_ERR;
	}
	if (tar_parse_number(hdr + F_SIZE, L_SIZE, &out->size) != AIS_OK) {
		out->err = "bad size field in tar header";
		return AIS_ERR;
	}
	out->typeflag = (char)hdr[F_TYPE];
	out->kind = kind_of(out->typeflag);

	/* name: POSIX ustar ("ustar\0" "00") may put a prefix before it */
	size_t nl = strnlen((const char *)hdr + F_NAME, L_NAME), pl = 0;
	if (!memcmp(hdr + F_MAGIC, "ustar\0", 6) && !memcmp(hdr + F_VERSION, "00", 2))
		pl = strnlen((const char *)hdr + F_PREFIX, L_PREFIX);
	if (pl) {
		memcpy(out->name, hdr + F_PREFIX, pl);
		out->name[pl] = '/';
		pl++;
	}
	memcpy(out->name + pl, hdr + F_NAME, nl);
	out->name_len = pl + nl;
	out->name[out->name_len] = '\0';

	if (out->kind == TAR_FILE && out->name_len && out->name[out->name_len - 1] == '/' &&
	    out->typeflag != '7')
		out->kind = TAR_DIR; /* old tars marked directories by a trailing '/' */
	switch (out->kind) {
	case TAR_HARDLINK: case TAR_SYMLINK: case TAR_DIR: case TAR_DEVICE:
		out->has_data = false;
		break;
	default:
		out->has_data = true;
	}
	return AIS_OK;
}

int tar_pax_find(const char *p, size_t n, const char *key, const char **val, size_t *vlen)
{
	size_t kl = strlen(key), i = 0;
	int rc = AIS_DONE;

	while (i < n) {
		if (p[i] == '\0') /* NUL padding after the last record */
			break;
		/* "LEN key=value\n": LEN counts the whole record */
		uint64_t len = 0;
		size_t j = i;
		while (j < n && p[j] >= '0' && p[j] <= '9' && j - i < 19)
			len = len * 10 + (uint64_t)(p[j++] - '0');
		if (j == i || j >= n || p[j] != ' ' || len < (uint64_t)(j - i) + 3 ||
		    len > (uint64_t)(n - i) || p[i + len - 1] != '\n')
			return AIS_ERR;
		const char *rec = p + j + 1, *end = p + i + len - 1;
		const char *eq = memchr(rec, '=', (size_t)(end - rec));
		if (!eq)
			return AIS_ERR;
		if ((size_t)(eq - rec) == kl && !memcmp(rec, key, kl)) {
			*val = eq + 1; /* later records override earlier ones */
			*vlen = (size_t)(end - eq - 1);
			rc = AIS_OK;
		}
		i += len;
	}
	return rc;
}

void tar_iter_init(tar_iter_t *it, int fd, uint64_t file_size)
{
	memset(it, 0, sizeof(*it));
	it->fd = fd;
	it->file_size = file_size;
}

void tar_iter_free(tar_iter_t *it)
{
	buf_free(&it->name);
	buf_free(&it->next_name);
	buf_free(&it->scratch);
}

static int iter_fail(tar_iter_t *it, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int iter_fail(tar_iter_t *it, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(it->err, sizeof(it->err), fmt, ap);
	va_end(ap);
	it->done = true;
	errno = err;
	return AIS_ERR;
}

/* Reads exactly n bytes at off into p. */
static int read_at(tar_iter_t *it, void *p, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(it->fd, (char *)p + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return iter_fail(it, EIO, "read at offset %" PRIu64 ": %s", off + got, strerror(errno));
		if (r == 0)
			return iter_fail(it, EINVAL, "truncated tar: unexpected end of file at offset %" PRIu64,
					 off + got);
		got += (size_t)r;
	}
	return AIS_OK;
}

int tar_iter_next(tar_iter_t *it, tar_member_t *m)
{
	unsigned char hdr[TAR_BLOCK];
	tar_entry_t e;

	if (it->done)
		return it->err[0] ? (errno = EINVAL, AIS_ERR) : AIS_DONE;
	for (;;) {
		uint64_t pos = it->pos;
		if (pos >= it->file_size) { /* no end-of-archive blocks: accepted */
			if (it->have_next_name || it->have_next_size)
				return iter_fail(it, EINVAL, "truncated tar: extended header at the end");
			it->done = true;
			return AIS_DONE;
		}
		if (it->file_size - pos < TAR_BLOCK)
			return iter_fail(it, EINVAL, "truncated tar: partial header at offset %" PRIu64, pos);
		if (read_at(it, hdr, TAR_BLOCK, pos) != AIS_OK)
			return AIS_ERR;
		int rc = tar_parse_header(hdr, &e);
		if (rc == AIS_DONE) {
			it->done = true;
			return AIS_DONE;
		}
		if (rc != AIS_OK)
			return iter_fail(it, EINVAL, "%s at offset %" PRIu64, e.err, pos);
		if (it->have_next_size && e.kind != TAR_PAX && e.kind != TAR_GNU_LONGNAME &&
		    e.kind != TAR_PAX_GLOBAL)
			e.size = it->next_size;
		uint64_t data = pos + TAR_BLOCK, size = e.has_data ? e.size : 0;
		if (size > it->file_size - data)
			return iter_fail(it, EINVAL,
					 "truncated tar: entry at offset %" PRIu64 " has %" PRIu64
					 " bytes of data but the file ends %" PRIu64 " bytes later",
					 pos, size, it->file_size - data);
		it->pos = data + (size + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;

		switch (e.kind) {
		case TAR_PAX: {
			const char *v;
			size_t vl;
			if (size > TAR_PAX_MAX)
				return iter_fail(it, EINVAL, "pax header at offset %" PRIu64 " too large", pos);
			buf_reset(&it->scratch);
			buf_grow(&it->scratch, (size_t)size + 1);
			if (read_at(it, it->scratch.ptr, (size_t)size, data) != AIS_OK)
				return AIS_ERR;
			const char *p = it->scratch.ptr;
			rc = tar_pax_find(p, (size_t)size, "path", &v, &vl);
			if (rc == AIS_OK) {
				if (vl > TAR_LONGNAME_MAX)
					return iter_fail(it, EINVAL, "pax path at offset %" PRIu64 " too long", pos);
				buf_reset(&it->next_name);
				buf_add(&it->next_name, v, vl);
				it->have_next_name = true;
			}
			if (rc != AIS_ERR)
				rc = tar_pax_find(p, (size_t)size, "size", &v, &vl);
			if (rc == AIS_OK) {
				uint64_t n = 0;
				if (vl == 0 || vl > 19)
					rc = AIS_ERR;
				for (size_t i = 0; rc == AIS_OK && i < vl; i++) {
					if (v[i] < '0' || v[i] > '9')
						rc = AIS_ERR;
					n = n * 10 + (uint64_t)(v[i] - '0');
				}
				it->next_size = n;
				it->have_next_size = true;
			}
			if (rc == AIS_ERR)
				return iter_fail(it, EINVAL, "malformed pax header at offset %" PRIu64, pos);
			continue;
		}
		case TAR_GNU_LONGNAME:
			if (size > TAR_LONGNAME_MAX)
				return iter_fail(it, EINVAL, "GNU long name at offset %" PRIu64 " too long", pos);
			buf_reset(&it->next_name);
			buf_grow(&it->next_name, (size_t)size + 1);
			if (read_at(it, it->next_name.ptr, (size_t)size, data) != AIS_OK)
				return AIS_ERR;
			it->next_name.len = strnlen(it->next_name.ptr, (size_t)size);
			it->next_name.ptr[it->next_name.len] = '\0';
			it->have_next_name = true;
			continue;
		case TAR_PAX_GLOBAL:
		case TAR_GNU_LONGLINK:
			continue;
		case TAR_FILE:
			buf_reset(&it->name);
			if (it->have_next_name)
				buf_add(&it->name, it->next_name.ptr, it->next_name.len);
			else
				buf_add(&it->name, e.name, e.name_len);
			it->have_next_name = it->have_next_size = false;
			m->name = it->name.ptr ? it->name.ptr : "";
			m->name_len = it->name.len;
			m->offset = data;
			m->size = size;
			return AIS_OK;
		default:
			it->have_next_name = it->have_next_size = false;
			continue;
		}
	}
}
