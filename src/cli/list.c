/*
 * list.c - "aisctl ls": the objects of a bucket, page by page. Each page is
 * one GET /v1/buckets/<bucket> with a list action; the next page is asked
 * with the continuation token of the previous one, until the token comes
 * back empty or missing, or --limit objects were printed. Pages are printed
 * as they arrive, so memory use does not grow with the size of the bucket.
 * Without a bucket, "ls" lists the buckets (as "bucket ls").
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

/* Rows of the table; the NAME column widens as longer names show up. */
struct table {
	bool json;
	bool headers;
	int name_w;
	uint64_t printed;
	uint64_t limit; /* 0 = no limit */
	const char *shard; /* --archive BUCKET/SHARD: print only it and its files */
};

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
		char *s = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (s)
			puts(s);
		free(s);
		return;
	}
	const char *name = json_string_value(json_object_get(e, "name"));
	json_t *jsize = json_object_get(e, "size");
	json_t *jver = json_object_get(e, "version");
	char size[32] = "-";
	if (json_is_integer(jsize))
		cli_human_size((uint64_t)json_integer_value(jsize), size, sizeof(size));
	char ver[64] = "";
	if (json_is_string(jver))
		snprintf(ver, sizeof(ver), "%s", json_string_value(jver));
	else if (json_is_integer(jver))
		snprintf(ver, sizeof(ver), "%" JSON_INTEGER_FORMAT, json_integer_value(jver));
	printf("%-*s  %10s  %s\n", t->name_w, name ? name : "?", size, ver[0] ? ver : "-");
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
		json_array_foreach(entries, i, e)
		{
			const char *name = json_string_value(json_object_get(e, "name"));
			if (name && (int)strlen(name) > t->name_w)
				t->name_w = (int)MIN(strlen(name), (size_t)80);
		}
		if (t->headers && t->printed == 0 && json_array_size(entries) > 0) {
			printf("%-*s  %10s  %s\n", t->name_w, "NAME", "SIZE", "VERSION");
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
	struct table t = {.json = cli_opt(a, "json") != NULL,
			  .headers = cli_opt(a, "no-headers") == NULL,
			  .name_w = 4};

	if (strncmp(bucket, "ais://", 6) == 0)
		bucket += 6;
	size_t blen = strlen(bucket);
	if (blen && bucket[blen - 1] == '/')
		blen--; /* "ls bucket/" */
	bool archive = cli_opt(a, "archive") != NULL;
	const char *slash = memchr(bucket, '/', blen);
	if (archive && slash && slash[1]) { /* BUCKET/SHARD */
		t.shard = slash + 1;
		blen = (size_t)(slash - bucket);
		if (!prefix)
			prefix = t.shard;
	}
	if (blen == 0 || memchr(bucket, '/', blen))
		return cli_usage_error(a->cmd, "want a BUCKET, got '%s' (use --prefix for objects)",
				       a->pos[0]);
	if (ps && cli_parse_u64(ps, 1, 1000000, &page_size) != AIS_OK)
		return cli_usage_error(a->cmd, "bad --page-size '%s'", ps);
	if (lim && cli_parse_u64(lim, 1, UINT64_MAX, &t.limit) != AIS_OK)
		return cli_usage_error(a->cmd, "bad --limit '%s'", lim);

	char *bname = xstrndup(bucket, blen);
	buf_t path = BUF_INIT;
	buf_addstr(&path, "/v1/buckets/");
	cli_escape(&path, bname, false);
	buf_t what = BUF_INIT;
	buf_addf(&what, "list %s", bname);

	char *token = xstrdup("");
	int rc = CLI_EXIT_ERR;
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
		if (archive)
			json_object_set_new(value, "flags", json_integer(8)); /* AIStore's LsArchDir */
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
	free(bname);
	return rc;
}
