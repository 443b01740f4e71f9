"""test_getbatch_kill.py - GetBatch when a peer target dies: a gateway and 3
targets started here (grace 120 s, so the dead target stays in the map for
the whole test), buckets c2 (mirror.copies=2) and c1 (one copy), 72 objects
of 256 KiB each generated here, 24 owned by each target.

Batches of 512 entries (128 MiB: objects repeated, half owned by the
designated target DT, 35% by the victim V, the rest by the third target)
are read slowly (1 MiB, then a pause) while V is killed with SIGKILL:
  - c2, raw HTTP: the stream completes with every entry byte for byte (V's
    entries from the other holder of a copy; the first entry, 16 MiB of
    V's, being sent when V dies, resumed from there);
  - c1, coer=true, raw HTTP: the stream completes (entries of 256 KiB are
    sent only once whole); an entry differs from the object only when V
    owns it, and then it is an empty __404__/NAME entry (and there is at
    least one: the kill landed mid-stream);
  - c1, coer=false, the Python client's get_batch: an exception that says so;
  - c1, coer=false, aisctl ml get-batch to a pipe: exit 1 and a message.
Then, V dead before the batch starts: the Python client's get_batch on c2
gets every byte; on c1 with coer=true exactly V's entries are __404__/NAME
(fetch_batch: None for them); with coer=false a batch whose first entry is
V's is a 503 with a JSON message (HTTPError from the client), a batch whose
first entry is not V's is cut (an incomplete chunked stream); aisctl exits
1 with a message and leaves no file (and --coer writes the tar). After a
clean stop, no sanitizer report from any node.
"""
# timeout: 240
import http.client
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import time
import urllib.parse

from itlib import T, tar_members

import clulib
import hrwlib
from clulib import poll, request

ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
from aisd import Client, HTTPError, fetch_batch  # noqa: E402

JSON = {"Content-Type": "application/json"}
SIZE = 256 << 10
PER_OWNER = 24
ctl = os.environ["AISCTL"]

t = T()
clulib.init(t, "gbkill", ["--set", "store.fsync=never", "--set", "cluster.grace=120s"])
g, tg = clulib.start_cluster(3)
dt, third, victim = tg  # the designated target, the other peer, the one killed
ids = [x.id for x in tg]

t.eq(request("POST", g.url, "/v1/buckets/c1", '{"action":"create-bck"}', JSON).status, 200, "create c1")
t.eq(request("POST", g.url, "/v1/buckets/c2", '{"action":"create-bck"}', JSON).status, 200, "create c2")
body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(request("PATCH", g.url, "/v1/buckets/c2", body, JSON).status, 200, "c2: mirror.copies=2")
poll(lambda: all(request("GET", x.url, "/v1/buckets/c2").status == 200 for x in tg), 10)
time.sleep(0.5)  # the BMD with copies=2 on every target before the PUTs

cl = Client(g.url, timeout=60, retry_for=3)
rnd = random.Random(11)
data = {}   # (bucket, name) -> bytes
owner = {}  # (bucket, name) -> Node (HRW rank 0)
byowner = {}  # (bucket, node name) -> [names]
for b in ("c1", "c2"):
    for x in tg:
        byowner[(b, x.name)] = []
    i = 0
    while min(len(byowner[(b, x.name)]) for x in tg) < PER_OWNER and i < 1000:
        n = "o/%04d" % i
        i += 1
        o = next(x for x in tg if x.id == hrwlib.top("%s/%s" % (b, n), ids, 1)[0])
        if len(byowner[(b, o.name)]) >= PER_OWNER:
            continue
        body = rnd.randbytes(SIZE)
        cl.put(b, n, body)
        data[(b, n)] = body
        owner[(b, n)] = o
        byowner[(b, o.name)].append(n)
t.check(all(len(v) == PER_OWNER for v in byowner.values()), "%d objects of 256 KiB per owner in c1 and c2"
        % PER_OWNER)
# a 16 MiB object of V's, first in the c2 batch: its header is out and its
# data partly here when V dies, so the rest comes from the other copy
i = 0
while hrwlib.top("c2/big/%d" % i, ids, 1)[0] != victim.id:
    i += 1
big = "big/%d" % i
data[("c2", big)] = rnd.randbytes(16 << 20)
owner[("c2", big)] = victim
cl.put("c2", big, data[("c2", big)])
ctwo = [n for (b, n) in data if b == "c2"]
t.check(all(request("GET", x.url, "/v1/objects/c2/" + n, headers={"Ais-Intra": "test"}).status == 200
            for n in ctwo[:10] for x in tg if x.id in hrwlib.top("c2/" + n, ids, 2)),
        "c2's objects have their second copy")


def batch(b, n, first=None):
    """n entries of bucket b: half the DT's objects, 35% the victim's, the
    rest the third target's, shuffled (first: whose object comes first)."""
    nv = n * 35 // 100
    nt = n * 15 // 100
    picks = ([rnd.choice(byowner[(b, victim.name)]) for _ in range(nv)] +
             [rnd.choice(byowner[(b, third.name)]) for _ in range(nt)] +
             [rnd.choice(byowner[(b, dt.name)]) for _ in range(n - nv - nt)])
    rnd.shuffle(picks)
    if first is not None:
        k = next(i for i, p in enumerate(picks) if owner[(b, p)] is first)
        picks.insert(0, picks.pop(k))
    return picks


def moss_body(b, names, coer):
    return json.dumps({"in": [{"objname": n} for n in names], "mime": ".tar", "coer": coer,
                       "strm": True}).encode()


def open_dt(b, names, coer):
    """The gateway's 307 must name the DT; then the GET with the body there.
    Returns the http.client response (not read yet)."""
    raw = moss_body(b, names, coer)
    r1 = request("GET", g.url, "/v1/ml/moss/" + b, raw, JSON)
    loc = urllib.parse.urlsplit(r1.h("location") or "")
    t.check(r1.status == 307 and loc.port == dt.port, "the gateway picks %s as the DT" % dt.name,
            (r1.status, r1.h("location")))
    c = http.client.HTTPConnection(loc.hostname, loc.port, timeout=120)
    c.request("GET", loc.path, body=raw, headers=JSON)
    return c.getresponse()


def expect(b, names):
    return [("%s/%s" % (b, n), data[(b, n)]) for n in names]


def only_victims_missing(b, names, got):
    """([], markers) when every entry is the object's bytes or (V's only) an
    empty __404__ entry; else (the first bad ones, markers)."""
    bad, markers = [], 0
    for i, (n, (gn, gb)) in enumerate(zip(names, got)):
        full = "%s/%s" % (b, n)
        if (gn, gb) == (full, data[(b, n)]):
            continue
        if owner[(b, n)] is victim and gn == "__404__/" + full and gb == b"":
            markers += 1
            continue
        bad.append((i, n, gn, len(gb)))
    if len(got) != len(names):
        bad.append(("count", len(got), len(names)))
    return bad[:5], markers


# --- V killed while four batches stream -------------------------------------------
N = 512
na, nb, nc, nd = [big] + batch("c2", N - 1), batch("c1", N), batch("c1", N), batch("c1", N)
ra = open_dt("c2", na, False)
rb = open_dt("c1", nb, True)
t.eq((ra.status, rb.status), (200, 200), "c2 and c1/coer=true batches start")
heads = [ra.read(1 << 20), rb.read(1 << 20)]

gc = cl.get_batch("c1", [{"objname": n} for n in nc], coer=False)
c_got = [next(gc), next(gc)]

lst = os.path.join(os.environ["TMPDIR"], "d.list")
with open(lst, "w") as f:
    f.write("".join(n + "\n" for n in nd))
pd = subprocess.Popen([ctl, "-e", g.url, "ml", "get-batch", "c1", "--file", lst, "-"],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
d_head = pd.stdout.read(1 << 20)
t.eq(len(d_head), 1 << 20, "aisctl's stream started")

time.sleep(2)  # every node's buffers fill while nobody reads; V is mid-stream
victim.kill9()
t.ok("%s killed (SIGKILL) mid-stream" % victim.name)

try:
    rest = ra.read()
    got = tar_members(heads[0] + rest)
    bad = [(i, n) for i, ((n, b_), w) in enumerate(zip(got, expect("c2", na))) if (n, b_) != w]
    t.check(len(got) == N and not bad, "copies=2: the stream completes, %d entries byte for byte" % N,
            (len(got), bad[:5]))
except (http.client.HTTPException, OSError, tarfile.TarError) as e:
    t.fail("copies=2: the stream completes", repr(e))

try:
    got = tar_members(heads[1] + rb.read())
    bad, markers = only_victims_missing("c1", nb, got)
    t.check(not bad, "copies=1 coer=true: complete; only %s's entries are __404__/NAME" % victim.name, bad)
    t.check(markers > 0, "... and some are (%d of %d: the kill landed mid-stream)"
            % (markers, sum(owner[("c1", n)] is victim for n in nb)))
except (http.client.HTTPException, OSError, tarfile.TarError) as e:
    t.fail("copies=1 coer=true: the stream completes", repr(e))

err = None
try:
    for x in gc:
        c_got.append(x)
except (HTTPError, OSError) as e:
    err = e
t.check(err is not None, "copies=1 coer=false: the Python client's get_batch raises", len(c_got))
t.diag("get_batch: %r" % err)
t.check(c_got == expect("c1", nc)[:len(c_got)], "... after %d entries, each one right" % len(c_got))

d_rest = pd.stdout.read()
pd.wait(60)
d_err = pd.stderr.read().decode(errors="replace")
t.check(pd.returncode == 1 and "cut" in d_err and "incomplete" in d_err,
        "copies=1 coer=false: aisctl exits 1 and says the stream was cut", (pd.returncode, d_err[-600:]))
t.diag("aisctl: " + d_err.strip().replace("\n", " | ")[-400:])

# --- V dead before the batch starts (still in the map) --------------------------------
M = 96
ne = batch("c2", M, first=victim)
try:
    got = list(cl.get_batch("c2", [{"objname": n} for n in ne]))
    t.check(got == expect("c2", ne), "V dead: copies=2 via get_batch, %d entries byte for byte" % M)
except (HTTPError, OSError) as e:
    t.fail("V dead: copies=2 via get_batch", repr(e))

nf = batch("c1", M, first=victim)
try:
    got = list(cl.get_batch("c1", [{"objname": n} for n in nf], coer=True))
    wantf = [("__404__/c1/%s" % n, b"") if owner[("c1", n)] is victim else ("c1/" + n, data[("c1", n)])
             for n in nf]
    t.check(got == wantf, "V dead: coer=true via get_batch, exactly V's entries are __404__/NAME",
            only_victims_missing("c1", nf, got))
except (HTTPError, OSError) as e:
    t.fail("V dead: coer=true via get_batch", repr(e))
try:
    nf2 = batch("c1", 20)
    smp = fetch_batch(cl, "c1", nf2, coer=True)
    t.check([s["data"] for s in smp] ==
            [None if owner[("c1", n)] is victim else data[("c1", n)] for n in nf2],
            "V dead: fetch_batch with coer: None for V's objects")
except (HTTPError, OSError) as e:
    t.fail("V dead: fetch_batch with coer", repr(e))

ng = batch("c1", M, first=victim)
try:
    list(cl.get_batch("c1", [{"objname": n} for n in ng]))
    t.fail("V dead: coer=false, V's entry first: get_batch raises")
except HTTPError as e:
    t.check(e.status == 503 and "no other holder" in e.message,
            "V dead: coer=false, V's entry first: HTTPError 503 with the reason", repr(e))
except OSError as e:
    t.fail("V dead: coer=false, V's entry first: HTTPError 503", repr(e))
r = open_dt("c1", ng, False)
msg = r.read()
t.check(r.status == 503 and "no other holder" in (json.loads(msg).get("message") or ""),
        "... the DT's answer: 503 with a JSON message", (r.status, msg[:300]))

nh = batch("c1", M, first=dt)
r = open_dt("c1", nh, False)
try:
    r.read()
    t.fail("V dead: coer=false, a later entry of V's: the stream is cut")
except (http.client.IncompleteRead, OSError) as e:
    t.ok("V dead: coer=false, a later entry of V's: the stream is cut (%s)" % type(e).__name__)

out = os.path.join(os.environ["TMPDIR"], "h.tar")
with open(lst, "w") as f:
    f.write("".join(n + "\n" for n in nh))
p = subprocess.run([ctl, "-e", g.url, "ml", "get-batch", "c1", "--file", lst, out],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
e = p.stderr.decode(errors="replace")
t.check(p.returncode == 1 and "cut" in e and "no file written" in e and not os.path.exists(out),
        "V dead: aisctl exits 1, says the stream was cut, leaves no file", (p.returncode, e[-600:]))
p = subprocess.run([ctl, "-e", g.url, "ml", "get-batch", "c1", "--coer", "--file", lst, out],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
ok = p.returncode == 0 and os.path.exists(out)
bad, markers = only_victims_missing("c1", nh, tar_members(open(out, "rb").read()) if ok else [])
t.check(ok and not bad and markers == sum(owner[("c1", n)] is victim for n in nh),
        "V dead: aisctl --coer writes the tar, V's entries as __404__/NAME", (p.returncode, bad, p.stderr[-300:]))

# after a clean stop: no sanitizer report from any node
clulib.stop_all()
for x in [g] + tg:
    se = open(os.path.join(x.dir, "stderr"), errors="replace").read()
    bad = [w for w in ("AddressSanitizer", "LeakSanitizer", "runtime error:") if w in se]
    t.check(not bad, "no sanitizer report from %s" % x.name, se[-2000:])
t.finish()
