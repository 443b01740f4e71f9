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

#endif
