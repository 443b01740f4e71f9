/*
 * test_tarw.c - the tar writer (src/archive/tarw.c) and the GetBatch request
 * parser (src/archive/moss.c).
 *
 * The writer's output is read back by tar.c's walker and by Python's
 * tarfile: names of every length around the ustar limits (100, the 155-byte
 * prefix split, over 256: pax path=), UTF-8 names, sizes around the block
 * size; a size over 8 GiB gets a pax size=. The parser accepts AIStore's
 * MossReq (plain and wrapped), defaults the bucket, builds the output names
 * (with and without onob), and refuses every malformed body with a reason.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aisd/arena.h"
#include "aisd/archmatch.h"
#include "aisd/moss.h"
#include "aisd/status.h"
#include "aisd/tar.h"
#include "aisd/tarw.h"
#include "aisd/util.h"
#include "aisd/banned.h"

struct mem {
	char name[400];
	size_t size;
};

static void make_name(char *out, size_t len, int kind)
{
	for (size_t i = 0; i < len; i++)
		out[i] = (char)('a' + (i % 26));
	if (kind == 1 && len > 10) /* slashes: splittable into prefix/name */
		for (size_t i = 40; i < len; i += 50)
			out[i] = '/';
	out[len] = '\0';
}

static size_t build(buf_t *out, struct mem *ms, size_t *n)
{
	static const size_t lens[] = {1, 99, 100, 101, 150, 200, 255, 256, 257, 300, 390};
	static const size_t sizes[] = {0, 1, 511, 512, 513, 10000};
	size_t k = 0;
	for (size_t i = 0; i < ARRAY_SIZE(lens); i++)
		for (int kind = 0; kind < 2; kind++) {
			struct mem *m = &ms[k];
			make_name(m->name, lens[i], kind);
			m->name[0] = (char)('A' + (k % 26)); /* unique */
			m->name[lens[i] > 1 ? 1 : 0] = (char)('A' + (char)(k / 26));
			m->size = sizes[k % ARRAY_SIZE(sizes)];
			tarw_header(out, m->name, strlen(m->name), m->size, 1700000000);
			for (size_t b = 0; b < m->size; b++)
				buf_addch(out, (char)(k + b));
			tarw_pad(out, m->size);
			ck_assert_uint_eq(out->len % TAR_BLOCK, 0);
			k++;
		}
	struct mem *u = &ms[k++];
	snprintf(u->name, sizeof(u->name), "%s", "d\xc3\xa9j\xc3\xa0/\xe2\x82\xac.txt");
	u->size = 3;
	tarw_header(out, u->name, strlen(u->name), 3, 0);
	buf_add(out, "abc", 3);
	tarw_pad(out, 3);
	tarw_end(out);
	*n = k;
	return k;
}

START_TEST(test_roundtrip_reader)
{
	buf_t out = BUF_INIT;
	struct mem ms[40];
	size_t n;
	tar_iter_t it;
	tar_member_t m;

	build(&out, ms, &n);
	int fd = memfd_create("tarw", 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, out.ptr, out.len), (ssize_t)out.len);
	tar_iter_init(&it, fd, out.len);
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(tar_iter_next(&it, &m), AIS_OK);
		ck_assert_uint_eq(m.name_len, strlen(ms[i].name));
		ck_assert(!memcmp(m.name, ms[i].name, m.name_len));
		ck_assert_uint_eq(m.size, ms[i].size);
		if (i < n - 1)
			for (size_t b = 0; b < m.size; b++)
				ck_assert_int_eq((unsigned char)out.ptr[m.offset + b], (unsigned char)(i + b));
	}
	ck_assert_int_eq(tar_iter_next(&it, &m), AIS_DONE);
	tar_iter_free(&it);
	close(fd);
	buf_free(&out);
}
END_TEST

START_TEST(test_roundtrip_python)
{
	buf_t out = BUF_INIT;
	struct mem ms[40];
	size_t n;
	char path[] = "/tmp/test_tarw-XXXXXX";
	char cmd[512], line[1024];

	build(&out, ms, &n);
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, out.ptr, out.len), (ssize_t)out.len);
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 -c 'import sys,tarfile\n"
		 "for m in tarfile.open(sys.argv[1]):\n"
		 " d=tarfile.open(sys.argv[1]).extractfile(m).read()\n"
		 " print(m.name.encode().hex(), m.size, sum(d)%%65536, m.type.decode())' %s",
		 path);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t i = 0;
	while (fgets(line, sizeof(line), p)) {
		char hex[800];
		unsigned long size, sum;
		char type[4];
		ck_assert_int_eq(sscanf(line, "%799s %lu %lu %3s", hex, &size, &sum, type), 4);
		ck_assert_uint_lt(i, n);
		char want[800];
		hex_encode((const unsigned char *)ms[i].name, strlen(ms[i].name), want);
		ck_assert_str_eq(hex, want);
		ck_assert_uint_eq(size, ms[i].size);
		unsigned long s = 0;
		for (size_t b = 0; b < ms[i].size; b++)
			s += i < n - 1 ? (unsigned char)(i + b) : (unsigned char)"abc"[b];
		ck_assert_uint_eq(sum, s % 65536);
		ck_assert_str_eq(type, "0");
		i++;
	}
	ck_assert_int_eq(pclose(p), 0);
	ck_assert_uint_eq(i, n);
	unlink(path);
	buf_free(&out);
}
END_TEST

START_TEST(test_big_size)
{
	buf_t out = BUF_INIT;
	tar_entry_t e;
	const char *v;
	size_t vl;
	uint64_t big = (16ULL << 30) + 5;

	tarw_header(&out, "huge.bin", 8, big, 0);
	ck_assert_uint_eq(out.len, 3 * TAR_BLOCK); /* pax header, its data, ustar */
	ck_assert_int_eq(tar_parse_header((const unsigned char *)out.ptr, &e), AIS_OK);
	ck_assert_int_eq(e.kind, TAR_PAX);
	ck_assert_int_eq(tar_pax_find(out.ptr + TAR_BLOCK, e.size, "size", &v, &vl), AIS_OK);
	ck_assert_int_eq(vl, 11);
	ck_assert(!memcmp(v, "17179869189", 11));
	ck_assert_int_eq(tar_parse_header((const unsigned char *)out.ptr + 2 * TAR_BLOCK, &e), AIS_OK);
	ck_assert_str_eq(e.name, "huge.bin");
	ck_assert_uint_eq(tarw_pad_len(big), 507);
	ck_assert_uint_eq(tarw_pad_len(0), 0);
	ck_assert_uint_eq(tarw_pad_len(512), 0);
	buf_free(&out);
}
END_TEST

static int parse(arena_t *a, const char *body, const char *dflt, moss_req_t *r, buf_t *err)
{
	buf_reset(err);
	return moss_parse(a, body, strlen(body), sv_from(dflt), 0, r, err);
}

START_TEST(test_moss_parse)
{
	arena_t *a = arena_new(4096);
	moss_req_t r;
	buf_t err = BUF_INIT;

	ck_assert_int_eq(parse(a,
			       "{\"in\":[{\"objname\":\"a/b\"},{\"objname\":\"s.tar\",\"archpath\":\"x.jpg\","
			       "\"bucket\":\"b2\",\"start\":5,\"length\":7,\"opaque\":\"AA==\"}],"
			       "\"mime\":\".tar\",\"coer\":true,\"strm\":true}",
			       "bk", &r, &err),
			 AIS_OK);
	ck_assert_uint_eq(r.n, 2);
	ck_assert(r.coer && r.strm && !r.onob);
	ck_assert(sv_eqstr(r.in[0].name, "bk/a/b"));
	ck_assert(sv_eqstr(r.in[0].bck, "bk"));
	ck_assert_uint_eq(r.in[0].arch.len, 0);
	ck_assert(sv_eqstr(r.in[1].name, "b2/s.tar/x.jpg"));
	ck_assert(sv_eqstr(r.in[1].arch, "x.jpg"));
	ck_assert_uint_eq(r.in[1].start, 5);
	ck_assert_uint_eq(r.in[1].length, 7);

	ck_assert_int_eq(parse(a,
			       "{\"action\":\"getbatch\",\"value\":{\"in\":[{\"objname\":\"o\","
			       "\"bucket\":\"b\",\"archpath\":\"m\"}],\"onob\":true}}",
			       "", &r, &err),
			 AIS_OK);
	ck_assert(sv_eqstr(r.in[0].name, "o/m"));

	/* a transformer for every entry */
	ck_assert_int_eq(parse(a, "{\"in\":[{\"objname\":\"a\"}],\"etl\":\"up\",\"etl_args\":\"k=v\"}", "bk", &r, &err),
			 AIS_OK);
	ck_assert(r.etl.len == 2 && !memcmp(r.etl.ptr, "up", 2));
	ck_assert(r.etl_args.len == 3 && !memcmp(r.etl_args.ptr, "k=v", 3));
	ck_assert_int_eq(parse(a, "{\"in\":[{\"objname\":\"a\"}]}", "bk", &r, &err), AIS_OK);
	ck_assert_uint_eq(r.etl.len, 0);

	/* the caller's maximum: counted before any entry is read */
	static const char two[] = "{\"in\":[{\"objname\":\"a\"},{\"objname\":\"b\"}]}";
	buf_reset(&err);
	ck_assert_int_eq(moss_parse(a, two, strlen(two), sv_from("bk"), 1, &r, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "too many entries (2): at most 1"));
	buf_reset(&err);
	ck_assert_int_eq(moss_parse(a, two, strlen(two), sv_from("bk"), 2, &r, &err), AIS_OK);
	ck_assert_uint_eq(r.n, 2);

	static const char *const bad[] = {
		"", "[]", "{}", "{\"in\":[]}", "{\"in\":{}}", "{\"in\":[1]}", "{\"in\":[{}]}",
		"{\"in\":[{\"objname\":\"\"}]}", "{\"in\":[{\"objname\":5}]}",
		"{\"in\":[{\"objname\":\"a\"}],\"mime\":\".zip\"}",
		"{\"in\":[{\"objname\":\"a\",\"start\":-1}]}", "{\"in\":[{\"objname\":\"a\",\"length\":1.5}]}",
		"{\"in\":[{\"objname\":\"a\"}],\"coer\":1}", "{\"in\":[{\"objname\":\"a\",\"bucket\":\"x/y\"}]}",
		"{\"in\":[{\"objname\":\"a\",\"provider\":\"s3\"}]}", "{\"in\":[{\"objname\":\"a\",\"archpath\":7}]}",
		"{\"action\":\"list\",\"value\":{\"in\":[{\"objname\":\"a\"}]}}",
		"{\"in\":[{\"objname\":\"a\"}],\"in\":[]}", "{\"in\":[{\"objname\":\"a\"}]", "{\"in\":[{\"objname\":\"\\u0000\"}]}",
		"{\"in\":[{\"objname\":\"a\"}],\"etl\":5}", "{\"in\":[{\"objname\":\"a\"}],\"etl\":\"a b\"}",
		"{\"in\":[{\"objname\":\"a\"}],\"etl_args\":\"x\"}",
		"{\"in\":[{\"objname\":\"a\",\"start\":1}],\"etl\":\"up\"}",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		ck_assert_msg(parse(a, bad[i], "bk", &r, &err) == AIS_ERR, "accepted: %s", bad[i]);
		ck_assert_msg(err.len > 0, "no reason for: %s", bad[i]);
	}
	ck_assert_int_eq(parse(a, "{\"in\":[{\"objname\":\"a\"}]}", "", &r, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "no bucket"));
	buf_free(&err);
	arena_destroy(a);
}
END_TEST

static bool am(enum archmode mode, const char *pat, const char *name)
{
	archmatch_t m;
	buf_t err = BUF_INIT;
	ck_assert_int_eq(archmatch_init(&m, mode, pat, strlen(pat), &err), AIS_OK);
	bool r = archmatch_test(&m, name, strlen(name));
	archmatch_free(&m);
	buf_free(&err);
	return r;
}

START_TEST(test_archmatch)
{
	enum archmode md;
	archmatch_t m;
	buf_t err = BUF_INIT;

	ck_assert_int_eq(archmatch_mode("", 0, &md), AIS_OK);
	ck_assert_int_eq(md, ARCH_REGEXP);
	ck_assert_int_eq(archmatch_mode("wdskey", 6, &md), AIS_OK);
	ck_assert_int_eq(md, ARCH_WDSKEY);
	ck_assert_int_eq(archmatch_mode("glob", 4, &md), AIS_ERR);
	ck_assert_int_eq(archmatch_mode("prefixx", 7, &md), AIS_ERR);

	ck_assert(am(ARCH_REGEXP, "\\.(jpg|png)$", "a/000001.jpg"));
	ck_assert(!am(ARCH_REGEXP, "\\.(jpg|png)$", "a/000001.jpg.txt"));
	ck_assert(am(ARCH_REGEXP, "^a/0+1", "a/000001.jpg"));
	ck_assert(am(ARCH_REGEXP, "", "anything"));
	ck_assert(am(ARCH_PREFIX, "a/00", "a/000001.jpg"));
	ck_assert(!am(ARCH_PREFIX, "a/000001.jpgx", "a/000001.jpg"));
	ck_assert(am(ARCH_SUFFIX, ".cls", "x.cls"));
	ck_assert(!am(ARCH_SUFFIX, ".cls", "x.clsx"));
	ck_assert(am(ARCH_SUBSTR, "0001", "a/000001.jpg"));
	ck_assert(!am(ARCH_SUBSTR, "0002", "a/000001.jpg"));
	ck_assert(am(ARCH_WDSKEY, "a/000001", "a/000001.jpg"));
	ck_assert(am(ARCH_WDSKEY, "a/000001", "a/000001.seg.png"));
	ck_assert(am(ARCH_WDSKEY, "a.b/000001", "a.b/000001.cls"));
	ck_assert(!am(ARCH_WDSKEY, "a/000001", "a/0000012.jpg"));
	ck_assert(!am(ARCH_WDSKEY, "000001", "a/000001.jpg"));
	ck_assert(am(ARCH_WDSKEY, "noext", "noext"));
	ck_assert_uint_eq(archmatch_wdskey("x/y.z/k.a.b", 11), 7);
	ck_assert_uint_eq(archmatch_wdskey(".hidden", 7), 0);

	/* a long name goes through the heap copy */
	char longname[2000];
	memset(longname, 'q', sizeof(longname) - 5);
	memcpy(longname + sizeof(longname) - 5, ".jpg", 5);
	ck_assert(am(ARCH_REGEXP, "q\\.jpg$", longname));
	/* a name holding a NUL never matches a regexp */
	ck_assert_int_eq(archmatch_init(&m, ARCH_REGEXP, "a", 1, &err), AIS_OK);
	ck_assert(!archmatch_test(&m, "a\0b", 3));
	archmatch_free(&m);

	ck_assert_int_eq(archmatch_init(&m, ARCH_REGEXP, "([a-", 4, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "regular expression"));
	archmatch_free(&m);
	buf_free(&err);
}
END_TEST

static Suite *tarw_suite(void)
{
	Suite *s = suite_create("tarw");
	TCase *t = tcase_create("tarw");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, test_roundtrip_reader);
	tcase_add_test(t, test_roundtrip_python);
	tcase_add_test(t, test_big_size);
	tcase_add_test(t, test_moss_parse);
	tcase_add_test(t, test_archmatch);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tarw_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
