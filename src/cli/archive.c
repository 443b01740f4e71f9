/*
 * archive.c - "aisctl archive put BUCKET/SHARD": objects of a bucket packed
 * into a shard on the server (POST /v1/buckets/SRC?bck_to=BUCKET
 * {"action":"archive","value":{"archname":SHARD,"list"|"template",..}}),
 * or appended to an existing one, as a job (aisctl job wait ID).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

int cli_archive_put(struct cli *c, const struct cli_args *a)
{
	const char *list = cli_opt(a, "list"), *tpl = cli_opt(a, "template"), *from = cli_opt(a, "from");
	char *bck, *shard;
	if (cli_split_uname(a->pos[0], true, &bck, &shard) != AIS_OK)
		return cli_usage_error(a->cmd, "BUCKET/SHARD, not '%s'", a->pos[0]);
	if (!list == !tpl) {
		free(bck);
		free(shard);
		return cli_usage_error(a->cmd, "one of --list and --template");
	}
	if (from && !strncmp(from, "ais://", 6))
		from += 6;
	json_t *v = json_pack("{s:s,s:b,s:b,s:b}", "archname", shard, "append", cli_opt(a, "append") != NULL,
			      "overwrite", cli_opt(a, "overwrite") != NULL, "inclsrcname",
			      cli_opt(a, "include-src-bck") != NULL);
	if (list)
		json_object_set_new(v, "list", cli_list_of(list));
	else
		json_object_set_new(v, "template", json_string(tpl));
	json_t *body = json_pack("{s:s,s:o}", "action", "archive", "value", v);
	char *js = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	buf_t path = BUF_INIT;
	buf_addstr(&path, "/v1/buckets/");
	buf_add_pct(&path, sv_from(from ? from : bck), false);
	buf_addstr(&path, "?bck_to=");
	buf_add_pct(&path, sv_from(bck), false);
	struct cli_req rq = CLI_REQ_INIT("POST", path.ptr);
	rq.json = js;
	struct cli_resp rs = {0};
	int rc = cli_http(c, &rq, &rs);
	if (rc == AIS_OK)
		rc = cli_http_check(&rs, "archive");
	if (rc == AIS_OK) {
		json_t *doc = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
		const char *id = json_string_value(json_object_get(doc, "id"));
		if (c->json)
			printf("%.*s\n", (int)rs.body.len, rs.body.ptr ? rs.body.ptr : "");
		else
			printf("archive %s/%s: started as job %s (aisctl job wait %s)\n", bck, shard, id ? id : "?",
			       id ? id : "?");
		json_decref(doc);
	}
	cli_resp_free(&rs);
	buf_free(&path);
	free(js);
	free(bck);
	free(shard);
	return rc == AIS_OK ? CLI_EXIT_OK : CLI_EXIT_ERR;
}
