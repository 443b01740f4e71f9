/*
 * test_backend.c - the remote backend's pure checks (src/backend/bk_int.h):
 * which redirects a remote may make us follow, and the bound on a listing
 * page's values counted before it is parsed.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/backend/bk_int.h"
#include "aisd/banned.h"

static bool redir(const char *remote_url, const char *loc)
{
	bk_remote_t r;
	memset(&r, 0, sizeof(r));
	snprintf(r.url, sizeof(r.url), "%s", remote_url);
	return bk_redirect_ok(&r, loc);
}

START_TEST(test_redirect_same_host)
{
	ck_assert(redir("http://gw:8080", "http://gw:8081/v1/objects/b/o?ais_rsig=x"));
	ck_assert(redir("http://gw:8080/base", "http://gw/v1/objects/b/o"));
	ck_assert(redir("http://GW:8080", "http://gw:9000/x"));
	ck_assert(redir("https://10.0.0.5", "https://10.0.0.5:8443/x"));
}
END_TEST

START_TEST(test_redirect_refused)
{
	ck_assert(!redir("http://gw:8080", "http://other:8080/x"));
	ck_assert(!redir("http://gw:8080", "http://169.254.169.254/latest/meta-data"));
	ck_assert(!redir("http://gw:8080", "https://gw:8080/x"));         /* another scheme */
	ck_assert(!redir("https://gw:8080", "http://gw:8080/x"));         /* no downgrade */
	ck_assert(!redir("http://gw:8080", "http://gw:1@evil:8080/x"));   /* user info, another host */
	ck_assert(!redir("http://gw:8080", "http://u:p@gw:8080/x"));      /* user info */
	ck_assert(!redir("http://gw:8080", "http://gw.evil/x"));
	ck_assert(!redir("http://gw:8080", "file:///etc/passwd"));
	ck_assert(!redir("http://gw:8080", "gopher://gw/x"));
	ck_assert(!redir("http://gw:8080", ""));
	ck_assert(!redir("http://gw:8080", "not a url"));
}
END_TEST

static size_t V(const char *s) { return bk_json_values((sv_t){s, strlen(s)}); }

START_TEST(test_json_values)
{
	ck_assert_uint_eq(V("1"), 1);
	ck_assert_uint_ge(V("[1,2,3]"), 3);
	ck_assert_uint_ge(V("{\"a\":1,\"b\":[2,3]}"), 4);
	/* what is inside strings does not count, escapes included */
	ck_assert_uint_eq(V("\",:[{,,,\""), 1);
	ck_assert_uint_eq(V("\"a\\\",:[{\""), 1);
	/* a page of empty entries counts one per entry */
	size_t n = 100000;
	char *s = malloc(3 * n + 32);
	size_t k = 0;
	memcpy(s, "{\"entries\":[", 12);
	k = 12;
	for (size_t i = 0; i < n; i++) {
		memcpy(s + k, i ? ",{}" : "{}", i ? 3 : 2);
		k += i ? 3 : 2;
	}
	memcpy(s + k, "]}", 2);
	k += 2;
	ck_assert_uint_ge(bk_json_values((sv_t){s, k}), n);
	free(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("backend");
	TCase *tc = tcase_create("checks");
	tcase_add_test(tc, test_redirect_same_host);
	tcase_add_test(tc, test_redirect_refused);
	tcase_add_test(tc, test_json_values);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
