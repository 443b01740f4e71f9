"""test_pylocal.py - the Python client's tar reader (aisd.tar) and local
reads: objects handed over as open descriptors by a target on this host.

Tar reader, against Python's tarfile: ustar, GNU and pax archives (long
names, unicode, directories, symlinks, empty and 512-aligned members),
plain and gzip/bzip2/xz compressed, give the same regular files with the
same bytes and the same member end offsets; damaged archives (a header
checksum off, a cut header, a cut member, not a tar, a bad pax record)
raise TarError naming the place.

Local reads (a gateway, t1 with its unix socket, t2 with net.unix_socket=off):
the socket file is mode 0660 in t1's node dir; every TCP answer to a client
on this host names it (Ais-Local-Socket), t2 names none; curl over the
socket gets the body without Ais-Local-Fd and a descriptor answer
(Content-Length 0, Ais-Local-Fd-Offset/Size) with it; the client's first
open() asks (a 1-byte read) and gets a LocalStream with the same bytes
(whole, from an offset, a
length, an archpath member of a shard), 404 and 412 come back as HTTPError
over the socket, an object replaced while open reads as the version opened;
t2's objects and a Client(local=False) stay on TCP; a socket path that does
not exist falls back to TCP for good; /metrics counts the descriptors; a
kill -9'd t1 restarts on its stale socket file, and a clean stop removes it.
"""
# timeout: 120
import io
import os
import random
import stat
import subprocess
import sys
import tarfile

from itlib import T

import clulib
from clulib import poll, procs, request, smap_ids

ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
from aisd import Client, HTTPError, LocalStream, Stream  # noqa: E402
from aisd.tar import TarError, iter_members, open_maybe_compressed  # noqa: E402

t = T()
rnd = random.Random(int(os.environ.get("SEED", "3")))

# --- the tar reader --------------------------------------------------------------------------


def make_tar(fmt, comp=""):
    bio = io.BytesIO()
    files = []
    with tarfile.open(fileobj=bio, mode="w:" + comp, format=fmt) as tf:
        d = tarfile.TarInfo("adir")
        d.type = tarfile.DIRTYPE
        tf.addfile(d)
        for i in range(40):
            name = "d%d/%s%03d.%s" % (i % 3, "n" * (i * 4), i, "jpg" if i % 2 else "cls")
            if i == 3:
                name = "ünï/c%03d.txt" % i
            data = rnd.randbytes(rnd.choice([0, 1, 511, 512, 513, 10240, 70000]))
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
            files.append((name, data))
            if i == 7:
                ln = tarfile.TarInfo("alink")
                ln.type = tarfile.SYMTYPE
                ln.linkname = "d0/x"
                tf.addfile(ln)
    return bio.getvalue(), files


for fmt, fname in ((tarfile.USTAR_FORMAT, "ustar"), (tarfile.GNU_FORMAT, "gnu"), (tarfile.PAX_FORMAT, "pax")):
    for comp in ("", "gz", "bz2", "xz"):
        try:
            raw, files = make_tar(fmt, comp)
        except ValueError:  # ustar cannot hold the longest names
            files = None
        if files is None:
            t.check(fmt == tarfile.USTAR_FORMAT, "%s: only ustar refuses long names" % fname)
            continue
        f = open_maybe_compressed(io.BufferedReader(io.BytesIO(raw)))
        got = [(n, d) for n, d, _ in iter_members(f)]
        t.check(got == files, "%s %s: the same %d files, byte for byte" % (fname, comp or "plain", len(files)),
                [n for n, _ in got][:4])
        if not comp:
            with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
                ends = [m.offset_data + ((m.size + 511) & ~511) for m in tf if m.isfile()]
            t.eq([e for _, _, e in iter_members(io.BytesIO(raw))], ends, "%s: member end offsets as tarfile's" % fname)

raw, files = make_tar(tarfile.PAX_FORMAT)
hdr = raw.index(files[0][0].encode()[:20]) // 512 * 512  # a header block of a regular file
bio = io.BytesIO()
with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as tf:
    ti = tarfile.TarInfo("ü.txt")  # a pax header first (the name is not ASCII)
    tf.addfile(ti, io.BytesIO(b""))
pax = bytearray(bio.getvalue())
assert pax[156:157] == b"x" and pax[512:514] == b"15"
pax[512:514] = b"99"  # the record's length runs past the header's data
bad = [
    ("a header checksum off", raw[:hdr + 100] + bytes([raw[hdr + 100] ^ 1]) + raw[hdr + 101:], "checksum"),
    ("not a tar", b"hello, world\n" * 100, "checksum"),
    ("a cut header", raw[:hdr + 200], "truncated"),
    ("a cut member", raw[:len(raw) // 2 + 7], "truncated"),
    ("a bad pax record", bytes(pax), "pax"),
]
for what, data, word in bad:
    try:
        n = sum(1 for _ in iter_members(io.BytesIO(data), what="shard.tar"))
        t.check(False, "%s raises TarError" % what, "read %d members" % n)
    except TarError as e:
        t.check(word in str(e) and "shard.tar" in str(e) and isinstance(e, tarfile.ReadError),
                "%s raises TarError: %s" % (what, e))
t.eq(list(iter_members(io.BytesIO(b""))), [], "an empty stream has no members")

# --- local reads -------------------------------------------------------------------------------

clulib.init(t, "pylocal", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=60s",
                           "--set", "store.fsync=never"])
g = clulib.Node("g1", "gateway")
t1 = clulib.Node("t1", "target")
t2 = clulib.Node("t2", "target")
ok = g.start() and t1.start(join=g.url)
clulib.ARGS += ["--set", "net.unix_socket=off"]
ok = ok and t2.start(join=g.url)
clulib.ARGS = clulib.ARGS[:-2]
if not t.check(ok, "a gateway and 2 targets start"):
    t.finish()
if not t.check(poll(lambda: smap_ids(g) == {g.id, t1.id, t2.id}, 15), "the map has 3 nodes"):
    t.finish()
SOCK = os.path.join(t1.dir, "mp1", "aisd.sock")
st = os.stat(SOCK) if os.path.exists(SOCK) else None
t.check(st is not None and stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o660,
        "t1's socket is in its node dir, mode 0660", st)
t.check(not os.path.exists(os.path.join(t2.dir, "mp1", "aisd.sock")), "t2 (net.unix_socket=off) has none")

c = Client(g.url, timeout=20, retry_for=20)
B = "loc"
c.create_bucket(B)


def owner(name):
    loc = request("HEAD", g.url, "/v1/objects/%s/%s" % (B, name)).h("location") or ""
    return t1 if loc.startswith(t1.url + "/") else t2 if loc.startswith(t2.url + "/") else None


names = {t1: [], t2: []}
data = {}
for i in range(40):
    n = "obj-%02d" % i
    data[n] = rnd.randbytes(rnd.randrange(1, 300000))
    c.put(B, n, data[n])
    names[owner(n)].append(n)
t.check(len(names[t1]) >= 3 and len(names[t2]) >= 3, "objects on both targets",
        (len(names[t1]), len(names[t2])))
a1, a2 = names[t1][0], names[t2][0]
r = request("GET", t1.url, "/v1/objects/%s/%s" % (B, a1))
t.eq(r.h("ais-local-socket"), SOCK, "t1's TCP answer to this host names its socket")
t.eq(request("GET", t1.url, "/v1/objects/%s/nope" % B).h("ais-local-socket"), SOCK, "its 404 too")
t.eq(request("GET", t2.url, "/v1/objects/%s/%s" % (B, a2)).h("ais-local-socket"), None, "t2's names none")


def curl_unix(*args):
    return subprocess.run(["curl", "-sS", "--unix-socket", SOCK, "-D", "-"] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20)


r = curl_unix("-o", os.devnull, "-w", "%{size_download}", "http://x/v1/objects/%s/%s" % (B, a1))
t.check(r.returncode == 0 and b" 200 " in r.stdout and r.stdout.endswith(b"%d" % len(data[a1])),
        "curl over the socket without Ais-Local-Fd gets the body", r.stdout[-200:])
r = curl_unix("-H", "Ais-Local-Fd: true", "http://x/v1/objects/%s/%s" % (B, a1))
h = r.stdout.decode("latin-1").lower()
t.check(" 200 " in h and "content-length: 0" in h and "ais-local-fd-offset: 0" in h
        and "ais-local-fd-size: %d" % len(data[a1]) in h, "with it: a descriptor answer, no body", h[-300:])

with c.open(B, a1) as f:
    first = f.read()
    kind = type(f)
t.check(kind is LocalStream and first == data[a1], "the first open() asks t1 (1 byte) and reads the descriptor")
gw_hp = ("http", "127.0.0.1", g.port)
t.check(gw_hp in c._pool.unix and c._pool.unix[gw_hp] is None, "the gateway, asked once, offers no socket")
got = {}
for n in names[t1][:6]:
    with c.open(B, n) as f:
        got[n] = (type(f), f.read())
t.check(all(k is LocalStream and b == data[n] for n, (k, b) in got.items()),
        "later opens of t1's objects are descriptors with the same bytes", {n: k.__name__ for n, (k, _) in got.items()})
with c.open(B, a1, start=1000) as f:
    t.check(isinstance(f, LocalStream) and f.status == 206 and f.read() == data[a1][1000:],
            "from an offset (Range): 206 and the rest of the bytes")
with c.open(B, a1, start=10, length=100) as f:
    t.eq(f.read(), data[a1][10:110], "a length: exactly those bytes")
with c.open(B, a2) as f:
    t.check(type(f) is Stream and f.read() == data[a2], "t2's objects stay on TCP")
with Client(g.url, local=False).open(B, a1) as f:
    first = f.read()
with Client(g.url, local=False).open(B, a1) as f:
    t.check(type(f) is Stream and f.read() == data[a1], "a Client(local=False) stays on TCP")


def http_error(fn):
    try:
        fn()
    except HTTPError as e:
        return e.status
    return None


miss = next("missing-%d" % i for i in range(1000) if owner("missing-%d" % i) is t1)
t.eq(http_error(lambda: c.open(B, miss)), 404, "a missing object: HTTPError 404 over the socket")
t.eq(http_error(lambda: c.open(B, a1, if_match='"nope"')), 412, "a wrong If-Match: HTTPError 412")
try:
    c.open(B, a1, if_match='"x"\r\nAis-Local-Fd: false')
    t.check(False, "a header with a line break is refused before it is sent")
except ValueError as e:
    t.ok("a header with a line break is refused before it is sent (%s)" % e)

# an archpath member of a shard on t1
shard = next("shard-%d.tar" % i for i in range(1000) if owner("shard-%d.tar" % i) is t1)
raw, files = make_tar(tarfile.PAX_FORMAT)
c.put(B, shard, raw)
member = files[5]
with c.open(B, shard, archpath=member[0]) as f:
    t.check(isinstance(f, LocalStream) and f.read() == member[1], "an archpath member as a descriptor range")
with c.open(B, shard) as f:
    t.eq([(n, d) for n, d, _ in iter_members(io.BufferedReader(f, 1 << 18))], files, "the whole shard, parsed")

# replaced while open: the descriptor keeps the version it opened
f = c.open(B, a1)
c.put(B, a1, b"new version")
t.check(isinstance(f, LocalStream) and f.read() == data[a1], "an object replaced while open reads as opened")
f.close()
with c.open(B, a1) as f:
    t.eq(f.read(), b"new version", "the next open gets the new version")

# a socket that cannot be reached: TCP from then on
cb = Client(g.url)
hp = ("http", "127.0.0.1", t1.port)
cb._pool.unix[hp] = os.path.join(t1.dir, "no-such.sock")
with cb.open(B, names[t1][1]) as f:
    t.check(type(f) is Stream and f.read() == data[names[t1][1]], "an unreachable socket: the read goes over TCP")
t.eq(cb._pool.unix.get(hp), None, "and it is not tried again")

m = request("GET", t1.url, "/metrics").body.decode()
n_fds = next((int(float(x.split()[1])) for x in m.splitlines() if x.startswith("aisd_http_local_fds_total ")), -1)
t.check(n_fds >= 8, "t1's /metrics counts the descriptors handed over: %d" % n_fds)

# restart on a stale socket file; a clean stop removes it
t1.kill9()
t.check(os.path.exists(SOCK), "kill -9 leaves the socket file")
t.check(t1.start(join=g.url), "t1 restarts over its stale socket file")
with c.open(B, names[t1][2]) as f:
    t.check(type(f) is LocalStream and f.read() == data[names[t1][2]], "the restarted t1 hands descriptors over")
p = procs[t1.name]
p.terminate()
p.wait(15)
t.check(not os.path.exists(SOCK), "a clean stop removes the socket file")
t.finish()
