/*
 * config.c - changing a node's configuration while it runs:
 *   PUT /v1/daemon  {"action":"set-config","value":{"log.level":"debug",..}}
 *   PUT /v1/cluster (same body) on the primary: every node of the map
 *
 * Only the keys of the table below change at run time; any other key,
 * a bad value or a bad body is a 400 and nothing is changed (all values are
 * checked before any is applied). Changes live until the node stops: they
 * are not written back to the config file.
 * The cluster-wide form asks every node in parallel (one thread each, from
 * an I/O pool thread, 2 s timeout) and answers 200 with every node's
 * status, or 502 when any node did not take the change (the body says
 * which).
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/cluster.h"
#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define CONFIG_TIMEOUT_MS 2000

static void cfg_apply(http_req_t *req, const cluster_cfg_change_t *ch, size_t n)
{
	http_server_t *s = http_req_server(req);
	uint64_t rate, burst;
	http_server_rate_limit(s, &rate, &burst);
	for (size_t i = 0; i < n; i++) {
		uint64_t x = 0;
		enum log_level lv = LOG_INFO;
		switch (ch[i].key) {
		case 0:
			log_parse_level(ch[i].value, &lv);
			log_set_level(lv);
			break;
		case 1: log_access_set(!strcmp(ch[i].value, "on")); break;
		case 2: num_parse_u64(ch[i].value, strlen(ch[i].value), 0, UINT32_MAX, &rate); break;
		case 3:
			num_parse_u64(ch[i].value, strlen(ch[i].value), 0, UINT32_MAX, &x);
			burst = x;
			break;
		}
		log_info("set-config: %s = %s", cluster_cfg_key(ch[i].key), ch[i].value);
	}
	http_server_set_rate_limit(s, rate, burst);
}

int cluster_daemon_put(http_req_t *req)
{
	cluster_cfg_change_t ch[CLUSTER_CFG_MAX];
	size_t n;
	buf_t err = BUF_INIT;

	if (req->subpath.len) {
		http_resp_error(req, 404, "no such resource: PUT /v1/daemon takes the action in the body");
		return AIS_OK;
	}
	if (cluster_cfg_parse(req->body.ptr, req->body.len, ch, &n, &err) != AIS_OK) {
		http_resp_error(req, 400, "%s", err.ptr);
		buf_free(&err);
		return AIS_OK;
	}
	cfg_apply(req, ch, n);
	http_resp_header(req, "Content-Type", "application/json");
	static const char ok[] = "{\"status\":\"ok\"}";
	http_resp_send(req, ok, sizeof(ok) - 1);
	return AIS_OK;
}

/* --- every node, from the primary ----------------------------------------- */

struct cfg_all {
	cluster_call_t *calls;
	char (*ids)[CMAP_ID_MAX + 1]; /* calls[i] asks node ids[i] */
	size_t n;
	json_t *doc;
	bool failed;
};

static void cfg_all_cleanup(void *arg)
{
	struct cfg_all *c = arg;
	for (size_t i = 0; i < c->n; i++)
		buf_free(&c->calls[i].resp);
	free(c->calls);
	free(c->ids);
	json_decref(c->doc);
}

static void cfg_all_work(http_req_t *req)
{
	struct cfg_all *c = req->state;
	cluster_call_all(c->calls, c->n);
	json_t *nodes = json_object();
	for (size_t i = 0; i < c->n; i++) {
		cluster_call_t *a = &c->calls[i];
		json_t *r = json_pack("{s:i}", "status", a->status);
		if (a->status != 200) {
			c->failed = true;
			json_object_set_new(r, "error", json_stringn(a->resp.ptr ? a->resp.ptr : "no answer",
								     a->resp.ptr ? MIN(a->resp.len, 512) : 9));
		}
		json_object_set_new(nodes, c->ids[i], r);
	}
	c->doc = json_pack("{s:o}", "nodes", nodes);
}

static void cfg_all_done(http_req_t *req)
{
	struct cfg_all *c = req->state;
	if (c->failed)
		http_resp_status(req, 502);
	cluster_resp_json(req, c->doc);
}

void cluster_config_all(http_req_t *req, cluster_t *cl)
{
	cluster_cfg_change_t ch[CLUSTER_CFG_MAX];
	size_t n;
	buf_t err = BUF_INIT;
	const cmap_t *m;
	const bmd_t *b;

	if (cluster_cfg_parse(req->body.ptr, req->body.len, ch, &n, &err) != AIS_OK) {
		http_resp_error(req, 400, "%s", err.ptr);
		buf_free(&err);
		return;
	}
	struct cfg_all *c = arena_zalloc(req->arena, sizeof(*c));
	cluster_read_lock(cl, &m, &b);
	c->n = m ? cmap_size(m) : 0;
	c->calls = xcalloc(c->n ? c->n : 1, sizeof(*c->calls));
	c->ids = xcalloc(c->n ? c->n : 1, sizeof(*c->ids));
	for (size_t i = 0; i < c->n; i++) {
		const cmap_node_t *nd = cmap_node(m, i);
		snprintf(c->ids[i], sizeof(c->ids[i]), "%s", nd->id);
		snprintf(c->calls[i].url, sizeof(c->calls[i].url), "%s/v1/daemon",
			 nd->intra_url[0] ? nd->intra_url : nd->pub_url);
		c->calls[i].method = "PUT";
		c->calls[i].body = &req->body;
		c->calls[i].timeout_ms = CONFIG_TIMEOUT_MS;
	}
	cluster_read_unlock(cl);
	req->state = c;
	arena_cleanup_add(req->arena, cfg_all_cleanup, c);
	http_offload_net(req, cfg_all_work, cfg_all_done);
}
