/*
 * config.c - aisctl's config file: defaults for the global options, read
 * before the command runs. The file is $AISCTL_CONFIG when that is set
 * (then it must exist), else $XDG_CONFIG_HOME/aisctl/config, else
 * ~/.config/aisctl/config (either may be absent). Format: one "key = value"
 * per line, blanks around both ignored, '#' starts a comment line. Keys:
 *
 *   endpoint   the cluster endpoint (as --endpoint)
 *   timeout    whole seconds (as --timeout)
 *
 * Precedence: the command line, then the environment (AIS_ENDPOINT), then
 * this file, then the built-in default. Guarantees: an unknown key, a line
 * without '=', or a value the option would refuse is an error naming the
 * file and line, never silently ignored.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

#define CONFIG_LINE_MAX 4096

/* The path of the config file into path; *must_exist when it was named. */
static void config_path(buf_t *path, bool *must_exist)
{
	const char *env = getenv("AISCTL_CONFIG");
	*must_exist = false;
	if (env && *env) {
		buf_addstr(path, env);
		*must_exist = true;
		return;
	}
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	if (xdg && *xdg)
		buf_addf(path, "%s/aisctl/config", xdg);
	else if (home && *home)
		buf_addf(path, "%s/.config/aisctl/config", home);
}

static sv_t trim(const char *p, size_t n)
{
	return sv_trim((sv_t){p, n});
}

int cli_config_load(struct cli_config *cfg)
{
	buf_t path = BUF_INIT;
	bool must_exist;
	int rc = AIS_ERR;

	config_path(&path, &must_exist);
	if (!path.len)
		return AIS_OK;
	FILE *f = fopen(path.ptr, "r");
	if (!f) {
		if (errno == ENOENT && !must_exist) {
			buf_free(&path);
			return AIS_OK;
		}
		cli_err("config file %s: %s", path.ptr, strerror(errno));
		buf_free(&path);
		return AIS_ERR;
	}
	char line[CONFIG_LINE_MAX];
	for (int lineno = 1; fgets(line, sizeof(line), f); lineno++) {
		size_t n = strlen(line);
		if (n == sizeof(line) - 1 && line[n - 1] != '\n') {
			cli_err("%s:%d: line too long", path.ptr, lineno);
			goto out;
		}
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		sv_t l = trim(line, n);
		if (l.len == 0 || l.ptr[0] == '#')
			continue;
		const char *eq = memchr(l.ptr, '=', l.len);
		if (!eq) {
			cli_err("%s:%d: want key = value, got '%.*s'", path.ptr, lineno, (int)l.len, l.ptr);
			goto out;
		}
		sv_t key = trim(l.ptr, (size_t)(eq - l.ptr));
		sv_t val = trim(eq + 1, (size_t)(l.ptr + l.len - eq - 1));
		char **slot = NULL;
		if (sv_eqstr(key, "endpoint"))
			slot = &cfg->endpoint;
		else if (sv_eqstr(key, "timeout"))
			slot = &cfg->timeout;
		if (!slot) {
			cli_err("%s:%d: unknown key '%.*s' (known: endpoint, timeout)", path.ptr, lineno,
			        (int)key.len, key.ptr);
			goto out;
		}
		if (val.len == 0) {
			cli_err("%s:%d: empty value for '%.*s'", path.ptr, lineno, (int)key.len, key.ptr);
			goto out;
		}
		free(*slot);
		*slot = xstrndup(val.ptr, val.len);
	}
	if (ferror(f)) {
		cli_err("config file %s: read error", path.ptr);
		goto out;
	}
	cfg->path = buf_detach(&path, NULL);
	rc = AIS_OK;
out:
	fclose(f);
	buf_free(&path);
	return rc;
}

void cli_config_free(struct cli_config *cfg)
{
	free(cfg->path);
	free(cfg->endpoint);
	free(cfg->timeout);
	*cfg = (struct cli_config){0};
}
