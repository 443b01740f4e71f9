/*
 * test_store.c - Check suite of the storage engine (src/store).
 *
 * Every test builds a store with two mountpaths in a fresh mkdtemp directory
 * under /tmp and removes it at the end (KEEP=1 keeps it). Beside the round
 * trips, listing, buckets and restart, the fault suite replaces store_io with
 * a table that fails the k-th call of one kind (open, write with EIO, ENOSPC
 * or a short write, fsync, rename, unlink, close, and for a body spliced
 * from a pipe a short splice, ENOSPC or a pipe that ended), for k = 1, 2, ... until
 * no fault triggers, and asserts after each run that the put either worked
 * or failed cleanly, and that the store still holds either the whole old or
 * the whole new object, with a matching checksum, and nothing else.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <leveldb/c.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "aisd/hrw.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/store.h"
#include "aisd/util.h"
#include "../../src/store/store_int.h" /* the record codec */
#include "aisd/banned.h"

/* ---- fixture ---------------------------------------------------------- */

static char g_dir[256];
static conf_t g_conf;

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static void make_conf(void)
{
	conf_defaults(&g_conf);
	g_conf.n_mountpaths = 2;
	snprintf(g_conf.mountpaths[0], sizeof(g_conf.mountpaths[0]), "%s/mp0", g_dir);
	snprintf(g_conf.mountpaths[1], sizeof(g_conf.mountpaths[1]), "%s/mp1", g_dir);
	g_conf.min_free_bytes = 0;
	g_conf.fsync = CONF_FSYNC_ALWAYS;
}

static void setup(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/aisd-test-store-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_dir));
	log_set_level(LOG_ERROR);
	make_conf();
}

static void teardown(void)
{
	if (!getenv("KEEP"))
		nftw(g_dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static store_t *open_store(void)
{
	store_t *s = NULL;
	buf_t err = BUF_INIT;
	int rc = store_open(&g_conf, &s, &err);
	ck_assert_msg(rc == AIS_OK, "store_open: %s", err.ptr ? err.ptr : "");
	buf_free(&err);
	return s;
}

#define BCK(s) (s), strlen(s)

/* ---- helpers ---------------------------------------------------------- */

static void xxh_hex(const void *p, size_t n, char out[17])
{
	XXH64_canonical_t c;
	XXH64_canonicalFromHash(&c, XXH64(p, n, 0));
	hex_encode(c.digest, 8, out);
}

static void evp_hex(const EVP_MD *md, const void *p, size_t n, char out[65])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;
	ck_assert(EVP_Digest(p, n, d, &dl, md, NULL));
	hex_encode(d, dl, out);
}

static char *pattern(size_t n, unsigned seed)
{
	char *p = xmalloc(n ? n : 1);
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (char)(x >> 16);
	}
	return p;
}

/* Writes obj in chunks of 64 KiB; returns the commit's rc (errno kept). */
static int put_full(store_t *s, const char *b, const char *o, const void *p, size_t n,
		    enum store_cksum want, const char *want_hex, store_meta_t *m)
{
	store_writer_t *w;
	int rc = store_writer_begin(s, BCK(b), BCK(o), &w);
	if (rc != AIS_OK)
		return rc;
	const char *q = p;
	for (size_t off = 0; off < n && rc == AIS_OK; off += 65536)
		rc = store_writer_write(w, q + off, MIN((size_t)65536, n - off));
	if (rc == AIS_OK)
		rc = store_writer_commit(w, want, want_hex, NULL, m);
	int e = errno;
	store_writer_free(w);
	errno = e;
	return rc;
}

static void put_ok(store_t *s, const char *b, const char *o, const void *p, size_t n,
		   store_meta_t *m)
{
	store_meta_t mm;
	int rc = put_full(s, b, o, p, n, CKSUM_NONE, NULL, m ? m : &mm);
	ck_assert_msg(rc == AIS_OK, "put %s/%s: %s", b, o, strerror(errno));
}

static char *read_fd(int fd, size_t *n)
{
	buf_t b = BUF_INIT;
	char tmp[65536];
	ssize_t r;
	while ((r = read(fd, tmp, sizeof(tmp))) > 0)
		buf_add(&b, tmp, (size_t)r);
	ck_assert_int_ge(r, 0);
	return buf_detach(&b, n);
}

/* Reads obj whole; returns its bytes (free) or NULL with errno. */
static char *get(store_t *s, const char *b, const char *o, size_t *n, store_meta_t *m)
{
	int fd;
	if (store_open_obj(s, BCK(b), BCK(o), &fd, m) != AIS_OK)
		return NULL;
	char *p = read_fd(fd, n);
	close(fd);
	ck_assert_uint_eq(*n, m->size);
	return p;
}

static void check_obj(store_t *s, const char *b, const char *o, const void *p, size_t n)
{
	store_meta_t m;
	size_t got;
	char *q = get(s, b, o, &got, &m);
	ck_assert_msg(q != NULL, "get %s/%s: %s", b, o, strerror(errno));
	ck_assert_uint_eq(got, n);
	ck_assert(n == 0 || memcmp(p, q, n) == 0);
	free(q);
}

static int count_files(const char *sub)
{
	int n = 0;
	for (int i = 0; i < 2; i++) {
		char p[1400];
		snprintf(p, sizeof(p), "%s/mp%d/%s", g_dir, i, sub);
		DIR *d = opendir(p);
		if (!d)
			continue;
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			if (de->d_type == DT_DIR) {
				char q[1800];
				snprintf(q, sizeof(q), "%s/%s", sub, de->d_name);
				DIR *d2;
				char full[2200];
				snprintf(full, sizeof(full), "%s/mp%d/%s", g_dir, i, q);
				if ((d2 = opendir(full))) {
					struct dirent *e2;
					while ((e2 = readdir(d2)))
						if (e2->d_name[0] != '.')
							n++;
					closedir(d2);
				}
			} else {
				n++;
			}
		}
		closedir(d);
	}
	return n;
}

/* ---- basic round trips ------------------------------------------------- */

static const char *names[] = {
	"a", "dir/sub/file.bin", "with space", "ünïcødé/日本語", "../../etc/passwd", "a/", "+%&?#",
};

static void mis_cb(void *arg, const char *bck, size_t blen, const char *obj, size_t olen, uint64_t size)
{
	(void)bck, (void)blen, (void)obj, (void)olen, (void)size;
	(*(size_t *)arg)++;
}

/* Objects off their HRW mountpath after an attach. */
static size_t misplaced(store_t *s)
{
	store_cursor_t cur = STORE_CURSOR_INIT;
	size_t n = 0;
	while (store_misplaced(s, &cur, 7, mis_cb, &n) > 0)
		;
	buf_free(&cur.after);
	return n;
}

/* Mountpaths at run time: attach makes objects misplaced but readable;
 * relocate moves each (a write or delete meanwhile wins); detach drains,
 * closes only when empty, refuses the last one; the bucket records follow. */
START_TEST(test_mountpath_attach_detach)
{
	store_t *s = open_store();
	buf_t err = BUF_INIT;
	char mp2[300], name[32];
	char *data[200];
	snprintf(mp2, sizeof(mp2), "%s/mp2", g_dir);
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "o%03d", i);
		data[i] = pattern(100 + (size_t)i * 7, (unsigned)i);
		put_ok(s, "b", name, data[i], 100 + (size_t)i * 7, NULL);
	}
	ck_assert_uint_eq(misplaced(s), 0);
	uint64_t lg = store_layout_gen(s);
	ck_assert_int_eq(store_mp_attach(s, mp2, &err), AIS_OK);
	ck_assert_uint_gt(store_layout_gen(s), lg);
	ck_assert_int_eq(store_mp_attach(s, mp2, &err), AIS_ERR);
	ck_assert_int_eq(errno, EEXIST);
	size_t mis = misplaced(s);
	ck_assert_uint_gt(mis, 20); /* about a third */
	ck_assert_uint_lt(mis, 120);
	for (int i = 0; i < 200; i++) { /* every object reads where it is */
		snprintf(name, sizeof(name), "o%03d", i);
		check_obj(s, "b", name, data[i], 100 + (size_t)i * 7);
	}
	/* a write and a delete before the move: the new version and the delete stand */
	put_ok(s, "b", "o000", "new", 3, NULL);
	ck_assert_int_eq(store_delete(s, BCK("b"), BCK("o001")), AIS_OK);
	store_cursor_t cur = STORE_CURSOR_INIT;
	size_t moved = 0;
	for (int i = 0; i < 200; i++) {
		uint64_t bytes;
		snprintf(name, sizeof(name), "o%03d", i);
		int rc = store_relocate(s, BCK("b"), BCK(name), &bytes);
		ck_assert(rc == AIS_OK || rc == AIS_DONE);
		moved += rc == AIS_OK;
	}
	buf_free(&cur.after);
	ck_assert_uint_le(moved, mis);
	ck_assert_uint_eq(misplaced(s), 0);
	check_obj(s, "b", "o000", "new", 3);
	store_meta_t m;
	ck_assert_int_eq(store_lookup(s, BCK("b"), BCK("o001"), &m), AIS_ERR);
	for (int i = 2; i < 200; i++) {
		snprintf(name, sizeof(name), "o%03d", i);
		check_obj(s, "b", name, data[i], 100 + (size_t)i * 7);
	}
	/* detach mp0: readable while detaching, closed only once empty */
	ck_assert_int_eq(store_mp_detach_begin(s, g_conf.mountpaths[0], &err), AIS_OK);
	bool closed;
	ck_assert_int_eq(store_mp_detach_finish(s, &closed), AIS_AGAIN);
	ck_assert(!closed);
	check_obj(s, "b", "o002", data[2], 114);
	ck_assert_uint_gt(misplaced(s), 0);
	for (int i = 0; i < 200; i++) {
		uint64_t bytes;
		snprintf(name, sizeof(name), "o%03d", i);
		store_relocate(s, BCK("b"), BCK(name), &bytes);
	}
	ck_assert_int_eq(store_mp_detach_finish(s, &closed), AIS_OK);
	ck_assert(closed);
	store_mp_info_t info[4];
	ck_assert_int_eq(store_mp_list(s, info, 4), 2);
	ck_assert_int_eq(store_mp_detach_begin(s, g_conf.mountpaths[0], &err), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(store_mp_detach_begin(s, mp2, &err), AIS_OK);
	ck_assert_int_eq(store_mp_detach_begin(s, g_conf.mountpaths[1], &err), AIS_ERR);
	ck_assert_int_eq(errno, EBUSY); /* the last active one */
	ck_assert_int_eq(store_mp_attach(s, mp2, &err), AIS_OK); /* calls the detach off */
	/* the bucket records are on the mountpaths left */
	store_bucket_t b;
	ck_assert_int_eq(store_bucket_get(s, BCK("b"), &b), AIS_OK);
	for (int i = 2; i < 200; i++) {
		snprintf(name, sizeof(name), "o%03d", i);
		check_obj(s, "b", name, data[i], 100 + (size_t)i * 7);
		free(data[i]);
	}
	free(data[0]);
	free(data[1]);
	store_mp_stats_t st[4];
	int n;
	ck_assert_int_eq(store_stats(s, st, 4, &n), AIS_OK);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(st[0].objects + st[1].objects, 199);
	buf_free(&err);
	store_close(s);
}
END_TEST

START_TEST(test_roundtrip)
{
	store_t *s = open_store();
	size_t sizes[] = {0, 1, 1 << 20};
	ck_assert_int_eq(store_bucket_create(s, BCK("bk"), CKSUM_XXHASH), AIS_OK);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		for (size_t j = 0; j < ARRAY_SIZE(sizes); j++) {
			char *p = pattern(sizes[j], (unsigned)(i * 7 + j));
			char hex[17];
			store_meta_t m, l;
			put_ok(s, "bk", names[i], p, sizes[j], &m);
			xxh_hex(p, sizes[j], hex);
			ck_assert_str_eq(m.cksum, hex);
			ck_assert_int_eq(m.cksum_type, CKSUM_XXHASH);
			ck_assert_uint_eq(m.size, sizes[j]);
			ck_assert_uint_eq(m.version, j + 1);
			check_obj(s, "bk", names[i], p, sizes[j]);
			ck_assert_int_eq(store_lookup(s, BCK("bk"), BCK(names[i]), &l), AIS_OK);
			ck_assert_str_eq(l.cksum, hex);
			ck_assert_uint_eq(l.version, j + 1);
			ck_assert_int_ge(l.mtime_ns, m.mtime_ns);
			free(p);
		}
	}
	/* names never become paths: nothing but mp0 and mp1 in the dir, one
	 * file per object, no temp file */
	ck_assert_int_eq(count_files("obj"), (int)ARRAY_SIZE(names));
	ck_assert_int_eq(count_files("tmp"), 0);
	struct stat st;
	char p[400];
	snprintf(p, sizeof(p), "%s/etc", g_dir);
	ck_assert_int_ne(stat(p, &st), 0);
	store_meta_t m;
	ck_assert_int_eq(store_lookup(s, BCK("bk"), BCK("nope"), &m), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	int fd;
	ck_assert_int_eq(store_open_obj(s, BCK("bk"), BCK("nope"), &fd, &m), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	store_close(s);
}
END_TEST

/* A discarding writer: checksummed and counted, never kept or visible. */
START_TEST(test_writer_discard)
{
	store_t *s = open_store();
	ck_assert_int_eq(store_bucket_create(s, BCK("bk"), CKSUM_XXHASH), AIS_OK);
	size_t n = 3 << 20;
	char *p = pattern(n, 5), hex[17];
	xxh_hex(p, n, hex);
	store_writer_t *w;
	store_meta_t m;
	ck_assert_int_eq(store_writer_begin(s, BCK("bk"), BCK("d"), &w), AIS_OK);
	store_writer_discard(w);
	ck_assert_int_eq(store_writer_write(w, p, n / 2), AIS_OK);
	ck_assert_int_eq(store_writer_write(w, p + n / 2, n - n / 2), AIS_OK);
	ck_assert_int_eq(store_writer_seal(w, CKSUM_XXHASH, "0000000000000000", &m), AIS_ERR); /* checked */
	store_writer_free(w);
	ck_assert_int_eq(store_writer_begin(s, BCK("bk"), BCK("d"), &w), AIS_OK);
	store_writer_discard(w);
	ck_assert_int_eq(store_writer_write(w, p, n), AIS_OK);
	ck_assert_int_eq(store_writer_seal(w, CKSUM_XXHASH, hex, &m), AIS_OK);
	ck_assert_uint_eq(m.size, n);
	ck_assert_str_eq(m.cksum, hex);
	ck_assert_int_eq(store_writer_open_tmp(w), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(store_writer_commit(w, CKSUM_NONE, NULL, NULL, NULL), AIS_ERR);
	ck_assert_int_eq(errno, EINVAL);
	store_writer_free(w);
	ck_assert_int_eq(store_lookup(s, BCK("bk"), BCK("d"), &m), AIS_ERR);
	ck_assert_int_eq(count_files("tmp"), 0);
	/* too late once bytes were kept */
	ck_assert_int_eq(store_writer_begin(s, BCK("bk"), BCK("k"), &w), AIS_OK);
	ck_assert_int_eq(store_writer_write(w, p, 10), AIS_OK);
	store_writer_discard(w);
	ck_assert_int_eq(store_writer_write(w, p + 10, 10), AIS_OK);
	ck_assert_int_eq(store_writer_commit(w, CKSUM_NONE, NULL, NULL, &m), AIS_OK);
	ck_assert_uint_eq(m.size, 20);
	store_writer_free(w);
	check_obj(s, "bk", "k", p, 20);
	free(p);
	store_close(s);
}
END_TEST

/* Bytes that wait in a pipe, spliced into the temp file
 * (store_writer_splice): the object is the bytes, the checksum is theirs
 * (verified against the sender's), a pipe that ends short or a checksum
 * that does not match fails the write with nothing left behind. */
static void pipe_fill(int pfd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t r = write(pfd, p, n);
		ck_assert_int_gt(r, 0);
		p += r;
		n -= (size_t)r;
	}
}

static void big_pipe(int p[2])
{
	ck_assert_int_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	ck_assert_int_ge(fcntl(p[1], F_SETPIPE_SZ, 1 << 20), 1 << 20);
}

START_TEST(test_writer_splice)
{
	store_t *s = open_store();
	ck_assert_int_eq(store_bucket_create(s, BCK("bk"), CKSUM_XXHASH), AIS_OK);
	size_t n = (3 << 20) + 3;
	char *p = pattern(n, 7), hex[17];
	xxh_hex(p, n, hex);
	int pp[2];
	big_pipe(pp);
	store_writer_t *w;
	store_meta_t m;
	/* in pieces: one written, the others spliced, as a body with bytes
	 * that came with its head */
	ck_assert_int_eq(store_writer_begin(s, BCK("bk"), BCK("o"), &w), AIS_OK);
	ck_assert_int_eq(store_writer_write(w, p, 1000), AIS_OK);
	for (size_t off = 1000; off < n;) {
		size_t k = MIN(n - off, (size_t)(700 << 10) + 1);
		pipe_fill(pp[1], p + off, k);
		ck_assert_int_eq(store_writer_splice(w, pp[0], k), AIS_OK);
		off += k;
	}
	ck_assert_int_eq(store_writer_commit(w, CKSUM_XXHASH, hex, NULL, &m), AIS_OK);
	store_writer_free(w);
	ck_assert_uint_eq(m.size, n);
	ck_assert_str_eq(m.cksum, hex);
	check_obj(s, "bk", "o", p, n);

	/* a checksum that does not match: refused, the old object stays */
	ck_assert_int_eq(store_writer_begin(s, BCK("bk"), BCK("o"), &w), AIS_OK);
	pipe_fill(pp[1], p + 1, 1 << 20);
	ck_assert_int_eq(store_writer_splice(w, pp[0], 1 << 20), AIS_OK);
	ck_assert_int_eq(store_writer_commit(w, CKSUM_XXHASH, hex, NULL, &m), AIS_ERR);
	ck_assert_int_eq(errno, EBADMSG);
	ck_assert_int_eq(count_files("tmp"), 0);
	store_writer_free(w);
	check_obj(s, "bk", "o", p, n);

	/* the pipe holds fewer bytes than said (its writer open: EAGAIN) */
	ck_assert_int_eq(store_writer_begin(s, BCK("bk"), BCK("o"), &w), AIS_OK);
	pipe_fill(pp[1], p, 5000);
	ck_assert_int_eq(store_writer_splice(w, pp[0], 9000), AIS_ERR);
	ck_assert_int_eq(errno, EIO);
	ck_assert_int_eq(count_files("tmp"), 0);
	ck_assert_int_eq(store_writer_splice(w, pp[0], 1), AIS_ERR); /* failed for good */
	ck_assert_int_eq(store_writer_commit(w, CKSUM_NONE, NULL, NULL, &m), AIS_ERR);
	store_writer_free(w);
	check_obj(s, "bk", "o", p, n);

	/* the sender gone mid-body: the pipe's writer closed (EOF) */
	ck_assert_int_eq(store_writer_begin(s, BCK("bk"), BCK("o"), &w), AIS_OK);
	pipe_fill(pp[1], p, 3000);
	close(pp[1]);
	ck_assert_int_eq(store_writer_splice(w, pp[0], 3000), AIS_OK);
	ck_assert_int_eq(store_writer_splice(w, pp[0], 10), AIS_ERR);
	ck_assert_int_eq(errno, EIO);
	ck_assert_int_eq(count_files("tmp"), 0);
	store_writer_free(w);
	check_obj(s, "bk", "o", p, n);
	close(pp[0]);
	free(p);
	store_close(s);
}
END_TEST

START_TEST(test_checksums)
{
	store_t *s = open_store();
	size_t n = 300000;
	char *p = pattern(n, 42), xx[17], md5[65], sha[65];
	store_meta_t m;
	xxh_hex(p, n, xx);
	evp_hex(EVP_md5(), p, n, md5);
	evp_hex(EVP_sha256(), p, n, sha);
	ck_assert_int_eq(store_bucket_create(s, BCK("x"), CKSUM_XXHASH), AIS_OK);
	ck_assert_int_eq(store_bucket_create(s, BCK("m"), CKSUM_MD5), AIS_OK);
	ck_assert_int_eq(store_bucket_create(s, BCK("s"), CKSUM_SHA256), AIS_OK);
	ck_assert_int_eq(store_bucket_create(s, BCK("n"), CKSUM_NONE), AIS_OK);

	ck_assert_int_eq(put_full(s, "x", "o", p, n, CKSUM_XXHASH, xx, &m), AIS_OK);
	ck_assert_str_eq(m.cksum, xx);
	ck_assert_int_eq(put_full(s, "m", "o", p, n, CKSUM_MD5, md5, &m), AIS_OK);
	ck_assert_str_eq(m.cksum, md5);
	ck_assert_int_eq(m.cksum_type, CKSUM_MD5);
	ck_assert_int_eq(put_full(s, "s", "o", p, n, CKSUM_SHA256, sha, &m), AIS_OK);
	ck_assert_str_eq(m.cksum, sha);
	ck_assert_int_eq(put_full(s, "n", "o", p, n, CKSUM_NONE, NULL, &m), AIS_OK);
	ck_assert_str_eq(m.cksum, "");
	ck_assert_int_eq(m.cksum_type, CKSUM_NONE);
	/* xxhash is always computed, so it can be verified on any bucket */
	ck_assert_int_eq(put_full(s, "n", "o", p, n, CKSUM_XXHASH, xx, &m), AIS_OK);
	ck_assert_int_eq(put_full(s, "s", "o", p, n, CKSUM_XXHASH, xx, &m), AIS_OK);
	/* upper-case hex from a client is fine */
	char up[65];
	for (size_t i = 0; i <= strlen(md5); i++)
		up[i] = (char)(md5[i] >= 'a' && md5[i] <= 'f' ? md5[i] - 32 : md5[i]);
	ck_assert_int_eq(put_full(s, "m", "o", p, n, CKSUM_MD5, up, &m), AIS_OK);
	ck_assert_uint_eq(m.version, 2);

	/* md5 on an xxhash bucket: EINVAL unless asked for before writing */
	ck_assert_int_eq(put_full(s, "x", "o2", p, n, CKSUM_MD5, md5, &m), AIS_ERR);
	ck_assert_int_eq(errno, EINVAL);
	store_writer_t *w;
	ck_assert_int_eq(store_writer_begin(s, BCK("x"), BCK("o2"), &w), AIS_OK);
	ck_assert_int_eq(store_writer_also(w, CKSUM_MD5), AIS_OK);
	ck_assert_int_eq(store_writer_write(w, p, n), AIS_OK);
	ck_assert_int_eq(store_writer_also(w, CKSUM_SHA256), AIS_ERR); /* too late */
	ck_assert_int_eq(store_writer_commit(w, CKSUM_MD5, md5, "a=1,b=2", &m), AIS_OK);
	ck_assert_str_eq(m.cksum, xx); /* stored: the bucket's type */
	ck_assert_str_eq(m.custom, "a=1,b=2");
	store_writer_free(w);
	ck_assert_int_eq(store_lookup(s, BCK("x"), BCK("o2"), &m), AIS_OK);
	ck_assert_str_eq(m.custom, "a=1,b=2");

	/* mismatch: EBADMSG, old version intact, no temp left */
	char *q = pattern(1000, 7), bad[65];
	evp_hex(EVP_md5(), q, 1000, bad);
	ck_assert_int_eq(put_full(s, "m", "o", q, 1000, CKSUM_MD5, bad + 1, &m), AIS_ERR);
	ck_assert_int_eq(errno, EBADMSG);
	bad[0] = bad[0] == '0' ? '1' : '0';
	ck_assert_int_eq(put_full(s, "m", "o", q, 1000, CKSUM_MD5, bad, &m), AIS_ERR);
	ck_assert_int_eq(errno, EBADMSG);
	ck_assert_int_eq(put_full(s, "x", "new", q, 1000, CKSUM_XXHASH, xx, &m), AIS_ERR);
	ck_assert_int_eq(errno, EBADMSG);
	check_obj(s, "m", "o", p, n);
	ck_assert_int_eq(store_lookup(s, BCK("m"), BCK("o"), &m), AIS_OK);
	ck_assert_uint_eq(m.version, 2);
	ck_assert_str_eq(m.cksum, md5);
	ck_assert_int_eq(store_lookup(s, BCK("x"), BCK("new"), &m), AIS_ERR);
	ck_assert_int_eq(count_files("tmp"), 0);

	enum store_cksum t;
	ck_assert_int_eq(store_cksum_parse(BCK("xxhash64"), &t), AIS_OK);
	ck_assert_int_eq(t, CKSUM_XXHASH);
	ck_assert_int_eq(store_cksum_parse(BCK("SHA256"), &t), AIS_OK);
	ck_assert_int_eq(t, CKSUM_SHA256);
	ck_assert_int_eq(store_cksum_parse(BCK("crc32"), &t), AIS_ERR);
	ck_assert_str_eq(store_cksum_name(CKSUM_MD5), "md5");
	free(p);
	free(q);
	store_close(s);
}
END_TEST

START_TEST(test_overwrite_delete)
{
	store_t *s = open_store();
	store_meta_t m;
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	for (unsigned v = 1; v <= 5; v++) {
		char *p = pattern(1000 * v, v);
		put_ok(s, "b", "obj", p, 1000 * v, &m);
		ck_assert_uint_eq(m.version, v);
		check_obj(s, "b", "obj", p, 1000 * v);
		free(p);
	}
	ck_assert_int_eq(count_files("obj"), 1); /* old versions unlinked */
	store_touch(s, BCK("b"), BCK("obj"), &m); /* fresh: nothing to do */
	ck_assert_int_eq(store_delete(s, BCK("b"), BCK("obj")), AIS_OK);
	ck_assert_int_eq(store_lookup(s, BCK("b"), BCK("obj"), &m), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(store_delete(s, BCK("b"), BCK("obj")), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(count_files("obj"), 0);
	/* a new write after a delete starts at version 1 again */
	put_ok(s, "b", "obj", "x", 1, &m);
	ck_assert_uint_eq(m.version, 1);
	store_close(s);
}
END_TEST

/* Custom metadata set in place: stamped with its time (store_md_time),
 * kept across a reopen, never replaced by metadata set earlier; a copy
 * written with store_writer_md_time carries its sender's time. */
START_TEST(test_md_time)
{
	store_t *s = open_store();
	store_meta_t m, c;
	store_writer_t *w;
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	put_ok(s, "b", "o", "abc", 3, &m);
	ck_assert(m.md_ns == 0 && store_md_time(&m) == m.mtime_ns);
	int64_t t1 = m.mtime_ns + 1000;
	ck_assert_int_eq(store_set_custom(s, BCK("b"), BCK("o"), m.version, "s3.acl=private", t1), AIS_OK);
	ck_assert_int_eq(store_set_custom(s, BCK("b"), BCK("o"), m.version, "s3.acl=public", t1 - 1), AIS_ERR);
	ck_assert_int_eq(errno, ESTALE); /* set earlier than what is there */
	ck_assert_int_eq(store_set_custom(s, BCK("b"), BCK("o"), m.version + 1, "x=1", t1 + 1), AIS_ERR);
	ck_assert_int_eq(errno, ESTALE); /* another version */
	store_close(s);
	s = open_store();
	store_reconcile_wait(s);
	ck_assert_int_eq(store_lookup(s, BCK("b"), BCK("o"), &c), AIS_OK);
	ck_assert_str_eq(c.custom, "s3.acl=private");
	ck_assert(c.md_ns == t1 && store_md_time(&c) == t1 && c.version == m.version);
	/* a copy: its metadata time is its sender's, not when it landed */
	ck_assert_int_eq(store_writer_begin(s, BCK("b"), BCK("copy"), &w), AIS_OK);
	ck_assert_int_eq(store_writer_write(w, "abc", 3), AIS_OK);
	store_writer_md_time(w, 42);
	ck_assert_int_eq(store_writer_commit(w, CKSUM_NONE, NULL, "s3.acl=x", &c), AIS_OK);
	store_writer_free(w);
	ck_assert(c.md_ns == 42 && store_md_time(&c) == 42);
	/* an overwrite is a new write: its metadata is as written */
	put_ok(s, "b", "o", "abcd", 4, &c);
	ck_assert(c.md_ns == 0 && c.custom[0] == '\0');
	store_close(s);
}
END_TEST

/* Stamps (store_stamp): a client's write is stamped as it begins and keeps
 * it across a reopen; a copy keeps its sender's (store_writer_origin,
 * store_writer_stamp); a client's write over a copy stamped later, or
 * after a later delete (store_writer_after), is stamped above it; a record without a stamp (written before them) reads
 * its mtime as its stamp, and one with a stamp but no md_ns keeps md_ns 0. */
START_TEST(test_stamps)
{
	store_t *s = open_store();
	store_meta_t m, c;
	store_writer_t *w;
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	ck_assert_int_eq(store_writer_begin(s, BCK("b"), BCK("o"), &w), AIS_OK);
	int64_t st = store_writer_stamp_of(w);
	ck_assert_int_gt(st, 0);
	ck_assert_int_eq(store_writer_write(w, "abc", 3), AIS_OK);
	ck_assert_int_eq(store_writer_commit(w, CKSUM_NONE, NULL, NULL, &m), AIS_OK);
	store_writer_free(w);
	ck_assert(m.stamp == st && store_stamp(&m) == st);
	/* copies keep their sender's stamp */
	int64_t later = time_now_ns() + 3600 * 1000000000LL;
	ck_assert_int_eq(store_writer_begin(s, BCK("b"), BCK("copy"), &w), AIS_OK);
	ck_assert_int_eq(store_writer_write(w, "abc", 3), AIS_OK);
	store_writer_origin(w, later);
	ck_assert_int_eq(store_writer_stamp_of(w), later);
	ck_assert_int_eq(store_writer_commit(w, CKSUM_NONE, NULL, NULL, &c), AIS_OK);
	store_writer_free(w);
	ck_assert_int_eq(c.stamp, later);
	ck_assert_int_eq(store_writer_begin(s, BCK("b"), BCK("replica"), &w), AIS_OK);
	ck_assert_int_eq(store_writer_write(w, "abc", 3), AIS_OK);
	store_writer_stamp(w, 77);
	ck_assert_int_eq(store_writer_commit(w, CKSUM_NONE, NULL, NULL, &c), AIS_OK);
	store_writer_free(w);
	ck_assert_int_eq(store_stamp(&c), 77);
	/* a client's overwrite of the copy stamped an hour ahead: stamped after it */
	put_ok(s, "b", "copy", "abcd", 4, &c);
	ck_assert_int_gt(c.stamp, later);
	/* a client's write that a delete came before (its tombstone's stamp):
	 * stamped above it, sealed or not; an older delete or a copy: unchanged */
	ck_assert_int_eq(store_writer_begin(s, BCK("b"), BCK("after"), &w), AIS_OK);
	int64_t st2 = store_writer_stamp_of(w);
	store_writer_after(w, st2 - 10);
	ck_assert_int_eq(store_writer_stamp_of(w), st2);
	ck_assert_int_eq(store_writer_write(w, "abc", 3), AIS_OK);
	ck_assert_int_eq(store_writer_seal(w, CKSUM_NONE, NULL, NULL), AIS_OK);
	store_writer_after(w, later + 5);
	ck_assert_int_gt(store_writer_stamp_of(w), later + 5);
	ck_assert_int_eq(store_writer_commit(w, CKSUM_NONE, NULL, NULL, &c), AIS_OK);
	store_writer_free(w);
	ck_assert_int_gt(c.stamp, later + 5);
	ck_assert_int_eq(store_writer_begin(s, BCK("b"), BCK("replica2"), &w), AIS_OK);
	store_writer_stamp(w, 99);
	store_writer_after(w, later + 10);
	ck_assert_int_eq(store_writer_stamp_of(w), 99);
	store_writer_free(w);
	store_close(s);
	s = open_store();
	store_reconcile_wait(s);
	ck_assert_int_eq(store_lookup(s, BCK("b"), BCK("o"), &c), AIS_OK);
	ck_assert_int_eq(c.stamp, st);
	store_close(s);
	/* the record codec: old records, and a stamp without md_ns */
	store_rec_t r, d;
	buf_t b = BUF_INIT;
	memset(&r, 0, sizeof(r));
	r.m.size = 3;
	r.m.mtime_ns = 1000;
	store_rec_encode(&b, &r);
	ck_assert_int_eq(store_rec_decode(b.ptr, b.len, &d), AIS_OK);
	ck_assert(d.m.stamp == 0 && store_stamp(&d.m) == 1000 && d.m.md_ns == 0);
	r.m.stamp = 5000;
	store_rec_encode(&b, &r);
	ck_assert_int_eq(store_rec_decode(b.ptr, b.len, &d), AIS_OK);
	ck_assert(d.m.stamp == 5000 && d.m.md_ns == 0 && store_md_time(&d.m) == 1000);
	r.m.md_ns = 3000;
	store_rec_encode(&b, &r);
	ck_assert_int_eq(store_rec_decode(b.ptr, b.len, &d), AIS_OK);
	ck_assert(d.m.stamp == 5000 && d.m.md_ns == 3000);
	ck_assert_int_eq(store_rec_decode(b.ptr, b.len - 1, &d), AIS_ERR); /* a stamp cut short */
	buf_free(&b);
}
END_TEST

/* Tombstones: kept and answered while younger than the ttl, swept after;
 * a copy of a write older than a tombstone does not commit (ESTALE), a
 * newer one does; a ttl of 0 keeps none. */
START_TEST(test_tombstones)
{
	g_conf.tomb_ttl_ms = 300;
	store_t *s = open_store();
	store_meta_t m;
	store_writer_t *w;
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	put_ok(s, "b", "obj", "old", 3, &m);
	int64_t t0 = time_now_ns();
	ck_assert_int_eq(store_tomb_put(s, BCK("b"), BCK("obj"), t0), AIS_OK);
	ck_assert_int_eq(store_delete(s, BCK("b"), BCK("obj")), AIS_OK);
	ck_assert(store_tomb_get(s, BCK("b"), BCK("obj")) == t0);
	ck_assert(store_tomb_get(s, BCK("b"), BCK("other")) == 0);
	/* the old version offered again: refused */
	ck_assert_int_eq(store_writer_begin(s, BCK("b"), BCK("obj"), &w), AIS_OK);
	store_writer_origin(w, m.mtime_ns);
	ck_assert_int_eq(store_writer_write(w, "old", 3), AIS_OK);
	ck_assert_int_eq(store_writer_commit(w, CKSUM_NONE, NULL, NULL, NULL), AIS_ERR);
	ck_assert_int_eq(errno, ESTALE);
	store_writer_free(w);
	ck_assert_int_eq(store_lookup(s, BCK("b"), BCK("obj"), &m), AIS_ERR);
	/* a version written after the delete: taken */
	ck_assert_int_eq(store_writer_begin(s, BCK("b"), BCK("obj"), &w), AIS_OK);
	store_writer_origin(w, t0 + 1);
	ck_assert_int_eq(store_writer_write(w, "new", 3), AIS_OK);
	ck_assert_int_eq(store_writer_commit(w, CKSUM_NONE, NULL, NULL, NULL), AIS_OK);
	store_writer_free(w);
	check_obj(s, "b", "obj", "new", 3);
	/* past the ttl: not answered, and swept */
	ck_assert_int_eq(store_tomb_put(s, BCK("b"), BCK("x"), time_now_ns()), AIS_OK);
	usleep(400 * 1000);
	ck_assert(store_tomb_get(s, BCK("b"), BCK("x")) == 0);
	ck_assert_uint_eq(store_tomb_sweep(s), 2);
	ck_assert_uint_eq(store_tomb_sweep(s), 0);
	store_close(s);
	/* ttl 0: none kept */
	g_conf.tomb_ttl_ms = 0;
	s = open_store();
	ck_assert_int_eq(store_tomb_put(s, BCK("b"), BCK("y"), time_now_ns()), AIS_OK);
	ck_assert(store_tomb_get(s, BCK("b"), BCK("y")) == 0);
	store_close(s);
}
END_TEST

/*
 * store_touch is called on event loops: it must not wait for a commit in
 * progress, which holds its mountpath's commit mutex across its synced
 * LevelDB write. The overwrite below is held inside that mutex (in the
 * unlink of the old gen) while store_touch runs.
 */
static atomic_int g_hold_unlink; /* 1: the next unlink waits; 2: one is waiting */
static int (*g_real_unlink)(const char *path);

static int held_unlink(const char *path)
{
	int one = 1;
	if (atomic_compare_exchange_strong(&g_hold_unlink, &one, 2))
		for (int i = 0; i < 300 && atomic_load(&g_hold_unlink) == 2; i++)
			usleep(10000); /* at most 3 s */
	return g_real_unlink(path);
}

static void *overwrite_main(void *arg)
{
	put_ok(arg, "b", "obj", "new", 3, NULL);
	return NULL;
}

START_TEST(test_touch_during_commit)
{
	store_t *s = open_store();
	store_meta_t m;
	pthread_t th;
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	put_ok(s, "b", "obj", "old", 3, &m);
	g_real_unlink = store_io.unlink;
	store_io.unlink = held_unlink;
	atomic_store(&g_hold_unlink, 1);
	ck_assert_int_eq(pthread_create(&th, NULL, overwrite_main, s), 0);
	for (int i = 0; i < 1000 && atomic_load(&g_hold_unlink) != 2; i++)
		usleep(10000);
	ck_assert_int_eq(atomic_load(&g_hold_unlink), 2); /* the commit is in its mutex now */
	m.atime_ns = 0; /* due for an update */
	int64_t t0 = time_mono_ns();
	store_touch(s, BCK("b"), BCK("obj"), &m);
	int64_t took = time_mono_ns() - t0;
	atomic_store(&g_hold_unlink, 0);
	pthread_join(th, NULL);
	store_io.unlink = g_real_unlink;
	ck_assert_msg(took < 500000000, "store_touch waited %.3f s for a commit", (double)took / 1e9);
	ck_assert_int_eq(store_lookup(s, BCK("b"), BCK("obj"), &m), AIS_OK);
	ck_assert_uint_eq(m.version, 2);
	store_close(s); /* writes the queued update */
}
END_TEST

START_TEST(test_old_reader_during_overwrite)
{
	store_t *s = open_store();
	size_t n = 1 << 20, got;
	char *old = pattern(n, 1), *nw = pattern(n / 2, 2);
	store_meta_t m, m2;
	int fd;
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	put_ok(s, "b", "o", old, n, NULL);
	ck_assert_int_eq(store_open_obj(s, BCK("b"), BCK("o"), &fd, &m), AIS_OK);
	ck_assert_uint_eq(m.version, 1);
	put_ok(s, "b", "o", nw, n / 2, NULL);
	put_ok(s, "b", "o", nw, n / 2, NULL);
	char *q = read_fd(fd, &got); /* the old fd still reads the whole old */
	close(fd);
	ck_assert_uint_eq(got, n);
	ck_assert(memcmp(q, old, n) == 0);
	free(q);
	char *r = get(s, "b", "o", &got, &m2);
	ck_assert_uint_eq(m2.version, 3);
	ck_assert_uint_eq(got, n / 2);
	ck_assert(memcmp(r, nw, n / 2) == 0);
	free(r);
	ck_assert_int_eq(store_delete(s, BCK("b"), BCK("o")), AIS_OK);
	free(old);
	free(nw);
	store_close(s);
}
END_TEST

/* ---- concurrency: readers always get the meta of the bytes they read ---- */

typedef struct race {
	store_t *s;
	_Atomic int stop;
	_Atomic int bad, reads; /* two readers count */
} race_t;

static void *race_reader(void *arg)
{
	race_t *r = arg;
	while (!r->stop) {
		store_meta_t m;
		size_t n;
		char hex[17];
		char *p = get(r->s, "b", "hot", &n, &m);
		if (!p) {
			r->bad++;
			continue;
		}
		xxh_hex(p, n, hex);
		if (strcmp(hex, m.cksum) != 0)
			r->bad++;
		r->reads++;
		free(p);
	}
	return NULL;
}

START_TEST(test_concurrent_overwrite_read)
{
	g_conf.fsync = CONF_FSYNC_NEVER;
	store_t *s = open_store();
	race_t r = {.s = s};
	pthread_t th[2];
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	char *p = pattern(4096, 0);
	put_ok(s, "b", "hot", p, 4096, NULL);
	free(p);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, race_reader, &r);
	/* 300 versions, and more until the readers have read 20 times while
	 * they change (a loaded machine may not run them at first); bounded */
	for (unsigned v = 1; v < 300 || (r.reads < 20 && v < 20000); v++) {
		p = pattern(1000 + (v % 2000) * 13, v);
		put_ok(s, "b", "hot", p, 1000 + (v % 2000) * 13, NULL);
		free(p);
	}
	r.stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(r.bad, 0);
	ck_assert_int_ge(r.reads, 20);
	ck_assert_int_eq(count_files("obj"), 1);
	store_close(s);
}
END_TEST

/* ---- listing ------------------------------------------------------------ */

typedef struct lst {
	buf_t names; /* names joined by '\n' */
	int n;
	char last[256];
} lst_t;

static void lst_cb(void *arg, const char *name, size_t len, const store_meta_t *m)
{
	lst_t *l = arg;
	buf_add(&l->names, name, len);
	buf_addch(&l->names, '\n');
	snprintf(l->last, sizeof(l->last), "%.*s", (int)len, name);
	ck_assert_uint_eq(m->size, len);
	l->n++;
}

static int list(store_t *s, const char *b, const char *pfx, const char *sa, size_t limit,
		lst_t *l, bool *more)
{
	buf_reset(&l->names);
	l->n = 0;
	return store_list(s, BCK(b), BCK(pfx), BCK(sa), limit, lst_cb, l, more);
}

START_TEST(test_list)
{
	g_conf.fsync = CONF_FSYNC_NEVER;
	store_t *s = open_store();
	lst_t l = {BUF_INIT, 0, ""};
	bool more;
	char name[64];
	int per_mp[2] = {0, 0};
	uint64_t dig[2] = {hrw_digest(g_conf.mountpaths[0], strlen(g_conf.mountpaths[0])),
			   hrw_digest(g_conf.mountpaths[1], strlen(g_conf.mountpaths[1]))};

	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	ck_assert_int_eq(store_bucket_create(s, BCK("b2"), CKSUM_XXHASH), AIS_OK);
	ck_assert_int_eq(store_bucket_create(s, BCK("a"), CKSUM_XXHASH), AIS_OK);
	/* inserted in reverse order; the value is the name so size = len */
	for (int i = 99; i >= 0; i--) {
		for (int k = 0; k < 2; k++) {
			snprintf(name, sizeof(name), "%s/%03d", k ? "y" : "x", i);
			put_ok(s, "b", name, name, strlen(name), NULL);
			char un[80];
			snprintf(un, sizeof(un), "b/%s", name);
			per_mp[hrw_owner(hrw_name_hash(un, strlen(un)), dig, 2)]++;
		}
	}
	ck_assert_int_gt(per_mp[0], 20); /* both mountpaths are used */
	ck_assert_int_gt(per_mp[1], 20);
	put_ok(s, "b2", "x/000", "x/000", 5, NULL);  /* other buckets are not listed */
	put_ok(s, "a", "zzz", "zzz", 3, NULL);

	ck_assert_int_eq(list(s, "b", "", "", 0, &l, &more), AIS_OK);
	ck_assert_int_eq(l.n, 200);
	ck_assert(!more);
	ck_assert(!strncmp(l.names.ptr, "x/000\nx/001\n", 12));
	ck_assert_str_eq(l.last, "y/099");
	for (size_t i = 6; i < l.names.len; i += 6) /* sorted */
		ck_assert(memcmp(l.names.ptr + i - 6, l.names.ptr + i, 5) < 0);

	ck_assert_int_eq(list(s, "b", "y/", "", 0, &l, &more), AIS_OK);
	ck_assert_int_eq(l.n, 100);
	ck_assert(!strncmp(l.names.ptr, "y/000\n", 6));
	ck_assert_int_eq(list(s, "b", "y/05", "", 0, &l, &more), AIS_OK);
	ck_assert_int_eq(l.n, 10);
	ck_assert_int_eq(list(s, "b", "z", "", 0, &l, &more), AIS_OK);
	ck_assert_int_eq(l.n, 0);

	/* start_after: exact name, name between, name before the prefix */
	ck_assert_int_eq(list(s, "b", "", "x/050", 0, &l, &more), AIS_OK);
	ck_assert_int_eq(l.n, 149);
	ck_assert(!strncmp(l.names.ptr, "x/051\n", 6));
	ck_assert_int_eq(list(s, "b", "", "x/050a", 0, &l, &more), AIS_OK);
	ck_assert_int_eq(l.n, 149);
	ck_assert_int_eq(list(s, "b", "y/", "a", 0, &l, &more), AIS_OK);
	ck_assert_int_eq(l.n, 100);
	ck_assert_int_eq(list(s, "b", "y/", "y/098", 0, &l, &more), AIS_OK);
	ck_assert_int_eq(l.n, 1);
	ck_assert_int_eq(list(s, "b", "x/", "y/000", 0, &l, &more), AIS_OK);
	ck_assert_int_eq(l.n, 0);

	/* pagination: limit 30 pages through all 200, more set on all but last */
	char after[256] = "";
	int total = 0, pages = 0;
	do {
		ck_assert_int_eq(list(s, "b", "", after, 30, &l, &more), AIS_OK);
		ck_assert_int_le(l.n, 30);
		total += l.n;
		pages++;
		snprintf(after, sizeof(after), "%s", l.last);
	} while (more);
	ck_assert_int_eq(total, 200);
	ck_assert_int_eq(pages, 7);
	ck_assert_int_eq(list(s, "b", "", "", 200, &l, &more), AIS_OK);
	ck_assert(!more);
	ck_assert_int_eq(list(s, "b", "", "", 199, &l, &more), AIS_OK);
	ck_assert(more);

	ck_assert_int_eq(list(s, "b2", "", "", 0, &l, &more), AIS_OK);
	ck_assert_int_eq(l.n, 1);
	ck_assert_int_eq(list(s, "nob", "", "", 0, &l, &more), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	buf_free(&l.names);
	store_close(s);
}
END_TEST

static void count_cb(void *arg, const char *name, size_t len, const store_meta_t *m)
{
	(void)name, (void)len, (void)m;
	(*(int *)arg)++;
}

START_TEST(test_list_speed)
{
	/* 20,000 objects, pages of 5,000: each page must be far below 1 s
	 * (1M objects in pages of 10,000 is the target; this scales) */
	g_conf.fsync = CONF_FSYNC_NEVER;
	store_t *s = open_store();
	char name[64];
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_NONE), AIS_OK);
	for (int i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "shard-%06d.tar", i);
		put_ok(s, "b", name, "", 0, NULL);
	}
	char after[64] = "";
	for (int page = 0; page < 4; page++) {
		int n = 0;
		bool more;
		int64_t t0 = time_mono_ns();
		ck_assert_int_eq(store_list(s, BCK("b"), "", 0, BCK(after), 5000, count_cb, &n, &more),
				 AIS_OK);
		int64_t dt = time_mono_ns() - t0;
		ck_assert_int_eq(n, 5000);
		ck_assert(more == (page < 3));
		ck_assert_msg(dt < 200000000, "page %d took %" PRId64 " ms", page, dt / 1000000);
		snprintf(after, sizeof(after), "shard-%06d.tar", (page + 1) * 5000 - 1);
	}
	store_close(s);
}
END_TEST

/* ---- buckets and restart ----------------------------------------------- */

/* A destroy cut by a crash (bucket.c rules 1-4): the mark written with the
 * bucket key's removal, none of the objects removed yet. */
static void cut_destroy(store_t *s, const char *bck)
{
	char *err = NULL;
	char k[64];
	size_t n = strlen(bck);
	leveldb_writebatch_t *wb = leveldb_writebatch_create();

	k[0] = 'b';
	memcpy(k + 1, bck, n);
	leveldb_writebatch_delete(wb, k, n + 1);
	k[0] = 'X';
	leveldb_writebatch_put(wb, k, n + 1, "", 0);
	leveldb_write(s->mp[0].db, s->wo_commit, wb, &err);
	ck_assert_ptr_null(err);
	leveldb_writebatch_destroy(wb);
}

START_TEST(test_bucket_destroy_cut)
{
	store_t *s = open_store();
	store_meta_t m;

	ck_assert_int_eq(store_bucket_create(s, BCK("b1"), CKSUM_NONE), AIS_OK);
	ck_assert_int_eq(store_bucket_create(s, BCK("b2"), CKSUM_NONE), AIS_OK);
	for (int i = 0; i < 30; i++) {
		char o[32];
		snprintf(o, sizeof(o), "obj%d", i);
		put_ok(s, "b1", o, o, strlen(o), NULL);
		put_ok(s, "b2", o, o, strlen(o), NULL);
	}
	/* created again while the mark is there: the old objects go first */
	cut_destroy(s, "b1");
	ck_assert_int_eq(store_bucket_get(s, BCK("b1"), &(store_bucket_t){0}), AIS_ERR);
	ck_assert_int_eq(store_bucket_create(s, BCK("b1"), CKSUM_NONE), AIS_OK);
	ck_assert_int_eq(store_lookup(s, BCK("b1"), BCK("obj1"), &m), AIS_ERR);
	ck_assert_int_eq(count_files("obj"), 30);
	/* found at the next open: finished in the background */
	cut_destroy(s, "b2");
	store_close(s);
	s = open_store();
	store_reconcile_wait(s);
	ck_assert_int_eq(count_files("obj"), 0);
	ck_assert_int_eq(store_bucket_create(s, BCK("b2"), CKSUM_NONE), AIS_OK);
	ck_assert_int_eq(store_lookup(s, BCK("b2"), BCK("obj1"), &m), AIS_ERR);
	size_t vl = 0;
	char *v = store_db_get(s, &s->mp[0], "Xb2", 3, NULL, &vl);
	ck_assert_ptr_null(v);
	store_close(s);
}
END_TEST

START_TEST(test_buckets)
{
	store_t *s = open_store();
	store_bucket_t b, *bl;
	size_t n;
	store_meta_t m;
	store_writer_t *w;

	ck_assert_int_eq(store_bucket_get(s, BCK("b1"), &b), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(store_writer_begin(s, BCK("b1"), BCK("o"), &w), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(store_bucket_create(s, BCK("b1"), CKSUM_MD5), AIS_OK);
	ck_assert_int_eq(store_bucket_create(s, BCK("b1"), CKSUM_MD5), AIS_ERR);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_int_eq(store_bucket_create(s, BCK("a0"), CKSUM_XXHASH), AIS_OK);
	ck_assert_int_eq(store_bucket_get(s, BCK("b1"), &b), AIS_OK);
	ck_assert_str_eq(b.name, "b1");
	ck_assert_int_eq(b.cksum_type, CKSUM_MD5);
	ck_assert_int_gt(b.created_ns, 0);
	ck_assert_int_eq(store_bucket_list(s, &bl, &n), AIS_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(bl[0].name, "a0");
	ck_assert_str_eq(bl[1].name, "b1");
	free(bl);

	for (int i = 0; i < 50; i++) {
		char o[32];
		snprintf(o, sizeof(o), "obj%d", i);
		put_ok(s, "b1", o, o, strlen(o), NULL);
		put_ok(s, "a0", o, o, strlen(o), NULL);
	}
	ck_assert_int_eq(count_files("obj"), 100);
	/* a write in flight when its bucket goes: commit fails ENOENT */
	ck_assert_int_eq(store_writer_begin(s, BCK("b1"), BCK("late"), &w), AIS_OK);
	ck_assert_int_eq(store_writer_write(w, "abc", 3), AIS_OK);
	ck_assert_int_eq(store_bucket_destroy(s, BCK("b1")), AIS_OK);
	ck_assert_int_eq(store_writer_commit(w, CKSUM_NONE, NULL, NULL, &m), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	store_writer_free(w);
	ck_assert_int_eq(count_files("obj"), 50);
	ck_assert_int_eq(count_files("tmp"), 0);
	ck_assert_int_eq(store_lookup(s, BCK("b1"), BCK("obj1"), &m), AIS_ERR);
	ck_assert_int_eq(store_bucket_destroy(s, BCK("b1")), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(store_bucket_list(s, &bl, &n), AIS_OK);
	ck_assert_uint_eq(n, 1);
	free(bl);
	/* recreated: empty */
	ck_assert_int_eq(store_bucket_create(s, BCK("b1"), CKSUM_NONE), AIS_OK);
	ck_assert_int_eq(store_lookup(s, BCK("b1"), BCK("obj1"), &m), AIS_ERR);
	check_obj(s, "a0", "obj7", "obj7", 4);

	store_mp_stats_t st[4];
	int k;
	ck_assert_int_eq(store_stats(s, st, 4, &k), AIS_OK);
	ck_assert_int_eq(k, 2);
	ck_assert_str_eq(st[1].path, g_conf.mountpaths[1]);
	ck_assert_uint_gt(st[0].total_bytes, 0);
	store_close(s);
}
END_TEST

START_TEST(test_reopen)
{
	store_t *s = open_store();
	store_meta_t m;
	char *p = pattern(123457, 3);
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_SHA256), AIS_OK);
	put_ok(s, "b", "one", p, 123457, NULL);
	put_ok(s, "b", "one", p, 123457, NULL);
	put_ok(s, "b", "two/x", "2", 1, NULL);
	store_close(s);
	for (int round = 0; round < 2; round++) {
		s = open_store();
		store_reconcile_wait(s);
		ck_assert_int_eq(store_bucket_get(s, BCK("b"), &(store_bucket_t){0}), AIS_OK);
		check_obj(s, "b", "one", p, 123457);
		check_obj(s, "b", "two/x", "2", 1);
		ck_assert_int_eq(store_lookup(s, BCK("b"), BCK("one"), &m), AIS_OK);
		ck_assert_uint_eq(m.version, 2 + (uint64_t)round);
		ck_assert_int_eq(m.cksum_type, CKSUM_SHA256);
		ck_assert_int_eq(count_files("obj"), 2);
		put_ok(s, "b", "one", p, 123457, &m); /* new gens after restart */
		ck_assert_uint_eq(m.version, 3 + (uint64_t)round);
		store_close(s);
	}
	/* the same mountpath cannot be opened twice at once */
	s = open_store();
	store_t *s2 = NULL;
	buf_t err = BUF_INIT;
	ck_assert_int_eq(store_open(&g_conf, &s2, &err), AIS_ERR);
	ck_assert_ptr_nonnull(err.ptr);
	buf_free(&err);
	store_close(s);
	free(p);
}
END_TEST

START_TEST(test_min_free)
{
	g_conf.min_free_bytes = UINT64_MAX / 2;
	store_t *s = open_store();
	store_writer_t *w;
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	ck_assert_int_eq(store_writer_begin(s, BCK("b"), BCK("o"), &w), AIS_ERR);
	ck_assert_int_eq(errno, ENOSPC);
	store_close(s);
}
END_TEST

/* ---- crash leftovers ----------------------------------------------------- */

static void make_old_file(const char *path, const char *data)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0640);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	close(fd);
	struct timespec ts[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
	ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* The reconcile counters of both mountpaths, summed. */
static void rc_counts(store_t *s, uint64_t *walked, uint64_t *hints)
{
	store_mp_stats_t st[2];
	int n = 0;
	ck_assert_int_eq(store_stats(s, st, 2, &n), AIS_OK);
	ck_assert_int_eq(n, 2);
	*walked = st[0].rc_walked + st[1].rc_walked;
	*hints = st[0].rc_hints + st[1].rc_hints;
	ck_assert(!st[0].reconciling && !st[1].reconciling);
}

/* Makes the store look written by a build without crash hints: no "r". */
static void drop_hint_marker(void)
{
	for (int i = 0; i < 2; i++) {
		char p[1400], *err = NULL;
		snprintf(p, sizeof(p), "%s/mp%d/meta", g_dir, i);
		leveldb_options_t *o = leveldb_options_create();
		leveldb_t *db = leveldb_open(o, p, &err);
		ck_assert_msg(!err, "leveldb_open: %s", err ? err : "");
		leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
		leveldb_delete(db, wo, "r", 1, &err);
		ck_assert(!err);
		leveldb_writeoptions_destroy(wo);
		leveldb_close(db);
		leveldb_options_destroy(o);
	}
}

/* Crash leftovers: a store with crash hints is never walked (a file no
 * hint names stays); one without (an older build's) is walked once, and
 * the walk removes every stray of an earlier run. */
START_TEST(test_crash_leftovers)
{
	store_t *s = open_store();
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	for (int i = 0; i < 20; i++) {
		char o[32];
		snprintf(o, sizeof(o), "keep%d", i);
		put_ok(s, "b", o, o, strlen(o), NULL);
	}
	store_close(s);
	ck_assert_int_eq(count_files("obj"), 20);

	/* a stray gen of a real object (crash between rename and LevelDB, or
	 * LevelDB and unlink), a file of an unknown hash, a temp file */
	char h[33], p[1400];
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits("b/keep3", 7));
	hex_encode(c.digest, 16, h);
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/mp%d/obj/%.2s/%s.0000000000000001", g_dir, i, h, h);
		make_old_file(p, "stale");
	}
	snprintf(p, sizeof(p), "%s/mp1/obj/ab/abababababababababababababababab.00000000000000ff",
		 g_dir);
	make_old_file(p, "orphan");
	snprintf(p, sizeof(p), "%s/mp0/tmp/%s.0000000000000002", g_dir, h);
	make_old_file(p, "partial");
	snprintf(p, sizeof(p), "%s/mp0/obj/00/README", g_dir); /* not ours: left */
	make_old_file(p, "x");
	ck_assert_int_eq(count_files("obj"), 24);
	ck_assert_int_eq(count_files("tmp"), 1);

	uint64_t walked, hints;
	s = open_store();
	ck_assert_int_eq(count_files("tmp"), 0); /* emptied by store_open */
	store_reconcile_wait(s);
	rc_counts(s, &walked, &hints);
	ck_assert_uint_eq(walked, 0); /* hints kept since the store was made: no walk */
	ck_assert_uint_eq(hints, 1); /* the temp file */
	ck_assert_int_eq(count_files("obj"), 24); /* so strays no hint names stay */
	store_close(s);

	drop_hint_marker();
	s = open_store();
	store_reconcile_wait(s);
	rc_counts(s, &walked, &hints);
	ck_assert_uint_eq(walked, 24);
	ck_assert_int_eq(count_files("obj"), 21);
	store_close(s);
	s = open_store(); /* walked once only */
	store_reconcile_wait(s);
	rc_counts(s, &walked, &hints);
	ck_assert_uint_eq(walked, 0);
	ck_assert_int_eq(unlink(p), 0);
	for (int i = 0; i < 20; i++) {
		char o[32];
		snprintf(o, sizeof(o), "keep%d", i);
		check_obj(s, "b", o, o, strlen(o));
	}
	store_close(s);
}
END_TEST

/* The crash hints ("u" keys) in both mountpaths' LevelDB (store closed). */
static int count_hints(void)
{
	int n = 0;
	for (int i = 0; i < 2; i++) {
		char p[1400], *err = NULL;
		snprintf(p, sizeof(p), "%s/mp%d/meta", g_dir, i);
		leveldb_options_t *o = leveldb_options_create();
		leveldb_t *db = leveldb_open(o, p, &err);
		ck_assert_msg(!err, "leveldb_open: %s", err ? err : "");
		leveldb_readoptions_t *ro = leveldb_readoptions_create();
		leveldb_iterator_t *it = leveldb_create_iterator(db, ro);
		for (leveldb_iter_seek(it, "u", 1); leveldb_iter_valid(it); leveldb_iter_next(it)) {
			size_t kl;
			if (*leveldb_iter_key(it, &kl) != 'u')
				break;
			n++;
		}
		leveldb_iter_destroy(it);
		leveldb_readoptions_destroy(ro);
		leveldb_close(db);
		leveldb_options_destroy(o);
	}
	return n;
}

/* An overwrite's hint of the replaced gen is deleted by a later commit's
 * batch, a lazy write of a full queue, or the close: none is left behind
 * after a clean close, whatever the number of overwrites (below, at and
 * past STORE_HINT_DONE_MAX), every read returns the last write, and no
 * replaced file stays. */
START_TEST(test_hint_deletes_queued)
{
	const int rounds[] = {1, 3, STORE_HINT_DONE_MAX, 2 * STORE_HINT_DONE_MAX + 5};
	for (size_t r = 0; r < sizeof(rounds) / sizeof(rounds[0]); r++) {
		store_t *s = open_store();
		if (r == 0)
			ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
		char body[32] = "";
		for (int i = 0; i < rounds[r]; i++) {
			snprintf(body, sizeof(body), "v%zu.%d", r, i);
			put_ok(s, "b", i % 2 ? "odd" : "even", body, strlen(body), NULL);
			check_obj(s, "b", i % 2 ? "odd" : "even", body, strlen(body));
		}
		if (rounds[r] > 1) {
			ck_assert_int_eq(store_delete(s, BCK("b"), "odd", 3), AIS_OK);
			put_ok(s, "b", "odd", "back", 4, NULL);
			put_ok(s, "b", "even", "last", 4, NULL); /* its delete queued at the close */
			check_obj(s, "b", "even", "last", 4);
		}
		store_close(s);
		ck_assert_int_eq(count_hints(), 0);
		ck_assert_int_eq(count_files("obj"), rounds[r] > 1 ? 2 : 1);
	}
	store_t *s = open_store();
	check_obj(s, "b", "odd", "back", 4);
	check_obj(s, "b", "even", "last", 4);
	store_reconcile_wait(s);
	uint64_t walked, hints;
	rc_counts(s, &walked, &hints);
	ck_assert_uint_eq(hints, 0);
	store_close(s);
}
END_TEST

/* ---- fault injection ----------------------------------------------------- */

enum fault_kind {
	F_OPEN, F_WRITE_EIO, F_WRITE_ENOSPC, F_WRITE_SHORT, F_FSYNC, F_RENAME, F_UNLINK, F_CLOSE,
	F_SPLICE_SHORT, F_SPLICE_ENOSPC, F_SPLICE_EOF, /* the body spliced from a pipe */
	F_NKINDS
};
static const char *fault_names[] = {"open", "write-eio", "write-enospc", "write-short",
				    "fsync", "rename", "unlink", "close", "splice-short", "splice-enospc",
				    "splice-eof"};
static bool spliced_kind(int kind) { return kind >= F_SPLICE_SHORT; }

static struct {
	enum fault_kind kind;
	int k;         /* fail the k-th call of the kind */
	int calls;
	bool triggered;
	bool short_pending; /* after a short write, the next write fails */
} F;
static store_io_t real_io;

static bool fault_hit(enum fault_kind kind)
{
	if (F.kind != kind)
		return false;
	if (++F.calls != F.k)
		return false;
	F.triggered = true;
	return true;
}

static int f_open(const char *path, int flags, mode_t mode)
{
	if (fault_hit(F_OPEN)) {
		errno = EIO;
		return -1;
	}
	return real_io.open(path, flags, mode);
}

static ssize_t f_write(int fd, const void *p, size_t n)
{
	if (F.short_pending) {
		F.short_pending = false;
		errno = ENOSPC;
		return -1;
	}
	bool is_write = F.kind == F_WRITE_EIO || F.kind == F_WRITE_ENOSPC || F.kind == F_WRITE_SHORT;
	if (is_write && ++F.calls == F.k) {
		F.triggered = true;
		if (F.kind == F_WRITE_SHORT && n > 1) {
			F.short_pending = true;
			return real_io.write(fd, p, n / 2);
		}
		errno = F.kind == F_WRITE_ENOSPC ? ENOSPC : EIO;
		return -1;
	}
	return real_io.write(fd, p, n);
}

static int f_fsync(int fd)
{
	if (fault_hit(F_FSYNC)) {
		errno = EIO;
		return -1;
	}
	return real_io.fsync(fd);
}

static int f_rename(const char *a, const char *b)
{
	if (fault_hit(F_RENAME)) {
		errno = EIO;
		return -1;
	}
	return real_io.rename(a, b);
}

static int f_link(const char *a, const char *b)
{
	if (fault_hit(F_RENAME)) { /* the write's "into place" step, as the rename was */
		errno = EIO;
		return -1;
	}
	return real_io.link(a, b);
}

static int f_unlink(const char *p)
{
	if (fault_hit(F_UNLINK)) {
		errno = EIO;
		return -1;
	}
	return real_io.unlink(p);
}

static int f_close(int fd)
{
	if (fault_hit(F_CLOSE)) {
		real_io.close(fd); /* Linux: the fd is gone even when close fails */
		errno = EIO;
		return -1;
	}
	return real_io.close(fd);
}

/* A short splice (the writer goes on), a full disk, or a pipe that ends
 * (its writer gone: 0, as splice(2) says at EOF). */
static ssize_t f_splice(int pfd, int fd, size_t n)
{
	if (spliced_kind(F.kind) && ++F.calls == F.k) {
		F.triggered = true;
		if (F.kind == F_SPLICE_SHORT)
			return real_io.splice(pfd, fd, n > 1 ? n / 2 : n);
		if (F.kind == F_SPLICE_EOF)
			return 0;
		errno = ENOSPC;
		return -1;
	}
	return real_io.splice(pfd, fd, n);
}

static void faults_arm(enum fault_kind kind, int k)
{
	memset(&F, 0, sizeof(F));
	F.kind = kind;
	F.k = k;
	store_io = (store_io_t){f_open, f_write, f_fsync, f_rename, f_unlink, f_close, f_splice, f_link};
}

static void faults_disarm(void) { store_io = real_io; }

/* The object is whole: old (or absent when old is NULL) or new. */
static int check_consistent(store_t *s, const char *old, size_t oldn, const char *nw, size_t nn)
{
	store_meta_t m;
	size_t got;
	char hex[17];
	char *p = get(s, "b", "o", &got, &m);
	if (!p) {
		ck_assert_int_eq(errno, ENOENT);
		ck_assert_ptr_null(old);
		return 0;
	}
	xxh_hex(p, got, hex);
	ck_assert_str_eq(hex, m.cksum);
	int which = 0;
	if (old && got == oldn && !memcmp(p, old, oldn)) {
		ck_assert_uint_eq(m.version, 1);
		which = 1;
	} else {
		ck_assert_msg(got == nn && !memcmp(p, nw, nn), "object is neither old nor new");
		ck_assert_uint_eq(m.version, old ? 2 : 1);
		which = 2;
	}
	free(p);
	return which;
}

static void fault_loop(bool overwrite)
{
	size_t oldn = 100000, nn = 300000;
	char *old = pattern(oldn, 1), *nw = pattern(nn, 2);
	int runs = 0;
	real_io = store_io;
	for (int kind = 0; kind < F_NKINDS; kind++) {
		/* one store for all runs (each run starts by deleting the object),
		 * reopened after every run */
		store_t *s = open_store();
		if (kind == 0)
			ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
		for (int k = 1;; k++) {
			if (store_delete(s, BCK("b"), BCK("o")) != AIS_OK)
				ck_assert_int_eq(errno, ENOENT);
			ck_assert_int_eq(count_files("obj"), 0);
			if (overwrite)
				put_ok(s, "b", "o", old, oldn, NULL);

			faults_arm((enum fault_kind)kind, k);
			store_writer_t *w = NULL;
			store_meta_t m;
			int pp[2] = {-1, -1};
			if (spliced_kind(kind))
				big_pipe(pp);
			int rc = store_writer_begin(s, BCK("b"), BCK("o"), &w);
			for (size_t off = 0; rc == AIS_OK && off < nn; off += 65536) {
				size_t len = MIN((size_t)65536, nn - off);
				if (pp[0] < 0) {
					rc = store_writer_write(w, nw + off, len);
					continue;
				}
				pipe_fill(pp[1], nw + off, len);
				rc = store_writer_splice(w, pp[0], len);
			}
			for (int i = 0; i < 2; i++)
				if (pp[i] >= 0)
					close(pp[i]);
			if (rc == AIS_OK)
				rc = store_writer_commit(w, CKSUM_NONE, NULL, NULL, &m);
			int e = errno;
			bool triggered = F.triggered;
			faults_disarm();
			if (rc != AIS_OK) /* a failed writer has removed its temp file */
				ck_assert_int_eq(count_files("tmp"), 0);
			store_writer_free(w);
			runs++;

			if (rc != AIS_OK) {
				ck_assert_msg(triggered, "%s k=%d: failed without a fault: %s",
					      fault_names[kind], k, strerror(e));
				ck_assert_msg(e == EIO || e == ENOSPC, "%s k=%d: errno %s",
					      fault_names[kind], k, strerror(e));
				if (kind == F_WRITE_ENOSPC || kind == F_WRITE_SHORT || kind == F_SPLICE_ENOSPC)
					ck_assert_int_eq(e, ENOSPC);
				if (kind == F_SPLICE_EOF)
					ck_assert_int_eq(e, EIO);
				ck_assert_msg(kind != F_SPLICE_SHORT, "a short splice failed the write");
			}
			int which = check_consistent(s, overwrite ? old : NULL, oldn, nw, nn);
			ck_assert_int_eq(which, rc == AIS_OK ? 2 : (overwrite ? 1 : 0));
			ck_assert_int_eq(count_files("tmp"), 0);
			/* at most one stray (an old gen whose unlink failed) */
			ck_assert_int_le(count_files("obj"), which ? 2 : 0);
			store_close(s);

			s = open_store();
			store_reconcile_wait(s);
			ck_assert_int_eq(check_consistent(s, overwrite ? old : NULL, oldn, nw, nn), which);
			ck_assert_int_eq(count_files("obj"), which ? 1 : 0);
			if (!triggered)
				break;
		}
		/* and the store takes writes again */
		put_ok(s, "b", "o", nw, nn, NULL);
		check_obj(s, "b", "o", nw, nn);
		store_close(s);
	}
	ck_assert_int_gt(runs, F_NKINDS * 2);
	free(old);
	free(nw);
}

START_TEST(test_fault_new) { fault_loop(false); }
END_TEST

START_TEST(test_fault_overwrite) { fault_loop(true); }
END_TEST

/* Object/byte counters (store_stats): PUT, overwrite, delete, bucket
 * destroy, and after a reopen (the count of the records at open). */
static void counts(store_t *s, uint64_t *objs, uint64_t *bytes)
{
	store_mp_stats_t st[4];
	int n = 0;
	ck_assert_int_eq(store_stats(s, st, 4, &n), AIS_OK);
	ck_assert_int_eq(n, 2);
	*objs = *bytes = 0;
	for (int i = 0; i < n; i++) {
		ck_assert(st[i].free_bytes <= st[i].total_bytes);
		*objs += st[i].objects;
		*bytes += st[i].bytes;
	}
}

static void check_counts(store_t *s, uint64_t objs, uint64_t bytes)
{
	uint64_t o, b;
	counts(s, &o, &b);
	ck_assert_uint_eq(o, objs);
	ck_assert_uint_eq(b, bytes);
}

START_TEST(test_counters)
{
	store_t *s = open_store();
	char name[32];
	char *p = pattern(5000, 9);
	store_reconcile_wait(s);
	check_counts(s, 0, 0);
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	ck_assert_int_eq(store_bucket_create(s, BCK("c"), CKSUM_XXHASH), AIS_OK);
	uint64_t bytes = 0;
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "o%d", i);
		put_ok(s, "b", name, p, (size_t)i * 100, NULL);
		bytes += (uint64_t)i * 100;
	}
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		put_ok(s, "c", name, p, 7, NULL);
	}
	check_counts(s, 60, bytes + 70);
	put_ok(s, "b", "o1", p, 4000, NULL); /* overwrite: 100 -> 4000 */
	bytes += 3900;
	ck_assert_int_eq(store_delete(s, BCK("b"), BCK("o2")), AIS_OK);
	bytes -= 200;
	ck_assert_int_eq(store_delete(s, BCK("b"), BCK("o2")), AIS_ERR); /* gone: no change */
	check_counts(s, 59, bytes + 70);
	ck_assert_int_eq(store_bucket_destroy(s, BCK("c")), AIS_OK);
	check_counts(s, 49, bytes);
	store_close(s);

	/* reopen: counted from the records; changes while counting add up */
	s = open_store();
	ck_assert_int_eq(store_delete(s, BCK("b"), BCK("o3")), AIS_OK);
	put_ok(s, "b", "new", p, 11, NULL);
	store_reconcile_wait(s);
	store_mp_stats_t st[2];
	int n = 0;
	ck_assert_int_eq(store_stats(s, st, 2, &n), AIS_OK);
	ck_assert(!st[0].counting && !st[1].counting);
	check_counts(s, 49, bytes - 300 + 11);
	store_close(s);
	free(p);
}
END_TEST


/* ---- hot cache (hot.c) ------------------------------------------------- */

/* Reads b/o through the hot cache: *hot whether it came from memory; the
 * bytes (either way) in out, freed by the caller. AIS_ERR with errno. */
static int read_hot(store_t *s, const char *b, const char *o, store_meta_t *m, bool *hot, buf_t *out)
{
	int fd = -1;
	buf_t body = BUF_INIT;
	store_hot_ref_t ref;
	int rc = store_open_hot(s, BCK(b), BCK(o), &fd, m, &ref);
	if (rc != AIS_OK) {
		ck_assert_ptr_null(ref.ent);
		return rc;
	}
	*hot = fd < 0;
	ck_assert(*hot == (ref.ent != NULL));
	if (ref.ent) {
		ck_assert_uint_eq(ref.len, m->size);
		buf_add(&body, ref.ptr, ref.len);
		store_hot_release(&ref);
		ck_assert_ptr_null(ref.ent);
	}
	if (fd >= 0) {
		size_t n;
		char *p = read_fd(fd, &n);
		close(fd);
		buf_add(&body, p, n);
		free(p);
	}
	*out = body;
	return AIS_OK;
}

static void expect_hot(store_t *s, const char *b, const char *o, const void *p, size_t n, bool want_hot)
{
	store_meta_t m, lm;
	bool hot;
	buf_t got;
	ck_assert_int_eq(read_hot(s, b, o, &m, &hot, &got), AIS_OK);
	ck_assert_msg(hot == want_hot, "%s/%s: from memory %d, want %d", b, o, hot, want_hot);
	ck_assert_uint_eq(got.len, n);
	ck_assert(n == 0 || memcmp(got.ptr, p, n) == 0);
	ck_assert_int_eq(store_lookup(s, BCK(b), BCK(o), &lm), AIS_OK);
	ck_assert_uint_eq(m.size, lm.size);
	ck_assert_uint_eq(m.version, lm.version);
	ck_assert_str_eq(m.cksum, lm.cksum);
	ck_assert_str_eq(m.custom, lm.custom);
	ck_assert_int_eq(m.mtime_ns, lm.mtime_ns);
	ck_assert_int_eq(m.atime_ns, lm.atime_ns);
	ck_assert_int_eq(m.md_ns, lm.md_ns);
	buf_free(&got);
}

START_TEST(test_hot_cache)
{
	g_conf.hot_cache = 1 << 20;
	g_conf.hot_object_max = 16 << 10;
	store_t *s = open_store();
	store_hot_stats_t hs;
	store_meta_t m;
	bool hot;
	buf_t got;
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	put_ok(s, "b", "o", "first", 5, NULL);
	expect_hot(s, "b", "o", "first", 5, true); /* filled on the first read: from memory too */
	expect_hot(s, "b", "o", "first", 5, true);
	store_hot_stats(s, &hs);
	ck_assert_uint_eq(hs.entries, 1);
	ck_assert_uint_eq(hs.hits, 1);
	ck_assert_uint_eq(hs.misses, 1);
	/* every change of the record is seen at once */
	put_ok(s, "b", "o", "second!", 7, NULL);
	expect_hot(s, "b", "o", "second!", 7, true);
	ck_assert_int_eq(store_lookup(s, BCK("b"), BCK("o"), &m), AIS_OK);
	ck_assert_int_eq(store_set_custom(s, BCK("b"), BCK("o"), m.version, "k=v", 0), AIS_OK);
	expect_hot(s, "b", "o", "second!", 7, true); /* with custom "k=v" (checked against the record) */
	put_ok(s, "b", "empty", "", 0, NULL);
	expect_hot(s, "b", "empty", "", 0, true);
	expect_hot(s, "b", "empty", "", 0, true);
	ck_assert_int_eq(store_delete(s, BCK("b"), BCK("o")), AIS_OK);
	ck_assert_int_eq(read_hot(s, "b", "o", &m, &hot, &got), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(store_tomb_put(s, BCK("b"), BCK("empty"), time_now_ns()), AIS_OK);
	/* over hot_object_max: a descriptor, never cached */
	char *big = pattern(20 << 10, 3);
	put_ok(s, "b", "big", big, 20 << 10, NULL);
	expect_hot(s, "b", "big", big, 20 << 10, false);
	expect_hot(s, "b", "big", big, 20 << 10, false);
	free(big);
	/* bounded: 300 objects of 8 KiB do not fit in 1 MiB */
	char name[32];
	char *d = pattern(8 << 10, 4);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "many%03d", i);
		put_ok(s, "b", name, d, 8 << 10, NULL);
		expect_hot(s, "b", name, d, 8 << 10, true);
	}
	store_hot_stats(s, &hs);
	ck_assert_uint_le(hs.bytes, 1 << 20);
	ck_assert_uint_gt(hs.entries, 50);
	ck_assert_uint_lt(hs.entries, 128);
	/* a bucket destroyed: nothing of it is served, also once created again */
	put_ok(s, "b", "x", "xx", 2, NULL);
	expect_hot(s, "b", "x", "xx", 2, true);
	ck_assert_int_eq(store_bucket_destroy(s, BCK("b")), AIS_OK);
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	ck_assert_int_eq(read_hot(s, "b", "x", &m, &hot, &got), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	/* a mountpath detach empties it */
	put_ok(s, "b", "y", "yy", 2, NULL);
	expect_hot(s, "b", "y", "yy", 2, true);
	buf_t err = BUF_INIT;
	ck_assert_int_eq(store_mp_detach_begin(s, g_conf.mountpaths[0], &err), AIS_OK);
	buf_free(&err);
	store_hot_stats(s, &hs);
	ck_assert_uint_eq(hs.entries, 0);
	free(d);
	store_close(s);
}
END_TEST

/* store.leveldb_cache 0: 1/32 of the memory shared by the mountpaths,
 * between 8MiB and 1GiB each. */
START_TEST(test_ldb_cache_auto)
{
	const uint64_t G = 1ULL << 30, M = 1ULL << 20;
	ck_assert_uint_eq(store_ldb_cache_auto(16 * G, 1), 512 * M);
	ck_assert_uint_eq(store_ldb_cache_auto(16 * G, 2), 256 * M);
	ck_assert_uint_eq(store_ldb_cache_auto(256 * G, 1), G);       /* capped */
	ck_assert_uint_eq(store_ldb_cache_auto(256 * M, 4), 8 * M);   /* floor */
	ck_assert_uint_eq(store_ldb_cache_auto(0, 1), 8 * M);         /* memory unknown */
	ck_assert_uint_eq(store_ldb_cache_auto(64 * G, 0), G);        /* no mountpath counted as one */
}
END_TEST

START_TEST(test_hot_cache_off)
{
	g_conf.hot_cache = 0;
	store_t *s = open_store();
	store_hot_stats_t hs;
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	put_ok(s, "b", "o", "abc", 3, NULL);
	expect_hot(s, "b", "o", "abc", 3, false);
	expect_hot(s, "b", "o", "abc", 3, false);
	store_hot_stats(s, &hs);
	ck_assert_uint_eq(hs.hits + hs.misses + hs.entries, 0);
	store_close(s);
}
END_TEST

/* A fill that read the record before an overwrite, held until the
 * overwrite is committed: it must not put the old bytes in (hot.c rule 2). */
static _Atomic int g_hold_fill;
static void held_fill(void)
{
	int one = 1;
	if (atomic_compare_exchange_strong(&g_hold_fill, &one, 2))
		for (int i = 0; i < 300 && atomic_load(&g_hold_fill) == 2; i++)
			usleep(10000); /* at most 3 s */
}

static void *hot_reader_main(void *arg)
{
	store_meta_t m;
	bool hot;
	buf_t got;
	ck_assert_int_eq(read_hot(arg, "b", "obj", &m, &hot, &got), AIS_OK);
	ck_assert(got.len == 3 && !memcmp(got.ptr, "old", 3)); /* began before the overwrite */
	buf_free(&got);
	return NULL;
}

START_TEST(test_hot_fill_race)
{
	g_conf.hot_cache = 1 << 20;
	store_t *s = open_store();
	pthread_t th;
	ck_assert_int_eq(store_bucket_create(s, BCK("b"), CKSUM_XXHASH), AIS_OK);
	put_ok(s, "b", "obj", "old", 3, NULL);
	store_hot_fill_hook = held_fill;
	atomic_store(&g_hold_fill, 1);
	ck_assert_int_eq(pthread_create(&th, NULL, hot_reader_main, s), 0);
	for (int i = 0; i < 1000 && atomic_load(&g_hold_fill) != 2; i++)
		usleep(10000);
	ck_assert_int_eq(atomic_load(&g_hold_fill), 2); /* the reader holds "old", not cached yet */
	put_ok(s, "b", "obj", "new", 3, NULL);
	atomic_store(&g_hold_fill, 0);
	pthread_join(th, NULL);
	store_hot_fill_hook = NULL;
	expect_hot(s, "b", "obj", "new", 3, true);
	expect_hot(s, "b", "obj", "new", 3, true);
	store_close(s);
}
END_TEST

/* ---- main ----------------------------------------------------------------- */

static Suite *store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_checksums);
	tcase_add_test(tc, test_overwrite_delete);
	tcase_add_test(tc, test_md_time);
	tcase_add_test(tc, test_stamps);
	tcase_add_test(tc, test_tombstones);
	tcase_add_test(tc, test_writer_discard);
	tcase_add_test(tc, test_writer_splice);
	tcase_add_test(tc, test_touch_during_commit);
	tcase_add_test(tc, test_old_reader_during_overwrite);
	tcase_add_test(tc, test_concurrent_overwrite_read);
	tcase_add_test(tc, test_list);
	tcase_add_test(tc, test_list_speed);
	tcase_add_test(tc, test_buckets);
	tcase_add_test(tc, test_bucket_destroy_cut);
	tcase_add_test(tc, test_reopen);
	tcase_add_test(tc, test_min_free);
	tcase_add_test(tc, test_crash_leftovers);
	tcase_add_test(tc, test_hint_deletes_queued);
	tcase_add_test(tc, test_counters);
	tcase_add_test(tc, test_mountpath_attach_detach);
	tcase_add_test(tc, test_hot_cache);
	tcase_add_test(tc, test_hot_cache_off);
	tcase_add_test(tc, test_ldb_cache_auto);
	tcase_add_test(tc, test_hot_fill_race);
	suite_add_tcase(s, tc);
	TCase *tf = tcase_create("faults");
	tcase_add_checked_fixture(tf, setup, teardown);
	tcase_set_timeout(tf, 300);
	tcase_add_test(tf, test_fault_new);
	tcase_add_test(tf, test_fault_overwrite);
	suite_add_tcase(s, tf);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(store_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
