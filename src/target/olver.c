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
 *  6. The changes of one name that keep its current version (a client's
 *     write of NAME, its delete, the delete of one of its versions) run
 *     one at a time on the owner, under the name's lock (ol_name_lock):
 *     keep, then commit (or the marker, or the promotion), so of two that
 *     overlap the second keeps what the first made current and no version
 *     a client was told of is lost. The object layer's own writes under
 *     it (keep, marker, promote: with vcustom) take no lock.
 *  7. A delete of NAME in a bucket whose history is not off keeps the
 *     current version (rule 4), writes a delete marker (a kept version
 *     without bytes, OLVER_DM_KEY) and deletes NAME: a read of NAME finds
 *     nothing, as on S3. A delete of one version removes it for good
 *     (ol_delete of the kept name, or of NAME when it is the current
 *     one); when NAME is then absent, the newest kept version becomes
 *     current unless it is a marker.
 *  8. S3 object lock: a version's custom metadata may hold a retention
 *     (OLVER_LOCK_MODE_KEY, OLVER_LOCK_UNTIL_KEY) and a legal hold
 *     (OLVER_LOCK_HOLD_KEY), written with the version (its API's custom)
 *     or later on every copy (ol_set_custom), so they move with it like
 *     its bytes: kept (rule 4), made current again (promote), rebalanced,
 *     restarted. The one removal of a version for good,
 *     olver_delete_version, refuses a locked one (EACCES, olver_locked)
 *     whichever API asked, and a client's write of a kept version's own
 *     name is refused over a locked one (olver_put_prepare); moving a
 *     version between its kept name and NAME (rules 4 and 7, with
 *     vcustom: the object layer's own writes) is neither. A change of a
 *     version's other metadata (S3 tags and ACL of the current or a kept
 *     version: ol_set_custom of its whole custom) carries the lock items
 *     as it read them (S3's meta.c decodes and encodes them), so it
 *     neither removes nor shortens a lock (a lock change that overlaps it
 *     may be undone by it, as of any two overlapping metadata changes the
 *     later write stands). A bucket with S3 object lock keeps
 *     its history enabled (bmd.h), so a write never replaces a version.
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

#define COPY_CHUNK (1u << 20) /* a version's bytes copied this much at a time */

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
	char *buf = xmalloc(COPY_CHUNK);
	olver_name(&name, p->obj, sv_from(id));
	buf_addstr(&custom, m->custom);
	if (null)
		buf_addf(&custom, "%s" OLVER_ID_KEY "=%s," OLVER_NULL_KEY "=1", custom.len ? "," : "", id);
	ol_put_t q = {.t = p->t, .bck = p->bck, .obj = sv_of(&name), .w = p->w, .size = m->size};
	q.vcustom = xstrdup(custom.ptr ? custom.ptr : ""); /* as it is: the object layer's own write */
	int rc = ol_put_begin(&q);
	for (uint64_t off = 0; rc == AIS_OK && off < m->size;) {
		ssize_t n = pread(fd, buf, (size_t)MIN(COPY_CHUNK, m->size - off), (off_t)off);
		if (n <= 0) {
			errno = n < 0 ? errno : EIO;
			rc = AIS_ERR;
			break;
		}
		rc = ol_put_write(&q, buf, (size_t)n);
		off += (uint64_t)n;
	}
	free(buf);
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

/* Rule 4: keeps the current version of p's object (if any) as history
 * asks. AIS_ERR with errno EAGAIN and p->msg when it could not. */
static int keep_current(ol_put_t *p, unsigned history)
{
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
		if (history == BMD_HIST_ENABLED || !null)
			rc = keep(p, fd, m, id, !has);
		close(fd);
	} else if (errno != ENOENT) {
		buf_addf(&p->msg, "reading the current version: %s", msg.len ? msg.ptr : strerror(errno));
		rc = AIS_ERR;
	}
	free(m);
	buf_free(&msg);
	if (rc != AIS_OK)
		errno = EAGAIN;
	return rc;
}

static unsigned history_of(target_t *t, sv_t bck)
{
	bmd_props_t bp;
	return ec_props(t, bck, &bp) ? bp.history : BMD_HIST_OFF;
}

static int lock_check(target_t *t, sv_t bck, sv_t name, bool bypass, buf_t *msg);

bool olver_put_serial(const ol_put_t *p)
{
	return p->w && p->w->cluster && !p->vcustom && !name_version_of(p->obj.ptr, p->obj.len) &&
	       history_of(p->t, p->bck) != BMD_HIST_OFF;
}

int olver_put_prepare(ol_put_t *p, char **custom)
{
	*custom = NULL;
	if (!p->w || !p->w->cluster)
		return AIS_OK; /* a copy from another target */
	/* a client's write of a kept version's own name (the object layer's
	 * own, keep and promote, come with vcustom): never over a locked one */
	if (name_version_of(p->obj.ptr, p->obj.len))
		return lock_check(p->t, p->bck, p->obj, false, &p->msg);
	unsigned h = history_of(p->t, p->bck);
	if (h == BMD_HIST_OFF)
		return AIS_OK;
	if (keep_current(p, h) != AIS_OK)
		return AIS_ERR;
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
	if (h == BMD_HIST_ENABLED) {
		char id[NAME_VER_ID_LEN + 1];
		olver_new_id(id);
		buf_addf(&c, "%s" OLVER_ID_KEY "=%s", c.len ? "," : "", id);
	}
	*custom = xstrndup(c.ptr ? c.ptr : "", c.len);
	buf_free(&c);
	return AIS_OK;
}

const char *olver_locked(const char *custom, bool bypass, int64_t now_s)
{
	if (sv_eqstr(item(custom, OLVER_LOCK_HOLD_KEY), "1"))
		return "it is under a legal hold";
	sv_t mode = item(custom, OLVER_LOCK_MODE_KEY), until = item(custom, OLVER_LOCK_UNTIL_KEY);
	uint64_t u;
	if (!mode.len || num_parse_u64(until.ptr, until.len, 0, INT64_MAX, &u) != AIS_OK || (int64_t)u <= now_s)
		return NULL;
	if (sv_eqstr(mode, "COMPLIANCE"))
		return "its COMPLIANCE retention period is not over";
	if (!bypass)
		return "its GOVERNANCE retention period is not over (x-amz-bypass-governance-retention)";
	return NULL;
}

/* Rule 8: AIS_ERR (EACCES, msg) when the version stored as name may not
 * be removed; its metadata from the copy here, else from a holder. */
static int lock_check(target_t *t, sv_t bck, sv_t name, bool bypass, buf_t *msg)
{
	store_meta_t *m = xmalloc(sizeof(*m));
	buf_t why = BUF_INIT;
	int rc = AIS_OK, fd;
	bool have = store_lookup(t->store, bck.ptr, bck.len, name.ptr, name.len, m) == AIS_OK;
	if (!have && ol_open_sync(t, bck, name, true, &fd, m, &why) == AIS_OK) {
		close(fd);
		have = true;
	}
	const char *locked = have ? olver_locked(m->custom, bypass, time_now_ns() / 1000000000LL) : NULL;
	if (locked) {
		buf_addf(msg, "the version is locked: %s", locked);
		rc = AIS_ERR;
	}
	buf_free(&why);
	free(m);
	errno = rc == AIS_OK ? 0 : EACCES;
	return rc;
}

/* --- the kept versions of one object, on its holder ---------------------------------- */

struct vlist {
	size_t base; /* the kept name's length less the id */
	char (*id)[NAME_VER_ID_LEN + 1];
	bool *dm;
	size_t n, cap;
};

static void vlist_add(void *arg, const char *name, size_t len, const store_meta_t *m)
{
	struct vlist *l = arg;
	if (len != l->base + NAME_VER_ID_LEN || name_version_of(name, len) + NAME_VER_TAG_LEN != l->base)
		return; /* a version of a longer name */
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->id = xrealloc(l->id, l->cap * sizeof(*l->id));
		l->dm = xrealloc(l->dm, l->cap * sizeof(*l->dm));
	}
	memcpy(l->id[l->n], name + l->base, NAME_VER_ID_LEN);
	l->id[l->n][NAME_VER_ID_LEN] = 0;
	l->dm[l->n] = sv_eqstr(item(m->custom, OLVER_DM_KEY), "1");
	l->n++;
}

/* The kept versions of obj here, oldest first (ids sort by write). */
static int vlist_load(target_t *t, sv_t bck, sv_t obj, struct vlist *l)
{
	buf_t pfx = BUF_INIT;
	bool more;
	memset(l, 0, sizeof(*l));
	buf_addsv(&pfx, obj);
	buf_addstr(&pfx, NAME_VER_TAG);
	l->base = pfx.len;
	int rc = store_list_objects(t->store, bck.ptr, bck.len, pfx.ptr, pfx.len, "", 0, 0, true, vlist_add, l, &more);
	buf_free(&pfx);
	return rc;
}

static void vlist_free(struct vlist *l)
{
	free(l->id);
	free(l->dm);
}

int olver_resolve(target_t *t, sv_t bck, sv_t obj, sv_t id, buf_t *name, bool *dm)
{
	store_meta_t *m = xmalloc(sizeof(*m));
	char cur[NAME_VER_ID_LEN + 1];
	bool null = false, here;
	int rc = AIS_OK;
	*dm = false;
	buf_reset(name);
	here = store_lookup(t->store, bck.ptr, bck.len, obj.ptr, obj.len, m) == AIS_OK;
	bool has = here && olver_id_of(m->custom, cur, &null);
	if (here && (sv_eqstr(id, "null") ? null : has && sv_eqstr(id, cur))) {
		buf_addsv(name, obj);
		goto out;
	}
	if (olver_id_valid(id)) {
		olver_name(name, obj, id);
		if (store_lookup(t->store, bck.ptr, bck.len, name->ptr, name->len, m) == AIS_OK)
			*dm = sv_eqstr(item(m->custom, OLVER_DM_KEY), "1");
		/* else not here as a whole copy (erasure-coded slices, a copy
		 * still to come): the read finds it or says it is not there */
		goto out;
	} else if (sv_eqstr(id, "null")) { /* a kept "null" version */
		struct vlist l;
		if (vlist_load(t, bck, obj, &l) == AIS_OK)
			for (size_t i = l.n; i-- > 0;) {
				buf_reset(name);
				olver_name(name, obj, sv_from(l.id[i]));
				if (store_lookup(t->store, bck.ptr, bck.len, name->ptr, name->len, m) == AIS_OK &&
				    sv_eqstr(item(m->custom, OLVER_NULL_KEY), "1")) {
					*dm = sv_eqstr(item(m->custom, OLVER_DM_KEY), "1");
					vlist_free(&l);
					goto out;
				}
			}
		vlist_free(&l);
	}
	buf_reset(name);
	errno = ENOENT;
	rc = AIS_ERR;
out:
	free(m);
	return rc;
}

bool olver_marker_current(struct target *t, sv_t bck, sv_t obj, char *id_out)
{
	struct vlist l;
	bool dm = false;
	if (vlist_load(t, bck, obj, &l) != AIS_OK)
		return false;
	if (l.n && l.dm[l.n - 1]) {
		dm = true;
		snprintf(id_out, NAME_VER_ID_LEN + 1, "%s", l.id[l.n - 1]);
	}
	vlist_free(&l);
	return dm;
}

/* The newest kept version becomes the current one when there is none and
 * it is not a delete marker: its bytes and metadata written as obj (with
 * its id), then the kept copy removed. */
static int promote(ol_put_t *p)
{
	store_meta_t *m = xmalloc(sizeof(*m));
	struct vlist l;
	int rc = AIS_OK;
	if (store_lookup(p->t->store, p->bck.ptr, p->bck.len, p->obj.ptr, p->obj.len, m) == AIS_OK ||
	    vlist_load(p->t, p->bck, p->obj, &l) != AIS_OK) {
		free(m);
		return AIS_OK;
	}
	if (l.n && !l.dm[l.n - 1]) {
		buf_t vn = BUF_INIT, msg = BUF_INIT;
		char *buf = xmalloc(COPY_CHUNK);
		int fd;
		olver_name(&vn, p->obj, sv_from(l.id[l.n - 1]));
		rc = ol_open_sync(p->t, p->bck, sv_of(&vn), false, &fd, m, &msg);
		if (rc == AIS_OK) {
			ol_put_t q = {.t = p->t, .bck = p->bck, .obj = p->obj, .w = p->w, .size = m->size};
			q.vcustom = xstrdup(m->custom); /* as it is: no version kept, no new id */
			rc = ol_put_begin(&q);
			for (uint64_t off = 0; rc == AIS_OK && off < m->size;) {
				ssize_t n = pread(fd, buf, (size_t)MIN(COPY_CHUNK, m->size - off), (off_t)off);
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
			if (rc != AIS_OK)
				buf_addf(&p->msg, "making the previous version current: %s",
					 q.msg.len ? q.msg.ptr : strerror(errno));
			ol_put_free(&q);
			close(fd);
		}
		if (rc == AIS_OK && ol_delete(p->t, p->bck, sv_of(&vn), true) != AIS_OK && errno != ENOENT)
			log_warn("%.*s: the kept copy of the version made current stays", (int)vn.len, vn.ptr);
		buf_free(&vn);
		buf_free(&msg);
		free(buf);
	}
	vlist_free(&l);
	free(m);
	return rc;
}

static int delete_current(target_t *t, const ol_where_t *w, sv_t bck, sv_t obj, char *id_out, buf_t *msg)
{
	unsigned h = history_of(t, bck);
	ol_put_t p = {.t = t, .bck = bck, .obj = obj, .w = w};
	buf_t vn = BUF_INIT;
	int rc = AIS_ERR;
	if (keep_current(&p, h) != AIS_OK)
		goto out;
	/* the marker: a kept version without bytes (rule 7) */
	char id[NAME_VER_ID_LEN + 1];
	olver_new_id(id);
	olver_name(&vn, obj, sv_from(id));
	ol_put_t q = {.t = t, .bck = bck, .obj = sv_of(&vn), .w = w};
	buf_t c = BUF_INIT;
	buf_addf(&c, OLVER_ID_KEY "=%s," OLVER_DM_KEY "=1%s", id, h == BMD_HIST_SUSPENDED ? "," OLVER_NULL_KEY "=1" : "");
	q.vcustom = xstrdup(c.ptr); /* as it is: the object layer's own write */
	rc = ol_put_begin(&q);
	if (rc == AIS_OK)
		rc = ol_put_commit(&q);
	if (rc != AIS_OK)
		buf_addf(&p.msg, "writing the delete marker: %s", q.msg.len ? q.msg.ptr : strerror(errno));
	ol_put_free(&q);
	buf_free(&c);
	if (rc != AIS_OK)
		goto out;
	if (ol_delete_msg(t, bck, obj, w && w->cluster, &p.msg) != AIS_OK && errno != ENOENT) {
		rc = AIS_ERR;
		goto out;
	}
	rc = AIS_OK;
	snprintf(id_out, NAME_VER_ID_LEN + 1, "%s", id);
out:
	if (rc != AIS_OK && msg)
		buf_addsv(msg, sv_of(&p.msg));
	buf_free(&p.msg);
	buf_free(&vn);
	errno = rc == AIS_OK ? 0 : EAGAIN;
	return rc;
}

int olver_delete(target_t *t, const ol_where_t *w, sv_t bck, sv_t obj, char *id_out, buf_t *msg)
{
	ol_name_lock(bck, obj); /* rule 6 */
	int rc = delete_current(t, w, bck, obj, id_out, msg), e = errno;
	ol_name_unlock(bck, obj);
	errno = e;
	return rc;
}

static int delete_version(target_t *t, const ol_where_t *w, sv_t bck, sv_t obj, sv_t id, bool bypass, bool *dm,
			  buf_t *msg)
{
	buf_t name = BUF_INIT;
	ol_put_t p = {.t = t, .bck = bck, .obj = obj, .w = w};
	int rc = AIS_OK;
	*dm = false;
	if (olver_resolve(t, bck, obj, id, &name, dm) == AIS_OK) {
		if (lock_check(t, bck, sv_of(&name), bypass, &p.msg) != AIS_OK) { /* rule 8 */
			if (msg)
				buf_addsv(msg, sv_of(&p.msg));
			buf_free(&p.msg);
			buf_free(&name);
			errno = EACCES;
			return AIS_ERR;
		}
		if (ol_delete_msg(t, bck, sv_of(&name), w && w->cluster, &p.msg) != AIS_OK && errno != ENOENT)
			rc = AIS_ERR;
	}
	if (rc == AIS_OK)
		rc = promote(&p);
	if (rc != AIS_OK && msg)
		buf_addsv(msg, sv_of(&p.msg));
	buf_free(&p.msg);
	buf_free(&name);
	if (rc != AIS_OK)
		errno = EAGAIN;
	return rc;
}

int olver_delete_version(target_t *t, const ol_where_t *w, sv_t bck, sv_t obj, sv_t id, bool bypass, bool *dm,
			 buf_t *msg)
{
	ol_name_lock(bck, obj); /* rule 6 */
	int rc = delete_version(t, w, bck, obj, id, bypass, dm, msg), e = errno;
	ol_name_unlock(bck, obj);
	errno = e;
	return rc;
}
