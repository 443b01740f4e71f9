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
 *
 * "aisctl config show [--node NODE] [KEY-PREFIX]": the running configuration
 * of the node at the endpoint, or of NODE (found in the cluster map and
 * asked directly), from GET /v1/daemon?what=config; secrets come masked
 * from the node. KEY-PREFIX keeps the keys that start with it ("net.",
 * "store.fsync"). Text: "KEY  VALUE" lines; --json: one object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "aisd/status.h"
#include "aisd/util.h"
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
		if (c->json)
			cli_print_json(json_incref(doc));
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

/* The public URL of node id from the endpoint's cluster map, or NULL after
 * a message (CLI_EXIT_NOTFOUND's kind when the map lacks it). */
static char *node_url(struct cli *c, const char *id)
{
	struct cli_req rq = CLI_REQ_INIT("GET", "/v1/cluster?what=smap");
	struct cli_resp rs = {0};
	char *url = NULL;
	if (cli_http(c, &rq, &rs) != AIS_OK || cli_http_check(&rs, "cluster map") != AIS_OK)
		goto out;
	json_t *m = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
	size_t i;
	json_t *n;
	json_array_foreach(json_object_get(m, "nodes"), i, n) {
		const char *u = json_string_value(json_object_get(n, "public_url"));
		const char *nid = json_string_value(json_object_get(n, "id"));
		if (nid && !strcmp(nid, id) && u && *u)
			url = xstrdup(u);
	}
	json_decref(m);
	if (!url)
		cli_err_notfound("config show: no node %s in the cluster map", id);
out:
	cli_resp_free(&rs);
	return url;
}

int cli_config_show(struct cli *c, const struct cli_args *a)
{
	const char *node = cli_opt(a, "node"), *pfx = a->npos ? a->pos[0] : "";
	char *saved = NULL;
	int rc = CLI_EXIT_ERR;
	if (node) {
		char *url = node_url(c, node);
		if (!url)
			return CLI_EXIT_ERR;
		saved = c->endpoint;
		c->endpoint = url;
		while (*url && url[strlen(url) - 1] == '/')
			url[strlen(url) - 1] = '\0';
	}
	struct cli_req rq = CLI_REQ_INIT("GET", "/v1/daemon?what=config");
	struct cli_resp rs = {0};
	if (cli_http(c, &rq, &rs) != AIS_OK || cli_http_check(&rs, "config show") != AIS_OK)
		goto out;
	json_t *cfg = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
	if (!json_is_object(cfg)) {
		cli_err("config show: the node's answer is not a JSON object");
		json_decref(cfg);
		goto out;
	}
	json_t *keep = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(cfg, k, v) {
		if (!strncmp(k, pfx, strlen(pfx)))
			json_object_set(keep, k, v);
	}
	json_decref(cfg);
	if (!json_object_size(keep)) {
		cli_err_notfound("config show: no key starts with '%s'", pfx);
		json_decref(keep);
		goto out;
	}
	if (c->json) {
		cli_print_json(keep);
	} else {
		json_object_foreach(keep, k, v) {
			char *t = json_is_string(v) ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			printf("%-30s %s\n", k, json_is_string(v) ? json_string_value(v) : (t ? t : "?"));
			free(t);
		}
		json_decref(keep);
	}
	rc = CLI_EXIT_OK;
out:
	cli_resp_free(&rs);
	if (saved) {
		free(c->endpoint);
		c->endpoint = saved;
	}
	return rc;
}
