"""test_primary_emfile.py - a primary that runs out of descriptors blames
no peer: 1 gateway (the primary) and 3 targets, keepalive 300 ms, grace
1.5 s. While the gateway runs, its descriptor limit is lowered (prlimit)
below the descriptors it has open, so every socket it opens fails with
EMFILE, for 3 x grace; then it is raised back. Checks: the gateway's log
says its own shortage stops its checks (and not that any target failed a
health check, nor removes one); every target is still in its map (active)
after the limit is back, with the same map version; the gateway serves a
bucket create again. And the lease request itself: a bad body is 400, a
lease for a node that is no gateway 409 with the reason, the primary's 200.
"""
# timeout: 90
import json
import os
import re
import subprocess
import time

import clulib
from clulib import Node, follow, get, poll
from itlib import T

# log-allow: Too many open files

t = T()
clulib.init(t, "emfile", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1500ms",
                          "--set", "store.fsync=never"])
g = Node("g1", "gateway")
targets = [Node("t%d" % i, "target") for i in (1, 2, 3)]
if not t.check(g.start() and all(x.start(join=g.url) for x in targets), "a gateway and 3 targets start"):
    t.finish()
want = {g.id} | {x.id for x in targets}
if not t.check(poll(lambda: clulib.smap_ids(g) == want, 15), "every target joined"):
    t.finish()


def smap():
    r = get(g.url, "/v1/cluster?what=smap", timeout=5)
    return r.json() if r.status == 200 else None


m0 = smap()
v0 = m0["version"]

# the lease request a primary sends each round (POST /v1/cluster/lease)
tg = targets[0]
r = clulib.request("POST", tg.url, "/v1/cluster/lease", b'{"uuid":"x"}', {"Content-Type": "application/json"})
t.eq(r.status, 400, "a lease request with a bad body: 400")
body = {"uuid": m0["uuid"], "primary": targets[1].id, "term": m0["term"]}
r = clulib.request("POST", tg.url, "/v1/cluster/lease", json.dumps(body).encode(),
                   {"Content-Type": "application/json"})
t.check(r.status == 409 and b"not a gateway" in r.body and r.json().get("lease") is False,
        "a lease asked for a target: 409, refused with the reason", (r.status, r.body[:200]))
body["primary"] = g.id
r = clulib.request("POST", tg.url, "/v1/cluster/lease", json.dumps(body).encode(),
                   {"Content-Type": "application/json"})
t.check(r.status == 200 and r.json() == {"lease": True, "term": m0["term"]}, "the primary's lease: granted",
        (r.status, r.body[:200]))
pid = clulib.procs["g1"].pid
with open("/proc/%d/limits" % pid) as f:
    lim = [ln.split() for ln in f if ln.startswith("Max open files")][0]
soft, hard = lim[3], lim[4]
nfd = len(os.listdir("/proc/%d/fd" % pid))
low = max(8, nfd - 4)  # below what is open: no new descriptor at all
with open(g.log) as f:
    log_from = len(f.read())


def prlimit(spec):
    cp = subprocess.run(["prlimit", "--pid", str(pid), "--nofile=" + spec], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, timeout=10)
    return cp.returncode, cp.stdout.decode(errors="replace")


rc, out = prlimit("%d:%s" % (low, hard))
t.check(rc == 0, "prlimit: the gateway's descriptor limit lowered to %d (%d open)" % (low, nfd), out)
time.sleep(4.5)  # 3 x grace
rc, out = prlimit("%s:%s" % (soft, hard))
t.check(rc == 0, "prlimit: the limit raised back to %s" % soft, out)
with open(g.log) as f:
    window = f.read()[log_from:]

t.check("cannot open a socket itself" in window, "the gateway logs its own shortage",
        "\n".join(window.splitlines()[-10:]))
bad = [ln for ln in window.splitlines() if "failed its health check" in ln or "removing it from" in ln]
t.check(not bad, "no target was marked failed (nor removed) for the gateway's own EMFILE", "\n".join(bad[:6]))


def all_in():
    m = smap()
    return m and {n["id"] for n in m["nodes"]} == want and all(n.get("state", "active") == "active"
                                                               for n in m["nodes"])


t.check(poll(all_in, 10), "every target is still in the gateway's map, active", smap())
m = smap()
t.eq(m and m["version"], v0, "the map version did not change")
r1, r = follow("POST", g.url, "/v1/buckets/after", json.dumps({"action": "create-bck"}),
               {"Content-Type": "application/json"})
t.eq(r.status, 200, "bucket create through the gateway works again")
t.finish()
