/*
 * metrics.c - GET /metrics on every node: the Prometheus text exposition
 * (format 0.0.4) of the process-wide registry (metrics.h: the HTTP
 * server's counters and whatever other subsystems registered) followed by
 * what this node is: its identity, uptime, map versions, log line counts
 * and, on a target, objects, bytes and capacity per mountpath.
 *
 * The scrape runs on the I/O pool (statvfs and the registry lock may
 * block), never on an event loop; the workers' counters are read with
 * relaxed loads, so a scrape never slows requests down.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/cluster.h"
#include "aisd/log.h"
#include "aisd/metrics.h"
#include "aisd/status.h"
#include "aisd/store.h"
#include "aisd/util.h"
#include "aisd/version.h"
#include "aisd/banned.h"

#define METRICS_MAX_MP 64


static void gauge1(buf_t *out, const char *name, const char *help, unsigned long long v, const char *type)
{
	metrics_family(out, name, type, help);
	buf_addf(out, "%s %llu\n", name, v);
}

static void node_metrics(node_base_t *nb, buf_t *out)
{
	const char *id = nb->cl ? cluster_self(nb->cl)->id : "";
	uint64_t cv = 0, bv = 0;

	metrics_family(out, "aisd_node_info", "gauge", "this node: id, role and version (value 1)");
	buf_addstr(out, "aisd_node_info{");
	metrics_label(out, "id", id, strlen(id));
	buf_addf(out, ",role=\"%s\",version=\"%s\"} 1\n", nb->store ? "target" : "gateway", AISD_VERSION);
	gauge1(out, "aisd_uptime_seconds", "seconds since the process started",
	       (unsigned long long)time_uptime_s(), "gauge");
	if (nb->cl) {
		const cmap_t *m;
		const bmd_t *b;
		cluster_read_lock(nb->cl, &m, &b);
		cv = m ? cmap_version(m) : 0;
		bv = b ? bmd_version(b) : 0;
		cluster_read_unlock(nb->cl);
	}
	gauge1(out, "aisd_cluster_map_version", "version of the cluster map this node holds (0: none)", cv, "gauge");
	gauge1(out, "aisd_bmd_version", "version of the bucket metadata this node holds (0: none)", bv, "gauge");
	metrics_family(out, "aisd_log_messages_total", "counter", "log lines written at warning and error level");
	buf_addf(out, "aisd_log_messages_total{level=\"warn\"} %lu\n", log_warn_count());
	buf_addf(out, "aisd_log_messages_total{level=\"error\"} %lu\n", log_error_count());
	if (!nb->store)
		return;

	store_mp_stats_t *st = xcalloc(METRICS_MAX_MP, sizeof(*st));
	int n = 0;
	store_stats(nb->store, st, METRICS_MAX_MP, &n); /* a failed statvfs leaves zeros */
	static const struct {
		const char *name, *help;
		size_t off;
	} fams[] = {
		{"aisd_mountpath_objects", "objects stored on the mountpath", offsetof(store_mp_stats_t, objects)},
		{"aisd_mountpath_object_bytes", "bytes of the objects stored on the mountpath",
		 offsetof(store_mp_stats_t, bytes)},
		{"aisd_mountpath_capacity_bytes", "size of the mountpath's file system",
		 offsetof(store_mp_stats_t, total_bytes)},
		{"aisd_mountpath_free_bytes", "free bytes on the mountpath's file system",
		 offsetof(store_mp_stats_t, free_bytes)},
		{"aisd_mountpath_reconcile_walked",
		 "object files the start-up reconcile walked (only a store without crash hints is walked, once)",
		 offsetof(store_mp_stats_t, rc_walked)},
		{"aisd_mountpath_reconcile_hints", "crash hints the start-up reconcile checked",
		 offsetof(store_mp_stats_t, rc_hints)},
	};
	for (size_t f = 0; f < ARRAY_SIZE(fams); f++) {
		metrics_family(out, fams[f].name, "gauge", fams[f].help);
		for (int i = 0; i < n; i++) {
			buf_addf(out, "%s{", fams[f].name);
			metrics_label(out, "mountpath", st[i].path, strlen(st[i].path));
			buf_addf(out, "} %llu\n", (unsigned long long)*(uint64_t *)((char *)&st[i] + fams[f].off));
		}
	}
	static const struct {
		const char *name, *help;
		size_t off;
	} flags[] = {
		{"aisd_mountpath_counting", "1 while the start-up count of the mountpath's objects is still running",
		 offsetof(store_mp_stats_t, counting)},
		{"aisd_mountpath_faulted",
		 "1 when the mountpath failed at run time (gone, replaced or read-only) and is out of use",
		 offsetof(store_mp_stats_t, faulted)},
	};
	for (size_t f = 0; f < ARRAY_SIZE(flags); f++) {
		metrics_family(out, flags[f].name, "gauge", flags[f].help);
		for (int i = 0; i < n; i++) {
			buf_addf(out, "%s{", flags[f].name);
			metrics_label(out, "mountpath", st[i].path, strlen(st[i].path));
			buf_addf(out, "} %d\n", *(bool *)((char *)&st[i] + flags[f].off) ? 1 : 0);
		}
	}
	free(st);

	store_hot_stats_t hs;
	store_hot_stats(nb->store, &hs);
	gauge1(out, "aisd_hot_objects", "small objects held in memory by the hot cache (store.hot_cache)",
	       (unsigned long long)hs.entries, "gauge");
	gauge1(out, "aisd_hot_bytes", "bytes the hot cache holds", (unsigned long long)hs.bytes, "gauge");
	gauge1(out, "aisd_hot_hits_total", "reads served from the hot cache", (unsigned long long)hs.hits,
	       "counter");
	gauge1(out, "aisd_hot_misses_total", "reads of objects not in the hot cache", (unsigned long long)hs.misses,
	       "counter");
}

struct scrape {
	buf_t out;
};

static void scrape_cleanup(void *arg) { buf_free(&((struct scrape *)arg)->out); }

static void scrape_work(http_req_t *req)
{
	struct scrape *sc = req->state;
	metrics_write(&sc->out);
	node_metrics(req->ctx, &sc->out);
}

static void scrape_done(http_req_t *req)
{
	struct scrape *sc = req->state;
	http_resp_header(req, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	http_resp_send_buf(req, &sc->out);
}

int cluster_h_metrics(http_req_t *req)
{
	if (req->subpath.len) {
		http_resp_error(req, 404, "no such resource");
		return AIS_OK;
	}
	struct scrape *sc = arena_zalloc(req->arena, sizeof(*sc));
	req->state = sc;
	arena_cleanup_add(req->arena, scrape_cleanup, sc);
	http_offload(req, scrape_work, scrape_done);
	return AIS_OK;
}
