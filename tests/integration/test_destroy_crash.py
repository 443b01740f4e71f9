"""test_destroy_crash.py - a bucket destroy cut by kill -9 of the target in
the middle of its removal: the objects of the destroyed bucket never show
up in a bucket of the same name created again, and their disk space is
reclaimed after the restart. A gateway and one target (two mountpaths,
cluster.grace 60 s: the target stays in the map while stopped) started
here on loopback ports, stopped by PID.

 1. Bucket "big" created through the gateway; the target killed, N objects
    of 1 KiB filled into its store by scaleload (the store's own write
    protocol), the target restarted: the gateway lists N objects.
 2. DELETE /v1/buckets/big through the gateway; the object files on disk
    are watched, and once the removal has begun (fewer than N files, more
    than none) the target is killed with SIGKILL.
 3. The target restarted: the bucket is gone from the cluster (destroyed
    again if the DELETE did not complete); "big" created again over the
    native API: its listing (native and S3) is empty, and GET of old names
    (those still on disk at the kill first) answers 404.
 4. Within 60 s the object files on disk go to zero (the removal resumed in
    the background), and the bucket holds exactly what is written to it
    after.
"""
# timeout: 240
import glob
import json
import os
import subprocess
import time
import threading

from itlib import T

import clulib
from clulib import Node, get, poll, request
import s3lib
from s3lib import boto3_client

N = 20000
B = "big"
JSON = {"Content-Type": "application/json"}
BUILD = os.path.dirname(os.environ["AISD_BIN"])
FILL = os.path.join(BUILD, "scaleload")

t = T()
clulib.init(t, "dcrash", ["--set", "store.fsync=never", "--set", "cluster.grace=60s",
                          "--set", "s3.key=%s:%s:aisd-test:AIS Test" % (s3lib.AK, s3lib.SK)], mountpaths=2)
g = Node("g", "gateway")
tg = Node("t1", "target")
mps = [os.path.join(tg.dir, "mp1"), os.path.join(tg.dir, "mp2")]
if not t.check(g.start() and tg.start(join=g.url), "gateway and target start"):
    t.finish()
t.check(poll(lambda: len(clulib.smap_ids(g) or ()) == 2, 15), "2 nodes in the map")


def object_files():
    return sum(len(os.listdir(d)) for mp in mps for d in glob.glob(os.path.join(mp, "obj", "*")))


def names(bck):
    """The names of a native listing of bck through the gateway (pages of
    10,000), or the failed response."""
    out, token = [], ""
    for _ in range(100):
        r = get(g.url, "/v1/buckets/%s?pagesize=10000&continuation_token=%s" % (bck, token), timeout=60)
        if r.status != 200:
            return r
        d = r.json()
        out += [e["name"] for e in d["entries"]]
        token = d.get("continuation_token") or ""
        if not token:
            return out
    return "listing did not end"


def create():
    return request("POST", g.url, "/v1/buckets/" + B, json.dumps({"action": "create-bck"}), JSON).status


# --- 1. fill ------------------------------------------------------------------
if not t.check(os.access(FILL, os.X_OK), "scaleload is built (make %s/scaleload)" % BUILD):
    t.finish()
t.eq(create(), 200, "bucket %s created through the gateway" % B)
t.check(poll(lambda: get(tg.url, "/v1/buckets/" + B).status == 200, 10), "the target has the bucket")
tg.kill9()
t0 = time.monotonic()
fill = subprocess.run(["nice", "-n", "10", FILL, "-b", B, "-n", str(N), "-s", "1024", "-m", mps[0], "-m", mps[1]],
                      capture_output=True, text=True, timeout=180)
t.check(fill.returncode == 0, "scaleload fills %d objects (%.1f s)" % (N, time.monotonic() - t0), fill.stderr[-500:])
if not t.check(tg.start(join=g.url), "the target restarts on the filled mountpaths"):
    t.finish()
got = poll(lambda: (lambda x: x if isinstance(x, list) and len(x) == N else None)(names(B)), 30)
t.check(got is not None, "the gateway lists %d objects" % N)
t.eq(object_files(), N, "%d object files on disk" % N)

# --- 2. destroy, kill -9 in the middle of the removal ------------------------------
answer = []
th = threading.Thread(target=lambda: answer.append(request("DELETE", g.url, "/v1/buckets/" + B, timeout=120)))
th.start()
at_kill = None
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    n = object_files()
    if n < N:
        tg.kill9()
        at_kill = n
        break
    time.sleep(0.002)
th.join(130)
t.check(at_kill is not None and 0 < at_kill < N, "the target killed (-9) in the middle of the removal "
        "(%s of %d object files left)" % (at_kill, N), answer and answer[0].status)
t.diag("%d object files on disk after the kill" % object_files())

# --- 3. restart, create again --------------------------------------------------
if not t.check(tg.start(join=g.url), "the target restarts"):
    t.finish()
if get(g.url, "/v1/buckets/" + B).status != 404:  # the DELETE may not have completed
    request("DELETE", g.url, "/v1/buckets/" + B, timeout=120)
t.check(poll(lambda: get(g.url, "/v1/buckets/" + B).status == 404, 30), "bucket %s is gone from the cluster" % B)
t.eq(create(), 200, "bucket %s created again" % B)
t.check(poll(lambda: get(tg.url, "/v1/buckets/" + B).status == 200, 10), "the target has the new bucket")
got = names(B)
t.check(got == [], "the new bucket lists no old object (native)", len(got) if isinstance(got, list) else got)
s3 = boto3_client(g.url)
r = s3.list_objects_v2(Bucket=B)
t.eq(r.get("KeyCount"), 0, "the new bucket lists no old object (S3 ListObjectsV2)")
sts = [clulib.follow("GET", g.url, "/v1/objects/%s/obj-%06d" % (B, i))[1].status for i in range(0, N, N // 40)]
t.check(all(s == 404 for s in sts), "GET of old names in the new bucket: 404", sts)

# --- 4. space reclaimed, new writes --------------------------------------------
t.check(poll(lambda: object_files() == 0, 60), "every old object file removed after the restart (%d left)"
        % object_files())
for i in range(5):
    s3.put_object(Bucket=B, Key="new-%d" % i, Body=b"x" * 100)
t.eq(names(B), ["new-%d" % i for i in range(5)], "the new bucket holds exactly what was written to it")
t.eq(object_files(), 5, "5 object files on disk")

clulib.check_logs([g, tg])
clulib.stop_all()
t.finish()
