/*
 * post.c - S3 browser-based uploads (s3post.h): a streaming multipart/
 * form-data parser, the POST policy document (expiration and conditions)
 * and the policy's signature (SigV4 with the signing key of sigv4.c, or
 * SigV2's HMAC-SHA1).
 *
 * Guarantees of the parser, for any bytes in any split:
 *  1. It holds at most S3_FORM_HEAD_MAX bytes (fields and part headers
 *     before the file; a part's headers after it: PART_HEAD_MAX), never a
 *     byte of the file, which goes to emit as views into the input.
 *  2. The file's bytes are exactly those between the file part's headers
 *     and the next "\r\n--boundary": the delimiter is matched across
 *     splits (a boundary has no CR, so a mismatch restarts only at a CR).
 *  3. Every call returns; a form that never reaches its file part fails
 *     within S3_FORM_HEAD_MAX bytes.
 */
#include <ctype.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "aisd/s3post.h"
#include "aisd/status.h"
#include "s3_int.h"
#include "aisd/banned.h"

#define PART_HEAD_MAX (8u << 10)
#define POLICY_MAX (S3_FORM_HEAD_MAX)

enum { ST_PRE, ST_AFTER, ST_DASH, ST_AFTER_CR, ST_HDRS, ST_VAL, ST_FILE, ST_END };

static void form_cleanup(void *arg) { buf_free(&((s3_form_t *)arg)->cur); }

/* The boundary= parameter of a Content-Type (quoted or not). */
static bool boundary_of(sv_t ct, sv_t *out)
{
	for (size_t i = 0; i + 9 <= ct.len; i++) {
		if (strncasecmp(ct.ptr + i, "boundary=", 9) || (i && ct.ptr[i - 1] != ';' && ct.ptr[i - 1] != ' ' &&
								  ct.ptr[i - 1] != '\t'))
			continue;
		const char *p = ct.ptr + i + 9, *e = ct.ptr + ct.len;
		if (p < e && *p == '"') {
			const char *q = memchr(p + 1, '"', (size_t)(e - p - 1));
			if (!q)
				return false;
			*out = (sv_t){p + 1, (size_t)(q - p - 1)};
		} else {
			const char *q = p;
			while (q < e && *q != ';' && *q != ' ' && *q != '\t')
				q++;
			*out = (sv_t){p, (size_t)(q - p)};
		}
		return true;
	}
	return false;
}

int s3_form_init(s3_form_t *f, arena_t *a, sv_t ct)
{
	sv_t b;
	memset(f, 0, sizeof(*f));
	f->a = a;
	ct = sv_trim(ct);
	if (!sv_startswith(ct, "multipart/form-data") && !(ct.len >= 19 && !strncasecmp(ct.ptr, "multipart/form-data", 19))) {
		snprintf(f->err, sizeof(f->err), "the body is not multipart/form-data");
		return AIS_ERR;
	}
	if (!boundary_of(ct, &b) || !b.len || b.len > S3_FORM_BOUNDARY_MAX || memchr(b.ptr, '\r', b.len) ||
	    memchr(b.ptr, '\n', b.len)) {
		snprintf(f->err, sizeof(f->err), "multipart/form-data without a usable boundary");
		return AIS_ERR;
	}
	memcpy(f->delim, "\r\n--", 4);
	memcpy(f->delim + 4, b.ptr, b.len);
	f->dlen = 4 + b.len;
	f->m = 2; /* the first delimiter has no CRLF before it */
	f->st = ST_PRE;
	arena_cleanup_add(a, form_cleanup, f);
	return AIS_OK;
}

static int fail(s3_form_t *f, const char *msg)
{
	snprintf(f->err, sizeof(f->err), "%s", msg);
	return S3_FORM_ERR;
}

/* Where the bytes of data before a delimiter go, by state. */
static int out(s3_form_t *f, const char *p, size_t n, s3_emit_fn emit, void *arg)
{
	if (!n)
		return AIS_OK;
	if (f->st == ST_FILE) {
		f->file_len += n;
		return emit(arg, p, n) == AIS_OK ? AIS_OK : AIS_ERR;
	}
	if (f->st == ST_VAL && !f->file_seen) {
		if (f->cur.len + n > S3_FORM_HEAD_MAX) {
			fail(f, "form fields before the file over the limit");
			return AIS_ERR;
		}
		buf_add(&f->cur, p, n);
	}
	return AIS_OK; /* the preamble; fields after the file (S3 ignores them) */
}

/* Scans p[*i..n) for the delimiter, passing the bytes before it to out.
 * 1: found (*i after it), 0: not in these bytes, -1: out failed. */
static int scan(s3_form_t *f, const char *p, size_t n, size_t *i, s3_emit_fn emit, void *arg)
{
	while (*i < n) {
		if (f->m == 0) {
			const char *cr = memchr(p + *i, '\r', n - *i);
			size_t run = cr ? (size_t)(cr - (p + *i)) : n - *i;
			if (out(f, p + *i, run, emit, arg) != AIS_OK)
				return -1;
			*i += run;
			if (!cr)
				return 0;
			f->m = 1;
			(*i)++;
			continue;
		}
		if (p[*i] == f->delim[f->m]) {
			(*i)++;
			if (++f->m == f->dlen) {
				f->m = 0;
				return 1;
			}
			continue;
		}
		/* rule 2: the bytes held were data; p[*i] is looked at again */
		size_t held = f->m;
		f->m = 0;
		if (out(f, f->delim, held, emit, arg) != AIS_OK)
			return -1;
	}
	return 0;
}

/* A quoted-string or token parameter value at p (e end) into arena memory. */
static char *param_value(arena_t *a, const char *p, const char *e)
{
	if (p < e && *p == '"') {
		buf_t v = BUF_INIT;
		for (p++; p < e && *p != '"'; p++) {
			if (*p == '\\' && p + 1 < e)
				p++;
			buf_add(&v, p, 1);
		}
		char *s = arena_strndup(a, v.ptr ? v.ptr : "", v.len);
		buf_free(&v);
		return s;
	}
	const char *q = p;
	while (q < e && *q != ';')
		q++;
	sv_t t = sv_trim((sv_t){p, (size_t)(q - p)});
	return arena_strndup(a, t.ptr, t.len);
}

/* The parameter name (name= or filename=) of a Content-Disposition value. */
static char *disp_param(arena_t *a, sv_t v, const char *name)
{
	size_t nl = strlen(name);
	const char *p = v.ptr, *e = v.ptr + v.len;
	while (p < e) {
		const char *semi = p;
		bool inq = false;
		while (semi < e && (inq || *semi != ';')) {
			if (*semi == '"')
				inq = !inq;
			else if (*semi == '\\' && inq && semi + 1 < e)
				semi++;
			semi++;
		}
		sv_t item = sv_trim((sv_t){p, (size_t)(semi - p)});
		if (item.len > nl && !strncasecmp(item.ptr, name, nl) && item.ptr[nl] == '=')
			return param_value(a, item.ptr + nl + 1, item.ptr + item.len);
		p = semi < e ? semi + 1 : e;
	}
	return NULL;
}

/* The current part's headers (in cur, ending with an empty line). */
static int part_headers(s3_form_t *f)
{
	const char *p = f->cur.ptr, *e = f->cur.ptr + f->cur.len;
	f->pname = NULL;
	f->pfile = false;
	char *fname = NULL, *ctype = NULL;
	while (p < e) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		sv_t line = {p, nl ? (size_t)(nl - p) : (size_t)(e - p)};
		p = nl ? nl + 1 : e;
		if (line.len && line.ptr[line.len - 1] == '\r')
			line.len--;
		line = sv_trim(line);
		if (!line.len)
			continue;
		const char *colon = memchr(line.ptr, ':', line.len);
		if (!colon)
			return fail(f, "a form part's header line without a colon");
		sv_t n = sv_trim((sv_t){line.ptr, (size_t)(colon - line.ptr)});
		sv_t v = sv_trim((sv_t){colon + 1, (size_t)(line.ptr + line.len - colon - 1)});
		if (sv_eqcase(n, SV("Content-Disposition"))) {
			if (v.len < 9 || strncasecmp(v.ptr, "form-data", 9))
				return fail(f, "a form part that is not form-data");
			f->pname = disp_param(f->a, v, "name");
			fname = disp_param(f->a, v, "filename");
		} else if (sv_eqcase(n, SV("Content-Type"))) {
			ctype = arena_strndup(f->a, v.ptr, v.len);
		}
	}
	if (!f->pname || !*f->pname)
		return fail(f, "a form part without a field name");
	if (!strcasecmp(f->pname, "file")) {
		if (f->file_seen)
			return fail(f, "more than one file in the form");
		f->pfile = true;
		f->filename = fname ? fname : arena_strndup(f->a, "", 0);
		f->file_ctype = ctype;
	}
	return S3_FORM_MORE;
}

int s3_form_feed(s3_form_t *f, const char *p, size_t n, size_t *used, s3_emit_fn emit, void *arg)
{
	size_t i = 0;
	int rc;
	*used = 0;
	while (i < n) {
		size_t at = i;
		switch (f->st) {
		case ST_PRE:
		case ST_VAL:
		case ST_FILE:
			rc = scan(f, p, n, &i, emit, arg);
			if (rc < 0)
				return S3_FORM_ERR;
			if (rc == 1) {
				if (f->st == ST_VAL && !f->file_seen) {
					if (f->nfields == S3_FORM_FIELDS)
						return fail(f, "too many form fields");
					s3_form_field_t *x = &f->fields[f->nfields++];
					x->name = f->pname;
					x->value = arena_strndup(f->a, f->cur.ptr ? f->cur.ptr : "", f->cur.len);
					x->len = f->cur.len;
				}
				if (f->st == ST_FILE)
					f->file_done = true;
				buf_reset(&f->cur);
				f->st = ST_AFTER;
			}
			break;
		case ST_AFTER:
			if (p[i] == '-')
				f->st = ST_DASH;
			else if (p[i] == '\r')
				f->st = ST_AFTER_CR;
			else if (p[i] != ' ' && p[i] != '\t')
				return fail(f, "malformed multipart boundary line");
			i++;
			break;
		case ST_DASH:
			if (p[i++] != '-')
				return fail(f, "malformed multipart boundary line");
			f->st = ST_END;
			f->ended = true;
			break;
		case ST_AFTER_CR:
			if (p[i++] != '\n')
				return fail(f, "malformed multipart boundary line");
			f->st = ST_HDRS;
			break;
		case ST_HDRS: {
			/* up to the empty line; a part with no headers starts with it */
			const char *nl = memchr(p + i, '\n', n - i);
			size_t k = nl ? (size_t)(nl - (p + i)) + 1 : n - i;
			if (f->cur.len + k > PART_HEAD_MAX)
				return fail(f, "a form part's headers over the limit");
			buf_add(&f->cur, p + i, k);
			i += k;
			size_t l = f->cur.len;
			if (!nl || !((l == 2 && f->cur.ptr[0] == '\r') || l == 1 ||
				     (l >= 4 && !memcmp(f->cur.ptr + l - 4, "\r\n\r\n", 4)) ||
				     (l >= 2 && !memcmp(f->cur.ptr + l - 2, "\n\n", 2))))
				break;
			if (part_headers(f) == S3_FORM_ERR)
				return S3_FORM_ERR;
			buf_reset(&f->cur);
			if (f->pfile) {
				f->st = ST_FILE;
				f->file_seen = true;
				f->head += i - at;
				*used = i;
				if (f->head > S3_FORM_HEAD_MAX)
					return fail(f, "form fields before the file over the limit");
				return S3_FORM_FILE;
			}
			f->st = ST_VAL;
			break;
		}
		case ST_END:
		default:
			i = n; /* the epilogue */
			break;
		}
		if (!f->file_seen) {
			f->head += i - at;
			if (f->head > S3_FORM_HEAD_MAX)
				return fail(f, "form fields before the file over the limit");
		}
	}
	*used = n;
	return S3_FORM_MORE;
}

int s3_form_finish(s3_form_t *f)
{
	if (!f->file_seen) {
		snprintf(f->err, sizeof(f->err), "POST requires exactly one file upload per request.");
		return AIS_ERR;
	}
	if (!f->file_done) {
		snprintf(f->err, sizeof(f->err), "the form ended before the file's closing boundary");
		return AIS_ERR;
	}
	return AIS_OK;
}

const char *s3_form_get(const s3_form_t *f, const char *name, size_t *len)
{
	for (size_t i = 0; i < f->nfields; i++) {
		if (!strcasecmp(f->fields[i].name, name)) {
			if (len)
				*len = f->fields[i].len;
			return f->fields[i].value;
		}
	}
	return NULL;
}

/* --- the signature ----------------------------------------------------------- */

static bool ct_eq(const char *a, size_t al, const char *b, size_t bl)
{
	return al == bl && CRYPTO_memcmp(a, b, al) == 0;
}

int s3_post_verify(const s3_authcfg_t *cfg, const s3_form_t *f, int64_t now_s, s3_auth_t *out, s3_autherr_t *err)
{
	size_t plen = 0, sl = 0;
	const char *policy = s3_form_get(f, "policy", &plen);
	const char *algo = s3_form_get(f, "x-amz-algorithm", NULL);
	const char *cred = s3_form_get(f, "x-amz-credential", NULL);
	const char *v2key = s3_form_get(f, "AWSAccessKeyId", NULL);
	(void)now_s;
	memset(out, 0, sizeof(*out));
	if (!cfg->enabled) {
		out->kind = S3_AUTH_OFF;
		return AIS_OK;
	}
	if (!algo && !cred && !v2key) {
		out->kind = S3_AUTH_ANON; /* the bucket's ACL and policy decide */
		return AIS_OK;
	}
	if (!policy) {
		s3_err(err, 400, "InvalidArgument", "Bucket POST must contain a field named 'policy'.");
		return AIS_ERR;
	}
	if (v2key && !algo) {
		const char *sig = s3_form_get(f, "signature", &sl);
		if (!sig) {
			s3_err(err, 400, "InvalidArgument", "Bucket POST must contain a field named 'signature'.");
			return AIS_ERR;
		}
		const s3_key_t *k = s3_find_key(cfg, sv_from(v2key), err);
		if (!k)
			return AIS_ERR;
		if (!s3_v2_match(k->secret_key, policy, plen, (sv_t){sig, sl})) {
			s3_err(err, 403, "SignatureDoesNotMatch",
			       "The request signature we calculated does not match the signature you provided.");
			return AIS_ERR;
		}
		out->kind = S3_AUTH_PRESIGNED;
		out->key = k;
		return AIS_OK;
	}
	const char *date = s3_form_get(f, "x-amz-date", NULL);
	const char *sig = s3_form_get(f, "x-amz-signature", &sl);
	s3_cred_t c;
	if (!algo || strcmp(algo, S3_ALGO)) {
		s3_err(err, 400, "InvalidArgument", "x-amz-algorithm must be " S3_ALGO);
		return AIS_ERR;
	}
	if (!cred || !date || !sig) {
		s3_err(err, 400, "InvalidArgument",
		       "Bucket POST must contain the fields x-amz-credential, x-amz-date and x-amz-signature.");
		return AIS_ERR;
	}
	if (s3_parse_cred(sv_from(cred), &c, err) != AIS_OK) {
		s3_err(err, 400, "InvalidArgument", "malformed x-amz-credential");
		return AIS_ERR;
	}
	int64_t t;
	if (s3_parse_amz_date(sv_from(date), &t) != AIS_OK || strlen(date) < 8 || memcmp(date, c.date.ptr, 8) ||
	    c.date.len != 8) {
		s3_err(err, 400, "InvalidArgument", "malformed x-amz-date, or not the credential's day");
		return AIS_ERR;
	}
	const s3_key_t *k = s3_find_key(cfg, c.access_key, err);
	if (!k)
		return AIS_ERR;
	unsigned char sk[32];
	char hex[65];
	s3_signing_key(k->secret_key, c.date, c.region, sk);
	s3_hmac_hex(sk, policy, plen, hex);
	OPENSSL_cleanse(sk, sizeof(sk));
	if (!ct_eq(hex, 64, sig, sl)) {
		s3_err(err, 403, "SignatureDoesNotMatch",
		       "The request signature we calculated does not match the signature you provided.");
		return AIS_ERR;
	}
	out->kind = S3_AUTH_PRESIGNED;
	out->key = k;
	snprintf(out->region, sizeof(out->region), "%.*s", (int)c.region.len, c.region.ptr);
	return AIS_OK;
}

/* --- the policy document ------------------------------------------------------- */

/* ISO 8601 "2030-01-01T00:00:00[.sss]Z" into seconds. */
static int iso_time(const char *s, int64_t *out)
{
	char b[17];
	size_t k = 0;
	for (const char *p = s; *p && *p != '.' && *p != 'Z' && k < 15; p++)
		if (*p != '-' && *p != ':')
			b[k++] = *p;
	if (k != 15 || !strchr(s, 'Z'))
		return AIS_ERR;
	b[k++] = 'Z';
	b[k] = '\0';
	return s3_parse_amz_date((sv_t){b, k}, out);
}

/* The value a condition names ("$key", "$bucket", "$x-amz-meta-a"). */
static bool cond_value(const s3_form_t *f, sv_t bucket, sv_t key, const char *name, sv_t *v)
{
	if (*name == '$')
		name++;
	if (!strcasecmp(name, "bucket")) {
		*v = bucket;
		return true;
	}
	if (!strcasecmp(name, "key")) {
		*v = key;
		return true;
	}
	size_t l;
	const char *s = s3_form_get(f, name, &l);
	if (!s)
		return false;
	*v = (sv_t){s, l};
	return true;
}

static int denied(s3_autherr_t *err, const char *what, json_t *c)
{
	char *txt = c ? json_dumps(c, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	s3_err(err, 403, "AccessDenied", "Invalid according to Policy: %s%s%.120s", what, txt ? ": " : "",
	       txt ? txt : "");
	free(txt);
	return AIS_ERR;
}

static int bad_policy(s3_autherr_t *err, const char *what)
{
	s3_err(err, 400, "InvalidPolicyDocument", "Invalid Policy: %s", what);
	return AIS_ERR;
}

static bool num_of(json_t *v, uint64_t *out)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return true;
	}
	if (json_is_string(v))
		return num_parse_u64(json_string_value(v), json_string_length(v), 0, UINT64_MAX, out) == AIS_OK;
	return false;
}

/* Fields the policy need not name. */
static bool field_exempt(const char *n)
{
	static const char *const ex[] = {"policy", "signature", "awsaccesskeyid", "x-amz-signature", "file"};
	for (size_t i = 0; i < ARRAY_SIZE(ex); i++)
		if (!strcasecmp(n, ex[i]))
			return true;
	/* (a checksum of the file is checked on its bytes, as S3 does without the policy) */
	return !strncasecmp(n, "x-ignore-", 9) || !strncasecmp(n, "x-amz-checksum-", 15);
}

int s3_post_policy_check(arena_t *a, const s3_form_t *f, sv_t bucket, sv_t key, int64_t now_s, uint64_t *lmin,
			 uint64_t *lmax, s3_autherr_t *err)
{
	size_t plen;
	const char *p64 = s3_form_get(f, "policy", &plen);
	*lmin = 0;
	*lmax = UINT64_MAX;
	if (!p64)
		return AIS_OK; /* an anonymous form: no conditions */
	if (plen > POLICY_MAX)
		return bad_policy(err, "too long.");
	unsigned char *doc = arena_alloc(a, plen + 1);
	long dl = s3_b64_decode((sv_t){p64, plen}, doc, plen + 1);
	if (dl < 0)
		return bad_policy(err, "the policy is not base64.");
	json_error_t je;
	json_t *root = json_loadb((const char *)doc, (size_t)dl, JSON_REJECT_DUPLICATES, &je);
	int rc = AIS_ERR;
	if (!root || !json_is_object(root)) {
		bad_policy(err, "Invalid JSON.");
		goto out;
	}
	json_t *exp = json_object_get(root, "expiration"), *conds = json_object_get(root, "conditions");
	int64_t until;
	if (!exp) {
		bad_policy(err, "Policy missing expiration.");
		goto out;
	}
	if (!json_is_string(exp) || iso_time(json_string_value(exp), &until) != AIS_OK) {
		bad_policy(err, "Invalid 'expiration' value.");
		goto out;
	}
	if (!conds || !json_is_array(conds)) {
		bad_policy(err, "Policy missing conditions.");
		goto out;
	}
	if (until < now_s) {
		denied(err, "Policy expired.", NULL);
		goto out;
	}
	bool named[S3_FORM_FIELDS] = {false};
	size_t i;
	json_t *c;
	json_array_foreach(conds, i, c) {
		const char *name = "", *want = "", *op = "eq";
		sv_t have;
		if (json_is_object(c)) {
			void *it = json_object_iter(c);
			json_t *v = it ? json_object_iter_value(it) : NULL;
			if (json_object_size(c) != 1 || !v) {
				bad_policy(err, "a condition object must have one field.");
				goto out;
			}
			if (!json_is_string(v)) {
				bad_policy(err, "a condition's value must be a string.");
				goto out;
			}
			name = json_object_iter_key(it);
			want = json_string_value(v);
			op = "eq";
		} else if (json_is_array(c) && json_array_size(c) == 3 && json_is_string(json_array_get(c, 0))) {
			op = json_string_value(json_array_get(c, 0));
			if (!strcasecmp(op, "content-length-range")) {
				if (!num_of(json_array_get(c, 1), lmin) || !num_of(json_array_get(c, 2), lmax) || *lmin > *lmax) {
					bad_policy(err, "malformed content-length-range.");
					goto out;
				}
				continue;
			}
			if (!json_is_string(json_array_get(c, 1)) || !json_is_string(json_array_get(c, 2)) ||
			    (strcasecmp(op, "eq") && strcasecmp(op, "starts-with"))) {
				bad_policy(err, "a condition must be [\"eq\"|\"starts-with\", \"$field\", \"value\"].");
				goto out;
			}
			name = json_string_value(json_array_get(c, 1));
			want = json_string_value(json_array_get(c, 2));
			if (*name != '$') {
				bad_policy(err, "a condition's field must start with '$'.");
				goto out;
			}
		} else {
			bad_policy(err, "Invalid condition.");
			goto out;
		}
		for (size_t k = 0; k < f->nfields; k++)
			if (!strcasecmp(f->fields[k].name, *name == '$' ? name + 1 : name))
				named[k] = true;
		bool ok = cond_value(f, bucket, key, name, &have);
		size_t wl = strlen(want);
		if (!ok && !wl && strcasecmp(op, "eq")) /* starts-with "": any value, none too */
			ok = true, have = (sv_t){"", 0};
		if (ok && !strcasecmp(op, "eq"))
			ok = have.len == wl && !memcmp(have.ptr, want, wl);
		else if (ok)
			ok = have.len >= wl && !memcmp(have.ptr, want, wl);
		if (!ok) {
			denied(err, "Policy Condition failed", c);
			goto out;
		}
	}
	for (size_t k = 0; k < f->nfields; k++) {
		if (!named[k] && !field_exempt(f->fields[k].name)) {
			s3_err(err, 403, "AccessDenied", "Invalid according to Policy: Extra input fields: %.64s",
			       f->fields[k].name);
			goto out;
		}
	}
	rc = AIS_OK;
out:
	json_decref(root);
	return rc;
}
