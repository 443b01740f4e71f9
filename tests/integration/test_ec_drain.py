"""test_ec_drain.py - erasure-coded slices move like objects: maintenance
with drain, stop-maintenance, a target killed and restarted, and
decommission, on 1 gateway + 7 targets started here on loopback ports
(stopped by PID), bucket e with EC 4+2 (ec.objsize_limit 64 KiB),
rebalance.drain_timeout 40 s.

"Exact layout" below: for every object, one slice on each of its 6 HRW
targets among the active ones (indices 0..5, each once, the object's
size in their metadata), no slice on any other running target, the
whole copy on its HRW owner only.

 1. 14 objects of 100 KiB - 600 KiB: exact layout on 7 targets. The
    rules behind the moves, asked directly: ?meta=true with
    Ais-Cmap-Version says Ais-Ec-Holder: true on a holder, false when
    asked under a newer map; a move (Ais-Ec-Move) to a non-holder under
    the same map is refused (409) and stores nothing; one to the holder
    of that slice answers 200 Ais-Had.
 2. start-maintenance with drain of tm: its rebalance ends with no object
    or slice left there (not waiting forever); exact layout on the other
    6; every object reads byte for byte.
 3. stop-maintenance: tm gets its slices back and the stand-ins drop
    theirs: exact layout on 7, 7 stored items per object (space back to
    (D+P)/D plus the whole copy).
 4. kill -9 of tk, then restart (it rejoins with its old slices): exact
    layout on 7 again, the surplus dropped.
 5. decommission-node td answers 200 within the drain timeout and td
    leaves the map; exact layout on the other 6.
 6. kill -9 of 2 more targets: every object reads byte for byte.
"""
# timeout: 200
# log-allow: rebuilt
import json
import os
import time

from itlib import T, q

import clulib
import hrwlib
from clulib import follow, get, poll, request, slice_meta, smap_ids, whole_copy

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}
B = "e"

t = T()
clulib.init(t, "ecdrain", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1500ms",
                           "--set", "store.fsync=never", "--set", "rebalance.drain_timeout=40s"])
g, targets = clulib.start_cluster(7)
t0 = time.monotonic()


def cluster(action, node):
    return request("PUT", g.url, "/v1/cluster", json.dumps({"action": action, "value": {"sid": node.id}}), JSON,
                   timeout=90)




def objects(tg):
    return (get(tg.url, "/v1/jobs").json() or {}).get("objects")


def layout_errors(active, running):
    """What differs from the exact layout (an empty list when none)."""
    ids = [x.id for x in active]
    errs = []
    for n, d in data.items():
        top = hrwlib.top(B + "/" + n, ids, 6)
        metas = {x.id: slice_meta(x, B, n) for x in running}
        holders = sorted(i for i, m in metas.items() if m)
        if holders != sorted(top):
            errs.append("%s: slices on %s, HRW names %s" % (n, holders, sorted(top)))
        idx = sorted(int(m["i"]) for m in metas.values() if m)
        if idx != list(range(6)) or any(m["size"] != str(len(d)) for m in metas.values() if m):
            errs.append("%s: slice indices %s" % (n, idx))
        whole = [x.id for x in running if whole_copy(x, B, n)]
        if whole != [top[0]]:
            errs.append("%s: whole copies on %s, owner %s" % (n, whole, top[0]))
    return errs


def exact(active, running, secs, what):
    last = [None]

    def ok():
        last[0] = layout_errors(active, running)
        return not last[0]
    t.check(poll(ok, secs), what, (last[0] or [])[:3])


def read_all(what):
    bad = []
    for n, d in data.items():
        r = follow("GET", g.url, "/v1/objects/%s/%s" % (B, q(n)))[1]
        if r.status != 200 or r.body != d:
            bad.append((n, r.status, r.body[:120] if r.status != 200 else "wrong bytes"))
    t.check(not bad, what, bad[:3])


def owner_put(n, d):
    return clulib.owner_put(g, targets, B, n, d)


# --- 1. the layout on 7 targets --------------------------------------------------------------
clulib.create_ec_bucket(g, targets, B, 4, 2, 65536)
data = {"o%02d" % i: os.urandom((100 << 10) + i * 37 * 1024 + i) for i in range(14)}
bad = [n for n, d in data.items() if owner_put(n, d) != 200]
t.check(not bad, "%d PUTs" % len(data), bad[:3])
exact(targets, targets, 10, "exact layout on 7 targets after the PUTs")

# the rules behind the moves, asked directly: a holder says so under a map as
# new as the asker's, not under a newer one; a move to the target that is not
# a holder is refused (409) and not stored; one to a holder of that slice: Had
n0 = "o00"
order = hrwlib.top(B + "/" + n0, [x.id for x in targets], 7)
holder = next(x for x in targets if x.id == order[1])
stray = next(x for x in targets if x.id == order[6])
v = get(g.url, "/v1/cluster?what=smap").json()["version"]
r = get(holder.url, "/v1/ec/%s/%s?meta=true" % (B, n0), headers=dict(INTRA, **{"Ais-Cmap-Version": str(v)}))
t.eq(r.h("ais-ec-holder"), "true", "a holder under the asker's map says it is one")
r = get(holder.url, "/v1/ec/%s/%s?meta=true" % (B, n0), headers=dict(INTRA, **{"Ais-Cmap-Version": str(v + 100)}))
t.eq(r.h("ais-ec-holder"), "false", "asked under a newer map than its own: not counted as a holder")
sl = get(holder.url, "/v1/ec/%s/%s" % (B, n0), headers=INTRA)
mv = dict(INTRA, **{"Ais-Ec-Meta": sl.h("ais-ec-meta"), "Ais-Ec-Move": "true", "Ais-Cmap-Version": str(v)})
r = request("PUT", stray.url, "/v1/ec/%s/%s" % (B, n0), sl.body, mv)
t.check(r.status == 409 and b"not a holder" in r.body, "a move to a non-holder under the same map: 409", r.status)
t.check(slice_meta(stray, B, n0) is None, "... and nothing stored there")
r = request("PUT", holder.url, "/v1/ec/%s/%s" % (B, n0), sl.body, mv)
t.check(r.status == 200 and r.h("ais-had") == "true", "a move to the holder of that slice: 200, had it", r.status)

# --- 2. maintenance with drain ------------------------------------------------------------------
tm, tk, td = targets[2], targets[4], targets[6]
others = [x for x in targets if x is not tm]
r = request("PUT", g.url, "/v1/cluster", json.dumps({"action": "start-maintenance",
                                                      "value": {"sid": tm.id, "drain": True}}), JSON)
t.eq(r.status, 200, "start-maintenance with drain of " + tm.name)
t.check(poll(lambda: objects(tm) == 0, 30), "%s drained: no object or slice left there" % tm.name, objects(tm))
exact(others, targets, 20, "exact layout on the other 6 after the drain")
read_all("after the drain: every object byte for byte")

# --- 3. back from maintenance ----------------------------------------------------------------------
t.eq(cluster("stop-maintenance", tm).status, 200, "stop-maintenance of " + tm.name)
exact(targets, targets, 30, "exact layout on 7 after stop-maintenance: slices back, the surplus dropped")
t.eq(sum(objects(x) for x in targets), 7 * len(data), "7 stored items per object: 6 slices and the whole copy")

# --- 4. kill -9 and rejoin ---------------------------------------------------------------------------
live = [x for x in targets if x is not tk]
tk.kill9()
t.check(poll(lambda: smap_ids(g) == {g.id} | {x.id for x in live}, 15), "the map drops " + tk.name)
exact(live, live, 30, "exact layout on the other 6 while %s is down" % tk.name)
t.check(tk.start(join=g.url), tk.name + " restarts")
t.check(poll(lambda: smap_ids(g) == {g.id} | {x.id for x in targets}, 15), tk.name + " rejoins the map")
exact(targets, targets, 30, "exact layout on 7 after the rejoin: the surplus dropped")
t.eq(sum(objects(x) for x in targets), 7 * len(data), "7 stored items per object again")

# --- 5. decommission ---------------------------------------------------------------------------------
t1 = time.monotonic()
r = cluster("decommission-node", td)
t.check(r.status == 200, "decommission-node %s: 200 (drained)" % td.name, (r.status, r.body[:300]))
t.diag("decommission took %.1f s" % (time.monotonic() - t1))
live = [x for x in targets if x is not td]
t.check(poll(lambda: smap_ids(g) == {g.id} | {x.id for x in live}, 10), td.name + " left the map")
exact(live, live, 20, "exact layout on the other 6 after the decommission")
read_all("after the decommission: every object byte for byte")

# --- 6. two more lost -----------------------------------------------------------------------------------
dead = live[:2]
for x in dead:
    x.kill9()
live = live[2:]
t.check(poll(lambda: smap_ids(g) == {g.id} | {x.id for x in live}, 15), "the map drops 2 more targets")
read_all("2 more targets lost: every object byte for byte")
t.diag("%.1f s after the cluster started" % (time.monotonic() - t0))
t.finish()
