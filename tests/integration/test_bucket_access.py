#!/usr/bin/env python3
"""test_bucket_access.py - a bucket's access property (ro, rw, bits) is
enforced for every client on every API, auth off and auth on: a gateway
and 2 targets, native requests (raw HTTP, aisctl), S3 (boto3).

For each of auth off and auth on (an admin token and an admin S3 key,
which are still refused):
1. access=ro (set by aisctl): native PUT, DELETE, set-bprops of another
   property and destroy are 403 naming the access property and the
   operation ("bucket ais://B does not allow PUT (access=ro)"), also
   straight at a target; S3 PutObject, CopyObject into it, multipart
   (create, UploadPart and Complete of an upload begun while writable),
   DeleteObject(s), DeleteBucket, PutBucketAcl are AccessDenied with the
   same message; GET, HEAD, list (native and S3) are allowed; a target
   joining then gets its share by rebalance (peers are exempt).
2. access=get,head: list refused (native and S3), GET and HEAD allowed.
3. access without GET: GetBatch of one of its objects, an archpath read,
   S3 GetObject, a CopyObject and an UploadPartCopy from it are refused;
   nothing lands. A
   bucket without LIST still takes set-bprops of ec while empty (the
   gateway's own emptiness check is a peer's call).
4. A set-bprops of only "access" works though PATCH is cleared (a locked
   bucket can be unlocked): back to rw, everything works again, and
   nothing a refused request asked for was written or deleted.
"""
# timeout: 300
import io
import json
import os
import re
import subprocess
import tarfile
import xml.etree.ElementTree as ET

import boto3
import botocore.config
from botocore.exceptions import ClientError

import clulib
from clulib import Node, poll, request
from itlib import T
from s3lib import AK, REGION, SK, cluster, error_lines

t = T()
AISCTL = os.path.join(os.path.dirname(os.environ["AISD_BIN"]), "aisctl")
JS = {"Content-Type": "application/json"}
CFG = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                             signature_version="s3v4")
BASE = ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
        "--set", "s3.key=%s:%s:aisd-test:AIS Test" % (AK, SK)]


def tar_of(name, data):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w") as tf:
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    return b.getvalue()


def phase(auth):
    tag = "on" if auth else "off"
    args = list(BASE)
    tsf = None
    if auth:
        tsf, csf = clulib.secret_files("bacc-on")
        args += ["--set", "auth.enabled=on", "--set", "auth.secret_file=" + tsf,
                 "--set", "cluster.secret_file=" + csf, "--set", "auth.grant=aisd-test:*:admin"]
    clulib.init(t, "bacc-" + tag, args)

    def token(*a):
        cp = subprocess.run([AISCTL, "auth", "token", "create", "--secret-file", tsf] + list(a),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                            env={**os.environ, "AISCTL_CONFIG": os.devnull})
        t.check(cp.returncode == 0, "aisctl auth token create", cp.stderr)
        return cp.stdout.decode().strip()

    H = {"Authorization": "Bearer " + token("--user", "root", "--admin", "--ttl", "1h")} if auth else {}
    BADMIN = {"Authorization": "Bearer " + token("--user", "bo", "--bucket", "ab", "--perm", "admin",
                                                 "--ttl", "1h")} if auth else {}

    def smap_ids(node):
        try:
            r = request("GET", node.url, "/v1/cluster?what=smap", headers=H, timeout=5)
        except OSError:
            return set()
        return {n["id"] for n in (r.json() or {}).get("nodes", [])} if r.status == 200 else set()

    g = Node("g1", "gateway")
    ts = [Node("t%d" % i, "target") for i in (1, 2)]
    cluster.nodes = [g] + ts
    if not t.check(g.start() and all(x.start(join=g.url) for x in ts), "[auth %s] a gateway and 2 targets start"
                   % tag):
        t.finish()
    if not t.check(poll(lambda: smap_ids(g) == {n.id for n in cluster.nodes}, 20),
                   "[auth %s] the cluster map lists every node" % tag):
        t.finish()
    EP = g.url
    s3 = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK,
                      region_name=REGION, config=CFG)

    def obj(method, bck, name, data=None, headers=None, query=""):
        return clulib.follow(method, EP, "/v1/objects/%s/%s%s" % (bck, name, query), data,
                             {**H, **(headers or {})})[1]

    def bucket(method, bck, body=None, hdrs=None):
        return clulib.follow(method, EP, "/v1/buckets/" + bck, json.dumps(body) if body is not None else None,
                             {**JS, **(H if hdrs is None else hdrs)})[1]

    def names(bck):
        r = bucket("GET", bck, {"action": "list"})
        return sorted(e["name"] for e in (r.json() or {}).get("entries", [])) if r.status == 200 else r

    def set_access(bck, val, hdrs=None):
        return bucket("PATCH", bck, {"action": "set-bprops", "value": {"access": val}}, hdrs)

    def denied(r, op, access, what, bck="ab"):
        msg = (r.json() or {}).get("message", "") if r.status == 403 else ""
        want = "bucket ais://%s does not allow %s (access=%s)" % (bck, op, access)
        t.check(r.status == 403 and want in msg, "[auth %s] %s: 403 \"%s\"" % (tag, what, want), r)

    def s3denied(fn, op, access, what, bck="ab", **kw):
        try:
            fn(**kw)
            t.fail("[auth %s] S3 %s: AccessDenied" % (tag, what), "it succeeded")
        except ClientError as e:
            err = e.response["Error"]
            want = "bucket ais://%s does not allow %s (access=%s)" % (bck, op, access)
            t.check(err.get("Code") == "AccessDenied" and want in err.get("Message", ""),
                    "[auth %s] S3 %s: AccessDenied \"%s\"" % (tag, what, want), err)

    def s3ok(fn, what, **kw):
        try:
            out = fn(**kw)
            t.ok("[auth %s] S3 %s" % (tag, what))
            return out
        except ClientError as e:
            t.fail("[auth %s] S3 %s" % (tag, what), e.response["Error"])
            return None

    for b in ("ab", "dst"):
        t.eq(bucket("POST", b, {"action": "create-bck"}).status, 200, "[auth %s] create bucket %s" % (tag, b))
    for n in ("a", "b"):
        t.eq(obj("PUT", "ab", n, b"data " + n.encode()).status, 200, "[auth %s] PUT ab/%s" % (tag, n))
    t.eq(obj("PUT", "ab", "t.tar", tar_of("f.txt", b"member")).status, 200, "[auth %s] PUT ab/t.tar" % tag)
    many = ["m%02d" % i for i in range(24)]
    t.check(all(obj("PUT", "ab", n, b"m").status == 200 for n in many), "[auth %s] PUT 24 more objects" % tag)
    ALL = sorted(["a", "b", "t.tar"] + many)

    # --- 1. access=ro ------------------------------------------------------------------------
    # the cluster's own transfers are exempt: a third target joins a
    # read-only bucket's cluster and the rebalance moves its share to it
    t.eq(set_access("ab", "ro").status, 200, "[auth %s] set access=ro" % tag)
    t3 = Node("t3", "target")
    cluster.nodes.append(t3)
    t.check(t3.start(join=g.url), "[auth %s] a third target joins" % tag)

    def t3_names():
        r = request("GET", t3.url, "/v1/buckets/ab", json.dumps({"action": "list"}), {**JS, **H}, timeout=5)
        return [e["name"] for e in (r.json() or {}).get("entries", [])] if r.status == 200 else []

    def reb_lines(n):
        with open(n.log, errors="replace") as f:
            return [l for l in f if "rebalance (map v" in l]

    def reb_done(n):  # a run that walked the bucket's objects ended clean
        return any(re.search(r"done: [1-9]\d* objects walked", l) for l in reb_lines(n))
    t.check(poll(lambda: all(reb_done(x) for x in ts) and len(t3_names()) > 0, 30),
            "[auth %s] the rebalance moves objects of the read-only bucket to it" % tag, t3_names())
    errs = [l.strip() for x in ts for l in reb_lines(x) if re.search(r"\): \d+ errors", l)]
    t.check(not errs, "[auth %s] ... with no refused send" % tag, errs[:2])
    # a multipart upload begun while the bucket is writable (after the
    # rebalance: uploads in progress stay on their target)
    t.eq(set_access("ab", "rw").status, 200, "[auth %s] set access=rw" % tag)
    up = s3ok(s3.create_multipart_upload, "CreateMultipartUpload under rw", Bucket="ab", Key="mpu2")
    uid = (up or {}).get("UploadId", "none")
    p1 = s3ok(s3.upload_part, "UploadPart 1 under rw", Bucket="ab", Key="mpu2", UploadId=uid, PartNumber=1,
              Body=b"part one")
    parts = {"Parts": [{"PartNumber": 1, "ETag": (p1 or {}).get("ETag", "")}]}

    env = {**os.environ, "AISCTL_CONFIG": os.devnull}
    if auth:
        env["AIS_AUTHN_TOKEN"] = H["Authorization"][7:]
    cp = subprocess.run([AISCTL, "bucket", "props", "set", "ab", "access=ro", "-e", EP], stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, env=env)
    t.check(cp.returncode == 0, "[auth %s] aisctl bucket props set ab access=ro" % tag, cp.stderr.decode()[-300:])
    hp = bucket("HEAD", "ab", hdrs=H).h("ais-bucket-props") or ""
    t.check('"access":19' in hp, "[auth %s] the bucket's props say access 19 (ro)" % tag, hp)

    denied(obj("PUT", "ab", "new", b"x"), "PUT", "ro", "native PUT ab/new")
    denied(obj("PUT", "ab", "a", b"overwritten"), "PUT", "ro", "native PUT over ab/a")
    denied(obj("DELETE", "ab", "a"), "DELETE", "ro", "native DELETE ab/a")
    denied(bucket("PATCH", "ab", {"action": "set-bprops", "value": {"versioning": {"enabled": False}}}),
           "PATCH", "ro", "native set-bprops of versioning")
    denied(bucket("PATCH", "ab", {"action": "set-bprops", "value": {"access": "rw", "mirror": {"copies": 2}}}),
           "PATCH", "ro", "native set-bprops of access and another property")
    denied(bucket("DELETE", "ab", {"action": "destroy-bck"}), "DESTROY", "ro", "native destroy of ab")
    for x in ts + [t3]:  # the same straight at a target (no gateway to ask)
        r = request("PUT", x.url, "/v1/objects/ab/direct", b"x", H)
        denied(r, "PUT", "ro", "native PUT straight at %s" % x.name)
    r = obj("GET", "ab", "a")
    t.check(r.status == 200 and r.body == b"data a", "[auth %s] native GET ab/a under ro: 200" % tag, r)
    t.eq(obj("HEAD", "ab", "a").status, 200, "[auth %s] native HEAD ab/a under ro: 200" % tag)
    t.eq(bucket("HEAD", "ab", hdrs=H).status, 200, "[auth %s] native HEAD bucket under ro: 200" % tag)
    t.eq(names("ab"), ALL, "[auth %s] native list under ro: every object" % tag)
    r = obj("GET", "ab", "t.tar", query="?archpath=f.txt")
    t.check(r.status == 200 and r.body == b"member", "[auth %s] archpath read under ro: 200" % tag, r)

    s3denied(s3.put_object, "PUT", "ro", "PutObject", Bucket="ab", Key="s3new", Body=b"x")
    s3denied(s3.copy_object, "PUT", "ro", "CopyObject into ab", Bucket="ab", Key="cp",
             CopySource={"Bucket": "ab", "Key": "a"})
    s3denied(s3.create_multipart_upload, "PUT", "ro", "CreateMultipartUpload", Bucket="ab", Key="mpu")
    s3denied(s3.upload_part, "PUT", "ro", "UploadPart 2", Bucket="ab", Key="mpu2", UploadId=uid, PartNumber=2,
             Body=b"part two")
    s3denied(s3.complete_multipart_upload, "PUT", "ro", "CompleteMultipartUpload", Bucket="ab", Key="mpu2",
             UploadId=uid, MultipartUpload=parts)
    s3denied(s3.delete_object, "DELETE", "ro", "DeleteObject", Bucket="ab", Key="a")
    s3denied(s3.delete_objects, "DELETE", "ro", "DeleteObjects", Bucket="ab",
             Delete={"Objects": [{"Key": "a"}, {"Key": "b"}]})
    s3denied(s3.delete_bucket, "DESTROY", "ro", "DeleteBucket", Bucket="ab")
    s3denied(s3.put_bucket_acl, "PATCH", "ro", "PutBucketAcl", Bucket="ab", ACL="public-read")
    got = s3ok(s3.get_object, "GetObject under ro", Bucket="ab", Key="b")
    t.eq(got and got["Body"].read(), b"data b", "[auth %s] ... its bytes" % tag)
    s3ok(s3.head_object, "HeadObject under ro", Bucket="ab", Key="a")
    s3ok(s3.head_bucket, "HeadBucket under ro", Bucket="ab")
    lst = s3ok(s3.list_objects_v2, "ListObjectsV2 under ro", Bucket="ab")
    t.eq(sorted(c["Key"] for c in (lst or {}).get("Contents", [])), ALL, "[auth %s] ... every key" % tag)

    # --- 2. access=get,head: no list --------------------------------------------------------
    t.eq(set_access("ab", 3).status, 200, "[auth %s] set access=get,head (3) though PATCH is cleared" % tag)
    denied(bucket("GET", "ab", {"action": "list"}), "LIST", "get,head", "native list")
    s3denied(s3.list_objects_v2, "LIST", "get,head", "ListObjectsV2", Bucket="ab")
    t.eq(obj("GET", "ab", "a").status, 200, "[auth %s] native GET under get,head: 200" % tag)
    s3ok(s3.head_object, "HeadObject under get,head", Bucket="ab", Key="a")

    # --- 3. no GET: GetBatch, archpath, S3 GET and copies from it ----------------------------
    t.eq(set_access("ab", 22).status, 200, "[auth %s] set access=head,put,list (22)" % tag)
    batch = json.dumps({"in": [{"objname": "a", "bucket": "ab"}]})
    r = clulib.follow("GET", EP, "/v1/ml/moss", batch, {**JS, **H})[1]
    denied(r, "GET", "head,put,list", "GetBatch of an entry of ab")
    for x in ts:
        r = request("GET", x.url, "/v1/ml/moss", batch, {**JS, **H})
        denied(r, "GET", "head,put,list", "GetBatch straight at %s" % x.name)
    denied(obj("GET", "ab", "a"), "GET", "head,put,list", "native GET")
    denied(obj("GET", "ab", "t.tar", query="?archpath=f.txt"), "GET", "head,put,list", "archpath read")
    s3denied(s3.get_object, "GET", "head,put,list", "GetObject", Bucket="ab", Key="a")
    s3denied(s3.copy_object, "GET", "head,put,list", "CopyObject from ab into dst", Bucket="dst", Key="stolen",
             CopySource={"Bucket": "ab", "Key": "a"})
    mp = s3ok(s3.create_multipart_upload, "CreateMultipartUpload in dst", Bucket="dst", Key="mp")
    s3denied(s3.upload_part_copy, "GET", "head,put,list", "UploadPartCopy from ab into dst", Bucket="dst",
             Key="mp", UploadId=(mp or {}).get("UploadId", "none"), PartNumber=1,
             CopySource={"Bucket": "ab", "Key": "a"})
    s3ok(s3.abort_multipart_upload, "AbortMultipartUpload in dst", Bucket="dst", Key="mp",
         UploadId=(mp or {}).get("UploadId", "none"))
    t.eq(names("dst"), [], "[auth %s] nothing landed in dst" % tag)

    # the gateway's own questions to the targets are a peer's: an empty
    # bucket without LIST still takes erasure coding (no false "not empty")
    t.eq(bucket("POST", "ecb", {"action": "create-bck"}).status, 200, "[auth %s] create bucket ecb" % tag)
    t.eq(set_access("ecb", 127 & ~16).status, 200, "[auth %s] ecb: every access but LIST" % tag)
    r = bucket("PATCH", "ecb", {"action": "set-bprops",
                                "value": {"ec": {"enabled": True, "data_slices": 1, "parity_slices": 1}}})
    t.eq(r.status, 200, "[auth %s] set-bprops of ec on the empty ecb without LIST" % tag)
    t.eq(bucket("DELETE", "ecb", {"action": "destroy-bck"}).status, 200, "[auth %s] destroy ecb" % tag)

    # --- 4. unlock: a bucket admin may set access alone; everything works again ---------------
    t.eq(set_access("ab", "ro").status, 200, "[auth %s] back to ro" % tag)
    r = set_access("ab", "rw", BADMIN if auth else None)
    t.eq(r.status, 200, "[auth %s] a bucket admin sets access=rw on a bucket without PATCH" % tag)
    t.eq(names("ab"), ALL, "[auth %s] nothing refused was written or deleted" % tag)
    r = obj("GET", "ab", "a")
    t.check(r.status == 200 and r.body == b"data a", "[auth %s] ab/a kept its bytes" % tag, r)
    t.eq(obj("PUT", "ab", "new", b"x").status, 200, "[auth %s] native PUT under rw" % tag)
    t.eq(obj("DELETE", "ab", "new").status, 200, "[auth %s] native DELETE under rw" % tag)
    s3ok(s3.complete_multipart_upload, "CompleteMultipartUpload under rw", Bucket="ab", Key="mpu2",
         UploadId=uid, MultipartUpload=parts)
    got = s3ok(s3.get_object, "GetObject of the completed upload", Bucket="ab", Key="mpu2")
    t.eq(got and got["Body"].read(), b"part one", "[auth %s] ... only the part sent while writable" % tag)
    s3ok(s3.put_object, "PutObject under rw", Bucket="ab", Key="s3new", Body=b"y")
    s3ok(s3.copy_object, "CopyObject from ab under rw", Bucket="dst", Key="c",
         CopySource={"Bucket": "ab", "Key": "a"})
    s3ok(s3.delete_object, "DeleteObject under rw", Bucket="ab", Key="s3new")
    s3ok(s3.put_bucket_acl, "PutBucketAcl under rw", Bucket="ab", ACL="private")
    r = clulib.follow("GET", EP, "/v1/ml/moss", batch, {**JS, **H})[1]
    t.check(r.status == 200 and b"data a" in r.body, "[auth %s] GetBatch under rw: 200" % tag, r.status)
    t.eq(bucket("PATCH", "ab", {"action": "set-bprops", "value": {"versioning": {"enabled": False}}}).status, 200,
         "[auth %s] set-bprops of versioning under rw" % tag)
    s3ok(s3.delete_objects, "DeleteObjects under rw", Bucket="ab",
         Delete={"Objects": [{"Key": k} for k in ALL + ["mpu2"]]})
    s3ok(s3.delete_bucket, "DeleteBucket under rw", Bucket="ab")
    t.eq(bucket("DELETE", "dst", {"action": "destroy-bck"}).status, 200, "[auth %s] native destroy under rw" % tag)
    t.eq(error_lines(), [], "[auth %s] no error-level log line on any node" % tag)
    clulib.stop_all()
    clulib.procs.clear()


phase(False)
phase(True)
t.finish()
