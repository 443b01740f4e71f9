/*
 * fuzz_s3ssecfg.c - libFuzzer driver for the S3 default encryption
 * configuration parser (s3_ssecfg_parse over expat) and its canonical form
 * (s3_ssecfg_xml).
 *
 * The input is the body. Checks the contracts: a configuration that
 * parses has a mode (S or K) and a key id only with K; its canonical form
 * is one line of printable ASCII that parses back to the same; a refusal
 * leaves no mode.
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
	s3_ssecfg_t c, back;
	const char *why;
	buf_t x = BUF_INIT;

	if (s3_ssecfg_parse((const char *)data, size, &c, &why) != AIS_OK) {
		if (c.mode)
			abort();
		return 0;
	}
	if ((c.mode != 'S' && c.mode != 'K') || (c.mode == 'S' && c.kid[0]))
		abort();
	s3_ssecfg_xml(&c, &x);
	for (size_t i = 0; i < x.len; i++)
		if (x.ptr[i] < 0x20 || x.ptr[i] > 0x7e)
			abort();
	if (s3_ssecfg_parse(x.ptr, x.len, &back, &why) != AIS_OK || memcmp(&c, &back, sizeof(c)))
		abort();
	buf_free(&x);
	return 0;
}
