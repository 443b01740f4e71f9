"""test_stats.py - GET /v1/daemon?what=stats|smap|bmd on every node and
GET /v1/cluster?what=stats on a gateway, against a gateway and 2 targets
(two mountpaths each) started here on their own ports and dirs under
AISD_DIR (the runner's standalone target is not used), with a long
cluster.grace so that a killed target stays in the map.

Checks: each target's object count and bytes (and the per-mountpath sums)
equal what was PUT to it (found from the gateway's 307), after overwrites,
deletes, a bucket destroy and a restart; capacity fields are sane (free <=
total, used = total - free); id, role, version, uptime, map versions; the
gateway's what=stats lists every node and its totals are the sum of the
targets'; a kill -9'd target appears there with an "error"; what=smap and
what=bmd per node. Every node is stopped by PID on the way out.
"""
# timeout: 120
import os
import random
import time

from itlib import T

import clulib
from clulib import get, poll, procs, request

B, B2 = "st", "st2"
JSON = {"Content-Type": "application/json"}

t = T()
clulib.init(t, "stats", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=60s",
                         "--set", "store.fsync=never"], mountpaths=2)


class Node(clulib.Node):
    def stats(self):
        r = get(self.url, "/v1/daemon?what=stats", timeout=10)
        return r.json() if r.status == 200 else r


g, tg = clulib.start_cluster(2, node_class=Node)
want_ids = {g.id} | {x.id for x in tg}

# expected per target id: {(bucket, name): size}
held = {x.id: {} for x in tg}


def owner(loc):
    for x in tg:
        if loc and loc.startswith(x.url + "/"):
            return x
    return None


def put(bck, name, size, rnd):
    path = "/v1/objects/%s/%s" % (bck, name)
    r1 = request("PUT", g.url, path, b"", {})
    o = owner(r1.headers.get("location")) if r1.status == 307 else None
    if o is None:
        return r1
    r = request("PUT", o.url, path, rnd.randbytes(size))
    if r.status == 200:
        for h in held.values():
            h.pop((bck, name), None)
        held[o.id][(bck, name)] = size
    return r


def delete(bck, name):
    path = "/v1/objects/%s/%s" % (bck, name)
    for x in tg:
        if (bck, name) in held[x.id]:
            r = request("DELETE", x.url, path)
            if r.status == 200:
                del held[x.id][(bck, name)]
            return r
    return None


def check_target(x, what):
    s = x.stats()
    if not t.check(isinstance(s, dict), "%s: %s: GET /v1/daemon?what=stats -> 200 JSON" % (what, x.name), s):
        return None
    poll(lambda: not any(m.get("counting") for m in x.stats()["mountpaths"]), 10)
    s = x.stats()
    objs, nbytes = len(held[x.id]), sum(held[x.id].values())
    t.eq((s.get("objects"), s.get("bytes")), (objs, nbytes), "%s: %s: objects, bytes = what was PUT to it" % (what, x.name))
    mps = s.get("mountpaths") or []
    t.eq(len(mps), 2, "%s: %s: 2 mountpaths" % (what, x.name))
    t.eq((sum(m["objects"] for m in mps), sum(m["bytes"] for m in mps)), (objs, nbytes),
         "%s: %s: the mountpaths' objects and bytes sum to the totals" % (what, x.name))
    t.check(all(0 < m["free_bytes"] <= m["total_bytes"] and m["used_bytes"] == m["total_bytes"] - m["free_bytes"]
                for m in mps), "%s: %s: 0 < free <= total, used = total - free" % (what, x.name), mps)
    return s


# --- PUT, overwrite, delete -------------------------------------------------------

r = request("POST", g.url, "/v1/buckets/" + B, '{"action":"create-bck"}', JSON)
t.eq(r.status, 200, "create bucket %s through the gateway" % B)
rnd = random.Random(int(os.environ.get("SEED", "11")))
names = ["obj-%03d" % i for i in range(60)]
bad = [r for r in (put(B, n, rnd.randrange(0, 20000), rnd) for n in names) if r.status != 200]
t.check(not bad, "60 objects PUT through the gateway's 307", bad[:2])
t.check(all(held[x.id] for x in tg), "both targets hold objects", {k: len(v) for k, v in held.items()})

for x in tg:
    s = check_target(x, "after PUT")
    if s:
        t.eq((s.get("id"), s.get("role"), s.get("version")), (x.id, "target", "0.1.0"), "%s: id, role, version" % x.name)
        t.check(isinstance(s.get("uptime_s"), int) and 0 <= s["uptime_s"] < 600, "%s: uptime_s" % x.name, s.get("uptime_s"))
        t.check(s.get("cmap_version", 0) >= 1 and s.get("bmd_version", 0) >= 1, "%s: cmap and bmd versions" % x.name, s)
gs = get(g.url, "/v1/daemon").json() or {}
t.eq((gs.get("id"), gs.get("role"), gs.get("version")), (g.id, "gateway", "0.1.0"), "gateway: GET /v1/daemon (default stats): id, role, version")
t.check("mountpaths" not in gs and "objects" not in gs, "gateway stats: no store fields", gs)

for n in names[:10]:  # overwrite with new sizes
    r = put(B, n, rnd.randrange(0, 30000), rnd)
for n in names[10:18]:
    delete(B, n)
for x in tg:
    check_target(x, "after overwrite and delete")

# --- per-node smap / bmd ------------------------------------------------------------

for x in [g] + tg:
    m = get(x.url, "/v1/daemon?what=smap").json() or {}
    t.eq({n["id"] for n in m.get("nodes", [])}, want_ids, "%s: /v1/daemon?what=smap lists the 3 nodes" % x.name)
    b = get(x.url, "/v1/daemon?what=bmd")
    t.check(b.status == 200 and B.encode() in b.body, "%s: /v1/daemon?what=bmd has bucket %s" % (x.name, B), b)
t.eq(get(g.url, "/v1/daemon?what=nope").status, 400, "what=nope -> 400")

# --- bucket destroy -------------------------------------------------------------------

r = request("POST", g.url, "/v1/buckets/" + B2, '{"action":"create-bck"}', JSON)
t.eq(r.status, 200, "create bucket %s" % B2)
bad = [r for r in (put(B2, "x%d" % i, rnd.randrange(1, 5000), rnd) for i in range(20)) if r.status != 200]
t.check(not bad, "20 objects PUT to %s" % B2, bad[:2])
for x in tg:
    check_target(x, "with %s" % B2)
r = request("DELETE", g.url, "/v1/buckets/" + B2, '{"action":"destroy-bck"}', JSON)
t.eq(r.status, 200, "destroy bucket %s through the gateway" % B2)
for h in held.values():
    for k in [k for k in h if k[0] == B2]:
        del h[k]
for x in tg:
    ok = poll(lambda: (x.stats() or {}).get("objects") == len(held[x.id]), 10)
    t.check(ok, "%s: count drops after the bucket destroy reaches it" % x.name)
    check_target(x, "after bucket destroy")

# --- cluster stats ----------------------------------------------------------------------


def cluster_stats():
    r = get(g.url, "/v1/cluster?what=stats", timeout=20)
    return r.json() if r.status == 200 else r


cs = cluster_stats()
if t.check(isinstance(cs, dict), "GET /v1/cluster?what=stats on the gateway -> 200 JSON", cs):
    nodes = cs.get("nodes", {})
    t.eq(set(nodes), want_ids, "cluster stats: every node")
    t.check(cs.get("cmap_version", 0) >= 1, "cluster stats: cmap_version", cs.get("cmap_version"))
    t.eq(nodes.get(g.id, {}).get("role"), "gateway", "cluster stats: the gateway's own entry")
    tot = cs.get("totals", {})
    sums = {"objects": 0, "bytes": 0, "capacity_total": 0, "capacity_free": 0}
    for x in tg:
        n = nodes.get(x.id, {})
        sums["objects"] += n.get("objects", 0)
        sums["bytes"] += n.get("bytes", 0)
        for m in n.get("mountpaths", []):
            sums["capacity_total"] += m["total_bytes"]
            sums["capacity_free"] += m["free_bytes"]
    t.eq(tot, sums, "cluster totals = the sum of the targets' stats")
    t.eq((tot.get("objects"), tot.get("bytes")),
         (sum(len(h) for h in held.values()), sum(sum(h.values()) for h in held.values())),
         "cluster totals = what was PUT")
    t.check(0 < tot.get("capacity_free", 0) <= tot.get("capacity_total", 0), "cluster capacity: 0 < free <= total", tot)

# --- restart ------------------------------------------------------------------------------

t1 = tg[0]
procs[t1.name].terminate()
procs[t1.name].wait(15)
t.check(t1.start(join=g.url), "restart t1 on the same port and mountpaths")
check_target(t1, "after restart")

# --- a killed target ------------------------------------------------------------------------

t2 = tg[1]
t0 = time.monotonic()
cluster_stats()
base = time.monotonic() - t0  # the same request with every node up: the baseline
procs[t2.name].kill()
procs[t2.name].wait(10)
t0 = time.monotonic()
cs = cluster_stats()
el = time.monotonic() - t0
if t.check(isinstance(cs, dict), "cluster stats with t2 killed -> 200 JSON", cs):
    n2 = cs.get("nodes", {}).get(t2.id, {})
    t.check(isinstance(n2.get("error"), str) and n2["error"], "the killed target appears with an error", n2)
    t.eq(n2.get("role"), "target", "its entry says role target")
    t.eq(cs["totals"].get("objects"), len(held[t1.id]), "totals: only the live target's objects")
    # bounded by the fan-out's 2 s per-node timeout (plus slack for a loaded
    # machine) over the baseline; without a timeout it would hang
    t.check(el < base + 8, "answered in %.2f s (%.2f s with every node up)" % (el, base))

t.finish()
