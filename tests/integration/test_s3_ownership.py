"""test_s3_ownership.py - S3 bucket ownership controls
(Put/Get/DeleteBucketOwnershipControls, CreateBucket's
x-amz-object-ownership) and what each setting does to object ownership
and ACLs, with boto3 and two users (the bucket owner and another) against
a 1-gateway 3-target cluster.

Checks:
 1. A bucket without controls: GetBucketOwnershipControls 404
    OwnershipControlsNotFoundError, DeleteBucketOwnershipControls 204.
 2. S3's refusals of a Put body: not XML, no Rule, an ObjectOwnership S3
    does not have, two Rules: 400 MalformedXML, nothing stored.
 3. CreateBucket with x-amz-object-ownership: each of the three values is
    kept and answered (also when sent to a target, which asks the
    primary); another value 400 InvalidArgument; BucketOwnerEnforced
    with a public-read ACL 400 InvalidBucketAclWithObjectOwnership; neither
    creates the bucket.
 4. ObjectWriter: the other user's writes (PutObject with or without
    bucket-owner-full-control, CopyObject, CreateMultipartUpload) are its
    own; the bucket owner cannot read them (their ACL is private).
 5. BucketOwnerPreferred: a write with x-amz-acl bucket-owner-full-control
    is the bucket owner's (PutObject, CopyObject, multipart), any other the
    writer's.
 6. BucketOwnerEnforced: refused while the bucket's ACL is public-read
    (InvalidBucketAclWithObjectOwnership); then every object, old ones too,
    reads as the bucket owner's with full control; the bucket owner reads
    the other user's old object, which that user, allowed only s3:PutObject
    by the policy, no longer can; a write or PutObjectAcl/PutBucketAcl with
    any ACL but bucket-owner-full-control: 400 AccessControlListNotSupported;
    with it: accepted.
 7. DeleteBucketOwnershipControls: 204, then 404, and writes are the
    writer's again.
 8. The setting is in the BMD: read straight from every target, and from
    the gateway after it is killed and started again.
 9. No error-level line in any node's log.
"""
# timeout: 180
import json

import boto3
import botocore.config
from botocore.exceptions import ClientError

import clulib
from itlib import T
from s3lib import AK, REGION, SK, cluster, signed

t = T()
AK2, SK2 = "ownsecondkey", "ownsecondsecret"
EP = cluster(t, "s3own", args=["--set", "s3.key=%s:%s:uid-2:Second User" % (AK2, SK2)])
g = cluster.nodes[0]
CFG = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
ME, YOU = "aisd-test", "uid-2"


def client(ak, sk, ep=EP):
    return boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name=REGION, config=CFG)


s3, s3b = client(AK, SK), client(AK2, SK2)


def code_of(fn, **kw):
    try:
        fn(**kw)
        return (200, None)
    except ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])


def ownership(c, b):
    r = c.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"]
    return r[0]["ObjectOwnership"] if len(r) == 1 else r


def owner(b, k):
    return s3.get_object_acl(Bucket=b, Key=k)["Owner"]["ID"]


def mpu_owner(b, k, acl=None):
    kw = {"ACL": acl} if acl else {}
    up = s3b.create_multipart_upload(Bucket=b, Key=k, **kw)["UploadId"]
    o = s3b.list_parts(Bucket=b, Key=k, UploadId=up)["Owner"]["ID"]
    s3b.abort_multipart_upload(Bucket=b, Key=k, UploadId=up)
    return o


def put_only_policy(b):
    """Anyone may write objects and uploads (and read ACLs and parts),
    nothing else: the bucket's ACL and its objects' decide the rest."""
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": ["s3:PutObject", "s3:GetObjectAcl",
                                                        "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"],
        "Resource": "arn:aws:s3:::%s/*" % b}]}))


# 1. no controls
s3.create_bucket(Bucket="own-none")
t.eq(code_of(s3.get_bucket_ownership_controls, Bucket="own-none"), (404, "OwnershipControlsNotFoundError"),
     "a bucket without controls: 404 OwnershipControlsNotFoundError")
t.eq(code_of(s3.delete_bucket_ownership_controls, Bucket="own-none"), (200, None),
     "DeleteBucketOwnershipControls of none: 204")
t.eq(code_of(s3.get_bucket_ownership_controls, Bucket="own-missing"), (404, "NoSuchBucket"),
     "GetBucketOwnershipControls of a missing bucket: NoSuchBucket")

# 2. refused bodies
R0, R1 = b"<OwnershipControls><Rule>", b"</Rule></OwnershipControls>"
for body, what in ((b"not xml", "not XML"), (b"<OwnershipControls/>", "no Rule"),
                   (R0 + b"<ObjectOwnership>Mine</ObjectOwnership>" + R1, "an unknown ObjectOwnership"),
                   (R0 + b"<ObjectOwnership>ObjectWriter</ObjectOwnership></Rule><Rule>"
                    b"<ObjectOwnership>ObjectWriter</ObjectOwnership>" + R1, "two Rules")):
    st, _, resp = signed(EP, "PUT", "/own-none?ownershipControls", body)
    t.check(st == 400 and b"<Code>MalformedXML</Code>" in resp, "PutBucketOwnershipControls, %s: 400 MalformedXML"
            % what, (st, resp[:300]))
t.eq(code_of(s3.get_bucket_ownership_controls, Bucket="own-none"), (404, "OwnershipControlsNotFoundError"),
     "the refused bodies stored nothing")

# 3. CreateBucket with x-amz-object-ownership
for v in ("ObjectWriter", "BucketOwnerPreferred", "BucketOwnerEnforced"):
    s3.create_bucket(Bucket="own-c-" + v.lower(), ObjectOwnership=v)
    t.eq(ownership(s3, "own-c-" + v.lower()), v, "CreateBucket with x-amz-object-ownership %s: kept" % v)
# through a target: the create goes to the primary with the setting (create-bck's s3.ownership)
client(AK, SK, cluster.nodes[1].url).create_bucket(Bucket="own-via-target", ObjectOwnership="BucketOwnerPreferred")
t.eq(ownership(s3, "own-via-target"), "BucketOwnerPreferred", "CreateBucket with the header sent to a target: kept")
st, _, resp = signed(EP, "PUT", "/own-bad", b"", {"x-amz-object-ownership": "Mine"})
t.check(st == 400 and b"<Code>InvalidArgument</Code>" in resp, "CreateBucket with ownership Mine: 400 InvalidArgument",
        (st, resp[:300]))
t.eq(code_of(s3.create_bucket, Bucket="own-bad", ACL="public-read", ObjectOwnership="BucketOwnerEnforced"),
     (400, "InvalidBucketAclWithObjectOwnership"), "CreateBucket BucketOwnerEnforced with public-read: 400")
t.eq(code_of(s3.head_bucket, Bucket="own-bad"), (404, "404"), "the refused CreateBuckets made no bucket")

# 4. ObjectWriter
B = "own-c-objectwriter"
put_only_policy(B)
s3b.put_object(Bucket=B, Key="plain", Body=b"p")
s3b.put_object(Bucket=B, Key="bofc", Body=b"b", ACL="bucket-owner-full-control")
t.eq((owner(B, "plain"), owner(B, "bofc")), (YOU, YOU), "ObjectWriter: the writer owns, with or without bofc")
t.eq(mpu_owner(B, "mpu", "bucket-owner-full-control"), YOU, "ObjectWriter: a multipart upload is the writer's")
t.eq(code_of(s3.get_object, Bucket=B, Key="plain"), (403, "AccessDenied"),
     "ObjectWriter: the bucket owner cannot read the other user's private object")

# 5. BucketOwnerPreferred
B = "own-c-bucketownerpreferred"
put_only_policy(B)
s3.put_object(Bucket=B, Key="src", Body=b"s", ACL="public-read")
s3b.put_object(Bucket=B, Key="plain", Body=b"p")
s3b.put_object(Bucket=B, Key="bofc", Body=b"b", ACL="bucket-owner-full-control")
s3b.put_object(Bucket=B, Key="private", Body=b"x", ACL="private")
t.eq((owner(B, "plain"), owner(B, "bofc"), owner(B, "private")), (YOU, ME, YOU),
     "BucketOwnerPreferred: bofc writes are the bucket owner's, the others the writer's")
s3b.copy_object(Bucket=B, Key="copy-bofc", CopySource={"Bucket": B, "Key": "src"}, ACL="bucket-owner-full-control")
s3b.copy_object(Bucket=B, Key="copy", CopySource={"Bucket": B, "Key": "src"})
t.eq((owner(B, "copy-bofc"), owner(B, "copy")), (ME, YOU), "BucketOwnerPreferred: CopyObject the same")
t.eq((mpu_owner(B, "m1", "bucket-owner-full-control"), mpu_owner(B, "m2")), (ME, YOU),
     "BucketOwnerPreferred: CreateMultipartUpload the same")
t.eq(s3.get_object(Bucket=B, Key="bofc")["Body"].read(), b"b", "BucketOwnerPreferred: the bucket owner reads its own")

# 6. BucketOwnerEnforced set on a bucket with objects of the other user
B = "own-enf"
s3.create_bucket(Bucket=B, ACL="public-read")
put_only_policy(B)
s3b.put_object(Bucket=B, Key="old", Body=b"old")
t.eq(s3b.get_object(Bucket=B, Key="old")["Body"].read(), b"old", "before: the writer reads its object (its ACL)")
t.eq(code_of(s3.get_object, Bucket=B, Key="old"), (403, "AccessDenied"), "before: the bucket owner cannot")
ENF = {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
t.eq(code_of(s3.put_bucket_ownership_controls, Bucket=B, OwnershipControls=ENF),
     (400, "InvalidBucketAclWithObjectOwnership"), "BucketOwnerEnforced on a public-read bucket: 400")
t.eq(code_of(s3.get_bucket_ownership_controls, Bucket=B), (404, "OwnershipControlsNotFoundError"),
     "the refused Put stored nothing")
s3.put_bucket_acl(Bucket=B, ACL="private")
s3.put_bucket_ownership_controls(Bucket=B, OwnershipControls=ENF)
t.eq(ownership(s3, B), "BucketOwnerEnforced", "PutBucketOwnershipControls BucketOwnerEnforced: kept")
acl = s3.get_object_acl(Bucket=B, Key="old")
t.eq((acl["Owner"]["ID"], [(x["Grantee"].get("ID"), x["Permission"]) for x in acl["Grants"]]),
     (ME, [(ME, "FULL_CONTROL")]), "enforced: an old object reads as the bucket owner's, full control")
t.eq(s3.get_object(Bucket=B, Key="old")["Body"].read(), b"old", "enforced: the bucket owner reads it")
t.eq(code_of(s3b.get_object, Bucket=B, Key="old"), (403, "AccessDenied"),
     "enforced: its writer no longer reads it (the policy allows it PutObject only)")
s3b.put_object(Bucket=B, Key="new", Body=b"n")
s3b.put_object(Bucket=B, Key="new-bofc", Body=b"n", ACL="bucket-owner-full-control")
t.eq((owner(B, "new"), owner(B, "new-bofc")), (ME, ME), "enforced: new objects are the bucket owner's")
t.eq(mpu_owner(B, "m"), ME, "enforced: a multipart upload is the bucket owner's")
for what, fn, kw in (("PutObject private", s3b.put_object, {"Key": "x", "Body": b"x", "ACL": "private"}),
                     ("PutObject public-read", s3.put_object, {"Key": "x", "Body": b"x", "ACL": "public-read"}),
                     ("PutObject with a grant", s3.put_object, {"Key": "x", "Body": b"x", "GrantRead": "id=" + YOU}),
                     ("CreateMultipartUpload private", s3b.create_multipart_upload, {"Key": "x", "ACL": "private"}),
                     ("CopyObject private", s3.copy_object,
                      {"Key": "x", "CopySource": {"Bucket": B, "Key": "new"}, "ACL": "private"}),
                     ("PutObjectAcl private", s3.put_object_acl, {"Key": "new", "ACL": "private"}),
                     ("PutBucketAcl private", s3.put_bucket_acl, {"ACL": "private"}),
                     ("PutBucketAcl public-read", s3.put_bucket_acl, {"ACL": "public-read"})):
    t.eq(code_of(fn, Bucket=B, **kw), (400, "AccessControlListNotSupported"),
         "enforced: %s: 400 AccessControlListNotSupported" % what)
t.eq(code_of(s3.head_object, Bucket=B, Key="x"), (404, "404"), "enforced: the refused writes wrote nothing")
t.eq(code_of(s3.put_object_acl, Bucket=B, Key="new", ACL="bucket-owner-full-control"), (200, None),
     "enforced: PutObjectAcl bucket-owner-full-control: 200")
t.eq(code_of(s3.put_bucket_acl, Bucket=B, ACL="bucket-owner-full-control"), (200, None),
     "enforced: PutBucketAcl bucket-owner-full-control: 200")
ba = s3.get_bucket_acl(Bucket=B)
t.eq([(x["Grantee"].get("ID"), x["Permission"]) for x in ba["Grants"]], [(ME, "FULL_CONTROL")],
     "enforced: the bucket's ACL is its owner's full control")

# 8. in the BMD: every target, and the gateway killed and started again
for tg in cluster.nodes[1:]:
    t.eq(ownership(client(AK, SK, tg.url), B), "BucketOwnerEnforced", "straight from %s" % tg.name)
g.kill9()
t.check(g.start(), "the gateway killed and started again")
clulib.poll(lambda: code_of(s3.head_bucket, Bucket=B)[0] == 200, 20)
t.eq(ownership(s3, B), "BucketOwnerEnforced", "the gateway started again has the setting")
t.eq(owner(B, "old"), ME, "and applies it")

# 7. delete: back to the writer
t.eq(code_of(s3.delete_bucket_ownership_controls, Bucket=B), (200, None), "DeleteBucketOwnershipControls: 204")
t.eq(code_of(s3.get_bucket_ownership_controls, Bucket=B), (404, "OwnershipControlsNotFoundError"),
     "after the delete: 404")
s3b.put_object(Bucket=B, Key="after", Body=b"a")
t.eq((owner(B, "after"), owner(B, "new")), (YOU, ME),
     "without controls the writer owns a new object; one written under BucketOwnerEnforced stays the bucket owner's")
for tg in cluster.nodes[1:]:
    t.eq(code_of(client(AK, SK, tg.url).get_bucket_ownership_controls, Bucket=B),
         (404, "OwnershipControlsNotFoundError"), "the delete reached %s" % tg.name)

clulib.check_logs(cluster.nodes)
t.finish()
