"""test_remote_honest.py - the answers of a remote bucket are honest, against
OpenStack Swift's S3 API (swiftlib: a Swift all-in-one with s3api) behind
a front aisd cluster (1 gateway + 2 targets):

 1. HEAD of an object not cached here (native and S3) is the remote's
    HEAD only: the right size and ETag, and nothing is fetched.
 2. DELETE of an object that exists neither here nor in Swift: native
    404 (as on a plain bucket); S3 204 (S3's rule) and nothing created.
 3. A listing that is not cached-only gives every entry the remote's
    fields, cached or not: the same fields, no local checksum/version.
 4. GET /v1/remotes is {"remotes":[...]} (docs/api.md); aisctl remote
    show reads it.
 5. A backend must name an attached remote and a bucket it has: creation
    with an unknown remote or a missing Swift bucket is 400 naming it.
 6. A backend bucket deleted in Swift: native and S3 listings are 502
    naming the remote and its bucket (not "bucket does not exist").
 7. A wrong secret: PUT, cold GET and listing (native, S3) are 403 saying
    the remote refused the credentials (not 503 "try again"); creating a
    bucket with it is 403.
 8. Swift stalled (SIGSTOP): native and S3 listings and a cold read are
    504 naming the remote (S3: GatewayTimeout).
 9. Swift down: native and S3 listings, cold reads, writes and deletes
    all answer 503 naming the remote (S3: ServiceUnavailable); creating
    a backend bucket says it could not check (503).
10. No error-level line in any aisd log.
"""
# timeout: 240
import functools
import json
import os
import signal
import time

from itlib import T

import clulib
import swiftlib
from clulib import poll, request

t = T()
JSON = {"Content-Type": "application/json"}
FAK, FSK = "frontkey", "frontsecret123"  # the front cluster's own S3 user
clulib.init(t, "honest", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                          "--set", "remote.timeout=5s",
                          "--set", "s3.key=%s:%s:front:Front" % (FAK, FSK)])
swift = swiftlib.Swift(t)
swift.start()
sw = swift.client()
if not t.check(swift.wait_up(), "Swift (s3api) answers"):
    t.finish()

g, ts = swiftlib.start_front(t)
ctl = functools.partial(swiftlib.ctl, g)
follow = functools.partial(swiftlib.follow, g)


def listing(bck, flags=0, prefix=""):
    body = json.dumps({"action": "list", "value": {"pagesize": 1000, "flags": flags, "prefix": prefix}})
    return request("GET", g.url, "/v1/buckets/" + bck, body, JSON, timeout=60)


def cached(bck, prefix=""):
    r = listing(bck, 1, prefix)
    return {x["name"] for x in r.json()["entries"]} if r.status == 200 else None


def create(bck, remote, rb):
    return request("POST", g.url, "/v1/buckets/" + bck,
                   json.dumps({"action": "create-bck",
                               "value": {"backend": {"provider": "s3", "remote": remote, "bucket": rb}}}), JSON,
                   timeout=60)


def attach(alias, secret):
    v = {"kind": "s3", "url": swift.url, "access_key": swiftlib.AK, "secret_key": secret}
    return request("PUT", g.url, "/v1/remotes/" + alias, json.dumps(v), JSON, timeout=60)


def s3err(fn):
    """(HTTP status, S3 code, message) of a call expected to fail."""
    import botocore.exceptions
    try:
        fn()
        return 200, "", ""
    except botocore.exceptions.ClientError as e:
        er = e.response.get("Error", {})
        return e.response["ResponseMetadata"]["HTTPStatusCode"], er.get("Code", ""), er.get("Message", "")


def msg(r):
    try:
        return r.json().get("message", "")
    except Exception:
        return r.body.decode(errors="replace")


s3 = swiftlib.s3c(g.url, FAK, FSK)
sw.create_bucket(Bucket="src")
BIG = os.urandom(3 << 20)
for n, b in {"big": BIG, "other": b"other", "warm": b"warm" * 100}.items():
    sw.put_object(Bucket="src", Key=n, Body=b)
t.eq(attach("swift", swiftlib.SK).status, 200, "remote swift attached")
t.eq(create("cache", "swift", "src").status, 200, "bucket cache -> s3://@swift/src")

# --- 1. HEAD reads metadata only ----------------------------------------------------------------
etag = sw.head_object(Bucket="src", Key="big")["ETag"]
r = follow("HEAD", "/v1/objects/cache/big")
t.check(r.status == 200 and r.h("content-length") == str(len(BIG)), "native HEAD of a cold object: its size",
        (r.status, r.h("content-length")))
h = s3.head_object(Bucket="cache", Key="big")
t.check(h["ContentLength"] == len(BIG) and h["ETag"] == etag, "S3 HEAD of a cold object: Swift's size and ETag",
        (h["ContentLength"], h["ETag"], etag))
time.sleep(1.5)  # a fetch, were one started, ends well within this (3 MiB on loopback)
t.eq(cached("cache"), set(), "HEAD fetched nothing: no object cached")

# --- 2. DELETE of an object that exists nowhere ----------------------------------------------------
r = follow("DELETE", "/v1/objects/cache/never-was")
t.check(r.status == 404, "native DELETE of an object in neither place: 404", (r.status, r.body[:200]))
st, code, m = s3err(lambda: s3.delete_object(Bucket="cache", Key="never-was"))
t.check(st in (200, 204), "S3 DeleteObject of a missing key: 204 (S3's rule)", (st, code, m))
t.eq([o["Key"] for o in sw.list_objects_v2(Bucket="src", Prefix="never").get("Contents", [])], [],
     "nothing appeared in Swift")
sw.put_object(Bucket="src", Key="del-me", Body=b"x")
t.eq(follow("DELETE", "/v1/objects/cache/del-me").status, 200, "native DELETE of an object only in Swift: 200")
t.eq(sw.list_objects_v2(Bucket="src", Prefix="del-me").get("KeyCount", 0), 0, "gone from Swift")

# --- 3. one set of fields per listing entry -------------------------------------------------------
t.eq(follow("GET", "/v1/objects/cache/warm").body, b"warm" * 100, "warm read (cached now)")
t.check(poll(lambda: "warm" in (cached("cache") or set()), 10), "warm is cached")
r = listing("cache")
ents = {e["name"]: e for e in r.json()["entries"]} if r.status == 200 else {}
w, o = ents.get("warm", {}), ents.get("other", {})


def filled(e):
    return {k for k, v in e.items() if k != "flags" and v not in ("", None, 0, "0")}


t.check(w and o and filled(w) == filled(o), "cached and uncached entries carry the same fields", (w, o))
t.check(bool(w.get("flags", 0) & 64) and not o.get("flags", 0) & 64, "cached flag right", (w, o))
t.check(not w.get("checksum") and not w.get("version"), "no local checksum or version in a remote listing", w)
t.check(("s3.etag=" + sw.head_object(Bucket="src", Key="warm")["ETag"].strip('"')) in w.get("custom", "") or
        "custom" not in w, "the cached entry's ETag is Swift's", w)
lo = s3.list_objects_v2(Bucket="cache", Prefix="warm")
t.eq([c["ETag"] for c in lo.get("Contents", [])], [sw.head_object(Bucket="src", Key="warm")["ETag"]],
     "S3 listing: Swift's ETag for the cached entry")

# --- 4. GET /v1/remotes ------------------------------------------------------------------------
r = request("GET", g.url, "/v1/remotes")
d = r.json() if r.status == 200 else None
t.check(isinstance(d, dict) and [x.get("alias") for x in d.get("remotes", [])] == ["swift"],
        "GET /v1/remotes: {\"remotes\":[...]} as docs/api.md says", r.body[:300])
rc, out = ctl("remote", "show")
t.check(rc == 0 and "swift" in out and swift.url in out, "aisctl remote show lists it", out)

# --- 5. a backend names an attached remote and an existing bucket -----------------------------------
r = create("b-noremote", "nosuch", "src")
t.check(r.status == 400 and "nosuch" in msg(r), "create with a remote not attached: 400 naming it",
        (r.status, r.body[:300]))
r = create("b-nobucket", "swift", "absent")
t.check(r.status == 400 and "absent" in msg(r) and "swift" in msg(r),
        "create with a bucket Swift does not have: 400 naming it and the remote", (r.status, r.body[:300]))
t.check(request("HEAD", g.url, "/v1/buckets/b-noremote").status == 404 and
        request("HEAD", g.url, "/v1/buckets/b-nobucket").status == 404, "neither was created")

# --- 6. a backend bucket gone from Swift ----------------------------------------------------------
sw.create_bucket(Bucket="gone")
t.eq(create("goner", "swift", "gone").status, 200, "bucket goner -> s3://@swift/gone")
sw.delete_bucket(Bucket="gone")
r = listing("goner")
t.check(r.status == 502 and "swift" in msg(r) and "gone" in msg(r) and 'bucket "goner" does not exist' not in msg(r),
        "native listing: 502 naming the remote and its missing bucket", (r.status, r.body[:400]))
st, code, m = s3err(lambda: s3.list_objects_v2(Bucket="goner"))
t.check(st == 502 and code == "BadGateway" and "swift" in m and "gone" in m,
        "S3 ListObjectsV2: 502 BadGateway naming them", (st, code, m))

# --- 7. a wrong secret is 403, not "try again" ------------------------------------------------------
t.eq(attach("swiftbad", swiftlib.SK).status, 200, "remote swiftbad attached (right secret)")
t.eq(create("badcred", "swiftbad", "src").status, 200, "bucket badcred -> s3://@swiftbad/src")
t.eq(attach("swiftbad", "not-the-secret").status, 200, "swiftbad re-attached with a wrong secret")
r = follow("PUT", "/v1/objects/badcred/x", b"data")
t.check(r.status == 403 and "swiftbad" in msg(r) and "credentials" in msg(r),
        "native PUT: 403, the remote refused the credentials", (r.status, r.body[:400]))
st, code, m = s3err(lambda: s3.put_object(Bucket="badcred", Key="x", Body=b"data"))
t.check(st == 403 and code == "AccessDenied" and "swiftbad" in m, "S3 PUT: 403 AccessDenied naming the remote",
        (st, code, m))
r = follow("GET", "/v1/objects/badcred/other")
t.check(r.status == 403 and "swiftbad" in msg(r), "native cold GET: 403 naming the remote", (r.status, r.body[:300]))
st, code, m = s3err(lambda: s3.get_object(Bucket="badcred", Key="other"))
t.check(st == 403 and code == "AccessDenied" and "swiftbad" in m, "S3 cold GET: 403 AccessDenied", (st, code, m))
r = listing("badcred")
t.check(r.status == 403 and "swiftbad" in msg(r) and "credentials" in msg(r), "native listing: 403 naming the remote",
        (r.status, r.body[:400]))
st, code, m = s3err(lambda: s3.list_objects_v2(Bucket="badcred"))
t.check(st == 403 and code == "AccessDenied" and "swiftbad" in m, "S3 ListObjectsV2: 403 AccessDenied naming it",
        (st, code, m))
r = create("badcred2", "swiftbad", "src")
t.check(r.status == 403 and "swiftbad" in msg(r), "create with a refused credential: 403 naming the remote",
        (r.status, r.body[:300]))

# --- 8. Swift stalled (SIGSTOP): 504 naming it, native and S3 ----------------------------------------
os.kill(swift.procs["proxy"].pid, signal.SIGSTOP)
try:
    t0 = time.time()
    r = listing("cache")
    t.check(r.status == 504 and "swift" in msg(r), "native listing: 504 naming the remote (remote.timeout 5s)",
            (r.status, r.body[:400], time.time() - t0))
    st, code, m = s3err(lambda: s3.list_objects_v2(Bucket="cache"))
    t.check(st == 504 and code == "GatewayTimeout" and "swift" in m, "S3 ListObjectsV2: 504 naming the remote",
            (st, code, m))
    r = follow("GET", "/v1/objects/cache/other")
    t.check(r.status == 504 and b"swift" in r.body, "native cold GET: 504 naming the remote", (r.status, r.body[:300]))
finally:
    os.kill(swift.procs["proxy"].pid, signal.SIGCONT)

# --- 9. Swift down: the same classes everywhere -------------------------------------------------------
swift.stop()
r = listing("cache")
t.check(r.status == 503 and "swift" in msg(r), "native listing: 503 naming the remote", (r.status, r.body[:400]))
st, code, m = s3err(lambda: s3.list_objects_v2(Bucket="cache"))
t.check(st == 503 and code == "ServiceUnavailable" and "swift" in m, "S3 ListObjectsV2: 503 naming the remote",
        (st, code, m))
r = follow("GET", "/v1/objects/cache/other")
t.check(r.status == 503 and b"swift" in r.body, "native cold GET: 503 naming the remote", (r.status, r.body[:300]))
st, code, m = s3err(lambda: s3.get_object(Bucket="cache", Key="other"))
t.check(st == 503 and code == "ServiceUnavailable" and "swift" in m, "S3 cold GET: 503 naming the remote",
        (st, code, m))
r = follow("PUT", "/v1/objects/cache/new", b"new")
t.check(r.status == 503 and b"swift" in r.body, "native PUT: 503 naming the remote", (r.status, r.body[:300]))
st, code, m = s3err(lambda: s3.put_object(Bucket="cache", Key="new", Body=b"new"))
t.check(st == 503 and code == "ServiceUnavailable" and "swift" in m, "S3 PUT: 503 naming the remote",
        (st, code, m))
r = follow("DELETE", "/v1/objects/cache/warm")
t.check(r.status == 503 and b"swift" in r.body, "native DELETE: 503 naming the remote", (r.status, r.body[:300]))
st, code, m = s3err(lambda: s3.delete_object(Bucket="cache", Key="warm"))
t.check(st == 503 and code == "ServiceUnavailable" and "swift" in m, "S3 DELETE: 503 naming the remote",
        (st, code, m))
r = create("b-down", "swift", "src")
t.check(r.status == 503 and "could not check" in msg(r) and "swift" in msg(r),
        "create while Swift is down: 503, it could not check", (r.status, r.body[:300]))

clulib.check_logs([g] + ts)
t.finish()
