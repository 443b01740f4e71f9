/*
 * fuzz_conf.c - libFuzzer driver for conf_parse (and conf_validate on what
 * it accepts).
 *
 * Checks: the result is AIS_OK or AIS_ERR with a message; every string
 * field stays NUL-terminated inside its array; the mountpath count stays in
 * range; parsing is deterministic.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/conf.h"
#include "aisd/status.h"
#include "aisd/banned.h"

static void check_str(const char *s, size_t cap)
{
	if (strnlen(s, cap) >= cap)
		abort();
}

static void check(const conf_t *c)
{
	check_str(c->role, sizeof(c->role));
	check_str(c->node_id, sizeof(c->node_id));
	check_str(c->host, sizeof(c->host));
	check_str(c->checksum, sizeof(c->checksum));
	check_str(c->log_level, sizeof(c->log_level));
	check_str(c->log_file, sizeof(c->log_file));
	check_str(c->log_access, sizeof(c->log_access));
	check_str(c->log_access_file, sizeof(c->log_access_file));
	if (c->n_mountpaths < 0 || c->n_mountpaths > CONF_MAX_MOUNTPATHS)
		abort();
	for (int i = 0; i < c->n_mountpaths; i++)
		check_str(c->mountpaths[i], sizeof(c->mountpaths[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static conf_t a, b;
	buf_t ea = BUF_INIT, eb = BUF_INIT;
	/* a copy without a terminator: the parser must stay inside len */
	char *text = malloc(size ? size : 1);
	memcpy(text, data, size);

	conf_defaults(&a);
	int ra = conf_parse(&a, text, size, &ea);
	if (ra != AIS_OK && ra != AIS_ERR)
		abort();
	if (ra == AIS_ERR && (!ea.ptr || ea.len == 0 || strncmp(ea.ptr, "line ", 5)))
		abort();
	if (ra == AIS_OK && ea.len)
		abort();
	check(&a);
	if (ra == AIS_OK) {
		buf_t ev = BUF_INIT;
		int rv = conf_validate(&a, &ev);
		if (rv != AIS_OK && (rv != AIS_ERR || !ev.len))
			abort();
		buf_free(&ev);
	}
	conf_defaults(&b);
	int rb = conf_parse(&b, text, size, &eb);
	if (ra != rb || (ea.len != eb.len) || (ea.len && memcmp(ea.ptr, eb.ptr, ea.len)))
		abort();
	buf_free(&ea);
	buf_free(&eb);
	free(text);
	return 0;
}
