/*
 * test_s3xml.c - the S3 API's pure pieces: the request-body parsers
 * (Delete, CompleteMultipartUpload, CreateBucketConfiguration: shapes,
 * entities, namespaces, refusals of DOCTYPE, bad nesting and bad values),
 * the XML writer's escaping (its output parses back to the same text),
 * S3 metadata's encoding in custom metadata (any value round-trips), tag
 * sets (x-amz-tagging, <Tagging>, S3's limits), part ranges, object
 * lock's pieces (ObjectLockConfiguration, ISO 8601 dates, the BMD's
 * s3lock form, which versions the object layer refuses to remove) and
 * CORS configurations (parse, canonical form, matching, S3's refusals).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/arena.h"
#include "aisd/bmd.h"
#include "aisd/olver.h"
#include "aisd/status.h"
#include "../../src/s3/s3api.h"
#include "aisd/banned.h"

#define S(lit) lit, sizeof(lit) - 1

START_TEST(test_delete)
{
	arena_t *a = arena_new(4096);
	s3_delete_req_t d;
	ck_assert_int_eq(s3_parse_delete(a, S("<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>"
					       "<Object><Key>a &amp; b</Key></Object><Object><Key>x<![CDATA[<y>]]></Key>"
					       "<VersionId>null</VersionId></Object></Delete>"),
					 &d),
			 AIS_OK);
	ck_assert(d.quiet);
	ck_assert_uint_eq(d.n, 2);
	ck_assert_str_eq(d.objs[0].key, "a & b");
	ck_assert_str_eq(d.objs[1].key, "x<y>");
	ck_assert_int_eq(s3_parse_delete(a, S("<Delete><Object></Object></Delete>"), &d), AIS_ERR); /* no Key */
	ck_assert_int_eq(s3_parse_delete(a, S("<Delete><Quiet>maybe</Quiet></Delete>"), &d), AIS_ERR);
	ck_assert_int_eq(s3_parse_delete(a, S("<Other/>"), &d), AIS_ERR);
	ck_assert_int_eq(s3_parse_delete(a, S("<Delete><Object><Key>a</Key>"), &d), AIS_ERR); /* truncated */
	ck_assert_int_eq(s3_parse_delete(a, S("<!DOCTYPE d [<!ENTITY e \"x\">]><Delete><Object><Key>&e;</Key></Object></Delete>"), &d),
			 AIS_ERR);
	/* nesting bound */
	char deep[400] = "";
	for (int i = 0; i < 20; i++)
		memcpy(deep + 3 * i, "<a>", 4);
	ck_assert_int_eq(s3_parse_delete(a, deep, strlen(deep), &d), AIS_ERR);
	arena_destroy(a);
}
END_TEST

START_TEST(test_complete)
{
	arena_t *a = arena_new(4096);
	s3_complete_req_t c;
	ck_assert_int_eq(s3_parse_complete(a, S("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
						 "<ETag>\"0123456789ABCDEF0123456789abcdef\"</ETag></Part><Part>"
						 "<ETag>fedcba98765432100123456789abcdef</ETag><PartNumber> 2 </PartNumber>"
						 "</Part></CompleteMultipartUpload>"),
					   &c),
			 AIS_OK);
	ck_assert_uint_eq(c.n, 2);
	ck_assert_uint_eq(c.parts[0].num, 1);
	ck_assert_str_eq(c.parts[0].etag, "0123456789abcdef0123456789abcdef"); /* quoted, upper case */
	ck_assert_uint_eq(c.parts[1].num, 2);
	ck_assert_str_eq(c.parts[1].etag, "fedcba98765432100123456789abcdef"); /* unquoted */
	ck_assert_int_eq(s3_parse_complete(a, S("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
						 "<ETag>\"short\"</ETag></Part></CompleteMultipartUpload>"),
					   &c),
			 AIS_OK);
	ck_assert_str_eq(c.parts[0].etag, ""); /* not an MD5: never matches a part */
	ck_assert_int_eq(s3_parse_complete(a, S("<CompleteMultipartUpload><Part><PartNumber>x</PartNumber>"
						 "<ETag>a</ETag></Part></CompleteMultipartUpload>"),
					   &c),
			 AIS_ERR);
	ck_assert_int_eq(s3_parse_complete(a, S("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
						 "</Part></CompleteMultipartUpload>"),
					   &c),
			 AIS_ERR);
	arena_destroy(a);
}
END_TEST

START_TEST(test_create_bucket)
{
	arena_t *a = arena_new(4096);
	sv_t loc;
	const char *other;
	ck_assert_int_eq(s3_parse_create_bucket(a, S("<CreateBucketConfiguration><LocationConstraint> eu-west-1 "
						      "</LocationConstraint></CreateBucketConfiguration>"),
						&loc, &other),
			 AIS_OK);
	ck_assert(sv_eqstr(loc, "eu-west-1"));
	ck_assert_ptr_null(other);
	ck_assert_int_eq(s3_parse_create_bucket(a, S("<CreateBucketConfiguration/>"), &loc, &other), AIS_OK);
	ck_assert_uint_eq(loc.len, 0);
	ck_assert_int_eq(s3_parse_create_bucket(a, S("not xml"), &loc, &other), AIS_ERR);
	/* a child other than LocationConstraint: its name, whatever it holds */
	ck_assert_int_eq(s3_parse_create_bucket(a, S("<CreateBucketConfiguration><LocationConstraint>eu-west-1"
						      "</LocationConstraint><Bucket><Type>Directory</Type>"
						      "</Bucket><Tags/></CreateBucketConfiguration>"),
						&loc, &other),
			 AIS_OK);
	ck_assert(sv_eqstr(loc, "eu-west-1"));
	ck_assert_str_eq(other, "Bucket");
	arena_destroy(a);
}
END_TEST

static int one_key(void *arg, const char *path, const char *text, size_t len)
{
	buf_t *b = arg;
	if (!strcmp(path, "R/Key"))
		buf_add(b, text, len);
	return AIS_OK;
}

START_TEST(test_writer_escapes)
{
	const char key[] = "a<b>&\"c'\x01\x7f\xc3\xa9 \r\n\t";
	buf_t x = BUF_INIT, back = BUF_INIT;
	buf_addstr(&x, "<R>");
	s3_xml_elem(&x, "Key", key, sizeof(key) - 1);
	buf_addstr(&x, "</R>");
	/* control characters other than tab/CR/LF are not XML 1.0: expat refuses
	 * them even as references; the rest must come back exactly */
	ck_assert_int_eq(s3_xml_parse(x.ptr, x.len, one_key, &back), AIS_ERR);
	buf_reset(&x);
	const char key2[] = "a<b>&\"c' \xc3\xa9\r\n\t";
	buf_addstr(&x, "<R>");
	s3_xml_elem(&x, "Key", key2, sizeof(key2) - 1);
	buf_addstr(&x, "</R>");
	ck_assert_int_eq(s3_xml_parse(x.ptr, x.len, one_key, &back), AIS_OK);
	ck_assert_uint_eq(back.len, sizeof(key2) - 1);
	ck_assert(!memcmp(back.ptr, key2, back.len));
	buf_free(&x);
	buf_free(&back);
}
END_TEST

START_TEST(test_meta_roundtrip)
{
	arena_t *a = arena_new(4096);
	s3_meta_t m = {0}, d;
	buf_t enc = BUF_INIT;
	snprintf(m.etag, sizeof(m.etag), "0123456789abcdef0123456789abcdef-3");
	char ct[] = "text/plain; charset=utf-8", cd[] = "attachment; filename=\"a,b=c%.txt\"";
	char n0[] = "color", v0[] = "blue, green=yes %41 \xc3\xa9", n1[] = "empty", v1[] = "";
	m.ctype = ct;
	m.cdisp = cd;
	m.nuser = 2;
	m.user[0].name = n0;
	m.user[0].value = v0;
	m.user[1].name = n1;
	m.user[1].value = v1;
	ck_assert_int_eq(s3_meta_encode(&m, &enc), AIS_OK);
	ck_assert_ptr_null(memchr(enc.ptr, '\n', enc.len));
	s3_meta_decode(a, enc.ptr, &d);
	ck_assert_str_eq(d.etag, m.etag);
	ck_assert_str_eq(d.ctype, m.ctype);
	ck_assert_str_eq(d.cdisp, m.cdisp);
	ck_assert_ptr_null(d.cenc);
	ck_assert_uint_eq(d.nuser, 2);
	ck_assert_str_eq(d.user[0].name, "color");
	ck_assert_str_eq(d.user[0].value, m.user[0].value);
	ck_assert_str_eq(d.user[1].value, "");
	/* native custom metadata beside it is ignored, not mangled */
	s3_meta_decode(a, "owner=me,s3.ct=a%2Cb", &d);
	ck_assert_str_eq(d.ctype, "a,b");
	/* too long for the store */
	char big[STORE_CUSTOM_MAX + 16];
	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	m.user[1].value = big;
	buf_reset(&enc);
	ck_assert_int_eq(s3_meta_encode(&m, &enc), AIS_ERR);
	buf_free(&enc);
	arena_destroy(a);
}
END_TEST

START_TEST(test_acl)
{
	s3acl_t acl, back;
	buf_t t = BUF_INIT;
	bool email;
	/* canned: group grants first, then the owner */
	ck_assert_int_eq(s3acl_canned("public-read-write", 17, "me", NULL, &acl), AIS_OK);
	ck_assert_int_eq(s3acl_encode(&acl, &t), AIS_OK);
	ck_assert_str_eq(t.ptr, "aR:aW:uFme");
	ck_assert_int_eq(s3acl_decode(t.ptr, t.len, &back), AIS_OK);
	ck_assert_uint_eq(back.n, 3);
	ck_assert_uint_eq(s3acl_perms(&back, NULL, false), S3ACL_READ | S3ACL_WRITE);
	ck_assert_uint_eq(s3acl_perms(&back, "me", false), S3ACL_FULL);
	ck_assert_uint_eq(s3acl_perms(&back, "me", true), S3ACL_READ | S3ACL_WRITE); /* groups only */
	ck_assert_int_eq(s3acl_canned("bucket-owner-read", 17, "me", "bo", &acl), AIS_OK);
	ck_assert_uint_eq(s3acl_perms(&acl, "bo", false), S3ACL_READ);
	ck_assert_int_eq(s3acl_canned("bucket-owner-read", 17, "me", NULL, &acl), AIS_ERR); /* objects only */
	ck_assert_int_eq(s3acl_canned("nope", 4, "me", NULL, &acl), AIS_ERR);
	/* malformed text */
	static const char *const bad[] = {"x", "uF", "uX1", "aR:", ":aR", "aRx", "zR", "uFa:b", NULL};
	for (int i = 0; bad[i]; i++)
		ck_assert_int_eq(s3acl_decode(bad[i], strlen(bad[i]), &back), AIS_ERR);
	ck_assert_int_eq(s3acl_decode("", 0, &back), AIS_OK);
	ck_assert_uint_eq(back.n, 0);
	/* grant headers */
	acl.n = 0;
	const char *h = "id=\"u-1\", uri=\"http://acs.amazonaws.com/groups/global/AllUsers\"";
	ck_assert_int_eq(s3acl_parse_grant_header(h, strlen(h), S3ACL_READ, &acl, &email), AIS_OK);
	ck_assert_uint_eq(acl.n, 2);
	ck_assert_str_eq(acl.g[0].id, "u-1");
	ck_assert_int_eq(acl.g[1].kind, S3ACL_ALL);
	h = "emailAddress=\"a@b.c\"";
	ck_assert_int_eq(s3acl_parse_grant_header(h, strlen(h), S3ACL_READ, &acl, &email), AIS_ERR);
	ck_assert(email);
	h = "id=\"unterminated";
	ck_assert_int_eq(s3acl_parse_grant_header(h, strlen(h), S3ACL_READ, &acl, &email), AIS_ERR);
	buf_free(&t);
}
END_TEST

START_TEST(test_acl_body)
{
	s3_acl_req_t q;
	const char *x = "<AccessControlPolicy xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner><ID>me</ID></Owner>"
			"<AccessControlList><Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
			"xsi:type=\"CanonicalUser\"><ID>u-2</ID></Grantee><Permission>WRITE_ACP</Permission></Grant>"
			"<Grant><Grantee xsi:type=\"Group\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">"
			"<URI>http://acs.amazonaws.com/groups/global/AuthenticatedUsers</URI></Grantee>"
			"<Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>";
	ck_assert_int_eq(s3_parse_acl(x, strlen(x), &q), AIS_OK);
	ck_assert_str_eq(q.owner, "me");
	ck_assert_uint_eq(q.acl.n, 2);
	ck_assert_str_eq(q.acl.g[0].id, "u-2");
	ck_assert_uint_eq(q.acl.g[0].perm, S3ACL_WRITE_ACP);
	ck_assert_int_eq(q.acl.g[1].kind, S3ACL_AUTHED);
	x = "<AccessControlPolicy><AccessControlList><Grant><Grantee><ID>u</ID></Grantee>"
	    "<Permission>EVERYTHING</Permission></Grant></AccessControlList></AccessControlPolicy>";
	ck_assert_int_eq(s3_parse_acl(x, strlen(x), &q), AIS_ERR);
	x = "<AccessControlPolicy><AccessControlList><Grant><Grantee><EmailAddress>a@b</EmailAddress>"
	    "</Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>";
	ck_assert_int_eq(s3_parse_acl(x, strlen(x), &q), AIS_ERR);
	ck_assert(q.email);
	ck_assert_int_eq(s3_parse_acl("<Other/>", 8, &q), AIS_ERR);
}
END_TEST

/* The errno map (status.h) and the S3 error table agree: the S3 code of
 * every errno answers with the same HTTP status as the native API. */
START_TEST(test_errno_map)
{
	static const int errs[] = {0,      ENOENT,    EEXIST,    EBUSY,  EBADMSG,   EINVAL, ENOSPC,
				   EAGAIN, EHOSTUNREACH, ETIMEDOUT, EREMOTEIO, ESTALE, EIO, EPERM, EKEYREJECTED};
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		const ais_errno_t *e = ais_errno(errs[i]);
		ck_assert_ptr_nonnull(e);
		ck_assert_msg(s3_error_http_status(e->s3code) == e->status, "errno %d: %s is %d in S3, %d natively",
			      errs[i], e->s3code, s3_error_http_status(e->s3code), e->status);
		for (int m = 0; m < 2; m++) {
			const ais_errno_t *rd = ais_errno_read(errs[i], m);
			ck_assert_int_eq(s3_error_http_status(rd->s3code), rd->status);
		}
	}
	ck_assert_int_eq(ais_errno_status(ENOSPC), 507);
	ck_assert_int_eq(ais_errno_status(EIO), 500);
	ck_assert_int_eq(ais_errno_read(EBADMSG, false)->status, 500); /* damaged data here, not the client's */
	ck_assert_int_eq(ais_errno(EBADMSG)->status, 400);
	ck_assert_int_eq(ais_errno_read(EIO, true)->status, 502);
	ck_assert(ais_errno(ETIMEDOUT)->remote && !ais_errno(ENOSPC)->remote);
	ck_assert_int_eq(ais_errno(EKEYREJECTED)->status, 403);
	ck_assert(ais_errno(EKEYREJECTED)->remote);
	ck_assert_int_eq(ais_errno_of_remote(503), EHOSTUNREACH);
	ck_assert_int_eq(ais_errno_of_remote(504), ETIMEDOUT);
	ck_assert_int_eq(ais_errno_of_remote(502), EREMOTEIO);
	ck_assert_int_eq(ais_errno_of_remote(403), EKEYREJECTED);
	ck_assert_int_eq(ais_errno_of_remote(500), 0);
}
END_TEST

START_TEST(test_cors)
{
	arena_t *a = arena_new(4096);
	s3_cors_t c, back;
	const char *why;
	buf_t x = BUF_INIT;
	const char *doc = "<CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><CORSRule>"
			  "<AllowedOrigin>http://*.example.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"
			  "<AllowedHeader>x-amz-*</AllowedHeader><ExposeHeader>ETag</ExposeHeader>"
			  "<MaxAgeSeconds> 60 </MaxAgeSeconds><ID>r1</ID></CORSRule>"
			  "<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>HEAD</AllowedMethod></CORSRule>"
			  "</CORSConfiguration>";
	ck_assert_int_eq(s3_cors_parse(a, doc, strlen(doc), &c, &why), AIS_OK);
	ck_assert_uint_eq(c.n, 2);
	ck_assert_int_eq(c.rules[0].max_age, 60);
	ck_assert_int_eq(c.rules[1].max_age, -1);
	/* the canonical form is one printable line that parses to the same */
	s3_cors_xml(&c, &x);
	ck_assert_ptr_null(memchr(x.ptr, '\n', x.len));
	ck_assert_int_eq(s3_cors_parse(a, x.ptr, x.len, &back, &why), AIS_OK);
	ck_assert_uint_eq(back.n, 2);
	ck_assert(sv_eqstr(back.rules[0].id, "r1"));
	/* matching: the first rule whose origin, method and every header match */
	ck_assert_ptr_eq(s3_cors_match(&c, SV("http://a.example.com"), SV("GET"), SV("X-Amz-Date, x-amz-acl")),
			 &c.rules[0]);
	ck_assert_ptr_null(s3_cors_match(&c, SV("http://a.example.com"), SV("GET"), SV("x-other")));
	ck_assert_ptr_null(s3_cors_match(&c, SV("http://example.com"), SV("GET"), SV("")));
	ck_assert_ptr_null(s3_cors_match(&c, SV("HTTP://A.EXAMPLE.COM"), SV("GET"), SV(""))); /* origins: case */
	ck_assert_ptr_eq(s3_cors_match(&c, SV("http://x"), SV("HEAD"), SV("")), &c.rules[1]);
	ck_assert_ptr_null(s3_cors_match(&c, SV("http://x"), SV("PUT"), SV("")));
	/* S3's refusals: MalformedXML (why NULL) or InvalidRequest (why) */
	static const struct {
		const char *doc;
		bool invalid;
	} bad[] = {
		{"<CORSConfiguration/>", false},
		{"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>", false},
		{"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin></CORSRule></CORSConfiguration>", false},
		{"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"
		 "<MaxAgeSeconds>-1</MaxAgeSeconds></CORSRule></CORSConfiguration>",
		 false},
		{"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"
		 "<Other/></CORSRule></CORSConfiguration>",
		 false},
		{"<Tagging/>", false},
		{"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod>"
		 "</CORSRule></CORSConfiguration>",
		 true},
		{"<CORSConfiguration><CORSRule><AllowedOrigin>*.*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"
		 "</CORSRule></CORSConfiguration>",
		 true},
		{"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"
		 "<ExposeHeader>x-*</ExposeHeader></CORSRule></CORSConfiguration>",
		 true},
		{"<CORSConfiguration><CORSRule><AllowedOrigin>\xc3\xa9</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"
		 "</CORSRule></CORSConfiguration>",
		 true},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(s3_cors_parse(a, bad[i].doc, strlen(bad[i].doc), &c, &why), AIS_ERR);
		ck_assert_msg((why != NULL) == bad[i].invalid, "case %zu: %s", i, why ? why : "(malformed)");
	}
	/* 100 rules are fine, 101 are not */
	buf_t many = BUF_INIT;
	buf_addstr(&many, "<CORSConfiguration>");
	for (int i = 0; i < 101; i++) {
		if (i == 100) {
			buf_addstr(&many, "</CORSConfiguration>");
			ck_assert_int_eq(s3_cors_parse(a, many.ptr, many.len, &c, &why), AIS_OK);
			ck_assert_uint_eq(c.n, 100);
			many.len -= strlen("</CORSConfiguration>");
		}
		buf_addstr(&many, "<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>");
	}
	buf_addstr(&many, "</CORSConfiguration>");
	ck_assert_int_eq(s3_cors_parse(a, many.ptr, many.len, &c, &why), AIS_ERR);
	ck_assert_ptr_nonnull(why);
	buf_free(&many);
	buf_free(&x);
	arena_destroy(a);
}
END_TEST

START_TEST(test_tags)
{
	arena_t *a = arena_new(4096);
	s3_tags_t *t = arena_alloc(a, sizeof(*t));
	/* the x-amz-tagging header: a key without '=' is empty, '+' a space */
	ck_assert_int_eq(s3_tags_from_query(a, SV("foo=bar&bar&a%20b=c+d%26e&&"), t), AIS_OK);
	ck_assert_uint_eq(t->n, 3);
	ck_assert_str_eq(t->t[1].key, "bar");
	ck_assert_str_eq(t->t[1].value, "");
	ck_assert_str_eq(t->t[2].key, "a b");
	ck_assert_str_eq(t->t[2].value, "c d&e");
	ck_assert_ptr_null(s3_tags_check(t, S3_OBJECT_TAGS_MAX));
	ck_assert_str_eq(t->t[0].key, "a b"); /* sorted */
	ck_assert_str_eq(t->t[2].key, "foo");
	ck_assert_int_eq(s3_tags_from_query(a, SV("a=%zz"), t), AIS_ERR);
	/* the <Tagging> body: the texts outlive the parser's buffer */
	ck_assert_int_eq(s3_tags_from_xml(a, S("<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>"
					    "<Tag><Key>k1</Key><Value>v &amp; 1</Value></Tag>"
					    "<Tag><Key>k0</Key><Value></Value></Tag></TagSet></Tagging>"),
					  t),
			 AIS_OK);
	ck_assert_uint_eq(t->n, 2);
	ck_assert_str_eq(t->t[0].key, "k1");
	ck_assert_str_eq(t->t[0].value, "v & 1");
	ck_assert_str_eq(t->t[1].value, "");
	ck_assert_int_eq(s3_tags_from_xml(a, S("<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>"), t),
			 AIS_ERR); /* no Key */
	ck_assert_int_eq(s3_tags_from_xml(a, S("<Other/>"), t), AIS_ERR);
	ck_assert_int_eq(s3_tags_from_xml(a, S("<Tagging><TagSet><Tag><Key>a</Key><Key>b</Key></Tag></TagSet></Tagging>"), t),
			 AIS_ERR);
	/* the limits: 10 tags, 128/256 characters (UTF-8 counted as characters), no duplicate, no aws: */
	char key[300], val[300];
	memset(key, 'k', 128), key[128] = '\0';
	memset(val, 'v', 256), val[256] = '\0';
	t->n = 1, t->t[0].key = key, t->t[0].value = val;
	ck_assert_ptr_null(s3_tags_check(t, S3_OBJECT_TAGS_MAX));
	key[128] = 'k', key[129] = '\0';
	ck_assert_ptr_nonnull(s3_tags_check(t, S3_OBJECT_TAGS_MAX));
	key[128] = '\0', val[256] = 'v', val[257] = '\0';
	ck_assert_ptr_nonnull(s3_tags_check(t, S3_OBJECT_TAGS_MAX));
	for (int i = 0; i < 128; i++) /* 128 two-byte characters are fine */
		key[2 * i] = (char)0xc3, key[2 * i + 1] = (char)0xa9;
	key[256] = '\0';
	val[0] = '\0';
	ck_assert_ptr_null(s3_tags_check(t, S3_OBJECT_TAGS_MAX));
	char aws[] = "aws:x", dup[] = "d", empty[] = "";
	t->t[0].key = aws;
	ck_assert_ptr_nonnull(s3_tags_check(t, S3_OBJECT_TAGS_MAX));
	t->t[0].key = empty;
	ck_assert_ptr_nonnull(s3_tags_check(t, S3_OBJECT_TAGS_MAX));
	t->n = 2, t->t[0].key = dup, t->t[1].key = dup, t->t[1].value = val;
	ck_assert_ptr_nonnull(s3_tags_check(t, S3_OBJECT_TAGS_MAX));
	t->n = 11;
	ck_assert_ptr_nonnull(s3_tags_check(t, S3_OBJECT_TAGS_MAX));
	/* in the object's metadata: any text round-trips */
	s3_meta_t m = {0}, d;
	buf_t enc = BUF_INIT;
	char k0[] = "a,b=c%", v0[] = "x=y,z \xc3\xa9";
	m.tags.n = 1, m.tags.t[0].key = k0, m.tags.t[0].value = v0;
	m.parts = (char[]){"5242880*2+7"};
	ck_assert_int_eq(s3_meta_encode(&m, &enc), AIS_OK);
	s3_meta_decode(a, enc.ptr, &d);
	ck_assert_uint_eq(d.tags.n, 1);
	ck_assert_str_eq(d.tags.t[0].key, k0);
	ck_assert_str_eq(d.tags.t[0].value, v0);
	ck_assert_str_eq(d.parts, "5242880*2+7");
	buf_free(&enc);
	arena_destroy(a);
}
END_TEST

START_TEST(test_part_range)
{
	uint64_t start, len;
	uint32_t n;
	ck_assert_int_eq(s3_part_range("5*3+2*1", 1, &start, &len, &n), AIS_OK);
	ck_assert(start == 0 && len == 5 && n == 4);
	ck_assert_int_eq(s3_part_range("5*3+2*1", 3, &start, &len, &n), AIS_OK);
	ck_assert(start == 10 && len == 5);
	ck_assert_int_eq(s3_part_range("5*3+2*1", 4, &start, &len, &n), AIS_OK);
	ck_assert(start == 15 && len == 2);
	ck_assert_int_eq(s3_part_range("5*3+2*1", 5, &start, &len, &n), AIS_DONE); /* past the end */
	ck_assert(n == 4 && len == 0);
	/* numbers with gaps (Complete with parts 2, 3 and 7) */
	ck_assert_int_eq(s3_part_range("2:5*2+7:3*1", 3, &start, &len, &n), AIS_OK);
	ck_assert(start == 5 && len == 5 && n == 3);
	ck_assert_int_eq(s3_part_range("2:5*2+7:3*1", 7, &start, &len, &n), AIS_OK);
	ck_assert(start == 10 && len == 3);
	ck_assert_int_eq(s3_part_range("2:5*2+7:3*1", 1, &start, &len, &n), AIS_DONE);
	ck_assert_int_eq(s3_part_range("2:5*2+7:3*1", 4, &start, &len, &n), AIS_DONE);
	ck_assert_int_eq(s3_part_range("3:5*2+2:3*1", 1, &start, &len, &n), AIS_ERR); /* numbers going back */
	ck_assert_int_eq(s3_part_range("10000:5*2", 1, &start, &len, &n), AIS_ERR);   /* past 10000 */
	ck_assert_int_eq(s3_part_range("7*1", 1, &start, &len, &n), AIS_OK);
	ck_assert(start == 0 && len == 7 && n == 1);
	ck_assert_int_eq(s3_part_range("", 1, &start, &len, &n), AIS_ERR);
	ck_assert_int_eq(s3_part_range("5", 1, &start, &len, &n), AIS_ERR);
	ck_assert_int_eq(s3_part_range("5*0", 1, &start, &len, &n), AIS_ERR);
	ck_assert_int_eq(s3_part_range("5*x", 1, &start, &len, &n), AIS_ERR);
	ck_assert_int_eq(s3_part_range("5*9999+1*2", 1, &start, &len, &n), AIS_ERR); /* over 10000 parts */
}
END_TEST

START_TEST(test_objlock)
{
	char out[BMD_S3LOCK_MAX + 1];
	int64_t t;
	/* ISO 8601 as boto3, the AWS CLI and S3 write it */
	ck_assert_int_eq(s3_time_parse_iso(S("2030-01-01T00:00:00Z"), &t), AIS_OK);
	ck_assert_int_eq(t, 1893456000);
	ck_assert_int_eq(s3_time_parse_iso(S("2030-01-01T00:00:00.123456Z"), &t), AIS_OK);
	ck_assert_int_eq(t, 1893456000);
	ck_assert_int_eq(s3_time_parse_iso(S("2030-01-01T01:00:00+01:00"), &t), AIS_OK);
	ck_assert_int_eq(t, 1893456000);
	ck_assert_int_eq(s3_time_parse_iso(S("1969-12-31T23:59:59Z"), &t), AIS_OK);
	ck_assert_int_eq(t, -1);
	ck_assert_int_eq(s3_time_parse_iso(S("2024-02-29T12:00:00.000Z"), &t), AIS_OK);
	ck_assert_int_eq(t, 1709208000);
	static const char *const bad[] = {"", "2030-01-01", "2030-01-01T00:00:00", "2030-13-01T00:00:00Z",
					  "2030-01-01T24:00:00Z", "2030-01-01T00:00:00.Z", "2030-01-01T00:00:00ZZ",
					  "2030-01-01T00:00:00+0100", "2030-01-01 00:00:00Z", "x030-01-01T00:00:00Z"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(s3_time_parse_iso(bad[i], strlen(bad[i]), &t) == AIS_ERR, "'%s'", bad[i]);

	/* PutObjectLockConfiguration's body, with the codes s3-tests expects */
	ck_assert_ptr_null(s3_parse_lock_conf(S("<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>"
						"</ObjectLockConfiguration>"), out, sizeof(out)));
	ck_assert_str_eq(out, "Enabled");
	ck_assert_ptr_null(s3_parse_lock_conf(S("<ObjectLockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
						"<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>"
						"<Mode>GOVERNANCE</Mode><Days>1</Days></DefaultRetention></Rule>"
						"</ObjectLockConfiguration>"), out, sizeof(out)));
	ck_assert_str_eq(out, "Enabled:GOVERNANCE:1d");
	ck_assert(bmd_s3lock_valid(out, strlen(out)));
	ck_assert_ptr_null(s3_parse_lock_conf(S("<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>"
						"<Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Years>100</Years>"
						"</DefaultRetention></Rule></ObjectLockConfiguration>"), out, sizeof(out)));
	ck_assert_str_eq(out, "Enabled:COMPLIANCE:100y");
	ck_assert(bmd_s3lock_valid(out, strlen(out)));
#define LC(rule) "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>" \
		rule "</DefaultRetention></Rule></ObjectLockConfiguration>"
	ck_assert_str_eq(s3_parse_lock_conf(S(LC("<Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years>")), out, sizeof(out)),
			 "MalformedXML");
	ck_assert_str_eq(s3_parse_lock_conf(S(LC("<Mode>GOVERNANCE</Mode><Days>0</Days>")), out, sizeof(out)),
			 "InvalidRetentionPeriod");
	ck_assert_str_eq(s3_parse_lock_conf(S(LC("<Mode>GOVERNANCE</Mode><Years>-1</Years>")), out, sizeof(out)),
			 "InvalidRetentionPeriod");
	ck_assert_str_eq(s3_parse_lock_conf(S(LC("<Mode>governance</Mode><Years>1</Years>")), out, sizeof(out)),
			 "MalformedXML");
	ck_assert_str_eq(s3_parse_lock_conf(S(LC("<Mode>GOVERNANCE</Mode><Days>x</Days>")), out, sizeof(out)),
			 "MalformedXML");
	ck_assert_str_eq(s3_parse_lock_conf(S(LC("<Days>3</Days>")), out, sizeof(out)), "MalformedXML");
	ck_assert_str_eq(s3_parse_lock_conf(S("<ObjectLockConfiguration><ObjectLockEnabled>Disabled</ObjectLockEnabled>"
					      "</ObjectLockConfiguration>"), out, sizeof(out)),
			 "MalformedXML");
	ck_assert_str_eq(s3_parse_lock_conf(S("<Other/>"), out, sizeof(out)), "MalformedXML");

	/* the BMD's form */
	static const char *const good[] = {"", "Enabled", "Enabled:GOVERNANCE:1d", "Enabled:COMPLIANCE:36500d",
					   "Enabled:GOVERNANCE:100y"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(bmd_s3lock_valid(good[i], strlen(good[i])), "'%s'", good[i]);
	static const char *const nope[] = {"enabled", "Enabled:", "Enabled:GOVERNANCE", "Enabled:GOVERNANCE:0d",
					   "Enabled:GOVERNANCE:101y", "Enabled:OTHER:1d", "Enabled:GOVERNANCE:1w",
					   "Enabled:GOVERNANCE:d", "EnabledX", "Enabled:GOVERNANCE:1d:"};
	for (size_t i = 0; i < sizeof(nope) / sizeof(nope[0]); i++)
		ck_assert_msg(!bmd_s3lock_valid(nope[i], strlen(nope[i])), "'%s'", nope[i]);

	/* which versions the object layer refuses to remove (olver.c rule 8) */
	ck_assert_ptr_null(olver_locked("", false, 100));
	ck_assert_ptr_null(olver_locked("ver.id=x," OLVER_LOCK_HOLD_KEY "=0", false, 100));
	ck_assert_ptr_nonnull(olver_locked(OLVER_LOCK_HOLD_KEY "=1", true, 100));
	ck_assert_ptr_nonnull(olver_locked(OLVER_LOCK_MODE_KEY "=COMPLIANCE," OLVER_LOCK_UNTIL_KEY "=200", true, 100));
	ck_assert_ptr_null(olver_locked(OLVER_LOCK_MODE_KEY "=COMPLIANCE," OLVER_LOCK_UNTIL_KEY "=200", false, 200));
	ck_assert_ptr_nonnull(olver_locked(OLVER_LOCK_MODE_KEY "=GOVERNANCE," OLVER_LOCK_UNTIL_KEY "=200", false, 100));
	ck_assert_ptr_null(olver_locked(OLVER_LOCK_MODE_KEY "=GOVERNANCE," OLVER_LOCK_UNTIL_KEY "=200", true, 100));
	ck_assert_ptr_nonnull(olver_locked(OLVER_LOCK_MODE_KEY "=GOVERNANCE," OLVER_LOCK_UNTIL_KEY "=200,"
					   OLVER_LOCK_HOLD_KEY "=1", true, 100));
}
END_TEST

START_TEST(test_meta_lock_roundtrip)
{
	/* a change of the S3 metadata keeps the lock and the items that are not S3's */
	arena_t *a = arena_new(4096);
	s3_meta_t m;
	buf_t b = BUF_INIT;
	s3_meta_decode(a, "s3.etag=abc,ver.id=0123,lock.mode=GOVERNANCE,lock.until=1893456000,lock.hold=1,bk.x=y",
		       &m);
	ck_assert_str_eq(m.lock_mode, "GOVERNANCE");
	ck_assert_str_eq(m.lock_until, "1893456000");
	ck_assert_str_eq(m.lock_hold, "1");
	ck_assert_str_eq(m.other, "ver.id=0123,bk.x=y");
	m.lock_hold = NULL;
	ck_assert_int_eq(s3_meta_encode(&m, &b), AIS_OK);
	ck_assert_str_eq(b.ptr, "s3.etag=abc,lock.mode=GOVERNANCE,lock.until=1893456000,ver.id=0123,bk.x=y");
	buf_free(&b);
	arena_destroy(a);
}
END_TEST

/* PutBucketEncryption's configuration (ssecfg.c): one rule, the canonical
 * form parses back to the same, S3's refusals. */
START_TEST(test_ssecfg)
{
	s3_ssecfg_t c, back;
	const char *why;
	buf_t x = BUF_INIT;
	const char *doc = "<?xml version=\"1.0\"?><ServerSideEncryptionConfiguration xmlns=\"http://s3.amazonaws.com/"
			  "doc/2006-03-01/\"><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>aws:kms"
			  "</SSEAlgorithm><KMSMasterKeyID> app-key </KMSMasterKeyID></ApplyServerSideEncryptionByDefault>"
			  "<BucketKeyEnabled>true</BucketKeyEnabled></Rule></ServerSideEncryptionConfiguration>";
	ck_assert_int_eq(s3_ssecfg_parse(doc, strlen(doc), &c, &why), AIS_OK);
	ck_assert_int_eq(c.mode, 'K');
	ck_assert_str_eq(c.kid, "app-key");
	ck_assert(c.bucket_key);
	s3_ssecfg_xml(&c, &x);
	ck_assert_ptr_null(memchr(x.ptr, '\n', x.len));
	ck_assert_int_eq(s3_ssecfg_parse(x.ptr, x.len, &back, &why), AIS_OK);
	ck_assert(!memcmp(&c, &back, sizeof(c)));
	buf_free(&x);
	const char *s3 = "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>"
			 "AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>"
			 "</ServerSideEncryptionConfiguration>";
	ck_assert_int_eq(s3_ssecfg_parse(s3, strlen(s3), &c, &why), AIS_OK);
	ck_assert_int_eq(c.mode, 'S');
	ck_assert_str_eq(c.kid, "");
	ck_assert(!c.bucket_key);
	/* refusals: MalformedXML (why NULL) or InvalidArgument (why) */
#define R0 "<ServerSideEncryptionConfiguration><Rule>"
#define D0 "<ApplyServerSideEncryptionByDefault>"
#define D1 "</ApplyServerSideEncryptionByDefault>"
#define R1 "</Rule></ServerSideEncryptionConfiguration>"
	static const struct {
		const char *doc;
		bool invalid;
	} bad[] = {
		{"", false},
		{"<ServerSideEncryptionConfiguration></ServerSideEncryptionConfiguration>", false},
		{R0 R1, false},
		{R0 D0 D1 R1, false},
		{R0 D0 "<SSEAlgorithm>DES</SSEAlgorithm>" D1 R1, true},
		{R0 D0 "<SSEAlgorithm>AES256</SSEAlgorithm><KMSMasterKeyID>k</KMSMasterKeyID>" D1 R1, true},
		{R0 D0 "<SSEAlgorithm>aws:kms</SSEAlgorithm><KMSMasterKeyID></KMSMasterKeyID>" D1 R1, true},
		{R0 D0 "<SSEAlgorithm>aws:kms</SSEAlgorithm><KMSMasterKeyID>a b</KMSMasterKeyID>" D1 R1, true},
		{R0 D0 "<SSEAlgorithm>AES256</SSEAlgorithm>" D1 "<BucketKeyEnabled>yes</BucketKeyEnabled>" R1, false},
		{R0 D0 "<SSEAlgorithm>AES256</SSEAlgorithm><Other>1</Other>" D1 R1, false},
		{R0 D0 "<SSEAlgorithm>AES256</SSEAlgorithm>" D1 "</Rule><Rule>" D0 "<SSEAlgorithm>AES256</SSEAlgorithm>" D1
		 R1, true},
		{"<CORSConfiguration></CORSConfiguration>", false},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(s3_ssecfg_parse(bad[i].doc, strlen(bad[i].doc), &c, &why), AIS_ERR);
		ck_assert_msg((why != NULL) == bad[i].invalid, "case %zu: %s", i, why ? why : "(malformed)");
		ck_assert_int_eq(c.mode, 0);
	}
#undef R0
#undef D0
#undef D1
#undef R1
}
END_TEST

/* PutBucketOwnershipControls' document (owncfg.c): exactly one Rule with
 * one of the three ObjectOwnership names; the written form parses back;
 * and the values' names and the owner-only ACL test (s3acl.h). */
START_TEST(test_owncfg)
{
	s3acl_own_t own, back;
	const char *why;
	buf_t x = BUF_INIT;
	static const char *const names[] = {"ObjectWriter", "BucketOwnerPreferred", "BucketOwnerEnforced"};
	for (size_t i = 0; i < 3; i++) {
		char doc[256];
		snprintf(doc, sizeof(doc),
			 "<?xml version=\"1.0\"?><OwnershipControls xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
			 "<Rule><ObjectOwnership> %s </ObjectOwnership></Rule></OwnershipControls>",
			 names[i]);
		ck_assert_int_eq(s3_owncfg_parse(doc, strlen(doc), &own, &why), AIS_OK);
		ck_assert_int_eq(own, S3ACL_OWN_OBJECT_WRITER + (int)i);
		ck_assert_str_eq(s3acl_own_name(own), names[i]);
		ck_assert_int_eq(s3acl_own_parse(names[i], strlen(names[i])), own);
		buf_reset(&x);
		s3_owncfg_xml(own, &x);
		ck_assert_ptr_null(memchr(x.ptr, '\n', x.len));
		ck_assert_int_eq(s3_owncfg_parse(x.ptr, x.len, &back, &why), AIS_OK);
		ck_assert_int_eq(back, own);
	}
	buf_free(&x);
	ck_assert_int_eq(s3acl_own_parse("bucketownerenforced", 19), S3ACL_OWN_NONE);
	ck_assert_int_eq(s3acl_own_parse("", 0), S3ACL_OWN_NONE);
	ck_assert_str_eq(s3acl_own_name(S3ACL_OWN_NONE), "");
	/* refusals: malformed (why NULL) or a wrong value or count (why) */
#define O0 "<OwnershipControls><Rule>"
#define O1 "</Rule></OwnershipControls>"
	static const struct {
		const char *doc;
		bool why;
	} bad[] = {
		{"", false},
		{"<OwnershipControls/>", false},
		{O0 O1, false},
		{O0 "<ObjectOwnership>Mine</ObjectOwnership>" O1, true},
		{O0 "<ObjectOwnership></ObjectOwnership>" O1, true},
		{O0 "<ObjectOwnership>ObjectWriter</ObjectOwnership><ObjectOwnership>ObjectWriter</ObjectOwnership>" O1,
		 true},
		{O0 "<ObjectOwnership>ObjectWriter</ObjectOwnership></Rule><Rule>"
		    "<ObjectOwnership>ObjectWriter</ObjectOwnership>" O1,
		 true},
		{O0 "<ObjectOwnership>ObjectWriter</ObjectOwnership><Other/>" O1, false},
		{"<Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule>", false},
		{O0 "<ObjectOwnership>ObjectWriter</ObjectOwnership>", false},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(s3_owncfg_parse(bad[i].doc, strlen(bad[i].doc), &own, &why), AIS_ERR);
		ck_assert_msg((why != NULL) == bad[i].why, "case %zu: %s", i, why ? why : "(malformed)");
		ck_assert_int_eq(own, S3ACL_OWN_NONE);
	}
#undef O0
#undef O1
	/* the owner's full control and nothing else */
	s3acl_t a;
	ck_assert_int_eq(s3acl_canned("private", 7, "u1", NULL, &a), AIS_OK);
	ck_assert(s3acl_owner_only(&a, "u1"));
	ck_assert(!s3acl_owner_only(&a, "u2"));
	ck_assert_int_eq(s3acl_canned("bucket-owner-full-control", 25, "u1", "u1", &a), AIS_OK);
	ck_assert(s3acl_owner_only(&a, "u1"));
	ck_assert_int_eq(s3acl_canned("bucket-owner-full-control", 25, "u2", "u1", &a), AIS_OK);
	ck_assert(!s3acl_owner_only(&a, "u1"));
	ck_assert_int_eq(s3acl_canned("public-read", 11, "u1", NULL, &a), AIS_OK);
	ck_assert(!s3acl_owner_only(&a, "u1"));
	a.n = 0;
	ck_assert(!s3acl_owner_only(&a, "u1"));
	ck_assert_int_eq(s3acl_add(&a, S3ACL_USER, S3ACL_READ, "u1", 2), AIS_OK);
	ck_assert(!s3acl_owner_only(&a, "u1"));
}
END_TEST

static Suite *s3xml_suite(void)
{
	Suite *s = suite_create("s3xml");
	TCase *tc = tcase_create("s3xml");
	tcase_add_test(tc, test_delete);
	tcase_add_test(tc, test_complete);
	tcase_add_test(tc, test_create_bucket);
	tcase_add_test(tc, test_writer_escapes);
	tcase_add_test(tc, test_meta_roundtrip);
	tcase_add_test(tc, test_acl);
	tcase_add_test(tc, test_acl_body);
	tcase_add_test(tc, test_errno_map);
	tcase_add_test(tc, test_tags);
	tcase_add_test(tc, test_cors);
	tcase_add_test(tc, test_ssecfg);
	tcase_add_test(tc, test_owncfg);
	tcase_add_test(tc, test_part_range);
	tcase_add_test(tc, test_objlock);
	tcase_add_test(tc, test_meta_lock_roundtrip);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(s3xml_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
