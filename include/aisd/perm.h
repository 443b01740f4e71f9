/*
 * perm.h - the permission words of access control and the config's
 * auth.grant values: what the config parser (core) checks without the
 * auth library, which builds on it (auth.h includes this header).
 *
 * Guarantees: pure functions, no I/O, no allocation beyond the caller's
 * buffers; a value is accepted only when every part of it is valid.
 */
#ifndef AISD_PERM_H
#define AISD_PERM_H

#include "aisd/buf.h"

enum {
	AUTH_READ = 1 << 0,   /* GET/HEAD objects, HEAD bucket */
	AUTH_WRITE = 1 << 1,  /* PUT objects */
	AUTH_LIST = 1 << 2,   /* list objects */
	AUTH_DELETE = 1 << 3, /* DELETE objects */
	AUTH_ADMIN = 1 << 4,  /* bucket properties, destroy the bucket */
};
#define AUTH_RO (AUTH_READ | AUTH_LIST)
#define AUTH_RW (AUTH_READ | AUTH_WRITE | AUTH_LIST | AUTH_DELETE)
#define AUTH_ALL (AUTH_RW | AUTH_ADMIN)

#define AUTH_USER_MAX 128 /* longest user name */

/* Parses a permission list: names (read, write, list, delete, admin) and
 * shorthands (ro, rw, admin) separated by ',' or '+'. AIS_OK with *bits,
 * or AIS_ERR. */
int auth_perm_parse(sv_t s, unsigned *bits);
/* The shortest text for bits ("ro", "rw", "admin", or "read,delete"). */
void auth_perm_format(unsigned bits, buf_t *out);

/*
 * A grant from the config (auth.grant = USER:BUCKET:PERM): BUCKET "*"
 * means every bucket; "USER:*:admin" makes USER a cluster administrator.
 * auth_grant_split checks one value (user 1..128 printable bytes without
 * ':', a bucket name or "*", a permission list) and gives its parts.
 * AIS_OK, or AIS_ERR with the reason in err.
 */
int auth_grant_split(const char *spec, sv_t *user, sv_t *bucket, unsigned *perm, buf_t *err);

#endif
