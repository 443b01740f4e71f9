/*
 * job.c - aisctl's job commands, for the cluster's rebalance job (which
 * also adds and removes mirror copies and drains decommissioned nodes),
 * the re-encode job (ec-encode: a bucket to or from erasure coding, which
 * the rebalance carries out), the remote buckets' prefetch and evict, and
 * the targets' resilver job (mountpath attach/detach):
 *   job show [rebalance|resilver] [--json]   one table: every target's progress
 *   job wait [rebalance|resilver] [--timeout-s N]  until no target runs it; a
 *                                   live progress bar on a terminal
 *   job start [rebalance]           PUT /v1/cluster {"action":"rebalance"}
 *   job start ec-encode BUCKET KEY=VALUE...  the re-encode job (bucket.c)
 *   job stop [KIND]                 PUT /v1/cluster?what=KIND {"action":"stop-rebalance"}
 * The status comes from GET /v1/cluster?what=rebalance|resilver on the endpoint.
 * Exit status of wait: 0 when the job ended done (or idle), 1 when it
 * ended failed or aborted, or the timeout passed.
 *
 * A run of any kind is named by its id (GET /v1/jobs, the gateway's view
 * of every target's job registry):
 *   job show ID | job show [KIND] --all   the run, or every run (finished too)
 *   job wait ID [--timeout SECS]          a progress bar: bytes, objects, rate, ETA
 *   job stop ID                           PUT /v1/jobs {"action":"stop","id":ID}
 * A name that is no kind is taken for an id; one no target knows: exit 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

static const char *const kinds[] = {"rebalance", "resilver", "prefetch", "evict", "ec-encode"};

static bool is_kind(const char *s)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(s, kinds[i]))
			return true;
	return false;
}

/* The job named (default rebalance); resilver only where allow_res. */
static int check_kind(const struct cli_args *a, bool allow_res, const char **kind)
{
	*kind = a->npos ? a->pos[0] : "rebalance";
	if (!strcmp(*kind, "rebalance") || (allow_res && !strcmp(*kind, "resilver")) || !strcmp(*kind, "prefetch") ||
	    !strcmp(*kind, "evict") || !strcmp(*kind, "ec-encode"))
		return CLI_EXIT_OK;
	return cli_usage_error(a->cmd, "unknown job '%s': want rebalance%s, prefetch, evict or ec-encode", a->pos[0],
	                       allow_res ? ", resilver" : " (a resilver starts with a mountpath change)");
}

/* GETs the cluster's job status; NULL after printing why. */
static json_t *fetch_status(struct cli *c, const char *kind)
{
	char path[64];
	snprintf(path, sizeof(path), "/v1/cluster?what=%s", kind);
	struct cli_req rq = CLI_REQ_INIT("GET", path);
	struct cli_resp rs = {0};
	json_t *doc = NULL;
	if (cli_http(c, &rq, &rs) == AIS_OK && cli_http_check(&rs, "job status") == AIS_OK) {
		doc = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
		if (!json_is_object(doc)) {
			cli_err("job status: the answer is not a JSON object");
			json_decref(doc);
			doc = NULL;
		}
	}
	cli_resp_free(&rs);
	return doc;
}

static uint64_t num(json_t *o, const char *k)
{
	return (uint64_t)json_integer_value(json_object_get(o, k));
}

static void print_table(json_t *doc)
{
	const char *id;
	json_t *v;
	char moved[32];
	printf("%-24s %-8s %5s %17s %8s %10s %8s %6s\n", "TARGET", "STATE", "MAP", "WALKED/TOTAL", "SENT",
	       "BYTES", "MOVED", "ERRORS");
	json_object_foreach(json_object_get(doc, "targets"), id, v)
	{
		const char *err = json_string_value(json_object_get(v, "error"));
		if (err) {
			printf("%-24s %-8s %.60s\n", id, "-", err);
			continue;
		}
		char wt[40];
		snprintf(wt, sizeof(wt), "%llu/%llu", (unsigned long long)num(v, "walked"),
		         (unsigned long long)num(v, "total"));
		cli_human_size(num(v, "moved_bytes"), moved, sizeof(moved));
		printf("%-24s %-8s %5llu %17s %8llu %10s %8llu %6llu\n", id,
		       json_string_value(json_object_get(v, "state")),
		       (unsigned long long)num(v, "cmap_version"), wt, (unsigned long long)num(v, "moved"),
		       moved, (unsigned long long)num(v, "deleted"), (unsigned long long)num(v, "errors"));
		const char *le = json_string_value(json_object_get(v, "last_error"));
		if (le && *le && num(v, "errors"))
			printf("  last error: %.100s\n", le);
	}
	json_t *tot = json_object_get(doc, "totals");
	cli_human_size(num(tot, "moved_bytes"), moved, sizeof(moved));
	printf("%s: %s; %llu objects sent (%s), %llu moved off, %llu left to walk, %llu errors\n",
	       json_string_value(json_object_get(doc, "kind")), json_string_value(json_object_get(doc, "state")), (unsigned long long)num(tot, "moved"), moved,
	       (unsigned long long)num(tot, "deleted"), (unsigned long long)num(tot, "remaining"),
	       (unsigned long long)num(tot, "errors"));
}

static int runs_show(struct cli *c, const struct cli_args *a);
static int runs_wait(struct cli *c, const struct cli_args *a, const char *id, uint64_t limit);
static int runs_stop(struct cli *c, const struct cli_args *a, const char *id);

int cli_job_show(struct cli *c, const struct cli_args *a)
{
	const char *kind;
	if (cli_opt(a, "all") || (a->npos && !is_kind(a->pos[0])))
		return runs_show(c, a);
	int rc = check_kind(a, true, &kind);
	if (rc != CLI_EXIT_OK)
		return rc;
	json_t *doc = fetch_status(c, kind);
	if (!doc)
		return CLI_EXIT_ERR;
	if (c->json) {
		cli_print_json(doc);
	} else {
		print_table(doc);
		json_decref(doc);
	}
	return CLI_EXIT_OK;
}

static void fmt_eta(json_int_t s, char *out, size_t outsz);

/* One line, redrawn: [#####-----] walked/total objects, bytes sent, the
 * rate of the walk since the wait began (from walked0 at t0) and its ETA,
 * errors. */
static void progress(json_t *doc, uint64_t *walked0, time_t t0)
{
	uint64_t walked = 0, total = 0;
	const char *id;
	json_t *v;
	json_object_foreach(json_object_get(doc, "targets"), id, v)
	{
		walked += num(v, "walked");
		total += num(v, "total");
	}
	if (*walked0 > walked) /* a new run began: its rate from here */
		*walked0 = walked;
	int width = 30, fill = total ? (int)(MIN(walked, total) * (uint64_t)width / total) : 0;
	char bar[64], sent[32], eta[24] = "?";
	for (int i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '-';
	bar[width] = '\0';
	json_t *tot = json_object_get(doc, "totals");
	cli_human_size(num(tot, "moved_bytes"), sent, sizeof(sent));
	double secs = (double)(time(NULL) - t0), rate = secs > 0 ? (double)(walked - *walked0) / secs : 0;
	if (rate > 0 && total >= walked)
		fmt_eta((json_int_t)((double)(total - walked) / rate), eta, sizeof(eta));
	fprintf(stderr, "\r[%s] %llu/%llu objects, %s sent, %.0f objects/s, ETA %s, %llu errors \033[K", bar,
	        (unsigned long long)walked, (unsigned long long)total, sent, rate, eta,
	        (unsigned long long)num(tot, "errors"));
	fflush(stderr);
}

int cli_job_wait(struct cli *c, const struct cli_args *a)
{
	uint64_t limit = 0;
	const char *kind;
	const char *to = cli_opt(a, "timeout-s");
	if (to && cli_parse_u64(to, 1, 86400 * 7, &limit) != AIS_OK)
		return cli_usage_error(a->cmd, "--timeout-s wants seconds, not '%s'", to);
	if (!to && c->timeout_s > 0) /* the global --timeout: the wait's limit too */
		limit = (uint64_t)c->timeout_s;
	if (a->npos && !is_kind(a->pos[0]))
		return runs_wait(c, a, a->pos[0], limit);
	int rc = check_kind(a, true, &kind);
	if (rc != CLI_EXIT_OK)
		return rc;
	bool tty = c->progress; /* a terminal, and no --no-progress */
	time_t start = time(NULL);
	uint64_t walked0 = UINT64_MAX;
	for (;;) {
		json_t *doc = fetch_status(c, kind);
		if (!doc)
			return CLI_EXIT_ERR;
		const char *st = json_string_value(json_object_get(doc, "state"));
		bool running = st && !strcmp(st, "running");
		if (tty)
			progress(doc, &walked0, start);
		if (!running) {
			if (tty)
				fputc('\n', stderr);
			if (c->json)
				cli_print_json(json_pack("{s:s,s:s}", "job", kind, "state", st ? st : "unknown"));
			else
				printf("%s: %s\n", kind, st ? st : "unknown");
			rc = st && (!strcmp(st, "done") || !strcmp(st, "idle")) ? CLI_EXIT_OK : CLI_EXIT_ERR;
			json_decref(doc);
			return rc;
		}
		json_decref(doc);
		if (limit && (uint64_t)(time(NULL) - start) >= limit) {
			if (tty)
				fputc('\n', stderr);
			cli_err("job wait: %s still running after %llu s", kind, (unsigned long long)limit);
			return CLI_EXIT_ERR;
		}
		usleep(500 * 1000);
	}
}

static int job_action(struct cli *c, const struct cli_args *a, const char *action)
{
	const char *kind;
	if (a->npos && !is_kind(a->pos[0]) && !strcmp(action, "stop-rebalance"))
		return runs_stop(c, a, a->pos[0]);
	int rc = check_kind(a, false, &kind);
	if (rc != CLI_EXIT_OK)
		return rc;
	char body[64], path[64];
	if (!strcmp(kind, "ec-encode") && !strcmp(action, "rebalance"))
		return cli_bucket_encode(c, a);
	if (strcmp(kind, "rebalance") && !strcmp(action, "rebalance"))
		return cli_usage_error(a->cmd, "a %s starts with aisctl %s BUCKET", kind, kind);
	if (a->npos > 1)
		return cli_usage_error(a->cmd, "unexpected '%s'", a->pos[1]);
	snprintf(body, sizeof(body), "{\"action\":\"%s\"}", action);
	snprintf(path, sizeof(path), "/v1/cluster?what=%s", kind);
	struct cli_req rq = CLI_REQ_INIT("PUT", path);
	rq.json = body;
	struct cli_resp rs = {0};
	rc = CLI_EXIT_ERR;
	/* what the user asked for, not the wire's action name ("stop-rebalance" stops any kind) */
	char what[64];
	snprintf(what, sizeof(what), "%s%s", strcmp(action, "rebalance") ? "stop " : "", kind);
	if (cli_http(c, &rq, &rs) == AIS_OK && cli_http_check(&rs, what) == AIS_OK) {
		json_t *doc = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
		printf("%s: sent to %zu targets\n", what,
		       json_object_size(json_object_get(doc, "targets")));
		json_decref(doc);
		rc = CLI_EXIT_OK;
	}
	cli_resp_free(&rs);
	return rc;
}

int cli_job_start(struct cli *c, const struct cli_args *a)
{
	return job_action(c, a, "rebalance");
}
int cli_job_stop(struct cli *c, const struct cli_args *a)
{
	return job_action(c, a, "stop-rebalance");
}

/* --- runs by id (GET/PUT /v1/jobs) --------------------------------------------------- */

/* GETs /v1/jobs?QUERY into *doc; CLI_EXIT_OK, or the exit status after
 * printing why (a 404 for an id: exit 2, it names no kind and no run); a
 * 404 without id: CLI_EXIT_NOTFOUND, nothing printed. */
static int runs_get(struct cli *c, const struct cli_args *a, const char *query, const char *id, json_t **doc)
{
	char path[256];
	snprintf(path, sizeof(path), "/v1/jobs?%s", query);
	struct cli_req rq = CLI_REQ_INIT("GET", path);
	struct cli_resp rs = {0};
	int rc = CLI_EXIT_ERR;
	*doc = NULL;
	if (cli_http(c, &rq, &rs) != AIS_OK) {
		cli_resp_free(&rs);
		return CLI_EXIT_ERR;
	}
	if (rs.status == 404 && id) {
		cli_resp_free(&rs);
		return cli_usage_error(a->cmd, "'%s' is no job kind (%s, %s, %s, %s, %s) and no run id any target knows",
				       id, kinds[0], kinds[1], kinds[2], kinds[3], kinds[4]);
	}
	if (rs.status == 404) { /* the caller says what it means */
		cli_resp_free(&rs);
		return CLI_EXIT_NOTFOUND;
	}
	if (cli_http_check(&rs, "jobs") == AIS_OK) {
		*doc = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
		if (json_is_object(*doc))
			rc = CLI_EXIT_OK;
		else
			cli_err("jobs: the answer is not a JSON object");
	}
	cli_resp_free(&rs);
	if (rc != CLI_EXIT_OK) {
		json_decref(*doc);
		*doc = NULL;
	}
	return rc;
}

static void fmt_time(int64_t ns, char *out, size_t outsz)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	if (!ns || !gmtime_r(&t, &tm) || !strftime(out, outsz, "%H:%M:%S", &tm))
		snprintf(out, outsz, "-");
}

static void fmt_eta(json_int_t s, char *out, size_t outsz)
{
	if (s < 0)
		snprintf(out, outsz, "?");
	else if (s < 3600)
		snprintf(out, outsz, "%lldm%02llds", (long long)s / 60, (long long)s % 60);
	else
		snprintf(out, outsz, "%lldh%02lldm", (long long)s / 3600, (long long)(s % 3600) / 60);
}

/* ID KIND BUCKET STATE OBJECTS BYTES RATE ETA START END ERRORS; with each
 * target's state under a run when targets. */
static void runs_table(json_t *doc, bool targets)
{
	size_t i;
	json_t *r;
	printf("%-22s %-10s %-14s %-8s %13s %10s %10s %7s %8s %8s %6s\n", "ID", "KIND", "BUCKET", "STATE", "OBJECTS",
	       "BYTES", "RATE", "ETA", "START", "END", "ERRORS");
	json_array_foreach(json_object_get(doc, "runs"), i, r)
	{
		json_t *p = json_object_get(r, "progress");
		char objs[48], bytes[32], rate[40], eta[24], st[16], en[16];
		snprintf(objs, sizeof(objs), "%llu/%llu", (unsigned long long)num(p, "objects"),
			 (unsigned long long)num(p, "total"));
		cli_human_size(num(p, "bytes"), bytes, sizeof(bytes));
		cli_human_size((uint64_t)json_number_value(json_object_get(p, "rate_bytes")), rate, sizeof(rate) - 2);
		size_t rl = strlen(rate);
		snprintf(rate + rl, sizeof(rate) - rl, "/s");
		fmt_eta(json_integer_value(json_object_get(p, "eta_s")), eta, sizeof(eta));
		fmt_time(json_integer_value(json_object_get(r, "start")), st, sizeof(st));
		fmt_time(json_integer_value(json_object_get(r, "end")), en, sizeof(en));
		const char *bck = json_string_value(json_object_get(r, "bucket"));
		printf("%-22s %-10s %-14s %-8s %13s %10s %10s %7s %8s %8s %6llu\n",
		       json_string_value(json_object_get(r, "id")), json_string_value(json_object_get(r, "kind")),
		       bck && *bck ? bck : "-", json_string_value(json_object_get(r, "state")), objs, bytes, rate, eta,
		       st, en, (unsigned long long)num(r, "errors"));
		const char *le = json_string_value(json_object_get(r, "last_error"));
		if (le && *le)
			printf("  last error: %.100s\n", le);
		size_t ei;
		json_t *ev;
		json_array_foreach(json_object_get(r, "error_list"), ei, ev)
			printf("  error: %.200s\n", json_string_value(ev) ? json_string_value(ev) : "");
		const char *tid;
		json_t *tv;
		if (targets)
			json_object_foreach(json_object_get(r, "targets"), tid, tv)
		printf("  %-24s %-8s %llu objects, %llu errors\n", tid, json_string_value(json_object_get(tv, "state")),
		       (unsigned long long)num(tv, "objects"), (unsigned long long)num(tv, "errors"));
	}
	const char *tid;
	json_t *why;
	json_object_foreach(json_object_get(doc, "unreachable"), tid, why)
		printf("%s did not answer: %.80s\n", tid, json_string_value(why) ? json_string_value(why) : "");
}

/* job show ID | [KIND] --all: a name that is no run id any target knows
 * is tried as a kind (one aisctl does not know by name: a new job). */
static int runs_show(struct cli *c, const struct cli_args *a)
{
	char query[160];
	const char *arg = a->npos ? a->pos[0] : NULL;
	bool all = cli_opt(a, "all") != NULL, by_id = arg && !is_kind(arg);
	if (!arg)
		snprintf(query, sizeof(query), all ? "all=true" : "list=true");
	else
		snprintf(query, sizeof(query), "%s=%s%s", by_id ? "id" : "kind", arg, all ? "&all=true" : "");
	json_t *doc;
	int rc = runs_get(c, a, query, NULL, &doc);
	if (rc == CLI_EXIT_NOTFOUND && by_id) { /* no such run: a kind? */
		by_id = false;
		snprintf(query, sizeof(query), "kind=%s&all=true", arg);
		rc = runs_get(c, a, query, NULL, &doc);
		if (rc == CLI_EXIT_OK && !json_array_size(json_object_get(doc, "runs"))) {
			json_decref(doc);
			return cli_usage_error(a->cmd, "'%s' is no run id any target knows and no job kind that ran", arg);
		}
	}
	if (rc != CLI_EXIT_OK)
		return rc;
	if (c->json) {
		cli_print_json(doc);
		return CLI_EXIT_OK;
	}
	runs_table(doc, by_id);
	json_decref(doc);
	return CLI_EXIT_OK;
}

static int runs_wait(struct cli *c, const struct cli_args *a, const char *id, uint64_t limit)
{
	char query[128], label[160];
	struct cli_progress bar;
	snprintf(query, sizeof(query), "id=%s", id);
	time_t start = time(NULL);
	cli_progress_start(&bar, c->progress, label, 0, 0);
	label[0] = 0;
	for (;;) {
		json_t *doc;
		int rc = runs_get(c, a, query, id, &doc);
		if (rc != CLI_EXIT_OK) {
			cli_progress_end(&bar);
			return rc;
		}
		json_t *r = json_array_get(json_object_get(doc, "runs"), 0);
		json_t *p = json_object_get(r, "progress");
		const char *st = json_string_value(json_object_get(r, "state"));
		char eta[24];
		fmt_eta(json_integer_value(json_object_get(p, "eta_s")), eta, sizeof(eta));
		snprintf(label, sizeof(label), "%llu/%llu objects  ETA %s", (unsigned long long)num(p, "objects"),
			 (unsigned long long)num(p, "total"), eta);
		/* the bar on bytes; a total not known in bytes (a prefetch's names)
		 * is estimated from the objects walked so far */
		uint64_t objs = num(p, "objects"), total = num(p, "total"), bytes = num(p, "bytes");
		bar.total = num(p, "total_bytes");
		if (!bar.total && objs && total >= objs)
			bar.total = (uint64_t)((double)bytes * (double)total / (double)objs);
		cli_progress_set(&bar, bytes, 0);
		if (!st || strcmp(st, "running")) {
			cli_progress_end(&bar);
			if (c->json)
				cli_print_json(json_pack("{s:s,s:s}", "job", id, "state", st ? st : "unknown"));
			else
				printf("%s: %s\n", id, st ? st : "unknown");
			rc = st && !strcmp(st, "done") ? CLI_EXIT_OK : CLI_EXIT_ERR;
			const char *le = json_string_value(json_object_get(r, "last_error"));
			if (rc && le && *le)
				cli_err("%s: %s", id, le);
			json_decref(doc);
			return rc;
		}
		json_decref(doc);
		if (limit && (uint64_t)(time(NULL) - start) >= limit) {
			cli_progress_end(&bar);
			cli_err("job wait: %s still running after %llu s", id, (unsigned long long)limit);
			return CLI_EXIT_ERR;
		}
		usleep(500 * 1000);
	}
}

static int runs_stop(struct cli *c, const struct cli_args *a, const char *id)
{
	if (a->npos > 1)
		return cli_usage_error(a->cmd, "unexpected '%s'", a->pos[1]);
	json_t *body = json_pack("{s:s,s:s}", "action", "stop", "id", id);
	char *js = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	struct cli_req rq = CLI_REQ_INIT("PUT", "/v1/jobs");
	rq.json = js;
	struct cli_resp rs = {0};
	int rc = CLI_EXIT_ERR;
	char what[96];
	snprintf(what, sizeof(what), "stop %s", id);
	if (cli_http(c, &rq, &rs) == AIS_OK && cli_http_check(&rs, what) == AIS_OK) {
		json_t *doc = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
		printf("stop %s: stopped on %lld targets\n", id, (long long)json_integer_value(json_object_get(doc, "stopped")));
		json_decref(doc);
		rc = CLI_EXIT_OK;
	}
	cli_resp_free(&rs);
	free(js);
	return rc;
}
