"""test_getbatch.py - GetBatch (GET /v1/ml/moss/BUCKET) on a gateway and 3
targets started here.

Objects of many sizes (0 B to 5 MiB, so that fetches pause on the per-entry
and per-request buffer bounds) and two tar shards are PUT through the
gateway, so they land on all three targets. Then: the gateway answers 307 to
a target and the same body resent there gives a tar whose entries are in
exactly the request order, named bucket/objname[/archpath] (objname[/...]
with onob), with the bytes PUT (compared with Python's tarfile); archpath
entries from shards on other targets; start/length ranges on objects and
members; a second bucket in the same batch; every target as the designated
target gives the same bytes; coer=true turns missing objects, members and
buckets into zero-size __404__/NAME entries; coer=false fails with 404 and
the entry's message (first entry missing), and never yields a complete tar
when a later entry is missing; 1000 small objects in one batch; the wrapped
{"action":"getbatch","value":...} form; bad bodies are 400 with a message on
the gateway and on a target; a 120 MiB batch read by a client that stalls 2
s grows no target's peak RSS (VmHWM, reset with clear_refs) by 48 MiB. Node logs must hold no error line.
"""
# timeout: 240
import glob
import http.client
import io
import json
import os
import random
import subprocess
import tarfile
import time
import urllib.parse

from itlib import T, tar_members

import clulib
from clulib import follow, get, poll, procs, request

B, B2 = "gb", "gb2"
JSON = {"Content-Type": "application/json"}

t = T()
clulib.init(t, "getbatch", ["--set", "store.fsync=never"])
g, tg = clulib.start_cluster(3)
for b in (B, B2):
    r, r2 = follow("POST", g.url, "/v1/buckets/" + b, json.dumps({"action": "create-bck"}), JSON)
    t.eq(r2.status, 200, "create bucket " + b)
poll(lambda: all(get(x.url, "/v1/buckets/" + B2, timeout=5).status == 200 for x in tg), 10)

rnd = random.Random(7)
data = {}    # (bucket, name) -> bytes
where = {}   # (bucket, name) -> target url


def put(bck, name, body):
    path = "/v1/objects/%s/%s" % (bck, urllib.parse.quote(name))
    r1 = request("HEAD", g.url, path)  # the gateway's 307 names the owner
    owner = (r1.h("location") or "").split("/v1/")[0]
    r2 = request("PUT", owner, path, body) if r1.status == 307 else r1
    if r2.status != 200:
        t.fail("PUT %s/%s" % (bck, name), r2)
        return False
    data[(bck, name)] = body
    where[(bck, name)] = owner
    return True


sizes = [0, 1, 511, 512, 513, 10 * 1024, 100 * 1024, 700 * 1024, 3 << 20]
names = []
for i in range(40):
    n = "obj/%03d-%s.bin" % (i, "x" * (i % 3) * 60)  # some names over 100 bytes
    put(B, n, rnd.randbytes(sizes[i % len(sizes)]))
    names.append(n)
for i in range(6):
    put(B, "big/%d" % i, rnd.randbytes(5 << 20))
put(B2, "other.txt", b"from the second bucket")


def make_shard(seed, n):
    r = random.Random(seed)
    members = {}
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for i in range(n):
            for ext, size in (("jpg", r.randint(100, 50000)), ("cls", 3)):
                nm = "%06d.%s" % (i, ext)
                ti = tarfile.TarInfo(nm)
                body = r.randbytes(size)
                ti.size = len(body)
                tf.addfile(ti, io.BytesIO(body))
                members[nm] = body
    return bio.getvalue(), members


shards = {}
for s in range(4):
    body, members = make_shard(s, 30)
    put(B, "shards/s%d.tar" % s, body)
    shards["shards/s%d.tar" % s] = members
t.check(len({where[k] for k in where}) == 3, "objects landed on all 3 targets",
        {k: where[k] for k in list(where)[:5]})


def moss(entries, base=None, path="/v1/ml/moss/" + B, **opts):
    """GetBatch through base (default: the gateway, following the 307).
    Returns (status, body bytes or None on a broken stream, first response)."""
    body = dict(opts)
    body["in"] = entries
    body.setdefault("mime", ".tar")
    body.setdefault("strm", True)
    raw = json.dumps(body).encode()
    st, b, hdrs = fetch(base or g.url, path, raw)
    r1 = clulib.R(st, hdrs, b or b"")
    if st != 307:
        return st, b, r1
    loc = urllib.parse.urlsplit(hdrs.get("location", ""))
    st, b, _ = fetch("http://" + loc.netloc, loc.path, raw)
    return st, b, r1


def fetch(base, path, raw):
    """One GET with a body; (status, body or None when the stream broke, headers)."""
    u = urllib.parse.urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        c.request("GET", path, body=raw, headers=JSON)
        r = c.getresponse()
        try:
            b = r.read()
        except (http.client.IncompleteRead, OSError):
            b = None
        return r.status, b, {k.lower(): v for k, v in r.getheaders()}
    finally:
        c.close()


def check_tar(st, body, want, what):
    """want: list of (name, bytes)."""
    if not t.eq(st, 200, what + ": 200"):
        t.diag(repr(body[:300] if body else body))
        return
    if not t.check(body is not None, what + ": complete stream"):
        return
    try:
        got = tar_members(body)
    except (tarfile.TarError, OSError) as e:
        t.fail(what + ": a valid tar", e)
        return
    t.eq([n for n, _ in got], [n for n, _ in want], what + ": names in request order")
    bad = [n for (n, b), (_, w) in zip(got, want) if b != w]
    t.check(not bad and len(got) == len(want), what + ": bytes identical", bad[:5])


# 1. plain objects, shuffled order, through the gateway
order = names[:] + ["big/%d" % i for i in range(6)]
rnd.shuffle(order)
st, body, r1 = moss([{"objname": n} for n in order])
t.eq(r1.status, 307, "the gateway redirects GetBatch (307)")
t.check(clulib.no_id(r1.h("location") or "").endswith("/v1/ml/moss/" + B), "Location keeps the path", r1.h("location"))
check_tar(st, body, [("%s/%s" % (B, n), data[(B, n)]) for n in order], "46 objects across 3 targets")

# 2. onob, and every target as the designated target gives the same tar
sel = order[:12]
want_onob = [(n, data[(B, n)]) for n in sel]
for x in tg:
    st, body, _ = moss([{"objname": n} for n in sel], base=x.url, onob=True)
    check_tar(st, body, want_onob, "onob with %s as DT" % x.name)

# 3. archpath entries from shards on every target, ranges, a second bucket
ents, want_l = [], []
for s, members in shards.items():
    for nm in sorted(members)[:6]:
        ents.append({"objname": s, "archpath": nm})
        want_l.append(("%s/%s/%s" % (B, s, nm), members[nm]))
ents.append({"objname": names[7], "start": 100, "length": 1000})
want_l.append(("%s/%s" % (B, names[7]), data[(B, names[7])][100:1100]))
ents.append({"objname": names[8], "start": 5000})
want_l.append(("%s/%s" % (B, names[8]), data[(B, names[8])][5000:]))
s0 = "shards/s1.tar"
ents.append({"objname": s0, "archpath": "000002.jpg", "start": 10, "length": 50})
want_l.append(("%s/%s/000002.jpg" % (B, s0), shards[s0]["000002.jpg"][10:60]))
ents.append({"objname": "other.txt", "bucket": B2})
want_l.append(("%s/other.txt" % B2, data[(B2, "other.txt")]))
rnd.shuffle(ents_order := list(range(len(ents))))
ents = [ents[i] for i in ents_order]
want_l = [want_l[i] for i in ents_order]
st, body, _ = moss(ents)
check_tar(st, body, want_l, "archpath, ranges and a second bucket")
for x in tg:
    st, body2, _ = moss(ents, base=x.url)
    t.check(st == 200 and body2 == body, "same tar bytes with %s as DT" % x.name)

# 4. coer=true: missing object, member, bucket become __404__/NAME (0 bytes)
ents = [{"objname": names[0]}, {"objname": "no/such"}, {"objname": s0, "archpath": "nope.jpg"},
        {"objname": "x", "bucket": "nobucket"}, {"objname": names[6]}]
want_c = [("%s/%s" % (B, names[0]), data[(B, names[0])]), ("__404__/%s/no/such" % B, b""),
          ("__404__/%s/%s/nope.jpg" % (B, s0), b""), ("__404__/nobucket/x", b""),
          ("%s/%s" % (B, names[6]), data[(B, names[6])])]
st, body, _ = moss(ents, coer=True)
check_tar(st, body, want_c, "coer=true: missing entries as __404__/")
for x in tg:
    st, body, _ = moss(ents, base=x.url, coer=True)
    check_tar(st, body, want_c, "coer=true with %s as DT" % x.name)

# 5. coer=false: the first entry missing -> 404 with its message; a later one
# missing -> never a complete 200 tar
for x in tg:
    st, body, _ = moss([{"objname": "no/such"}, {"objname": names[1]}], base=x.url)
    msg = (json.loads(body).get("message", "") if st == 404 and body else "")
    t.check(st == 404 and "no/such" in msg, "coer=false, first entry missing: 404 via %s" % x.name, (st, body))
    st, body, _ = moss([{"objname": n} for n in names[:10]] + [{"objname": "no/such"}], base=x.url)
    t.check(st == 404 or (st == 200 and body is None),
            "coer=false, later entry missing: 404 or an aborted stream via %s" % x.name, (st, body and body[:100]))

# 6. 1000 small objects in one batch
small = []
for i in range(1000):
    n = "small/%04d" % i
    if not put(B, n, rnd.randbytes(rnd.randint(0, 3000))):
        break
    small.append(n)
rnd.shuffle(small)
st, body, _ = moss([{"objname": n} for n in small], onob=True)
check_tar(st, body, [(n, data[(B, n)]) for n in small], "1000 small objects")

# 7. AIStore's wrapped form, and no bucket in the URL
raw = json.dumps({"action": "getbatch", "value": {"in": [{"objname": names[3], "bucket": B}], "strm": True}})
r1, r2 = follow("GET", g.url, "/v1/ml/moss", raw, JSON)
if t.eq(r2.status, 200, "wrapped form without a bucket in the URL"):
    got = tar_members(r2.body)
    t.eq(got, [("%s/%s" % (B, names[3]), data[(B, names[3])])], "wrapped form: the entry")

# 8. bad requests: 400 with a message, on the gateway and on a target
bad = [b"not json", b"{}", b'{"in":[]}', b'{"in":[{"archpath":"x"}]}', b'{"in":[{"objname":""}]}',
       b'{"in":[{"objname":"a"}],"mime":".zip"}', b'{"in":[{"objname":"a","start":-1}]}',
       b'{"in":[{"objname":"a"}],"coer":"yes"}', b'{"in":[{"objname":"a","bucket":"bad/name"}]}']
for base in (g.url, tg[0].url):
    for b in bad:
        r = request("GET", base, "/v1/ml/moss/" + B, b, JSON)
        j = r.json() or {}
        t.check(r.status == 400 and j.get("status") == 400 and "GetBatch" in j.get("message", ""),
                "400 for %r on %s" % (b[:40], "gateway" if base == g.url else "target"), r)
r = request("GET", g.url, "/v1/ml/moss", b'{"in":[{"objname":"a"}]}', JSON)
t.eq(r.status, 400, "no bucket anywhere: 400")

# 8b. listing through the gateway with the archive flag: each shard followed
# by its members, whatever the page size
for ps in (1000, 7):
    ents, token = [], ""
    for _ in range(2000):
        v = {"pagesize": ps, "flags": 8, "prefix": "s", "continuation_token": token}
        r1, r2 = follow("GET", g.url, "/v1/buckets/" + B, json.dumps({"action": "list", "value": v}), JSON)
        if r2.status != 200:
            break
        ents += r2.json()["entries"]
        token = r2.json()["continuation_token"]
        if not token:
            break
    want_names = []
    for o in sorted(k[1] for k in data if k[0] == B and k[1].startswith("s")):
        want_names.append(o)
        if o in shards:
            want_names += [o + "/" + m for m in shards[o]]
    t.eq([e["name"] for e in ents], want_names, "gateway list flags=8 pagesize %d: shards with members" % ps)

# 9. aisctl ml get-batch: --list, --file with archpaths, a failed batch leaves no file
ctl = os.environ["AISCTL"]
tmp = os.environ.get("TMPDIR", "/tmp")
out = os.path.join(tmp, "gb-out.tar")


def aisctl(*args, stdin=None):
    return subprocess.run([ctl, "-e", g.url] + list(args), input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)


sel = names[:5]
p = aisctl("ml", "get-batch", B, "--list", ",".join(sel), out)
if t.eq(p.returncode, 0, "aisctl ml get-batch --list", ) and os.path.exists(out):
    t.eq(tar_members(open(out, "rb").read()), [("%s/%s" % (B, n), data[(B, n)]) for n in sel],
         "aisctl --list: the tar")
lst = os.path.join(tmp, "gb-list")
with open(lst, "w") as f:
    f.write("%s\n\nshards/s2.tar\t000001.cls\n" % names[2])
p = aisctl("ml", "get-batch", B, "--file", lst, "--onob", "-")
t.eq(p.returncode, 0, "aisctl ml get-batch --file --onob to stdout")
t.eq(tar_members(p.stdout) if p.returncode == 0 else None,
     [(names[2], data[(B, names[2])]), ("shards/s2.tar/000001.cls", shards["shards/s2.tar"]["000001.cls"])],
     "aisctl --file: the tar")
os.unlink(out)
p = aisctl("ml", "get-batch", B, "--list", "no/such," + names[0], out)
t.check(p.returncode == 3 and b"no/such" in p.stderr and not os.path.exists(out),
        "aisctl: a missing entry fails (exit 3: not found, message) and leaves no file", p.stderr)
p = aisctl("ml", "get-batch", B, "--coer", "--list", "no/such," + names[0], out)
t.check(p.returncode == 0 and [n for n, _ in tar_members(open(out, "rb").read())] ==
        ["__404__/%s/no/such" % B, "%s/%s" % (B, names[0])], "aisctl --coer", p.stderr)
p = aisctl("ml", "get-batch", B, out)
t.eq(p.returncode, 2, "aisctl: neither --list nor --file is a usage error")

# bounded memory: 30 entries of 4 MiB (about 80 MiB on peers), the client reading nothing for
# 2 s after the head and then everything: no target's peak RSS grows by the batch's size


def peak_rss(x):
    """VmHWM of x's process in bytes, after resetting it (clear_refs 5) when reset."""
    with open("/proc/%d/status" % procs[x.name].pid) as f:
        return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmHWM:"))


def reset_peak(x):
    """True when the peak was reset; without it the RSS check cannot run."""
    try:
        with open("/proc/%d/clear_refs" % procs[x.name].pid, "w") as f:
            f.write("5")
        return True
    except OSError as e:
        t.diag("clear_refs of %s: %s" % (x.name, e))
        return False


blob = rnd.randbytes(4 << 20)
mem = ["mem/%02d" % i for i in range(30)]
for i, n in enumerate(mem):
    put(B, n, b"%04d" % i + blob[4:])
reset = all([reset_peak(x) for x in tg])
before = {x.name: peak_rss(x) for x in tg}
raw = json.dumps({"in": [{"objname": n} for n in mem], "mime": ".tar", "strm": True}).encode()
st, _, hdrs = fetch(g.url, "/v1/ml/moss/" + B, raw)
loc = urllib.parse.urlsplit(hdrs.get("location", ""))
hc = http.client.HTTPConnection(loc.hostname, loc.port, timeout=60)
hc.request("GET", loc.path, body=raw, headers=JSON)
resp = hc.getresponse()
time.sleep(2)
got = resp.read()
hc.close()
grew = {x.name: peak_rss(x) - before[x.name] for x in tg}
t.check(st == 307 and resp.status == 200 and tar_members(got) == [("%s/%s" % (B, n), data[(B, n)]) for n in mem],
        "a 120 MiB batch read after a 2 s stall: every entry in order", (st, resp.status, len(got)))
if reset:
    t.check(all(v < (48 << 20) for v in grew.values()),
            "and no target's peak RSS grew by 48 MiB or more (bounded buffering)",
            {k: v >> 20 for k, v in grew.items()})
else:
    t.skip("no target's peak RSS grew by 48 MiB or more", "/proc/PID/clear_refs cannot be written here")
t.diag("peak RSS growth per target (MiB): %s" % {k: v >> 20 for k, v in grew.items()})

# no error-level line in any node's log; after a clean stop, no sanitizer
# report on any node's stderr (a sanitizer build: make SANITIZE=...)
clulib.stop_all()
for x in [g] + tg:
    errs = [ln for ln in open(x.log, errors="replace") if ln.split(" ")[1:2] == ["E"]]
    t.check(not errs, "no error lines in %s's log" % x.name, "".join(errs[:5]))
    se = open(os.path.join(x.dir, "stderr"), errors="replace").read()
    bad = [w for w in ("AddressSanitizer", "LeakSanitizer", "runtime error:") if w in se]
    t.check(not bad, "no sanitizer report from %s" % x.name, se[-2000:])
t.finish()
