/*
 * fuzz_names.c - libFuzzer driver for the name rules: utf8_valid,
 * name_object_valid and name_bucket_valid against independent references
 * (the UTF-8 one is the well-formed byte-sequence table of Unicode 15,
 * Table 3-7).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/names.h"
#include "aisd/banned.h"

static bool in(unsigned char c, unsigned lo, unsigned hi) { return c >= lo && c <= hi; }

static bool ref_utf8(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = s[i];
		size_t need;
		unsigned lo = 0x80, hi = 0xbf; /* range of the second byte */
		if (c <= 0x7f) {
			i++;
			continue;
		} else if (in(c, 0xc2, 0xdf)) {
			need = 1;
		} else if (c == 0xe0) {
			need = 2, lo = 0xa0;
		} else if (in(c, 0xe1, 0xec) || in(c, 0xee, 0xef)) {
			need = 2;
		} else if (c == 0xed) {
			need = 2, hi = 0x9f;
		} else if (c == 0xf0) {
			need = 3, lo = 0x90;
		} else if (in(c, 0xf1, 0xf3)) {
			need = 3;
		} else if (c == 0xf4) {
			need = 3, hi = 0x8f;
		} else {
			return false;
		}
		if (n - i - 1 < need)
			return false;
		if (!in(s[i + 1], lo, hi))
			return false;
		for (size_t k = 2; k <= need; k++)
			if (!in(s[i + k], 0x80, 0xbf))
				return false;
		i += need + 1;
	}
	return true;
}

static bool ref_bucket(const unsigned char *s, size_t n)
{
	if (n < 1 || n > 64 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(in(s[i], 'a', 'z') || in(s[i], 'A', 'Z') || in(s[i], '0', '9') || s[i] == '.' ||
		      s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* Whether a "/"-separated segment of s is "." or "..": written apart from
 * name_has_dot_segment, by the segments' ends. */
static bool ref_dot_segment(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '.' || (i > 0 && s[i - 1] != '/'))
			continue;
		size_t e = i + 1 < n && s[i + 1] == '.' ? i + 2 : i + 1;
		if (e == n || s[e] == '/')
			return true;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy without a terminator: the validators must stay inside len */
	char *s = malloc(size ? size : 1);
	memcpy(s, data, size);
	bool u = ref_utf8(data, size);
	if (utf8_valid(s, size) != u)
		abort();
	bool o = size >= 1 && size <= NAME_OBJECT_MAX && !memchr(data, 0, size) && u && !ref_dot_segment(data, size);
	if (name_object_valid(s, size) != o)
		abort();
	/* a version name: its object's name is a prefix, the tag and 32 hex
	 * digits the rest */
	size_t vk = name_version_of(s, size);
	if (vk && (vk + NAME_VER_TAG_LEN + NAME_VER_ID_LEN != size ||
		   memcmp(s + vk, NAME_VER_TAG, NAME_VER_TAG_LEN)))
		abort();
	if (name_bucket_valid(s, size) != ref_bucket(data, size))
		abort();
	/* every prefix too: truncated sequences */
	for (size_t k = 0; k < size && k < 16; k++)
		if (utf8_valid(s, k) != ref_utf8(data, k))
			abort();
	free(s);
	return 0;
}
