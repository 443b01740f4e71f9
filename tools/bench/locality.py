"""locality.py - one configuration of make bench-locality (run by
tools/bench/locality.sh, as root): an aisd cluster in network namespaces
(deploy/netns/cluster.sh: a gateway g0 and NODES targets, each node in its
own namespace, every link limited with tc tbf to RATE each way), training
ranks (tests/integration/locrank.py: separate processes, a torch
DataLoader with WORKERS workers) in the targets' namespaces, and the model
(aisd.model.predict) beside every measurement. Appends one JSON object per
row to OUT.

  python3 locality.py '{"nodes": 4, "copies": 2, "rate": "8mbit", "ranks_per_node": 2,
      "workers": 2, "shards_per_node": 64, "shard_kib": 64, "sample_kib": 16, "epochs": 2,
      "caches": [0.25, 0.5, 1, 2], "policies": ["belady", "lru"], "prefetch": "half",
      "out": FILE}'

Rows: "plain" and "locality" (epoch 1: after the first; seconds = the
slowest rank's; cross-node bytes = the targets' links' bytes / 2, each
crossing passing two of them; busiest link = the largest link's bytes);
"cache" rows: 2 ranks on g0's node (no target: every byte crosses g0's
link or comes from its cache), a cache of FRACTION x the node's share
(the bytes its ranks read per epoch), each policy, epochs 1-2 averaged.
The model's training rate per rank is the machine's rate / ranks (every
rank shares this machine's cores), measured first in each configuration:
the same ranks with locality on before the links are limited (and, for
the cache rows, 2 ranks reading a cached dataset). Samples are 0.75-1.25x
sample_kib (default 16 KiB; the cache rows' 48-80 KB).
Shape: 64 shards of 64 KiB per target by default (4 MiB per node). With
copies 1 the least cross-node traffic any balanced plan can reach is the
placement's surplus, sum over nodes of max(0, held - its ranks' share);
HRW deals shards like a fair die, so with 8 shards per target that is
12% of the dataset on average (17% of plain's bytes at 4 nodes, 25% at
the 90th percentile), with 64 per target 4.4% (5.7%, 8.9%): a dataset of
few large shards per target measures the placement, not the plan.
"""
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
IT = os.path.join(ROOT, "tests", "integration")
sys.path.insert(0, IT)
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
from aisd.model import parse_size, predict  # noqa: E402
from aisd.plan import Shard  # noqa: E402

import netnslib  # noqa: E402
from clulib import request  # noqa: E402

JSON = {"Content-Type": "application/json"}


class _T:
    """What loclib needs of a test: fail() raises."""
    def fail(self, what, detail=""):
        raise SystemExit("locality.py: %s: %s" % (what, detail))


def main():
    a = json.loads(sys.argv[1])
    N, copies, RATE = a["nodes"], a["copies"], a["rate"]
    k, workers, epochs = a.get("ranks_per_node", 2), a.get("workers", 2), a.get("epochs", 2)
    name = "b%d" % (os.getpid() % 10000)
    net = "10.217.%d" % (os.getpid() % 250 + 1)
    TS = ["t%d" % i for i in range(N)]
    IP = {"g0": net + ".10", **{n: "%s.%d" % (net, 100 + i) for i, n in enumerate(TS)}}
    G = "http://%s:8080" % IP["g0"]
    tmp = os.environ["TMPDIR"]
    out = open(a["out"], "a")

    def link(node):
        tot = 0
        for kk in ("rx_bytes", "tx_bytes"):
            with open("/sys/class/net/%s%s/statistics/%s" % (name, node, kk)) as f:
                tot += int(f.read())
        return tot

    def limit(node):
        cmds = [["tc", "qdisc", "replace", "dev", name + node, "root", "tbf", "rate", RATE, "burst", "32kb",
                 "latency", "100ms"],
                ["ip", "netns", "exec", "%s-%s" % (name, node), "tc", "qdisc", "replace", "dev", "eth0", "root",
                 "tbf", "rate", RATE, "burst", "32kb", "latency", "100ms"]]
        return all(subprocess.run(c, stderr=subprocess.PIPE).returncode == 0 for c in cmds)

    def put(obj, data):
        r = request("PUT", G, "/v1/objects/ml/" + obj, data, timeout=60)
        if r.status == 307:
            base, _, p = r.h("location").partition("/v1/")
            r = request("PUT", base, "/v1/" + p, data, timeout=60)
        return r.status == 200

    def make(n, size, prefix, seed, sample=64 << 10):
        rng = random.Random(seed)
        for s in range(n):
            buf, i = io.BytesIO(), 0
            with tarfile.open(fileobj=buf, mode="w") as tf:
                while buf.tell() < size:
                    data = rng.randbytes(rng.randrange(sample * 3 // 4, sample * 5 // 4))
                    ti = tarfile.TarInfo("%s%03d_%04d.bin" % (prefix[0], s, i))
                    ti.size = len(data)
                    tf.addfile(ti, io.BytesIO(data))
                    i += 1
            if not put("%sshard-%04d.tar" % (prefix, s), buf.getvalue()):
                raise SystemExit("locality.py: PUT failed")

    def listing(prefix):
        r = request("GET", G, "/v1/buckets/ml?props=name,size,location&prefix=" + prefix, timeout=60)
        host_of = {IP[n]: n for n in TS}
        return [Shard(e["name"], e["size"], tuple(sorted(host_of[loc["host"]] for loc in e.get("location", []))))
                for e in r.json()["entries"]]

    def run(nodes, hosts, n_epochs, prefix, **kw):
        sync = os.path.join(tmp, "sync%d" % random.randrange(1 << 30))
        os.makedirs(sync)
        procs = []
        for r, node in enumerate(nodes):
            arg = dict(endpoint=G, bucket="ml", prefix=prefix, rank=r, world=len(nodes), hosts=hosts,
                       epochs=n_epochs, workers=workers, seed=3, sync_dir=sync, job=os.path.basename(sync), **kw)
            procs.append(subprocess.Popen(["nice", "-n", "10", "ip", "netns", "exec", "%s-%s" % (name, node),
                                           "/usr/bin/python3", os.path.join(IT, "locrank.py"), json.dumps(arg)],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        watch = sorted(set(nodes) | set(TS) | {"g0"})
        links, start = {}, {}
        try:
            for ep in range(n_epochs):
                deadline = time.monotonic() + 300
                while not all(os.path.exists(os.path.join(sync, "ready.%d.%d" % (ep, r))) for r in range(len(nodes))):
                    if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                        break
                    time.sleep(0.05)
                if ep:
                    links[ep - 1] = {n: link(n) - start[n] for n in watch}
                start = {n: link(n) for n in watch}
                open(os.path.join(sync, "go.%d" % ep), "w").close()
            outs = [p.communicate(timeout=900) for p in procs]
            links[n_epochs - 1] = {n: link(n) - start[n] for n in watch}
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        import loclib
        return loclib.collect(_T(), procs, outs), links

    def row(kind, meas, model, **extra):
        d = dict(kind=kind, nodes=N, copies=copies, rate=RATE, ranks=extra.pop("ranks", N * k), **extra,
                 machine_rate=mrate, measured=meas, model=model)
        out.write(json.dumps(d) + "\n")
        out.flush()
        print(json.dumps(d), flush=True)

    # a fresh cluster: the previous configuration's (down, under the same
    # dir) left its nodes' data and metadata, its bucket among them
    shutil.rmtree(netnslib.DIR, ignore_errors=True)
    rc, o = netnslib.sh("up", "-g", "1", "-t", str(N), "-n", name, "-a", net, "-b", netnslib.BINDIR,
                        "-s", "cluster.keepalive=1s", "-s", "cluster.grace=20s", "-s", "store.fsync=never",
                        timeout=300)
    if rc:
        print(o)
        raise SystemExit("locality.py: cluster up failed")
    try:
        deadline = time.monotonic() + 240  # the new cluster's primary may not answer yet (8 nodes, busy machine)
        while True:
            r = request("POST", G, "/v1/buckets/ml", b'{"action":"create-bck"}', JSON)
            if r.status == 200:
                break
            if time.monotonic() > deadline:
                m = request("GET", G, "/v1/cluster?what=smap")
                raise SystemExit("locality.py: create bucket failed: %s %s; cluster map: %s %s"
                                 % (r.status, r.body[:300], m.status, m.body[:2000]))
            time.sleep(1)
        if copies > 1:
            body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": copies}}})
            request("PATCH", G, "/v1/buckets/ml", body.encode(), JSON)
        make(N * a.get("shards_per_node", 64), a.get("shard_kib", 64) << 10, "train/", 1, a.get("sample_kib", 16) << 10)
        small_n = a.get("cache_shards", 16)
        make(small_n, a.get("cache_shard_kib", 128) << 10, "small/", 2, 62500)
        time.sleep(2 if copies > 1 else 0)  # the mirror copies
        train, small = listing("train/"), listing("small/")
        if copies > 1 and any(len(s.hosts) < copies for s in train + small):
            time.sleep(5)
            train, small = listing("train/"), listing("small/")
        nodes = [n for n in TS for _ in range(k)]
        hosts = [IP[n] for n in nodes]
        # this machine's pipeline rate (samples/s, all ranks together; every
        # rank shares its cores): the same ranks, locality on, links not yet
        # limited; and for the cache rows 2 ranks on g0 reading their cache
        res, _ = run(nodes, hosts, 2, "train/", locality=True)
        mrate = sum(len(rk["samples"]) for rk in res[1]) / max(rk["secs"] for rk in res[1])
        mrate2 = None
        if a.get("caches"):
            res, _ = run(["g0", "g0"], ["gpu", "gpu"], 3, "small/", locality=True,
                         cache_dir=os.path.join(tmp, "calib"), cache_bytes=1 << 30)
            mrate2 = sum(len(rk["samples"]) for rk in res[2]) / max(rk["secs"] for rk in res[2])
        print("machine rate %.0f samples/s (%d ranks), %s (2 ranks, cached)" % (mrate, len(nodes), mrate2), flush=True)
        for n in ["g0"] + TS:
            if not limit(n):
                raise SystemExit("locality.py: tc failed")
        B = parse_size(RATE)
        D = sum(s.size for s in train)
        mk = dict(storage=1e9, network=B, ranks_per_node=k, efficiency=a.get("efficiency", 0.95),
                  overlap=a.get("overlap", 1.0), shards=train)
        for mode in ("plain", "locality"):
            res, links = run(nodes, hosts, epochs, "train/", locality=(mode == "locality"))
            ep = epochs - 1
            samples = sum(len(rk["samples"]) for rk in res[ep])
            secs = max(rk["secs"] for rk in res[ep])
            tl = {n: links[ep][n] for n in TS}
            s = D / samples
            per = mrate / (N * k)
            inputs = dict(learners=N * k, dataset=D, sample=s, train=per, preprocess=per, workers=workers,
                          modes=[mode], **{x: y for x, y in mk.items() if x != "shards"})
            p = predict(shards=train, **inputs)[mode]
            row(mode, dict(secs=secs, samples_per_s=samples / secs, cross_bytes=sum(tl.values()) / 2,
                           busiest_link=max(tl.values()), dataset=D, links=tl,
                           per_rank=[[round(rk["secs"], 2), rk["stats"]["local"], rk["stats"]["remote"]]
                                     for rk in res[ep]]),
                dict(secs=p["secs"], samples_per_s=p["samples_per_s"], cross_bytes=p["net_bytes"],
                     busiest_link=p["busiest_link"], bound=p["bound"]),
                inputs=inputs, placement=[list(x) for x in train])
        Ds = sum(s.size for s in small)
        ns = sum(1 for _ in small)
        for frac in a.get("caches", []):
            for pol in a.get("policies", ["belady", "lru"]):
                pfa = a.get("prefetch")
                if pfa == "half":  # half the link: the other half for the reads that miss
                    pfa = "%gmbit" % (parse_size(RATE) * 8 / 2e6)
                for pf in ([None, pfa] if pfa and pol == "belady" else [None]):
                    kw = dict(locality=True, cache_dir=os.path.join(tmp, "c-%s-%s-%s" % (frac, pol, pf)),
                              cache_bytes=int(frac * Ds), cache_policy=pol)
                    if pf:
                        kw["prefetch"] = parse_size(pf)
                    res, links = run(["g0", "g0"], ["gpu", "gpu"], 3, "small/", **kw)
                    meas = {}
                    for e in (1, 2):
                        st = [rk["stats"] for rk in res[e]]
                        c = sum(x["cached"] for x in st)
                        rm = sum(x["remote"] for x in st)
                        meas.setdefault("hit", []).append(c / (c + rm) if c + rm else 0.0)
                        meas.setdefault("secs", []).append(max(rk["secs"] for rk in res[e]))
                        meas.setdefault("link", []).append(links[e]["g0"])
                    samples = sum(len(rk["samples"]) for rk in res[2])
                    s = Ds / samples
                    inputs = dict(learners=2, dataset=Ds, sample=s, storage=1e9, network=B, train=mrate2 / 2,
                                  preprocess=mrate2 / 2, cache=frac * Ds, ranks_per_node=2, targets=N, policy=pol,
                                  prefetch=parse_size(pf) if pf else 0.0, efficiency=mk["efficiency"],
                                  overlap=mk["overlap"], workers=workers, modes=["locality"])
                    p = predict(shards=small, **inputs)["locality"]
                    row("cache", dict(hit_rate=sum(meas["hit"]) / 2, secs=sum(meas["secs"]) / 2,
                                      g0_link_bytes=sum(meas["link"]) / 2, dataset=Ds, shards=ns),
                        dict(hit_rate=p["hit_rate"], secs=p["secs"], g0_link_bytes=p["net_bytes"]),
                        ranks=2, cache=frac, policy=pol, prefetch=pf, cache_machine_rate=mrate2, inputs=inputs,
                        placement=[list(x) for x in small])
    finally:
        rc, o = netnslib.sh("down", timeout=120)
        if rc:
            print(o)


if __name__ == "__main__":
    main()
