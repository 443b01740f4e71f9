/*
 * cli.h - what the pieces of aisctl share: the session (endpoint, curl
 * handle, verbosity), the command table entry and its parsed arguments, and
 * the HTTP request helpers of http.c.
 *
 * Exit status of every handler: CLI_EXIT_OK, CLI_EXIT_ERR (the request or a
 * local file operation failed; a message is on stderr) or CLI_EXIT_USAGE
 * (the command line is wrong; the usage line is on stderr). main turns
 * CLI_EXIT_ERR into CLI_EXIT_NOTFOUND when every error printed was an HTTP
 * 404 (cli_err_notfound), so a script can tell "absent" from "failed".
 */
#ifndef AISD_CLI_H
#define AISD_CLI_H

#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "aisd/buf.h"

#define CLI_VERSION "0.1.0"
#define CLI_DEFAULT_ENDPOINT "http://127.0.0.1:8080"

enum { CLI_EXIT_OK = 0, CLI_EXIT_ERR = 1, CLI_EXIT_USAGE = 2, CLI_EXIT_NOTFOUND = 3 };

/* One aisctl run. */
struct cli {
	char *endpoint; /* base URL, never ends with '/' */
	long timeout_s; /* whole-request limit; 0 = none */
	int verbose;    /* 1: trace requests on stderr; 2: also libcurl's trace */
	bool json;      /* --json: machine-readable output on stdout */
	bool progress;  /* draw progress bars (stderr is a terminal, no --no-progress) */
	CURL *curl;     /* reused across requests so connections are kept alive */
	/* HTTPS (cli_tls): CA bundle, client certificate and key (mTLS), all
	 * owned, NULL when not given; insecure: no peer verification */
	char *cacert, *cert, *key;
	bool insecure;
	char *token;    /* bearer token (--token, $AIS_AUTHN_TOKEN, config); NULL: none */
};

/* An option a command accepts (beyond the global ones). */
struct cli_opt {
	const char *name; /* long name, without "--" */
	char shrt;        /* short letter, or 0 */
	const char *arg;  /* metavariable ("N", "PREFIX"); NULL for a flag */
	const char *help; /* one line */
};

#define CLI_MAX_OPTS 16 /* options of one command, at most (cli_parse refuses more) */

struct cli_args;

/*
 * A command. The table in main.c lists them all; usage and --help are
 * generated from these fields, so a new command is one table entry plus
 * its handler.
 */
struct cli_cmd {
	const char *name;           /* "put", or two words: "bucket create" */
	const char *args;           /* positional arguments, as in the usage line */
	const char *help;           /* one line: what it does */
	const struct cli_opt *opts; /* options it takes, {0}-terminated; may be NULL */
	int min_args;               /* positional arguments accepted ... */
	int max_args;               /* ... max_args -1: no upper limit */
	int (*fn)(struct cli *c, const struct cli_args *a); /* returns CLI_EXIT_* */
	bool hidden;                /* an alias or internal mode: not in --help */
};

/* A command line after parsing: options by name, positionals in order. */
struct cli_args {
	const struct cli_cmd *cmd;
	const char *val[CLI_MAX_OPTS]; /* by index in cmd->opts; a set flag is "" */
	char **pos;
	int npos;
};

/* main.c */
/* The value of option name, "" for a set flag, NULL when not given. */
const char *cli_opt(const struct cli_args *a, const char *name);
/* Prints "aisctl: <msg>" and the command's usage on stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prints "aisctl: <msg>" on stderr. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, for a thing that does not exist (HTTP 404): see CLI_EXIT_NOTFOUND. */
void cli_err_notfound(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Asks before something that cannot be undone: CLI_EXIT_OK when the command
 * has --yes, or stdin is a terminal and the user types "yes" after the
 * question (fmt). Otherwise says why with what ("destroy bucket b") and
 * returns CLI_EXIT_USAGE (no terminal: pass --yes) or CLI_EXIT_ERR (not
 * confirmed).
 */
int cli_confirm(const struct cli_args *a, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * --json output, one shape for every command (aisctl(1), JSON OUTPUT): JSON
 * Lines, each line of stdout one complete compact JSON object. A command
 * about one thing prints one line; a list prints one object per line (ls,
 * bucket ls, etl ls); a repeated report one line per report.
 * cli_print_json prints j so (keys in their order; "{}" when it cannot be
 * encoded) and frees it; cli_print_json_text does it for a server's JSON
 * answer of n bytes (not JSON: {"text": ...}).
 */
void cli_print_json(json_t *j);
void cli_print_json_text(const char *p, size_t n);
/* The command table (main.c), for completion: *n entries. */
const struct cli_cmd *cli_commands(size_t *n);
const struct cli_opt *cli_global_options(void);
/*
 * How many leading words of argv spell the first words of a command name,
 * and (*nwords) how many words the name has: "bucket props set" against
 * {"bucket","props","x"} gives 2 of 3.
 */
int cli_words_matched(const char *name, int argc, char **argv, int *nwords);
/* The command whose whole name is the longest run of leading words of argv
 * (*used: its words), or NULL. */
const struct cli_cmd *cli_cmd_lookup(int argc, char **argv, int *used);
/* How many leading words of argv are the first words of a longer command
 * name ("bucket", "bucket props"); 0 when none are. */
int cli_cmd_group(int argc, char **argv);
/* Parses a decimal count in [min, max]; AIS_OK or AIS_ERR. */
int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Formats n bytes as "123B", "1.5KiB", "2.0GiB" into out. */
void cli_human_size(uint64_t n, char *out, size_t outsz);

/* cfgfile.c: the config file's values (NULL when not set). */
struct cli_config {
	char *path; /* the file that was read, or NULL */
	char *endpoint;
	char *timeout;
	char *token;
	char *cacert, *cert, *key, *insecure;
};
/* Reads the config file if there is one; AIS_OK, or AIS_ERR after a message. */
int cli_config_load(struct cli_config *cfg);
/*
 * Parses config text (len bytes, any bytes) into cfg, later keys replacing
 * earlier ones. Returns AIS_OK, or AIS_ERR with "LINE: why" in err; cfg
 * then holds what the lines before it set (free it either way).
 */
int cli_config_parse(const char *text, size_t len, struct cli_config *cfg, buf_t *err);
void cli_config_free(struct cli_config *cfg);

/* http.c */
struct cli_hdr {
	char *name;
	char *value;
};

struct cli_req {
	const char *method;         /* "GET", "PUT", ... */
	const char *path;           /* already escaped: "/v1/objects/b/o" */
	const char *json;           /* body sent as application/json, or NULL */
	int upload_fd;              /* >= 0: the body is read from this fd */
	int64_t upload_size;        /* its size; -1 = unknown (chunked) */
	struct curl_slist *headers; /* extra request headers, or NULL */
	int sink_fd;                /* >= 0: a 2xx body is written here */
	const char *range;          /* "START-END" for a Range request, or NULL */
	struct cli_progress *progress; /* updated as the body moves, or NULL */
};

/* CLI_REQ_INIT: no body, no upload, the response body kept in memory. */
#define CLI_REQ_INIT(m, p) \
	((struct cli_req){.method = (m), .path = (p), .upload_fd = -1, .upload_size = -1, .sink_fd = -1})

struct cli_resp {
	long status;          /* HTTP status of the final response */
	buf_t reason;         /* its reason phrase */
	buf_t body;           /* the body, unless it went to sink_fd (errors always land here) */
	struct cli_hdr *hdrs; /* headers of the final response */
	size_t nhdrs;
	uint64_t sunk;        /* bytes written to sink_fd */
	int sink_errno;       /* a write to sink_fd failed with this errno */
};

/* One request in flight: what the curl callbacks of its easy handle share. */
struct cli_xfer {
	struct cli *c;
	CURL *h;
	const struct cli_req *rq;
	struct cli_resp *rs;
	struct curl_slist *hdrs;
	buf_t url;
	char errbuf[CURL_ERROR_SIZE];
	int64_t upload_start; /* offset of the upload fd when the request began */
	uint64_t uploaded;    /* bytes handed to curl since the last rewind */
	bool range_ignored;   /* a Range request got a whole 2xx body: stopped */
	int64_t t0;
};

/* Applies --cacert, --cert, --key and --insecure to a handle (http.c). */
void cli_tls(const struct cli *c, CURL *h);
/*
 * cli_xfer_setup prepares the easy handle h to send rq (for a curl multi
 * handle, or curl_easy_perform); cli_xfer_finish reads the outcome after
 * the transfer ended with cc and frees what setup allocated. x, rq and rs
 * must stay put in between; rs must be zeroed. finish returns as cli_http.
 */
void cli_xfer_setup(struct cli *c, CURL *h, const struct cli_req *rq, struct cli_resp *rs,
		    struct cli_xfer *x);
int cli_xfer_finish(struct cli_xfer *x, CURLcode cc);
/*
 * When libcurl's failure cc (its text err) on a request to endpoint is one
 * users can fix (the cluster down, http against https and the reverse, a
 * CA not given, a client certificate required), writes a message saying
 * what to pass into out and returns true; else false. have_cacert,
 * have_cert: whether --cacert and --cert were given.
 */
bool cli_curl_hint(CURLcode cc, const char *err, const char *endpoint, bool have_cacert, bool have_cert,
		   buf_t *out);

/*
 * cli_http sends one request, following redirects with the method and body
 * kept (an upload fd is rewound with lseek). Returns AIS_OK when a response
 * came back, whatever its status; on a connection or transfer error it prints
 * why and returns AIS_ERR. rs must be zeroed; free it with cli_resp_free.
 */
int cli_http(struct cli *c, const struct cli_req *rq, struct cli_resp *rs);
/*
 * cli_http_check returns AIS_OK for a 2xx response. Otherwise it prints
 * "aisctl: <message> (HTTP N)" on stderr, the message taken from the JSON
 * error body, else from the body text, else "<what>: <reason phrase>".
 */
int cli_http_check(const struct cli_resp *rs, const char *what);
/* Value of response header name (case-insensitive), or NULL. */
const char *cli_resp_header(const struct cli_resp *rs, const char *name);
void cli_resp_free(struct cli_resp *rs);
/*
 * Splits "BUCKET/OBJECT" (an "ais://" prefix is allowed) into newly
 * allocated strings. need_object: the object part must be non-empty.
 * Returns AIS_OK, or AIS_ERR when the bucket (or the needed object) is empty.
 */
int cli_split_uname(const char *arg, bool need_object, char **bucket, char **object);
/* "a,b" -> ["a","b"] (empty items left out): a new JSON array. */
json_t *cli_list_of(const char *s);

/* put.c: the regular files under a folder (links to regular files
 * followed), sorted by their '/'-separated path under it. */
struct cli_file {
	char *rel; /* path under the directory, '/'-separated */
	uint64_t size;
};
struct cli_walk {
	struct cli_file *files;
	size_t n, cap;
	uint64_t bytes; /* the files' total size */
	bool failed;    /* some entry could not be read (said on stderr) */
};
void cli_walk_dir(struct cli_walk *w, const char *root);
void cli_walk_free(struct cli_walk *w);
/* xxhash64 (seed 0) of fd from its offset to the end as 16 hex digits
 * (the offset restored). AIS_OK, or AIS_ERR with errno. */
int cli_file_xxhash(int fd, char out[17]);
/*
 * Uploads the files of w (under dir) as bucket/prefix+rel, conc at a time
 * (put -r's machinery: streamed, --checksum sends each xxhash64). prefix is
 * "" or ends with '/'. Counts what was uploaded and what failed (each
 * failure said). AIS_OK, or AIS_ERR when libcurl itself failed.
 */
int cli_put_files(struct cli *c, const char *dir, const char *bucket, const char *prefix, struct cli_walk *w,
		  size_t conc, bool checksum, uint64_t *files, uint64_t *bytes, uint64_t *failed);

/* progress.c: a one-line progress bar on stderr, drawn only when on. */
struct cli_progress {
	bool on;
	const char *label;    /* what moves: a file or object name, or "" */
	uint64_t total;       /* bytes expected; 0 = unknown */
	uint64_t done;        /* bytes moved so far */
	uint64_t files_total; /* > 1: also show "files done/total" */
	uint64_t files_done;
	int64_t t0_ns;
	int64_t drawn_ns; /* when the bar was last drawn */
	bool drawn;
};
void cli_progress_start(struct cli_progress *p, bool on, const char *label, uint64_t total,
			uint64_t files_total);
/* Records progress; redraws at most 10 times a second. */
void cli_progress_set(struct cli_progress *p, uint64_t done, uint64_t files_done);
/* Erases the bar (the summary line is the caller's). */
void cli_progress_end(struct cli_progress *p);
/* "12.5MiB/s" for n bytes over ns nanoseconds. */
void cli_human_rate(uint64_t n, int64_t ns, char *out, size_t outsz);

/* object.c: "/v1/objects/<bucket>/<object>", both escaped ('/' kept in the object). */
void cli_object_path(buf_t *path, const char *bucket, const char *object);
/* The part of s after its last '/' ("" when s ends with '/'). */
const char *cli_base_name(const char *s);
/* A download to the file dest goes first to a temporary file in dest's
 * directory (so the rename is atomic): its name in tmp, its descriptor
 * returned; -1 (the error said) when it cannot be created. */
int cli_tmp_open(const char *dest, buf_t *tmp);
/* Finishes that file: when ok it gets the mode the umask allows, is closed
 * and renamed to dest; when not ok, or any of that fails (said), it is
 * closed and removed. Returns whether dest is in place. */
bool cli_tmp_finish(int fd, const char *tmp, const char *dest, bool ok);

/* stats.c: one node's stats (GET /v1/daemon?what=stats; NULL or an error
 * object gives "-") as table cells. */
struct cli_node_cells {
	char uptime[32];  /* "3d04h", "2h05m", "4m10s", "42s" */
	char objects[32];
	char bytes[32];   /* human size of the objects */
	char disk[64];    /* "used/total" over the mountpaths, human */
	char pct[16];     /* disk used, "37%" */
};
void cli_node_cells(json_t *st, struct cli_node_cells *out);

/* Handlers (bucket.c, object.c, put.c, list.c, cluster.c, node.c, stats.c,
 * config.c, ml.c, complete.c). */
int cli_config_set(struct cli *c, const struct cli_args *a);
int cli_config_show(struct cli *c, const struct cli_args *a);
int cli_bucket_create(struct cli *c, const struct cli_args *a);
/* etl.c */
int cli_etl_init(struct cli *c, const struct cli_args *a);
int cli_etl_ls(struct cli *c, const struct cli_args *a);
int cli_etl_show(struct cli *c, const struct cli_args *a);
int cli_etl_stop(struct cli *c, const struct cli_args *a);
int cli_etl_start(struct cli *c, const struct cli_args *a);
int cli_etl_rm(struct cli *c, const struct cli_args *a);
int cli_etl_logs(struct cli *c, const struct cli_args *a);
/* remote.c */
int cli_remote_attach(struct cli *c, const struct cli_args *a);
int cli_remote_detach(struct cli *c, const struct cli_args *a);
int cli_remote_show(struct cli *c, const struct cli_args *a);
int cli_prefetch(struct cli *c, const struct cli_args *a);
int cli_bucket_cp(struct cli *c, const struct cli_args *a); /* bucket.c */
int cli_etl_bucket(struct cli *c, const struct cli_args *a); /* bucket.c */
/* Starts the copy-bck or etl-bck job (action) SRC -> DST with its value v
 * (taken); its id in *id (newly allocated), the server's answer appended
 * to answer (either may be NULL). AIS_OK or AIS_ERR (said). bucket.c. */
int cli_copy_bck(struct cli *c, const char *action, const char *src, const char *dst, json_t *v, char **id,
		 buf_t *answer);
int cli_object_cp(struct cli *c, const struct cli_args *a); /* recursive.c */
int cli_ishard(struct cli *c, const struct cli_args *a);    /* ishard.c */
int cli_archive_put(struct cli *c, const struct cli_args *a); /* archive.c */
int cli_dsort(struct cli *c, const struct cli_args *a);     /* dsort.c */
/* method BASE+NAME (percent-encoded) with a JSON body (may be NULL);
 * AIS_OK for a 2xx (its body appended to body, may be NULL), else the
 * error printed (cli_http_check). bucket.c. */
int cli_json_call(struct cli *c, const char *method, const char *base, const char *name, const char *json,
		  const char *what, buf_t *body);
int cli_evict(struct cli *c, const struct cli_args *a);
/* s3://B, s3://@ALIAS/B or ais://@ALIAS/B into a backend props object. */
struct json_t;
int cli_backend_parse(const char *spec, struct json_t **out);
int cli_bucket_ls(struct cli *c, const struct cli_args *a);
int cli_bucket_rm(struct cli *c, const struct cli_args *a);
int cli_bucket_props_show(struct cli *c, const struct cli_args *a);
int cli_bucket_props_set(struct cli *c, const struct cli_args *a);
/* job start ec-encode BUCKET KEY=VALUE...: POST {"action":"ec-encode"} (bucket.c). */
int cli_bucket_encode(struct cli *c, const struct cli_args *a);
int cli_object_put(struct cli *c, const struct cli_args *a);
int cli_object_get(struct cli *c, const struct cli_args *a);
int cli_object_rm(struct cli *c, const struct cli_args *a);
int cli_object_stat(struct cli *c, const struct cli_args *a);
/* recursive.c: rm -r/--prefix/--template and get -r (called by rm and get). */
int cli_object_rm_many(struct cli *c, const struct cli_args *a);
int cli_object_get_dir(struct cli *c, const struct cli_args *a);
int cli_sync(struct cli *c, const struct cli_args *a); /* sync.c */
/*
 * Calls fn(entry, arg) for every object of bucket whose name starts with
 * prefix (NULL or "": all), in listing order, page by page; props: the
 * properties to list ("name,size,checksum"). Entries without a name are
 * skipped. Stops when fn returns other than AIS_OK. AIS_OK when the whole
 * listing was walked, else AIS_ERR (a listing error is printed).
 */
int cli_list_each(struct cli *c, const char *bucket, const char *prefix, const char *props,
		  int (*fn)(json_t *entry, void *arg), void *arg);
/* Whether the '/'-separated relative name rel stays under the folder it is
 * joined to: not empty, not absolute, no empty, "." or ".." part. */
bool cli_rel_name_safe(const char *rel);
/* mkdir -p of the folders of dir/rel above its last part. AIS_OK, or
 * AIS_ERR after a message. */
int cli_make_parents(const char *dir, const char *rel);
/* Downloads bucket/name into the file dest through a temporary file next to
 * it (renamed when complete); *size: the bytes. AIS_OK, or AIS_ERR said. */
int cli_get_to_file(struct cli *c, const char *bucket, const char *name, const char *dest, uint64_t *size);
int cli_list(struct cli *c, const struct cli_args *a);
int cli_cluster_show(struct cli *c, const struct cli_args *a);
int cli_cluster_primary(struct cli *c, const struct cli_args *a);
int cli_node_maintenance(struct cli *c, const struct cli_args *a);
int cli_node_decommission(struct cli *c, const struct cli_args *a);
int cli_show_stats(struct cli *c, const struct cli_args *a);
int cli_complete(struct cli *c, const struct cli_args *a);
int cli_ml_get_batch(struct cli *c, const struct cli_args *a);
/* bucket.c: the bucket names (newly allocated array of strings); AIS_OK or AIS_ERR. */
int cli_bucket_names(struct cli *c, char ***names, size_t *n);
int cli_job_show(struct cli *c, const struct cli_args *a); /* job.c */
int cli_mountpath_show(struct cli *c, const struct cli_args *a); /* mountpath.c */
int cli_mountpath_attach(struct cli *c, const struct cli_args *a);
int cli_mountpath_detach(struct cli *c, const struct cli_args *a);
int cli_job_wait(struct cli *c, const struct cli_args *a);
int cli_job_start(struct cli *c, const struct cli_args *a);
int cli_job_stop(struct cli *c, const struct cli_args *a);
int cli_auth_token_create(struct cli *c, const struct cli_args *a); /* auth.c */

#endif
