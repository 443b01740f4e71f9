/*
 * sse.h - the at-rest cipher of S3 server-side encryption, a pure library
 * (OpenSSL EVP, no I/O, no node): AES-256-CTR over an object's bytes at any
 * offset, the wrap of an object's data key (AES-256-GCM), and the parser of
 * the key files (SSE-S3 master keys, the local KMS key store).
 *
 * The S3 side (src/s3/sse.c) states the design; this header states the
 * primitives' contracts:
 *  - sse_ctr_* is AES-256-CTR as NIST SP 800-38A F.5.5 defines it: the IV is
 *    the first counter block, incremented as one 128-bit big-endian number
 *    per 16 bytes. Byte off of the stream is transformed with the keystream
 *    byte off, so a range is decrypted without the bytes before it.
 *  - sse_wrap/sse_unwrap: a 32-byte data key sealed with a 32-byte key
 *    encryption key: 12-byte random IV, 32 bytes of ciphertext, 16-byte GCM
 *    tag (SSE_WRAPPED bytes). Unwrapping with another key fails (the tag),
 *    which is how a wrong key is told from a right one.
 *  - a key file: one key a line, "ID BASE64", the base64 of 32 random bytes;
 *    '#' comments and blank lines ignored; ID 1..64 of A-Z a-z 0-9 . _ -,
 *    each ID once. The last key is the newest.
 */
#ifndef AISD_SSE_H
#define AISD_SSE_H

#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"

#define SSE_KEY 32      /* AES-256 */
#define SSE_IV 16       /* the CTR counter block */
#define SSE_WRAPPED 60  /* 12 IV + 32 key + 16 tag */
#define SSE_ID_MAX 64   /* a key's id in a key file */
#define SSE_KEYS_MAX 64 /* keys in one key file */

/* A CTR stream over one object: keeps its position, so consecutive pieces
 * cost no re-initialisation. */
typedef struct sse_ctr {
	void *evp; /* EVP_CIPHER_CTX */
	unsigned char key[SSE_KEY], iv[SSE_IV];
	uint64_t pos; /* the stream offset the next sse_ctr_xor continues from */
	int seeked;
} sse_ctr_t;

/* AIS_OK, or AIS_ERR when OpenSSL fails (out of memory). */
int sse_ctr_init(sse_ctr_t *c, const unsigned char key[SSE_KEY], const unsigned char iv[SSE_IV]);
/* Encrypts (= decrypts) n bytes at stream offset off from in to out (in ==
 * out allowed). AIS_OK or AIS_ERR. */
int sse_ctr_xor(sse_ctr_t *c, uint64_t off, const void *in, void *out, size_t n);
/* Frees the cipher and wipes the key. */
void sse_ctr_free(sse_ctr_t *c);

/* out: SSE_WRAPPED bytes. AIS_OK or AIS_ERR. */
int sse_wrap(const unsigned char kek[SSE_KEY], const unsigned char dk[SSE_KEY], unsigned char out[SSE_WRAPPED]);
/* AIS_OK with dk, or AIS_ERR (another key, or damaged). */
int sse_unwrap(const unsigned char kek[SSE_KEY], const unsigned char in[SSE_WRAPPED], unsigned char dk[SSE_KEY]);
/* n cryptographically random bytes; AIS_OK or AIS_ERR. */
int sse_random(void *out, size_t n);

typedef struct sse_keys {
	size_t n;
	struct {
		char id[SSE_ID_MAX + 1];
		unsigned char key[SSE_KEY];
	} k[SSE_KEYS_MAX];
} sse_keys_t;

/* Parses a key file's text into *out (the order kept: the last is the
 * newest). AIS_OK, or AIS_ERR with err naming the line (never a key). */
int sse_keys_parse(const char *p, size_t n, sse_keys_t *out, buf_t *err);
/* The key with id, or NULL. */
const unsigned char *sse_keys_find(const sse_keys_t *ks, const char *id);
/* Wipes the keys. */
void sse_keys_wipe(sse_keys_t *ks);

/* The part layout of an object completed from a multipart upload whose
 * parts were encrypted one by one (src/s3/sse.c rule 8): part NUM's bytes,
 * uploaded for the GEN-th time under that number (0: the first), are the
 * CTR stream from offset sse_part_stream(NUM, GEN), so a part is encrypted
 * before its place in the object is known and no two uploads of a part
 * share key stream. The text is the S3 metadata's part sizes,
 * "[N:]SIZE*COUNT[@GEN]+...": runs of COUNT consecutive parts of SIZE
 * bytes, the first numbered N (else the number after the last run's; 1 at
 * the start), all of generation GEN (else 0). */
#define SSE_PART_STRIDE (1ull << 33) /* 8 GiB: more than S3's largest part */
#define SSE_PART_NUMS 10000          /* S3's part numbers: 1..10000 */
#define SSE_PART_GEN_MAX 214747      /* (GEN_MAX + 1) * NUMS * STRIDE < 2^64 */
static inline uint64_t sse_part_stream(uint32_t num, uint32_t gen)
{
	return ((uint64_t)gen * SSE_PART_NUMS + num) * SSE_PART_STRIDE;
}
typedef struct sse_parts {
	size_t n; /* runs */
	struct sse_run {
		uint64_t start; /* the run's offset in the object */
		uint64_t size;  /* each part's */
		uint32_t first, count, gen;
	} *runs; /* malloc'd */
} sse_parts_t;
/* Parses the layout into *out (out->runs malloc'd: sse_parts_free):
 * AIS_OK, or AIS_ERR when it is not one (numbers not ascending, over
 * 10000 parts, a size over SSE_PART_STRIDE, a generation over
 * SSE_PART_GEN_MAX). */
int sse_parts_parse(const char *p, sse_parts_t *out);
/* The CTR stream offset of the object's byte off, and in *seg how many
 * bytes from off are in the same part (0: off is past the end). */
uint64_t sse_parts_map(const sse_parts_t *ps, uint64_t off, uint64_t *seg);
void sse_parts_free(sse_parts_t *ps);

/* Canonical padded base64 (the customer key and its MD5): the decoded
 * length, or -1 when in is not that or does not fit outsz. */
long sse_b64_decode(const char *in, size_t n, unsigned char *out, size_t outsz);

#endif
