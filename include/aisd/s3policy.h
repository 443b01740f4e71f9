/*
 * s3policy.h - S3 bucket policies as values: the JSON policy language's
 * core parsed into a compiled form, and its evaluation for one request.
 *
 * Pure: no I/O, no daemon header, no key table. The S3 door (access.c)
 * says who asks what (s3pol_req_t) and feeds the verdict to the one
 * decision (authz.h); the bmd library checks the text it stores with it.
 *
 * The language (what s3pol_parse accepts; anything else is an error that
 * says what is wrong, S3's MalformedPolicy):
 *   { "Version": "2012-10-17" | "2008-10-17",  (optional)
 *     "Id": string,                               (optional)
 *     "Statement": statement | [statement, ...] }
 *   statement: "Sid" (string), "Effect" ("Allow" | "Deny"), exactly one of
 *   "Principal"/"NotPrincipal" ("*", or {"AWS": v, "CanonicalUser": v}
 *   with v a string or an array of strings, or {"Service": v}, which
 *   matches only a request made by that service (s3pol_req_t.service:
 *   server access log delivery); NotPrincipal only in a Deny),
 *   exactly one of
 *   "Action"/"NotAction" ("s3:Name" with * and ? wildcards, or "*"),
 *   exactly one of "Resource"/"NotResource" ("arn:aws:s3:::BUCKET" or
 *   "arn:aws:s3:::BUCKET/KEY" with * and ?, of the policy's own bucket,
 *   or "*"), and optionally "Condition": {OPERATOR: {KEY: value(s)}}.
 *   Operators: String{Equals,NotEquals,EqualsIgnoreCase,
 *   NotEqualsIgnoreCase,Like,NotLike}, Numeric{Equals,NotEquals,LessThan,
 *   LessThanEquals,GreaterThan,GreaterThanEquals}, Bool, IpAddress,
 *   NotIpAddress, Arn{Equals,Like,NotEquals,NotLike}, Null; each but Null
 *   also with the suffix "IfExists". Keys: "aws:..." and "s3:..." (the
 *   caller answers which it knows; an unknown one is absent).
 *   Not supported, and refused rather than taken literally: policy
 *   variables ("${aws:username}"), the ForAnyValue:/ForAllValues:
 *   qualifiers, Date* and Binary operators, Federated principals.
 *
 * Evaluation (s3pol_eval) as S3 does it: a statement applies when its
 * principal, action, resource and every condition match; any Deny that
 * applies makes the policy DENY, else any Allow makes it ALLOW, else it
 * says nothing (NONE: the ACLs decide). A condition with several values
 * matches when any value does; a negated operator (Not...) when none does.
 * A key the request lacks fails a condition, but for the negated
 * operators (they match), "...IfExists" (matches) and Null.
 * Principals: "*" is everyone, anonymous requests included; a user is
 * named by its user id, "arn:aws:iam::ID:root", or an ARN ending in
 * ":user/ID" or ":user/DISPLAY-NAME".
 */
#ifndef AISD_S3POLICY_H
#define AISD_S3POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "aisd/arena.h"
#include "aisd/buf.h"

#define S3POL_MAX 20480 /* bytes of a policy document, as S3 */

typedef struct s3pol s3pol_t;

/* Parses the policy text (len bytes) of bucket into the arena. AIS_OK with
 * *out; AIS_ERR with what is wrong in err (one sentence). Any bytes. */
int s3pol_parse(arena_t *a, const char *bucket, const char *text, size_t len, const s3pol_t **out, buf_t *err);
/* The same, for a check only (own scratch memory). */
bool s3pol_valid(const char *bucket, const char *text, size_t len, buf_t *err);

/* The request context: a key's value, or false when the request has none. */
typedef bool (*s3pol_key_fn)(void *arg, const char *key, sv_t *val);

typedef struct s3pol_req {
	const char *user;      /* the requester's user id; NULL: anonymous */
	const char *user_name; /* its display name, or NULL */
	const char *service;   /* a service principal asking ("logging.s3.amazonaws.com"), or NULL: a
				* service matches only a {"Service": NAME} principal, never "*" or a user */
	const char *action;    /* "s3:GetObject" */
	sv_t bucket;
	sv_t key;              /* empty: the bucket itself */
	s3pol_key_fn ctx;      /* condition keys; NULL: none */
	void *arg;
} s3pol_req_t;

enum s3pol_effect { S3POL_NONE, S3POL_ALLOW, S3POL_DENY };

/* The policy's verdict on q (above). no_public: public statements
 * (s3pol_public) allow nothing (RestrictPublicBuckets). Pure. */
enum s3pol_effect s3pol_eval(const s3pol_t *p, const s3pol_req_t *q, bool no_public);
/* Is the policy public: an Allow to "*" (or a NotPrincipal) not narrowed
 * by a condition on the source (aws:SourceIp, aws:SourceVpc(e),
 * aws:SourceArn, aws:SourceAccount, aws:PrincipalOrgID, aws:userid,
 * aws:PrincipalAccount)? */
bool s3pol_public(const s3pol_t *p);
/* Does a condition of the policy use a key that starts with prefix
 * (case-insensitive)? For keys the caller must fetch ("s3:ExistingObjectTag/"). */
bool s3pol_uses_key(const s3pol_t *p, const char *prefix);
/* Glob match of s against pattern pat (* any run, ? one character),
 * byte-wise, case-insensitive when nocase. */
bool s3pol_glob(sv_t pat, sv_t s, bool nocase);

#endif
