"""test_s3_policy.py - S3 bucket policies and public access blocks end to
end with boto3, raw HTTP and curl, on a 1-gateway 3-target cluster with
s3.auth on and two users (the owner "aisd-test" and "uid-2") plus
anonymous (unsigned) requests.

Checks: Put/Get/DeleteBucketPolicy and GetBucketPolicyStatus; allow and
deny per action and key prefix for the other user and anonymous requests
(GetObject, PutObject, ListBucket with an s3:prefix condition,
DeleteObject); an explicit Deny wins over the owner's own rights, also
per key in DeleteObjects; the owner can always read and replace the
policy; malformed policies (not JSON, wrong types, unknown operators and
fields, another bucket's resource, over 20 KiB) are 400 MalformedPolicy
saying what is wrong and change nothing; aws:SourceIp seen through the
gateway's forwarding (curl from 127.0.0.2), a forged client header
ignored; aws:SecureTransport false over plain HTTP; s3:ExistingObjectTag of
GetObject and of Get/Put/DeleteObjectTagging (a non-matching tag 403);
s3:RequestObjectTag of PutObject's x-amz-tagging (Allow and Deny) and of a
PutObjectTagging body; StringLikeIfExists with and without the key; a
missing key 404 to who may list it by the policy (s3:prefix), else 403;
a Deny on a copies=2 bucket refused by both holders of the object (each
asked directly, signed and anonymous); PublicAccessBlock (Put/Get/
Delete; BlockPublicPolicy, RestrictPublicBuckets, IgnorePublicAcls,
BlockPublicAcls enforced); the policy surviving a gateway restart and a
holder target's restart.
"""
# timeout: 240
import json
import subprocess
import time
import xml.etree.ElementTree as ET

import boto3
import botocore.config
from botocore.exceptions import ClientError

import clulib
import hrwlib
from itlib import T
from s3lib import AK, REGION, SK, cluster, error_lines, http_raw

t = T()
AK2, SK2 = "polsecondkey", "polsecondsecret"
EP = cluster(t, "s3pol", args=["--set", "s3.key=%s:%s:uid-2:Second User" % (AK2, SK2)])
CFG = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                             signature_version="s3v4")
g, ts = cluster.nodes[0], cluster.nodes[1:]


def client(ak, sk, ep=None):
    return boto3.client("s3", endpoint_url=ep or EP, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name=REGION, config=CFG)


s3, s3b = client(AK, SK), client(AK2, SK2)


def code_of(fn, *a, **kw):
    try:
        r = fn(*a, **kw)
        return r["ResponseMetadata"]["HTTPStatusCode"], None
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code")


def err_of(fn, *a, **kw):
    try:
        fn(*a, **kw)
        return None, ""
    except ClientError as e:
        return e.response["Error"].get("Code"), e.response["Error"].get("Message", "")


def anon(method, path, ep=None, body=None, headers=None):
    return http_raw(ep or EP, method, path, body, headers)[::2]


def curl_from(src, path, headers=()):
    """An anonymous GET from source address src; its status."""
    args = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20", "--interface", src]
    for h in headers:
        args += ["-H", h]
    r = subprocess.run(args + [EP + path], capture_output=True, text=True, timeout=30)
    return int(r.stdout or 0)


def doc(*stmts):
    return json.dumps({"Version": "2012-10-17", "Statement": list(stmts)})


def put_policy(bucket, policy):
    return code_of(s3.put_bucket_policy, Bucket=bucket, Policy=policy)


ARN = "arn:aws:s3:::"
OTHER = {"AWS": ["arn:aws:iam::uid-2:root"]}

# --- the bucket, before any policy -----------------------------------------------------------------------------
s3.create_bucket(Bucket="pol")
for k in ("pub/a", "priv/b", "x", "x2", "ip/o", "tls/o", "tls2/o"):
    s3.put_object(Bucket="pol", Key=k, Body=b"bytes of " + k.encode())
s3.put_object(Bucket="pol", Key="tag/y", Body=b"tagged yes", Tagging="public=yes")
s3.put_object(Bucket="pol", Key="tag/n", Body=b"tagged no", Tagging="public=no")
t.eq(anon("GET", "/pol/pub/a")[0], 403, "no policy: anonymous GET of a private object 403")
t.eq(code_of(s3b.get_object, Bucket="pol", Key="pub/a"), (403, "AccessDenied"), "no policy: the other user 403")
t.eq(code_of(s3.get_bucket_policy, Bucket="pol"), (404, "NoSuchBucketPolicy"), "GetBucketPolicy: none yet")
t.eq(s3.get_bucket_policy_status(Bucket="pol")["PolicyStatus"]["IsPublic"], False,
     "GetBucketPolicyStatus without a policy: not public")

# --- allow and deny per action and prefix ----------------------------------------------------------------------
P1 = doc({"Sid": "PublicRead", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
          "Resource": ARN + "pol/pub/*"},
         {"Sid": "OtherList", "Effect": "Allow", "Principal": OTHER, "Action": "s3:ListBucket",
          "Resource": ARN + "pol", "Condition": {"StringLike": {"s3:prefix": "pub/*"}}},
         {"Sid": "OtherUpload", "Effect": "Allow", "Principal": {"AWS": "uid-2"}, "Action": ["s3:Put*"],
          "Resource": [ARN + "pol/upload/*"]},
         {"Sid": "KeepPriv", "Effect": "Deny", "Principal": "*", "Action": "s3:Delete*",
          "Resource": ARN + "pol/priv/*"},
         {"Sid": "IpOnly", "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": ARN + "pol/ip/*",
          "Condition": {"NotIpAddress": {"aws:SourceIp": ["127.0.0.2/32"]}}},
         {"Sid": "IpRead", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": ARN + "pol/ip/*"},
         {"Sid": "TlsOnly", "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": ARN + "pol/tls/*",
          "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
         {"Sid": "NotTls", "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": ARN + "pol/tls2/*",
          "Condition": {"Bool": {"aws:SecureTransport": True}}},
         {"Sid": "Tagged", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": ARN + "pol/tag/*",
          "Condition": {"StringEquals": {"s3:ExistingObjectTag/public": "yes"}}})
t.eq(put_policy("pol", P1), (204, None), "PutBucketPolicy: 204")
got = s3.get_bucket_policy(Bucket="pol")["Policy"]
t.eq(json.loads(got), json.loads(P1), "GetBucketPolicy: the document as put")
t.eq(s3.get_bucket_policy_status(Bucket="pol")["PolicyStatus"]["IsPublic"], True, "GetBucketPolicyStatus: public")

t.eq(anon("GET", "/pol/pub/a"), (200, b"bytes of pub/a"), "anonymous GET under pub/: allowed by the policy")
t.eq(anon("GET", "/pol/priv/b")[0], 403, "anonymous GET under priv/: still 403")
t.eq(anon("GET", "/pol?list-type=2")[0], 403, "anonymous ListObjects: not allowed")
t.eq(code_of(s3b.get_object, Bucket="pol", Key="pub/a"), (200, None), "the other user GET under pub/: allowed")
t.eq(code_of(s3b.get_object, Bucket="pol", Key="x"), (403, "AccessDenied"), "the other user GET of x: 403")
t.eq(code_of(s3b.list_objects_v2, Bucket="pol", Prefix="pub/"), (200, None),
     "the other user ListObjects prefix pub/: allowed (s3:prefix StringLike)")
t.eq(code_of(s3b.list_objects_v2, Bucket="pol"), (403, "AccessDenied"), "  without a prefix: 403")
t.eq(code_of(s3b.list_objects_v2, Bucket="pol", Prefix="priv/"), (403, "AccessDenied"), "  prefix priv/: 403")
t.eq(code_of(s3b.put_object, Bucket="pol", Key="upload/f", Body=b"up"), (200, None),
     "the other user PutObject under upload/: allowed (s3:Put*)")
t.eq(code_of(s3b.put_object, Bucket="pol", Key="elsewhere", Body=b"up"), (403, "AccessDenied"),
     "  elsewhere: 403")
t.eq(s3b.get_object(Bucket="pol", Key="upload/f")["Body"].read(), b"up", "the upload is there (its writer reads it)")
code, msg = err_of(s3.delete_object, Bucket="pol", Key="priv/b")
t.check(code == "AccessDenied" and "bucket policy" in msg, "the owner's DeleteObject under priv/: explicit Deny wins",
        (code, msg))
t.eq(s3.get_object(Bucket="pol", Key="priv/b")["Body"].read(), b"bytes of priv/b", "  priv/b is still there")
t.eq(code_of(s3.delete_object, Bucket="pol", Key="x"), (204, None), "the owner's DeleteObject of x: allowed")
r = s3.delete_objects(Bucket="pol", Delete={"Objects": [{"Key": "priv/b"}, {"Key": "x2"}]})
t.eq(([e["Key"] for e in r.get("Errors", [])], [e["Code"] for e in r.get("Errors", [])],
      [d["Key"] for d in r.get("Deleted", [])]), (["priv/b"], ["AccessDenied"], ["x2"]),
     "DeleteObjects: the denied key refused, the other deleted")
t.eq(code_of(s3.head_object, Bucket="pol", Key="priv/b"), (200, None), "  priv/b is still there")

# conditions: aws:SourceIp (through the gateway's forwarding), SecureTransport, ExistingObjectTag
t.eq(curl_from("127.0.0.2", "/pol/ip/o"), 200, "anonymous GET from 127.0.0.2: allowed (aws:SourceIp)")
t.eq(curl_from("127.0.0.1", "/pol/ip/o"), 403, "  from 127.0.0.1: denied (NotIpAddress)")
t.eq(code_of(s3.get_object, Bucket="pol", Key="tls/o"), (403, "AccessDenied"),
     "Deny when aws:SecureTransport is false: the owner's plain-HTTP GET refused")
t.eq(code_of(s3.get_object, Bucket="pol", Key="tls2/o"), (200, None),
     "Deny when aws:SecureTransport is true: a plain-HTTP GET is not")
t.eq(anon("GET", "/pol/tag/y"), (200, b"tagged yes"), "anonymous GET of an object tagged public=yes: allowed")
t.eq(anon("GET", "/pol/tag/n")[0], 403, "  tagged public=no: 403 (s3:ExistingObjectTag)")

# tag conditions of the tagging actions and of writes, IfExists, a missing key to who may list the bucket
s3.create_bucket(Bucket="ptag")
TAGS = {"pub": [("security", "public"), ("foo", "bar")], "priv": [("security", "private")],
        "none": [("security1", "public")]}
for pre in ("g/", "p/", "d/"):
    for k, tags in TAGS.items():
        s3.put_object(Bucket="ptag", Key=pre + k, Body=b"tagged " + k.encode())
        s3.put_object_tagging(Bucket="ptag", Key=pre + k, Tagging={"TagSet": [{"Key": a, "Value": b}
                                                                            for a, b in tags]})
for k in ("rt/o", "ref/o"):
    s3.put_object(Bucket="ptag", Key=k, Body=b"bytes of " + k.encode())
PUBLIC = {"StringEquals": {"s3:ExistingObjectTag/security": "public"}}
t.eq(put_policy("ptag", doc(
    {"Effect": "Allow", "Principal": OTHER, "Action": "s3:GetObjectTagging", "Resource": ARN + "ptag/g/*",
     "Condition": PUBLIC},
    {"Effect": "Allow", "Principal": OTHER, "Action": "s3:PutObjectTagging", "Resource": ARN + "ptag/p/*",
     "Condition": PUBLIC},
    {"Effect": "Allow", "Principal": OTHER, "Action": "s3:DeleteObjectTagging", "Resource": ARN + "ptag/d/*",
     "Condition": PUBLIC},
    {"Effect": "Allow", "Principal": OTHER, "Action": "s3:PutObject", "Resource": ARN + "ptag/r/*",
     "Condition": {"StringEquals": {"s3:RequestObjectTag/security": "public"}}},
    {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": ARN + "ptag/r/*",
     "Condition": {"StringEquals": {"s3:RequestObjectTag/security": "secret"}}},
    {"Effect": "Allow", "Principal": OTHER, "Action": "s3:PutObjectTagging", "Resource": ARN + "ptag/rt/*",
     "Condition": {"StringEquals": {"s3:RequestObjectTag/security": "public"}}},
    {"Effect": "Allow", "Principal": OTHER, "Action": "s3:GetObject", "Resource": ARN + "ptag/ref/*",
     "Condition": {"StringLikeIfExists": {"aws:Referer": "http://www.example.com/*"}}},
    {"Effect": "Allow", "Principal": OTHER, "Action": "s3:ListBucket", "Resource": ARN + "ptag",
     "Condition": {"StringLike": {"s3:prefix": "list/*"}}})), (204, None), "ptag: a policy of tag conditions")


def tagset(*kv):
    return {"TagSet": [{"Key": k, "Value": v} for k, v in kv]}


r = s3b.get_object_tagging(Bucket="ptag", Key="g/pub")
t.eq(sorted((x["Key"], x["Value"]) for x in r["TagSet"]), [("foo", "bar"), ("security", "public")],
     "the other user's GetObjectTagging of an object tagged security=public: allowed (s3:ExistingObjectTag)")
t.eq(code_of(s3b.get_object_tagging, Bucket="ptag", Key="g/priv"), (403, "AccessDenied"),
     "  of one tagged security=private: 403")
t.eq(code_of(s3b.get_object_tagging, Bucket="ptag", Key="g/none"), (403, "AccessDenied"),
     "  of one without the tag: 403")
t.eq(code_of(s3b.get_object, Bucket="ptag", Key="g/pub"), (403, "AccessDenied"),
     "  its GetObject: 403 (only s3:GetObjectTagging allowed)")
t.eq(code_of(s3b.get_object_tagging, Bucket="ptag", Key="g/missing"), (403, "AccessDenied"),
     "  of a missing key, without s3:ListBucket: 403")
t.eq(code_of(s3b.put_object_tagging, Bucket="ptag", Key="p/pub",
             Tagging=tagset(("security", "public"), ("foo", "baz"))), (200, None),
     "the other user's PutObjectTagging of an object tagged security=public: allowed")
t.eq(code_of(s3b.put_object_tagging, Bucket="ptag", Key="p/priv", Tagging=tagset(("security", "public"))),
     (403, "AccessDenied"), "  of one tagged security=private: 403, its tags unchanged")
t.eq(s3.get_object_tagging(Bucket="ptag", Key="p/priv")["TagSet"], [{"Key": "security", "Value": "private"}],
     "  (p/priv still security=private)")
t.eq(code_of(s3b.put_object_tagging, Bucket="ptag", Key="p/pub", Tagging=tagset(("security", "private"))),
     (200, None), "  p/pub retagged security=private (its tags were public)")
t.eq(code_of(s3b.put_object_tagging, Bucket="ptag", Key="p/pub", Tagging=tagset(("security", "public"))),
     (403, "AccessDenied"), "  then refused: the existing tags decide")
t.eq(code_of(s3b.delete_object_tagging, Bucket="ptag", Key="d/priv"), (403, "AccessDenied"),
     "the other user's DeleteObjectTagging of an object tagged security=private: 403")
t.eq(code_of(s3b.delete_object_tagging, Bucket="ptag", Key="d/pub"), (204, None), "  of one tagged public: 204")
t.eq(s3.get_object_tagging(Bucket="ptag", Key="d/pub")["TagSet"], [], "  its tags are gone")

# s3:RequestObjectTag: x-amz-tagging of PutObject, the body of PutObjectTagging
t.eq(code_of(s3b.put_object, Bucket="ptag", Key="r/o", Body=b"r"), (403, "AccessDenied"),
     "the other user's PutObject without x-amz-tagging: 403 (s3:RequestObjectTag absent)")
t.eq(code_of(s3b.put_object, Bucket="ptag", Key="r/o", Body=b"r", Tagging="security=private"), (403, "AccessDenied"),
     "  with security=private: 403")
t.eq(code_of(s3b.put_object, Bucket="ptag", Key="r/o", Body=b"r", Tagging="foo=1&security=public"), (200, None),
     "  with security=public: allowed")
t.eq(s3.get_object_tagging(Bucket="ptag", Key="r/o")["TagSet"],
     [{"Key": "foo", "Value": "1"}, {"Key": "security", "Value": "public"}], "  the object has those tags")
t.eq(code_of(s3.put_object, Bucket="ptag", Key="r/s", Body=b"s", Tagging="security=secret"), (403, "AccessDenied"),
     "the owner's PutObject tagged security=secret: 403 (a Deny on s3:RequestObjectTag)")
t.eq(code_of(s3.put_object, Bucket="ptag", Key="r/s", Body=b"s", Tagging="security=other"), (200, None),
     "  tagged otherwise: allowed")
t.eq(code_of(s3b.put_object_tagging, Bucket="ptag", Key="rt/o", Tagging=tagset(("security", "private"))),
     (403, "AccessDenied"), "the other user's PutObjectTagging setting security=private: 403")
t.eq(code_of(s3b.put_object_tagging, Bucket="ptag", Key="rt/o", Tagging=tagset(("security", "public"))),
     (200, None), "  setting security=public: allowed (s3:RequestObjectTag of the body)")


def referer_client(value):
    c = client(AK2, SK2)
    if value is not None:
        c.meta.events.register("before-call.s3.GetObject",
                               lambda **kw: kw["params"]["headers"].update({"Referer": value}))
    return c


t.eq(code_of(referer_client(None).get_object, Bucket="ptag", Key="ref/o"), (200, None),
     "StringLikeIfExists aws:Referer: a GET without Referer allowed (the key is absent)")
t.eq(code_of(referer_client("http://www.example.com/a.html").get_object, Bucket="ptag", Key="ref/o"), (200, None),
     "  with a Referer that matches: allowed")
t.eq(code_of(referer_client("http://example.com").get_object, Bucket="ptag", Key="ref/o"), (403, "AccessDenied"),
     "  with one that does not: 403")

# a missing key: 404 to who may list the bucket (s3:ListBucket with the key as s3:prefix), else 403
t.eq(code_of(s3b.head_object, Bucket="ptag", Key="list/nothing"), (404, "404"),
     "the other user's HEAD of a missing key under list/: 404 (s3:ListBucket, s3:prefix list/*)")
t.eq(code_of(s3b.get_object, Bucket="ptag", Key="list/nothing"), (404, "NoSuchKey"), "  its GET: 404 NoSuchKey")
t.eq(code_of(s3b.head_object, Bucket="ptag", Key="other/nothing"), (403, "403"),
     "  of a missing key elsewhere: 403")
t.eq(code_of(s3.head_object, Bucket="ptag", Key="other/nothing"), (404, "404"), "  the owner's: 404")

# the owner keeps control of the policy, whatever it says
LOCK = doc({"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": [ARN + "pol", ARN + "pol/*"]})
t.eq(put_policy("pol", LOCK), (204, None), "a policy that denies everything to everyone")
t.eq(code_of(s3.list_objects_v2, Bucket="pol"), (403, "AccessDenied"), "  the owner's ListObjects: 403")
t.eq(code_of(s3.get_bucket_policy, Bucket="pol"), (200, None), "  the owner still reads the policy")
t.eq(put_policy("pol", P1), (204, None), "  and replaces it")
t.eq(code_of(s3b.put_bucket_policy, Bucket="pol", Policy=P1), (403, "AccessDenied"),
     "the other user's PutBucketPolicy: 403")

# --- malformed policies ----------------------------------------------------------------------------------------------
BAD = [
    ("not JSON", "{\"Version\": ", "valid JSON"),
    ("a JSON array", "[]", "first byte"),
    ("no Statement", json.dumps({"Version": "2012-10-17"}), "Statement"),
    ("Effect Maybe", doc({"Effect": "Maybe", "Principal": "*", "Action": "s3:GetObject", "Resource": ARN + "pol/*"}),
     "Effect"),
    ("Action a number", doc({"Effect": "Allow", "Principal": "*", "Action": 7, "Resource": ARN + "pol/*"}), "Action"),
    ("no Resource", doc({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject"}), "Resource"),
    ("another bucket", doc({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                            "Resource": ARN + "other/*"}), "resource"),
    ("an unknown operator", doc({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                                 "Resource": ARN + "pol/*", "Condition": {"StringSortOf": {"s3:prefix": "a"}}}),
     "StringSortOf"),
    ("a bad IP", doc({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": ARN + "pol/*",
                      "Condition": {"IpAddress": {"aws:SourceIp": "300.1.2.3/8"}}}), "IP"),
    ("an unknown field", doc({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                              "Resource": ARN + "pol/*", "Colour": "red"}), "Colour"),
    ("a non-s3 action", doc({"Effect": "Allow", "Principal": "*", "Action": "ec2:RunInstances",
                             "Resource": ARN + "pol/*"}), "action"),
    ("over 20 KiB", doc(*[{"Sid": "s%d" % i, "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                           "Resource": ARN + "pol/k%05d" % i} for i in range(400)]), "20480"),
]
for what, body, word in BAD:
    code, msg = err_of(s3.put_bucket_policy, Bucket="pol", Policy=body)
    t.check(code == "MalformedPolicy" and word in msg, "PutBucketPolicy with %s: 400 MalformedPolicy naming it" % what,
            (code, msg))
t.eq(json.loads(s3.get_bucket_policy(Bucket="pol")["Policy"]), json.loads(P1), "the policy is unchanged after them")

# a forged client address from a client that is no node is not believed
t.eq(curl_from("127.0.0.3", "/pol/ip/o", ["Ais-S3-Client: 127.0.0.2 1"]), 403,
     "a client's own Ais-S3-Client header is ignored (127.0.0.3 claiming 127.0.0.2)")

# --- a Deny on a copies=2 bucket holds on both holders ---------------------------------------------------------------
s3.create_bucket(Bucket="mir")
mp = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(clulib.request("PATCH", g.url, "/v1/buckets/mir", mp, {"Content-Type": "application/json"}).status, 200,
     "mir: mirror.copies=2")
s3.put_object(Bucket="mir", Key="secret", Body=b"mirrored secret")
s3.put_object(Bucket="mir", Key="open", Body=b"mirrored open")
t.eq(put_policy("mir", doc({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": ARN + "mir/*"},
                           {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
                            "Resource": ARN + "mir/secret"})), (204, None), "mir: allow all reads but deny secret")
holders = [n for i in hrwlib.top("mir/secret", [n.id for n in ts], 2) for n in ts if n.id == i]
t.eq([anon("GET", "/mir/secret", ep=n.url)[0] for n in holders], [403, 403],
     "anonymous GET of the denied object at each of its two holders: 403")
t.eq([code_of(client(AK, SK, n.url).get_object, Bucket="mir", Key="secret") for n in holders],
     [(403, "AccessDenied")] * 2, "the owner's GET at each holder: 403 (deny wins)")
oh = [n for i in hrwlib.top("mir/open", [n.id for n in ts], 2) for n in ts if n.id == i]
t.eq([anon("GET", "/mir/open", ep=n.url) for n in oh], [(200, b"mirrored open")] * 2,
     "anonymous GET of the allowed object at each holder: 200")

# --- public access block ---------------------------------------------------------------------------------------------
t.eq(code_of(s3.get_public_access_block, Bucket="pol"), (404, "NoSuchPublicAccessBlockConfiguration"),
     "GetPublicAccessBlock: none yet")
s3.put_object(Bucket="pol", Key="acl/o", Body=b"public by ACL", ACL="public-read")
t.eq(anon("GET", "/pol/acl/o")[0], 200, "a public-read object: anonymous GET 200")


def pab(**kw):
    cfg = {k: kw.get(k, False) for k in ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy",
                                         "RestrictPublicBuckets")}
    return code_of(s3.put_public_access_block, Bucket="pol", PublicAccessBlockConfiguration=cfg)


t.eq(pab(BlockPublicPolicy=True), (200, None), "PutPublicAccessBlock BlockPublicPolicy")
t.eq(s3.get_public_access_block(Bucket="pol")["PublicAccessBlockConfiguration"],
     {"BlockPublicAcls": False, "IgnorePublicAcls": False, "BlockPublicPolicy": True, "RestrictPublicBuckets": False},
     "GetPublicAccessBlock: as put")
t.eq(code_of(s3.put_bucket_policy, Bucket="pol", Policy=P1), (403, "AccessDenied"),
     "BlockPublicPolicy: a public policy refused")
PRIV = doc({"Effect": "Allow", "Principal": OTHER, "Action": "s3:GetObject", "Resource": ARN + "pol/*"})
t.eq(code_of(s3.put_bucket_policy, Bucket="pol", Policy=PRIV), (204, None), "  a policy for one user is not public")
t.eq(s3.get_bucket_policy_status(Bucket="pol")["PolicyStatus"]["IsPublic"], False, "  PolicyStatus: not public")
s3.create_bucket(Bucket="pubacl", ACL="public-read")
t.eq(s3.get_bucket_policy_status(Bucket="pubacl")["PolicyStatus"]["IsPublic"], True,
     "GetBucketPolicyStatus of a public-read bucket without a policy: public (its ACL)")
t.eq(pab(), (200, None), "PutPublicAccessBlock all false")
t.eq(put_policy("pol", P1), (204, None), "  the public policy again")
t.eq(pab(RestrictPublicBuckets=True), (200, None), "RestrictPublicBuckets")
t.eq(anon("GET", "/pol/pub/a")[0], 403, "  the public policy's Allow no longer lets anonymous read")
t.eq(code_of(s3.get_object, Bucket="pol", Key="pub/a"), (200, None), "  the owner still reads")
t.eq(pab(IgnorePublicAcls=True), (200, None), "IgnorePublicAcls")
t.eq(anon("GET", "/pol/acl/o")[0], 403, "  the public-read ACL counts for nothing")
t.eq(pab(BlockPublicAcls=True), (200, None), "BlockPublicAcls")
t.eq(anon("GET", "/pol/acl/o")[0], 200, "  (public ACLs count again)")
t.eq(code_of(s3.put_object_acl, Bucket="pol", Key="pub/a", ACL="public-read"), (403, "AccessDenied"),
     "  PutObjectAcl public-read refused")
t.eq(code_of(s3.put_object, Bucket="pol", Key="new", Body=b"n", ACL="public-read"), (403, "AccessDenied"),
     "  PutObject x-amz-acl public-read refused")
t.eq(code_of(s3.put_bucket_acl, Bucket="pol", ACL="public-read"), (403, "AccessDenied"),
     "  PutBucketAcl public-read refused")
t.eq(code_of(s3.put_object, Bucket="pol", Key="new", Body=b"n", ACL="private"), (200, None), "  a private one is fine")
t.eq(code_of(s3.delete_public_access_block, Bucket="pol"), (204, None), "DeletePublicAccessBlock: 204")
t.eq(code_of(s3.get_public_access_block, Bucket="pol"), (404, "NoSuchPublicAccessBlockConfiguration"),
     "  GetPublicAccessBlock: none")
t.eq(anon("GET", "/pol/pub/a")[0], 200, "  the public policy reads again")

# --- the policy survives restarts ----------------------------------------------------------------------------------
clulib.procs[g.name].terminate()
clulib.procs[g.name].wait(30)
t.check(g.start(), "the gateway restarts")
ok = clulib.poll(lambda: code_of(s3.get_bucket_policy, Bucket="pol")[0] == 200, 20)
t.check(ok and json.loads(s3.get_bucket_policy(Bucket="pol")["Policy"]) == json.loads(P1),
        "after the gateway's restart: GetBucketPolicy the same document")
t.eq(anon("GET", "/pol/pub/a")[0], 200, "  anonymous GET under pub/ allowed")
t.eq(anon("GET", "/pol/priv/b")[0], 403, "  under priv/ denied")
victim = holders[0]
victim.kill9()
t.check(victim.start(join=g.url), "a holder of mir/secret restarts (SIGKILL)")
t.eq(anon("GET", "/mir/secret", ep=victim.url)[0], 403, "  it still refuses the denied object")
t.eq(anon("GET", "/mir/open", ep=oh[0].url)[0], 200, "  and serves the allowed one")

t.eq(code_of(s3.delete_bucket_policy, Bucket="pol"), (204, None), "DeleteBucketPolicy: 204")
t.eq(code_of(s3.get_bucket_policy, Bucket="pol"), (404, "NoSuchBucketPolicy"), "  GetBucketPolicy: none")
t.eq(anon("GET", "/pol/pub/a")[0], 403, "  anonymous GET under pub/: 403 again")

t.eq(error_lines(), [], "no error-level log line on any node")
t.finish()
