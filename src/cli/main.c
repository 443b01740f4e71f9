/*
 * main.c - aisctl's entry point: the command table, the option parser, help
 * and dispatch. Every command is one entry of cli_cmds[] (name, arguments,
 * one-line help, options, argument counts, handler); usage lines, --help and
 * "aisctl help CMD" are all generated from the table, and so is shell
 * completion (complete.c). Commands have one to three words ("put", "bucket
 * create", "bucket props set"); the longest match wins, and a prefix of a
 * longer name ("bucket", "bucket props") lists what follows it. Global
 * options may come before or after the command. Exit status: 0 success,
 * 1 a request or local operation failed, 2 the command line (or the config
 * file) is wrong, 3 what was asked for does not exist (every error was an
 * HTTP 404).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

/* Options of each command (the global ones are in cli_global_opts). */
static const struct cli_opt opts_bucket_create[] = {
	{"checksum", 0, "TYPE", "checksum type of the bucket: xxhash, md5, sha256 or none"},
	{"backend", 0, "s3://[@ALIAS/]B|ais://@ALIAS/B", "cache of a remote bucket (an attached remote; s3:// alone: the remote named s3)"},
	{"validate-warm-get", 0, NULL, "with --backend: check the remote's version before serving a cached object"},
	{"sync", 0, NULL, "with --backend and --validate-warm-get: a remote deletion deletes the cached copy"},
	{0},
};
static const struct cli_opt opts_listrange[] = {
	{"prefix", 0, "PREFIX", "the objects whose names start with PREFIX (default: all)"},
	{"list", 0, "OBJ,OBJ,...", "these objects"},
	{"template", 0, "TEMPLATE", "names from a range: shard-{0000..0999}.tar"},
	{0},
};
static const struct cli_opt opts_remote_attach[] = {
	{"kind", 0, "s3|ais", "an S3-compatible endpoint (default) or another aisd cluster (native API)"},
	{"region", 0, "REGION", "S3 signing region (default us-east-1)"},
	{"access-key", 0, "KEY", "S3 access key (with --secret-key-file)"},
	{"secret-key-file", 0, "FILE", "S3 secret key: the first line of FILE"},
	{"token-file", 0, "FILE", "aisd: a bearer token, the first line of FILE"},
	{"addressing", 0, "path|virtual", "S3: ENDPOINT/BUCKET/KEY (default) or BUCKET.HOST/KEY"},
	{"ca-file", 0, "PEM", "https: verify the remote against this CA bundle"},
	{"blob-min", 0, "SIZE", "cold reads of objects this big fetch in parallel ranges (default 256MiB)"},
	{0},
};
static const struct cli_opt opts_decommission[] = {
	{"yes", 'y', NULL, "do not ask for confirmation"},
	{0},
};
static const struct cli_opt opts_put[] = {
	{"recursive", 'r', NULL, "upload a directory: every file under it, named by its relative path"},
	{"conc", 'c', "N", "uploads in parallel with -r (default 8, at most 256)"},
	{"checksum", 0, NULL, "send each file's xxhash64 so the server verifies it (files only)"},
	{0},
};
static const struct cli_opt opts_get[] = {
	{"range", 0, "START-END", "fetch only bytes START..END (inclusive; END may be empty)"},
	{"recursive", 'r', NULL, "BUCKET[/PREFIX] DIR: every object under PREFIX as a file under DIR"},
	{"conc", 'c', "N", "downloads in parallel with -r (default 8, at most 256)"},
	{"version", 0, "ID", "a bucket that keeps versions: that version (an id from ls --versions, or null)"},
	{0},
};
static const struct cli_opt opts_rm[] = {
	{"recursive", 'r', NULL, "BUCKET[/PREFIX]: every object whose name starts with PREFIX"},
	{"prefix", 0, "PREFIX", "BUCKET: the objects whose names start with PREFIX"},
	{"template", 0, "TEMPLATE", "BUCKET: the objects named by a range: shard-{0000..0999}.tar"},
	{"yes", 'y', NULL, "do not ask before deleting more than one object"},
	{0},
};
static const struct cli_opt opts_cp[] = {
	{"recursive", 'r', NULL, "every object whose name starts with PREFIX (the copy-bck job; waits for it)"},
	{0},
};
static const struct cli_opt opts_sync[] = {
	{"delete", 0, NULL, "also delete what the source lacks (asks unless --yes)"},
	{"dry-run", 'n', NULL, "print what would be uploaded, downloaded or deleted; change nothing"},
	{"conc", 'c', "N", "uploads in parallel (default 8, at most 256)"},
	{"yes", 'y', NULL, "do not ask before --delete deletes"},
	{0},
};
static const struct cli_opt opts_ls[] = {
	{"prefix", 0, "PREFIX", "list only objects whose names start with PREFIX"},
	{"props", 'p', "LIST", "columns: comma-separated name, size, checksum, atime, version, location"},
	{"page-size", 0, "N", "ask the server for N entries per page"},
	{"limit", 'n', "N", "stop after N objects"},
	{"no-headers", 'H', NULL, "omit the table header"},
	{"archive", 0, NULL, "also list the files inside shards (BUCKET/SHARD: that shard's only)"},
	{"cached", 0, NULL, "a remote bucket: only the objects cached in this cluster"},
	{"versions", 0, NULL, "a bucket that keeps versions: the kept versions too, each as NAME~ais.v~ID"},
	{"partial", 0, NULL, "while targets holding part of the bucket are down: list what the others hold (a warning names the missing targets) instead of failing"},
	{0},
};
static const struct cli_opt opts_get_batch[] = {
	{"list", 0, "OBJ,OBJ,...", "the objects, in order, comma-separated"},
	{"file", 0, "LIST", "the entries, one a line: OBJECT or OBJECT<TAB>ARCHPATH (- : stdin)"},
	{"coer", 0, NULL, "continue on error: a missing entry becomes __404__/NAME (0 bytes)"},
	{"etl", 0, "NAME", "every entry through transformer NAME, on the target that holds it"},
	{"etl-args", 0, "ARGS", "the transformer's arguments (with --etl)"},
	{"onob", 0, NULL, "name entries OBJECT[/ARCHPATH] instead of BUCKET/OBJECT[/ARCHPATH]"},
	{0},
};

static const struct cli_opt opts_config_set[] = {
	{"node", 0, NULL, "only the node at the endpoint (default: every node, through the primary)"},
	{0},
};
static const struct cli_opt opts_config_show[] = {
	{"node", 0, "NODE", "the node NODE of the cluster map (default: the node at the endpoint)"},
	{0},
};
static const struct cli_opt opts_stats[] = {
	{"refresh", 0, "SECS", "show again every SECS seconds (until --count or Ctrl-C)"},
	{"count", 0, "K", "with --refresh: stop after K reports"},
	{0},
};

static const struct cli_opt opts_maintenance[] = {
	{"drain", 0, NULL, "start: move the node's objects to the other targets (default: they stay on it)"},
	{0},
};
static const struct cli_opt opts_token_create[] = {
	{"user", 'u', "USER", "the token's user name (required)"},
	{"bucket", 'b', "BUCKET[,BUCKET...]", "buckets the permission applies to (* = every bucket)"},
	{"perm", 0, "PERM", "ro, rw, admin, or a list of read,write,list,delete,admin (default ro)"},
	{"ttl", 0, "DURATION", "valid for this long: 30m, 12h, 3600s (default 24h)"},
	{"admin", 0, NULL, "a cluster administrator (every bucket, cluster operations)"},
	{"monitor", 0, NULL, "may read cluster state, stats (mountpath paths) and /metrics"},
	{"secret-file", 0, "FILE", "the auth.secret, first line of FILE (else --config)"},
	{"config", 'c', "AISD.CONF", "read auth.secret or auth.secret_file from this aisd config"},
	{0},
};

static const struct cli_opt opts_job_wait[] = {
	{"timeout-s", 0, "SECS", "give up (exit 1) after SECS seconds (the global --timeout SECS: the same)"},
	{0},
};

static const struct cli_opt opts_bucket_cp[] = {
	{"prefix", 0, "PREFIX", "copy only the objects whose names start with PREFIX"},
	{"template", 0, "TPL", "copy only the objects of these names: shard-{0000..0999}.tar"},
	{"dry-run", 0, NULL, "count what would be copied, copy nothing"},
	{0},
};

static const struct cli_opt opts_etl_bucket[] = {
	{"prefix", 0, "PREFIX", "transform only the objects whose names start with PREFIX"},
	{"template", 0, "TPL", "transform only the objects of these names: shard-{0000..0999}.tar"},
	{"ext", 0, ".A:.B", "rename the extension of the results: .jpg:.npy (more: .jpg:.npy,.png:.npy)"},
	{"dry-run", 0, NULL, "count what would be transformed, transform and write nothing"},
	{"continue-on-error", 0, NULL, "an object that fails is counted and listed, the job goes on (the default)"},
	{"stop-on-error", 0, NULL, "the first object that fails stops the job (failed)"},
	{0},
};

static const struct cli_opt opts_ishard[] = {
	{"shard-size", 0, "SIZE", "at most SIZE bytes of tar per shard: 64MiB, 1GiB (default 64MiB)"},
	{"template", 0, "TPL", "shard names: shard-%06d.tar or shard-{0000..9999}.tar (default shard-%06d.tar)"},
	{"prefix", 0, "PREFIX", "shard only the objects whose names start with PREFIX"},
	{"ext", 0, ".A,.B", "the extensions a sample needs (others are left out)"},
	{"regex", 0, "REGEX", "the sample key: the regex's first group (default: the name up to its basename's first dot)"},
	{"missing", 0, "skip|fail|list", "a sample lacking an --ext: left out, fail the job, or left out and listed"},
	{"shuffle", 0, "SEED", "shuffle the samples' order (the same SEED, the same order)"},
	{"dry-run", 0, NULL, "print the plan (shards, sizes, samples per shard, skipped files), write nothing"},
	{0},
};

static const struct cli_opt opts_archive_put[] = {
	{"list", 0, "OBJ,OBJ,...", "pack these objects, in this order"},
	{"template", 0, "TEMPLATE", "pack the objects a range names: img-{0000..0999}.jpg"},
	{"from", 0, "BUCKET", "the objects' bucket (default: the shard's)"},
	{"append", 0, NULL, "add the objects after the shard's members (.tar, .tgz, .tar.gz; created when absent)"},
	{"overwrite", 0, NULL, "replace the shard when it exists (else that is an error)"},
	{"include-src-bck", 0, NULL, "name each member BUCKET/OBJECT in the shard (default: OBJECT)"},
	{0},
};

static const struct cli_opt opts_dsort[] = {
	{"template", 0, "TPL", "output shard names: out-%06d.tar or out-{0000..9999}.tar, .tgz or .tar.gz for "
			      "gzip-compressed shards (default shard-%06d.tar)"},
	{"shard-size", 0, "SIZE", "at most SIZE bytes of tar per output shard: 64MiB, 1GiB (default 64MiB)"},
	{"samples-per-shard", 0, "N", "N samples per output shard (instead of --shard-size)"},
	{"algorithm", 0, "ALG", "shuffle, alphanumeric (default), numeric (the key's last number), content or order"},
	{"order-file", 0, "BUCKET/OBJ", "order: the file of lines KEY<TAB>OUTPUT-SHARD that places the samples"},
	{"unlisted-shard", 0, "NAME", "order: the output shard of the samples the file does not list (default: "
				      "such a sample fails the job)"},
	{"seed", 0, "SEED", "shuffle: the same SEED, the same order (default: a fresh one)"},
	{"content-ext", 0, ".EXT", "content: sort by the member with this extension (e.g. .cls)"},
	{"content-type", 0, "number|string", "content: the member's text read as a number (default) or a string"},
	{"prefix", 0, "PREFIX", "the input shards: the .tar objects whose names start with PREFIX"},
	{"input-template", 0, "TPL", "the input shards: those named like in-{000..099}.tar"},
	{"dry-run", 0, NULL, "print the plan (input shards per target, estimated output), write nothing"},
	{0},
};

static const struct cli_opt opts_etl_init[] = {
	{"cmd", 0, "'COMMAND ...'", "the worker's command line (run with /bin/sh -c, in a sandbox; required)"},
	{"comm", 0, "stdio|http", "how aisd talks to a worker: stdio (framed requests and answers; the default) or http (a server on a unix socket)"},
	{"workers", 0, "N", "worker processes per target (1 to 16, default 1)"},
	{"timeout", 0, "DURATION", "per object: 30s (default), 500ms, 2m; a slower worker is killed (504)"},
	{"env", 0, "K=V", "an environment variable of the workers (more: K=V arguments after NAME)"},
	{"net", 0, NULL, "keep the host's network (default: a network namespace of its own, no network)"},
	{0},
};

static const struct cli_opt opts_job_show[] = {
	{"all", 0, NULL, "every run, the finished ones too (the last 100 of each kind per target)"},
	{0},
};

/*
 * The command table. The longest name that matches the words of the
 * command line wins; "bucket" or "bucket props" alone list their
 * subcommands. The args strings also drive completion: BUCKET, OBJECT,
 * FILE, DIR, NODE and KEY=VALUE are recognized there (complete.c).
 */
static const struct cli_cmd cli_cmds[] = {
	{"bucket create", "BUCKET", "create a bucket", opts_bucket_create, 1, 1, cli_bucket_create, false},
	{"bucket ls", "", "list buckets", NULL, 0, 0, cli_bucket_ls, false},
	{"remote attach", "ALIAS URL", "attach a remote backend on every node (credentials from files)",
	 opts_remote_attach, 2, 2, cli_remote_attach, false},
	{"remote detach", "ALIAS", "detach a remote (no bucket may use it)", NULL, 1, 1, cli_remote_detach, false},
	{"remote show", "", "the attached remotes (never their secrets)", NULL, 0, 0, cli_remote_show, false},
	{"etl init", "NAME [K=V...]",
	 "register a transformer on every node (each target runs its workers; GET ...?etl=NAME)", opts_etl_init, 1,
	 -1, cli_etl_init, false},
	{"etl ls", "", "list the transformers", NULL, 0, 0, cli_etl_ls, false},
	{"etl show", "NAME", "a transformer's definition", NULL, 1, 1, cli_etl_show, false},
	{"etl stop", "NAME", "stop a transformer's workers on every target (kept registered)", NULL, 1, 1,
	 cli_etl_stop, false},
	{"etl start", "NAME", "let a stopped transformer run again", NULL, 1, 1, cli_etl_start, false},
	{"etl rm", "NAME", "remove a transformer (its workers are stopped)", NULL, 1, 1, cli_etl_rm, false},
	{"etl bucket", "NAME SRC DST",
	 "transform every object of SRC into DST on the targets that hold them (a job: aisctl job wait ID)",
	 opts_etl_bucket, 3, 3, cli_etl_bucket, false},
	{"etl logs", "NAME [NODE]", "the workers' logs (standard error) of every target, or of NODE", NULL, 1, 2,
	 cli_etl_logs, false},
	{"prefetch", "BUCKET", "fetch a remote bucket's objects into the cluster (a job: aisctl job show prefetch)",
	 opts_listrange, 1, 1, cli_prefetch, false},
	{"evict", "BUCKET", "drop the cached copies of a remote bucket's objects (the remote keeps them)",
	 opts_listrange, 1, 1, cli_evict, false},
	{"bucket cp", "SRC DST",
	 "copy a bucket's objects into another bucket inside the cluster, either of them with a remote backend or "
	 "none (a job: aisctl job wait ID)",
	 opts_bucket_cp, 2, 2, cli_bucket_cp, false},
	{"ishard", "SRC DST",
	 "pack a bucket's loose files into tar shards of another bucket, samples never split (a job: aisctl job wait ID)",
	 opts_ishard, 2, 2, cli_ishard, false},
	{"archive put", "BUCKET/SHARD",
	 "pack objects into a tar (.tar) or compressed tar (.tgz, .tar.gz) shard on the server, or append them to an "
	 "existing one (a job: aisctl job wait ID)",
	 opts_archive_put, 1, 1, cli_archive_put, false},
	{"dsort", "SRC DST",
	 "reshard, shuffle or sort the samples of tar shards into new shards of DST (may be SRC), inside the cluster "
	 "(a job: aisctl job wait ID)",
	 opts_dsort, 2, 2, cli_dsort, false},
	{"bucket rm", "BUCKET...", "destroy buckets and every object in them (a non-empty one: asks unless --yes)",
	 opts_decommission, 1, -1,
	 cli_bucket_rm, false},
	{"bucket props show", "BUCKET", "show a bucket's properties", NULL, 1, 1,
	 cli_bucket_props_show, false},
	{"bucket props set", "BUCKET KEY=VALUE...",
	 "change bucket properties (mirror.enabled, mirror.copies, versioning.enabled, versioning.history, checksum.type, access, "
	 "ec.enabled, ec.data_slices, ec.parity_slices, ec.objsize_limit, ec.whole_copy)",
	 NULL, 2, -1, cli_bucket_props_set, false},
	{"put", "FILE|DIR|- BUCKET[/OBJECT]",
	 "upload a file, standard input, or a directory with -r", opts_put, 2, 2, cli_object_put, false},
	{"get", "BUCKET/OBJECT [FILE|DIR|-]",
	 "download an object to a file (or standard output), or with -r every object under a prefix",
	 opts_get, 1, 2, cli_object_get, false},
	{"ls", "[BUCKET[/PREFIX]]",
	 "list the objects of a bucket (no BUCKET: list buckets; --archive BUCKET/SHARD: a shard's files)",
	 opts_ls, 0, 1, cli_list, false},
	{"rm", "BUCKET/OBJECT...", "delete objects (-r BUCKET/PREFIX, --prefix, --template: many; asks unless --yes)",
	 opts_rm, 1, -1, cli_object_rm, false},
	{"cp", "BUCKET[/PREFIX] BUCKET2",
	 "copy objects inside the cluster: -r every object under PREFIX, names kept (server-side, a job)", opts_cp,
	 2, 2, cli_object_cp, false},
	{"sync", "DIR BUCKET[/PREFIX] | BUCKET[/PREFIX] DIR",
	 "make the destination hold what the source holds, moving only files and objects that differ (size, xxhash)",
	 opts_sync, 2, 2, cli_sync, false},
	{"object head", "BUCKET/OBJECT",
	 "show an object's size, checksum, version, times and custom metadata", NULL, 1, 1,
	 cli_object_stat, false},
	{"stat", "BUCKET/OBJECT", "the same as object head", NULL, 1, 1, cli_object_stat, true},
	{"cluster show", "", "show every node: role, state, health, uptime, objects, capacity", NULL,
	 0, 0, cli_cluster_show, false},
	{"cluster primary", "NODE",
	 "make the gateway NODE the primary (a new term; the old one stays a gateway)", NULL, 1, 1,
	 cli_cluster_primary, false},
	{"node maintenance", "start|stop NODE",
	 "put a node in maintenance (no new objects, kept in the map when down; --drain moves its objects off) "
	 "or take it out",
	 opts_maintenance, 2, 2, cli_node_maintenance, false},
	{"node decommission", "NODE", "remove a node from the cluster for good (asks unless --yes)",
	 opts_decommission, 1, 1, cli_node_decommission, false},
	{"job show", "[rebalance|resilver|prefetch|evict|ec-encode|ID]",
	 "show a job's progress on every target (default: rebalance), or run ID's; --all: every run, finished ones "
	 "too", opts_job_show, 0, 1, cli_job_show, false},
	{"job wait", "[rebalance|resilver|prefetch|evict|ec-encode|ID]",
	 "wait until the job (or run ID) ends (progress bar on a terminal: bytes, objects, rate, ETA)", opts_job_wait,
	 0, 1, cli_job_wait, false},
	{"job start", "[rebalance | ec-encode BUCKET KEY=VALUE...]",
	 "start a rebalance on every target, or re-encode a bucket that holds objects (ec.enabled=true "
	 "ec.data_slices=D ec.parity_slices=P [ec.whole_copy=false]; or ec.enabled=false mirror.enabled=true "
	 "mirror.copies=N)",
	 NULL, 0, -1, cli_job_start, false},
	{"job stop", "[rebalance|prefetch|evict|ec-encode|ID]", "stop the job (or run ID) on every target", NULL, 0, 1,
	 cli_job_stop, false},
	{"storage mountpath show", "[NODE]",
	 "every target's mountpaths (or NODE's): state, objects, bytes, capacity, and its resilver", NULL, 0, 1,
	 cli_mountpath_show, false},
	{"storage mountpath attach", "NODE PATH",
	 "add a mountpath to target NODE while it runs; a resilver moves objects onto it", NULL, 2, 2,
	 cli_mountpath_attach, false},
	{"storage mountpath detach", "NODE PATH",
	 "remove a mountpath from target NODE: its objects move to the others, then it is closed", NULL, 2, 2,
	 cli_mountpath_detach, false},
	{"show stats", "[NODE]", "per-node statistics: uptime, objects, bytes, capacity",
	 opts_stats, 0, 1, cli_show_stats, false},
	{"config set", "KEY=VALUE...",
	 "change log.level, log.access, net.rate_limit or net.rate_burst on every node while it runs",
	 opts_config_set, 1, -1, cli_config_set, false},
	{"config show", "[KEY-PREFIX]",
	 "a node's running configuration (secrets masked), or the keys starting with KEY-PREFIX",
	 opts_config_show, 0, 1, cli_config_show, false},
	{"ml get-batch", "BUCKET OUT.tar|-",
	 "fetch many objects (or files in shards) as one tar, in the order given (GetBatch)",
	 opts_get_batch, 2, 2, cli_ml_get_batch, false},
	{"auth token create", "",
	 "print a bearer token signed with auth.secret (for operators who hold it)", opts_token_create, 0, 0,
	 cli_auth_token_create, false},
	{"help", "[COMMAND]", "show help for aisctl or for a command", NULL, 0, 3, NULL, false},
	{"__complete", "CWORD WORD...", "shell completion: candidates for word CWORD", NULL, 1, -1,
	 cli_complete, true},
};

/* Indexes into cli_global_opts (global_set). */
enum { G_ENDPOINT, G_TIMEOUT, G_CACERT, G_CERT, G_KEY, G_INSECURE, G_JSON, G_NO_PROGRESS, G_VERBOSE, G_HELP, G_VERSION,
       G_TOKEN };

static const struct cli_opt cli_global_opts[] = {
	[G_ENDPOINT] = {"endpoint", 'e', "URL",
			"cluster endpoint (default: $AIS_ENDPOINT, the config file, " CLI_DEFAULT_ENDPOINT ")"},
	[G_TIMEOUT] = {"timeout", 't', "SECS", "give up on a request after SECS seconds (default: no limit)"},
	[G_CACERT] = {"cacert", 0, "FILE", "https: verify the cluster's certificates with this PEM CA bundle"},
	[G_CERT] = {"cert", 0, "FILE", "https: present this PEM client certificate (clusters requiring mTLS)"},
	[G_KEY] = {"key", 0, "FILE", "https: the private key of --cert (default: in --cert's file)"},
	[G_INSECURE] = {"insecure", 'k', NULL, "https: do not verify the cluster's certificates (tests only)"},
	[G_JSON] = {"json", 'j', NULL, "print JSON Lines on standard output (one object a line; aisctl(1), JSON OUTPUT)"},
	[G_NO_PROGRESS] = {"no-progress", 0, NULL, "no progress bar, even on a terminal"},
	[G_VERBOSE] = {"verbose", 'v', NULL, "trace requests on stderr (twice: also libcurl's trace)"},
	[G_HELP] = {"help", 'h', NULL, "show help"},
	[G_VERSION] = {"version", 'V', NULL, "show the version"},
	[G_TOKEN] = {"token", 0, "TOKEN",
		     "bearer token sent with every request (default: $AIS_AUTHN_TOKEN, the config file's token)"},
	{0},
};

const struct cli_cmd *cli_commands(size_t *n)
{
	*n = ARRAY_SIZE(cli_cmds);
	return cli_cmds;
}

const struct cli_opt *cli_global_options(void) { return cli_global_opts; }

/* Global option values, filled wherever they appear on the command line. */
struct cli_globals {
	const char *endpoint;
	const char *timeout;
	const char *token;
	const char *cacert, *cert, *key;
	bool insecure;
	int verbose;
	bool json;
	bool no_progress;
	bool help;
	bool version;
};

/* Errors printed, and how many of them were "not found" (the exit status). */
static unsigned cli_nerrors, cli_nnotfound;

static void err_v(const char *fmt, va_list ap)
{
	fputs("aisctl: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	cli_nerrors++;
}

void cli_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_v(fmt, ap);
	va_end(ap);
}

void cli_err_notfound(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_v(fmt, ap);
	va_end(ap);
	cli_nnotfound++;
}

int cli_confirm(const struct cli_args *a, const char *what, const char *fmt, ...)
{
	if (cli_opt(a, "yes"))
		return CLI_EXIT_OK;
	if (!isatty(STDIN_FILENO)) {
		cli_err("%s: not a terminal to confirm on; pass --yes to go on", what);
		return CLI_EXIT_USAGE;
	}
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" Type yes to go on: ", stderr);
	fflush(stderr);
	char line[64];
	if (!fgets(line, sizeof(line), stdin) || strcmp(line, "yes\n")) {
		cli_err("%s: not confirmed, nothing done", what);
		return CLI_EXIT_ERR;
	}
	return CLI_EXIT_OK;
}

void cli_print_json(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	puts(s ? s : "{}");
	free(s);
	json_decref(j);
}

void cli_print_json_text(const char *p, size_t n)
{
	json_t *j = json_loadb(p ? p : "", n, 0, NULL);
	if (!j)
		j = json_pack("{s:s%}", "text", p ? p : "", n);
	cli_print_json(j);
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
	for (size_t i = 0; o && o[i].name && i < CLI_MAX_OPTS; i++)
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
		if (cli_cmds[i].hidden)
			continue;
		buf_t b = BUF_INIT;
		buf_addf(&b, "%s %s", cli_cmds[i].name, cli_cmds[i].args);
		fprintf(f, "  %-34s %s\n", b.ptr, cli_cmds[i].help);
		buf_free(&b);
	}
	fputs("\nGlobal options:\n", f);
	print_opts(f, cli_global_opts);
	fputs("\nEnvironment:\n"
	      "  AIS_ENDPOINT               default for --endpoint\n"
	      "  AIS_AUTHN_TOKEN            default for --token\n"
	      "  AIS_CACERT, AIS_CERT,      defaults for --cacert, --cert, --key;\n"
	      "  AIS_KEY, AIS_INSECURE      AIS_INSECURE=true for --insecure\n"
	      "  AISCTL_CONFIG              the config file (default ~/.config/aisctl/config:\n"
	      "                             lines 'endpoint = URL', 'timeout = SECS',\n"
	      "                             'cacert = FILE', 'cert = FILE', 'key = FILE',\n"
	      "                             'insecure = true', 'token = TOKEN')\n"
	      "\nExit status: 0 ok, 1 error, 2 bad usage or config, 3 not found (HTTP 404).\n"
	      "Run 'aisctl help COMMAND' or 'aisctl COMMAND --help' for a command's options.\n",
	      f);
}

/*
 * How many leading words of argv spell the first words of name, and (in
 * *nwords) how many words name has. "bucket props set" against
 * {"bucket","props","x"} gives 2 of 3.
 */
int cli_words_matched(const char *name, int argc, char **argv, int *nwords)
{
	int k = 0, matched = 0;
	bool still = true;
	const char *p = name;
	for (;;) {
		const char *sp = strchr(p, ' ');
		size_t n = sp ? (size_t)(sp - p) : strlen(p);
		if (still && k < argc && strlen(argv[k]) == n && memcmp(argv[k], p, n) == 0)
			matched++;
		else
			still = false;
		k++;
		if (!sp)
			break;
		p = sp + 1;
	}
	*nwords = k;
	return matched;
}

/*
 * Finds the command whose whole name is the longest run of leading words of
 * argv. Returns it with *used set to its number of words, or NULL.
 */
const struct cli_cmd *cli_cmd_lookup(int argc, char **argv, int *used)
{
	const struct cli_cmd *best = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(cli_cmds); i++) {
		int nw, m = cli_words_matched(cli_cmds[i].name, argc, argv, &nw);
		if (m == nw && (!best || nw > *used)) {
			best = &cli_cmds[i];
			*used = nw;
		}
	}
	return best;
}

/*
 * The number of leading words of argv that form a group: the first words of
 * some longer command name ("bucket", "bucket props"); 0 when none do.
 */
int cli_cmd_group(int argc, char **argv)
{
	int best = 0;
	for (size_t i = 0; i < ARRAY_SIZE(cli_cmds); i++) {
		int nw, m = cli_words_matched(cli_cmds[i].name, argc, argv, &nw);
		if (m < nw && m > best)
			best = m;
	}
	return best;
}

static void print_group(FILE *f, int nwords, char **words)
{
	buf_t g = BUF_INIT;
	for (int i = 0; i < nwords; i++)
		buf_addf(&g, "%s%s", i ? " " : "", words[i]);
	fprintf(f, "usage: aisctl %s SUBCOMMAND ...\n\nSubcommands:\n", g.ptr);
	for (size_t i = 0; i < ARRAY_SIZE(cli_cmds); i++) {
		int nw, m = cli_words_matched(cli_cmds[i].name, nwords, words, &nw);
		if (m == nwords && nw > nwords && !cli_cmds[i].hidden) {
			buf_t b = BUF_INIT;
			buf_addf(&b, "%s %s", cli_cmds[i].name, cli_cmds[i].args);
			fprintf(f, "  %-34s %s\n", b.ptr, cli_cmds[i].help);
			buf_free(&b);
		}
	}
	buf_free(&g);
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
	case G_ENDPOINT: g->endpoint = val; break;
	case G_TIMEOUT: g->timeout = val; break;
	case G_TOKEN: g->token = val; break;
	case G_CACERT: g->cacert = val; break;
	case G_CERT: g->cert = val; break;
	case G_KEY: g->key = val; break;
	case G_INSECURE: g->insecure = true; break;
	case G_JSON: g->json = true; break;
	case G_NO_PROGRESS: g->no_progress = true; break;
	case G_VERBOSE: g->verbose++; break;
	case G_HELP: g->help = true; break;
	case G_VERSION: g->version = true; break;
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
				else if (j < CLI_MAX_OPTS)
					a->val[j] = "";
			}
			continue;
		}
		if (global) {
			global_set(g, idx, val);
		} else if (idx >= CLI_MAX_OPTS) { /* a command table longer than cli_args holds */
			cli_usage_error(cmd, "option '--%s': more than %d options", o->name, CLI_MAX_OPTS);
			return AIS_ERR;
		} else {
			a->val[idx] = val;
		}
	}
	if (stop)
		*stop = argc;
	return AIS_OK;
}

/* The option's value, else the environment's, else the config file's
 * (a copy), or NULL. */
static char *pick_str(const char *opt, const char *env, const char *cfg)
{
	const char *v = opt;
	if (!v || !*v)
		v = getenv(env);
	if (!v || !*v)
		v = cfg;
	return v && *v ? xstrdup(v) : NULL;
}

/*
 * Applies global options, the environment and the config file to c.
 * Returns AIS_OK or AIS_ERR (after a message).
 */
static int cli_setup(struct cli *c, const struct cli_globals *g, const struct cli_cmd *cmd)
{
	struct cli_config cfg = {0};
	if (cli_config_load(&cfg) != AIS_OK) {
		cli_config_free(&cfg);
		return AIS_ERR;
	}
	const char *ep = g->endpoint;
	if (!ep || !*ep)
		ep = getenv("AIS_ENDPOINT");
	if (!ep || !*ep)
		ep = cfg.endpoint;
	if (!ep || !*ep)
		ep = CLI_DEFAULT_ENDPOINT;
	buf_t b = BUF_INIT;
	if (!strstr(ep, "://"))
		buf_addstr(&b, "http://");
	buf_addstr(&b, ep);
	while (b.len && b.ptr[b.len - 1] == '/')
		b.ptr[--b.len] = '\0';
	c->endpoint = buf_detach(&b, NULL);
	const char *tok = g->token;
	if (!tok || !*tok)
		tok = getenv("AIS_AUTHN_TOKEN");
	if (!tok || !*tok)
		tok = cfg.token;
	if (tok && *tok)
		c->token = xstrdup(tok);
	c->cacert = pick_str(g->cacert, "AIS_CACERT", cfg.cacert);
	c->cert = pick_str(g->cert, "AIS_CERT", cfg.cert);
	c->key = pick_str(g->key, "AIS_KEY", cfg.key);
	const char *ins = getenv("AIS_INSECURE");
	if (!ins || !*ins)
		ins = cfg.insecure;
	c->insecure = g->insecure || (ins && (!strcmp(ins, "true") || !strcmp(ins, "1") || !strcmp(ins, "yes")));
	c->verbose = g->verbose;
	c->json = g->json;
	c->progress = !g->no_progress && isatty(STDERR_FILENO);
	const char *tmo = g->timeout ? g->timeout : cfg.timeout;
	int rc = AIS_OK;
	if (tmo) {
		uint64_t t;
		if (cli_parse_u64(tmo, 1, 86400 * 365, &t) != AIS_OK) {
			if (g->timeout)
				cli_usage_error(cmd, "bad --timeout '%s': want whole seconds, at least 1", tmo);
			else
				cli_err("%s: bad timeout '%s': want whole seconds, at least 1", cfg.path, tmo);
			rc = AIS_ERR;
		}
		c->timeout_s = (long)t;
	}
	if (c->verbose && cfg.path)
		fprintf(stderr, "(config file %s)\n", cfg.path);
	cli_config_free(&cfg);
	return rc;
}

static int cmd_help(int argc, char **argv)
{
	if (argc == 0) {
		print_help(stdout);
		return CLI_EXIT_OK;
	}
	int used;
	const struct cli_cmd *cmd = cli_cmd_lookup(argc, argv, &used);
	if (cmd && used == argc) {
		print_cmd_help(stdout, cmd);
		return CLI_EXIT_OK;
	}
	int gw = cli_cmd_group(argc, argv);
	if (gw && gw == argc) {
		print_group(stdout, argc, argv);
		return CLI_EXIT_OK;
	}
	buf_t b = BUF_INIT;
	for (int i = 0; i < argc; i++)
		buf_addf(&b, "%s%s", i ? " " : "", argv[i]);
	int rc = cli_usage_error(NULL, "no such command '%s'", b.ptr);
	buf_free(&b);
	return rc;
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

	int used = 0;
	const struct cli_cmd *cmd = cli_cmd_lookup(rest, rv, &used);
	int gw = cli_cmd_group(rest, rv);
	if (!cmd || gw > used) {
		if (gw) {
			bool asked = g.help || (rest > gw && (strcmp(rv[gw], "--help") == 0 ||
							      strcmp(rv[gw], "-h") == 0));
			if (asked) {
				print_group(stdout, gw, rv);
				return CLI_EXIT_OK;
			}
			if (rest > gw)
				cli_err("unknown subcommand '%s' after '%s'", rv[gw], rv[gw - 1]);
			print_group(stderr, gw, rv);
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
		goto out_free_endpoint;
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
	if (rc == CLI_EXIT_ERR && cli_nerrors && cli_nerrors == cli_nnotfound)
		rc = CLI_EXIT_NOTFOUND;
	curl_easy_cleanup(c.curl);
out_cleanup_global:
	curl_global_cleanup();
out_free_endpoint:
	free(c.endpoint);
	free(c.token);
	free(c.cacert);
	free(c.cert);
	free(c.key);
out_free_pos:
	free(a.pos);
	return rc;
}
