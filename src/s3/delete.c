/*
 * delete.c - DeleteObjects (POST /BUCKET?delete): up to 1000 keys in one
 * XML body (Content-MD5 or x-amz-checksum-* checked by the body decoder
 * when given). Each key's every copy is deleted by its owner through the
 * object layer (ol_delete): here when this target owns it (or is
 * standalone), else with the native DELETE on the owner target. A missing key counts as deleted,
 * as S3 says; Quiet leaves successes out of the answer. A key whose delete
 * could not reach every holder of a copy (ol.h invariant 5) gets an Error
 * with Code ServiceUnavailable naming the targets; a version under S3
 * object lock one with Code AccessDenied (olver.c rule 8); a key the
 * bucket policy denies (s3_decide_key) an Error AccessDenied. In a bucket
 * that keeps versions a Deleted entry names the delete marker the delete
 * wrote (DeleteMarker, DeleteMarkerVersionId), or the one a VersionId
 * removed, as the owner's native DELETE answered.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "aisd/httpc.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/target.h"
#include "aisd/util.h"
#include "s3api.h"
#include "s3log.h"
#include "aisd/banned.h"

struct md {
	s3_delete_req_t dr;
	buf_t out;
};

static void md_cleanup(void *arg) { buf_free(&((struct md *)arg)->out); }

/* Deletes every copy of one key; AIS_OK when gone (or never there). The
 * key's owner does it through the object layer: this target when it is the
 * owner (or standalone), else the owner target, asked with the native
 * DELETE (which deletes every copy there). */
static int del_one(s3_rq_t *r, sv_t key, bool versioned, sv_t vid, buf_t *msg, int *status, char *dm_id)
{
	char url[CMAP_URL_MAX + 1];
	int self = 0;
	if (r->node.cl && !s3_place(&r->node, r->bucket, key, url, sizeof(url), &self)) {
		buf_addstr(msg, "no owner target");
		return AIS_ERR;
	}
	if (self == 0 && !versioned) { /* (a versioned bucket's: the native DELETE, olver.c rule 7) */
		buf_t why = BUF_INIT;
		int rc = AIS_OK;
		if (ol_delete_msg(r->http->ctx, r->bucket, key, r->node.cl != NULL, &why) != AIS_OK && errno != ENOENT) {
			*status = ais_errno(errno)->status;
			ais_errno_msg(msg, ais_errno(errno), errno, "object", why.ptr);
			rc = AIS_ERR;
		}
		buf_free(&why);
		return rc;
	}
	buf_t u = BUF_INIT, resp = BUF_INIT;
	int st = 0, rc = AIS_OK;
	tgt_url_obj(&u, url, r->bucket.ptr, r->bucket.len, key.ptr, key.len);
	if (vid.ptr) {
		buf_addstr(&u, "?version=");
		buf_add_pct(&u, vid, false);
		if (s3_lock_bypass(r)) /* decided here for the request (s3_declare) */
			buf_addstr(&u, "&bypass_governance=true");
	}
	if (httpc_sync("DELETE", u.ptr, NULL, NULL, 0, 30000, &resp, &st) != AIS_OK ||
	    (st != 200 && st != 204 && st != 404)) {
		json_t *j = st && resp.ptr ? json_loadb(resp.ptr, resp.len, 0, NULL) : NULL;
		const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
		buf_addf(msg, "owner target %s answered %d%s%s", url, st, m ? ": " : "", m ? m : "");
		json_decref(j);
		*status = st;
		rc = AIS_ERR;
	} else if (st == 200 && resp.ptr) { /* the version it wrote or removed, and whether a delete marker */
		json_t *j = json_loadb(resp.ptr, resp.len, 0, NULL);
		const char *id = j ? json_string_value(json_object_get(j, "version")) : NULL;
		if (id && json_is_true(json_object_get(j, "delete_marker")))
			snprintf(dm_id, NAME_VER_ID_LEN + 1, "%s", id);
		json_decref(j);
	}
	buf_free(&u);
	buf_free(&resp);
	return rc;
}

static void md_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct md *m = r->op;
	buf_t *b = &m->out;
	bool versioned = s3_history(r) != BMD_HIST_OFF;
	s3_xml_head(b, "DeleteResult");
	for (size_t i = 0; i < m->dr.n; i++) {
		sv_t key = {m->dr.objs[i].key, m->dr.objs[i].len};
		sv_t vid = m->dr.objs[i].vid;
		buf_t msg = BUF_INIT;
		const char *code = NULL;
		char dm_id[NAME_VER_ID_LEN + 1] = ""; /* the delete marker written or removed */
		int st = 0;
		if (vid.ptr && !versioned && sv_eqstr(vid, "null"))
			vid = (sv_t){NULL, 0}; /* the null version: the object */
		if (!name_object_valid(key.ptr, key.len))
			code = key.len > NAME_OBJECT_MAX ? "KeyTooLongError" : "InvalidArgument";
		else if (vid.ptr && ((!versioned || !olver_id_valid(vid)) && !sv_eqstr(vid, "null")))
			code = "InvalidArgument", buf_addstr(&msg, "Invalid version id specified");
		else if (s3_decide_key(r, key, vid.ptr != NULL) != AIS_OK) /* the bucket policy, per key */
			code = "AccessDenied", buf_addstr(&msg, "Access Denied: explicit deny in the bucket policy");
		else if (del_one(r, key, versioned, vid, &msg, &st, dm_id) != AIS_OK) /* a holder not reached: ServiceUnavailable */
			code = st == 503 ? "ServiceUnavailable" : st == 403 ? "AccessDenied" : "InternalError";
		s3_log_key(r, key, vid, code); /* its access log record (logging.c) */
		if (code) {
			buf_addstr(b, "<Error>");
			s3_xml_elem(b, "Key", key.ptr, key.len);
			if (vid.ptr)
				s3_xml_elem(b, "VersionId", vid.ptr, vid.len);
			s3_xml_elemstr(b, "Code", code);
			s3_xml_elemstr(b, "Message", msg.ptr ? msg.ptr : code);
			buf_addstr(b, "</Error>");
		} else if (!m->dr.quiet) {
			buf_addstr(b, "<Deleted>");
			s3_xml_elem(b, "Key", key.ptr, key.len);
			if (vid.ptr)
				s3_xml_elem(b, "VersionId", vid.ptr, vid.len);
			if (dm_id[0]) { /* a marker written (its id; a suspended bucket's: null), or one removed */
				s3_xml_elemstr(b, "DeleteMarker", "true");
				s3_xml_elemstr(b, "DeleteMarkerVersionId",
					       !vid.ptr && s3_history(r) == BMD_HIST_SUSPENDED ? "null" : dm_id);
			}
			buf_addstr(b, "</Deleted>");
		}
		buf_free(&msg);
	}
	s3_xml_close(b, "DeleteResult");
}

static void md_done(http_req_t *req) { s3_send_xml(req->state, 200, &((struct md *)((s3_rq_t *)req->state)->op)->out); }

static void md_body(s3_rq_t *r, buf_t *body)
{
	struct md *m = r->op;
	if (s3_parse_delete(r->http->arena, body->ptr ? body->ptr : "", body->len, &m->dr) != AIS_OK || m->dr.n == 0 ||
	    m->dr.n > S3_MAX_KEYS) {
		s3_error(r, "MalformedXML", m->dr.n > S3_MAX_KEYS ? "at most 1000 keys per request" : NULL);
		return;
	}
	r->http->state = r;
	s3_offload(r, md_work, md_done);
}

int s3_delete_objects(s3_rq_t *r)
{
	struct md *m = arena_zalloc(r->http->arena, sizeof(*m));
	arena_cleanup_add(r->http->arena, md_cleanup, m);
	r->op = m;
	if (!s3_bucket_exists(r)) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	s3_read_body(r, md_body);
	return AIS_OK;
}
