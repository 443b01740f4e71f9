/*
 * ssecfgop.c - a bucket's default server-side encryption: its row of the
 * bucket documents (s3_ssecfg_ops), by which docop.c serves ?encryption
 * (Put/Get/DeleteBucketEncryption; the XML: ssecfg.c) and s3_sse_put
 * (sse.c) looks up the default of a write that names no encryption.
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

static int ssecfg_load(arena_t *a, const char *text, size_t n, void *c)
{
	const char *why;
	(void)a;
	return s3_ssecfg_parse(text, n, c, &why);
}

static int ssecfg_parse(s3_rq_t *r, const char *p, size_t n, void *out, const char **code, const char **why)
{
	s3_ssecfg_t *c = out;
	if (s3_ssecfg_parse(p, n, c, why) != AIS_OK) {
		if (*why)
			*code = "InvalidArgument";
		return AIS_ERR;
	}
	const conf_t *cf = r->node.conf;
	if (c->mode == 'S' ? !cf->s3_sse_key_file[0] : !cf->s3_kms_key_file[0]) { /* rule 2 */
		*code = "NotImplemented";
		*why = c->mode == 'S' ? "SSE-S3 is not configured on this cluster (s3.sse_key_file)"
				      : "SSE-KMS is not configured on this cluster (s3.kms_key_file)";
		return AIS_ERR;
	}
	return AIS_OK;
}

static void ssecfg_canonical(const void *c, buf_t *b) { s3_ssecfg_xml(c, b); }

static void ssecfg_answer(const void *c, buf_t *b)
{
	buf_addstr(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	s3_ssecfg_xml(c, b);
}

static bool ssecfg_none(const void *c) { return !((const s3_ssecfg_t *)c)->mode; }

const s3_doc_ops_t s3_ssecfg_ops = {
	.kind = BMD_DOC_SSE,
	.size = sizeof(s3_ssecfg_t),
	.none_code = "ServerSideEncryptionConfigurationNotFoundError",
	.none_msg = "The server side encryption configuration was not found",
	.head_ok = true,
	.load = ssecfg_load,
	.parse = ssecfg_parse,
	.canonical = ssecfg_canonical,
	.answer = ssecfg_answer,
	.none = ssecfg_none,
};
