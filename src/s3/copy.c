/*
 * copy.c - CopyObject and UploadPartCopy, on the destination's owner
 * target, in one pool task each.
 *
 * The source is read where it lives: through the object layer when this
 * target holds a copy of it (ol_open_sync: a missing copy is fetched
 * first) or is standalone, else from its owner with one native
 * GET (/v1/objects, a Range for UploadPartCopy) whose body streams straight
 * into the destination; nothing is buffered whole. The source's
 * conditionals (x-amz-copy-source-if-*) are checked against the source's
 * ETag and time before the first byte is written. CopyObject keeps the
 * source's S3 metadata (directive COPY) or takes the request's (REPLACE),
 * and the same for its tags (x-amz-tagging-directive, x-amz-tagging);
 * copying an object onto itself needs REPLACE (else InvalidRequest), as on
 * S3. The destination ETag is the MD5 of the bytes copied, and it is
 * committed with the bucket's copies (ol_put_commit). CopyObject encrypts
 * the copy as its SSE headers or its bucket's default say (sse.c,
 * s3_sse_put), whatever the source's directive. An encrypted source is
 * copied as its plaintext: its bytes arrive as stored, ciphertext, with
 * its record in its metadata, and are decrypted here (cp_sink) with the
 * x-amz-copy-source-* SSE-C key or this node's key files (sse.c rule 7).
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include "aisd/authz.h"
#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

#define CHUNK (1u << 20)


int s3_copy_source(s3_rq_t *r, sv_t h, sv_t *bck, sv_t *key, sv_t *vid)
{
	sv_t s = sv_trim(h);
	const char *q = memchr(s.ptr, '?', s.len);
	if (vid)
		*vid = (sv_t){NULL, 0};
	if (q) {
		sv_t qs = {q + 1, s.len - (size_t)(q + 1 - s.ptr)};
		sv_t v = {qs.ptr + 10, qs.len > 10 ? qs.len - 10 : 0};
		if (qs.len < 10 || memcmp(qs.ptr, "versionId=", 10) || (!sv_eqstr(v, "null") && !olver_id_valid(v))) {
			s3_error(r, "InvalidArgument", "Invalid version id specified");
			return AIS_ERR;
		}
		if (vid && !sv_eqstr(v, "null"))
			*vid = v;
		s.len = (size_t)(q - s.ptr);
	}
	if (s.len && s.ptr[0] == '/')
		s.ptr++, s.len--;
	const char *slash = memchr(s.ptr, '/', s.len);
	if (!slash) {
		s3_error(r, "InvalidArgument", "Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
		return AIS_ERR;
	}
	sv_t rb = {s.ptr, (size_t)(slash - s.ptr)}, rk = {slash + 1, s.len - rb.len - 1};
	if (http_pct_decode(r->http->arena, rb, false, bck) != AIS_OK ||
	    http_pct_decode(r->http->arena, rk, false, key) != AIS_OK || !name_bucket_valid(bck->ptr, bck->len) ||
	    !name_object_valid(key->ptr, key->len)) {
		s3_error(r, "InvalidArgument", "invalid x-amz-copy-source");
		return AIS_ERR;
	}
	return AIS_OK;
}

struct cp {
	s3_rq_t *r;
	sv_t sb, sk;          /* source */
	sv_t svid;            /* the source's versionId (olver.h); ptr NULL: the current one */
	bool replace;
	bool part;            /* UploadPartCopy */
	sv_t upload_id;
	uint32_t num;
	bool has_range;
	uint64_t rstart, rlast;
	/* the source as found */
	store_meta_t sm;
	s3_meta_t m;
	s3_meta_t dacl; /* the destination's owner and ACL, and its tags when tag_replace (from the request) */
	bool tag_replace; /* x-amz-tagging-directive: REPLACE (else the source's tags) */
	char etag[96];
	bool checked;
	/* destination */
	ol_put_t op;
	s3_part_file_t pf; /* UploadPartCopy's part */
	EVP_MD_CTX *md5;
	char md5hex[33];
	uint64_t copied;
	const char *code;
	int err;
	buf_t custom, out;
	/* remote fetch */
	buf_t hdrs;
	s3_sse_t *dsse; /* CopyObject: the destination's encryption (sse.c; NULL: plain) */
	s3_sse_t *skey; /* the source's SSE-C key, if given (s3_sse_source_key) */
	s3_sse_t *pkey; /* UploadPartCopy: the request's SSE-C key (s3_sse_part_key) */
	s3_sse_t *ssse; /* the source's decryption (NULL: a plain source) */
	const char *msg; /* with code: the answer's message */
};

static void cp_cleanup(void *arg)
{
	struct cp *c = arg;
	ol_put_free(&c->op);
	s3_mpu_part_drop(&c->pf);
	EVP_MD_CTX_free(c->md5);
	buf_free(&c->custom);
	buf_free(&c->out);
	buf_free(&c->hdrs);
}

static int cp_plain(struct cp *c, const char *p, size_t n);

/* The source's metadata is known: check conditionals and the range. */
static int cp_check(struct cp *c)
{
	s3_etag_of(&c->sm, &c->m, c->etag, sizeof(c->etag));
	c->checked = true;
	/* the source, declared by s3_declare, decided now that its ACL is
	 * known (by grant it may have been already) */
	if (s3_decide_object(c->r, S3_RES_SOURCE, &c->m) != AIS_OK) {
		c->code = "AccessDenied";
		return AIS_ERR;
	}
	/* an encrypted source is read as plaintext: its record travels with
	 * its bytes (sse.c rule 7) */
	if (s3_sse_source_open(c->r->node.conf, c->m.sse, c->skey, &c->ssse, &c->code, &c->msg) != AIS_OK)
		return AIS_ERR;
	if (ol_conditions(c->r->http, c->etag, c->sm.mtime_ns, "x-amz-copy-source-", false)) {
		c->code = "PreconditionFailed";
		return AIS_ERR;
	}
	if (c->has_range && (c->rstart > c->rlast || c->rlast >= c->sm.size)) {
		c->code = "InvalidRange";
		return AIS_ERR;
	}
	return AIS_OK;
}

static int cp_sink(struct cp *c, const char *p, size_t n)
{
	if (c->ssse) { /* the source's plaintext, from its offset in the source */
		char dec[16 * 1024];
		uint64_t soff = (c->has_range ? c->rstart : 0) + c->copied;
		while (n) {
			size_t k = MIN(n, sizeof(dec));
			if (s3_sse_xor(c->ssse, soff, p, dec, k) != AIS_OK || cp_plain(c, dec, k) != AIS_OK)
				return AIS_ERR;
			p += k;
			n -= k;
			soff += k;
		}
		return AIS_OK;
	}
	return cp_plain(c, p, n);
}

/* Plaintext of the source into the destination. */
static int cp_plain(struct cp *c, const char *p, size_t n)
{
	EVP_DigestUpdate(c->md5, p, n);
	if (c->part) {
		c->copied += n;
		return s3_mpu_part_write(&c->pf, p, n);
	}
	if (c->dsse) { /* sse.c rules 2 and 8: ciphertext is what is stored */
		char enc[16 * 1024];
		while (n) {
			size_t k = MIN(n, sizeof(enc));
			if (s3_sse_xor(c->dsse, c->copied, p, enc, k) != AIS_OK || ol_put_write(&c->op, enc, k) != AIS_OK)
				return AIS_ERR;
			p += k;
			n -= k;
			c->copied += k;
		}
		return AIS_OK;
	}
	c->copied += n;
	return ol_put_write(&c->op, p, n);
}

static int copy_local(struct cp *c)
{
	int fd;
	buf_t msg = BUF_INIT;
	sv_t sk = c->sk;
	if (c->svid.ptr) { /* one version of the source, here (olver.c rule 5) */
		bool dm = false;
		if (olver_resolve(c->r->http->ctx, c->sb, c->sk, c->svid, &msg, &dm) != AIS_OK || dm) {
			c->code = dm ? "InvalidRequest" : "NoSuchVersion";
			buf_free(&msg);
			errno = ENOENT;
			return AIS_ERR;
		}
		sk = (sv_t){arena_strndup(c->r->http->arena, msg.ptr, msg.len), msg.len};
		buf_reset(&msg);
	}
	int rc = ol_open_sync(c->r->http->ctx, c->sb, sk, c->r->node.cl != NULL, &fd, &c->sm, &msg);
	buf_free(&msg);
	if (rc != AIS_OK)
		return AIS_ERR;
	s3_meta_decode(c->r->http->arena, c->sm.custom, &c->m);
	if (cp_check(c) != AIS_OK) {
		close(fd);
		errno = EINVAL;
		return AIS_ERR;
	}
	uint64_t off = c->has_range ? c->rstart : 0;
	uint64_t left = c->has_range ? c->rlast - c->rstart + 1 : c->sm.size;
	char *buf = xmalloc(CHUNK);
	while (left) {
		ssize_t k = pread(fd, buf, MIN(left, CHUNK), (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || cp_sink(c, buf, (size_t)k) != AIS_OK) {
			if (k == 0)
				errno = EIO;
			rc = AIS_ERR;
			break;
		}
		off += (uint64_t)k;
		left -= (uint64_t)k;
	}
	free(buf);
	close(fd);
	return rc;
}


static size_t rem_header(char *p, size_t size, size_t n, void *arg)
{
	struct cp *c = arg;
	if (n * size >= 5 && !memcmp(p, "HTTP/", 5))
		buf_reset(&c->hdrs);
	buf_add(&c->hdrs, p, size * n);
	return size * n;
}

/* The native GET's headers hold the source's metadata. */
static int rem_meta(struct cp *c, CURL *e)
{
	long status = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	if (status == 404) {
		errno = ENOENT;
		return AIS_ERR;
	}
	if (status != 200 && status != 206) {
		errno = EIO;
		return AIS_ERR;
	}
	sv_t v;
	uint64_t x;
	memset(&c->sm, 0, sizeof(c->sm));
	if ((v = httpc_header_find(sv_of(&c->hdrs), "Ais-Custom-Md")).ptr)
		snprintf(c->sm.custom, sizeof(c->sm.custom), "%.*s", (int)v.len, v.ptr);
	if ((v = httpc_header_find(sv_of(&c->hdrs), "Ais-Checksum-Value")).ptr)
		snprintf(c->sm.cksum, sizeof(c->sm.cksum), "%.*s", (int)MIN(v.len, 64), v.ptr);
	if ((v = httpc_header_find(sv_of(&c->hdrs), "Ais-Version")).ptr && num_parse_u64(v.ptr, v.len, 0, UINT64_MAX, &x) == AIS_OK)
		c->sm.version = x;
	if ((v = httpc_header_find(sv_of(&c->hdrs), "Last-Modified")).ptr)
		time_parse_http_date(v.ptr, v.len, &c->sm.mtime_ns);
	v = httpc_header_find(sv_of(&c->hdrs), "Content-Range");
	const char *slash = v.ptr ? memchr(v.ptr, '/', v.len) : NULL;
	if (slash && num_parse_u64(slash + 1, v.len - (size_t)(slash + 1 - v.ptr), 0, UINT64_MAX, &x) == AIS_OK)
		c->sm.size = x;
	else if ((v = httpc_header_find(sv_of(&c->hdrs), "Content-Length")).ptr && num_parse_u64(v.ptr, v.len, 0, UINT64_MAX, &x) == AIS_OK)
		c->sm.size = x;
	s3_meta_decode(c->r->http->arena, c->sm.custom, &c->m);
	if (cp_check(c) != AIS_OK) {
		errno = EINVAL;
		return AIS_ERR;
	}
	return AIS_OK;
}

struct rem {
	struct cp *c;
	CURL *e;
	bool failed;
};

static size_t rem_write(char *p, size_t size, size_t n, void *arg)
{
	struct rem *x = arg;
	if (!x->c->checked && rem_meta(x->c, x->e) != AIS_OK) {
		x->failed = true;
		return 0;
	}
	if (cp_sink(x->c, p, size * n) != AIS_OK) {
		x->failed = true;
		return 0;
	}
	return size * n;
}

static int copy_remote(struct cp *c, const char *base)
{
	buf_t url = BUF_INIT;
	struct curl_slist *hl = NULL;
	char range[80];
	struct rem x = {.c = c};
	int rc = AIS_ERR;

	buf_addf(&url, "%s/v1/objects/%.*s/", base, (int)c->sb.len, c->sb.ptr);
	buf_add_pct(&url, c->sk, true);
	if (c->svid.ptr) /* one version, found by its holder (olver.h) */
		buf_addf(&url, "?version=%.*s", (int)c->svid.len, c->svid.ptr);
	x.e = curl_easy_init();
	if (c->has_range) {
		snprintf(range, sizeof(range), "Range: bytes=%llu-%llu", (unsigned long long)c->rstart,
			 (unsigned long long)c->rlast);
		hl = curl_slist_append(hl, range);
	}
	char ah[AUTHZ_INTRA_HDR_MAX];
	if (authz_intra_header("GET", url.ptr, NULL, 0, ah, sizeof(ah)))
		hl = curl_slist_append(hl, ah);
	hl = curl_slist_append(hl, "Ais-Intra: s3-copy"); /* a peer's read: an encrypted source's ciphertext too */
	curl_easy_setopt(x.e, CURLOPT_URL, url.ptr);
	curl_easy_setopt(x.e, CURLOPT_PATH_AS_IS, 1L);
	httpc_easy_tls(x.e);
	curl_easy_setopt(x.e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x.e, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(x.e, CURLOPT_HEADERFUNCTION, rem_header);
	curl_easy_setopt(x.e, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(x.e, CURLOPT_WRITEFUNCTION, rem_write);
	curl_easy_setopt(x.e, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(x.e, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
	curl_easy_setopt(x.e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(x.e, CURLOPT_LOW_SPEED_TIME, 60L);
	CURLcode cc = curl_easy_perform(x.e);
	if (x.failed) {
		/* errno set by the check or the sink */
	} else if (cc != CURLE_OK) {
		errno = EIO;
	} else if (!c->checked && rem_meta(c, x.e) != AIS_OK) {
		/* an empty source, or an error status */
	} else {
		rc = AIS_OK;
	}
	if (rc != AIS_OK && cc == CURLE_OK && !x.failed && !c->checked && errno == ENOENT)
		errno = ENOENT;
	curl_slist_free_all(hl);
	curl_easy_cleanup(x.e);
	buf_free(&url);
	return rc;
}

static int open_dest(struct cp *c)
{
	s3_rq_t *r = c->r;
	if (!c->part) {
		c->op.t = r->http->ctx;
		c->op.bck = r->bucket;
		c->op.obj = r->key;
		c->op.w = r->where;
		return ol_put_begin(&c->op);
	}
	return s3_mpu_part_begin(r, c->upload_id, c->num, c->pkey, &c->pf, &c->code, &c->msg);
}

static void cp_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct cp *c = r->op;
	char url[CMAP_URL_MAX + 1];
	int self = 0, rc;

	if (open_dest(c) != AIS_OK) {
		c->err = errno ? errno : EIO;
		return;
	}
	c->md5 = EVP_MD_CTX_new();
	EVP_DigestInit_ex(c->md5, EVP_md5(), NULL);
	if (r->node.cl && !s3_place(&r->node, c->sb, c->sk, url, sizeof(url), &self)) {
		c->err = ENOENT;
		return;
	}
	/* a holder of the source reads its copy (fetching it when missing),
	 * else the source's owner is asked */
	rc = self >= 0 ? copy_local(c) : copy_remote(c, url);
	if (rc != AIS_OK) {
		c->err = errno ? errno : EIO;
		return;
	}
	unsigned char dig[16];
	unsigned int dl = 0;
	EVP_DigestFinal_ex(c->md5, dig, &dl);
	hex_encode(dig, 16, c->md5hex);
	char t[40];
	if (c->part) {
		if (s3_mpu_part_commit(&c->pf, true, dig, c->md5hex) != AIS_OK) {
			c->err = errno ? errno : EIO;
			if (c->err == ENOENT)
				c->code = "NoSuchUpload";
			return;
		}
		s3_time_iso(time_now_ns(), t, sizeof(t));
		s3_xml_head(&c->out, "CopyPartResult");
		s3_xml_elemstr(&c->out, "LastModified", t);
		s3_xml_elemf(&c->out, "ETag", "\"%s\"", c->md5hex);
		s3_xml_close(&c->out, "CopyPartResult");
		return;
	}
	s3_meta_t dm;
	if (c->replace) {
		memset(&dm, 0, sizeof(dm));
		if (s3_meta_from_req(r, &dm) != AIS_OK) { /* checked on the loop already */
			c->err = EINVAL;
			return;
		}
	} else {
		dm = c->m;
		dm.owner = c->dacl.owner;
		dm.acl = c->dacl.acl;
		dm.other = NULL; /* the source's version and other items stay its own */
		if (s3_lock_from_req(r, &dm) != AIS_OK) { /* the source's lock too: the copy's is its own */
			c->err = EINVAL;
			return;
		}
	}
	dm.tags = c->tag_replace ? c->dacl.tags : c->m.tags;
	dm.mpu = dm.parts = NULL; /* a copy is one part, whatever its source was */
	dm.sse = c->dsse ? c->dsse->meta : NULL; /* the copy's own encryption, never the source's */
	if (c->dsse)
		s3_sse_etag(c->dsse, dig, c->md5hex);
	snprintf(dm.etag, sizeof(dm.etag), "%s", c->md5hex);
	if (s3_meta_encode(&dm, &c->custom) != AIS_OK) {
		c->code = "MetadataTooLarge";
		return;
	}
	c->op.custom = c->custom.ptr;
	if (ol_put_commit(&c->op) != AIS_OK) {
		c->err = errno ? errno : EIO;
		return;
	}
	s3_time_iso(c->op.meta.mtime_ns, t, sizeof(t));
	s3_xml_head(&c->out, "CopyObjectResult");
	s3_xml_elemstr(&c->out, "LastModified", t);
	s3_xml_elemf(&c->out, "ETag", "\"%s\"", c->md5hex);
	s3_xml_close(&c->out, "CopyObjectResult");
}

static void cp_done(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct cp *c = r->op;
	if (c->code) {
		if (c->msg)
			s3_error(r, c->code, "%s", c->msg);
		else
			s3_error(r, c->code, NULL);
	} else if (c->err == ENOENT && s3_decide_missing(r, S3_RES_SOURCE) != AIS_OK) {
		s3_error(r, "AccessDenied", NULL); /* not told whether it exists */
	} else if (c->err == ENOENT) {
		/* the source is missing (or its bucket) */
		s3_rq_t src = *r;
		src.bucket = c->sb;
		src.key = c->sk;
		s3_error(r, !s3_bucket_exists(&src) ? "NoSuchBucket" : c->svid.ptr ? "NoSuchVersion" : "NoSuchKey", NULL);
	} else if (c->err == EAGAIN) {
		s3_error(r, "ServiceUnavailable", "object not stored: %s", c->op.msg.ptr ? c->op.msg.ptr : "copies failed");
	} else if (c->err) {
		s3_error_errno(r, c->err, true);
	} else {
		if (!c->part) {
			char id[NAME_VER_ID_LEN + 1];
			bool null;
			bool has = olver_id_of(c->sm.custom, id, &null);
			http_resp_header(req, "x-amz-copy-source-version-id", "%s", has && !null ? id : "null");
			s3_version_header(r, c->op.meta.custom, true);
		}
		s3_sse_headers(r, c->part ? c->pf.sse : c->dsse);
		s3_send_xml(r, 200, &c->out);
	}
}

static struct cp *cp_new(s3_rq_t *r, sv_t src)
{
	struct cp *c = arena_zalloc(r->http->arena, sizeof(*c));
	c->r = r;
	c->pf.fd = -1;
	arena_cleanup_add(r->http->arena, cp_cleanup, c);
	r->op = c;
	if (s3_copy_source(r, src, &c->sb, &c->sk, &c->svid) != AIS_OK)
		return NULL;
	return c;
}

int s3_copy_object(s3_rq_t *r, sv_t src)
{
	http_req_t *req = r->http;
	store_bucket_t b;
	struct cp *c = cp_new(r, src);
	if (!c)
		return AIS_OK;
	if (store_bucket_get(r->node.store, r->bucket.ptr, r->bucket.len, &b) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	sv_t d = http_req_header(req, "x-amz-metadata-directive");
	if (d.ptr && !sv_eqstr(d, "COPY") && !sv_eqstr(d, "REPLACE")) {
		s3_error(r, "InvalidArgument", "Unknown metadata directive.");
		return AIS_OK;
	}
	c->replace = d.ptr && sv_eqstr(d, "REPLACE");
	sv_t td = http_req_header(req, "x-amz-tagging-directive");
	if (td.ptr && !sv_eqstr(td, "COPY") && !sv_eqstr(td, "REPLACE")) {
		s3_error(r, "InvalidArgument", "Unknown tagging directive.");
		return AIS_OK;
	}
	c->tag_replace = td.ptr && sv_eqstr(td, "REPLACE");
	if (!c->replace && sv_eq(c->sb, r->bucket) && sv_eq(c->sk, r->key)) {
		s3_error(r, "InvalidRequest",
			 "This copy request is illegal because it is trying to copy an object to itself without "
			 "changing the object's metadata, storage class, website redirect location or encryption "
			 "attributes.");
		return AIS_OK;
	}
	if (s3_meta_acl_from_req(r, &c->dacl) != AIS_OK ||
	    (c->tag_replace && s3_tags_from_req(r, &c->dacl.tags) != AIS_OK) ||
	    s3_lock_from_req(r, &c->dacl) != AIS_OK || /* checked here, applied by cp_work */
	    s3_sse_put(r, &c->dsse) != AIS_OK || /* the copy's encryption: its headers or the bucket's default */
	    s3_sse_source_key(r, &c->skey) != AIS_OK)
		return AIS_OK;
	if (c->replace) {
		s3_meta_t probe = {0};
		buf_t pb = BUF_INIT;
		if (s3_meta_from_req(r, &probe) != AIS_OK)
			return AIS_OK;
		memset(probe.etag, 'f', 32);
		int rc = s3_meta_encode(&probe, &pb);
		buf_free(&pb);
		if (rc != AIS_OK) {
			s3_error(r, "MetadataTooLarge", NULL);
			return AIS_OK;
		}
	}
	s3_offload(r, cp_work, cp_done);
	return AIS_OK;
}

int s3_upload_part_copy(s3_rq_t *r, sv_t id, uint32_t num, sv_t src)
{
	http_req_t *req = r->http;
	struct cp *c = cp_new(r, src);
	if (!c)
		return AIS_OK;
	c->part = true;
	c->upload_id = id;
	c->num = num;
	sv_t rg = http_req_header(req, "x-amz-copy-source-range");
	if (rg.ptr) {
		sv_t v = sv_trim(rg);
		const char *dash = v.len > 6 ? memchr(v.ptr, '-', v.len) : NULL;
		if (!sv_startswith(v, "bytes=") || !dash ||
		    num_parse_u64(v.ptr + 6, (size_t)(dash - v.ptr - 6), 0, UINT64_MAX, &c->rstart) != AIS_OK ||
		    num_parse_u64(dash + 1, v.len - (size_t)(dash + 1 - v.ptr), 0, UINT64_MAX, &c->rlast) != AIS_OK ||
		    c->rlast < c->rstart) {
			s3_error(r, "InvalidArgument", "The x-amz-copy-source-range value must be of the form "
						       "bytes=first-last where first and last are the zero-based "
						       "offsets of the first and last bytes to copy");
			return AIS_OK;
		}
		c->has_range = true;
	}
	if (s3_sse_source_key(r, &c->skey) != AIS_OK || s3_sse_part_key(r, &c->pkey) != AIS_OK)
		return AIS_OK;
	s3_offload(r, cp_work, cp_done);
	return AIS_OK;
}
