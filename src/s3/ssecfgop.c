/*
 * ssecfgop.c - a bucket's default server-side encryption served: ?encryption
 * on a bucket (Put/Get/DeleteBucketEncryption; the XML: ssecfg.c), and the
 * lookup that s3_sse_put (sse.c) makes for a write that
 * names no encryption.
 *
 * Rules:
 *  1. The configuration lives in the BMD, beside the bucket's entry
 *     (bmd_doc BMD_DOC_SSE, canonical XML of one line), changed through the
 *     primary like the bucket's CORS rules, so every target that owns a
 *     key of the bucket applies the same default.
 *  2. It is one rule: SSEAlgorithm AES256 (SSE-S3) or aws:kms (SSE-KMS,
 *     with an optional KMSMasterKeyID; none: the newest key of
 *     s3.kms_key_file), and BucketKeyEnabled, which is kept and answered
 *     but changes nothing (every object has its own data key anyway).
 *     A mode the cluster has no key file for is refused at Put (501), so a
 *     bucket never claims a default it cannot apply.
 *  3. The default applies to every write that names no encryption itself
 *     and that sse.c serves: PutObject, browser POST, CopyObject and
 *     CreateMultipartUpload (its parts then); a write that names one
 *     (SSE-C included) uses its own.
 *     A stored configuration that no longer parses is treated as none.
 */
#include <string.h>

#include "aisd/bmd.h"
#include "aisd/cluster.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

int s3_ssecfg_of_bucket(s3_rq_t *r, s3_ssecfg_t *out)
{
	char *text = NULL;
	const char *why;
	memset(out, 0, sizeof(*out));
	if (!r->node.cl)
		return s3_bucket_exists(r) ? AIS_OK : AIS_ERR; /* a standalone target keeps none */
	const bmd_t *b;
	cluster_read_lock(r->node.cl, NULL, &b);
	bool found = b && bmd_get(b, r->bucket.ptr, r->bucket.len);
	const char *doc = found ? bmd_doc(b, BMD_DOC_SSE, r->bucket.ptr, r->bucket.len) : NULL;
	if (doc)
		text = arena_strndup(r->http->arena, doc, strlen(doc));
	cluster_read_unlock(r->node.cl);
	if (!found)
		return AIS_ERR;
	if (text && s3_ssecfg_parse(text, strlen(text), out, &why) != AIS_OK)
		memset(out, 0, sizeof(*out)); /* rule 3 */
	return AIS_OK;
}

static void put_body(s3_rq_t *r, buf_t *body)
{
	s3_ssecfg_t c;
	const char *why;
	buf_t x = BUF_INIT;
	if (s3_ssecfg_parse(body->ptr ? body->ptr : "", body->len, &c, &why) != AIS_OK) {
		if (why)
			s3_error(r, "InvalidArgument", "%s", why);
		else
			s3_error(r, "MalformedXML", NULL);
		return;
	}
	const conf_t *cf = r->node.conf;
	if (c.mode == 'S' ? !cf->s3_sse_key_file[0] : !cf->s3_kms_key_file[0]) { /* rule 2 */
		s3_error(r, "NotImplemented", "%s is not configured on this cluster (%s)",
			 c.mode == 'S' ? "SSE-S3" : "SSE-KMS", c.mode == 'S' ? "s3.sse_key_file" : "s3.kms_key_file");
		return;
	}
	s3_ssecfg_xml(&c, &x);
	s3_bucket_set_doc(r, BMD_DOC_SSE, arena_strndup(r->http->arena, x.ptr, x.len), 200);
	buf_free(&x);
}

int s3_bucket_encryption(s3_rq_t *r)
{
	s3_ssecfg_t c;
	buf_t b = BUF_INIT;
	if (s3_ssecfg_of_bucket(r, &c) != AIS_OK) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	switch (r->http->method) {
	case HTTP_GET:
	case HTTP_HEAD:
		if (!c.mode) {
			s3_error(r, "ServerSideEncryptionConfigurationNotFoundError",
				 "The server side encryption configuration was not found");
			return AIS_OK;
		}
		buf_addstr(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
		s3_ssecfg_xml(&c, &b);
		s3_send_xml(r, 200, &b);
		return AIS_OK;
	case HTTP_PUT:
		s3_read_body(r, put_body);
		return AIS_OK;
	case HTTP_DELETE:
		s3_bucket_set_doc(r, BMD_DOC_SSE, NULL, 204);
		return AIS_OK;
	default:
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
}
