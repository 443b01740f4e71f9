/*
 * ml.c - aisctl's ML commands: `ml get-batch`, one GetBatch request
 * (GET /v1/ml/moss/BUCKET) whose tar goes to a file or standard output.
 *
 * Guarantees: the tar is written to a temporary file next to OUT and renamed
 * into place only when the whole stream arrived and the server answered 2xx,
 * so a failed batch (an error status, or a stream the server aborted) leaves
 * no OUT behind; a stream cut after it started is said as such (exit 1).
 * Entries are sent in the order given.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

/* Appends one entry {"objname":..[,"archpath":..]} (comma unless first). */
static void add_entry(buf_t *j, const char *obj, size_t olen, const char *arch, size_t alen, size_t *n)
{
	buf_addstr(j, *n ? ",{\"objname\":" : "{\"objname\":");
	buf_add_json_str(j, obj, olen);
	if (alen) {
		buf_addstr(j, ",\"archpath\":");
		buf_add_json_str(j, arch, alen);
	}
	buf_addch(j, '}');
	(*n)++;
}

/* --file: one entry per line, "OBJECT" or "OBJECT<TAB>ARCHPATH"; blank
 * lines skipped. AIS_OK, or AIS_ERR (message printed). */
static int entries_from_file(const char *path, buf_t *j, size_t *n)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (!f) {
		cli_err("%s: %s", path, strerror(errno));
		return AIS_ERR;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (len == 0)
			continue;
		char *tab = memchr(line, '\t', (size_t)len);
		if (tab)
			add_entry(j, line, (size_t)(tab - line), tab + 1, strlen(tab + 1), n);
		else
			add_entry(j, line, (size_t)len, NULL, 0, n);
	}
	free(line);
	if (f != stdin)
		fclose(f);
	return AIS_OK;
}

int cli_ml_get_batch(struct cli *c, const struct cli_args *a)
{
	const char *bucket = a->pos[0], *out = a->pos[1];
	const char *list = cli_opt(a, "list"), *file = cli_opt(a, "file");
	buf_t j = BUF_INIT, path = BUF_INIT, tmp = BUF_INIT;
	size_t n = 0;
	int fd = STDOUT_FILENO, rc = CLI_EXIT_ERR;
	bool to_stdout = !strcmp(out, "-");
	if (to_stdout && c->json)
		return cli_usage_error(a->cmd, "--json needs OUT.tar: the tar itself goes to stdout with -");

	if (!strncmp(bucket, "ais://", 6))
		bucket += 6;
	if (!*bucket || strchr(bucket, '/'))
		return cli_usage_error(a->cmd, "want a BUCKET name, got '%s'", a->pos[0]);
	if (!list == !file)
		return cli_usage_error(a->cmd, "give exactly one of --list and --file");
	buf_addstr(&j, "{\"in\":[");
	if (list) {
		for (const char *p = list; *p;) {
			const char *comma = strchr(p, ',');
			size_t l = comma ? (size_t)(comma - p) : strlen(p);
			if (l)
				add_entry(&j, p, l, NULL, 0, &n);
			p += l + (comma ? 1 : 0);
		}
	} else if (entries_from_file(file, &j, &n) != AIS_OK) {
		goto out;
	}
	if (!n) {
		rc = cli_usage_error(a->cmd, "no objects given");
		goto out;
	}
	buf_addf(&j, "],\"mime\":\".tar\",\"strm\":true,\"coer\":%s,\"onob\":%s",
		 cli_opt(a, "coer") ? "true" : "false", cli_opt(a, "onob") ? "true" : "false");
	if (cli_opt(a, "etl")) {
		buf_addstr(&j, ",\"etl\":");
		buf_add_json_str(&j, cli_opt(a, "etl"), strlen(cli_opt(a, "etl")));
		if (cli_opt(a, "etl-args")) {
			buf_addstr(&j, ",\"etl_args\":");
			buf_add_json_str(&j, cli_opt(a, "etl-args"), strlen(cli_opt(a, "etl-args")));
		}
	}
	buf_addch(&j, '}');

	if (!to_stdout) {
		fd = cli_tmp_open(out, &tmp);
		if (fd < 0)
			goto out;
	}
	buf_addstr(&path, "/v1/ml/moss/");
	buf_add_pct(&path, sv_from(bucket), false);
	struct cli_req rq = CLI_REQ_INIT("GET", path.ptr);
	rq.json = j.ptr;
	rq.sink_fd = fd;
	struct cli_resp rs = {0};
	bool sent = cli_http(c, &rq, &rs) == AIS_OK;
	if (!sent && rs.status >= 200 && rs.status < 300)
		cli_err("get-batch: the tar stream was cut after %" PRIu64 " bytes: an entry failed after the "
			"answer had started (without --coer: a missing entry; with it: an entry whose "
			"owner died mid-entry with no other copy); %s",
			rs.sunk, to_stdout ? "the tar on standard output is incomplete" : "no file written");
	bool ok = sent && cli_http_check(&rs, "get-batch") == AIS_OK;
	if (!to_stdout) {
		ok = cli_tmp_finish(fd, tmp.ptr, out, ok);
		if (ok && c->json)
			cli_print_json(json_pack("{s:s,s:I,s:I}", "bucket", bucket, "entries", (json_int_t)n, "size",
						 (json_int_t)rs.sunk));
		else if (ok && c->verbose)
			fprintf(stderr, "got %zu entries as %s (%" PRIu64 " bytes)\n", n, out, rs.sunk);
	}
	cli_resp_free(&rs);
	if (ok)
		rc = CLI_EXIT_OK;
out:
	buf_free(&j);
	buf_free(&path);
	buf_free(&tmp);
	return rc;
}
