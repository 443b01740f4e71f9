/*
 * checksum.c - the checksums S3 clients send as x-amz-checksum-*: CRC32
 * (zlib), CRC32C (SSE4.2 instruction when the CPU has it, else
 * slice-by-8 tables), CRC64/NVME (slice-by-8), and base64, the encoding of
 * every x-amz-checksum-* value (the digest's big-endian bytes).
 *
 * Guarantees: the CRCs are the standard ones (check values over
 * "123456789": CRC32 cbf43926, CRC32C e3069283, CRC64/NVME
 * ae8b14860a799888) and can be fed in pieces (crc = f(crc, piece));
 * s3_b64_decode accepts only canonical padded base64, so one digest has one
 * spelling.
 */
#include <pthread.h>
#include <string.h>
#include <zlib.h>

#include <openssl/evp.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#include "aisd/log.h"
#include "aisd/status.h"
#include "s3_int.h"
#include "aisd/banned.h"

static const struct {
	const char *name;
	enum s3_ck type;
	size_t len;
	const char *xml;
} ck_names[] = {
        {"crc32", S3_CK_CRC32, 4, "ChecksumCRC32"},
        {"crc32c", S3_CK_CRC32C, 4, "ChecksumCRC32C"},
        {"crc64nvme", S3_CK_CRC64NVME, 8, "ChecksumCRC64NVME"},
        {"sha1", S3_CK_SHA1, 20, "ChecksumSHA1"},
        {"sha256", S3_CK_SHA256, 32, "ChecksumSHA256"},
};

const char *s3_ck_xml(enum s3_ck t)
{
	for (size_t i = 0; i < sizeof(ck_names) / sizeof(ck_names[0]); i++)
		if (ck_names[i].type == t)
			return ck_names[i].xml;
	return "";
}

const char *s3_ck_name(enum s3_ck t)
{
	for (size_t i = 0; i < sizeof(ck_names) / sizeof(ck_names[0]); i++)
		if (ck_names[i].type == t)
			return ck_names[i].name;
	return "";
}

enum s3_ck s3_ck_by_name(sv_t name)
{
	for (size_t i = 0; i < sizeof(ck_names) / sizeof(ck_names[0]); i++)
		if (sv_eqcase(name, sv_from(ck_names[i].name)))
			return ck_names[i].type;
	return S3_CK_NONE;
}

size_t s3_ck_len(enum s3_ck t)
{
	for (size_t i = 0; i < sizeof(ck_names) / sizeof(ck_names[0]); i++)
		if (ck_names[i].type == t)
			return ck_names[i].len;
	return 0;
}

/* ---- slice-by-8 tables -------------------------------------------------- */

static uint32_t crc32c_tab[8][256];
static uint64_t crc64_tab[8][256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;
static bool have_sse42;

static void tab_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = i;
		uint64_t d = i;
		for (int k = 0; k < 8; k++) {
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
			d = d & 1 ? (d >> 1) ^ 0x9a6c9329ac4bc9b5ull : d >> 1;
		}
		crc32c_tab[0][i] = c;
		crc64_tab[0][i] = d;
	}
	for (unsigned i = 0; i < 256; i++) {
		for (int t = 1; t < 8; t++) {
			uint32_t c = crc32c_tab[t - 1][i];
			uint64_t d = crc64_tab[t - 1][i];
			crc32c_tab[t][i] = (c >> 8) ^ crc32c_tab[0][c & 0xff];
			crc64_tab[t][i] = (d >> 8) ^ crc64_tab[0][d & 0xff];
		}
	}
#if defined(__x86_64__)
	__builtin_cpu_init();
	have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

static uint64_t load64le(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t c, const unsigned char *p, size_t n)
{
	uint64_t c64 = c;
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c64 = _mm_crc32_u64(c64, v);
	}
	c = (uint32_t)c64;
	for (; n; n--)
		c = _mm_crc32_u8(c, *p++);
	return c;
}
#endif

uint32_t s3_crc32c(uint32_t crc, const void *buf, size_t n)
{
	const unsigned char *p = buf;
	uint32_t c = ~crc;
	pthread_once(&tab_once, tab_init);
#if defined(__x86_64__)
	if (have_sse42)
		return ~crc32c_hw(c, p, n);
#endif
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t v = load64le(p) ^ c;
		c = crc32c_tab[7][v & 0xff] ^ crc32c_tab[6][(v >> 8) & 0xff] ^
		    crc32c_tab[5][(v >> 16) & 0xff] ^ crc32c_tab[4][(v >> 24) & 0xff] ^
		    crc32c_tab[3][(v >> 32) & 0xff] ^ crc32c_tab[2][(v >> 40) & 0xff] ^
		    crc32c_tab[1][(v >> 48) & 0xff] ^ crc32c_tab[0][v >> 56];
	}
	for (; n; n--)
		c = (c >> 8) ^ crc32c_tab[0][(c ^ *p++) & 0xff];
	return ~c;
}

uint64_t s3_crc64nvme(uint64_t crc, const void *buf, size_t n)
{
	const unsigned char *p = buf;
	uint64_t c = ~crc;
	pthread_once(&tab_once, tab_init);
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t v = load64le(p) ^ c;
		c = crc64_tab[7][v & 0xff] ^ crc64_tab[6][(v >> 8) & 0xff] ^ crc64_tab[5][(v >> 16) & 0xff] ^
		    crc64_tab[4][(v >> 24) & 0xff] ^ crc64_tab[3][(v >> 32) & 0xff] ^
		    crc64_tab[2][(v >> 40) & 0xff] ^ crc64_tab[1][(v >> 48) & 0xff] ^ crc64_tab[0][v >> 56];
	}
	for (; n; n--)
		c = (c >> 8) ^ crc64_tab[0][(c ^ *p++) & 0xff];
	return ~c;
}

/* ---- streaming ---------------------------------------------------------- */

void s3_ck_init(s3_ck_state_t *st, enum s3_ck type)
{
	memset(st, 0, sizeof(*st));
	st->type = type;
	if (type == S3_CK_SHA1 || type == S3_CK_SHA256) {
		st->md = EVP_MD_CTX_new();
		if (!st->md || !EVP_DigestInit_ex(st->md, s3_md(type == S3_CK_SHA1 ? S3_MD_SHA1 : S3_MD_SHA256), NULL))
			fatalx("cannot initialise a digest");
	}
}

void s3_ck_update(s3_ck_state_t *st, const void *p, size_t n)
{
	switch (st->type) {
	case S3_CK_CRC32: st->crc32 = (uint32_t)crc32_z(st->crc32, p, n); break;
	case S3_CK_CRC32C: st->crc32 = s3_crc32c(st->crc32, p, n); break;
	case S3_CK_CRC64NVME: st->crc64 = s3_crc64nvme(st->crc64, p, n); break;
	case S3_CK_SHA1:
	case S3_CK_SHA256:
		if (!EVP_DigestUpdate(st->md, p, n))
			fatalx("EVP_DigestUpdate failed");
		break;
	case S3_CK_NONE: break;
	}
}

size_t s3_ck_final(s3_ck_state_t *st, unsigned char out[32])
{
	size_t len = s3_ck_len(st->type);
	unsigned int dl;
	switch (st->type) {
	case S3_CK_CRC32:
	case S3_CK_CRC32C:
		for (int k = 0; k < 4; k++)
			out[k] = (unsigned char)(st->crc32 >> (24 - 8 * k));
		break;
	case S3_CK_CRC64NVME:
		for (int k = 0; k < 8; k++)
			out[k] = (unsigned char)(st->crc64 >> (56 - 8 * k));
		break;
	case S3_CK_SHA1:
	case S3_CK_SHA256:
		if (!EVP_DigestFinal_ex(st->md, out, &dl))
			fatalx("EVP_DigestFinal_ex failed");
		break;
	case S3_CK_NONE: break;
	}
	s3_ck_free(st);
	return len;
}

void s3_ck_free(s3_ck_state_t *st)
{
	EVP_MD_CTX_free(st->md);
	st->md = NULL;
}

/* ---- base64 ------------------------------------------------------------- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void s3_b64_encode(const unsigned char *in, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) |
		             (i + 2 < n ? in[i + 2] : 0);
		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o] = '\0';
}

static int b64v(char c)
{
	const char *p = c ? memchr(b64, c, 64) : NULL;
	return p ? (int)(p - b64) : -1;
}

long s3_b64_decode(sv_t in, unsigned char *out, size_t outsz)
{
	size_t o = 0;
	if (in.len % 4)
		return -1;
	for (size_t i = 0; i < in.len; i += 4) {
		int v[4], pad = 0;
		for (int k = 0; k < 4; k++) {
			char c = in.ptr[i + k];
			if (c == '=' && i + 4 == in.len && k >= 2) {
				v[k] = 0;
				pad++;
			} else if (pad || (v[k] = b64v(c)) < 0) {
				return -1;
			}
		}
		uint32_t x =
		        (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
		size_t nb = 3 - (size_t)pad;
		/* canonical: the bits padding drops must be zero */
		if ((pad == 1 && (x & 0xff)) || (pad == 2 && (x & 0xffff)))
			return -1;
		if (o + nb > outsz)
			return -1;
		for (size_t k = 0; k < nb; k++)
			out[o++] = (unsigned char)(x >> (16 - 8 * k));
	}
	return (long)o;
}
