/*
 * complete.c - "aisctl __complete -- CWORD WORD...": the candidates for
 * word CWORD of the command line WORD... (the words after "aisctl", as bash
 * splits them), one per line, for tools/completion/aisctl.bash. Everything
 * comes from the command table (main.c): command and subcommand names,
 * options, and what each positional is, read from the args string:
 *
 *   BUCKET          bucket names (asked from the cluster)
 *   BUCKET/OBJECT   "bucket/" while no '/' was typed, then object names
 *   FILE, DIR, OUT  the line "__files__": the shell completes file names
 *   NODE            node ids from the cluster map
 *   KEY=VALUE       bucket property keys ("mirror.copies="), or for
 *                   "config set" the run-time config keys ("log.level=")
 *   a|b             the words a and b
 *
 * A line "__nospace__" asks the shell not to add a space (after "bucket/"
 * or "key="). Questions to the cluster are bounded by COMPLETE_TIMEOUT_S
 * and a failure only means fewer candidates: completion never prints an
 * error and always exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

#define COMPLETE_TIMEOUT_S   3L
#define COMPLETE_MAX_OBJECTS 200

static const char *const prop_keys[] = {"mirror.enabled", "mirror.copies", "versioning.enabled", "versioning.history",
                                        "checksum.type", "access"};
static const char *const config_keys[] = {"log.level", "log.access", "net.rate_limit",
                                          "net.rate_burst"};

/* Prints s if it starts with cur. */
static void offer(const char *cur, const char *s)
{
	if (strncmp(s, cur, strlen(cur)) == 0)
		puts(s);
}

static void offer_opts(const char *cur, const struct cli_opt *o)
{
	for (size_t i = 0; o && o[i].name; i++) {
		buf_t b = BUF_INIT;
		buf_addf(&b, "--%s", o[i].name);
		offer(cur, b.ptr);
		buf_free(&b);
	}
}

/* The option named by word (a global one, or of cmd), or NULL. */
static const struct cli_opt *find_opt(const struct cli_cmd *cmd, const char *word)
{
	const struct cli_opt *sets[2] = {cmd ? cmd->opts : NULL, cli_global_options()};
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; sets[k] && sets[k][i].name; i++) {
			const struct cli_opt *o = &sets[k][i];
			if (word[1] == '-') {
				size_t n = strcspn(word + 2, "=");
				if (strlen(o->name) == n && !strncmp(word + 2, o->name, n))
					return o;
			} else if (o->shrt && word[1] == o->shrt && !word[2]) {
				return o;
			}
		}
	}
	return NULL;
}

static void offer_buckets(struct cli *c, const char *cur, bool slash)
{
	char **names;
	size_t n;
	if (cli_bucket_names(c, &names, &n) != AIS_OK)
		return;
	for (size_t i = 0; i < n; i++) {
		buf_t b = BUF_INIT;
		buf_addf(&b, "%s%s", names[i], slash ? "/" : "");
		offer(cur, b.ptr);
		buf_free(&b);
		free(names[i]);
	}
	free(names);
	if (slash)
		puts("__nospace__");
}

/* Objects of bucket whose names start with prefix, as "bucket/name". */
static void offer_objects(struct cli *c, const char *bucket, const char *prefix)
{
	buf_t path = BUF_INIT;
	buf_addstr(&path, "/v1/buckets/");
	buf_add_pct(&path, sv_from(bucket), false);
	json_t *body = json_pack("{s:s,s:{s:s,s:i,s:s}}", "action", "list", "value", "prefix", prefix,
	                         "pagesize", COMPLETE_MAX_OBJECTS, "props", "name");
	char *json = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	struct cli_req rq = CLI_REQ_INIT("GET", path.ptr);
	rq.json = json;
	struct cli_resp rs = {0};
	if (cli_http(c, &rq, &rs) == AIS_OK && rs.status == 200) {
		json_t *page = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
		size_t i;
		json_t *e;
		json_array_foreach(json_object_get(page, "entries"), i, e)
		{
			const char *name = json_string_value(json_object_get(e, "name"));
			if (name)
				printf("%s/%s\n", bucket, name);
		}
		json_decref(page);
	}
	cli_resp_free(&rs);
	free(json);
	buf_free(&path);
}

static void offer_nodes(struct cli *c, const char *cur)
{
	struct cli_req rq = CLI_REQ_INIT("GET", "/v1/cluster?what=smap");
	struct cli_resp rs = {0};
	if (cli_http(c, &rq, &rs) == AIS_OK && rs.status == 200) {
		json_t *m = json_loadb(rs.body.ptr ? rs.body.ptr : "", rs.body.len, 0, NULL);
		size_t i;
		json_t *nd;
		json_array_foreach(json_object_get(m, "nodes"), i, nd)
		{
			const char *id = json_string_value(json_object_get(nd, "id"));
			if (id)
				offer(cur, id);
		}
		json_decref(m);
	}
	cli_resp_free(&rs);
}

/* Candidates for positional k of cmd, from its args string. */
static void offer_positional(struct cli *c, const struct cli_cmd *cmd, int k, const char *cur)
{
	/* the k-th word of args; a last one ending in "..." repeats */
	char *args = xstrdup(cmd->args);
	char *tok = NULL;
	int i = 0;
	for (char *t = args; *t; i++) {
		size_t n = strcspn(t, " ");
		bool last = t[n] == '\0';
		t[n] = '\0';
		if (i == k || (last && i < k && n >= 3 && !strcmp(t + n - 3, "...")))
			tok = t;
		if (last)
			break;
		t += n + 1;
	}
	if (!tok)
		goto out;
	if (strstr(tok, "BUCKET")) {
		bool has_obj = strstr(tok, "OBJECT") || strstr(tok, "PREFIX");
		const char *b = strncmp(cur, "ais://", 6) == 0 ? cur + 6 : cur;
		const char *slash = strchr(b, '/');
		if (has_obj && slash) {
			char *bucket = xstrndup(b, (size_t)(slash - b));
			offer_objects(c, bucket, slash + 1);
			free(bucket);
		} else {
			/* BUCKET/OBJECT needs the object: offer "bucket/" */
			offer_buckets(c, cur, has_obj && !strstr(tok, "[/"));
		}
	} else if (strstr(tok, "FILE") || strstr(tok, "DIR") || !strncmp(tok, "OUT", 3)) {
		puts("__files__");
	} else if (strstr(tok, "NODE")) {
		offer_nodes(c, cur);
	} else if (strstr(tok, "KEY=VALUE")) {
		bool cfg = !strcmp(cmd->name, "config set");
		const char *const *keys = cfg ? config_keys : prop_keys;
		size_t nkeys = cfg ? ARRAY_SIZE(config_keys) : ARRAY_SIZE(prop_keys);
		for (size_t j = 0; j < nkeys; j++) {
			buf_t b = BUF_INIT;
			buf_addf(&b, "%s=", keys[j]);
			offer(cur, b.ptr);
			buf_free(&b);
		}
		puts("__nospace__");
	} else if (strchr(tok, '|')) {
		for (char *w = tok; *w;) {
			size_t n = strcspn(w, "|");
			bool last = w[n] == '\0';
			w[n] = '\0';
			if (strcmp(w, "-"))
				offer(cur, w);
			if (last)
				break;
			w += n + 1;
		}
	}
out:
	free(args);
}

/* Next words of the command names that start with words[0..n). */
static void offer_commands(int n, char **words, const char *cur)
{
	size_t ncmds;
	const struct cli_cmd *cmds = cli_commands(&ncmds);
	for (size_t i = 0; i < ncmds; i++) {
		int nw, m = cli_words_matched(cmds[i].name, n, words, &nw);
		if (cmds[i].hidden || m != n || nw <= n)
			continue;
		const char *p = cmds[i].name;
		for (int k = 0; k < n; k++)
			p = strchr(p, ' ') + 1;
		char *w = xstrndup(p, strcspn(p, " "));
		/* skip a word already offered by an earlier command */
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++) {
			int nw2, m2 = cli_words_matched(cmds[j].name, n, words, &nw2);
			const char *q = cmds[j].name;
			if (cmds[j].hidden || m2 != n || nw2 <= n)
				continue;
			for (int k = 0; k < n; k++)
				q = strchr(q, ' ') + 1;
			seen = strlen(w) == strcspn(q, " ") && !strncmp(q, w, strlen(w));
		}
		if (!seen)
			offer(cur, w);
		free(w);
	}
}

int cli_complete(struct cli *c, const struct cli_args *a)
{
	uint64_t cw;
	if (cli_parse_u64(a->pos[0], 0, 10000, &cw) != AIS_OK)
		return CLI_EXIT_OK;
	char **words = a->pos + 1;
	int nw = a->npos - 1, cword = (int)cw;
	const char *cur = cword < nw ? words[cword] : "";
	char **plain = xcalloc((size_t)nw + 1, sizeof(char *));
	int np = 0, used = 0;
	const struct cli_cmd *cmd = NULL;

	if (!c->timeout_s || c->timeout_s > COMPLETE_TIMEOUT_S)
		c->timeout_s = COMPLETE_TIMEOUT_S;
	for (int i = 0; i < cword && i < nw; i++) {
		const char *w = words[i];
		if (w[0] == '-' && w[1]) {
			const struct cli_opt *o = find_opt(cmd, w);
			if (!o || !o->arg || strchr(w, '='))
				continue;
			if (i + 1 == cword)
				goto out; /* the value of an option: nothing to offer */
			if (!strcmp(o->name, "endpoint") && i + 1 < nw) {
				free(c->endpoint);
				buf_t b = BUF_INIT;
				if (!strstr(words[i + 1], "://"))
					buf_addstr(&b, "http://");
				buf_addstr(&b, words[i + 1]);
				c->endpoint = buf_detach(&b, NULL);
			}
			i++;
			continue;
		}
		plain[np++] = words[i];
		if (!cmd) {
			int u = 0;
			const struct cli_cmd *m = cli_cmd_lookup(np, plain, &u);
			if (m && u == np && cli_cmd_group(np, plain) < np) {
				cmd = m;
				used = u;
			}
		}
	}

	if (cur[0] == '-') {
		offer_opts(cur, cmd ? cmd->opts : NULL);
		offer_opts(cur, cli_global_options());
	} else if (cword > 0 && (!strcmp(cur, "=") || !strcmp(words[cword - 1], "="))) {
		/* bash split "key=value" at '=': values of the boolean keys */
		const char *key = cword >= 2 && !strcmp(cur, "=") ? words[cword - 1]
		                  : cword >= 2                    ? words[cword - 2]
		                                                  : "";
		const char *v = !strcmp(cur, "=") ? "" : cur;
		if (strstr(key, ".enabled")) {
			offer(v, "true");
			offer(v, "false");
		}
	} else if (!cmd) {
		offer_commands(np, plain, cur);
	} else if (!cmd->fn) { /* help COMMAND */
		offer_commands(np - used, plain + used, cur);
	} else {
		offer_positional(c, cmd, np - used, cur);
	}
out:
	free(plain);
	return CLI_EXIT_OK;
}
