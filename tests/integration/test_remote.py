"""test_remote.py - aisd as a cache in front of remote buckets: a second
aisd cluster (1 gateway + 1 target, S3 SigV4 auth on) is the remote, as
an S3-compatible endpoint (remote "r1", buckets s3://@r1/...) and through
its native API (remote "r2", ais://@r2/...). The front cluster is
1 gateway + 2 targets. Every process is started here on loopback ports
and stopped by PID.

Checks:
 1. aisctl remote attach/show/detach: secrets kept out of GET /v1/remotes,
    the BMD and logs; remotes.json is 0600 on every node; bucket create
    --backend; detaching a remote in use is refused (409).
 2. Cold GET byte for byte (0 B, 10 KiB, 5 MiB, 48 MiB) through the
    native API and S3 (boto3), for both remotes (r2 fetches objects of 16
    MiB or more as a blob download: parallel ranges); the ETag S3 clients
    see is the remote's; then warm (cached flag in the listing).
 3. Range GET of a cold object: the right bytes, and nothing cached.
 4. Four concurrent cold GETs of one object: one GET reaches the remote
    (its gateway's request counter), every client gets the same bytes.
 5. Write-through: native and S3 PUT land on the remote and here; DELETE
    removes both.
 6. Listing 2,500 remote objects in pages: every name once, cached flags
    right; flags=1 (--cached) lists only what is here.
 7. validate_warm_get + sync: an object changed on the remote is
    refetched; one deleted there answers 404 and is dropped here.
 8. The remote down: warm objects served, a cold GET is 503 naming the
    remote (native JSON, S3 XML), a PUT is refused (503) and not stored;
    the remote back: cold GETs work again.
 9. kill -9 of the target in the middle of a cold GET: no partial object
    is visible after its restart, and the next GET returns it whole.
10. No error-level line in any node's log.
"""
# timeout: 240
import concurrent.futures
import hashlib
import http.client
import json
import os
import re
import stat
import subprocess
import threading
import time
import urllib.parse

from itlib import T, q

import clulib
from clulib import Node, poll, request

AK, SK = "remotekey", "remotesecret123"
JSON = {"Content-Type": "application/json"}
CTL = os.environ["AISCTL"]

t = T()
BASE = ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never"]
clulib.init(t, "remote", BASE)


def data(n, seed):
    blk = hashlib.sha256(b"%d" % seed).digest() * 2048  # 64 KiB
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(b"%d-%d" % (seed, i)).digest()[:4] + blk[4:]
        i += 1
    return bytes(out[:n])


def start(nodes, join=None):
    for n in nodes:
        if not t.check(n.start(join=join(n) if join else None), "%s starts" % n.name):
            t.finish()


# --- the remote cluster: S3 auth on --------------------------------------------
clulib.ARGS = BASE + ["--set", "s3.auth=true", "--set", "s3.key=%s:%s:remote-user:Remote" % (AK, SK)]
rg, rt = Node("rg1", "gateway"), Node("rt1", "target")
start([rg])
start([rt], join=lambda n: rg.url)
poll(lambda: clulib.smap_ids(rg) == {rg.id, rt.id}, 20)
# --- the front cluster ----------------------------------------------------------
clulib.ARGS = BASE + ["--set", "s3.key=%s:%s:front-user:Front" % (AK, SK)]
g = Node("g1", "gateway")
ts = [Node("t1", "target"), Node("t2", "target")]
start([g])
start(ts, join=lambda n: g.url)
t.check(poll(lambda: clulib.smap_ids(g) == {g.id} | {x.id for x in ts}, 20), "the front cluster forms")
ALL = [rg, rt, g] + ts


def ctl(*args, endpoint=None):
    cp = subprocess.run([CTL, "-e", endpoint or g.url] + list(args), stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return cp.returncode, cp.stdout.decode() + cp.stderr.decode()


def follow(method, url, path, body=None, headers=None, timeout=60):
    """One request, the 307 followed once (a body goes only to where the
    redirect points: a gateway does not read it)."""
    r = request(method, url, path, b"" if body else None, headers, timeout=timeout)
    if r.status != 307:
        return r
    loc = urllib.parse.urlsplit(r.h("location"))
    return request(method, "http://" + loc.netloc, loc.path + ("?" + loc.query if loc.query else ""), body,
                   headers, timeout=timeout)


def rput(bck, name, body):
    return follow("PUT", rg.url, "/v1/objects/%s/%s" % (bck, q(name)), body)


def get(bck, name, headers=None, node=None):
    return follow("GET", (node or g).url, "/v1/objects/%s/%s" % (bck, q(name)), headers=headers)


def listing(bck, flags=0, pagesize=1000, prefix=""):
    out, token = [], ""
    for _ in range(100):
        body = json.dumps({"action": "list", "value": {"pagesize": pagesize, "continuation_token": token,
                                                         "flags": flags, "prefix": prefix}})
        r = request("GET", g.url, "/v1/buckets/" + bck, body, JSON)
        if r.status != 200:
            return None, r
        d = r.json()
        out += d["entries"]
        token = d["continuation_token"]
        if not token:
            return out, r
    return None, None


def cached(bck, prefix=""):
    ents, r = listing(bck, flags=1, prefix=prefix)
    return {e["name"] for e in ents} if ents is not None else None


def s3c(endpoint):
    import boto3
    import botocore.config
    c = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=AK, aws_secret_access_key=SK,
                        region_name="us-east-1", config=c)


def remote_gets():
    """S3 GETs the remote's gateway answered so far (its metrics)."""
    r = request("GET", rg.url, "/metrics")
    n = 0
    for line in r.body.decode().splitlines():
        if line.startswith("aisd_http_requests_total{") and 'route="/"' in line and 'method="GET"' in line:
            n += int(line.rsplit(" ", 1)[1])
    return n


# --- remote objects ---------------------------------------------------------------
t.eq(request("POST", rg.url, "/v1/buckets/src", json.dumps({"action": "create-bck"}), JSON).status, 200,
     "remote bucket src created")
SIZES = {"zero": 0, "ten-k": 10 << 10, "five-m": 5 << 20, "big": 48 << 20, "ranged": 3 << 20,
         "conc": 24 << 20, "changes": 1000, "deleted": 2000, "warm": 4096, "killed": 160 << 20, "mirrored": 100 << 10}
BODY = {n: data(sz, i) for i, (n, sz) in enumerate(SIZES.items())}
for n, b in BODY.items():
    t.check(rput("src", n, b).status == 200, "remote PUT %s (%d bytes)" % (n, len(b)))

# --- 1. remotes and buckets ------------------------------------------------------------
skf = os.path.join(clulib.DIR, "sk")
with open(skf, "w") as f:
    f.write(SK + "\n")
rc, out = ctl("remote", "attach", "r1", rg.url, "--kind", "s3", "--access-key", AK, "--secret-key-file", skf)
t.check(rc == 0, "aisctl remote attach r1 (S3, SigV4)", out)
rc, out = ctl("remote", "attach", "r2", rg.url, "--kind", "ais", "--blob-min", "16MiB")
t.check(rc == 0, "aisctl remote attach r2 (aisd native; blob download from 16 MiB)", out)
rc, out = ctl("remote", "show")
t.check(rc == 0 and "r1" in out and "r2" in out and SK not in out, "remote show lists both, no secret", out)
r = request("GET", g.url, "/v1/remotes")
t.check(r.status == 200 and SK.encode() not in r.body and b'"access_key_set":true' in r.body,
        "GET /v1/remotes: no secret", r.body[:300])
for n in [g] + ts:
    p = os.path.join(n.dir, "meta" if n.role == "gateway" else "mp1", "remotes.json")
    if n.role == "target":
        cand = [os.path.join(n.dir, "mp1", "remotes.json")]
        p = next((c for c in cand if os.path.exists(c)), p)
    t.check(os.path.exists(p) and stat.S_IMODE(os.stat(p).st_mode) == 0o600, "%s: %s is 0600" % (n.name, p))
rc, out = ctl("bucket", "create", "cache", "--backend", "s3://@r1/src")
t.check(rc == 0, "bucket create cache --backend s3://@r1/src", out)
rc, out = ctl("bucket", "create", "cache2", "--backend", "ais://@r2/src")
t.check(rc == 0, "bucket create cache2 --backend ais://@r2/src", out)
rc, out = ctl("bucket", "create", "bad", "--backend", "gs://x")
t.check(rc != 0, "a bad --backend is refused", out)
r = request("HEAD", g.url, "/v1/buckets/cache")
props = json.loads(r.h("ais-bucket-props") or "{}")
t.eq(props.get("backend", {}).get("remote"), "r1", "bucket props name the remote")
bmd = request("GET", g.url, "/v1/cluster?what=bmd").body
t.check(SK.encode() not in bmd and rg.url.encode() not in bmd, "the BMD holds neither secret nor endpoint")
rc, out = ctl("remote", "detach", "r1")
t.check(rc != 0 and "cache" in out, "detaching a remote in use is refused", out)

# --- 2. cold and warm GETs ---------------------------------------------------------
for bck in ("cache", "cache2"):
    for n in ("zero", "ten-k", "five-m", "big"):
        r = get(bck, n)
        t.check(r.status == 200 and r.body == BODY[n], "%s: cold GET %s byte for byte" % (bck, n),
                (r.status, len(r.body), r.body[:200]))
    c = cached(bck)
    t.check(c is not None and {"zero", "ten-k", "five-m", "big"} <= c, "%s: cold GETs are cached" % bck, c)
    r = get(bck, "big")
    t.check(r.status == 200 and r.body == BODY["big"], "%s: warm GET big" % bck)
logs = "".join(open(x.log, errors="replace").read() for x in ts)
t.check("blob download src/big: 50331648 bytes in 6 ranges" in logs, "cache2's big came as a blob download")
t.check("blob download src/five-m" not in logs, "smaller objects in one GET")
s3 = s3c(g.url)
o = s3.get_object(Bucket="cache", Key="five-m")
t.check(o["Body"].read() == BODY["five-m"], "S3 GET (boto3) of a cached object")
remote_etag = s3c(rg.url).head_object(Bucket="src", Key="warm")["ETag"]
o = s3.get_object(Bucket="cache", Key="warm")
t.check(o["Body"].read() == BODY["warm"] and o["ETag"] == remote_etag, "S3 cold GET: the remote's ETag",
        (o["ETag"], remote_etag))
r = get("cache", "nope")
t.eq(r.status, 404, "a name the remote lacks is 404")

r = request("PATCH", g.url, "/v1/buckets/cache2",
            json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
t.eq(r.status, 200, "mirror copies=2 on a remote bucket")


def settled():
    """Every target has the gateway's BMD and the rebalance it started is done."""
    v = json.loads(request("GET", g.url, "/v1/daemon?what=bmd").body or b"{}").get("version", 0)
    vs = [json.loads(request("GET", x.url, "/v1/daemon?what=bmd").body or b"{}").get("version", -1) for x in ts]
    reb = json.loads(request("GET", g.url, "/v1/cluster?what=rebalance").body or b"{}")
    return all(x >= v for x in vs) and reb.get("state") in ("done", "idle")


t.check(poll(settled, 30), "every target has copies=2 and the rebalance is done")
t.eq(get("cache2", "mirrored").body, BODY["mirrored"], "cold GET in a mirrored remote bucket")


def have():
    return [request("GET", x.url, "/v1/objects/cache2/mirrored", headers={"Ais-Intra": "test"}).body ==
            BODY["mirrored"] for x in ts]


# the second copy is sent once the fetch has ended, which may be after the
# client has its last byte
t.check(poll(lambda: all(have()), 10), "the fetched object has its 2 copies", have())
request("PATCH", g.url, "/v1/buckets/cache2",
        json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": False}}}), JSON)

# --- 3. Range on a cold object -------------------------------------------------------
r = get("cache", "ranged", headers={"Range": "bytes=1000000-1000999"})
t.check(r.status == 206 and r.body == BODY["ranged"][1000000:1001000], "Range of a cold object", (r.status, len(r.body)))
t.check("ranged" not in (cached("cache") or {"ranged"}), "a cold Range caches nothing")
o = s3.get_object(Bucket="cache", Key="ranged", Range="bytes=5-9")
t.check(o["Body"].read() == BODY["ranged"][5:10], "S3 Range of a cold object")

# HEAD of a cold object: the remote's metadata, nothing fetched; DELETE of a
# name neither side has: 404 (both kinds of remote)
for bck in ("cache", "cache2"):
    r = follow("HEAD", g.url, "/v1/objects/%s/killed" % bck)
    t.check(r.status == 200 and r.h("content-length") == str(len(BODY["killed"])),
            "%s: HEAD of a cold object: its size" % bck, (r.status, r.h("content-length")))
    r = follow("DELETE", g.url, "/v1/objects/%s/never-was" % bck)
    t.check(r.status == 404, "%s: DELETE of a name neither side has: 404" % bck, (r.status, r.body[:200]))
time.sleep(1)  # a fetch, were one started, ends well within this
t.check("killed" not in (cached("cache") or {"killed"}) and "killed" not in (cached("cache2") or {"killed"}),
        "a HEAD caches nothing")

# --- 4. concurrent cold GETs: one remote fetch -----------------------------------------
before = remote_gets()
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    res = list(ex.map(lambda _: get("cache", "conc"), range(4)))
t.check(all(x.status == 200 and x.body == BODY["conc"] for x in res), "4 concurrent cold GETs: same bytes")
t.eq(remote_gets() - before, 1, "4 concurrent cold GETs: one GET to the remote")

# --- 5. write-through ------------------------------------------------------------------
nb = data(3 << 20, 99)
r = follow("PUT", g.url, "/v1/objects/cache/" + q("new/native"), nb)
t.eq(r.status, 200, "native PUT into a remote bucket")
r = follow("GET", rg.url, "/v1/objects/src/" + q("new/native"))
t.check(r.status == 200 and r.body == nb, "the PUT is on the remote")
t.check("new/native" in (cached("cache", "new/") or set()), "and cached here")
s3.put_object(Bucket="cache", Key="new/s3", Body=b"s3 body")
r = follow("GET", rg.url, "/v1/objects/src/new/s3")
t.check(r.status == 200 and r.body == b"s3 body", "S3 PUT written through")
r = follow("DELETE", g.url, "/v1/objects/cache/" + q("new/native"))
t.eq(r.status, 200, "native DELETE")
t.eq(follow("GET", rg.url, "/v1/objects/src/new/native").status, 404, "DELETE removed the remote object")
t.check("new/native" not in (cached("cache", "new/") or {"new/native"}), "and the cached copy")
s3.delete_object(Bucket="cache", Key="new/s3")
t.eq(follow("GET", rg.url, "/v1/objects/src/new/s3").status, 404, "S3 DELETE written through")

# --- 6. listing 2,500 remote objects ---------------------------------------------------
N = 2500
with concurrent.futures.ThreadPoolExecutor(8) as ex:
    st = list(ex.map(lambda i: rput("src", "many/%05d" % i, b"m%d" % i).status, range(N)))
t.check(all(s == 200 for s in st), "%d small objects on the remote" % N)
for i in range(0, 30):
    get("cache", "many/%05d" % i)
ents, r = listing("cache", pagesize=1000, prefix="many/")
names = [e["name"] for e in ents] if ents else []
t.check(names == ["many/%05d" % i for i in range(N)], "remote listing: every name once, in order, paged",
        (len(names), r))
flags = {e["name"]: e.get("flags", 0) & 64 for e in ents or []}
t.check(all(flags["many/%05d" % i] for i in range(30)) and not any(flags["many/%05d" % i] for i in range(30, N)),
        "cached flags right")
t.eq(cached("cache", "many/"), {"many/%05d" % i for i in range(30)}, "flags=1 lists the cached only")
ls = s3.list_objects_v2(Bucket="cache", Prefix="many/", MaxKeys=1000)
t.check(ls["KeyCount"] == 1000 and ls["IsTruncated"], "S3 ListObjectsV2 of a remote bucket", ls.get("KeyCount"))
rc, out = ctl("ls", "cache/many/00", "--cached")
t.check(rc == 0 and "many/00029" in out and "many/00030" not in out, "aisctl ls --cached", out[-300:])

# --- 7. validate_warm_get + sync -------------------------------------------------------------
for n in ("changes", "deleted"):
    t.eq(get("cache", n).body, BODY[n], "cached " + n)
r = request("PATCH", g.url, "/v1/buckets/cache",
            json.dumps({"action": "set-bprops", "value": {"backend": {"validate_warm_get": True, "sync": True}}}), JSON)
t.eq(r.status, 200, "set-bprops backend.validate_warm_get, sync")
nb2 = b"changed remotely" * 100
rput("src", "changes", nb2)
follow("DELETE", rg.url, "/v1/objects/src/deleted")
time.sleep(0.5)
t.eq(get("cache", "changes").body, nb2, "validate_warm_get: the changed object is fetched again")
t.eq(get("cache", "deleted").status, 404, "sync: a remote deletion is 404")
t.check("deleted" not in (cached("cache") or {"deleted"}), "and the cached copy is gone")
request("PATCH", g.url, "/v1/buckets/cache",
        json.dumps({"action": "set-bprops", "value": {"backend": {"validate_warm_get": False, "sync": False}}}), JSON)

# --- 7b. prefetch and evict jobs ------------------------------------------------------------
rc, out = ctl("prefetch", "cache", "--template", "many/{00100..00199}")
t.check(rc == 0, "aisctl prefetch --template", out)
rc, out = ctl("job", "wait", "prefetch", "--timeout-s", "60")
t.check(rc == 0, "aisctl job wait prefetch", out)
rc, out = ctl("--json", "job", "show", "prefetch")
doc = json.loads(out) if rc == 0 else {}
tot = doc.get("totals", {})
t.check(doc.get("state") == "done" and tot.get("moved") == 100 and tot.get("errors") == 0,
        "job show prefetch: done, 100 fetched, no error", out[:400])
t.check({"many/%05d" % i for i in range(100, 200)} <= (cached("cache", "many/") or set()),
        "the prefetched objects are cached")
m = request("GET", ts[0].url, "/metrics").body.decode()
t.check('job="prefetch"' in m, "/metrics has the prefetch job")
r = request("POST", g.url, "/v1/buckets/cache", json.dumps({"action": "prefetch-listrange",
                                                             "value": {"list": ["many/00300", "nope"]}}), JSON)
t.eq(r.status, 200, "prefetch a list (one name missing)")
poll(lambda: json.loads(ctl("--json", "job", "show", "prefetch")[1]).get("state") == "done", 30)
tot = json.loads(ctl("--json", "job", "show", "prefetch")[1]).get("totals", {})
t.check(tot.get("moved") == 1 and tot.get("errors") == 1, "a missing name is an error of the job, the rest fetched", tot)
rc, out = ctl("evict", "cache", "--prefix", "many/")
t.check(rc == 0, "aisctl evict --prefix", out)
rc, out = ctl("job", "wait", "evict", "--timeout-s", "60")
t.eq(cached("cache", "many/"), set(), "evict: nothing of many/ cached")
r = follow("GET", rg.url, "/v1/objects/src/many/00150")
t.check(r.status == 200 and r.body == b"m150", "evict keeps the remote's objects")
r = request("POST", g.url, "/v1/buckets/plain", json.dumps({"action": "create-bck"}), JSON)
r = request("POST", g.url, "/v1/buckets/plain", json.dumps({"action": "evict-listrange"}), JSON)
t.eq(r.status, 400, "evict of a bucket without a backend is refused")

# --- 8. the remote down ----------------------------------------------------------------------
get("cache2", "warm")
for n in (rt, rg):
    clulib.procs[n.name].terminate()
    clulib.procs[n.name].wait(15)
r = get("cache2", "warm")
t.check(r.status == 200 and r.body == BODY["warm"], "remote down: a warm object is served")
r = get("cache2", "ranged")
t.check(r.status == 503 and b"r2" in r.body, "remote down: cold GET is 503 naming the remote", (r.status, r.body[:300]))
r = get("cache", "ranged")
t.check(r.status == 503 and b"r1" in r.body, "remote down (S3 remote): 503 naming it", (r.status, r.body[:300]))
try:
    s3.get_object(Bucket="cache", Key="ranged")
    t.fail("S3 cold GET with the remote down fails")
except Exception as e:  # botocore ClientError
    t.check("503" in str(e) or "ServiceUnavailable" in str(e), "S3 cold GET, remote down: ServiceUnavailable", str(e))
r = follow("PUT", g.url, "/v1/objects/cache2/down", b"x" * 100)
t.check(r.status == 503 and b"r2" in r.body, "remote down: PUT refused (503)", (r.status, r.body[:300]))
t.check("down" not in (cached("cache2") or {"down"}), "and not stored here")
start([rg])
start([rt], join=lambda n: rg.url)
poll(lambda: clulib.smap_ids(rg) == {rg.id, rt.id}, 20)
r = get("cache2", "ranged")
t.check(r.status == 200 and r.body == BODY["ranged"], "remote back: cold GET works")

# --- 9. kill -9 mid cold GET ------------------------------------------------------------------
first = request("GET", g.url, "/v1/objects/cache2/killed")
loc = urllib.parse.urlsplit(first.h("location") or "")
victim = next((x for x in ts if x.port == loc.port), None)
if t.check(victim is not None, "the owner of 'killed' is known", first.h("location")):
    c = http.client.HTTPConnection(loc.hostname, loc.port, timeout=30)
    c.request("GET", loc.path + "?" + loc.query)
    resp = c.getresponse()
    got = resp.read(1 << 20)
    victim.kill9()
    c.close()
    t.check(len(got) > 0, "the cold GET had started streaming", len(got))
    start([victim], join=lambda n: g.url)
    poll(lambda: clulib.smap_ids(g) == {g.id} | {x.id for x in ts}, 20)
    r = request("GET", victim.url, "/v1/objects/cache2/killed", headers={"Ais-Intra": "test"})
    t.check(r.status == 404 or r.body == BODY["killed"], "after kill -9: no partial object",
            (r.status, len(r.body)))
    r = get("cache2", "killed")
    t.check(r.status == 200 and r.body == BODY["killed"], "the next GET returns it whole", (r.status, len(r.body)))

# --- 10. logs ------------------------------------------------------------------------------------
for n in ALL:
    with open(n.log, errors="replace") as f:
        text = f.read()
    t.check(SK not in text, "%s: the secret is in no log" % n.name)
clulib.check_logs(ALL)
t.finish()
