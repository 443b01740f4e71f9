"""test_etl_keepalive.py - the connections a target keeps to its http
transformer workers (--comm http): one kept open across requests per
worker, a fresh one when the worker closes it or dies, answers read in any
framing HTTP/1.1 allows.

A cluster of 1 gateway + 1 target. The workers are small raw-socket
servers (not aisd.etl) that number their connections and the requests on
each, and answer "pid=P conn=C req=R len=N" (N: the bytes they got), in
one of four ways: keep (Content-Length, the connection kept), drop
(Content-Length, then the connection closed without saying so), close
("Connection: close"), chunked (Transfer-Encoding: chunked, kept).

Checks:
 1. keep: six GETs ?etl= go over one connection to the worker (conn=1,
    req=1..6), each with the object's bytes.
 2. drop: every GET answered 200 (a kept connection found closed is
    replaced by a new one), and no worker was killed for it (etl ls:
    crashes 0).
 3. close: every GET answered 200, each on a new connection.
 4. chunked: the chunked body decoded; the connection kept.
 5. The keep worker killed (SIGKILL): the next GETs are answered by a new
    worker on a new connection (its dead one dropped), no 5xx past the
    back-off.
 6. Two workers, 16 concurrent GETs: every one 200 and each worker served
    them all on its first connection (a second connection to a worker
    that serves one at a time would hang: never more than one per
    worker).
 7. No error-level line in any node's log.
"""
# timeout: 120
import concurrent.futures
import json
import os
import re
import signal

from itlib import T

import clulib
from clulib import Node, poll, request

t = T()
clulib.init(t, "etlka", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never"])

WORKER = r'''
import os, re, socket, sys
mode = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=int(os.environ["AISD_ETL_FD"]))
nconn = 0


def chunk(b):
    return b"%x\r\n%s\r\n" % (len(b), b)


while True:
    c, _ = s.accept()
    nconn += 1
    nreq, buf = 0, b""
    while True:
        while b"\r\n\r\n" not in buf:
            b = c.recv(65536)
            if not b:
                break
            buf += b
        if b"\r\n\r\n" not in buf:
            break
        head, buf = buf.split(b"\r\n\r\n", 1)
        n = int(re.search(rb"(?i)\r\ncontent-length: *([0-9]+)", head).group(1))
        while len(buf) < n:
            b = c.recv(1 << 20)
            if not b:
                break
            buf += b
        data, buf = buf[:n], buf[n:]
        nreq += 1
        body = b"pid=%d conn=%d req=%d len=%d" % (os.getpid(), nconn, nreq, len(data))
        if mode == "chunked":
            ans = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(body[:7]) + chunk(body[7:]) + b"0\r\n\r\n"
        else:
            ans = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n" % (
                len(body), b"Connection: close\r\n" if mode == "close" else b"") + body
        c.sendall(ans)
        if mode in ("drop", "close"):
            break
    c.close()
'''


def aisctl(*args):
    return clulib.aisctl(g.url, *args)


def etl_get(name, obj="o1"):
    _, r = clulib.follow("GET", g.url, "/v1/objects/eb/%s?etl=%s" % (obj, name))
    return r


def fields(r):
    """{"pid":P,"conn":C,"req":R,"len":N} of a worker's answer, {} if none."""
    if r.status != 200:
        return {}
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", r.body.decode(errors="replace"))}


g = Node("g1", "gateway")
tg = Node("t1", "target")
for n in (g, tg):
    if not t.check(n.start(join=None if n is g else g.url), "%s starts" % n.name):
        t.finish()
t.check(poll(lambda: clulib.smap_ids(g) == {g.id, tg.id}, 60), "the cluster forms")

wdir = clulib.etl_scripts("aisd-etlka-", {"w.py": WORKER})
JSON = {"Content-Type": "application/json"}
r = request("POST", g.url, "/v1/buckets/eb", json.dumps({"action": "create-bck"}).encode(), JSON)
t.check(r.status == 200, "create bucket eb", r)
SIZE = 300000
_, r = clulib.follow("PUT", g.url, "/v1/objects/eb/o1", os.urandom(SIZE))
t.check(r.status == 200, "PUT eb/o1", r)
for name, mode, workers in (("uk", "keep", 1), ("ud", "drop", 1), ("uc", "close", 1), ("uch", "chunked", 1),
                            ("u2", "keep", 2)):
    rc, out, err = aisctl("etl", "init", name, "--cmd", "python3 %s/w.py %s" % (wdir, mode), "--comm", "http",
                          "--workers", str(workers), "--timeout", "10s")
    t.check(rc == 0, "etl init %s (%s, %d workers)" % (name, mode, workers), out + err)

# --- 1-4 ---------------------------------------------------------------------------
seen = {}
for name in ("uk", "ud", "uc", "uch"):
    rs = [etl_get(name) for _ in range(6)]
    seen[name] = [fields(r) for r in rs]
    t.check(all(r.status == 200 for r in rs) and all(f.get("len") == SIZE for f in seen[name]),
            "?etl=%s: six GETs answered 200, the worker got every byte" % name,
            [(r.status, r.body[:80]) for r in rs])
t.eq([(f.get("conn"), f.get("req")) for f in seen["uk"]], [(1, i) for i in range(1, 7)],
     "keep: the six requests on one connection")
t.eq([(f.get("conn"), f.get("req")) for f in seen["ud"]], [(i, 1) for i in range(1, 7)],
     "drop: a connection the worker closed is replaced by a new one")
t.eq([(f.get("conn"), f.get("req")) for f in seen["uc"]], [(i, 1) for i in range(1, 7)],
     "close: Connection: close honoured, a new connection for each")
t.eq([(f.get("conn"), f.get("req")) for f in seen["uch"]], [(1, i) for i in range(1, 7)],
     "chunked: the body decoded, the connection kept")
t.check(len({f.get("pid") for f in seen["ud"] + seen["uc"]}) == 2, "drop, close: their workers never restarted",
        seen["ud"] + seen["uc"])
r = request("GET", tg.url, "/v1/etl")
lst = {e["name"]: e for e in json.loads(r.body).get("etl", [])} if r.status == 200 else {}
t.check(all(lst.get(n, {}).get("crashes") == 0 for n in ("uk", "ud", "uc", "uch")),
        "no worker was killed (crashes 0 on the target)", {n: lst.get(n, {}).get("crashes") for n in lst})

# --- 5. a killed worker ------------------------------------------------------------
old = seen["uk"][0].get("pid", 0)
if old:
    os.kill(old, signal.SIGKILL)
last = [None]


def back():
    last[0] = etl_get("uk")
    return last[0].status == 200


t.check(poll(back, 20), "after the worker's SIGKILL: ?etl=uk answered 200 again", last[0])
f = fields(last[0])
t.check(f.get("pid") not in (None, old) and f.get("conn") == 1 and f.get("req") == 1,
        "a new worker, on a new connection (the dead one's dropped)", f)
r = etl_get("uk")
t.eq((fields(r).get("conn"), fields(r).get("req")), (1, 2), "the new connection kept")

# --- 6. two workers, concurrent GETs -------------------------------------------------
with concurrent.futures.ThreadPoolExecutor(8) as ex:
    rs = list(ex.map(lambda _: etl_get("u2"), range(16)))
fs = [fields(r) for r in rs]
t.check(all(r.status == 200 for r in rs), "16 concurrent GETs ?etl=u2: all 200", [(r.status, r.body[:100]) for r in rs])
t.check(len({f.get("pid") for f in fs}) <= 2 and all(f.get("conn") == 1 for f in fs),
        "each of its 2 workers served them on one connection", fs)
for name in ("uk", "ud", "uc", "uch", "u2"):
    aisctl("etl", "rm", name)
clulib.check_logs([g, tg])
t.finish()
