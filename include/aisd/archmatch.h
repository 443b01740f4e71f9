/*
 * archmatch.h - matching shard member names for ?archregx=PATTERN&archmode=M
 * (AIStore's archive selection): a pure library, no I/O.
 *
 * Modes:
 *   regexp  POSIX extended regular expression, unanchored (REG_EXTENDED |
 *           REG_NOSUB); the default
 *   prefix  the name starts with PATTERN
 *   suffix  the name ends with PATTERN
 *   substr  the name contains PATTERN
 *   wdskey  the name's WebDataset key is PATTERN: the name without the
 *           extensions of its last path component (everything from the
 *           first '.' after the last '/'), so "a/000123" matches
 *           "a/000123.jpg" and "a/000123.seg.png", not "a/0001234.jpg"
 */
#ifndef AISD_ARCHMATCH_H
#define AISD_ARCHMATCH_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "aisd/buf.h"

enum archmode { ARCH_REGEXP, ARCH_PREFIX, ARCH_SUFFIX, ARCH_SUBSTR, ARCH_WDSKEY };

typedef struct archmatch {
	enum archmode mode;
	char *pat;       /* owned, NUL-terminated */
	size_t len;
	regex_t re;      /* ARCH_REGEXP */
	bool compiled;
} archmatch_t;

/* Parses a mode name (len 0: regexp). AIS_OK or AIS_ERR. */
int archmatch_mode(const char *s, size_t len, enum archmode *out);
/* Prepares a matcher for pattern p (len bytes, no NUL; may be empty: matches
 * everything but in wdskey mode). Returns AIS_OK, or AIS_ERR with the reason
 * (a bad regular expression) in err. Free with archmatch_free either way. */
int archmatch_init(archmatch_t *m, enum archmode mode, const char *p, size_t len, buf_t *err);
/* Does name (len bytes) match? */
bool archmatch_test(const archmatch_t *m, const char *name, size_t len);
void archmatch_free(archmatch_t *m);
/* The WebDataset key of name: its length (a prefix of name). */
size_t archmatch_wdskey(const char *name, size_t len);

#endif
