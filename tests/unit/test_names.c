/*
 * test_names.c - bucket and object name rules, and the UTF-8 validator
 * behind object names.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/dsort.h"
#include "aisd/names.h"
#include "aisd/olver.h"
#include "aisd/xarch.h"
#include "aisd/banned.h"

#define B(lit) name_bucket_valid((lit), sizeof(lit) - 1)
#define O(lit) name_object_valid((lit), sizeof(lit) - 1)
#define U(lit) utf8_valid((lit), sizeof(lit) - 1)

START_TEST(test_bucket_valid)
{
	ck_assert(B("a"));
	ck_assert(B("mybucket"));
	ck_assert(B("My-Bucket_01.v2"));
	ck_assert(B("0123456789"));
	ck_assert(B("..."));
	ck_assert(B(".hidden"));
	ck_assert(B("a.."));
	ck_assert(B("-"));
	ck_assert(B("_"));
}
END_TEST

START_TEST(test_bucket_length)
{
	char s[NAME_BUCKET_MAX + 2];
	memset(s, 'b', sizeof(s));
	ck_assert(!name_bucket_valid(s, 0));
	ck_assert(!name_bucket_valid("", 0));
	ck_assert(name_bucket_valid(s, 1));
	ck_assert(name_bucket_valid(s, NAME_BUCKET_MAX));
	ck_assert(!name_bucket_valid(s, NAME_BUCKET_MAX + 1));
	ck_assert_int_eq(NAME_BUCKET_MAX, 64);
}
END_TEST

START_TEST(test_bucket_invalid)
{
	ck_assert(!B("."));
	ck_assert(!B(".."));
	ck_assert(!B("a/b"));
	ck_assert(!B("/"));
	ck_assert(!B("a b"));
	ck_assert(!B(" a"));
	ck_assert(!B("a\tb"));
	ck_assert(!B("a\nb"));
	ck_assert(!B("a\0b"));
	ck_assert(!B("caf\xc3\xa9"));     /* é */
	ck_assert(!B("\xe6\x95\xb0"));     /* CJK */
	ck_assert(!B("a+b"));
	ck_assert(!B("a%20b"));
	ck_assert(!B("a:b"));
	ck_assert(!B("a?b"));
	ck_assert(!B("a\\b"));
	ck_assert(!B("a*"));
	ck_assert(!B("\x7f"));
	ck_assert(!B("\xff"));
	/* length is what counts, not the C string: a NUL inside is rejected */
	ck_assert(!name_bucket_valid("ab", 3));
}
END_TEST

/* A kept version's name (olver.h): NAME NAME_VER_TAG 32 hex digits; the
 * length of NAME, or 0 for any other name. */
START_TEST(test_version_of)
{
	const char *id = "0123456789abcdef0123456789abcdef";
	char s[256];
	snprintf(s, sizeof(s), "dir/obj" NAME_VER_TAG "%s", id);
	ck_assert_uint_eq(name_version_of(s, strlen(s)), 7);
	snprintf(s, sizeof(s), "bck/dir/obj" NAME_VER_TAG "%s", id); /* an intra-cluster uname */
	ck_assert_uint_eq(name_version_of(s, strlen(s)), 11);
	ck_assert_uint_eq(name_version_of("dir/obj", 7), 0);
	snprintf(s, sizeof(s), NAME_VER_TAG "%s", id); /* no object name */
	ck_assert_uint_eq(name_version_of(s, strlen(s)), 0);
	snprintf(s, sizeof(s), "o" NAME_VER_TAG "%.31s", id); /* short id */
	ck_assert_uint_eq(name_version_of(s, strlen(s)), 0);
	snprintf(s, sizeof(s), "o" NAME_VER_TAG "%.31sA", id); /* upper case */
	ck_assert_uint_eq(name_version_of(s, strlen(s)), 0);
	snprintf(s, sizeof(s), "o~ais.w~%s", id); /* another tag */
	ck_assert_uint_eq(name_version_of(s, strlen(s)), 0);
}
END_TEST

START_TEST(test_object_valid)
{
	ck_assert(O("a"));
	ck_assert(O("file.txt"));
	ck_assert(O("dir/sub/file"));
	ck_assert(O("/leading/slash"));
	ck_assert(O("trailing/"));
	ck_assert(O("a..b"));
	ck_assert(O(".hidden/..x/x../...")); /* dots inside a segment, or three */
	ck_assert(O("a//b"));
	ck_assert(O("with space and  two"));
	ck_assert(O("a+b=c"));
	ck_assert(O("100%"));
	ck_assert(O("%2F%00"));
	ck_assert(O("tab\there"));
	ck_assert(O("caf\xc3\xa9"));                 /* é, 2 bytes */
	ck_assert(O("\xe6\x95\xb0\xe6\x8d\xae"));   /* 数据, 3 bytes each */
	ck_assert(O("\xf0\x9f\x98\x80"));           /* 😀 alone */
	ck_assert(O("smile \xf0\x9f\x98\x80"));     /* 4-byte sequence at the exact end */
	ck_assert(O("\xc2\x80"));                   /* U+0080, smallest 2-byte */
	ck_assert(O("\xdf\xbf"));                   /* U+07FF */
	ck_assert(O("\xe0\xa0\x80"));               /* U+0800, smallest 3-byte */
	ck_assert(O("\xed\x9f\xbf"));               /* U+D7FF, just below surrogates */
	ck_assert(O("\xee\x80\x80"));               /* U+E000, just above surrogates */
	ck_assert(O("\xef\xbf\xbf"));               /* U+FFFF */
	ck_assert(O("\xf0\x90\x80\x80"));           /* U+10000, smallest 4-byte */
	ck_assert(O("\xf4\x8f\xbf\xbf"));           /* U+10FFFF, the last code point */
	ck_assert(O("\x7f"));
}
END_TEST

/* "." and ".." segments would be resolved by whatever turns the name into a
 * URL path (a remote's): never part of an object name; archive member paths
 * keep them. */
START_TEST(test_object_dot_segments)
{
	static const char *const bad[] = {".", "..", "../../etc/passwd", "a/../b", "a/./b", "./a", "a/.",
					  "a/..", "../", "/..", "x/y/../../../secret/payroll", "a//../b"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(!O(bad[i]), "%s", bad[i]);
		ck_assert_msg(name_has_dot_segment(bad[i], strlen(bad[i])), "%s", bad[i]);
		ck_assert_msg(name_archpath_valid(bad[i], strlen(bad[i])), "%s", bad[i]);
	}
	ck_assert(!name_has_dot_segment("a..b/.c/d.", 10));
	ck_assert(!name_has_dot_segment("...", 3));
	/* length counts, not the C string: ".." cut to "." is still a dot segment, "a." is not */
	ck_assert(name_has_dot_segment("..", 1));
	ck_assert(!name_has_dot_segment("a.", 2));
	ck_assert(!name_object_valid("./x", 0));
}
END_TEST

START_TEST(test_object_length)
{
	char *s = malloc(NAME_OBJECT_MAX + 8);
	memset(s, 'o', NAME_OBJECT_MAX + 8);
	ck_assert(!name_object_valid(s, 0));
	ck_assert(!name_object_valid("", 0));
	ck_assert(name_object_valid(s, 1));
	ck_assert(name_object_valid(s, NAME_OBJECT_MAX));
	ck_assert(!name_object_valid(s, NAME_OBJECT_MAX + 1));
	ck_assert_int_eq(NAME_OBJECT_MAX, 1024);

	/* the limit is bytes, not characters: 256 four-byte emoji = 1024 bytes */
	for (size_t i = 0; i + 4 <= NAME_OBJECT_MAX + 4; i += 4)
		memcpy(s + i, "\xf0\x9f\x98\x80", 4);
	ck_assert(name_object_valid(s, NAME_OBJECT_MAX));
	ck_assert(!name_object_valid(s, NAME_OBJECT_MAX + 4));
	/* cut inside the last emoji: truncated sequence */
	ck_assert(!name_object_valid(s, NAME_OBJECT_MAX - 1));
	free(s);
}
END_TEST

START_TEST(test_object_nul)
{
	ck_assert(!O("\0"));
	ck_assert(!O("a\0"));
	ck_assert(!O("\0a"));
	ck_assert(!O("a\0b"));
}
END_TEST

START_TEST(test_utf8_overlong)
{
	ck_assert(!U("\xc0\x80"));          /* NUL as 2 bytes */
	ck_assert(!U("\xc0\xaf"));          /* '/' as 2 bytes */
	ck_assert(!U("\xc1\xbf"));          /* U+007F as 2 bytes */
	ck_assert(!U("\xe0\x80\xaf"));      /* '/' as 3 bytes */
	ck_assert(!U("\xe0\x9f\xbf"));      /* U+07FF as 3 bytes */
	ck_assert(!U("\xf0\x80\x80\xaf"));  /* '/' as 4 bytes */
	ck_assert(!U("\xf0\x8f\xbf\xbf"));  /* U+FFFF as 4 bytes */
	ck_assert(!O("..\xc0\xaf..\xc0\xaf" "etc"));
}
END_TEST

START_TEST(test_utf8_surrogates)
{
	ck_assert(!U("\xed\xa0\x80"));      /* U+D800 */
	ck_assert(!U("\xed\xad\xbf"));      /* U+DB7F */
	ck_assert(!U("\xed\xb0\x80"));      /* U+DC00 */
	ck_assert(!U("\xed\xbf\xbf"));      /* U+DFFF */
	ck_assert(!U("\xed\xa0\xbd\xed\xb8\x80")); /* CESU-8 pair for U+1F600 */
}
END_TEST

START_TEST(test_utf8_truncated)
{
	ck_assert(!U("\xc3"));
	ck_assert(!U("abc\xc3"));
	ck_assert(!U("\xe6\x95"));
	ck_assert(!U("\xe6"));
	ck_assert(!U("\xf0\x9f\x98"));
	ck_assert(!U("\xf0\x9f"));
	ck_assert(!U("\xf0"));
	ck_assert(!U("x\xf0\x9f\x98"));
	/* a lead byte followed by something that isn't a continuation */
	ck_assert(!U("\xc3" "a"));
	ck_assert(!U("\xe6\x95" "a"));
	ck_assert(!U("\xf0\x9f\x98" "a"));
	ck_assert(!U("\xe6" "\xc3\xa9"));
	/* the valid prefix alone is fine: the length decides */
	ck_assert(utf8_valid("\xc3\xa9\xc3", 2));
	ck_assert(!utf8_valid("\xc3\xa9\xc3", 3));
}
END_TEST

START_TEST(test_utf8_beyond_max)
{
	ck_assert(!U("\xf4\x90\x80\x80"));  /* U+110000 */
	ck_assert(!U("\xf5\x80\x80\x80"));
	ck_assert(!U("\xf7\xbf\xbf\xbf"));
	ck_assert(!U("\xf8\x88\x80\x80\x80")); /* 5-byte form */
	ck_assert(!U("\xfc\x84\x80\x80\x80\x80")); /* 6-byte form */
	ck_assert(!U("\xfe"));
	ck_assert(!U("\xff"));
}
END_TEST

START_TEST(test_utf8_lone_continuation)
{
	ck_assert(!U("\x80"));
	ck_assert(!U("\xbf"));
	ck_assert(!U("a\x80"));
	ck_assert(!U("\xc3\xa9\xa9"));      /* one continuation too many */
	ck_assert(!U("\xf0\x9f\x98\x80\x80"));
	ck_assert(!O("name\x80"));
}
END_TEST

START_TEST(test_utf8_misc)
{
	ck_assert(utf8_valid("", 0));
	ck_assert(U("plain ascii \x01\x1f"));
	ck_assert(U("a\0b")); /* UTF-8 allows NUL; object names don't */
	ck_assert(!O("a\0b"));
	/* every single byte: ASCII valid, anything else alone invalid */
	for (int c = 0; c < 256; c++) {
		char b = (char)c;
		ck_assert_msg(utf8_valid(&b, 1) == (c < 0x80), "byte 0x%02x", c);
	}
}
END_TEST

/* Custom metadata keys only the cluster writes. */
START_TEST(test_custom_reserved)
{
	static const char *const bad[] = {"s3.acl=aR", "s3.own=x,s3.acl=aR", "color=red, s3.acl=aR", "S3.ACL=aR",
					  "\ts3.etag=0", "a=1,bk.etag=e", "BK.x=1", "s3.", "x=1,s3.m.k",
					  /* every key the cluster writes itself */
					  XARCH_RUN_KEY "=r1", "a=1," DSORT_TAG "=r2", OLVER_ID_KEY "=x", OLVER_NULL_KEY "=1",
					  OLVER_DM_KEY "=1", OLVER_LOCK_MODE_KEY "=COMPLIANCE", OLVER_LOCK_UNTIL_KEY "=9",
					  OLVER_LOCK_HOLD_KEY "=1", " Archive.Run=x", "ais.x=1"};
	static const char *const good[] = {"", "color=blue", "s3x=1", "color=s3.acl", "a=1,b=s3.own", "s3=1",
					   "bk=2,k=bk.etag", "x.s3.acl=1", "archive=1", "run=dsort.run", "aver.dm=1",
					   "locker=1", "aisle=3"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(name_custom_reserved(bad[i], strlen(bad[i])), "%s", bad[i]);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(!name_custom_reserved(good[i], strlen(good[i])), "%s", good[i]);
}
END_TEST

START_TEST(test_tpl)
{
	name_tpl_t t;
	ck_assert(name_tpl_parse("shards/shard-{0000..0012}.tar", &t));
	ck_assert_uint_eq(t.a, 0);
	ck_assert_uint_eq(t.b, 12);
	ck_assert_int_eq(t.width, 4);
	ck_assert_uint_eq(t.pre_len, strlen("shards/shard-"));
	static const char *const yes[] = {"shards/shard-0000.tar", "shards/shard-0012.tar", "shards/shard-0007.tar"};
	static const char *const no[] = {"shards/shard-0013.tar", "shards/shard-007.tar", "shards/shard-00007.tar",
					 "shards/shard-000a.tar", "shards/shard-0001.tgz", "shard-0001.tar",
					 "shards/shard-.tar"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		ck_assert_msg(name_tpl_match(&t, yes[i], strlen(yes[i])), "%s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		ck_assert_msg(!name_tpl_match(&t, no[i], strlen(no[i])), "%s", no[i]);
	ck_assert(name_tpl_parse("x{8..12}", &t)); /* width 1: wider numbers without a leading 0 */
	ck_assert(name_tpl_match(&t, "x12", 3) && name_tpl_match(&t, "x9", 2) && !name_tpl_match(&t, "x09", 3));
	static const char *const bad[] = {"x", "x{1..}", "x{..2}", "x{5..1}", "x{a..b}", "x{0..99999999}", "x{1.2}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!name_tpl_parse(bad[i], &t), "%s", bad[i]);
}
END_TEST

static Suite *names_suite(void)
{
	Suite *s = suite_create("names");
	TCase *b = tcase_create("bucket");
	tcase_add_test(b, test_bucket_valid);
	tcase_add_test(b, test_version_of);
	tcase_add_test(b, test_bucket_length);
	tcase_add_test(b, test_bucket_invalid);
	suite_add_tcase(s, b);
	TCase *o = tcase_create("object");
	tcase_add_test(o, test_object_valid);
	tcase_add_test(o, test_object_dot_segments);
	tcase_add_test(o, test_object_length);
	tcase_add_test(o, test_object_nul);
	tcase_add_test(o, test_utf8_overlong);
	tcase_add_test(o, test_utf8_surrogates);
	tcase_add_test(o, test_utf8_truncated);
	tcase_add_test(o, test_utf8_beyond_max);
	tcase_add_test(o, test_utf8_lone_continuation);
	tcase_add_test(o, test_utf8_misc);
	tcase_add_test(o, test_custom_reserved);
	tcase_add_test(o, test_tpl);
	suite_add_tcase(s, o);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(names_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
