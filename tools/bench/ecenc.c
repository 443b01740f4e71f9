/*
 * ecenc.c - erasure-coding encode throughput on one core: aisd's encode
 * loop (ec_encode_stripe over the object's bytes, as a PUT runs it over
 * the mapping of its sealed file) against ISA-L's raw ec_encode_data over
 * the same stripes of the same buffer (data pointers straight into it,
 * tables built once).
 * Built and run by tools/bench/ec.sh.
 *
 * usage: ecenc D P MIB ROUNDS
 * Prints one JSON line: {"d","p","mib","aisd_mibps","raw_mibps"}, each rate
 * the median of ROUNDS runs over MIB MiB of object bytes. Exit 1 on bad
 * arguments or when the two paths' parity differs (a wrong encode is not
 * a throughput).
 */
#include <isa-l/erasure_code.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aisd/ec.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* aisd's loop (ec.c's encode of a PUT over its mapped file): ec_encode_stripe per stripe. */
static void run_aisd(const unsigned char *obj, const ec_layout_t *l, ec_codec_t *c, unsigned char **cell,
		     unsigned char *par_out)
{
	unsigned char *out[2 * EC_SLICES_MAX];
	for (uint64_t st = 0; st < l->stripes; st++) {
		ec_encode_stripe(c, l, st, obj + ec_stripe_start(l, st), cell, out);
		if (st == 0)
			memcpy(par_out, out[l->d], ec_stripe_cell(l, st));
	}
}

/* ISA-L alone: the data cells where they lie (the object is whole stripes). */
static void run_raw(const unsigned char *obj, const ec_layout_t *l, unsigned char *tbls, unsigned char **par,
		    unsigned char *par_out)
{
	unsigned char *data[EC_SLICES_MAX];
	for (uint64_t st = 0; st < l->stripes; st++) {
		for (unsigned j = 0; j < l->d; j++)
			data[j] = (unsigned char *)obj + ec_stripe_start(l, st) + (uint64_t)j * l->cell;
		ec_encode_data((int)l->cell, (int)l->d, (int)l->p, tbls, data, par);
		if (st == 0)
			memcpy(par_out, par[0], l->cell);
	}
}

int main(int argc, char **argv)
{
	uint64_t d, p, mib, rounds;
	if (argc != 5 || num_parse_u64(argv[1], strlen(argv[1]), 1, EC_SLICES_MAX, &d) != AIS_OK ||
	    num_parse_u64(argv[2], strlen(argv[2]), 1, EC_SLICES_MAX, &p) != AIS_OK ||
	    num_parse_u64(argv[3], strlen(argv[3]), 1, 4096, &mib) != AIS_OK ||
	    num_parse_u64(argv[4], strlen(argv[4]), 1, 99, &rounds) != AIS_OK) {
		fprintf(stderr, "usage: ecenc D P MIB ROUNDS (D, P 1..%d; MIB 1..4096; ROUNDS 1..99)\n", EC_SLICES_MAX);
		return 1;
	}
	uint64_t stripe = d * EC_CELL, size = (mib << 20) / stripe * stripe; /* whole stripes */
	if (!size)
		size = stripe;
	unsigned char *obj = xmalloc(size), *cell[2 * EC_SLICES_MAX], *par[EC_SLICES_MAX];
	unsigned char a[EC_CELL], b[EC_CELL];
	for (uint64_t i = 0; i < size; i++)
		obj[i] = (unsigned char)(i * 2654435761u >> 13);
	ec_layout_t l;
	ec_layout(size, (unsigned)d, (unsigned)p, EC_CELL, &l);
	ec_codec_t *c = ec_codec_new((unsigned)d, (unsigned)p);
	unsigned char *mat = xmalloc((d + p) * d), *tbls = xmalloc(32 * d * p);
	gf_gen_cauchy1_matrix(mat, (int)(d + p), (int)d);
	ec_init_tables((int)d, (int)p, mat + d * d, tbls);
	for (unsigned i = 0; i < d + p; i++)
		cell[i] = xmalloc(EC_CELL);
	for (unsigned i = 0; i < p; i++)
		par[i] = xmalloc(EC_CELL);

	double *ra = xcalloc(rounds, sizeof(double)), *rr = xcalloc(rounds, sizeof(double));
	double mb = (double)size / (1 << 20);
	for (uint64_t r = 0; r < rounds; r++) { /* interleaved: the same load for both */
		double t0 = now_s();
		run_aisd(obj, &l, c, cell, a);
		double t1 = now_s();
		run_raw(obj, &l, tbls, par, b);
		double t2 = now_s();
		ra[r] = mb / (t1 - t0);
		rr[r] = mb / (t2 - t1);
		if (memcmp(a, b, EC_CELL)) {
			fprintf(stderr, "ecenc: the parity of aisd's encode and ISA-L's differ\n");
			return 1;
		}
	}
	qsort(ra, rounds, sizeof(double), cmp_d);
	qsort(rr, rounds, sizeof(double), cmp_d);
	printf("{\"d\":%llu,\"p\":%llu,\"mib\":%.0f,\"aisd_mibps\":%.0f,\"raw_mibps\":%.0f}\n", (unsigned long long)d,
	       (unsigned long long)p, mb, ra[rounds / 2], rr[rounds / 2]);
	ec_codec_free(c);
	for (unsigned i = 0; i < d + p; i++)
		free(cell[i]);
	for (unsigned i = 0; i < p; i++)
		free(par[i]);
	free(mat), free(tbls), free(obj), free(ra), free(rr);
	return 0;
}
