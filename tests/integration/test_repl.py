"""test_repl.py - object placement across targets: redirects by a target
that does not hold an object, and replicated buckets (mirror.copies=2), on
1 gateway + 3 targets started here on loopback ports (stopped by PID).

Checks: a PUT sent straight to a target that is not the owner -> 307 to the
owner's public URL with the same path and query (plus the hop count
ais_hop=1), and the object lands there
only; GET/HEAD/DELETE on a non-holder -> 307 too; a request carrying
Ais-Intra is served where it lands (404 there); copies=2: every PUT through
the gateway lands on exactly the two HRW holders (the gateway's owner and
one other), byte for byte; the non-owner holder serves a GET itself; a
holder that lost its copy (deleted with Ais-Intra) fetches it back on the
next GET; a byte flipped in a copy's file is detected (store.verify_on_read)
and repaired from the other copy; kill -9 of one target: with the quorum of
all copies a PUT whose holders include it fails with 503 and leaves no copy
anywhere; DELETE removes every copy; no error-level log line.
"""
# timeout: 120
import glob
import json
import os

from itlib import T, q

import clulib
from clulib import Node, follow, get, list_pages, node_id, poll, request, smap_ids

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}

t = T()
clulib.init(t, "repl", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=60s",
                        "--set", "store.fsync=never", "--set", "store.verify_on_read=true"])

g = Node("g", "gateway")
targets = [Node("t%d" % i, "target") for i in (1, 2, 3)]
if not t.check(g.start(), "gateway starts"):
    t.finish()
if not t.check(all(tg.start(join=g.url) for tg in targets), "3 targets join"):
    t.finish()
want = {node_id(n) for n in [g] + targets}
if not t.check(poll(lambda: smap_ids(g) == want and all(smap_ids(tg) == want for tg in targets), 15),
               "every smap lists 4 nodes"):
    t.finish()
by_url = {tg.url: tg for tg in targets}


def owner_of(bck, name):
    r = request("HEAD", g.url, "/v1/objects/%s/%s" % (bck, q(name)))
    loc = r.h("location") or ""
    for u, tg in by_url.items():
        if loc.startswith(u + "/"):
            return tg
    return None


def has(tg, bck, name):
    return get(tg.url, "/v1/objects/%s/%s" % (bck, q(name)), headers=INTRA).status == 200


# --- redirects from a target -------------------------------------------------------
t.eq(request("POST", g.url, "/v1/buckets/r1", '{"action":"create-bck"}', JSON).status, 200, "create r1")
name = "dir/obj one"
own = owner_of("r1", name)
other = [tg for tg in targets if tg is not own][0]
path = "/v1/objects/r1/%s?x=1" % q(name)
r = request("PUT", other.url, path, b"hello", {"Content-Length": "5"})
t.eq(r.status, 307, "PUT to a non-owner target: 307")
t.eq(clulib.no_id(r.h("location")), own.url + path + "&ais_hop=1", "Location: the owner's URL, same path and query, the hop counted")
r1, r2 = follow("PUT", other.url, path, b"hello")
t.eq(r2.status, 200, "PUT followed: 200 on the owner")
t.check(has(own, "r1", name) and not has(other, "r1", name), "the object is on the owner only")
for m in ("GET", "HEAD", "DELETE"):
    r = request(m, other.url, path)
    t.eq((r.status, clulib.no_id(r.h("location"))), (307, own.url + path + "&ais_hop=1"),
         "%s on a non-owner: 307 to the owner" % m)
t.eq(get(other.url, path, headers=INTRA).status, 404, "with Ais-Intra the non-owner answers itself (404)")
t.eq(get(own.url, path).body, b"hello", "GET on the owner: the bytes")

# --- copies=2 ------------------------------------------------------------------------
t.eq(request("POST", g.url, "/v1/buckets/m2", '{"action":"create-bck"}', JSON).status, 200, "create m2")
body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(request("PATCH", g.url, "/v1/buckets/m2", body, JSON).status, 200, "set-bprops mirror.copies=2")
t.check(poll(lambda: all(get(tg.url, "/v1/daemon?what=bmd").json()["version"] >= 4 for tg in targets), 5),
        "targets have the BMD")
N = 60
data = {"o%03d" % i: os.urandom(100 + i * 997) for i in range(N)}
bad = [n for n, d in data.items() if follow("PUT", g.url, "/v1/objects/m2/" + n, d)[1].status != 200]
t.check(not bad, "%d PUTs through the gateway: 200" % N, bad[:3])
holders = {n: [tg for tg in targets if has(tg, "m2", n)] for n in data}
t.check(all(len(h) == 2 for h in holders.values()), "every object is on exactly 2 targets",
        [(n, [x.name for x in h]) for n, h in holders.items() if len(h) != 2][:3])
t.check(all(owner_of("m2", n) in holders[n] for n in data), "the owner is one of them")
wrong = [n for n, d in data.items()
         if any(get(tg.url, "/v1/objects/m2/" + n, headers=INTRA).body != d for tg in holders[n])]
t.check(not wrong, "both copies byte for byte", wrong[:3])
for ps in (7, 1000):
    pages, _ = list_pages(g.url, "m2", ps)
    names = [x for p in (pages or []) for x in p]
    t.eq(names, sorted(data), "listing through the gateway (pages of %d): each of the %d names once, in order" % (ps, N))
n0 = "o007"
second = [tg for tg in holders[n0] if tg is not owner_of("m2", n0)][0]
r = get(second.url, "/v1/objects/m2/" + n0)
t.eq((r.status, r.body == data[n0]), (200, True), "the second holder serves a GET itself")

# a holder that lost its copy fetches it back
own0 = owner_of("m2", n0)
t.eq(request("DELETE", own0.url, "/v1/objects/m2/" + n0, headers=INTRA).status, 200, "drop the owner's copy")
t.check(not has(own0, "m2", n0), "the owner lacks it")
r = follow("GET", g.url, "/v1/objects/m2/" + n0)[1]
t.eq((r.status, r.body == data[n0]), (200, True), "GET through the gateway: the owner fetches it and serves it")
t.check(has(own0, "m2", n0), "the owner has its copy again")

# a corrupted copy is detected and repaired
n1 = "o033"
own1 = owner_of("m2", n1)
files = [f for f in glob.glob(os.path.join(own1.dir, "mp*", "obj", "*", "*")) if os.path.getsize(f) == len(data[n1])]
if t.check(len(files) == 1, "the owner's file of %s found" % n1, files):
    with open(files[0], "r+b") as f:
        f.seek(50)
        c = f.read(1)
        f.seek(50)
        f.write(bytes([c[0] ^ 0xFF]))
    r = follow("GET", g.url, "/v1/objects/m2/" + n1)[1]
    t.eq((r.status, r.body == data[n1]), (200, True), "GET after a flipped byte: the good bytes")
    r = get(own1.url, "/v1/objects/m2/" + n1, headers=INTRA)
    t.check(r.status == 200 and r.body == data[n1], "the owner's copy was repaired")
    log = open(own1.log).read()
    t.check("does not match its checksum" in log, "the damage was logged")

# DELETE removes every copy
t.eq(follow("DELETE", g.url, "/v1/objects/m2/o001")[1].status, 200, "DELETE through the gateway")
t.check(not any(has(tg, "m2", "o001") for tg in targets), "no copy left")

# a PUT that cannot reach the quorum fails and leaves nothing
dead = targets[2]
dead.kill9()
names = ["q%03d" % i for i in range(40)]
fails, ok, leftovers = [], [], []
for n in names:
    r1 = request("HEAD", g.url, "/v1/objects/m2/" + n)
    loc = r1.h("location") or ""
    if loc.startswith(dead.url):
        continue  # the owner itself is down: the client sees a connection error
    r = follow("PUT", g.url, "/v1/objects/m2/" + n, b"z" * 1000)[1]
    (ok if r.status == 200 else fails).append((n, r.status, r.json()))
for n, st, js in fails:
    if any(has(tg, "m2", n) for tg in targets[:2]):
        leftovers.append(n)
t.check(fails and all(st == 503 and "quorum" in js.get("message", "") for n, st, js in fails),
        "PUTs with a dead holder: 503 naming the quorum (%d)" % len(fails), fails[:2])
t.check(ok, "PUTs whose holders are alive: 200 (%d)" % len(ok))
t.check(not leftovers, "a failed PUT leaves no copy", leftovers[:3])

t.finish()
