"""test_remote_hostile.py - a remote backend is an untrusted peer. The
remote is a small HTTP server started here (S3 path-style and the aisd
native API, on a free loopback port) that misbehaves on purpose; the
cluster is 1 gateway + 1 target with remote.max_cold_reads=3,
remote.stall_timeout=5s, remote.min_speed=100, remote.timeout=3s. Every process is stopped
by PID; every server loop is bounded in bytes and time.

Checks:
 1. Endless range answers: a blob download (32 MiB object, blob_min 8 MiB)
    whose range GETs are answered with endless 206 bodies: no answer is
    read much past its range, the target's memory does not grow by them,
    the client gets no whole object.
 2. Listing bombs: an S3 page of 8 MiB of empty <Contents/> and an aisd
    page of a million empty entries: 502 naming the remote, the target's
    peak memory grows by less than 48 MiB.
 3. A listing that repeats itself (same names, always truncated): prefetch
    ends with an error instead of running forever; `aisctl job stop
    prefetch` says what it stopped.
 4. Drip (2 bytes/s): a cold read ends (504) within remote.stall_timeout;
    with 3 drips running on remote "slow", a 4th cold read of "slow" is
    503 at once naming it, while a cold read of remote "fast" is served.
 4b. A remote that never answers a HEAD: 504 within remote.timeout.
 5. Redirects (aisd kind, with a bearer token): a 307 to another host
    (127.0.0.2) is not followed (502; the catcher there gets nothing); a
    307 to another port of the remote's host is followed without the
    token.
 6. Error answers: a remote's 100 KiB error body (to a listing) is quoted
    in at most a few hundred bytes.
 7. A remote URL with user:password@ is refused (API and aisctl) without
    quoting the password; it shows up in no answer and no log.
 8. No error-level line in any node's log.
"""
# timeout: 180
import http.client
import json
import os
import random
import re
import socket
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from itlib import T

import clulib
from clulib import Node, poll, request

JSON = {"Content-Type": "application/json"}
CTL = os.environ["AISCTL"]
MiB = 1 << 20
BLOB = 32 * MiB          # the endless object's size (HEAD)
CHUNK = 8 * MiB          # a blob download's range
ENDLESS_CAP = 64 * MiB   # most a single endless answer sends (then the server closes)
TOKEN = "tok-secret-123"
PASSWORD = "hunter2pw"

t = T()
clulib.init(t, "rhostile", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                            "--set", "remote.max_cold_reads=3", "--set", "remote.stall_timeout=5s",
                            "--set", "remote.min_speed=100", "--set", "remote.timeout=3s"])

lock = threading.Lock()
stats = {"endless_max": 0, "endless_n": 0, "drip_active": 0, "catch_far": 0, "near_auth": [],
         "evil_auth": [], "loop_pages": 0}


def bump(k, v=1):
    with lock:
        stats[k] += v


class Evil(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body=b"", hdrs=None, head=False):
        self.send_response(code)
        for k, v in (hdrs or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_HEAD(self):
        self.route(head=True)

    def do_GET(self):
        self.route(head=False)

    def route(self, head):
        u = urllib.parse.urlsplit(self.path)
        qs = urllib.parse.parse_qs(u.query)
        p = u.path
        with lock:
            stats["evil_auth"].append(self.headers.get("Authorization"))
        # --- the aisd native API (remote "rd": redirects) ---
        if p.startswith("/v1/objects/rb/"):
            name = p[len("/v1/objects/rb/"):]
            host = FAR if name == "away" else NEAR
            return self.send(307, b"", {"Location": "http://%s%s" % (host, p)}, head)
        if p == "/v1/buckets/bomb" and head:  # the bucket's HEAD at creation: at once
            return self.send(200, b"", {}, head)
        if p == "/v1/buckets/bomb":  # a million empty entries (3 MiB)
            body = b'{"entries":[' + b",".join([b"{}"] * 1000000) + b'],"continuation_token":"x"}'
            return self.send(200, body, {"Content-Type": "application/json"}, head)
        # --- S3 path-style ---
        parts = p.lstrip("/").split("/", 1)
        bucket, key = parts[0], parts[1] if len(parts) > 1 else ""
        if not key and "list-type" in qs and bucket == "err":
            return self.send(500, b"<Error><Code>InternalError</Code><Message>" + b"S" * (100 << 10) +
                             b"</Message></Error>", {"Content-Type": "application/xml"}, head)
        if not key and "list-type" in qs:
            return self.listing(bucket, qs, head)
        if bucket == "blob":
            return self.endless(head)
        if bucket == "drip":
            return self.drip(head)
        if bucket == "hang" and key:  # no answer for 20 s (the bucket's HEAD at creation is answered)
            time.sleep(20)
            return self.send(200, b"late", {"ETag": '"h1"'}, head)
        body = b"object " + key.encode()
        return self.send(200, body, {"ETag": '"e-%s"' % key, "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"}, head)

    def listing(self, bucket, qs, head):
        if bucket == "bomb":  # 8 MiB of empty entries, streamed
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            pre = b'<?xml version="1.0"?><ListBucketResult><IsTruncated>true</IsTruncated>'
            ent = b"<Contents/>" * 65536
            post = b"</ListBucketResult>"
            n = 12
            self.send_header("Content-Length", str(len(pre) + n * len(ent) + len(post)))
            self.end_headers()
            try:
                self.wfile.write(pre)
                for _ in range(n):
                    self.wfile.write(ent)
                self.wfile.write(post)
            except OSError:
                pass
            return
        # "loop": the same two names on every page, always truncated
        bump("loop_pages")
        body = (b'<?xml version="1.0"?><ListBucketResult><IsTruncated>true</IsTruncated>'
                b"<Contents><Key>a</Key><Size>8</Size></Contents><Contents><Key>b</Key><Size>8</Size></Contents>"
                b"<NextContinuationToken>same</NextContinuationToken></ListBucketResult>")
        return self.send(200, body, {"Content-Type": "application/xml"}, head)

    def endless(self, head):
        hdrs = {"ETag": '"blob1"', "Accept-Ranges": "bytes"}
        if head:
            return self.head_len(BLOB, hdrs)
        rng = self.headers.get("Range", "bytes=0-")
        a = int(re.match(r"bytes=(\d+)-", rng).group(1))
        self.send_response(206)
        self.send_header("ETag", '"blob1"')
        self.send_header("Content-Range", "bytes %d-%d/%d" % (a, BLOB - 1, BLOB))
        self.send_header("Connection", "close")
        self.end_headers()
        bump("endless_n")
        sent, blk = 0, b"z" * (256 << 10)
        try:
            while sent < ENDLESS_CAP:
                self.wfile.write(blk)
                sent += len(blk)
        except OSError:
            pass
        with lock:
            stats["endless_max"] = max(stats["endless_max"], sent)
        self.close_connection = True

    def head_len(self, n, hdrs):
        self.send_response(200)
        for k, v in hdrs.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(n))
        self.end_headers()

    def drip(self, head):
        if head:
            return self.head_len(4096, {"ETag": '"d1"'})
        self.send_response(200)
        self.send_header("ETag", '"d1"')
        self.send_header("Content-Length", "4096")
        self.end_headers()
        bump("drip_active")
        try:
            for _ in range(60):  # 2 bytes/s, at most a minute
                self.wfile.write(b"dd")
                self.wfile.flush()
                time.sleep(1)
        except OSError:
            pass
        finally:
            bump("drip_active", -1)
        self.close_connection = True


class Catch(BaseHTTPRequestHandler):
    """The redirect targets: NEAR (the remote's host, another port) serves
    the object; FAR (another host) only counts what reaches it."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, head):
        if self.server.far:
            bump("catch_far")
            body = b"INTERNAL SERVICE ANSWER"
            self.send_response(500)
        else:
            with lock:
                stats["near_auth"].append(self.headers.get("Authorization"))
            body = b"near"
            self.send_response(200)
            self.send_header("ETag", '"n1"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_HEAD(self):
        self.answer(True)

    def do_GET(self):
        self.answer(False)


def serve(cls, host, far=False):
    for _ in range(50):
        port = random.randint(20000, 32000)
        try:
            s = ThreadingHTTPServer((host, port), cls)
        except OSError:
            continue
        s.daemon_threads = True
        s.far = far
        threading.Thread(target=s.serve_forever, daemon=True).start()
        return s, "%s:%d" % (host, port)
    t.fail("no free port on %s" % host)
    t.finish()


evil_srv, EVIL = serve(Evil, "127.0.0.1")
near_srv, NEAR = serve(Catch, "127.0.0.1")
far_srv, FAR = serve(Catch, "127.0.0.2", far=True)

g, ft = Node("g1", "gateway"), Node("t1", "target")
for n, j in ((g, None), (ft, g)):
    if not t.check(n.start(join=j.url if j else None), "%s starts" % n.name):
        t.finish()
t.check(poll(lambda: clulib.smap_ids(g) == {g.id, ft.id}, 20), "the cluster forms")
ALL = [g, ft]


def attach(alias, kind, **kw):
    v = dict(kind=kind, url="http://" + EVIL, **kw)
    r = request("PUT", g.url, "/v1/remotes/" + alias, json.dumps(v), JSON)
    t.check(r.status == 200, "remote %s attached" % alias, r.body[:200])


def bucket(name, provider, alias, rb):
    r = request("POST", g.url, "/v1/buckets/" + name,
                json.dumps({"action": "create-bck",
                            "value": {"backend": {"provider": provider, "remote": alias, "bucket": rb}}}), JSON)
    t.check(r.status == 200, "bucket %s -> %s://@%s/%s" % (name, provider, alias, rb), r.body[:200])


def hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def get(bck, name, timeout=30):
    """GET through the gateway (307 followed): (status, body or None when cut, headers, seconds)."""
    t0 = time.time()
    url, path = g.url, "/v1/objects/%s/%s" % (bck, name)
    for _ in range(3):
        u = urllib.parse.urlsplit(url)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
        try:
            c.request("GET", path)
            r = c.getresponse()
            try:
                body = r.read()
            except (http.client.IncompleteRead, OSError):
                body = None
            hd = {k.lower(): v for k, v in r.getheaders()}
        except OSError:
            return 0, None, {}, time.time() - t0
        finally:
            c.close()
        if r.status != 307:
            return r.status, body, hd, time.time() - t0
        loc = urllib.parse.urlsplit(hd["location"])
        url, path = "http://" + loc.netloc, loc.path + ("?" + loc.query if loc.query else "")
    return 0, None, {}, time.time() - t0


tpid = clulib.procs["t1"].pid
attach("s3r", "s3", blob_min=CHUNK)
attach("slow", "s3")
attach("fast", "s3")
attach("rd", "ais", token=TOKEN)
attach("ar", "ais")
bucket("blobb", "s3", "s3r", "blob")
bucket("bombs", "s3", "s3r", "bomb")
bucket("bomba", "ais", "ar", "bomb")
bucket("loopb", "s3", "s3r", "loop")
bucket("dripb", "s3", "slow", "drip")
bucket("fastb", "s3", "fast", "plain")
bucket("errb", "s3", "s3r", "err")
bucket("rdb", "ais", "rd", "rb")
bucket("hangb", "s3", "slow", "hang")

# --- 2. listing bombs (first: peak memory measured before anything else) --------------
for bck, what in (("bombs", "S3 page of 8 MiB of empty entries"), ("bomba", "aisd page of a million empty entries")):
    before = hwm_kib(tpid)
    t0 = time.time()
    r = request("GET", g.url, "/v1/buckets/" + bck, json.dumps({"action": "list", "value": {"pagesize": 1000}}),
                JSON, timeout=60)
    grew = (hwm_kib(tpid) - before) >> 10
    t.check(r.status == 502 and b"listing" in r.body, "%s: 502" % what, (r.status, r.body[:300]))
    t.check(grew < 48, "%s: the target's peak memory grew by %d MiB (< 48)" % (what, grew))
    t.check(time.time() - t0 < 20, "%s: answered in %.1f s" % (what, time.time() - t0))

# --- 1. endless range answers ----------------------------------------------------------
before = hwm_kib(tpid)
st, body, _, secs = get("blobb", "obj", timeout=60)
grew = (hwm_kib(tpid) - before) >> 10
t.check(body is None or len(body) < BLOB, "endless ranges: no whole object (status %d, %s bytes, %.1f s)" %
        (st, None if body is None else len(body), secs))
poll(lambda: stats["endless_max"] > 0, 10)
t.check(stats["endless_n"] > 0 and stats["endless_max"] <= CHUNK + 24 * MiB,
        "endless ranges: at most %d MiB sent in one answer (%d answers; the range is 8 MiB)" %
        (stats["endless_max"] >> 20, stats["endless_n"]))
# 4 ranges of 8 MiB buffered at once; ASan's quarantine doubles what a run under it keeps
t.check(grew < 96, "endless ranges: the target's peak memory grew by %d MiB (< 96)" % grew)

# --- 3. a listing that repeats itself ------------------------------------------------------
r = request("POST", g.url, "/v1/buckets/loopb", json.dumps({"action": "prefetch-listrange", "value": {}}), JSON)
t.check(r.status == 200, "prefetch of the repeating listing starts", r.body[:300])


def job():
    r = request("GET", g.url, "/v1/cluster?what=prefetch")
    return r.json() if r.status == 200 else {}


ended = poll(lambda: job().get("state") not in ("running", None), 30)
d = job()
t.check(ended, "prefetch of a repeating listing ends (state %s, %d pages asked)" % (d.get("state"), stats["loop_pages"]),
        json.dumps(d)[:400])
t.check("advance" in json.dumps(d), "its error says the listing does not advance", json.dumps(d)[:600])
cp = subprocess.run([CTL, "-e", g.url, "job", "stop", "prefetch"], capture_output=True, text=True, timeout=30)
t.check(cp.returncode == 0 and "stop prefetch" in cp.stdout and "rebalance" not in cp.stdout,
        "aisctl job stop prefetch says what it stops", cp.stdout + cp.stderr)

# --- 4. drip ----------------------------------------------------------------------------------
res = {}


def drip_get(i):
    res[i] = get("dripb", "d%d" % i, timeout=60)


ths = [threading.Thread(target=drip_get, args=(i,)) for i in range(3)]
for th in ths:
    th.start()
t.check(poll(lambda: stats["drip_active"] == 3, 10), "3 drip reads of remote slow running")
st, body, _, secs = get("dripb", "d9", timeout=10)
t.check(st == 503 and b"slow" in (body or b"") and secs < 3,
        "a 4th cold read of remote slow: 503 naming it in %.1f s" % secs, (st, (body or b"")[:300]))
st, body, _, secs = get("fastb", "f1", timeout=10)
t.check(st == 200 and body == b"object f1" and secs < 3,
        "meanwhile a cold read of remote fast is served (%.1f s)" % secs, (st, (body or b"")[:300]))
for th in ths:
    th.join(40)
t.check(all(not th.is_alive() for th in ths), "the drip reads ended")
for i in range(3):
    st, body, _, secs = res.get(i, (0, None, {}, 99))
    t.check(secs < 20 and (body is None or len(body) < 4096),
            "drip read %d ended in %.1f s (remote.stall_timeout 5s), not served whole" % (i, secs), (st, body and body[:100]))
st, body, _, secs = get("dripb", "d5", timeout=30)
t.check(secs < 20 and (body is None or len(body) < 4096), "a later drip read ends too (%.1f s)" % secs)

st, body, _, secs = get("hangb", "x", timeout=30)
t.check(st == 504 and secs < 8, "a HEAD never answered: 504 in %.1f s (remote.timeout 3s)" % secs,
        (st, (body or b"")[:200]))

# --- 5. redirects -------------------------------------------------------------------------------
st, body, _, secs = get("rdb", "away")
t.check(st == 502 and b"INTERNAL" not in (body or b""), "a 307 to another host: 502", (st, (body or b"")[:300]))
t.eq(stats["catch_far"], 0, "the other host got no request")
st, body, _, secs = get("rdb", "near")
t.check(st == 200 and body == b"near", "a 307 to another port of the remote's host is followed", (st, body))
t.check(stats["near_auth"] and not any(stats["near_auth"]), "without the bearer token", stats["near_auth"])
t.check("Bearer " + TOKEN in stats["evil_auth"], "the remote itself got the token")

# --- 6. error bodies ---------------------------------------------------------------------------
r = request("GET", g.url, "/v1/buckets/errb", json.dumps({"action": "list", "value": {}}), JSON)
t.check(r.status == 502 and len(r.body) < 2048 and b"SSSS" in r.body,
        "a remote's 100 KiB error body is quoted short (%d bytes)" % len(r.body), (r.status, r.body[:300]))

# --- 7. credentials in a remote URL ---------------------------------------------------------------
r = request("PUT", g.url, "/v1/remotes/leaky",
            json.dumps({"kind": "s3", "url": "http://user:%s@%s" % (PASSWORD, EVIL)}), JSON)
t.check(r.status == 400 and PASSWORD.encode() not in r.body, "PUT /v1/remotes with user:password@ in the url: 400",
        (r.status, r.body[:300]))
cp = subprocess.run([CTL, "-e", g.url, "remote", "attach", "leaky2", "http://u:%s@%s" % (PASSWORD, EVIL),
                     "--kind", "ais"], capture_output=True, text=True, timeout=30)
t.check(cp.returncode != 0 and PASSWORD not in cp.stdout + cp.stderr, "aisctl remote attach refuses it",
        cp.stdout + cp.stderr)
cp = subprocess.run([CTL, "-e", g.url, "remote", "show"], capture_output=True, text=True, timeout=30)
t.check(cp.returncode == 0 and "s3r" in cp.stdout and PASSWORD not in cp.stdout, "remote show: no password",
        cp.stdout)
for n in ALL:
    with open(n.log, errors="replace") as f:
        t.check(PASSWORD not in f.read(), "%s: the password is in no log line" % n.name)

clulib.check_logs(ALL)
for s in (evil_srv, near_srv, far_srv):
    s.shutdown()
t.finish()
