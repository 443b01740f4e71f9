/*
 * url.c - request accessors: headers by name, query parameters, percent
 * decoding, and the names of methods and statuses.
 */
#include <string.h>
#include <strings.h>

#include "aisd/http.h"
#include "aisd/status.h"
#include "aisd/banned.h"

sv_t http_req_header(const http_req_t *req, const char *name)
{
	sv_t n = sv_from(name);
	for (size_t i = 0; i < req->nhdrs; i++)
		if (sv_eqcase(req->hdrs[i].name, n))
			return req->hdrs[i].value;
	return (sv_t){NULL, 0};
}

bool http_req_has_header(const http_req_t *req, const char *name)
{
	return http_req_header(req, name).ptr != NULL;
}

void http_req_header_drop(http_req_t *req, const char *name)
{
	sv_t n = sv_from(name);
	size_t k = 0;
	for (size_t i = 0; i < req->nhdrs; i++)
		if (!sv_eqcase(req->hdrs[i].name, n))
			req->hdrs[k++] = req->hdrs[i];
	req->nhdrs = k;
}

static int hexv(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int http_pct_decode(arena_t *a, sv_t in, bool plus_space, sv_t *out)
{
	char *p = arena_alloc(a, in.len + 1);
	size_t n = 0;
	for (size_t i = 0; i < in.len; i++) {
		char ch = in.ptr[i];
		if (ch == '%') {
			if (i + 2 >= in.len)
				return AIS_ERR;
			int hi = hexv(in.ptr[i + 1]), lo = hexv(in.ptr[i + 2]);
			if (hi < 0 || lo < 0)
				return AIS_ERR;
			p[n++] = (char)(hi << 4 | lo);
			i += 2;
		} else if (ch == '+' && plus_space) {
			p[n++] = ' ';
		} else {
			p[n++] = ch;
		}
	}
	p[n] = '\0';
	*out = (sv_t){p, n};
	return AIS_OK;
}

bool http_query_next(sv_t *q, sv_t *key, sv_t *val)
{
	if (!q->len)
		return false;
	const char *amp = memchr(q->ptr, '&', q->len);
	sv_t pair = {q->ptr, amp ? (size_t)(amp - q->ptr) : q->len};
	q->ptr += pair.len + (amp ? 1 : 0);
	q->len -= pair.len + (amp ? 1 : 0);
	const char *eq = memchr(pair.ptr, '=', pair.len);
	*key = (sv_t){pair.ptr, eq ? (size_t)(eq - pair.ptr) : pair.len};
	*val = eq ? (sv_t){eq + 1, pair.len - key->len - 1} : (sv_t){pair.ptr + pair.len, 0};
	return true;
}

bool http_query_get(http_req_t *req, const char *key, sv_t *out)
{
	sv_t q = req->query, k, v, dk;
	size_t klen = strlen(key);
	while (http_query_next(&q, &k, &v)) {
		if (http_pct_decode(req->arena, k, true, &dk) != AIS_OK)
			continue;
		if (dk.len != klen || memcmp(dk.ptr, key, klen))
			continue;
		if (http_pct_decode(req->arena, v, true, out) != AIS_OK)
			*out = v;
		return true;
	}
	return false;
}

const char *http_method_name(enum http_method m) { return http_method_str(m); }

const char *http_status_text(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 413: return "Payload Too Large";
	case 414: return "URI Too Long";
	case 416: return "Range Not Satisfiable";
	case 417: return "Expectation Failed";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	case 507: return "Insufficient Storage";
	default: return "Unknown";
	}
}
