/*
 * sync.c - "aisctl sync DIR BUCKET[/PREFIX]" and "aisctl sync
 * BUCKET[/PREFIX] DIR": make the destination hold what the source holds,
 * moving only what differs, as "aws s3 sync" and "mc mirror" do.
 *
 * Direction: when the first argument is an existing folder the files go up,
 * else the objects come down (DIR is created). Names: a file DIR/a/b is the
 * object PREFIX/a/b (PREFIX gets a '/' when it lacks one), as with put -r
 * and get -r; an object whose name would leave DIR is refused (get -r).
 *
 * What moves: a file and its object are the same when their sizes match and
 * the object's xxhash (the listing's checksum) equals the file's xxhash64;
 * only the others move (missing, other size, other checksum, or an object
 * whose checksum is not an xxhash). --delete also removes what the source
 * lacks (objects under PREFIX, or files under DIR), asking first unless
 * --yes; --dry-run prints each "upload", "download" or "delete" line and
 * changes nothing. The summary counts transferred, skipped, deleted and
 * failed, and the bytes moved; the exit status is 1 if anything failed.
 */
#include <errno.h>
#include <fcntl.h>
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

#define SYNC_CONC_DEFAULT 8
#define SYNC_CONC_MAX     256

/* An object of the listing: its name after the prefix, size and xxhash. */
struct sobj {
	char *rel;
	uint64_t size;
	char xxh[17]; /* "" when the object has no xxhash */
	bool seen;    /* a local file has its name */
};

struct slist {
	struct sobj *v;
	size_t n, cap;
	size_t plen; /* length of the prefix to strip */
};

static int collect_obj(json_t *e, void *arg)
{
	struct slist *l = arg;
	const char *name = json_string_value(json_object_get(e, "name"));
	if (strlen(name) < l->plen)
		return AIS_OK;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	struct sobj *o = &l->v[l->n++];
	*o = (struct sobj){.rel = xstrdup(name + l->plen)};
	json_t *sz = json_object_get(e, "size");
	o->size = json_is_integer(sz) && json_integer_value(sz) > 0 ? (uint64_t)json_integer_value(sz) : 0;
	/* "xxhash:HEX", or {"type","value"} */
	json_t *ck = json_object_get(e, "checksum");
	const char *cv = json_string_value(ck), *type = NULL;
	if (json_is_object(ck)) {
		type = json_string_value(json_object_get(ck, "type"));
		cv = json_string_value(json_object_get(ck, "value"));
	} else if (cv && strchr(cv, ':')) {
		type = cv;
		cv = strchr(cv, ':') + 1;
	}
	if (cv && strlen(cv) == 16 && (!type || !strncmp(type, "xxhash", 6)))
		memcpy(o->xxh, cv, 17);
	return AIS_OK;
}

static int sobj_cmp(const void *x, const void *y)
{
	return strcmp(((const struct sobj *)x)->rel, ((const struct sobj *)y)->rel);
}

static void slist_free(struct slist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].rel);
	free(l->v);
}

/* Whether the file path (size bytes) has the object's size and xxhash. */
static bool same(const char *path, uint64_t size, const struct sobj *o)
{
	if (size != o->size || !o->xxh[0])
		return false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char hex[17];
	bool eq = cli_file_xxhash(fd, hex) == AIS_OK && !strcmp(hex, o->xxh);
	close(fd);
	return eq;
}

struct counts {
	uint64_t moved, bytes, skipped, deleted, failed;
};

static void summary(struct cli *c, const char *src, const char *dst, bool up, bool dry, const struct counts *n)
{
	if (c->json) {
		cli_print_json(json_pack("{s:s,s:s,s:b,s:I,s:I,s:I,s:I,s:I}", "from", src, "to", dst, "dry_run", dry,
					 up ? "uploaded" : "downloaded", (json_int_t)n->moved, "bytes",
					 (json_int_t)n->bytes, "skipped", (json_int_t)n->skipped, "deleted",
					 (json_int_t)n->deleted, "failed", (json_int_t)n->failed));
		return;
	}
	char hs[32];
	cli_human_size(n->bytes, hs, sizeof(hs));
	printf("sync %s -> %s%s: %s %llu (%s), skipped %llu, deleted %llu%s", src, dst, dry ? " (dry run)" : "",
	       up ? "uploaded" : "downloaded", (unsigned long long)n->moved, hs, (unsigned long long)n->skipped,
	       (unsigned long long)n->deleted, n->failed ? "" : "\n");
	if (n->failed)
		printf(", failed %llu\n", (unsigned long long)n->failed);
}

/* Asks before deleting n things (--yes, --dry-run: no question). */
static int ask_delete(const struct cli_args *a, size_t n, const char *where)
{
	if (!n || cli_opt(a, "dry-run"))
		return CLI_EXIT_OK;
	buf_t what = BUF_INIT;
	buf_addf(&what, "sync --delete in %s", where);
	int rc = cli_confirm(a, what.ptr, "Delete %zu thing%s in %s that the source does not have?", n,
			     n == 1 ? "" : "s", where);
	buf_free(&what);
	return rc;
}

/* DIR -> BUCKET/PREFIX */
static int sync_up(struct cli *c, const struct cli_args *a, const char *dir, const char *bucket, const char *pfx,
		   size_t conc)
{
	bool dry = cli_opt(a, "dry-run") != NULL, del = cli_opt(a, "delete") != NULL;
	struct slist l = {.plen = strlen(pfx)};
	struct cli_walk w = {0}, todo = {0};
	struct counts n = {0};
	int rc = CLI_EXIT_ERR;
	cli_walk_dir(&w, dir);
	if (w.failed)
		n.failed++;
	if (cli_list_each(c, bucket, pfx, "name,size,checksum", collect_obj, &l) != AIS_OK)
		goto out;
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), sobj_cmp);
	for (size_t i = 0; i < w.n; i++) {
		struct sobj key = {.rel = w.files[i].rel};
		struct sobj *o = l.n ? bsearch(&key, l.v, l.n, sizeof(*l.v), sobj_cmp) : NULL;
		buf_t path = BUF_INIT;
		buf_addf(&path, "%s/%s", dir, w.files[i].rel);
		if (o)
			o->seen = true;
		if (o && same(path.ptr, w.files[i].size, o)) {
			n.skipped++;
		} else if (dry) {
			printf("upload %s to %s/%s%s\n", path.ptr, bucket, pfx, w.files[i].rel);
			n.moved++;
			n.bytes += w.files[i].size;
		} else {
			if (todo.n == todo.cap) {
				todo.cap = todo.cap ? todo.cap * 2 : 64;
				todo.files = xrealloc(todo.files, todo.cap * sizeof(*todo.files));
			}
			todo.files[todo.n++] = (struct cli_file){.rel = xstrdup(w.files[i].rel), .size = w.files[i].size};
			todo.bytes += w.files[i].size;
		}
		buf_free(&path);
	}
	if (todo.n) {
		uint64_t f = 0;
		if (cli_put_files(c, dir, bucket, pfx, &todo, conc, true, &n.moved, &n.bytes, &f) != AIS_OK)
			f++;
		n.failed += f;
	}
	if (del) {
		size_t gone = 0;
		for (size_t i = 0; i < l.n; i++)
			gone += !l.v[i].seen;
		buf_t where = BUF_INIT;
		buf_addf(&where, "%s/%s", bucket, pfx);
		rc = ask_delete(a, gone, where.ptr);
		buf_free(&where);
		if (rc != CLI_EXIT_OK)
			goto out;
		for (size_t i = 0; i < l.n; i++) {
			if (l.v[i].seen)
				continue;
			buf_t name = BUF_INIT, path = BUF_INIT, what = BUF_INIT;
			buf_addf(&name, "%s%s", pfx, l.v[i].rel);
			if (dry) {
				printf("delete %s/%s\n", bucket, name.ptr);
				n.deleted++;
			} else {
				cli_object_path(&path, bucket, name.ptr);
				buf_addf(&what, "delete %s/%s", bucket, name.ptr);
				struct cli_req rq = CLI_REQ_INIT("DELETE", path.ptr);
				struct cli_resp rs = {0};
				if (cli_http(c, &rq, &rs) == AIS_OK && cli_http_check(&rs, what.ptr) == AIS_OK)
					n.deleted++;
				else
					n.failed++;
				cli_resp_free(&rs);
			}
			buf_free(&what);
			buf_free(&path);
			buf_free(&name);
		}
	}
	buf_t to = BUF_INIT;
	buf_addf(&to, "%s/%s", bucket, pfx);
	summary(c, dir, to.ptr, true, dry, &n);
	buf_free(&to);
	rc = n.failed ? CLI_EXIT_ERR : CLI_EXIT_OK;
out:
	cli_walk_free(&todo);
	cli_walk_free(&w);
	slist_free(&l);
	return rc;
}

/* BUCKET/PREFIX -> DIR */
static int sync_down(struct cli *c, const struct cli_args *a, const char *bucket, const char *pfx, const char *dir)
{
	bool dry = cli_opt(a, "dry-run") != NULL, del = cli_opt(a, "delete") != NULL;
	struct slist l = {.plen = strlen(pfx)};
	struct cli_walk w = {0};
	struct counts n = {0};
	int rc = CLI_EXIT_ERR;
	struct stat st;
	if (!dry && mkdir(dir, 0777) != 0 && (errno != EEXIST || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
		cli_err("%s: %s", dir, errno == EEXIST ? "exists and is not a folder" : strerror(errno));
		return CLI_EXIT_ERR;
	}
	if (stat(dir, &st) == 0)
		cli_walk_dir(&w, dir);
	if (cli_list_each(c, bucket, pfx, "name,size,checksum", collect_obj, &l) != AIS_OK)
		goto out;
	for (size_t i = 0; i < l.n; i++) {
		struct sobj *o = &l.v[i];
		if (!cli_rel_name_safe(o->rel)) {
			cli_err("skipping %s/%s%s: its name would be written outside %s", bucket, pfx, o->rel, dir);
			n.failed++;
			continue;
		}
		struct cli_file key = {.rel = o->rel}, *f = NULL;
		for (size_t lo = 0, hi = w.n; lo < hi && !f;) { /* w is sorted by rel */
			size_t mid = lo + (hi - lo) / 2;
			int cmp = strcmp(key.rel, w.files[mid].rel);
			if (!cmp)
				f = &w.files[mid];
			else if (cmp < 0)
				hi = mid;
			else
				lo = mid + 1;
		}
		buf_t path = BUF_INIT, name = BUF_INIT;
		buf_addf(&path, "%s/%s", dir, o->rel);
		buf_addf(&name, "%s%s", pfx, o->rel);
		if (f)
			f->size = UINT64_MAX; /* seen: kept by --delete */
		uint64_t got = 0;
		if (f && lstat(path.ptr, &st) == 0 && same(path.ptr, (uint64_t)st.st_size, o)) {
			n.skipped++;
		} else if (dry) {
			printf("download %s/%s to %s\n", bucket, name.ptr, path.ptr);
			n.moved++;
			n.bytes += o->size;
		} else if (cli_make_parents(dir, o->rel) == AIS_OK &&
			   cli_get_to_file(c, bucket, name.ptr, path.ptr, &got) == AIS_OK) {
			n.moved++;
			n.bytes += got;
		} else {
			n.failed++;
		}
		buf_free(&name);
		buf_free(&path);
	}
	if (del) {
		size_t gone = 0;
		for (size_t i = 0; i < w.n; i++)
			gone += w.files[i].size != UINT64_MAX;
		rc = ask_delete(a, gone, dir);
		if (rc != CLI_EXIT_OK)
			goto out;
		for (size_t i = 0; i < w.n; i++) {
			if (w.files[i].size == UINT64_MAX)
				continue;
			buf_t path = BUF_INIT;
			buf_addf(&path, "%s/%s", dir, w.files[i].rel);
			if (dry) {
				printf("delete %s\n", path.ptr);
				n.deleted++;
			} else if (unlink(path.ptr) == 0) {
				n.deleted++;
			} else {
				cli_err("%s: %s", path.ptr, strerror(errno));
				n.failed++;
			}
			buf_free(&path);
		}
	}
	buf_t from = BUF_INIT;
	buf_addf(&from, "%s/%s", bucket, pfx);
	summary(c, from.ptr, dir, false, dry, &n);
	buf_free(&from);
	rc = n.failed ? CLI_EXIT_ERR : CLI_EXIT_OK;
out:
	cli_walk_free(&w);
	slist_free(&l);
	return rc;
}

int cli_sync(struct cli *c, const struct cli_args *a)
{
	uint64_t conc = SYNC_CONC_DEFAULT;
	const char *cs = cli_opt(a, "conc");
	if (cs && cli_parse_u64(cs, 1, SYNC_CONC_MAX, &conc) != AIS_OK)
		return cli_usage_error(a->cmd, "bad --conc '%s': want 1..%d", cs, SYNC_CONC_MAX);
	struct stat st;
	bool up = stat(a->pos[0], &st) == 0 && S_ISDIR(st.st_mode);
	const char *remote = up ? a->pos[1] : a->pos[0], *dir = up ? a->pos[0] : a->pos[1];
	char *bucket, *prefix;
	if (cli_split_uname(remote, false, &bucket, &prefix) != AIS_OK)
		return cli_usage_error(a->cmd, "want DIR BUCKET[/PREFIX] or BUCKET[/PREFIX] DIR, got '%s'", remote);
	buf_t pfx = BUF_INIT, root = BUF_INIT;
	buf_addstr(&pfx, prefix);
	if (pfx.len && pfx.ptr[pfx.len - 1] != '/')
		buf_addch(&pfx, '/');
	buf_addstr(&root, dir);
	while (root.len > 1 && root.ptr[root.len - 1] == '/')
		root.ptr[--root.len] = '\0';
	int rc = up ? sync_up(c, a, root.ptr, bucket, pfx.ptr ? pfx.ptr : "", (size_t)conc)
		    : sync_down(c, a, bucket, pfx.ptr ? pfx.ptr : "", root.ptr);
	buf_free(&root);
	buf_free(&pfx);
	free(bucket);
	free(prefix);
	return rc;
}
