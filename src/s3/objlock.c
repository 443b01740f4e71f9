/*
 * objlock.c - S3 object lock: the bucket's configuration (GET/PUT
 * ?object-lock: enabled, and the default retention of new versions, kept
 * in the BMD as props.s3lock), a version's retention and legal hold (GET/PUT
 * ?retention and ?legal-hold, versionId too; the x-amz-object-lock-*
 * headers of PutObject, CopyObject and CreateMultipartUpload), and the
 * headers GET and HEAD answer them with.
 *
 * A version's lock lives in its custom metadata as the object layer's own
 * items (olver.h OLVER_LOCK_*), written with the version or set on every
 * copy (ol_set_custom), so it moves with the version (copies, kept
 * versions, rebalance, restarts). The object layer enforces it where a
 * version is removed for good (olver.c rule 8: olver_delete_version, for
 * S3 and the native API alike); a bucket with object lock keeps
 * versioning enabled (bmd.h), so no write replaces a version. Here only
 * the S3 rules for changing a lock: a COMPLIANCE retention is only ever
 * extended; a GOVERNANCE one is shortened, removed or changed in mode only
 * with x-amz-bypass-governance-retention (which needs the bucket's admin
 * permission, s3_declare); a legal hold is set and cleared freely.
 * Retention times are kept in whole seconds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

#define DAY_S 86400LL

bool s3_lock_bypass(const s3_rq_t *r)
{
	return sv_eqcase(sv_trim(http_req_header(r->http, "x-amz-bypass-governance-retention")), SV("true"));
}

bool s3_bucket_lock_conf(s3_rq_t *r, char *out, size_t outsz)
{
	bool on = false;
	if (out && outsz)
		out[0] = '\0';
	if (!r->node.cl)
		return false;
	const bmd_t *b;
	cluster_read_lock(r->node.cl, NULL, &b);
	const bmd_bucket_t *bk = b ? bmd_get(b, r->bucket.ptr, r->bucket.len) : NULL;
	if (bk && bk->props.s3lock[0]) {
		on = true;
		if (out)
			snprintf(out, outsz, "%s", bk->props.s3lock);
	}
	cluster_read_unlock(r->node.cl);
	return on;
}

/* The default retention of conf ("Enabled:MODE:N(d|y)"): its mode into
 * mode and its length in seconds; false when there is none. */
static bool conf_default(const char *conf, char *mode, size_t modesz, int64_t *secs, uint64_t *n, char *unit)
{
	const char *m = strchr(conf, ':'), *c = m ? strchr(m + 1, ':') : NULL;
	size_t l = c ? strlen(c + 1) : 0;
	if (!c || l < 2 || num_parse_u64(c + 1, l - 1, 1, 36500, n) != AIS_OK)
		return false;
	snprintf(mode, modesz, "%.*s", (int)(c - m - 1), m + 1);
	*unit = c[l];
	*secs = (int64_t)*n * (*unit == 'y' ? 365 * DAY_S : DAY_S);
	return true;
}

/* --- the pure parsers ------------------------------------------------------------- */

static bool digits(const char *s, size_t n, int *out)
{
	int v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int s3_time_parse_iso(const char *s, size_t len, int64_t *out)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0;
	if (len < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
	    s[16] != ':' || !digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) ||
	    !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &sec))
		return AIS_ERR;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
		return AIS_ERR;
	size_t i = 19;
	if (s[i] == '.') {
		size_t f = ++i;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == f || i - f > 9)
			return AIS_ERR;
	}
	int sign = 0;
	if (i + 1 == len && (s[i] == 'Z' || s[i] == 'z'))
		sign = 0;
	else if (i + 6 == len && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':' && digits(s + i + 1, 2, &oh) &&
		 digits(s + i + 4, 2, &om) && oh < 24 && om < 60)
		sign = s[i] == '+' ? 1 : -1;
	else
		return AIS_ERR;
	*out = days_from_civil(y, mo, d) * DAY_S + h * 3600 + mi * 60 + sec - sign * (oh * 3600 + om * 60);
	return AIS_OK;
}

struct lc_st {
	bool root, rule, dr, bad;
	char enabled[16], mode[16], days[24], years[24];
	bool has_days, has_years;
};

static void take(char *out, size_t outsz, const char *text, size_t len, bool *bad)
{
	if (len >= outsz)
		*bad = true;
	snprintf(out, outsz, "%.*s", (int)MIN(len, outsz - 1), text);
}

static int lc_cb(void *arg, const char *path, const char *text, size_t len)
{
	struct lc_st *c = arg;
	if (!strcmp(path, "ObjectLockConfiguration"))
		c->root = true;
	else if (!strcmp(path, "ObjectLockConfiguration/ObjectLockEnabled"))
		take(c->enabled, sizeof(c->enabled), text, len, &c->bad);
	else if (!strcmp(path, "ObjectLockConfiguration/Rule"))
		c->rule = true;
	else if (!strcmp(path, "ObjectLockConfiguration/Rule/DefaultRetention"))
		c->dr = true;
	else if (!strcmp(path, "ObjectLockConfiguration/Rule/DefaultRetention/Mode"))
		take(c->mode, sizeof(c->mode), text, len, &c->bad);
	else if (!strcmp(path, "ObjectLockConfiguration/Rule/DefaultRetention/Days"))
		take(c->days, sizeof(c->days), text, len, &c->bad), c->has_days = true;
	else if (!strcmp(path, "ObjectLockConfiguration/Rule/DefaultRetention/Years"))
		take(c->years, sizeof(c->years), text, len, &c->bad), c->has_years = true;
	return AIS_OK;
}

static bool mode_valid(sv_t m) { return sv_eqstr(m, "GOVERNANCE") || sv_eqstr(m, "COMPLIANCE"); }

const char *s3_parse_lock_conf(const char *p, size_t n, char *out, size_t outsz)
{
	struct lc_st c = {0};
	if (s3_xml_parse(p, n, lc_cb, &c) != AIS_OK || !c.root || c.bad || strcmp(c.enabled, "Enabled"))
		return "MalformedXML";
	if (!c.rule) {
		snprintf(out, outsz, "Enabled");
		return NULL;
	}
	if (!c.dr || !mode_valid(sv_from(c.mode)) || c.has_days == c.has_years)
		return "MalformedXML";
	const char *v = c.has_days ? c.days : c.years;
	bool neg = v[0] == '-';
	uint64_t num;
	if (num_parse_u64(v + neg, strlen(v + neg), 0, UINT64_MAX, &num) != AIS_OK)
		return "MalformedXML";
	if (neg || num == 0 || num > (c.has_days ? 36500u : 100u))
		return "InvalidRetentionPeriod";
	snprintf(out, outsz, "Enabled:%s:%llu%c", c.mode, (unsigned long long)num, c.has_days ? 'd' : 'y');
	return NULL;
}

/* <Retention><Mode/><RetainUntilDate/></Retention> and
 * <LegalHold><Status/></LegalHold>. */
struct ret_st {
	bool root, bad;
	char mode[16], until[64], status[16];
};

static int ret_cb(void *arg, const char *path, const char *text, size_t len)
{
	struct ret_st *c = arg;
	if (!strcmp(path, "Retention") || !strcmp(path, "LegalHold"))
		c->root = true;
	else if (!strcmp(path, "Retention/Mode"))
		take(c->mode, sizeof(c->mode), text, len, &c->bad);
	else if (!strcmp(path, "Retention/RetainUntilDate"))
		take(c->until, sizeof(c->until), text, len, &c->bad);
	else if (!strcmp(path, "LegalHold/Status"))
		take(c->status, sizeof(c->status), text, len, &c->bad);
	return AIS_OK;
}

/* --- a request's lock (PutObject, CopyObject, CreateMultipartUpload) ------------- */

static char *secs_str(arena_t *a, int64_t s) { return arena_printf(a, "%lld", (long long)s); }

int s3_lock_from_req(s3_rq_t *r, s3_meta_t *m)
{
	http_req_t *req = r->http;
	sv_t mode = sv_trim(http_req_header(req, "x-amz-object-lock-mode"));
	sv_t until = sv_trim(http_req_header(req, "x-amz-object-lock-retain-until-date"));
	sv_t hold = sv_trim(http_req_header(req, "x-amz-object-lock-legal-hold"));
	bool given_mode = http_req_header(req, "x-amz-object-lock-mode").ptr != NULL;
	bool given_until = http_req_header(req, "x-amz-object-lock-retain-until-date").ptr != NULL;
	bool given_hold = http_req_header(req, "x-amz-object-lock-legal-hold").ptr != NULL;
	char conf[BMD_S3LOCK_MAX + 1], dmode[16], unit;
	int64_t now = time_now_ns() / 1000000000LL, t, len;
	uint64_t n;

	m->lock_mode = m->lock_until = m->lock_hold = NULL;
	bool on = s3_bucket_lock_conf(r, conf, sizeof(conf));
	if ((given_mode || given_until || given_hold) && !on) {
		s3_error(r, "InvalidRequest", "Bucket is missing Object Lock Configuration");
		return AIS_ERR;
	}
	if (given_mode != given_until) {
		s3_error(r, "InvalidArgument", "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must "
					       "both be supplied");
		return AIS_ERR;
	}
	if (given_mode) {
		if (!mode_valid(mode)) {
			s3_error(r, "InvalidArgument", "Unknown wormMode directive.");
			return AIS_ERR;
		}
		if (s3_time_parse_iso(until.ptr, until.len, &t) != AIS_OK) {
			s3_error(r, "InvalidArgument", "The retain until date must be an ISO 8601 date-time");
			return AIS_ERR;
		}
		if (t <= now) {
			s3_error(r, "InvalidArgument", "The retain until date must be in the future!");
			return AIS_ERR;
		}
		m->lock_mode = arena_svdup(req->arena, mode);
		m->lock_until = secs_str(req->arena, t);
	} else if (on && conf_default(conf, dmode, sizeof(dmode), &len, &n, &unit)) {
		m->lock_mode = arena_strndup(req->arena, dmode, strlen(dmode));
		m->lock_until = secs_str(req->arena, now + len);
	}
	if (given_hold) {
		if (!sv_eqstr(hold, "ON") && !sv_eqstr(hold, "OFF")) {
			s3_error(r, "InvalidArgument", "Legal Hold must be either of 'ON' or 'OFF'");
			return AIS_ERR;
		}
		m->lock_hold = arena_strndup(req->arena, sv_eqstr(hold, "ON") ? "1" : "0", 1);
	}
	return AIS_OK;
}

static bool hold_on(const s3_meta_t *m) { return m->lock_hold && !strcmp(m->lock_hold, "1"); }

static int64_t until_of(const s3_meta_t *m)
{
	uint64_t u;
	if (!m->lock_mode || !m->lock_until ||
	    num_parse_u64(m->lock_until, strlen(m->lock_until), 0, INT64_MAX, &u) != AIS_OK)
		return 0;
	return (int64_t)u;
}

void s3_lock_headers(s3_rq_t *r, const s3_meta_t *m)
{
	int64_t u = until_of(m);
	if (u) {
		char t[64];
		s3_time_iso(u * 1000000000LL, t, sizeof(t));
		http_resp_header(r->http, "x-amz-object-lock-mode", "%s", m->lock_mode);
		http_resp_header(r->http, "x-amz-object-lock-retain-until-date", "%s", t);
	}
	if (m->lock_hold || u)
		http_resp_header(r->http, "x-amz-object-lock-legal-hold", "%s", hold_on(m) ? "ON" : "OFF");
}

/* --- GET/PUT ?object-lock of a bucket --------------------------------------------- */

static void conf_body(s3_rq_t *r, buf_t *body)
{
	char conf[BMD_S3LOCK_MAX + 1];
	const char *code = s3_parse_lock_conf(body->ptr ? body->ptr : "", body->len, conf, sizeof(conf));
	if (code) {
		s3_error(r, code, NULL);
		return;
	}
	if (s3_history(r) != BMD_HIST_ENABLED) {
		s3_error(r, "InvalidBucketState", "Versioning must be 'Enabled' on the bucket to apply a Object Lock "
						  "configuration");
		return;
	}
	s3_bucket_set_lock(r, conf);
}

int s3_bucket_lock(s3_rq_t *r)
{
	char conf[BMD_S3LOCK_MAX + 1], mode[16], unit;
	int64_t secs;
	uint64_t n;
	if (!s3_bucket_exists(r)) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	if (r->http->method == HTTP_PUT) {
		s3_read_body(r, conf_body);
		return AIS_OK;
	}
	if (r->http->method != HTTP_GET) {
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
	if (!s3_bucket_lock_conf(r, conf, sizeof(conf))) {
		s3_error(r, "ObjectLockConfigurationNotFoundError", "Object Lock configuration does not exist for this "
								 "bucket");
		return AIS_OK;
	}
	buf_t b = BUF_INIT;
	s3_xml_head(&b, "ObjectLockConfiguration");
	s3_xml_elemstr(&b, "ObjectLockEnabled", "Enabled");
	if (conf_default(conf, mode, sizeof(mode), &secs, &n, &unit)) {
		s3_xml_open(&b, "Rule");
		s3_xml_open(&b, "DefaultRetention");
		s3_xml_elemstr(&b, "Mode", mode);
		s3_xml_elemf(&b, unit == 'y' ? "Years" : "Days", "%llu", (unsigned long long)n);
		s3_xml_close(&b, "DefaultRetention");
		s3_xml_close(&b, "Rule");
	}
	s3_xml_close(&b, "ObjectLockConfiguration");
	s3_send_xml(r, 200, &b);
	return AIS_OK;
}

/* --- GET/PUT ?retention and ?legal-hold of a version ------------------------------- */

struct lop {
	bool hold; /* ?legal-hold, else ?retention */
	sv_t vid;  /* versionId; ptr NULL: the current version */
	/* a PUT's */
	bool put, clear; /* clear: a retention without mode and date */
	char mode[16];
	int64_t until;
	bool on;
	/* the answer */
	const char *code; /* an S3 error code */
	int err;          /* else an errno */
	buf_t msg, out;
};

static void lop_cleanup(void *arg)
{
	struct lop *o = arg;
	buf_free(&o->msg);
	buf_free(&o->out);
}

/* Can the retention cur become the one o asks for? NULL, or why not. */
static const char *retention_change(const s3_meta_t *cur, const struct lop *o, bool bypass, int64_t now)
{
	int64_t u = until_of(cur);
	if (!u || u <= now)
		return NULL; /* none, or over */
	bool same = !o->clear && !strcmp(o->mode, cur->lock_mode);
	if (!strcmp(cur->lock_mode, "COMPLIANCE"))
		return same && o->until >= u ? NULL : "a COMPLIANCE retention can only be extended";
	if (same && o->until >= u)
		return NULL;
	return bypass ? NULL
		      : "a GOVERNANCE retention is shortened, removed or changed only with "
			"x-amz-bypass-governance-retention";
}

static void lop_work(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct lop *o = r->op;
	struct target *t = req->ctx;
	buf_t name = BUF_INIT, custom = BUF_INIT;
	store_meta_t *sm = xmalloc(sizeof(*sm));
	int fd;
	bool dm = false;

	if (o->vid.ptr) {
		if (olver_resolve(t, r->bucket, r->key, o->vid, &name, &dm) != AIS_OK) {
			o->code = "NoSuchVersion";
			goto out;
		}
	} else {
		buf_addsv(&name, r->key);
	}
	if (dm) {
		o->code = "MethodNotAllowed";
		buf_addstr(&o->msg, "The specified method is not allowed against a delete marker");
		goto out;
	}
	if (ol_open_sync(t, r->bucket, sv_of(&name), true, &fd, sm, &o->msg) != AIS_OK) {
		if (errno == ENOENT)
			o->code = o->vid.ptr ? "NoSuchVersion" : "NoSuchKey";
		else
			o->err = errno ? errno : EIO;
		goto out;
	}
	close(fd);
	s3_meta_t *m = arena_alloc(req->arena, sizeof(*m));
	s3_meta_decode(req->arena, sm->custom, m);
	if (s3_decide_object(r, S3_RES_NAMED, m) != AIS_OK) {
		o->code = "AccessDenied";
		goto out;
	}
	int64_t now = time_now_ns() / 1000000000LL, u = until_of(m);
	if (!o->put) {
		char ts[64];
		if (o->hold ? !m->lock_hold : !u) {
			o->code = "NoSuchObjectLockConfiguration";
			goto out;
		}
		s3_xml_head(&o->out, o->hold ? "LegalHold" : "Retention");
		if (o->hold) {
			s3_xml_elemstr(&o->out, "Status", hold_on(m) ? "ON" : "OFF");
		} else {
			s3_time_iso(u * 1000000000LL, ts, sizeof(ts));
			s3_xml_elemstr(&o->out, "Mode", m->lock_mode);
			s3_xml_elemstr(&o->out, "RetainUntilDate", ts);
		}
		s3_xml_close(&o->out, o->hold ? "LegalHold" : "Retention");
		goto out;
	}
	if (o->hold) {
		m->lock_hold = arena_strndup(req->arena, o->on ? "1" : "0", 1); /* "0": OFF, as set */
	} else {
		const char *why = retention_change(m, o, s3_lock_bypass(r), now);
		if (why) {
			o->code = "AccessDenied";
			buf_addstr(&o->msg, why);
			goto out;
		}
		m->lock_mode = o->clear ? NULL : arena_strndup(req->arena, o->mode, strlen(o->mode));
		m->lock_until = o->clear ? NULL : secs_str(req->arena, o->until);
	}
	if (s3_meta_encode(m, &custom) != AIS_OK) {
		o->code = "MetadataTooLarge";
		goto out;
	}
	if (ol_set_custom(t, r->bucket, sv_of(&name), sm->version, custom.ptr, r->node.cl != NULL, &o->msg) != AIS_OK)
		o->err = errno ? errno : EIO;
out:
	buf_free(&name);
	buf_free(&custom);
	free(sm);
}

static void lop_done(http_req_t *req)
{
	s3_rq_t *r = req->state;
	struct lop *o = r->op;
	const char *what = o->hold ? "legal hold" : "retention";
	if (o->code && o->msg.len)
		s3_error(r, o->code, "%s", o->msg.ptr);
	else if (o->code)
		s3_error(r, o->code, NULL);
	else if (o->err == ESTALE)
		s3_error(r, "OperationAborted", "the version was changed while its %s was being set; try again", what);
	else if (o->err == EIO && o->msg.len)
		s3_error(r, "ServiceUnavailable", "the %s is set on this copy but not on every copy (%s); try again",
			 what, o->msg.ptr);
	else if (o->err)
		s3_error_msg(r, o->err, true, o->msg.ptr);
	else if (!o->put)
		s3_send_xml(r, 200, &o->out);
	else {
		s3_common_headers(r);
		http_resp_send(req, "", 0);
	}
}

static void lop_body(s3_rq_t *r, buf_t *body)
{
	struct lop *o = r->op;
	struct ret_st c = {0};
	if (s3_xml_parse(body->ptr ? body->ptr : "", body->len, ret_cb, &c) != AIS_OK || !c.root || c.bad) {
		s3_error(r, "MalformedXML", NULL);
		return;
	}
	if (o->hold) {
		if (strcmp(c.status, "ON") && strcmp(c.status, "OFF")) {
			s3_error(r, "MalformedXML", NULL);
			return;
		}
		o->on = !strcmp(c.status, "ON");
	} else if (!c.mode[0] && !c.until[0]) {
		o->clear = true;
	} else {
		if (!mode_valid(sv_from(c.mode)) || s3_time_parse_iso(c.until, strlen(c.until), &o->until) != AIS_OK) {
			s3_error(r, "MalformedXML", NULL);
			return;
		}
		if (o->until <= time_now_ns() / 1000000000LL) {
			s3_error(r, "InvalidArgument", "The retain until date must be in the future!");
			return;
		}
		snprintf(o->mode, sizeof(o->mode), "%s", c.mode);
	}
	r->http->state = r;
	s3_offload(r, lop_work, lop_done);
}

static int lop_start(s3_rq_t *r, bool hold)
{
	http_req_t *req = r->http;
	struct lop *o = arena_zalloc(req->arena, sizeof(*o));
	arena_cleanup_add(req->arena, lop_cleanup, o);
	o->hold = hold;
	r->op = o;
	if (req->method != HTTP_GET && req->method != HTTP_PUT) {
		s3_error(r, "MethodNotAllowed", NULL);
		return AIS_OK;
	}
	if (!s3_bucket_exists(r)) {
		s3_error(r, "NoSuchBucket", NULL);
		return AIS_OK;
	}
	if (!s3_bucket_lock_conf(r, NULL, 0)) {
		s3_error(r, "InvalidRequest", "Bucket is missing Object Lock Configuration");
		return AIS_OK;
	}
	if (!r->node.store) { /* (object requests reach a target: s3.c) */
		s3_error(r, "InternalError", "no store on this node");
		return AIS_OK;
	}
	sv_t vid;
	if (http_query_get(req, "versionId", &vid)) {
		if (!sv_eqstr(vid, "null") && !olver_id_valid(vid)) {
			s3_error(r, "InvalidArgument", "Invalid version id specified");
			return AIS_OK;
		}
		o->vid = vid;
	}
	if (req->method == HTTP_PUT) {
		o->put = true;
		s3_read_body(r, lop_body);
		return AIS_OK;
	}
	req->state = r;
	s3_offload(r, lop_work, lop_done);
	return AIS_OK;
}

int s3_object_retention(s3_rq_t *r) { return lop_start(r, false); }
int s3_object_legal_hold(s3_rq_t *r) { return lop_start(r, true); }
