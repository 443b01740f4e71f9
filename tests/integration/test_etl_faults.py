"""test_etl_faults.py - transformer faults on the paths the other ETL
tests check only in good health: S3 GETs, GetBatch, a worker that dies
mid-answer or is killed mid-request, and etl rm while requests run.

A cluster of 1 gateway + 1 target. The worker is a raw script (not
aisd.etl, so that it can misbehave at any byte) speaking stdio or http,
whichever aisd started it for; etl_args picks what it does: crash (exits
before answering), hang (past the 3 s timeout), garbage (answers bytes
that are no frame or response), half (announces the whole answer, sends
half, exits), stall (announces the whole answer, sends half, hangs),
more (the whole answer, then bytes past it), slow (answers after 1.5 s),
pid (answers its process id); none: the bytes uppercased. Registered over
stdio ("fs") and http ("fh"). o1 (200,000 bytes) is big enough that its
answer is streamed to the client once the worker's head is read; o2 (17
bytes) is read whole first.

Checks:
 1. S3 GET /s3/eb/o1 with the x-ais-etl header and ?etl_args=: each fault
    before the answer's head, of each mode, is a 5xx S3 error document
    (TransformFailed or TransformTimeout) naming the transformer and the
    reason; the next S3 GET is right again.
 1b. Faults after a streamed answer's head (half, stall, more), native
    and S3, both modes: 200 with the announced Content-Length and the
    connection cut short of it, within 30 s (stall: the 3 s timeout) --
    never a body that looks complete but is wrong; http's "more" (bytes
    after a complete response) gives the right body; stdio's "more" never
    a byte past the frame. Through the gateway's S3 proxy, a cut before
    it relayed any byte of the body is a 5xx S3 error instead (no worse).
    The next GET right (the worker replaced).
 1c. o1's pages dropped from the page cache (POSIX_FADV_DONTNEED on its
    file): GET ?etl=fs (the object spliced into the worker's pipe, a
    piece the splice cannot take read through memory) is right.
 2. Native GET ?etl=&etl_args=half of o2 (read whole), both modes: 502
    naming the transformer and "mid-answer"; the next GET right again.
 3. GetBatch {"etl": NAME, "etl_args": FAULT} over two objects, each
    fault, both modes: 502 or 504 naming the transformer; the next
    GetBatch is the uppercased objects.
 4. The worker killed (SIGKILL, by the test) while it transforms: that
    GET gets 502 naming the transformer; the next is answered by a new
    worker.
 5. etl rm while 4 GETs run (2 workers, each GET slow, a timeout of 20 s
    that a loaded host does not reach): each GET ends within its bound, 200 with the right bytes or a clear 404/503 naming
    the transformer; afterwards no process of it is left under the
    target, a GET ?etl= of it is 404, and the target has as many
    descriptors and threads as before.
 6. No error-level line in any node's log (the faults are warnings).
"""
# timeout: 240
import concurrent.futures
import http.client
import json
import os
import re
import signal
import threading
import time
import urllib.parse

from itlib import T

import clulib
from clulib import Node, poll, request

t = T()
clulib.init(t, "etlf", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never"])
JSON = {"Content-Type": "application/json"}

WORKER = r'''
import os, re, socket, sys, time
HTTP = os.environ.get("AISD_ETL_COMM") == "http"


def head(n):
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n if HTTP else b"200 %d\n" % n


def answer(args, data, write):
    if args == "crash":
        os._exit(3)
    if args == "hang":
        time.sleep(60)
    if args == "slow":
        time.sleep(1.5)
    if args == "garbage":
        write(b"this is not HTTP\r\n\r\n" if HTTP else b"garbage, no frame\n")
        return
    body = b"%d" % os.getpid() if args == "pid" else data.upper()
    if args in ("half", "stall"):
        write(head(len(body)) + body[: len(body) // 2])
        time.sleep(0.2 if args == "half" else 60)
        os._exit(0)
    if args == "more":
        body += b"BYTES PAST THE ANSWER"
        write(head(len(body) - 21) + body)
        return
    write(head(len(body)) + body)


def unquote(s):
    return re.sub(rb"%([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]), s)


if not HTTP:
    rd, wr = sys.stdin.buffer, sys.stdout.buffer

    def write(b):
        wr.write(b)
        wr.flush()

    while True:
        line = rd.readline()
        if not line:
            sys.exit(0)
        _, _, ml, al, dl = line.split()
        rd.read(int(ml))
        args = rd.read(int(al)).decode()
        answer(args, rd.read(int(dl)), write)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=int(os.environ["AISD_ETL_FD"]))
while True:
    c, _ = s.accept()
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            b = c.recv(65536)
            if not b:
                break
            buf += b
        if b"\r\n\r\n" not in buf:
            break
        h, buf = buf.split(b"\r\n\r\n", 1)
        n = int(re.search(rb"(?i)\r\ncontent-length: *([0-9]+)", h).group(1))
        m = re.search(rb"(?i)\r\nais-etl-args: *([^\r]*)", h)
        while len(buf) < n:
            b = c.recv(1 << 20)
            if not b:
                break
            buf += b
        data, buf = buf[:n], buf[n:]
        answer(unquote(m.group(1) if m else b"").decode(), data, c.sendall)
    c.close()
'''


def aisctl(*args):
    return clulib.aisctl(g.url, *args)


def etl_get(name, args=None, obj="o1"):
    path = "/v1/objects/eb/%s?etl=%s" % (obj, name)
    if args is not None:
        path += "&etl_args=" + urllib.parse.quote(args, safe="")
    _, r = clulib.follow("GET", g.url, path)
    return r


def s3_get(name, args=None, obj="o1"):
    path = "/s3/eb/" + obj + ("?etl_args=" + args if args else "")
    _, r = clulib.follow("GET", g.url, path, headers={"x-ais-etl": name})
    return r


def cut_get(path, headers=None):
    """A GET through the gateway (its 307s followed) that tells a cut
    connection from an answer: (status, Content-Length or -1, the body
    bytes read, cut, seconds)."""
    url, t0 = g.url, time.monotonic()
    for _ in range(3):
        u = urllib.parse.urlsplit(url)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        try:
            c.request("GET", path, headers=headers or {})
            r = c.getresponse()
            try:
                body, cut = r.read(), False
            except http.client.IncompleteRead as e:
                body, cut = e.partial, True
            except OSError:
                body, cut = b"", True
            if r.status == 307:
                loc = urllib.parse.urlsplit(r.getheader("location"))
                url, path = "%s://%s" % (loc.scheme, loc.netloc), loc.path + ("?" + loc.query if loc.query else "")
                continue
            return r.status, int(r.getheader("content-length") or -1), body, cut, time.monotonic() - t0
        finally:
            c.close()
    return 0, -1, b"", False, time.monotonic() - t0


def moss(name, args=None, objs=("o1", "o2")):
    body = {"in": [{"objname": o} for o in objs], "mime": ".tar", "strm": True, "etl": name}
    if args:
        body["etl_args"] = args
    _, r = clulib.follow("GET", g.url, "/v1/ml/moss/eb", json.dumps(body).encode(), JSON)
    return r


def members(b):
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(b), mode="r:") as tf:
        return {m.name: tf.extractfile(m).read() for m in tf if m.isfile()}


g = Node("g1", "gateway")
tg = Node("t1", "target")
for n in (g, tg):
    if not t.check(n.start(join=None if n is g else g.url), "%s starts" % n.name):
        t.finish()
t.check(poll(lambda: clulib.smap_ids(g) == {g.id, tg.id}, 60), "the cluster forms")
tpid = clulib.procs[tg.name].pid

wdir = clulib.etl_scripts("aisd-etlf-", {"fw.py": WORKER})
r = request("POST", g.url, "/v1/buckets/eb", json.dumps({"action": "create-bck"}).encode(), JSON)
t.check(r.status == 200, "create bucket eb", r)
data = {"o1": bytes((i * 7 + 97) % 26 + 97 for i in range(200000)), "o2": b"the second object"}
for name, body in data.items():
    _, r = clulib.follow("PUT", g.url, "/v1/objects/eb/" + name, body)
    t.check(r.status == 200, "PUT eb/" + name, r)
for name, comm, workers, tmo in (("fs", "stdio", 1, "3s"), ("fh", "http", 1, "3s"), ("fk", "stdio", 1, "3s"),
                                 ("fr", "stdio", 2, "20s"), ("frh", "http", 2, "20s")):
    rc, out, err = aisctl("etl", "init", name, "--cmd", "python3 %s/fw.py %s" % (wdir, name), "--comm", comm,
                          "--workers", str(workers), "--timeout", tmo)
    t.check(rc == 0, "etl init %s --comm %s" % (name, comm), out + err)
UP = data["o1"].upper()

# --- 1. S3 ---------------------------------------------------------------------------
for name in ("fs", "fh"):
    r = s3_get(name)
    t.check(r.status == 200 and r.body == UP, "S3 GET x-ais-etl: %s: the uppercased bytes" % name, r)
    for args, code, xcode, why in (("crash", 502, b"TransformFailed", b"without answering"),
                                   ("hang", 504, b"TransformTimeout", b"timed out"),
                                   ("garbage", 502, b"TransformFailed", b"malformed")):
        r = s3_get(name, args)
        # (http: a worker that exits on the kept connection may have closed its listening socket by the
        # time aisd connects again, "not serving", or not yet, "without answering": a race of its exit)
        whys = (why, b"not serving") if name == "fh" and args == "crash" else (why,)
        t.check(r.status == code and b"<Code>" + xcode + b"</Code>" in r.body and name.encode() in r.body
                and any(w in r.body for w in whys), "S3 GET x-ais-etl: %s, %s: %d %s naming it and %s"
                % (name, args, code, xcode.decode(), why.decode()), r)
        t.check(poll(lambda: s3_get(name).body == UP, 15), "after it, the S3 GET through %s is right again" % name)

# --- 1b. faults after a streamed answer's head ------------------------------------------
for name in ("fs", "fh"):
    for kind, path, hdrs in (("native", "/v1/objects/eb/o1?etl=%s&etl_args=%%s" % name, None),
                             ("S3", "/s3/eb/o1?etl_args=%s", {"x-ais-etl": name})):
        for args in ("half", "stall", "more"):
            st, clen, body, cut, dt = cut_get(path % args, hdrs)
            if args == "more" and name == "fh":  # a complete response, then bytes of no answer: not kept
                t.check(st == 200 and body == UP and not cut, "%s GET %s, more: 200 with the right body"
                        % (kind, name), (st, clen, len(body), cut))
            elif kind == "S3" and st >= 500:  # the gateway's proxy had no byte of the body yet: a clean error
                t.check(b"<Code>" in body and dt < 30, "S3 GET %s, %s: a 5xx S3 error (%.1f s)" % (name, args, dt),
                        (st, body[:300]))
            elif args == "more":  # cut when the bytes past the frame are seen before its end, else after it
                t.check(st == 200 and clen == len(UP) and (body == UP or (cut and UP.startswith(body))),
                        "%s GET %s, more: 200, never a byte past the frame" % (kind, name), (st, clen, len(body), cut))
            else:
                t.check(st == 200 and clen == len(UP) and cut and len(body) < clen and UP.startswith(body)
                        and dt < 30, "%s GET %s, %s: 200, Content-Length %d, the connection cut short of it "
                        "(%.1f s)" % (kind, name, args, len(UP), dt), (st, clen, len(body), cut))
            t.check(poll(lambda: etl_get(name).body == UP, 15), "after it, ?etl=%s is right again" % name)

# --- 1c. a cold object: its pages dropped from the page cache, spliced into fs's pipe -----
cold = [os.path.join(dp, f) for dp, _, fs in os.walk(tg.dir) for f in fs
        if os.path.getsize(os.path.join(dp, f)) == len(data["o1"]) and open(os.path.join(dp, f), "rb").read() == data["o1"]]
t.check(len(cold) >= 1, "o1's file on the target", cold)
for p in cold:
    with open(p, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
t0 = time.monotonic()
r = etl_get("fs")
t.check(r.status == 200 and r.body == UP and time.monotonic() - t0 < 30,
        "GET ?etl=fs of o1 with its pages out of the cache: the right bytes (%.1f s)" % (time.monotonic() - t0), r)

# --- 2. native, a worker dying mid-answer ----------------------------------------------
for name in ("fs", "fh"):
    r = etl_get(name, "half", obj="o2")
    t.check(r.status == 502 and name.encode() in r.body and b"mid-answer" in r.body,
            "GET o2?etl=%s&etl_args=half: 502 naming it and mid-answer" % name, r)
    t.check(poll(lambda: etl_get(name, obj="o2").body == data["o2"].upper(), 15),
            "after it, ?etl=%s is right again" % name)

# --- 3. GetBatch -----------------------------------------------------------------------
for name in ("fs", "fh"):
    r = moss(name)
    t.check(r.status == 200 and members(r.body) == {"eb/o1": UP, "eb/o2": data["o2"].upper()},
            "GetBatch etl=%s: the uppercased objects" % name, (r.status, r.body[:200]))
    for args, codes in (("crash", (502,)), ("hang", (504,)), ("garbage", (502,)), ("half", (502,))):
        r = moss(name, args)
        t.check(r.status in codes and name.encode() in r.body, "GetBatch etl=%s etl_args=%s: %s naming it"
                % (name, args, "/".join(map(str, codes))), (r.status, r.body[:300]))
        t.check(poll(lambda: moss(name).status == 200, 15), "after it, GetBatch etl=%s is right again" % name)

# --- 4. killed mid-request -------------------------------------------------------------
r = etl_get("fk", "pid")
wpid = int(r.body) if r.status == 200 and r.body.isdigit() else 0
t.check(wpid > 0, "the fk worker's pid", r)
res = {}
th = threading.Thread(target=lambda: res.setdefault("r", etl_get("fk", "slow")))
th.start()
time.sleep(0.7)
if wpid:
    os.kill(wpid, signal.SIGKILL)
th.join(30)
r = res.get("r")
t.check(r is not None and r.status == 502 and b"fk" in r.body, "the worker killed mid-request: 502 naming fk", r)
r2 = [None]
t.check(poll(lambda: r2.__setitem__(0, etl_get("fk", "pid")) or (r2[0].status == 200 and r2[0].body.isdigit()
                                                                    and int(r2[0].body) != wpid), 15),
        "the next GET: answered by a new worker", r2[0])


# --- 5. etl rm while requests run ---------------------------------------------------------
def counts():
    return (len(os.listdir("/proc/%d/fd" % tpid)), len(os.listdir("/proc/%d/task" % tpid)))


def procs_of(name):
    """Processes under the target whose command line names the transformer."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                cmd = open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")
            except OSError:
                continue
            if name.encode() in cmd and any(c.endswith(b"fw.py") for c in cmd):
                out.append(int(p))
    return out


for name in ("fr", "frh"):
    etl_get(name)
    before = counts()
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        futs = [ex.submit(etl_get, name, "slow") for _ in range(4)]
        time.sleep(0.6)
        rc, out, err = aisctl("etl", "rm", name)
        t.check(rc == 0, "etl rm %s while 4 GETs run" % name, out + err)
        rs = [f.result(timeout=60) for f in futs]
    dt = time.monotonic() - t0
    good = sum(1 for r in rs if r.status == 200 and r.body == UP)
    clean = all((r.status == 200 and r.body == UP) or (r.status in (404, 503) and name.encode() in r.body) for r in rs)
    t.check(clean and good >= 1 and dt < 60, "%s: each GET 200 with the right bytes or 404/503 naming it (%d good, "
            "%.1f s)" % (name, good, dt), [(r.status, r.body[:100]) for r in rs])
    t.check(poll(lambda: not procs_of(name), 15), "%s: no process of it left" % name, procs_of(name))
    r = etl_get(name)
    t.check(r.status == 404 and name.encode() in r.body, "%s: GET ?etl= after etl rm: 404" % name, r)
    after = [None]
    t.check(poll(lambda: after.__setitem__(0, counts()) or (after[0][0] <= before[0] and after[0][1] <= before[1]), 20),
            "%s: the target's descriptors and threads as before" % name, (before, after[0]))

for name in ("fs", "fh", "fk"):
    aisctl("etl", "rm", name)
clulib.check_logs([g, tg])
t.finish()
