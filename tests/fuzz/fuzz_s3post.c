/*
 * fuzz_s3post.c - libFuzzer driver for the browser POST form parser and
 * the POST policy (s3post.h).
 *
 * Input: a split byte, then the body of a form whose boundary is "XyZ".
 * The body is parsed twice: whole, and in pieces of a fuzzed size (the
 * file's start fed again from where S3_FORM_FILE stopped, as the handler
 * does). Checks: both runs agree (result, fields, filename, file bytes),
 * the file never exceeds the input, the fields kept stay within
 * S3_FORM_HEAD_MAX, and a policy field, when the form has one, is
 * checked without crashing (its answer an S3 code with a 4xx status).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/s3post.h"
#include "aisd/status.h"
#include "aisd/banned.h"

struct run {
	int rc;        /* S3_FORM_ERR, or the finish's AIS_OK / AIS_ERR */
	buf_t file;
	size_t nfields, fbytes;
	char fname[64];
};

static int sink(void *arg, const char *p, size_t n)
{
	buf_add(&((struct run *)arg)->file, p, n);
	return AIS_OK;
}

static void run(const char *p, size_t n, size_t step, struct run *o, bool policy)
{
	arena_t *a = arena_new(4096);
	s3_form_t *f = arena_zalloc(a, sizeof(*f));
	memset(o, 0, sizeof(*o));
	if (s3_form_init(f, a, SV("multipart/form-data; boundary=XyZ")) != AIS_OK)
		abort();
	o->rc = AIS_OK;
	for (size_t off = 0; off < n && o->rc != S3_FORM_ERR;) {
		size_t k = n - off < step ? n - off : step, used;
		int rc = s3_form_feed(f, p + off, k, &used, sink, o);
		if (used > k)
			abort();
		if (rc == S3_FORM_ERR)
			o->rc = S3_FORM_ERR;
		off += used;
	}
	if (o->rc != S3_FORM_ERR)
		o->rc = s3_form_finish(f);
	o->nfields = f->nfields;
	for (size_t i = 0; i < f->nfields; i++)
		o->fbytes += f->fields[i].len;
	if (o->fbytes > S3_FORM_HEAD_MAX || o->file.len > n || o->file.len != f->file_len)
		abort();
	if (f->filename)
		snprintf(o->fname, sizeof(o->fname), "%s", f->filename);
	if (policy && s3_form_get(f, "policy", NULL)) {
		uint64_t lo, hi;
		s3_autherr_t e;
		memset(&e, 0, sizeof(e));
		if (s3_post_policy_check(a, f, SV("bck"), SV("key"), 1700000000, &lo, &hi, &e) != AIS_OK &&
		    (!e.code || e.status < 400 || e.status > 499))
			abort();
	}
	arena_destroy(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = (size_t)data[0] % 64 + 1;
	const char *p = (const char *)data + 1;
	size_t n = size - 1;
	struct run a, b;
	run(p, n, n ? n : 1, &a, true);
	run(p, n, step, &b, false);
	if (a.rc != b.rc || a.nfields != b.nfields || a.fbytes != b.fbytes || strcmp(a.fname, b.fname) ||
	    a.file.len != b.file.len || (a.file.len && memcmp(a.file.ptr, b.file.ptr, a.file.len)))
		abort();
	buf_free(&a.file);
	buf_free(&b.file);
	return 0;
}
