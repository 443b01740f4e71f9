/*
 * replay.c - a main() for the libFuzzer drivers that runs each input once:
 * `make check-fuzz` links every tests/fuzz/fuzz_<name>.c with it (gcc or
 * clang, no libFuzzer needed) and replays tests/fuzz/corpus/<name>/ through
 * it, so the committed corpus is a regression suite of `make test`.
 *
 *   build/tests/fuzz/<name> FILE|DIR...
 *
 * Every regular file named, and every regular file directly inside a
 * directory named, is read whole and passed to LLVMFuzzerTestOneInput.
 * A driver's own checks abort on a violated property, so an input that
 * breaks one kills the process (and a sanitizer build reports it). Exits
 * 0 after printing how many inputs ran, 1 if an input could not be read
 * or none was found.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs the file at path through the driver; -1 if it cannot be read. */
static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t cap = 4096, n = 0;
	uint8_t *buf = malloc(cap);
	if (!buf)
		abort();
	size_t got;
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		fprintf(stderr, "%s: read error\n", path);
		free(buf);
		return -1;
	}
	/* an exact-size copy, so a sanitizer sees reads past the input */
	uint8_t *in = malloc(n ? n : 1);
	if (!in)
		abort();
	memcpy(in, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(in, n);
	free(in);
	return 0;
}

int main(int argc, char **argv)
{
	long runs = 0;
	int errs = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			errs++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			errs += replay_file(argv[i]) != 0;
			runs++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			perror(argv[i]);
			errs++;
			continue;
		}
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			char path[4096];
			int len = snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (len < 0 || (size_t)len >= sizeof(path) || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
				continue;
			errs += replay_file(path) != 0;
			runs++;
		}
		closedir(d);
	}
	printf("%s: %ld inputs replayed%s\n", argv[0], runs, errs ? ", some unreadable" : "");
	return errs || runs == 0;
}
