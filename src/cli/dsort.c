/*
 * dsort.c - "aisctl dsort SRC DST": resharding and shuffling of tar shards
 * in the cluster (POST /v1/buckets/SRC?bck_to=DST {"action":"dsort",
 * "value":{..}}): SRC's samples reordered and cut into new shards of DST
 * by the targets, as a job (aisctl job wait ID); --dry-run prints the plan.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

int cli_dsort(struct cli *c, const struct cli_args *a)
{
	const char *src = a->pos[0], *dst = a->pos[1], *ss = cli_opt(a, "shard-size");
	const char *ps = cli_opt(a, "samples-per-shard"), *sd = cli_opt(a, "seed");
	const char *alg = cli_opt(a, "algorithm"), *tpl = cli_opt(a, "template");
	bool dry = cli_opt(a, "dry-run") != NULL;
	uint64_t size = 0, per = 0, seed = 0;
	if (!strncmp(src, "ais://", 6))
		src += 6;
	if (!strncmp(dst, "ais://", 6))
		dst += 6;
	if (!*src || strchr(src, '/') || !*dst || strchr(dst, '/'))
		return cli_usage_error(a->cmd, "two bucket names, not '%s' '%s'", a->pos[0], a->pos[1]);
	if (ss && ps)
		return cli_usage_error(a->cmd, "--shard-size or --samples-per-shard, not both");
	if (ss && num_parse_size(ss, &size) != AIS_OK)
		return cli_usage_error(a->cmd, "--shard-size: a size such as 64MiB, not '%s'", ss);
	if (ps && num_parse_u64(ps, strlen(ps), 1, INT64_MAX, &per) != AIS_OK)
		return cli_usage_error(a->cmd, "--samples-per-shard: a number, not '%s'", ps);
	if (sd && num_parse_u64(sd, strlen(sd), 0, INT64_MAX, &seed) != AIS_OK)
		return cli_usage_error(a->cmd, "--seed: a number, not '%s'", sd);
	bool ord = alg && !strcmp(alg, "order"); /* the order file names the shards */
	json_t *v = json_pack("{s:s,s:b}", "algorithm", alg ? alg : "alphanumeric", "dry_run", dry);
	if (tpl || !ord)
		json_object_set_new(v, "template", json_string(tpl ? tpl : "shard-%06d.tar"));
	if (ps)
		json_object_set_new(v, "samples_per_shard", json_integer((json_int_t)per));
	else if (ss || !ord)
		json_object_set_new(v, "shard_size", json_integer((json_int_t)(ss ? size : 64u << 20)));
	if (sd)
		json_object_set_new(v, "seed", json_integer((json_int_t)seed));
	const char *str[][2] = {{"prefix", "prefix"},
				{"input-template", "input_template"},
				{"content-ext", "content_ext"},
				{"content-type", "content_type"},
				{"order-file", "order_file"},
				{"unlisted-shard", "unlisted_shard"}};
	for (size_t i = 0; i < ARRAY_SIZE(str); i++)
		if (cli_opt(a, str[i][0]))
			json_object_set_new(v, str[i][1], json_string(cli_opt(a, str[i][0])));
	json_t *body = json_pack("{s:s,s:o}", "action", "dsort", "value", v);
	char *js = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	buf_t path = BUF_INIT;
	buf_addstr(&path, "/v1/buckets/");
	buf_add_pct(&path, sv_from(src), false);
	buf_addstr(&path, "?bck_to=");
	buf_add_pct(&path, sv_from(dst), false);
	struct cli_req rq = CLI_REQ_INIT("POST", path.ptr);
	rq.json = js;
	struct cli_resp rs = {0};
	int rc = cli_http(c, &rq, &rs);
	if (rc == AIS_OK)
		rc = cli_http_check(&rs, "dsort");
	if (rc == AIS_OK) {
		json_t *doc = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
		const char *id = json_string_value(json_object_get(doc, "id"));
		if (c->json || dry) {
			printf("%.*s\n", (int)rs.body.len, rs.body.ptr ? rs.body.ptr : "");
		} else {
			printf("dsort %s -> %s: started on every target as job %s (aisctl job wait %s)\n", src, dst,
			       id ? id : "?", id ? id : "?");
		}
		json_decref(doc);
	}
	cli_resp_free(&rs);
	buf_free(&path);
	free(js);
	return rc == AIS_OK ? CLI_EXIT_OK : CLI_EXIT_ERR;
}
