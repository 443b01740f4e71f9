/*
 * fuzz_aisctl_config.c - libFuzzer driver for cli_config_parse, the parser
 * of aisctl's config file (src/cli/cfgfile.c).
 *
 * Checks: the result is AIS_OK with no message, or AIS_ERR with a message
 * that starts with a line number; a value set is non-empty, has no blank at
 * either end, no newline and no NUL inside its length; parsing is
 * deterministic.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/status.h"
#include "../../src/cli/cli.h"
#include "aisd/banned.h"

/* config.c reports through cli_err only when it reads a file; not here. */
void cli_err(const char *fmt, ...)
{
	(void)fmt;
	abort();
}

static void check_value(const char *v)
{
	if (!v)
		return;
	size_t n = strlen(v);
	if (n == 0 || v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t' ||
	    strchr(v, '\n'))
		abort();
}

static int parse(const uint8_t *data, size_t size, struct cli_config *cfg, buf_t *err)
{
	*cfg = (struct cli_config){0};
	int rc = cli_config_parse((const char *)data, size, cfg, err);
	if (rc != AIS_OK && rc != AIS_ERR)
		abort();
	if ((rc == AIS_OK) != (err->len == 0))
		abort();
	if (rc == AIS_ERR && (err->ptr[0] < '1' || err->ptr[0] > '9'))
		abort();
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cli_config a, b;
	buf_t ea = BUF_INIT, eb = BUF_INIT;
	int ra = parse(data, size, &a, &ea);
	check_value(a.endpoint);
	check_value(a.timeout);
	int rb = parse(data, size, &b, &eb);
	if (ra != rb || (ea.len && strcmp(ea.ptr, eb.ptr)) ||
	    (a.endpoint ? !b.endpoint || strcmp(a.endpoint, b.endpoint) : b.endpoint != NULL) ||
	    (a.timeout ? !b.timeout || strcmp(a.timeout, b.timeout) : b.timeout != NULL))
		abort();
	cli_config_free(&a);
	cli_config_free(&b);
	buf_free(&ea);
	buf_free(&eb);
	return 0;
}
