"""test_s3_repl.py - S3 and the native API are two doors to the same objects:
S3 writes into a mirrored bucket (mirror.copies=2) get their copies, S3
deletes remove every copy, S3 reads fetch a copy a holder lacks, listings
name each object once, and archive reads (archpath, archregx, .tgz/.zip
members) survive a rebalance and a dead holder. 1 gateway + 3 targets (a
4th joins later) on loopback ports, stopped by PID.

Checks:
 1. S3 PUT (plain sizes 0..3 MiB, aws-chunked with a trailer checksum,
    multipart, CopyObject) into a copies=2 bucket: every object is on
    exactly the two HRW holders (asked with Ais-Intra on every target),
    byte for byte.
 2. ListObjectsV2 (boto3 paginator, 7 keys a page) and `aws s3 ls` list
    each name exactly once.
 3. S3 DeleteObject removes both copies (native GET 404, no target has
    it); DeleteObjects sent straight to a target removes every key on
    every target (and their files on disk).
 4. kill -9 of each target in turn (once the map drops it): every object
    still reads through S3 and native, byte for byte, and every shard
    member through archpath, archregx and the .tgz/.zip member reads; the
    target restarts and rejoins.
 5. A 4th target joins under an S3 GET loop and an archpath loop: zero
    failed reads; listings during the rebalance name each object once.
 6. Hop guard: a request already routed on twice by targets that this
    target would route again gets 508 with a message (native and S3), and
    a target's redirect counts its hop (ais_hop=N+1).
 7. No error-level line in any node's log.
"""
# timeout: 300
import glob
import http.client
import io
import json
import os
import tarfile
import threading
import time
import urllib.parse
import zipfile

from itlib import T, q

import clulib
from clulib import Node, follow, get, poll, request, smap_ids
from s3lib import AK, REGION, SK, boto3_client, chunked_put, cluster, make_file, run

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}

t = T()
EP = cluster(t, "s3repl", targets=3,
             args=["--set", "cluster.grace=1s", "--set", "rebalance.workers=2"])
g = cluster.nodes[0]
targets = list(cluster.nodes[1:])
s3 = boto3_client(EP)
B = "mirrored"


def has(tg, bck, key):
    return get(tg.url, "/v1/objects/%s/%s" % (bck, q(key)), headers=INTRA).status == 200


def holders(bck, key):
    return [tg.name for tg in targets if has(tg, bck, key)]


def s3_get(key, bck=B):
    return s3.get_object(Bucket=bck, Key=key)["Body"].read()


def native_get(key, bck=B, query=""):
    return follow("GET", g.url, "/v1/objects/%s/%s%s" % (bck, q(key), query))[1]


def s3_request(base, method, path, headers=None):
    """A SigV4-signed request without a body; returns (status, body)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    url = base + path
    r = AWSRequest(method=method, url=url, headers=dict(headers or {}))
    S3SigV4Auth(Credentials(AK, SK), "s3", REGION).add_auth(r)
    p = r.prepare()
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request(method, u.path + ("?" + u.query if u.query else ""), headers=dict(p.headers))
    resp = c.getresponse()
    out = (resp.status, resp.read())
    c.close()
    return out


# --- the bucket and its objects ------------------------------------------------------

s3.create_bucket(Bucket=B)
body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(request("PATCH", g.url, "/v1/buckets/" + B, body, JSON).status, 200, "set-bprops mirror.copies=2")
time.sleep(0.5)  # (the BMD reaches every target before the primary's answer; this covers slow ones)

want = {}
for i, size in enumerate([0, 1, 1000, 65536, 1 << 20, 3 << 20, 77, 4096, 12345, 200000, 1, 5]):
    data = os.urandom(size)
    key = "plain/%02d" % i
    s3.put_object(Bucket=B, Key=key, Body=data)
    want[key] = data
for i in range(2):
    data = os.urandom(100000 + i)
    key = "chunked/%d" % i
    st, resp = chunked_put(EP, B, key, data)
    t.eq(st, 200, "aws-chunked PUT of %s through the gateway" % key)
    want[key] = data
big = os.path.join(os.environ["TMPDIR"], "mpu")
make_file(big, 12 << 20, seed=7)
import boto3.s3.transfer
cfg = boto3.s3.transfer.TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20)
s3.upload_file(big, B, "multi/12m", Config=cfg)
want["multi/12m"] = open(big, "rb").read()
for i, src in enumerate(["plain/04", "multi/12m"]):
    s3.copy_object(Bucket=B, Key="copy/%d" % i, CopySource={"Bucket": B, "Key": src})
    want["copy/%d" % i] = want[src]

# shards for the archive reads
members = {"a/%03d.cls" % i: b"%d" % i * (i + 1) for i in range(20)}
tb = io.BytesIO()
with tarfile.open(fileobj=tb, mode="w") as tf:
    for n, d in members.items():
        ti = tarfile.TarInfo(n)
        ti.size = len(d)
        tf.addfile(ti, io.BytesIO(d))
tgz = io.BytesIO()
with tarfile.open(fileobj=tgz, mode="w:gz") as tf:
    for n, d in members.items():
        ti = tarfile.TarInfo(n)
        ti.size = len(d)
        tf.addfile(ti, io.BytesIO(d))
zb = io.BytesIO()
with zipfile.ZipFile(zb, "w") as zf:
    for n, d in members.items():
        zf.writestr(n, d)
shards = {"shards/s%d.tar" % i: tb.getvalue() for i in range(4)}
shards.update({"shards/z%d.tgz" % i: tgz.getvalue() for i in range(2)})
shards.update({"shards/z%d.zip" % i: zb.getvalue() for i in range(2)})
for k, d in shards.items():
    s3.put_object(Bucket=B, Key=k, Body=d)
    want[k] = d

# 1. copies
bad = {k: h for k in want if len(h := holders(B, k)) != 2}
t.check(not bad, "every S3-written object (%d: plain, aws-chunked, multipart, copy) has 2 copies" % len(want), bad)
bad = ["%s on %s: %d bytes, want %d" % (k, tg.name, len(b), len(want[k])) for k in want for tg in targets
       if has(tg, B, k) and (b := get(tg.url, "/v1/objects/%s/%s" % (B, q(k)), headers=INTRA).body) != want[k]]
t.check(not bad, "every copy holds the acknowledged bytes", bad[:5])

# 2. listings
names = []
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=B, PaginationConfig={"PageSize": 7}):
    names += [o["Key"] for o in page.get("Contents", [])]
t.eq(names, sorted(want), "ListObjectsV2 (7 a page) lists each of the %d names once, in order" % len(want))
env = {"AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK, "AWS_DEFAULT_REGION": REGION}
rc, out = run(["/usr/bin/aws", "--endpoint-url", EP, "s3", "ls", "--recursive", "s3://" + B], env=env)
lines = [l for l in out.splitlines() if l.strip()]
t.check(rc == 0 and len(lines) == len(want), "aws s3 ls --recursive: %d lines for %d objects" % (len(lines), len(want)),
        out[-500:])

# 3. deletes
s3.put_object(Bucket=B, Key="gone/one", Body=b"old bytes")
t.eq(len(holders(B, "gone/one")), 2, "gone/one has 2 copies")
s3.delete_object(Bucket=B, Key="gone/one")
t.eq(native_get("gone/one").status, 404, "after an S3 DeleteObject a native GET answers 404")
t.eq(holders(B, "gone/one"), [], "and no target holds a copy")


def obj_files():
    return sum(len(glob.glob(os.path.join(tg.dir, "mp*", "obj", "*", "*"))) for tg in targets)


n0 = obj_files()
dk = ["del/%02d" % i for i in range(12)]
for k in dk:
    s3.put_object(Bucket=B, Key=k, Body=k.encode())
t.eq(obj_files() - n0, 24, "12 keys made 24 object files (2 copies each)")
direct = boto3_client(targets[0].url)
r = direct.delete_objects(Bucket=B, Delete={"Objects": [{"Key": k} for k in dk]})
t.eq(len(r.get("Deleted", [])), 12, "DeleteObjects sent straight to t1: 12 deleted")
left = {k: h for k in dk if (h := holders(B, k))}
t.check(not left, "no target holds any of the 12 keys", left)
t.eq(obj_files(), n0, "and their files are gone from every disk")

# 4. kill -9 of each target in turn


def all_readable(tag):
    bad = []
    for k, d in want.items():
        try:
            if s3_get(k) != d:
                bad.append("s3 " + k)
        except Exception as e:  # noqa: BLE001 - any failure is a failed read
            bad.append("s3 %s: %s" % (k, e))
        r = native_get(k)
        if r.status != 200 or r.body != d:
            bad.append("native %s: %d" % (k, r.status))
    t.check(not bad, "%s: all %d objects read byte for byte through S3 and native" % (tag, len(want)), bad[:5])


def arch_readable(tag):
    bad = []
    for k in shards:
        for m in ("a/003.cls", "a/017.cls"):
            r = native_get(k, query="?archpath=" + q(m))
            if r.status != 200 or r.body != members[m]:
                bad.append("%s?archpath=%s: %d" % (k, m, r.status))
        r = native_get(k, query="?archregx=" + q("a/01") + "&archmode=prefix")
        if r.status != 200:
            bad.append("%s?archregx: %d" % (k, r.status))
        else:
            try:
                got = {ti.name: tf.extractfile(ti).read() for tf in [tarfile.open(fileobj=io.BytesIO(r.body))]
                       for ti in tf.getmembers() if ti.isfile()}
                if got != {m: d for m, d in members.items() if m.startswith("a/01")}:
                    bad.append("%s?archregx: wrong members %s" % (k, sorted(got)[:3]))
            except tarfile.TarError as e:
                bad.append("%s?archregx: %s" % (k, e))
    t.check(not bad, "%s: every shard's members read (archpath, archregx; tar, tgz, zip)" % tag, bad[:5])


def ids():
    return smap_ids(g)


for victim in list(targets):
    victim.kill9()
    t.check(poll(lambda: victim.id not in (ids() or set()), 20), "%s killed: the map drops it" % victim.name)
    all_readable("%s down" % victim.name)
    arch_readable("%s down" % victim.name)
    t.check(victim.start(join=g.url), "%s restarts" % victim.name)
    t.check(poll(lambda: victim.id in (ids() or set()), 20), "%s rejoins" % victim.name)

# 5. a 4th target joins under S3 and archpath read loops
errors, reads = [], [0]
stop = threading.Event()


def reader(fn):
    try:
        while not stop.is_set():
            fn()
            reads[0] += 1
    except Exception as e:  # noqa: BLE001 - any exception fails the test
        errors.append(repr(e))


def s3_loop():
    for k, d in want.items():
        if stop.is_set():
            return
        try:
            got = s3_get(k)
        except Exception as e:  # noqa: BLE001
            errors.append("s3 %s: %r" % (k, e))
            continue
        if got != d:
            errors.append("s3 %s: wrong bytes" % k)


def arch_loop():
    for k in shards:
        r = native_get(k, query="?archpath=" + q("a/005.cls"))
        if r.status != 200 or r.body != members["a/005.cls"]:
            errors.append("%s?archpath: %d" % (k, r.status))


def list_loop():
    names = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=B, PaginationConfig={"PageSize": 7}):
        names += [o["Key"] for o in page.get("Contents", [])]
    if names != sorted(want):
        errors.append("listing during the rebalance: %d names, %d distinct" % (len(names), len(set(names))))


ths = [threading.Thread(target=reader, args=(f,)) for f in (s3_loop, arch_loop, list_loop)]
[x.start() for x in ths]
time.sleep(0.5)
t4 = Node("t4", "target")
t.check(t4.start(join=g.url), "t4 joins")
targets.append(t4)
cluster.nodes.append(t4)


def rebalanced():
    r = get(g.url, "/v1/cluster?what=rebalance", timeout=10)
    d = r.json() if r.status == 200 else None
    return isinstance(d, dict) and len(d.get("targets", {})) == 4 and all(
        v.get("state") in ("done", "idle") for v in d["targets"].values())


t.check(poll(lambda: len(ids() or ()) == 5, 20), "the map lists 5 nodes")
poll(rebalanced, 60)
time.sleep(1)
stop.set()
[x.join(60) for x in ths]
t.check(not any(x.is_alive() for x in ths), "the read loops stopped")
t.check(reads[0] > 3 and not errors, "reads during t4's join: %d loops, zero failures" % reads[0], errors[:5])
bad = {k: h for k in want if len(h := holders(B, k)) != 2}
t.check(not bad, "after the rebalance every object has 2 copies", dict(list(bad.items())[:5]))
# copies made by every path (replica, rebalance, fetch on read) carry the same metadata
bad = []
for k in want:
    mds = {request("HEAD", tg.url, "/v1/objects/%s/%s" % (B, q(k)), headers=INTRA).h("ais-custom-md")
           for tg in targets if has(tg, B, k)}
    if len(mds) != 1 or any(m is None or "\r" in m or "s3.etag=" not in m for m in mds):
        bad.append((k, mds))
t.check(not bad, "every copy of every object has the same S3 metadata (ETag), byte for byte", bad[:3])

# 6. the hop guard
key = next(k for k in want if not has(targets[0], B, k))
r = get(targets[0].url, "/v1/objects/%s/%s?ais_hop=2" % (B, q(key)))
t.check(r.status == 508 and b"routed 2 times" in r.body,
        "native GET routed twice by targets, to a non-holder: 508 with a message", (r.status, r.body[:200]))
r = get(targets[0].url, "/v1/objects/%s/%s" % (B, q(key)))
loc = r.h("location") or ""
t.check(r.status == 307 and "ais_hop=1" in loc, "a target's redirect counts the hop (ais_hop=1)", (r.status, loc))
r = get(targets[0].url, "/v1/objects/%s/%s?ais_hop=1" % (B, q(key)))
t.check(r.status == 307 and "ais_hop=2" in (r.h("location") or ""), "a redirect of a redirect: ais_hop=2",
        r.h("location"))
st, b = s3_request(targets[0].url, "GET", "/%s/%s" % (B, urllib.parse.quote(key)), {"Ais-Hops": "2"})
t.check(st == 508 and b"LoopDetected" in b, "S3 GET forwarded twice to a non-holder: 508 LoopDetected", (st, b[:300]))
st, b = s3_request(targets[0].url, "GET", "/%s/%s" % (B, urllib.parse.quote(key)))
t.check(st == 200 and b == want[key], "the same S3 GET without hops is forwarded to a holder: 200", st)

clulib.check_logs(cluster.nodes)
t.finish()
