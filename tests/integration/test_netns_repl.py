"""test_netns_repl.py - a copies=2 target cut off the network and healed,
with every node in its own network namespace (deploy/netns/cluster.sh): 1
gateway (g0) and 3 targets (t0..t2), keepalive 300 ms, grace 1.5 s. Needs
root and `ip netns`; without them it prints one "ok # skip" line.

Bucket r has mirror.copies=2; 300 objects (1-20 KiB) are PUT before.
 1. t1 is cut (its link goes down) while a reader loop GETs every object
    through g0 and a writer PUTs new ones: the GETs that fail do so only
    inside the detection window (the number is printed); the primary drops
    t1 from the map, and the rebalance gives every object its 2 copies on
    t0 and t2.
 2. healed: t1 rejoins, the rebalance converges (every target's job done
    on the newest map), every object (those PUT during the cut too) is on
    exactly its 2 HRW holders among the 3 targets and reads back with its
    bytes: no acknowledged PUT lost.
"""
# serial: network namespaces (ip netns)
# timeout: 180
import json
import os
import threading
import time

from itlib import T
from netnslib import BINDIR, require, sh

import hrwlib
from clulib import request

t = T()
NAME = "r%d" % (os.getpid() % 100000)
NET = "10.215.%d" % (os.getpid() % 250 + 1)
JSON = {"Content-Type": "application/json"}
require(NAME)


IP = {"g0": NET + ".10", "t0": NET + ".100", "t1": NET + ".101", "t2": NET + ".102"}
G = "http://%s:8080" % IP["g0"]


def url(n):
    return "http://%s:8080" % IP[n]


def req(method, base, path, body=None, headers=None, timeout=10):
    try:
        return request(method, base, path, body, headers, timeout=timeout)
    except OSError:
        return None


def follow(method, path, body=None):
    r = req(method, G, path, body)
    if r is None or r.status != 307:
        return r
    loc = r.h("location")
    base, _, p = loc.partition("/v1/")
    return req(method, base, "/v1/" + p, body)


def smap():
    r = req("GET", G, "/v1/cluster?what=smap", timeout=5)
    return r.json() if r and r.status == 200 else None


def active_ids():
    d = smap() or {}
    return sorted(n["id"] for n in d.get("nodes", []) if n["role"] == "target" and n["state"] == "active")


def settled(n):
    """n active targets, and every target's rebalance done on the newest map."""
    d = smap()
    if not d or len(active_ids()) != n:
        return False
    r = req("GET", G, "/v1/cluster?what=rebalance", timeout=10)
    j = r.json() if r and r.status == 200 else {}
    tg = j.get("targets", {})
    return len(tg) == n and all(v.get("state") == "done" and v.get("cmap_version", 0) >= d["version"] - 1
                                for v in tg.values())


def poll(cond, secs):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.3)
    return False


def local_names(node):
    names, token = set(), ""
    for _ in range(100):
        body = json.dumps({"action": "list", "value": {"pagesize": 10000, "continuation_token": token}})
        r = req("GET", url(node), "/v1/buckets/r", body.encode(), JSON)
        if not r or r.status != 200:
            return None
        d = r.json()
        names.update(e["name"] for e in d["entries"])
        token = d["continuation_token"]
        if not token:
            break
    return names


rc, out = sh("up", "-g", "1", "-t", "3", "-n", NAME, "-a", NET, "-b", BINDIR, "-s", "cluster.keepalive=300ms",
             "-s", "cluster.grace=1500ms", "-s", "store.fsync=never")
if not t.check(rc == 0, "netns cluster up: 1 gateway, 3 targets, each in its own namespace", out):
    sh("down")
    t.finish()
try:
    t.check(poll(lambda: len(active_ids()) == 3, 20), "3 active targets")
    ID = {}
    for n in (smap() or {}).get("nodes", []):
        for k, ip in IP.items():
            if n["public_url"].startswith("http://%s:" % ip):
                ID[k] = n["id"]
    r = req("POST", G, "/v1/buckets/r", b'{"action":"create-bck"}', JSON)
    t.check(r and r.status == 200, "create r", r)
    body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}).encode()
    r = req("PATCH", G, "/v1/buckets/r", body, JSON)
    t.check(r and r.status == 200, "r: mirror.copies=2", r)
    lock = threading.Lock()
    data = {"o%04d" % i: os.urandom(1024 + (i * 61) % 19000) for i in range(300)}
    bad = [k for k, v in data.items() if getattr(follow("PUT", "/v1/objects/r/" + k, v), "status", 0) != 200]
    t.check(not bad, "300 PUTs (2 copies each)", bad[:3])

    # --- 1. cut t1 under a read and write load -------------------------------------------------
    stop = threading.Event()
    get_fail, reads, acked, refused = [], [0], {}, [0]

    def reader():
        keys = sorted(data)
        while not stop.is_set():
            for k in keys:
                if stop.is_set():
                    break
                r = follow("GET", "/v1/objects/r/" + k)
                if r is None or r.status != 200 or r.body != data[k]:
                    get_fail.append(time.monotonic())
                reads[0] += 1

    def writer():
        i = 0
        while not stop.is_set() and i < 2000:
            k, v = "w%04d" % i, os.urandom(512 + i % 4000)
            r = follow("PUT", "/v1/objects/r/" + k, v)
            if r is not None and r.status == 200:
                with lock:
                    acked[k] = v
            else:
                refused[0] += 1
            i += 1

    ths = [threading.Thread(target=reader, daemon=True), threading.Thread(target=writer, daemon=True)]
    for th in ths:
        th.start()
    time.sleep(1)
    t_cut = time.monotonic()
    sh("cut", "t1")
    gone = poll(lambda: ID.get("t1") not in active_ids(), 15)
    t_gone = time.monotonic()
    t.check(gone, "the primary drops the cut-off t1 from the map (%.1f s)" % (t_gone - t_cut))
    t.check(poll(lambda: settled(2), 60), "the rebalance on t0 and t2 converges")
    time.sleep(1)
    late = [x for x in get_fail if x > t_gone + 1.0]
    t.diag("GETs failed while t1 was cut: %d (of %d), all within %.1f s of the cut; PUTs acked %d, refused %d" % (
        len(get_fail), reads[0], (max(get_fail) - t_cut) if get_fail else 0, len(acked), refused[0]))
    t.check(not late, "GETs fail only inside the detection window (%d failed, none later than 1 s after t1 left "
            "the map)" % len(get_fail), len(late))
    with lock:  # what was acknowledged before the listings (the writer goes on)
        now = dict(data, **acked)
    h0, h2 = local_names("t0"), local_names("t2")
    missing = [k for k in now if not (h0 and h2 and k in h0 and k in h2)]
    t.check(not missing, "while t1 is away every object has its 2 copies on t0 and t2 (%d)" % len(now), missing[:3])

    # --- 2. heal: t1 comes back, rebalance converges, nothing lost ------------------------------------
    sh("heal")
    t.check(poll(lambda: len(active_ids()) == 3, 30), "healed: t1 rejoins the map")
    stop.set()
    for th in ths:
        th.join(60)
    with lock:
        now = dict(data, **acked)
    t.check(poll(lambda: settled(3), 90), "the rebalance converges on 3 targets")
    ids = [ID["t0"], ID["t1"], ID["t2"]]
    res = {}

    def placed():
        """Every object on exactly its 2 HRW holders, no orphans (polled:
        a run may still be finishing on the newest map)."""
        have = {n: local_names(n) or set() for n in ("t0", "t1", "t2")}
        res["wrong"] = []
        for k in now:
            want = {n for n in have if ID[n] in hrwlib.top("r/" + k, ids, 2)}
            got = {n for n in have if k in have[n]}
            if want != got:
                res["wrong"].append((k, sorted(want), sorted(got)))
        res["orphans"] = [(n, k) for n in have for k in have[n] if k not in now]
        return not res["wrong"] and not res["orphans"]

    t_conv = time.monotonic()
    ok = poll(placed, 60)
    t.check(ok or not res["wrong"], "every object on exactly its 2 HRW holders (%d objects, %.1f s after the "
            "rebalance said done)" % (len(now), time.monotonic() - t_conv), res["wrong"][:3])
    t.check(ok or not res["orphans"], "no orphan copies", res["orphans"][:3])
    lost = [k for k, v in now.items() if getattr(follow("GET", "/v1/objects/r/" + k), "body", None) != v]
    t.check(not lost, "no acknowledged PUT lost: %d objects read back with their bytes" % len(now), lost[:3])
finally:
    rc, out = sh("down")
    if rc:
        t.diag("down: " + out)
t.finish()
