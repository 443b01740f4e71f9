/*
 * sse.c - the at-rest cipher of S3 server-side encryption (sse.h): AES-256-CTR
 * at any offset of an object, the AES-256-GCM wrap of a data key, and the
 * key-file parser. Pure: no I/O, no node, no logging of anything secret (an
 * error names a line number, never its text).
 *
 * Guarantees: sse_ctr_xor at offset off equals the keystream of one CTR run
 * from offset 0 (NIST SP 800-38A F.5.5 vectors in tests/unit/test_sse.c);
 * sse_unwrap fails for any key other than the one that wrapped; every key
 * this file copies is wiped when its holder is freed.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "aisd/sse.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3_int.h"
#include "aisd/banned.h"

int sse_ctr_init(sse_ctr_t *c, const unsigned char key[SSE_KEY], const unsigned char iv[SSE_IV])
{
	memset(c, 0, sizeof(*c));
	if (!(c->evp = EVP_CIPHER_CTX_new()))
		return AIS_ERR;
	memcpy(c->key, key, SSE_KEY);
	memcpy(c->iv, iv, SSE_IV);
	return AIS_OK;
}

/* Positions the stream at off: the counter block iv + off / 16, then the
 * off % 16 keystream bytes of that block discarded. */
static int seek(sse_ctr_t *c, uint64_t off)
{
	unsigned char ctr[SSE_IV], skip[16];
	uint64_t add = off / 16;
	memcpy(ctr, c->iv, SSE_IV);
	unsigned carry = 0;
	for (int i = SSE_IV - 1; i >= 0; i--) {
		unsigned v = ctr[i] + (unsigned)(add & 0xff) + carry;
		ctr[i] = (unsigned char)v;
		carry = v >> 8;
		add >>= 8;
	}
	int outl;
	if (EVP_EncryptInit_ex(c->evp, EVP_aes_256_ctr(), NULL, c->key, ctr) != 1)
		return AIS_ERR;
	memset(skip, 0, sizeof(skip));
	if (off % 16 && EVP_EncryptUpdate(c->evp, skip, &outl, skip, (int)(off % 16)) != 1)
		return AIS_ERR;
	c->pos = off;
	c->seeked = 1;
	return AIS_OK;
}

int sse_ctr_xor(sse_ctr_t *c, uint64_t off, const void *in, void *out, size_t n)
{
	if ((!c->seeked || off != c->pos) && seek(c, off) != AIS_OK)
		return AIS_ERR;
	const unsigned char *ip = in;
	unsigned char *op = out;
	while (n) {
		int step = n > (1u << 30) ? (1 << 30) : (int)n, outl;
		if (EVP_EncryptUpdate(c->evp, op, &outl, ip, step) != 1 || outl != step)
			return AIS_ERR;
		ip += step;
		op += step;
		n -= (size_t)step;
		c->pos += (uint64_t)step;
	}
	return AIS_OK;
}

void sse_ctr_free(sse_ctr_t *c)
{
	if (c->evp)
		EVP_CIPHER_CTX_free(c->evp);
	OPENSSL_cleanse(c, sizeof(*c));
}

int sse_random(void *out, size_t n) { return RAND_bytes(out, (int)n) == 1 ? AIS_OK : AIS_ERR; }

int sse_wrap(const unsigned char kek[SSE_KEY], const unsigned char dk[SSE_KEY], unsigned char out[SSE_WRAPPED])
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	int outl, rc = AIS_ERR;
	if (!x || sse_random(out, 12) != AIS_OK)
		goto out;
	if (EVP_EncryptInit_ex(x, EVP_aes_256_gcm(), NULL, kek, out) != 1 ||
	    EVP_EncryptUpdate(x, out + 12, &outl, dk, SSE_KEY) != 1 || outl != SSE_KEY ||
	    EVP_EncryptFinal_ex(x, out + 12 + SSE_KEY, &outl) != 1 ||
	    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, 16, out + 12 + SSE_KEY) != 1)
		goto out;
	rc = AIS_OK;
out:
	EVP_CIPHER_CTX_free(x);
	return rc;
}

int sse_unwrap(const unsigned char kek[SSE_KEY], const unsigned char in[SSE_WRAPPED], unsigned char dk[SSE_KEY])
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	unsigned char tag[16], tmp[16];
	int outl, rc = AIS_ERR;
	memcpy(tag, in + 12 + SSE_KEY, 16);
	if (!x)
		goto out;
	if (EVP_DecryptInit_ex(x, EVP_aes_256_gcm(), NULL, kek, in) != 1 ||
	    EVP_DecryptUpdate(x, dk, &outl, in + 12, SSE_KEY) != 1 || outl != SSE_KEY ||
	    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, 16, tag) != 1 || EVP_DecryptFinal_ex(x, tmp, &outl) != 1) {
		OPENSSL_cleanse(dk, SSE_KEY);
		goto out;
	}
	rc = AIS_OK;
out:
	EVP_CIPHER_CTX_free(x);
	return rc;
}

long sse_b64_decode(const char *in, size_t n, unsigned char *out, size_t outsz)
{
	return s3_b64_decode((sv_t){in, n}, out, outsz);
}

static bool id_valid(const char *p, size_t n)
{
	if (!n || n > SSE_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)p[i]) && p[i] != '.' && p[i] != '_' && p[i] != '-')
			return false;
	return true;
}

int sse_keys_parse(const char *p, size_t n, sse_keys_t *out, buf_t *err)
{
	const char *end = p + n;
	unsigned line = 0;
	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
		const char *s = p, *t = e;
		p = nl ? nl + 1 : end;
		line++;
		while (s < t && isspace((unsigned char)*s))
			s++;
		while (t > s && isspace((unsigned char)t[-1]))
			t--;
		if (s == t || *s == '#')
			continue;
		const char *sp = s;
		while (sp < t && !isspace((unsigned char)*sp))
			sp++;
		const char *k = sp;
		while (k < t && isspace((unsigned char)*k))
			k++;
		if (!id_valid(s, (size_t)(sp - s)) || k == t) {
			buf_addf(err, "line %u: want \"ID BASE64KEY\" (ID: 1 to %d of A-Z a-z 0-9 . _ -)", line,
				   SSE_ID_MAX);
			goto fail;
		}
		if (out->n == SSE_KEYS_MAX) {
			buf_addf(err, "line %u: more than %d keys", line, SSE_KEYS_MAX);
			goto fail;
		}
		char id[SSE_ID_MAX + 1];
		snprintf(id, sizeof(id), "%.*s", (int)(sp - s), s);
		if (sse_keys_find(out, id)) {
			buf_addf(err, "line %u: key id \"%s\" given twice", line, id);
			goto fail;
		}
		unsigned char key[SSE_KEY + 3];
		if (sse_b64_decode(k, (size_t)(t - k), key, sizeof(key)) != SSE_KEY) {
			OPENSSL_cleanse(key, sizeof(key));
			buf_addf(err, "line %u: the key must be the base64 of 32 bytes", line);
			goto fail;
		}
		memcpy(out->k[out->n].id, id, sizeof(id));
		memcpy(out->k[out->n].key, key, SSE_KEY);
		OPENSSL_cleanse(key, sizeof(key));
		out->n++;
	}
	if (!out->n) {
		buf_addstr(err, "no key");
		return AIS_ERR;
	}
	return AIS_OK;
fail:
	sse_keys_wipe(out);
	return AIS_ERR;
}

const unsigned char *sse_keys_find(const sse_keys_t *ks, const char *id)
{
	for (size_t i = 0; i < ks->n; i++)
		if (!strcmp(ks->k[i].id, id))
			return ks->k[i].key;
	return NULL;
}

void sse_keys_wipe(sse_keys_t *ks) { OPENSSL_cleanse(ks, sizeof(*ks)); }

/* --- the part layout of an object completed from encrypted parts ----------------- */

int sse_parts_parse(const char *p, sse_parts_t *out)
{
	const char *end = p + strlen(p);
	uint64_t off = 0, next = 1, total = 0;
	size_t cap = 0;
	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *plus = memchr(p, '+', (size_t)(end - p)), *stop = plus ? plus : end;
		const char *colon = memchr(p, ':', (size_t)(stop - p));
		uint64_t first = next, size, n;
		if (colon && num_parse_u64(p, (size_t)(colon - p), next, SSE_PART_NUMS, &first) != AIS_OK)
			goto bad;
		const char *q = colon ? colon + 1 : p;
		const char *star = memchr(q, '*', (size_t)(stop - q));
		const char *at = star ? memchr(star, '@', (size_t)(stop - star)) : NULL, *cend = at ? at : stop;
		uint64_t gen = 0;
		if (!star || num_parse_u64(q, (size_t)(star - q), 0, SSE_PART_STRIDE, &size) != AIS_OK ||
		    num_parse_u64(star + 1, (size_t)(cend - star - 1), 1, SSE_PART_NUMS, &n) != AIS_OK ||
		    total + n > SSE_PART_NUMS || first + n - 1 > SSE_PART_NUMS ||
		    (at && num_parse_u64(at + 1, (size_t)(stop - at - 1), 0, SSE_PART_GEN_MAX, &gen) != AIS_OK))
			goto bad;
		if (out->n == cap) {
			cap = cap ? cap * 2 : 8;
			out->runs = xrealloc(out->runs, cap * sizeof(*out->runs));
		}
		out->runs[out->n++] = (struct sse_run){off, size, (uint32_t)first, (uint32_t)n, (uint32_t)gen};
		off += n * size;
		total += n;
		next = first + n;
		p = stop + 1;
		if (!plus)
			break;
		if (p >= end) /* a trailing '+' */
			goto bad;
	}
	if (!out->n)
		goto bad;
	return AIS_OK;
bad:
	sse_parts_free(out);
	return AIS_ERR;
}

uint64_t sse_parts_map(const sse_parts_t *ps, uint64_t off, uint64_t *seg)
{
	size_t lo = 0, hi = ps->n; /* the last run starting at or before off */
	*seg = 0;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (ps->runs[mid].start <= off)
			lo = mid;
		else
			hi = mid;
	}
	/* runs of empty parts take no bytes: go on to one that holds off */
	for (; lo < ps->n; lo++) {
		const struct sse_run *r = &ps->runs[lo];
		if (off < r->start)
			return 0;
		if (r->size && off < r->start + (uint64_t)r->count * r->size) {
			uint64_t i = (off - r->start) / r->size, in = (off - r->start) % r->size;
			*seg = r->size - in;
			return sse_part_stream(r->first + (uint32_t)i, r->gen) + in;
		}
	}
	return 0;
}

void sse_parts_free(sse_parts_t *ps)
{
	free(ps->runs);
	memset(ps, 0, sizeof(*ps));
}
