"""test_mountpath.py - mountpaths attached and detached on a running target
(PUT/DELETE /v1/daemon/mountpaths, aisctl storage mountpath attach|detach|
show, the resilver job) in a cluster of 1 gateway and 2 targets started
here on loopback ports, stopped by PID.

MP_N objects (default 1500) of mixed sizes (most 1-8 KiB, every 40th
100-300 KiB) in bucket b, while a reader loop GETs every object through
the gateway (bytes compared) for the whole test:
 1. aisctl attaches t1/mp2: the resilver (aisctl job wait resilver) ends
    done; each of t1's mountpaths then holds exactly the objects whose HRW
    mountpath it is (counts computed here); PUTs and DELETEs made during it
    hold; /metrics shows aisd_job_state{job="resilver"} 2.
 2. aisctl detaches t1/mp1: it is drained first (reads go on), then closed;
    t1's objects are all on mp2.
 3. t1 restarts: it opens mp2 only (DIR/mountpaths), every object reads.
The reader loop (through steps 1 and 2) sees zero errors.
 4. bad input: a relative path, an unknown mountpath, the last one, one
    attached twice, a gateway request that names no target: clean 4xx.
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
from clulib import Node, follow, get, poll, procs, request

JSON = {"Content-Type": "application/json"}
CTL = os.environ["AISCTL"]
N = int(os.environ.get("MP_N", "1500"))

t = T()
clulib.init(t, "mpath", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1500ms",
                         "--set", "store.fsync=never", "--set", "io.threads=4", "--set", "net.workers=2"])
g = Node("g", "gateway")
t1, t2 = Node("t1", "target"), Node("t2", "target")
if not t.check(g.start() and t1.start(join=g.url) and t2.start(join=g.url), "gateway and 2 targets start"):
    t.finish()
t.check(poll(lambda: len(clulib.smap_ids(g) or ()) == 3, 15), "3 nodes in the map")


def ctl(*args):
    cp = subprocess.run([CTL, "-e", g.url] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=90)
    return cp.returncode, cp.stdout.decode(), cp.stderr.decode()


t.eq(request("POST", g.url, "/v1/buckets/b", '{"action":"create-bck"}', JSON).status, 200, "create b")
rnd = __import__("random").Random(5)
data = {}
for i in range(N):
    size = rnd.randint(100 * 1024, 300 * 1024) if i % 40 == 0 else rnd.randint(1024, 8192)
    data["o%05d" % i] = os.urandom(size)
bad = [k for k, v in data.items() if follow("PUT", g.url, "/v1/objects/b/" + k, v)[1].status != 200]
t.check(not bad, "%d PUTs of mixed sizes" % N, bad[:3])

lock = threading.Lock()
errors, reads = [], [0]
stop = threading.Event()
deleted = set()


def reader():
    keys = sorted(data)
    t_end = time.monotonic() + 120
    while not stop.is_set() and time.monotonic() < t_end:
        for k in keys:
            if stop.is_set():
                break
            with lock:
                want = data.get(k)
                gone = k in deleted
            try:
                r = follow("GET", g.url, "/v1/objects/b/" + k)[1]
            except (OSError, http.client.HTTPException) as e:
                errors.append((k, str(e)))
                continue
            with lock:
                if k in deleted or (gone and r.status == 404):
                    continue
                if r.status != 200 or (data.get(k) != r.body and want != r.body):
                    errors.append((k, r.status))
                reads[0] += 1


rt = threading.Thread(target=reader, daemon=True)
rt.start()
time.sleep(1)


def mps(node):
    r = get(g.url, "/v1/daemon/mountpaths?node=" + node.id)
    if r.status != 307:
        return None
    return follow("GET", g.url, "/v1/daemon/mountpaths?node=" + node.id)[1].json()


def t1_objects():
    ids = [t1.id, t2.id]
    return [k for k in data if hrwlib.top("b/" + k, ids, 1)[0] == t1.id]


def expected_counts(paths):
    want = {p: 0 for p in paths}
    for k in t1_objects():
        want[hrwlib.top("b/" + k, paths, 1)[0]] += 1
    return want


mp1, mp2 = os.path.join(t1.dir, "mp1"), os.path.join(t1.dir, "mp2")
d = mps(t1)
t.eq([m["path"] for m in (d or {}).get("mountpaths", [])], [mp1], "t1 starts with mp1 (gateway 307s to t1)")

# 1. attach, with writes and deletes while the resilver runs
rc, out, err = ctl("storage", "mountpath", "attach", t1.id, mp2)
t.eq(rc, 0, "aisctl storage mountpath attach: exit 0 (%s%s)" % (out.strip(), err.strip()))
extra = {}
for i in range(60):
    k = "n%03d" % i
    v = os.urandom(2000 + i)
    if follow("PUT", g.url, "/v1/objects/b/" + k, v)[1].status == 200:
        extra[k] = v
victims = sorted(data)[::97]
for k in victims:
    with lock:
        deleted.add(k)
    follow("DELETE", g.url, "/v1/objects/b/" + k)
with lock:
    for k in victims:
        del data[k]
    data.update(extra)
rc, out, err = ctl("job", "wait", "resilver", "--timeout-s", "60")
t.eq((rc, out.strip()), (0, "resilver: done"), "aisctl job wait resilver: done")
d = mps(t1) or {}
got = {m["path"]: m["objects"] for m in d.get("mountpaths", [])}
want = expected_counts([mp1, mp2])
t.eq(got, want, "each of t1's mountpaths holds exactly its HRW objects")
t.check(d.get("resilver", {}).get("moved", 0) > 0, "the resilver moved objects", d.get("resilver"))
gone = [k for k in victims if follow("GET", g.url, "/v1/objects/b/" + k)[1].status != 404]
t.check(not gone, "objects deleted during the resilver stay deleted", gone[:3])
rc, out, err = ctl("storage", "mountpath", "show")
t.check(rc == 0 and mp1 in out and mp2 in out and t2.id in out and "resilver: done" in out,
        "aisctl storage mountpath show: both targets, t1's 2 mountpaths", out + err)
rc, out, err = ctl("job", "show", "resilver")
t.check(rc == 0 and "resilver: done" in out, "aisctl job show resilver", out + err)
m = get(t1.url, "/metrics").body.decode()
t.check('aisd_job_state{job="resilver"} 2' in m and 'aisd_job_objects_moved{job="resilver"}' in m,
        "/metrics: the resilver job's state and counters")

# 2. detach mp1: drained, then closed
rc, out, err = ctl("storage", "mountpath", "detach", t1.id, mp1)
t.eq(rc, 0, "aisctl storage mountpath detach: exit 0 (%s%s)" % (out.strip(), err.strip()))
rc, out, err = ctl("job", "wait", "resilver", "--timeout-s", "60")
t.eq((rc, out.strip()), (0, "resilver: done"), "aisctl job wait resilver: done after the detach")
d = mps(t1) or {}
t.eq({m["path"]: m["objects"] for m in d.get("mountpaths", [])}, {mp2: len(t1_objects())},
     "mp1 is gone; all of t1's objects are on mp2")

stop.set()
rt.join(60)
t.check(not errors and reads[0] > 0, "reader loop during attach, resilver and detach: %d reads, zero errors" % reads[0],
        errors[:5])

# 3. restart: the list is kept
p = procs[t1.name]
p.terminate()
p.wait(15)
t.check(t1.start(join=g.url), "t1 restarts")
t.check(poll(lambda: (mps(t1) or {}).get("mountpaths") is not None, 10), "t1 answers")
d = mps(t1) or {}
t.eq([m["path"] for m in d.get("mountpaths", [])], [mp2], "after the restart t1 opens mp2 only")
miss = [k for k, v in data.items() if follow("GET", g.url, "/v1/objects/b/" + k)[1].body != v]
t.check(not miss, "after the restart every object reads back with its bytes (%d)" % len(data), miss[:3])

# 4. bad input
def mp_call(method, body, node=t1):
    return follow(method, g.url, "/v1/daemon/mountpaths?node=" + node.id, json.dumps(body), JSON)[1]


t.eq(mp_call("PUT", {"action": "attach-mp", "value": "rel/path"}).status, 400, "attach of a relative path: 400")
t.eq(mp_call("PUT", {"action": "detach-mp", "value": mp2}).status, 400, "PUT with detach-mp: 400")
t.eq(mp_call("DELETE", {"action": "detach-mp", "value": "/no/such"}).status, 404, "detach of an unknown path: 404")
r = mp_call("DELETE", {"action": "detach-mp", "value": mp2})
t.check(r.status == 409 and "last" in (r.json() or {}).get("message", ""), "detach of the last mountpath: 409", r)
t.eq(mp_call("PUT", {"action": "attach-mp", "value": mp2}).status, 409, "attach of an attached one: 409")
r = request("GET", g.url, "/v1/daemon/mountpaths")
t.check(r.status == 400 and (r.json() or {}).get("message"), "a gateway needs ?node=: 400 with a message", r)
t.eq(request("GET", g.url, "/v1/daemon/mountpaths?node=nosuch").status, 404, "unknown node: 404")
rc, out, err = ctl("storage", "mountpath", "attach", t1.id, "relative")
t.check(rc == 2 and "absolute" in err, "aisctl attach of a relative path: usage error (exit 2)", (rc, err))
t.finish()
