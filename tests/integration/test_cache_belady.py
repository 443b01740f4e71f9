"""test_cache_belady.py - the node cache evicts by the plan's future order
(cache_policy="belady") and prefetches the next epoch: real daemons on
loopback (a gateway, 2 targets), 4 training ranks (separate processes, a
torch DataLoader with 2 workers each) on 2 hosts that run no target
("gpuA", "gpuB": every shard a rank reads comes over the network or from
its host's cache), locality on, exchange 0, 3 epochs; each host's cache is
half the host's share of the dataset (the bytes its 2 ranks read per
epoch); each rank spends 8 ms per sample (its training step), so the
prefetcher has time to run ahead.

1. belady + prefetch (a byte budget per second): every sample exactly
   once per epoch; in epochs 1 and 2 each host reads at least half of its
   bytes from its cache (cached / (cached + remote) >= 0.5), and the
   prefetcher's bytes stay within its budget times the epoch's seconds.
2. belady without prefetch and lru, 2 epochs: exactly once; belady's hit
   rate in epoch 1 beats lru's (the plan deals a fresh order every epoch, which
   lru cannot follow: it keeps about (cache/share)^2).
Skipped (with the reason) only when torch is not installed.
"""
# timeout: 420
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
from clulib import poll

ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
t = T()
try:
    import torch  # noqa: F401
except ImportError as e:
    t.ok("# SKIP torch is not installed (%s): tools/install-deps.sh installs python3-torch" % e)
    t.finish()
from aisd import Client  # noqa: E402

TMP = os.environ["TMPDIR"]
BASE = ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=60s", "--set", "store.fsync=never"]
HOSTS = ["gpuA", "gpuA", "gpuB", "gpuB"]
BUDGET = 4 << 20  # prefetch bytes/s

clulib.init(t, "cachebelady", BASE)
g, tg = clulib.start_cluster(2)
c = Client(g.url, timeout=20, retry_for=30)
c.create_bucket("ml")
rng = random.Random(3)
want = {}
for s in range(48):
    buf, crcs = io.BytesIO(), {}
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for i in range(8):
            key, data = "c%02d_%02d" % (s, i), rng.randbytes(rng.randrange(6000, 10000))
            ti = tarfile.TarInfo(key + ".bin")
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
            crcs[key] = zlib.crc32(data)
    name = "train/shard-%03d.tar" % s
    c.put("ml", name, buf.getvalue())
    want[name] = crcs
total = sum(e["size"] for e in c.list("ml", "train/"))
share = total // 2  # each host: 2 of the 4 ranks


def run_ranks(epochs, tag, **kw):
    sync = os.path.join(TMP, "sync-" + tag)
    os.makedirs(sync)
    procs = []
    for r in range(len(HOSTS)):
        a = dict(endpoint=g.url, bucket="ml", prefix="train/", rank=r, world=len(HOSTS), hosts=HOSTS, epochs=epochs,
                 workers=2, seed=9, sync_dir=sync, locality=True, cache_dir=os.path.join(TMP, tag + "-%s"),
                 cache_bytes=share // 2, compute_ms=8, job="belady-" + tag, **kw)
        procs.append(subprocess.Popen(["/usr/bin/python3", os.path.join(os.environ["IT_LIB"], "locrank.py"),
                                       json.dumps(a)], stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    try:
        for ep in range(epochs):
            ready = poll(lambda: all(os.path.exists(os.path.join(sync, "ready.%d.%d" % (ep, r)))
                                     for r in range(len(HOSTS))) or any(p.poll() for p in procs), 120)
            if not ready or any(p.poll() for p in procs):
                break
            open(os.path.join(sync, "go.%d" % ep), "w").close()
        outs = [p.communicate(timeout=180) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return loclib.collect(t, procs, outs)


def hit_rate(res, eps, ranks):
    cached = sum(res[e][r]["stats"]["cached"] for e in eps for r in ranks)
    remote = sum(res[e][r]["stats"]["remote"] for e in eps for r in ranks)
    return cached / (cached + remote) if cached + remote else 0.0


pre = run_ranks(3, "pre", cache_policy="belady", prefetch=BUDGET)
if pre:
    loclib.exactly_once(t, pre, want, "belady + prefetch")
    for ep in (1, 2):
        for host, ranks in (("gpuA", (0, 1)), ("gpuB", (2, 3))):
            h = hit_rate(pre, [ep], ranks)
            t.check(h >= 0.5, "belady + prefetch, epoch %d, %s: %.0f%% of the bytes from a cache of half the "
                    "share (>= 50%%)" % (ep, host, 100 * h))
    pf = sum(rk["stats"]["prefetched"] for ep in pre for rk in pre[ep])
    secs = sum(max(rk["secs"] for rk in pre[ep]) for ep in pre)
    t.diag("prefetched %d bytes in %.1f s of epochs" % (pf, secs))
    t.check(0 < pf, "the prefetcher fetched the next epoch's shards (%d bytes)" % pf)
    t.check(pf <= BUDGET * (secs + 2), "prefetch within its budget: %d bytes in %.1f s at %d B/s"
            % (pf, secs, BUDGET))
bel = run_ranks(2, "bel", cache_policy="belady")
lru = run_ranks(2, "lru", cache_policy="lru")
if bel and lru:
    loclib.exactly_once(t, bel, want, "belady")
    loclib.exactly_once(t, lru, want, "lru")
    hb, hl = hit_rate(bel, (1,), range(4)), hit_rate(lru, (1,), range(4))
    t.check(hb > hl and hb >= 0.35, "epoch 1 from a cache of half the share: belady %.0f%% of the bytes, "
            "lru %.0f%%" % (100 * hb, 100 * hl))
clulib.check_logs([g] + tg)
t.finish()
