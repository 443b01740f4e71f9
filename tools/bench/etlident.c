/*
 * etlident.c - an identity transformer in C for the stdio protocol
 * (docs/api.md, "The stdio protocol"), as cheap as a worker can be: the
 * object's bytes go from its standard input to its standard output by
 * splice(2), never through its memory. tools/bench/etl.sh registers it
 * beside the Python identity (aisd.etl.serve) to show what the transform
 * path costs apart from the worker's own work.
 *
 * Per request: read "AISETL 1 META_LEN ARGS_LEN DATA_LEN\n", META and
 * ARGS (bytes already read past them are the object's first bytes),
 * answer "200 DATA_LEN\n", then the object. Exit 0 at the end of input,
 * 1 on a malformed frame or a failed read or write (aisd restarts it).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/banned.h"

#define HEAD_MAX 4096 /* one page: the frame line, META and ARGS are small */

/* Writes all n bytes of p to fd. Returns 0, or -1. */
static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Moves n bytes from fd in to fd out by splice, a read and write when
 * splice is refused (not a pipe). Returns 0, or -1 (short input). */
static int move(int in, int out, uint64_t n)
{
	static char buf[65536];
	while (n > 0) {
		size_t want = n > (1u << 20) ? (1u << 20) : (size_t)n;
		ssize_t k = splice(in, NULL, out, NULL, want, SPLICE_F_MOVE | SPLICE_F_MORE);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EINVAL) {
			k = read(in, buf, want < sizeof(buf) ? want : sizeof(buf));
			if (k > 0 && write_all(out, buf, (size_t)k) != 0)
				return -1;
		}
		if (k <= 0)
			return -1;
		n -= (uint64_t)k;
	}
	return 0;
}

int main(void)
{
	char head[HEAD_MAX + 1];
	fcntl(1, F_SETPIPE_SZ, 1 << 20); /* best effort, as aisd sizes its own ends */
	for (;;) {
		size_t have = 0;
		char *nl = NULL;
		while (!nl) { /* the frame line, and whatever follows it in this read */
			if (have == HEAD_MAX)
				return 1;
			ssize_t k = read(0, head + have, HEAD_MAX - have);
			if (k < 0 && errno == EINTR)
				continue;
			if (k == 0 && have == 0)
				return 0; /* aisd closed our input: stop */
			if (k <= 0)
				return 1;
			have += (size_t)k;
			head[have] = '\0';
			nl = memchr(head, '\n', have);
		}
		uint64_t ml, al, dl;
		if (sscanf(head, "AISETL 1 %" SCNu64 " %" SCNu64 " %" SCNu64 "\n", &ml, &al, &dl) != 3)
			return 1;
		uint64_t skip = ml + al; /* META and ARGS, not used */
		uint64_t past = have - (size_t)(nl + 1 - head);
		const char *data = nl + 1;
		while (past < skip) { /* META and ARGS are longer than what was read */
			skip -= past;
			ssize_t k = read(0, head, skip < HEAD_MAX ? (size_t)skip : HEAD_MAX);
			if (k <= 0)
				return 1;
			past = (uint64_t)k;
			data = head;
		}
		data += skip;
		past -= skip;
		if (past > dl)
			return 1; /* bytes past the frame: out of step */
		char line[64];
		int n = snprintf(line, sizeof(line), "200 %" PRIu64 "\n", dl);
		if (write_all(1, line, (size_t)n) != 0 || write_all(1, data, (size_t)past) != 0 ||
		    move(0, 1, dl - past) != 0)
			return 1;
	}
}
