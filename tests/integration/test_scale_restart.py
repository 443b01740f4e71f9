"""test_scale_restart.py - a target with 100,000 objects killed (-9) in the
middle of overwrites and deletes is ready again without a walk of its disks,
and still leaves no crash leftover behind: one target (its own dir, two
mountpaths) started here on a loopback port, stopped by PID.

 1. 100,000 objects of 1 KiB filled by scaleload (the store's own write
    protocol, while the target is stopped); the target starts and reports
    its start-up reconcile done, having walked no file.
 2. Overwrites of 300 of them run on 16 connections, deletes of others; the target
    is killed (-9) in their middle. A file no record and no crash hint
    names (as a walk would find it: an old gen of an unknown hash, dated an
    hour back) is planted in mp1/obj/.
 3. Restarted: it answers health and GETs of the filled objects (verified
    by aisloader), and its reconcile ends with 0 files walked and fewer
    crash hints checked than the writes that were in flight could leave
    (not one per object).
 4. The planted file is still there (a walk would have removed it), and
    the object files on disk are exactly the objects the target counts
    plus that one: every leftover of the writes the kill cut was found
    from its hint.
"""
# timeout: 240
import glob
import http.client
import json
import os
import subprocess
import time

from itlib import T, worker

import clulib
from clulib import Node

N = 100000
B = "big"
SIZE = 1024
BUILD = os.path.dirname(os.environ["AISD_BIN"])
FILL = os.path.join(BUILD, "scaleload")
LOADER = os.path.join(BUILD, "aisloader")

t = T()
clulib.init(t, "sr", ["--set", "store.fsync=never"], mountpaths=2)
tg = Node("t1", "target")
mps = [os.path.join(tg.dir, "mp1"), os.path.join(tg.dir, "mp2")]


def stats():
    r = clulib.get(tg.url, "/v1/daemon?what=stats")
    return json.loads(r.body) if r.status == 200 else None


def reconciled():
    """The stats once the start-up count and reconcile of every mountpath
    are done, else None."""
    try:
        d = stats()
    except OSError:
        return None
    if not d or any("reconcile" not in m for m in d["mountpaths"]):
        # a build that reports no reconcile: give a walk its time to show
        # (the planted file gone), up to 60 s; the checks below fail it
        if os.path.exists(planted) and time.monotonic() < walk_deadline:
            return None
        return d if d and not any(m.get("counting") for m in d["mountpaths"]) else None
    ok = all(m["reconcile"]["done"] and not m.get("counting") for m in d["mountpaths"])
    return d if ok else None


def poll(fn, secs):
    """fn() every 0.2 s for at most secs seconds: its first true value, or None."""
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    return None


planted = os.path.join(mps[0], "obj", "ab", "ab" * 16 + ".0000000000000001")
walk_deadline = 0


def rc_sum(d, field):
    return sum(m.get("reconcile", {}).get(field, -1) for m in d["mountpaths"])


def object_files():
    return sum(len(os.listdir(d)) for mp in mps for d in glob.glob(os.path.join(mp, "obj", "*")))


def loader(op, objects, secs, extra=()):
    return subprocess.Popen([LOADER, "--url", "%s/v1/objects/%s" % (tg.url, B), "--op", op, "--objects",
                             str(objects), "--size", str(SIZE), "--duration", str(secs), "--workers", "16",
                             "--json"] + list(extra), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


# --- 1. fill, start -------------------------------------------------------------
if not t.check(os.access(FILL, os.X_OK), "scaleload is built (make %s/scaleload)" % BUILD):
    t.finish()
t0 = time.monotonic()
fill = subprocess.run([FILL, "-b", B, "-n", str(N), "-s", str(SIZE), "-m", mps[0], "-m", mps[1]],
                      capture_output=True, text=True, timeout=180)
t.check(fill.returncode == 0, "scaleload fills %d objects (%.1f s)" % (N, time.monotonic() - t0),
        fill.stderr[-500:])
if not t.check(tg.start(), "the target starts on the filled mountpaths"):
    t.finish()
d = poll(reconciled, 60)
t.check(d is not None and d["objects"] == N, "it counts %d objects" % N, d and d.get("objects"))

# --- 2. kill -9 in the middle of overwrites and deletes -----------------------------
put = loader("put", 300, 30)
dels = []


def deleter():
    for i in range(300, 3000):
        try:
            dels.append(clulib.request("DELETE", tg.url, "/v1/objects/%s/obj-%06d" % (B, i)).status)
        except (OSError, http.client.HTTPException):
            return  # the kill


w = worker(deleter)
time.sleep(1.5)
tg.kill9()
put.kill()
put.wait(10)
w.join(30)
t.check(len(dels) > 0, "deletes ran before the kill (%d answered)" % len(dels))

with open(planted, "w") as f:
    f.write("orphan")
old = time.time() - 3600
os.utime(planted, (old, old))

# --- 3. restart: ready, reads, reconcile without a walk -------------------------------
t0 = time.monotonic()
if not t.check(tg.start(), "the target restarts after kill -9 (health ok in %.2f s)" % (time.monotonic() - t0)):
    t.finish()
walk_deadline = time.monotonic() + 60
get = loader("get", N, 0, ["--verify", "--count", "3000"])
out, _ = get.communicate(timeout=120)
res = json.loads(out.decode().strip().splitlines()[-1]) if out.strip() else {}
# the first 3000 may be overwritten or deleted; the rest are as filled
t.check(get.returncode != 2 and res.get("ops", 0) > 0, "GETs answer after the restart", res)
d = poll(reconciled, 120)
if not t.check(d is not None, "the start-up reconcile ends"):
    t.finish()
walked, hints = rc_sum(d, "walked"), rc_sum(d, "hints")
t.check(walked == 0, "the restart walked no object file (walked %d; %d objects)" % (walked, d["objects"]), d)
t.check(0 <= hints < 1000, "it checked %d crash hints: the writes in flight, not the objects" % hints)

# --- 4. no walk, no leftover ------------------------------------------------------------
t.check(os.path.exists(planted), "a file no hint names is left where it is (no walk found it)")
files = object_files()
t.check(files == d["objects"] + 1, "object files on disk: the %d objects it counts and the planted one (%d)"
        % (d["objects"], files), "removed %d" % rc_sum(d, "removed"))
errs = 0
for i in range(3000, 100000, 997):  # objects the load did not touch read back
    r = clulib.get(tg.url, "/v1/objects/%s/obj-%06d" % (B, i))
    errs += r.status != 200 or len(r.body) != SIZE
t.check(errs == 0, "untouched objects read back whole (%d failed)" % errs)
if os.path.exists(planted):
    os.unlink(planted)
clulib.check_logs([tg])
t.finish()
