/*
 * node.c - aisctl's node state commands: "node maintenance start|stop NODE"
 * and "node decommission NODE [--yes]". Each is one PUT /v1/cluster with
 * AIStore's {"action","value":{"sid":NODE}} body; a non-primary endpoint
 * answers 307 to the primary and cli_http follows it with the body kept.
 * The server answers with the new cluster map; the command prints one line
 * (the node's state in it, or that it left the map), or with --json
 * {"node","action","state" ("removed" when it left the map),"cmap_version"}.
 *
 * Decommission removes the node from the cluster for good (it will not
 * rejoin by itself), so on a terminal it asks for confirmation unless --yes
 * is given; without a terminal --yes is required.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "aisd/status.h"
#include "cli.h"
#include "aisd/banned.h"

/* Sends the action; on success prints the node's state in the returned map. */
static int node_action(struct cli *c, const char *action, const char *node, bool drain)
{
	json_t *body = drain ? json_pack("{s:s,s:{s:s,s:b}}", "action", action, "value", "sid", node, "drain", 1)
	                     : json_pack("{s:s,s:{s:s}}", "action", action, "value", "sid", node);
	char *json = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!json) {
		cli_err("%s: cannot encode the request", action);
		return CLI_EXIT_ERR;
	}
	struct cli_req rq = CLI_REQ_INIT("PUT", "/v1/cluster");
	rq.json = json;
	struct cli_resp rs = {0};
	buf_t what = BUF_INIT;
	buf_addf(&what, "%s %s", action, node);
	int rc = CLI_EXIT_ERR;
	if (cli_http(c, &rq, &rs) != AIS_OK || cli_http_check(&rs, what.ptr) != AIS_OK)
		goto out;
	json_t *smap = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
	const char *state = NULL;
	json_t *nodes = json_object_get(smap, "nodes");
	for (size_t i = 0; i < json_array_size(nodes); i++) {
		json_t *nd = json_array_get(nodes, i);
		const char *id = json_string_value(json_object_get(nd, "id"));
		if (id && !strcmp(id, node))
			state = json_string_value(json_object_get(nd, "state"));
	}
	json_t *ver = json_object_get(smap, "version");
	if (c->json) {
		json_t *j = json_pack("{s:s,s:s,s:s?,s:I}", "node", node, "action", action, "state",
				      state ? state : (json_is_array(nodes) ? "removed" : NULL),
				      "cmap_version",
				      (json_int_t)(json_is_integer(ver) ? json_integer_value(ver) : 0));
		cli_print_json(j);
	} else if (!json_is_array(nodes))
		printf("%s %s: done\n", action, node);
	else if (state)
		printf("node %s: %s (cluster map version %" JSON_INTEGER_FORMAT ")\n", node, state,
		       json_is_integer(ver) ? json_integer_value(ver) : 0);
	else
		printf("node %s: decommissioned, no longer in the cluster map (version %" JSON_INTEGER_FORMAT ")\n",
		       node, json_is_integer(ver) ? json_integer_value(ver) : 0);
	json_decref(smap);
	rc = CLI_EXIT_OK;
out:
	cli_resp_free(&rs);
	buf_free(&what);
	free(json);
	return rc;
}

int cli_node_maintenance(struct cli *c, const struct cli_args *a)
{
	const char *op = a->pos[0];
	if (strcmp(op, "start") && strcmp(op, "stop"))
		return cli_usage_error(a->cmd, "want start or stop, not '%s'", op);
	bool drain = cli_opt(a, "drain") != NULL;
	if (drain && strcmp(op, "start"))
		return cli_usage_error(a->cmd, "--drain goes with start");
	return node_action(c, !strcmp(op, "start") ? "start-maintenance" : "stop-maintenance", a->pos[1], drain);
}

int cli_node_decommission(struct cli *c, const struct cli_args *a)
{
	const char *node = a->pos[0];
	buf_t what = BUF_INIT;
	buf_addf(&what, "decommission %s", node);
	int rc = cli_confirm(a, what.ptr,
			     "Decommission node %s? Its objects move to other targets, then it leaves the\n"
			     "cluster for good and will not rejoin by itself.",
			     node);
	buf_free(&what);
	if (rc != CLI_EXIT_OK)
		return rc;
	return node_action(c, "decommission-node", node, false);
}
