"""test_ishard.py - initial sharding in the cluster (aisctl ishard): a
bucket of loose files packed into tar shards of another bucket by the
targets. 1 gateway + 3 targets, started here on loopback ports and stopped
by PID.

Checks:
 1. Two layouts of loose files (flat a/000123.jpg + .cls + .txt, and
    nested b/class7/img0042.jpeg + .json) ishard into a destination with
    mirror.copies=2: every shard read with Python's tarfile; every sample
    present exactly once, never split across shards, its members in name
    order and byte for byte the sources; every shard at most shard_size
    bytes; every shard on two targets (its copies hold).
 2. --dry-run prints the plan (shards, bytes min/max/mean, samples per
    shard) that the real run then makes, and writes nothing.
 3. --shuffle: the same seed gives the same shards, another seed another
    order, no seed the key order.
 4. --ext with --missing skip (left out, counted), list (named), fail (400).
 5. --regex groups by a user key.
 6. kill -9 of a target mid-job; after its restart the job completes and
    the result is right.
 7. Bad specs: 400 with a message (template without a number, one that
    cannot name enough shards, a shard_size too small, bad missing, output
    = input), 404 for a missing bucket.
 8. No error-level line in any node's log.
"""
# timeout: 240
import io
import json
import os
import random
import tarfile
import time

from itlib import T, q

import clulib
from clulib import follow, poll, request

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}

t = T()
clulib.init(t, "ishard", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never"])
g, ts = clulib.start_cluster(3)


def ctl(*args, timeout=60):
    return clulib.aisctl(g.url, *args, timeout=timeout)


def names(b):
    return clulib.names(g.url, b)


def key(n):
    d, _, b = n.rpartition("/")
    return (d + "/" if d else "") + b.split(".", 1)[0]


def wait_job(rid, secs=120):
    rc, out, err = ctl("job", "wait", rid or "none", "--timeout-s", str(secs), timeout=secs + 30)
    t.check((rc, out.strip()) == (0, "%s: done" % rid), "aisctl job wait %s: done" % rid, out + err)


def ishard(dst, *args):
    rc, out, err = ctl("ishard", "src", dst, *args)
    words = out.split()
    rid = words[words.index("job") + 1] if rc == 0 and "job" in words else ""
    t.check(rc == 0 and rid, "aisctl ishard src %s %s: started" % (dst, " ".join(args)), out + err)
    return rid


def shards(dst):
    """{shard: [(member, bytes)]} read with tarfile through the gateway."""
    out = {}
    for s in names(dst) or []:
        body = follow("GET", g.url, "/v1/objects/%s/%s" % (dst, q(s)))[1].body
        with tarfile.open(fileobj=io.BytesIO(body)) as tf:
            out[s] = [(m.name, tf.extractfile(m).read()) for m in tf.getmembers()]
        out[s + "#size"] = len(body)
    return out


def check_result(dst, want, size, what):
    sh = shards(dst)
    t.check(sh, "%s: shards written" % what)
    sizes = {k: v for k, v in sh.items() if k.endswith("#size")}
    t.check(all(v <= size for v in sizes.values()), "%s: every shard <= %d bytes" % (what, size), sizes)
    where, seen, bad = {}, {}, []
    for s, mem in sh.items():
        if s.endswith("#size"):
            continue
        last = None
        for n, b in mem:
            k = key(n)
            if k != last and k in where:
                bad.append("%s split or out of order (%s, %s)" % (k, where[k], s))
            where[k] = s
            last = k
            if n in seen:
                bad.append(n + " twice")
            seen[n] = b
    t.check(not bad, "%s: every sample whole, once, its members together" % what, bad[:3])
    t.eq(sorted(seen), sorted(want), "%s: exactly the source's files" % what)
    wrong = [n for n in want if seen.get(n) != want[n]]
    t.check(not wrong, "%s: every member byte for byte" % what, wrong[:3])
    return sh


def sample_order(sh):
    order = []
    for s in sorted(k for k in sh if not k.endswith("#size")):
        for n, _ in sh[s]:
            if not order or order[-1] != key(n):
                order.append(key(n))
    return order


for b in ("src", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"):
    t.eq(request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON).status, 200, "create " + b)
r = request("PATCH", g.url, "/v1/buckets/d1",
            json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
t.eq(r.status, 200, "d1: mirror.copies=2")

rnd = random.Random(7)
data = {}
for i in range(60):  # flat: a/000123.{jpg,cls,txt}
    data["a/%06d.jpg" % i] = os.urandom(rnd.randint(100, 3000))
    data["a/%06d.cls" % i] = b"%d" % (i % 10)
    if i % 3:
        data["a/%06d.txt" % i] = b"caption %d" % i
for c in range(4):  # nested: b/class3/img0042.{jpeg,json}
    for i in range(15):
        data["b/class%d/img%04d.jpeg" % (c, i)] = os.urandom(rnd.randint(500, 5000))
        data["b/class%d/img%04d.json" % (c, i)] = json.dumps({"c": c, "i": i}).encode()
bad = [n for n, d in data.items() if follow("PUT", g.url, "/v1/objects/src/" + q(n), d)[1].status != 200]
t.check(not bad, "%d PUTs to src" % len(data), bad[:3])
SIZE = 20000

# --- 2. dry run ------------------------------------------------------------------------------
rc, out, err = ctl("ishard", "src", "d1", "--shard-size", str(SIZE), "--template", "sh-{000..999}.tar", "--dry-run")
plan = json.loads(out) if rc == 0 else {}
t.check(rc == 0 and plan.get("samples") == 120 and plan.get("files") == len(data) and plan.get("shards", 0) > 3,
        "the dry run's plan: 120 samples, every file", out + err)
t.check(plan.get("shard_bytes", {}).get("max", SIZE + 1) <= SIZE and plan.get("first") == "sh-000.tar",
        "the plan's shard sizes and names", plan)
t.eq(names("d1"), [], "the dry run writes nothing")

# --- 1. two layouts into a mirrored destination ---------------------------------------------
wait_job(ishard("d1", "--shard-size", str(SIZE), "--template", "sh-{000..999}.tar"))
sh = check_result("d1", data, SIZE, "d1")
t.eq(len([k for k in sh if not k.endswith("#size")]), plan.get("shards"), "as many shards as the plan said")
t.eq(sample_order(sh), sorted({key(n) for n in data}), "no shuffle: samples in key order")
single = [s for s in names("d1") or [] if sum(request("GET", x.url, "/v1/objects/d1/" + q(s), headers=INTRA).status
                                                == 200 for x in ts) != 2]
t.check(not single, "every shard on two targets (mirror.copies=2)", single[:3])
r = request("GET", g.url, "/v1/jobs?kind=ishard&all=true")
t.check(r.status == 200 and r.json().get("runs"), "the run is in /v1/jobs?kind=ishard", r.body[:300])

# --- 3. shuffle ------------------------------------------------------------------------------
wait_job(ishard("d2", "--shard-size", str(SIZE), "--shuffle", "42"))
wait_job(ishard("d3", "--shard-size", str(SIZE), "--shuffle", "42"))
wait_job(ishard("d4", "--shard-size", str(SIZE), "--shuffle", "43"))
o2, o3, o4 = (sample_order(check_result(d, data, SIZE, d)) for d in ("d2", "d3", "d4"))
t.eq(o2, o3, "the same seed: the same order")
t.check(o2 != o4 and o2 != sorted(o2), "another seed: another order; not the key order")

# --- 4. missing extensions -------------------------------------------------------------------
want = {n: d for n, d in data.items() if n.startswith("a/") and int(n[2:8]) % 3 and n[-4:] in (".jpg", ".txt")}
wait_job(ishard("d5", "--prefix", "a/", "--ext", ".jpg,.txt", "--missing", "skip", "--shard-size", str(SIZE)))
check_result("d5", want, SIZE, "--missing skip")
rc, out, err = ctl("ishard", "src", "d5", "--prefix", "a/", "--ext", ".jpg,.txt", "--missing", "list", "--dry-run")
plan = json.loads(out) if rc == 0 else {}
t.eq((plan.get("missing"), len(plan.get("missing_keys", []))), (20, 20), "--missing list: 20 named")
t.check("a/000000" in plan.get("missing_keys", []), "a/000000 (no .txt) among them")
rc, out, err = ctl("ishard", "src", "d5", "--ext", ".jpg,.txt", "--missing", "fail")
t.check(rc != 0 and "lacks an extension" in err, "--missing fail: refused, saying which sample", out + err)

# --- 5. a user regex -------------------------------------------------------------------------
wait_job(ishard("d6", "--prefix", "b/", "--regex", "^b/(class[0-9]+)/", "--shard-size", "200000"))
sh = shards("d6")
by = {}
for s, mem in sh.items():
    if not s.endswith("#size"):
        for n, _ in mem:
            by.setdefault(n.split("/")[1], set()).add(s)
t.check(len(by) == 4 and all(len(v) == 1 for v in by.values()), "--regex: each class in one shard", by)

# --- 6. kill -9 of a target mid-job ----------------------------------------------------------
big = {"k/%05d.bin" % i: os.urandom(8000) for i in range(900)}
bad = [n for n, d in big.items() if follow("PUT", g.url, "/v1/objects/src/" + q(n), d)[1].status != 200]
t.check(not bad, "900 more PUTs to src", bad[:3])
rid = ishard("d7", "--prefix", "k/", "--shard-size", "20000")


def t2_run():
    r = request("GET", ts[1].url, "/v1/jobs?id=" + (rid or "none"), headers=INTRA)
    runs = (r.json() or {}).get("runs", []) if r.status == 200 else []
    return runs[0] if runs else {}


at_kill = {}
for _ in range(2000):  # (bounded: 20 s) until t2 has written a shard or more, not all
    at_kill = t2_run()
    if at_kill.get("state") != "running" or at_kill.get("moved", 0) >= 1:
        break
    time.sleep(0.01)
ts[1].kill9()
t.check(at_kill.get("state") == "running" and 1 <= at_kill.get("moved", 0) < at_kill.get("total", 0),
        "t2 killed mid-job (some of its shards written, not all)", at_kill)
t.check(ts[1].start(join=g.url), "t2 restarts")
t.check(poll(lambda: clulib.in_map(g, ts), 20), "t2 rejoins")
wait_job(rid, 180)
fin = t2_run()
t.check(fin.get("state") == "done" and fin.get("moved") == fin.get("total"),
        "t2's resumed run built every shard it owns", fin)
check_result("d7", big, 20000, "after kill -9")

# --- 7. bad specs ----------------------------------------------------------------------------
def post(src, dst, value):
    r = request("POST", g.url, "/v1/buckets/%s?bck_to=%s" % (src, dst), json.dumps({"action": "ishard", "value": value}),
                JSON)
    return r.status, (r.json() or {}).get("message", "") if r.body else ""


ok = {"shard_size": 100000, "template": "s-%04d.tar"}
for v, want_msg in (({"shard_size": 100000, "template": "s.tar"}, "template"),
                    ({"shard_size": 10, "template": "s-%04d.tar"}, "shard_size"),
                    (dict(ok, missing="maybe"), "missing"),
                    (dict(ok, regex="(["), "regex"),
                    (dict(ok, ext=["jpg"]), "ext"),
                    ({"shard_size": 2048, "template": "s-{0..1}.tar"}, "cannot name")):
    st, msg = post("src", "d8", v)
    t.check(st == 400 and want_msg in msg, "bad spec %s: 400 naming %s" % (json.dumps(v), want_msg), (st, msg))
t.eq(post("src", "src", ok)[0], 400, "output = input: 400")
t.eq(post("src", "nosuch", ok)[0], 404, "a missing destination: 404")
t.eq(post("nosuch", "d8", ok)[0], 404, "a missing source: 404")
rc, out, err = ctl("ishard", "src", "src")
t.eq(rc, 2, "aisctl ishard src src: exit 2")
t.eq(names("d8"), [], "nothing written by the bad specs")

clulib.check_logs([g] + ts)
t.finish()
