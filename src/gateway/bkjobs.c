/*
 * bkjobs.c - the gateway's side of the bucket job actions ishard, dsort and
 * archive (PUT /v1/buckets/SRC {"action": ...}): on the I/O pool, one
 * listing of the source (gw_list_pages) checked and planned into the job's
 * value (names and sizes, the input shards, an order file's text), a dry
 * run answered with its plan, else the job started on every target under
 * one id (gw_start_bucket_job). Bad values are 400 naming the fix, a
 * missing source object 404, an existing archive 409.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/dsort.h"
#include "aisd/httpc.h"
#include "aisd/ishard.h"
#include "aisd/status.h"
#include "aisd/xarch.h"
#include "gw_int.h"
#include "aisd/banned.h"

#define ISHARD_OBJECTS_MAX 500000     /* names of one listing handed to the targets */
#define ISHARD_SPEC_MAX (60u << 20) /* its JSON (a target's /v1/jobs takes 64 MiB) */
#define ARCHIVE_LISTED_MAX 2000000  /* names an archive request's check may list */

/* A listing's entries as [[NAME,SIZE],..] (list_pages' fn), at most
 * ISHARD_OBJECTS_MAX. */
struct ls_all {
	struct bop *o;
	json_t *objs;
};

static bool all_entry(void *arg, json_t *e)
{
	struct ls_all *a = arg;
	json_array_append_new(a->objs, json_pack("[O,I]", json_object_get(e, "name"),
						 json_integer_value(json_object_get(e, "size"))));
	if (json_array_size(a->objs) <= ISHARD_OBJECTS_MAX)
		return true;
	a->o->err = EINVAL;
	buf_addf(&a->o->msg, "%s: more than %d objects under the prefix (a narrower prefix)", a->o->job,
		 ISHARD_OBJECTS_MAX);
	return false;
}

/* I/O pool: lists the source under the job's prefix once (list_pages)
 * into [[NAME,SIZE],..] (name order); NULL with o->err set. */
static json_t *list_all(http_req_t *req)
{
	struct bop *o = req->state;
	json_t *pf = json_object_get(o->ishard, "prefix");
	struct ls_all a = {o, json_array()};
	gw_list_pages(req, o->name, pf ? json_string_value(pf) : "", NULL, all_entry, &a);
	if (!o->err)
		return a.objs;
	json_decref(a.objs);
	return NULL;
}

/* I/O pool: the job's "objects" from one listing of the source, planned:
 * a dry run's answer is the plan's summary, else the plan is the targets'
 * to compute again from the same listing (ishard.h). */
void gw_ishard_work(http_req_t *req)
{
	struct bop *o = req->state;
	json_t *objs = list_all(req);
	if (!objs)
		return;
	json_object_set_new(o->ishard, "objects", objs);
	ishard_plan_t p = {0};
	buf_t err = BUF_INIT;
	size_t jlen = json_dumpb(o->ishard, NULL, 0, JSON_COMPACT);
	if (jlen > ISHARD_SPEC_MAX) {
		o->err = EINVAL;
		buf_addf(&o->msg, "ishard: the listing is too large to hand to the targets (%zu bytes of names; "
				  "shard a narrower prefix)", jlen);
	} else if (ishard_plan(o->ishard, &p, &err) != 0) {
		o->err = EINVAL;
		buf_addf(&o->msg, "%s", err.ptr);
	} else if (json_is_true(json_object_get(o->ishard, "dry_run"))) {
		json_t *sum = json_object();
		ishard_plan_summary(&p, sum);
		char *js = json_dumps(sum, JSON_COMPACT);
		buf_addstr(&o->out, js);
		free(js);
		json_decref(sum);
	}
	ishard_plan_free(&p);
	buf_free(&err);
}

/* I/O pool: the dsort's input shards picked from one listing of the
 * source and assigned to the active targets of the map of the moment
 * (dsort.h); a dry run's answer is that plan. */
/* I/O pool: algorithm "order": the order file (BUCKET/OBJECT) read from
 * its owner into the spec's "order_text", which the targets parse (dsort.h).
 * false with o->err set. */
static bool dsort_order_file(http_req_t *req)
{
	struct bop *o = req->state;
	const char *of = json_string_value(json_object_get(o->ishard, "order_file")), *sl = of ? strchr(of, '/') : NULL;
	if (!sl)
		return true; /* another algorithm (dsort_spec_parse checked) */
	cluster_where_t w;
	cluster_where(cl_of(req), (sv_t){of, (size_t)(sl - of)}, sv_from(sl + 1), false, &w, NULL, 0);
	buf_t url = BUF_INIT, resp = BUF_INIT;
	int status = 0, rc = AIS_ERR;
	if (w.bucket && w.n && w.owner_intra[0]) {
		buf_addf(&url, "%s/v1/objects/%.*s/", w.owner_intra, (int)(sl - of), of);
		buf_add_pct(&url, sv_from(sl + 1), true);
		rc = httpc_sync("GET", url.ptr, NULL, NULL, 0, 60000, &resp, &status);
	}
	bool ok = false;
	if (!w.bucket || (rc == AIS_OK && status == 404)) {
		o->err = EINVAL;
		buf_addf(&o->msg, "dsort: the order file %s does not exist", of);
	} else if (rc != AIS_OK || status != 200) {
		o->err = EAGAIN;
		buf_addf(&o->msg, "dsort: cannot read the order file %s (%s %d)", of, rc == AIS_OK ? "HTTP" : "error",
			 status);
	} else if (resp.len > DSORT_ORDER_MAX) {
		o->err = EINVAL;
		buf_addf(&o->msg, "dsort: the order file %s has more than %u bytes", of, DSORT_ORDER_MAX);
	} else if (!json_object_set_new(o->ishard, "order_text", json_stringn(resp.ptr ? resp.ptr : "", resp.len)) &&
		   json_object_get(o->ishard, "order_text")) {
		ok = true;
	} else {
		o->err = EINVAL;
		buf_addf(&o->msg, "dsort: the order file %s is not text (UTF-8)", of);
	}
	buf_free(&url);
	buf_free(&resp);
	return ok;
}

/* The bucket of an order file's BUCKET/OBJECT into b. */
const char *gw_order_bucket(const char *of, char b[NAME_BUCKET_MAX + 1])
{
	const char *sl = strchr(of, '/');
	snprintf(b, NAME_BUCKET_MAX + 1, "%.*s", (int)MIN(sl ? (size_t)(sl - of) : 0, NAME_BUCKET_MAX), of);
	return b;
}

void gw_dsort_work(http_req_t *req)
{
	struct bop *o = req->state;
	if (!dsort_order_file(req))
		return;
	json_t *objs = list_all(req);
	if (!objs)
		return;
	json_t *targets = json_array();
	const cmap_t *m;
	cluster_read_lock(cl_of(req), &m, NULL);
	for (size_t i = 0; m && i < cmap_size(m); i++) {
		const cmap_node_t *nd = cmap_node(m, i);
		if (nd->role == CMAP_TARGET && nd->state == CMAP_ACTIVE)
			json_array_append_new(targets, json_pack("[s,s]", nd->id, nd->intra_url));
	}
	cluster_read_unlock(cl_of(req));
	buf_t err = BUF_INIT;
	int rc = dsort_select(o->ishard, o->name, objs, targets, !strcmp(o->name, o->to), &err);
	if (rc) {
		o->err = rc == 400 ? EINVAL : EAGAIN;
		buf_addf(&o->msg, "%s", err.ptr);
	} else if (json_is_true(json_object_get(o->ishard, "dry_run"))) {
		json_t *sum = json_object();
		dsort_dry_summary(o->ishard, sum);
		char *js = json_dumps(sum, JSON_COMPACT);
		buf_addstr(&o->out, js);
		free(js);
		json_decref(sum);
	}
	json_object_del(o->ishard, "skipped");
	json_decref(objs);
	json_decref(targets);
	buf_free(&err);
	if (!rc && json_dumpb(o->ishard, NULL, 0, JSON_COMPACT) > ISHARD_SPEC_MAX) {
		o->err = EINVAL;
		buf_addf(&o->msg, "dsort: too many input shards to hand to the targets (a narrower prefix)");
	}
}

void gw_ishard_done(http_req_t *req)
{
	struct bop *o = req->state;
	if (o->err == EAGAIN && o->msg.len && !strncmp(o->msg.ptr, o->job, strlen(o->job))) {
		http_resp_error(req, 503, "%s", o->msg.ptr);
	} else if (o->err == EINVAL && o->msg.len && !strncmp(o->msg.ptr, o->job, strlen(o->job))) {
		http_resp_error(req, 400, "%s", o->msg.ptr);
	} else if (o->err) {
		gw_list_done(req);
	} else if (o->out.len) { /* the dry run's plan */
		http_resp_header(req, "Content-Type", "application/json");
		http_resp_send_buf(req, &o->out);
	} else {
		gw_start_bucket_job(req, o->job, o->name, o->ishard, o->to);
	}
}

/* An archive request's listing: the names asked for, each looked up. */
struct arch_ls {
	struct bop *o;
	json_t *found; /* name -> size, of the names asked for */
	json_t *want;  /* name -> true */
	size_t listed;
};

static bool arch_entry(void *arg, json_t *e)
{
	struct arch_ls *a = arg;
	const char *nm = json_string_value(json_object_get(e, "name"));
	if (json_object_get(a->want, nm))
		json_object_set(a->found, nm, json_object_get(e, "size"));
	if (++a->listed <= ARCHIVE_LISTED_MAX)
		return true;
	a->o->err = EINVAL;
	buf_addf(&a->o->msg, "archive: more than %d objects to look through for the names asked for (name objects "
			     "with a longer common prefix)", ARCHIVE_LISTED_MAX);
	return false;
}

/* I/O pool (xarch.h): the names expanded, found in the source's listing
 * (under their common prefix, up to the greatest of them) with their
 * sizes into the job's "objects", and the shard looked for in DST's. */
void gw_archive_work(http_req_t *req)
{
	struct bop *o = req->state;
	json_t *names = xarch_names(o->ishard), *e;
	struct arch_ls a = {o, json_object(), json_object(), 0};
	const char *lo = NULL, *hi = NULL;
	size_t i, pfx = 0;
	json_array_foreach(names, i, e) {
		const char *nm = json_string_value(e);
		json_object_set(a.want, nm, json_true());
		if (!lo) {
			lo = hi = nm;
			pfx = strlen(nm);
		}
		while (pfx && strncmp(lo, nm, pfx))
			pfx--;
		hi = strcmp(nm, hi) > 0 ? nm : hi;
	}
	char *prefix = xstrndup(lo ? lo : "", pfx);
	gw_list_pages(req, o->name, prefix, hi, arch_entry, &a);
	free(prefix);
	json_t *objs = json_array();
	size_t missing = 0;
	buf_t miss = BUF_INIT;
	json_array_foreach(names, i, e) {
		json_t *sz = json_object_get(a.found, json_string_value(e));
		if (sz)
			json_array_append_new(objs, json_pack("[O,O]", e, sz));
		else if (missing++ < 10)
			buf_addf(&miss, "%s\"%.200s\"", missing > 1 ? ", " : "", json_string_value(e));
	}
	if (!o->err && missing) {
		o->err = ENOENT;
		buf_addf(&o->msg, "archive: %zu source object%s missing in bucket \"%s\": %s%s", missing,
			 missing == 1 ? " is" : "s are", o->name, miss.ptr, missing > 10 ? ", ..." : "");
	}
	json_object_set_new(o->ishard, "objects", objs);
	const char *arch = json_string_value(json_object_get(o->ishard, "archname"));
	if (!o->err && !json_is_true(json_object_get(o->ishard, "append")) &&
	    !json_is_true(json_object_get(o->ishard, "overwrite"))) {
		json_object_clear(a.want);
		json_object_clear(a.found);
		json_object_set(a.want, arch, json_true());
		gw_list_pages(req, o->to, arch, arch, arch_entry, &a);
		if (!o->err && json_object_size(a.found)) {
			o->err = EEXIST;
			buf_addf(&o->msg, "archive: \"%s/%s\" exists (append to it, or overwrite it)", o->to, arch);
		}
	}
	buf_free(&miss);
	json_decref(a.found);
	json_decref(a.want);
	json_decref(names);
}

void gw_archive_done(http_req_t *req)
{
	struct bop *o = req->state;
	bool ours = o->msg.len && !strncmp(o->msg.ptr, "archive", 7);
	if (ours && (o->err == EINVAL || o->err == ENOENT || o->err == EEXIST))
		http_resp_error(req, o->err == EINVAL ? 400 : o->err == ENOENT ? 404 : 409, "%s", o->msg.ptr);
	else if (o->err)
		gw_list_done(req);
	else
		gw_start_bucket_job(req, "archive", o->name, o->ishard, o->to);
}
