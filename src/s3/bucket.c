/*
 * bucket.c - S3 service and bucket operations: ListBuckets, CreateBucket,
 * HeadBucket, DeleteBucket, GetBucketLocation (GetBucketVersioning and the
 * other configurations no bucket has are nyi.c's).
 *
 * S3 buckets are the cluster's buckets. In a cluster the BMD answers
 * reads, and changes go through the primary gateway exactly like the
 * native API (on the primary itself: cluster_update; elsewhere: the native
 * call to the primary, which pushes the BMD to every node before it
 * answers). A standalone target uses its store's buckets.
 *
 * LocationConstraint, as S3 does: the endpoint's region is the one the
 * request was signed for (else s3.region). A us-east-1 endpoint creates a
 * bucket in any region named; a regional endpoint only in its own
 * (IllegalLocationConstraintException otherwise, also for a body without a
 * constraint). A PUT without a body creates the bucket in the endpoint's
 * region. The constraint is kept in the BMD (props.region, "" for
 * us-east-1) and answered by GetBucketLocation and HeadBucket's
 * x-amz-bucket-region; a standalone target answers s3.region.
 *
 * Ownership (access.c): CreateBucket records the creator's user id and the
 * ACL of x-amz-acl / x-amz-grant-* (default private) in the BMD, and
 * PutBucketAcl changes the ACL the same way. Creating an existing bucket
 * answers as S3 (us-east-1) does: another owner's is BucketAlreadyExists;
 * one's own is 200 when the ACL asked for is the one it has (else
 * BucketAlreadyExists, as RGW), and BucketAlreadyOwnedByYou at an endpoint
 * of another region.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/authz.h"
#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"


bool s3_bucket_name_valid(sv_t n)
{
	if (n.len < 3 || n.len > 63)
		return false;
	for (size_t i = 0; i < n.len; i++) {
		char c = n.ptr[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
			return false;
		if (c == '.' && i && (n.ptr[i - 1] == '.' || n.ptr[i - 1] == '-'))
			return false;
		if (c == '-' && i && n.ptr[i - 1] == '.')
			return false;
	}
	char f = n.ptr[0], l = n.ptr[n.len - 1];
	if (f == '.' || f == '-' || l == '.' || l == '-')
		return false;
	/* not an IP address; "v1" and "s3" are too short anyway */
	int dots = 0;
	bool digits = true;
	for (size_t i = 0; i < n.len; i++) {
		if (n.ptr[i] == '.')
			dots++;
		else if (n.ptr[i] < '0' || n.ptr[i] > '9')
			digits = false;
	}
	return !(digits && dots == 3) && !sv_startswith(n, "xn--");
}

bool s3_bucket_exists(s3_rq_t *r)
{
	store_bucket_t sb;
	if (r->node.cl) {
		const bmd_t *b;
		cluster_read_lock(r->node.cl, NULL, &b);
		bool ok = b && bmd_get(b, r->bucket.ptr, r->bucket.len);
		cluster_read_unlock(r->node.cl);
		return ok;
	}
	return r->node.store && store_bucket_get(r->node.store, r->bucket.ptr, r->bucket.len, &sb) == AIS_OK;
}

/* --- ListBuckets ----------------------------------------------------------------- */

/* A LocationConstraint as a region's code: none is us-east-1, "EU"
 * eu-west-1's old name. */
static const char *region_code(const char *constraint)
{
	return !constraint[0] ? "us-east-1" : !strcmp(constraint, "EU") ? "eu-west-1" : constraint;
}

struct lsb_entry {
	char name[NAME_BUCKET_MAX + 1];
	int64_t created_ns;
	char region[64]; /* its code (BMD_REGION_MAX, or s3.region standalone) */
};

/* name against a query's bytes, in byte order */
static int name_cmp_sv(const char *name, sv_t v)
{
	size_t n = strlen(name);
	int c = memcmp(name, v.ptr, MIN(n, v.len));
	return c ? c : n < v.len ? -1 : n > v.len;
}

static int lsb_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lsb_entry *)a)->name, ((const struct lsb_entry *)b)->name);
}

/* GET /: the requester's buckets (and those without an S3 owner) in name
 * order. Paged as S3 pages it: max-buckets (1..10000) a page, prefix and
 * bucket-region filter, continuation-token resumes after the last name of
 * the page before (ContinuationToken in a page that has more). Without any
 * of the four, every bucket in one answer (as S3 answers an account of at
 * most 10,000 buckets); with one, pages of 10,000 at most. */
int s3_service(s3_rq_t *r)
{
	http_req_t *req = r->http;
	sv_t mb, tok = {NULL, 0}, after = {"", 0};
	sv_t prefix = s3_query_str(req, "prefix"), want_region = s3_query_str(req, "bucket-region");
	uint64_t max = S3_MAX_BUCKETS;
	bool paged = s3_query_has(req, "max-buckets") || s3_query_has(req, "continuation-token") ||
		     s3_query_has(req, "prefix") || s3_query_has(req, "bucket-region");
	if (http_query_get(req, "max-buckets", &mb) && num_parse_u64(mb.ptr, mb.len, 1, S3_MAX_BUCKETS, &max) != AIS_OK) {
		s3_error(r, "InvalidArgument", "max-buckets must be an integer from 1 to %d", S3_MAX_BUCKETS);
		return AIS_OK;
	}
	if (http_query_get(req, "continuation-token", &tok) && tok.len && s3_token_decode(req, tok, &after) != AIS_OK) {
		s3_error(r, "InvalidArgument", "The continuation token provided is incorrect");
		return AIS_OK;
	}

	struct lsb_entry *es = NULL;
	size_t n = 0;
	if (r->node.cl) {
		const bmd_t *bmd;
		cluster_read_lock(r->node.cl, NULL, &bmd);
		const char *uid = s3_requester(r);
		es = xcalloc(bmd ? bmd_size(bmd) + 1 : 1, sizeof(*es));
		for (size_t i = 0; bmd && i < bmd_size(bmd); i++) {
			const bmd_bucket_t *bk = bmd_bucket(bmd, i);
			/* the requester's buckets and those without an S3 owner */
			if (!uid || (!authz_enabled() && bk->props.s3owner[0] && strcmp(uid, bk->props.s3owner)))
				continue;
			snprintf(es[n].name, sizeof(es[n].name), "%s", bk->name);
			snprintf(es[n].region, sizeof(es[n].region), "%s", region_code(bk->props.region));
			es[n++].created_ns = bk->props.created_ns;
		}
		cluster_read_unlock(r->node.cl);
	} else if (r->node.store) {
		store_bucket_t *bs = NULL;
		size_t nb = 0;
		if (store_bucket_list(r->node.store, &bs, &nb) != AIS_OK) {
			s3_error_errno(r, errno, false);
			return AIS_OK;
		}
		es = xcalloc(nb + 1, sizeof(*es));
		for (; n < nb; n++) {
			snprintf(es[n].name, sizeof(es[n].name), "%s", bs[n].name);
			snprintf(es[n].region, sizeof(es[n].region), "%s", r->node.conf->s3_region);
			es[n].created_ns = bs[n].created_ns;
		}
		free(bs);
	}
	qsort(es, n, sizeof(*es), lsb_cmp);

	buf_t b = BUF_INIT;
	char t[40];
	size_t listed = 0, last = 0;
	bool more = false;
	s3_xml_head(&b, "ListAllMyBucketsResult");
	s3_owner_xml(r, &b, "Owner");
	buf_addstr(&b, "<Buckets>");
	for (size_t i = 0; i < n; i++) {
		if (strncmp(es[i].name, prefix.ptr ? prefix.ptr : "", prefix.len) ||
		    (want_region.len && !sv_eqstr(want_region, es[i].region)) ||
		    (after.len && name_cmp_sv(es[i].name, after) <= 0))
			continue;
		if (paged && listed == max) {
			more = true;
			break;
		}
		s3_time_iso(es[i].created_ns, t, sizeof(t));
		buf_addstr(&b, "<Bucket>");
		s3_xml_elemstr(&b, "Name", es[i].name);
		s3_xml_elemstr(&b, "CreationDate", t);
		s3_xml_elemstr(&b, "BucketRegion", es[i].region);
		buf_addstr(&b, "</Bucket>");
		listed++;
		last = i;
	}
	buf_addstr(&b, "</Buckets>");
	if (more)
		s3_token_xml(&b, "ContinuationToken", sv_from(es[last].name));
	if (s3_query_has(req, "prefix"))
		s3_xml_elem(&b, "Prefix", prefix.ptr, prefix.len);
	s3_xml_close(&b, "ListAllMyBucketsResult");
	free(es);
	s3_send_xml(r, 200, &b);
	return AIS_OK;
}

/* --- create / delete ------------------------------------------------------------- */

struct bop {
	s3_rq_t *r;
	bool create;
	bool set_acl; /* PutBucketAcl: props.s3acl */
	bool set_tags; /* Put/DeleteBucketTagging: props.s3tags */
	int status;    /* set_tags: the answer's status (200 or 204) */
	bool set_hist; /* PutBucketVersioning: props.history */
	bool set_lock; /* PutObjectLockConfiguration: props.s3lock */
	bool set_pab;  /* Put/DeletePublicAccessBlock: props.s3pab (status as set_tags) */
	bool set_doc;  /* Put/Delete of a document (bmd_doc): doc (NULL: remove; status as set_tags) */
	bmd_doc_kind_t kind; /* set_doc, and create with doc: which */
	const char *doc;     /* (the request's arena; create: the object ownership or NULL) */
	char name[NAME_BUCKET_MAX + 1];
	bmd_props_t props;
	int err;        /* errno of the change */
	bool not_empty; /* delete: the bucket has objects */
	buf_t msg;
};

/* a change of a property (not create or destroy) */
#define SETS(o) ((o)->set_acl || (o)->set_tags || (o)->set_hist || (o)->set_lock || (o)->set_pab || (o)->set_doc)

static void bop_cleanup(void *arg) { buf_free(&((struct bop *)arg)->msg); }

static int bmd_change(cmap_t *m, bmd_t *b, void *arg, buf_t *err)
{
	struct bop *o = arg;
	if (o->create) {
		if (bmd_add(b, o->name, strlen(o->name), &o->props, err) != AIS_OK)
			return AIS_ERR;
		return o->doc ? bmd_set_doc(b, o->kind, o->name, strlen(o->name), o->doc, strlen(o->doc), err) : AIS_OK;
	}
	if (o->set_acl) {
		const bmd_bucket_t *bk = bmd_get(b, o->name, strlen(o->name));
		if (!bk) {
			errno = ENOENT;
			return AIS_ERR;
		}
		bmd_props_t p = bk->props;
		p.s3acl_set = true;
		memcpy(p.s3acl, o->props.s3acl, sizeof(p.s3acl));
		return bmd_set_props(b, o->name, strlen(o->name), &p, err);
	}
	if (o->set_doc)
		return bmd_set_doc(b, o->kind, o->name, strlen(o->name), o->doc, o->doc ? strlen(o->doc) : 0, err);
	if (o->set_tags || o->set_hist || o->set_lock || o->set_pab) {
		const bmd_bucket_t *bk = bmd_get(b, o->name, strlen(o->name));
		if (!bk) {
			errno = ENOENT;
			return AIS_ERR;
		}
		bmd_props_t p = bk->props;
		if (o->set_tags)
			memcpy(p.s3tags, o->props.s3tags, sizeof(p.s3tags));
		else if (o->set_lock)
			memcpy(p.s3lock, o->props.s3lock, sizeof(p.s3lock));
		else if (o->set_pab)
			p.s3pab = o->props.s3pab;
		else
			p.history = o->props.history;
		return bmd_set_props(b, o->name, strlen(o->name), &p, err);
	}
	return bmd_remove(b, o->name, strlen(o->name), err);
}

/* The native call to the primary (which pushes the BMD before it answers). */
static void via_primary(struct bop *o)
{
	char url[CMAP_URL_MAX + NAME_BUCKET_MAX + 32];
	char base[CMAP_URL_MAX + 1];
	buf_t resp = BUF_INIT;
	int status = 0;
	static const char *const hdrs[] = {"Content-Type: application/json", NULL};
	buf_t body = BUF_INIT;
	const bmd_props_t *p = &o->props;

	if (o->set_hist) {
		buf_addf(&body, "{\"action\":\"set-bprops\",\"value\":{\"versioning\":{\"history\":\"%s\"}}}",
			 bmd_history_name(p->history));
	} else if (o->set_acl) {
		buf_addstr(&body, "{\"action\":\"set-bprops\",\"value\":{\"s3\":{\"acl\":");
		buf_add_json_str(&body, p->s3acl, strlen(p->s3acl));
		buf_addstr(&body, "}}}");
	} else if (o->set_tags) {
		buf_addstr(&body, "{\"action\":\"set-bprops\",\"value\":{\"s3\":{\"tags\":");
		buf_add_json_str(&body, p->s3tags, strlen(p->s3tags));
		buf_addstr(&body, "}}}");
	} else if (o->set_lock) { /* letters, digits and ':' (bmd_s3lock_valid) */
		buf_addf(&body, "{\"action\":\"set-bprops\",\"value\":{\"s3\":{\"lock\":\"%s\"}}}", p->s3lock);
	} else if (o->set_pab) {
		buf_addf(&body, "{\"action\":\"set-bprops\",\"value\":{\"s3\":{\"pab\":%u}}}", p->s3pab);
	} else if (o->set_doc) { /* (a key of letters) */
		buf_addf(&body, "{\"action\":\"set-bprops\",\"value\":{\"s3\":{\"%s\":", bmd_doc_key(o->kind));
		buf_add_json_str(&body, o->doc ? o->doc : "", o->doc ? strlen(o->doc) : 0);
		buf_addstr(&body, "}}}");
	} else if (!o->create) {
		buf_addstr(&body, "{\"action\":\"destroy-bck\"}");
	} else {
		/* region: [A-Za-z0-9-], no JSON escaping needed; us-east-1 (the
		 * empty one) is the default and not sent */
		const char *sep = "";
		buf_addstr(&body, "{\"action\":\"create-bck\",\"value\":{\"s3\":{");
		if (p->region[0]) {
			buf_addf(&body, "\"region\":\"%s\"", p->region);
			sep = ",";
		}
		if (p->s3owner[0]) {
			buf_addf(&body, "%s\"owner\":", sep);
			buf_add_json_str(&body, p->s3owner, strlen(p->s3owner));
			sep = ",";
		}
		if (p->s3acl_set) {
			buf_addf(&body, "%s\"acl\":", sep);
			buf_add_json_str(&body, p->s3acl, strlen(p->s3acl));
			sep = ",";
		}
		if (p->s3lock[0]) {
			buf_addf(&body, "%s\"lock\":\"%s\"", sep, p->s3lock);
			sep = ",";
		}
		if (o->doc) { /* (a key of letters) */
			buf_addf(&body, "%s\"%s\":", sep, bmd_doc_key(o->kind));
			buf_add_json_str(&body, o->doc, strlen(o->doc));
		}
		buf_addstr(&body, "}}}");
	}

	if (!cluster_primary_url(o->r->node.cl, base, sizeof(base))) {
		buf_addstr(&o->msg, "no primary gateway known");
		o->err = EAGAIN;
		buf_free(&body);
		return;
	}
	snprintf(url, sizeof(url), "%s/v1/buckets/%s", base, o->name);
	const char *method = SETS(o) ? "PATCH" : o->create ? "POST" : "DELETE";
	int rc = httpc_sync(method, url, hdrs, body.ptr, body.len, 30000, &resp, &status);
	buf_free(&body);
	if (rc != AIS_OK)
		o->err = EIO;
	else if (status == 409)
		o->err = EEXIST;
	else if (status == 404)
		o->err = ENOENT;
	else if (status != 200)
		o->err = EIO;
	if (o->err == EIO)
		buf_addf(&o->msg, "primary %s: %d %.*s", base, status, (int)MIN(resp.len, 200), resp.ptr ? resp.ptr : "");
	buf_free(&resp);
}

static void bop_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct bop *o = r->op;
	s3_node_t *nd = &r->node;

	if (!o->create && !SETS(o)) {
		s3_entry_t *e = NULL;
		size_t n = 0;
		bool more = false;
		/* kept versions and delete markers count, as on S3: a bucket of
		 * locked versions (objlock.c) is never destroyed from under them */
		if (s3_list_page_v(nd, o->name, (sv_t){"", 0}, (sv_t){"", 0}, 1, true, &e, &n, &more, &o->msg) !=
		    AIS_OK) {
			o->err = errno ? errno : EIO;
			return;
		}
		s3_entries_free(e, n);
		if (n || more) {
			o->not_empty = true;
			return;
		}
	}
	if (nd->cl) {
		if (nd->gateway && cluster_is_primary(nd->cl)) {
			if (cluster_update(nd->cl, bmd_change, o, &o->msg) != AIS_OK)
				o->err = errno ? errno : EIO;
		} else {
			via_primary(o);
		}
		return;
	}
	if (SETS(o) || o->props.s3lock[0] || o->doc) {
		/* a standalone target keeps no ACLs, tags, versions, locks or policies */
		o->err = ENOTSUP;
		return;
	}
	int rc = o->create ? store_bucket_create(nd->store, o->name, strlen(o->name), o->props.cksum)
			   : store_bucket_destroy(nd->store, o->name, strlen(o->name));
	if (rc != AIS_OK)
		o->err = errno ? errno : EIO;
}

static void bop_done(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct bop *o = r->op;
	if (o->not_empty) {
		s3_error(r, "BucketNotEmpty", NULL);
	} else if (o->err == EEXIST) {
		s3_error(r, "BucketAlreadyOwnedByYou", NULL);
	} else if (o->err == ENOENT) {
		s3_error(r, "NoSuchBucket", NULL);
	} else if (o->err == ENOTSUP) {
		s3_error(r, "NotImplemented", "a bucket's %s needs a cluster (a gateway)",
			 o->set_tags ? "tags" : o->set_hist ? "versioning" : o->set_doc ? bmd_doc_what(o->kind) :
			 o->set_pab ? "public access block" : o->create && o->doc ? "object ownership" :
			 o->set_lock || o->create ? "object lock" : "ACL");
	} else if (o->err == EAGAIN) {
		s3_error(r, "ServiceUnavailable", "%s", o->msg.ptr); /* no primary; a listing short of targets */
	} else if (o->err) {
		s3_error(r, "InternalError", "%s", o->msg.ptr ? o->msg.ptr : strerror(o->err));
	} else if (o->set_acl || o->set_hist || o->set_lock) {
		s3_common_headers(r);
		http_resp_send(req, "", 0);
	} else if (o->set_tags || o->set_pab || o->set_doc) {
		s3_common_headers(r);
		http_resp_status(req, o->status);
		http_resp_send(req, "", 0);
	} else if (o->create) {
		s3_common_headers(r);
		http_resp_header(req, "Location", "/%s", o->name);
		http_resp_send(req, "", 0);
	} else {
		s3_common_headers(r);
		http_resp_status(req, 204);
		http_resp_send(req, "", 0);
	}
}

static struct bop *bop_new(s3_rq_t *r, bool create)
{
	struct bop *o = arena_zalloc(r->http->arena, sizeof(*o));
	o->r = r;
	o->create = create;
	snprintf(o->name, sizeof(o->name), "%.*s", (int)r->bucket.len, r->bucket.ptr);
	arena_cleanup_add(r->http->arena, bop_cleanup, o);
	r->op = o;
	return o;
}

/* The region this request was sent to: the one it was signed for, else
 * s3.region. */
static const char *endpoint_region(const s3_rq_t *r)
{
	return r->auth.region[0] ? r->auth.region : r->node.conf->s3_region;
}

/* The creator and the ACL asked for into props. AIS_ERR after answering. */
static int owner_acl(s3_rq_t *r, bmd_props_t *p)
{
	s3acl_t *acl = arena_alloc(r->http->arena, sizeof(*acl));
	const char *uid = s3_requester(r);
	bool given;
	buf_t t = BUF_INIT;
	if (s3_acl_from_req(r, uid, NULL, acl, &given) != AIS_OK)
		return AIS_ERR;
	snprintf(p->s3owner, sizeof(p->s3owner), "%s", uid);
	if (s3acl_encode(acl, &t) != AIS_OK || t.len >= sizeof(p->s3acl)) {
		buf_free(&t);
		s3_error(r, "InvalidArgument", "the ACL is over %d bytes", S3ACL_TEXT_MAX);
		return AIS_ERR;
	}
	memcpy(p->s3acl, t.ptr ? t.ptr : "", t.len);
	p->s3acl_set = true;
	buf_free(&t);
	return AIS_OK;
}

void s3_bucket_set_acl(s3_rq_t *r, const s3acl_t *acl)
{
	struct bop *o = bop_new(r, false);
	buf_t t = BUF_INIT;
	o->set_acl = true;
	if (s3acl_encode(acl, &t) != AIS_OK || t.len >= sizeof(o->props.s3acl)) {
		buf_free(&t);
		s3_error(r, "InvalidArgument", "the ACL is over %d bytes", S3ACL_TEXT_MAX);
		return;
	}
	memcpy(o->props.s3acl, t.ptr ? t.ptr : "", t.len);
	buf_free(&t);
	r->http->state = r;
	s3_offload(r, bop_work, bop_done);
}

/* --- bucket tags: props.s3tags in the BMD, changed through the primary --------------- */

/* The bucket's tags into t; AIS_ERR: no such bucket. */
static int bucket_tags(s3_rq_t *r, s3_tags_t *t)
{
	memset(t, 0, sizeof(*t));
	if (!r->node.cl)
		return s3_bucket_exists(r) ? AIS_OK : AIS_ERR; /* a standalone target keeps none */
	const bmd_t *b;
	char *text = NULL;
	cluster_read_lock(r->node.cl, NULL, &b);
	const bmd_bucket_t *bk = b ? bmd_get(b, r->bucket.ptr, r->bucket.len) : NULL;
	if (bk)
		text = arena_strndup(r->http->arena, bk->props.s3tags, strlen(bk->props.s3tags));
	cluster_read_unlock(r->node.cl);
	if (!bk)
		return AIS_ERR;
	if (s3_tags_from_query(r->http->arena, sv_from(text), t) != AIS_OK)
		t->n = 0; /* (bmd_props_check keeps it printable; PUT wrote it encoded) */
	return AIS_OK;
}

static void set_tags(s3_rq_t *r, const s3_tags_t *t, int status)
{
	struct bop *o = bop_new(r, false);
	buf_t q = BUF_INIT;
	o->set_tags = true;
	o->status = status;
	for (size_t i = 0; i < t->n; i++) {
		if (i)
			buf_addch(&q, '&');
		buf_add_pct(&q, sv_from(t->t[i].key), false);
		buf_addch(&q, '=');
		buf_add_pct(&q, sv_from(t->t[i].value), false);
	}
	if (q.len > BMD_S3TAGS_MAX) {
		buf_free(&q);
		s3_error(r, "InvalidTag", "the bucket's tags are over %d bytes URL-encoded", BMD_S3TAGS_MAX);
		return;
	}
	memcpy(o->props.s3tags, q.ptr ? q.ptr : "", q.len);
	buf_free(&q);
	r->http->state = r;
	s3_offload(r, bop_work, bop_done);
}

void s3_bucket_set_lock(s3_rq_t *r, const char *conf)
{
	struct bop *o = bop_new(r, false);
	o->set_lock = true;
	snprintf(o->props.s3lock, sizeof(o->props.s3lock), "%s", conf);
	r->http->state = r;
	s3_offload(r, bop_work, bop_done);
}

void s3_bucket_set_doc(s3_rq_t *r, bmd_doc_kind_t kind, const char *text, int status)
{
	struct bop *o = bop_new(r, false);
	o->set_doc = true;
	o->kind = kind;
	o->doc = text;
	o->status = status;
	r->http->state = r;
	s3_offload(r, bop_work, bop_done);
}

void s3_bucket_set_pab(s3_rq_t *r, unsigned pab, int status)
{
	struct bop *o = bop_new(r, false);
	o->set_pab = true;
	o->props.s3pab = (uint8_t)pab;
	o->status = status;
	r->http->state = r;
	s3_offload(r, bop_work, bop_done);
}

void s3_bucket_set_history(s3_rq_t *r, unsigned history)
{
	struct bop *o = bop_new(r, false);
	o->set_hist = true;
	o->props.history = (uint8_t)history;
	r->http->state = r;
	s3_offload(r, bop_work, bop_done);
}

static void tags_body(s3_rq_t *r, buf_t *body)
{
	s3_tags_t *t = arena_alloc(r->http->arena, sizeof(*t));
	if (s3_tags_from_xml(r->http->arena, body->ptr ? body->ptr : "", body->len, t) != AIS_OK) {
		s3_error(r, "MalformedXML", NULL);
		return;
	}
	const char *why = s3_tags_check(t, S3_BUCKET_TAGS_MAX);
	if (why) {
		s3_error(r, "InvalidTag", "%s", why);
		return;
	}
	set_tags(r, t, 200);
}

int s3_bucket_tagging(s3_rq_t *r)
{
	s3_tags_t *t = arena_alloc(r->http->arena, sizeof(*t));
	buf_t b = BUF_INIT;
	if (bucket_tags(r, t) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	switch (r->http->method) {
	case HTTP_GET:
		if (!t->n) {
			s3_error(r, "NoSuchTagSet", "The TagSet does not exist");
			return AIS_OK;
		}
		s3_tags_xml(t, &b);
		s3_send_xml(r, 200, &b);
		return AIS_OK;
	case HTTP_PUT:
		s3_read_body(r, tags_body);
		return AIS_OK;
	case HTTP_DELETE:
		t->n = 0;
		set_tags(r, t, 204);
		return AIS_OK;
	default:
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
}

/* x-amz-object-ownership: the bucket's ownership controls, set with it
 * (ownop.c); with BucketOwnerEnforced its ACL must be its owner's alone.
 * AIS_ERR after answering. */
static int create_ownership(s3_rq_t *r, struct bop *o)
{
	sv_t v = http_req_header(r->http, "x-amz-object-ownership");
	s3acl_t *acl;
	if (!v.ptr)
		return AIS_OK;
	v = sv_trim(v);
	s3acl_own_t own = s3acl_own_parse(v.ptr, v.len);
	if (own == S3ACL_OWN_NONE) {
		s3_error(r, "InvalidArgument", "x-amz-object-ownership is ObjectWriter, BucketOwnerPreferred or "
					       "BucketOwnerEnforced");
		return AIS_ERR;
	}
	acl = arena_alloc(r->http->arena, sizeof(*acl));
	if (own == S3ACL_OWN_OWNER_ENFORCED &&
	    (s3acl_decode(o->props.s3acl, strlen(o->props.s3acl), acl) != AIS_OK ||
	     !s3acl_owner_only(acl, o->props.s3owner))) {
		s3_error(r, "InvalidBucketAclWithObjectOwnership", NULL);
		return AIS_ERR;
	}
	o->kind = BMD_DOC_OWNERSHIP;
	o->doc = s3acl_own_name(own);
	return AIS_OK;
}

static void create_body(s3_rq_t *r, buf_t *body)
{
	struct bop *o = r->op;
	const char *ep = endpoint_region(r);
	bool global = !strcmp(ep, "us-east-1");
	sv_t loc = {"", 0};
	const char *other = NULL;
	if (body->len && s3_parse_create_bucket(r->http->arena, body->ptr, body->len, &loc, &other) != AIS_OK) {
		s3_error(r, "MalformedXML", NULL);
		return;
	}
	if (other) { /* never accepted and ignored (nyi.c) */
		s3_error(r, "NotImplemented", "CreateBucketConfiguration/%s is not implemented", other);
		return;
	}
	if (loc.len && !bmd_region_valid(loc.ptr, loc.len)) {
		s3_error(r, "InvalidLocationConstraint", NULL);
		return;
	}
	if (!body->len) {
		/* no configuration: the endpoint's region */
		loc = bmd_region_valid(ep, strlen(ep)) ? sv_from(ep) : (sv_t){"", 0};
	} else if (!loc.len && !global) {
		s3_error(r, "IllegalLocationConstraintException",
			 "The unspecified location constraint is incompatible for the region specific endpoint "
			 "this request was sent to.");
		return;
	} else if (loc.len && !global && !sv_eqstr(loc, ep)) {
		s3_error(r, "IllegalLocationConstraintException",
			 "The %.*s location constraint is incompatible for the region specific endpoint this "
			 "request was sent to.",
			 (int)loc.len, loc.ptr);
		return;
	}
	bmd_props_default(&o->props);
	if (store_cksum_parse(r->node.conf->checksum, strlen(r->node.conf->checksum), &o->props.cksum) != AIS_OK)
		o->props.cksum = CKSUM_XXHASH;
	if (!sv_eqstr(loc, "us-east-1")) /* us-east-1 is the empty constraint */
		memcpy(o->props.region, loc.ptr, MIN(loc.len, BMD_REGION_MAX));
	if (owner_acl(r, &o->props) != AIS_OK || create_ownership(r, o) != AIS_OK)
		return;
	if (sv_eqcase(sv_trim(http_req_header(r->http, "x-amz-bucket-object-lock-enabled")), SV("true"))) {
		snprintf(o->props.s3lock, sizeof(o->props.s3lock), "Enabled"); /* objlock.c: with versioning */
		o->props.history = BMD_HIST_ENABLED;
	}
	r->http->state = r;
	s3_offload(r, bop_work, bop_done);
}

/* CreateBucket of an existing bucket (see the top). */
static int recreate(s3_rq_t *r)
{
	s3_bacl_t b;
	s3acl_t *want = arena_alloc(r->http->arena, sizeof(*want)), have;
	const char *uid = s3_requester(r);
	bool given;
	buf_t x = BUF_INIT, y = BUF_INIT;

	if (s3_bucket_acl_get(r, r->bucket, &b) != AIS_OK || !uid || strcmp(uid, b.owner)) {
		s3_error(r, "BucketAlreadyExists", NULL);
		return AIS_OK;
	}
	if (strcmp(endpoint_region(r), "us-east-1")) {
		s3_error(r, "BucketAlreadyOwnedByYou", NULL);
		return AIS_OK;
	}
	if (s3_acl_from_req(r, uid, NULL, want, &given) != AIS_OK)
		return AIS_OK;
	s3_bucket_acl_effective(&b, &have);
	s3acl_encode(want, &x);
	s3acl_encode(&have, &y);
	bool same = x.len == y.len && (!x.len || !memcmp(x.ptr, y.ptr, x.len));
	buf_free(&x);
	buf_free(&y);
	if (!same) {
		s3_error(r, "BucketAlreadyExists", NULL);
		return AIS_OK;
	}
	s3_common_headers(r);
	http_resp_header(r->http, "Location", "/%.*s", (int)r->bucket.len, r->bucket.ptr);
	http_resp_send(r->http, "", 0);
	return AIS_OK;
}

static int create_bucket(s3_rq_t *r)
{
	if (!s3_bucket_name_valid(r->bucket) || sv_eqstr(r->bucket, "v1") || sv_eqstr(r->bucket, "s3")) {
		s3_error(r, "InvalidBucketName", "bucket names are 3 to 63 of a-z 0-9 . - starting and "
						"ending with a letter or digit");
		return AIS_OK;
	}
	if (r->node.cl && s3_bucket_exists(r))
		return recreate(r);
	bop_new(r, true);
	s3_read_body(r, create_body);
	return AIS_OK;
}

/* --- the rest ---------------------------------------------------------------------- */

/* The bucket's LocationConstraint ("" = us-east-1): from the BMD, or
 * s3.region on a standalone target. */
static void bucket_region(s3_rq_t *r, char *out, size_t outsz)
{
	const char *region = r->node.conf->s3_region;
	snprintf(out, outsz, "%s", strcmp(region, "us-east-1") ? region : "");
	if (r->node.cl) {
		const bmd_t *b;
		cluster_read_lock(r->node.cl, NULL, &b);
		const bmd_bucket_t *bk = b ? bmd_get(b, r->bucket.ptr, r->bucket.len) : NULL;
		if (bk)
			snprintf(out, outsz, "%s", bk->props.region);
		cluster_read_unlock(r->node.cl);
	}
}

static void location(s3_rq_t *r)
{
	buf_t b = BUF_INIT;
	char region[64];
	bucket_region(r, region, sizeof(region));
	s3_xml_head(&b, NULL);
	buf_addstr(&b, "<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	s3_xml_text(&b, region, strlen(region));
	buf_addstr(&b, "</LocationConstraint>");
	s3_send_xml(r, 200, &b);
}

int s3_bucket(s3_rq_t *r)
{
	http_req_t *req = r->http;
	sv_t lt;

	if (req->method == HTTP_PUT)
		return create_bucket(r);
	if (!s3_bucket_exists(r)) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	switch (req->method) {
	case HTTP_HEAD: {
		char region[64];
		bucket_region(r, region, sizeof(region));
		s3_common_headers(r);
		http_resp_header(req, "x-amz-bucket-region", "%s", region_code(region));
		http_resp_send_head(req, 0);
		return AIS_OK;
	}
	case HTTP_DELETE:
		bop_new(r, false);
		s3_offload(r, bop_work, bop_done);
		return AIS_OK;
	case HTTP_GET:
		break;
	default:
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
	if (s3_query_has(req, "location")) {
		location(r);
		return AIS_OK;
	}
	if (s3_query_has(req, "uploads"))
		return s3_mpu_list_uploads(r);
	if (s3_query_has(req, "versions"))
		return s3_history(r) != BMD_HIST_OFF ? s3_list_versions(r) : s3_list_objects(r, 0);
	if (http_query_get(req, "list-type", &lt)) {
		if (!sv_eqstr(lt, "2")) {
			s3_error(r, "InvalidArgument", "list-type must be 2");
			return AIS_OK;
		}
		return s3_list_objects(r, 2);
	}
	return s3_list_objects(r, 1);
}
