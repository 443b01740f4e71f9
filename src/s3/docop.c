/*
 * docop.c - the bucket documents S3 reads and writes as a whole (CORS,
 * lifecycle, default encryption) served by one handler, each kind
 * described by its s3_doc_ops_t row (s3api.h) in its own file.
 *
 * Rules:
 *  1. The document lives in the BMD beside the bucket's entry (bmd_doc),
 *     in the kind's canonical form, so every node answers from the same
 *     text; a change goes through the primary (s3_bucket_set_doc), PUT
 *     answered 200 and DELETE 204 once every node has the new BMD.
 *  2. A PUT body is parsed with the kind's checks (an error answers the
 *     kind's S3 code), then written in canonical form, which must fit the
 *     BMD's limit for the kind (InvalidRequest naming it).
 *  3. A stored text that no longer parses (a newer node's, say) reads as
 *     none: GET answers the kind's "no configuration" error.
 *  4. Who may do what is decided before any of this (s3_authorize), by the
 *     sub-resource's action.
 */
#include <string.h>

#include "aisd/bmd.h"
#include "aisd/cluster.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

int s3_doc_of_bucket(s3_rq_t *r, const s3_doc_ops_t *ops, void *c)
{
	char *text = NULL;
	memset(c, 0, ops->size);
	if (!r->node.cl)
		return s3_bucket_exists(r) ? AIS_OK : AIS_ERR; /* a standalone target keeps none */
	const bmd_t *b;
	cluster_read_lock(r->node.cl, NULL, &b);
	bool found = b && bmd_get(b, r->bucket.ptr, r->bucket.len);
	const char *doc = found ? bmd_doc(b, ops->kind, r->bucket.ptr, r->bucket.len) : NULL;
	if (doc)
		text = arena_strndup(r->http->arena, doc, strlen(doc));
	cluster_read_unlock(r->node.cl);
	if (!found)
		return AIS_ERR;
	if (text && ops->load(r->http->arena, text, strlen(text), c) != AIS_OK)
		memset(c, 0, ops->size); /* rule 3 */
	return AIS_OK;
}

/* PUT's body (rule 2); the row is in r->op until s3_bucket_set_doc. */
static void put_body(s3_rq_t *r, buf_t *body)
{
	const s3_doc_ops_t *ops = r->op;
	void *c = arena_zalloc(r->http->arena, ops->size);
	const char *code = "MalformedXML", *why = NULL;
	buf_t x = BUF_INIT;
	if (ops->parse(r, body->ptr ? body->ptr : "", body->len, c, &code, &why) != AIS_OK) {
		if (why)
			s3_error(r, code, "%s", why);
		else
			s3_error(r, code, NULL);
		return;
	}
	ops->canonical(c, &x);
	if (x.len > bmd_doc_max(ops->kind)) {
		buf_free(&x);
		s3_error(r, "InvalidRequest", "The %s is over %zu bytes in its canonical form", bmd_doc_what(ops->kind),
			 bmd_doc_max(ops->kind));
		return;
	}
	s3_bucket_set_doc(r, ops->kind, arena_strndup(r->http->arena, x.ptr, x.len), 200);
	buf_free(&x);
}

int s3_doc_serve(s3_rq_t *r, const s3_doc_ops_t *ops)
{
	void *c = arena_zalloc(r->http->arena, ops->size);
	buf_t b = BUF_INIT;
	if (s3_doc_of_bucket(r, ops, c) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	switch (r->http->method) {
	case HTTP_HEAD:
		if (!ops->head_ok)
			break;
		/* fall through */
	case HTTP_GET:
		if (ops->none(c)) {
			s3_error(r, ops->none_code, "%s", ops->none_msg);
			return AIS_OK;
		}
		ops->answer(c, &b);
		s3_send_xml(r, 200, &b);
		return AIS_OK;
	case HTTP_PUT:
		r->op = (void *)ops;
		s3_read_body(r, put_body);
		return AIS_OK;
	case HTTP_DELETE:
		s3_bucket_set_doc(r, ops->kind, NULL, 204);
		return AIS_OK;
	default:
		break;
	}
	s3_error(r, "MethodNotAllowed", NULL);
	return AIS_OK;
}
