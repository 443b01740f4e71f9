/*
 * olver.h - S3-style object versions kept by the object layer
 * (src/target/olver.c, whose header paragraph has the rules).
 */
#ifndef AISD_OLVER_H
#define AISD_OLVER_H

#include <stdbool.h>
#include <stddef.h>

#include "aisd/names.h"
#include "aisd/buf.h"

#define OLVER_ID_KEY "ver.id"     /* custom metadata: the version's id */
#define OLVER_NULL_KEY "ver.null" /* custom metadata: it is the "null" version */
#define OLVER_DM_KEY "ver.dm"     /* custom metadata: it is a delete marker (no bytes) */

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
 * and msg. */
int olver_delete_version(struct target *t, const struct ol_where *w, sv_t bck, sv_t obj, sv_t id, bool *dm,
			 buf_t *msg);

#endif
