/*
 * stats.c - what a node and the cluster report about themselves:
 *   GET /v1/daemon?what=stats (default) | config | smap | bmd   on every node
 *   GET /v1/cluster?what=stats                          on a gateway
 *
 * A node's stats: {"id","role","version","uptime_s","cmap_term","cmap_version",
 * "bmd_version"} and, on a target, "objects","bytes" and "mountpaths":
 * [{"path","total_bytes","free_bytes","used_bytes","objects","bytes"}]
 * (object counts are the store's counters, store_stats; "counting": true
 * while the start-up count of a mountpath is still running).
 *
 * The cluster's: every node of the cmap asked GET /v1/daemon?what=stats in
 * parallel (cluster_call_all from an I/O pool thread, with a short
 * timeout); a node that does not answer appears with "error". Totals
 * sum what the targets report (capacity is summed per mountpath, so
 * mountpaths that share a file system are counted once each).
 * Both run on the I/O pool: statvfs and the fan-out block.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/store.h"
#include "aisd/util.h"
#include "aisd/version.h"
#include "runtime_int.h"
#include "aisd/banned.h"

#define STATS_TIMEOUT_MS 2000
#define STATS_MAX_MP 64


/* This node's stats as a new JSON object. */
static json_t *node_stats(node_base_t *nb)
{
	cluster_t *cl = nb->cl;
	json_t *o = json_object();
	uint64_t cv = 0, bv = 0, ct = 0;
	bool prim = false;

	if (cl) {
		const cmap_t *m;
		const bmd_t *b;
		json_object_set_new(o, "id", json_string(cluster_self(cl)->id));
		cluster_read_lock(cl, &m, &b);
		cv = m ? cmap_version(m) : 0;
		ct = m ? cmap_term(m) : 0;
		prim = m && !strcmp(cmap_primary(m), cluster_self(cl)->id);
		bv = b ? bmd_version(b) : 0;
		cluster_read_unlock(cl);
	} else {
		json_object_set_new(o, "id", json_null());
	}
	json_object_set_new(o, "role", json_string(nb->store ? "target" : "gateway"));
	json_object_set_new(o, "version", json_string(AISD_VERSION));
	json_object_set_new(o, "uptime_s", json_integer((json_int_t)time_uptime_s()));
	json_object_set_new(o, "cmap_term", json_integer((json_int_t)ct));
	json_object_set_new(o, "cmap_version", json_integer((json_int_t)cv));
	json_object_set_new(o, "bmd_version", json_integer((json_int_t)bv));
	if (cl && !nb->store) {
		json_object_set_new(o, "primary", json_boolean(prim));
		/* named primary by its map, and holding the lease (cluster.h 12) */
		json_object_set_new(o, "acting_primary", json_boolean(prim && cluster_acting_primary(cl)));
	}
	if (!nb->store)
		return o;

	store_mp_stats_t *st = xcalloc(STATS_MAX_MP, sizeof(*st));
	int n = 0;
	uint64_t objs = 0, bytes = 0;
	json_t *mps = json_array();
	if (store_stats(nb->store, st, STATS_MAX_MP, &n) != AIS_OK)
		json_object_set_new(o, "error", json_string("statvfs failed on a mountpath (see the log)"));
	for (int i = 0; i < n; i++) {
		json_t *mp = json_object();
		json_object_set_new(mp, "path", json_string(st[i].path));
		json_object_set_new(mp, "total_bytes", json_integer((json_int_t)st[i].total_bytes));
		json_object_set_new(mp, "free_bytes", json_integer((json_int_t)st[i].free_bytes));
		json_object_set_new(mp, "used_bytes",
				    json_integer((json_int_t)(st[i].total_bytes - MIN(st[i].free_bytes, st[i].total_bytes))));
		json_object_set_new(mp, "objects", json_integer((json_int_t)st[i].objects));
		json_object_set_new(mp, "bytes", json_integer((json_int_t)st[i].bytes));
		if (st[i].counting)
			json_object_set_new(mp, "counting", json_true());
		json_t *rc = json_object();
		json_object_set_new(rc, "walked", json_integer((json_int_t)st[i].rc_walked));
		json_object_set_new(rc, "hints", json_integer((json_int_t)st[i].rc_hints));
		json_object_set_new(rc, "removed", json_integer((json_int_t)st[i].rc_removed));
		json_object_set_new(rc, "done", json_boolean(!st[i].reconciling));
		json_object_set_new(mp, "reconcile", rc);
		json_array_append_new(mps, mp);
		objs += st[i].objects;
		bytes += st[i].bytes;
	}
	free(st);
	json_object_set_new(o, "objects", json_integer((json_int_t)objs));
	json_object_set_new(o, "bytes", json_integer((json_int_t)bytes));
	json_object_set_new(o, "mountpaths", mps);
	return o;
}

struct stats_job {
	json_t *doc;
};

static void stats_cleanup(void *arg) { json_decref(((struct stats_job *)arg)->doc); }

void cluster_resp_json(http_req_t *req, const json_t *doc)
{
	char *s = json_dumps(doc, JSON_COMPACT);
	buf_t out = BUF_INIT;
	buf_addstr(&out, s ? s : "{}");
	free(s);
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &out);
}

static void stats_done(http_req_t *req)
{
	cluster_resp_json(req, ((struct stats_job *)req->state)->doc);
}

static void daemon_work(http_req_t *req)
{
	struct stats_job *j = req->state;
	j->doc = node_stats(req->ctx);
}

/*
 * GET /v1/daemon?what=config: the node's running configuration
 * (conf_encode: secrets masked), with the keys that change at run time
 * (PUT set-config) as they are now.
 */
static void daemon_config(http_req_t *req)
{
	node_base_t *nb = req->ctx;
	static const char *const levels[] = {"debug", "info", "warn", "error"};
	buf_t out = BUF_INIT;
	conf_encode(nb->conf, &out);
	json_t *j = json_loadb(out.ptr, out.len, JSON_ALLOW_NUL, NULL);
	buf_free(&out);
	if (!json_is_object(j)) {
		json_decref(j);
		http_resp_error(req, 500, "cannot encode the configuration");
		return;
	}
	uint64_t rate, burst;
	http_server_rate_limit(http_req_server(req), &rate, &burst);
	unsigned lv = (unsigned)log_get_level();
	json_object_set_new(j, "log.level", json_string(lv < ARRAY_SIZE(levels) ? levels[lv] : "info"));
	json_object_set_new(j, "log.access", json_string(log_access_on() ? "on" : "off"));
	json_object_set_new(j, "net.rate_limit", json_integer((json_int_t)rate));
	json_object_set_new(j, "net.rate_burst", json_integer((json_int_t)burst));
	cluster_resp_json(req, j);
	json_decref(j);
}

int cluster_h_daemon(http_req_t *req)
{
	node_base_t *nb = req->ctx;
	sv_t what = {"stats", 5};

	if (req->method == HTTP_PUT)
		return cluster_daemon_put(req); /* config.c */
	if (req->subpath.len) {
		http_resp_error(req, 404, "no such resource");
		return AIS_OK;
	}
	http_query_get(req, "what", &what);
	if (sv_eqstr(what, "smap") || sv_eqstr(what, "cmap") || sv_eqstr(what, "bmd")) {
		buf_t out = BUF_INIT;
		if (nb->cl) {
			const cmap_t *m;
			const bmd_t *b;
			cluster_read_lock(nb->cl, &m, &b);
			if (what.ptr[0] != 'b' && m)
				cmap_encode(m, &out);
			else if (what.ptr[0] == 'b' && b)
				bmd_encode(b, &out);
			cluster_read_unlock(nb->cl);
		}
		if (!out.len) {
			buf_free(&out);
			http_resp_error(req, 404, "this node has no %s (not in a cluster?)",
					what.ptr[0] == 'b' ? "bmd" : "cluster map");
			return AIS_OK;
		}
		http_resp_header(req, "Content-Type", "application/json");
		http_resp_send_buf(req, &out);
		return AIS_OK;
	}
	if (sv_eqstr(what, "config")) {
		daemon_config(req);
		return AIS_OK;
	}
	if (!sv_eqstr(what, "stats")) {
		http_resp_error(req, 400, "what= must be stats, config, smap or bmd");
		return AIS_OK;
	}
	struct stats_job *j = arena_zalloc(req->arena, sizeof(*j));
	req->state = j;
	arena_cleanup_add(req->arena, stats_cleanup, j);
	http_offload(req, daemon_work, stats_done);
	return AIS_OK;
}

/* --- the cluster: fan-out ---------------------------------------------------- */

/* A node's answer as its stats, or {"error":..}. */
static json_t *peer_stats(const cluster_call_t *c)
{
	if (c->status == 200) {
		json_t *o = json_loadb(c->resp.ptr ? c->resp.ptr : "", c->resp.len, 0, NULL);
		if (json_is_object(o))
			return o;
		json_decref(o);
		return json_pack("{s:s}", "error", "invalid stats JSON");
	}
	if (!c->status)
		return json_pack("{s:s}", "error", c->resp.ptr ? c->resp.ptr : "no answer");
	char msg[160];
	snprintf(msg, sizeof(msg), "HTTP %d: %.100s", c->status, c->resp.ptr ? c->resp.ptr : "");
	return json_pack("{s:s}", "error", msg);
}

static void cluster_work(http_req_t *req)
{
	struct stats_job *j = req->state;
	node_base_t *nb = req->ctx;
	const cmap_t *m;
	size_t n = 0, nc = 0;
	uint64_t cv = 0;
	cmap_node_t *nodes = NULL;
	cluster_call_t *calls = NULL;
	size_t *call_of = NULL; /* nodes[i]'s call, or SIZE_MAX: this node */

	cluster_read_lock(nb->cl, &m, NULL);
	if (m) {
		cv = cmap_version(m);
		n = cmap_size(m);
		nodes = xcalloc(n ? n : 1, sizeof(*nodes));
		for (size_t i = 0; i < n; i++)
			nodes[i] = *cmap_node(m, i);
	}
	cluster_read_unlock(nb->cl);
	calls = xcalloc(n ? n : 1, sizeof(*calls));
	call_of = xcalloc(n ? n : 1, sizeof(*call_of));
	for (size_t i = 0; i < n; i++) {
		call_of[i] = SIZE_MAX;
		if (!strcmp(nodes[i].id, cluster_self(nb->cl)->id))
			continue;
		snprintf(calls[nc].url, sizeof(calls[nc].url), "%s/v1/daemon?what=stats",
			 nodes[i].intra_url[0] ? nodes[i].intra_url : nodes[i].pub_url);
		calls[nc].method = "GET";
		calls[nc].timeout_ms = STATS_TIMEOUT_MS;
		call_of[i] = nc++;
	}
	cluster_call_all(calls, nc);

	json_t *nodes_o = json_object();
	uint64_t objs = 0, bytes = 0, cap_total = 0, cap_free = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *r = call_of[i] == SIZE_MAX ? node_stats(nb) : peer_stats(&calls[call_of[i]]);
		if (json_object_get(r, "error") && !json_object_get(r, "role"))
			json_object_set_new(r, "role", json_string(cmap_role_name(nodes[i].role)));
		if (!json_object_get(r, "error")) {
			objs += (uint64_t)json_integer_value(json_object_get(r, "objects"));
			bytes += (uint64_t)json_integer_value(json_object_get(r, "bytes"));
			size_t k;
			json_t *mp;
			json_array_foreach(json_object_get(r, "mountpaths"), k, mp) {
				cap_total += (uint64_t)json_integer_value(json_object_get(mp, "total_bytes"));
				cap_free += (uint64_t)json_integer_value(json_object_get(mp, "free_bytes"));
			}
		}
		json_object_set_new(nodes_o, nodes[i].id, r);
	}
	for (size_t i = 0; i < nc; i++)
		buf_free(&calls[i].resp);
	free(calls);
	free(call_of);
	free(nodes);
	j->doc = json_pack("{s:I,s:o,s:{s:I,s:I,s:I,s:I}}", "cmap_version", (json_int_t)cv, "nodes", nodes_o,
			   "totals", "objects", (json_int_t)objs, "bytes", (json_int_t)bytes, "capacity_total",
			   (json_int_t)cap_total, "capacity_free", (json_int_t)cap_free);
}

int cluster_stats_cluster(http_req_t *req)
{
	struct stats_job *j = arena_zalloc(req->arena, sizeof(*j));
	req->state = j;
	arena_cleanup_add(req->arena, stats_cleanup, j);
	http_offload_net(req, cluster_work, stats_done);
	return AIS_OK;
}
