"""test_s3_checksums.py - S3's additional checksums (x-amz-checksum-*) are
verified, kept with the object and answered.

On a 1-gateway 3-target cluster: PutObject with each algorithm (CRC32,
CRC32C, SHA1, SHA256 through boto3's ChecksumAlgorithm; CRC64NVME, which
this botocore lacks, in a signed raw request) answers the checksum, and
an aws-chunked PUT's CRC32 trailer is kept the same way;
HeadObject / GetObject with x-amz-checksum-mode: ENABLED answer it back
(botocore validates the body against it), with x-amz-checksum-type
FULL_OBJECT; without the mode, or for a Range, no checksum header. A
wrong value is refused (400 BadDigest) and stores nothing. An object
copied with CopyObject keeps its checksum. GetObjectAttributes answers
ETag, Checksum, ObjectParts (a multipart object's part count and its
parts' numbers, sizes and, for a COMPOSITE upload, checksums, paged by
MaxParts and PartNumberMarker; a bad one 400),
StorageClass and ObjectSize (boto3 and the AWS CLI); without
x-amz-object-attributes it is 400 InvalidArgument. Multipart uploads:
boto3's upload_file with CRC32 gets the composite checksum
crc32(crc32(part 1)..)-3; raw uploads with CRC32 FULL_OBJECT (the
Complete's x-amz-checksum-crc32 verified: BadDigest when wrong) and SHA1
COMPOSITE get theirs; a Complete naming a wrong part checksum is
InvalidPart; Create refuses the combinations S3 refuses. No node logs an
error.
"""
# timeout: 180
import base64
import hashlib
import json
import os
import tempfile
import xml.etree.ElementTree as ET
import zlib

from botocore.exceptions import ClientError

from itlib import T
import s3lib
from s3lib import AWS_ENV, boto3_client, chunked_put, cluster, error_lines, make_file, run

t = T()
EP = cluster(t, "s3ck")
s3 = boto3_client(EP)
B = "cksums"
s3.create_bucket(Bucket=B)
WORK = tempfile.mkdtemp(prefix="s3ck-", dir=os.environ.get("TMPDIR"))


def _table(poly, bits):
    tab = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        tab.append(c)
    return tab


_T32C, _T64 = _table(0x82F63B78, 32), _table(0x9A6C9329AC4BC9B5, 64)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _T32C[(c ^ b) & 0xFF]
    return (c ^ 0xFFFFFFFF).to_bytes(4, "big")


def crc64nvme(data):
    c = 0xFFFFFFFFFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _T64[(c ^ b) & 0xFF]
    return (c ^ 0xFFFFFFFFFFFFFFFF).to_bytes(8, "big")


t.eq(crc64nvme(b"123456789").hex(), "ae8b14860a799888", "the test's CRC64/NVME gives the check value")
t.eq(crc32c(b"123456789").hex(), "e3069283", "the test's CRC32C gives the check value")

DIGEST = {
    "crc32": lambda d: zlib.crc32(d).to_bytes(4, "big"),
    "crc32c": crc32c,
    "crc64nvme": crc64nvme,
    "sha1": lambda d: hashlib.sha1(d).digest(),
    "sha256": lambda d: hashlib.sha256(d).digest(),
}


def b64(alg, data):
    return base64.b64encode(DIGEST[alg](data)).decode()


def signed(method, path, body=b"", headers=None):
    return s3lib.signed(EP, method, path, body, headers)


def code(body):
    try:
        return ET.fromstring(body).findtext("Code")
    except ET.ParseError:
        return None


objs = {}
# --- PutObject with each algorithm --------------------------------------------------------

for alg in ("crc32", "crc32c", "sha1", "sha256"):
    data = os.urandom(10000 + len(alg))
    key = "put/" + alg
    r = s3.put_object(Bucket=B, Key=key, Body=data, ChecksumAlgorithm=alg.upper())
    field = "Checksum" + alg.upper()
    t.eq(r.get(field), b64(alg, data), "PutObject %s: the answer has the checksum" % alg.upper())
    objs[key] = (alg, data)
data = os.urandom(30000)
st, h, body = signed("PUT", "/%s/put/crc64nvme" % B, data, {"x-amz-checksum-crc64nvme": b64("crc64nvme", data)})
t.check(st == 200 and h.get("x-amz-checksum-crc64nvme") == b64("crc64nvme", data),
        "PutObject CRC64NVME (raw, signed): 200 with the checksum", (st, h, body[:300]))
objs["put/crc64nvme"] = ("crc64nvme", data)
data = os.urandom(200000)
st, body = chunked_put(EP, B, "put/trailer", data)  # aws-chunked, the CRC32 in a trailer
t.eq(st, 200, "PutObject aws-chunked with an x-amz-checksum-crc32 trailer")
objs["put/trailer"] = ("crc32", data)

# --- read back ---------------------------------------------------------------------------

bad = []
for key, (alg, data) in sorted(objs.items()):
    field = "Checksum" + alg.upper()
    want = b64(alg, data)
    st, h, _ = signed("HEAD", "/%s/%s" % (B, key), headers={"x-amz-checksum-mode": "ENABLED"})
    if st != 200 or h.get("x-amz-checksum-" + alg) != want or h.get("x-amz-checksum-type") != "FULL_OBJECT":
        bad.append(("HEAD", key, st, h.get("x-amz-checksum-" + alg), want))
    st, h, got = signed("GET", "/%s/%s" % (B, key), headers={"x-amz-checksum-mode": "ENABLED"})
    if st != 200 or h.get("x-amz-checksum-" + alg) != want or got != data:
        bad.append(("GET", key, st, h.get("x-amz-checksum-" + alg), want))
    st, h, _ = signed("GET", "/%s/%s" % (B, key))
    if any(k.startswith("x-amz-checksum") for k in h):
        bad.append(("GET without the mode answers a checksum", key))
    st, h, got = signed("GET", "/%s/%s" % (B, key), headers={"x-amz-checksum-mode": "ENABLED", "Range": "bytes=0-99"})
    if st != 206 or got != data[:100] or any(k.startswith("x-amz-checksum") for k in h):
        bad.append(("a Range answers the whole object's checksum", key, st))
    if alg != "crc64nvme":
        hb = s3.head_object(Bucket=B, Key=key, ChecksumMode="ENABLED")
        gb = s3.get_object(Bucket=B, Key=key, ChecksumMode="ENABLED")
        if hb.get(field) != want or gb.get(field) != want or gb["Body"].read() != data:
            bad.append(("boto3", key, hb.get(field), gb.get(field), want))
t.check(not bad, "HEAD and GET with x-amz-checksum-mode ENABLED answer the stored checksum (%d objects; "
        "not without the mode, not for a range; botocore validates the bodies)" % len(objs), bad)

# --- wrong values ---------------------------------------------------------------------

bad = []
for alg in DIGEST:
    data = os.urandom(777)
    wrong = b64(alg, data + b"x")
    st, h, body = signed("PUT", "/%s/bad/%s" % (B, alg), data, {"x-amz-checksum-" + alg: wrong})
    if st != 400 or code(body) != "BadDigest":
        bad.append((alg, st, body[:200]))
    st, _, _ = signed("HEAD", "/%s/bad/%s" % (B, alg))
    if st != 404:
        bad.append((alg, "stored", st))
t.check(not bad, "a wrong x-amz-checksum-* value: 400 BadDigest, nothing stored (every algorithm)", bad)
st, h, body = signed("PUT", "/%s/bad/two" % B, b"abc", {"x-amz-checksum-crc32": b64("crc32", b"abc"),
                                                          "x-amz-checksum-sha1": b64("sha1", b"abc")})
t.check(st == 400 and code(body) == "InvalidRequest", "two x-amz-checksum-* headers: 400 InvalidRequest", (st, body))

# --- CopyObject keeps it --------------------------------------------------------------

s3.copy_object(Bucket=B, Key="copied", CopySource={"Bucket": B, "Key": "put/sha256"})
hb = s3.head_object(Bucket=B, Key="copied", ChecksumMode="ENABLED")
t.eq(hb.get("ChecksumSHA256"), b64("sha256", objs["put/sha256"][1]), "CopyObject: the copy has the source's checksum")

# --- GetObjectAttributes --------------------------------------------------------------

ALL = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]
alg, data = objs["put/crc32c"]
a = s3.get_object_attributes(Bucket=B, Key="put/crc32c", ObjectAttributes=ALL)
t.check(a.get("ETag") == hashlib.md5(data).hexdigest() and a.get("Checksum", {}).get("ChecksumCRC32C") == b64(alg, data)
        and a.get("StorageClass") == "STANDARD" and a.get("ObjectSize") == len(data) and "ObjectParts" not in a
        and a.get("LastModified") is not None,
        "GetObjectAttributes (boto3): ETag, Checksum, StorageClass, ObjectSize; no ObjectParts for a single PUT",
        {k: v for k, v in a.items() if k != "ResponseMetadata"})
a = s3.get_object_attributes(Bucket=B, Key="put/sha1", ObjectAttributes=["ObjectSize"])
t.check(a.get("ObjectSize") == len(objs["put/sha1"][1]) and "ETag" not in a and "Checksum" not in a,
        "GetObjectAttributes: only the attributes asked for", {k: v for k, v in a.items() if k != "ResponseMetadata"})
big = make_file(os.path.join(WORK, "mpu"), 11 << 20, seed=2)
import boto3.s3.transfer
s3.upload_file(big, B, "multi", Config=boto3.s3.transfer.TransferConfig(multipart_threshold=5 << 20,
                                                                         multipart_chunksize=5 << 20))
a = s3.get_object_attributes(Bucket=B, Key="multi", ObjectAttributes=ALL)
t.check(a.get("ObjectParts", {}).get("TotalPartsCount") == 3 and a.get("ETag", "").endswith("-3")
        and a.get("ObjectSize") == 11 << 20,
        "GetObjectAttributes of a multipart object: TotalPartsCount 3, ETag md5-3",
        {k: v for k, v in a.items() if k != "ResponseMetadata"})
op = a.get("ObjectParts", {})
t.check([(p.get("PartNumber"), p.get("Size")) for p in op.get("Parts", [])] == [(1, 5 << 20), (2, 5 << 20), (3, 1 << 20)]
        and op.get("IsTruncated") is False and op.get("MaxParts") == 1000 and op.get("PartNumberMarker") == 0,
        "GetObjectAttributes ObjectParts: every part's number and size, not truncated", op)
op = s3.get_object_attributes(Bucket=B, Key="multi", ObjectAttributes=["ObjectParts"], MaxParts=1,
                              PartNumberMarker=1).get("ObjectParts", {})
t.check([(p.get("PartNumber"), p.get("Size")) for p in op.get("Parts", [])] == [(2, 5 << 20)]
        and op.get("IsTruncated") is True and op.get("NextPartNumberMarker") == 2 and op.get("MaxParts") == 1
        and op.get("PartNumberMarker") == 1 and op.get("TotalPartsCount") == 3,
        "ObjectParts paged: MaxParts 1 after marker 1 is part 2, truncated, next marker 2", op)
op = s3.get_object_attributes(Bucket=B, Key="multi", ObjectAttributes=["ObjectParts"], MaxParts=10,
                              PartNumberMarker=2).get("ObjectParts", {})
t.check([p.get("PartNumber") for p in op.get("Parts", [])] == [3] and op.get("IsTruncated") is False,
        "ObjectParts after marker 2: part 3, the last page", op)
# a COMPOSITE upload's part checksums: every part's in ObjectParts, paged too
pd = [os.urandom(5 << 20), os.urandom(5 << 20), b"tail" * 100]
up = s3.create_multipart_upload(Bucket=B, Key="multi-sha256", ChecksumAlgorithm="SHA256")["UploadId"]
pl = []
for i, d in enumerate(pd):
    r = s3.upload_part(Bucket=B, Key="multi-sha256", UploadId=up, PartNumber=i + 1, Body=d,
                       ChecksumAlgorithm="SHA256", ChecksumSHA256=b64("sha256", d))
    pl.append({"PartNumber": i + 1, "ETag": r["ETag"], "ChecksumSHA256": b64("sha256", d)})
s3.complete_multipart_upload(Bucket=B, Key="multi-sha256", UploadId=up, MultipartUpload={"Parts": pl})
op = s3.get_object_attributes(Bucket=B, Key="multi-sha256", ObjectAttributes=["ObjectParts"]).get("ObjectParts", {})
t.eq([(p.get("PartNumber"), p.get("ChecksumSHA256")) for p in op.get("Parts", [])],
     [(i + 1, b64("sha256", d)) for i, d in enumerate(pd)], "ObjectParts of a SHA256 upload: each part's checksum")
op = s3.get_object_attributes(Bucket=B, Key="multi-sha256", ObjectAttributes=["ObjectParts"], MaxParts=1,
                              PartNumberMarker=1).get("ObjectParts", {})
t.eq([(p.get("PartNumber"), p.get("ChecksumSHA256")) for p in op.get("Parts", [])], [(2, b64("sha256", pd[1]))],
     "... paged after marker 1: part 2 with its own checksum")
rc, out = run(["/usr/bin/aws", "--endpoint-url", EP, "s3api", "get-object-attributes", "--bucket", B, "--key",
               "put/sha256", "--object-attributes", "ETag", "Checksum", "ObjectSize"], env=AWS_ENV)
try:
    j = json.loads(out)
except ValueError:
    j = {}
t.check(rc == 0 and j.get("Checksum", {}).get("ChecksumSHA256") == b64("sha256", objs["put/sha256"][1])
        and j.get("ObjectSize") == len(objs["put/sha256"][1]), "aws s3api get-object-attributes", out[-500:])
st, _, body = signed("GET", "/%s/put/sha1?attributes" % B)
t.check(st == 400 and code(body) == "InvalidArgument", "GetObjectAttributes without x-amz-object-attributes: 400",
        (st, body[:300]))
for h, v in (("x-amz-max-parts", "1001"), ("x-amz-max-parts", "-1"), ("x-amz-part-number-marker", "x")):
    st, _, body = signed("GET", "/%s/multi?attributes" % B, headers={"x-amz-object-attributes": "ObjectParts", h: v})
    t.check(st == 400 and code(body) == "InvalidArgument", "GetObjectAttributes with %s: %s: 400" % (h, v),
            (st, body[:300]))
st, _, body = signed("GET", "/%s/put/sha1?attributes" % B, headers={"x-amz-object-attributes": "ETag,Owner"})
t.check(st == 400 and code(body) == "InvalidArgument", "GetObjectAttributes of an unknown attribute: 400",
        (st, body[:300]))
try:
    s3.get_object_attributes(Bucket=B, Key="nosuch", ObjectAttributes=["ETag"])
    t.fail("GetObjectAttributes of a missing key: NoSuchKey")
except ClientError as e:
    t.eq(e.response["Error"]["Code"], "NoSuchKey", "GetObjectAttributes of a missing key: NoSuchKey")

# --- multipart uploads ------------------------------------------------------------------

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
s3.upload_file(big, B, "multi-crc32", ExtraArgs={"ChecksumAlgorithm": "CRC32"},
               Config=boto3.s3.transfer.TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20))
bigdata = open(big, "rb").read()
parts = [bigdata[i:i + (5 << 20)] for i in range(0, len(bigdata), 5 << 20)]
comp = base64.b64encode(DIGEST["crc32"](b"".join(DIGEST["crc32"](p) for p in parts))).decode() + "-3"
st, h, _ = signed("HEAD", "/%s/multi-crc32" % B, headers={"x-amz-checksum-mode": "ENABLED"})
t.check(st == 200 and h.get("x-amz-checksum-crc32") == comp and h.get("x-amz-checksum-type") == "COMPOSITE",
        "boto3 upload_file with CRC32 (3 parts): HEAD answers the composite checksum crc32(crc32(part)..)-3",
        (st, h.get("x-amz-checksum-crc32"), h.get("x-amz-checksum-type"), comp))
gb = s3.get_object(Bucket=B, Key="multi-crc32", ChecksumMode="ENABLED")
t.check(gb["Body"].read() == bigdata and gb.get("ChecksumCRC32") == comp, "GET of it: the bytes, the composite checksum")
st, _, body = signed("GET", "/%s/multi-crc32?attributes" % B, headers={"x-amz-object-attributes": "Checksum,ObjectParts"})
d = ET.fromstring(body) if st == 200 else None
t.check(d is not None and d.findtext(NS + "Checksum/" + NS + "ChecksumCRC32") == comp
        and d.findtext(NS + "Checksum/" + NS + "ChecksumType") == "COMPOSITE"
        and d.findtext(NS + "ObjectParts/" + NS + "PartsCount") == "3",
        "GetObjectAttributes of it: the composite checksum, type COMPOSITE, 3 parts", body[:500])


def mpu(key, alg, typ, datas, part_cks=None, whole=None):
    """Create (raw: this botocore has no ChecksumType), parts with their
    checksums, Complete; returns (status, headers, body) of the Complete."""
    st, h, body = signed("POST", "/%s/%s?uploads" % (B, key), b"", {"x-amz-checksum-algorithm": alg.upper(),
                                                                    "x-amz-checksum-type": typ})
    if st != 200:
        return st, h, body
    if h.get("x-amz-checksum-algorithm") != alg.upper() or h.get("x-amz-checksum-type") != typ:
        return 0, h, b"Create did not answer the algorithm and type"
    uid = ET.fromstring(body).findtext(NS + "UploadId")
    xml = "<CompleteMultipartUpload>"
    for i, d in enumerate(datas):
        st, h, body = signed("PUT", "/%s/%s?partNumber=%d&uploadId=%s" % (B, key, i + 1, uid), d,
                             {"x-amz-checksum-" + alg: b64(alg, d)})
        if st != 200 or h.get("x-amz-checksum-" + alg) != b64(alg, d):
            return st, h, b"UploadPart: " + body
        ck = (part_cks or {}).get(i, b64(alg, d))
        xml += "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag><Checksum%s>%s</Checksum%s></Part>" % (
            i + 1, h["etag"], alg.upper(), ck, alg.upper())
    xml += "</CompleteMultipartUpload>"
    return signed("POST", "/%s/%s?uploadId=%s" % (B, key, uid), xml.encode(),
                  {"x-amz-checksum-" + alg: whole} if whole else {})


two = [os.urandom(5 << 20), os.urandom(3000)]
full = b64("crc32", b"".join(two))
st, h, body = mpu("full-crc32", "crc32", "FULL_OBJECT", two, whole=full)
d = ET.fromstring(body) if st == 200 else None
t.check(d is not None and d.findtext(NS + "ChecksumCRC32") == full and d.findtext(NS + "ChecksumType") == "FULL_OBJECT",
        "a CRC32 FULL_OBJECT upload: Complete (its x-amz-checksum-crc32 verified) answers the whole object's CRC32",
        (st, body[:500]))
gb = s3.get_object(Bucket=B, Key="full-crc32", ChecksumMode="ENABLED")
t.check(gb["Body"].read() == b"".join(two) and gb.get("ChecksumCRC32") == full,
        "GET of it with the mode: the full-object CRC32 (botocore validated the body)")
st, h, body = mpu("full-bad", "crc32", "FULL_OBJECT", two, whole=b64("crc32", b"other"))
t.check(st == 400 and code(body) == "BadDigest", "a FULL_OBJECT Complete with a wrong x-amz-checksum-crc32: BadDigest",
        (st, body[:300]))
st, h, body = mpu("comp-bad", "sha256", "COMPOSITE", two, part_cks={1: b64("sha256", b"other")})
t.check(st == 400 and code(body) == "InvalidPart", "a COMPOSITE Complete naming a wrong part checksum: InvalidPart",
        (st, body[:300]))
t.eq(signed("HEAD", "/%s/full-bad" % B)[0], 404, "... nothing stored")
st, h, body = mpu("comp-sha1", "sha1", "COMPOSITE", two)
comp1 = base64.b64encode(hashlib.sha1(b"".join(DIGEST["sha1"](p) for p in two)).digest()).decode() + "-2"
t.check(st == 200 and ET.fromstring(body).findtext(NS + "ChecksumSHA1") == comp1, "a SHA1 COMPOSITE upload: sha1(sha1(part)..)-2",
        (st, body[:400], comp1))
for alg, typ in (("sha1", "FULL_OBJECT"), ("crc64nvme", "COMPOSITE"), ("md5", "COMPOSITE")):
    st, _, body = signed("POST", "/%s/x?uploads" % B, b"", {"x-amz-checksum-algorithm": alg, "x-amz-checksum-type": typ})
    t.check(st == 400 and code(body) == "InvalidRequest", "CreateMultipartUpload %s %s: 400 InvalidRequest" % (alg, typ),
            (st, body[:300]))
st, _, body = signed("POST", "/%s/x?uploads" % B, b"", {"x-amz-checksum-type": "COMPOSITE"})
t.check(st == 400 and code(body) == "InvalidRequest", "x-amz-checksum-type without an algorithm: 400", (st, body[:300]))

t.eq(error_lines(), [], "no node logged an error")
t.finish()
