/*
 * multipart.c - S3 multipart uploads on the key's owner target: Create,
 * UploadPart, UploadPartCopy (copy.c fetches the source), Complete, Abort,
 * ListParts, and the target's share of ListMultipartUploads.
 *
 * An upload is a directory <first mountpath>/s3mpu/<upload id>/ (the id is
 * 32 random hex digits, checked before it becomes a path) holding
 *   info                 bucket, key (hex), start time, S3 metadata; written
 *                        to a temp file, fsynced and renamed, so it is
 *                        whole or absent;
 *   p<NNNNN>.<md5 hex>   the parts: written to a temp name, fsynced, then
 *                        renamed (an acknowledged part survives a crash); a
 *                        part uploaded again replaces the older file.
 * Complete checks the list (order, ETags, sizes) and then streams the parts
 * once, in order, into an object-layer write (ol_put: temp file, fsync,
 * the bucket's copies on the other holders, rename, LevelDB commit), with
 * the ETag md5(md5(part 1) .. md5(part N))-N, and removes the directory.
 * An upload created with x-amz-checksum-algorithm keeps "ALG::TYPE" in its
 * metadata; Complete computes the object's checksum while it streams the
 * parts: COMPOSITE, ALG(ALG(part 1) .. ALG(part N)) with "-N" (each part's
 * checked against the <ChecksumALG> the body gives for it), or
 * FULL_OBJECT, ALG of all the bytes (CRCs only; checked against the
 * Complete's x-amz-checksum-ALG header when given), and keeps it with the
 * object (s3.ck).
 * An upload with server-side encryption (its headers or the bucket's
 * default at Create) keeps its record in its metadata; each part is
 * encrypted as it is written (part_write, and copy.c for UploadPartCopy)
 * and Complete keeps the parts' layout with the object's record (sse.c
 * rule 8).
 * The parts themselves live on the owner only until Complete. Uploads
 * older than s3.mpu_max_age are removed (s3_mpu_gc, at most once a minute
 * from Create, and at a target's start); a bucket holds at most
 * s3.max_uploads of them on a target (Create counts them first).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

#define DIR_MAX 1100  /* a mountpath (< 1024) + /s3mpu/ + an id */
#define PATH_MAX_S3 1200
#define COPY_CHUNK (1u << 20)

static int64_t last_gc_ns;

/* <mp0>/s3mpu[/id] */
static void mpu_root(const conf_t *c, char *out, size_t sz) { snprintf(out, sz, "%s/s3mpu", c->mountpaths[0]); }

static bool id_valid(sv_t id)
{
	if (id.len != 32)
		return false;
	for (size_t i = 0; i < id.len; i++)
		if (!((id.ptr[i] >= '0' && id.ptr[i] <= '9') || (id.ptr[i] >= 'a' && id.ptr[i] <= 'f')))
			return false;
	return true;
}

static void mpu_dir(const conf_t *c, sv_t id, char *out, size_t sz)
{
	snprintf(out, sz, "%s/s3mpu/%.*s", c->mountpaths[0], (int)id.len, id.ptr);
}

static int fsync_path(const char *p)
{
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return AIS_ERR;
	int rc = fsync(fd);
	close(fd);
	return rc ? AIS_ERR : AIS_OK;
}

typedef struct mpu_info {
	char bucket[NAME_BUCKET_MAX + 1];
	char *key;
	size_t klen;
	int64_t initiated;
	char custom[STORE_CUSTOM_MAX];
} mpu_info_t;

/* Reads dir/info (malloc'd key). AIS_ERR with errno ENOENT when absent. */
static int info_load(const char *dir, mpu_info_t *in)
{
	char path[PATH_MAX_S3], buf[STORE_CUSTOM_MAX + 4096]; /* bucket, key hex, time, custom */
	snprintf(path, sizeof(path), "%s/info", dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return AIS_ERR;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		errno = ENOENT;
		return AIS_ERR;
	}
	buf[n] = '\0';
	char *l[4], *save = buf;
	for (int i = 0; i < 4; i++) {
		char *nl = strchr(save, '\n');
		if (!nl) {
			errno = ENOENT;
			return AIS_ERR;
		}
		*nl = '\0';
		l[i] = save;
		save = nl + 1;
	}
	size_t hl = strlen(l[1]);
	memset(in, 0, sizeof(*in));
	snprintf(in->bucket, sizeof(in->bucket), "%s", l[0]);
	in->key = xmalloc(hl / 2 + 1);
	if (hl % 2 || hex_decode(l[1], hl, (unsigned char *)in->key, hl / 2 + 1) != AIS_OK) {
		free(in->key);
		in->key = NULL;
		errno = ENOENT;
		return AIS_ERR;
	}
	in->key[hl / 2] = '\0';
	in->klen = hl / 2;
	in->initiated = strtoll(l[2], NULL, 10);
	snprintf(in->custom, sizeof(in->custom), "%s", l[3]);
	return AIS_OK;
}

/* Removes an upload's directory and everything in it. */
static void mpu_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[PATH_MAX_S3];
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	if (rmdir(dir) && errno != ENOENT)
		log_warn("removing upload %s", dir);
}

int s3_mpu_gc(const conf_t *c)
{
	char root[DIR_MAX - 40], dir[DIR_MAX];
	int removed = 0;
	int64_t now = time_now_ns();
	DIR *d;
	struct dirent *e;

	mpu_root(c, root, sizeof(root));
	if (!(d = opendir(root)))
		return 0;
	while ((e = readdir(d))) {
		mpu_info_t in;
		struct stat st;
		if (!id_valid(sv_from(e->d_name)))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", root, e->d_name);
		int64_t started;
		if (info_load(dir, &in) == AIS_OK) {
			started = in.initiated;
			free(in.key);
		} else if (stat(dir, &st) == 0) {
			started = (int64_t)st.st_mtime * 1000000000LL; /* a crash before info: its age */
		} else {
			continue;
		}
		if (now - started > (int64_t)c->s3_mpu_max_age_ms * 1000000LL) {
			mpu_remove(dir);
			removed++;
		}
	}
	closedir(d);
	if (removed)
		log_info("S3: removed %d multipart upload(s) older than %llu s", removed,
			 (unsigned long long)(c->s3_mpu_max_age_ms / 1000));
	return removed;
}

/* --- parts ------------------------------------------------------------------- */

typedef struct part {
	uint32_t num;
	uint32_t gen; /* an encrypted upload's: which upload of this number (sse.h) */
	char md5[33];
	uint64_t size;
	int64_t mtime_ns;
} part_t;

/* A part's file: "pNNNNN.MD5", ".GEN" appended where GEN is not 0. */
static void part_file(char *path, size_t cap, const char *dir, uint32_t num, const char *md5, uint32_t gen)
{
	if (gen)
		snprintf(path, cap, "%s/p%05u.%s.%u", dir, num, md5, gen);
	else
		snprintf(path, cap, "%s/p%05u.%s", dir, num, md5);
}

static int part_cmp(const void *a, const void *b)
{
	const part_t *x = a, *y = b;
	return (x->num > y->num) - (x->num < y->num);
}

/* The upload's parts in number order (malloc'd). */
static int parts_list(const char *dir, part_t **out, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	part_t *v = NULL;
	size_t k = 0, cap = 0;
	if (!d)
		return AIS_ERR;
	while ((e = readdir(d))) {
		const char *nm = e->d_name;
		size_t len = strlen(nm), base = 1 + 5 + 1 + 32;
		uint64_t num, gen = 0;
		struct stat st;
		char p[PATH_MAX_S3];
		if (nm[0] != 'p' || len < base || nm[6] != '.' ||
		    num_parse_u64(nm + 1, 5, 1, S3_MAX_PARTS, &num) != AIS_OK ||
		    (len > base && (nm[base] != '.' ||
				    num_parse_u64(nm + base + 1, len - base - 1, 1, SSE_PART_GEN_MAX, &gen) != AIS_OK)))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, nm);
		if (stat(p, &st))
			continue;
		if (k == cap)
			v = xrealloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));
		v[k].num = (uint32_t)num;
		v[k].gen = (uint32_t)gen;
		memcpy(v[k].md5, nm + 7, 32);
		v[k].md5[32] = '\0';
		v[k].size = (uint64_t)st.st_size;
		v[k].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
		k++;
	}
	closedir(d);
	if (k)
		qsort(v, k, sizeof(*v), part_cmp);
	*out = v;
	*n = k;
	return AIS_OK;
}

/* --- the operations ------------------------------------------------------------ */

struct mpu {
	s3_rq_t *r;
	char dir[DIR_MAX];
	sv_t id;
	mpu_info_t in;
	bool have_info;
	int err;          /* errno; ENOENT: NoSuchUpload */
	const char *code; /* an S3 error code */
	buf_t out;        /* the XML answer */
	/* create */
	s3_meta_t m;
	buf_t custom;
	/* complete */
	buf_t body;
	s3_complete_req_t cr;
	char etag[80];
	char vid[NAME_VER_ID_LEN + 1]; /* the version Complete made ("": none) */
	buf_t msg;        /* why the copies failed */
	ol_put_t cond;    /* its precond: If-Match / If-None-Match (s3_cond_arm) */
	/* list parts */
	uint64_t marker, max_parts;
	/* create: the checksum algorithm and type it answers; complete: the object's */
	enum s3_ck ck;
	const char *ck_type;
	char ck_b64[64];
	/* create: the upload's encryption (sse.c rule 8); complete: the
	 * request's SSE-C key (s3_sse_part_key) and then the object's */
	s3_sse_t *sse;
	s3_sse_t *skey;
};

static void mpu_cleanup(void *arg)
{
	struct mpu *u = arg;
	free(u->in.key);
	buf_free(&u->out);
	buf_free(&u->custom);
	buf_free(&u->body);
	buf_free(&u->msg);
}

static struct mpu *mpu_alloc(s3_rq_t *r, sv_t id)
{
	struct mpu *u = arena_zalloc(r->http->arena, sizeof(*u));
	u->r = r;
	u->id = id;
	if (id.len)
		mpu_dir(r->node.conf, id, u->dir, sizeof(u->dir));
	arena_cleanup_add(r->http->arena, mpu_cleanup, u);
	return u;
}

static struct mpu *mpu_new(s3_rq_t *r, sv_t id)
{
	struct mpu *u = mpu_alloc(r, id);
	r->op = u;
	return u;
}

/* Loads the upload and checks it belongs to this bucket and key. */
static int mpu_open(struct mpu *u)
{
	s3_rq_t *r = u->r;
	if (info_load(u->dir, &u->in) != AIS_OK) {
		u->err = ENOENT;
		return AIS_ERR;
	}
	u->have_info = true;
	if (!sv_eqstr(r->bucket, u->in.bucket) || u->in.klen != r->key.len || memcmp(u->in.key, r->key.ptr, r->key.len)) {
		u->err = ENOENT;
		return AIS_ERR;
	}
	return AIS_OK;
}

static void mpu_answer(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct mpu *u = r->op;
	if (u->code && u->msg.len)
		s3_error(r, u->code, "%s", u->msg.ptr);
	else if (u->code)
		s3_error(r, u->code, NULL);
	else if (u->err == ENOENT)
		s3_error(r, "NoSuchUpload", NULL);
	else if (u->err == EAGAIN && u->msg.len)
		s3_error(r, "ServiceUnavailable", "%s", u->msg.ptr);
	else if (u->err)
		s3_error_errno(r, u->err, true);
	else if (u->out.len) {
		if (u->ck != S3_CK_NONE && !u->ck_b64[0]) { /* Create's */
			char up[16];
			snprintf(up, sizeof(up), "%s", s3_ck_name(u->ck));
			for (char *c = up; *c; c++)
				*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
			http_resp_header(req, "x-amz-checksum-algorithm", "%s", up);
			http_resp_header(req, "x-amz-checksum-type", "%s", u->ck_type);
		}
		if (u->vid[0])
			http_resp_header(r->http, "x-amz-version-id", "%s", u->vid);
		s3_sse_headers(r, u->sse);
		s3_send_xml(r, 200, &u->out);
	} else {
		s3_common_headers(r);
		http_resp_status(req, 204);
		http_resp_send(req, "", 0);
	}
}

/* Create */
static void create_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct mpu *u = r->op;
	char root[DIR_MAX - 40], tmp[PATH_MAX_S3], fin[PATH_MAX_S3], idhex[33];
	unsigned char rnd[16];
	buf_t info = BUF_INIT;

	if (time_now_ns() - __atomic_load_n(&last_gc_ns, __ATOMIC_RELAXED) > 60LL * 1000000000LL) {
		__atomic_store_n(&last_gc_ns, time_now_ns(), __ATOMIC_RELAXED);
		s3_mpu_gc(r->node.conf);
	}
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		u->err = EIO;
		return;
	}
	hex_encode(rnd, sizeof(rnd), idhex);
	if (r->node.conf->s3_max_uploads) {
		s3_upload_t *v;
		size_t n;
		s3_mpu_local_uploads(r->node.conf, r->bucket.ptr, (sv_t){"", 0}, &v, &n);
		for (size_t i = 0; i < n; i++)
			free(v[i].key);
		free(v);
		if (n >= r->node.conf->s3_max_uploads) {
			u->code = "TooManyUploads";
			buf_addf(&u->msg, "the bucket has %zu multipart uploads in progress on this target "
				 "(s3.max_uploads): complete or abort some", n);
			return;
		}
	}
	mpu_root(r->node.conf, root, sizeof(root));
	if (mkdir(root, 0700) && errno != EEXIST) {
		u->err = errno;
		return;
	}
	u->id = (sv_t){arena_strndup(req->arena, idhex, 32), 32};
	mpu_dir(r->node.conf, u->id, u->dir, sizeof(u->dir));
	if (mkdir(u->dir, 0700)) {
		u->err = errno;
		return;
	}
	char *kh = xmalloc(r->key.len * 2 + 1);
	hex_encode((const unsigned char *)r->key.ptr, r->key.len, kh);
	buf_addf(&info, "%.*s\n%s\n%lld\n%s\n", (int)r->bucket.len, r->bucket.ptr, kh, (long long)time_now_ns(),
		 u->custom.ptr ? u->custom.ptr : "");
	free(kh);
	snprintf(tmp, sizeof(tmp), "%s/info.tmp", u->dir);
	snprintf(fin, sizeof(fin), "%s/info", u->dir);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || fd_write_all(fd, info.ptr, info.len) != AIS_OK || fsync(fd) || close(fd) ||
	    rename(tmp, fin) || fsync_path(u->dir) != AIS_OK || fsync_path(root) != AIS_OK) {
		u->err = errno ? errno : EIO;
		if (fd >= 0)
			close(fd);
		mpu_remove(u->dir);
	}
	buf_free(&info);
	if (u->err)
		return;
	s3_xml_head(&u->out, "InitiateMultipartUploadResult");
	s3_xml_elem(&u->out, "Bucket", r->bucket.ptr, r->bucket.len);
	s3_xml_elem(&u->out, "Key", r->key.ptr, r->key.len);
	s3_xml_elem(&u->out, "UploadId", u->id.ptr, u->id.len);
	s3_xml_close(&u->out, "InitiateMultipartUploadResult");
}

/* x-amz-checksum-algorithm and x-amz-checksum-type of a Create, as S3
 * takes them: a type needs an algorithm; FULL_OBJECT only with a CRC;
 * CRC64NVME only FULL_OBJECT (its default; the others' is COMPOSITE).
 * Sets u->ck, u->ck_type and the pending "ALG::TYPE" in u->m. AIS_ERR
 * after answering. */
static int create_ck(s3_rq_t *r, struct mpu *u)
{
	sv_t a = sv_trim(http_req_header(r->http, "x-amz-checksum-algorithm"));
	sv_t ty = sv_trim(http_req_header(r->http, "x-amz-checksum-type"));
	if (!a.len && !ty.len)
		return AIS_OK;
	if (!a.len) {
		s3_error(r, "InvalidRequest", "The x-amz-checksum-type header can only be used with the "
					      "x-amz-checksum-algorithm header.");
		return AIS_ERR;
	}
	u->ck = s3_ck_by_name(a);
	if (u->ck == S3_CK_NONE) {
		s3_error(r, "InvalidRequest", "Checksum algorithm provided is unsupported. Please try again with any of "
					      "the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]");
		return AIS_ERR;
	}
	bool crc = u->ck == S3_CK_CRC32 || u->ck == S3_CK_CRC32C || u->ck == S3_CK_CRC64NVME;
	if (!ty.len)
		u->ck_type = u->ck == S3_CK_CRC64NVME ? "FULL_OBJECT" : "COMPOSITE";
	else if (sv_eqstr(ty, "FULL_OBJECT") && crc)
		u->ck_type = "FULL_OBJECT";
	else if (sv_eqstr(ty, "COMPOSITE") && u->ck != S3_CK_CRC64NVME)
		u->ck_type = "COMPOSITE";
	else {
		s3_error(r, "InvalidRequest", "The %.*s checksum type cannot be used with the %s checksum algorithm.",
			 (int)MIN(ty.len, 32), ty.ptr, s3_ck_name(u->ck));
		return AIS_ERR;
	}
	u->m.ck = arena_printf(r->http->arena, "%s::%s", s3_ck_name(u->ck), u->ck_type);
	return AIS_OK;
}

int s3_mpu_create(s3_rq_t *r)
{
	store_bucket_t b;
	struct mpu *u = mpu_new(r, (sv_t){"", 0});
	if (store_bucket_get(r->node.store, r->bucket.ptr, r->bucket.len, &b) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	if (s3_meta_from_req(r, &u->m) != AIS_OK || create_ck(r, u) != AIS_OK ||
	    s3_tags_from_req(r, &u->m.tags) != AIS_OK || s3_sse_put(r, &u->sse) != AIS_OK)
		return AIS_OK;
	if (u->sse) /* the record the parts are encrypted with (sse.c rule 8) */
		u->m.sse = u->sse->meta;
	memset(u->m.etag, 'f', 40);
	int rc = s3_meta_encode(&u->m, &u->custom);
	u->m.etag[0] = '\0';
	buf_reset(&u->custom);
	if (rc != AIS_OK) {
		s3_error(r, "MetadataTooLarge", NULL);
		return AIS_OK;
	}
	s3_meta_encode(&u->m, &u->custom);
	http_offload(r->http, create_work, mpu_answer);
	return AIS_OK;
}

/* Abort */
static void abort_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct mpu *u = r->op;
	if (mpu_open(u) == AIS_OK)
		mpu_remove(u->dir);
}

/* ListParts */
static void parts_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct mpu *u = r->op;
	part_t *v = NULL;
	size_t n = 0, shown = 0;
	char t[40];

	if (mpu_open(u) != AIS_OK)
		return;
	if (parts_list(u->dir, &v, &n) != AIS_OK) {
		u->err = ENOENT;
		return;
	}
	buf_t *b = &u->out;
	s3_xml_head(b, "ListPartsResult");
	s3_xml_elem(b, "Bucket", r->bucket.ptr, r->bucket.len);
	s3_xml_elem(b, "Key", r->key.ptr, r->key.len);
	s3_xml_elem(b, "UploadId", u->id.ptr, u->id.len);
	char owner[S3ACL_UID_MAX + 1];
	s3_meta_owner(u->in.custom, owner, sizeof(owner));
	s3_user_xml(b, "Initiator", owner);
	s3_user_xml(b, "Owner", owner);
	buf_addstr(b, "<StorageClass>STANDARD</StorageClass>");
	s3_xml_elemf(b, "PartNumberMarker", "%llu", (unsigned long long)u->marker);
	buf_t parts = BUF_INIT;
	uint32_t last = 0;
	bool trunc = false;
	for (size_t i = 0; i < n; i++) {
		if (v[i].num <= u->marker)
			continue;
		if (shown == u->max_parts) {
			trunc = true;
			break;
		}
		s3_time_iso(v[i].mtime_ns, t, sizeof(t));
		buf_addstr(&parts, "<Part>");
		s3_xml_elemf(&parts, "PartNumber", "%u", v[i].num);
		s3_xml_elemstr(&parts, "LastModified", t);
		s3_xml_elemf(&parts, "ETag", "\"%s\"", v[i].md5);
		s3_xml_elemf(&parts, "Size", "%llu", (unsigned long long)v[i].size);
		buf_addstr(&parts, "</Part>");
		last = v[i].num;
		shown++;
	}
	if (trunc)
		s3_xml_elemf(b, "NextPartNumberMarker", "%u", last);
	s3_xml_elemf(b, "MaxParts", "%llu", (unsigned long long)u->max_parts);
	s3_xml_elemstr(b, "IsTruncated", trunc ? "true" : "false");
	buf_addsv(b, sv_of(&parts));
	s3_xml_close(b, "ListPartsResult");
	buf_free(&parts);
	free(v);
}

/* The CompleteMultipartUploadResult document for etag (unquoted). */
static void complete_result(struct mpu *u, const char *etag, const s3_meta_t *m)
{
	sv_t alg, v;
	const char *type;
	s3_rq_t *r = u->r;
	buf_t loc = BUF_INIT;
	s3_xml_head(&u->out, "CompleteMultipartUploadResult");
	buf_addf(&loc, "/%.*s/%.*s", (int)r->bucket.len, r->bucket.ptr, (int)r->key.len, r->key.ptr);
	s3_xml_elem(&u->out, "Location", loc.ptr, loc.len);
	buf_free(&loc);
	s3_xml_elem(&u->out, "Bucket", r->bucket.ptr, r->bucket.len);
	s3_xml_elem(&u->out, "Key", r->key.ptr, r->key.len);
	s3_xml_elemf(&u->out, "ETag", "\"%s\"", etag);
	if (m && s3_meta_ck(m, &alg, &v, &type)) {
		s3_xml_elem(&u->out, s3_ck_xml(s3_ck_by_name(alg)), v.ptr, v.len);
		s3_xml_elemstr(&u->out, "ChecksumType", type);
	}
	s3_xml_close(&u->out, "CompleteMultipartUploadResult");
}

/* Complete of an upload that is gone: if it made the object that is there
 * now (its S3 metadata names the upload), S3 answers 200 with the same
 * ETag again. */
static bool completed_before(struct mpu *u)
{
	s3_rq_t *r = u->r;
	store_meta_t sm;
	s3_meta_t m;
	if (store_lookup(r->node.store, r->bucket.ptr, r->bucket.len, r->key.ptr, r->key.len, &sm) != AIS_OK)
		return false;
	s3_meta_decode(r->http->arena, sm.custom, &m);
	if (!m.mpu || !sv_eqstr(u->id, m.mpu) || !m.etag[0])
		return false;
	complete_result(u, m.etag, &m);
	return true;
}

/* The part numbers and sizes of a completed upload for its S3 metadata
 * (s3_part_range): runs of consecutive numbers of equal sizes,
 * "[N:]SIZE*COUNT+...", N only where a run does not go on from the last;
 * with gens, an encrypted upload's layout (sse.h): runs of one generation
 * too, "@GEN" after those not of 0. */
static char *part_sizes(arena_t *a, part_t **use, size_t n, bool gens)
{
	buf_t b = BUF_INIT;
	uint32_t next = 1;
	for (size_t i = 0; i < n;) {
		size_t k = i + 1;
		while (k < n && use[k]->size == use[i]->size && use[k]->num == use[k - 1]->num + 1 &&
		       (!gens || use[k]->gen == use[i]->gen))
			k++;
		if (i)
			buf_addch(&b, '+');
		if (use[i]->num != next)
			buf_addf(&b, "%u:", use[i]->num);
		buf_addf(&b, "%llu*%zu", (unsigned long long)use[i]->size, k - i);
		if (gens && use[i]->gen)
			buf_addf(&b, "@%u", use[i]->gen);
		next = use[k - 1]->num + 1;
		i = k;
	}
	char *s = arena_strndup(a, b.ptr ? b.ptr : "", b.len);
	buf_free(&b);
	return s;
}

/* Complete */
static void complete_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct mpu *u = r->op;
	part_t *v = NULL;
	size_t n = 0;
	ol_put_t op = {.t = req->ctx, .bck = r->bucket, .obj = r->key, .w = r->where};
	char *chunk = NULL;
	EVP_MD_CTX *md = NULL;
	s3_meta_t m;
	enum s3_ck ck;
	const char *ck_type = NULL;
	bool full;
	s3_ck_state_t whole = {0}, part = {0}; /* FULL_OBJECT: all the bytes; COMPOSITE: each part */
	unsigned char *comp = NULL;            /* COMPOSITE: the parts' digests, one after another */
	buf_t pcks = BUF_INIT;                 /* COMPOSITE: their base64, for GetObjectAttributes */

	if (mpu_open(u) != AIS_OK) {
		if (u->err == ENOENT && completed_before(u))
			u->err = 0;
		return;
	}
	if (parts_list(u->dir, &v, &n) != AIS_OK) {
		u->err = ENOENT;
		return;
	}
	/* validate: ascending numbers, each named part present with its ETag,
	 * every part but the last at least 5 MiB */
	part_t **use = xcalloc(u->cr.n, sizeof(*use));
	for (size_t i = 0; i < u->cr.n; i++) {
		const struct s3_part_ref *pr = &u->cr.parts[i];
		if (i && pr->num <= u->cr.parts[i - 1].num) {
			u->code = "InvalidPartOrder";
			goto out;
		}
		part_t key = {.num = (uint32_t)pr->num};
		part_t *p = n ? bsearch(&key, v, n, sizeof(*v), part_cmp) : NULL;
		while (p && p > v && p[-1].num == key.num) /* two uploads of it: the one with its ETag */
			p--;
		while (p && strcmp(p->md5, pr->etag) && p + 1 < v + n && p[1].num == key.num)
			p++;
		if (!p || pr->num < 1 || pr->num > S3_MAX_PARTS || strcmp(p->md5, pr->etag)) {
			u->code = "InvalidPart";
			goto out;
		}
		use[i] = p;
	}
	for (size_t i = 0; i + 1 < u->cr.n; i++) {
		if (use[i]->size < S3_MIN_PART) {
			u->code = "EntityTooSmall";
			goto out;
		}
	}
	s3_meta_decode(req->arena, u->in.custom, &m);
	if (m.sse) { /* an SSE-C key given is checked; none is needed (sse.c rule 8) */
		const char *code, *msg;
		bool keyless = m.sse[0] == 'C' && !u->skey->has_kek && !u->skey->want;
		if (!keyless && s3_sse_part_open(r->node.conf, m.sse, u->skey, 0, 0, &u->sse, &code, &msg) != AIS_OK) {
			u->code = code;
			buf_addstr(&u->msg, msg);
			goto out;
		}
	} else if (u->skey->has_kek) {
		u->code = "InvalidRequest";
		buf_addstr(&u->msg, "The encryption parameters are not applicable to this object.");
		goto out;
	}
	ck = s3_meta_ck_pending(&m, &ck_type);
	full = ck != S3_CK_NONE && !strcmp(ck_type, "FULL_OBJECT");
	if (ck != S3_CK_NONE) {
		if (full)
			s3_ck_init(&whole, ck);
		else
			comp = xmalloc(u->cr.n * s3_ck_len(ck));
	}
	md = EVP_MD_CTX_new();
	EVP_DigestInit_ex(md, EVP_md5(), NULL);
	if (ol_put_begin(&op) != AIS_OK) {
		u->err = errno ? errno : EIO;
		goto out;
	}
	chunk = xmalloc(COPY_CHUNK);
	for (size_t i = 0; i < u->cr.n && !u->err; i++) {
		char path[PATH_MAX_S3];
		unsigned char bin[16];
		part_file(path, sizeof(path), u->dir, use[i]->num, use[i]->md5, use[i]->gen);
		hex_decode(use[i]->md5, 32, bin, sizeof(bin));
		EVP_DigestUpdate(md, bin, sizeof(bin));
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			u->err = errno == ENOENT ? EIO : errno;
			break;
		}
		if (comp)
			s3_ck_init(&part, ck);
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		for (;;) {
			ssize_t k = read(fd, chunk, COPY_CHUNK);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				u->err = errno;
				break;
			}
			if (k == 0)
				break;
			if (full)
				s3_ck_update(&whole, chunk, (size_t)k);
			if (comp)
				s3_ck_update(&part, chunk, (size_t)k);
			if (ol_put_write(&op, chunk, (size_t)k) != AIS_OK) {
				u->err = errno ? errno : EIO;
				break;
			}
		}
		close(fd);
		if (comp && !u->err) { /* the part's checksum, checked against the one the body gives */
			unsigned char *d = comp + i * s3_ck_len(ck);
			char b64[64];
			s3_b64_encode(d, s3_ck_final(&part, d), b64);
			buf_addf(&pcks, "%s%s", i ? "." : "", b64);
			if (u->cr.parts[i].ck[0] && strcmp(u->cr.parts[i].ck, b64)) {
				u->code = "InvalidPart";
				buf_addf(&u->msg, "One or more of the specified parts could not be found: part %u's %s "
					 "checksum is %s, not %s", use[i]->num, s3_ck_name(ck), b64, u->cr.parts[i].ck);
				goto out;
			}
		}
	}
	if (u->err)
		goto out;
	unsigned char dig[16];
	unsigned int dl = 0;
	char hex[33];
	EVP_DigestFinal_ex(md, dig, &dl);
	hex_encode(dig, 16, hex);
	snprintf(u->etag, sizeof(u->etag), "%s-%zu", hex, u->cr.n);
	snprintf(m.etag, sizeof(m.etag), "%s", u->etag);
	m.mpu = arena_strndup(req->arena, u->id.ptr, u->id.len);
	if (ck != S3_CK_NONE) { /* the object's checksum of the upload's type */
		unsigned char d[32];
		char b64[64];
		if (full) {
			s3_b64_encode(d, s3_ck_final(&whole, d), b64);
		} else {
			s3_ck_init(&part, ck);
			s3_ck_update(&part, comp, u->cr.n * s3_ck_len(ck));
			s3_b64_encode(d, s3_ck_final(&part, d), b64);
		}
		sv_t given = sv_trim(http_req_header(req, arena_printf(req->arena, "x-amz-checksum-%s", s3_ck_name(ck))));
		if (given.len && !(sv_eqstr(given, b64) ||
				   (!full && given.len > strlen(b64) && !strncmp(given.ptr, b64, strlen(b64)) &&
				    given.ptr[strlen(b64)] == '-'))) {
			u->code = "BadDigest";
			buf_addf(&u->msg, "The %s you specified did not match the calculated checksum.",
				 s3_ck_name(ck));
			goto out;
		}
		snprintf(u->ck_b64, sizeof(u->ck_b64), full ? "%s" : "%s-%zu", b64, u->cr.n);
		m.ck = arena_printf(req->arena, "%s:%s:%s", s3_ck_name(ck), u->ck_b64, ck_type);
	}
	m.parts = part_sizes(req->arena, use, u->cr.n, false);
	if (m.sse) /* the parts' layout, to decrypt each from its stream (sse.c rule 8) */
		m.sse = s3_sse_record_parts(req->arena, m.sse, part_sizes(req->arena, use, u->cr.n, true));
	m.pcks = pcks.ptr;
	buf_reset(&u->custom);
	int rc = s3_meta_encode(&m, &u->custom);
	if (rc != AIS_OK && m.pcks) { /* no room for the part checksums: kept without them */
		m.pcks = NULL;
		buf_reset(&u->custom);
		rc = s3_meta_encode(&m, &u->custom);
	}
	if (rc != AIS_OK) {
		if (m.sse) { /* the layout is needed to read it */
			u->code = "InvalidPart";
			buf_addstr(&u->msg, "the encrypted parts' sizes do not fit the object's metadata: upload "
				   "parts of fewer distinct sizes");
			goto out;
		}
		m.parts = NULL; /* no room for the sizes: no part reads */
		buf_reset(&u->custom);
		s3_meta_encode(&m, &u->custom);
	}
	op.custom = u->custom.ptr;
	op.precond = u->cond.precond;
	op.precond_arg = u->cond.precond_arg;
	if (ol_put_commit(&op) != AIS_OK) {
		u->err = errno ? errno : EIO;
		if (u->code) /* the condition failed: the upload stays */
			goto out;
		if (u->err == EAGAIN)
			buf_addf(&u->msg, "object not stored: %s", op.msg.ptr ? op.msg.ptr : "copies failed");
		goto out;
	}
	mpu_remove(u->dir);
	bool null;
	if (!olver_id_of(op.meta.custom, u->vid, &null) || null)
		u->vid[0] = '\0';
	complete_result(u, u->etag, &m);
out:
	ol_put_free(&op);
	EVP_MD_CTX_free(md);
	s3_ck_free(&whole);
	s3_ck_free(&part);
	free(comp);
	buf_free(&pcks);
	free(chunk);
	free(use);
	free(v);
}

static void complete_body(s3_rq_t *r, buf_t *body)
{
	struct mpu *u = r->op;
	if (s3_parse_complete(r->http->arena, body->ptr ? body->ptr : "", body->len, &u->cr) != AIS_OK ||
	    u->cr.n == 0) {
		s3_error(r, "MalformedXML", NULL);
		return;
	}
	if (s3_cond_arm(r, &u->cond, &u->code) != AIS_OK)
		return;
	r->http->state = r;
	ol_put_t probe = {.t = r->http->ctx, .bck = r->bucket, .obj = r->key, .w = r->where};
	(ol_put_remote(&probe) ? http_offload_net : http_offload)(r->http, complete_work, mpu_answer);
}

/* --- UploadPart ------------------------------------------------------------------ */

/* --- a part being written: UploadPart here, UploadPartCopy in copy.c ------------- */

/* The generation of a new upload of part num of an encrypted upload, so
 * that it has key stream of its own (sse.c rule 8): the first free
 * "gNNNNN.GEN" marker, taken by creating it (O_EXCL: two uploads of a part
 * at once get two), kept until the upload ends so that no generation is
 * used twice, not even after an upload that failed once it wrote. */
static int part_gen(const char *dir, uint32_t num, uint32_t *gen)
{
	char path[PATH_MAX_S3];
	for (uint32_t g = 0; g <= SSE_PART_GEN_MAX; g++) {
		snprintf(path, sizeof(path), "%s/g%05u.%u", dir, num, g);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0) {
			close(fd);
			*gen = g;
			return AIS_OK;
		}
		if (errno != EEXIST)
			return AIS_ERR;
	}
	errno = EMLINK;
	return AIS_ERR;
}

static int part_begin_in(struct mpu *u, uint32_t num, s3_sse_t *key, s3_part_file_t *pf, const char **code,
			 const char **msg)
{
	unsigned char rnd[8];
	char rh[17];
	s3_meta_t m;
	pf->upload = u;
	pf->num = num;
	pf->fd = -1;
	if (mpu_open(u) != AIS_OK) {
		*code = "NoSuchUpload";
		errno = ENOENT;
		return AIS_ERR;
	}
	s3_meta_decode(u->r->http->arena, u->in.custom, &m);
	if (m.sse && part_gen(u->dir, num, &pf->gen) != AIS_OK) {
		if (errno == EMLINK) {
			*code = "InvalidRequest";
			*msg = "this part number was uploaded too many times; start a new upload";
		}
		return AIS_ERR;
	}
	if (s3_sse_part_open(u->r->node.conf, m.sse, key, num, pf->gen, &pf->sse, code, msg) != AIS_OK) {
		errno = EINVAL;
		return AIS_ERR;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return AIS_ERR;
	hex_encode(rnd, sizeof(rnd), rh);
	snprintf(pf->tmp, sizeof(pf->tmp), "%s/t%05u.%s", u->dir, num, rh);
	pf->fd = open(pf->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (pf->fd < 0)
		pf->tmp[0] = '\0';
	return pf->fd < 0 ? AIS_ERR : AIS_OK;
}

int s3_mpu_part_begin(s3_rq_t *r, sv_t id, uint32_t num, s3_sse_t *key, s3_part_file_t *pf, const char **code,
		      const char **msg)
{
	return part_begin_in(mpu_alloc(r, id), num, key, pf, code, msg);
}

int s3_mpu_part_write(s3_part_file_t *pf, const char *b, size_t n)
{
	if (!pf->sse) {
		pf->off += n;
		return fd_write_all(pf->fd, b, n);
	}
	char enc[16 * 1024]; /* sse.c rule 8: a part is ciphertext from its first byte on disk */
	while (n) {
		size_t k = MIN(n, sizeof(enc));
		if (s3_sse_xor(pf->sse, pf->off, b, enc, k) != AIS_OK || fd_write_all(pf->fd, enc, k) != AIS_OK)
			return AIS_ERR;
		pf->off += k;
		b += k;
		n -= k;
	}
	return AIS_OK;
}

/* Renames the finished temp file to its part name, replacing an older
 * upload of the same number. */
static int part_install(struct mpu *u, uint32_t num, uint32_t gen, const char *tmp, const char *md5hex)
{
	char fin[PATH_MAX_S3];
	part_t *v = NULL;
	size_t n = 0;
	part_file(fin, sizeof(fin), u->dir, num, md5hex, gen);
	if (rename(tmp, fin))
		return AIS_ERR;
	if (parts_list(u->dir, &v, &n) == AIS_OK) {
		for (size_t i = 0; i < n; i++) {
			if (v[i].num == num && (strcmp(v[i].md5, md5hex) || v[i].gen != gen)) {
				char old[PATH_MAX_S3];
				part_file(old, sizeof(old), u->dir, num, v[i].md5, v[i].gen);
				unlink(old);
			}
		}
		free(v);
	}
	return fsync_path(u->dir);
}

int s3_mpu_part_commit(s3_part_file_t *pf, bool sync, const unsigned char md5[16], char md5hex[33])
{
	int fd = pf->fd;
	pf->fd = -1;
	if ((sync && fsync(fd)) || close(fd))
		return AIS_ERR;
	if (pf->sse) /* its ETag as an encrypted object's (sse.c rule 3) */
		s3_sse_etag(pf->sse, md5, md5hex);
	else
		hex_encode(md5, 16, md5hex);
	if (part_install(pf->upload, pf->num, pf->gen, pf->tmp, md5hex) != AIS_OK)
		return AIS_ERR;
	pf->tmp[0] = '\0';
	return AIS_OK;
}

void s3_mpu_part_drop(s3_part_file_t *pf)
{
	if (pf->fd >= 0)
		close(pf->fd);
	pf->fd = -1;
	if (pf->tmp[0])
		unlink(pf->tmp);
	pf->tmp[0] = '\0';
}

/* UploadPart: the s3_put sink of a part */
struct part_sink {
	struct mpu *u;
	s3_sse_t *key; /* the request's SSE-C key (s3_sse_part_key) */
	s3_part_file_t pf;
};

static int part_begin(s3_put_t *p)
{
	struct part_sink *s = p->sink;
	return part_begin_in(s->u, s->pf.num, s->key, &s->pf, &p->code, &p->msg);
}

static int part_write(s3_put_t *p, const char *b, size_t n)
{
	return s3_mpu_part_write(&((struct part_sink *)p->sink)->pf, b, n);
}

static int part_commit(s3_put_t *p)
{
	struct part_sink *s = p->sink;
	if (s3_mpu_part_commit(&s->pf, s->u->r->node.conf->fsync == CONF_FSYNC_ALWAYS, p->md5, p->md5hex) != AIS_OK) {
		if (errno == ENOENT)
			p->code = "NoSuchUpload";
		return AIS_ERR;
	}
	return AIS_OK;
}

static void part_reply(s3_put_t *p)
{
	s3_common_headers(p->r);
	http_resp_header(p->r->http, "ETag", "\"%s\"", p->md5hex);
	s3_put_ck_header(p, false);
	s3_sse_headers(p->r, ((struct part_sink *)p->sink)->pf.sse);
	http_resp_send(p->r->http, "", 0);
}

static void part_cleanup(s3_put_t *p)
{
	s3_mpu_part_drop(&((struct part_sink *)p->sink)->pf);
}

static const s3_put_ops_t part_ops = {part_begin, part_write, part_commit, part_reply, part_cleanup};

int s3_multipart(s3_rq_t *r, sv_t id)
{
	http_req_t *req = r->http;
	uint64_t num = 0;
	sv_t v;

	if (!id_valid(id)) {
		s3_error(r, "NoSuchUpload", NULL);
		return AIS_OK;
	}
	struct mpu *u = mpu_new(r, id);
	switch (req->method) {
	case HTTP_PUT: {
		if (!http_query_get(req, "partNumber", &v) ||
		    num_parse_u64(v.ptr, v.len, 1, S3_MAX_PARTS, &num) != AIS_OK) {
			s3_error(r, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive");
			return AIS_OK;
		}
		sv_t src = http_req_header(req, "x-amz-copy-source");
		if (src.ptr)
			return s3_upload_part_copy(r, id, (uint32_t)num, src);
		if (req->content_length > (int64_t)(5ull << 30)) {
			s3_error(r, "EntityTooLarge", NULL);
			return AIS_OK;
		}
		s3_put_t *p = arena_zalloc(req->arena, sizeof(*p));
		struct part_sink *s = arena_zalloc(req->arena, sizeof(*s));
		s->u = u;
		s->pf.num = (uint32_t)num;
		s->pf.fd = -1;
		if (s3_sse_part_key(r, &s->key) != AIS_OK)
			return AIS_OK;
		p->ops = &part_ops;
		p->sink = s;
		s3_put_start(r, p);
		return AIS_OK;
	}
	case HTTP_POST:
		r->areq.ck_of_object = true; /* x-amz-checksum-*: the whole object's (complete_work) */
		if (s3_sse_part_key(r, &u->skey) != AIS_OK)
			return AIS_OK;
		s3_read_body(r, complete_body);
		return AIS_OK;
	case HTTP_DELETE:
		http_offload(req, abort_work, mpu_answer);
		return AIS_OK;
	case HTTP_GET:
		u->max_parts = 1000;
		if (http_query_get(req, "max-parts", &v) &&
		    num_parse_u64(v.ptr, v.len, 0, INT32_MAX, &u->max_parts) != AIS_OK) {
			s3_error(r, "InvalidArgument", "max-parts must be an integer");
			return AIS_OK;
		}
		if (u->max_parts > 1000)
			u->max_parts = 1000;
		if (http_query_get(req, "part-number-marker", &v) &&
		    num_parse_u64(v.ptr, v.len, 0, INT32_MAX, &u->marker) != AIS_OK) {
			s3_error(r, "InvalidArgument", "part-number-marker must be an integer");
			return AIS_OK;
		}
		http_offload(req, parts_work, mpu_answer);
		return AIS_OK;
	default:
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
}

/* --- ListMultipartUploads: this target's share ------------------------------------ */

void s3_mpu_local_remove(const conf_t *c, const char *id)
{
	char root[DIR_MAX - 40], dir[DIR_MAX];
	if (!id_valid(sv_from(id)))
		return;
	mpu_root(c, root, sizeof(root));
	snprintf(dir, sizeof(dir), "%s/%s", root, id);
	mpu_remove(dir);
}

int s3_mpu_local_uploads(const conf_t *c, const char *bck, sv_t prefix, s3_upload_t **out, size_t *n)
{
	char root[DIR_MAX - 40], dir[DIR_MAX];
	DIR *d;
	struct dirent *e;
	s3_upload_t *v = NULL;
	size_t k = 0, cap = 0;

	*out = NULL;
	*n = 0;
	mpu_root(c, root, sizeof(root));
	if (!(d = opendir(root)))
		return AIS_OK;
	while ((e = readdir(d))) {
		mpu_info_t in;
		if (!id_valid(sv_from(e->d_name)))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", root, e->d_name);
		if (info_load(dir, &in) != AIS_OK)
			continue;
		if (strcmp(in.bucket, bck) || in.klen < prefix.len || memcmp(in.key, prefix.ptr, prefix.len)) {
			free(in.key);
			continue;
		}
		if (k == cap)
			v = xrealloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));
		v[k].key = in.key;
		v[k].klen = in.klen;
		snprintf(v[k].id, sizeof(v[k].id), "%s", e->d_name);
		v[k].initiated = in.initiated;
		s3_meta_owner(in.custom, v[k].owner, sizeof(v[k].owner));
		k++;
	}
	closedir(d);
	*out = v;
	*n = k;
	return AIS_OK;
}
