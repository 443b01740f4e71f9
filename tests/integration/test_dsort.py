"""test_dsort.py - resharding and shuffling of tar shards in the cluster
(aisctl dsort): the samples of a bucket's shards reordered and cut into new
shards by the targets. 1 gateway + 3 targets, started here on loopback ports
and stopped by PID.

Checks:
 1. Input shards made by Python's tarfile (ustar, GNU and pax formats: odd
    names with spaces and UTF-8, a name over 100 bytes, empty members, a
    sample of 40 members), by GNU tar, a .tgz and a .zip; a non-shard
    object under the prefix is skipped (the dry run names it).
 2. --dry-run prints the plan (input shards per target, skipped names) and
    writes nothing.
 3. shuffle (two runs at once, same seed, one into a bucket with
    mirror.copies=2: its shards on two targets) and one with another seed
    into an erasure-coded bucket (2+1, its shards in slices):
    every input sample in exactly one output shard, its members together,
    in their order, byte for byte; shards at most shard_size; the same seed
    gives the same shards, another seed another order, not the key order.
 3b. a shuffle of 14 MiB under dsort.memory_limit=1MiB (the spools go to
    mountpath files): every sample once, byte for byte.
 4. alphanumeric with --samples-per-shard: keys sorted across the shards,
    N samples per shard; read back with aisd.ShardDataset (every sample
    once, bytes equal) and by archpath GETs.
 4b. A .tgz output template: gzip-compressed tar shards, read back by
    tarfile, ShardDataset and archpath. The order file (--algorithm order
    --order-file BUCKET/OBJ, lines KEY<TAB>SHARD): listed samples in the
    shards it names, in its order, a .tgz one among them; the unlisted into
    --unlisted-shard; without it the job fails naming a sample; bad files
    (no TAB, a name not ending .tar/.tgz/.tar.gz, a key twice, a name of
    the input bucket's) and specs (a missing file, shard_size, a template
    the names do not match) are 400.
 5. numeric (keys' numbers unpadded, chosen by --input-template) and
    content (sort by the .cls member's number; output into the input
    bucket under another template): numbers ascending, every class
    contiguous.
 6. A sample without the member to sort by: every target's run fails naming
    it (the holder's reason reaches the others through its index).
    Bad specs: 400 with a message (unknown algorithm, template without a
    number, a range that cannot name enough shards (by shard_size, or by
    samples_per_shard: one sample per input shard at least), output named like the
    input in the same bucket, content without content_ext, shard_size and
    samples_per_shard together), 404 for a missing output bucket or
    source; a plan the targets find the template too small for fails the
    job with the reason and writes nothing.
 7. aisctl job stop: every run aborted, nothing written. kill -9 of a
    target mid-job (while the targets build their output shards) and its
    restart at once: its run starts again and the job completes, every
    sample once, byte for byte. kill -9 without a restart: the other
    targets' runs end failed with the reason, no output shard is visible;
    restarted later, its run starts again and fails with their reason.
 8. No error-level line in any node's log.
"""
# timeout: 260
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import time
import zipfile

from itlib import T, q

import clulib
from clulib import follow, poll, request

ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}
TMP = os.environ.get("TMPDIR", "/tmp")

t = T()
clulib.init(t, "dsort", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                         "--set", "dsort.memory_limit=1MiB"])
g, ts = clulib.start_cluster(3)


def ctl(*args, timeout=60):
    return clulib.aisctl(g.url, *args, timeout=timeout)


def names(b, prefix="", partial=False):
    return clulib.names(g.url, b, prefix, partial)


def key(n):
    d, _, b = n.rpartition("/")
    return (d + "/" if d else "") + b.split(".", 1)[0]


def dsort(src, dst, *args):
    rc, out, err = ctl("dsort", src, dst, *args)
    words = out.split()
    rid = words[words.index("job") + 1] if rc == 0 and "job" in words else ""
    t.check(rc == 0 and rid, "aisctl dsort %s %s %s: started" % (src, dst, " ".join(args)), out + err)
    return rid


def wait_job(rid, secs=90):
    rc, out, err = ctl("job", "wait", rid or "none", "--timeout-s", str(secs), timeout=secs + 30)
    t.check((rc, out.strip()) == (0, "%s: done" % rid), "aisctl job wait %s: done" % rid, out + err)


def read_shards(b, prefix=""):
    """[(shard, size, [(member, bytes)])] in shard name order, read with tarfile."""
    out = []
    for s in names(b, prefix) or []:
        body = follow("GET", g.url, "/v1/objects/%s/%s" % (b, q(s)))[1].body
        with tarfile.open(fileobj=io.BytesIO(body)) as tf:
            out.append((s, len(body), [(m.name, tf.extractfile(m).read()) for m in tf.getmembers()]))
    return out


def samples_of(shards):
    """The samples in output order: [(key, [(member, bytes)])] (consecutive members of one key)."""
    out = []
    for _, _, mem in shards:
        for n, b in mem:
            if out and out[-1][0] == key(n) and out[-1][2] is mem:
                out[-1][1].append((n, b))
            else:
                out.append((key(n), [(n, b)], mem))
    return [(k, m) for k, m, _ in out]


def check_exact(shards, want, what):
    """Every input sample exactly once, whole, byte for byte."""
    got = samples_of(shards)
    keys = [k for k, _ in got]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    t.check(not dup, "%s: no sample twice or split" % what, dup[:3])
    t.eq(sorted(keys), sorted(want), "%s: every input sample" % what)
    wrong = [k for k, m in got if want.get(k) != m]
    t.check(not wrong, "%s: every sample's members in order, byte for byte" % what, wrong[:3])
    return keys


# --- 1. input shards -------------------------------------------------------------------------
for b in ("in", "o1", "o2", "o4", "o6", "o7"):
    t.eq(request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON).status, 200, "create " + b)

r = request("PATCH", g.url, "/v1/buckets/o2",
            json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
t.eq(r.status, 200, "o2: mirror.copies=2")
clulib.create_ec_bucket(g, ts, "o3", 2, 1, 4096, whole_copy=False)
rnd = random.Random(11)
want = {}  # key -> [(member, bytes)] in the input shard's order
cls = {}


def sample(k, c, exts=(".jpg", ".txt")):
    mem = [(k + ".cls", b"%d\n" % c)]
    for e in exts:
        size = 0 if e == ".txt" and rnd.random() < 0.3 else rnd.randint(1, 9000)
        mem.append((k + e, os.urandom(size)))
    want[k] = mem
    cls[k] = c
    return mem


def tar_bytes(samples, fmt):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=fmt) as tf:
        for mem in samples:
            for n, d in mem:
                ti = tarfile.TarInfo(n)
                ti.size = len(d)
                tf.addfile(ti, io.BytesIO(d))
    return bio.getvalue()


fmts = [tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT]
n = 0
for s in range(6):
    smp = [sample("s/%05d" % (n + i), rnd.randint(0, 4)) for i in range(25)]
    n += 25
    if s == 1:
        smp.append(sample("odd dir/sp ace é %d" % s, 3))
        smp.append(sample("long/" + "x" * 110 + "%d" % s, 1))
    if s == 2:
        smp.append(sample("many/00001", 2, tuple(".%02d.bin" % i for i in range(39))))
    body = tar_bytes(smp, fmts[s % 3])
    t.eq(follow("PUT", g.url, "/v1/objects/in/in-%03d.tar" % s, body)[1].status, 200, "PUT in-%03d.tar (tarfile)" % s)
for s in (6, 7):  # GNU tar from a directory
    d = os.path.join(TMP, "gnu%d" % s)
    files = []
    for i in range(20):
        for nm, data in sample("g/%05d" % (n + i), rnd.randint(0, 4)):
            p = os.path.join(d, nm)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(data)
            files.append(nm)
    n += 20
    cp = subprocess.run(["tar", "-cf", "-", "-C", d] + files, stdout=subprocess.PIPE, check=True)
    t.eq(follow("PUT", g.url, "/v1/objects/in/in-%03d.tar" % s, cp.stdout)[1].status, 200,
         "PUT in-%03d.tar (GNU tar)" % s)
smp = [sample("z/%05d" % (n + i), rnd.randint(0, 4)) for i in range(10)]
n += 10
bio = io.BytesIO()
with tarfile.open(fileobj=bio, mode="w:gz") as tf:
    for mem in smp:
        for nm, d in mem:
            ti = tarfile.TarInfo(nm)
            ti.size = len(d)
            tf.addfile(ti, io.BytesIO(d))
t.eq(follow("PUT", g.url, "/v1/objects/in/in-008.tgz", bio.getvalue())[1].status, 200, "PUT in-008.tgz")
smp = [sample("zip/%05d" % (n + i), rnd.randint(0, 4)) for i in range(10)]
n += 10
bio = io.BytesIO()
with zipfile.ZipFile(bio, "w", zipfile.ZIP_DEFLATED) as zf:
    for mem in smp:
        for nm, d in mem:
            zf.writestr(nm, d)
t.eq(follow("PUT", g.url, "/v1/objects/in/in-009.zip", bio.getvalue())[1].status, 200, "PUT in-009.zip")
t.eq(follow("PUT", g.url, "/v1/objects/in/in-readme.txt", b"not a shard")[1].status, 200, "PUT a non-tar object")
NUMS = [7, 10, 100, 3, 55, 1000, 9, 21]
numwant = {}
for s in range(2):
    smp = []
    for v in NUMS[s * 4:s * 4 + 4]:
        smp.append([("n/item%d.bin" % v, os.urandom(100))])
        numwant["n/item%d" % v] = smp[-1]
    t.eq(follow("PUT", g.url, "/v1/objects/in/num-%d.tar" % s, tar_bytes(smp, tarfile.PAX_FORMAT))[1].status, 200,
         "PUT num-%d.tar" % s)
SIZE = 60000

# --- 2. dry run ------------------------------------------------------------------------------
rc, out, err = ctl("dsort", "in", "o1", "--prefix", "in-", "--template", "x-{000..999}.tar", "--shard-size",
                   str(SIZE), "--algorithm", "shuffle", "--seed", "5", "--dry-run")
plan = json.loads(out) if rc == 0 else {}
t.check(plan.get("input_shards") == 10 and plan.get("skipped") == ["in-readme.txt"] and
        sum(v["shards"] for v in plan.get("targets", {}).values()) == 10 and
        plan.get("output", {}).get("first") == "x-000.tar", "the dry run's plan: 10 input shards, 1 skipped",
        out + err)
t.eq(names("o1"), [], "the dry run writes nothing")

# --- 3. shuffle ------------------------------------------------------------------------------
args = ["--prefix", "in-", "--template", "x-{000..999}.tar", "--shard-size", str(SIZE), "--algorithm", "shuffle"]
r1 = dsort("in", "o1", *args, "--seed", "5")
r2 = dsort("in", "o2", *args, "--seed", "5")
wait_job(r1)
wait_job(r2)
wait_job(dsort("in", "o3", *args, "--seed", "6"))
sh1, sh2, sh3 = read_shards("o1"), read_shards("o2"), read_shards("o3")
k1 = check_exact(sh1, want, "shuffle seed 5")
big = [(s, size) for s, size, mem in sh1 if size > SIZE and len(samples_of([(s, size, mem)])) > 1]
t.check(not big, "every shard <= shard_size (a larger sample alone)", big[:3])
t.check([(s, m) for s, _, m in sh1] == [(s, m) for s, _, m in sh2], "the same seed (two runs at once): the same shards")
single = [s for s, _, _ in sh2 if sum(request("GET", x.url, "/v1/objects/o2/" + q(s), headers=INTRA).status == 200
                                      for x in ts) != 2]
t.check(sh2 and not single, "every shard of o2 on two targets (mirror.copies=2)", single[:3])
k3 = check_exact(sh3, want, "shuffle seed 6")
noslice = [s for s, size, _ in sh3 if size > 4096 and sum(clulib.slice_meta(x, "o3", s) is not None for x in ts) != 3]
t.check(sh3 and not noslice, "every shard of o3 erasure-coded 2+1 (slices on three targets)", noslice[:3])
t.check(k1 != k3 and k1 != sorted(k1), "another seed: another order; not the key order")
r = request("GET", g.url, "/v1/jobs?kind=dsort&all=true")
t.check(r.status == 200 and len((r.json() or {}).get("runs", [])) >= 3, "the runs are in /v1/jobs?kind=dsort",
        r.body[:300])

# --- 4. alphanumeric by samples per shard; ShardDataset; archpath ----------------------------
wait_job(dsort("in", "o4", "--prefix", "in-", "--template", "a-%04d.tar", "--samples-per-shard", "7"))
sh4 = read_shards("o4")
k4 = check_exact(sh4, want, "alphanumeric")
t.eq(k4, sorted(k4, key=lambda k: k.encode()), "alphanumeric: keys sorted across the shards")
per = [len(samples_of([x])) for x in sh4]
t.check(all(p == 7 for p in per[:-1]) and 1 <= per[-1] <= 7, "7 samples per shard (the last fewer)", per)
from aisd import ShardDataset  # noqa: E402

seen, bad = {}, []
for smp in ShardDataset(g.url, bucket="o4", prefix="a-", shuffle=False):
    k = smp["__key__"]
    if k in seen:
        bad.append(k + " twice")
    seen[k] = smp
    for n, d in want.get(k, []):
        ext = n[len(k) + 1:]
        if smp.get(ext, smp.get("." + ext)) != d:
            bad.append(n)
t.check(not bad and sorted(seen) == sorted(want), "ShardDataset: every sample once, bytes equal",
        (bad[:3], len(seen), len(want)))
bad = []
for s, _, mem in sh4[:3]:
    for n, d in mem[:5] + mem[-2:]:
        r = follow("GET", g.url, "/v1/objects/o4/%s?archpath=%s" % (q(s), q(n)))[1]
        if r.status != 200 or r.body != d:
            bad.append((s, n, r.status))
t.check(not bad, "archpath GETs of output members: bytes equal", bad[:3])

def post(src, dst, value):
    r = request("POST", g.url, "/v1/buckets/%s?bck_to=%s" % (src, dst), json.dumps({"action": "dsort", "value": value}),
                JSON)
    return r.status, (r.json() or {}).get("message", "") if r.body else ""


# --- 4b. gzip-compressed output; the order file ---------------------------------------------
for b in ("o8", "o9"):
    t.eq(request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON).status, 200, "create " + b)
wait_job(dsort("in", "o8", "--prefix", "in-", "--template", "c-%03d.tgz", "--samples-per-shard", "40"))
sh8 = read_shards("o8")
raw8 = [follow("GET", g.url, "/v1/objects/o8/" + q(s))[1].body[:2] for s, _, _ in sh8]
t.check(sh8 and all(s.endswith(".tgz") for s, _, _ in sh8) and all(m == b"\x1f\x8b" for m in raw8),
        "a .tgz template: gzip-compressed tar shards", ([s for s, _, _ in sh8], raw8[:3]))
k8 = check_exact(sh8, want, "compressed output")
t.eq(k8, sorted(k8, key=lambda k: k.encode()), "compressed output: keys sorted across the shards")
seen, bad = {}, []
for smp in ShardDataset(g.url, bucket="o8", prefix="c-", shuffle=False):
    k = smp["__key__"]
    bad += [k + " twice"] if k in seen else []
    seen[k] = smp
    bad += [n for n, d in want.get(k, []) if smp.get(n[len(k) + 1:], smp.get("." + n[len(k) + 1:])) != d]
t.check(not bad and sorted(seen) == sorted(want), "ShardDataset on .tgz output: every sample once, bytes equal",
        (bad[:3], len(seen), len(want)))
bad = []
for s, _, mem in sh8[:2]:
    for n, d in mem[:4] + mem[-2:]:
        r = follow("GET", g.url, "/v1/objects/o8/%s?archpath=%s" % (q(s), q(n)))[1]
        if r.status != 200 or r.body != d:
            bad.append((s, n, r.status))
t.check(not bad, "archpath GETs of .tgz output members: bytes equal", bad[:3])

# the order file: listed samples in its order into the shards it names, the others into --unlisted-shard
keys_all = sorted(want)
listed = [k for k in keys_all if not k.startswith("zip/")][::-1]  # reversed key order; zip/ samples unlisted
placed = {"ord-a.tar": [k for k in listed if cls[k] % 2 == 0], "ord-b.tgz": [k for k in listed if cls[k] % 2]}
lines = ["# key<TAB>shard"] + ["%s\t%s" % (k, "ord-a.tar" if cls[k] % 2 == 0 else "ord-b.tgz") for k in listed]
t.eq(follow("PUT", g.url, "/v1/objects/in/ord/order.txt", ("\n".join(lines) + "\n").encode())[1].status, 200,
     "PUT the order file")
wait_job(dsort("in", "o9", "--prefix", "in-", "--algorithm", "order", "--order-file", "in/ord/order.txt",
               "--unlisted-shard", "ord-rest.tar"))
sh9 = read_shards("o9")
check_exact(sh9, want, "order file")
got9 = {s: [k for k, _ in samples_of([(s, z, m)])] for s, z, m in sh9}
t.eq(sorted(got9), ["ord-a.tar", "ord-b.tgz", "ord-rest.tar"], "order file: the shards it names and the unlisted one")
t.check(got9.get("ord-a.tar") == placed["ord-a.tar"] and got9.get("ord-b.tgz") == placed["ord-b.tgz"],
        "order file: each listed sample in its shard, in the file's order", {s: v[:3] for s, v in got9.items()})
t.eq(got9.get("ord-rest.tar"), sorted(k for k in keys_all if k.startswith("zip/")),
     "order file: the unlisted samples in --unlisted-shard, in key order")
rid = dsort("in", "o7", "--prefix", "in-", "--algorithm", "order", "--order-file", "in/ord/order.txt")
rc, out, err = ctl("job", "wait", rid or "none", "--timeout-s", "60", timeout=90)
r = request("GET", g.url, "/v1/jobs?id=%s&all=true" % rid)
t.check(rc != 0 and "is not in the order file" in r.body.decode(errors="replace"),
        "order file without --unlisted-shard: a sample it does not list fails the job, saying so",
        (rc, out, err, r.body[:400]))
t.eq(names("o7"), [], "order file: the failed job writes nothing")
for body, want_msg in ((b"s/00000 ord-a.tar\n", "line 1"), (b"s/00000\tord-a.zip\n", "not an output shard"),
                       (b"s/00000\ta.tar\ns/00000\tb.tar\n", "listed twice"),
                       (b"s/00000\tin-000.tar\n", "names \"in-000.tar\"")):
    t.eq(follow("PUT", g.url, "/v1/objects/in/ord/bad.txt", body)[1].status, 200, "PUT a bad order file")
    st, msg = post("in", "in", {"algorithm": "order", "order_file": "in/ord/bad.txt", "prefix": "in-"})
    t.check(st == 400 and want_msg in msg, "bad order file %r: 400 naming %s" % (body, want_msg), (st, msg))
for v, want_msg in (({"order_file": "in/ord/none.txt"}, "does not exist"),
                    ({"order_file": "in/ord/order.txt", "shard_size": 100000}, "no shard_size"),
                    ({"order_file": "in/ord/order.txt", "template": "o-%d.tar"}, "named by the template"),
                    ({"order_file": "nobucket"}, "order_file")):
    st, msg = post("in", "o7", dict(v, algorithm="order", prefix="in-"))
    t.check(st == 400 and want_msg in msg, "bad order spec %s: 400 naming %s" % (json.dumps(v), want_msg), (st, msg))
t.eq(names("o7"), [], "nothing written by the bad order specs")

# --- 5. numeric; content into the input bucket ----------------------------------------------
wait_job(dsort("in", "o6", "--input-template", "num-{0..1}.tar", "--template", "n-%d.tar",
               "--samples-per-shard", "3", "--algorithm", "numeric"))
k6 = check_exact(read_shards("o6"), numwant, "numeric")
t.eq(k6, ["n/item%d" % v for v in sorted(NUMS)], "numeric: the keys' numbers ascending")
wait_job(dsort("in", "in", "--prefix", "in-", "--template", "sorted-%04d.tar", "--shard-size", str(SIZE),
               "--algorithm", "content", "--content-ext", ".cls"))
k5 = check_exact(read_shards("in", "sorted-"), want, "content")
t.eq([cls[k] for k in k5], sorted(cls[k] for k in k5), "content: classes ascending, every class contiguous")

# --- 6. bad specs ----------------------------------------------------------------------------
ok = {"shard_size": 100000, "template": "b-%04d.tar", "prefix": "in-"}
for v, dst, want_msg in ((dict(ok, algorithm="bogus"), "o7", "algorithm"),
                         (dict(ok, template="b.tar"), "o7", "template"),
                         (dict(ok, shard_size=2048, template="b-{0..1}.tar"), "o7", "cannot name"),
                         ({"samples_per_shard": 1, "template": "b-{0..1}.tar", "prefix": "in-"}, "o7",
                          "raise samples_per_shard"),
                         (dict(ok, template="in-%03d.tar"), "in", "names \"in-000.tar\""),
                         (dict(ok, algorithm="content"), "o7", "content_ext"),
                         (dict(ok, samples_per_shard=3), "o7", "one of"),
                         (dict(ok, prefix="nothing-here/"), "o7", "no input shard")):
    st, msg = post("in", dst, v)
    t.check(st == 400 and want_msg in msg, "bad spec %s -> %s: 400 naming %s" % (json.dumps(v), dst, want_msg),
            (st, msg))
st, msg = post("in", "nosuch", ok)
t.check(st == 404 and "does not exist" in msg, "a missing output bucket: 404 naming it", (st, msg))
t.eq(post("nosuch", "o7", ok)[0], 404, "a missing source: 404")
rid = dsort("in", "o7", "--prefix", "in-", "--template", "y-{0..9}.tar", "--samples-per-shard", "1")
rc, out, err = ctl("job", "wait", rid or "none", "--timeout-s", "60", timeout=90)
r = request("GET", g.url, "/v1/jobs?id=%s&all=true" % rid)
t.check(rc != 0 and "cannot name" in r.body.decode(errors="replace"),
        "a template the plan outgrows: the job fails, saying so", (rc, out, err, r.body[:400]))
t.eq(follow("PUT", g.url, "/v1/objects/in/nocls-0.tar", tar_bytes([[("q/1.jpg", b"x")], [("q/2.jpg", b"y"), ("q/2.cls", b"1")]],
                                                                  tarfile.USTAR_FORMAT))[1].status, 200, "PUT nocls-0.tar")
rid = dsort("in", "o7", "--prefix", "nocls-", "--template", "c-%d.tar", "--samples-per-shard", "1", "--algorithm",
            "content", "--content-ext", ".cls")
rc, out, err = ctl("job", "wait", rid or "none", "--timeout-s", "60", timeout=90)
runs = []
for x in ts:
    r = request("GET", x.url, "/v1/jobs?id=%s&all=true" % rid, headers=INTRA)
    runs += (r.json() or {}).get("runs", []) if r.status == 200 else []
t.check(rc != 0 and len(runs) == 3 and all(x.get("state") == "failed" for x in runs) and
        all("q/1 has no member .cls" in x.get("last_error", "") for x in runs),
        "a sample without its content member: every target's run fails, naming it", (rc, runs))
t.eq(names("o7"), [], "nothing written by the bad specs")

# --- 7. kill -9 of a target mid-job ----------------------------------------------------------
kwant = {}
for s in range(12):
    smp = [[("k%02d/%05d.bin" % (s, i), os.urandom(20000))] for i in range(60)]
    kwant.update({key(m[0][0]): m for m in smp})
    t.eq(follow("PUT", g.url, "/v1/objects/in/kill-%02d.tar" % s, tar_bytes(smp, tarfile.USTAR_FORMAT))[1].status,
         200, "PUT kill-%02d.tar" % s)
# 14 MiB shuffled with dsort.memory_limit=1MiB: each target's spool goes to a mountpath file
wait_job(dsort("in", "o6", "--prefix", "kill-", "--template", "big-%05d.tar", "--shard-size", "1000000",
               "--algorithm", "shuffle"))
check_exact(read_shards("o6", "big-"), kwant, "a shuffle larger than dsort.memory_limit")
KILL = ["--prefix", "kill-", "--template", "z-%05d.tar", "--shard-size", "50000", "--algorithm", "shuffle"]


def run_of(tg):
    r = request("GET", tg.url, "/v1/jobs?id=%s&all=true" % (rid or "none"), headers=INTRA)
    runs = (r.json() or {}).get("runs", []) if r.status == 200 else []
    return runs[0] if runs else {}


rid = dsort("in", "o7", *KILL)
rc, out, err = ctl("job", "stop", rid or "none")
t.check(rc == 0, "aisctl job stop %s" % rid, out + err)
t.check(poll(lambda: all(run_of(x).get("state") not in (None, "running") for x in ts), 60), "the runs end")
st = [run_of(x).get("state") for x in ts]
t.eq(st, ["aborted"] * 3, "a stopped dsort: every run aborted")
t.eq(names("o7"), [], "a stopped dsort writes nothing")


def kill_t2_building():
    """Kills t2 once it builds its output shards (none committed yet)."""
    at = {}
    for _ in range(2000):  # (bounded: 20 s)
        at = run_of(ts[1])
        if at.get("state") != "running" or at.get("walked", 0) >= 1:
            break
        time.sleep(0.01)
    ts[1].kill9()
    t.check(at.get("state") == "running" and at.get("walked", 0) >= 1 and at.get("moved") == 0,
            "t2 killed mid-job (building its output shards, none committed)", at)


# kill -9 and a restart at once: the restarted run starts again, its peers waited, the job completes
rid = dsort("in", "o6", "--prefix", "kill-", "--template", "r-%05d.tar", "--shard-size", "50000", "--algorithm",
            "shuffle")
kill_t2_building()
t.check(ts[1].start(join=g.url), "t2 restarts at once")
wait_job(rid, 120)
check_exact(read_shards("o6", "r-"), kwant, "after kill -9 and a restart at once")
t.check(poll(lambda: clulib.in_map(g, ts), 20), "t2 is in the map")

# kill -9 without a restart: the others fail, nothing is written
rid = dsort("in", "o7", *KILL)
kill_t2_building()
fin = {}


def ended():
    global fin
    fin = {x.name: run_of(x) for x in (ts[0], ts[2])}
    return all(v.get("state") not in (None, "running") for v in fin.values())


t.check(poll(ended, 60), "the other targets' runs end", fin)
t.check(all(v.get("state") == "failed" and v.get("last_error") for v in fin.values()),
        "they end failed, with the reason", fin)
t.eq(names("o7", partial=True), [], "no output shard of the failed job is visible (none was committed)")
t.check(ts[1].start(join=g.url), "t2 restarts")
t.check(poll(lambda: clulib.in_map(g, ts), 20), "t2 rejoins")
r2 = {}


def t2_ended():
    global r2
    r2 = run_of(ts[1])
    return r2.get("state") not in (None, "running")


t.check(poll(t2_ended, 60) and r2.get("state") == "failed" and r2.get("last_error"),
        "the restarted target's run starts again and fails with its peers' reason", r2)
t.eq(names("o7"), [], "none after its restart either")

clulib.check_logs([g] + ts)
t.finish()
