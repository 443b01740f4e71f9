"""test_epoch_once.py - every sample exactly once per epoch, whatever the
cluster does while ranks start, and across a kill -9 and restart.

A gateway and 4 targets, each on its own loopback address (127.0.0.2-5
play 4 hosts), a bucket of 1,024 samples in 32 tar shards, a throttled
rebalance (rebalance.rate, one object at a time) so that moving a quarter
of them takes about 8 s.
Ranks are separate processes (locrank.py: rank, world_size and hosts=,
no torch.distributed; a torch DataLoader with 2 workers each).

1. Rebalance at start, 10 trials: t4 goes into maintenance with a drain
   (or comes back: it joins the placement again), and while that
   rebalance moves shards the 4 ranks start 1.2 s apart (locality on,
   one job name per trial): every sample exactly once across ranks and
   workers, its bytes right (the epochs of part 2 check later epochs).
   (Ranks that listed the bucket each on their own planned from
   listings whose locations differed: samples read twice and never; and
   a gateway that did not ask targets in maintenance listed none of the
   shards t4 had not drained yet: never read.)
2. Kill -9 mid-epoch: 4 ranks checkpoint (state_dict) after 64 samples of
   epoch 0 and are killed with their DataLoader workers; restarted with
   load_state_dict on 4 ranks, the samples of the checkpoints and of the
   rest of epoch 0 are every sample exactly once, and so is epoch 1.
   Restarted from the same checkpoints on 3 ranks: the same, epoch 1 then
   dealt over 3 ranks (341 each, the one left over dropped by the plan).
3. Without job= and torch.distributed, 2 ranks refuse to start with an
   error that says what to give.
Skipped (with the reason) only when torch is not installed.
"""
# timeout: 420
import io
import json
import os
import random
import signal
import subprocess
import sys
import tarfile
import time
import zlib

from itlib import T

import clulib
import loclib
from clulib import poll, request

ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
PY = os.environ.get("AISD_PYTHON") or os.path.join(ROOT, "tools", "python")  # another aisd package to test
sys.path.insert(0, PY)
t = T()
try:
    import torch  # noqa: F401
except ImportError as e:
    t.ok("# SKIP torch is not installed (%s): tools/install-deps.sh installs python3-torch" % e)
    t.finish()
from aisd import Client  # noqa: E402

TMP = os.environ["TMPDIR"]
# one object at a time at ~1 shard per second: the holders change all through the ranks' start
BASE = ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=60s", "--set", "store.fsync=never",
        "--set", "rebalance.rate=%d" % (80 << 10), "--set", "rebalance.busy_rate=%d" % (80 << 10),
        "--set", "rebalance.workers=1", "--set", "rebalance.peer_streams=1"]
JSON = {"Content-Type": "application/json"}
NSHARDS, PER = 32, 32

clulib.init(t, "epochonce", BASE)
g = loclib.HostNode("g1", "gateway")
tg = []
for i in range(4):
    n = loclib.HostNode("t%d" % (i + 1), "target")
    n.host = "127.0.0.%d" % (i + 2)
    tg.append(n)
if not t.check(g.start() and all(x.start(join=g.url) for x in tg), "a gateway and 4 targets on 127.0.0.2-5"):
    t.finish()
if not t.check(poll(lambda: clulib.smap_ids(g) == {g.id} | {x.id for x in tg}, 15), "the map lists every node"):
    t.finish()
c = Client(g.url, timeout=20, retry_for=30)
HOSTS = [x.host for x in tg]


def rebalance_state():
    r = request("GET", g.url, "/v1/cluster?what=rebalance")
    return r.json().get("state") if r.status == 200 else None


c.create_bucket("ml")
rng = random.Random(1)
want = {}
for s in range(NSHARDS):
    buf, crcs = io.BytesIO(), {}
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for i in range(PER):
            key = "s%02d_%03d" % (s, i)
            data = {"bin": rng.randbytes(rng.randrange(1000, 3000)), "cls": b"%d" % (i % 5)}
            crc = 0
            for ext in sorted(data):
                ti = tarfile.TarInfo(key + "." + ext)
                ti.size = len(data[ext])
                tf.addfile(ti, io.BytesIO(data[ext]))
                crc = zlib.crc32(data[ext], crc)
            crcs[key] = crc
    name = "train/shard-%02d.tar" % s
    c.put("ml", name, buf.getvalue())
    want[name] = crcs
poll(lambda: rebalance_state() != "running", 60)


def start_rank(r, world, hosts, gap=0.0, **kw):
    a = dict(endpoint=g.url, bucket="ml", prefix="train/", rank=r, world=world, hosts=hosts, workers=2, seed=3,
             locality=True, **kw)
    p = subprocess.Popen(["/usr/bin/python3", os.path.join(os.environ["IT_LIB"], "locrank.py"), json.dumps(a)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                         env=dict(os.environ, AISD_PYTHON=PY))
    time.sleep(gap)
    return p


def finish(procs, secs=240):
    try:
        outs = [p.communicate(timeout=secs) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    return loclib.collect(t, procs, outs)


# --- 1. ranks that start 1-1.5 s apart while a rebalance runs --------------------------------
t4 = tg[3]
bad = 0
for trial in range(10):
    action = "start-maintenance" if trial % 2 == 0 else "stop-maintenance"
    value = {"sid": t4.id, "drain": True} if trial % 2 == 0 else {"sid": t4.id}
    r = request("PUT", g.url, "/v1/cluster", json.dumps({"action": action, "value": value}).encode(), JSON)
    if not t.check(r.status == 200, "trial %d: %s of t4" % (trial, action), r):
        break
    running = poll(lambda: rebalance_state() == "running", 10)
    procs = [start_rank(rk, 4, HOSTS, gap=1.2 if rk < 3 else 0, epochs=1, job="trial%d" % trial) for rk in range(4)]
    res = finish(procs)
    t.diag("trial %d: the rebalance %s while the ranks started; after them: %s" % (
        trial, "ran" if running else "was not seen running", rebalance_state()))
    if res is None or not loclib.exactly_once(t, res, want, "trial %d" % trial):
        bad += 1
    poll(lambda: rebalance_state() != "running", 120)
t.check(bad == 0, "rebalance at start: every epoch of 10 trials read every sample exactly once (%d trials bad)" % bad)
poll(lambda: rebalance_state() != "running", 120)

# --- 2. kill -9 mid-epoch, restart on as many and on fewer ranks ------------------------------
ck = os.path.join(TMP, "ckpt")
os.makedirs(ck)
procs = [start_rank(rk, 4, HOSTS, epochs=2, job="ckpt", ckpt_every=64, hang_after_ckpt=True, compute_ms=5,
                    ckpt_file=os.path.join(ck, "rank%d.json" % rk)) for rk in range(4)]
ok = poll(lambda: all(os.path.exists(os.path.join(ck, "rank%d.json" % rk)) for rk in range(4)) or
          any(p.poll() is not None for p in procs), 180)
for p in procs:
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
    p.wait()
errs = [p.stderr.read().decode(errors="replace")[-600:] for p in procs]
if t.check(ok and all(p.returncode == -signal.SIGKILL for p in procs), "4 ranks checkpointed at 64 samples of "
           "epoch 0 and were killed (kill -9, with their DataLoader workers)", errs):
    ckpts = [json.load(open(os.path.join(ck, "rank%d.json" % rk))) for rk in range(4)]
    before = {0: [x for cp in ckpts for x in cp["samples"]]}
    t.check(all(cp["state"]["position"] == 64 and cp["state"]["epoch"] == 0 for cp in ckpts),
            "each checkpoint: epoch 0, position 64", [cp["state"] for cp in ckpts])
    procs = [start_rank(rk, 4, HOSTS, epochs=2, job="ckpt", resume_file=os.path.join(ck, "rank%d.json" % rk))
             for rk in range(4)]
    res = finish(procs)
    if res is not None:
        loclib.exactly_once(t, res, want, "restart on 4 ranks", before=before)
    procs = [start_rank(rk, 3, HOSTS[:3], epochs=2, job="ckpt", resume_file=os.path.join(ck, "rank0.json"))
             for rk in range(3)]
    res = finish(procs)
    if res is not None:
        from aisd.plan import list_shards  # noqa: E402
        drop = loclib.dropped(want, list_shards(c, "ml", "train/")[0], HOSTS[:3], 3, (1,))[1]
        t.check(len(drop) == NSHARDS * PER % 3 and [len(rk["samples"]) for rk in res[1]] == [NSHARDS * PER // 3] * 3,
                "restart on 3 ranks, epoch 1: %d samples each, %d dropped" % (NSHARDS * PER // 3, len(drop)),
                [len(rk["samples"]) for rk in res[1]])
        loclib.exactly_once(t, res, want, "restart on 3 ranks", before=before, dropped={1: drop})

# --- 3. several ranks, no job, no torch.distributed: refused ----------------------------------
procs = [start_rank(rk, 2, HOSTS[:2], epochs=1) for rk in range(2)]
outs = [p.communicate(timeout=120) for p in procs]
t.check(all(p.returncode != 0 and b"give job=" in o[1] for p, o in zip(procs, outs)),
        "2 ranks without job= or torch.distributed: refused, naming job=", [o[1][-300:] for o in outs])
clulib.check_logs([g] + tg)
t.finish()
