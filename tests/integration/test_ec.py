"""test_ec.py - erasure-coded buckets (ec.enabled, 4 data + 2 parity
slices) on 1 gateway + 6 targets started here on loopback ports (stopped by
PID), keepalive 300 ms, grace 1.5 s.

Checks: set-bprops refuses ec 6+2 on 6 targets (400), ec with mirror
(400), and a layout change of a bucket that holds objects (409); objects of
0 B, 1 KiB (below ec.objsize_limit: P+1 = 3 whole copies, no slice), 1 MiB
+ 1000 B and 24 MiB: GET byte for byte, HEAD size, a Range read, one
listing entry each; each big object has exactly one slice on each of the 6
targets (metadata with its index, D, P, size), no whole copy but the
owner's; a damaged slice on disk and the owner's whole copy dropped: the
GET rebuilds the object from the other slices (byte for byte, the damage
detected and logged) and the damaged slice is rebuilt; the PUTs of mid
and big were encoded while their bodies arrived (the metric); a streamed
slice (fields in the trailer) whose checksum does not match is refused
(400) and not stored, with the right one it is; a PUT cut short after
2 streamed stripes leaves no object and no slice; kill -9 of 2
targets under a read loop: after the map change 0 failed reads and every
byte identical; a third kill: each read either the right bytes or a 5xx /
404 with a reason, never wrong bytes; DELETE removes every slice.
"""
# timeout: 240
# log-allow: does not match its checksum
import glob
import http.client
import json
import os
import socket
import time
import urllib.parse

from itlib import T, q

import clulib
import hrwlib
from clulib import follow, get, poll, request, slice_meta, smap_ids, whole_copy

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}

t = T()
clulib.init(t, "ec", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1500ms",
                      "--set", "store.fsync=never"])
g, targets = clulib.start_cluster(6)


def setprops(bck, value):
    return request("PATCH", g.url, "/v1/buckets/" + bck,
                   json.dumps({"action": "set-bprops", "value": value}), JSON)


def owner_of(bck, name, live):
    r = request("HEAD", g.url, "/v1/objects/%s/%s" % (bck, q(name)))
    loc = r.h("location") or ""
    return next((x for x in live if loc.startswith(x.url + "/")), None)


def put(bck, name, d):
    """PUT to the owner the gateway redirects to (a big body is not sent
    to the gateway first)."""
    own = owner_of(bck, name, targets)
    return request("PUT", own.url, "/v1/objects/%s/%s" % (bck, q(name)), d, timeout=120).status if own else 0




# --- props ------------------------------------------------------------------------------
for b in ("e1", "full"):
    t.eq(request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON).status, 200, "create " + b)
r = setprops("e1", {"ec": {"enabled": True, "data_slices": 6, "parity_slices": 2}})
t.check(r.status == 400 and b"need as many targets" in r.body, "ec 6+2 on 6 targets: 400 with a reason", r.body[:200])
r = setprops("e1", {"ec": {"enabled": True}, "mirror": {"enabled": True}})
t.eq(r.status, 400, "ec with mirror: 400")
t.eq(follow("PUT", g.url, "/v1/objects/full/x", b"x")[1].status, 200, "PUT into bucket full")
r = setprops("full", {"ec": {"enabled": True, "data_slices": 4, "parity_slices": 2}})
t.check(r.status == 409 and b"empty" in r.body, "ec on a bucket that holds objects: 409 with a reason", r.body[:200])
r = setprops("e1", {"ec": {"enabled": True, "data_slices": 4, "parity_slices": 2, "objsize_limit": 65536}})
t.eq(r.status, 200, "ec 4+2, limit 64 KiB on an empty bucket: 200")
props = json.loads(request("HEAD", g.url, "/v1/buckets/e1").h("ais-bucket-props") or "{}")
t.eq(props.get("ec"), {"enabled": True, "data_slices": 4, "parity_slices": 2, "objsize_limit": 65536,
                         "whole_copy": True},
     "bucket props show ec")
gv = get(g.url, "/v1/daemon?what=bmd").json()["version"]
t.check(poll(lambda: all(get(x.url, "/v1/daemon?what=bmd").json()["version"] >= gv for x in targets), 5),
        "targets have the BMD")

# --- PUT, GET, HEAD, Range, list ------------------------------------------------------------
data = {"zero": b"", "small": os.urandom(1024), "mid": os.urandom((1 << 20) + 1000),
        "big": os.urandom(24 << 20)}
for n, d in data.items():
    t.eq(put("e1", n, d), 200, "PUT %s (%d B)" % (n, len(d)))
for n, d in data.items():
    r = follow("GET", g.url, "/v1/objects/e1/" + n)[1]
    t.check(r.status == 200 and r.body == d, "GET %s: byte for byte" % n)
    r = follow("HEAD", g.url, "/v1/objects/e1/" + n)[1]
    t.eq(r.h("content-length"), str(len(d)), "HEAD %s: size" % n)
r = follow("GET", g.url, "/v1/objects/e1/big", headers={"Range": "bytes=5000000-5999999"})[1]
t.check(r.status == 206 and r.body == data["big"][5000000:6000000], "Range read of big: 206, the bytes")
lst = json.loads(request("GET", g.url, "/v1/buckets/e1", '{"action":"list"}', JSON).body)
t.eq(sorted(e["name"] for e in lst["entries"]), sorted(data), "listing: one entry per object, no slice")

for n in ("mid", "big"):
    metas = {x.name: slice_meta(x, "e1", n) for x in targets}
    idx = sorted(int(m["i"]) for m in metas.values() if m)
    t.eq(idx, list(range(6)), "%s: one slice on each of the 6 targets, indices 0..5" % n)
    t.check(all(m and m["d"] == "4" and m["p"] == "2" and m["size"] == str(len(data[n])) for m in metas.values()),
            "%s: slice metadata names D, P and the object's size" % n)
    own = owner_of("e1", n, targets)
    t.eq([x.name for x in targets if whole_copy(x, "e1", n)], [own.name], "%s: the whole copy on the owner only" % n)
t.eq(sum(1 for x in targets if whole_copy(x, "e1", "small")), 3, "small (below the limit): 3 whole copies")
t.check(all(slice_meta(x, "e1", "small") is None for x in targets), "small: no slice")

# --- a damaged slice --------------------------------------------------------------------------
own = owner_of("e1", "mid", targets)
slice_size = 4 * 65536 + 256  # (1 MiB + 1000) / 4 data slices, the last stripe's cells 256 B
victim = next(x for x in targets if x is not own)
files = [f for f in glob.glob(os.path.join(victim.dir, "mp*", "obj", "*", "*")) if os.path.getsize(f) == slice_size]
if t.check(len(files) == 1, "the slice file of mid on %s found" % victim.name, files):
    with open(files[0], "r+b") as f:
        f.seek(1000)
        c = f.read(1)
        f.seek(1000)
        f.write(bytes([c[0] ^ 0xFF]))
t.eq(request("DELETE", own.url, "/v1/objects/e1/mid", headers=INTRA).status, 200, "drop the owner's whole copy of mid")
r = follow("GET", g.url, "/v1/objects/e1/mid")[1]
t.check(r.status == 200 and r.body == data["mid"], "GET mid: rebuilt from the good slices, byte for byte",
        (r.status, r.body[:200]))
t.check(poll(lambda: "does not match its checksum" in open(victim.log, errors="replace").read(), 5),
        "the damaged slice was detected and logged")
t.check(poll(lambda: slice_meta(victim, "e1", "mid") is not None, 30), "the damaged slice was rebuilt")
ok_files = [f for f in glob.glob(os.path.join(victim.dir, "mp*", "obj", "*", "*")) if os.path.getsize(f) == slice_size]
t.eq(len(ok_files), 1, "one slice file of mid there again")


# --- Range reads without a whole copy: only the stripes they touch ------------------------------
def counter(tg, name):
    body = get(tg.url, "/metrics").body.decode()
    return sum(float(ln.rsplit(" ", 1)[1]) for ln in body.splitlines()
               if ln.startswith(name + " ") or ln.startswith(name + "{"))


t.eq(sum(counter(x, "aisd_ec_puts_streamed_total") for x in targets), 2,
     "mid and big were encoded while their bodies arrived (aisd_ec_puts_streamed_total)")


def streamed_slice(tg, name, body, trailers):
    """A slice PUT as the owner streams it: chunked, its fields in the trailer."""
    u = urllib.parse.urlsplit(tg.url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        c.putrequest("PUT", "/v1/ec/e1/" + name)
        for k, v in (("Ais-Intra", "test"), ("Ais-Checksum-Type", "xxhash"), ("Transfer-Encoding", "chunked"),
                     ("Trailer", "Ais-Ec-Meta, Ais-Checksum-Value")):
            c.putheader(k, v)
        c.endheaders()
        c.send(b"%x\r\n%s\r\n0\r\n%s\r\n" % (len(body), body,
                                             "".join("%s: %s\r\n" % kv for kv in trailers).encode()))
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


mh = get(targets[0].url, "/v1/ec/e1/mid?meta=true", headers=INTRA).body.decode()
sl = os.urandom(65536)
st, body = streamed_slice(targets[0], "tr", sl, [("Ais-Ec-Meta", mh), ("Ais-Checksum-Value", "0123456789abcdef")])
t.check(st == 400 and b"checksum" in body, "a streamed slice whose trailer checksum does not match: 400", (st, body))
t.check(slice_meta(targets[0], "e1", "tr") is None, "  and nothing stored")
st, body = streamed_slice(targets[0], "tr", sl, [("Ais-Ec-Meta", mh), ("Ais-Checksum-Value", "%016x" % hrwlib.xxh64(sl, 0))])
t.check(st == 200 and slice_meta(targets[0], "e1", "tr") is not None, "with the right one: 200, stored", (st, body))
t.eq(request("DELETE", targets[0].url, "/v1/ec/e1/tr", headers=INTRA).status, 200, "  (removed again)")

# a client that stops after 2 stripes of a 1 MiB body: the streams are cut, nothing stays
own = owner_of("e1", "cut", targets)
u = urllib.parse.urlsplit(own.url)
with socket.create_connection((u.hostname, u.port), timeout=10) as sk:
    sk.sendall(b"PUT /v1/objects/e1/cut HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (1 << 20))
    sk.sendall(os.urandom(600 << 10))
    time.sleep(0.5)
t.check(poll(lambda: follow("GET", g.url, "/v1/objects/e1/cut")[1].status == 404 and
             all(slice_meta(x, "e1", "cut") is None for x in targets), 10),
        "a PUT cut short after 2 of its stripes were streamed: no object, no slice anywhere")

STRIPE = 4 * 65536
for n, size in (("huge", 64 << 20), ("odd", (3 << 20) + 12345)):
    data[n] = os.urandom(size)
    t.eq(put("e1", n, data[n]), 200, "PUT %s (%d B)" % (n, size))
    own = owner_of("e1", n, targets)
    t.eq(request("DELETE", own.url, "/v1/objects/e1/" + n, headers=INTRA).status, 200,
         "drop the owner's whole copy of " + n)
    ranges = [(40000000, 4096), (STRIPE * 10 - 1000, 5000)] if n == "huge" else [(size - 70000, 70000)]
    for off, ln in ranges:
        r0, b0 = counter(own, "aisd_ec_range_reads_total"), counter(own, "aisd_ec_range_slice_bytes_total")
        r = follow("GET", g.url, "/v1/objects/e1/" + n, headers={"Range": "bytes=%d-%d" % (off, off + ln - 1)})[1]
        t.check(r.status == 206 and r.body == data[n][off:off + ln],
                "%s bytes %d-%d without a whole copy: 206, the bytes" % (n, off, off + ln - 1), r.status)
        stripes = (off + ln - 1) // STRIPE - off // STRIPE + 1
        dr = counter(own, "aisd_ec_range_reads_total") - r0
        db = counter(own, "aisd_ec_range_slice_bytes_total") - b0
        t.diag("%s: %d B range, %d stripe(s): %d slice bytes read (the object: %d B)" % (n, ln, stripes, db, size))
        t.check(dr == 1 and 0 < db <= 6 * 65536 * stripes,
                "... decoded from the %d stripe(s) it touches: at most one cell per slice each" % stripes, (dr, db))
    t.check(not whole_copy(own, "e1", n), "%s: no whole copy rebuilt for a range read" % n)
r = follow("GET", g.url, "/v1/objects/e1/huge")[1]
t.check(r.status == 200 and r.body == data["huge"], "GET huge whole: rebuilt, byte for byte")
for n in ("huge", "odd"):
    t.check(follow("DELETE", g.url, "/v1/objects/e1/" + n)[1].status == 200, "DELETE " + n)
    del data[n]

# --- two targets down under a read loop ----------------------------------------------------------
names = ["mid", "big", "small", "zero"]
for i in range(8):  # more big objects, so the kills hit owners
    n = "o%d" % i
    data[n] = os.urandom((200 << 10) + i * 4099)
    t.eq(put("e1", n, data[n]), 200, "PUT " + n)
    names.append(n)
dead = [owner_of("e1", "big", targets)]
dead.append(next(x for x in targets if x not in dead and x is not owner_of("e1", "mid", targets)))
live = [x for x in targets if x not in dead]
for x in dead:
    x.kill9()
t_kill = time.monotonic()
t.check(poll(lambda: smap_ids(g) == {g.id} | {x.id for x in live}, 15), "the map drops the 2 killed targets")
t.diag("map change %.1f s after the kills" % (time.monotonic() - t_kill))
fails, wrong, reads = [], [], 0
deadline = time.monotonic() + 60
for rnd in range(3):
    for n in names:
        if time.monotonic() > deadline:
            break
        r = follow("GET", g.url, "/v1/objects/e1/" + n)[1]
        reads += 1
        if r.status != 200:
            fails.append((n, r.status, r.body[:160]))
        elif r.body != data[n]:
            wrong.append(n)
t.check(not fails, "%d reads after the map change: 0 failed" % reads, fails[:3])
t.check(not wrong, "every byte identical", wrong[:3])

# --- a third loss: never wrong bytes -------------------------------------------------------------
third = live[0]
third.kill9()
live = live[1:]
t.check(poll(lambda: smap_ids(g) == {g.id} | {x.id for x in live}, 15), "the map drops the third")
bad, refused = clulib.reads_right_or_refused(  # the whole copies dropped first, so reads must decode
    g, "e1", names, data, lambda n: [request("DELETE", x.url, "/v1/objects/e1/" + q(n), headers=INTRA) for x in live])
t.check(not bad, "3 targets lost: each read the right bytes or a clear 5xx/404 with a reason", bad[:3])
t.diag("%d of %d reads refused with a reason after the third loss" % (refused, len(names)))
t.check(refused > 0, "some reads refused: fewer than 4 slices left for them")

# --- delete ------------------------------------------------------------------------------------
r = follow("DELETE", g.url, "/v1/objects/e1/o0")[1]
down = [x.id for x in dead + [third]]
t.check(r.status in (200, 404) or (r.status == 503 and any(i.encode() in r.body for i in down)),
        "DELETE o0: done, or 503 naming a target down that may hold a slice (mirror.delete_quorum=all)", r)
t.check(all(slice_meta(x, "e1", "o0") is None for x in live), "no slice of o0 left on the live targets")
t.finish()
