"""test_s3_etag_native.py - objects written through the native API answer
S3 with an MD5 ETag that S3 tools verify.

On a 1-gateway 3-target cluster with a copies=2 bucket: objects written by
a native PUT (0 B .. 3 MiB, with and without custom metadata), by `aisctl
put` and by the copy-bck job (`aisctl bucket cp`) answer S3 HeadObject,
GetObject and ListObjects(V2) with the MD5 of their bytes as ETag; both
copies of each carry it (their custom metadata, read as another target
would); s3cmd get verifies them (no "MD5 signatures do not match") and
rclone check finds every hash equal (no "hashes could not be checked").
An S3 PUT keeps its ETag (the MD5 the S3 door computed) and a multipart
upload its "md5-N" one. No node logs an error.
"""
# timeout: 240
import hashlib
import json
import os
import subprocess
import tempfile
import time

from itlib import T, q
from clulib import follow, get, request
from s3lib import AK, REGION, SK, boto3_client, cluster, error_lines, make_file, run

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}
CTL = os.environ["AISCTL"]

t = T()
EP = cluster(t, "s3etag")
g = cluster.nodes[0]
targets = list(cluster.nodes[1:])
s3 = boto3_client(EP)
WORK = tempfile.mkdtemp(prefix="s3etag-", dir=os.environ.get("TMPDIR"))
B, B2 = "nat", "natcopy"


def md5(b):
    return hashlib.md5(b).hexdigest()


def ctl(*args, timeout=60):
    cp = subprocess.run([CTL, "-e", g.url] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=timeout)
    return cp.returncode, cp.stdout.decode() + cp.stderr.decode()


s3.create_bucket(Bucket=B)
s3.create_bucket(Bucket=B2)
body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(request("PATCH", g.url, "/v1/buckets/" + B, body, JSON).status, 200, "set-bprops mirror.copies=2")
time.sleep(0.5)

# --- native writes ------------------------------------------------------------------

want = {}
for i, size in enumerate([0, 1, 10 << 10, 65537, 3 << 20]):
    data = os.urandom(size)
    key = "native/%d" % i
    st = follow("PUT", g.url, "/v1/objects/%s/%s" % (B, q(key)), data)[1].status
    t.eq(st, 200, "native PUT of %d bytes" % size)
    want[key] = data
data = os.urandom(5000)
hdr = {"Ais-Custom-Md": "color=blue,size=large"}
t.eq(follow("PUT", g.url, "/v1/objects/%s/%s" % (B, q("native/custom")), data, hdr)[1].status, 200,
     "native PUT with custom metadata")
want["native/custom"] = data
# with a declared checksum of another type than the bucket's
data = os.urandom(7000)
hdr = {"Ais-Checksum-Type": "sha256", "Ais-Checksum-Value": hashlib.sha256(data).hexdigest()}
t.eq(follow("PUT", g.url, "/v1/objects/%s/%s" % (B, q("native/sha")), data, hdr)[1].status, 200,
     "native PUT with an sha256 checksum")
want["native/sha"] = data
f = make_file(os.path.join(WORK, "ctlput"), 2 << 20, seed=3)
rc, out = ctl("put", f, B + "/ctl/put")
t.check(rc == 0, "aisctl put", out)
want["ctl/put"] = open(f, "rb").read()
# S3 writes keep theirs
data = os.urandom(4096)
s3.put_object(Bucket=B, Key="s3/plain", Body=data)
want["s3/plain"] = data
big = make_file(os.path.join(WORK, "mpu"), 11 << 20, seed=5)
import boto3.s3.transfer
cfg = boto3.s3.transfer.TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20)
s3.upload_file(big, B, "s3/multi", Config=cfg)
want["s3/multi"] = open(big, "rb").read()


def etag_want(key):
    if key == "s3/multi":
        parts = [want[key][i:i + (5 << 20)] for i in range(0, len(want[key]), 5 << 20)]
        return '"%s-%d"' % (hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest(), len(parts))
    return '"%s"' % md5(want[key])


# --- S3 HEAD, GET, listings -------------------------------------------------------------

bad = []
for key in sorted(want):
    h = s3.head_object(Bucket=B, Key=key)
    o = s3.get_object(Bucket=B, Key=key)
    got = o["Body"].read()
    if h["ETag"] != etag_want(key) or o["ETag"] != etag_want(key) or got != want[key]:
        bad.append((key, h["ETag"], o["ETag"], etag_want(key), got == want[key]))
t.check(not bad, "S3 HEAD and GET: every object's ETag is its MD5 (multipart: md5-N), bytes equal", bad)
for v in (1, 2):
    r = s3.list_objects(Bucket=B) if v == 1 else s3.list_objects_v2(Bucket=B)
    got = {c["Key"]: c["ETag"] for c in r.get("Contents", [])}
    t.eq(got, {k: etag_want(k) for k in want}, "ListObjects%s: the MD5 ETags" % ("V2" if v == 2 else ""))

# --- every copy carries it --------------------------------------------------------------

bad = []
for key in sorted(k for k in want if k != "s3/multi"):
    held = 0
    for tg in targets:
        r = get(tg.url, "/v1/objects/%s/%s" % (B, q(key)), headers=INTRA)
        if r.status != 200:
            continue
        held += 1
        if "s3.etag=" + md5(want[key]) not in (r.h("ais-custom-md") or ""):
            bad.append((key, tg.name, r.h("ais-custom-md")))
    if held != 2:
        bad.append((key, "copies", held))
t.check(not bad, "both copies of every object carry the MD5 ETag in their metadata", bad)
r = follow("HEAD", g.url, "/v1/objects/%s/%s" % (B, q("native/custom")))[1]
t.check("color=blue" in (r.h("ais-custom-md") or "") and "size=large" in (r.h("ais-custom-md") or ""),
        "a native object's own custom metadata stays", r.h("ais-custom-md"))

# --- copy-bck -------------------------------------------------------------------------

rc, out = ctl("bucket", "cp", B, B2)
words = out.split()
rid = words[words.index("job") + 1] if rc == 0 and "job" in words else "none"
rc, out = ctl("job", "wait", rid, "--timeout-s", "60", timeout=90)
t.check(rc == 0, "aisctl bucket cp %s %s: done" % (B, B2), out)
got = {c["Key"]: c["ETag"] for c in s3.list_objects_v2(Bucket=B2).get("Contents", [])}
t.eq({k: v for k, v in got.items() if k.startswith("native/")},
     {k: etag_want(k) for k in want if k.startswith("native/")},
     "objects copied by copy-bck: MD5 ETags in the listing")

# --- s3cmd and rclone verify them ---------------------------------------------------------

host = EP.split("//")[1]
s3cfg = os.path.join(WORK, "s3cfg")
with open(s3cfg, "w") as fh:
    fh.write("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\nhost_bucket = %s\n"
             "use_https = False\nsignature_v2 = False\nbucket_location = %s\n" % (AK, SK, host, host, REGION))
d = tempfile.mkdtemp(dir=WORK)
bad = []
for key in sorted(k for k in want if not k.startswith("s3/")):
    dst = os.path.join(d, key.replace("/", "_"))
    rc, out = run(["s3cmd", "-c", s3cfg, "--no-progress", "get", "s3://%s/%s" % (B, key), dst], timeout=60)
    if rc != 0 or "MD5" in out or "do not match" in out or open(dst, "rb").read() != want[key]:
        bad.append((key, rc, out[-300:]))
t.check(not bad, "s3cmd get verifies every natively written object (no MD5 warning), bytes equal", bad)

local = os.path.join(WORK, "local")
for key in want:
    if key.startswith("native/") or key.startswith("ctl/"):
        p = os.path.join(local, key)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as fh:
            fh.write(want[key])
RENV = {"RCLONE_CONFIG_AIS_TYPE": "s3", "RCLONE_CONFIG_AIS_PROVIDER": "Other", "RCLONE_CONFIG_AIS_ENDPOINT": EP,
        "RCLONE_CONFIG_AIS_ACCESS_KEY_ID": AK, "RCLONE_CONFIG_AIS_SECRET_ACCESS_KEY": SK,
        "RCLONE_CONFIG_AIS_REGION": REGION, "RCLONE_CONFIG_AIS_FORCE_PATH_STYLE": "true",
        "RCLONE_CONFIG": os.path.join(WORK, "rclone.conf")}
for sub in ("native", "ctl"):
    rc, out = run(["env", "-u", "AWS_CA_BUNDLE", "rclone", "check", os.path.join(local, sub), "ais:%s/%s" % (B, sub)],
                  env=RENV, timeout=120)
    n = len(os.listdir(os.path.join(local, sub)))
    t.check(rc == 0 and "could not be checked" not in out and "%d matching files" % n in out,
            "rclone check %s/: every hash checked and equal (%d files)" % (sub, n), out[-600:])

t.eq(error_lines(), [], "no node logged an error")
t.finish()
