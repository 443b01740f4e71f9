"""test_write_quorum.py - a partial write quorum (mirror.write_quorum=2) in a
bucket of mirror.copies=3, on 1 gateway + 4 targets started here on
loopback ports (stopped by PID), with a long cluster.grace so that a dead
target stays in the map and keeps its place among an object's holders.

Checks (object names chosen from the map with the placement rule, hrwlib):
 1. All targets up: a PUT lands on its 3 holders.
 2. One holder killed (-9): a PUT whose holders include it is acknowledged
    (200) with 2 durable copies, both byte for byte, and reads back.
 3. Two holders killed: a PUT whose holders include both (the owner
    alive) fails with 503 naming the write quorum, and no live target
    holds a copy; the earlier objects still read back.
 4. Both restarted (same ports, same data): they rejoin, and a rebalance
    (aisctl job start, then job wait) gives every acknowledged object of
    step 2 its third copy, byte for byte; the refused names stay absent.
"""
# timeout: 180
import json
import os
import subprocess

from itlib import T, q

import clulib
import hrwlib
from clulib import follow, get, poll, request, smap_ids

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}

t = T()
clulib.init(t, "wq", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=120s",
                      "--set", "store.fsync=never", "--set", "mirror.write_quorum=2"])
g, targets = clulib.start_cluster(4, secs=20)
ids = [tg.id for tg in targets]
by_id = {tg.id: tg for tg in targets}
B = "wq"
t.eq(request("POST", g.url, "/v1/buckets/" + B, '{"action":"create-bck"}', JSON).status, 200, "create " + B)
body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 3}}})
t.eq(request("PATCH", g.url, "/v1/buckets/" + B, body, JSON).status, 200, "set-bprops mirror.copies=3")
bmd_v = get(g.url, "/v1/daemon?what=bmd").json()["version"]
t.check(poll(lambda: all(get(tg.url, "/v1/daemon?what=bmd").json()["version"] >= bmd_v for tg in targets), 10),
        "every target has the BMD")


def holders(name):
    return [by_id[i] for i in hrwlib.top(B + "/" + name, ids, 3)]


def has(tg, name):
    r = get(tg.url, "/v1/objects/%s/%s" % (B, q(name)), headers=INTRA)
    return r.body if r.status == 200 else None


def put(name, data):
    return follow("PUT", g.url, "/v1/objects/%s/%s" % (B, q(name)), data)[1]


def names_where(pred, n, prefix):
    out = [x for x in ("%s%04d" % (prefix, i) for i in range(2000)) if pred(holders(x))][:n]
    t.check(len(out) == n, "%d names with %s found in the map" % (n, prefix))
    return out


# 1. all targets up
data = {"all%02d" % i: os.urandom(1000 + 37 * i) for i in range(10)}
bad = [(n, r.status) for n, r in ((n, put(n, d)) for n, d in data.items()) if r.status != 200]
t.check(not bad, "10 PUTs with every target up: 200", bad[:3])
wrong = [n for n, d in data.items()
         if sorted(tg.name for tg in targets if has(tg, n) == d) != sorted(x.name for x in holders(n))]
t.check(not wrong, "each on exactly its 3 holders, byte for byte", wrong[:3])

# 2. one holder down: acknowledged with 2 copies
dead1, dead2 = targets[3], targets[2]
dead1.kill9()
t.check(poll(lambda: not clulib.health(dead1), 10), "t4 killed (-9)")
t.check(dead1.id in (smap_ids(g) or ()), "t4 stays in the map (cluster.grace)")
part = {n: os.urandom(2000 + 11 * i) for i, n in enumerate(
    names_where(lambda h: dead1 in h[1:], 12, "p"))}  # t4 a holder, not the owner
res = {n: put(n, d) for n, d in part.items()}
bad = [(n, r.status, r.body[:200]) for n, r in res.items() if r.status != 200]
t.check(not bad, "PUTs with one of 3 holders down: 200 (2 copies meet write_quorum=2)", bad[:3])
wrong = [n for n, d in part.items() if [has(tg, n) == d for tg in holders(n) if tg is not dead1] != [True, True]]
t.check(not wrong, "  each on its 2 live holders, byte for byte", wrong[:3])
wrong = [n for n, d in part.items() if follow("GET", g.url, "/v1/objects/%s/%s" % (B, n))[1].body != d]
t.check(not wrong, "  and reads back through the gateway", wrong[:3])

# 3. two holders down: 503, nothing stays
dead2.kill9()
t.check(poll(lambda: not clulib.health(dead2), 10), "t3 killed (-9) as well")
fail = names_where(lambda h: dead1 in h and dead2 in h and h[0] not in (dead1, dead2), 8, "f")
res = {n: put(n, b"f" * 3000) for n in fail}
bad = [(n, r.status, r.body[:200]) for n, r in res.items()
       if r.status != 503 or "write quorum 2" not in ((r.json() or {}).get("message") or "")]
t.check(not bad, "PUTs with 2 of 3 holders down: 503 naming the write quorum", bad[:3])
left = [(n, tg.name) for n in fail for tg in targets[:2] if has(tg, n) is not None]
t.check(not left, "  no live target keeps a copy", left[:3])
alive = {n: d for n, d in list(data.items()) + list(part.items()) if holders(n)[0] not in (dead1, dead2)}
wrong = [n for n, d in alive.items() if follow("GET", g.url, "/v1/objects/%s/%s" % (B, n))[1].body != d]
t.check(alive and not wrong, "  the earlier objects whose owner is alive still read back (%d)" % len(alive), wrong[:3])

# 4. both come back; a rebalance restores the third copy
t.check(dead2.start(join=g.url) and dead1.start(join=g.url), "t3 and t4 restart on their ports with their data")
t.check(poll(lambda: all(clulib.health(tg) for tg in targets), 20), "  and answer")
ctl = os.environ["AISCTL"]


def aisctl(*args):
    r = subprocess.run([ctl, "-e", g.url] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=150)
    return r.returncode, r.stdout.decode()


rc, out = aisctl("job", "start")
t.eq(rc, 0, "aisctl job start (a rebalance on every target)")
rc, out = aisctl("job", "wait", "--timeout-s", "120")
t.check(rc == 0 and "done" in out, "aisctl job wait: the rebalance is done", out[-500:])
missing = [n for n, d in part.items() if has(dead1, n) != d]
t.check(not missing, "every object acknowledged with 2 copies has its third on t4 again, byte for byte",
        missing[:3])
full = [n for n, d in part.items() if [has(tg, n) == d for tg in holders(n)] != [True] * 3]
t.check(not full, "  all 3 holders hold each of them", full[:3])
left = [(n, tg.name) for n in fail for tg in targets if has(tg, n) is not None]
t.check(not left, "the refused PUTs stay absent everywhere", left[:3])
t.finish()
