/*
 * fuzz_s3logging.c - libFuzzer driver for the S3 bucket logging
 * configuration parser (s3log_cfg_parse over expat), its stored form
 * (s3log_cfg_store / s3log_cfg_load) and the records of logrec.c.
 *
 * The input is the body. Checks the contracts: a configuration that
 * parses and logs has a target bucket; its stored form is one line of
 * printable ASCII that loads back to the same configuration; a refusal
 * leaves it off. A record made of the input's bytes (as key, user agent
 * and request target) splits into its fields: one line, no unquoted
 * space, quote or bracket but the separators.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/arena.h"
#include "aisd/status.h"
#include "../../src/s3/s3log.h"
#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fields of a line as s3-tests splits it: spaces outside "..." and
 * [...]; -1 on an unbalanced quote. */
static int count_fields(const char *p, size_t n)
{
	int f = 0;
	size_t i = 0;
	while (i < n) {
		if (p[i] == ' ') {
			i++;
			continue;
		}
		f++;
		if (p[i] == '"' || p[i] == '[') {
			char close = p[i] == '"' ? '"' : ']';
			const char *e = memchr(p + i + 1, close, n - i - 1);
			if (!e)
				return -1;
			i = (size_t)(e - p) + 1;
		} else {
			while (i < n && p[i] != ' ') {
				if (p[i] == '"' || p[i] == '[' || p[i] == ']')
					return -1;
				i++;
			}
		}
	}
	return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	arena_t *a = arena_new(4096);
	s3log_cfg_t c, back;
	const char *why;
	buf_t x = BUF_INIT, line = BUF_INIT;

	enum s3log_verdict v = s3log_cfg_parse(a, (const char *)data, size, &c, &why);
	if (v != S3LOG_OK) {
		if (c.enabled)
			abort();
	} else if (c.enabled) {
		if (!c.target.len)
			abort();
		c.mtime_s = 1234;
		s3log_cfg_store(&c, &x);
		for (size_t i = 0; i < x.len; i++)
			if (x.ptr[i] < 0x20 || x.ptr[i] > 0x7e)
				abort();
		if (s3log_cfg_load(a, x.ptr, x.len, &back) != AIS_OK || !s3log_cfg_same(&c, &back) ||
		    back.mtime_s != 1234)
			abort();
	}
	sv_t in = {(const char *)data, size};
	s3log_rec_t r = {.owner = "o",
	                 .bucket = SV("b"),
	                 .time_ns = 1,
	                 .key = in,
	                 .method = SV("GET"),
	                 .target = in,
	                 .status = 200,
	                 .object_size = -1,
	                 .total_ms = 1,
	                 .turnaround_ms = 1,
	                 .user_agent = in,
	                 .referer = in,
	                 .etag = in,
	                 .version_id = in,
	                 .host = in};
	for (int type = S3LOG_STANDARD; type <= S3LOG_JOURNAL; type++) {
		buf_reset(&line);
		s3log_rec_format(&r, (s3log_type_t)type, &line);
		if (!line.len || line.ptr[line.len - 1] != '\n' || memchr(line.ptr, '\n', line.len - 1))
			abort();
		if (count_fields(line.ptr, line.len - 1) != (type == S3LOG_STANDARD ? 26 : 8))
			abort();
	}
	buf_free(&line);
	buf_free(&x);
	arena_destroy(a);
	return 0;
}
