#!/usr/bin/env python3
"""test_fdlimit.py - descriptor exhaustion: a gateway (the primary) runs
under `ulimit -n 256` with a target; 1,000 client connections are opened
to it and held (reopened as the gateway closes them, with or without a
503 first) for ~8 s. Throughout,
/v1/health on the gateway answers 200 within 1 s (a probe's connection
refused at the cap with 503 and Retry-After, as any of the flood's may
be, is asked again once, as a health checker does, and must then be
served; fewer than a quarter of the probes may need that); afterwards its log grew by
less than 1 MB, the target was never marked failed (it is in the map,
active) and the gateway serves as before. The gateway's connection limit
comes from its descriptor limit (its start-up line says so), idle
connections are evicted at that limit, and an accept that fails with
EMFILE pauses accepting instead of spinning.
"""
# timeout: 180
import os
import resource
import socket
import threading
import time

import clulib
from clulib import Node, get, poll
from itlib import T

t = T()
NCONN, SECS, LIMIT = 1000, 8, 256
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < NCONN + 200 and hard >= NCONN + 200:
    resource.setrlimit(resource.RLIMIT_NOFILE, (NCONN + 200, hard))
t.check(resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= NCONN + 100, "this test may open %d sockets" % NCONN)

clulib.init(t, "fdlimit", ["--set", "cluster.keepalive=500ms", "--set", "cluster.grace=3s",
                           "--set", "store.fsync=never"])
g, t1 = Node("g1", "gateway"), Node("t1", "target")
g.preexec = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))
if not t.check(g.start() and t1.start(join=g.url), "a gateway under ulimit -n %d and a target" % LIMIT):
    t.finish()
if not t.check(poll(lambda: clulib.smap_ids(g) == {g.id, t1.id}, 15), "the target joined"):
    t.finish()
with open("/proc/%d/limits" % clulib.procs["g1"].pid) as f:
    lim = [ln for ln in f if ln.startswith("Max open files")]
t.check(lim and lim[0].split()[3] == str(LIMIT), "the gateway's descriptor limit is %d" % LIMIT, lim)
log0 = os.path.getsize(g.log)
startup = open(g.log, errors="replace").read()
t.check("connections: at most 128" in startup, "the gateway derives its connection cap from the limit (128)")

host, port = "127.0.0.1", g.port
stop = threading.Event()
held = []
opened = [0]


def attacker():
    deadline = time.monotonic() + SECS
    while time.monotonic() < deadline and not stop.is_set():
        # reopen what the gateway closed, up to NCONN at once
        live = []
        for s in held:
            try:
                s.setblocking(False)
                s.recv(1, socket.MSG_PEEK)  # the close, or the 503 sent before it
                s.close()
                continue
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                continue
            live.append(s)
        held[:] = live
        while len(held) < NCONN and time.monotonic() < deadline:
            s = socket.socket()
            s.settimeout(0.5)
            try:
                s.connect((host, port))
                held.append(s)
                opened[0] += 1
            except OSError:
                s.close()
                break
        time.sleep(0.2)


lat, fails, retried = [], [], []


def prober():
    deadline = time.monotonic() + SECS
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        try:
            st = get(g.url, "/v1/health", timeout=1).status
            if st == 503:  # refused at the cap (Retry-After), as a flood's own connect may be: asked again
                retried.append(st)
                time.sleep(0.1)
                st = get(g.url, "/v1/health", timeout=1).status
            if st != 200:
                fails.append(st)
        except OSError as e:
            fails.append(str(e))
        lat.append(time.monotonic() - t0)
        time.sleep(0.2)


ths = [threading.Thread(target=attacker), threading.Thread(target=prober)]
for x in ths:
    x.start()
for x in ths:
    x.join(SECS + 60)
stop.set()
t.diag("%d connections opened, %d held at the end; %d health checks (%d asked again after a 503), slowest %.3f s" %
       (opened[0], len(held), len(lat), len(retried), max(lat or [0])))
t.check(opened[0] >= NCONN, "at least %d connections were opened" % NCONN, opened[0])
t.check(lat and not fails and max(lat) < 1.0 and len(retried) * 4 < len(lat),
        "/v1/health answered within 1 s throughout",
        "fails %s, slowest %.3f s" % (fails[:5], max(lat or [0])))
for s in held:
    s.close()
grew = os.path.getsize(g.log) - log0
t.check(grew < 1 << 20, "the gateway's log grew by less than 1 MB (%d bytes)" % grew)
m = get(g.url, "/v1/cluster?what=smap").json() or {}
states = {n["id"]: n.get("state", "active") for n in m.get("nodes", [])}
t.check(states.get(t1.id) == "active", "the target was not marked failed", states)
with open(g.log, errors="replace") as f:
    t.check(not [ln for ln in f if "failed" in ln and t1.id in ln], "no health-check failure of the target logged")
r1, r2 = clulib.follow("PUT", g.url, "/v1/objects/b/o", b"after")
t.check(r2.status in (200, 404), "the gateway still routes requests", r2)
t.eq(get(g.url, "/v1/health", timeout=2).status, 200, "health after the flood")
clulib.check_logs([g, t1])
t.finish()
