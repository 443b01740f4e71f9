/*
 * bkjobs.c - the gateway's side of the bucket job actions (POST
 * /v1/buckets/SRC {"action": ...}): prefetch-listrange and evict-listrange
 * of a remote bucket, copy-bck and etl-bck, ishard, archive and dsort. One
 * table maps each action to its check; every action that writes elsewhere
 * names its destination the same way (?bck_to=DST, job_buckets) and
 * declares what it does to both buckets (gw_job_allowed). Prefetch, evict
 * and the copies start on every target at once; ishard, dsort and archive
 * first, on the I/O pool, list the source once (gw_list_pages), check and
 * plan into the job's value (names and sizes, the input shards, an order
 * file's text), answer a dry run with its plan, else start the job on
 * every target under one id (start_job). Bad values are 400 naming the
 * fix, a missing source or destination bucket or source object 404, an
 * existing archive 409.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/dsort.h"
#include "aisd/etl.h"
#include "aisd/httpc.h"
#include "aisd/ishard.h"
#include "aisd/jobreg.h"
#include "aisd/jobs.h"
#include "aisd/status.h"
#include "aisd/xarch.h"
#include "aisd/xcopy.h"
#include "gw_int.h"
#include "aisd/banned.h"

#define ISHARD_OBJECTS_MAX 500000     /* names of one listing handed to the targets */
#define ISHARD_SPEC_MAX (60u << 20) /* its JSON (a target's /v1/jobs takes 64 MiB) */
#define ARCHIVE_LISTED_MAX 2000000  /* names an archive request's check may list */

/* Starts a run of kind on every target (jobs_h_cluster_start) under a
 * fresh id, the same on all (jobreg.h): value (may be NULL) with
 * "bucket":name, "to":to when given, and "id". */
static void start_job(http_req_t *req, const char *kind, const char *name, json_t *value, const char *to)
{
	json_t *jv = json_is_object(value) ? json_deep_copy(value) : json_object();
	json_object_set_new(jv, "bucket", json_string(name));
	if (to)
		json_object_set_new(jv, "to", json_string(to));
	char id[JREG_ID_MAX + 1];
	jreg_new_id(id);
	json_object_set_new(jv, "id", json_string(id));
	json_t *body = json_pack("{s:s,s:o}", "action", "start", "value", jv);
	char *js = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	char *ajs = arena_strndup(req->arena, js, strlen(js));
	free(js);
	jobs_h_cluster_start(req, kind, ajs);
}

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
static void ishard_work(http_req_t *req)
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
static const char *order_bucket(const char *of, char b[NAME_BUCKET_MAX + 1])
{
	const char *sl = strchr(of, '/');
	snprintf(b, NAME_BUCKET_MAX + 1, "%.*s", (int)MIN(sl ? (size_t)(sl - of) : 0, NAME_BUCKET_MAX), of);
	return b;
}

static void dsort_work(http_req_t *req)
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

static void ishard_done(http_req_t *req)
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
		start_job(req, o->job, o->name, o->ishard, o->to);
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
static void archive_work(http_req_t *req)
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

static void archive_done(http_req_t *req)
{
	struct bop *o = req->state;
	bool ours = o->msg.len && !strncmp(o->msg.ptr, "archive", 7);
	if (ours && (o->err == EINVAL || o->err == ENOENT || o->err == EEXIST))
		http_resp_error(req, o->err == EINVAL ? 400 : o->err == ENOENT ? 404 : 409, "%s", o->msg.ptr);
	else if (o->err)
		gw_list_done(req);
	else
		start_job(req, "archive", o->name, o->ishard, o->to);
}

/* --- the actions' checks ---------------------------------------------------- */

/* The buckets of an action that writes into DST: SRC must exist (404), and
 * DST is ?bck_to= (SRC itself when same_ok and the query names none): a
 * valid bucket name (400), not SRC unless same_ok (400), an existing
 * bucket (404), kept in o->to. false after answering. */
static bool job_buckets(struct bck_call *c, const char *kind, bool same_ok)
{
	struct bop *o = c->o;
	sv_t to = {"", 0};
	if (!c->exists) {
		http_resp_error(c->req, 404, "bucket \"%s\" does not exist", o->name);
		return false;
	}
	if ((!http_query_get(c->req, "bck_to", &to) || !to.len) && same_ok)
		to = sv_from(o->name);
	snprintf(o->to, sizeof(o->to), "%.*s", (int)MIN(to.len, NAME_BUCKET_MAX), to.ptr);
	if (!to.len || to.len > NAME_BUCKET_MAX || !name_bucket_valid(to.ptr, to.len) ||
	    (!same_ok && !strcmp(o->to, o->name))) {
		if (same_ok)
			http_resp_error(c->req, 400, "%s: ?bck_to= wants a bucket name", kind);
		else
			http_resp_error(c->req, 400, "%s wants ?bck_to=DST, a bucket other than \"%s\"", kind, o->name);
		return false;
	}
	const bmd_t *b;
	cluster_read_lock(c->cl, NULL, &b);
	bool dst_ok = b && bmd_get(b, o->to, strlen(o->to));
	cluster_read_unlock(c->cl);
	if (!dst_ok)
		http_resp_error(c->req, 404, "destination bucket \"%s\" does not exist (create it first)", o->to);
	return dst_ok;
}

/* What an action that reads SRC and writes DST declares (false after 403). */
static bool job_read_write_allowed(struct bck_call *c, const char *kind)
{
	return gw_job_allowed(c->req, c->o->name, BMD_ACCESS_GET, kind) &&
	       gw_job_allowed(c->req, c->o->to, BMD_ACCESS_PUT, kind);
}

/* prefetch-listrange / evict-listrange: a remote bucket's named objects
 * fetched into or dropped from the cache, on every target
 * (src/target/bkjobs.c). */
static void act_prefetch_evict(struct bck_call *c)
{
	struct bop *o = c->o;
	bool prefetch = c->action[0] == 'p';
	if (!c->exists || !c->bk.props.backend.provider[0]) {
		http_resp_error(c->req, c->exists ? 400 : 404, "bucket \"%s\" %s", o->name,
				c->exists ? "has no remote backend" : "does not exist");
		return;
	}
	/* a prefetch writes into the bucket, an evict deletes from it */
	if (!gw_job_allowed(c->req, o->name, prefetch ? BMD_ACCESS_PUT : BMD_ACCESS_DELETE, c->action))
		return;
	json_t *names = json_object_get(c->value, "list"), *nm;
	size_t ni;
	bool bad = false;
	json_array_foreach(names, ni, nm) bad |= !json_is_string(nm) ||
						 !name_object_valid(json_string_value(nm), json_string_length(nm));
	if (bad) { /* (targets check it too: this is for one clear answer) */
		http_resp_error(c->req, 400, "value.list: object names (UTF-8, no NUL, no \".\" or \"..\" segment)");
		return;
	}
	start_job(c->req, prefetch ? "prefetch" : "evict", o->name, c->value, NULL);
}

/* copy-bck / etl-bck: every target sends the objects of SRC it owns,
 * through the transformer for etl-bck, to their owners in DST (src/xcopy). */
static void act_copy(struct bck_call *c)
{
	bool etl = c->action[0] == 'e';
	const char *kind = etl ? "etl-bck" : "copy-bck"; /* (static: the start is asynchronous) */
	if (!job_buckets(c, kind, false))
		return;
	json_t *jv = json_is_object(c->value) ? json_deep_copy(c->value) : c->value ? json_incref(c->value) : json_object();
	json_t *eid = json_object_get(jv, "id"); /* AIStore's name of the transformer */
	if (etl && json_is_string(eid) && !json_object_get(jv, "etl"))
		json_object_set(jv, "etl", eid);
	if (json_is_object(jv))
		json_object_del(jv, "id"); /* (the run's id is the gateway's) */
	const char *en = json_string_value(json_object_get(jv, "etl"));
	buf_t err = BUF_INIT;
	if (xcopy_spec_check(jv, etl, &err) != 0)
		http_resp_error(c->req, 400, "%s: %s", kind, err.ptr);
	else if (!job_read_write_allowed(c, kind))
		; /* (answered) */
	else if (etl && !etl_exists(en, strlen(en)))
		http_resp_error(c->req, 404, "no transformer \"%.64s\" (aisctl etl ls)", en);
	else
		start_job(c->req, kind, c->o->name, jv, c->o->to);
	buf_free(&err);
	json_decref(jv);
}

/* ishard: the gateway lists SRC once; every target plans from that listing
 * and builds the shards it owns (src/ishard). */
static void act_ishard(struct bck_call *c)
{
	struct bop *o = c->o;
	buf_t err = BUF_INIT;
	if (!job_buckets(c, "ishard", false))
		return;
	if (!json_is_object(c->value) || json_object_get(c->value, "objects")) {
		http_resp_error(c->req, 400, "ishard: value wants {\"shard_size\":BYTES,\"template\":\"shard-%%06d.tar\", "
					     "\"prefix\",\"ext\",\"regex\",\"missing\",\"shuffle\",\"dry_run\"}");
	} else if (ishard_spec_check(c->value, &err) != 0) {
		http_resp_error(c->req, 400, "%s", err.ptr);
	} else if (job_read_write_allowed(c, "ishard")) {
		o->ishard = json_deep_copy(c->value);
		o->job = "ishard";
		http_offload_net(c->req, ishard_work, ishard_done);
	}
	buf_free(&err);
}

/* archive: objects of SRC packed into a shard of DST (default: SRC) by the
 * shard's owner (src/xarch). */
static void act_archive(struct bck_call *c)
{
	buf_t err = BUF_INIT;
	if (!job_buckets(c, "archive", true))
		return;
	if (xarch_spec_check(c->value, &err) != 0) {
		http_resp_error(c->req, 400, "%s", err.ptr);
	} else if (job_read_write_allowed(c, "archive")) {
		c->o->ishard = json_deep_copy(c->value);
		http_offload_net(c->req, archive_work, archive_done);
	}
	buf_free(&err);
}

/* dsort: the gateway lists SRC once and assigns the input shards; the
 * targets index, order and build (src/dsort). DST defaults to SRC; an order
 * file's bucket is read too. */
static void act_dsort(struct bck_call *c)
{
	struct bop *o = c->o;
	buf_t err = BUF_INIT;
	dsort_spec_t ds;
	char ob[NAME_BUCKET_MAX + 1];
	if (!job_buckets(c, "dsort", true))
		return;
	if (!json_is_object(c->value) || json_object_get(c->value, "objects") ||
	    json_object_get(c->value, "targets") || json_object_get(c->value, "order_text")) {
		http_resp_error(c->req, 400, "dsort: value wants {\"template\":\"out-%%06d.tar\",\"shard_size\":"
					     "BYTES or \"samples_per_shard\":N,\"algorithm\",\"seed\",\"prefix\","
					     "\"input_template\",\"content_ext\",\"content_type\",\"order_file\","
					     "\"unlisted_shard\",\"dry_run\"}");
	} else if (dsort_spec_parse(c->value, &ds, &err) != 0) {
		http_resp_error(c->req, 400, "%s", err.ptr);
	} else if (job_read_write_allowed(c, "dsort") &&
		   (!ds.order_file[0] ||
		    gw_job_allowed(c->req, order_bucket(ds.order_file, ob), BMD_ACCESS_GET, "dsort"))) {
		o->ishard = json_deep_copy(c->value);
		o->job = "dsort";
		http_offload_net(c->req, dsort_work, ishard_done);
	}
	buf_free(&err);
}

static const struct {
	const char *action;
	void (*fn)(struct bck_call *c);
} job_actions[] = {
	{"prefetch-listrange", act_prefetch_evict},
	{"evict-listrange", act_prefetch_evict},
	{"copy-bck", act_copy},
	{"etl-bck", act_copy},
	{"ishard", act_ishard},
	{"archive", act_archive},
	{"dsort", act_dsort},
};

bool gw_job_action(struct bck_call *c)
{
	for (size_t i = 0; c->action && i < ARRAY_SIZE(job_actions); i++) {
		if (!strcmp(c->action, job_actions[i].action)) {
			job_actions[i].fn(c);
			return true;
		}
	}
	return false;
}
