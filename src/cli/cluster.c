/*
 * cluster.c - "aisctl cluster show": the cluster map of the endpoint (a
 * gateway, or a target in a cluster) from GET /v1/cluster?what=smap, with
 * every node's GET /v1/health checked and the endpoint's GET
 * /v1/cluster?what=stats asked, all in parallel (one curl multi handle,
 * CLI_HEALTH_TIMEOUT_MS per node), printed as a table (role, id, URL,
 * state, uptime, objects, bytes, disk used/total, health) followed by one
 * "warning:" line per node that is not healthy or, with --json, as the map
 * with "health" (and "stats", when the node answered) added to each node.
 *
 * Health of a node: "ok" (200 and {"status":"ok"}), the status it reports
 * when that is not "ok", "HTTP N" for another answer, "unreachable" when no
 * answer came (refused, timed out, ...). A standalone target answers the map
 * request with 409: one line on stderr and exit 1. The command exits 0 when
 * the map was shown, whatever the nodes' health.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

#define CLI_HEALTH_TIMEOUT_MS 2000L
#define HEALTH_BODY_MAX       4096
#define STATS_BODY_MAX        (8 << 20)
#define HEALTH_PARALLEL       64L

struct probe {
	json_t *node; /* the node's object in the map (borrowed); NULL: the stats request */
	CURL *h;
	buf_t body;
	char err[CURL_ERROR_SIZE];
	char health[64];              /* "ok", "unreachable", "HTTP 503", ... */
	char detail[CURL_ERROR_SIZE]; /* why unreachable, else "" */
};

static size_t on_health_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct probe *p = arg;
	size_t n = size * nmemb;
	size_t max = p->node ? HEALTH_BODY_MAX : STATS_BODY_MAX;
	if (p->body.len < max)
		buf_add(&p->body, data, MIN(n, max - p->body.len));
	return n;
}

static const char *node_str(json_t *node, const char *key)
{
	const char *s = json_string_value(json_object_get(node, key));
	return s ? s : "";
}

/* Sets p->health from a finished transfer. */
static void probe_result(struct probe *p, CURLcode cc)
{
	long code = 0;
	if (cc != CURLE_OK) {
		snprintf(p->health, sizeof(p->health), "unreachable");
		snprintf(p->detail, sizeof(p->detail), "%s", p->err[0] ? p->err : curl_easy_strerror(cc));
		return;
	}
	curl_easy_getinfo(p->h, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200) {
		snprintf(p->health, sizeof(p->health), "HTTP %ld", code);
		return;
	}
	json_t *j = json_loadb(p->body.ptr ? p->body.ptr : "", p->body.len, 0, NULL);
	const char *st = json_string_value(json_object_get(j, "status"));
	if (!st)
		snprintf(p->health, sizeof(p->health), "ok?"); /* 200 without a status */
	else
		snprintf(p->health, sizeof(p->health), "%s", st);
	json_decref(j);
}

/*
 * Checks every probe's node in parallel, and asks the endpoint for the
 * cluster's stats with pr[n] (whose node is NULL). Returns AIS_OK, or
 * AIS_ERR when libcurl itself failed (then every probe not done reads
 * "unknown").
 */
static int probe_all(struct cli *c, struct probe *pr, size_t n)
{
	CURLM *m = curl_multi_init();
	if (!m)
		return AIS_ERR;
	curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, HEALTH_PARALLEL);
	long tmo = CLI_HEALTH_TIMEOUT_MS;
	if (c->timeout_s && c->timeout_s * 1000 < tmo)
		tmo = c->timeout_s * 1000;

	for (size_t i = 0; i <= n; i++) {
		struct probe *p = &pr[i];
		snprintf(p->health, sizeof(p->health), "unknown");
		p->h = curl_easy_init();
		if (!p->h)
			continue;
		buf_t url = BUF_INIT;
		const char *pub = p->node ? node_str(p->node, "public_url") : c->endpoint;
		size_t plen = strlen(pub);
		while (plen && pub[plen - 1] == '/')
			plen--;
		buf_add(&url, pub, plen);
		buf_addstr(&url, p->node ? "/v1/health" : "/v1/cluster?what=stats");
		curl_easy_setopt(p->h, CURLOPT_URL, url.ptr);
		cli_tls(c, p->h);
		curl_easy_setopt(p->h, CURLOPT_ERRORBUFFER, p->err);
		curl_easy_setopt(p->h, CURLOPT_USERAGENT, "aisctl/" CLI_VERSION);
		curl_easy_setopt(p->h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(p->h, CURLOPT_TIMEOUT_MS, tmo);
		curl_easy_setopt(p->h, CURLOPT_CONNECTTIMEOUT_MS, tmo);
		curl_easy_setopt(p->h, CURLOPT_WRITEFUNCTION, on_health_body);
		curl_easy_setopt(p->h, CURLOPT_WRITEDATA, p);
		curl_easy_setopt(p->h, CURLOPT_PRIVATE, p);
		if (c->verbose >= 2)
			curl_easy_setopt(p->h, CURLOPT_VERBOSE, 1L);
		if (c->verbose)
			fprintf(stderr, "> GET %s\n", url.ptr);
		if (!p->node) /* the endpoint asks every node with a 2 s timeout */
			curl_easy_setopt(p->h, CURLOPT_TIMEOUT_MS, tmo + CLI_HEALTH_TIMEOUT_MS);
		buf_free(&url);
		if (curl_multi_add_handle(m, p->h) != CURLM_OK) {
			curl_easy_cleanup(p->h);
			p->h = NULL;
		}
	}

	int rc = AIS_OK;
	int running = 1;
	while (running) {
		if (curl_multi_perform(m, &running) != CURLM_OK) {
			rc = AIS_ERR;
			break;
		}
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct probe *p = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&p);
			if (p && p->node) {
				probe_result(p, msg->data.result);
				if (c->verbose)
					fprintf(stderr, "< %s/v1/health: %s%s%s\n",
					        node_str(p->node, "public_url"), p->health,
					        p->detail[0] ? ": " : "", p->detail);
			} else if (p) {
				long code = 0;
				curl_easy_getinfo(p->h, CURLINFO_RESPONSE_CODE, &code);
				snprintf(p->health, sizeof(p->health), "%s",
					 msg->data.result == CURLE_OK && code == 200 ? "ok" : "failed");
			}
		}
		if (running && curl_multi_poll(m, NULL, 0, 200, NULL) != CURLM_OK) {
			rc = AIS_ERR;
			break;
		}
	}
	for (size_t i = 0; i <= n; i++) {
		if (!pr[i].h)
			continue;
		curl_multi_remove_handle(m, pr[i].h);
		curl_easy_cleanup(pr[i].h);
		pr[i].h = NULL;
	}
	curl_multi_cleanup(m);
	return rc;
}

/* Gateways first, then targets; by id within a role. */
static int node_cmp(const void *a, const void *b)
{
	const struct probe *x = a, *y = b;
	int rx = strcmp(node_str(x->node, "role"), "gateway") != 0;
	int ry = strcmp(node_str(y->node, "role"), "gateway") != 0;
	if (rx != ry)
		return rx - ry;
	return strcmp(node_str(x->node, "id"), node_str(y->node, "id"));
}

static int width(int w, const char *s)
{
	int n = (int)strlen(s);
	return n > w ? n : w;
}

/* The stats of node id in the cluster's stats document, or NULL. */
static json_t *stats_of(json_t *stats, const char *id)
{
	return json_object_get(json_object_get(stats, "nodes"), id);
}

static void print_table(json_t *smap, json_t *stats, struct probe *pr, size_t n)
{
	const char *primary = json_string_value(json_object_get(smap, "primary"));
	json_t *ver = json_object_get(smap, "version");
	size_t ngw = 0, ntg = 0;
	int wr = 4, wi = 2, wu = 3, ws = 5, wt = 6, wo = 7, wb = 4, wd = 4;
	struct cli_node_cells *cells = xcalloc(n ? n : 1, sizeof(*cells));

	qsort(pr, n, sizeof(*pr), node_cmp);
	for (size_t i = 0; i < n; i++) {
		json_t *nd = pr[i].node;
		const char *role = node_str(nd, "role");
		if (!strcmp(role, "gateway"))
			ngw++;
		else if (!strcmp(role, "target"))
			ntg++;
		cli_node_cells(stats_of(stats, node_str(nd, "id")), &cells[i]);
		wr = width(wr, role);
		wi = width(wi, node_str(nd, "id"));
		wu = width(wu, node_str(nd, "public_url"));
		ws = width(ws, node_str(nd, "state"));
		wt = width(wt, cells[i].uptime);
		wo = width(wo, cells[i].objects);
		wb = width(wb, cells[i].bytes);
		wd = width(wd, cells[i].disk);
	}
	wi += 1; /* room for the primary's '*' */

	printf("cluster %s, map version %" JSON_INTEGER_FORMAT ", %zu gateway%s, %zu target%s\n",
	       node_str(smap, "uuid"), json_is_integer(ver) ? json_integer_value(ver) : 0, ngw,
	       ngw == 1 ? "" : "s", ntg, ntg == 1 ? "" : "s");
	printf("%-*s  %-*s  %-*s  %-*s  %*s  %*s  %*s  %-*s  %s\n", wr, "ROLE", wi, "ID", wu, "URL",
	       ws, "STATE", wt, "UPTIME", wo, "OBJECTS", wb, "SIZE", wd, "DISK", "HEALTH");
	for (size_t i = 0; i < n; i++) {
		json_t *nd = pr[i].node;
		const char *id = node_str(nd, "id");
		bool prim = primary && !strcmp(primary, id);
		printf("%-*s  %s%-*s  %-*s  %-*s  %*s  %*s  %*s  %-*s  %s\n", wr, node_str(nd, "role"),
		       id, wi - (int)strlen(id), prim ? "*" : "", wu, node_str(nd, "public_url"), ws,
		       node_str(nd, "state"), wt, cells[i].uptime, wo, cells[i].objects, wb,
		       cells[i].bytes, wd, cells[i].disk, pr[i].health);
	}
	printf("(* primary gateway)\n");
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(pr[i].health, "ok"))
			continue;
		printf("warning: %s %s is %s%s%s\n", node_str(pr[i].node, "role"),
		       node_str(pr[i].node, "id"), pr[i].health, pr[i].detail[0] ? ": " : "",
		       pr[i].detail);
	}
	if (primary && *primary) {
		bool found = false;
		for (size_t i = 0; i < n; i++)
			found = found || !strcmp(node_str(pr[i].node, "id"), primary);
		if (!found)
			printf("warning: the primary %s is not among the nodes\n", primary);
	}
	if (!stats)
		printf("warning: the endpoint sent no statistics (uptime, objects and capacity unknown)\n");
	free(cells);
}

int cli_cluster_show(struct cli *c, const struct cli_args *a)
{
	bool as_json = c->json;
	struct cli_req rq = CLI_REQ_INIT("GET", "/v1/cluster?what=smap");
	struct cli_resp rs = {0};
	int rc = CLI_EXIT_ERR;

	(void)a;
	if (cli_http(c, &rq, &rs) != AIS_OK) {
		cli_resp_free(&rs);
		return CLI_EXIT_ERR;
	}
	if (rs.status == 409) {
		cli_err("%s is not in a cluster (a standalone target): no cluster map to show", c->endpoint);
		cli_resp_free(&rs);
		return CLI_EXIT_ERR;
	}
	if (cli_http_check(&rs, "cluster map") != AIS_OK) {
		cli_resp_free(&rs);
		return CLI_EXIT_ERR;
	}
	json_error_t jerr;
	json_t *smap = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, &jerr);
	cli_resp_free(&rs);
	json_t *nodes = json_object_get(smap, "nodes");
	if (!json_is_object(smap) || !json_is_array(nodes)) {
		cli_err("cluster map: the server's answer is not a map with a nodes array%s%s",
		        smap ? "" : ": ", smap ? "" : jerr.text);
		json_decref(smap);
		return CLI_EXIT_ERR;
	}

	size_t n = json_array_size(nodes);
	struct probe *pr = xcalloc(n + 1, sizeof(*pr));
	json_t *stats = NULL;
	for (size_t i = 0; i < n; i++) {
		pr[i].node = json_array_get(nodes, i);
		if (!json_is_object(pr[i].node) || !json_is_string(json_object_get(pr[i].node, "id"))) {
			cli_err("cluster map: node %zu is not an object with an id", i);
			goto out;
		}
	}
	if (probe_all(c, pr, n) != AIS_OK)
		cli_err("checking the nodes' health: libcurl failed; some are shown as unknown");
	if (!strcmp(pr[n].health, "ok"))
		stats = json_loadb(pr[n].body.ptr ? pr[n].body.ptr : "", pr[n].body.len, 0, NULL);
	if (!json_is_object(stats)) {
		json_decref(stats);
		stats = NULL;
	}

	if (as_json) {
		for (size_t i = 0; i < n; i++) {
			json_object_set_new(pr[i].node, "health", json_string(pr[i].health));
			if (pr[i].detail[0])
				json_object_set_new(pr[i].node, "health_detail", json_string(pr[i].detail));
			json_t *st = stats_of(stats, node_str(pr[i].node, "id"));
			if (st)
				json_object_set(pr[i].node, "stats", st);
		}
		cli_print_json(json_incref(smap));
	} else {
		print_table(smap, stats, pr, n);
	}
	rc = CLI_EXIT_OK;
out:
	for (size_t i = 0; i <= n; i++)
		buf_free(&pr[i].body);
	free(pr);
	json_decref(stats);
	json_decref(smap);
	return rc;
}

/*
 * "aisctl cluster primary NODE": PUT /v1/cluster {"action":"set-primary",
 * "value":{"sid":NODE}} (a non-primary endpoint redirects to the primary,
 * followed with the body kept). Prints the primary and term of the map the
 * server answers with.
 */
int cli_cluster_primary(struct cli *c, const struct cli_args *a)
{
	const char *node = a->pos[0];
	json_t *body = json_pack("{s:s,s:{s:s}}", "action", "set-primary", "value", "sid", node);
	char *js = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!js) {
		cli_err("set-primary: cannot encode the request");
		return CLI_EXIT_ERR;
	}
	struct cli_req rq = CLI_REQ_INIT("PUT", "/v1/cluster");
	rq.json = js;
	struct cli_resp rs = {0};
	buf_t what = BUF_INIT;
	buf_addf(&what, "set-primary %s", node);
	int rc = CLI_EXIT_ERR;
	if (cli_http(c, &rq, &rs) != AIS_OK || cli_http_check(&rs, what.ptr) != AIS_OK)
		goto out;
	json_t *smap = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
	const char *prim = json_string_value(json_object_get(smap, "primary"));
	json_t *term = json_object_get(smap, "term"), *ver = json_object_get(smap, "version");
	if (c->json) {
		json_t *j = json_pack("{s:s?,s:I,s:I}", "primary", prim, "term",
				      (json_int_t)(json_is_integer(term) ? json_integer_value(term) : 0),
				      "cmap_version",
				      (json_int_t)(json_is_integer(ver) ? json_integer_value(ver) : 0));
		cli_print_json(j);
	} else if (prim)
		printf("primary: %s (term %" JSON_INTEGER_FORMAT ", cluster map version %" JSON_INTEGER_FORMAT ")\n",
		       prim, json_is_integer(term) ? json_integer_value(term) : 0,
		       json_is_integer(ver) ? json_integer_value(ver) : 0);
	else
		printf("set-primary %s: done\n", node);
	json_decref(smap);
	rc = CLI_EXIT_OK;
out:
	cli_resp_free(&rs);
	buf_free(&what);
	free(js);
	return rc;
}
