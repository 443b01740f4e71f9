/*
 * perm.c - permission words and the config's grants (perm.h), in core so
 * that the config parser checks auth.grant lines without the auth library.
 */
#include <string.h>

#include "aisd/names.h"
#include "aisd/perm.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

/* --- permissions ------------------------------------------------------------ */

static const struct {
	const char *name;
	unsigned bits;
} perm_words[] = {
	{"read", AUTH_READ}, {"write", AUTH_WRITE}, {"list", AUTH_LIST}, {"delete", AUTH_DELETE},
	{"admin", AUTH_ALL}, {"ro", AUTH_RO},       {"rw", AUTH_RW},
};

int auth_perm_parse(sv_t s, unsigned *bits)
{
	unsigned b = 0;
	size_t i = 0;
	if (!s.len)
		return AIS_ERR;
	while (i <= s.len) {
		size_t j = i;
		while (j < s.len && s.ptr[j] != ',' && s.ptr[j] != '+')
			j++;
		sv_t w = sv_trim((sv_t){s.ptr + i, j - i});
		bool found = false;
		for (size_t k = 0; k < ARRAY_SIZE(perm_words); k++) {
			if (sv_eqstr(w, perm_words[k].name)) {
				b |= perm_words[k].bits;
				found = true;
			}
		}
		if (!found)
			return AIS_ERR;
		i = j + 1;
	}
	*bits = b;
	return AIS_OK;
}

void auth_perm_format(unsigned bits, buf_t *out)
{
	if (bits & AUTH_ADMIN) {
		buf_addstr(out, "admin");
	} else if (bits == AUTH_RW) {
		buf_addstr(out, "rw");
	} else if (bits == AUTH_RO) {
		buf_addstr(out, "ro");
	} else {
		bool first = true;
		for (size_t k = 0; k < 4; k++) {
			if (bits & perm_words[k].bits) {
				buf_addf(out, "%s%s", first ? "" : ",", perm_words[k].name);
				first = false;
			}
		}
	}
}

/* --- grants ------------------------------------------------------------------- */

int auth_grant_split(const char *spec, sv_t *user, sv_t *bucket, unsigned *perm, buf_t *err)
{
	size_t n = strlen(spec);
	const char *c1 = memchr(spec, ':', n);
	const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - spec)) : NULL;
	if (!c2) {
		buf_addstr(err, "auth.grant: want USER:BUCKET:PERM");
		return AIS_ERR;
	}
	sv_t u = {spec, (size_t)(c1 - spec)}, b = {c1 + 1, (size_t)(c2 - c1 - 1)};
	sv_t p = {c2 + 1, n - (size_t)(c2 + 1 - spec)};
	for (size_t i = 0; i < u.len; i++) {
		if ((unsigned char)u.ptr[i] < 0x21 || u.ptr[i] == 0x7f) {
			u.len = 0;
			break;
		}
	}
	if (!u.len || u.len > AUTH_USER_MAX) {
		buf_addstr(err, "auth.grant: the user must be 1..128 printable bytes");
		return AIS_ERR;
	}
	if (!sv_eqstr(b, "*") && !name_bucket_valid(b.ptr, b.len)) {
		buf_addf(err, "auth.grant: \"%.*s\" is not a bucket name or *", (int)MIN(b.len, 80), b.ptr);
		return AIS_ERR;
	}
	if (auth_perm_parse(p, perm) != AIS_OK) {
		buf_addstr(err, "auth.grant: the permission must be read, write, list, delete, admin, ro or rw");
		return AIS_ERR;
	}
	*user = u;
	*bucket = b;
	return AIS_OK;
}

