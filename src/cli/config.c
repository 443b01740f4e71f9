/*
 * config.c - "aisctl config set [--node] KEY=VALUE...": changes
 * configuration while the cluster runs. Without --node it is one
 * PUT /v1/cluster {"action":"set-config","value":{KEY:VALUE,...}}, which the
 * primary applies on every node (a standalone target, which has no
 * cluster, gets the per-node form); with --node only the node at the
 * endpoint changes (PUT /v1/daemon). Keys that change at run time:
 * log.level, log.access, net.rate_limit, net.rate_burst. Prints "ID: ok"
 * (or the node's error) per node, or "ok"; with --json the server's answer
 * ({"nodes":{ID:{..}}}) or {"ok":true}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "aisd/status.h"
#include "cli.h"
#include "aisd/banned.h"

static int send_cfg(struct cli *c, const char *path, const char *json, struct cli_resp *rs)
{
	struct cli_req rq = CLI_REQ_INIT("PUT", path);
	rq.json = json;
	memset(rs, 0, sizeof(*rs));
	return cli_http(c, &rq, rs);
}

int cli_config_set(struct cli *c, const struct cli_args *a)
{
	json_t *val = json_object();
	for (int i = 0; i < a->npos; i++) {
		char *eq = strchr(a->pos[i], '=');
		if (!eq || eq == a->pos[i]) {
			json_decref(val);
			return cli_usage_error(a->cmd, "want KEY=VALUE, not '%s'", a->pos[i]);
		}
		*eq = '\0';
		json_object_set_new(val, a->pos[i], json_string(eq + 1));
	}
	json_t *body = json_pack("{s:s,s:o}", "action", "set-config", "value", val);
	char *json = json_dumps(body, JSON_COMPACT);
	json_decref(body);

	bool node = cli_opt(a, "node") != NULL;
	struct cli_resp rs;
	int rc = CLI_EXIT_ERR;
	if (send_cfg(c, node ? "/v1/daemon" : "/v1/cluster", json, &rs) != AIS_OK)
		goto out;
	if (!node && rs.status == 400 && rs.body.ptr && strstr(rs.body.ptr, "not in a cluster")) {
		cli_resp_free(&rs);
		node = true; /* a standalone target */
		if (send_cfg(c, "/v1/daemon", json, &rs) != AIS_OK)
			goto out;
	}
	json_t *doc = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
	json_t *nodes = json_object_get(doc, "nodes");
	if (!node && json_is_object(nodes)) {
		const char *id;
		json_t *r;
		if (c->json) {
			char *s = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
			puts(s ? s : "{}");
			free(s);
		}
		json_object_foreach(nodes, id, r) {
			const char *e = json_string_value(json_object_get(r, "error"));
			if (!c->json)
				printf("%s: %s\n", id, e ? e : "ok");
		}
		rc = rs.status == 200 ? CLI_EXIT_OK : CLI_EXIT_ERR;
		if (rc != CLI_EXIT_OK)
			cli_err("config set: not every node took the change");
	} else if (cli_http_check(&rs, "config set") == AIS_OK) {
		puts(c->json ? "{\"ok\":true}" : "ok");
		rc = CLI_EXIT_OK;
	}
	json_decref(doc);
out:
	cli_resp_free(&rs);
	free(json);
	return rc;
}
