/*
 * lifecycle.c - S3 bucket lifecycle configurations as values (s3lc.h):
 * S3's checks, the canonical JSON the BMD keeps, the filter match and the
 * decision of what expires when.
 *
 * Guarantees: s3lc_parse_json accepts exactly what s3lc_json writes of a
 * configuration that passed s3lc_check (decode(encode(c)) equals c), and
 * for any other bytes returns a clean error; every function takes time
 * linear in its inputs (rules x tags x versions for s3lc_plan).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "aisd/s3lc.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define TAG_KEY_MAX 128
#define TAG_VALUE_MAX 256

void s3lc_rule_init(s3lc_rule_t *u)
{
	memset(u, 0, sizeof(*u));
	u->enabled = true;
	u->f.gt = u->f.lt = u->a.gt = u->a.lt = -1;
	u->exp_days = u->exp_date = u->nc_days = u->nc_newer = u->mpu_days = -1;
	u->exp_dm = -1;
}

/* --- checks ------------------------------------------------------------------------ */

static size_t tags_of(const s3lc_rule_t *u) { return u->f.ntags + (u->has_and ? u->a.ntags : 0); }

/* Each check answers S3's error code (NULL: fine) and sets *why (NULL:
 * the code's standard message). */
#define FAIL(code, msg)                                                                                        \
	do {                                                                                                   \
		*why = (msg);                                                                                  \
		return (code);                                                                                 \
	} while (0)

static const char *cond_check(const s3lc_cond_t *c, const char **why)
{
	if ((c->gt != -1 && c->gt < 0) || (c->lt != -1 && c->lt < 0))
		FAIL("InvalidArgument", "ObjectSizeGreaterThan and ObjectSizeLessThan must be non-negative");
	if (c->gt >= 0 && c->lt >= 0 && c->gt >= c->lt)
		FAIL("InvalidArgument", "ObjectSizeGreaterThan must be less than ObjectSizeLessThan");
	for (size_t i = 0; i < c->ntags; i++) {
		size_t kl = strlen(c->tags[i].key);
		if (!kl || kl > TAG_KEY_MAX || strlen(c->tags[i].value) > TAG_VALUE_MAX)
			FAIL("InvalidTag", "A tag's key is 1 to 128 characters, its value at most 256");
		for (size_t k = 0; k < i; k++)
			if (!strcmp(c->tags[k].key, c->tags[i].key))
				FAIL("InvalidArgument", "Duplicate Tag Keys are not allowed");
	}
	return NULL;
}

static const char *rule_check(const s3lc_rule_t *u, const char **why)
{
	const char *code;
	if (strlen(u->id) > S3LC_ID_MAX)
		FAIL("InvalidArgument", "ID length should not exceed allowed limit of 255");
	if (u->prefix && u->filter)
		FAIL("MalformedXML", NULL);
	if ((code = cond_check(&u->f, why)) || (u->has_and && (code = cond_check(&u->a, why))))
		return code;
	if (tags_of(u) > S3LC_TAGS_MAX)
		FAIL("InvalidArgument", "A filter has at most 50 tags");
	for (size_t i = 0; u->has_and && i < u->a.ntags; i++)
		for (size_t k = 0; k < u->f.ntags; k++)
			if (!strcmp(u->f.tags[k].key, u->a.tags[i].key))
				FAIL("InvalidArgument", "Duplicate Tag Keys are not allowed");
	if ((u->exp_days != -1) + (u->exp_date != -1) + (u->exp_dm != -1) > 1)
		FAIL("MalformedXML", NULL);
	if (u->exp_days != -1 && u->exp_days < 1)
		FAIL("InvalidArgument", "'Days' for Expiration action must be a positive integer");
	if (u->exp_date != -1 && (u->exp_date < 0 || u->exp_date % 86400))
		FAIL("InvalidArgument", "'Date' must be at midnight GMT");
	if (u->nc_newer != -1 && u->nc_days == -1)
		FAIL("MalformedXML", NULL);
	if (u->nc_days != -1 && u->nc_days < 1)
		FAIL("InvalidArgument", "'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer");
	if (u->nc_newer != -1 && (u->nc_newer < 1 || u->nc_newer > S3LC_NEWER_MAX))
		FAIL("InvalidArgument", "'NewerNoncurrentVersions' must be between 1 and 100");
	if (u->mpu_days != -1 && u->mpu_days < 1)
		FAIL("InvalidArgument",
		     "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer");
	if (u->exp_dm != -1 && tags_of(u))
		FAIL("InvalidRequest", "ExpiredObjectDeleteMarker cannot be specified with tags");
	if (u->mpu_days != -1 && tags_of(u))
		FAIL("InvalidRequest", "AbortIncompleteMultipartUpload cannot be specified with Tags");
	if (u->exp_days == -1 && u->exp_date == -1 && u->exp_dm == -1 && u->nc_days == -1 && u->mpu_days == -1 &&
	    !u->transitions)
		FAIL("InvalidRequest", "At least one action needs to be specified in a rule");
	return NULL;
}

const char *s3lc_check(arena_t *a, s3lc_t *c, const char **why)
{
	const char *code;
	if (!c->n)
		FAIL("MalformedXML", NULL);
	if (c->n > S3LC_RULES_MAX)
		FAIL("InvalidRequest", "A lifecycle configuration has at most 1000 rules");
	for (size_t i = 0; i < c->n; i++) {
		s3lc_rule_t *u = &c->rules[i];
		if (u->id && u->id[0])
			continue;
		char id[32]; /* S3 makes one up */
		for (size_t k = i + 1;; k++) {
			snprintf(id, sizeof(id), "rule-%zu", k);
			bool taken = false;
			for (size_t j = 0; j < c->n && !taken; j++)
				taken = c->rules[j].id && !strcmp(c->rules[j].id, id);
			if (!taken)
				break;
		}
		u->id = arena_strndup(a, id, strlen(id));
	}
	for (size_t i = 0; i < c->n; i++) {
		if ((code = rule_check(&c->rules[i], why)))
			return code;
		for (size_t k = 0; k < i; k++)
			if (!strcmp(c->rules[k].id, c->rules[i].id))
				FAIL("InvalidArgument", "Rule ID must be unique. Found same ID for more than one rule");
	}
	*why = NULL;
	return NULL;
}

/* --- canonical JSON ------------------------------------------------------------------ */

static void json_cond(const s3lc_cond_t *c, buf_t *b)
{
	bool first = true;
#define SEP() (first ? (first = false, "") : ",")
	if (c->prefix) {
		buf_addf(b, "%s\"prefix\":", SEP());
		buf_add_json_str(b, c->prefix, strlen(c->prefix));
	}
	if (c->ntags) {
		buf_addf(b, "%s\"tags\":[", SEP());
		for (size_t i = 0; i < c->ntags; i++) {
			buf_addstr(b, i ? ",[" : "[");
			buf_add_json_str(b, c->tags[i].key, strlen(c->tags[i].key));
			buf_addstr(b, ",");
			buf_add_json_str(b, c->tags[i].value, strlen(c->tags[i].value));
			buf_addstr(b, "]");
		}
		buf_addstr(b, "]");
	}
	if (c->gt >= 0)
		buf_addf(b, "%s\"gt\":%lld", SEP(), (long long)c->gt);
	if (c->lt >= 0)
		buf_addf(b, "%s\"lt\":%lld", SEP(), (long long)c->lt);
#undef SEP
}

void s3lc_json(const s3lc_t *c, buf_t *out)
{
	buf_addstr(out, "{\"rules\":[");
	for (size_t i = 0; i < c->n; i++) {
		const s3lc_rule_t *u = &c->rules[i];
		buf_addstr(out, i ? ",{\"id\":" : "{\"id\":");
		buf_add_json_str(out, u->id, strlen(u->id));
		buf_addf(out, ",\"status\":\"%s\"", u->enabled ? "Enabled" : "Disabled");
		if (u->prefix) {
			buf_addstr(out, ",\"prefix\":");
			buf_add_json_str(out, u->prefix, strlen(u->prefix));
		}
		if (u->filter) {
			buf_addstr(out, ",\"filter\":{");
			json_cond(&u->f, out);
			if (u->has_and) {
				buf_addstr(out, u->f.prefix || u->f.ntags || u->f.gt >= 0 || u->f.lt >= 0 ? ",\"and\":{"
													    : "\"and\":{");
				json_cond(&u->a, out);
				buf_addstr(out, "}");
			}
			buf_addstr(out, "}");
		}
		if (u->exp_days != -1)
			buf_addf(out, ",\"exp_days\":%lld", (long long)u->exp_days);
		if (u->exp_date != -1)
			buf_addf(out, ",\"exp_date\":%lld", (long long)u->exp_date);
		if (u->exp_dm != -1)
			buf_addf(out, ",\"exp_dm\":%s", u->exp_dm ? "true" : "false");
		if (u->nc_days != -1)
			buf_addf(out, ",\"nc_days\":%lld", (long long)u->nc_days);
		if (u->nc_newer != -1)
			buf_addf(out, ",\"nc_newer\":%lld", (long long)u->nc_newer);
		if (u->mpu_days != -1)
			buf_addf(out, ",\"mpu_days\":%lld", (long long)u->mpu_days);
		buf_addstr(out, "}");
	}
	buf_addstr(out, "]}");
}

static char *jstr(arena_t *a, json_t *v) { return arena_strndup(a, json_string_value(v), json_string_length(v)); }

/* An integer member k of o into *out (absent: -1). */
static int jint(json_t *o, const char *k, int64_t *out)
{
	json_t *v = json_object_get(o, k);
	*out = -1;
	if (!v)
		return AIS_OK;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return AIS_ERR;
	*out = json_integer_value(v);
	return AIS_OK;
}

static int cond_from(arena_t *a, json_t *o, s3lc_cond_t *c)
{
	json_t *p = json_object_get(o, "prefix"), *t = json_object_get(o, "tags"), *x;
	const char *k;
	json_object_foreach(o, k, x) {
		if (strcmp(k, "prefix") && strcmp(k, "tags") && strcmp(k, "gt") && strcmp(k, "lt") && strcmp(k, "and"))
			return AIS_ERR;
	}
	if (p && !json_is_string(p))
		return AIS_ERR;
	c->prefix = p ? jstr(a, p) : NULL;
	if (t) {
		if (!json_is_array(t) || json_array_size(t) > S3LC_TAGS_MAX)
			return AIS_ERR;
		c->ntags = json_array_size(t);
		c->tags = arena_zalloc(a, (c->ntags + 1) * sizeof(*c->tags));
		for (size_t i = 0; i < c->ntags; i++) {
			json_t *e = json_array_get(t, i);
			json_t *tk = json_array_get(e, 0), *tv = json_array_get(e, 1);
			if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(tk) || !json_is_string(tv))
				return AIS_ERR;
			c->tags[i].key = jstr(a, tk);
			c->tags[i].value = jstr(a, tv);
		}
	}
	return jint(o, "gt", &c->gt) == AIS_OK && jint(o, "lt", &c->lt) == AIS_OK ? AIS_OK : AIS_ERR;
}

static int rule_from(arena_t *a, json_t *o, s3lc_rule_t *u)
{
	json_t *id = json_object_get(o, "id"), *st = json_object_get(o, "status"), *p = json_object_get(o, "prefix");
	json_t *f = json_object_get(o, "filter"), *dm = json_object_get(o, "exp_dm");
	static const char *const known[] = {"id",	"status",  "prefix",   "filter",  "exp_days",
					    "exp_date", "exp_dm", "nc_days", "nc_newer", "mpu_days"};
	const char *k;
	json_t *x;
	s3lc_rule_init(u);
	json_object_foreach(o, k, x) {
		size_t i = 0;
		while (i < ARRAY_SIZE(known) && strcmp(k, known[i]))
			i++;
		if (i == ARRAY_SIZE(known))
			return AIS_ERR; /* strict: a key no configuration has */
	}
	if (!json_is_object(o) || !json_is_string(id) || !json_is_string(st) || (p && !json_is_string(p)) ||
	    (f && !json_is_object(f)) || (dm && !json_is_boolean(dm)))
		return AIS_ERR;
	if (strcmp(json_string_value(st), "Enabled") && strcmp(json_string_value(st), "Disabled"))
		return AIS_ERR;
	u->id = jstr(a, id);
	u->enabled = !strcmp(json_string_value(st), "Enabled");
	u->prefix = p ? jstr(a, p) : NULL;
	if (f) {
		json_t *an = json_object_get(f, "and");
		u->filter = true;
		if (cond_from(a, f, &u->f) != AIS_OK)
			return AIS_ERR;
		if (an && (!json_is_object(an) || json_object_get(an, "and") || cond_from(a, an, &u->a) != AIS_OK))
			return AIS_ERR;
		u->has_and = an != NULL;
	}
	u->exp_dm = dm ? json_is_true(dm) : -1;
	if (jint(o, "exp_days", &u->exp_days) || jint(o, "exp_date", &u->exp_date) || jint(o, "nc_days", &u->nc_days) ||
	    jint(o, "nc_newer", &u->nc_newer) || jint(o, "mpu_days", &u->mpu_days))
		return AIS_ERR;
	return AIS_OK;
}

int s3lc_parse_json(arena_t *a, const char *p, size_t n, s3lc_t *out, buf_t *err)
{
	json_error_t je;
	json_t *doc = json_loadb(p, n, JSON_REJECT_DUPLICATES, &je), *rules = json_object_get(doc, "rules");
	const char *why = NULL, *code = NULL;
	memset(out, 0, sizeof(*out));
	if (!json_is_object(doc) || json_object_size(doc) != 1 || !json_is_array(rules) ||
	    json_array_size(rules) > S3LC_RULES_MAX) {
		why = "not a lifecycle configuration";
		goto out;
	}
	out->n = json_array_size(rules);
	out->rules = arena_zalloc(a, (out->n + 1) * sizeof(*out->rules));
	for (size_t i = 0; i < out->n; i++)
		if (rule_from(a, json_array_get(rules, i), &out->rules[i]) != AIS_OK) {
			why = "a rule that is not one";
			goto out;
		}
	if ((code = s3lc_check(a, out, &why)) && !why)
		why = code;
out:
	json_decref(doc);
	if (why && err)
		buf_addf(err, "lifecycle configuration: %s", why);
	return why ? AIS_ERR : AIS_OK;
}

/* --- matching and times ------------------------------------------------------------- */

static bool cond_match(const s3lc_cond_t *c, const s3lc_obj_t *o)
{
	if (c->prefix && (strlen(c->prefix) > o->klen || memcmp(o->key, c->prefix, strlen(c->prefix))))
		return false;
	if ((c->gt >= 0 && o->size <= (uint64_t)c->gt) || (c->lt >= 0 && o->size >= (uint64_t)c->lt))
		return false;
	for (size_t i = 0; i < c->ntags; i++) {
		bool found = false;
		for (size_t k = 0; k < o->ntags && !found; k++)
			found = !strcmp(c->tags[i].key, o->tags[k].key) && !strcmp(c->tags[i].value, o->tags[k].value);
		if (!found)
			return false;
	}
	return true;
}

bool s3lc_match(const s3lc_rule_t *u, const s3lc_obj_t *o)
{
	if (u->prefix && (strlen(u->prefix) > o->klen || memcmp(o->key, u->prefix, strlen(u->prefix))))
		return false;
	return cond_match(&u->f, o) && (!u->has_and || cond_match(&u->a, o));
}

int64_t s3lc_due(int64_t start_ns, int64_t days, int64_t day_ns)
{
	if (days > INT64_MAX / 2 / day_ns)
		return INT64_MAX;
	int64_t t = start_ns + days * day_ns;
	if (day_ns == S3LC_DAY_NS && t % S3LC_DAY_NS) /* the next midnight UTC (rule 3) */
		t += S3LC_DAY_NS - (t % S3LC_DAY_NS + S3LC_DAY_NS) % S3LC_DAY_NS;
	return t;
}

/* When u's Expiration (Days or Date) makes something started at start_ns
 * due; INT64_MAX: never. */
static int64_t exp_when(const s3lc_rule_t *u, int64_t start_ns, int64_t day_ns)
{
	if (u->exp_days >= 1)
		return s3lc_due(start_ns, u->exp_days, day_ns);
	if (u->exp_date >= 0)
		return u->exp_date > INT64_MAX / 1000000000 ? INT64_MAX : u->exp_date * 1000000000;
	return INT64_MAX;
}

bool s3lc_expiry(const s3lc_t *c, const s3lc_obj_t *o, int64_t start_ns, int64_t *when_ns, const s3lc_rule_t **rule)
{
	*rule = NULL;
	*when_ns = INT64_MAX;
	for (size_t i = 0; i < c->n; i++) {
		const s3lc_rule_t *u = &c->rules[i];
		int64_t w;
		if (u->enabled && (w = exp_when(u, start_ns, S3LC_DAY_NS)) < *when_ns && s3lc_match(u, o)) {
			*when_ns = w;
			*rule = u;
		}
	}
	return *rule != NULL;
}

bool s3lc_plan(const s3lc_t *c, const s3lc_ver_t *cur, s3lc_ver_t *v, size_t n, int64_t now_ns, int64_t day_ns)
{
	bool cur_expires = false;
	size_t nnc = cur ? n : n ? n - 1 : 0; /* v[0..nnc) are noncurrent */
	for (size_t i = 0; i < n; i++)
		v[i].expire = false;
	for (size_t r = 0; r < c->n; r++) {
		const s3lc_rule_t *u = &c->rules[r];
		if (!u->enabled)
			continue;
		if (cur && !cur->dm && !cur_expires && now_ns >= exp_when(u, cur->start_ns, day_ns) &&
		    s3lc_match(u, &cur->o))
			cur_expires = true;
		for (size_t i = nnc; u->nc_days >= 1 && i-- > 0;) {
			int64_t since = i + 1 < n ? v[i + 1].start_ns : cur->start_ns; /* its successor's write */
			size_t newer = nnc - 1 - i; /* noncurrent versions newer than it */
			if (!v[i].expire && newer >= (size_t)(u->nc_newer > 0 ? u->nc_newer : 0) &&
			    now_ns >= s3lc_due(since, u->nc_days, day_ns) && s3lc_match(u, &v[i].o))
				v[i].expire = true;
		}
	}
	if (cur || !n || !v[n - 1].dm)
		return cur_expires;
	for (size_t i = 0; i + 1 < n; i++)
		if (!v[i].expire)
			return cur_expires; /* not the only version left */
	for (size_t r = 0; r < c->n && !v[n - 1].expire; r++) { /* an expired object delete marker */
		const s3lc_rule_t *u = &c->rules[r];
		if (u->enabled && s3lc_match(u, &v[n - 1].o) &&
		    (u->exp_dm == 1 || now_ns >= exp_when(u, v[n - 1].start_ns, day_ns)))
			v[n - 1].expire = true;
	}
	return cur_expires;
}

bool s3lc_upload_due(const s3lc_t *c, const char *key, size_t klen, int64_t start_ns, int64_t now_ns, int64_t day_ns)
{
	s3lc_obj_t o = {.key = key, .klen = klen};
	for (size_t r = 0; r < c->n; r++) {
		const s3lc_rule_t *u = &c->rules[r];
		if (u->enabled && u->mpu_days >= 1 && !tags_of(u) && now_ns >= s3lc_due(start_ns, u->mpu_days, day_ns) &&
		    s3lc_match(u, &o))
			return true;
	}
	return false;
}
