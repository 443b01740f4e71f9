/*
 * fuzz_s3cors.c - libFuzzer driver for the S3 CORS configuration parser
 * (s3_cors_parse over expat), its canonical form (s3_cors_xml) and the
 * matching (s3_cors_match).
 *
 * The input is the body. Checks the contracts: a configuration that
 * parses has 1..S3_CORS_RULES_MAX rules, each with an origin and a method;
 * its canonical form is one line of printable ASCII that parses back to
 * as many rules with the same ids; a match is one of the rules; a refusal
 * leaves no rule.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/arena.h"
#include "aisd/status.h"
#include "../../src/s3/s3api.h"
#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	arena_t *a = arena_new(4096);
	s3_cors_t c, back;
	const char *why;
	buf_t x = BUF_INIT;

	if (s3_cors_parse(a, (const char *)data, size, &c, &why) != AIS_OK) {
		if (c.n)
			abort();
		goto out;
	}
	if (!c.n || c.n > S3_CORS_RULES_MAX)
		abort();
	for (size_t i = 0; i < c.n; i++)
		if (!c.rules[i].origins.n || !c.rules[i].methods.n)
			abort();
	s3_cors_xml(&c, &x);
	for (size_t i = 0; i < x.len; i++)
		if (x.ptr[i] < 0x20 || x.ptr[i] > 0x7e)
			abort();
	if (s3_cors_parse(a, x.ptr, x.len, &back, &why) != AIS_OK || back.n != c.n)
		abort();
	for (size_t i = 0; i < c.n; i++)
		if (!sv_eq(back.rules[i].id, c.rules[i].id) || back.rules[i].max_age != c.rules[i].max_age)
			abort();
	/* each rule's first origin and method, as a request, match a rule at or before it */
	for (size_t i = 0; i < c.n; i++) {
		const s3_cors_rule_t *u = &c.rules[i];
		if (memchr(u->origins.v[0].ptr, '*', u->origins.v[0].len))
			continue;
		const s3_cors_rule_t *m = s3_cors_match(&c, u->origins.v[0], u->methods.v[0], (sv_t){"", 0});
		if (!m || m < c.rules || m > u)
			abort();
	}
out:
	buf_free(&x);
	arena_destroy(a);
	return 0;
}
