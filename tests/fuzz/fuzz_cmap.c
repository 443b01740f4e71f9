/*
 * fuzz_cmap.c - libFuzzer driver for cmap_decode, bmd_decode and
 * cmap_ballot_decode.
 *
 * The first byte picks the decoder (bit 1 set: election ballot; else even:
 * cluster map, odd: bucket metadata); the rest is the JSON, passed without a terminator so the
 * decoder must stay inside len. Checks: the result is AIS_OK with a map, or
 * AIS_ERR with no map and a message; a decoded map keeps its invariants
 * (version >= 1, primary an active gateway, sorted unique ids, valid URLs;
 * sorted valid bucket names, props in range) and re-encodes to JSON that
 * decodes to an equal map with the same bytes; decoding is deterministic.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/bmd.h"
#include "aisd/cmap.h"
#include "aisd/hrw.h"
#include "aisd/status.h"
#include "aisd/banned.h"

static void check_cmap(const cmap_t *m)
{
	const char *p = cmap_primary(m);
	const cmap_node_t *pn = cmap_get(m, p, strlen(p));
	if (cmap_version(m) < 1 || !pn || pn->role != CMAP_GATEWAY || pn->state != CMAP_ACTIVE)
		abort();
	for (size_t i = 0; i < cmap_size(m); i++) {
		const cmap_node_t *n = cmap_node(m, i);
		if (!cmap_id_valid(n->id, strlen(n->id)) || !cmap_url_valid(n->pub_url, strlen(n->pub_url)) ||
		    !cmap_url_valid(n->intra_url, strlen(n->intra_url)) ||
		    n->digest != hrw_digest(n->id, strlen(n->id)))
			abort();
		if (i && strcmp(cmap_node(m, i - 1)->id, n->id) >= 0)
			abort();
	}
	const cmap_node_t *o = cmap_owner(m, "b/o", 3);
	if (o && (o->role != CMAP_TARGET || o->state != CMAP_ACTIVE))
		abort();
	if (!o && cmap_count(m, CMAP_TARGET, CMAP_ACTIVE))
		abort();
}

static void fuzz_cmap(const char *text, size_t size)
{
	buf_t err = BUF_INIT, err2 = BUF_INIT;
	cmap_t *m = NULL, *m2 = NULL;
	int rc = cmap_decode(text, size, &m, &err);
	if (rc == AIS_OK) {
		if (!m || err.len)
			abort();
		check_cmap(m);
		buf_t js = BUF_INIT, js2 = BUF_INIT;
		cmap_encode(m, &js);
		if (cmap_decode(js.ptr, js.len, &m2, NULL) != AIS_OK || !cmap_equal(m, m2) ||
		    cmap_accept(m, m2, NULL) != AIS_DONE)
			abort();
		cmap_encode(m2, &js2);
		if (js.len != js2.len || memcmp(js.ptr, js2.ptr, js.len))
			abort();
		buf_free(&js);
		buf_free(&js2);
		cmap_free(m2);
		m2 = NULL;
	} else if (rc != AIS_ERR || m || !err.len) {
		abort();
	}
	int rc2 = cmap_decode(text, size, &m2, &err2);
	if (rc2 != rc || err.len != err2.len || (err.len && memcmp(err.ptr, err2.ptr, err.len)))
		abort();
	cmap_free(m);
	cmap_free(m2);
	buf_free(&err);
	buf_free(&err2);
}

static void fuzz_bmd(const char *text, size_t size)
{
	buf_t err = BUF_INIT;
	bmd_t *b = NULL, *b2 = NULL;
	int rc = bmd_decode(text, size, &b, &err);
	if (rc == AIS_OK) {
		if (!b || err.len || bmd_version(b) < 1)
			abort();
		for (size_t i = 0; i < bmd_size(b); i++) {
			const bmd_bucket_t *k = bmd_bucket(b, i);
			if (!name_bucket_valid(k->name, strlen(k->name)) || bmd_props_check(&k->props, NULL) != AIS_OK)
				abort();
			if (i && strcmp(bmd_bucket(b, i - 1)->name, k->name) >= 0)
				abort();
		}
		buf_t js = BUF_INIT;
		bmd_encode(b, &js);
		if (bmd_decode(js.ptr, js.len, &b2, NULL) != AIS_OK || !bmd_equal(b, b2) ||
		    bmd_accept(b, b2, NULL) != AIS_DONE)
			abort();
		buf_free(&js);
	} else if (rc != AIS_ERR || b || !err.len) {
		abort();
	}
	bmd_free(b);
	bmd_free(b2);
	buf_free(&err);
}

/* A ballot decodes to valid ids and terms >= 1, and re-encodes to bytes
 * that decode to the same ballot. */
static void fuzz_ballot(const char *text, size_t size)
{
	cmap_ballot_t b, b2;
	buf_t err = BUF_INIT, js = BUF_INIT;
	int rc = cmap_ballot_decode(text, size, &b, &err);
	if (rc == AIS_OK) {
		if (err.len || b.term < 1 || b.cmap_term < 1 || b.cmap_version < 1 ||
		    !cmap_id_valid(b.uuid, strlen(b.uuid)) || !cmap_id_valid(b.candidate, strlen(b.candidate)) ||
		    !cmap_id_valid(b.primary, strlen(b.primary)))
			abort();
		cmap_ballot_encode(&b, &js);
		if (cmap_ballot_decode(js.ptr, js.len, &b2, NULL) != AIS_OK || memcmp(&b, &b2, sizeof(b)))
			abort();
	} else if (rc != AIS_ERR || !err.len) {
		abort();
	}
	buf_free(&err);
	buf_free(&js);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	char *text = malloc(size);
	memcpy(text, data + 1, size - 1);
	if (data[0] & 2)
		fuzz_ballot(text, size - 1);
	else if (data[0] & 1)
		fuzz_bmd(text, size - 1);
	else
		fuzz_cmap(text, size - 1);
	free(text);
	return 0;
}
