/*
 * cfgfile.c - aisctl's config file: defaults for the global options, read
 * before the command runs. The file is $AISCTL_CONFIG when that is set
 * (then it must exist), else $XDG_CONFIG_HOME/aisctl/config, else
 * ~/.config/aisctl/config (either may be absent). Format: one "key = value"
 * per line, blanks around both ignored, '#' starts a comment line. Keys:
 *
 *   endpoint   the cluster endpoint (as --endpoint)
 *   timeout    whole seconds (as --timeout)
 *   token      a bearer token (as --token)
 *   cacert     PEM CA bundle for https endpoints (as --cacert)
 *   cert, key  PEM client certificate and key (as --cert, --key)
 *   insecure   "true": do not verify the cluster's certificate (as --insecure)
 *
 * Precedence: the command line, then the environment (AIS_ENDPOINT,
 * AIS_CACERT, AIS_CERT, AIS_KEY, AIS_INSECURE), then
 * this file, then the built-in default. Guarantees: an unknown key, a line
 * without '=', or a value the option would refuse is an error naming the
 * file and line, never silently ignored. cli_config_parse is the pure
 * parser of the text (tests/fuzz/fuzz_aisctl_config.c); cli_config_load
 * finds and reads the file (at most 64 KiB).
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
#define CONFIG_FILE_MAX (64 * 1024)

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

int cli_config_parse(const char *text, size_t len, struct cli_config *cfg, buf_t *err)
{
	const char *p = text, *end = text + len;
	for (int lineno = 1; p < end; lineno++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		const char *line = p;
		p += n + (nl != NULL);
		if (n > CONFIG_LINE_MAX) {
			buf_addf(err, "%d: line too long", lineno);
			return AIS_ERR;
		}
		if (memchr(line, '\0', n)) {
			buf_addf(err, "%d: NUL byte", lineno);
			return AIS_ERR;
		}
		while (n && line[n - 1] == '\r')
			n--;
		sv_t l = trim(line, n);
		if (l.len == 0 || l.ptr[0] == '#')
			continue;
		const char *eq = memchr(l.ptr, '=', l.len);
		if (!eq) {
			buf_addf(err, "%d: want key = value, got '%.*s'", lineno, (int)MIN(l.len, 80), l.ptr);
			return AIS_ERR;
		}
		sv_t key = trim(l.ptr, (size_t)(eq - l.ptr));
		sv_t val = trim(eq + 1, (size_t)(l.ptr + l.len - eq - 1));
		char **slot = NULL;
		if (sv_eqstr(key, "endpoint"))
			slot = &cfg->endpoint;
		else if (sv_eqstr(key, "timeout"))
			slot = &cfg->timeout;
		else if (sv_eqstr(key, "cacert"))
			slot = &cfg->cacert;
		else if (sv_eqstr(key, "cert"))
			slot = &cfg->cert;
		else if (sv_eqstr(key, "key"))
			slot = &cfg->key;
		else if (sv_eqstr(key, "insecure"))
			slot = &cfg->insecure;
		else if (sv_eqstr(key, "token"))
			slot = &cfg->token;
		if (!slot) {
			buf_addf(err, "%d: unknown key '%.*s' (known: endpoint, timeout, token, cacert, cert, key, insecure)", lineno,
			         (int)MIN(key.len, 80), key.ptr);
			return AIS_ERR;
		}
		if (val.len == 0) {
			buf_addf(err, "%d: empty value for '%.*s'", lineno, (int)key.len, key.ptr);
			return AIS_ERR;
		}
		free(*slot);
		*slot = xstrndup(val.ptr, val.len);
	}
	return AIS_OK;
}

int cli_config_load(struct cli_config *cfg)
{
	buf_t path = BUF_INIT, text = BUF_INIT, err = BUF_INIT;
	bool must_exist;
	int rc = AIS_ERR;

	config_path(&path, &must_exist);
	if (!path.len)
		return AIS_OK;
	FILE *f = fopen(path.ptr, "r");
	if (!f) {
		if (errno == ENOENT && !must_exist)
			rc = AIS_OK;
		else
			cli_err("config file %s: %s", path.ptr, strerror(errno));
		goto out;
	}
	char chunk[4096];
	size_t got;
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0 && text.len <= CONFIG_FILE_MAX)
		buf_add(&text, chunk, got);
	if (ferror(f))
		cli_err("config file %s: read error", path.ptr);
	else if (text.len > CONFIG_FILE_MAX)
		cli_err("config file %s: larger than %d bytes", path.ptr, CONFIG_FILE_MAX);
	else if (cli_config_parse(text.ptr ? text.ptr : "", text.len, cfg, &err) != AIS_OK)
		cli_err("%s:%s", path.ptr, err.ptr);
	else
		rc = AIS_OK;
	fclose(f);
	if (rc == AIS_OK)
		cfg->path = buf_detach(&path, NULL);
out:
	buf_free(&err);
	buf_free(&text);
	buf_free(&path);
	return rc;
}

void cli_config_free(struct cli_config *cfg)
{
	free(cfg->path);
	free(cfg->endpoint);
	free(cfg->timeout);
	free(cfg->token);
	free(cfg->cacert);
	free(cfg->cert);
	free(cfg->key);
	free(cfg->insecure);
	*cfg = (struct cli_config){0};
}
