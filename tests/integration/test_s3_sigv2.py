"""test_s3_sigv2.py - S3 Signature Version 2 end to end: 1 gateway + 3
targets with s3.sigv2 on and s3.domain set, real SigV2 clients through the
gateway; then a standalone target with s3.sigv2 off.

Checks:
 1. boto3 with signature_version='s3' (botocore's HmacV1 signer): create a
    bucket, PUT 0 B, 1 KiB and 6 MiB objects (and a key with spaces,
    unicode and '+'), GET each back byte for byte, a Range GET, list with a
    prefix, copy, delete one, and the bucket; ?acl, ?tagging and ?delete
    (signed sub-resources) signed by botocore's HmacV1Auth directly, and
    through boto3's own calls (GetBucketAcl, GetObjectAcl,
    PutObjectTagging, Put/GetBucketCors), which sign "/b?acl?acl".
 2. A presigned v2 URL (generate_presigned_url, ?AWSAccessKeyId&Expires&
    Signature) fetched with curl: the bytes; the same URL with one byte of
    the signature changed: 403 SignatureDoesNotMatch; one already expired:
    403 AccessDenied "Request has expired".
 3. Virtual-hosted style: a request signed for /BUCKET/KEY sent with
    Host: BUCKET.s3.test (s3.domain): 200 with the bytes.
 4. A wrong secret: 403 SignatureDoesNotMatch; an unknown key: 403
    InvalidAccessKeyId; "AWS garbage": 400 InvalidArgument; a Date an
    hour off: 403 RequestTimeTooSkewed; nothing written by any of them.
 5. s3cmd with signature_v2 (when installed): put, get (same bytes), ls, del.
 6. A SigV4 client still works on the same cluster.
 7. s3.sigv2 off (a standalone target): a SigV2 request gets 400
    InvalidRequest whose message names s3.sigv2; SigV4 works there.
No node logs an error.
"""
# timeout: 300
import base64
import email.utils
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree as ET

from botocore.auth import HmacV1Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

import clulib
from itlib import T
from s3lib import AK, SK, boto3_client, cluster, error_lines, http_raw, run

t = T()
EP = cluster(t, "s3sigv2", args=["--set", "s3.sigv2=on", "--set", "s3.domain=s3.test"])
v2 = boto3_client(EP, signature_version="s3")
v4 = boto3_client(EP, signature_version="s3v4")


def code_of(body):
    try:
        x = ET.fromstring(body)
        return x.findtext("Code"), x.findtext("Message") or ""
    except ET.ParseError:
        return None, body[:200]


class DatedV1(HmacV1Auth):
    """botocore's SigV2 signer, dated `when` instead of now."""
    def __init__(self, creds, when):
        super().__init__(creds)
        self.when = when

    def _get_date(self):
        return email.utils.formatdate(self.when, usegmt=True)


def v2_raw(method, path, body=b"", headers=None, sk=SK, ak=AK, host=None, auth_path=None, when=None):
    """One request signed by botocore's SigV2 signer (dated when, default
    now), sent as is: (status, code, message, body)."""
    url = EP + path
    r = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    r.auth_path = auth_path
    DatedV1(Credentials(ak, sk), time.time() if when is None else when).add_auth(r)
    h = dict(r.prepare().headers)
    if host:
        h["Host"] = host
    st, _, out = http_raw(EP, method, path, body or None, h)
    return (st,) + (code_of(out) if st >= 300 else (None, "")) + (out,)


# 1. boto3 (SigV2): the object lifecycle
DATA = {"empty": b"", "small": os.urandom(1024), "big": os.urandom(6 << 20), "sp ace/ünï+plus": b"odd name"}
v2.create_bucket(Bucket="v2b")
for k, d in DATA.items():
    v2.put_object(Bucket="v2b", Key=k, Body=d)
for k, d in DATA.items():
    t.eq(v2.get_object(Bucket="v2b", Key=k)["Body"].read(), d, "boto3 v2: GET %r byte for byte" % k)
t.eq(v2.get_object(Bucket="v2b", Key="big", Range="bytes=100-199")["Body"].read(), DATA["big"][100:200],
     "boto3 v2: a Range GET")
names = [o["Key"] for o in v2.list_objects(Bucket="v2b", Prefix="s")["Contents"]]
t.eq(names, ["small", "sp ace/ünï+plus"], "boto3 v2: list with a prefix")
# sub-resources, signed by botocore's SigV2 signer itself (its clients sign
# path-style operations whose model URI has a query, ?acl, ?tagging,
# ?delete, as "/b?acl?acl", which no server takes)
st, code, _, body = v2_raw("GET", "/v2b?acl")
t.check(st == 200 and b"<AccessControlPolicy" in body, "v2: GET ?acl (a signed sub-resource)", (st, code))
tags = b'<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>'
st, code, _, _ = v2_raw("PUT", "/v2b/small?tagging", tags)
t.eq((st, code), (200, None), "v2: PUT ?tagging")
t.eq(v4.get_object_tagging(Bucket="v2b", Key="small")["TagSet"], [{"Key": "k", "Value": "v"}],
     "v2: the tags are there (read by SigV4)")
st, code, _, _ = v2_raw("GET", "/v2b/small?tagging&versionId=null")
t.eq((st, code), (200, None), "v2: GET ?tagging&versionId (two sub-resources, sorted)")
# botocore's own clients: path-style operations whose model URI has a query
# are signed with it twice ("/b?acl?acl"), taken as the same request
t.check(v2.get_bucket_acl(Bucket="v2b")["ResponseMetadata"]["HTTPStatusCode"] == 200 and
        v2.get_object_acl(Bucket="v2b", Key="small")["Owner"], "boto3 v2: GetBucketAcl, GetObjectAcl")
v2.put_object_tagging(Bucket="v2b", Key="small", Tagging={"TagSet": [{"Key": "by", "Value": "boto3"}]})
t.eq(v4.get_object_tagging(Bucket="v2b", Key="small")["TagSet"], [{"Key": "by", "Value": "boto3"}],
     "boto3 v2: PutObjectTagging (read back by SigV4)")
v2.put_bucket_cors(Bucket="v2b", CORSConfiguration={"CORSRules": [{"AllowedMethods": ["GET"],
                                                                    "AllowedOrigins": ["*"]}]})
t.eq(v2.get_bucket_cors(Bucket="v2b")["CORSRules"][0]["AllowedMethods"], ["GET"], "boto3 v2: Put/GetBucketCors")
v2.copy_object(Bucket="v2b", Key="copy", CopySource={"Bucket": "v2b", "Key": "small"})
t.eq(v4.get_object(Bucket="v2b", Key="copy")["Body"].read(), DATA["small"], "boto3 v2: copy (read back by SigV4)")

# 2. a presigned v2 URL with curl
url = v2.generate_presigned_url("get_object", Params={"Bucket": "v2b", "Key": "small"}, ExpiresIn=300)
t.check("AWSAccessKeyId=" in url and "Signature=" in url and "Expires=" in url, "a SigV2 presigned URL", url)
d = tempfile.mkdtemp(dir=os.environ.get("TMPDIR"))
out = os.path.join(d, "got")
rc, msg = run(["curl", "-sS", "-o", out, "-w", "%{http_code}", url], timeout=30)
t.check(rc == 0 and msg.strip() == "200" and open(out, "rb").read() == DATA["small"],
        "curl: the presigned v2 URL gives the bytes", msg)
q = urllib.parse.urlsplit(url)
params = urllib.parse.parse_qs(q.query)
sig = params["Signature"][0]
bad = sig[:5] + ("A" if sig[5] != "A" else "B") + sig[6:]
st, _, body = http_raw(EP, "GET", "/v2b/small?" + urllib.parse.urlencode(
    {"AWSAccessKeyId": AK, "Expires": params["Expires"][0], "Signature": bad}))
code = code_of(body)[0]
t.check(st == 403 and code == "SignatureDoesNotMatch", "a tampered presigned v2 URL: 403 SignatureDoesNotMatch",
        (st, code))
old = v2.generate_presigned_url("get_object", Params={"Bucket": "v2b", "Key": "small"}, ExpiresIn=-10)
p = urllib.parse.urlsplit(old)
st, _, body = http_raw(EP, "GET", p.path + "?" + p.query)
code, m = code_of(body)
t.check(st == 403 and code == "AccessDenied" and "expired" in m, "an expired v2 URL: 403 AccessDenied", (st, body[:200]))

# 3. virtual-hosted: the bucket from Host, signed as /bucket/key
st, code, _, body = v2_raw("GET", "/small", host="v2b.s3.test", auth_path="/v2b/small")
t.check(st == 200 and body == DATA["small"], "virtual-hosted v2 GET (Host v2b.s3.test)", (st, code))

# 4. refusals, nothing written
for what, kw, want in [("a wrong secret", {"sk": "not-the-secret"}, (403, "SignatureDoesNotMatch")),
                       ("an unknown key", {"ak": "NOSUCHKEY"}, (403, "InvalidAccessKeyId"))]:
    st, code, _, _ = v2_raw("PUT", "/v2b/refused", b"x", **kw)
    t.eq((st, code), want, "v2 PUT with %s" % what)
st, _, body = http_raw(EP, "PUT", "/v2b/refused", b"x", {"Authorization": "AWS garbage",
                                                          "Date": email.utils.formatdate(usegmt=True)})
t.eq((st, code_of(body)[0]), (400, "InvalidArgument"), "Authorization: AWS garbage: 400 InvalidArgument")
st, code, _, _ = v2_raw("PUT", "/v2b/refused", b"x", when=time.time() - 3600)
t.eq((st, code), (403, "RequestTimeTooSkewed"), "v2 PUT dated an hour ago: 403 RequestTimeTooSkewed")
t.check("refused" not in [o["Key"] for o in v4.list_objects(Bucket="v2b").get("Contents", [])],
        "no refused request wrote an object")

# 5. s3cmd with SigV2
if shutil.which("s3cmd"):
    cfg = os.path.join(d, "s3cfg")
    host = EP.split("//")[1]
    with open(cfg, "w") as f:
        f.write("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\nhost_bucket = %s\n"
                "use_https = False\nsignature_v2 = True\n" % (AK, SK, host, host))
    src = os.path.join(d, "src")
    with open(src, "wb") as f:
        f.write(DATA["big"][:300000])

    def s3cmd(*a):
        return run(["s3cmd", "-c", cfg, "--no-progress"] + list(a), timeout=120)

    rc, o = s3cmd("put", src, "s3://v2b/s3cmd/obj")
    t.check(rc == 0, "s3cmd v2: put", o[-300:])
    rc, o = s3cmd("get", "--force", "s3://v2b/s3cmd/obj", os.path.join(d, "back"))
    t.check(rc == 0 and open(os.path.join(d, "back"), "rb").read() == DATA["big"][:300000],
            "s3cmd v2: get, byte for byte", o[-300:])
    rc, o = s3cmd("ls", "s3://v2b/s3cmd/")
    t.check(rc == 0 and "s3://v2b/s3cmd/obj" in o, "s3cmd v2: ls", o[-300:])
    rc, o = s3cmd("del", "s3://v2b/s3cmd/obj")
    t.check(rc == 0, "s3cmd v2: del", o[-300:])
else:
    print("s3cmd is not installed: its SigV2 checks skipped")

# 1 (end). deletes
v2.delete_object(Bucket="v2b", Key="copy")
doc = ("<Delete>" + "".join("<Object><Key>%s</Key></Object>" % k for k in DATA) + "</Delete>").encode()
st, code, _, _ = v2_raw("POST", "/v2b?delete", doc,
                        {"Content-MD5": base64.b64encode(hashlib.md5(doc).digest()).decode()})
t.eq((st, code), (200, None), "v2: DeleteObjects (?delete, Content-MD5 signed)")
t.eq(v4.list_objects(Bucket="v2b").get("Contents", []), [], "every object deleted")
v2.delete_bucket(Bucket="v2b")
t.check("v2b" not in [b["Name"] for b in v4.list_buckets()["Buckets"]], "boto3 v2: the bucket is gone")

# 6. SigV4 on the same cluster
v4.create_bucket(Bucket="v4b")
v4.put_object(Bucket="v4b", Key="k", Body=b"four")
t.eq(v4.get_object(Bucket="v4b", Key="k")["Body"].read(), b"four", "SigV4 still works with s3.sigv2 on")

# 7. s3.sigv2 off: a standalone target
clulib.ARGS = [a if a != "s3.sigv2=on" else "s3.sigv2=off" for a in clulib.ARGS]
off = clulib.Node("off", "target")
if t.check(off.start(), "a standalone target with s3.sigv2 off starts"):
    EP = off.url
    st, code, m, _ = v2_raw("GET", "/")
    t.check(st == 400 and code == "InvalidRequest" and "s3.sigv2" in m,
            "s3.sigv2 off: SigV2 answers 400 InvalidRequest naming s3.sigv2", (st, code, m))
    st, _, body = http_raw(EP, "GET", "/v2b/small?AWSAccessKeyId=%s&Expires=%d&Signature=x" % (AK, time.time() + 60))
    t.eq((st, code_of(body)[0]), (400, "InvalidRequest"), "s3.sigv2 off: a presigned v2 URL too")
    t.check("Buckets" in boto3_client(EP, signature_version="s3v4").list_buckets(), "s3.sigv2 off: SigV4 works")

shutil.rmtree(d, ignore_errors=True)
t.eq(error_lines(), [], "no node logged an error")
t.finish()
