#!/usr/bin/env python3
"""test_conncap.py - one client address cannot take every connection slot
(net.max_conns_per_client).

A gateway and a target, both under `ulimit -n 256` (connection limit 128,
so 32 connections per client address by default), net.header_timeout=3s
(a head sent a byte a second is answered 408 after it).
From 127.0.0.2 (not a node's address) a slowloris keeps opening up to 200
connections to each node, each sending a request head one byte a second,
for ~8 s. Throughout, /v1/health on both answers 200 within 1 s; the
connections past 32 get 503 (JSON: "too many connections from
127.0.0.2"); the target is never marked failed; /metrics counts the
refusals. Afterwards: 60 connections at once from 127.0.0.1 (a node's
address: the cluster's own calls) are all served.
"""
# timeout: 180
import resource
import socket
import threading
import time

import clulib
from clulib import Node, get, poll
from itlib import T

t = T()
LIMIT, NCONN, SECS, CAP = 256, 200, 8, 32
ATTACKER = "127.0.0.2"
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < 2 * NCONN + 300 and hard >= 2 * NCONN + 300:
    resource.setrlimit(resource.RLIMIT_NOFILE, (2 * NCONN + 300, hard))

clulib.init(t, "conncap", ["--set", "cluster.keepalive=500ms", "--set", "cluster.grace=3s",
                           "--set", "store.fsync=never", "--set", "net.header_timeout=3s"])
g, t1 = Node("g1", "gateway"), Node("t1", "target")
g.preexec = t1.preexec = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))
if not t.check(g.start() and t1.start(join=g.url), "a gateway and a target under ulimit -n %d" % LIMIT):
    t.finish()
if not t.check(poll(lambda: clulib.smap_ids(g) == {g.id, t1.id}, 15), "the target joined"):
    t.finish()

stop = threading.Event()
stats = {"opened": 0, "capped": 0, "other": []}
HEAD = b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 64


def slowloris(node):
    held = []  # [socket, bytes of HEAD sent]
    deadline = time.monotonic() + SECS
    while time.monotonic() < deadline:
        live = []
        for s, k in held:
            try:
                s.setblocking(False)
                d = s.recv(4096)
                if d:
                    if b" 503 " in d[:16] and b"too many connections from 127.0.0.2" in d:
                        stats["capped"] += 1
                    else:
                        stats["other"].append(d[:60])
                s.close()
                continue
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                continue
            try:
                s.send(HEAD[k:k + 1])
                live.append([s, min(k + 1, len(HEAD) - 1)])
            except OSError:
                s.close()
        held = live
        while len(held) < NCONN and time.monotonic() < deadline:
            s = socket.socket()
            s.bind((ATTACKER, 0))
            s.settimeout(0.5)
            try:
                s.connect(("127.0.0.1", node.port))
                s.send(HEAD[:1])
                held.append([s, 1])
                stats["opened"] += 1
            except OSError:
                s.close()
                break
        time.sleep(1.0 if len(held) >= NCONN else 0.05)
    for s, _ in held:
        s.close()


lat, fails = [], []

ths = [threading.Thread(target=slowloris, args=(g,)), threading.Thread(target=slowloris, args=(t1,)),
       threading.Thread(target=clulib.health_prober, args=((g, t1), SECS, lat, fails))]
for x in ths:
    x.start()
for x in ths:
    x.join(SECS + 60)
t.diag("slowloris: %d connections opened, %d refused at the per-client cap, other answers %s; "
       "%d health checks, slowest %.3f s" % (stats["opened"], stats["capped"], stats["other"][:3], len(lat),
                                              max(lat or [0])))
t.check(stats["capped"] > 0, "connections past the per-client cap got 503 (too many connections from 127.0.0.2)",
        stats)
t.check(lat and not fails and max(lat) < 1.0, "/v1/health on both answered 200 within 1 s throughout",
        "fails %s, slowest %.3f s" % (fails[:5], max(lat or [0])))
m = get(g.url, "/v1/cluster?what=smap").json() or {}
states = {n["id"]: n.get("state", "active") for n in m.get("nodes", [])}
t.check(states.get(t1.id) == "active", "the target was not marked failed", states)
with open(g.log, errors="replace") as f:
    t.check(not [ln for ln in f if "failed" in ln and t1.id in ln], "no health-check failure of the target logged")
for n in (g, t1):
    body = get(n.url, "/metrics", timeout=5).body.decode(errors="replace")
    v = [ln for ln in body.splitlines() if ln.startswith("aisd_http_connections_capped_total ")]
    t.check(v and int(v[0].split()[1]) > 0, "%s: /metrics counts the connections refused at the cap" % n.name, v)

# a node's address is not held to the cap: 60 connections at once from 127.0.0.1
ss, answered = [], 0
for i in range(60):
    s = socket.create_connection(("127.0.0.1", t1.port), timeout=5)
    ss.append(s)
for s in ss:
    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
for s in ss:
    try:
        if s.recv(64).startswith(b"HTTP/1.1 200"):
            answered += 1
    except OSError:
        pass
    s.close()
t.eq(answered, 60, "60 connections at once from a node's address all served")

t.eq(get(t1.url, "/v1/health", timeout=2).status, 200, "health after the slowloris")
clulib.check_logs([g, t1])
t.finish()
