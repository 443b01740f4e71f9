"""test_etl_getbatch.py - GetBatch with a transformer: {"etl": NAME,
"etl_args": A} applies it to every entry (objects and shard members) on
the target that holds it.

A cluster of 1 gateway + 2 targets; a Python worker (aisd.etl.serve)
uppercases bytes and fails for objects named bad*; it is registered over
stdio ("us") and over http ("uh").

Checks:
 1. The entries land on both targets (so the batch has local and peer
    entries).
 2. For each transformer: a GetBatch of objects and shard members with
    etl (and etl_args) is, entry for entry and byte for byte, what the
    per-object GET ?etl= (?archpath=&etl= for members) answers; the same
    batch without etl is the plain bytes.
 3. A failing transform: with coer=true the entry comes as __404__/NAME,
    the others right; with coer=false, sent to the target that holds the
    bad object, the batch fails with 502 naming the transformer.
 4. An unknown transformer: 404 naming it; start/length with etl: 400.
 5. aisctl ml get-batch --etl NAME --etl-args A: the same tar.
 5b. aisd.ShardDataset(etl="mem", etl_args=...) over a bucket of tar shards
    (a per-member worker, aisd.etl.serve_members, uppercasing the .txt
    members, over http): every sample exactly once, its .txt transformed,
    its .cls untouched; the plain ShardDataset reads the stored bytes.
 6. No error-level line in any node's log.
"""
# timeout: 150
import http.client
import io
import json
import os
import tarfile
import urllib.parse

from itlib import T

import clulib
from clulib import Node, poll, request

t = T()
clulib.init(t, "etlgb", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                         "--set", "etl.max_output=4MiB"])
PYDIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python"))
JSON = {"Content-Type": "application/json"}

WORKER = r'''
from aisd.etl import serve

def fn(data, meta, args):
    if meta.get("object", "").startswith("bad"):
        raise ValueError("refuses %s" % meta["object"])
    return args.encode() + data.upper()

serve(fn)
'''

MEMBERS = r'''
from aisd.etl import serve_members
serve_members(lambda name, data, meta, args: args.encode() + data.upper(), ext=(".txt",))
'''


def aisctl(*args):
    return clulib.aisctl(g.url, *args, text=False)


def fetch(base, path, raw):
    u = urllib.parse.urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        c.request("GET", path, body=raw, headers=JSON)
        r = c.getresponse()
        try:
            b = r.read()
        except (http.client.IncompleteRead, OSError):
            b = None
        return r.status, b, {k.lower(): v for k, v in r.getheaders()}
    finally:
        c.close()


def moss(entries, base=None, **opts):
    """GetBatch through base (default: the gateway, the 307 followed): (status, body)."""
    body = dict(opts, **{"in": entries, "mime": ".tar", "strm": True})
    raw = json.dumps(body).encode()
    st, b, h = fetch(base or g.url, "/v1/ml/moss/eb", raw)
    if st == 307:
        loc = urllib.parse.urlsplit(h.get("location", ""))
        st, b, _ = fetch("http://" + loc.netloc, loc.path, raw)
    return st, b


def members(b):
    with tarfile.open(fileobj=io.BytesIO(b), mode="r:") as tf:
        return [(m.name, tf.extractfile(m).read() if m.isfile() else None) for m in tf]


g = Node("g1", "gateway")
ts = [Node("t1", "target"), Node("t2", "target")]
for n in [g] + ts:
    if not t.check(n.start(join=None if n is g else g.url), "%s starts" % n.name):
        t.finish()
t.check(poll(lambda: clulib.smap_ids(g) == {g.id} | {x.id for x in ts}, 60), "the cluster forms")

wdir = clulib.etl_scripts("aisd-etlgb-", {"up.py": WORKER, "mem.py": MEMBERS})
r = request("POST", g.url, "/v1/buckets/eb", json.dumps({"action": "create-bck"}).encode(), JSON)
t.check(r.status == 200, "create bucket eb", r)
data = {"o%02d" % i: (b"obj%d-" % i) * (i * 997 + 1) for i in range(12)}
data["big"] = bytes((i * 7 + 97) % 26 + 97 for i in range(1 << 20))
data["bad1"] = b"never transformed"
shards = {}
for s in range(2):
    tb = io.BytesIO()
    mem = {"m%d.txt" % k: (b"shard%d member%d " % (s, k)) * (k * 50 + 1) for k in range(3)}
    with tarfile.open(fileobj=tb, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for mn, md in mem.items():
            ti = tarfile.TarInfo(mn)
            ti.size = len(md)
            tf.addfile(ti, io.BytesIO(md))
    shards["sh%d.tar" % s] = mem
    data["sh%d.tar" % s] = tb.getvalue()
where = {}
for name, body in data.items():
    r1, r = clulib.follow("PUT", g.url, "/v1/objects/eb/" + name, body)
    t.check(r.status == 200, "PUT eb/" + name, r)
    where[name] = urllib.parse.urlsplit(r1.h("location") or "").netloc
t.check(len(set(where.values())) == 2, "the objects landed on both targets", where)

env = "PYTHONPATH=%s" % PYDIR
for name, comm in (("us", "stdio"), ("uh", "http")):
    rc, out, err = aisctl("etl", "init", name, "--cmd", "python3 %s/up.py" % wdir, "--comm", comm,
                          "--timeout", "10s", "--env", env)
    t.check(rc == 0, "etl init %s --comm %s" % (name, comm), out.decode() + err)

# --- 2. GetBatch with etl vs per-object ?etl= ------------------------------------------
entries = [{"objname": n} for n in sorted(data) if not n.endswith(".tar") and n != "bad1"]
entries += [{"objname": s, "archpath": mn} for s in sorted(shards) for mn in sorted(shards[s])]
ARGS = "a&b "


def per_object(name, e):
    p = "/v1/objects/eb/%s?etl=%s&etl_args=%s" % (e["objname"], name, urllib.parse.quote(ARGS, safe=""))
    if "archpath" in e:
        p += "&archpath=" + e["archpath"]
    _, r = clulib.follow("GET", g.url, p)
    return r.body if r.status == 200 else ("status %d" % r.status).encode()


def ename(e):
    return "eb/" + e["objname"] + ("/" + e["archpath"] if "archpath" in e else "")


plain = [(ename(e), shards[e["objname"]][e["archpath"]] if "archpath" in e else data[e["objname"]])
         for e in entries]
st, b = moss(entries)
t.check(st == 200 and b is not None and members(b) == plain, "GetBatch without etl: the plain bytes", st)
for name in ("us", "uh"):
    st, b = moss(entries, etl=name, etl_args=ARGS)
    got = members(b) if st == 200 and b else None
    want = [(ename(e), per_object(name, e)) for e in entries]
    t.check(all(w[1] == ARGS.encode() + p[1].upper() for w, p in zip(want, plain)),
            "per-object GETs ?etl=%s: the uppercased bytes" % name)
    t.check(got == want, "GetBatch etl=%s: entry for entry, byte for byte the per-object ?etl= GETs" % name,
            (st, [(n, len(x or b"")) for n, x in (got or [])][:6], (b or b"")[:200]))

# --- 3. a failing transform: coer ------------------------------------------------------
bad = [{"objname": "bad1"}] + entries[:3]
for name in ("us", "uh"):
    st, b = moss(bad, etl=name, coer=True)
    got = members(b) if st == 200 and b else None
    want = [("__404__/eb/bad1", b"")] + [(ename(e), p[1].upper()) for e, p in zip(entries[:3], plain)]
    t.check(got == want, "etl=%s, coer=true: the failed entry as __404__/eb/bad1, the others right" % name,
            (st, got and [(n, len(x or b"")) for n, x in got]))
    st, b = moss(bad, base="http://" + where["bad1"], etl=name)
    t.check(st == 502 and b and name.encode() in b and b"refuses bad1" in b,
            "etl=%s, coer=false, on the target holding bad1: 502 naming the transformer and why" % name,
            (st, b and b[:300]))

# --- 4. bad requests -------------------------------------------------------------------
st, b = moss(entries[:2], etl="nosuch")
t.check(st == 404 and b and b"nosuch" in b, "GetBatch with an unknown transformer: 404 naming it", (st, b))
st, b = moss([{"objname": "o01", "start": 1, "length": 2}], etl="uh")
t.check(st == 400, "GetBatch start/length with etl: 400", (st, b))
st, b = moss(entries[:2], etl_args="x")
t.check(st == 400, "GetBatch etl_args without etl: 400", (st, b))

# --- 5. aisctl ml get-batch --etl --------------------------------------------------------
sel = [e["objname"] for e in entries if "archpath" not in e][:4]
rc, out, err = aisctl("ml", "get-batch", "eb", "--list", ",".join(sel), "--etl", "uh", "--etl-args", ARGS, "-")
t.check(rc == 0 and members(out) == [("eb/" + n, ARGS.encode() + data[n].upper()) for n in sel],
        "aisctl ml get-batch --etl uh --etl-args: the transformed tar", err)

# --- 5b. ShardDataset(etl=) ------------------------------------------------------------------
import sys  # noqa: E402
sys.path.insert(0, PYDIR)
from aisd import ShardDataset  # noqa: E402
r = request("POST", g.url, "/v1/buckets/wds", json.dumps({"action": "create-bck"}).encode(), JSON)
t.check(r.status == 200, "create bucket wds", r)
samples = {}
for s in range(4):
    tb = io.BytesIO()
    with tarfile.open(fileobj=tb, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for k in range(5):
            key = "s%d/%03d" % (s, k)
            for ext, body in (("txt", b"caption %d of shard %d" % (k, s)), ("cls", b"%d" % k)):
                ti = tarfile.TarInfo(key + "." + ext)
                ti.size = len(body)
                tf.addfile(ti, io.BytesIO(body))
                samples[(key, ext)] = body
    _, r = clulib.follow("PUT", g.url, "/v1/objects/wds/sh-%d.tar" % s, tb.getvalue())
    t.check(r.status == 200, "PUT wds/sh-%d.tar" % s, r)
rc, out, err = aisctl("etl", "init", "mem", "--cmd", "python3 %s/mem.py" % wdir, "--comm", "http", "--timeout", "10s",
                      "--env", env)
t.check(rc == 0, "etl init mem --comm http (serve_members)", out.decode() + err)


def read_all(**kw):
    got = []
    for smp in ShardDataset(g.url, bucket="wds", prefix="sh-", shuffle=False, timeout=20, retry_for=20, **kw):
        for ext, d in smp.items():
            if not ext.startswith("__"):
                got.append(((smp["__key__"], ext), bytes(d)))
    return got


got = read_all(etl="mem", etl_args="T:")
want = {k: (b"T:" + v.upper() if k[1] == "txt" else v) for k, v in samples.items()}
t.check(len(got) == len(want) and dict(got) == want,
        "ShardDataset(etl=mem, etl_args=T:): every sample once, .txt transformed, .cls untouched",
        (len(got), len(want), sorted(set(dict(got).items()) ^ set(want.items()))[:3]))
got = read_all()
t.check(dict(got) == samples and len(got) == len(samples), "ShardDataset without etl: the stored samples")
try:
    ShardDataset(g.url, bucket="wds", prefix="sh-", etl="mem", cache_dir=wdir)
    t.fail("ShardDataset(etl=, cache_dir=): refused")
except ValueError as e:
    t.check("etl" in str(e), "ShardDataset(etl=, cache_dir=): ValueError", e)

for name in ("us", "uh", "mem"):
    aisctl("etl", "rm", name)
clulib.check_logs([g] + ts)
t.finish()
