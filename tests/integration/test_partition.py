"""test_partition.py - failover under network partitions, with every node in
its own network namespace (deploy/netns/cluster.sh): 3 gateways (g0
primary, g1, g2) and 2 targets, keepalive 300 ms, grace 1.5 s. Needs root
and `ip netns`; without them it prints one "ok # skip" line.

1. g2 (not primary) cut off: no election (every other node keeps g0 as
   primary in term 1, and so does g2 itself); healed, g2 is back in every
   map.
2. g0 (the primary) and t0 partitioned from g1, g2, t1: the majority side
   elects g1 or g2 in a newer term within 10 s; g0 never changes its map
   (term and version sampled all along) and answers a bucket create with
   503; at no sample do 3 or more nodes (a majority) name two different
   primaries, nor does one term have two primaries. A bucket created
   through the new primary works. Healed: g0 and t0 follow the new primary
   and rejoin, every map lists all 5 nodes with one primary, g0 says it is
   not primary, the refused bucket exists nowhere and the new one on every
   node. No error-level log line.
"""
# serial: network namespaces (ip netns)
# timeout: 150
import json
import os
import re
import subprocess
import time

from itlib import T
from netnslib import BINDIR, DIR, SCRIPT, require, sh

from clulib import request as clulib_request

t = T()
NAME = "p%d" % (os.getpid() % 100000)
NET = "10.214.%d" % (os.getpid() % 250 + 1)
require(NAME)


def down():
    rc, out = sh("down")
    if rc:
        t.diag("down: " + out)


IP = {"g0": NET + ".10", "g1": NET + ".11", "g2": NET + ".12", "t0": NET + ".100", "t1": NET + ".101"}
NODES = list(IP)


def url(n):
    return "http://%s:8080" % IP[n]


isolated = set()  # nodes the host cannot reach now (cut or partitioned)


def curl(node, method, path, body=None, timeout=5):
    """(status, body) of a request to node: straight from the host, or for
    an isolated node with curl inside its namespace."""
    if node not in isolated:
        try:
            r = clulib_request(method, url(node), path, body.encode() if body else None,
                               {"Content-Type": "application/json"} if body else None, timeout=timeout)
            return r.status, r.body.decode(errors="replace")
        except OSError:
            return 0, ""
    args = ["exec", node, "-d", DIR, "--", "curl", "-s", "-m", str(timeout), "-X", method, "-w", "\n%{http_code}",
            url(node) + path]
    if body is not None:
        args[-1:-1] = ["-H", "Content-Type: application/json", "-d", body]
    cp = subprocess.run([SCRIPT] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, timeout=timeout + 10)
    out = cp.stdout.decode(errors="replace")
    text, _, code = out.rpartition("\n")
    return int(code) if code.isdigit() else 0, text


def smap(node):
    st, body = curl(node, "GET", "/v1/cluster?what=smap")
    try:
        return json.loads(body) if st == 200 else None
    except ValueError:
        return None


def views(nodes=NODES):
    out = {}
    for n in nodes:
        d = smap(n)
        out[n] = (d["primary"], d["term"], d["version"], tuple(sorted(x["id"] for x in d["nodes"]))) if d else None
    return out


split = []  # samples where two primaries had a majority, or a term had two primaries


def check_sample(v):
    count, by_term = {}, {}
    for x in v.values():
        if x:
            count[x[0]] = count.get(x[0], 0) + 1
            by_term.setdefault(x[1], set()).add(x[0])
    if sum(1 for c in count.values() if c >= 3) > 1 or any(len(p) > 1 for p in by_term.values()):
        split.append(v)


rc, out = sh("up", "-g", "3", "-t", "2", "-n", NAME, "-a", NET, "-b", BINDIR, "-s", "cluster.keepalive=300ms",
             "-s", "cluster.grace=1500ms", "-s", "store.fsync=never")
if not t.check(rc == 0, "netns cluster up: 3 gateways, 2 targets, each in its own namespace", out):
    down()
    t.finish()
try:
    v = views()
    t.check(all(x and x[0] == "g0" and x[1] == 1 and len(x[3]) == 5 for x in v.values()),
            "every node: g0 primary, term 1, 5 nodes", v)
    st, _ = curl("g0", "POST", "/v1/buckets/before", '{"action":"create-bck"}')
    t.eq(st, 200, "bucket create on g0")

    # --- 1. a non-primary gateway cut off: no election --------------------------------------
    sh("cut", "g2")
    isolated = {"g2"}
    time.sleep(4.5)  # 3 x grace
    v = views()
    check_sample(v)
    t.check(all(v[n] and v[n][:2] == ("g0", 1) for n in NODES), "g2 cut for 4.5 s: every node (g2 too) keeps "
            "g0 primary in term 1", v)
    sh("heal", "g2")
    isolated = set()
    ok = False
    for _ in range(100):
        v = views()
        check_sample(v)
        if all(x and x[0] == "g0" and x[1] == 1 and len(x[3]) == 5 for x in v.values()):
            ok = True
            break
        time.sleep(0.2)
    t.check(ok, "healed: g2 back in every map, g0 still primary in term 1", v)

    # --- 2. the primary partitioned with a target --------------------------------------------
    before = views(["g0"])["g0"]
    sh("partition", "g0", "t0")
    isolated = {"g0", "t0"}
    t_cut = time.monotonic()
    g0_maps, new_primary, v = set(), None, {}
    while time.monotonic() - t_cut < 10:
        v = views()
        check_sample(v)
        if v["g0"]:
            g0_maps.add(v["g0"][:3])
        maj = [v[n] for n in ("g1", "g2", "t1")]
        if all(x and x[0] in ("g1", "g2") and x[0] == maj[0][0] and x[1] > 1 for x in maj):
            new_primary = maj[0][0]
            break
        time.sleep(0.2)
    if not t.check(new_primary, "the majority side (g1, g2, t1) elects g1 or g2 in a newer term", v):
        raise SystemExit
    t.diag("new primary %s (term %d) %.1f s after the partition" % (new_primary, v["g1"][1],
                                                                     time.monotonic() - t_cut))
    st, body = curl("g0", "POST", "/v1/buckets/refused", '{"action":"create-bck"}', timeout=20)
    t.check(st == 503 and "majority" in body, "bucket create on the cut-off g0: 503", (st, body))
    t0 = time.monotonic()
    st, _ = curl(new_primary, "POST", "/v1/buckets/newterm", '{"action":"create-bck"}', timeout=30)
    t.eq(st, 200, "bucket create on the new primary")
    t.diag("bucket create on the new primary took %.1f s" % (time.monotonic() - t0))
    time.sleep(2)  # g0 past another grace: still nothing changes there
    v = views()
    check_sample(v)
    if v["g0"]:
        g0_maps.add(v["g0"][:3])
    t.check(g0_maps == {before[:3]}, "the cut-off g0 never changed its map (term %d version %d)" % before[1:3],
            g0_maps)

    sh("heal")
    isolated = set()
    ok = False
    for _ in range(75):
        v = views()
        check_sample(v)
        if all(x and x[0] == new_primary and len(x[3]) == 5 and x[1:3] == v[new_primary][1:3] for x in v.values()):
            ok = True
            break
        time.sleep(0.2)
    t.check(ok, "healed: g0 and t0 rejoin; every node has the same map, 5 nodes, primary %s" % new_primary, v)
    st, body = curl("g0", "GET", "/v1/daemon?what=stats")
    t.check(st == 200 and json.loads(body).get("primary") is False, "g0 says it is not primary", body)
    for n in NODES:
        st, body = curl(n, "GET", "/v1/cluster?what=bmd")
        names = {b["name"] for b in json.loads(body)["buckets"]} if st == 200 else None
        t.check(names is not None and "newterm" in names and "before" in names and "refused" not in names,
                "%s: BMD has before and newterm, not refused" % n, names)
    t.check(not split, "no sample had two primaries (a majority for each, or one term)", split[:3])
finally:
    down()

errs = []
for n in NODES:
    try:
        with open(os.path.join(DIR, n, "aisd.log"), errors="replace") as f:
            errs += ["%s: %s" % (n, line.rstrip()) for line in f if re.match(r"^\S+ E ", line)]
    except OSError as e:
        errs.append("%s: %s" % (n, e))
t.check(not errs, "no node log has an error-level line", "\n".join(errs[:10]))
left = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE).stdout.decode()
t.check(NAME + "-" not in left, "down removed every namespace", left)
t.finish()
