#!/usr/bin/env python3
"""test_getbatch_limits.py - GetBatch work is bounded per request and per
client address, with clear errors.

One target with getbatch.max_entries=1000, getbatch.max_bytes=40MiB,
getbatch.max_per_client=2. Checks:
 1. 1,001 entries: 400 (JSON, naming getbatch.max_entries); 1,000: 200,
    a tar of 1,000 entries.
 2. Three 16 MiB objects (48 MiB of tar): 400 before any byte (JSON, naming
    getbatch.max_bytes); two of them: 200, every byte right.
 3. Two GetBatch requests of 32 MiB whose answers the client does not
    read: a third from the same address gets 429 with Retry-After (JSON,
    naming getbatch.max_per_client); once one of the two is closed, a
    GetBatch is served again (the count comes back).
"""
# aisd-args: --set getbatch.max_entries=1000 --set getbatch.max_bytes=40MiB --set getbatch.max_per_client=2
# timeout: 120
import io
import json
import os
import socket
import tarfile
import time

from itlib import HOST, PORT, T, create_bucket, obj_path, req

t = T()
B = "gblim"
t.eq(create_bucket(B).status, 200, "bucket created")
for i in range(1000):
    r = req("PUT", obj_path(B, "s/%04d" % i), b"x%d" % i)
    if r.status != 200:
        t.check(False, "PUT of small object %d" % i, r.status)
        t.finish()
big = {}
for i in range(3):
    big["big%d" % i] = os.urandom(16 << 20)
    t.eq(req("PUT", obj_path(B, "big%d" % i), big["big%d" % i], timeout=60).status, 200, "a 16 MiB object PUT")


def body(names):
    return json.dumps({"in": [{"objname": n} for n in names], "mime": ".tar"}).encode()


def moss(names, timeout=60):
    return req("GET", "/v1/ml/moss/" + B, body(names), {"Content-Type": "application/json"}, timeout=timeout)


def err_says(r, status, words):
    try:
        d = r.json()
    except ValueError:
        return False
    return r.status == status and isinstance(d, dict) and d.get("status") == status and words in d.get("message", "")


# 1. entries per request
r = moss(["s/%04d" % (i % 1000) for i in range(1001)])
t.check(err_says(r, 400, "getbatch.max_entries"), "1,001 entries: 400 naming getbatch.max_entries",
        (r.status, r.body[:200]))
r = moss(["s/%04d" % i for i in range(1000)])
n = len(tarfile.open(fileobj=io.BytesIO(r.body)).getnames()) if r.status == 200 else -1
t.check(r.status == 200 and n == 1000, "1,000 entries: a tar of 1,000", (r.status, n))

# 2. bytes per answer
r = moss(["big0", "big1", "big2"])
t.check(err_says(r, 400, "getbatch.max_bytes"), "48 MiB of tar: 400 naming getbatch.max_bytes",
        (r.status, r.body[:200]))
r = moss(["big0", "big1"])
ok = False
if r.status == 200:
    tf = tarfile.open(fileobj=io.BytesIO(r.body))
    ok = [tf.extractfile(m).read() == big[m.name.split("/")[-1]] for m in tf.getmembers()] == [True, True]
t.check(ok, "32 MiB of tar: 200, every byte right", r.status)

# 3. GetBatch requests running at once per client address
held = []
for k in range(2):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect((HOST, PORT))
    b = body(["big0", "big1"])
    s.sendall(b"GET /v1/ml/moss/%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (B.encode(), len(b), b))
    head = s.recv(64)
    t.check(head.startswith(b"HTTP/1.1 200"), "GetBatch %d streams, its client reading nothing" % (k + 1), head)
    held.append(s)
r = moss(["s/0001"])
t.check(err_says(r, 429, "getbatch.max_per_client") and r.h("retry-after"),
        "a third at once from the same address: 429 with Retry-After naming getbatch.max_per_client",
        (r.status, r.body[:200]))
held.pop().close()
served = False
deadline = time.monotonic() + 15
while time.monotonic() < deadline and not served:
    served = moss(["s/0001"]).status == 200
    if not served:
        time.sleep(0.2)
t.check(served, "once one is closed, a GetBatch is served again")
for s in held:
    s.close()
t.finish()
