/*
 * cksum.c - checksum types and streaming hashers for object writes.
 *
 * A hasher is fed the object's bytes as they stream to disk and yields a
 * lower-case hex digest: xxhash is XXH64 with seed 0, printed as the 16 hex
 * digits of its big-endian canonical form (so it matches `xxhsum -H64`); md5
 * and sha256 come from OpenSSL's EVP and print as usual. "none" hashes nothing
 * and yields "". Hashers never fail (out of memory aborts).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "store_int.h"
#include "aisd/banned.h"

static const struct {
	const char *name;
	enum store_cksum type;
} cksum_names[] = {
	{"none", CKSUM_NONE}, {"xxhash", CKSUM_XXHASH}, {"xxhash64", CKSUM_XXHASH},
	{"md5", CKSUM_MD5},   {"sha256", CKSUM_SHA256},
};

int store_cksum_parse(const char *s, size_t len, enum store_cksum *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(cksum_names); i++) {
		if (strlen(cksum_names[i].name) == len && !strncasecmp(s, cksum_names[i].name, len)) {
			*out = cksum_names[i].type;
			return AIS_OK;
		}
	}
	return AIS_ERR;
}

const char *store_cksum_name(enum store_cksum t)
{
	switch (t) {
	case CKSUM_NONE: return "none";
	case CKSUM_XXHASH: return "xxhash";
	case CKSUM_MD5: return "md5";
	case CKSUM_SHA256: return "sha256";
	}
	return "unknown";
}

void store_hasher_init(store_hasher_t *h, enum store_cksum type)
{
	memset(h, 0, sizeof(*h));
	h->type = type;
	switch (type) {
	case CKSUM_NONE:
		break;
	case CKSUM_XXHASH:
		h->xx = XXH64_createState();
		if (!h->xx)
			fatalx("out of memory (xxhash state)");
		XXH64_reset(h->xx, 0);
		break;
	case CKSUM_MD5:
	case CKSUM_SHA256:
		h->md = EVP_MD_CTX_new();
		if (!h->md || !EVP_DigestInit_ex(h->md, type == CKSUM_MD5 ? EVP_md5() : EVP_sha256(), NULL))
			fatalx("cannot initialise %s digest", store_cksum_name(type));
		break;
	default:
		fatalx("store_hasher_init: bad checksum type %d", (int)type);
	}
}

void store_hasher_update(store_hasher_t *h, const void *p, size_t n)
{
	if (h->xx)
		XXH64_update(h->xx, p, n);
	else if (h->md && !EVP_DigestUpdate(h->md, p, n))
		fatalx("EVP_DigestUpdate failed");
}

void store_hasher_final(store_hasher_t *h, char hex[STORE_CKSUM_HEX_MAX])
{
	hex[0] = '\0';
	if (h->xx) {
		XXH64_canonical_t c;
		XXH64_canonicalFromHash(&c, XXH64_digest(h->xx));
		hex_encode(c.digest, sizeof(c.digest), hex);
	} else if (h->md) {
		unsigned char d[EVP_MAX_MD_SIZE];
		unsigned int dl = 0;
		if (!EVP_DigestFinal_ex(h->md, d, &dl))
			fatalx("EVP_DigestFinal_ex failed");
		hex_encode(d, dl, hex);
	}
	store_hasher_free(h);
}

void store_hasher_free(store_hasher_t *h)
{
	if (h->xx)
		XXH64_freeState(h->xx);
	if (h->md)
		EVP_MD_CTX_free(h->md);
	h->xx = NULL;
	h->md = NULL;
}

int store_verify_fd(int fd, const store_meta_t *m)
{
	char hex[STORE_CKSUM_HEX_MAX];
	store_hasher_t h;
	uint64_t off = 0;
	char *buf;

	if (m->cksum_type == CKSUM_NONE || !m->cksum[0])
		return AIS_OK;
	buf = xmalloc(1 << 20);
	store_hasher_init(&h, m->cksum_type);
	while (off < m->size) {
		ssize_t r = pread(fd, buf, (size_t)MIN(m->size - off, (uint64_t)(1 << 20)), (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			store_hasher_free(&h);
			free(buf);
			errno = r == 0 ? EBADMSG : EIO; /* shorter than its record: damaged */
			return AIS_ERR;
		}
		store_hasher_update(&h, buf, (size_t)r);
		off += (uint64_t)r;
	}
	free(buf);
	store_hasher_final(&h, hex);
	if (strcmp(hex, m->cksum) != 0) {
		errno = EBADMSG;
		return AIS_ERR;
	}
	return AIS_OK;
}
