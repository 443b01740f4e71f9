/*
 * object.c - aisctl's object commands: put, get, rm and stat on
 * /v1/objects/<bucket>/<object>.
 *
 * Guarantees: put streams the file (or standard input, chunked) and never
 * holds it in memory; with --checksum it sends the file's xxhash64 so the
 * server rejects a corrupted upload. get writes to a temporary file next to
 * the destination and renames it into place only when the whole body
 * arrived, so a failed download leaves no file behind (or the old file
 * untouched; also when SIGINT, SIGTERM or SIGHUP ends aisctl). rm goes on after a failure and exits 1 if any object could not
 * be deleted.
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

/* "/v1/objects/<bucket>/<object>", both escaped ('/' kept in the object). */
static void object_path(buf_t *path, const char *bucket, const char *object)
{
	buf_addstr(path, "/v1/objects/");
	cli_escape(path, bucket, false);
	buf_addch(path, '/');
	cli_escape(path, object, true);
}

/* The part of s after its last '/' ("" when s ends with '/'). */
static const char *base_name(const char *s)
{
	const char *slash = strrchr(s, '/');
	return slash ? slash + 1 : s;
}

/*
 * xxhash64 (seed 0) of fd from its current offset to the end, as 16 hex
 * digits (canonical, big-endian) into out; the offset is restored.
 * Returns AIS_OK, or AIS_ERR with errno set.
 */
static int file_xxhash(int fd, char out[17])
{
	off_t start = lseek(fd, 0, SEEK_CUR);
	if (start < 0)
		return AIS_ERR;
	XXH64_state_t *st = XXH64_createState();
	char *buf = xmalloc(CKS_BUF_SIZE);
	int rc = AIS_ERR;
	XXH64_reset(st, 0);
	for (;;) {
		ssize_t r = read(fd, buf, CKS_BUF_SIZE);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto out;
		if (r == 0)
			break;
		XXH64_update(st, buf, (size_t)r);
	}
	XXH64_canonical_t canon;
	XXH64_canonicalFromHash(&canon, XXH64_digest(st));
	hex_encode(canon.digest, sizeof(canon.digest), out);
	if (lseek(fd, start, SEEK_SET) < 0)
		goto out;
	rc = AIS_OK;
out:
	free(buf);
	XXH64_freeState(st);
	return rc;
}

int cli_object_put(struct cli *c, const struct cli_args *a)
{
	const char *file = a->pos[0];
	bool from_stdin = strcmp(file, "-") == 0;
	char *bucket, *object;
	int rc = CLI_EXIT_ERR;

	if (cli_split_uname(a->pos[1], false, &bucket, &object) != AIS_OK)
		return cli_usage_error(a->cmd, "want BUCKET/OBJECT, got '%s'", a->pos[1]);
	if (!*object) {
		/* "put dir/file.txt bucket" stores the object "file.txt" */
		const char *b = base_name(file);
		if (from_stdin || !*b) {
			rc = cli_usage_error(a->cmd, "name the object: BUCKET/OBJECT");
			goto out_free_names;
		}
		free(object);
		object = xstrdup(b);
	}
	if (from_stdin && cli_opt(a, "checksum")) {
		rc = cli_usage_error(a->cmd, "--checksum needs a FILE (standard input is read once)");
		goto out_free_names;
	}

	int fd = from_stdin ? STDIN_FILENO : open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cli_err("%s: %s", file, strerror(errno));
		goto out_free_names;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		cli_err("%s: %s", file, strerror(errno));
		goto out_close;
	}
	if (S_ISDIR(st.st_mode)) {
		cli_err("%s: is a directory", file);
		goto out_close;
	}
	/* A regular file (also as stdin: "< file") is sent with its length and can
	 * be rewound for a redirect; anything else is streamed chunked. */
	int64_t size = -1;
	if (S_ISREG(st.st_mode)) {
		off_t pos = lseek(fd, 0, SEEK_CUR);
		size = pos < 0 ? st.st_size : st.st_size - pos;
	}

	struct curl_slist *hdrs = NULL;
	if (cli_opt(a, "checksum")) {
		char hex[17];
		if (!S_ISREG(st.st_mode)) {
			rc = cli_usage_error(a->cmd, "--checksum needs a regular file");
			goto out_close;
		}
		if (file_xxhash(fd, hex) != AIS_OK) {
			cli_err("%s: %s", file, strerror(errno));
			goto out_close;
		}
		buf_t h = BUF_INIT;
		buf_addf(&h, "Ais-Checksum-Value: %s", hex);
		hdrs = curl_slist_append(hdrs, "Ais-Checksum-Type: xxhash");
		hdrs = curl_slist_append(hdrs, h.ptr);
		buf_free(&h);
	}

	buf_t path = BUF_INIT;
	object_path(&path, bucket, object);
	struct cli_req rq = CLI_REQ_INIT("PUT", path.ptr);
	rq.upload_fd = fd;
	rq.upload_size = size;
	rq.headers = hdrs;
	struct cli_resp rs = {0};
	buf_t what = BUF_INIT;
	buf_addf(&what, "put %s/%s", bucket, object);
	if (cli_http(c, &rq, &rs) == AIS_OK && cli_http_check(&rs, what.ptr) == AIS_OK) {
		if (size >= 0) {
			char hs[32];
			cli_human_size((uint64_t)size, hs, sizeof(hs));
			printf("put %s as %s/%s (%s)\n", from_stdin ? "stdin" : file, bucket, object,
			       hs);
		} else {
			printf("put %s as %s/%s\n", from_stdin ? "stdin" : file, bucket, object);
		}
		rc = CLI_EXIT_OK;
	}
	buf_free(&what);
	cli_resp_free(&rs);
	buf_free(&path);
	curl_slist_free_all(hdrs);
out_close:
	if (!from_stdin)
		close(fd);
out_free_names:
	free(bucket);
	free(object);
	return rc;
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
	buf_t dest = BUF_INIT;
	if (!to_stdout) {
		struct stat st;
		const char *b = base_name(object);
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
		const char *slash = strrchr(dest.ptr, '/');
		size_t dirlen = slash ? (size_t)(slash - dest.ptr) + 1 : 0;
		buf_add(&tmp, dest.ptr, dirlen);
		buf_addf(&tmp, ".%s.aisctl-XXXXXX", dest.ptr + dirlen);
		fd = mkostemp(tmp.ptr, O_CLOEXEC);
		if (fd < 0) {
			cli_err("%s: cannot create a temporary file: %s", dest.ptr, strerror(errno));
			goto out_free_tmp;
		}
		get_tmp_path = tmp.ptr;
		get_cleanup_signals(true);
	}

	buf_t path = BUF_INIT;
	object_path(&path, bucket, object);
	struct cli_req rq = CLI_REQ_INIT("GET", path.ptr);
	rq.sink_fd = fd;
	rq.range = range;
	struct cli_resp rs = {0};
	buf_t what = BUF_INIT;
	buf_addf(&what, "get %s/%s", bucket, object);
	bool ok = cli_http(c, &rq, &rs) == AIS_OK && cli_http_check(&rs, what.ptr) == AIS_OK;
	if (ok && range && rs.status != 206) {
		cli_err("%s: the server ignored the range (HTTP %ld)", what.ptr, rs.status);
		ok = false;
	}
	if (!to_stdout) {
		mode_t um = umask(0);
		umask(um);
		if (ok && fchmod(fd, 0666 & ~um) != 0) {
			cli_err("%s: %s", tmp.ptr, strerror(errno));
			ok = false;
		}
		if (close(fd) != 0 && ok) {
			cli_err("%s: %s", tmp.ptr, strerror(errno));
			ok = false;
		}
		if (ok && rename(tmp.ptr, dest.ptr) != 0) {
			cli_err("%s: %s", dest.ptr, strerror(errno));
			ok = false;
		}
		if (!ok)
			unlink(tmp.ptr);
		else if (c->verbose)
			fprintf(stderr, "got %s/%s as %s (%" PRIu64 " bytes)\n", bucket, object,
				dest.ptr, rs.sunk);
		get_cleanup_signals(false);
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
	for (int i = 0; i < a->npos; i++) {
		char *bucket, *object;
		if (cli_split_uname(a->pos[i], true, &bucket, &object) != AIS_OK) {
			cli_err("want BUCKET/OBJECT, got '%s'", a->pos[i]);
			rc = CLI_EXIT_ERR;
			continue;
		}
		buf_t path = BUF_INIT, what = BUF_INIT;
		object_path(&path, bucket, object);
		buf_addf(&what, "rm %s/%s", bucket, object);
		struct cli_req rq = CLI_REQ_INIT("DELETE", path.ptr);
		struct cli_resp rs = {0};
		if (cli_http(c, &rq, &rs) == AIS_OK && cli_http_check(&rs, what.ptr) == AIS_OK)
			printf("deleted %s/%s\n", bucket, object);
		else
			rc = CLI_EXIT_ERR;
		cli_resp_free(&rs);
		buf_free(&what);
		buf_free(&path);
		free(bucket);
		free(object);
	}
	return rc;
}

/* An atime given as nanoseconds (or seconds) since the epoch, as UTC text. */
static void format_epoch(const char *s, char *out, size_t outsz)
{
	uint64_t v;
	out[0] = '\0';
	if (cli_parse_u64(s, 0, UINT64_MAX, &v) != AIS_OK)
		return;
	time_t t = (time_t)(v > 100000000000ULL ? v / 1000000000ULL : v);
	struct tm tm;
	if (gmtime_r(&t, &tm))
		strftime(out, outsz, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int cli_object_stat(struct cli *c, const struct cli_args *a)
{
	char *bucket, *object;
	int rc = CLI_EXIT_ERR;

	if (cli_split_uname(a->pos[0], true, &bucket, &object) != AIS_OK)
		return cli_usage_error(a->cmd, "want BUCKET/OBJECT, got '%s'", a->pos[0]);
	buf_t path = BUF_INIT, what = BUF_INIT;
	object_path(&path, bucket, object);
	buf_addf(&what, "stat %s/%s", bucket, object);
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

	if (cli_opt(a, "json")) {
		json_t *j = json_object();
		uint64_t n;
		json_object_set_new(j, "name", json_string(object));
		json_object_set_new(j, "bucket", json_string(bucket));
		if (size && cli_parse_u64(size, 0, INT64_MAX, &n) == AIS_OK)
			json_object_set_new(j, "size", json_integer((json_int_t)n));
		if (ctype || cval)
			json_object_set_new(j, "checksum",
					    json_pack("{s:s,s:s}", "type", ctype ? ctype : "",
						      "value", cval ? cval : ""));
		if (version)
			json_object_set_new(j, "version", json_string(version));
		if (atime)
			json_object_set_new(j, "atime", json_string(atime));
		if (mtime)
			json_object_set_new(j, "last_modified", json_string(mtime));
		char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		puts(s);
		free(s);
		json_decref(j);
		rc = CLI_EXIT_OK;
		goto out;
	}

	printf("%-14s %s/%s\n", "name", bucket, object);
	uint64_t n;
	if (size && cli_parse_u64(size, 0, UINT64_MAX, &n) == AIS_OK) {
		char hs[32];
		cli_human_size(n, hs, sizeof(hs));
		printf("%-14s %s (%s)\n", "size", size, hs);
	} else {
		printf("%-14s %s\n", "size", size ? size : "-");
	}
	if (ctype || cval)
		printf("%-14s %s %s\n", "checksum", ctype ? ctype : "-", cval ? cval : "-");
	else
		printf("%-14s -\n", "checksum");
	printf("%-14s %s\n", "version", version ? version : "-");
	if (atime) {
		char t[64];
		format_epoch(atime, t, sizeof(t));
		printf("%-14s %s%s%s%s\n", "atime", atime, t[0] ? " (" : "", t, t[0] ? ")" : "");
	} else {
		printf("%-14s -\n", "atime");
	}
	printf("%-14s %s\n", "last-modified", mtime ? mtime : "-");
	rc = CLI_EXIT_OK;
out:
	cli_resp_free(&rs);
	buf_free(&what);
	buf_free(&path);
	free(bucket);
	free(object);
	return rc;
}
