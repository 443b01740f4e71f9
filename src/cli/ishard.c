/*
 * ishard.c - "aisctl ishard SRC DST": initial sharding in the cluster
 * (POST /v1/buckets/SRC?bck_to=DST {"action":"ishard","value":{..}}): the
 * loose objects of SRC packed into tar shards of DST by the targets, as a
 * job (aisctl job wait ID); --dry-run prints the plan instead.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

int cli_ishard(struct cli *c, const struct cli_args *a)
{
	const char *src = a->pos[0], *dst = a->pos[1], *ss = cli_opt(a, "shard-size");
	const char *tpl = cli_opt(a, "template"), *sh = cli_opt(a, "shuffle");
	bool dry = cli_opt(a, "dry-run") != NULL;
	uint64_t size = 0, seed = 0;
	if (!strncmp(src, "ais://", 6))
		src += 6;
	if (!strncmp(dst, "ais://", 6))
		dst += 6;
	if (!*src || strchr(src, '/') || !*dst || strchr(dst, '/'))
		return cli_usage_error(a->cmd, "two bucket names, not '%s' '%s'", a->pos[0], a->pos[1]);
	if (!strcmp(src, dst))
		return cli_usage_error(a->cmd, "the destination is the source");
	if (ss && num_parse_size(ss, &size) != AIS_OK)
		return cli_usage_error(a->cmd, "--shard-size: a size such as 64MiB, not '%s'", ss);
	if (sh && num_parse_u64(sh, strlen(sh), 0, INT64_MAX, &seed) != AIS_OK)
		return cli_usage_error(a->cmd, "--shuffle: a seed (a number), not '%s'", sh);
	json_t *v = json_pack("{s:I,s:s,s:b}", "shard_size", (json_int_t)(ss ? size : 64u << 20), "template",
			      tpl ? tpl : "shard-%06d.tar", "dry_run", dry);
	if (cli_opt(a, "prefix"))
		json_object_set_new(v, "prefix", json_string(cli_opt(a, "prefix")));
	if (cli_opt(a, "ext"))
		json_object_set_new(v, "ext", cli_list_of(cli_opt(a, "ext")));
	if (cli_opt(a, "regex"))
		json_object_set_new(v, "regex", json_string(cli_opt(a, "regex")));
	if (cli_opt(a, "missing"))
		json_object_set_new(v, "missing", json_string(cli_opt(a, "missing")));
	if (sh)
		json_object_set_new(v, "shuffle", json_integer((json_int_t)seed));
	json_t *body = json_pack("{s:s,s:o}", "action", "ishard", "value", v);
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
		rc = cli_http_check(&rs, "ishard");
	if (rc == AIS_OK) {
		json_t *doc = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
		const char *id = json_string_value(json_object_get(doc, "id"));
		if (c->json) {
			cli_print_json_text(rs.body.ptr, rs.body.len);
		} else if (dry) {
			printf("%.*s\n", (int)rs.body.len, rs.body.ptr ? rs.body.ptr : "");
		} else {
			printf("ishard %s -> %s: started on every target as job %s (aisctl job wait %s)\n", src, dst,
			       id ? id : "?", id ? id : "?");
		}
		json_decref(doc);
	}
	cli_resp_free(&rs);
	buf_free(&path);
	free(js);
	return rc == AIS_OK ? CLI_EXIT_OK : CLI_EXIT_ERR;
}
