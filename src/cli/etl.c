/*
 * etl.c - aisctl's transformers: "etl init NAME --cmd CMD" (PUT
 * /v1/etl/NAME, which the gateway applies on every node), "etl ls",
 * "etl show NAME", "etl stop NAME", "etl start NAME", "etl rm NAME" and
 * "etl logs NAME [NODE]" (every target's worker logs, or one node's).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/conf.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

int cli_etl_init(struct cli *c, const struct cli_args *a)
{
	const char *name = a->pos[0], *cmd = cli_opt(a, "cmd"), *comm = cli_opt(a, "comm");
	const char *wk = cli_opt(a, "workers"), *to = cli_opt(a, "timeout"), *env = cli_opt(a, "env");
	uint64_t workers = 1, ms = 30000;
	if (!cmd || !*cmd)
		return cli_usage_error(a->cmd, "--cmd 'COMMAND ...' is required");
	if (comm && strcmp(comm, "stdio") && strcmp(comm, "http"))
		return cli_usage_error(a->cmd, "bad --comm '%s': stdio or http", comm);
	if (wk && num_parse_u64(wk, strlen(wk), 1, 16, &workers) != AIS_OK)
		return cli_usage_error(a->cmd, "bad --workers '%s': 1 to 16", wk);
	if (to && (conf_parse_ms(to, &ms) != AIS_OK || ms == 0 || ms > 3600000))
		return cli_usage_error(a->cmd, "bad --timeout '%s': a duration such as 30s (at most 1h)", to);
	json_t *envs = json_array();
	if (env)
		json_array_append_new(envs, json_string(env));
	for (int i = 1; i < a->npos; i++)
		json_array_append_new(envs, json_string(a->pos[i]));
	for (size_t i = 0; i < json_array_size(envs); i++) {
		const char *e = json_string_value(json_array_get(envs, i));
		if (!strchr(e, '=') || *e == '=') {
			json_decref(envs);
			return cli_usage_error(a->cmd, "bad environment entry '%s': want K=V", e);
		}
	}
	json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:b,s:o}", "cmd", cmd, "comm", comm ? comm : "stdio", "workers", (json_int_t)workers,
			      "timeout_ms", (json_int_t)ms, "net", cli_opt(a, "net") != NULL, "env", envs);
	char *js = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	buf_t what = BUF_INIT;
	buf_addf(&what, "register transformer %s", name);
	int rc = cli_json_call(c, "PUT", "/v1/etl/", name, js, what.ptr, NULL);
	if (rc == AIS_OK)
		printf(c->json ? "{\"registered\":\"%s\"}\n" : "registered transformer %s on every node\n", name);
	free(js);
	buf_free(&what);
	return rc == AIS_OK ? CLI_EXIT_OK : CLI_EXIT_ERR;
}

static int simple(struct cli *c, const struct cli_args *a, const char *method, const char *action, const char *done)
{
	buf_t what = BUF_INIT, path = BUF_INIT;
	buf_addf(&what, "%s transformer %s", action, a->pos[0]);
	buf_addf(&path, "/v1/etl/%s", a->pos[0]);
	if (strcmp(method, "DELETE"))
		buf_addf(&path, "?action=%s", action);
	struct cli_req rq = CLI_REQ_INIT(method, path.ptr);
	struct cli_resp rs = {0};
	int rc = cli_http(c, &rq, &rs);
	if (rc == AIS_OK)
		rc = cli_http_check(&rs, what.ptr);
	if (rc == AIS_OK)
		printf(c->json ? "{\"%s\":\"%s\"}\n" : "%s transformer %s\n", done, a->pos[0]);
	cli_resp_free(&rs);
	buf_free(&what);
	buf_free(&path);
	return rc == AIS_OK ? CLI_EXIT_OK : CLI_EXIT_ERR;
}

int cli_etl_stop(struct cli *c, const struct cli_args *a) { return simple(c, a, "PUT", "stop", "stopped"); }
int cli_etl_start(struct cli *c, const struct cli_args *a) { return simple(c, a, "PUT", "start", "started"); }
int cli_etl_rm(struct cli *c, const struct cli_args *a) { return simple(c, a, "DELETE", "remove", "removed"); }

/* GET path into *doc. */
static int get_json(struct cli *c, const char *path, const char *what, json_t **doc)
{
	struct cli_req rq = CLI_REQ_INIT("GET", path);
	struct cli_resp rs = {0};
	int rc = cli_http(c, &rq, &rs);
	if (rc == AIS_OK)
		rc = cli_http_check(&rs, what);
	*doc = rc == AIS_OK ? json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL) : NULL;
	if (rc == AIS_OK && !*doc) {
		fprintf(stderr, "aisctl: %s: the answer is not JSON\n", what);
		rc = AIS_ERR;
	}
	cli_resp_free(&rs);
	return rc;
}

/* etl ls (name NULL) and etl show NAME. */
static int list(struct cli *c, const char *name)
{
	json_t *doc, *e;
	size_t i;
	bool found = false;
	if (get_json(c, "/v1/etl", "list transformers", &doc) != AIS_OK)
		return CLI_EXIT_ERR;
	json_t *arr = json_object_get(doc, "etl"); /* {"etl":[...],"isolation":B} (docs/api.md) */
	if (!name && !c->json)
		printf("%-20s %-7s %-5s %-8s %s\n", "NAME", "STATE", "WORK", "TIMEOUT", "COMMAND");
	json_array_foreach(arr, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));
		if (name && strcmp(n, name))
			continue;
		found = true;
		if (c->json) {
			cli_print_json(json_incref(e));
		} else if (!name) {
			printf("%-20s %-7s %-5d %-7llds %s\n", n,
			       json_is_true(json_object_get(e, "stopped")) ? "stopped" : "ready",
			       (int)json_integer_value(json_object_get(e, "workers")),
			       (long long)json_integer_value(json_object_get(e, "timeout_ms")) / 1000,
			       json_string_value(json_object_get(e, "cmd")));
		} else {
			char *s = json_dumps(e, JSON_INDENT(2));
			printf("%s\n", s);
			free(s);
		}
	}
	json_decref(doc);
	if (name && !found) {
		fprintf(stderr, "aisctl: no transformer %s\n", name);
		return CLI_EXIT_ERR;
	}
	return CLI_EXIT_OK;
}

int cli_etl_ls(struct cli *c, const struct cli_args *a)
{
	(void)a;
	return list(c, NULL);
}

int cli_etl_show(struct cli *c, const struct cli_args *a) { return list(c, a->pos[0]); }

int cli_etl_logs(struct cli *c, const struct cli_args *a)
{
	buf_t p = BUF_INIT;
	json_t *doc, *v, *w;
	const char *node = a->npos > 1 ? a->pos[1] : NULL, *id;
	size_t i;
	bool any = false;
	buf_addf(&p, "/v1/etl?what=logs&name=%s", a->pos[0]);
	int rc = get_json(c, p.ptr, "read transformer logs", &doc);
	buf_free(&p);
	if (rc != AIS_OK)
		return CLI_EXIT_ERR;
	json_object_foreach(doc, id, v) {
		if (node && strcmp(node, id))
			continue;
		any = true;
		if (json_object_get(v, "error"))
			printf("== %s: %s\n", id, json_string_value(json_object_get(v, "error")));
		json_array_foreach(json_object_get(v, "workers"), i, w) {
			printf("== %s worker %d\n", id, (int)json_integer_value(json_object_get(w, "worker")));
			fputs(json_string_value(json_object_get(w, "log")), stdout);
		}
	}
	json_decref(doc);
	if (node && !any) {
		fprintf(stderr, "aisctl: no target %s\n", node);
		return CLI_EXIT_ERR;
	}
	return CLI_EXIT_OK;
}
