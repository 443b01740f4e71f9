/*
 * bucket.c - aisctl's bucket commands: "bucket create", "bucket ls" and
 * "bucket rm". Each is one control request to /v1/buckets with an action
 * body; the server's answer is checked and its error message printed as is.
 * "bucket rm" goes on through the list after a failure and exits 1 if any
 * bucket could not be destroyed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "aisd/status.h"
#include "cli.h"
#include "aisd/banned.h"

static const char *const checksum_types[] = {"xxhash", "md5", "sha256", "none"};

/* Sends one action (already a JSON text) to /v1/buckets/<bucket>. */
static int bucket_action(struct cli *c, const char *method, const char *bucket, const char *json,
			 const char *what)
{
	buf_t path = BUF_INIT;
	buf_addstr(&path, "/v1/buckets/");
	cli_escape(&path, bucket, false);
	struct cli_req rq = CLI_REQ_INIT(method, path.ptr);
	rq.json = json;
	struct cli_resp rs = {0};
	int rc = cli_http(c, &rq, &rs);
	if (rc == AIS_OK)
		rc = cli_http_check(&rs, what);
	cli_resp_free(&rs);
	buf_free(&path);
	return rc;
}

int cli_bucket_create(struct cli *c, const struct cli_args *a)
{
	const char *bucket = a->pos[0];
	const char *cks = cli_opt(a, "checksum");
	json_t *body = json_pack("{s:s}", "action", "create-bck");

	if (strncmp(bucket, "ais://", 6) == 0)
		bucket += 6;
	if (!*bucket || strchr(bucket, '/')) {
		json_decref(body);
		return cli_usage_error(a->cmd, "bad bucket name '%s'", a->pos[0]);
	}
	if (cks) {
		bool known = false;
		for (size_t i = 0; i < sizeof(checksum_types) / sizeof(checksum_types[0]); i++)
			known = known || strcmp(cks, checksum_types[i]) == 0;
		if (!known) {
			json_decref(body);
			return cli_usage_error(a->cmd,
					       "bad --checksum '%s': want xxhash, md5, sha256 or none",
					       cks);
		}
		json_object_set_new(body, "value",
				    json_pack("{s:{s:s}}", "checksum", "type", cks));
	}
	char *json = json_dumps(body, JSON_COMPACT);
	json_decref(body);

	buf_t what = BUF_INIT;
	buf_addf(&what, "create bucket %s", bucket);
	int rc = bucket_action(c, "POST", bucket, json, what.ptr);
	if (rc == AIS_OK)
		printf("created bucket %s\n", bucket);
	buf_free(&what);
	free(json);
	return rc == AIS_OK ? CLI_EXIT_OK : CLI_EXIT_ERR;
}

int cli_bucket_ls(struct cli *c, const struct cli_args *a)
{
	struct cli_req rq = CLI_REQ_INIT("GET", "/v1/buckets/");
	struct cli_resp rs = {0};
	int rc = CLI_EXIT_ERR;

	if (cli_http(c, &rq, &rs) != AIS_OK || cli_http_check(&rs, "list buckets") != AIS_OK)
		goto out;
	json_error_t jerr;
	json_t *j = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, &jerr);
	if (!j) {
		cli_err("list buckets: the server's answer is not JSON: %s", jerr.text);
		goto out;
	}
	/* An array of buckets; a {"buckets":[...]} wrapper is accepted too. */
	json_t *arr = json_is_object(j) ? json_object_get(j, "buckets") : j;
	if (json_is_null(arr) || !arr) {
		arr = NULL;
	} else if (!json_is_array(arr)) {
		cli_err("list buckets: unexpected answer (not an array)");
		goto out_decref;
	}
	if (cli_opt(a, "json")) {
		char *s = arr ? json_dumps(arr, JSON_INDENT(2)) : NULL;
		puts(s ? s : "[]");
		free(s);
	} else {
		size_t i;
		json_t *b;
		json_array_foreach(arr, i, b)
		{
			const char *name = json_is_string(b) ? json_string_value(b)
							     : json_string_value(json_object_get(b, "name"));
			if (name)
				puts(name);
		}
	}
	rc = CLI_EXIT_OK;
out_decref:
	json_decref(j);
out:
	cli_resp_free(&rs);
	return rc;
}

int cli_bucket_rm(struct cli *c, const struct cli_args *a)
{
	int rc = CLI_EXIT_OK;
	for (int i = 0; i < a->npos; i++) {
		const char *bucket = a->pos[i];
		if (strncmp(bucket, "ais://", 6) == 0)
			bucket += 6;
		if (!*bucket || strchr(bucket, '/')) {
			cli_err("bad bucket name '%s'", a->pos[i]);
			rc = CLI_EXIT_ERR;
			continue;
		}
		buf_t what = BUF_INIT;
		buf_addf(&what, "destroy bucket %s", bucket);
		if (bucket_action(c, "DELETE", bucket, "{\"action\":\"destroy-bck\"}", what.ptr) ==
		    AIS_OK)
			printf("destroyed bucket %s\n", bucket);
		else
			rc = CLI_EXIT_ERR;
		buf_free(&what);
	}
	return rc;
}
