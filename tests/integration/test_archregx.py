"""test_archregx.py - many files of a shard at once, and listing shards'
files, on a standalone target.

GET ?archregx=PATTERN&archmode=regexp|prefix|suffix|substr|wdskey answers a
tar (read back with Python's tarfile) of exactly the members whose names
match, in archive order, with their bytes; regexp is the default mode; a
long member name (pax) survives; no match is 404 with a message; a bad
regular expression and an unknown archmode are 400; a missing shard 404; a
non-tar, truncated or corrupt shard 400; HEAD answers without a body.
Listing with the archive flag ({"flags":8}, AIStore's LsArchDir; also
?flags=8) puts each shard's members "SHARD/MEMBER" (sizes, flag 128) right
after the shard (flag 512) and counts only objects toward the page size, so
paging never splits a shard from its members; `aisctl ls --archive
BUCKET/SHARD` prints the shard and its files.
"""
import io
import json
import os
import random
import re
import subprocess
import tarfile
import urllib.parse

from itlib import T, URL, create_bucket, obj_path, req, tar_members

t = T()
B = "arx"
JSON = {"Content-Type": "application/json"}


def make_shard(samples, seed):
    r = random.Random(seed)
    members = []
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as tf:
        def add(name, data):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
            members.append((name, data))
        for i in range(samples):
            key = "s/%06d" % i
            add(key + ".jpg", r.randbytes(r.randint(100, 30000)))
            add(key + ".cls", str(i).encode())
            if i % 10 == 0:
                add(key + ".seg.png", r.randbytes(700))
        add("deep/" + "y" * 150 + "/long.json", b'{"long":1}')
        add("empty.txt", b"")
    return bio.getvalue(), members


shard, members = make_shard(60, 3)
t.eq(create_bucket(B).status, 200, "create bucket")
t.eq(req("PUT", obj_path(B, "shard.tar"), shard).status, 200, "PUT shard.tar")


def rx(pattern, mode=None, obj="shard.tar", method="GET"):
    p = obj_path(B, obj) + "?archregx=" + urllib.parse.quote(pattern, safe="")
    if mode:
        p += "&archmode=" + mode
    return req(method, p)


cases = [
    (r"\.cls$", None, lambda n: n.endswith(".cls")),
    (r"^s/00001[0-9]\.(jpg|png)", "regexp", lambda n: re.search(r"^s/00001[0-9]\.(jpg|png)", n)),
    ("s/00002", "prefix", lambda n: n.startswith("s/00002")),
    (".png", "suffix", lambda n: n.endswith(".png")),
    ("0004", "substr", lambda n: "0004" in n),
    ("s/000030", "wdskey", lambda n: n.split("/")[-1].split(".")[0] == "000030" and n.startswith("s/")),
    ("long", "substr", lambda n: "long" in n),
    ("", "prefix", lambda n: True),
]
for pat, mode, want_fn in cases:
    r = rx(pat, mode)
    want = [(n, d) for n, d in members if want_fn(n)]
    what = "archregx %r archmode=%s" % (pat, mode or "(default)")
    if not t.check(r.status == 200 and r.h("content-type") == "application/x-tar", what + ": 200 tar", r):
        continue
    try:
        got = tar_members(r.body)
    except tarfile.TarError as e:
        t.fail(what + ": a valid tar", e)
        continue
    t.check(got == want, what + ": exactly the %d matching members, in order, bytes equal" % len(want),
            ([n for n, _ in got][:6], [n for n, _ in want][:6]))

r = rx("s/00003", "wdskey")
j = r.json() or {}
t.check(r.status == 404 and "matches" in j.get("message", ""), "wdskey with no exact key: 404", r)
r = rx(r"\.webp$")
j = r.json() or {}
t.check(r.status == 404 and j.get("message", "").startswith("no file in %s/shard.tar matches" % B),
        "no match: 404 with the message", r)
r = rx("([a-")
t.check(r.status == 400 and "regular expression" in (r.json() or {}).get("message", ""),
        "bad regular expression: 400", r)
r = rx("x", "glob")
t.check(r.status == 400 and "archmode" in (r.json() or {}).get("message", ""), "unknown archmode: 400", r)
t.eq(rx("x", obj="nosuch.tar").status, 404, "missing shard: 404")
r = rx(r"\.cls$", method="HEAD")
t.check(r.status == 200 and r.body == b"", "HEAD with archregx: 200, no body", r)

t.eq(req("PUT", obj_path(B, "plain.tar"), os.urandom(3000)).status, 200, "PUT a .tar that is not a tar")
r = rx(".", obj="plain.tar")
t.check(r.status == 400 and "not a valid tar" in (r.json() or {}).get("message", ""), "not a tar: 400", r)
t.eq(req("PUT", obj_path(B, "cut.tar"), shard[:len(shard) // 2 + 100]).status, 200, "PUT a truncated shard")
t.eq(rx(".", obj="cut.tar").status, 400, "truncated shard: 400")

# listing with the archive flag
for i in range(5):
    t.eq(req("PUT", obj_path(B, "obj%d" % i), b"x" * i).status, 200, "PUT obj%d" % i)
small, small_members = make_shard(3, 9)
t.eq(req("PUT", obj_path(B, "a.tar"), small).status, 200, "PUT a.tar")
t.eq(req("PUT", obj_path(B, "a.tar-other"), b"zz").status, 200, "PUT a.tar-other")


def list_all(pagesize, flags=8):
    ents, token, pages = [], "", 0
    while pages < 100:
        value = {"pagesize": pagesize, "flags": flags, "continuation_token": token}
        r = req("GET", "/v1/buckets/" + B, json.dumps({"action": "list", "value": value}), JSON)
        if r.status != 200:
            return r
        d = r.json()
        ents += d["entries"]
        pages += 1
        token = d["continuation_token"]
        if not token:
            break
    return ents


objs = sorted(["shard.tar", "plain.tar", "cut.tar", "a.tar", "a.tar-other"] + ["obj%d" % i for i in range(5)])
want = []
for o in objs:
    if o == "shard.tar":
        want += [(o, 512)] + [(o + "/" + n, 128) for n, _ in members]
    elif o == "a.tar":
        want += [(o, 512)] + [(o + "/" + n, 128) for n, _ in small_members]
    else:
        want.append((o, None))
for ps in (1000, 3, 1):
    ents = list_all(ps)
    if not t.check(isinstance(ents, list), "list with flags=8, pagesize %d" % ps, ents):
        continue
    got = [(e["name"], e.get("flags")) for e in ents]
    t.check(got == want, "pagesize %d: objects in order, each shard followed by its members" % ps,
            (got[:8], want[:8]))
sizes = {e["name"]: e.get("size") for e in list_all(1000)}
t.check(all(sizes.get("shard.tar/" + n) == len(d) for n, d in members), "member sizes in the listing")
ents = list_all(1000, flags=0)
t.eq([e["name"] for e in ents], objs, "without the flag: objects only")
r = req("GET", "/v1/buckets/%s?flags=8&prefix=a.tar" % B)
names = [e["name"] for e in (r.json() or {}).get("entries", [])]
t.eq(names, ["a.tar"] + ["a.tar/" + n for n, _ in small_members] + ["a.tar-other"], "query form ?flags=8")

ctl = os.environ["AISCTL"]
p = subprocess.run([ctl, "-e", URL, "ls", "--archive", B + "/a.tar", "-H"], stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, timeout=30)
lines = [ln.split()[0] for ln in p.stdout.decode().splitlines() if ln.strip()]
t.check(p.returncode == 0 and lines == ["a.tar"] + ["a.tar/" + n for n, _ in small_members],
        "aisctl ls --archive BUCKET/SHARD", (p.returncode, lines, p.stderr))
p = subprocess.run([ctl, "-e", URL, "ls", "--archive", B, "--json"], stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, timeout=30)
lines = [json.loads(ln)["name"] for ln in p.stdout.decode().splitlines() if ln.strip()]
t.eq(lines, [n for n, _ in want], "aisctl ls --archive BUCKET --json")
t.finish()
