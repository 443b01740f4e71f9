"""test_bmd_apply_crash.py - a target killed (-9) after it saved new bucket
metadata (a bucket destroyed) but before it acted on it: when it starts
again it destroys the bucket, so the objects never come back in a bucket
created again with the same name. A gateway and one target started here on
loopback ports (cluster.grace 60 s: the target stays in the map while
stopped), stopped by PID.

 1. Bucket "b" created through the gateway, 40 objects written to it.
 2. The target restarted with debug.bmd_apply_pause=30s; DELETE of the
    bucket through the gateway; once the target's saved metadata no longer
    lists "b" it is killed with SIGKILL: its 40 object files are still on
    disk (it had not acted on the change).
 3. Restarted without the pause: within 30 s the object files are gone;
    "b" created again lists no object (native and S3), and GETs of the old
    names answer 404; new writes are all the bucket holds.
"""
# timeout: 180
# log-allow: bucket metadata v[0-9]+ was saved but maybe not applied
import glob
import json
import os
import threading

from itlib import T

import clulib
from clulib import Node, follow, get, poll, request
import s3lib
from s3lib import boto3_client

N = 40
B = "b"
JSON = {"Content-Type": "application/json"}

t = T()
clulib.init(t, "bmdcrash", ["--set", "cluster.keepalive=500ms", "--set", "cluster.grace=60s",
                            "--set", "s3.key=%s:%s:aisd-test:AIS Test" % (s3lib.AK, s3lib.SK)])
g = Node("g", "gateway")
tg = Node("t1", "target")
if not t.check(g.start() and tg.start(join=g.url), "gateway and target start"):
    t.finish()
t.check(poll(lambda: len(clulib.smap_ids(g) or ()) == 2, 15), "2 nodes in the map")


def object_files():
    return sum(len(os.listdir(d)) for d in glob.glob(os.path.join(tg.dir, "mp1", "obj", "*")))


def saved_buckets():
    """The bucket names in the target's saved bucket metadata (bmd.json)."""
    for p in glob.glob(os.path.join(tg.dir, "**", "bmd.json"), recursive=True):
        try:
            with open(p) as f:
                return {b["name"] for b in json.load(f).get("buckets", [])}
        except (OSError, ValueError, KeyError, TypeError):
            return None
    return None


def create():
    return request("POST", g.url, "/v1/buckets/" + B, json.dumps({"action": "create-bck"}), JSON).status


def names():
    r = get(g.url, "/v1/buckets/" + B)
    return [e["name"] for e in r.json()["entries"]] if r.status == 200 else r.status


# --- 1 ---------------------------------------------------------------------
t.eq(create(), 200, "bucket created")
sts = [follow("PUT", g.url, "/v1/objects/%s/old-%02d" % (B, i), b"old %d" % i)[1].status for i in range(N)]
t.check(all(s == 200 for s in sts), "%d objects written" % N, sts)
t.eq(object_files(), N, "%d object files on disk" % N)
t.check(saved_buckets() is not None and B in saved_buckets(), "the target's saved metadata lists the bucket",
        saved_buckets())

# --- 2 ---------------------------------------------------------------------
tg.kill9()
clulib.ARGS += ["--set", "debug.bmd_apply_pause=30s"]
if not t.check(tg.start(join=g.url), "the target restarts with debug.bmd_apply_pause=30s"):
    t.finish()
clulib.ARGS = clulib.ARGS[:-2]
answer = []
th = threading.Thread(target=lambda: answer.append(request("DELETE", g.url, "/v1/buckets/" + B, timeout=90)))
th.start()
saved = poll(lambda: saved_buckets() is not None and B not in saved_buckets(), 20)
tg.kill9()
th.join(100)
t.check(saved, "the target saved the metadata without the bucket", saved_buckets())
t.eq(object_files(), N, "killed before acting on it: the %d object files are still there" % N)
t.check(answer and answer[0].status in (200, 503), "the DELETE answered", answer and answer[0].status)

# --- 3 ---------------------------------------------------------------------
if not t.check(tg.start(join=g.url), "the target restarts without the pause"):
    t.finish()
if get(g.url, "/v1/buckets/" + B).status != 404:  # the DELETE may not have completed in the cluster
    request("DELETE", g.url, "/v1/buckets/" + B, timeout=60)
t.check(poll(lambda: get(g.url, "/v1/buckets/" + B).status == 404, 30), "the bucket is gone from the cluster")
t.check(poll(lambda: object_files() == 0, 30), "the old object files removed after the restart (%d left)"
        % object_files())
t.eq(create(), 200, "bucket created again")
t.check(poll(lambda: get(tg.url, "/v1/buckets/" + B).status == 200, 10), "the target has the new bucket")
t.eq(names(), [], "the new bucket lists no old object (native)")
s3 = boto3_client(g.url)
t.eq(s3.list_objects_v2(Bucket=B).get("KeyCount"), 0, "the new bucket lists no old object (S3)")
sts = [follow("GET", g.url, "/v1/objects/%s/old-%02d" % (B, i))[1].status for i in range(0, N, 4)]
t.check(all(s == 404 for s in sts), "GET of old names: 404", sts)
for i in range(3):
    s3.put_object(Bucket=B, Key="new-%d" % i, Body=b"new")
t.eq(names(), ["new-%d" % i for i in range(3)], "the new bucket holds exactly what was written to it")

clulib.check_logs([g, tg])
clulib.stop_all()
t.finish()
