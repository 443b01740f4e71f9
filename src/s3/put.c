/*
 * put.c - the body of an S3 upload (PutObject, UploadPart): the object
 * layer's pipeline (ol_stream: two bounded buffers, the sink on the I/O
 * pool, backpressure) with the SigV4 body decoder in front. Every HTTP body
 * byte first goes through the decoder (s3auth.h: aws-chunked framing off,
 * chunk signatures, payload hash, Content-MD5, x-amz-checksum-*, and the
 * MD5 that becomes the ETag); only when its finish succeeds at the end of
 * the body does the sink commit, and the client hears 200 after that.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

static s3_put_t *put_of(ol_stream_t *s) { return s->arg; }

static int p_begin(ol_stream_t *s) { return put_of(s)->ops->begin(put_of(s)); }
static int p_write(ol_stream_t *s, const char *b, size_t n) { return put_of(s)->ops->write(put_of(s), b, n); }
static int p_commit(ol_stream_t *s) { return put_of(s)->ops->commit(put_of(s)); }
static void p_reply(ol_stream_t *s) { put_of(s)->ops->reply(put_of(s)); }

static void p_cleanup(ol_stream_t *s)
{
	s3_put_t *p = put_of(s);
	if (p->ops->cleanup)
		p->ops->cleanup(p);
}

static void p_fail(ol_stream_t *s, int err)
{
	s3_put_t *p = put_of(s);
	if (p->code && p->msg)
		s3_error(p->r, p->code, "%s", p->msg);
	else if (p->code)
		s3_error(p->r, p->code, NULL);
	else if (err == EAGAIN)
		s3_error(p->r, "ServiceUnavailable", "object not stored: %s", p->msg ? p->msg : "copies failed");
	else
		s3_error_msg(p->r, err, true, ais_errno(err)->remote ? p->msg : NULL);
}

static int emit(void *arg, const char *data, size_t n)
{
	ol_stream_t *s = arg;
	s3_put_t *p = put_of(s);
	if (!p->sse) {
		ol_stream_emit(s, data, n);
		return AIS_OK;
	}
	char enc[16 * 1024]; /* sse.c rule 2: ciphertext is what enters the object layer */
	while (n) {
		size_t k = MIN(n, sizeof(enc));
		if (s3_sse_xor(p->sse, p->off, data, enc, k) != AIS_OK)
			return AIS_ERR;
		ol_stream_emit(s, enc, k);
		p->off += k;
		data += k;
		n -= k;
	}
	return AIS_OK;
}

static int p_feed(ol_stream_t *s, const char *data, size_t n)
{
	s3_put_t *p = put_of(s);
	s3_autherr_t e;
	if (s3_body_feed(p->dec, data, n, emit, s, &e) != AIS_OK) {
		s3_error_auth(p->r, &e);
		return AIS_ERR;
	}
	return AIS_OK;
}

static int p_end(ol_stream_t *s)
{
	s3_put_t *p = put_of(s);
	s3_autherr_t e;
	if (s3_body_finish(p->dec, &e) != AIS_OK) {
		s3_error_auth(p->r, &e);
		return AIS_ERR;
	}
	s3_body_md5(p->dec, p->md5);
	hex_encode(p->md5, 16, p->md5hex);
	if (p->sse)
		s3_sse_etag(p->sse, p->md5, p->md5hex);
	const char *name, *value;
	if (s3_body_checksum(p->dec, &name, &value)) {
		p->ck = s3_ck_by_name(sv_from(name + strlen("x-amz-checksum-")));
		snprintf(p->ck_b64, sizeof(p->ck_b64), "%s", value);
	}
	return AIS_OK;
}

static const ol_stream_ops_t s3_stream_ops = {
	.begin = p_begin,
	.write = p_write,
	.commit = p_commit,
	.feed = p_feed,
	.end = p_end,
	.reply = p_reply,
	.fail = p_fail,
	.cleanup = p_cleanup,
};

void s3_put_ck_header(const s3_put_t *p, bool with_type)
{
	if (p->ck == S3_CK_NONE)
		return;
	http_resp_header(p->r->http, arena_printf(p->r->http->arena, "x-amz-checksum-%s", s3_ck_name(p->ck)), "%s",
			 p->ck_b64);
	if (with_type)
		http_resp_header(p->r->http, "x-amz-checksum-type", "FULL_OBJECT");
}

void s3_put_start(s3_rq_t *r, s3_put_t *p)
{
	p->r = r;
	r->op = p;
	if (!(p->dec = s3_body_for(r)))
		return;
	p->s.ops = &s3_stream_ops;
	p->s.arg = p;
	ol_stream_start(r->http, &p->s);
}
