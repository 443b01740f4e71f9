/*
 * util.c - helpers shared by the target's handlers: names from the path,
 * store errors to HTTP statuses, time formatting.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "aisd/authz.h"
#include "aisd/moss.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "target_int.h"
#include "aisd/util.h"
#include "aisd/banned.h"

int tgt_parse_names(http_req_t *req, sv_t *bck, sv_t *obj, bool need_obj)
{
	sv_t sp = req->subpath;
	const char *slash = memchr(sp.ptr, '/', sp.len);
	sv_t rb = {sp.ptr, slash ? (size_t)(slash - sp.ptr) : sp.len};
	sv_t ro = slash ? (sv_t){slash + 1, sp.len - rb.len - 1} : (sv_t){"", 0};

	if (http_pct_decode(req->arena, rb, false, bck) != AIS_OK ||
	    http_pct_decode(req->arena, ro, false, obj) != AIS_OK) {
		http_resp_error(req, 400, "malformed percent-encoding in the path");
		return AIS_ERR;
	}
	if (!name_bucket_valid(bck->ptr, bck->len)) {
		if (bck->len == 0)
			http_resp_error(req, 400, "bucket name required");
		else
			http_resp_error(req, 400,
					"invalid bucket name \"%.*s\": use 1 to 64 of A-Z a-z 0-9 . _ -",
					(int)MIN(bck->len, 100), bck->ptr);
		return AIS_ERR;
	}
	if (need_obj && !name_object_valid(obj->ptr, obj->len)) {
		if (obj->len == 0)
			http_resp_error(req, 400, "object name required: /v1/objects/BUCKET/OBJECT");
		else if (obj->len > NAME_OBJECT_MAX)
			http_resp_error(req, 400, "object name longer than %d bytes", NAME_OBJECT_MAX);
		else
			http_resp_error(req, 400, "invalid object name: must be UTF-8 without NUL bytes and without "
					"\".\" or \"..\" segments");
		return AIS_ERR;
	}
	if (!need_obj && obj->len) {
		http_resp_error(req, 400, "unexpected path after the bucket name");
		return AIS_ERR;
	}
	return AIS_OK;
}

void tgt_resp_errmsg(http_req_t *req, const ais_errno_t *e, int err, const char *what, const char *msg)
{
	buf_t b = BUF_INIT;
	ais_errno_msg(&b, e, err, what, msg);
	http_resp_error(req, e->status, "%s", b.ptr);
	buf_free(&b);
}

void tgt_resp_errno(http_req_t *req, int err, const char *what) { tgt_resp_errmsg(req, ais_errno(err), err, what, NULL); }

void tgt_bucket_json(buf_t *out, const char *name, bool first)
{
	buf_addstr(out, first ? "{\"name\":" : ",{\"name\":");
	buf_add_json_str(out, name, strlen(name));
	buf_addstr(out, ",\"provider\":\"ais\",\"namespace\":{\"uuid\":\"\",\"name\":\"\"}}");
}

void tgt_fmt_time(int64_t ns, char *out, size_t outsz)
{
	int64_t s = ns / 1000000000LL, frac = ns % 1000000000LL;
	struct tm tm;
	char b[40], *p = b;
	if (frac < 0)
		s--, frac += 1000000000LL;
	time_gmtime(s, &tm);
	if (!outsz)
		return;
	if (tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999) {
		snprintf(out, outsz, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long long)frac);
		return;
	}
	/* digit by digit: this is on every GET's answer (Ais-Atime) */
	p = fmt_digits(p, (uint64_t)tm.tm_year + 1900, 4);
	*p++ = '-';
	p = fmt_digits(p, (uint64_t)tm.tm_mon + 1, 2);
	*p++ = '-';
	p = fmt_digits(p, (uint64_t)tm.tm_mday, 2);
	*p++ = 'T';
	p = fmt_digits(p, (uint64_t)tm.tm_hour, 2);
	*p++ = ':';
	p = fmt_digits(p, (uint64_t)tm.tm_min, 2);
	*p++ = ':';
	p = fmt_digits(p, (uint64_t)tm.tm_sec, 2);
	*p++ = '.';
	p = fmt_digits(p, (uint64_t)frac, 9);
	*p++ = 'Z';
	size_t n = MIN((size_t)(p - b), outsz - 1);
	memcpy(out, b, n);
	out[n] = '\0';
}

int tgt_resp_range(http_req_t *req, uint64_t size, const char *ctype, const char *what, uint64_t *start,
		   uint64_t *len)
{
	http_resp_header_str(req, "Accept-Ranges", "bytes");
	http_resp_header_str(req, "Content-Type", ctype);
	int r = http_range_parse(http_req_header(req, "Range"), size, start, len);
	if (r == AIS_ERR) {
		http_resp_header(req, "Content-Range", "bytes */%llu", (unsigned long long)size);
		http_resp_error(req, 416, "range not satisfiable for %s of %llu bytes", what,
				(unsigned long long)size);
		return AIS_ERR;
	}
	if (r == AIS_OK) {
		http_resp_status(req, 206);
		http_resp_header(req, "Content-Range", "bytes %llu-%llu/%llu", (unsigned long long)*start,
				 (unsigned long long)(*start + *len - 1), (unsigned long long)size);
	} else {
		*start = 0;
		*len = size;
	}
	return AIS_OK;
}

bool tgt_moss_allowed(http_req_t *req, const moss_req_t *mr)
{
	/* one resource per entry (a run of entries of one bucket declares it
	 * once), decided together: one entry refused refuses the request */
	size_t runs = 0, n = 0;
	for (size_t i = 0; i < mr->n; i++)
		runs += !i || !sv_eq(mr->in[i - 1].bck, mr->in[i].bck);
	authz_res_t *res = arena_zalloc(req->arena, (runs ? runs : 1) * sizeof(*res));
	for (size_t i = 0; i < mr->n; i++) {
		if (n && sv_eq(res[n - 1].bucket, mr->in[i].bck))
			continue;
		res[n].bucket = mr->in[i].bck;
		res[n].object = mr->in[i].obj;
		res[n].perm = AUTH_READ;
		res[n].op = BMD_ACCESS_GET;
		res[n].role = "a GetBatch entry";
		n++;
	}
	return authz_request(req, res, n);
}

bool tgt_sse_encrypted(const char *custom)
{
	return !strncmp(custom, "s3.sse=", 7) || strstr(custom, ",s3.sse=");
}
