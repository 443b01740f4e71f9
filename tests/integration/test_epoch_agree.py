"""test_epoch_agree.py - the ranks of a job plan an epoch with the same
settings, or refuse to start: never a silent difference.

The plan of an epoch is made from its one listing and from settings each
rank is given: the hosts of the ranks, the seed, exchange, locality, the
number of ranks and the checkpoint it resumes. Ranks that differ in any of
them deal the same samples differently (read twice and never).

A gateway and 2 targets on 127.0.0.2-3 (2 hosts), a bucket of 8 tar
shards of 8 samples.
1. Without torch.distributed (job=), ranks as datasets in this process
   (no DataLoader workers; rank 0 first, as it stores the listing):
   a. the same settings: 2 ranks read every sample exactly once;
   b. rank 1 with another seed, c. with the hosts in another order,
      d. not resumed while rank 0 resumed a checkpoint: rank 1 raises
      RuntimeError naming the setting (seed, hosts, resumed) within its
      job_wait, before any sample; a rank 1 resumed like rank 0 reads.
2. With torch.distributed (gloo over a file store, 2 processes): the same
   seed reads every sample exactly once; another seed on rank 1 stops
   both ranks at construction with RuntimeError naming the seed.
   Skipped (with the reason) when torch is not installed.
(The old package planned each rank on its own settings: b-d and the seed
mismatch of 2 read samples twice and never, without an error.)
"""
# timeout: 180
import io
import json
import os
import subprocess
import sys
import tarfile
from collections import Counter

from itlib import T

import clulib
import loclib
from clulib import poll

ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
PY = os.environ.get("AISD_PYTHON") or os.path.join(ROOT, "tools", "python")  # another aisd package to test
sys.path.insert(0, PY)
from aisd import Client, ShardDataset  # noqa: E402

t = T()
TMP = os.environ["TMPDIR"]
NSHARDS, PER = 8, 8

clulib.init(t, "epochagree", ["--set", "store.fsync=never"])
g = loclib.HostNode("g1", "gateway")
tg = []
for i in range(2):
    n = loclib.HostNode("t%d" % (i + 1), "target")
    n.host = "127.0.0.%d" % (i + 2)
    tg.append(n)
if not t.check(g.start() and all(x.start(join=g.url) for x in tg), "a gateway and 2 targets on 127.0.0.2-3"):
    t.finish()
if not t.check(poll(lambda: clulib.smap_ids(g) == {g.id} | {x.id for x in tg}, 15), "the map lists every node"):
    t.finish()
HOSTS = [x.host for x in tg]
c = Client(g.url, timeout=20, retry_for=30)
c.create_bucket("ml")
every = Counter()
for s in range(NSHARDS):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for i in range(PER):
            ti = tarfile.TarInfo("s%d_%02d.cls" % (s, i))
            ti.size = 1
            tf.addfile(ti, io.BytesIO(b"%d" % (i % 10)))
            every[("train/shard-%d.tar" % s, "s%d_%02d" % (s, i))] = 1
    c.put("ml", "train/shard-%d.tar" % s, buf.getvalue())


def rank(r, job, **kw):
    a = dict(bucket="ml", prefix="train/", rank=r, world_size=2, hosts=HOSTS, seed=1, locality=True, job=job,
             job_wait=4, timeout=20, retry_for=30)
    a.update(kw)
    return ShardDataset(g.url, **a)


def keys(ds):
    return Counter((x["__shard__"], x["__key__"]) for x in ds)


def refused(ds, field, what):
    try:
        n = len(keys(ds))
    except RuntimeError as e:
        return t.check("%s: " % field in str(e) and "on rank 0" in str(e), "%s: refused, naming %s" % (what, field),
                       str(e)[:400])
    return t.check(False, "%s: refused (read %d samples instead)" % (what, n))


# --- 1. without torch.distributed: job= ---------------------------------------------------------
r0 = rank(0, "same")
got = keys(r0) + keys(rank(1, "same"))
t.check(got == every, "a. the same settings: 2 ranks read every sample exactly once", len(got))

keys(rank(0, "seed"))
refused(rank(1, "seed", seed=2), "seed", "b. rank 1 with another seed than rank 0")
keys(rank(0, "hosts"))
refused(rank(1, "hosts", hosts=HOSTS[::-1]), "hosts", "c. rank 1 with the hosts in another order")

st = rank(0, "resume").state_dict(8)  # rank 0 (and so every rank) at 8 samples of epoch 0
d0 = rank(0, "resume")
d0.load_state_dict(st)
n0 = len(keys(d0))
refused(rank(1, "resume"), "resumed", "d. rank 1 not resumed while rank 0 resumed a checkpoint")
d1 = rank(1, "resume")
d1.load_state_dict(st)
t.check(n0 + len(keys(d1)) == NSHARDS * PER - 2 * 8, "d. rank 1 resumed like rank 0: both read the rest of the "
        "epoch (%d samples)" % (NSHARDS * PER - 2 * 8), n0)

# --- 2. with torch.distributed (gloo) ------------------------------------------------------------
RANK = r"""
import json, os, sys
sys.path.insert(0, os.environ["AISD_PYTHON"])
import torch.distributed as dist
from aisd import ShardDataset
a = json.loads(sys.argv[1])
dist.init_process_group("gloo", init_method="file://" + a["store"], rank=a["rank"], world_size=2)
try:
    ds = ShardDataset(a["url"], bucket="ml", prefix="train/", hosts=a["hosts"], seed=a["seed"], locality=True)
    print(json.dumps([[x["__shard__"], x["__key__"]] for x in ds]))
except RuntimeError as e:
    print("refused: %s" % e)
"""
try:
    import torch  # noqa: F401
    have_torch = True
except ImportError as e:
    t.ok("# SKIP torch.distributed: torch is not installed (%s): tools/install-deps.sh installs python3-torch" % e)
    have_torch = False


def dist_run(seeds, n):
    procs = [subprocess.Popen([sys.executable, "-c", RANK, json.dumps(dict(
        store=os.path.join(TMP, "store%d" % n), rank=r, seed=seeds[r], url=g.url, hosts=HOSTS))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, AISD_PYTHON=PY)) for r in range(2)]
    outs = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
        outs.append((p.returncode, o.decode(errors="replace").strip(), e.decode(errors="replace")[-300:]))
    return outs


if have_torch:
    outs = dist_run([1, 1], 0)
    if t.check(all(rc == 0 and o.startswith("[") for rc, o, _ in outs), "2. gloo, the same seed: both ranks read",
               outs):
        got = Counter(tuple(x) for _, o, _ in outs for x in json.loads(o))
        t.check(got == every, "2. gloo, the same seed: every sample exactly once", len(got))
    outs = dist_run([1, 2], 1)
    t.check(all(rc == 0 and o.startswith("refused:") and "seed: 2 on rank 1, 1 on rank 0" in o for rc, o, _ in outs),
            "2. gloo, another seed on rank 1: both ranks refuse at construction, naming the seed", outs)
clulib.check_logs([g] + tg)
t.finish()
