"""test_xport.py - the gateway's zero-copy S3 forward (target socket ->
pipe -> client socket by splice) against a slow client, a target that
stalls mid-body and one that dies mid-splice. 1 gateway + 1 target on
loopback ports (stopped by PID), s3.auth off, net.body_timeout 4 s.

Checks:
 1. A 96 MiB object (the pipe holds 1 MiB) read through the gateway:
    every byte right, and aisd_http_spliced_bytes_total grew by all but
    what came with the answer's head (the bytes took the splice path);
    then small GETs through the gateway (over the connections the large
    answers used, which wake for every byte again) each answer at once.
 2. A slow client (48 KiB every 50 ms for 6 s): the gateway's RSS grows
    by less than 8 MiB, it spends less than 1.5 s of CPU in those 6 s (the
    forward waits while the pipe is full instead of spinning on it), the
    answer is not cut, then the rest arrives fast and every byte is right.
 3. The target stopped (SIGSTOP) mid-body: the client's connection
    closes after the timeout (3-15 s), its body short; the gateway spends
    less than 1.5 s of CPU meanwhile and answers its health check.
 4. The target killed (kill -9) mid-splice: the client's connection
    closes within 2 s (the end of the target's socket, not the timeout),
    its body short; the gateway answers its health check.
 5. No error-level line in the nodes' logs.
"""
# timeout: 180
# log-allow: S3 proxy
import hashlib
import os
import re
import signal
import socket
import time

from itlib import T

import clulib
from clulib import request

t = T()
clulib.init(t, "xport", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                         "--set", "s3.auth=off", "--set", "net.body_timeout=4s"])
g, ts = clulib.start_cluster(1)
tg = ts[0]
B = "xp"
t.eq(request("POST", g.url, "/v1/buckets/" + B, b'{"action":"create-bck"}',
             {"Content-Type": "application/json"}).status, 200, "create the bucket")

SIZE = 96 << 20
block = hashlib.sha256(b"xport").digest() * 2048  # 64 KiB
data = b"".join(block[i % 5:] + block[:i % 5] for i in range(SIZE // len(block)))
SHA = hashlib.sha256(data).digest()
r = request("PUT", tg.url, "/v1/objects/%s/big" % B, data, {"Ais-Intra": "test"}, timeout=120)
t.eq(r.status, 200, "a 96 MiB object on the target")
small = data[:1000]
r = request("PUT", tg.url, "/v1/objects/%s/small" % B, small, {"Ais-Intra": "test"})
t.eq(r.status, 200, "a small object on the target")
HZ = os.sysconf("SC_CLK_TCK")


def gw_pid():
    return clulib.procs[g.name].pid


def cpu_s(pid):
    """User + system CPU seconds of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / HZ


def spliced():
    body = request("GET", g.url, "/metrics").body.decode()
    m = re.search(r"^aisd_http_spliced_bytes_total (\d+)$", body, re.M)
    return int(m.group(1)) if m else -1


def open_get(path, rcvbuf=64 << 10):
    s, head = clulib.raw_get(g, path, rcvbuf)
    t.check(head.startswith(b"HTTP/1.1 200") and b"Content-Length: %d" % SIZE in head,
            "S3 GET via the gateway: 200, sized", head[:200])
    return s


def read_rest(s, h, n, timeout=20):
    s.settimeout(timeout)
    while n < SIZE:
        try:
            c = s.recv(1 << 20)
        except OSError as e:  # a timeout: the answer stalled
            t.diag("reading the answer: %s" % e)
            break
        if not c:
            break
        h.update(c)
        n += len(c)
    return n


def read_until_closed(s, got, limit):
    """Reads until the gateway closes the connection: (bytes, seconds,
    closed) — closed False when limit seconds passed first."""
    t0 = time.monotonic()
    s.settimeout(0.5)
    while time.monotonic() - t0 < limit:
        try:
            c = s.recv(1 << 20)
        except socket.timeout:
            continue
        except OSError:  # reset: closed too
            return got, time.monotonic() - t0, True
        if not c:
            return got, time.monotonic() - t0, True
        got += len(c)
    return got, time.monotonic() - t0, False


# 1. a body much larger than the pipe, read fast
before = spliced()
s = open_get("/%s/big" % B, rcvbuf=4 << 20)
h = hashlib.sha256()
n = read_rest(s, h, 0)
s.close()
t.check(n == SIZE and h.digest() == SHA, "96 MiB through the gateway, every byte right (%d)" % n)
grew = spliced() - before
t.check(before >= 0 and SIZE - (1 << 20) <= grew <= SIZE,
        "the body went by splice: aisd_http_spliced_bytes_total grew by %d of %d" % (grew, SIZE))
for _ in range(2):  # (each of the gateway's workers has a pooled connection that spliced)
    s = open_get("/%s/big" % B, rcvbuf=4 << 20)
    n = read_rest(s, hashlib.sha256(), 0)
    s.close()
slow = []
for i in range(12):
    t0 = time.monotonic()
    r = request("GET", g.url, "/%s/small" % B, timeout=10)
    if r.status != 200 or r.body != small or time.monotonic() - t0 > 1:
        slow.append((r.status, len(r.body), round(time.monotonic() - t0, 1)))
t.check(not slow, "then 12 small GETs through the gateway answer at once, right", slow)

# 2. a slow client
base, c0 = clulib.rss_kib(gw_pid()), cpu_s(gw_pid())
s = open_get("/%s/big" % B)
h = hashlib.sha256()
n, peak, t0 = 0, base, time.monotonic()
cut = False
while time.monotonic() - t0 < 6:
    c = s.recv(48 << 10)
    if not c:
        cut = True
        break
    h.update(c)
    n += len(c)
    peak = max(peak, clulib.rss_kib(gw_pid()))
    time.sleep(0.05)
used = cpu_s(gw_pid()) - c0
t.diag("slow phase: %d KiB read, gateway RSS %d -> %d KiB, CPU %.2f s" % (n >> 10, base, peak, used))
t.check(not cut and n < SIZE, "the client was slower than the target, and not cut off (%d of %d bytes in 6 s)" %
        (n, SIZE))
t.check(peak - base < 8 << 10, "the gateway's RSS grew by less than 8 MiB under the slow client (%d KiB)" %
        (peak - base))
t.check(used < 1.5, "the gateway waited for the slow client without spinning (%.2f s CPU in 6 s)" % used)
n = read_rest(s, h, n)
s.close()
t.check(n == SIZE and h.digest() == SHA, "then every byte arrived, right (%d)" % n)

# 3. the target stalls mid-body
s = open_get("/%s/big" % B)
got = 0
while got < 2 << 20:
    got += len(s.recv(64 << 10))
tpid = clulib.procs[tg.name].pid
os.kill(tpid, signal.SIGSTOP)
c0 = cpu_s(gw_pid())
try:
    got, secs, closed = read_until_closed(s, got, 20)
    used = cpu_s(gw_pid()) - c0
finally:
    os.kill(tpid, signal.SIGCONT)
s.close()
t.check(closed and 3 <= secs <= 15, "a stalled target: the client's connection closed after the timeout (%.1f s)" %
        secs)
t.check(got < SIZE, "... its body cut short (%d of %d bytes)" % (got, SIZE))
t.check(used < 1.5, "... the gateway idle meanwhile (%.2f s CPU)" % used)
r = request("GET", g.url, "/v1/health", timeout=5)
t.eq(r.status, 200, "the gateway answers its health check")

# 4. the target dies mid-splice
s = open_get("/%s/big" % B)
got = 0
while got < 2 << 20:
    got += len(s.recv(64 << 10))
tg.kill9()
got, secs, closed = read_until_closed(s, got, 20)
s.close()
t.check(closed and secs < 2, "a target killed mid-splice: the client's connection closed at once (%.1f s)" % secs)
t.check(got < SIZE, "... its body cut short (%d of %d bytes)" % (got, SIZE))
t0 = time.monotonic()
r = request("GET", g.url, "/v1/health", timeout=5)
t.check(r.status == 200 and time.monotonic() - t0 < 2, "the gateway answers its health check at once")

clulib.check_logs([g])
t.finish()
