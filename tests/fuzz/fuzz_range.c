/*
 * fuzz_range.c - libFuzzer driver for http_range_parse.
 *
 * Input: 8 bytes of body size (little-endian; byte 0 < 128 takes a small
 * size so ranges are often satisfiable), then the header value. Checks the
 * contract (a satisfiable range lies inside the body, outputs untouched
 * otherwise) and compares plain "bytes=A-B" forms with a reference.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/http.h"
#include "aisd/status.h"
#include "aisd/banned.h"

#define UNSET 0x5a5a5a5a5a5a5a5aULL

/* Reference for [ \t]*bytes=[ \t]*DIGITS?[ \t]*-[ \t]*DIGITS?[ \t]* only;
 * returns -2 when the input is not in that form. */
static int reference(const char *s, size_t n, uint64_t size, uint64_t *start, uint64_t *len)
{
	size_t i = 0;
	uint64_t v[2] = {0, 0};
	int nd[2] = {0, 0};
	bool ovf[2] = {false, false};
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (n - i < 6 || strncasecmp(s + i, "bytes=", 6))
		return -2;
	i += 6;
	for (int k = 0; k < 2; k++) {
		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		while (i < n && s[i] >= '0' && s[i] <= '9') {
			unsigned d = (unsigned)(s[i] - '0');
			if (v[k] > (UINT64_MAX - d) / 10)
				ovf[k] = true;
			v[k] = v[k] * 10 + d;
			nd[k]++;
			i++;
		}
		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (k == 0) {
			if (i >= n || s[i] != '-')
				return -2;
			i++;
		}
	}
	if (i != n)
		return -2;
	if (ovf[0] || ovf[1] || nd[0] > 20 || nd[1] > 20)
		return AIS_DONE;
	if (nd[0] == 0 && nd[1] == 0)
		return AIS_DONE;
	if (nd[0] == 0) {
		if (v[1] == 0 || size == 0)
			return AIS_ERR;
		*len = v[1] < size ? v[1] : size;
		*start = size - *len;
		return AIS_OK;
	}
	uint64_t last = nd[1] ? v[1] : UINT64_MAX;
	if (last < v[0])
		return AIS_DONE;
	if (v[0] >= size)
		return AIS_ERR;
	if (last >= size)
		last = size - 1;
	*start = v[0];
	*len = last - v[0] + 1;
	return AIS_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t body = 0;
	if (size < 8)
		return 0;
	for (int i = 7; i >= 0; i--)
		body = body << 8 | data[i];
	if (data[0] < 128)
		body = data[1] % 4 == 0 ? 0 : body % 1000;
	/* a copy without a terminator: the parser must stay inside len */
	size_t n = size - 8;
	char *h = malloc(n ? n : 1);
	memcpy(h, data + 8, n);

	uint64_t start = UNSET, len = UNSET;
	int r = http_range_parse((sv_t){h, n}, body, &start, &len);
	if (r == AIS_OK) {
		if (len == 0 || start >= body || len > body - start)
			abort();
	} else if (r == AIS_DONE || r == AIS_ERR) {
		if (start != UNSET || len != UNSET)
			abort();
	} else {
		abort();
	}
	uint64_t rs = UNSET, rl = UNSET;
	int want = reference(h, n, body, &rs, &rl);
	if (want != -2 && (want != r || (r == AIS_OK && (rs != start || rl != len))))
		abort();
	/* NULL view: ignored */
	if (http_range_parse((sv_t){NULL, 0}, body, &start, &len) != AIS_DONE)
		abort();
	free(h);
	return 0;
}
