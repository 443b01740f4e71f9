/*
 * names.h - what a bucket or object name may be.
 *
 * Bucket: [A-Za-z0-9._-], 1..64 bytes, not "." or "..".
 * Object: valid UTF-8, no NUL, 1..1024 bytes, and no "." or ".." segment
 * (between slashes or at either end: ".", "..", "a/../b", "./a", "a/.").
 * Anything else is allowed: '/', spaces, '+', '%', "a..b", ".hidden", "a//b".
 * Names never become local paths; the dot-segment rule is for the paths
 * they do become: a remote's URL, where a client or proxy on the way
 * would resolve "a/../b" to "b" and so reach another bucket or route.
 * Checked on the decoded name, so "%2E%2E" is ".." too.
 * Archive member paths (archpath) follow the object rule without the
 * dot-segment part ("./a.txt" is a common tar member name).
 */
#ifndef AISD_NAMES_H
#define AISD_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#define NAME_BUCKET_MAX 64
#define NAME_OBJECT_MAX 1024

bool name_bucket_valid(const char *s, size_t len);
bool name_object_valid(const char *s, size_t len);

/* Versions (olver.h): a kept version of object NAME is the object
 * NAME NAME_VER_TAG ID, ID NAME_VER_ID_LEN lowercase hex digits. Such a
 * name is placed by NAME (cmap.h), so every version lives on the holders
 * of its object and moves with it. */
#define NAME_VER_TAG "~ais.v~"
#define NAME_VER_TAG_LEN 7
#define NAME_VER_ID_LEN 32
/* The length of the object name a version name s is of (s itself may be
 * an intra-cluster name "bucket/object"); 0 when s is no version name. */
size_t name_version_of(const char *s, size_t len);
bool name_archpath_valid(const char *s, size_t len);
/* s has a "." or ".." segment ('/'-separated). */
bool name_has_dot_segment(const char *s, size_t len);
bool utf8_valid(const char *s, size_t len);
/* Does custom metadata ("k=v,k=v", store.h) name a key the cluster
 * reserves for itself: "s3." (S3's owner, ACL, ETag, user metadata: the
 * S3 API's meta.c), "bk." (a remote backend's ETag: the object layer),
 * "ver." and "lock." (versions, object locks: olver.h), "archive." and
 * "dsort." (the run that wrote a shard: xarch.h, dsort.h) or "ais." (kept
 * for the cluster's keys to come), in any case, blanks around a key
 * ignored? Only the cluster's own nodes write those; a client's PUT
 * naming one is refused. */
bool name_custom_reserved(const char *md, size_t len);
/* A short identifier (a remote's alias): [A-Za-z0-9_-], 1..max bytes. */
bool name_ident_valid(const char *s, size_t len, size_t max);

/* A name template "pre{A..B}post": the names pre + N + post for N from A
 * to B, N zero-padded to the width of A as written ("{0000..0999}").
 * pre and post point into the parsed string. */
typedef struct name_tpl {
	const char *pre, *post;
	size_t pre_len, post_len;
	unsigned long long a, b;
	int width;
} name_tpl_t;
#define NAME_TPL_SPAN_MAX 10000000ULL /* B - A at most */
/* Parses s (NUL-terminated; kept by the caller while t is used): one brace
 * range, A <= B, B - A <= NAME_TPL_SPAN_MAX. false when it is not one. */
bool name_tpl_parse(const char *s, name_tpl_t *t);
/* Whether the template yields the name (len bytes). */
bool name_tpl_match(const name_tpl_t *t, const char *s, size_t len);

#endif
