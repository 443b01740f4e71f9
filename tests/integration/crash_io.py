"""crash_io.py - the client side of test_crash.sh (not a test itself).

  crash_io.py write BUCKET PREFIX LOG     sequential PUTs PREFIX-0, PREFIX-1...
        of 0..2 MiB derived from the name until the target goes away; LOG gets
        "try NAME" before each PUT and "ack NAME" after each 200 (flushed).
  crash_io.py put BUCKET NAME SIZE       one PUT of content derived from NAME
  crash_io.py check BUCKET NAME SIZE     exit 0 if it reads back whole
  crash_io.py slowget BUCKET NAME READY  GET reading slowly; touches READY once
        the first bytes arrived; exits when the connection dies (or at end)
  crash_io.py slowput BUCKET NAME READY  a 64 MiB PUT sent slowly, never ended
  crash_io.py verify BUCKET LOG...       after a restart: every acked object
        reads back whole with its checksum, every listed object is one that
        was tried and is whole; prints ok/not ok lines, exits 1 on failure.

Content of NAME: random.Random(NAME) gives its size (unless given) and bytes,
so the verifier needs nothing but the name.
"""
import os
import random
import socket
import sys
import time

from itlib import T, conn, list_all, obj_path, raw, req, xxh64

MAX = 2 << 20


def content(name, size=None):
    r = random.Random(name)
    n = r.randrange(0, MAX + 1) if size is None else size
    return r.randbytes(n)


def write(bck, prefix, log):
    c = conn(30)
    with open(log, "a") as f:
        for i in range(100000):
            name = "%s-%d" % (prefix, i)
            f.write("try %s\n" % name)
            f.flush()
            try:
                r = req("PUT", obj_path(bck, name), content(name), c=c)
            except (OSError, Exception):  # noqa: BLE001 - the target died
                return
            if r.status != 200:
                print("# writer: PUT %s -> %d %r" % (name, r.status, r.body[:200]), flush=True)
                return
            f.write("ack %s\n" % name)
            f.flush()


def slowget(bck, name, ready):
    s = raw(60)
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % obj_path(bck, name)).encode())
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    got = 0
    try:
        while True:
            d = s.recv(4096)
            if not d:
                break
            got += len(d)
            if ready and got > 0:
                open(ready, "w").close()
                ready = None
            time.sleep(0.01)
    except OSError:
        pass


def slowput(bck, name, ready):
    s = raw(60)
    s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (obj_path(bck, name), 64 << 20))
              .encode())
    chunk = b"s" * 65536
    try:
        for i in range(1000):
            s.sendall(chunk)
            if i == 16:
                open(ready, "w").close()
            time.sleep(0.02)
    except OSError:
        pass


def verify(bck, logs):
    t = T()
    tried, acked = set(), []
    for log in logs:
        with open(log) as f:
            for line in f:
                kind, _, name = line.strip().partition(" ")
                if kind == "try":
                    tried.add(name)
                elif kind == "ack":
                    acked.append(name)
    bad = []
    c = conn(60)
    for name in acked:
        want = content(name)
        r = req("GET", obj_path(bck, name), c=c)
        if r.status != 200 or r.body != want or r.h("ais-checksum-value") != xxh64(want):
            bad.append("%s: status %d, %d/%d bytes, checksum %s want %s" % (
                name, r.status, len(r.body), len(want), r.h("ais-checksum-value"), xxh64(want)))
    t.check(not bad, "all %d acknowledged objects read back whole with their checksums" % len(acked),
            "\n".join(bad[:5]))
    try:
        listed = [e for e in list_all(bck, props="name,size,checksum")]
    except RuntimeError as e:
        t.fail("list the bucket", e)
        c.close()
        return t
    names = {e["name"] for e in listed}
    t.check(set(acked) <= names, "the listing has every acknowledged object",
            sorted(set(acked) - names)[:5])
    t.check(names <= tried, "the listing has nothing that was never written", sorted(names - tried)[:5])
    bad = []
    for e in listed:
        name = e["name"]
        if name not in tried:
            continue
        want = content(name)
        r = req("GET", obj_path(bck, name), c=c)
        if (r.status != 200 or r.body != want or e.get("size") != len(want)
                or e.get("checksum") != xxh64(want) or r.h("ais-checksum-value") != xxh64(want)):
            bad.append("%s: status %d, %d/%d bytes, listed size %s" % (name, r.status, len(r.body), len(want),
                                                                     e.get("size")))
    t.check(not bad, "every listed object (%d) is complete, size and checksum right" % len(listed),
            "\n".join(bad[:5]))
    unacked = sorted(tried - set(acked))
    t.diag("%d tried, %d acked, %d listed; unacked and present: %s" % (
        len(tried), len(acked), len(names), [n for n in unacked if n in names]))
    c.close()
    return t


if __name__ == "__main__":
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == "write":
        write(*a)
    elif cmd == "put":
        name = a[1]
        d = content(name, int(a[2]))
        r = req("PUT", obj_path(a[0], name), d, timeout=120)
        sys.exit(0 if r.status == 200 else 1)
    elif cmd == "check":
        name = a[1]
        d = content(name, int(a[2]))
        r = req("GET", obj_path(a[0], name), timeout=120)
        ok = r.status == 200 and r.body == d and r.h("ais-checksum-value") == xxh64(d)
        if not ok:
            print("# check %s: status %d, %d/%d bytes" % (name, r.status, len(r.body), len(d)))
        sys.exit(0 if ok else 1)
    elif cmd == "slowget":
        slowget(*a)
    elif cmd == "slowput":
        slowput(*a)
    elif cmd == "verify":
        t = verify(a[0], a[1:])
        sys.exit(1 if t.fails else 0)
    else:
        sys.exit(__doc__)
