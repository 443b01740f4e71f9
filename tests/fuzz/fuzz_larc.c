/*
 * fuzz_larc.c - libFuzzer driver for the compressed-shard reader (larc.c
 * over libarchive): the input as a .tgz and as a .zip, every member walked
 * and its data read to the end.
 *
 * Checks the contracts: the walk ends (AIS_DONE or AIS_ERR with a message)
 * within a bound, a member's name is NUL-terminated at its length, and no
 * member yields more bytes than its size says.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aisd/larc.h"
#include "aisd/status.h"
#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char buf[65536];

	if (fd < 0 && (fd = memfd_create("fuzz_larc", 0)) < 0)
		abort();
	if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	for (int k = LARC_TGZ; k <= LARC_ZIP; k++) {
		larc_t *a = larc_open(fd, size, (enum larc_kind)k);
		const char *name;
		size_t len, steps = 0;
		uint64_t msize;
		int rc;
		if (!a)
			abort();
		while ((rc = larc_next(a, &name, &len, &msize)) == AIS_OK) {
			if (name[len] != '\0' || ++steps > 100000)
				abort();
			uint64_t got = 0;
			ssize_t n;
			while ((n = larc_read(a, buf, sizeof(buf))) > 0) {
				got += (uint64_t)n;
				if (got > msize)
					abort();
			}
			if (n < 0)
				break;
		}
		if (rc == AIS_ERR && !larc_error(a)[0])
			abort();
		larc_close(a);
	}
	return 0;
}
