"""test_etl.py - transformers on every target (aisctl etl, GET ?etl=NAME).

A cluster of 1 gateway + 2 targets with auth on (an admin token, a
read-write token, an S3 key granted the bucket), etl.max_output=1MiB.
A Python worker (aisd.etl.serve) uppercases bytes; etl_args make it crash,
hang, answer too much, or probe its sandbox.

Checks:
 1. A non-admin token cannot register a transformer (403); the admin can
    (aisctl etl init), and etl ls / etl show list it.
 2. GET through the gateway with ?etl=NAME: curl (native, 307 followed)
    and boto3 (S3, the x-ais-etl header), byte for byte the uppercased
    object of 1 MiB; an unknown transformer is 404 with a JSON body
    (native) and NoSuchTransformer (S3); a missing key is NoSuchKey (S3).
 3. The worker crashes: 502 naming the transformer; the next GET is
    served by a restarted worker (crashes counted in etl ls).
 4. The worker hangs: 504 naming the transformer after its timeout (2s),
    then the next GET is right again.
 4b. An object whose pages were dropped from the page cache is
    transformed whole (such a GET's exchange runs on the network pool, a
    cached one's on the request's loop).
 5. An answer over etl.max_output: 507 naming the transformer.
 6. The sandbox (the target runs as root here): the worker runs as
    nobody with no descriptor of the target's, sees nothing in a mountpath
    (its path is covered), and cannot
    connect to the gateway (no network). A machine that cannot make the
    namespaces fails this check: the feature claims the isolation.
 6b. A target that joins after the registration serves GETs with it
    (it takes the transformer from the primary on first use).
 7. etl logs shows what the worker wrote on standard error; etl stop makes
    GETs 503, etl start brings them back; etl rm makes them 404.
 8. aisd.etl.transform_members rebuilds a tar shard (no daemon).
 9. No error-level line in any node's log (the worker faults are warnings).
"""
# timeout: 180
import glob
import json
import os
import shutil
import subprocess
import time
import urllib.parse

from itlib import T

import clulib
from clulib import Node, poll, request

t = T()
tsf, csf = clulib.secret_files("etl")
AK, SK = "etlkey", "etlsecret123"
clulib.init(t, "etl", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                       "--set", "auth.enabled=on", "--set", "auth.secret_file=" + tsf,
                       "--set", "cluster.secret_file=" + csf, "--set", "etl.max_output=1MiB",
                       "--set", "s3.key=%s:%s:etluser:Etl User" % (AK, SK), "--set", "auth.grant=etluser:eb:rw"])
PYDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python")

WORKER = r'''
import os, socket, sys, time
from aisd.etl import serve

def fn(data, meta, args):
    sys.stderr.write("etl-worker-log: %s %d\n" % (meta.get("object"), len(data)))
    if args == "crash":
        os._exit(3)
    if args == "hang":
        time.sleep(60)
    if args == "big":
        return b"x" * (2 << 20)
    if args.startswith("probe:"):
        mp, port = args[6:].rsplit(",", 1)
        fds = sorted(int(x) for x in os.listdir("/proc/self/fd"))
        out = ["uid=%d" % os.getuid(), "fds=%d" % len(fds)]  # 0, 1, 2 and listdir's own
        try:
            out.append("mp=%d" % len(os.listdir(mp)))
        except OSError as e:
            out.append("mp=%s" % type(e).__name__)
        try:
            socket.create_connection(("127.0.0.1", int(port)), 2).close()
            out.append("net=open")
        except OSError as e:
            out.append("net=%s" % type(e).__name__)
        return " ".join(out).encode()
    return data.upper()

serve(fn)
'''


def aisctl(*args, token=None):
    return clulib.aisctl(g.url, *args, token=token or "", timeout=60)


def token(*args):
    rc, out, err = aisctl("auth", "token", "create", "--secret-file", tsf, *args)
    t.check(rc == 0 and out.count(".") == 2, "aisctl auth token create %s" % " ".join(args), err)
    return out.strip()


def etl_get(name, obj="o1", args=None, tok=None):
    """GET through the gateway, the 307 followed; (status, body, headers)."""
    path = "/v1/objects/eb/%s?etl=%s" % (obj, name)
    if args is not None:
        path += "&etl_args=" + urllib.parse.quote(args, safe="")
    h = {"Authorization": "Bearer " + (tok or ADMIN)}
    r = request("GET", g.url, path, headers=h, timeout=60)
    if r.status == 307:
        loc = urllib.parse.urlsplit(r.h("location"))
        r = request("GET", "http://" + loc.netloc, loc.path + "?" + loc.query, headers=h, timeout=60)
    return r


g = Node("g1", "gateway")
ts = [Node("t1", "target"), Node("t2", "target")]
for n in [g] + ts:
    if not t.check(n.start(join=None if n is g else g.url), "%s starts" % n.name):
        t.finish()
ADMIN = token("--user", "root", "--admin", "--ttl", "1h")


def smap_ids():
    try:
        r = request("GET", g.url, "/v1/cluster?what=smap", headers={"Authorization": "Bearer " + ADMIN}, timeout=5)
        return {n["id"] for n in r.json()["nodes"]} if r.status == 200 else None
    except (OSError, KeyError, TypeError, ValueError):
        return None


t.check(poll(lambda: smap_ids() == {g.id} | {x.id for x in ts}, 60), "the cluster forms")
RW = token("--user", "alice", "--bucket", "eb", "--perm", "rw", "--ttl", "1h")
AUTH = {"Authorization": "Bearer " + ADMIN}

wdir = clulib.etl_scripts("aisd-etl-", {"upper.py": WORKER})
script = os.path.join(wdir, "upper.py")
# the mountpaths' parents traversable by others: only the sandbox hides them
d = ts[0].dir
while d.startswith(os.environ["AISD_DIR"]) and len(d) >= len(os.environ["AISD_DIR"]):
    os.chmod(d, os.stat(d).st_mode | 0o011)
    d = os.path.dirname(d)

r = request("POST", g.url, "/v1/buckets/eb", json.dumps({"action": "create-bck"}).encode(),
            dict(AUTH, **{"Content-Type": "application/json"}))
t.check(r.status == 200, "create bucket eb", r)
data = bytes((i * 7 + 97) % 26 + 97 for i in range(1 << 20))  # lowercase letters, 1 MiB
for name in ("o1", "o2"):
    _, r = clulib.follow("PUT", g.url, "/v1/objects/eb/" + name, data, AUTH)
    t.check(r.status == 200, "PUT eb/%s" % name, r)
os.chmod(os.path.join(ts[0].dir, "mp1"), 0o755)
os.chmod(os.path.join(ts[1].dir, "mp1"), 0o755)

# --- 1. registration: admin only -------------------------------------------------
cmd = "python3 %s" % script
env = "PYTHONPATH=%s" % os.path.abspath(PYDIR)
rc, out, err = aisctl("etl", "init", "up", "--cmd", cmd, "--timeout", "2s", "--env", env, token=RW)
t.check(rc != 0 and "403" in err, "etl init with a read-write (non-admin) token: refused 403", out + err)
rc, out, err = aisctl("etl", "init", "up", "--cmd", cmd, "--timeout", "2s", "--workers", "2", "--env", env,
                      token=ADMIN)
t.check(rc == 0, "etl init up (admin)", out + err)
rc, out, err = aisctl("etl", "ls", token=ADMIN)
t.check(rc == 0 and "up" in out and "upper.py" in out, "etl ls lists it", out + err)
rc, out, err = aisctl("etl", "show", "up", token=ADMIN)
t.check(rc == 0 and '"workers": 2' in out, "etl show up", out + err)

# --- 2. inline GET: curl, boto3, unknown -------------------------------------------
cp = subprocess.run(["curl", "-sS", "-L", "-o", "-", "-w", "\n%{http_code}", "-H", "Authorization: Bearer " + ADMIN,
                     g.url + "/v1/objects/eb/o1?etl=up"], stdout=subprocess.PIPE, timeout=60)
body, _, code = cp.stdout.rpartition(b"\n")
t.check(code == b"200" and body == data.upper(), "curl GET ?etl=up: 200, the uppercased 1 MiB byte for byte",
        (code, len(body)))
r = etl_get("nosuch")
t.check(r.status == 404 and b"nosuch" in r.body and r.h("content-type", ).startswith("application/json"),
        "unknown transformer: 404 JSON naming it", r)
import boto3  # noqa: E402
import botocore.config  # noqa: E402
s3 = boto3.client("s3", endpoint_url=g.url + "/s3", aws_access_key_id=AK, aws_secret_access_key=SK,
                  region_name="us-east-1",
                  config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
etl_hdr = {"name": "up"}
s3.meta.events.register("before-sign.s3.GetObject",
                        lambda request, **kw: request.headers.__setitem__("x-ais-etl", etl_hdr["name"]))
got = s3.get_object(Bucket="eb", Key="o2")["Body"].read()
t.check(got == data.upper(), "boto3 GetObject with x-ais-etl: up: the uppercased bytes", len(got))
for name, key, want, what in (("nosuch", "o2", "NoSuchTransformer", "an unknown transformer"),
                              ("up", "nosuchkey", "NoSuchKey", "a missing key")):
    etl_hdr["name"] = name
    try:
        s3.get_object(Bucket="eb", Key=key)
        t.fail("boto3 GetObject with x-ais-etl, %s: refused" % what)
    except Exception as e:  # botocore ClientError
        code = getattr(e, "response", {}).get("Error", {}).get("Code")
        t.check(code == want, "boto3 GetObject with x-ais-etl, %s: %s" % (what, want), e)

# --- 3. crash, restart --------------------------------------------------------------
r = etl_get("up", args="crash")
t.check(r.status == 502 and '"up"' in r.json().get("message", ""), "a crashing worker: 502 naming the transformer", r)
r = etl_get("up")
t.check(r.status == 200 and r.body == data.upper(), "after the crash: a restarted worker answers", r)

# --- 4. hang: timeout, recovery -----------------------------------------------------
t0 = time.monotonic()
r = etl_get("up", args="hang")
dt = time.monotonic() - t0
t.check(r.status == 504 and '"up"' in r.json().get("message", "") and dt < 30, "a hung worker: 504 naming it after its timeout", (r, dt))
r = etl_get("up")
t.check(r.status == 200 and r.body == data.upper(), "after the hang: right again", r)

# --- 4b. a cold object: read on the network pool -------------------------------------
# (a GET whose object's pages are all cached runs its exchange on the loop;
# one with pages on disk only goes to the pool, which waits for the disk)
for tn in ts:
    for f in glob.glob(os.path.join(tn.dir, "mp1", "obj", "*", "*")):
        fd = os.open(f, os.O_RDONLY)
        os.fsync(fd)  # (store.fsync=never: dirty pages would stay)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
r = etl_get("up", "o2")
t.check(r.status == 200 and r.body == data.upper(), "an object whose pages were dropped: transformed whole", r)

# --- 5. oversize answer -------------------------------------------------------------
r = etl_get("up", args="big")
t.check(r.status == 507 and b"etl.max_output" in r.body, "an answer over etl.max_output: 507", r)
r = etl_get("up")
t.check(r.status == 200 and r.body == data.upper(), "after the oversize answer: right again", r)
crashes = 0
for tg in ts:
    r = request("GET", tg.url, "/v1/etl", headers=AUTH)
    crashes += sum(x.get("crashes", 0) for x in r.json().get("etl", [])) if r.status == 200 else -100
t.check(crashes >= 3, "the targets counted the failed workers (crash, hang, oversize)", crashes)

# --- 6. the sandbox -----------------------------------------------------------------
# each probe runs on o1's owner, which covers its own mountpath (another
# target of this machine is kept out by its directories' permissions)
r1, _ = clulib.follow("GET", g.url, "/v1/objects/eb/o1", headers=AUTH)
port = urllib.parse.urlsplit(r1.h("location") or "").port
owner = [tg for tg in ts if tg.port == port]
t.check(len(owner) == 1, "o1's owner found from the gateway's redirect", r1)
results = []
for _ in range(2):  # both workers
    mp = os.path.join(owner[0].dir if owner else ts[0].dir, "mp1")
    r = etl_get("up", args="probe:%s,%d" % (mp, g.port))
    results.append(r.body.decode(errors="replace") if r.status == 200 else "status %d" % r.status)
t.diag("sandbox probes: %s" % results)
t.check(all(x.startswith("uid=65534") for x in results), "the worker runs as nobody", results)
t.check(all(" fds=4 " in x for x in results), "the worker inherits no descriptor but its stdin, stdout, stderr",
        results)
t.check(all(" mp=0 " in x or " mp=PermissionError " in x for x in results),
        "the worker sees nothing of the mountpaths", results)
t.check(all(x.endswith("net=OSError") or "net=ConnectionRefusedError" in x or "net=TimeoutError" in x
            for x in results) and not any("net=open" in x for x in results),
        "the worker cannot reach the gateway (no network)", results)

# --- 6b. a target that joins after the registration takes it from the primary ---------
t3 = Node("t3", "target")
t.check(t3.start(join=g.url), "t3 starts (after etl init)")
ts.append(t3)
t.check(poll(lambda: smap_ids() == {g.id} | {x.id for x in ts}, 60), "t3 joins")
on_t3 = 0
for i in range(16):
    name = "n%02d" % i
    r1, r = clulib.follow("PUT", g.url, "/v1/objects/eb/" + name, data[:1000], AUTH)
    t.check(r.status == 200, "PUT eb/%s" % name, r)
    on_t3 += urllib.parse.urlsplit(r1.h("location") or "").port == t3.port
    r = etl_get("up", obj=name)
    t.check(r.status == 200 and r.body == data[:1000].upper(), "GET eb/%s?etl=up" % name, r)
t.check(on_t3 > 0, "some of those objects live on t3", on_t3)
t.check("taken from the primary" in open(t3.log, errors="replace").read(),
        "t3 took the transformer from the primary (its log says so)")

# --- 7. logs, stop/start, rm --------------------------------------------------------
rc, out, err = aisctl("etl", "logs", "up", token=ADMIN)
t.check(rc == 0 and "etl-worker-log: o1" in out + err and "== 127.0.0.1:" in out, "etl logs up", out + err)
rc, out, err = aisctl("etl", "stop", "up", token=ADMIN)
t.check(rc == 0, "etl stop up", out + err)
r = etl_get("up")
t.check(r.status == 503 and b"stopped" in r.body, "a stopped transformer: 503", r)
rc, out, err = aisctl("etl", "start", "up", token=ADMIN)
r = etl_get("up")
t.check(rc == 0 and r.status == 200 and r.body == data.upper(), "etl start: served again", r)
rc, out, err = aisctl("etl", "rm", "up", token=RW)
t.check(rc != 0 and "403" in err, "etl rm with a non-admin token: 403", out + err)
rc, out, err = aisctl("etl", "rm", "up", token=ADMIN)
t.check(rc == 0, "etl rm up", out + err)
r = etl_get("up")
t.check(r.status == 404, "after etl rm: 404", r)

# --- the per-member helper (no daemon): a shard rebuilt, .txt members changed --------
import io  # noqa: E402
import sys  # noqa: E402
import tarfile  # noqa: E402
sys.path.insert(0, os.path.abspath(PYDIR))
from aisd.etl import transform_members  # noqa: E402
src = io.BytesIO()
with tarfile.open(fileobj=src, mode="w") as tf:
    for name, body in (("s1.txt", b"abc"), ("s1.bin", b"\x01abc"), ("s2.txt", b"hello")):
        ti = tarfile.TarInfo(name)
        ti.size = len(body)
        tf.addfile(ti, io.BytesIO(body))
out = transform_members(lambda n, b, m, a: b.upper() * 2, src.getvalue(), ext=(".txt",))
with tarfile.open(fileobj=io.BytesIO(out)) as tf:
    got = [(m.name, tf.extractfile(m).read()) for m in tf]
t.eq(got, [("s1.txt", b"ABCABC"), ("s1.bin", b"\x01abc"), ("s2.txt", b"HELLOHELLO")],
     "aisd.etl.transform_members: .txt members transformed, order and others kept")

clulib.stop_all()
shutil.rmtree(wdir, ignore_errors=True)
clulib.check_logs([g] + ts)
t.finish()
