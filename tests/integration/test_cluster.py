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
objects; bucket destroy through g1 reaches every target; no node logs an
error-level line. Every node is stopped by PID on the way out.
"""
# timeout: 150
import atexit
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.parse

from itlib import T, q

BIN = os.environ["AISD_BIN"]
DIR = os.path.join(os.environ["AISD_DIR"], "clu")
FAST = ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1500ms",
        "--set", "store.fsync=never"]
B = "clu"

t = T()
procs = {}  # name -> Popen (the nodes this test started)


def stop_all():
    for name, p in list(procs.items()):
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + 10
    for name, p in list(procs.items()):
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            t.diag("%s (pid %d) ignored SIGTERM: SIGKILL" % (name, p.pid))
            p.kill()
            p.wait(5)


atexit.register(stop_all)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))  # the runner's timeout: clean up


class Node:
    def __init__(self, name, role):
        self.name, self.role = name, role
        self.dir = os.path.join(DIR, name)
        self.port = 0
        os.makedirs(self.dir, exist_ok=True)

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    @property
    def log(self):
        return os.path.join(self.dir, "aisd.log")

    def start(self, join=None):
        pf = os.path.join(self.dir, "port")
        if os.path.exists(pf):
            os.unlink(pf)
        args = [BIN, "--port", str(self.port), "--port-file", pf,
                "--set", "log.file=" + self.log] + FAST
        if self.role == "gateway":
            args += ["--role", "gateway", "--dir", os.path.join(self.dir, "meta")]
        else:
            args += ["-m", os.path.join(self.dir, "mp1")]
        if join:
            args += ["--join", join]
        err = open(os.path.join(self.dir, "stderr"), "ab")
        procs[self.name] = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        err.close()
        for _ in range(100):
            if os.path.exists(pf) and open(pf).read().strip():
                self.port = int(open(pf).read())
                break
            if procs[self.name].poll() is not None:
                break
            time.sleep(0.1)
        if not self.port:
            return False
        for _ in range(100):
            try:
                if get(self.url, "/v1/health").status == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def kill9(self):
        p = procs[self.name]
        p.kill()
        p.wait(10)


class R:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def h(self, k):
        return self.headers.get(k.lower())

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def __repr__(self):
        return "HTTP %d %s %r" % (self.status, self.headers, self.body[:200])


def request(method, url, path, body=None, headers=None, timeout=30):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        return R(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    finally:
        c.close()


def get(url, path, **kw):
    return request("GET", url, path, **kw)


def follow(method, url, path, body=None, headers=None):
    """One request, then the 307 followed (once) with the same method and
    body. Returns (first response, final response)."""
    r1 = request(method, url, path, body, headers)
    if r1.status != 307:
        return r1, r1
    loc = urllib.parse.urlsplit(r1.h("location"))
    p = loc.path + ("?" + loc.query if loc.query else "")
    return r1, request(method, "%s://%s" % (loc.scheme, loc.netloc), p, body, headers)


def curl(*args):
    """curl -s ... ; returns the HTTP code as a string."""
    cp = subprocess.run(["curl", "-s", "-m", "30", "-o", "/dev/null", "-w", "%{http_code}"] + list(args),
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return cp.stdout.decode().strip()


def smap_ids(node):
    try:
        r = get(node.url, "/v1/cluster?what=smap", timeout=5)
        d = r.json() if r.status == 200 else None
        return {n["id"] for n in d["nodes"]} if d else None
    except (OSError, KeyError, TypeError):
        return None


def node_id(n):
    return "127.0.0.1:%d" % n.port


def poll(cond, secs):
    """Polls cond() every 0.1 s for at most secs seconds."""
    deadline = time.monotonic() + secs
    while True:
        if cond():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def bucket_names(node):
    r = get(node.url, "/v1/buckets/")
    d = r.json() if r.status == 200 else None
    return {b["name"] for b in d} if isinstance(d, list) else None


def list_pages(url, bck, pagesize):
    """Every page of the JSON-body listing; returns a list of name lists,
    or (None, last response) on failure."""
    pages, token = [], ""
    for _ in range(10000):
        body = json.dumps({"action": "list", "value": {"pagesize": pagesize, "continuation_token": token}})
        r = get(url, "/v1/buckets/" + bck, body=body, headers={"Content-Type": "application/json"})
        d = r.json() if r.status == 200 else None
        if not isinstance(d, dict) or not isinstance(d.get("entries"), list):
            return None, r
        pages.append([e["name"] for e in d["entries"]])
        token = d.get("continuation_token") or ""
        if not token:
            return pages, r
    return None, "listing did not end"


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
    loc1[n] = r1.h("location")
t.check(not bad, "PUT 200 objects (0..64 KiB) through g1: 307 to a target, then 200", bad[:3])

bad, mism = [], []
for n in names:
    r1, r2 = follow("GET", g2.url, "/v1/objects/%s/%s" % (B, q(n)))
    if r1.status != 307 or r2.status != 200 or r2.body != data[n]:
        bad.append((n, r1, r2))
    if r1.h("location") != loc1[n]:
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
        r = get(tg.url, "/v1/objects/%s/%s" % (B, q(n)))
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
    if r1.h("location") != loc1[n] or r2.status != 200 or r2.body != data[n]:
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
    if r1.h("location") != loc1[n] or r2.status != 200 or r2.body != data[n]:
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

# --- stop, then the logs -------------------------------------------------------------

stop_all()
t.check(all(p.returncode == 0 for p in procs.values()), "every node exits 0 on SIGTERM",
        {k: p.returncode for k, p in procs.items()})
errs = []
for n in nodes:
    try:
        with open(n.log, errors="replace") as f:
            errs += ["%s: %s" % (n.name, line.rstrip()) for line in f if re.match(r"^\S+ E ", line)]
    except OSError as e:
        errs.append("%s: %s" % (n.name, e))
t.check(not errs, "no node log has an error-level line", "\n".join(errs[:10]))
t.finish()
