"""test_locality.py - where shards live, and training ranks that read what
is near them: a gateway and 3 targets, each target on its own loopback
address (127.0.0.2-4 play 3 hosts).

1. Listing with props "location": through the gateway every object names
   the target holding it (id, host, public URL), as each target's own
   listing says; with mirror copies=2 (after the rebalance) both holders;
   `aisctl ls --props name,location` prints them; a bad property is 400.
2. Ranks (separate processes, rank/world_size, a torch DataLoader with 2
   workers each), 3 ranks on the 3 hosts, 2 epochs: plain (locality off)
   and locality on: every sample exactly once per epoch across ranks and
   workers; with locality each rank reads the plan's shards and at least
   the plan's local fraction of bytes from the target on its host, and at
   least two thirds (the plan's fraction depends on where HRW put the
   shards: 74-100% seen; plain: about a third); the counters add up to the
   bytes read.
3. Node cache: 2 ranks on hosts that run no target, a cache_dir each,
   exchange 0, 3 epochs: epoch 0 all remote, epoch 1 all from the cache;
   a shard replaced before epoch 2 is read new (its new samples, never the
   cached ones) and most of the rest still from the cache (the shard has
   fewer samples, so the plan deals the new listing afresh; an odd count
   leaves one sample out of the epoch, as the plan says). A cache smaller than a
   rank's share evicts, stays under its bound, and every sample is still
   seen once.
   `python3 -m aisd.plan` prints the same plan; `python3 -m aisd.model`
   answers for 1..1,024 learners.
4. The targets' /metrics count the bytes they served to this host
   (aisd_http_served_bytes_total{peer="local"}).
Skipped (with the reason) only when torch is not installed.
"""
# timeout: 300
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import zlib

from itlib import T

import loclib

import clulib
from clulib import poll, request

ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
t = T()
try:
    import torch  # noqa: F401
except ImportError as e:
    t.ok("# SKIP torch is not installed (%s): tools/install-deps.sh installs python3-torch" % e)
    t.finish()
from aisd import Client  # noqa: E402
from aisd.plan import list_shards, make_plan  # noqa: E402

TMP = os.environ["TMPDIR"]
BASE = ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=60s", "--set", "store.fsync=never"]
JSON = {"Content-Type": "application/json"}


clulib.init(t, "locality", BASE)
HostNode = loclib.HostNode
g = HostNode("g1", "gateway")
tg = []
for i in range(3):
    n = HostNode("t%d" % (i + 1), "target")
    n.host = "127.0.0.%d" % (i + 2)
    tg.append(n)
if not t.check(g.start() and all(x.start(join=g.url) for x in tg), "a gateway and 3 targets on 127.0.0.2-4"):
    t.finish()
want_ids = {g.id} | {x.id for x in tg}
if not t.check(poll(lambda: clulib.smap_ids(g) == want_ids, 15), "the map lists every node"):
    t.finish()
c = Client(g.url, timeout=20, retry_for=30)
HOSTS = [x.host for x in tg]


def listing(node, bck, props):
    out, token = [], ""
    while True:
        body = json.dumps({"action": "list", "value": {"props": props, "continuation_token": token}})
        r = request("GET", node.url, "/v1/buckets/" + bck, body.encode(), JSON)
        if r.status != 200:
            return r
        d = r.json()
        out += d["entries"]
        token = d["continuation_token"]
        if not token:
            return out


def holders(bck):
    """name -> {target ids whose own listing has it}."""
    h = {}
    for x in tg:
        for e in listing(x, bck, "name"):
            h.setdefault(e["name"], set()).add(x.id)
    return h


def loc_ok(bck, copies):
    ents = listing(g, bck, "name,size,location")
    if not isinstance(ents, list):
        return False, ents
    h = holders(bck)
    by = {x.id: x for x in tg}
    bad = []
    for e in ents:
        ids = [loc["id"] for loc in e.get("location", [])]
        good = (len(ids) == copies and set(ids) == h.get(e["name"]) and
                all(loc["host"] == by[loc["id"]].host and loc["url"] == by[loc["id"]].url for loc in e["location"]))
        if not good:
            bad.append((e["name"], e.get("location"), sorted(h.get(e["name"], ()))))
    return not bad and len(ents) == len(h), bad[:2]


# --- 1. the location property -------------------------------------------------------------------
c.create_bucket("loc")
for i in range(40):
    c.put("loc", "o%03d" % i, os.urandom(100 + i))
ok, bad = loc_ok("loc", 1)
t.check(ok, "listing props=location: each object names the one target holding it (id, host, URL)", bad)
r = request("PATCH", g.url, "/v1/buckets/loc",
            json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}).encode(), JSON)
t.check(r.status == 200, "loc: mirror copies=2", r)
res = {}
t.check(poll(lambda: res.update(v=loc_ok("loc", 2)) or res["v"][0], 30),
        "after the rebalance every object names both holders", res.get("v"))
cp = subprocess.run([os.environ["AISCTL"], "--endpoint", g.url, "ls", "loc", "--props", "name,location"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
lines = cp.stdout.decode().splitlines()
ids = {x.id + "@" + x.host for x in tg}
rows = [ln.split() for ln in lines[1:]]
t.check(cp.returncode == 0 and lines and lines[0].split() == ["NAME", "LOCATION"] and len(rows) == 40 and
        all(len(rw) == 2 and len(rw[1].split(",")) == 2 and set(rw[1].split(",")) <= ids for rw in rows),
        "aisctl ls --props name,location: ID@HOST of both copies per object", cp.stdout[:300] + cp.stderr[:300])
r = request("GET", g.url, "/v1/buckets/loc?props=name,where")
t.check(r.status == 400 and b"location" in r.body, "an unknown property: 400 naming the known ones", r)


# --- 2. ranks: plain vs locality ----------------------------------------------------------------
def make_shards(n_shards, per, seed, prefix="train/"):
    """n_shards tar shards of per samples each, PUT; returns {shard: {key: crc}}."""
    rng = random.Random(seed)
    want = {}
    for s in range(n_shards):
        buf, crcs = io.BytesIO(), {}
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for i in range(per):
                key = "s%03d_%04d" % (s, i)
                data = {"bin": rng.randbytes(rng.randrange(2000, 12000)), "cls": b"%d" % (i % 7)}
                crc = 0
                for ext in sorted(data):
                    ti = tarfile.TarInfo(key + "." + ext)
                    ti.size = len(data[ext])
                    tf.addfile(ti, io.BytesIO(data[ext]))
                    crc = zlib.crc32(data[ext], crc)
                crcs[key] = crc
        name = "%sshard-%04d.tar" % (prefix, s)
        c.put("ml", name, buf.getvalue())
        want[name] = crcs
    return want


def run_ranks(world, hosts, epochs, go=None, **kw):
    """Starts world rank processes; go(epoch) runs before each epoch starts.
    Returns {epoch: [per-rank result]} or None (with a failed check)."""
    sync = os.path.join(TMP, "sync%d" % random.randrange(1 << 30))
    os.makedirs(sync)
    procs = []
    for r in range(world):
        a = dict(endpoint=g.url, bucket="ml", prefix="train/", rank=r, world=world, hosts=hosts, epochs=epochs,
                 workers=2, seed=5, sync_dir=sync, job=os.path.basename(sync), **kw)
        procs.append(subprocess.Popen(["/usr/bin/python3", os.path.join(os.environ["IT_LIB"], "locrank.py"),
                                       json.dumps(a)], stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    try:
        for ep in range(epochs):
            ready = poll(lambda: all(os.path.exists(os.path.join(sync, "ready.%d.%d" % (ep, r)))
                                     for r in range(world)) or any(p.poll() for p in procs), 120)
            if not ready or any(p.poll() for p in procs):
                break
            if go:
                go(ep)
            open(os.path.join(sync, "go.%d" % ep), "w").close()
        outs = [p.communicate(timeout=180) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return loclib.collect(t, procs, outs)


def fractions(res, ep):
    tot = {k: sum(rk["stats"][k] for rk in res[ep]) for k in ("local", "cached", "remote")}
    n = sum(tot.values()) or 1
    return {k: v / n for k, v in tot.items()}, sum(tot.values())


c.create_bucket("ml")
want = make_shards(24, 12, 1)
total = sum(e["size"] for e in c.list("ml", "train/"))
plain = run_ranks(3, HOSTS, 2)
if plain:
    loclib.exactly_once(t, plain, want, "plain")
    f, n = fractions(plain, 1)
    t.check(n >= total, "plain: the counters add up to the shards' bytes (%d >= %d)" % (n, total))
    t.diag("plain: local %.2f remote %.2f of %d bytes" % (f["local"], f["remote"], n))
loc = run_ranks(3, HOSTS, 2, locality=True)
if loc:
    loclib.exactly_once(t, loc, want, "locality")
    shards, _ = list_shards(c, "ml", "train/")
    for ep in (0, 1):
        p = make_plan(shards, HOSTS, 5, ep, 0.0)
        seen = [sorted({s for s, _, _ in rk["samples"]}) for rk in loc[ep]]
        t.check(seen == [sorted(x) for x in p.ranks], "locality, epoch %d: each rank read the plan's shards" % ep)
        f, n = fractions(loc, ep)
        t.check(f["local"] >= p.local_fraction() - 0.01 and f["local"] >= 0.66 and n >= total,
                "locality, epoch %d: %.0f%% of bytes from the target on the rank's host (plan %.0f%%; plain %.0f%%)"
                % (ep, 100 * f["local"], 100 * p.local_fraction(), 100 * fractions(plain, ep)[0]["local"] if plain else -1),
                f)

env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tools", "python"))
cp = subprocess.run(["/usr/bin/python3", "-m", "aisd.plan", "ml/train/", "--world", "3", "--hosts", ",".join(HOSTS),
                     "--seed", "5", "--epochs", "2", "--exchange", "0.25", "--endpoint", g.url, "--json"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
eps = [json.loads(x) for x in cp.stdout.decode().splitlines()] if cp.returncode == 0 else []
p1 = make_plan(list_shards(c, "ml", "train/")[0], HOSTS, 5, 1, 0.25)
t.check(len(eps) == 2 and [rk["shards"] for rk in eps[1]["ranks"]] == p1.ranks and eps[1]["exchanged"] >= 6
        and eps[1]["spearman_prev"] is not None,
        "python3 -m aisd.plan: the ranks' shards as ShardDataset computes them, with the exchange", cp.stderr[-300:])
cp = subprocess.run(["/usr/bin/python3", "-m", "aisd.plan", "nosuch/", "--world", "2", "--hosts", "a,b",
                     "--endpoint", g.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
t.check(cp.returncode == 1 and b"404" in cp.stderr, "aisd.plan on a missing bucket: exit 1 with the error", cp.stderr)
cp = subprocess.run(["/usr/bin/python3", "-m", "aisd.model", "--dataset", "1T", "--sample", "110K", "--storage", "2G",
                     "--network", "100gbit", "--train", "800", "--preprocess", "1200", "--cache", "200G", "--json"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
rows = [json.loads(x) for x in cp.stdout.decode().splitlines()] if cp.returncode == 0 else []
t.check([r["learners"] for r in rows] == [2 ** i for i in range(11)] and
        rows[-1]["locality"]["net_bytes"] == 0 < rows[-1]["caching"]["net_bytes"] < rows[-1]["plain"]["net_bytes"],
        "python3 -m aisd.model: 1..1,024 learners; network bytes locality < caching < plain", cp.stderr[-300:])

# --- 3. node cache ----------------------------------------------------------------------------
newer = {}


def replace(ep):
    if ep == 2:  # shard 3 gets new samples
        rng = random.Random(99)
        buf, crcs = io.BytesIO(), {}
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for i in range(5):
                key, data = "new_%d" % i, rng.randbytes(3000)
                ti = tarfile.TarInfo(key + ".bin")
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
                crcs[key] = zlib.crc32(data)
        c.put("ml", "train/shard-0003.tar", buf.getvalue())
        newer["train/shard-0003.tar"] = crcs


cres = run_ranks(2, ["gpuA", "gpuB"], 3, go=replace, locality=True, cache_bytes=1 << 30,
                 cache_dir=os.path.join(TMP, "cache-%s"))  # %s: the rank's host
if cres:
    loclib.exactly_once(t, {0: cres[0], 1: cres[1]}, want, "cache")  # 288 samples: none dropped
    loclib.exactly_once(t, {2: cres[2]}, dict(want, **newer), "cache, shard-0003 replaced",
                        dropped=loclib.dropped(dict(want, **newer), list_shards(c, "ml", "train/")[0],
                                               ["gpuA", "gpuB"], 5, (2,)))
    f0, n0 = fractions(cres, 0)
    f1, n1 = fractions(cres, 1)
    f2, n2 = fractions(cres, 2)
    t.check(f0["remote"] == 1.0, "cache, epoch 0 (empty caches): all %d bytes remote" % n0, f0)
    t.check(f1["cached"] == 1.0, "cache, epoch 1: all %d bytes from the node caches, none remote" % n1, f1)
    new_sz = c.head("ml", "train/shard-0003.tar").size
    rem2 = sum(rk["stats"]["remote"] for rk in cres[2])
    # the replaced shard has fewer samples: the plan deals the new listing's samples afresh, some move
    t.check(new_sz <= rem2 and f2["cached"] >= 0.5 and f2["local"] == 0, "cache, epoch 2: the replaced shard "
            "(%d bytes) read remote (its new version), most of the rest (%.0f%%) cached" % (new_sz, 100 * f2["cached"]),
            rem2)
share = total // 2
small = run_ranks(2, ["gpuA", "gpuB"], 2, locality=True, cache_bytes=share // 2,
                  cache_dir=os.path.join(TMP, "small-%s"))
if small:
    cur = dict(want, **newer) if newer else want
    loclib.exactly_once(t, small, cur, "small cache (half a rank's share)",
                        dropped=loclib.dropped(cur, list_shards(c, "ml", "train/")[0], ["gpuA", "gpuB"], 5, (0, 1)))
    from aisd.cache import NodeCache  # noqa: E402
    used = [NodeCache(os.path.join(TMP, "small-gpu%s" % h), share // 2).used() for h in "AB"]
    f1, _ = fractions(small, 1)
    t.check(all(0 < u <= share // 2 for u in used) and 0 < f1["cached"] < 1,
            "small cache: each holds at most its bound (%s of %d), epoch 1 partly cached (%.0f%%)"
            % (used, share // 2, 100 * f1["cached"]))

# --- listings per epoch: members listed once, an unchanged bucket re-listed by its shards alone ---
from aisd.dataset import ShardDataset  # noqa: E402


class CountingClient(Client):
    calls = []

    def list(self, bucket, prefix="", pagesize=1000, props=None, archive=False, partial=False):
        CountingClient.calls.append(archive)
        return super().list(bucket, prefix, pagesize, props, archive, partial)


cc = CountingClient(g.url, timeout=20, retry_for=30)
ds = ShardDataset(cc, "ml", prefix="train/", rank=0, world_size=1, shuffle=True, seed=5)
first = list(CountingClient.calls)
CountingClient.calls.clear()
ds.set_epoch(1)
ds.plan()
second = list(CountingClient.calls)
full = {x.name: x.samples for x in list_shards(c, "ml", "train/")[0]}
mine = {x[0]: x[3] for x in ds._listing["shards"]}
t.check(first.count(True) == 1 and second == [False] and mine == full,
        "listing per epoch: the members listed once (epoch 0: %s), epoch 1 one listing of the shards alone (%s); "
        "sample counts as a full listing's" % (first, second), (mine, full))

# --- 4. /metrics --------------------------------------------------------------------------------
served = 0
for x in tg:
    m = request("GET", x.url, "/metrics").body.decode()
    served += next((int(float(ln.split()[1])) for ln in m.splitlines()
                    if ln.startswith('aisd_http_served_bytes_total{peer="local"}')), 0)
t.check(served >= 2 * total, "targets' /metrics: %d bytes served to this host" % served)
clulib.check_logs([g] + tg)
t.finish()
