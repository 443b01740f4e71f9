"""test_s3_putsplice.py - S3 PUT bodies through the gateway by splice
(client socket -> pipe -> target socket, no byte in the gateway's user
space) with real clients, and the forward's errors mid-body. 1 gateway +
1 target on loopback ports (stopped by PID), s3.auth on (every request
SigV4-signed, verified by the target), net.body_timeout 4 s.

Checks:
 1. boto3 put_object of 72 MiB via the gateway (Expect: 100-continue)
    reads back byte for byte, and aisd_http_spliced_received_bytes_total
    grew by all but what came with the head (the body took the splice
    path); 1 MiB - 1 byte (under the threshold) is not spliced, 1 MiB + 1
    and 3 MiB (more than the pipe) are; each reads back right.
 2. Multipart: boto3 UploadPart of 6 MiB and 3 MiB parts, spliced, and
    the completed object reads back right; `/usr/bin/aws s3 cp` of 64 MiB
    (8 MiB parts) up and down, byte for byte.
 3. aws-chunked signed payload (STREAMING-AWS4-HMAC-SHA256-PAYLOAD, the
    Content-Length is the encoded length) of 6 MiB through the splice:
    stored right; the same with one byte changed after signing: 403 and
    nothing stored (the target still verifies every chunk); an 8 MiB PUT
    signed with a wrong secret: 403 (answered before the body ended).
 4. A raw client with Expect: 100-continue gets the 100 before it sends
    a byte, then 200.
 5. A client that sends half of a 16 MiB body and closes: nothing stored,
    gateway and target go on serving, and neither holds more descriptors
    than before.
 6. A target stopped (SIGSTOP) for 2 s while a client pushes 64 MiB: the
    client's sending stalls (backpressure), the gateway's RSS grows by
    less than 8 MiB; after SIGCONT the PUT completes and reads back.
    The target stopped past the timeout instead: the client gets a 5xx
    S3 error after it, nothing stored.
 7. A client that stalls mid-body: the request ends with an error (5xx
    S3 XML, or the connection closed) within 3-15 s, the gateway's RSS
    flat, nothing stored.
 8. The target killed (kill -9) mid-body: the client gets a 5xx S3 XML
    error at once (no hang).
 9. No error-level line in the nodes' logs.
"""
# timeout: 300
# log-allow: S3 proxy
import hashlib
import os
import re
import signal
import socket
import tempfile
import threading
import time

import boto3
import botocore.config
from itlib import T

import clulib
from clulib import request
from s3lib import AK, AWS_ENV, SK, REGION, boto3_client, chunked_put, run

t = T()
clulib.init(t, "putsplice", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                             "--set", "s3.auth=on", "--set", "s3.key=%s:%s:aisd-test:AIS Test" % (AK, SK),
                             "--set", "net.body_timeout=4s"])
g, ts = clulib.start_cluster(1)
tg = ts[0]
B = "putsplice"
s3 = boto3_client(g.url)
s3.create_bucket(Bucket=B)
MiB = 1 << 20


def payload(n, seed):
    block = hashlib.sha256(b"putsplice%d" % seed).digest() * 2048  # 64 KiB
    whole = block * (n // len(block) + 1)
    return whole[seed % 61:seed % 61 + n]


def pid(node):
    return clulib.procs[node.name].pid


def spliced_in():
    body = request("GET", g.url, "/metrics").body.decode()
    m = re.search(r"^aisd_http_spliced_received_bytes_total (\d+)$", body, re.M)
    return int(m.group(1)) if m else -1


def readback(key):
    return hashlib.sha256(s3.get_object(Bucket=B, Key=key)["Body"].read()).digest()


def stored(key):
    try:
        s3.head_object(Bucket=B, Key=key)
        return True
    except Exception as e:  # botocore ClientError 404
        return "404" not in str(e)


def nfds(node):
    return len(os.listdir("/proc/%d/fd" % pid(node)))


def signed_head(key, n, extra=None):
    """The head of a SigV4-signed PUT of n bytes (UNSIGNED-PAYLOAD) of key
    to the gateway, for a raw socket client."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    hd = {"X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD", "Content-Length": str(n)}
    r = AWSRequest(method="PUT", url="%s/%s/%s" % (g.url, B, key), data=b"", headers=hd)

    class Unsigned(S3SigV4Auth):
        def payload(self, request):
            return "UNSIGNED-PAYLOAD"
    Unsigned(Credentials(AK, SK), "s3", REGION).add_auth(r)
    lines = ["PUT /%s/%s HTTP/1.1" % (B, key), "Host: 127.0.0.1:%d" % g.port]
    lines += ["%s: %s" % kv for kv in r.headers.items() if kv[0].lower() != "host"]
    lines += ["%s: %s" % kv for kv in (extra or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def raw_put(key, n, extra=None):
    s = socket.create_connection(("127.0.0.1", g.port), timeout=30)
    s.sendall(signed_head(key, n, extra))
    return s


def read_answer(s, limit):
    """Reads until the gateway closes or limit seconds: (bytes, seconds)."""
    t0, got = time.monotonic(), b""
    s.settimeout(0.5)
    while time.monotonic() - t0 < limit:
        try:
            c = s.recv(65536)
        except socket.timeout:
            if got.startswith(b"HTTP/1.1 ") and b"</Error>" in got:
                break
            continue
        except OSError:
            break
        if not c:
            break
        got += c
    return got, time.monotonic() - t0


# 1. boto3, sizes around the threshold and beyond the pipe
for key, n, want in (("big", 72 * MiB, True), ("under", MiB - 1, False), ("over", MiB + 1, True),
                     ("pipe3", 3 * MiB, True)):
    data = payload(n, n)
    before = spliced_in()
    s3.put_object(Bucket=B, Key=key, Body=data)
    grew = spliced_in() - before
    t.check(readback(key) == hashlib.sha256(data).digest(), "boto3 PUT of %d bytes via the gateway reads back right" % n)
    if want:
        t.check(before >= 0 and n - 64 * 1024 <= grew <= n,
                "... its body was spliced (aisd_http_spliced_received_bytes_total +%d of %d)" % (grew, n))
    else:
        t.check(before >= 0 and grew == 0, "... under the threshold, not spliced (+%d)" % grew)

# 2. multipart: boto3 parts, then the AWS CLI
parts = [payload(6 * MiB, 6), payload(3 * MiB, 3)]
up = s3.create_multipart_upload(Bucket=B, Key="mpu")["UploadId"]
before = spliced_in()
etags = [s3.upload_part(Bucket=B, Key="mpu", UploadId=up, PartNumber=i + 1, Body=p)["ETag"]
         for i, p in enumerate(parts)]
grew = spliced_in() - before
s3.complete_multipart_upload(Bucket=B, Key="mpu", UploadId=up, MultipartUpload={
    "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
t.check(readback("mpu") == hashlib.sha256(b"".join(parts)).digest(), "a multipart upload of 2 parts reads back right")
t.check(9 * MiB - 128 * 1024 <= grew <= 9 * MiB, "... its parts were spliced (+%d of %d)" % (grew, 9 * MiB))

if t.check(os.path.exists("/usr/bin/aws"), "Debian's AWS CLI v2 is installed (/usr/bin/aws; make deps)"):
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "up"), os.path.join(d, "down")
        data = payload(64 * MiB, 64)
        with open(src, "wb") as f:
            f.write(data)
        before = spliced_in()
        rc, out = run(["/usr/bin/aws", "--endpoint-url", g.url, "s3", "cp", "--only-show-errors", src,
                       "s3://%s/cli" % B], env=AWS_ENV)
        grew = spliced_in() - before
        t.check(rc == 0, "aws s3 cp of 64 MiB up via the gateway", out[-500:])
        t.check(64 * MiB - MiB <= grew <= 64 * MiB, "... its body was spliced (+%d)" % grew)
        rc, out = run(["/usr/bin/aws", "--endpoint-url", g.url, "s3", "cp", "--only-show-errors",
                       "s3://%s/cli" % B, dst], env=AWS_ENV)
        same = rc == 0 and open(dst, "rb").read() == data
        t.check(same, "... and down, byte for byte", out[-500:])

# 3. aws-chunked signed payload through the splice
data = payload(6 * MiB, 7)
before = spliced_in()
st, body = chunked_put(g.url, B, "chunked", data, signed=True)
grew = spliced_in() - before
t.check(st == 200 and readback("chunked") == hashlib.sha256(data).digest(),
        "an aws-chunked signed PUT of 6 MiB via the gateway is stored right", (st, body[:300]))
t.check(grew >= 6 * MiB - 64 * 1024, "... its encoded body was spliced (+%d)" % grew)
st, body = chunked_put(g.url, B, "tampered", data, signed=True, tamper=True)
t.check(st == 403 and b"SignatureDoesNotMatch" in body and not stored("tampered"),
        "a chunk changed after signing: 403, nothing stored (the target verified it)", (st, body[:300]))

bad = boto3.client("s3", endpoint_url=g.url, aws_access_key_id=AK, aws_secret_access_key="not-the-secret",
                   region_name=REGION, config=botocore.config.Config(s3={"addressing_style": "path"},
                                                                     retries={"max_attempts": 1}))
try:
    bad.put_object(Bucket=B, Key="badsig", Body=payload(8 * MiB, 8))
    st = 200
except Exception as e:  # botocore ClientError
    st = e.response["ResponseMetadata"]["HTTPStatusCode"] if hasattr(e, "response") else str(e)
t.check(st == 403 and not stored("badsig"), "a wrong secret: 403 while the body is spliced, nothing stored", st)

# 4. Expect: 100-continue before any body byte
data = payload(2 * MiB, 2)
s = raw_put("expect", len(data), {"Expect": "100-continue"})
s.settimeout(5)
first = b""
try:
    while b"\r\n\r\n" not in first:
        c = s.recv(1)
        if not c:
            break
        first += c
except OSError:
    pass
t.check(first.startswith(b"HTTP/1.1 100"), "Expect: 100-continue: the 100 comes before the body", first[:100])
s.sendall(data)
ans, _ = read_answer(s, 10)
s.close()
t.check(ans.startswith(b"HTTP/1.1 200") and readback("expect") == hashlib.sha256(data).digest(),
        "... then 200, stored right", ans[:200])

# 5. half the body, then the client closes
for i in range(2):  # (the pooled connections of a normal PUT in place first)
    s3.put_object(Bucket=B, Key="warm%d" % i, Body=payload(2 * MiB, i))
fd0 = (nfds(g), nfds(tg))
for i in range(3):
    s = raw_put("half%d" % i, 16 * MiB)
    s.sendall(payload(8 * MiB, 8))
    time.sleep(0.3)
    s.close()
time.sleep(0.5)
t.check(not any(stored("half%d" % i) for i in range(3)), "a client that sent half its body and closed: nothing stored")
data = payload(2 * MiB, 5)
s3.put_object(Bucket=B, Key="after", Body=data)
t.check(readback("after") == hashlib.sha256(data).digest(), "... gateway and target go on serving")
fd1 = fd0
for _ in range(20):
    fd1 = (nfds(g), nfds(tg))
    if fd1[0] <= fd0[0] and fd1[1] <= fd0[1]:
        break
    time.sleep(0.25)
t.check(fd1[0] <= fd0[0] and fd1[1] <= fd0[1], "... no descriptor left behind (gateway, target: %s -> %s)" %
        (fd0, fd1))

# 6. a target that stops reading: the client is held back, memory flat
data = payload(64 * MiB, 9)
base = clulib.rss_kib(pid(g))
s = raw_put("held", len(data))
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
s.sendall(data[:4 * MiB])
os.kill(pid(tg), signal.SIGSTOP)
sent, peak = 4 * MiB, base
s.settimeout(0.2)
try:
    t0 = time.monotonic()
    while time.monotonic() - t0 < 2 and sent < len(data):
        try:
            sent += s.send(data[sent:sent + 256 * 1024])
        except socket.timeout:
            pass
        peak = max(peak, clulib.rss_kib(pid(g)))
finally:
    os.kill(pid(tg), signal.SIGCONT)
t.diag("target stopped 2 s: the client sent %d MiB, gateway RSS %d -> %d KiB" % (sent >> 20, base, peak))
t.check(sent < 40 * MiB, "a stopped target holds the client back (%d of %d bytes sent in 2 s)" % (sent, len(data)))
t.check(peak - base < 8 << 10, "... the gateway's RSS grew by less than 8 MiB (%d KiB)" % (peak - base))
s.settimeout(30)
s.sendall(data[sent:])
ans, _ = read_answer(s, 20)
s.close()
t.check(ans.startswith(b"HTTP/1.1 200") and readback("held") == hashlib.sha256(data).digest(),
        "... then the PUT completes and reads back right", ans[:200])

# 6b. a target that stays stopped past net.body_timeout while the client pushes
data = payload(32 * MiB, 10)
s = raw_put("stalled", len(data))
s.sendall(data[:2 * MiB])
time.sleep(0.3)
os.kill(pid(tg), signal.SIGSTOP)


def push(sock, rest):
    try:
        sock.sendall(rest)
    except OSError:  # the gateway answered and closed: expected
        pass


pusher = threading.Thread(target=push, args=(s, data[2 * MiB:]), daemon=True)
try:
    pusher.start()
    ans, secs = read_answer(s, 20)
finally:
    os.kill(pid(tg), signal.SIGCONT)
try:
    s.shutdown(socket.SHUT_RDWR)  # (ends the pusher's send)
except OSError:  # closed by the gateway already
    pass
pusher.join(10)
s.close()
t.check(ans.startswith(b"HTTP/1.1 5") and b"<Error>" in ans and 3 <= secs <= 15,
        "a target stopped mid-body past the timeout: the client gets an S3 5xx error (%.1f s)" % secs, ans[:300])
t.check(not stored("stalled"), "... nothing stored")

# 7. a client that stalls mid-body
base = clulib.rss_kib(pid(g))
s = raw_put("stall", 16 * MiB)
s.sendall(payload(5 * MiB, 11))
ans, secs = read_answer(s, 20)
s.close()
peak = clulib.rss_kib(pid(g))
t.check((ans == b"" or ans.startswith(b"HTTP/1.1 5") and b"<Error>" in ans) and 3 <= secs <= 15,
        "a client that stalls mid-body: an S3 error or the connection closed after the timeout (%.1f s)" % secs,
        ans[:300])
t.check(peak - base < 8 << 10, "... the gateway's RSS flat (%d KiB more)" % (peak - base))
t.check(not stored("stall"), "... nothing stored")

# 8. the target killed mid-body
s = raw_put("killed", 32 * MiB)
s.sendall(payload(3 * MiB, 13))
time.sleep(0.5)
tg.kill9()
ans, secs = read_answer(s, 20)
s.close()
t.check(ans.startswith(b"HTTP/1.1 5") and b"<Error>" in ans and secs < 3,
        "a target killed mid-body: the client gets an S3 5xx error at once (%.1f s)" % secs, ans[:300])
r = request("GET", g.url, "/v1/health", timeout=5)
t.eq(r.status, 200, "the gateway answers its health check")

clulib.check_logs([g])
t.finish()
