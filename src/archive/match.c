/*
 * match.c - member name matchers for archregx (see archmatch.h).
 *
 * Pure and bounded: a regular expression is compiled once by regcomp and run
 * by regexec on a NUL-terminated copy of the name (names hold no NUL, but a
 * copy makes sure regexec never reads past len); the other modes compare
 * bytes. A name with a NUL byte never matches a regexp.
 */
#include <stdlib.h>
#include <string.h>

#include "aisd/archmatch.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

int archmatch_mode(const char *s, size_t len, enum archmode *out)
{
	static const struct { const char *name; enum archmode mode; } modes[] = {
		{"regexp", ARCH_REGEXP}, {"prefix", ARCH_PREFIX}, {"suffix", ARCH_SUFFIX},
		{"substr", ARCH_SUBSTR}, {"wdskey", ARCH_WDSKEY},
	};
	if (len == 0) {
		*out = ARCH_REGEXP;
		return AIS_OK;
	}
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
		if (strlen(modes[i].name) == len && !memcmp(modes[i].name, s, len)) {
			*out = modes[i].mode;
			return AIS_OK;
		}
	return AIS_ERR;
}

int archmatch_init(archmatch_t *m, enum archmode mode, const char *p, size_t len, buf_t *err)
{
	memset(m, 0, sizeof(*m));
	m->mode = mode;
	m->pat = xstrndup(p, len);
	m->len = len;
	if (mode != ARCH_REGEXP)
		return AIS_OK;
	if (memchr(p, '\0', len)) {
		buf_addstr(err, "the pattern holds a NUL byte");
		return AIS_ERR;
	}
	int rc = regcomp(&m->re, m->pat, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char msg[256];
		regerror(rc, &m->re, msg, sizeof(msg));
		buf_addf(err, "bad regular expression: %s", msg);
		return AIS_ERR;
	}
	m->compiled = true;
	return AIS_OK;
}

void archmatch_free(archmatch_t *m)
{
	if (m->compiled)
		regfree(&m->re);
	free(m->pat);
	m->pat = NULL;
	m->compiled = false;
}

size_t archmatch_wdskey(const char *name, size_t len)
{
	size_t base = 0;
	for (size_t i = len; i > 0; i--)
		if (name[i - 1] == '/') {
			base = i;
			break;
		}
	const char *dot = memchr(name + base, '.', len - base);
	return dot ? (size_t)(dot - name) : len;
}

bool archmatch_test(const archmatch_t *m, const char *name, size_t len)
{
	switch (m->mode) {
	case ARCH_PREFIX:
		return len >= m->len && !memcmp(name, m->pat, m->len);
	case ARCH_SUFFIX:
		return len >= m->len && !memcmp(name + len - m->len, m->pat, m->len);
	case ARCH_SUBSTR:
		return m->len == 0 || (len >= m->len && memmem(name, len, m->pat, m->len) != NULL);
	case ARCH_WDSKEY:
		return archmatch_wdskey(name, len) == m->len && !memcmp(name, m->pat, m->len);
	case ARCH_REGEXP: {
		if (!m->compiled || memchr(name, '\0', len))
			return false;
		char small[512], *s = len < sizeof(small) ? small : xmalloc(len + 1);
		memcpy(s, name, len);
		s[len] = '\0';
		bool ok = regexec(&m->re, s, 0, NULL, 0) == 0;
		if (s != small)
			free(s);
		return ok;
	}
	}
	return false;
}
