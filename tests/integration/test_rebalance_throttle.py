"""test_rebalance_throttle.py - a throttled rebalance still completes and
honours its knobs, on 1 gateway and 3 (then 4) targets started here on
loopback ports, stopped by PID.

Every target runs with rebalance.workers=8 and rebalance.peer_streams=1;
t1 with rebalance.rate=RATE (2 MiB/s, at all times), t2 and t3 with
rebalance.busy_rate=RATE (only while they answer client reads) and no
rebalance.rate. Objects of 256-768 KiB in b1 (1 copy) and b2
(mirror.copies=2). Checks:
 1. out-of-range knobs are refused at start (clear message, exit != 0);
 2. a 4th target joins: the rebalance ends done (within a generous bound),
    reads through the gateway during it (2 threads without pause, of the b2
    objects only: each target holds some, and a read of an object its new
    holder lacks fetches it there, which would leave the rebalance little
    to move) see no errors, and afterwards every
    object is on exactly its HRW holder(s), and reads back byte for byte;
 3. rebalance.peer_streams: every target reports peer_streams_max <= 1
    (the most sends to one peer at once in its run), and the senders 1;
 4. rebalance.rate: t1's run lasted at least its moved bytes / RATE (x 0.9
    for clock granularity); rebalance.busy_rate: so did t2's and t3's
    (x 0.5: the reads are sampled every 200 ms, a quiet window sends
    unpaced). Each moves enough for that to be a quarter second or more,
    so an unpaced run (loopback: tens of ms) fails it. Timing is checked
    only from below: load makes runs slower, never faster.
"""
# timeout: 240
import json
import os
import random
import subprocess
import threading
import time

from itlib import T

import clulib
import hrwlib
from clulib import Node, follow, get, node_id, poll, request

JSON = {"Content-Type": "application/json"}
RATE = 2 << 20
COPIES = {"b1": 1, "b2": 2}

t = T()
BASE = ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=3s", "--set", "store.fsync=never",
        "--set", "net.workers=2", "--set", "rebalance.workers=8", "--set", "rebalance.peer_streams=1"]
CAP = {"t1": ["--set", "rebalance.rate=%d" % RATE, "--set", "rebalance.busy_rate=0"],
       "t2": ["--set", "rebalance.busy_rate=%d" % RATE], "t3": ["--set", "rebalance.busy_rate=%d" % RATE],
       "t4": []}
clulib.init(t, "rebthr", BASE)

# --- 1. knobs out of range are refused ----------------------------------------------------
for bad, want in (("rebalance.peer_streams=0", "rebalance.peer_streams must be between 1 and 64"),
                  ("rebalance.peer_streams=65", "rebalance.peer_streams must be between 1 and 64"),
                  ("rebalance.rate=fast", "rebalance.rate")):
    cp = subprocess.run([clulib.BIN, "--port", "0", "-m", os.path.join(os.environ["AISD_DIR"], "bad-mp"),
                         "--set", bad], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=20)
    t.check(cp.returncode != 0 and want in cp.stderr.decode(), "--set %s is refused: %s" % (bad, want),
            (cp.returncode, cp.stderr.decode()[-300:]))

g = Node("g", "gateway")
targets = [Node("t%d" % i, "target") for i in (1, 2, 3, 4)]
t4 = targets[3]
if not t.check(g.start(), "gateway starts"):
    t.finish()


def start(tg):
    clulib.ARGS = BASE + CAP[tg.name]
    return tg.start(join=g.url)


if not t.check(all(start(tg) for tg in targets[:3]), "3 targets join"):
    t.finish()


def smap():
    return get(g.url, "/v1/cluster?what=smap").json()


def active_targets():
    return sorted(n["id"] for n in smap()["nodes"] if n["role"] == "target" and n["state"] == "active")


def job():
    r = get(g.url, "/v1/cluster?what=rebalance", timeout=10)
    return r.json() if r.status == 200 else None


def settled(ntargets, minv):
    j = job()
    return bool(j) and len(j["targets"]) == ntargets and j["state"] == "done" and all(
        v.get("state") == "done" and v.get("cmap_version", 0) >= minv for v in j["targets"].values())


if not t.check(poll(lambda: len(active_targets()) == 3, 20), "3 active targets in the map"):
    t.finish()
for b in COPIES:
    t.eq(request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON).status, 200, "create " + b)
r = request("PATCH", g.url, "/v1/buckets/b2",
            json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
t.eq(r.status, 200, "b2: mirror.copies=2")

rnd = random.Random(16)
data = {}
for i in range(144):
    data[("b1", "o%03d" % i)] = os.urandom(rnd.randint(256 << 10, 768 << 10))
for i in range(12):
    data[("b2", "m%03d" % i)] = os.urandom(rnd.randint(128 << 10, 512 << 10))
bad = [k for k, v in data.items() if follow("PUT", g.url, "/v1/objects/%s/%s" % k, v)[1].status != 200]
t.check(not bad, "PUT %d objects (%.1f MiB)" % (len(data), sum(map(len, data.values())) / 2**20), bad[:3])
v0 = smap()["version"]
t.check(poll(lambda: settled(3, v0), 60), "the rebalance runs of the joins are done")


# --- 2. a 4th target joins: the throttled rebalance completes ----------------------------
class Reader(threading.Thread):
    """Reads the b2 objects through the gateway, round after round, until stopped."""

    def __init__(self):
        super().__init__()
        self.stop, self.n, self.errors = threading.Event(), 0, []

    def run(self):
        while not self.stop.is_set() and self.n < 100000:
            for k, v in data.items():
                if k[0] != "b2":
                    continue
                if self.stop.is_set():
                    return
                try:
                    st = follow("GET", g.url, "/v1/objects/%s/%s" % k)[1]
                    if st.status != 200 or st.body != v:
                        self.errors.append((k, st.status))
                except OSError as e:
                    self.errors.append((k, str(e)))
                self.n += 1


readers = [Reader(), Reader()]
[x.start() for x in readers]
t0 = time.monotonic()
t.check(start(t4), "t4 joins")
ok = poll(lambda: len(active_targets()) == 4, 30)
v1 = smap()["version"]
ok = ok and poll(lambda: settled(4, v1), 150)
dt = time.monotonic() - t0
[x.stop.set() for x in readers]
[x.join(60) for x in readers]
if not t.check(ok, "the throttled rebalance on 4 targets ends done (%.1f s)" % dt, job()):
    t.finish()
nread, rerrs = sum(x.n for x in readers), sum((x.errors for x in readers), [])
t.check(nread > 0 and not rerrs, "%d reads during the rebalance, none failed" % nread, rerrs[:3])


def local_names(tg, bck):
    names, token = {}, ""
    while True:
        body = json.dumps({"action": "list", "value": {"pagesize": 1000, "continuation_token": token, "props": "size"}})
        d = get(tg.url, "/v1/buckets/" + bck, body=body, headers=JSON).json()
        for e in d["entries"]:
            names[e["name"]] = e["size"]
        token = d["continuation_token"]
        if not token:
            return names


ids = [node_id(x) for x in targets]
by_id = {node_id(x): x for x in targets}
have = {(b, tg.name): local_names(tg, b) for tg in targets for b in COPIES}
errs = []
for (b, n), v in data.items():
    want = {by_id[i].name for i in hrwlib.top(b + "/" + n, ids, COPIES[b])}
    got = {tg.name for tg in targets if have[(b, tg.name)].get(n) == len(v)}
    if want != got:
        errs.append((b, n, sorted(want), sorted(got)))
extra = sum(len(x) for x in have.values()) - sum(COPIES[b] for b, _ in data)
t.check(not errs and extra == 0, "every object on exactly its HRW holder(s), with its size", (errs[:3], extra))
t.check(len(have[("b1", "t4")]) > 0, "t4 holds objects now", len(have[("b1", "t4")]))
bad = [k for k, v in data.items() if follow("GET", g.url, "/v1/objects/%s/%s" % k)[1].body != v]
t.check(not bad, "every object reads back byte for byte", bad[:3])

# --- 3, 4. the knobs ----------------------------------------------------------------------
j = job()
runs = j["targets"]
senders = {k: v for k, v in runs.items() if v.get("moved_bytes", 0) > 0}
t.check(all(v.get("peer_streams_max", 99) <= 1 for v in runs.values()),
        "rebalance.peer_streams=1: at most one send to a peer at once on every target",
        {k: v.get("peer_streams_max") for k, v in runs.items()})
t.check(senders and all(v["peer_streams_max"] == 1 for v in senders.values()),
        "the targets that sent report it (peer_streams_max 1)", {k: v.get("peer_streams_max") for k, v in runs.items()})
name_of = {node_id(x): x.name for x in targets}
slow = []
for k, v in sorted(runs.items()):
    name = name_of.get(k, k)
    span = (v["end"] - v["start"]) / 1e9 if v.get("start") else 0
    print("# %s: %.2f MiB in %.2f s (%.2f MiB/s)" % (name, v.get("moved_bytes", 0) / 2**20, span,
                                                  v.get("moved_bytes", 0) / 2**20 / max(span, 1e-9)))
    if name == "t4":
        continue
    t.check(v.get("moved_bytes", 0) >= 0.5 * RATE, "%s moved %.2f MiB (enough to time)" % (name, v.get("moved_bytes", 0) / 2**20))
    floor = (0.9 if name == "t1" else 0.5) * v.get("moved_bytes", 0) / RATE
    if span < floor:
        slow.append((name, round(span, 3), round(floor, 3)))
t.check(not slow, "t1 (rebalance.rate=2MiB) and t2, t3 (rebalance.busy_rate=2MiB, under reads): no run faster "
        "than its cap allows", slow)
t.finish()
