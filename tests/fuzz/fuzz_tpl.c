/*
 * fuzz_tpl.c - libFuzzer driver for name templates (names.h) and the
 * extension rename of the copy/transform job (xcopy.h). The input is a
 * template, a newline, a name. Properties: a template that parses
 * yields names it matches (its first, its last), a name it matches has
 * its prefix and suffix, and a rename's result is a valid object name.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/names.h"
#include "aisd/xcopy.h"
#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void yields(const name_tpl_t *t, unsigned long long v)
{
	char out[2200];
	int n = snprintf(out, sizeof(out), "%.*s%0*llu%.*s", (int)t->pre_len, t->pre, t->width, v, (int)t->post_len,
			 t->post);
	if (n > 0 && (size_t)n < sizeof(out) && !name_tpl_match(t, out, (size_t)n))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t tl = nl ? (size_t)(nl - data) : size;
	if (tl > 1024)
		return 0;
	char tpl[1025];
	memcpy(tpl, data, tl);
	tpl[tl] = '\0';
	const char *name = nl ? (const char *)nl + 1 : "";
	size_t nlen = nl ? size - tl - 1 : 0;
	char *nm = malloc(nlen ? nlen : 1); /* no terminator: the matcher must stay inside len */
	memcpy(nm, name, nlen);
	name_tpl_t t;
	if (name_tpl_parse(tpl, &t)) {
		if (t.a > t.b || t.b - t.a > NAME_TPL_SPAN_MAX)
			abort();
		yields(&t, t.a);
		yields(&t, t.b);
		if (name_tpl_match(&t, nm, nlen) &&
		    (nlen < t.pre_len + t.post_len || memcmp(nm, t.pre, t.pre_len) ||
		     memcmp(nm + nlen - t.post_len, t.post, t.post_len)))
			abort();
	}
	xcopy_ext_t e = {.n = 1};
	snprintf(e.from[0], sizeof(e.from[0]), "jpg");
	snprintf(e.to[0], sizeof(e.to[0]), "%.*s", (int)(tl < XCOPY_EXT_LEN ? tl : XCOPY_EXT_LEN), tpl);
	char out[NAME_OBJECT_MAX + 1];
	if (xcopy_rename(&e, nm, nlen, out, sizeof(out)) && !name_object_valid(out, strlen(out)))
		abort();
	free(nm);
	return 0;
}
