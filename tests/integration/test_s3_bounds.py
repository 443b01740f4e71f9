"""test_s3_bounds.py - what one S3 client can make a node hold, and what the
S3 forward tells clients. 1 gateway + 1 target on loopback ports (stopped
by PID), s3.auth off, net.max_buffered_body=300KiB, s3.max_uploads=5,
net.body_timeout=5s.

Checks:
 1. An S3 GET through the gateway: the answer never carries the target's
    Ais-Local-Socket (a path on the target's host: at most the gateway's
    own, for a client on its host).
 2. S3 XML bodies count in net.max_buffered_body: while one DeleteObjects
    of 200 KiB is held half sent, a second one (Content-Length 200 KiB)
    gets 503 ServiceUnavailable with Retry-After at once, and a chunked
    one once its bytes pass the budget; one over the whole budget 400
    EntityTooLarge. When the first completes (200, every key deleted) the
    budget is back: the same request then succeeds.
 3. s3.max_uploads: 5 multipart uploads in progress in a bucket, the 6th
    CreateMultipartUpload is 400 TooManyUploads; another bucket is not
    affected; after an Abort a new one is created.
 4. A PUT through the gateway to a target that stalls (SIGSTOP) past
    net.body_timeout: 500 InternalError whose Message names the request
    as sent (method, the target's URL, the path) in clean text, nothing
    else (it once held bytes of a stack frame that had returned).
 5. No error-level line in the nodes' logs.
"""
# timeout: 120
# log-allow: S3 proxy
import os
import re
import signal
import socket
import time
import xml.etree.ElementTree as ET

import clulib
from clulib import request
from itlib import T

t = T()
clulib.init(t, "s3bounds", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                            "--set", "s3.auth=off", "--set", "net.max_buffered_body=300KiB",
                            "--set", "s3.max_uploads=5", "--set", "net.body_timeout=5s"])
g, (tg,) = clulib.start_cluster(1)


def s3(method, path, body=None, headers=None, timeout=30):
    return request(method, g.url, path, body, headers, timeout=timeout)


def code_of(body):
    try:
        x = ET.fromstring(body)
        return x.findtext("Code"), x.findtext("Message")
    except ET.ParseError:
        return None, None


def open_conn():
    s = socket.create_connection(("127.0.0.1", g.port), timeout=10)
    return s


def read_answer(s, timeout):
    """(status, lower-case headers, body, [(name, value)] in order) of one
    answer on s, or None when none came within timeout seconds."""
    s.settimeout(timeout)
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            c = s.recv(65536)
            if not c:
                return None
            buf += c
        head, rest = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        pairs = []
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            pairs.append((k.strip().lower(), v.strip()))
        hdrs = dict(pairs)
        n = int(hdrs.get("content-length", "0"))
        while len(rest) < n:
            c = s.recv(65536)
            if not c:
                break
            rest += c
        return int(lines[0].split()[1]), hdrs, rest, pairs
    except (socket.timeout, OSError):
        return None


t.eq(s3("PUT", "/bk1").status, 200, "CreateBucket bk1")
t.eq(s3("PUT", "/bk2").status, 200, "CreateBucket bk2")

# 1. the target's Ais-Local-Socket stays in the cluster
t.eq(s3("PUT", "/bk1/obj", b"x" * 4096).status, 200, "PutObject through the gateway")
c = open_conn()
c.sendall(b"GET /bk1/obj HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
a = read_answer(c, 10)
c.close()
t.check(a is not None and a[0] == 200 and a[2] == b"x" * 4096, "S3 GET through the gateway: 200", a and a[:2])
socks = [v for k, v in (a[3] if a else []) if k == "ais-local-socket"]
tdir = os.path.realpath(tg.dir)
t.check(not any(os.path.realpath(p).startswith(tdir + os.sep) for p in socks),
        "the answer does not carry the target's Ais-Local-Socket", socks)
t.check(len(socks) <= 1, "at most one Ais-Local-Socket (the gateway's own)", socks)

# 2. S3 XML bodies in net.max_buffered_body
keys = ["k%04d-%s" % (i, "p" * 190) for i in range(1000)]
doc = ("<Delete>" + "".join("<Object><Key>%s</Key></Object>" % k for k in keys) + "</Delete>").encode()
t.check(200 << 10 <= len(doc) < 300 << 10, "a DeleteObjects body of %d bytes" % len(doc))
head = b"POST /bk1?delete HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" % len(doc)
held = open_conn()
held.sendall(head + doc[:1024])
time.sleep(0.3)
second = open_conn()
t0 = time.monotonic()
second.sendall(head)
a = read_answer(second, 5)
second.close()
t.check(a is not None and a[0] == 503 and code_of(a[2])[0] == "ServiceUnavailable" and a[1].get("retry-after"),
        "a second 200 KiB XML body while one is held: 503 ServiceUnavailable, Retry-After, at once (%.1f s)" %
        (time.monotonic() - t0), a and (a[0], a[2][:300]))
# a chunked one: refused once its bytes pass what is left
ch = open_conn()
ch.sendall(b"POST /bk1?delete HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
a = None
for i in range(0, 160 << 10, 16 << 10):
    try:
        ch.sendall(b"%x\r\n%s\r\n" % (16 << 10, doc[i:i + (16 << 10)]))
    except OSError:
        break
a = read_answer(ch, 5)
ch.close()
t.check(a is not None and a[0] == 503 and code_of(a[2])[0] == "ServiceUnavailable",
        "a chunked XML body past the budget: 503 ServiceUnavailable", a and (a[0], a[2][:300]))
r = s3("POST", "/bk1?delete", b" " * (301 << 10))
t.check(r.status == 400 and code_of(r.body)[0] == "EntityTooLarge", "an XML body over the whole budget: 400 EntityTooLarge",
        (r.status, r.body[:300]))
held.sendall(doc[1024:])
a = read_answer(held, 30)
held.close()
t.check(a is not None and a[0] == 200 and a[2].count(b"<Deleted>") == 1000,
        "the held DeleteObjects completes: 200, 1000 keys deleted", a and (a[0], a[2][:300]))
r = s3("POST", "/bk1?delete", doc)
t.check(r.status == 200 and r.body.count(b"<Deleted>") == 1000, "its budget is back: the same request again, 200",
        (r.status, r.body[:300]))


# 3. s3.max_uploads
def create_mpu(bck, key):
    r = s3("POST", "/%s/%s?uploads" % (bck, key))
    m = re.search(rb"<UploadId>([0-9a-f]+)</UploadId>", r.body)
    return r.status, code_of(r.body), m.group(1).decode() if m else None


ids = [create_mpu("bk1", "big%d" % i) for i in range(5)]
t.check(all(st == 200 and uid for st, _, uid in ids), "5 multipart uploads in bk1", ids)
st, (code, msg), _ = create_mpu("bk1", "big5")
t.check(st == 400 and code == "TooManyUploads" and "s3.max_uploads" in (msg or ""),
        "the 6th CreateMultipartUpload in bk1: 400 TooManyUploads", (st, code, msg))
st, _, other = create_mpu("bk2", "big0")
t.check(st == 200 and other, "another bucket is not affected", st)
r = s3("DELETE", "/bk1/big0?uploadId=" + ids[0][2])
t.eq(r.status, 204, "AbortMultipartUpload")
st, _, uid = create_mpu("bk1", "big6")
t.check(st == 200 and uid, "after an Abort a new upload is created", st)

# 4. a stalled target: the forward's error message is the request as sent
def stopped(pid):
    """Every thread of pid is stopped (a signal is delivered asynchronously)."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
        return all(open("/proc/%d/task/%s/stat" % (pid, x)).read().rsplit(")", 1)[1].split()[0] == "T" for x in tids)
    except OSError:
        return False


os.kill(clulib.procs[tg.name].pid, signal.SIGSTOP)
try:
    t.check(clulib.poll(lambda: stopped(clulib.procs[tg.name].pid), 10), "the target is stopped (SIGSTOP)")
    t0 = time.monotonic()
    r = s3("PUT", "/bk1/stalled", b"y" * 1000, timeout=30)
    took = time.monotonic() - t0
finally:
    os.kill(clulib.procs[tg.name].pid, signal.SIGCONT)
code, msg = code_of(r.body)
t.check(r.status == 500 and code == "InternalError", "PUT to a stalled target: 500 InternalError (%.1f s)" % took,
        (r.status, r.body[:400]))
want = "the owner target did not answer: PUT %s/bk1/stalled: no progress within the timeout" % tg.url
t.eq(msg, want, "its Message names the request as sent, in clean text")
t.check(msg is not None and all(32 <= ord(ch) < 127 for ch in msg), "no stray bytes in the Message", repr(msg))
t.check(clulib.poll(lambda: request("GET", tg.url, "/v1/health").status == 200, 10), "the target is back")

clulib.check_logs([g, tg])
t.finish()
