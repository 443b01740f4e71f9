"""test_node_state.py - node state actions (PUT /v1/cluster with AIStore's
{"action","value":{"sid"}} body) on a cluster of 2 gateways (g1 primary, g2
joining it) and 3 targets, started here with their own ports and dirs under
AISD_DIR, stopped by PID.

Checks: start-maintenance of a target shows it in maintenance in both
gateways' smaps, and 100 new objects PUT through the gateway never land on it
(Location headers); stop-maintenance makes it active again; a target in maintenance stopped
(SIGSTOP) past the grace stays in the map; bad bodies and
unknown actions -> 400, an unknown node -> 404, the primary into maintenance
-> 409, a standalone target -> 400; the action sent to g2 or to a target ->
307 to the primary, and 200 once followed; decommission-node removes a
running target, which then exits 0 (its PID gone, a log line saying why)
and does not start again (DIR/decommissioned: exit 0 at once, the map
unchanged); aisctl node maintenance start|stop and node decommission [--yes]
(via g2, redirects followed) of a target and of the non-primary gateway g2,
both of which exit 0; no error-level log line.
"""
# timeout: 150
import json
import os
import re
import signal
import subprocess

from itlib import T, q

import clulib
from clulib import Node, curl, follow, get, node_id, poll, procs, request, smap, smap_ids

B = "ns"
CTL = os.environ["AISCTL"]
JSON = {"Content-Type": "application/json"}

t = T()
clulib.init(t, 'ns', ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1500ms", "--set", "store.fsync=never"])


def log_text(node):
    try:
        with open(node.log, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def state_of(node, nid):
    d = smap(node)
    if not d:
        return None
    for n in d["nodes"]:
        if n["id"] == nid:
            return n["state"]
    return "absent"


def act(url, action, sid, method="PUT"):
    return request(method, url, "/v1/cluster", json.dumps({"action": action, "value": {"sid": sid}}), JSON)


def ctl(*args, stdin=subprocess.DEVNULL):
    cp = subprocess.run([CTL] + list(args), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return cp.returncode, cp.stdout.decode(), cp.stderr.decode()


# --- start the cluster --------------------------------------------------------

g1, g2 = Node("g1", "gateway"), Node("g2", "gateway")
targets = [Node("t%d" % i, "target") for i in (1, 2, 3)]
nodes = [g1, g2] + targets
t1, t2, t3 = targets

if not t.check(g1.start(), "g1 (primary) starts"):
    t.finish()
started = all([g2.start(join=g1.url)] + [tg.start(join=g1.url) for tg in targets])
if not t.check(started, "g2 and 3 targets start with --join " + g1.url):
    t.finish()
want = {node_id(n) for n in nodes}
if not t.check(poll(lambda: smap_ids(g1) == want and smap_ids(g2) == want, 15), "both smaps list all 5 nodes",
               (smap_ids(g1), smap_ids(g2))):
    t.finish()
r = request("POST", g1.url, "/v1/buckets/" + B, '{"action":"create-bck"}', JSON)
t.eq(r.status, 200, "bucket create through g1")

# --- maintenance ----------------------------------------------------------------

T2 = node_id(t2)
r = act(g1.url, "start-maintenance", T2)
t.eq(r.status, 200, "start-maintenance %s on g1 -> 200" % t2.name)
d = r.json() or {}
t.check(any(n["id"] == T2 and n["state"] == "maintenance" for n in d.get("nodes", [])),
        "the answer is the new smap with t2 in maintenance", r)
for gw in (g1, g2):
    t.check(poll(lambda: state_of(gw, T2) == "maintenance", 5), "%s's smap: t2 in maintenance" % gw.name,
            state_of(gw, T2))
t.eq(act(g1.url, "start-maintenance", T2).status, 200, "start-maintenance again: 200 (no change)")

locs, bad = {}, []
for i in range(100):
    name = "m/obj-%03d" % i
    r1, r2 = follow("PUT", g1.url, "/v1/objects/%s/%s" % (B, q(name)), b"x" * (i + 1))
    if r1.status != 307 or r2.status != 200:
        bad.append((name, r1, r2))
    locs[name] = r1.h("location") or ""
t.check(not bad, "100 new objects PUT through g1: 307 then 200", bad[:3])
on_t2 = [n for n, l in locs.items() if l.startswith(t2.url + "/")]
t.check(not on_t2, "none of them redirected to t2 (in maintenance)", on_t2[:3])
t.check({tg.name for tg in targets if any(l.startswith(tg.url + "/") for l in locs.values())} == {"t1", "t3"},
        "they spread over t1 and t3")
stored = [n for n in locs if get(t2.url, "/v1/objects/%s/%s" % (B, q(n))).status == 200]
t.check(not stored, "t2 stores none of them", stored[:3])

r = act(g1.url, "stop-maintenance", T2)
t.eq(r.status, 200, "stop-maintenance t2 -> 200")
for gw in (g1, g2):
    t.check(poll(lambda: state_of(gw, T2) == "active", 5), "%s's smap: t2 active again" % gw.name, state_of(gw, T2))
r = request("PUT", g1.url, "/v1/objects/%s/%s" % (B, q("after")), b"y")
t.eq(r.status, 307, "objects are redirected again after stop-maintenance")

# a node in maintenance may be down: it stays in the map past the grace
T1 = node_id(t1)
t.eq(act(g1.url, "start-maintenance", T1).status, 200, "start-maintenance t1")
procs["t1"].send_signal(signal.SIGSTOP)
# the positive event: the primary says it keeps t1 past the grace
kept = poll(lambda: ("node %s in maintenance failed health checks" % T1) in log_text(g1), 60)
in_map = T1 in (smap_ids(g1) or set())
procs["t1"].send_signal(signal.SIGCONT)
t.check(kept, "g1 logs that t1 (in maintenance, stopped) failed its checks past the grace and stays")
t.check(in_map, "t1 in maintenance, stopped past the grace: still in g1's smap", smap_ids(g1))
t.eq(act(g1.url, "stop-maintenance", T1).status, 200, "stop-maintenance t1")
t.check(poll(lambda: state_of(t1, T1) == "active", 5), "t1 (continued) sees itself active", state_of(t1, T1))

# --- errors ---------------------------------------------------------------------

for body, what in (("", "no body"), ("{", "bad JSON"), ('{"action":"fly","value":{"sid":"%s"}}' % T2, "unknown action"),
                   ('{"action":"start-maintenance"}', "no value"),
                   ('{"action":"start-maintenance","value":{"sid":7}}', "sid not a string"),
                   ('["start-maintenance"]', "not an object")):
    r = request("PUT", g1.url, "/v1/cluster", body, JSON)
    t.eq(r.status, 400, "%s -> 400" % what)
t.eq(act(g1.url, "start-maintenance", "no-such-node").status, 404, "unknown node -> 404")
t.eq(act(g1.url, "decommission-node", "no-such-node").status, 404, "decommission an unknown node -> 404")
r = act(g1.url, "start-maintenance", node_id(g1))
t.eq(r.status, 409, "start-maintenance of the primary -> 409")
t.eq(act(g1.url, "decommission-node", node_id(g1)).status, 409, "decommission the primary -> 409")
t.eq(state_of(g1, node_id(g1)), "active", "the primary stays active")
t.eq(act(os.environ["AISD_URL"], "start-maintenance", T2).status, 400, "a standalone target -> 400")

# --- via a non-primary: 307 ---------------------------------------------------------

T3 = node_id(t3)
for via in (g2, t1):
    r1, r2 = follow("PUT", via.url, "/v1/cluster",
                    json.dumps({"action": "start-maintenance", "value": {"sid": T3}}), JSON)
    t.check(r1.status == 307 and clulib.no_id(r1.h("location") or "") == g1.url + "/v1/cluster",
            "start-maintenance via %s -> 307 to the primary" % via.name, r1)
    t.eq(r2.status, 200, "followed -> 200")
    t.check(poll(lambda: state_of(g2, T3) == "maintenance", 5), "t3 in maintenance in g2's smap")
    r1, r2 = follow("PUT", via.url, "/v1/cluster",
                    json.dumps({"action": "stop-maintenance", "value": {"sid": T3}}), JSON)
    t.check(r1.status == 307 and r2.status == 200, "stop-maintenance via %s: 307, then 200" % via.name, (r1, r2))
    t.check(poll(lambda: state_of(g2, T3) == "active", 5), "t3 active in g2's smap")
t.eq(curl("-L", "-X", "PUT", "-H", "Content-Type: application/json", "--data-binary",
          json.dumps({"action": "start-maintenance", "value": {"sid": "nope"}}), g2.url + "/v1/cluster"),
     "404", "via g2 with curl -L: an unknown node -> 404 from the primary")

# --- decommission ----------------------------------------------------------------------

r = act(g1.url, "decommission-node", T3)
t.eq(r.status, 200, "decommission-node t3 -> 200")
t.check(T3 not in {n["id"] for n in (r.json() or {}).get("nodes", [])}, "the answer's smap lacks t3")
for gw in (g1, g2):
    t.check(poll(lambda: T3 not in (smap_ids(gw) or {T3}), 5), "t3 gone from %s's smap" % gw.name, smap_ids(gw))
t.check(os.path.exists(os.path.join(t3.dir, "mp1", "decommissioned")), "t3 remembers it: mp1/decommissioned")
t.check(poll(lambda: "the primary decommissioned this node" in log_text(t3), 30),
        "t3 logs that it was decommissioned and will not rejoin")
v_dec = (smap(g1) or {}).get("version")


def exits(name, secs):
    """Waits at most secs for the node's process to end; its exit status, or None."""
    try:
        return procs[name].wait(secs)
    except subprocess.TimeoutExpired:
        return None


# the decommission done (drained, out of the map), the node has nothing to serve: it exits 0, saying why
pid3 = procs["t3"].pid
t.eq(exits("t3", 30), 0, "the decommissioned t3 exits with status 0")
t.check(not os.path.exists("/proc/%d" % pid3), "t3's PID %d is gone" % pid3)
t.check("decommission complete" in log_text(t3), "t3 logs why it exits (decommission complete)")
t.check(T3 not in smap_ids(g1) and T3 not in smap_ids(g2), "t3 stays out of both smaps", (smap_ids(g1), smap_ids(g2)))
t.check(not t3.start(join=g1.url), "a restarted t3 (--join) does not start: its node dir says decommissioned")
t.eq(exits("t3", 30), 0, "the restarted t3 exits with status 0")
t.check("this node was decommissioned" in log_text(t3) and "does not start" in log_text(t3),
        "the restarted t3 logs that it does not start and why")
t.check(T3 not in smap_ids(g1) and (smap(g1) or {}).get("version") == v_dec,
        "a restarted decommissioned t3 does not rejoin (g1's map unchanged since the decommission)", smap_ids(g1))
t.eq(act(g1.url, "decommission-node", T3).status, 404, "decommission t3 again -> 404")

# --- aisctl ----------------------------------------------------------------------------

T1 = node_id(t1)
rc, out, err = ctl("-e", g2.url, "node", "maintenance", "start", T1)
t.check(rc == 0 and "maintenance" in out, "aisctl -e g2 node maintenance start t1: exit 0", (rc, out, err))
t.check(poll(lambda: state_of(g1, T1) == "maintenance", 5), "t1 in maintenance in g1's smap")
rc, out, err = ctl("-e", g2.url, "cluster", "show")
t.check(rc == 0 and re.search(r"\b%s\b.*\bmaintenance\b" % re.escape(T1), out), "aisctl cluster show: t1 maintenance",
        out)
rc, out, err = ctl("-e", g2.url, "node", "maintenance", "stop", T1)
t.check(rc == 0 and "active" in out, "aisctl node maintenance stop t1: exit 0, active", (rc, out, err))
rc, out, err = ctl("-e", g1.url, "node", "maintenance", "pause", T1)
t.eq(rc, 2, "aisctl node maintenance pause: usage error, exit 2")
rc, out, err = ctl("-e", g1.url, "node", "maintenance", "start", "no-such-node")
t.check(rc == 3 and err.strip(), "aisctl maintenance of an unknown node: exit 3 (not found), one line", (rc, err))
rc, out, err = ctl("-e", g1.url, "node", "maintenance", "start", node_id(g1))
t.check(rc == 1 and "409" in err, "aisctl maintenance of the primary: exit 1 (HTTP 409)", (rc, err))
rc, out, err = ctl("-e", g1.url, "node", "decommission", node_id(t2))
t.check(rc == 2 and "--yes" in err, "aisctl node decommission without a terminal or --yes: exit 2", (rc, err))
t.check(node_id(t2) in smap_ids(g1), "t2 still in the smap")
rc, out, err = ctl("-e", g2.url, "node", "decommission", "--yes", node_id(t2))
t.check(rc == 0 and "decommissioned" in out, "aisctl -e g2 node decommission --yes t2: exit 0", (rc, out, err))
t.check(poll(lambda: node_id(t2) not in (smap_ids(g1) or {node_id(t2)}) and
             node_id(t2) not in (smap_ids(g2) or {node_id(t2)}), 5), "t2 gone from both smaps")
t.eq(exits("t2", 30), 0, "the decommissioned t2 exits with status 0")

# a non-primary gateway: no data to drain, out of the map at once, then it exits
G2 = node_id(g2)
rc, out, err = ctl("-e", g1.url, "node", "decommission", "--yes", G2)
t.check(rc == 0 and "decommissioned" in out, "aisctl node decommission --yes g2: exit 0", (rc, out, err))
t.check(G2 not in (smap_ids(g1) or {G2}), "g2 gone from g1's smap", smap_ids(g1))
pid2 = procs["g2"].pid
t.eq(exits("g2", 30), 0, "the decommissioned g2 exits with status 0")
t.check(not os.path.exists("/proc/%d" % pid2), "g2's PID %d is gone" % pid2)
t.check(os.path.exists(os.path.join(g2.dir, "meta", "decommissioned")) and "decommission complete" in log_text(g2),
        "g2 remembers it (meta/decommissioned) and logs why it exits")
t.check(get(g1.url, "/v1/health").status == 200 and G2 not in (smap_ids(g1) or {G2}),
        "g1 stays healthy, g2 stays out of its map")

# --- stop, then the logs -------------------------------------------------------------

clulib.stop_all()
t.check(all(p.returncode == 0 for p in procs.values()), "every node exits 0 on SIGTERM",
        {k: p.returncode for k, p in procs.items()})
clulib.check_logs(nodes)
t.finish()
