/*
 * xml.c - the little XML S3 needs: a writer for answers (every text
 * escaped, so a key with '<', '&', quotes or control characters yields a
 * well-formed document) and a pure parser for the three request bodies S3
 * clients send (CreateBucketConfiguration, Delete, CompleteMultipartUpload).
 *
 * The parser is expat with external entities off and any DOCTYPE refused
 * (no entity expansion at all), nesting bounded, and one callback per
 * element end with the element's path and own text. The body parsers on
 * top of it check shape and ranges and never trust a count.
 */
#include <expat.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

#define S3_NS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XML_DEPTH_MAX 16
#define XML_PATH_MAX 256

void s3_xml_head(buf_t *b, const char *root)
{
	buf_addstr(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	if (root)
		buf_addf(b, "<%s xmlns=\"" S3_NS "\">", root);
}

void s3_xml_open(buf_t *b, const char *tag) { buf_addf(b, "<%s>", tag); }
void s3_xml_close(buf_t *b, const char *tag) { buf_addf(b, "</%s>", tag); }

void s3_xml_text(buf_t *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '&': buf_addstr(b, "&amp;"); break;
		case '<': buf_addstr(b, "&lt;"); break;
		case '>': buf_addstr(b, "&gt;"); break;
		case '"': buf_addstr(b, "&quot;"); break;
		case '\'': buf_addstr(b, "&apos;"); break;
		default:
			if (c < 0x20 || c == 0x7f)
				buf_addf(b, "&#x%X;", c);
			else
				buf_addch(b, (char)c);
		}
	}
}

void s3_xml_elem(buf_t *b, const char *tag, const char *s, size_t n)
{
	buf_addf(b, "<%s>", tag);
	s3_xml_text(b, s, n);
	buf_addf(b, "</%s>", tag);
}

void s3_xml_elemstr(buf_t *b, const char *tag, const char *s) { s3_xml_elem(b, tag, s, strlen(s)); }

void s3_xml_elem_enc(buf_t *b, const char *tag, const char *s, size_t n, bool url_enc, bool keep_slash)
{
	if (!url_enc) {
		s3_xml_elem(b, tag, s, n);
		return;
	}
	buf_t e = BUF_INIT;
	buf_add_pct(&e, (sv_t){s, n}, keep_slash);
	s3_xml_elem(b, tag, e.ptr ? e.ptr : "", e.len);
	buf_free(&e);
}

void s3_xml_elemf(buf_t *b, const char *tag, const char *fmt, ...)
{
	buf_t t = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	buf_vaddf(&t, fmt, ap);
	va_end(ap);
	s3_xml_elem(b, tag, t.ptr ? t.ptr : "", t.len);
	buf_free(&t);
}

/* --- parser ----------------------------------------------------------------- */

struct xp {
	XML_Parser p;
	s3_xml_fn fn;
	void *arg;
	int depth;
	size_t plen[XML_DEPTH_MAX + 1]; /* path length at each depth */
	char path[XML_PATH_MAX];
	size_t pathlen;
	buf_t text[XML_DEPTH_MAX + 1];
	bool failed;
};

static void xp_fail(struct xp *x)
{
	x->failed = true;
	XML_StopParser(x->p, XML_FALSE);
}

static void on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct xp *x = ud;
	const char *local = strrchr(name, ':');
	local = local ? local + 1 : name;
	size_t n = strlen(local);
	if (x->failed)
		return;
	if (x->depth >= XML_DEPTH_MAX || x->pathlen + n + 2 > sizeof(x->path)) {
		xp_fail(x);
		return;
	}
	x->plen[x->depth] = x->pathlen;
	if (x->depth)
		x->path[x->pathlen++] = '/';
	memcpy(x->path + x->pathlen, local, n);
	x->pathlen += n;
	x->path[x->pathlen] = '\0';
	x->depth++;
	buf_reset(&x->text[x->depth]);
}

static void on_end(void *ud, const XML_Char *name)
{
	struct xp *x = ud;
	if (x->failed || x->depth == 0)
		return;
	buf_t *t = &x->text[x->depth];
	if (x->fn(x->arg, x->path, t->ptr ? t->ptr : "", t->len) != AIS_OK) {
		xp_fail(x);
		return;
	}
	x->depth--;
	x->pathlen = x->plen[x->depth];
	x->path[x->pathlen] = '\0';
}

static void on_chars(void *ud, const XML_Char *s, int len)
{
	struct xp *x = ud;
	if (x->failed || x->depth == 0)
		return;
	if (x->text[x->depth].len + (size_t)len > S3_XML_BODY_MAX) {
		xp_fail(x);
		return;
	}
	buf_add(&x->text[x->depth], s, (size_t)len);
}

static void on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
		       int has_internal)
{
	xp_fail(ud);
}

int s3_xml_parse(const char *p, size_t n, s3_xml_fn fn, void *arg)
{
	struct xp x = {0};
	int ret = AIS_ERR;

	if (n > S3_XML_BODY_MAX)
		return AIS_ERR;
	x.p = XML_ParserCreate("UTF-8");
	x.fn = fn;
	x.arg = arg;
	XML_SetUserData(x.p, &x);
	XML_SetElementHandler(x.p, on_start, on_end);
	XML_SetCharacterDataHandler(x.p, on_chars);
	XML_SetStartDoctypeDeclHandler(x.p, on_doctype);
	XML_SetParamEntityParsing(x.p, XML_PARAM_ENTITY_PARSING_NEVER);
	if (XML_Parse(x.p, p ? p : "", (int)n, XML_TRUE) == XML_STATUS_OK && !x.failed && x.depth == 0)
		ret = AIS_OK;
	XML_ParserFree(x.p);
	for (int i = 0; i <= XML_DEPTH_MAX; i++)
		buf_free(&x.text[i]);
	return ret;
}

/* --- request bodies --------------------------------------------------------- */

static sv_t trimmed(const char *t, size_t n) { return sv_trim((sv_t){t, n}); }

struct del_st {
	arena_t *a;
	s3_delete_req_t *out;
	size_t cap;
	bool have_key, root_ok;
	sv_t key, vid;
};

static int del_cb(void *arg, const char *path, const char *text, size_t len)
{
	struct del_st *d = arg;
	if (!strcmp(path, "Delete")) {
		d->root_ok = true;
	} else if (!strcmp(path, "Delete/Quiet")) {
		sv_t v = trimmed(text, len);
		if (sv_eqstr(v, "true"))
			d->out->quiet = true;
		else if (!sv_eqstr(v, "false"))
			return AIS_ERR;
	} else if (!strcmp(path, "Delete/Object/VersionId")) {
		d->vid = (sv_t){arena_strndup(d->a, text, len), len};
	} else if (!strcmp(path, "Delete/Object/Key")) {
		if (d->have_key)
			return AIS_ERR;
		d->have_key = true;
		d->key = (sv_t){arena_strndup(d->a, text, len), len};
	} else if (!strcmp(path, "Delete/Object")) {
		if (!d->have_key)
			return AIS_ERR;
		d->have_key = false;
		if (d->out->n < d->cap) {
			d->out->objs[d->out->n].key = (char *)d->key.ptr;
			d->out->objs[d->out->n].len = d->key.len;
			d->out->objs[d->out->n].vid = d->vid;
		}
		d->vid = (sv_t){NULL, 0};
		d->out->n++;
	}
	return AIS_OK;
}

int s3_parse_delete(arena_t *a, const char *p, size_t n, s3_delete_req_t *out)
{
	struct del_st d = {.a = a, .out = out, .cap = S3_MAX_KEYS + 1};
	memset(out, 0, sizeof(*out));
	out->objs = arena_zalloc(a, d.cap * sizeof(*out->objs));
	if (s3_xml_parse(p, n, del_cb, &d) != AIS_OK || !d.root_ok)
		return AIS_ERR;
	return AIS_OK;
}

struct cmp_st {
	s3_complete_req_t *out;
	size_t cap;
	bool root_ok;
	bool have_num, have_etag;
	uint64_t num;
	char etag[33];
	char ck[48];
};

static int cmp_cb(void *arg, const char *path, const char *text, size_t len)
{
	struct cmp_st *c = arg;
	if (!strcmp(path, "CompleteMultipartUpload")) {
		c->root_ok = true;
	} else if (!strcmp(path, "CompleteMultipartUpload/Part/PartNumber")) {
		sv_t v = trimmed(text, len);
		if (c->have_num || num_parse_u64(v.ptr, v.len, 0, UINT32_MAX, &c->num) != AIS_OK)
			return AIS_ERR;
		c->have_num = true;
	} else if (!strcmp(path, "CompleteMultipartUpload/Part/ETag")) {
		sv_t v = trimmed(text, len);
		if (c->have_etag)
			return AIS_ERR;
		c->have_etag = true;
		if (v.len >= 2 && v.ptr[0] == '"' && v.ptr[v.len - 1] == '"')
			v.ptr++, v.len -= 2;
		c->etag[0] = '\0';
		if (v.len == 32) {
			unsigned char bin[16];
			if (hex_decode(v.ptr, v.len, bin, sizeof(bin)) == AIS_OK)
				hex_encode(bin, sizeof(bin), c->etag);
		}
	} else if (!strncmp(path, "CompleteMultipartUpload/Part/Checksum", 37) && strcmp(path + 37, "Type")) {
		/* ChecksumCRC32 ...: the part's checksum of the upload's algorithm */
		sv_t v = trimmed(text, len);
		if (c->ck[0] || v.len >= sizeof(c->ck))
			return AIS_ERR;
		memcpy(c->ck, v.ptr, v.len);
		c->ck[v.len] = '\0';
	} else if (!strcmp(path, "CompleteMultipartUpload/Part")) {
		if (!c->have_num || !c->have_etag)
			return AIS_ERR;
		if (c->out->n >= c->cap)
			return AIS_ERR;
		c->out->parts[c->out->n].num = c->num;
		memcpy(c->out->parts[c->out->n].etag, c->etag, sizeof(c->etag));
		memcpy(c->out->parts[c->out->n].ck, c->ck, sizeof(c->ck));
		c->out->n++;
		c->have_num = c->have_etag = false;
		c->ck[0] = '\0';
	}
	return AIS_OK;
}

int s3_parse_complete(arena_t *a, const char *p, size_t n, s3_complete_req_t *out)
{
	struct cmp_st c = {.out = out, .cap = S3_MAX_PARTS};
	memset(out, 0, sizeof(*out));
	out->parts = arena_zalloc(a, c.cap * sizeof(*out->parts));
	if (s3_xml_parse(p, n, cmp_cb, &c) != AIS_OK || !c.root_ok)
		return AIS_ERR;
	return AIS_OK;
}

struct cb_st {
	arena_t *a;
	sv_t *loc;
	const char **other;
	bool root_ok;
};

static int cb_cb(void *arg, const char *path, const char *text, size_t len)
{
	struct cb_st *c = arg;
	if (!strcmp(path, "CreateBucketConfiguration"))
		c->root_ok = true;
	else if (!strcmp(path, "CreateBucketConfiguration/LocationConstraint")) {
		sv_t v = trimmed(text, len);
		*c->loc = (sv_t){arena_strndup(c->a, v.ptr, v.len), v.len};
	} else if (!*c->other && !strncmp(path, "CreateBucketConfiguration/", 26)) {
		const char *child = path + 26, *slash = strchr(child, '/');
		*c->other = arena_strndup(c->a, child, slash ? (size_t)(slash - child) : strlen(child));
	}
	return AIS_OK;
}

int s3_parse_create_bucket(arena_t *a, const char *p, size_t n, sv_t *loc, const char **other)
{
	struct cb_st c = {.a = a, .loc = loc, .other = other};
	*loc = (sv_t){"", 0};
	*other = NULL;
	if (s3_xml_parse(p, n, cb_cb, &c) != AIS_OK || !c.root_ok)
		return AIS_ERR;
	return AIS_OK;
}

/* AccessControlPolicy: Owner/ID and the grants; a grantee is a user (ID),
 * a group (URI) or an e-mail address (EmailAddress: *email set, AIS_ERR). */
struct acl_st {
	s3_acl_req_t *out;
	bool root_ok;
	char kind; /* of the grant being read: 0, 'u', a group, 'e' */
	sv_t id;
	unsigned perm;
};

static int acl_cb(void *arg, const char *path, const char *text, size_t len)
{
	struct acl_st *c = arg;
	static const char grantee[] = "AccessControlPolicy/AccessControlList/Grant/Grantee/";
	if (!strcmp(path, "AccessControlPolicy")) {
		c->root_ok = true;
	} else if (!strcmp(path, "AccessControlPolicy/Owner/ID")) {
		sv_t v = trimmed(text, len);
		if (!v.len || v.len > S3ACL_UID_MAX)
			return AIS_ERR;
		memcpy(c->out->owner, v.ptr, v.len);
		c->out->owner[v.len] = '\0';
	} else if (!strncmp(path, grantee, sizeof(grantee) - 1)) {
		const char *f = path + sizeof(grantee) - 1;
		sv_t v = trimmed(text, len);
		if (!strcmp(f, "ID"))
			c->kind = S3ACL_USER, c->id = v;
		else if (!strcmp(f, "URI") && !(c->kind = s3acl_group_parse(v.ptr, v.len)))
			return AIS_ERR;
		else if (!strcmp(f, "EmailAddress"))
			c->kind = 'e';
	} else if (!strcmp(path, "AccessControlPolicy/AccessControlList/Grant/Permission")) {
		sv_t v = trimmed(text, len);
		if (!(c->perm = s3acl_perm_parse(v.ptr, v.len)))
			return AIS_ERR;
	} else if (!strcmp(path, "AccessControlPolicy/AccessControlList/Grant")) {
		if (c->kind == 'e')
			c->out->email = true;
		if (!c->kind || !c->perm || c->kind == 'e' ||
		    s3acl_add(&c->out->acl, c->kind, c->perm, c->id.ptr, c->id.len) != AIS_OK)
			return AIS_ERR;
		c->kind = 0;
		c->perm = 0;
		c->id = (sv_t){"", 0};
	}
	return AIS_OK;
}

int s3_parse_acl(const char *p, size_t n, s3_acl_req_t *out)
{
	struct acl_st c = {.out = out};
	memset(out, 0, sizeof(*out));
	if (s3_xml_parse(p, n, acl_cb, &c) != AIS_OK || !c.root_ok)
		return AIS_ERR;
	return AIS_OK;
}

/* VersioningConfiguration: Status and MfaDelete. */
struct ver_st {
	s3_versioning_req_t *out;
	bool root_ok;
};

static int ver_cb(void *arg, const char *path, const char *text, size_t len)
{
	struct ver_st *c = arg;
	sv_t v = trimmed(text, len);
	if (!strcmp(path, "VersioningConfiguration")) {
		c->root_ok = true;
	} else if (!strcmp(path, "VersioningConfiguration/Status")) {
		if (sv_eqstr(v, "Enabled"))
			c->out->status = 1;
		else if (sv_eqstr(v, "Suspended"))
			c->out->status = 2;
		else
			return AIS_ERR;
	} else if (!strcmp(path, "VersioningConfiguration/MfaDelete")) {
		if (sv_eqstr(v, "Enabled"))
			c->out->mfa = true;
		else if (!sv_eqstr(v, "Disabled"))
			return AIS_ERR;
	}
	return AIS_OK;
}

int s3_parse_versioning(const char *p, size_t n, s3_versioning_req_t *out)
{
	struct ver_st c = {.out = out};
	memset(out, 0, sizeof(*out));
	if (s3_xml_parse(p, n, ver_cb, &c) != AIS_OK || !c.root_ok)
		return AIS_ERR;
	return AIS_OK;
}
