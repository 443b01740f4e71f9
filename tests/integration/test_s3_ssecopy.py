"""test_s3_ssecopy.py - CopyObject and UploadPartCopy of a server-side
encrypted source (SSE-C, SSE-S3, SSE-KMS): the copy reads the source's
plaintext wherever it lives (on the destination's owner or fetched from
the source's holder, as ciphertext with its encryption record), and
encrypts the copy as the destination asks. 1 gateway + 3 targets on
loopback ports with a cluster secret (a peer's read of the source is
signed by it), stopped by PID; SSE-C over plain HTTP is allowed by
s3.sse_c_plain_http.

Checks:
 1. Every source mode (plain, SSE-C with the x-amz-copy-source-* key,
    SSE-S3, SSE-KMS) to every destination mode that encrypts (SSE-C with
    another key, SSE-S3, SSE-KMS with another key id): the copy answers
    the destination's mode, reads back byte for byte, a range across a
    1 MiB boundary too; for every source mode one copy whose destination
    owner holds the source (read locally) and one whose owner does not
    (fetched from the holder).
 2. No file under any target holds the encrypted sources' plaintext
    marker, while the plain source's marker is found (the search can
    fail); then copies of each encrypted source into plain destinations
    read back as plaintext, and the marker is on disk now (it was
    decrypted).
 3. Refusals, nothing stored: an SSE-C source without the copy-source key
    400 InvalidRequest, with another key 403 AccessDenied, a copy-source
    key on a plain source 400 InvalidRequest, a copy-source key whose MD5
    does not match 400 InvalidArgument.
 4. UploadPartCopy: a plain upload of two parts, ranges of an SSE-C source
    (with its key) and of an SSE-KMS source, completed; GET byte for byte
    and a range across the part boundary.
 5. The AWS CLI: aws s3 cp s3://... s3://... --sse-c-copy-source with
    --sse aws:kms, read back byte for byte.
 6. No log line of any node holds a key; no error-level line.
"""
# timeout: 180
import base64
import hashlib
import os

from itlib import T, q

import clulib
from clulib import request
from s3lib import AWS_ENV, boto3_client, cluster, disk_has, keys_in_logs, run, sse_cluster, status_code

os.environ["BOTO_DISABLE_CRT"] = "true"

t = T()
K1, KMS_A, KMS_B = os.urandom(32), os.urandom(32), os.urandom(32)
CKEY, CKEY2 = os.urandom(32), os.urandom(32)
ALL_KEYS = [K1, KMS_A, KMS_B, CKEY, CKEY2]
_, csecret = clulib.secret_files("s3ssecopy")  # peers' reads signed by the cluster secret
EP, master, kms = sse_cluster(t, "s3ssecopy", [("k1", K1)], [("app-key", KMS_A), ("other-key", KMS_B)],
                             ["--set", "cluster.secret_file=" + csecret])
g = cluster.nodes[0]
targets = list(cluster.nodes[1:])
s3 = boto3_client(EP)

MARK = b"SSECOPY-SOURCE-PLAINTEXT-MARK-7/"
PLAIN_MARK = b"SSECOPY-UNENCRYPTED-CONTROL-99/"
SIZE = (1 << 20) + 4099


def data_of(mark, n=SIZE):
    return (mark * (n // len(mark) + 1))[:n]


SRC = {  # source mode -> (put args, copy-source args)
    "plain": ({}, {}),
    "c": (dict(SSECustomerAlgorithm="AES256", SSECustomerKey=CKEY),
          dict(CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=CKEY)),
    "s3": (dict(ServerSideEncryption="AES256"), {}),
    "kms": (dict(ServerSideEncryption="aws:kms", SSEKMSKeyId="app-key"), {}),
}
DST = {  # destination mode -> (copy args, read args)
    "c": (dict(SSECustomerAlgorithm="AES256", SSECustomerKey=CKEY2),
          dict(SSECustomerAlgorithm="AES256", SSECustomerKey=CKEY2)),
    "s3": (dict(ServerSideEncryption="AES256"), {}),
    "kms": (dict(ServerSideEncryption="aws:kms", SSEKMSKeyId="other-key"), {}),
}
DATA = {m: data_of(PLAIN_MARK if m == "plain" else MARK) for m in SRC}


def owner(bck, name):
    """The index in targets of bck/name's owner (the gateway's 307)."""
    loc = request("HEAD", g.url, "/v1/objects/%s/%s" % (bck, q(name))).h("location") or ""
    return next((i for i, x in enumerate(targets) if loc.startswith(x.url + "/")), -1)


for b in ("cpsrc", "cpdst"):
    s3.create_bucket(Bucket=b)
for m, (kw, _) in SRC.items():
    s3.put_object(Bucket="cpsrc", Key="src-" + m, Body=DATA[m], **kw)
t.check(all(owner("cpsrc", "src-" + m) >= 0 for m in SRC), "the sources' owners are known")


def dest_name(sm, dm, local):
    """A destination name whose owner holds the source (local) or not."""
    so = owner("cpsrc", "src-" + sm)
    for j in range(64):
        n = "d-%s-%s-%d" % (sm, dm, j)
        if (owner("cpdst", n) == so) == local:
            return n
    return None


# 1. every source mode to every encrypting destination mode
seen = {}
for sm, (_, srcargs) in SRC.items():
    for i, (dm, (dargs, rargs)) in enumerate(DST.items()):
        local = i % 2 == 0
        name = dest_name(sm, dm, local)
        what = "copy %s -> %s (%s)" % (sm, dm, "source read locally" if local else "source fetched from its holder")
        if not name:
            t.check(False, what + ": a destination name with that owner")
            continue
        seen.setdefault(sm, set()).add(local)
        try:
            r = s3.copy_object(Bucket="cpdst", Key=name, CopySource={"Bucket": "cpsrc", "Key": "src-" + sm},
                               **dargs, **srcargs)
        except Exception as e:
            t.check(False, what + ": answered 200", str(e)[:300])
            continue
        if dm == "c":
            t.eq(r.get("SSECustomerKeyMD5"), base64.b64encode(hashlib.md5(CKEY2).digest()).decode(),
                 what + ": answers the destination key's MD5")
        else:
            t.eq(r.get("ServerSideEncryption"), dargs["ServerSideEncryption"], what + ": answers the mode")
        got = s3.get_object(Bucket="cpdst", Key=name, **rargs)
        t.check(got["Body"].read() == DATA[sm], what + ": reads back byte for byte")
        got = s3.get_object(Bucket="cpdst", Key=name, Range="bytes=1048000-1049999", **rargs)
        t.check(got["Body"].read() == DATA[sm][1048000:1050000], what + ": a range across 1 MiB")
t.eq({m: sorted(v) for m, v in seen.items()}, {m: [False, True] for m in SRC},
     "every source mode copied both locally and from another target")

# 2. ciphertext on disk, plaintext once copied into plain destinations
t.check(disk_has(targets, PLAIN_MARK[:24]), "the plain source's marker is found on disk (the search works)")
t.eq(disk_has(targets, MARK[:24]), [], "no file under any target holds the encrypted sources' plaintext")
for sm in ("c", "s3", "kms"):
    for local in (True, False):
        name = dest_name(sm, "plain", local)
        s3.copy_object(Bucket="cpdst", Key=name, CopySource={"Bucket": "cpsrc", "Key": "src-" + sm}, **SRC[sm][1])
        got = s3.get_object(Bucket="cpdst", Key=name)
        t.check(got["Body"].read() == DATA[sm] and "ServerSideEncryption" not in got,
                "copy %s -> plain (%s): plaintext, not encrypted" % (sm, "local" if local else "fetched"))
t.check(disk_has(targets, MARK[:24]), "the decrypted copies' marker is on disk now")
r = request("GET", targets[owner("cpsrc", "src-c")].url, "/v1/objects/cpsrc/src-c", headers={"Ais-Intra": "test"})
t.check(r.status in (401, 403) and MARK[:24] not in (r.body or b""),
        "an unsigned native GET of the encrypted source that says it is a peer: refused", r.status)

# 3. refusals
cp = dict(Bucket="cpdst", Key="refused")
srcc = {"Bucket": "cpsrc", "Key": "src-c"}
t.eq(status_code(lambda: s3.copy_object(CopySource=srcc, **cp)), (400, "InvalidRequest"),
     "SSE-C source without the copy-source key: 400 InvalidRequest")
t.eq(status_code(lambda: s3.copy_object(CopySource=srcc, CopySourceSSECustomerAlgorithm="AES256",
                                   CopySourceSSECustomerKey=CKEY2, **cp)), (403, "AccessDenied"),
     "SSE-C source with another key: 403 AccessDenied")
t.eq(status_code(lambda: s3.copy_object(CopySource={"Bucket": "cpsrc", "Key": "src-plain"}, **cp, **SRC["c"][1])),
     (400, "InvalidRequest"), "a copy-source key on a plain source: 400 InvalidRequest")
bad_md5 = {"x-amz-copy-source-server-side-encryption-customer-algorithm": "AES256",
           "x-amz-copy-source-server-side-encryption-customer-key": base64.b64encode(CKEY).decode(),
           "x-amz-copy-source-server-side-encryption-customer-key-MD5":
               base64.b64encode(hashlib.md5(CKEY2).digest()).decode()}
raw = boto3_client(EP)
raw.meta.events.register("before-sign.s3.CopyObject",
                         lambda request, **_: [request.headers.__setitem__(k, v) for k, v in bad_md5.items()])
t.eq(status_code(lambda: raw.copy_object(CopySource=srcc, **cp)), (400, "InvalidArgument"),
     "a copy-source key whose MD5 does not match: 400 InvalidArgument")
t.eq(status_code(lambda: s3.head_object(**cp))[0], 404, "nothing stored by the refused copies")

# 4. UploadPartCopy from encrypted sources
BIG = data_of(MARK, (5 << 20) + 5000)
s3.put_object(Bucket="cpsrc", Key="big-c", Body=BIG, **SRC["c"][0])
up = s3.create_multipart_upload(Bucket="cpdst", Key="mp")["UploadId"]
p1 = s3.upload_part_copy(Bucket="cpdst", Key="mp", UploadId=up, PartNumber=1,
                         CopySource={"Bucket": "cpsrc", "Key": "big-c"}, CopySourceRange="bytes=3-%d" % (3 + (5 << 20) - 1),
                         **SRC["c"][1])
p2 = s3.upload_part_copy(Bucket="cpdst", Key="mp", UploadId=up, PartNumber=2,
                         CopySource={"Bucket": "cpsrc", "Key": "src-kms"}, CopySourceRange="bytes=1000-200999")
s3.complete_multipart_upload(Bucket="cpdst", Key="mp", UploadId=up, MultipartUpload={"Parts": [
    {"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]}, {"PartNumber": 2, "ETag": p2["CopyPartResult"]["ETag"]}]})
WANT = BIG[3:3 + (5 << 20)] + DATA["kms"][1000:201000]
t.check(s3.get_object(Bucket="cpdst", Key="mp")["Body"].read() == WANT,
        "UploadPartCopy of an SSE-C and an SSE-KMS range: byte for byte")
lo = (5 << 20) - 777
t.check(s3.get_object(Bucket="cpdst", Key="mp", Range="bytes=%d-%d" % (lo, lo + 2000))["Body"].read() ==
        WANT[lo:lo + 2001], "a range across the part boundary")
up2 = s3.create_multipart_upload(Bucket="cpdst", Key="mp2")["UploadId"]
t.eq(status_code(lambda: s3.upload_part_copy(Bucket="cpdst", Key="mp2", UploadId=up2, PartNumber=1,
                                        CopySource={"Bucket": "cpsrc", "Key": "big-c"})), (400, "InvalidRequest"),
     "UploadPartCopy of an SSE-C source without its key: 400 InvalidRequest")
t.eq(s3.list_parts(Bucket="cpdst", Key="mp2", UploadId=up2).get("Parts", []), [], "no part stored")
s3.abort_multipart_upload(Bucket="cpdst", Key="mp2", UploadId=up2)

# 5. the AWS CLI
work = os.environ["TMPDIR"]
keyf, back = os.path.join(work, "cli.key"), os.path.join(work, "cli.back")
with open(keyf, "wb") as f:
    f.write(CKEY)
rc, out = run(["/usr/bin/aws", "--endpoint-url", EP, "s3", "cp", "s3://cpsrc/src-c", "s3://cpdst/cli",
               "--sse-c-copy-source", "AES256", "--sse-c-copy-source-key", "fileb://" + keyf, "--sse", "aws:kms",
               "--sse-kms-key-id", "app-key"], env=dict(AWS_ENV))
t.check(rc == 0, "aws s3 cp of an SSE-C source into SSE-KMS", out[-300:])
rc, out = run(["/usr/bin/aws", "--endpoint-url", EP, "s3", "cp", "s3://cpdst/cli", back], env=dict(AWS_ENV))
t.check(rc == 0 and open(back, "rb").read() == DATA["c"], "aws s3 cp down: byte for byte", out[-300:])
t.eq(s3.head_object(Bucket="cpdst", Key="cli").get("SSEKMSKeyId"), "app-key", "the CLI copy is SSE-KMS")

# 6. no key in any log
leaks = keys_in_logs(cluster.nodes, ALL_KEYS)
t.eq(leaks, [], "no key (base64 or hex) in any node's log")

clulib.check_logs(cluster.nodes)
t.finish()
