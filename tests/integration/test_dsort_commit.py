"""test_dsort_commit.py - a dsort whose target dies past the barrier (while the
targets commit their output shards) leaves no output shard of the run, on any
target. 1 gateway + 3 targets, started here on loopback ports and stopped by
PID; debug.dsort_commit_pause=1s makes every target wait before each
shard it commits, so that t2 can be killed between two of its commits.

Checks:
 1. A shuffle of 4 input shards into ~24 output shards; t2 is killed with
    kill -9 once it committed one output shard (its run past the barrier).
 2. The other targets commit theirs, then wait for t2 to confirm; it does
    not: within a bounded wait the job (through the gateway) ends failed,
    its error naming t2, and a listing of the destination (partial: t2 is
    down) shows no output shard of the run.
 3. t2 restarts: its run starts again, finds the run failed and removes the
    shard it had committed; the full listing shows none of the run.
 4. No error-level line in any node's log.
"""
# timeout: 180
import io
import json
import os
import tarfile
import time

from itlib import T

import clulib
from clulib import follow, poll, request

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}

t = T()
clulib.init(t, "dsort_commit", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                                "--set", "debug.dsort_commit_pause=1s"])
g, ts = clulib.start_cluster(3)


def names(b, partial=False):
    return clulib.names(g.url, b, partial=partial)


def tar_bytes(samples):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for n, d in samples:
            ti = tarfile.TarInfo(n)
            ti.size = len(d)
            tf.addfile(ti, io.BytesIO(d))
    return bio.getvalue()


for b in ("in", "out"):
    t.eq(request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON).status, 200, "create " + b)
for s in range(4):
    smp = [("k%d/%05d.bin" % (s, i), os.urandom(20000)) for i in range(30)]
    t.eq(follow("PUT", g.url, "/v1/objects/in/in-%d.tar" % s, tar_bytes(smp))[1].status, 200, "PUT in-%d.tar" % s)

spec = {"action": "dsort", "value": {"algorithm": "shuffle", "seed": 3, "prefix": "in-",
                                     "template": "z-%05d.tar", "shard_size": 100000}}
r = request("POST", g.url, "/v1/buckets/in?bck_to=out", json.dumps(spec), JSON)
rid = (r.json() or {}).get("id", "") if r.status == 200 else ""
t.check(rid, "dsort in -> out starts", (r.status, r.body[:300]))


def run_of(tg):
    r = request("GET", tg.url, "/v1/jobs?id=%s&all=true" % (rid or "none"), headers=INTRA)
    runs = (r.json() or {}).get("runs", []) if r.status == 200 else []
    return runs[0] if runs else {}


# --- 1. kill -9 of t2 once it committed one output shard --------------------------------------
at = {}
for _ in range(3000):  # (bounded: 60 s)
    at = run_of(ts[1])
    if at.get("state") != "running" or at.get("moved", 0) >= 1:
        break
    time.sleep(0.02)
ts[1].kill9()
t.check(at.get("state") == "running" and at.get("moved") == 1 and at.get("total", 0) >= 2,
        "t2 killed past the barrier, between two of its commits", at)

# --- 2. the job fails, naming t2; no output shard of it is visible ----------------------------
job = {}


def job_ended():
    global job
    r = request("GET", g.url, "/v1/jobs?id=%s&all=true" % (rid or "none"))
    runs = (r.json() or {}).get("runs", []) if r.status == 200 else []
    job = runs[0] if runs else {}
    return job.get("state") not in (None, "running")


t.check(poll(job_ended, 90), "the job ends without t2", job)
t.check(job.get("state") == "failed" and ts[1].id in job.get("last_error", ""),
        "it ends failed, its error naming the lost target", job)
others = [run_of(x) for x in (ts[0], ts[2])]
t.check(sum(x.get("moved", 0) for x in others) >= 1, "the other targets had committed shards of theirs",
        [(x.get("moved"), x.get("total")) for x in others])
t.eq(names("out", partial=True), [], "no output shard of the failed run is visible (t2 down)")

# --- 3. t2 restarts: its run fails too and removes what it had committed ----------------------
t.check(ts[1].start(join=g.url), "t2 restarts")
t.check(poll(lambda: clulib.in_map(g, ts), 20), "t2 rejoins")
r2 = {}


def t2_ended():
    global r2
    r2 = run_of(ts[1])
    return r2.get("state") not in (None, "running")


t.check(poll(t2_ended, 60) and r2.get("state") == "failed" and r2.get("last_error"),
        "t2's run starts again and fails with its peers' reason", r2)
t.check(poll(lambda: names("out") == [], 30), "no output shard of the failed run anywhere", names("out"))
with open(ts[1].log, errors="replace") as f:
    t.check("output shards of the failed run removed" in f.read(),
            "t2 removed the shard it had committed before it was killed")

clulib.check_logs([g] + ts)
t.finish()
