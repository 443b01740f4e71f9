/*
 * meta.c - S3 metadata kept in an object's custom metadata (store.h): the
 * ETag (MD5 hex, or "hex-N" after a multipart upload), Content-Type,
 * Content-Encoding, Content-Disposition, Content-Language, Cache-Control,
 * Expires and x-amz-meta-*, and the object's S3 owner and ACL
 * ("s3.own", "s3.acl": access.c), the multipart upload that made it
 * ("s3.mpu": a repeated Complete answers its ETag again) and its part
 * sizes ("s3.ps": GET ?partNumber), the object's tags ("s3.t.KEY",
 * tagging.c), and the x-amz-checksum-* the write was verified with
 * ("s3.ck", answered by GET and HEAD with x-amz-checksum-mode: ENABLED and
 * GetObjectAttributes). Encoded as "s3.KEY=VALUE" items joined by ','
 * with '%', ',', '=' and bytes outside printable ASCII percent-encoded, so
 * any header value survives and the native API sees ordinary custom
 * metadata. The version's S3 object lock is kept in the object layer's
 * own items (olver.h OLVER_LOCK_*: it enforces them). Other keys than
 * these ("ver.id", ...) are left alone: kept as they are through a change
 * of the S3 metadata (m->other), and not shown by S3.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

static const struct {
	const char *hdr, *key;
	size_t off;
} std_hdrs[] = {
	{"Content-Type", "s3.ct", offsetof(s3_meta_t, ctype)},
	{"Content-Encoding", "s3.ce", offsetof(s3_meta_t, cenc)},
	{"Content-Disposition", "s3.cd", offsetof(s3_meta_t, cdisp)},
	{"Content-Language", "s3.cl", offsetof(s3_meta_t, clang)},
	{"Cache-Control", "s3.cc", offsetof(s3_meta_t, cctl)},
	{"Expires", "s3.ex", offsetof(s3_meta_t, expires)},
};

#define FIELD(m, off) (*(char **)((char *)(m) + (off)))

/* Content-Encoding without the aws-chunked token (S3 drops it): a value
 * without one is kept as it is ("deflate, gzip"), else the other tokens
 * are joined by ", ". NULL when nothing is left. */
static char *strip_aws_chunked(arena_t *a, sv_t v)
{
	buf_t b = BUF_INIT;
	const char *p = v.ptr, *end = v.ptr + v.len;
	bool dropped = false;
	while (p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		sv_t it = sv_trim((sv_t){p, (size_t)((c ? c : end) - p)});
		if (sv_eqcase(it, SV("aws-chunked"))) {
			dropped = true;
		} else if (it.len) {
			if (b.len)
				buf_addstr(&b, ", ");
			buf_addsv(&b, it);
		}
		p = (c ? c : end) + 1;
	}
	char *s = !b.len ? NULL : dropped ? arena_strndup(a, b.ptr, b.len) : arena_svdup(a, v);
	buf_free(&b);
	return s;
}

int s3_meta_from_req(s3_rq_t *r, s3_meta_t *m)
{
	http_req_t *req = r->http;
	size_t total = 0;
	for (size_t i = 0; i < ARRAY_SIZE(std_hdrs); i++) {
		sv_t v = http_req_header(req, std_hdrs[i].hdr);
		if (!v.ptr)
			continue;
		char *s = i == 1 ? strip_aws_chunked(req->arena, v) : arena_svdup(req->arena, v);
		FIELD(m, std_hdrs[i].off) = s;
	}
	for (size_t i = 0; i < req->nhdrs; i++) {
		sv_t n = req->hdrs[i].name;
		if (n.len <= 11 || strncasecmp(n.ptr, "x-amz-meta-", 11))
			continue;
		if (m->nuser == ARRAY_SIZE(m->user)) {
			s3_error(r, "MetadataTooLarge", "at most %zu x-amz-meta-* headers", ARRAY_SIZE(m->user));
			return AIS_ERR;
		}
		char *name = arena_strndup(req->arena, n.ptr + 11, n.len - 11);
		for (char *q = name; *q; q++)
			if (*q >= 'A' && *q <= 'Z')
				*q = (char)(*q | 0x20);
		m->user[m->nuser].name = name;
		m->user[m->nuser].value = arena_svdup(req->arena, sv_trim(req->hdrs[i].value));
		total += n.len - 11 + req->hdrs[i].value.len; /* S3 counts name (no prefix) + value */
		m->nuser++;
	}
	if (total > S3_META_MAX) {
		s3_error(r, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size "
						"(%zu bytes; at most %d)", total, S3_META_MAX);
		return AIS_ERR;
	}
	if (s3_lock_from_req(r, m) != AIS_OK)
		return AIS_ERR;
	return s3_meta_acl_from_req(r, m);
}

static void pct(buf_t *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '%' || c == ',' || c == '=' || c < 0x20 || c >= 0x7f)
			buf_addf(b, "%%%02X", c);
		else
			buf_addch(b, (char)c);
	}
}

static void item(buf_t *b, const char *k1, const char *k2, const char *v)
{
	if (b->len)
		buf_addch(b, ',');
	buf_addstr(b, k1);
	if (k2)
		pct(b, k2);
	buf_addch(b, '=');
	pct(b, v);
}

int s3_meta_encode(const s3_meta_t *m, buf_t *out)
{
	if (m->etag[0])
		item(out, "s3.etag", NULL, m->etag);
	for (size_t i = 0; i < ARRAY_SIZE(std_hdrs); i++) {
		const char *v = FIELD(m, std_hdrs[i].off);
		if (v)
			item(out, std_hdrs[i].key, NULL, v);
	}
	for (size_t i = 0; i < m->nuser; i++)
		item(out, "s3.m.", m->user[i].name, m->user[i].value);
	if (m->mpu)
		item(out, "s3.mpu", NULL, m->mpu);
	if (m->ck)
		item(out, "s3.ck", NULL, m->ck);
	if (m->parts)
		item(out, "s3.ps", NULL, m->parts);
	if (m->pcks)
		item(out, "s3.pck", NULL, m->pcks);
	if (m->sse)
		item(out, "s3.sse", NULL, m->sse);
	for (size_t i = 0; i < m->tags.n && i < ARRAY_SIZE(m->tags.t); i++)
		item(out, "s3.t.", m->tags.t[i].key, m->tags.t[i].value);
	if (m->owner) {
		item(out, "s3.own", NULL, m->owner);
		item(out, "s3.acl", NULL, m->acl ? m->acl : "");
	}
	if (m->lock_mode && m->lock_until) {
		item(out, OLVER_LOCK_MODE_KEY, NULL, m->lock_mode);
		item(out, OLVER_LOCK_UNTIL_KEY, NULL, m->lock_until);
	}
	if (m->lock_hold)
		item(out, OLVER_LOCK_HOLD_KEY, NULL, m->lock_hold);
	if (m->other && *m->other) { /* as they were */
		if (out->len)
			buf_addch(out, ',');
		buf_addstr(out, m->other);
	}
	return out->len < sizeof(((store_meta_t *)0)->custom) ? AIS_OK : AIS_ERR;
}

static char *unpct(arena_t *a, const char *p, size_t n)
{
	char *s = arena_alloc(a, n + 1);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char byte;
		if (p[i] == '%' && i + 2 < n && hex_decode(p + i + 1, 2, &byte, 1) == AIS_OK) {
			s[k++] = (char)byte;
			i += 2;
		} else {
			s[k++] = p[i];
		}
	}
	s[k] = '\0';
	return s;
}

void s3_meta_decode(arena_t *a, const char *custom, s3_meta_t *m)
{
	const char *p = custom, *end = custom + strlen(custom);
	memset(m, 0, sizeof(*m));
	while (p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *stop = c ? c : end;
		const char *eq = memchr(p, '=', (size_t)(stop - p));
		if (eq) {
			sv_t k = {p, (size_t)(eq - p)};
			const char *v = eq + 1;
			size_t vl = (size_t)(stop - v);
			if (sv_eqstr(k, "s3.etag")) {
				snprintf(m->etag, sizeof(m->etag), "%s", unpct(a, v, vl));
			} else if (sv_eqstr(k, "s3.mpu")) {
				m->mpu = unpct(a, v, vl);
			} else if (sv_eqstr(k, "s3.ck")) {
				m->ck = unpct(a, v, vl);
			} else if (sv_eqstr(k, "s3.ps")) {
				m->parts = unpct(a, v, vl);
			} else if (sv_eqstr(k, "s3.pck")) {
				m->pcks = unpct(a, v, vl);
			} else if (sv_eqstr(k, "s3.sse")) {
				m->sse = unpct(a, v, vl);
			} else if (sv_startswith(k, "s3.t.")) {
				if (m->tags.n < S3_OBJECT_TAGS_MAX) {
					m->tags.t[m->tags.n].key = unpct(a, k.ptr + 5, k.len - 5);
					m->tags.t[m->tags.n].value = unpct(a, v, vl);
					m->tags.n++;
				}
			} else if (sv_eqstr(k, "s3.own")) {
				m->owner = unpct(a, v, vl);
			} else if (sv_eqstr(k, "s3.acl")) {
				m->acl = unpct(a, v, vl);
			} else if (sv_startswith(k, "s3.m.")) {
				if (m->nuser < ARRAY_SIZE(m->user)) {
					m->user[m->nuser].name = unpct(a, k.ptr + 5, k.len - 5);
					m->user[m->nuser].value = unpct(a, v, vl);
					m->nuser++;
				}
			} else if (sv_eqstr(k, OLVER_LOCK_MODE_KEY)) {
				m->lock_mode = unpct(a, v, vl);
			} else if (sv_eqstr(k, OLVER_LOCK_UNTIL_KEY)) {
				m->lock_until = unpct(a, v, vl);
			} else if (sv_eqstr(k, OLVER_LOCK_HOLD_KEY)) {
				m->lock_hold = unpct(a, v, vl);
			} else if (!sv_startswith(k, "s3.")) { /* not S3's: kept as it is */
				size_t ol = m->other ? strlen(m->other) : 0, il = (size_t)(stop - p);
				char *o = arena_alloc(a, ol + il + 2);
				if (ol)
					memcpy(o, m->other, ol), o[ol++] = ',';
				memcpy(o + ol, p, il);
				o[ol + il] = '\0';
				m->other = o;
			} else {
				for (size_t i = 0; i < ARRAY_SIZE(std_hdrs); i++)
					if (sv_eqstr(k, std_hdrs[i].key))
						FIELD(m, std_hdrs[i].off) = unpct(a, v, vl);
			}
		}
		p = stop + 1;
	}
}

void s3_meta_owner(const char *custom, char *out, size_t outsz)
{
	arena_t *a = arena_new(4096);
	s3_meta_t *m = arena_alloc(a, sizeof(*m));
	s3_meta_decode(a, custom, m);
	snprintf(out, outsz, "%s", m->owner ? m->owner : "");
	arena_destroy(a);
}

void s3_etag_of(const store_meta_t *sm, const s3_meta_t *m, char *out, size_t outsz)
{
	if (m && m->etag[0])
		snprintf(out, outsz, "\"%s\"", m->etag);
	else if (sm->cksum[0])
		snprintf(out, outsz, "\"%s\"", sm->cksum);
	else
		snprintf(out, outsz, "\"v%llx-%llx\"", (unsigned long long)sm->version,
			 (unsigned long long)sm->mtime_ns);
}

void s3_meta_headers(s3_rq_t *r, const store_meta_t *sm, const s3_meta_t *m)
{
	http_req_t *req = r->http;
	char etag[96], t[64];
	s3_etag_of(sm, m, etag, sizeof(etag));
	http_resp_header(req, "ETag", "%s", etag);
	time_http_date(sm->mtime_ns, t, sizeof(t));
	http_resp_header(req, "Last-Modified", "%s", t);
	http_resp_header(req, "Accept-Ranges", "bytes");
	if (!m->ctype)
		http_resp_header(req, "Content-Type", "binary/octet-stream");
	for (size_t i = 0; i < ARRAY_SIZE(std_hdrs); i++) {
		const char *v = FIELD(m, std_hdrs[i].off);
		if (v)
			http_resp_header(req, std_hdrs[i].hdr, "%s", v);
	}
	for (size_t i = 0; i < m->nuser; i++)
		http_resp_header(req, arena_printf(req->arena, "x-amz-meta-%s", m->user[i].name), "%s",
				 m->user[i].value);
	if (m->tags.n)
		http_resp_header(req, "x-amz-tagging-count", "%zu", m->tags.n);
	s3_lock_headers(r, m);
}

int s3_part_range(const char *ps, uint32_t num, uint64_t *start, uint64_t *len, uint32_t *count)
{
	uint64_t off = 0, total = 0, next = 1; /* the number a run starts at without "N:" */
	bool found = false;
	const char *p = ps, *end = ps + strlen(ps);
	*start = *len = 0;
	*count = 0;
	while (p < end) {
		const char *plus = memchr(p, '+', (size_t)(end - p)), *stop = plus ? plus : end;
		const char *colon = memchr(p, ':', (size_t)(stop - p));
		uint64_t first = next, size, n;
		if (colon && (num_parse_u64(p, (size_t)(colon - p), next, S3_MAX_PARTS, &first) != AIS_OK))
			return AIS_ERR;
		const char *q = colon ? colon + 1 : p;
		const char *star = memchr(q, '*', (size_t)(stop - q));
		if (!star || num_parse_u64(q, (size_t)(star - q), 0, UINT64_MAX, &size) != AIS_OK ||
		    num_parse_u64(star + 1, (size_t)(stop - star - 1), 1, S3_MAX_PARTS, &n) != AIS_OK ||
		    total + n > S3_MAX_PARTS || first + n - 1 > S3_MAX_PARTS)
			return AIS_ERR;
		if (!found && num >= first && num < first + n) {
			*start = off + (num - first) * size;
			*len = size;
			found = true;
		}
		off += n * size;
		total += n;
		next = first + n;
		p = stop + 1;
	}
	if (!total)
		return AIS_ERR;
	*count = (uint32_t)total;
	return found ? AIS_OK : AIS_DONE;
}

bool s3_part_ck(const s3_meta_t *m, uint32_t ord, sv_t *out)
{
	const char *p = m->pcks;
	for (; p && ord; ord--) {
		p = strchr(p, '.');
		p = p ? p + 1 : NULL;
	}
	if (!p || !*p || *p == '.')
		return false;
	const char *dot = strchr(p, '.');
	*out = (sv_t){p, dot ? (size_t)(dot - p) : strlen(p)};
	return true;
}

/* --- the metadata of an object or a version, read and set (?tagging, ?acl) ------------ */

struct mfetch {
	s3_meta_fn then;
	void *arg;
	s3_meta_t m;
};

static void fetched(http_req_t *req, void *arg, int fd, store_meta_t *sm, int err, const char *msg)
{
	s3_rq_t *r = arg;
	struct mfetch *f = r->op;
	if (err) {
		if (s3_version_missing(r, err, 0, fetched))
			return;
		if (err != ENOENT || s3_access_missing(r) == AIS_OK)
			s3_error_read(r, err, msg);
		return;
	}
	if (s3_version_opened(r, fd, sm) != AIS_OK)
		return;
	ol_close(req, fd);
	s3_meta_decode(req->arena, sm->custom, &f->m);
	if (s3_access_object(r, S3_RES_NAMED, &f->m) != AIS_OK)
		return;
	f->then(r, sm, &f->m, f->arg);
}

void s3_meta_fetch(s3_rq_t *r, s3_meta_fn then, void *arg)
{
	struct mfetch *f = arena_zalloc(r->http->arena, sizeof(*f));
	f->then = then;
	f->arg = arg;
	r->op = f;
	if (s3_version_select(r) != AIS_OK)
		return;
	ol_open(r->http, r->http->ctx, r->bucket, r->key, 0, fetched, r);
}

struct mset {
	uint64_t version;
	buf_t custom, msg;
	int err, status;
	const char *what;
};

static void mset_cleanup(void *arg)
{
	struct mset *o = arg;
	buf_free(&o->custom);
	buf_free(&o->msg);
}

static void mset_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct mset *o = r->op;
	if (ol_set_custom(req->ctx, r->bucket, r->key, o->version, o->custom.ptr, r->node.cl != NULL, &o->msg) !=
	    AIS_OK)
		o->err = errno ? errno : EIO;
}

static void mset_done(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct mset *o = r->op;
	if (o->err == ESTALE)
		s3_error(r, "OperationAborted", "the object was overwritten while its %s were being set; try again",
			 o->what);
	else if (o->err == EIO && o->msg.len)
		s3_error(r, "ServiceUnavailable", "the %s are set on this copy but not on every copy (%s); try again",
			 o->what, o->msg.ptr);
	else if (o->err == ENOENT && r->vid.ptr) /* the version was removed meanwhile */
		s3_error(r, "NoSuchVersion", NULL);
	else if (o->err)
		s3_error_errno(r, o->err, true);
	else {
		s3_common_headers(r);
		s3_version_header(r, o->custom.ptr, false);
		http_resp_status(req, o->status);
		http_resp_send(req, "", 0);
	}
}

void s3_meta_set(s3_rq_t *r, uint64_t version, const s3_meta_t *m, int status, const char *what)
{
	struct mset *o = arena_zalloc(r->http->arena, sizeof(*o));
	arena_cleanup_add(r->http->arena, mset_cleanup, o);
	o->version = version;
	o->status = status;
	o->what = what;
	if (s3_meta_encode(m, &o->custom) != AIS_OK) {
		s3_error(r, "MetadataTooLarge", "the object's metadata with its %s is over %d bytes", what,
			 STORE_CUSTOM_MAX - 1);
		return;
	}
	r->op = o;
	r->http->state = r;
	s3_offload(r, mset_work, mset_done); /* every copy: the network pool in a cluster */
}

/* m->ck split: "ALG:VALUE[:TYPE]"; false when malformed or unknown. */
static bool ck_split(const s3_meta_t *m, sv_t *alg, sv_t *value, const char **type)
{
	if (!m->ck)
		return false;
	const char *c1 = strchr(m->ck, ':');
	if (!c1 || c1 == m->ck)
		return false;
	const char *c2 = strchr(c1 + 1, ':');
	*alg = (sv_t){m->ck, (size_t)(c1 - m->ck)};
	*value = (sv_t){c1 + 1, c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1)};
	*type = c2 && !strcmp(c2 + 1, "COMPOSITE") ? "COMPOSITE" : "FULL_OBJECT";
	return s3_ck_by_name(*alg) != S3_CK_NONE;
}

bool s3_meta_ck(const s3_meta_t *m, sv_t *alg, sv_t *value, const char **type)
{
	return ck_split(m, alg, value, type) && value->len > 0;
}

enum s3_ck s3_meta_ck_pending(const s3_meta_t *m, const char **type)
{
	sv_t alg, v;
	if (!ck_split(m, &alg, &v, type) || v.len)
		return S3_CK_NONE;
	return s3_ck_by_name(alg);
}

void s3_ck_headers(s3_rq_t *r, const s3_meta_t *m)
{
	sv_t alg, v;
	const char *type;
	if (!sv_eqcase(sv_trim(http_req_header(r->http, "x-amz-checksum-mode")), SV("ENABLED")) ||
	    !s3_meta_ck(m, &alg, &v, &type))
		return;
	http_resp_header(r->http, arena_printf(r->http->arena, "x-amz-checksum-%.*s", (int)alg.len, alg.ptr), "%.*s",
			 (int)v.len, v.ptr);
	http_resp_header(r->http, "x-amz-checksum-type", "%s", type);
}
