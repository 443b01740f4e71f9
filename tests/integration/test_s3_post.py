"""test_s3_post.py - S3 browser-based uploads (POST Object with an HTML
form) end to end on a 1-gateway 3-target cluster with s3.auth on: forms
signed by boto3's generate_presigned_post (SigV4) and by hand (SigV2),
sent with Python's standard library (a hand-built multipart/form-data
body) and curl -F.

Checks: a 0 B, a small and a 6 MiB file read back byte for byte (through
the gateway, which routes the form to the key's owner, and sent straight
to a target that is not the owner); ${filename} in the key; Content-Type,
x-amz-meta-*, acl and tagging fields applied; success_action_status 200,
201 (PostResponse document) and 204, success_action_redirect's 303 with
bucket, key and etag; conditions refusing (starts-with, eq, an extra
field, content-length-range too large and too small), an expired policy,
a bad signature, an unknown key; anonymous forms refused on a private
bucket and taken on a public-read-write one; hostile bodies (no
boundary, no file, no key, a truncated form, fields over the limit, not
a form at all) answered 400 with the node still serving; a copies=2
bucket holding the posted object on both holders; x-amz-checksum-*
fields verified; the runner's standalone target (s3.auth off) storing a
form itself, its policy still checked.
"""
# timeout: 180
# aisd-args: --set s3.auth=off
import base64
import datetime
import hashlib
import hmac
import json
import os
import subprocess
import tempfile
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET

import boto3
import botocore.config
from botocore.exceptions import ClientError

import clulib
import hrwlib
import itlib
from itlib import T
from s3lib import AK, REGION, SK, cluster, error_lines, http_raw

t = T()
EP = cluster(t, "s3post")
CFG = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                             signature_version="s3v4")
g, ts = cluster.nodes[0], cluster.nodes[1:]


def client(ep=None):
    return boto3.client("s3", endpoint_url=ep or EP, aws_access_key_id=AK, aws_secret_access_key=SK,
                        region_name=REGION, config=CFG)


s3 = client()
s3.create_bucket(Bucket="upl")
B = "----aisdform7MA4YWxkTrZu0gW"


def body_of(fields, data, filename="f.bin", boundary=B, close=True):
    """A multipart/form-data body: the fields in order, then the file."""
    out = b""
    for k, v in fields:
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n" % (boundary, k)).encode()
        out += (v if isinstance(v, bytes) else str(v).encode()) + b"\r\n"
    if data is not None:
        out += ("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n" % (boundary, filename)).encode()
        out += data + b"\r\n"
    if close:
        out += ("--%s--\r\n" % boundary).encode()
    return out


def post(path, body, ctype="multipart/form-data; boundary=" + B, ep=None):
    """A POST with urllib: (status, headers, body); never raises for a status."""
    rq = urllib.request.Request((ep or EP) + path, data=body, method="POST", headers={"Content-Type": ctype})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a):
            return None

    try:
        r = urllib.request.build_opener(NoRedirect).open(rq, timeout=60)
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def code(body):
    try:
        r = ET.fromstring(body)
        return r.findtext("Code"), r.findtext("Message") or ""
    except ET.ParseError:
        return None, body[:200]


def presigned(key, fields=None, conditions=None, expires=600, bucket="upl"):
    p = s3.generate_presigned_post(Bucket=bucket, Key=key, Fields=fields, Conditions=conditions, ExpiresIn=expires)
    return list(p["fields"].items())


def get(key, bucket="upl", c=None):
    return (c or s3).get_object(Bucket=bucket, Key=key)["Body"].read()


# --- uploads read back ------------------------------------------------------------------------------------------------
small = os.urandom(1000) + b"\r\n--" + B.encode()[:10] + b"\r\r\n"  # looks like a boundary, is not one
st, h, b = post("/upl", body_of(presigned("small"), small))
t.check(st == 204, "a presigned POST of a small file: 204 by default", (st, b[:400]))
t.eq(get("small"), small, "  read back byte for byte (bytes like a boundary kept)")
t.eq(h.get("etag"), '"%s"' % hashlib.md5(small).hexdigest(), "  its ETag is the file's MD5")

st, h, b = post("/upl", body_of(presigned("empty"), b""))
t.eq((st, get("empty")), (204, b""), "a 0 B file: 204, read back empty")

big = os.urandom(6 << 20)
with tempfile.TemporaryDirectory() as d:
    fp = os.path.join(d, "big.bin")
    with open(fp, "wb") as f:
        f.write(big)
    args = ["curl", "-sv", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20"]
    for k, v in presigned("big"):
        args += ["-F", "%s=%s" % (k, v)]
    r = subprocess.run(args + ["-F", "file=@" + fp, EP + "/upl"], capture_output=True, text=True, timeout=90)
t.check(r.stdout == "204", "curl -F of a 6 MiB file: 204", r.stderr[-1500:])
t.check(get("big") == big, "  read back byte for byte")

st, h, b = post("/upl", body_of(presigned("big0"), big))
t.check(st == 204 and get("big0") == big, "a 6 MiB file with urllib: 204, read back byte for byte", (st, b[:300]))
# sent straight to a target that is not the key's owner: it forwards the form
owner = hrwlib.top("upl/direct", [n.id for n in ts], 1)[0]
other = [n for n in ts if n.id != owner][0]
st, h, b = post("/upl", body_of(presigned("direct"), small), ep=other.url)
t.eq((st, get("direct")), (204, small), "a form sent to a target that does not own the key: forwarded, stored")

# --- fields applied -------------------------------------------------------------------------------------------------------
f = presigned("docs/${filename}", fields={"Content-Type": "text/plain", "x-amz-meta-color": "blue",
                                          "acl": "public-read"},
              conditions=[{"Content-Type": "text/plain"}, {"x-amz-meta-color": "blue"}, {"acl": "public-read"}])
st, h, b = post("/upl", body_of(f, b"hello form", filename="hello.txt"))
t.eq(st, 204, "a form with Content-Type, x-amz-meta-color, acl and ${filename}: 204")
hd = s3.head_object(Bucket="upl", Key="docs/hello.txt")
t.eq((hd["ContentType"], hd["Metadata"]), ("text/plain", {"color": "blue"}), "  key, type and metadata as given")
t.eq(http_raw(EP, "GET", "/upl/docs/hello.txt")[::2], (200, b"hello form"), "  public-read: an anonymous GET reads it")

tag = "<Tagging><TagSet><Tag><Key>k 1</Key><Value>v&amp;1</Value></Tag></TagSet></Tagging>"
st, h, b = post("/upl", body_of(presigned("tagged", fields={"tagging": tag}, conditions=[{"tagging": tag}]), b"t"))
t.eq(st, 204, "a form with a tagging document: 204")
t.eq(s3.get_object_tagging(Bucket="upl", Key="tagged")["TagSet"], [{"Key": "k 1", "Value": "v&1"}], "  its tags set")

ck = base64.b64encode(hashlib.sha256(b"summed").digest()).decode()
st, h, b = post("/upl", body_of(presigned("ck") + [("x-amz-checksum-sha256", ck)], b"summed"))
t.eq((st, h.get("x-amz-checksum-sha256")), (204, ck), "an x-amz-checksum-sha256 field of the file: verified, answered")
st, h, b = post("/upl", body_of(presigned("ckbad") + [("x-amz-checksum-sha256", ck)], b"not summed"))
t.eq((st, code(b)[0]), (400, "BadDigest"), "  a wrong one: 400 BadDigest")

# --- answers ------------------------------------------------------------------------------------------------------------
st, h, b = post("/upl", body_of(presigned("s201", fields={"success_action_status": "201"},
                                         conditions=[{"success_action_status": "201"}]), b"x"))
doc = ET.fromstring(b)
t.eq((st, doc.tag, doc.findtext("Bucket"), doc.findtext("Key"), doc.findtext("ETag")),
     (201, "PostResponse", "upl", "s201", '"%s"' % hashlib.md5(b"x").hexdigest()),
     "success_action_status 201: a PostResponse (no namespace, as S3) with bucket, key and ETag")
st, h, b = post("/upl", body_of(presigned("s200", fields={"success_action_status": "200"},
                                         conditions=[{"success_action_status": "200"}]), b"x"))
t.eq((st, b), (200, b""), "success_action_status 200: 200, empty")
rd = "http://example.invalid/done?x=1"
st, h, b = post("/upl", body_of(presigned("red", fields={"success_action_redirect": rd},
                                         conditions=[{"success_action_redirect": rd}]), b"r"))
t.eq((st, h.get("location")), (303, rd + "&bucket=upl&key=red&etag=%22" + hashlib.md5(b"r").hexdigest() + "%22"),
     "success_action_redirect: 303 to it with bucket, key and etag")

# --- conditions refusing ---------------------------------------------------------------------------------------------------
f = presigned("uploads/${filename}", conditions=[["starts-with", "$key", "uploads/"]])
f = [(k, "other/x" if k == "key" else v) for k, v in f]
st, h, b = post("/upl", body_of(f, b"no"))
t.eq((st, code(b)[0]), (403, "AccessDenied"), "a key outside starts-with: 403 AccessDenied")
t.check("Invalid according to Policy" in code(b)[1], "  'Invalid according to Policy: ...'", code(b)[1])
st, h, b = post("/upl", body_of(presigned("extra") + [("x-amz-meta-sneaky", "1")], b"no"))
t.eq((st, code(b)[0]), (403, "AccessDenied"), "a field the policy does not name: 403")
t.check("Extra input fields" in code(b)[1], "  'Extra input fields'", code(b)[1])
f = presigned("ct", fields={"Content-Type": "text/plain"}, conditions=[["eq", "$Content-Type", "text/plain"]])
f = [(k, "text/html" if k == "Content-Type" else v) for k, v in f]
t.eq(code(post("/upl", body_of(f, b"no"))[2])[0], "AccessDenied", "an eq condition not met: AccessDenied")
f = presigned("any-sse", conditions=[["starts-with", "$x-amz-server-side-encryption", ""]])
t.eq(post("/upl", body_of(f, b"any"))[0], 204, "starts-with \"\" of a field the form lacks: met (any value)")
f = presigned("some-sse", conditions=[["starts-with", "$x-amz-server-side-encryption", "AES"]])
t.eq(code(post("/upl", body_of(f, b"no"))[2])[0], "AccessDenied", "starts-with \"AES\" of a field the form lacks: 403")
rng = presigned("range", conditions=[["content-length-range", 10, 20]])
st, h, b = post("/upl", body_of(rng, b"y" * 100))
t.eq((st, code(b)[0]), (400, "EntityTooLarge"), "over content-length-range: 400 EntityTooLarge")
st, h, b = post("/upl", body_of(rng, b"y" * 5))
t.eq((st, code(b)[0]), (400, "EntityTooSmall"), "under content-length-range: 400 EntityTooSmall")
st, h, b = post("/upl", body_of(rng, b"y" * 15))
t.eq(st, 204, "within content-length-range: 204")
st, h, b = post("/upl", body_of(presigned("expired", expires=-60), b"late"))
t.eq((st, code(b)[0]), (403, "AccessDenied"), "an expired policy: 403 AccessDenied")
t.check("expired" in code(b)[1], "  the message says expired", code(b)[1])
f = [(k, ("0" * 64) if k == "x-amz-signature" else v) for k, v in presigned("badsig")]
t.eq(code(post("/upl", body_of(f, b"no"))[2])[0], "SignatureDoesNotMatch", "a bad signature: SignatureDoesNotMatch")
f = [(k, "nosuchkey" + v[len(AK):] if k == "x-amz-credential" else v) for k, v in presigned("badkey")]
t.eq(code(post("/upl", body_of(f, b"no"))[2])[0], "InvalidAccessKeyId", "an unknown key: InvalidAccessKeyId")
for k in ("expired", "badsig", "badkey", "extra", "ct", "ckbad"):
    try:
        s3.head_object(Bucket="upl", Key=k)
        t.fail("refused form %s left an object" % k)
        break
    except ClientError:
        pass
else:
    t.ok("no refused form left an object")

# SigV2 (AWSAccessKeyId + signature), as older clients and s3-tests send
exp = (datetime.datetime.utcnow() + datetime.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
pol = base64.b64encode(json.dumps({"expiration": exp, "conditions": [{"bucket": "upl"}, ["starts-with", "$key", "v2/"]]}).encode())
sig = base64.b64encode(hmac.new(SK.encode(), pol, hashlib.sha1).digest())
st, h, b = post("/upl", body_of([("key", "v2/obj"), ("AWSAccessKeyId", AK), ("policy", pol), ("signature", sig)], b"v2"))
t.eq((st, get("v2/obj")), (204, b"v2"), "a SigV2-signed form: 204, stored")

# --- anonymous forms: the bucket's ACL decides -------------------------------------------------------------------------
st, h, b = post("/upl", body_of([("key", "anon")], b"a"))
t.eq((st, code(b)[0]), (403, "AccessDenied"), "an anonymous form to a private bucket: 403")
s3.create_bucket(Bucket="pub", ACL="public-read-write")
st, h, b = post("/pub", body_of([("key", "anon-acl"), ("acl", "public-read")], b"a"))
t.eq((st, get("anon-acl", "pub")), (204, b"a"), "an anonymous form with a canned acl field: stored")
grants = s3.get_object_acl(Bucket="pub", Key="anon-acl")["Grants"]
t.eq(sorted((x["Grantee"].get("URI", x["Grantee"].get("ID")), x["Permission"]) for x in grants),
     sorted([("http://acs.amazonaws.com/groups/global/AllUsers", "READ"), (s3.list_buckets()["Owner"]["ID"],
                                                                           "FULL_CONTROL")]),
     "... with that ACL, owned by the bucket's owner")
st, h, b = post("/pub", body_of([("key", "anon-grant"), ("x-amz-grant-read", 'id="x"')], b"a"))
t.check((st, code(b)[0]) == (403, "AccessDenied") and "grant by header" in code(b)[1],
        "an anonymous form granting by header: 403", (st, b[:300]))
st, h, b = post("/pub", body_of([("key", "anon")], b"anon bytes"))
t.eq((st, get("anon", "pub")), (204, b"anon bytes"), "an anonymous form to a public-read-write bucket: stored")

# --- hostile bodies ------------------------------------------------------------------------------------------------------
ok = presigned("hostile")
cases = [
    ("no boundary", body_of(ok, b"x"), "multipart/form-data", "MalformedPOSTRequest"),
    ("no file", body_of(ok, None), None, "InvalidArgument"),
    ("no key", body_of([(k, v) for k, v in ok if k != "key"], b"x"), None, "InvalidArgument"),
    ("truncated form", body_of(ok, b"x" * 5000, close=False)[:-3000], None, "MalformedPOSTRequest"),
    ("fields over 64 KiB", body_of(ok + [("x-ignore-pad", "p" * (70 << 10))], b"x"), None, "MalformedPOSTRequest"),
    ("garbage", os.urandom(3000), None, "MalformedPOSTRequest"),
    ("a field without a name", b"--" + B.encode() + b"\r\nContent-Disposition: form-data\r\n\r\nv\r\n--" + B.encode()
     + b"--\r\n", None, "MalformedPOSTRequest"),
]
for what, body, ct, want in cases:
    st, h, b = post("/upl", body, **({"ctype": ct} if ct else {}))
    t.eq((st, code(b)[0]), (400, want), "%s: 400 %s" % (what, want))
t.eq(code(http_raw(EP, "POST", "/upl", b"{}", {"Content-Type": "application/json"})[2])[0], "AccessDenied",
     "an anonymous POST that is not a form: AccessDenied as before")
t.eq(get("small"), small, "the cluster still serves after the hostile forms")

# --- a copies=2 bucket ---------------------------------------------------------------------------------------------------
s3.create_bucket(Bucket="mir")
mp = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(clulib.request("PATCH", g.url, "/v1/buckets/mir", mp, {"Content-Type": "application/json"}).status, 200,
     "mir: mirror.copies=2")
data = os.urandom(300 << 10)
st, h, b = post("/mir", body_of(presigned("m/obj", bucket="mir"), data))
t.eq(st, 204, "a form to the copies=2 bucket: 204")
intra = [n.name for n in ts
         if clulib.get(n.url, "/v1/objects/mir/m/obj", headers={"Ais-Intra": "test"}).status == 200]
t.eq(sorted(intra), sorted(n.name for i in hrwlib.top("mir/m/obj", [n.id for n in ts], 2) for n in ts if n.id == i),
     "  a copy on exactly its two HRW holders (asked with Ais-Intra on every target)")
t.check(all(get("m/obj", "mir", client(n.url)) == data for n in ts), "  read back byte for byte through every target")

# --- a standalone target (the runner's, s3.auth off): served where it is received -------------------------------------
SA = os.environ["AISD_URL"]
t.eq(itlib.create_bucket("solo").status, 200, "standalone target: bucket solo created")
st, h, b = post("/solo", body_of([("key", "alone/${filename}")], small, filename="s.bin"), ep=SA)
t.check((st, itlib.req("GET", "/v1/objects/solo/alone/s.bin").body) == (204, small),
     "a form to a standalone target with s3.auth off: stored, read back natively", (st, b[:300]))
late = base64.b64encode(json.dumps({"expiration": "2020-01-01T00:00:00Z", "conditions": []}).encode())
st, h, b = post("/solo", body_of([("key", "late"), ("policy", late)], b"x"), ep=SA)
t.eq((st, code(b)[0]), (403, "AccessDenied"), "  a policy is still checked with s3.auth off (expired: 403)")

t.eq(error_lines(), [], "no error-level log line on any node")
t.finish()
