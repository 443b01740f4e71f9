/*
 * scaleload.c - fills a stopped target's mountpaths with many small objects
 * through the store's own write protocol (store_writer_begin, write,
 * commit: the temp file, the rename, the LevelDB commit of write.c), so the
 * result on disk is what PUTs of the same bytes leave, without the HTTP
 * round trips. Built for tools/bench/scale.sh and the restart test; the
 * target must be stopped (LevelDB allows one process per database).
 *
 * usage: scaleload -m MOUNTPATH [-m MOUNTPATH...] -b BUCKET -n COUNT
 *                  [-f FIRST] [-s SIZE] [-j THREADS] [--fsync always|never]
 *                  [-r SECONDS] [--set KEY=VALUE...]
 *
 * Objects FIRST .. FIRST + COUNT - 1 of BUCKET are aisloader's: named
 * obj-%06u, SIZE bytes (default 1024) of aisloader's data pattern
 * (tools/aisloader/pattern.c), so `aisloader --op get --verify` reads them
 * back. A bucket missing from the store is created (xxhash checksums, as a
 * PUT's bucket gets by default);
 * the cluster's bucket metadata is not touched: create them through the
 * gateway first. Progress goes to stderr every 100,000 objects; at the end
 * one JSON line: {"objects","seconds","rate"}. Exit 1 on any failure.
 *
 * With -r SECONDS it writes nothing: THREADS threads read random objects
 * of FIRST .. FIRST + COUNT - 1 for SECONDS through the store alone
 * (store_open_obj: the LevelDB lookup and the open, then a read and a
 * check of every byte against the pattern, as `aisloader --verify` does),
 * and the JSON line counts those reads: what a GET costs without HTTP, the
 * floor under the target's random GETs at the same object count.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aisd/conf.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/store.h"
#include "aisd/util.h"
#include "../aisloader/loader.h"
#include "aisd/banned.h"

#define SL_PROGRESS 100000

static struct {
	store_t *s;
	char bck[NAME_BUCKET_MAX + 1];
	uint64_t first, count, size;
	int threads;
	double read_s; /* -r: read for this long instead of writing */
	_Atomic uint64_t done;
	atomic_bool failed;
	double t0;
} g;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr, "usage: scaleload -m MOUNTPATH [-m MOUNTPATH...] -b BUCKET -n COUNT\n"
			"                 [-f FIRST] [-s SIZE] [-j THREADS] [--fsync always|never] [-r SECONDS]\n"
			"                 [--set KEY=VALUE (an aisd.conf key of the store, e.g. store.leveldb_cache=64MiB)]\n");
	exit(1);
}

static uint64_t num(const char *v)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || end == v || *end)
		usage();
	return n;
}

/* Object i: aisloader's name and bytes, written and committed as a PUT
 * without a client checksum. */
static int put_one(uint64_t i, char *body)
{
	char name[NAME_OBJECT_MAX + 1];
	const char *b = g.bck;
	int nl = snprintf(name, sizeof(name), "obj-%06" PRIu64, i);
	pat_fill(body, g.size, pat_shift(name, (size_t)nl), 0);
	store_writer_t *w = NULL;
	if (store_writer_begin(g.s, b, strlen(b), name, (size_t)nl, &w) != AIS_OK) {
		log_warn("%s/%s: writer", b, name);
		return AIS_ERR;
	}
	int rc = store_writer_write(w, body, g.size);
	if (rc == AIS_OK)
		rc = store_writer_commit(w, CKSUM_NONE, NULL, NULL, NULL);
	if (rc != AIS_OK)
		log_warn("%s/%s: write", b, name);
	store_writer_free(w);
	return rc;
}

static void *worker(void *arg)
{
	uint64_t t = (uint64_t)(uintptr_t)arg;
	char *body = xmalloc(g.size + 1);
	for (uint64_t i = g.first + t; i < g.first + g.count && !atomic_load(&g.failed); i += (uint64_t)g.threads) {
		if (put_one(i, body) != AIS_OK) {
			atomic_store(&g.failed, true);
			break;
		}
		uint64_t d = atomic_fetch_add(&g.done, 1) + 1;
		if (d % SL_PROGRESS == 0)
			fprintf(stderr, "scaleload: %" PRIu64 " objects, %.0f/s\n", d, (double)d / (now_s() - g.t0));
	}
	free(body);
	return NULL;
}

/* -r: random reads of the range, verified, until the time is up. */
static void *reader(void *arg)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL * ((uint64_t)(uintptr_t)arg + 1); /* xorshift64 */
	char *want = xmalloc(g.size + 1), *got = xmalloc(g.size + 1);
	char name[NAME_OBJECT_MAX + 1];
	const char *b = g.bck;
	while (!atomic_load(&g.failed)) {
		for (int k = 0; k < 64; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			int nl = snprintf(name, sizeof(name), "obj-%06" PRIu64, g.first + x % g.count);
			store_meta_t m;
			int fd;
			if (store_open_obj(g.s, b, strlen(b), name, (size_t)nl, &fd, &m) != AIS_OK) {
				log_warn("%s/%s: open", b, name);
				atomic_store(&g.failed, true);
				break;
			}
			ssize_t n = pread(fd, got, g.size + 1, 0);
			close(fd);
			pat_fill(want, g.size, pat_shift(name, (size_t)nl), 0);
			if (n != (ssize_t)g.size || memcmp(want, got, g.size)) {
				log_warnx("%s/%s: read %zd bytes, not the %" PRIu64 " written", b, name, n, g.size);
				atomic_store(&g.failed, true);
				break;
			}
			atomic_fetch_add(&g.done, 1);
		}
		if (now_s() - g.t0 >= g.read_s)
			break;
	}
	free(want);
	free(got);
	return NULL;
}

int main(int argc, char **argv)
{
	conf_t *c = xcalloc(1, sizeof(*c));
	buf_t err = BUF_INIT;
	conf_defaults(c);
	c->fsync = CONF_FSYNC_NEVER;
	c->n_mountpaths = 0;
	g.size = 1024;
	g.threads = 2;
	g.count = UINT64_MAX;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "-m")) {
			if (c->n_mountpaths >= CONF_MAX_MOUNTPATHS)
				usage();
			snprintf(c->mountpaths[c->n_mountpaths++], sizeof(c->mountpaths[0]), "%s", v);
		} else if (!strcmp(a, "-b")) {
			if (strlen(v) >= sizeof(g.bck))
				usage();
			snprintf(g.bck, sizeof(g.bck), "%s", v);
		} else if (!strcmp(a, "-n")) {
			g.count = num(v);
		} else if (!strcmp(a, "-f")) {
			g.first = num(v);
		} else if (!strcmp(a, "-s")) {
			g.size = num(v);
		} else if (!strcmp(a, "-j")) {
			g.threads = (int)num(v);
		} else if (!strcmp(a, "-r")) {
			g.read_s = (double)num(v);
			if (g.read_s < 1)
				usage();
		} else if (!strcmp(a, "--set")) {
			const char *eq = strchr(v, '=');
			char key[128];
			if (!eq || (size_t)(eq - v) >= sizeof(key))
				usage();
			memcpy(key, v, (size_t)(eq - v));
			key[eq - v] = '\0';
			if (conf_set(c, key, eq + 1, &err) != AIS_OK) {
				fprintf(stderr, "scaleload: --set %s: %s\n", v, err.ptr ? err.ptr : "bad value");
				return 2;
			}
		} else if (!strcmp(a, "--fsync")) {
			if (strcmp(v, "always") && strcmp(v, "never"))
				usage();
			c->fsync = strcmp(v, "always") ? CONF_FSYNC_NEVER : CONF_FSYNC_ALWAYS;
		} else {
			usage();
		}
	}
	if (!c->n_mountpaths || !g.bck[0] || g.count == UINT64_MAX || g.threads < 1 || g.threads > 64 ||
	    g.size > (64u << 20) || (g.read_s > 0 && !g.count))
		usage();
	pat_init();
	if (store_open(c, &g.s, &err) != AIS_OK) {
		fprintf(stderr, "scaleload: %s\n", err.ptr ? err.ptr : "cannot open the store");
		return 1;
	}
	store_bucket_t sb;
	if (!g.read_s && store_bucket_get(g.s, g.bck, strlen(g.bck), &sb) != AIS_OK &&
	    store_bucket_create(g.s, g.bck, strlen(g.bck), CKSUM_XXHASH) != AIS_OK) {
		fprintf(stderr, "scaleload: cannot create bucket %s: %s\n", g.bck, strerror(errno));
		return 1;
	}
	pthread_t th[64];
	g.t0 = now_s();
	for (int t = 0; t < g.threads; t++)
		if (pthread_create(&th[t], NULL, g.read_s ? reader : worker, (void *)(uintptr_t)t) != 0)
			fatalx("pthread_create");
	for (int t = 0; t < g.threads; t++)
		pthread_join(th[t], NULL);
	double dt = now_s() - g.t0;
	store_close(g.s);
	uint64_t d = atomic_load(&g.done);
	printf("{\"objects\":%" PRIu64 ",\"seconds\":%.3f,\"rate\":%.0f}\n", d, dt, dt > 0 ? (double)d / dt : 0.0);
	free(c);
	buf_free(&err);
	return atomic_load(&g.failed) ? 1 : 0;
}
