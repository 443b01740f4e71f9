/*
 * fuzz_s3owncfg.c - libFuzzer driver for the S3 ownership controls parser
 * (s3_owncfg_parse over expat) and its written form (s3_owncfg_xml).
 *
 * The input is the body. Checks the contracts: a document that parses has
 * one of the three ObjectOwnership values, whose written form is one line
 * of printable ASCII that parses back to the same; a refusal leaves NONE.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/status.h"
#include "../../src/s3/s3api.h"
#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	s3acl_own_t own, back;
	const char *why;
	buf_t x = BUF_INIT;

	if (s3_owncfg_parse((const char *)data, size, &own, &why) != AIS_OK) {
		if (own != S3ACL_OWN_NONE)
			abort();
		return 0;
	}
	if (own < S3ACL_OWN_OBJECT_WRITER || own > S3ACL_OWN_OWNER_ENFORCED)
		abort();
	s3_owncfg_xml(own, &x);
	for (size_t i = 0; i < x.len; i++)
		if (x.ptr[i] < 0x20 || x.ptr[i] > 0x7e)
			abort();
	if (s3_owncfg_parse(x.ptr, x.len, &back, &why) != AIS_OK || back != own)
		abort();
	buf_free(&x);
	return 0;
}
