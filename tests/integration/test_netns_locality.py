"""test_netns_locality.py - locality-aware loading where the network is the
bottleneck: every node in its own network namespace (deploy/netns/
cluster.sh), a gateway g0 and 4 targets t0..t3; each target's node also
runs 2 training ranks (separate processes, rank/world_size 8, a torch
DataLoader with 2 workers each). Every node's link (its veth) is limited
with tc (tbf, 8 Mbit/s each way) once the data is loaded; the bytes that
cross each link are read from the host ends' interface counters.

Bucket ml (mirror copies=2): 32 tar shards of ~1 MiB.
 1. Plain loading (locality off), 3 epochs, then locality-aware (exchange
    0), 4 epochs: every sample exactly once per epoch across all ranks and
    workers; in epochs 1 and 2 the bytes over the targets' links are at
    most 10% of plain loading's. Samples/s against plain's is reported,
    not checked (a rate on a shared machine is a benchmark's: make
    bench-locality).
 2. In epoch 3, target t3 is kill -9'd 0.3 s after the epoch starts: its
    ranks' shards are read from the other copies, still every sample
    exactly once.
 3. Node cache: 2 ranks in g0's namespace (a node with no target) with a
    cache_dir, exchange 0, 2 epochs over 8 smaller shards: epoch 1's bytes
    over g0's link are under 3% of epoch 0's.
Needs root and `ip netns` (else one "ok # skip" line) and torch.
With LOC_RESULTS=FILE the measurements go there as JSON (make bench-ml:
tools/bench/locality.sh).
"""
# serial: network namespaces (ip netns)
# timeout: 360
import gzip
import io
import json
import os
import random
import subprocess
import tarfile
import threading
import time
import zlib

from itlib import T

import loclib
from netnslib import BINDIR, require, sh

from clulib import request

t = T()
try:
    import torch  # noqa: F401
except ImportError as e:
    t.ok("# SKIP torch is not installed (%s): tools/install-deps.sh installs python3-torch" % e)
    t.finish()
NAME = "l%d" % (os.getpid() % 100000)
NET = "10.216.%d" % (os.getpid() % 250 + 1)
JSON = {"Content-Type": "application/json"}
RATE = "8mbit"
require(NAME)

TS = ["t0", "t1", "t2", "t3"]
IP = {"g0": NET + ".10", **{n: "%s.%d" % (NET, 100 + i) for i, n in enumerate(TS)}}
G = "http://%s:8080" % IP["g0"]
TMP = os.environ["TMPDIR"]
LOCRANK = os.path.join(os.environ["IT_LIB"], "locrank.py")
DIR = os.path.join(os.environ["AISD_DIR"], "netns")


def link_bytes(node):
    tot = 0
    for k in ("rx_bytes", "tx_bytes"):
        with open("/sys/class/net/%s%s/statistics/%s" % (NAME, node, k)) as f:
            tot += int(f.read())
    return tot


def limit(node, rate):
    """tbf both ways: the host end's egress (into the node) and eth0's."""
    cmds = [["tc", "qdisc", "replace", "dev", NAME + node, "root", "tbf", "rate", rate, "burst", "32kb",
             "latency", "100ms"],
            ["ip", "netns", "exec", "%s-%s" % (NAME, node), "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf",
             "rate", rate, "burst", "32kb", "latency", "100ms"]]
    return all(subprocess.run(c, stderr=subprocess.PIPE).returncode == 0 for c in cmds)


def put(name, data):
    r = request("PUT", G, "/v1/objects/ml/" + name, data, timeout=30)
    if r.status == 307:
        base, _, p = r.h("location").partition("/v1/")
        r = request("PUT", base, "/v1/" + p, data, timeout=30)
    return r.status == 200


def make_shards(n, size, prefix, seed):
    rng = random.Random(seed)
    want = {}
    for s in range(n):
        buf, crcs, i = io.BytesIO(), {}, 0
        with tarfile.open(fileobj=buf, mode="w") as tf:
            while buf.tell() < size:
                key, data = "%s%03d_%04d" % (prefix[0], s, i), rng.randbytes(rng.randrange(8000, 24000))
                ti = tarfile.TarInfo(key + ".bin")
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
                crcs[key] = zlib.crc32(data)
                i += 1
        name = "%sshard-%04d.tar" % (prefix, s)
        if not put(name, buf.getvalue()):
            return None
        want[name] = crcs
    return want


JOBS = []  # the job name of each run_ranks, in order
WINDOW = {}  # the last run_ranks: epoch -> seconds its link bytes were counted over


def run_ranks(nodes, hosts, epochs, prefix, go=None, **kw):
    """One rank per entry of nodes (its namespace), hosts[r] its host.
    Returns ({epoch: [rank results]}, {epoch: {node: link bytes}})."""
    sync = os.path.join(TMP, "sync%d" % random.randrange(1 << 30))
    os.makedirs(sync)
    JOBS.append(os.path.basename(sync))
    world = len(nodes)
    procs = []
    for r, node in enumerate(nodes):
        a = dict(endpoint=G, bucket="ml", prefix=prefix, rank=r, world=world, hosts=hosts, epochs=epochs,
                 workers=2, seed=3, sync_dir=sync, job=os.path.basename(sync), **kw)
        procs.append(subprocess.Popen(["ip", "netns", "exec", "%s-%s" % (NAME, node), "/usr/bin/python3", LOCRANK,
                                       json.dumps(a)], stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    links, start, since = {}, {}, 0.0
    WINDOW.clear()
    watch = sorted(set(nodes) | set(TS))
    try:
        for ep in range(epochs):
            deadline = time.monotonic() + 180
            while not all(os.path.exists(os.path.join(sync, "ready.%d.%d" % (ep, r))) for r in range(world)):
                if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                    break
                time.sleep(0.05)
            if ep:
                links[ep - 1] = {n: link_bytes(n) - start[n] for n in watch}
                WINDOW[ep - 1] = time.monotonic() - since
            start, since = {n: link_bytes(n) for n in watch}, time.monotonic()
            if go:
                go(ep)
            open(os.path.join(sync, "go.%d" % ep), "w").close()
        outs = [p.communicate(timeout=240) for p in procs]
        links[epochs - 1] = {n: link_bytes(n) - start[n] for n in watch}
        WINDOW[epochs - 1] = time.monotonic() - since
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return loclib.collect(t, procs, outs), links


def shard_bytes(prefix):
    r = request("GET", G, "/v1/buckets/ml?props=name,size&prefix=" + prefix)
    return [e["size"] for e in r.json()["entries"]]


def rate(res, ep):
    return sum(len(rk["samples"]) for rk in res[ep]) / max(rk["secs"] for rk in res[ep])


rc, out = sh("up", "-g", "1", "-t", "4", "-n", NAME, "-a", NET, "-b", BINDIR, "-s", "cluster.keepalive=300ms",
             "-s", "cluster.grace=1500ms", "-s", "store.fsync=never")
if not t.check(rc == 0, "netns cluster up: a gateway and 4 targets, each in its own namespace", out):
    sh("down")
    t.finish()
try:
    r = request("POST", G, "/v1/buckets/ml", b'{"action":"create-bck"}', JSON)
    body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}).encode()
    r2 = request("PATCH", G, "/v1/buckets/ml", body, JSON)
    t.check(r.status == 200 and r2.status == 200, "bucket ml, mirror copies=2")
    want = make_shards(32, 1 << 20, "train/", 1)
    small = make_shards(8, 256 << 10, "small/", 2)
    if not t.check(want and small, "32 shards of ~1 MiB and 8 of ~256 KiB PUT (2 copies each)"):
        raise SystemExit
    t.check(all(limit(n, RATE) for n in ["g0"] + TS), "every link limited to %s each way (tc tbf)" % RATE)
    nodes = [n for n in TS for _ in range(2)]
    hosts = [IP[n] for n in nodes]

    plain, pl = run_ranks(nodes, hosts, 3, "train/")
    kill_at = {}

    def kill(ep):
        if ep == 3:
            def later():
                time.sleep(0.3)
                with open(os.path.join(DIR, "t3", "aisd.pid")) as f:
                    os.kill(int(f.read()), 9)
                kill_at["t"] = time.monotonic()
            threading.Thread(target=later, daemon=True).start()

    loc, ll = run_ranks(nodes, hosts, 4, "train/", go=kill, locality=True)
    if plain and loc:
        import sys
        sys.path.insert(0, os.path.join(os.environ["IT_LIB"], "..", "..", "tools", "python"))
        from aisd import Client
        from aisd.plan import Shard
        cl = Client(G, timeout=20, retry_for=30)

        def job_dropped(job, epochs, **kw):
            """The samples each epoch's plan left out (N mod ranks), from the
            listing the job's ranks planned from (stored by rank 0)."""
            out = {}
            for ep in epochs:
                doc = json.loads(gzip.decompress(cl.get("ml", ".aisd/jobs/%s/epoch-%06d.json.gz" % (job, ep))))
                listed = [Shard(n, size, frozenset(hs), k) for n, size, hs, k in doc["shards"]]
                out.update(loclib.dropped(want, listed, hosts, 3, [ep], **kw))
            return out
        dplain = job_dropped(JOBS[0], range(3), locality=False)
        dloc = job_dropped(JOBS[1], range(4))
        loclib.exactly_once(t, plain, want, "plain", dropped=dplain)
        loclib.exactly_once(t, {e: loc[e] for e in (0, 1, 2)}, want, "locality", dropped=dloc)
        for ep in (0, 1, 2):
            p_b, l_b = sum(pl[ep][n] for n in TS), sum(ll[ep][n] for n in TS)
            t.diag("epoch %d: bytes over the targets' links plain %d, locality %d (%.1f%%); samples/s plain %.0f, "
                   "locality %.0f (%.1fx)" % (ep, p_b, l_b, 100.0 * l_b / p_b, rate(plain, ep), rate(loc, ep),
                                              rate(loc, ep) / rate(plain, ep)))
            if ep:
                t.check(l_b <= 0.10 * p_b, "epoch %d: locality's cross-node bytes %.1f%% of plain's (<= 10%%)"
                        % (ep, 100.0 * l_b / p_b))
        t.check("t" in kill_at, "t3 was kill -9'd during epoch 3")
        loclib.exactly_once(t, {3: loc[3]}, want, "locality with t3 killed mid-epoch", dropped=dloc)
        t3r = [rk["stats"] for rk in loc[3][6:]]
        t.diag("epoch 3, t3's ranks: %s" % t3r)
        t.check(sum(s["remote"] for s in t3r) > 0, "t3's ranks read from the other copies after the kill")

    # g0's link also carries the primary's keepalive and lease rounds: their
    # rate, measured idle, over the whole window the epoch's bytes were
    # counted in (the ranks' set-up and exit too, not only their reading
    # time), is what the cached epoch may add to its 3%; and so are the
    # epoch's job records each rank's workers read or write (the stored
    # listing and plan settings, small objects through a 307: 16 KiB a rank)
    b0, t0 = link_bytes("g0"), time.monotonic()
    time.sleep(2)
    idle = (link_bytes("g0") - b0) / (time.monotonic() - t0)
    cache, cl = run_ranks(["g0", "g0"], ["gpu", "gpu"], 2, "small/", locality=True,
                          cache_dir=os.path.join(TMP, "cache"), cache_bytes=1 << 30)
    if cache:
        loclib.exactly_once(t, cache, small, "node cache on g0")
        e0, e1 = cl[0]["g0"], cl[1]["g0"]
        ctl = idle * WINDOW[1] + 2 * (16 << 10)
        t.check(e1 <= 0.03 * e0 + ctl, "node cache: epoch 1 moved %d bytes over g0's link, epoch 0 %d (<= 3%% + "
                "%d of control traffic: the idle %d B/s over %.1f s and the job's records)"
                % (e1, e0, ctl, idle, WINDOW[1]))
        st = [rk["stats"] for rk in cache[1]]
        t.check(all(s["remote"] == 0 and s["cached"] > 0 for s in st), "node cache: epoch 1 all cached", st)
    if os.environ.get("LOC_RESULTS") and plain and loc and cache:
        def ep_row(res, links, ep, nodes_):
            return {"secs": max(rk["secs"] for rk in res[ep]), "samples": sum(len(rk["samples"]) for rk in res[ep]),
                    "link_bytes": sum(links[ep][n] for n in nodes_)}
        with open(os.environ["LOC_RESULTS"], "w") as f:
            json.dump({"rate": RATE, "ranks": 8, "nodes": 4, "dataset": sum(e for e in shard_bytes("train/")),
                       "small_dataset": sum(shard_bytes("small/")),
                       "plain": [ep_row(plain, pl, e, TS) for e in range(3)],
                       "locality": [ep_row(loc, ll, e, TS) for e in range(3)],
                       "cache": [ep_row(cache, cl, e, ["g0"]) for e in range(2)]}, f)
finally:
    rc, out = sh("down")
    if rc:
        t.diag("down: " + out)
t.finish()
