"""test_ec_slices.py - an erasure-coded bucket that keeps no whole copy
(ec.whole_copy=false, 4 data + 2 parity slices) on 1 gateway + 6 targets
started here on loopback ports (stopped by PID), with S3 on.

Checks: the props show whole_copy false, and changing it on a bucket that
holds objects is refused (409); objects of 0 B, 1 KiB (below the limit:
3 whole copies), 1 MiB + 1000 B and 24 MiB PUT natively, 5 MiB with boto3
put_object, 12 MiB with a boto3 multipart upload: no whole copy of any
big one on any target, one slice on each of the 6, and the disk bytes of
a 24 MiB PUT are 1.5 times its size (not 2.5 as with the whole copy);
GET byte for byte natively and with boto3, HEAD (size, checksum), a Range
read natively and with boto3, the native listing and boto3's
list_objects_v2 (2 keys a page) name each object once with its size;
archpath reads a member of a tar shard kept as slices; a damaged data
slice on disk: the GET decodes from the others (byte for byte, the
damage logged) and the slice is rebuilt; a 1 GiB object PUT and read
back (sha256); a 7th target joins under a read loop: 0 failed reads,
then every object's slices on its 6 HRW targets of 7 and none elsewhere,
still no whole copy, the 1 GiB object read back again; kill -9 of 2
targets: every read after the map change byte for byte; 2 more kills (3
targets left): the right bytes or a clear 5xx/404, never wrong bytes;
DELETE leaves no slice.
"""
# timeout: 400
# log-allow: does not match its checksum
import glob
import hashlib
import io
import json
import os
import subprocess
import tarfile

from itlib import T, q

import clulib
import hrwlib
from clulib import follow, poll, request, slice_meta, smap_ids, whole_copy
from s3lib import boto3_client, cluster

JSON = {"Content-Type": "application/json"}
B = "sl"

t = T()
EP = cluster(t, "ecslices", targets=6, args=["--set", "cluster.grace=1500ms"])
g, targets = cluster.nodes[0], cluster.nodes[1:]
clulib.create_ec_bucket(g, targets, B, 4, 2, 65536, whole_copy=False)
props = json.loads(request("HEAD", g.url, "/v1/buckets/" + B).h("ais-bucket-props") or "{}")
t.eq(props.get("ec", {}).get("whole_copy"), False, "bucket props show ec.whole_copy false")




def disk_bytes():
    return sum(os.path.getsize(f) for x in targets for f in glob.glob(os.path.join(x.dir, "mp*", "obj", "*", "*")))


def owner_of(name, live):
    loc = request("HEAD", g.url, "/v1/objects/%s/%s" % (B, q(name))).h("location") or ""
    return next((x for x in live if loc.startswith(x.url + "/")), None)


# --- PUT: native, boto3, multipart ----------------------------------------------------------
tbuf = io.BytesIO()
members = {"s/%03d.jpg" % i: os.urandom(30000 + i) for i in range(12)}
with tarfile.open(fileobj=tbuf, mode="w") as tf:
    for n, d in members.items():
        ti = tarfile.TarInfo(n)
        ti.size = len(d)
        tf.addfile(ti, io.BytesIO(d))
data = {"zero": b"", "small": os.urandom(1024), "mid": os.urandom((1 << 20) + 1000),
        "big": os.urandom(24 << 20), "shard.tar": tbuf.getvalue()}
for n, d in data.items():
    t.eq(clulib.owner_put(g, targets, B, n, d), 200, "PUT %s (%d B)" % (n, len(d)))
r = request("PATCH", g.url, "/v1/buckets/" + B, json.dumps({"action": "set-bprops", "value": {
    "ec": {"whole_copy": True}}}), JSON)
t.check(r.status == 409, "ec.whole_copy changed on a bucket with objects: 409", (r.status, r.body[:200]))

s3 = boto3_client(EP)
data["s3obj"] = os.urandom(5 << 20)
s3.put_object(Bucket=B, Key="s3obj", Body=data["s3obj"])
import boto3.s3.transfer  # noqa: E402
data["mp"] = os.urandom(12 << 20)
s3.upload_fileobj(io.BytesIO(data["mp"]), B, "mp",
                  Config=boto3.s3.transfer.TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20))
BIG = ("mid", "big", "shard.tar", "s3obj", "mp")
for n in BIG:
    metas = [slice_meta(x, B, n) for x in targets]
    t.eq(sorted(int(m["i"]) for m in metas if m), list(range(6)), "%s: one slice on each of the 6 targets" % n)
    t.eq([x.name for x in targets if whole_copy(x, B, n)], [], "%s: no whole copy on any target" % n)
t.eq(sum(1 for x in targets if whole_copy(x, B, "small")), 3, "small (below the limit): 3 whole copies")

before = disk_bytes()
data["space"] = os.urandom(24 << 20)
t.eq(clulib.owner_put(g, targets, B, "space", data["space"]), 200, "PUT space (24 MiB)")
ratio = (disk_bytes() - before) / len(data["space"])
t.diag("disk bytes per byte stored: %.3f" % ratio)
t.check(1.49 < ratio < 1.52, "disk bytes of a 24 MiB object: 1.5 per byte (4+2 without a whole copy)", ratio)

# --- reads -----------------------------------------------------------------------------------
for n, d in data.items():
    r = follow("GET", g.url, "/v1/objects/%s/%s" % (B, q(n)))[1]
    t.check(r.status == 200 and r.body == d, "GET %s: byte for byte" % n, r.status)
    r = follow("HEAD", g.url, "/v1/objects/%s/%s" % (B, q(n)))[1]
    t.check(r.status == 200 and r.h("content-length") == str(len(d)) and r.h("ais-checksum-value"),
            "HEAD %s: size and checksum" % n, (r.status, r.h("content-length")))
for n in ("s3obj", "mp", "big"):
    t.check(s3.get_object(Bucket=B, Key=n)["Body"].read() == data[n], "boto3 get_object %s: byte for byte" % n)
r = follow("GET", g.url, "/v1/objects/%s/big" % B, headers={"Range": "bytes=5000000-5999999"})[1]
t.check(r.status == 206 and r.body == data["big"][5000000:6000000], "Range read of big: 206, the bytes")
got = s3.get_object(Bucket=B, Key="mp", Range="bytes=7000000-7100000")["Body"].read()
t.check(got == data["mp"][7000000:7100001], "boto3 ranged get_object of mp: the bytes")
lst = json.loads(request("GET", g.url, "/v1/buckets/" + B, '{"action":"list"}', JSON).body)
sizes = {e["name"]: e.get("size") for e in lst["entries"]}
t.eq(sorted(e["name"] for e in lst["entries"]), sorted(data), "native listing: each object once")
t.eq(sizes, {n: len(d) for n, d in data.items()}, "native listing: the objects' sizes, not the slices'")
keys = []
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=B, PaginationConfig={"PageSize": 2}):
    keys += [(o["Key"], o["Size"]) for o in page.get("Contents", [])]
t.eq(keys, sorted((n, len(d)) for n, d in data.items()), "boto3 list_objects_v2, 2 a page: each once, its size")
m = "s/007.jpg"
r = follow("GET", g.url, "/v1/objects/%s/shard.tar?archpath=%s" % (B, q(m)))[1]
t.check(r.status == 200 and r.body == members[m], "archpath of a shard kept as slices: the member", r.status)

# --- a damaged data slice ------------------------------------------------------------------------
slice_size = 4 * 65536 + 256  # (1 MiB + 1000) / 4 data slices, the last stripe's cells 256 B
victim = next(x for x in targets if (slice_meta(x, B, "mid") or {}).get("i") == "1")
files = [f for f in glob.glob(os.path.join(victim.dir, "mp*", "obj", "*", "*")) if os.path.getsize(f) == slice_size]
if t.check(len(files) == 1, "the file of data slice 1 of mid on %s found" % victim.name, files):
    with open(files[0], "r+b") as f:
        f.seek(1000)
        c = f.read(1)
        f.seek(1000)
        f.write(bytes([c[0] ^ 0xFF]))
r = follow("GET", g.url, "/v1/objects/%s/mid" % B)[1]
t.check(r.status == 200 and r.body == data["mid"], "GET mid: decoded from the good slices, byte for byte",
        (r.status, r.body[:200]))
t.check(poll(lambda: "does not match its checksum" in open(victim.log, errors="replace").read(), 5),
        "the damaged slice was detected and logged")
t.check(poll(lambda: sorted(int(m["i"]) for m in (slice_meta(x, B, "mid") for x in targets) if m) == list(range(6)), 30),
        "the damaged slice was rebuilt: indices 0..5 on the targets again")
t.eq([x.name for x in targets if whole_copy(x, B, "mid")], [], "  and no whole copy made")

# --- a 1 GiB object, then a 7th target joins under a read loop ------------------------------------
gib = os.path.join(os.environ["TMPDIR"], "gib")
with open(gib, "wb") as f:
    for _ in range(16):
        f.write(os.urandom(64 << 20))


def file_sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for blk in iter(lambda: f.read(8 << 20), b""):
            h.update(blk)
    return h.hexdigest()


GIB_SHA = file_sha(gib)
own = owner_of("gib", targets)
rc = subprocess.run(["curl", "-sf", "-o", "/dev/null", "-T", gib, own.url + "/v1/objects/%s/gib" % B],
                    timeout=300).returncode
t.check(rc == 0, "PUT of a 1 GiB object (curl -T to its owner)", rc)
os.remove(gib)


def gib_back(what):
    out = os.path.join(os.environ["TMPDIR"], "gib.out")
    rc = subprocess.run(["curl", "-sfL", "-o", out, g.url + "/v1/objects/%s/gib" % B], timeout=300).returncode
    t.check(rc == 0 and file_sha(out) == GIB_SHA, "GET of the 1 GiB object %s: every byte (sha256)" % what, rc)
    if os.path.exists(out):
        os.remove(out)


gib_back("from its slices")
t.check(all(not whole_copy(x, B, "gib") for x in targets), "  and no whole copy of it anywhere")

t7 = clulib.Node("t7", "target")
ids = []


def layout_errors():
    """Objects off their exact layout on 7 targets: a slice on each of
    their 6 HRW targets (indices 0..5), none elsewhere, no whole copy."""
    errs = []
    for n in BIG + ("space", "gib"):
        top = hrwlib.top(B + "/" + n, ids, 6)
        have = {x.id: m for x in targets for m in [slice_meta(x, B, n)] if m}
        if sorted(have) != sorted(top) or sorted(int(m["i"]) for m in have.values()) != list(range(6)):
            errs.append("%s: slices on %s, HRW %s" % (n, sorted(have), sorted(top)))
        if any(whole_copy(x, B, n) for x in targets):
            errs.append("%s: a whole copy" % n)
    return errs


def join_t7():
    t.check(t7.start(join=g.url), "a 7th target starts and joins under the read loop")
    targets.append(t7)
    ids[:] = [x.id for x in targets]
    last = [None]
    t.check(poll(lambda: not last.__setitem__(0, layout_errors()) and not last[0], 90),
            "after the join: every object's slices on its 6 HRW targets of 7, none elsewhere, no whole copy",
            (last[0] or [])[:3])


reads, rbad = clulib.read_loop_during(g, B, data, join_t7, 90)
t.check(reads > 0 and not rbad, "reads through the join and the move: %d, 0 failed or wrong" % reads, rbad[:3])
gib_back("after the move")
t.check(follow("DELETE", g.url, "/v1/objects/%s/gib" % B)[1].status == 200, "DELETE the 1 GiB object")

# --- two targets down, then two more ----------------------------------------------------------------
space_top = hrwlib.top(B + "/space", ids, 6)
dead = [x for x in targets if x.id in space_top[:2]]
live = [x for x in targets if x not in dead]
for x in dead:
    x.kill9()
t.check(poll(lambda: smap_ids(g) == {g.id} | {x.id for x in live}, 15), "the map drops the 2 killed targets")
fails, wrong = [], []
for rnd in range(2):
    for n, d in data.items():
        r = follow("GET", g.url, "/v1/objects/%s/%s" % (B, q(n)))[1]
        if r.status != 200:
            fails.append((n, r.status, r.body[:160]))
        elif r.body != d:
            wrong.append(n)
t.check(not fails, "2 targets lost: %d reads, 0 failed" % (2 * len(data)), fails[:3])
t.check(not wrong, "  every byte identical", wrong[:3])
# (the rebalance may have rebuilt the lost slices on the 5 left: 2 more
# kills leave 3 targets, fewer than the 4 slices any read needs)
more = live[:2]
for x in more:
    x.kill9()
live = live[2:]
t.check(poll(lambda: smap_ids(g) == {g.id} | {x.id for x in live}, 15), "the map drops 2 more (3 targets left)")
bad, refused = clulib.reads_right_or_refused(g, B, BIG + ("space",), data)
t.check(not bad, "4 targets lost: each read the right bytes or a clear 5xx/404 with a reason", bad[:3])
t.check(refused > 0, "reads refused: fewer than 4 slices left (%d of %d)" % (refused, len(BIG) + 1))
r = follow("DELETE", g.url, "/v1/objects/%s/big" % B)[1]
down = [x.id for x in dead + more]
t.check(r.status in (200, 404) or (r.status == 503 and any(i.encode() in r.body for i in down)),
        "DELETE big: done, or 503 naming a target down that may hold a slice (mirror.delete_quorum=all)", r)
t.check(all(slice_meta(x, B, "big") is None for x in live), "no slice of big left on the live targets")
t.finish()
