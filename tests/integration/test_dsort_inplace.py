"""test_dsort_inplace.py - dsort's output shards are built in place: each
target writes the shards it owns where the object layer puts them (a
staged write) and commits them by the object layer's rename, instead of
spooling them and writing them again through a PUT. 1 gateway + 3
targets, started here on loopback ports and stopped by PID.

Checks:
 1. A shuffle into a bucket of one copy: no PUT of /v1/objects reaches any
    target during the job (the targets' aisd_http_requests_total), and
    every input sample is in exactly one output shard, byte for byte; each
    shard answers HEAD with its checksum, an ETag and the run's tag
    (dsort.run=ID), and archpath reads a member of it (its tar index).
 2. Into a bucket with mirror.copies=2: the replicas are still written
    (one intra-cluster PUT per output shard, none more: the owner's copy
    is not PUT), and every shard is on two targets.
 3. A target joins while the targets commit (debug.dsort_commit_pause
    spaces the commits): the shards whose owner it became are sent to it
    instead of committed in place (the targets' logs say so), the job is
    done, and every input sample is in exactly one output shard, byte for
    byte.
 4. No error-level line in any node's log.
"""
# timeout: 150
import io
import json
import random
import tarfile

from itlib import T, q

import clulib
from clulib import Node, follow, poll, request

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}

t = T()
clulib.init(t, "dsortip", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                           "--set", "debug.dsort_commit_pause=500ms"])
g, ts = clulib.start_cluster(3)


def ctl(*args, timeout=60):
    return clulib.aisctl(g.url, *args, timeout=timeout)


def names(b):
    return clulib.names(g.url, b) or []


def object_puts():
    """PUTs of /v1/objects the targets answered so far, summed."""
    n = 0
    for x in ts:
        r = request("GET", x.url, "/metrics")
        for line in (r.body or b"").decode().splitlines():
            if line.startswith("aisd_http_requests_total{") and 'route="/v1/objects"' in line and \
                    'method="PUT"' in line:
                n += int(line.rsplit(" ", 1)[1])
    return n


def dsort_start(src, dst, size="60KiB"):
    rc, out, err = ctl("dsort", src, dst, "--algorithm", "shuffle", "--seed", "7", "--shard-size", size,
                       "--template", "out-{0000..9999}.tar")
    words = out.split()
    rid = words[words.index("job") + 1] if rc == 0 and "job" in words else ""
    t.check(rc == 0 and rid, "aisctl dsort %s %s: started" % (src, dst), out + err)
    return rid


def dsort_done(src, dst, size="60KiB"):
    rid = dsort_start(src, dst, size)
    return job_done(rid)


def job_done(rid):
    rc, out, err = ctl("job", "wait", rid or "none", "--timeout-s", "60", timeout=90)
    t.check((rc, out.strip()) == (0, "%s: done" % rid), "aisctl job wait %s: done" % rid, out + err)
    return rid


def read_back(b):
    """The samples of b's shards: [(key, [(member, bytes)], shard)]."""
    got = []
    for s in names(b):
        resp = follow("GET", g.url, "/v1/objects/%s/%s" % (b, q(s)))[1]
        with tarfile.open(fileobj=io.BytesIO(resp.body)) as tf:
            mem = [(m.name, tf.extractfile(m).read()) for m in tf.getmembers()]
        for n, data in mem:
            if got and got[-1][0] == key(n) and got[-1][2] == s:
                got[-1][1].append((n, data))
            else:
                got.append((key(n), [(n, data)], s))
    return got


def key(n):
    return n.split(".", 1)[0]


# --- input: 6 shards of 20 samples -----------------------------------------------------------
for b in ("in", "o1", "o2", "o3"):
    t.eq(request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON).status, 200, "create " + b)
r = request("PATCH", g.url, "/v1/buckets/o2",
            json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
t.eq(r.status, 200, "o2: mirror.copies=2")
rnd = random.Random(3)
want = {}
for s in range(6):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for i in range(20):
            k = "s%02d%03d" % (s, i)
            want[k] = [(k + ".cls", b"%d\n" % (i % 10)), (k + ".jpg", rnd.randbytes(rnd.randint(100, 6000)))]
            for n, data in want[k]:
                ti = tarfile.TarInfo(n)
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    t.eq(follow("PUT", g.url, "/v1/objects/in/in-%d.tar" % s, bio.getvalue())[1].status, 200,
         "PUT in/in-%d.tar" % s)

# --- 1. one copy: no PUT at all ----------------------------------------------------------------
before = object_puts()
rid = dsort_done("in", "o1")
puts = object_puts() - before
out = names("o1")
t.check(len(out) >= 3, "o1: several output shards", out)
t.eq(puts, 0, "o1: no PUT of /v1/objects during the job (the shards committed in place)")
got = read_back("o1")
keys = [k for k, _, _ in got]
t.eq(sorted(keys), sorted(want), "o1: every input sample exactly once")
t.check(all(want.get(k) == m for k, m, _ in got), "o1: every sample's members in order, byte for byte")
h = follow("HEAD", g.url, "/v1/objects/o1/" + q(out[0]))[1]
hd = h.headers
t.check(h.status == 200 and hd.get("ais-checksum-value") and hd.get("etag"), "o1: a shard has a checksum and an ETag",
        hd)
t.check(("dsort.run=" + rid) in hd.get("ais-custom-md", ""), "o1: a shard carries its run's tag", hd)
first = got[0][1][0][0]
resp = follow("GET", g.url, "/v1/objects/o1/%s?archpath=%s" % (q(got[0][2]), q(first)))[1]
t.check(resp.status == 200 and resp.body == want[key(first)][0][1], "o1: archpath reads a member of a shard")

# --- 2. two copies: the replicas only -----------------------------------------------------------
before = object_puts()
dsort_done("in", "o2")
puts = object_puts() - before
out2 = names("o2")
t.check(len(out2) >= 3, "o2: several output shards", out2)
t.eq(puts, len(out2), "o2: one PUT per output shard during the job (its replica; the owner's copy is not PUT)")
single = []
for s in out2:
    held = sum(1 for x in ts if request("HEAD", x.url, "/v1/objects/o2/" + q(s), None, INTRA).status == 200)
    if held != 2:
        single.append((s, held))
t.check(not single, "o2: every shard on two targets", single[:3])

# --- 3. a target joins during the commits -------------------------------------------------------
rid = dsort_start("in", "o3", "10KiB")


def moved_any():
    for x in ts:
        r = request("GET", x.url, "/v1/jobs?id=%s&all=true" % (rid or "none"), headers=INTRA)
        runs = (r.json() or {}).get("runs", []) if r.status == 200 else []
        if runs and (runs[0].get("moved", 0) >= 1 or runs[0].get("state") != "running"):
            return True
    return False


t.check(poll(moved_any, 60), "o3: the targets commit")
t4 = Node("t4", "target")
t.check(t4.start(join=g.url), "t4 starts and joins during the commits")
t.check(poll(lambda: clulib.in_map(g, ts + [t4]), 20), "the map has t4")
job_done(rid)
sent = 0
for x in ts:
    with open(x.log, errors="replace") as f:
        sent += sum(1 for line in f if "not committed in place" in line)
t.check(sent >= 1, "o3: shards whose owner t4 became were sent to it (%d)" % sent)
got = read_back("o3")
t.eq(sorted(k for k, _, _ in got), sorted(want), "o3: every input sample exactly once")
t.check(all(want.get(k) == m for k, m, _ in got), "o3: every sample's members in order, byte for byte")

ts.append(t4)
clulib.check_logs([g] + ts)
t.finish()
