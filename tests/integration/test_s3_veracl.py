"""test_s3_veracl.py - the ACL and the tags of one version: GetObjectAcl,
PutObjectAcl, GetObjectTagging, PutObjectTagging and DeleteObjectTagging
with ?versionId, through boto3 and unsigned requests, in a copies=2 bucket
of 1 gateway + 3 targets on loopback ports, stopped by PID.

Checks:
 1. Three versions of a key: tags and a public-read ACL set on the oldest
    by its id read back by its id (each answer with its x-amz-version-id)
    and leave the current version's unchanged; an unsigned GET of the
    old version by id is served (its ACL), of the current one refused
    (403); GET of the old version answers its x-amz-tagging-count. The
    current version's tags set without versionId, then by its own id,
    leave the old version's as they were; DeleteObjectTagging by id
    empties only that version's tags; the versions' bytes are unchanged.
 2. Refused, changing nothing: a malformed id (400 InvalidArgument), an
    unknown one (404 NoSuchVersion), a delete marker (405
    MethodNotAllowed with x-amz-delete-marker), an id on a bucket never
    versioned (400), DELETE ?acl by id (501, as without one); in a
    suspended bucket versionId=null names the null version, and on a key
    without one it is 404 NoSuchVersion.
 3. Bucket policy: a Deny of s3:PutObjectVersionTagging,
    s3:DeleteObjectVersionTagging and s3:GetObjectVersionAcl refuses those
    requests with a versionId only; a Deny of s3:GetObjectRetention holds
    with a versionId too (S3 has no version form of it).
 4. Object lock: tags and an ACL set on a version under a COMPLIANCE
    retention keep its retention and legal hold; its delete by id is still
    refused (403).
 5. Every copy: both holders of the old version carry its tags and ACL
    (their own records, Ais-Custom-Md); with each holder killed (-9) in
    turn, the gateway still answers them by id.
 6. No error-level line in any node's log.
"""
# timeout: 240
import datetime
import json
import time
import urllib.parse

from botocore.exceptions import ClientError

import clulib
from clulib import get, poll, request, smap_ids
from itlib import T, q
from s3lib import boto3_client, cluster, http_raw, signed

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}
ALL = "http://acs.amazonaws.com/groups/global/AllUsers"

t = T()
EP = cluster(t, "s3veracl", targets=3, args=["--set", "cluster.grace=1s"])
g = cluster.nodes[0]
targets = list(cluster.nodes[1:])
s3 = boto3_client(EP)
B, U, L = "veracl", "veraclplain", "veracllock"


def copies2(bck):
    r = request("PATCH", g.url, "/v1/buckets/" + bck,
                json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
    t.eq(r.status, 200, "set-bprops mirror.copies=2 on " + bck)


def err(fn, **kw):
    """(status, code, lower-case headers) of a refused call; (200, None, {}) when it succeeds."""
    try:
        fn(**kw)
        return 200, None, {}
    except ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code"),
                e.response["ResponseMetadata"].get("HTTPHeaders", {}))


def code(fn, **kw):
    return err(fn, **kw)[:2]


def tags(key, vid=None, bck=B):
    kw = {"VersionId": vid} if vid else {}
    r = s3.get_object_tagging(Bucket=bck, Key=key, **kw)
    return {x["Key"]: x["Value"] for x in r["TagSet"]}, r.get("VersionId")


def grants(key, vid=None, bck=B):
    kw = {"VersionId": vid} if vid else {}
    r = s3.get_object_acl(Bucket=bck, Key=key, **kw)
    return sorted((x["Grantee"].get("URI") or x["Grantee"].get("ID"), x["Permission"]) for x in r["Grants"])


def tagset(d):
    return {"TagSet": [{"Key": k, "Value": v} for k, v in d.items()]}


def unsigned_get(key, vid):
    return http_raw(EP, "GET", "/%s/%s?versionId=%s" % (B, q(key), vid))[0]


# --- 1. the ACL and the tags of one version ----------------------------------------------------------------------
s3.create_bucket(Bucket=B)
s3.create_bucket(Bucket=U)
copies2(B)
s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled"})
time.sleep(0.3)
datas = [b"one" * 100, b"two" * 2000, b"three" * 7]
vids = [s3.put_object(Bucket=B, Key="k", Body=d)["VersionId"] for d in datas]
old, cur = vids[0], vids[2]
ME = grants("k")

r = s3.put_object_tagging(Bucket=B, Key="k", VersionId=old, Tagging=tagset({"era": "old", "n": "1"}))
t.eq(r.get("VersionId"), old, "PutObjectTagging by id: x-amz-version-id names that version")
t.eq(tags("k", old), ({"era": "old", "n": "1"}, old), "GetObjectTagging by id: that version's tags and id")
t.eq(tags("k"), ({}, cur), "the current version has no tags (unchanged)")
t.eq(tags("k", vids[1]), ({}, vids[1]), "the middle version has no tags (unchanged)")
s3.put_object_acl(Bucket=B, Key="k", VersionId=old, ACL="public-read")
t.eq(grants("k", old), sorted(ME + [(ALL, "READ")]), "PutObjectAcl public-read by id: GetObjectAcl by id shows it")
t.eq(grants("k"), ME, "the current version's ACL is unchanged (private)")
r = s3.get_object_acl(Bucket=B, Key="k", VersionId=old)
t.eq(r["ResponseMetadata"]["HTTPHeaders"].get("x-amz-version-id"), old, "GetObjectAcl by id: its x-amz-version-id")
t.eq(unsigned_get("k", old), 200, "an unsigned GET of the public-read version by id: 200 (its own ACL)")
t.eq(unsigned_get("k", cur), 403, "an unsigned GET of the private current version by id: 403")
r = s3.get_object(Bucket=B, Key="k", VersionId=old)
t.check(r["Body"].read() == datas[0] and r.get("TagCount") == 2,
        "GET of the old version: its bytes and x-amz-tagging-count 2", r.get("TagCount"))

s3.put_object_tagging(Bucket=B, Key="k", Tagging=tagset({"era": "new"}))
t.eq(tags("k"), ({"era": "new"}, cur), "PutObjectTagging without versionId: the current version's")
s3.put_object_tagging(Bucket=B, Key="k", VersionId=cur, Tagging=tagset({"era": "now"}))
t.eq(tags("k"), ({"era": "now"}, cur), "PutObjectTagging by the current version's id: the current version's")
t.eq(tags("k", old)[0], {"era": "old", "n": "1"}, "the old version's tags are its own still")
s3.put_object_acl(Bucket=B, Key="k", VersionId=cur, ACL="public-read")
t.eq((grants("k"), grants("k", vids[1])), (sorted(ME + [(ALL, "READ")]), ME),
     "PutObjectAcl by the current version's id: the current one's, not the middle one's")
s3.put_object_acl(Bucket=B, Key="k", ACL="private")
t.eq((grants("k"), grants("k", old)), (ME, sorted(ME + [(ALL, "READ")])),
     "PutObjectAcl without versionId: the current one's, the old one keeps its own")
r = s3.delete_object_tagging(Bucket=B, Key="k", VersionId=vids[1])
t.eq((r["ResponseMetadata"]["HTTPStatusCode"], r.get("VersionId")), (204, vids[1]),
     "DeleteObjectTagging by id: 204 with its x-amz-version-id")
s3.put_object_tagging(Bucket=B, Key="k", VersionId=vids[1], Tagging=tagset({"mid": "x"}))
s3.delete_object_tagging(Bucket=B, Key="k", VersionId=vids[1])
t.eq((tags("k", vids[1])[0], tags("k", old)[0], tags("k")[0]), ({}, {"era": "old", "n": "1"}, {"era": "now"}),
     "DeleteObjectTagging by id: that version's tags only")
t.eq([s3.get_object(Bucket=B, Key="k", VersionId=v)["Body"].read() for v in vids], datas,
     "every version's bytes unchanged")
t.eq(s3.head_object(Bucket=B, Key="k").get("VersionId"), cur, "the current version is still the newest")

# --- 2. refused ----------------------------------------------------------------------------------------------------
for what, fn, kw in [("GetObjectTagging", s3.get_object_tagging, {}),
                     ("PutObjectTagging", s3.put_object_tagging, {"Tagging": tagset({"x": "y"})}),
                     ("DeleteObjectTagging", s3.delete_object_tagging, {}),
                     ("GetObjectAcl", s3.get_object_acl, {}),
                     ("PutObjectAcl", s3.put_object_acl, {"ACL": "public-read"})]:
    t.eq(code(fn, Bucket=B, Key="k", VersionId="nope", **kw), (400, "InvalidArgument"),
         what + " with a malformed versionId: 400 InvalidArgument")
    t.eq(code(fn, Bucket=B, Key="k", VersionId="f" * 32, **kw), (404, "NoSuchVersion"),
         what + " with an unknown versionId: 404 NoSuchVersion")
s3.put_object(Bucket=U, Key="u", Body=b"plain")
t.eq(code(s3.get_object_tagging, Bucket=U, Key="u", VersionId="0" * 32), (400, "InvalidArgument"),
     "a made-up versionId on a bucket never versioned: 400 InvalidArgument")
t.eq(tags("u", "null", U), ({}, None), "versionId=null on a bucket never versioned: the object")
s3.put_object(Bucket=B, Key="d", Body=b"gone")
dm = s3.delete_object(Bucket=B, Key="d")["VersionId"]
st, c, h = err(s3.get_object_tagging, Bucket=B, Key="d", VersionId=dm)
t.check((st, c, h.get("x-amz-delete-marker"), h.get("x-amz-version-id")) == (405, "MethodNotAllowed", "true", dm),
        "GetObjectTagging of a delete marker: 405 MethodNotAllowed, x-amz-delete-marker", (st, c, h))
t.eq(code(s3.put_object_acl, Bucket=B, Key="d", VersionId=dm, ACL="public-read"), (405, "MethodNotAllowed"),
     "PutObjectAcl of a delete marker: 405")
t.eq(code(s3.get_object_tagging, Bucket=B, Key="d"), (404, "NoSuchKey"),
     "GetObjectTagging of a key whose current version is a marker: 404 NoSuchKey")
st, _, body = signed(EP, "DELETE", "/%s/k?acl&versionId=%s" % (B, old))
t.check(st == 501 and b"NotImplemented" in body, "DELETE ?acl by id: 501 NotImplemented, as without one", (st, body[:200]))
t.eq(tags("k")[0], {"era": "now"}, "the refused requests changed nothing")

s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Suspended"})
time.sleep(0.3)
s3.put_object(Bucket=B, Key="n", Body=b"null version")
s3.put_object_tagging(Bucket=B, Key="n", VersionId="null", Tagging=tagset({"v": "null"}))
t.eq(tags("n", "null"), ({"v": "null"}, "null"), "suspended: tags of versionId=null, the null version")
t.eq(code(s3.get_object_tagging, Bucket=B, Key="k", VersionId="null"), (404, "NoSuchVersion"),
     "versionId=null on a key without a null version: 404 NoSuchVersion")
s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled"})
time.sleep(0.3)
s3.put_object(Bucket=B, Key="n", Body=b"after")
t.eq(tags("n", "null"), ({"v": "null"}, "null"), "the kept null version keeps its tags, read by versionId=null")
s3.put_object_acl(Bucket=B, Key="n", VersionId="null", ACL="public-read")
t.eq((grants("n", "null"), grants("n")), (sorted(ME + [(ALL, "READ")]), ME),
     "PutObjectAcl of the kept null version: its own, not the current one's")

# --- 3. bucket policy: the version forms of the actions ------------------------------------------------------------
ARN = "arn:aws:s3:::%s/" % B
s3.put_object(Bucket=B, Key="pol/a", Body=b"1")
pv = s3.put_object(Bucket=B, Key="pol/a", Body=b"2")["VersionId"]
s3.put_bucket_policy(Bucket=B, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Deny", "Principal": "*", "Resource": ARN + "pol/*",
     "Action": ["s3:PutObjectVersionTagging", "s3:DeleteObjectVersionTagging", "s3:GetObjectVersionAcl"]}]}))
time.sleep(0.3)
t.eq(code(s3.put_object_tagging, Bucket=B, Key="pol/a", VersionId=pv, Tagging=tagset({"a": "b"})),
     (403, "AccessDenied"), "Deny s3:PutObjectVersionTagging: PutObjectTagging by id refused")
t.eq(code(s3.delete_object_tagging, Bucket=B, Key="pol/a", VersionId=pv), (403, "AccessDenied"),
     "Deny s3:DeleteObjectVersionTagging: DeleteObjectTagging by id refused")
t.eq(code(s3.get_object_acl, Bucket=B, Key="pol/a", VersionId=pv), (403, "AccessDenied"),
     "Deny s3:GetObjectVersionAcl: GetObjectAcl by id refused")
t.eq([code(s3.put_object_tagging, Bucket=B, Key="pol/a", Tagging=tagset({"a": "b"})),
      code(s3.get_object_acl, Bucket=B, Key="pol/a"), code(s3.get_object_tagging, Bucket=B, Key="pol/a", VersionId=pv)],
     [(200, None)] * 3, "without versionId (s3:PutObjectTagging, s3:GetObjectAcl) and GetObjectVersionTagging: allowed")
s3.delete_bucket_policy(Bucket=B)
time.sleep(0.3)

# --- 4. object lock -------------------------------------------------------------------------------------------------
s3.create_bucket(Bucket=L, ObjectLockEnabledForBucket=True)
copies2(L)
time.sleep(0.3)
until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
lv = s3.put_object(Bucket=L, Key="lk", Body=b"locked", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until,
                   ObjectLockLegalHoldStatus="ON")["VersionId"]
s3.put_object(Bucket=L, Key="lk", Body=b"newer")
s3.put_object_tagging(Bucket=L, Key="lk", VersionId=lv, Tagging=tagset({"locked": "yes"}))
s3.put_object_acl(Bucket=L, Key="lk", VersionId=lv, ACL="public-read")
t.eq((tags("lk", lv, L)[0], grants("lk", lv, L)), ({"locked": "yes"}, sorted(ME + [(ALL, "READ")])),
     "a version under COMPLIANCE retention and a legal hold takes tags and an ACL")
ret = s3.get_object_retention(Bucket=L, Key="lk", VersionId=lv)["Retention"]
t.check(ret["Mode"] == "COMPLIANCE" and abs((ret["RetainUntilDate"] - until).total_seconds()) < 2 and
        s3.get_object_legal_hold(Bucket=L, Key="lk", VersionId=lv)["LegalHold"]["Status"] == "ON",
        "its retention and legal hold are kept", ret)
s3.put_object_legal_hold(Bucket=L, Key="lk", VersionId=lv, LegalHold={"Status": "OFF"})
t.eq(code(s3.delete_object, Bucket=L, Key="lk", VersionId=lv), (403, "AccessDenied"),
     "its delete by id: still refused (COMPLIANCE)")
s3.put_bucket_policy(Bucket=L, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Deny", "Principal": "*", "Resource": "arn:aws:s3:::%s/lk" % L, "Action": "s3:GetObjectRetention"}]}))
time.sleep(0.3)
t.eq(code(s3.get_object_retention, Bucket=L, Key="lk", VersionId=lv), (403, "AccessDenied"),
     "Deny s3:GetObjectRetention: GetObjectRetention by id refused too (no version form)")
s3.delete_bucket_policy(Bucket=L)

# --- 5. every copy ---------------------------------------------------------------------------------------------------
kept = "k~ais.v~" + old


def md_item(custom, key):
    """One item of an object's custom metadata (Ais-Custom-Md), decoded."""
    for it in custom.split(","):
        k, _, v = it.partition("=")
        if k == key:
            return urllib.parse.unquote(v)
    return None


def holders():
    out = []
    for tg in targets:
        r = get(tg.url, "/v1/objects/%s/%s" % (B, q(kept)), headers=INTRA)
        if r.status == 200:
            out.append((tg, r.h("ais-custom-md") or ""))
    return out


hs = holders()
t.check(len(hs) == 2 and all(md_item(c, "s3.t.era") == "old" and md_item(c, "s3.t.n") == "1" and
                             "aR" in (md_item(c, "s3.acl") or "").split(":") for _, c in hs),
        "both holders of the old version carry its tags and ACL", [(tg.name, c[:300]) for tg, c in hs])


def ids():
    return smap_ids(g)


for victim, _ in hs:
    victim.kill9()
    t.check(poll(lambda: victim.id not in (ids() or set()), 20), "%s killed: the map drops it" % victim.name)
    t.eq((tags("k", old)[0], grants("k", old)), ({"era": "old", "n": "1"}, sorted(ME + [(ALL, "READ")])),
         "%s down: the old version's tags and ACL read by id" % victim.name)
    t.check(victim.start(join=g.url), "%s restarts" % victim.name)
    t.check(poll(lambda: victim.id in (ids() or set()), 20), "%s rejoins" % victim.name)

clulib.check_logs(cluster.nodes)
t.finish()
