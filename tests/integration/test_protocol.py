"""test_protocol.py - HTTP/1.1 on the wire, with raw sockets: keep-alive,
pipelining, a request split at every byte, malformed requests, framing
conflicts, size limits (431/414), an unknown Expect 417 but an empty one
served, HTTP/1.0, 405 with Allow, 404, and the
header, idle and body timeouts; an abrupt disconnect mid-PUT leaves nothing
behind and the daemon keeps serving.
"""
# aisd-args: --set net.header_timeout=1s --set net.idle_timeout=2s --set net.body_timeout=2s
import os
import socket
import struct
import time

from itlib import Reader, T, conn, create_bucket, exchange, obj_path, raw, req, tmp_files

t = T()
B = "proto"
t.eq(create_bucket(B).status, 200, "create bucket")
H = b"Host: 127.0.0.1\r\n"


def get(path):
    return ("GET %s HTTP/1.1\r\n" % path).encode() + H + b"\r\n"


def put(path, body, extra=b""):
    return (("PUT %s HTTP/1.1\r\n" % path).encode() + H + extra
            + b"Content-Length: %d\r\n\r\n" % len(body) + body)


def healthy(what):
    r = req("GET", "/v1/health")
    t.check(r.status == 200, "the daemon still serves after %s" % what, r)


# --- keep-alive -------------------------------------------------------------
s = raw()
rd = Reader(s)
statuses = []
for i in range(5):
    s.sendall(get("/v1/health"))
    statuses.append(rd.response().status)
t.eq(statuses, [200] * 5, "5 requests on one keep-alive connection")
s.close()
c = conn()
r1 = req("GET", "/v1/health", c=c)
sock1 = c.sock
r2 = req("PUT", obj_path(B, "ka"), b"keepalive", c=c)
r3 = req("GET", obj_path(B, "ka"), c=c)
t.check(r1.status == r2.status == r3.status == 200 and r3.body == b"keepalive" and c.sock is sock1,
        "http.client reuses its connection for GET, PUT, GET")
c.close()

# --- pipelining -----------------------------------------------------------------
A = os.urandom(5000)
Bb = os.urandom(70000)
chunked_b = b"".join(b"%x\r\n%s\r\n" % (len(Bb[i:i + 30000]), Bb[i:i + 30000]) for i in range(0, len(Bb), 30000))
batch = (put(obj_path(B, "p1"), A) + get(obj_path(B, "p1"))
         + ("HEAD %s HTTP/1.1\r\n" % obj_path(B, "p1")).encode() + H + b"\r\n"
         + get("/v1/health")
         + ("PUT %s HTTP/1.1\r\n" % obj_path(B, "p2")).encode() + H
         + b"Transfer-Encoding: chunked\r\n\r\n" + chunked_b + b"0\r\n\r\n"
         + get(obj_path(B, "p2"))
         + ("DELETE %s HTTP/1.1\r\n" % obj_path(B, "p1")).encode() + H + b"\r\n"
         + get(obj_path(B, "p1"))
         + get(obj_path(B, "p1") + "?x=" + "y" * 100))
methods = ["PUT", "GET", "HEAD", "GET", "PUT", "GET", "DELETE", "GET", "GET"]
s = raw()
s.sendall(batch)
rd = Reader(s)
got = []
try:
    for m in methods:
        got.append(rd.response(m))
except (EOFError, OSError, ValueError) as e:
    t.fail("pipelined responses", repr(e))
t.eq([r.status for r in got], [200, 200, 200, 200, 200, 200, 200, 404, 404],
     "9 pipelined requests in one send: statuses in order")
if len(got) == 9:
    t.check(got[1].body == A, "pipelined GET after PUT returns the data")
    t.check(got[2].body == b"" and got[2].h("content-length") == "5000", "pipelined HEAD: length, no body")
    t.check(got[3].body.startswith(b'{"status":"ok"'), "pipelined health body")
    t.check(got[5].body == Bb, "pipelined chunked PUT then GET")
    t.check(got[7].json() and got[7].json().get("status") == 404, "pipelined GET after DELETE: 404 JSON")
s.sendall(get("/v1/health"))
t.eq(rd.response().status, 200, "the pipelined connection stays usable")
s.close()

# --- a request split at every byte ---------------------------------------------
for what, data, m, check in [
        ("GET", get("/v1/health"), "GET", lambda r: r.status == 200),
        ("PUT", put(obj_path(B, "bytewise"), b"0123456789"), "PUT", lambda r: r.status == 200),
        ("chunked PUT", ("PUT %s HTTP/1.1\r\n" % obj_path(B, "bytewise2")).encode() + H
         + b"Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: y\r\n\r\n",
         "PUT", lambda r: r.status == 200)]:
    s = raw()
    t0 = time.time()
    for i in range(len(data)):
        s.send(data[i:i + 1])
        time.sleep(0.002)
    try:
        r = Reader(s).response(m)
        t.check(check(r), "%s sent one byte at a time (%d bytes, %.2f s)" % (what, len(data), time.time() - t0), r)
    except (EOFError, OSError, ValueError) as e:
        t.fail("%s sent one byte at a time" % what, repr(e))
    s.close()
r = req("GET", obj_path(B, "bytewise"))
t.check(r.status == 200 and r.body == b"0123456789", "the bytewise PUT stored its body", r)
r = req("GET", obj_path(B, "bytewise2"))
t.check(r.status == 200 and r.body == b"hello world", "the bytewise chunked PUT (extension, trailer) stored its body", r)


# --- malformed requests ------------------------------------------------------------
def refused(data, want, what):
    r, closed = exchange(data, close_said=True)
    if isinstance(r, Exception):
        t.fail("%s -> %s" % (what, want), repr(r))
        return
    d = r.json() or {}
    t.check(r.status in want and closed and d.get("status") == r.status,
            "%s -> %s JSON and close" % (what, "/".join(map(str, want))),
            "%r, closed %s" % (r, closed))


refused(b"GARBAGE\r\n\r\n", (400, 501), "a request line of garbage")
refused(b"GET /v1/health\r\n\r\n", (400, 505), "no HTTP version")
refused(b"GET /v1/health HTTP/1.1\r\nno colon here\r\n\r\n", (400,), "a header without a colon")
# obs-fold: RFC 9112 allows rejecting it (400) or replacing it with a space
r, closed = exchange(b"GET /v1/health HTTP/1.1\r\n" + H + b" folded: header\r\n\r\n", close_said=True)
t.check(not isinstance(r, Exception) and (r.status == 200 or (r.status == 400 and closed)),
        "obsolete line folding: 400 and close, or folded (200)", r)
refused(b"GET /v1/health HTTP/1.1\r\nBad Name: x\r\n\r\n", (400,), "a space in a header name")
refused(b"GET /v1/\x01health HTTP/1.1\r\n\r\n", (400,), "a control byte in the target")
refused(b"BREW /v1/health HTTP/1.1\r\n" + H + b"\r\n", (400, 501), "an unknown method")
refused(b"GET /v1/health HTTP/2.0\r\n" + H + b"\r\n", (400, 505), "HTTP/2.0 in the request line")
refused(b"GET v1/health HTTP/1.1\r\n" + H + b"\r\n", (400,), "a target without a leading slash")
refused(put(obj_path(B, "te"), b"")[:-4].replace(b"Content-Length: 0", b"Content-Length: 5\r\nTransfer-Encoding: chunked")
        + b"\r\n\r\n5\r\nhello\r\n0\r\n\r\n", (400,), "Content-Length and Transfer-Encoding together")
refused(b"PUT %s HTTP/1.1\r\n%sContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!" % (obj_path(B, "cl2").encode(), H),
        (400,), "two different Content-Lengths")
refused(b"PUT %s HTTP/1.1\r\n%sContent-Length: abc\r\n\r\n" % (obj_path(B, "cl3").encode(), H),
        (400,), "a non-numeric Content-Length")
refused(b"PUT %s HTTP/1.1\r\n%sContent-Length: -5\r\n\r\n" % (obj_path(B, "cl4").encode(), H),
        (400,), "a negative Content-Length")
refused(b"PUT %s HTTP/1.1\r\n%sTransfer-Encoding: gzip\r\n\r\n" % (obj_path(B, "te2").encode(), H),
        (400, 501), "Transfer-Encoding other than chunked")
refused(b"PUT %s HTTP/1.1\r\n%sTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"
        % (obj_path(B, "badchunk").encode(), H), (400,), "a bad chunk size")
refused(b"GET /v1/health HTTP/1.1\r\n" + H + b"Expect: teapot\r\n\r\n", (417,), "an unknown Expect")
# an empty Expect lists no expectation (RFC 9110 10.1.1): served, not 417
r, _ = exchange(put(obj_path(B, "expect-empty"), b"hello", b"Expect: \r\n"), method="PUT")
t.check(not isinstance(r, Exception) and r.status == 200 and req("GET", obj_path(B, "expect-empty")).status == 200,
        "a PUT with an empty Expect: 200, stored", r)
refused(("GET /v1/health HTTP/1.1\r\n" + "X-Big: %s\r\n" % ("x" * 20000) + "\r\n").encode(), (431,),
        "a 20 KB header")
refused(("GET /v1/health HTTP/1.1\r\n" + "".join("X-H%d: %s\r\n" % (i, "v" * 100) for i in range(200))
         + "\r\n").encode(), (431,), "200 headers of 100 bytes")
refused(("GET /v1/objects/%s/%s HTTP/1.1\r\n" % (B, "u" * 20000)).encode() + H + b"\r\n", (414,),
        "a 20 KB URL")
for name in ["te", "cl2", "cl3", "cl4", "te2", "badchunk"]:
    if req("GET", obj_path(B, name)).status != 404:
        t.fail("refused request %s stored an object" % name)
healthy("malformed requests")

# --- HTTP/1.0 -----------------------------------------------------------------------
r, closed = exchange(b"GET /v1/health HTTP/1.0\r\n\r\n", close_said=True)
t.check(not isinstance(r, Exception) and r.status == 200 and r.body.startswith(b'{"status":"ok"')
        and closed, "HTTP/1.0 GET: 200, then the connection closes", r)
r, closed = exchange(("GET %s HTTP/1.0\r\n\r\n" % obj_path(B, "ka")).encode(), close_said=True)
t.check(not isinstance(r, Exception) and r.status == 200 and r.body == b"keepalive",
        "HTTP/1.0 GET of an object", r)
r, closed = exchange(b"GET /v1/health HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n", close_said=True)
t.check(not isinstance(r, Exception) and r.status == 200 and closed, "Connection: close is honoured", r)

# --- 405 and 404 -----------------------------------------------------------------------
r = req("POST", obj_path(B, "x"), b"")
allow = {m.strip() for m in (r.h("allow") or "").split(",")}
t.check(r.status == 405 and allow == {"GET", "HEAD", "PUT", "DELETE", "PATCH"} and (r.json() or {}).get("status") == 405,
        "POST on an object: 405, Allow: GET, HEAD, PUT, DELETE, PATCH", r)
r = req("PUT", "/v1/health", b"x")
allow = {m.strip() for m in (r.h("allow") or "").split(",")}
t.check(r.status == 405 and allow == {"GET", "HEAD"}, "PUT on /v1/health: 405, Allow: GET, HEAD", r)
for p in ["/v1", "/v1/nope", "/v1/objectsX/b/o", "/v1/healthz"]:
    r = req("GET", p)
    t.check(r.status == 404 and (r.json() or {}).get("status") == 404, "GET %s: 404 JSON" % p, r)
# outside /v1 is S3 (path-style): a missing bucket is S3's XML 404
for p in ["/nope", "/v2/objects/b/o"]:
    r = req("GET", p)
    t.check(r.status == 404 and b"<Code>NoSuchBucket</Code>" in r.body, "GET %s: S3 NoSuchBucket" % p, r)
healthy("405/404")


# --- timeouts ----------------------------------------------------------------------------
def closes_within(s, lo, hi, what, want_status=None):
    """The server must close s (maybe after an error response) between lo
    and hi seconds from now: lo is the property (not before the timeout),
    hi only a generous bound against a hang on a loaded machine."""
    t0 = time.time()
    s.settimeout(hi + 1)
    data = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except (ConnectionResetError, BrokenPipeError):
        pass
    except socket.timeout:
        t.fail("%s: still open after %.1f s" % (what, time.time() - t0))
        return
    dt = time.time() - t0
    good = lo <= dt <= hi
    if want_status and data:
        good = good and data.split(b" ")[1].decode() in want_status
    t.check(good, "%s: closed after %.1f s%s" % (what, dt, (" with " + data.split(b"\r\n")[0].decode()) if data else ""),
            data[:200])


s = raw()
s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0")
closes_within(s, 0.5, 20, "half a head, header_timeout 1s", ("408",))
s.close()
s = raw()
closes_within(s, 1.0, 20, "a connection that never sends, idle_timeout 2s")
s.close()
s = raw()
s.sendall(get("/v1/health"))
rd = Reader(s)
t.eq(rd.response().status, 200, "one request before idling")
closes_within(s, 1.0, 20, "an idle keep-alive connection, idle_timeout 2s")
s.close()
# a head trickled in slower than header_timeout allows, one byte each 0.2 s
s = raw()
data = get("/v1/health") + b"X-Pad: " + b"p" * 200  # 40 s worth of trickle
t0 = time.time()
cut = False
try:
    for i in range(len(data)):
        s.send(data[i:i + 1])
        time.sleep(0.2)
        if time.time() - t0 > 20:
            break
except OSError:
    cut = True
dt = time.time() - t0
t.check(cut, "a head trickled byte by byte is cut off by header_timeout (%.1f s)" % dt)
s.close()

s = raw()
s.sendall(put(obj_path(B, "slow"), b"")[:-4].replace(b"Content-Length: 0", b"Content-Length: 1000") + b"\r\n\r\n"
          + b"0123456789")
closes_within(s, 1.0, 20, "a body that stalls, body_timeout 2s", ("408",))
s.close()
r = req("GET", obj_path(B, "slow"))
t.eq(r.status, 404, "the stalled PUT stored nothing")

# --- abrupt disconnect mid-PUT --------------------------------------------------------------
for how in ["close", "reset"]:
    s = raw()
    s.sendall(put(obj_path(B, "abrupt-" + how), b"")[:-4].replace(b"Content-Length: 0",
                                                                   b"Content-Length: %d" % (10 << 20)) + b"\r\n\r\n")
    for _ in range(16):
        s.sendall(os.urandom(65536))
    time.sleep(0.2)
    if how == "reset":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    r = req("GET", obj_path(B, "abrupt-" + how))
    t.eq(r.status, 404, "a PUT abandoned mid-body (%s) leaves no object" % how)
left = tmp_files()
for _ in range(50):
    if not left:
        break
    time.sleep(0.1)
    left = tmp_files()
t.eq(left, [], "and no temp file")
healthy("abandoned PUTs")
r = req("GET", "/v1/buckets/%s?props=name" % B)
names = [e["name"] for e in (r.json() or {}).get("entries", [])]
t.eq(names, ["bytewise", "bytewise2", "expect-empty", "ka", "p2"], "the bucket holds exactly the objects that were stored")
t.finish()
