/*
 * olver.c - S3-style versions of objects, kept by the object layer
 * (olver.h), so that copies, erasure coding, rebalance and tombstones hold
 * for every version as they do for objects.
 *
 * Rules:
 *  1. A bucket's history (bmd.h: BMD props versioning.history, in the BMD
 *     every node has) is off, enabled or suspended; it is never set back
 *     to off. Off costs nothing: no lookup, no copy, no metadata.
 *  2. The object NAME is always its current version: reads, native and
 *     S3, are unchanged. Its custom metadata holds its version id
 *     (OLVER_ID_KEY); none is the "null" version (written while off or
 *     suspended).
 *  3. A version id is the write's HLC stamp (hlc.h: above every stamp the
 *     owner issued or observed, never a wall clock alone) in 16 hex
 *     digits, then 16 random hex digits: unique, and in write order for
 *     one object, since all of its writes commit on its owner.
 *  4. A write of NAME in an enabled bucket first keeps the current version
 *     as the object NAME NAME_VER_TAG ID (names.h), written through the
 *     object layer (ol_put_commit: the bucket's copies or slices) with the
 *     current version's bytes and metadata, and only then commits the new
 *     one. In a suspended bucket a current version with an id is kept so,
 *     a "null" one is replaced (as S3 does). A kept "null" version gets
 *     an id from its write's stamp and OLVER_NULL_KEY.
 *  5. A kept version is placed by NAME (cmap.c), so it lives on the
 *     holders of NAME, is read there, and a rebalance moves it with NAME
 *     (it walks stored names like any other). Client listings skip kept
 *     versions unless asked (store_list_objects, ?versions=true); stats
 *     count them as the objects they are.
 *  6. Writes of one name are not serialized against each other: of two
 *     writes of NAME that overlap, both keep the same previous version
 *     and the first committed is replaced by the second without being
 *     kept (the version the client was told of is lost). Clients that
 *     need every version write one name from one writer at a time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "ec_int.h"
#include "ol_int.h"
#include "aisd/hlc.h"
#include "aisd/log.h"
#include "aisd/ol.h"
#include "aisd/olver.h"
#include "aisd/status.h"
#include "target_int.h"
#include "aisd/util.h"
#include "aisd/banned.h"

/* The value of item key in custom ("k=v,k=v"), or an empty view. */
static sv_t item(const char *custom, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = custom; p && *p;) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		if (n > kl && p[kl] == '=' && !memcmp(p, key, kl))
			return (sv_t){p + kl + 1, n - kl - 1};
		p = c ? c + 1 : NULL;
	}
	return (sv_t){"", 0};
}

bool olver_id_valid(sv_t s)
{
	if (s.len != NAME_VER_ID_LEN)
		return false;
	for (size_t i = 0; i < s.len; i++)
		if (!((s.ptr[i] >= '0' && s.ptr[i] <= '9') || (s.ptr[i] >= 'a' && s.ptr[i] <= 'f')))
			return false;
	return true;
}

bool olver_id_of(const char *custom, char *out, bool *null)
{
	sv_t id = item(custom, OLVER_ID_KEY);
	*null = !olver_id_valid(id) || item(custom, OLVER_NULL_KEY).len;
	out[0] = 0;
	if (!olver_id_valid(id))
		return false;
	memcpy(out, id.ptr, id.len);
	out[id.len] = 0;
	return true;
}

void olver_name(buf_t *out, sv_t obj, sv_t id)
{
	buf_addsv(out, obj);
	buf_addstr(out, NAME_VER_TAG);
	buf_addsv(out, id);
}

static void id_from(int64_t stamp, bool rnd, char out[NAME_VER_ID_LEN + 1])
{
	unsigned char r[8] = {0};
	if (rnd && getrandom(r, sizeof(r), 0) != sizeof(r))
		fatal("getrandom: %s", strerror(errno));
	snprintf(out, NAME_VER_ID_LEN + 1, "%016llx", (unsigned long long)stamp);
	hex_encode(r, sizeof(r), out + 16);
	out[NAME_VER_ID_LEN] = 0;
}

void olver_new_id(char out[NAME_VER_ID_LEN + 1]) { id_from(hlc_now(), true, out); }

/* Rule 4: the current version of p's object, open on fd with meta m, as
 * the kept version id. */
static int keep(ol_put_t *p, int fd, const store_meta_t *m, const char *id, bool null)
{
	buf_t name = BUF_INIT, custom = BUF_INIT;
	char buf[1 << 16];
	olver_name(&name, p->obj, sv_from(id));
	buf_addstr(&custom, m->custom);
	if (null)
		buf_addf(&custom, "%s" OLVER_ID_KEY "=%s," OLVER_NULL_KEY "=1", custom.len ? "," : "", id);
	ol_put_t q = {.t = p->t, .bck = p->bck, .obj = sv_of(&name), .w = p->w, .custom = custom.ptr ? custom.ptr : "",
		      .size = m->size};
	int rc = ol_put_begin(&q);
	for (uint64_t off = 0; rc == AIS_OK && off < m->size;) {
		ssize_t n = pread(fd, buf, (size_t)MIN(sizeof(buf), m->size - off), (off_t)off);
		if (n <= 0) {
			errno = n < 0 ? errno : EIO;
			rc = AIS_ERR;
			break;
		}
		rc = ol_put_write(&q, buf, (size_t)n);
		off += (uint64_t)n;
	}
	if (rc == AIS_OK)
		rc = ol_put_commit(&q);
	int e = errno;
	if (rc != AIS_OK)
		buf_addf(&p->msg, "keeping version %s: %s", id, q.msg.len ? q.msg.ptr : strerror(e));
	ol_put_free(&q);
	buf_free(&name);
	buf_free(&custom);
	errno = e;
	return rc;
}

int olver_put_prepare(ol_put_t *p, char **custom)
{
	bmd_props_t bp;
	*custom = NULL;
	if (!p->w || name_version_of(p->obj.ptr, p->obj.len) || !ec_props(p->t, p->bck, &bp) ||
	    bp.history == BMD_HIST_OFF)
		return AIS_OK;
	int fd = -1;
	store_meta_t *m = xmalloc(sizeof(*m));
	buf_t msg = BUF_INIT;
	int rc = AIS_OK;
	if (ol_open_sync(p->t, p->bck, p->obj, false, &fd, m, &msg) == AIS_OK) {
		char id[NAME_VER_ID_LEN + 1];
		bool null;
		bool has = olver_id_of(m->custom, id, &null);
		if (!has) /* a "null" version: an id from its write (rule 4) */
			id_from(store_stamp(m), false, id);
		if (bp.history == BMD_HIST_ENABLED || !null)
			rc = keep(p, fd, m, id, !has);
		close(fd);
	} else if (errno != ENOENT) {
		buf_addf(&p->msg, "reading the current version: %s", msg.len ? msg.ptr : strerror(errno));
		rc = AIS_ERR;
		errno = EAGAIN;
	}
	free(m);
	buf_free(&msg);
	if (rc != AIS_OK) {
		if (errno != EAGAIN)
			errno = EAGAIN;
		return AIS_ERR;
	}
	/* the new version's metadata: the API's, less any version items (a
	 * copy of a version), with its new id when enabled */
	buf_t c = BUF_INIT;
	for (const char *q = p->custom; q && *q;) {
		const char *e = strchr(q, ',');
		size_t n = e ? (size_t)(e - q) : strlen(q);
		if (n && strncmp(q, "ver.", 4))
			buf_addf(&c, "%s%.*s", c.len ? "," : "", (int)n, q);
		q = e ? e + 1 : NULL;
	}
	if (bp.history == BMD_HIST_ENABLED) {
		char id[NAME_VER_ID_LEN + 1];
		olver_new_id(id);
		buf_addf(&c, "%s" OLVER_ID_KEY "=%s", c.len ? "," : "", id);
	}
	*custom = xstrndup(c.ptr ? c.ptr : "", c.len);
	buf_free(&c);
	return AIS_OK;
}
