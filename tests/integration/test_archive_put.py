"""test_archive_put.py - archive create in the cluster (aisctl archive put):
objects of a bucket packed into a shard on the server by the shard's owner,
appended to a tar shard; and ishard's .tgz shards. 1 gateway + 3 targets,
started here on loopback ports and stopped by PID.

Checks:
 1. A shard from a list (objects held by every target, in the order given)
    and one from a template: read back member by member byte for byte with
    archpath GETs and with Python's tarfile on the downloaded shard; the
    list's order kept; --include-src-bck names members BUCKET/OBJECT.
 2. --append adds members after the old ones (the old ones kept, byte for
    byte), a new version; to a shard Python's tarfile wrote (pax headers, a
    directory entry) too; append to an absent shard creates it.
 3. A destination with mirror.copies=2: the shard on two targets.
 4. A .tgz shard from a list (gzip, read with tarfile "r:gz" and archpath);
    --append to it (inflated, the new members added, compressed again: a
    new version) and to a .tar.gz Python's tarfile wrote (pax header,
    directory, empty file kept); an append to a .tgz that is not gzip
    fails the run and leaves it as it was.
 5. aisctl ishard with a .tgz template: gzip shards; every sample read back
    with tarfile, with archpath and with aisd.ShardDataset.
 6. Bad input: missing source objects (404 naming them), the shard exists
    without --append (409; --overwrite replaces it), an unknown format
    (400), append to a .zip (400), append to an object that is not a tar
    (the job fails, the object is left as it was), a bad template (400),
    a missing bucket (404); nothing partial is ever listed.
 7. kill -9 of the shard's owner in the middle of an append (debug.archive_pause
    makes the run last): after its restart the run resumes under its id and
    ends done; the shard holds every member exactly once, byte for byte. A
    run whose record says running after its commit (the record edited, as
    a kill between the commit and the record's end would leave it) resumes
    and appends nothing twice.
 8. The job is in /v1/jobs (kind archive); no error-level line in any log.
"""
# timeout: 150
import gzip
import io
import json
import os
import random
import sys
import tarfile
import time
import urllib.parse

from itlib import T, q

import clulib
from clulib import follow, poll, request

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}
ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))

t = T()
clulib.init(t, "archput", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                           "--set", "debug.archive_pause=30ms"])
g, ts = clulib.start_cluster(3)


def ctl(*args, timeout=60):
    return clulib.aisctl(g.url, *args, timeout=timeout)


def names(b):
    return clulib.names(g.url, b)


def wait_job(rid, want="done", secs=90):
    rc, out, err = ctl("job", "wait", rid or "none", "--timeout-s", str(secs), timeout=secs + 30)
    t.check(out.strip() == "%s: %s" % (rid, want), "aisctl job wait %s: %s" % (rid, want), out + err)


def archive(shard, *args):
    """aisctl archive put SHARD ARGS: the job's id ("" when refused)."""
    rc, out, err = ctl("archive", "put", shard, *args)
    words = out.split()
    rid = words[words.index("job") + 1] if rc == 0 and "job" in words else ""
    t.check(rc == 0 and rid, "aisctl archive put %s %s: started" % (shard, " ".join(args)), out + err)
    return rid


def get(bck, obj):
    return follow("GET", g.url, "/v1/objects/%s/%s" % (bck, q(obj)))[1]


def members(bck, shard, mode="r:*"):
    """[(name, bytes)] of the downloaded shard, read with tarfile."""
    r = get(bck, shard)
    if r.status != 200:
        return None
    with tarfile.open(fileobj=io.BytesIO(r.body), mode=mode) as tf:
        return [(m.name, tf.extractfile(m).read()) for m in tf.getmembers()]


def by_archpath(bck, shard, mem):
    """The members of the shard read one by one with ?archpath=: the names whose bytes differ."""
    bad = []
    for n, d in mem:
        r = follow("GET", g.url, "/v1/objects/%s/%s?archpath=%s" % (bck, q(shard), urllib.parse.quote(n, safe="")))[1]
        if r.status != 200 or r.body != d:
            bad.append((n, r.status))
    return bad


for b in ("src", "dst", "m2"):
    t.eq(request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON).status, 200, "create " + b)
r = request("PATCH", g.url, "/v1/buckets/m2",
            json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
t.eq(r.status, 200, "m2: mirror.copies=2")

rnd = random.Random(11)
data = {}
for i in range(40):
    data["img/%03d.jpg" % i] = os.urandom(rnd.randint(1, 6000))
    data["img/%03d.cls" % i] = b"%d" % (i % 7)
data["odd/empty.bin"] = b""
data["odd/" + "long-" * 30 + "name.txt"] = b"a member name over 100 bytes"
bad = [n for n, d in data.items() if follow("PUT", g.url, "/v1/objects/src/" + q(n), d)[1].status != 200]
t.check(not bad, "%d PUTs to src" % len(data), bad[:3])
holders = {x.name for x in ts for n in data if request("HEAD", x.url, "/v1/objects/src/" + q(n), headers=INTRA).status == 200}
t.eq(len(holders), 3, "the sources are spread over every target")

# --- 1. from a list and from a template ------------------------------------------------------
lst = ["img/007.jpg", "img/003.cls", "odd/empty.bin", "odd/" + "long-" * 30 + "name.txt", "img/031.jpg"]
wait_job(archive("dst/a/list.tar", "--from", "src", "--list", ",".join(lst)))
mem = members("dst", "a/list.tar")
t.eq([n for n, _ in mem or []], lst, "the list's shard: its members in the order given")
t.check(mem and all(d == data[n] for n, d in mem), "the list's shard: every member byte for byte (tarfile)")
t.eq(by_archpath("dst", "a/list.tar", mem or []), [], "the list's shard: every member by archpath")

tpl = ["img/%03d.jpg" % i for i in range(10, 30)]
wait_job(archive("dst/a/tpl.tar", "--from", "src", "--template", "img/{010..029}.jpg"))
mem = members("dst", "a/tpl.tar")
t.eq([n for n, _ in mem or []], tpl, "the template's shard: its 20 members in index order")
t.check(mem and all(d == data[n] for n, d in mem), "the template's shard: every member byte for byte")
t.eq(by_archpath("dst", "a/tpl.tar", mem or []), [], "the template's shard: every member by archpath")

wait_job(archive("src/self.tar", "--list", "img/001.jpg,img/001.cls", "--include-src-bck"))
mem = members("src", "self.tar")
t.eq([(n, d) for n, d in mem or []], [("src/img/001.jpg", data["img/001.jpg"]), ("src/img/001.cls", data["img/001.cls"])],
     "--include-src-bck, into the source bucket itself: members named src/OBJECT")

r = request("POST", g.url, "/v1/buckets/src", json.dumps({"action": "archive", "value": {
    "archname": "nodst.tar", "mime": ".tar", "list": ["img/002.jpg"]}}), JSON)
rid = (r.json() or {}).get("id", "") if r.status == 200 else ""
t.check(rid, "POST without bck_to: started", r.body[:300])
wait_job(rid)
t.eq(members("src", "nodst.tar"), [("img/002.jpg", data["img/002.jpg"])], "without bck_to the shard goes to the source bucket")

# --- 2. append -------------------------------------------------------------------------------
v1 = get("dst", "a/list.tar").headers.get("ais-version")
wait_job(archive("dst/a/list.tar", "--from", "src", "--append", "--template", "img/{000..002}.cls"))
mem = members("dst", "a/list.tar")
want = lst + ["img/000.cls", "img/001.cls", "img/002.cls"]
t.eq([n for n, _ in mem or []], want, "append: the old members kept first, the new ones after")
t.check(mem and all(d == data[n] for n, d in mem), "append: every member byte for byte")
t.eq(by_archpath("dst", "a/list.tar", mem or []), [], "append: every member by archpath (the index of the new version)")
v2 = get("dst", "a/list.tar").headers.get("ais-version")
t.check(v1 != v2 or v1 is None, "append: a new version", (v1, v2))
ext = io.BytesIO()  # a shard Python's tarfile wrote: pax headers (a long non-ASCII name), a directory
with tarfile.open(fileobj=ext, mode="w", format=tarfile.PAX_FORMAT) as tf:
    for n, d in (("dir/" + "\u00e9t\u00e9-" * 40 + ".txt", b"pax name"), ("plain.bin", os.urandom(777))):
        ti = tarfile.TarInfo(n)
        ti.size = len(d)
        tf.addfile(ti, io.BytesIO(d))
    di = tarfile.TarInfo("adir")
    di.type = tarfile.DIRTYPE
    tf.addfile(di)
t.eq(follow("PUT", g.url, "/v1/objects/dst/py.tar", ext.getvalue())[1].status, 200, "PUT a tarfile-made shard")
wait_job(archive("dst/py.tar", "--from", "src", "--append", "--list", "img/004.jpg,img/004.cls"))
r = get("dst", "py.tar")
with tarfile.open(fileobj=io.BytesIO(r.body)) as tf:
    got = [(m.name, m.isdir()) for m in tf.getmembers()]
    ok = all(tf.extractfile(m).read() == data[m.name] for m in tf.getmembers() if m.name.startswith("img/"))
t.eq(got, [("dir/" + "\u00e9t\u00e9-" * 40 + ".txt", False), ("plain.bin", False), ("adir", True),
           ("img/004.jpg", False), ("img/004.cls", False)], "append to a tarfile-made shard: pax name and directory kept")
t.check(ok, "... the appended members byte for byte")
wait_job(archive("dst/a/new.tar", "--from", "src", "--append", "--list", "img/005.jpg"))
t.eq(members("dst", "a/new.tar"), [("img/005.jpg", data["img/005.jpg"])], "append to an absent shard creates it")

# --- 3. copies=2 -----------------------------------------------------------------------------
wait_job(archive("m2/c.tar", "--from", "src", "--template", "img/{000..039}.jpg"))
mem = members("m2", "c.tar")
t.check(mem and [n for n, _ in mem] == ["img/%03d.jpg" % i for i in range(40)] and
        all(d == data[n] for n, d in mem), "m2/c.tar: 40 members byte for byte")
have = [x.name for x in ts if request("GET", x.url, "/v1/objects/m2/c.tar", headers=INTRA).status == 200]
t.check(len(have) == 2, "mirror.copies=2: the shard on two targets", have)

# --- 4. a .tgz from a list -------------------------------------------------------------------
wait_job(archive("dst/z/list.tgz", "--from", "src", "--list", ",".join(lst)))
raw = get("dst", "z/list.tgz").body
t.eq(raw[:2], b"\x1f\x8b", "the .tgz shard is gzip")
mem = members("dst", "z/list.tgz", "r:gz")
t.check(mem and [n for n, _ in mem] == lst and all(d == data[n] for n, d in mem),
        "the .tgz shard: every member byte for byte (tarfile r:gz)")
t.eq(by_archpath("dst", "z/list.tgz", mem or []), [], "the .tgz shard: every member by archpath")
v1 = get("dst", "z/list.tgz").h("etag")
wait_job(archive("dst/z/list.tgz", "--from", "src", "--append", "--template", "img/{000..002}.cls"))
raw = get("dst", "z/list.tgz")
want = lst + ["img/%03d.cls" % i for i in range(3)]
mem = members("dst", "z/list.tgz", "r:gz")
t.check(raw.body[:2] == b"\x1f\x8b" and mem and [n for n, _ in mem] == want and all(d == data[n] for n, d in mem),
        "append to a .tgz: still gzip, the old members first, byte for byte (tarfile r:gz)",
        [n for n, _ in mem or []])
t.eq(by_archpath("dst", "z/list.tgz", mem or []), [], "append to a .tgz: every member by archpath")
t.check(raw.h("etag") != v1, "append to a .tgz: a new version", (v1, raw.h("etag")))
# a .tar.gz that Python's tarfile wrote: a pax header (a long non-ASCII name), a directory, an empty file
bio = io.BytesIO()
pyold = [("py/" + "ü-" * 60 + ".txt", b"pax named"), ("py/empty", b"")]
with tarfile.open(fileobj=bio, mode="w:gz", format=tarfile.PAX_FORMAT) as tf:
    ti = tarfile.TarInfo("py/dir")
    ti.type = tarfile.DIRTYPE
    tf.addfile(ti)
    for n, d in pyold:
        ti = tarfile.TarInfo(n)
        ti.size = len(d)
        tf.addfile(ti, io.BytesIO(d))
t.eq(follow("PUT", g.url, "/v1/objects/dst/py.tar.gz", bio.getvalue())[1].status, 200, "PUT a tarfile-made py.tar.gz")
wait_job(archive("dst/py.tar.gz", "--from", "src", "--append", "--list", "img/009.jpg,odd/empty.bin"))
r = get("dst", "py.tar.gz")
with tarfile.open(fileobj=io.BytesIO(r.body), mode="r:gz") as tf:
    got = [(m.name, m.isdir(), None if m.isdir() else tf.extractfile(m).read()) for m in tf.getmembers()]
t.eq(got, [("py/dir", True, None)] + [(n, False, d) for n, d in pyold] +
     [("img/009.jpg", False, data["img/009.jpg"]), ("odd/empty.bin", False, b"")],
     "append to a tarfile-made .tar.gz: pax name, directory and empty file kept, the new members after")
t.eq(by_archpath("dst", "py.tar.gz", [(n, d) for n, isdir, d in got if not isdir]), [],
     "... every file member by archpath")
t.eq(follow("PUT", g.url, "/v1/objects/dst/fake.tgz", b"gzip? no" * 100)[1].status, 200, "PUT fake.tgz (not gzip)")
rid = archive("dst/fake.tgz", "--from", "src", "--append", "--list", "img/000.jpg")
wait_job(rid, "failed")
r = request("GET", g.url, "/v1/jobs?id=%s&all=true" % rid)
t.check(r.status == 200 and "not a gzip" in r.body.decode(errors="replace"),
        "append to a .tgz that is not gzip: the run fails saying so", r.body[:400])
t.eq(get("dst", "fake.tgz").body, b"gzip? no" * 100, "... and the object is left as it was")

# --- 5. ishard .tgz --------------------------------------------------------------------------
rc, out, err = ctl("ishard", "src", "zsh", "--prefix", "img/", "--shard-size", "30000", "--template", "s-{000..999}.tgz")
t.check(rc != 0 and "does not exist" in err, "ishard into a missing bucket: refused", out + err)
t.eq(request("POST", g.url, "/v1/buckets/zsh", '{"action":"create-bck"}', JSON).status, 200, "create zsh")
rc, out, err = ctl("ishard", "src", "zsh", "--prefix", "img/", "--shard-size", "30000", "--template", "s-{000..999}.tgz")
words = out.split()
wait_job(words[words.index("job") + 1] if rc == 0 and "job" in words else "")
shards = names("zsh") or []
t.check(len(shards) > 2 and all(s.endswith(".tgz") for s in shards), "ishard --template s-{000..999}.tgz: .tgz shards",
        shards)
seen, bad = {}, []
for s in shards:
    raw = get("zsh", s).body
    if raw[:2] != b"\x1f\x8b":
        bad.append(s + " not gzip")
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(raw))) as tf:
        mem = [(m.name, tf.extractfile(m).read()) for m in tf.getmembers()]
    bad += ["%s: %s" % (s, b) for b in by_archpath("zsh", s, mem)]
    seen.update(mem)
img = {n: d for n, d in data.items() if n.startswith("img/")}
t.check(not bad, "ishard .tgz: gzip, and every member by archpath", bad[:3])
t.check(seen == img, "ishard .tgz: exactly the sources, byte for byte (tarfile)", sorted(set(seen) ^ set(img))[:3])
from aisd import ShardDataset  # noqa: E402
got = {}
for smp in ShardDataset(g.url, bucket="zsh", prefix="s-"):
    for ext, d in smp.items():
        if not ext.startswith("__"):
            got[smp["__key__"] + "." + ext] = bytes(d)
t.check(got == img, "aisd.ShardDataset reads every sample of the .tgz shards", sorted(set(got) ^ set(img))[:3])

# --- 6. bad input ----------------------------------------------------------------------------
def post(src, dst, value):
    r = request("POST", g.url, "/v1/buckets/%s?bck_to=%s" % (src, dst), json.dumps({"action": "archive", "value": value}),
                JSON)
    return r.status, (r.json() or {}).get("message", "") if r.body else ""


before = names("dst")
st, msg = post("src", "dst", {"archname": "x.tar", "list": ["img/000.jpg", "nope/1", "nope/2"]})
t.check(st == 404 and '"nope/1"' in msg and '"nope/2"' in msg, "missing sources: 404 naming them", (st, msg))
st, msg = post("src", "dst", {"archname": "x.tar", "template": "img/{030..049}.jpg"})
t.check(st == 404 and "10 source objects" in msg and '"img/040.jpg"' in msg, "a template past the objects: 404", (st, msg))
rc, out, err = ctl("archive", "put", "dst/a/tpl.tar", "--from", "src", "--list", "img/000.jpg")
t.check(rc != 0 and "409" in err + out and "exists" in err + out, "an existing shard without --append: 409", out + err)
t.eq([n for n, _ in members("dst", "a/tpl.tar") or []], tpl, "... and the shard is left as it was")
wait_job(archive("dst/a/tpl.tar", "--from", "src", "--overwrite", "--list", "img/000.jpg"))
t.eq(members("dst", "a/tpl.tar"), [("img/000.jpg", data["img/000.jpg"])], "--overwrite replaces it")
for v, what in (({"archname": "x.zip", "list": ["img/000.jpg"]}, "unknown format"),
                ({"archname": "x.tar", "mime": ".zip", "list": ["img/000.jpg"]}, "unknown format"),
                ({"archname": "x.tgz", "mime": ".tar", "list": ["img/000.jpg"]}, "does not agree"),
                ({"archname": "x.zip", "append": True, "list": ["img/000.jpg"]}, "can append to"),
                ({"archname": "x.tar", "template": "img/%03d.jpg"}, "template"),
                ({"archname": "x.tar"}, "one of"),
                ({"archname": "x.tar", "list": ["img/000.jpg"], "template": "a{0..1}"}, "one of"),
                ({"archname": "../x.tar", "list": ["img/000.jpg"]}, "archname"),
                ({"archname": "x.tar", "list": []}, "value.list")):
    st, msg = post("src", "dst", v)
    t.check(st == 400 and what in msg, "%s: 400 saying %s" % (json.dumps(v), what), (st, msg))
t.eq(post("nosuch", "dst", {"archname": "x.tar", "list": ["a"]})[0], 404, "a missing source bucket: 404")
t.eq(post("src", "nosuch", {"archname": "x.tar", "list": ["a"]})[0], 404, "a missing destination bucket: 404")
t.eq(follow("PUT", g.url, "/v1/objects/dst/fake.tar", b"this is not a tar archive" * 40)[1].status, 200, "PUT fake.tar")
rid = archive("dst/fake.tar", "--from", "src", "--append", "--list", "img/000.jpg")
wait_job(rid, "failed")
r = request("GET", g.url, "/v1/jobs?id=%s&all=true" % rid)
t.check(r.status == 200 and "not a tar" in r.body.decode(errors="replace"), "the failed run says the shard is not a tar",
        r.body[:400])
t.eq(get("dst", "fake.tar").body, b"this is not a tar archive" * 40, "... and the object is left as it was")
t.eq(sorted(set(names("dst")) - set(before)), ["fake.tar"], "nothing else written by the bad requests")

# --- 7. kill -9 of the shard's owner mid-run: the run resumes --------------------------------------
# (debug.archive_pause: each member waits 30 ms, so a run of 100 members lasts 3 s or more)
big = {"k/%04d.bin" % i: os.urandom(32 << 10) for i in range(100)}
bad = [n for n, d in big.items() if follow("PUT", g.url, "/v1/objects/src/" + q(n), d)[1].status != 200]
t.check(not bad, "100 more PUTs to src", bad[:3])
wait_job(archive("dst/k.tar", "--from", "src", "--list", "img/000.jpg"))
kwant = [("img/000.jpg", data["img/000.jpg"])] + sorted(big.items())
rid = archive("dst/k.tar", "--from", "src", "--append", "--template", "k/{0000..0099}.bin")


def run_on(x, r=None):
    r = request("GET", x.url, "/v1/jobs?id=%s&all=true" % (r or rid or "none"), headers=INTRA)
    runs = (r.json() or {}).get("runs", []) if r.status == 200 else []
    return runs[0] if runs else {}


owner, at_kill = None, {}
for _ in range(3000):  # (bounded: 30 s) until the owner has packed some members, or ended
    owner = next((x for x in ts if run_on(x).get("total")), None)
    at_kill = run_on(owner) if owner else {}
    if owner and (at_kill.get("state") != "running" or at_kill.get("walked", 0) >= 10):
        break
    time.sleep(0.01)
t.check(owner is not None and at_kill.get("state") == "running" and 10 <= at_kill.get("walked", 0) < 100,
        "the shard's owner is in the middle of the append when killed", at_kill)
if owner:
    owner.kill9()
    t.check(owner.start(join=g.url), "%s restarts" % owner.name)
    t.check(poll(lambda: clulib.in_map(g, ts), 20), "%s rejoins" % owner.name)
    wait_job(rid, "done")
    fin = run_on(owner)
    t.check(fin.get("state") == "done" and fin.get("walked") == 100, "the run cut by kill -9 resumed, same id, done",
            fin)
    t.eq(names("dst").count("k.tar"), 1, "one shard k.tar listed")
    mem = members("dst", "k.tar")
    t.check(mem == kwant, "the resumed append: the old member, then the 100 new ones exactly once, byte for byte",
            [n for n, _ in mem or []][:5])
    t.eq(by_archpath("dst", "k.tar", mem or [])[:3], [], "... every member by archpath")
    logs = open(owner.log, errors="replace").read()
    t.check("building dst/k.tar again (cut by a restart)" in logs, "the owner's log says the run was built again")

    # a run cut after its commit (its record still says running): resumed, it finds its
    # version committed (archive.run=ID) and appends nothing again
    rid2 = archive("dst/k.tar", "--from", "src", "--append", "--list", "img/001.jpg")
    wait_job(rid2)
    kwant.append(("img/001.jpg", data["img/001.jpg"]))
    t.eq(members("dst", "k.tar"), kwant, "one more member appended")
    owner2 = next((x for x in ts if run_on(x, rid2).get("total")), None)
    recs = [os.path.join(d, f) for d, _, fs in os.walk(owner2.dir if owner2 else "/nonexistent") for f in fs
            if f == rid2 + ".json"]
    t.eq(len(recs), 1, "the run's record on the shard's owner")
    if owner2 and recs:
        owner2.kill9()
        with open(recs[0]) as f:
            rec = json.load(f)
        rec["state"] = "running"
        with open(recs[0], "w") as f:
            json.dump(rec, f)
        t.check(owner2.start(join=g.url), "%s restarts with the run recorded running" % owner2.name)
        t.check(poll(lambda: clulib.in_map(g, ts), 20), "%s rejoins" % owner2.name)
        t.check(poll(lambda: run_on(owner2, rid2).get("state") == "done", 30), "the resumed run ends done",
                run_on(owner2, rid2))
        t.eq(members("dst", "k.tar"), kwant, "... and img/001.jpg is not appended twice")
        t.check("was committed before the restart" in open(owner2.log, errors="replace").read(),
                "the owner's log says the shard was committed before the restart")

# --- 8. the job in /v1/jobs ------------------------------------------------------------------
r = request("GET", g.url, "/v1/jobs?kind=archive&all=true")
t.check(r.status == 200 and len(r.json().get("runs", [])) >= 8, "the runs are in /v1/jobs?kind=archive", r.body[:300])
clulib.check_logs([g] + ts)
t.finish()
