"""test_hostile.py - a battery of hostile requests against one target:
oversized heads, bad and overflowing chunk sizes, negative, overflowing and
conflicting Content-Length, request smuggling (Content-Length with
Transfer-Encoding), invalid UTF-8 and NUL in names, a JSON body over the
route's limit, deeply nested JSON, bodies over net.max_body (declared and
chunked), slowloris heads, 10,000 idle connections, and abrupt disconnects
mid-PUT and mid-GET.

Checks: each gets its clean error status (JSON body) or a close, never a
hang; after a framing error the connection closes and nothing smuggled
behind it is executed; no partial object becomes visible; the daemon keeps
serving all along, and at the end its open file descriptors are back to
where they were; of its RSS growths in a third and a fourth round of
10,000 connections one at least is within 32 MiB (3 KiB a connection)
(freed memory stays with malloc, so the first rounds' growth is not a
leak; a steady one is). One
worker (net.workers=1): with more, each round spreads connections over
the workers' malloc arenas differently, and each arena keeps its peak.
The 10,000 connections need that many descriptors in this process and the
daemon: the test raises both soft limits to the hard limit (prlimit) and
scales the count down, saying so, when the hard limits are lower, and lifts
net.max_conns_per_client (all of them come from one address).
"""
# aisd-args: --set net.header_timeout=2s --set net.body_timeout=3s --set net.max_body=1MiB --set net.workers=1
# aisd-args: --set net.max_conns_per_client=20000
# timeout: 200
import json
import os
import resource
import socket
import struct
import time

from itlib import Reader, T, create_bucket, exchange, obj_path, raw, req, tmp_files

t = T()
PID = int(os.environ["AISD_PID"])
B = "hostile"
H = b"Host: 127.0.0.1\r\n"


def fds():
    return len(os.listdir("/proc/%d/fd" % PID))


def rss_kib():
    with open("/proc/%d/status" % PID) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def bad(data, want, what):
    r, closed = exchange(data)
    wants = want if isinstance(want, tuple) else (want,)
    want = wants[0]
    ok = not isinstance(r, Exception) and r.status in wants and closed
    want = r.status if ok else want
    if ok and want != 408:
        d = r.json()
        ok = isinstance(d, dict) and d.get("status") == want and d.get("message")
    t.check(ok, "%s: %s with a JSON message, then close" % (what, "/".join(map(str, wants))), r)


def alive(what):
    r = req("GET", "/v1/health", timeout=10)
    t.check(r.status == 200, "the daemon still serves after %s" % what, r)


def absent(name, what):
    r = req("HEAD", obj_path(B, name))
    t.check(r.status == 404, "%s: no object %s visible" % (what, name), r)


t.eq(create_bucket(B).status, 200, "create bucket")
big = os.urandom(900 * 1024)
t.eq(req("PUT", obj_path(B, "big"), big).status, 200, "a 900 KiB object (under net.max_body)")
req("GET", obj_path(B, "big"))
fd0, rss0 = fds(), rss_kib()
t.diag("before: %d fds, RSS %d KiB" % (fd0, rss0))

# --- heads -------------------------------------------------------------------------
bad(b"GET /v1/health HTTP/1.1\r\n" + H + b"X-Big: " + b"a" * 20000 + b"\r\n\r\n", 431, "a 20 KB header")
bad(b"GET /v1/health HTTP/1.1\r\n" + H + b"".join(b"X-H%d: v\r\n" % i for i in range(2000)) + b"\r\n", 431,
    "2000 headers")
bad(b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n" + H + b"\r\n", 414, "a 20 KB request line")
bad(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nBad Header: v\r\n\r\n", 400, "a space in a header name")
bad(b"\x00\x01\x02GARBAGE\r\n\r\n", (400, 501), "binary garbage")

# --- framing -----------------------------------------------------------------------
p = obj_path(B, "f1").encode()
bad(b"PUT " + p + b" HTTP/1.1\r\n" + H + b"Content-Length: -5\r\n\r\nhello", 400, "a negative Content-Length")
bad(b"PUT " + p + b" HTTP/1.1\r\n" + H + b"Content-Length: 99999999999999999999999\r\n\r\nhello", 400,
    "an overflowing Content-Length")
bad(b"PUT " + p + b" HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400,
    "two different Content-Lengths")
bad(b"PUT " + p + b" HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", 400,
    "a chunk size that is not hex")
bad(b"PUT " + p + b" HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\nhello\r\n", 400,
    "an overflowing chunk size")
bad(b"PUT " + p + b" HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX3\r\nabc\r\n0\r\n\r\n",
    400, "chunk data longer than its size")
absent("f1", "after the framing errors")

# request smuggling: the body hides a second request; it must not run
smuggled = b"DELETE " + obj_path(B, "big").encode() + b" HTTP/1.1\r\n" + H + b"\r\n"
for order in (b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n" % (len(smuggled) + 5),
              b"Transfer-Encoding: chunked\r\nContent-Length: %d\r\n" % (len(smuggled) + 5)):
    s = raw(10)
    s.sendall(b"PUT " + obj_path(B, "sm").encode() + b" HTTP/1.1\r\n" + H + order + b"\r\n0\r\n\r\n" + smuggled)
    rd = Reader(s)
    r = rd.response()
    closed = rd.closed(5)
    s.close()
    t.check(r.status == 400 and closed and not rd.buf, "Content-Length with Transfer-Encoding (%s first): 400, "
            "close, nothing more answered" % order.split(b":")[0].decode(), (r, rd.buf[:100]))
t.eq(req("HEAD", obj_path(B, "big")).status, 200, "the smuggled DELETE did not run")
absent("sm", "after the smuggling attempts")

# --- names ---------------------------------------------------------------------------
for name, what in [("%ff%fe", "invalid UTF-8"), ("a%00b", "a NUL"), ("a%c0%afb", "an overlong UTF-8 /"),
                   ("%ed%a0%80", "a UTF-16 surrogate in UTF-8")]:
    r = req("PUT", "/v1/objects/%s/%s" % (B, name), b"x")
    d = r.json()
    t.check(r.status == 400 and isinstance(d, dict) and d.get("status") == 400,
            "an object name with %s: 400 with a JSON message" % what, r)
r = req("PUT", "/v1/objects/%s/a%%zzb" % B, b"x")
t.eq(r.status, 400, "a malformed percent escape: 400")
r = req("POST", "/v1/buckets/b%00x", json.dumps({"action": "create-bck"}), {"Content-Type": "application/json"})
t.eq(r.status, 400, "a bucket name with a NUL: 400")

# --- JSON bodies --------------------------------------------------------------------------
J = {"Content-Type": "application/json"}
r = req("POST", "/v1/buckets/" + B, b'{"action":"list","x":"' + b"a" * (2 << 20) + b'"}', J)
t.check(r.status == 413 and (r.json() or {}).get("status") == 413, "a 2 MiB JSON body sent whole: 413 (the "
        "daemon drains what the client still sends after answering, so the client reads the answer)", r)
bad(b"POST /v1/buckets/" + B.encode() + b" HTTP/1.1\r\n" + H + b"Content-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n" % (2 << 20) + b'{"action":"list","x":"' + b"a" * 1000, 413,
    "a 2 MiB JSON body")
s = raw(15)
s.sendall(b"POST /v1/buckets/" + B.encode() + b" HTTP/1.1\r\n" + H + b"Content-Type: application/json\r\n"
          b"Transfer-Encoding: chunked\r\n\r\n")
try:
    for _ in range(40):  # 2.5 MiB of JSON, chunked: the limit shows only while it streams
        s.sendall(b"%x\r\n%s\r\n" % (64 * 1024, b" " * 64 * 1024))
except OSError:
    pass
try:
    r = Reader(s).response()
except (EOFError, OSError, ValueError) as e:
    r = e
s.close()
t.check(not isinstance(r, Exception) and r.status == 413, "a 2.5 MiB chunked JSON body: 413", r)
deep = b"[" * 200000 + b"]" * 200000
r = req("POST", "/v1/buckets/" + B, deep, J)
t.check(r.status == 400, "200,000 nested arrays: 400", r)
deep = b'{"action":' + b'{"a":' * 100000 + b"1" + b"}" * 100000 + b"}"
r = req("POST", "/v1/buckets/" + B, deep, J)
t.check(r.status == 400, "100,000 nested objects: 400", r)
r = req("PUT", "/v1/daemon", b'{"action":"set-config","value":' + b"[" * 20000 + b"]" * 20000 + b"}", J)
t.eq(r.status, 400, "deep JSON to set-config: 400")
alive("the JSON bodies")

# --- net.max_body ---------------------------------------------------------------------------
r, closed = exchange(b"PUT " + obj_path(B, "mb1").encode() + b" HTTP/1.1\r\n" + H +
                     b"Content-Length: %d\r\n\r\n" % (2 << 20) + b"x" * 1000)
t.check(not isinstance(r, Exception) and r.status == 413 and closed, "Content-Length over net.max_body: 413, close", r)
s = raw(15)
s.sendall(b"PUT " + obj_path(B, "mb2").encode() + b" HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n")
chunk = b"%x\r\n%s\r\n" % (64 * 1024, b"y" * 64 * 1024)
rd = Reader(s)
r = None
try:
    for _ in range(40):  # 2.5 MiB, more than the limit
        s.sendall(chunk)
except OSError:
    pass
try:
    r = rd.response()
except (EOFError, OSError, ValueError) as e:
    r = e
s.close()
t.check(not isinstance(r, Exception) and r.status == 413, "a chunked body growing past net.max_body: 413", r)
absent("mb1", "Content-Length over the limit")
absent("mb2", "a chunked body over the limit")

# --- slowloris ------------------------------------------------------------------------------
slow = [raw(10) for _ in range(50)]
for s in slow:
    s.sendall(b"GET /v1/health HTTP/1.1\r\n")
t0 = time.monotonic()
dripping = True
while time.monotonic() - t0 < 3.5:
    for s in slow:
        try:
            s.send(b"X")
        except OSError:
            pass
    r = req("GET", "/v1/health", timeout=30)
    dripping = dripping and r.status == 200
    time.sleep(0.5)
t.check(dripping, "normal requests are served while 50 clients drip their heads")
got408 = 0
for s in slow:
    rd = Reader(s)
    try:
        s.settimeout(30)  # header_timeout has passed; room for a loaded machine
        got408 += rd.response().status == 408
    except (EOFError, OSError, ValueError):
        pass
    s.close()
t.eq(got408, 50, "each slowloris client gets 408 once net.header_timeout passes")

# --- abrupt disconnects -------------------------------------------------------------------
for i in range(20):
    s = raw(10)
    s.sendall(b"PUT " + obj_path(B, "cut%d" % i).encode() + b" HTTP/1.1\r\n" + H +
              b"Content-Length: 500000\r\n\r\n" + os.urandom(100000))
    if i % 2:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
    s.close()
for i in range(20):
    s = raw(10)
    s.sendall(b"PUT " + obj_path(B, "cutc%d" % i).encode() + b" HTTP/1.1\r\n" + H +
              b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % 50000 + os.urandom(20000))
    s.close()
for i in range(20):
    s = raw(10)
    s.sendall(b"GET " + obj_path(B, "big").encode() + b" HTTP/1.1\r\n" + H + b"\r\n")
    s.recv(1000)
    if i % 2:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
time.sleep(0.5)
alive("40 PUTs and 20 GETs cut off midway")
missing = [i for i in range(20) if req("HEAD", obj_path(B, "cut%d" % i)).status != 404 or
           req("HEAD", obj_path(B, "cutc%d" % i)).status != 404]
t.check(not missing, "no cut-off PUT left an object", missing)
r = req("GET", obj_path(B, "big"))
t.check(r.status == 200 and r.body == big, "the object read by the cut-off GETs is intact")

# --- 10,000 idle connections ------------------------------------------------------------------
WANT = 10000
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    dsoft, dhard = resource.prlimit(PID, resource.RLIMIT_NOFILE)
    resource.prlimit(PID, resource.RLIMIT_NOFILE, (dhard, dhard))
except (OSError, ValueError) as e:
    t.diag("cannot raise the descriptor limits: %s" % e)
lim = min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], resource.prlimit(PID, resource.RLIMIT_NOFILE)[0])
n = min(WANT, lim - 200)
if n < WANT:
    t.diag("descriptor limits allow only %d idle connections, not %d" % (n, WANT))


def open_conns():
    r = req("GET", "/metrics", timeout=20)
    for line in r.body.decode().splitlines():
        if line.startswith("aisd_http_connections_open "):
            return int(line.split()[1])
    return -1


def idle_round(k):
    idle = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.settimeout(10)
            s.connect(("127.0.0.1", int(os.environ["AISD_PORT"])))
            idle.append(s)
    except OSError as e:
        t.diag("connect failed after %d: %s" % (len(idle), e))
    t.check(len(idle) == n, "round %d: %d idle connections open" % (k, n), len(idle))
    oc = -1
    for _ in range(150):
        oc = open_conns()
        if oc >= n:
            break
        time.sleep(0.2)
    t.check(oc >= n, "round %d: the daemon holds them all (aisd_http_connections_open >= %d)" % (k, n), oc)
    r = req("GET", obj_path(B, "big"), timeout=20)
    t.check(r.status == 200 and r.body == big, "round %d: a GET is served with %d idle connections open" % (k, n))
    for s in idle:
        s.close()
    for _ in range(150):
        if open_conns() <= 1:
            break
        time.sleep(0.2)


# The first rounds grow the heap (malloc keeps what was freed, in the
# worker's arena, fragmented: one worker here, so the rounds use the same
# one) until it has reached its size for 10,000 connections: usually by
# the second round, on a loaded machine sometimes only by the third or
# later. A leak grows it every round: so of the growths from round 3 on
# one at least must be small (up to round 6).
idle_round(1)
idle_round(2)
rss = [rss_kib()]
for k in (3, 4, 5, 6):
    idle_round(k)
    rss.append(rss_kib())
    if rss[-1] - rss[-2] < 32 * 1024:
        break
t.diag("RSS after rounds 2..%d: %s KiB" % (len(rss) + 1, rss))
grew = min(b - a for a, b in zip(rss, rss[1:]))
t.check(grew < 32 * 1024, "RSS stable across the rounds (the smallest growth from round 3 on: %d KiB)" % grew)

# --- leaks ------------------------------------------------------------------------------
fd1 = fds()
for _ in range(50):
    if fd1 <= fd0 + 5:
        break
    time.sleep(0.2)
    fd1 = fds()
rss1 = rss_kib()
t.diag("after: %d fds, RSS %d KiB" % (fd1, rss1))
t.check(fd1 <= fd0 + 5, "open descriptors back to where they were (%d -> %d)" % (fd0, fd1))
t.eq(tmp_files(), [], "no temp files left")
alive("everything")
t.finish()
