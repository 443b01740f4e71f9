/*
 * bucket.c - aisctl's bucket commands: "bucket create", "bucket ls",
 * "bucket rm", "bucket props show" and "bucket props set", and the
 * re-encode job's start (job start ec-encode BUCKET KEY=VALUE...). Each is one
 * control request to /v1/buckets in AIStore's form (an action body; HEAD
 * for the properties, which come back as JSON in Ais-Bucket-Props); the
 * server's answer is checked and its error message printed as is. "bucket
 * rm" goes on through the list after a failure and exits non-zero if any
 * bucket could not be destroyed.
 *
 * props set turns KEY=VALUE words into one set-bprops document: dotted keys
 * nest ("mirror.copies=2" -> {"mirror":{"copies":2}}); known keys get their
 * type checked here (bool, count, checksum type, access), unknown ones go as
 * true/false, a number or a string, and the server names what it refuses.
 */
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

static const char *const checksum_types[] = {"xxhash", "md5", "sha256", "none"};

/* Sends one action (already a JSON text) to /v1/buckets/<bucket>. */
static int bucket_action(struct cli *c, const char *method, const char *bucket, const char *json,
			 const char *what)
{
	return cli_json_call(c, method, "/v1/buckets/", bucket, json, what, NULL);
}

int cli_json_call(struct cli *c, const char *method, const char *base, const char *name, const char *json,
		  const char *what, buf_t *body)
{
	buf_t path = BUF_INIT;
	buf_addstr(&path, base);
	buf_add_pct(&path, sv_from(name), false);
	struct cli_req rq = CLI_REQ_INIT(method, path.ptr);
	rq.json = json;
	struct cli_resp rs = {0};
	int rc = cli_http(c, &rq, &rs);
	if (rc == AIS_OK)
		rc = cli_http_check(&rs, what);
	if (rc == AIS_OK && body)
		buf_addsv(body, sv_of(&rs.body));
	cli_resp_free(&rs);
	buf_free(&path);
	return rc;
}

int cli_bucket_create(struct cli *c, const struct cli_args *a)
{
	const char *bucket = a->pos[0];
	const char *cks = cli_opt(a, "checksum");
	json_t *body = json_pack("{s:s}", "action", "create-bck");

	if (strncmp(bucket, "ais://", 6) == 0)
		bucket += 6;
	if (!*bucket || strchr(bucket, '/')) {
		json_decref(body);
		return cli_usage_error(a->cmd, "bad bucket name '%s'", a->pos[0]);
	}
	if (cks) {
		bool known = false;
		for (size_t i = 0; i < sizeof(checksum_types) / sizeof(checksum_types[0]); i++)
			known = known || strcmp(cks, checksum_types[i]) == 0;
		if (!known) {
			json_decref(body);
			return cli_usage_error(a->cmd,
					       "bad --checksum '%s': want xxhash, md5, sha256 or none",
					       cks);
		}
		json_object_set_new(body, "value",
				    json_pack("{s:{s:s}}", "checksum", "type", cks));
	}
	const char *be = cli_opt(a, "backend");
	if (be) {
		json_t *bk;
		if (cli_backend_parse(be, &bk) != AIS_OK) {
			json_decref(body);
			return cli_usage_error(a->cmd, "bad --backend '%s': want s3://BUCKET, s3://@ALIAS/BUCKET or ais://@ALIAS/BUCKET", be);
		}
		json_object_set_new(bk, "validate_warm_get", json_boolean(cli_opt(a, "validate-warm-get") != NULL));
		json_object_set_new(bk, "sync", json_boolean(cli_opt(a, "sync") != NULL));
		json_t *v = json_object_get(body, "value");
		if (!v)
			json_object_set_new(body, "value", v = json_object());
		json_object_set_new(v, "backend", bk);
	}
	char *json = json_dumps(body, JSON_COMPACT);
	json_decref(body);

	buf_t what = BUF_INIT;
	buf_addf(&what, "create bucket %s", bucket);
	int rc = bucket_action(c, "POST", bucket, json, what.ptr);
	if (rc == AIS_OK && c->json)
		cli_print_json(json_pack("{s:s}", "created", bucket));
	else if (rc == AIS_OK)
		printf("created bucket %s\n", bucket);
	buf_free(&what);
	free(json);
	return rc == AIS_OK ? CLI_EXIT_OK : CLI_EXIT_ERR;
}

int cli_bucket_ls(struct cli *c, const struct cli_args *a)
{
	struct cli_req rq = CLI_REQ_INIT("GET", "/v1/buckets/");
	struct cli_resp rs = {0};
	int rc = CLI_EXIT_ERR;

	if (cli_http(c, &rq, &rs) != AIS_OK || cli_http_check(&rs, "list buckets") != AIS_OK)
		goto out;
	json_error_t jerr;
	json_t *j = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, &jerr);
	if (!j) {
		cli_err("list buckets: the server's answer is not JSON: %s", jerr.text);
		goto out;
	}
	/* An array of buckets; a {"buckets":[...]} wrapper is accepted too. */
	json_t *arr = json_is_object(j) ? json_object_get(j, "buckets") : j;
	if (json_is_null(arr) || !arr) {
		arr = NULL;
	} else if (!json_is_array(arr)) {
		cli_err("list buckets: unexpected answer (not an array)");
		goto out_decref;
	}
	(void)a;
	if (c->json) {
		size_t i;
		json_t *b;
		json_array_foreach(arr, i, b)
			cli_print_json(json_is_object(b) ? json_incref(b) : json_pack("{s:O}", "name", b));
	} else {
		size_t i;
		json_t *b;
		json_array_foreach(arr, i, b)
		{
			const char *name = json_is_string(b) ? json_string_value(b)
							     : json_string_value(json_object_get(b, "name"));
			if (name)
				puts(name);
		}
	}
	rc = CLI_EXIT_OK;
out_decref:
	json_decref(j);
out:
	cli_resp_free(&rs);
	return rc;
}

/*
 * Whether bucket holds any object: one list page of one entry. AIS_OK with
 * *any set; AIS_ERR after the error was printed (a 404 included).
 */
static int bucket_has_objects(struct cli *c, const char *bucket, bool *any)
{
	buf_t path = BUF_INIT, what = BUF_INIT;
	buf_addstr(&path, "/v1/buckets/");
	buf_add_pct(&path, sv_from(bucket), false);
	buf_addf(&what, "destroy bucket %s", bucket);
	struct cli_req rq = CLI_REQ_INIT("GET", path.ptr);
	rq.json = "{\"action\":\"list\",\"value\":{\"pagesize\":1,\"props\":\"name\"}}";
	struct cli_resp rs = {0};
	int rc = cli_http(c, &rq, &rs);
	if (rc == AIS_OK)
		rc = cli_http_check(&rs, what.ptr);
	if (rc == AIS_OK) {
		json_t *page = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
		*any = json_array_size(json_object_get(page, "entries")) > 0;
		json_decref(page);
	}
	cli_resp_free(&rs);
	buf_free(&what);
	buf_free(&path);
	return rc;
}

int cli_bucket_rm(struct cli *c, const struct cli_args *a)
{
	int rc = CLI_EXIT_OK;
	json_t *done = json_array();
	for (int i = 0; i < a->npos; i++) {
		const char *bucket = a->pos[i];
		if (strncmp(bucket, "ais://", 6) == 0)
			bucket += 6;
		if (!*bucket || strchr(bucket, '/')) {
			cli_err("bad bucket name '%s'", a->pos[i]);
			rc = CLI_EXIT_ERR;
			continue;
		}
		buf_t what = BUF_INIT;
		buf_addf(&what, "destroy bucket %s", bucket);
		bool any = false;
		int crc = CLI_EXIT_OK;
		if (!cli_opt(a, "yes") && bucket_has_objects(c, bucket, &any) != AIS_OK)
			crc = CLI_EXIT_ERR;
		else if (any)
			crc = cli_confirm(a, what.ptr, "Bucket %s is not empty: destroy it and every object in it?",
					  bucket);
		if (crc != CLI_EXIT_OK) {
			if (rc == CLI_EXIT_OK || crc == CLI_EXIT_USAGE)
				rc = crc;
		} else if (bucket_action(c, "DELETE", bucket, "{\"action\":\"destroy-bck\"}", what.ptr) !=
			   AIS_OK)
			rc = CLI_EXIT_ERR;
		else if (c->json)
			json_array_append_new(done, json_string(bucket));
		else
			printf("destroyed bucket %s\n", bucket);
		buf_free(&what);
	}
	if (c->json) {
		cli_print_json(json_pack("{s:o}", "destroyed", done));
	} else {
		json_decref(done);
	}
	return rc;
}

int cli_bucket_names(struct cli *c, char ***names, size_t *n)
{
	struct cli_req rq = CLI_REQ_INIT("GET", "/v1/buckets/");
	struct cli_resp rs = {0};
	int rc = AIS_ERR;
	*names = NULL;
	*n = 0;
	if (cli_http(c, &rq, &rs) != AIS_OK || rs.status != 200)
		goto out;
	json_t *j = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
	size_t i;
	json_t *b;
	*names = xcalloc(json_array_size(j) + 1, sizeof(char *));
	json_array_foreach(j, i, b)
	{
		const char *name = json_string_value(json_object_get(b, "name"));
		if (name)
			(*names)[(*n)++] = xstrdup(name);
	}
	json_decref(j);
	rc = AIS_OK;
out:
	cli_resp_free(&rs);
	return rc;
}

/* --- props ----------------------------------------------------------------- */

/* The bucket argument without "ais://"; NULL (after a usage message) if bad. */
static const char *bucket_arg(const struct cli_args *a, const char *arg)
{
	const char *b = strncmp(arg, "ais://", 6) == 0 ? arg + 6 : arg;
	size_t n = strlen(b);
	if (n && b[n - 1] == '/')
		n--;
	if (!n || memchr(b, '/', n)) {
		cli_usage_error(a->cmd, "want a BUCKET, got '%s'", arg);
		return NULL;
	}
	return b;
}

/* HEAD /v1/buckets/B: the properties as a new JSON object, or NULL after a message. */
static json_t *props_get(struct cli *c, const char *bucket, size_t blen)
{
	char *name = xstrndup(bucket, blen);
	buf_t path = BUF_INIT, what = BUF_INIT;
	buf_addstr(&path, "/v1/buckets/");
	buf_add_pct(&path, sv_from(name), false);
	buf_addf(&what, "bucket %s", name);
	struct cli_req rq = CLI_REQ_INIT("HEAD", path.ptr);
	struct cli_resp rs = {0};
	json_t *j = NULL;
	if (cli_http(c, &rq, &rs) == AIS_OK && cli_http_check(&rs, what.ptr) == AIS_OK) {
		const char *h = cli_resp_header(&rs, "Ais-Bucket-Props");
		j = h ? json_loads(h, 0, NULL) : NULL;
		if (!json_is_object(j)) {
			cli_err("%s: the server sent no Ais-Bucket-Props JSON object", what.ptr);
			json_decref(j);
			j = NULL;
		}
	}
	cli_resp_free(&rs);
	buf_free(&what);
	buf_free(&path);
	free(name);
	return j;
}

/* Access bits by name, as the server keeps them (aisd/bmd.h). */
static const struct {
	const char *name;
	unsigned bit;
} access_bits[] = {
	{"get", 1u << 0}, {"head", 1u << 1}, {"put", 1u << 2}, {"delete", 1u << 3},
	{"list", 1u << 4}, {"patch", 1u << 5}, {"destroy", 1u << 6},
};
#define ACCESS_RO 0x13u  /* get, head, list */
#define ACCESS_ALL 0x7fu

/* "rw", "ro", or the names of the bits ("get,head") of an access mask. */
static void access_text(unsigned v, buf_t *out)
{
	if (v == ACCESS_ALL) {
		buf_addstr(out, "rw");
		return;
	}
	if (v == ACCESS_RO) {
		buf_addstr(out, "ro");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(access_bits); i++)
		if (v & access_bits[i].bit)
			buf_addf(out, "%s%s", out->len ? "," : "", access_bits[i].name);
	if (!out->len)
		buf_addstr(out, "none");
}

/* Prints "key  value" lines for every leaf of j, keys dotted from prefix. */
static void props_print(json_t *j, const char *prefix)
{
	const char *k;
	json_t *v;
	json_object_foreach(j, k, v)
	{
		buf_t key = BUF_INIT;
		buf_addf(&key, "%s%s%s", prefix, *prefix ? "." : "", k);
		if (json_is_object(v)) {
			props_print(v, key.ptr);
		} else if (!strcmp(key.ptr, "access") && json_is_integer(v)) {
			buf_t t = BUF_INIT;
			access_text((unsigned)json_integer_value(v), &t);
			printf("%-20s %s (%" JSON_INTEGER_FORMAT ")\n", key.ptr, t.ptr, json_integer_value(v));
			buf_free(&t);
		} else if (!strcmp(key.ptr, "created") && json_is_integer(v)) {
			char t[64];
			time_t secs = (time_t)(json_integer_value(v) / 1000000000LL);
			struct tm tm;
			t[0] = '\0';
			if (gmtime_r(&secs, &tm))
				strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
			printf("%-20s %s\n", key.ptr, t);
		} else if (json_is_string(v)) {
			printf("%-20s %s\n", key.ptr, json_string_value(v));
		} else {
			char *s = json_dumps(v, JSON_ENCODE_ANY);
			printf("%-20s %s\n", key.ptr, s ? s : "?");
			free(s);
		}
		buf_free(&key);
	}
}

static void props_show(struct cli *c, json_t *props)
{
	if (c->json)
		cli_print_json(json_incref(props));
	else {
		props_print(props, "");
	}
}

int cli_bucket_props_show(struct cli *c, const struct cli_args *a)
{
	const char *b = bucket_arg(a, a->pos[0]);
	if (!b)
		return CLI_EXIT_USAGE;
	size_t blen = strlen(b) - (b[strlen(b) - 1] == '/');
	json_t *props = props_get(c, b, blen);
	if (!props)
		return CLI_EXIT_ERR;
	props_show(c, props);
	json_decref(props);
	return CLI_EXIT_OK;
}

/* The JSON value of one KEY=VALUE word, or NULL with why the value is bad. */
static json_t *prop_value(const char *key, const char *val, buf_t *why)
{
	uint64_t n;
	bool is_bool = !strcmp(val, "true") || !strcmp(val, "false");
	if (!strcmp(key, "mirror.enabled") || !strcmp(key, "versioning.enabled")) {
		if (!is_bool)
			buf_addf(why, "%s takes true or false", key);
		return is_bool ? json_boolean(!strcmp(val, "true")) : NULL;
	}
	if (!strcmp(key, "mirror.copies")) {
		if (cli_parse_u64(val, 1, 32, &n) != AIS_OK) {
			buf_addf(why, "%s takes a count 1..32", key);
			return NULL;
		}
		return json_integer((json_int_t)n);
	}
	if (!strcmp(key, "versioning.history")) {
		if (!strcmp(val, "enabled") || !strcmp(val, "suspended"))
			return json_string(val);
		buf_addf(why, "%s takes enabled or suspended", key);
		return NULL;
	}
	if (!strcmp(key, "checksum.type")) {
		for (size_t i = 0; i < ARRAY_SIZE(checksum_types); i++)
			if (!strcmp(val, checksum_types[i]))
				return json_string(val);
		buf_addf(why, "%s takes xxhash, md5, sha256 or none", key);
		return NULL;
	}
	if (!strcmp(key, "access")) {
		if (!strcmp(val, "ro") || !strcmp(val, "rw"))
			return json_string(val);
		if (cli_parse_u64(val, 0, ACCESS_ALL, &n) == AIS_OK)
			return json_integer((json_int_t)n);
		/* a list of permission names: get,head,list */
		unsigned bits = 0;
		const char *p = val;
		while (*p) {
			size_t len = strcspn(p, ",");
			size_t i = 0;
			while (i < ARRAY_SIZE(access_bits) &&
			       (strlen(access_bits[i].name) != len || strncmp(p, access_bits[i].name, len)))
				i++;
			if (i == ARRAY_SIZE(access_bits)) {
				buf_addf(why, "access takes ro, rw, a mask 0..%u, or a list of get, head, put, "
					      "delete, list, patch, destroy", ACCESS_ALL);
				return NULL;
			}
			bits |= access_bits[i].bit;
			p += len + (p[len] == ',');
		}
		return json_integer((json_int_t)bits);
	}
	/* not known here: the server decides */
	if (is_bool)
		return json_boolean(!strcmp(val, "true"));
	if (cli_parse_u64(val, 0, INT64_MAX, &n) == AIS_OK)
		return json_integer((json_int_t)n);
	return json_string(val);
}

/* Sets value at the dotted key path in obj ("mirror.copies"). AIS_ERR on a clash. */
static int prop_put(json_t *obj, const char *key, json_t *value)
{
	const char *dot;
	while ((dot = strchr(key, '.'))) {
		char *part = xstrndup(key, (size_t)(dot - key));
		json_t *sub = json_object_get(obj, part);
		if (!sub) {
			sub = json_object();
			json_object_set_new(obj, part, sub);
		}
		free(part);
		if (!json_is_object(sub) || !dot[1]) {
			json_decref(value);
			return AIS_ERR;
		}
		obj = sub;
		key = dot + 1;
	}
	if (!*key || json_object_get(obj, key)) {
		json_decref(value);
		return AIS_ERR;
	}
	json_object_set_new(obj, key, value);
	return AIS_OK;
}

/* The KEY=VALUE words a->pos[from..] as one props document; NULL after a
 * usage error. */
static json_t *props_doc(const struct cli_args *a, int from)
{
	json_t *value = json_object();
	for (int i = from; i < a->npos; i++) {
		const char *eq = strchr(a->pos[i], '=');
		if (!eq || eq == a->pos[i]) {
			cli_usage_error(a->cmd, "want KEY=VALUE, got '%s'", a->pos[i]);
			json_decref(value);
			return NULL;
		}
		char *key = xstrndup(a->pos[i], (size_t)(eq - a->pos[i]));
		buf_t why = BUF_INIT;
		json_t *v = prop_value(key, eq + 1, &why);
		bool ok = v != NULL;
		if (!ok)
			cli_usage_error(a->cmd, "bad '%s': %s", a->pos[i], why.ptr);
		else if (!(ok = prop_put(value, key, v) == AIS_OK))
			cli_usage_error(a->cmd, "bad key in '%s' (empty part, or set twice)", a->pos[i]);
		buf_free(&why);
		free(key);
		if (!ok) {
			json_decref(value);
			return NULL;
		}
	}
	return value;
}

/* METHOD {"action":ACTION,"value":VALUE} to bucket name; what: the start
 * of the error message ("set props of"). AIS_OK or AIS_ERR (printed). */
static int props_action(struct cli *c, const char *method, const char *action, const char *name, json_t *value,
			const char *what)
{
	json_t *body = json_pack("{s:s,s:O}", "action", action, "value", value);
	char *json = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	buf_t w = BUF_INIT;
	buf_addf(&w, "%s bucket %s", what, name);
	int rc = bucket_action(c, method, name, json, w.ptr);
	buf_free(&w);
	free(json);
	return rc;
}

int cli_bucket_props_set(struct cli *c, const struct cli_args *a)
{
	const char *b = bucket_arg(a, a->pos[0]);
	if (!b)
		return CLI_EXIT_USAGE;
	size_t blen = strlen(b) - (b[strlen(b) - 1] == '/');
	json_t *value = props_doc(a, 1);
	if (!value)
		return CLI_EXIT_USAGE;

	char *name = xstrndup(b, blen);
	int rc = CLI_EXIT_ERR;
	if (props_action(c, "PATCH", "set-bprops", name, value, "set props of") == AIS_OK) {
		/* show what the bucket has now */
		json_t *props = props_get(c, b, blen);
		if (props) {
			props_show(c, props);
			json_decref(props);
			rc = CLI_EXIT_OK;
		}
	}
	free(name);
	json_decref(value);
	return rc;
}

int cli_bucket_encode(struct cli *c, const struct cli_args *a)
{
	if (a->npos < 3)
		return cli_usage_error(a->cmd, "want: job start ec-encode BUCKET ec.enabled=true ec.data_slices=D "
					       "ec.parity_slices=P ... (or ec.enabled=false mirror.enabled=true "
					       "mirror.copies=N)");
	const char *b = bucket_arg(a, a->pos[1]);
	if (!b)
		return CLI_EXIT_USAGE;
	json_t *value = props_doc(a, 2);
	if (!value)
		return CLI_EXIT_USAGE;
	char *name = xstrndup(b, strlen(b) - (b[strlen(b) - 1] == '/'));
	int rc = CLI_EXIT_ERR;
	if (props_action(c, "POST", "ec-encode", name, value, "ec-encode of") == AIS_OK) {
		printf("ec-encode of bucket %s started (progress: aisctl job show ec-encode)\n", name);
		rc = CLI_EXIT_OK;
	}
	free(name);
	json_decref(value);
	return rc;
}

/*
 * POST /v1/buckets/SRC?bck_to=DST {"action":ACTION,"value":v} (v is
 * taken): the copy-bck or etl-bck job on every target. The job's id goes
 * to *id and the server's answer to answer (either may be NULL). AIS_OK or
 * AIS_ERR (said).
 */
int cli_copy_bck(struct cli *c, const char *action, const char *src, const char *dst, json_t *v, char **id,
		 buf_t *answer)
{
	json_t *body = json_pack("{s:s,s:o}", "action", action, "value", v);
	char *js = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	buf_t path = BUF_INIT;
	buf_addstr(&path, "/v1/buckets/");
	buf_add_pct(&path, sv_from(src), false);
	buf_addstr(&path, "?bck_to=");
	buf_add_pct(&path, sv_from(dst), false);
	struct cli_req rq = CLI_REQ_INIT("POST", path.ptr);
	rq.json = js;
	struct cli_resp rs = {0};
	int rc = cli_http(c, &rq, &rs);
	if (rc == AIS_OK)
		rc = cli_http_check(&rs, action);
	if (rc == AIS_OK) {
		json_t *doc = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
		const char *s = json_string_value(json_object_get(doc, "id"));
		if (id)
			*id = xstrdup(s ? s : "?");
		if (answer)
			buf_addsv(answer, sv_of(&rs.body));
		json_decref(doc);
	}
	cli_resp_free(&rs);
	buf_free(&path);
	free(js);
	return rc;
}

/* "bucket cp SRC DST [..]" and "etl bucket NAME SRC DST [..]": the value
 * {"id":NAME,"prefix","template","ext":{"jpg":"npy"},"dry_run","coer"}
 * of cli_copy_bck (the identity transform for a copy). */
static int xcopy(struct cli *c, const struct cli_args *a, const char *etl, const char *src, const char *dst)
{
	const char *pfx = cli_opt(a, "prefix"), *tpl = cli_opt(a, "template"), *ext = cli_opt(a, "ext");
	bool dry = cli_opt(a, "dry-run") != NULL, cont = cli_opt(a, "continue-on-error") != NULL;
	bool stop = cli_opt(a, "stop-on-error") != NULL;
	const char *action = etl ? "etl-bck" : "copy-bck";
	if (!strncmp(src, "ais://", 6))
		src += 6;
	if (!strncmp(dst, "ais://", 6))
		dst += 6;
	if (!*src || strchr(src, '/') || !*dst || strchr(dst, '/'))
		return cli_usage_error(a->cmd, "two bucket names, not '%s' '%s'", src, dst);
	if (!strcmp(src, dst))
		return cli_usage_error(a->cmd, "the destination is the source");
	if (cont && stop)
		return cli_usage_error(a->cmd, "--continue-on-error or --stop-on-error, not both");
	json_t *v = json_pack("{s:b}", "dry_run", dry);
	if (etl)
		json_object_set_new(v, "id", json_string(etl));
	if (pfx)
		json_object_set_new(v, "prefix", json_string(pfx));
	if (tpl)
		json_object_set_new(v, "template", json_string(tpl));
	if (cont || stop)
		json_object_set_new(v, "coer", json_boolean(cont));
	if (ext) { /* ".jpg:.npy[,.png:.npy]" */
		json_t *m = json_object();
		for (const char *p = ext; *p;) {
			const char *end = strchr(p, ','), *colon;
			size_t len = end ? (size_t)(end - p) : strlen(p);
			colon = memchr(p, ':', len);
			if (!colon || colon == p || colon == p + len - 1) {
				json_decref(m);
				json_decref(v);
				return cli_usage_error(a->cmd, "bad --ext '%s': want .FROM:.TO[,.FROM:.TO]", ext);
			}
			char *from = xstrndup(p, (size_t)(colon - p));
			json_object_set_new(m, from, json_stringn(colon + 1, len - (size_t)(colon - p) - 1));
			free(from);
			p += len + (end != NULL);
		}
		json_object_set_new(v, "ext", m);
	}
	char *id = NULL;
	buf_t ans = BUF_INIT;
	int rc = cli_copy_bck(c, action, src, dst, v, &id, &ans);
	if (rc == AIS_OK && c->json)
		cli_print_json_text(ans.ptr, ans.len);
	else if (rc == AIS_OK)
		printf("%s%s %s -> %s%s: started on every target as job %s (aisctl job wait %s)\n",
		       etl ? "transform through " : "copy", etl ? etl : "", src, dst, dry ? " (dry run)" : "", id, id);
	free(id);
	buf_free(&ans);
	return rc == AIS_OK ? CLI_EXIT_OK : CLI_EXIT_ERR;
}

int cli_bucket_cp(struct cli *c, const struct cli_args *a) { return xcopy(c, a, NULL, a->pos[0], a->pos[1]); }

int cli_etl_bucket(struct cli *c, const struct cli_args *a) { return xcopy(c, a, a->pos[0], a->pos[1], a->pos[2]); }
