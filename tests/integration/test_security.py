#!/usr/bin/env python3
"""test_security.py - the attacks access control must hold against, each
run as an attacker would against a cluster with auth.enabled, a cluster
secret and tokens from `aisctl auth token create` (a gateway g1, targets
t1 t2, and t3 whose cluster-map URL is a recording proxy: the "sniffer" on
a plain-HTTP network, which sees every intra-cluster call to t3).

1. GetBatch reads any bucket: the signed 307 for a body naming bucket a is
   replayed with a body naming b and c: 401 (the signature binds the body);
   a target checks every entry's bucket against the token itself (403).
2. Signed redirects renewed: a still-valid signed URL sent back to the
   gateway keeps its expiry (never later than the token's); once it passes,
   the URL is 401. The 307 a target gives an admin for a cluster action
   does not carry another body (start-maintenance of t2): 401, t2 stays.
3. A sniffed intra-cluster call: the captured metasync header with a forged
   body (BMD version +50, bucket a removed, another added) is 401 at the
   node it was for; the same call again (a replay) 401; sent to another
   node 401; a correctly signed push (this test holds the secret, as a
   compromised non-primary would) from a node that is not the primary 403.
   Bucket a is still everywhere.
4. Logs: the access log shows X-Amz-Signature and ais_rsig values as
   REDACTED; log files are not world-readable.
5. Permissions: cluster stats, node stats, mountpaths and /metrics need a
   monitor or admin token (a bucket token: 403); the map stays readable.
6. The runner's standalone target (auth off): attach-mp outside the
   mountpaths' parent directory is 403; request heads with obs-fold or
   bare-LF line ends are 400.
"""
import base64
import hashlib
import hmac
import json
import os
import secrets
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.parse

import clulib
from clulib import Node, get, poll, request
from itlib import T, tar_members

t = T()
AISCTL = os.path.join(os.path.dirname(os.environ["AISD_BIN"]), "aisctl")
TSECRET, CSECRET = clulib.TOKEN_SECRET, clulib.CLUSTER_SECRET
tsf, csf = clulib.secret_files("sec")
JS = {"Content-Type": "application/json"}


def token(*args):
    cp = subprocess.run([AISCTL, "auth", "token", "create", "--secret-file", tsf] + list(args),
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                        env={**os.environ, "AISCTL_CONFIG": os.devnull})
    t.check(cp.returncode == 0, "aisctl auth token create %s" % " ".join(args), cp.stderr)
    return cp.stdout.decode().strip()


def claims(tok):
    p = tok.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


def split(loc):
    u = urllib.parse.urlsplit(loc)
    return "%s://%s" % (u.scheme, u.netloc), u.path + ("?" + u.query if u.query else "")


def qparam(loc, k):
    return urllib.parse.parse_qs(urllib.parse.urlsplit(loc).query).get(k, [None])[0]


# --- the sniffer: a TCP proxy in front of t3 that keeps every request it carries ---------------
class Sniffer:
    def __init__(self):
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.dst = None
        self.seen = []  # raw client->server bytes, one entry per connection (grows)
        self.lock = threading.Lock()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            c, _ = self.ls.accept()
            threading.Thread(target=self.conn, args=(c,), daemon=True).start()

    def conn(self, c):
        if not self.dst:
            c.close()
            return
        try:
            s = socket.create_connection(("127.0.0.1", self.dst), timeout=30)
        except OSError:
            c.close()
            return
        rec = bytearray()
        with self.lock:
            self.seen.append(rec)

        def pump(a, b, keep):
            try:
                while True:
                    d = a.recv(65536)
                    if not d:
                        break
                    if keep is not None:
                        with self.lock:
                            keep.extend(d)
                    b.sendall(d)
            except OSError:
                pass
            for x in (a, b):
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        threading.Thread(target=pump, args=(s, c, None), daemon=True).start()
        pump(c, s, rec)

    def requests(self):
        """Every complete request seen: (method, target, headers dict, body)."""
        out = []
        with self.lock:
            streams = [bytes(r) for r in self.seen]
        for data in streams:
            while True:
                end = data.find(b"\r\n\r\n")
                if end < 0:
                    break
                lines = data[:end].decode("latin-1").split("\r\n")
                m, tgt, _ = lines[0].split(" ", 2)
                h = {}
                for ln in lines[1:]:
                    k, _, v = ln.partition(":")
                    h[k.strip().lower()] = v.strip()
                n = int(h.get("content-length", "0"))
                if len(data) < end + 4 + n:
                    break
                out.append((m, tgt, h, data[end + 4:end + 4 + n]))
                data = data[end + 4 + n:]
        return out


sn = Sniffer()
ARGS = ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never", "--set", "auth.enabled=on",
        "--set", "auth.secret_file=" + tsf, "--set", "cluster.secret_file=" + csf, "--set", "log.access=on"]
clulib.init(t, "sec", ARGS)

ADMIN = token("--user", "root", "--admin", "--ttl", "1h")
RO_A = token("--user", "bob", "--bucket", "a", "--perm", "ro", "--ttl", "1h")
MON = token("--user", "prom", "--monitor", "--ttl", "1h")

g = Node("g1", "gateway")
t1, t2, t3 = Node("t1", "target"), Node("t2", "target"), Node("t3", "target")
if not t.check(g.start(), "gateway starts"):
    t.finish()
if not t.check(t1.start(join=g.url) and t2.start(join=g.url), "t1 and t2 join"):
    t.finish()
clulib.ARGS = ARGS + ["--set", "cluster.public_url=http://127.0.0.1:%d" % sn.port]
t3.port = 0
ok3 = t3.start(join=g.url)
clulib.ARGS = ARGS
sn.dst = t3.port
if not t.check(ok3, "t3 joins with its cluster-map URL on the sniffing proxy"):
    t.finish()


def smap(node=g):
    r = get(node.url, "/v1/cluster?what=smap", headers=bearer(ADMIN), timeout=5)
    return r.json() if r.status == 200 else None


def node_ids(m):
    return {n["id"] for n in m["nodes"]} if m else set()


want_ids = {g.id, t1.id, t2.id, t3.id}
if not t.check(poll(lambda: node_ids(smap()) == want_ids, 20), "the cluster map lists the four nodes", smap()):
    t.finish()

for b in ("a", "b", "c"):
    t.eq(request("POST", g.url, "/v1/buckets/" + b, json.dumps({"action": "create-bck"}),
                 {**JS, **bearer(ADMIN)}).status, 200, "admin creates bucket %s" % b)
for b, o in (("a", "x"), ("b", "y"), ("c", "z")):
    r1, r2 = clulib.follow("PUT", g.url, "/v1/objects/%s/%s" % (b, o), ("%s/%s secret" % (b, o)).encode(),
                           bearer(ADMIN))
    t.eq(r2.status, 200, "admin PUTs %s/%s" % (b, o))

# --- 1. GetBatch: the body is bound ------------------------------------------------------------
mine = json.dumps({"in": [{"objname": "x", "bucket": "a"}]})
theirs = json.dumps({"in": [{"objname": "z", "bucket": "c"}, {"objname": "y", "bucket": "b"}]})
r1 = request("GET", g.url, "/v1/ml/moss", mine, {**JS, **bearer(RO_A)})
t.check(r1.status == 307 and qparam(r1.h("location") or "", "ais_rsig"), "GetBatch of bucket a: signed 307", r1)
L = r1.h("location") or ""
r = request("GET", *split(L), body=theirs, headers=JS)
t.check(r.status == 401 and b"c/z secret" not in r.body and b"b/y secret" not in r.body,
        "attack 1: the GetBatch 307 replayed with entries of buckets c and b: 401", r)
r = request("GET", *split(L), body=mine, headers=JS)
got = tar_members(r.body) if r.status == 200 else []
t.check(r.status == 200 and [v for _, v in got] == [b"a/x secret"], "... with its own body: a/x", r)
r = request("GET", t1.url, "/v1/ml/moss", theirs, {**JS, **bearer(RO_A)})
t.eq(r.status, 403, "GetBatch straight at a target naming buckets the token lacks: 403")

# --- 2. signed redirects: no renewal, no other body ----------------------------------------------
SHORT = token("--user", "eve", "--bucket", "a", "--perm", "ro", "--ttl", "3s")
texp = claims(SHORT)["exp"]
r1 = get(g.url, "/v1/objects/a/x", headers=bearer(SHORT))
L = r1.h("location") or ""
t.check(r1.status == 307 and L and int(qparam(L, "ais_rexp") or 1 << 40) <= texp,
        "a 3 s token's 307 expires with the token, not 60 s later", L)
time.sleep(1.1)  # a renewal would show as a later expiry
r2 = get(g.url, split(L)[1])  # the target's URL sent back to the gateway, without the token
L2 = r2.h("location") or ""
t.check(r2.status == 307 and qparam(L2, "ais_rexp") == qparam(L, "ais_rexp") and
        qparam(L2, "ais_rsig") == qparam(L, "ais_rsig"),
        "attack 2: the signed URL sent back to the gateway is not renewed (same expiry and signature)", r2)
time.sleep(max(0, texp + 1.5 - time.time()))
r = get(*split(L2 or L))
t.check(r.status == 401 and b"a/x secret" not in r.body, "... and is 401 once the token has expired", r)

probe = json.dumps({"action": "start-maintenance", "value": {"sid": "no-such-node"}})
evil = json.dumps({"action": "start-maintenance", "value": {"sid": t2.id}})
r1 = request("PUT", t1.url, "/v1/cluster", probe, {**JS, **bearer(ADMIN)})
C = r1.h("location") or ""
t.check(r1.status == 307 and qparam(C, "ais_rsig"), "a cluster action at a target: signed 307 to the primary", r1)
r = request("PUT", *split(C), body=evil, headers=JS)
t.eq(r.status, 401, "attack 2: that 307 with start-maintenance of t2 and no token: 401")
time.sleep(1)
states = {n["id"]: n.get("state") for n in (smap() or {}).get("nodes", [])}
t.check(states.get(t2.id) in ("active", None) and t2.id in states, "t2 is not in maintenance", states)
t.eq(request("PUT", *split(C), body=probe, headers=JS).status, 404, "... the 307 with its own body: 404 (no node)")

# --- 3. a sniffed intra-cluster call ------------------------------------------------------------
t.eq(request("POST", g.url, "/v1/buckets/d", json.dumps({"action": "create-bck"}), {**JS, **bearer(ADMIN)}).status,
     200, "admin creates bucket d (a BMD push through the sniffer)")


def pushes():
    return [x for x in sn.requests() if x[0] == "PUT" and x[1].startswith("/v1/metasync") and b'"d"' in x[3]]


poll(lambda: pushes(), 10)
cap = pushes()
if t.check(cap, "the sniffer saw a metasync push to t3 with its cluster signature"):
    m, tgt, hdrs, body = cap[-1]
    doc = json.loads(body)
    bmd = doc["bmd"]
    ver = bmd["version"]
    bmd["version"] = ver + 50
    bmd["buckets"] = [b for b in bmd["buckets"] if b["name"] != "a"] + [dict(bmd["buckets"][0], name="evil")]
    forged = json.dumps(doc)
    sig = {"Ais-Cluster-Auth": hdrs.get("ais-cluster-auth", ""), **JS}
    r = request("PUT", t3.url, tgt, forged, sig)
    t.eq(r.status, 401, "attack 3: the captured header with a forged BMD (v+50, a removed): 401")
    r = request("PUT", t3.url, tgt, body, sig)
    t.eq(r.status, 401, "the captured call sent again as it was (a replay): 401")
    r = request("PUT", t1.url, tgt, body, sig)
    t.eq(r.status, 401, "the captured call sent to another node: 401")

    # a node with the secret that is not the primary pushes a newer BMD
    def intra(method, host, target, body):
        ts, nonce = str(int(time.time())), secrets.token_hex(8)
        dig = hashlib.sha256(body.encode()).hexdigest() if body else "-"
        msg = "\n".join(["aisd-intra-v2", ts, nonce, method, host, target, dig])
        return "%s.%s.%s.%s" % (ts, nonce, dig, hmac.new(CSECRET.encode(), msg.encode(), hashlib.sha256).hexdigest())
    tgt1 = "/v1/metasync?from=" + t1.id
    r = request("PUT", t3.url, tgt1, forged,
                {"Ais-Cluster-Auth": intra("PUT", "127.0.0.1:%d" % sn.port, tgt1, forged), **JS})
    t.check(r.status == 403 and "not the primary" in (r.json() or {}).get("message", ""),
            "a validly signed push from t1 (not the primary): 403", r)
    # the canonical form, checked by an independent implementation: the same header for GET smap is taken
    r = get(t3.url, "/v1/cluster?what=smap",
            headers={"Ais-Cluster-Auth": intra("GET", "127.0.0.1:%d" % sn.port, "/v1/cluster?what=smap", "")})
    t.eq(r.status, 200, "an intra-cluster signature made here (Python) from the documented canonical form")
    time.sleep(1.5)
    for n in (g, t1, t2, t3):
        r = get(n.url, "/v1/cluster?what=bmd", headers=bearer(ADMIN))
        names = {b["name"] for b in (r.json() or {}).get("buckets", [])} if r.status == 200 else set()
        t.check("a" in names and "evil" not in names and (r.json() or {}).get("version", 0) < ver + 50,
                "%s: bucket a is still there, no bucket evil" % n.name, r)

# --- 4. logs ---------------------------------------------------------------------------------------
r = get(g.url, "/v1/objects/a/x?X-Amz-Signature=SNIFFME0123&ais_rsig=SNIFFME4567", headers=bearer(RO_A))
time.sleep(0.5)
logtext = open(g.log, errors="replace").read()
t.check("SNIFFME" not in logtext and "X-Amz-Signature=REDACTED" in logtext and "ais_rsig=REDACTED" in logtext,
        "the access log shows signatures as REDACTED")
for n in (g, t1):
    mode = stat.S_IMODE(os.stat(n.log).st_mode)
    t.check(mode & 0o007 == 0, "%s's log is not world-readable (%o)" % (n.name, mode))

# --- 5. who may read statistics -----------------------------------------------------------------------
for node, path in ((g, "/v1/cluster?what=stats"), (t1, "/v1/daemon?what=stats"), (t1, "/v1/daemon"),
                   (t1, "/v1/daemon/mountpaths"), (g, "/metrics"), (t1, "/metrics")):
    t.eq(get(node.url, path, headers=bearer(RO_A)).status, 403, "%s %s with a bucket token: 403" % (node.name, path))
    t.eq(get(node.url, path, headers=bearer(MON)).status, 200, "%s %s with a monitor token: 200" % (node.name, path))
t.eq(get(g.url, "/v1/cluster?what=smap", headers=bearer(RO_A)).status, 200, "the cluster map with a bucket token: 200")
t.eq(request("PUT", g.url, "/v1/cluster", json.dumps({"action": "set-config", "value": {"log.level": "info"}}),
             {**JS, **bearer(MON)}).status, 403, "a monitor token cannot change anything: 403")

# --- 6. the standalone target: attach-mp roots, head framing ------------------------------------------------
U = os.environ["AISD_URL"]
outside = "/tmp/aisd-sec-outside-%d" % os.getpid()
r = request("PUT", U, "/v1/daemon/mountpaths", json.dumps({"action": "attach-mp", "value": outside}), JS)
t.check(r.status == 403 and not os.path.exists(outside), "attach-mp outside the mountpaths' parent: 403, nothing made", r)
r = request("PUT", U, "/v1/daemon/mountpaths",
            json.dumps({"action": "attach-mp", "value": os.environ["AISD_DIR"] + "/../../etc"}), JS)
t.eq(r.status, 403, "attach-mp escaping with ..: 403")
inside = os.path.join(os.environ["AISD_DIR"], "mp-extra")
r = request("PUT", U, "/v1/daemon/mountpaths", json.dumps({"action": "attach-mp", "value": inside}), JS)
t.eq(r.status, 200, "attach-mp beside the other mountpaths: 200")
r = request("DELETE", U, "/v1/daemon/mountpaths", json.dumps({"action": "detach-mp", "value": inside}), JS)
t.eq(r.status, 200, "... and detach-mp")


def raw(data):
    host, port = urllib.parse.urlsplit(U).hostname, urllib.parse.urlsplit(U).port
    s = socket.create_connection((host, port), timeout=10)
    s.sendall(data)
    out = b""
    try:
        while b"\r\n\r\n" not in out:
            d = s.recv(4096)
            if not d:
                break
            out += d
    except OSError:
        pass
    s.close()
    return out.split(b"\r\n", 1)[0]


t.check(b" 400 " in raw(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n folded\r\n\r\n"), "obs-fold: 400")
t.check(b" 400 " in raw(b"GET /v1/health HTTP/1.1\nHost: x\n\n"), "bare LF line ends: 400")
t.check(b" 400 " in raw(b"GET /v1/health HTTP/1.1\r\nHost: x\nX-B: 2\r\n\r\n"), "one bare LF among CRLFs: 400")
t.check(b" 200 " in raw(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"), "CRLF throughout: 200")

clulib.check_logs([g, t1, t2, t3])
t.finish()
