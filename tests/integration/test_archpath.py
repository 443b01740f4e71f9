"""test_archpath.py - files inside tar shards: GET/HEAD ?archpath=MEMBER.

A WebDataset-style shard made with tarfile (200 samples NNNNNN.jpg /
NNNNNN.cls of 1 KiB-100 KiB, a member with a name over 100 bytes, a pax
header, an empty member, a directory) is PUT; every member is read back by
archpath and compared byte for byte; Range inside a member (206 relative to
the member), HEAD, Content-Type from the extension, a missing member (404
with the message), a non-tar object and a truncated shard (400), and an
overwrite of the shard (the new members are served, never the old index).
"""
import io
import os
import random
import tarfile
import urllib.parse

from itlib import T, create_bucket, obj_path, req

t = T()
B = "arch"
rnd = random.Random(6)


def make_shard(samples, seed, extra=True):
    """Returns (tar bytes, {member name: bytes})."""
    r = random.Random(seed)
    members = {}
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as tf:
        def add(name, data, pax=None):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = 1700000000
            if pax:
                ti.pax_headers = pax
            tf.addfile(ti, io.BytesIO(data))
            members[name] = data
        for i in range(samples):
            key = "%06d" % i
            add(key + ".jpg", r.randbytes(r.randint(1024, 100 * 1024)))
            add(key + ".cls", str(r.randint(0, 999)).encode())
        if extra:
            add("deep/" + "x" * 120 + "/sample.json", b'{"long": true}')
            add("pax.txt", b"with a pax header", {"comment": "hello", "aisd.test": "1"})
            add("empty.bin", b"")
            d = tarfile.TarInfo("adir")
            d.type = tarfile.DIRTYPE
            tf.addfile(d)
    return bio.getvalue(), members


def ap(obj, member):
    return obj_path(B, obj) + "?archpath=" + urllib.parse.quote(member, safe="")


t.eq(create_bucket(B).status, 200, "create bucket")
shard, members = make_shard(200, 1)
t.diag("shard: %d bytes, %d members" % (len(shard), len(members)))
t.eq(req("PUT", obj_path(B, "shard.tar"), shard).status, 200, "PUT shard.tar")

bad = []
for name, data in members.items():
    r = req("GET", ap("shard.tar", name))
    if r.status != 200 or r.body != data or r.h("content-length") != str(len(data)):
        bad.append((name, r.status, len(r.body), len(data)))
t.check(not bad, "GET every one of %d members by archpath: bytes equal" % len(members), bad[:5])

r = req("GET", ap("shard.tar", "000007.jpg"))
t.eq(r.h("content-type"), "image/jpeg", "Content-Type of .jpg")
t.eq(req("GET", ap("shard.tar", "000007.cls")).h("content-type"), "text/plain", "Content-Type of .cls")
long_name = "deep/" + "x" * 120 + "/sample.json"
r = req("GET", ap("shard.tar", long_name))
t.check(r.status == 200 and r.body == b'{"long": true}' and r.h("content-type") == "application/json",
        "long member name (> 100 bytes) by archpath, application/json", r)
t.eq(req("GET", ap("shard.tar", "empty.bin")).h("content-type"), "application/octet-stream",
     "other extension: application/octet-stream")

data = members["000003.jpg"]
n = len(data)
r = req("GET", ap("shard.tar", "000003.jpg"), headers={"Range": "bytes=100-199"})
t.check(r.status == 206 and r.body == data[100:200] and
        r.h("content-range") == "bytes 100-199/%d" % n, "Range inside a member: 206, relative to it", r)
r = req("GET", ap("shard.tar", "000003.jpg"), headers={"Range": "bytes=-10"})
t.check(r.status == 206 and r.body == data[-10:], "suffix Range inside a member", r)
r = req("GET", ap("shard.tar", "000003.jpg"), headers={"Range": "bytes=%d-" % n})
t.eq(r.status, 416, "Range past the member's end: 416")

r = req("HEAD", ap("shard.tar", "000003.jpg"))
t.check(r.status == 200 and r.h("content-length") == str(n) and r.body == b"",
        "HEAD by archpath: Content-Length = member size", r)

r = req("GET", ap("shard.tar", "nope/x.jpg"))
j = r.json() or {}
t.check(r.status == 404 and j.get("message") == 'archpath "nope/x.jpg" not found in %s/shard.tar' % B,
        "missing member: 404 with the message", r)
t.eq(req("GET", ap("shard.tar", "adir")).status, 404, "a directory entry is not a member")
t.eq(req("GET", ap("nosuch.tar", "a")).status, 404, "archpath in a missing object: 404")
t.eq(req("GET", obj_path(B, "shard.tar")).body, shard, "whole-shard GET unchanged")

# not a tar
t.eq(req("PUT", obj_path(B, "plain.bin"), os.urandom(5000)).status, 200, "PUT a non-tar object")
r = req("GET", ap("plain.bin", "a.jpg"))
t.check(r.status == 400 and "not a valid tar" in ((r.json() or {}).get("message") or ""),
        "archpath in a non-tar object: 400 with a clear message", r)
t.eq(req("PUT", obj_path(B, "fake.tar"), b"hello " * 1000).status, 200,
     "PUT a .tar object that is not a tar (the PUT succeeds)")
t.eq(req("GET", ap("fake.tar", "a.jpg")).status, 400, "archpath in it: 400")

# truncated (mid-member) and corrupt shards
cut = shard[:len(shard) // 2 + 77]
t.eq(req("PUT", obj_path(B, "cut.tar"), cut).status, 200, "PUT a truncated shard")
r = req("GET", ap("cut.tar", "000000.jpg"))
t.check(r.status == 400 and "truncated" in ((r.json() or {}).get("message") or ""),
        "archpath in a truncated shard: 400 (truncated)", r)
corrupt = bytearray(shard)
corrupt[512 * 20 + 5] ^= 0x55  # somewhere in the headers or data; also break the first header
corrupt[3] ^= 0x55
t.eq(req("PUT", obj_path(B, "corrupt.tar"), bytes(corrupt)).status, 200, "PUT a corrupt shard")
t.eq(req("GET", ap("corrupt.tar", "000000.jpg")).status, 400, "archpath in a corrupt shard: 400")
t.eq(req("GET", obj_path(B, "shard.tar") + "?archpath=").status, 400, "empty archpath: 400")

# a shard not indexed at PUT time (name without .tar): built on first read
t.eq(req("PUT", obj_path(B, "noext"), shard).status, 200, "PUT a shard named without .tar")
r = req("GET", ap("noext", "000199.cls"))
t.check(r.status == 200 and r.body == members["000199.cls"], "indexed on demand at first archpath read", r)

# overwrite: the new members, never the old index
shard2, members2 = make_shard(50, 2, extra=False)
t.eq(req("PUT", obj_path(B, "shard.tar"), shard2).status, 200, "overwrite shard.tar")
bad = [m for m, d in members2.items() if req("GET", ap("shard.tar", m)).body != d]
t.check(not bad, "after overwrite: every new member's bytes", bad[:5])
t.eq(req("GET", ap("shard.tar", "000150.jpg")).status, 404, "after overwrite: an old-only member is 404")
t.eq(req("PUT", obj_path(B, "noext"), shard2).status, 200, "overwrite the on-demand one")
r = req("GET", ap("noext", "000010.jpg"))
t.check(r.status == 200 and r.body == members2["000010.jpg"], "its new members are served", r)
t.eq(req("DELETE", obj_path(B, "shard.tar")).status, 200, "delete the shard")
t.eq(req("GET", ap("shard.tar", "000001.jpg")).status, 404, "archpath after delete: 404")
t.eq(req("PUT", obj_path(B, "shard.tar"), shard).status, 200, "re-create it with the first content")
r = req("GET", ap("shard.tar", "000150.jpg"))
t.check(r.status == 200 and r.body == members["000150.jpg"], "re-created: its members again", r)
t.finish()
