"""test_maint_drain.py - maintenance with and without drain on a cluster of
1 gateway and 3 targets started here on loopback ports, stopped by PID.

600 objects (1-6 KiB) in bucket m, a reader loop over all of them through
the gateway (bytes compared) for the whole test:
 1. aisctl node maintenance start T3 --drain: the map shows t3 in
    maintenance with "drain":true; t3's rebalance moves every object off
    (t3 ends holding none); every object is on exactly its HRW holder among
    t1, t2.
 2. stop-maintenance: the rebalance brings t3's objects back (t3 holds
    exactly its HRW objects, the others none of them).
 3. start-maintenance without drain (the default): t3 keeps its objects
    (count unchanged once every rebalance is done) and they still read.
 4. bad input: drain not a boolean, drain with stop-maintenance: 400;
    aisctl --drain with stop: usage error.
The reader loop sees zero errors (a read answered 508 while two nodes'
maps disagree for a moment is asked again once, as the answer says, and
must then be served; at most 1 in 100 reads may need that).
"""
# timeout: 150
import http.client
import json
import os
import subprocess
import threading
import time

from itlib import T

import clulib
import hrwlib
from clulib import Node, follow, get, poll, request

JSON = {"Content-Type": "application/json"}
CTL = os.environ["AISCTL"]
N = 600

t = T()
clulib.init(t, "mdrain", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1500ms",
                          "--set", "store.fsync=never", "--set", "io.threads=4", "--set", "net.workers=2"])
g = Node("g", "gateway")
t1, t2, t3 = (Node("t%d" % i, "target") for i in (1, 2, 3))
if not t.check(g.start() and all(x.start(join=g.url) for x in (t1, t2, t3)), "gateway and 3 targets start"):
    t.finish()
t.check(poll(lambda: len(clulib.smap_ids(g) or ()) == 4, 15), "4 nodes in the map")


def ctl(*args):
    cp = subprocess.run([CTL, "-e", g.url] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=90)
    return cp.returncode, cp.stdout.decode(), cp.stderr.decode()


def node_entry(node):
    d = get(g.url, "/v1/cluster?what=smap").json() or {}
    return next((n for n in d.get("nodes", []) if n["id"] == node.id), {})


def objects(node):
    return (get(node.url, "/v1/jobs").json() or {}).get("objects")


def reb_done():
    d = get(g.url, "/v1/cluster?what=rebalance").json() or {}
    return d.get("state") in ("done", "idle") and all(
        v.get("state") in ("done", "idle") for v in d.get("targets", {}).values())


t.eq(request("POST", g.url, "/v1/buckets/m", '{"action":"create-bck"}', JSON).status, 200, "create m")
data = {"o%04d" % i: os.urandom(1024 + (i * 37) % 5000) for i in range(N)}
bad = [k for k, v in data.items() if follow("PUT", g.url, "/v1/objects/m/" + k, v)[1].status != 200]
t.check(not bad, "%d PUTs" % N, bad[:3])
t.check(poll(reb_done, 30), "no rebalance running")
ids3 = [t1.id, t2.id, t3.id]
mine3 = [k for k in data if hrwlib.top("m/" + k, ids3, 1)[0] == t3.id]
t.eq(objects(t3), len(mine3), "t3 holds its HRW objects (%d)" % len(mine3))

errors, reads, again = [], [0], []
stop = threading.Event()


def reader():
    t_end = time.monotonic() + 120
    while not stop.is_set() and time.monotonic() < t_end:
        for k, v in data.items():
            if stop.is_set():
                break
            try:
                r = follow("GET", g.url, "/v1/objects/m/" + k)[1]
                if r.status == 508:  # two maps disagreed for a moment: asked again, as its message says
                    again.append(k)
                    time.sleep(0.2)
                    r = follow("GET", g.url, "/v1/objects/m/" + k)[1]
                if r.status != 200 or r.body != v:
                    errors.append((k, r.status))
            except (OSError, http.client.HTTPException) as e:
                errors.append((k, str(e)))
            reads[0] += 1


rt = threading.Thread(target=reader, daemon=True)
rt.start()

# 1. drain
rc, out, err = ctl("node", "maintenance", "start", t3.id, "--drain")
t.check(rc == 0 and "maintenance" in out, "aisctl node maintenance start --drain", (rc, out, err))
e = node_entry(t3)
t.check(e.get("state") == "maintenance" and e.get("drain") is True, "the map: t3 in maintenance, drain true", e)
t.check(poll(lambda: objects(t3) == 0 and reb_done(), 60), "t3's objects move off (it holds none)", objects(t3))
ids2 = [t1.id, t2.id]
want = {x.id: sum(1 for k in data if hrwlib.top("m/" + k, ids2, 1)[0] == x.id) for x in (t1, t2)}
t.eq({x.id: objects(x) for x in (t1, t2)}, want, "t1 and t2 hold exactly their HRW objects")

# 2. back
rc, out, err = ctl("node", "maintenance", "stop", t3.id)
t.check(rc == 0 and "active" in out, "aisctl node maintenance stop", (rc, out, err))
t.check("drain" not in node_entry(t3), "the drain flag is gone with the maintenance")
t.check(poll(lambda: objects(t3) == len(mine3) and reb_done(), 60), "t3's objects come back", objects(t3))
t.check(poll(lambda: objects(t1) + objects(t2) + objects(t3) == N, 30), "no orphan copies (%d in all)" % N)

# 3. keep
rc, out, err = ctl("node", "maintenance", "start", t3.id)
t.check(rc == 0 and "maintenance" in out, "aisctl node maintenance start (no drain)", (rc, out, err))
t.check("drain" not in node_entry(t3), "the map: no drain flag")
v_keep = (get(g.url, "/v1/cluster?what=smap").json() or {}).get("version", 0)


def map_version(node):
    return (get(node.url, "/v1/cluster?what=smap").json() or {}).get("version", 0)


# the positive event: every target holds the maintenance map (and acted on it)
t.check(poll(lambda: all(map_version(x) >= v_keep for x in (t1, t2, t3)), 30),
        "every target has the maintenance map (v%d)" % v_keep)
t.check(poll(reb_done, 30), "every rebalance done")
t.eq(objects(t3), len(mine3), "t3 keeps its objects in maintenance without drain")
r0 = reads[0]
t.check(poll(lambda: reads[0] >= r0 + 50, 60), "the reader goes on reading with t3 in maintenance")
stop.set()
rt.join(60)
t.check(not errors and reads[0] > 0 and len(again) * 100 <= reads[0],
        "reader loop: %d reads, zero errors (%d asked again after a 508)" % (reads[0], len(again)), (errors[:5], again[:5]))

# 4. bad input
body = {"action": "start-maintenance", "value": {"sid": t2.id, "drain": "yes"}}
t.eq(request("PUT", g.url, "/v1/cluster", json.dumps(body), JSON).status, 400, "drain not a boolean: 400")
body = {"action": "stop-maintenance", "value": {"sid": t3.id, "drain": True}}
t.eq(request("PUT", g.url, "/v1/cluster", json.dumps(body), JSON).status, 400, "drain with stop-maintenance: 400")
rc, out, err = ctl("node", "maintenance", "stop", t3.id, "--drain")
t.eq(rc, 2, "aisctl node maintenance stop --drain: usage error")
rc, out, err = ctl("node", "maintenance", "stop", t3.id)
t.eq(rc, 0, "t3 active again")
t.finish()
