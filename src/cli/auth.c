/*
 * auth.c - "aisctl auth token create": a bearer token (JWT, HS256) made
 * locally with the cluster's auth.secret, for operators who hold it. The
 * secret comes from --secret-file, or from an aisd config file given with
 * --config (its auth.secret or auth.secret_file). Prints the token on
 * standard output (with --json: {"token": ..., "expires": ...}).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/auth.h"
#include "aisd/conf.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

int cli_auth_token_create(struct cli *c, const struct cli_args *a)
{
	const char *user = cli_opt(a, "user"), *bck = cli_opt(a, "bucket"), *perm = cli_opt(a, "perm");
	const char *ttl = cli_opt(a, "ttl"), *sfile = cli_opt(a, "secret-file"), *cfile = cli_opt(a, "config");
	auth_token_t t;
	unsigned bits = AUTH_RO;
	uint64_t ttl_ms = 24 * 3600 * 1000ULL;
	buf_t err = BUF_INIT, tok = BUF_INIT;
	conf_t *cf = xcalloc(1, sizeof(*cf));
	int rc = CLI_EXIT_USAGE;

	memset(&t, 0, sizeof(t));
	if (!user || !*user || strlen(user) > AUTH_USER_MAX || strchr(user, ':')) {
		cli_usage_error(a->cmd, "--user USER is required (1..128 bytes, no ':')");
		goto out;
	}
	snprintf(t.user, sizeof(t.user), "%s", user);
	t.admin = cli_opt(a, "admin") != NULL;
	t.monitor = cli_opt(a, "monitor") != NULL;
	if (perm && auth_perm_parse(sv_from(perm), &bits) != AIS_OK) {
		cli_usage_error(a->cmd, "bad --perm '%s': want ro, rw, admin or read,write,list,delete,admin", perm);
		goto out;
	}
	if (ttl && (conf_parse_ms(ttl, &ttl_ms) != AIS_OK || ttl_ms < 1000)) {
		cli_usage_error(a->cmd, "bad --ttl '%s': want a duration such as 30m, 12h, 3600s", ttl);
		goto out;
	}
	if (!bck && !t.admin && !t.monitor) {
		cli_usage_error(a->cmd, "--bucket BUCKET (or --admin, --monitor) is required");
		goto out;
	}
	for (const char *p = bck; p && *p;) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (t.nb >= AUTH_MAX_BUCKETS || !((n == 1 && *p == '*') || name_bucket_valid(p, n))) {
			cli_usage_error(a->cmd, "bad --bucket '%s': bucket names (at most %d) or *", bck, AUTH_MAX_BUCKETS);
			goto out;
		}
		memcpy(t.b[t.nb].bucket, p, n);
		t.b[t.nb++].perm = bits;
		p = e ? e + 1 : p + n;
	}
	conf_defaults(cf);
	if (sfile) {
		snprintf(cf->auth_secret_file, sizeof(cf->auth_secret_file), "%s", sfile);
	} else if (cfile) {
		if (conf_load(cf, cfile, &err) != AIS_OK) {
			cli_err("%s", err.ptr);
			rc = CLI_EXIT_ERR;
			goto out;
		}
	} else {
		cli_usage_error(a->cmd, "the secret is needed: --secret-file FILE or --config AISD.CONF");
		goto out;
	}
	rc = CLI_EXIT_ERR;
	if (conf_load_secrets(cf, &err) != AIS_OK) {
		cli_err("%s", err.ptr);
		goto out;
	}
	if (!cf->auth_secret[0]) {
		cli_err("%s sets neither auth.secret nor auth.secret_file", cfile);
		goto out;
	}
	t.exp = time_now_ns() / 1000000000LL + (int64_t)(ttl_ms / 1000);
	auth_jwt_make(&t, cf->auth_secret, strlen(cf->auth_secret), &tok);
	if (c->json) {
		buf_t j = BUF_INIT;
		buf_addf(&j, "{\"token\":\"%s\",\"user\":", tok.ptr);
		buf_add_json_str(&j, t.user, strlen(t.user));
		buf_addf(&j, ",\"expires\":%lld}", (long long)t.exp);
		printf("%s\n", j.ptr);
		buf_free(&j);
	} else
		printf("%s\n", tok.ptr);
	rc = CLI_EXIT_OK;
out:
	explicit_bzero(cf, sizeof(*cf));
	free(cf);
	buf_free(&err);
	buf_free(&tok);
	return rc;
}
