"""test_copy_remote.py - the copy-bck job across providers: a bucket with an
S3 backend (OpenStack Swift's s3api, swiftlib.py) copied into a bucket of
the cluster, and a bucket of the cluster copied into one with an S3
backend. Swift all-in-one and a front cluster (1 gateway + 2 targets) on
loopback ports, every process started here and stopped by PID.

Checks:
 1. remote -> native, dry run: counts every object of Swift's bucket (none
    cached but one), with the listing's bytes; the destination stays empty
    and nothing more gets cached.
 2. remote -> native, --prefix: exactly the prefix's objects, byte for
    byte, the uncached ones too (read through the cold GET, so now cached
    in the source).
 3. remote -> native, --template: exactly the template's names.
 4. native -> remote: every object reaches Swift (read back with boto3
    straight from Swift), byte for byte; a --prefix run sends only those.
 5. Swift stopped: a copy from rsrc fails, its last_error naming the
    source's remote listing; nothing written.
 6. No error-level line in any aisd log.
"""
# timeout: 240
import functools
import json
import os

from itlib import T, q

import clulib
import swiftlib
from clulib import request

t = T()
JSON = {"Content-Type": "application/json"}
AK, SK = swiftlib.AK, swiftlib.SK
clulib.init(t, "xcopyremote", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never"])
swift = swiftlib.Swift(t)
swift.start()
sw = swift.client()
if not t.check(swift.wait_up(), "Swift (s3api) answers"):
    t.finish()
g, ts = swiftlib.start_front(t)
ctl = functools.partial(swiftlib.ctl, g)
follow = functools.partial(swiftlib.follow, g)


def listing(b, flags=0):
    body = json.dumps({"action": "list", "value": {"pagesize": 1000, "flags": flags}})
    r = request("GET", g.url, "/v1/buckets/" + b, body, JSON)
    return {e["name"] for e in (r.json() or {}).get("entries", [])} if r.status == 200 else None


def copy(*args):
    """aisctl bucket cp ARGS, waited for: the run's record."""
    rc, out = ctl("bucket", "cp", *args)
    words = out.split()
    rid = words[words.index("job") + 1] if rc == 0 and "job" in words else ""
    t.check(rc == 0 and rid, "aisctl bucket cp %s: started" % " ".join(args), out)
    rc, out = ctl("job", "wait", rid or "none", "--timeout-s", "90")
    t.eq((rc, out.strip()), (0, "%s: done" % rid), "aisctl job wait: done")
    r = request("GET", g.url, "/v1/jobs?id=" + (rid or "none"))
    return (r.json() or {}).get("runs", [{}])[0] if r.status == 200 else {}


# --- the buckets ------------------------------------------------------------------------------
sw.create_bucket(Bucket="src")
sw.create_bucket(Bucket="dst")
data = {("a/" if i % 3 else "b/") + "o%03d" % i: os.urandom(100 + 997 * i) for i in range(30)}
data["big"] = os.urandom(3 << 20)
data["zero"] = b""
for n, b in data.items():
    sw.put_object(Bucket="src", Key=n, Body=b)
skf = os.path.join(clulib.DIR, "sk")
with open(skf, "w") as f:
    f.write(SK + "\n")
rc, out = ctl("remote", "attach", "swift", swift.url, "--access-key", AK, "--secret-key-file", skf)
t.check(rc == 0, "aisctl remote attach swift", out)
for args in (("rsrc", "--backend", "s3://@swift/src"), ("rdst", "--backend", "s3://@swift/dst"),
             ("n1",), ("n2",), ("n3",), ("nsrc",)):
    rc, out = ctl("bucket", "create", *args)
    t.check(rc == 0, "bucket create " + " ".join(args), out)
r = follow("GET", "/v1/objects/rsrc/a/o001")  # one of them cached, the others not
t.check(r.status == 200 and r.body == data["a/o001"], "a cold GET of a/o001")
t.eq(listing("rsrc", 1), {"a/o001"}, "rsrc: only a/o001 cached")

# --- 1. remote -> native, dry run -----------------------------------------------------------
run = copy("rsrc", "n1", "--dry-run")
p = run.get("progress", {})
t.eq((p.get("objects"), p.get("bytes")), (len(data), sum(map(len, data.values()))),
     "the dry run counts every object of the remote and its bytes")
t.eq(listing("n1"), set(), "n1 stays empty")
t.eq(listing("rsrc", 1), {"a/o001"}, "a dry run caches nothing")

# --- 2. remote -> native, a prefix ------------------------------------------------------------
run = copy("rsrc", "n1", "--prefix", "a/")
want = {n for n in data if n.startswith("a/")}
t.eq(listing("n1"), want, "n1 holds exactly a/*, the uncached ones too")
wrong = [n for n in want if follow("GET", "/v1/objects/n1/" + q(n)).body != data[n]]
t.check(not wrong, "each byte for byte", wrong[:3])
t.eq(listing("rsrc", 1), want, "what was copied is now cached in rsrc (cold GETs), nothing else")

# --- 3. remote -> native, a template, the whole bucket ------------------------------------------
run = copy("rsrc", "n2", "--template", "b/o{000..011}")
t.eq(listing("n2"), {"b/o000", "b/o003", "b/o006", "b/o009"}, "n2 holds exactly the template's names")
run = copy("rsrc", "n3")
t.eq(listing("n3"), set(data), "n3 holds every object of the remote")
wrong = [n for n in data if follow("GET", "/v1/objects/n3/" + q(n)).body != data[n]]
t.check(not wrong, "each byte for byte (3 MiB and 0 B too)", wrong[:3])

# --- 4. native -> remote ----------------------------------------------------------------------
ndata = {("c/" if i % 2 else "d/") + "p%03d" % i: os.urandom(50 + 1301 * i) for i in range(20)}
ndata["large"] = os.urandom(2 << 20)
bad = [n for n, b in ndata.items() if follow("PUT", "/v1/objects/nsrc/" + q(n), b).status != 200]
t.check(not bad, "PUTs to nsrc", bad[:3])


def in_swift():
    r = sw.list_objects_v2(Bucket="dst", MaxKeys=1000)
    return {o["Key"] for o in r.get("Contents", [])}


run = copy("nsrc", "rdst", "--prefix", "c/")
want = {n for n in ndata if n.startswith("c/")}
t.eq(in_swift(), want, "Swift's bucket dst holds exactly c/*")
run = copy("nsrc", "rdst")
t.eq(in_swift(), set(ndata), "Swift's bucket dst holds every object of nsrc")
wrong = [n for n in ndata if sw.get_object(Bucket="dst", Key=n)["Body"].read() != ndata[n]]
t.check(not wrong, "each byte for byte, read from Swift itself", wrong[:3])
t.eq(listing("rdst"), set(ndata), "and listed in rdst")

# --- 5. the source's remote away: the run fails, saying so -------------------------------------
swift.stop()
rc, out = ctl("bucket", "create", "n4")
rc, out = ctl("bucket", "cp", "rsrc", "n4")
words = out.split()
rid = words[words.index("job") + 1] if rc == 0 and "job" in words else ""
t.check(rid, "aisctl bucket cp rsrc n4 (Swift stopped): started", out)
rc, out = ctl("job", "wait", rid or "none", "--timeout-s", "90")
t.check(out.startswith("%s: failed" % rid) and "listing the source's remote" in out and "swift" in out,
        "... the run fails, aisctl job wait saying why", out)
r = request("GET", g.url, "/v1/jobs?id=%s&all=true" % (rid or "none"))
t.check(r.status == 200 and "listing the source's remote" in r.body.decode(errors="replace"),
        "... its last_error names the source's remote listing", r.body[:500])
t.eq(listing("n4"), set(), "... and n4 stays empty")

clulib.check_logs([g] + ts)
t.finish()
