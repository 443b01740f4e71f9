#!/usr/bin/env python3
"""test_bodymem.py - request bodies cannot exhaust a node's memory: 20
connections each send a 24 MiB GetBatch body (16 with Content-Length, 4
chunked) and hold it one byte short of its end. The node's RSS stays under
its start + net.max_buffered_body (64 MiB here) + 48 MiB; the connections
that do not fit get 503 with Retry-After, a body larger than the whole
budget 413; once they are gone a GetBatch is served again.
"""
# aisd-args: --set net.max_buffered_body=64MiB
# timeout: 180
import json
import os
import socket
import time
import urllib.parse

from itlib import T, req

t = T()
U = urllib.parse.urlsplit(os.environ["AISD_URL"])
PID = int(os.environ["AISD_PID"])
NCONN, BODY, CAP = 20, 24 << 20, 64 << 20


def rss():
    with open("/proc/%d/status" % PID) as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1]) * 1024
    return 0


def status_of(s, wait):
    s.settimeout(wait)
    try:
        d = s.recv(4096)
        return int(d.split(b" ", 2)[1]) if d.startswith(b"HTTP/1.1 ") else None, d
    except (OSError, ValueError, IndexError):
        return None, b""


base = rss()
filler = b" " * (1 << 20)
held, answered = [], []
for i in range(NCONN):
    s = socket.create_connection((U.hostname, U.port), timeout=10)
    chunked = i % 5 == 4
    head = "GET /v1/ml/moss HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else "Content-Length: %d\r\n\r\n" % BODY
    try:
        s.sendall(head.encode())
        left = BODY - 1
        while left > 0:
            piece = filler[:min(len(filler), left)]
            s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            left -= len(piece)
    except OSError:
        pass  # answered (503) and closed while sending
    held.append(s)
time.sleep(1)
peak = rss()
t.diag("RSS at start %.0f MiB, with %d bodies held %.0f MiB" % (base / 2**20, NCONN, peak / 2**20))
# a sanitizer build keeps freed memory in its quarantine (256 MiB by
# default): the refused bodies' buffers stay counted in the RSS there
with open("/proc/%s/maps" % os.environ["AISD_PID"]) as f:
    asan = "libasan" in f.read()
margin = (48 << 20) + ((256 << 20) if asan else 0)
t.check(peak < base + CAP + margin, "RSS stays under start + net.max_buffered_body + %d MiB%s" %
        (margin >> 20, " (AddressSanitizer's quarantine included)" if asan else ""), "%.0f MiB" % (peak / 2**20))
codes = [status_of(s, 0.5) for s in held]
busy = [d for c, d in codes if c == 503]
t.check(len(busy) >= NCONN - CAP // BODY - 1, "the bodies that do not fit get 503 (%d of %d)" % (len(busy), NCONN))
t.check(all(b"retry-after: 1" in d.lower() and b"max_buffered_body" in d for d in busy),
        "... with Retry-After and the reason")
for s in held:
    s.close()
time.sleep(0.5)
s = socket.create_connection((U.hostname, U.port), timeout=10)
s.sendall(b"GET /v1/ml/moss HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (CAP + 1))
t.eq(status_of(s, 5)[0], 413, "a body larger than the whole budget: 413 before it is sent")
s.close()
body = json.dumps({"in": [{"objname": "nope", "bucket": "nob"}]})
r = req("GET", "/v1/ml/moss", body=body, headers={"Content-Type": "application/json"})
t.check(r.status not in (503, 413), "with the connections gone the budget is free: GetBatch is answered (%d)" % r.status, r)
t.finish()
