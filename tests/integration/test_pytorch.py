"""test_pytorch.py - ShardDataset with torch's DataLoader against a gateway
and 3 targets started here (cluster.grace=60s, so a killed target keeps its
place in the map).

Shards are made by the shard tool from 400 generated samples (jpg, cls,
and a json for some). With DataLoader(num_workers=4): every sample is seen
exactly once per epoch and its bytes are the files'; set_epoch(1) and
another seed change the order; two ranks (world_size=2, 2 workers each)
split the samples without overlap (200 each) and together see every sample; a shuffle
buffer keeps the set. A shard list, local files and plain-HTTP URLs give the
same samples; a .tgz shard is read too, and .zip shards (by prefix with 4
workers, as local files, and a download cut in the middle, resumed). Restarts: a 24 MiB shard read
over TCP sample by sample while its owner is kill -9'd and restarted resumes
with a Range (every sample once, bytes identical); read as a descriptor from
the owner's unix socket it reads on through the kill; a 4-worker epoch during which a
target is kill -9'd and restarted completes with every sample exactly once.
Skipped (with the reason) only when torch is not installed.
"""
# timeout: 300
import glob
import http.server
import json
import os
import random
import subprocess
import sys
import tarfile
import threading
import time
import warnings
import zipfile

from itlib import T

import clulib
from clulib import poll, procs, request

ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
PYDIR = os.path.join(ROOT, "tools", "python")
sys.path.insert(0, PYDIR)
t = T()
try:
    from torch.utils.data import DataLoader
except ImportError as e:
    t.ok("# SKIP torch is not installed (%s): tools/install-deps.sh installs python3-torch" % e)
    t.finish()
from aisd import BatchDataset, Client, ShardDataset, load_index  # noqa: E402

warnings.filterwarnings("ignore", message="This DataLoader will create")  # 4 workers on 2 CPUs

clulib.init(t, "pytorch", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=60s",
                           "--set", "store.fsync=never"])
g, tg = clulib.start_cluster(3)
TMP = os.environ["TMPDIR"]
rnd = random.Random(int(os.environ.get("SEED", "9")))
c = Client(g.url, timeout=20, retry_for=60)
B = "ml"
c.create_bucket(B)


def owner(name):
    r = request("HEAD", g.url, "/v1/objects/%s/%s" % (B, name))
    loc = r.h("location") or ""
    return next((x for x in tg if loc.startswith(x.url + "/")), None)


def shard_tool(*args):
    env = dict(os.environ, PYTHONPATH=PYDIR, AIS_ENDPOINT=g.url)
    return subprocess.run([sys.executable, "-m", "aisd.shard"] + list(args), env=env, timeout=120,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def write_samples(d, n, size, seed):
    """n samples under d; returns {key: {ext: bytes}}."""
    r = random.Random(seed)
    out = {}
    for i in range(n):
        key = "%06d" % i
        s = {"jpg": r.randbytes(r.randrange(size // 2, size * 3 // 2)), "cls": str(i % 10).encode()}
        if i % 5 == 0:
            s["json"] = json.dumps({"i": i}).encode()
        out[key] = s
        for ext, b in s.items():
            with open(os.path.join(d, key + "." + ext), "wb") as f:
                f.write(b)
    return out


def loader(ds, workers=4):
    return DataLoader(ds, batch_size=None, num_workers=workers)


def check_epoch(samples, want, what):
    """Every sample exactly once, with the right bytes and nothing else."""
    keys = [s["__key__"] for s in samples]
    dup = len(keys) - len(set(keys))
    bad = [s["__key__"] for s in samples
           if {k: v for k, v in s.items() if not k.startswith("__")} != want.get(s["__key__"])]
    return t.check(dup == 0 and set(keys) == set(want) and not bad,
                   "%s: %d samples, each once, bytes identical" % (what, len(keys)),
                   "dups %d, missing %d, wrong %s" % (dup, len(set(want) - set(keys)), bad[:3]))


SRC = os.path.join(TMP, "src")
os.makedirs(SRC)
want = write_samples(SRC, 400, 8000, 1)
IDX = os.path.join(TMP, "index.jsonl")
r = shard_tool("--size", "200K", "--seed", "3", "--shuffle", "--jobs", "4", "--index", IDX, SRC, "ais://%s/train/" % B)
t.check(r.returncode == 0, "shard tool: 400 samples into shards of <= 200 KiB", r.stderr)
shards = c.list_names(B, "train/")
t.check(len(shards) >= 16, "%d shards" % len(shards))

# --- epochs ------------------------------------------------------------------------------

ds = ShardDataset(g.url, bucket=B, prefix="train/", seed=42)
e0 = list(loader(ds))
check_epoch(e0, want, "epoch 0, 4 workers, by prefix")
t.check(all(s["__shard__"] in shards for s in e0), "__shard__ names the shard")
ds.set_epoch(1)
e1 = list(loader(ds))
check_epoch(e1, want, "epoch 1")
k0, k1 = [s["__key__"] for s in e0], [s["__key__"] for s in e1]
t.check(k0 != k1, "epoch 1's order differs from epoch 0's")
ds.set_epoch(0)
t.eq([s["__key__"] for s in loader(ds)], k0, "set_epoch(0) again: epoch 0's order")
other = ShardDataset(g.url, bucket=B, prefix="train/", seed=43)
ko = [s["__key__"] for s in loader(other)]
t.check(ko != k0 and sorted(ko) == sorted(k0), "another seed: the same samples in another order")

# --- distributed split ----------------------------------------------------------------------

parts = []
for rank in (0, 1):
    dr = ShardDataset(g.url, bucket=B, shards=shards, seed=7, rank=rank, world_size=2, job="split")
    dr.set_epoch(3)
    parts.append(list(loader(dr, 2)))
ka, kb = {s["__key__"] for s in parts[0]}, {s["__key__"] for s in parts[1]}
t.check(len(ka) == len(kb) == 200 and not (ka & kb), "2 ranks x 2 workers: disjoint samples, 200 each",
        (len(ka), len(kb), len(ka & kb)))
check_epoch(parts[0] + parts[1], want, "2 ranks together")

sb_ds = ShardDataset(g.url, bucket=B, prefix="train/", seed=42, shuffle_buffer=64)
e_buf = list(loader(sb_ds))
check_epoch(e_buf, want, "shuffle_buffer=64")
t.check([s["__key__"] for s in e_buf] != k0, "the shuffle buffer changes the order")

# --- other sources ----------------------------------------------------------------------------

LOCAL = os.path.join(TMP, "local")
r = shard_tool("--size", "200K", SRC, LOCAL)
paths = sorted(glob.glob(os.path.join(LOCAL, "*.tar")))
check_epoch(list(loader(ShardDataset(urls=paths))), want, "local files")
obj_urls = ["%s/v1/objects/%s/%s" % (g.url, B, n) for n in shards]
check_epoch(list(loader(ShardDataset(urls=obj_urls), 2)), want, "plain HTTP URLs (307 followed)")
TGZ = os.path.join(TMP, "s.tgz")
with tarfile.open(TGZ, "w:gz") as tf:
    for k in sorted(want)[:30]:
        for ext in want[k]:
            tf.add(os.path.join(SRC, k + "." + ext), k + "." + ext)
c.put(B, "gz/s.tgz", TGZ)
check_epoch(list(ShardDataset(c, bucket=B, prefix="gz/")), {k: want[k] for k in sorted(want)[:30]}, "a .tgz shard")

# .zip shards: from the bucket (4 workers), from local files, and a download cut in the middle
# (resumed with a Range from the byte it reached, the ETag as If-Match)
zkeys = sorted(want)[30:130]
zwant = {k: want[k] for k in zkeys}
zpaths = []
for i in range(4):
    zp = os.path.join(TMP, "z%d.zip" % i)
    with zipfile.ZipFile(zp, "w", zipfile.ZIP_DEFLATED if i % 2 else zipfile.ZIP_STORED) as zf:
        for k in zkeys[i::4]:
            for ext in want[k]:
                zf.write(os.path.join(SRC, k + "." + ext), k + "." + ext)
    c.put(B, "zip/z%d.zip" % i, zp)
    zpaths.append(zp)
check_epoch(list(loader(ShardDataset(c, bucket=B, prefix="zip/", seed=5))), zwant, ".zip shards by prefix, 4 workers")
check_epoch(list(loader(ShardDataset(urls=zpaths), 2)), zwant, ".zip shards as local files")


class CutOnce(http.server.BaseHTTPRequestHandler):
    """Serves TMP's files with Range; the first answer stops after 5000 bytes."""
    cut = [True]

    def do_GET(self):
        with open(os.path.join(TMP, os.path.basename(self.path)), "rb") as f:
            data = f.read()
        rng, start = self.headers.get("Range"), 0
        if rng:
            start = int(rng.split("=")[1].split("-")[0])
        self.send_response(206 if rng else 200)
        self.send_header("ETag", '"v1"')
        self.send_header("Content-Length", str(len(data) - start))
        if rng:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.end_headers()
        if self.cut[0]:
            self.cut[0] = False
            self.wfile.write(data[start:start + 5000])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data[start:])

    def log_message(self, *a):
        pass


hs = http.server.ThreadingHTTPServer(("127.0.0.1", 0), CutOnce)
threading.Thread(target=hs.serve_forever, daemon=True).start()
zds = ShardDataset(urls=["http://127.0.0.1:%d/z1.zip" % hs.server_address[1]], retry_for=10)
check_epoch(list(zds), {k: want[k] for k in zkeys[1::4]}, "a .zip download cut after 5000 bytes")
t.check(zds.resumes == 1 and not CutOnce.cut[0], "and resumed once", zds.resumes)
hs.shutdown()
hs.server_close()

# --- GetBatch: BatchDataset -------------------------------------------------------------------

index = load_index(IDX)
bd = BatchDataset(g.url, B, index, batch_size=16, seed=1)
batches = list(loader(bd, 2))
check_epoch([s for b in batches for s in b], want, "BatchDataset (one GetBatch per 16 samples, 2 workers)")
t.check(len(batches) == len(bd) == 25 and all(len(b) == 16 for b in batches), "25 batches of 16", len(batches))
bd.set_epoch(1)
t.check([s["__key__"] for b in loader(bd, 2) for s in b] != [s["__key__"] for b in batches for s in b],
        "BatchDataset: another epoch, another order")
for i in range(50):
    c.put(B, "plain/p%03d" % i, b"plain %d" % i)
pb = [list(loader(BatchDataset(c, B, ["plain/p%03d" % i for i in range(50)], 8, drop_last=True, rank=r,
                               world_size=2), 2)) for r in (0, 1)]
flat = [s for part in pb for b in part for s in b]
t.check(len(pb[0]) + len(pb[1]) == 6 and len({s["__key__"] for s in flat}) == 48
        and all(s["data"] == b"plain %d" % int(s["__key__"][-3:]) for s in flat),
        "BatchDataset of plain objects, 2 ranks x 2 workers, drop_last: the 6 full batches once, bytes right",
        [len(x) for x in pb])

# --- a target killed and restarted in the middle of a shard -------------------------------------

BIG = os.path.join(TMP, "big")
os.makedirs(BIG)
want_big = write_samples(BIG, 240, 100 * 1024, 2)
r = shard_tool("--size", "64M", BIG, "ais://%s/big/" % B)
big = c.list_names(B, "big/")
t.check(r.returncode == 0 and len(big) == 1, "one 24 MiB shard", (r.stderr, big))
victim = owner(big[0])


def restart_later(node, secs):
    def run():
        time.sleep(secs)
        node.start(join=g.url)
    th = threading.Thread(target=run)
    th.start()
    return th


def read_killing_owner(ds):
    """Every sample of ds; its shard's owner is kill -9'd after 5 samples
    and restarted 1 s later."""
    got, th = [], None
    for s in ds:
        got.append(s)
        if len(got) == 5:
            victim.kill9()
            th = restart_later(victim, 1.0)
    th.join()
    return got


# over TCP (local=False: what a client on another host gets) the read breaks and resumes
ds_big = ShardDataset(Client(g.url, timeout=20, retry_for=60, local=False), bucket=B, shards=big)
t0 = time.monotonic()
got = read_killing_owner(ds_big)
check_epoch(got, want_big, "over TCP: the owner kill -9'd after 5 samples, restarted 1 s later")
t.check(ds_big.resumes >= 1, "the read resumed %d time(s) (%.1f s)" % (ds_big.resumes, time.monotonic() - t0))
t.check(poll(lambda: request("GET", victim.url, "/v1/health").status == 200, 20), "the owner is back")

# a shard handed over as a descriptor (the target is on this host) reads on through the kill
ds_loc = ShardDataset(Client(g.url, timeout=20, retry_for=60), bucket=B, shards=big)
f = ds_loc.client.open(B, big[0])
t.eq(type(f).__name__, "LocalStream", "the owner hands the shard over as a descriptor")
f.close()
got = read_killing_owner(ds_loc)
check_epoch(got, want_big, "as a descriptor: the owner kill -9'd after 5 samples, restarted 1 s later")
t.eq(ds_loc.resumes, 0, "no read failed: the descriptor outlives the target process")

# --- kill -9 and restart mid-epoch with 4 workers ------------------------------------------------

ds.set_epoch(2)
order2 = [(s["__key__"], s["__shard__"]) for s in loader(ds)]
victim = owner(order2[300][1])  # a shard no worker has opened by sample 100
late = {sh for _, sh in order2[200:] if owner(sh) is victim}
got, th = [], None
for s in loader(ds):
    got.append(s)
    if len(got) == 100:
        victim.kill9()
        th = restart_later(victim, 1.5)
    if 100 <= len(got) < 200:
        time.sleep(0.01)
th and th.join()
check_epoch(got, want, "4 workers, the owner of %d shards read later kill -9'd at sample 100, restarted "
            "1.5 s later" % len(late))
t.eq([(s["__key__"], s["__shard__"]) for s in got], order2, "and in the same order as without the restart")
t.check(procs[victim.name].poll() is None, "the target is back")
t.finish()
