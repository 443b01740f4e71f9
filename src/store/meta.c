/*
 * meta.c - LevelDB keys, the binary object record, names of object files.
 *
 * Keys are built so that LevelDB's byte order is the listing order:
 * "o" + bucket + "\0" + object sorts every object of a bucket together, in
 * name order, and a prefix scan over "o" + bucket + "\0" + prefix lists the
 * names with that prefix. An object record is versioned (format byte first)
 * and compact (LEB128 varints); decoding checks every length, so a corrupt
 * record is an EIO error, never an overread. File names derive only from a
 * 128-bit hash of the uname, never from the user's name.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/hrw.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "store_int.h"
#include "aisd/banned.h"

void store_key_obj(buf_t *k, const char *bck, size_t blen, const char *obj, size_t olen)
{
	buf_reset(k);
	buf_addch(k, 'o');
	buf_add(k, bck, blen);
	buf_addch(k, '\0');
	buf_add(k, obj, olen);
}

void store_key_hash(buf_t *k, const char *hhex)
{
	buf_reset(k);
	buf_addch(k, 'h');
	buf_add(k, hhex, STORE_HASH_HEX);
}

void store_key_bucket(buf_t *k, const char *bck, size_t blen)
{
	buf_reset(k);
	buf_addch(k, 'b');
	buf_add(k, bck, blen);
}

void store_key_tar(buf_t *k, const char *bck, size_t blen, const char *obj, size_t olen,
		   uint64_t gen)
{
	store_key_obj(k, bck, blen, obj, olen);
	k->ptr[0] = 'a';
	buf_addch(k, '\0');
	for (int i = 56; i >= 0; i -= 8)
		buf_addch(k, (char)(gen >> i));
}

static void put_varint(buf_t *b, uint64_t v)
{
	while (v >= 0x80) {
		buf_addch(b, (char)(v | 0x80));
		v >>= 7;
	}
	buf_addch(b, (char)v);
}

static int get_varint(const unsigned char **p, const unsigned char *end, uint64_t *out)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		unsigned char c = *(*p)++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return AIS_OK;
		}
	}
	return AIS_ERR;
}

void store_varint_put(buf_t *b, uint64_t v)
{
	put_varint(b, v);
}

int store_varint_get(const unsigned char **p, const unsigned char *end, uint64_t *out)
{
	return get_varint(p, end, out);
}

/* Record, format 1:
 *   u8 format | varint size | varint gen | varint version | varint mtime_ns |
 *   varint atime_ns | u8 cksum type | varint n, n bytes cksum hex |
 *   varint n, n bytes custom [| varint md_ns [| varint stamp]]
 * The optional fields were appended later: a record without them decodes
 * them as 0 (store_md_time and store_stamp then read mtime_ns), and a
 * reader of before them ignores them. Later formats append fields; a
 * reader rejects formats it does not know. */
void store_rec_encode(buf_t *out, const store_rec_t *r)
{
	size_t cl = strlen(r->m.cksum), ul = strlen(r->m.custom);
	buf_reset(out);
	buf_addch(out, STORE_REC_FORMAT);
	put_varint(out, r->m.size);
	put_varint(out, r->gen);
	put_varint(out, r->m.version);
	put_varint(out, (uint64_t)r->m.mtime_ns);
	put_varint(out, (uint64_t)r->m.atime_ns);
	buf_addch(out, (char)r->m.cksum_type);
	put_varint(out, cl);
	buf_add(out, r->m.cksum, cl);
	put_varint(out, ul);
	buf_add(out, r->m.custom, ul);
	if (r->m.md_ns > 0 || r->m.stamp > 0) /* optional: a record without it decodes as 0 */
		put_varint(out, (uint64_t)MAX(r->m.md_ns, 0));
	if (r->m.stamp > 0)
		put_varint(out, (uint64_t)r->m.stamp);
}

int64_t store_md_time(const store_meta_t *m) { return m->md_ns > 0 ? m->md_ns : m->mtime_ns; }

int64_t store_stamp(const store_meta_t *m) { return m->stamp > 0 ? m->stamp : m->mtime_ns; }

int store_rec_decode(const char *p, size_t n, store_rec_t *r)
{
	const unsigned char *q = (const unsigned char *)p, *end = q + n;
	uint64_t mt, at, cl, ul;
	memset(r, 0, sizeof(*r));
	if (n < 1 || *q++ != STORE_REC_FORMAT)
		goto bad;
	if (get_varint(&q, end, &r->m.size) || get_varint(&q, end, &r->gen) ||
	    get_varint(&q, end, &r->m.version) || get_varint(&q, end, &mt) ||
	    get_varint(&q, end, &at) || q >= end)
		goto bad;
	r->m.mtime_ns = (int64_t)mt;
	r->m.atime_ns = (int64_t)at;
	if (*q > CKSUM_SHA256)
		goto bad;
	r->m.cksum_type = (enum store_cksum)*q++;
	if (get_varint(&q, end, &cl) || cl >= sizeof(r->m.cksum) || cl > (uint64_t)(end - q))
		goto bad;
	memcpy(r->m.cksum, q, cl);
	q += cl;
	if (get_varint(&q, end, &ul) || ul >= sizeof(r->m.custom) || ul > (uint64_t)(end - q))
		goto bad;
	memcpy(r->m.custom, q, ul);
	q += ul;
	uint64_t md = 0, st = 0;
	if (q < end && (get_varint(&q, end, &md) || md > INT64_MAX))
		goto bad;
	if (q < end && (get_varint(&q, end, &st) || st > INT64_MAX))
		goto bad;
	r->m.md_ns = (int64_t)md;
	r->m.stamp = (int64_t)st;
	return AIS_OK;
bad:
	errno = EIO;
	return AIS_ERR;
}

char *store_db_get(store_t *s, store_mp_t *mp, const char *key, size_t klen, const char *what, size_t *vlen)
{
	char *err = NULL;
	*vlen = 0;
	char *v = leveldb_get(mp->db, s->ro, key, klen, vlen, &err);
	if (err) {
		log_warnx("%s: leveldb get%s%s%s: %s", mp->path, what ? " (" : "", what ? what : "", what ? ")" : "",
			  err);
		leveldb_free(err);
		errno = EIO;
		return NULL;
	}
	if (!v)
		errno = ENOENT;
	return v;
}

int store_rec_get(store_t *s, store_mp_t *mp, const buf_t *okey, store_rec_t *r)
{
	size_t vlen;
	char *v = store_db_get(s, mp, okey->ptr, okey->len, NULL, &vlen);
	if (!v)
		return AIS_ERR;
	int rc = store_rec_decode(v, vlen, r);
	leveldb_free(v);
	if (rc != AIS_OK)
		log_warnx("%s: corrupt object record (%zu bytes)", mp->path, vlen);
	return rc;
}

int store_db_errno(const char *err)
{
	return strstr(err, "No space left") ? ENOSPC : EIO; /* a full disk is a 507, not a 500 */
}

int store_db_write(store_t *s, store_mp_t *mp, leveldb_writeoptions_t *wo, leveldb_writebatch_t *b,
		   const char *what)
{
	char *err = NULL;
	leveldb_write(mp->db, wo, b, &err);
	store_hot_drop_batch(s, b); /* after the write, written or not (hot.c rule 1) */
	if (err) {
		log_warnx("%s: leveldb write (%s): %s", mp->path, what, err);
		errno = store_db_errno(err);
		leveldb_free(err);
		return AIS_ERR;
	}
	return AIS_OK;
}

void store_uname_hash(const char *uname, size_t n, char hex[STORE_HASH_HEX + 1])
{
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(uname, n));
	hex_encode(c.digest, sizeof(c.digest), hex);
}

store_mp_t *store_mp_of(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen)
{
	int n = store_nmp(s);
	if (n == 1)
		return &s->mp[0];
	/* hash of bck + "/" + obj without building the string */
	XXH64_state_t st;
	XXH64_reset(&st, HRW_SEED);
	XXH64_update(&st, bck, blen);
	XXH64_update(&st, "/", 1);
	XXH64_update(&st, obj, olen);
	uint64_t h = XXH64_digest(&st), best_w = 0;
	int best = -1;
	for (int i = 0; i < n; i++) {
		if (atomic_load_explicit(&s->mp[i].state, memory_order_acquire) != MP_ACTIVE)
			continue;
		uint64_t w = hrw_weight(h, s->digests[i]);
		if (best < 0 || w > best_w) {
			best = i;
			best_w = w;
		}
	}
	return &s->mp[best < 0 ? atomic_load(&s->bmp) : best]; /* >= 1 slot is always active */
}

void store_path_obj(char *out, size_t sz, const store_mp_t *mp, const char *hhex, uint64_t gen)
{
	snprintf(out, sz, "%s/obj/%.2s/%s.%016" PRIx64, mp->path, hhex, hhex, gen);
}

void store_path_tmp(char *out, size_t sz, const store_mp_t *mp, const char *hhex, uint64_t gen)
{
	snprintf(out, sz, "%s/tmp/%s.%016" PRIx64, mp->path, hhex, gen);
}
