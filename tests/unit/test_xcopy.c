/*
 * test_xcopy.c - the pure parts of the copy-bck / etl-bck job (xcopy.h):
 * the run's value checked, the extension renames.
 */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/xcopy.h"
#include "aisd/banned.h"

static int check(const char *js, bool etl)
{
	json_t *v = json_loads(js, 0, NULL);
	buf_t err = BUF_INIT;
	int rc = xcopy_spec_check(v, etl, &err);
	ck_assert(rc == 0 || err.len > 0); /* a refusal says why */
	buf_free(&err);
	json_decref(v);
	return rc;
}

START_TEST(test_spec)
{
	ck_assert_int_eq(check("{}", false), 0);
	ck_assert_int_eq(check("{\"prefix\":\"a/\",\"dry_run\":true,\"coer\":false}", false), 0);
	ck_assert_int_eq(check("{\"etl\":\"up\",\"template\":\"s-{00..10}.tar\",\"ext\":{\".jpg\":\".npy\"}}", true), 0);
	ck_assert_int_eq(check("{\"etl\":\"up\",\"etl_args\":\"x\"}", true), 0);
	ck_assert_int_eq(check("{}", true), -1);                 /* etl-bck without its transformer */
	ck_assert_int_eq(check("{\"etl\":\"up\"}", false), -1);  /* copy-bck with one */
	ck_assert_int_eq(check("{\"etl\":\"\"}", true), -1);
	ck_assert_int_eq(check("{\"prefix\":1}", false), -1);
	ck_assert_int_eq(check("{\"coer\":\"yes\"}", false), -1);
	ck_assert_int_eq(check("{\"template\":\"x{9..1}\"}", false), -1);
	ck_assert_int_eq(check("{\"ext\":{\"jpg\":\"a/b\"}}", false), -1);
	ck_assert_int_eq(check("{\"ext\":{\"jpg\":\"\"}}", false), -1);
	ck_assert_int_eq(check("{\"ext\":{\"a.b\":\"c\"}}", false), -1);
	ck_assert_int_eq(check("{\"ext\":[\"jpg\"]}", false), -1);
	ck_assert_int_eq(check("{\"etl\":\"up\",\"etl_args\":3}", true), -1);
}
END_TEST

static const char *ren(const xcopy_ext_t *e, const char *name)
{
	static char out[64];
	return xcopy_rename(e, name, strlen(name), out, sizeof(out)) ? out : "(refused)";
}

START_TEST(test_rename)
{
	json_t *o = json_loads("{\".jpg\":\".npy\",\"png\":\"npy\"}", 0, NULL);
	xcopy_ext_t e;
	ck_assert_int_eq(xcopy_ext_parse(o, &e, NULL), 0);
	json_decref(o);
	ck_assert_uint_eq(e.n, 2);
	ck_assert_str_eq(ren(&e, "a/b.jpg"), "a/b.npy");
	ck_assert_str_eq(ren(&e, "b.png"), "b.npy");
	ck_assert_str_eq(ren(&e, "b.jpg.txt"), "b.jpg.txt"); /* the last extension only */
	ck_assert_str_eq(ren(&e, "x.jpg/b"), "x.jpg/b");     /* of the last segment */
	ck_assert_str_eq(ren(&e, "dir/.jpg"), "dir/.jpg");   /* a hidden name has none */
	ck_assert_str_eq(ren(&e, "b.jpeg"), "b.jpeg");
	ck_assert_str_eq(ren(&e, "noext"), "noext");
	xcopy_ext_t none;
	ck_assert_int_eq(xcopy_ext_parse(NULL, &none, NULL), 0);
	ck_assert_str_eq(ren(&none, "a.jpg"), "a.jpg");
	char small[6];
	ck_assert(!xcopy_rename(&e, "abc.jpg", 7, small, sizeof(small))); /* over the room */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xcopy");
	TCase *tc = tcase_create("spec");
	tcase_add_test(tc, test_spec);
	tcase_add_test(tc, test_rename);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
