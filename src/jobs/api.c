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
#include "aisd/jobreg.h"
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

/* Calls every target of the map at PATH (with its query) by method with
 * body (NULL: none), all at once (cluster_call_all); *ids gets each call's
 * target, *cv the map's version. The caller frees calls[i].resp, calls and
 * ids. */
static cluster_call_t *fan_out(cluster_t *cl, const char *path, const char *method, const buf_t *body, size_t *np,
			       char (**idsp)[CMAP_ID_MAX + 1], uint64_t *cv)
{
	const cmap_t *m;
	size_t n = 0;
	cluster_read_lock(cl, &m, NULL);
	cluster_call_t *calls = xcalloc(m ? cmap_size(m) + 1 : 1, sizeof(*calls));
	char(*ids)[CMAP_ID_MAX + 1] = xcalloc(m ? cmap_size(m) + 1 : 1, sizeof(*ids));
	for (size_t i = 0; m && i < cmap_size(m); i++) {
		const cmap_node_t *nd = cmap_node(m, i);
		if (nd->role != CMAP_TARGET)
			continue;
		snprintf(ids[n], sizeof(ids[n]), "%s", nd->id);
		snprintf(calls[n].url, sizeof(calls[n].url), "%s%s", nd->intra_url, path);
		calls[n].method = method;
		calls[n].body = body;
		calls[n].timeout_ms = ASK_TIMEOUT_MS;
		n++;
	}
	*cv = m ? cmap_version(m) : 0;
	cluster_read_unlock(cl);
	cluster_call_all(calls, n);
	*np = n;
	*idsp = ids;
	return calls;
}

/* Asks every target in the map; returns
 * {"cmap_version","state","targets":{id:..},"totals":{..}}. */
static json_t *ask_all(cluster_t *cl, const char *kind, const char *method, const char *body)
{
	size_t n = 0;
	uint64_t cv = 0;
	char(*ids)[CMAP_ID_MAX + 1];
	buf_t b = BUF_INIT;
	char path[96];

	if (body)
		buf_addstr(&b, body);
	snprintf(path, sizeof(path), "/v1/jobs?what=%s", kind);
	cluster_call_t *calls = fan_out(cl, path, method, body ? &b : NULL, &n, &ids, &cv);
	json_t *targets = json_object();
	enum job_state *st = xcalloc(n + 1, sizeof(*st));
	uint64_t tot[8] = {0};
	static const char *const keys[] = {"total",       "walked",  "remaining", "remaining_bytes",
	                                   "moved_bytes", "deleted", "errors",    "moved"};
	bool unreachable = false;
	const char *run_id = NULL;
	for (size_t i = 0; i < n; i++) {
		json_t *r = job_of(&calls[i]);
		buf_free(&calls[i].resp);
		const char *s = json_string_value(json_object_get(r, "state"));
		st[i] = job_state_of(s);
		if (!s)
			unreachable = true;
		for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
			tot[k] += (uint64_t)json_integer_value(json_object_get(r, keys[k]));
		const char *rid = json_string_value(json_object_get(r, "id"));
		if (rid && *rid && !run_id)
			run_id = rid;
		json_object_set_new(targets, ids[i], r);
	}
	enum job_state merged = job_state_merge(st, n);
	json_t *totals = json_object();
	for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
		json_object_set_new(totals, keys[k], json_integer((json_int_t)tot[k]));
	json_t *doc = json_pack("{s:s,s:I,s:s,s:b,s:o,s:o}", "kind", kind, "cmap_version",
	                        (json_int_t)cv, "state", job_state_name(merged), "unreachable", unreachable,
	                        "targets", targets, "totals", totals);
	if (run_id) /* (the targets' json lives in doc: run_id too) */
		json_object_set_new(doc, "id", json_string(run_id));
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

/* --- a kind started on request: GET/PUT /v1/jobs?what=KIND on a target ------------------ */

int jobs_h_kind(http_req_t *req, const char *kind)
{
	buf_t out = BUF_INIT;
	char id[JREG_ID_MAX + 1] = "";
	if (req->method == HTTP_PUT) {
		json_t *doc = json_loadb(req->body.ptr ? req->body.ptr : "", req->body.len, 0, NULL);
		const char *a = json_string_value(json_object_get(doc, "action"));
		json_t *value = json_object_get(doc, "value");
		const char *want_id = json_string_value(json_object_get(value, "id"));
		int status = 0;
		if (a && !strcmp(a, "start") && json_is_object(value))
			status = jreg_start(kind, want_id, value, id, &out);
		else if (a && !strcmp(a, "stop"))
			jreg_stop(kind, NULL);
		else {
			status = 400;
			buf_addf(&out, "PUT /v1/jobs?what=%s wants {\"action\":\"start\",\"value\":{...}} or {\"action\":\"stop\"}",
				 kind);
		}
		json_decref(doc);
		if (status) {
			http_resp_error(req, status, "%s: %s", kind, out.ptr);
			buf_free(&out);
			return AIS_OK;
		}
	}
	job_stats_t st;
	char latest[JREG_ID_MAX + 1] = "";
	if (!jreg_latest(kind, &st, latest, sizeof(latest)))
		memset(&st, 0, sizeof(st));
	job_stats_json(&st, kind, &out);
	out.len--; /* the closing brace: the run's id too */
	buf_addstr(&out, ",\"id\":");
	buf_add_json_str(&out, id[0] ? id : latest, strlen(id[0] ? id : latest));
	buf_addch(&out, '}');
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &out);
	return AIS_OK;
}

/* --- runs: the job registry's view (jobreg.h) ----------------------------------------- */

/* The query's key as a NUL-terminated arena string; NULL when absent or empty. */
static const char *query_str(http_req_t *req, const char *key)
{
	sv_t v;
	if (!http_query_get(req, key, &v) || !v.len)
		return NULL;
	return arena_svdup(req->arena, v);
}

static bool query_true(http_req_t *req, const char *key)
{
	sv_t v;
	return http_query_get(req, key, &v) && (sv_eqstr(v, "true") || sv_eqstr(v, "1") || !v.len);
}

bool jobs_is_runs_req(http_req_t *req)
{
	sv_t v;
	return http_query_get(req, "list", &v) || http_query_get(req, "kind", &v) || http_query_get(req, "id", &v) ||
	       http_query_get(req, "all", &v);
}

/* A kind's name: lower-case letters, digits and '-', at most 31. */
static bool kind_valid(const char *k)
{
	size_t n = strlen(k);
	if (!n || n > 31)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '-'))
			return false;
	return true;
}

/* The selection of a runs request: ?kind=, ?id=, ?all=, and for a PUT the
 * body {"action":"stop","id"|"kind"} (which wins). false after answering
 * 400. */
struct runs_sel {
	const char *kind, *id;
	bool all, stop;
};

static bool runs_sel(http_req_t *req, struct runs_sel *s)
{
	s->kind = query_str(req, "kind");
	s->id = query_str(req, "id");
	s->all = query_true(req, "all");
	s->stop = req->method == HTTP_PUT;
	if (s->stop) {
		json_error_t jerr;
		json_t *doc = json_loadb(req->body.ptr ? req->body.ptr : "", req->body.len, 0, &jerr);
		const char *a = json_string_value(json_object_get(doc, "action"));
		const char *id = json_string_value(json_object_get(doc, "id"));
		const char *kind = json_string_value(json_object_get(doc, "kind"));
		if (id)
			s->id = arena_strndup(req->arena, id, strlen(id));
		if (kind)
			s->kind = arena_strndup(req->arena, kind, strlen(kind));
		bool ok = a && !strcmp(a, "stop") && (s->id || s->kind);
		json_decref(doc);
		if (!ok) {
			http_resp_error(req, 400, "PUT /v1/jobs wants {\"action\":\"stop\",\"id\":ID} or "
						  "{\"action\":\"stop\",\"kind\":KIND}");
			return false;
		}
	}
	if (s->id && !jreg_id_valid(s->id, strlen(s->id))) {
		http_resp_error(req, 400, "id: 1-%d of A-Z a-z 0-9 . _ - (aisctl job show --all lists them)",
				JREG_ID_MAX);
		return false;
	}
	if (s->kind && !kind_valid(s->kind)) {
		http_resp_error(req, 400, "kind: a job kind such as rebalance, resilver, ec-encode, prefetch, evict");
		return false;
	}
	return true;
}

int jobs_h_runs(http_req_t *req)
{
	struct runs_sel s;
	if (!runs_sel(req, &s))
		return AIS_OK;
	buf_t out = BUF_INIT;
	buf_addch(&out, '{');
	if (s.stop)
		buf_addf(&out, "\"stopped\":%zu,", jreg_stop(s.kind, s.id));
	buf_addstr(&out, "\"runs\":");
	jreg_list_json(s.kind, s.id, s.all || s.stop, &out);
	buf_addch(&out, '}');
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &out);
	return AIS_OK;
}

/* One run of the cluster: its targets' runs of one id, summed. */
struct mrun {
	json_t *first;   /* one target's run (borrowed) */
	json_t *targets; /* id -> {state,objects,bytes,errors,last_error,error_list} */
	json_t *errs;    /* the targets' first errors, JOB_ERRORS_LISTED at most */
	enum job_state *st;
	size_t nst;
	job_stats_t sum;
	bool live;
};

static int mrun_cmp(const void *a, const void *b)
{
	const struct mrun *x = a, *y = b;
	if (x->live != y->live)
		return x->live ? -1 : 1;
	return x->sum.start_ns > y->sum.start_ns ? -1 : x->sum.start_ns < y->sum.start_ns;
}

/* The targets' answers as {"runs":[..],"unreachable":{id:why}[,"stopped":n]}. */
static json_t *merge_runs(cluster_call_t *calls, char (*ids)[CMAP_ID_MAX + 1], size_t n, bool stop, size_t *nruns)
{
	json_t *docs = json_array(), *unreach = json_object();
	struct mrun *m = NULL;
	size_t nm = 0;
	json_int_t stopped = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *d = job_of(&calls[i]);
		buf_free(&calls[i].resp);
		json_array_append_new(docs, d);
		if (json_object_get(d, "error")) {
			json_object_set(unreach, ids[i], json_object_get(d, "error"));
			continue;
		}
		stopped += json_integer_value(json_object_get(d, "stopped"));
		size_t k;
		json_t *r;
		json_array_foreach(json_object_get(d, "runs"), k, r)
		{
			const char *id = json_string_value(json_object_get(r, "id"));
			if (!id)
				continue;
			size_t j = 0;
			while (j < nm && strcmp(id, json_string_value(json_object_get(m[j].first, "id"))))
				j++;
			if (j == nm) {
				m = xrealloc(m, (nm + 1) * sizeof(*m));
				memset(&m[nm], 0, sizeof(*m));
				m[nm].first = r;
				m[nm].targets = json_object();
				m[nm].st = xcalloc(n, sizeof(*m[nm].st));
				nm++;
			}
			struct mrun *x = &m[j];
			const char *sn = json_string_value(json_object_get(r, "state"));
			json_t *p = json_object_get(r, "progress");
			enum job_state st = job_state_of(sn);
			int64_t start = (int64_t)json_integer_value(json_object_get(r, "start"));
			int64_t end = (int64_t)json_integer_value(json_object_get(r, "end"));
			x->st[x->nst++] = st;
			x->live |= st == JOB_RUNNING;
			x->sum.walked += (uint64_t)json_integer_value(json_object_get(p, "objects"));
			x->sum.walked_bytes += (uint64_t)json_integer_value(json_object_get(p, "bytes"));
			x->sum.total += (uint64_t)json_integer_value(json_object_get(p, "total"));
			x->sum.total_bytes += (uint64_t)json_integer_value(json_object_get(p, "total_bytes"));
			x->sum.errors += (uint64_t)json_integer_value(json_object_get(r, "errors"));
			if (start && (!x->sum.start_ns || start < x->sum.start_ns))
				x->sum.start_ns = start;
			x->sum.end_ns = MAX(x->sum.end_ns, end);
			const char *le = json_string_value(json_object_get(r, "last_error"));
			if (le && *le)
				snprintf(x->sum.last_error, sizeof(x->sum.last_error), "%s", le);
			json_t *el = json_object_get(r, "error_list"), *e;
			size_t ei;
			if (!x->errs)
				x->errs = json_array();
			json_array_foreach(el, ei, e) if (json_array_size(x->errs) < JOB_ERRORS_LISTED)
				json_array_append(x->errs, e);
			json_object_set_new(x->targets, ids[i],
					    json_pack("{s:s,s:O?,s:O?,s:O?,s:O?,s:O?}", "state", sn ? sn : "unknown", "objects",
						      json_object_get(p, "objects"), "bytes", json_object_get(p, "bytes"),
						      "errors", json_object_get(r, "errors"), "last_error",
						      json_object_get(r, "last_error"), "error_list", el));
		}
	}
	if (nm) /* (qsort of NULL: undefined even for 0) */
		qsort(m, nm, sizeof(*m), mrun_cmp);
	json_t *runs = json_array();
	int64_t now = time_now_ns();
	for (size_t j = 0; j < nm; j++) {
		struct mrun *x = &m[j];
		x->sum.state = job_state_merge(x->st, x->nst);
		if (x->sum.state == JOB_RUNNING)
			x->sum.end_ns = 0;
		jreg_progress_t p;
		jreg_progress_of(&x->sum, now, &p);
		json_t *r = json_pack("{s:O?,s:O?,s:O?,s:s,s:I,s:I,s:I,s:s,s:{s:I,s:I,s:I,s:I,s:f,s:f,s:I},s:o}", "id",
				      json_object_get(x->first, "id"), "kind", json_object_get(x->first, "kind"),
				      "bucket", json_object_get(x->first, "bucket"), "state",
				      job_state_name(x->sum.state), "start", (json_int_t)x->sum.start_ns, "end",
				      (json_int_t)x->sum.end_ns, "errors", (json_int_t)x->sum.errors, "last_error",
				      x->sum.last_error, "progress", "objects", (json_int_t)p.objects, "bytes",
				      (json_int_t)p.bytes, "total", (json_int_t)p.total, "total_bytes",
				      (json_int_t)p.total_bytes, "rate_objects", p.rate_objects, "rate_bytes",
				      p.rate_bytes, "eta_s", (json_int_t)p.eta_s, "targets", x->targets);
		json_object_set_new(r, "error_list", x->errs ? x->errs : json_array());
		json_array_append_new(runs, r);
		free(x->st);
	}
	free(m);
	*nruns = nm;
	json_t *doc = json_pack("{s:o,s:o}", "runs", runs, "unreachable", unreach);
	if (stop)
		json_object_set_new(doc, "stopped", json_integer(stopped));
	json_decref(docs);
	return doc;
}

struct cruns {
	struct runs_sel sel;
	json_t *doc;
	size_t nruns;
};

static void cruns_cleanup(void *arg)
{
	json_decref(((struct cruns *)arg)->doc);
}

static void cruns_work(http_req_t *req)
{
	struct cruns *j = req->state;
	buf_t path = BUF_INIT, body = BUF_INIT;
	buf_addstr(&path, "/v1/jobs?list=true");
	if (j->sel.kind)
		buf_addf(&path, "&kind=%s", j->sel.kind); /* (checked: no character to escape) */
	if (j->sel.id)
		buf_addf(&path, "&id=%s", j->sel.id);
	if (j->sel.all)
		buf_addstr(&path, "&all=true");
	if (j->sel.stop)
		buf_addstr(&body, "{\"action\":\"stop\"}");
	size_t n;
	uint64_t cv;
	char(*ids)[CMAP_ID_MAX + 1];
	cluster_call_t *calls = fan_out(((node_base_t *)req->ctx)->cl, path.ptr, j->sel.stop ? "PUT" : "GET",
					j->sel.stop ? &body : NULL, &n, &ids, &cv);
	j->doc = merge_runs(calls, ids, n, j->sel.stop, &j->nruns);
	free(calls);
	free(ids);
	buf_free(&path);
	buf_free(&body);
}

static void cruns_done(http_req_t *req)
{
	struct cruns *j = req->state;
	if (j->sel.id && !j->nruns) {
		http_resp_error(req, 404, "no job run %s on any target (aisctl job show --all lists them)", j->sel.id);
		return;
	}
	if (j->sel.stop && !json_integer_value(json_object_get(j->doc, "stopped"))) {
		http_resp_error(req, 404, "no running job %s%s to stop", j->sel.id ? j->sel.id : "of kind ",
				j->sel.id ? "" : j->sel.kind);
		return;
	}
	cluster_resp_json(req, j->doc);
}

int jobs_h_cluster_runs(http_req_t *req)
{
	struct cruns *j = arena_zalloc(req->arena, sizeof(*j));
	if (!runs_sel(req, &j->sel))
		return AIS_OK;
	req->state = j;
	arena_cleanup_add(req->arena, cruns_cleanup, j);
	http_offload_net(req, cruns_work, cruns_done);
	return AIS_OK;
}
