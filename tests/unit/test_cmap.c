/*
 * test_cmap.c - the cluster map: mutators and their version rule, strict
 * decode (every error case, every truncation, byte flips), accept rule,
 * HRW owner/top-k over active targets (same answers as hrw.h, spread,
 * minimal movement, maintenance never owns), election order, terms, the
 * voting rules and ballots, persistence.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aisd/cmap.h"
#include "aisd/names.h"
#include "aisd/hrw.h"
#include "aisd/status.h"
#include "aisd/banned.h"

static cmap_node_t mknode(const char *id, enum cmap_role role, enum cmap_state st)
{
	cmap_node_t n;
	memset(&n, 0, sizeof(n));
	snprintf(n.id, sizeof(n.id), "%s", id);
	n.role = role;
	n.state = st;
	snprintf(n.pub_url, sizeof(n.pub_url), "http://10.0.0.1:%d", 8000 + (int)strlen(id));
	snprintf(n.intra_url, sizeof(n.intra_url), "https://%s.intra:9080/x", id);
	return n;
}

/* A map with gateway g0 (primary), gateways g1..g(ng-1), targets t0..t(nt-1). */
static cmap_t *mkmap(int ng, int nt)
{
	cmap_node_t p = mknode("g0", CMAP_GATEWAY, CMAP_ACTIVE);
	cmap_t *m = cmap_new("cluster-uuid-1", &p, NULL);
	ck_assert_ptr_nonnull(m);
	char id[16];
	for (int i = 1; i < ng; i++) {
		snprintf(id, sizeof(id), "g%d", i);
		cmap_node_t n = mknode(id, CMAP_GATEWAY, CMAP_ACTIVE);
		ck_assert_int_eq(cmap_add(m, &n, NULL), AIS_OK);
	}
	for (int i = 0; i < nt; i++) {
		snprintf(id, sizeof(id), "t%d", i);
		cmap_node_t n = mknode(id, CMAP_TARGET, CMAP_ACTIVE);
		ck_assert_int_eq(cmap_add(m, &n, NULL), AIS_OK);
	}
	return m;
}

/* Invariants of any map handed out. */
static void check_valid(const cmap_t *m)
{
	ck_assert_uint_ge(cmap_version(m), 1);
	const cmap_node_t *p = cmap_get(m, cmap_primary(m), strlen(cmap_primary(m)));
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p->role, CMAP_GATEWAY);
	ck_assert_int_eq(p->state, CMAP_ACTIVE);
	for (size_t i = 0; i < cmap_size(m); i++) {
		const cmap_node_t *n = cmap_node(m, i);
		ck_assert(cmap_id_valid(n->id, strlen(n->id)));
		ck_assert(cmap_url_valid(n->pub_url, strlen(n->pub_url)));
		ck_assert(cmap_url_valid(n->intra_url, strlen(n->intra_url)));
		ck_assert_uint_eq(n->digest, hrw_digest(n->id, strlen(n->id)));
		if (i)
			ck_assert_int_lt(strcmp(cmap_node(m, i - 1)->id, n->id), 0);
	}
}

static cmap_t *roundtrip(const cmap_t *m)
{
	buf_t js = BUF_INIT, err = BUF_INIT;
	cmap_t *d = NULL;
	cmap_encode(m, &js);
	ck_assert_msg(cmap_decode(js.ptr, js.len, &d, &err) == AIS_OK, "%s: %s", js.ptr, err.ptr);
	buf_t js2 = BUF_INIT;
	cmap_encode(d, &js2);
	ck_assert_str_eq(js.ptr, js2.ptr);
	buf_free(&js);
	buf_free(&js2);
	buf_free(&err);
	return d;
}

/* The maintenance drain flag: only in maintenance, encoded only when set,
 * cleared by any other state, part of equality. */
/* A kept version (names.h) is placed by its object's name: same owner,
 * same holders, under every map. */
START_TEST(test_version_placed_with_object)
{
	for (int nt = 1; nt <= 6; nt++) {
		cmap_t *m = mkmap(1, nt);
		for (int i = 0; i < 200; i++) {
			char o[64], v[128];
			int ol = snprintf(o, sizeof(o), "bck/obj-%d", i);
			int vl = snprintf(v, sizeof(v), "%s" NAME_VER_TAG "%016x%016x", o, i * 7919, i);
			ck_assert_ptr_eq(cmap_owner(m, o, (size_t)ol), cmap_owner(m, v, (size_t)vl));
			const cmap_node_t *a[HRW_TOP_MAX], *b[HRW_TOP_MAX];
			size_t na = cmap_top(m, o, (size_t)ol, 3, a), nb = cmap_top(m, v, (size_t)vl, 3, b);
			ck_assert_uint_eq(na, nb);
			for (size_t k = 0; k < na; k++)
				ck_assert_ptr_eq(a[k], b[k]);
		}
		cmap_free(m);
	}
}
END_TEST

START_TEST(test_drain)
{
	cmap_t *m = mkmap(2, 3);
	buf_t js = BUF_INIT;
	ck_assert_int_eq(cmap_set_drain(m, "t1", true, NULL), AIS_ERR);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(cmap_set_drain(m, "zz", true, NULL), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(cmap_set_state(m, "t1", CMAP_MAINTENANCE, NULL), AIS_OK);
	cmap_t *before = cmap_clone(m);
	uint64_t v = cmap_version(m);
	ck_assert_int_eq(cmap_set_drain(m, "t1", false, NULL), AIS_OK);
	ck_assert_uint_eq(cmap_version(m), v);
	ck_assert_int_eq(cmap_set_drain(m, "t1", true, NULL), AIS_OK);
	ck_assert_uint_eq(cmap_version(m), v + 1);
	ck_assert(cmap_get(m, "t1", 2)->drain);
	ck_assert(!cmap_equal(m, before));
	cmap_encode(m, &js);
	ck_assert_ptr_nonnull(strstr(js.ptr, "\"drain\":true"));
	cmap_t *d = roundtrip(m);
	ck_assert(cmap_equal(m, d));
	ck_assert_int_eq(cmap_set_state(m, "t1", CMAP_ACTIVE, NULL), AIS_OK);
	ck_assert(!cmap_get(m, "t1", 2)->drain);
	buf_reset(&js);
	cmap_encode(m, &js);
	ck_assert_ptr_null(strstr(js.ptr, "drain"));
	buf_free(&js);
	cmap_free(d);
	cmap_free(before);
	cmap_free(m);
}
END_TEST

/* Lost targets: cmap_drop of a target (not of a gateway or a node
 * decommissioning) lists it in the same version, a re-add or cmap_forget
 * takes it off; encoded only when not empty, part of equality. */
START_TEST(test_lost)
{
	cmap_t *m = mkmap(2, 4);
	buf_t js = BUF_INIT;
	uint64_t v = cmap_version(m);
	ck_assert_int_eq(cmap_drop(m, "t2", NULL), AIS_OK);
	ck_assert_uint_eq(cmap_version(m), v + 1);
	ck_assert_ptr_null(cmap_get(m, "t2", 2));
	ck_assert_uint_eq(cmap_lost_count(m), 1);
	ck_assert_str_eq(cmap_lost(m, 0), "t2");
	ck_assert_ptr_null(cmap_lost(m, 1));
	ck_assert_int_eq(cmap_drop(m, "g1", NULL), AIS_OK); /* a gateway: not lost */
	ck_assert_int_eq(cmap_set_state(m, "t3", CMAP_DECOMMISSIONING, NULL), AIS_OK);
	ck_assert_int_eq(cmap_drop(m, "t3", NULL), AIS_OK); /* drained: not lost */
	ck_assert_int_eq(cmap_drop(m, "t0", NULL), AIS_OK);
	ck_assert_int_eq(cmap_drop(m, "zz", NULL), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_uint_eq(cmap_lost_count(m), 2);
	ck_assert_str_eq(cmap_lost(m, 0), "t0");
	ck_assert_str_eq(cmap_lost(m, 1), "t2");
	cmap_encode(m, &js);
	ck_assert_ptr_nonnull(strstr(js.ptr, ",\"lost\":[\"t0\",\"t2\"]}"));
	cmap_t *d = roundtrip(m);
	ck_assert(cmap_equal(m, d));
	cmap_t *c = cmap_clone(m);
	ck_assert(cmap_equal(m, c));
	v = cmap_version(m);
	ck_assert_int_eq(cmap_forget(m, "t9"), AIS_OK);
	ck_assert_uint_eq(cmap_version(m), v);
	ck_assert_int_eq(cmap_forget(m, "t0"), AIS_OK);
	ck_assert_uint_eq(cmap_version(m), v + 1);
	ck_assert(!cmap_equal(m, c));
	cmap_node_t n = mknode("t2", CMAP_TARGET, CMAP_ACTIVE);
	ck_assert_int_eq(cmap_add(m, &n, NULL), AIS_OK); /* back */
	ck_assert_uint_eq(cmap_lost_count(m), 0);
	buf_reset(&js);
	cmap_encode(m, &js);
	ck_assert_ptr_null(strstr(js.ptr, "lost"));
	buf_free(&js);
	cmap_free(c);
	cmap_free(d);
	cmap_free(m);
}
END_TEST

START_TEST(test_roundtrip)
{
	cmap_t *m = mkmap(3, 6);
	ck_assert_int_eq(cmap_set_state(m, "t2", CMAP_MAINTENANCE, NULL), AIS_OK);
	ck_assert_int_eq(cmap_set_state(m, "t4", CMAP_DECOMMISSIONING, NULL), AIS_OK);
	check_valid(m);
	cmap_t *d = roundtrip(m);
	check_valid(d);
	ck_assert(cmap_equal(m, d));
	ck_assert_uint_eq(cmap_version(d), cmap_version(m));
	ck_assert_str_eq(cmap_primary(d), "g0");
	ck_assert_str_eq(cmap_uuid(d), "cluster-uuid-1");
	ck_assert_uint_eq(cmap_size(d), 9);
	cmap_t *c = cmap_clone(d);
	ck_assert(cmap_equal(c, m));
	cmap_free(c);
	cmap_free(d);
	cmap_free(m);
}
END_TEST

START_TEST(test_mutators)
{
	buf_t err = BUF_INIT;
	cmap_t *m = mkmap(2, 3);
	/* 1 (new) + 1 gateway + 3 targets */
	ck_assert_uint_eq(cmap_version(m), 5);
	ck_assert_uint_eq(cmap_count(m, CMAP_TARGET, CMAP_ANY), 3);
	ck_assert_uint_eq(cmap_count(m, CMAP_GATEWAY, CMAP_ACTIVE), 2);
	ck_assert_uint_eq(cmap_count(m, CMAP_ANY, CMAP_ANY), 5);
	cmap_t *before = cmap_clone(m);

	/* failures leave the map as it was */
	cmap_node_t dup = mknode("t1", CMAP_TARGET, CMAP_ACTIVE);
	ck_assert_int_eq(cmap_add(m, &dup, &err), AIS_ERR);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_uint_gt(err.len, 0);
	cmap_node_t bad = mknode("t9", CMAP_TARGET, CMAP_ACTIVE);
	snprintf(bad.pub_url, sizeof(bad.pub_url), "ftp://x");
	ck_assert_int_eq(cmap_add(m, &bad, NULL), AIS_ERR);
	ck_assert_int_eq(errno, EINVAL);
	bad = mknode("t/9", CMAP_TARGET, CMAP_ACTIVE);
	ck_assert_int_eq(cmap_add(m, &bad, NULL), AIS_ERR);
	bad = mknode("t9", CMAP_TARGET, CMAP_ACTIVE);
	bad.role = (enum cmap_role)7;
	ck_assert_int_eq(cmap_add(m, &bad, NULL), AIS_ERR);
	ck_assert_int_eq(cmap_remove(m, "nope", NULL), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(cmap_remove(m, "g0", NULL), AIS_ERR);
	ck_assert_int_eq(errno, EBUSY);
	ck_assert_int_eq(cmap_set_state(m, "g0", CMAP_MAINTENANCE, NULL), AIS_ERR);
	ck_assert_int_eq(errno, EBUSY);
	ck_assert_int_eq(cmap_set_primary(m, "t0", NULL), AIS_ERR);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(cmap_set_primary(m, "zz", NULL), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert(cmap_equal(m, before));

	/* no-op changes keep the version */
	ck_assert_int_eq(cmap_set_state(m, "t0", CMAP_ACTIVE, NULL), AIS_OK);
	ck_assert_int_eq(cmap_set_primary(m, "g0", NULL), AIS_OK);
	ck_assert(cmap_equal(m, before));

	/* each change bumps by one */
	ck_assert_int_eq(cmap_set_state(m, "t0", CMAP_MAINTENANCE, NULL), AIS_OK);
	ck_assert_uint_eq(cmap_version(m), 6);
	ck_assert_uint_eq(cmap_count(m, CMAP_TARGET, CMAP_ACTIVE), 2);
	ck_assert_int_eq(cmap_set_primary(m, "g1", NULL), AIS_OK);
	ck_assert_uint_eq(cmap_version(m), 7);
	ck_assert_str_eq(cmap_primary(m), "g1");
	ck_assert_int_eq(cmap_remove(m, "g0", NULL), AIS_OK);
	ck_assert_uint_eq(cmap_version(m), 8);
	ck_assert_ptr_null(cmap_get(m, "g0", 2));
	ck_assert_ptr_nonnull(cmap_get(m, "t2", 2));
	ck_assert_ptr_null(cmap_get(m, "t", 1));
	ck_assert_ptr_null(cmap_get(m, "t22", 3));
	check_valid(m);

	/* cmap_new checks its primary */
	cmap_node_t t = mknode("t0", CMAP_TARGET, CMAP_ACTIVE);
	ck_assert_ptr_null(cmap_new("u", &t, NULL));
	cmap_node_t g = mknode("g0", CMAP_GATEWAY, CMAP_ACTIVE);
	ck_assert_ptr_null(cmap_new("bad uuid", &g, NULL));
	ck_assert_ptr_null(cmap_new("", &g, NULL));
	cmap_free(before);
	cmap_free(m);
	buf_free(&err);
}
END_TEST

START_TEST(test_url_rules)
{
	static const char *const good[] = {"http://a", "https://a:1", "http://10.0.0.1:8080/", "http://[::1]:80",
					   "https://h.example.com/p?q"};
	static const char *const bad[] = {"", "http://", "https://", "ftp://a", "http:/a", "HTTP://a",
					  "http://a b", "http://:80", "http:///x", "http://u@h", "http://a\x01",
					  "http://\xc3\xa9"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(cmap_url_valid(good[i], strlen(good[i])), "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!cmap_url_valid(bad[i], strlen(bad[i])), "%s", bad[i]);
}
END_TEST

#define N1 "{\"id\":\"g0\",\"role\":\"gateway\",\"state\":\"active\",\"public_url\":\"http://a\",\"intra_url\":\"http://b\"}"
#define N2 "{\"id\":\"t0\",\"role\":\"target\",\"state\":\"active\",\"public_url\":\"http://a\",\"intra_url\":\"http://b\"}"
#define HEAD "{\"uuid\":\"u1\",\"version\":3,\"primary\":\"g0\","

static const struct {
	const char *json;
	const char *msg; /* a substring of the error */
} bad_maps[] = {
	{"", "bad JSON"},
	{"[]", "not a JSON object"},
	{"{", "bad JSON"},
	{HEAD "\"nodes\":[" N1 "]} x", "bad JSON"},
	{"{\"version\":3,\"primary\":\"g0\",\"nodes\":[" N1 "]}", "missing \"uuid\""},
	{"{\"uuid\":\"u1\",\"primary\":\"g0\",\"nodes\":[" N1 "]}", "missing \"version\""},
	{"{\"uuid\":\"u1\",\"version\":3,\"nodes\":[" N1 "]}", "missing \"primary\""},
	{"{\"uuid\":\"u1\",\"version\":3,\"primary\":\"g0\"}", "missing \"nodes\""},
	{HEAD "\"nodes\":[" N1 "],\"extra\":1}", "unknown key \"extra\""},
	{HEAD "\"nodes\":[" N1 "],\"lost\":\"t1\"}", "\"lost\" is not an array"},
	{HEAD "\"nodes\":[" N1 "],\"lost\":[\"bad id\"]}", "lost[0]: bad id"},
	{HEAD "\"nodes\":[" N1 "],\"lost\":[\"t1\",\"t1\"]}", "listed twice"},
	{HEAD "\"nodes\":[" N1 "],\"lost\":[\"g0\"]}", "a node of the map"},
	{HEAD "\"nodes\":[" N1 "],\"uuid\":\"u1\"}", "bad JSON"}, /* duplicate key */
	{"{\"uuid\":\"u1\",\"version\":0,\"primary\":\"g0\",\"nodes\":[" N1 "]}", "\"version\" out of range"},
	{"{\"uuid\":\"u1\",\"version\":-1,\"primary\":\"g0\",\"nodes\":[" N1 "]}", "\"version\" out of range"},
	{"{\"uuid\":\"u1\",\"version\":1.5,\"primary\":\"g0\",\"nodes\":[" N1 "]}", "not an integer"},
	{"{\"uuid\":\"u1\",\"version\":\"3\",\"primary\":\"g0\",\"nodes\":[" N1 "]}", "not an integer"},
	{"{\"uuid\":1,\"version\":3,\"primary\":\"g0\",\"nodes\":[" N1 "]}", "\"uuid\" is not a string"},
	{"{\"uuid\":\"\",\"version\":3,\"primary\":\"g0\",\"nodes\":[" N1 "]}", "bad uuid"},
	{"{\"uuid\":\"a b\",\"version\":3,\"primary\":\"g0\",\"nodes\":[" N1 "]}", "bad uuid"},
	{"{\"uuid\":\"u\\u0000\",\"version\":3,\"primary\":\"g0\",\"nodes\":[" N1 "]}", "bad JSON"},
	{"{\"uuid\":\"u1\",\"version\":3,\"primary\":\"\",\"nodes\":[" N1 "]}", "bad primary"},
	{HEAD "\"nodes\":{}}", "\"nodes\" is not an array"},
	{HEAD "\"nodes\":[1]}", "nodes[0]: not a JSON object"},
	{HEAD "\"nodes\":[]}", "primary g0 is not among the nodes"},
	{HEAD "\"nodes\":[" N2 "]}", "primary g0 is not among the nodes"},
	{"{\"uuid\":\"u1\",\"version\":3,\"primary\":\"t0\",\"nodes\":[" N1 "," N2 "]}", "not an active gateway"},
	{HEAD "\"nodes\":[{\"id\":\"g0\",\"role\":\"gateway\",\"state\":\"maintenance\",\"public_url\":\"http://a\","
	      "\"intra_url\":\"http://b\"}]}",
	 "not an active gateway"},
	{HEAD "\"nodes\":[" N1 "," N1 "]}", "duplicate node id g0"},
	{HEAD "\"nodes\":[" N1 ",{\"id\":\"t0\",\"role\":\"proxy\",\"state\":\"active\",\"public_url\":\"http://a\","
	      "\"intra_url\":\"http://b\"}]}",
	 "unknown role"},
	{HEAD "\"nodes\":[" N1 ",{\"id\":\"t0\",\"role\":\"target\",\"state\":\"down\",\"public_url\":\"http://a\","
	      "\"intra_url\":\"http://b\"}]}",
	 "unknown state"},
	{HEAD "\"nodes\":[" N1 ",{\"id\":\"t0\",\"role\":\"target\",\"state\":\"active\",\"public_url\":\"ftp://a\","
	      "\"intra_url\":\"http://b\"}]}",
	 "bad public_url"},
	{HEAD "\"nodes\":[" N1 ",{\"id\":\"t0\",\"role\":\"target\",\"state\":\"active\",\"public_url\":\"http://a\","
	      "\"intra_url\":\"http://\"}]}",
	 "bad intra_url"},
	{HEAD "\"nodes\":[" N1 ",{\"id\":\"t/0\",\"role\":\"target\",\"state\":\"active\",\"public_url\":\"http://a\","
	      "\"intra_url\":\"http://b\"}]}",
	 "bad id"},
	{HEAD "\"nodes\":[" N1 ",{\"id\":\"t0\",\"role\":\"target\",\"state\":\"active\",\"public_url\":\"http://a\"}]}",
	 "missing \"intra_url\""},
	{HEAD "\"nodes\":[" N1 ",{\"id\":\"t0\",\"role\":\"target\",\"state\":\"active\",\"public_url\":\"http://a\","
	      "\"intra_url\":\"http://b\",\"digest\":1}]}",
	 "unknown key \"digest\""},
	{HEAD "\"nodes\":[" N1 ",{\"id\":\"t0\",\"role\":1,\"state\":\"active\",\"public_url\":\"http://a\","
	      "\"intra_url\":\"http://b\"}]}",
	 "\"role\" is not a string"},
};

START_TEST(test_decode_errors)
{
	const char *json = bad_maps[_i].json;
	buf_t err = BUF_INIT;
	cmap_t *m = (cmap_t *)1;
	errno = 0;
	int rc = cmap_decode(json, strlen(json), &m, &err);
	ck_assert_msg(rc == AIS_ERR, "accepted: %s", json);
	ck_assert_ptr_null(m);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_msg(err.ptr && strstr(err.ptr, bad_maps[_i].msg), "%s: got \"%s\", want \"%s\"", json,
		      err.ptr ? err.ptr : "", bad_maps[_i].msg);
	buf_free(&err);
}
END_TEST

START_TEST(test_decode_good_minimal)
{
	const char *json = HEAD "\"nodes\":[" N2 "," N1 "]}";
	cmap_t *m;
	ck_assert_int_eq(cmap_decode(json, strlen(json), &m, NULL), AIS_OK);
	check_valid(m);
	ck_assert_str_eq(cmap_node(m, 0)->id, "g0"); /* sorted */
	ck_assert_uint_eq(cmap_version(m), 3);
	/* decode reads exactly len bytes: a prefix that is itself not JSON fails */
	cmap_t *p;
	ck_assert_int_eq(cmap_decode(json, strlen(json) - 1, &p, NULL), AIS_ERR);
	cmap_free(m);
}
END_TEST

/* Decode of any bytes: AIS_OK with a valid map that round-trips, or a clean
 * AIS_ERR with a message. */
static void decode_any(const char *p, size_t n)
{
	char *copy = malloc(n ? n : 1); /* no terminator: decode stays inside n */
	memcpy(copy, p, n);
	buf_t err = BUF_INIT;
	cmap_t *m = NULL;
	int rc = cmap_decode(copy, n, &m, &err);
	if (rc == AIS_OK) {
		ck_assert_ptr_nonnull(m);
		check_valid(m);
		cmap_t *d = roundtrip(m);
		ck_assert(cmap_equal(m, d));
		cmap_free(d);
		cmap_free(m);
	} else {
		ck_assert_int_eq(rc, AIS_ERR);
		ck_assert_ptr_null(m);
		ck_assert_uint_gt(err.len, 0);
	}
	buf_free(&err);
	free(copy);
}

START_TEST(test_decode_truncate_and_flip)
{
	cmap_t *m = mkmap(2, 4);
	cmap_set_state(m, "t1", CMAP_MAINTENANCE, NULL);
	buf_t js = BUF_INIT;
	cmap_encode(m, &js);
	for (size_t n = 0; n < js.len; n++)
		decode_any(js.ptr, n);
	static const unsigned char xors[] = {0x01, 0x02, 0x20, 0x40, 0x80, 0xff};
	static const char sets[] = {'"', '{', '}', '[', ']', ',', ':', '0', '\\', ' ', 'x', '\0'};
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
	cmap_free(m);
}
END_TEST

START_TEST(test_accept)
{
	buf_t err = BUF_INIT;
	cmap_t *a = mkmap(2, 3);
	cmap_t *b = cmap_clone(a);
	ck_assert_int_eq(cmap_accept(NULL, a, NULL), AIS_OK);
	ck_assert_int_eq(cmap_accept(a, b, NULL), AIS_DONE);
	cmap_node_t n = mknode("t7", CMAP_TARGET, CMAP_ACTIVE);
	ck_assert_int_eq(cmap_add(b, &n, NULL), AIS_OK);
	ck_assert_int_eq(cmap_accept(a, b, NULL), AIS_OK);
	ck_assert_int_eq(cmap_accept(b, a, &err), AIS_ERR);
	ck_assert_int_eq(errno, ESTALE);
	ck_assert_ptr_nonnull(strstr(err.ptr, "older"));
	/* two writers made different maps with the same version */
	cmap_t *c = cmap_clone(a);
	cmap_node_t n2 = mknode("t8", CMAP_TARGET, CMAP_ACTIVE);
	ck_assert_int_eq(cmap_add(c, &n2, NULL), AIS_OK);
	ck_assert_uint_eq(cmap_version(b), cmap_version(c));
	ck_assert_int_eq(cmap_accept(b, c, NULL), AIS_ERR);
	ck_assert_int_eq(errno, EEXIST);
	/* another cluster, even if newer */
	cmap_node_t g = mknode("g0", CMAP_GATEWAY, CMAP_ACTIVE);
	cmap_t *o = cmap_new("other-cluster", &g, NULL);
	for (int i = 0; i < 20; i++)
		cmap_set_state(o, "g0", CMAP_ACTIVE, NULL), cmap_add(o, &n, NULL), cmap_remove(o, "t7", NULL);
	ck_assert_uint_gt(cmap_version(o), cmap_version(a));
	ck_assert_int_eq(cmap_accept(a, o, NULL), AIS_ERR);
	ck_assert_int_eq(errno, EXDEV);
	/* decoded copies are accepted the same way */
	cmap_t *d = roundtrip(b);
	ck_assert_int_eq(cmap_accept(b, d, NULL), AIS_DONE);
	ck_assert_int_eq(cmap_accept(a, d, NULL), AIS_OK);
	cmap_free(a);
	cmap_free(b);
	cmap_free(c);
	cmap_free(d);
	cmap_free(o);
	buf_free(&err);
}
END_TEST

static int uname_of(int i, char *out, size_t cap) { return snprintf(out, cap, "bck/obj-%07d", i); }

#define NAMES 20000

START_TEST(test_owner_vs_hrw)
{
	for (int nt = 3; nt <= 10; nt++) {
		cmap_t *m = mkmap(1, nt);
		uint64_t dig[10];
		const cmap_node_t *tn[10];
		size_t count[10] = {0};
		for (int i = 0; i < nt; i++) {
			char id[8];
			int l = snprintf(id, sizeof(id), "t%d", i);
			dig[i] = hrw_digest(id, (size_t)l);
			tn[i] = cmap_get(m, id, (size_t)l);
		}
		for (int i = 0; i < NAMES; i++) {
			char u[32];
			int l = uname_of(i, u, sizeof(u));
			const cmap_node_t *o = cmap_owner(m, u, (size_t)l);
			size_t want = hrw_owner(hrw_name_hash(u, (size_t)l), dig, (size_t)nt);
			ck_assert_ptr_eq(o, tn[want]);
			count[want]++;
		}
		double mean = (double)NAMES / nt;
		for (int i = 0; i < nt; i++)
			ck_assert_msg(count[i] > mean * 0.85 && count[i] < mean * 1.15, "%d targets: t%d owns %zu", nt,
				      i, count[i]);
		cmap_free(m);
	}
}
END_TEST

START_TEST(test_join_moves_few)
{
	for (int nt = 3; nt <= 9; nt++) {
		cmap_t *m = mkmap(2, nt);
		cmap_t *m2 = cmap_clone(m);
		cmap_node_t n = mknode("t-new", CMAP_TARGET, CMAP_ACTIVE);
		ck_assert_int_eq(cmap_add(m2, &n, NULL), AIS_OK);
		int moved = 0;
		for (int i = 0; i < NAMES; i++) {
			char u[32];
			int l = uname_of(i, u, sizeof(u));
			const cmap_node_t *a = cmap_owner(m, u, (size_t)l), *b = cmap_owner(m2, u, (size_t)l);
			if (strcmp(a->id, b->id)) {
				ck_assert_str_eq(b->id, "t-new"); /* only to the newcomer */
				moved++;
			}
		}
		double want = (double)NAMES / (nt + 1);
		ck_assert_msg(moved > want * 0.85 && moved < want * 1.15, "%d->%d targets: %d moved, ~%.0f expected",
			      nt, nt + 1, moved, want);
		cmap_free(m);
		cmap_free(m2);
	}
}
END_TEST

START_TEST(test_maintenance_never_owner)
{
	cmap_t *m = mkmap(2, 6);
	ck_assert_int_eq(cmap_set_state(m, "t1", CMAP_MAINTENANCE, NULL), AIS_OK);
	ck_assert_int_eq(cmap_set_state(m, "t4", CMAP_DECOMMISSIONING, NULL), AIS_OK);
	ck_assert_uint_eq(cmap_count(m, CMAP_TARGET, CMAP_ACTIVE), 4);
	ck_assert_uint_eq(cmap_count(m, CMAP_TARGET, CMAP_MAINTENANCE), 1);
	ck_assert_uint_eq(cmap_count(m, CMAP_ANY, CMAP_DECOMMISSIONING), 1);
	for (int i = 0; i < NAMES; i++) {
		char u[32];
		int l = uname_of(i, u, sizeof(u));
		const cmap_node_t *o = cmap_owner(m, u, (size_t)l);
		ck_assert_int_eq(o->role, CMAP_TARGET);
		ck_assert_int_eq(o->state, CMAP_ACTIVE);
		const cmap_node_t *top[HRW_TOP_MAX];
		ck_assert_uint_eq(cmap_top(m, u, (size_t)l, 10, top), 4);
		for (int j = 0; j < 4; j++)
			ck_assert(top[j]->state == CMAP_ACTIVE && top[j]->role == CMAP_TARGET);
	}
	/* back to active: owners as if it never left */
	cmap_t *full = mkmap(2, 6);
	ck_assert_int_eq(cmap_set_state(m, "t1", CMAP_ACTIVE, NULL), AIS_OK);
	ck_assert_int_eq(cmap_set_state(m, "t4", CMAP_ACTIVE, NULL), AIS_OK);
	for (int i = 0; i < 2000; i++) {
		char u[32];
		int l = uname_of(i, u, sizeof(u));
		ck_assert_str_eq(cmap_owner(m, u, (size_t)l)->id, cmap_owner(full, u, (size_t)l)->id);
	}
	cmap_free(full);
	/* no active target: no owner */
	cmap_t *g = mkmap(3, 0);
	const cmap_node_t *top[4];
	ck_assert_ptr_null(cmap_owner(g, "b/o", 3));
	ck_assert_uint_eq(cmap_top(g, "b/o", 3, 4, top), 0);
	cmap_free(g);
	cmap_free(m);
}
END_TEST

START_TEST(test_top_k)
{
	cmap_t *m = mkmap(1, 8);
	for (int i = 0; i < 2000; i++) {
		char u[32];
		int l = uname_of(i, u, sizeof(u));
		const cmap_node_t *top[HRW_TOP_MAX];
		size_t k = cmap_top(m, u, (size_t)l, 3, top);
		ck_assert_uint_eq(k, 3);
		ck_assert_ptr_eq(top[0], cmap_owner(m, u, (size_t)l));
		ck_assert(top[0] != top[1] && top[1] != top[2] && top[0] != top[2]);
		uint64_t h = hrw_name_hash(u, (size_t)l);
		ck_assert_uint_gt(hrw_weight(h, top[0]->digest), hrw_weight(h, top[1]->digest));
		ck_assert_uint_gt(hrw_weight(h, top[1]->digest), hrw_weight(h, top[2]->digest));
		/* all 8, distinct; a longer list starts with the shorter one */
		const cmap_node_t *all[HRW_TOP_MAX];
		ck_assert_uint_eq(cmap_top(m, u, (size_t)l, 100, all), 8);
		for (int a = 0; a < 8; a++)
			for (int b = a + 1; b < 8; b++)
				ck_assert_ptr_ne(all[a], all[b]);
		for (int a = 0; a < 3; a++)
			ck_assert_ptr_eq(all[a], top[a]);
	}
	const cmap_node_t *top[1];
	ck_assert_uint_eq(cmap_top(m, "x", 1, 0, top), 0);
	cmap_free(m);
}
END_TEST

START_TEST(test_election_order)
{
	cmap_t *m = mkmap(5, 3);
	ck_assert_int_eq(cmap_set_state(m, "g3", CMAP_MAINTENANCE, NULL), AIS_OK);
	const cmap_node_t *o[8], *o2[8], *o3[8];
	size_t n = cmap_election_order(m, o, 8);
	ck_assert_uint_eq(n, 4);
	uint64_t h = hrw_name_hash("cluster-uuid-1", strlen("cluster-uuid-1"));
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(o[i]->role, CMAP_GATEWAY);
		ck_assert_int_eq(o[i]->state, CMAP_ACTIVE);
		if (i)
			ck_assert_uint_gt(hrw_weight(h, o[i - 1]->digest), hrw_weight(h, o[i]->digest));
	}
	/* after encode/decode: same ids in the same order */
	cmap_t *d = roundtrip(m);
	ck_assert_uint_eq(cmap_election_order(d, o2, 8), n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(o[i]->id, o2[i]->id);
	/* a map built in another order gives the same order */
	cmap_node_t p = mknode("g0", CMAP_GATEWAY, CMAP_ACTIVE);
	cmap_t *r = cmap_new("cluster-uuid-1", &p, NULL);
	for (int i = 4; i >= 1; i--) {
		char id[8];
		snprintf(id, sizeof(id), "g%d", i);
		cmap_node_t g = mknode(id, CMAP_GATEWAY, i == 3 ? CMAP_MAINTENANCE : CMAP_ACTIVE);
		ck_assert_int_eq(cmap_add(r, &g, NULL), AIS_OK);
	}
	ck_assert_uint_eq(cmap_election_order(r, o3, 8), n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(o[i]->id, o3[i]->id);
	/* cap smaller than the count: the best ones, total still reported */
	const cmap_node_t *one[1];
	ck_assert_uint_eq(cmap_election_order(m, one, 1), n);
	ck_assert_ptr_eq(one[0], o[0]);
	cmap_free(m);
	cmap_free(d);
	cmap_free(r);
}
END_TEST

/* terms: (term, version) order, term first */
START_TEST(test_term_accept)
{
	buf_t err = BUF_INIT;
	cmap_t *a = mkmap(3, 2);
	ck_assert_uint_eq(cmap_term(a), 1);
	/* an old primary's map with many more versions ... */
	cmap_t *old = cmap_clone(a);
	cmap_node_t n = mknode("t9", CMAP_TARGET, CMAP_ACTIVE);
	for (int i = 0; i < 5; i++)
		cmap_add(old, &n, NULL), cmap_remove(old, "t9", NULL);
	/* ... loses to the new term's map, whatever its version */
	cmap_t *nt = cmap_clone(a);
	uint64_t v = cmap_version(nt);
	ck_assert_int_eq(cmap_set_term(nt, 2, NULL), AIS_OK);
	ck_assert_uint_eq(cmap_version(nt), v + 1);
	ck_assert_int_eq(cmap_set_primary(nt, "g1", NULL), AIS_OK);
	ck_assert_int_eq(cmap_remove(nt, "g0", NULL), AIS_OK);
	ck_assert_uint_lt(cmap_version(nt), cmap_version(old));
	ck_assert_int_lt(cmap_cmp(old, nt), 0);
	ck_assert_int_gt(cmap_cmp(nt, old), 0);
	ck_assert_int_eq(cmap_accept(old, nt, NULL), AIS_OK);
	ck_assert_int_eq(cmap_accept(nt, old, &err), AIS_ERR);
	ck_assert_int_eq(errno, ESTALE);
	ck_assert_ptr_nonnull(strstr(err.ptr, "term 1"));
	/* same version, other term: not equal, the higher term wins */
	cmap_t *x = cmap_clone(a), *y = cmap_clone(a);
	cmap_set_term(y, 7, NULL);
	cmap_add(x, &n, NULL);
	ck_assert_uint_eq(cmap_version(x), cmap_version(y));
	ck_assert(!cmap_equal(x, y));
	ck_assert_int_eq(cmap_accept(x, y, NULL), AIS_OK);
	ck_assert_int_eq(cmap_accept(y, x, NULL), AIS_ERR);
	/* terms only grow */
	ck_assert_int_eq(cmap_set_term(y, 7, NULL), AIS_ERR);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(cmap_set_term(y, 3, NULL), AIS_ERR);
	/* the term survives encode/decode; a map without one is term 1 */
	cmap_t *d = roundtrip(y);
	ck_assert_uint_eq(cmap_term(d), 7);
	ck_assert(cmap_equal(d, y));
	const char *noterm = "{\"uuid\":\"u\",\"version\":2,\"primary\":\"g0\",\"nodes\":[{\"id\":\"g0\",\"role\":"
			     "\"gateway\",\"state\":\"active\",\"public_url\":\"http://a\",\"intra_url\":\"http://a\"}]}";
	cmap_t *o;
	ck_assert_int_eq(cmap_decode(noterm, strlen(noterm), &o, NULL), AIS_OK);
	ck_assert_uint_eq(cmap_term(o), 1);
	cmap_free(o);
	const char *zero = "{\"uuid\":\"u\",\"term\":0,\"version\":2,\"primary\":\"g0\",\"nodes\":[{\"id\":\"g0\","
			   "\"role\":\"gateway\",\"state\":\"active\",\"public_url\":\"http://a\",\"intra_url\":\"http://a\"}]}";
	ck_assert_int_eq(cmap_decode(zero, strlen(zero), &o, NULL), AIS_ERR);
	cmap_free(a);
	cmap_free(old);
	cmap_free(nt);
	cmap_free(x);
	cmap_free(y);
	cmap_free(d);
	buf_free(&err);
}
END_TEST

static cmap_ballot_t ballot(const cmap_t *m, const char *cand, uint64_t term, uint64_t bmdv)
{
	cmap_ballot_t b;
	memset(&b, 0, sizeof(b));
	snprintf(b.uuid, sizeof(b.uuid), "%s", cmap_uuid(m));
	snprintf(b.candidate, sizeof(b.candidate), "%s", cand);
	snprintf(b.primary, sizeof(b.primary), "%s", cmap_primary(m));
	b.term = term;
	b.cmap_term = cmap_term(m);
	b.cmap_version = cmap_version(m);
	b.bmd_version = bmdv;
	return b;
}

/* the voter's rules V1-V4 (cmap.h) */
START_TEST(test_vote_rules)
{
	cmap_t *m = mkmap(3, 3); /* primary g0, term 1 */
	cmap_vote_rec_t none = {0, ""};
	buf_t why = BUF_INIT;
	cmap_ballot_t b = ballot(m, "g1", 2, 5);
#define VOTE(rec, bal, alive) cmap_vote(m, 5, rec, bal, alive, NULL)
	ck_assert_int_eq(VOTE(&none, &b, false), CMAP_VOTE_YES);
	/* V2: the primary still answers this voter */
	ck_assert_int_eq(cmap_vote(m, 5, &none, &b, true, &why), CMAP_VOTE_NO);
	ck_assert_ptr_nonnull(strstr(why.ptr, "answers"));
	/* V4: one vote per term; a retry of the same candidate is yes again */
	cmap_vote_rec_t rec = {2, "g1"};
	ck_assert_int_eq(VOTE(&rec, &b, false), CMAP_VOTE_YES);
	cmap_ballot_t b2 = ballot(m, "g2", 2, 5);
	ck_assert_int_eq(VOTE(&rec, &b2, false), CMAP_VOTE_NO);
	b2.term = 3; /* a later term is a new vote */
	ck_assert_int_eq(VOTE(&rec, &b2, false), CMAP_VOTE_YES);
	cmap_vote_rec_t rec5 = {5, "g2"};
	ck_assert_int_eq(VOTE(&rec5, &b2, false), CMAP_VOTE_NO);
	/* V4: the term must be above the map's */
	cmap_ballot_t b1 = ballot(m, "g1", 1, 5);
	ck_assert_int_eq(VOTE(&none, &b1, false), CMAP_VOTE_NO);
	/* V3: a candidate with older metadata is told so (stale) */
	cmap_ballot_t bs = ballot(m, "g1", 2, 4);
	ck_assert_int_eq(VOTE(&none, &bs, false), CMAP_VOTE_STALE);
	bs = ballot(m, "g1", 2, 5);
	bs.cmap_version--;
	ck_assert_int_eq(VOTE(&none, &bs, false), CMAP_VOTE_STALE);
	bs.cmap_version += 10; /* newer than ours: fine */
	ck_assert_int_eq(VOTE(&none, &bs, false), CMAP_VOTE_YES);
	/* V1: other cluster, other primary, a candidate that is no active gateway */
	cmap_ballot_t bo = b;
	snprintf(bo.uuid, sizeof(bo.uuid), "other");
	ck_assert_int_eq(VOTE(&none, &bo, false), CMAP_VOTE_NO);
	bo = b;
	snprintf(bo.primary, sizeof(bo.primary), "g2");
	ck_assert_int_eq(VOTE(&none, &bo, false), CMAP_VOTE_NO);
	cmap_ballot_t bt = ballot(m, "t0", 2, 5);
	ck_assert_int_eq(VOTE(&none, &bt, false), CMAP_VOTE_NO);
	cmap_ballot_t bp = ballot(m, "g0", 2, 5);
	ck_assert_int_eq(VOTE(&none, &bp, false), CMAP_VOTE_NO);
	cmap_ballot_t bx = ballot(m, "g7", 2, 5);
	ck_assert_int_eq(VOTE(&none, &bx, false), CMAP_VOTE_NO);
	ck_assert_int_eq(cmap_set_state(m, "g2", CMAP_MAINTENANCE, NULL), AIS_OK);
	cmap_ballot_t bm = ballot(m, "g2", 2, 5);
	ck_assert_int_eq(VOTE(&none, &bm, false), CMAP_VOTE_NO);
#undef VOTE
	/* quorum: a majority of all nodes, the dead primary counted */
	ck_assert_uint_eq(cmap_quorum(m), 4); /* 6 nodes */
	cmap_node_t t = mknode("t9", CMAP_TARGET, CMAP_ACTIVE);
	cmap_add(m, &t, NULL);
	ck_assert_uint_eq(cmap_quorum(m), 4); /* 7 nodes */
	cmap_free(m);
	buf_free(&why);
}
END_TEST

/* one winner per term: voters that vote by the rules never give two
 * candidates a majority in the same term */
START_TEST(test_vote_one_winner)
{
	cmap_t *m = mkmap(3, 4); /* 7 nodes, quorum 4 */
	cmap_vote_rec_t rec[7];
	memset(rec, 0, sizeof(rec));
	for (unsigned seed = 1; seed < 200; seed++) {
		memset(rec, 0, sizeof(rec));
		size_t yes1 = 1, yes2 = 1; /* each candidate votes for itself */
		rec[1] = (cmap_vote_rec_t){2, "g1"};
		rec[2] = (cmap_vote_rec_t){2, "g2"};
		cmap_ballot_t b1 = ballot(m, "g1", 2, 1), b2 = ballot(m, "g2", 2, 1);
		unsigned r = seed;
		for (int v = 0; v < 7; v++) {
			if (v == 1 || v == 2)
				continue;
			r = r * 1103515245u + 12345u;
			bool first = (r >> 16) & 1; /* which ballot reaches this voter first */
			cmap_ballot_t *x = first ? &b1 : &b2, *y = first ? &b2 : &b1;
			if (cmap_vote(m, 1, &rec[v], x, false, NULL) == CMAP_VOTE_YES) {
				rec[v] = (cmap_vote_rec_t){x->term, ""};
				snprintf(rec[v].candidate, sizeof(rec[v].candidate), "%s", x->candidate);
				*(x == &b1 ? &yes1 : &yes2) += 1;
			}
			if (cmap_vote(m, 1, &rec[v], y, false, NULL) == CMAP_VOTE_YES)
				*(y == &b1 ? &yes1 : &yes2) += 1;
		}
		ck_assert(!(yes1 >= cmap_quorum(m) && yes2 >= cmap_quorum(m)));
		ck_assert_uint_eq(yes1 + yes2, 7);
	}
	cmap_free(m);
}
END_TEST

/* the lease rules L1 and V5 (cmap.h), and the request's JSON */
START_TEST(test_lease_rules)
{
	cmap_t *m = mkmap(3, 3); /* primary g0, term 1 */
	cmap_vote_rec_t none = {0, ""}, voted2 = {2, "g1"}, voted1 = {1, "g1"};
	cmap_lease_req_t r;
	buf_t why = BUF_INIT, js = BUF_INIT, err = BUF_INIT;

	memset(&r, 0, sizeof(r));
	snprintf(r.uuid, sizeof(r.uuid), "%s", cmap_uuid(m));
	snprintf(r.primary, sizeof(r.primary), "g0");
	r.term = 1;
	ck_assert(cmap_lease_grant(m, &none, &r, NULL));
	ck_assert(cmap_lease_grant(m, &voted1, &r, NULL)); /* a vote in its own term: still its primary */
	/* L1: a node that voted in a newer term promised it */
	ck_assert(!cmap_lease_grant(m, &voted2, &r, &why));
	ck_assert_ptr_nonnull(strstr(why.ptr, "voted in the newer term 2"));
	/* L1: in the map's term only its primary; a newer term (a push not yet
	 * here) from anyone; an older one from no one */
	snprintf(r.primary, sizeof(r.primary), "g1");
	ck_assert(!cmap_lease_grant(m, &none, &r, NULL));
	r.term = 2;
	ck_assert(cmap_lease_grant(m, &none, &r, NULL));
	ck_assert(cmap_lease_grant(m, &voted2, &r, NULL));
	snprintf(r.primary, sizeof(r.primary), "t0"); /* only a gateway of the map */
	ck_assert(!cmap_lease_grant(m, &none, &r, NULL));
	snprintf(r.primary, sizeof(r.primary), "g9");
	ck_assert(!cmap_lease_grant(m, &none, &r, NULL));
	snprintf(r.primary, sizeof(r.primary), "g1");
	r.term = 0;
	ck_assert(!cmap_lease_grant(m, &none, &r, NULL));
	r.term = 1;
	snprintf(r.primary, sizeof(r.primary), "g0");
	snprintf(r.uuid, sizeof(r.uuid), "other");
	ck_assert(!cmap_lease_grant(m, &none, &r, NULL));

	/* V5: a grant binds every other candidate for the guard */
	cmap_lease_rec_t g = {"g0", 1, 1000};
	ck_assert(cmap_lease_binds(&g, "g1", 1500, 1000));
	ck_assert(!cmap_lease_binds(&g, "g0", 1500, 1000));
	ck_assert(!cmap_lease_binds(&g, "g1", 2000, 1000));
	cmap_lease_rec_t unknown = {"", 0, 1000}; /* just started */
	ck_assert(cmap_lease_binds(&unknown, "g0", 1999, 1000));
	ck_assert(!cmap_lease_binds(&unknown, "g0", 2000, 1000));
	cmap_lease_rec_t never = {"", 0, 0};
	ck_assert(!cmap_lease_binds(&never, "g1", 5, 1000));

	/* the request's JSON: round trip, strict */
	cmap_lease_req_t in = {"u1", "g0", 7}, out;
	cmap_lease_encode(&in, &js);
	ck_assert_int_eq(cmap_lease_decode(js.ptr, js.len, &out, &err), AIS_OK);
	ck_assert_str_eq(out.uuid, "u1");
	ck_assert_str_eq(out.primary, "g0");
	ck_assert_uint_eq(out.term, 7);
	static const char *const bad[] = {
		"{\"uuid\":\"u1\",\"primary\":\"g0\"}",
		"{\"uuid\":\"u1\",\"primary\":\"g0\",\"term\":0}",
		"{\"uuid\":\"u1\",\"primary\":\"g 0\",\"term\":1}",
		"{\"uuid\":\"u1\",\"primary\":\"g0\",\"term\":1,\"x\":1}",
		"{\"uuid\":\"u1\",\"primary\":\"g0\",\"term\":\"1\"}",
		"[]",
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&err);
		ck_assert_int_eq(cmap_lease_decode(bad[i], strlen(bad[i]), &out, &err), AIS_ERR);
		ck_assert_ptr_nonnull(err.ptr);
		ck_assert_ptr_nonnull(strstr(err.ptr, "lease"));
	}
	buf_free(&why);
	buf_free(&js);
	buf_free(&err);
	cmap_free(m);
}
END_TEST

START_TEST(test_ballot_json)
{
	cmap_t *m = mkmap(2, 1);
	cmap_ballot_t b = ballot(m, "g1", 9, 3), d;
	buf_t js = BUF_INIT, err = BUF_INIT;
	cmap_ballot_encode(&b, &js);
	ck_assert_int_eq(cmap_ballot_decode(js.ptr, js.len, &d, NULL), AIS_OK);
	ck_assert_int_eq(memcmp(&b, &d, sizeof(b)), 0);
	/* every truncation fails cleanly */
	for (size_t n = 0; n < js.len; n++) {
		buf_reset(&err);
		ck_assert_int_eq(cmap_ballot_decode(js.ptr, n, &d, &err), AIS_ERR);
		ck_assert_uint_gt(err.len, 0);
	}
	static const char *const bad[] = {
		"{\"uuid\":\"u\",\"term\":2,\"candidate\":\"g1\",\"primary\":\"g0\",\"cmap_term\":1,\"cmap_version\":1}",
		"{\"uuid\":\"u\",\"term\":0,\"candidate\":\"g1\",\"primary\":\"g0\",\"cmap_term\":1,\"cmap_version\":1,"
		"\"bmd_version\":1}",
		"{\"uuid\":\"u\",\"term\":2,\"candidate\":\"g 1\",\"primary\":\"g0\",\"cmap_term\":1,\"cmap_version\":1,"
		"\"bmd_version\":1}",
		"{\"uuid\":\"u\",\"term\":2,\"candidate\":\"g1\",\"primary\":\"g0\",\"cmap_term\":1,\"cmap_version\":1,"
		"\"bmd_version\":1,\"x\":1}",
		"{\"uuid\":\"u\",\"term\":\"2\",\"candidate\":\"g1\",\"primary\":\"g0\",\"cmap_term\":1,\"cmap_version\":1,"
		"\"bmd_version\":1}",
		"[]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&err);
		errno = 0;
		ck_assert_msg(cmap_ballot_decode(bad[i], strlen(bad[i]), &d, &err) == AIS_ERR, "accepted %s", bad[i]);
		ck_assert_int_eq(errno, EINVAL);
	}
	buf_free(&js);
	buf_free(&err);
	cmap_free(m);
}
END_TEST

/* persistence */

static char tmpdir[256];

static void mk_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_cmap.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmpdir(void)
{
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void write_file(const char *path, const char *data, size_t n)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, n, f), n);
	fclose(f);
}

START_TEST(test_persist)
{
	char path[300], tmp[310];
	buf_t err = BUF_INIT;
	cmap_t *got;
	mk_tmpdir();
	snprintf(path, sizeof(path), "%s/cmap.json", tmpdir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);

	/* missing: ENOENT, no message */
	ck_assert_int_eq(cmap_load(path, &got, &err), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_null(got);
	ck_assert_uint_eq(err.len, 0);

	cmap_t *m = mkmap(2, 3);
	ck_assert_int_eq(cmap_save(m, path, &err), AIS_OK);
	ck_assert_int_eq(access(tmp, F_OK), -1); /* no temp left */
	ck_assert_int_eq(cmap_load(path, &got, &err), AIS_OK);
	ck_assert(cmap_equal(got, m));
	cmap_free(got);

	/* save over an existing file */
	cmap_node_t n = mknode("t9", CMAP_TARGET, CMAP_ACTIVE);
	ck_assert_int_eq(cmap_add(m, &n, NULL), AIS_OK);
	ck_assert_int_eq(cmap_save(m, path, &err), AIS_OK);
	ck_assert_int_eq(cmap_load(path, &got, &err), AIS_OK);
	ck_assert(cmap_equal(got, m));
	cmap_free(got);

	/* a leftover temp file (crash mid-save) does not confuse load, and the
	 * next save replaces it */
	write_file(tmp, "{\"uuid\":", 8);
	ck_assert_int_eq(cmap_load(path, &got, &err), AIS_OK);
	ck_assert(cmap_equal(got, m));
	cmap_free(got);
	ck_assert_int_eq(cmap_save(m, path, &err), AIS_OK);
	ck_assert_int_eq(access(tmp, F_OK), -1);

	/* truncated at every length, and empty: a clean error naming the file */
	buf_t js = BUF_INIT;
	cmap_encode(m, &js);
	for (size_t len = 0; len < js.len; len += 7) {
		write_file(path, js.ptr, len);
		buf_reset(&err);
		ck_assert_int_eq(cmap_load(path, &got, &err), AIS_ERR);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_ptr_null(got);
		ck_assert_ptr_nonnull(strstr(err.ptr, path));
	}
	/* a directory where the file should be */
	buf_reset(&err);
	ck_assert_int_eq(cmap_load(tmpdir, &got, &err), AIS_ERR);
	ck_assert_uint_gt(err.len, 0);
	/* save into a missing directory: clean error, nothing created */
	char bad[320];
	snprintf(bad, sizeof(bad), "%s/nodir/cmap.json", tmpdir);
	buf_reset(&err);
	ck_assert_int_eq(cmap_save(m, bad, &err), AIS_ERR);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_uint_gt(err.len, 0);

	buf_free(&js);
	buf_free(&err);
	cmap_free(m);
	rm_tmpdir();
}
END_TEST

static Suite *cmap_suite(void)
{
	Suite *s = suite_create("cmap");
	TCase *tc = tcase_create("cmap");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_version_placed_with_object);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_drain);
	tcase_add_test(tc, test_lost);
	tcase_add_test(tc, test_mutators);
	tcase_add_test(tc, test_url_rules);
	tcase_add_loop_test(tc, test_decode_errors, 0, (int)(sizeof(bad_maps) / sizeof(bad_maps[0])));
	tcase_add_test(tc, test_decode_good_minimal);
	tcase_add_test(tc, test_decode_truncate_and_flip);
	tcase_add_test(tc, test_accept);
	tcase_add_test(tc, test_owner_vs_hrw);
	tcase_add_test(tc, test_join_moves_few);
	tcase_add_test(tc, test_maintenance_never_owner);
	tcase_add_test(tc, test_top_k);
	tcase_add_test(tc, test_election_order);
	tcase_add_test(tc, test_term_accept);
	tcase_add_test(tc, test_vote_rules);
	tcase_add_test(tc, test_vote_one_winner);
	tcase_add_test(tc, test_ballot_json);
	tcase_add_test(tc, test_lease_rules);
	tcase_add_test(tc, test_persist);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cmap_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
