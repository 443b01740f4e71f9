"""test_s3_nyi.py - no silent acceptance: every S3 header and sub-resource
of a feature aisd does not implement answers 501 NotImplemented (S3's XML
error naming the header or sub-resource) and changes nothing, never 200
with the feature ignored; the configurations no bucket has are answered
as S3 answers a bucket without them (GET ?policy 404 NoSuchBucketPolicy,
GET ?versioning an empty VersioningConfiguration, DELETE ?cors 204).

Walks the whole table with signed raw requests (botocore's SigV4 signer,
so nothing in an SDK drops or rewrites a header) and the common cases with
boto3 (SSE-C, SSE-S3, SSE-KMS, MFA delete, storage
classes; object lock headers are refused on a bucket without it),
on a 1-gateway 3-target cluster with auth on: after
each refused request the bucket's objects are the same bytes and ETags
and no new key exists. Also: versionId=null is served (every object is
its key's null version), DELETE /bucket?versioning no longer deletes the
bucket, and ListMultipartUploads / ListParts show the upload's creator
as Initiator and Owner, not the caller.
"""
# timeout: 240
import hashlib
import xml.etree.ElementTree as ET

import boto3
import botocore.config
from botocore.exceptions import ClientError

from itlib import T
import s3lib
from s3lib import AK, REGION, SK, cluster, error_lines

t = T()
AK2, SK2 = "aisdnyikey2", "aisdnyisecret2"
EP = cluster(t, "s3nyi", args=["--set", "s3.key=%s:%s:uid-2:Second User" % (AK2, SK2)])
CFG = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
s3 = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK, region_name=REGION, config=CFG)
s3b = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK2, aws_secret_access_key=SK2, region_name=REGION,
                   config=CFG)


def signed(method, path, body=b"", headers=None, ak=AK, sk=SK):
    return s3lib.signed(EP, method, path, body, headers, ak, sk)


def err_of(body):
    try:
        d = ET.fromstring(body)
        return d.findtext("Code"), d.findtext("Message") or ""
    except ET.ParseError:
        return None, ""


def code_of(fn, *a, **kw):
    try:
        r = fn(*a, **kw)
        return r["ResponseMetadata"]["HTTPStatusCode"], None
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code")


B, E = "nyi", "nyi-empty"
s3.create_bucket(Bucket=B, ACL="authenticated-read")
s3.create_bucket(Bucket=E)
DATA = b"the original bytes\n" * 100
KEYS = {"obj": DATA, "dir/obj2": DATA[::-1]}
for k, v in KEYS.items():
    s3.put_object(Bucket=B, Key=k, Body=v)
ETAGS = {k: '"%s"' % hashlib.md5(v).hexdigest() for k, v in KEYS.items()}


def unchanged(what):
    """The bucket holds exactly KEYS with their bytes and ETags, and both
    buckets still exist; then puts back whatever was changed, so that each
    section is checked on its own."""
    names = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=B).get("Contents", []))
    ok = names == sorted(KEYS)
    for k, v in KEYS.items():
        try:
            r = s3.get_object(Bucket=B, Key=k)
            ok = ok and r["Body"].read() == v and r["ETag"] == ETAGS[k] and "ServerSideEncryption" not in r
        except ClientError:
            ok = False
    e_ok = code_of(s3.head_bucket, Bucket=E) == (200, None)
    ok = ok and e_ok and not s3.list_objects_v2(Bucket=E).get("Contents")
    t.check(ok, "%s: nothing written or changed" % what, names)
    if not ok:
        for n in set(names) - set(KEYS):
            s3.delete_object(Bucket=B, Key=n)
        for k, v in KEYS.items():
            s3.put_object(Bucket=B, Key=k, Body=v)
        if not e_ok:
            s3.create_bucket(Bucket=E)


def nyi(st, body, name, what):
    code, msg = err_of(body)
    t.check(st == 501 and code == "NotImplemented" and name.lower() in msg.lower(),
            "%s: 501 NotImplemented naming %s" % (what, name), (st, body[:300]))


# --- headers: on PUT (new key and overwrite), copy, CreateMultipartUpload, GET ------------------------------------
SSEC = {"x-amz-server-side-encryption-customer-algorithm": "AES256",
        "x-amz-server-side-encryption-customer-key": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
        "x-amz-server-side-encryption-customer-key-MD5": "zZ5FnqcIqUjVwvWmyog4zw=="}
HEADERS = [  # (header, value) asking for what aisd does not do
    ("x-amz-server-side-encryption", "AES256"),
    ("x-amz-server-side-encryption", "aws:kms"),
    ("x-amz-server-side-encryption-aws-kms-key-id", "arn:aws:kms:us-east-1:1:key/x"),
    ("x-amz-server-side-encryption-context", "e30="),
    ("x-amz-server-side-encryption-bucket-key-enabled", "true"),
    ("x-amz-server-side-encryption-customer-algorithm", "AES256"),
    ("x-amz-website-redirect-location", "/elsewhere"),
    ("x-amz-storage-class", "GLACIER"),
    ("x-amz-storage-class", "STANDARD_IA"),
    ("x-amz-expected-bucket-owner", "111122223333"),
    ("x-amz-mfa", "SERIAL 123456"),
    ("x-amz-write-offset-bytes", "0"),
]
# PutObject, CopyObject and CreateMultipartUpload serve server-side encryption (test_s3_sse.py, test_s3_ssebucket.py,
# test_s3_ssempu.py); on this cluster SSE-S3 and SSE-KMS are not
# configured (501 naming the header), SSE-C is refused over plain HTTP and a KMS key id needs aws:kms (400)
PUT_SERVED = {"x-amz-server-side-encryption-aws-kms-key-id": (400, "InvalidArgument"),
              "x-amz-server-side-encryption-customer-algorithm": (400, "InvalidRequest")}


def refused(st, body, h, what):
    if h in PUT_SERVED:
        t.eq((st, err_of(body)[0]), PUT_SERVED[h], what + ": %d %s" % PUT_SERVED[h])
    else:
        nyi(st, body, h, what)


# the object lock headers are served (test_s3_objlock.py): refused on a bucket without object lock
LOCK = [("x-amz-object-lock-mode", "GOVERNANCE"), ("x-amz-object-lock-retain-until-date", "2099-01-01T00:00:00Z"),
        ("x-amz-object-lock-legal-hold", "ON")]
for h, v in LOCK:
    for what, m, path, hdrs in (("PUT", "PUT", "/%s/new-key" % B, {}),
                                ("CopyObject", "PUT", "/%s/copy-key" % B, {"x-amz-copy-source": "/%s/obj" % B}),
                                ("CreateMultipartUpload", "POST", "/%s/mpu-key?uploads" % B, {})):
        st, _, body = signed(m, path, b"x" if m == "PUT" and not hdrs else b"", dict(hdrs, **{h: v}))
        t.check(st == 400 and err_of(body)[0] in ("InvalidRequest", "InvalidArgument"),
                "%s with %s on a bucket without object lock: 400" % (what, h), (st, body[:300]))
for h, v in HEADERS:
    st, _, body = signed("PUT", "/%s/new-key" % B, b"new bytes", {h: v})
    refused(st, body, h, "PUT new key with %s: %s" % (h, v))
    st, _, body = signed("PUT", "/%s/obj" % B, b"overwritten", {h: v})
    refused(st, body, h, "PUT over obj with %s" % h)
    st, _, body = signed("PUT", "/%s/copy-key" % B, b"", {h: v, "x-amz-copy-source": "/%s/obj" % B})
    refused(st, body, h, "CopyObject with %s" % h)  # CopyObject serves them as PutObject does
    st, _, body = signed("POST", "/%s/mpu-key?uploads" % B, b"", {h: v})
    if h.startswith("x-amz-server-side-encryption"):  # CreateMultipartUpload serves them as PutObject does
        refused(st, body, h, "CreateMultipartUpload with %s" % h)
    else:
        nyi(st, body, h, "CreateMultipartUpload with %s" % h)
# conditional writes are served on PutObject and CompleteMultipartUpload only
for h, v in (("If-None-Match", "*"), ("If-Match", ETAGS["obj"])):
    st, _, body = signed("PUT", "/%s/copy-key" % B, b"", {h: v, "x-amz-copy-source": "/%s/obj" % B})
    refused(st, body, h, "CopyObject with %s" % h)  # CopyObject serves them as PutObject does
    st, _, body = signed("POST", "/%s/mpu-key?uploads" % B, b"", {h: v})
    nyi(st, body, h, "CreateMultipartUpload with %s" % h)
for h, v in SSEC.items():  # GetObject serves SSE-C keys, refused over plain HTTP here
    st, _, body = signed("GET", "/%s/obj" % B, b"", {h: v})
    t.eq((st, err_of(body)[0]), (400, "InvalidRequest"), "GET with %s over plain HTTP: 400 InvalidRequest" % h)
st, _, body = signed("PUT", "/%s/copy-key" % B, b"", {"x-amz-copy-source": "/%s/obj" % B,
                                                     "x-amz-copy-source-server-side-encryption-customer-algorithm": "AES256"})
t.eq((st, err_of(body)[0]), (400, "InvalidRequest"),
     "CopyObject with an SSE-C source key over plain HTTP: 400 InvalidRequest")  # served (test_s3_ssecopy.py)
st, _, body = signed("DELETE", "/%s/obj" % B, b"", {"If-Match": ETAGS["obj"]})
nyi(st, body, "If-Match", "DeleteObject with If-Match (conditional delete)")
st, _, body = signed("DELETE", "/%s/obj" % B, b"", {"x-amz-if-match-size": "1900"})
nyi(st, body, "x-amz-if-match-size", "DeleteObject with x-amz-if-match-size")
st, _, body = signed("DELETE", "/%s/obj" % B, b"", {"x-amz-mfa": "SERIAL 123456"})
nyi(st, body, "x-amz-mfa", "DeleteObject with x-amz-mfa")
st, _, body = signed("GET", "/%s?list-type=2" % B, b"", {"x-amz-expected-bucket-owner": "111122223333"})
nyi(st, body, "x-amz-expected-bucket-owner", "ListObjectsV2 with x-amz-expected-bucket-owner")
unchanged("the refused headers")

# accepted: the values that ask for nothing aisd lacks
st, _, body = signed("POST", "/%s/mpu-ok?uploads" % B, b"", {"x-amz-checksum-algorithm": "CRC32",
                                                            "x-amz-checksum-type": "COMPOSITE"})
up = ET.fromstring(body).findtext("{http://s3.amazonaws.com/doc/2006-03-01/}UploadId") if st == 200 else None
t.check(st == 200 and up, "CreateMultipartUpload with a CRC32 composite checksum (each part verified): 200", body)
if up:
    s3.abort_multipart_upload(Bucket=B, Key="mpu-ok", UploadId=up)
st, _, body = signed("POST", "/%s/mpu-ok?uploads" % B, b"", {"x-amz-checksum-algorithm": "CRC64NVME",
                                                            "x-amz-checksum-type": "FULL_OBJECT"})
up = ET.fromstring(body).findtext("{http://s3.amazonaws.com/doc/2006-03-01/}UploadId") if st == 200 else None
t.check(st == 200 and up, "CreateMultipartUpload with a CRC64NVME full-object checksum: 200", body)
if up:
    s3.abort_multipart_upload(Bucket=B, Key="mpu-ok", UploadId=up)
st, _, body = signed("PUT", "/%s/std" % B, b"std", {"x-amz-storage-class": "STANDARD", "x-amz-tagging": "",
                                                    "x-amz-meta-mtime": "1700000000.5"})
t.check(st == 200, "PUT with x-amz-storage-class: STANDARD, an empty x-amz-tagging and x-amz-meta-mtime: 200", body)
s3.delete_object(Bucket=B, Key="std")

# a CreateBucketConfiguration field other than LocationConstraint (directory buckets, tags): refused, no bucket
for field in (b"<Bucket><Type>Directory</Type><DataRedundancy>SingleAvailabilityZone</DataRedundancy></Bucket>",
              b"<Location><Name>usw2-az1</Name><Type>AvailabilityZone</Type></Location>",
              b"<Tags><Tag><Key>a</Key><Value>b</Value></Tag></Tags>"):
    name = field[1:field.index(b">")].decode()
    st, _, body = signed("PUT", "/nyi-lock", b"<CreateBucketConfiguration><LocationConstraint>us-west-2"
                         b"</LocationConstraint>" + field + b"</CreateBucketConfiguration>")
    nyi(st, body, "CreateBucketConfiguration/" + name, "CreateBucket with <%s>" % name)
    t.eq(code_of(s3.head_bucket, Bucket="nyi-lock"), (404, "404"), "CreateBucket with <%s>: no bucket" % name)
st, _, body = signed("PUT", "/nyi-nolock", b"", {"x-amz-bucket-object-lock-enabled": "false",
                                                "x-amz-object-ownership": "ObjectWriter"})
t.check(st == 200, "CreateBucket with object lock false and ObjectWriter ownership: 200", body)
s3.delete_bucket(Bucket="nyi-nolock")

# --- sub-resources -------------------------------------------------------------------------------------------------
XML = b"<x/>"
BUCKET_NYI = {  # sub-resource: methods refused
    "versioning": ["DELETE", "POST"], "tagging": ["POST"], "policy": ["POST"],
    "policyStatus": ["PUT", "DELETE"], "cors": ["POST"], "lifecycle": ["POST"], "encryption": ["POST"],
    "object-lock": ["DELETE"], "website": ["PUT"], "replication": ["PUT"], "ownershipControls": ["POST"],
    "publicAccessBlock": ["POST"], "logging": ["DELETE"], "notification": ["PUT"], "accelerate": ["PUT"],
    "requestPayment": ["PUT"], "analytics": ["GET", "PUT", "DELETE"], "inventory": ["GET", "PUT", "DELETE"],
    "metrics": ["GET", "PUT", "DELETE"], "intelligent-tiering": ["GET", "PUT", "DELETE"],
    "metadataTable": ["GET", "POST", "DELETE"], "session": ["GET"],
    "location": ["PUT", "DELETE"], "versions": ["DELETE", "PUT"], "uploads": ["DELETE", "PUT"],
    "acl": ["DELETE"], "retention": ["GET", "PUT"], "legal-hold": ["GET"], "restore": ["POST"],
}
for sub, methods in BUCKET_NYI.items():
    for m in methods:
        for bck in (B, E):
            st, _, body = signed(m, "/%s?%s" % (bck, sub), XML if m in ("PUT", "POST") else b"")
            nyi(st, body, "?" + sub, "%s /%s?%s" % (m, bck, sub))
unchanged("the refused bucket sub-resources (DELETE ?versioning, ?location, ... of an empty bucket)")

OBJECT_NYI = {
    "retention": ["DELETE"], "legal-hold": ["DELETE"], "restore": ["POST"], "select": ["POST"],
    "torrent": ["GET"], "attributes": ["PUT"], "renameObject": ["PUT"], "versionId=3HL4kqtJlcpXroDTDmJ": ["PUT"],
    "versioning": ["PUT", "GET", "DELETE"], "policy": ["DELETE"],
    "cors": ["DELETE"], "location": ["GET", "DELETE"], "delete": ["POST", "DELETE"], "acl": ["DELETE"],
}
for sub, methods in OBJECT_NYI.items():
    for m in methods:
        st, _, body = signed(m, "/%s/obj?%s" % (B, sub), XML if m in ("PUT", "POST") else b"")
        name = "?" + sub.split("=")[0]
        if m == "HEAD":
            t.check(st == 501 and not body, "HEAD /obj?%s: 501 without a body" % sub, (st, body))
        else:
            nyi(st, body, name, "%s /obj?%s" % (m, sub))
unchanged("the refused object sub-resources")
# versioning is built (test_s3_versioning.py): on this unversioned bucket a
# made-up versionId is refused as S3 refuses it, never served as the object
for m in ("GET", "DELETE"):
    st, _, body = signed(m, "/%s/obj?versionId=3HL4kqtJlcpXroDTDmJ" % B)
    t.check(st == 400 and err_of(body)[0] == "InvalidArgument",
            "%s /obj?versionId=(made up) of an unversioned bucket: 400 InvalidArgument" % m, (st, body[:300]))
st, _, body = signed("PUT", "/%s?versioning" % B, XML)
t.check(st == 400 and err_of(body)[0] == "MalformedXML", "PUT ?versioning with a bad body: 400 MalformedXML",
        (st, body[:300]))
unchanged("the refused versionId reads and deletes")

st, _, body = signed("POST", "/%s" % B, b"key=x&file=y", {"Content-Type": "multipart/form-data; boundary=z"})
t.check(st == 400 and err_of(body)[0] == "MalformedPOSTRequest",
        "POST /bucket with a form body that is not multipart: 400 MalformedPOSTRequest (test_s3_post.py)",
        (st, body[:300]))
st, _, body = signed("POST", "/%s" % B, b"key=x&file=y", {"Content-Type": "application/x-www-form-urlencoded"})
nyi(st, body, "POST Object", "POST /bucket that is not a multipart/form-data form")

# GET of configurations no bucket has: what S3 answers for a bucket without one
ABSENT = {"tagging": "NoSuchTagSet", "policy": "NoSuchBucketPolicy",
          "cors": "NoSuchCORSConfiguration", "lifecycle": "NoSuchLifecycleConfiguration",
          "encryption": "ServerSideEncryptionConfigurationNotFoundError",
          "object-lock": "ObjectLockConfigurationNotFoundError", "website": "NoSuchWebsiteConfiguration",
          "replication": "ReplicationConfigurationNotFoundError", "ownershipControls": "OwnershipControlsNotFoundError",
          "publicAccessBlock": "NoSuchPublicAccessBlockConfiguration"}
for sub, code in ABSENT.items():
    st, _, body = signed("GET", "/%s?%s" % (B, sub))
    t.check(st == 404 and err_of(body)[0] == code, "GET ?%s: 404 %s" % (sub, code), (st, body[:300]))
    st, _, body = signed("GET", "/nyi-missing?%s" % sub)
    t.check(st == 404 and err_of(body)[0] == "NoSuchBucket", "GET ?%s of a missing bucket: NoSuchBucket" % sub,
            (st, body[:300]))
DOCS = {"versioning": "VersioningConfiguration", "logging": "BucketLoggingStatus",
        "notification": "NotificationConfiguration", "accelerate": "AccelerateConfiguration",
        "requestPayment": "RequestPaymentConfiguration"}
for sub, root in DOCS.items():
    st, _, body = signed("GET", "/%s?%s" % (B, sub))
    t.check(st == 200 and ET.fromstring(body).tag.endswith(root) and b"<Status>" not in body and b"Enabled" not in body,
            "GET ?%s: 200, an empty %s" % (sub, root), (st, body[:300]))
for sub in ("retention", "legal-hold"):
    for m in ("GET", "PUT"):
        st, _, body = signed(m, "/%s/obj?%s" % (B, sub), XML if m == "PUT" else b"")
        t.check(st == 400 and err_of(body)[0] == "InvalidRequest" and "Object Lock" in err_of(body)[1],
                "%s /obj?%s: 400 InvalidRequest, the bucket has no object lock" % (m, sub), (st, body[:300]))
for sub in ("policy", "cors", "lifecycle", "encryption", "website", "replication", "ownershipControls",
            "publicAccessBlock", "tagging"):
    st, _, body = signed("DELETE", "/%s?%s" % (E, sub))
    t.check(st == 204, "DELETE ?%s: 204, nothing to delete" % sub, (st, body[:300]))
st, _, body = signed("DELETE", "/%s/obj?tagging" % B)
t.check(st == 204, "DELETE /obj?tagging: 204, no tags to delete", (st, body[:300]))
unchanged("the configuration reads and deletes (DELETE /bucket?policy did not delete the bucket)")

# implemented sub-resources still work
t.eq(s3.get_bucket_location(Bucket=B).get("LocationConstraint"), None, "GetBucketLocation still works")
t.eq(s3.get_object_tagging(Bucket=B, Key="obj")["TagSet"], [], "GetObjectTagging: no tags")
t.eq(s3.get_object(Bucket=B, Key="obj", VersionId="null")["Body"].read(), DATA, "GET ?versionId=null: the object")
t.eq(s3.head_object(Bucket=B, Key="obj", VersionId="null")["ETag"], ETAGS["obj"], "HEAD ?versionId=null")
v = s3.list_object_versions(Bucket=B)["Versions"]
t.check(sorted(x["Key"] for x in v) == sorted(KEYS) and all(x["VersionId"] == "null" for x in v),
        "ListObjectVersions: null versions", v)

# --- boto3: the common cases ----------------------------------------------------------------------------------------
CASES = [
    ("PutObject SSE-C", s3.put_object, dict(Bucket=B, Key="obj", Body=b"x", SSECustomerAlgorithm="AES256",
                                            SSECustomerKey="0123456789abcdef0123456789abcdef")),
    ("PutObject SSE-S3", s3.put_object, dict(Bucket=B, Key="obj", Body=b"x", ServerSideEncryption="AES256")),
    ("PutObject SSE-KMS", s3.put_object, dict(Bucket=B, Key="new", Body=b"x", ServerSideEncryption="aws:kms",
                                              SSEKMSKeyId="k")),
    ("GetObject SSE-C", s3.get_object, dict(Bucket=B, Key="obj", SSECustomerAlgorithm="AES256",
                                            SSECustomerKey="0123456789abcdef0123456789abcdef")),
    ("PutObject GLACIER", s3.put_object, dict(Bucket=B, Key="obj", Body=b"x", StorageClass="GLACIER")),
    ("CopyObject SSE-S3", s3.copy_object, dict(Bucket=B, Key="new", CopySource={"Bucket": B, "Key": "obj"},
                                              ServerSideEncryption="AES256")),
    ("CreateMultipartUpload SSE-S3 (not configured here)", s3.create_multipart_upload,
     dict(Bucket=B, Key="new", ServerSideEncryption="AES256")),
    ("PutBucketVersioning MfaDelete", s3.put_bucket_versioning,
     dict(Bucket=B, VersioningConfiguration={"Status": "Enabled", "MFADelete": "Enabled"})),
    ("PutBucketEncryption (SSE-S3 without s3.sse_key_file)", s3.put_bucket_encryption, dict(Bucket=B, ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})),
    ("PutBucketLifecycleConfiguration with a Transition (test_s3_lifecycle.py)",
     s3.put_bucket_lifecycle_configuration, dict(
        Bucket=B, LifecycleConfiguration={"Rules": [{"ID": "x", "Status": "Enabled", "Filter": {"Prefix": ""},
                                                     "Transitions": [{"Days": 1, "StorageClass": "GLACIER"}]}]})),
]
CASES.append(("PutObject SSE-S3 of 16 MiB (refused before the body is read)", s3.put_object,
              dict(Bucket=B, Key="big", Body=b"z" * (16 << 20), ServerSideEncryption="AES256")))
for what, fn, kw in CASES:
    if what in ("PutObject SSE-C", "GetObject SSE-C"):  # served, but not over plain HTTP (test_s3_sse.py)
        t.eq(code_of(fn, **kw), (400, "InvalidRequest"), "boto3 %s over plain HTTP: 400 InvalidRequest" % what)
        continue
    t.eq(code_of(fn, **kw), (501, "NotImplemented"), "boto3 %s: 501 NotImplemented" % what)
t.eq(s3.get_bucket_versioning(Bucket=B).get("Status"), None, "GetBucketVersioning after the refused Put: never enabled")
for what, fn, kw in [("GetObject", s3.get_object, dict(Bucket=B, Key="obj", VersionId="3HL4kqtJlcpXroDTDmJ")),
                     ("DeleteObject", s3.delete_object, dict(Bucket=B, Key="obj", VersionId="3HL4kqtJlcpXroDTDmJ"))]:
    t.eq(code_of(fn, **kw), (400, "InvalidArgument"), "boto3 %s with a made-up versionId: 400 InvalidArgument" % what)
t.eq(code_of(s3.put_object_lock_configuration, Bucket=B, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"}),
     (409, "InvalidBucketState"), "boto3 PutObjectLockConfiguration on an unversioned bucket: 409 InvalidBucketState")
t.eq(code_of(s3.get_bucket_policy, Bucket=B), (404, "NoSuchBucketPolicy"), "boto3 GetBucketPolicy: NoSuchBucketPolicy")
# bucket policies are built (test_s3_policy.py): one without statements is malformed, never stored
t.eq(code_of(s3.put_bucket_policy, Bucket=B, Policy='{"Version":"2012-10-17","Statement":[]}'),
     (400, "MalformedPolicy"), "boto3 PutBucketPolicy without statements: 400 MalformedPolicy")
t.eq(code_of(s3.get_bucket_encryption, Bucket=B), (404, "ServerSideEncryptionConfigurationNotFoundError"),
     "boto3 GetBucketEncryption: not found")
t.eq(code_of(s3.get_object_lock_configuration, Bucket=B), (404, "ObjectLockConfigurationNotFoundError"),
     "boto3 GetObjectLockConfiguration: not found")
unchanged("the refused boto3 calls")

# --- multipart uploads: the real initiator and owner ------------------------------------------------------------------
up = s3.create_multipart_upload(Bucket=B, Key="mpu/by-me")["UploadId"]
ME, YOU = {"ID": "aisd-test", "DisplayName": "AIS Test"}, {"ID": "uid-2", "DisplayName": "Second User"}
for who, c in (("the creator", s3), ("another user", s3b)):
    r = c.list_multipart_uploads(Bucket=B)
    u = [x for x in r.get("Uploads", []) if x["UploadId"] == up]
    t.check(len(u) == 1 and u[0].get("Initiator") == ME and u[0].get("Owner") == ME,
            "ListMultipartUploads by %s: Initiator and Owner are the creator" % who, r.get("Uploads"))
r = s3.list_parts(Bucket=B, Key="mpu/by-me", UploadId=up)
t.check(r.get("Initiator") == ME and r.get("Owner") == ME, "ListParts: Initiator and Owner are the creator", r)
s3.abort_multipart_upload(Bucket=B, Key="mpu/by-me", UploadId=up)

t.eq(error_lines(), [], "no error-level log lines on any node")
t.finish()
