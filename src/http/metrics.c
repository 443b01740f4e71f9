/*
 * metrics.c - the HTTP server's counters and its access log.
 *
 * Each worker counts its own requests (by route, method and status class),
 * latencies (a fixed-bucket histogram), bytes, connections and errors in
 * struct http_wstats, with relaxed loads and stores only it makes; a scrape
 * (hm_collect, on an I/O pool thread) sums the workers. A count may be a
 * request behind the truth at the moment of a scrape, never wrong after it.
 * The access log is one line per request, written when it completes.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "aisd/log.h"
#include "aisd/metrics.h"
#include "aisd/util.h"
#include "aisd/banned.h"

/* Upper bounds of the latency buckets, in microseconds. */
static const uint64_t hm_bounds_us[HM_BUCKETS - 1] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
};
static const char *const hm_methods[HM_METHODS] = {"GET", "HEAD", "PUT", "POST", "DELETE", "other"};

static int method_idx(enum http_method m)
{
	switch (m) {
	case HTTP_GET: return 0;
	case HTTP_HEAD: return 1;
	case HTTP_PUT: return 2;
	case HTTP_POST: return 3;
	case HTTP_DELETE: return 4;
	default: return 5;
	}
}

/* The request target for a log line: bytes outside printable ASCII, the
 * quote and the backslash become \xHH, so a line can never be split or
 * forged by a client; long targets are cut. */
static void add_safe(buf_t *b, sv_t s, size_t max)
{
	for (size_t i = 0; i < s.len && i < max; i++) {
		unsigned char ch = (unsigned char)s.ptr[i];
		if (ch < 0x21 || ch > 0x7e || ch == '"' || ch == '\\')
			buf_addf(b, "\\x%02x", ch);
		else
			buf_addch(b, (char)ch);
	}
	if (s.len > max)
		buf_addstr(b, "...");
}

void http_target_redact(sv_t t, buf_t *out)
{
	static const char *const secret[] = {"x-amz-signature", "x-amz-security-token", "signature", "ais_rsig"};
	const char *q = t.len ? memchr(t.ptr, '?', t.len) : NULL; /* (no target: ptr NULL) */
	if (!q) {
		buf_addsv(out, t);
		return;
	}
	buf_add(out, t.ptr, (size_t)(q - t.ptr) + 1);
	sv_t rest = {q + 1, t.len - (size_t)(q - t.ptr) - 1}, k, v;
	bool first = true;
	while (http_query_next(&rest, &k, &v)) {
		bool hide = false;
		for (size_t i = 0; i < ARRAY_SIZE(secret) && !hide; i++)
			hide = sv_eqcase(k, sv_from(secret[i]));
		if (!first)
			buf_addch(out, '&');
		first = false;
		buf_addsv(out, k);
		if (hide)
			buf_addstr(out, "=REDACTED");
		else if (v.ptr != k.ptr + k.len || v.len) /* "k=v", or "k=" */
			buf_add(out, k.ptr + k.len, v.len + 1);
	}
}

void hm_request_done(http_conn_t *c)
{
	http_req_t *req = &c->req;
	struct http_wstats *st = &c->w->st;
	int64_t us = (time_now_ns() - req->start_ns) / 1000;
	if (us < 0 || !req->start_ns)
		us = 0;
	int ri = req->route ? (int)(req->route - c->w->srv->o.routes) : HM_ROUTES;
	int mi = method_idx(req->method);
	int cls = c->status / 100 - 1;
	if (cls < 0 || cls > 4)
		cls = 4;
	HM_INC(st->req[ri][mi][cls], 1);
	int b = 0;
	while (b < HM_BUCKETS - 1 && (uint64_t)us > hm_bounds_us[b])
		b++;
	HM_INC(st->lat[ri][mi][b], 1);
	HM_INC(st->lat_us[ri][mi], (uint64_t)us);

	if (!log_access_on())
		return;
	buf_t line = BUF_INIT;
	buf_t tgt = BUF_INIT;
	http_target_redact(req->target, &tgt); /* presigned URLs and signed redirects are credentials */
	buf_addf(&line, "%s \"%s ", c->peer, http_method_name(req->method));
	add_safe(&line, sv_of(&tgt), 1024);
	buf_free(&tgt);
	buf_addf(&line, "\" %d %llu %llu %lld", c->status, (unsigned long long)req->body_read,
		 (unsigned long long)c->bytes_out, (long long)us);
	log_set_request(req->id_str[0] ? req->id_str : NULL);
	log_access("%s", line.ptr);
	buf_free(&line);
}

static uint64_t ld(hm_ctr_t *x) { return atomic_load_explicit(x, memory_order_relaxed); }

/* Sums one counter (at byte offset off in struct http_wstats) over the
 * workers. */
static uint64_t sum_at(http_server_t *s, size_t off)
{
	uint64_t t = 0;
	for (int i = 0; i < s->nworkers; i++)
		t += ld((hm_ctr_t *)((char *)&s->workers[i].st + off));
	return t;
}
#define SUM(s, field) sum_at((s), (size_t)((char *)&(s)->workers[0].st.field - (char *)&(s)->workers[0].st))

uint64_t http_server_answered(http_server_t *s, const char *prefix, enum http_method m)
{
	int nr = (int)MIN(s->o.nroutes, (size_t)HM_ROUTES), mi = method_idx(m);
	uint64_t n = 0;
	for (int ri = 0; ri < nr; ri++)
		if (!strcmp(s->o.routes[ri].prefix, prefix))
			for (int k = 0; k < 5; k++)
				n += SUM(s, req[ri][mi][k]);
	return n;
}

static void route_labels(buf_t *out, http_server_t *s, int ri, int mi)
{
	const char *r = ri < (int)s->o.nroutes ? s->o.routes[ri].prefix : "none";
	metrics_label(out, "route", r, strlen(r));
	buf_addch(out, ',');
	metrics_label(out, "method", hm_methods[mi], strlen(hm_methods[mi]));
}

void hm_collect(void *arg, buf_t *out)
{
	http_server_t *s = arg;
	int nr = (int)MIN(s->o.nroutes, (size_t)HM_ROUTES);

	metrics_family(out, "aisd_http_requests_total", "counter",
		       "HTTP requests answered, by route, method and status class");
	for (int ri = 0; ri <= HM_ROUTES; ri++) {
		if (ri >= nr && ri < HM_ROUTES)
			continue;
		for (int mi = 0; mi < HM_METHODS; mi++)
			for (int k = 0; k < 5; k++) {
				uint64_t n = SUM(s, req[ri][mi][k]);
				if (!n)
					continue;
				buf_addstr(out, "aisd_http_requests_total{");
				route_labels(out, s, ri, mi);
				buf_addf(out, ",code=\"%dxx\"} %llu\n", k + 1, (unsigned long long)n);
			}
	}
	metrics_family(out, "aisd_http_request_duration_seconds", "histogram",
		       "time from a complete request head to the end of the response");
	for (int ri = 0; ri <= HM_ROUTES; ri++) {
		if (ri >= nr && ri < HM_ROUTES)
			continue;
		for (int mi = 0; mi < HM_METHODS; mi++) {
			uint64_t cum = 0, b[HM_BUCKETS];
			for (int k = 0; k < HM_BUCKETS; k++) {
				b[k] = SUM(s, lat[ri][mi][k]);
				cum += b[k];
			}
			if (!cum)
				continue;
			cum = 0;
			for (int k = 0; k < HM_BUCKETS; k++) {
				cum += b[k];
				buf_addstr(out, "aisd_http_request_duration_seconds_bucket{");
				route_labels(out, s, ri, mi);
				if (k < HM_BUCKETS - 1)
					buf_addf(out, ",le=\"%g\"} %llu\n", (double)hm_bounds_us[k] / 1e6,
						 (unsigned long long)cum);
				else
					buf_addf(out, ",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
			}
			buf_addstr(out, "aisd_http_request_duration_seconds_sum{");
			route_labels(out, s, ri, mi);
			buf_addf(out, "} %.6f\n", (double)SUM(s, lat_us[ri][mi]) / 1e6);
			buf_addstr(out, "aisd_http_request_duration_seconds_count{");
			route_labels(out, s, ri, mi);
			buf_addf(out, "} %llu\n", (unsigned long long)cum);
		}
	}
	metrics_family(out, "aisd_http_received_bytes_total", "counter", "bytes read from client sockets");
	buf_addf(out, "aisd_http_received_bytes_total %llu\n", (unsigned long long)SUM(s, bytes_in));
	metrics_family(out, "aisd_http_sent_bytes_total", "counter", "bytes written to client sockets");
	buf_addf(out, "aisd_http_sent_bytes_total %llu\n", (unsigned long long)SUM(s, bytes_out));
	metrics_family(out, "aisd_http_served_bytes_total", "counter",
		       "response bytes by where the client is: local = the unix socket (file bodies handed over as "
		       "descriptors count their length) or TCP from an address of this host; network = any other");
	buf_addf(out, "aisd_http_served_bytes_total{peer=\"local\"} %llu\n", (unsigned long long)SUM(s, served_local));
	buf_addf(out, "aisd_http_served_bytes_total{peer=\"network\"} %llu\n", (unsigned long long)SUM(s, served_net));
	metrics_family(out, "aisd_http_spliced_bytes_total", "counter",
		       "response bytes relayed from another node by splice(2), never copied through this process "
		       "(of aisd_http_sent_bytes_total)");
	buf_addf(out, "aisd_http_spliced_bytes_total %llu\n", (unsigned long long)SUM(s, spliced));
	metrics_family(out, "aisd_http_spliced_received_bytes_total", "counter",
		       "request body bytes relayed to another node by splice(2), never copied through this process "
		       "(of aisd_http_received_bytes_total)");
	buf_addf(out, "aisd_http_spliced_received_bytes_total %llu\n", (unsigned long long)SUM(s, spliced_in));
	metrics_family(out, "aisd_http_connections_open", "gauge", "client connections open now");
	buf_addf(out, "aisd_http_connections_open %lu\n", (unsigned long)atomic_load(&s->nconns));
	metrics_family(out, "aisd_http_connections_accepted_total", "counter", "client connections accepted");
	buf_addf(out, "aisd_http_connections_accepted_total %llu\n", (unsigned long long)SUM(s, accepted));
	metrics_family(out, "aisd_http_local_fds_total", "counter",
		       "file bodies handed to clients on this host as open descriptors over the unix socket");
	buf_addf(out, "aisd_http_local_fds_total %llu\n", (unsigned long long)SUM(s, fds_passed));
	metrics_family(out, "aisd_http_connections_rejected_total", "counter",
		       "connections refused with 503 because net.max_conns were open");
	buf_addf(out, "aisd_http_connections_rejected_total %llu\n", (unsigned long long)SUM(s, rejected));
	metrics_family(out, "aisd_http_connections_evicted_total", "counter",
		       "idle connections closed to make room for a new one at the connection limit");
	buf_addf(out, "aisd_http_connections_evicted_total %llu\n", (unsigned long long)SUM(s, evicted));
	metrics_family(out, "aisd_http_accept_fd_exhausted_total", "counter",
		       "accepts that failed for want of descriptors (EMFILE, ENFILE): accepting paused briefly");
	buf_addf(out, "aisd_http_accept_fd_exhausted_total %llu\n", (unsigned long long)SUM(s, emfile));
	{
		uint64_t held, budget = http_server_fd_budget(s, &held);
		metrics_family(out, "aisd_http_fds_held", "gauge",
			       "descriptors held by client connections and their requests (the descriptor budget's use)");
		buf_addf(out, "aisd_http_fds_held %llu\n", (unsigned long long)held);
		metrics_family(out, "aisd_http_fds_budget", "gauge",
			       "descriptors client connections and their requests may hold at once");
		buf_addf(out, "aisd_http_fds_budget %llu\n", (unsigned long long)budget);
	}
	metrics_family(out, "aisd_http_connections_capped_total", "counter",
		       "connections refused with 503 because their client address had net.max_conns_per_client open");
	buf_addf(out, "aisd_http_connections_capped_total %llu\n", (unsigned long long)SUM(s, client_capped));
	metrics_family(out, "aisd_http_errors_total", "counter",
		       "requests that failed before a handler answered: malformed (parse), timed out, "
		       "aborted by the client, refused by the rate limit, the body size limit or the descriptor budget");
	buf_addf(out, "aisd_http_errors_total{kind=\"parse\"} %llu\n", (unsigned long long)SUM(s, parse_errors));
	buf_addf(out, "aisd_http_errors_total{kind=\"timeout\"} %llu\n", (unsigned long long)SUM(s, timeouts));
	buf_addf(out, "aisd_http_errors_total{kind=\"aborted\"} %llu\n", (unsigned long long)SUM(s, aborted));
	buf_addf(out, "aisd_http_errors_total{kind=\"rate_limited\"} %llu\n", (unsigned long long)SUM(s, rate_limited));
	buf_addf(out, "aisd_http_errors_total{kind=\"too_large\"} %llu\n", (unsigned long long)SUM(s, too_large));
	buf_addf(out, "aisd_http_errors_total{kind=\"fd_budget\"} %llu\n", (unsigned long long)SUM(s, fd_refused));
}
