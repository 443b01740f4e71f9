/*
 * fuzz_cfgset.c - libFuzzer driver for cluster_cfg_parse, the reader of
 * set-config bodies (PUT /v1/daemon, PUT /v1/cluster).
 *
 * Checks: the result is AIS_OK with 1..CLUSTER_CFG_MAX changes, each with a
 * known key and a NUL-terminated value, and no message; or AIS_ERR with a
 * message; parsing is deterministic.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/cluster.h"
#include "aisd/status.h"
#include "aisd/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cluster_cfg_change_t a[CLUSTER_CFG_MAX], b[CLUSTER_CFG_MAX];
	size_t na = 99, nb = 99;
	buf_t ea = BUF_INIT, eb = BUF_INIT;
	char *body = malloc(size ? size : 1); /* no terminator: stay inside size */
	memcpy(body, data, size);

	int ra = cluster_cfg_parse(body, size, a, &na, &ea);
	if (ra == AIS_OK) {
		if (na < 1 || na > CLUSTER_CFG_MAX || ea.len)
			abort();
		for (size_t i = 0; i < na; i++)
			if (a[i].key < 0 || a[i].key > 3 || strnlen(a[i].value, sizeof(a[i].value)) >= sizeof(a[i].value) ||
			    !strcmp(cluster_cfg_key(a[i].key), "?"))
				abort();
	} else if (ra != AIS_ERR || !ea.len) {
		abort();
	}
	int rb = cluster_cfg_parse(body, size, b, &nb, &eb);
	if (ra != rb || ea.len != eb.len || (ea.len && memcmp(ea.ptr, eb.ptr, ea.len)) || (ra == AIS_OK && na != nb))
		abort();
	for (size_t i = 0; ra == AIS_OK && i < na; i++)
		if (a[i].key != b[i].key || strcmp(a[i].value, b[i].value))
			abort();
	buf_free(&ea);
	buf_free(&eb);
	free(body);
	return 0;
}
