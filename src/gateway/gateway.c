/*
 * gateway.c - the gateway's routes (see gateway.h): redirects for objects,
 * buckets from the BMD and through the primary, list fan-out and merge.
 *
 * Listing: every active target is asked for one page after the same
 * continuation token, all at once (cluster_call_all: a page costs the
 * slowest target, not the sum); the union's first PAGESIZE distinct names
 * in byte order are the cluster's page, because every name of it is among the
 * first PAGESIZE of each target holding it (copies of a mirrored object
 * are listed once). The token is the last name returned, as on a target.
 * A page is never silently short: when the targets not heard from (no
 * answer, or lost from the map) may hold the only copies of some names
 * (cluster_lsfan), it is a 503 naming them, or, asked for with partial,
 * a page marked "partial" with the "missing" targets.
 *
 * Locations (props "location"): each target lists itself on the copies it
 * holds, and the merge joins them, so an entry names every active target
 * that held a copy when it was asked. During a rebalance that is where the
 * bytes are, not where HRW will put them: a copy still on its old holder
 * is listed there until the rebalance deletes it (only after every new
 * holder has it), a copy in flight only once committed. A read sent to a
 * listed target that dropped its copy meanwhile is redirected (or
 * fetched) as any other read: a location is a hint for where to read
 * cheaply, never needed for a correct read.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/authz.h"
#include "aisd/gateway.h"
#include "aisd/jobs.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/place.h"
#include "aisd/s3.h"
#include "aisd/moss.h"
#include "aisd/backend.h"
#include "aisd/etl.h"
#include "aisd/status.h"
#include "aisd/target.h"
#include "aisd/util.h"
#include "gw_int.h"
#include "aisd/banned.h"

#define LIST_PAGE_DEFAULT 1000
#define LIST_PAGE_MAX 10000
#define MEMBERS_KEY "\x01members" /* a shard's members while pages merge */
#define M(x) HTTP_M(HTTP_##x)

/* 307 to base_url with the same path and query (signed: authz.h). */
static void redirect(http_req_t *req, const char *base_url) { authz_redirect(req, base_url); }


static int gw_objects(http_req_t *req)
{
	cluster_t *cl = cl_of(req);
	sv_t bck, obj;
	cluster_where_t w;

	if (tgt_parse_names(req, &bck, &obj, true) != AIS_OK)
		return AIS_OK;
	if (!cl) {
		http_resp_error(req, 503, "the gateway is starting");
		return AIS_OK;
	}
	cluster_where(cl, bck, obj, false, &w, NULL, 0);
	if (!w.bucket)
		http_resp_error(req, 404, "bucket \"%.*s\" does not exist", (int)bck.len, bck.ptr);
	else if (!w.n)
		http_resp_error(req, 503, "no active target in the cluster");
	else
		redirect(req, w.owner);
	return AIS_OK;
}

/* --- buckets ---------------------------------------------------------------- */

static void bop_cleanup(void *arg)
{
	struct bop *o = arg;
	buf_free(&o->msg);
	buf_free(&o->out);
	json_decref(o->value);
	json_decref(o->patch);
	json_decref(o->ishard);
	json_decref(o->missing);
}

/* A bucket's S3 documents ("s3": {"policy": TEXT, "cors": XML}, ""
 * removes one) of create-bck's or set-bprops' value: they live beside
 * the props (bmd_doc). */
static int set_docs(bmd_t *b, struct bop *o, buf_t *err)
{
	for (unsigned d = 0; d < BMD_DOC_KINDS; d++) {
		json_t *doc = json_object_get(json_object_get(o->patch, "s3"), bmd_doc_key(d));
		if (doc && bmd_set_doc(b, d, o->name, strlen(o->name),
				       json_string_length(doc) ? json_string_value(doc) : NULL, json_string_length(doc),
				       err) != AIS_OK)
			return AIS_ERR;
	}
	return AIS_OK;
}

static int bucket_update(cmap_t *m, bmd_t *b, void *arg, buf_t *err)
{
	struct bop *o = arg;
	switch (o->kind) {
	case BOP_CREATE:
		if (bmd_add(b, o->name, strlen(o->name), &o->props, err) != AIS_OK)
			return AIS_ERR;
		return set_docs(b, o, err);
	case BOP_DESTROY:
		if (o->nonempty) { /* (asked only of a bucket with S3 object lock) */
			buf_addstr(err, "a bucket with S3 object lock is destroyed only once it holds no version");
			errno = ENOTEMPTY;
			return AIS_ERR;
		}
		return bmd_remove(b, o->name, strlen(o->name), err);
	case BOP_SET_PROPS:
		break;
	}
	/* set-bprops applies to the props of this BMD version, so concurrent
	 * changes of other fields are not lost. */
	const bmd_bucket_t *bk = bmd_get(b, o->name, strlen(o->name));
	if (!bk) {
		errno = ENOENT;
		return AIS_ERR;
	}
	bmd_props_t p = bk->props;
	json_t *pe = json_object_get(json_object_get(o->patch, "ec"), "enabled");
	if (o->encode && json_is_true(pe) && !json_object_get(o->patch, "mirror"))
		p.mirror_enabled = false; /* ec-encode from copies to slices */
	if (bmd_props_patch(&p, o->patch, err) != AIS_OK)
		return AIS_ERR;
	if (set_docs(b, o, err) != AIS_OK)
		return AIS_ERR;
	size_t targets = cmap_count(m, CMAP_TARGET, CMAP_ANY);
	if (p.mirror_enabled && p.mirror_copies > targets) {
		buf_addf(err, "mirror.copies %u is more than the %zu targets of the cluster", p.mirror_copies,
			 targets);
		errno = EINVAL;
		return AIS_ERR;
	}
	if (p.ec_enabled && p.ec_data + p.ec_parity > targets) {
		buf_addf(err, "ec.data_slices + ec.parity_slices (%u + %u) need as many targets, the cluster has %zu",
			 p.ec_data, p.ec_parity, targets);
		errno = EINVAL;
		return AIS_ERR;
	}
	if (o->encode && !bmd_ec_differs(&p, &bk->props)) {
		buf_addf(err, "ec-encode: the bucket has that erasure-coding layout already");
		errno = EINVAL;
		return AIS_ERR;
	}
	if (bmd_ec_differs(&p, &bk->props) && o->nonempty && !o->encode) {
		buf_addf(err, "the erasure-coding layout (ec.*) changes only while the bucket is empty, or through "
			      "the re-encode job (ec-encode); it holds objects");
		errno = ENOTEMPTY;
		return AIS_ERR;
	}
	return bmd_set_props(b, o->name, strlen(o->name), &p, err);
}

/* Does any active target hold an object of the bucket (versions: or a
 * kept version, olver.h)? (A list of one entry on each; a target that
 * does not answer counts as holding some.) The gateway's own question, as
 * a peer: a bucket whose access leaves out LIST answers it too (authz.h
 * rule 1). */
static bool bucket_nonempty(cluster_t *cl, const char *name, bool versions)
{
	const cmap_t *m;
	buf_t body = BUF_INIT;
	bool any = false;
	buf_addstr(&body, "{\"action\":\"list\",\"value\":{\"pagesize\":1,\"props\":\"name\"}}");
	cluster_read_lock(cl, &m, NULL);
	cluster_call_t *calls = xcalloc(cmap_size(m) + 1, sizeof(*calls));
	size_t n = 0;
	for (size_t i = 0; i < cmap_size(m); i++) {
		const cmap_node_t *nd = cmap_node(m, i);
		if (nd->role != CMAP_TARGET || nd->state != CMAP_ACTIVE)
			continue;
		snprintf(calls[n].url, sizeof(calls[n].url), "%s/v1/buckets/%s%s", nd->intra_url, name,
			 versions ? "?versions=true" : "");
		calls[n].method = "GET";
		calls[n].body = &body;
		calls[n].hdr = "Ais-Intra: list";
		calls[n++].timeout_ms = 10000;
	}
	cluster_read_unlock(cl);
	cluster_call_all(calls, n);
	for (size_t i = 0; i < n; i++) {
		json_t *doc = calls[i].status == 200 ? json_loadb(calls[i].resp.ptr, calls[i].resp.len, 0, NULL) : NULL;
		json_t *e = json_object_get(doc, "entries");
		if (calls[i].status != 404 && (!json_is_array(e) || json_array_size(e)))
			any = true;
		json_decref(doc);
		buf_free(&calls[i].resp);
	}
	free(calls);
	buf_free(&body);
	return any;
}

/* The backend a set-bprops gives the bucket when it names another remote
 * bucket than the bucket has (provider, remote or bucket changed, not
 * "none"): true with *be. */
static bool bprops_new_backend(cluster_t *cl, struct bop *o, bmd_backend_t *be)
{
	const bmd_t *b;
	bool changed = false;
	if (!json_is_object(json_object_get(o->patch, "backend")))
		return false;
	cluster_read_lock(cl, NULL, &b);
	const bmd_bucket_t *k = b ? bmd_get(b, o->name, strlen(o->name)) : NULL;
	if (k) {
		bmd_props_t p = k->props;
		buf_t err = BUF_INIT;
		if (bmd_props_patch(&p, o->patch, &err) == AIS_OK && p.backend.provider[0] &&
		    (strcmp(p.backend.provider, k->props.backend.provider) ||
		     strcmp(p.backend.remote, k->props.backend.remote) ||
		     strcmp(p.backend.bucket, k->props.backend.bucket))) {
			*be = p.backend;
			changed = true;
		}
		buf_free(&err);
	}
	cluster_read_unlock(cl);
	return changed;
}

/* Has the bucket S3 object lock (bmd.h props.s3lock)? */
static bool bucket_locked(cluster_t *cl, const char *name)
{
	const bmd_t *b;
	cluster_read_lock(cl, NULL, &b);
	const bmd_bucket_t *bk = b ? bmd_get(b, name, strlen(name)) : NULL;
	bool locked = bk && bk->props.s3lock[0];
	cluster_read_unlock(cl);
	return locked;
}

static void bucket_work(http_req_t *req)
{
	struct bop *o = req->state;
	bmd_backend_t nb;
	/* a bucket's new backend names an attached remote and a bucket it has
	 * (or the change fails saying it could not check: backend.h) */
	if ((o->kind == BOP_CREATE && o->props.backend.provider[0] &&
	     bk_backend_check(&o->props.backend, &o->msg) != AIS_OK) ||
	    (o->kind == BOP_SET_PROPS && bprops_new_backend(cl_of(req), o, &nb) &&
	     bk_backend_check(&nb, &o->msg) != AIS_OK)) {
		o->err = errno ? errno : EIO;
		return;
	}
	if (o->kind == BOP_SET_PROPS && json_object_get(o->patch, "ec") && !o->encode)
		o->nonempty = bucket_nonempty(cl_of(req), o->name, false);
	if (o->kind == BOP_DESTROY && bucket_locked(cl_of(req), o->name))
		o->nonempty = bucket_nonempty(cl_of(req), o->name, true);
	if (cluster_update(cl_of(req), bucket_update, o, &o->msg) != AIS_OK)
		o->err = errno ? errno : EIO;
}

static void bucket_done(http_req_t *req)
{
	struct bop *o = req->state;
	if (o->err) {
		buf_t what = BUF_INIT, m = BUF_INIT;
		buf_addf(&what, "bucket \"%s\"", o->name);
		ais_errno_msg(&m, ais_errno(o->err), o->err, what.ptr, o->msg.ptr);
		http_resp_error(req, ais_errno_status(o->err), "%s", m.ptr);
		buf_free(&what);
		buf_free(&m);
	} else {
		http_resp_send(req, "", 0);
	}
}

static void redirect_primary(http_req_t *req, cluster_t *cl)
{
	char url[CMAP_URL_MAX + 1];
	if (cluster_primary_url(cl, url, sizeof(url)))
		redirect(req, url);
	else
		http_resp_error(req, 503, "no primary gateway known");
}

/* set-bprops declares, besides the bucket (admin, authz_check), what its
 * value changes: any property but "access" itself needs the bucket's
 * access property to allow PATCH (authz.h rule 1a; "access" alone stays
 * possible, or a locked bucket could never be unlocked); and the bucket's
 * backend when the value names one (provider, remote, bucket): where a
 * bucket's data comes from, with the cluster's credentials for that
 * remote, is a cluster administrator's to change (authz.h rule 2);
 * validate_warm_get and sync stay the bucket admin's. One decision over
 * both; false after answering 403. */
static bool bprops_allowed(http_req_t *req, const char *name, json_t *value)
{
	authz_res_t res[2];
	size_t n = 0;
	json_t *bk = json_object_get(value, "backend");
	if (json_object_size(value) > (json_object_get(value, "access") ? 1u : 0u))
		res[n++] = (authz_res_t){.bucket = sv_from(name), .object = {"", 0}, .perm = AUTH_ADMIN,
					 .op = BMD_ACCESS_PATCH};
	if (json_is_object(bk) &&
	    (json_object_get(bk, "provider") || json_object_get(bk, "remote") || json_object_get(bk, "bucket")))
		res[n++] = (authz_res_t){.bucket = sv_from(name), .object = {"", 0}, .perm = AUTHZ_CLUSTER,
					 .role = "changing the bucket's backend"};
	return !n || authz_request(req, res, n);
}

/* A bucket job (a cluster administrator's, authz_check) declares what it
 * does to the bucket (op: BMD_ACCESS_*), which the bucket's access
 * property must allow. false after 403. */
bool gw_job_allowed(http_req_t *req, const char *name, unsigned op, const char *role)
{
	authz_res_t res = {.bucket = sv_from(name), .object = {"", 0}, .perm = AUTHZ_CLUSTER, .op = op, .role = role};
	return authz_request(req, &res, 1);
}

/* set-bprops and ec-encode: on the primary (else a redirect to it). */
static void set_props_start(http_req_t *req, cluster_t *cl, struct bop *o, json_t *value)
{
	if (!cluster_is_primary(cl)) {
		redirect_primary(req, cl);
		return;
	}
	o->patch = json_incref(value);
	http_offload_net(req, bucket_work, bucket_done);
}

static sv_t entry_name(json_t *e)
{
	json_t *n = json_object_get(e, "name");
	return (sv_t){json_string_value(n) ? json_string_value(n) : "", json_string_length(n)};
}

static int name_cmp(sv_t x, sv_t y)
{
	int c = memcmp(x.ptr, y.ptr, MIN(x.len, y.len));
	return c ? c : (x.len > y.len) - (x.len < y.len);
}

static int entry_cmp(const void *a, const void *b)
{
	return name_cmp(entry_name(*(json_t *const *)a), entry_name(*(json_t *const *)b));
}

/* One target's page while the pages merge: its entries in name order. */
struct list_src {
	json_t **v;
	size_t n, at;
	sv_t head; /* v[at]'s name */
};

static void src_init(struct list_src *s, json_t *arr)
{
	bool sorted = true;
	s->n = json_array_size(arr);
	s->v = xcalloc(s->n + 1, sizeof(*s->v));
	for (size_t i = 0; i < s->n; i++) {
		s->v[i] = json_array_get(arr, i);
		sorted = sorted && (!i || entry_cmp(&s->v[i - 1], &s->v[i]) < 0);
	}
	if (!sorted) /* targets answer in name order; this only guards the merge */
		qsort(s->v, s->n, sizeof(*s->v), entry_cmp);
	s->at = 0;
	if (s->n)
		s->head = entry_name(s->v[0]);
}

/* Merges the targets' pages (k-way: each is sorted) into the first
 * pagesize distinct names; a mirrored object, listed by each target
 * holding a copy, is taken once (the first copy's properties, with the
 * "location" of every copy, in the order of the map's targets). A shard's
 * members (archive listing) come from the first copy that lists them: in
 * a remote bucket every target lists every shard, and only the one that
 * caches it can list its members. *more is set when a name is left over. */
static json_t *list_merge(json_t **pages, size_t n, size_t pagesize, bool *more, json_t **last)
{
	struct list_src *src = xcalloc(n + 1, sizeof(*src));
	json_t *page = json_array();
	size_t k = 0;

	*last = NULL;
	for (size_t i = 0; i < n; i++)
		src_init(&src[i], pages[i]);
	for (;;) {
		struct list_src *min = NULL;
		for (size_t i = 0; i < n; i++)
			if (src[i].at < src[i].n && (!min || name_cmp(src[i].head, min->head) < 0))
				min = &src[i];
		if (!min)
			break;
		if (k == pagesize) {
			*more = true;
			break;
		}
		json_t *e = min->v[min->at];
		json_t *loc = json_object_get(e, "location");
		sv_t name = min->head;
		json_int_t fl = 0; /* a remote bucket's entry is cached if any target has it */
		json_t *mem = NULL; /* a shard's members: from the first copy that lists them */
		for (size_t i = 0; i < n; i++) { /* advance every copy of it; its locations join e's */
			if (src[i].at >= src[i].n || name_cmp(src[i].head, name))
				continue;
			fl |= json_integer_value(json_object_get(src[i].v[src[i].at], "flags"));
			if (!mem)
				mem = json_object_get(src[i].v[src[i].at], MEMBERS_KEY);
			if (&src[i] != min && json_is_array(loc))
				json_array_extend(loc, json_object_get(src[i].v[src[i].at], "location"));
			if (++src[i].at < src[i].n)
				src[i].head = entry_name(src[i].v[src[i].at]);
		}
		if (fl)
			json_object_set_new(e, "flags", json_integer(fl));
		json_incref(mem);
		json_object_del(e, MEMBERS_KEY);
		json_array_append(page, e);
		if (mem)
			json_array_extend(page, mem);
		json_decref(mem);
		*last = e;
		k++;
	}
	for (size_t i = 0; i < n; i++)
		free(src[i].v);
	free(src);
	return page;
}

/* Adds a target's page to its array: each shard's members (archive
 * listing) ride on their shard's entry. Sets *more when the target has
 * more. */
static int list_take(struct bop *o, const cluster_call_t *c, json_t *all, bool *more)
{
	json_t *doc = json_loadb(c->resp.ptr ? c->resp.ptr : "", c->resp.len, 0, NULL);
	json_t *ents = json_object_get(doc, "entries"), *en, *owner = NULL;
	const char *tok = json_string_value(json_object_get(doc, "continuation_token"));
	size_t ei;

	if (c->status != 200) {
		const char *msg = json_string_value(json_object_get(doc, "message"));
		if (c->status)
			buf_addf(&o->msg, "%s", msg ? msg : "target error");
		else
			buf_addf(&o->msg, "%s", c->resp.ptr ? c->resp.ptr : "no answer");
		/* a remote bucket's remote failed (the target's answer names
		 * it): passed on with its status (status.h) */
		int re = json_is_string(json_object_get(doc, "remote")) ? ais_errno_of_remote(c->status) : 0;
		o->err = re ? re : c->status == 404 ? ENOENT : c->status == 400 ? EINVAL : EIO;
		json_decref(doc);
		return AIS_ERR;
	}
	if (!json_is_array(ents)) {
		buf_addf(&o->msg, "%s: bad listing", c->url);
		o->err = EIO;
		json_decref(doc);
		return AIS_ERR;
	}
	json_array_foreach(ents, ei, en) {
		json_t *fl = json_object_get(en, "flags");
		if (owner && json_is_integer(fl) && (json_integer_value(fl) & TGT_ENTRY_IN_ARCH)) {
			json_t *mem = json_object_get(owner, MEMBERS_KEY);
			if (!mem)
				json_object_set_new(owner, MEMBERS_KEY, mem = json_array());
			json_array_append(mem, en);
			continue;
		}
		json_array_append(all, en);
		owner = en;
	}
	if (tok && *tok)
		*more = true;
	json_decref(doc);
	return AIS_OK;
}

/* I/O pool: ask every active target for a page (in parallel), merge. A
 * target not heard from may hold the only copies of some names
 * (cluster_lsfan): then the page is refused (503 naming the missing
 * targets) or, when the request asked for partial, marked so. */
static void list_work(http_req_t *req)
{
	struct bop *o = req->state;
	cluster_lsfan_t f;
	bool more = false;
	char *js = json_dumps(o->value, JSON_COMPACT);
	buf_t body = BUF_INIT;

	uint64_t call_ms = bk_list_call_ms(cl_of(req), sv_from(o->name), 30000);
	buf_addstr(&body, js);
	free(js);
	cluster_lsfan_init(cl_of(req), o->name, o->cached_only, &f);
	for (size_t i = 0; i < f.n; i++) {
		snprintf(f.calls[i].url, sizeof(f.calls[i].url), "%s/v1/buckets/%s%s%s", f.urls[i], o->name,
			 o->query[0] ? "?" : "", o->query);
		f.calls[i].method = "GET";
		f.calls[i].body = &body;
		f.calls[i].timeout_ms = call_ms;
	}
	cluster_lsfan_call(&f);
	json_t **pages = xcalloc(f.n + 1, sizeof(*pages));
	size_t absent = 0;
	for (size_t i = 0; i < f.n; i++) {
		pages[i] = json_array();
		/* a target that does not know the bucket yet (it joined a moment
		 * ago, its BMD is on its way) holds none of its objects */
		if (f.calls[i].status == 404)
			absent++;
		else if (!o->err && !f.gone[i])
			list_take(o, &f.calls[i], pages[i], &more);
	}
	if (!o->err && f.n && absent == f.n) {
		o->err = ENOENT;
		buf_addf(&o->msg, "bucket \"%s\" does not exist", o->name);
	}
	if (!o->err && f.incomplete) {
		o->missing = json_array();
		for (size_t i = 0; i < f.nmissing; i++)
			json_array_append_new(o->missing, json_string(f.miss[i]));
		buf_addf(&o->msg, "%zu target(s) holding objects of the bucket not heard from: %s (objects have %zu "
				  "cop%s)", f.nmissing, f.missing.ptr, f.copies, f.copies == 1 ? "y" : "ies");
		if (!o->partial)
			o->err = EAGAIN;
	}
	size_t npages = f.n;
	cluster_lsfan_free(&f);
	buf_free(&body);
	if (!o->err) {
		json_t *last;
		json_t *res = json_object();
		json_object_set_new(res, "entries", list_merge(pages, npages, o->pagesize, &more, &last));
		const char *tok = last && more ? json_string_value(json_object_get(last, "name")) : "";
		json_object_set_new(res, "continuation_token", json_string(tok));
		if (o->missing) { /* asked for: what this page may lack, said in it */
			json_object_set_new(res, "partial", json_true());
			json_object_set(res, "missing", o->missing);
		}
		char *out = json_dumps(res, JSON_COMPACT);
		buf_addstr(&o->out, out);
		free(out);
		json_decref(res);
	}
	for (size_t i = 0; i < npages; i++)
		json_decref(pages[i]);
	free(pages);
}

void gw_list_done(http_req_t *req)
{
	struct bop *o = req->state;
	if (o->err == ENOENT) {
		http_resp_error(req, 404, "%s", o->msg.ptr ? o->msg.ptr : "no such bucket");
	} else if (o->err == EAGAIN) {
		/* the error body names the missing targets ("missing": [ID, ..]) */
		json_t *doc = json_pack("{s:s+,s:i,s:O}", "message", "listing incomplete: ", o->msg.ptr, "status", 503,
					"missing", o->missing);
		log_warnx("listing %s: 503 %s", o->name, o->msg.ptr);
		http_resp_status(req, 503);
		cluster_resp_json(req, doc);
		json_decref(doc);
	} else if (o->err) {
		http_resp_error(req, o->err == EINVAL ? 400 : ais_errno(o->err)->remote ? ais_errno_status(o->err) : 502,
				 "listing: %s", o->msg.ptr ? o->msg.ptr : "");
	} else {
		http_resp_header(req, "Content-Type", "application/json");
		http_resp_send_buf(req, &o->out);
	}
}

/* I/O pool: every page of bucket's listing under prefix (list_work's
 * fan-out, names and sizes), entry by entry to fn, until fn returns false,
 * the listing ends or (until not NULL) a page ends at or past until. o->err
 * and o->msg on a listing's failure; o->name, o->value and o->out are
 * list_work's own meanwhile. */
void gw_list_pages(http_req_t *req, const char *bucket, const char *prefix, const char *until,
		       bool (*fn)(void *arg, json_t *entry), void *arg)
{
	struct bop *o = req->state;
	char keep[sizeof(o->name)], want[sizeof(o->name)];
	memcpy(keep, o->name, sizeof(keep));
	snprintf(want, sizeof(want), "%s", bucket); /* (bucket may be o->name) */
	memcpy(o->name, want, sizeof(want));
	json_decref(o->value);
	o->value = json_pack("{s:s,s:{s:s,s:s,s:i}}", "action", "list", "value", "prefix", prefix, "props",
			     "name,size", "pagesize", LIST_PAGE_MAX);
	json_t *lv = json_object_get(o->value, "value");
	o->pagesize = LIST_PAGE_MAX;
	for (bool go = true; go;) {
		o->out.len = 0;
		list_work(req);
		if (o->err)
			break;
		json_t *doc = json_loadb(o->out.ptr ? o->out.ptr : "", o->out.len, 0, NULL), *e;
		json_t *ents = json_object_get(doc, "entries");
		size_t i;
		json_array_foreach(ents, i, e) {
			if (go && json_is_string(json_object_get(e, "name")))
				go = fn(arg, e);
		}
		const char *tok = json_string_value(json_object_get(doc, "continuation_token"));
		const char *last = json_string_value(json_object_get(json_array_get(ents, json_array_size(ents) - 1),
								       "name"));
		go = go && tok && *tok && json_array_size(ents) && !(until && last && strcmp(last, until) >= 0);
		if (go)
			json_object_set_new(lv, "continuation_token", json_string(tok));
		json_decref(doc);
	}
	o->out.len = 0;
	memcpy(o->name, keep, sizeof(keep));
}

static void list_buckets(http_req_t *req, const bmd_t *b)
{
	buf_t out = BUF_INIT;
	buf_addch(&out, '[');
	for (size_t i = 0; b && i < bmd_size(b); i++) {
		tgt_bucket_json(&out, bmd_bucket(b, i)->name, i == 0);
	}
	buf_addch(&out, ']');
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send_buf(req, &out);
}

/* HEAD /v1/buckets/B: the bucket's properties in Ais-Bucket-Props. */
static void bck_head(struct bck_call *c)
{
	if (!c->exists) {
		http_resp_error(c->req, 404, "bucket \"%s\" does not exist", c->o->name);
		return;
	}
	buf_t props = BUF_INIT;
	bmd_props_encode(&c->bk.props, &props);
	http_resp_header(c->req, "Ais-Bucket-Props", "%s", props.ptr);
	buf_free(&props);
	http_resp_send_head(c->req, 0);
}

/* GET /v1/buckets/B ({"action":"list"}, or none): one page of the listing,
 * its size, partial and flags from the value or the query. */
static void bck_list(struct bck_call *c)
{
	http_req_t *req = c->req;
	struct bop *o = c->o;
	if (c->action && strcmp(c->action, "list")) {
		http_resp_error(req, 400, "unknown action \"%s\" for GET (want \"list\")", c->action);
		return;
	}
	if (!c->exists) {
		http_resp_error(req, 404, "bucket \"%s\" does not exist", o->name);
		return;
	}
	json_t *value = c->value;
	o->value = c->doc ? json_incref(c->doc) : json_pack("{s:s}", "action", "list");
	o->pagesize = LIST_PAGE_DEFAULT;
	json_t *ps = value ? json_object_get(value, "pagesize") : NULL;
	sv_t qps;
	uint64_t v;
	if (json_is_integer(ps) && json_integer_value(ps) > 0)
		o->pagesize = (size_t)json_integer_value(ps);
	else if (http_query_get(req, "pagesize", &qps) && num_parse_u64(qps.ptr, qps.len, 1, UINT32_MAX, &v) == AIS_OK)
		o->pagesize = v;
	if (o->pagesize > LIST_PAGE_MAX)
		o->pagesize = LIST_PAGE_MAX;
	/* partial: a page without the targets not heard from, marked so
	 * (else such a page is a 503) */
	json_t *jp = value ? json_object_get(value, "partial") : NULL;
	sv_t qp = {NULL, 0}; /* (http_query_get leaves it as it is when absent) */
	if (jp && !json_is_boolean(jp)) {
		http_resp_error(req, 400, "value.partial must be true or false");
		return;
	}
	if (http_query_get(req, "partial", &qp) && !sv_eqstr(qp, "true") && !sv_eqstr(qp, "false")) {
		http_resp_error(req, 400, "partial must be true or false");
		return;
	}
	o->partial = json_is_true(jp) || (qp.ptr && sv_eqstr(qp, "true"));
	json_t *jf = value ? json_object_get(value, "flags") : NULL;
	sv_t qf;
	if (json_is_integer(jf))
		o->cached_only = json_integer_value(jf) & TGT_LS_CACHED;
	else if (http_query_get(req, "flags", &qf) && num_parse_u64(qf.ptr, qf.len, 0, UINT32_MAX, &v) == AIS_OK)
		o->cached_only = v & TGT_LS_CACHED;
	snprintf(o->query, sizeof(o->query), "%.*s", (int)MIN(req->query.len, sizeof(o->query) - 1), req->query.ptr);
	http_offload_net(req, list_work, gw_list_done);
}

/* POST {"action":"ec-encode"}: the re-encode job: the layout changes
 * through the BMD, and every target's rebalance converts what it holds
 * (jobs.h). */
static void bck_ec_encode(struct bck_call *c)
{
	json_t *ec = json_object_get(c->value, "ec"), *mi = json_object_get(c->value, "mirror");
	if (!c->exists) {
		http_resp_error(c->req, 404, "bucket \"%s\" does not exist", c->o->name);
	} else if (!json_is_object(ec) || json_object_size(c->value) != 1u + (mi != NULL)) {
		http_resp_error(c->req, 400, "ec-encode: value wants {\"ec\":{...}} and, turning erasure "
					     "coding off, {\"mirror\":{...}}, nothing else");
	} else if (gw_job_allowed(c->req, c->o->name, BMD_ACCESS_PATCH, "ec-encode")) {
		c->o->kind = BOP_SET_PROPS;
		c->o->encode = true;
		set_props_start(c->req, c->cl, c->o, c->value);
	}
}

/* create-bck's value into o->props: the cluster's checksum unless
 * checksum.type, and the S3 parts (region, owner, ACL, object lock; its
 * documents are checked to be strings, set by set_docs) and a remote
 * backend. false after a 400. */
static bool create_props(struct bck_call *c)
{
	http_req_t *req = c->req;
	struct bop *o = c->o;
	json_t *value = c->value, *s3 = json_object_get(value, "s3");
	bmd_props_default(&o->props);
	store_cksum_parse(((gateway_t *)req->ctx)->conf->checksum, strlen(((gateway_t *)req->ctx)->conf->checksum),
			  &o->props.cksum);
	json_t *ck = json_object_get(json_object_get(value, "checksum"), "type");
	if (ck && (!json_is_string(ck) ||
		   store_cksum_parse(json_string_value(ck), json_string_length(ck), &o->props.cksum) != AIS_OK)) {
		http_resp_error(req, 400, "checksum.type must be xxhash, md5, sha256 or none");
		return false;
	}
	/* the S3 LocationConstraint (S3 CreateBucket on another gateway) */
	json_t *rg = json_object_get(s3, "region");
	if (rg && (!json_is_string(rg) || !bmd_region_valid(json_string_value(rg), json_string_length(rg)))) {
		http_resp_error(req, 400, "s3.region must be 1..%d of [A-Za-z0-9-]", BMD_REGION_MAX);
		return false;
	}
	if (rg)
		memcpy(o->props.region, json_string_value(rg), json_string_length(rg));
	/* and its S3 owner and ACL (s3acl.h text) */
	json_t *ow = json_object_get(s3, "owner"), *acl = json_object_get(s3, "acl");
	if (ow && (!json_is_string(ow) || !json_string_length(ow) || json_string_length(ow) > S3ACL_UID_MAX ||
		   strchr(json_string_value(ow), ':'))) {
		http_resp_error(req, 400, "s3.owner must be an S3 user id (1..%d bytes, no ':')", S3ACL_UID_MAX);
		return false;
	}
	if (acl && (!json_is_string(acl) || !s3acl_text_valid(json_string_value(acl), json_string_length(acl)))) {
		http_resp_error(req, 400, "s3.acl must be an S3 ACL in its text form");
		return false;
	}
	/* S3 object lock (CreateBucket with x-amz-bucket-object-lock-enabled): history on */
	json_t *lk = json_object_get(s3, "lock");
	if (lk && (!json_is_string(lk) || !json_string_length(lk) ||
		   !bmd_s3lock_valid(json_string_value(lk), json_string_length(lk)))) {
		http_resp_error(req, 400, "s3.lock must be \"Enabled\" or \"Enabled:GOVERNANCE|COMPLIANCE:N(d|y)\"");
		return false;
	}
	if (lk) {
		memcpy(o->props.s3lock, json_string_value(lk), json_string_length(lk));
		o->props.history = BMD_HIST_ENABLED;
	}
	if (ow)
		memcpy(o->props.s3owner, json_string_value(ow), json_string_length(ow));
	if (acl) {
		memcpy(o->props.s3acl, json_string_value(acl), json_string_length(acl));
		o->props.s3acl_set = true;
	}
	/* its S3 documents, set with it (set_docs) */
	for (unsigned d = 0; d < BMD_DOC_KINDS; d++) {
		json_t *doc = json_object_get(s3, bmd_doc_key(d));
		if (doc && (!json_is_string(doc) || !json_string_length(doc))) {
			http_resp_error(req, 400, "s3.%s must be a non-empty string", bmd_doc_key(d));
			return false;
		}
	}
	/* a remote backend: {"backend":{"provider","remote","bucket",...}} */
	json_t *bkv = json_object_get(value, "backend");
	if (bkv && bmd_backend_patch(bkv, &o->props.backend, &o->msg) != AIS_OK) {
		http_resp_error(req, 400, "%s", o->msg.ptr);
		return false;
	}
	return true;
}

/* POST create-bck, DELETE (destroy-bck or no body), PATCH set-bprops: BMD
 * changes, made by the primary. */
static void bck_change(struct bck_call *c)
{
	static const char *const want[] = {"create-bck", "destroy-bck", "set-bprops"};
	http_req_t *req = c->req;
	struct bop *o = c->o;
	o->kind = req->method == HTTP_POST ? BOP_CREATE : req->method == HTTP_DELETE ? BOP_DESTROY : BOP_SET_PROPS;
	/* DELETE may come without a body; the others need their action. */
	if ((c->action || o->kind != BOP_DESTROY) && (!c->action || strcmp(c->action, want[o->kind]))) {
		http_resp_error(req, 400, "unknown action \"%s\" (want \"%s\")", c->action ? c->action : "",
				want[o->kind]);
		return;
	}
	if (o->kind == BOP_SET_PROPS) {
		if (!json_is_object(c->value))
			http_resp_error(req, 400, "set-bprops: value must be an object of properties");
		else if (bprops_allowed(req, o->name, c->value))
			set_props_start(req, c->cl, o, c->value);
		return;
	}
	if (!cluster_is_primary(c->cl)) {
		redirect_primary(req, c->cl);
		return;
	}
	if (!create_props(c))
		return;
	o->patch = json_incref(c->value); /* its S3 documents (set_docs) */
	http_offload_net(req, bucket_work, bucket_done);
}

/* /v1/buckets[/B]: the list of buckets, or B's request parsed once (the
 * name, the body's action and value, B's entry) and handed to the handler
 * of its method and action. */
static int gw_buckets(http_req_t *req)
{
	cluster_t *cl = cl_of(req);
	sv_t bck, obj;
	json_error_t jerr;
	const bmd_t *b;

	if (!cl) {
		http_resp_error(req, 503, "the gateway is starting");
		return AIS_OK;
	}
	if (req->subpath.len == 0) {
		if (req->method != HTTP_GET) {
			http_resp_error(req, 400, "bucket name required: /v1/buckets/BUCKET");
			return AIS_OK;
		}
		cluster_read_lock(cl, NULL, &b);
		list_buckets(req, b);
		cluster_read_unlock(cl);
		return AIS_OK;
	}
	if (tgt_parse_names(req, &bck, &obj, false) != AIS_OK)
		return AIS_OK;
	struct bck_call c = {.req = req, .cl = cl};
	if (req->body.len) {
		c.doc = json_loadb(req->body.ptr, req->body.len, JSON_REJECT_DUPLICATES, &jerr);
		json_t *ja = c.doc ? json_object_get(c.doc, "action") : NULL;
		if (!c.doc || !json_is_object(c.doc) || !json_is_string(ja)) {
			http_resp_error(req, 400, "invalid JSON body: want {\"action\": ..., \"value\": ...}");
			json_decref(c.doc);
			return AIS_OK;
		}
		c.action = json_string_value(ja);
		c.value = json_object_get(c.doc, "value");
	}
	c.o = arena_zalloc(req->arena, sizeof(*c.o));
	snprintf(c.o->name, sizeof(c.o->name), "%.*s", (int)bck.len, bck.ptr);
	req->state = c.o;
	arena_cleanup_add(req->arena, bop_cleanup, c.o);

	cluster_read_lock(cl, NULL, &b);
	const bmd_bucket_t *bk = b ? bmd_get(b, bck.ptr, bck.len) : NULL;
	if (bk) {
		c.exists = true;
		c.bk = *bk;
	}
	cluster_read_unlock(cl);

	switch (req->method) {
	case HTTP_HEAD:
		bck_head(&c);
		break;
	case HTTP_GET:
		bck_list(&c);
		break;
	case HTTP_POST:
		if (c.action && !strcmp(c.action, "ec-encode")) {
			bck_ec_encode(&c);
			break;
		}
		if (gw_job_action(&c))
			break;
		/* (else create-bck) */
		/* fall through */
	case HTTP_DELETE:
	case HTTP_PATCH:
		bck_change(&c);
		break;
	default:
		http_resp_error(req, 405, "method not allowed");
	}
	json_decref(c.doc);
	return AIS_OK;
}

/* --- GetBatch ------------------------------------------------------------- */

/* GET /v1/ml/moss[/BUCKET]: 307 to the designated target, the active target
 * that owns the most entries (ties: the first in the cluster map), which
 * then gathers the rest from their owners. A 307 keeps the method and the
 * body, so the client resends the same request there. */
static int gw_getbatch(http_req_t *req)
{
	cluster_t *cl = cl_of(req);
	sv_t bck = {"", 0}, obj;
	moss_req_t mr;
	buf_t err = BUF_INIT, uname = BUF_INIT;
	const cmap_t *m;
	char url[CMAP_URL_MAX + 1] = "";

	if (!cl) {
		http_resp_error(req, 503, "the gateway is starting");
		return AIS_OK;
	}
	if (req->subpath.len && tgt_parse_names(req, &bck, &obj, false) != AIS_OK)
		return AIS_OK;
	if (moss_parse(req->arena, req->body.ptr ? req->body.ptr : "", req->body.len, bck,
		       ((gateway_t *)req->ctx)->conf->gb_max_entries, &mr, &err) != AIS_OK) {
		http_resp_error(req, 400, "GetBatch: %s", err.ptr ? err.ptr : "invalid request");
		buf_free(&err);
		return AIS_OK;
	}
	if (!tgt_moss_allowed(req, &mr))
		return AIS_OK;
	cluster_read_lock(cl, &m, NULL);
	size_t nn = m ? cmap_size(m) : 0, best = SIZE_MAX;
	size_t *count = xcalloc(nn + 1, sizeof(*count));
	for (size_t i = 0; i < mr.n; i++) {
		buf_reset(&uname);
		buf_addsv(&uname, mr.in[i].bck);
		buf_addch(&uname, '/');
		buf_addsv(&uname, mr.in[i].obj);
		const cmap_node_t *o = m ? cmap_owner(m, uname.ptr, uname.len) : NULL;
		for (size_t k = 0; o && k < nn; k++)
			if (cmap_node(m, k) == o)
				count[k]++;
	}
	for (size_t k = 0; k < nn; k++) {
		const cmap_node_t *nd = cmap_node(m, k);
		if (nd->role == CMAP_TARGET && nd->state == CMAP_ACTIVE &&
		    (best == SIZE_MAX || count[k] > count[best]))
			best = k;
	}
	if (best != SIZE_MAX)
		snprintf(url, sizeof(url), "%s", cmap_node(m, best)->pub_url);
	cluster_read_unlock(cl);
	free(count);
	buf_free(&uname);
	if (!url[0])
		http_resp_error(req, 503, "no active target in the cluster");
	else
		redirect(req, url);
	return AIS_OK;
}

static int gw_health(http_req_t *req)
{
	static const char ok[] = "{\"status\":\"ok\",\"role\":\"gateway\"}";
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_send(req, ok, sizeof(ok) - 1);
	return AIS_OK;
}

/* /v1/daemon/mountpaths on a gateway: 307 to the target named by the
 * Ais-Node-Id header (AIStore's) or ?node=ID, which answers itself. */
static int gw_mountpaths(http_req_t *req)
{
	cluster_t *cl = cl_of(req);
	sv_t id = http_req_header(req, "Ais-Node-Id");
	char url[CMAP_URL_MAX + 1] = "";
	const cmap_t *m;
	if (!id.ptr || !id.len)
		http_query_get(req, "node", &id);
	if (!id.ptr || !cmap_id_valid(id.ptr, id.len)) {
		http_resp_error(req, 400, "name the target: ?node=NODE_ID or header Ais-Node-Id (a gateway has no mountpaths)");
		return AIS_OK;
	}
	cluster_read_lock(cl, &m, NULL);
	const cmap_node_t *n = m ? cmap_get(m, id.ptr, id.len) : NULL;
	if (n && n->role == CMAP_TARGET)
		snprintf(url, sizeof(url), "%s", n->pub_url);
	cluster_read_unlock(cl);
	if (!url[0]) {
		http_resp_error(req, 404, "no target \"%.*s\" in the cluster map", (int)id.len, id.ptr);
		return AIS_OK;
	}
	redirect(req, url);
	return AIS_OK;
}

static const http_route_t routes[] = {
	{"/v1/objects", M(GET) | M(HEAD) | M(PUT) | M(DELETE), HTTP_ROUTE_BODY, 0, gw_objects,
	 "objects: 307 to the owner target", 0},
	{"/v1/buckets", M(GET) | M(HEAD) | M(POST) | M(DELETE) | M(PATCH), HTTP_ROUTE_JSON, 1 << 20, gw_buckets,
	 "buckets: list, create-bck, destroy-bck, set-bprops (via the primary), HEAD props, list objects (fan-out)", 0},
	{"/v1/cluster", M(GET) | M(POST) | M(PUT), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 1 << 20, cluster_h_cluster,
	 "cluster: ?what=smap|bmd, POST join, PUT node actions (via the primary)", 0},
	{"/v1/jobs", M(GET) | M(PUT), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 4096, jobs_h_cluster_runs,
	 "job runs of every target, one per id: GET ?kind=&id=&all=true, PUT {\"action\":\"stop\",\"id\"|\"kind\"}", 0},
	{"/v1/metasync", M(PUT), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 64 << 20, cluster_h_metasync,
	 "metadata pushed by the primary", 0},
	{"/v1/daemon/mountpaths", M(GET) | M(PUT) | M(DELETE), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 4096,
	 gw_mountpaths, "a target's mountpaths (?node=ID or Ais-Node-Id): 307 to that target", 0},
	{"/v1/daemon", M(GET) | M(PUT), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 64 << 10, cluster_h_daemon,
	 "this node: ?what=stats (default)|config|smap|bmd; PUT set-config", 0},
	{"/metrics", M(GET), HTTP_ROUTE_NOLIMIT, 0, cluster_h_metrics, "Prometheus metrics", 0},
	{"/v1/health", M(GET) | M(HEAD), HTTP_ROUTE_NOLIMIT | HTTP_ROUTE_PUBLIC, 0, gw_health, "health: 200 when serving", 0},
	{"/v1/ml/moss", M(GET), HTTP_ROUTE_JSON, 64 << 20, gw_getbatch,
	 "GetBatch: 307 to the designated target (the one owning the most entries)", 0},
	{"/v1/remotes", M(GET) | M(PUT) | M(DELETE), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 64 << 10, bk_h_remotes,
	 "remote backends: GET the list (no secrets), PUT/DELETE /v1/remotes/ALIAS", 0},
	{"/v1/etl", M(GET) | M(PUT) | M(DELETE), HTTP_ROUTE_JSON | HTTP_ROUTE_NOLIMIT, 64 << 10, etl_h,
	 "transformers: GET the list (?what=logs&name=N: every target's worker logs), PUT/DELETE /v1/etl/NAME "
	 "(on every node; ?action=stop|start)", 0},
	{"/", S3_ROUTE_METHODS, HTTP_ROUTE_BODY | HTTP_ROUTE_S3, 0, s3_h_gateway,
	 "S3: /BUCKET/KEY and /s3/BUCKET/KEY: buckets here, objects streamed to and from the owner target",
	 5 /* a relay: its socket to the target, a pipe each way */},
};

gateway_t *gateway_start(const conf_t *c, buf_t *err)
{
	gateway_t *g = xcalloc(1, sizeof(*g));
	g->conf = g->base.conf = c;
	if (s3_init(c, err) != AIS_OK)
		goto fail;
	if (c->node_dir[0] && bk_remotes_init(c->node_dir, c, err) != AIS_OK)
		goto fail;
	if (c->node_dir[0] && etl_init(c->node_dir, c, err) != AIS_OK)
		goto fail;
	http_server_opts_t o = {
		.fd_reserve = 256, /* metadata files, calls to every node */
		.routes = routes,
		.nroutes = ARRAY_SIZE(routes),
		.ctx = g,
		.authz = authz_check,
		.authz_body = authz_check_body,
		.is_peer = cluster_node_addr,
		.is_cluster_call = authz_cluster_call,
		.refuse_s3 = s3_refuse,
	};
	http_server_opts_conf(&o, c);
	g->srv = http_server_new(&o, err);
	if (!g->srv)
		goto fail;
	cluster_t *cl = cluster_new(c, CMAP_GATEWAY, http_server_port(g->srv), err);
	if (!cl || cluster_start(cl, err) != AIS_OK) {
		http_server_free(g->srv);
		cluster_free(cl);
		goto fail;
	}
	__atomic_store_n(&g->base.cl, cl, __ATOMIC_RELEASE);
	return g;
fail:
	free(g);
	return NULL;
}

int gateway_port(const gateway_t *g) { return http_server_port(g->srv); }

void gateway_stop(gateway_t *g)
{
	if (!g)
		return;
	s3_log_stop(); /* pending access log records delivered while the map is known */
	cluster_stop(g->base.cl); /* no keepalive rounds to peers that are stopping too */
	http_server_free(g->srv);
	cluster_free(g->base.cl);
	free(g);
}
