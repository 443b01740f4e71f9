"""test_s3_forward.py - the gateway's S3 forward over the node-to-node
transport, under a slow client and a target that dies mid-answer.
1 gateway + 1 target on loopback ports (stopped by PID), s3.auth off.

Checks:
 1. A 96 MiB object read through the gateway by a client that reads
    64 KiB every 5 ms for 3 s: the gateway's RSS grows by less than
    24 MiB (the forward holds a bounded relay buffer, the target waits),
    then the rest arrives fast and every byte is right.
 2. kill -9 of the target while the gateway relays a large answer: the
    client's body is cut short (never a complete-looking answer), and
    the gateway answers its health check at once.
 3. A 40 MiB upload through the gateway read back byte for byte.
 4. No error-level line in the nodes' logs but the forward's own.
"""
# timeout: 180
# log-allow: S3 proxy
import hashlib
import os
import time

from itlib import T

import clulib
from clulib import request

t = T()
clulib.init(t, "s3fwd", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                         "--set", "s3.auth=off"])
g, ts = clulib.start_cluster(1)
tg = ts[0]
B = "fwd"
t.eq(request("POST", g.url, "/v1/buckets/" + B, b'{"action":"create-bck"}',
             {"Content-Type": "application/json"}).status, 200, "create the bucket")

SIZE = 96 << 20
block = hashlib.sha256(b"fwd").digest() * 2048  # 64 KiB
data = b"".join(block[i % 7:] + block[:i % 7] for i in range(SIZE // len(block)))
r = request("PUT", tg.url, "/v1/objects/%s/big" % B, data, {"Ais-Intra": "test"}, timeout=120)
t.eq(r.status, 200, "a 96 MiB object on the target")


def gw_pid():
    return clulib.procs[g.name].pid


def open_get(path):
    return clulib.raw_get(g, path)


# 1. a slow client
base = clulib.rss_kib(gw_pid())
s, head = open_get("/%s/big" % B)
t.check(head.startswith(b"HTTP/1.1 200") and b"Content-Length: %d" % SIZE in head, "S3 GET via the gateway: 200, sized",
        head[:200])
h = hashlib.sha256()
n, peak, t0 = 0, base, time.monotonic()
while time.monotonic() - t0 < 3:
    c = s.recv(64 << 10)
    if not c:
        break
    h.update(c)
    n += len(c)
    peak = max(peak, clulib.rss_kib(gw_pid()))
    time.sleep(0.005)
t.diag("slow phase: %d MiB read, gateway RSS %d -> %d KiB" % (n >> 20, base, peak))
t.check(n < SIZE, "the client was slower than the target (%d of %d bytes in 3 s)" % (n, SIZE))
t.check(peak - base < 24 << 10, "the gateway's RSS grew by less than 24 MiB under the slow client (%d KiB)" % (peak - base))
s.settimeout(60)
while n < SIZE:
    c = s.recv(1 << 20)
    if not c:
        break
    h.update(c)
    n += len(c)
s.close()
t.check(n == SIZE and h.digest() == hashlib.sha256(data).digest(), "then every byte arrived, right (%d)" % n)

# 3. an upload through the gateway
up = data[: 40 << 20]
r = request("PUT", g.url, "/%s/up" % B, up, timeout=120)
t.eq(r.status, 200, "S3 PUT of 40 MiB via the gateway")
r = request("GET", tg.url, "/v1/objects/%s/up" % B, headers={"Ais-Intra": "test"}, timeout=120)
t.check(r.status == 200 and r.body == up, "read back on the target byte for byte", (r.status, len(r.body)))

# 2. the target dies mid-answer
s, head = open_get("/%s/big" % B)
got = 0
while got < 1 << 20:
    c = s.recv(64 << 10)
    if not c:
        break
    got += len(c)
tg.kill9()
s.settimeout(20)
try:
    while True:
        c = s.recv(1 << 20)
        if not c:
            break
        got += len(c)
except OSError:
    pass
s.close()
t.check(got < SIZE, "the target's death cuts the client's body short (%d of %d bytes)" % (got, SIZE))
t0 = time.monotonic()
r = request("GET", g.url, "/v1/health", timeout=5)
t.check(r.status == 200 and time.monotonic() - t0 < 2, "the gateway answers its health check at once")

clulib.check_logs([g])
t.finish()
