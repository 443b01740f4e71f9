"""test_s3_cors.py - S3 bucket CORS: Put/Get/DeleteBucketCors kept in the
BMD beside the bucket's entry (the same on every node), preflight OPTIONS by S3's rules, and the
Access-Control-* headers on the answers to requests that carry Origin.
1 gateway + 3 targets on loopback ports, stopped by PID.

Checks:
 1. GetBucketCors of a bucket without one: 404 NoSuchCORSConfiguration;
    a preflight then: 403 AccessDenied "CORS is not enabled".
 2. PutBucketCors (boto3) of two rules; GetBucketCors through the gateway
    and straight from every target: the same rules.
 3. Preflight OPTIONS /bucket/key with raw http.client: a matching origin
    and method (Allow-Origin echoed, Allow-Credentials, Allow-Methods,
    Allow-Headers, Max-Age, Vary: Origin); a wildcard origin
    (http://*.example.com); a wildcard AllowedHeader (x-amz-*); a method,
    an origin or a header no rule allows: 403 "This CORS request is not
    allowed"; the second rule (AllowedOrigin *) answers Allow-Origin: *;
    no Origin / no Access-Control-Request-Method: 400; sent to a target:
    the same answer.
 4. Actual requests with Origin (signed boto3 GET with the header added):
    Allow-Origin / Expose-Headers on a 200, once only when relayed from
    the owner (sent to the gateway and to every target); on an error
    (NoSuchKey 404, an anonymous 403): the headers too; a non-matching
    Origin: none; a request with Access-Control-Request-Method is matched
    by that method.
 5. S3's refusals: an unsupported method, two wildcards, a wildcard
    ExposeHeader (InvalidRequest), no AllowedOrigin, not XML (MalformedXML),
    101 rules (InvalidRequest).
 6. DeleteBucketCors: 204, then NoSuchCORSConfiguration and preflight 403.
 7. CORS rules beside a bucket policy (both kept out of the bucket's
    entry, bmd_doc): a configuration of 100 rules and about 30 KiB (more
    than an entry could hold) is kept and read back from every target;
    deleting the CORS rules keeps the policy, deleting the policy keeps
    the rules; a policy denying s3:PutBucketCORS refuses Put and Delete
    (403); a target killed and started again has them; a bucket
    deleted and created again has neither.
 8. No error-level line in any node's log.
 9. A rule whose AllowedOrigin lists "*" beside a named origin: another
    origin gets Allow-Origin "*" without Allow-Credentials (preflight at
    the gateway and a target, and an actual GET); the named one is
    echoed with credentials.
"""
# timeout: 120
import http.client
import urllib.parse

import clulib
from itlib import T
from s3lib import boto3_client, cluster, http_raw

t = T()
EP = cluster(t, "s3cors", targets=3)
g = cluster.nodes[0]
targets = list(cluster.nodes[1:])
s3 = boto3_client(EP)
B = "corsy"
s3.create_bucket(Bucket=B)
s3.put_object(Bucket=B, Key="obj", Body=b"x" * 1000)


def code_of(fn, **kw):
    try:
        fn(**kw)
        return (200, "")
    except Exception as e:  # noqa: BLE001 - botocore's ClientError
        r = getattr(e, "response", {})
        return (r.get("ResponseMetadata", {}).get("HTTPStatusCode"), r.get("Error", {}).get("Code"))


def preflight(base, origin, method, headers=None, path="/%s/obj" % B):
    h = {}
    if origin is not None:
        h["Origin"] = origin
    if method is not None:
        h["Access-Control-Request-Method"] = method
    if headers:
        h["Access-Control-Request-Headers"] = headers
    return http_raw(base, "OPTIONS", path, headers=h)


def with_origin(client, origin):
    def add(request, **kw):
        request.headers["Origin"] = origin
    client.meta.events.register("before-sign.s3", add)
    return client


# 1. nothing configured
t.eq(code_of(s3.get_bucket_cors, Bucket=B), (404, "NoSuchCORSConfiguration"), "GetBucketCors of a bucket without one")
st, _, body = preflight(EP, "http://a.example.com", "GET")
t.check(st == 403 and b"CORS is not enabled" in body, "preflight without configuration: 403", (st, body[:300]))

# 2. put and get, the same on every node
RULES = [
    {"ID": "web", "AllowedOrigins": ["http://app.test", "http://*.example.com"], "AllowedMethods": ["GET", "PUT"],
     "AllowedHeaders": ["x-amz-*", "content-type"], "ExposeHeaders": ["ETag", "x-amz-request-id"],
     "MaxAgeSeconds": 600},
    {"AllowedOrigins": ["*"], "AllowedMethods": ["HEAD"]},
]
r = s3.put_bucket_cors(Bucket=B, CORSConfiguration={"CORSRules": RULES})
t.eq(r["ResponseMetadata"]["HTTPStatusCode"], 200, "PutBucketCors: 200")
t.eq(s3.get_bucket_cors(Bucket=B)["CORSRules"], RULES, "GetBucketCors through the gateway: the rules")
seen = [boto3_client(tg.url).get_bucket_cors(Bucket=B)["CORSRules"] for tg in targets]
t.eq(seen, [RULES] * 3, "GetBucketCors straight from each target: the same rules (the BMD)")

# 3. preflight
for base, where in [(EP, "gateway")] + [(tg.url, tg.name) for tg in targets]:
    st, h, body = preflight(base, "http://app.test", "PUT", "X-Amz-Date, Content-Type")
    t.check(st == 200 and h.get("access-control-allow-origin") == "http://app.test" and
            h.get("access-control-allow-credentials") == "true" and
            h.get("access-control-allow-methods") == "GET, PUT" and
            h.get("access-control-allow-headers") == "X-Amz-Date, Content-Type" and
            h.get("access-control-max-age") == "600" and "Origin" in h.get("vary", ""),
            "preflight PUT from http://app.test (%s): 200 and the rule's headers" % where, (st, h, body[:200]))
st, h, _ = preflight(EP, "http://shop.example.com", "GET")
t.check(st == 200 and h.get("access-control-allow-origin") == "http://shop.example.com",
        "preflight from a wildcard origin http://*.example.com: allowed", (st, h))
st, h, _ = preflight(EP, "http://other.test", "HEAD")
t.check(st == 200 and h.get("access-control-allow-origin") == "*" and "access-control-allow-credentials" not in h,
        "preflight HEAD from any origin: the second rule, Allow-Origin *", (st, h))
for what, args in {"an origin no rule has": ("http://evil.test", "GET", None),
                   "a method no rule has": ("http://app.test", "DELETE", None),
                   "a header no rule allows": ("http://app.test", "GET", "x-custom"),
                   "the suffix of a wildcard origin only": ("http://example.com", "GET", None)}.items():
    st, h, body = preflight(EP, *args)
    t.check(st == 403 and b"This CORS request is not allowed" in body and "access-control-allow-origin" not in h,
            "preflight with %s: 403 not allowed" % what, (st, h, body[:300]))
st, _, body = preflight(EP, None, "GET")
t.check(st == 400 and b"Origin request header needed" in body, "preflight without Origin: 400", (st, body[:300]))
st, _, body = preflight(EP, "http://app.test", None)
t.check(st == 400 and b"Access-Control-Request-Method" in body, "preflight without a method: 400", (st, body[:300]))

# 4. actual requests
for base, where in [(EP, "gateway")] + [(tg.url, tg.name) for tg in targets]:
    c = with_origin(boto3_client(base), "http://app.test")
    r = c.get_object(Bucket=B, Key="obj")
    h = r["ResponseMetadata"]["HTTPHeaders"]
    t.check(h.get("access-control-allow-origin") == "http://app.test" and
            h.get("access-control-expose-headers") == "ETag, x-amz-request-id" and r["Body"].read() == b"x" * 1000,
            "GET with Origin sent to the %s: Allow-Origin and Expose-Headers" % where, h)
    st, hl, _ = http_raw(base, "GET", "/%s/obj" % B, headers={"Origin": "http://app.test"})
    t.check(st == 403 and hl.get("access-control-allow-origin") == "http://app.test",
            "anonymous GET with Origin sent to the %s: 403 with the CORS headers" % where, (st, hl))
c = with_origin(boto3_client(EP), "http://app.test")
try:
    c.get_object(Bucket=B, Key="missing")
    h = {}
except Exception as e:  # noqa: BLE001 - botocore's ClientError
    h = e.response["ResponseMetadata"]["HTTPHeaders"]
t.eq(h.get("access-control-allow-origin"), "http://app.test", "NoSuchKey with Origin: the CORS headers on the error")
c = with_origin(boto3_client(EP), "http://evil.test")
h = c.get_object(Bucket=B, Key="obj")["ResponseMetadata"]["HTTPHeaders"]
t.check("access-control-allow-origin" not in h, "GET from an origin no rule has: no CORS headers", h)
# an actual request naming another method in Access-Control-Request-Method
# is matched by that method (as Ceph's RGW, s3-tests' test_cors_origin_response)
st, hl, _ = http_raw(EP, "PUT", "/%s/obj2" % B, headers={"Origin": "http://other.test",
                                                         "Access-Control-Request-Method": "HEAD"})
t.check(st == 403 and hl.get("access-control-allow-origin") == "*" and hl.get("access-control-allow-methods") == "HEAD",
        "anonymous PUT with Access-Control-Request-Method HEAD: 403 with the HEAD rule's headers", (st, hl))
st, hl, _ = http_raw(EP, "PUT", "/%s/obj2" % B, headers={"Origin": "http://other.test"})
t.check(st == 403 and "access-control-allow-origin" not in hl, "anonymous PUT from that origin: no CORS headers",
        (st, hl))
# once only on a relayed answer: a raw GET to the gateway proxies to the owner
u = urllib.parse.urlsplit(EP)
hc = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
hc.request("GET", "/%s/obj" % B, headers={"Origin": "http://app.test"})
resp = hc.getresponse()
resp.read()
hc.close()
t.eq(len(resp.msg.get_all("Access-Control-Allow-Origin") or []), 1, "a relayed answer carries Allow-Origin once")

# 5. refusals
BAD = {
    "an unsupported method": ("InvalidRequest", [{"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}]),
    "two wildcards in an origin": ("InvalidRequest", [{"AllowedOrigins": ["http://*.*.x"], "AllowedMethods": ["GET"]}]),
    "a wildcard ExposeHeader": ("InvalidRequest", [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"],
                                                    "ExposeHeaders": ["*"]}]),
    "101 rules": ("InvalidRequest", [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}] * 101),
    "no AllowedOrigin": ("MalformedXML", [{"AllowedOrigins": [], "AllowedMethods": ["GET"]}]),
}
for what, (code, rules) in BAD.items():
    t.eq(code_of(s3.put_bucket_cors, Bucket=B, CORSConfiguration={"CORSRules": rules}), (400, code),
         "PutBucketCors with %s: 400 %s" % (what, code))
st = code_of(s3.put_bucket_cors, Bucket=B, CORSConfiguration={"CORSRules": []})
t.eq(st, (400, "MalformedXML"), "PutBucketCors without a rule: MalformedXML")
t.eq(s3.get_bucket_cors(Bucket=B)["CORSRules"], RULES, "after the refusals: the rules unchanged")

# 6. delete
r = s3.delete_bucket_cors(Bucket=B)
t.eq(r["ResponseMetadata"]["HTTPStatusCode"], 204, "DeleteBucketCors: 204")
t.eq(code_of(s3.get_bucket_cors, Bucket=B), (404, "NoSuchCORSConfiguration"), "after the delete: none")
st, _, body = preflight(EP, "http://app.test", "GET")
t.check(st == 403 and b"CORS is not enabled" in body, "preflight after the delete: 403", (st, body[:300]))
t.eq(code_of(s3.get_bucket_cors, Bucket="no-such-bucket"), (404, "NoSuchBucket"), "GetBucketCors of a missing bucket")

# 7. beside a bucket policy; a large configuration; gone with the bucket
POLICY = ('{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:GetObject",'
          '"Resource":"arn:aws:s3:::%s/secret/*"}]}' % B)
s3.put_bucket_policy(Bucket=B, Policy=POLICY)
BIG = [{"ID": "r%03d" % i, "AllowedOrigins": ["http://host-%03d.%s.test" % (i, "o" * 200)],
        "AllowedMethods": ["GET", "PUT", "HEAD"], "AllowedHeaders": ["x-amz-meta-%03d" % i]} for i in range(100)]
r = s3.put_bucket_cors(Bucket=B, CORSConfiguration={"CORSRules": BIG})
t.eq(r["ResponseMetadata"]["HTTPStatusCode"], 200, "PutBucketCors of 100 rules (about 30 KiB): 200")
seen = [boto3_client(tg.url).get_bucket_cors(Bucket=B)["CORSRules"] for tg in targets]
t.eq(seen, [BIG] * 3, "the 100 rules read back straight from each target")
st, h, _ = preflight(targets[-1].url, "http://host-099.%s.test" % ("o" * 200), "PUT", "x-amz-meta-099")
t.check(st == 200 and h.get("access-control-allow-origin", "").startswith("http://host-099."),
        "preflight matching the 100th rule: 200", (st, h))
t.eq(s3.get_bucket_policy(Bucket=B)["Policy"], POLICY, "the policy beside the CORS rules")
s3.delete_bucket_cors(Bucket=B)
t.eq(code_of(s3.get_bucket_cors, Bucket=B), (404, "NoSuchCORSConfiguration"), "DeleteBucketCors: no rules")
t.eq(s3.get_bucket_policy(Bucket=B)["Policy"], POLICY, "DeleteBucketCors keeps the policy")
s3.put_bucket_cors(Bucket=B, CORSConfiguration={"CORSRules": RULES})
s3.delete_bucket_policy(Bucket=B)
t.eq(code_of(s3.get_bucket_policy, Bucket=B), (404, "NoSuchBucketPolicy"), "DeleteBucketPolicy: no policy")
t.eq(s3.get_bucket_cors(Bucket=B)["CORSRules"], RULES, "DeleteBucketPolicy keeps the CORS rules")
# a target killed and started again reads them from its saved metadata
tk = targets[0]
tk.kill9()
t.check(tk.start(join=g.url), "a target killed and started again")
t.eq(boto3_client(tk.url).get_bucket_cors(Bucket=B)["CORSRules"], RULES,
     "the CORS rules straight from the restarted target")
# a policy that denies s3:PutBucketCORS (S3's action for Put and Delete) refuses both, GetBucketCors answers
DENY = ('{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:PutBucketCORS",'
        '"Resource":"arn:aws:s3:::%s"}]}' % B)
s3.put_bucket_policy(Bucket=B, Policy=DENY)
t.eq(code_of(s3.put_bucket_cors, Bucket=B, CORSConfiguration={"CORSRules": BIG[:1]}), (403, "AccessDenied"),
     "PutBucketCors denied by the bucket policy: 403")
t.eq(code_of(s3.delete_bucket_cors, Bucket=B), (403, "AccessDenied"), "DeleteBucketCors denied by the bucket policy: 403")
t.eq(s3.get_bucket_cors(Bucket=B)["CORSRules"], RULES, "GetBucketCors under that policy: the rules, unchanged")
s3.put_bucket_policy(Bucket=B, Policy=POLICY)
s3.delete_object(Bucket=B, Key="obj")
s3.delete_bucket(Bucket=B)
s3.create_bucket(Bucket=B)
t.eq(code_of(s3.get_bucket_cors, Bucket=B), (404, "NoSuchCORSConfiguration"),
     "a bucket deleted and created again: no CORS rules")
t.eq(code_of(s3.get_bucket_policy, Bucket=B), (404, "NoSuchBucketPolicy"),
     "a bucket deleted and created again: no policy")

# 9. "*" beside a named origin: any other origin gets "*", never its own name with credentials
s3.put_bucket_cors(Bucket=B, CORSConfiguration={"CORSRules": [
    {"AllowedOrigins": ["https://trusted.test", "*"], "AllowedMethods": ["GET"]}]})
s3.put_object(Bucket=B, Key="obj", Body=b"x")
for base in (EP, targets[0].url):
    st, h, _ = preflight(base, "https://evil.test", "GET")
    t.check(st == 200 and h.get("access-control-allow-origin") == "*" and
            "access-control-allow-credentials" not in h,
            "preflight from an origin only \"*\" lets in: Allow-Origin *, no credentials (%s)" % base, (st, h))
    st, h, _ = preflight(base, "https://trusted.test", "GET")
    t.check(st == 200 and h.get("access-control-allow-origin") == "https://trusted.test" and
            h.get("access-control-allow-credentials") == "true",
            "  from the named origin: echoed, with credentials", (st, h))
st, h, _ = http_raw(EP, "GET", "/%s/obj" % B, headers={"Origin": "https://evil.test"})
t.check(h.get("access-control-allow-origin") == "*" and "access-control-allow-credentials" not in h,
        "an actual request from that origin: Allow-Origin *, no credentials", (st, h))

clulib.check_logs(cluster.nodes)
t.finish()
