"""test_remote_ml.py - training from a remote bucket: WebDataset shards
live on a remote aisd (the runner's own target, through its native API);
a front cluster (1 gateway + 2 targets) caches them in bucket "train"
(backend ais://@up/src). ShardDataset with torch's DataLoader reads epoch
0 cold (every shard fetched from the remote), then epoch 0 again warm:
the same samples in the same order with the same bytes, and no object GET
reaches the remote during the warm epoch (its request counter).
Skipped (with the reason) only when torch is not installed.
"""
# timeout: 180
import json
import os
import random
import subprocess
import sys
import urllib.request

from itlib import T

import clulib
from clulib import request

ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
PYDIR = os.path.join(ROOT, "tools", "python")
sys.path.insert(0, PYDIR)
t = T()
try:
    from torch.utils.data import DataLoader
except ImportError as e:
    t.ok("# SKIP torch is not installed (%s): tools/install-deps.sh installs python3-torch" % e)
    t.finish()
from aisd import Client, ShardDataset  # noqa: E402
from aisd.plan import list_shards  # noqa: E402

REMOTE = os.environ["AISD_URL"]
TMP = os.environ["TMPDIR"]
CTL = os.environ["AISCTL"]
JSON = {"Content-Type": "application/json"}
clulib.init(t, "rml", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never"])
g, ts = clulib.start_cluster(2)


def remote_object_gets():
    n = 0
    for line in urllib.request.urlopen(REMOTE + "/metrics", timeout=10).read().decode().splitlines():
        if line.startswith("aisd_http_requests_total{") and 'route="/v1/objects"' in line and 'method="GET"' in line:
            n += int(line.rsplit(" ", 1)[1])
    return n


# --- shards on the remote ---------------------------------------------------------------------
t.eq(request("POST", REMOTE, "/v1/buckets/src", json.dumps({"action": "create-bck"}), JSON).status, 200,
     "remote bucket src")
SRC = os.path.join(TMP, "samples")
os.makedirs(SRC)
r = random.Random(5)
want = {}
for i in range(240):
    key = "%06d" % i
    want[key] = {"jpg": r.randbytes(r.randrange(2000, 12000)), "cls": str(i % 10).encode()}
    for ext, b in want[key].items():
        with open(os.path.join(SRC, key + "." + ext), "wb") as f:
            f.write(b)
env = dict(os.environ, PYTHONPATH=PYDIR, AIS_ENDPOINT=REMOTE)
cp = subprocess.run([sys.executable, "-m", "aisd.shard", "--size", "300K", "--seed", "2", SRC, "ais://src/shards/"],
                    env=env, timeout=120, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
t.check(cp.returncode == 0, "shards written to the remote", cp.stderr)

# --- the front: a cache of it -----------------------------------------------------------------
cp = subprocess.run([CTL, "-e", g.url, "remote", "attach", "up", REMOTE, "--kind", "ais"], timeout=30,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
t.check(cp.returncode == 0, "remote attach up", cp.stdout)
cp = subprocess.run([CTL, "-e", g.url, "bucket", "create", "train", "--backend", "ais://@up/src"], timeout=30,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
t.check(cp.returncode == 0, "bucket create train --backend ais://@up/src", cp.stdout)


def epoch(ds):
    return list(DataLoader(ds, batch_size=None, num_workers=2))


def check(samples, what):
    keys = [s["__key__"] for s in samples]
    bad = [s["__key__"] for s in samples if {k: v for k, v in s.items() if not k.startswith("__")} != want.get(s["__key__"])]
    return t.check(len(keys) == len(set(keys)) and set(keys) == set(want) and not bad,
                   "%s: every sample once, bytes identical" % what, (len(keys), bad[:3]))


# Listings per epoch over shards not cached: no listing has their members, so each is counted by
# reading it once; that count is kept as a member listing's, and no listing asks for members again.
class CountingClient(Client):
    calls = []

    def list(self, bucket, prefix="", pagesize=1000, props=None, archive=False, partial=False):
        CountingClient.calls.append(archive)
        return super().list(bucket, prefix, pagesize, props, archive, partial)


def locations():
    body = json.dumps({"action": "list", "value": {"prefix": "shards/", "props": "name,location"}})
    return {e["name"]: [x["id"] for x in e["location"]] if "location" in e else None
            for e in request("GET", g.url, "/v1/buckets/train", body, JSON).json()["entries"]}


before = locations()
t.check(before and all(v == [] for v in before.values()),
        "a remote bucket's listing: no location for a shard cached nowhere", before)
cds = ShardDataset(CountingClient(g.url, timeout=20, retry_for=30), bucket="train", prefix="shards/", seed=11)
first = list(CountingClient.calls)
CountingClient.calls.clear()
cds.set_epoch(1)
cds.plan()
second = list(CountingClient.calls)
# (epoch 1 lists twice: reading cached the shards, so their locations changed since epoch 0)
t.check(first == [False, True, False] and second and True not in second,
        "uncached shards: members asked for once (epoch 0: %s), epoch 1 listings of the shards alone (%s)"
        % (first, second))
t.check(all(x[3] > 0 for x in cds._listing["shards"]), "uncached shards: every one counted",
        cds._listing["shards"][:3])
# Counting read every shard, so each is now cached on its owner; every target lists the remote's
# shards, only the owner their members: the merged listing has them all.
listed = {x.name: x.samples for x in list_shards(Client(g.url), "train", "shards/")[0]}
t.check(listed == {x[0]: x[3] for x in cds._listing["shards"]},
        "cached shards of a remote bucket: each one's members listed (sample counts as read)", listed)
after = locations()
t.check(sorted(after) == sorted(before) and all(len(v) == 1 for v in after.values()),
        "once cached: each shard's location names the one target that caches it", after)

ds = ShardDataset(g.url, bucket="train", prefix="shards/", seed=11)
cold = epoch(ds)
check(cold, "epoch 0, cold (fetched from the remote)")
body = json.dumps({"action": "list", "value": {"prefix": "shards/", "flags": 1}})
cached = request("GET", g.url, "/v1/buckets/train", body, JSON).json()["entries"]
shards = {s["__shard__"] for s in cold}
t.check({e["name"] for e in cached} == shards, "after it every shard is cached", (len(cached), len(shards)))
before = remote_object_gets()
ds.set_epoch(0)
warm = epoch(ds)
check(warm, "epoch 0 again, warm")
t.check([(s["__key__"], s["jpg"]) for s in warm] == [(s["__key__"], s["jpg"]) for s in cold],
        "warm samples identical to the cold ones, same order")
t.eq(remote_object_gets() - before, 0, "the warm epoch sent no object GET to the remote")
clulib.check_logs([g] + ts)
t.finish()
