/*
 * proxy.c - a gateway (or a target that does not own the key) forwards an
 * S3 object request to the owner target unchanged: same method, path,
 * query and headers (Host included, so a SigV4 signature still verifies
 * there), and relays the answer's status, headers and body.
 *
 * Both directions stream through one bounded buffer each (PX_BUF bytes):
 * the client's body is read only while its buffer has room (on_room) and
 * the target's body is taken only while the client's has room (httpc's
 * write callback returns AIS_AGAIN, resumed when the client drained it).
 * So a proxied transfer of any size holds at most 2 x PX_BUF, and a slow
 * side slows the other down through TCP. A sized answer keeps its
 * Content-Length; a target that fails mid-body makes the client's
 * connection close (never a short body that looks complete).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "aisd/httpc.h"
#include "aisd/log.h"
#include "aisd/place.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "s3api.h"
#include "aisd/banned.h"

#define PX_BUF (1u << 20)
#define PX_PIECE (256u << 10)
#define PX_REF (16u << 10)   /* a piece this big is sent from its buffer (http: HTTP_PIECE_REF) */
#define PX_SMALL (64u << 10) /* an answer this small goes out in one send, head and body */
#define PX_TIMEOUT_MS (24ull * 3600 * 1000) /* stalls are cut by the client side's timeouts */

struct px {
	s3_rq_t *r;
	httpc_req_t *hr;  /* over https: libcurl */
	xp_req_t *xr;     /* over plain http: the node-to-node transport */
	const char **hdrs;
	buf_t up, down;
	size_t up_off, down_off;
	bool up_end, up_wait; /* httpc waits for client bytes */
	bool client_paused;   /* on_room said 0 */
	bool down_wait;       /* httpc paused: our buffer was full */
	bool head_sent, done, failed;
	int status;       /* the target's answer (xp) */
	char *rhdrs;
	size_t rhdrs_len;
};

static bool hop_by_hop(sv_t n)
{
	static const char *const h[] = {"Connection", "Keep-Alive", "Transfer-Encoding", "Content-Length",
					"Expect", "Proxy-Connection", "TE", "Trailer", "Upgrade", "Date",
					"Server"};
	for (size_t i = 0; i < ARRAY_SIZE(h); i++)
		if (sv_eqcase(n, sv_from(h[i])))
			return true;
	return false;
}

static void px_cleanup(void *arg)
{
	struct px *x = arg;
	if (x->hr)
		httpc_cancel(x->hr);
	x->hr = NULL;
	if (x->xr)
		xp_cancel(x->xr);
	x->xr = NULL;
	buf_free(&x->up);
	buf_free(&x->down);
}

static void httpc_release(void *c) { httpc_free(c); }

/* One client per worker thread (a worker's requests all run on it), freed
 * when the server stops (after the worker's connections, whose cleanups
 * cancel their requests). */
static __thread httpc_t *tl_client;
static __thread struct event_base *tl_base;

static __thread bool worker_pool_set;
static void pool_release(void *base)
{
	xp_pool_free(base);
	worker_pool_set = false;
}

static httpc_t *worker_client(http_req_t *req)
{
	struct event_base *base = http_req_base(req);
	if (!tl_client || tl_base != base) {
		httpc_opts_t o = {.max_host_conns = 64, .user_agent = "aisd-s3-proxy", .retries = -1};
		tl_client = httpc_new(base, &o);
		tl_base = base;
		http_worker_atexit(req, httpc_release, tl_client);
	}
	return tl_client;
}

/* --- client -> target ---------------------------------------------------------- */

static int up_body(http_req_t *req, const char *p, size_t n)
{
	struct px *x = ((s3_rq_t *)req->state)->op;
	if (x->xr) {
		xp_send(x->xr, p, n); /* straight into the transport's buffer */
		return AIS_OK;
	}
	buf_add(&x->up, p, n);
	if (x->up_wait && x->hr) {
		x->up_wait = false;
		httpc_resume(x->hr);
	}
	return AIS_OK;
}

static size_t up_room(http_req_t *req)
{
	struct px *x = ((s3_rq_t *)req->state)->op;
	size_t have = x->xr ? xp_pending(x->xr) : x->up.len - x->up_off;
	if (have >= PX_BUF) {
		x->client_paused = true;
		return 0;
	}
	return PX_BUF - have;
}

static void up_end(http_req_t *req)
{
	struct px *x = ((s3_rq_t *)req->state)->op;
	x->up_end = true;
	if (x->xr)
		xp_end(x->xr);
	if (x->up_wait && x->hr) {
		x->up_wait = false;
		httpc_resume(x->hr);
	}
}

static int px_read(httpc_req_t *hr, void *arg, char *p, size_t cap, size_t *n)
{
	struct px *x = arg;
	size_t have = x->up.len - x->up_off;
	*n = 0;
	/* The target answered before taking the whole body (an error): the
	 * client's connection stops reading it and closes after the answer, so
	 * the upload ends here too (else both sides would wait for ever). */
	if (x->head_sent && !x->up_end)
		return AIS_ERR;
	if (have) {
		*n = MIN(have, cap);
		memcpy(p, x->up.ptr + x->up_off, *n);
		x->up_off += *n;
		if (x->up_off == x->up.len)
			x->up.len = x->up_off = 0;
		else if (x->up_off > PX_BUF) {
			buf_consume(&x->up, x->up_off);
			x->up_off = 0;
		}
		if (x->client_paused) {
			x->client_paused = false;
			http_req_resume(x->r->http);
		}
		return x->up_end && x->up.len == x->up_off ? AIS_DONE : AIS_OK;
	}
	if (x->up_end)
		return AIS_DONE;
	x->up_wait = true;
	return AIS_AGAIN;
}

/* --- target -> client ---------------------------------------------------------- */

static int px_fill(http_req_t *req, buf_t *out)
{
	struct px *x = ((s3_rq_t *)req->state)->op;
	size_t have = x->down.len - x->down_off;
	if (have) {
		if (!x->down_off && !out->len && have >= PX_REF) {
			/* the whole buffer becomes the piece (sent from it, not
			 * copied), and the piece's old buffer receives next */
			buf_t tmp = *out;
			*out = x->down;
			x->down = tmp;
			x->down.len = 0;
			buf_grow(&x->down, PX_BUF); /* (no reallocs while it fills again) */
		} else {
			size_t k = MIN(have, PX_PIECE);
			buf_add(out, x->down.ptr + x->down_off, k);
			x->down_off += k;
			if (x->down_off == x->down.len)
				x->down.len = x->down_off = 0;
		}
		if (x->down_wait) {
			x->down_wait = false;
			if (x->hr)
				httpc_resume(x->hr);
			if (x->xr)
				xp_resume(x->xr);
		}
		return AIS_OK;
	}
	if (x->failed)
		return AIS_ERR;
	return x->done ? AIS_DONE : AIS_AGAIN;
}

/* Relays the target's status and headers, then the body (if any). */
static void send_head(struct px *x, int status, sv_t all, bool ended)
{
	http_req_t *req = x->r->http;
	int64_t clen = -1;
	uint64_t v;

	x->head_sent = true;
	if (x->up_wait && !x->up_end && x->hr) {
		x->up_wait = false;
		httpc_resume(x->hr); /* px_read ends the upload */
	}
	http_resp_status(req, status);
	for (sv_t n, val; httpc_header_next(&all, &n, &val);) {
		if (sv_eqcase(n, SV("Content-Length"))) {
			if (num_parse_u64(val.ptr, val.len, 0, INT64_MAX, &v) == AIS_OK)
				clen = (int64_t)v;
		} else if (!hop_by_hop(n)) {
			http_resp_header(req, arena_strndup(req->arena, n.ptr, n.len), "%.*s", (int)val.len, val.ptr);
		}
	}
	if (req->method == HTTP_HEAD) {
		http_resp_send_head(req, clen >= 0 ? (uint64_t)clen : 0);
		return;
	}
	size_t have = x->down.len - x->down_off;
	if (ended && (clen < 0 || (uint64_t)clen == have)) {
		/* the whole answer is here: head and body in one write (which
		 * copies it, and may complete the request and free x: last) */
		const char *body = have ? x->down.ptr + x->down_off : "";
		x->down_off = x->down.len;
		http_resp_send(req, body, have);
	} else if (clen >= 0)
		http_resp_send_stream_len(req, px_fill, (uint64_t)clen);
	else
		http_resp_send_stream(req, px_fill);
}

/* --- over the node-to-node transport (plain http) ---------------------------------- */

static void xp_head(xp_req_t *r, void *arg, int status, sv_t hdrs, int64_t clen)
{
	struct px *x = arg;
	x->status = status;
	x->rhdrs = arena_strndup(x->r->http->arena, hdrs.ptr, hdrs.len);
	x->rhdrs_len = hdrs.len;
	/* the client's upload stops here if the target answered before the end */
	(void)r, (void)clen;
}

static void xp_data(xp_req_t *r, void *arg, const char *p, size_t n)
{
	struct px *x = arg;
	buf_add(&x->down, p, n);
	if (x->down.len - x->down_off >= PX_BUF) {
		x->down_wait = true;
		xp_pause(r);
	}
	/* a small answer waits for its end (xp_fin sends it in one write);
	 * a bigger one starts streaming */
	if (!x->head_sent && (x->down.len - x->down_off >= PX_SMALL || (x->r->http->has_body && !x->up_end)))
		send_head(x, x->status, (sv_t){x->rhdrs, x->rhdrs_len}, false);
	else if (x->head_sent)
		http_resp_stream_wake(x->r->http);
}

static void xp_drain(xp_req_t *r, void *arg)
{
	struct px *x = arg;
	(void)r;
	if (x->client_paused) {
		x->client_paused = false;
		http_req_resume(x->r->http);
	}
}

static void xp_fin(xp_req_t *r, void *arg, int err, const char *msg)
{
	struct px *x = arg;
	s3_rq_t *rq = x->r;
	(void)r;
	x->xr = NULL; /* freed when this returns */
	if (err && !x->head_sent)
		log_warnx("S3 proxy: %s", msg);
	if (!x->head_sent) {
		if (!err) {
			x->done = true;
			send_head(x, x->status, (sv_t){x->rhdrs ? x->rhdrs : "", x->rhdrs_len}, true);
		} else {
			s3_error(rq, err == ECONNREFUSED || err == EHOSTUNREACH ? "ServiceUnavailable" : "InternalError",
				 "the owner target did not answer: %s", msg);
		}
		return;
	}
	/* the answer may complete inside the call below, and the request's
	 * arena (x with it) be reset: nothing touches x after it */
	x->done = true;
	x->failed = err != 0;
	http_resp_stream_wake(rq->http);
}

static int px_write(httpc_req_t *hr, void *arg, const char *p, size_t n)
{
	struct px *x = arg;
	if (x->down.len - x->down_off >= PX_BUF) {
		x->down_wait = true;
		return AIS_AGAIN;
	}
	buf_add(&x->down, p, n);
	/* a small answer waits for its end (px_done sends it in one write);
	 * a bigger one starts streaming */
	if (!x->head_sent && (x->down.len - x->down_off >= PX_SMALL || (x->r->http->has_body && !x->up_end)))
		send_head(x, httpc_status(hr), httpc_resp_headers(hr), false); /* (an early answer to an upload: px_read ends it) */
	else if (x->head_sent)
		http_resp_stream_wake(x->r->http);
	return AIS_OK;
}

static void px_done(httpc_req_t *hr, void *arg)
{
	struct px *x = arg;
	s3_rq_t *r = x->r;
	bool ok = httpc_result(hr) == AIS_OK;

	/* the answer may complete inside the calls below, and the request's
	 * arena (x with it) be reset: nothing touches x after them */
	x->hr = NULL;
	if (!ok && !x->head_sent)
		log_warnx("S3 proxy %s %s: %s", httpc_method(hr), httpc_url(hr), httpc_error(hr));
	if (!x->head_sent) {
		if (ok) {
			x->done = true;
			send_head(x, httpc_status(hr), httpc_resp_headers(hr), true);
		} else {
			s3_error(r, httpc_errkind(hr) == HTTPC_E_CONNECT ? "ServiceUnavailable" : "InternalError",
				 "the owner target did not answer: %s", httpc_error(hr));
		}
		return;
	}
	x->done = true;
	x->failed = !ok;
	http_resp_stream_wake(r->http);
}

int s3_proxy(s3_rq_t *r, const char *url_base, unsigned hops)
{
	http_req_t *req = r->http;
	struct px *x = arena_zalloc(req->arena, sizeof(*x));
	buf_t url = BUF_INIT;
	size_t nh = 0;

	x->r = r;
	r->op = x;
	x->hdrs = arena_zalloc(req->arena, (req->nhdrs + 2) * sizeof(*x->hdrs));
	if (hops)
		x->hdrs[nh++] = arena_printf(req->arena, "%s: %u", OL_HOP_HDR, hops);
	for (size_t i = 0; i < req->nhdrs; i++) {
		if (hop_by_hop(req->hdrs[i].name) || sv_eqcase(req->hdrs[i].name, SV(OL_HOP_HDR)))
			continue;
		/* curl drops "Name:" with nothing after it; "Name;" sends it empty
		 * (the transport sends lines as they are) */
		if (!sv_trim(req->hdrs[i].value).len && !xp_supports(url_base))
			x->hdrs[nh++] = arena_printf(req->arena, "%.*s;", (int)req->hdrs[i].name.len,
						     req->hdrs[i].name.ptr);
		else
			x->hdrs[nh++] = arena_printf(req->arena, "%.*s: %.*s", (int)req->hdrs[i].name.len,
						     req->hdrs[i].name.ptr, (int)req->hdrs[i].value.len,
						     req->hdrs[i].value.ptr);
	}
	if (xp_supports(url_base)) {
		xp_spec_t xs = {
			.base = url_base,
			.method = http_method_name(req->method),
			.target = req->target,
			.headers = x->hdrs,
			/* an empty body keeps its Content-Length: 0 (a signed header) */
			.body_len = req->has_body ? (req->content_length >= 0 ? req->content_length : -2)
				    : http_req_has_header(req, "Content-Length") ? 0 : -1,
			.on_head = xp_head,
			.on_body = xp_data,
			.on_drain = xp_drain,
			.on_done = xp_fin,
			.arg = x,
		};
		if (req->has_body) {
			req->on_body = up_body;
			req->on_room = up_room;
			req->on_body_end = up_end;
		}
		arena_cleanup_add(req->arena, px_cleanup, x);
		if (!worker_pool_set) {
			worker_pool_set = true;
			http_worker_atexit(req, pool_release, http_req_base(req));
		}
		x->xr = xp_start(http_req_base(req), &xs);
		return AIS_OK;
	}
	buf_addf(&url, "%s%.*s", url_base, (int)req->path.len, req->path.ptr);
	if (req->query.len)
		buf_addf(&url, "?%.*s", (int)req->query.len, req->query.ptr);
	httpc_spec_t s = {
		.method = http_method_name(req->method),
		.url = url.ptr,
		.headers = x->hdrs,
		.write = px_write,
		.timeout_ms = PX_TIMEOUT_MS,
		/* big buffers for an upload of more than a MiB (fewer callbacks,
		 * copies and system calls); not for GETs: most are small, and a
		 * 512 KiB buffer per request cost more than it saved */
		.flags = HTTPC_F_NO_RETRY |
			 (req->content_length > (1 << 20) || (req->has_body && req->content_length < 0)
				  ? HTTPC_F_BIG_BUF
				  : 0),
		.done = px_done,
		.arg = x,
	};
	if (req->has_body) {
		s.read = px_read;
		s.read_len = req->content_length >= 0 ? req->content_length : -1;
		req->on_body = up_body;
		req->on_room = up_room;
		req->on_body_end = up_end;
	}
	arena_cleanup_add(req->arena, px_cleanup, x);
	x->hr = httpc_start(worker_client(req), &s);
	buf_free(&url);
	if (!x->hr)
		s3_error(r, "ServiceUnavailable", "stopping");
	return AIS_OK;
}

bool s3_place(s3_node_t *nd, sv_t bck, sv_t key, char *out, size_t outsz, int *self)
{
	cluster_where_t w;
	cluster_where(nd->cl, bck, key, !nd->gateway, &w, NULL, 0);
	if (!w.bucket || !w.n)
		return false;
	snprintf(out, outsz, "%s", w.owner_intra);
	*self = w.self;
	return true;
}
