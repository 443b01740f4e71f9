/*
 * fuzz_moss.c - libFuzzer driver for the GetBatch request parser
 * (moss_parse) and the tar writer fed with what it accepts.
 *
 * Checks the contracts: AIS_ERR always comes with a reason; on AIS_OK every
 * entry has a valid bucket and object name, its output name is
 * bucket/objname[/archpath] (objname[/archpath] with onob), and the tar
 * header written for that name reads back (tar_parse_header, or a pax
 * header first) in whole 512-byte blocks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/arena.h"
#include "aisd/moss.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/tar.h"
#include "aisd/tarw.h"
#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	arena_t *a = arena_new(4096);
	moss_req_t r;
	buf_t err = BUF_INIT, out = BUF_INIT;
	tar_entry_t e;

	if (moss_parse(a, (const char *)data, size, sv_from("dflt"), 0, &r, &err) != AIS_OK) {
		if (!err.len)
			abort();
		goto done;
	}
	if (!r.n || r.n > MOSS_MAX_ENTRIES)
		abort();
	for (size_t i = 0; i < r.n; i++) {
		moss_in_t *m = &r.in[i];
		if (!name_bucket_valid(m->bck.ptr, m->bck.len) || !name_object_valid(m->obj.ptr, m->obj.len))
			abort();
		size_t want = (r.onob ? 0 : m->bck.len + 1) + m->obj.len + (m->arch.len ? m->arch.len + 1 : 0);
		if (m->name.len != want || memchr(m->name.ptr, '\0', m->name.len))
			abort();
		buf_reset(&out);
		tarw_header(&out, m->name.ptr, m->name.len, m->length, 0);
		if (out.len % TAR_BLOCK || tar_parse_header((const unsigned char *)out.ptr, &e) != AIS_OK)
			abort();
	}
done:
	buf_free(&err);
	buf_free(&out);
	arena_destroy(a);
	return 0;
}
