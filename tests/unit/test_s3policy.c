/*
 * test_s3policy.c - S3 bucket policies (s3policy.h): the parser's refusals
 * (malformed JSON, wrong types, unknown fields and operators, another
 * bucket's resource, the size limit) each with a message naming what is
 * wrong; evaluation tables (deny wins, NotAction/NotPrincipal, action and
 * resource wildcards, principals by id and ARN, anonymous, conditions:
 * strings, globs, numbers, Bool, IP ranges v4/v6, Null, IfExists, absent
 * keys); public policies; the policy's verdict in the one decision
 * (authz_decide rules 1b and 3a); a policy kept beside its BMD entry
 * (set, encode/decode, clone, removed with the bucket).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/arena.h"
#include "aisd/authz.h"
#include "aisd/bmd.h"
#include "aisd/s3policy.h"
#include "aisd/status.h"
#include "aisd/banned.h"

/* Parses text for bucket "b"; AIS_OK or AIS_ERR, err's message into msg. */
static int parse(arena_t *a, const char *text, const s3pol_t **p, char *msg, size_t msgsz)
{
	buf_t err = BUF_INIT;
	int rc = s3pol_parse(a, "b", text, strlen(text), p, &err);
	snprintf(msg, msgsz, "%s", err.ptr ? err.ptr : "");
	buf_free(&err);
	return rc;
}

#define S(lit) lit, sizeof(lit) - 1
#define STMT(x) "{\"Version\":\"2012-10-17\",\"Statement\":[" x "]}"
#define ALLOW_ALL "{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::b/*\""

START_TEST(test_parse_refusals)
{
	static const struct {
		const char *text, *word;
	} bad[] = {
		{"", "valid JSON"},
		{"{\"Version\":", "valid JSON"},
		{"[1]", "first byte"},
		{"{\"Statement\":[]}", "Statement"},
		{"{\"Version\":\"2020-01-01\",\"Statement\":" ALLOW_ALL "}}", "Version"},
		{"{\"Statement\":" ALLOW_ALL "},\"Extra\":1}", "Extra"},
		{"{\"Statement\":" ALLOW_ALL "},\"Statement\":[]}", "valid JSON"}, /* a duplicate key */
		{STMT("7"), "object"},
		{STMT("{\"Effect\":\"Maybe\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"*\"}"), "Effect"},
		{STMT("{\"Effect\":true,\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"*\"}"), "Effect"},
		{STMT("{\"Effect\":\"Allow\",\"Action\":\"s3:GetObject\",\"Resource\":\"*\"}"), "Principal"},
		{STMT("{\"Effect\":\"Allow\",\"Principal\":\"me\",\"Action\":\"s3:GetObject\",\"Resource\":\"*\"}"),
		 "Principal"},
		{STMT("{\"Effect\":\"Allow\",\"Principal\":{\"Federated\":\"x\"},\"Action\":\"s3:GetObject\",\"Resource\":\"*\"}"),
		 "Federated"},
		{STMT("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":7,\"Resource\":\"*\"}"), "Action"},
		{STMT("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":[],\"Resource\":\"*\"}"), "Action"},
		{STMT("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"iam:Get\",\"Resource\":\"*\"}"), "action"},
		{STMT("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:Get Object\",\"Resource\":\"*\"}"), "action"},
		{STMT("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"NotAction\":\"s3:*\","
		      "\"Resource\":\"*\"}"),
		 "together"},
		{STMT("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\"}"), "Resource"},
		{STMT("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::c/*\"}"),
		 "not of bucket"},
		{STMT("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"b/*\"}"), "resource"},
		{STMT(ALLOW_ALL ",\"Condition\":{\"StringSortOf\":{\"s3:prefix\":\"a\"}}}"), "StringSortOf"},
		{STMT(ALLOW_ALL ",\"Condition\":{\"NullIfExists\":{\"s3:prefix\":\"true\"}}}"), "NullIfExists"},
		{STMT(ALLOW_ALL ",\"Condition\":{\"StringEquals\":[]}}"), "object"},
		{STMT(ALLOW_ALL ",\"Condition\":{\"StringEquals\":{\"ec2:Region\":\"a\"}}}"), "condition key"},
		{STMT(ALLOW_ALL ",\"Condition\":{\"StringEquals\":{\"s3:prefix\":[]}}}"), "values"},
		{STMT(ALLOW_ALL ",\"Condition\":{\"StringEquals\":{\"s3:prefix\":{\"a\":1}}}}"), "values"},
		{STMT(ALLOW_ALL ",\"Condition\":{\"NumericLessThan\":{\"s3:max-keys\":\"ten\"}}}"), "not a number"},
		{STMT(ALLOW_ALL ",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/33\"}}}"), "IP"},
		{STMT(ALLOW_ALL ",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"host\"}}}"), "IP"},
		{STMT(ALLOW_ALL ",\"Condition\":{\"Bool\":{\"aws:SecureTransport\":\"yes\"}}}"), "true or false"},
		{STMT(ALLOW_ALL ",\"Colour\":\"red\"}"), "Colour"},
		{STMT(ALLOW_ALL ",\"Sid\":3}"), "Sid"},
		{STMT("{\"Effect\":\"Allow\",\"NotPrincipal\":{\"AWS\":\"u\"},\"Action\":\"s3:GetObject\",\"Resource\":\"*\"}"),
		 "NotPrincipal"},
		{STMT("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		      "\"Resource\":\"arn:aws:s3:::b/${aws:username}/*\"}"),
		 "variables"},
		{STMT(ALLOW_ALL ",\"Condition\":{\"StringLike\":{\"s3:prefix\":\"${aws:username}/*\"}}}"), "variables"},
		{STMT(ALLOW_ALL ",\"Condition\":{\"ForAnyValue:StringLike\":{\"s3:prefix\":\"a\"}}}"), "ForAnyValue"},
		{STMT(ALLOW_ALL ",\"Condition\":{\"DateLessThan\":{\"aws:CurrentTime\":\"2030-01-01T00:00:00Z\"}}}"),
		 "DateLessThan"},
	};
	arena_t *a = arena_new(4096);
	const s3pol_t *p;
	char msg[512];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse(a, bad[i].text, &p, msg, sizeof(msg)) == AIS_ERR, "accepted: %s", bad[i].text);
		ck_assert_ptr_null(p);
		ck_assert_msg(strstr(msg, bad[i].word), "\"%s\": message \"%s\" lacks \"%s\"", bad[i].text, msg,
			      bad[i].word);
	}
	/* the size limit */
	buf_t big = BUF_INIT;
	buf_addstr(&big, "{\"Id\":\"");
	while (big.len < S3POL_MAX)
		buf_addstr(&big, "xxxxxxxxxxxxxxxx");
	buf_addstr(&big, "\",\"Statement\":" ALLOW_ALL "}}");
	buf_t err = BUF_INIT;
	ck_assert_int_eq(s3pol_parse(a, "b", big.ptr, big.len, &p, &err), AIS_ERR);
	ck_assert_ptr_nonnull(strstr(err.ptr, "20480"));
	buf_free(&err);
	buf_free(&big);
	/* accepted shapes: a single statement object, no Version, lists */
	ck_assert_int_eq(parse(a, "{\"Statement\":" ALLOW_ALL "}}", &p, msg, sizeof(msg)), AIS_OK);
	ck_assert_int_eq(parse(a, STMT("{\"Sid\":\"x\",\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":[\"u1\",\"u2\"]},"
				       "\"NotAction\":[\"s3:Get*\",\"s3:List?ucket\"],\"NotResource\":\"*\","
				       "\"Condition\":{\"NumericLessThanEquals\":{\"s3:max-keys\":10},"
				       "\"IpAddressIfExists\":{\"aws:SourceIp\":[\"10.0.0.0/8\",\"::1\"]}}}"),
			       &p, msg, sizeof(msg)),
			 AIS_OK);
	ck_assert(s3pol_valid("b", S(STMT(ALLOW_ALL "}")), &err));
	arena_destroy(a);
}
END_TEST

/* The request context of the tables: a few keys. */
struct kv {
	const char *k[6], *v[6];
};

static bool ctx(void *arg, const char *key, sv_t *val)
{
	const struct kv *c = arg;
	for (size_t i = 0; i < 6 && c->k[i]; i++)
		if (!strcmp(c->k[i], key)) {
			*val = sv_from(c->v[i]);
			return true;
		}
	return false;
}

static enum s3pol_effect eval(arena_t *a, const char *text, const char *user, const char *action, const char *key,
			      const struct kv *c)
{
	const s3pol_t *p;
	char msg[512];
	ck_assert_msg(parse(a, text, &p, msg, sizeof(msg)) == AIS_OK, "%s: %s", text, msg);
	s3pol_req_t q = {.user = user, .user_name = user ? "Name Of" : NULL, .action = action, .bucket = SV("b"),
			 .key = sv_from(key), .ctx = ctx, .arg = (void *)c};
	return s3pol_eval(p, &q, false);
}

START_TEST(test_eval_tables)
{
	arena_t *a = arena_new(4096);
	struct kv none = {{NULL}, {NULL}};
	const char *p1 = STMT("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:Get*\",\"Resource\":\"arn:aws:s3:::b/pub/*\"},"
			      "{\"Effect\":\"Deny\",\"Principal\":{\"AWS\":\"*\"},\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::b/pub/secret?\"},"
			      "{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"arn:aws:iam::u1:root\"]},\"Action\":\"s3:ListBucket\",\"Resource\":\"arn:aws:s3:::b\"},"
			      "{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"arn:aws:iam::123:user/Name Of\"},\"Action\":\"s3:PutObject\",\"Resource\":\"*\"}");
	static const struct {
		const char *user, *action, *key;
		enum s3pol_effect want;
	} rows[] = {
		{NULL, "s3:GetObject", "pub/a", S3POL_ALLOW},     /* anonymous is "*" */
		{"u1", "s3:getobject", "pub/a", S3POL_ALLOW},     /* actions case-insensitive */
		{"u1", "s3:GetObjectAcl", "pub/a/b", S3POL_ALLOW}, /* * crosses '/' */
		{"u1", "s3:PutObject", "pub/a", S3POL_ALLOW},     /* ARN user/ by display name */
		{"u2", "s3:GetObject", "pub/secret1", S3POL_DENY}, /* deny wins */
		{NULL, "s3:GetObject", "pub/secret12", S3POL_ALLOW}, /* ? is one character */
		{NULL, "s3:GetObject", "Pub/a", S3POL_NONE},      /* resources case-sensitive */
		{NULL, "s3:DeleteObject", "pub/a", S3POL_NONE},
		{"u1", "s3:ListBucket", "", S3POL_ALLOW},
		{"u2", "s3:ListBucket", "", S3POL_NONE},
		{NULL, "s3:ListBucket", "", S3POL_NONE},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		ck_assert_msg(eval(a, p1, rows[i].user, rows[i].action, rows[i].key, &none) == rows[i].want, "row %zu", i);

	/* NotAction / NotPrincipal / NotResource */
	const char *p2 = STMT("{\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":\"owner\"},\"NotAction\":\"s3:Get*\","
			      "\"NotResource\":\"arn:aws:s3:::b/tmp/*\"}");
	ck_assert_int_eq(eval(a, p2, "u1", "s3:PutObject", "k", &none), S3POL_DENY);
	ck_assert_int_eq(eval(a, p2, NULL, "s3:PutObject", "k", &none), S3POL_DENY);
	ck_assert_int_eq(eval(a, p2, "owner", "s3:PutObject", "k", &none), S3POL_NONE);
	ck_assert_int_eq(eval(a, p2, "u1", "s3:GetObject", "k", &none), S3POL_NONE);
	ck_assert_int_eq(eval(a, p2, "u1", "s3:PutObject", "tmp/k", &none), S3POL_NONE);
	arena_destroy(a);
}
END_TEST

START_TEST(test_eval_conditions)
{
	arena_t *a = arena_new(4096);
	struct kv none = {{NULL}, {NULL}};
	struct kv lan = {{"aws:SourceIp", "aws:SecureTransport", "s3:prefix", "s3:max-keys"},
			 {"10.1.2.3", "true", "home/u1/x", "50"}};
	struct kv wan = {{"aws:SourceIp", "aws:SecureTransport", "s3:prefix", "s3:max-keys"},
			 {"192.0.2.1", "false", "etc/", "5000"}};
	struct kv v6 = {{"aws:SourceIp"}, {"2001:db8::7"}};
#define C(cond) STMT("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\",\"Condition\":" cond "}")
	static const struct {
		const char *cond;
		enum s3pol_effect lan, wan, none;
	} rows[] = {
		{"{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}", S3POL_ALLOW, S3POL_NONE, S3POL_NONE},
		{"{\"NotIpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}", S3POL_NONE, S3POL_ALLOW, S3POL_ALLOW},
		{"{\"IpAddress\":{\"aws:SourceIp\":[\"192.0.2.0/24\",\"10.1.2.3\"]}}", S3POL_ALLOW, S3POL_ALLOW, S3POL_NONE},
		{"{\"Bool\":{\"aws:SecureTransport\":\"true\"}}", S3POL_ALLOW, S3POL_NONE, S3POL_NONE},
		{"{\"Bool\":{\"aws:SecureTransport\":false}}", S3POL_NONE, S3POL_ALLOW, S3POL_NONE},
		{"{\"StringLike\":{\"s3:prefix\":\"home/*\"}}", S3POL_ALLOW, S3POL_NONE, S3POL_NONE},
		{"{\"StringNotLike\":{\"s3:prefix\":\"home/*\"}}", S3POL_NONE, S3POL_ALLOW, S3POL_ALLOW},
		{"{\"StringEquals\":{\"s3:prefix\":[\"etc/\",\"var/\"]}}", S3POL_NONE, S3POL_ALLOW, S3POL_NONE},
		{"{\"StringNotEquals\":{\"s3:prefix\":\"etc/\"}}", S3POL_ALLOW, S3POL_NONE, S3POL_ALLOW},
		{"{\"StringEqualsIgnoreCase\":{\"s3:prefix\":\"ETC/\"}}", S3POL_NONE, S3POL_ALLOW, S3POL_NONE},
		{"{\"StringEqualsIfExists\":{\"s3:prefix\":\"etc/\"}}", S3POL_NONE, S3POL_ALLOW, S3POL_ALLOW},
		{"{\"NumericLessThan\":{\"s3:max-keys\":\"100\"}}", S3POL_ALLOW, S3POL_NONE, S3POL_NONE},
		{"{\"NumericGreaterThanEquals\":{\"s3:max-keys\":5000}}", S3POL_NONE, S3POL_ALLOW, S3POL_NONE},
		{"{\"NumericNotEquals\":{\"s3:max-keys\":50}}", S3POL_NONE, S3POL_ALLOW, S3POL_ALLOW},
		{"{\"Null\":{\"s3:prefix\":\"true\"}}", S3POL_NONE, S3POL_NONE, S3POL_ALLOW},
		{"{\"Null\":{\"s3:prefix\":\"false\"}}", S3POL_ALLOW, S3POL_ALLOW, S3POL_NONE},
		/* every operator and key must hold */
		{"{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"},\"StringLike\":{\"s3:prefix\":\"etc/*\"}}", S3POL_NONE,
		 S3POL_NONE, S3POL_NONE},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text),
			 "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\","
			 "\"Condition\":%s}}",
			 rows[i].cond);
		ck_assert_msg(eval(a, text, "u", "s3:ListBucket", "", &lan) == rows[i].lan, "row %zu lan", i);
		ck_assert_msg(eval(a, text, "u", "s3:ListBucket", "", &wan) == rows[i].wan, "row %zu wan", i);
		ck_assert_msg(eval(a, text, "u", "s3:ListBucket", "", &none) == rows[i].none, "row %zu none", i);
	}
	ck_assert_int_eq(eval(a, C("{\"IpAddress\":{\"aws:SourceIp\":\"2001:db8::/32\"}}"), NULL, "s3:GetObject", "k", &v6),
			 S3POL_ALLOW);
	ck_assert_int_eq(eval(a, C("{\"IpAddress\":{\"aws:SourceIp\":\"2001:db9::/32\"}}"), NULL, "s3:GetObject", "k", &v6),
			 S3POL_NONE);
	ck_assert_int_eq(eval(a, C("{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}"), NULL, "s3:GetObject", "k", &v6),
			 S3POL_NONE);
	/* a deny on a condition beats the unconditional allow */
	const char *both = STMT("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\"},"
				"{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\","
				"\"Condition\":{\"Bool\":{\"aws:SecureTransport\":\"false\"}}}");
	ck_assert_int_eq(eval(a, both, "u", "s3:GetObject", "k", &lan), S3POL_ALLOW);
	ck_assert_int_eq(eval(a, both, "u", "s3:GetObject", "k", &wan), S3POL_DENY);
	arena_destroy(a);
}
END_TEST

START_TEST(test_public_glob)
{
	arena_t *a = arena_new(4096);
	const s3pol_t *p;
	char msg[512];
	ck_assert_int_eq(parse(a, STMT(ALLOW_ALL "}"), &p, msg, sizeof(msg)), AIS_OK);
	ck_assert(s3pol_public(p));
	/* RestrictPublicBuckets: a public statement allows nothing */
	s3pol_req_t q = {.user = NULL, .action = "s3:GetObject", .bucket = SV("b"), .key = SV("k")};
	ck_assert_int_eq(s3pol_eval(p, &q, false), S3POL_ALLOW);
	ck_assert_int_eq(s3pol_eval(p, &q, true), S3POL_NONE);
	ck_assert_int_eq(parse(a, STMT(ALLOW_ALL ",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}}"), &p, msg,
			       sizeof(msg)),
			 AIS_OK);
	ck_assert(!s3pol_public(p));
	ck_assert_int_eq(parse(a, STMT("{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"u1\"},\"Action\":\"s3:*\",\"Resource\":\"*\"}"),
			       &p, msg, sizeof(msg)),
			 AIS_OK);
	ck_assert(!s3pol_public(p));
	ck_assert(!s3pol_uses_key(p, "s3:ExistingObjectTag/"));
	ck_assert_int_eq(parse(a, STMT(ALLOW_ALL ",\"Condition\":{\"StringEquals\":{\"s3:existingobjecttag/x\":\"y\"}}}"), &p,
			       msg, sizeof(msg)),
			 AIS_OK);
	ck_assert(s3pol_uses_key(p, "s3:ExistingObjectTag/"));
	ck_assert(s3pol_glob(SV("*"), SV(""), false));
	ck_assert(s3pol_glob(SV("a*b*c"), SV("aXbYbZc"), false));
	ck_assert(!s3pol_glob(SV("a*b*c"), SV("aXbYbZ"), false));
	ck_assert(s3pol_glob(SV("S3:GET*"), SV("s3:GetObject"), true));
	ck_assert(!s3pol_glob(SV("S3:GET*"), SV("s3:GetObject"), false));
	ck_assert(!s3pol_glob(SV("?"), SV(""), false));
	arena_destroy(a);
}
END_TEST

/* A Service principal (server access log delivery) matches that service
 * only: never "*", a user or another service; users never match it. */
START_TEST(test_service_principal)
{
	arena_t *a = arena_new(4096);
	const s3pol_t *p;
	char msg[512];
	ck_assert_int_eq(parse(a, STMT("{\"Effect\":\"Allow\",\"Principal\":{\"Service\":\"logging.s3.amazonaws.com\"},"
				       "\"Action\":\"s3:PutObject\",\"Resource\":\"arn:aws:s3:::b/log/\"},"
				       "{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"*\"}"),
			       &p, msg, sizeof(msg)),
			 AIS_OK);
	s3pol_req_t q = {.service = "logging.s3.amazonaws.com", .action = "s3:PutObject", .bucket = SV("b"),
			 .key = SV("log/")};
	ck_assert_int_eq(s3pol_eval(p, &q, false), S3POL_ALLOW);
	q.key = SV("other/");
	ck_assert_int_eq(s3pol_eval(p, &q, false), S3POL_NONE);
	q.key = SV("log/"), q.service = "logging.s3.amazonaws.comX";
	ck_assert_int_eq(s3pol_eval(p, &q, false), S3POL_NONE);
	q.service = "logging.s3.amazonaws.com", q.action = "s3:GetObject"; /* "*" is not a service */
	ck_assert_int_eq(s3pol_eval(p, &q, false), S3POL_NONE);
	s3pol_req_t u = {.user = "\001service:logging.s3.amazonaws.com", .action = "s3:PutObject", .bucket = SV("b"),
			 .key = SV("log/")};
	ck_assert_int_eq(s3pol_eval(p, &u, false), S3POL_NONE);
	arena_destroy(a);
}
END_TEST

/* The verdict in the one decision: a Deny wins over grants, owner ACLs
 * and administrators; an Allow adds to the ACLs; a peer is never refused. */
START_TEST(test_decide_with_policy)
{
	size_t bad;
	authz_who_t u = {.kind = AUTHZ_USER, .user = SV("u")}, anon = {.kind = AUTHZ_ANON}, peer = {.kind = AUTHZ_PEER};
	authz_res_t x = {.bucket = SV("b"), .object = SV("k"), .perm = AUTH_READ, .acl = S3ACL_READ,
			 .acl_have = S3ACL_FULL};
	ck_assert_int_eq(authz_decide(&u, &x, 1, &bad), AUTHZ_ALLOW);
	x.pol = AUTHZ_POL_DENY;
	ck_assert_int_eq(authz_decide(&u, &x, 1, &bad), AUTHZ_DENY);
	ck_assert_int_eq(authz_decide(&peer, &x, 1, &bad), AUTHZ_ALLOW);
	x.acl_have = 0;
	x.pol = AUTHZ_POL_ALLOW;
	ck_assert_int_eq(authz_decide(&anon, &x, 1, &bad), AUTHZ_ALLOW);
	x.pol = AUTHZ_POL_NONE;
	ck_assert_int_eq(authz_decide(&anon, &x, 1, &bad), AUTHZ_DENY);
	x.pol = AUTHZ_POL_LATER;
	ck_assert_int_eq(authz_decide(&anon, &x, 1, &bad), AUTHZ_LATER);
	buf_t why = BUF_INIT;
	x.pol = AUTHZ_POL_DENY;
	authz_why(&u, &x, &why);
	ck_assert_ptr_nonnull(strstr(why.ptr, "bucket policy"));
	buf_free(&why);
}
END_TEST

START_TEST(test_bmd_policy)
{
	buf_t err = BUF_INIT, enc = BUF_INIT, enc2 = BUF_INIT;
	bmd_t *b = bmd_new("uuid-1", &err), *d = NULL;
	const char *pol = "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
			  "\"Resource\":\"arn:aws:s3:::b2/*\"}}";
	ck_assert_int_eq(bmd_add(b, S("b1"), NULL, &err), AIS_OK);
	ck_assert_int_eq(bmd_add(b, S("b3"), NULL, &err), AIS_OK);
	ck_assert_int_eq(bmd_add(b, S("b2"), NULL, &err), AIS_OK);
	uint64_t v = bmd_version(b);
	ck_assert_int_eq(bmd_set_policy(b, S("b1"), pol, strlen(pol), &err), AIS_ERR); /* b2's resource */
	ck_assert_int_eq(bmd_set_policy(b, S("nope"), pol, strlen(pol), &err), AIS_ERR);
	ck_assert_int_eq(bmd_set_policy(b, S("b2"), "{}", 2, &err), AIS_ERR);
	ck_assert_uint_eq(bmd_version(b), v);
	ck_assert_int_eq(bmd_set_policy(b, S("b2"), pol, strlen(pol), &err), AIS_OK);
	ck_assert_uint_eq(bmd_version(b), v + 1);
	ck_assert_int_eq(bmd_set_policy(b, S("b2"), pol, strlen(pol), &err), AIS_OK); /* the same: no change */
	ck_assert_uint_eq(bmd_version(b), v + 1);
	ck_assert_str_eq(bmd_policy(b, S("b2")), pol);
	ck_assert_ptr_null(bmd_policy(b, S("b1")));
	/* an entry added before it keeps it where it is */
	ck_assert_int_eq(bmd_add(b, S("a0"), NULL, &err), AIS_OK);
	ck_assert_str_eq(bmd_policy(b, S("b2")), pol);
	/* encode, decode, clone: equal */
	bmd_encode(b, &enc);
	ck_assert_int_eq(bmd_decode(enc.ptr, enc.len, &d, &err), AIS_OK);
	ck_assert(bmd_equal(b, d));
	ck_assert_uint_eq(bmd_version(d), bmd_version(b));
	bmd_encode(d, &enc2);
	ck_assert_str_eq(enc.ptr, enc2.ptr);
	bmd_t *c = bmd_clone(b);
	ck_assert(bmd_equal(b, c));
	ck_assert_int_eq(bmd_set_policy(c, S("b2"), NULL, 0, &err), AIS_OK);
	ck_assert(!bmd_equal(b, c));
	ck_assert_ptr_null(bmd_policy(c, S("b2")));
	ck_assert_str_eq(bmd_policy(b, S("b2")), pol);
	/* removed with its bucket */
	ck_assert_int_eq(bmd_remove(b, S("b2"), &err), AIS_OK);
	ck_assert_int_eq(bmd_add(b, S("b2"), NULL, &err), AIS_OK);
	ck_assert_ptr_null(bmd_policy(b, S("b2")));
	/* a stored policy that is not valid: the BMD is refused */
	buf_t bad = BUF_INIT;
	buf_addstr(&bad, "{\"uuid\":\"u\",\"version\":3,\"buckets\":[{\"name\":\"b\",\"provider\":\"ais\",\"checksum\":"
			 "\"xxhash\",\"mirror\":{\"enabled\":false,\"copies\":2},\"versioning\":true,\"access\":4095,"
			 "\"created\":1,\"s3policy\":\"{}\"}]}");
	bmd_t *e = NULL;
	ck_assert_int_eq(bmd_decode(bad.ptr, bad.len, &e, &err), AIS_ERR);
	ck_assert_ptr_null(e);
	buf_free(&bad);
	bmd_free(c);
	bmd_free(d);
	bmd_free(b);
	buf_free(&enc);
	buf_free(&enc2);
	buf_free(&err);
}
END_TEST

static Suite *s3policy_suite(void)
{
	Suite *s = suite_create("s3policy");
	TCase *tc = tcase_create("s3policy");
	tcase_add_test(tc, test_parse_refusals);
	tcase_add_test(tc, test_eval_tables);
	tcase_add_test(tc, test_eval_conditions);
	tcase_add_test(tc, test_public_glob);
	tcase_add_test(tc, test_service_principal);
	tcase_add_test(tc, test_decide_with_policy);
	tcase_add_test(tc, test_bmd_policy);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(s3policy_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
