/*
 * olver.h - S3-style object versions kept by the object layer
 * (src/target/olver.c, whose header paragraph has the rules).
 */
#ifndef AISD_OLVER_H
#define AISD_OLVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/names.h"
#include "aisd/buf.h"

#define OLVER_ID_KEY "ver.id"     /* custom metadata: the version's id */
#define OLVER_NULL_KEY "ver.null" /* custom metadata: it is the "null" version */
#define OLVER_DM_KEY "ver.dm"     /* custom metadata: it is a delete marker (no bytes) */
/* S3 object lock of one version (rule 8 of olver.c), in its custom metadata */
#define OLVER_LOCK_MODE_KEY "lock.mode"   /* GOVERNANCE or COMPLIANCE */
#define OLVER_LOCK_UNTIL_KEY "lock.until" /* retain until: Unix seconds */
#define OLVER_LOCK_HOLD_KEY "lock.hold"   /* a legal hold: 1 */

/* The version id in custom metadata into out (NAME_VER_ID_LEN + 1 bytes):
 * true when there is one. *null set when it is the "null" version (no id,
 * or an archived null version). */
bool olver_id_of(const char *custom, char *out, bool *null);
/* Is s a version id as this cluster makes them (NAME_VER_ID_LEN hex)? */
bool olver_id_valid(sv_t s);
/* Appends obj's kept version id to out: OBJ NAME_VER_TAG ID. */
void olver_name(buf_t *out, sv_t obj, sv_t id);
/* A new version id: the HLC stamp (16 hex) then 16 random hex digits:
 * unique, and sorted by write order on the object's owner. */
void olver_new_id(char out[NAME_VER_ID_LEN + 1]);

/* Pure: why a version whose custom metadata is custom may not be removed
 * at Unix time now_s (a legal hold; a retention not over: COMPLIANCE
 * always, GOVERNANCE unless bypass), or NULL when it may. */
const char *olver_locked(const char *custom, bool bypass, int64_t now_s);

struct target;
struct ol_where;
/* Blocking, on a holder of obj: the stored name of obj's version id
 * ("null" too) into name, *dm when it is a delete marker here. A kept
 * version this target holds no whole copy of (erasure-coded, or a copy
 * still to come) is named unchecked: the read of it says whether it is
 * there, and a read of obj itself may then find it current. AIS_ERR with
 * errno ENOENT when there is no such version. */
int olver_resolve(struct target *t, sv_t bck, sv_t obj, sv_t id, buf_t *name, bool *dm);
/* Blocking, on a holder of obj that has no current copy of it: true when
 * its newest kept version is a delete marker, whose id goes to id_out
 * (NAME_VER_ID_LEN + 1 bytes). */
bool olver_marker_current(struct target *t, sv_t bck, sv_t obj, char *id_out);
/* Blocking, on obj's owner (rule 7): a delete marker as obj's current
 * version; its id into id_out (NAME_VER_ID_LEN + 1 bytes). AIS_ERR with
 * errno EAGAIN and msg. */
int olver_delete(struct target *t, const struct ol_where *w, sv_t bck, sv_t obj, char *id_out, buf_t *msg);
/* Blocking, on obj's owner (rule 7): removes version id for good (none:
 * nothing); *dm when it was a delete marker. AIS_ERR with errno EAGAIN
 * and msg; EACCES and msg when the version is locked (rule 8; bypass: a
 * GOVERNANCE retention does not hold). */
int olver_delete_version(struct target *t, const struct ol_where *w, sv_t bck, sv_t obj, sv_t id, bool bypass,
			 bool *dm, buf_t *msg);

#endif
