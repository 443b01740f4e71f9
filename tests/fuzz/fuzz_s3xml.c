/*
 * fuzz_s3xml.c - libFuzzer driver for the S3 request-body parsers
 * (s3_parse_delete, s3_parse_complete, s3_parse_create_bucket,
 * s3_parse_acl, s3_parse_versioning over expat), the ACL text form
 * (s3acl_decode/encode), tag sets (s3_tags_from_xml, s3_tags_from_query,
 * s3_tags_check), part sizes (s3_part_range) and object lock's
 * configuration and dates (s3_parse_lock_conf, s3_time_parse_iso).
 *
 * The first byte picks the parser (0xfc: object lock; 0xfd..0xff: tags
 * from XML, tags from a query, part sizes; else by its value mod 5), the
 * rest is the body. Checks the
 * contracts: counts within bounds, keys inside the arena and of the length
 * said, part ETags empty or 32 lower-case hex digits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/arena.h"
#include "aisd/bmd.h"
#include "aisd/status.h"
#include "../../src/s3/s3api.h"
#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	arena_t *a = arena_new(4096);
	const char *p = (const char *)data + 1;
	size_t n = size - 1;
	if (data[0] == 0xfc) { /* a configuration that passed is one the BMD takes */
		char out[BMD_S3LOCK_MAX + 1];
		int64_t t;
		if (!s3_parse_lock_conf(p, n, out, sizeof(out)) && !bmd_s3lock_valid(out, strlen(out)))
			abort();
		(void)s3_time_parse_iso(p, n, &t);
		arena_destroy(a);
		return 0;
	}
	if (data[0] >= 0xfd) {
		s3_tags_t *t = arena_alloc(a, sizeof(*t));
		char *z = arena_strndup(a, p, n); /* (stops at a NUL, as a header would) */
		uint64_t start, len;
		uint32_t count;
		if (data[0] == 0xff) {
			if (s3_part_range(z, 1 + (uint32_t)(n % 10000), &start, &len, &count) == AIS_OK &&
			    (count < 1 || count > S3_MAX_PARTS))
				abort();
		} else if ((data[0] == 0xfd ? s3_tags_from_xml(a, p, n, t) : s3_tags_from_query(a, sv_from(z), t)) == AIS_OK &&
			   !s3_tags_check(t, S3_BUCKET_TAGS_MAX)) {
			/* a set that passed is sorted, unique, within the limits */
			for (size_t i = 0; i < t->n; i++)
				if (!t->t[i].key[0] || strlen(t->t[i].key) > 4 * S3_TAG_KEY_MAX ||
				    (i && strcmp(t->t[i - 1].key, t->t[i].key) >= 0))
					abort();
		}
		arena_destroy(a);
		return 0;
	}
	switch (data[0] % 6) {
	case 0: {
		s3_delete_req_t d;
		if (s3_parse_delete(a, p, n, &d) == AIS_OK) {
			size_t k = d.n < S3_MAX_KEYS + 1 ? d.n : S3_MAX_KEYS + 1;
			for (size_t i = 0; i < k; i++)
				if (strlen(d.objs[i].key) > d.objs[i].len)
					abort();
		}
		break;
	}
	case 1: {
		s3_complete_req_t c;
		if (s3_parse_complete(a, p, n, &c) == AIS_OK) {
			if (c.n > S3_MAX_PARTS)
				abort();
			for (size_t i = 0; i < c.n; i++) {
				size_t l = strlen(c.parts[i].etag);
				if (l != 0 && l != 32)
					abort();
				for (size_t j = 0; j < l; j++)
					if (!strchr("0123456789abcdef", c.parts[i].etag[j]))
						abort();
			}
		}
		break;
	}
	case 2: {
		/* every parsed ACL encodes to text that decodes to the same */
		s3_acl_req_t *q = arena_alloc(a, sizeof(*q));
		s3acl_t *back = arena_alloc(a, sizeof(*back));
		buf_t t = BUF_INIT;
		if (s3_parse_acl(p, n, q) == AIS_OK && s3acl_encode(&q->acl, &t) == AIS_OK &&
		    (s3acl_decode(t.ptr ? t.ptr : "", t.len, back) != AIS_OK || back->n != q->acl.n))
			abort();
		buf_free(&t);
		break;
	}
	case 3: {
		s3acl_t *acl = arena_alloc(a, sizeof(*acl));
		if (s3acl_decode(p, n, acl) == AIS_OK)
			for (size_t i = 0; i < acl->n; i++)
				if (!acl->g[i].perm || (acl->g[i].kind == S3ACL_USER && !acl->g[i].id[0]))
					abort();
		break;
	}
	case 4: {
		s3_versioning_req_t v;
		if (s3_parse_versioning(p, n, &v) == AIS_OK && v.status > 2)
			abort();
		break;
	}
	default: {
		sv_t loc;
		const char *other;
		if (s3_parse_create_bucket(a, p, n, &loc, &other) == AIS_OK &&
		    (strlen(loc.ptr) > loc.len || (other && strchr(other, '/'))))
			abort();
		break;
	}
	}
	arena_destroy(a);
	return 0;
}
