/*
 * proxy.c - a gateway (or a target that does not own the key) forwards an
 * S3 object request to the owner target unchanged: same method, path,
 * query and headers (Host included, so a SigV4 signature still verifies
 * there), and relays the answer's status, headers and body (but the
 * hop-by-hop ones and the target's Ais-Local-Socket, a path on its host).
 * It adds who the client is (S3_CLIENT_HDR: address, TLS) for the
 * target's bucket policy, a node header signed for that target under
 * cluster.secret (authz_fwd_lines), and copies no node header nor
 * signature of them from the client's request.
 *
 * The bytes go over the node-to-node transport (xp.h, on this worker's
 * event loop; TLS to https peers). Both directions are bounded (PX_BUF
 * bytes): the client's body is read only while the transport has less
 * than that to send (on_room), and the target's answer is read only while
 * the client's buffer has room (xp_pause, xp_resume when it drained).
 * So a proxied transfer of any size holds at most 2 x PX_BUF, and a slow
 * side slows the other down through TCP. A large sized answer between two
 * plain TCP sockets is not read at all: the transport splices it into a
 * pipe of PX_BUF bytes and the response from there to the client, in
 * segments of PX_SEG; the transport stops when the pipe is full and goes
 * on after each segment (kernel memory of one pipe, no user-space copy;
 * the target's socket is read as the client reads, never left for long).
 * A large sized request body (PUT, UploadPart) between two plain TCP
 * sockets goes the same way towards the target: the server splices the
 * client's socket into a pipe of PX_BUF bytes (http_req_splice_to) and the
 * transport splices the pipe into the target's socket (xp_splice_from);
 * on_room counts the pipe's bytes, and each write out of the pipe resumes
 * the client (on_drain), so a slow target stops the reads from the client.
 * A sized answer keeps its Content-Length; a target that fails or stalls
 * (net.body_timeout without progress) mid-body makes the client's
 * connection close (never a short body that looks complete).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "aisd/authz.h"
#include "aisd/httpc.h" /* httpc_header_next */
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
#define PX_SPLICE (1u << 20) /* a body this big is spliced, either way (plain TCP both sides) */
#define PX_SEG (256u << 10)  /* pipe bytes per response segment: the transport resumes after each */

struct px {
	s3_rq_t *r;
	xp_req_t *xr;         /* the request to the owner (NULL once it ended) */
	buf_t down;           /* the answer's body not yet handed to the client */
	size_t down_off;
	bool up_end;
	int upipe[2];         /* a spliced request body: the pipe between the two sockets, else -1 */
	int pipe[2];          /* a spliced answer: the pipe between the two sockets, else -1 */
	uint64_t piped;       /* bytes in the pipe not yet handed to the response */
	bool head_sent, done, failed;
	int status;           /* the target's answer */
	char *rhdrs;
	size_t rhdrs_len;
};

/* The headers of one hop, which the transport (or this node's server)
 * writes itself. A request's Date is not one of them: it travels, as a
 * SigV4 signature may date the request by it and sign it. */
static bool hop_by_hop(sv_t n)
{
	static const char *const h[] = {"Connection", "Keep-Alive", "Transfer-Encoding", "Content-Length",
					"Expect", "Proxy-Connection", "TE", "Trailer", "Upgrade"};
	for (size_t i = 0; i < ARRAY_SIZE(h); i++)
		if (sv_eqcase(n, sv_from(h[i])))
			return true;
	return false;
}

/* An answer's header this node does not relay: the hop's own, and Date and
 * Server, which this node's server sets on every answer. */
static bool resp_own(sv_t n)
{
	return hop_by_hop(n) || sv_eqcase(n, SV("Date")) || sv_eqcase(n, SV("Server"));
}

static void px_cleanup(void *arg)
{
	struct px *x = arg;
	if (x->xr)
		xp_cancel(x->xr);
	x->xr = NULL;
	buf_free(&x->down);
	for (int i = 0; i < 2; i++) {
		if (x->pipe[i] >= 0)
			close(x->pipe[i]);
		if (x->upipe[i] >= 0)
			close(x->upipe[i]);
	}
}

/* A pipe of PX_BUF bytes (the default 64 KiB if refused). false: none. */
static bool px_pipe(int p[2])
{
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC)) {
		p[0] = p[1] = -1;
		return false;
	}
	fcntl(p[1], F_SETPIPE_SZ, PX_BUF);
	return true;
}

/* --- client -> target ---------------------------------------------------------- */

static int up_body(http_req_t *req, const char *p, size_t n)
{
	struct px *x = ((s3_rq_t *)req->state)->op;
	if (x->xr) /* straight into the transport's buffer, or (p NULL) n more bytes in the pipe */
		xp_send(x->xr, p, n);
	return AIS_OK;
}

static size_t up_room(http_req_t *req)
{
	struct px *x = ((s3_rq_t *)req->state)->op;
	size_t have = x->xr ? xp_pending(x->xr) : 0;
	return have >= PX_BUF ? 0 : PX_BUF - have;
}

static void up_end(http_req_t *req)
{
	struct px *x = ((s3_rq_t *)req->state)->op;
	x->up_end = true;
	if (x->xr)
		xp_end(x->xr);
}

/* --- target -> client ---------------------------------------------------------- */

static int px_fill(http_req_t *req, buf_t *out)
{
	struct px *x = ((s3_rq_t *)req->state)->op;
	size_t have = x->down.len - x->down_off;
	if (x->xr) /* room in the buffer (made below) or in the pipe (the last segment is out) */
		xp_resume(x->xr);
	if (!have && x->piped) { /* (after the bytes that came with the head) */
		uint64_t k = MIN(x->piped, (uint64_t)PX_SEG);
		http_resp_stream_pipe(req, x->pipe[0], k);
		x->piped -= k;
		return AIS_OK; /* called again once they are out */
	}
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
	bool cors = http_req_header(req, "Origin").ptr != NULL;

	x->head_sent = true;
	http_resp_status(req, status);
	for (sv_t n, val; httpc_header_next(&all, &n, &val);) {
		if (sv_eqcase(n, SV("Content-Length"))) {
			if (num_parse_u64(val.ptr, val.len, 0, INT64_MAX, &v) == AIS_OK)
				clen = (int64_t)v;
		} else if (cors && (sv_casestartswith(n, "Access-Control-") || sv_eqcase(n, SV("Vary")))) {
			/* this node set the request's CORS headers (corsop.c rule 2) */
		} else if (!resp_own(n) && !sv_eqcase(n, SV(HTTP_HDR_LOCAL_SOCKET))) {
			/* (the target's unix socket means something on its host only:
			 * this node's server names its own to its same-host clients) */
			http_resp_header_sv(req, n, val);
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

/* --- the transport's callbacks ---------------------------------------------------- */

static void xp_head(xp_req_t *r, void *arg, int status, sv_t hdrs, int64_t clen)
{
	struct px *x = arg;
	x->status = status;
	x->rhdrs = arena_strndup(x->r->http->arena, hdrs.ptr, hdrs.len);
	x->rhdrs_len = hdrs.len;
	/* the client's upload stops here if the target answered before the end */
	if (clen < PX_SPLICE || !http_resp_can_splice(x->r->http) || x->r->http->method == HTTP_HEAD)
		return;
	if (!px_pipe(x->pipe))
		return; /* (relayed through memory) */
	if (!xp_splice_to(r, x->pipe[1])) { /* (TLS to the target) */
		close(x->pipe[0]);
		close(x->pipe[1]);
		x->pipe[0] = x->pipe[1] = -1;
	}
}

static void xp_data(xp_req_t *r, void *arg, const char *p, size_t n)
{
	struct px *x = arg;
	if (p)
		buf_add(&x->down, p, n);
	else
		x->piped += n;
	if (p && x->down.len - x->down_off >= PX_BUF)
		xp_pause(r);
	/* a small answer waits for its end (xp_fin sends it in one write);
	 * a bigger one starts streaming */
	if (!x->head_sent && (x->piped || x->down.len - x->down_off >= PX_SMALL ||
			      (x->r->http->has_body && !x->up_end)))
		send_head(x, x->status, (sv_t){x->rhdrs, x->rhdrs_len}, false);
	else if (x->head_sent)
		http_resp_stream_wake(x->r->http);
}

static void xp_drain(xp_req_t *r, void *arg)
{
	struct px *x = arg;
	(void)r;
	http_req_resume(x->r->http); /* (if on_room said 0, or the pipe was full) */
}

static void xp_fin(xp_req_t *r, void *arg, int err, const char *msg)
{
	struct px *x = arg;
	s3_rq_t *rq = x->r;
	(void)r;
	x->xr = NULL; /* freed when this returns */
	if (err)
		log_warnx("S3 proxy: %s%s", msg, x->head_sent ? " (the client's answer is cut short)" : "");
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

static int px_start(s3_rq_t *r, const char *url_base, unsigned hops, uint64_t prev, sv_t pre)
{
	http_req_t *req = r->http;
	struct px *x = arena_zalloc(req->arena, sizeof(*x));
	buf_t hb = BUF_INIT; /* the request's header lines, as forwarded */
	char hop[64] = "";

	x->r = r;
	x->pipe[0] = x->pipe[1] = -1;
	x->upipe[0] = x->upipe[1] = -1;
	r->op = x;
	if (!xp_supports(url_base)) {
		s3_error(r, "ServiceUnavailable", "the owner target %s cannot be reached (TLS settings: see the log)",
			 url_base);
		return AIS_OK;
	}
	buf_grow(&hb, 1024); /* (a request's head, without reallocs on the way) */
	if (hops)
		snprintf(hop, sizeof(hop), "%s: %u\r\n", OL_HOP_HDR, hops);
	buf_addstr(&hb, hop);
	if (prev) { /* signed for this path: the old holder serves no client's own */
		buf_addf(&hb, "%s: ", OL_PREV_HDR);
		authz_prev_value(prev, req->path, &hb);
		buf_addstr(&hb, "\r\n");
	}
	{ /* who the client is, for the serving target's bucket policy (policy.c):
	   * a node header, signed for the target (authz.h) */
		char addr[64], client[80];
		bool tls;
		const char *vals[AUTHZ_NODE_HDRS] = {NULL};
		s3_client(r, addr, sizeof(addr), &tls);
		snprintf(client, sizeof(client), "%s %d", addr, tls ? 1 : 0);
		vals[0] = client; /* AUTHZ_HDR_S3_CLIENT */
		authz_fwd_lines(http_method_name(req->method), url_base, req->target, vals, &hb);
	}
	for (size_t i = 0; i < req->nhdrs; i++) {
		if (hop_by_hop(req->hdrs[i].name) || sv_eqcase(req->hdrs[i].name, SV(OL_HOP_HDR)) ||
		    sv_eqcase(req->hdrs[i].name, SV(OL_PREV_HDR)) || authz_node_header(req->hdrs[i].name))
			continue;
		buf_addsv(&hb, req->hdrs[i].name);
		buf_add(&hb, ": ", 2);
		buf_addsv(&hb, req->hdrs[i].value);
		buf_add(&hb, "\r\n", 2);
	}
	xp_spec_t xs = {
		.base = url_base,
		.method = http_method_name(req->method),
		.target = req->target,
		.header_block = sv_of(&hb),
		.timeout_ms = r->node.conf->body_timeout_ms, /* a target stalled mid-answer */
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
	x->xr = xp_start(http_req_base(req), &xs); /* (copies the header lines) */
	buf_free(&hb);
	if (pre.len) { /* (copied into the transport's buffer) */
		xp_send(x->xr, pre.ptr, pre.len);
		return AIS_OK;
	}
	/* a large sized body between two plain TCP sockets: spliced */
	if (req->content_length >= PX_SPLICE && http_resp_can_splice(req) && !strncmp(url_base, "http://", 7) &&
	    px_pipe(x->upipe) && xp_splice_from(x->xr, x->upipe[0]) && !http_req_splice_to(req, x->upipe[1]))
		log_errx("S3 proxy: the request body cannot be spliced after all");
	return AIS_OK;
}

int s3_proxy(s3_rq_t *r, const char *url_base, unsigned hops, uint64_t prev)
{
	return px_start(r, url_base, hops, prev, (sv_t){"", 0});
}

int s3_proxy_pre(s3_rq_t *r, const char *url_base, unsigned hops, sv_t pre)
{
	return px_start(r, url_base, hops, 0, pre);
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
