/*
 * cfgparse.c - the pure parser of a set-config body (see cluster.h):
 * {"action":"set-config","value":{"KEY":"VALUE",...}} with every key one
 * that changes at run time and every value valid for it. It reads bytes
 * from outside, so it has a libFuzzer driver (tests/fuzz/fuzz_cfgset.c).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "aisd/cluster.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

static const char *const cfg_keys[] = {"log.level", "log.access", "net.rate_limit", "net.rate_burst"};

/* Checks one key and value; returns the key's index or -1 with a message. */
static int cfg_check(const char *k, json_t *v, cluster_cfg_change_t *ch, buf_t *err)
{
	size_t i;
	for (i = 0; i < ARRAY_SIZE(cfg_keys); i++)
		if (!strcmp(k, cfg_keys[i]))
			break;
	if (i == ARRAY_SIZE(cfg_keys)) {
		buf_addf(err, "\"%.64s\" cannot be changed at run time (log.level, log.access, net.rate_limit, "
			 "net.rate_burst can)", k);
		return -1;
	}
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		snprintf(ch->value, sizeof(ch->value), "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v) && json_string_length(v) < sizeof(ch->value))
		snprintf(ch->value, sizeof(ch->value), "%s", json_string_value(v));
	else {
		buf_addf(err, "%s wants a string value", k);
		return -1;
	}
	enum log_level lv;
	uint64_t x;
	bool ok = true;
	switch (i) {
	case 0: ok = log_parse_level(ch->value, &lv) == AIS_OK; break;
	case 1: ok = !strcmp(ch->value, "on") || !strcmp(ch->value, "off"); break;
	default: ok = num_parse_u64(ch->value, strlen(ch->value), 0, UINT32_MAX, &x) == AIS_OK; break;
	}
	if (!ok) {
		buf_addf(err, "invalid value for %s: '%s'", k, ch->value);
		return -1;
	}
	ch->key = (int)i;
	return (int)i;
}

int cluster_cfg_parse(const char *body, size_t len, cluster_cfg_change_t *ch, size_t *n, buf_t *err)
{
	json_error_t jerr;
	json_t *doc = json_loadb(body ? body : "", len, 0, &jerr);
	json_t *act = json_object_get(doc, "action"), *val = json_object_get(doc, "value");
	const char *k;
	json_t *v;
	int rc = AIS_ERR;

	*n = 0;
	if (!json_is_object(doc) || !json_is_string(act) || strcmp(json_string_value(act), "set-config") ||
	    !json_is_object(val) || json_object_size(val) == 0) {
		buf_addstr(err, "want {\"action\":\"set-config\",\"value\":{\"KEY\":\"VALUE\",...}}");
		goto out;
	}
	if (json_object_size(val) > CLUSTER_CFG_MAX) {
		buf_addf(err, "at most %d keys at once", CLUSTER_CFG_MAX);
		goto out;
	}
	json_object_foreach(val, k, v) {
		if (cfg_check(k, v, &ch[*n], err) < 0)
			goto out;
		(*n)++;
	}
	rc = AIS_OK;
out:
	json_decref(doc);
	return rc;
}

const char *cluster_cfg_key(int key)
{
	return key >= 0 && (size_t)key < ARRAY_SIZE(cfg_keys) ? cfg_keys[key] : "?";
}
