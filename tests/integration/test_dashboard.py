"""test_dashboard.py - the Grafana dashboard (deploy/grafana/aisd-dashboard.json)
against live nodes: a gateway and 2 targets started here on loopback
ports, scraped by a real Prometheus (Debian's prometheus, a plain process
with a temp config, scrape_interval 1s); every process stopped by PID.

Checks: the dashboard is valid JSON whose every panel query and template
variable query is PromQL naming at least one metric; after some traffic
(PUTs, GETs, a 404) every metric name those queries use (read out of the
PromQL: strings, label matchers, ranges, grouping labels and function
names left out) is a sample or family name on the nodes' GET /metrics;
Prometheus accepts every query (Grafana's $job, $instance,
$__rate_interval and $__range filled in) and answers each with at least one
series, so the label names the queries group and filter by exist too.
"""
# timeout: 120
import json
import os
import re
import time

from itlib import T

import clulib
from clulib import follow, get, poll, procs, request

DASH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "grafana",
                    "aisd-dashboard.json")
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
            "offset", "inf", "nan", "atan2"}

t = T()


def metric_names(expr):
    """The metric names a PromQL expression selects: identifiers that are
    not in a string, a label matcher, a range, a grouping clause, a
    function call's name or a keyword."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.:$])[a-zA-Z_:][\w:]*", e):
        if m.group(0).lower() in KEYWORDS or re.match(r"\s*\(", e[m.end():]):
            continue
        names.add(m.group(0))
    return names


def dashboard_queries(d):
    """Every PromQL text of the dashboard: panel targets (rows' panels too)
    and the query of each template variable (label_values' metric part)."""
    out = []

    def walk(panels):
        for p in panels:
            out.extend((p.get("title", "?"), x["expr"]) for x in p.get("targets", []) if x.get("expr"))
            walk(p.get("panels", []))

    walk(d.get("panels", []))
    for v in d.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", q)
        out.append(("variable " + v["name"], m.group(1) if m else q))
    return out


# the parser itself, on the shapes the dashboard uses
t.eq(metric_names('histogram_quantile(0.99, sum by (le, route) (rate(a_bucket{x=~"4xx|y(z)",job=~"$job"}'
                  '[$__rate_interval]))) / on(i) group_left(k) b_total + 1e3 * c offset 5m'),
     {"a_bucket", "b_total", "c"}, "PromQL names: functions, labels, strings, ranges and keywords left out")

try:
    with open(DASH) as f:
        dash = json.load(f)
except (OSError, ValueError) as e:
    t.fail("deploy/grafana/aisd-dashboard.json is readable JSON", repr(e))
    t.finish()
queries = dashboard_queries(dash)
t.check(len(queries) >= 20, "the dashboard has queries (%d)" % len(queries))
noname = [q for q in queries if not metric_names(q[1])]
t.check(not noname, "every query names a metric", noname)
wanted = {}
for title, q in queries:
    for n in metric_names(q):
        wanted.setdefault(n, title)

clulib.init(t, "dash", ["--set", "cluster.keepalive=300ms", "--set", "store.fsync=never"])
g, tg = clulib.start_cluster(2)
nodes = [g] + tg
r = request("POST", g.url, "/v1/buckets/dash", json.dumps({"action": "create-bck"}),
            {"Content-Type": "application/json"})
t.eq(r.status, 200, "bucket created")
ok = 0
for i in range(5):
    r1, r2 = follow("PUT", g.url, "/v1/objects/dash/o%d" % i, b"x" * (1000 * i))
    ok += r2.status == 200
    r1, r2 = follow("GET", g.url, "/v1/objects/dash/o%d" % i)
    ok += r2.status == 200
t.eq(ok, 10, "5 PUTs and 5 GETs through the gateway")
r1, r2 = follow("GET", g.url, "/v1/objects/dash/missing")
t.eq(r2.status, 404, "GET of a missing object: 404 (an error series)")

have = set()
for n in nodes:
    body = get(n.url, "/metrics").body.decode()
    for line in body.splitlines():
        m = re.match(r"# TYPE (\S+) |([a-zA-Z_:][\w:]*)[{ ]", line)
        if m:
            have.add(m.group(1) or m.group(2))
missing = sorted("%s (panel %r)" % (n, wanted[n]) for n in wanted if n not in have)
t.check(not missing, "every metric the dashboard queries (%d names) is on the live nodes' /metrics" % len(wanted),
        missing)

# --- Prometheus: every query parses and selects series ------------------------
if not t.check(os.access(clulib.PROMETHEUS, os.X_OK), "prometheus is installed (tools/install-deps.sh)"):
    t.finish()
pport = clulib.start_prometheus(nodes)


def prom(q):
    """(status, number of series) of an instant query; status "down" when
    Prometheus does not answer, "error: WHY" when it refuses the query."""
    d = clulib.prom_api(pport, q)
    if d is None:
        return "down", 0
    if d.get("status") != "success":
        return "error: %s" % d.get("error"), 0
    return "success", len(d["data"]["result"])


def grafana_vars(q):
    for k, v in (("$__rate_interval", "10s"), ("$__range", "1m"), ("$job", ".*"), ("$instance", ".*")):
        q = q.replace(k, v)
    return q


if not t.check(poll(lambda: prom('count(up{job="aisd"} == 1) == 3') == ("success", 1), 40),
               "Prometheus scrapes all 3 nodes", prom("up")):
    t.finish()
time.sleep(3)  # rate() over [10s] needs two scrapes of every series
bad = []


def all_answer():
    bad[:] = [(title, q, st, n) for title, q in queries for st, n in [prom(grafana_vars(q))]
              if st != "success" or n == 0]
    return not bad


t.check(poll(all_answer, 20), "Prometheus answers each of the %d queries with at least one series" % len(queries),
        bad)
t.check(procs["prometheus"].poll() is None, "prometheus still running")
t.finish()
