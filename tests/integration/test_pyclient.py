"""test_pyclient.py - the Python client (tools/python/aisd) and the shard
tool (python3 -m aisd.shard) against a gateway and 3 targets started here.

Client: bucket create (409 unless exist_ok), PUT of small bodies and of a
2 MiB body and a file (sent once, after 100 Continue from the owner) through
the gateway's 307, GET, Range, HEAD props, paged listing with a prefix,
DELETE then 404 as HTTPError with the server's message, a stream closed
half-read (the next request still works), names with spaces, '+', '%' and
unicode, connections reused (one per node), archpath reads of shard members,
and a GET retried while its target is down (kill -9, restarted 1 s later).
Shard tool: a directory of 300 samples packed into shards of at most 256 KiB
uploaded in parallel; every file is in exactly one shard, byte for byte, the
files of a sample together, names from the template, the --index matching
the shards, the same seed giving the same shards and another seed other
ones; a bucket prefix packed into a local directory; bad usage exits 2.
"""
# timeout: 240
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import threading
import time

from itlib import T, tar_members

import clulib
from clulib import procs, request

ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
PYDIR = os.path.join(ROOT, "tools", "python")
sys.path.insert(0, PYDIR)
from aisd import Client, HTTPError, index_shards  # noqa: E402
from aisd.client import _Pool  # noqa: E402

t = T()
clulib.init(t, "pyclient", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=60s",
                            "--set", "store.fsync=never"])
g, tg = clulib.start_cluster(3)
TMP = os.environ["TMPDIR"]
rnd = random.Random(int(os.environ.get("SEED", "5")))
c = Client(g.url, timeout=20, retry_for=30)
B = "py"


def owner(name, bck=B):
    r = request("HEAD", g.url, "/v1/objects/%s/%s" % (bck, name))
    loc = r.h("location") or ""
    return next((x for x in tg if loc.startswith(x.url + "/")), None)


def raises(fn, status):
    try:
        fn()
    except HTTPError as e:
        return e.status == status and e.message, e
    return False, "no error"


# --- client ---------------------------------------------------------------------------

c.create_bucket(B)
t.ok("create_bucket through the gateway")
ok, e = raises(lambda: c.create_bucket(B), 409)
t.check(ok, "create_bucket again -> HTTPError 409 with a message", e)
c.create_bucket(B, exist_ok=True)
t.ok("create_bucket(exist_ok=True) on an existing bucket")
t.check(B in c.buckets(), "buckets() lists it")

objs = {}
for i in range(40):
    name = "small/o-%02d" % i
    objs[name] = rnd.randbytes(rnd.randrange(0, 5000))
objs["big/two-mib"] = rnd.randbytes(2 << 20)
objs["odd/a b+c%d ü.bin"] = b"odd name"
errs = []
for n, d in objs.items():
    try:
        c.put(B, n, d)
    except Exception as ex:  # noqa: BLE001 - reported as a check failure
        errs.append((n, ex))
t.check(not errs, "42 PUTs through the gateway's 307 (one of 2 MiB, 100-continue)", errs[:3])
fp = os.path.join(TMP, "file.bin")
with open(fp, "wb") as f:
    f.write(rnd.randbytes(3 << 20 | 123))
c.put(B, "big/from-file", fp)
objs["big/from-file"] = open(fp, "rb").read()
t.ok("PUT of a local file (sendfile after 100 Continue)")
bad = [n for n, d in objs.items() if c.get(B, n) != d]
t.check(not bad, "GET returns every object's bytes", bad[:3])
t.check(all(sum(1 for y in tg if owner(n) is y) == 1 for n in ("big/two-mib", "big/from-file")),
        "large PUTs landed on their owner")
t.eq(len(c.list_names(B, "big/")), 2, "listing big/ finds 2 objects")
d = objs["big/two-mib"]
t.eq(c.get_range(B, "big/two-mib", 1000, 5000), d[1000:6000], "get_range(1000, 5000)")
t.eq(c.get_range(B, "big/two-mib", len(d) - 10, 100), d[-10:], "get_range past the end: the tail")
p = c.head(B, "big/two-mib")
t.check(p.size == len(d) and p.checksum and p.checksum[0] == "xxhash" and p.get("etag"),
        "head: size, checksum, etag", dict(p))
ents = list(c.list(B, "small/", pagesize=7))
t.eq([e["name"] for e in ents], sorted(n for n in objs if n.startswith("small/")),
     "list(prefix, pagesize=7): every name under small/ in order, over 6 pages")
t.eq(ents[3]["size"], len(objs[ents[3]["name"]]), "list entries carry sizes")
c.delete(B, "small/o-00")
del objs["small/o-00"]
ok, e = raises(lambda: c.get(B, "small/o-00"), 404)
t.check(ok, "GET after delete -> HTTPError 404 with a message", e)
ok, e = raises(lambda: c.delete(B, "small/o-00"), 404)
t.check(ok, "DELETE of a missing object -> 404", e)
ok, e = raises(lambda: c.get("nobucket", "x"), 404)
t.check(ok and "does not exist" in e.message, "GET in a missing bucket -> 404 'does not exist'", e)

s = c.open(B, "big/two-mib")
first = s.read(1000)
s.close()
t.eq(first, d[:1000], "open(): a stream read in part, then closed")
t.eq(c.get(B, "small/o-01"), objs["small/o-01"], "the next request works")
s = c.open(B, "big/two-mib", start=100)
t.eq((s.status, s.read()), (206, d[100:]), "open(start=100): 206 and the rest, read to its end")
etag = s.headers.get("etag")
s = c.open(B, "big/two-mib", start=5, if_match=etag)
t.eq((s.status, s.read(3)), (206, d[5:8]), "open(start=5, if_match=its ETag): 206")
s.close()
ok, e = raises(lambda: c.open(B, "big/two-mib", start=5, if_match='"other"'), 412)
t.check(ok, "open(if_match=another ETag) -> HTTPError 412", e)

# Connection reuse: after warm-up, many GETs open no new connection.
made = []
orig_new = _Pool.new


def counting_new(self, hp):
    made.append(hp)
    return orig_new(self, hp)


_Pool.new = counting_new
for n in list(objs)[:30]:
    c.get(B, n)
warm = len(made)
for _ in range(3):
    for n in list(objs)[:30]:
        c.get(B, n)
_Pool.new = orig_new
t.check(warm <= 4 and len(made) == warm, "keep-alive: 120 GETs use at most one connection per node",
        (warm, len(made)))

# --- the shard tool --------------------------------------------------------------------

SRC = os.path.join(TMP, "src")
files = {}
for i in range(300):
    key = ("part%d/" % (i % 3)) + "%06d" % i
    files[key + ".jpg"] = rnd.randbytes(rnd.randrange(100, 40000))
    files[key + ".cls"] = str(i % 10).encode()
    if i % 7 == 0:
        files[key + ".meta.json"] = json.dumps({"i": i}).encode()
for rel, data in files.items():
    os.makedirs(os.path.dirname(os.path.join(SRC, rel)), exist_ok=True)
    with open(os.path.join(SRC, rel), "wb") as f:
        f.write(data)
with open(os.path.join(SRC, "README"), "wb") as f:
    f.write(b"no extension: not a sample")


def shard_tool(*args):
    env = dict(os.environ, PYTHONPATH=PYDIR, AIS_ENDPOINT=g.url)
    return subprocess.run([sys.executable, "-m", "aisd.shard"] + list(args), env=env, timeout=120,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


LIMIT = 256 * 1024
idx = os.path.join(TMP, "idx.jsonl")
r = shard_tool("--size", "256K", "--shuffle", "--seed", "7", "--jobs", "4", "--index", idx, SRC, "ais://%s/train/" % B)
t.check(r.returncode == 0 and b"300 samples" in r.stderr and b"README" in r.stderr,
        "aisd.shard SRC ais://py/train/: exit 0, 300 samples, README skipped", r.stderr)
names = c.list_names(B, "train/")
t.eq(names, ["train/shard-%06d.tar" % i for i in range(len(names))], "shard names from the template, from 000000")
t.check(len(names) >= 10, "%d shards" % len(names))
seen, where, bad_size = {}, {}, []
for n in names:
    data = c.get(B, n)
    mem = tar_members(data, files_only=True)
    keys = {m[0].split(".")[0] for m in mem}
    if len(data) > LIMIT and len(keys) > 1:
        bad_size.append((n, len(data)))
    for rel, b in mem:
        seen[rel] = seen.get(rel, 0) + 1
        where.setdefault(rel.split(".")[0], set()).add(n)
        if files.get(rel) != b:
            bad_size.append(("bytes differ", rel))
t.check(not bad_size, "every shard <= 256 KiB (or one sample), member bytes identical", bad_size[:3])
t.eq(seen, {rel: 1 for rel in files}, "every file in exactly one shard")
t.check(all(len(v) == 1 for v in where.values()), "all files of a sample in one shard")
lines = [json.loads(x) for x in open(idx)]
t.eq(len(lines), 300, "--index: a line per sample")
t.check(all(where[x["key"]] == {x["shard"]} for x in lines), "--index: each sample's shard is right")
t.check(all(sorted(x["members"]) == sorted(r2.partition(".")[2] for r2 in files if r2.split(".")[0] == x["key"])
            for x in lines[:40]), "--index: members are the extensions")
order1 = [x["key"] for x in lines]
t.check(order1 != sorted(order1), "--shuffle: not in key order")
r = shard_tool("-n", "--size", "256K", "--shuffle", "--seed", "7", "--index", idx + "2", SRC, "ais://%s/x/" % B)
t.check(r.returncode == 0 and not os.path.exists(idx + "2") and not c.list_names(B, "x/"),
        "--dry-run writes nothing", r.stderr)
r = shard_tool("--size", "256K", "--shuffle", "--seed", "8", "--index", idx + "3", SRC, os.path.join(TMP, "seed8"))
lines8 = [json.loads(x)["key"] for x in open(idx + "3")]
t.check(r.returncode == 0 and sorted(lines8) == sorted(order1) and lines8 != order1,
        "another seed, to a local directory: the same samples in another order", r.stderr)
t.check(os.path.exists(os.path.join(TMP, "seed8", "shard-000000.tar")), "local shards written")

for i in range(12):
    c.put(B, "raw/s%02d.txt" % i, b"text %d" % i)
    c.put(B, "raw/s%02d.bin" % i, rnd.randbytes(3000))
r = shard_tool("--size", "20K", "-t", "r-{00..99}.tar", "ais://%s/raw/" % B, os.path.join(TMP, "fromb"))
got = {}
for f in sorted(os.listdir(os.path.join(TMP, "fromb"))):
    for rel, b in tar_members(open(os.path.join(TMP, "fromb", f), "rb").read(), files_only=True):
        got[rel] = b
t.check(r.returncode == 0 and len(got) == 24 and got["s03.txt"] == b"text 3"
        and got["s05.bin"] == c.get(B, "raw/s05.bin"), "a bucket prefix packed into a local directory", r.stderr)
t.check(sorted(os.listdir(os.path.join(TMP, "fromb")))[0] == "r-00.tar", "template r-{00..99}.tar")
for args, what in ((["--size", "12X", SRC, TMP + "/o"], "bad size"),
                   (["-t", "shard.tar", SRC, TMP + "/o"], "template without a counter"),
                   (["-t", "s-{0..1}.tar", "--size", "64K", SRC, TMP + "/o"], "template too short for the shards"),
                   ([TMP + "/nonexistent", TMP + "/o"], "missing source")):
    r = shard_tool(*args)
    t.check(r.returncode == 2 and r.stderr.startswith(b"aisd.shard: "), "%s: exit 2 with a message" % what, r.stderr)

ix = index_shards(c, B, "train/")
t.eq(sorted((sh, k, sorted(m)) for sh, k, m in ix), sorted((x["shard"], x["key"], sorted(x["members"])) for x in lines),
     "index_shards (one archive listing) = the shard tool's --index")
t.eq(len(index_shards(c, B, "train/", shards=names[:2])), sum(1 for x in lines if x["shard"] in names[:2]),
     "index_shards(shards=two of them)")
x = next(x for x in lines if len(x["members"]) == 3)
got = dict(c.get_members(B, x["shard"], x["key"], "wdskey"))
t.eq(got, {"%s.%s" % (x["key"], e): files["%s.%s" % (x["key"], e)] for e in x["members"]},
     "get_members(wdskey): the 3 files of one sample from one request")

# --- archpath through the client ---------------------------------------------------------

sample = lines[5]
m = "%s.%s" % (sample["key"], sample["members"][0])
t.eq(c.get(B, sample["shard"], archpath=m), files[m], "get(archpath=member) of a shard")
ok, e = raises(lambda: c.get(B, sample["shard"], archpath="nope.jpg"), 404)
t.check(ok, "archpath of a missing member -> 404", e)

# --- GetBatch --------------------------------------------------------------------------------

sel = sorted(n for n in objs if n.startswith("small/"))[:25] + ["big/two-mib", "odd/a b+c%d ü.bin"]
got = list(c.get_batch(B, sel))
t.eq([n for n, _ in got], ["%s/%s" % (B, n) for n in sel], "get_batch: 27 objects, names in request order")
t.check(all(b == objs[n] for (_, b), n in zip(got, sel)), "get_batch: bytes identical")
t.eq([n for n, _ in c.get_batch(B, sel[:3], onob=True)], sel[:3], "get_batch(onob=True): names without the bucket")
ents = [{"objname": x["shard"], "archpath": "%s.%s" % (x["key"], x["members"][-1])} for x in lines[:40]]
got = list(c.get_batch(B, ents))
t.check(len(got) == 40 and all(b == files["%s" % e["archpath"]] and n == "%s/%s/%s" % (B, e["objname"], e["archpath"])
                               for (n, b), e in zip(got, ents)),
        "get_batch of 40 shard members (archpath) across targets: names and bytes", [n for n, _ in got[:2]])
got = list(c.get_batch(B, [{"objname": "big/two-mib", "start": 10, "length": 100}, "small/o-01"]))
t.eq([b for _, b in got], [d[10:110], objs["small/o-01"]], "get_batch with start/length")
got = list(c.get_batch(B, ["small/o-01", "no/such", "small/o-02"], coer=True))
t.eq([(n, len(b)) for n, b in got], [("%s/small/o-01" % B, len(objs["small/o-01"])), ("__404__/%s/no/such" % B, 0),
                                     ("%s/small/o-02" % B, len(objs["small/o-02"]))],
     "get_batch(coer=True): a missing entry is an empty __404__/ entry")
ok, e = raises(lambda: list(c.get_batch(B, ["no/such", "small/o-01"])), 404)
t.check(ok, "get_batch of a missing first entry -> 404", e)
try:
    list(c.get_batch(B, ["small/o-01", "no/such"]))
    t.fail("get_batch with a missing later entry raises")
except (HTTPError, OSError) as ex:
    t.ok("get_batch with a missing later entry raises (%s)" % str(ex)[:80])
it = c.get_batch(B, ["big/two-mib"] * 20)
first = next(it)
it.close()
t.check(first[1] == d and c.get(B, "small/o-02") == objs["small/o-02"],
        "a get_batch abandoned after its first entry: the client goes on")

# --- retry across a target restart -------------------------------------------------------

victim = owner("big/two-mib")
if t.check(victim is not None, "owner of big/two-mib found"):
    victim.kill9()

    def restart():
        time.sleep(1.0)
        victim.start(join=g.url)

    th = threading.Thread(target=restart)
    th.start()

    def restart_later(node, secs):
        def run():
            time.sleep(secs)
            node.start(join=g.url)
        x = threading.Thread(target=run)
        x.start()
        return x
    t0 = time.monotonic()
    try:
        got = c.get(B, "big/two-mib")
    except Exception as ex:  # noqa: BLE001
        got = ex
    th.join()
    t.check(got == d, "GET while the owner is down: retried until it is back (%.1f s)" % (time.monotonic() - t0),
            repr(got)[:200])

    # A GetBatch of 40 x 2 MiB from one target, cut by kill -9 after 2 entries:
    # the rest are asked again once it is back, each entry exactly once.
    got, th = [], None
    try:
        for n, b in c.get_batch(B, ["big/two-mib"] * 40):
            got.append(b)
            if len(got) == 2:
                victim.kill9()
                th = restart_later(victim, 1.0)
    except Exception as ex:  # noqa: BLE001
        got.append(ex)
    th and th.join()
    t.check(len(got) == 40 and all(b == d for b in got),
            "get_batch across a kill -9 of its target: 40 entries, each once, bytes identical",
            [type(b).__name__ if not isinstance(b, bytes) else len(b) for b in got[-3:]])
    quick = Client(g.url, timeout=5, retry_for=0)
    victim.kill9()
    try:
        quick.get(B, "big/two-mib")
        t.fail("retry_for=0 with the owner down raises")
    except OSError as ex:
        t.ok("retry_for=0 with the owner down raises %s" % type(ex).__name__)
    t.check(victim.start(join=g.url), "the owner restarts")

procs_alive = [n for n, p in procs.items() if p.poll() is not None]
t.check(not procs_alive, "every node still running", procs_alive)
t.finish()
