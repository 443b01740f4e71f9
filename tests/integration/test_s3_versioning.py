"""test_s3_versioning.py - S3 versioning over the object layer: versions and
delete markers byte for byte through boto3 and the AWS CLI, in a copies=2
bucket of 1 gateway + 3 targets (a 4th joins later), on loopback ports,
stopped by PID.

Checks:
 1. Get/PutBucketVersioning: empty before, Enabled after; MfaDelete and a
    bad Status refused; an unversioned bucket's objects carry no version
    id and a made-up versionId is refused (InvalidArgument), not served.
 2. Three PUTs of one key: three distinct version ids (x-amz-version-id),
    GET of each by versionId byte for byte, GET without one the newest;
    HEAD by versionId; a bad id InvalidArgument, an unknown one
    NoSuchVersion; GetObjectAttributes by versionId answers that
    version's (and its id), never the current one's.
 3. DeleteObject without versionId writes a delete marker
    (x-amz-delete-marker, its id); GET then 404 (native too), GET of the
    marker by id 405; the old versions still read; DELETE of the marker by
    id makes the newest version current again; DELETE of one version
    removes it for good (NoSuchVersion).
 4. ListObjectVersions: every version and marker with IsLatest, newest
    first per key, prefix and delimiter, paging by max-keys with
    key-marker/version-id-marker (boto3 paginator, 2 a page) and the AWS
    CLI; ListObjectsV2 lists current objects only; every entry has its
    Owner.
 5. Suspended: a PUT writes the "null" version, replaced by the next,
    older versions kept; DeleteObjects with VersionId entries. Enabled
    again: DeleteObjects without a VersionId names each delete marker it
    wrote (DeleteMarker, DeleteMarkerVersionId, as ListObjectVersions
    lists it); with the marker's VersionId it removes it and says so; an
    object version removed so has no DeleteMarker.
 6. Multipart Complete and CopyObject create versions. PUTs of one key
    at once (6 clients, 3 rounds), and PUTs with DELETEs at once: every
    version and delete marker a client was answered is listed and reads
    byte for byte (none lost to an overlapping write). A PUT whose body
    is still coming when a DELETE of its key completes (unversioned
    bucket) stays once acknowledged, through the kills and rebalance of 8.
 7. Native API: GET ?version=ID, listing ?versions=true names the kept
    versions, a plain listing does not.
 8. Every version and marker has 2 copies (on the key's holders); kill -9
    of each target in turn: every version still reads; a 4th target
    joins and after the rebalance every version reads through the
    gateway.
 9. No error-level line in any node's log.
"""
# timeout: 300
import http.client
import json
import os
import threading
import time
import urllib.parse

from itlib import T, q

import clulib
from clulib import Node, follow, get, poll, request, smap_ids
from s3lib import AWS_ENV, boto3_client, cluster, run

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}

t = T()
EP = cluster(t, "s3ver", targets=3, args=["--set", "cluster.grace=1s", "--set", "rebalance.workers=2"])
g = cluster.nodes[0]
targets = list(cluster.nodes[1:])
s3 = boto3_client(EP)
B, U = "vers", "plainb"


def err_code(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - botocore's ClientError
        r = getattr(e, "response", {})
        return r.get("Error", {}).get("Code"), r.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return None, 200


def body(key, vid=None, bck=B):
    kw = {"VersionId": vid} if vid else {}
    return s3.get_object(Bucket=bck, Key=key, **kw)["Body"].read()


def reads(bck, key, want):
    try:
        return body(key, None, bck) == want
    except Exception:  # noqa: BLE001 - any failure is a failed read
        return False


def copies_of(bck, name):
    return sum(get(tg.url, "/v1/objects/%s/%s" % (bck, q(name)), headers=INTRA).status == 200 for tg in targets)


# --- 1. the bucket's versioning ----------------------------------------------------------
s3.create_bucket(Bucket=B)
s3.create_bucket(Bucket=U)
for b in (B, U):
    r = request("PATCH", g.url, "/v1/buckets/" + b,
                json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
    t.eq(r.status, 200, "set-bprops mirror.copies=2 on " + b)
t.eq(s3.get_bucket_versioning(Bucket=B).get("Status"), None, "GetBucketVersioning before: no Status")
t.eq(err_code(lambda: s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled",
                                                                                   "MFADelete": "Enabled"}))[0],
     "NotImplemented", "MfaDelete Enabled: NotImplemented (never silently accepted)")
s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled"})
t.eq(s3.get_bucket_versioning(Bucket=B).get("Status"), "Enabled", "GetBucketVersioning after: Enabled")
time.sleep(0.3)

r = s3.put_object(Bucket=U, Key="u", Body=b"plain")
t.check("VersionId" not in r, "an unversioned bucket's PUT has no version id", r.get("VersionId"))
t.eq(err_code(lambda: s3.get_object(Bucket=U, Key="u", VersionId="0" * 32))[0], "InvalidArgument",
     "unversioned bucket: a made-up versionId is refused, not served")
t.eq(body("u", "null", U), b"plain", "unversioned bucket: versionId=null is the object")

# --- 2. versions -----------------------------------------------------------------------
datas = [os.urandom(n) for n in (1000, 70000, 3)]
vids = [s3.put_object(Bucket=B, Key="k/a", Body=d)["VersionId"] for d in datas]
t.check(len(set(vids)) == 3 and all(len(v) == 32 for v in vids), "three PUTs: three distinct version ids", vids)
t.check(vids == sorted(vids), "version ids sort by write order", vids)
t.eq([body("k/a", v) for v in vids], datas, "GET by each versionId: its bytes")
t.eq(body("k/a"), datas[2], "GET without versionId: the newest")
h = s3.head_object(Bucket=B, Key="k/a", VersionId=vids[1])
t.check(h["ContentLength"] == 70000 and h.get("VersionId") == vids[1], "HEAD by versionId: its size and id")
t.eq(s3.head_object(Bucket=B, Key="k/a").get("VersionId"), vids[2], "HEAD: the current version's id")
t.eq(err_code(lambda: s3.get_object(Bucket=B, Key="k/a", VersionId="nope")), ("InvalidArgument", 400),
     "a malformed versionId: 400 InvalidArgument")
t.eq(err_code(lambda: s3.get_object(Bucket=B, Key="k/a", VersionId="f" * 32)), ("NoSuchVersion", 404),
     "an unknown versionId: 404 NoSuchVersion")
ATTRS = ["ETag", "ObjectSize"]
a = [s3.get_object_attributes(Bucket=B, Key="k/a", VersionId=v, ObjectAttributes=ATTRS) for v in vids[:2]]
t.check([(x.get("ObjectSize"), x.get("VersionId")) for x in a] == [(1000, vids[0]), (70000, vids[1])]
        and a[0].get("ETag") != a[1].get("ETag"),
        "GetObjectAttributes by versionId: that version's size, ETag and id", [(x.get("ObjectSize"), x.get("VersionId")) for x in a])
a = s3.get_object_attributes(Bucket=B, Key="k/a", ObjectAttributes=ATTRS)
t.check((a.get("ObjectSize"), a.get("VersionId")) == (3, vids[2]), "GetObjectAttributes: the current version's, its id",
        (a.get("ObjectSize"), a.get("VersionId")))
t.eq(err_code(lambda: s3.get_object_attributes(Bucket=B, Key="k/a", VersionId="f" * 32, ObjectAttributes=ATTRS)),
     ("NoSuchVersion", 404), "GetObjectAttributes of an unknown versionId: 404 NoSuchVersion")
t.eq(err_code(lambda: s3.get_object_attributes(Bucket=U, Key="u", VersionId="f" * 32, ObjectAttributes=ATTRS)),
     ("InvalidArgument", 400), "GetObjectAttributes of a made-up versionId in an unversioned bucket: 400")

# --- 3. delete markers -------------------------------------------------------------------
r = s3.delete_object(Bucket=B, Key="k/a")
t.check(r.get("DeleteMarker") is True and len(r.get("VersionId", "")) == 32,
        "DeleteObject: a delete marker with its id", r)
dm = r["VersionId"]
try:
    s3.get_object(Bucket=B, Key="k/a")
    hd = {}
except Exception as e:  # noqa: BLE001 - botocore's ClientError
    hd = e.response["ResponseMetadata"]["HTTPHeaders"]
    hd["status"] = e.response["ResponseMetadata"]["HTTPStatusCode"]
t.check(hd.get("status") == 404 and hd.get("x-amz-delete-marker") == "true" and hd.get("x-amz-version-id") == dm,
        "GET after the marker: 404 with x-amz-delete-marker and the marker's id", hd)
t.eq(follow("GET", g.url, "/v1/objects/%s/k/a" % B)[1].status, 404, "native GET after the marker: 404")
t.eq(err_code(lambda: s3.get_object(Bucket=B, Key="k/a", VersionId=dm)), ("MethodNotAllowed", 405),
     "GET of the marker by id: 405 MethodNotAllowed")
t.eq([body("k/a", v) for v in vids], datas, "every version still reads by id")
r = s3.delete_object(Bucket=B, Key="k/a", VersionId=dm)
t.check(r.get("DeleteMarker") is True and r.get("VersionId") == dm, "DELETE of the marker by id", r)
t.eq(body("k/a"), datas[2], "the newest version is current again")
s3.delete_object(Bucket=B, Key="k/a", VersionId=vids[0])
t.eq(err_code(lambda: s3.get_object(Bucket=B, Key="k/a", VersionId=vids[0]))[0], "NoSuchVersion",
     "a version deleted by id is gone for good")
s3.delete_object(Bucket=B, Key="k/a", VersionId=vids[2])
t.eq(body("k/a"), datas[1], "deleting the current version by id: the previous one becomes current")
t.eq(s3.head_object(Bucket=B, Key="k/a").get("VersionId"), vids[1], "and HEAD names it")
vids, datas = vids[1:2], datas[1:2]

# --- 4. ListObjectVersions -----------------------------------------------------------------
want = {"k/a": list(zip(vids, datas))}
for key in ("k/b", "k/c/d", "z"):
    want[key] = []
    for i in range(2):
        d = ("%s-%d" % (key, i)).encode() * 10
        want[key].append((s3.put_object(Bucket=B, Key=key, Body=d)["VersionId"], d))
dmz = s3.delete_object(Bucket=B, Key="z")["VersionId"]
lv = s3.list_object_versions(Bucket=B)
got = [(v["Key"], v["VersionId"], v["IsLatest"], v["Size"]) for v in lv.get("Versions", [])]
exp = []
for key in sorted(want):
    for i, (v, d) in enumerate(reversed(want[key])):
        exp.append((key, v, i == 0 and key != "z", len(d)))
t.eq(got, exp, "ListObjectVersions: every version, newest first per key, IsLatest")
t.eq([(m["Key"], m["VersionId"], m["IsLatest"]) for m in lv.get("DeleteMarkers", [])], [("z", dmz, True)],
     "ListObjectVersions: the delete marker, latest")
own = s3.get_object_acl(Bucket=B, Key="k/b")["Owner"]
t.check(all(v.get("Owner", {}).get("ID") == own["ID"] and v["Owner"].get("DisplayName") == own.get("DisplayName")
            for v in lv.get("Versions", []) + lv.get("DeleteMarkers", [])),
        "ListObjectVersions: each version and marker names its Owner (ID, DisplayName) as GetObjectAcl does",
        (own, [v.get("Owner") for v in lv.get("Versions", [])][:2]))
lv = s3.list_object_versions(Bucket=B, Prefix="k/", Delimiter="/")
t.eq(([v["Key"] for v in lv.get("Versions", [])], [p["Prefix"] for p in lv.get("CommonPrefixes", [])]),
     (["k/a", "k/b", "k/b"], ["k/c/"]), "prefix k/ and delimiter /: versions and a common prefix")
paged = []
pages = 0
for page in s3.get_paginator("list_object_versions").paginate(Bucket=B, PaginationConfig={"PageSize": 2}):
    pages += 1
    paged += [(v["Key"], v["VersionId"]) for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
t.check(pages >= 4 and sorted(paged) == sorted([(e[0], e[1]) for e in exp] + [("z", dmz)]),
        "paging 2 a page (key-marker, version-id-marker): every version once (%d pages)" % pages, paged)
rc, out = run(["/usr/bin/aws", "--endpoint-url", EP, "s3api", "list-object-versions", "--bucket", B], env=AWS_ENV)
t.check(rc == 0 and len(json.loads(out).get("Versions", [])) == len(exp),
        "aws s3api list-object-versions: %d versions" % len(exp), out[-300:])
names = [o["Key"] for o in s3.list_objects_v2(Bucket=B).get("Contents", [])]
t.eq(names, ["k/a", "k/b", "k/c/d"], "ListObjectsV2: current objects only (no kept versions, no marker)")

# --- 6. multipart and copy ---------------------------------------------------------------------
mp = s3.create_multipart_upload(Bucket=B, Key="k/b")
p1 = os.urandom(5 << 20)
e1 = s3.upload_part(Bucket=B, Key="k/b", UploadId=mp["UploadId"], PartNumber=1, Body=p1)["ETag"]
r = s3.complete_multipart_upload(Bucket=B, Key="k/b", UploadId=mp["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}]})
t.check(len(r.get("VersionId") or "") == 32 and r["VersionId"] == s3.head_object(Bucket=B, Key="k/b")["VersionId"]
        and r["VersionId"] not in [v for v, _ in want["k/b"]], "multipart Complete: a new version, its id answered",
        r.get("VersionId"))
t.eq(body("k/b"), p1, "multipart: the current version")
t.eq(body("k/b", want["k/b"][1][0]), want["k/b"][1][1], "multipart: the previous version kept")
want["k/b"].append((s3.head_object(Bucket=B, Key="k/b")["VersionId"], p1))
s3.copy_object(Bucket=B, Key="k/cp", CopySource={"Bucket": B, "Key": "k/b"})
s3.copy_object(Bucket=B, Key="k/cp", CopySource={"Bucket": B, "Key": "k/a"})
lv = [v for v in s3.list_object_versions(Bucket=B, Prefix="k/cp").get("Versions", [])]
t.check(len(lv) == 2 and body("k/cp", lv[1]["VersionId"]) == p1 and body("k/cp") == datas[0],
        "CopyObject twice: two versions of the copy", lv)
for i, (v, d) in enumerate(want["k/b"][:2]):  # CopyObject of one version, from k/b's holder or not
    r = s3.copy_object(Bucket=B, Key="k/cv%d" % i, CopySource={"Bucket": B, "Key": "k/b", "VersionId": v})
    t.check(r.get("CopySourceVersionId") == v and len(r.get("VersionId") or "") == 32 and body("k/cv%d" % i) == d,
            "CopyObject with a source versionId: that version's bytes, both version ids", r.get("CopySourceVersionId"))
    want["k/cv%d" % i] = [(r["VersionId"], d)]
t.eq(err_code(lambda: s3.copy_object(Bucket=B, Key="k/x", CopySource={"Bucket": B, "Key": "k/b",
                                                                     "VersionId": "d" * 32}))[0],
     "NoSuchVersion", "CopyObject of an unknown source version: NoSuchVersion")

# --- 6b. overlapping writes and deletes of one key ---------------------------------------------


def race(key, puts, dels):
    """puts PUTs and dels DELETEs of key at once, each from a client of
    its own: the versions and markers answered."""
    acked, markers, errs = [], [], []
    go = threading.Barrier(puts + dels)

    def put(i):
        c = boto3_client(EP)
        d = ("%s %d " % (key, i)).encode() + os.urandom(2000 + 97 * i)
        go.wait()
        try:
            acked.append((c.put_object(Bucket=B, Key=key, Body=d)["VersionId"], d))
        except Exception as e:  # noqa: BLE001 - any failure is reported
            errs.append(str(e)[:120])

    def dele(i):
        c = boto3_client(EP)
        go.wait()
        try:
            markers.append(c.delete_object(Bucket=B, Key=key)["VersionId"])
        except Exception as e:  # noqa: BLE001 - any failure is reported
            errs.append(str(e)[:120])

    ths = [threading.Thread(target=put, args=(i,)) for i in range(puts)]
    ths += [threading.Thread(target=dele, args=(i,)) for i in range(dels)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(60)
    t.check(not errs, "%s: %d PUTs and %d DELETEs at once all succeed" % (key, puts, dels), errs[:3])
    return acked, markers


for key, rounds, puts, dels in (("k/race", 3, 6, 0), ("k/race-dm", 2, 4, 2)):
    acked, markers = [], []
    for _ in range(rounds):
        a, m = race(key, puts, dels)
        acked += a
        markers += m
    lv = s3.list_object_versions(Bucket=B, Prefix=key)
    have = sorted(v["VersionId"] for v in lv.get("Versions", []) if v["Key"] == key)
    dms = sorted(v["VersionId"] for v in lv.get("DeleteMarkers", []) if v["Key"] == key)
    t.eq(have, sorted(v for v, _ in acked), "%s: every version answered is listed, no other (%d)" % (key, len(acked)))
    t.eq(dms, sorted(markers), "%s: every delete marker answered is listed (%d)" % (key, len(markers)))
    bad = [v for v, d in acked if body(key, v) != d]
    t.check(not bad, "%s: every version reads by id, byte for byte" % key, bad[:3])
    want[key] = acked

# a PUT whose body is still coming when a DELETE of its key completes
# (no versioning): acknowledged after the delete, it stays, on both copies
# and through the kills and the rebalance below
P = "plainr"
s3.create_bucket(Bucket=P)
r = request("PATCH", g.url, "/v1/buckets/" + P,
            json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
t.eq(r.status, 200, "set-bprops mirror.copies=2 on " + P)
late = os.urandom(2 << 20)
for k in ("late/a", "late/b"):
    r = request("PUT", g.url, "/v1/objects/%s/%s" % (P, k), b"")
    loc = urllib.parse.urlsplit(r.h("location") or "")
    c = http.client.HTTPConnection(loc.hostname, loc.port, timeout=30)
    c.putrequest("PUT", loc.path + ("?" + loc.query if loc.query else ""))
    c.putheader("Content-Length", str(len(late)))
    c.endheaders()
    c.send(late[:1 << 20])
    time.sleep(0.3)
    d = s3.delete_object(Bucket=P, Key=k)["ResponseMetadata"]["HTTPStatusCode"]
    c.send(late[1 << 20:])
    st = c.getresponse().status
    c.close()
    t.check(r.status == 307 and d == 204 and st == 200, "%s: a PUT acknowledged after a DELETE that came during "
            "its body" % k, (r.status, d, st))
    t.check(copies_of(P, k) == 2 and reads(P, k, late), "%s: the PUT's object is there, 2 copies" % k)


# --- 5. suspended -------------------------------------------------------------------------
s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Suspended"})
t.eq(s3.get_bucket_versioning(Bucket=B).get("Status"), "Suspended", "GetBucketVersioning: Suspended")
time.sleep(0.3)
r = s3.put_object(Bucket=B, Key="k/a", Body=b"null one")
t.check("VersionId" not in r and s3.head_object(Bucket=B, Key="k/a").get("VersionId") == "null",
        "suspended: a PUT writes the null version (answered without a version id, as S3; HEAD says null)", r)
s3.put_object(Bucket=B, Key="k/a", Body=b"null two")
t.eq((body("k/a"), body("k/a", "null"), body("k/a", vids[0])), (b"null two", b"null two", datas[0]),
     "suspended: the null version replaced, the older version kept")
t.eq(len([v for v in s3.list_object_versions(Bucket=B, Prefix="k/a").get("Versions", [])]), 2,
     "suspended: k/a has the kept version and one null version")
r = s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": "k/c/d", "VersionId": want["k/c/d"][0][0]},
                                                    {"Key": "k/a", "VersionId": "bad"}]})
t.check([d.get("VersionId") for d in r.get("Deleted", [])] == [want["k/c/d"][0][0]] and
        [e["Code"] for e in r.get("Errors", [])] == ["InvalidArgument"],
        "DeleteObjects with VersionId: one version deleted, a bad id refused", r)
t.eq(err_code(lambda: s3.get_object(Bucket=B, Key="k/c/d", VersionId=want["k/c/d"][0][0]))[0], "NoSuchVersion",
     "DeleteObjects removed that version")
want["k/c/d"] = want["k/c/d"][1:]
s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled"})
time.sleep(0.3)

# DeleteObjects names the delete markers it writes, and the ones a VersionId removes
r = s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": "k/b"}, {"Key": "k/dm-none"}]})
got = {d["Key"]: (d.get("DeleteMarker"), d.get("DeleteMarkerVersionId")) for d in r.get("Deleted", [])}
dms = {m["Key"]: m["VersionId"] for m in s3.list_object_versions(Bucket=B, Prefix="k/").get("DeleteMarkers", [])
       if m.get("IsLatest")}
t.check(set(got) == {"k/b", "k/dm-none"} and all(got[k][0] is True and got[k][1] == dms.get(k) for k in got),
        "DeleteObjects on an enabled bucket: DeleteMarker and the marker's DeleteMarkerVersionId per key",
        (got, dms))
r = s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": k, "VersionId": dms.get(k, "")} for k in got]})
got2 = {d["Key"]: (d.get("VersionId"), d.get("DeleteMarker"), d.get("DeleteMarkerVersionId"))
        for d in r.get("Deleted", [])}
t.check(set(got2) == set(got) and all(got2[k] == (dms.get(k), True, dms.get(k)) for k in got2),
        "DeleteObjects of a marker by VersionId: DeleteMarker, DeleteMarkerVersionId = that id", (got2, r))
t.eq(body("k/b"), want["k/b"][-1][1], "the marker removed, k/b reads its newest version again")
s3.put_object(Bucket=B, Key="k/scratch", Body=b"scratch")
sv = s3.list_object_versions(Bucket=B, Prefix="k/scratch")["Versions"][0]["VersionId"]
r = s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": "k/scratch", "VersionId": sv}]})
d = (r.get("Deleted") or [{}])[0]
t.check(d.get("VersionId") == sv and "DeleteMarker" not in d and "DeleteMarkerVersionId" not in d,
        "DeleteObjects of an object version by VersionId: no DeleteMarker", r)

# --- 7. native API -----------------------------------------------------------------------
r = follow("GET", g.url, "/v1/objects/%s/k/a?version=%s" % (B, vids[0]))[1]
t.check(r.status == 200 and r.body == datas[0], "native GET ?version=ID: that version's bytes", r.status)
r = follow("GET", g.url, "/v1/objects/%s/k/a?version=%s" % (B, "e" * 32))[1]
t.eq(r.status, 404, "native GET of an unknown version: 404")
plain = [e["name"] for e in get(g.url, "/v1/buckets/%s" % B).json().get("entries", [])]
t.check(not [n for n in plain if "~ais.v~" in n], "the native listing has no kept versions", plain)
r = get(g.url, "/v1/buckets/%s?versions=true&prefix=k/a" % B)
n = len([e for e in r.json().get("entries", []) if "~ais.v~" in e["name"]])
t.check(r.status == 200 and n >= 1, "native listing ?versions=true names the kept versions (%d)" % n)

# an erasure-coded bucket (1+1, with the whole copy): versions are objects of it too
clulib.t = t
clulib.create_ec_bucket(g, targets, "ecv", 1, 1, 1024, whole_copy=True)
s3.put_bucket_versioning(Bucket="ecv", VersioningConfiguration={"Status": "Enabled"})
time.sleep(0.3)
ecd = [os.urandom(20000 + i) for i in range(3)]
ecv = [s3.put_object(Bucket="ecv", Key="e", Body=d)["VersionId"] for d in ecd]
t.eq([body("e", v, "ecv") for v in ecv], ecd, "EC bucket: every version reads by id, byte for byte")
ecm = s3.delete_object(Bucket="ecv", Key="e")["VersionId"]
t.eq(err_code(lambda: s3.get_object(Bucket="ecv", Key="e"))[1], 404, "EC bucket: a delete marker")
s3.delete_object(Bucket="ecv", Key="e", VersionId=ecm)
t.eq(body("e", None, "ecv"), ecd[2], "EC bucket: the marker removed, the newest version current")

# aisctl: ls --versions, get --version, bucket props set versioning.history
CTL = os.environ["AISCTL"]
rc, out = run([CTL, "-e", g.url, "ls", "--versions", "-H", B + "/k/a"])
t.check(rc == 0 and ("k/a~ais.v~" + vids[0]) in out and len(out.split()) >= 2,
        "aisctl ls --versions names the kept version", out[-300:])
rc, out = run([CTL, "-e", g.url, "ls", "-H", B + "/k/a"])
t.check(rc == 0 and "~ais.v~" not in out, "aisctl ls: current objects only", out[-300:])
got = os.path.join(os.environ["TMPDIR"], "v0")
rc, out = run([CTL, "-e", g.url, "get", "--version", vids[0], B + "/k/a", got])
t.check(rc == 0 and open(got, "rb").read() == datas[0], "aisctl get --version ID: that version's bytes", out[-300:])
rc, out = run([CTL, "-e", g.url, "bucket", "props", "set", U, "versioning.history=off"])
t.check(rc != 0, "aisctl bucket props set versioning.history=off: refused", out[-200:])
rc, out = run([CTL, "-e", g.url, "bucket", "props", "set", U, "versioning.history=enabled"])
t.check(rc == 0 and s3.get_bucket_versioning(Bucket=U).get("Status") == "Enabled",
        "aisctl bucket props set versioning.history=enabled: S3 sees Enabled", out[-200:])
r = request("PATCH", g.url, "/v1/buckets/" + U,
            json.dumps({"action": "set-bprops", "value": {"versioning": {"history": "off"}}}), JSON)
t.eq(r.status, 400, "set-bprops versioning.history=off after enabled: 400")

# --- 8. copies, kill -9, rebalance -----------------------------------------------------------
every = [(k, v, d) for k in want for v, d in want[k]]


def all_versions(tag):
    bad = []
    for k, v, d in every:
        try:
            if body(k, v) != d:
                bad.append((k, v))
        except Exception as e:  # noqa: BLE001 - any failure is a failed read
            bad.append((k, v, str(e)[:80]))
    t.check(not bad, "%s: all %d versions read by id, byte for byte" % (tag, len(every)), bad[:5])
    t.eq(err_code(lambda: s3.get_object(Bucket=B, Key="z", VersionId=dmz))[1], 405, tag + ": z's marker still there")
    t.eq([body("e", v, "ecv") for v in ecv], ecd, tag + ": the EC bucket's versions read")
    t.check(all(reads(P, k, late) for k in ("late/a", "late/b")), tag + ": the PUTs acknowledged after a DELETE read")


def copies(name):
    return copies_of(B, name)


ls = get(g.url, "/v1/buckets/%s?versions=true" % B).json().get("entries", [])
bad = [e["name"] for e in ls if copies(e["name"]) != 2]
t.check(ls and not bad, "every object, kept version and marker (%d) has 2 copies" % len(ls), bad[:5])


def ids():
    return smap_ids(g)


for victim in list(targets):
    victim.kill9()
    t.check(poll(lambda: victim.id not in (ids() or set()), 20), "%s killed: the map drops it" % victim.name)
    all_versions("%s down" % victim.name)
    t.check(victim.start(join=g.url), "%s restarts" % victim.name)
    t.check(poll(lambda: victim.id in (ids() or set()), 20), "%s rejoins" % victim.name)

t4 = Node("t4", "target")
t.check(t4.start(join=g.url), "t4 joins")
cluster.nodes.append(t4)
targets.append(t4)


def rebalanced():
    r = get(g.url, "/v1/cluster?what=rebalance", timeout=10)
    d = r.json() if r.status == 200 else None
    return isinstance(d, dict) and len(d.get("targets", {})) == 4 and all(
        v.get("state") in ("done", "idle") for v in d["targets"].values())


t.check(poll(lambda: len(ids() or ()) == 5, 20), "the map lists 5 nodes")
t.check(poll(rebalanced, 60), "the rebalance finished")
time.sleep(1)
all_versions("after t4 joined and the rebalance")
ls = get(g.url, "/v1/buckets/%s?versions=true" % B).json().get("entries", [])
bad = [e["name"] for e in ls if copies(e["name"]) != 2]
t.check(not bad, "after the rebalance every version still has 2 copies", bad[:5])

clulib.check_logs(cluster.nodes)
t.finish()
