/*
 * errors.c - S3's error answers: the code table (status and standard
 * message per code), the XML error document
 * <Error><Code/><Message/>[<HeadersNotSigned/>]<Resource/><RequestId/></Error>,
 * and the headers every S3 answer carries (x-amz-request-id). A HEAD error
 * has no body, as S3 sends none.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "s3log.h"
#include "aisd/banned.h"

static const struct {
	const char *code;
	int status;
	const char *msg;
} codes[] = {
	{"AccessDenied", 403, "Access Denied"},
	{"BadDigest", 400, "The Content-MD5 you specified did not match what we received."},
	{"BucketAlreadyExists", 409, "The requested bucket name is not available."},
	{"BucketAlreadyOwnedByYou", 409, "Your previous request to create the named bucket succeeded and you already own it."},
	{"BucketNotEmpty", 409, "The bucket you tried to delete is not empty"},
	{"EntityTooLarge", 400, "Your proposed upload exceeds the maximum allowed object size."},
	{"EntityTooSmall", 400, "Your proposed upload is smaller than the minimum allowed object size."},
	{"IllegalLocationConstraintException", 400, "The location constraint is incompatible for the region specific endpoint this request was sent to."},
	{"IncompleteBody", 400, "You did not provide the number of bytes specified by the Content-Length HTTP header."},
	{"InternalError", 500, "We encountered an internal error. Please try again."},
	{"InvalidArgument", 400, "Invalid Argument"},
	{"InvalidBucketName", 400, "The specified bucket is not valid."},
	{"InvalidDigest", 400, "The Content-MD5 you specified is not valid."},
	{"InvalidLocationConstraint", 400, "The specified location constraint is not valid."},
	{"InvalidPart", 400, "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag."},
	{"InvalidPartOrder", 400, "The list of parts was not in ascending order. Parts must be ordered by part number."},
	{"InvalidURI", 400, "Couldn't parse the specified URI."},
	{"InvalidRange", 416, "The requested range is not satisfiable"},
	{"InvalidRequest", 400, "Invalid Request"},
	{"InvalidTag", 400, "The tag provided was not a valid tag."},
	{"InvalidPartNumber", 416, "The requested partnumber is not satisfiable"},
	{"KeyTooLongError", 400, "Your key is too long"},
	{"AccessControlListNotSupported", 400, "The bucket does not allow ACLs"},
	{"InvalidBucketAclWithObjectOwnership", 400, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting"},
	{"MalformedACLError", 400, "The XML you provided was not well-formed or did not validate against our published schema."},
	{"MissingSecurityHeader", 400, "Your request was missing a required header."},
	{"OperationAborted", 409, "A conflicting conditional operation is currently in progress against this resource. Try again."},
	{"UnresolvableGrantByEmailAddress", 400, "The e-mail address you provided does not match any account on record."},
	{"MalformedPolicy", 400, "Policies must be valid JSON and the first byte must be '{'"},
	{"MalformedPOSTRequest", 400, "The body of your POST request is not well-formed multipart/form-data."},
	{"InvalidPolicyDocument", 400, "The content of the form does not meet the conditions specified in the policy document."},
	{"MalformedXML", 400, "The XML you provided was not well-formed or did not validate against our published schema"},
	{"MetadataTooLarge", 400, "Your metadata headers exceed the maximum allowed metadata size."},
	{"MethodNotAllowed", 405, "The specified method is not allowed against this resource."},
	{"MissingContentLength", 411, "You must provide the Content-Length HTTP header."},
	{"NoSuchBucket", 404, "The specified bucket does not exist"},
	{"NoSuchKey", 404, "The specified key does not exist."},
	{"NoSuchVersion", 404, "The specified version does not exist."},
	/* object lock (objlock.c) */
	{"InvalidBucketState", 409, "The request is not valid with the current state of the bucket."},
	{"InvalidRetentionPeriod", 400, "Default retention period must be a positive integer value."},
	{"NoSuchObjectLockConfiguration", 404, "The specified object does not have a ObjectLock configuration."},
	/* configurations no bucket has (nyi.c): the message comes with the answer */
	{"NoSuchTagSet", 404, NULL},
	{"NoSuchBucketPolicy", 404, NULL},
	{"NoSuchCORSConfiguration", 404, NULL},
	{"NoSuchLifecycleConfiguration", 404, NULL},
	{"ServerSideEncryptionConfigurationNotFoundError", 404, NULL},
	{"ObjectLockConfigurationNotFoundError", 404, NULL},
	{"NoSuchWebsiteConfiguration", 404, NULL},
	{"ReplicationConfigurationNotFoundError", 404, NULL},
	{"OwnershipControlsNotFoundError", 404, NULL},
	{"NoSuchPublicAccessBlockConfiguration", 404, NULL},
	{"NoSuchUpload", 404, "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed."},
	{"NotImplemented", 501, "A header you provided implies functionality that is not implemented"},
	{"NotModified", 304, "Not Modified"},
	{"PreconditionFailed", 412, "At least one of the pre-conditions you specified did not hold"},
	{"ServiceUnavailable", 503, "Please reduce your request rate."},
	{"TooManyUploads", 400, "The bucket has too many multipart uploads in progress."},
	{"InsufficientStorage", 507, "The node has no space left for this upload."},
	{"BadGateway", 502, "A target did not answer."},
	{"GatewayTimeout", 504, "The remote backend did not answer in time."},
};

int s3_error_http_status(const char *code)
{
	for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
		if (!strcmp(codes[i].code, code))
			return codes[i].status;
	return 400;
}

static const char *std_msg(const char *code)
{
	for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
		if (!strcmp(codes[i].code, code) && codes[i].msg)
			return codes[i].msg;
	return code;
}

void s3_common_headers(s3_rq_t *r)
{
	http_resp_header(r->http, "x-amz-request-id", "%s", r->http->id_str);
	http_resp_header(r->http, "x-amz-id-2", "%s", r->http->id_str);
}

void s3_send_xml(s3_rq_t *r, int status, buf_t *b)
{
	s3_common_headers(r);
	http_resp_status(r->http, status);
	http_resp_header(r->http, "Content-Type", "application/xml");
	http_resp_send_buf(r->http, b);
}

/* The error document, with one more element (tag, val) after Message when
 * tag is set (S3's HeadersNotSigned, ...). */
static void error_doc(s3_rq_t *r, int status, const char *code, const char *msg, const char *tag,
		      const char *val)
{
	http_req_t *req = r->http;
	buf_t b = BUF_INIT;

	s3_log_error(r, code); /* its access log record (logging.c) */
	if (http_resp_started(req))
		return;
	if (!msg || !*msg)
		msg = std_msg(code);
	if (status >= 500 && status != 501) { /* (501: what the client asked for is not built) */
		buf_t t = BUF_INIT;
		http_target_redact(req->target, &t); /* a presigned URL is a credential */
		log_warnx("S3 %s %.*s: %d %s: %s", http_method_name(req->method), (int)MIN(t.len, 256), t.ptr ? t.ptr : "",
			  status, code, msg);
		buf_free(&t);
	}
	s3_common_headers(r);
	http_resp_status(req, status);
	if (status == 304 || req->method == HTTP_HEAD) {
		http_resp_send_head(req, 0);
		return;
	}
	s3_xml_head(&b, NULL);
	s3_xml_open(&b, "Error");
	s3_xml_elemstr(&b, "Code", code);
	s3_xml_elemstr(&b, "Message", msg);
	if (tag)
		s3_xml_elemstr(&b, tag, val);
	if (r->bucket.len)
		s3_xml_elem(&b, "BucketName", r->bucket.ptr, r->bucket.len);
	if (r->key.len) {
		sv_t key = s3_key_named(r); /* never a version's stored name */
		s3_xml_elem(&b, "Key", key.ptr, key.len);
	}
	s3_xml_elem(&b, "Resource", r->resource.ptr ? r->resource.ptr : "/", r->resource.ptr ? r->resource.len : 1);
	s3_xml_elemstr(&b, "RequestId", req->id_str);
	s3_xml_close(&b, "Error");
	http_resp_header(req, "Content-Type", "application/xml");
	http_resp_send_buf(req, &b);
}

void s3_error_status(s3_rq_t *r, int status, const char *code, const char *msg)
{
	error_doc(r, status, code, msg, NULL, NULL);
}

void s3_error(s3_rq_t *r, const char *code, const char *fmt, ...)
{
	buf_t msg = BUF_INIT;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		buf_vaddf(&msg, fmt, ap);
		va_end(ap);
	}
	s3_error_status(r, s3_error_http_status(code), code, msg.ptr);
	buf_free(&msg);
}

void s3_error_auth(s3_rq_t *r, const s3_autherr_t *e)
{
	error_doc(r, e->status, e->code, e->message, e->headers_not_signed[0] ? "HeadersNotSigned" : NULL,
		  e->headers_not_signed);
}

/* The S3 error of e (the answer to err, status.h): a remote backend's
 * failure and a 500 say what failed, other codes keep their standard
 * message; msg, when not empty, follows. */
static void error_of(s3_rq_t *r, const ais_errno_t *e, int err, bool object, const char *msg)
{
	if (err == ENOENT) {
		s3_error(r, object && s3_bucket_exists(r) ? "NoSuchKey" : "NoSuchBucket", NULL);
		return;
	}
	const char *what = e->phrase ? e->phrase + strspn(e->phrase, ": ") : strerror(err);
	if (msg && *msg)
		s3_error(r, e->s3code, "%s: %s", what, msg);
	else if (e->remote || e->status == 500)
		s3_error(r, e->s3code, "%s", what);
	else
		s3_error(r, e->s3code, NULL);
}

void s3_error_errno(s3_rq_t *r, int err, bool object) { error_of(r, ais_errno(err), err, object, NULL); }

void s3_error_msg(s3_rq_t *r, int err, bool object, const char *msg) { error_of(r, ais_errno(err), err, object, msg); }

void s3_error_read(s3_rq_t *r, int err, const char *msg)
{
	error_of(r, ais_errno_read(err, msg && *msg), err, true, msg);
}

void s3_refuse(http_req_t *req, int status, const char *code, const char *msg)
{
	s3_rq_t r = {.http = req, .resource = req->path};
	s3_error_status(&r, status, code, msg);
}
