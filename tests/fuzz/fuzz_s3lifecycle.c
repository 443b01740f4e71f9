/*
 * fuzz_s3lifecycle.c - libFuzzer driver for the S3 lifecycle configuration
 * parser (s3_lc_parse over expat, with s3lc_check), its canonical JSON
 * (s3lc_json, s3lc_parse_json), its XML answer (s3_lc_xml) and the plan
 * (s3lc_plan).
 *
 * The input is the body. Checks the contracts: a configuration that
 * parses has 1..S3LC_RULES_MAX rules with unique ids; its JSON parses back
 * and encodes the same; the XML answer parses back to the same JSON; a
 * plan over a few versions marks only versions it was given; a refusal
 * names an S3 error code.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/arena.h"
#include "aisd/s3lc.h"
#include "aisd/status.h"
#include "../../src/s3/s3api.h"
#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	arena_t *a = arena_new(4096);
	s3lc_t c, back;
	const char *code, *why;
	buf_t j = BUF_INIT, j2 = BUF_INIT, x = BUF_INIT;

	if (s3_lc_parse(a, (const char *)data, size, &c, &code, &why) != AIS_OK) {
		if (!code || !*code)
			abort();
		goto out;
	}
	if (!c.n || c.n > S3LC_RULES_MAX)
		abort();
	for (size_t i = 0; i < c.n; i++)
		for (size_t k = 0; k < i; k++)
			if (!strcmp(c.rules[i].id, c.rules[k].id))
				abort();
	s3lc_json(&c, &j);
	if (s3lc_parse_json(a, j.ptr, j.len, &back, NULL) != AIS_OK || back.n != c.n)
		abort();
	s3lc_json(&back, &j2);
	if (strcmp(j.ptr, j2.ptr))
		abort();
	s3_lc_xml(&back, &x);
	if (s3_lc_parse(a, x.ptr, x.len, &back, &code, &why) != AIS_OK)
		abort();
	buf_reset(&j2);
	s3lc_json(&back, &j2);
	if (strcmp(j.ptr, j2.ptr))
		abort();
	s3lc_ver_t v[3] = {{.o = {.key = "k", .klen = 1}, .start_ns = 1}, {.o = {.key = "k", .klen = 1}, .start_ns = 2},
			   {.o = {.key = "k", .klen = 1}, .start_ns = 3, .dm = true}};
	s3lc_plan(&c, NULL, v, 3, INT64_MAX / 2, S3LC_DAY_NS);
	s3lc_plan(&c, &v[0], &v[1], 2, 5, 1000000000);
out:
	buf_free(&j);
	buf_free(&j2);
	buf_free(&x);
	arena_destroy(a);
	return 0;
}
