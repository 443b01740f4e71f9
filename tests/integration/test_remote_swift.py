"""test_remote_swift.py - aisd in front of OpenStack Swift's S3 API: a
Swift all-in-one (proxy with s3api + tempauth, account, container and
object servers from Debian's swift packages, one device in a temp dir,
rings built here) on loopback ports, and a front aisd cluster (1 gateway
+ 2 targets) whose bucket "cache" has Swift's bucket "src" as its S3
backend (SigV4 by aisd's own signer). Every process is started here and
stopped by PID.

Checks:
 1. Cold GET byte for byte (0 B, 10 KiB, 5 MiB, 40 MiB as a blob
    download), native and S3; the ETag S3 clients see is Swift's; warm.
 2. Range on a cold object (nothing cached).
 3. PUT (native, S3) and DELETE written through to Swift.
 4. Listing 2,500 Swift objects in pages with cached flags; flags=1.
 5. prefetch (template) and evict (prefix) jobs.
 6. validate_warm_get: an object overwritten in Swift is fetched again.
 7. Swift stopped: warm served, cold GET 503 naming the remote; Swift
    back: cold GETs work.
 8. No error-level line in any aisd log.
"""
# timeout: 240
import concurrent.futures
import functools
import hashlib
import json
import os

from itlib import T, q

import clulib
import swiftlib
from clulib import request

t = T()
JSON = {"Content-Type": "application/json"}
AK, SK = swiftlib.AK, swiftlib.SK

FAK, FSK = "frontkey", "frontsecret123"  # the front cluster's own S3 user
clulib.init(t, "swift", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                         "--set", "s3.key=%s:%s:front:Front" % (FAK, FSK)])
swift = swiftlib.Swift(t)
SWURL = swift.url
swift_start, swift_stop, s3c = swift.start, swift.stop, swiftlib.s3c


swift_start()
sw = swift.client()
if not t.check(swift.wait_up(), "Swift (s3api) answers"):
    t.finish()

g, ts = swiftlib.start_front(t)
ctl = functools.partial(swiftlib.ctl, g)
follow = functools.partial(swiftlib.follow, g)


def get(name, headers=None):
    return follow("GET", "/v1/objects/cache/" + q(name), headers=headers)


def listing(flags=0, prefix=""):
    out, token = [], ""
    for _ in range(100):
        body = json.dumps({"action": "list", "value": {"pagesize": 1000, "continuation_token": token,
                                                         "flags": flags, "prefix": prefix}})
        r = request("GET", g.url, "/v1/buckets/cache", body, JSON)
        if r.status != 200:
            return None
        d = r.json()
        out += d["entries"]
        token = d["continuation_token"]
        if not token:
            return out
    return None


def cached(prefix=""):
    e = listing(1, prefix)
    return {x["name"] for x in e} if e is not None else None


def data(n, seed):
    blk = hashlib.sha256(b"%d" % seed).digest() * 2048
    return (blk * (n // len(blk) + 1))[:n]


# --- Swift's bucket -------------------------------------------------------------------------------
sw.create_bucket(Bucket="src")
BODY = {"zero": b"", "ten-k": data(10 << 10, 1), "five-m": data(5 << 20, 2), "blob": data(40 << 20, 3),
        "ranged": data(2 << 20, 4), "changes": b"v1" * 500}
for n, b in BODY.items():
    sw.put_object(Bucket="src", Key=n, Body=b)
skf = os.path.join(clulib.DIR, "sk")
with open(skf, "w") as f:
    f.write(SK + "\n")
rc, out = ctl("remote", "attach", "swift", SWURL, "--access-key", AK, "--secret-key-file", skf, "--blob-min", "16MiB")
t.check(rc == 0, "aisctl remote attach swift", out)
rc, out = ctl("bucket", "create", "cache", "--backend", "s3://@swift/src")
t.check(rc == 0, "bucket create cache --backend s3://@swift/src", out)

# --- 1. cold, warm ---------------------------------------------------------------------------------
for n in ("zero", "ten-k", "five-m", "blob"):
    r = get(n)
    t.check(r.status == 200 and r.body == BODY[n], "cold GET %s byte for byte" % n, (r.status, len(r.body), r.body[:200]))
t.check({"zero", "ten-k", "five-m", "blob"} <= (cached() or set()), "cold GETs are cached")
t.check("blob download src/blob" in "".join(open(x.log, errors="replace").read() for x in ts),
        "the 40 MiB object came as a blob download (parallel ranges)")
r = get("blob")
t.check(r.status == 200 and r.body == BODY["blob"], "warm GET")
s3 = s3c(g.url, FAK, FSK)
o = s3.get_object(Bucket="cache", Key="five-m")
t.check(o["Body"].read() == BODY["five-m"] and o["ETag"] == sw.head_object(Bucket="src", Key="five-m")["ETag"],
        "S3 GET through aisd: Swift's ETag")

# --- 2. Range on a cold object -------------------------------------------------------------------
r = get("ranged", {"Range": "bytes=100000-100999"})
t.check(r.status == 206 and r.body == BODY["ranged"][100000:101000], "Range of a cold object", r.status)
t.check("ranged" not in (cached() or {"ranged"}), "nothing cached by it")

# --- 3. write-through -----------------------------------------------------------------------------
nb = data(3 << 20, 9)
t.eq(follow("PUT", "/v1/objects/cache/new/native", nb).status, 200, "native PUT")
t.eq(sw.get_object(Bucket="src", Key="new/native")["Body"].read(), nb, "in Swift")
s3.put_object(Bucket="cache", Key="new/s3", Body=b"via s3")
t.eq(sw.get_object(Bucket="src", Key="new/s3")["Body"].read(), b"via s3", "S3 PUT in Swift")
t.eq(follow("DELETE", "/v1/objects/cache/new/native").status, 200, "native DELETE")
s3.delete_object(Bucket="cache", Key="new/s3")
left = [o["Key"] for o in sw.list_objects_v2(Bucket="src", Prefix="new/").get("Contents", [])]
t.eq(left, [], "both deletes reached Swift")

# --- 4. listing 2,500 ------------------------------------------------------------------------------
N = 2500
with concurrent.futures.ThreadPoolExecutor(16) as ex:
    list(ex.map(lambda i: sw.put_object(Bucket="src", Key="many/%05d" % i, Body=b"%d" % i), range(N)))
for i in range(10):
    get("many/%05d" % i)
ents = listing(prefix="many/") or []
t.check([e["name"] for e in ents] == ["many/%05d" % i for i in range(N)], "Swift listing, paged: every name once",
        len(ents))
t.check(all(bool(e.get("flags", 0) & 64) == (int(e["name"][5:]) < 10) for e in ents), "cached flags right")
t.eq(cached("many/"), {"many/%05d" % i for i in range(10)}, "flags=1: the cached only")

# --- 5. prefetch, evict ------------------------------------------------------------------------------
rc, out = ctl("prefetch", "cache", "--template", "many/{00100..00299}")
rc2, out2 = ctl("job", "wait", "prefetch", "--timeout-s", "90")
tot = json.loads(ctl("--json", "job", "show", "prefetch")[1]).get("totals", {})
t.check(rc == 0 and rc2 == 0 and tot.get("moved") == 200 and tot.get("errors") == 0, "prefetch 200 from Swift",
        (out, out2, tot))
t.check({"many/%05d" % i for i in range(100, 300)} <= (cached("many/") or set()), "prefetched objects cached")
rc, out = ctl("evict", "cache", "--prefix", "many/")
ctl("job", "wait", "evict", "--timeout-s", "60")
t.eq(cached("many/"), set(), "evict drops them here")
t.eq(sw.get_object(Bucket="src", Key="many/00150")["Body"].read(), b"150", "Swift keeps them")

# --- 6. validate_warm_get --------------------------------------------------------------------------
t.eq(get("changes").body, BODY["changes"], "changes cached")
ctl("bucket", "props", "set", "cache", "backend.validate_warm_get=true")
sw.put_object(Bucket="src", Key="changes", Body=b"v2" * 300)
t.eq(get("changes").body, b"v2" * 300, "validate_warm_get: overwritten in Swift, fetched again")
ctl("bucket", "props", "set", "cache", "backend.validate_warm_get=false")

# --- 7. Swift down -------------------------------------------------------------------------------------
swift_stop()
r = get("blob")
t.check(r.status == 200 and r.body == BODY["blob"], "Swift down: warm served")
r = get("ranged")
t.check(r.status in (502, 503) and b"swift" in r.body, "Swift down: cold GET fails cleanly naming it",
        (r.status, r.body[:300]))
swift_start()
t.check(swift.wait_up(), "Swift back")
r = get("ranged")
t.check(r.status == 200 and r.body == BODY["ranged"], "Swift back: cold GET works",
        (r.status, r.body[:300] if r.status != 200 else "%d bytes of %d" % (len(r.body), len(BODY["ranged"]))))

swift_stop()
clulib.check_logs([g] + ts)
t.finish()
