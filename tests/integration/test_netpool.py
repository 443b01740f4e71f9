"""test_netpool.py - work that waits on a stalled peer never holds the I/O
pool: 1 gateway + 3 targets started here on loopback ports (stopped by
PID), io.threads=2, a long cluster.grace (the stalled target stays in the
map).

Checks:
 1. t3 stopped (SIGSTOP): S3 requests sent to t1 that wait on t3, three
    DeleteObjects of a key t3 owns (forwarded to t3) and three
    ListObjectsV2 (fanned out to every target), six in all, more than the
    two threads of t1's I/O pool, are all still waiting 1 s later.
 2. Meanwhile native PUTs of names t1 owns, sent to t1, are each
    acknowledged within 10 s (each waits on nothing but t1's disk) and
    read back byte for byte, while those six requests still wait.
 3. t3 continued (SIGCONT): the six requests finish (200; the deleted
    key is gone, the listing has every object).
Without the network pool the six requests hold t1's two I/O threads until
t3 answers, and the PUTs wait for them.
"""
# timeout: 180
import concurrent.futures
import os
import signal
import time

from itlib import T, q

import clulib
import hrwlib
import s3lib
from clulib import get, poll, procs, request

JSON = {"Content-Type": "application/json"}
B = "netpool"
WAITERS = 3  # of each kind

t = T()
s3lib.cluster(t, "np", args=["--set", "cluster.grace=120s", "--set", "io.threads=2"])
g, t1, t2, t3 = s3lib.cluster.nodes
ids = [x.id for x in (t1, t2, t3)]
s3 = s3lib.boto3_client(t1.url)
t.eq(request("POST", g.url, "/v1/buckets/" + B, '{"action":"create-bck"}', JSON).status, 200, "create " + B)
bmd_v = get(g.url, "/v1/daemon?what=bmd").json()["version"]
t.check(poll(lambda: all(get(x.url, "/v1/daemon?what=bmd").json()["version"] >= bmd_v for x in (t1, t2, t3)), 10),
        "every target has the BMD")


def owned_by(tg, n, prefix):
    out = [x for x in ("%s%04d" % (prefix, i) for i in range(2000)) if hrwlib.top(B + "/" + x, ids, 1) == [tg.id]]
    return out[:n]


on_t3 = owned_by(t3, WAITERS, "d")
for k in on_t3:
    s3.put_object(Bucket=B, Key=k, Body=b"gone soon")
t.eq(len(on_t3), WAITERS, "%d keys owned by t3, stored" % WAITERS)

procs["t3"].send_signal(signal.SIGSTOP)
pool = concurrent.futures.ThreadPoolExecutor(2 * WAITERS)
try:
    waiters = [pool.submit(s3.delete_objects, Bucket=B, Delete={"Objects": [{"Key": k}]}) for k in on_t3]
    waiters += [pool.submit(s3.list_objects_v2, Bucket=B) for _ in range(WAITERS)]
    time.sleep(1)
    t.check(not any(f.done() for f in waiters),
            "1. t3 stopped: %d DeleteObjects and %d ListObjectsV2 sent to t1 wait on it" % (WAITERS, WAITERS),
            [f.result() for f in waiters if f.done()][:1])

    data = {n: os.urandom(1000 + 97 * i) for i, n in enumerate(owned_by(t1, 5, "p"))}
    slow = []
    for n, d in data.items():
        t0 = time.monotonic()
        try:
            st = request("PUT", t1.url, "/v1/objects/%s/%s" % (B, q(n)), d, timeout=15).status
        except OSError as e:
            st = str(e)
        secs = time.monotonic() - t0
        if st != 200 or secs > 10:
            slow.append((n, st, round(secs, 1)))
    t.check(not slow, "2. 5 PUTs of names t1 owns, to t1, each acknowledged within 10 s", slow)
    bad = []
    for n, d in data.items():
        try:
            if get(t1.url, "/v1/objects/%s/%s" % (B, q(n)), timeout=15).body != d:
                bad.append(n)
        except OSError as e:
            bad.append((n, str(e)))
    t.check(not bad, "   and read back byte for byte", bad)
    t.check(not any(f.done() for f in waiters), "   while the %d requests still wait on t3" % (2 * WAITERS))
finally:
    procs["t3"].send_signal(signal.SIGCONT)

errs = []
for f in waiters:
    try:
        r = f.result(timeout=60)
        if r["ResponseMetadata"]["HTTPStatusCode"] != 200 or r.get("Errors"):
            errs.append(r.get("Errors") or r["ResponseMetadata"])
    except Exception as e:  # noqa: BLE001
        errs.append(e)
pool.shutdown()
t.check(not errs, "3. t3 continued: the %d requests finish with 200" % (2 * WAITERS), errs[:2])
names = {o["Key"] for o in s3.list_objects_v2(Bucket=B).get("Contents", [])}
t.eq(names, set(data), "   the deleted keys are gone, the PUT ones listed")
errors = s3lib.error_lines()
t.check(not errors, "no error-level log line on any node", errors[:5])
t.finish()
