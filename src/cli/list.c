/*
 * list.c - "aisctl ls": the objects of a bucket, page by page. Each page is
 * one GET /v1/buckets/<bucket> with a list action; the next page is asked
 * with the continuation token of the previous one, until the token comes
 * back empty or missing, or --limit objects were printed. Pages are printed
 * as they arrive, so memory use does not grow with the size of the bucket.
 * Without a bucket, "ls" lists the buckets (as "bucket ls").
 *
 * Output: a table whose columns are --props (name first; default name,
 * size, version), or with --json one JSON object per line per object, as
 * the server sent it (the properties asked for; all of them by default).
 *
 * While targets holding part of the bucket are down the gateway refuses
 * the listing (503 naming them); with --partial it lists what the other
 * targets hold, and each page that may lack objects says so in a warning
 * on stderr (once per run, with the missing targets).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

#define MAX_COLS 8

/* A column of the table: a property the server lists. */
static const struct col {
	const char *prop;   /* as in --props and the entries' JSON */
	const char *header;
	bool right;         /* right-aligned (numbers) */
	int width;          /* minimum width */
} cols_known[] = {
	{"name", "NAME", false, 4},         {"size", "SIZE", true, 10},
	{"checksum", "CHECKSUM", false, 8}, {"atime", "ATIME", false, 5},
	{"version", "VERSION", false, 7},   {"location", "LOCATION", false, 8},
};

/* Rows of the table; a column widens as longer values show up. */
struct table {
	bool json;
	bool headers;
	const struct col *cols[MAX_COLS];
	int ncols;
	int w[MAX_COLS]; /* column widths, grown to fit what was seen */
	uint64_t printed;
	uint64_t limit; /* 0 = no limit */
	const char *shard; /* --archive BUCKET/SHARD: print only it and its files */
};

/*
 * Parses --props into t->cols ("name" always comes first) and the list the
 * server is asked for into props. Returns AIS_OK, or AIS_ERR naming the bad
 * property in bad.
 */
static int table_cols(struct table *t, const char *props, buf_t *server, const char **bad)
{
	t->cols[t->ncols++] = &cols_known[0];
	if (!props) {
		t->cols[t->ncols++] = &cols_known[1];
		t->cols[t->ncols++] = &cols_known[4];
		return AIS_OK;
	}
	buf_addstr(server, "name");
	const char *p = props;
	while (*p) {
		size_t len = strcspn(p, ",");
		size_t i = 0;
		while (i < ARRAY_SIZE(cols_known) &&
		       (strlen(cols_known[i].prop) != len || strncmp(p, cols_known[i].prop, len)))
			i++;
		if (i == ARRAY_SIZE(cols_known)) {
			*bad = p;
			return AIS_ERR;
		}
		bool dup = false;
		for (int k = 0; k < t->ncols; k++)
			dup = dup || t->cols[k] == &cols_known[i];
		if (!dup && t->ncols < MAX_COLS) {
			t->cols[t->ncols++] = &cols_known[i];
			buf_addf(server, ",%s", cols_known[i].prop);
		}
		p += len + (p[len] == ',');
	}
	return AIS_OK;
}

/* The text of property col of entry e into out. */
static void cell(const struct col *col, json_t *e, char *out, size_t outsz)
{
	json_t *v = json_object_get(e, col->prop);
	if (json_is_array(v)) { /* location: every copy as ID@HOST, comma-separated */
		size_t i, at = 0;
		json_t *l;
		out[0] = '\0';
		json_array_foreach(v, i, l) {
			const char *id = json_string_value(json_object_get(l, "id"));
			const char *host = json_string_value(json_object_get(l, "host"));
			int w = snprintf(out + at, outsz - at, "%s%s@%s", i ? "," : "", id ? id : "?", host ? host : "?");
			if (w < 0 || (size_t)w >= outsz - at)
				break;
			at += (size_t)w;
		}
		if (!at)
			snprintf(out, outsz, "-");
	} else if (!strcmp(col->prop, "size") && json_is_integer(v))
		cli_human_size((uint64_t)json_integer_value(v), out, outsz);
	else if (json_is_string(v))
		snprintf(out, outsz, "%s", *json_string_value(v) ? json_string_value(v) : "-");
	else if (json_is_integer(v))
		snprintf(out, outsz, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else
		snprintf(out, outsz, "-");
}

static void print_row(struct table *t, const char *const *cells)
{
	for (int k = 0; k < t->ncols; k++) {
		const struct col *col = t->cols[k];
		int w = t->w[k];
		bool last = k == t->ncols - 1;
		if (col->right)
			printf("%*s", w, cells[k]);
		else if (last)
			fputs(cells[k], stdout);
		else
			printf("%-*s", w, cells[k]);
		fputs(last ? "\n" : "  ", stdout);
	}
}

/* With --archive BUCKET/SHARD: is e the shard or one of its files? */
static bool in_shard(const struct table *t, json_t *e)
{
	const char *name = json_string_value(json_object_get(e, "name"));
	size_t l = strlen(t->shard);
	return name && !strncmp(name, t->shard, l) && (name[l] == '\0' || name[l] == '/');
}

static void print_entry(struct table *t, json_t *e)
{
	if (t->json) {
		cli_print_json(json_incref(e));
		return;
	}
	char buf[MAX_COLS][1024];
	const char *cells[MAX_COLS];
	for (int k = 0; k < t->ncols; k++) {
		cell(t->cols[k], e, buf[k], sizeof(buf[k]));
		cells[k] = buf[k];
	}
	print_row(t, cells);
}

/*
 * Prints one page's entries. Returns AIS_DONE once --limit is reached,
 * AIS_OK otherwise.
 */
static int print_page(struct table *t, json_t *entries)
{
	size_t i;
	json_t *e;
	if (!t->json) {
		for (int k = 0; k < t->ncols; k++)
			t->w[k] = MAX(t->w[k], t->cols[k]->width);
		json_array_foreach(entries, i, e)
		{
			for (int k = 0; k < t->ncols; k++) {
				char text[1024];
				cell(t->cols[k], e, text, sizeof(text));
				t->w[k] = MAX(t->w[k], (int)MIN(strlen(text), (size_t)80));
			}
		}
		if (t->headers && t->printed == 0 && json_array_size(entries) > 0) {
			const char *hdr[MAX_COLS];
			for (int k = 0; k < t->ncols; k++)
				hdr[k] = t->cols[k]->header;
			print_row(t, hdr);
			t->headers = false;
		}
	}
	json_array_foreach(entries, i, e)
	{
		if (t->limit && t->printed >= t->limit)
			return AIS_DONE;
		if (t->shard && !in_shard(t, e))
			continue;
		print_entry(t, e);
		t->printed++;
	}
	return (t->limit && t->printed >= t->limit) ? AIS_DONE : AIS_OK;
}

int cli_list(struct cli *c, const struct cli_args *a)
{
	if (a->npos == 0)
		return cli_bucket_ls(c, a);

	const char *bucket = a->pos[0];
	const char *prefix = cli_opt(a, "prefix");
	const char *ps = cli_opt(a, "page-size");
	const char *lim = cli_opt(a, "limit");
	uint64_t page_size = 0;
	struct table t = {.json = c->json, .headers = cli_opt(a, "no-headers") == NULL};
	buf_t props = BUF_INIT;
	const char *bad = NULL;

	/* BUCKET, BUCKET/ or BUCKET/PREFIX (then --prefix may not differ) */
	if (strncmp(bucket, "ais://", 6) == 0)
		bucket += 6;
	const char *slash = strchr(bucket, '/');
	size_t blen = slash ? (size_t)(slash - bucket) : strlen(bucket);
	bool archive = cli_opt(a, "archive") != NULL;
	if (blen == 0)
		return cli_usage_error(a->cmd, "want BUCKET[/PREFIX], got '%s'", a->pos[0]);
	if (archive && slash && slash[1]) { /* --archive BUCKET/SHARD */
		t.shard = slash + 1;
		if (!prefix)
			prefix = t.shard;
	} else if (slash && slash[1]) {
		if (prefix && strcmp(prefix, slash + 1))
			return cli_usage_error(a->cmd, "two prefixes: '%s' and --prefix '%s'", slash + 1,
					       prefix);
		prefix = slash + 1;
	}
	if (ps && cli_parse_u64(ps, 1, 1000000, &page_size) != AIS_OK)
		return cli_usage_error(a->cmd, "bad --page-size '%s'", ps);
	if (lim && cli_parse_u64(lim, 1, UINT64_MAX, &t.limit) != AIS_OK)
		return cli_usage_error(a->cmd, "bad --limit '%s'", lim);
	if (table_cols(&t, cli_opt(a, "props"), &props, &bad) != AIS_OK) {
		int rc = cli_usage_error(a->cmd,
					 "bad --props at '%s': want a comma-separated list of name, "
					 "size, checksum, atime, version",
					 bad);
		buf_free(&props);
		return rc;
	}

	char *bname = xstrndup(bucket, blen);
	buf_t path = BUF_INIT;
	buf_addstr(&path, "/v1/buckets/");
	buf_add_pct(&path, sv_from(bname), false);
	if (cli_opt(a, "versions"))
		buf_addstr(&path, "?versions=true");
	buf_t what = BUF_INIT;
	buf_addf(&what, "list %s", bname);

	char *token = xstrdup("");
	int rc = CLI_EXIT_ERR;
	bool warned = false; /* --partial: the warning is printed */
	for (;;) {
		json_t *value = json_object();
		if (prefix)
			json_object_set_new(value, "prefix", json_string(prefix));
		uint64_t want = page_size;
		if (t.limit && (!want || want > t.limit - t.printed))
			want = t.limit - t.printed; /* no need to fetch more than is printed */
		if (want)
			json_object_set_new(value, "pagesize", json_integer((json_int_t)want));
		if (*token)
			json_object_set_new(value, "continuation_token", json_string(token));
		if (props.len)
			json_object_set_new(value, "props", json_string(props.ptr));
		if (cli_opt(a, "partial"))
			json_object_set_new(value, "partial", json_true());
		if (archive || cli_opt(a, "cached"))
			json_object_set_new(value, "flags", json_integer((archive ? 8 : 0) | /* AIStore's LsArchDir */
									 (cli_opt(a, "cached") ? 1 : 0))); /* LsCached */
		json_t *body = json_pack("{s:s,s:o}", "action", "list", "value", value);
		char *json = json_dumps(body, JSON_COMPACT);
		json_decref(body);

		struct cli_req rq = CLI_REQ_INIT("GET", path.ptr);
		rq.json = json;
		struct cli_resp rs = {0};
		int ok = cli_http(c, &rq, &rs) == AIS_OK && cli_http_check(&rs, what.ptr) == AIS_OK;
		free(json);
		if (!ok) {
			cli_resp_free(&rs);
			break;
		}
		json_error_t jerr;
		json_t *page = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, &jerr);
		cli_resp_free(&rs);
		if (!json_is_object(page)) {
			cli_err("%s: the server's answer is not a JSON object: %s", what.ptr,
				page ? "" : jerr.text);
			json_decref(page);
			break;
		}
		json_t *entries = json_object_get(page, "entries");
		if (entries && !json_is_array(entries) && !json_is_null(entries)) {
			cli_err("%s: the server's answer has no entries array", what.ptr);
			json_decref(page);
			break;
		}
		if (json_is_true(json_object_get(page, "partial")) && !warned) {
			char *miss = json_dumps(json_object_get(page, "missing"), JSON_COMPACT | JSON_ENCODE_ANY);
			fprintf(stderr, "aisctl: warning: %s: partial listing, objects on targets not heard from are "
					"missing: %s\n", what.ptr, miss ? miss : "?");
			free(miss);
			warned = true;
		}
		int done = print_page(&t, entries);
		const char *next = json_string_value(json_object_get(page, "continuation_token"));
		if (done == AIS_DONE || !next || !*next) {
			json_decref(page);
			rc = CLI_EXIT_OK;
			break;
		}
		if (strcmp(next, token) == 0) {
			cli_err("%s: the server returned the same continuation token twice", what.ptr);
			json_decref(page);
			break;
		}
		free(token);
		token = xstrdup(next);
		json_decref(page);
		if (fflush(stdout) != 0)
			break;
	}
	free(token);
	buf_free(&what);
	buf_free(&path);
	buf_free(&props);
	free(bname);
	return rc;
}
