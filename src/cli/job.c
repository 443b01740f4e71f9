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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "aisd/status.h"
#include "cli.h"
#include "aisd/banned.h"

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

int cli_job_show(struct cli *c, const struct cli_args *a)
{
	const char *kind;
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

/* One line, redrawn: [#####-----] walked/total objects, sent, errors. */
static void progress(json_t *doc)
{
	uint64_t walked = 0, total = 0;
	const char *id;
	json_t *v;
	json_object_foreach(json_object_get(doc, "targets"), id, v)
	{
		walked += num(v, "walked");
		total += num(v, "total");
	}
	int width = 30, fill = total ? (int)(walked * (uint64_t)width / total) : 0;
	char bar[64];
	for (int i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '-';
	bar[width] = '\0';
	json_t *tot = json_object_get(doc, "totals");
	fprintf(stderr, "\r[%s] %llu/%llu objects walked, %llu sent, %llu errors ", bar,
	        (unsigned long long)walked, (unsigned long long)total, (unsigned long long)num(tot, "moved"),
	        (unsigned long long)num(tot, "errors"));
	fflush(stderr);
}

int cli_job_wait(struct cli *c, const struct cli_args *a)
{
	uint64_t limit = 0;
	const char *kind;
	int rc = check_kind(a, true, &kind);
	if (rc != CLI_EXIT_OK)
		return rc;
	const char *to = cli_opt(a, "timeout-s");
	if (to && cli_parse_u64(to, 1, 86400 * 7, &limit) != AIS_OK)
		return cli_usage_error(a->cmd, "--timeout-s wants seconds, not '%s'", to);
	bool tty = c->progress; /* a terminal, and no --no-progress */
	time_t start = time(NULL);
	for (;;) {
		json_t *doc = fetch_status(c, kind);
		if (!doc)
			return CLI_EXIT_ERR;
		const char *st = json_string_value(json_object_get(doc, "state"));
		bool running = st && !strcmp(st, "running");
		if (tty)
			progress(doc);
		if (!running) {
			if (tty)
				fputc('\n', stderr);
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
