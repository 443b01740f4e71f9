/*
 * put.c - "aisctl put": one file (or standard input) as one object, or with
 * -r every regular file under a directory, uploaded --conc at a time on one
 * curl multi handle (connections kept and reused across files and targets).
 *
 * Naming: "put FILE BUCKET" stores FILE's base name; "put -r DIR
 * BUCKET[/PREFIX]" stores each file under PREFIX/ by its path relative to
 * DIR ("put -r photos b/2024" makes b/2024/a/x.jpg of photos/a/x.jpg).
 * Symbolic links to regular files are followed; links to directories and
 * special files are skipped with a note on stderr.
 *
 * Guarantees: no file is ever held in memory (each body streams from its
 * own fd, rewound when a gateway redirects); with --checksum each file's
 * xxhash64 goes along so the server rejects a corrupted upload; one failed
 * file does not stop the others, each failure is one line on stderr, and
 * the exit status is non-zero if any file failed. The progress bar shows
 * only on a terminal; the summary line (or --json document) goes to stdout.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

#define CKS_BUF_SIZE   (1024 * 1024)
#define CONC_DEFAULT   8
#define CONC_MAX       256
#define WALK_DEPTH_MAX 256

/*
 * xxhash64 (seed 0) of fd from its current offset to the end, as 16 hex
 * digits (canonical, big-endian) into out; the offset is restored.
 * Returns AIS_OK, or AIS_ERR with errno set.
 */
int cli_file_xxhash(int fd, char out[17])
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

/* Appends the checksum headers of fd to *hdrs. AIS_OK, or AIS_ERR with errno. */
static int checksum_headers(int fd, struct curl_slist **hdrs)
{
	char hex[17];
	if (cli_file_xxhash(fd, hex) != AIS_OK)
		return AIS_ERR;
	buf_t h = BUF_INIT;
	buf_addf(&h, "Ais-Checksum-Value: %s", hex);
	*hdrs = curl_slist_append(*hdrs, "Ais-Checksum-Type: xxhash");
	*hdrs = curl_slist_append(*hdrs, h.ptr);
	buf_free(&h);
	return AIS_OK;
}

/* --- one file or standard input ---------------------------------------------- */

static int put_one(struct cli *c, const struct cli_args *a, const char *file, const char *bucket,
                   const char *object)
{
	bool from_stdin = strcmp(file, "-") == 0;
	int rc = CLI_EXIT_ERR;

	if (from_stdin && cli_opt(a, "checksum"))
		return cli_usage_error(a->cmd, "--checksum needs a FILE (standard input is read once)");
	int fd = from_stdin ? STDIN_FILENO : open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cli_err("%s: %s", file, strerror(errno));
		return CLI_EXIT_ERR;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		cli_err("%s: %s", file, strerror(errno));
		goto out_close;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = cli_usage_error(a->cmd, "%s is a directory: add -r to upload the files under it", file);
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
		if (!S_ISREG(st.st_mode)) {
			rc = cli_usage_error(a->cmd, "--checksum needs a regular file");
			goto out_close;
		}
		if (checksum_headers(fd, &hdrs) != AIS_OK) {
			cli_err("%s: %s", file, strerror(errno));
			goto out_close;
		}
	}

	buf_t path = BUF_INIT, what = BUF_INIT;
	cli_object_path(&path, bucket, object);
	buf_addf(&what, "put %s/%s", bucket, object);
	struct cli_req rq = CLI_REQ_INIT("PUT", path.ptr);
	rq.upload_fd = fd;
	rq.upload_size = size;
	rq.headers = hdrs;
	struct cli_progress prog;
	cli_progress_start(&prog, c->progress, object, size > 0 ? (uint64_t)size : 0, 1);
	rq.progress = &prog;
	struct cli_resp rs = {0};
	int64_t t0 = time_mono_ns();
	bool ok = cli_http(c, &rq, &rs) == AIS_OK;
	cli_progress_end(&prog);
	if (ok && cli_http_check(&rs, what.ptr) == AIS_OK) {
		const char *src = from_stdin ? "stdin" : file;
		if (c->json) {
			json_t *j =
			        json_pack("{s:s,s:s,s:s,s:o,s:f}", "bucket", bucket, "name", object, "file",
			                  src, "size", size >= 0 ? json_integer(size) : json_null(),
			                  "seconds", (double)(time_mono_ns() - t0) / 1e9);
			cli_print_json(j);
		} else if (size >= 0) {
			char hs[32];
			cli_human_size((uint64_t)size, hs, sizeof(hs));
			printf("put %s as %s/%s (%s)\n", src, bucket, object, hs);
		} else {
			printf("put %s as %s/%s\n", src, bucket, object);
		}
		rc = CLI_EXIT_OK;
	}
	cli_resp_free(&rs);
	buf_free(&what);
	buf_free(&path);
	curl_slist_free_all(hdrs);
out_close:
	if (!from_stdin)
		close(fd);
	return rc;
}

/* --- a directory ------------------------------------------------------------- */

/* Adds every regular file under dir/rel to w, depth first. */
static void walk_dir(struct cli_walk *w, const char *root, const char *rel, int depth)
{
	buf_t path = BUF_INIT;
	buf_addstr(&path, root);
	if (*rel)
		buf_addf(&path, "/%s", rel);
	DIR *d = opendir(path.ptr);
	if (!d) {
		cli_err("%s: %s", path.ptr, strerror(errno));
		w->failed = true;
		buf_free(&path);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		buf_t sub = BUF_INIT, full = BUF_INIT;
		buf_addf(&sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		buf_addf(&full, "%s/%s", path.ptr, e->d_name);
		struct stat st;
		if (lstat(full.ptr, &st) != 0) {
			cli_err("%s: %s", full.ptr, strerror(errno));
			w->failed = true;
		} else if (S_ISDIR(st.st_mode)) {
			if (depth < WALK_DEPTH_MAX)
				walk_dir(w, root, sub.ptr, depth + 1);
			else
				fprintf(stderr, "aisctl: skipping %s: deeper than %d levels\n", full.ptr,
				        WALK_DEPTH_MAX);
		} else if (S_ISLNK(st.st_mode) && (stat(full.ptr, &st) != 0 || !S_ISREG(st.st_mode))) {
			fprintf(stderr, "aisctl: skipping %s: a link to a directory or a special file\n",
			        full.ptr);
		} else if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
			fprintf(stderr, "aisctl: skipping %s: not a regular file\n", full.ptr);
		} else {
			if (w->n == w->cap) {
				w->cap = w->cap ? w->cap * 2 : 64;
				w->files = xrealloc(w->files, w->cap * sizeof(*w->files));
			}
			w->files[w->n++] =
			        (struct cli_file){.rel = buf_detach(&sub, NULL), .size = (uint64_t)st.st_size};
			w->bytes += (uint64_t)st.st_size;
		}
		buf_free(&sub);
		buf_free(&full);
	}
	closedir(d);
	buf_free(&path);
}

static int file_cmp(const void *x, const void *y)
{
	return strcmp(((const struct cli_file *)x)->rel, ((const struct cli_file *)y)->rel);
}

void cli_walk_dir(struct cli_walk *w, const char *root)
{
	walk_dir(w, root, "", 0);
	if (w->n)
		qsort(w->files, w->n, sizeof(*w->files), file_cmp);
}

void cli_walk_free(struct cli_walk *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->files[i].rel);
	free(w->files);
	*w = (struct cli_walk){0};
}

/* One upload in flight. */
struct slot {
	CURL *h;
	bool busy;
	size_t file; /* index into the walk */
	int fd;
	buf_t path;
	struct curl_slist *hdrs;
	struct cli_req rq;
	struct cli_resp rs;
	struct cli_xfer x;
};

struct batch {
	struct cli *c;
	const char *dir;
	const char *bucket;
	const char *prefix; /* "" or ends with '/' */
	bool checksum;
	struct cli_walk w;
	size_t next;
	uint64_t done_files, done_bytes, failed;
};

static void object_name(const struct batch *b, size_t i, buf_t *out)
{
	buf_addf(out, "%s%s", b->prefix, b->w.files[i].rel);
}

/* Starts file b->next on slot s. AIS_OK, or AIS_ERR (counted, reported) to try the next. */
static int slot_start(struct batch *b, struct slot *s, CURLM *m)
{
	size_t i = b->next++;
	buf_t local = BUF_INIT, name = BUF_INIT;
	buf_addf(&local, "%s/%s", b->dir, b->w.files[i].rel);
	object_name(b, i, &name);
	s->fd = open(local.ptr, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0 || (b->checksum && checksum_headers(s->fd, &s->hdrs) != AIS_OK)) {
		cli_err("%s: %s", local.ptr, strerror(errno));
		goto fail;
	}
	struct stat st;
	if (fstat(s->fd, &st) != 0) {
		cli_err("%s: %s", local.ptr, strerror(errno));
		goto fail;
	}
	s->file = i;
	buf_reset(&s->path);
	cli_object_path(&s->path, b->bucket, name.ptr);
	s->rq = CLI_REQ_INIT("PUT", s->path.ptr);
	s->rq.upload_fd = s->fd;
	s->rq.upload_size = (int64_t)st.st_size;
	s->rq.headers = s->hdrs;
	s->rs = (struct cli_resp){0};
	cli_xfer_setup(b->c, s->h, &s->rq, &s->rs, &s->x);
	if (curl_multi_add_handle(m, s->h) != CURLM_OK) {
		cli_xfer_finish(&s->x, CURLE_FAILED_INIT);
		cli_resp_free(&s->rs);
		goto fail;
	}
	s->busy = true;
	buf_free(&local);
	buf_free(&name);
	return AIS_OK;
fail:
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	curl_slist_free_all(s->hdrs);
	s->hdrs = NULL;
	b->failed++;
	buf_free(&local);
	buf_free(&name);
	return AIS_ERR;
}

/* A transfer of slot s ended with cc: checks the answer and frees the slot. */
static void slot_done(struct batch *b, struct slot *s, CURLM *m, CURLcode cc, struct cli_progress *prog)
{
	curl_multi_remove_handle(m, s->h);
	long status = 0;
	curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK || status < 200 || status >= 300)
		cli_progress_end(prog); /* an error line follows */
	buf_t what = BUF_INIT;
	buf_addf(&what, "put %s/", b->bucket);
	object_name(b, s->file, &what);
	if (cli_xfer_finish(&s->x, cc) == AIS_OK && cli_http_check(&s->rs, what.ptr) == AIS_OK) {
		b->done_files++;
		b->done_bytes += b->w.files[s->file].size;
	} else {
		b->failed++;
	}
	buf_free(&what);
	cli_resp_free(&s->rs);
	close(s->fd);
	s->fd = -1;
	curl_slist_free_all(s->hdrs);
	s->hdrs = NULL;
	s->busy = false;
}

/* Runs every upload of b, conc at a time. AIS_OK, or AIS_ERR if libcurl failed. */
static int batch_run(struct batch *b, size_t conc, struct cli_progress *prog)
{
	CURLM *m = curl_multi_init();
	if (!m)
		return AIS_ERR;
	struct slot *slots = xcalloc(conc, sizeof(*slots));
	int rc = AIS_OK;
	for (size_t k = 0; k < conc; k++) {
		slots[k].h = curl_easy_init();
		slots[k].fd = -1;
		if (!slots[k].h)
			rc = AIS_ERR;
	}
	size_t active = 0;
	while (rc == AIS_OK && (b->next < b->w.n || active > 0)) {
		for (size_t k = 0; k < conc && b->next < b->w.n; k++)
			if (!slots[k].busy && slot_start(b, &slots[k], m) == AIS_OK)
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
			struct slot *s = (struct slot *)((char *)x - offsetof(struct slot, x));
			slot_done(b, s, m, msg->data.result, prog);
			active--;
		}
		uint64_t moving = b->done_bytes;
		for (size_t k = 0; k < conc; k++)
			if (slots[k].busy)
				moving += slots[k].x.uploaded;
		cli_progress_set(prog, moving, b->done_files);
		if (active && curl_multi_poll(m, NULL, 0, 100, NULL) != CURLM_OK)
			rc = AIS_ERR;
	}
	for (size_t k = 0; k < conc; k++) {
		if (slots[k].busy) {
			curl_multi_remove_handle(m, slots[k].h);
			cli_xfer_finish(&slots[k].x, CURLE_ABORTED_BY_CALLBACK);
			cli_resp_free(&slots[k].rs);
			close(slots[k].fd);
			curl_slist_free_all(slots[k].hdrs);
		}
		if (slots[k].h)
			curl_easy_cleanup(slots[k].h);
		buf_free(&slots[k].path);
	}
	free(slots);
	curl_multi_cleanup(m);
	return rc;
}

int cli_put_files(struct cli *c, const char *dir, const char *bucket, const char *prefix, struct cli_walk *w,
		  size_t conc, bool checksum, uint64_t *files, uint64_t *bytes, uint64_t *failed)
{
	struct batch b = {.c = c, .dir = dir, .bucket = bucket, .prefix = prefix, .checksum = checksum, .w = *w};
	struct cli_progress prog;
	cli_progress_start(&prog, c->progress, dir, w->bytes, w->n);
	int rc = w->n ? batch_run(&b, MIN(conc, w->n), &prog) : AIS_OK;
	cli_progress_end(&prog);
	*files = b.done_files;
	*bytes = b.done_bytes;
	*failed = b.failed;
	return rc;
}

static int put_dir(struct cli *c, const struct cli_args *a, const char *dir, const char *bucket,
                   const char *prefix)
{
	uint64_t conc = CONC_DEFAULT;
	const char *cs = cli_opt(a, "conc");
	if (cs && cli_parse_u64(cs, 1, CONC_MAX, &conc) != AIS_OK)
		return cli_usage_error(a->cmd, "bad --conc '%s': want 1..%d", cs, CONC_MAX);

	buf_t pfx = BUF_INIT, root = BUF_INIT;
	buf_addstr(&pfx, prefix);
	if (pfx.len && pfx.ptr[pfx.len - 1] != '/')
		buf_addch(&pfx, '/');
	buf_addstr(&root, dir);
	while (root.len > 1 && root.ptr[root.len - 1] == '/')
		root.ptr[--root.len] = '\0';
	struct batch b = {.c = c,
	                  .dir = root.ptr,
	                  .bucket = bucket,
	                  .prefix = pfx.ptr ? pfx.ptr : "",
	                  .checksum = cli_opt(a, "checksum") != NULL};
	walk_dir(&b.w, root.ptr, "", 0);
	if (b.w.failed)
		b.failed++;
	qsort(b.w.files, b.w.n, sizeof(*b.w.files), file_cmp);

	struct cli_progress prog;
	cli_progress_start(&prog, c->progress, dir, b.w.bytes, b.w.n);
	int64_t t0 = time_mono_ns();
	int rc = batch_run(&b, (size_t)MIN(conc, (uint64_t)(b.w.n ? b.w.n : 1)), &prog);
	cli_progress_end(&prog);
	int64_t ns = time_mono_ns() - t0;
	if (rc != AIS_OK) {
		cli_err("put %s: libcurl failed", dir);
		b.failed++;
	}

	if (c->json) {
		json_t *j = json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:f}", "dir", dir, "bucket", bucket, "prefix",
		                      b.prefix, "files", (json_int_t)b.done_files, "bytes",
		                      (json_int_t)b.done_bytes, "failed", (json_int_t)b.failed, "seconds",
		                      (double)ns / 1e9);
		cli_print_json(j);
	} else {
		char hs[32], rate[32];
		cli_human_size(b.done_bytes, hs, sizeof(hs));
		cli_human_rate(b.done_bytes, ns, rate, sizeof(rate));
		printf("put %llu file%s (%s) from %s to %s/%s in %.2fs (%s)%s",
		       (unsigned long long)b.done_files, b.done_files == 1 ? "" : "s", hs, dir, bucket,
		       b.prefix, (double)ns / 1e9, rate, b.failed ? "" : "\n");
		if (b.failed)
			printf(", %llu failed\n", (unsigned long long)b.failed);
	}
	for (size_t i = 0; i < b.w.n; i++)
		free(b.w.files[i].rel);
	free(b.w.files);
	buf_free(&pfx);
	buf_free(&root);
	return b.failed ? CLI_EXIT_ERR : CLI_EXIT_OK;
}

int cli_object_put(struct cli *c, const struct cli_args *a)
{
	const char *file = a->pos[0];
	char *bucket, *object;
	int rc;

	if (cli_split_uname(a->pos[1], false, &bucket, &object) != AIS_OK)
		return cli_usage_error(a->cmd, "want BUCKET[/OBJECT], got '%s'", a->pos[1]);
	struct stat st;
	bool is_dir = strcmp(file, "-") != 0 && stat(file, &st) == 0 && S_ISDIR(st.st_mode);
	if (cli_opt(a, "conc") && !is_dir) {
		rc = cli_usage_error(a->cmd, "--conc goes with -r DIR");
	} else if (is_dir && cli_opt(a, "recursive")) {
		rc = put_dir(c, a, file, bucket, object);
	} else if (*object) {
		rc = put_one(c, a, file, bucket, object);
	} else {
		/* "put dir/file.txt bucket" stores the object "file.txt" */
		const char *b = cli_base_name(file);
		if (strcmp(file, "-") == 0 || !*b || is_dir)
			rc = is_dir ? cli_usage_error(
			                      a->cmd,
			                      "%s is a directory: add -r to upload the files under it", file)
			            : cli_usage_error(a->cmd, "name the object: BUCKET/OBJECT");
		else
			rc = put_one(c, a, file, bucket, b);
	}
	free(bucket);
	free(object);
	return rc;
}
