"""test_zshards.py - compressed shards (.tgz, .tar.gz, .zip) on a standalone
target: archpath reads, archregx, listing, GetBatch entries, bad shards.

Shards made with Python's tarfile (gzip) and zipfile (deflated and stored
members, and a zip written to an unseekable stream so its entries carry
data descriptors) hold WebDataset samples and one 5 MiB member (decoded in
many pieces). Every member read by archpath has the bytes, Content-Length
and Content-Type; Range inside a member is 206; HEAD; a missing member is
404; archregx gives a tar of the matches; listing with flags=8 lists the
members; GetBatch takes archpath entries from them. A .tgz that is random
bytes, gzip of something that is not a tar, a truncated .tgz, a corrupt
and a truncated .zip are 400 with a message (or, when the damage lies past
what was already sent, a short body), and the target keeps serving.
"""
import gzip
import http.client
import io
import json
import os
import random
import tarfile
import urllib.parse
import zipfile

from itlib import T, conn, create_bucket, obj_path, req, tar_members


def get_raw(path):
    """(status, body or None when the body was cut short)."""
    c = conn()
    try:
        c.request("GET", path)
        r = c.getresponse()
        try:
            return r.status, r.read()
        except (http.client.IncompleteRead, OSError):
            return r.status, None
    finally:
        c.close()

t = T()
B = "zs"
JSON = {"Content-Type": "application/json"}
rnd = random.Random(11)


def samples(n, big=True):
    out = []
    for i in range(n):
        out.append(("%06d.jpg" % i, rnd.randbytes(rnd.randint(10, 40000))))
        out.append(("%06d.cls" % i, str(i).encode()))
    if big:
        out.append(("big/blob.bin", rnd.randbytes(5 << 20)))
    out.append(("deep/" + "z" * 130 + ".txt", b"long name"))
    out.append(("empty.json", b""))
    return out


def make_tgz(members):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w:gz", format=tarfile.PAX_FORMAT) as tf:
        for n, d in members:
            ti = tarfile.TarInfo(n)
            ti.size = len(d)
            tf.addfile(ti, io.BytesIO(d))
    return bio.getvalue()


class Unseekable:
    def __init__(self):
        self.b = io.BytesIO()

    def write(self, d):
        return self.b.write(d)

    def flush(self):
        pass


def make_zip(members, streamed=False):
    out = Unseekable() if streamed else io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr(zipfile.ZipInfo("adir/"), b"")
        for i, (n, d) in enumerate(members):
            ct = zipfile.ZIP_STORED if i % 3 == 0 else zipfile.ZIP_DEFLATED
            if streamed:
                with zf.open(zipfile.ZipInfo(n), "w") as w:
                    w.write(d)
            else:
                zf.writestr(n, d, compress_type=ct)
    return out.b.getvalue() if streamed else out.getvalue()


mem = samples(20)
mem_small = samples(5, big=False)
shards = {
    "a.tgz": (make_tgz(mem), mem),
    "b.tar.gz": (make_tgz(mem_small), mem_small),
    "c.zip": (make_zip(mem), mem),
    "d.zip": (make_zip(mem_small, streamed=True), mem_small),
}
t.eq(create_bucket(B).status, 200, "create bucket")
for name, (body, _) in shards.items():
    t.eq(req("PUT", obj_path(B, name), body).status, 200, "PUT %s (%d bytes)" % (name, len(body)))


def ap(obj, member):
    return obj_path(B, obj) + "?archpath=" + urllib.parse.quote(member, safe="")


types = {"jpg": "image/jpeg", "cls": "text/plain", "json": "application/json", "txt": "text/plain"}
for name, (_, members) in shards.items():
    bad = []
    for n, d in members:
        r = req("GET", ap(name, n))
        ct = types.get(n.rsplit(".", 1)[-1], "application/octet-stream")
        if r.status != 200 or r.body != d or r.h("content-length") != str(len(d)) or r.h("content-type") != ct:
            bad.append((n, r.status, len(r.body), len(d), r.h("content-type")))
    t.check(not bad, "%s: every member by archpath (bytes, length, type)" % name, bad[:3])
    n, d = members[0]
    r = req("GET", ap(name, n), headers={"Range": "bytes=5-104"})
    t.check(r.status == 206 and r.body == d[5:105] and
            r.h("content-range") == "bytes 5-104/%d" % len(d), "%s: Range inside a member" % name, r)
    r = req("HEAD", ap(name, n))
    t.check(r.status == 200 and r.h("content-length") == str(len(d)) and r.body == b"", "%s: HEAD" % name, r)
    r = req("GET", ap(name, "nope.jpg"))
    t.check(r.status == 404 and "not found" in (r.json() or {}).get("message", ""),
            "%s: missing member 404" % name, r)
    t.eq(req("GET", ap(name, "adir")).status, 404, "%s: a directory is not a member" % name)

big = dict(mem)["big/blob.bin"]
r = req("GET", ap("a.tgz", "big/blob.bin"), headers={"Range": "bytes=3000000-"})
t.check(r.status == 206 and r.body == big[3000000:], "a.tgz: Range deep inside the 5 MiB member", r)


for name, (_, members) in shards.items():
    r = req("GET", obj_path(B, name) + "?archregx=" + urllib.parse.quote(r"\.(cls|json)$"))
    want = [(n, d) for n, d in members if n.endswith((".cls", ".json"))]
    t.check(r.status == 200 and tar_members(r.body) == want, "%s: archregx tar of %d matches" % (name, len(want)),
            r)
    r = req("GET", obj_path(B, name) + "?archregx=000003&archmode=wdskey")
    t.check(r.status == 200 and [n for n, _ in tar_members(r.body)] == ["000003.jpg", "000003.cls"],
            "%s: wdskey" % name, r)
    r = req("GET", obj_path(B, name) + "?archregx=zzz&archmode=prefix")
    t.eq(r.status, 404, "%s: archregx without a match: 404" % name)
r = req("GET", obj_path(B, "a.tgz") + "?archregx=big&archmode=prefix")
t.check(r.status == 200 and tar_members(r.body) == [("big/blob.bin", big)], "a.tgz: archregx of the 5 MiB member")

# listing
r = req("GET", "/v1/buckets/" + B, json.dumps({"action": "list", "value": {"flags": 8}}), JSON)
names = [(e["name"], e.get("size")) for e in (r.json() or {}).get("entries", [])]
want = []
for name in sorted(shards):
    want.append((name, len(shards[name][0])))
    want += [(name + "/" + n, len(d)) for n, d in shards[name][1]]
t.eq(names, want, "listing with flags=8: every compressed shard with its members and sizes")

# GetBatch with archpath entries in compressed shards (and a plain tar)
ents = [{"objname": "c.zip", "archpath": "000004.jpg"}, {"objname": "a.tgz", "archpath": "big/blob.bin"},
        {"objname": "b.tar.gz", "archpath": "000001.cls", "start": 0, "length": 1},
        {"objname": "d.zip", "archpath": "000002.jpg"}, {"objname": "d.zip", "archpath": "nope"}]
r = req("GET", "/v1/ml/moss/" + B, json.dumps({"in": ents, "coer": True, "onob": True}), JSON)
want = [("c.zip/000004.jpg", dict(mem)["000004.jpg"]), ("a.tgz/big/blob.bin", big),
        ("b.tar.gz/000001.cls", dict(mem_small)["000001.cls"][:1]),
        ("d.zip/000002.jpg", dict(mem_small)["000002.jpg"]), ("__404__/d.zip/nope", b"")]
t.check(r.status == 200 and tar_members(r.body) == want, "GetBatch: entries from .zip, .tgz, .tar.gz shards",
        r.status)

# bad shards
tgz = shards["a.tgz"][0]
zp = shards["c.zip"][0]
bads = {
    "rand.tgz": os.urandom(20000),
    "notar.tar.gz": gzip.compress(b"hello, not a tar " * 1000),
    "cut.tgz": tgz[:len(tgz) // 3],
    "cuthead.tgz": tgz[:20],
    "rand.zip": os.urandom(20000),
    "cut.zip": zp[:len(zp) // 2],
    "empty.zip": b"",
}
corrupt = bytearray(zp)
for i in range(100, 400):
    corrupt[i] ^= 0xA5
bads["corrupt.zip"] = bytes(corrupt)
for name, body in bads.items():
    t.eq(req("PUT", obj_path(B, name), body).status, 200, "PUT bad shard " + name)
# archpath of a member the damage makes unreachable: 400 with a message
# (the name is in the message); damage after the answer started: a short body
unreadable = {"rand.tgz": "000000.jpg", "notar.tar.gz": "000000.jpg", "cut.tgz": "empty.json",
              "cuthead.tgz": "000000.jpg", "rand.zip": "000000.jpg", "cut.zip": "000000.jpg",
              "empty.zip": "000000.jpg"}
for name, member in unreadable.items():
    r = req("GET", ap(name, member))
    msg = (r.json() or {}).get("message", "")
    t.check(r.status == 400 and name in msg, "%s: archpath -> 400 naming the shard" % name, r)
    st, body = get_raw(obj_path(B, name) + "?archregx=.")
    t.check(st == 400 or (st == 200 and body is None),
            "%s: archregx -> 400 or an aborted stream (never a complete tar)" % name, st)
r = req("GET", ap("corrupt.zip", "000000.jpg"))  # stored; its bytes flipped: CRC mismatch
t.check(r.status == 400 and "corrupt.zip" in (r.json() or {}).get("message", ""),
        "corrupt.zip: a member with a bad CRC -> 400 (checked before the answer)", r)
st, body = get_raw(ap("cut.tgz", "big/blob.bin"))
t.check(st in (400, 404) or (st == 200 and body is None), "truncated .tgz, big member: 400 or a short body", st)
r = req("GET", ap("a.tgz", "000005.cls"))
t.eq(r.body, dict(mem)["000005.cls"], "the target still serves after the bad shards")
t.finish()
