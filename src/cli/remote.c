/*
 * remote.c - aisctl's remote backends: "remote attach ALIAS URL" (PUT
 * /v1/remotes/ALIAS, which the gateway applies on every node), "remote
 * detach ALIAS", "remote show"; and the --backend of "bucket create"
 * (s3://BUCKET, s3://@ALIAS/BUCKET, ais://@ALIAS/BUCKET).
 *
 * Secrets are never taken from the command line (other users see it in
 * ps): --secret-key-file and --token-file read the first line of a file.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

/* The first line of path, at most 1023 bytes. */
static int first_line(const char *path, char *out, size_t outsz)
{
	FILE *f = fopen(path, "r");
	if (!f || !fgets(out, (int)outsz, f)) {
		fprintf(stderr, "aisctl: cannot read %s: %s\n", path, f ? "empty" : strerror(errno));
		if (f)
			fclose(f);
		return AIS_ERR;
	}
	fclose(f);
	out[strcspn(out, "\r\n")] = '\0';
	return AIS_OK;
}

static int remote_call(struct cli *c, const char *method, const char *alias, const char *json, const char *what)
{
	return cli_json_call(c, method, "/v1/remotes/", alias, json, what, NULL);
}

int cli_remote_attach(struct cli *c, const struct cli_args *a)
{
	const char *alias = a->pos[0], *url = a->pos[1];
	const char *kind = cli_opt(a, "kind"), *ak = cli_opt(a, "access-key"), *skf = cli_opt(a, "secret-key-file");
	const char *tkf = cli_opt(a, "token-file"), *addr = cli_opt(a, "addressing");
	const char *region = cli_opt(a, "region"), *ca = cli_opt(a, "ca-file"), *bm = cli_opt(a, "blob-min");
	uint64_t blob_min = 0;
	char sk[1024] = "", tok[1024] = "";
	if (!kind)
		kind = "s3";
	if (strcmp(kind, "s3") && strcmp(kind, "ais"))
		return cli_usage_error(a->cmd, "bad --kind '%s': want s3 or ais", kind);
	if (!ak != !skf)
		return cli_usage_error(a->cmd, "--access-key and --secret-key-file go together");
	if (bm && num_parse_size(bm, &blob_min) != AIS_OK)
		return cli_usage_error(a->cmd, "bad --blob-min '%s': a size such as 64MiB", bm);
	if ((skf && first_line(skf, sk, sizeof(sk)) != AIS_OK) || (tkf && first_line(tkf, tok, sizeof(tok)) != AIS_OK))
		return CLI_EXIT_ERR;
	json_t *o = json_pack("{s:s,s:s}", "kind", kind, "url", url);
	if (region)
		json_object_set_new(o, "region", json_string(region));
	if (ak) {
		json_object_set_new(o, "access_key", json_string(ak));
		json_object_set_new(o, "secret_key", json_string(sk));
	}
	if (tkf)
		json_object_set_new(o, "token", json_string(tok));
	if (addr)
		json_object_set_new(o, "addressing", json_string(addr));
	if (ca)
		json_object_set_new(o, "ca_file", json_string(ca));
	if (bm)
		json_object_set_new(o, "blob_min", json_integer((json_int_t)blob_min));
	char *js = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	buf_t what = BUF_INIT;
	buf_addf(&what, "attach remote %s", alias);
	int rc = remote_call(c, "PUT", alias, js, what.ptr);
	if (rc == AIS_OK)
		printf(c->json ? "{\"attached\":\"%s\"}\n" : "attached remote %s\n", alias);
	free(js);
	buf_free(&what);
	return rc == AIS_OK ? CLI_EXIT_OK : CLI_EXIT_ERR;
}

int cli_remote_detach(struct cli *c, const struct cli_args *a)
{
	buf_t what = BUF_INIT;
	buf_addf(&what, "detach remote %s", a->pos[0]);
	int rc = remote_call(c, "DELETE", a->pos[0], NULL, what.ptr);
	if (rc == AIS_OK)
		printf(c->json ? "{\"detached\":\"%s\"}\n" : "detached remote %s\n", a->pos[0]);
	buf_free(&what);
	return rc == AIS_OK ? CLI_EXIT_OK : CLI_EXIT_ERR;
}

int cli_remote_show(struct cli *c, const struct cli_args *a)
{
	struct cli_req rq = CLI_REQ_INIT("GET", "/v1/remotes");
	struct cli_resp rs = {0};
	(void)a;
	int rc = cli_http(c, &rq, &rs);
	if (rc == AIS_OK)
		rc = cli_http_check(&rs, "show remotes");
	if (rc == AIS_OK && c->json) {
		cli_print_json_text(rs.body.ptr, rs.body.len);
	} else if (rc == AIS_OK) {
		json_t *doc = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL), *r;
		json_t *arr = json_object_get(doc, "remotes"); /* {"remotes":[...]} (docs/api.md) */
		size_t i;
		printf("%-16s %-4s %-8s %-10s %s\n", "ALIAS", "KIND", "ADDRESS", "REGION", "URL");
		json_array_foreach(arr, i, r) {
			printf("%-16s %-4s %-8s %-10s %s\n", json_string_value(json_object_get(r, "alias")),
			       json_string_value(json_object_get(r, "kind")),
			       json_string_value(json_object_get(r, "addressing")),
			       *json_string_value(json_object_get(r, "region")) ? json_string_value(json_object_get(r, "region")) : "-",
			       json_string_value(json_object_get(r, "url")));
		}
		json_decref(doc);
	}
	cli_resp_free(&rs);
	return rc == AIS_OK ? CLI_EXIT_OK : CLI_EXIT_ERR;
}

int cli_backend_parse(const char *spec, json_t **out)
{
	const char *p, *rest;
	char provider[8], alias[64];
	if (!strncmp(spec, "s3://", 5)) {
		snprintf(provider, sizeof(provider), "s3");
		rest = spec + 5;
	} else if (!strncmp(spec, "ais://", 6)) {
		snprintf(provider, sizeof(provider), "ais");
		rest = spec + 6;
	} else {
		return AIS_ERR;
	}
	if (*rest == '@') {
		p = strchr(rest, '/');
		if (!p || p == rest + 1 || (size_t)(p - rest - 1) >= sizeof(alias))
			return AIS_ERR;
		snprintf(alias, sizeof(alias), "%.*s", (int)(p - rest - 1), rest + 1);
		rest = p + 1;
	} else if (!strcmp(provider, "s3")) {
		snprintf(alias, sizeof(alias), "s3"); /* the default S3 remote */
	} else {
		return AIS_ERR; /* an aisd remote is always named */
	}
	if (!*rest || strchr(rest, '/'))
		return AIS_ERR;
	*out = json_pack("{s:s,s:s,s:s}", "provider", provider, "remote", alias, "bucket", rest);
	return AIS_OK;
}

/* "prefetch BUCKET" / "evict BUCKET": POST /v1/buckets/BUCKET
 * {"action":"prefetch-listrange"|"evict-listrange","value":{list|template|prefix}}. */
static int listrange(struct cli *c, const struct cli_args *a, const char *action)
{
	const char *bucket = a->pos[0], *list = cli_opt(a, "list"), *tpl = cli_opt(a, "template");
	const char *pfx = cli_opt(a, "prefix");
	if (!strncmp(bucket, "ais://", 6))
		bucket += 6;
	if ((list != NULL) + (tpl != NULL) + (pfx != NULL) > 1)
		return cli_usage_error(a->cmd, "one of --list, --template and --prefix");
	json_t *v = json_object();
	if (list) {
		json_object_set_new(v, "list", cli_list_of(list));
	} else if (tpl) {
		json_object_set_new(v, "template", json_string(tpl));
	} else if (pfx) {
		json_object_set_new(v, "prefix", json_string(pfx));
	}
	json_t *body = json_pack("{s:s,s:o}", "action", action, "value", v);
	char *js = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	buf_t out = BUF_INIT;
	int rc = cli_json_call(c, "POST", "/v1/buckets/", bucket, js, action, &out);
	if (rc == AIS_OK) {
		const char *kind = action[0] == 'p' ? "prefetch" : "evict";
		json_t *doc = c->json ? NULL : json_loadb(out.ptr ? out.ptr : "", out.len, 0, NULL);
		const char *id = json_string_value(json_object_get(doc, "id"));
		if (c->json)
			cli_print_json_text(out.ptr, out.len);
		else if (id)
			printf("%s %s: started on every target as job %s (aisctl job wait %s)\n", kind, bucket, id, id);
		else
			printf("%s %s: started on every target (aisctl job show %s)\n", kind, bucket, kind);
		json_decref(doc);
	}
	buf_free(&out);
	free(js);
	return rc == AIS_OK ? CLI_EXIT_OK : CLI_EXIT_ERR;
}

int cli_prefetch(struct cli *c, const struct cli_args *a) { return listrange(c, a, "prefetch-listrange"); }
int cli_evict(struct cli *c, const struct cli_args *a) { return listrange(c, a, "evict-listrange"); }
