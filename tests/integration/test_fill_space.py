#!/usr/bin/env python3
"""test_fill_space.py - store.min_free holds while bytes land, not only when
a write starts: a front cluster (1 gateway, target t1 whose only mountpath
is a 48 MiB tmpfs mounted here, as root; unmounted in every case;
store.min_free=16MiB) caches a remote bucket of a second aisd cluster
(1 gateway + 1 target, its native API).

Checks:
 1. A cold GET of a 40 MiB remote object (more than the tmpfs has above
    store.min_free) fails with 507 and caches nothing: the tmpfs keeps at
    least store.min_free free and holds no temp file (before, the fill
    checked free space only at its start and filled the disk to 7 MiB);
    a cold GET of a 1 MiB object is 200, byte for byte.
 2. A PUT of 40 MiB with a Content-Length is 507 at once (its size is
    reserved); one of unknown size (chunked) is 507 once free space went
    below store.min_free as its bytes landed, and leaves no temp file; a
    PUT of 1 MiB is 200.
 3. No error-level log line.
"""
# serial: tmpfs mounts and free-space accounting
# timeout: 180
import os
import subprocess

from itlib import T

import clulib
from clulib import Node, follow, poll, request

MiB = 1 << 20
JSON = {"Content-Type": "application/json"}
CTL = os.environ["AISCTL"]

t = T()
BASE = ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never"]
clulib.init(t, "fillspace", BASE)
if os.getuid() != 0:
    t.skip("free space as a fill lands on a tmpfs", "needs root to mount a tmpfs")
    t.finish()
t1 = Node("t1", "target")
SMALL = os.path.join(t1.dir, "mp1")
os.makedirs(SMALL, exist_ok=True)


def sh(*args):
    r = subprocess.run(list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60)
    return r.returncode, r.stdout.decode()


def mounted():
    with open("/proc/mounts") as f:
        return any(line.split()[1] == SMALL for line in f)


def free():
    st = os.statvfs(SMALL)
    return st.f_bavail * st.f_frsize


def put(url, path, data, chunked=False):
    """PUT with curl (the 307 followed, the body sent again; an early
    answer read): the final status."""
    f = os.path.join(clulib.DIR, "body")
    with open(f, "wb") as fh:
        fh.write(data)
    cmd = ["curl", "-s", "-L", "-o", "/dev/null", "-w", "%{http_code}", "-m", "60", "-T", "-" if chunked else f]
    if chunked:
        cmd += ["-H", "Transfer-Encoding: chunked"]
    with open(f, "rb") as fh:
        cp = subprocess.run(cmd + [url + path], stdin=fh, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=90)
    return cp.stdout.decode()


def temps():
    d = os.path.join(SMALL, "tmp")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


rc, out = sh("mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", SMALL)
if not t.check(rc == 0, "a 48 MiB tmpfs mounted as t1's mountpath", out):
    t.finish()
try:
    # the remote cluster and its objects
    rg, rt = Node("rg1", "gateway"), Node("rt1", "target")
    if not t.check(rg.start() and rt.start(join=rg.url) and
                   poll(lambda: clulib.smap_ids(rg) == {rg.id, rt.id}, 20), "the remote cluster forms"):
        t.finish()
    t.eq(request("POST", rg.url, "/v1/buckets/src", '{"action":"create-bck"}', JSON).status, 200, "remote: src")
    big, small = os.urandom(40 * MiB), os.urandom(MiB)
    for n, v in (("big", big), ("small", small)):
        t.eq(put(rg.url, "/v1/objects/src/" + n, v), "200", "remote: PUT src/%s" % n)

    # the front cluster: t1 on the tmpfs
    clulib.ARGS = BASE + ["--set", "store.min_free=16MiB"]
    g = Node("g1", "gateway")
    if not t.check(g.start() and t1.start(join=g.url) and poll(lambda: clulib.smap_ids(g) == {g.id, t1.id}, 20),
                   "the front cluster forms (t1 on the tmpfs, store.min_free=16MiB)"):
        t.finish()
    cp = subprocess.run([CTL, "-e", g.url, "remote", "attach", "r", rg.url, "--kind", "ais", "--blob-min", "1GiB"],
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    t.check(cp.returncode == 0, "aisctl remote attach r (ais)", cp.stdout.decode())
    cp = subprocess.run([CTL, "-e", g.url, "bucket", "create", "cache", "--backend", "ais://@r/src"],
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    t.check(cp.returncode == 0, "bucket create cache --backend ais://@r/src", cp.stdout.decode())
    t.eq(request("POST", g.url, "/v1/buckets/loc", '{"action":"create-bck"}', JSON).status, 200, "create loc")
    MINF = 16 * MiB
    f0 = free()
    t.check(40 * MiB > f0 - MINF > 0, "the tmpfs has %d MiB above store.min_free: less than 40" % ((f0 - MINF) >> 20))

    # --- 1. cold fills --------------------------------------------------------------------
    r1, r2 = follow("GET", g.url, "/v1/objects/cache/big")
    t.check(r2.status == 507 and len(r2.body) < len(big),
            "a cold GET of 40 MiB: 507 (no room above store.min_free)", (r2.status, len(r2.body), r2.body[:200]))
    t.check(free() >= MINF and not temps(), "  the tmpfs keeps store.min_free free and no temp file",
            (free() >> 20, temps()))
    t.eq(request("HEAD", t1.url, "/v1/objects/cache/big", headers={"Ais-Intra": "test"}).status, 404,
         "  nothing cached")
    r1, r2 = follow("GET", g.url, "/v1/objects/cache/small")
    t.check(r2.status == 200 and r2.body == small, "a cold GET of 1 MiB: 200, byte for byte", r2.status)

    # --- 2. PUTs ------------------------------------------------------------------------------
    t.eq(put(g.url, "/v1/objects/loc/sized", big), "507", "a PUT of 40 MiB with a Content-Length: 507")
    t.eq(put(g.url, "/v1/objects/loc/chunked", big, chunked=True), "507",
         "a chunked PUT of 40 MiB: 507 once free space went below store.min_free")
    t.check(poll(lambda: not temps(), 10) and free() >= MINF, "  no temp file left; store.min_free free",
            (free() >> 20, temps()))
    t.eq(put(g.url, "/v1/objects/loc/one", small), "200", "a PUT of 1 MiB: 200")
    clulib.check_logs([rg, rt, g, t1])
finally:
    clulib.stop_all()
    if mounted():
        rc, out = sh("umount", "-l", SMALL)
        t.check(rc == 0, "the tmpfs is unmounted", out)
t.finish()
