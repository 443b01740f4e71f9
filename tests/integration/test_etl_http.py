"""test_etl_http.py - transformers spoken to over HTTP on a unix socket
(aisctl etl init NAME --comm http), beside the stdio ones.

A cluster of 1 gateway + 1 target, etl.max_output=1MiB. The same Python
worker (aisd.etl.serve, which speaks what aisd started it for) is
registered twice: "us" over stdio, "uh" over http.

Checks:
 1. aisctl etl init --comm http registers it; etl show says comm http; a
    bad --comm is refused.
 2. Inline GET ?etl= through the gateway: both modes give the same bytes
    (the uppercased 1 MiB object and a small one), etl_args with bytes
    that need encoding reach the worker unchanged.
 2b. aisd.etl's HTTP side alone, over a socketpair: a request whose head
    comes a byte at a time, then its body, then two requests in one send
    (the second's head right after the first's body): each answered
    with its own body; a head read takes no byte of the body after it
    (so the body comes whole in one read).
 3. Offline: aisctl etl bucket with each: the two destination buckets
    hold the same objects, byte for byte.
 3b. archpath with a transform: ?archpath=MEMBER&etl=NAME transforms the
    member alone (both modes, the metadata names it); a missing member is
    404, a compressed shard 400, an invalid archpath 400.
 4. HTTP-mode faults, each a 5xx naming the transformer, the next GET
    right again: the worker exits mid-request (502), answers 500 (502
    with its text), hangs (504 after its timeout), a worker that never
    serves (exits at start: 502 "not serving"), one that answers garbage
    (502 malformed), one that answers too much (507).
 5. The target's descriptors and threads (/proc/PID) are as many after the
    faults as before them (a bounded wait for the counts to settle).
 6. No error-level line in any node's log (the worker faults are warnings).
"""
# timeout: 150
import json
import os
import time
import urllib.parse

from itlib import T

import clulib
from clulib import Node, poll, request

t = T()
clulib.init(t, "etlh", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                        "--set", "etl.max_output=1MiB"])
PYDIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python"))

WORKER = r'''
import json, os, sys, time
from aisd.etl import serve

def fn(data, meta, args):
    if args == "crash":
        os._exit(3)
    if args == "hang":
        time.sleep(60)
    if args == "fail":
        raise ValueError("worker says no")
    if args == "big":
        return b"x" * (2 << 20)
    if args == "meta":
        return json.dumps(meta, sort_keys=True).encode()
    if args:
        return ("%s|%s|" % (meta.get("object"), args)).encode() + data.upper()
    return data.upper()

serve(fn)
'''

GARBAGE = r'''
import os, socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=int(os.environ["AISD_ETL_FD"]))
while True:
    c, _ = s.accept()
    c.recv(65536)
    c.sendall(b"this is not HTTP at all\r\n\r\n")
    c.close()
'''


def aisctl(*args):
    return clulib.aisctl(g.url, *args)


def etl_get(name, obj="o1", args=None):
    path = "/v1/objects/eb/%s?etl=%s" % (obj, name)
    if args is not None:
        path += "&etl_args=" + urllib.parse.quote(args, safe="")
    _, r = clulib.follow("GET", g.url, path)
    return r


g = Node("g1", "gateway")
tg = Node("t1", "target")
for n in (g, tg):
    if not t.check(n.start(join=None if n is g else g.url), "%s starts" % n.name):
        t.finish()
t.check(poll(lambda: clulib.smap_ids(g) == {g.id, tg.id}, 60), "the cluster forms")

wdir = clulib.etl_scripts("aisd-etlh-", {"upper.py": WORKER, "garbage.py": GARBAGE})
JSON = {"Content-Type": "application/json"}
r = request("POST", g.url, "/v1/buckets/eb", json.dumps({"action": "create-bck"}).encode(), JSON)
t.check(r.status == 200, "create bucket eb", r)
data = {"o1": bytes((i * 7 + 97) % 26 + 97 for i in range(1 << 20)), "o2": b"small one", "e0": b""}
for i in range(6):
    data["n%d" % i] = b"abc%d-" % i * (i * 500 + 1)
for name, d in data.items():
    _, r = clulib.follow("PUT", g.url, "/v1/objects/eb/" + name, d)
    t.check(r.status == 200, "PUT eb/%s" % name, r)

# --- 1. registration ---------------------------------------------------------------
env = "PYTHONPATH=%s" % PYDIR
up = "python3 %s/upper.py" % wdir
rc, out, err = aisctl("etl", "init", "bad", "--cmd", up, "--comm", "grpc")
t.check(rc != 0 and "comm" in err, "etl init --comm grpc: refused", out + err)
for name, comm in (("us", "stdio"), ("uh", "http")):
    rc, out, err = aisctl("etl", "init", name, "--cmd", up, "--comm", comm, "--timeout", "5s", "--env", env)
    t.check(rc == 0, "etl init %s --comm %s" % (name, comm), out + err)
rc, out, err = aisctl("etl", "show", "uh")
t.check(rc == 0 and '"comm": "http"' in out, "etl show uh: comm http", out + err)
for name, cmd in (("ugarb", "python3 %s/garbage.py" % wdir), ("unone", "exit 0")):
    rc, out, err = aisctl("etl", "init", name, "--cmd", cmd, "--comm", "http", "--timeout", "2s", "--env", env)
    t.check(rc == 0, "etl init %s --comm http" % name, out + err)

# --- 2. inline, both modes ----------------------------------------------------------
for name, d in data.items():
    rs, rh = etl_get("us", name), etl_get("uh", name)
    t.check(rs.status == 200 and rh.status == 200 and rs.body == rh.body == d.upper(),
            "GET eb/%s ?etl=us and ?etl=uh: 200, the same uppercased bytes" % name,
            (rs.status, rh.status, len(rs.body), len(rh.body), rh.body[:200]))
odd = "a b%c\u00e9\r\nx"
rs, rh = etl_get("us", "o2", odd), etl_get("uh", "o2", odd)
want = ("o2|%s|" % odd).encode() + b"SMALL ONE"
t.check(rs.body == rh.body == want, "etl_args with spaces, %, CR LF and UTF-8 reach both workers unchanged",
        (rs.status, rs.body, rh.status, rh.body))

# --- 2b. aisd.etl's HTTP reader alone ----------------------------------------------
def worker_conn():
    """aisd.etl's connection loop on one end of a socketpair (a thread);
    the other end returned."""
    import socket
    import sys
    import threading
    sys.path.insert(0, PYDIR)
    from aisd import etl as aisd_etl
    a, b = socket.socketpair()
    th = threading.Thread(target=aisd_etl._serve_conn, args=(lambda d, m, x: d.upper(), a), daemon=True)
    th.start()
    return b


def put_req(body):
    return b"PUT / HTTP/1.1\r\nHost: aisd-etl\r\nContent-Length: %d\r\nAis-Etl-Meta: %%7B%%7D\r\n\r\n" % len(body) + body


def read_answer(f):
    line = f.readline()
    hdrs = {}
    while True:
        ln = f.readline()
        if ln in (b"\r\n", b""):
            break
        k, _, v = ln.decode().partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return line, f.read(int(hdrs.get("content-length", 0)))


c = worker_conn()
c.settimeout(10)
cf = c.makefile("rb")
b1, b2, b3 = b"first body " * 3000, b"second", b"third body " * 50
for ch in put_req(b1)[:-len(b1)]:
    c.sendall(bytes([ch]))
    time.sleep(0.001)
c.sendall(b1)
ans = read_answer(cf)
t.check(ans == (b"HTTP/1.1 200 OK\r\n", b1.upper()), "aisd.etl: a head a byte at a time, then the body: its answer",
        (ans[0], len(ans[1])))
c.sendall(put_req(b2) + put_req(b3))
a2, a3 = read_answer(cf), read_answer(cf)
t.check(a2[1] == b2.upper() and a3[1] == b3.upper(), "aisd.etl: two requests in one send: each its own answer",
        (a2[0], a2[1][:40], a3[0], len(a3[1])))
cf.close()
c.close()
import socket  # noqa: E402
from aisd.etl import _Reader  # noqa: E402 (PYDIR on the path: worker_conn)
a, b = socket.socketpair()
b.sendall(put_req(b1))
rd = _Reader(None, a)
head = rd.until(b"\r\n\r\n", 65536)
t.check(head == put_req(b1)[:-len(b1)] and rd.buf == b"", "aisd.etl: a head read takes no byte of the body after it",
        (head[-20:], rd.buf[:20]))
a.close()
b.close()

# --- 3. offline, both modes ---------------------------------------------------------
for name, dst in (("us", "ds"), ("uh", "dh")):
    r = request("POST", g.url, "/v1/buckets/" + dst, json.dumps({"action": "create-bck"}).encode(), JSON)
    t.check(r.status == 200, "create bucket " + dst, r)
    rc, out, err = aisctl("etl", "bucket", name, "eb", dst)
    w = out.split()
    rid = w[w.index("job") + 1] if rc == 0 and "job" in w else "none"
    t.check(rc == 0 and rid != "none", "aisctl etl bucket %s eb %s: started" % (name, dst), out + err)
    rc, out, err = aisctl("job", "wait", rid, "--timeout-s", "60")
    t.eq((rc, out.strip()), (0, "%s: done" % rid), "aisctl job wait %s (%s): done" % (rid, name))
for name, d in data.items():
    _, a = clulib.follow("GET", g.url, "/v1/objects/ds/" + name)
    _, b = clulib.follow("GET", g.url, "/v1/objects/dh/" + name)
    t.check(a.status == b.status == 200 and a.body == b.body == d.upper(),
            "offline: ds/%s and dh/%s the same uppercased bytes" % (name, name), (a.status, b.status))

# --- 3b. archpath with a transform ---------------------------------------------------
import io  # noqa: E402
import tarfile  # noqa: E402
members = {"s/a.txt": b"alpha member", "s/b.bin": bytes(range(97, 123)) * 300, "s/c.txt": b""}
tb = io.BytesIO()
with tarfile.open(fileobj=tb, mode="w", format=tarfile.USTAR_FORMAT) as tf:
    for mn, md in members.items():
        ti = tarfile.TarInfo(mn)
        ti.size = len(md)
        tf.addfile(ti, io.BytesIO(md))
for sname in ("shard.tar", "shard.tgz"):
    _, r = clulib.follow("PUT", g.url, "/v1/objects/eb/" + sname, tb.getvalue())
    t.check(r.status == 200, "PUT eb/" + sname, r)


def arch_get(name, member, shard="shard.tar", args=None):
    p = "/v1/objects/eb/%s?archpath=%s&etl=%s" % (shard, urllib.parse.quote(member, safe=""), name)
    if args:
        p += "&etl_args=" + args
    _, r = clulib.follow("GET", g.url, p)
    return r


for name in ("us", "uh"):
    for mn, md in members.items():
        r = arch_get(name, mn)
        t.check(r.status == 200 and r.body == md.upper(), "GET shard.tar?archpath=%s&etl=%s: the member uppercased"
                % (mn, name), (r.status, r.body[:100]))
    r = arch_get(name, "s/a.txt", args="meta")
    m = json.loads(r.body) if r.status == 200 else {}
    t.check(m.get("archpath") == "s/a.txt" and m.get("object") == "shard.tar" and m.get("size") == 12,
            "archpath+etl=%s: the worker's metadata names the member" % name, (r.status, r.body[:200]))
    r = arch_get(name, "s/nosuch")
    t.check(r.status == 404 and b"s/nosuch" in r.body, "archpath+etl=%s of a missing member: 404" % name, r)
r = arch_get("uh", "s/a.txt", shard="shard.tgz")
t.check(r.status == 400, "archpath+etl over a compressed shard: 400", r)
r = arch_get("uh", "")
t.check(r.status == 400, "archpath+etl with an empty archpath: 400", r)
r = arch_get("uh", "s/a.txt", shard="o2")
t.check(r.status == 400 and b"not a valid tar" in r.body, "archpath+etl over an object that is no tar: 400", r)

# --- 4. faults over http, descriptors and threads ------------------------------------
pid = clulib.procs[tg.name].pid


def counts():
    return (len(os.listdir("/proc/%d/fd" % pid)), len(os.listdir("/proc/%d/task" % pid)))


etl_get("uh", "o2")
before = counts()
faults = (("uh", "crash", 502, b"without answering"), ("uh", "fail", 502, b"worker says no"), ("uh", "hang", 504, b"timed out"),
          ("unone", None, 502, b""), ("ugarb", None, 502, b"malformed"),
          ("uh", "big", 507, b"max_output"))
for name, args, code, why in faults:
    r = etl_get(name, "o2", args)
    t.check(r.status == code and name.encode() in r.body and why in r.body,
            "?etl=%s&etl_args=%s: %d naming %s and %s" % (name, args, code, name, why.decode()), r)
    r = None
    ok = poll(lambda: etl_get("uh", "o2").body == b"SMALL ONE", 15)
    t.check(ok, "after it, ?etl=uh is right again")
after = [None]


def settled():
    after[0] = counts()
    return after[0][0] <= before[0] and after[0][1] <= before[1]


t.check(poll(settled, 20), "the target's descriptors and threads: as many after the faults as before",
        (before, after[0]))
rc, out, err = aisctl("etl", "ls")
t.check(rc == 0 and "uh" in out, "etl ls", out + err)
for name in ("us", "uh", "ugarb", "unone"):
    aisctl("etl", "rm", name)
clulib.check_logs([g, tg])
t.finish()
