/*
 * acl.c - S3 access control lists as pure values (s3acl.h): the text form
 * kept in the BMD and in object metadata, canned ACLs, x-amz-grant-*
 * header values, and the permissions a requester gets from the grants.
 *
 * Guarantees: s3acl_decode accepts exactly what s3acl_encode writes (and
 * s3acl_text_valid says so), for any bytes it returns a clean error, and
 * every grant it returns has a known kind, one known permission and, for a
 * user, a non-empty id without ':' of at most S3ACL_UID_MAX bytes.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aisd/s3acl.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

static const struct {
	char letter;
	unsigned perm;
	const char *name;
} perms[] = {
	{'F', S3ACL_FULL, "FULL_CONTROL"}, {'R', S3ACL_READ, "READ"},          {'W', S3ACL_WRITE, "WRITE"},
	{'A', S3ACL_READ_ACP, "READ_ACP"}, {'C', S3ACL_WRITE_ACP, "WRITE_ACP"},
};

static const struct {
	char kind;
	const char *uri;
} groups[] = {
	{S3ACL_ALL, "http://acs.amazonaws.com/groups/global/AllUsers"},
	{S3ACL_AUTHED, "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"},
	{S3ACL_LOGS, "http://acs.amazonaws.com/groups/s3/LogDelivery"},
};

const char *s3acl_perm_name(unsigned perm)
{
	for (size_t i = 0; i < ARRAY_SIZE(perms); i++)
		if (perms[i].perm == perm)
			return perms[i].name;
	return "READ";
}

unsigned s3acl_perm_parse(const char *s, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(perms); i++)
		if (strlen(perms[i].name) == len && !memcmp(perms[i].name, s, len))
			return perms[i].perm;
	return 0;
}

const char *s3acl_group_uri(char kind)
{
	for (size_t i = 0; i < ARRAY_SIZE(groups); i++)
		if (groups[i].kind == kind)
			return groups[i].uri;
	return NULL;
}

char s3acl_group_parse(const char *uri, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(groups); i++)
		if (strlen(groups[i].uri) == len && !memcmp(groups[i].uri, uri, len))
			return groups[i].kind;
	return 0;
}

static bool id_ok(const char *id, size_t len)
{
	if (!len || len > S3ACL_UID_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (id[i] == ':' || (unsigned char)id[i] < ' ' || id[i] == 0x7f)
			return false;
	return true;
}

int s3acl_add(s3acl_t *a, char kind, unsigned perm, const char *id, size_t idlen)
{
	if (a->n == S3ACL_GRANTS_MAX || (kind == S3ACL_USER && !id_ok(id, idlen)))
		return AIS_ERR;
	s3acl_grant_t *g = &a->g[a->n++];
	memset(g, 0, sizeof(*g));
	g->kind = kind;
	g->perm = perm;
	if (kind == S3ACL_USER)
		memcpy(g->id, id, idlen);
	return AIS_OK;
}

int s3acl_decode(const char *text, size_t len, s3acl_t *out)
{
	const char *p = text, *end = text + len;
	out->n = 0;
	if (len > S3ACL_TEXT_MAX)
		return AIS_ERR;
	while (p < end) {
		const char *c = memchr(p, ':', (size_t)(end - p));
		const char *stop = c ? c : end;
		size_t n = (size_t)(stop - p), k;
		if (n < 2 || (c && c + 1 == end))
			return AIS_ERR;
		for (k = 0; k < ARRAY_SIZE(perms) && perms[k].letter != p[1]; k++)
			;
		if (k == ARRAY_SIZE(perms))
			return AIS_ERR;
		if (p[0] == S3ACL_USER) {
			if (s3acl_add(out, S3ACL_USER, perms[k].perm, p + 2, n - 2) != AIS_OK)
				return AIS_ERR;
		} else if (!s3acl_group_uri(p[0]) || n != 2 || s3acl_add(out, p[0], perms[k].perm, NULL, 0) != AIS_OK) {
			return AIS_ERR;
		}
		p = stop + 1;
	}
	return AIS_OK;
}

bool s3acl_text_valid(const char *text, size_t len)
{
	s3acl_t *a = xmalloc(sizeof(*a));
	bool ok = s3acl_decode(text, len, a) == AIS_OK;
	free(a);
	return ok;
}

int s3acl_encode(const s3acl_t *a, buf_t *out)
{
	size_t start = out->len;
	for (size_t i = 0; i < a->n; i++) {
		const s3acl_grant_t *g = &a->g[i];
		size_t k = 0;
		while (k < ARRAY_SIZE(perms) && perms[k].perm != g->perm)
			k++;
		if (i)
			buf_addch(out, ':');
		buf_addch(out, g->kind);
		buf_addch(out, k < ARRAY_SIZE(perms) ? perms[k].letter : 'R');
		if (g->kind == S3ACL_USER)
			buf_addstr(out, g->id);
	}
	return out->len - start <= S3ACL_TEXT_MAX ? AIS_OK : AIS_ERR;
}

int s3acl_canned(const char *name, size_t len, const char *owner, const char *bucket_owner, s3acl_t *out)
{
	sv_t n = {name, len};
	bool bor = sv_eqstr(n, "bucket-owner-read"), bofc = sv_eqstr(n, "bucket-owner-full-control");
	out->n = 0;
	/* group grants first, then the owner's (the order S3 and RGW list) */
	if (sv_eqstr(n, "public-read") || sv_eqstr(n, "public-read-write"))
		s3acl_add(out, S3ACL_ALL, S3ACL_READ, NULL, 0);
	if (sv_eqstr(n, "public-read-write"))
		s3acl_add(out, S3ACL_ALL, S3ACL_WRITE, NULL, 0);
	if (sv_eqstr(n, "authenticated-read"))
		s3acl_add(out, S3ACL_AUTHED, S3ACL_READ, NULL, 0);
	if (sv_eqstr(n, "log-delivery-write") && !bucket_owner) {
		s3acl_add(out, S3ACL_LOGS, S3ACL_WRITE, NULL, 0);
		s3acl_add(out, S3ACL_LOGS, S3ACL_READ_ACP, NULL, 0);
	}
	if (!out->n && !sv_eqstr(n, "private") && !((bor || bofc) && bucket_owner))
		return AIS_ERR;
	if (s3acl_add(out, S3ACL_USER, S3ACL_FULL, owner, strlen(owner)) != AIS_OK)
		return AIS_ERR;
	if ((bor || bofc) && strcmp(bucket_owner, owner))
		return s3acl_add(out, S3ACL_USER, bor ? S3ACL_READ : S3ACL_FULL, bucket_owner, strlen(bucket_owner));
	return AIS_OK;
}

/* 'key="value"' at *p (after blanks); the value without quotes. */
static int kv(const char **p, const char *end, sv_t *k, sv_t *v)
{
	const char *s = *p;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	const char *eq = memchr(s, '=', (size_t)(end - s));
	if (!eq || eq == s)
		return AIS_ERR;
	*k = sv_trim((sv_t){s, (size_t)(eq - s)});
	s = eq + 1;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s < end && *s == '"') {
		const char *q = memchr(s + 1, '"', (size_t)(end - s - 1));
		if (!q)
			return AIS_ERR;
		*v = (sv_t){s + 1, (size_t)(q - s - 1)};
		s = q + 1;
	} else {
		const char *c = memchr(s, ',', (size_t)(end - s));
		*v = sv_trim((sv_t){s, (size_t)((c ? c : end) - s)});
		s = c ? c : end;
	}
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s < end && *s != ',')
		return AIS_ERR;
	*p = s < end ? s + 1 : end;
	return AIS_OK;
}

int s3acl_parse_grant_header(const char *v, size_t len, unsigned perm, s3acl_t *a, bool *email)
{
	const char *p = v, *end = v + len;
	*email = false;
	if (!sv_trim((sv_t){v, len}).len)
		return AIS_ERR;
	while (p < end) {
		sv_t k, val;
		if (kv(&p, end, &k, &val) != AIS_OK)
			return AIS_ERR;
		if (sv_eqcase(k, SV("id"))) {
			if (s3acl_add(a, S3ACL_USER, perm, val.ptr, val.len) != AIS_OK)
				return AIS_ERR;
		} else if (sv_eqcase(k, SV("uri"))) {
			char g = s3acl_group_parse(val.ptr, val.len);
			if (!g || s3acl_add(a, g, perm, NULL, 0) != AIS_OK)
				return AIS_ERR;
		} else if (sv_eqcase(k, SV("emailAddress"))) {
			*email = true;
			return AIS_ERR;
		} else {
			return AIS_ERR;
		}
	}
	return AIS_OK;
}

unsigned s3acl_perms(const s3acl_t *a, const char *uid, bool groups_only)
{
	unsigned p = 0;
	for (size_t i = 0; i < a->n; i++) {
		const s3acl_grant_t *g = &a->g[i];
		if (g->kind == S3ACL_ALL || (g->kind == S3ACL_AUTHED && uid) ||
		    (g->kind == S3ACL_USER && uid && !groups_only && !strcmp(g->id, uid)))
			p |= g->perm;
	}
	return p;
}

bool s3acl_owner_only(const s3acl_t *a, const char *uid)
{
	unsigned p = 0;
	for (size_t i = 0; i < a->n; i++) {
		if (a->g[i].kind != S3ACL_USER || strcmp(a->g[i].id, uid))
			return false;
		p |= a->g[i].perm;
	}
	return p == S3ACL_FULL;
}

static const char *const own_names[] = {
	[S3ACL_OWN_OBJECT_WRITER] = "ObjectWriter",
	[S3ACL_OWN_OWNER_PREFERRED] = "BucketOwnerPreferred",
	[S3ACL_OWN_OWNER_ENFORCED] = "BucketOwnerEnforced",
};

s3acl_own_t s3acl_own_parse(const char *s, size_t len)
{
	for (size_t i = S3ACL_OWN_OBJECT_WRITER; i < ARRAY_SIZE(own_names); i++)
		if (sv_eqstr((sv_t){s, len}, own_names[i]))
			return (s3acl_own_t)i;
	return S3ACL_OWN_NONE;
}

const char *s3acl_own_name(s3acl_own_t own)
{
	return own > S3ACL_OWN_NONE && (size_t)own < ARRAY_SIZE(own_names) ? own_names[own] : "";
}
