"""test_reqid.py - one request id follows a request through the cluster:
the gateway's 307, the target's answer and both nodes' access logs, the
gateway's S3 relay, and a GetBatch's sub-requests to other targets.

Cluster A (auth off): gateway g1 and targets t1, t2 on loopback ports
(stopped by PID), access logs on.
 1. curl -L GET of an object through g1: the 307 and the target's 200 carry
    the same X-Request-Id; the Location names it (ais_id); g1's and the
    owner's access lines for it carry req=ID.
 2. A client's own well-formed X-Request-Id (auth off: every caller is
    trusted alike) is taken by g1 and follows the redirect; a malformed one
    (too long, odd characters) is not: g1 makes its own, and that follows.
 3. S3 GET through g1 (relayed to the owner): every X-Request-Id and
    x-amz-request-id of the answer is one id, in g1's and the owner's
    access logs.
 4. GetBatch of objects on both targets through g1, 307 followed by curl
    -L: one id on the 307 and the answer, and in the access logs of g1, the
    designated target and the other target (its sub-request).
Cluster B (auth.enabled, cluster.secret): gateway g and target tb.
 5. A token's GET: the id g made rides in the signed redirect and the
    target answers with it; the client's own X-Request-Id is not taken
    (with auth on only a signed redirect or a node of the cluster names an
    id); an ais_id changed in the signed Location is refused (401), and an
    ais_id a client adds to a target's URL does not replace the target's.
No error-level log line.
"""
# timeout: 120
import json
import os
import re
import subprocess
import urllib.parse

from itlib import T, q

import clulib
from clulib import Node, follow, get, poll, request

JSON = {"Content-Type": "application/json"}
t = T()
clulib.init(t, "reqid", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never", "--set", "s3.auth=off",
                         "--set", "log.access=on"])
g1, (t1, t2) = clulib.start_cluster(2)
nodes = [g1, t1, t2]
B = "rid"
t.eq(request("POST", g1.url, "/v1/buckets/" + B, '{"action":"create-bck"}', JSON).status, 200, "create the bucket")

# objects on each target (the Location of the PUT says where)
owner = {}
for i in range(40):
    name = "o%02d" % i
    r1, r2 = follow("PUT", g1.url, "/v1/objects/%s/%s" % (B, name), ("data %d" % i).encode())
    if r1.status == 307 and r2.status == 200:
        owner[name] = t1 if (r1.h("location") or "").startswith(t1.url + "/") else t2
on = {tg.name: [n for n, o in owner.items() if o is tg] for tg in (t1, t2)}
if not t.check(len(owner) == 40 and on["t1"] and on["t2"], "40 objects PUT through g1, on both targets",
               {k: len(v) for k, v in on.items()}):
    t.finish()


def log_text(node):
    with open(node.log, errors="replace") as f:
        return f.read()


def access_lines(node, rid):
    """node's log lines tagged with request id rid."""
    return [ln for ln in log_text(node).splitlines() if (" req=%s " % rid) in ln]


def curl_heads(*args):
    """curl -sS -L -D - ... : the list of answers' header dicts (lower-case names; a name
    given twice keeps every value in a list) and the body."""
    cp = subprocess.run(["curl", "-sS", "-m", "30", "-L", "-D", "/dev/stderr", "-o", "/dev/stdout"] + list(args),
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    heads = []
    for ln in cp.stderr.decode(errors="replace").splitlines():
        if ln.startswith("HTTP/"):
            heads.append({":status": ln.split()[1]})
        elif ":" in ln and heads:
            k, v = ln.split(":", 1)
            heads[-1].setdefault(k.strip().lower(), []).append(v.strip())
    return heads, cp.stdout


def one(h, name):
    v = h.get(name) or [None]
    return v[0] if len(set(v)) == 1 else v


# --- 1. curl -L through the gateway ------------------------------------------------
name = on["t2"][0]
heads, body = curl_heads(g1.url + "/v1/objects/%s/%s" % (B, name))
st = [h[":status"] for h in heads]
t.check(st == ["307", "200"] and body == ("data %d" % int(name[1:])).encode(), "curl -L GET via g1: 307, then 200",
        (st, body[:100]))
rid = one(heads[0], "x-request-id") if heads else None
t.check(isinstance(rid, str) and rid and len(heads) == 2 and one(heads[1], "x-request-id") == rid,
        "the 307 and the target's 200 carry one X-Request-Id (%s)" % rid, [h.get("x-request-id") for h in heads])
loc = one(heads[0], "location") if heads else ""
t.check(isinstance(loc, str) and ("ais_id=%s" % rid) in (urllib.parse.urlsplit(loc).query or ""),
        "the Location passes the id on (ais_id)", loc)
t.check(poll(lambda: any("GET /v1/objects/%s/%s" % (B, name) in ln for ln in access_lines(g1, rid)) and
             any("GET /v1/objects/%s/%s" % (B, name) in ln for ln in access_lines(t2, rid)), 5),
        "g1's and t2's access lines of that GET both carry req=" + str(rid))
t.check(not access_lines(t1, rid), "t1 (not involved) has no line of it")

# --- 2. a client's own id (auth off) -------------------------------------------------
mine = "client-trace.42:a_b"
heads, _ = curl_heads("-H", "X-Request-Id: " + mine, g1.url + "/v1/objects/%s/%s" % (B, name))
t.check(len(heads) == 2 and all(one(h, "x-request-id") == mine for h in heads),
        "a client's well-formed X-Request-Id is taken and follows the redirect", [h.get("x-request-id") for h in heads])
t.check(poll(lambda: access_lines(g1, mine) and access_lines(t2, mine), 5), "... in both access logs")
for bad, why in (("x" * 40, "40 characters"), ("a b<c>", "odd characters")):
    heads, _ = curl_heads("-H", "X-Request-Id: " + bad, g1.url + "/v1/objects/%s/%s" % (B, name))
    ids = [one(h, "x-request-id") for h in heads]
    t.check(len(heads) == 2 and ids[0] == ids[1] and ids[0] != bad and isinstance(ids[0], str) and
            re.fullmatch(r"[0-9a-f]+-[0-9a-f]+", ids[0]), "a malformed client id (%s) is not taken: g1's own follows" % why,
            ids)

# --- 3. S3 through the gateway's relay ----------------------------------------------------
name = on["t1"][0]
heads, body = curl_heads(g1.url + "/%s/%s" % (B, name))
t.check(len(heads) == 1 and heads[0][":status"] == "200" and body == ("data %d" % int(name[1:])).encode(),
        "S3 GET via g1 (relayed): 200, the object", [h[":status"] for h in heads])
ids = set((heads[0].get("x-request-id") or []) + (heads[0].get("x-amz-request-id") or [])) if heads else set()
rid = next(iter(ids)) if len(ids) == 1 else None
t.check(rid is not None, "one id in every X-Request-Id and x-amz-request-id of the answer", ids)
t.check(rid and poll(lambda: any("GET /%s/%s" % (B, name) in ln for ln in access_lines(g1, rid)) and
                     any("GET /%s/%s" % (B, name) in ln for ln in access_lines(t1, rid)), 5),
        "g1's and t1's access lines of the S3 GET carry req=" + str(rid))

# --- 4. GetBatch ----------------------------------------------------------------------------
sel = on["t1"][:3] + on["t2"][:3]
raw = json.dumps({"in": [{"objname": n} for n in sel], "mime": ".tar", "strm": True})
heads, body = curl_heads("-X", "GET", "-H", "Content-Type: application/json", "--data-binary", raw,
                         g1.url + "/v1/ml/moss/" + B)
st = [h[":status"] for h in heads]
t.check(st == ["307", "200"] and len(body) >= 6 * 512, "GetBatch via g1, curl -L: 307, then 200 and a tar", st)
rid = one(heads[0], "x-request-id") if heads else None
t.check(isinstance(rid, str) and len(heads) == 2 and one(heads[1], "x-request-id") == rid,
        "the 307 and the designated target's answer carry one id (%s)" % rid, [h.get("x-request-id") for h in heads])
dt = t1 if heads and (one(heads[0], "location") or "").startswith(t1.url + "/") else t2
other = t2 if dt is t1 else t1
t.check(poll(lambda: access_lines(g1, rid) and any("/v1/ml/moss" in ln for ln in access_lines(dt, rid)) and
             any("/v1/ml/moss" in ln for ln in access_lines(other, rid)), 5),
        "g1, the designated target %s and the other target %s (its sub-request) log it" % (dt.name, other.name))

clulib.stop_all()
clulib.check_logs(nodes)

# --- 5. auth on: only signed or cluster-made ids ----------------------------------------------
AISCTL = os.environ["AISCTL"]
tsf, csf = clulib.secret_files("reqid-auth")
clulib.init(t, "reqid-auth", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                              "--set", "auth.enabled=on", "--set", "auth.secret_file=" + tsf,
                              "--set", "cluster.secret_file=" + csf, "--set", "log.access=on"])
cp = subprocess.run([AISCTL, "auth", "token", "create", "--secret-file", tsf, "--user", "root", "--admin",
                     "--ttl", "1h"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    env=dict(os.environ, AISCTL_CONFIG=os.devnull), timeout=30)
TOK = {"Authorization": "Bearer " + cp.stdout.decode().strip()}


def smap_ids_tok(node):
    try:
        r = get(node.url, "/v1/cluster?what=smap", headers=TOK, timeout=5)
        return {n["id"] for n in r.json()["nodes"]} if r.status == 200 else None
    except (OSError, KeyError, TypeError, ValueError):
        return None


g, tb = Node("ga", "gateway"), Node("tb", "target")
if not t.check(g.start() and tb.start(join=g.url) and poll(lambda: smap_ids_tok(g) == {g.id, tb.id}, 15),
               "cluster B (auth on) starts"):
    t.finish()
t.eq(request("POST", g.url, "/v1/buckets/ra", '{"action":"create-bck"}', dict(JSON, **TOK)).status, 200,
     "create a bucket with the admin token")
r1, r2 = follow("PUT", g.url, "/v1/objects/ra/x", b"secret data", TOK)
t.check(r1.status == 307 and r2.status == 200, "PUT through g with the token", (r1, r2))

r1 = get(g.url, "/v1/objects/ra/x", headers=dict(TOK, **{"X-Request-Id": "forged-by-client"}))
loc = r1.h("location") or ""
rid = r1.h("x-request-id")
t.check(r1.status == 307 and rid and rid != "forged-by-client", "auth on: g does not take a token client's own id",
        (r1.status, rid))
u = urllib.parse.urlsplit(loc)
target, path = "%s://%s" % (u.scheme, u.netloc), u.path + "?" + u.query
t.check("ais_rsig=" in u.query and ("ais_id=%s" % rid) in u.query, "the signed Location names g's id", loc)
r2 = get(target, path)
t.check(r2.status == 200 and r2.body == b"secret data" and r2.h("x-request-id") == rid,
        "the target answers the signed redirect with that id", (r2.status, r2.h("x-request-id")))
t.check(poll(lambda: access_lines(g, rid) and access_lines(tb, rid), 5), "both access logs carry it")
forged = path.replace("ais_id=%s" % rid, "ais_id=forged")
r3 = get(target, forged)
t.check(r3.status == 401 and r3.h("x-request-id") != "forged", "an ais_id changed in the signed Location: 401, not taken",
        (r3.status, r3.h("x-request-id")))
r4 = get(tb.url, "/v1/objects/ra/x?ais_id=forged2", headers=dict(TOK, **{"X-Request-Id": "forged3"}))
t.check(r4.status == 200 and r4.h("x-request-id") not in ("forged2", "forged3"),
        "a token client's own ais_id or X-Request-Id at a target: its own id stays", (r4.status, r4.h("x-request-id")))
clulib.stop_all()
clulib.check_logs([g, tb])
t.finish()
