/*
 * s3lc.h - S3 bucket lifecycle configurations as values (src/s3auth/lifecycle.c):
 * the rules, their canonical JSON (what the BMD keeps beside the bucket:
 * bmd_doc BMD_DOC_LIFECYCLE), which rule applies to which object version,
 * and when. Pure: no I/O, no clock (the caller passes now and the length
 * of a rule's day), no daemon header, so the BMD checks a stored document
 * with it, the S3 API parses and answers with it (src/s3/lifecycle.c: the
 * XML) and the expiration job (src/lifecycle/) decides with it.
 *
 * Rules of the values:
 *  1. A configuration has 1..S3LC_RULES_MAX rules, unique ids of
 *     1..S3LC_ID_MAX bytes, each with at least one action.
 *  2. A rule's filter is the conjunction of every condition it names: its
 *     rule-level Prefix, or its Filter's Prefix, Tag, ObjectSizeGreaterThan,
 *     ObjectSizeLessThan and And's children (a Filter that names both And
 *     and conditions beside it, which S3 refuses and Ceph accepts, keeps
 *     all of them: it matches fewer objects, never more). The form as given
 *     (rule-level Prefix or Filter, And or not) is kept, so a GET answers
 *     what was put.
 *  3. Times: a rule's day is day_ns long. With the calendar day (24 h) a
 *     version is due, as on S3, at the first midnight UTC at or after its
 *     start + N days; with any other day length (a test cluster's short
 *     day, s3.lifecycle_day) at start + N * day_ns exactly.
 *  4. What expires (s3lc_plan): the current version by Expiration (Days
 *     or Date) of a rule that matches it; a noncurrent version by
 *     NoncurrentVersionExpiration, NoncurrentDays after it became
 *     noncurrent (when the next newer version was written), beyond the
 *     NewerNoncurrentVersions newest; a delete marker that is the only
 *     version left ("expired object delete marker") by
 *     ExpiredObjectDeleteMarker, or by Expiration Days/Date counted from
 *     the marker's own write. Disabled rules do nothing.
 */
#ifndef AISD_S3LC_H
#define AISD_S3LC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/arena.h"
#include "aisd/buf.h"

#define S3LC_RULES_MAX 1000
#define S3LC_ID_MAX 255
#define S3LC_TAGS_MAX 50
#define S3LC_NEWER_MAX 100 /* NewerNoncurrentVersions */
#define S3LC_DAY_NS (86400LL * 1000000000LL)

typedef struct s3lc_tag {
	char *key, *value;
} s3lc_tag_t;

/* A filter's conditions (rule 2); the And element's are the same kind. */
typedef struct s3lc_cond {
	char *prefix;    /* NULL: none */
	s3lc_tag_t *tags; /* a Filter's <Tag> (at most 1) or And's <Tag>s */
	size_t ntags;
	int64_t gt, lt; /* ObjectSizeGreaterThan / LessThan; -1: none */
} s3lc_cond_t;

typedef struct s3lc_rule {
	char *id;
	bool enabled;
	char *prefix;       /* the rule-level <Prefix> (legacy form); NULL: none */
	bool filter;        /* has <Filter> */
	s3lc_cond_t f;      /* the Filter's own conditions */
	bool has_and;       /* the Filter has <And> */
	s3lc_cond_t a;      /* its conditions */
	/* actions; -1: none (values as given: s3lc_check checks them) */
	int64_t exp_days;   /* Expiration Days (>= 1) */
	int64_t exp_date;   /* Expiration Date: Unix seconds of a midnight UTC */
	int exp_dm;         /* ExpiredObjectDeleteMarker: -1 none, 0 false, 1 true */
	int64_t nc_days;    /* NoncurrentVersionExpiration NoncurrentDays (>= 1) */
	int64_t nc_newer;   /* ... NewerNoncurrentVersions (1..S3LC_NEWER_MAX) */
	int64_t mpu_days;   /* AbortIncompleteMultipartUpload DaysAfterInitiation (>= 1) */
	size_t transitions; /* Transition / NoncurrentVersionTransition elements given (not kept) */
} s3lc_rule_t;

typedef struct s3lc {
	s3lc_rule_t *rules; /* arena memory */
	size_t n;
} s3lc_t;

/* An empty rule: enabled, no filter, every number -1 (none). */
void s3lc_rule_init(s3lc_rule_t *u);
/* S3's checks of a parsed configuration beyond its XML schema (rule 1,
 * ranges, combinations): NULL when fine, else the S3 error code
 * (InvalidArgument, InvalidRequest, InvalidTag, MalformedXML) with *why
 * its message (NULL: the code's standard one). Rules without an id get
 * one first ("rule-N", unique in c). */
const char *s3lc_check(arena_t *a, s3lc_t *c, const char **why);
/* The canonical JSON of c (one line, deterministic). */
void s3lc_json(const s3lc_t *c, buf_t *out);
/* Parses canonical JSON (s3lc_json) into arena memory. AIS_ERR: not such a
 * document or not valid (s3lc_check), message in err when given. */
int s3lc_parse_json(arena_t *a, const char *p, size_t n, s3lc_t *out, buf_t *err);

/* An object version as the rules see it. */
typedef struct s3lc_obj {
	const char *key;
	size_t klen;
	uint64_t size;
	const s3lc_tag_t *tags;
	size_t ntags;
} s3lc_obj_t;
/* Does u's filter match o (rule 2)? (Status is not looked at.) */
bool s3lc_match(const s3lc_rule_t *u, const s3lc_obj_t *o);
/* When something started at start_ns is N days old (rule 3), in ns. */
int64_t s3lc_due(int64_t start_ns, int64_t days, int64_t day_ns);
/* The earliest Expiration of an enabled rule that matches the current
 * version o written at start_ns, with the calendar day (what
 * x-amz-expiration says, rule 3): its time (ns) and rule, or false. */
bool s3lc_expiry(const s3lc_t *c, const s3lc_obj_t *o, int64_t start_ns, int64_t *when_ns,
		 const s3lc_rule_t **rule);

/* One object name's versions on its owner, for s3lc_plan. */
typedef struct s3lc_ver {
	s3lc_obj_t o;     /* key, size, tags */
	int64_t start_ns; /* when it was written */
	bool dm;          /* a delete marker */
	bool expire;      /* out: s3lc_plan says remove it */
} s3lc_ver_t;
/* Decides (rule 4) at now_ns which versions of one name expire: cur the
 * current version (NULL: none, the name reads as deleted), v its kept
 * versions oldest first. Sets v[i].expire; returns true when the current
 * version expires (unversioned bucket: removed; else a delete marker
 * takes its place). A delete marker left alone by the versions that
 * expire in this call is judged alone at once. */
bool s3lc_plan(const s3lc_t *c, const s3lc_ver_t *cur, s3lc_ver_t *v, size_t n, int64_t now_ns, int64_t day_ns);
/* Is an incomplete multipart upload of key, started at start_ns, due to be
 * aborted by an enabled rule (its prefix; tags do not apply to uploads)? */
bool s3lc_upload_due(const s3lc_t *c, const char *key, size_t klen, int64_t start_ns, int64_t now_ns,
		     int64_t day_ns);

#endif
