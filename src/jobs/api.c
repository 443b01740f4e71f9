/*
 * api.c - the jobs' HTTP side. On a target: GET /v1/jobs (its rebalance
 * job; ?what=resilver, ec-encode, prefetch, evict the others) and PUT
 * /v1/jobs {"action":"start"|"stop"}. On any node of a
 * cluster: GET /v1/cluster?what=rebalance (every target asked in parallel,
 * 5 s each; a target that does not answer is an "error" entry) and PUT
 * /v1/cluster {"action":"rebalance"|"stop-rebalance"} sent to every target.
 * And for the primary's decommission: waiting for a node's drain.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/httpc.h"
#include "aisd/jobs.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/cluster.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define ASK_TIMEOUT_MS 5000

/* The other job kinds a ?what= may name (jobs_cluster_register). */
static bool (*other_kind)(sv_t kind);

/* GET /v1/jobs?what=ec-encode: the re-encode job (reb_encode_stats) with
 * its bucket; PUT start/stop act on the rebalance that carries it. */
static int encode_h_target(http_req_t *req, reb_t *reb)
{
	job_stats_t st;
	char bck[NAME_BUCKET_MAX + 1];
	buf_t out = BUF_INIT;
	reb_encode_stats(reb, &st, bck, sizeof(bck));
	job_stats_json(&st, "ec-encode", &out);
	out.len--; /* the closing brace */
	buf_addstr(&out, ",\"bucket\":");
	buf_add_json_str(&out, bck, strlen(bck));
	buf_addch(&out, '}');
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &out);
	return AIS_OK;
}

/* ?what=resilver: the resilver job; anything else (or none): rebalance. */
static bool want_resilver(http_req_t *req)
{
	sv_t what = {"", 0};
	http_query_get(req, "what", &what);
	return sv_eqstr(what, "resilver");
}

int jobs_h_target(http_req_t *req, reb_t *reb, res_t *rs)
{
	job_stats_t st;
	buf_t out = BUF_INIT;
	bool res = want_resilver(req);
	sv_t what;

	if (!res && !reb) {
		http_resp_error(req, 409, "this target is not in a cluster: no rebalance");
		return AIS_OK;
	}
	bool enc = http_query_get(req, "what", &what) && sv_eqstr(what, "ec-encode");
	if (req->method == HTTP_PUT) {
		json_error_t jerr;
		json_t *doc = json_loadb(req->body.ptr ? req->body.ptr : "", req->body.len, 0, &jerr);
		const char *a = json_string_value(json_object_get(doc, "action"));
		if (a && !strcmp(a, "start"))
			res ? res_kick(rs, "started on request") : reb_kick(reb, "started on request");
		else if (a && !strcmp(a, "stop"))
			res ? res_abort(rs) : reb_abort(reb);
		else {
			json_decref(doc);
			http_resp_error(req, 400, "PUT /v1/jobs wants {\"action\":\"start\"|\"stop\"}");
			return AIS_OK;
		}
		json_decref(doc);
	}
	if (enc)
		return encode_h_target(req, reb);
	if (res)
		res_stats(rs, &st);
	else
		reb_stats(reb, &st);
	job_stats_json(&st, res ? "resilver" : "rebalance", &out);
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &out);
	return AIS_OK;
}

/* --- the cluster's view ------------------------------------------------------ */

/* A target's answer as its job, or {"error":..}. */
static json_t *job_of(const cluster_call_t *c)
{
	json_error_t jerr;
	if (!c->status)
		return json_pack("{s:s}", "error", c->resp.ptr ? c->resp.ptr : "no answer");
	json_t *o = c->status == 200 ? json_loadb(c->resp.ptr ? c->resp.ptr : "", c->resp.len, 0, &jerr) : NULL;
	if (json_is_object(o))
		return o;
	char msg[200];
	json_decref(o);
	snprintf(msg, sizeof(msg), "HTTP %d: %.150s", c->status, c->resp.ptr ? c->resp.ptr : "");
	return json_pack("{s:s}", "error", msg);
}

/* Asks every target in the map (cluster_call_all); returns
 * {"cmap_version","state","targets":{id:..},"totals":{..}}. */
static json_t *ask_all(cluster_t *cl, const char *kind, const char *method, const char *body)
{
	const cmap_t *m;
	size_t n = 0;
	uint64_t cv = 0;
	cluster_call_t *calls;
	char(*ids)[CMAP_ID_MAX + 1];
	buf_t b = BUF_INIT;

	if (body)
		buf_addstr(&b, body);
	cluster_read_lock(cl, &m, NULL);
	calls = xcalloc(m ? cmap_size(m) + 1 : 1, sizeof(*calls));
	ids = xcalloc(m ? cmap_size(m) + 1 : 1, sizeof(*ids));
	for (size_t i = 0; m && i < cmap_size(m); i++) {
		const cmap_node_t *nd = cmap_node(m, i);
		if (nd->role != CMAP_TARGET)
			continue;
		snprintf(ids[n], sizeof(ids[n]), "%s", nd->id);
		snprintf(calls[n].url, sizeof(calls[n].url), "%s/v1/jobs?what=%s", nd->intra_url, kind);
		calls[n].method = method;
		calls[n].body = body ? &b : NULL;
		calls[n].timeout_ms = ASK_TIMEOUT_MS;
		n++;
	}
	cv = m ? cmap_version(m) : 0;
	cluster_read_unlock(cl);

	cluster_call_all(calls, n);
	json_t *targets = json_object();
	enum job_state *st = xcalloc(n + 1, sizeof(*st));
	uint64_t tot[8] = {0};
	static const char *const keys[] = {"total",       "walked",  "remaining", "remaining_bytes",
	                                   "moved_bytes", "deleted", "errors",    "moved"};
	bool unreachable = false;
	for (size_t i = 0; i < n; i++) {
		json_t *r = job_of(&calls[i]);
		buf_free(&calls[i].resp);
		const char *s = json_string_value(json_object_get(r, "state"));
		st[i] = JOB_IDLE;
		for (int k = JOB_IDLE; s && k <= JOB_FAILED; k++)
			if (!strcmp(s, job_state_name((enum job_state)k)))
				st[i] = (enum job_state)k;
		if (!s)
			unreachable = true;
		for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
			tot[k] += (uint64_t)json_integer_value(json_object_get(r, keys[k]));
		json_object_set_new(targets, ids[i], r);
	}
	enum job_state merged = job_state_merge(st, n);
	json_t *totals = json_object();
	for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
		json_object_set_new(totals, keys[k], json_integer((json_int_t)tot[k]));
	json_t *doc = json_pack("{s:s,s:I,s:s,s:b,s:o,s:o}", "kind", kind, "cmap_version",
	                        (json_int_t)cv, "state", job_state_name(merged), "unreachable", unreachable,
	                        "targets", targets, "totals", totals);
	free(st);
	free(ids);
	free(calls);
	buf_free(&b);
	return doc;
}

struct cjob {
	const char *kind;
	const char *method;
	const char *body;
	json_t *doc;
};

static void cjob_cleanup(void *arg)
{
	json_decref(((struct cjob *)arg)->doc);
}

static void cjob_work(http_req_t *req)
{
	struct cjob *j = req->state;
	j->doc = ask_all(((node_base_t *)req->ctx)->cl, j->kind, j->method, j->body);
}

static void cjob_done(http_req_t *req)
{
	cluster_resp_json(req, ((struct cjob *)req->state)->doc);
}

static int cjob_start(http_req_t *req, const char *method, const char *body, const char *kind)
{
	struct cjob *j = arena_zalloc(req->arena, sizeof(*j));
	j->method = method;
	j->body = body;
	j->kind = "rebalance";
	sv_t what = {"", 0};
	http_query_get(req, "what", &what);
	if (sv_eqstr(what, "resilver") || sv_eqstr(what, "ec-encode") || (other_kind && other_kind(what)))
		j->kind = arena_svdup(req->arena, what);
	if (kind)
		j->kind = kind;
	req->state = j;
	arena_cleanup_add(req->arena, cjob_cleanup, j);
	http_offload_net(req, cjob_work, cjob_done);
	return AIS_OK;
}

int jobs_h_cluster_status(http_req_t *req)
{
	return cjob_start(req, "GET", NULL, NULL);
}

int jobs_h_cluster_action(http_req_t *req, bool start)
{
	return cjob_start(req, "PUT", start ? "{\"action\":\"start\"}" : "{\"action\":\"stop\"}", NULL);
}

int jobs_h_cluster_start(http_req_t *req, const char *kind, const char *body)
{
	return cjob_start(req, "PUT", body, kind);
}

void jobs_cluster_register(bool (*other)(sv_t kind))
{
	other_kind = other;
	static const cluster_jobs_ops_t ops = {
		.status = jobs_h_cluster_status, .action = jobs_h_cluster_action, .wait_drained = jobs_wait_drained};
	cluster_jobs_set(&ops);
}

/* --- decommission: the drain ------------------------------------------------------ */

int jobs_wait_drained(struct cluster *cl, const char *sid, uint64_t version, uint64_t timeout_ms, buf_t *msg)
{
	char url[CMAP_URL_MAX + 32] = "";
	const cmap_t *m;
	int64_t deadline = time_mono_ns() + (int64_t)timeout_ms * 1000000;
	int misses = 0;
	buf_t resp = BUF_INIT;
	json_error_t jerr;

	cluster_read_lock(cl, &m, NULL);
	const cmap_node_t *nd = m ? cmap_get(m, sid, strlen(sid)) : NULL;
	if (nd && nd->role == CMAP_TARGET)
		snprintf(url, sizeof(url), "%s/v1/jobs", nd->intra_url);
	cluster_read_unlock(cl);
	if (!url[0])
		return AIS_OK; /* not a target, or gone: nothing to drain */
	for (;;) {
		int status = 0;
		if (httpc_sync("GET", url, NULL, NULL, 0, ASK_TIMEOUT_MS, &resp, &status) == AIS_OK &&
		    status == 200) {
			misses = 0;
			json_t *d = json_loadb(resp.ptr, resp.len, 0, &jerr);
			const char *st = json_string_value(json_object_get(d, "state"));
			uint64_t v = (uint64_t)json_integer_value(json_object_get(d, "cmap_version"));
			uint64_t objs = (uint64_t)json_integer_value(json_object_get(d, "objects"));
			bool done = st && !strcmp(st, "done") && v >= version && objs == 0;
			buf_reset(msg);
			buf_addf(msg, "%s: rebalance %s under map v%llu, %llu objects left", sid,
			         st ? st : "?", (unsigned long long)v, (unsigned long long)objs);
			json_decref(d);
			if (done)
				break;
		} else if (++misses >= 3) {
			buf_reset(msg);
			buf_addf(msg,
			         "%s does not answer: its data cannot be drained (copies on other targets "
			         "are restored by the rebalance)",
			         sid);
			buf_free(&resp);
			errno = EHOSTUNREACH;
			return AIS_ERR;
		}
		if (time_mono_ns() > deadline) {
			buf_free(&resp);
			errno = ETIMEDOUT;
			return AIS_ERR;
		}
		usleep(200 * 1000);
	}
	buf_free(&resp);
	return AIS_OK;
}
