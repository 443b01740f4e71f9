#!/usr/bin/env python3
"""test_ratelimit_peers.py - the cluster's own calls are not held to
net.rate_limit, clients are.

A gateway and 2 targets, each with net.rate_limit=5 (burst 5) and one
event loop (net.workers=1: the rate is per worker). Two
clients (127.0.0.2 and 127.0.0.3, not node addresses) each list a bucket
through the gateway 30 times at 4 a second (under the limit each): the
gateway's calls to the targets come from 127.0.0.1 at 8 a second, over the
targets' per-client rate if they were counted. Every listing is 200. A
client from 127.0.0.2 sending 40 at once still gets 429s from the gateway.
All of it twice: without cluster.secret (a node's address is the cluster's
own) and with it (the cluster's signature is).
"""
# timeout: 120
import http.client
import json
import threading
import time

import clulib
from clulib import Node, poll, request, smap_ids
from itlib import T

t = T()
BODY = json.dumps({"action": "list", "value": {"pagesize": 100}})
B = "rl"


def list_from(port, src):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(src, 0))
    try:
        c.request("GET", "/v1/buckets/" + B, body=BODY, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def run(sub, extra, how):
    clulib.init(t, sub, ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                         "--set", "net.rate_limit=5", "--set", "net.rate_burst=5",
                         "--set", "net.workers=1"] + extra)
    g, t1, t2 = Node("g", "gateway"), Node("t1", "target"), Node("t2", "target")
    if not t.check(g.start() and t1.start(join=g.url) and t2.start(join=g.url), how + ": a gateway and 2 targets"):
        return
    if not t.check(poll(lambda: smap_ids(g) == {g.id, t1.id, t2.id}, 15), how + ": the targets joined"):
        return
    r = request("POST", g.url, "/v1/buckets/" + B, '{"action":"create-bck"}', {"Content-Type": "application/json"})
    t.eq(r.status, 200, how + ": bucket created")
    time.sleep(1.5)  # the tokens spent on setup come back
    results = {}

    def client(src):
        res = results[src] = []
        for _ in range(30):
            t0 = time.monotonic()
            res.append(list_from(g.port, src))
            time.sleep(max(0, 0.25 - (time.monotonic() - t0)))

    ths = [threading.Thread(target=client, args=(a,)) for a in ("127.0.0.2", "127.0.0.3")]
    for th in ths:
        th.start()
    for th in ths:
        th.join(60)
    for src, res in sorted(results.items()):
        bad = [x for x in res if x[0] != 200]
        t.check(len(res) == 30 and not bad, "%s: 30 listings from %s at 4/s through the gateway: all 200" % (how, src),
                bad[:2])
    time.sleep(1.5)
    codes = [list_from(g.port, "127.0.0.2")[0] for _ in range(40)]
    t.check(codes.count(429) > 0 and codes.count(200) >= 5, how + ": 40 at once from one client: 429s past the limit",
            codes)


run("rlpeers", [], "no secret")
clulib.stop_all()
clulib.procs.clear()
_, csf = clulib.secret_files("rlpeers-secret")
run("rlpeers-secret", ["--set", "cluster.secret_file=" + csf], "cluster.secret")
t.finish()
