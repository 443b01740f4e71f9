"""test_copy_bck.py - the copy-bck job (aisctl bucket cp): a bucket copied
into another inside the cluster, each target sending what it owns to the
destination's owners through their object layer. 1 gateway + 2 targets,
started here on loopback ports and stopped by PID.

Checks:
 1. --dry-run: the run ends done, counts the 120 objects it would copy,
    and the destination stays empty.
 2. --prefix a/: only a/* lands in d (mirror.copies=2): every object byte
    for byte through the gateway, and on both targets (its copies hold).
 3. The whole bucket into e (erasure coded 1+1): every object reads back
    byte for byte; the run is in aisctl job show --all, kind copy-bck.
 4. Bad specs: a destination equal to the source (aisctl: exit 2; the API:
    400), a missing destination or source (404), no bck_to (400).
 5. No error-level line in any node's log.
"""
# timeout: 120
import json
import os

from itlib import T, q

import clulib
from clulib import follow, request

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}

t = T()
clulib.init(t, "copybck", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never"])
g, ts = clulib.start_cluster(2)


def ctl(*args, timeout=60):
    return clulib.aisctl(g.url, *args, timeout=timeout)


def names(b):
    n = clulib.names(g.url, b)
    return set(n) if n is not None else None


def start_copy(*args):
    rc, out, err = ctl("bucket", "cp", *args)
    words = out.split()
    rid = words[words.index("job") + 1] if rc == 0 and "job" in words else ""
    t.check(rc == 0 and rid, "aisctl bucket cp %s: started, with an id" % " ".join(args), out + err)
    rc, out, err = ctl("job", "wait", rid or "none", "--timeout-s", "60", timeout=90)
    t.eq((rc, out.strip()), (0, "%s: done" % rid), "aisctl job wait %s: done" % rid)
    r = request("GET", g.url, "/v1/jobs?id=" + (rid or "none"))
    return (r.json() or {}).get("runs", [{}])[0] if r.status == 200 else {}


for b in ("s", "d", "e"):
    t.eq(request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON).status, 200, "create " + b)
r = request("PATCH", g.url, "/v1/buckets/d",
            json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
t.eq(r.status, 200, "d: mirror.copies=2")
r = request("PATCH", g.url, "/v1/buckets/e", json.dumps({"action": "set-bprops", "value": {
    "ec": {"enabled": True, "data_slices": 1, "parity_slices": 1}}}), JSON)
t.eq(r.status, 200, "e: erasure coded 1+1")
data = {("a/" if i % 2 else "b/") + "o%03d" % i: os.urandom(300 + 37 * i) for i in range(120)}
bad = [n for n, d in data.items() if follow("PUT", g.url, "/v1/objects/s/" + q(n), d)[1].status != 200]
t.check(not bad, "120 PUTs to s", bad[:3])

# --- 1. dry run ----------------------------------------------------------------------------
run = start_copy("s", "d", "--dry-run")
t.check(run.get("state") == "done" and run.get("kind") == "copy-bck" and run.get("bucket") == "s",
        "the dry run's record", run)
t.eq(run.get("progress", {}).get("objects"), 120, "it walked the 120 objects")
t.eq(names("d"), set(), "d stays empty")

# --- 2. a prefix, into a mirrored bucket --------------------------------------------------
run = start_copy("s", "d", "--prefix", "a/")
want = {n for n in data if n.startswith("a/")}
t.eq(names("d"), want, "d holds exactly a/*")
wrong = [n for n in want if follow("GET", g.url, "/v1/objects/d/" + q(n))[1].body != data[n]]
t.check(not wrong, "each reads back byte for byte", wrong[:3])
single = [n for n in want if sum(request("GET", x.url, "/v1/objects/d/" + q(n), headers=INTRA).status == 200
                                 for x in ts) != 2]
t.check(not single, "each on both targets (mirror.copies=2)", single[:3])

# --- 3. the whole bucket, into an erasure-coded one -----------------------------------------
run = start_copy("s", "e")
t.eq(names("e"), set(data), "e holds every object")
wrong = [n for n in data if follow("GET", g.url, "/v1/objects/e/" + q(n))[1].body != data[n]]
t.check(not wrong, "each reads back byte for byte", wrong[:3])
rc, out, err = ctl("job", "show", "--all", "copy-bck")
t.check(rc == 0 and out.count("copy-bck") >= 3, "aisctl job show --all copy-bck: the three runs", out + err)

# --- 4. bad specs --------------------------------------------------------------------------
rc, out, err = ctl("bucket", "cp", "s", "s")
t.eq(rc, 2, "aisctl bucket cp s s: exit 2")
cb = '{"action":"copy-bck"}'
t.eq(request("POST", g.url, "/v1/buckets/s?bck_to=s", cb, JSON).status, 400, "bck_to = the source: 400")
t.eq(request("POST", g.url, "/v1/buckets/s?bck_to=nosuch", cb, JSON).status, 404, "a missing destination: 404")
t.eq(request("POST", g.url, "/v1/buckets/nosuch?bck_to=d", cb, JSON).status, 404, "a missing source: 404")
t.eq(request("POST", g.url, "/v1/buckets/s", cb, JSON).status, 400, "no bck_to: 400")
r = request("POST", g.url, "/v1/buckets/s?bck_to=d", '{"action":"copy-bck","value":{"dry_run":"yes"}}', JSON)
t.eq(r.status, 400, "dry_run not a boolean: 400")

clulib.check_logs([g] + ts)
t.finish()
