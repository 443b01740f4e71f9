/*
 * chunked.c - the S3 request-body checker and aws-chunked decoder.
 *
 * A body is one of: the plain payload (UNSIGNED-PAYLOAD or a hex sha256 in
 * x-amz-content-sha256), or aws-chunked framing (the STREAMING-* modes):
 *
 *     hex-size[;chunk-signature=64hex]\r\n  data  \r\n   ... repeated
 *     0[;chunk-signature=64hex]\r\n
 *     [trailer-name:value\r\n ... [x-amz-trailer-signature:64hex\r\n]]
 *     \r\n
 *
 * Guarantees:
 *  1. Bounded memory: one header or trailer line (S3_LINE_MAX) and the
 *     running hashes. Payload bytes are handed to the caller as views into
 *     the input, as they arrive, whatever the split of the input.
 *  2. In the signed modes every chunk's signature (chained from the
 *     request's seed signature) is checked when the chunk ends, the
 *     zero-size last chunk included; the signed trailer's signature is
 *     checked over its canonical form ("name:value\n" per trailer).
 *  3. s3_body_finish succeeds only when the body was complete (the last
 *     chunk and the final line seen; x-amz-decoded-content-length matched),
 *     the payload hash (hex mode), Content-MD5 and x-amz-checksum-* (header
 *     or trailer) all match. Until then the caller must not commit.
 *  4. Any error is sticky: after one, feed and finish fail again.
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <string.h>
#include <zlib.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3_int.h"
#include "aisd/banned.h"

#define TRAILER_MAX 8192 /* all trailer lines together */

enum st {
	ST_PLAIN,    /* not aws-chunked: every byte is payload */
	ST_SIZE,     /* reading a chunk-size line */
	ST_DATA,     /* inside a chunk's data */
	ST_DATA_END, /* the CRLF after a chunk's data */
	ST_FINAL,    /* the CRLF after the last chunk (no trailer mode) */
	ST_TRAILER,  /* reading trailer lines */
	ST_DONE,     /* complete: nothing more may come */
};

struct s3_body {
	enum s3_payload mode;
	enum st st;
	bool failed;
	bool verify; /* chunk and trailer signatures */
	bool trailer_mode, trailer_signed;
	int64_t content_length; /* HTTP; -1 unknown */
	int64_t decoded_len;    /* x-amz-decoded-content-length; -1 none */
	uint64_t payload_len;
	uint64_t chunk_left;

	char line[S3_LINE_MAX];
	size_t linelen;
	bool cr; /* the line so far ended with '\r' */

	/* signing context */
	unsigned char signing_key[32];
	char amz_date[17];
	char scope[160];
	char prev_sig[65];
	char chunk_sig[65]; /* the current chunk's claimed signature */

	EVP_MD_CTX *md5, *payload_sha, *chunk_sha;
	unsigned char payload_sha256[32];
	bool has_md5;
	unsigned char content_md5[16];
	unsigned char md5_out[16]; /* the payload's, after finish */

	/* x-amz-checksum-*: the algorithm, where its value comes from */
	enum s3_ck ck;
	bool ck_in_trailer; /* announced by x-amz-trailer */
	bool ck_value_set;  /* header value, or the trailer seen */
	unsigned char ck_want[32];
	s3_ck_state_t cks;  /* the checksum of the payload, of type ck */
	char ck_name[40];
	char ck_b64[48];

	buf_t trailers; /* canonical "name:value\n" of the trailers seen */
	bool trailer_sig_seen;
	bool blank_seen; /* an empty line right after the last chunk */
	char trailer_sig[65];
};

static void body_cleanup(void *arg)
{
	s3_body_t *b = arg;
	EVP_MD_CTX_free(b->md5);
	EVP_MD_CTX_free(b->payload_sha);
	EVP_MD_CTX_free(b->chunk_sha);
	s3_ck_free(&b->cks);
	buf_free(&b->trailers);
	OPENSSL_cleanse(b->signing_key, sizeof(b->signing_key));
}

static EVP_MD_CTX *md_new(const EVP_MD *type)
{
	EVP_MD_CTX *m = EVP_MD_CTX_new();
	if (!m || !EVP_DigestInit_ex(m, type, NULL))
		fatalx("cannot initialise a digest");
	return m;
}

static void md_update(EVP_MD_CTX *m, const void *p, size_t n)
{
	if (m && !EVP_DigestUpdate(m, p, n))
		fatalx("EVP_DigestUpdate failed");
}

static void md_final(EVP_MD_CTX *m, unsigned char *out)
{
	unsigned int len;
	if (!EVP_DigestFinal_ex(m, out, &len))
		fatalx("EVP_DigestFinal_ex failed");
}

/* The x-amz-checksum-* request headers: at most one algorithm. */
static int header_checksum(s3_body_t *b, const s3_req_t *req, s3_autherr_t *err)
{
	if (req->ck_of_object)
		return AIS_OK;
	for (size_t i = 0; i < req->nhdrs; i++) {
		sv_t n = req->hdrs[i].name;
		/* x-amz-checksum-mode (GET), -type and -algorithm name no value */
		if (!sv_casestartswith(n, "x-amz-checksum-") || sv_eqcase(n, SV("x-amz-checksum-mode")) ||
		    sv_eqcase(n, SV("x-amz-checksum-type")) || sv_eqcase(n, SV("x-amz-checksum-algorithm")))
			continue;
		sv_t alg = {n.ptr + 15, n.len - 15};
		enum s3_ck t = s3_ck_by_name(alg);
		if (t == S3_CK_NONE) {
			s3_err(err, 400, "InvalidRequest", "The x-amz-checksum-%.*s header is not supported.",
			       (int)MIN(alg.len, 64), alg.ptr);
			return AIS_ERR;
		}
		if (b->ck != S3_CK_NONE) {
			s3_err(err, 400, "InvalidRequest",
			       "Expecting a single x-amz-checksum- header. Multiple checksum Types are not "
			       "allowed.");
			return AIS_ERR;
		}
		sv_t v = sv_trim(req->hdrs[i].value);
		if (s3_b64_decode(v, b->ck_want, sizeof(b->ck_want)) != (long)s3_ck_len(t)) {
			s3_err(err, 400, "InvalidRequest", "Value for x-amz-checksum-%s header is invalid.",
			       s3_ck_name(t));
			return AIS_ERR;
		}
		b->ck = t;
		b->ck_value_set = true;
	}
	return AIS_OK;
}

s3_body_t *s3_body_new(arena_t *a, const s3_auth_t *auth, const s3_req_t *req, int64_t content_length,
                       s3_autherr_t *err)
{
	s3_body_t *b = arena_zalloc(a, sizeof(*b));
	b->mode = auth->payload;
	b->content_length = content_length;
	b->decoded_len = -1;
	b->md5 = md_new(s3_md(S3_MD_MD5));
	arena_cleanup_add(a, body_cleanup, b);
	memset(err, 0, sizeof(*err));

	switch (b->mode) {
	case S3_PAYLOAD_UNSIGNED: b->st = ST_PLAIN; break;
	case S3_PAYLOAD_SHA256:
		b->st = ST_PLAIN;
		b->payload_sha = md_new(s3_md(S3_MD_SHA256));
		memcpy(b->payload_sha256, auth->payload_sha256, 32);
		break;
	case S3_PAYLOAD_STREAM_SIGNED_TRAILER:
		b->trailer_signed = true;
		/* fall through */
	case S3_PAYLOAD_STREAM_UNSIGNED_TRAILER:
		b->trailer_mode = true;
		/* fall through */
	case S3_PAYLOAD_STREAM_SIGNED: b->st = ST_SIZE; break;
	}
	if (b->st != ST_PLAIN) {
		sv_t dl = s3_req_header(req, "x-amz-decoded-content-length");
		uint64_t x;
		if (!dl.ptr) {
			s3_err(err, 411, "MissingContentLength",
			       "You must provide the Content-Length HTTP header.");
			return NULL;
		}
		if (num_parse_u64(dl.ptr, dl.len, 0, INT64_MAX, &x) != AIS_OK) {
			s3_err(err, 400, "InvalidArgument", "x-amz-decoded-content-length is not a number.");
			return NULL;
		}
		b->decoded_len = (int64_t)x;
		b->verify = auth->verify_chunks && b->mode != S3_PAYLOAD_STREAM_UNSIGNED_TRAILER;
		if (b->verify) {
			b->chunk_sha = md_new(s3_md(S3_MD_SHA256));
			memcpy(b->signing_key, auth->signing_key, 32);
			memcpy(b->amz_date, auth->amz_date, sizeof(b->amz_date));
			memcpy(b->scope, auth->scope, sizeof(b->scope));
			memcpy(b->prev_sig, auth->seed_signature, sizeof(b->prev_sig));
		}
	}

	sv_t md5 = s3_req_header(req, "content-md5");
	if (md5.ptr) {
		if (s3_b64_decode(md5, b->content_md5, sizeof(b->content_md5)) != 16) {
			s3_err(err, 400, "InvalidDigest", "The Content-MD5 you specified is not valid.");
			return NULL;
		}
		b->has_md5 = true;
	}
	if (header_checksum(b, req, err) != AIS_OK)
		return NULL;

	sv_t tr = s3_req_header(req, "x-amz-trailer");
	if (tr.ptr && b->trailer_mode) {
		enum s3_ck t = sv_casestartswith(tr, "x-amz-checksum-")
		                       ? s3_ck_by_name((sv_t){tr.ptr + 15, tr.len - 15})
		                       : S3_CK_NONE;
		if (t == S3_CK_NONE) {
			s3_err(err, 400, "InvalidRequest",
			       "The value specified in the x-amz-trailer header is not supported");
			return NULL;
		}
		if (b->ck != S3_CK_NONE) {
			s3_err(err, 400, "InvalidRequest",
			       "Expecting a single x-amz-checksum- header. Multiple checksum Types are not "
			       "allowed.");
			return NULL;
		}
		b->ck = t;
		b->ck_in_trailer = true;
	}
	sv_t sdk = s3_req_header(req, "x-amz-sdk-checksum-algorithm");
	if (sdk.ptr) {
		enum s3_ck t = s3_ck_by_name(sdk);
		if (t == S3_CK_NONE) {
			s3_err(err, 400, "InvalidRequest",
			       "Value for x-amz-sdk-checksum-algorithm header is invalid.");
			return NULL;
		}
		if (b->ck == S3_CK_NONE && !b->trailer_mode) {
			s3_err(err, 400, "InvalidRequest",
			       "x-amz-sdk-checksum-algorithm specified, but no corresponding "
			       "x-amz-checksum-* or "
			       "x-amz-trailer headers were found.");
			return NULL;
		}
		if (b->ck != S3_CK_NONE && b->ck != t) {
			s3_err(err, 400, "InvalidRequest",
			       "Value for x-amz-sdk-checksum-algorithm header is invalid.");
			return NULL;
		}
	}
	s3_ck_init(&b->cks, b->ck);
	return b;
}

/* Payload bytes: hashes, then the caller. */
static int payload(s3_body_t *b, const char *p, size_t n, s3_emit_fn emit, void *arg, s3_autherr_t *err)
{
	if (!n)
		return AIS_OK;
	if (b->decoded_len >= 0 && b->payload_len + n > (uint64_t)b->decoded_len) {
		s3_err(err, 400, "IncompleteBody",
		       "The decoded body is longer than x-amz-decoded-content-length.");
		return AIS_ERR;
	}
	b->payload_len += n;
	md_update(b->md5, p, n);
	md_update(b->payload_sha, p, n);
	md_update(b->chunk_sha, p, n);
	s3_ck_update(&b->cks, p, n);
	return emit ? emit(arg, p, n) : AIS_OK;
}

static int bad_frame(s3_body_t *b, s3_autherr_t *err, const char *what)
{
	s3_err(err, 400, "IncompleteBody", "The aws-chunked body is malformed: %s.", what);
	return AIS_ERR;
}

static int sig_mismatch(s3_autherr_t *err, const char *what)
{
	s3_err(err, 403, "SignatureDoesNotMatch",
	       "The %s signature we calculated does not match the signature you provided.", what);
	return AIS_ERR;
}

/* The chunk that just ended (data hashed into chunk_sha). */
static int chunk_verify(s3_body_t *b, s3_autherr_t *err)
{
	unsigned char d[32];
	char h[65], sig[65];
	buf_t sts = BUF_INIT;
	if (!b->verify)
		return AIS_OK;
	md_final(b->chunk_sha, d);
	if (!EVP_DigestInit_ex(b->chunk_sha, s3_md(S3_MD_SHA256), NULL))
		fatalx("EVP_DigestInit_ex failed");
	hex_encode(d, sizeof(d), h);
	buf_addf(&sts, "AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n%s\n" S3_EMPTY_SHA256 "\n%s", b->amz_date, b->scope,
	         b->prev_sig, h);
	s3_hmac_hex(b->signing_key, sts.ptr, sts.len, sig);
	buf_free(&sts);
	if (CRYPTO_memcmp(sig, b->chunk_sig, 64))
		return sig_mismatch(err, "chunk");
	memcpy(b->prev_sig, sig, sizeof(sig));
	return AIS_OK;
}

/* "hex-size[;chunk-signature=sig][;ext...]" */
static int size_line(s3_body_t *b, sv_t l, s3_autherr_t *err)
{
	size_t i = 0;
	uint64_t n = 0;
	while (i < l.len && i < 17) {
		char c = (char)(l.ptr[i] | 0x20);
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (v < 0)
			break;
		n = n << 4 | (uint64_t)v;
		i++;
	}
	if (i == 0 || i > 16 || (i < l.len && l.ptr[i] != ';'))
		return bad_frame(b, err, "bad chunk size");
	bool have_sig = false;
	sv_t ext = {l.ptr + i, l.len - i};
	while (ext.len) {
		ext.ptr++, ext.len--; /* ';' */
		const char *semi = memchr(ext.ptr, ';', ext.len);
		sv_t e = {ext.ptr, semi ? (size_t)(semi - ext.ptr) : ext.len};
		ext.ptr += e.len, ext.len -= e.len;
		if (sv_startswith(e, "chunk-signature=")) {
			sv_t s = {e.ptr + 16, e.len - 16};
			if (s.len != 64 || have_sig)
				return bad_frame(b, err, "bad chunk-signature");
			for (size_t k = 0; k < 64; k++)
				b->chunk_sig[k] = (char)(s.ptr[k] | 0x20);
			b->chunk_sig[64] = '\0';
			have_sig = true;
		}
	}
	if (b->verify && !have_sig)
		return sig_mismatch(err, "chunk (missing chunk-signature)");
	b->chunk_left = n;
	if (n > 0) {
		b->st = ST_DATA;
		return AIS_OK;
	}
	if (chunk_verify(b, err) != AIS_OK)
		return AIS_ERR;
	b->st = b->trailer_mode ? ST_TRAILER : ST_FINAL;
	return AIS_OK;
}

static int trailer_line(s3_body_t *b, sv_t l, s3_autherr_t *err)
{
	if (!l.len) {
		/* some writers put an empty line between the last chunk and
		 * the trailers: the first one, before any trailer, is skipped */
		if (!b->trailers.len && !b->trailer_sig_seen && !b->blank_seen)
			b->blank_seen = true;
		else
			b->st = ST_DONE;
		return AIS_OK;
	}
	const char *colon = memchr(l.ptr, ':', l.len);
	if (!colon)
		return bad_frame(b, err, "bad trailer");
	sv_t name = sv_trim((sv_t){l.ptr, (size_t)(colon - l.ptr)});
	sv_t val = sv_trim((sv_t){colon + 1, l.len - (size_t)(colon - l.ptr) - 1});
	if (sv_eqcase(name, SV("x-amz-trailer-signature"))) {
		if (b->trailer_sig_seen || val.len != 64)
			return bad_frame(b, err, "bad x-amz-trailer-signature");
		for (size_t k = 0; k < 64; k++)
			b->trailer_sig[k] = (char)(val.ptr[k] | 0x20);
		b->trailer_sig_seen = true;
		return AIS_OK;
	}
	if (b->trailer_sig_seen)
		return bad_frame(b, err, "a trailer after x-amz-trailer-signature");
	if (b->trailers.len + l.len + 1 > TRAILER_MAX)
		return bad_frame(b, err, "trailers too long");
	for (size_t k = 0; k < name.len; k++) {
		char c = name.ptr[k];
		buf_addch(&b->trailers, c >= 'A' && c <= 'Z' ? (char)(c | 0x20) : c);
	}
	buf_addch(&b->trailers, ':');
	buf_addsv(&b->trailers, val);
	buf_addch(&b->trailers, '\n');

	if (sv_casestartswith(name, "x-amz-checksum-")) {
		enum s3_ck t = s3_ck_by_name((sv_t){name.ptr + 15, name.len - 15});
		if (t == S3_CK_NONE || (b->ck != S3_CK_NONE && b->ck != t) || b->ck_value_set) {
			s3_err(err, 400, "InvalidRequest",
			       "The trailer %.*s does not match the checksum the request announced.",
			       (int)MIN(name.len, 64), name.ptr);
			return AIS_ERR;
		}
		if (b->ck == S3_CK_NONE) {
			/* not announced: nothing was computed */
			s3_err(err, 400, "InvalidRequest",
			       "The trailer %.*s was not announced in x-amz-trailer.", (int)MIN(name.len, 64),
			       name.ptr);
			return AIS_ERR;
		}
		if (s3_b64_decode(val, b->ck_want, sizeof(b->ck_want)) != (long)s3_ck_len(t)) {
			s3_err(err, 400, "InvalidRequest",
			       "Value for x-amz-checksum-%s trailing header is invalid.", s3_ck_name(t));
			return AIS_ERR;
		}
		b->ck_value_set = true;
	}
	return AIS_OK;
}

/* A complete line (without its CRLF) in the current state. */
static int on_line(s3_body_t *b, sv_t l, s3_autherr_t *err)
{
	switch (b->st) {
	case ST_SIZE: return size_line(b, l, err);
	case ST_FINAL:
		if (l.len)
			return bad_frame(b, err, "data after the last chunk");
		b->st = ST_DONE;
		return AIS_OK;
	case ST_TRAILER: return trailer_line(b, l, err);
	default: return bad_frame(b, err, "internal state");
	}
}

static int feed(s3_body_t *b, const char *in, size_t n, s3_emit_fn emit, void *arg, s3_autherr_t *err)
{
	size_t i = 0;
	int rc;
	if (b->st == ST_PLAIN)
		return payload(b, in, n, emit, arg, err);
	while (i < n) {
		switch (b->st) {
		case ST_DATA: {
			size_t take = (size_t)MIN((uint64_t)(n - i), b->chunk_left);
			if ((rc = payload(b, in + i, take, emit, arg, err)) != AIS_OK)
				return rc;
			i += take;
			b->chunk_left -= take;
			if (!b->chunk_left) {
				if (chunk_verify(b, err) != AIS_OK)
					return AIS_ERR;
				b->st = ST_DATA_END;
				b->linelen = 0;
			}
			break;
		}
		case ST_DATA_END:
			/* exactly "\r\n" */
			if (in[i] != (b->linelen ? '\n' : '\r'))
				return bad_frame(b, err, "chunk data longer than its size");
			i++;
			if (++b->linelen == 2) {
				b->linelen = 0;
				b->st = ST_SIZE;
			}
			break;
		case ST_SIZE:
		case ST_FINAL:
		case ST_TRAILER: {
			const char *nl = memchr(in + i, '\n', n - i);
			size_t take = nl ? (size_t)(nl - (in + i)) : n - i;
			if (b->linelen + take > sizeof(b->line))
				return bad_frame(b, err, "line too long");
			memcpy(b->line + b->linelen, in + i, take);
			b->linelen += take;
			i += take;
			if (!nl)
				break;
			i++; /* '\n' */
			if (!b->linelen || b->line[b->linelen - 1] != '\r')
				return bad_frame(b, err, "a line does not end with CRLF");
			sv_t l = {b->line, b->linelen - 1};
			b->linelen = 0;
			if (on_line(b, l, err) != AIS_OK)
				return AIS_ERR;
			break;
		}
		case ST_DONE: return bad_frame(b, err, "data after the end of the body");
		case ST_PLAIN: return bad_frame(b, err, "internal state");
		}
	}
	return AIS_OK;
}

int s3_body_feed(s3_body_t *b, const char *in, size_t n, s3_emit_fn emit, void *arg, s3_autherr_t *err)
{
	if (b->failed) {
		s3_err(err, 400, "IncompleteBody", "The request body was already rejected.");
		return AIS_ERR;
	}
	int rc = feed(b, in, n, emit, arg, err);
	if (rc != AIS_OK)
		b->failed = true;
	return rc;
}

static void ck_result(s3_body_t *b, unsigned char *d)
{
	size_t len = s3_ck_final(&b->cks, d);
	snprintf(b->ck_name, sizeof(b->ck_name), "x-amz-checksum-%s", s3_ck_name(b->ck));
	s3_b64_encode(d, len, b->ck_b64);
}

static int finish(s3_body_t *b, s3_autherr_t *err)
{
	/* tolerated: a body that stops right after its last line, without
	 * the closing empty line */
	if ((b->st == ST_FINAL || b->st == ST_TRAILER) && b->linelen == 0)
		b->st = ST_DONE;
	if (b->st != ST_PLAIN && b->st != ST_DONE) {
		s3_err(err, 400, "IncompleteBody", "The aws-chunked body ended before its last chunk.");
		return AIS_ERR;
	}
	if ((b->decoded_len >= 0 && b->payload_len != (uint64_t)b->decoded_len) ||
	    (b->st == ST_PLAIN && b->content_length >= 0 && b->payload_len != (uint64_t)b->content_length)) {
		s3_err(err, 400, "IncompleteBody",
		       "You did not provide the number of bytes specified by the Content-Length HTTP header");
		return AIS_ERR;
	}
	if (b->trailer_signed && b->verify) {
		unsigned char d[32];
		char h[65], sig[65];
		buf_t sts = BUF_INIT;
		if (!b->trailer_sig_seen)
			return sig_mismatch(err, "trailer (missing x-amz-trailer-signature)");
		EVP_Digest(b->trailers.ptr ? b->trailers.ptr : "", b->trailers.len, d, NULL,
		           s3_md(S3_MD_SHA256), NULL);
		hex_encode(d, sizeof(d), h);
		buf_addf(&sts, "AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n%s\n%s", b->amz_date, b->scope, b->prev_sig,
		         h);
		s3_hmac_hex(b->signing_key, sts.ptr, sts.len, sig);
		buf_free(&sts);
		if (CRYPTO_memcmp(sig, b->trailer_sig, 64))
			return sig_mismatch(err, "trailer");
	}
	unsigned char d[32];
	if (b->payload_sha) {
		md_final(b->payload_sha, d);
		if (memcmp(d, b->payload_sha256, 32)) {
			s3_err(err, 400, "XAmzContentSHA256Mismatch",
			       "The provided 'x-amz-content-sha256' header does not match what was "
			       "computed.");
			return AIS_ERR;
		}
	}
	md_final(b->md5, b->md5_out);
	if (b->has_md5 && memcmp(b->md5_out, b->content_md5, 16)) {
		s3_err(err, 400, "BadDigest",
		       "The Content-MD5 you specified did not match what we received.");
		return AIS_ERR;
	}
	if (b->ck != S3_CK_NONE) {
		if (!b->ck_value_set) {
			s3_err(err, 400, "InvalidRequest",
			       "The x-amz-trailer header names x-amz-checksum-%s, "
			       "but the body has no such trailer.",
			       s3_ck_name(b->ck));
			return AIS_ERR;
		}
		unsigned char c[32];
		ck_result(b, c);
		if (memcmp(c, b->ck_want, s3_ck_len(b->ck))) {
			s3_err(err, 400, "BadDigest",
			       "The %s you specified did not match the calculated checksum.",
			       s3_ck_name(b->ck));
			return AIS_ERR;
		}
	}
	return AIS_OK;
}

int s3_body_finish(s3_body_t *b, s3_autherr_t *err)
{
	if (b->failed) {
		s3_err(err, 400, "IncompleteBody", "The request body was already rejected.");
		return AIS_ERR;
	}
	b->failed = true; /* finish runs once; feeding after it is an error */
	int rc = finish(b, err);
	if (rc == AIS_OK) {
		b->st = ST_DONE;
		b->failed = false;
		b->decoded_len = (int64_t)b->payload_len; /* nothing more may come */
	}
	return rc;
}

uint64_t s3_body_payload_len(const s3_body_t *b)
{
	return b->payload_len;
}

void s3_body_md5(const s3_body_t *b, unsigned char md5[16])
{
	memcpy(md5, b->md5_out, 16);
}

bool s3_body_checksum(const s3_body_t *b, const char **name, const char **value)
{
	if (b->ck == S3_CK_NONE || !b->ck_b64[0])
		return false;
	*name = b->ck_name;
	*value = b->ck_b64;
	return true;
}
