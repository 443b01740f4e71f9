"""test_s3_logging.py - S3 server access logging: PutBucketLogging /
GetBucketLogging kept in the BMD, records of the requests on a bucket
delivered as log objects into its target bucket, in AWS's record format,
by flush (Ceph's POST ?logging), by roll time and at a node's stop.
1 gateway + 3 targets on loopback ports (s3.logging_roll_time=3s), stopped by PID.

Checks:
 1. GetBucketLogging of a bucket without logging: an empty
    BucketLoggingStatus. PutBucketLogging refused: a target bucket whose
    policy does not let logging.s3.amazonaws.com put the prefix (403
    AccessDenied), a missing target (400 InvalidTargetBucketForLogging),
    the bucket itself (InvalidArgument), TargetGrants (501
    NotImplemented), LoggingType kaboom (MalformedXML), a missing source
    bucket (NoSuchBucket).
 2. With the policy: 200; GetBucketLogging answers the configuration
    (defaults filled in: SimplePrefix, Standard, ObjectRollTime 3) with a
    Last-Modified that the same configuration put again keeps.
 3. PUT, GET, HEAD, DELETE of a key, a GET of a missing key, a listing,
    GetBucketCors without CORS, a presigned GET, a DeleteObjects (a record
    for the request and one per key), a listing by another user that the
    bucket's public-read ACL allows (ACLRequired Yes; the owner's: -):
    POST ?logging answers the
    flushed log object's name; the target bucket holds exactly it, named
    log/YYYY-mm-DD-HH-MM-SS-UNIQ; each line splits into the 26 fields of
    AWS's format; the records carry the operation, key, status, error
    code (NoSuchCORSConfiguration), bytes sent and object size (1000),
    requester, request id (the PUT's x-amz-request-id), SigV4 with
    AuthHeader / QueryString, the Host, the User-Agent.
 4. Roll by time: a request, then (no flush) a second log object within
    the roll time and a margin.
 5. Journal with a prefix filter and PartitionedPrefix: only the
    successful PUT and DELETE of keys under the prefix, 8 fields each,
    in log/OWNER/REGION/BUCKET/YYYY/mm/DD/....
 6. The log object is read from every target (its copies hold).
 7. A gateway stopped (SIGTERM) delivers its pending records.
 8. PutBucketLogging with an empty status turns logging off: then no
    records, and POST ?logging answers InvalidArgument.
 9. No error-level line in any node's log.
"""
# timeout: 150
import datetime
import re
import shlex
import signal
import time
import urllib.parse

import boto3
import botocore.config
import clulib
from itlib import T
import s3lib
from s3lib import REGION, boto3_client, cluster, http_raw

t = T()
EP = cluster(t, "s3log", targets=3, args=["--set", "s3.logging_roll_time=3s",
                                          "--set", "s3.key=ALTKEY0000000001:altsecret0000000001:alt-user:Alt User"])
g = cluster.nodes[0]
s3 = boto3_client(EP)
SRC, LOGS, JSRC = "srcb", "logsb", "jsrcb"
for b in (SRC, LOGS, JSRC):
    s3.create_bucket(Bucket=b)
OWNER = "aisd-test"


def code_of(fn, **kw):
    try:
        fn(**kw)
        return (200, "")
    except Exception as e:  # noqa: BLE001 - botocore's ClientError
        r = getattr(e, "response", {})
        return (r.get("ResponseMetadata", {}).get("HTTPStatusCode"), r.get("Error", {}).get("Code"))


def signed(method, path, body=b""):
    return s3lib.signed(EP, method, path, body, {"Content-Type": "application/xml"})


def put_xml(bucket, xml):
    st, _, body = signed("PUT", "/%s?logging" % bucket, xml.encode())
    m = re.search(rb"<Code>([^<]*)</Code>", body)
    return (st, m.group(1).decode() if m else "")


def flush(bucket):
    st, _, body = signed("POST", "/%s?logging" % bucket)
    m = re.search(rb"<FlushedLoggingObject>([^<]*)</FlushedLoggingObject>", body)
    return st, (m.group(1).decode() if m else body.decode(errors="replace"))


def policy(bucket, prefix, sources):
    import json
    st = [{"Effect": "Allow", "Principal": {"Service": "logging.s3.amazonaws.com"}, "Action": ["s3:PutObject"],
           "Resource": "arn:aws:s3:::%s/%s" % (bucket, prefix),
           "Condition": {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::%s" % s},
                         "StringEquals": {"aws:SourceAccount": OWNER}}} for s in sources]
    return json.dumps({"Version": "2012-10-17", "Statement": st})


def fields(line, n):
    chunks = shlex.split(line.replace("[", '"').replace("]", '"'))
    t.eq(len(chunks), n, "a record splits into %d fields: %r" % (n, line[:200]))
    return chunks


STD = ["BucketOwner", "BucketName", "RequestDateTime", "RemoteIP", "Requester", "RequestID", "Operation", "Key",
       "RequestURI", "HTTPStatus", "ErrorCode", "BytesSent", "ObjectSize", "TotalTime", "TurnAroundTime", "Referrer",
       "UserAgent", "VersionID", "HostID", "SigVersion", "CipherSuite", "AuthType", "HostHeader", "TLSVersion",
       "AccessPointARN", "ACLRequired"]


def records(key, n=26):
    body = s3.get_object(Bucket=LOGS, Key=key)["Body"].read().decode()
    out = []
    for line in body.splitlines():
        c = fields(line, n)
        out.append(dict(zip(STD, c)) if n == 26 else c)
    return out


def log_keys(prefix=""):
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=LOGS, Prefix=prefix).get("Contents", []))


# 1. nothing yet; refusals
t.eq(s3.get_bucket_logging(Bucket=SRC).get("LoggingEnabled"), None, "GetBucketLogging without logging: empty")
LE = {"TargetBucket": LOGS, "TargetPrefix": "log/"}
t.eq(code_of(s3.put_bucket_logging, Bucket=SRC, BucketLoggingStatus={"LoggingEnabled": LE}), (403, "AccessDenied"),
     "a target bucket without a policy for the log service: AccessDenied")
s3.put_bucket_policy(Bucket=LOGS, Policy=policy(LOGS, "log/", [SRC]))
t.eq(code_of(s3.put_bucket_logging, Bucket=SRC,
             BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": LOGS, "TargetPrefix": "other/"}}),
     (403, "AccessDenied"), "a prefix the policy does not name: AccessDenied")
t.eq(code_of(s3.put_bucket_logging, Bucket=SRC,
             BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": "nosuchlogs", "TargetPrefix": "log/"}}),
     (400, "InvalidTargetBucketForLogging"), "a missing target bucket")
t.eq(code_of(s3.put_bucket_logging, Bucket=SRC,
             BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": SRC, "TargetPrefix": "log/"}}),
     (400, "InvalidArgument"), "the bucket as its own target")
t.eq(code_of(s3.put_bucket_logging, Bucket="nosuchsrc", BucketLoggingStatus={"LoggingEnabled": LE}),
     (404, "NoSuchBucket"), "a missing source bucket")
GR = dict(LE, TargetGrants=[{"Grantee": {"ID": OWNER, "Type": "CanonicalUser"}, "Permission": "READ"}])
t.eq(code_of(s3.put_bucket_logging, Bucket=SRC, BucketLoggingStatus={"LoggingEnabled": GR}),
     (501, "NotImplemented"), "TargetGrants: 501, never silently dropped")
X = ('<BucketLoggingStatus xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LoggingEnabled><TargetBucket>%s'
     '</TargetBucket><TargetPrefix>log/</TargetPrefix>%s</LoggingEnabled></BucketLoggingStatus>')
t.eq(put_xml(SRC, X % (LOGS, "<LoggingType>kaboom</LoggingType>")), (400, "MalformedXML"), "LoggingType kaboom")
t.eq(put_xml(SRC, "<BucketLoggingStatus><Bogus/></BucketLoggingStatus>"), (400, "MalformedXML"),
     "an element S3 does not have")
t.eq(s3.get_bucket_logging(Bucket=SRC).get("LoggingEnabled"), None, "refusals changed nothing")

# 2. on
r = s3.put_bucket_logging(Bucket=SRC, BucketLoggingStatus={"LoggingEnabled": LE})
t.eq(r["ResponseMetadata"]["HTTPStatusCode"], 200, "PutBucketLogging: 200")
st, h, body = signed("GET", "/%s?logging" % SRC)
t.eq(st, 200, "GetBucketLogging: 200")
for frag in (b"<TargetBucket>logsb</TargetBucket>", b"<TargetPrefix>log/</TargetPrefix>", b"<SimplePrefix>",
             b"<LoggingType>Standard</LoggingType>", b"<ObjectRollTime>3</ObjectRollTime>",
             b"<RecordsBatchSize>0</RecordsBatchSize>"):
    t.check(frag in body, "GetBucketLogging has %s" % frag.decode())
mtime = h.get("last-modified")
t.check(mtime, "GetBucketLogging: Last-Modified")
time.sleep(1.1)
s3.put_bucket_logging(Bucket=SRC, BucketLoggingStatus={"LoggingEnabled": LE})
t.eq(signed("GET", "/%s?logging" % SRC)[1].get("last-modified"), mtime, "the same configuration again keeps its mtime")
flush(SRC)  # (what the calls above recorded)
before = set(log_keys())

# 3. requests, flush, records
ids = {}
s3.meta.events.register("after-call.s3.PutObject",
                        lambda **kw: ids.setdefault("put", kw["http_response"].headers.get("x-amz-request-id")))
s3.put_object(Bucket=SRC, Key="dir/a b.txt", Body=b"z" * 1000)
s3.get_object(Bucket=SRC, Key="dir/a b.txt")["Body"].read()
s3.head_object(Bucket=SRC, Key="dir/a b.txt")
t.eq(code_of(s3.get_object, Bucket=SRC, Key="missing"), (404, "NoSuchKey"), "GET of a missing key")
s3.list_objects_v2(Bucket=SRC)
t.eq(code_of(s3.get_bucket_cors, Bucket=SRC), (404, "NoSuchCORSConfiguration"), "GetBucketCors: none")
url = boto3_client(EP, signature_version="s3v4").generate_presigned_url("get_object", Params={"Bucket": SRC, "Key": "dir/a b.txt"}, ExpiresIn=300)
u = urllib.parse.urlsplit(url)
t.eq(http_raw(EP, "GET", u.path + "?" + u.query)[0], 200, "a presigned GET")
s3.delete_object(Bucket=SRC, Key="dir/a b.txt")
s3.put_bucket_acl(Bucket=SRC, ACL="public-read")
alt = boto3.client("s3", endpoint_url=EP, aws_access_key_id="ALTKEY0000000001",
                   aws_secret_access_key="altsecret0000000001", region_name=REGION,
                   config=botocore.config.Config(s3={"addressing_style": "path"}))
alt.list_objects_v2(Bucket=SRC, Prefix="by-alt")
s3.list_objects_v2(Bucket=SRC, Prefix="by-owner")
s3.put_object(Bucket=SRC, Key="m1", Body=b"1")
s3.delete_objects(Bucket=SRC, Delete={"Objects": [{"Key": "m1"}, {"Key": "m2"}]})
st, name = flush(SRC)
t.eq(st, 200, "POST ?logging: 200")
t.check(re.match(r"^log/\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}-\S+$", name), "the log object's name: %r" % name)
new = sorted(set(log_keys()) - before)
t.eq(new, [name], "the target bucket holds exactly the flushed log object")
recs = records(name) if new == [name] else []


def find(op, key="-", status=None):
    for r in recs:
        if r["Operation"] == op and r["Key"] == key and (status is None or r["HTTPStatus"] == status):
            return r
    return {}


K = "dir/a%20b.txt"
p = find("REST.PUT.OBJECT", K)
t.eq((p.get("BucketOwner"), p.get("BucketName"), p.get("HTTPStatus"), p.get("ObjectSize")),
     (OWNER, SRC, "200", "1000"), "PUT record: owner, bucket, status, object size")
t.eq(p.get("RequestID"), ids.get("put"), "PUT record: the request id its client saw")
t.eq((p.get("Requester"), p.get("SigVersion"), p.get("AuthType")), (OWNER, "SigV4", "AuthHeader"),
     "PUT record: requester, SigV4, AuthHeader")
t.check(p.get("RequestURI", "").startswith("PUT /srcb/dir/a%20b.txt"), "PUT record: the request line %r"
        % p.get("RequestURI"))
t.check("Botocore" in p.get("UserAgent", "") or "Boto3" in p.get("UserAgent", ""), "PUT record: the User-Agent")
t.check(p.get("HostHeader", "").startswith("127.0.0.1"), "PUT record: the Host")
t.check(re.match(r"\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000", p.get("RequestDateTime", "")), "PUT record: the time")
gr = find("REST.GET.OBJECT", K, "200")
t.eq((gr.get("BytesSent"), gr.get("ObjectSize")), ("1000", "1000"), "GET record: bytes sent, object size")
t.check(find("REST.HEAD.OBJECT", K, "200"), "HEAD record")
t.check(find("REST.DELETE.OBJECT", K, "204"), "DELETE record")
t.check(find("REST.GET.OBJECT", "missing", "404"), "GET of a missing key: a 404 record")
t.check(find("REST.GET.BUCKET"), "listing record")
la = [r for r in recs if r["Operation"] == "REST.GET.BUCKET" and "by-alt" in r["RequestURI"]]
lo = [r for r in recs if r["Operation"] == "REST.GET.BUCKET" and "by-owner" in r["RequestURI"]]
t.eq([(r["Requester"], r["ACLRequired"]) for r in la + lo], [("alt-user", "Yes"), (OWNER, "-")],
     "a listing the bucket's ACL allowed another user: ACLRequired Yes; the owner's: -")
t.eq(find("REST.GET.CORS").get("ErrorCode"), "NoSuchCORSConfiguration", "an error's code")
t.check(find("REST.POST.MULTI_OBJECT_DELETE", "-", "200"), "DeleteObjects: the request's record")
t.check(find("REST.POST.DELETE_MULTI_OBJECT", "m1", "204") and find("REST.POST.DELETE_MULTI_OBJECT", "m2", "204"),
        "DeleteObjects: a record per key")
pq = [r for r in recs if r["Operation"] == "REST.GET.OBJECT" and r["AuthType"] == "QueryString"]
t.check(pq and pq[0]["SigVersion"] == "SigV4", "presigned GET: QueryString, SigV4")

# 4. roll by time (3 s), no flush
s3.put_object(Bucket=SRC, Key="rolled", Body=b"r")
have = set(log_keys())
deadline = time.time() + 20
rolled = []
while time.time() < deadline and not rolled:
    time.sleep(0.5)
    rolled = sorted(set(log_keys()) - have - {name} - before)
    rolled = [k for k in rolled if any(r["Key"] == "rolled" for r in records(k))]
t.eq(len(rolled), 1, "a batch delivered by its roll time")

# 5. Journal, filtered, partitioned
s3.put_bucket_policy(Bucket=LOGS, Policy=policy(LOGS, "log/", [SRC, JSRC]))
JX = X % (LOGS, "<TargetObjectKeyFormat><PartitionedPrefix><PartitionDateSource>DeliveryTime"
          "</PartitionDateSource></PartitionedPrefix></TargetObjectKeyFormat><LoggingType>Journal</LoggingType>"
          "<Filter><Key><FilterRule><Name>prefix</Name><Value>j/</Value></FilterRule></Key></Filter>")
t.eq(put_xml(JSRC, JX), (200, ""), "PutBucketLogging: Journal with a prefix filter, PartitionedPrefix")
st, _, body = signed("GET", "/%s?logging" % JSRC)
t.check(b"<LoggingType>Journal</LoggingType>" in body and b"<Value>j/</Value>" in body, "GetBucketLogging: Journal")
s3.put_object(Bucket=JSRC, Key="j/x", Body=b"12345")
s3.put_object(Bucket=JSRC, Key="k/y", Body=b"1")
s3.get_object(Bucket=JSRC, Key="j/x")["Body"].read()
s3.delete_object(Bucket=JSRC, Key="j/x")
st, jname = flush(JSRC)
today = datetime.datetime.utcnow()
t.check(re.match(r"^log/%s/[^/]+/%s/\d{4}/\d{2}/\d{2}/\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}-\S+$" % (OWNER, JSRC), jname),
        "a partitioned name: %r" % jname)
jr = records(jname, 8) if st == 200 else []
t.eq([(r[3], r[4], r[5]) for r in jr], [("REST.PUT.OBJECT", "j/x", "5"), ("REST.DELETE.OBJECT", "j/x", "-")],
     "Journal: the filtered key's changes only")

# 6. the log object on every target
for n in cluster.nodes[1:]:
    got = boto3_client(n.url).get_object(Bucket=LOGS, Key=name)["Body"].read()
    t.check(b"REST.PUT.OBJECT" in got, "the log object read from %s" % n.name)

# 7. stop delivers
s3.put_object(Bucket=SRC, Key="at-stop", Body=b"s")
have = set(log_keys())
p = clulib.procs[g.name]
p.send_signal(signal.SIGTERM)
p.wait(30)
t.check(g.start(), "the gateway started again")
time.sleep(1)
s3 = boto3_client(EP)
got = [k for k in sorted(set(log_keys()) - have) if any(r["Key"] == "at-stop" for r in records(k))]
t.eq(len(got), 1, "records pending at a stop were delivered")

# 8. off
s3.put_bucket_logging(Bucket=SRC, BucketLoggingStatus={})
t.eq(s3.get_bucket_logging(Bucket=SRC).get("LoggingEnabled"), None, "logging off")
t.eq(flush(SRC)[0], 400, "POST ?logging of a bucket that does not log: 400")
time.sleep(4)  # (the records of the requests that turned it off roll out)
have = set(log_keys())
s3.put_object(Bucket=SRC, Key="after-off", Body=b"o")
time.sleep(4)
t.eq(sorted(set(log_keys()) - have), [], "no records once logging is off")

clulib.check_logs(cluster.nodes)
t.finish()
