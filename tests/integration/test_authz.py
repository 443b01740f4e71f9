#!/usr/bin/env python3
"""test_authz.py - access control end to end: a gateway and two targets
with auth.enabled and a cluster.secret; tokens made by `aisctl auth token
create`; real clients (http.client, aisctl, the aisd Python package,
boto3).

Checks: /v1/health needs nothing; no token 401 (WWW-Authenticate, JSON
body); garbage, forged and expired tokens 401; admin creates buckets, others
403; an rw token PUTs and GETs through the gateway, the 307 followed
WITHOUT the token (the signed redirect carries the gateway's word); an ro
token GETs but its PUT is 403; a token for bucket A is 403 on bucket B;
forged, expired, re-used (other object, other method) signed redirects and
bare requests straight to a target are 401; the Ais-Intra header without
the cluster's signature is 401; a stranger node with another cluster
secret cannot join and cannot push metasync, join or vote; aisctl with
--token and $AIS_AUTHN_TOKEN; the Python client with a token; S3 (boto3):
a key whose user has ro on the bucket reads but its PUT is AccessDenied,
an rw user's PUT works.
"""
import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python"))

import clulib
import hrwlib
from clulib import Node, R, get, poll, request
from itlib import T

t = T()
AISCTL = os.path.join(os.path.dirname(os.environ["AISD_BIN"]), "aisctl")
base = os.path.join(os.environ["AISD_DIR"], "authz")
TSECRET, CSECRET = clulib.TOKEN_SECRET, clulib.CLUSTER_SECRET
tsf, csf = clulib.secret_files("authz")
AK_RO, SK_RO, AK_RW, SK_RW = "authzrokey", "authzrosecret", "authzrwkey", "authzrwsecret"

clulib.init(t, "authz", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                         "--set", "auth.enabled=on", "--set", "auth.secret_file=" + tsf,
                         "--set", "cluster.secret_file=" + csf,
                         "--set", "s3.key=%s:%s:s3reader:S3 Reader" % (AK_RO, SK_RO),
                         "--set", "s3.key=%s:%s:s3writer:S3 Writer" % (AK_RW, SK_RW),
                         "--set", "auth.grant=s3reader:ba:ro", "--set", "auth.grant=s3writer:ba:rw"])


def aisctl(*args, env=None):
    e = dict(os.environ)
    e.pop("AIS_AUTHN_TOKEN", None)
    e["AISCTL_CONFIG"] = os.devnull
    e.update(env or {})
    cp = subprocess.run([AISCTL] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, env=e, timeout=60)
    return cp.returncode, cp.stdout.decode(errors="replace"), cp.stderr.decode(errors="replace")


def token(*args):
    rc, out, err = aisctl("auth", "token", "create", "--secret-file", tsf, *args)
    t.check(rc == 0 and out.count(".") == 2, "aisctl auth token create %s" % " ".join(args), err)
    return out.strip()


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def jwt(claims, secret=TSECRET):
    h = b64u(b'{"alg":"HS256","typ":"JWT"}') + "." + b64u(json.dumps(claims).encode())
    return h + "." + b64u(hmac.new(secret.encode(), h.encode(), hashlib.sha256).digest())


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


def split(loc):
    u = urllib.parse.urlsplit(loc)
    return "%s://%s" % (u.scheme, u.netloc), u.path + ("?" + u.query if u.query else "")


ADMIN = token("--user", "root", "--admin", "--ttl", "1h")
RW_A = token("--user", "alice", "--bucket", "ba", "--perm", "rw", "--ttl", "1h")
RO_A = token("--user", "bob", "--bucket", "ba", "--perm", "ro")
RW_B = token("--user", "carol", "--bucket", "bb", "--perm", "rw", "--ttl", "30m")
MON = token("--user", "prom", "--monitor")
EXPIRED = jwt({"username": "alice", "admin": True, "exp": int(time.time()) - 10})
FORGED = jwt({"username": "mallory", "admin": True, "exp": int(time.time()) + 3600}, "not-the-secret-at-all")


def smap(node, tok=ADMIN):
    try:
        r = get(node.url, "/v1/cluster?what=smap", headers=bearer(tok), timeout=5)
        d = r.json() if r.status == 200 else None
        return {n["id"] for n in d["nodes"]} if d else None
    except (OSError, KeyError, TypeError):
        return None


g = Node("g1", "gateway")
ts = [Node("t1", "target"), Node("t2", "target")]
if not t.check(g.start(), "gateway starts with auth.enabled"):
    t.finish()
if not t.check(all(x.start(join=g.url) for x in ts), "targets start and join with the cluster secret"):
    t.finish()
t.check(poll(lambda: smap(g) == {g.id} | {x.id for x in ts}, 20), "the cluster map lists every node")

# --- 401 and 403 on the gateway ---------------------------------------------------
t.eq(get(g.url, "/v1/health").status, 200, "/v1/health needs no credentials")
r = get(g.url, "/v1/buckets/")
t.check(r.status == 401 and (r.h("www-authenticate") or "").startswith("Bearer") and
        (r.json() or {}).get("status") == 401 and "credentials" in (r.json() or {}).get("message", ""),
        "no token: 401, WWW-Authenticate, JSON body", r)
for name, tok in (("garbage", "abc.def.ghi"), ("forged", FORGED), ("expired", EXPIRED),
                  ("alg none", b64u(b'{"alg":"none"}') + "." + FORGED.split(".")[1] + ".")):
    r = get(g.url, "/v1/buckets/", headers=bearer(tok))
    t.check(r.status == 401 and "invalid_token" in (r.h("www-authenticate") or ""), "%s token: 401" % name, r)
t.check(get(g.url, "/metrics").status == 401, "/metrics needs credentials")
t.eq(get(g.url, "/metrics", headers=bearer(RO_A)).status, 403, "/metrics with a bucket token: 403")
t.eq(get(g.url, "/metrics", headers=bearer(MON)).status, 200, "/metrics with a monitor token")
t.eq(get(g.url, "/metrics", headers=bearer(ADMIN)).status, 200, "/metrics with an admin token")

r = request("POST", g.url, "/v1/buckets/ba", json.dumps({"action": "create-bck"}),
            {"Content-Type": "application/json", **bearer(RW_A)})
t.check(r.status == 403 and "administrator" in (r.json() or {}).get("message", ""),
        "a non-admin token cannot create a bucket: 403", r)
for b in ("ba", "bb"):
    r = request("POST", g.url, "/v1/buckets/" + b, json.dumps({"action": "create-bck"}),
                {"Content-Type": "application/json", **bearer(ADMIN)})
    t.eq(r.status, 200, "admin creates bucket %s" % b)

# --- the data path: signed redirects -------------------------------------------------
body = os.urandom(100000)
r1 = request("PUT", g.url, "/v1/objects/ba/dir/o1", body, bearer(RW_A))
loc = r1.h("location") or ""
t.check(r1.status == 307 and "ais_rsig=" in loc and "ais_rexp=" in loc, "gateway 307 carries a signed redirect", r1)
tgt, path = split(loc)
r2 = request("PUT", tgt, path, body)  # no token: the gateway's signature is the proof
t.eq(r2.status, 200, "PUT at the target with the signed redirect, without the token")
r1 = get(g.url, "/v1/objects/ba/dir/o1", headers=bearer(RO_A))
tgt, gpath = split(r1.h("location") or "")
r2 = get(tgt, gpath)
t.check(r1.status == 307 and r2.status == 200 and r2.body == body, "ro token GETs through the redirect", r2)
r = request("PUT", g.url, "/v1/objects/ba/o2", b"x", bearer(RO_A))
t.check(r.status == 403 and "write" in (r.json() or {}).get("message", ""), "ro token PUT: 403", r)
r = request("DELETE", g.url, "/v1/objects/ba/dir/o1", None, bearer(RO_A))
t.eq(r.status, 403, "ro token DELETE: 403")
t.eq(get(g.url, "/v1/objects/ba/dir/o1", headers=bearer(RW_B)).status, 403, "a token for bucket bb on ba: 403")
t.eq(get(g.url, "/v1/objects/bb/x", headers=bearer(RW_A)).status, 403, "a token for bucket ba on bb: 403")
t.eq(clulib.follow("GET", g.url, "/v1/buckets/ba", None, bearer(RO_A))[1].status, 200,
     "ro token lists the bucket (fan-out to targets is intra-signed)")

# straight to a target, forged or stale
sig = urllib.parse.parse_qs(urllib.parse.urlsplit(gpath).query)["ais_rsig"][0]
exp = urllib.parse.parse_qs(urllib.parse.urlsplit(gpath).query)["ais_rexp"][0]
opath = urllib.parse.urlsplit(gpath).path
cases = {
    "no credentials": opath,
    "forged signature": "%s?ais_rexp=%s&ais_rsig=%s" % (opath, exp, "0" * 64),
    "expired signature": "%s?ais_rexp=%d&ais_rsig=%s" % (opath, int(time.time()) - 5, sig),
    "signature of another object": "/v1/objects/ba/other?ais_rexp=%s&ais_rsig=%s" % (exp, sig),
    "later expiry, same signature": "%s?ais_rexp=%d&ais_rsig=%s" % (opath, int(exp) + 1000, sig),
}
for what, p in cases.items():
    r = get(tgt, p)
    t.check(r.status == 401 and (r.json() or {}).get("status") == 401, "direct target GET, %s: 401" % what, r)
r = request("PUT", tgt, gpath, b"evil")
t.eq(r.status, 401, "a GET's signed redirect used for a PUT: 401")
t.eq(get(tgt, opath, headers=bearer(RW_B)).status, 403, "direct target GET with another bucket's token: 403")
t.eq(get(tgt, opath, headers=bearer(RO_A)).status, 200, "direct target GET with the right token: 200")
other_t = [x for x in ts if x.url != tgt][0]
r1 = get(other_t.url, opath, headers=bearer(RO_A))
loc = r1.h("location") or ""
r2 = get(*split(loc)) if r1.status == 307 else r1
t.check(r1.status == 307 and "ais_rsig=" in loc and split(loc)[0] == tgt and r2.status == 200 and r2.body == body,
        "a target that does not hold the object signs its own 307 to the owner", r1)
r = get(tgt, opath, headers={"Ais-Intra": "fetch"})
t.eq(r.status, 401, "Ais-Intra without the cluster signature: 401")
r = get(tgt, opath, headers={"Ais-Intra": "fetch", "Ais-Cluster-Auth": "%d.%s" % (time.time(), "a" * 64)})
t.eq(r.status, 401, "Ais-Intra with a forged cluster signature: 401")

# --- strangers --------------------------------------------------------------------------
for n in [g] + ts:
    r = request("PUT", n.url, "/v1/metasync", json.dumps({"cmap": {}}), {"Content-Type": "application/json"})
    t.eq(r.status, 401, "%s: metasync without the cluster secret: 401" % n.name)
r = request("PUT", ts[0].url, "/v1/metasync", json.dumps({"cmap": {}}),
            {"Content-Type": "application/json", **bearer(ADMIN)})
t.eq(r.status, 403, "metasync with an admin token (not a node): 403")
r = request("POST", g.url, "/v1/cluster/join", json.dumps({"id": "evil"}), {"Content-Type": "application/json"})
t.eq(r.status, 401, "join without the cluster secret: 401")
r = request("POST", g.url, "/v1/cluster/vote", json.dumps({}), {"Content-Type": "application/json"})
t.eq(r.status, 401, "vote without the cluster secret: 401")

other = os.path.join(base, "other.secret")
with open(other, "w") as f:
    f.write("a-different-cluster-secret-000\n")
stranger = Node("stranger", "target")
save = clulib.ARGS
clulib.ARGS = ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
               "--set", "cluster.secret_file=" + other]
stranger.start(join=g.url)  # may exit: its join is refused
clulib.ARGS = save


def refused():
    p = clulib.procs.get("stranger")
    try:
        with open(stranger.log, errors="replace") as f:
            said = "cannot join the cluster" in f.read()
    except OSError:
        said = False
    return said or (p is not None and p.poll() is not None)


t.check(clulib.poll(refused, 30), "the stranger's join is refused (its log says so, or it exits)")
t.check(stranger.id not in (smap(g) or {stranger.id}), "a node with another cluster secret is not let in")
p = clulib.procs.get("stranger")
if p and p.poll() is None:
    p.terminate()
    p.wait(10)

# --- aisctl --------------------------------------------------------------------------------
src = os.path.join(base, "up.bin")
with open(src, "wb") as f:
    f.write(body)
rc, out, err = aisctl("-e", g.url, "ls", "ba")
t.check(rc != 0 and "401" in err + out, "aisctl without a token fails with 401", err)
rc, out, err = aisctl("-e", g.url, "--token", RW_A, "put", src, "ba/cli.bin")
t.check(rc == 0, "aisctl --token put (through the gateway's signed 307)", err)
rc, out, err = aisctl("-e", g.url, "ls", "ba", env={"AIS_AUTHN_TOKEN": RO_A})
t.check(rc == 0 and "cli.bin" in out, "aisctl with $AIS_AUTHN_TOKEN lists the bucket", err)
dst = os.path.join(base, "down.bin")
rc, out, err = aisctl("-e", g.url, "--token", RO_A, "get", "ba/cli.bin", dst)
t.check(rc == 0 and open(dst, "rb").read() == body, "aisctl --token get", err)
rc, out, err = aisctl("-e", g.url, "--token", RO_A, "put", src, "ba/no.bin")
t.check(rc != 0 and "403" in err, "aisctl put with an ro token: 403", err)
rc, out, err = aisctl("-e", g.url, "--token", RO_A, "bucket", "create", "bz")
t.check(rc != 0 and "403" in err, "aisctl bucket create with a non-admin token: 403", err)

# --- the Python client ------------------------------------------------------------------------
from aisd import Client, HTTPError  # noqa: E402

c = Client(g.url, token=RW_A, retry_for=5)
c.put("ba", "py.bin", b"hello")
t.eq(c.get("ba", "py.bin"), b"hello", "Python client with a token: PUT and GET")
try:
    Client(g.url, token=RO_A, retry_for=0).put("ba", "py2.bin", b"x")
    t.fail("Python client ro token PUT should fail")
except HTTPError as e:
    t.eq(e.status, 403, "Python client ro token PUT: HTTPError 403")

# --- GetBatch, replication, cluster operations ------------------------------------------------
import io  # noqa: E402
import tarfile  # noqa: E402

# entries on both targets (placement computed from the map here), so the
# batch always takes some from the peer
ids = sorted(smap(g) - {g.id})
names = ["gb/%d" % i for i in range(6)]
while len({hrwlib.top("ba/" + n, ids, 1)[0] for n in names}) < 2:
    names.append("gb/%d" % len(names))
t.check(len(ids) == 2, "two targets in the map", ids)
for n in names:
    c.put("ba", n, n.encode())
JS = {"Content-Type": "application/json"}
mb = json.dumps({"in": [{"objname": n} for n in names], "mime": ".tar"})
r1 = request("GET", g.url, "/v1/ml/moss/ba", mb, {**JS, **bearer(RO_A)})
ok = r1.status == 307
if ok:
    tgt2, p2 = split(r1.h("location"))
    r2 = request("GET", tgt2, p2, mb, JS)  # no token: signed redirect; peers' entries come intra-signed
    try:
        with tarfile.open(fileobj=io.BytesIO(r2.body)) as tf:
            got = {m.name: tf.extractfile(m).read() for m in tf.getmembers()}
    except (tarfile.TarError, AttributeError):
        got = {}
    ok = r2.status == 200 and all(got.get("ba/" + n) == n.encode() for n in names)
t.check(ok, "GetBatch with an ro token, across both targets, through the signed redirect", r1)
t.eq(request("GET", g.url, "/v1/ml/moss/ba", mb, {**JS, **bearer(RW_B)}).status, 403,
     "GetBatch with another bucket's token: 403")
mb2 = json.dumps({"in": [{"objname": names[0]}, {"objname": "x", "bucket": "bb"}], "mime": ".tar"})
t.eq(request("GET", g.url, "/v1/ml/moss/ba", mb2, {**JS, **bearer(RO_A)}).status, 403,
     "GetBatch naming a bucket the token lacks: 403")

mirror = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(request("PATCH", g.url, "/v1/buckets/ba", mirror, {**JS, **bearer(RW_A)}).status, 403,
     "set-bprops with an rw (not admin) token: 403")
t.eq(request("PATCH", g.url, "/v1/buckets/ba", mirror, {**JS, **bearer(ADMIN)}).status, 200,
     "set-bprops mirror.copies=2 with an admin token")
try:
    c.put("ba", "mirrored", b"m" * 5000)
    t.ok("a replicated PUT (the copy goes target to target, intra-signed)")
except HTTPError as e:
    t.fail("a replicated PUT", e)
t.check(all(get(x.url, "/v1/objects/ba/mirrored", headers=bearer(RO_A)).body == b"m" * 5000 for x in ts),
        "both targets serve their copy")
t.eq(request("DELETE", g.url, "/v1/buckets/bb", None, bearer(RW_B)).status, 403,
     "destroying a bucket needs its admin permission: rw gets 403")
cfg = json.dumps({"action": "set-config", "value": {"log.level": "info"}})
t.eq(request("PUT", g.url, "/v1/cluster", cfg, {**JS, **bearer(RO_A)}).status, 403,
     "set-config with a non-admin token: 403")
rc, out, err = aisctl("-e", g.url, "--token", ADMIN, "config", "set", "log.level=info")
t.check(rc == 0, "aisctl config set with an admin token (the primary's fan-out is intra-signed)", err)
rc, out, err = aisctl("-e", g.url, "--token", ADMIN, "cluster", "show")
t.check(rc == 0 and ts[0].id in out, "aisctl cluster show with a token", err + out)

# --- S3 --------------------------------------------------------------------------------------
try:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError
except ImportError:
    boto3 = None
if t.check(boto3 is not None, "boto3 is available (/usr/bin/python3)"):
    def s3(ak, sk):
        return boto3.client("s3", endpoint_url=g.url, aws_access_key_id=ak, aws_secret_access_key=sk,
                            region_name="us-east-1",
                            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    ro, rw = s3(AK_RO, SK_RO), s3(AK_RW, SK_RW)
    got = ro.get_object(Bucket="ba", Key="dir/o1")["Body"].read()
    t.check(got == body, "S3 key with ro: GetObject works")
    try:
        ro.put_object(Bucket="ba", Key="s3ro", Body=b"x")
        t.fail("S3 ro PutObject should be denied")
    except ClientError as e:
        t.check(e.response["Error"]["Code"] == "AccessDenied" and
                e.response["ResponseMetadata"]["HTTPStatusCode"] == 403, "S3 key with ro: PutObject AccessDenied 403")
    try:
        ro.get_object(Bucket="bb", Key="x")
        t.fail("S3 read of a bucket without a grant should be denied")
    except ClientError as e:
        t.eq(e.response["Error"]["Code"], "AccessDenied", "S3 key without a grant on bb: AccessDenied")
    try:
        rw.create_bucket(Bucket="s3new")
        t.fail("S3 CreateBucket by a non-admin should be denied")
    except ClientError as e:
        t.eq(e.response["Error"]["Code"], "AccessDenied", "S3 CreateBucket by a non-admin: AccessDenied")
    rw.put_object(Bucket="ba", Key="s3rw", Body=b"written")
    t.eq(ro.get_object(Bucket="ba", Key="s3rw")["Body"].read(), b"written", "S3 key with rw: PutObject works")
    # S3 ACLs under auth.enabled: grants decide for keys; a public ACL (set
    # by an admin) opens anonymous reads, never writes
    t.eq(request("GET", g.url, "/ba/dir/o1").status, 403, "S3 anonymous GET, no public ACL: 403")
    try:
        rw.put_bucket_acl(Bucket="ba", ACL="public-read")
        t.fail("S3 PutBucketAcl public-read by a non-admin should be denied")
    except ClientError as e:
        t.eq(e.response["Error"]["Code"], "AccessDenied", "S3 PutBucketAcl public-read by an rw key: AccessDenied")
    public = json.dumps({"action": "set-bprops", "value": {"s3": {"acl": "aR"}}})
    t.eq(request("PATCH", g.url, "/v1/buckets/ba", public, {**JS, **bearer(RW_A)}).status, 403,
         "set-bprops s3.acl with an rw token: 403")
    t.eq(request("PATCH", g.url, "/v1/buckets/ba", public, {**JS, **bearer(ADMIN)}).status, 200,
         "set-bprops s3.acl=aR (AllUsers READ) with an admin token")
    got = request("GET", g.url, "/ba/dir/o1")
    t.check(got.status == 200 and got.body == body, "S3 anonymous GET of a natively PUT object in a public-read "
            "bucket: 200", got.status)
    t.eq(request("GET", g.url, "/ba/s3rw").status, 403,
         "S3 anonymous GET of an object PUT through S3 (its own ACL: private): 403")
    t.eq(request("GET", g.url, "/ba?list-type=2").status, 200, "S3 anonymous list of a public-read bucket: 200")
    t.eq(request("PUT", g.url, "/ba/anon", b"x").status, 403, "S3 anonymous PUT: still 403")
    t.eq(request("GET", g.url, "/bb/x").status, 403, "S3 anonymous GET in a bucket without an ACL: 403")

# --- cluster.secret alone (auth.enabled off): open to clients, closed to strangers -------------------
clulib.init(t, "authz-csec", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                              "--set", "cluster.secret=" + CSECRET])
g2, t3 = Node("g2", "gateway"), Node("t3", "target")
if t.check(g2.start() and t3.start(join=g2.url), "a cluster with cluster.secret and auth off forms"):
    t.check(poll(lambda: smap(g2, "") == {g2.id, t3.id}, 20), "the target joined (intra-signed)")
    t.eq(request("POST", g2.url, "/v1/buckets/open", json.dumps({"action": "create-bck"}), JS).status, 200,
         "auth off: bucket create needs no token")
    t.eq(clulib.follow("PUT", g2.url, "/v1/objects/open/o", b"x")[1].status, 200, "auth off: PUT needs no token")
    t.eq(request("PUT", t3.url, "/v1/metasync", json.dumps({"cmap": {}}), JS).status, 401,
         "auth off, cluster.secret set: metasync without it is 401")
    t.eq(get(t3.url, "/v1/objects/open/o", headers={"Ais-Intra": "fetch"}).status, 401,
         "auth off, cluster.secret set: Ais-Intra without the signature is 401")
ts.append(t3)
ts.append(g2)

errs = []
for n in [g] + ts:
    with open(n.log, errors="replace") as f:
        errs += [n.name + ": " + l.rstrip() for l in f if " E " in l[:40]]
t.check(not errs, "no error-level log lines", "\n".join(errs[:5]))
t.finish()
