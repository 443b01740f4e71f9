/*
 * bmd.c - bucket metadata: the buckets of the cluster and their properties,
 * versioned, with strict JSON and the rule for accepting a new version.
 *
 * Like the cluster map, a BMD is a plain value: the primary builds the next
 * version on a clone, every other node decodes it, asks bmd_accept and swaps
 * it in. No I/O here (persist.c does it).
 *
 * Invariants:
 *  1. version >= 1; a mutator that changes the BMD adds exactly 1, one that
 *     changes nothing leaves it, one that fails leaves the BMD untouched.
 *  2. Buckets are sorted by name (byte order), names are unique and valid
 *     (name_bucket_valid), provider is "ais".
 *  3. Properties are in range (bmd_props_check): a known checksum type,
 *     1 <= mirror copies <= BMD_COPIES_MAX, access within BMD_ACCESS_ALL,
 *     created_ns >= 0, region empty or bmd_region_valid, s3owner a
 *     valid user id or empty, ec slices in range and ec not with mirror, s3owner a
 *     valid user id or empty, s3acl valid text (s3acl.h) when set, s3tags
 *     printable ASCII without spaces (bmd_s3tags_valid), s3lock
 *     bmd_s3lock_valid and only with history enabled; a
 *     bucket's created_ns, region and s3owner never change after bmd_add.
 *  3a. A bucket's S3 documents (bmd_doc_kind_t: policy, CORS, lifecycle,
 *     logging, default encryption, object ownership) are beside
 *     its entry (doc[i].d[kind] for bck[i], NULL: none), each valid for
 *     its kind (docs[kind].valid) and at most docs[kind].max bytes, no
 *     NUL; they go with their bucket (bmd_remove) and change only by
 *     bmd_set_doc.
 *  4. Encoding is deterministic; decode(encode(b)) equals b, and decode
 *     returns a BMD that keeps 1-3 or a clean error, for any bytes.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/bmd.h"
#include "aisd/cmap.h"
#include "aisd/s3acl.h"
#include "aisd/s3lc.h"
#include "aisd/s3policy.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "cluster_int.h"
#include "aisd/banned.h"

/* One bucket's documents: malloc'd text per kind, NULL: none. */
typedef struct bmd_docs {
	char *d[BMD_DOC_KINDS];
} bmd_docs_t;

/* The kinds of documents (bmd.h): how each is named, limited and checked. */
static bool doc_policy_valid(const char *bucket, const char *text, size_t len, buf_t *err)
{
	return s3pol_valid(bucket, text, len, err);
}

static bool doc_cors_valid(const char *bucket, const char *text, size_t len, buf_t *err)
{
	(void)bucket;
	for (size_t i = 0; i < len; i++) /* its content: src/s3/cors.c (corsop.c rule 4) */
		if (text[i] < 0x20 || text[i] > 0x7e) {
			cmap_fail(err, EINVAL, "bmd: a CORS configuration is one line of printable ASCII");
			return false;
		}
	return true;
}

static bool doc_lifecycle_valid(const char *bucket, const char *text, size_t len, buf_t *err)
{
	(void)bucket;
	arena_t *a = arena_new(0);
	s3lc_t c;
	int rc = s3lc_parse_json(a, text, len, &c, err);
	arena_destroy(a);
	if (rc != AIS_OK)
		errno = EINVAL;
	return rc == AIS_OK;
}

static bool doc_logging_valid(const char *bucket, const char *text, size_t len, buf_t *err)
{
	(void)bucket;
	for (size_t i = 0; i < len; i++) /* its content: src/s3/logcfg.c */
		if (text[i] < 0x20 || text[i] > 0x7e) {
			cmap_fail(err, EINVAL, "bmd: a logging configuration is one line of printable ASCII");
			return false;
		}
	return true;
}

static bool doc_sse_valid(const char *bucket, const char *text, size_t len, buf_t *err)
{
	(void)bucket;
	for (size_t i = 0; i < len; i++) /* its content: src/s3/ssecfg.c (one that no longer parses: none) */
		if (text[i] < 0x20 || text[i] > 0x7e) {
			cmap_fail(err, EINVAL, "bmd: an encryption configuration is one line of printable ASCII");
			return false;
		}
	return true;
}

static bool doc_ownership_valid(const char *bucket, const char *text, size_t len, buf_t *err)
{
	(void)bucket;
	if (s3acl_own_parse(text, len) != S3ACL_OWN_NONE)
		return true;
	cmap_fail(err, EINVAL, "bmd: an object ownership is ObjectWriter, BucketOwnerPreferred or "
			       "BucketOwnerEnforced");
	return false;
}

static const struct doc_kind {
	const char *json; /* the bucket's key in the BMD's JSON */
	const char *key;  /* set-bprops "s3":{key:TEXT} */
	const char *what; /* for messages */
	size_t max;       /* bytes */
	bool (*valid)(const char *bucket, const char *text, size_t len, buf_t *err);
} docs[BMD_DOC_KINDS] = {
	[BMD_DOC_POLICY] = {"s3policy", "policy", "policy", S3POL_MAX, doc_policy_valid},
	[BMD_DOC_CORS] = {"s3cors", "cors", "CORS configuration", BMD_S3CORS_MAX, doc_cors_valid},
	[BMD_DOC_LIFECYCLE] = {"s3lifecycle", "lifecycle", "lifecycle configuration", BMD_S3LC_MAX,
			       doc_lifecycle_valid},
	[BMD_DOC_LOGGING] = {"s3logging", "logging", "logging configuration", BMD_S3LOGGING_MAX, doc_logging_valid},
	[BMD_DOC_SSE] = {"s3sse", "encryption", "encryption configuration", BMD_S3SSE_MAX, doc_sse_valid},
	[BMD_DOC_OWNERSHIP] = {"s3ownership", "ownership", "object ownership", BMD_S3OWN_MAX, doc_ownership_valid},
};

struct bmd {
	char uuid[CMAP_ID_MAX + 1];
	uint64_t version;
	bmd_bucket_t *bck; /* sorted by name */
	bmd_docs_t *doc;   /* doc[i]: bck[i]'s S3 documents (invariant 3a) */
	size_t n, cap;
};


const char *bmd_history_name(unsigned h)
{
	return h == BMD_HIST_ENABLED ? "enabled" : h == BMD_HIST_SUSPENDED ? "suspended" : "off";
}

static int history_parse(const char *s, uint8_t *out)
{
	for (unsigned h = BMD_HIST_OFF; h <= BMD_HIST_SUSPENDED; h++)
		if (!strcmp(s, bmd_history_name(h))) {
			*out = (uint8_t)h;
			return AIS_OK;
		}
	return AIS_ERR;
}

void bmd_props_default(bmd_props_t *p)
{
	memset(p, 0, sizeof(*p));
	p->cksum = CKSUM_XXHASH;
	p->mirror_enabled = false;
	p->mirror_copies = 2;
	p->versioning = true;
	p->access = BMD_ACCESS_ALL;
	p->ec_data = 2;
	p->ec_parity = 2;
	p->ec_objsize_limit = BMD_EC_LIMIT_DEFAULT;
}

int bmd_props_check(const bmd_props_t *p, buf_t *err)
{
	if ((unsigned)p->cksum > CKSUM_SHA256)
		return cmap_fail(err, EINVAL, "bmd: bad checksum type %d", (int)p->cksum);
	if (p->mirror_copies < 1 || p->mirror_copies > BMD_COPIES_MAX)
		return cmap_fail(err, EINVAL, "bmd: mirror copies %u out of range [1, %d]", p->mirror_copies,
			    BMD_COPIES_MAX);
	if (p->access & ~(uint32_t)BMD_ACCESS_ALL)
		return cmap_fail(err, EINVAL, "bmd: unknown access bits 0x%x", p->access & ~(uint32_t)BMD_ACCESS_ALL);
	if (p->created_ns < 0)
		return cmap_fail(err, EINVAL, "bmd: negative created time");
	if (p->region[0] && !bmd_region_valid(p->region, strlen(p->region)))
		return cmap_fail(err, EINVAL, "bmd: bad region");
	if (memchr(p->s3owner, ':', strlen(p->s3owner)))
		return cmap_fail(err, EINVAL, "bmd: bad S3 owner");
	if (p->s3acl_set && !s3acl_text_valid(p->s3acl, strlen(p->s3acl)))
		return cmap_fail(err, EINVAL, "bmd: bad S3 ACL");
	if (!p->s3acl_set && p->s3acl[0])
		return cmap_fail(err, EINVAL, "bmd: an S3 ACL that is not set");
	if (!bmd_s3tags_valid(p->s3tags, strlen(p->s3tags)))
		return cmap_fail(err, EINVAL, "bmd: bad S3 tags");
	if (!bmd_s3lock_valid(p->s3lock, strlen(p->s3lock)))
		return cmap_fail(err, EINVAL, "bmd: bad S3 object lock configuration");
	if (p->s3lock[0] && p->history != BMD_HIST_ENABLED)
		return cmap_fail(err, EINVAL, "bmd: S3 object lock needs versioning.history enabled");
	if (p->s3pab & ~(unsigned)BMD_PAB_ALL)
		return cmap_fail(err, EINVAL, "bmd: bad S3 public access block");
	if (bmd_ec_check(p, err) != AIS_OK)
		return AIS_ERR;
	return bmd_backend_check(&p->backend, err);
}

bool bmd_s3tags_valid(const char *s, size_t len)
{
	if (len > BMD_S3TAGS_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	return true;
}

bool bmd_s3lock_valid(const char *s, size_t len)
{
	static const char *const modes[] = {"GOVERNANCE", "COMPLIANCE"};
	if (!len)
		return true;
	if (len < 7 || len > BMD_S3LOCK_MAX || strncmp(s, "Enabled", 7))
		return false;
	if (len == 7)
		return true;
	const char *p = s + 7, *end = s + len;
	if (*p++ != ':')
		return false;
	size_t i;
	for (i = 0; i < ARRAY_SIZE(modes); i++) {
		size_t ml = strlen(modes[i]);
		if ((size_t)(end - p) > ml && !strncmp(p, modes[i], ml) && p[ml] == ':') {
			p += ml + 1;
			break;
		}
	}
	if (i == ARRAY_SIZE(modes) || end - p < 2 || (end[-1] != 'd' && end[-1] != 'y'))
		return false;
	uint64_t n;
	return num_parse_u64(p, (size_t)(end - 1 - p), 1, end[-1] == 'd' ? 36500 : 100, &n) == AIS_OK;
}

bool bmd_region_valid(const char *s, size_t len)
{
	if (!len || len > BMD_REGION_MAX || s[0] == '-' || s[len - 1] == '-')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
	}
	return true;
}

void bmd_props_encode(const bmd_props_t *p, buf_t *out)
{
	buf_addf(out,
		 "{\"provider\":\"" BMD_PROVIDER "\",\"checksum\":{\"type\":\"%s\"},\"mirror\":{\"enabled\":%s,"
		 "\"copies\":%u},\"versioning\":{\"enabled\":%s%s%s%s},\"access\":%u,\"created\":%lld",
		 store_cksum_name(p->cksum), p->mirror_enabled ? "true" : "false", p->mirror_copies,
		 p->versioning ? "true" : "false", p->history ? ",\"history\":\"" : "",
		 p->history ? bmd_history_name(p->history) : "", p->history ? "\"" : "", p->access, (long long)p->created_ns);
	bmd_ec_encode(p, true, out);
	if (p->region[0] || p->s3owner[0] || p->s3acl_set || p->s3tags[0] || p->s3lock[0] || p->s3pab) {
		const char *sep = "";
		buf_addstr(out, ",\"s3\":{");
		if (p->region[0]) /* [A-Za-z0-9-] only */
			buf_addf(out, "\"region\":\"%s\"", p->region), sep = ",";
		if (p->s3owner[0]) {
			buf_addf(out, "%s\"owner\":", sep), sep = ",";
			buf_add_json_str(out, p->s3owner, strlen(p->s3owner));
		}
		if (p->s3acl_set) {
			buf_addf(out, "%s\"acl\":", sep), sep = ",";
			buf_add_json_str(out, p->s3acl, strlen(p->s3acl));
		}
		if (p->s3tags[0]) {
			buf_addf(out, "%s\"tags\":", sep), sep = ",";
			buf_add_json_str(out, p->s3tags, strlen(p->s3tags));
		}
		if (p->s3lock[0]) /* letters, digits and ':' only */
			buf_addf(out, "%s\"lock\":\"%s\"", sep, p->s3lock);
		if (p->s3pab)
			buf_addf(out, "%s\"pab\":%u", sep, p->s3pab);
		buf_addch(out, '}');
	}
	bmd_backend_encode(&p->backend, out);
	buf_addch(out, '}');
}

/* One group of set-bprops ("mirror", "checksum", "versioning"): an object
 * whose keys are all among keys[0..n). */
static int patch_group(json_t *g, const char *name, const char *const *keys, size_t n, buf_t *err)
{
	const char *k;
	json_t *v;
	if (!json_is_object(g))
		return cmap_fail(err, EINVAL, "set-bprops: \"%s\" must be an object", name);
	json_object_foreach(g, k, v) {
		size_t i = 0;
		while (i < n && strcmp(k, keys[i]))
			i++;
		if (i == n)
			return cmap_fail(err, EINVAL, "set-bprops: unknown property \"%s.%s\"", name, k);
	}
	return AIS_OK;
}

static int patch_bool(json_t *g, const char *group, const char *key, bool *out, buf_t *err)
{
	json_t *v = json_object_get(g, key);
	if (!v)
		return AIS_OK;
	if (!json_is_boolean(v))
		return cmap_fail(err, EINVAL, "set-bprops: \"%s.%s\" must be true or false", group, key);
	*out = json_is_true(v);
	return AIS_OK;
}

int bmd_props_patch(bmd_props_t *p, const struct json_t *value, buf_t *err)
{
	static const char *const mkeys[] = {"enabled", "copies"};
	static const char *const ckeys[] = {"type"};
	static const char *const vkeys[] = {"enabled", "history"};
	static const char *const s3props[] = {"acl", "tags", "lock", "pab"};
	const char *skeys[ARRAY_SIZE(s3props) + BMD_DOC_KINDS]; /* and the documents' keys */
	size_t nskeys = 0;
	json_t *val = (json_t *)value, *g, *v;
	bmd_props_t n = *p;
	const char *k;

	if (!json_is_object(val))
		return cmap_fail(err, EINVAL, "set-bprops: value must be an object of properties");
	for (size_t i = 0; i < ARRAY_SIZE(s3props); i++)
		skeys[nskeys++] = s3props[i];
	for (unsigned d = 0; d < BMD_DOC_KINDS; d++)
		skeys[nskeys++] = docs[d].key;
	json_object_foreach(val, k, g) {
		if (!strcmp(k, "mirror")) {
			if (patch_group(g, k, mkeys, ARRAY_SIZE(mkeys), err) != AIS_OK ||
			    patch_bool(g, k, "enabled", &n.mirror_enabled, err) != AIS_OK)
				return AIS_ERR;
			if ((v = json_object_get(g, "copies"))) {
				if (!json_is_integer(v) || json_integer_value(v) < 1 ||
				    json_integer_value(v) > BMD_COPIES_MAX)
					return cmap_fail(err, EINVAL, "set-bprops: \"mirror.copies\" must be 1..%d",
						    BMD_COPIES_MAX);
				n.mirror_copies = (uint32_t)json_integer_value(v);
			}
		} else if (!strcmp(k, "checksum")) {
			if (patch_group(g, k, ckeys, ARRAY_SIZE(ckeys), err) != AIS_OK)
				return AIS_ERR;
			if ((v = json_object_get(g, "type")) &&
			    (!json_is_string(v) ||
			     store_cksum_parse(json_string_value(v), json_string_length(v), &n.cksum) != AIS_OK))
				return cmap_fail(err, EINVAL,
					    "set-bprops: \"checksum.type\" must be xxhash, md5, sha256 or none");
		} else if (!strcmp(k, "versioning")) {
			if (patch_group(g, k, vkeys, ARRAY_SIZE(vkeys), err) != AIS_OK ||
			    patch_bool(g, k, "enabled", &n.versioning, err) != AIS_OK)
				return AIS_ERR;
			if ((v = json_object_get(g, "history"))) {
				uint8_t h;
				if (!json_is_string(v) || history_parse(json_string_value(v), &h) != AIS_OK ||
				    (h == BMD_HIST_OFF && p->history != BMD_HIST_OFF))
					return cmap_fail(err, EINVAL, "set-bprops: \"versioning.history\" must be "
								 "enabled or suspended (off only while never enabled)");
				n.history = h;
				if (h != BMD_HIST_OFF && n.backend.provider[0])
					return cmap_fail(err, EINVAL, "set-bprops: \"versioning.history\": not for a "
								 "bucket with a remote backend");
			}
		} else if (!strcmp(k, "s3")) {
			if (patch_group(g, k, skeys, nskeys, err) != AIS_OK)
				return AIS_ERR;
			if ((v = json_object_get(g, "acl"))) {
				if (!json_is_string(v) || json_string_length(v) >= sizeof(n.s3acl) ||
				    !s3acl_text_valid(json_string_value(v), json_string_length(v)))
					return cmap_fail(err, EINVAL, "set-bprops: \"s3.acl\" must be an S3 ACL in "
								 "its text form (kind, permission, user id; ':' between)");
				memset(n.s3acl, 0, sizeof(n.s3acl));
				memcpy(n.s3acl, json_string_value(v), json_string_length(v));
				n.s3acl_set = true;
			}
			if ((v = json_object_get(g, "tags"))) {
				if (!json_is_string(v) || !bmd_s3tags_valid(json_string_value(v), json_string_length(v)))
					return cmap_fail(err, EINVAL, "set-bprops: \"s3.tags\" must be a URL-encoded query "
								 "string (\"k=v&k=v\") of at most %d bytes", BMD_S3TAGS_MAX);
				memset(n.s3tags, 0, sizeof(n.s3tags));
				memcpy(n.s3tags, json_string_value(v), json_string_length(v));
			}
			if ((v = json_object_get(g, "lock"))) {
				if (!json_is_string(v) || !json_string_length(v) ||
				    !bmd_s3lock_valid(json_string_value(v), json_string_length(v)))
					return cmap_fail(err, EINVAL, "set-bprops: \"s3.lock\" must be \"Enabled\" or "
								 "\"Enabled:GOVERNANCE|COMPLIANCE:N(d|y)\"");
				memset(n.s3lock, 0, sizeof(n.s3lock));
				memcpy(n.s3lock, json_string_value(v), json_string_length(v));
			}
			if ((v = json_object_get(g, "pab"))) {
				if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > BMD_PAB_ALL)
					return cmap_fail(err, EINVAL, "set-bprops: \"s3.pab\" must be a bit mask 0..%d",
						    BMD_PAB_ALL);
				n.s3pab = (uint8_t)json_integer_value(v);
			}
			/* the documents are not properties: bmd_set_doc (the caller) */
			for (unsigned d = 0; d < BMD_DOC_KINDS; d++)
				if ((v = json_object_get(g, docs[d].key)) && !json_is_string(v))
					return cmap_fail(err, EINVAL, "set-bprops: \"s3.%s\" must be a string (\"\": none)",
						    docs[d].key);
		} else if (!strcmp(k, "access")) {
			if (json_is_string(g) && !strcmp(json_string_value(g), "ro"))
				n.access = BMD_ACCESS_GET | BMD_ACCESS_HEAD | BMD_ACCESS_LIST;
			else if (json_is_string(g) && !strcmp(json_string_value(g), "rw"))
				n.access = BMD_ACCESS_ALL;
			else if (json_is_integer(g) && json_integer_value(g) >= 0 &&
				 json_integer_value(g) <= BMD_ACCESS_ALL)
				n.access = (uint32_t)json_integer_value(g);
			else
				return cmap_fail(err, EINVAL,
					    "set-bprops: \"access\" must be \"ro\", \"rw\" or a bit mask 0..%d",
					    BMD_ACCESS_ALL);
		} else if (!strcmp(k, "backend")) {
			if (bmd_backend_patch(g, &n.backend, err) != AIS_OK)
				return AIS_ERR;
		} else if (!strcmp(k, "ec")) {
			if (bmd_ec_patch(g, &n, err) != AIS_OK)
				return AIS_ERR;
		} else {
			return cmap_fail(err, EINVAL, "set-bprops: unknown property \"%s\"", k);
		}
	}
	if (p->s3lock[0] && n.history != BMD_HIST_ENABLED)
		return cmap_fail(err, EINVAL, "set-bprops: \"versioning.history\": a bucket with S3 object lock "
					 "stays enabled");
	if (n.s3lock[0] && n.history != BMD_HIST_ENABLED)
		return cmap_fail(err, EINVAL, "set-bprops: \"s3.lock\" needs versioning.history enabled");
	if (n.history != BMD_HIST_OFF && n.ec_enabled && n.ec_no_whole)
		return cmap_fail(err, EINVAL, "set-bprops: \"versioning.history\" needs the whole copy of an "
					 "erasure-coded object (ec.whole_copy=true)");
	if (bmd_props_check(&n, err) != AIS_OK)
		return AIS_ERR;
	*p = n;
	return AIS_OK;
}

/* Index of name, or -(insertion point) - 1. */
static ptrdiff_t find(const bmd_t *b, const char *name, size_t len)
{
	return cmap_sorted_find(b->bck, b->n, sizeof(*b->bck), offsetof(bmd_bucket_t, name), name, len);
}

/* Inserts a checked bucket; EEXIST on a duplicate. */
static int insert(bmd_t *b, const char *name, size_t len, const bmd_props_t *p, buf_t *err)
{
	ptrdiff_t at = find(b, name, len);
	if (at >= 0)
		return cmap_fail(err, EEXIST, "bmd: bucket %.*s exists", (int)len, name);
	if (b->n >= BMD_BUCKETS_MAX)
		return cmap_fail(err, EINVAL, "bmd: more than %d buckets", BMD_BUCKETS_MAX);
	size_t pos = (size_t)(-at - 1);
	if (b->n == b->cap || !b->doc) {
		b->cap = b->n == b->cap ? (b->cap ? b->cap * 2 : 8) : b->cap;
		b->bck = xrealloc(b->bck, b->cap * sizeof(*b->bck));
		b->doc = xrealloc(b->doc, b->cap * sizeof(*b->doc));
	}
	memmove(&b->bck[pos + 1], &b->bck[pos], (b->n - pos) * sizeof(*b->bck));
	memmove(&b->doc[pos + 1], &b->doc[pos], (b->n - pos) * sizeof(*b->doc));
	memset(&b->doc[pos], 0, sizeof(b->doc[pos]));
	memset(&b->bck[pos], 0, sizeof(b->bck[pos]));
	memcpy(b->bck[pos].name, name, len);
	b->bck[pos].props = *p;
	b->n++;
	return AIS_OK;
}

static bmd_t *alloc_bmd(const char *uuid, size_t len)
{
	bmd_t *b = xcalloc(1, sizeof(*b));
	memcpy(b->uuid, uuid, len);
	return b;
}

bmd_t *bmd_new(const char *uuid, buf_t *err)
{
	if (!uuid || !cmap_id_valid(uuid, strlen(uuid))) {
		cmap_fail(err, EINVAL, "bmd: bad cluster uuid (1..%d of [A-Za-z0-9._:-])", CMAP_ID_MAX);
		return NULL;
	}
	bmd_t *b = alloc_bmd(uuid, strlen(uuid));
	b->version = 1;
	return b;
}

void bmd_free(bmd_t *b)
{
	if (!b)
		return;
	for (size_t i = 0; b->doc && i < b->n; i++)
		for (unsigned k = 0; k < BMD_DOC_KINDS; k++)
			free(b->doc[i].d[k]);
	free(b->doc);
	free(b->bck);
	free(b);
}

bmd_t *bmd_clone(const bmd_t *b)
{
	bmd_t *c = xmalloc(sizeof(*c));
	*c = *b;
	c->cap = b->n ? b->n : 1;
	c->bck = xmalloc(c->cap * sizeof(*c->bck));
	if (b->n) /* an empty BMD has no array: memcpy(NULL) is undefined even for 0 bytes */
		memcpy(c->bck, b->bck, b->n * sizeof(*b->bck));
	c->doc = xcalloc(c->cap, sizeof(*c->doc));
	for (size_t i = 0; b->doc && i < b->n; i++)
		for (unsigned k = 0; k < BMD_DOC_KINDS; k++)
			c->doc[i].d[k] = b->doc[i].d[k] ? xstrdup(b->doc[i].d[k]) : NULL;
	return c;
}

static bool props_equal(const bmd_props_t *x, const bmd_props_t *y)
{
	return x->cksum == y->cksum && x->mirror_enabled == y->mirror_enabled &&
	       x->mirror_copies == y->mirror_copies && x->versioning == y->versioning &&
	       x->history == y->history && x->access == y->access &&
	       x->created_ns == y->created_ns && !strcmp(x->region, y->region) &&
	       !strcmp(x->s3owner, y->s3owner) && x->s3acl_set == y->s3acl_set && !strcmp(x->s3acl, y->s3acl) &&
	       !strcmp(x->s3tags, y->s3tags) && !strcmp(x->s3lock, y->s3lock) && x->s3pab == y->s3pab &&
	       !memcmp(&x->backend, &y->backend, sizeof(x->backend)) && !bmd_ec_differs(x, y) &&
	       x->ec_objsize_limit == y->ec_objsize_limit;
}

bool bmd_equal(const bmd_t *a, const bmd_t *b)
{
	if (strcmp(a->uuid, b->uuid) || a->version != b->version || a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		if (strcmp(a->bck[i].name, b->bck[i].name) || !props_equal(&a->bck[i].props, &b->bck[i].props))
			return false;
		for (unsigned k = 0; k < BMD_DOC_KINDS; k++)
			if (strcmp(a->doc[i].d[k] ? a->doc[i].d[k] : "", b->doc[i].d[k] ? b->doc[i].d[k] : ""))
				return false;
	}
	return true;
}

const char *bmd_doc_key(bmd_doc_kind_t kind) { return kind < BMD_DOC_KINDS ? docs[kind].key : ""; }
const char *bmd_doc_what(bmd_doc_kind_t kind) { return kind < BMD_DOC_KINDS ? docs[kind].what : ""; }

size_t bmd_doc_max(bmd_doc_kind_t kind) { return docs[kind].max; }

const char *bmd_doc(const bmd_t *b, bmd_doc_kind_t kind, const char *name, size_t len)
{
	ptrdiff_t i = name && kind < BMD_DOC_KINDS ? find(b, name, len) : -1;
	return i >= 0 ? b->doc[i].d[kind] : NULL;
}

int bmd_set_doc(bmd_t *b, bmd_doc_kind_t kind, const char *name, size_t len, const char *text, size_t tlen,
		buf_t *err)
{
	ptrdiff_t i = name ? find(b, name, len) : -1;
	char bname[NAME_BUCKET_MAX + 1];
	if (kind >= BMD_DOC_KINDS)
		return cmap_fail(err, EINVAL, "bmd: unknown document kind %u", (unsigned)kind);
	if (i < 0)
		return cmap_fail(err, ENOENT, "bmd: no bucket %.*s", name ? (int)len : 0, name ? name : "");
	const struct doc_kind *dk = &docs[kind];
	snprintf(bname, sizeof(bname), "%s", b->bck[i].name);
	if (text && memchr(text, '\0', tlen))
		return cmap_fail(err, EINVAL, "bmd: a NUL byte in a bucket's %s", dk->what);
	if (text && !dk->valid(bname, text, tlen, err)) {
		errno = EINVAL;
		return AIS_ERR;
	}
	if (text && tlen > dk->max)
		return cmap_fail(err, EINVAL, "bmd: a bucket's %s is at most %zu bytes (this one has %zu)", dk->what,
				 dk->max, tlen);
	char **slot = &b->doc[i].d[kind];
	if ((!text && !*slot) || (text && *slot && strlen(*slot) == tlen && !memcmp(*slot, text, tlen)))
		return AIS_OK;
	free(*slot);
	*slot = text ? xstrndup(text, tlen) : NULL;
	b->version++;
	return AIS_OK;
}

const char *bmd_uuid(const bmd_t *b) { return b->uuid; }
uint64_t bmd_version(const bmd_t *b) { return b->version; }
size_t bmd_size(const bmd_t *b) { return b->n; }
const bmd_bucket_t *bmd_bucket(const bmd_t *b, size_t i) { return i < b->n ? &b->bck[i] : NULL; }

const bmd_bucket_t *bmd_get(const bmd_t *b, const char *name, size_t len)
{
	if (!name)
		return NULL;
	ptrdiff_t i = find(b, name, len);
	return i >= 0 ? &b->bck[i] : NULL;
}

int bmd_add(bmd_t *b, const char *name, size_t len, const bmd_props_t *props, buf_t *err)
{
	bmd_props_t p;
	if (!name || !name_bucket_valid(name, len))
		return cmap_fail(err, EINVAL, "bmd: bad bucket name (1..%d of [A-Za-z0-9._-], not . or ..)",
			    NAME_BUCKET_MAX);
	if (props)
		p = *props;
	else
		bmd_props_default(&p);
	if (bmd_props_check(&p, err) != AIS_OK)
		return AIS_ERR;
	if (p.created_ns == 0)
		p.created_ns = time_now_ns();
	if (insert(b, name, len, &p, err) != AIS_OK)
		return AIS_ERR;
	b->version++;
	return AIS_OK;
}

int bmd_remove(bmd_t *b, const char *name, size_t len, buf_t *err)
{
	ptrdiff_t i = name ? find(b, name, len) : -1;
	if (i < 0)
		return cmap_fail(err, ENOENT, "bmd: no bucket %.*s", name ? (int)len : 0, name ? name : "");
	for (unsigned k = 0; k < BMD_DOC_KINDS; k++)
		free(b->doc[i].d[k]);
	memmove(&b->bck[i], &b->bck[i + 1], (b->n - (size_t)i - 1) * sizeof(*b->bck));
	memmove(&b->doc[i], &b->doc[i + 1], (b->n - (size_t)i - 1) * sizeof(*b->doc));
	b->n--;
	b->version++;
	return AIS_OK;
}

int bmd_set_props(bmd_t *b, const char *name, size_t len, const bmd_props_t *props, buf_t *err)
{
	ptrdiff_t i = name ? find(b, name, len) : -1;
	if (i < 0)
		return cmap_fail(err, ENOENT, "bmd: no bucket %.*s", name ? (int)len : 0, name ? name : "");
	bmd_props_t p = *props;
	p.created_ns = b->bck[i].props.created_ns;
	memcpy(p.region, b->bck[i].props.region, sizeof(p.region));
	memcpy(p.s3owner, b->bck[i].props.s3owner, sizeof(p.s3owner));
	if (bmd_props_check(&p, err) != AIS_OK)
		return AIS_ERR;
	if (props_equal(&p, &b->bck[i].props))
		return AIS_OK;
	b->bck[i].props = p;
	b->version++;
	return AIS_OK;
}

void bmd_encode(const bmd_t *b, buf_t *out)
{
	buf_addstr(out, "{\"uuid\":");
	buf_add_json_str(out, b->uuid, strlen(b->uuid));
	buf_addf(out, ",\"version\":%llu,\"buckets\":[", (unsigned long long)b->version);
	for (size_t i = 0; i < b->n; i++) {
		const bmd_bucket_t *k = &b->bck[i];
		buf_addstr(out, i ? ",{\"name\":" : "{\"name\":");
		buf_add_json_str(out, k->name, strlen(k->name));
		buf_addf(out,
			 ",\"provider\":\"" BMD_PROVIDER "\",\"checksum\":\"%s\",\"mirror\":{\"enabled\":%s,"
			 "\"copies\":%u},\"versioning\":%s,\"access\":%u,\"created\":%lld",
			 store_cksum_name(k->props.cksum), k->props.mirror_enabled ? "true" : "false",
			 k->props.mirror_copies, k->props.versioning ? "true" : "false", k->props.access,
			 (long long)k->props.created_ns);
		if (k->props.history) /* absent when off: older BMDs decode as they are */
			buf_addf(out, ",\"history\":\"%s\"", bmd_history_name(k->props.history));
		if (k->props.region[0]) /* absent when none: older BMDs decode as they are */
			buf_addf(out, ",\"region\":\"%s\"", k->props.region);
		if (k->props.s3owner[0]) {
			buf_addstr(out, ",\"s3owner\":");
			buf_add_json_str(out, k->props.s3owner, strlen(k->props.s3owner));
		}
		if (k->props.s3acl_set) {
			buf_addstr(out, ",\"s3acl\":");
			buf_add_json_str(out, k->props.s3acl, strlen(k->props.s3acl));
		}
		if (k->props.s3tags[0]) {
			buf_addstr(out, ",\"s3tags\":");
			buf_add_json_str(out, k->props.s3tags, strlen(k->props.s3tags));
		}
		if (k->props.s3lock[0]) /* absent when off: older BMDs decode as they are */
			buf_addf(out, ",\"s3lock\":\"%s\"", k->props.s3lock);
		if (k->props.s3pab)
			buf_addf(out, ",\"s3pab\":%u", k->props.s3pab);
		for (unsigned d = 0; d < BMD_DOC_KINDS; d++)
			if (b->doc[i].d[d]) {
				buf_addf(out, ",\"%s\":", docs[d].json);
				buf_add_json_str(out, b->doc[i].d[d], strlen(b->doc[i].d[d]));
			}
		bmd_backend_encode(&k->props.backend, out);
		bmd_ec_encode(&k->props, false, out);
		buf_addch(out, '}');
	}
	buf_addstr(out, "]}");
}

static int decode_bucket(json_t *o, size_t idx, bmd_t *b, buf_t *err)
{
	static const char *const all[] = {"name",    "provider", "checksum", "mirror", "versioning", "access",
					  "created", "region",   "s3owner",  "s3acl",  "backend", "ec",
					  "s3tags", "history", "s3lock", "s3pab"};
	const char *keys[ARRAY_SIZE(all) + BMD_DOC_KINDS];
	size_t nkeys = 0;
	static const char *const mkeys[] = {"enabled", "copies"};
	char what[64];
	const char *s, *name;
	size_t len, nlen;
	uint64_t v;
	bmd_props_t p;

	bmd_props_default(&p); /* what an older BMD lacks (ec) */
	snprintf(what, sizeof(what), "bmd: buckets[%zu]", idx);
	/* the last keys are there only when the bucket has them */
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		if (i < 7 || json_object_get(o, all[i]))
			keys[nkeys++] = all[i];
	for (unsigned d = 0; d < BMD_DOC_KINDS; d++)
		if (json_object_get(o, docs[d].json))
			keys[nkeys++] = docs[d].json;
	if (cmap_json_keys(o, keys, nkeys, what, err) != AIS_OK)
		return AIS_ERR;
	if (cmap_json_str(o, "name", what, &name, &nlen, err) != AIS_OK)
		return AIS_ERR;
	if (!name_bucket_valid(name, nlen))
		return cmap_fail(err, EINVAL, "%s: bad bucket name", what);
	if (cmap_json_str(o, "provider", what, &s, &len, err) != AIS_OK)
		return AIS_ERR;
	if (len != strlen(BMD_PROVIDER) || memcmp(s, BMD_PROVIDER, len))
		return cmap_fail(err, EINVAL, "%s: unknown provider (want \"" BMD_PROVIDER "\")", what);
	if (cmap_json_str(o, "checksum", what, &s, &len, err) != AIS_OK)
		return AIS_ERR;
	if (store_cksum_parse(s, len, &p.cksum) != AIS_OK)
		return cmap_fail(err, EINVAL, "%s: unknown checksum (want xxhash, md5, sha256 or none)", what);
	json_t *m = json_object_get(o, "mirror");
	snprintf(what, sizeof(what), "bmd: buckets[%zu].mirror", idx);
	if (cmap_json_keys(m, mkeys, ARRAY_SIZE(mkeys), what, err) != AIS_OK)
		return AIS_ERR;
	if (cmap_json_bool(m, "enabled", what, &p.mirror_enabled, err) != AIS_OK)
		return AIS_ERR;
	if (cmap_json_u64(m, "copies", what, 1, BMD_COPIES_MAX, &v, err) != AIS_OK)
		return AIS_ERR;
	p.mirror_copies = (uint32_t)v;
	snprintf(what, sizeof(what), "bmd: buckets[%zu]", idx);
	if (cmap_json_bool(o, "versioning", what, &p.versioning, err) != AIS_OK)
		return AIS_ERR;
	if (cmap_json_u64(o, "access", what, 0, BMD_ACCESS_ALL, &v, err) != AIS_OK)
		return AIS_ERR;
	p.access = (uint32_t)v;
	if (cmap_json_u64(o, "created", what, 0, INT64_MAX, &v, err) != AIS_OK)
		return AIS_ERR;
	p.created_ns = (int64_t)v;
	if (json_object_get(o, "region")) {
		if (cmap_json_str(o, "region", what, &s, &len, err) != AIS_OK)
			return AIS_ERR;
		if (!bmd_region_valid(s, len))
			return cmap_fail(err, EINVAL, "%s: bad region", what);
		memcpy(p.region, s, len);
	}
	if (json_object_get(o, "s3owner")) {
		if (cmap_json_str(o, "s3owner", what, &s, &len, err) != AIS_OK)
			return AIS_ERR;
		if (!len || len > S3ACL_UID_MAX || memchr(s, ':', len) || strlen(s) != len)
			return cmap_fail(err, EINVAL, "%s: bad s3owner", what);
		memcpy(p.s3owner, s, len);
	}
	if (json_object_get(o, "s3acl")) {
		if (cmap_json_str(o, "s3acl", what, &s, &len, err) != AIS_OK)
			return AIS_ERR;
		if (!s3acl_text_valid(s, len) || strlen(s) != len)
			return cmap_fail(err, EINVAL, "%s: bad s3acl", what);
		memcpy(p.s3acl, s, len);
		p.s3acl_set = true;
	}
	if (json_object_get(o, "s3tags")) {
		if (cmap_json_str(o, "s3tags", what, &s, &len, err) != AIS_OK)
			return AIS_ERR;
		if (!len || !bmd_s3tags_valid(s, len) || strlen(s) != len)
			return cmap_fail(err, EINVAL, "%s: bad s3tags", what);
		memcpy(p.s3tags, s, len);
	}
	if (json_object_get(o, "history")) {
		if (cmap_json_str(o, "history", what, &s, &len, err) != AIS_OK)
			return AIS_ERR;
		char hs[16];
		snprintf(hs, sizeof(hs), "%.*s", (int)MIN(len, sizeof(hs) - 1), s);
		if (history_parse(hs, &p.history) != AIS_OK)
			return cmap_fail(err, EINVAL, "%s: bad history", what);
	}
	if (json_object_get(o, "s3lock")) {
		if (cmap_json_str(o, "s3lock", what, &s, &len, err) != AIS_OK)
			return AIS_ERR;
		if (!len || !bmd_s3lock_valid(s, len) || strlen(s) != len)
			return cmap_fail(err, EINVAL, "%s: bad s3lock", what);
		memcpy(p.s3lock, s, len);
	}
	if (json_object_get(o, "s3pab")) {
		if (cmap_json_u64(o, "s3pab", what, 1, BMD_PAB_ALL, &v, err) != AIS_OK)
			return AIS_ERR;
		p.s3pab = (uint8_t)v;
	}
	const char *doc[BMD_DOC_KINDS] = {NULL};
	size_t doclen[BMD_DOC_KINDS] = {0};
	for (unsigned d = 0; d < BMD_DOC_KINDS; d++)
		if (json_object_get(o, docs[d].json) &&
		    cmap_json_str(o, docs[d].json, what, &doc[d], &doclen[d], err) != AIS_OK)
			return AIS_ERR;
	json_t *bk = json_object_get(o, "backend");
	if (bk && bmd_backend_decode(bk, what, &p.backend, err) != AIS_OK)
		return AIS_ERR;
	json_t *ec = json_object_get(o, "ec");
	if (ec && bmd_ec_decode(ec, what, &p, err) != AIS_OK)
		return AIS_ERR;
	if (bmd_ec_check(&p, err) != AIS_OK)
		return AIS_ERR;
	if (insert(b, name, nlen, &p, err) != AIS_OK) {
		errno = EINVAL;
		return AIS_ERR;
	}
	for (unsigned d = 0; d < BMD_DOC_KINDS; d++)
		if (doc[d] && bmd_set_doc(b, d, name, nlen, doc[d], doclen[d], err) != AIS_OK) {
			buf_addf(err, " (%s)", what);
			return AIS_ERR;
		}
	return AIS_OK;
}

int bmd_decode(const char *json, size_t len, bmd_t **out, buf_t *err)
{
	static const char *const keys[] = {"uuid", "version", "buckets"};
	const char *s;
	size_t slen;
	uint64_t version;
	bmd_t *b = NULL;
	int rc = AIS_ERR;

	*out = NULL;
	json_t *root = cmap_json_parse(json, len, "bmd", err);
	if (!root)
		return AIS_ERR;
	if (cmap_json_keys(root, keys, ARRAY_SIZE(keys), "bmd", err) != AIS_OK)
		goto out_root;
	if (cmap_json_str(root, "uuid", "bmd", &s, &slen, err) != AIS_OK)
		goto out_root;
	if (!cmap_id_valid(s, slen)) {
		cmap_fail(err, EINVAL, "bmd: bad uuid (1..%d of [A-Za-z0-9._:-])", CMAP_ID_MAX);
		goto out_root;
	}
	if (cmap_json_u64(root, "version", "bmd", 1, INT64_MAX, &version, err) != AIS_OK)
		goto out_root;
	json_t *bcks = json_object_get(root, "buckets");
	if (!json_is_array(bcks)) {
		cmap_fail(err, EINVAL, "bmd: \"buckets\" is not an array");
		goto out_root;
	}
	if (json_array_size(bcks) > BMD_BUCKETS_MAX) {
		cmap_fail(err, EINVAL, "bmd: more than %d buckets", BMD_BUCKETS_MAX);
		goto out_root;
	}
	b = alloc_bmd(s, slen);
	b->version = version;
	for (size_t i = 0; i < json_array_size(bcks); i++)
		if (decode_bucket(json_array_get(bcks, i), i, b, err) != AIS_OK)
			goto out_bmd;
	b->version = version; /* (bmd_set_doc counted each document as a change) */
	*out = b;
	b = NULL;
	rc = AIS_OK;
out_bmd:
	bmd_free(b);
out_root:
	json_decref(root);
	return rc;
}

int bmd_accept(const bmd_t *cur, const bmd_t *incoming, buf_t *err)
{
	if (!cur)
		return AIS_OK;
	if (strcmp(cur->uuid, incoming->uuid))
		return cmap_fail(err, EXDEV, "bmd: from another cluster (uuid %s, ours %s)", incoming->uuid, cur->uuid);
	if (incoming->version < cur->version)
		return cmap_fail(err, ESTALE, "bmd: version %llu is older than ours (%llu)",
			    (unsigned long long)incoming->version, (unsigned long long)cur->version);
	if (incoming->version > cur->version)
		return AIS_OK;
	if (bmd_equal(cur, incoming))
		return AIS_DONE;
	return cmap_fail(err, EEXIST, "bmd: version %llu differs from ours with the same version",
		    (unsigned long long)incoming->version);
}
