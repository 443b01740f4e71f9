/*
 * test_s3logging.c - S3 bucket logging, the pure parts: the configuration
 * parser and its stored form (logcfg.c), the record formatter, operation
 * names and log object names (logrec.c).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/arena.h"
#include "aisd/status.h"
#include "../../src/s3/s3log.h"
#include "aisd/banned.h"

#define DOC(x)                                                                                               \
	"<BucketLoggingStatus "                                                                              \
	"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LoggingEnabled><TargetBucket>logs"               \
	"</TargetBucket><TargetPrefix>log/</TargetPrefix>" x "</LoggingEnabled></BucketLoggingStatus>"

static enum s3log_verdict parse(arena_t *a, const char *doc, s3log_cfg_t *c, const char **why)
{
	return s3log_cfg_parse(a, doc, strlen(doc), c, why);
}

START_TEST(test_cfg_parse)
{
	arena_t *a = arena_new(4096);
	s3log_cfg_t c, back;
	const char *why;
	buf_t x = BUF_INIT;

	/* minimal: the defaults */
	ck_assert_int_eq(parse(a, DOC(""), &c, &why), S3LOG_OK);
	ck_assert(c.enabled);
	ck_assert(sv_eqstr(c.target, "logs") && sv_eqstr(c.prefix, "log/"));
	ck_assert(!c.partitioned && c.type == S3LOG_STANDARD && c.roll_s == 0 && c.batch == 0);
	/* every field */
	ck_assert_int_eq(
	        parse(a,
	              DOC("<TargetObjectKeyFormat><PartitionedPrefix><PartitionDateSource>EventTime"
	                  "</PartitionDateSource></PartitionedPrefix></TargetObjectKeyFormat>"
	                  "<LoggingType>Journal</LoggingType><ObjectRollTime>5</ObjectRollTime>"
	                  "<RecordsBatchSize>7</RecordsBatchSize><Filter><Key><FilterRule><Name>prefix</Name>"
	                  "<Value>test/</Value></FilterRule><FilterRule><Name>suffix</Name><Value>.txt</"
	                  "Value>"
	                  "</FilterRule></Key></Filter>"),
	              &c, &why),
	        S3LOG_OK);
	ck_assert(c.partitioned && c.event_time && c.type == S3LOG_JOURNAL && c.roll_s == 5 && c.batch == 7);
	ck_assert(sv_eqstr(c.fprefix, "test/") && sv_eqstr(c.fsuffix, ".txt"));
	ck_assert(s3log_filter_pass(&c, SV("test/a.txt")));
	ck_assert(!s3log_filter_pass(&c, SV("test/a.bin")));
	ck_assert(!s3log_filter_pass(&c, SV("other/a.txt")));
	/* the stored form loads back to the same, with its mtime */
	c.mtime_s = 1700000000;
	s3log_cfg_store(&c, &x);
	ck_assert_int_eq(s3log_cfg_load(a, x.ptr, x.len, &back), AIS_OK);
	ck_assert(s3log_cfg_same(&c, &back));
	ck_assert_int_eq(back.mtime_s, 1700000000);
	ck_assert_int_eq(s3log_cfg_load(a, "x <BucketLoggingStatus/>", 24, &back), AIS_ERR);
	buf_reset(&x);
	/* GetBucketLogging fills the roll time in */
	c.roll_s = 0;
	s3log_cfg_xml(&c, 300, &x);
	ck_assert_ptr_nonnull(strstr(x.ptr, "<ObjectRollTime>300</ObjectRollTime>"));
	ck_assert_ptr_nonnull(strstr(x.ptr, "<LoggingType>Journal</LoggingType>"));
	buf_free(&x);
	/* empty status: off */
	ck_assert_int_eq(parse(a, "<BucketLoggingStatus xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>",
	                       &c, &why),
	                 S3LOG_OK);
	ck_assert(!c.enabled);
	/* refusals */
	ck_assert_int_eq(parse(a, DOC("<LoggingType>kaboom</LoggingType>"), &c, &why), S3LOG_MALFORMED);
	ck_assert(!c.enabled);
	ck_assert_int_eq(parse(a,
	                       DOC("<TargetObjectKeyFormat><PartitionedPrefix><PartitionDateSource>kaboom"
	                           "</PartitionDateSource></PartitionedPrefix></TargetObjectKeyFormat>"),
	                       &c, &why),
	                 S3LOG_MALFORMED);
	ck_assert_int_eq(parse(a, DOC("<Bogus>1</Bogus>"), &c, &why), S3LOG_MALFORMED);
	ck_assert_int_eq(
	        parse(a,
	              "<BucketLoggingStatus><LoggingEnabled><TargetBucket>b</TargetBucket></LoggingEnabled>"
	              "</BucketLoggingStatus>",
	              &c, &why),
	        S3LOG_MALFORMED); /* no TargetPrefix */
	ck_assert_int_eq(parse(a, DOC("<ObjectRollTime>-1</ObjectRollTime>"), &c, &why), S3LOG_INVALID);
	ck_assert_int_eq(
	        parse(a,
	              DOC("<TargetGrants><Grant><Grantee><ID>x</ID></Grantee><Permission>READ</Permission>"
	                  "</Grant></TargetGrants>"),
	              &c, &why),
	        S3LOG_NYI);
	ck_assert_ptr_nonnull(why);
	ck_assert_int_eq(
	        parse(a,
	              DOC("<Filter><Key><FilterRule><Name>regex</Name><Value>.*</Value></FilterRule></Key>"
	                  "</Filter>"),
	              &c, &why),
	        S3LOG_NYI);
	ck_assert_int_eq(parse(a, "not xml", &c, &why), S3LOG_MALFORMED);
	arena_destroy(a);
}
END_TEST

/* A line splits, as s3-tests splits it ('[' and ']' as quotes), into n
 * fields; returns them in f (at most 32) or -1. */
static int split(const char *line, char f[][256])
{
	int n = 0;
	const char *p = line;
	while (*p && *p != '\n') {
		if (*p == ' ') {
			p++;
			continue;
		}
		const char *e;
		if (*p == '"' || *p == '[') {
			e = strchr(p + 1, *p == '"' ? '"' : ']');
			if (!e)
				return -1;
			snprintf(f[n++], 256, "%.*s", (int)(e - p - 1), p + 1);
			p = e + 1;
		} else {
			e = p;
			while (*e && *e != ' ' && *e != '\n')
				e++;
			snprintf(f[n++], 256, "%.*s", (int)(e - p), p);
			p = e;
		}
		if (n == 32)
			return -1;
	}
	return n;
}

START_TEST(test_record)
{
	buf_t b = BUF_INIT;
	char f[32][256];
	s3log_rec_t r = {.owner = "owner1",
	                 .bucket = SV("src"),
	                 .time_ns = 1549411238LL * 1000000000LL,
	                 .remote_ip = "192.0.2.3",
	                 .requester = "owner1",
	                 .request_id = "3E57427F3EXAMPLE",
	                 .operation = "REST.GET.OBJECT",
	                 .key = SV("dir/a b\"[x].txt"),
	                 .method = SV("GET"),
	                 .target = SV("/src/dir/a%20b?x=\"1\""),
	                 .status = 206,
	                 .error_code = NULL,
	                 .bytes_sent = 113,
	                 .object_size = 4096,
	                 .total_ms = 7,
	                 .turnaround_ms = 6,
	                 .referer = {NULL, 0},
	                 .user_agent = SV("Boto3/1.0 [x] \"q\""),
	                 .version_id = {NULL, 0},
	                 .host_id = "h1",
	                 .sig_version = "SigV4",
	                 .auth_type = "AuthHeader",
	                 .host = SV("127.0.0.1:8080"),
	                 .acl_required = true};
	s3log_rec_format(&r, S3LOG_STANDARD, &b);
	ck_assert_int_eq(b.ptr[b.len - 1], '\n');
	ck_assert_int_eq(split(b.ptr, f), 26);
	ck_assert_str_eq(f[0], "owner1");
	ck_assert_str_eq(f[1], "src");
	ck_assert_str_eq(f[2], "06/Feb/2019:00:00:38 +0000");
	ck_assert_str_eq(f[3], "192.0.2.3");
	ck_assert_str_eq(f[5], "3E57427F3EXAMPLE");
	ck_assert_str_eq(f[6], "REST.GET.OBJECT");
	ck_assert_str_eq(f[7], "dir/a%20b%22%5Bx%5D.txt");
	ck_assert_str_eq(f[8], "GET /src/dir/a%20b?x=%221%22 HTTP/1.1");
	ck_assert_str_eq(f[9], "206");
	ck_assert_str_eq(f[10], "-");
	ck_assert_str_eq(f[11], "113");
	ck_assert_str_eq(f[12], "4096");
	ck_assert_str_eq(f[13], "7");
	ck_assert_str_eq(f[14], "6");
	ck_assert_str_eq(f[15], "-");
	ck_assert_str_eq(f[16], "Boto3/1.0 %5Bx%5D %22q%22");
	ck_assert_str_eq(f[17], "-");
	ck_assert_str_eq(f[19], "SigV4");
	ck_assert_str_eq(f[20], "-");
	ck_assert_str_eq(f[21], "AuthHeader");
	ck_assert_str_eq(f[22], "127.0.0.1:8080");
	ck_assert_str_eq(f[24], "-");
	ck_assert_str_eq(f[25], "Yes");
	/* anonymous, no key, no size */
	buf_reset(&b);
	r.requester = NULL, r.key = (sv_t){NULL, 0}, r.object_size = -1, r.bytes_sent = 0, r.auth_type = NULL;
	r.error_code = "NoSuchBucket";
	s3log_rec_format(&r, S3LOG_STANDARD, &b);
	ck_assert_int_eq(split(b.ptr, f), 26);
	ck_assert_str_eq(f[4], "-");
	ck_assert_str_eq(f[7], "-");
	ck_assert_str_eq(f[10], "NoSuchBucket");
	ck_assert_str_eq(f[11], "-");
	ck_assert_str_eq(f[12], "-");
	ck_assert_str_eq(f[21], "-");
	/* Journal: 8 fields */
	buf_reset(&b);
	r.key = SV("k"), r.object_size = 5, r.etag = SV("abc"), r.operation = "REST.PUT.OBJECT";
	s3log_rec_format(&r, S3LOG_JOURNAL, &b);
	ck_assert_int_eq(split(b.ptr, f), 8);
	ck_assert_str_eq(f[3], "REST.PUT.OBJECT");
	ck_assert_str_eq(f[4], "k");
	ck_assert_str_eq(f[5], "5");
	ck_assert_str_eq(f[7], "abc");
	buf_free(&b);
}
END_TEST

START_TEST(test_operation)
{
	char op[S3LOG_OP_MAX];
	ck_assert_str_eq(s3log_operation("GET", true, SV(""), false, op, sizeof(op)), "REST.GET.OBJECT");
	ck_assert_str_eq(s3log_operation("PUT", true, SV(""), true, op, sizeof(op)), "REST.PUT.OBJECT");
	ck_assert_str_eq(s3log_operation("PUT", true, SV("partNumber=1&uploadId=x"), false, op, sizeof(op)),
	                 "REST.PUT.PART");
	ck_assert_str_eq(s3log_operation("POST", true, SV("uploadId=x"), false, op, sizeof(op)),
	                 "REST.POST.UPLOAD");
	ck_assert_str_eq(s3log_operation("POST", true, SV("uploads"), false, op, sizeof(op)),
	                 "REST.POST.UPLOADS");
	ck_assert_str_eq(s3log_operation("PUT", true, SV("tagging"), false, op, sizeof(op)),
	                 "REST.PUT.OBJECT_TAGGING");
	ck_assert_str_eq(s3log_operation("PUT", true, SV("acl"), false, op, sizeof(op)), "REST.PUT.ACL");
	ck_assert_str_eq(s3log_operation("PUT", true, SV("legal-hold"), false, op, sizeof(op)),
	                 "REST.PUT.LEGAL_HOLD");
	ck_assert_str_eq(s3log_operation("GET", false, SV("list-type=2&prefix="), false, op, sizeof(op)),
	                 "REST.GET.BUCKET");
	ck_assert_str_eq(s3log_operation("GET", false, SV("versioning"), false, op, sizeof(op)),
	                 "REST.GET.VERSIONING");
	ck_assert_str_eq(s3log_operation("POST", false, SV("delete"), false, op, sizeof(op)),
	                 "REST.POST.MULTI_OBJECT_DELETE");
	ck_assert_str_eq(s3log_operation("GET", false, SV("policyStatus"), false, op, sizeof(op)),
	                 "REST.GET.BUCKETPOLICYSTATUS");
	ck_assert_str_eq(s3log_operation("GET", false, SV("aclx=1"), false, op, sizeof(op)),
	                 "REST.GET.BUCKET");
	ck_assert(s3log_journal_op("REST.PUT.OBJECT", 200));
	ck_assert(!s3log_journal_op("REST.PUT.OBJECT", 403));
	ck_assert(!s3log_journal_op("REST.GET.OBJECT", 200));
}
END_TEST

START_TEST(test_object_name)
{
	buf_t b = BUF_INIT;
	s3log_cfg_t c = {.enabled = true, .prefix = SV("log/")};
	s3log_object_name(&c, "owner1", "us-east-1", SV("src"), 1549411238, 0, "n1-1", &b);
	ck_assert_str_eq(b.ptr, "log/2019-02-06-00-00-38-n1-1");
	buf_reset(&b);
	c.partitioned = true;
	s3log_object_name(&c, "owner1", "us-east-1", SV("src"), 1549411238, 1549411238 - 86400, "n1-2", &b);
	ck_assert_str_eq(b.ptr, "log/owner1/us-east-1/src/2019/02/06/2019-02-06-00-00-38-n1-2");
	buf_reset(&b);
	c.event_time = true; /* the first record's day */
	s3log_object_name(&c, "owner1", "us-east-1", SV("src"), 1549411238, 1549411238 - 86400, "n1-3", &b);
	ck_assert_str_eq(b.ptr, "log/owner1/us-east-1/src/2019/02/05/2019-02-06-00-00-38-n1-3");
	buf_free(&b);
}
END_TEST

static Suite *s3logging_suite(void)
{
	Suite *s = suite_create("s3logging");
	TCase *tc = tcase_create("s3logging");
	tcase_add_test(tc, test_cfg_parse);
	tcase_add_test(tc, test_record);
	tcase_add_test(tc, test_operation);
	tcase_add_test(tc, test_object_name);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(s3logging_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
