/*
 * test_s3lc.c - S3 lifecycle configurations: the XML parser with S3's
 * refusals (src/s3/lifecycle.c), the canonical JSON and its round trip,
 * the filter match, the due times (calendar and short days) and the plan
 * of what expires among one name's versions (src/s3auth/lifecycle.c).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/arena.h"
#include "aisd/s3lc.h"
#include "aisd/status.h"
#include "../../src/s3/s3api.h"
#include "aisd/banned.h"

#define DAY S3LC_DAY_NS
#define SEC 1000000000LL
#define S(lit) lit, sizeof(lit) - 1
#define LC "<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
#define END "</LifecycleConfiguration>"

static int parse(arena_t *a, const char *doc, s3lc_t *c, const char **code)
{
	const char *why;
	return s3_lc_parse(a, doc, strlen(doc), c, code, &why);
}

START_TEST(test_parse_roundtrip)
{
	arena_t *a = arena_new(4096);
	s3lc_t c, back;
	const char *code;
	buf_t j = BUF_INIT, j2 = BUF_INIT, x = BUF_INIT;
	const char *doc = LC "<Rule><ID>legacy</ID><Prefix>logs/</Prefix><Status>Enabled</Status>"
			     "<Expiration><Days>30</Days></Expiration></Rule>"
			     "<Rule><Filter><And><Prefix>b/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag>"
			     "<Tag><Key>k2</Key><Value></Value></Tag><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan>"
			     "</And></Filter><Status>Disabled</Status><NoncurrentVersionExpiration><NoncurrentDays>3"
			     "</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions>"
			     "</NoncurrentVersionExpiration></Rule>"
			     "<Rule><ID>d</ID><Filter/><Status>Enabled</Status><Expiration><Date>2030-01-01T00:00:00Z"
			     "</Date></Expiration><AbortIncompleteMultipartUpload><DaysAfterInitiation>7"
			     "</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>" END;
	ck_assert_int_eq(parse(a, doc, &c, &code), AIS_OK);
	ck_assert_uint_eq(c.n, 3);
	ck_assert_str_eq(c.rules[0].prefix, "logs/");
	ck_assert(!c.rules[0].filter);
	ck_assert_int_eq(c.rules[0].exp_days, 30);
	ck_assert_str_eq(c.rules[1].id, "rule-2"); /* made up */
	ck_assert(!c.rules[1].enabled && c.rules[1].has_and);
	ck_assert_uint_eq(c.rules[1].a.ntags, 2);
	ck_assert_str_eq(c.rules[1].a.tags[1].value, "");
	ck_assert_int_eq(c.rules[1].a.gt, 10);
	ck_assert_int_eq(c.rules[1].nc_newer, 2);
	ck_assert_int_eq(c.rules[2].exp_date, 1893456000);
	ck_assert_int_eq(c.rules[2].mpu_days, 7);
	/* JSON: decode(encode(c)) encodes the same */
	s3lc_json(&c, &j);
	ck_assert_int_eq(s3lc_parse_json(a, j.ptr, j.len, &back, NULL), AIS_OK);
	s3lc_json(&back, &j2);
	ck_assert_str_eq(j.ptr, j2.ptr);
	/* the XML answered parses back to the same rules */
	s3_lc_xml(&back, &x);
	ck_assert_int_eq(parse(a, x.ptr, &back, &code), AIS_OK);
	buf_reset(&j2);
	s3lc_json(&back, &j2);
	ck_assert_str_eq(j.ptr, j2.ptr);
	/* JSON that is not a configuration */
	ck_assert_int_eq(s3lc_parse_json(a, S("{\"rules\":[]}"), &back, NULL), AIS_ERR);
	ck_assert_int_eq(s3lc_parse_json(a, S("{\"rules\":[{\"id\":\"x\",\"status\":\"On\",\"exp_days\":1}]}"), &back,
					 NULL),
			 AIS_ERR);
	ck_assert_int_eq(s3lc_parse_json(a, S("[1"), &back, NULL), AIS_ERR);
	ck_assert_int_eq(s3lc_parse_json(a, S("{\"rules\":[{\"id\":\"x\",\"status\":\"Enabled\",\"exp_days\":1}]}"),
					 &back, NULL),
			 AIS_OK);
	ck_assert_int_eq(s3lc_parse_json(a, S("{\"rules\":[{\"id\":\"x\",\"status\":\"Enabled\",\"exp_days\":1,"
					      "\"more\":1}]}"),
					 &back, NULL),
			 AIS_ERR);
	ck_assert_int_eq(s3lc_parse_json(a, S("{\"rules\":[{\"id\":\"x\",\"status\":\"Enabled\",\"exp_days\":0}]}"),
					 &back, NULL),
			 AIS_ERR);
	buf_free(&j);
	buf_free(&j2);
	buf_free(&x);
	arena_destroy(a);
}
END_TEST

START_TEST(test_refusals)
{
	static const struct {
		const char *doc, *code;
	} bad[] = {
		{"<LifecycleConfiguration/>", "MalformedXML"},
		{LC "<Rule><ID>a</ID><Prefix>x</Prefix><Status>enabled</Status><Expiration><Days>1</Days></Expiration>"
		    "</Rule>" END,
		 "MalformedXML"},
		{LC "<Rule><ID>a</ID><Prefix>x</Prefix><Expiration><Days>1</Days></Expiration></Rule>" END, "MalformedXML"},
		{LC "<Rule><ID>a</ID><Prefix>x</Prefix><Filter/><Status>Enabled</Status><Expiration><Days>1</Days>"
		    "</Expiration></Rule>" END,
		 "MalformedXML"},
		{LC "<Rule><ID>a</ID><Prefix>x</Prefix><Status>Enabled</Status><Expiration><Days>0</Days></Expiration>"
		    "</Rule>" END,
		 "InvalidArgument"},
		{LC "<Rule><ID>a</ID><Prefix>x</Prefix><Status>Enabled</Status><Expiration><Date>2020-01-01T10:00:00Z"
		    "</Date></Expiration></Rule>" END,
		 "InvalidArgument"},
		{LC "<Rule><ID>a</ID><Prefix>x</Prefix><Status>Enabled</Status><Expiration><Days>1</Days>"
		    "<ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>" END,
		 "MalformedXML"},
		{LC "<Rule><ID>a</ID><Prefix>x</Prefix><Status>Enabled</Status><Expiration><Days>1</Days></Expiration>"
		    "</Rule><Rule><ID>a</ID><Prefix>y</Prefix><Status>Enabled</Status><Expiration><Days>1</Days>"
		    "</Expiration></Rule>" END,
		 "InvalidArgument"},
		{LC "<Rule><ID>a</ID><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status>"
		    "<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>" END,
		 "InvalidRequest"},
		{LC "<Rule><ID>a</ID><Filter><Tag><Key>k</Key><Value>v</Value></Tag><Tag><Key>j</Key><Value>v</Value>"
		    "</Tag></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>" END,
		 "MalformedXML"},
		{LC "<Rule><ID>a</ID><Filter><And><Tag><Key>k</Key><Value>v</Value></Tag><Tag><Key>k</Key><Value>w"
		    "</Value></Tag></And></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration>"
		    "</Rule>" END,
		 "InvalidArgument"},
		{LC "<Rule><ID>a</ID><Filter><And><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan>"
		    "<ObjectSizeLessThan>5</ObjectSizeLessThan></And></Filter><Status>Enabled</Status><Expiration>"
		    "<Days>1</Days></Expiration></Rule>" END,
		 "InvalidArgument"},
		{LC "<Rule><ID>a</ID><Prefix>x</Prefix><Status>Enabled</Status></Rule>" END, "InvalidRequest"},
		{LC "<Rule><ID>a</ID><Prefix>x</Prefix><Status>Enabled</Status><NoncurrentVersionExpiration>"
		    "<NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>101</NewerNoncurrentVersions>"
		    "</NoncurrentVersionExpiration></Rule>" END,
		 "InvalidArgument"},
		{LC "<Rule><ID>a</ID><Prefix>x</Prefix><Status>Enabled</Status><Transition><Date>1970-08-23T01:28:47Z"
		    "</Date><StorageClass>GLACIER</StorageClass></Transition></Rule>" END,
		 "InvalidArgument"},
		{LC "<Rule><ID>a</ID><Prefix>x</Prefix><Status>Enabled</Status><Other/></Rule>" END, "MalformedXML"},
		{"<Tagging/>", "MalformedXML"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		arena_t *a = arena_new(4096);
		s3lc_t c;
		const char *code;
		ck_assert_msg(parse(a, bad[i].doc, &c, &code) == AIS_ERR, "accepted: %s", bad[i].doc);
		ck_assert_msg(!strcmp(code, bad[i].code), "%s: %s, not %s", bad[i].doc, code, bad[i].code);
		arena_destroy(a);
	}
	/* an ID of 255 is fine, 256 is not; a transition parses (the handler refuses it: 501) */
	arena_t *a = arena_new(4096);
	buf_t d = BUF_INIT;
	s3lc_t c;
	const char *code;
	char id[257];
	memset(id, 'i', 256);
	id[256] = 0;
	buf_addf(&d, LC "<Rule><ID>%.255s</ID><Prefix>x</Prefix><Status>Enabled</Status><Transition><Days>1</Days>"
			"<StorageClass>GLACIER</StorageClass></Transition></Rule>" END,
		 id);
	ck_assert_int_eq(parse(a, d.ptr, &c, &code), AIS_OK);
	ck_assert_uint_eq(c.rules[0].transitions, 1);
	buf_reset(&d);
	buf_addf(&d, LC "<Rule><ID>%s</ID><Prefix>x</Prefix><Status>Enabled</Status><Expiration><Days>1</Days>"
			"</Expiration></Rule>" END,
		 id);
	ck_assert_int_eq(parse(a, d.ptr, &c, &code), AIS_ERR);
	ck_assert_str_eq(code, "InvalidArgument");
	buf_free(&d);
	arena_destroy(a);
}
END_TEST

START_TEST(test_match_due)
{
	arena_t *a = arena_new(4096);
	s3lc_t c;
	const char *code;
	/* Ceph's form: Prefix and Tag beside And: all of them must hold */
	const char *doc = LC "<Rule><ID>r</ID><Filter><Prefix>days1/</Prefix><Tag><Key>tom</Key><Value>sawyer</Value>"
			     "</Tag><And><Prefix>days1</Prefix><Tag><Key>huck</Key><Value>finn</Value></Tag></And>"
			     "</Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>" END;
	ck_assert_int_eq(parse(a, doc, &c, &code), AIS_OK);
	char k1[] = "tom", v1[] = "sawyer", k2[] = "huck", v2[] = "finn";
	s3lc_tag_t tom[] = {{k1, v1}}, both[] = {{k2, v2}, {k1, v1}};
	s3lc_obj_t o = {.key = "days1/tom", .klen = 9, .tags = tom, .ntags = 1};
	ck_assert(!s3lc_match(&c.rules[0], &o));
	o.tags = both, o.ntags = 2;
	ck_assert(s3lc_match(&c.rules[0], &o));
	o.key = "days2/tom";
	ck_assert(!s3lc_match(&c.rules[0], &o));
	/* sizes are strict bounds */
	s3lc_rule_t u;
	s3lc_rule_init(&u);
	u.filter = true, u.f.gt = 10, u.f.lt = 20;
	s3lc_obj_t z = {.key = "k", .klen = 1, .size = 10};
	ck_assert(!s3lc_match(&u, &z));
	z.size = 11;
	ck_assert(s3lc_match(&u, &z));
	z.size = 20;
	ck_assert(!s3lc_match(&u, &z));
	/* calendar days: rounded up to the next midnight UTC; short days: exact */
	int64_t t0 = 1700000000LL * SEC; /* 2023-11-14 22:13:20 UTC */
	ck_assert_int_eq(s3lc_due(t0, 1, DAY), 1700092800LL * SEC); /* 2023-11-16 00:00 */
	ck_assert_int_eq(s3lc_due(1700006400LL * SEC, 1, DAY), 1700092800LL * SEC); /* a midnight stays */
	ck_assert_int_eq(s3lc_due(t0, 3, 2 * SEC), t0 + 6 * SEC);
	/* x-amz-expiration: the earliest enabled Expiration that matches */
	int64_t when;
	const s3lc_rule_t *r;
	ck_assert(s3lc_expiry(&c, &o, t0, &when, &r) == false);
	o.key = "days1/huck";
	ck_assert(s3lc_expiry(&c, &o, t0, &when, &r));
	ck_assert_str_eq(r->id, "r");
	ck_assert_int_eq(when, 1700092800LL * SEC);
	arena_destroy(a);
}
END_TEST

/* A configuration of one rule for the plans. */
static s3lc_t one_rule(arena_t *a, const char *actions)
{
	s3lc_t c;
	const char *code;
	buf_t d = BUF_INIT;
	buf_addf(&d, LC "<Rule><ID>r</ID><Filter><Prefix>p/</Prefix></Filter><Status>Enabled</Status>%s</Rule>" END,
		 actions);
	ck_assert_int_eq(parse(a, d.ptr, &c, &code), AIS_OK);
	buf_free(&d);
	return c;
}

START_TEST(test_plan)
{
	arena_t *a = arena_new(4096);
	int64_t D = 2 * SEC, t = 1000 * SEC;
	s3lc_ver_t cur = {.o = {.key = "p/o", .klen = 3}, .start_ns = t + 10 * D};
	s3lc_ver_t v[6];
	for (int i = 0; i < 6; i++)
		v[i] = (s3lc_ver_t){.o = {.key = "p/o", .klen = 3}, .start_ns = t + i * D};

	/* Expiration Days 1: the current version, a day after its write */
	s3lc_t c = one_rule(a, "<Expiration><Days>1</Days></Expiration>");
	ck_assert(!s3lc_plan(&c, &cur, NULL, 0, cur.start_ns + D - 1, D));
	ck_assert(s3lc_plan(&c, &cur, NULL, 0, cur.start_ns + D, D));
	s3lc_ver_t other = cur;
	other.o.key = "q/o";
	ck_assert(!s3lc_plan(&c, &other, NULL, 0, cur.start_ns + 100 * D, D));

	/* NoncurrentDays 1, NewerNoncurrentVersions 2: of 6 noncurrent, the
	 * 2 newest stay; a version counts from its successor's write */
	c = one_rule(a, "<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>2"
			"</NewerNoncurrentVersions></NoncurrentVersionExpiration>");
	ck_assert(!s3lc_plan(&c, &cur, v, 6, t + 4 * D, D));
	ck_assert(v[0].expire && v[1].expire && v[2].expire && !v[3].expire && !v[4].expire && !v[5].expire);
	ck_assert(!s3lc_plan(&c, &cur, v, 6, t + 3 * D - 1, D));
	ck_assert(v[0].expire && !v[1].expire); /* v[1] became noncurrent at v[2]'s write, t + 2D */

	/* ExpiredObjectDeleteMarker: a marker alone goes, not one over a version */
	c = one_rule(a, "<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>");
	v[1].dm = true;
	s3lc_plan(&c, NULL, v, 2, t + 100 * D, D);
	ck_assert(!v[0].expire && !v[1].expire);
	s3lc_plan(&c, NULL, &v[1], 1, t + 100 * D, D);
	ck_assert(v[1].expire);
	/* ... nor the marker when it is current beside a current object (none here) */

	/* NoncurrentDays with ExpiredObjectDeleteMarker: the version under the
	 * marker goes and the marker with it in the same plan */
	c = one_rule(a, "<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>"
			"<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration>");
	s3lc_plan(&c, NULL, v, 2, t + 3 * D, D);
	ck_assert(v[0].expire && v[1].expire);
	s3lc_plan(&c, NULL, v, 2, t + 2 * D - 1, D); /* the version not due yet: the marker stays */
	ck_assert(!v[0].expire && !v[1].expire);

	/* Expiration Days on a marker alone: counted from the marker's write */
	c = one_rule(a, "<Expiration><Days>5</Days></Expiration>");
	s3lc_plan(&c, NULL, &v[1], 1, v[1].start_ns + 5 * D - 1, D);
	ck_assert(!v[1].expire);
	s3lc_plan(&c, NULL, &v[1], 1, v[1].start_ns + 5 * D, D);
	ck_assert(v[1].expire);

	/* a disabled rule does nothing */
	c.rules[0].enabled = false;
	ck_assert(!s3lc_plan(&c, &cur, NULL, 0, t + 1000 * D, D));

	/* uploads: by prefix and days after initiation */
	c = one_rule(a, "<AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation>"
			"</AbortIncompleteMultipartUpload>");
	ck_assert(!s3lc_upload_due(&c, "p/u", 3, t, t + 2 * D - 1, D));
	ck_assert(s3lc_upload_due(&c, "p/u", 3, t, t + 2 * D, D));
	ck_assert(!s3lc_upload_due(&c, "q/u", 3, t, t + 20 * D, D));
	arena_destroy(a);
}
END_TEST

static Suite *s3lc_suite(void)
{
	Suite *s = suite_create("s3lc");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_parse_roundtrip);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_match_due);
	tcase_add_test(tc, test_plan);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(s3lc_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
