"""test_enospc.py - a real full disk in a cluster: 1 gateway and targets t1,
t2 on the test's disk, and t3 whose only mountpath is a small tmpfs mounted
here (as root; unmounted in every case), store.min_free=0 so that the disk
really fills. Nodes on loopback ports, stopped by PID.

Checks:
 1. Rebalance onto a full disk: 64 objects of 1 MiB on t1 and t2, then t3
    joins with a 12 MiB tmpfs, too small for its share: the rebalance
    reports errors (the cluster's job totals); no object is lost (each is on
    some target: none deleted from its sender before it was stored); a read
    through the gateway gives the bytes, or 507 insufficient storage when
    the owner t3 cannot store the copy it fetches; the tmpfs grows
    (remount, 256 MiB) and the rebalance completes: done without errors,
    each object only on its new owner, every one reads back.
 2. S3 onto the full disk: the tmpfs shrinks to what it holds plus 6 MiB;
    S3 PUTs of 2 MiB owned by t3 (boto3) fill it until one fails with 507
    InsufficientStorage (S3 XML error); the failed key is NoSuchKey, the
    stored ones read back, no temp file is left on the tmpfs. Then a file
    takes the last bytes: empty S3 PUTs (only their records need space)
    fail with 507 InsufficientStorage too, not 500.
 3. A replica holder with a full disk: in a mirror.copies=2 bucket, a PUT
    owned by t1 or t2 whose second holder is t3 fails with 503 naming the
    write quorum and t3's insufficient storage, and no target keeps a copy; a
    PUT whose holders are t1 and t2 is 200 with both copies.
 4. No error-level log line; the tmpfs is
    unmounted at the end.
"""
# serial: tmpfs mounts and a full disk
# timeout: 240
import glob
import json
import os
import subprocess
import time

from itlib import T

import clulib
import hrwlib
from clulib import Node, follow, get, poll, request, smap_ids
from s3lib import AK, REGION, SK

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}
MiB = 1 << 20

t = T()
clulib.init(t, "ns", ["--set", "cluster.keepalive=500ms", "--set", "cluster.grace=120s",
                      "--set", "store.fsync=never", "--set", "store.min_free=0",
                      "--set", "s3.key=%s:%s:aisd-test:AIS Test" % (AK, SK)])
if os.getuid() != 0:
    t.skip("a full disk on a tmpfs", "needs root to mount a tmpfs")
    t.finish()
g = Node("g1", "gateway")
t1, t2, t3 = (Node("t%d" % i, "target") for i in (1, 2, 3))
SMALL = os.path.join(t3.dir, "mp1")
os.makedirs(SMALL, exist_ok=True)


def sh(*args):
    r = subprocess.run(list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=30)
    return r.returncode, r.stdout.decode()


def mounted():
    with open("/proc/mounts") as f:
        return any(line.split()[1] == SMALL for line in f)


rc, out = sh("mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", SMALL)
if not t.check(rc == 0, "a 12 MiB tmpfs mounted as t3's mountpath", out):
    t.finish()
try:
    # --- 1. a rebalance onto the full disk ------------------------------------------------
    if not (t.check(g.start(), "gateway starts") and t.check(t1.start(join=g.url) and t2.start(join=g.url),
                                                              "t1 and t2 join")):
        t.finish()
    t.check(poll(lambda: smap_ids(g) == {g.id, t1.id, t2.id}, 20), "the map lists g1, t1, t2")
    t.eq(request("POST", g.url, "/v1/buckets/reb", '{"action":"create-bck"}', JSON).status, 200, "create reb")
    data = {"o%02d" % i: os.urandom(MiB) for i in range(64)}
    bad = [n for n, d in data.items() if follow("PUT", g.url, "/v1/objects/reb/" + n, d)[1].status != 200]
    t.check(not bad, "64 PUTs of 1 MiB", bad[:3])
    ids3 = [t1.id, t2.id, None]

    def reb():
        r = get(g.url, "/v1/cluster?what=rebalance")
        return r.json() if r.status == 200 else {}

    t.check(t3.start(join=g.url), "t3 joins with its 12 MiB tmpfs")
    ids3[2] = t3.id
    to_t3 = [n for n in data if hrwlib.top("reb/" + n, ids3, 1) == [t3.id]]
    t.diag("%d MiB belong on t3" % len(to_t3))
    t.check(len(to_t3) > 14, "more than the tmpfs holds belongs on t3 (%d MiB)" % len(to_t3))
    t.check(poll(lambda: reb().get("totals", {}).get("errors", 0) > 0, 60),
            "the rebalance reports errors (t3's disk is full)", reb())
    t.diag("last error: %s" % (reb().get("targets", {}).get(t1.id, {}).get("last_error", "")
                              or reb().get("targets", {}).get(t2.id, {}).get("last_error", "")))
    lost = [n for n in data if not any(get(x.url, "/v1/objects/reb/" + n, headers=INTRA).status == 200
                                       for x in (t1, t2, t3))]
    t.check(not lost, "no object lost: each is on some target", lost[:3])
    reads = {n: follow("GET", g.url, "/v1/objects/reb/" + n)[1] for n in data}
    full = [n for n, r in reads.items() if r.status == 507 and b"insufficient storage" in r.body]
    wrong = [(n, r.status, r.body[:200]) for n, r in reads.items() if n not in full and r.body != data[n]]
    t.diag("%d reads answered 507 (the owner t3 has no room for its copy)" % len(full))
    t.check(not wrong, "every read through the gateway: the bytes, or 507 insufficient storage when the owner "
            "(t3) cannot store its copy", wrong[:3])
    t.check(not [n for n in full if n not in to_t3], "  507 only for objects owned by t3")
    rc, out = sh("mount", "-o", "remount,size=256m", SMALL)
    t.check(rc == 0, "the tmpfs grows to 256 MiB", out)

    def settled():
        d = reb()
        tg = d.get("targets", {})
        return d.get("state") == "done" and len(tg) == 3 and all(x.get("errors", 1) == 0 for x in tg.values())

    t.check(poll(settled, 150), "the rebalance completes once there is space: done, no errors", reb())
    on = {n: [x.name for x in (t1, t2, t3) if get(x.url, "/v1/objects/reb/" + n, headers=INTRA).status == 200]
          for n in data}
    t.check(all(on[n] == ["t3"] for n in to_t3) and all(len(on[n]) == 1 for n in data),
            "each object only on its owner (%d on t3)" % len(to_t3),
            {n: v for n, v in on.items() if len(v) != 1 or (n in to_t3) != (v == ["t3"])})
    wrong = [n for n, d in data.items() if follow("GET", g.url, "/v1/objects/reb/" + n)[1].body != d]
    t.check(not wrong, "  and reads back byte for byte", wrong[:3])

    t.eq(request("POST", g.url, "/v1/buckets/rep", '{"action":"create-bck"}', JSON).status, 200, "create rep")
    body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
    t.eq(request("PATCH", g.url, "/v1/buckets/rep", body, JSON).status, 200, "set-bprops mirror.copies=2")
    bmd_v = get(g.url, "/v1/daemon?what=bmd").json()["version"]
    t.check(poll(lambda: all(get(x.url, "/v1/daemon?what=bmd").json()["version"] >= bmd_v for x in (t1, t2, t3)),
                 10), "every target has the BMD")

    # --- 2. S3 onto the full disk --------------------------------------------------------
    import boto3
    import botocore.config
    import botocore.exceptions
    st = os.statvfs(SMALL)
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    rc, out = sh("mount", "-o", "remount,size=%dk" % ((used + 6 * MiB) // 1024), SMALL)
    t.check(rc == 0, "the tmpfs shrinks to what it holds plus 6 MiB", out)
    s3 = boto3.client("s3", endpoint_url=g.url, aws_access_key_id=AK, aws_secret_access_key=SK, region_name=REGION,
                      config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    keys = [k for k in ("s3/%03d" % i for i in range(500)) if hrwlib.top("reb/" + k, ids3, 1) == [t3.id]][:10]
    stored, err = {}, None
    for k in keys:
        body = os.urandom(2 * MiB)
        try:
            s3.put_object(Bucket="reb", Key=k, Body=body)
            stored[k] = body
        except botocore.exceptions.ClientError as e:
            err = (k, e.response.get("Error", {}).get("Code"), e.response.get("ResponseMetadata", {})
                   .get("HTTPStatusCode"))
            break
    t.diag("%d S3 PUTs of 2 MiB stored before %s" % (len(stored), err))
    t.check(err and err[1:] == ("InsufficientStorage", 507), "S3 PUT onto the full disk: 507 InsufficientStorage",
            err)
    t.check(len(stored) >= 1, "  after at least one fitted")
    if err:
        try:
            s3.head_object(Bucket="reb", Key=err[0])
            t.fail("  the failed key is absent")
        except botocore.exceptions.ClientError as e:
            t.eq(e.response["Error"]["Code"], "404", "  the failed key is absent (HEAD 404)")
    wrong = [k for k, b in stored.items() if s3.get_object(Bucket="reb", Key=k)["Body"].read() != b]
    t.check(not wrong, "  the stored ones read back", wrong)
    tmps = [p for p in glob.glob(os.path.join(SMALL, "tmp", "**"), recursive=True) if os.path.isfile(p)]
    t.check(not tmps, "  no temp file left on the tmpfs", tmps[:3])
    # the last bytes taken by a file: empty objects need only their records
    # (LevelDB), whose write then fails for want of space
    # (the tmpfs may be so full already that the filler cannot be created)
    try:
        with open(os.path.join(SMALL, "filler"), "wb") as f:
            for _ in range(64):
                f.write(b"\0" * MiB)
                f.flush()
    except OSError:
        pass
    err = None
    for k in [k for k in ("e/%03d" % i for i in range(3000)) if hrwlib.top("reb/" + k, ids3, 1) == [t3.id]][:300]:
        try:
            s3.put_object(Bucket="reb", Key=k, Body=b"")
        except botocore.exceptions.ClientError as e:
            err = (e.response.get("Error", {}).get("Code"), e.response.get("ResponseMetadata", {})
                   .get("HTTPStatusCode"), e.response.get("Error", {}).get("Message"))
            break
    t.check(err and err[:2] == ("InsufficientStorage", 507),
            "empty S3 PUTs once no byte is left: 507 InsufficientStorage (the record's write)", err)
    os.unlink(os.path.join(SMALL, "filler"))

    # --- 3. a replica holder with a full disk -------------------------------------------------
    rnames = ["r%03d" % i for i in range(300)]
    via_t3 = [n for n in rnames if hrwlib.top("rep/" + n, ids3, 2)[1] == t3.id][:5]
    no_t3 = [n for n in rnames if t3.id not in hrwlib.top("rep/" + n, ids3, 2)][:5]
    big = os.urandom(8 * MiB)
    res = {n: follow("PUT", g.url, "/v1/objects/rep/" + n, big)[1] for n in via_t3}
    bad = [(n, r.status, r.body[:300]) for n, r in res.items()
           if r.status != 503 or "quorum" not in r.body.decode(errors="replace")
           or "insufficient storage" not in r.body.decode(errors="replace")]
    t.check(via_t3 and not bad, "PUT whose second holder (t3) has no space: 503 naming the quorum and the "
            "holder's insufficient storage (%d)" % len(via_t3), bad[:2])
    left = [(n, x.name) for n in via_t3 for x in (t1, t2, t3)
            if get(x.url, "/v1/objects/rep/" + n, headers=INTRA).status != 404]
    t.check(not left, "  no target keeps a copy", left[:3])
    small = os.urandom(4096)
    bad = [n for n in no_t3 if follow("PUT", g.url, "/v1/objects/rep/" + n, small)[1].status != 200 or
           [get(x.url, "/v1/objects/rep/" + n, headers=INTRA).body == small for x in (t1, t2)] != [True, True]]
    t.check(no_t3 and not bad, "PUTs whose holders are t1 and t2: 200, both copies", bad[:3])
finally:
    clulib.stop_all()
    for _ in range(50):
        if not mounted() or sh("umount", SMALL)[0] == 0:
            break
        time.sleep(0.2)
    t.check(not mounted(), "the tmpfs is unmounted")
t.finish()
