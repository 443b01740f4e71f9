"""test_s3_acl.py - S3 access control lists and the S3 conformance details
that s3-tests checks, with boto3 and raw HTTP against a 1-gateway 3-target
cluster with s3.auth on and two key pairs (owner, other).

ACLs: canned ACLs on CreateBucket, PutObject, CopyObject and multipart;
GetBucketAcl/GetObjectAcl documents; PutBucketAcl/PutObjectAcl with a
canned header, x-amz-grant-* headers and an AccessControlPolicy body;
unknown users and e-mail grantees refused; anonymous (unsigned) GET, HEAD
and list allowed exactly where an ACL grants AllUsers READ, PUT where it
grants WRITE; the other key per user and AuthenticatedUsers grants; a
bucket made by the native API served to anonymous clients once it is
public-read, its objects included; PutObjectAcl on a copies=2 bucket
reaches both copies (each holder serves or refuses the anonymous GET).

Conformance: CreateBucket of an existing bucket (another owner:
BucketAlreadyExists; the owner: 200 with the same ACL, BucketAlreadyExists
with another, BucketAlreadyOwnedByYou at another region's endpoint); a
repeated CompleteMultipartUpload answers 200 with the same ETag; an empty
ListObjectsV2 continuation-token; x-amz-meta-* set to ""; OPTIONS on a
presigned URL; X-Amz-Expires 0, negative or over a week and an expired
presigned PUT answer 403 AccessDenied; a presigned GET of a deleted object
404; Content-Encoding with aws-chunked; a key with a newline listed raw
without encoding-type.
"""
# timeout: 240
import hashlib
import json
import time
import urllib.parse
import xml.etree.ElementTree as ET

import boto3
import botocore.config
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

import clulib
import hrwlib
from itlib import T
from s3lib import AK, REGION, SK, cluster, error_lines, http_raw

t = T()
AK2, SK2 = "aclsecondkey", "aclsecondsecret"
EP = cluster(t, "s3acl", args=["--set", "s3.key=%s:%s:uid-2:Second User" % (AK2, SK2)])
CFG = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                             signature_version="s3v4")
ME, YOU = "aisd-test", "uid-2"
ALL = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTHED = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"


def client(ak, sk, region=REGION):
    return boto3.client("s3", endpoint_url=EP, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name=region, config=CFG)


s3, s3b = client(AK, SK), client(AK2, SK2)

def raw(method, path, body=None, headers=None, url=None):
    """An unsigned (anonymous) request, or one to a full URL (presigned)."""
    if url:
        p = urllib.parse.urlsplit(url)
        path = p.path + ("?" + p.query if p.query else "")
    return http_raw(EP, method, path, body, headers)


def signed(method, path, query=""):
    """A request signed by the owner's key, sent as it is (no SDK parsing)."""
    url = EP + path + ("?" + query if query else "")
    rq = AWSRequest(method=method, url=url, headers={"x-amz-content-sha256": hashlib.sha256(b"").hexdigest()})
    SigV4Auth(Credentials(AK, SK), "s3", REGION).add_auth(rq)
    return raw(method, path + ("?" + query if query else ""), headers=dict(rq.headers))


def code_of(fn, *a, **kw):
    try:
        r = fn(*a, **kw)
        return r["ResponseMetadata"]["HTTPStatusCode"], None
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code")


def call(fn, *a, **kw):
    """A boto3 operation's result, or its error code (so that one check
    failing does not stop the others)."""
    try:
        return fn(*a, **kw)
    except ClientError as e:
        return {"Error": e.response["Error"].get("Code")}


def err_code(body):
    try:
        return ET.fromstring(body).findtext("Code")
    except ET.ParseError:
        return None


def grants(acl):
    """A set of (grantee, permission): grantee = user id or group URI."""
    return {(g["Grantee"].get("ID") or g["Grantee"].get("URI"), g["Permission"]) for g in acl["Grants"]}


# --- canned ACLs, GetBucketAcl / GetObjectAcl -------------------------------------------------------
s3.create_bucket(Bucket="pub", ACL="public-read")
acl = s3.get_bucket_acl(Bucket="pub")
t.eq(grants(acl), {(ALL, "READ"), (ME, "FULL_CONTROL")}, "CreateBucket public-read: AllUsers READ + owner FULL_CONTROL")
t.eq(acl["Owner"], {"ID": ME, "DisplayName": "AIS Test"}, "GetBucketAcl Owner: the creator")
t.check(any(g["Grantee"].get("DisplayName") == "AIS Test" for g in acl["Grants"]), "a user grant has its DisplayName")
s3.put_object(Bucket="pub", Key="a", Body=b"public bytes", ACL="public-read")
s3.put_object(Bucket="pub", Key="b", Body=b"private bytes")
t.eq(grants(s3.get_object_acl(Bucket="pub", Key="a")), {(ALL, "READ"), (ME, "FULL_CONTROL")},
     "PutObject x-amz-acl public-read: GetObjectAcl shows it")
t.eq(grants(s3.get_object_acl(Bucket="pub", Key="b")), {(ME, "FULL_CONTROL")}, "PutObject without an ACL: private")

# --- anonymous access ----------------------------------------------------------------------------------
st, h, body = raw("GET", "/pub/a")
t.check(st == 200 and body == b"public bytes", "anonymous GET of a public-read object: 200", (st, body[:200]))
t.eq(raw("HEAD", "/pub/a")[0], 200, "anonymous HEAD of a public-read object: 200")
st, h, body = raw("GET", "/pub/b")
t.check(st == 403 and err_code(body) == "AccessDenied", "anonymous GET of a private object: 403 AccessDenied", (st, body[:200]))
st, h, body = raw("GET", "/pub?list-type=2")
t.check(st == 200 and b"<Key>a</Key>" in body and b"<Key>b</Key>" in body,
        "anonymous ListObjectsV2 of a public-read bucket: 200 with its keys", (st, body[:300]))
st, h, body = raw("PUT", "/pub/c", body=b"x")
t.check(st == 403 and err_code(body) == "AccessDenied", "anonymous PUT into a public-read bucket: 403", (st, body[:200]))
st, h, body = raw("GET", "/pub/nokey")
t.eq(st, 404, "anonymous GET of a missing key in a listable bucket: 404")
s3.create_bucket(Bucket="priv")
s3.put_object(Bucket="priv", Key="k", Body=b"secret", ACL="public-read")
st, h, body = raw("GET", "/priv?list-type=2")
t.check(st == 403 and err_code(body) == "AccessDenied", "anonymous list of a private bucket: 403", (st, body[:200]))
st, h, body = raw("GET", "/priv/k")
t.check(st == 200 and body == b"secret", "anonymous GET of a public-read object in a private bucket: 200", st)
st, h, body = raw("GET", "/priv/nokey")
t.check(st == 403, "anonymous GET of a missing key in an unlistable bucket: 403 (existence not told)", st)
st, h, body = raw("GET", "/priv/k?acl")
t.check(st == 403, "anonymous GetObjectAcl without READ_ACP: 403", st)
st, h, body = raw("GET", "/nosuchbucket/k")
t.check(st == 404 and err_code(body) == "NoSuchBucket", "anonymous, missing bucket: 404 NoSuchBucket", st)
st, h, body = raw("GET", "/")
t.check(st == 200 and b"<Bucket>" not in body, "anonymous ListBuckets: 200, no buckets", (st, body[:200]))
s3.create_bucket(Bucket="prw", ACL="public-read-write")
t.eq(raw("PUT", "/prw/anon", body=b"anonymous write")[0], 200, "anonymous PUT into a public-read-write bucket: 200")
t.eq(s3.get_object(Bucket="prw", Key="anon")["Body"].read(), b"anonymous write", "the owner reads it")
t.eq(raw("DELETE", "/prw/anon")[0], 204, "anonymous DELETE in a public-read-write bucket: 204")
t.eq(raw("PUT", "/pub/acl", body=b"x", headers={"x-amz-acl": "public-read"})[0], 403,
     "anonymous PUT with x-amz-acl: 403")

# --- the other key ---------------------------------------------------------------------------------------
t.eq(code_of(s3b.get_object, Bucket="pub", Key="a"), (200, None), "other key: GET public-read object")
t.eq(code_of(s3b.get_object, Bucket="pub", Key="b"), (403, "AccessDenied"), "other key: GET private object: AccessDenied")
t.eq(code_of(s3b.list_objects_v2, Bucket="priv"), (403, "AccessDenied"), "other key: list a private bucket: AccessDenied")
t.eq(code_of(s3b.put_object, Bucket="pub", Key="x", Body=b"x"), (403, "AccessDenied"), "other key: PUT into public-read: AccessDenied")
t.eq(code_of(s3b.put_object, Bucket="prw", Key="y", Body=b"y"), (200, None), "other key: PUT into public-read-write: 200")
t.eq(code_of(s3b.delete_bucket, Bucket="prw"), (403, "AccessDenied"), "other key: DeleteBucket: AccessDenied")
t.eq(code_of(s3b.put_bucket_acl, Bucket="priv", ACL="public-read"), (403, "AccessDenied"),
     "other key: PutBucketAcl without WRITE_ACP: AccessDenied")
t.check("priv" not in [b["Name"] for b in s3b.list_buckets()["Buckets"]], "other key: ListBuckets hides the owner's buckets")
t.eq(code_of(s3b.create_bucket, Bucket="priv"), (409, "BucketAlreadyExists"), "CreateBucket of another key's bucket: 409 BucketAlreadyExists")
s3.put_object(Bucket="pub", Key="ar", Body=b"for keys", ACL="authenticated-read")
t.eq(code_of(s3b.get_object, Bucket="pub", Key="ar"), (200, None), "authenticated-read: another key reads")
t.eq(raw("GET", "/pub/ar")[0], 403, "authenticated-read: anonymous 403")

# --- PutBucketAcl / PutObjectAcl -------------------------------------------------------------------------
owner = {"ID": ME}
policy = {"Owner": owner, "Grants": [{"Grantee": {"Type": "CanonicalUser", "ID": ME}, "Permission": "FULL_CONTROL"},
                                     {"Grantee": {"Type": "CanonicalUser", "ID": YOU}, "Permission": "READ"}]}
s3.put_bucket_acl(Bucket="priv", AccessControlPolicy=policy)
t.eq(grants(s3.get_bucket_acl(Bucket="priv")), {(ME, "FULL_CONTROL"), (YOU, "READ")}, "PutBucketAcl body: the grants")
t.eq(code_of(s3b.list_objects_v2, Bucket="priv"), (200, None), "a READ grant to the other key: it lists")
t.eq(code_of(s3b.put_object, Bucket="priv", Key="z", Body=b"z"), (403, "AccessDenied"), "READ is not WRITE")
bad = {"Owner": owner, "Grants": [{"Grantee": {"Type": "CanonicalUser", "ID": "nobody"}, "Permission": "READ"}]}
t.eq(code_of(s3.put_bucket_acl, Bucket="priv", AccessControlPolicy=bad), (400, "InvalidArgument"),
     "a grant to an unknown user: 400 InvalidArgument")
mail = {"Owner": owner, "Grants": [{"Grantee": {"Type": "AmazonCustomerByEmail", "EmailAddress": "a@b.c"},
                                    "Permission": "READ"}]}
t.eq(code_of(s3.put_bucket_acl, Bucket="priv", AccessControlPolicy=mail), (400, "UnresolvableGrantByEmailAddress"),
     "an e-mail grantee: 400 UnresolvableGrantByEmailAddress")
st, h, body = signed("PUT", "/priv", "acl")
t.check(st == 400 and err_code(body) == "MissingSecurityHeader", "PutBucketAcl with no ACL at all: 400", (st, body[:200]))
s3.put_bucket_acl(Bucket="priv", GrantRead='uri="%s"' % ALL, GrantFullControl='id="%s"' % ME)
t.eq(grants(s3.get_bucket_acl(Bucket="priv")), {(ALL, "READ"), (ME, "FULL_CONTROL")}, "PutBucketAcl x-amz-grant-*")
t.eq(raw("GET", "/priv?list-type=2")[0], 200, "and now anonymous lists it")
t.eq(code_of(s3.put_bucket_acl, Bucket="priv", ACL="no-such-acl"), (400, "InvalidArgument"), "unknown canned ACL: 400")
s3.put_object_acl(Bucket="pub", Key="b", ACL="public-read")
t.eq(raw("GET", "/pub/b")[0], 200, "PutObjectAcl public-read: anonymous GET 200")
t.eq(s3.get_object(Bucket="pub", Key="b")["Body"].read(), b"private bytes", "the bytes are unchanged")
s3.put_object_acl(Bucket="pub", Key="b", AccessControlPolicy={"Owner": owner, "Grants": [
    {"Grantee": {"Type": "CanonicalUser", "ID": YOU}, "Permission": "READ"}]})
t.eq(code_of(s3b.get_object, Bucket="pub", Key="b"), (200, None), "PutObjectAcl body: the other key reads")
t.eq(raw("GET", "/pub/b")[0], 403, "and anonymous no longer")
t.eq(code_of(s3.get_object, Bucket="pub", Key="b"), (403, "AccessDenied"), "the owner without a READ grant: 403 (S3)")
t.eq(code_of(s3.get_object_acl, Bucket="pub", Key="b"), (200, None), "the owner keeps READ_ACP")
s3.put_object(Bucket="pub", Key="hg", Body=b"h", GrantRead='id="%s"' % YOU, GrantFullControl='id="%s"' % ME)
t.eq(grants(s3.get_object_acl(Bucket="pub", Key="hg")), {(YOU, "READ"), (ME, "FULL_CONTROL")}, "PutObject x-amz-grant-*")
t.eq(code_of(s3.put_object, Bucket="pub", Key="hh", Body=b"h", ACL="private", GrantRead='id="%s"' % YOU),
     (400, "InvalidRequest"), "canned ACL and grant headers together: 400 InvalidRequest")
s3.copy_object(Bucket="pub", Key="copy", CopySource="pub/a", ACL="public-read")
t.eq(raw("GET", "/pub/copy")[:3:2], (200, b"public bytes"), "CopyObject x-amz-acl: the copy is public")
s3.copy_object(Bucket="pub", Key="copy2", CopySource="pub/a")
t.eq(raw("GET", "/pub/copy2")[0], 403, "CopyObject without x-amz-acl: private (not the source's ACL)")
t.eq(code_of(s3b.copy_object, Bucket="prw", Key="c3", CopySource="pub/ar"), (200, None), "copy of an object the key may read")
t.eq(code_of(s3b.copy_object, Bucket="prw", Key="c4", CopySource="pub/copy2"), (403, "AccessDenied"),
     "copy of an object the key may not read: AccessDenied")
mp = s3.create_multipart_upload(Bucket="pub", Key="mp", ACL="public-read")
etag = s3.upload_part(Bucket="pub", Key="mp", UploadId=mp["UploadId"], PartNumber=1, Body=b"m" * 100)["ETag"]
parts = {"Parts": [{"PartNumber": 1, "ETag": etag}]}
done = s3.complete_multipart_upload(Bucket="pub", Key="mp", UploadId=mp["UploadId"], MultipartUpload=parts)
t.eq(raw("GET", "/pub/mp")[0], 200, "CreateMultipartUpload x-amz-acl public-read: the object is public")

# --- a bucket made by the native API: public once its ACL says so ----------------------------------------
g = clulib.request("POST", EP, "/v1/buckets/natds", json.dumps({"action": "create-bck"}),
                   {"Content-Type": "application/json"})
t.eq(g.status, 200, "native create-bck")
t.eq(clulib.follow("PUT", EP, "/v1/objects/natds/shard-0.tar", b"dataset bytes")[1].status, 200, "native PUT")
t.eq(raw("GET", "/natds/shard-0.tar")[0], 403, "native bucket, no ACL: anonymous 403")
t.eq(code_of(s3b.get_object, Bucket="natds", Key="shard-0.tar"), (200, None), "native bucket: every key reads (no owner)")
s3.put_bucket_acl(Bucket="natds", ACL="public-read")
st, h, body = raw("GET", "/natds/shard-0.tar")
t.check(st == 200 and body == b"dataset bytes", "native bucket made public-read: anonymous GET of its objects", st)
t.eq(raw("GET", "/natds?list-type=2")[0], 200, "and anonymous list")
t.eq(raw("PUT", "/natds/x", body=b"x")[0], 403, "but not anonymous PUT")
props = clulib.request("HEAD", EP, "/v1/buckets/natds").h("ais-bucket-props")
t.check(props and json.loads(props).get("s3", {}).get("acl") == "aR:uFaisd-test", "the ACL is in the BMD props", props)

# --- CreateBucket of an existing bucket --------------------------------------------------------------------
t.eq(code_of(s3.create_bucket, Bucket="pub"), (409, "BucketAlreadyExists"), "owner, another ACL (private vs public-read): 409 BucketAlreadyExists")
t.eq(code_of(s3.create_bucket, Bucket="pub", ACL="public-read"), (200, None), "owner, the same ACL, us-east-1: 200")
t.eq(code_of(client(AK, SK, "eu-west-1").create_bucket, Bucket="pub", ACL="public-read",
             CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}),
     (409, "BucketAlreadyOwnedByYou"), "owner at another region's endpoint: 409 BucketAlreadyOwnedByYou")
t.eq(code_of(s3b.create_bucket, Bucket="pub", ACL="public-read"), (409, "BucketAlreadyExists"), "another key: BucketAlreadyExists")

# --- conformance -------------------------------------------------------------------------------------------
again = call(s3.complete_multipart_upload, Bucket="pub", Key="mp", UploadId=mp["UploadId"], MultipartUpload=parts)
t.eq(again.get("ETag", again), done["ETag"], "CompleteMultipartUpload again: 200 with the same ETag")
t.eq(code_of(s3.complete_multipart_upload, Bucket="pub", Key="mp", UploadId="0" * 32, MultipartUpload=parts),
     (404, "NoSuchUpload"), "Complete of an upload that never was: NoSuchUpload")
r = call(s3.list_objects_v2, Bucket="prw", ContinuationToken="")
t.check(r.get("ContinuationToken") == "" and [o["Key"] for o in r.get("Contents", [])] == ["c3", "y"],
        "ListObjectsV2 with an empty continuation-token: from the start, echoed", r.get("Contents"))
s3.put_object(Bucket="pub", Key="meta", Body=b"m", Metadata={"empty": "", "full": "v"})
t.eq(s3.head_object(Bucket="pub", Key="meta")["Metadata"], {"empty": "", "full": "v"}, "x-amz-meta-* set to \"\" comes back")
for ce, want in (("deflate, gzip", "deflate, gzip"), ("gzip, aws-chunked", "gzip"), ("aws-chunked, gzip", "gzip"),
                 ("aws-chunked", None)):
    s3.put_object(Bucket="pub", Key="enc", Body=b"e", ContentEncoding=ce)
    t.eq(s3.head_object(Bucket="pub", Key="enc").get("ContentEncoding"), want, "Content-Encoding %r stored as %r" % (ce, want))
url = s3.generate_presigned_url("get_object", Params={"Bucket": "pub", "Key": "a"}, ExpiresIn=100000)
t.eq(raw("OPTIONS", None, url=url)[0], 400, "OPTIONS on a presigned URL (no Origin): 400")
t.eq(raw("OPTIONS", None, url=url, headers={"Origin": "http://x"})[0], 400,
     "OPTIONS with an Origin, no Access-Control-Request-Method: 400")
t.eq(raw("OPTIONS", None, url=url, headers={"Origin": "http://x", "Access-Control-Request-Method": "GET"})[0], 403,
     "OPTIONS with an Origin and a method (no CORS): 403")
t.eq(raw("GET", None, url=url)[0], 200, "the presigned GET itself: 200")
for exp in ("0", "-7", "609901"):
    st, h, body = raw("GET", None, url=url.replace("X-Amz-Expires=100000", "X-Amz-Expires=" + exp))
    t.check(st == 403 and err_code(body) == "AccessDenied", "X-Amz-Expires=%s: 403 AccessDenied" % exp, (st, body[:200]))
put_url = s3.generate_presigned_url("put_object", Params={"Bucket": "pub", "Key": "exp"}, ExpiresIn=1)
time.sleep(2.2)
st, h, body = raw("PUT", None, body=b"late", url=put_url)
t.check(st == 403 and err_code(body) == "AccessDenied", "an expired presigned PUT: 403 AccessDenied", (st, body[:200]))
s3.put_object(Bucket="priv", Key="gone", Body=b"g")
gone_url = s3.generate_presigned_url("get_object", Params={"Bucket": "priv", "Key": "gone"}, ExpiresIn=600)
s3.delete_object(Bucket="priv", Key="gone")
st, h, body = raw("GET", None, url=gone_url)
t.check(st == 404 and err_code(body) == "NoSuchKey", "presigned GET of a deleted object: 404 NoSuchKey", (st, body[:200]))
s3.put_object(Bucket="priv", Key="line\nbreak", Body=b"n")
st, h, body = signed("GET", "/priv", "list-type=2&prefix=line")
keys = [k.text for k in ET.fromstring(body).iter("{http://s3.amazonaws.com/doc/2006-03-01/}Key")] if st == 200 else []
t.check(keys == ["line\nbreak"], "a key with a newline listed as it is without encoding-type (XML-escaped)", body[:300])
st, h, body = signed("GET", "/priv", "encoding-type=url&list-type=2&prefix=line")
t.check(st == 200 and b"<Key>line%0Abreak</Key>" in body, "and percent-encoded with encoding-type=url", body[:300])

# PutObjectAcl on a mirrored bucket sets every copy: both holders serve an
# anonymous GET (before, the copy that was not the owner's kept "private")
s3.create_bucket(Bucket="mir")
g, ts = cluster.nodes[0], cluster.nodes[1:]
mp = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(clulib.request("PATCH", g.url, "/v1/buckets/mir", mp, {"Content-Type": "application/json"}).status, 200,
     "mir: mirror.copies=2")
s3.put_object(Bucket="mir", Key="k", Body=b"mirrored")
s3.put_object_acl(Bucket="mir", Key="k", ACL="public-read")
holders = [n for i in hrwlib.top("mir/k", [n.id for n in ts], 2) for n in ts if n.id == i]
got = [http_raw(n.url, "GET", "/mir/k")[::2] for n in holders]
t.eq(got, [(200, b"mirrored")] * 2, "PutObjectAcl public-read on a copies=2 bucket: each holder serves it anonymously")
s3.put_object_acl(Bucket="mir", Key="k", ACL="private")
t.eq([http_raw(n.url, "GET", "/mir/k")[0] for n in holders], [403, 403], "  and private again: neither does")

t.eq(error_lines(), [], "no error-level log line on any node")
t.finish()
