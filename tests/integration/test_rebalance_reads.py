"""test_rebalance_reads.py - reads during a rebalance go to the holder under
the previous map instead of being fetched whole by the new holder first.
1 gateway + 3 targets, then a 4th, on loopback ports (stopped by PID); every
target's rebalance slowed to RATE (one worker, one stream per peer), so
that most objects stay on their old holders while the test reads them.

Objects in b1 (1 copy) and b2 (mirror.copies=2), each placed so that the
4th target (its port chosen before it starts) becomes one of its holders.
Checks:
 1. a GET loop through the gateway (4 threads, native with the redirects
    followed and S3 with boto3, by turns) runs while the 4th target joins
    and the rebalance moves the objects: no read fails or returns other
    bytes than the object's;
 2. the reads did not store the objects on the 4th target: its log has no
    fetch ("restored ... from another target") once every node has the new
    map (before, a read that a gateway still on the old map sent to the
    old holder comes to the new holder as hop 1, which fetches: the old
    holder cannot tell whether the new one took a newer write), and it
    holds no more of them than its rebalance received;
 3. a GET and a HEAD on the 4th target of an object it has not received
    yet answer 307 to the object's holder under the previous map, with
    the hop counted (ais_hop=1) and its map version (ais_prev=V), and that
    holder serves the object; a Range read through the chain gets its
    bytes; S3 reads (boto3 GET, HEAD, Range, through the gateway and
    straight to the 4th target) of objects it has not received get their
    bytes from the old holder through it (relayed: S3 clients do not
    follow redirects), and it fetches and stores none of them;
 4. ais_prev on a target that did not hold the object under the previous
    map does not make it serve one: 307 to the owner;
 5. an object deleted through the gateway during the rebalance stays
    deleted: 404 through the gateway, on its old holder, and on the 4th
    target directly (a 404, not a 307: its tombstone);
 6. a name that exists nowhere answers 404 through the chain (not 508);
 7. with access control (auth.enabled, cluster.secret) on a second
    cluster: a read with a read-only token through the gateway, the 307s
    followed without the token, reaches the old holder through the new one
    and gets the object; the new holder's Location with another object's
    name in its path is refused there (401: the signature covers it), and
    so is its ais_prev (signed under the cluster secret for the path)
    replaced by the bare map version, or a client's own ais_prev or
    Ais-Prev with a token: 307 to the owner, the old copy not served; an
    S3 GET (a key with an auth.grant) of an object the 4th target lacks is
    relayed from the old holder (its signed Ais-Prev taken), nothing fetched.
"""
# timeout: 240
import datetime
import json
import os
import random
import subprocess
import threading
import time
import urllib.parse

from itlib import T, q

import clulib
import hrwlib
from clulib import Node, get, poll, request
from s3lib import AK, SK, boto3_client

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}
RATE = 32 << 10
COPIES = {"b1": 1, "b2": 2}

t = T()
ARGS = ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=3s", "--set", "store.fsync=never",
        "--set", "rebalance.workers=1", "--set", "rebalance.peer_streams=1", "--set", "rebalance.rate=%d" % RATE,
        "--set", "s3.key=%s:%s:aisd-test:AIS Test" % (AK, SK)]
clulib.init(t, "rebreads", ARGS)
g, old = clulib.start_cluster(3, secs=20)


t4 = Node("t4", "target")
t4.port = clulib.low_port()
ids3 = [x.id for x in old]
ids4 = ids3 + [t4.id]
by_id = {x.id: x for x in old + [t4]}

for b, k in COPIES.items():
    t.eq(request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON).status, 200, "create " + b)
    if k > 1:
        mp = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": k}}})
        t.eq(request("PATCH", g.url, "/v1/buckets/" + b, mp, JSON).status, 200, "%s: mirror.copies=%d" % (b, k))

# objects the 4th target will hold (b2: the ones it will own, so the gateway sends reads to it)
names = {"b1": [], "b2": []}
for i in range(2000):
    n = "o%04d" % i
    for b, k in COPIES.items():
        if len(names[b]) < 24 and hrwlib.top(b + "/" + n, ids4, 1)[0] == t4.id:
            names[b].append(n)
data = {(b, n): os.urandom(random.randint(96 << 10, 160 << 10)) for b in names for n in names[b]}


def fetch(method, url, path, headers=None, hops=4, first=None):
    """A request with its redirects followed: (final response, [hosts seen]).
    first: headers of the first request only (a token: the redirects carry
    its signature)."""
    seen = []
    for _ in range(hops):
        seen.append(urllib.parse.urlsplit(url).netloc)
        r = request(method, url, path, headers=dict(headers or {}, **(first if not seen[1:] and first else {})))
        if r.status != 307:
            return r, seen
        loc = urllib.parse.urlsplit(r.h("location"))
        url, path = "%s://%s" % (loc.scheme, loc.netloc), loc.path + ("?" + loc.query if loc.query else "")
    return r, seen


bad = [k for k, v in data.items() if clulib.follow("PUT", g.url, "/v1/objects/%s/%s" % (k[0], q(k[1])), v)[1].status
       != 200]
t.check(not bad, "PUT %d objects, each to be held by the 4th target" % len(data), bad[:3])


def holds(node, b, n):
    return get(node.url, "/v1/objects/%s/%s" % (b, q(n)), headers=INTRA).status == 200


t.check(all(holds(by_id[i], b, n) for (b, n) in data for i in hrwlib.top(b + "/" + n, ids3, COPIES[b])),
        "  each on its holders among the 3 targets")


# --- 1. a GET loop while the 4th target joins ----------------------------------------------
class Reader(threading.Thread):
    def __init__(self, seed):
        super().__init__(daemon=True)
        self.rnd, self.stop, self.n, self.errors = random.Random(seed), False, 0, []
        self.s3 = boto3_client(g.url)  # (made here: creating boto3 clients is not thread-safe)

    def run(self):
        keys = sorted(data)
        s3 = self.s3
        deadline = time.monotonic() + 60  # bounded whatever happens
        while not self.stop and time.monotonic() < deadline:
            b, n = self.rnd.choice(keys)
            if self.n % 2:
                try:
                    body = s3.get_object(Bucket=b, Key=n)["Body"].read()
                except Exception as e:  # noqa: BLE001 (any failure is the finding)
                    self.errors.append((b, n, "S3", repr(e)[:200]))
                    continue
                self.n += 1
                if body != data[(b, n)]:
                    self.errors.append((b, n, "S3", len(body)))
                continue
            try:
                r, seen = fetch("GET", g.url, "/v1/objects/%s/%s" % (b, q(n)))
            except OSError as e:
                self.errors.append((b, n, repr(e)))
                continue
            self.n += 1
            if r.status != 200 or r.body != data[(b, n)]:
                self.errors.append((b, n, r.status, len(r.body), seen))


readers = [Reader(i) for i in range(4)]
for rd in readers:
    rd.start()
time.sleep(0.5)
if not t.check(t4.start(join=g.url), "the 4th target starts and joins (port %d)" % t4.port):
    t.finish()
t.check(poll(lambda: clulib.smap_ids(g) == {g.id} | set(ids4), 20), "the gateway's map lists it")
V = get(g.url, "/v1/cluster?what=smap").json()["version"]
t.check(poll(lambda: get(t4.url, "/v1/cluster?what=smap").json().get("version", 0) >= V, 10), "  and so does its own")
t.check(poll(lambda: all(get(x.url, "/v1/cluster?what=smap").json().get("version", 0) >= V for x in [g] + old), 10),
        "  and every other node's")
t_all = time.time()


def fetches_since(log, since):
    """The log's fetch lines ("restored ... from another target") stamped
    at or after since (seconds since the epoch)."""
    out = []
    for ln in log.splitlines():
        if "from another target" not in ln:
            continue
        ts = datetime.datetime.strptime(ln[:23], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
        if ts.timestamp() >= since - 0.001:
            out.append(ln)
    return out


time.sleep(4)
for rd in readers:
    rd.stop = True
for rd in readers:
    rd.join(30)
nreads = sum(rd.n for rd in readers)
errors = [e for rd in readers for e in rd.errors]
t.check(nreads >= 20 and not errors, "%d reads through the gateway during the rebalance: all 200 with the "
        "object's bytes" % nreads, errors[:3])

# --- 2. the reads stored nothing on the 4th target -----------------------------------------
log = open(t4.log, errors="replace").read()
early = [ln for ln in log.splitlines() if "from another target" in ln and ln not in fetches_since(log, t_all)]
t.check(not fetches_since(log, t_all), "the 4th target fetched nothing for the reads once every node had the map "
        "(%d fetch(es) before)" % len(early), fetches_since(log, t_all)[:3])
have = [k for k in data if holds(t4, *k)]
t.check(len(have) < len(data) // 2, "  it holds %d of the %d objects (only what its rebalance received so "
        "far, at %d KiB/s per sender)" % (len(have), len(data), RATE >> 10))

# --- 3. 307 to the holder under the previous map --------------------------------------------
lack = [k for k in sorted(data) if not holds(t4, *k)]
if not t.check(len(lack) >= 4, "objects the 4th target has not received yet: %d" % len(lack)):
    t.finish()
# the last names first: the rebalance sends in name order, so they arrive last; one that
# arrives between the listing and the request (served here: 200) gives way to the next
for (b, n) in [k for k in reversed(lack) if k[0] == "b1"][:4]:
    path = "/v1/objects/%s/%s" % (b, q(n))
    r = request("GET", t4.url, path)
    if not (r.status == 200 and holds(t4, b, n)):
        break
prev = by_id[hrwlib.top(b + "/" + n, ids3, 1)[0]]
for m in ("GET", "HEAD"):
    r = request(m, t4.url, path)
    loc = r.h("location") or ""
    t.check(r.status == 307 and loc.startswith(prev.url + path + "?") and "ais_hop=1" in loc and
            "ais_prev=%d" % V in loc, "%s on the 4th target: 307 to its holder under the previous map (%s), "
            "ais_hop=1, ais_prev=%d" % (m, prev.name, V), (r.status, loc))
r, seen = fetch("GET", t4.url, path)
t.check(r.status == 200 and r.body == data[(b, n)] and seen == [t4.id, prev.id],
        "  followed: that holder serves it", (r.status, seen))
r, seen = fetch("GET", g.url, path, headers={"Range": "bytes=1000-1999"})
t.check(r.status == 206 and r.body == data[(b, n)][1000:2000], "  a Range read through the chain", (r.status, seen))
t.check(not fetches_since(open(t4.log, errors="replace").read(), t_all), "  and the 4th target fetched nothing for them")

# S3 reads of objects the 4th target has not received: relayed from the old holder
s3lack = [k for k in reversed(lack) if k[0] == "b1" and k != (b, n) and not holds(t4, *k)][:2]
for ep, via in ((g.url, "the gateway"), (t4.url, "the 4th target")):
    s3 = boto3_client(ep)
    for (sb, sn) in s3lack:
        try:
            got = s3.get_object(Bucket=sb, Key=sn)["Body"].read()
            h = s3.head_object(Bucket=sb, Key=sn)
            rg = s3.get_object(Bucket=sb, Key=sn, Range="bytes=100-4195")["Body"].read()
            ok = (got == data[(sb, sn)] and h["ContentLength"] == len(data[(sb, sn)]) and
                  rg == data[(sb, sn)][100:4196])
            why = (len(got), h["ContentLength"], len(rg))
        except Exception as e:  # noqa: BLE001 (any failure is the finding)
            ok, why = False, repr(e)[:300]
        t.check(ok, "S3 GET, HEAD and Range of %s/%s through %s: the object's bytes" % (sb, sn, via), why)
log = open(t4.log, errors="replace").read()
t.check(not fetches_since(log, t_all) and not any(holds(t4, *k) for k in s3lack),
        "  relayed from the old holder: the 4th target fetched and stored none of them",
        (fetches_since(log, t_all)[:2], [holds(t4, *k) for k in s3lack]))

# --- 4. ais_prev on a target that was no holder ---------------------------------------------
other = next(x for x in old if x.id != prev.id)
r = request("GET", other.url, path + "?ais_prev=%d&ais_hop=1" % V)
t.check(r.status == 307 and (r.h("location") or "").startswith(t4.url + path),
        "ais_prev on %s (no holder under the previous map): 307 to the owner, not served" % other.name,
        (r.status, r.h("location")))

# --- 5. a delete during the rebalance stays deleted -----------------------------------------
(b, n) = next(k for k in lack[1:] if k[0] == "b1" and k != (b, n) and not holds(t4, *k))
path = "/v1/objects/%s/%s" % (b, q(n))
prev = by_id[hrwlib.top(b + "/" + n, ids3, 1)[0]]
t.eq(fetch("DELETE", g.url, path)[0].status, 200, "DELETE %s/%s through the gateway" % (b, n))
r, seen = fetch("GET", g.url, path)
t.eq(r.status, 404, "  GET through the gateway: 404")
t.eq(get(prev.url, path, headers=INTRA).status, 404, "  its old holder %s has no copy" % prev.name)
t.eq(request("GET", t4.url, path).status, 404, "  the 4th target answers 404 itself (its tombstone)")

# --- 6. a name that exists nowhere ----------------------------------------------------------
n = next(x for x in ("nothing%03d" % i for i in range(1000)) if hrwlib.top("b1/" + x, ids4, 1)[0] == t4.id)
r, seen = fetch("GET", g.url, "/v1/objects/b1/" + n)
t.eq(r.status, 404, "GET of a name that exists nowhere, through the chain %s" % " -> ".join(seen))

# --- 7. with access control: the signed redirect goes on ------------------------------------
tsf, csf = clulib.secret_files("rebreads-auth")


def token(*args):
    env = dict(os.environ, AISCTL_CONFIG=os.devnull)
    env.pop("AIS_AUTHN_TOKEN", None)
    cp = subprocess.run([os.path.join(os.path.dirname(os.environ["AISD_BIN"]), "aisctl"), "auth", "token", "create",
                         "--secret-file", tsf] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, env=env, timeout=60)
    return cp.stdout.decode().strip()


ADMIN = {"Authorization": "Bearer " + token("--user", "root", "--admin", "--ttl", "1h")}
RO = {"Authorization": "Bearer " + token("--user", "bob", "--bucket", "ba", "--perm", "ro", "--ttl", "1h")}
clulib.init(t, "rebreads-auth", ARGS + ["--set", "auth.enabled=on", "--set", "auth.secret_file=" + tsf,
                                        "--set", "cluster.secret_file=" + csf, "--set", "auth.grant=aisd-test:*:ro"])
ga = Node("ga", "gateway")
ta = [Node("ta%d" % i, "target") for i in (1, 2, 3)]
ta4 = Node("ta4", "target")
ta4.port = clulib.low_port()
if not t.check(ga.start() and all(x.start(join=ga.url) for x in ta), "a cluster with auth.enabled forms"):
    t.finish()


def members():
    r = get(ga.url, "/v1/cluster?what=smap", headers=ADMIN)
    return {n["id"] for n in r.json()["nodes"]} if r.status == 200 else set()


t.check(poll(lambda: members() == {ga.id} | {x.id for x in ta}, 20), "  its map lists every node")
t.eq(request("POST", ga.url, "/v1/buckets/ba", '{"action":"create-bck"}', dict(JSON, **ADMIN)).status, 200,
     "create ba (admin token)")
aids3, aids4 = [x.id for x in ta], [x.id for x in ta] + [ta4.id]
anames = [n for n in ("a%04d" % i for i in range(1000)) if hrwlib.top("ba/" + n, aids4, 1)[0] == ta4.id][:8]
adata = {n: os.urandom(70000 + i) for i, n in enumerate(anames)}
t.check(all(clulib.follow("PUT", ga.url, "/v1/objects/ba/" + n, v, ADMIN)[1].status == 200 for n, v in adata.items()),
        "PUT %d objects the 4th target will own" % len(adata))
if not t.check(ta4.start(join=ga.url) and poll(lambda: ta4.id in members(), 20), "the 4th target joins"):
    t.finish()
V = get(ga.url, "/v1/cluster?what=smap", headers=ADMIN).json()["version"]
poll(lambda: get(ta4.url, "/v1/cluster?what=smap", headers=ADMIN).json().get("version", 0) >= V, 10)
res = {n: fetch("GET", ga.url, "/v1/objects/ba/" + n, first=RO) for n in anames}
t.check(all(r.status == 200 and r.body == adata[n] for n, (r, _) in res.items()),
        "reads with a read-only token, the redirects followed without it: all 200 with the object's bytes",
        [(n, r.status, seen) for n, (r, seen) in res.items() if r.status != 200][:3])
via = [n for n, (r, seen) in res.items() if seen[1:2] == [ta4.id] and len(seen) == 3 and seen[2] != ta4.id]
t.check(len(via) >= len(anames) // 2, "  %d of %d through the 4th target to the old holder" % (len(via), len(anames)))


def moved_on(n):
    """The second hop of a read of n (the 4th target's answer) while it
    still sends n on to its old holder, else None (its copy came)."""
    r = request("GET", ga.url, "/v1/objects/ba/" + n, headers=RO)
    base = urllib.parse.urlsplit(r.h("location") or "")
    r = request("GET", "http://" + base.netloc, base.path + "?" + base.query) if base.netloc else r
    return r if r.status == 307 and r.h("location") else None


# one the rebalance has not brought to the 4th target yet (it goes on meanwhile)
sent_on = [(n, moved_on(n)) for n in via]
sent_on = [(n, r) for n, r in sent_on if r]
t.check(sent_on, "  an object the 4th target still sends on to its old holder", via)
if sent_on:
    via[0], r = sent_on[0]
    loc = urllib.parse.urlsplit(r.h("location") or "")
    other = [n for n in anames if n != via[0]][0]
    forged = loc.path.replace(via[0], other) + "?" + loc.query
    r2 = request("GET", "http://" + loc.netloc, forged)
    t.check(r.status == 307 and "ais_prev=" in loc.query and r2.status == 401,
            "  the old holder refuses that Location with another object's name (401)", (r.status, r2.status))
    # ais_prev is signed under the cluster secret for its path: a client's own (the bare map
    # version, in the query or as Ais-Prev) does not make the old holder serve its copy
    qs = urllib.parse.parse_qsl(loc.query, keep_blank_values=True)
    vprev = dict(qs).get("ais_prev", "").split(".")[0]
    bare = urllib.parse.urlencode([(k, vprev if k == "ais_prev" else v) for k, v in qs], safe=":,@")
    r3 = request("GET", "http://" + loc.netloc, loc.path + "?" + bare)
    r4 = request("GET", "http://" + loc.netloc, loc.path + "?ais_hop=1", headers=dict(RO, **{"Ais-Prev": vprev}))
    r5 = request("GET", "http://" + loc.netloc, loc.path + "?ais_hop=1&ais_prev=" + vprev, headers=RO)
    t.check("." in dict(qs).get("ais_prev", "") and [r3.status, r4.status, r5.status] == [307, 307, 307],
            "  an unsigned ais_prev=%s (query, Ais-Prev, with a token) is not honoured there: 307 to the owner"
            % vprev, (dict(qs).get("ais_prev"), r3.status, r4.status, r5.status))

    # an S3 read of an object the 4th target still lacks: relayed from the old holder with a
    # signed Ais-Prev (the 4th target fetches nothing)
    t7 = time.time()
    lacking = [n for n in anames if request("GET", ta4.url, "/v1/objects/ba/" + n, headers=ADMIN).status == 307][:1]
    if not lacking:
        t.skip("an S3 GET relayed with a signed Ais-Prev", "the rebalance delivered every object already")
    for n in lacking:
        try:
            got = boto3_client(ga.url).get_object(Bucket="ba", Key=n)["Body"].read()
        except Exception as e:  # noqa: BLE001 (any failure is the finding)
            got = repr(e)[:200]
        t.check(got == adata[n] and not fetches_since(open(ta4.log, errors="replace").read(), t7),
                "  an S3 GET of %s (not on the 4th target yet): relayed from the old holder, nothing fetched" % n,
                got[:200] if isinstance(got, str) else len(got))

clulib.check_logs([g] + old + [t4, ga] + ta + [ta4])
t.finish()
