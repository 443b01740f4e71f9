/*
 * cli.h - what the pieces of aisctl share: the session (endpoint, curl
 * handle, verbosity), the command table entry and its parsed arguments, and
 * the HTTP request helpers of http.c.
 *
 * Exit status of every handler: CLI_EXIT_OK, CLI_EXIT_ERR (the request or a
 * local file operation failed; a message is on stderr) or CLI_EXIT_USAGE
 * (the command line is wrong; the usage line is on stderr).
 */
#ifndef AISD_CLI_H
#define AISD_CLI_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

#include "aisd/buf.h"

#define CLI_VERSION "0.1.0"
#define CLI_DEFAULT_ENDPOINT "http://127.0.0.1:8080"

enum { CLI_EXIT_OK = 0, CLI_EXIT_ERR = 1, CLI_EXIT_USAGE = 2 };

/* One aisctl run. */
struct cli {
	char *endpoint; /* base URL, never ends with '/' */
	long timeout_s; /* whole-request limit; 0 = none */
	int verbose;    /* 1: trace requests on stderr; 2: also libcurl's trace */
	CURL *curl;     /* reused across requests so connections are kept alive */
};

/* An option a command accepts (beyond the global ones). */
struct cli_opt {
	const char *name; /* long name, without "--" */
	char shrt;        /* short letter, or 0 */
	const char *arg;  /* metavariable ("N", "PREFIX"); NULL for a flag */
	const char *help; /* one line */
};

#define CLI_MAX_OPTS 8

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
/* Parses a decimal count in [min, max]; AIS_OK or AIS_ERR. */
int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Formats n bytes as "123B", "1.5KiB", "2.0GiB" into out. */
void cli_human_size(uint64_t n, char *out, size_t outsz);

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
 * Appends s to b percent-encoded: every byte but A-Z a-z 0-9 - . _ ~ (and
 * '/' when keep_slash) becomes %XX.
 */
void cli_escape(buf_t *b, const char *s, bool keep_slash);
/*
 * Splits "BUCKET/OBJECT" (an "ais://" prefix is allowed) into newly
 * allocated strings. need_object: the object part must be non-empty.
 * Returns AIS_OK, or AIS_ERR when the bucket (or the needed object) is empty.
 */
int cli_split_uname(const char *arg, bool need_object, char **bucket, char **object);

/* Handlers (bucket.c, object.c, list.c, cluster.c, node.c, config.c). */
int cli_config_set(struct cli *c, const struct cli_args *a);
int cli_bucket_create(struct cli *c, const struct cli_args *a);
int cli_bucket_ls(struct cli *c, const struct cli_args *a);
int cli_bucket_rm(struct cli *c, const struct cli_args *a);
int cli_object_put(struct cli *c, const struct cli_args *a);
int cli_object_get(struct cli *c, const struct cli_args *a);
int cli_object_rm(struct cli *c, const struct cli_args *a);
int cli_object_stat(struct cli *c, const struct cli_args *a);
int cli_list(struct cli *c, const struct cli_args *a);
int cli_cluster_show(struct cli *c, const struct cli_args *a);
int cli_cluster_primary(struct cli *c, const struct cli_args *a);
int cli_node_maintenance(struct cli *c, const struct cli_args *a);
int cli_node_decommission(struct cli *c, const struct cli_args *a);
int cli_job_show(struct cli *c, const struct cli_args *a); /* job.c */
int cli_job_wait(struct cli *c, const struct cli_args *a);
int cli_job_start(struct cli *c, const struct cli_args *a);
int cli_job_stop(struct cli *c, const struct cli_args *a);
int cli_ml_get_batch(struct cli *c, const struct cli_args *a); /* ml.c */

#endif
