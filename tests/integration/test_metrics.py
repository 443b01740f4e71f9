"""test_metrics.py - GET /metrics on every node, scraped by a real
Prometheus server (Debian's prometheus, run here as a plain process with a
temp config and data dir, scrape_interval 1s) from a gateway and 2 targets
started on their own loopback ports under AISD_DIR.

Checks: each node's /metrics is valid text exposition (every sample line
parses, every family has HELP and TYPE before its samples, histogram buckets
are cumulative and end at +Inf = _count); the map version is the same on
all nodes; Prometheus reports all three targets up; after N PUTs and N GETs
through the gateway, the PUT and GET counters Prometheus answers through
/api/v1/query have grown by at least 2N (a 307 at the gateway and a 200 at
the owner target each), the latency histogram count and the received
bytes grew too, and the targets' object counts sum to N. Every process is
stopped by PID on the way out.
"""
# timeout: 120
import json
import os
import random
import re
import time

from itlib import T

import clulib
from clulib import follow, get, poll, procs

PROM = clulib.PROMETHEUS
B = "met"
N = 20

t = T()
clulib.init(t, "metrics", ["--set", "cluster.keepalive=300ms", "--set", "store.fsync=never"])

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? '
                    r'(-?[0-9.e+-]+|\+Inf|NaN)$')


def check_exposition(node):
    """Parses node's /metrics; returns {series: value} or None after a
    failed check."""
    r = get(node.url, "/metrics")
    if not t.check(r.status == 200 and (r.h("content-type") or "").startswith("text/plain; version=0.0.4"),
                   "%s: GET /metrics is 200 text/plain version 0.0.4" % node.name, r):
        return None
    seen_type, vals, bad = {}, {}, []
    for line in r.body.decode().splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            if name in seen_type:
                bad.append("family twice: " + name)
            seen_type[name] = typ
            continue
        m = SAMPLE.match(line)
        if not m:
            bad.append("bad line: " + line)
            continue
        fam = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
        if m.group(1) not in seen_type and fam not in seen_type:
            bad.append("sample before its TYPE: " + line)
        vals[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    # histograms: cumulative buckets ending at +Inf == _count
    for k, v in vals.items():
        if k.startswith("aisd_http_request_duration_seconds_count"):
            labels = k[len("aisd_http_request_duration_seconds_count"):]
            bk = [(float(re.search(r'le="([^"]+)"', s).group(1)), x) for s, x in vals.items()
                  if s.startswith("aisd_http_request_duration_seconds_bucket" + labels[:-1] + ",le=")]
            bk.sort()
            if not bk or bk[-1][0] != float("inf") or bk[-1][1] != v or \
                    any(bk[i][1] > bk[i + 1][1] for i in range(len(bk) - 1)):
                bad.append("histogram %s: %r count %r" % (labels, bk, v))
    t.check(not bad, "%s: every line of /metrics is valid exposition" % node.name, "\n".join(bad[:10]))
    return vals


def prom_query(port, q):
    d = clulib.prom_api(port, q)
    if not d or d.get("status") != "success":
        return None
    return d["data"]["result"]


def prom_value(port, q):
    """The single value of an instant vector query (0 when empty), or None."""
    res = prom_query(port, q)
    if res is None:
        return None
    return float(res[0]["value"][1]) if res else 0.0


g, tg = clulib.start_cluster(2)
nodes = [g] + tg


def map_version(n):
    m = re.search(rb"^aisd_cluster_map_version (\d+)$", get(n.url, "/metrics").body, re.M)
    return m and int(m.group(1))


poll(lambda: len({map_version(n) for n in nodes}) == 1, 5)

vals = {n.name: check_exposition(n) for n in nodes}
if None in vals.values():
    t.finish()
cv = {n.name: vals[n.name].get("aisd_cluster_map_version") for n in nodes}
t.check(len(set(cv.values())) == 1 and cv["g1"] >= 1, "every node reports the same map version", cv)
for x in tg:
    v = vals[x.name]
    t.check(any(k.startswith("aisd_mountpath_capacity_bytes{") and val > 0 for k, val in v.items()),
            "%s: capacity per mountpath" % x.name, [k for k in v if "mountpath" in k])
    t.check('aisd_node_info{id="%s",role="target",' % x.id in "".join(v.keys()), "%s: node info" % x.name)
t.check("aisd_http_connections_open" in vals["g1"] and "aisd_mountpath_objects" not in "".join(vals["g1"]),
        "gateway: connections gauge, no mountpath series")

# --- Prometheus ---------------------------------------------------------------
if not t.check(os.access(PROM, os.X_OK), "prometheus is installed (tools/install-deps.sh)"):
    t.finish()
pport = clulib.start_prometheus(nodes)


def all_up():
    res = prom_query(pport, 'up{job="aisd"}')
    return res is not None and len(res) == 3 and all(r["value"][1] == "1" for r in res)


if not t.check(poll(all_up, 40), "Prometheus scrapes all 3 nodes (up == 1)",
               prom_query(pport, "up") if procs["prometheus"].poll() is None else "prometheus exited"):
    t.finish()

PUTQ = 'sum(aisd_http_requests_total{route="/v1/objects",method="PUT"})'
GETQ = 'sum(aisd_http_requests_total{route="/v1/objects",method="GET"})'
HISTQ = 'sum(aisd_http_request_duration_seconds_count{route="/v1/objects",method="PUT"})'
INQ = 'sum(aisd_http_received_bytes_total)'
time.sleep(1.5)
base = {q: prom_value(pport, q) for q in (PUTQ, GETQ, HISTQ, INQ)}
t.check(None not in base.values(), "the queries answer before the traffic", base)

r = clulib.request("POST", g.url, "/v1/buckets/" + B, json.dumps({"action": "create-bck"}),
                   {"Content-Type": "application/json"})
t.eq(r.status, 200, "bucket created")
payload = {}
okc = 0
for i in range(N):
    data = os.urandom(random.randint(100, 5000))
    payload["o%d" % i] = data
    r1, r2 = follow("PUT", g.url, "/v1/objects/%s/o%d" % (B, i), data)
    okc += r1.status == 307 and r2.status == 200
t.eq(okc, N, "%d PUTs through the gateway (307 then 200)" % N)
okc = 0
for i in range(N):
    r1, r2 = follow("GET", g.url, "/v1/objects/%s/o%d" % (B, i))
    okc += r2.status == 200 and r2.body == payload["o%d" % i]
t.eq(okc, N, "%d GETs through the gateway, bytes equal" % N)


def grown():
    now = {q: prom_value(pport, q) for q in base}
    return None not in now.values() and now[PUTQ] >= base[PUTQ] + 2 * N and \
        now[GETQ] >= base[GETQ] + 2 * N and now[HISTQ] >= base[HISTQ] + 2 * N and \
        now[INQ] > base[INQ] + sum(len(v) for v in payload.values())


t.check(poll(grown, 20), "Prometheus sees PUT and GET counters, the PUT latency count and received bytes grow "
        "by the traffic", ({q: prom_value(pport, q) for q in base}, base))
t.check(poll(lambda: prom_value(pport, "sum(aisd_mountpath_objects)") == N, 15),
        "Prometheus: the targets' objects sum to %d" % N, prom_value(pport, "sum(aisd_mountpath_objects)"))
by_code = prom_query(pport, 'sum by (code) (aisd_http_requests_total{route="/v1/objects",method="PUT"})')
codes = {r["metric"].get("code"): float(r["value"][1]) for r in by_code or []}
t.check(codes.get("3xx", 0) >= N and codes.get("2xx", 0) >= N, "PUTs by status class: 3xx at the gateway, "
        "2xx at the targets", codes)
t.check(procs["prometheus"].poll() is None, "prometheus still running")
t.finish()
