"""test_s3_sse.py - S3 server-side encryption (SSE-C, SSE-S3, SSE-KMS): the
bytes are encrypted on the owner before the object layer, so every copy
and erasure-coded slice holds ciphertext, and decrypted only for an S3
client with the right key. 1 gateway + 3 targets on loopback ports, a
copies=2 bucket and an erasure-coded 2+1 bucket that keeps slices only,
stopped by PID. SSE-C over plain HTTP is allowed by s3.sse_c_plain_http.

Checks:
 1. boto3 PutObject in each mode into each bucket (3 MiB + 333 bytes of a
    recognisable plaintext): the answer names the mode (AES256, aws:kms +
    key id, the customer key's MD5); GetObject byte for byte; ranges at
    odd offsets (one across a 1 MiB boundary, a suffix); HeadObject the
    same headers; the SSE-S3 ETag is the plaintext MD5, SSE-C's and
    SSE-KMS's are not.
 1b. An empty SSE-C object; ?partNumber=1 of an SSE-KMS object.
 2. SSE-C: GET without the key 400 InvalidRequest, with another key 403
    AccessDenied, a key whose MD5 does not match 400 InvalidArgument;
    SSE-C headers on a plain object's GET 400; SSE-KMS with an unknown key
    id 400 KMS.NotFoundException.
 3. No file under any target's mountpath holds the plaintext (a plain
    object's marker is found the same way: the search can fail).
 4. Rotation: an SSE-S3 object written under key k1, k2 appended to the
    key file, a second object: both read back; with k1 taken out of the
    file the first is refused (500) and the second reads, with k1 back
    both read.
 5. The native API refuses a GET of an encrypted object (403), serves a
    plain one; GetBatch does not send an encrypted entry; copies of encrypted sources: test_s3_ssecopy.py,
    multipart uploads: test_s3_ssempu.py.
 6. The AWS CLI: aws s3 cp --sse-c / --sse aws:kms up and down.
 7. No log line of any node holds a key (base64 or hex); no error-level
    line.
"""
# timeout: 180
import base64
import hashlib
import json
import os
import time

from itlib import T

import clulib
from clulib import request
from s3lib import AWS_ENV, boto3_client, cluster, disk_has, keys_in_logs, run, sse_cluster, status_code, write_keys

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}
os.environ["BOTO_DISABLE_CRT"] = "true"

t = T()
K1, K2 = os.urandom(32), os.urandom(32)
KMS_A, KMS_B = os.urandom(32), os.urandom(32)
CKEY, CKEY2 = os.urandom(32), os.urandom(32)
ALL_KEYS = [K1, K2, KMS_A, KMS_B, CKEY, CKEY2]
EP, master, kms = sse_cluster(t, "s3sse", [("k1", K1)], [("app-key", KMS_A), ("other-key", KMS_B)])
g = cluster.nodes[0]
targets = list(cluster.nodes[1:])
s3 = boto3_client(EP)

MARK = b"SSE-PLAINTEXT-MARKER-0123456789/"
PLAIN_MARK = b"UNENCRYPTED-CONTROL-MARKER-4242/"
DATA = (MARK * ((3 << 20) // len(MARK) + 1))[:(3 << 20) + 333]
MODES = {
    "c": dict(SSECustomerAlgorithm="AES256", SSECustomerKey=CKEY),
    "s3": dict(ServerSideEncryption="AES256"),
    "kms": dict(ServerSideEncryption="aws:kms", SSEKMSKeyId="app-key"),
}
READ = {"c": dict(SSECustomerAlgorithm="AES256", SSECustomerKey=CKEY), "s3": {}, "kms": {}}


s3.create_bucket(Bucket="ssecp")
body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(request("PATCH", g.url, "/v1/buckets/ssecp", body, JSON).status, 200, "set-bprops mirror.copies=2")
clulib.create_ec_bucket(g, targets, "sseec", 2, 1, 0, whole_copy=False)
time.sleep(0.5)

# 1. round trips
md5 = hashlib.md5(DATA).hexdigest()
for bck in ("ssecp", "sseec"):
    for mode, kw in MODES.items():
        key = "obj-" + mode
        r = s3.put_object(Bucket=bck, Key=key, Body=DATA, **kw)
        what = "%s/%s" % (bck, key)
        if mode == "c":
            t.eq(r.get("SSECustomerAlgorithm"), "AES256", what + ": PUT answers the customer algorithm")
            t.eq(r.get("SSECustomerKeyMD5"), base64.b64encode(hashlib.md5(CKEY).digest()).decode(),
                 what + ": PUT answers the key's MD5")
        else:
            t.eq(r.get("ServerSideEncryption"), kw["ServerSideEncryption"], what + ": PUT answers the mode")
        if mode == "kms":
            t.eq(r.get("SSEKMSKeyId"), "app-key", what + ": PUT answers the KMS key id")
        etag = r["ETag"].strip('"')
        t.check((etag == md5) == (mode == "s3"), what + ": the ETag is the plaintext MD5 for SSE-S3 only", etag)
        g_ = s3.get_object(Bucket=bck, Key=key, **READ[mode])
        t.check(g_["Body"].read() == DATA, what + ": GET byte for byte")
        t.eq(g_["ETag"].strip('"'), etag, what + ": GET's ETag")
        for rng, lo, hi in (("bytes=7-100012", 7, 100012), ("bytes=1048570-2097170", 1048570, 2097170),
                            ("bytes=-33", len(DATA) - 33, len(DATA) - 1), ("bytes=3145731-", 3145731, len(DATA) - 1)):
            g_ = s3.get_object(Bucket=bck, Key=key, Range=rng, **READ[mode])
            t.check(g_["Body"].read() == DATA[lo:hi + 1], "%s: range %s" % (what, rng))
        h = s3.head_object(Bucket=bck, Key=key, **READ[mode])
        t.eq(h["ContentLength"], len(DATA), what + ": HEAD size")
        if mode == "kms":
            t.eq(h.get("SSEKMSKeyId"), "app-key", what + ": HEAD names the KMS key id")
        t.eq(h.get("ServerSideEncryption") or h.get("SSECustomerAlgorithm"),
             "AES256" if mode != "kms" else "aws:kms", what + ": HEAD names the mode")

# an empty object, and ?partNumber=1 of an encrypted one (its whole, decrypted)
s3.put_object(Bucket="sseec", Key="empty", Body=b"", **MODES["c"])
t.eq(s3.get_object(Bucket="sseec", Key="empty", **READ["c"])["Body"].read(), b"", "an empty SSE-C object reads empty")
g_ = s3.get_object(Bucket="ssecp", Key="obj-kms", PartNumber=1)
t.check(g_["Body"].read() == DATA, "partNumber=1 of an SSE-KMS object: its plaintext")

# 2. refused keys
t.eq(status_code(lambda: s3.get_object(Bucket="ssecp", Key="obj-c")), (400, "InvalidRequest"),
     "SSE-C object without its key: 400 InvalidRequest")
t.eq(status_code(lambda: s3.get_object(Bucket="sseec", Key="obj-c", SSECustomerAlgorithm="AES256",
                                  SSECustomerKey=CKEY2)), (403, "AccessDenied"),
     "SSE-C object with another key: 403 AccessDenied")

t.eq(status_code(lambda: s3.head_object(Bucket="ssecp", Key="obj-c"))[0], 400, "HEAD of an SSE-C object without its key: 400")
s3.put_object(Bucket="ssecp", Key="plain", Body=PLAIN_MARK * 100)
t.eq(status_code(lambda: s3.get_object(Bucket="ssecp", Key="plain", SSECustomerAlgorithm="AES256",
                                  SSECustomerKey=CKEY)), (400, "InvalidRequest"),
     "SSE-C headers on a plain object: 400 InvalidRequest")
t.eq(status_code(lambda: s3.put_object(Bucket="ssecp", Key="nokms", Body=b"x", ServerSideEncryption="aws:kms",
                                  SSEKMSKeyId="no-such-key")), (400, "KMS.NotFoundException"),
     "SSE-KMS with an unknown key id: 400")
bad_md5 = {"x-amz-server-side-encryption-customer-algorithm": "AES256",
           "x-amz-server-side-encryption-customer-key": base64.b64encode(CKEY).decode(),
           "x-amz-server-side-encryption-customer-key-MD5": base64.b64encode(hashlib.md5(CKEY2).digest()).decode()}


def add_headers(hdrs):
    def f(request, **_):
        for k, v in hdrs.items():
            request.headers[k] = v
    return f


raw = boto3_client(EP)
raw.meta.events.register("before-sign.s3.PutObject", add_headers(bad_md5))
t.eq(status_code(lambda: raw.put_object(Bucket="ssecp", Key="badmd5", Body=b"x")), (400, "InvalidArgument"),
     "SSE-C key whose MD5 does not match: 400 InvalidArgument")
t.eq(status_code(lambda: s3.head_object(Bucket="ssecp", Key="badmd5"))[0], 404, "nothing stored")

# 3. nothing on disk holds the plaintext
t.check(disk_has(targets, PLAIN_MARK), "the plain object's marker is found on disk (the search works)")
t.eq(disk_has(targets, MARK[:24]), [], "no file under any target holds the encrypted objects' plaintext")

# 4. rotation
s3.put_object(Bucket="ssecp", Key="rot1", Body=b"rot1 " * 1000, ServerSideEncryption="AES256")
write_keys(master, [("k1", K1), ("k2", K2)])
s3.put_object(Bucket="ssecp", Key="rot2", Body=b"rot2 " * 1000, ServerSideEncryption="AES256")
t.eq(s3.get_object(Bucket="ssecp", Key="rot1")["Body"].read(), b"rot1 " * 1000, "old key's object after rotation")
t.eq(s3.get_object(Bucket="ssecp", Key="rot2")["Body"].read(), b"rot2 " * 1000, "new key's object")
write_keys(master, [("k2", K2)])
t.eq(status_code(lambda: s3.get_object(Bucket="ssecp", Key="rot1"))[0], 500, "k1 gone: its object is refused")
t.eq(s3.get_object(Bucket="ssecp", Key="rot2")["Body"].read(), b"rot2 " * 1000, "k1 gone: k2's object reads")
write_keys(master, [("k1", K1), ("k2", K2)])
t.eq(s3.get_object(Bucket="ssecp", Key="rot1")["Body"].read(), b"rot1 " * 1000, "k1 back: its object reads")

# 5. the native API and what is not built
_, r = clulib.follow("GET", g.url, "/v1/objects/ssecp/obj-s3")
t.eq(r.status, 403, "native GET of an encrypted object: 403")
t.check(MARK not in (r.body or b""), "the native refusal carries no plaintext")
_, r = clulib.follow("GET", g.url, "/v1/objects/ssecp/plain")
t.eq(r.status, 200, "native GET of a plain object: 200")
for coer in (False, True):
    mb = json.dumps({"in": [{"objname": "obj-s3"}, {"objname": "plain"}], "mime": ".tar", "coer": coer})
    _, r = clulib.follow("GET", g.url, "/v1/ml/moss/ssecp", mb, JSON)
    t.check(r.status == 403 and b"server-side encryption" in r.body and MARK[:24] not in r.body,
            "GetBatch (coer %s) with an encrypted entry: 403 naming it, no plaintext" % coer,
            (r.status, (r.body or b"")[:200]))

# 6. the AWS CLI
work = os.environ["TMPDIR"]
src, back, keyf = os.path.join(work, "cli.src"), os.path.join(work, "cli.back"), os.path.join(work, "cli.key")
with open(src, "wb") as f:
    f.write(MARK * 40000)
with open(keyf, "wb") as f:
    f.write(CKEY)
env = dict(AWS_ENV)
base_cmd = ["/usr/bin/aws", "--endpoint-url", EP, "s3", "cp"]
rc, out = run(base_cmd + [src, "s3://ssecp/cli-c", "--sse-c", "AES256", "--sse-c-key", "fileb://" + keyf], env=env)
t.check(rc == 0, "aws s3 cp --sse-c up", out[-300:])
rc, out = run(base_cmd + ["s3://ssecp/cli-c", back, "--sse-c", "AES256", "--sse-c-key", "fileb://" + keyf], env=env)
t.check(rc == 0 and open(back, "rb").read() == MARK * 40000, "aws s3 cp --sse-c down byte for byte", out[-300:])
rc, out = run(base_cmd + [src, "s3://sseec/cli-kms", "--sse", "aws:kms", "--sse-kms-key-id", "other-key"], env=env)
t.check(rc == 0, "aws s3 cp --sse aws:kms up", out[-300:])
os.unlink(back)
rc, out = run(base_cmd + ["s3://sseec/cli-kms", back], env=env)
t.check(rc == 0 and open(back, "rb").read() == MARK * 40000, "aws s3 cp down of an SSE-KMS object", out[-300:])
h = s3.head_object(Bucket="sseec", Key="cli-kms")
t.eq(h.get("SSEKMSKeyId"), "other-key", "the CLI's KMS key id kept")
t.eq(disk_has(targets, MARK[:24]), [], "still no plaintext on disk")

# 7. no key in any log
leaks = keys_in_logs(cluster.nodes, ALL_KEYS)
t.eq(leaks, [], "no key (base64 or hex) in any node's log")

clulib.check_logs(cluster.nodes)
t.finish()
