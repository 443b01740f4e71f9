"""test_honest_delete.py - a delete that cannot reach every holder of a copy
is not acknowledged (and then undone when the holder returns): it answers
503 naming the missing target. 1 gateway + 3 targets on loopback ports
(stopped by PID), mirror.delete_quorum at its default (all).

Checks:
 1. Objects in a copies=1 and a copies=2 bucket, some with a copy on t1,
    some without; t1 is killed (kill -9, not in maintenance) and leaves
    the map.
 2. Native DELETE of a copies=1 object whose only holder is t1: 503, the
    message names t1; S3 DeleteObject: 503 ServiceUnavailable naming t1;
    S3 DeleteObjects: a per-key Error ServiceUnavailable naming t1 for
    each such key, Deleted for a key t1 does not hold; a copies=2 object
    with one holder on t1: 503 naming t1 (native and S3).
 3. Objects t1 holds no copy of are deleted as before (200 / 204).
 4. t1 restarts and rejoins: every copies=1 object whose delete was
    refused is still there (never acknowledged, nothing undone); the
    deletes asked again are acknowledged, and then every one of them
    answers 404 through the gateway and on every target, and stays so
    once t1's rebalance is through.
Fails on a build that acknowledges such a delete (native 404 or 200, S3
204) and lets the copy come back with its holder.
"""
# timeout: 180
import json
import time

from itlib import T, q

import clulib
import hrwlib
from clulib import follow, get, poll, request, smap_ids
from s3lib import boto3_client

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}

t = T()
clulib.init(t, "hdel", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1s", "--set", "store.fsync=never",
                        "--set", "s3.key=aisdtestkey:aisdtestsecret:aisd-test:AIS Test"])
g, (t1, t2, t3) = clulib.start_cluster(3, secs=20)
tgs = [t1, t2, t3]
ids = [x.id for x in tgs]
s3 = boto3_client(g.url)
BUCKETS = {"hd1": 1, "hd2": 2}
for b, k in BUCKETS.items():
    t.eq(request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON).status, 200, "create " + b)
    if k > 1:
        mp = '{"action":"set-bprops","value":{"mirror":{"enabled":true,"copies":%d}}}' % k
        t.eq(request("PATCH", g.url, "/v1/buckets/" + b, mp, JSON).status, 200, "%s: mirror.copies=%d" % (b, k))


def on_t1(b, n):
    return t1.id in hrwlib.top(b + "/" + n, ids, BUCKETS[b])


def pick(b, want, cnt):
    return [n for n in ("k%03d" % i for i in range(300)) if on_t1(b, n) == want][:cnt]


held1, free1 = pick("hd1", True, 4), pick("hd1", False, 2)
held2, free2 = pick("hd2", True, 2), pick("hd2", False, 1)
objs = [("hd1", n) for n in held1 + free1] + [("hd2", n) for n in held2 + free2]
data = {key: b"data of %s/%s " % (key[0].encode(), key[1].encode()) * 40 for key in objs}
bad = [key for key in objs if follow("PUT", g.url, "/v1/objects/%s/%s" % (key[0], q(key[1])), data[key])[1].status != 200]
t.check(not bad, "%d PUTs" % len(objs), bad)

t1.kill9()
t.check(poll(lambda: smap_ids(g) == {g.id, t2.id, t3.id}, 30), "t1 killed (kill -9): it leaves the map", smap_ids(g))


def native_del(b, n):
    return follow("DELETE", g.url, "/v1/objects/%s/%s" % (b, q(n)))[1]


def s3_del(b, n):
    import botocore.exceptions
    try:
        r = s3.delete_object(Bucket=b, Key=n)
        return r["ResponseMetadata"]["HTTPStatusCode"], "", ""
    except botocore.exceptions.ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code"),
                e.response["Error"].get("Message", ""))


def names_t1(r):
    try:
        return t1.id in json.loads(r.body)["message"]
    except (ValueError, KeyError, TypeError):
        return False


r = native_del("hd1", held1[0])
t.check(r.status == 503 and names_t1(r), "native DELETE, copies=1, its only holder down: 503 naming %s" % t1.id, r)
st = s3_del("hd1", held1[1])
t.check(st[0] == 503 and st[1] == "ServiceUnavailable" and t1.id in st[2],
        "S3 DeleteObject: 503 ServiceUnavailable naming it", st)
res = s3.delete_objects(Bucket="hd1", Delete={"Objects": [{"Key": n} for n in held1[2:] + free1[:1]]})
errs = {e["Key"]: (e["Code"], t1.id in e["Message"]) for e in res.get("Errors", [])}
t.check(errs == {n: ("ServiceUnavailable", True) for n in held1[2:]} and
        [d["Key"] for d in res.get("Deleted", [])] == free1[:1],
        "S3 DeleteObjects: a per-key Error ServiceUnavailable naming it; Deleted for a key it does not hold", res)
r = native_del("hd2", held2[0])
t.check(r.status == 503 and names_t1(r), "native DELETE, copies=2, one holder down: 503 naming it", r)
st = s3_del("hd2", held2[1])
t.check(st[0] == 503 and st[1] == "ServiceUnavailable" and t1.id in st[2], "  and S3 DeleteObject", st)
t.eq(native_del("hd1", free1[1]).status, 200, "an object t1 holds no copy of: deleted (native 200)")
t.eq(s3_del("hd2", free2[0])[0], 204, "  (S3 204)")

t.check(t1.start(join=g.url), "t1 restarts")
t.check(poll(lambda: smap_ids(g) == {g.id, t1.id, t2.id, t3.id}, 30), "  and rejoins")
stays = [n for n in held1 if follow("GET", g.url, "/v1/objects/hd1/%s" % q(n))[1].body != data[("hd1", n)]]
t.check(not stays, "every copies=1 object whose delete was refused is still there", stays)
again = {("hd1", n): native_del("hd1", n).status for n in held1[:2]}
again.update({("hd1", n): s3_del("hd1", n)[0] for n in held1[2:]})
again.update({("hd2", n): native_del("hd2", n).status for n in held2})
t.check(all(s in (200, 204, 404) for s in again.values()), "the deletes asked again with t1 back: acknowledged", again)
deleted = list(again) + [("hd1", n) for n in free1] + [("hd2", n) for n in free2]


def gone_everywhere():
    return all(all(get(x.url, "/v1/objects/%s/%s" % (b, q(n)), headers=INTRA).status == 404 for x in tgs)
               for b, n in deleted)


t.check(poll(gone_everywhere, 30), "  every one of them is gone from every target",
        [key for key in deleted if any(get(x.url, "/v1/objects/%s/%s" % (key[0], q(key[1])), headers=INTRA).status != 404
                                       for x in tgs)])
time.sleep(2)  # t1's rebalance walk
back = {key: follow("GET", g.url, "/v1/objects/%s/%s" % (key[0], q(key[1])))[1].status for key in deleted}
t.check(all(s == 404 for s in back.values()), "  and stays gone through the gateway", back)
t.finish()
