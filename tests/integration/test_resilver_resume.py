"""test_resilver_resume.py - a resilver cut by kill -9 resumes at the next
start (resilver.marker) and completes: one target (its own node dir, one
mountpath to start with) started here on a loopback port, stopped by PID.

Checks, for an attach and then for a detach:
 1. 20,000 objects; the mountpath change starts the resilver; the target is
    killed (-9) as soon as the job reports objects moved and more to move;
    resilver.marker is left in the node dir.
 2. Restarted with its first command line: it logs that the interrupted
    resilver resumes, the job ends done, the marker is gone.
 3. The mountpaths are as the change left them (attach: mp1 and mp2;
    detach: mp1 only, mp2 closed), each holds exactly the objects whose
    HRW mountpath it is (hrwlib), and every object reads back byte for
    byte.
"""
# timeout: 240
import http.client
import json
import os
import time

from itlib import T

import clulib
import hrwlib
from clulib import Node, poll

N = 20000
B = "rs"
JSON = {"Content-Type": "application/json"}

t = T()
clulib.init(t, "rs", ["--set", "store.fsync=never"])
tg = Node("t1", "target")
if not t.check(tg.start(), "the target starts"):
    t.finish()
mp1, mp2 = os.path.join(tg.dir, "mp1"), os.path.join(tg.dir, "mp2")


class Conn:
    """One keep-alive connection to the target, reopened after a restart."""

    def __init__(self):
        self.c = None

    def __call__(self, method, path, body=None):
        if self.c is None:
            self.c = http.client.HTTPConnection("127.0.0.1", tg.port, timeout=30)
        try:
            self.c.request(method, path, body=body, headers=JSON if body else {})
            r = self.c.getresponse()
            return r.status, r.read()
        except (OSError, http.client.HTTPException):
            self.c.close()
            self.c = None
            raise


rq = Conn()


def content(name):
    return (name * 20).encode()[:100 + int(name[1:]) % 300]


def job():
    st, b = rq("GET", "/v1/jobs?what=resilver")
    return json.loads(b) if st == 200 else {}


def markers():
    return [os.path.join(d, f) for d, _, fs in os.walk(tg.dir) for f in fs if f == "resilver.marker"]


def restart():
    clulib.procs[tg.name].wait(10)
    rq.c = None
    return tg.start()


def log_text():
    with open(tg.log, errors="replace") as f:
        return f.read()


t.eq(rq("POST", "/v1/buckets/" + B, '{"action":"create-bck"}')[0], 200, "create " + B)
names = ["o%05d" % i for i in range(N)]
bad = [n for n in names if rq("PUT", "/v1/objects/%s/%s" % (B, n), content(n))[0] != 200]
t.check(not bad, "%d PUTs" % N, bad[:3])


def cut(what, method, path):
    """The mountpath change, then kill -9 while its resilver runs."""
    # the marker exists from a run's start to its end: watching the file
    # (a stat, no request) catches even a run that a loaded machine makes
    # short; it is written in the node's state directory: its first
    # mountpath (or node.dir), one level under the node's own directory
    dirs = [tg.dir] + [os.path.join(tg.dir, x) for x in os.listdir(tg.dir)]
    st, body = rq(method, "/v1/daemon/mountpaths", json.dumps({"action": what + "-mp", "value": path}))
    t.eq(st, 200, "%s %s" % (what, path))
    seen, deadline = False, time.monotonic() + 30
    while not seen and time.monotonic() < deadline:
        if any(os.path.exists(os.path.join(d, "resilver.marker")) for d in dirs):
            tg.kill9()
            seen = True
    t.check(seen, "killed (-9) while the resilver ran (its marker was there)", job() if not seen else None)
    t.check(markers(), "resilver.marker is left behind")


def resumed(what, want_paths):
    before = log_text().count("resilver: resuming the run interrupted")
    t.check(restart(), "restarted after the kill during the %s" % what)
    t.check(log_text().count("resilver: resuming the run interrupted") > before,
            "  it logs that the interrupted resilver resumes")
    t.check(poll(lambda: job().get("state") == "done", 120), "  the resilver ends done", job())
    t.check(not markers(), "  the marker is gone", markers())
    st, body = rq("GET", "/v1/daemon/mountpaths")
    mps = json.loads(body).get("mountpaths", []) if st == 200 else []
    t.eq([m["path"] for m in mps], want_paths, "  the mountpaths after the %s" % what)
    want = {p: 0 for p in want_paths}
    for n in names:
        want[hrwlib.top(B + "/" + n, want_paths, 1)[0]] += 1
    t.eq({m["path"]: m["objects"] for m in mps}, want, "  each holds the objects whose HRW mountpath it is")
    bad = [n for n in names if rq("GET", "/v1/objects/%s/%s" % (B, n)) != (200, content(n))]
    t.check(not bad, "  all %d objects read back byte for byte" % N, bad[:3])


cut("attach", "PUT", mp2)
resumed("attach", [mp1, mp2])
cut("detach", "DELETE", mp2)
resumed("detach", [mp1])
t.finish()
