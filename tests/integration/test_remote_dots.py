"""test_remote_dots.py - object names with "." or ".." segments never leave
the bucket they name, here or on a remote. The remote is a second aisd
cluster (1 gateway + 1 target, auth on, a cluster secret) with buckets
pub and secret; the front cluster (1 gateway + 1 target) has bucket mirror
in front of pub through the native API (ais://@r/pub), attached with an
admin token of the remote. Every process is started here on loopback
ports and stopped by PID.

Checks:
 1. The setup works: a cold GET of mirror/hello is pub/hello (the remote
    gateway's 307 followed without the token: its signed redirect is the
    authorization).
 2. GET of mirror/../secret/payroll (raw, sent as is), ..%2F, %2E%2E/,
    %2e%2e%2f: 400 with a JSON message, never the secret's bytes.
 3. The same through S3 (GET /mirror/../secret/payroll) and GetBatch
    (an entry "../secret/payroll"): 400, no bytes of it.
 4. PUT mirror/../secret/payroll and DELETE mirror/../../buckets/zzz:
    400, and the remote's secret/payroll and bucket zzz are unchanged.
 5. A prefetch list naming ../secret/payroll: 400.
 6. No error-level line in any node's log.
"""
# timeout: 120
import http.client
import json
import os
import subprocess
import urllib.parse

from itlib import T

import clulib
from clulib import Node, poll, request

JSON = {"Content-Type": "application/json"}
SECRET = b"payroll: everyone gets a raise" * 10

t = T()
BASE = ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never"]
clulib.init(t, "rdots", BASE)


def start(nodes, join=None):
    for n in nodes:
        if not t.check(n.start(join=join), "%s starts" % n.name):
            t.finish()


def raw(method, url, path, body=None, headers=None, hops=3):
    """One request with the path sent byte for byte (http.client does not
    resolve dot segments), its 307s followed; returns the last response."""
    r = None
    for _ in range(hops + 1):
        u = urllib.parse.urlsplit(url)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        try:
            c.request(method, path, body=body, headers=headers or {})
            resp = c.getresponse()
            r = clulib.R(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            c.close()
        if r.status != 307:
            return r
        loc = urllib.parse.urlsplit(r.h("location"))
        url, path = "%s://%s" % (loc.scheme, loc.netloc), loc.path + ("?" + loc.query if loc.query else "")
    return r


def refused(r, what):
    d = {}
    try:
        d = json.loads(r.body or b"{}")
    except ValueError:
        pass
    t.check(r.status == 400 and SECRET not in (r.body or b"") and isinstance(d.get("message"), str),
            "%s: 400 JSON, nothing of the secret" % what, (r.status, (r.body or b"")[:200]))


tsf, csf = clulib.secret_files("rdots")
clulib.ARGS = BASE + ["--set", "auth.enabled=on", "--set", "auth.secret_file=" + tsf,
                      "--set", "cluster.secret_file=" + csf]
cp = subprocess.run([os.environ["AISCTL"], "auth", "token", "create", "--secret-file", tsf, "--user", "root",
                     "--admin", "--ttl", "1h"], capture_output=True, text=True, timeout=30,
                    env=dict(os.environ, AISCTL_CONFIG=os.devnull))
ADMIN = cp.stdout.strip()
t.check(cp.returncode == 0 and ADMIN.count(".") == 2, "an admin token of the remote", cp.stderr)
AUTH = {"Authorization": "Bearer " + ADMIN}
AJ = dict(JSON, **AUTH)
rg, rt = Node("rg1", "gateway"), Node("rt1", "target")
start([rg])
start([rt], join=rg.url)


def remote_ids():
    r = request("GET", rg.url, "/v1/cluster?what=smap", None, AUTH, timeout=5)
    return {n["id"] for n in r.json()["nodes"]} if r.status == 200 else None


t.check(poll(lambda: remote_ids() == {rg.id, rt.id}, 20), "the remote cluster forms")
clulib.ARGS = BASE
g, ft = Node("g1", "gateway"), Node("t1", "target")
start([g])
start([ft], join=g.url)
t.check(poll(lambda: clulib.smap_ids(g) == {g.id, ft.id}, 20), "the front cluster forms")
ALL = [rg, rt, g, ft]

for b in ("pub", "secret", "zzz"):
    t.eq(request("POST", rg.url, "/v1/buckets/" + b, json.dumps({"action": "create-bck"}), AJ).status, 200,
         "remote bucket %s" % b)
t.eq(raw("PUT", rg.url, "/v1/objects/secret/payroll", SECRET, AUTH).status, 200, "remote secret/payroll")
t.eq(raw("PUT", rg.url, "/v1/objects/pub/hello", b"hello", AUTH).status, 200, "remote pub/hello")
t.eq(raw("GET", rg.url, "/v1/objects/pub/hello").status, 401, "the remote wants a token")
r = request("PUT", g.url, "/v1/remotes/r", json.dumps({"kind": "ais", "url": rg.url, "token": ADMIN}), JSON)
t.check(r.status == 200, "remote r attached (aisd native)", r.body[:200])
r = request("POST", g.url, "/v1/buckets/mirror",
            json.dumps({"action": "create-bck", "value": {"backend": {"provider": "ais", "remote": "r",
                                                                      "bucket": "pub"}}}), JSON)
t.check(r.status == 200, "bucket mirror in front of ais://@r/pub", r.body[:200])

# --- 1. the setup works ------------------------------------------------------------
r = raw("GET", g.url, "/v1/objects/mirror/hello")
t.check(r.status == 200 and r.body == b"hello", "cold GET mirror/hello is pub/hello", (r.status, r.body[:200]))

# --- 2. native GETs ----------------------------------------------------------------
for path in ["/v1/objects/mirror/../secret/payroll", "/v1/objects/mirror/..%2Fsecret%2Fpayroll",
             "/v1/objects/mirror/%2E%2E/secret/payroll", "/v1/objects/mirror/%2e%2e%2fsecret%2fpayroll",
             "/v1/objects/mirror/x/../../secret/payroll", "/v1/objects/mirror/./../secret/payroll"]:
    refused(raw("GET", g.url, path), "GET " + path)
    refused(raw("GET", ft.url, path), "GET %s on the target" % path)

# --- 3. S3 and GetBatch -----------------------------------------------------------------
for path in ["/mirror/../secret/payroll", "/mirror/%2E%2E/secret/payroll", "/mirror/..%2Fsecret%2Fpayroll"]:
    r = raw("GET", g.url, path)
    t.check(r.status == 400 and SECRET not in r.body and b"<Code>InvalidArgument</Code>" in r.body,
            "S3 GET %s: 400 S3 XML, nothing of the secret" % path, (r.status, r.body[:200]))
mb = json.dumps({"in": [{"objname": "hello"}, {"objname": "../secret/payroll"}], "mime": ".tar"}).encode()
refused(raw("GET", g.url, "/v1/ml/moss/mirror", mb, JSON), "GetBatch with an entry ../secret/payroll")

# --- 4. writes and deletes ----------------------------------------------------------------
refused(raw("PUT", g.url, "/v1/objects/mirror/../secret/payroll", b"overwritten"), "PUT mirror/../secret/payroll")
refused(raw("DELETE", g.url, "/v1/objects/mirror/../secret/payroll"), "DELETE mirror/../secret/payroll")
refused(raw("DELETE", g.url, "/v1/objects/mirror/../../buckets/zzz"), "DELETE mirror/../../buckets/zzz")
r = raw("GET", rg.url, "/v1/objects/secret/payroll", None, AUTH)
t.check(r.status == 200 and r.body == SECRET, "the remote's secret/payroll is unchanged", r.status)
t.eq(request("HEAD", rg.url, "/v1/buckets/zzz", None, AUTH).status, 200, "the remote's bucket zzz still exists")

# --- 5. prefetch --------------------------------------------------------------------------
r = request("POST", g.url, "/v1/buckets/mirror",
            json.dumps({"action": "prefetch-listrange", "value": {"list": ["hello", "../secret/payroll"]}}), JSON)
t.check(r.status == 400, "prefetch of a list naming ../secret/payroll", r.body[:200])

clulib.check_logs(ALL)
t.finish()
