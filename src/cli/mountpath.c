/*
 * mountpath.c - aisctl's mountpath commands (AIStore's "storage mountpath"):
 *   storage mountpath show [NODE]          every target's mountpaths, or NODE's
 *   storage mountpath attach NODE PATH     PUT /v1/daemon/mountpaths attach-mp
 *   storage mountpath detach NODE PATH     DELETE /v1/daemon/mountpaths detach-mp
 * Requests go to the endpoint with ?node=NODE; a gateway answers 307 to
 * that target (cli_http follows it with the body), a standalone target
 * answers itself. Each answer is the target's list and its resilver job;
 * --json prints it ({"NODE": answer, ...} for show).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "aisd/status.h"
#include "cli.h"
#include "aisd/banned.h"

/* One request to NODE's mountpaths; the parsed answer, or NULL after printing why. */
static json_t *mp_request(struct cli *c, const char *method, const char *node, const char *json)
{
	buf_t path = BUF_INIT, what = BUF_INIT;
	buf_addstr(&path, "/v1/daemon/mountpaths");
	if (node) {
		buf_addstr(&path, "?node=");
		buf_add_pct(&path, sv_from(node), false);
	}
	buf_addf(&what, "%s mountpaths", node ? node : c->endpoint);
	struct cli_req rq = CLI_REQ_INIT(method, path.ptr);
	rq.json = json;
	struct cli_resp rs = {0};
	json_t *doc = NULL;
	if (cli_http(c, &rq, &rs) == AIS_OK && cli_http_check(&rs, what.ptr) == AIS_OK) {
		doc = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
		if (!json_is_object(doc)) {
			cli_err("%s: the answer is not a JSON object", what.ptr);
			json_decref(doc);
			doc = NULL;
		}
	}
	cli_resp_free(&rs);
	buf_free(&path);
	buf_free(&what);
	return doc;
}

static uint64_t num(json_t *o, const char *k)
{
	return (uint64_t)json_integer_value(json_object_get(o, k));
}

static void print_node(const char *node, json_t *doc)
{
	json_t *mps = json_object_get(doc, "mountpaths"), *res = json_object_get(doc, "resilver");
	char b[32], cap[32], fr[32];
	for (size_t i = 0; i < json_array_size(mps); i++) {
		json_t *m = json_array_get(mps, i);
		cli_human_size(num(m, "bytes"), b, sizeof(b));
		cli_human_size(num(m, "capacity"), cap, sizeof(cap));
		cli_human_size(num(m, "free"), fr, sizeof(fr));
		printf("%-24s %-40s %-10s %10llu %10s %10s %10s\n", node,
		       json_string_value(json_object_get(m, "path")),
		       json_string_value(json_object_get(m, "state")), (unsigned long long)num(m, "objects"), b, cap,
		       fr);
		const char *fault = json_string_value(json_object_get(m, "fault"));
		if (fault)
			printf("%-24s   %s failed: %s\n", node, json_string_value(json_object_get(m, "path")), fault);
	}
	cli_human_size(num(res, "moved_bytes"), b, sizeof(b));
	printf("%-24s resilver: %s, %llu/%llu objects looked at, %llu moved (%s), %llu errors\n", node,
	       json_string_value(json_object_get(res, "state")), (unsigned long long)num(res, "walked"),
	       (unsigned long long)num(res, "total"), (unsigned long long)num(res, "moved"), b,
	       (unsigned long long)num(res, "errors"));
}

/* The target ids of the endpoint's cluster map into *ids (json array);
 * AIS_DONE when the endpoint is a standalone target. */
static int targets(struct cli *c, json_t **ids)
{
	struct cli_req rq = CLI_REQ_INIT("GET", "/v1/cluster?what=smap");
	struct cli_resp rs = {0};
	int rc = AIS_ERR;
	*ids = json_array();
	if (cli_http(c, &rq, &rs) != AIS_OK)
		goto out;
	if (rs.status == 409) {
		rc = AIS_DONE;
		goto out;
	}
	if (cli_http_check(&rs, "cluster map") != AIS_OK)
		goto out;
	json_t *smap = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
	json_t *nodes = json_object_get(smap, "nodes");
	for (size_t i = 0; i < json_array_size(nodes); i++) {
		json_t *nd = json_array_get(nodes, i);
		const char *role = json_string_value(json_object_get(nd, "role"));
		if (role && !strcmp(role, "target"))
			json_array_append(*ids, json_object_get(nd, "id"));
	}
	json_decref(smap);
	rc = AIS_OK;
out:
	cli_resp_free(&rs);
	return rc;
}

int cli_mountpath_show(struct cli *c, const struct cli_args *a)
{
	json_t *ids = NULL, *all = json_object();
	int rc = CLI_EXIT_OK;
	if (a->npos) {
		ids = json_array();
		json_array_append_new(ids, json_string(a->pos[0]));
	} else {
		int t = targets(c, &ids);
		if (t == AIS_ERR) {
			json_decref(ids);
			json_decref(all);
			return CLI_EXIT_ERR;
		}
		if (t == AIS_DONE) /* a standalone target: itself */
			json_array_append_new(ids, json_string(""));
	}
	if (!c->json)
		printf("%-24s %-40s %-10s %10s %10s %10s %10s\n", "TARGET", "MOUNTPATH", "STATE", "OBJECTS", "BYTES",
		       "CAPACITY", "FREE");
	for (size_t i = 0; i < json_array_size(ids); i++) {
		const char *id = json_string_value(json_array_get(ids, i));
		json_t *doc = mp_request(c, "GET", id[0] ? id : NULL, NULL);
		if (!doc) {
			rc = CLI_EXIT_ERR;
			continue;
		}
		if (c->json)
			json_object_set(all, id[0] ? id : c->endpoint, doc);
		else
			print_node(id[0] ? id : c->endpoint, doc);
		json_decref(doc);
	}
	if (c->json)
		cli_print_json(all);
	else
		json_decref(all);
	json_decref(ids);
	return rc;
}

static int change(struct cli *c, const struct cli_args *a, bool attach)
{
	const char *node = a->pos[0], *path = a->pos[1];
	if (path[0] != '/')
		return cli_usage_error(a->cmd, "PATH must be absolute (the target's file system), not '%s'", path);
	json_t *body = json_pack("{s:s,s:s}", "action", attach ? "attach-mp" : "detach-mp", "value", path);
	char *json = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	json_t *doc = mp_request(c, attach ? "PUT" : "DELETE", node, json);
	free(json);
	if (!doc)
		return CLI_EXIT_ERR;
	if (c->json) {
		cli_print_json(doc);
	} else {
		printf("%s: mountpath %s %s; the resilver moves its objects (aisctl job wait resilver)\n", node, path,
		       attach ? "attached" : "detaching");
		json_decref(doc);
	}
	return CLI_EXIT_OK;
}

int cli_mountpath_attach(struct cli *c, const struct cli_args *a)
{
	return change(c, a, true);
}

int cli_mountpath_detach(struct cli *c, const struct cli_args *a)
{
	return change(c, a, false);
}
