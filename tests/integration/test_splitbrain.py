"""test_splitbrain.py - never two primaries at once, measured: 2 gateways (g0
primary, g1) and 3 targets, every node in its own network namespace
(deploy/netns/cluster.sh), keepalive 300 ms, grace 1.5 s, net.max_conns 32.
Needs root and `ip netns`; without them it prints one "ok # skip" line.

Each node's log records when it acts as primary: "primary role: acting" and
"primary role: not acting" lines ("its lease lapsed N ms ago" dates the end
back to the lease's end). A build whose log has no such lines acts as
primary while the cluster map it installed last names it ("cluster map term
T vV: ..., primary X" lines). From these the test builds each gateway's
intervals as primary on the host's clock (every namespace shares it) and
measures the longest time two gateways overlap; 0 ms is allowed.

1. Slowloris on g0: 120 connections that send half a request and never
   finish it (reopened as g0 closes them) for 7 s, so g0 answers its peers'
   checks with 503 or not at all. Whatever follows (g0 keeps the role, or
   g1 takes it over), the overlap is 0 ms; afterwards every node agrees on
   one primary and lists all 5 nodes.
2. The primary P and t0 partitioned from the other gateway, t1 and t2: the
   majority side elects the other gateway in a newer term within 15 s (the
   check must see a failover); the overlap is 0 ms, a bucket create on
   the cut-off P is refused with 503, and P's stats say it does not act as
   primary (acting_primary false) though its map still names it. Healed: every node agrees on one
   primary, 5 nodes.
No error-level log line.
"""
# serial: network namespaces (ip netns)
# timeout: 150
import json
import os
import re
import select
import socket
import subprocess
import threading
import time
from datetime import datetime, timezone

from itlib import T
from netnslib import BINDIR, DIR, SCRIPT, require, sh

from clulib import request as clulib_request

t = T()
NAME = "s%d" % (os.getpid() % 100000)
NET = "10.215.%d" % (os.getpid() % 250 + 1)
require(NAME)

IP = {"g0": NET + ".10", "g1": NET + ".11", "t0": NET + ".100", "t1": NET + ".101", "t2": NET + ".102"}
NODES = list(IP)
GWS = ["g0", "g1"]
isolated = set()  # nodes the host reaches only through "exec"


def url(n):
    return "http://%s:8080" % IP[n]


def curl(node, method, path, body=None, timeout=5):
    """(status, body) of a request to node: from the host, or with curl
    inside the node's namespace when it is isolated."""
    if node not in isolated:
        try:
            r = clulib_request(method, url(node), path, body.encode() if body else None,
                               {"Content-Type": "application/json"} if body else None, timeout=timeout)
            return r.status, r.body.decode(errors="replace")
        except OSError:
            return 0, ""
    args = ["exec", node, "-d", DIR, "--", "curl", "-s", "-m", str(timeout), "-X", method, "-w", "\n%{http_code}",
            url(node) + path]
    if body is not None:
        args[-1:-1] = ["-H", "Content-Type: application/json", "-d", body]
    cp = subprocess.run([SCRIPT] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, timeout=timeout + 10)
    text, _, code = cp.stdout.decode(errors="replace").rpartition("\n")
    return int(code) if code.isdigit() else 0, text


def view(node):
    st, body = curl(node, "GET", "/v1/cluster?what=smap", timeout=3)
    try:
        d = json.loads(body) if st == 200 else None
    except ValueError:
        d = None
    return (d["primary"], d["term"], len(d["nodes"])) if d else None


def agreed(nodes=NODES):
    """The primary every node names, with 5 nodes and one term; None else."""
    v = [view(n) for n in nodes]
    return v[0][0] if all(x and x[:2] == v[0][:2] and x[2] == 5 for x in v) else None


def wait_agreed(secs):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        p = agreed()
        if p:
            return p
        time.sleep(0.3)
    return None


def down():
    rc, out = sh("down")
    if rc:
        t.diag("down: " + out)


# --- the slowloris -------------------------------------------------------------------------------

class Slowloris:
    """n connections to host:port that each send half a request head and
    then nothing; a connection the server closes is opened again. Bounded:
    stop() ends it, and it ends by itself after max_secs."""

    def __init__(self, host, port, n, max_secs):
        self.host, self.port, self.n, self.max_secs = host, port, n, max_secs
        self.socks, self.opened, self.stopped = [], 0, threading.Event()
        self.th = threading.Thread(target=self.run, daemon=True)

    def one(self):
        s = socket.socket()
        s.settimeout(1)
        try:
            s.connect((self.host, self.port))
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            s.setblocking(False)
            self.opened += 1
            return s
        except OSError:
            s.close()
            return None

    def run(self):
        end = time.monotonic() + self.max_secs
        while not self.stopped.is_set() and time.monotonic() < end:
            self.socks = [s for s in self.socks if s]
            if self.socks:
                r, _, _ = select.select(self.socks, [], [], 0)
                for s in r:  # closed (or answered 503 and closed): reopen
                    try:
                        data = s.recv(4096)
                    except OSError:
                        data = b""
                    if not data or b"503" in data:
                        s.close()
                        self.socks.remove(s)
            while len(self.socks) < self.n and not self.stopped.is_set():
                s = self.one()
                if not s:
                    break
                self.socks.append(s)
            self.stopped.wait(0.1)
        for s in self.socks:
            s.close()
        self.socks = []

    def start(self):
        self.th.start()

    def stop(self):
        self.stopped.set()
        self.th.join(timeout=10)


# --- the primaries' intervals from the logs -----------------------------------------------------

LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z \S (\S+?)\[\d+\] (.*)$")
MAP = re.compile(r"cluster map term (\d+) v\d+: \d+ nodes, primary (\S+)$")
ACT = re.compile(r"primary role: acting")
NOT = re.compile(r"primary role: not acting.*?(?:its lease lapsed (-?\d+) ms ago)?")


def parse_time(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()


def intervals(node, end_time):
    """[(start, end)] in wall-clock seconds when node acted as primary."""
    try:
        with open(os.path.join(DIR, node, "aisd.log"), errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    role_lines = any("primary role: " in ln for ln in lines)
    out, since = [], None
    for ln in lines:
        m = LINE.match(ln)
        if not m:
            continue
        ts, msg = parse_time(m.group(1)), m.group(3)
        if role_lines:
            if ACT.search(msg) and "not acting" not in msg:
                if since is None:
                    since = ts
            elif "primary role: not acting" in msg:
                n = NOT.search(msg)
                stop = ts - (int(n.group(1)) / 1000.0 if n and n.group(1) else 0)
                if since is not None:
                    out.append((since, max(since, stop)))
                since = None
        else:
            mm = MAP.search(msg)
            if mm:
                if mm.group(2) == node and since is None:
                    since = ts
                elif mm.group(2) != node and since is not None:
                    out.append((since, ts))
                    since = None
    if since is not None:
        out.append((since, end_time))
    return out


def overlap(a, b, lo, hi):
    """Longest overlap (s) of an interval of a and one of b within [lo, hi]."""
    best = 0.0
    for s1, e1 in a:
        for s2, e2 in b:
            o = min(e1, e2, hi) - max(s1, s2, lo)
            best = max(best, o)
    return best


# --- the test ----------------------------------------------------------------------------------

rc, out = sh("up", "-g", "2", "-t", "3", "-n", NAME, "-a", NET, "-b", BINDIR, "-s", "cluster.keepalive=300ms",
             "-s", "cluster.grace=1500ms", "-s", "store.fsync=never", "-s", "net.max_conns=32")
if not t.check(rc == 0, "netns cluster up: 2 gateways, 3 targets, each in its own namespace", out):
    down()
    t.finish()
phases = []  # (name, wall start, wall end)
w_first = time.time()
failover_seen = False
try:
    t.eq(wait_agreed(20), "g0", "every node: g0 primary, 5 nodes")

    # --- 1. slowloris on the primary ------------------------------------------------------------
    w0 = time.time()
    sl = Slowloris(IP["g0"], 8080, 120, 30)
    sl.start()
    time.sleep(1)
    st, _ = curl("g0", "GET", "/v1/health", timeout=2)
    t.diag("slowloris on g0: %d connections held; g0's health from the host: %s" % (len(sl.socks), st or "no answer"))
    time.sleep(6)
    sl.stop()
    t.diag("slowloris: %d connections opened in all" % sl.opened)
    p1 = wait_agreed(30)
    phases.append(("slowloris", w0, time.time()))
    if not t.check(p1 in GWS, "after the slowloris every node agrees on one primary (%s), 5 nodes" % p1,
                   {n: view(n) for n in NODES}):
        raise SystemExit  # the overlap is measured below all the same

    # --- 2. the primary partitioned with a target -------------------------------------------------
    other = "g1" if p1 == "g0" else "g0"
    before = view(other)
    w0 = time.time()
    sh("partition", p1, "t0")
    isolated = {p1, "t0"}
    t_cut, v = time.monotonic(), None
    while time.monotonic() - t_cut < 15:
        v = [view(n) for n in (other, "t1", "t2")]
        if all(x and x[0] == other and x[1] > before[1] for x in v):
            failover_seen = True
            break
        time.sleep(0.2)
    t.check(failover_seen, "partitioned %s with t0: %s, t1, t2 elect %s in a newer term" % (p1, other, other), v)
    if failover_seen:
        t.diag("%s elected %.1f s after the partition" % (other, time.monotonic() - t_cut))
    st, body = curl(p1, "POST", "/v1/buckets/refused", '{"action":"create-bck"}', timeout=20)
    t.check(st == 503, "bucket create on the cut-off %s: 503" % p1, (st, body[:300]))
    st, body = curl(p1, "GET", "/v1/daemon?what=stats")
    try:
        d = json.loads(body) if st == 200 else {}
    except ValueError:
        d = {}
    t.check(d.get("primary") is True and d.get("acting_primary") is False,
            "the cut-off %s: its map names it primary, but it does not act as primary" % p1, body[:300])
    time.sleep(1)
    sh("heal")
    isolated = set()
    p2 = wait_agreed(30)
    t.check(p2 in GWS, "healed: every node agrees on one primary (%s), 5 nodes" % p2, {n: view(n) for n in NODES})
    phases.append(("partition", w0, time.time()))
except SystemExit:
    pass
finally:
    down()

end = time.time()
iv = {g: intervals(g, end) for g in GWS}
t.diag("intervals as primary (s since the first): " + json.dumps(
    {g: [(round(s - w_first, 3), round(e - w_first, 3)) for s, e in x] for g, x in iv.items()}))
for name, lo, hi in phases:
    o = overlap(iv["g0"], iv["g1"], lo, hi)
    t.check(o <= 0, "%s: the longest time g0 and g1 both acted as primary is %d ms (0 allowed)" % (name, o * 1000),
            iv)
t.check(len(phases) == 2 and failover_seen, "both phases ran, with a failover in the partition")

errs = []
for n in NODES:
    try:
        with open(os.path.join(DIR, n, "aisd.log"), errors="replace") as f:
            errs += ["%s: %s" % (n, line.rstrip()) for line in f if re.match(r"^\S+ E ", line)]
    except OSError as e:
        errs.append("%s: %s" % (n, e))
t.check(not errs, "no node log has an error-level line", "\n".join(errs[:10]))
left = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE).stdout.decode()
t.check(NAME + "-" not in left, "down removed every namespace", left)
t.finish()
