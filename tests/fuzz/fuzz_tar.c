/*
 * fuzz_tar.c - libFuzzer driver for the tar reader: tar_parse_header on the
 * first block, tar_pax_find on the raw bytes, and the header walker
 * (tar_iter) over the whole input as a file (a memfd).
 *
 * Checks the contracts: every member yielded lies inside the file, the walk
 * ends within size / 512 + 1 steps with AIS_DONE or AIS_ERR (and a message
 * for AIS_ERR), and a parsed header's name is NUL-terminated at name_len.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aisd/status.h"
#include "aisd/tar.h"
#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	tar_entry_t e;
	tar_member_t m;
	tar_iter_t it;
	const char *v;
	size_t vl, steps = 0;
	int rc;

	if (size >= TAR_BLOCK) {
		rc = tar_parse_header(data, &e);
		if (rc == AIS_OK && (e.name_len > TAR_NAME_MAX || e.name[e.name_len] != '\0'))
			abort();
		if (rc == AIS_ERR && !e.err)
			abort();
	}
	if (tar_pax_find((const char *)data, size, "path", &v, &vl) == AIS_OK &&
	    (v < (const char *)data || v + vl > (const char *)data + size))
		abort();

	if (fd < 0 && (fd = memfd_create("fuzz_tar", 0)) < 0)
		abort();
	if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	tar_iter_init(&it, fd, size);
	while ((rc = tar_iter_next(&it, &m)) == AIS_OK) {
		if (m.offset > size || m.size > size - m.offset)
			abort();
		if (++steps > size / TAR_BLOCK + 1)
			abort();
	}
	if (rc != AIS_DONE && (rc != AIS_ERR || !it.err[0]))
		abort();
	if (tar_iter_next(&it, &m) != rc)
		abort();
	tar_iter_free(&it);
	return 0;
}
