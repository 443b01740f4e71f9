/*
 * ec.h - erasure coding of objects: the stripe layout, the metadata each
 * slice carries, and Reed-Solomon encode/decode (Intel ISA-L, Cauchy
 * matrix, GF(2^8)). A small library: no daemon header, no I/O.
 *
 * Layout (rules):
 *  1. An object of size bytes with D data and P parity slices is cut into
 *     stripes of D cells. Every stripe but the last has cells of `cell`
 *     bytes; the last has cells of ceil(rest / D) rounded up to EC_ALIGN
 *     bytes, zero-padded. An empty object has no stripe.
 *  2. Data slice j holds cell j of every stripe, in stripe order: the
 *     object's bytes [s*D*cell + j*cell, +cell) of stripe s. Parity slice
 *     D+i holds parity cell i of every stripe. Every slice of an object has
 *     the same length, ec_layout's slice_size.
 *  3. Any D of the D+P slices give back the object (the Cauchy matrix has
 *     every D x D submatrix invertible).
 */
#ifndef AISD_EC_H
#define AISD_EC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aisd/buf.h"

#define EC_SLICES_MAX 32 /* D and P each 1..EC_SLICES_MAX */
#define EC_CELL 65536    /* default cell: bytes of one slice per full stripe */
#define EC_ALIGN 64      /* the last stripe's cells are a multiple of this */
#define EC_CKSUM_MAX 80  /* "type:hex" of the object's checksum */
#define EC_META_MAX 256  /* ec_meta_format's text, NUL included */

typedef struct ec_layout {
	unsigned d, p;
	uint64_t size;       /* object bytes */
	uint32_t cell;       /* cell bytes of a full stripe */
	uint64_t stripes;    /* 0 for an empty object */
	uint32_t last;       /* cell bytes of the last stripe (0: no stripe) */
	uint64_t slice_size; /* bytes of each slice */
} ec_layout_t;

/* Fills *out (rule 1). AIS_ERR (EINVAL) when d or p is out of range or
 * cell is 0 or not a multiple of EC_ALIGN. */
int ec_layout(uint64_t size, unsigned d, unsigned p, uint32_t cell, ec_layout_t *out);
/* Cell bytes of stripe s (< stripes). */
uint32_t ec_stripe_cell(const ec_layout_t *l, uint64_t s);
/* Object bytes in stripe s, and where they start in the object. */
uint64_t ec_stripe_bytes(const ec_layout_t *l, uint64_t s);
static inline uint64_t ec_stripe_start(const ec_layout_t *l, uint64_t s) { return s * l->d * (uint64_t)l->cell; }

/* What a slice says about itself and its object. */
typedef struct ec_meta {
	unsigned d, p, idx;   /* idx 0..d+p-1: < d data, else parity */
	uint32_t cell;
	uint64_t size;        /* of the object */
	uint64_t version;     /* the write's generation (the owner's clock, ns) */
	char cksum[EC_CKSUM_MAX]; /* the object's checksum, "type:hex", or "none" */
} ec_meta_t;

/* "v1 d=D p=P i=I cell=C size=N ver=V ck=TYPE:HEX" into out (appended). */
void ec_meta_format(const ec_meta_t *m, buf_t *out);
/* Strict parse of ec_meta_format's text: every field once, in range, in
 * that order. AIS_OK, or AIS_ERR (EINVAL). */
int ec_meta_parse(const char *s, size_t len, ec_meta_t *out);

/* An encoder/decoder for one (D, P). */
typedef struct ec_codec ec_codec_t;
/* NULL (EINVAL) when d or p is out of range. */
ec_codec_t *ec_codec_new(unsigned d, unsigned p);
void ec_codec_free(ec_codec_t *c);
/* parity[0..p) = the parity cells of data[0..d), each len bytes. */
void ec_encode(const ec_codec_t *c, size_t len, unsigned char *const *data, unsigned char *const *parity);
/* Stripe s of layout l, whose ec_stripe_bytes(l, s) bytes are at bytes:
 * out[0..d) get the data cells (pointers into bytes where a cell is whole,
 * else the cell copied into cell[j] and zero-padded: no copy for a full
 * stripe), out[d..d+p) = cell[d..d+p) the parity, encoded. cell[i] hold
 * l->cell bytes each. */
void ec_encode_stripe(const ec_codec_t *c, const ec_layout_t *l, uint64_t s, const unsigned char *bytes,
		      unsigned char *const *cell, unsigned char **out);
/* frag[0..d+p) are the cells of one stripe, len bytes each; those with
 * have[i] false are rebuilt in place from d of the others. AIS_OK, or
 * AIS_ERR (EIO) when fewer than d are there. */
int ec_decode(const ec_codec_t *c, size_t len, const bool *have, unsigned char *const *frag);

#endif
