#!/usr/bin/env python3
"""test_fdbudget.py - one client cannot exhaust a node's descriptors below
the connection limit, although each of its requests holds more than its
connection (a GET its file, a gateway's S3 relay its socket to the target
and a pipe each way).

A gateway and a target, both under `ulimit -n 256` (connection limit and
descriptor budget 128 each); net.max_conns_per_client is raised so that
the per-client cap does not stop the attacker first. From 127.0.0.2 (not
a node's address) a client opens 125 GETs of a 4 MiB object straight to
the target and 125 S3 GETs of it through the gateway, and reads none of
them, for ~8 s. Throughout, /v1/health on both answers 200 within 1 s;
the target is never marked failed; some of the GETs were refused with 503
("too many descriptors", Retry-After; JSON, or an S3 error document with
code SlowDown for S3 requests) instead of opened; neither
node logged EMFILE; afterwards both serve as before, and the descriptor
budget is back to what idle connections hold.
"""
# timeout: 180
import json
import os
import resource
import socket
import threading
import time

import clulib
from clulib import Node, follow, get, poll, request
from itlib import T

t = T()
LIMIT, NGET, SECS, SIZE = 256, 125, 8, 4 << 20
ATTACKER = "127.0.0.2"
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < 2 * NGET + 200 and hard >= 2 * NGET + 200:
    resource.setrlimit(resource.RLIMIT_NOFILE, (2 * NGET + 200, hard))

clulib.init(t, "fdbudget", ["--set", "cluster.keepalive=500ms", "--set", "cluster.grace=3s",
                            "--set", "store.fsync=never", "--set", "s3.auth=off",
                            "--set", "net.max_conns_per_client=10000"])
g, t1 = Node("g1", "gateway"), Node("t1", "target")
g.preexec = t1.preexec = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))
if not t.check(g.start() and t1.start(join=g.url), "a gateway and a target under ulimit -n %d" % LIMIT):
    t.finish()
if not t.check(poll(lambda: clulib.smap_ids(g) == {g.id, t1.id}, 15), "the target joined"):
    t.finish()
JSON = {"Content-Type": "application/json"}
r1, r = follow("POST", g.url, "/v1/buckets/fdb", json.dumps({"action": "create-bck"}), JSON)
t.eq(r.status, 200, "bucket created")
data = os.urandom(SIZE)
r1, r = follow("PUT", g.url, "/v1/objects/fdb/big", data)
t.eq(r.status, 200, "a %d MiB object PUT" % (SIZE >> 20))


def budget(n):
    m = get(n.url, "/metrics", timeout=5).body.decode(errors="replace")
    v = {}
    for ln in m.splitlines():
        if ln.startswith("aisd_http_fds_"):
            k, x = ln.split()
            v[k] = int(float(x))
    return v.get("aisd_http_fds_held"), v.get("aisd_http_fds_budget")


for n in (g, t1):
    held, b = budget(n)
    t.check(b == 128, "%s: a descriptor budget of 128 under ulimit -n %d" % (n.name, LIMIT), b)

stop = threading.Event()
socks, lock = [], threading.Lock()
answers = {"ok": 0, "fd503": 0, "s3xml": 0, "other": []}


def open_get(node, path):
    """A GET from ATTACKER that reads only the answer's head (or what
    arrives within 2 s), with a tiny receive buffer."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind((ATTACKER, 0))
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", node.port))
        s.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (path.encode(), node.port))
        head = s.recv(4096)
    except OSError as e:
        s.close()
        with lock:
            answers["other"].append(str(e))
        return
    with lock:
        if head.startswith(b"HTTP/1.1 200"):
            answers["ok"] += 1
            socks.append(s)  # held, never read
            return
        if head.startswith(b"HTTP/1.1 503") and b"too many descriptors" in head and b"Retry-After" in head:
            answers["fd503"] += 1
            if b"<Code>SlowDown</Code>" in head:
                answers["s3xml"] += 1
        else:
            answers["other"].append(head[:80])
    s.close()


def attacker():
    deadline = time.monotonic() + SECS
    for i in range(NGET):
        if time.monotonic() > deadline:
            break
        open_get(t1, "/v1/objects/fdb/big")
        open_get(g, "/fdb/big")  # S3, relayed by the gateway
    stop.wait(max(0, deadline - time.monotonic()))


lat, fails = [], []

ths = [threading.Thread(target=attacker),
       threading.Thread(target=clulib.health_prober, args=((g, t1), SECS + 2, lat, fails))]
for x in ths:
    x.start()
for x in ths:
    x.join(SECS + 90)
t.diag("answers: %d streaming (held unread), %d refused for descriptors, other %s; %d health checks, slowest %.3f s"
       % (answers["ok"], answers["fd503"], answers["other"][:3], len(lat), max(lat or [0])))
t.check(answers["ok"] > 0 and answers["fd503"] > 0,
        "some GETs streamed and some were refused with 503 (too many descriptors, Retry-After)", answers)
t.check(answers["s3xml"] > 0, "the gateway refused S3 GETs with an S3 error document (SlowDown)", answers["s3xml"])
t.check(lat and not fails and max(lat) < 1.0, "/v1/health on both answered 200 within 1 s throughout",
        "fails %s, slowest %.3f s" % (fails[:5], max(lat or [0])))
m = get(g.url, "/v1/cluster?what=smap").json() or {}
states = {n["id"]: n.get("state", "active") for n in m.get("nodes", [])}
t.check(states.get(t1.id) == "active", "the target was not marked failed", states)
for s in socks:
    s.close()
for n in (g, t1):
    with open(n.log, errors="replace") as f:
        bad = [ln for ln in f if "Too many open files" in ln or ("failed" in ln and t1.id in ln)]
    t.check(not bad, "%s logged no EMFILE and no failure of the target" % n.name, bad[:3])
# the budget comes back once the unread GETs are gone
t.check(poll(lambda: budget(t1)[0] is not None and budget(t1)[0] < 16 and budget(g)[0] < 16, 15),
        "the descriptors held come back (target %s, gateway %s)" % (budget(t1)[0], budget(g)[0]))
r1, r = follow("GET", g.url, "/v1/objects/fdb/big")
t.check(r.status == 200 and r.body == data, "the object reads back whole afterwards", r.status)
r = request("GET", g.url, "/fdb/big")
t.check(r.status == 200 and r.body == data, "... and through S3", r.status)
clulib.check_logs([g, t1])
t.finish()
