"""test_s3_objlock.py - S3 object lock end to end, with boto3 and the AWS
CLI, on a 1-gateway 3-target cluster with a copies=2 bucket.

Checks:
 1. CreateBucket with object lock turns versioning on (Enabled, and it
    cannot be suspended: 409 InvalidBucketState); Put/GetObjectLock-
    Configuration round-trips a default retention, which new versions get
    (HEAD answers the x-amz-object-lock-* headers).
 2. PUT with a COMPLIANCE retention (aws s3api put-object), a GOVERNANCE
    one (boto3) and a legal hold (aws s3api put-object-legal-hold): Get-
    ObjectRetention / GetObjectLegalHold answer them; the version has its 2
    copies.
 3. The delete of a locked version is refused on every node (S3 DELETE
    ?versionId sent straight to the gateway and each of the three targets,
    which forward it to the owner; the native DELETE ?version= and the
    native DELETE of the kept version's own name on each target, the
    owner's redirect followed): 403 AccessDenied, and both holders keep their copy, byte for
    byte. COMPLIANCE refuses the bypass header too; DeleteObjects answers
    an AccessDenied Error for the locked key and deletes the others.
 4. A delete without versionId makes a delete marker (allowed); the
    locked version, now kept under its version name, is still refused on
    every target and reads back; a PUT of that name (S3 and native) is
    refused too.
 5. PutObjectRetention: a COMPLIANCE retention cannot be shortened nor a
    GOVERNANCE one changed to COMPLIANCE without the bypass (403); with
    `aws s3api delete-object --bypass-governance-retention` the GOVERNANCE
    version goes.
 6. kill -9 and restart of every target in turn: the retention, the legal
    hold and the refusals are all still there.
 7. A retention that ran out (3 s) and a legal hold set OFF no longer hold
    the version: its delete succeeds.
 8. DeleteBucket (409 BucketNotEmpty) and the native destroy-bck (409)
    refuse a bucket with object lock while it holds versions.
 9. No error-level line in any node's log.
"""
# timeout: 240
import datetime
import http.client
import json
import os
import time
import urllib.parse

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from itlib import T, q

from clulib import follow, get, poll, request, smap_ids
from s3lib import AK, AWS_ENV, REGION, SK, boto3_client, cluster, error_lines, run

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}
UTC = datetime.timezone.utc

t = T()
EP = cluster(t, "s3lock", targets=3)
g = cluster.nodes[0]
targets = list(cluster.nodes[1:])
s3 = boto3_client(EP)
B = "locked"
DATA = {"k": os.urandom(3000), "g": os.urandom(5000), "h": b"held" * 100, "d": b"default", "x": b"free",
        "short": b"short-lived"}


def code_of(fn, **kw):
    try:
        fn(**kw)
        return (200, "")
    except ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code"))


def signed(base, method, path, headers=None):
    """A SigV4-signed request without a body to base; (status, body)."""
    url = base + path
    r = AWSRequest(method=method, url=url, headers=dict(headers or {}))
    S3SigV4Auth(Credentials(AK, SK), "s3", REGION).add_auth(r)
    p = r.prepare()
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        c.request(method, u.path + ("?" + u.query if u.query else ""), headers=dict(p.headers))
        resp = c.getresponse()
        return resp.status, resp.read()
    finally:
        c.close()


def aws(*args):
    return run(["/usr/bin/aws", "--endpoint-url", EP, "s3api"] + list(args), env=AWS_ENV)


def jout(out):
    """The JSON document in the CLI's output ({} when none)."""
    try:
        return json.loads(out[out.index("{"):])
    except ValueError:
        return {}


def holders(name):
    return [tg.name for tg in targets if get(tg.url, "/v1/objects/%s/%s" % (B, q(name)), headers=INTRA).status == 200]


def body(key, vid):
    return s3.get_object(Bucket=B, Key=key, VersionId=vid)["Body"].read()


def iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- 1. the bucket ------------------------------------------------------------------------------------------------
s3.create_bucket(Bucket=B, ObjectLockEnabledForBucket=True)
r = request("PATCH", g.url, "/v1/buckets/" + B,
            json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
t.eq(r.status, 200, "set-bprops mirror.copies=2")
time.sleep(0.5)  # (the BMD reaches every target before the primary's answer; this covers slow ones)
t.eq(s3.get_bucket_versioning(Bucket=B).get("Status"), "Enabled", "object lock turned versioning on")
t.eq(code_of(s3.put_bucket_versioning, Bucket=B, VersioningConfiguration={"Status": "Suspended"}),
     (409, "InvalidBucketState"), "versioning cannot be suspended: 409 InvalidBucketState")
t.eq(s3.get_object_lock_configuration(Bucket=B)["ObjectLockConfiguration"], {"ObjectLockEnabled": "Enabled"},
     "GetObjectLockConfiguration: enabled, no default")
conf = {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}
s3.put_object_lock_configuration(Bucket=B, ObjectLockConfiguration=conf)
t.eq(s3.get_object_lock_configuration(Bucket=B)["ObjectLockConfiguration"], conf,
     "GetObjectLockConfiguration: the default retention")
v_d = s3.put_object(Bucket=B, Key="d", Body=DATA["d"])["VersionId"]
h = s3.head_object(Bucket=B, Key="d")
left = (h.get("ObjectLockRetainUntilDate") - datetime.datetime.now(UTC)).total_seconds() if "ObjectLockRetainUntilDate" in h else 0
t.check(h.get("ObjectLockMode") == "GOVERNANCE" and 86000 < left <= 86400,
        "a new version gets the default retention (GOVERNANCE, 1 day)", (h.get("ObjectLockMode"), left))
s3.put_object_lock_configuration(Bucket=B, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"})
t.eq(code_of(s3.put_object_lock_configuration, Bucket=B, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled",
     "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 0}}}), (400, "InvalidRetentionPeriod"),
     "a default retention of 0 days: 400 InvalidRetentionPeriod")
s3.create_bucket(Bucket="plain")
t.eq(code_of(s3.put_object, Bucket="plain", Key="x", Body=b"x", ObjectLockLegalHoldStatus="ON"),
     (400, "InvalidRequest"), "a legal hold on a bucket without object lock: 400 InvalidRequest")

# --- 2. locked versions -------------------------------------------------------------------------------------------
until = (datetime.datetime.now(UTC) + datetime.timedelta(days=2)).replace(microsecond=0)
fk = os.path.join(os.environ["TMPDIR"], "k")
with open(fk, "wb") as f:
    f.write(DATA["k"])
rc, out = aws("put-object", "--bucket", B, "--key", "k", "--body", fk, "--object-lock-mode", "COMPLIANCE",
              "--object-lock-retain-until-date", iso(until))
v_k = jout(out).get("VersionId") if rc == 0 else None
t.check(rc == 0 and v_k, "aws s3api put-object with a COMPLIANCE retention", out[-300:])
v_g = s3.put_object(Bucket=B, Key="g", Body=DATA["g"], ObjectLockMode="GOVERNANCE",
                    ObjectLockRetainUntilDate=until)["VersionId"]
v_h = s3.put_object(Bucket=B, Key="h", Body=DATA["h"])["VersionId"]
rc, out = aws("put-object-legal-hold", "--bucket", B, "--key", "h", "--legal-hold", "Status=ON")
t.eq(rc, 0, "aws s3api put-object-legal-hold Status=ON")
v_x = s3.put_object(Bucket=B, Key="x", Body=DATA["x"])["VersionId"]
rc, out = aws("get-object-retention", "--bucket", B, "--key", "k", "--version-id", v_k or "none")
ret = jout(out).get("Retention", {}) if rc == 0 else {}
t.check(ret.get("Mode") == "COMPLIANCE" and ret.get("RetainUntilDate", "").startswith(iso(until)[:19]),
        "aws s3api get-object-retention: COMPLIANCE until the date given", out[-300:])
t.eq(s3.get_object_retention(Bucket=B, Key="g")["Retention"], {"Mode": "GOVERNANCE", "RetainUntilDate": until},
     "GetObjectRetention: GOVERNANCE")
t.eq(s3.get_object_legal_hold(Bucket=B, Key="h", VersionId=v_h)["LegalHold"], {"Status": "ON"},
     "GetObjectLegalHold by versionId: ON")
for k in ("k", "g", "h"):
    t.eq(len(holders(k)), 2, "%s has its 2 copies" % k)


# --- 3. refused on every target -----------------------------------------------------------------------------------
def refused_everywhere(key, vid, name, tag, bypass=False):
    bad = []
    hdr = {"x-amz-bypass-governance-retention": "true"} if bypass else {}
    for tg in [g] + targets:
        st, b = signed(tg.url, "DELETE", "/%s/%s?versionId=%s" % (B, q(key), vid), hdr)
        if st != 403 or b"AccessDenied" not in b:
            bad.append((tg.name, "S3", st, b[:200]))
        if tg is g:
            continue
        # (a target that is not the owner redirects to it: followed)
        r = follow("DELETE", tg.url, "/v1/objects/%s/%s?version=%s" % (B, q(key), vid))[1]
        if r.status != 403:
            bad.append((tg.name, "native ?version", r.status))
        r = follow("DELETE", tg.url, "/v1/objects/%s/%s" % (B, q(key + "~ais.v~" + vid)))[1]
        if r.status != 403:
            bad.append((tg.name, "native kept name", r.status))
    t.check(not bad, "%s: every delete of the locked version refused on every node (403)" % tag, bad[:4])
    t.eq(len(holders(name)), 2, "%s: both holders keep their copy" % tag)
    t.eq(body(key, vid), DATA[key], "%s: the version reads back byte for byte" % tag)


refused_everywhere("k", v_k, "k", "COMPLIANCE k")
refused_everywhere("k", v_k, "k", "COMPLIANCE k with the bypass header", bypass=True)
refused_everywhere("g", v_g, "g", "GOVERNANCE g")
refused_everywhere("h", v_h, "h", "legal hold h")
rc, out = aws("delete-object", "--bucket", B, "--key", "k", "--version-id", v_k)
t.check(rc != 0 and "AccessDenied" in out, "aws s3api delete-object of the COMPLIANCE version: AccessDenied", out[-300:])
r = s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": "k", "VersionId": v_k}, {"Key": "x", "VersionId": v_x}]})
errs, dels = r.get("Errors", []), r.get("Deleted", [])
t.check(len(errs) == 1 and errs[0].get("Key") == "k" and errs[0].get("Code") == "AccessDenied" and
        errs[0].get("VersionId") == v_k and [d.get("Key") for d in dels] == ["x"],
        "DeleteObjects: AccessDenied for the locked k, x deleted", r)

# --- 4. a delete marker over a locked version ---------------------------------------------------------------------
r = s3.delete_object(Bucket=B, Key="k")
t.check(r.get("DeleteMarker") is True, "DELETE k without versionId: a delete marker", r)
refused_everywhere("k", v_k, "k~ais.v~" + v_k, "k kept under its version name")
kept = "k~ais.v~" + v_k
t.eq(code_of(s3.put_object, Bucket=B, Key=kept, Body=b"forged"), (403, "AccessDenied"),
     "S3 PUT over the kept version's own name: 403 AccessDenied")
r = follow("PUT", g.url, "/v1/objects/%s/%s" % (B, q(kept)), b"forged")[1]
t.eq(r.status, 403, "native PUT over the kept version's own name: 403")
t.eq(body("k", v_k), DATA["k"], "... the locked version is unchanged")

# --- 5. retention changes -----------------------------------------------------------------------------------------
t.eq(code_of(s3.put_object_retention, Bucket=B, Key="k", VersionId=v_k,
             Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until - datetime.timedelta(days=1)}),
     (403, "AccessDenied"), "shortening a COMPLIANCE retention: 403 AccessDenied")
t.eq(code_of(s3.put_object_retention, Bucket=B, Key="k", VersionId=v_k, BypassGovernanceRetention=True,
             Retention={"Mode": "GOVERNANCE", "RetainUntilDate": until}),
     (403, "AccessDenied"), "COMPLIANCE to GOVERNANCE, even with the bypass: 403 AccessDenied")
t.eq(code_of(s3.put_object_retention, Bucket=B, Key="g",
             Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until}),
     (403, "AccessDenied"), "GOVERNANCE to COMPLIANCE without the bypass: 403 AccessDenied")
later = until + datetime.timedelta(days=1)
s3.put_object_retention(Bucket=B, Key="k", VersionId=v_k, Retention={"Mode": "COMPLIANCE", "RetainUntilDate": later})
t.eq(s3.get_object_retention(Bucket=B, Key="k", VersionId=v_k)["Retention"]["RetainUntilDate"], later,
     "a COMPLIANCE retention extended")
s3.put_object(Bucket=B, Key="g", Body=b"g2")  # g's locked version is kept; the bypass still reaches it
rc, out = aws("delete-object", "--bucket", B, "--key", "g", "--version-id", v_g, "--bypass-governance-retention")
t.eq(rc, 0, "aws s3api delete-object --bypass-governance-retention of the GOVERNANCE version")
t.eq(code_of(s3.head_object, Bucket=B, Key="g", VersionId=v_g), (404, "404"), "... it is gone")
t.eq(holders("g~ais.v~" + v_g), [], "... from every target")


# --- 6. restarts --------------------------------------------------------------------------------------------------
def ids():
    return smap_ids(g) or set()


for victim in targets:
    victim.kill9()
    t.check(poll(lambda: victim.id not in ids(), 20), "%s killed: the map drops it" % victim.name)
    t.check(victim.start(join=g.url), "%s restarts" % victim.name)
    t.check(poll(lambda: victim.id in ids(), 20), "%s rejoins" % victim.name)
time.sleep(1)
t.eq(s3.get_object_retention(Bucket=B, Key="k", VersionId=v_k)["Retention"], {"Mode": "COMPLIANCE",
     "RetainUntilDate": later}, "after the restarts: k's retention")
t.eq(s3.get_object_legal_hold(Bucket=B, Key="h")["LegalHold"], {"Status": "ON"}, "after the restarts: h's legal hold")
refused_everywhere("k", v_k, "k~ais.v~" + v_k, "after the restarts, k")
refused_everywhere("h", v_h, "h", "after the restarts, h")

# --- 7. locks that no longer hold ---------------------------------------------------------------------------------
soon = datetime.datetime.now(UTC) + datetime.timedelta(seconds=3)
v_s = s3.put_object(Bucket=B, Key="short", Body=DATA["short"], ObjectLockMode="COMPLIANCE",
                    ObjectLockRetainUntilDate=soon)["VersionId"]
t.eq(code_of(s3.delete_object, Bucket=B, Key="short", VersionId=v_s), (403, "AccessDenied"),
     "a 3 s COMPLIANCE retention: refused while it runs")
time.sleep(max(0.0, (soon - datetime.datetime.now(UTC)).total_seconds()) + 1.5)
t.eq(code_of(s3.delete_object, Bucket=B, Key="short", VersionId=v_s), (200, ""), "... deleted once it ran out")
s3.put_object_legal_hold(Bucket=B, Key="h", LegalHold={"Status": "OFF"})
t.eq(s3.get_object_legal_hold(Bucket=B, Key="h")["LegalHold"], {"Status": "OFF"}, "legal hold set OFF")
t.eq(code_of(s3.delete_object, Bucket=B, Key="h", VersionId=v_h), (200, ""), "h deleted once its hold is off")
t.eq(holders("h"), [], "... from both holders")

# --- 8. the bucket stays while it holds versions -----------------------------------------------------------------
for key in ("d", "g"):  # only delete markers and kept versions are left
    s3.delete_object(Bucket=B, Key=key)
t.eq(code_of(s3.delete_bucket, Bucket=B), (409, "BucketNotEmpty"), "DeleteBucket with locked versions: BucketNotEmpty")
r = request("DELETE", g.url, "/v1/buckets/" + B)
t.eq(r.status, 409, "native destroy of a bucket with S3 object lock and versions: 409")
t.eq(body("k", v_k), DATA["k"], "... k's locked version still reads")

t.eq(error_lines(), [], "no error-level log lines on any node")
t.finish()
