#!/usr/bin/env python3
"""test_oneport.py - one node, one process, one port.

A target t0 is started. A second aisd on t0's port (another mountpath)
exits non-zero at once saying the port is in use, and t0 goes on serving
every request (100 HEADs of its bucket, each on a new connection: none
reaches another process, which would answer 404). A second aisd on another port but t0's
mountpath exits non-zero naming the directory and t0's pid. After t0 is
killed with -9 its lock is gone with it: a new daemon starts on the same
mountpath and port. A port another program listens on (with or without
SO_REUSEPORT) is refused the same way.
"""
# timeout: 120
# log-allow: cannot start: .*(the port is in use|is in use by another aisd)
import os
import socket
import subprocess
import time

import clulib
from clulib import Node, get, procs, request
from itlib import T

t = T()
clulib.init(t, "oneport", ["--set", "store.fsync=never"])
t0 = Node("t0", "target")
if not t.check(t0.start(), "t0 started"):
    t.finish()
MP = os.path.join(t0.dir, "mp1")


def second(name, port, mp, during=None):
    """Runs another aisd (during(), if given, 1 s after it was started);
    returns (exit status or None if it kept running, its output)."""
    d = os.path.join(clulib.DIR, name)
    os.makedirs(d, exist_ok=True)
    args = [clulib.BIN, "--port", str(port), "-m", mp, "--set", "log.file=" + os.path.join(d, "aisd.log")]
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if during:
        time.sleep(1)
        during()
    try:
        out, _ = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate(timeout=10)
        return None, out.decode(errors="replace")
    log = os.path.join(d, "aisd.log")
    text = out.decode(errors="replace") + (open(log, errors="replace").read() if os.path.exists(log) else "")
    return p.returncode, text


r = request("POST", t0.url, "/v1/buckets/b", '{"action":"create-bck"}', {"Content-Type": "application/json"})
t.eq(r.status, 200, "bucket b created on t0")
codes = []


rc, out = second("dup-port", t0.port, os.path.join(clulib.DIR, "dup-port", "mp"),
                 lambda: codes.extend(request("HEAD", t0.url, "/v1/buckets/b", timeout=5).status for _ in range(100)))
t.check(rc is not None and rc != 0, "a second aisd on t0's port exits non-zero", (rc, out[-300:]))
t.check("port is in use" in out and str(t0.port) in out, "it says the port is in use", out[-300:])
t.eq(codes.count(200), 100, "t0 answers all 100 HEADs of bucket b meanwhile (new connection each) with 200")

rc, out = second("dup-dir", 0, MP)
t.check(rc is not None and rc != 0, "a second aisd on t0's mountpath (another port) exits non-zero",
        (rc, out[-300:]))
t.check(MP in out and "pid %d" % procs["t0"].pid in out, "it names the directory and t0's pid", out[-300:])
t.eq(get(t0.url, "/v1/health", timeout=5).status, 200, "t0 still serves")

for reuse in (False, True):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    what = "another program's port (%s SO_REUSEPORT)" % ("with" if reuse else "without")
    rc, out = second("other-%d" % reuse, ls.getsockname()[1], os.path.join(clulib.DIR, "other-%d" % reuse, "mp"))
    t.check(rc is not None and rc != 0 and "port is in use" in out, "aisd on " + what + ": exits non-zero",
            (rc, out[-300:]))
    ls.close()

t0.kill9()
t.check(t0.start(), "after kill -9 of t0 a new daemon starts on its mountpath and port")
t.eq(get(t0.url, "/v1/health", timeout=5).status, 200, "and serves")
t.finish()
