"""test_etl_bucket.py - offline ETL: aisctl etl bucket NAME SRC DST, the
copy-bck job with a transformer (kind etl-bck), on 1 gateway + 3 targets
with auth on (an admin token, a read-write token).

Transformers (aisd.etl): "up" uppercases bytes; "ident" returns them;
"mem" (serve_members) uppercases the .txt members of a tar shard; "slow"
uppercases after 0.5 s. "up" crashes on objects named *crash*, hangs past
its 5 s timeout on *hang*, answers a malformed frame on *garbage*.

Checks:
 1. A read-write (non-admin) token cannot start the job (403); an unknown
    transformer is 404, a bad spec 400.
 2. ident and up over 60 objects (+ 2 under img/): the runs end done, every
    object of DST reads back as SRC's (ident) or SRC's uppercased (up);
    DST has mirror.copies=2 and the job record counts 62 objects sent.
 3. --prefix o0 --ext .txt:.up: exactly the o0xx objects, renamed .up.
 4. --dry-run: the run ends done counting the 62 objects it would write;
    DST stays empty.
 5. Per-member: 4 tar shards (.txt and .cls members) through "mem" with
    --template shards/shard-{0000..0002}.tar: 3 shards in DST, read back
    with aisd.ShardDataset: .txt uppercased, .cls unchanged, sample keys
    kept; the 4th shard (outside the template) is not there.
 6. Faults, continue-on-error: the crash, hang and garbage objects are 3
    errors listed in the job record (error_list, aisctl job show), the run
    ends failed, the 10 good objects are in DST, the bad ones are not.
    stop-on-error (a bucket of slow good objects and one that crashes its
    worker): the run ends failed, its last_error says it stopped at the
    first error and names the object; the other targets' parts are
    stopped too (none done); no bad object in DST, what is there is whole.
 6b. aisctl job stop ID: the run ends aborted, what it wrote is whole.
 7. kill -9 of a target mid-job ("slow"), restarted: its part of the run
    resumes (its log says so) and the run ends (done, or failed with its errors listed); every object in DST
    reads back whole and uppercased (nothing partial); when done, all.
 7b. etl stop while a job runs: the job ends aborted, saying so.
 8. etl rm while a job runs: the job ends aborted, its last_error saying
    the transformer is gone; every object in DST is whole.
 9. No error-level line in any node's log.
"""
# timeout: 240
import io
import json
import os
import shutil
import sys
import tarfile
import time
import urllib.parse

from itlib import T

import clulib
from clulib import Node, follow, poll, request

t = T()
tsf, csf = clulib.secret_files("etlb")
clulib.init(t, "etlb", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                        "--set", "auth.enabled=on", "--set", "auth.secret_file=" + tsf,
                        "--set", "cluster.secret_file=" + csf])
PYDIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python"))

WORKER = r'''
import os, sys, time
from aisd.etl import serve, serve_members

MODE = os.environ.get("MODE")

def fn(data, meta, args):
    name = meta.get("object", "")
    if "crash" in name:
        os._exit(3)
    if "hang" in name:
        time.sleep(60)
    if "garbage" in name:
        sys.stdout.buffer.write(b"this is no frame\n")
        sys.stdout.buffer.flush()
        time.sleep(60)
    if MODE == "ident":
        return data
    if "slowgood" in name:
        time.sleep(0.5)
    if MODE == "slow":
        time.sleep(0.5)
    return data.upper()

if MODE == "mem":
    serve_members(lambda n, b, m, a: b.upper(), ext=(".txt",))
else:
    serve(fn)
'''


def aisctl(*args, token=None, timeout=60):
    return clulib.aisctl(g.url, *args, token=token or ADMIN, timeout=timeout)


def token(*args):
    rc, out, err = aisctl("auth", "token", "create", "--secret-file", tsf, *args, token="x")
    t.check(rc == 0 and out.count(".") == 2, "aisctl auth token create %s" % " ".join(args), err)
    return out.strip()


g = Node("g1", "gateway")
ts = [Node("t%d" % i, "target") for i in (1, 2, 3)]
for n in [g] + ts:
    if not t.check(n.start(join=None if n is g else g.url), "%s starts" % n.name):
        t.finish()
ADMIN = token("--user", "root", "--admin", "--ttl", "1h")
AUTH = {"Authorization": "Bearer " + ADMIN}
JSON = dict(AUTH, **{"Content-Type": "application/json"})


def smap_ids():
    try:
        r = request("GET", g.url, "/v1/cluster?what=smap", headers=AUTH, timeout=5)
        return {n["id"] for n in r.json()["nodes"]} if r.status == 200 else None
    except (OSError, KeyError, TypeError, ValueError):
        return None


t.check(poll(lambda: smap_ids() == {g.id} | {x.id for x in ts}, 60), "the cluster forms")
RW = token("--user", "alice", "--bucket", "src", "--perm", "rw", "--ttl", "1h")


def get(b, name):
    _, r = follow("GET", g.url, "/v1/objects/%s/%s" % (b, urllib.parse.quote(name)), headers=AUTH)
    return r


def names(b):
    r = request("GET", g.url, "/v1/buckets/" + b, json.dumps({"action": "list", "value": {"pagesize": 1000}}), JSON)
    return sorted(e["name"] for e in (r.json() or {}).get("entries", [])) if r.status == 200 else None


def run_of(rid):
    r = request("GET", g.url, "/v1/jobs?id=" + rid, headers=AUTH)
    return ((r.json() or {}).get("runs") or [{}])[0] if r.status == 200 else {}


def start(etl, src, dst, *opts):
    rc, out, err = aisctl("etl", "bucket", etl, src, dst, *opts)
    w = out.split()
    rid = w[w.index("job") + 1] if rc == 0 and "job" in w else ""
    t.check(rc == 0 and rid, "aisctl etl bucket %s %s %s %s: started" % (etl, src, dst, " ".join(opts)), out + err)
    return rid or "none"


def wait(rid, secs=60):
    poll(lambda: run_of(rid).get("state") not in (None, "running"), secs)
    return run_of(rid)


wdir = clulib.etl_scripts("aisd-etlb-", {"w.py": WORKER})
script = os.path.join(wdir, "w.py")

for b in ("src", "fb", "fb2", "d_id", "d_up", "d_ext", "d_dry", "d_sh", "d_co", "d_so", "d_st", "d_k9", "d_es", "d_rm", "d_x"):
    r = request("POST", g.url, "/v1/buckets/" + b, json.dumps({"action": "create-bck"}), JSON)
    t.check(r.status == 200, "create bucket " + b, r)
r = request("PATCH", g.url, "/v1/buckets/d_up",
            json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
t.eq(r.status, 200, "d_up: mirror.copies=2")

data = {"o%03d.txt" % i: bytes((i * 7 + k) % 26 + 97 for k in range(500 + 53 * i)) for i in range(60)}
data["img/a.jpg"] = b"jpeg-ish bytes"
data["img/b.jpg"] = b"more jpeg-ish"
bad = [n for n, d in data.items() if follow("PUT", g.url, "/v1/objects/src/" + n, d, AUTH)[1].status != 200]
t.check(not bad, "62 PUTs to src", bad[:3])

for name, mode, to in (("up", "up", "5s"), ("ident", "ident", "30s"), ("mem", "mem", "30s"), ("slow", "slow", "30s")):
    rc, out, err = aisctl("etl", "init", name, "--cmd", "python3 " + script, "--timeout", to, "--workers", "2",
                          "--env", "PYTHONPATH=" + PYDIR, "MODE=" + mode)
    t.check(rc == 0, "etl init %s" % name, out + err)

# --- 1. permission, bad requests -----------------------------------------------------
rc, out, err = aisctl("etl", "bucket", "up", "src", "d_x", token=RW)
t.check(rc != 0 and "403" in err, "etl bucket with a read-write (non-admin) token: refused 403", out + err)
rc, out, err = aisctl("etl", "bucket", "nosuch", "src", "d_x")
t.check(rc != 0 and "404" in err and "nosuch" in err, "an unknown transformer: 404 naming it", out + err)
for v, what in (({"id": "up", "ext": {"jpg": "a/b"}}, "an extension with '/'"),
                ({"id": "up", "template": "x{5..1}"}, "a template of no names"),
                ({"id": "up", "coer": "yes"}, "coer not a boolean"),
                ({}, "no transformer")):
    r = request("POST", g.url, "/v1/buckets/src?bck_to=d_x", json.dumps({"action": "etl-bck", "value": v}), JSON)
    t.check(r.status == 400 and r.h("content-type").startswith("application/json"), "etl-bck with %s: 400" % what, r)
r = request("POST", g.url, "/v1/buckets/src?bck_to=d_x", json.dumps({"action": "copy-bck", "value": {"etl": "up"}}),
            JSON)
t.eq(r.status, 400, "copy-bck with a transformer: 400")
t.eq(names("d_x"), [], "nothing written by the refused requests")

# --- 2. identity and uppercase over the bucket ----------------------------------------
for etl, dst, fn in (("ident", "d_id", lambda b: b), ("up", "d_up", lambda b: b.upper())):
    rid = start(etl, "src", dst)
    rc, out, err = aisctl("job", "wait", rid, "--timeout-s", "60", timeout=90)
    t.eq((rc, out.strip()), (0, "%s: done" % rid), "aisctl job wait %s (%s): done" % (rid, etl))
    run = run_of(rid)
    t.check(run.get("kind") == "etl-bck" and run.get("errors") == 0, "the run: kind etl-bck, no error", run)
    t.eq(names(dst), sorted(data), "%s: every object of src" % dst)
    wrong = [n for n, d in data.items() if get(dst, n).body != fn(d)]
    t.check(not wrong, "%s: every object reads back as %s(src)" % (dst, etl), wrong[:3])
moved = sum(v.get("objects", 0) for v in run.get("targets", {}).values())
t.check(moved >= 62, "the targets walked the 62 objects", run.get("targets"))

# --- 3. --prefix and --ext --------------------------------------------------------------
rid = start("up", "src", "d_ext", "--prefix", "o0", "--ext", ".txt:.up")
t.eq(wait(rid).get("state"), "done", "--ext run: done")
want = sorted(n[:-4] + ".up" for n in data if n.startswith("o0"))
t.eq(names("d_ext"), want, "d_ext: the o0xx objects renamed .up")
t.check(all(get("d_ext", n).body == data[n[:-2] + "txt"].upper() for n in want[:5]), "the renamed objects' bytes")

# --- 4. dry run ------------------------------------------------------------------------
rid = start("up", "src", "d_dry", "--dry-run")
run = wait(rid)
rc, out, err = aisctl("job", "show", rid)
t.check(run.get("state") == "done" and run.get("progress", {}).get("objects", 0) >= 62,
        "dry run: done, the 62 objects counted", run)
tot = 0
for tg in ts:
    r = request("GET", tg.url, "/v1/jobs?what=etl-bck", headers=AUTH)
    tot += (r.json() or {}).get("moved", 0) if r.status == 200 else -1000
t.eq(tot, 62, "dry run: the targets would write 62 objects")
t.eq(names("d_dry"), [], "dry run: nothing written")

# --- 5. per-member shards, read back with ShardDataset ------------------------------------
shards = {}
for s in range(4):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for k in range(5):
            for ext, body in (("txt", b"sample %d of shard %d" % (k, s)), ("cls", b"%d" % k)):
                ti = tarfile.TarInfo("s%d_%02d.%s" % (s, k, ext))
                ti.size = len(body)
                tf.addfile(ti, io.BytesIO(body))
    shards["shards/shard-%04d.tar" % s] = buf.getvalue()
for n, d in shards.items():
    t.eq(follow("PUT", g.url, "/v1/objects/src/" + n, d, AUTH)[1].status, 200, "PUT src/" + n)
rid = start("mem", "src", "d_sh", "--template", "shards/shard-{0000..0002}.tar")
t.eq(wait(rid).get("state"), "done", "per-member run: done")
t.eq(names("d_sh"), sorted(shards)[:3], "d_sh: the 3 shards of the template")
sys.path.insert(0, PYDIR)
os.environ["AIS_AUTHN_TOKEN"] = ADMIN
from aisd import ShardDataset  # noqa: E402
got = {}
for smp in ShardDataset(g.url, bucket="d_sh", prefix="shards/"):
    got[smp["__key__"]] = (smp.get("txt"), smp.get("cls"))
want = {"s%d_%02d" % (s, k): (b"SAMPLE %d OF SHARD %d" % (k, s), b"%d" % k) for s in range(3) for k in range(5)}
t.eq(got, want, "ShardDataset over d_sh: 15 samples, .txt uppercased, .cls kept")

# --- 6. faults: continue, stop -----------------------------------------------------------
good = {"g%02d" % i: b"good %d" % i for i in range(10)}
badn = ["bad-crash", "bad-hang", "bad-garbage"]
for n, d in list(good.items()) + [(b, b"x") for b in badn]:
    t.eq(follow("PUT", g.url, "/v1/objects/fb/" + n, d, AUTH)[1].status, 200, "PUT fb/" + n)
t0 = time.monotonic()
rid = start("up", "fb", "d_co", "--continue-on-error")
run = wait(rid, 90)
el = run.get("error_list") or []
t.check(run.get("state") == "failed" and run.get("errors") == 3, "continue-on-error: ends failed with 3 errors",
        run)
t.check(sorted(b for b in badn if any(e.startswith(b + ":") for e in el)) == sorted(badn),
        "the job record lists the three bad objects", el)
t.check(any("timed out" in e for e in el) and any("malformed" in e for e in el) and
        any("exited" in e for e in el), "... with their reasons (timeout, malformed frame, exit)", el)
rc, out, err = aisctl("job", "show", rid)
t.check(rc == 0 and out.count("\n  error: bad-") == 3, "aisctl job show lists them", out + err)
t.eq(names("d_co"), sorted(good), "d_co: the 10 good objects, no bad one")
t.check(all(get("d_co", n).body == d.upper() for n, d in good.items()), "d_co: the good objects transformed")
t.diag("continue-on-error run: %.1f s" % (time.monotonic() - t0))
slow = {"slowgood%02d" % i: b"slow good %d" % i for i in range(24)}
for n, d in list(slow.items()) + [("bad-crash", b"x")]:
    t.eq(follow("PUT", g.url, "/v1/objects/fb2/" + n, d, AUTH)[1].status, 200, "PUT fb2/" + n)
rid = start("up", "fb2", "d_so", "--stop-on-error")
run = wait(rid, 90)
le = run.get("last_error", "")
t.check(run.get("state") == "failed" and "stop-on-error" in le and "bad-crash" in le,
        "stop-on-error: ends failed, last_error names the bad object", run)
tst = {k: v.get("state") for k, v in run.get("targets", {}).items()}
t.check(len(tst) == 3 and "done" not in tst.values() and "failed" in tst.values(),
        "the run stopped on every target (one failed, the others aborted)", tst)
have = names("d_so")
t.check(have is not None and "bad-crash" not in have and len(have) < len(slow),
        "d_so: no bad object, and not all of the others (%s)" % (len(have) if have is not None else None))
t.check(all(get("d_so", n).body == slow[n].upper() for n in have or []), "d_so: what is there is whole", have)

# --- 6b. aisctl job stop ------------------------------------------------------------------
rid = start("slow", "src", "d_st")
t.check(poll(lambda: (run_of(rid).get("progress") or {}).get("objects", 0) >= 2, 30), "the slow run progresses")
rc, out, err = aisctl("job", "stop", rid)
t.check(rc == 0, "aisctl job stop %s" % rid, out + err)
t.eq(wait(rid).get("state"), "aborted", "the stopped run ends aborted")
have = names("d_st") or []
t.check(len(have) < len(data) + len(shards) and
        all(get("d_st", n).body == data.get(n, shards.get(n, b"?")).upper() for n in have),
        "d_st: fewer objects, each whole (%d)" % len(have))

# --- 7. kill -9 of a target mid-job --------------------------------------------------------
rid = start("slow", "src", "d_k9")
t.check(poll(lambda: (run_of(rid).get("progress") or {}).get("objects", 0) >= 3, 30), "the slow run progresses")
victim = ts[1]
victim.kill9()
time.sleep(1)
t.check(victim.start(join=g.url), "%s restarts" % victim.name)
t.check(poll(lambda: ("etl-bck %s: resuming the run" % rid) in open(victim.log, errors="replace").read(), 30),
        "the restarted target resumes its part of the run (its log says so)")
run = wait(rid, 120)
t.diag("after kill -9: %s, %s errors, last error %s" % (run.get("state"), run.get("errors"), run.get("last_error")))
t.check(run.get("state") in ("done", "failed") and (run.get("state") == "done" or run.get("error_list")),
        "the run resumes and ends: done, or failed with its errors listed", run)
have = names("d_k9") or []
wrong = [n for n in have if get("d_k9", n).body != data.get(n, shards.get(n, b"?")).upper()]
t.check(have and not wrong, "every object in d_k9 is whole and transformed (%d there)" % len(have), wrong[:3])
if run.get("state") == "done":
    t.eq(have, sorted(list(data) + list(shards)), "done: every object of src is in d_k9")

# --- 7b. etl stop while a job runs ------------------------------------------------------------
rid = start("slow", "src", "d_es")
t.check(poll(lambda: (run_of(rid).get("progress") or {}).get("objects", 0) >= 2, 30), "the slow run progresses")
rc, out, err = aisctl("etl", "stop", "slow")
t.check(rc == 0, "etl stop slow while its job runs", out + err)
run = wait(rid, 60)
le = run.get("last_error", "")
t.check(run.get("state") == "aborted" and "slow" in le and "stopped" in le,
        "the job ends aborted, last_error: the transformer is stopped", run)
rc, out, err = aisctl("etl", "start", "slow")
t.check(rc == 0, "etl start slow", out + err)

# --- 8. etl rm while a job runs --------------------------------------------------------------
rid = start("slow", "src", "d_rm")
t.check(poll(lambda: (run_of(rid).get("progress") or {}).get("objects", 0) >= 4, 30), "the slow run progresses")
rc, out, err = aisctl("etl", "rm", "slow")
t.check(rc == 0, "etl rm slow while its job runs", out + err)
run = wait(rid, 60)
le = run.get("last_error", "")
t.check(run.get("state") == "aborted" and "slow" in le and ("no transformer" in le or "removed" in le),
        "the job ends aborted, last_error: the transformer is gone", run)
have = names("d_rm") or []
t.check(len(have) < len(data) + len(shards), "d_rm: the job stopped early (%d objects)" % len(have))
wrong = [n for n in have if get("d_rm", n).body != data.get(n, shards.get(n, b"?")).upper()]
t.check(not wrong, "every object in d_rm is whole", wrong[:3])

clulib.stop_all()
shutil.rmtree(wdir, ignore_errors=True)
clulib.check_logs([g] + ts)
t.finish()
