"""test_rebalance.py - rebalance, mirror repair and decommission on a
cluster of 1 gateway and 3 (then 4) targets started here on loopback ports,
stopped by PID.

REB_N objects (default 3000; REB_N=20000 for the issue's number) of mixed
sizes (most 1-16 KiB, every 50th 64-512 KiB) in bucket b1 (1 copy) and
REB_N/5 in b2 (mirror.copies=2). Checks:
 1. a 4th target joins: a reader loop over every object (through the
    gateway, bytes compared) during the whole rebalance sees zero errors;
    the cluster's job status (GET /v1/cluster?what=rebalance) ends done;
    afterwards every object is on exactly its HRW holder(s) (listed on each
    target directly, placement computed here), no orphans, counts and bytes
    add up; the job counters show what moved.
 2. copies=2, kill -9 of a target under a bounded PUT/GET load: every
    acknowledged PUT is readable with its bytes; GETs fail only inside the
    detection window (the number is printed); once the target leaves the
    map, every b2 object has 2 copies again on the 3 others; when it
    returns, every object is on exactly its holders again.
 3. decommission of a target under a read loop: zero failed reads, the node
    ends empty and out of the map.
"""
# timeout: 280
import http.client
import json
import os
import random
import subprocess
import threading
import time
import urllib.parse

from itlib import T, q

import clulib
import hrwlib
from clulib import Node, follow, get, node_id, poll, procs, request, smap_ids

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}
N = int(os.environ.get("REB_N", "3000"))

t = T()
clulib.init(t, "reb", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1500ms",
                       "--set", "store.fsync=never", "--set", "io.threads=4", "--set", "net.workers=2"])

g = Node("g", "gateway")
targets = [Node("t%d" % i, "target") for i in (1, 2, 3, 4)]
t1, t2, t3, t4 = targets
if not t.check(g.start(), "gateway starts"):
    t.finish()
if not t.check(all(tg.start(join=g.url) for tg in targets[:3]), "3 targets join"):
    t.finish()


def smap():
    return get(g.url, "/v1/cluster?what=smap").json()


def active_targets():
    return sorted(n["id"] for n in smap()["nodes"] if n["role"] == "target" and n["state"] == "active")


if not t.check(poll(lambda: len(active_targets()) == 3, 15), "3 active targets in the map"):
    t.finish()
t.eq(request("POST", g.url, "/v1/buckets/b1", '{"action":"create-bck"}', JSON).status, 200, "create b1")
t.eq(request("POST", g.url, "/v1/buckets/b2", '{"action":"create-bck"}', JSON).status, 200, "create b2")
r = request("PATCH", g.url, "/v1/buckets/b2", json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
t.eq(r.status, 200, "b2: mirror.copies=2")
COPIES = {"b1": 1, "b2": 2}


class Client:
    """Keep-alive connections per host; follows one 307."""

    def __init__(self):
        self.conns = {}

    def _do(self, netloc, method, path, body):
        for attempt in (0, 1):
            c = self.conns.get(netloc)
            if c is None:
                host, port = netloc.split(":")
                c = self.conns[netloc] = http.client.HTTPConnection(host, int(port), timeout=30)
            try:
                c.request(method, path, body=body)
                r = c.getresponse()
                return r.status, r.getheader("location"), r.read()
            except (http.client.HTTPException, OSError):
                c.close()
                del self.conns[netloc]
                if attempt:
                    raise

    def req(self, method, path, body=None):
        """Through the gateway, following up to 3 redirects (as curl -L would)."""
        netloc = urllib.parse.urlsplit(g.url).netloc
        for _ in range(4):
            st, loc, data = self._do(netloc, method, path, body)
            if st != 307:
                return st, data
            u = urllib.parse.urlsplit(loc)
            netloc, path = u.netloc, u.path + ("?" + u.query if u.query else "")
        return st, data


rnd = random.Random(5)
data = {}
for i in range(N):
    data[("b1", "d%d/o%06d" % (i % 17, i))] = os.urandom(rnd.randint(64 << 10, 512 << 10) if i % 50 == 0 else rnd.randint(1 << 10, 16 << 10))
for i in range(N // 5):
    data[("b2", "m%05d" % i)] = os.urandom(rnd.randint(1 << 10, 16 << 10))
keys = sorted(data)


def put_all(items, nthreads=8):
    bad = []
    lock = threading.Lock()
    it = iter(items)

    def run():
        c = Client()
        while True:
            with lock:
                k = next(it, None)
            if k is None:
                return
            try:
                st, _ = c.req("PUT", "/v1/objects/%s/%s" % (k[0], q(k[1])), data[k])
            except (OSError, http.client.HTTPException) as e:
                st = str(e)
            if st != 200:
                with lock:
                    bad.append((k, st))
    ths = [threading.Thread(target=run) for _ in range(nthreads)]
    [x.start() for x in ths]
    [x.join() for x in ths]
    return bad


t0 = time.monotonic()
bad = put_all(keys)
t.check(not bad, "%d PUTs through the gateway (%.1f s)" % (len(keys), time.monotonic() - t0), bad[:3])


class Reader(threading.Thread):
    """GETs every object in turn through the gateway, comparing bytes, until stopped."""

    def __init__(self, names, nthreads=4):
        super().__init__()
        self.names, self.stop, self.n, self.errors, self.err_times = names, False, 0, [], []
        self.nthreads = nthreads

    def run(self):
        def loop(part):
            c = Client()
            while not self.stop:
                for k in part:
                    if self.stop:
                        return
                    try:
                        st, body = c.req("GET", "/v1/objects/%s/%s" % (k[0], q(k[1])))
                        ok = st == 200 and body == data[k]
                    except (OSError, http.client.HTTPException) as e:
                        st, ok = str(e), False
                    self.n += 1
                    if not ok:
                        self.errors.append((k, st))
                        self.err_times.append(time.monotonic())
        parts = [self.names[i::self.nthreads] for i in range(self.nthreads)]
        ths = [threading.Thread(target=loop, args=(p,)) for p in parts]
        [x.start() for x in ths]
        [x.join() for x in ths]


def job():
    r = get(g.url, "/v1/cluster?what=rebalance", timeout=10)
    return r.json() if r.status == 200 else None


def settled(ntargets, minv):
    """Every target in the map finished a clean run under map minv or later."""
    j = job()
    if not j or len(j["targets"]) != ntargets:
        return False
    return all(v.get("state") == "done" and v.get("cmap_version", 0) >= minv for v in j["targets"].values()) \
        and j["state"] == "done"


def local_names(tg, bck):
    names, token = {}, ""
    while True:
        body = json.dumps({"action": "list", "value": {"pagesize": 10000, "continuation_token": token, "props": "size"}})
        r = get(tg.url, "/v1/buckets/" + bck, body=body, headers=JSON)
        d = r.json()
        for e in d["entries"]:
            names[e["name"]] = e["size"]
        token = d["continuation_token"]
        if not token:
            return names


def placement_errors(tgs, what, buckets=("b1", "b2")):
    ids = [node_id(x) for x in tgs]
    by_id = {node_id(x): x for x in tgs}
    have = {(b, tg.name): local_names(tg, b) for tg in tgs for b in buckets}
    errs, count, nbytes = [], 0, 0
    for (b, n), d in data.items():
        if b not in buckets:
            continue
        want = {by_id[i].name for i in hrwlib.top(b + "/" + n, ids, COPIES[b])}
        got = {tg.name for tg in tgs if n in have[(b, tg.name)]}
        if want != got:
            errs.append((b, n, sorted(want), sorted(got)))
    for (b, name), names in have.items():
        count += len(names)
        nbytes += sum(names.values())
        orphans = [n for n in names if (b, n) not in data]
        if orphans:
            errs.append(("orphan", b, name, orphans[:2]))
    want_count = sum(COPIES[b] for b, _ in data if b in buckets)
    want_bytes = sum(COPIES[b] * len(v) for (b, _), v in data.items() if b in buckets)
    t.eq((count, nbytes), (want_count, want_bytes), "%s: copies and bytes on the targets add up" % what)
    return errs


v0 = smap()["version"]
t.check(poll(lambda: settled(3, v0), 60), "the first rebalance jobs (on joins) are done")
errs = placement_errors(targets[:3], "3 targets")
t.check(not errs, "3 targets: every object on exactly its HRW holder(s)", errs[:3])

# --- 1. a 4th target joins under a reader loop -----------------------------------------
reader = Reader(keys)
reader.start()
poll(lambda: reader.n >= 20, 30)  # the reader is reading
t0 = time.monotonic()
n0 = reader.n
t.check(t4.start(join=g.url), "t4 joins")
ok = poll(lambda: len(active_targets()) == 4, 30)
v1 = smap()["version"]
ok = ok and poll(lambda: settled(4, v1), 120)
dt = time.monotonic() - t0
n_during = reader.n - n0
# enough reads to cover half the keys, however fast the rebalance was
poll(lambda: reader.n > len(keys) // 2, 120)
reader.stop = True
reader.join()
t.check(ok, "the rebalance ends done on all 4 targets (%.1f s)" % dt, job())
j = job()
tot = j["totals"] if j else {}
t.diag("rebalance: %s objects sent, %s bytes, %s moved off, in %.1f s" % (tot.get("moved"), tot.get("moved_bytes"), tot.get("deleted"), dt))
t.check(tot.get("moved", 0) > len(keys) // 8 and tot.get("errors", 1) == 0, "the job moved about a quarter of the copies, no errors", tot)
t.check(n_during > 0 and reader.n > len(keys) // 2 and not reader.errors,
        "reader around the rebalance: %d GETs (%d while it ran), zero errors" % (reader.n, n_during), reader.errors[:3])
errs = placement_errors(targets, "4 targets")
t.check(not errs, "4 targets: every object on exactly its HRW holder(s), no orphans", errs[:3])

# --- 2. copies=2: kill -9 under a PUT/GET load ----------------------------------------------
b2keys = [k for k in keys if k[0] == "b2"]
acked, failed_puts, get_fail_times = [], [], []  # get_fail_times: when each failed GET started
n_gets = [0]
uncertain = {}  # PUTs cut by a connection error: stored or not, either is right
stop = False


def writer():
    c = Client()
    i = 0
    while not stop and i < 3000:
        k = ("b2", "w%05d" % i)
        data[k] = os.urandom(2000 + i)
        try:
            st, _ = c.req("PUT", "/v1/objects/b2/" + k[1], data[k])
        except (OSError, http.client.HTTPException) as e:
            st = str(e)
        if st == 200:
            acked.append(k)
        else:
            failed_puts.append((k, st))
            if not isinstance(st, int):
                uncertain[k] = data[k]
            del data[k]
        i += 1


def getter():
    c = Client()
    while not stop:
        for k in b2keys:
            if stop:
                return
            t_start = time.monotonic()
            try:
                st, body = c.req("GET", "/v1/objects/b2/" + q(k[1]))
                ok = st == 200 and body == data[k]
            except (OSError, http.client.HTTPException):
                ok = False
            n_gets[0] += 1
            if not ok:
                get_fail_times.append(t_start)


def map_version(node):
    try:
        return get(node.url, "/v1/cluster?what=smap", timeout=5).json()["version"]
    except (OSError, http.client.HTTPException, KeyError, TypeError):
        return 0


ths = [threading.Thread(target=writer), threading.Thread(target=getter)]
[x.start() for x in ths]
poll(lambda: n_gets[0] >= 20 and len(acked) >= 20, 30)  # the load is running
t_kill = time.monotonic()
t2.kill9()
gone = poll(lambda: node_id(t2) not in smap_ids(g), 30)
t_gone = time.monotonic()
v_gone = smap()["version"]
# the end of the detection window is an event: every live node holds the map without t2
t.check(poll(lambda: all(map_version(x) >= v_gone for x in (g, t1, t3, t4)), 30),
        "every live node has the map without t2 (v%d)" % v_gone)
t_all = time.monotonic()
n_at = n_gets[0]
poll(lambda: n_gets[0] >= n_at + 200, 60)  # load after the window
stop = True
[x.join() for x in ths]
t.check(gone, "t2 leaves the map (%.1f s after kill -9)" % (t_gone - t_kill))
late = [x for x in get_fail_times if x > t_all]
t.diag("GETs failed: %d, all started within %.1f s of the kill; PUTs acknowledged %d, refused %d" % (
    len(get_fail_times), (max(get_fail_times) - t_kill) if get_fail_times else 0, len(acked), len(failed_puts)))
t.check(not late and n_gets[0] > n_at, "GETs fail only inside the detection window (%d failed, none started after every "
        "node had the new map; %d GETs after it)" % (len(get_fail_times), n_gets[0] - n_at), len(late))
t.check(acked, "PUTs were acknowledged during the load (%d)" % len(acked))
why = {}
for k, st in failed_puts:
    why.setdefault(str(st)[:80], []).append(k[1])
t.diag("refused PUTs: %s" % {w: (len(v), v[:3]) for w, v in why.items()})
live = [t1, t3, t4]
v2 = smap()["version"]
t.check(poll(lambda: settled(3, v2), 60), "the rebalance after t2 left is done")
lost = [k for k in acked if follow("GET", g.url, "/v1/objects/b2/" + k[1])[1].body != data[k]]
t.check(not lost, "zero acknowledged PUTs lost", lost[:3])
# a PUT whose connection broke (the owner killed after a copy landed) may
# exist: then whole, and counted from here on
stored = [k for k, v in uncertain.items() if follow("GET", g.url, "/v1/objects/b2/" + k[1])[1].body == v]
for k in stored:
    data[k] = uncertain[k]
t.diag("PUTs cut by a connection error: %d, %d of them stored whole" % (len(uncertain), len(stored)))
errs = placement_errors(live, "t2 gone, b2", buckets=("b2",))  # b1's objects on t2 wait for its return
t.check(not errs, "with t2 gone: every object on exactly its holders (b2 copies repaired)", errs[:3])

t.check(t2.start(join=g.url), "t2 restarts and rejoins")
t.check(poll(lambda: len(active_targets()) == 4, 15), "t2 is active again")
v3 = smap()["version"]
t.check(poll(lambda: settled(4, v3), 60), "the rebalance after t2 returned is done", (v3, {k: (v.get("state"), v.get("cmap_version"), v.get("errors"), v.get("last_error")) for k, v in job()["targets"].items()}))
errs = placement_errors(targets, "t2 back")
t.check(not errs, "t2 back: every object on exactly its holders, no orphans", errs[:3])

# --- 3. decommission under a reader loop ---------------------------------------------------
reader = Reader(sorted(data), nthreads=3)
reader.start()
time.sleep(0.5)
r = request("PUT", g.url, "/v1/cluster", json.dumps({"action": "decommission-node", "value": {"sid": node_id(t3)}}), JSON, timeout=120)
time.sleep(0.5)
reader.stop = True
reader.join()
t.eq(r.status, 200, "decommission-node t3: 200 after the drain")
t.check(node_id(t3) not in smap_ids(g), "t3 is out of the map")
# drained and out of the map, t3 exits (status 0); what it left on disk is read there
try:
    rc3 = procs["t3"].wait(30)
except subprocess.TimeoutExpired:
    rc3 = None
t.eq(rc3, 0, "the decommissioned t3 exits with status 0")
left = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(t3.dir, "mp1", "obj")) for f in fs]
t.check(not left, "t3 is empty (no object file left in its mountpath)", left[:3])
t.check(not reader.errors, "reader during the decommission: %d GETs, zero errors" % reader.n, reader.errors[:3])
v4 = smap()["version"] - 1  # decommissioning moved the objects; the removal moves none
t.check(poll(lambda: settled(3, v4), 60), "the rebalance after t3 left is done")
errs = placement_errors([t1, t2, t4], "t3 decommissioned")
t.check(not errs, "after the decommission: every object on exactly its holders", errs[:3])

t.finish()
