/*
 * test_core.c - the small core libraries: buf/sv, arena, conf, log.
 */
#include <check.h>
#include <jansson.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/arena.h"
#include "aisd/buf.h"
#include "aisd/conf.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

/* ---- buf ---------------------------------------------------------------- */

START_TEST(test_buf_empty)
{
	buf_t b = BUF_INIT;
	ck_assert_ptr_null(b.ptr);
	ck_assert_uint_eq(b.len, 0);
	buf_reset(&b); /* on a zeroed buf: no crash */
	buf_consume(&b, 10);
	buf_free(&b);
	buf_free(&b); /* twice is fine */
	buf_add(&b, "", 0);
	ck_assert_ptr_nonnull(b.ptr);
	ck_assert_str_eq(b.ptr, "");
	buf_free(&b);
}
END_TEST

START_TEST(test_buf_growth)
{
	buf_t b = BUF_INIT;
	/* Plain checks in the loops, one assertion each: every Check
	 * assertion writes to a pipe in fork mode, and 400,000 of them made
	 * this test time out on a loaded machine. */
	for (int i = 0; i < 100000; i++) {
		buf_addch(&b, (char)('a' + i % 26));
		if (b.len != (size_t)i + 1 || b.cap <= b.len || b.ptr[b.len] != '\0')
			ck_abort_msg("after %d adds: len %zu cap %zu", i + 1, b.len, b.cap);
	}
	for (int i = 0; i < 100000; i++)
		if (b.ptr[i] != 'a' + i % 26)
			ck_abort_msg("byte %d is %c", i, b.ptr[i]);
	buf_reset(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(b.ptr, "");
	/* one big add */
	char *big = malloc(1 << 20);
	memset(big, 'z', 1 << 20);
	buf_add(&b, big, 1 << 20);
	ck_assert_uint_eq(b.len, 1 << 20);
	ck_assert(!memcmp(b.ptr, big, 1 << 20));
	ck_assert_int_eq(b.ptr[b.len], '\0');
	free(big);
	buf_free(&b);
}
END_TEST

START_TEST(test_buf_add_variants)
{
	buf_t b = BUF_INIT;
	buf_addstr(&b, "abc");
	buf_addch(&b, '-');
	buf_addsv(&b, SV("def"));
	buf_add(&b, "g\0h", 3); /* NULs kept, still terminated */
	ck_assert_uint_eq(b.len, 10);
	ck_assert(!memcmp(b.ptr, "abc-defg\0h\0", 11));
	buf_grow(&b, 1000);
	ck_assert_uint_ge(b.cap, b.len + 1000 + 1);
	ck_assert_uint_eq(b.len, 10);
	buf_free(&b);
}
END_TEST

START_TEST(test_buf_addf)
{
	buf_t b = BUF_INIT;
	buf_addf(&b, "%d-%s", 42, "x");
	ck_assert_str_eq(b.ptr, "42-x");
	ck_assert_uint_eq(b.len, 4);

	/* longer than the first guess, after existing content, several times */
	char *lng = malloc(10001);
	for (int i = 0; i < 10000; i++)
		lng[i] = (char)('0' + i % 10);
	lng[10000] = '\0';
	buf_addf(&b, "[%s]", lng);
	ck_assert_uint_eq(b.len, 4 + 10002);
	ck_assert(!memcmp(b.ptr, "42-x[", 5));
	ck_assert(!memcmp(b.ptr + 5, lng, 10000));
	ck_assert_str_eq(b.ptr + 10005, "]");
	for (int i = 0; i < 3; i++)
		buf_addf(&b, "%s", lng);
	ck_assert_uint_eq(b.len, 4 + 10002 + 30000);
	ck_assert_uint_eq(strlen(b.ptr), b.len);

	/* output exactly filling the space: boundaries of the first try */
	for (size_t n = 50; n < 200; n++) {
		buf_t c = BUF_INIT;
		buf_addstr(&c, "xyz");
		buf_addf(&c, "%.*s", (int)n, lng);
		ck_assert_uint_eq(c.len, 3 + n);
		ck_assert(!memcmp(c.ptr + 3, lng, n));
		ck_assert_int_eq(c.ptr[c.len], '\0');
		buf_free(&c);
	}
	buf_reset(&b);
	buf_addf(&b, "%s", "");
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(b.ptr, "");
	free(lng);
	buf_free(&b);
}
END_TEST

START_TEST(test_buf_addnum)
{
	/* the same digits as printf's, at the edges of both ranges */
	const int64_t iv[] = {0, 1, -1, 9, 10, -10, 99, 100, 1234567890123LL, INT64_MAX, INT64_MIN, INT64_MIN + 1};
	const uint64_t uv[] = {0, 1, 9, 10, 18446744073709551615ULL, 10000000000000000000ULL};
	char want[32];
	for (size_t i = 0; i < sizeof(iv) / sizeof(iv[0]); i++) {
		buf_t b = BUF_INIT;
		buf_addstr(&b, "x");
		buf_addi64(&b, iv[i]);
		snprintf(want, sizeof(want), "x%lld", (long long)iv[i]);
		ck_assert_str_eq(b.ptr, want);
		ck_assert_uint_eq(b.len, strlen(want));
		buf_free(&b);
	}
	for (size_t i = 0; i < sizeof(uv) / sizeof(uv[0]); i++) {
		buf_t b = BUF_INIT;
		buf_addu64(&b, uv[i]);
		snprintf(want, sizeof(want), "%llu", (unsigned long long)uv[i]);
		ck_assert_str_eq(b.ptr, want);
		buf_free(&b);
	}
}
END_TEST

static void json(buf_t *b, const char *s, size_t n)
{
	buf_reset(b);
	buf_add_json_str(b, s, n);
}

START_TEST(test_buf_json_str)
{
	buf_t b = BUF_INIT;
	json(&b, "", 0);
	ck_assert_str_eq(b.ptr, "\"\"");
	json(&b, "plain", 5);
	ck_assert_str_eq(b.ptr, "\"plain\"");
	json(&b, "a\"b", 3);
	ck_assert_str_eq(b.ptr, "\"a\\\"b\"");
	json(&b, "a\\b", 3);
	ck_assert_str_eq(b.ptr, "\"a\\\\b\"");
	json(&b, "\n\r\t", 3);
	ck_assert_str_eq(b.ptr, "\"\\n\\r\\t\"");
	json(&b, "\x01\x1f\x7f", 3);
	ck_assert_str_eq(b.ptr, "\"\\u0001\\u001f\\u007f\"");
	json(&b, "\b\f", 2);
	ck_assert_str_eq(b.ptr, "\"\\u0008\\u000c\"");
	json(&b, "a\0b", 3);
	ck_assert_uint_eq(b.len, 10);
	ck_assert_str_eq(b.ptr, "\"a\\u0000b\"");
	json(&b, "/ok/", 4); /* '/' needn't be escaped */
	ck_assert_str_eq(b.ptr, "\"/ok/\"");
	json(&b, "caf\xc3\xa9 \xf0\x9f\x98\x80", 10); /* UTF-8 passes through */
	ck_assert_str_eq(b.ptr, "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
	/* length, not the C string, decides */
	json(&b, "abcdef", 3);
	ck_assert_str_eq(b.ptr, "\"abc\"");
	/* appends */
	buf_reset(&b);
	buf_addch(&b, '{');
	buf_add_json_str(&b, "k", 1);
	buf_addch(&b, ':');
	buf_add_json_str(&b, "v", 1);
	buf_addch(&b, '}');
	ck_assert_str_eq(b.ptr, "{\"k\":\"v\"}");
	/* every control character escaped, nothing raw below 0x20 */
	char ctl[32];
	for (int i = 0; i < 32; i++)
		ctl[i] = (char)i;
	json(&b, ctl, 32);
	for (size_t i = 0; i < b.len; i++)
		ck_assert_uint_ge((unsigned char)b.ptr[i], 0x20);
	buf_free(&b);
}
END_TEST

START_TEST(test_buf_consume)
{
	buf_t b = BUF_INIT;
	buf_addstr(&b, "hello world");
	buf_consume(&b, 0);
	ck_assert_str_eq(b.ptr, "hello world");
	buf_consume(&b, 6);
	ck_assert_str_eq(b.ptr, "world");
	ck_assert_uint_eq(b.len, 5);
	buf_addstr(&b, "!");
	ck_assert_str_eq(b.ptr, "world!");
	buf_consume(&b, 6);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(b.ptr, "");
	buf_addstr(&b, "abc");
	buf_consume(&b, 100);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(b.ptr, "");
	buf_free(&b);
}
END_TEST

START_TEST(test_buf_detach)
{
	buf_t b = BUF_INIT;
	size_t len = 99;
	char *p = buf_detach(&b, &len);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p, "");
	ck_assert_uint_eq(len, 0);
	free(p);

	buf_addstr(&b, "owned");
	p = buf_detach(&b, &len);
	ck_assert_str_eq(p, "owned");
	ck_assert_uint_eq(len, 5);
	ck_assert_ptr_null(b.ptr);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.cap, 0);
	buf_addstr(&b, "again"); /* b is reusable, p independent */
	ck_assert_str_eq(p, "owned");
	ck_assert_str_eq(b.ptr, "again");
	free(p);
	p = buf_detach(&b, NULL);
	ck_assert_str_eq(p, "again");
	free(p);
}
END_TEST

START_TEST(test_sv)
{
	ck_assert(sv_eq(SV("abc"), SV("abc")));
	ck_assert(!sv_eq(SV("abc"), SV("abd")));
	ck_assert(!sv_eq(SV("abc"), SV("ab")));
	ck_assert(sv_eq(SV(""), (sv_t){NULL, 0}));
	ck_assert(sv_eq(SV("a\0b"), SV("a\0b")));
	ck_assert(!sv_eq(SV("a\0b"), SV("a\0c")));
	ck_assert(sv_eqcase(SV("Content-Length"), SV("content-length")));
	ck_assert(!sv_eqcase(SV("Content-Length"), SV("content-lengtx")));
	ck_assert(!sv_eqcase(SV("a"), SV("ab")));
	/* views may hold NULs: they are compared, not a string's end */
	ck_assert(sv_eqcase(SV("A\0b"), SV("a\0B")));
	ck_assert(!sv_eqcase(SV("a\0b"), SV("a\0c")));
	ck_assert(sv_eqstr(SV("xyz"), "xyz"));
	ck_assert(!sv_eqstr(SV("xyz"), "xy"));
	ck_assert(sv_startswith(SV("/v1/objects/b/o"), "/v1/"));
	ck_assert(!sv_startswith(SV("/v"), "/v1/"));
	ck_assert(sv_startswith(SV("x"), ""));
	ck_assert(sv_casestartswith(SV("BYTES=0-1"), "bytes="));
	ck_assert(!sv_casestartswith(SV("bits=0-1"), "bytes="));
	ck_assert(!sv_casestartswith(SV("by\0es=0-1"), "bytes="));

	sv_t t = sv_trim(SV(" \t value \t "));
	ck_assert(sv_eqstr(t, "value"));
	t = sv_trim(SV("   "));
	ck_assert_uint_eq(t.len, 0);
	t = sv_trim(SV("a b"));
	ck_assert(sv_eqstr(t, "a b"));
	t = sv_trim(SV("\nx\n")); /* only spaces and tabs */
	ck_assert_uint_eq(t.len, 3);

	ck_assert_uint_eq(sv_from(NULL).len, 0);
	ck_assert_uint_eq(sv_from("four").len, 4);
	buf_t b = BUF_INIT;
	buf_addstr(&b, "view");
	ck_assert(sv_eqstr(sv_of(&b), "view"));
	buf_free(&b);
}
END_TEST

/* ---- arena -------------------------------------------------------------- */

START_TEST(test_arena_alignment)
{
	arena_t *a = arena_new(0);
	for (size_t n = 0; n < 300; n++) {
		unsigned char *p = arena_alloc(a, n);
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % 16, 0);
		memset(p, 0xab, n);
	}
	/* odd sizes interleaved with big ones, across many blocks */
	for (int i = 0; i < 1000; i++) {
		size_t n = (size_t)(i % 7 == 0 ? 5000 + i : i % 37 + 1);
		unsigned char *p = arena_alloc(a, n);
		ck_assert_uint_eq((uintptr_t)p % 16, 0);
		memset(p, i & 0xff, n);
	}
	arena_destroy(a);
}
END_TEST

START_TEST(test_arena_no_overlap)
{
	arena_t *a = arena_new(1024);
	enum { N = 500 };
	unsigned char *p[N];
	size_t sz[N];
	for (int i = 0; i < N; i++) {
		sz[i] = (size_t)(i * 37 % 700) + 1; /* some above block_size/4 */
		p[i] = arena_alloc(a, sz[i]);
		memset(p[i], i & 0xff, sz[i]);
	}
	for (int i = 0; i < N; i++)
		for (size_t j = 0; j < sz[i]; j++)
			ck_assert_uint_eq(p[i][j], (unsigned)(i & 0xff));
	arena_destroy(a);
}
END_TEST

START_TEST(test_arena_big)
{
	arena_t *a = arena_new(4096);
	char *small = arena_strndup(a, "small", 5);
	size_t big = 8 << 20;
	unsigned char *p = arena_alloc(a, big);
	ck_assert_uint_eq((uintptr_t)p % 16, 0);
	memset(p, 0x5a, big);
	unsigned char *z = arena_zalloc(a, 100000);
	for (size_t i = 0; i < 100000; i++)
		ck_assert_uint_eq(z[i], 0);
	/* small allocations still come after big ones */
	char *s2 = arena_strndup(a, "after", 5);
	ck_assert_str_eq(small, "small");
	ck_assert_str_eq(s2, "after");
	ck_assert_uint_eq(p[0], 0x5a);
	ck_assert_uint_eq(p[big - 1], 0x5a);
	arena_destroy(a);
}
END_TEST

START_TEST(test_arena_strings)
{
	arena_t *a = arena_new(256);
	ck_assert_str_eq(arena_strndup(a, "hello world", 5), "hello");
	ck_assert_str_eq(arena_strndup(a, NULL, 0), "");
	ck_assert_str_eq(arena_svdup(a, SV("view")), "view");
	ck_assert_str_eq(arena_printf(a, "%s=%d", "n", 7), "n=7");
	char *lng = arena_printf(a, "%0900d", 1);
	ck_assert_uint_eq(strlen(lng), 900);
	ck_assert_int_eq(lng[899], '1');
	ck_assert_str_eq(arena_printf(a, "%s", ""), "");
	unsigned char *z = arena_zalloc(a, 64);
	for (int i = 0; i < 64; i++)
		ck_assert_uint_eq(z[i], 0);
	arena_destroy(a);
}
END_TEST

static char order[64];
static size_t norder;

static void record(void *arg)
{
	if (norder < sizeof(order) - 1)
		order[norder++] = *(const char *)arg;
	order[norder] = '\0';
}

static void free_it(void *arg) { free(arg); }

START_TEST(test_arena_cleanups)
{
	static const char ids[] = "abcdef";
	arena_t *a = arena_new(0);

	norder = 0;
	order[0] = '\0';
	arena_cleanup_add(a, record, (void *)&ids[0]);
	arena_cleanup_add(a, record, (void *)&ids[1]);
	arena_alloc(a, 100000); /* a big block between cleanups */
	arena_cleanup_add(a, record, (void *)&ids[2]);
	arena_cleanup_add(a, free_it, xmalloc(100)); /* leak checkers see this freed */
	arena_reset(a);
	ck_assert_str_eq(order, "cba");

	/* reset ran them once: a second reset runs nothing */
	arena_reset(a);
	ck_assert_str_eq(order, "cba");

	/* the arena is usable after reset; destroy runs the new ones */
	norder = 0;
	order[0] = '\0';
	arena_cleanup_add(a, record, (void *)&ids[3]);
	arena_cleanup_add(a, record, (void *)&ids[4]);
	ck_assert_str_eq(order, "");
	arena_destroy(a);
	ck_assert_str_eq(order, "ed");
	arena_destroy(NULL);
}
END_TEST

START_TEST(test_arena_cleanup_cancel)
{
	static const char ids[] = "abcd";
	arena_t *a = arena_new(0);
	norder = 0;
	order[0] = '\0';
	void *h0 = arena_cleanup_add(a, record, (void *)&ids[0]);
	void *h1 = arena_cleanup_add(a, record, (void *)&ids[1]);
	void *h2 = arena_cleanup_add(a, record, (void *)&ids[2]);
	void *h3 = arena_cleanup_add(a, record, (void *)&ids[3]);
	ck_assert_ptr_nonnull(h0);
	ck_assert_ptr_ne(h0, h1);
	arena_cleanup_cancel(h1);
	arena_cleanup_cancel(h3);
	arena_cleanup_cancel(h3); /* twice is harmless */
	arena_cleanup_cancel(NULL);
	(void)h2;
	arena_destroy(a);
	ck_assert_str_eq(order, "ca");
}
END_TEST

START_TEST(test_arena_reset_reuses_first_block)
{
	/* Reset keeps the first block, whatever big blocks came after it, so a
	 * keep-alive connection doesn't hold on to a request's big buffer. */
	arena_t *a = arena_new(4096);
	void *first = arena_alloc(a, 16);
	arena_alloc(a, 4000);           /* fills the first block */
	arena_alloc(a, 3000);           /* big: gets a block of its own */
	arena_alloc(a, 64 << 20);       /* bigger */
	arena_alloc(a, 100);            /* small: a new ordinary block */
	arena_reset(a);
	ck_assert_ptr_eq(arena_alloc(a, 16), first);
	/* and the first block's full size is available again */
	unsigned char *p = arena_alloc(a, 4000);
	ck_assert_ptr_eq(p, (unsigned char *)first + 16);
	arena_reset(a);
	ck_assert_ptr_eq(arena_alloc(a, 16), first);
	arena_destroy(a);
}
END_TEST

START_TEST(test_arena_many_resets)
{
	arena_t *a = arena_new(512);
	for (int r = 0; r < 200; r++) {
		for (int i = 0; i < 50; i++) {
			char *s = arena_printf(a, "r%d-i%d", r, i);
			ck_assert_ptr_nonnull(s);
		}
		arena_alloc(a, (size_t)(r * 100));
		arena_reset(a);
	}
	arena_destroy(a);
}
END_TEST

/* ---- conf --------------------------------------------------------------- */

static void conf_with_mp(conf_t *c)
{
	buf_t err = BUF_INIT;
	conf_defaults(c);
	ck_assert_int_eq(conf_set(c, "store.mountpaths", "/tmp/mp1", &err), AIS_OK);
	buf_free(&err);
}

/* conf_encode: every key once, valid JSON, typed values, no secret. */
START_TEST(test_conf_encode)
{
	conf_t c;
	buf_t err = BUF_INIT, out = BUF_INIT;
	conf_with_mp(&c);
	ck_assert_int_eq(conf_set(&c, "cluster.secret", "s3cr3t-cluster-0123456789", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "auth.secret", "s3cr3t-auth-0123456789", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "s3.key", "AKIDTEST:s3cr3tSKEY99:user1:The User", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "store.fsync", "never", &err), AIS_OK);
	conf_encode(&c, &out);
	ck_assert_ptr_null(strstr(out.ptr, "s3cr3t"));
	json_t *j = json_loadb(out.ptr, out.len, 0, NULL);
	ck_assert(json_is_object(j));
	ck_assert_str_eq(json_string_value(json_object_get(j, "cluster.secret")), "****");
	ck_assert_str_eq(json_string_value(json_object_get(j, "auth.secret")), "****");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "s3.key"), 0)),
			 "AKIDTEST:****:user1:The User");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "store.mountpaths"), 0)), "/tmp/mp1");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "net.port")), 8080);
	ck_assert_str_eq(json_string_value(json_object_get(j, "net.header_timeout")), "10000ms");
	ck_assert_str_eq(json_string_value(json_object_get(j, "store.fsync")), "never");
	ck_assert_str_eq(json_string_value(json_object_get(j, "role")), "target");
	json_decref(j);
	/* unset secrets: "" */
	conf_defaults(&c);
	buf_reset(&out);
	conf_encode(&c, &out);
	j = json_loadb(out.ptr, out.len, 0, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "cluster.secret")), "");
	json_decref(j);
	buf_free(&out);
	buf_free(&err);
}
END_TEST

START_TEST(test_conf_defaults)
{
	conf_t c;
	buf_t err = BUF_INIT;
	conf_defaults(&c);
	ck_assert_str_eq(c.role, "target");
	ck_assert_str_eq(c.node_id, "");
	ck_assert_str_eq(c.host, "127.0.0.1");
	ck_assert_uint_eq(c.port, 8080);
	ck_assert_uint_eq(c.workers, 0);
	ck_assert_uint_eq(c.io_threads, 8);
	ck_assert_uint_eq(c.max_header_bytes, 16384);
	ck_assert_uint_eq(c.header_timeout_ms, 10000);
	ck_assert_uint_eq(c.idle_timeout_ms, 60000);
	ck_assert_uint_eq(c.body_timeout_ms, 60000);
	ck_assert_int_eq(c.n_mountpaths, 0);
	ck_assert_int_eq(c.fsync, CONF_FSYNC_ALWAYS);
	ck_assert_str_eq(c.checksum, "xxhash");
	ck_assert_uint_eq(c.put_buffer, 1 << 20);
	ck_assert_uint_eq(c.min_free_bytes, 64 << 20);
	ck_assert_str_eq(c.log_level, "info");
	ck_assert_str_eq(c.log_file, "");

	/* a target needs a mountpath, nothing else */
	ck_assert_int_eq(conf_validate(&c, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "mountpath"));
	buf_reset(&err);
	conf_with_mp(&c);
	ck_assert_int_eq(conf_validate(&c, &err), AIS_OK);
	/* a gateway needs a directory for its cluster metadata, nothing else */
	conf_defaults(&c);
	ck_assert_int_eq(conf_set(&c, "role", "gateway", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(&c, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "node.dir"));
	buf_reset(&err);
	ck_assert_int_eq(conf_set(&c, "node.dir", "/var/lib/aisd", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(&c, &err), AIS_OK);
	/* cluster URLs must be http(s) */
	ck_assert_int_eq(conf_set(&c, "cluster.join", "ftp://x", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(&c, &err), AIS_ERR);
	buf_reset(&err);
	ck_assert_int_eq(conf_set(&c, "cluster.join", "http://127.0.0.1:8080", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(&c, &err), AIS_OK);
	ck_assert_uint_eq(err.len, 0);
	/* the primary's lease: derived between keepalive + min(keepalive, 2s)
	 * and 8/9 of grace; its guard (+1/8) below grace; set by hand it must
	 * fit the same bounds */
	ck_assert_uint_eq(c.lease_ms, 0);
	ck_assert_uint_eq(conf_lease_ms(&c), 4666); /* 2s, 6s */
	ck_assert_uint_lt(conf_lease_guard_ms(&c), c.grace_ms);
	ck_assert_int_eq(conf_set(&c, "cluster.keepalive", "300ms", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "cluster.grace", "1500ms", &err), AIS_OK);
	ck_assert_uint_eq(conf_lease_ms(&c), 966);
	ck_assert_int_eq(conf_set(&c, "cluster.keepalive", "500ms", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "cluster.grace", "1s", &err), AIS_OK);
	ck_assert_uint_eq(conf_lease_ms(&c), 887); /* the range is empty: under 8/9 of grace */
	ck_assert_int_eq(conf_validate(&c, &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "cluster.grace", "500ms", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(&c, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "cluster.lease"));
	buf_reset(&err);
	ck_assert_int_eq(conf_set(&c, "cluster.grace", "6s", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "cluster.lease", "5500ms", &err), AIS_OK); /* guard 6187 ms */
	ck_assert_int_eq(conf_validate(&c, &err), AIS_ERR);
	buf_reset(&err);
	ck_assert_int_eq(conf_set(&c, "cluster.lease", "400ms", &err), AIS_OK); /* not above keepalive */
	ck_assert_int_eq(conf_validate(&c, &err), AIS_ERR);
	buf_reset(&err);
	ck_assert_int_eq(conf_set(&c, "cluster.lease", "3s", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(&c, &err), AIS_OK);
	ck_assert_uint_eq(conf_lease_ms(&c), 3000);
	buf_free(&err);
}
END_TEST

/* net.tls.*: cert and key together; client_ca and ca only with them;
 * with TLS on, cluster URLs are https. */
START_TEST(test_conf_tls)
{
	conf_t c;
	buf_t err = BUF_INIT;
	conf_defaults(&c);
	conf_with_mp(&c);
	ck_assert(c.tls_ktls);
	ck_assert_str_eq(c.tls_cert, "");
	ck_assert_int_eq(conf_set(&c, "net.tls.cert", "/etc/aisd/node.pem", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(&c, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "net.tls.key"));
	buf_reset(&err);
	ck_assert_int_eq(conf_set(&c, "net.tls.key", "/etc/aisd/node.key", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(&c, &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "cluster.join", "http://gw:8080", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(&c, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "https://"));
	buf_reset(&err);
	ck_assert_int_eq(conf_set(&c, "cluster.join", "https://gw:8443", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "net.tls.client_ca", "/etc/aisd/ca.pem", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "net.tls.ca", "/etc/aisd/ca.pem", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "net.tls.ktls", "off", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(&c, &err), AIS_OK);
	ck_assert(!c.tls_ktls);
	/* a client CA without a certificate of our own */
	ck_assert_int_eq(conf_set(&c, "net.tls.cert", "", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "net.tls.key", "", &err), AIS_OK);
	ck_assert_int_eq(conf_set(&c, "cluster.join", "", &err), AIS_OK);
	ck_assert_int_eq(conf_validate(&c, &err), AIS_ERR);
	buf_free(&err);
}
END_TEST

static int parse(conf_t *c, const char *text, buf_t *err)
{
	buf_reset(err);
	return conf_parse(c, text, strlen(text), err);
}

START_TEST(test_conf_parse)
{
	conf_t c;
	buf_t err = BUF_INIT;
	conf_defaults(&c);
	const char *text =
		"# aisd config\n"
		"\n"
		"   \n"
		"\t# indented comment\n"
		"role = target\n"
		"node.id=t1\n"
		"  net.host   =   0.0.0.0  \n"
		"net.port = 9001   # trailing comment\n"
		"net.workers = 4\r\n"
		"io.threads = 16 \r\n"
		"store.mountpaths = /data/d1,/data/d2\n"
		"store.fsync = never\n"
		"store.checksum = md5\n"
		"store.put_buffer = 4MiB\n"
		"store.min_free = 1G\n"
		"net.max_header_bytes = 32KiB\n"
		"net.header_timeout = 250ms\n"
		"net.idle_timeout = 2m\n"
		"net.body_timeout = 10s\n"
		"log.level = debug\n"
		"log.file = /var/log/aisd=1.log";
	ck_assert_msg(parse(&c, text, &err) == AIS_OK, "%s", err.ptr);
	ck_assert_str_eq(c.role, "target");
	ck_assert_str_eq(c.node_id, "t1");
	ck_assert_str_eq(c.host, "0.0.0.0");
	ck_assert_uint_eq(c.port, 9001);
	ck_assert_uint_eq(c.workers, 4);
	ck_assert_uint_eq(c.io_threads, 16);
	ck_assert_int_eq(c.n_mountpaths, 2);
	ck_assert_str_eq(c.mountpaths[0], "/data/d1");
	ck_assert_str_eq(c.mountpaths[1], "/data/d2");
	ck_assert_int_eq(c.fsync, CONF_FSYNC_NEVER);
	ck_assert_str_eq(c.checksum, "md5");
	ck_assert_uint_eq(c.put_buffer, 4 << 20);
	ck_assert_uint_eq(c.min_free_bytes, 1ULL << 30);
	ck_assert_uint_eq(c.max_header_bytes, 32 << 10);
	ck_assert_uint_eq(c.header_timeout_ms, 250);
	ck_assert_uint_eq(c.idle_timeout_ms, 120000);
	ck_assert_uint_eq(c.body_timeout_ms, 10000);
	ck_assert_str_eq(c.log_level, "debug");
	ck_assert_str_eq(c.log_file, "/var/log/aisd=1.log"); /* first '=' splits */
	ck_assert_int_eq(conf_validate(&c, &err), AIS_OK);

	/* empty text and comments only: nothing changes */
	conf_t d;
	conf_defaults(&d);
	conf_defaults(&c);
	ck_assert_int_eq(parse(&c, "", &err), AIS_OK);
	ck_assert_int_eq(parse(&c, "# only\n\n#\r\n", &err), AIS_OK);
	ck_assert(!memcmp(&c, &d, sizeof(c)));
	/* later lines win */
	ck_assert_int_eq(parse(&c, "net.port = 1\nnet.port = 2\n", &err), AIS_OK);
	ck_assert_uint_eq(c.port, 2);
	/* empty string value */
	ck_assert_int_eq(parse(&c, "node.id =\n", &err), AIS_OK);
	ck_assert_str_eq(c.node_id, "");
	buf_free(&err);
}
END_TEST

START_TEST(test_conf_durations)
{
	static const struct {
		const char *v;
		uint64_t ms;
	} ok[] = {
		{"250ms", 250}, {"10s", 10000}, {"2m", 120000}, {"1h", 3600000},
		{"0s", 0},      {"0", 0},       {"7", 7000},    {"1500ms", 1500},
	};
	static const char *const bad[] = {"", "s", "ms", "10x", "10 s", " 10s", "-1s", "1.5s",
					  "10S", "10sec", "1d", "10msx", "6000000000000h"};
	conf_t c;
	buf_t err = BUF_INIT;
	conf_defaults(&c);
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		buf_reset(&err);
		ck_assert_msg(conf_set(&c, "net.idle_timeout", ok[i].v, &err) == AIS_OK, "'%s': %s",
			      ok[i].v, err.ptr);
		ck_assert_msg(c.idle_timeout_ms == ok[i].ms, "'%s' -> %llu", ok[i].v,
			      (unsigned long long)c.idle_timeout_ms);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		buf_reset(&err);
		c.idle_timeout_ms = 77;
		ck_assert_msg(conf_set(&c, "net.idle_timeout", bad[i], &err) == AIS_ERR, "'%s' accepted",
			      bad[i]);
		ck_assert_uint_eq(c.idle_timeout_ms, 77);
		ck_assert_ptr_nonnull(strstr(err.ptr, "net.idle_timeout"));
	}
	buf_free(&err);
}
END_TEST

/* Each line must fail with "line N:" naming the key or the problem. */
START_TEST(test_conf_errors)
{
	static const struct {
		const char *text;
		int line;
		const char *what;
	} cases[] = {
		{"bogus.key = 1\n", 1, "unknown config key 'bogus.key'"},
		{"# c\n\nnet.port = 1\nnet.prot = 2\n", 4, "net.prot"},
		{"net.port\n", 1, "key = value"},
		{"\n\n\njust words\n", 4, "key = value"},
		{"= 5\n", 1, "unknown"},
		{"net.port = abc\n", 1, "net.port"},
		{"net.port = -1\n", 1, "net.port"},
		{"net.port = 4294967296\n", 1, "net.port"},
		{"net.port = 1 2\n", 1, "net.port"},
		{"net.port =\n", 1, "net.port"},
		{"net.workers = 0x10\n", 1, "net.workers"},
		{"store.put_buffer = 1P\n", 1, "store.put_buffer"},
		{"store.put_buffer = lots\n", 1, "store.put_buffer"},
		{"store.min_free = -5M\n", 1, "store.min_free"},
		{"net.header_timeout = 10x\n", 1, "net.header_timeout"},
		{"net.body_timeout = soon\n", 1, "net.body_timeout"},
		{"store.fsync = sometimes\n", 1, "store.fsync"},
		{"store.fsync = Always\n", 1, "store.fsync"},
		{"role = targetgatewaytarget\n", 1, "role"}, /* longer than the field */
		{"a = 1\r\nb = 2\r\n", 1, "'a'"},
		{"net.port = 1\r\nlog.level = info\r\nzzz = 1\r\n", 3, "zzz"},
	};
	conf_t c;
	buf_t err = BUF_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		conf_defaults(&c);
		ck_assert_msg(parse(&c, cases[i].text, &err) == AIS_ERR, "accepted: %s", cases[i].text);
		char want[32];
		snprintf(want, sizeof(want), "line %d: ", cases[i].line);
		ck_assert_msg(!strncmp(err.ptr, want, strlen(want)), "'%s': got '%s'", cases[i].text,
			      err.ptr);
		ck_assert_msg(strstr(err.ptr, cases[i].what), "'%s': got '%s'", cases[i].text,
			      err.ptr);
	}
	/* conf_set names the key */
	buf_reset(&err);
	ck_assert_int_eq(conf_set(&c, "nope", "1", &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "nope"));
	/* a value too long for the parser */
	buf_t lng = BUF_INIT;
	buf_addstr(&lng, "log.file = ");
	for (int i = 0; i < 9000; i++)
		buf_addch(&lng, 'x');
	ck_assert_int_eq(parse(&c, lng.ptr, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "line 1"));
	/* NUL inside a value */
	ck_assert_int_eq(conf_parse(&c, "node.id = a\0b\n", 14, &err), AIS_ERR);
	buf_free(&lng);
	buf_free(&err);
}
END_TEST

START_TEST(test_conf_sizes)
{
	conf_t c;
	buf_t err = BUF_INIT;
	conf_defaults(&c);
	ck_assert_int_eq(conf_set(&c, "store.put_buffer", "65536", &err), AIS_OK);
	ck_assert_uint_eq(c.put_buffer, 65536);
	ck_assert_int_eq(conf_set(&c, "store.put_buffer", "64K", &err), AIS_OK);
	ck_assert_uint_eq(c.put_buffer, 65536);
	ck_assert_int_eq(conf_set(&c, "store.min_free", "2TiB", &err), AIS_OK);
	ck_assert_uint_eq(c.min_free_bytes, 2ULL << 40);
	ck_assert_int_eq(conf_set(&c, "net.max_header_bytes", "8KB", &err), AIS_OK);
	ck_assert_uint_eq(c.max_header_bytes, 8192);
	/* u64 keys are bounded to 32 bits */
	ck_assert_int_eq(conf_set(&c, "net.max_conns", "4294967295", &err), AIS_OK);
	ck_assert_uint_eq(c.max_conns, 4294967295ULL);
	ck_assert_uint_eq(err.len, 0);
	buf_free(&err);
}
END_TEST

START_TEST(test_conf_mountpaths)
{
	conf_t c;
	buf_t err = BUF_INIT;
	conf_defaults(&c);
	ck_assert_int_eq(conf_set(&c, "store.mountpaths", "/a", &err), AIS_OK);
	ck_assert_int_eq(c.n_mountpaths, 1);
	ck_assert_str_eq(c.mountpaths[0], "/a");
	/* replaced, not appended; empty items skipped */
	ck_assert_int_eq(conf_set(&c, "store.mountpaths", ",/b,,/c,", &err), AIS_OK);
	ck_assert_int_eq(c.n_mountpaths, 2);
	ck_assert_str_eq(c.mountpaths[0], "/b");
	ck_assert_str_eq(c.mountpaths[1], "/c");
	/* spaces after commas, as people write lists */
	ck_assert_int_eq(parse(&c, "store.mountpaths = /mnt/d1, /mnt/d2 ,\t/mnt/d3\n", &err),
			 AIS_OK);
	ck_assert_int_eq(c.n_mountpaths, 3);
	ck_assert_str_eq(c.mountpaths[0], "/mnt/d1");
	ck_assert_str_eq(c.mountpaths[1], "/mnt/d2");
	ck_assert_str_eq(c.mountpaths[2], "/mnt/d3");
	ck_assert_int_eq(conf_set(&c, "store.mountpaths", "", &err), AIS_OK);
	ck_assert_int_eq(c.n_mountpaths, 0);
	ck_assert_int_eq(conf_set(&c, "store.mountpaths", " , ", &err), AIS_OK);
	ck_assert_int_eq(c.n_mountpaths, 0);

	/* at most CONF_MAX_MOUNTPATHS */
	buf_t list = BUF_INIT;
	for (int i = 0; i < CONF_MAX_MOUNTPATHS; i++)
		buf_addf(&list, "%s/mp%d", i ? "," : "", i);
	ck_assert_int_eq(conf_set(&c, "store.mountpaths", list.ptr, &err), AIS_OK);
	ck_assert_int_eq(c.n_mountpaths, CONF_MAX_MOUNTPATHS);
	ck_assert_str_eq(c.mountpaths[CONF_MAX_MOUNTPATHS - 1], "/mp63");
	buf_addstr(&list, ",/one-too-many");
	ck_assert_int_eq(conf_set(&c, "store.mountpaths", list.ptr, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "store.mountpaths"));

	/* a path longer than the field */
	buf_reset(&list);
	buf_addch(&list, '/');
	for (int i = 0; i < 1100; i++)
		buf_addch(&list, 'p');
	buf_reset(&err);
	ck_assert_int_eq(conf_set(&c, "store.mountpaths", list.ptr, &err), AIS_ERR);
	buf_free(&list);
	buf_free(&err);
}
END_TEST

START_TEST(test_conf_validate)
{
	static const struct {
		const char *key, *value, *what;
	} cases[] = {
		{"role", "proxy", "role"},
		{"role", "", "role"},
		{"store.mountpaths", "", "mountpath"},
		{"net.port", "65536", "net.port"},
		{"store.checksum", "crc32", "store.checksum"},
		{"log.level", "verbose", "log.level"},
		{"net.max_header_bytes", "1000", "net.max_header_bytes"},
		{"net.max_header_bytes", "2MiB", "net.max_header_bytes"},
		{"store.put_buffer", "4095", "store.put_buffer"},
		{"store.put_buffer", "65MiB", "store.put_buffer"},
		{"io.threads", "0", "io.threads"},
		{"io.threads", "257", "io.threads"},
	};
	static const struct {
		const char *key, *value;
	} fine[] = {
		{"net.port", "0"},          {"net.port", "65535"},
		{"store.checksum", "none"}, {"store.checksum", "sha256"},
		{"log.level", "ERROR"},     {"net.max_header_bytes", "1KiB"},
		{"net.max_header_bytes", "1MiB"}, {"store.put_buffer", "4KiB"},
		{"store.put_buffer", "64MiB"}, {"io.threads", "256"},
	};
	conf_t c;
	buf_t err = BUF_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		conf_with_mp(&c);
		buf_reset(&err);
		ck_assert_int_eq(conf_set(&c, cases[i].key, cases[i].value, &err), AIS_OK);
		ck_assert_msg(conf_validate(&c, &err) == AIS_ERR, "%s = %s accepted", cases[i].key,
			      cases[i].value);
		ck_assert_msg(strstr(err.ptr, cases[i].what), "%s = %s: '%s'", cases[i].key,
			      cases[i].value, err.ptr);
	}
	for (size_t i = 0; i < ARRAY_SIZE(fine); i++) {
		conf_with_mp(&c);
		buf_reset(&err);
		ck_assert_int_eq(conf_set(&c, fine[i].key, fine[i].value, &err), AIS_OK);
		ck_assert_msg(conf_validate(&c, &err) == AIS_OK, "%s = %s: %s", fine[i].key,
			      fine[i].value, err.ptr);
	}
	buf_free(&err);
}
END_TEST

START_TEST(test_conf_load)
{
	char path[] = "/tmp/aisd-test-conf-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	const char *text = "role = gateway\nnet.port = 9100\n";
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);

	conf_t c;
	buf_t err = BUF_INIT;
	conf_defaults(&c);
	ck_assert_msg(conf_load(&c, path, &err) == AIS_OK, "%s", err.ptr);
	ck_assert_str_eq(c.role, "gateway");
	ck_assert_uint_eq(c.port, 9100);

	/* an error names the file and the line */
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	text = "net.port = 1\nnet.port = x\n";
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	buf_reset(&err);
	ck_assert_int_eq(conf_load(&c, path, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, path));
	ck_assert_ptr_nonnull(strstr(err.ptr, "line 2"));
	unlink(path);

	/* missing file */
	buf_reset(&err);
	ck_assert_int_eq(conf_load(&c, path, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, path));
	/* a directory is not a config file */
	buf_reset(&err);
	ck_assert_int_eq(conf_load(&c, "/tmp", &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "/tmp"));
	buf_free(&err);
}
END_TEST

START_TEST(test_conf_describe)
{
	static const char *const keys[] = {
		"role", "node.id", "net.host", "net.port", "net.workers", "net.max_conns",
		"net.max_header_bytes", "net.header_timeout", "net.idle_timeout", "net.body_timeout",
		"io.threads", "store.mountpaths", "store.fsync", "store.checksum", "store.put_buffer",
		"store.min_free", "log.level", "log.file",
	};
	buf_t out = BUF_INIT;
	conf_describe(&out);
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		ck_assert_msg(strstr(out.ptr, keys[i]), "%s not described", keys[i]);
	buf_free(&out);
}
END_TEST

/* ---- log ---------------------------------------------------------------- */

START_TEST(test_log)
{
	enum log_level lv;
	ck_assert_int_eq(log_parse_level("debug", &lv), AIS_OK);
	ck_assert_int_eq(lv, LOG_DEBUG);
	ck_assert_int_eq(log_parse_level("WARN", &lv), AIS_OK);
	ck_assert_int_eq(lv, LOG_WARN);
	ck_assert_int_eq(log_parse_level("error", &lv), AIS_OK);
	ck_assert_int_eq(lv, LOG_ERROR);
	ck_assert_int_eq(log_parse_level("fatal", &lv), AIS_ERR);
	ck_assert_int_eq(log_parse_level("", &lv), AIS_ERR);

	char path[] = "/tmp/aisd-test-log-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	log_init("t9", LOG_INFO, path);
	unsigned long errs = log_error_count();
	log_debug("hidden %d", 1);
	log_set_action("testing");
	log_info("shown %d", 2);
	log_errx("bad %s", "thing");
	log_set_action(NULL);
	char lng[4000];
	memset(lng, 'L', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = '\0';
	log_warnx("%s", lng); /* truncated, still one line */
	ck_assert_uint_eq(log_error_count(), errs + 1);

	buf_t text = BUF_INIT;
	char chunk[4096];
	ssize_t n;
	fd = open(path, O_RDONLY);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		buf_add(&text, chunk, (size_t)n);
	close(fd);
	unlink(path);
	log_init("aisd", LOG_INFO, NULL);

	ck_assert_ptr_null(strstr(text.ptr, "hidden"));
	ck_assert_ptr_nonnull(strstr(text.ptr, " I t9["));
	ck_assert_ptr_nonnull(strstr(text.ptr, "] testing: shown 2\n"));
	ck_assert_ptr_nonnull(strstr(text.ptr, " E t9["));
	ck_assert_ptr_nonnull(strstr(text.ptr, "testing: bad thing\n"));
	/* 4 lines at most (3 shown), each ending in a newline */
	size_t lines = 0;
	for (size_t i = 0; i < text.len; i++)
		lines += text.ptr[i] == '\n';
	ck_assert_uint_eq(lines, 3);
	ck_assert_int_eq(text.ptr[text.len - 1], '\n');
	/* the first line starts with an ISO time */
	ck_assert_int_eq(text.ptr[4], '-');
	ck_assert_int_eq(text.ptr[10], 'T');
	buf_free(&text);
}
END_TEST

static Suite *core_suite(void)
{
	Suite *s = suite_create("core");
	TCase *b = tcase_create("buf");
	tcase_add_test(b, test_buf_empty);
	tcase_add_test(b, test_buf_growth);
	tcase_add_test(b, test_buf_add_variants);
	tcase_add_test(b, test_buf_addf);
	tcase_add_test(b, test_buf_addnum);
	tcase_add_test(b, test_buf_json_str);
	tcase_add_test(b, test_buf_consume);
	tcase_add_test(b, test_buf_detach);
	tcase_add_test(b, test_sv);
	suite_add_tcase(s, b);
	TCase *a = tcase_create("arena");
	tcase_add_test(a, test_arena_alignment);
	tcase_add_test(a, test_arena_no_overlap);
	tcase_add_test(a, test_arena_big);
	tcase_add_test(a, test_arena_strings);
	tcase_add_test(a, test_arena_cleanups);
	tcase_add_test(a, test_arena_cleanup_cancel);
	tcase_add_test(a, test_arena_reset_reuses_first_block);
	tcase_add_test(a, test_arena_many_resets);
	suite_add_tcase(s, a);
	TCase *c = tcase_create("conf");
	tcase_add_test(c, test_conf_defaults);
	tcase_add_test(c, test_conf_encode);
	tcase_add_test(c, test_conf_tls);
	tcase_add_test(c, test_conf_parse);
	tcase_add_test(c, test_conf_durations);
	tcase_add_test(c, test_conf_errors);
	tcase_add_test(c, test_conf_sizes);
	tcase_add_test(c, test_conf_mountpaths);
	tcase_add_test(c, test_conf_validate);
	tcase_add_test(c, test_conf_load);
	tcase_add_test(c, test_conf_describe);
	suite_add_tcase(s, c);
	TCase *l = tcase_create("log");
	tcase_add_test(l, test_log);
	suite_add_tcase(s, l);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(core_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
