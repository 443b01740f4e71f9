"""test_s3_tagging.py - S3 object tags through the object layer: set on
every copy of a copies=2 bucket, kept across a kill and a restart, and
S3's limits. 1 gateway + 3 targets on loopback ports, stopped by PID.

Checks:
 1. PutObjectTagging / GetObjectTagging / DeleteObjectTagging (boto3):
    the set comes back sorted by key; HEAD and GET carry
    x-amz-tagging-count; a new set replaces the old; after Delete the set
    is empty and the header is gone; the bytes and the ETag stay.
 2. Tags on PutObject (x-amz-tagging "foo=bar&bar", percent-encoded names),
    on CreateMultipartUpload (kept through Complete), on CopyObject
    (directive COPY keeps the source's, REPLACE takes x-amz-tagging, an
    unknown directive is InvalidArgument); the AWS CLI's put-object
    --tagging and get-object-tagging.
 3. S3's limits, each refused with nothing changed: 11 tags, a key of 129
    characters, a value of 257, a key twice, an "aws:" key (InvalidTag,
    400), the same through x-amz-tagging on PUT (nothing stored), a body
    that is not XML or not <Tagging> (MalformedXML); 10 tags of 128/256
    characters are fine. Tags of a missing key: NoSuchKey.
 4. Bucket tags (Put/Get/DeleteBucketTagging, boto3 and the AWS CLI):
    NoSuchTagSet before and after; the same set read through the gateway
    and straight from every target (the BMD); 50 tags fine, 51, an aws:
    key, a key twice, a 129-character key InvalidTag.
 5. copies=2: both holders' copies carry the same tags (their custom
    metadata, asked with Ais-Intra on each target) after a Put and after a
    Delete of the tag set.
 6. kill -9 of each holder in turn (once the map drops it): the tags read
    from the other copy; the target restarts and rejoins, and both copies
    still carry the tags.
 7. No error-level line in any node's log.
"""
# timeout: 240
import http.client
import json
import os
import time
import urllib.parse

from itlib import T, q

import clulib
from clulib import poll, request, smap_ids
from s3lib import AK, AWS_ENV, REGION, SK, boto3_client, cluster, run

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}

t = T()
EP = cluster(t, "s3tag", targets=3, args=["--set", "cluster.grace=1s"])
g = cluster.nodes[0]
targets = list(cluster.nodes[1:])
s3 = boto3_client(EP)
B = "tagged"


def code_of(fn, **kw):
    try:
        fn(**kw)
        return (200, "")
    except Exception as e:  # noqa: BLE001 - botocore's ClientError
        r = getattr(e, "response", {})
        return (r.get("ResponseMetadata", {}).get("HTTPStatusCode"), r.get("Error", {}).get("Code"))


def tags(key, bck=B):
    return [(x["Key"], x["Value"]) for x in s3.get_object_tagging(Bucket=bck, Key=key)["TagSet"]]


def tagset(pairs):
    return {"TagSet": [{"Key": k, "Value": v} for k, v in pairs]}


def signed(method, path, body=b"", headers=None):
    """A SigV4-signed raw request through the gateway: (status, body)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    url = EP + path
    r = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    S3SigV4Auth(Credentials(AK, SK), "s3", REGION).add_auth(r)
    p = r.prepare()
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request(method, u.path + ("?" + u.query if u.query else ""), body=body, headers=dict(p.headers))
    resp = c.getresponse()
    out = (resp.status, resp.read())
    c.close()
    return out


def custom_md(tg, key, bck=B):
    r = request("HEAD", tg.url, "/v1/objects/%s/%s" % (bck, q(key)), headers=INTRA)
    return r.h("ais-custom-md") if r.status == 200 else None


def copies_md(key):
    return [m for tg in targets if (m := custom_md(tg, key)) is not None]


s3.create_bucket(Bucket=B)
body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(request("PATCH", g.url, "/v1/buckets/" + B, body, JSON).status, 200, "set-bprops mirror.copies=2")
time.sleep(0.5)

# 1. Put / Get / Delete
etag = s3.put_object(Bucket=B, Key="obj", Body=b"payload")["ETag"]
t.eq(tags("obj"), [], "a new object has no tags")
t.check("x-amz-tagging-count" not in s3.head_object(Bucket=B, Key="obj")["ResponseMetadata"]["HTTPHeaders"],
        "HEAD of an untagged object: no x-amz-tagging-count")
r = s3.put_object_tagging(Bucket=B, Key="obj", Tagging=tagset([("zeta", "last"), ("alpha", "first a=b&c"),
                                                                ("mid dle", "ünï")]))
t.eq(r["ResponseMetadata"]["HTTPStatusCode"], 200, "PutObjectTagging: 200")
t.eq(tags("obj"), [("alpha", "first a=b&c"), ("mid dle", "ünï"), ("zeta", "last")],
     "GetObjectTagging: the 3 tags, sorted by key, values with = & and unicode intact")
h = s3.head_object(Bucket=B, Key="obj")["ResponseMetadata"]["HTTPHeaders"]
t.eq(h.get("x-amz-tagging-count"), "3", "HEAD: x-amz-tagging-count 3")
o = s3.get_object(Bucket=B, Key="obj")
t.check(o["Body"].read() == b"payload" and o["ETag"] == etag and
        o["ResponseMetadata"]["HTTPHeaders"].get("x-amz-tagging-count") == "3",
        "GET: the same bytes and ETag, x-amz-tagging-count 3")
s3.put_object_tagging(Bucket=B, Key="obj", Tagging=tagset([("only", "one")]))
t.eq(tags("obj"), [("only", "one")], "a second PutObjectTagging replaces the set")
r = s3.delete_object_tagging(Bucket=B, Key="obj")
t.eq(r["ResponseMetadata"]["HTTPStatusCode"], 204, "DeleteObjectTagging: 204")
t.eq(tags("obj"), [], "after DeleteObjectTagging: no tags")
h = s3.head_object(Bucket=B, Key="obj")["ResponseMetadata"]["HTTPHeaders"]
t.check("x-amz-tagging-count" not in h and h.get("etag") == etag, "HEAD: no x-amz-tagging-count, the same ETag")
t.eq(code_of(s3.get_object_tagging, Bucket=B, Key="nope"), (404, "NoSuchKey"), "GetObjectTagging of a missing key")
t.eq(code_of(s3.put_object_tagging, Bucket=B, Key="nope", Tagging=tagset([("a", "b")])), (404, "NoSuchKey"),
     "PutObjectTagging of a missing key: NoSuchKey")

# 2. tags with PUT, multipart, copy; the AWS CLI
s3.put_object(Bucket=B, Key="withtags", Body=b"x" * 100, Tagging="foo=bar&bar&sp%20ace=a%2Bb")
t.eq(tags("withtags"), [("bar", ""), ("foo", "bar"), ("sp ace", "a+b")],
     "PutObject with x-amz-tagging 'foo=bar&bar&sp%20ace=a%2Bb': 3 tags, bar empty")
mp = s3.create_multipart_upload(Bucket=B, Key="mpu", Tagging="Hello=World&foo=bar")
pe = s3.upload_part(Bucket=B, Key="mpu", UploadId=mp["UploadId"], PartNumber=1, Body=b"m" * 10)["ETag"]
s3.complete_multipart_upload(Bucket=B, Key="mpu", UploadId=mp["UploadId"],
                             MultipartUpload={"Parts": [{"ETag": pe, "PartNumber": 1}]})
t.eq(tags("mpu"), [("Hello", "World"), ("foo", "bar")], "CreateMultipartUpload's tags are the object's after Complete")
s3.copy_object(Bucket=B, Key="copy-keep", CopySource={"Bucket": B, "Key": "withtags"})
t.eq(tags("copy-keep"), tags("withtags"), "CopyObject (directive COPY): the source's tags")
s3.copy_object(Bucket=B, Key="copy-repl", CopySource={"Bucket": B, "Key": "withtags"}, TaggingDirective="REPLACE",
               Tagging="new=1")
t.eq(tags("copy-repl"), [("new", "1")], "CopyObject with TaggingDirective REPLACE: the request's tags")
s3.copy_object(Bucket=B, Key="copy-none", CopySource={"Bucket": B, "Key": "withtags"}, TaggingDirective="REPLACE")
t.eq(tags("copy-none"), [], "CopyObject REPLACE without x-amz-tagging: no tags")
st, b = signed("PUT", "/%s/copy-bad" % B, headers={"x-amz-copy-source": "/%s/withtags" % B,
                                                   "x-amz-tagging-directive": "MERGE"})
t.check(st == 400 and b"InvalidArgument" in b, "an unknown tagging directive: 400 InvalidArgument", (st, b[:200]))
env = dict(AWS_ENV)
small = os.path.join(os.environ["TMPDIR"], "small")
with open(small, "wb") as f:
    f.write(b"cli bytes")
rc, out = run(["/usr/bin/aws", "--endpoint-url", EP, "s3api", "put-object", "--bucket", B, "--key", "cli",
               "--body", small, "--tagging", "team=storage&tier=hot"], env=env)
t.check(rc == 0, "aws s3api put-object --tagging", out[-300:])
rc, out = run(["/usr/bin/aws", "--endpoint-url", EP, "s3api", "get-object-tagging", "--bucket", B, "--key", "cli"],
              env=env)
got = json.loads(out).get("TagSet") if rc == 0 else None
t.eq(got, [{"Key": "team", "Value": "storage"}, {"Key": "tier", "Value": "hot"}], "aws s3api get-object-tagging")

# 3. limits
s3.put_object_tagging(Bucket=B, Key="obj", Tagging=tagset([("keep", "me")]))
bad = {
    "11 tags": [(str(i), str(i)) for i in range(11)],
    "a key of 129 characters": [("k" * 129, "v")],
    "a value of 257 characters": [("k", "v" * 257)],
    "a key twice": [("dup", "1"), ("dup", "2")],
    "an aws: key": [("aws:cloudformation", "x")],
}
for what, pairs in bad.items():
    t.eq(code_of(s3.put_object_tagging, Bucket=B, Key="obj", Tagging=tagset(pairs)), (400, "InvalidTag"),
         "PutObjectTagging with %s: 400 InvalidTag" % what)
t.eq(tags("obj"), [("keep", "me")], "after the refusals the object keeps its tags")
big = [("k%03d" % i + "x" * 124, "v" * 256) for i in range(10)]
s3.put_object_tagging(Bucket=B, Key="obj", Tagging=tagset(big))
t.eq(tags("obj"), big, "10 tags of 128-character keys and 256-character values are fine")
t.eq(tags("obj"), sorted(big), "(sorted)")
t.eq(code_of(s3.put_object, Bucket=B, Key="toomany", Body=b"x", Tagging="&".join("k%d=v" % i for i in range(11))),
     (400, "InvalidTag"), "PutObject with 11 tags in x-amz-tagging: InvalidTag")
t.eq(code_of(s3.head_object, Bucket=B, Key="toomany"), (404, "404"), "and nothing was stored")
t.eq(code_of(s3.put_object, Bucket=B, Key="toomany", Body=b"x", Tagging="aws:x=1"), (400, "InvalidTag"),
     "PutObject with an aws: tag: InvalidTag")
t.eq(code_of(s3.put_object, Bucket=B, Key="toomany", Body=b"x", Tagging="a=%zz"), (400, "InvalidArgument"),
     "PutObject with a malformed x-amz-tagging: InvalidArgument")
st, b = signed("PUT", "/%s/obj?tagging" % B, b"<Tagging><TagSet><Tag><Key></Key><Value>v</Value></Tag></TagSet>"
                                             b"</Tagging>")
t.check(st == 400 and b"InvalidTag" in b, "PutObjectTagging with an empty key: 400 InvalidTag", (st, b[:200]))
for what, doc in {"not XML": b"<Tagging><TagSet>", "not <Tagging>": b"<Other><TagSet/></Other>",
                  "a Tag without a Key": b"<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>"}.items():
    st, b = signed("PUT", "/%s/obj?tagging" % B, doc)
    t.check(st == 400 and b"MalformedXML" in b, "PutObjectTagging with a body %s: 400 MalformedXML" % what,
            (st, b[:200]))

# 4. bucket tags: in the BMD, seen by every node
t.eq(code_of(s3.get_bucket_tagging, Bucket=B), (404, "NoSuchTagSet"), "GetBucketTagging of an untagged bucket: "
     "404 NoSuchTagSet")
r = s3.put_bucket_tagging(Bucket=B, Tagging=tagset([("project", "x y"), ("cost-center", "42&1")]))
t.eq(r["ResponseMetadata"]["HTTPStatusCode"], 200, "PutBucketTagging: 200")
want_bt = [("cost-center", "42&1"), ("project", "x y")]
t.eq([(x["Key"], x["Value"]) for x in s3.get_bucket_tagging(Bucket=B)["TagSet"]], want_bt,
     "GetBucketTagging through the gateway: the tags, sorted")
seen = []
for tg in targets:
    c = boto3_client(tg.url)
    seen.append([(x["Key"], x["Value"]) for x in c.get_bucket_tagging(Bucket=B)["TagSet"]])
t.eq(seen, [want_bt] * 3, "GetBucketTagging sent straight to each target: the same tags (the BMD)")
for what, pairs in {"51 tags": [("k%d" % i, "v") for i in range(51)], "an aws: key": [("aws:x", "1")],
                    "a key twice": [("a", "1"), ("a", "2")], "a key of 129 characters": [("k" * 129, "v")]}.items():
    t.eq(code_of(s3.put_bucket_tagging, Bucket=B, Tagging=tagset(pairs)), (400, "InvalidTag"),
         "PutBucketTagging with %s: 400 InvalidTag" % what)
fifty = [("k%02d" % i, "v%d" % i) for i in range(50)]
s3.put_bucket_tagging(Bucket=B, Tagging=tagset(fifty))
t.eq([(x["Key"], x["Value"]) for x in s3.get_bucket_tagging(Bucket=B)["TagSet"]], fifty, "50 bucket tags are fine")
rc, out = run(["/usr/bin/aws", "--endpoint-url", EP, "s3api", "put-bucket-tagging", "--bucket", B, "--tagging",
               "TagSet=[{Key=env,Value=test}]"], env=env)
t.check(rc == 0, "aws s3api put-bucket-tagging", out[-300:])
rc, out = run(["/usr/bin/aws", "--endpoint-url", EP, "s3api", "get-bucket-tagging", "--bucket", B], env=env)
t.eq(json.loads(out).get("TagSet") if rc == 0 else out[-300:], [{"Key": "env", "Value": "test"}],
     "aws s3api get-bucket-tagging")
r = s3.delete_bucket_tagging(Bucket=B)
t.eq(r["ResponseMetadata"]["HTTPStatusCode"], 204, "DeleteBucketTagging: 204")
t.eq(code_of(s3.get_bucket_tagging, Bucket=B), (404, "NoSuchTagSet"), "after the delete: NoSuchTagSet")
t.eq(code_of(s3.get_bucket_tagging, Bucket="no-such-bucket"), (404, "NoSuchBucket"),
     "GetBucketTagging of a missing bucket: NoSuchBucket")
t.eq(s3.get_object(Bucket=B, Key="obj")["Body"].read(), b"payload", "the bucket's objects are untouched")

# 5. every copy
s3.put_object(Bucket=B, Key="rep", Body=b"r" * 5000)
s3.put_object_tagging(Bucket=B, Key="rep", Tagging=tagset([("color", "blue"), ("size", "5k")]))
mds = copies_md("rep")
t.check(len(mds) == 2 and all("s3.t.color=blue" in m and "s3.t.size=5k" in m for m in mds),
        "both copies carry the tags in their metadata", mds)
s3.delete_object_tagging(Bucket=B, Key="rep")
mds = copies_md("rep")
t.check(len(mds) == 2 and not any("s3.t." in m for m in mds), "after the Delete neither copy has tags", mds)
s3.put_object_tagging(Bucket=B, Key="rep", Tagging=tagset([("color", "green")]))

# 6. a dead holder


def ids():
    return smap_ids(g) or set()


holders = [tg for tg in targets if custom_md(tg, "rep") is not None]
t.eq(len(holders), 2, "rep has two holders")
for victim in holders:
    victim.kill9()
    t.check(poll(lambda: victim.id not in ids(), 20), "%s killed: the map drops it" % victim.name)
    t.eq(tags("rep"), [("color", "green")], "%s down: the tags read from the other copy" % victim.name)
    t.eq(s3.get_object(Bucket=B, Key="rep")["Body"].read(), b"r" * 5000, "%s down: the bytes too" % victim.name)
    t.check(victim.start(join=g.url), "%s restarts" % victim.name)
    t.check(poll(lambda: victim.id in ids(), 20), "%s rejoins" % victim.name)
t.check(poll(lambda: len([m for m in copies_md("rep") if "s3.t.color=green" in m]) >= 2, 20),
        "after the restarts the copies carry the tags", copies_md("rep"))
t.eq(tags("rep"), [("color", "green")], "GetObjectTagging after the restarts")

clulib.check_logs(cluster.nodes)
t.finish()
