#!/usr/bin/env python3
"""test_authz_decide.py - one authorization decision over every resource a
request touches, end to end: a gateway and three targets with
auth.enabled, a cluster.secret, tokens from `aisctl auth token create`, two
S3 key pairs (an administrator by auth.grant, a user without grants) and
anonymous requests (curl-like raw HTTP, boto3).

1. A copy's source is decided with its destination, never let in by it:
   into a public-read-write bucket, an anonymous CopyObject and
   UploadPartCopy of a private object of another bucket are 403 (and
   nothing readable lands); a signed user without grants, whose write the
   bucket's ACL allows, is 403 the same; a missing source is 403, not
   NoSuchKey; a public source is copied (200); an administrator copies.
2. A bucket's backend is the cluster administrator's: a bucket admin's
   set-bprops of backend.provider/remote/bucket is 403 (also to detach
   it), validate_warm_get and sync stay theirs; an admin token changes it.
3. Reserved metadata: a native PUT with "s3.*" or "bk.*" keys in
   Ais-Custom-Md (s3.acl, s3.own, any case or spacing) is 400 and the
   object does not become anonymously readable; other custom keys are
   stored; S3 x-amz-meta-* naming them stay private.
   The cluster's own copies of S3 metadata (a copies=2 bucket, EC
   slices) are written between targets as before.
4. GetBatch: every entry is declared and decided with the others: one
   entry of a bucket the token lacks refuses the request (403 naming it).
"""
# timeout: 240
import json
import os
import subprocess
import xml.etree.ElementTree as ET

import boto3
import botocore.config
from botocore.exceptions import ClientError

import clulib
from clulib import Node, poll, request
from itlib import T
from s3lib import AK, REGION, SK, cluster, error_lines, http_raw

t = T()
AISCTL = os.path.join(os.path.dirname(os.environ["AISD_BIN"]), "aisctl")
tsf, csf = clulib.secret_files("authzdec")
AK2, SK2 = "nograntkey", "nograntsecret"
clulib.init(t, "authzdec", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                            "--set", "auth.enabled=on", "--set", "auth.secret_file=" + tsf,
                            "--set", "cluster.secret_file=" + csf,
                            "--set", "s3.key=%s:%s:aisd-test:AIS Test" % (AK, SK),
                            "--set", "s3.key=%s:%s:nogrant:No Grant" % (AK2, SK2),
                            "--set", "auth.grant=aisd-test:*:admin"])
JS = {"Content-Type": "application/json"}
CFG = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                             signature_version="s3v4")


def token(*args):
    cp = subprocess.run([AISCTL, "auth", "token", "create", "--secret-file", tsf] + list(args),
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                        env={**os.environ, "AISCTL_CONFIG": os.devnull})
    t.check(cp.returncode == 0, "aisctl auth token create %s" % " ".join(args), cp.stderr)
    return cp.stdout.decode().strip()


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


def code(body):
    try:
        return ET.fromstring(body).findtext("Code")
    except ET.ParseError:
        return None


def s3c(ak, sk):
    return boto3.client("s3", endpoint_url=EP, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name=REGION, config=CFG)


def s3err(fn, **kw):
    try:
        fn(**kw)
        return None
    except ClientError as e:
        return e.response["Error"].get("Code")


ADMIN = token("--user", "root", "--admin", "--ttl", "1h")


def smap_ids(node):
    try:
        r = request("GET", node.url, "/v1/cluster?what=smap", headers=bearer(ADMIN), timeout=5)
    except OSError:
        return set()
    return {n["id"] for n in (r.json() or {}).get("nodes", [])} if r.status == 200 else set()


g = Node("g1", "gateway")
ts = [Node("t%d" % i, "target") for i in (1, 2, 3)]
cluster.nodes = [g] + ts  # (for error_lines)
if not t.check(g.start() and all(x.start(join=g.url) for x in ts), "a gateway and 3 targets start with auth on"):
    t.finish()
if not t.check(poll(lambda: smap_ids(g) == {n.id for n in cluster.nodes}, 20), "the cluster map lists every node"):
    t.finish()
EP = g.url
BADMIN = token("--user", "bo", "--bucket", "bk", "--perm", "admin", "--ttl", "1h")
RW_MD = token("--user", "mo", "--bucket", "md", "--perm", "rw", "--ttl", "1h")
RO_MD = token("--user", "ro", "--bucket", "md", "--perm", "ro", "--ttl", "1h")
admin_s3, nogrant = s3c(AK, SK), s3c(AK2, SK2)


def put(bck, obj, data, tok=ADMIN, headers=None):
    return clulib.follow("PUT", EP, "/v1/objects/%s/%s" % (bck, obj), data, {**bearer(tok), **(headers or {})})[1]


for b in ("c", "pubrw", "bk", "md"):
    t.eq(request("POST", EP, "/v1/buckets/" + b, json.dumps({"action": "create-bck"}),
                 {**JS, **bearer(ADMIN)}).status, 200, "admin creates bucket %s" % b)
t.eq(put("c", "z", b"c/z private bytes").status, 200, "admin PUTs the private object c/z (native)")
admin_s3.put_object(Bucket="c", Key="z2", Body=b"c/z2 private bytes")
t.eq(put("pubrw", "pub", b"public bytes").status, 200, "admin PUTs pubrw/pub")
pub = json.dumps({"action": "set-bprops", "value": {"s3": {"acl": "aR:aW"}}})
t.eq(request("PATCH", EP, "/v1/buckets/pubrw", pub, {**JS, **bearer(ADMIN)}).status, 200,
     "admin makes pubrw public-read-write (AllUsers READ and WRITE)")
t.eq(http_raw(EP, "GET", "/c/z")[0], 403, "anonymous GET of c/z: 403")

# --- 1. copies: the source is a resource of its own ------------------------------------------
for src in ("c/z", "c/z2"):
    st, h, body = http_raw(EP, "PUT", "/pubrw/stolen", b"", {"x-amz-copy-source": src})
    t.check(st == 403 and code(body) == "AccessDenied",
            "anonymous CopyObject of the private %s into a public-read-write bucket: 403" % src, (st, body[:300]))
    st, h, body = http_raw(EP, "GET", "/pubrw/stolen")
    t.check(st != 200 and b"private" not in body, "... and no anonymous GET of a copy", (st, body[:100]))
st, h, body = http_raw(EP, "PUT", "/pubrw/nothing", b"", {"x-amz-copy-source": "c/no-such-key"})
t.check(st == 403 and code(body) == "AccessDenied",
        "anonymous CopyObject of a missing key of an unreadable bucket: 403, existence not told", (st, body[:300]))
st, h, body = http_raw(EP, "PUT", "/pubrw/pubcopy", b"", {"x-amz-copy-source": "pubrw/pub"})
t.eq(st, 200, "anonymous CopyObject of a public-read source: 200")
t.eq(http_raw(EP, "GET", "/pubrw/pubcopy")[2], b"public bytes", "... its copy reads back")

st, h, body = http_raw(EP, "POST", "/pubrw/mp?uploads", b"")
uid = ET.fromstring(body).findtext("{*}UploadId") if st == 200 else None
if t.check(st == 200 and uid, "anonymous CreateMultipartUpload in pubrw", (st, body[:300])):
    st, h, body = http_raw(EP, "PUT", "/pubrw/mp?partNumber=1&uploadId=" + uid, b"",
                           {"x-amz-copy-source": "c/z"})
    t.check(st == 403 and code(body) == "AccessDenied" and b"CopyPartResult" not in body,
            "anonymous UploadPartCopy of the private c/z: 403", (st, body[:300]))
    st, h, body = http_raw(EP, "PUT", "/pubrw/mp?partNumber=1&uploadId=" + uid, b"",
                           {"x-amz-copy-source": "pubrw/pub"})
    t.check(st == 200 and b"CopyPartResult" in body, "anonymous UploadPartCopy of a public source: 200",
            (st, body[:300]))
    t.eq(http_raw(EP, "DELETE", "/pubrw/mp?uploadId=" + uid)[0], 204, "anonymous AbortMultipartUpload")

t.eq(s3err(nogrant.copy_object, Bucket="pubrw", Key="stolen2", CopySource="c/z"), "AccessDenied",
     "a signed user without grants (its write allowed by pubrw's ACL): CopyObject of c/z AccessDenied")
t.eq(http_raw(EP, "GET", "/pubrw/stolen2")[0], 404, "... nothing landed")
t.eq(s3err(nogrant.copy_object, Bucket="pubrw", Key="ok2", CopySource="pubrw/pub"), None,
     "the same user copies a public source")
t.eq(s3err(admin_s3.copy_object, Bucket="c", Key="zcopy", CopySource="c/z"), None,
     "the S3 administrator (auth.grant *:admin) copies c/z")

# --- 2. a bucket's backend: cluster administrators ---------------------------------------------
def bprops(value, tok):
    r = request("PATCH", EP, "/v1/buckets/bk", json.dumps({"action": "set-bprops", "value": value}),
                {**JS, **bearer(tok)})
    return r.status, (r.json() or {}).get("message", "") if r.status != 200 else ""


st, msg = bprops({"backend": {"provider": "ais", "remote": "elsewhere", "bucket": "theirs"}}, BADMIN)
t.check(st == 403 and "administrator" in msg, "a bucket admin's set-bprops of backend.provider/remote/bucket: "
        "403", (st, msg))
st, msg = bprops({"backend": {"bucket": "theirs"}}, BADMIN)
t.eq(st, 403, "... of backend.bucket alone: 403")
st, msg = bprops({"versioning": {"enabled": True}}, BADMIN)
t.eq(st, 200, "the bucket admin still sets other props")
st, msg = bprops({"backend": {"provider": "ais", "remote": "elsewhere", "bucket": "theirs"}}, ADMIN)
t.check(st == 400 and "elsewhere" in msg and "not attached" in msg,
        "a cluster admin may set the backend: past authz, the remote is checked (elsewhere: not attached, 400)",
        (st, msg))
st, msg = bprops({"backend": {"sync": True, "validate_warm_get": True}}, BADMIN)
t.eq(st, 200, "the bucket admin sets backend.sync and validate_warm_get")
st, msg = bprops({"backend": {"provider": "none"}}, BADMIN)
t.eq(st, 403, "the bucket admin cannot detach the backend either")
st, msg = bprops({"backend": {"provider": "none"}}, ADMIN)
t.eq(st, 200, "a cluster admin detaches it")

# --- 3. reserved metadata keys ------------------------------------------------------------------
for i, md in enumerate(("s3.own=mo,s3.acl=aR", "S3.ACL=aR", "color=red, s3.acl=aR", "s3.etag=00",
                          "bk.etag=00")):
    r = put("md", "o%d" % i, b"md secret", RW_MD, {"Ais-Custom-Md": md})
    t.check(r.status == 400 and "reserved" in (r.json() or {}).get("message", ""),
            "native PUT with Ais-Custom-Md %r: 400" % md, r)
    t.check(http_raw(EP, "GET", "/md/o%d" % i)[0] in (403, 404), "... not anonymously readable")
# S3's own x-amz-meta-* land under encoded keys: they cannot name the owner or ACL (a regression guard)
admin_s3.put_object(Bucket="md", Key="s3meta", Body=b"md secret",
                    Metadata={"s3.acl": "aR", "x": "1,s3.own=aisd-test,s3.acl=aR"})
t.eq(http_raw(EP, "GET", "/md/s3meta")[0], 403, "S3 PutObject with x-amz-meta-s3.acl and ',s3.acl=' in a value: "
     "still private")
r = put("md", "ok", b"md data", RW_MD, {"Ais-Custom-Md": "color=blue,s3x=1"})
t.eq(r.status, 200, "native PUT with other custom keys: 200")
r = clulib.follow("HEAD", EP, "/v1/objects/md/ok", None, bearer(RO_MD))[1]
t.check("color=blue" in (r.h("ais-custom-md") or ""), "... stored", r.h("ais-custom-md"))
t.eq(http_raw(EP, "GET", "/md/ok")[0], 403, "... and private to anonymous S3 reads")

# the cluster's own copies of S3 metadata are peers' writes: a copies=2 bucket and an erasure-coded one
for b, props in (("mir", {"mirror": {"enabled": True, "copies": 2}}),
                 ("ecb", {"ec": {"enabled": True, "data_slices": 1, "parity_slices": 1}})):
    t.eq(request("POST", EP, "/v1/buckets/" + b, json.dumps({"action": "create-bck"}),
                 {**JS, **bearer(ADMIN)}).status, 200, "admin creates bucket %s" % b)
    t.eq(request("PATCH", EP, "/v1/buckets/" + b, json.dumps({"action": "set-bprops", "value": props}),
                 {**JS, **bearer(ADMIN)}).status, 200, "... with %s" % list(props)[0])
    t.eq(s3err(admin_s3.put_object, Bucket=b, Key="k", Body=b"copied bytes", Metadata={"m": "v"}), None,
         "S3 PutObject into %s (its copies carry s3.* metadata between targets)" % b)
    try:
        got = admin_s3.get_object(Bucket=b, Key="k")
        t.check(got["Body"].read() == b"copied bytes" and got["Metadata"] == {"m": "v"}, "... reads back", got)
    except ClientError as e:
        t.fail("... reads back: %s" % e)
    t.eq(http_raw(EP, "GET", "/%s/k" % b)[0], 403, "... private to anonymous reads")

# --- 4. GetBatch: every entry decided together -------------------------------------------------
mine = json.dumps({"in": [{"objname": "ok", "bucket": "md"}]})
mixed = json.dumps({"in": [{"objname": "ok", "bucket": "md"}, {"objname": "z", "bucket": "c"},
                           {"objname": "ok", "bucket": "md"}]})
r = request("GET", EP, "/v1/ml/moss", mixed, {**JS, **bearer(RO_MD)})
t.check(r.status == 403 and '"c"' in (r.json() or {}).get("message", ""),
        "GetBatch with one entry of a bucket the token lacks: 403 naming it", r)
r = clulib.follow("GET", EP, "/v1/ml/moss", mine, {**JS, **bearer(RO_MD)})[1]
t.check(r.status == 200 and b"md data" in r.body, "GetBatch of its own bucket's entries: 200", r.status)
for n in cluster.nodes[1:]:
    r = request("GET", n.url, "/v1/ml/moss", mixed, {**JS, **bearer(RO_MD)})
    t.eq(r.status, 403, "%s: the same GetBatch straight at a target: 403" % n.name)
t.eq(error_lines(), [], "no error-level log line on any node")
t.finish()
