"""test_s3_conditional.py - conditional writes (If-Match / If-None-Match on
PutObject and CompleteMultipartUpload), checked on the owner target at
the commit, and reads of one part of a multipart object (?partNumber).
1 gateway + 3 targets on loopback ports, a copies=2 bucket, stopped by
PID.

Checks:
 1. PutObject If-None-Match: * creates a missing key (200) and is refused
    on an existing one (412 PreconditionFailed, the object unchanged on
    both copies); If-Match with the ETag (quoted or not, or in a list)
    writes, with another ETag 412, on a missing key 404 NoSuchKey;
    If-None-Match with the current ETag 412, with another one 200 (as
    HTTP has it); an empty If-Match 400.
 2. The race: 10 rounds of two PutObjects with If-None-Match: * of
    different 256 KiB bodies on a new key, sent at once through the
    gateway: each round exactly one answers 200 and the other 412, and
    both copies hold the winner's bytes.
 2b. The same checks in an erasure-coded bucket that keeps slices only
    (the owner has no whole copy: its slices' metadata is checked).
 2c. A bucket in front of a remote bucket (another aisd): conditional
    writes answer 501 (the object may be at the remote only), nothing
    written there.
 3. CompleteMultipartUpload If-None-Match: * on an existing key: 412, the
    upload stays and completes without the condition; If-Match with the
    current ETag: 200; with another: 412.
 4. GetObject / HeadObject ?partNumber of a 3-part upload (5 MiB, 5 MiB,
    1 MiB, the middle part uploaded twice): each part byte for byte with
    its Content-Length, a 206 with Content-Range, x-amz-mp-parts-count 3
    and the object's ETag; partNumber 4: 416 InvalidPartNumber; 0 or
    10001: 400 InvalidArgument; with a Range: 400. A plain object's part
    1 is the whole object, part 2 416. An upload completed with parts 2,
    3 and 7: those numbers read their parts, 1, 4 and 8 are 416. A copy
    of a multipart object is one part. The aws
    CLI get-object
    --part-number.
 5. No error-level line in any node's log.
"""
# timeout: 240
import hashlib
import http.client
import json
import os
import threading
import time
import urllib.parse

from itlib import T, q

import clulib
from clulib import request
from s3lib import AK, AWS_ENV, REGION, SK, boto3_client, cluster, run

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}

t = T()
EP = cluster(t, "s3cond", targets=3)
g = cluster.nodes[0]
targets = list(cluster.nodes[1:])
s3 = boto3_client(EP)
B = "cond"


def signed(method, path, body=b"", headers=None):
    """A SigV4-signed raw request through the gateway: (status, headers, body)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    url = EP + path
    r = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    S3SigV4Auth(Credentials(AK, SK), "s3", REGION).add_auth(r)
    p = r.prepare()
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    c.request(method, u.path + ("?" + u.query if u.query else ""), body=body, headers=dict(p.headers))
    resp = c.getresponse()
    out = (resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    c.close()
    return out


def put(key, body, **hdrs):
    st, h, b = signed("PUT", "/%s/%s" % (B, q(key)), body, hdrs)
    return st, b


def copies(key):
    out = []
    for tg in targets:
        r = request("GET", tg.url, "/v1/objects/%s/%s" % (B, q(key)), headers=INTRA)
        if r.status == 200:
            out.append(r.body)
    return out


s3.create_bucket(Bucket=B)
body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(request("PATCH", g.url, "/v1/buckets/" + B, body, JSON).status, 200, "set-bprops mirror.copies=2")
time.sleep(0.5)

# 1. PutObject
st, b = put("k", b"first", **{"If-None-Match": "*"})
t.eq(st, 200, "PUT If-None-Match: * of a missing key: 200")
st, b = put("k", b"second", **{"If-None-Match": "*"})
t.check(st == 412 and b"PreconditionFailed" in b, "PUT If-None-Match: * of an existing key: 412 PreconditionFailed",
        (st, b[:200]))
t.eq(copies("k"), [b"first", b"first"], "the object is unchanged on both copies")
etag = s3.head_object(Bucket=B, Key="k")["ETag"]
st, b = put("k", b"third", **{"If-Match": etag})
t.eq(st, 200, "PUT If-Match with the current ETag (quoted): 200")
etag = s3.head_object(Bucket=B, Key="k")["ETag"]
st, b = put("k", b"fourth", **{"If-Match": etag.strip('"')})
t.eq(st, 200, "PUT If-Match with the current ETag unquoted: 200")
etag = s3.head_object(Bucket=B, Key="k")["ETag"]
st, b = put("k", b"fifth", **{"If-Match": '"0123", %s' % etag})
t.eq(st, 200, "PUT If-Match with a list naming the current ETag: 200")
st, b = put("k", b"sixth", **{"If-Match": '"00000000000000000000000000000000"'})
t.check(st == 412 and b"PreconditionFailed" in b, "PUT If-Match with another ETag: 412", (st, b[:200]))
t.eq(copies("k"), [b"fifth", b"fifth"], "the object is the last acknowledged write on both copies")
st, b = put("missing", b"x", **{"If-Match": etag})
t.check(st == 404 and b"NoSuchKey" in b, "PUT If-Match of a missing key: 404 NoSuchKey", (st, b[:200]))
t.eq(copies("missing"), [], "and nothing was stored")
etag = s3.head_object(Bucket=B, Key="k")["ETag"]
st, b = put("k", b"x", **{"If-None-Match": etag})
t.check(st == 412 and b"PreconditionFailed" in b, "PUT If-None-Match with the current ETag: 412", (st, b[:200]))
st, b = put("k", b"seventh", **{"If-None-Match": '"0123"'})
t.eq(st, 200, "PUT If-None-Match with another ETag: 200")
t.eq(copies("k"), [b"seventh", b"seventh"], "the object is that write's bytes on both copies")
st, b = put("k", b"x", **{"If-Match": ""})
t.check(st == 400 and b"InvalidArgument" in b, "PUT with an empty If-Match: 400 InvalidArgument", (st, b[:200]))
# 2. the race
ROUNDS = 10
wrong = []
for rnd in range(ROUNDS):
    key = "race/%d" % rnd
    bodies = [os.urandom(256 << 10), os.urandom(256 << 10)]
    res = [None, None]
    bar = threading.Barrier(2, timeout=30)

    def go(i):
        bar.wait()
        res[i] = put(key, bodies[i], **{"If-None-Match": "*"})[0]

    ths = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    [x.start() for x in ths]
    [x.join(60) for x in ths]
    if sorted(res) != [200, 412]:
        wrong.append("round %d: %s" % (rnd, res))
        continue
    win = bodies[res.index(200)]
    if copies(key) != [win, win]:
        wrong.append("round %d: the copies do not hold the winner's bytes" % rnd)
t.check(not wrong, "%d rounds of two If-None-Match: * PUTs at once: exactly one 200 and one 412 each, both copies "
        "the winner's bytes" % ROUNDS, wrong)

# 2b. an erasure-coded bucket that keeps slices only: the owner has no whole copy to look at
clulib.create_ec_bucket(g, targets, "condec", 1, 1, 1024, whole_copy=False)
first = os.urandom(64 << 10)
st, h, b = signed("PUT", "/condec/e", first, {"If-None-Match": "*"})
t.eq(st, 200, "EC (slices only): PUT If-None-Match: * of a missing key: 200")
st, h, b = signed("PUT", "/condec/e", os.urandom(64 << 10), {"If-None-Match": "*"})
t.check(st == 412, "EC (slices only): PUT If-None-Match: * of an existing key: 412", (st, b[:200]))
t.eq(s3.get_object(Bucket="condec", Key="e")["Body"].read(), first, "the first write's bytes stay")
ec_etag = s3.head_object(Bucket="condec", Key="e")["ETag"]
st, h, b = signed("PUT", "/condec/e", b"y" * 4096, {"If-Match": ec_etag})
t.eq(st, 200, "EC (slices only): PUT If-Match with its ETag: 200")

# 2c. a bucket in front of a remote bucket (the runner's standalone target): the object may be at the remote
# only, where the owner cannot check it: refused
RU = os.environ["AISD_URL"]
t.eq(request("POST", RU, "/v1/buckets/far", json.dumps({"action": "create-bck"}), JSON).status, 200,
     "the remote's bucket far")
t.eq(request("PUT", RU, "/v1/objects/far/k", b"remote bytes").status, 200, "far/k at the remote")
r = request("PUT", g.url, "/v1/remotes/r", json.dumps({"kind": "ais", "url": RU}), JSON)
t.check(r.status == 200, "remote r attached", r.body[:200])
r = request("POST", g.url, "/v1/buckets/near", json.dumps({"action": "create-bck", "value": {
    "backend": {"provider": "ais", "remote": "r", "bucket": "far"}}}), JSON)
t.check(r.status == 200, "bucket near in front of ais://@r/far", r.body[:200])
for h in ({"If-None-Match": "*"}, {"If-Match": '"0123"'}):
    st, _, b = signed("PUT", "/near/k", b"local bytes", h)
    t.check(st == 501 and b"NotImplemented" in b, "PUT %s to a bucket in front of a remote: 501" % list(h)[0],
            (st, b[:200]))
t.eq(request("GET", RU, "/v1/objects/far/k").body, b"remote bytes", "the remote's object is unchanged")

# 3. CompleteMultipartUpload
def mpu(key, data):
    u = s3.create_multipart_upload(Bucket=B, Key=key)["UploadId"]
    e = s3.upload_part(Bucket=B, Key=key, UploadId=u, PartNumber=1, Body=data)["ETag"]
    return u, ("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
               "</CompleteMultipartUpload>" % e).encode()


s3.put_object(Bucket=B, Key="m", Body=b"old")
up, doc = mpu("m", b"new via mpu")
st, h, b = signed("POST", "/%s/m?uploadId=%s" % (B, up), doc, {"If-None-Match": "*"})
t.check(st == 412 and b"PreconditionFailed" in b, "Complete If-None-Match: * on an existing key: 412", (st, b[:200]))
t.eq(copies("m"), [b"old", b"old"], "the object is unchanged")
parts = s3.list_parts(Bucket=B, Key="m", UploadId=up).get("Parts", [])
t.eq(len(parts), 1, "the upload and its part stay")
st, h, b = signed("POST", "/%s/m?uploadId=%s" % (B, up), doc)
t.eq(st, 200, "the same upload completes without the condition")
t.eq(copies("m"), [b"new via mpu", b"new via mpu"], "and the object is its bytes")
cur = s3.head_object(Bucket=B, Key="m")["ETag"]
up, doc = mpu("m", b"again")
st, h, b = signed("POST", "/%s/m?uploadId=%s" % (B, up), doc, {"If-Match": '"ffffffffffffffffffffffffffffffff-1"'})
t.check(st == 412, "Complete If-Match with another ETag: 412", (st, b[:200]))
st, h, b = signed("POST", "/%s/m?uploadId=%s" % (B, up), doc, {"If-Match": cur})
t.eq(st, 200, "Complete If-Match with the current ETag: 200")

# 4. partNumber
sizes = [5 << 20, 5 << 20, 1 << 20]
data = [os.urandom(n) for n in sizes]
u = s3.create_multipart_upload(Bucket=B, Key="parts")["UploadId"]
pl = []
for i, d in enumerate(data):
    if i == 1:  # uploaded twice: the second one counts
        s3.upload_part(Bucket=B, Key="parts", UploadId=u, PartNumber=2, Body=os.urandom(sizes[1]))
    pl.append({"PartNumber": i + 1, "ETag": s3.upload_part(Bucket=B, Key="parts", UploadId=u, PartNumber=i + 1,
                                                            Body=d)["ETag"]})
etag = s3.complete_multipart_upload(Bucket=B, Key="parts", UploadId=u, MultipartUpload={"Parts": pl})["ETag"]
off = 0
for i, d in enumerate(data):
    r = s3.get_object(Bucket=B, Key="parts", PartNumber=i + 1)
    got = r["Body"].read()
    hd = r["ResponseMetadata"]["HTTPHeaders"]
    t.check(got == d and r["ContentLength"] == len(d) and r.get("PartsCount") == 3 and r["ETag"] == etag and
            r["ResponseMetadata"]["HTTPStatusCode"] == 206 and
            hd.get("content-range") == "bytes %d-%d/%d" % (off, off + len(d) - 1, sum(sizes)),
            "GET partNumber=%d: its %d bytes, 206 with its Content-Range, PartsCount 3, the object's ETag" %
            (i + 1, len(d)), {k: hd.get(k) for k in ("content-range", "content-length", "x-amz-mp-parts-count")})
    h = s3.head_object(Bucket=B, Key="parts", PartNumber=i + 1)
    t.check(h["ContentLength"] == len(d) and h.get("PartsCount") == 3 and h["ETag"] == etag,
            "HEAD partNumber=%d: Content-Length %d, PartsCount 3" % (i + 1, len(d)))
    off += len(d)
st, h, b = signed("GET", "/%s/parts?partNumber=4" % B)
t.check(st == 416 and b"InvalidPartNumber" in b, "partNumber=4 of 3 parts: 416 InvalidPartNumber", (st, b[:200]))
for bad in ("0", "10001", "x"):
    st, h, b = signed("GET", "/%s/parts?partNumber=%s" % (B, bad))
    t.check(st == 400 and b"InvalidArgument" in b, "partNumber=%s: 400 InvalidArgument" % bad, (st, b[:200]))
st, h, b = signed("GET", "/%s/parts?partNumber=1" % B, headers={"Range": "bytes=0-9"})
t.check(st == 400, "partNumber with a Range: 400", (st, b[:200]))
s3.copy_object(Bucket=B, Key="parts-copy", CopySource={"Bucket": B, "Key": "parts"})
r = s3.get_object(Bucket=B, Key="parts-copy", PartNumber=1)
t.check(r["Body"].read() == b"".join(data) and "PartsCount" not in r,
        "a copy of the multipart object is one part: part 1 is all of it, no PartsCount")
# parts numbered with gaps (2, 3, 7): each part by its own number
u = s3.create_multipart_upload(Bucket=B, Key="sparse")["UploadId"]
sp = {2: os.urandom(5 << 20), 3: os.urandom(5 << 20), 7: b"tail part"}
pl = [{"PartNumber": k, "ETag": s3.upload_part(Bucket=B, Key="sparse", UploadId=u, PartNumber=k, Body=d)["ETag"]}
      for k, d in sp.items()]
s3.complete_multipart_upload(Bucket=B, Key="sparse", UploadId=u, MultipartUpload={"Parts": pl})
got = {k: s3.get_object(Bucket=B, Key="sparse", PartNumber=k)["Body"].read() for k in sp}
t.check(got == sp, "parts 2, 3 and 7 of an upload completed with those numbers: each its bytes")
miss = [k for k in (1, 4, 8) if signed("GET", "/%s/sparse?partNumber=%d" % (B, k))[0] != 416]
t.eq(miss, [], "parts 1, 4 and 8 of it: 416 InvalidPartNumber")
s3.put_object(Bucket=B, Key="plain", Body=b"plain body")
r = s3.get_object(Bucket=B, Key="plain", PartNumber=1)
t.eq(r["Body"].read(), b"plain body", "a plain object's part 1 is the whole object")
st, h, b = signed("GET", "/%s/plain?partNumber=2" % B)
t.check(st == 416 and b"InvalidPartNumber" in b, "a plain object's part 2: 416 InvalidPartNumber", (st, b[:200]))
out_file = os.path.join(os.environ["TMPDIR"], "part2")
rc, out = run(["/usr/bin/aws", "--endpoint-url", EP, "s3api", "get-object", "--bucket", B, "--key", "parts",
               "--part-number", "2", out_file], env=dict(AWS_ENV))
ok = rc == 0 and os.path.exists(out_file) and \
    hashlib.md5(open(out_file, "rb").read()).digest() == hashlib.md5(data[1]).digest()
t.check(ok and json.loads(out).get("PartsCount") == 3, "aws s3api get-object --part-number 2: part 2's bytes, "
        "PartsCount 3", out[-300:])

clulib.check_logs(cluster.nodes)
t.finish()
