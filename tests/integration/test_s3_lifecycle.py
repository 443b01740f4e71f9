"""test_s3_lifecycle.py - S3 bucket lifecycle end to end with boto3 on a
1-gateway 3-target cluster whose lifecycle day is 2 s (s3.lifecycle_day)
and whose targets run the lifecycle job every 500 ms (s3.lifecycle_period).

Checks:
 1. Configurations: GetBucketLifecycleConfiguration of a bucket without
    one is 404 NoSuchLifecycleConfiguration; Put then Get round-trips
    rules in both forms (rule-level Prefix; Filter with And, tags and
    sizes), the same from every target; a rule without an ID gets one;
    S3's refusals: a duplicate ID, an ID over 255, Status "enabled"
    (MalformedXML), Days 0, a Date not at midnight, tags with
    ExpiredObjectDeleteMarker (400s), a Transition (501 NotImplemented);
    DeleteBucketLifecycle: 204, then 404 again.
 2. Expiration Days on an unversioned copies=2 bucket: the objects of the
    prefix rule and of the tag rule go (from both holders: native HEAD on
    every target), the others stay; HEAD and PUT of a matching object
    answer x-amz-expiration with the rule's id (calendar days).
 3. Versions: NoncurrentVersionExpiration with NewerNoncurrentVersions 1
    keeps the current and the newest noncurrent version; an expired object
    delete marker (ExpiredObjectDeleteMarker) goes with the version under
    it; Expiration on a versioned bucket turns a current version into a
    delete marker.
 4. Object lock: a noncurrent version under a legal hold is never expired
    (the job counts it kept), its unlocked sibling goes; after the hold is
    lifted it goes too.
 5. AbortIncompleteMultipartUpload: the upload under the rule's prefix is
    aborted, the other one stays.
 6. The job: GET /v1/jobs?kind=lifecycle&all=true on the gateway shows
    lifecycle runs with what they removed.
 7. kill -9 of a target while 200 objects expire: once it is back, every
    object of the rule is gone, the others are all there.
 8. No error-level line in any node's log.
"""
# timeout: 240
import datetime
import json
import time

from botocore.exceptions import ClientError

from itlib import T, q

from clulib import get, poll, request, smap_ids
from s3lib import boto3_client, cluster, error_lines

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}

t = T()
EP = cluster(t, "s3lc", targets=3, args=["--set", "s3.lifecycle_day=2s", "--set", "s3.lifecycle_period=500ms"])
g = cluster.nodes[0]
targets = list(cluster.nodes[1:])
s3 = boto3_client(EP)


def code_of(fn, **kw):
    try:
        fn(**kw)
        return (200, "")
    except ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code"))


def keys(b):
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=b).get("Contents", []))


def copies(b, k):
    return sum(get(tg.url, "/v1/objects/%s/%s" % (b, q(k)), headers=INTRA).status == 200 for tg in targets)


def versions(b):
    r = s3.list_object_versions(Bucket=b)
    return ([(v["Key"], v["VersionId"]) for v in r.get("Versions", [])],
            [(v["Key"], v["VersionId"]) for v in r.get("DeleteMarkers", [])])


def put_lc(b, rules):
    return s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": rules})


# --- 1. configurations --------------------------------------------------------------------------------------------
B = "lcconf"
s3.create_bucket(Bucket=B)
t.eq(code_of(s3.get_bucket_lifecycle_configuration, Bucket=B), (404, "NoSuchLifecycleConfiguration"),
     "no configuration: 404 NoSuchLifecycleConfiguration")
rules = [{"ID": "legacy", "Prefix": "a/", "Status": "Enabled", "Expiration": {"Days": 31}},
         {"ID": "filtered", "Status": "Disabled",
          "Filter": {"And": {"Prefix": "b/", "Tags": [{"Key": "k1", "Value": "v1"}, {"Key": "k2", "Value": ""}],
                             "ObjectSizeGreaterThan": 10, "ObjectSizeLessThan": 1000}},
          "NoncurrentVersionExpiration": {"NoncurrentDays": 3, "NewerNoncurrentVersions": 2}},
         {"ID": "dated", "Filter": {"Prefix": ""}, "Status": "Enabled",
          "Expiration": {"Date": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)}},
         {"ID": "markers", "Filter": {}, "Status": "Enabled", "Expiration": {"ExpiredObjectDeleteMarker": True}}]
t.eq(put_lc(B, rules)["ResponseMetadata"]["HTTPStatusCode"], 200, "PutBucketLifecycleConfiguration")
got = s3.get_bucket_lifecycle_configuration(Bucket=B)["Rules"]
t.eq(got[:2], rules[:2], "GetBucketLifecycleConfiguration answers what was put (legacy Prefix, Filter with And)")
t.eq(got[2]["Expiration"]["Date"].year, 2030, "an Expiration Date round-trips")
t.eq(got[3]["Expiration"], {"ExpiredObjectDeleteMarker": True}, "ExpiredObjectDeleteMarker round-trips")
for tg in targets:
    c3 = boto3_client(tg.url)
    t.eq(c3.get_bucket_lifecycle_configuration(Bucket=B)["Rules"][:2], rules[:2], "%s answers the same" % tg.name)
put_lc(B, [{"Prefix": "x/", "Status": "Enabled", "Expiration": {"Days": 1}}])
t.check(s3.get_bucket_lifecycle_configuration(Bucket=B)["Rules"][0].get("ID"), "a rule without an ID gets one")
bad = [
    ([{"ID": "r", "Prefix": "a", "Status": "Enabled", "Expiration": {"Days": 1}},
      {"ID": "r", "Prefix": "b", "Status": "Enabled", "Expiration": {"Days": 1}}], (400, "InvalidArgument"),
     "a duplicate ID"),
    ([{"ID": "r" * 256, "Prefix": "a", "Status": "Enabled", "Expiration": {"Days": 1}}], (400, "InvalidArgument"),
     "an ID over 255"),
    ([{"ID": "r", "Prefix": "a", "Status": "enabled", "Expiration": {"Days": 1}}], (400, "MalformedXML"),
     "Status enabled"),
    ([{"ID": "r", "Prefix": "a", "Status": "Enabled", "Expiration": {"Days": 0}}], (400, "InvalidArgument"),
     "Expiration Days 0"),
    ([{"ID": "r", "Prefix": "a", "Status": "Enabled", "Expiration": {"Date": "20200101"}}], (400, "InvalidArgument"),
     "a Date not at midnight"),
    ([{"ID": "r", "Filter": {"Tag": {"Key": "a", "Value": "b"}}, "Status": "Enabled",
       "Expiration": {"ExpiredObjectDeleteMarker": True}}], (400, "InvalidRequest"),
     "ExpiredObjectDeleteMarker with a tag"),
    ([{"ID": "r", "Filter": {"Tag": {"Key": "a", "Value": "b"}}, "Status": "Enabled",
       "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}], (400, "InvalidRequest"),
     "AbortIncompleteMultipartUpload with a tag"),
    ([{"ID": "r", "Prefix": "a", "Status": "Enabled"}], (400, "InvalidRequest"), "a rule without an action"),
    ([{"ID": "r", "Prefix": "a", "Status": "Enabled", "Transitions": [{"Days": 1, "StorageClass": "GLACIER"}]}],
     (501, "NotImplemented"), "a Transition"),
]
for rs, want, what in bad:
    t.eq(code_of(s3.put_bucket_lifecycle_configuration, Bucket=B, LifecycleConfiguration={"Rules": rs}), want,
         "refused: " + what)
t.eq(code_of(s3.put_bucket_lifecycle_configuration, Bucket="lc-none",
             LifecycleConfiguration={"Rules": rules[:1]}), (404, "NoSuchBucket"), "a missing bucket: 404")
t.eq(s3.delete_bucket_lifecycle(Bucket=B)["ResponseMetadata"]["HTTPStatusCode"], 204, "DeleteBucketLifecycle: 204")
t.eq(code_of(s3.get_bucket_lifecycle_configuration, Bucket=B), (404, "NoSuchLifecycleConfiguration"),
     "deleted: 404 again")

# --- 2. expiration of objects -------------------------------------------------------------------------------------
P = "lcplain"
s3.create_bucket(Bucket=P)
r = request("PATCH", g.url, "/v1/buckets/" + P,
            json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
t.eq(r.status, 200, "set-bprops mirror.copies=2")
for k in ("exp/a", "exp/b", "keep/c", "t/x", "t/y"):
    s3.put_object(Bucket=P, Key=k, Body=b"data of " + k.encode(), Tagging="k=v" if k == "t/x" else "")
s3.create_multipart_upload(Bucket=P, Key="mp/gone")
s3.create_multipart_upload(Bucket=P, Key="other/stays")
put_lc(P, [{"ID": "by-prefix", "Filter": {"Prefix": "exp/"}, "Status": "Enabled", "Expiration": {"Days": 1}},
           {"ID": "by-tag", "Filter": {"Tag": {"Key": "k", "Value": "v"}}, "Status": "Enabled",
            "Expiration": {"Days": 2}},
           {"ID": "uploads", "Prefix": "mp/", "Status": "Enabled",
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
           {"ID": "off", "Prefix": "keep/", "Status": "Disabled", "Expiration": {"Days": 1}}])
h = s3.head_object(Bucket=P, Key="t/x")["ResponseMetadata"]["HTTPHeaders"]
t.check('rule-id="by-tag"' in h.get("x-amz-expiration", ""), "HEAD: x-amz-expiration names the tag rule",
        h.get("x-amz-expiration"))
exp = h.get("x-amz-expiration", "")
t.check("00:00:00 GMT" in exp, "... at a midnight (calendar days)", exp)
t.check("x-amz-expiration" not in s3.head_object(Bucket=P, Key="keep/c")["ResponseMetadata"]["HTTPHeaders"],
        "HEAD of an object no enabled rule matches: no x-amz-expiration")
h = s3.put_object(Bucket=P, Key="exp/new", Body=b"new")["ResponseMetadata"]["HTTPHeaders"]
t.check('rule-id="by-prefix"' in h.get("x-amz-expiration", ""), "PUT: x-amz-expiration", h.get("x-amz-expiration"))
t.check(poll(lambda: keys(P) == ["keep/c", "t/y"], 30), "Expiration: the prefix and tag rules' objects go",
        keys(P))
t.eq([copies(P, k) for k in ("exp/a", "exp/b", "t/x", "keep/c")], [0, 0, 0, 2],
     "from every holder (the survivor keeps its 2 copies)")
ups = lambda: sorted(u["Key"] for u in s3.list_multipart_uploads(Bucket=P).get("Uploads", []))  # noqa: E731
t.check(poll(lambda: ups() == ["other/stays"], 20), "AbortIncompleteMultipartUpload: the mp/ upload is aborted",
        ups())

# --- 3. versions --------------------------------------------------------------------------------------------------
V = "lcver"
s3.create_bucket(Bucket=V)
s3.put_bucket_versioning(Bucket=V, VersioningConfiguration={"Status": "Enabled"})
vids = [s3.put_object(Bucket=V, Key="v/o", Body=b"v%d" % i)["VersionId"] for i in range(4)]
s3.put_object(Bucket=V, Key="d/o", Body=b"under a marker")
s3.delete_object(Bucket=V, Key="d/o")
s3.put_object(Bucket=V, Key="cur/o", Body=b"current")
s3.put_object(Bucket=V, Key="keep/o", Body=b"keep")
put_lc(V, [{"ID": "noncurrent", "Filter": {"Prefix": "v/"}, "Status": "Enabled",
            "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 1}},
           {"ID": "markers", "Filter": {"Prefix": "d/"}, "Status": "Enabled",
            "Expiration": {"ExpiredObjectDeleteMarker": True},
            "NoncurrentVersionExpiration": {"NoncurrentDays": 1}},
           {"ID": "current", "Filter": {"Prefix": "cur/"}, "Status": "Enabled", "Expiration": {"Days": 1}}])


def settled():
    vs, dms = versions(V)
    return (sorted(i for k, i in vs if k == "v/o") == sorted(vids[2:]) and
            sorted(k for k, _ in vs) == ["cur/o", "keep/o", "v/o", "v/o"] and [k for k, _ in dms] == ["cur/o"])


t.check(poll(settled, 40), "versions: 2 of v/o left (current + newest noncurrent), d/o's version and marker "
        "gone, cur/o a delete marker over its version", versions(V))
t.eq(keys(V), ["keep/o", "v/o"], "ListObjects of the versioned bucket")

# --- 4. object lock -----------------------------------------------------------------------------------------------
L = "lclock"
s3.create_bucket(Bucket=L, ObjectLockEnabledForBucket=True)
held = s3.put_object(Bucket=L, Key="l/o", Body=b"held", ObjectLockLegalHoldStatus="ON")["VersionId"]
free = s3.put_object(Bucket=L, Key="l/o", Body=b"free")["VersionId"]
last = s3.put_object(Bucket=L, Key="l/o", Body=b"current")["VersionId"]
put_lc(L, [{"ID": "nc", "Filter": {"Prefix": "l/"}, "Status": "Enabled",
            "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}])
t.check(poll(lambda: sorted(i for _, i in versions(L)[0]) == sorted([held, last]), 30),
        "a version under a legal hold is kept, its unlocked sibling expires", versions(L))
time.sleep(3)
t.eq(sorted(i for _, i in versions(L)[0]), sorted([held, last]), "... and stays kept over more runs")
t.eq(s3.get_object(Bucket=L, Key="l/o", VersionId=held)["Body"].read(), b"held", "the held version reads back")
s3.put_object_legal_hold(Bucket=L, Key="l/o", VersionId=held, LegalHold={"Status": "OFF"})
t.check(poll(lambda: [i for _, i in versions(L)[0]] == [last], 20), "the hold lifted: it expires too",
        versions(L))

# --- 6. the job ---------------------------------------------------------------------------------------------------
r = get(g.url, "/v1/jobs?kind=lifecycle&all=true")
runs = r.json().get("runs", []) if r.status == 200 else []
t.check(runs and all(x.get("kind") == "lifecycle" and x["id"].startswith("lc-") for x in runs),
        "GET /v1/jobs?kind=lifecycle on the gateway: the runs, one id per period on every target", r.body[:300])
removed = 0
for tg in targets:
    r = get(tg.url, "/v1/jobs?kind=lifecycle&all=true")
    removed += sum(x.get("deleted", 0) for x in (r.json().get("runs", []) if r.status == 200 else []))
t.check(removed >= 10, "the targets' runs report what they removed", removed)

# --- 7. kill -9 of a target while objects expire ------------------------------------------------------------------
K = "lckill"
s3.create_bucket(Bucket=K)
for i in range(200):
    s3.put_object(Bucket=K, Key="gone/%03d" % i, Body=b"x" * 100)
for i in range(20):
    s3.put_object(Bucket=K, Key="stay/%03d" % i, Body=b"y" * 100)
put_lc(K, [{"ID": "all", "Filter": {"Prefix": "gone/"}, "Status": "Enabled", "Expiration": {"Days": 1}}])
victim = targets[1]
t.check(poll(lambda: len(keys(K)) < 220, 20), "objects start to expire")
victim.kill9()
t.check(poll(lambda: victim.id not in smap_ids(g), 20), "%s killed: the map drops it" % victim.name)
t.check(victim.start(join=g.url), "%s restarts" % victim.name)
t.check(poll(lambda: smap_ids(g) == {n.id for n in cluster.nodes}, 30), "the map lists every node again")
t.check(poll(lambda: keys(K) == ["stay/%03d" % i for i in range(20)], 60),
        "after the restart every expiring object is gone, every other one is there", len(keys(K)))

# --- 8. logs ------------------------------------------------------------------------------------------------------
errs = error_lines()
t.check(not errs, "no error-level line in any node's log", "\n".join(errs[:5]))
t.finish()
