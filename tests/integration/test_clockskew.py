"""test_clockskew.py - targets whose wall clocks disagree by 20 minutes
neither bring a deleted object back nor lose a newer write: writes and
deletes are ordered by stamps (the hybrid logical clock every
intra-cluster request carries), not by the clock of whichever target
stored a copy. 1 gateway + 3 targets on loopback ports (stopped by PID),
the targets' clocks shifted with the test hook debug.clock_offset: t1
-10 min, t2 0, t3 +10 min. mirror.delete_quorum=tombstone (a delete one
holder took is acknowledged; its tombstone wins when the others return).

Checks, for a copies=1 and a copies=2 bucket, on objects of which t3 (the
clock ahead) holds a copy:
 1. PUT v1 (native or S3); t3 is killed (kill -9) and leaves the map.
 2. While it is away: half of them are overwritten (v2, by the targets
    whose clocks run behind t3's); the copies=2 ones of the other half are
    deleted (200 / 204: the other holder took the delete); the copies=1
    ones answer 503 (the only holder is away: the delete is not
    acknowledged) and stay v1.
 3. t3 restarts with its stale copies and rejoins; once its rebalance is
    through (bounded wait): every overwritten object reads v2 through the
    gateway (native and S3) and from every holder; every deleted one
    answers 404 (native and S3) on every target and is not listed; every
    copies=1 object whose delete was refused still reads v1.
Fails on a build that orders by wall clocks: t3's stale copies are
"newer" than the writes and deletes made while it was away.
With CLOCKSKEW_FAKETIME=1 the clocks are shifted with libfaketime
(LD_PRELOAD) instead of the hook, and mirror.delete_quorum is set only
when the binary knows it: for checking a build without them
(BUILD=old-build).
"""
# timeout: 240
import os
import subprocess
import time

from itlib import T, q

import clulib
import hrwlib
from clulib import Node, follow, get, poll, request, smap_ids
from s3lib import boto3_client

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}
SKEW = {"t1": "-10m", "t2": "0", "t3": "+10m"}
FAKETIME = os.environ.get("CLOCKSKEW_FAKETIME") == "1"
LIBFT = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


class Skewed(Node):
    """A node started with its clock shifted by SKEW[name]."""

    def start(self, join=None):
        off = SKEW.get(self.name, "0")
        saved, env = clulib.ARGS, dict(os.environ)
        if FAKETIME:
            os.environ.update({"LD_PRELOAD": LIBFT, "FAKETIME": off if off != "0" else "+0",
                               "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_DONT_RESET": "1"})
        else:
            clulib.ARGS = saved + ["--set", "debug.clock_offset=" + off]
        try:
            return Node.start(self, join)
        finally:
            clulib.ARGS = saved
            os.environ.clear()
            os.environ.update(env)


t = T()
if FAKETIME and not t.check(os.path.exists(LIBFT), "libfaketime is installed (CLOCKSKEW_FAKETIME=1)"):
    t.finish()

clulib.init(t, "skew", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1s", "--set", "store.fsync=never",
                        "--set", "s3.key=aisdtestkey:aisdtestsecret:aisd-test:AIS Test"] +
            (["--set", "mirror.delete_quorum=tombstone"] if not FAKETIME or b"mirror.delete_quorum" in subprocess.run(
                [clulib.BIN, "--help-config"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout else []))
g, (t1, t2, t3) = clulib.start_cluster(3, secs=20, node_class=Skewed)
tgs = [t1, t2, t3]
ids = [x.id for x in tgs]
s3 = boto3_client(g.url)

BUCKETS = {"skew1": 1, "skew2": 2}
for b, k in BUCKETS.items():
    t.eq(request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON).status, 200, "create " + b)
    if k > 1:
        mp = '{"action":"set-bprops","value":{"mirror":{"enabled":true,"copies":%d}}}' % k
        t.eq(request("PATCH", g.url, "/v1/buckets/" + b, mp, JSON).status, 200, "%s: mirror.copies=%d" % (b, k))
time.sleep(1.5)  # a few keepalive rounds: every node has seen every clock


def on(node, b, n):
    return get(node.url, "/v1/objects/%s/%s" % (b, q(n)), headers=INTRA)


def native_put(b, n, data):
    return follow("PUT", g.url, "/v1/objects/%s/%s" % (b, q(n)), data)[1].status


def s3_put(b, n, data):
    return s3.put_object(Bucket=b, Key=n, Body=data)["ResponseMetadata"]["HTTPStatusCode"]


def native_del(b, n):
    return follow("DELETE", g.url, "/v1/objects/%s/%s" % (b, q(n)))[1].status


def s3_del(b, n):
    import botocore.exceptions
    try:
        return s3.delete_object(Bucket=b, Key=n)["ResponseMetadata"]["HTTPStatusCode"]
    except botocore.exceptions.ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"]


def s3_read(b, n):
    import botocore.exceptions
    try:
        return s3.get_object(Bucket=b, Key=n)["Body"].read()
    except botocore.exceptions.ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"]


# per bucket: 8 names with a copy on t3 (the clock ahead): 4 overwritten, 4 deleted while t3 is away;
# even ones through the native API, odd ones through S3
plan = {}
for b, k in BUCKETS.items():
    names = [n for n in ("o%03d" % i for i in range(400)) if t3.id in hrwlib.top(b + "/" + n, ids, k)][:8]
    plan[b] = {"over": names[:4], "del": names[4:]}
v1 = {(b, n): b"v1 of %s/%s " % (b.encode(), n.encode()) * 50 for b in plan for n in plan[b]["over"] + plan[b]["del"]}
v2 = {key: b"v2, written while t3 was away: " + d for key, d in v1.items()}
bad = [key for i, key in enumerate(sorted(v1)) if (native_put if i % 2 == 0 else s3_put)(key[0], key[1], v1[key]) != 200]
t.check(not bad, "%d PUTs of v1 (native and S3), each with a copy on t3" % len(v1), bad[:3])
t.check(all(on(t3, b, n).status == 200 for b, n in v1), "  t3 holds them all")

t3.kill9()
t.check(poll(lambda: smap_ids(g) == {g.id, t1.id, t2.id}, 30), "t3 killed: it leaves the map", smap_ids(g))
bad = []
for b in plan:
    for i, n in enumerate(plan[b]["over"]):
        st = (native_put if i % 2 == 0 else s3_put)(b, n, v2[(b, n)])
        if st != 200:
            bad.append((b, n, st))
t.check(not bad, "overwrites (v2) while t3 is away, on targets whose clocks run behind t3's", bad)
st = {(b, n): (native_del if i % 2 == 0 else s3_del)(b, n) for b in plan for i, n in enumerate(plan[b]["del"])}
want = {(b, n): (503 if BUCKETS[b] == 1 else (200 if i % 2 == 0 else 204))
        for b in plan for i, n in enumerate(plan[b]["del"])}
t.check(st == want, "deletes while t3 is away: copies=2 acknowledged; copies=1 503 (its only holder is away)",
        {k: v for k, v in st.items() if v != want[k]})
gone = [(b, n) for b in plan for n in plan[b]["del"] if BUCKETS[b] > 1]
kept = {(b, n): v1[(b, n)] for b in plan for n in plan[b]["del"] if BUCKETS[b] == 1}
newer = {(b, n): v2[(b, n)] for b in plan for n in plan[b]["over"]}

t.check(t3.start(join=g.url), "t3 restarts with its stale copies (its clock still 10 min ahead)")
t.check(poll(lambda: smap_ids(g) == {g.id, t1.id, t2.id, t3.id}, 30), "  and rejoins")


def holders(b, n):
    return [x for x in tgs if x.id in hrwlib.top(b + "/" + n, ids, BUCKETS[b])]


def settled():
    return (all(all(on(x, b, n).body == d for x in holders(b, n)) for (b, n), d in newer.items()) and
            all(all(on(x, b, n).status == 404 for x in tgs) for b, n in gone))


t.check(poll(settled, 60), "t3's rebalance is through: its holders agree on the newest writes, no deleted copy left",
        {"stale": [key for key, d in newer.items() if any(on(x, *key).body != d for x in holders(*key))],
         "back": [key for key in gone if any(on(x, *key).status != 404 for x in tgs)]})
wrong = [key for key, d in newer.items() if follow("GET", g.url, "/v1/objects/%s/%s" % (key[0], q(key[1])))[1].body != d]
t.check(not wrong, "no newer write is lost: v2 through the gateway (native)", wrong)
wrong = [key for key, d in newer.items() if s3_read(*key) != d]
t.check(not wrong, "  and through S3", wrong)
back = {key: follow("GET", g.url, "/v1/objects/%s/%s" % (key[0], q(key[1])))[1].status for key in gone}
t.check(all(s == 404 for s in back.values()), "no deleted object comes back: 404 (native)", back)
back = {key: s3_read(*key) for key in gone}
t.check(all(s == 404 for s in back.values()), "  and through S3", {k: v for k, v in back.items() if v != 404})
for b in plan:
    pages, last = clulib.list_pages(g.url, b, 1000)
    listed = {x for p in (pages or []) for x in p}
    t.check(pages is not None and not listed & {n for bb, n in gone if bb == b},
            "  %s: the listing names none of them" % b, last)
wrong = [key for key, d in kept.items() if follow("GET", g.url, "/v1/objects/%s/%s" % (key[0], q(key[1])))[1].body != d]
t.check(not wrong, "the copies=1 objects whose delete was refused read v1", wrong)
t.finish()
