/*
 * recursive.c - aisctl's commands over many objects at once, named by a
 * prefix (or a template): "rm -r BUCKET/PREFIX" (also rm --prefix and
 * --template) and "get -r BUCKET[/PREFIX] DIR". Both first list the names
 * (cli_list_each: the bucket's listing, page by page), then act on each.
 *
 * Naming: "get -r b/2024 DIR" writes b/2024/a/x.jpg as DIR/a/x.jpg: a
 * prefix is a folder (a '/' is added when it lacks one), the inverse of
 * "put -r DIR b/2024". A name whose path under DIR would leave DIR (an
 * absolute name, a ".." or "." part, an empty part) is refused with a line
 * on stderr and counts as failed: nothing is ever written outside DIR.
 *
 * get -r downloads --conc objects at a time on one curl multi handle
 * (connections kept and reused), as put -r uploads.
 *
 * Guarantees: each file is downloaded to a temporary file next to it and
 * renamed into place when its whole body arrived (cli_tmp_open/finish); one
 * failed object does not stop the others; the exit status is non-zero when
 * any failed. rm of more than one object asks first (cli_confirm) unless
 * --yes.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

#define TPL_MAX_NAMES    1000000
#define GET_CONC_DEFAULT 8
#define GET_CONC_MAX     256

int cli_list_each(struct cli *c, const char *bucket, const char *prefix, const char *props,
		  int (*fn)(json_t *entry, void *arg), void *arg)
{
	buf_t path = BUF_INIT, what = BUF_INIT;
	buf_addstr(&path, "/v1/buckets/");
	buf_add_pct(&path, sv_from(bucket), false);
	buf_addf(&what, "list %s", bucket);
	char *token = xstrdup("");
	int rc = AIS_ERR;
	for (;;) {
		json_t *value = json_pack("{s:s}", "props", props);
		if (prefix && *prefix)
			json_object_set_new(value, "prefix", json_string(prefix));
		if (*token)
			json_object_set_new(value, "continuation_token", json_string(token));
		json_t *body = json_pack("{s:s,s:o}", "action", "list", "value", value);
		char *json = json_dumps(body, JSON_COMPACT);
		json_decref(body);
		struct cli_req rq = CLI_REQ_INIT("GET", path.ptr);
		rq.json = json;
		struct cli_resp rs = {0};
		bool ok = cli_http(c, &rq, &rs) == AIS_OK && cli_http_check(&rs, what.ptr) == AIS_OK;
		free(json);
		json_t *page = ok ? json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL) : NULL;
		cli_resp_free(&rs);
		if (!ok)
			break;
		json_t *entries = json_object_get(page, "entries");
		if (!json_is_object(page) || (entries && !json_is_array(entries) && !json_is_null(entries))) {
			cli_err("%s: the server's answer is not a listing", what.ptr);
			json_decref(page);
			break;
		}
		size_t i;
		json_t *e;
		int frc = AIS_OK;
		json_array_foreach(entries, i, e) {
			if (json_is_string(json_object_get(e, "name")) && (frc = fn(e, arg)) != AIS_OK)
				break;
		}
		const char *next = json_string_value(json_object_get(page, "continuation_token"));
		if (frc != AIS_OK || !next || !*next || !strcmp(next, token)) {
			if (frc == AIS_OK && next && *next)
				cli_err("%s: the server returned the same continuation token twice", what.ptr);
			else if (frc == AIS_OK)
				rc = AIS_OK;
			json_decref(page);
			break;
		}
		free(token);
		token = xstrdup(next);
		json_decref(page);
	}
	free(token);
	buf_free(&what);
	buf_free(&path);
	return rc;
}

/* Names collected from a listing. */
struct names {
	char **v;
	size_t n, cap;
};

static void names_add(struct names *ns, const char *s, size_t len)
{
	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? ns->cap * 2 : 64;
		ns->v = xrealloc(ns->v, ns->cap * sizeof(*ns->v));
	}
	ns->v[ns->n++] = xstrndup(s, len);
}

static void names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
}

static int collect_name(json_t *e, void *arg)
{
	const char *n = json_string_value(json_object_get(e, "name"));
	names_add(arg, n, strlen(n));
	return AIS_OK;
}

/*
 * Expands a template with one brace range, "pre{0000..0999}post" (the
 * width of the first number pads every name), into ns. AIS_OK, or AIS_ERR
 * when it is not one.
 */
static int tpl_expand(const char *tpl, struct names *ns)
{
	const char *o = strchr(tpl, '{'), *dots = o ? strstr(o, "..") : NULL;
	const char *cl = dots ? strchr(dots, '}') : NULL;
	uint64_t from, to;
	if (!cl || strchr(cl + 1, '{') || num_parse_u64(o + 1, (size_t)(dots - o - 1), 0, UINT64_MAX, &from) != AIS_OK ||
	    num_parse_u64(dots + 2, (size_t)(cl - dots - 2), 0, UINT64_MAX, &to) != AIS_OK || from > to ||
	    to - from >= TPL_MAX_NAMES)
		return AIS_ERR;
	int width = (int)(dots - o - 1);
	for (uint64_t k = from; k <= to; k++) {
		buf_t b = BUF_INIT;
		buf_addf(&b, "%.*s%0*llu%s", (int)(o - tpl), tpl, width, (unsigned long long)k, cl + 1);
		names_add(ns, b.ptr, b.len);
		buf_free(&b);
	}
	return AIS_OK;
}

/* --- rm -r, rm --prefix, rm --template ---------------------------------------- */

int cli_object_rm_many(struct cli *c, const struct cli_args *a)
{
	const char *pfx = cli_opt(a, "prefix"), *tpl = cli_opt(a, "template");
	if (a->npos != 1)
		return cli_usage_error(a->cmd, "-r, --prefix and --template take one BUCKET[/PREFIX]");
	if (pfx && tpl)
		return cli_usage_error(a->cmd, "--prefix or --template, not both");
	char *bucket, *prefix;
	if (cli_split_uname(a->pos[0], false, &bucket, &prefix) != AIS_OK)
		return cli_usage_error(a->cmd, "want BUCKET[/PREFIX], got '%s'", a->pos[0]);
	int rc = CLI_EXIT_ERR;
	struct names ns = {0};
	if ((pfx || tpl) && *prefix) {
		rc = cli_usage_error(a->cmd, "the prefix goes in BUCKET/PREFIX or in --prefix, not both");
		goto out;
	}
	if (tpl) {
		if (tpl_expand(tpl, &ns) != AIS_OK) {
			rc = cli_usage_error(a->cmd, "bad --template '%s': want PRE{FROM..TO}POST (at most %d names)",
					     tpl, TPL_MAX_NAMES);
			goto out;
		}
	} else if (cli_list_each(c, bucket, pfx ? pfx : prefix, "name", collect_name, &ns) != AIS_OK) {
		goto out;
	}
	if (ns.n > 1) {
		buf_t what = BUF_INIT;
		buf_addf(&what, "rm %s", a->pos[0]);
		rc = cli_confirm(a, what.ptr, "Delete %zu objects of bucket %s (%s%s)?", ns.n, bucket,
				 tpl ? "template " : "prefix ", tpl ? tpl : (pfx ? pfx : prefix));
		buf_free(&what);
		if (rc != CLI_EXIT_OK)
			goto out;
	}
	uint64_t deleted = 0, failed = 0, absent = 0;
	json_t *done = json_array();
	for (size_t i = 0; i < ns.n; i++) {
		buf_t path = BUF_INIT, what = BUF_INIT;
		cli_object_path(&path, bucket, ns.v[i]);
		buf_addf(&what, "rm %s/%s", bucket, ns.v[i]);
		struct cli_req rq = CLI_REQ_INIT("DELETE", path.ptr);
		struct cli_resp rs = {0};
		if (cli_http(c, &rq, &rs) != AIS_OK) {
			failed++;
		} else if (tpl && rs.status == 404) {
			absent++; /* a template names what may not exist */
		} else if (cli_http_check(&rs, what.ptr) != AIS_OK) {
			failed++;
		} else {
			deleted++;
			if (c->json)
				json_array_append_new(done, json_pack("{s:s,s:s}", "bucket", bucket, "name", ns.v[i]));
			else if (c->verbose)
				printf("deleted %s/%s\n", bucket, ns.v[i]);
		}
		cli_resp_free(&rs);
		buf_free(&what);
		buf_free(&path);
	}
	if (c->json) {
		cli_print_json(json_pack("{s:o}", "deleted", done));
	} else {
		json_decref(done);
		printf("deleted %llu object%s from %s%s", (unsigned long long)deleted, deleted == 1 ? "" : "s", bucket,
		       failed || absent ? "" : "\n");
		if (absent)
			printf(", %llu not there%s", (unsigned long long)absent, failed ? "" : "\n");
		if (failed)
			printf(", %llu failed\n", (unsigned long long)failed);
	}
	rc = failed ? CLI_EXIT_ERR : CLI_EXIT_OK;
out:
	names_free(&ns);
	free(bucket);
	free(prefix);
	return rc;
}

/* --- get -r -------------------------------------------------------------------- */

bool cli_rel_name_safe(const char *rel)
{
	if (!*rel || *rel == '/')
		return false;
	for (const char *p = rel;;) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!p[n])
			return true;
		p += n + 1;
	}
}

/* Creates the folders of path dir/rel above its last part (mkdir -p).
 * AIS_OK, or AIS_ERR after a message. */
int cli_make_parents(const char *dir, const char *rel)
{
	buf_t p = BUF_INIT;
	buf_addstr(&p, dir);
	int rc = AIS_OK;
	for (const char *s = rel; rc == AIS_OK;) {
		const char *slash = strchr(s, '/');
		if (!slash)
			break;
		buf_addch(&p, '/');
		buf_add(&p, s, (size_t)(slash - s));
		struct stat st;
		if (mkdir(p.ptr, 0777) != 0 && (errno != EEXIST || lstat(p.ptr, &st) != 0 || !S_ISDIR(st.st_mode))) {
			cli_err("%s: %s", p.ptr, errno == EEXIST ? "exists and is not a folder" : strerror(errno));
			rc = AIS_ERR;
		}
		s = slash + 1;
	}
	buf_free(&p);
	return rc;
}

/* Downloads bucket/name into dest (through a temporary file). *size: bytes. */
int cli_get_to_file(struct cli *c, const char *bucket, const char *name, const char *dest, uint64_t *size)
{
	buf_t tmp = BUF_INIT, path = BUF_INIT, what = BUF_INIT;
	int fd = cli_tmp_open(dest, &tmp);
	if (fd < 0) {
		buf_free(&tmp);
		return AIS_ERR;
	}
	cli_object_path(&path, bucket, name);
	buf_addf(&what, "get %s/%s", bucket, name);
	struct cli_req rq = CLI_REQ_INIT("GET", path.ptr);
	rq.sink_fd = fd;
	struct cli_resp rs = {0};
	bool ok = cli_http(c, &rq, &rs) == AIS_OK && cli_http_check(&rs, what.ptr) == AIS_OK;
	*size = rs.sunk;
	ok = cli_tmp_finish(fd, tmp.ptr, dest, ok);
	cli_resp_free(&rs);
	buf_free(&what);
	buf_free(&path);
	buf_free(&tmp);
	return ok ? AIS_OK : AIS_ERR;
}

/* get -r's downloads, conc at a time on one curl multi handle. */
struct dget {
	struct cli *c;
	const char *bucket, *dir;
	struct names *ns;
	size_t plen; /* the prefix stripped from each name */
	size_t next;
	uint64_t files, bytes, failed;
};

struct dslot {
	CURL *h;
	bool busy;
	int fd;
	buf_t tmp, dest, path, name;
	struct cli_req rq;
	struct cli_resp rs;
	struct cli_xfer x;
};

/* Starts name g->next on slot s: AIS_OK, or AIS_ERR (counted, said). */
static int dslot_start(struct dget *g, struct dslot *s, CURLM *m)
{
	const char *name = g->ns->v[g->next++], *rel = name + g->plen;
	if (!cli_rel_name_safe(rel)) {
		cli_err("skipping %s/%s: its name would be written outside %s", g->bucket, name, g->dir);
		g->failed++;
		return AIS_ERR;
	}
	buf_reset(&s->dest);
	buf_reset(&s->tmp);
	buf_reset(&s->path);
	buf_reset(&s->name);
	buf_addf(&s->dest, "%s/%s", g->dir, rel);
	buf_addstr(&s->name, name);
	if (cli_make_parents(g->dir, rel) != AIS_OK || (s->fd = cli_tmp_open(s->dest.ptr, &s->tmp)) < 0) {
		g->failed++;
		return AIS_ERR;
	}
	cli_object_path(&s->path, g->bucket, name);
	s->rq = CLI_REQ_INIT("GET", s->path.ptr);
	s->rq.sink_fd = s->fd;
	s->rs = (struct cli_resp){0};
	cli_xfer_setup(g->c, s->h, &s->rq, &s->rs, &s->x);
	if (curl_multi_add_handle(m, s->h) != CURLM_OK) {
		cli_xfer_finish(&s->x, CURLE_FAILED_INIT);
		cli_resp_free(&s->rs);
		cli_tmp_finish(s->fd, s->tmp.ptr, s->dest.ptr, false);
		g->failed++;
		return AIS_ERR;
	}
	s->busy = true;
	return AIS_OK;
}

/* The download of slot s ended with cc: checked, renamed into place (or removed). */
static void dslot_done(struct dget *g, struct dslot *s, CURLM *m, CURLcode cc)
{
	curl_multi_remove_handle(m, s->h);
	buf_t what = BUF_INIT;
	buf_addf(&what, "get %s/%s", g->bucket, s->name.ptr);
	bool ok = cli_xfer_finish(&s->x, cc) == AIS_OK && cli_http_check(&s->rs, what.ptr) == AIS_OK;
	if (cli_tmp_finish(s->fd, s->tmp.ptr, s->dest.ptr, ok)) {
		g->files++;
		g->bytes += s->rs.sunk;
	} else {
		g->failed++;
	}
	buf_free(&what);
	cli_resp_free(&s->rs);
	s->fd = -1;
	s->busy = false;
}

/* Runs every download of g, conc at a time. AIS_OK, or AIS_ERR if libcurl failed. */
static int dget_run(struct dget *g, size_t conc, struct cli_progress *prog)
{
	CURLM *m = curl_multi_init();
	if (!m)
		return AIS_ERR;
	struct dslot *slots = xcalloc(conc, sizeof(*slots));
	int rc = AIS_OK;
	for (size_t k = 0; k < conc; k++) {
		slots[k].fd = -1;
		if (!(slots[k].h = curl_easy_init()))
			rc = AIS_ERR;
	}
	size_t active = 0;
	while (rc == AIS_OK && (g->next < g->ns->n || active > 0)) {
		for (size_t k = 0; k < conc && g->next < g->ns->n; k++)
			if (!slots[k].busy && dslot_start(g, &slots[k], m) == AIS_OK)
				active++;
		int running;
		if (curl_multi_perform(m, &running) != CURLM_OK) {
			rc = AIS_ERR;
			break;
		}
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct cli_xfer *x = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			struct dslot *s = (struct dslot *)((char *)x - offsetof(struct dslot, x));
			dslot_done(g, s, m, msg->data.result);
			active--;
		}
		cli_progress_set(prog, g->bytes, g->files);
		if (active && curl_multi_poll(m, NULL, 0, 100, NULL) != CURLM_OK)
			rc = AIS_ERR;
	}
	for (size_t k = 0; k < conc; k++) {
		if (slots[k].busy) {
			curl_multi_remove_handle(m, slots[k].h);
			cli_xfer_finish(&slots[k].x, CURLE_ABORTED_BY_CALLBACK);
			cli_resp_free(&slots[k].rs);
			cli_tmp_finish(slots[k].fd, slots[k].tmp.ptr, slots[k].dest.ptr, false);
		}
		if (slots[k].h)
			curl_easy_cleanup(slots[k].h);
		buf_free(&slots[k].tmp);
		buf_free(&slots[k].dest);
		buf_free(&slots[k].path);
		buf_free(&slots[k].name);
	}
	free(slots);
	curl_multi_cleanup(m);
	return rc;
}

int cli_object_get_dir(struct cli *c, const struct cli_args *a)
{
	if (a->npos != 2)
		return cli_usage_error(a->cmd, "get -r wants BUCKET[/PREFIX] DIR");
	if (cli_opt(a, "range"))
		return cli_usage_error(a->cmd, "--range goes with one object, not -r");
	char *bucket, *prefix;
	if (cli_split_uname(a->pos[0], false, &bucket, &prefix) != AIS_OK)
		return cli_usage_error(a->cmd, "want BUCKET[/PREFIX], got '%s'", a->pos[0]);
	const char *dir = a->pos[1];
	uint64_t conc = GET_CONC_DEFAULT;
	const char *cs = cli_opt(a, "conc");
	if (cs && cli_parse_u64(cs, 1, GET_CONC_MAX, &conc) != AIS_OK) {
		free(bucket);
		free(prefix);
		return cli_usage_error(a->cmd, "bad --conc '%s': want 1..%d", cs, GET_CONC_MAX);
	}
	buf_t pfx = BUF_INIT;
	buf_addstr(&pfx, prefix);
	if (pfx.len && pfx.ptr[pfx.len - 1] != '/')
		buf_addch(&pfx, '/');
	struct names ns = {0};
	int rc = CLI_EXIT_ERR;
	struct stat st;
	if (mkdir(dir, 0777) != 0 && (errno != EEXIST || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
		cli_err("%s: %s", dir, errno == EEXIST ? "exists and is not a folder" : strerror(errno));
		goto out;
	}
	if (cli_list_each(c, bucket, pfx.ptr ? pfx.ptr : "", "name", collect_name, &ns) != AIS_OK)
		goto out;
	uint64_t files = 0, bytes = 0, failed = 0;
	int64_t t0 = time_mono_ns();
	struct cli_progress prog;
	cli_progress_start(&prog, c->progress, a->pos[0], 0, ns.n);
	struct dget g = {.c = c, .bucket = bucket, .dir = dir, .ns = &ns, .plen = pfx.len};
	if (dget_run(&g, (size_t)MIN(conc, (uint64_t)(ns.n ? ns.n : 1)), &prog) != AIS_OK) {
		cli_err("get -r: libcurl failed");
		g.failed++;
	}
	files = g.files;
	bytes = g.bytes;
	failed = g.failed;
	cli_progress_end(&prog);
	int64_t ns_el = time_mono_ns() - t0;
	if (c->json) {
		cli_print_json(json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:f}", "bucket", bucket, "prefix",
					 pfx.ptr ? pfx.ptr : "", "dir", dir, "files", (json_int_t)files, "bytes",
					 (json_int_t)bytes, "failed", (json_int_t)failed, "seconds",
					 (double)ns_el / 1e9));
	} else {
		char hs[32], rate[32];
		cli_human_size(bytes, hs, sizeof(hs));
		cli_human_rate(bytes, ns_el, rate, sizeof(rate));
		printf("got %llu file%s (%s) from %s/%s to %s in %.2fs (%s)%s", (unsigned long long)files,
		       files == 1 ? "" : "s", hs, bucket, pfx.ptr ? pfx.ptr : "", dir, (double)ns_el / 1e9, rate,
		       failed ? "" : "\n");
		if (failed)
			printf(", %llu failed\n", (unsigned long long)failed);
	}
	rc = failed ? CLI_EXIT_ERR : CLI_EXIT_OK;
out:
	names_free(&ns);
	buf_free(&pfx);
	free(bucket);
	free(prefix);
	return rc;
}

/* --- cp ------------------------------------------------------------------------- */

int cli_object_cp(struct cli *c, const struct cli_args *a)
{
	char *sb, *sp, *db, *dp;
	if (cli_split_uname(a->pos[0], false, &sb, &sp) != AIS_OK)
		return cli_usage_error(a->cmd, "want BUCKET[/PREFIX], got '%s'", a->pos[0]);
	if (cli_split_uname(a->pos[1], false, &db, &dp) != AIS_OK) {
		free(sb);
		free(sp);
		return cli_usage_error(a->cmd, "want BUCKET2[/PREFIX], got '%s'", a->pos[1]);
	}
	int rc = CLI_EXIT_USAGE;
	buf_t pfx = BUF_INIT;
	buf_addstr(&pfx, sp);
	if (pfx.len && pfx.ptr[pfx.len - 1] != '/')
		buf_addch(&pfx, '/');
	size_t dl = strlen(dp);
	if (!cli_opt(a, "recursive")) {
		/* no native route copies one object inside the cluster (S3
		 * CopyObject does, but wants SigV4); moving its bytes through
		 * here would be a download and an upload: not done */
		rc = cli_usage_error(a->cmd,
				     "the cluster has no native server-side copy of one object: copy by prefix with "
				     "'aisctl cp -r BUCKET/PREFIX BUCKET2' (the copy-bck job, names kept), or use an S3 "
				     "client's CopyObject (aws s3 cp s3://B/O s3://B2/O2)");
		goto out;
	}
	if (dl && (strncmp(dp, pfx.ptr ? pfx.ptr : "", dl) || (pfx.len != dl && pfx.len != dl + 1))) {
		rc = cli_usage_error(a->cmd, "the cluster's copy keeps names: the destination is BUCKET2 (or "
					     "BUCKET2/%s), not '%s'", sp, a->pos[1]);
		goto out;
	}
	if (!strcmp(sb, db)) {
		rc = cli_usage_error(a->cmd, "the destination bucket is the source");
		goto out;
	}
	char *id = NULL;
	rc = CLI_EXIT_ERR;
	json_t *v = json_pack("{s:b}", "dry_run", false);
	if (pfx.ptr && *pfx.ptr)
		json_object_set_new(v, "prefix", json_string(pfx.ptr));
	if (cli_copy_bck(c, "copy-bck", sb, db, v, &id, NULL) != AIS_OK)
		goto out;
	if (!c->json)
		fprintf(stderr, "copy %s/%s -> %s: job %s on every target\n", sb, pfx.ptr ? pfx.ptr : "", db, id);
	/* wait for it as "job wait ID" does */
	char w0[] = "job", w1[] = "wait";
	char *argv[] = {w0, w1};
	int used = 0;
	const struct cli_cmd *wait = cli_cmd_lookup(2, argv, &used);
	struct cli_args wa = {.cmd = wait, .pos = &id, .npos = 1};
	rc = wait ? wait->fn(c, &wa) : CLI_EXIT_ERR;
	free(id);
out:
	buf_free(&pfx);
	free(sb);
	free(sp);
	free(db);
	free(dp);
	return rc;
}
