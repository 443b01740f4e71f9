/*
 * stats.c - "aisctl show stats [NODE] [--refresh SECS [--count K]]": every
 * node's statistics from GET /v1/cluster?what=stats (the endpoint asks each
 * node of its map in parallel), one row per node: role, uptime, objects,
 * their bytes, disk used/total and percent over the node's mountpaths, the
 * versions of the cluster map and BMD it holds, and "ok" or why it did not
 * answer; then the cluster's totals. A standalone target (no cluster)
 * answers for itself from GET /v1/daemon?what=stats.
 *
 * With --refresh the report repeats every SECS seconds, each headed by its
 * UTC time, until K reports were printed (or forever); a failed report is
 * one error line and the next one is tried, and the exit status is 1 if
 * any report failed. With --json each report is one JSON line (aisctl(1),
 * JSON OUTPUT). NODE that is not in the map exits 3.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

static uint64_t jint(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static void fmt_uptime(uint64_t s, char *out, size_t outsz)
{
	if (s >= 86400)
		snprintf(out, outsz, "%llud%02lluh", (unsigned long long)(s / 86400),
		         (unsigned long long)(s % 86400 / 3600));
	else if (s >= 3600)
		snprintf(out, outsz, "%lluh%02llum", (unsigned long long)(s / 3600),
		         (unsigned long long)(s % 3600 / 60));
	else if (s >= 60)
		snprintf(out, outsz, "%llum%02llus", (unsigned long long)(s / 60),
		         (unsigned long long)(s % 60));
	else
		snprintf(out, outsz, "%llus", (unsigned long long)s);
}

void cli_node_cells(json_t *st, struct cli_node_cells *out)
{
	*out = (struct cli_node_cells){"-", "-", "-", "-", "-"};
	if (!json_is_object(st) || (json_object_get(st, "error") && !json_object_get(st, "uptime_s")))
		return;
	fmt_uptime(jint(st, "uptime_s"), out->uptime, sizeof(out->uptime));
	json_t *mps = json_object_get(st, "mountpaths");
	if (!json_is_array(mps))
		return; /* a gateway: no objects, no disks */
	snprintf(out->objects, sizeof(out->objects), "%llu", (unsigned long long)jint(st, "objects"));
	cli_human_size(jint(st, "bytes"), out->bytes, sizeof(out->bytes));
	uint64_t total = 0, used = 0;
	size_t i;
	json_t *mp;
	json_array_foreach(mps, i, mp)
	{
		total += jint(mp, "total_bytes");
		used += jint(mp, "used_bytes");
	}
	char u[32], t[32];
	cli_human_size(used, u, sizeof(u));
	cli_human_size(total, t, sizeof(t));
	snprintf(out->disk, sizeof(out->disk), "%s/%s", u, t);
	if (total)
		snprintf(out->pct, sizeof(out->pct), "%.0f%%", (double)used * 100.0 / (double)total);
}

/* Gateways first, then targets; by id within a role. */
static int row_cmp(const void *x, const void *y)
{
	const char *const *a = x, *const *b = y; /* {id, role} pairs */
	int ra = strcmp(a[1], "gateway") != 0, rb = strcmp(b[1], "gateway") != 0;
	return ra != rb ? ra - rb : strcmp(a[0], b[0]);
}

static int width(int w, const char *s)
{
	int n = (int)strlen(s);
	return n > w ? n : w;
}

static void print_report(const json_t *doc, bool refreshing)
{
	json_t *nodes = json_object_get(doc, "nodes");
	size_t n = json_object_size(nodes), k = 0;
	const char **rows = xcalloc(2 * (n ? n : 1), sizeof(char *));
	const char *id;
	json_t *st;
	json_object_foreach(nodes, id, st)
	{
		const char *role = json_string_value(json_object_get(st, "role"));
		rows[2 * k] = id;
		rows[2 * k + 1] = role ? role : "?";
		k++;
	}
	qsort(rows, n, 2 * sizeof(char *), row_cmp);

	struct cli_node_cells *cells = xcalloc(n ? n : 1, sizeof(*cells));
	int wn = 4, wr = 4, wt = 6, wo = 7, wb = 4, wd = 4;
	for (size_t i = 0; i < n; i++) {
		cli_node_cells(json_object_get(nodes, rows[2 * i]), &cells[i]);
		wn = width(wn, rows[2 * i]);
		wr = width(wr, rows[2 * i + 1]);
		wt = width(wt, cells[i].uptime);
		wo = width(wo, cells[i].objects);
		wb = width(wb, cells[i].bytes);
		wd = width(wd, cells[i].disk);
	}
	if (refreshing) {
		char t[64];
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
		printf("%s  cluster map version %llu\n", t,
		       (unsigned long long)jint((json_t *)doc, "cmap_version"));
	}
	printf("%-*s  %-*s  %*s  %*s  %*s  %*s  %5s  %5s  %5s  %s\n", wn, "NODE", wr, "ROLE", wt, "UPTIME",
	       wo, "OBJECTS", wb, "SIZE", wd, "DISK", "USED", "CMAP", "BMD", "STATUS");
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_object_get(nodes, rows[2 * i]);
		const char *err = json_string_value(json_object_get(s, "error"));
		char cv[24] = "-", bv[24] = "-";
		if (!err) {
			snprintf(cv, sizeof(cv), "%llu", (unsigned long long)jint(s, "cmap_version"));
			snprintf(bv, sizeof(bv), "%llu", (unsigned long long)jint(s, "bmd_version"));
		}
		printf("%-*s  %-*s  %*s  %*s  %*s  %*s  %5s  %5s  %5s  %s\n", wn, rows[2 * i], wr,
		       rows[2 * i + 1], wt, cells[i].uptime, wo, cells[i].objects, wb, cells[i].bytes, wd,
		       cells[i].disk, cells[i].pct, cv, bv, err ? err : "ok");
	}
	json_t *tot = json_object_get(doc, "totals");
	if (json_is_object(tot)) {
		char b[32], u[32], t[32];
		uint64_t total = jint(tot, "capacity_total"), free_b = jint(tot, "capacity_free");
		cli_human_size(jint(tot, "bytes"), b, sizeof(b));
		cli_human_size(total - MIN(free_b, total), u, sizeof(u));
		cli_human_size(total, t, sizeof(t));
		printf("total: %llu objects, %s; disk %s/%s used\n", (unsigned long long)jint(tot, "objects"),
		       b, u, t);
	}
	free(cells);
	free(rows);
}

/* GETs path; the JSON object answered, or NULL. *status: the HTTP status (0: none). */
static json_t *get_json(struct cli *c, const char *path, const char *what, long *status, bool quiet_409)
{
	struct cli_req rq = CLI_REQ_INIT("GET", path);
	struct cli_resp rs = {0};
	json_t *j = NULL;
	*status = 0;
	if (cli_http(c, &rq, &rs) == AIS_OK) {
		*status = rs.status;
		if (!(quiet_409 && rs.status == 409) && cli_http_check(&rs, what) == AIS_OK) {
			j = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
			if (!json_is_object(j)) {
				cli_err("%s: the server's answer is not a JSON object", what);
				json_decref(j);
				j = NULL;
			}
		}
	}
	cli_resp_free(&rs);
	return j;
}

/* One report: the cluster's stats (or a standalone node's, shaped alike). */
static json_t *fetch(struct cli *c)
{
	long status;
	json_t *doc = get_json(c, "/v1/cluster?what=stats", "cluster stats", &status, true);
	if (doc || status != 409)
		return doc;
	json_t *self = get_json(c, "/v1/daemon?what=stats", "node stats", &status, false);
	if (!self)
		return NULL;
	const char *id = json_string_value(json_object_get(self, "id"));
	json_t *tot = json_pack("{s:I,s:I}", "objects", (json_int_t)jint(self, "objects"), "bytes",
	                        (json_int_t)jint(self, "bytes"));
	uint64_t total = 0, free_b = 0;
	size_t i;
	json_t *mp;
	json_array_foreach(json_object_get(self, "mountpaths"), i, mp)
	{
		total += jint(mp, "total_bytes");
		free_b += jint(mp, "free_bytes");
	}
	json_object_set_new(tot, "capacity_total", json_integer((json_int_t)total));
	json_object_set_new(tot, "capacity_free", json_integer((json_int_t)free_b));
	return json_pack("{s:I,s:{s:o},s:o}", "cmap_version", (json_int_t)0, "nodes", id ? id : c->endpoint,
	                 self, "totals", tot);
}

int cli_show_stats(struct cli *c, const struct cli_args *a)
{
	const char *node = a->npos ? a->pos[0] : NULL;
	const char *rs = cli_opt(a, "refresh"), *cs = cli_opt(a, "count");
	uint64_t refresh = 0, count = 1, failed = 0;

	if (rs && cli_parse_u64(rs, 1, 86400, &refresh) != AIS_OK)
		return cli_usage_error(a->cmd, "bad --refresh '%s': want seconds 1..86400", rs);
	if (cs && !rs)
		return cli_usage_error(a->cmd, "--count goes with --refresh");
	if (cs && cli_parse_u64(cs, 1, UINT64_MAX, &count) != AIS_OK)
		return cli_usage_error(a->cmd, "bad --count '%s'", cs);
	if (rs && !cs)
		count = 0; /* until interrupted */

	for (uint64_t i = 0; count == 0 || i < count; i++) {
		if (i > 0) {
			if (!c->json)
				putchar('\n');
			fflush(stdout);
			sleep((unsigned)refresh);
		}
		json_t *doc = fetch(c);
		if (!doc) {
			failed++;
			continue;
		}
		if (node) {
			json_t *st = json_object_get(json_object_get(doc, "nodes"), node);
			if (!st) {
				cli_err_notfound("node %s is not in the cluster map", node);
				json_decref(doc);
				return CLI_EXIT_ERR;
			}
			json_t *one = json_pack("{s:O,s:{s:O}}", "cmap_version",
			                        json_object_get(doc, "cmap_version"), "nodes", node, st);
			json_decref(doc);
			doc = one;
		}
		if (c->json) {
			cli_print_json(doc);
		} else {
			print_report(doc, rs != NULL);
			json_decref(doc);
		}
	}
	return failed ? CLI_EXIT_ERR : CLI_EXIT_OK;
}
