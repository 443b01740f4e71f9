/*
 * etlident.c - an identity transformer in C for both protocols
 * (docs/api.md, "The stdio protocol", "The http protocol"), as cheap as a
 * worker can be: the object's bytes go from its input to its output by
 * splice(2), never through its memory. tools/bench/etl.sh registers it
 * beside the Python identity (aisd.etl.serve) to show what the transform
 * path costs apart from the worker's own work.
 *
 * stdio, per request: read "AISETL 1 META_LEN ARGS_LEN DATA_LEN\n", META
 * and ARGS (bytes already read past them are the object's first bytes),
 * answer "200 DATA_LEN\n", then the object. Exit 0 at the end of input,
 * 1 on a malformed frame or a failed read or write (aisd restarts it).
 *
 * http (AISD_ETL_COMM=http, set by aisd): connections accepted on the
 * listening socket AISD_ETL_FD; per request, its head read (at most 4 KiB,
 * a Content-Length), then "HTTP/1.1 200 OK" with the same length and the
 * body moved from the connection back to it through a pipe. A connection
 * ends when aisd closes it or sends a head that is not whole in the first
 * read (exit 1 on a failed accept).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
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

/* Moves n bytes from socket c back to it through pipe p. 0, or -1. */
static int echo(int c, const int p[2], uint64_t n)
{
	while (n > 0) {
		ssize_t k = splice(c, NULL, p[1], NULL, n > (1u << 20) ? (1u << 20) : (size_t)n, SPLICE_F_MOVE);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || move(p[0], c, (uint64_t)k) != 0)
			return -1;
		n -= (uint64_t)k;
	}
	return 0;
}

/* One request on connection c: 0 served, -1 the connection is done. */
static int http_one(int c, const int p[2])
{
	char head[HEAD_MAX + 1];
	ssize_t k = recv(c, head, HEAD_MAX, MSG_PEEK); /* the head (aisd sends it in one piece), maybe some body */
	if (k <= 0)
		return -1;
	head[k] = '\0';
	if (!strstr(head, "\r\n\r\n"))
		return -1;
	size_t hl = (size_t)(strstr(head, "\r\n\r\n") + 4 - head);
	if (recv(c, head, hl, MSG_WAITALL) != (ssize_t)hl)
		return -1;
	head[hl] = '\0';
	uint64_t n = 0;
	for (char *l = strstr(head, "\r\n"); l && l[2] != '\r'; l = strstr(l + 2, "\r\n"))
		if (strncasecmp(l + 2, "content-length:", 15) == 0)
			n = strtoull(l + 17, NULL, 10);
	char line[96];
	int m = snprintf(line, sizeof(line), "HTTP/1.1 200 OK\r\nContent-Length: %" PRIu64 "\r\n\r\n", n);
	return write_all(c, line, (size_t)m) == 0 && echo(c, p, n) == 0 ? 0 : -1;
}

static int serve_http(int lfd)
{
	for (;;) {
		int c = accept(lfd, NULL, NULL), p[2];
		if (c < 0 && errno == EINTR)
			continue;
		if (c < 0 || pipe(p) != 0)
			return 1;
		int sz = 2 << 20; /* an answer in one hand-over, as aisd.etl asks (best effort: wmem_max) */
		setsockopt(c, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
		while (http_one(c, p) == 0)
			;
		close(c);
		close(p[0]);
		close(p[1]);
	}
}

int main(void)
{
	char head[HEAD_MAX + 1];
	const char *comm = getenv("AISD_ETL_COMM");
	if (comm && strcmp(comm, "http") == 0)
		return serve_http(getenv("AISD_ETL_FD") ? (int)strtol(getenv("AISD_ETL_FD"), NULL, 10) : 3);
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
