/*
 * main.c - aisctl's entry point: the command table, the option parser, help
 * and dispatch. Every command is one entry of cli_cmds[] (name, arguments,
 * one-line help, options, argument counts, handler); usage lines, --help and
 * "aisctl help CMD" are all generated from the table. Global options may come
 * before or after the command. Exit status: 0 success, 1 a request or local
 * operation failed, 2 the command line is wrong.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

/* Options of each command (the global ones are in cli_global_opts). */
static const struct cli_opt opts_bucket_create[] = {
	{"checksum", 0, "TYPE", "checksum type of the bucket: xxhash, md5, sha256 or none"},
	{0},
};
static const struct cli_opt opts_json[] = {
	{"json", 0, NULL, "print JSON instead of a table"},
	{0},
};
static const struct cli_opt opts_cluster_show[] = {
	{"json", 0, NULL, "print the cluster map, each node with its health, as JSON"},
	{0},
};
static const struct cli_opt opts_decommission[] = {
	{"yes", 'y', NULL, "do not ask for confirmation"},
	{0},
};
static const struct cli_opt opts_put[] = {
	{"checksum", 0, NULL, "send the file's xxhash64 so the server verifies it (files only)"},
	{0},
};
static const struct cli_opt opts_get[] = {
	{"range", 0, "START-END", "fetch only bytes START..END (inclusive; END may be empty)"},
	{0},
};
static const struct cli_opt opts_ls[] = {
	{"prefix", 0, "PREFIX", "list only objects whose names start with PREFIX"},
	{"page-size", 0, "N", "ask the server for N entries per page"},
	{"limit", 0, "N", "stop after N objects"},
	{"json", 0, NULL, "print one JSON object per line"},
	{"no-headers", 'H', NULL, "omit the table header"},
	{"archive", 0, NULL, "also list the files inside shards (BUCKET/SHARD: that shard's only)"},
	{0},
};
static const struct cli_opt opts_get_batch[] = {
	{"list", 0, "OBJ,OBJ,...", "the objects, in order, comma-separated"},
	{"file", 0, "LIST", "the entries, one a line: OBJECT or OBJECT<TAB>ARCHPATH (- : stdin)"},
	{"coer", 0, NULL, "continue on error: a missing entry becomes __404__/NAME (0 bytes)"},
	{"onob", 0, NULL, "name entries OBJECT[/ARCHPATH] instead of BUCKET/OBJECT[/ARCHPATH]"},
	{0},
};

static const struct cli_opt opts_config_set[] = {
	{"node", 0, NULL, "only the node at the endpoint (default: every node, through the primary)"},
	{0},
};

static const struct cli_opt opts_job_wait[] = {
	{"timeout-s", 0, "SECS", "give up (exit 1) after SECS seconds"},
	{0},
};

/*
 * The command table. Two-word names ("bucket create") are matched before
 * one-word names, so "bucket" alone lists its subcommands.
 */
static const struct cli_cmd cli_cmds[] = {
	{"bucket create", "BUCKET", "create a bucket", opts_bucket_create, 1, 1, cli_bucket_create},
	{"bucket ls", "", "list buckets", opts_json, 0, 0, cli_bucket_ls},
	{"bucket rm", "BUCKET...", "destroy buckets and every object in them", NULL, 1, -1,
	 cli_bucket_rm},
	{"put", "FILE|- BUCKET/OBJECT", "upload a file (or standard input) as an object", opts_put,
	 2, 2, cli_object_put},
	{"get", "BUCKET/OBJECT [FILE|DIR|-]", "download an object to a file (or standard output)",
	 opts_get, 1, 2, cli_object_get},
	{"ls", "[BUCKET[/SHARD]]", "list the objects of a bucket (no BUCKET: list buckets)", opts_ls, 0, 1,
	 cli_list},
	{"rm", "BUCKET/OBJECT...", "delete objects", NULL, 1, -1, cli_object_rm},
	{"stat", "BUCKET/OBJECT", "show an object's size, checksum, version and times", opts_json,
	 1, 1, cli_object_stat},
	{"cluster show", "", "show the cluster map and check every node's health", opts_cluster_show,
	 0, 0, cli_cluster_show},
	{"cluster primary", "NODE", "make the gateway NODE the primary (a new term; the old one stays a gateway)",
	 NULL, 1, 1, cli_cluster_primary},
	{"node maintenance", "start|stop NODE",
	 "put a node in maintenance (no new objects, kept in the map when down) or take it out",
	 NULL, 2, 2, cli_node_maintenance},
	{"node decommission", "NODE", "remove a node from the cluster for good (asks unless --yes)",
	 opts_decommission, 1, 1, cli_node_decommission},
	{"job show", "[rebalance]", "show the rebalance job's progress on every target", opts_json, 0, 1,
	 cli_job_show},
	{"job wait", "[rebalance]", "wait until the rebalance ends (progress bar on a terminal)", opts_job_wait,
	 0, 1, cli_job_wait},
	{"job start", "[rebalance]", "start a rebalance on every target", NULL, 0, 1, cli_job_start},
	{"job stop", "[rebalance]", "stop the rebalance on every target", NULL, 0, 1, cli_job_stop},
	{"config set", "KEY=VALUE...",
	 "change log.level, log.access, net.rate_limit or net.rate_burst on every node while it runs",
	 opts_config_set, 1, -1, cli_config_set},
	{"ml get-batch", "BUCKET OUT.tar|-",
	 "fetch many objects (or files in shards) as one tar, in the order given (GetBatch)",
	 opts_get_batch, 2, 2, cli_ml_get_batch},
	{"help", "[COMMAND]", "show help for aisctl or for a command", NULL, 0, 2, NULL},
};

static const struct cli_opt cli_global_opts[] = {
	{"endpoint", 'e', "URL", "cluster endpoint (default: $AIS_ENDPOINT, else " CLI_DEFAULT_ENDPOINT ")"},
	{"timeout", 't', "SECS", "give up on a request after SECS seconds (default: no limit)"},
	{"verbose", 'v', NULL, "trace requests on stderr (twice: also libcurl's trace)"},
	{"help", 'h', NULL, "show help"},
	{"version", 'V', NULL, "show the version"},
	{0},
};

/* Global option values, filled wherever they appear on the command line. */
struct cli_globals {
	const char *endpoint;
	const char *timeout;
	int verbose;
	bool help;
	bool version;
};

void cli_err(const char *fmt, ...)
{
	va_list ap;
	fputs("aisctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return num_parse_u64(s, strlen(s), min, max, out);
}

void cli_human_size(uint64_t n, char *out, size_t outsz)
{
	static const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	if (n < 1024) {
		snprintf(out, outsz, "%lluB", (unsigned long long)n);
		return;
	}
	double v = (double)n / 1024.0;
	size_t u = 0;
	while (v >= 1024.0 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024.0;
		u++;
	}
	snprintf(out, outsz, "%.1f%s", v, units[u]);
}

const char *cli_opt(const struct cli_args *a, const char *name)
{
	const struct cli_opt *o = a->cmd->opts;
	for (size_t i = 0; o && o[i].name; i++)
		if (strcmp(o[i].name, name) == 0)
			return a->val[i];
	return NULL;
}

static void print_usage_line(FILE *f, const struct cli_cmd *cmd)
{
	fprintf(f, "usage: aisctl %s%s%s%s\n", cmd->name, cmd->args[0] ? " " : "", cmd->args,
		cmd->opts ? " [OPTIONS]" : "");
}

int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;
	fputs("aisctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cmd) {
		print_usage_line(stderr, cmd);
		fprintf(stderr, "Run 'aisctl help %s' for more.\n", cmd->name);
	} else {
		fputs("usage: aisctl [OPTIONS] COMMAND [ARGS...]\n"
		      "Run 'aisctl --help' for the list of commands.\n",
		      stderr);
	}
	return CLI_EXIT_USAGE;
}

static void print_opts(FILE *f, const struct cli_opt *o)
{
	for (size_t i = 0; o && o[i].name; i++) {
		buf_t b = BUF_INIT;
		if (o[i].shrt)
			buf_addf(&b, "-%c, ", o[i].shrt);
		buf_addf(&b, "--%s", o[i].name);
		if (o[i].arg)
			buf_addf(&b, " %s", o[i].arg);
		fprintf(f, "  %-24s %s\n", b.ptr, o[i].help);
		buf_free(&b);
	}
}

static void print_cmd_help(FILE *f, const struct cli_cmd *cmd)
{
	print_usage_line(f, cmd);
	fprintf(f, "\n%c%s.\n", cmd->help[0] - 'a' + 'A', cmd->help + 1);
	if (cmd->opts) {
		fputs("\nOptions:\n", f);
		print_opts(f, cmd->opts);
	}
	fputs("\nGlobal options:\n", f);
	print_opts(f, cli_global_opts);
}

static void print_help(FILE *f)
{
	fputs("usage: aisctl [OPTIONS] COMMAND [ARGS...]\n\n"
	      "aisctl is the command-line client of an aisd object storage cluster.\n\n"
	      "Commands:\n",
	      f);
	for (size_t i = 0; i < ARRAY_SIZE(cli_cmds); i++) {
		buf_t b = BUF_INIT;
		buf_addf(&b, "%s %s", cli_cmds[i].name, cli_cmds[i].args);
		fprintf(f, "  %-34s %s\n", b.ptr, cli_cmds[i].help);
		buf_free(&b);
	}
	fputs("\nGlobal options:\n", f);
	print_opts(f, cli_global_opts);
	fputs("\nEnvironment:\n  AIS_ENDPOINT               default for --endpoint\n"
	      "\nRun 'aisctl help COMMAND' or 'aisctl COMMAND --help' for a command's options.\n",
	      f);
}

/*
 * Finds the command named by argv[0] (and argv[1] for two-word names).
 * Returns it with *used set to the number of words consumed, or NULL.
 */
static const struct cli_cmd *cmd_lookup(int argc, char **argv, int *used)
{
	for (size_t i = 0; i < ARRAY_SIZE(cli_cmds); i++) {
		const char *name = cli_cmds[i].name;
		const char *sp = strchr(name, ' ');
		if (sp) {
			size_t n = (size_t)(sp - name);
			if (argc >= 2 && strlen(argv[0]) == n && memcmp(argv[0], name, n) == 0 &&
			    strcmp(argv[1], sp + 1) == 0) {
				*used = 2;
				return &cli_cmds[i];
			}
		} else if (argc >= 1 && strcmp(argv[0], name) == 0) {
			*used = 1;
			return &cli_cmds[i];
		}
	}
	return NULL;
}

/* True when word is the first word of some two-word command ("bucket"). */
static bool cmd_is_group(const char *word)
{
	size_t n = strlen(word);
	for (size_t i = 0; i < ARRAY_SIZE(cli_cmds); i++) {
		const char *name = cli_cmds[i].name;
		if (strncmp(name, word, n) == 0 && name[n] == ' ')
			return true;
	}
	return false;
}

static void print_group(FILE *f, const char *word)
{
	size_t n = strlen(word);
	fprintf(f, "usage: aisctl %s SUBCOMMAND ...\n\nSubcommands:\n", word);
	for (size_t i = 0; i < ARRAY_SIZE(cli_cmds); i++) {
		const char *name = cli_cmds[i].name;
		if (strncmp(name, word, n) == 0 && name[n] == ' ') {
			buf_t b = BUF_INIT;
			buf_addf(&b, "%s %s", name, cli_cmds[i].args);
			fprintf(f, "  %-34s %s\n", b.ptr, cli_cmds[i].help);
			buf_free(&b);
		}
	}
}

static const struct cli_opt *opt_find(const struct cli_opt *o, const char *name, size_t n,
				      char shrt, size_t *idx)
{
	for (size_t i = 0; o && o[i].name; i++) {
		if ((shrt && o[i].shrt == shrt) ||
		    (!shrt && strlen(o[i].name) == n && memcmp(o[i].name, name, n) == 0)) {
			*idx = i;
			return &o[i];
		}
	}
	return NULL;
}

static void global_set(struct cli_globals *g, size_t idx, const char *val)
{
	switch (idx) {
	case 0: g->endpoint = val; break;
	case 1: g->timeout = val; break;
	case 2: g->verbose++; break;
	case 3: g->help = true; break;
	case 4: g->version = true; break;
	}
}

/*
 * Parses argv[0..argc) as options and positionals. cmd == NULL: only global
 * options, stopping at the first positional (the command); *stop is set to
 * its index. Otherwise options may be mixed with positionals; "--" ends
 * options and "-" is a positional. Returns AIS_OK, or AIS_ERR after a usage
 * message.
 */
static int parse_args(const struct cli_cmd *cmd, int argc, char **argv, struct cli_globals *g,
		      struct cli_args *a, int *stop)
{
	bool opts_done = false;
	for (int i = 0; i < argc; i++) {
		char *arg = argv[i];
		if (opts_done || arg[0] != '-' || arg[1] == '\0') {
			if (!cmd) {
				*stop = i;
				return AIS_OK;
			}
			a->pos[a->npos++] = arg;
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			opts_done = true;
			continue;
		}
		/* Short options may be bundled (-vv) when they take no argument. */
		const char *name;
		size_t n;
		const char *inline_val = NULL;
		char shrt = 0;
		if (arg[1] == '-') {
			name = arg + 2;
			const char *eq = strchr(name, '=');
			n = eq ? (size_t)(eq - name) : strlen(name);
			inline_val = eq ? eq + 1 : NULL;
		} else {
			name = arg + 1;
			n = 1;
			shrt = arg[1];
			if (arg[2])
				inline_val = arg + 2;
		}
		size_t idx;
		const struct cli_opt *o = cmd ? opt_find(cmd->opts, name, n, shrt, &idx) : NULL;
		bool global = false;
		if (!o) {
			o = opt_find(cli_global_opts, name, n, shrt, &idx);
			global = true;
		}
		if (!o) {
			cli_usage_error(cmd, "unknown option '%.*s%.*s'", shrt ? 1 : 2, "--", (int)n,
					name);
			return AIS_ERR;
		}
		const char *val = "";
		if (o->arg) {
			if (inline_val) {
				val = inline_val;
			} else if (i + 1 < argc) {
				val = argv[++i];
			} else {
				cli_usage_error(cmd, "option '--%s' needs a value (%s)", o->name, o->arg);
				return AIS_ERR;
			}
		} else if (inline_val && !shrt) {
			cli_usage_error(cmd, "option '--%s' takes no value", o->name);
			return AIS_ERR;
		} else if (inline_val) {
			/* bundled flags: -vv, -vH */
			for (const char *p = arg + 1; *p; p++) {
				size_t j;
				const struct cli_opt *bo = NULL;
				bool bglobal = false;
				if (cmd)
					bo = opt_find(cmd->opts, NULL, 0, *p, &j);
				if (!bo) {
					bo = opt_find(cli_global_opts, NULL, 0, *p, &j);
					bglobal = true;
				}
				if (!bo || bo->arg) {
					cli_usage_error(cmd, "bad option bundle '%s'", arg);
					return AIS_ERR;
				}
				if (bglobal)
					global_set(g, j, "");
				else
					a->val[j] = "";
			}
			continue;
		}
		if (global)
			global_set(g, idx, val);
		else
			a->val[idx] = val;
	}
	if (stop)
		*stop = argc;
	return AIS_OK;
}

/* Applies global options and the environment to c. Returns AIS_OK or AIS_ERR. */
static int cli_setup(struct cli *c, const struct cli_globals *g, const struct cli_cmd *cmd)
{
	const char *ep = g->endpoint;
	if (!ep || !*ep)
		ep = getenv("AIS_ENDPOINT");
	if (!ep || !*ep)
		ep = CLI_DEFAULT_ENDPOINT;
	buf_t b = BUF_INIT;
	if (!strstr(ep, "://"))
		buf_addstr(&b, "http://");
	buf_addstr(&b, ep);
	while (b.len && b.ptr[b.len - 1] == '/')
		b.ptr[--b.len] = '\0';
	c->endpoint = buf_detach(&b, NULL);
	c->verbose = g->verbose;
	if (g->timeout) {
		uint64_t t;
		if (cli_parse_u64(g->timeout, 1, 86400 * 365, &t) != AIS_OK) {
			cli_usage_error(cmd, "bad --timeout '%s': want whole seconds, at least 1",
					g->timeout);
			return AIS_ERR;
		}
		c->timeout_s = (long)t;
	}
	return AIS_OK;
}

static int cmd_help(int argc, char **argv)
{
	if (argc == 0) {
		print_help(stdout);
		return CLI_EXIT_OK;
	}
	int used;
	const struct cli_cmd *cmd = cmd_lookup(argc, argv, &used);
	if (cmd && used == argc) {
		print_cmd_help(stdout, cmd);
		return CLI_EXIT_OK;
	}
	if (argc == 1 && cmd_is_group(argv[0])) {
		print_group(stdout, argv[0]);
		return CLI_EXIT_OK;
	}
	return cli_usage_error(NULL, "no such command '%s%s%s'", argv[0], argc > 1 ? " " : "",
			       argc > 1 ? argv[1] : "");
}

int main(int argc, char **argv)
{
	struct cli_globals g = {0};
	struct cli_args a = {0};
	int start;

	if (parse_args(NULL, argc - 1, argv + 1, &g, &a, &start) != AIS_OK)
		return CLI_EXIT_USAGE;
	start += 1;
	int rest = argc - start;
	char **rv = argv + start;

	if (g.version) {
		printf("aisctl %s (%s)\n", CLI_VERSION, curl_version());
		return CLI_EXIT_OK;
	}
	if (rest == 0) {
		if (g.help) {
			print_help(stdout);
			return CLI_EXIT_OK;
		}
		print_help(stderr);
		return CLI_EXIT_USAGE;
	}

	int used;
	const struct cli_cmd *cmd = cmd_lookup(rest, rv, &used);
	if (!cmd) {
		if (cmd_is_group(rv[0])) {
			bool asked = g.help || (rest >= 2 && (strcmp(rv[1], "--help") == 0 ||
							      strcmp(rv[1], "-h") == 0));
			if (asked) {
				print_group(stdout, rv[0]);
				return CLI_EXIT_OK;
			}
			if (rest >= 2)
				cli_err("unknown subcommand '%s %s'", rv[0], rv[1]);
			print_group(stderr, rv[0]);
			return CLI_EXIT_USAGE;
		}
		return cli_usage_error(NULL, "unknown command '%s'", rv[0]);
	}
	rv += used;
	rest -= used;
	if (!cmd->fn) { /* help */
		if (g.help || (rest == 1 && (strcmp(rv[0], "--help") == 0 || strcmp(rv[0], "-h") == 0))) {
			print_help(stdout);
			return CLI_EXIT_OK;
		}
		return cmd_help(rest, rv);
	}

	a.cmd = cmd;
	a.pos = xcalloc((size_t)rest + 1, sizeof(char *));
	int rc = CLI_EXIT_USAGE;
	if (parse_args(cmd, rest, rv, &g, &a, NULL) != AIS_OK)
		goto out_free_pos;
	if (g.help) {
		print_cmd_help(stdout, cmd);
		rc = CLI_EXIT_OK;
		goto out_free_pos;
	}
	if (a.npos < cmd->min_args) {
		rc = cli_usage_error(cmd, "missing arguments");
		goto out_free_pos;
	}
	if (cmd->max_args >= 0 && a.npos > cmd->max_args) {
		rc = cli_usage_error(cmd, "too many arguments");
		goto out_free_pos;
	}

	struct cli c = {0};
	if (cli_setup(&c, &g, cmd) != AIS_OK)
		goto out_free_pos;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		cli_err("cannot initialize libcurl");
		rc = CLI_EXIT_ERR;
		goto out_free_endpoint;
	}
	c.curl = curl_easy_init();
	if (!c.curl) {
		cli_err("cannot initialize libcurl");
		rc = CLI_EXIT_ERR;
		goto out_cleanup_global;
	}
	rc = cmd->fn(&c, &a);
	if (fflush(stdout) != 0 && rc == CLI_EXIT_OK) {
		cli_err("writing to standard output: %s", strerror(errno));
		rc = CLI_EXIT_ERR;
	}
	curl_easy_cleanup(c.curl);
out_cleanup_global:
	curl_global_cleanup();
out_free_endpoint:
	free(c.endpoint);
out_free_pos:
	free(a.pos);
	return rc;
}
