"""test_drain_timeout.py - rebalance.drain_timeout: decommission-node waits
that long for the node to move its objects off, then answers 504 and the
node stays decommissioning; decommission-node again, once the drain can
finish, removes it. 1 gateway + 3 targets on loopback ports (stopped by
PID), rebalance.drain_timeout=2s, a long cluster.grace.

Checks: objects on t3 are chosen (placement rule, hrwlib) so that after
t3 leaves, some belong on t1 and some on t2. t1 is stopped (SIGSTOP), so
t3's drain cannot finish: decommission-node t3 answers 504 naming
rebalance.drain_timeout after about 2 s (not at once, not much later); t3
stays in the map as decommissioning, and answers. t1 continues (SIGCONT):
decommission-node t3 again (repeated while it answers 504, as the message
says, within a deadline) answers 200 and t3 leaves the map; every object
reads back through the gateway byte for byte, none from t3 (a copy t3
sends while t1, still behind on the map, takes it is kept there, never
handed back to t3 to be dropped by both).

Then the rule behind that, asked directly: a rebalance copy (conditional)
of an object t1 does not hold, sent under an older map than t1's, is
refused with 409 and not stored (its sender keeps its copy); the same sent
under a newer map than t1's is taken (t1 is behind) and stays.
"""
# timeout: 180
import json
import os
import signal
import time

from itlib import T, q

import clulib
import hrwlib
from clulib import follow, get, poll, procs, request, smap_ids

JSON = {"Content-Type": "application/json"}
B = "dt"

t = T()
clulib.init(t, "dt", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=120s",
                      "--set", "store.fsync=never", "--set", "rebalance.drain_timeout=2s"])
g, (t1, t2, t3) = clulib.start_cluster(3, secs=20)
ids3, ids2 = [x.id for x in (t1, t2, t3)], [t1.id, t2.id]
t.eq(request("POST", g.url, "/v1/buckets/" + B, '{"action":"create-bck"}', JSON).status, 200, "create " + B)

# names owned by t3 now, by t1 (half) or t2 (half) once t3 is gone
names = {t1.id: [], t2.id: []}
for i in range(5000):
    n = "o%04d" % i
    if hrwlib.top(B + "/" + n, ids3, 1) == [t3.id]:
        nxt = hrwlib.top(B + "/" + n, ids2, 1)[0]
        if len(names[nxt]) < 10:
            names[nxt].append(n)
data = {n: os.urandom(500 + 13 * i) for i, n in enumerate(names[t1.id] + names[t2.id])}
t.eq(len(data), 20, "20 names on t3 that move to t1 (10) and t2 (10)")
bad = [n for n, d in data.items() if follow("PUT", g.url, "/v1/objects/%s/%s" % (B, q(n)), d)[1].status != 200]
t.check(not bad, "20 PUTs", bad[:3])


def decommission():
    t0 = time.monotonic()
    r = request("PUT", g.url, "/v1/cluster", json.dumps({"action": "decommission-node", "value": {"sid": t3.id}}),
                JSON, timeout=60)
    return r, time.monotonic() - t0


def state_of(nid):
    d = get(g.url, "/v1/cluster?what=smap").json() or {}
    return next((n.get("state") for n in d.get("nodes", []) if n["id"] == nid), "absent")


procs["t1"].send_signal(signal.SIGSTOP)
try:
    r, secs = decommission()
    msg = (r.json() or {}).get("message", "")
    t.check(r.status == 504 and "rebalance.drain_timeout" in msg,
            "decommission-node with the drain blocked (t1 stopped): 504 naming rebalance.drain_timeout", r)
    t.check(1.5 <= secs < 30, "  after the 2 s drain_timeout, not at once (%.1f s)" % secs)
    t.eq(state_of(t3.id), "decommissioning", "t3 stays in the map, decommissioning")
    t.check(clulib.health(t3), "  and answers")
finally:
    procs["t1"].send_signal(signal.SIGCONT)

deadline = time.monotonic() + 90
tries = 0
while True:
    tries += 1
    r, secs = decommission()
    if r.status != 504 or time.monotonic() > deadline:
        break
    time.sleep(1)
t.check(r.status == 200, "t1 continued: decommission-node again answers 200 (%d tries)" % tries, r)
t.check(poll(lambda: smap_ids(g) == {g.id, t1.id, t2.id}, 10), "t3 left the map", smap_ids(g))
wrong = [n for n, d in data.items() if follow("GET", g.url, "/v1/objects/%s/%s" % (B, q(n)))[1].body != d]
t.check(not wrong, "every object reads back through the gateway, byte for byte", wrong[:3])
where = {n: [x.name for x in (t1, t2) if get(x.url, "/v1/objects/%s/%s" % (B, q(n)),
                                                 headers={"Ais-Intra": "test"}).status == 200] for n in data}
t.check(all(where[n] == ["t1"] for n in names[t1.id]) and all(where[n] == ["t2"] for n in names[t2.id]),
        "  each on its new owner", where)

# a name t2 holds, t1 not: copies of it sent to t1 as a rebalance would
n = next(n for n in names[t2.id])
v = (get(g.url, "/v1/cluster?what=smap").json() or {}).get("version", 0)
path = "/v1/objects/%s/%s" % (B, q(n))


def cond_copy(ver):
    return request("PUT", t1.url, path, b"stray", {"Ais-Intra": "rebalance", "Ais-Cmap-Version": str(ver),
                                                   "Ais-Have-Cksum": "-", "Ais-Have-Mtime-Ns": "1",
                                                   "Ais-Checksum-Type": "none"})


def on_t1():
    return get(t1.url, path, headers={"Ais-Intra": "test"})


r = cond_copy(1)
t.check(r.status == 409 and b"keep the copy" in r.body, "a rebalance copy under an older map to a non-holder: 409", r)
t.eq(on_t1().status, 404, "  and not stored")
r = cond_copy(v + 1000)
t.eq(r.status, 200, "the same under a newer map than the receiver's: taken")
time.sleep(0.5)
t.eq(on_t1().body, b"stray", "  and kept (not handed off: the receiver is behind)")
t.finish()
