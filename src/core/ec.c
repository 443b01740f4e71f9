/*
 * ec.c - erasure coding (ec.h): stripe layout, slice metadata text, and
 * Reed-Solomon over ISA-L. Pure: no I/O, no locks; a codec is read-only
 * after ec_codec_new, so threads share one.
 *
 * Decoding picks the first D slices present, inverts the matching rows of
 * the Cauchy encode matrix, and rebuilds every missing cell (data rows
 * from the inverse, parity rows as the encode row times the inverse) in one
 * ec_encode_data pass.
 */
#include <errno.h>
#include <isa-l/erasure_code.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/ec.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

static bool dp_ok(unsigned d, unsigned p)
{
	return d >= 1 && d <= EC_SLICES_MAX && p >= 1 && p <= EC_SLICES_MAX;
}

/* --- layout ------------------------------------------------------------------- */

int ec_layout(uint64_t size, unsigned d, unsigned p, uint32_t cell, ec_layout_t *out)
{
	if (!dp_ok(d, p) || !cell || cell % EC_ALIGN) {
		errno = EINVAL;
		return AIS_ERR;
	}
	memset(out, 0, sizeof(*out));
	out->d = d;
	out->p = p;
	out->size = size;
	out->cell = cell;
	if (!size)
		return AIS_OK;
	uint64_t full = (uint64_t)d * cell;
	out->stripes = (size + full - 1) / full;
	uint64_t rest = size - (out->stripes - 1) * full;
	uint64_t c = (rest + d - 1) / d;
	out->last = (uint32_t)((c + EC_ALIGN - 1) / EC_ALIGN * EC_ALIGN);
	out->slice_size = (out->stripes - 1) * cell + out->last;
	return AIS_OK;
}

uint32_t ec_stripe_cell(const ec_layout_t *l, uint64_t s) { return s + 1 == l->stripes ? l->last : l->cell; }

uint64_t ec_stripe_bytes(const ec_layout_t *l, uint64_t s)
{
	uint64_t start = ec_stripe_start(l, s), full = (uint64_t)l->d * l->cell;
	return l->size - start < full ? l->size - start : full;
}

/* --- metadata ----------------------------------------------------------------- */

void ec_meta_format(const ec_meta_t *m, buf_t *out)
{
	buf_addf(out, "v1 d=%u p=%u i=%u cell=%u size=%llu ver=%llu ck=%s", m->d, m->p, m->idx, m->cell,
		 (unsigned long long)m->size, (unsigned long long)m->version, m->cksum[0] ? m->cksum : "none");
}

/* The value of "key=" at *s (up to a space or the end); advances *s. */
static bool field(const char **s, const char *end, const char *key, sv_t *val)
{
	size_t kl = strlen(key);
	if ((size_t)(end - *s) < kl + 1 || memcmp(*s, key, kl) || (*s)[kl] != '=')
		return false;
	const char *v = *s + kl + 1, *e = memchr(v, ' ', (size_t)(end - v));
	if (!e)
		e = end;
	*val = (sv_t){v, (size_t)(e - v)};
	*s = e < end ? e + 1 : e;
	return val->len > 0;
}

static bool num(const char **s, const char *end, const char *key, uint64_t max, uint64_t *out)
{
	sv_t v;
	return field(s, end, key, &v) && num_parse_u64(v.ptr, v.len, 0, max, out) == AIS_OK;
}

int ec_meta_parse(const char *s, size_t len, ec_meta_t *out)
{
	const char *end = s + len;
	uint64_t d, p, i, cell, size, ver;
	sv_t ck;
	memset(out, 0, sizeof(*out));
	if (len < 3 || memcmp(s, "v1 ", 3) || s[len - 1] == ' ')
		goto bad;
	s += 3;
	if (!num(&s, end, "d", EC_SLICES_MAX, &d) || !num(&s, end, "p", EC_SLICES_MAX, &p) ||
	    !num(&s, end, "i", 2 * EC_SLICES_MAX, &i) || !num(&s, end, "cell", UINT32_MAX, &cell) ||
	    !num(&s, end, "size", UINT64_MAX, &size) || !num(&s, end, "ver", UINT64_MAX, &ver) ||
	    !field(&s, end, "ck", &ck) || s != end)
		goto bad;
	if (!dp_ok((unsigned)d, (unsigned)p) || i >= d + p || !cell || cell % EC_ALIGN || ck.len >= EC_CKSUM_MAX ||
	    memchr(ck.ptr, ' ', ck.len))
		goto bad;
	out->d = (unsigned)d;
	out->p = (unsigned)p;
	out->idx = (unsigned)i;
	out->cell = (uint32_t)cell;
	out->size = size;
	out->version = ver;
	memcpy(out->cksum, ck.ptr, ck.len);
	return AIS_OK;
bad:
	memset(out, 0, sizeof(*out));
	errno = EINVAL;
	return AIS_ERR;
}

/* --- codec -------------------------------------------------------------------- */

struct ec_codec {
	unsigned d, p;
	unsigned char *a;    /* (d+p) x d encode matrix; the top d rows are the identity */
	unsigned char *tbls; /* ISA-L tables of the p parity rows */
};

ec_codec_t *ec_codec_new(unsigned d, unsigned p)
{
	if (!dp_ok(d, p)) {
		errno = EINVAL;
		return NULL;
	}
	ec_codec_t *c = xcalloc(1, sizeof(*c));
	c->d = d;
	c->p = p;
	c->a = xmalloc((size_t)(d + p) * d);
	c->tbls = xmalloc((size_t)32 * d * p);
	gf_gen_cauchy1_matrix(c->a, (int)(d + p), (int)d);
	ec_init_tables((int)d, (int)p, c->a + (size_t)d * d, c->tbls);
	return c;
}

void ec_codec_free(ec_codec_t *c)
{
	if (!c)
		return;
	free(c->a);
	free(c->tbls);
	free(c);
}

void ec_encode(const ec_codec_t *c, size_t len, unsigned char *const *data, unsigned char *const *parity)
{
	ec_encode_data((int)len, (int)c->d, (int)c->p, c->tbls, (unsigned char **)data, (unsigned char **)parity);
}

void ec_encode_stripe(const ec_codec_t *c, const ec_layout_t *l, uint64_t s, const unsigned char *bytes,
		      unsigned char *const *cell, unsigned char **out)
{
	uint32_t cs = ec_stripe_cell(l, s);
	uint64_t n = ec_stripe_bytes(l, s);
	for (unsigned j = 0; j < l->d; j++) {
		uint64_t off = (uint64_t)j * cs, want = off < n ? MIN(cs, n - off) : 0;
		if (want == cs) {
			out[j] = (unsigned char *)bytes + off; /* read only: ISA-L's sources */
			continue;
		}
		memcpy(cell[j], bytes + off, want);
		memset(cell[j] + want, 0, cs - want);
		out[j] = cell[j];
	}
	for (unsigned i = 0; i < l->p; i++)
		out[l->d + i] = cell[l->d + i];
	ec_encode(c, cs, out, out + l->d);
}

int ec_decode(const ec_codec_t *c, size_t len, const bool *have, unsigned char *const *frag)
{
	unsigned d = c->d, n = c->d + c->p, k = 0, nerr = 0;
	unsigned src[2 * EC_SLICES_MAX], err[2 * EC_SLICES_MAX];
	for (unsigned i = 0; i < n; i++) {
		if (!have[i])
			err[nerr++] = i;
		else if (k < d)
			src[k++] = i;
	}
	if (!nerr)
		return AIS_OK;
	if (k < d) {
		errno = EIO;
		return AIS_ERR;
	}
	unsigned char *b = xmalloc((size_t)d * d), *inv = xmalloc((size_t)d * d);
	unsigned char *rows = xmalloc((size_t)nerr * d), *tbls = xmalloc((size_t)32 * d * nerr);
	unsigned char *in[EC_SLICES_MAX], *out[2 * EC_SLICES_MAX];
	for (unsigned r = 0; r < d; r++)
		memcpy(b + (size_t)r * d, c->a + (size_t)src[r] * d, d);
	int rc = gf_invert_matrix(b, inv, (int)d); /* rule 3: never fails for a Cauchy matrix */
	for (unsigned e = 0; e < nerr && rc == 0; e++) {
		unsigned char *row = rows + (size_t)e * d;
		if (err[e] < d) {
			memcpy(row, inv + (size_t)err[e] * d, d);
		} else {
			const unsigned char *ar = c->a + (size_t)err[e] * d;
			for (unsigned j = 0; j < d; j++) {
				unsigned char s = 0;
				for (unsigned i = 0; i < d; i++)
					s ^= gf_mul(ar[i], inv[(size_t)i * d + j]);
				row[j] = s;
			}
		}
		out[e] = frag[err[e]];
	}
	if (rc == 0) {
		for (unsigned r = 0; r < d; r++)
			in[r] = frag[src[r]];
		ec_init_tables((int)d, (int)nerr, rows, tbls);
		ec_encode_data((int)len, (int)d, (int)nerr, tbls, in, out);
	}
	free(b);
	free(inv);
	free(rows);
	free(tbls);
	if (rc != 0) {
		errno = EIO;
		return AIS_ERR;
	}
	return AIS_OK;
}
