"""test_s3_ssempu.py - server-side encryption of multipart uploads (SSE-C,
SSE-S3, SSE-KMS, a bucket's default): every part is encrypted as it is
uploaded (ciphertext on disk from the start), Complete joins them, and the
object reads back whole, in ranges across part boundaries and by part
number. 1 gateway + 3 targets on loopback ports, a copies=2 bucket,
stopped by PID; SSE-C over plain HTTP is allowed by s3.sse_c_plain_http.

Checks:
 1. For each mode: CreateMultipartUpload answers the mode; three parts of
    different sizes uploaded out of order (the last one twice), each
    answering the mode; SSE-C parts without the key 400, with another key
    400, nothing stored for them; ListParts lists the three; Complete
    answers the mode; GET byte for byte with the mode's headers, ranges
    across both part boundaries and inside a part, ?partNumber=2 its
    bytes; a wrong or missing SSE-C key on the GET is refused.
 2. UploadPartCopy into an SSE-KMS upload from an SSE-C source (with its
    key) and from the completed SSE-C multipart object: byte for byte.
 3. A bucket with default encryption (aws:kms): CreateMultipartUpload
    without headers takes it; a part naming another mode 400, one naming
    aws:kms 200; the object reads back as SSE-KMS.
 4. No file under any target holds the plaintext marker, while a plain
    upload's control marker is found (the search can fail).
 5. A part uploaded three times under one number (twice by UploadPart,
    once by UploadPartCopy), zeros each time: three different ciphertexts
    on disk (no key stream used twice); the completed object reads back
    whole, in a range across the part's end, and by part number.
 6. The AWS CLI: aws s3 cp of a 9 MiB file (multipart) with --sse-c up
    and down, byte for byte.
 7. No log line of any node holds a key; no error-level line.
"""
# timeout: 240
import json
import os

from itlib import T

from clulib import request
import clulib
from s3lib import AWS_ENV, boto3_client, cluster, disk_has, keys_in_logs, run, sse_cluster, status_code

os.environ["BOTO_DISABLE_CRT"] = "true"

t = T()
K1, KMS_A, KMS_B = os.urandom(32), os.urandom(32), os.urandom(32)
CKEY, CKEY2 = os.urandom(32), os.urandom(32)
ALL_KEYS = [K1, KMS_A, KMS_B, CKEY, CKEY2]
EP, master, kms = sse_cluster(t, "s3ssempu", [("k1", K1)], [("app-key", KMS_A), ("other-key", KMS_B)])
g = cluster.nodes[0]
targets = list(cluster.nodes[1:])
s3 = boto3_client(EP)

MARK = b"SSEMPU-PART-PLAINTEXT-MARKER-5/"
PLAIN_MARK = b"SSEMPU-UNENCRYPTED-CONTROL-17/"
MIB = 1 << 20


def data_of(mark, n, salt):
    return (salt + mark * (n // len(mark) + 1))[:n]


MODES = {
    "c": (dict(SSECustomerAlgorithm="AES256", SSECustomerKey=CKEY),
          dict(SSECustomerAlgorithm="AES256", SSECustomerKey=CKEY)),
    "s3": (dict(ServerSideEncryption="AES256"), {}),
    "kms": (dict(ServerSideEncryption="aws:kms", SSEKMSKeyId="other-key"), {}),
}


def mode_of(r):
    return r.get("SSECustomerAlgorithm") and "c" or {"AES256": "s3", "aws:kms": "kms"}.get(r.get("ServerSideEncryption"))


s3.create_bucket(Bucket="mpu")
body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(request("PATCH", g.url, "/v1/buckets/mpu", body, {"Content-Type": "application/json"}).status, 200,
     "set-bprops mirror.copies=2")

SIZES = (5 * MIB + 1001, 5 * MIB + 3, 777)
WHOLE = {}
for mode, (wargs, rargs) in MODES.items():
    key = "mp-" + mode
    parts = [data_of(MARK, n, b"%s-%d/" % (mode.encode(), i)) for i, n in enumerate(SIZES)]
    WHOLE[mode] = b"".join(parts)
    cr = s3.create_multipart_upload(Bucket="mpu", Key=key, **wargs)
    t.eq(mode_of(cr), mode, "%s: CreateMultipartUpload answers the mode" % mode)
    up = cr["UploadId"]
    pargs = wargs if mode == "c" else {}
    etags = {}
    for num in (3, 1, 2, 3):  # out of order, the last one twice
        r = s3.upload_part(Bucket="mpu", Key=key, UploadId=up, PartNumber=num, Body=parts[num - 1], **pargs)
        etags[num] = r["ETag"]
    t.eq(mode_of(r), mode, "%s: UploadPart answers the mode" % mode)
    if mode == "c":
        t.eq(status_code(lambda: s3.upload_part(Bucket="mpu", Key=key, UploadId=up, PartNumber=4, Body=b"x"))[0], 400,
             "c: a part without the key: 400")
        t.eq(status_code(lambda: s3.upload_part(Bucket="mpu", Key=key, UploadId=up, PartNumber=4, Body=b"x",
                                           SSECustomerAlgorithm="AES256", SSECustomerKey=CKEY2))[0], 400,
             "c: a part with another key: 400")
    else:
        t.eq(status_code(lambda: s3.upload_part(Bucket="mpu", Key=key, UploadId=up, PartNumber=4, Body=b"x",
                                           SSECustomerAlgorithm="AES256", SSECustomerKey=CKEY))[0], 400,
             "%s: an SSE-C key on a part of another mode: 400" % mode)
    lp = s3.list_parts(Bucket="mpu", Key=key, UploadId=up)
    t.eq([(p["PartNumber"], p["Size"]) for p in lp.get("Parts", [])], [(i + 1, n) for i, n in enumerate(SIZES)],
         "%s: ListParts lists the three parts" % mode)
    done = s3.complete_multipart_upload(Bucket="mpu", Key=key, UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": n, "ETag": etags[n]} for n in (1, 2, 3)]})
    t.check(done["ETag"].endswith('-3"'), "%s: Complete answers a 3-part ETag" % mode, done["ETag"])
    got = s3.get_object(Bucket="mpu", Key=key, **rargs)
    t.check(got["Body"].read() == WHOLE[mode], "%s: GET byte for byte" % mode)
    t.eq(mode_of(got), mode, "%s: GET answers the mode" % mode)
    b1, b2 = SIZES[0], SIZES[0] + SIZES[1]
    for lo, hi in ((b1 - 100, b1 + 100), (b2 - 5, b2 + 500), (b1 - 1, b1 - 1), (b1, b1), (12345, 2 * MIB),
                   (b1 - 10, b2 + 10)):
        hi = min(hi, len(WHOLE[mode]) - 1)
        got = s3.get_object(Bucket="mpu", Key=key, Range="bytes=%d-%d" % (lo, hi), **rargs)
        t.check(got["Body"].read() == WHOLE[mode][lo:hi + 1], "%s: range %d-%d" % (mode, lo, hi))
    got = s3.get_object(Bucket="mpu", Key=key, PartNumber=2, **rargs)
    t.check(got["Body"].read() == parts[1], "%s: ?partNumber=2 its bytes" % mode)
    if mode == "c":
        t.eq(status_code(lambda: s3.get_object(Bucket="mpu", Key=key))[0], 400, "c: GET without the key: 400")
        t.eq(status_code(lambda: s3.get_object(Bucket="mpu", Key=key, SSECustomerAlgorithm="AES256",
                                          SSECustomerKey=CKEY2))[0], 403, "c: GET with another key: 403")

# 2. UploadPartCopy into an encrypted upload, from encrypted sources
s3.put_object(Bucket="mpu", Key="src-c", Body=WHOLE["s3"][:6 * MIB], **MODES["c"][0])
up = s3.create_multipart_upload(Bucket="mpu", Key="pc", **MODES["kms"][0])["UploadId"]
srcc = dict(CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=CKEY)
p1 = s3.upload_part_copy(Bucket="mpu", Key="pc", UploadId=up, PartNumber=1, CopySource={"Bucket": "mpu", "Key": "src-c"},
                         CopySourceRange="bytes=7-%d" % (7 + 5 * MIB), **srcc)
t.eq(mode_of(p1), "kms", "UploadPartCopy into an SSE-KMS upload answers its mode")
p2 = s3.upload_part_copy(Bucket="mpu", Key="pc", UploadId=up, PartNumber=2, CopySource={"Bucket": "mpu", "Key": "mp-c"},
                         **srcc)
s3.complete_multipart_upload(Bucket="mpu", Key="pc", UploadId=up, MultipartUpload={"Parts": [
    {"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]}, {"PartNumber": 2, "ETag": p2["CopyPartResult"]["ETag"]}]})
WANT = WHOLE["s3"][7:8 + 5 * MIB] + WHOLE["c"]
got = s3.get_object(Bucket="mpu", Key="pc")
t.check(got["Body"].read() == WANT and mode_of(got) == "kms",
        "UploadPartCopy from an SSE-C object and an SSE-C multipart object into SSE-KMS: byte for byte")
lo = 5 * MIB - 3
t.check(s3.get_object(Bucket="mpu", Key="pc", Range="bytes=%d-%d" % (lo, lo + 9999))["Body"].read() ==
        WANT[lo:lo + 10000], "a range across the copied parts' boundary")

# 3. a bucket's default
s3.create_bucket(Bucket="mpudflt")
s3.put_bucket_encryption(Bucket="mpudflt", ServerSideEncryptionConfiguration={"Rules": [
    {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "app-key"}}]})
cr = s3.create_multipart_upload(Bucket="mpudflt", Key="d")
t.eq((mode_of(cr), cr.get("SSEKMSKeyId")), ("kms", "app-key"), "CreateMultipartUpload takes the bucket's default")
r1 = s3.upload_part(Bucket="mpudflt", Key="d", UploadId=cr["UploadId"], PartNumber=1, Body=WHOLE["kms"][:5 * MIB])
def with_headers(h):
    c = boto3_client(EP)
    c.meta.events.register("before-sign.s3.UploadPart",
                           lambda request, **_: [request.headers.__setitem__(k, v) for k, v in h.items()])
    return c


t.eq(status_code(lambda: with_headers({"x-amz-server-side-encryption": "AES256"}).upload_part(
    Bucket="mpudflt", Key="d", UploadId=cr["UploadId"], PartNumber=2, Body=b"x")), (400, "InvalidArgument"),
     "a part naming another mode than the upload's: 400 InvalidArgument")
r2 = with_headers({"x-amz-server-side-encryption": "aws:kms", "x-amz-server-side-encryption-aws-kms-key-id": "app-key"}
                  ).upload_part(Bucket="mpudflt", Key="d", UploadId=cr["UploadId"], PartNumber=2, Body=b"tail" * 10)
t.eq(mode_of(r2), "kms", "a part restating the upload's mode (aws:kms): 200")
s3.complete_multipart_upload(Bucket="mpudflt", Key="d", UploadId=cr["UploadId"], MultipartUpload={"Parts": [
    {"PartNumber": 1, "ETag": r1["ETag"]}, {"PartNumber": 2, "ETag": r2["ETag"]}]})
got = s3.get_object(Bucket="mpudflt", Key="d")
t.check(got["Body"].read() == WHOLE["kms"][:5 * MIB] + b"tail" * 10 and got.get("SSEKMSKeyId") == "app-key",
        "the default-encrypted multipart object reads back, SSE-KMS")

# 4. on disk
up = s3.create_multipart_upload(Bucket="mpu", Key="plain")["UploadId"]
r = s3.upload_part(Bucket="mpu", Key="plain", UploadId=up, PartNumber=1, Body=PLAIN_MARK * 1000)
s3.complete_multipart_upload(Bucket="mpu", Key="plain", UploadId=up,
                             MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r["ETag"]}]})
t.check(disk_has(targets, PLAIN_MARK[:24]), "the plain upload's marker is found on disk (the search works)")
t.eq(disk_has(targets, MARK[:24]), [], "no file under any target holds the encrypted uploads' plaintext")

# 5. a part uploaded again (or by UploadPartCopy) gets key stream of its own: zeros uploaded
#    three times under one number are three different ciphertexts (the key stream itself)
def part_files(up, num):
    found = []
    for n in targets:
        for root, _, files in os.walk(n.dir):
            if root.endswith("/s3mpu/" + up):
                found += [os.path.join(root, f) for f in files if f.startswith("p%05d." % num)]
    return found


ZERO = bytes(5 * MIB)  # a part but the last is at least 5 MiB
s3.put_object(Bucket="mpu", Key="zeros", Body=ZERO, ServerSideEncryption="AES256")
up = s3.create_multipart_upload(Bucket="mpu", Key="again", ServerSideEncryption="AES256")["UploadId"]
streams, etags = [], []
for how in ("put", "put", "copy"):
    if how == "put":
        r = s3.upload_part(Bucket="mpu", Key="again", UploadId=up, PartNumber=7, Body=ZERO)
        etags.append(r["ETag"])
    else:
        r = s3.upload_part_copy(Bucket="mpu", Key="again", UploadId=up, PartNumber=7,
                                CopySource={"Bucket": "mpu", "Key": "zeros"})
        etags.append(r["CopyPartResult"]["ETag"])
    f = part_files(up, 7)
    streams.append(open(f[0], "rb").read() if len(f) == 1 else None)
t.check(all(s is not None and len(s) == len(ZERO) for s in streams), "one part file after each upload of part 7",
        [len(s) if s else s for s in streams])
t.check(len(set(streams)) == 3 and ZERO not in streams, "three uploads of zeros as part 7: three different "
        "ciphertexts (no key stream used twice)", [s[:8].hex() if s else s for s in streams])
r2 = s3.upload_part(Bucket="mpu", Key="again", UploadId=up, PartNumber=8, Body=b"end")
s3.complete_multipart_upload(Bucket="mpu", Key="again", UploadId=up, MultipartUpload={
    "Parts": [{"PartNumber": 7, "ETag": etags[-1]}, {"PartNumber": 8, "ETag": r2["ETag"]}]})
got = s3.get_object(Bucket="mpu", Key="again")["Body"].read()
t.check(got == ZERO + b"end", "the object of the re-uploaded part reads back: its zeros, then part 8", len(got))
got = s3.get_object(Bucket="mpu", Key="again", Range="bytes=%d-%d" % (len(ZERO) - 2, len(ZERO) + 1))["Body"].read()
t.eq(got, b"\0\0en", "a range across the re-uploaded part's end")
got = s3.get_object(Bucket="mpu", Key="again", PartNumber=7)["Body"].read()
t.check(got == ZERO, "?partNumber=7 reads the re-uploaded part", len(got))

# 6. the AWS CLI (multipart above 8 MiB)
work = os.environ["TMPDIR"]
src, back, keyf = os.path.join(work, "cli.src"), os.path.join(work, "cli.back"), os.path.join(work, "cli.key")
CLI = data_of(MARK, 9 * MIB + 5, b"cli/")
with open(src, "wb") as f:
    f.write(CLI)
with open(keyf, "wb") as f:
    f.write(CKEY)
cmd = ["/usr/bin/aws", "--endpoint-url", EP, "s3", "cp"]
rc, out = run(cmd + [src, "s3://mpu/cli", "--sse-c", "AES256", "--sse-c-key", "fileb://" + keyf], env=dict(AWS_ENV))
t.check(rc == 0, "aws s3 cp --sse-c up (multipart)", out[-300:])
h = s3.head_object(Bucket="mpu", Key="cli", **MODES["c"][1])
t.check(h["ETag"].strip('"').split("-")[-1] in ("2", "3"), "the CLI uploaded it in parts", h["ETag"])
rc, out = run(cmd + ["s3://mpu/cli", back, "--sse-c", "AES256", "--sse-c-key", "fileb://" + keyf], env=dict(AWS_ENV))
t.check(rc == 0 and open(back, "rb").read() == CLI, "aws s3 cp --sse-c down: byte for byte", out[-300:])
t.eq(disk_has(targets, MARK[:24]), [], "still no plaintext on disk")

# 7. no key in any log
leaks = keys_in_logs(cluster.nodes, ALL_KEYS)
t.eq(leaks, [], "no key (base64 or hex) in any node's log")

clulib.check_logs(cluster.nodes)
t.finish()
