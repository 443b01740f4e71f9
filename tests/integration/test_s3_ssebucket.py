"""test_s3_ssebucket.py - a bucket's default server-side encryption
(Put/Get/DeleteBucketEncryption): the configuration is kept in the BMD and
every write that names no encryption of its own is encrypted with it on
the owner target, so the bytes at rest are ciphertext. 1 gateway + 3
targets on loopback ports, a copies=2 bucket, stopped by PID; SSE-C over
plain HTTP allowed by s3.sse_c_plain_http.

Checks:
 1. A new bucket has no configuration: GetBucketEncryption 404
    ServerSideEncryptionConfigurationNotFoundError, Delete 204.
 2. SSE-S3 default: Get answers it (AES256); PutObject without SSE headers
    answers AES256, GET and HEAD say so and return the bytes (a range
    too); a GET or HEAD that declares x-amz-server-side-encryption is 400
    (as S3); an explicit SSE-KMS or SSE-C PUT uses its own mode (the SSE-C
    object's GetObjectAttributes needs its key, 400 without); no file under
    any target holds the plaintext (a plain object's marker is found: the
    search can fail).
 3. SSE-KMS default with a KMSMasterKeyID: PutObject answers aws:kms and
    the key id, GET too; the AWS CLI's get-bucket-encryption shows it.
 4. Bad configurations: an unknown algorithm, a key id with AES256
    (400 InvalidArgument), a rule without a default (400 MalformedXML), the
    configuration kept unchanged.
 5. CopyObject of a plain source into the bucket takes the default; one
    with SSE-C headers (into a bucket without a default) encrypts with the
    customer key; an encrypted source is copied as its plaintext, encrypted
    with the default (multipart uploads into such a
    bucket: test_s3_ssempu.py); with the plain source deleted no plaintext
    is left on disk.
 6. DeleteBucketEncryption: 204, Get 404, a new PutObject is plain (no
    encryption header) and stays readable; the older objects still read.
"""
# timeout: 120
import base64
import hashlib
import json
import os
import time

from itlib import T

from clulib import request
import clulib
from s3lib import AWS_ENV, boto3_client, cluster, disk_has, run, sse_cluster, status_code

JSON = {"Content-Type": "application/json"}
os.environ["BOTO_DISABLE_CRT"] = "true"

t = T()
EP, master, kms = sse_cluster(t, "ssebucket", [("m1", os.urandom(32))],
                               [("app-key", os.urandom(32)), ("other-key", os.urandom(32))])
g = cluster.nodes[0]
targets = list(cluster.nodes[1:])
s3 = boto3_client(EP)

MARK = b"DEFAULT-SSE-PLAINTEXT-MARK-0042/"
PLAIN_MARK = b"DEFAULT-SSE-CONTROL-PLAIN-4711/"
DATA = (MARK * ((1 << 20) // len(MARK) + 1))[:(1 << 20) + 77]
CKEY = os.urandom(32)


def default_of(bucket):
    return s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"][0][
        "ApplyServerSideEncryptionByDefault"]


s3.create_bucket(Bucket="dflt")
body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(request("PATCH", g.url, "/v1/buckets/dflt", body, JSON).status, 200, "set-bprops mirror.copies=2")

# 1. none yet
t.eq(status_code(lambda: s3.get_bucket_encryption(Bucket="dflt")),
     (404, "ServerSideEncryptionConfigurationNotFoundError"), "a new bucket has no default encryption")
t.eq(s3.delete_bucket_encryption(Bucket="dflt")["ResponseMetadata"]["HTTPStatusCode"], 204,
     "DeleteBucketEncryption with none: 204")
s3.put_object(Bucket="dflt", Key="before", Body=PLAIN_MARK * 50)

# 2. SSE-S3 default
r = s3.put_bucket_encryption(Bucket="dflt", ServerSideEncryptionConfiguration={
    "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
t.eq(r["ResponseMetadata"]["HTTPStatusCode"], 200, "PutBucketEncryption AES256: 200")
time.sleep(0.3)
t.eq(default_of("dflt"), {"SSEAlgorithm": "AES256"}, "GetBucketEncryption answers AES256")
r = s3.put_object(Bucket="dflt", Key="s3obj", Body=DATA)
t.eq(r.get("ServerSideEncryption"), "AES256", "PutObject without SSE headers answers AES256")
t.eq(r["ETag"].strip('"'), hashlib.md5(DATA).hexdigest(), "its ETag is the plaintext MD5 (SSE-S3)")
g_ = s3.get_object(Bucket="dflt", Key="s3obj")
t.check(g_["Body"].read() == DATA, "GET byte for byte")
t.eq(g_.get("ServerSideEncryption"), "AES256", "GET names AES256")
g_ = s3.get_object(Bucket="dflt", Key="s3obj", Range="bytes=1000003-1048600")
t.check(g_["Body"].read() == DATA[1000003:1048601], "a range of it")
t.eq(s3.head_object(Bucket="dflt", Key="s3obj").get("ServerSideEncryption"), "AES256", "HEAD names AES256")
decl = boto3_client(EP)
decl.meta.events.register("before-call.s3.HeadObject", lambda **kw: kw["params"]["headers"].update(
    {"x-amz-server-side-encryption": "AES256"}))
decl.meta.events.register("before-call.s3.GetObject", lambda **kw: kw["params"]["headers"].update(
    {"x-amz-server-side-encryption": "aws:kms"}))
t.eq(status_code(lambda: decl.head_object(Bucket="dflt", Key="s3obj"))[0], 400,
     "HEAD declaring x-amz-server-side-encryption: 400 (a read takes no SSE-S3 header)")
t.eq(status_code(lambda: decl.get_object(Bucket="dflt", Key="s3obj")), (400, "InvalidArgument"),
     "GET declaring x-amz-server-side-encryption: 400 InvalidArgument")
r = s3.put_object(Bucket="dflt", Key="kmsobj", Body=DATA, ServerSideEncryption="aws:kms", SSEKMSKeyId="other-key")
t.eq((r.get("ServerSideEncryption"), r.get("SSEKMSKeyId")), ("aws:kms", "other-key"),
     "an explicit SSE-KMS PUT keeps its own mode")
r = s3.put_object(Bucket="dflt", Key="cobj", Body=DATA, SSECustomerAlgorithm="AES256", SSECustomerKey=CKEY)
t.check(r.get("SSECustomerAlgorithm") == "AES256" and not r.get("ServerSideEncryption"),
        "an explicit SSE-C PUT keeps its own mode", r.get("ServerSideEncryption"))
t.eq(status_code(lambda: s3.get_object(Bucket="dflt", Key="cobj"))[0], 400, "the SSE-C object needs its key")
t.check(s3.get_object(Bucket="dflt", Key="cobj", SSECustomerAlgorithm="AES256",
                      SSECustomerKey=CKEY)["Body"].read() == DATA, "the SSE-C object reads with its key")
t.eq(status_code(lambda: s3.get_object_attributes(Bucket="dflt", Key="cobj", ObjectAttributes=["ObjectSize"])),
     (400, "InvalidRequest"), "GetObjectAttributes of the SSE-C object without its key: 400")
t.eq(s3.get_object_attributes(Bucket="dflt", Key="cobj", ObjectAttributes=["ObjectSize"], SSECustomerAlgorithm="AES256",
                              SSECustomerKey=base64.b64encode(CKEY).decode(),  # not encoded by botocore here
                              SSECustomerKeyMD5=base64.b64encode(hashlib.md5(CKEY).digest()).decode())["ObjectSize"],
     len(DATA), "GetObjectAttributes with its key")
t.eq(s3.get_object_attributes(Bucket="dflt", Key="s3obj", ObjectAttributes=["ObjectSize"])["ObjectSize"], len(DATA),
     "GetObjectAttributes of the SSE-S3 object needs no key")
t.check(disk_has(targets, PLAIN_MARK), "the plain object's marker is found on disk (the search works)")
t.eq(disk_has(targets, MARK[:24]), [], "no file under any target holds the plaintext")

# 3. SSE-KMS default with a key id
s3.put_bucket_encryption(Bucket="dflt", ServerSideEncryptionConfiguration={
    "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "app-key"},
               "BucketKeyEnabled": True}]})
time.sleep(0.3)
t.eq(default_of("dflt"), {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "app-key"},
     "GetBucketEncryption answers aws:kms and the key id")
r = s3.put_object(Bucket="dflt", Key="dkms", Body=DATA)
t.eq((r.get("ServerSideEncryption"), r.get("SSEKMSKeyId")), ("aws:kms", "app-key"),
     "PutObject without SSE headers answers aws:kms and the key id")
g_ = s3.get_object(Bucket="dflt", Key="dkms")
t.check(g_["Body"].read() == DATA and g_.get("SSEKMSKeyId") == "app-key", "GET byte for byte, the key id named")
rc, out = run(["/usr/bin/aws", "--endpoint-url", EP, "s3api", "get-bucket-encryption", "--bucket", "dflt"],
              env=dict(AWS_ENV))
t.check(rc == 0 and '"KMSMasterKeyID": "app-key"' in out and '"BucketKeyEnabled": true' in out,
        "aws s3api get-bucket-encryption", out[-300:])

# 4. bad configurations
for what, rules, want in (
        ("an unknown algorithm", [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "DES"}}],
         (400, "InvalidArgument")),
        ("a key id with AES256", [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256",
                                                                         "KMSMasterKeyID": "app-key"}}],
         (400, "InvalidArgument"))):
    t.eq(status_code(lambda: s3.put_bucket_encryption(Bucket="dflt",
                                                 ServerSideEncryptionConfiguration={"Rules": rules})),
         want, "PutBucketEncryption with " + what)
t.eq(status_code(lambda: s3.put_bucket_encryption(Bucket="dflt", ServerSideEncryptionConfiguration={
    "Rules": [{"BucketKeyEnabled": True}]})), (400, "MalformedXML"),
     "PutBucketEncryption of a rule without ApplyServerSideEncryptionByDefault: MalformedXML")
t.eq(default_of("dflt").get("KMSMasterKeyID"), "app-key", "the configuration is unchanged")

# 5. what the default does not reach yet is refused, not stored plain
s3.create_bucket(Bucket="plainsrc")
s3.put_object(Bucket="plainsrc", Key="src", Body=DATA)
r = s3.copy_object(Bucket="dflt", Key="copied", CopySource={"Bucket": "plainsrc", "Key": "src"})
t.eq((r.get("ServerSideEncryption"), r.get("SSEKMSKeyId")), ("aws:kms", "app-key"),
     "CopyObject of a plain source into the bucket takes its default (aws:kms)")
g_ = s3.get_object(Bucket="dflt", Key="copied")
t.check(g_["Body"].read() == DATA and g_.get("SSEKMSKeyId") == "app-key", "the copy reads byte for byte, aws:kms")
r = s3.copy_object(Bucket="plainsrc", Key="c-copy", CopySource={"Bucket": "plainsrc", "Key": "src"},
                   SSECustomerAlgorithm="AES256", SSECustomerKey=CKEY)
t.eq(r.get("SSECustomerAlgorithm"), "AES256", "CopyObject with SSE-C headers encrypts the copy (no default)")
t.eq(status_code(lambda: s3.get_object(Bucket="plainsrc", Key="c-copy"))[0], 400, "the SSE-C copy needs its key")
t.check(s3.get_object(Bucket="plainsrc", Key="c-copy", SSECustomerAlgorithm="AES256",
                      SSECustomerKey=CKEY)["Body"].read() == DATA, "the SSE-C copy reads with its key")
r = s3.copy_object(Bucket="dflt", Key="copied2", CopySource={"Bucket": "dflt", "Key": "dkms"})
t.eq(r.get("ServerSideEncryption"), "aws:kms", "CopyObject of an encrypted source takes the bucket's default")
t.check(s3.get_object(Bucket="dflt", Key="copied2")["Body"].read() ==
        s3.get_object(Bucket="dflt", Key="dkms")["Body"].read(), "the copy of an encrypted source reads as its source")
s3.delete_object(Bucket="plainsrc", Key="src")
t.eq(disk_has(targets, MARK[:24]), [], "no plaintext on disk (the plain source deleted)")

# 6. removed
t.eq(s3.delete_bucket_encryption(Bucket="dflt")["ResponseMetadata"]["HTTPStatusCode"], 204,
     "DeleteBucketEncryption: 204")
time.sleep(0.3)
t.eq(status_code(lambda: s3.get_bucket_encryption(Bucket="dflt"))[0], 404, "GetBucketEncryption after: 404")
r = s3.put_object(Bucket="dflt", Key="after", Body=PLAIN_MARK * 3)
t.check(not r.get("ServerSideEncryption"), "a PutObject after the delete is plain (no encryption header)",
        r.get("ServerSideEncryption"))
g_ = s3.get_object(Bucket="dflt", Key="after")
t.check(g_["Body"].read() == PLAIN_MARK * 3 and not g_.get("ServerSideEncryption"), "it reads plain, said so")
t.check(s3.get_object(Bucket="dflt", Key="dkms")["Body"].read() == DATA, "the older encrypted object still reads")

clulib.check_logs(cluster.nodes)
t.finish()
