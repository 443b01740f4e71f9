/*
 * object.c - aisctl's object commands: get, rm and object head on
 * /v1/objects/<bucket>/<object> (put is in put.c).
 *
 * Guarantees: get writes to a temporary file next to the destination and
 * renames it into place only when the whole body arrived, so a failed
 * download leaves no file behind (or the old file untouched; also when
 * SIGINT, SIGTERM or SIGHUP ends aisctl); its progress bar shows only on a
 * terminal, and never when the object itself goes to a terminal. rm goes
 * on after a failure and exits non-zero if any object could not be deleted.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

#define CKS_BUF_SIZE (1024 * 1024)

/* The temporary file of a download in progress, removed if a signal ends us. */
static char *volatile get_tmp_path;

static void get_on_signal(int sig)
{
	char *p = get_tmp_path;
	if (p)
		unlink(p);
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * on: SIGINT, SIGTERM and SIGHUP remove get_tmp_path before they end the
 * process (a signal that was ignored stays ignored); off: back as before.
 */
static void get_cleanup_signals(bool on)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	static struct sigaction saved[3];
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		if (on) {
			struct sigaction sa = {0};
			sigaction(sigs[i], NULL, &saved[i]);
			if (saved[i].sa_handler == SIG_IGN)
				continue;
			sa.sa_handler = get_on_signal;
			sigemptyset(&sa.sa_mask);
			sigaction(sigs[i], &sa, NULL);
		} else {
			sigaction(sigs[i], &saved[i], NULL);
		}
	}
	if (!on)
		get_tmp_path = NULL;
}

void cli_object_path(buf_t *path, const char *bucket, const char *object)
{
	buf_addstr(path, "/v1/objects/");
	buf_add_pct(path, sv_from(bucket), false);
	buf_addch(path, '/');
	buf_add_pct(path, sv_from(object), true);
}

const char *cli_base_name(const char *s)
{
	const char *slash = strrchr(s, '/');
	return slash ? slash + 1 : s;
}

int cli_tmp_open(const char *dest, buf_t *tmp)
{
	const char *slash = strrchr(dest, '/');
	size_t dirlen = slash ? (size_t)(slash - dest) + 1 : 0;
	buf_add(tmp, dest, dirlen);
	buf_addf(tmp, ".%s.aisctl-XXXXXX", dest + dirlen);
	int fd = mkostemp(tmp->ptr, O_CLOEXEC);
	if (fd < 0)
		cli_err("%s: cannot create a temporary file: %s", dest, strerror(errno));
	return fd;
}

bool cli_tmp_finish(int fd, const char *tmp, const char *dest, bool ok)
{
	mode_t um = umask(0);
	umask(um);
	if (ok && fchmod(fd, 0666 & ~um) != 0) {
		cli_err("%s: %s", tmp, strerror(errno));
		ok = false;
	}
	if (close(fd) != 0 && ok) {
		cli_err("%s: %s", tmp, strerror(errno));
		ok = false;
	}
	if (ok && rename(tmp, dest) != 0) {
		cli_err("%s: %s", dest, strerror(errno));
		ok = false;
	}
	if (!ok)
		unlink(tmp);
	return ok;
}

/* "START-END" (START <= END), "START-" or "-SUFFIX", digits only. */
static bool range_valid(const char *r)
{
	const char *dash = strchr(r, '-');
	uint64_t start, end;
	if (!dash || strchr(dash + 1, '-') || (dash == r && !dash[1]))
		return false;
	for (const char *p = r; *p; p++)
		if (p != dash && (*p < '0' || *p > '9'))
			return false;
	if (dash == r || !dash[1])
		return true;
	return num_parse_u64(r, (size_t)(dash - r), 0, UINT64_MAX, &start) == AIS_OK &&
	       cli_parse_u64(dash + 1, 0, UINT64_MAX, &end) == AIS_OK && start <= end;
}

int cli_object_get(struct cli *c, const struct cli_args *a)
{
	char *bucket, *object;
	const char *range = cli_opt(a, "range");
	int rc = CLI_EXIT_ERR;

	if (cli_opt(a, "recursive"))
		return cli_object_get_dir(c, a);
	if (cli_opt(a, "conc"))
		return cli_usage_error(a->cmd, "--conc goes with -r");
	if (cli_split_uname(a->pos[0], true, &bucket, &object) != AIS_OK)
		return cli_usage_error(a->cmd, "want BUCKET/OBJECT, got '%s'", a->pos[0]);
	if (range && !range_valid(range)) {
		rc = cli_usage_error(a->cmd, "bad --range '%s': want START-END, START- or -LAST",
				     range);
		goto out_free_names;
	}

	/* Where the bytes go: stdout, a named file, or a file in a directory. */
	const char *arg = a->npos > 1 ? a->pos[1] : NULL;
	bool to_stdout = arg && strcmp(arg, "-") == 0;
	if (to_stdout && c->json) {
		rc = cli_usage_error(a->cmd, "--json needs a FILE: the object itself goes to stdout with -");
		goto out_free_names;
	}
	buf_t dest = BUF_INIT;
	if (!to_stdout) {
		struct stat st;
		const char *b = cli_base_name(object);
		bool is_dir = arg && stat(arg, &st) == 0 && S_ISDIR(st.st_mode);
		if ((!arg || is_dir) && (!*b || strcmp(b, ".") == 0 || strcmp(b, "..") == 0)) {
			rc = cli_usage_error(a->cmd, "name the destination FILE for '%s'", object);
			goto out_free_dest;
		}
		if (arg)
			buf_addstr(&dest, arg);
		if (is_dir) {
			if (dest.ptr[dest.len - 1] != '/')
				buf_addch(&dest, '/');
			buf_addstr(&dest, b);
		} else if (!arg) {
			buf_addstr(&dest, b);
		}
	}

	/* The temporary file lives in the destination's directory, so rename
	 * is atomic. */
	buf_t tmp = BUF_INIT;
	int fd = STDOUT_FILENO;
	if (!to_stdout) {
		fd = cli_tmp_open(dest.ptr, &tmp);
		if (fd < 0)
			goto out_free_tmp;
		get_tmp_path = tmp.ptr;
		get_cleanup_signals(true);
	}

	buf_t path = BUF_INIT;
	cli_object_path(&path, bucket, object);
	if (cli_opt(a, "version")) {
		buf_addstr(&path, "?version=");
		buf_add_pct(&path, sv_from(cli_opt(a, "version")), false);
	}
	struct cli_req rq = CLI_REQ_INIT("GET", path.ptr);
	rq.sink_fd = fd;
	rq.range = range;
	struct cli_progress prog;
	cli_progress_start(&prog, c->progress && !(to_stdout && isatty(STDOUT_FILENO)), object, 0, 1);
	rq.progress = &prog;
	struct cli_resp rs = {0};
	buf_t what = BUF_INIT;
	buf_addf(&what, "get %s/%s", bucket, object);
	int64_t t0 = time_mono_ns();
	bool ok = cli_http(c, &rq, &rs) == AIS_OK;
	cli_progress_end(&prog);
	ok = ok && cli_http_check(&rs, what.ptr) == AIS_OK;
	if (ok && range && rs.status != 206) {
		cli_err("%s: the server ignored the range (HTTP %ld)", what.ptr, rs.status);
		ok = false;
	}
	if (!to_stdout) {
		ok = cli_tmp_finish(fd, tmp.ptr, dest.ptr, ok);
		get_cleanup_signals(false);
	}
	if (ok && !to_stdout && c->json) {
		json_t *j = json_pack("{s:s,s:s,s:s,s:I,s:f}", "bucket", bucket, "name", object, "file",
				      dest.ptr, "size", (json_int_t)rs.sunk, "seconds",
				      (double)(time_mono_ns() - t0) / 1e9);
		cli_print_json(j);
	} else if (ok && (c->verbose || prog.drawn_ns)) {
		/* on a terminal (the bar was shown) or asked for: one summary line */
		char hs[32], rate[32];
		cli_human_size(rs.sunk, hs, sizeof(hs));
		cli_human_rate(rs.sunk, time_mono_ns() - t0, rate, sizeof(rate));
		fprintf(stderr, "got %s/%s as %s (%s, %s)\n", bucket, object,
			to_stdout ? "stdout" : dest.ptr, hs, rate);
	}
	if (ok)
		rc = CLI_EXIT_OK;
	buf_free(&what);
	cli_resp_free(&rs);
	buf_free(&path);
out_free_tmp:
	buf_free(&tmp);
out_free_dest:
	buf_free(&dest);
out_free_names:
	free(bucket);
	free(object);
	return rc;
}

int cli_object_rm(struct cli *c, const struct cli_args *a)
{
	int rc = CLI_EXIT_OK;
	if (cli_opt(a, "recursive") || cli_opt(a, "prefix") || cli_opt(a, "template"))
		return cli_object_rm_many(c, a);
	json_t *done = json_array();
	for (int i = 0; i < a->npos; i++) {
		char *bucket, *object;
		if (cli_split_uname(a->pos[i], true, &bucket, &object) != AIS_OK) {
			cli_err("want BUCKET/OBJECT, got '%s'", a->pos[i]);
			rc = CLI_EXIT_ERR;
			continue;
		}
		buf_t path = BUF_INIT, what = BUF_INIT;
		cli_object_path(&path, bucket, object);
		buf_addf(&what, "rm %s/%s", bucket, object);
		struct cli_req rq = CLI_REQ_INIT("DELETE", path.ptr);
		struct cli_resp rs = {0};
		if (cli_http(c, &rq, &rs) != AIS_OK || cli_http_check(&rs, what.ptr) != AIS_OK)
			rc = CLI_EXIT_ERR;
		else if (c->json)
			json_array_append_new(done, json_pack("{s:s,s:s}", "bucket", bucket, "name", object));
		else
			printf("deleted %s/%s\n", bucket, object);
		cli_resp_free(&rs);
		buf_free(&what);
		buf_free(&path);
		free(bucket);
		free(object);
	}
	if (c->json) {
		cli_print_json(json_pack("{s:o}", "deleted", done));
	} else {
		json_decref(done);
	}
	return rc;
}

int cli_object_stat(struct cli *c, const struct cli_args *a)
{
	char *bucket, *object;
	int rc = CLI_EXIT_ERR;

	if (cli_split_uname(a->pos[0], true, &bucket, &object) != AIS_OK)
		return cli_usage_error(a->cmd, "want BUCKET/OBJECT, got '%s'", a->pos[0]);
	buf_t path = BUF_INIT, what = BUF_INIT;
	cli_object_path(&path, bucket, object);
	buf_addf(&what, "head %s/%s", bucket, object);
	struct cli_req rq = CLI_REQ_INIT("HEAD", path.ptr);
	struct cli_resp rs = {0};
	if (cli_http(c, &rq, &rs) != AIS_OK || cli_http_check(&rs, what.ptr) != AIS_OK)
		goto out;

	const char *size = cli_resp_header(&rs, "Ais-Size");
	if (!size)
		size = cli_resp_header(&rs, "Content-Length");
	const char *ctype = cli_resp_header(&rs, "Ais-Checksum-Type");
	const char *cval = cli_resp_header(&rs, "Ais-Checksum-Value");
	const char *version = cli_resp_header(&rs, "Ais-Version");
	const char *atime = cli_resp_header(&rs, "Ais-Atime");
	const char *mtime = cli_resp_header(&rs, "Last-Modified");
	const char *custom = cli_resp_header(&rs, "Ais-Custom-Md");
	uint64_t n;
	bool size_ok = size && cli_parse_u64(size, 0, INT64_MAX, &n) == AIS_OK;

	if (c->json) {
		json_t *j = json_object();
		json_object_set_new(j, "bucket", json_string(bucket));
		json_object_set_new(j, "name", json_string(object));
		json_object_set_new(j, "size", size_ok ? json_integer((json_int_t)n) : json_null());
		json_object_set_new(j, "checksum",
				    json_pack("{s:s,s:s}", "type", ctype ? ctype : "", "value",
					      cval ? cval : ""));
		json_object_set_new(j, "version", version ? json_string(version) : json_null());
		json_object_set_new(j, "atime", atime ? json_string(atime) : json_null());
		json_object_set_new(j, "mtime", mtime ? json_string(mtime) : json_null());
		json_object_set_new(j, "custom", custom ? json_string(custom) : json_null());
		cli_print_json(j);
		rc = CLI_EXIT_OK;
		goto out;
	}

	printf("%-10s %s/%s\n", "name", bucket, object);
	if (size_ok) {
		char hs[32];
		cli_human_size(n, hs, sizeof(hs));
		printf("%-10s %s (%s)\n", "size", size, hs);
	} else {
		printf("%-10s %s\n", "size", size ? size : "-");
	}
	if (ctype || cval)
		printf("%-10s %s %s\n", "checksum", ctype ? ctype : "-", cval ? cval : "-");
	else
		printf("%-10s -\n", "checksum");
	printf("%-10s %s\n", "version", version ? version : "-");
	printf("%-10s %s\n", "mtime", mtime ? mtime : "-");
	printf("%-10s %s\n", "atime", atime ? atime : "-");
	printf("%-10s %s\n", "custom", custom ? custom : "-");
	rc = CLI_EXIT_OK;
out:
	cli_resp_free(&rs);
	buf_free(&what);
	buf_free(&path);
	free(bucket);
	free(object);
	return rc;
}
