/*
 * test_tar.c - the tar header parser and walker (src/archive/tar.c) on real
 * archives made here by GNU tar (gnu, posix/pax, ustar formats) and by
 * Python's tarfile (GNU, PAX, USTAR formats): long names (> 100 bytes), pax
 * headers, a 0-byte member, directories and a symlink; on crafted headers
 * (pax size=/path= overrides, GNU 'L', base-256 sizes); and on broken input
 * (every truncation, flipped bytes, absurd sizes, garbage): each must end in
 * members, the end of the archive or a clean error, never a crash or a loop.
 * Then the store's tar index (store_tar_index): built, found, served from
 * LevelDB without reading the file, and gone with its generation (overwrite,
 * delete, bucket destroy) so a stale index is never used.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <leveldb/c.h>

#include "aisd/conf.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/store.h"
#include "aisd/tar.h"
#include "aisd/banned.h"

static char g_dir[256];

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

#define LONGDIR "LLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLL" /* 60 */
#define LONGNAME LONGDIR "/mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm.dat"

/* GNU tar in format %2 of the fixture's files into g_dir/%3 */
#define TAR_CMD "cd %s/src && /usr/bin/tar --format=%s -cf ../%s a.txt empty dir link " LONGDIR " 2>/dev/null"

static const char *const g_members[] = {"a.txt", "empty", "dir/b.bin", LONGNAME};
#define N_MEMBERS 4

static void write_file(const char *rel, const void *p, size_t n)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/src/%s", g_dir, rel);
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	fclose(f);
}

static void sh(const char *fmt, const char *a, const char *b)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), fmt, g_dir, a, b);
	ck_assert_msg(system(cmd) == 0, "command failed: %s", cmd);
}

static void setup(void)
{
	char path[1024], big[2000];
	snprintf(g_dir, sizeof(g_dir), "/tmp/aisd-test-tar-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_dir));
	snprintf(path, sizeof(path), "%s/src", g_dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/src/dir", g_dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/src/" LONGDIR, g_dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	write_file("a.txt", "hello\n", 6);
	write_file("empty", "", 0);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7 + 3);
	write_file("dir/b.bin", big, sizeof(big));
	write_file(LONGNAME, big, 700);
	snprintf(path, sizeof(path), "%s/src/link", g_dir);
	ck_assert_int_eq(symlink("a.txt", path), 0);
}

static void teardown(void)
{
	if (!getenv("KEEP"))
		nftw(g_dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Walks path to the end; returns the final code, the member count in *n.
 * Fails the test if it takes more steps than the file has blocks. */
static int walk(const char *path, tar_member_t *out, size_t max, size_t *n, char *err, size_t errsz)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	tar_iter_t it;
	tar_member_t m;
	int rc;
	size_t steps = 0;
	tar_iter_init(&it, fd, (uint64_t)st.st_size);
	*n = 0;
	while ((rc = tar_iter_next(&it, &m)) == AIS_OK) {
		ck_assert_uint_le(m.offset + m.size, (uint64_t)st.st_size);
		if (*n < max) {
			out[*n] = m;
			out[*n].name = strndup(m.name, m.name_len);
		}
		(*n)++;
		ck_assert_uint_le(++steps, (uint64_t)st.st_size / TAR_BLOCK + 1);
	}
	if (err)
		snprintf(err, errsz, "%s", it.err);
	/* keeps answering the same */
	ck_assert_int_eq(tar_iter_next(&it, &m), rc);
	tar_iter_free(&it);
	close(fd);
	return rc;
}

static void free_members(tar_member_t *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)m[i].name);
}

/* The archive must hold exactly g_members, with the files' bytes. */
static void check_archive(const char *tarname)
{
	char path[1024], err[256], src[1024];
	tar_member_t m[16];
	size_t n;
	snprintf(path, sizeof(path), "%s/%s", g_dir, tarname);
	int rc = walk(path, m, 16, &n, err, sizeof(err));
	ck_assert_msg(rc == AIS_DONE, "%s: %d (%s)", tarname, rc, err);
	ck_assert_msg(n == N_MEMBERS, "%s: %zu members", tarname, n);
	int fd = open(path, O_RDONLY);
	for (size_t k = 0; k < N_MEMBERS; k++) {
		size_t i;
		for (i = 0; i < n; i++)
			if (!strcmp(m[i].name, g_members[k]))
				break;
		ck_assert_msg(i < n, "%s: member %s missing", tarname, g_members[k]);
		snprintf(src, sizeof(src), "%s/src/%s", g_dir, g_members[k]);
		struct stat st;
		ck_assert_int_eq(stat(src, &st), 0);
		ck_assert_uint_eq(m[i].size, (uint64_t)st.st_size);
		char *want = malloc((size_t)st.st_size + 1), *got = malloc((size_t)st.st_size + 1);
		FILE *f = fopen(src, "rb");
		ck_assert_uint_eq(fread(want, 1, (size_t)st.st_size, f), (size_t)st.st_size);
		fclose(f);
		ck_assert_int_eq(pread(fd, got, (size_t)st.st_size, (off_t)m[i].offset), st.st_size);
		ck_assert_msg(!memcmp(want, got, (size_t)st.st_size), "%s: %s bytes differ", tarname,
			      g_members[k]);
		free(want);
		free(got);
	}
	close(fd);
	free_members(m, n < 16 ? n : 16);
}

static const char *const PY_TAR =
	"/usr/bin/python3 -c 'import tarfile,sys,os; os.chdir(sys.argv[1]); "
	"f=tarfile.open(sys.argv[2],\"w\",format=getattr(tarfile,sys.argv[3])); "
	"[f.add(p) for p in sorted(os.listdir(\".\"))]; f.close()' ";

START_TEST(test_gnu_tar_formats)
{
	sh(TAR_CMD, "gnu", "gnu.tar");
	check_archive("gnu.tar");
	sh(TAR_CMD, "posix", "posix.tar");
	check_archive("posix.tar");
	sh(TAR_CMD, "ustar", "ustar.tar");
	check_archive("ustar.tar");
}
END_TEST

static void pytar(const char *tarname, const char *format)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "%s %s/src %s/%s %s", PY_TAR, g_dir, g_dir, tarname, format);
	ck_assert_msg(system(cmd) == 0, "%s", cmd);
	check_archive(tarname);
}

START_TEST(test_python_formats)
{
	pytar("py-gnu.tar", "GNU_FORMAT");
	pytar("py-pax.tar", "PAX_FORMAT");
	pytar("py-ustar.tar", "USTAR_FORMAT");
}
END_TEST

/* Names, offsets and order exactly as GNU tar stored them. */
START_TEST(test_gnu_names_as_stored)
{
	char path[1024];
	tar_member_t m[16];
	size_t n;
	sh("cd %s/src && /usr/bin/tar --format=%s -cf ../%s a.txt dir 2>/dev/null", "gnu", "n.tar");
	snprintf(path, sizeof(path), "%s/n.tar", g_dir);
	ck_assert_int_eq(walk(path, m, 16, &n, NULL, 0), AIS_DONE);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(m[0].name, "a.txt");
	ck_assert_str_eq(m[1].name, "dir/b.bin");
	ck_assert_uint_eq(m[0].offset, 512);
	ck_assert_uint_eq(m[0].size, 6);
	free_members(m, n);
}
END_TEST

/* ---- crafted headers ---------------------------------------------------- */

static void set_cksum(unsigned char *h)
{
	unsigned sum = 0;
	memset(h + 148, ' ', 8);
	for (int i = 0; i < TAR_BLOCK; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
}

static void mkhdr(unsigned char *h, const char *name, uint64_t size, char type)
{
	memset(h, 0, TAR_BLOCK);
	memcpy(h, name, strnlen(name, 100));
	memcpy(h + 100, "0000644", 7);
	snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
	h[156] = (unsigned char)type;
	memcpy(h + 257, "ustar\0" "00", 8);
	set_cksum(h);
}

START_TEST(test_parse_number)
{
	uint64_t v;
	const unsigned char b256[12] = {0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x00};
	const unsigned char neg[12] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	const unsigned char huge[12] = {0x80, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0};
	ck_assert_int_eq(tar_parse_number((const unsigned char *)"0000144\0", 8, &v), AIS_OK);
	ck_assert_uint_eq(v, 100);
	ck_assert_int_eq(tar_parse_number((const unsigned char *)"  144 \0\0", 8, &v), AIS_OK);
	ck_assert_uint_eq(v, 100);
	ck_assert_int_eq(tar_parse_number((const unsigned char *)"\0\0\0\0", 4, &v), AIS_OK);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(tar_parse_number((const unsigned char *)"77777777777", 11, &v), AIS_OK);
	ck_assert_uint_eq(v, 077777777777ULL);
	ck_assert_int_eq(tar_parse_number(b256, 12, &v), AIS_OK);
	ck_assert_uint_eq(v, 256);
	ck_assert_int_eq(tar_parse_number(neg, 12, &v), AIS_ERR);
	ck_assert_int_eq(tar_parse_number(huge, 12, &v), AIS_ERR);
	ck_assert_int_eq(tar_parse_number((const unsigned char *)"12a4", 4, &v), AIS_ERR);
	ck_assert_int_eq(tar_parse_number((const unsigned char *)"18", 2, &v), AIS_ERR);
	ck_assert_int_eq(tar_parse_number((const unsigned char *)"1 2", 3, &v), AIS_ERR);
	ck_assert_int_eq(tar_parse_number((const unsigned char *)"7777777777777777777777", 22, &v),
			 AIS_ERR);
}
END_TEST

START_TEST(test_parse_header)
{
	unsigned char h[TAR_BLOCK];
	tar_entry_t e;

	memset(h, 0, sizeof(h));
	ck_assert_int_eq(tar_parse_header(h, &e), AIS_DONE);
	mkhdr(h, "x/y.jpg", 1234, '0');
	ck_assert_int_eq(tar_parse_header(h, &e), AIS_OK);
	ck_assert_str_eq(e.name, "x/y.jpg");
	ck_assert_uint_eq(e.size, 1234);
	ck_assert_int_eq(e.kind, TAR_FILE);
	ck_assert(e.has_data);
	/* ustar prefix */
	memcpy(h + 345, "some/prefix", 11);
	set_cksum(h);
	ck_assert_int_eq(tar_parse_header(h, &e), AIS_OK);
	ck_assert_str_eq(e.name, "some/prefix/x/y.jpg");
	/* a full 100-byte name without NUL and a full 155-byte prefix */
	memset(h, 'n', 100);
	memset(h + 345, 'p', 155);
	set_cksum(h);
	ck_assert_int_eq(tar_parse_header(h, &e), AIS_OK);
	ck_assert_uint_eq(e.name_len, 256);
	/* bad checksum */
	h[0] ^= 1;
	ck_assert_int_eq(tar_parse_header(h, &e), AIS_ERR);
	ck_assert_ptr_nonnull(e.err);
	/* types */
	mkhdr(h, "d/", 0, '5');
	ck_assert_int_eq(tar_parse_header(h, &e), AIS_OK);
	ck_assert_int_eq(e.kind, TAR_DIR);
	ck_assert(!e.has_data);
	mkhdr(h, "olddir/", 0, '\0');
	ck_assert_int_eq(tar_parse_header(h, &e), AIS_OK);
	ck_assert_int_eq(e.kind, TAR_DIR);
	mkhdr(h, "s", 0, '2');
	ck_assert_int_eq(tar_parse_header(h, &e), AIS_OK);
	ck_assert_int_eq(e.kind, TAR_SYMLINK);
	mkhdr(h, "p", 30, 'x');
	ck_assert_int_eq(tar_parse_header(h, &e), AIS_OK);
	ck_assert_int_eq(e.kind, TAR_PAX);
	mkhdr(h, "././@LongLink", 300, 'L');
	ck_assert_int_eq(tar_parse_header(h, &e), AIS_OK);
	ck_assert_int_eq(e.kind, TAR_GNU_LONGNAME);
	/* not a tar: text */
	memset(h, 'A', sizeof(h));
	ck_assert_int_eq(tar_parse_header(h, &e), AIS_ERR);
	/* a bad size field */
	mkhdr(h, "f", 0, '0');
	memcpy(h + 124, "12x45", 5);
	set_cksum(h);
	ck_assert_int_eq(tar_parse_header(h, &e), AIS_ERR);
}
END_TEST

START_TEST(test_pax_find)
{
	const char *v;
	size_t vl;
	const char rec[] = "30 mtime=1700000000.123456789\n"
			   "12 path=a/b\n"
			   "11 size=42\n";
	ck_assert_int_eq(tar_pax_find(rec, sizeof(rec) - 1, "path", &v, &vl), AIS_OK);
	ck_assert_uint_eq(vl, 3);
	ck_assert(!memcmp(v, "a/b", 3));
	ck_assert_int_eq(tar_pax_find(rec, sizeof(rec) - 1, "size", &v, &vl), AIS_OK);
	ck_assert(vl == 2 && !memcmp(v, "42", 2));
	ck_assert_int_eq(tar_pax_find(rec, sizeof(rec) - 1, "linkpath", &v, &vl), AIS_DONE);
	ck_assert_int_eq(tar_pax_find("99 path=x\n", 10, "path", &v, &vl), AIS_ERR);
	ck_assert_int_eq(tar_pax_find("10 path=x!", 10, "path", &v, &vl), AIS_ERR);
	ck_assert_int_eq(tar_pax_find("5 ab\n", 5, "path", &v, &vl), AIS_ERR);
	ck_assert_int_eq(tar_pax_find("x", 1, "path", &v, &vl), AIS_ERR);
	ck_assert_int_eq(tar_pax_find("0 \n", 3, "path", &v, &vl), AIS_ERR);
}
END_TEST

/* Writes blocks to g_dir/name; returns the path in path. */
static void write_blocks(const char *name, const void *p, size_t n, char *path, size_t psz)
{
	snprintf(path, psz, "%s/%s", g_dir, name);
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	fclose(f);
}

START_TEST(test_crafted_stream)
{
	unsigned char a[TAR_BLOCK * 16];
	char path[1024], err[256];
	tar_member_t m[8];
	size_t n;
	const char pax[] = "22 path=pax/long.name\n10 size=5\n";

	memset(a, 0, sizeof(a));
	mkhdr(a, "glob", 20, 'g'); /* a global header: skipped */
	memcpy(a + 512, "20 comment=global!!\n", 20);
	mkhdr(a + 1024, "PaxHeader", sizeof(pax) - 1, 'x');
	memcpy(a + 1536, pax, sizeof(pax) - 1);
	mkhdr(a + 2048, "short", 0, '0'); /* size 0 in the header, 5 by pax */
	memcpy(a + 2560, "hello", 5);
	mkhdr(a + 3072, "././@LongLink", 8, 'L');
	memcpy(a + 3584, "gnu/long", 8);
	mkhdr(a + 4096, "gnu/lo", 3, '0');
	memcpy(a + 4608, "abc", 3);
	mkhdr(a + 5120, "plain", 1, '0');
	a[5632] = 'z';
	/* then two zero blocks, and junk after them that must not be read */
	memset(a + 512 * 14, 'J', 1024);
	write_blocks("crafted.tar", a, sizeof(a), path, sizeof(path));
	ck_assert_int_eq(walk(path, m, 8, &n, err, sizeof(err)), AIS_DONE);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(m[0].name, "pax/long.name");
	ck_assert_uint_eq(m[0].size, 5);
	ck_assert_uint_eq(m[0].offset, 2560);
	ck_assert_str_eq(m[1].name, "gnu/long");
	ck_assert_uint_eq(m[1].size, 3);
	ck_assert_str_eq(m[2].name, "plain");
	ck_assert_uint_eq(m[2].offset, 5632);
	free_members(m, n);

	/* no end-of-archive blocks: accepted at a block boundary */
	write_blocks("noend.tar", a + 5120, 1024, path, sizeof(path));
	ck_assert_int_eq(walk(path, m, 8, &n, err, sizeof(err)), AIS_DONE);
	ck_assert_uint_eq(n, 1);
	free_members(m, n);

	/* a pax header as the last thing: truncated */
	write_blocks("paxend.tar", a + 1024, 1024, path, sizeof(path));
	ck_assert_int_eq(walk(path, m, 8, &n, err, sizeof(err)), AIS_ERR);

	/* base-256 size far beyond the file */
	mkhdr(a, "big", 0, '0');
	memset(a + 124, 0, 12);
	a[124] = 0x80;
	a[130] = 0x01; /* 2^40 */
	set_cksum(a);
	write_blocks("big.tar", a, 4096, path, sizeof(path));
	ck_assert_int_eq(walk(path, m, 8, &n, err, sizeof(err)), AIS_ERR);
	ck_assert_msg(strstr(err, "truncated"), "%s", err);

	/* a pax header with a bad size= */
	const char badpax[] = "11 size=4x\n";
	memset(a, 0, sizeof(a));
	mkhdr(a, "PaxHeader", sizeof(badpax) - 1, 'x');
	memcpy(a + 512, badpax, sizeof(badpax) - 1);
	mkhdr(a + 1024, "f", 0, '0');
	write_blocks("badpax.tar", a, 4096, path, sizeof(path));
	ck_assert_int_eq(walk(path, m, 8, &n, err, sizeof(err)), AIS_ERR);
	/* a pax header too large */
	mkhdr(a, "PaxHeader", TAR_PAX_MAX + 1, 'x');
	write_blocks("hugepax.tar", a, 4096, path, sizeof(path));
	ck_assert_int_eq(walk(path, m, 8, &n, err, sizeof(err)), AIS_ERR);
}
END_TEST

/* ---- broken archives ---------------------------------------------------- */

START_TEST(test_truncated_everywhere)
{
	char path[1024], cut[1024], err[256];
	tar_member_t m[16];
	size_t n;
	struct stat st;

	sh(TAR_CMD, "posix", "t.tar");
	snprintf(path, sizeof(path), "%s/t.tar", g_dir);
	ck_assert_int_eq(stat(path, &st), 0);
	FILE *f = fopen(path, "rb");
	char *all = malloc((size_t)st.st_size);
	ck_assert_uint_eq(fread(all, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	fclose(f);
	int errs = 0;
	for (off_t len = 0; len < st.st_size; len += len % 512 ? 512 - len % 512 : 37) {
		write_blocks("cut.tar", all, (size_t)len, cut, sizeof(cut));
		int rc = walk(cut, m, 16, &n, err, sizeof(err));
		ck_assert(rc == AIS_DONE || rc == AIS_ERR);
		if (rc == AIS_ERR) {
			ck_assert(err[0]);
			errs++;
		}
		free_members(m, n < 16 ? n : 16);
	}
	ck_assert_int_gt(errs, 0);
	free(all);
}
END_TEST

START_TEST(test_corrupt)
{
	char path[1024], out[1024], err[256];
	tar_member_t m[16];
	size_t n;
	struct stat st;

	sh(TAR_CMD, "gnu", "c.tar");
	snprintf(path, sizeof(path), "%s/c.tar", g_dir);
	ck_assert_int_eq(stat(path, &st), 0);
	size_t size = (size_t)st.st_size;
	unsigned char *all = malloc(size), *bad = malloc(size);
	FILE *f = fopen(path, "rb");
	ck_assert_uint_eq(fread(all, 1, size, f), size);
	fclose(f);

	/* a flipped byte in the first header: checksum mismatch */
	memcpy(bad, all, size);
	bad[10] ^= 0x20;
	write_blocks("c1.tar", bad, size, out, sizeof(out));
	ck_assert_int_eq(walk(out, m, 16, &n, err, sizeof(err)), AIS_ERR);
	ck_assert_msg(strstr(err, "checksum"), "%s", err);
	ck_assert_uint_eq(n, 0);

	/* an absurd size with a valid checksum */
	memcpy(bad, all, size);
	memcpy(bad + 124, "77777777777", 11);
	set_cksum(bad);
	write_blocks("c2.tar", bad, size, out, sizeof(out));
	ck_assert_int_eq(walk(out, m, 16, &n, err, sizeof(err)), AIS_ERR);

	/* every single flipped byte of the first 2 KiB: no crash, no loop */
	for (size_t i = 0; i < 2048 && i < size; i++) {
		memcpy(bad, all, size);
		bad[i] ^= 0xa5;
		write_blocks("c3.tar", bad, size, out, sizeof(out));
		int rc = walk(out, m, 16, &n, err, sizeof(err));
		ck_assert(rc == AIS_DONE || rc == AIS_ERR);
		free_members(m, n < 16 ? n : 16);
	}

	/* not a tar at all; an empty file is an empty archive */
	memset(bad, 'A', size);
	write_blocks("c4.tar", bad, size, out, sizeof(out));
	ck_assert_int_eq(walk(out, m, 16, &n, err, sizeof(err)), AIS_ERR);
	write_blocks("c5.tar", bad, 0, out, sizeof(out));
	ck_assert_int_eq(walk(out, m, 16, &n, err, sizeof(err)), AIS_DONE);
	ck_assert_uint_eq(n, 0);
	write_blocks("c6.tar", bad, 100, out, sizeof(out));
	ck_assert_int_eq(walk(out, m, 16, &n, err, sizeof(err)), AIS_ERR);
	free(all);
	free(bad);
}
END_TEST

/* ---- the store's tar index --------------------------------------------- */

static store_t *open_store(void)
{
	conf_t c;
	store_t *s = NULL;
	buf_t err = BUF_INIT;
	conf_defaults(&c);
	c.n_mountpaths = 1;
	snprintf(c.mountpaths[0], sizeof(c.mountpaths[0]), "%s/mp0", g_dir);
	c.min_free_bytes = 0;
	log_set_level(LOG_ERROR);
	ck_assert_msg(store_open(&c, &s, &err) == AIS_OK, "store_open: %s", err.ptr ? err.ptr : "");
	buf_free(&err);
	return s;
}

static void put_file(store_t *s, const char *obj, const char *tarname)
{
	char path[1024], b[8192];
	store_writer_t *w;
	size_t n;
	snprintf(path, sizeof(path), "%s/%s", g_dir, tarname);
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(store_writer_begin(s, "b", 1, obj, strlen(obj), &w), AIS_OK);
	while ((n = fread(b, 1, sizeof(b), f)) > 0)
		ck_assert_int_eq(store_writer_write(w, b, n), AIS_OK);
	fclose(f);
	ck_assert_int_eq(store_writer_commit(w, CKSUM_NONE, NULL, NULL, NULL), AIS_OK);
	store_writer_free(w);
}

/* Index of b/obj; fd_ok false passes a closed descriptor (only a saved
 * index can answer then). Returns the member count, or -1 with errno. */
static long index_of(store_t *s, const char *obj, bool fd_ok, store_tar_index_t **idx, buf_t *msg)
{
	store_meta_t m;
	int fd;
	ck_assert_int_eq(store_open_obj(s, "b", 1, obj, strlen(obj), &fd, &m), AIS_OK);
	if (!fd_ok)
		close(fd);
	int rc = store_tar_index(s, "b", 1, obj, strlen(obj), &m, fd_ok ? fd : -1, idx, msg);
	int e = errno;
	if (fd_ok)
		close(fd);
	errno = e;
	return rc == AIS_OK ? (long)store_tar_index_count(*idx) : -1;
}

/* Number of tar index keys ("a"...) in the closed store's LevelDB. */
static int count_index_keys(void)
{
	char path[1024], *err = NULL;
	int n = 0;
	snprintf(path, sizeof(path), "%s/mp0/meta", g_dir);
	leveldb_options_t *o = leveldb_options_create();
	leveldb_t *db = leveldb_open(o, path, &err);
	ck_assert_msg(db && !err, "leveldb_open: %s", err ? err : "");
	leveldb_readoptions_t *ro = leveldb_readoptions_create();
	leveldb_iterator_t *it = leveldb_create_iterator(db, ro);
	for (leveldb_iter_seek(it, "a", 1); leveldb_iter_valid(it); leveldb_iter_next(it)) {
		size_t kl;
		const char *k = leveldb_iter_key(it, &kl);
		if (kl < 1 || k[0] != 'a')
			break;
		n++;
	}
	leveldb_iter_destroy(it);
	leveldb_readoptions_destroy(ro);
	leveldb_close(db);
	leveldb_options_destroy(o);
	return n;
}

START_TEST(test_store_index)
{
	store_tar_index_t *idx;
	buf_t msg = BUF_INIT;
	uint64_t off, size;

	sh(TAR_CMD, "gnu", "one.tar");
	sh("cd %s/src && /usr/bin/tar --format=%s -cf ../%s a.txt 2>/dev/null", "posix", "two.tar");
	store_t *s = open_store();
	ck_assert_int_eq(store_bucket_create(s, "b", 1, CKSUM_XXHASH), AIS_OK);
	put_file(s, "s.tar", "one.tar");
	ck_assert_int_eq(index_of(s, "s.tar", true, &idx, &msg), N_MEMBERS);
	ck_assert_int_eq(store_tar_index_find(idx, "dir/b.bin", 9, &off, &size), AIS_OK);
	ck_assert_uint_eq(size, 2000);
	ck_assert_int_eq(store_tar_index_find(idx, LONGNAME, strlen(LONGNAME), &off, &size), AIS_OK);
	ck_assert_uint_eq(size, 700);
	ck_assert_int_eq(store_tar_index_find(idx, "dir", 3, &off, &size), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(store_tar_index_find(idx, "a.txt2", 6, &off, &size), AIS_ERR);
	store_tar_index_free(idx);
	/* saved: answers without reading the file */
	ck_assert_int_eq(index_of(s, "s.tar", false, &idx, &msg), N_MEMBERS);
	store_tar_index_free(idx);

	/* overwrite: the old gen's index goes with the commit */
	put_file(s, "s.tar", "two.tar");
	ck_assert_int_eq(index_of(s, "s.tar", true, &idx, &msg), 1);
	ck_assert_int_eq(store_tar_index_find(idx, "a.txt", 5, &off, &size), AIS_OK);
	ck_assert_uint_eq(size, 6);
	ck_assert_int_eq(store_tar_index_find(idx, "dir/b.bin", 9, &off, &size), AIS_ERR);
	store_tar_index_free(idx);

	/* not a tar: EINVAL with a message, and nothing saved */
	put_file(s, "bad.tar", "src/dir/b.bin");
	ck_assert_int_eq(index_of(s, "bad.tar", true, &idx, &msg), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_msg(msg.len > 0, "no message");
	buf_free(&msg);
	store_close(s);
	ck_assert_int_eq(count_index_keys(), 1);

	/* delete takes its index along; so does bucket destroy */
	s = open_store();
	ck_assert_int_eq(store_delete(s, "b", 1, "s.tar", 5), AIS_OK);
	put_file(s, "t.tar", "one.tar");
	put_file(s, "u.tar", "two.tar");
	ck_assert_int_eq(index_of(s, "t.tar", true, &idx, &msg), N_MEMBERS);
	store_tar_index_free(idx);
	ck_assert_int_eq(index_of(s, "u.tar", true, &idx, &msg), 1);
	store_tar_index_free(idx);
	store_close(s);
	ck_assert_int_eq(count_index_keys(), 2);
	s = open_store();
	ck_assert_int_eq(store_bucket_destroy(s, "b", 1), AIS_OK);
	store_close(s);
	ck_assert_int_eq(count_index_keys(), 0);
}
END_TEST

/* Decoded indexes are cached by version and shared by reference: the
 * same version gives the same index, an overwrite another one; more
 * shards than slots evict the least recently used, and an evicted index a
 * caller still holds stays readable. */
START_TEST(test_store_index_cache)
{
	store_tar_index_t *a, *b, *c, *held;
	buf_t msg = BUF_INIT;
	uint64_t off, size;
	char name[32];

	sh(TAR_CMD, "gnu", "one.tar");
	sh("cd %s/src && /usr/bin/tar --format=%s -cf ../%s a.txt 2>/dev/null", "posix", "two.tar");
	store_t *s = open_store();
	store_meta_t m;
	int fd;
	ck_assert_int_eq(store_bucket_create(s, "b", 1, CKSUM_XXHASH), AIS_OK);
	put_file(s, "s.tar", "one.tar");
	ck_assert_int_eq(store_open_obj(s, "b", 1, "s.tar", 5, &fd, &m), AIS_OK);
	close(fd);
	ck_assert_int_eq(store_tar_index_cached(s, "b", 1, "s.tar", 5, &m, &b), AIS_ERR); /* not built yet */
	ck_assert_int_eq(index_of(s, "s.tar", true, &a, &msg), N_MEMBERS);
	ck_assert_int_eq(index_of(s, "s.tar", false, &b, &msg), N_MEMBERS);
	ck_assert_ptr_eq(a, b);
	store_tar_index_free(b);
	ck_assert_int_eq(store_tar_index_cached(s, "b", 1, "s.tar", 5, &m, &b), AIS_OK);
	ck_assert_ptr_eq(a, b);
	store_tar_index_free(b);
	put_file(s, "s.tar", "two.tar");
	ck_assert_int_eq(store_tar_index_cached(s, "b", 1, "s.tar", 5, &m, &b), AIS_ERR); /* m is gone */
	ck_assert_int_eq(index_of(s, "s.tar", true, &c, &msg), 1);
	ck_assert_ptr_ne(a, c);
	ck_assert_int_eq(store_tar_index_find(a, "dir/b.bin", 9, &off, &size), AIS_OK); /* still the old one */
	store_tar_index_free(c);
	held = a;
	for (int i = 0; i < 70; i++) { /* more than the cache's 64 slots */
		snprintf(name, sizeof(name), "x%03d.tar", i);
		put_file(s, name, "one.tar");
		ck_assert_int_eq(index_of(s, name, true, &b, &msg), N_MEMBERS);
		store_tar_index_free(b);
	}
	ck_assert_int_eq(index_of(s, "x000.tar", true, &b, &msg), N_MEMBERS); /* evicted: decoded anew */
	ck_assert_int_eq(index_of(s, "x000.tar", true, &c, &msg), N_MEMBERS);
	ck_assert_ptr_eq(b, c);
	store_tar_index_free(b);
	store_tar_index_free(c);
	ck_assert_int_eq(store_tar_index_find(held, "dir/b.bin", 9, &off, &size), AIS_OK);
	ck_assert_uint_eq(size, 2000);
	store_tar_index_free(held);
	buf_free(&msg);
	store_close(s);
}
END_TEST

static Suite *tar_suite(void)
{
	Suite *s = suite_create("tar");
	TCase *t = tcase_create("tar");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, test_parse_number);
	tcase_add_test(t, test_parse_header);
	tcase_add_test(t, test_pax_find);
	tcase_add_test(t, test_gnu_tar_formats);
	tcase_add_test(t, test_python_formats);
	tcase_add_test(t, test_gnu_names_as_stored);
	tcase_add_test(t, test_crafted_stream);
	tcase_add_test(t, test_truncated_everywhere);
	tcase_add_test(t, test_corrupt);
	tcase_add_test(t, test_store_index);
	tcase_add_test(t, test_store_index_cache);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tar_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
