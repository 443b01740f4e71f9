/*
 * moss.h - GetBatch (AIStore's /v1/ml/moss) requests: the pure parser of
 * the JSON body and the entry names of the resulting tar.
 *
 * Body (AIStore's apc.MossReq; also accepted wrapped as
 * {"action":"getbatch","value":{...}}):
 *   {"in":[{"objname","bucket"?,"provider"?,"archpath"?,"start"?,"length"?,
 *           "opaque"?,"uname"?}, ...],
 *    "mime":".tar", "coer":bool, "onob":bool, "strm":bool}
 * An entry's bucket defaults to the bucket in the URL; output names are
 * "bucket/objname[/archpath]", or "objname[/archpath]" with onob; a missing
 * entry with coer is named "__404__/" + that name.
 */
#ifndef AISD_MOSS_H
#define AISD_MOSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/arena.h"
#include "aisd/buf.h"

#define MOSS_MAX_ENTRIES 100000
#define MOSS_MISSING_PREFIX "__404__/"

typedef struct moss_in {
	sv_t bck, obj;
	sv_t arch;        /* len 0: the whole object */
	uint64_t start;   /* range inside the object (or member) */
	uint64_t length;  /* 0: to the end */
	sv_t name;        /* its name in the output tar */
} moss_in_t;

typedef struct moss_req {
	moss_in_t *in;
	size_t n;
	bool coer, onob, strm;
	sv_t etl, etl_args; /* "etl": every entry through this transformer (len 0: none) */
} moss_req_t;

/*
 * Parses a request body of len bytes; dflt is the URL's bucket (len 0:
 * none, then every entry must name its bucket); at most max entries (0 or
 * more than MOSS_MAX_ENTRIES: MOSS_MAX_ENTRIES), counted before any is
 * read. Strings are copied into a. Returns AIS_OK, or AIS_ERR with a
 * one-line reason in err (a 400).
 */
int moss_parse(arena_t *a, const char *p, size_t len, sv_t dflt, size_t max, moss_req_t *out, buf_t *err);

#endif
