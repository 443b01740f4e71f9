/*
 * sse.c - S3 server-side encryption (SSE-C, SSE-S3, SSE-KMS) on the owner
 * target: the request headers, the keys, and the object's encryption record
 * ("s3.sse" in its S3 metadata). The cipher is the pure library sse.h.
 *
 * NOTES ON THE DESIGN
 *  1. One mechanism for the three modes: every encrypted object has its own
 *     random 256-bit data key and a random 128-bit IV; its bytes are
 *     AES-256-CTR(data key, IV) of the plaintext, so byte off is decrypted
 *     from byte off alone (ranges, parts, partNumber reads). The data key is
 *     kept wrapped (AES-256-GCM, sse.h) by the mode's key: SSE-C the
 *     customer's key (never stored, never logged: the GCM tag of the wrapped
 *     data key is what tells a right key from a wrong one, so nothing
 *     derived from the key but that AEAD tag is kept), SSE-S3 a master key
 *     of s3.sse_key_file, SSE-KMS a named key of s3.kms_key_file. The
 *     record is "MODE:KEYID:IVHEX:WRAPPEDHEX" (MODE C, S or K; KEYID "-" for
 *     SSE-C).
 *  2. Bytes are encrypted where they enter the object layer on the owner
 *     (put.c, after the SigV4 body decoder and before ol_stream), so every
 *     copy, erasure-coded slice, rebalance move and resilver carries
 *     ciphertext; they are decrypted only where they leave for an S3
 *     client (object.c). The object layer knows nothing of it.
 *  3. Integrity: the object layer's stored checksum is that of the
 *     ciphertext (verified on reads, EC repair, rebalance as for any
 *     object); the S3 ETag of SSE-S3 is the plaintext MD5 as S3 has it, of
 *     SSE-C and SSE-KMS an MD5 over the IV and the plaintext MD5 (not the
 *     plaintext's MD5, as S3), and x-amz-checksum-* stays the plaintext's.
 *  4. Key files: "ID BASE64" lines (sse.h), mode 0600 or stricter (else
 *     refused), re-read when they change (a stat per use), so rotation is:
 *     append a new key line; new writes use the last key, reads find the
 *     key by the id in the record. Never remove a key objects still use.
 *  5. SSE-C is refused over plain HTTP (400 InvalidRequest, as S3) unless
 *     s3.sse_c_plain_http is on: the client's connection must be TLS
 *     (where it arrived: a forwarding node says so, s3_client).
 *  6. A write that names no encryption takes its bucket's default
 *     (PutBucketEncryption, ssecfg.c) as if it had named it.
 *  7. Copies: CopyObject encrypts its copy like a PutObject (copy.c). An
 *     encrypted source of CopyObject or UploadPartCopy is read as its
 *     plaintext on the destination's owner, the one node that decrypts:
 *     the source's bytes come as stored (ciphertext) with its record in
 *     its metadata, from this target's copy or from its holder by the
 *     peer's native GET under the intra-cluster signature, and are
 *     decrypted from their offset in the source (a range too). So no key
 *     travels between targets: an SSE-C source's key (x-amz-copy-source-
 *     server-side-encryption-customer-*) stays with the request that
 *     brought it, which rule 5 checks like any SSE-C key; SSE-S3 and
 *     SSE-KMS keys are found in this node's key files by the record's id
 *     (every target has the same files).
 *  8. Multipart uploads: CreateMultipartUpload takes the headers (or the
 *     bucket's default) as a PutObject and keeps the record with the
 *     upload; every part is encrypted by its UploadPart or UploadPartCopy
 *     (an SSE-C upload's parts carry its key; parts are ciphertext on disk
 *     from the start) with the upload's data key, from a CTR stream
 *     offset of its own: sse_part_stream(NUM, GEN), GEN counting the
 *     uploads of part NUM (multipart.c part_gen), so a part uploaded again,
 *     or twice at once, never reuses key stream (two ciphertexts of one
 *     stream give away the XOR of their plaintexts to whoever reads the
 *     disk). Its place in the object is known only at Complete, which
 *     joins the parts' bytes as they are and writes the object's record
 *     with the layout of its parts (sse.h: sizes and generations)
 *     appended, so a read maps each byte to its part's stream
 *     (s3_sse_xor): ranges across parts, partNumber reads, copies of it.
 *     No key is needed at Complete (an SSE-C key given there is checked).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "aisd/log.h"
#include "aisd/sse.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

#define H_ALG "x-amz-server-side-encryption"
#define H_KMS "x-amz-server-side-encryption-aws-kms-key-id"
#define H_C_ALG "x-amz-server-side-encryption-customer-algorithm"
#define H_C_KEY "x-amz-server-side-encryption-customer-key"
#define H_C_MD5 "x-amz-server-side-encryption-customer-key-MD5"

/* --- key files (rule 4) ------------------------------------------------------------ */

struct keyfile {
	pthread_mutex_t mu;
	char path[1024];
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	off_t size;
	bool loaded;
	sse_keys_t keys;
};
static struct keyfile kf_master = {.mu = PTHREAD_MUTEX_INITIALIZER};
static struct keyfile kf_kms = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Copies the key of id (NULL: the newest) into key and its id into idout.
 * AIS_OK; AIS_DONE: no such id; AIS_ERR: the file is unusable (logged,
 * without any key text). */
static int key_get(struct keyfile *f, const char *path, const char *id, unsigned char key[SSE_KEY],
		   char idout[SSE_ID_MAX + 1])
{
	int rc = AIS_ERR;
	struct stat st;
	pthread_mutex_lock(&f->mu);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		log_warn("server-side encryption: cannot open the key file %s", path);
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		log_warnx("server-side encryption: the key file %s must be a regular file of mode 0600", path);
		goto out;
	}
	if (!f->loaded || strcmp(f->path, path) || f->dev != st.st_dev || f->ino != st.st_ino ||
	    f->size != st.st_size || f->mtime.tv_sec != st.st_mtim.tv_sec || f->mtime.tv_nsec != st.st_mtim.tv_nsec) {
		char text[64 * 1024];
		ssize_t n = st.st_size < (off_t)sizeof(text) ? pread(fd, text, sizeof(text), 0) : -1;
		buf_t err = BUF_INIT;
		f->loaded = false;
		if (n < 0 || sse_keys_parse(text, (size_t)n, &f->keys, &err) != AIS_OK) {
			log_warnx("server-side encryption: key file %s: %s", path, n < 0 ? "over 64 KiB" : err.ptr);
			OPENSSL_cleanse(text, sizeof(text));
			buf_free(&err);
			goto out;
		}
		OPENSSL_cleanse(text, sizeof(text));
		buf_free(&err);
		snprintf(f->path, sizeof(f->path), "%s", path);
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		f->size = st.st_size;
		f->mtime = st.st_mtim;
		f->loaded = true;
	}
	const unsigned char *k;
	if (!id) {
		k = f->keys.k[f->keys.n - 1].key;
		id = f->keys.k[f->keys.n - 1].id;
	} else if (!(k = sse_keys_find(&f->keys, id))) {
		rc = AIS_DONE;
		goto out;
	}
	memcpy(key, k, SSE_KEY);
	if (idout != id)
		snprintf(idout, SSE_ID_MAX + 1, "%s", id);
	rc = AIS_OK;
out:
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

/* --- the request's keys ---------------------------------------------------------------- */

static void sse_cleanup(void *arg)
{
	s3_sse_t *s = arg;
	sse_ctr_free(&s->ctr);
	sse_parts_free(&s->parts);
	OPENSSL_cleanse(s, sizeof(*s));
}

static s3_sse_t *sse_new(s3_rq_t *r)
{
	s3_sse_t *s = arena_zalloc(r->http->arena, sizeof(*s));
	arena_cleanup_add(r->http->arena, sse_cleanup, s);
	return s;
}

static bool name_is(sv_t n, const char *h) { return n.len == strlen(h) && !strncasecmp(n.ptr, h, n.len); }

/* The SSE-C headers named pfx + "server-side-encryption-customer-*" (pfx
 * "x-amz-" for the object's own key, "x-amz-copy-source-" for a copy's
 * source) into kek (and the key's MD5 in s->keymd5): AIS_OK, AIS_DONE when
 * none was given, AIS_ERR after answering. */
static int customer_key(s3_rq_t *r, const char *pfx, s3_sse_t *s, unsigned char kek[SSE_KEY])
{
	char na[96], nk[96], nm[96];
	snprintf(na, sizeof(na), "%s%s", pfx, H_C_ALG + 6); /* past "x-amz-" */
	snprintf(nk, sizeof(nk), "%s%s", pfx, H_C_KEY + 6);
	snprintf(nm, sizeof(nm), "%s%s", pfx, H_C_MD5 + 6);
	sv_t alg = http_req_header(r->http, na), key = http_req_header(r->http, nk), md5 = http_req_header(r->http, nm);
	if (!alg.ptr && !key.ptr && !md5.ptr)
		return AIS_DONE;
	char addr[64];
	bool tls;
	s3_client(r, addr, sizeof(addr), &tls); /* the client's connection, where it arrived */
	if (!r->node.conf->s3_sse_c_plain_http && !tls) {
		s3_error(r, "InvalidRequest", "Requests specifying Server Side Encryption with Customer provided keys "
					      "must be made over a secure connection.");
		return AIS_ERR;
	}
	if (!alg.ptr || !sv_eqstr(alg, "AES256")) {
		s3_error(r, "InvalidArgument", alg.ptr ? "The requested encryption algorithm is not valid, must be "
							 "AES256."
						       : "Requests specifying Server Side Encryption with Customer "
							 "provided keys must provide a valid encryption algorithm.");
		return AIS_ERR;
	}
	unsigned char k[SSE_KEY + 3], want[16 + 3], got[16];
	if (!key.ptr || sse_b64_decode(key.ptr, key.len, k, sizeof(k)) != SSE_KEY) {
		OPENSSL_cleanse(k, sizeof(k));
		s3_error(r, "InvalidArgument", "The secret key was invalid for the specified algorithm.");
		return AIS_ERR;
	}
	EVP_Digest(k, SSE_KEY, got, NULL, EVP_md5(), NULL);
	if (!md5.ptr || sse_b64_decode(md5.ptr, md5.len, want, sizeof(want)) != 16 || CRYPTO_memcmp(want, got, 16)) {
		OPENSSL_cleanse(k, sizeof(k));
		s3_error(r, "InvalidArgument", md5.ptr ? "The calculated MD5 hash of the key did not match the hash "
							 "that was provided."
						       : "Requests specifying Server Side Encryption with Customer "
							 "provided keys must provide an appropriate secret key MD5.");
		return AIS_ERR;
	}
	memcpy(kek, k, SSE_KEY);
	OPENSSL_cleanse(k, sizeof(k));
	s3_b64_encode(got, 16, s->keymd5);
	return AIS_OK;
}

static int keys_unavailable(s3_rq_t *r)
{
	s3_error(r, "InternalError", "the server-side encryption keys are unavailable (see the node's log)");
	return AIS_ERR;
}

int s3_sse_put(s3_rq_t *r, s3_sse_t **out)
{
	s3_sse_t *s = sse_new(r);
	unsigned char kek[SSE_KEY], w[SSE_WRAPPED];
	char wh[2 * SSE_WRAPPED + 1], ivh[2 * SSE_IV + 1];
	sv_t alg = http_req_header(r->http, H_ALG), kid = http_req_header(r->http, H_KMS);
	const conf_t *c = r->node.conf;
	int rc;

	*out = NULL;
	for (size_t i = 0; i < r->http->nhdrs; i++) { /* what is not served: the KMS context, bucket keys */
		sv_t n = r->http->hdrs[i].name;
		if (n.len > strlen(H_ALG) && !strncasecmp(n.ptr, H_ALG "-", strlen(H_ALG) + 1) &&
		    !name_is(n, H_KMS) && !name_is(n, H_C_ALG) && !name_is(n, H_C_KEY) && !name_is(n, H_C_MD5)) {
			s3_error(r, "NotImplemented", "%.*s is not implemented", (int)MIN(n.len, 128), n.ptr);
			return AIS_ERR;
		}
	}
	if ((rc = customer_key(r, "x-amz-", s, kek)) == AIS_ERR)
		return AIS_ERR;
	if (rc == AIS_DONE && !alg.ptr && !kid.ptr) { /* the bucket's default, if it has one (ssecfg.c) */
		s3_ssecfg_t d;
		if (s3_doc_of_bucket(r, &s3_ssecfg_ops, &d) == AIS_OK && d.mode) {
			alg = sv_from(d.mode == 'S' ? "AES256" : "aws:kms");
			if (d.kid[0])
				kid = sv_from(arena_strndup(r->http->arena, d.kid, strlen(d.kid)));
		}
	}
	if (rc == AIS_OK) {
		if (alg.ptr || kid.ptr) {
			OPENSSL_cleanse(kek, sizeof(kek));
			s3_error(r, "InvalidArgument", "Server Side Encryption with Customer provided key is incompatible "
						       "with the encryption method specified");
			return AIS_ERR;
		}
		s->mode = 'C';
	} else if (alg.ptr && sv_eqstr(alg, "AES256") && !kid.ptr) {
		if (!c->s3_sse_key_file[0]) {
			s3_error(r, "NotImplemented", "x-amz-server-side-encryption: SSE-S3 is not configured on this cluster (s3.sse_key_file)");
			return AIS_ERR;
		}
		if (key_get(&kf_master, c->s3_sse_key_file, NULL, kek, s->kid) != AIS_OK)
			return keys_unavailable(r);
		s->mode = 'S';
	} else if (alg.ptr && sv_eqstr(alg, "aws:kms")) {
		if (!c->s3_kms_key_file[0]) {
			s3_error(r, "NotImplemented", "x-amz-server-side-encryption: SSE-KMS is not configured on this cluster (s3.kms_key_file)");
			return AIS_ERR;
		}
		char id[SSE_ID_MAX + 1];
		snprintf(id, sizeof(id), "%.*s", (int)MIN(kid.len, SSE_ID_MAX), kid.ptr ? kid.ptr : "");
		if (kid.ptr && (kid.len > SSE_ID_MAX || !kid.len)) {
			s3_error(r, "KMS.NotFoundException", "Invalid keyId");
			return AIS_ERR;
		}
		rc = key_get(&kf_kms, c->s3_kms_key_file, kid.ptr ? id : NULL, kek, s->kid);
		if (rc == AIS_DONE) {
			s3_error(r, "KMS.NotFoundException", "Invalid keyId %s", id);
			return AIS_ERR;
		}
		if (rc != AIS_OK)
			return keys_unavailable(r);
		s->mode = 'K';
	} else if (alg.ptr || kid.ptr) {
		s3_error(r, "InvalidArgument", "The encryption method specified is not supported");
		return AIS_ERR;
	} else {
		return AIS_OK; /* not encrypted */
	}
	if (sse_random(s->dk, SSE_KEY) != AIS_OK || sse_random(s->iv, SSE_IV) != AIS_OK ||
	    sse_wrap(kek, s->dk, w) != AIS_OK || sse_ctr_init(&s->ctr, s->dk, s->iv) != AIS_OK) {
		OPENSSL_cleanse(kek, sizeof(kek));
		s3_error(r, "InternalError", "server-side encryption failed");
		return AIS_ERR;
	}
	OPENSSL_cleanse(kek, sizeof(kek));
	hex_encode(w, SSE_WRAPPED, wh);
	hex_encode(s->iv, SSE_IV, ivh);
	s->meta = arena_printf(r->http->arena, "%c:%s:%s:%s", s->mode, s->mode == 'C' ? "-" : s->kid, ivh, wh);
	*out = s;
	return AIS_OK;
}

/* Opens the record meta (NULL: a plain object) for reading into s, with
 * the customer key kek when have_kek (wiped here). Answers nothing, so any
 * thread may call it: AIS_OK (s->mode 0: plain), or AIS_ERR with the S3
 * error's *code and *msg (static text). */
static int sse_open(const conf_t *c, const char *meta, bool have_kek, unsigned char kek[SSE_KEY], s3_sse_t *s,
		    const char **code, const char **msg)
{
	unsigned char w[SSE_WRAPPED];
	int rc;

	*code = "InternalError";
	*msg = "the server-side encryption keys are unavailable (see the node's log)";
	if (!meta) {
		if (have_kek) {
			OPENSSL_cleanse(kek, SSE_KEY);
			*code = "InvalidRequest";
			*msg = "The encryption parameters are not applicable to this object.";
			return AIS_ERR;
		}
		return AIS_OK;
	}
	/* MODE:KEYID:IV:WRAPPED[:LAYOUT] */
	const char *p1 = strchr(meta, ':'), *p2 = p1 ? strchr(p1 + 1, ':') : NULL, *p3 = p2 ? strchr(p2 + 1, ':') : NULL;
	const char *p4 = p3 ? strchr(p3 + 1, ':') : NULL;
	if (!p1 || p1 != meta + 1 || !p2 || !p3 || (size_t)(p2 - p1 - 1) > SSE_ID_MAX ||
	    hex_decode(p2 + 1, (size_t)(p3 - p2 - 1), s->iv, SSE_IV) != AIS_OK ||
	    hex_decode(p3 + 1, p4 ? (size_t)(p4 - p3 - 1) : strlen(p3 + 1), w, SSE_WRAPPED) != AIS_OK ||
	    (p4 && sse_parts_parse(p4 + 1, &s->parts) != AIS_OK)) {
		if (have_kek)
			OPENSSL_cleanse(kek, SSE_KEY);
		*msg = "the object's encryption record is damaged";
		return AIS_ERR;
	}
	s->mode = meta[0];
	snprintf(s->kid, sizeof(s->kid), "%.*s", (int)(p2 - p1 - 1), p1 + 1);
	if (s->mode == 'C') {
		if (!have_kek) {
			*code = "InvalidRequest";
			*msg = "The object was stored using a form of Server Side Encryption. The correct parameters "
			       "must be provided to retrieve the object.";
			return AIS_ERR;
		}
	} else {
		if (have_kek) {
			OPENSSL_cleanse(kek, SSE_KEY);
			*code = "InvalidRequest";
			*msg = "The encryption parameters are not applicable to this object.";
			return AIS_ERR;
		}
		const char *path = s->mode == 'S' ? c->s3_sse_key_file : c->s3_kms_key_file;
		rc = path[0] ? key_get(s->mode == 'S' ? &kf_master : &kf_kms, path, s->kid, kek, s->kid) : AIS_ERR;
		if (rc != AIS_OK) {
			if (rc == AIS_DONE)
				log_warnx("server-side encryption: key id \"%s\" is not in %s", s->kid, path);
			return AIS_ERR;
		}
	}
	rc = sse_unwrap(kek, w, s->dk);
	OPENSSL_cleanse(kek, SSE_KEY);
	if (rc != AIS_OK) {
		if (s->mode == 'C') {
			*code = "AccessDenied";
			*msg = "The provided customer key does not match the object's key.";
		}
		return AIS_ERR;
	}
	if (sse_ctr_init(&s->ctr, s->dk, s->iv) != AIS_OK) {
		*msg = "server-side encryption failed";
		return AIS_ERR;
	}
	return AIS_OK;
}

int s3_sse_get(s3_rq_t *r, const char *meta, s3_sse_t **out)
{
	s3_sse_t *s = sse_new(r);
	unsigned char kek[SSE_KEY];
	const char *code, *msg;
	int rc;

	*out = NULL;
	for (size_t i = 0; i < r->http->nhdrs; i++) { /* a read takes only the customer key */
		sv_t n = r->http->hdrs[i].name;
		if (n.len >= strlen(H_ALG) && !strncasecmp(n.ptr, H_ALG, strlen(H_ALG)) && !name_is(n, H_C_ALG) &&
		    !name_is(n, H_C_KEY) && !name_is(n, H_C_MD5)) {
			s3_error(r, "InvalidArgument", "%.*s is not valid on a read", (int)MIN(n.len, 128), n.ptr);
			return AIS_ERR;
		}
	}
	if ((rc = customer_key(r, "x-amz-", s, kek)) == AIS_ERR)
		return AIS_ERR;
	if (sse_open(r->node.conf, meta, rc == AIS_OK, kek, s, &code, &msg) != AIS_OK) {
		s3_error(r, code, "%s", msg);
		return AIS_ERR;
	}
	*out = s->mode ? s : NULL;
	return AIS_OK;
}

int s3_sse_source_key(s3_rq_t *r, s3_sse_t **out)
{
	s3_sse_t *s = sse_new(r);
	int rc = customer_key(r, "x-amz-copy-source-", s, s->kek);
	*out = s;
	s->has_kek = rc == AIS_OK;
	return rc == AIS_ERR ? AIS_ERR : AIS_OK;
}

int s3_sse_source_open(const conf_t *c, const char *meta, s3_sse_t *k, s3_sse_t **out, const char **code,
		       const char **msg)
{
	bool have = k->has_kek;
	const char *cd, *ms;
	k->has_kek = false; /* one use: sse_open wipes it */
	*out = NULL;
	if (sse_open(c, meta, have, k->kek, k, &cd, &ms) != AIS_OK) {
		*code = cd;
		*msg = ms;
		return AIS_ERR;
	}
	*out = k->mode ? k : NULL;
	return AIS_OK;
}

bool s3_sse_asked(s3_rq_t *r)
{
	for (size_t i = 0; i < r->http->nhdrs; i++) {
		sv_t n = r->http->hdrs[i].name;
		if (n.len > strlen(H_ALG) && !strncasecmp(n.ptr, H_ALG "-", strlen(H_ALG) + 1))
			return true;
	}
	return false;
}

void s3_sse_headers(s3_rq_t *r, const s3_sse_t *s)
{
	if (!s)
		return;
	if (s->mode == 'C') {
		http_resp_header(r->http, H_C_ALG, "AES256");
		http_resp_header(r->http, H_C_MD5, "%s", s->keymd5);
	} else {
		http_resp_header(r->http, H_ALG, "%s", s->mode == 'S' ? "AES256" : "aws:kms");
		if (s->mode == 'K')
			http_resp_header(r->http, H_KMS, "%s", s->kid);
	}
}

int s3_sse_xor(s3_sse_t *s, uint64_t off, const void *in, void *out, size_t n)
{
	if (!s->parts.n)
		return sse_ctr_xor(&s->ctr, s->base + off, in, out, n);
	const char *i = in; /* rule 8: each part from its own stream offset */
	char *o = out;
	while (n) {
		uint64_t seg, at = sse_parts_map(&s->parts, off, &seg);
		size_t k = (size_t)MIN((uint64_t)n, seg);
		if (!k || sse_ctr_xor(&s->ctr, at, i, o, k) != AIS_OK)
			return AIS_ERR;
		i += k;
		o += k;
		off += k;
		n -= k;
	}
	return AIS_OK;
}

int s3_sse_part_key(s3_rq_t *r, s3_sse_t **out)
{
	s3_sse_t *s = sse_new(r);
	sv_t alg = http_req_header(r->http, H_ALG);
	if (alg.ptr) /* the upload's mode said again (rule 8): checked by s3_sse_part_open */
		s->want = sv_eqstr(alg, "AES256") ? 'S' : sv_eqstr(alg, "aws:kms") ? 'K' : '?';
	for (size_t i = 0; i < r->http->nhdrs; i++) { /* a part takes the customer key, or the mode */
		sv_t n = r->http->hdrs[i].name;
		if (n.len >= strlen(H_ALG) && !strncasecmp(n.ptr, H_ALG, strlen(H_ALG)) && !name_is(n, H_C_ALG) &&
		    !name_is(n, H_C_KEY) && !name_is(n, H_C_MD5) && !name_is(n, H_ALG) && !name_is(n, H_KMS)) {
			s3_error(r, "InvalidArgument", "%.*s is not valid on a part; the upload's encryption is "
				 "named by CreateMultipartUpload", (int)MIN(n.len, 128), n.ptr);
			return AIS_ERR;
		}
	}
	int rc = customer_key(r, "x-amz-", s, s->kek);
	*out = s;
	s->has_kek = rc == AIS_OK;
	return rc == AIS_ERR ? AIS_ERR : AIS_OK;
}

int s3_sse_part_open(const conf_t *c, const char *meta, s3_sse_t *k, uint32_t num, uint32_t gen, s3_sse_t **out,
		     const char **code, const char **msg)
{
	char want = k->want;
	if (want && (!meta || meta[0] != want)) {
		*out = NULL;
		*code = "InvalidArgument";
		*msg = "x-amz-server-side-encryption does not name the upload's encryption (CreateMultipartUpload's)";
		return AIS_ERR;
	}
	if (s3_sse_source_open(c, meta, k, out, code, msg) != AIS_OK) {
		if (!strcmp(*code, "AccessDenied")) { /* a write's argument, as S3 */
			*code = "InvalidArgument";
			*msg = "The provided customer key does not match the upload's key.";
		}
		return AIS_ERR;
	}
	if (*out)
		(*out)->base = sse_part_stream(num, gen);
	return AIS_OK;
}

char *s3_sse_record_parts(arena_t *a, const char *meta, const char *layout)
{
	return arena_printf(a, "%s:%s", meta, layout);
}

void s3_sse_etag(const s3_sse_t *s, const unsigned char md5[16], char hex[33])
{
	if (s->mode == 'S')
		return; /* the plaintext MD5, as S3 */
	unsigned char in[SSE_IV + 16], d[16];
	memcpy(in, s->iv, SSE_IV);
	memcpy(in + SSE_IV, md5, 16);
	EVP_Digest(in, sizeof(in), d, NULL, EVP_md5(), NULL);
	hex_encode(d, 16, hex);
}
