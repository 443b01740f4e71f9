"""test_cluster.py - a five-node cluster on loopback: 2 gateways (g1
primary, g2 joining it) and 3 targets joining g1, started here with their
own ports, dirs and logs under AISD_DIR (the runner's standalone target is
not used).

Checks: bucket create through g2 follows a 307 to the primary and reaches
every target, a second create is 409; 200 objects PUT through g1 and read
back byte for byte through g2, each stored on exactly the target both
gateways redirect to; a paged listing (pagesize 17) through a gateway is the
union of the targets' listings, in byte order, every name once; a kill -9'd
target leaves both gateways' maps within the grace period, objects of the
other targets stay readable, and the restarted target rejoins with its
objects; bucket destroy through g1 reaches every target; every node stopped
at once with a GET in progress: the GET finishes, the stopping target
refuses new connections, every node stops; no node logs an error-level
line. Every node is stopped by PID on the way out.
"""
# timeout: 150
import hashlib
import json
import os
import random
import signal
import socket
import time

from itlib import T, q

import clulib
from clulib import Node, bucket_names, curl, follow, get, list_pages, node_id, poll, procs, request, smap_ids

B = "clu"

t = T()
clulib.init(t, 'clu', ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1500ms", "--set", "store.fsync=never"])


def bkey(name):
    return name.encode()


def target_of(loc):
    """The target whose URL a Location header starts with (None if none)."""
    for tg in targets:
        if loc and loc.startswith(tg.url + "/"):
            return tg
    return None


# --- start the cluster --------------------------------------------------------

g1, g2 = Node("g1", "gateway"), Node("g2", "gateway")
targets = [Node("t%d" % i, "target") for i in (1, 2, 3)]
nodes = [g1, g2] + targets

if not t.check(g1.start(), "g1 (primary) starts"):
    t.finish()
started = all([g2.start(join=g1.url)] + [tg.start(join=g1.url) for tg in targets])
if not t.check(started, "g2 and 3 targets start with --join " + g1.url):
    t.finish()
want = {node_id(n) for n in nodes}
if not t.check(poll(lambda: smap_ids(g1) == want, 15), "g1's smap lists all 5 nodes", smap_ids(g1)):
    t.finish()
t.check(poll(lambda: smap_ids(g2) == want, 10), "g2's smap lists all 5 nodes", smap_ids(g2))
d = get(g1.url, "/v1/cluster?what=smap").json()
t.eq(d.get("primary"), node_id(g1), "g1 is primary")
roles = {n["id"]: n["role"] for n in d["nodes"]}
t.eq(roles, {node_id(n): n.role for n in nodes}, "smap roles")

# --- buckets --------------------------------------------------------------------

CB = '{"action":"create-bck"}'
r = request("POST", g2.url, "/v1/buckets/" + B, CB, {"Content-Type": "application/json"})
t.check(r.status == 307 and (r.h("location") or "").startswith(g1.url + "/"),
        "bucket create on g2 (not primary) is a 307 to g1", r)
t.eq(curl("-L", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", CB,
          g2.url + "/v1/buckets/" + B), "200", "curl -L bucket create through g2 -> 200")
for n in nodes:
    bn = bucket_names(n)
    t.check(bn is not None and B in bn, "%s lists bucket %s" % (n.name, B), bn)
t.eq(curl("-L", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", CB,
          g2.url + "/v1/buckets/" + B), "409", "bucket create again through g2 -> 409")

# set-bprops (PATCH, AIStore's form) through the non-primary gateway, then
# HEAD shows the new props on both gateways and every target applies the
# checksum type to new objects.
JS = {"Content-Type": "application/json"}
SP = '{"action":"set-bprops","value":{"checksum":{"type":"md5"},"mirror":{"enabled":false,"copies":3},"versioning":{"enabled":false},"access":"rw"}}'
t.eq(curl("-L", "-X", "PATCH", "-H", "Content-Type: application/json", "--data-binary", SP,
          g2.url + "/v1/buckets/" + B), "200", "set-bprops through g2 (307 to the primary) -> 200")
for gw in (g1, g2):
    r = request("HEAD", gw.url, "/v1/buckets/" + B)
    try:
        props = json.loads(r.h("ais-bucket-props") or "")
    except ValueError:
        props = None
    t.check(r.status == 200 and props and props["checksum"]["type"] == "md5" and props["mirror"]["copies"] == 3
            and props["versioning"]["enabled"] is False and props["provider"] == "ais",
            "HEAD bucket on %s shows the new props" % gw.name, (r.status, props))
for body, why in (('{"action":"set-bprops","value":{"mirror":{"copies":4,"enabled":true}}}', "more copies than targets"),
                  ('{"action":"set-bprops","value":{"mirror":{"copiez":2}}}', "unknown property"),
                  ('{"action":"set-bprops","value":{"checksum":{"type":"crc7"}}}', "unknown checksum"),
                  ('{"action":"set-bprops","value":{"versioning":{"enabled":1}}}', "non-boolean"),
                  ('{"action":"set-bprops"}', "no value"),
                  ('{"action":"create-bck"}', "wrong action for PATCH")):
    r = request("PATCH", g1.url, "/v1/buckets/" + B, body, JS)
    t.check(r.status == 400 and b"message" in r.body, "set-bprops with %s -> 400 with a message" % why,
            (r.status, r.body[:200]))
r = request("PATCH", g1.url, "/v1/buckets/nosuch" + B, '{"action":"set-bprops","value":{"access":"ro"}}', JS)
t.eq(r.status, 404, "set-bprops on a missing bucket -> 404")
r1, r2 = follow("PUT", g1.url, "/v1/objects/%s/md5-obj" % B, b"hello")
r = request("HEAD", target_of(r1.h("location")).url, "/v1/objects/%s/md5-obj" % B)
t.eq((r.status, r.h("ais-checksum-type")), (200, "md5"), "a new object gets the bucket's new checksum type")
follow("DELETE", g1.url, "/v1/objects/%s/md5-obj" % B)
t.eq(curl("-L", "-X", "PATCH", "-H", "Content-Type: application/json", "--data-binary",
          '{"action":"set-bprops","value":{"checksum":{"type":"xxhash"}}}', g2.url + "/v1/buckets/" + B),
     "200", "set-bprops back to xxhash")

# --- objects --------------------------------------------------------------------

rnd = random.Random(int(os.environ.get("SEED", "7")))
names = set()
while len(names) < 200:
    p = rnd.choice(["", "a/", "a-", "b/c/", "B/", "z z/", "\u00e9t\u00e9/", "x%y/"])
    names.add("%s%s%d" % (p, rnd.choice(["o", "O", "0", "~", "\u00fc"]), rnd.randrange(10 ** 6)))
names = sorted(names)
data = {n: os.urandom(rnd.randrange(0, 64 * 1024 + 1)) for n in names}
loc1 = {}
bad = []
for n in names:
    r1, r2 = follow("PUT", g1.url, "/v1/objects/%s/%s" % (B, q(n)), data[n])
    if r1.status != 307 or r2.status != 200 or not target_of(r1.h("location")):
        bad.append((n, r1, r2))
    loc1[n] = clulib.no_id(r1.h("location"))
t.check(not bad, "PUT 200 objects (0..64 KiB) through g1: 307 to a target, then 200", bad[:3])

bad, mism = [], []
for n in names:
    r1, r2 = follow("GET", g2.url, "/v1/objects/%s/%s" % (B, q(n)))
    if r1.status != 307 or r2.status != 200 or r2.body != data[n]:
        bad.append((n, r1, r2))
    if clulib.no_id(r1.h("location")) != loc1[n]:
        mism.append((n, loc1[n], r1.h("location")))
t.check(not bad, "GET each through g2: byte for byte", bad[:3])
t.check(not mism, "g1 and g2 redirect every object to the same Location", mism[:3])
owners = {n: target_of(loc1[n]) for n in names}
t.check(len({o.name for o in owners.values() if o}) == 3, "objects spread over all 3 targets",
        {tg.name: sum(1 for o in owners.values() if o is tg) for tg in targets})

bad = []
for n in names:
    have = []
    for tg in targets:
        # Ais-Intra: the target answers for itself (no redirect to the owner)
        r = get(tg.url, "/v1/objects/%s/%s" % (B, q(n)), headers={"Ais-Intra": "test"})
        if r.status == 200:
            have.append(tg)
        elif r.status != 404:
            bad.append((n, tg.name, r))
    if len(have) != 1 or have[0] is not owners[n] or get(owners[n].url, "/v1/objects/%s/%s" % (B, q(n))).body != data[n]:
        bad.append((n, [h.name for h in have], owners[n] and owners[n].name))
t.check(not bad, "every object is on exactly one target: the one the Location names", bad[:3])

# --- listing --------------------------------------------------------------------

want_sorted = sorted(names, key=bkey)
tunion = []
for tg in targets:
    pages, r = list_pages(tg.url, B, 1000)
    if not t.check(pages is not None, "list %s directly" % tg.name, r):
        pages = []
    tunion += [x for p in pages for x in p]
for gw in (g1, g2):
    pages, r = list_pages(gw.url, B, 17)
    if not t.check(pages is not None, "list through %s, pagesize 17" % gw.name, r):
        continue
    flat = [x for p in pages for x in p]
    t.check(all(len(p) <= 17 for p in pages) and all(len(p) == 17 for p in pages[:-1]),
            "%s: %d pages of 17 (the last one shorter)" % (gw.name, len(pages)), [len(p) for p in pages])
    t.check(flat == want_sorted, "%s: every name once, in byte order" % gw.name,
            "got %d names, want %d" % (len(flat), len(want_sorted)))
    t.check(sorted(flat, key=bkey) == sorted(tunion, key=bkey), "%s: the union of the targets' listings" % gw.name)

# --- a target dies and comes back ------------------------------------------------------

victim = targets[2]
vid = node_id(victim)
others = [tg for tg in targets if tg is not victim]
victim.kill9()
t0 = time.monotonic()
gone1 = poll(lambda: (smap_ids(g1) or {vid}) == want - {vid}, 10)
t.check(gone1, "killed %s: gone from g1's smap (%.1f s)" % (victim.name, time.monotonic() - t0), smap_ids(g1))
gone2 = poll(lambda: (smap_ids(g2) or {vid}) == want - {vid}, 5)
t.check(gone2, "... and from g2's smap (metasync, %.1f s)" % (time.monotonic() - t0), smap_ids(g2))
bad, n_other = [], 0
for n in names:
    if owners[n] is victim:
        continue
    n_other += 1
    r1, r2 = follow("GET", g2.url, "/v1/objects/%s/%s" % (B, q(n)))
    if clulib.no_id(r1.h("location")) != loc1[n] or r2.status != 200 or r2.body != data[n]:
        bad.append((n, r1, r2))
t.check(not bad and n_other > 0, "the %d objects of the other targets are still readable through g2" % n_other, bad[:3])

t0 = time.monotonic()
t.check(victim.start(join=g1.url), "restart %s on the same port and mountpath" % victim.name)
t.check(poll(lambda: smap_ids(g1) == want, 10),
        "%s is back in g1's smap (%.1f s)" % (victim.name, time.monotonic() - t0), smap_ids(g1))
t.check(poll(lambda: smap_ids(g2) == want, 5), "... and in g2's smap", smap_ids(g2))
bad, n_victim = [], 0
for n in names:
    r1, r2 = follow("GET", g1.url, "/v1/objects/%s/%s" % (B, q(n)))
    n_victim += owners[n] is victim
    if clulib.no_id(r1.h("location")) != loc1[n] or r2.status != 200 or r2.body != data[n]:
        bad.append((n, r1, r2))
t.check(not bad, "all 200 objects readable again, %d of them on %s" % (n_victim, victim.name), bad[:3])

# --- bucket destroy ---------------------------------------------------------------

r = request("DELETE", g1.url, "/v1/buckets/" + B, '{"action":"destroy-bck"}', {"Content-Type": "application/json"})
t.eq(r.status, 200, "bucket destroy through g1 -> 200")
for n in nodes:
    bn = bucket_names(n)
    t.check(bn is not None and B not in bn, "%s no longer lists %s" % (n.name, B), bn)
for gw in (g1, g2):
    t.eq(get(gw.url, "/v1/buckets/" + B, body='{"action":"list"}',
             headers={"Content-Type": "application/json"}).status, 404, "list %s through %s -> 404" % (B, gw.name))
left = [n for n in names[:20] if any(get(tg.url, "/v1/objects/%s/%s" % (B, q(n))).status == 200 for tg in targets)]
t.check(not left, "no target serves the destroyed bucket's objects", left[:3])

# --- every node stopped at once, a GET in progress ------------------------------------
# The GET still finishes; a stopping node refuses new connections at once
# (it used to leave them in its listen backlog, so peers' calls waited out
# their timeouts and nodes took > 10 s to stop).

B2 = "stop"
r = request("POST", g1.url, "/v1/buckets/" + B2, '{"action":"create-bck"}', {"Content-Type": "application/json"})
t.eq(r.status, 200, "create bucket %s for the stop check" % B2)
big = random.Random(7).randbytes(8 << 20)
r1, r2 = follow("PUT", g1.url, "/v1/objects/%s/big" % B2, big)
t.eq(r2.status, 200, "PUT an 8 MiB object")
owner = target_of(r1.h("location"))
sk = socket.create_connection(("127.0.0.1", owner.port), timeout=30)
sk.sendall(b"GET /v1/objects/%s/big HTTP/1.1\r\nHost: x\r\n\r\n" % B2.encode())
got = sk.recv(65536)
t_stop = time.monotonic()
for p in procs.values():
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
tries = []


def refuses():
    try:
        socket.create_connection(("127.0.0.1", owner.port), timeout=5).close()
        tries.append("accepted")
        return False
    except ConnectionRefusedError:
        return True
    except OSError as e:
        tries.append(repr(e))
        return False


# polled (a loaded machine may take a while to close the listener); the
# owner must still be running its GET when the refusal is seen
refused = poll(refuses, 10)
alive = procs[owner.name].poll() is None
t.check(refused and alive, "a stopping target (its GET in progress) refuses a new connection",
        (refused, alive, tries[-3:]))
while True:
    chunk = sk.recv(1 << 20)
    if not chunk:
        break
    got += chunk
sk.close()
head, _, body = got.partition(b"\r\n\r\n")
t.check(head.startswith(b"HTTP/1.1 200") and hashlib.sha256(body).digest() == hashlib.sha256(big).digest(),
        "the GET in progress finished: %d of %d bytes, intact" % (len(body), len(big)), head[:100])
exits = {}
for name, p in procs.items():
    try:
        p.wait(max(0.1, t_stop + 10 - time.monotonic()))
        exits[name] = "%.1f s" % (time.monotonic() - t_stop)
    except Exception:
        exits[name] = "still running"
t.diag("every node stopped (SIGTERM to all at once): %s" % exits)
t.check("still running" not in exits.values(), "every node stops", exits)

# --- stop, then the logs -------------------------------------------------------------

clulib.stop_all()
t.check(all(p.returncode == 0 for p in procs.values()), "every node exits 0 on SIGTERM",
        {k: p.returncode for k, p in procs.items()})
clulib.check_logs(nodes)
t.finish()
