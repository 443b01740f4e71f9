"""test_s3_edge.py - S3 semantics with boto3 against a 1-gateway 3-target
cluster (auth on, one key pair), plus the runner's standalone target with
auth off and s3.domain set (virtual-hosted style, /s3/ prefix).

Checks every error code the API answers (XML shape, status, RequestId =
x-amz-request-id), conditionals and their precedence, every Range form,
response-* overrides, metadata round trip and Copy's COPY/REPLACE, ETag
formats (MD5, md5-of-md5s-N), listings (V1 markers, V2 tokens, start-after,
KeyCount, fetch-owner, delimiter, encoding-type=url, max-keys bounds, raw
byte order, versions), multipart validation (InvalidPart, InvalidPartOrder,
EntityTooSmall, NoSuchUpload, unquoted part ETags, UploadPartCopy ranges,
ListParts and ListMultipartUploads paging), DeleteObjects (Quiet),
presigned URLs (valid, expired), anonymous and badly signed requests, and
that S3 and the native API see the same objects.
"""
# aisd-args: --set s3.auth=off --set s3.domain=s3.test
# timeout: 240
import hashlib
import os
import time
import urllib.parse
import xml.etree.ElementTree as ET

import boto3
import botocore.config
from botocore.exceptions import ClientError

from itlib import T
from s3lib import AK, REGION, SK, cluster, error_lines, http_raw, signed

t = T()
AK2, SK2 = "aisdsecondkey", "aisdsecondsecret"
EP = cluster(t, "s3edge", args=["--set", "s3.key=%s:%s:uid-2:Second User" % (AK2, SK2)])
CFG = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
s3 = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK, region_name=REGION, config=CFG)
s3b = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK2, aws_secret_access_key=SK2, region_name=REGION,
                   config=CFG)
ME, YOU = {"ID": "aisd-test", "DisplayName": "AIS Test"}, {"ID": "uid-2", "DisplayName": "Second User"}
u = urllib.parse.urlsplit(EP)


def raw(method, path, body=None, headers=None, url=None):
    return http_raw(url or EP, method, path, body, headers)


def code_of(fn, *a, **kw):
    """Calls a boto3 operation; returns (HTTP status, error code) or (200, None)."""
    try:
        r = fn(*a, **kw)
        return r["ResponseMetadata"]["HTTPStatusCode"], None
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code")


def md5(b):
    return hashlib.md5(b).hexdigest()


B = "edge"
s3.create_bucket(Bucket=B)

# --- bucket errors ----------------------------------------------------------------------------------
t.eq(code_of(s3.create_bucket, Bucket=B), (200, None), "CreateBucket again by its owner at us-east-1: 200 (as S3)")
t.eq(code_of(s3.create_bucket, Bucket="Bad_Name"), (400, "InvalidBucketName"), "CreateBucket Bad_Name: InvalidBucketName")
t.eq(code_of(s3.create_bucket, Bucket="v1x"), (200, None), "a bucket name starting with v1 is fine")
t.eq(code_of(s3.create_bucket, Bucket="eu", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}),
     (400, "InvalidBucketName"), "2-letter name: InvalidBucketName")
t.eq(code_of(s3.create_bucket, Bucket="eu-bucket", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}),
     (200, None), "a us-east-1 endpoint creates a bucket in eu-west-1")
t.eq(s3.get_bucket_location(Bucket="eu-bucket").get("LocationConstraint"), "eu-west-1",
     "GetBucketLocation: the stored LocationConstraint")
t.eq(s3.head_bucket(Bucket="eu-bucket")["ResponseMetadata"]["HTTPHeaders"].get("x-amz-bucket-region"), "eu-west-1",
     "HeadBucket: x-amz-bucket-region of the bucket")
t.eq(code_of(s3.create_bucket, Bucket="bad-loc", CreateBucketConfiguration={"LocationConstraint": "not a region!"}),
     (400, "InvalidLocationConstraint"), "a malformed LocationConstraint: InvalidLocationConstraint")
s3eu = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK, region_name="eu-west-1",
                    config=CFG)
t.eq(code_of(s3eu.create_bucket, Bucket="ap-bucket", CreateBucketConfiguration={"LocationConstraint": "ap-south-1"}),
     (400, "IllegalLocationConstraintException"), "a regional endpoint, another region: IllegalLocationConstraintException")
t.eq(code_of(s3eu.create_bucket, Bucket="eu2-bucket", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}),
     (200, None), "a regional endpoint, its own region: 200")
t.eq(s3eu.get_bucket_location(Bucket="eu2-bucket").get("LocationConstraint"), "eu-west-1", "its location")
t.eq(s3.get_bucket_location(Bucket=B).get("LocationConstraint"), None, "GetBucketLocation: us-east-1 is empty")
for b in ("eu-bucket", "eu2-bucket"):
    s3.delete_bucket(Bucket=b)
t.eq(s3.list_buckets()["Owner"], ME, "ListBuckets Owner: the signing key's user id and display name")
t.eq(s3b.list_buckets()["Owner"], YOU, "ListBuckets Owner with the second key pair")
t.eq(s3.get_bucket_acl(Bucket=B)["Owner"], ME, "GET ?acl Owner: the bucket's creator")
t.eq(code_of(s3b.get_bucket_acl, Bucket=B), (403, "AccessDenied"), "GET ?acl by another key (no READ_ACP): AccessDenied")
t.eq(code_of(s3.head_bucket, Bucket="nosuchbucket"), (404, "404"), "HeadBucket missing: 404")
t.eq(code_of(s3.head_bucket, Bucket=B), (200, None), "HeadBucket: 200")
t.eq(code_of(s3.list_objects_v2, Bucket="nosuchbucket"), (404, "NoSuchBucket"), "list a missing bucket: NoSuchBucket")
t.eq(code_of(s3.get_object, Bucket="nosuchbucket", Key="k"), (404, "NoSuchBucket"), "GET in a missing bucket: NoSuchBucket")
t.eq(code_of(s3.get_object, Bucket=B, Key="nokey"), (404, "NoSuchKey"), "GET a missing key: NoSuchKey")
t.eq(code_of(s3.delete_object, Bucket=B, Key="nokey"), (204, None), "DELETE a missing key: 204")
s3.put_object(Bucket="v1x", Key="k", Body=b"x")
t.eq(code_of(s3.delete_bucket, Bucket="v1x"), (409, "BucketNotEmpty"), "DeleteBucket non-empty: BucketNotEmpty")
s3.delete_object(Bucket="v1x", Key="k")
t.eq(code_of(s3.delete_bucket, Bucket="v1x"), (204, None), "DeleteBucket empty: 204")
t.check("v1x" not in [b["Name"] for b in s3.list_buckets()["Buckets"]], "ListBuckets no longer shows it")

# --- ListBuckets pages (max-buckets, continuation-token, prefix, bucket-region) -----------------
PG = ["pg-%02d" % i for i in range(7)]
for b in PG:
    s3.create_bucket(Bucket=b)
s3.create_bucket(Bucket="pgeu-1", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})


def lsb(query):
    """ListBuckets with query: (status, names, ContinuationToken, Prefix, regions, error code)."""
    st, _, body = signed(EP, "GET", "/" + query)
    d = ET.fromstring(body)
    ns = {"s": d.tag[1:].split("}")[0]} if d.tag.startswith("{") else {}

    def f(x):
        return ("s:" + x) if ns else x
    names = [e.findtext(f("Name"), namespaces=ns) for e in d.iter(("{%s}" % ns["s"] if ns else "") + "Bucket")]
    regions = [e.findtext(f("BucketRegion"), namespaces=ns) for e in d.iter(("{%s}" % ns["s"] if ns else "") + "Bucket")]
    return (st, names, d.findtext(f("ContinuationToken"), namespaces=ns), d.findtext(f("Prefix"), namespaces=ns),
            regions, d.findtext("Code"))


st, every, tok, _, _, _ = lsb("")
t.check(st == 200 and set(PG) <= set(every) and every == sorted(every) and tok is None,
        "ListBuckets without paging: every bucket in name order, no token", every)
pages, tok = [], None
for _ in range(10):
    st, names, tok, pfx, _, _ = lsb("?max-buckets=3&prefix=pg-" + ("&continuation-token=" + urllib.parse.quote(tok)
                                                                    if tok else ""))
    pages.append(names)
    if st != 200 or not tok:
        break
t.eq(pages, [PG[0:3], PG[3:6], PG[6:7]], "max-buckets=3, prefix=pg-: pages of 3, 3 and 1 in name order, resumed by "
     "the continuation token")
t.eq(pfx, "pg-", "each page echoes Prefix")
st, names, tok, _, regions, _ = lsb("?bucket-region=eu-west-1&prefix=pg")
t.check(st == 200 and names == ["pgeu-1"] and regions == ["eu-west-1"] and tok is None,
        "bucket-region=eu-west-1: only that region's bucket, with its BucketRegion", (names, regions))
st, names, _, _, regions, _ = lsb("?prefix=pg-0&max-buckets=10000")
t.check(st == 200 and names == PG and set(regions) == {"us-east-1"}, "BucketRegion us-east-1 of the others", regions)
for q_, why in (("?max-buckets=0", "0"), ("?max-buckets=10001", "over 10000"), ("?max-buckets=x", "not a number"),
                ("?continuation-token=%25%25", "a token this server did not make")):
    st, _, _, _, _, code = lsb(q_)
    t.eq((st, code), (400, "InvalidArgument"), "ListBuckets %s: 400 InvalidArgument" % why)
for b in PG + ["pgeu-1"]:
    s3.delete_bucket(Bucket=b)
st, h, body = raw("GET", "/%s/nokey" % B, headers={"Authorization": "x"})
t.check(st == 400, "a malformed Authorization header: 400", (st, body))
st, h, body = raw("GET", "/%s/nokey" % B)
doc = ET.fromstring(body) if body else None
t.check(st == 403 and doc is not None and doc.findtext("Code") == "AccessDenied" and
        doc.findtext("RequestId") == h.get("x-amz-request-id") and doc.findtext("Resource") == "/%s/nokey" % B,
        "anonymous: 403 AccessDenied, XML with Resource and RequestId = x-amz-request-id", (st, h, body))
st, h, body = raw("GET", "/nosuchbucket/k")
t.check(st == 404 and b"<Code>NoSuchBucket</Code>" in body, "anonymous, missing bucket: 404 NoSuchBucket", body)
bad = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key="wrongsecret", region_name=REGION, config=CFG)
t.eq(code_of(bad.list_objects_v2, Bucket=B), (403, "SignatureDoesNotMatch"), "wrong secret: SignatureDoesNotMatch")
unk = boto3.client("s3", endpoint_url=EP, aws_access_key_id="nobodykey", aws_secret_access_key=SK, region_name=REGION, config=CFG)
t.eq(code_of(unk.list_objects_v2, Bucket=B), (403, "InvalidAccessKeyId"), "unknown key: InvalidAccessKeyId")
t.eq(code_of(s3.get_bucket_policy, Bucket=B), (404, "NoSuchBucketPolicy"), "GET ?policy: 404 NoSuchBucketPolicy")
t.eq(code_of(s3.put_bucket_policy, Bucket=B, Policy="{}"), (400, "MalformedPolicy"), "PUT ?policy of {}: 400 MalformedPolicy")
t.eq(code_of(s3.get_bucket_tagging, Bucket=B), (404, "NoSuchTagSet"), "GET ?tagging: 404 NoSuchTagSet")
t.eq(s3.get_bucket_acl(Bucket=B)["Grants"][0]["Permission"], "FULL_CONTROL", "GET ?acl: owner FULL_CONTROL")

# --- put, metadata, etags ----------------------------------------------------------------------------------
data = os.urandom(100)
r = s3.put_object(Bucket=B, Key="m/obj", Body=data, ContentType="text/x-test", ContentEncoding="identity",
                  ContentDisposition='attachment; filename="a b.txt"', CacheControl="max-age=60",
                  ContentLanguage="de", Expires="Wed, 21 Oct 2037 07:28:00 GMT",
                  Metadata={"color": "blue, green=yes", "empty": "", "ünï": "x"} if False else
                  {"color": "blue, green=yes%", "n": "1"})
t.eq(r["ETag"], '"%s"' % md5(data), "PUT ETag: quoted MD5 hex")
h = s3.head_object(Bucket=B, Key="m/obj")
t.check(h["ContentType"] == "text/x-test" and h["ContentEncoding"] == "identity" and
        h["ContentDisposition"] == 'attachment; filename="a b.txt"' and h["CacheControl"] == "max-age=60" and
        h["ContentLanguage"] == "de" and h["Metadata"] == {"color": "blue, green=yes%", "n": "1"} and
        h["ContentLength"] == 100 and h["ETag"] == r["ETag"], "metadata round trip (HEAD)", h)
g = s3.get_object(Bucket=B, Key="m/obj", ResponseContentType="app/override", ResponseCacheControl="no-cache",
                  ResponseContentDisposition="inline")
t.check(g["ContentType"] == "app/override" and g["CacheControl"] == "no-cache" and g["ContentDisposition"] == "inline"
        and g["Body"].read() == data, "response-* overrides", g)
t.eq(code_of(s3.put_object, Bucket=B, Key="d", Body=b"abc", ContentMD5="notbase64"), (400, "InvalidDigest"),
     "Content-MD5 malformed: InvalidDigest")
import base64
t.eq(code_of(s3.put_object, Bucket=B, Key="d", Body=b"abc", ContentMD5=base64.b64encode(hashlib.md5(b"abd").digest()).decode()),
     (400, "BadDigest"), "Content-MD5 mismatch: BadDigest")
t.eq(code_of(s3.head_object, Bucket=B, Key="d"), (404, "404"), "nothing stored after BadDigest")
t.eq(code_of(s3.put_object, Bucket=B, Key="d", Body=b"abc", ContentMD5=base64.b64encode(hashlib.md5(b"abc").digest()).decode()),
     (200, None), "Content-MD5 right: 200")
t.eq(code_of(s3.put_object, Bucket=B, Key="z0", Body=b""), (200, None), "PUT of 0 bytes")
big = {"k%d" % i: "v" * 150 for i in range(13)}  # 13 x 152 = 1976 bytes: under S3's 2 KiB
t.eq(code_of(s3.put_object, Bucket=B, Key="bigmeta", Body=b"x", Metadata=big), (200, None), "PUT with 1976 B of metadata")
t.eq(s3.head_object(Bucket=B, Key="bigmeta")["Metadata"], big, "1976 B of metadata round trip")
t.eq(code_of(s3.put_object, Bucket=B, Key="bigmeta2", Body=b"x", Metadata={"k": "%" * 2047}), (200, None),
     "PUT with exactly 2048 B of metadata (stored percent-encoded: 3x)")
t.eq(s3.head_object(Bucket=B, Key="bigmeta2")["Metadata"], {"k": "%" * 2047}, "2048 B of metadata round trip")
t.eq(code_of(s3.put_object, Bucket=B, Key="toobig", Body=b"x", Metadata={"k": "v" * 2048}), (400, "MetadataTooLarge"),
     "PUT with 2049 B of metadata: 400 MetadataTooLarge")
t.eq(code_of(s3.head_object, Bucket=B, Key="toobig"), (404, "404"), "nothing stored after MetadataTooLarge")
t.eq(code_of(s3.create_multipart_upload, Bucket=B, Key="toobig", Metadata={"k": "v" * 2048}),
     (400, "MetadataTooLarge"), "CreateMultipartUpload with 2049 B of metadata: MetadataTooLarge")
t.eq(s3.get_object(Bucket=B, Key="z0")["Body"].read(), b"", "GET of 0 bytes")

# --- ranges ------------------------------------------------------------------------------------------------
def rng(spec):
    try:
        r = s3.get_object(Bucket=B, Key="m/obj", Range=spec)
        return r["ResponseMetadata"]["HTTPStatusCode"], r["Body"].read(), r.get("ContentRange")
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"], None


t.eq(rng("bytes=0-4"), (206, data[:5], "bytes 0-4/100"), "Range bytes=0-4: 206")
t.eq(rng("bytes=90-"), (206, data[90:], "bytes 90-99/100"), "Range bytes=90-")
t.eq(rng("bytes=-3"), (206, data[-3:], "bytes 97-99/100"), "Range bytes=-3 (suffix)")
t.eq(rng("bytes=50-1000"), (206, data[50:], "bytes 50-99/100"), "Range past the end is clipped")
t.eq(rng("bytes=100-"), (416, "InvalidRange", None), "Range beyond the object: 416 InvalidRange")

# --- conditionals ------------------------------------------------------------------------------------------
et = '"%s"' % md5(data)
lm = h["LastModified"]
past, future = "Sat, 01 Jan 2000 00:00:00 GMT", "Fri, 01 Jan 2100 00:00:00 GMT"


def cond(**kw):
    return code_of(s3.get_object, Bucket=B, Key="m/obj", **kw)


t.eq(cond(IfMatch=et), (200, None), "If-Match right: 200")
t.eq(cond(IfMatch='"0000"'), (412, "PreconditionFailed"), "If-Match wrong: 412")
t.eq(cond(IfNoneMatch=et), (304, "304"), "If-None-Match matching: 304")
t.eq(cond(IfNoneMatch='"0000"'), (200, None), "If-None-Match other: 200")
t.eq(cond(IfModifiedSince=lm), (304, "304"), "If-Modified-Since = Last-Modified: 304")
t.eq(cond(IfModifiedSince=future), (200, None), "If-Modified-Since in the future is ignored: 200")
t.eq(cond(IfModifiedSince=past), (200, None), "If-Modified-Since before: 200")
t.eq(cond(IfUnmodifiedSince=past), (412, "PreconditionFailed"), "If-Unmodified-Since before: 412")
t.eq(cond(IfMatch=et, IfUnmodifiedSince=past), (200, None), "If-Match true wins over If-Unmodified-Since false")
t.eq(cond(IfNoneMatch='"0000"', IfModifiedSince=lm), (200, None), "If-None-Match false wins over If-Modified-Since")
t.eq(code_of(s3.head_object, Bucket=B, Key="m/obj", IfNoneMatch=et), (304, "304"), "HEAD If-None-Match: 304")

# --- copy ---------------------------------------------------------------------------------------------------
t.eq(code_of(s3.copy_object, Bucket=B, Key="m/obj", CopySource={"Bucket": B, "Key": "m/obj"}),
     (400, "InvalidRequest"), "self-copy without REPLACE: InvalidRequest")
r = s3.copy_object(Bucket=B, Key="m/obj", CopySource={"Bucket": B, "Key": "m/obj"}, MetadataDirective="REPLACE",
                   Metadata={"new": "yes"}, ContentType="text/new")
h2 = s3.head_object(Bucket=B, Key="m/obj")
t.check(h2["Metadata"] == {"new": "yes"} and h2["ContentType"] == "text/new" and h2["ETag"] == et,
        "self-copy with REPLACE: new metadata, same ETag", h2)
s3.create_bucket(Bucket="edge2")
for i in range(12):  # keys on several targets
    s3.copy_object(Bucket="edge2", Key="c%02d" % i, CopySource={"Bucket": B, "Key": "m/obj"})
ok = all(s3.get_object(Bucket="edge2", Key="c%02d" % i)["Body"].read() == data for i in range(12))
t.check(ok, "copy across buckets and targets: same bytes")
t.eq(s3.head_object(Bucket="edge2", Key="c00")["Metadata"], {"new": "yes"}, "copy keeps metadata (COPY)")
t.eq(code_of(s3.copy_object, Bucket="edge2", Key="x", CopySource={"Bucket": B, "Key": "m/obj"},
             CopySourceIfMatch='"0000"'), (412, "PreconditionFailed"), "x-amz-copy-source-if-match wrong: 412")
t.eq(code_of(s3.copy_object, Bucket="edge2", Key="x", CopySource={"Bucket": B, "Key": "m/obj"},
             CopySourceIfNoneMatch=et), (412, "PreconditionFailed"), "x-amz-copy-source-if-none-match matching: 412")
t.eq(code_of(s3.copy_object, Bucket="edge2", Key="x", CopySource={"Bucket": B, "Key": "nokey"}),
     (404, "NoSuchKey"), "copy of a missing key: NoSuchKey")

# --- listings -------------------------------------------------------------------------------------------------
L = "lst"
s3.create_bucket(Bucket=L)
keys = ["a", "a/b", "a/c", "B", "b/1", "b/2", "é", "z z", "z+z", "z%z", "zz/ä/1", "~"]
for k in keys:
    s3.put_object(Bucket=L, Key=k, Body=k.encode())
want = sorted(keys, key=lambda k: k.encode())
got = [o["Key"] for o in s3.list_objects_v2(Bucket=L)["Contents"]]
t.eq(got, want, "V2 lists in raw byte order")
r = s3.list_objects_v2(Bucket=L, Delimiter="/")
t.eq(([o["Key"] for o in r["Contents"]], [p["Prefix"] for p in r["CommonPrefixes"]], r["KeyCount"]),
     (["B", "a", "z z", "z%z", "z+z", "~", "é"], ["a/", "b/", "zz/"], 10), "V2 delimiter: keys, CommonPrefixes, KeyCount")
pages, tok, seen = 0, None, []
while True:
    kw = {"Bucket": L, "MaxKeys": 2, "Delimiter": "/"}
    if tok:
        kw["ContinuationToken"] = tok
    r = s3.list_objects_v2(**kw)
    seen += [o["Key"] for o in r.get("Contents", [])] + [p["Prefix"] for p in r.get("CommonPrefixes", [])]
    pages += 1
    if not r["IsTruncated"]:
        break
    tok = r["NextContinuationToken"]
t.eq((sorted(seen, key=lambda k: k.encode()), pages), (sorted(["B", "a", "z z", "z%z", "z+z", "~", "é", "a/", "b/", "zz/"],
                                                                key=lambda k: k.encode()), 5),
     "V2 paging by 2 with a delimiter: every key and prefix once")
r = s3.list_objects_v2(Bucket=L, StartAfter="b/1")
t.eq([o["Key"] for o in r["Contents"]][:2], ["b/2", "z z"], "V2 start-after")
r = s3.list_objects_v2(Bucket=L, MaxKeys=1, FetchOwner=True)
t.check(r["Contents"][0].get("Owner") == ME and r["IsTruncated"] and r["KeyCount"] == 1, "V2 fetch-owner, KeyCount", r)
t.eq(s3.list_objects(Bucket=L, MaxKeys=1)["Contents"][0].get("Owner"), ME, "V1 Owner: the signer")
t.check("Owner" not in s3.list_objects_v2(Bucket=L, MaxKeys=1)["Contents"][0], "V2 without fetch-owner: no Owner")
r = s3.list_objects_v2(Bucket=L, MaxKeys=0)
t.check(r["KeyCount"] == 0 and not r["IsTruncated"] and "Contents" not in r, "max-keys 0: empty", r)
st, _, body = raw("GET", "/%s?list-type=2&max-keys=-1" % L, headers={})
t.check(st in (400, 403), "max-keys -1 refused", body)
t.eq(code_of(s3.list_objects_v2, Bucket=L, MaxKeys=-1), (400, "InvalidArgument"), "max-keys -1: InvalidArgument")
r = s3.list_objects(Bucket=L, Delimiter="/", MaxKeys=3)
t.check(r["IsTruncated"] and r.get("NextMarker") == "a/", "V1: NextMarker is the last item (a prefix)", r)
r2 = s3.list_objects(Bucket=L, Delimiter="/", Marker=r["NextMarker"], MaxKeys=3)
t.eq(sorted([o["Key"] for o in r2.get("Contents", [])] + [p["Prefix"] for p in r2.get("CommonPrefixes", [])]),
     ["b/", "z z", "z%z"], "V1 marker resumes after a prefix without repeating it")
r = s3.list_objects(Bucket=L, Prefix="z", EncodingType="url")  # asked for: boto3 leaves the keys encoded
t.eq([o["Key"] for o in r["Contents"]], ["z%20z", "z%25z", "z%2Bz", "zz/%C3%A4/1"], "encoding-type=url: keys URL-encoded")
r = s3.list_objects(Bucket=L, Prefix="z")  # botocore adds encoding-type=url itself and decodes
t.eq([o["Key"] for o in r["Contents"]], ["z z", "z%z", "z+z", "zz/ä/1"], "encoding-type=url round trip (botocore decodes)")
st, _, body = signed(EP, "GET", "/%s?encoding-type=url&prefix=%%0Az%%20" % L)
t.check(st == 200 and b"<Prefix>&#xA;z </Prefix>" in body, "V1 with encoding-type=url: its Prefix as given (as S3)",
        (st, body[:300]))
st, _, body = signed(EP, "GET", "/%s?list-type=2&encoding-type=url&prefix=%%0Az%%20" % L)
t.check(st == 200 and b"<Prefix>%0Az%20</Prefix>" in body, "V2 with encoding-type=url: its Prefix encoded",
        (st, body[:300]))
st, _, body = signed(EP, "GET", "/%s?allow-unordered=true&prefix=z" % L)
t.check(st == 200 and body.count(b"<Key>") == 4, "allow-unordered=true: the listing (in order)", (st, body[:200]))
st, _, body = signed(EP, "GET", "/%s?allow-unordered=true&delimiter=%%2F" % L)
t.check(st == 400 and b"InvalidArgument" in body, "allow-unordered=true with a delimiter: 400 InvalidArgument",
        (st, body[:200]))
r = s3.list_object_versions(Bucket=L, Prefix="a")
t.check(all(v["VersionId"] == "null" and v["IsLatest"] for v in r["Versions"]) and len(r["Versions"]) == 3,
        "ListObjectVersions: VersionId null", r)
LONG = "\u00e9" * 500  # 1000 bytes: the targets' page URL (percent-encoded prefix + start-after) passes 5 KiB
s3.put_object(Bucket=L, Key=LONG, Body=b"l")
r = s3.list_objects_v2(Bucket=L, Prefix=LONG[:499], StartAfter=LONG[:400])
t.eq([o["Key"] for o in r.get("Contents", [])], [LONG], "V2 with a 1000-byte prefix and start-after: every target asked")
s3.delete_object(Bucket=L, Key=LONG)
t.eq(s3.get_bucket_versioning(Bucket=L).get("Status"), None, "GetBucketVersioning: never enabled")

# --- delete many ------------------------------------------------------------------------------------------------
r = s3.delete_objects(Bucket=L, Delete={"Objects": [{"Key": k} for k in keys[:4]] + [{"Key": "never"}], "Quiet": True})
t.check(not r.get("Deleted") and not r.get("Errors"), "DeleteObjects Quiet: no per-key answers", r)
r = s3.delete_objects(Bucket=L, Delete={"Objects": [{"Key": k} for k in keys[4:]]})
t.eq(sorted(d["Key"] for d in r["Deleted"]), sorted(keys[4:]), "DeleteObjects: every key Deleted")
t.check("Contents" not in s3.list_objects_v2(Bucket=L), "the bucket is empty after both")
body = "<Delete>" + "".join("<Object><Key>k%d</Key></Object>" % i for i in range(1001)) + "</Delete>"
t.eq(code_of(s3.delete_objects, Bucket=L, Delete={"Objects": [{"Key": "k%d" % i} for i in range(1001)]}),
     (400, "MalformedXML"), "DeleteObjects with 1001 keys: MalformedXML")

# --- multipart ------------------------------------------------------------------------------------------------------
MB5 = 5 << 20
p1, p2, p3 = os.urandom(MB5), os.urandom(MB5), b"tail" * 100
up = s3.create_multipart_upload(Bucket=B, Key="mp", ContentType="video/x", Metadata={"k": "v"})["UploadId"]
e1 = s3.upload_part(Bucket=B, Key="mp", UploadId=up, PartNumber=1, Body=p1)["ETag"]
e2 = s3.upload_part(Bucket=B, Key="mp", UploadId=up, PartNumber=2, Body=p2)["ETag"]
e3 = s3.upload_part(Bucket=B, Key="mp", UploadId=up, PartNumber=3, Body=p3)["ETag"]
t.eq(e1, '"%s"' % md5(p1), "UploadPart ETag: part MD5")
t.eq(code_of(s3.upload_part, Bucket=B, Key="mp", UploadId=up, PartNumber=10001, Body=b"x"), (400, "InvalidArgument"),
     "part number 10001: InvalidArgument")
t.eq(code_of(s3.upload_part, Bucket=B, Key="mp", UploadId="0" * 32, PartNumber=1, Body=b"x"), (404, "NoSuchUpload"),
     "UploadPart to an unknown upload: NoSuchUpload")
r = s3.list_parts(Bucket=B, Key="mp", UploadId=up, MaxParts=2)
t.check([p["PartNumber"] for p in r["Parts"]] == [1, 2] and r["IsTruncated"] and r["NextPartNumberMarker"] == 2,
        "ListParts page 1", r)
t.check(r.get("Initiator") == ME and r.get("Owner") == ME, "ListParts Initiator and Owner", r)
r = s3.list_parts(Bucket=B, Key="mp", UploadId=up, PartNumberMarker=2)
t.check([p["PartNumber"] for p in r["Parts"]] == [3] and r["Parts"][0]["Size"] == len(p3), "ListParts page 2", r)
up2 = s3.create_multipart_upload(Bucket=B, Key="mp2")["UploadId"]
r = s3.list_multipart_uploads(Bucket=B, MaxUploads=1)
t.check(len(r["Uploads"]) == 1 and r["IsTruncated"], "ListMultipartUploads page 1", r)
t.check(r["Uploads"][0].get("Initiator") == ME and r["Uploads"][0].get("Owner") == ME,
        "ListMultipartUploads Initiator and Owner", r)
r2 = s3.list_multipart_uploads(Bucket=B, KeyMarker=r["NextKeyMarker"], UploadIdMarker=r["NextUploadIdMarker"])
t.eq(sorted([u["UploadId"] for u in r["Uploads"] + r2["Uploads"]]), sorted([up, up2]), "ListMultipartUploads pages")


def complete(parts, uid=up, key="mp"):
    return code_of(s3.complete_multipart_upload, Bucket=B, Key=key, UploadId=uid, MultipartUpload={"Parts": parts})


t.eq(complete([{"PartNumber": 2, "ETag": e2}, {"PartNumber": 1, "ETag": e1}]), (400, "InvalidPartOrder"), "InvalidPartOrder")
t.eq(complete([{"PartNumber": 1, "ETag": e2}]), (400, "InvalidPart"), "a wrong part ETag: InvalidPart")
t.eq(complete([{"PartNumber": 4, "ETag": e1}]), (400, "InvalidPart"), "a missing part: InvalidPart")
t.eq(complete([{"PartNumber": 3, "ETag": e3}, {"PartNumber": 4, "ETag": e1}]), (400, "InvalidPart"), "missing part 4: InvalidPart")
upsmall = s3.create_multipart_upload(Bucket=B, Key="small")["UploadId"]
es1 = s3.upload_part(Bucket=B, Key="small", UploadId=upsmall, PartNumber=1, Body=b"x" * 100)["ETag"]
es2 = s3.upload_part(Bucket=B, Key="small", UploadId=upsmall, PartNumber=2, Body=b"y")["ETag"]
t.eq(complete([{"PartNumber": 1, "ETag": es1}, {"PartNumber": 2, "ETag": es2}], upsmall, "small"),
     (400, "EntityTooSmall"), "a part but the last under 5 MiB: EntityTooSmall")
t.eq(complete([{"PartNumber": 1, "ETag": e1}], "f" * 32), (404, "NoSuchUpload"), "Complete unknown upload: NoSuchUpload")
r = s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=up, MultipartUpload={"Parts": [
    {"PartNumber": 1, "ETag": e1.strip('"')}, {"PartNumber": 2, "ETag": e2}, {"PartNumber": 3, "ETag": e3}]})
want_etag = '"%s-3"' % hashlib.md5(bytes.fromhex(md5(p1)) + bytes.fromhex(md5(p2)) + bytes.fromhex(md5(p3))).hexdigest()
t.eq(r["ETag"], want_etag, "Complete (unquoted and quoted part ETags): md5-of-md5s-3")
g = s3.get_object(Bucket=B, Key="mp")
t.check(g["Body"].read() == p1 + p2 + p3 and g["ETag"] == want_etag and g["ContentType"] == "video/x" and
        g["Metadata"] == {"k": "v"}, "the completed object: bytes, ETag, metadata of Create")
t.eq(code_of(s3.list_parts, Bucket=B, Key="mp", UploadId=up), (404, "NoSuchUpload"), "the upload is gone after Complete")
t.eq(code_of(s3.abort_multipart_upload, Bucket=B, Key="mp2", UploadId=up2), (204, None), "Abort: 204")
t.eq(code_of(s3.abort_multipart_upload, Bucket=B, Key="mp2", UploadId=up2), (404, "NoSuchUpload"), "Abort again: NoSuchUpload")
s3.abort_multipart_upload(Bucket=B, Key="small", UploadId=upsmall)
up = s3.create_multipart_upload(Bucket=B, Key="pc")["UploadId"]
c1 = s3.upload_part_copy(Bucket=B, Key="pc", UploadId=up, PartNumber=1, CopySource={"Bucket": B, "Key": "mp"},
                         CopySourceRange="bytes=0-%d" % (MB5 - 1))["CopyPartResult"]["ETag"]
c2 = s3.upload_part_copy(Bucket=B, Key="pc", UploadId=up, PartNumber=2, CopySource={"Bucket": B, "Key": "mp"},
                         CopySourceRange="bytes=%d-%d" % (2 * MB5, 2 * MB5 + 9))["CopyPartResult"]["ETag"]
t.eq(c1, '"%s"' % md5(p1), "UploadPartCopy with a range: the part's MD5")
t.eq(code_of(s3.upload_part_copy, Bucket=B, Key="pc", UploadId=up, PartNumber=3, CopySource={"Bucket": B, "Key": "mp"},
             CopySourceRange="bytes=0-%d" % (3 * MB5)), (416, "InvalidRange"), "UploadPartCopy range past the end: InvalidRange")
s3.complete_multipart_upload(Bucket=B, Key="pc", UploadId=up, MultipartUpload={"Parts": [
    {"PartNumber": 1, "ETag": c1}, {"PartNumber": 2, "ETag": c2}]})
t.eq(s3.get_object(Bucket=B, Key="pc")["Body"].read(), p1 + p3[:10], "UploadPartCopy: the object is the ranges")

# --- presigned URLs ---------------------------------------------------------------------------------------------------
s3 = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK, region_name=REGION,
                  config=CFG.merge(botocore.config.Config(signature_version="s3v4")))
url = s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": "m/obj"}, ExpiresIn=60)
pu = urllib.parse.urlsplit(url)
st, _, body = raw("GET", pu.path + "?" + pu.query)
t.check(st == 200 and body == data, "presigned GET: 200 with the bytes", st)
url = s3.generate_presigned_url("put_object", Params={"Bucket": B, "Key": "pre put"}, ExpiresIn=60)
pu = urllib.parse.urlsplit(url)
st, _, body = raw("PUT", pu.path + "?" + pu.query, body=b"presigned")
t.check(st == 200 and s3.get_object(Bucket=B, Key="pre put")["Body"].read() == b"presigned", "presigned PUT", (st, body))
url = s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": "m/obj"}, ExpiresIn=1)
time.sleep(2.2)
pu = urllib.parse.urlsplit(url)
st, _, body = raw("GET", pu.path + "?" + pu.query)
t.check(st == 403 and b"<Code>AccessDenied</Code>" in body, "expired presigned URL: 403 AccessDenied", (st, body))

# --- native API interop -------------------------------------------------------------------------------------------------
import clulib
gw = clulib.Node("g1", "gateway")
gw.port = u.port
r1, r2 = clulib.follow("GET", EP, "/v1/objects/%s/m/obj" % B)
t.check(r2.status == 200 and r2.body == data, "an S3 object read through the native API", r2)
r1, r2 = clulib.follow("PUT", EP, "/v1/objects/%s/native%%20one" % B, body=b"from native")
g = s3.get_object(Bucket=B, Key="native one")
t.check(r2.status == 200 and g["Body"].read() == b"from native" and g["ContentType"] == "binary/octet-stream",
        "a native object read through S3", r2)

# --- the standalone target: auth off, virtual-hosted style, /s3/ prefix ----------------------------------------------------
T_URL = os.environ["AISD_URL"]
tp = urllib.parse.urlsplit(T_URL)
st, _, body = raw("PUT", "/", headers={"Host": "vhost.s3.test:%d" % tp.port}, url=T_URL)
t.eq(st, 200, "virtual-hosted CreateBucket (Host: vhost.s3.test, auth off)")
st, h, body = raw("PUT", "/dir/obj", body=b"vh", headers={"Host": "vhost.s3.test:%d" % tp.port}, url=T_URL)
t.check(st == 200 and h.get("etag") == '"%s"' % md5(b"vh"), "virtual-hosted PUT", (st, body))
st, _, body = raw("GET", "/vhost/dir/obj", url=T_URL)
t.check(st == 200 and body == b"vh", "the same object path-style", (st, body))
st, _, body = raw("GET", "/s3/vhost?list-type=2", url=T_URL)
t.check(st == 200 and b"<Key>dir/obj</Key>" in body, "listing under /s3/", body)
st, _, body = raw("GET", "/v1/nope", url=T_URL)
t.check(st == 404 and b'"status":404' in body, "/v1 stays native (404 JSON)", body)

# --- aisloader --s3: SigV4-signed load through the gateway ---------------------------------------------------------------
import subprocess
LOADER = os.path.join(os.path.dirname(os.environ["AISD_BIN"]), "aisloader")
lp = subprocess.run([LOADER, "--s3", "%s:%s" % (AK, SK), "--url", EP + "/" + B, "--op", "put", "--size", "3K",
                     "--objects", "8", "--count", "8", "--seq", "--duration", "0"], capture_output=True, text=True, timeout=60)
t.check(lp.returncode == 0, "aisloader --s3 PUTs 8 objects, signed", lp.stderr[-400:])
lg = subprocess.run([LOADER, "--s3", "%s:%s" % (AK, SK), "--url", EP + "/" + B, "--op", "get", "--size", "3K",
                     "--objects", "8", "--count", "40", "--verify", "--duration", "0"], capture_output=True, text=True, timeout=60)
t.check(lg.returncode == 0, "aisloader --s3 GETs them back (--verify)", lg.stderr[-400:])
t.eq(s3.head_object(Bucket=B, Key="obj-000007")["ContentLength"], 3072, "an aisloader object seen by boto3")
lb = subprocess.run([LOADER, "--s3", "%s:wrong" % AK, "--url", EP + "/" + B, "--op", "get", "--size", "3K",
                     "--objects", "8", "--count", "2", "--duration", "0"], capture_output=True, text=True, timeout=60)
t.check(lb.returncode == 1 and "403" in lb.stderr, "aisloader --s3 with a wrong secret: 403s, exit 1", lb.stderr[-400:])
s3.create_bucket(Bucket="edge-empty")
ln = subprocess.run([LOADER, "--url", EP + "/v1/objects/edge-empty", "--op", "get", "--objects", "8", "--count", "4",
                     "--duration", "0"], capture_output=True, text=True, timeout=60)
t.check(ln.returncode == 1 and "404" in ln.stdout + ln.stderr,
        "aisloader GETs of objects never written (no --prefill): 404s, exit 1", (ln.stdout[-400:], ln.stderr[-400:]))

errs = error_lines()
t.check(not errs, "no node logged an error", "\n".join(errs[:10]))
# nothing left hanging (an upload the target refused before its body, as
# part 10001 above, once kept the proxied request and SIGTERM waiting)
g = clulib.procs["g1"]
g.terminate()
t0 = time.monotonic()
try:
    g.wait(30)  # a hang is forever; 30 s is room for a loaded machine
    t.ok("the gateway stops on SIGTERM (%.1f s)" % (time.monotonic() - t0))
except subprocess.TimeoutExpired:
    t.fail("the gateway stops on SIGTERM within 30 s")
t.finish()
