/*
 * gw_int.h - what the gateway's files share (not a public header): a
 * bucket request's state on its way through the I/O pool, the listing
 * fan-out the jobs' checks list through, and the bucket jobs' starts.
 */
#ifndef AISD_GW_INT_H
#define AISD_GW_INT_H

#include <jansson.h>
#include <stdbool.h>

#include "aisd/bmd.h"
#include "aisd/gateway.h"
#include "aisd/http.h"
#include "aisd/names.h"
#include "aisd/util.h"

enum bop_kind { BOP_CREATE, BOP_DESTROY, BOP_SET_PROPS };

struct bop {
	char name[NAME_BUCKET_MAX + 1];
	enum bop_kind kind;
	bmd_props_t props; /* create: the new bucket's */
	json_t *patch;     /* set-bprops: the request's value (borrowed from doc) */
	bool nonempty;     /* set-bprops of ec.*: some target listed an object; destroy of a bucket
			      with S3 object lock: some target listed a version */
	bool encode;       /* ec-encode: a layout change of a bucket that may hold objects */
	int err;
	buf_t msg;
	/* list */
	json_t *value;     /* list request (owned) */
	char query[2048];
	size_t pagesize;
	bool partial;      /* asked for: a page without some targets, marked so */
	bool cached_only;  /* a remote bucket's cached copies only (TGT_LS_CACHED) */
	json_t *missing;   /* the targets not heard from, when the page may lack names */
	buf_t out;
	/* ishard, archive, dsort */
	json_t *ishard;    /* the job's value (owned): the listing goes in it */
	char to[NAME_BUCKET_MAX + 1];
	const char *job;   /* "ishard" or "dsort" */
};

/* One request to /v1/buckets/B, parsed once by gw_buckets and handed to
 * the handler of its method and action: the bucket's entry as it was
 * (exists false: no bucket B), the body's "action" (NULL: none) and
 * "value" (both borrowed from doc). */
struct bck_call {
	http_req_t *req;
	cluster_t *cl;
	struct bop *o;
	bool exists;
	bmd_bucket_t bk;
	const char *action;
	json_t *doc, *value;
};

static inline cluster_t *cl_of(http_req_t *req) { return ((gateway_t *)req->ctx)->base.cl; }

/* gateway.c: every page of bucket's listing under prefix, entry by entry to
 * fn (its comment there); a listing's answer or its failure's; a bucket
 * job's declaration of what it does to bucket name (op: BMD_ACCESS_*, its
 * access property must allow it), false after a 403. */
void gw_list_pages(http_req_t *req, const char *bucket, const char *prefix, const char *until,
		   bool (*fn)(void *arg, json_t *entry), void *arg);
void gw_list_done(http_req_t *req);
bool gw_job_allowed(http_req_t *req, const char *name, unsigned op, const char *role);

/* bkjobs.c: a POST of a bucket job action (prefetch-listrange,
 * evict-listrange, copy-bck, etl-bck, ishard, archive, dsort) checked,
 * answered or started; false when c->action is none of them. */
bool gw_job_action(struct bck_call *c);

#endif
