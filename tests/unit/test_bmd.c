/*
 * test_bmd.c - bucket metadata: mutators and their version rule, props
 * checks, strict decode (every error case, every truncation, byte flips),
 * accept rule, persistence.
 */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/bmd.h"
#include "aisd/status.h"
#include "aisd/banned.h"

static bmd_t *mkbmd(int n)
{
	bmd_t *b = bmd_new("cluster-uuid-1", NULL);
	ck_assert_ptr_nonnull(b);
	for (int i = n - 1; i >= 0; i--) {
		char name[16];
		int l = snprintf(name, sizeof(name), "bck-%d", i);
		bmd_props_t p;
		bmd_props_default(&p);
		p.cksum = (enum store_cksum)(i % 4);
		p.mirror_enabled = i % 2;
		p.mirror_copies = (uint32_t)(1 + i % 3);
		p.versioning = i % 3 == 0;
		p.history = (uint8_t)(i % 3);
		p.access = (uint32_t)(BMD_ACCESS_ALL & ~(1u << (i % 7)));
		p.created_ns = 1700000000000000000LL + i;
		if (i % 5 == 2) { /* some erasure-coded buckets round trip too */
			p.mirror_enabled = false;
			p.ec_enabled = true;
			p.ec_data = (uint32_t)(1 + i % 8);
			p.ec_parity = (uint32_t)(1 + i % 3);
			p.ec_objsize_limit = (uint64_t)i << 10;
			p.ec_no_whole = i % 2 == 1;
		}
		ck_assert_int_eq(bmd_add(b, name, (size_t)l, &p, NULL), AIS_OK);
	}
	return b;
}

static void check_valid(const bmd_t *b)
{
	ck_assert_uint_ge(bmd_version(b), 1);
	for (size_t i = 0; i < bmd_size(b); i++) {
		const bmd_bucket_t *k = bmd_bucket(b, i);
		ck_assert(name_bucket_valid(k->name, strlen(k->name)));
		ck_assert_int_eq(bmd_props_check(&k->props, NULL), AIS_OK);
		if (i)
			ck_assert_int_lt(strcmp(bmd_bucket(b, i - 1)->name, k->name), 0);
	}
}

static bmd_t *roundtrip(const bmd_t *b)
{
	buf_t js = BUF_INIT, js2 = BUF_INIT, err = BUF_INIT;
	bmd_t *d = NULL;
	bmd_encode(b, &js);
	ck_assert_msg(bmd_decode(js.ptr, js.len, &d, &err) == AIS_OK, "%s: %s", js.ptr, err.ptr);
	bmd_encode(d, &js2);
	ck_assert_str_eq(js.ptr, js2.ptr);
	buf_free(&js);
	buf_free(&js2);
	buf_free(&err);
	return d;
}

START_TEST(test_roundtrip)
{
	/* an empty BMD (what a new cluster starts with) clones (UBSan: no memcpy from NULL) */
	bmd_t *empty = mkbmd(0), *ec = bmd_clone(empty);
	ck_assert(bmd_equal(empty, ec));
	ck_assert_uint_eq(bmd_size(ec), 0);
	bmd_free(ec);
	bmd_free(empty);

	bmd_t *b = mkbmd(9);
	check_valid(b);
	bmd_t *d = roundtrip(b);
	check_valid(d);
	ck_assert(bmd_equal(b, d));
	ck_assert_uint_eq(bmd_size(d), 9);
	ck_assert_uint_eq(bmd_version(d), 10);
	const bmd_bucket_t *k = bmd_get(d, "bck-5", 5);
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(k->props.cksum, CKSUM_XXHASH);
	ck_assert(k->props.mirror_enabled);
	ck_assert_uint_eq(k->props.mirror_copies, 3);
	ck_assert(!k->props.versioning);
	ck_assert_uint_eq(k->props.history, BMD_HIST_SUSPENDED);
	ck_assert_int_eq(k->props.created_ns, 1700000000000000005LL);
	/* the S3 owner and ACL (a user id with a quote and a space) round trip */
	bmd_props_t sp;
	bmd_props_default(&sp);
	snprintf(sp.s3owner, sizeof(sp.s3owner), "%s", "o \"1\"");
	snprintf(sp.s3acl, sizeof(sp.s3acl), "%s", "aR:uFo \"1\"");
	sp.s3acl_set = true;
	ck_assert_int_eq(bmd_add(b, "s3b", 3, &sp, NULL), AIS_OK);
	bmd_props_default(&sp);
	sp.s3acl_set = true; /* set and empty: an ACL without grants */
	ck_assert_int_eq(bmd_add(b, "s3c", 3, &sp, NULL), AIS_OK);
	bmd_t *ds = roundtrip(b);
	ck_assert(bmd_equal(b, ds));
	ck_assert_str_eq(bmd_get(ds, "s3b", 3)->props.s3acl, "aR:uFo \"1\"");
	ck_assert_str_eq(bmd_get(ds, "s3b", 3)->props.s3owner, "o \"1\"");
	ck_assert(bmd_get(ds, "s3c", 3)->props.s3acl_set);
	ck_assert(!bmd_get(ds, "bck-5", 5)->props.s3acl_set);
	/* the S3 bucket tags round trip; a space or a control byte is refused */
	sp = bmd_get(ds, "s3c", 3)->props;
	snprintf(sp.s3tags, sizeof(sp.s3tags), "%s", "a%20b=c&d=%22e%22");
	ck_assert_int_eq(bmd_set_props(ds, "s3c", 3, &sp, NULL), AIS_OK);
	bmd_t *dt = roundtrip(ds);
	ck_assert(bmd_equal(ds, dt));
	ck_assert_str_eq(bmd_get(dt, "s3c", 3)->props.s3tags, "a%20b=c&d=%22e%22");
	ck_assert_str_eq(bmd_get(dt, "s3b", 3)->props.s3tags, "");
	bmd_free(dt);
	snprintf(sp.s3tags, sizeof(sp.s3tags), "%s", "a b=c");
	ck_assert_int_eq(bmd_set_props(ds, "s3c", 3, &sp, NULL), AIS_ERR);
	/* set_props changes the ACL, never the owner */
	sp = bmd_get(ds, "s3b", 3)->props;
	snprintf(sp.s3acl, sizeof(sp.s3acl), "%s", "uFx");
	snprintf(sp.s3owner, sizeof(sp.s3owner), "%s", "thief");
	ck_assert_int_eq(bmd_set_props(ds, "s3b", 3, &sp, NULL), AIS_OK);
	ck_assert_str_eq(bmd_get(ds, "s3b", 3)->props.s3acl, "uFx");
	ck_assert_str_eq(bmd_get(ds, "s3b", 3)->props.s3owner, "o \"1\"");
	snprintf(sp.s3acl, sizeof(sp.s3acl), "%s", "bad");
	ck_assert_int_eq(bmd_set_props(ds, "s3b", 3, &sp, NULL), AIS_ERR);
	bmd_free(ds);
	bmd_t *e = bmd_new("u", NULL);
	bmd_t *de = roundtrip(e);
	ck_assert(bmd_equal(e, de));
	bmd_free(e);
	bmd_free(de);
	bmd_free(d);
	bmd_free(b);
}
END_TEST

START_TEST(test_mutators)
{
	buf_t err = BUF_INIT;
	bmd_t *b = bmd_new("u1", NULL);
	ck_assert_uint_eq(bmd_version(b), 1);
	ck_assert_ptr_null(bmd_new("bad uuid", NULL));
	ck_assert_int_eq(bmd_add(b, "a", 1, NULL, NULL), AIS_OK);
	ck_assert_uint_eq(bmd_version(b), 2);
	const bmd_bucket_t *a = bmd_get(b, "a", 1);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_gt(a->props.created_ns, 0); /* set to now */
	ck_assert_int_eq(a->props.cksum, CKSUM_XXHASH);
	ck_assert_uint_eq(a->props.access, BMD_ACCESS_ALL);
	int64_t created = a->props.created_ns;
	bmd_t *before = bmd_clone(b);

	ck_assert_int_eq(bmd_add(b, "a", 1, NULL, &err), AIS_ERR);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_uint_gt(err.len, 0);
	ck_assert_int_eq(bmd_add(b, "..", 2, NULL, NULL), AIS_ERR);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(bmd_add(b, "a/b", 3, NULL, NULL), AIS_ERR);
	bmd_props_t p;
	bmd_props_default(&p);
	p.mirror_copies = 0;
	ck_assert_int_eq(bmd_add(b, "c", 1, &p, NULL), AIS_ERR);
	p.mirror_copies = BMD_COPIES_MAX + 1;
	ck_assert_int_eq(bmd_add(b, "c", 1, &p, NULL), AIS_ERR);
	bmd_props_default(&p);
	p.access = 1u << 20;
	ck_assert_int_eq(bmd_add(b, "c", 1, &p, NULL), AIS_ERR);
	bmd_props_default(&p);
	p.cksum = (enum store_cksum)9;
	ck_assert_int_eq(bmd_set_props(b, "a", 1, &p, NULL), AIS_ERR);
	ck_assert_int_eq(bmd_remove(b, "zz", 2, NULL), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(bmd_set_props(b, "zz", 2, &p, NULL), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert(bmd_equal(b, before));

	/* set_props: same props -> no bump; created is kept */
	p = a->props;
	p.created_ns = 5;
	ck_assert_int_eq(bmd_set_props(b, "a", 1, &p, NULL), AIS_OK);
	ck_assert(bmd_equal(b, before));
	p.cksum = CKSUM_MD5;
	p.mirror_enabled = true;
	p.mirror_copies = 3;
	ck_assert_int_eq(bmd_set_props(b, "a", 1, &p, NULL), AIS_OK);
	ck_assert_uint_eq(bmd_version(b), 3);
	a = bmd_get(b, "a", 1);
	ck_assert_int_eq(a->props.cksum, CKSUM_MD5);
	ck_assert_int_eq(a->props.created_ns, created);
	ck_assert_int_eq(bmd_add(b, "b", 1, NULL, NULL), AIS_OK);
	ck_assert_int_eq(bmd_remove(b, "a", 1, NULL), AIS_OK);
	ck_assert_uint_eq(bmd_version(b), 5);
	ck_assert_ptr_null(bmd_get(b, "a", 1));
	ck_assert_uint_eq(bmd_size(b), 1);
	check_valid(b);
	bmd_free(before);
	bmd_free(b);
	buf_free(&err);
}
END_TEST

#define BK(fields) "{\"uuid\":\"u1\",\"version\":2,\"buckets\":[{" fields "}]}"
#define GOODF                                                                                                  \
	"\"name\":\"b\",\"provider\":\"ais\",\"checksum\":\"xxhash\",\"mirror\":{\"enabled\":false,\"copies\":2}," \
	"\"versioning\":true,\"access\":127,\"created\":1"

static const struct {
	const char *json;
	const char *msg;
} bad_bmds[] = {
	{"", "bad JSON"},
	{"null", "bad JSON"},
	{"[]", "not a JSON object"},
	{"{\"uuid\":\"u1\",\"version\":2}", "missing \"buckets\""},
	{"{\"version\":2,\"buckets\":[]}", "missing \"uuid\""},
	{"{\"uuid\":\"u1\",\"buckets\":[]}", "missing \"version\""},
	{"{\"uuid\":\"u1\",\"version\":0,\"buckets\":[]}", "out of range"},
	{"{\"uuid\":\"u1\",\"version\":1e3,\"buckets\":[]}", "not an integer"},
	{"{\"uuid\":\"u 1\",\"version\":1,\"buckets\":[]}", "bad uuid"},
	{"{\"uuid\":\"u1\",\"version\":1,\"buckets\":[],\"x\":0}", "unknown key \"x\""},
	{"{\"uuid\":\"u1\",\"version\":1,\"version\":2,\"buckets\":[]}", "bad JSON"},
	{"{\"uuid\":\"u1\",\"version\":1,\"buckets\":{}}", "not an array"},
	{"{\"uuid\":\"u1\",\"version\":1,\"buckets\":[\"b\"]}", "buckets[0]: not a JSON object"},
	{"{\"uuid\":\"u1\",\"version\":2,\"buckets\":[{" GOODF "},{" GOODF "}]}", "bucket b exists"},
	{BK(GOODF ",\"extra\":1"), "unknown key \"extra\""},
	{BK("\"name\":\"b\",\"provider\":\"ais\",\"checksum\":\"xxhash\",\"mirror\":{\"enabled\":false,\"copies\":2},"
	    "\"versioning\":true,\"access\":127"),
	 "missing \"created\""},
	{BK("\"name\":\"a/b\",\"provider\":\"ais\",\"checksum\":\"xxhash\",\"mirror\":{\"enabled\":false,\"copies\":2},"
	    "\"versioning\":true,\"access\":127,\"created\":1"),
	 "bad bucket name"},
	{BK("\"name\":\"..\",\"provider\":\"ais\",\"checksum\":\"xxhash\",\"mirror\":{\"enabled\":false,\"copies\":2},"
	    "\"versioning\":true,\"access\":127,\"created\":1"),
	 "bad bucket name"},
	{BK("\"name\":\"b\",\"provider\":\"aws\",\"checksum\":\"xxhash\",\"mirror\":{\"enabled\":false,\"copies\":2},"
	    "\"versioning\":true,\"access\":127,\"created\":1"),
	 "unknown provider"},
	{BK("\"name\":\"b\",\"provider\":\"ais\",\"checksum\":\"crc32\",\"mirror\":{\"enabled\":false,\"copies\":2},"
	    "\"versioning\":true,\"access\":127,\"created\":1"),
	 "unknown checksum"},
	{BK("\"name\":\"b\",\"provider\":\"ais\",\"checksum\":\"md5\",\"mirror\":true,"
	    "\"versioning\":true,\"access\":127,\"created\":1"),
	 "mirror: not a JSON object"},
	{BK("\"name\":\"b\",\"provider\":\"ais\",\"checksum\":\"md5\",\"mirror\":{\"enabled\":1,\"copies\":2},"
	    "\"versioning\":true,\"access\":127,\"created\":1"),
	 "\"enabled\" is not a boolean"},
	{BK("\"name\":\"b\",\"provider\":\"ais\",\"checksum\":\"md5\",\"mirror\":{\"enabled\":true,\"copies\":0},"
	    "\"versioning\":true,\"access\":127,\"created\":1"),
	 "\"copies\" out of range"},
	{BK("\"name\":\"b\",\"provider\":\"ais\",\"checksum\":\"md5\",\"mirror\":{\"enabled\":true,\"copies\":33},"
	    "\"versioning\":true,\"access\":127,\"created\":1"),
	 "\"copies\" out of range"},
	{BK("\"name\":\"b\",\"provider\":\"ais\",\"checksum\":\"md5\",\"mirror\":{\"enabled\":true},"
	    "\"versioning\":true,\"access\":127,\"created\":1"),
	 "missing \"copies\""},
	{BK("\"name\":\"b\",\"provider\":\"ais\",\"checksum\":\"md5\",\"mirror\":{\"enabled\":true,\"copies\":2,\"x\":1},"
	    "\"versioning\":true,\"access\":127,\"created\":1"),
	 "unknown key \"x\""},
	{BK("\"name\":\"b\",\"provider\":\"ais\",\"checksum\":\"md5\",\"mirror\":{\"enabled\":true,\"copies\":2},"
	    "\"versioning\":\"yes\",\"access\":127,\"created\":1"),
	 "\"versioning\" is not a boolean"},
	{BK("\"name\":\"b\",\"provider\":\"ais\",\"checksum\":\"md5\",\"mirror\":{\"enabled\":true,\"copies\":2},"
	    "\"versioning\":true,\"access\":128,\"created\":1"),
	 "\"access\" out of range"},
	{BK("\"name\":\"b\",\"provider\":\"ais\",\"checksum\":\"md5\",\"mirror\":{\"enabled\":true,\"copies\":2},"
	    "\"versioning\":true,\"access\":127,\"created\":-5"),
	 "\"created\" out of range"},
};

/* set-bprops: partial updates in AIStore's form; every bad value is EINVAL
 * with the props untouched; encode shows what was set. */
static int patch(bmd_props_t *p, const char *js, buf_t *err)
{
	json_t *v = json_loads(js, 0, NULL);
	ck_assert_ptr_nonnull(v);
	buf_reset(err);
	int rc = bmd_props_patch(p, v, err);
	json_decref(v);
	return rc;
}

START_TEST(test_props_patch)
{
	bmd_props_t p, before;
	buf_t err = BUF_INIT, out = BUF_INIT;
	bmd_props_default(&p);
	p.created_ns = 42;
	ck_assert_int_eq(patch(&p, "{\"mirror\":{\"enabled\":true,\"copies\":3}}", &err), AIS_OK);
	ck_assert(p.mirror_enabled);
	ck_assert_uint_eq(p.mirror_copies, 3);
	ck_assert_int_eq(patch(&p, "{\"checksum\":{\"type\":\"sha256\"},\"versioning\":{\"enabled\":false}}", &err),
			 AIS_OK);
	ck_assert_int_eq(p.cksum, CKSUM_SHA256);
	ck_assert(!p.versioning);
	ck_assert(p.mirror_enabled); /* untouched fields keep their values */
	/* versioning.history: off -> enabled -> suspended, never back to off */
	ck_assert_uint_eq(p.history, BMD_HIST_OFF);
	ck_assert_int_eq(patch(&p, "{\"versioning\":{\"history\":\"off\"}}", &err), AIS_OK);
	ck_assert_int_eq(patch(&p, "{\"versioning\":{\"history\":\"enabled\"}}", &err), AIS_OK);
	ck_assert_uint_eq(p.history, BMD_HIST_ENABLED);
	ck_assert_int_eq(patch(&p, "{\"versioning\":{\"history\":\"off\"}}", &err), AIS_ERR);
	ck_assert_int_eq(patch(&p, "{\"versioning\":{\"history\":\"on\"}}", &err), AIS_ERR);
	ck_assert_int_eq(patch(&p, "{\"versioning\":{\"history\":1}}", &err), AIS_ERR);
	ck_assert_int_eq(patch(&p, "{\"versioning\":{\"history\":\"suspended\"}}", &err), AIS_OK);
	ck_assert_uint_eq(p.history, BMD_HIST_SUSPENDED);
	bmd_props_t ecp = p; /* not with erasure-coded slices only */
	ecp.ec_enabled = true;
	ecp.mirror_enabled = false;
	ecp.ec_no_whole = true;
	ck_assert_int_eq(patch(&ecp, "{\"versioning\":{\"history\":\"enabled\"}}", &err), AIS_ERR);
	p.history = BMD_HIST_OFF;
	ck_assert_int_eq(patch(&p, "{\"access\":\"ro\"}", &err), AIS_OK);
	ck_assert_uint_eq(p.access, BMD_ACCESS_GET | BMD_ACCESS_HEAD | BMD_ACCESS_LIST);
	ck_assert_int_eq(patch(&p, "{\"access\":127}", &err), AIS_OK);
	ck_assert_uint_eq(p.access, BMD_ACCESS_ALL);
	ck_assert_int_eq(patch(&p, "{}", &err), AIS_OK);
	bmd_props_encode(&p, &out);
	bmd_props_t q = p;
	ck_assert_int_eq(patch(&q, "{\"s3\":{\"acl\":\"aR:uFme\"}}", &err), AIS_OK);
	ck_assert(q.s3acl_set);
	ck_assert_str_eq(q.s3acl, "aR:uFme");
	ck_assert_int_eq(patch(&q, "{\"s3\":{\"acl\":\"aQ\"}}", &err), AIS_ERR);
	ck_assert_int_eq(patch(&q, "{\"s3\":{\"owner\":\"me\"}}", &err), AIS_ERR); /* never by set-bprops */
	ck_assert_int_eq(patch(&q, "{\"s3\":{\"tags\":\"k=v&x=%20\"}}", &err), AIS_OK);
	ck_assert_str_eq(q.s3tags, "k=v&x=%20");
	ck_assert_int_eq(patch(&q, "{\"s3\":{\"tags\":\"\"}}", &err), AIS_OK); /* none */
	ck_assert_str_eq(q.s3tags, "");
	ck_assert_int_eq(patch(&q, "{\"s3\":{\"tags\":\"a b\"}}", &err), AIS_ERR);
	ck_assert_int_eq(patch(&q, "{\"s3\":{\"tags\":7}}", &err), AIS_ERR);
	ck_assert_str_eq(out.ptr, "{\"provider\":\"ais\",\"checksum\":{\"type\":\"sha256\"},\"mirror\":{\"enabled\":true,"
				  "\"copies\":3},\"versioning\":{\"enabled\":false},\"access\":127,\"created\":42,"
				  "\"ec\":{\"enabled\":false,\"data_slices\":2,\"parity_slices\":2,\"objsize_limit\":262144,"
				  "\"whole_copy\":true}}");

	/* erasure coding: its group, its ranges, never with mirror */
	bmd_props_t e;
	bmd_props_default(&e);
	ck_assert_int_eq(patch(&e, "{\"ec\":{\"enabled\":true,\"data_slices\":4,\"parity_slices\":2,"
				   "\"objsize_limit\":1024}}", &err), AIS_OK);
	ck_assert(e.ec_enabled);
	ck_assert_uint_eq(e.ec_data, 4);
	ck_assert_uint_eq(e.ec_parity, 2);
	ck_assert_uint_eq(e.ec_objsize_limit, 1024);
	ck_assert(!e.ec_no_whole);
	bmd_props_t f = e;
	ck_assert_int_eq(patch(&f, "{\"ec\":{\"whole_copy\":false}}", &err), AIS_OK);
	ck_assert(f.ec_no_whole);
	ck_assert(bmd_ec_differs(&e, &f)); /* a layout change: empty bucket or re-encode */
	ck_assert_int_eq(patch(&f, "{\"ec\":{\"whole_copy\":\"no\"}}", &err), AIS_ERR);
	ck_assert_int_eq(patch(&e, "{\"mirror\":{\"enabled\":true}}", &err), AIS_ERR);
	ck_assert_int_eq(patch(&e, "{\"ec\":{\"data_slices\":33}}", &err), AIS_ERR);
	ck_assert_int_eq(patch(&e, "{\"ec\":{\"parity_slices\":0}}", &err), AIS_ERR);
	ck_assert_int_eq(patch(&e, "{\"ec\":{\"enabled\":1}}", &err), AIS_ERR);
	ck_assert_int_eq(patch(&e, "{\"ec\":{\"slices\":1}}", &err), AIS_ERR);
	ck_assert_int_eq(patch(&e, "{\"ec\":{\"objsize_limit\":-1}}", &err), AIS_ERR);
	ck_assert_uint_eq(e.ec_data, 4); /* a refused patch changes nothing */

	static const char *const bad[] = {
		"[]", "{\"mirror\":{\"copies\":0}}", "{\"mirror\":{\"copies\":33}}", "{\"mirror\":{\"copies\":\"2\"}}",
		"{\"mirror\":{\"enabled\":1}}", "{\"mirror\":true}", "{\"mirror\":{\"x\":1}}",
		"{\"checksum\":{\"type\":\"crc\"}}", "{\"checksum\":{\"type\":1}}", "{\"checksum\":{\"kind\":\"md5\"}}",
		"{\"versioning\":{\"enabled\":\"no\"}}", "{\"access\":\"rx\"}", "{\"access\":128}", "{\"access\":-1}",
		"{\"provider\":\"ais\"}", "{\"created\":1}", "{\"colour\":\"red\"}",
		"{\"mirror\":{\"copies\":2},\"bogus\":1}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		before = p;
		errno = 0;
		ck_assert_msg(patch(&p, bad[i], &err) == AIS_ERR && errno == EINVAL && err.len > 0, "%s", bad[i]);
		ck_assert_msg(memcmp(&before, &p, sizeof(p)) == 0, "%s changed the props", bad[i]);
	}
	buf_free(&err);
	buf_free(&out);
}
END_TEST

/* The backend block: set-bprops, props JSON, a BMD round trip (only the
 * remote's alias is kept), bad values refused whole. */
START_TEST(test_backend)
{
	bmd_props_t p, before;
	buf_t err = BUF_INIT, out = BUF_INIT;
	bmd_props_default(&p);
	ck_assert_int_eq(patch(&p, "{\"backend\":{\"provider\":\"s3\",\"remote\":\"r1\",\"bucket\":\"src\"}}", &err),
			 AIS_OK);
	ck_assert_str_eq(p.backend.provider, "s3");
	ck_assert_int_eq(patch(&p, "{\"backend\":{\"validate_warm_get\":true}}", &err), AIS_OK);
	ck_assert(p.backend.validate_warm_get && !p.backend.sync);
	ck_assert_str_eq(p.backend.bucket, "src"); /* untouched keys stay */
	bmd_props_encode(&p, &out);
	ck_assert_ptr_nonnull(strstr(out.ptr, ",\"backend\":{\"provider\":\"s3\",\"remote\":\"r1\",\"bucket\":\"src\","
					   "\"validate_warm_get\":true,\"sync\":false}"));
	bmd_t *b = bmd_new("u", NULL), *d;
	ck_assert_int_eq(bmd_add(b, "cache", 5, &p, &err), AIS_OK);
	d = roundtrip(b);
	ck_assert(bmd_equal(b, d));
	ck_assert_str_eq(bmd_get(d, "cache", 5)->props.backend.remote, "r1");
	bmd_free(d);
	bmd_free(b);
	static const char *const bad[] = {
		"{\"backend\":{\"provider\":\"gs\",\"remote\":\"r\",\"bucket\":\"b\"}}",
		"{\"backend\":{\"remote\":\"bad alias\"}}", "{\"backend\":{\"bucket\":\"a/b\"}}",
		"{\"backend\":{\"sync\":1}}", "{\"backend\":{\"url\":\"http://x\"}}", "{\"backend\":[]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		before = p;
		ck_assert_msg(patch(&p, bad[i], &err) == AIS_ERR && err.len > 0, "%s", bad[i]);
		ck_assert_msg(memcmp(&before, &p, sizeof(p)) == 0, "%s changed the props", bad[i]);
	}
	ck_assert_int_eq(patch(&p, "{\"backend\":{\"provider\":\"none\"}}", &err), AIS_OK);
	ck_assert_str_eq(p.backend.provider, "");
	buf_reset(&out);
	bmd_props_encode(&p, &out);
	ck_assert_ptr_null(strstr(out.ptr, "backend"));
	buf_free(&err);
	buf_free(&out);
}
END_TEST

START_TEST(test_decode_errors)
{
	const char *json = bad_bmds[_i].json;
	buf_t err = BUF_INIT;
	bmd_t *b = (bmd_t *)1;
	errno = 0;
	ck_assert_msg(bmd_decode(json, strlen(json), &b, &err) == AIS_ERR, "accepted: %s", json);
	ck_assert_ptr_null(b);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_msg(err.ptr && strstr(err.ptr, bad_bmds[_i].msg), "%s: got \"%s\", want \"%s\"", json,
		      err.ptr ? err.ptr : "", bad_bmds[_i].msg);
	buf_free(&err);
}
END_TEST

static void decode_any(const char *p, size_t n)
{
	char *copy = malloc(n ? n : 1);
	memcpy(copy, p, n);
	buf_t err = BUF_INIT;
	bmd_t *b = NULL;
	int rc = bmd_decode(copy, n, &b, &err);
	if (rc == AIS_OK) {
		check_valid(b);
		bmd_t *d = roundtrip(b);
		ck_assert(bmd_equal(b, d));
		bmd_free(d);
		bmd_free(b);
	} else {
		ck_assert_int_eq(rc, AIS_ERR);
		ck_assert_ptr_null(b);
		ck_assert_uint_gt(err.len, 0);
	}
	buf_free(&err);
	free(copy);
}

START_TEST(test_decode_truncate_and_flip)
{
	bmd_t *b = mkbmd(3);
	buf_t js = BUF_INIT;
	bmd_encode(b, &js);
	for (size_t n = 0; n < js.len; n++)
		decode_any(js.ptr, n);
	static const unsigned char xors[] = {0x01, 0x02, 0x20, 0x40, 0x80, 0xff};
	static const char sets[] = {'"', '{', '}', '[', ']', ',', ':', '0', '9', '-', '\\', ' ', 'x', '\0'};
	char *w = malloc(js.len);
	for (size_t i = 0; i < js.len; i++) {
		for (size_t j = 0; j < sizeof(xors); j++) {
			memcpy(w, js.ptr, js.len);
			w[i] = (char)(w[i] ^ xors[j]);
			decode_any(w, js.len);
		}
		for (size_t j = 0; j < sizeof(sets); j++) {
			memcpy(w, js.ptr, js.len);
			w[i] = sets[j];
			decode_any(w, js.len);
		}
	}
	free(w);
	buf_free(&js);
	bmd_free(b);
}
END_TEST

START_TEST(test_accept)
{
	bmd_t *a = mkbmd(2);
	bmd_t *b = bmd_clone(a);
	ck_assert_int_eq(bmd_accept(NULL, a, NULL), AIS_OK);
	ck_assert_int_eq(bmd_accept(a, b, NULL), AIS_DONE);
	ck_assert_int_eq(bmd_add(b, "new", 3, NULL, NULL), AIS_OK);
	ck_assert_int_eq(bmd_accept(a, b, NULL), AIS_OK);
	ck_assert_int_eq(bmd_accept(b, a, NULL), AIS_ERR);
	ck_assert_int_eq(errno, ESTALE);
	bmd_t *c = bmd_clone(a);
	ck_assert_int_eq(bmd_remove(c, "bck-0", 5, NULL), AIS_OK);
	ck_assert_int_eq(bmd_accept(b, c, NULL), AIS_ERR);
	ck_assert_int_eq(errno, EEXIST);
	bmd_t *o = bmd_new("other", NULL);
	for (int i = 0; i < 10; i++)
		bmd_add(o, "x", 1, NULL, NULL), bmd_remove(o, "x", 1, NULL);
	ck_assert_int_eq(bmd_accept(a, o, NULL), AIS_ERR);
	ck_assert_int_eq(errno, EXDEV);
	bmd_t *d = roundtrip(b);
	ck_assert_int_eq(bmd_accept(b, d, NULL), AIS_DONE);
	bmd_free(a);
	bmd_free(b);
	bmd_free(c);
	bmd_free(d);
	bmd_free(o);
}
END_TEST

START_TEST(test_persist)
{
	char dir[64], path[128], tmp[140];
	buf_t err = BUF_INIT;
	bmd_t *got;
	snprintf(dir, sizeof(dir), "/tmp/test_bmd.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bmd.json", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);

	ck_assert_int_eq(bmd_load(path, &got, &err), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_uint_eq(err.len, 0);

	bmd_t *b = mkbmd(4);
	ck_assert_int_eq(bmd_save(b, path, &err), AIS_OK);
	ck_assert_int_eq(bmd_add(b, "later", 5, NULL, NULL), AIS_OK);
	ck_assert_int_eq(bmd_save(b, path, &err), AIS_OK);
	ck_assert_int_eq(access(tmp, F_OK), -1);
	ck_assert_int_eq(bmd_load(path, &got, &err), AIS_OK);
	ck_assert(bmd_equal(b, got));
	bmd_free(got);

	FILE *f = fopen(tmp, "w");
	fputs("garbage", f);
	fclose(f);
	ck_assert_int_eq(bmd_load(path, &got, &err), AIS_OK);
	ck_assert(bmd_equal(b, got));
	bmd_free(got);

	buf_t js = BUF_INIT;
	bmd_encode(b, &js);
	for (size_t len = 0; len < js.len; len += 5) {
		f = fopen(path, "w");
		fwrite(js.ptr, 1, len, f);
		fclose(f);
		buf_reset(&err);
		ck_assert_int_eq(bmd_load(path, &got, &err), AIS_ERR);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_ptr_nonnull(strstr(err.ptr, path));
	}
	buf_free(&js);
	buf_free(&err);
	bmd_free(b);
	char cmd[100];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A bucket's documents (bmd_doc): each kind beside the entry, independent
 * of the others, encoded under its own key, removed with the bucket, with
 * its size limit; the entry's size does not depend on them. */
START_TEST(test_docs)
{
	buf_t err = BUF_INIT, enc = BUF_INIT;
	bmd_t *b = bmd_new("uuid-1", &err), *d;
	const char *pol = "{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
			  "\"Resource\":\"arn:aws:s3:::b2/*\"}}";
	const char *cors = "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
			   "<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>";
	ck_assert_int_eq(bmd_add(b, "b1", 2, NULL, &err), AIS_OK);
	ck_assert_int_eq(bmd_add(b, "b2", 2, NULL, &err), AIS_OK);
	ck_assert_str_eq(bmd_doc_key(BMD_DOC_POLICY), "policy");
	ck_assert_str_eq(bmd_doc_key(BMD_DOC_CORS), "cors");
	uint64_t v = bmd_version(b);
	ck_assert_int_eq(bmd_set_doc(b, BMD_DOC_CORS, "b2", 2, cors, strlen(cors), &err), AIS_OK);
	ck_assert_int_eq(bmd_set_doc(b, BMD_DOC_POLICY, "b2", 2, pol, strlen(pol), &err), AIS_OK);
	ck_assert_uint_eq(bmd_version(b), v + 2);
	ck_assert_str_eq(bmd_doc(b, BMD_DOC_CORS, "b2", 2), cors);
	ck_assert_str_eq(bmd_policy(b, "b2", 2), pol);
	ck_assert_ptr_null(bmd_doc(b, BMD_DOC_CORS, "b1", 2));
	ck_assert_ptr_null(bmd_doc(b, BMD_DOC_KINDS, "b2", 2));
	/* refusals leave the BMD as it was: a control byte, a NUL, over the
	 * limit, an unknown kind, no bucket */
	ck_assert_int_eq(bmd_set_doc(b, BMD_DOC_CORS, "b2", 2, "<a>\n</a>", 8, &err), AIS_ERR);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(bmd_set_doc(b, BMD_DOC_CORS, "b2", 2, "<a>\0</a>", 8, &err), AIS_ERR);
	char *big = malloc(BMD_S3CORS_MAX + 2);
	memset(big, 'x', BMD_S3CORS_MAX + 1);
	big[BMD_S3CORS_MAX + 1] = '\0';
	ck_assert_int_eq(bmd_set_doc(b, BMD_DOC_CORS, "b1", 2, big, BMD_S3CORS_MAX + 1, &err), AIS_ERR);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(bmd_set_doc(b, BMD_DOC_CORS, "b1", 2, big, BMD_S3CORS_MAX, &err), AIS_OK); /* at it */
	ck_assert_int_eq(bmd_set_doc(b, BMD_DOC_KINDS, "b1", 2, "x", 1, &err), AIS_ERR);
	ck_assert_int_eq(bmd_set_doc(b, BMD_DOC_CORS, "b9", 2, "x", 1, &err), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_str_eq(bmd_doc(b, BMD_DOC_CORS, "b2", 2), cors);
	/* an object ownership is one of S3's three names (s3acl_own_parse) */
	ck_assert_int_eq(bmd_set_doc(b, BMD_DOC_OWNERSHIP, "b2", 2, "BucketOwnerEnforced", 19, &err), AIS_OK);
	ck_assert_int_eq(bmd_set_doc(b, BMD_DOC_OWNERSHIP, "b1", 2, "BucketOwner", 11, &err), AIS_ERR);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(bmd_set_doc(b, BMD_DOC_OWNERSHIP, "b1", 2, "objectwriter", 12, &err), AIS_ERR);
	ck_assert_ptr_null(bmd_doc(b, BMD_DOC_OWNERSHIP, "b1", 2));
	/* one key per kind in the JSON; decode(encode) equals */
	bmd_encode(b, &enc);
	ck_assert_ptr_nonnull(strstr(enc.ptr, "\"s3ownership\":\"BucketOwnerEnforced\""));
	ck_assert_ptr_nonnull(strstr(enc.ptr, "\"s3cors\":\"<CORSConfiguration>"));
	ck_assert_ptr_nonnull(strstr(enc.ptr, "\"s3policy\":"));
	d = roundtrip(b);
	ck_assert(bmd_equal(b, d));
	ck_assert_str_eq(bmd_doc(d, BMD_DOC_CORS, "b2", 2), cors);
	ck_assert_uint_eq(strlen(bmd_doc(d, BMD_DOC_CORS, "b1", 2)), BMD_S3CORS_MAX);
	ck_assert_str_eq(bmd_doc(d, BMD_DOC_OWNERSHIP, "b2", 2), "BucketOwnerEnforced");
	/* the kinds are independent: removing one keeps the other */
	ck_assert_int_eq(bmd_set_doc(d, BMD_DOC_CORS, "b2", 2, NULL, 0, &err), AIS_OK);
	ck_assert(!bmd_equal(b, d));
	ck_assert_ptr_null(bmd_doc(d, BMD_DOC_CORS, "b2", 2));
	ck_assert_str_eq(bmd_policy(d, "b2", 2), pol);
	bmd_free(d);
	/* a clone is its own copy */
	d = bmd_clone(b);
	ck_assert_int_eq(bmd_set_doc(d, BMD_DOC_POLICY, "b2", 2, NULL, 0, &err), AIS_OK);
	ck_assert_str_eq(bmd_policy(b, "b2", 2), pol);
	ck_assert_str_eq(bmd_doc(d, BMD_DOC_CORS, "b2", 2), cors);
	bmd_free(d);
	/* gone with the bucket */
	ck_assert_int_eq(bmd_remove(b, "b2", 2, &err), AIS_OK);
	ck_assert_int_eq(bmd_add(b, "b2", 2, NULL, &err), AIS_OK);
	ck_assert_ptr_null(bmd_doc(b, BMD_DOC_CORS, "b2", 2));
	ck_assert_ptr_null(bmd_policy(b, "b2", 2));
	/* a BMD written before CORS (only "s3policy") still decodes; a stored
	 * CORS document with a control character is refused */
	static const char *const old = "{\"uuid\":\"u\",\"version\":3,\"buckets\":[{\"name\":\"b2\",\"provider\":\"ais\","
				       "\"checksum\":\"xxhash\",\"mirror\":{\"enabled\":false,\"copies\":2},"
				       "\"versioning\":true,\"access\":127,\"created\":1,\"s3policy\":\"{\\\"Statement\\\":"
				       "{\\\"Effect\\\":\\\"Deny\\\",\\\"Principal\\\":\\\"*\\\",\\\"Action\\\":"
				       "\\\"s3:GetObject\\\",\\\"Resource\\\":\\\"arn:aws:s3:::b2/*\\\"}}\"}]}";
	ck_assert_msg(bmd_decode(old, strlen(old), &d, &err) == AIS_OK, "%s", err.ptr);
	ck_assert_uint_eq(bmd_version(d), 3);
	ck_assert_str_eq(bmd_policy(d, "b2", 2), pol);
	ck_assert_ptr_null(bmd_doc(d, BMD_DOC_CORS, "b2", 2));
	bmd_free(d);
	static const char *const badc = "{\"uuid\":\"u\",\"version\":3,\"buckets\":[{\"name\":\"b\",\"provider\":\"ais\","
					"\"checksum\":\"xxhash\",\"mirror\":{\"enabled\":false,\"copies\":2},"
					"\"versioning\":true,\"access\":127,\"created\":1,\"s3cors\":\"a\\tb\"}]}";
	ck_assert_int_eq(bmd_decode(badc, strlen(badc), &d, &err), AIS_ERR);
	ck_assert_ptr_null(d);
	/* set-bprops: a document's key is a string (the caller applies it) */
	bmd_props_t q;
	buf_t pe = BUF_INIT, pe2 = BUF_INIT;
	bmd_props_default(&q);
	bmd_props_encode(&q, &pe);
	ck_assert_int_eq(patch(&q, "{\"s3\":{\"cors\":\"<C/>\",\"policy\":\"\"}}", &err), AIS_OK);
	bmd_props_encode(&q, &pe2);
	ck_assert_str_eq(pe.ptr, pe2.ptr); /* not properties */
	buf_free(&pe);
	buf_free(&pe2);
	ck_assert_int_eq(patch(&q, "{\"s3\":{\"cors\":7}}", &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "s3.cors"));
	/* the documents never grow an entry */
	ck_assert_uint_lt(sizeof(bmd_props_t), 4096);
	free(big);
	buf_free(&enc);
	buf_free(&err);
	bmd_free(b);
}
END_TEST

static Suite *bmd_suite(void)
{
	Suite *s = suite_create("bmd");
	TCase *tc = tcase_create("bmd");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_mutators);
	tcase_add_test(tc, test_props_patch);
	tcase_add_test(tc, test_backend);
	tcase_add_loop_test(tc, test_decode_errors, 0, (int)(sizeof(bad_bmds) / sizeof(bad_bmds[0])));
	tcase_add_test(tc, test_decode_truncate_and_flip);
	tcase_add_test(tc, test_accept);
	tcase_add_test(tc, test_persist);
	tcase_add_test(tc, test_docs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bmd_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
