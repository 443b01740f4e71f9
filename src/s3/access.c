/*
 * access.c - who may do what, by S3 ACLs (s3acl.h): the requester, a
 * bucket's owner and ACL (from the BMD), an object's (from its S3
 * metadata), the permission each operation needs, the ACL a request sets
 * (x-amz-acl, x-amz-grant-*), and GetBucketAcl/GetObjectAcl's document.
 *
 * The rules (docs/s3.md, "S3 keys and signatures"; docs/deploying.md, "Access control"):
 *  1. A bucket made through S3 is owned by its creator's user id and gets
 *     an ACL (default private: the owner has FULL_CONTROL). A bucket made
 *     by the native API has no owner: every key has full control, and only
 *     its ACL's group grants add anything (for anonymous requests).
 *  2. An object PUT through S3 (PUT, copy, multipart) carries its writer's
 *     user id and an ACL; an object without one (native PUT, anonymous
 *     PUT) has its bucket's permissions.
 *  3. An owner may always read and change the ACL (READ_ACP, WRITE_ACP);
 *     everything else comes from the grants. FULL_CONTROL is all four.
 *  4. Anonymous requests (no signature with s3.auth on) get AllUsers'
 *     grants; with s3.auth off every request is the first key's user.
 *  5. With auth.enabled, auth.grant decides for signed requests; ACLs add
 *     only their group grants (AllUsers, AuthenticatedUsers), so that a
 *     public bucket stays public, and setting a group grant needs admin.
 *  5a. A bucket policy (policy.c) is asked for every resource a request
 *     declares, with its S3 action: its verdict goes with the resource
 *     (res.pol) to the same decision, where an explicit Deny wins over
 *     every grant and ACL and an Allow adds to them. IgnorePublicAcls
 *     makes group grants count for nothing here; BlockPublicAcls refuses
 *     setting one (s3_acl_check_users).
 *  5b. A bucket's object ownership (ownop.c) says who owns what is
 *     written: the writer (ObjectWriter, and a bucket without controls),
 *     the bucket owner when the write names x-amz-acl
 *     bucket-owner-full-control (BucketOwnerPreferred), or always the
 *     bucket owner (BucketOwnerEnforced). BucketOwnerEnforced disables
 *     ACLs: the bucket's ACL reads as its owner's full control, an
 *     object's permissions are its bucket's, and a request may set no ACL
 *     but the bucket owner's full control (s3_acl_enforced_check).
 *  6. This file only says what the ACLs give (acl_have of the resources
 *     s3.c declares); authz_decide decides, over every resource of the
 *     request at once (a copy's source included): deny wins.
 */
#include <stdio.h>
#include <string.h>

#include "aisd/authz.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "s3log.h"
#include "aisd/banned.h"

/* The default owner: the first key's user (what owner_of answers for an
 * anonymous request with s3.auth off). */
static const char *default_owner(void)
{
	const s3_key_t *k = s3_cfg.keys && s3_keys_count(s3_cfg.keys) ? s3_keys_at(s3_cfg.keys, 0) : NULL;
	return k && k->user_id ? k->user_id : "aisd";
}

const char *s3_requester(const s3_rq_t *r)
{
	if (r->auth.key)
		return r->auth.key->user_id;
	if (r->auth.kind == S3_AUTH_ANON && s3_cfg.enabled)
		return NULL;
	return default_owner();
}

const char *s3_user_name(const char *uid)
{
	for (size_t i = 0; s3_cfg.keys && i < s3_keys_count(s3_cfg.keys); i++) {
		const s3_key_t *k = s3_keys_at(s3_cfg.keys, i);
		if (k->user_id && !strcmp(k->user_id, uid))
			return k->display_name ? k->display_name : uid;
	}
	return NULL;
}

int s3_bucket_acl_get(s3_rq_t *r, sv_t bucket, s3_bacl_t *out)
{
	memset(out, 0, sizeof(*out));
	if (!r->node.cl) { /* a standalone target: no owner, no ACL */
		store_bucket_t sb;
		if (!r->node.store || store_bucket_get(r->node.store, bucket.ptr, bucket.len, &sb) != AIS_OK)
			return AIS_ERR;
		snprintf(out->owner, sizeof(out->owner), "%s", default_owner());
		return AIS_OK;
	}
	const bmd_t *b;
	int rc = AIS_ERR;
	cluster_read_lock(r->node.cl, NULL, &b);
	const bmd_bucket_t *bk = b ? bmd_get(b, bucket.ptr, bucket.len) : NULL;
	if (bk) {
		out->owned = bk->props.s3owner[0] != '\0';
		snprintf(out->owner, sizeof(out->owner), "%s", out->owned ? bk->props.s3owner : default_owner());
		out->acl_set = bk->props.s3acl_set;
		out->pab = bk->props.s3pab;
		const char *pol = bmd_policy(b, bucket.ptr, bucket.len);
		out->policy = pol ? arena_strndup(r->http->arena, pol, strlen(pol)) : NULL;
		const char *own = bmd_doc(b, BMD_DOC_OWNERSHIP, bucket.ptr, bucket.len);
		out->own = own ? s3acl_own_parse(own, strlen(own)) : S3ACL_OWN_NONE;
		if (out->acl_set && s3acl_decode(bk->props.s3acl, strlen(bk->props.s3acl), &out->acl) != AIS_OK)
			out->acl.n = 0; /* bmd_props_check keeps it valid */
		rc = AIS_OK;
	}
	cluster_read_unlock(r->node.cl);
	if (rc == AIS_OK && out->own == S3ACL_OWN_OWNER_ENFORCED) { /* rule 5b */
		out->acl_set = true;
		s3acl_canned("private", 7, out->owner, NULL, &out->acl);
	}
	return rc;
}

/* IgnorePublicAcls: a's grants but its group ones. */
static const s3acl_t *sans_public(const s3_rq_t *r, const s3acl_t *a, unsigned pab)
{
	if (!(pab & BMD_PAB_IGNORE_ACLS))
		return a;
	s3acl_t *o = arena_alloc(r->http->arena, sizeof(*o));
	o->n = 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->g[i].kind == S3ACL_USER)
			o->g[o->n++] = a->g[i];
	return o;
}

unsigned s3_bucket_perms(const s3_rq_t *r, const s3_bacl_t *b)
{
	const char *uid = s3_requester(r);
	const s3acl_t *acl = sans_public(r, &b->acl, b->pab);
	if (authz_enabled() && uid)
		return b->acl_set ? s3acl_perms(acl, uid, true) : 0;
	if (!b->owned && uid)
		return S3ACL_FULL;
	bool owner = uid && !strcmp(uid, b->owner);
	unsigned p = b->acl_set ? s3acl_perms(acl, uid, false) : owner ? S3ACL_FULL : 0;
	return owner ? p | S3ACL_READ_ACP | S3ACL_WRITE_ACP : p;
}

unsigned s3_object_perms(const s3_rq_t *r, const s3_bacl_t *b, const s3_meta_t *m)
{
	const char *uid = s3_requester(r);
	s3acl_t *acl;
	if (!m || !m->owner || b->own == S3ACL_OWN_OWNER_ENFORCED) /* (rule 5b) */
		return s3_bucket_perms(r, b);
	if (!b->owned && uid && !authz_enabled())
		return S3ACL_FULL;
	acl = arena_alloc(r->http->arena, sizeof(*acl));
	if (s3acl_decode(m->acl ? m->acl : "", m->acl ? strlen(m->acl) : 0, acl) != AIS_OK)
		acl->n = 0;
	const s3acl_t *eff = sans_public(r, acl, b->pab);
	if (authz_enabled() && uid)
		return s3acl_perms(eff, uid, true);
	unsigned p = s3acl_perms(eff, uid, false);
	return uid && !strcmp(uid, m->owner) ? p | S3ACL_READ_ACP | S3ACL_WRITE_ACP : p;
}

void s3_who(const s3_rq_t *r, authz_who_t *who)
{
	const char *uid = s3_requester(r);
	memset(who, 0, sizeof(*who));
	who->kind = uid ? AUTHZ_USER : AUTHZ_ANON;
	who->user = uid ? sv_from(uid) : (sv_t){"", 0};
}

static void denied(s3_rq_t *r, const authz_who_t *who, const authz_res_t *x)
{
	buf_t why = BUF_INIT;
	authz_why(who, x, &why);
	s3_error(r, "AccessDenied", "Access Denied: %s", why.ptr);
	buf_free(&why);
}

int s3_decide(s3_rq_t *r)
{
	authz_who_t who;
	size_t bad;
	s3_who(r, &who);
	authz_access_fill(r->res, r->nres); /* the buckets' access property (rule 1a) */
	for (size_t i = 0; i < r->nres; i++) {
		authz_res_t *x = &r->res[i];
		s3_bacl_t b;
		bool have = x->bucket.len && s3_bucket_acl_get(r, x->bucket, &b) == AIS_OK;
		if (have && who.kind != AUTHZ_PEER)
			x->pol = (unsigned char)s3_policy_verdict(r, x, s3_action(r, i), &b, NULL, (sv_t){NULL, 0},
								  r->meta_later[i]);
		if (authz_decide(&who, x, 1, &bad) == AUTHZ_ALLOW) {
			x->acl_later = false; /* its own permissions or the policy: no ACL to read */
			continue;
		}
		if (!x->acl || x->acl_later)
			continue;
		if (have) {
			x->acl_have = s3_bucket_perms(r, &b);
			if (i == S3_RES_NAMED && (!r->auth.key || !r->auth.key->user_id || strcmp(b.owner, r->auth.key->user_id)))
				s3_log_acl_required(r); /* an ACL decides for someone not the owner: its access log says so */
		} else if (who.kind == AUTHZ_ANON && i == S3_RES_NAMED) {
			s3_error(r, "NoSuchBucket", NULL);
			return AIS_ERR;
		} else {
			/* a signed request: the handler answers NoSuchBucket */
			x->acl_have = who.kind == AUTHZ_ANON ? 0 : x->acl;
		}
	}
	if (r->nres && r->res[S3_RES_NAMED].acl_later && who.kind == AUTHZ_ANON && !s3_bucket_exists(r)) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_ERR;
	}
	if (authz_decide(&who, r->res, r->nres, &bad) != AUTHZ_DENY)
		return AIS_OK;
	denied(r, &who, &r->res[bad]);
	return AIS_ERR;
}

int s3_decide_object(s3_rq_t *r, size_t i, const s3_meta_t *m)
{
	authz_who_t who;
	s3_bacl_t b;
	size_t bad;
	if (i >= r->nres)
		return AIS_ERR; /* not declared: never allowed */
	authz_res_t *x = &r->res[i];
	if (!x->acl_later && x->pol != AUTHZ_POL_LATER)
		return AIS_OK; /* decided already (s3_decide) */
	s3_who(r, &who);
	if (s3_bucket_acl_get(r, x->bucket, &b) != AIS_OK)
		return AIS_ERR; /* the bucket went away meanwhile */
	if (x->pol == AUTHZ_POL_LATER) /* a policy on the object's tags or the body's */
		x->pol = (unsigned char)s3_policy_verdict(r, x, s3_action(r, i), &b, m, (sv_t){NULL, 0}, false);
	if (x->acl_later) /* else the bucket's ACL, filled by s3_decide */
		x->acl_have = s3_object_perms(r, &b, m);
	x->acl_later = false;
	if (authz_decide(&who, x, 1, &bad) != AUTHZ_ALLOW || authz_decide(&who, r->res, r->nres, &bad) == AUTHZ_DENY)
		return AIS_ERR;
	return AIS_OK;
}

int s3_access_object(s3_rq_t *r, size_t i, const s3_meta_t *m)
{
	if (s3_decide_object(r, i, m) == AIS_OK)
		return AIS_OK;
	authz_who_t who;
	s3_who(r, &who);
	denied(r, &who, &r->res[MIN(i, r->nres - 1)]);
	return AIS_ERR;
}

int s3_decide_missing(s3_rq_t *r, size_t i)
{
	authz_who_t who;
	s3_bacl_t b;
	size_t bad;
	if (i >= r->nres || (!r->res[i].acl_later && r->res[i].pol != AUTHZ_POL_LATER) ||
	    s3_bucket_acl_get(r, r->res[i].bucket, &b) != AIS_OK)
		return AIS_OK;
	/* S3 says whether a key exists only to who may list its bucket: the
	 * bucket as ListBucket's resource, the key its s3:prefix */
	authz_res_t x = {.bucket = r->res[i].bucket, .perm = AUTH_LIST, .acl = S3ACL_READ, .role = r->res[i].role};
	s3_who(r, &who);
	x.pol = (unsigned char)s3_policy_verdict(r, &x, "s3:ListBucket", &b, NULL, r->res[i].object, false);
	x.acl_have = s3_bucket_perms(r, &b);
	return authz_decide(&who, &x, 1, &bad) == AUTHZ_ALLOW ? AIS_OK : AIS_ERR;
}

int s3_access_missing(s3_rq_t *r)
{
	if (s3_decide_missing(r, S3_RES_NAMED) == AIS_OK)
		return AIS_OK;
	s3_error(r, "AccessDenied", NULL);
	return AIS_ERR;
}

int s3_decide_key(s3_rq_t *r, sv_t key, bool version)
{
	authz_who_t who;
	s3_bacl_t b;
	size_t bad;
	if (!r->nres || s3_bucket_acl_get(r, r->res[S3_RES_NAMED].bucket, &b) != AIS_OK || !b.policy)
		return AIS_OK; /* no policy: the bucket's decision is each key's */
	authz_res_t x = r->res[S3_RES_NAMED];
	s3_who(r, &who);
	x.object = key;
	x.pol = (unsigned char)s3_policy_verdict(r, &x, version ? "s3:DeleteObjectVersion" : "s3:DeleteObject", &b,
						  NULL, (sv_t){NULL, 0}, false);
	if (x.pol == AUTHZ_POL_NONE)
		return AIS_OK; /* the policy says nothing of the key: the bucket's decision stands */
	x.acl_have = s3_bucket_perms(r, &b);
	return authz_decide(&who, &x, 1, &bad) == AUTHZ_DENY ? AIS_ERR : AIS_OK;
}

/* --- the ACL a request sets ------------------------------------------------------ */

static const struct {
	const char *hdr;
	unsigned perm;
} grant_hdrs[] = {
	{"x-amz-grant-read", S3ACL_READ},         {"x-amz-grant-write", S3ACL_WRITE},
	{"x-amz-grant-read-acp", S3ACL_READ_ACP}, {"x-amz-grant-write-acp", S3ACL_WRITE_ACP},
	{"x-amz-grant-full-control", S3ACL_FULL},
};

int s3_acl_check_users(s3_rq_t *r, const s3acl_t *a)
{
	bool groups = false;
	s3_bacl_t b;
	for (size_t i = 0; i < a->n; i++) {
		if (a->g[i].kind != S3ACL_USER) {
			groups = true;
		} else if (!s3_user_name(a->g[i].id)) {
			s3_error(r, "InvalidArgument", "Invalid id: no user %s", a->g[i].id);
			return AIS_ERR;
		}
	}
	/* with auth.enabled a grant to a group needs every permission on the
	 * bucket, asked of the one decision (an ACL never grants it) */
	authz_res_t x = {.bucket = r->bucket, .object = r->key, .perm = AUTH_ALL, .role = "a grant to a group"};
	authz_who_t who;
	size_t bad;
	s3_who(r, &who);
	if (groups && s3_bucket_acl_get(r, r->bucket, &b) == AIS_OK && (b.pab & BMD_PAB_BLOCK_ACLS)) {
		s3_error(r, "AccessDenied", "Access Denied: the bucket's public access block (BlockPublicAcls) "
					    "refuses a public ACL");
		return AIS_ERR;
	}
	if (groups && authz_enabled() && authz_decide(&who, &x, 1, &bad) != AUTHZ_ALLOW) {
		s3_error(r, "AccessDenied", "Access Denied: a grant to a group needs admin on the bucket (auth.enabled)");
		return AIS_ERR;
	}
	return AIS_OK;
}

int s3_acl_from_req(s3_rq_t *r, const char *owner, const char *bucket_owner, s3acl_t *out, bool *given)
{
	http_req_t *req = r->http;
	sv_t canned = http_req_header(req, "x-amz-acl");
	bool grants = false, email = false;

	*given = false;
	out->n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(grant_hdrs); i++)
		grants |= http_req_header(req, grant_hdrs[i].hdr).ptr != NULL;
	if (canned.ptr && grants) {
		s3_error(r, "InvalidRequest", "Specifying both Canned ACLs and Header Grants is not allowed");
		return AIS_ERR;
	}
	if (canned.ptr) {
		canned = sv_trim(canned);
		if (s3acl_canned(canned.ptr, canned.len, owner, bucket_owner, out) != AIS_OK) {
			s3_error(r, "InvalidArgument", "unknown canned ACL %.*s", (int)MIN(canned.len, 64), canned.ptr);
			return AIS_ERR;
		}
		*given = true;
	} else if (grants) {
		for (size_t i = 0; i < ARRAY_SIZE(grant_hdrs); i++) {
			sv_t v = http_req_header(req, grant_hdrs[i].hdr);
			if (!v.ptr)
				continue;
			if (s3acl_parse_grant_header(v.ptr, v.len, grant_hdrs[i].perm, out, &email) != AIS_OK) {
				if (email)
					s3_error(r, "UnresolvableGrantByEmailAddress", NULL);
				else
					s3_error(r, "InvalidArgument", "malformed %s", grant_hdrs[i].hdr);
				return AIS_ERR;
			}
		}
		*given = true;
	} else {
		s3acl_canned("private", 7, owner, bucket_owner, out);
	}
	if (grants && !s3_requester(r)) { /* a canned ACL is kept, owned by the bucket's owner */
		s3_error(r, "AccessDenied", "Access Denied: anonymous requests cannot grant by header (x-amz-grant-*)");
		return AIS_ERR;
	}
	return *given ? s3_acl_check_users(r, out) : AIS_OK;
}

/* Whether the request's x-amz-acl is bucket-owner-full-control. */
static bool canned_bofc(const s3_rq_t *r)
{
	return sv_eqstr(sv_trim(http_req_header(r->http, "x-amz-acl")), "bucket-owner-full-control");
}

int s3_acl_enforced_check(s3_rq_t *r, const s3_bacl_t *b, const s3acl_t *acl)
{
	if (b->own != S3ACL_OWN_OWNER_ENFORCED)
		return AIS_OK;
	if (http_req_header(r->http, "x-amz-acl").ptr ? canned_bofc(r) : s3acl_owner_only(acl, b->owner))
		return AIS_OK;
	s3_error(r, "AccessControlListNotSupported", "The bucket does not allow ACLs (BucketOwnerEnforced)");
	return AIS_ERR;
}

int s3_meta_acl_from_req(s3_rq_t *r, s3_meta_t *m)
{
	s3_bacl_t b;
	s3acl_t *acl = arena_alloc(r->http->arena, sizeof(*acl));
	const char *uid = s3_requester(r);
	bool given;
	buf_t t = BUF_INIT;

	m->owner = m->acl = NULL;
	if (s3_bucket_acl_get(r, r->bucket, &b) != AIS_OK) {
		snprintf(b.owner, sizeof(b.owner), "%s", default_owner());
		b.own = S3ACL_OWN_NONE;
	}
	/* anonymous (a public-read-write bucket): an object of the bucket's
	 * owner, with the canned ACL asked for, else the bucket's permissions */
	if (s3_acl_from_req(r, uid ? uid : b.owner, b.owner, acl, &given) != AIS_OK)
		return AIS_ERR;
	if (given && s3_acl_enforced_check(r, &b, acl) != AIS_OK)
		return AIS_ERR;
	/* the bucket owner owns it (rule 5b), with full control */
	if (b.own == S3ACL_OWN_OWNER_ENFORCED || (b.own == S3ACL_OWN_OWNER_PREFERRED && uid && canned_bofc(r))) {
		uid = b.owner;
		s3acl_canned("private", 7, uid, NULL, acl);
	}
	if (!uid && !given)
		return AIS_OK;
	if (!uid)
		uid = b.owner;
	s3acl_encode(acl, &t);
	m->owner = arena_strndup(r->http->arena, uid, strlen(uid));
	m->acl = arena_strndup(r->http->arena, t.ptr ? t.ptr : "", t.len);
	buf_free(&t);
	return AIS_OK;
}

/* --- GetBucketAcl / GetObjectAcl ---------------------------------------------------- */

static void user_xml(buf_t *b, const char *uid)
{
	const char *name = s3_user_name(uid);
	s3_xml_elemstr(b, "ID", uid);
	s3_xml_elemstr(b, "DisplayName", name ? name : uid);
}

void s3_acl_xml(const char *owner, const s3acl_t *a, buf_t *b)
{
	s3_xml_head(b, "AccessControlPolicy");
	s3_xml_open(b, "Owner");
	user_xml(b, owner);
	s3_xml_close(b, "Owner");
	s3_xml_open(b, "AccessControlList");
	/* group grants first, as S3 and RGW list them */
	for (size_t k = 0; k < 2 * a->n; k++) {
		const s3acl_grant_t *g = &a->g[k % a->n];
		bool user = g->kind == S3ACL_USER;
		if (user != (k >= a->n))
			continue;
		buf_addf(b, "<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
			    "xsi:type=\"%s\">",
			 user ? "CanonicalUser" : "Group");
		if (user)
			user_xml(b, g->id);
		else
			s3_xml_elemstr(b, "URI", s3acl_group_uri(g->kind));
		buf_addstr(b, "</Grantee>");
		s3_xml_elemstr(b, "Permission", s3acl_perm_name(g->perm));
		buf_addstr(b, "</Grant>");
	}
	s3_xml_close(b, "AccessControlList");
	s3_xml_close(b, "AccessControlPolicy");
}

void s3_bucket_acl_effective(const s3_bacl_t *b, s3acl_t *out)
{
	if (b->acl_set)
		*out = b->acl;
	else
		s3acl_canned("private", 7, b->owner, NULL, out);
}
