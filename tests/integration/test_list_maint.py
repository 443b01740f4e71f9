"""test_list_maint.py - listings while a target in maintenance is down:
never silently short, as for a target that is lost (test_list_down.py).

A gateway and 3 targets started here, buckets "one" (one copy) and "two"
(mirror.copies=2) created over S3, 40 objects each. The victim target is
put in maintenance without drain (it keeps its objects) and, once every
listing is still complete, killed with SIGKILL: it stays in the map, in
maintenance. Then:
  - "two": native listings (pages of 7, body and query form) and S3
    ListObjectsV2, V1 and ListObjectVersions complete, unmarked;
  - "one": native 503 whose "missing" names the victim; ?partial=true: 200,
    every page marked partial, exactly what the other targets hold; S3
    listings 503 ServiceUnavailable naming the victim.
The victim restarted and taken out of maintenance: "one" complete again.
"""
# timeout: 180
import json

from itlib import T

import clulib
import lslib
from clulib import get, poll, request, smap_ids
from lslib import status_of
from s3lib import boto3_client, cluster

JSON = {"Content-Type": "application/json"}
N = 40
PAGE = 7

t = T()
EP = cluster(t, "lsmaint", targets=3)
g = cluster.nodes[0]
tg = list(cluster.nodes[1:])
victim = tg[2]
s3 = boto3_client(EP)
L = lslib.Lists(g, s3, PAGE)

for b in ("one", "two"):
    s3.create_bucket(Bucket=b)
body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(request("PATCH", g.url, "/v1/buckets/two", body, JSON).status, 200, "two: mirror.copies=2")
poll(lambda: all(request("GET", x.url, "/v1/buckets/two").status == 200 for x in tg), 10)
names = ["o/%03d" % i for i in range(N)]
for b in ("one", "two"):
    for n in names:
        s3.put_object(Bucket=b, Key=n, Body=n.encode())


def node_state(node):
    d = get(g.url, "/v1/cluster?what=smap").json() or {}
    return next((x.get("state") for x in d.get("nodes", []) if x["id"] == node.id), None)


def maint(action):
    body = json.dumps({"action": action, "value": {"sid": victim.id}})
    return request("PUT", g.url, "/v1/cluster", body, JSON).status


def reb_idle():
    r = get(g.url, "/v1/cluster?what=rebalance", timeout=10)
    j = r.json() if r.status == 200 else None
    return bool(j) and j.get("state") in ("done", "idle", None) and \
        all(v.get("state") in ("done", "idle") for v in (j.get("targets") or {}).values())


def held(node, bck):
    """The names node itself holds (a listing asked of the target)."""
    r = get(node.url, "/v1/buckets/%s?pagesize=10000" % bck)
    return [e["name"] for e in r.json()["entries"]] if r.status == 200 else None


def complete(bck, when):
    for as_query in (False, True):
        got, marks, _, r = L.native(bck, as_query=as_query)
        t.check(got == names and not any(marks), "%s: native listing of %s%s complete, unmarked" %
                (when, bck, " (query form)" if as_query else ""), got if r is None else status_of(r))
    for what, fn in L.s3_all():
        st, got, msg = L.s3_error(fn, bck)
        t.check(st == 200 and got == names, "%s: S3 %s of %s complete" % (when, what, bck), (st, got, msg))


t.eq(maint("start-maintenance"), 200, "start-maintenance of the victim (no drain)")
t.check(poll(lambda: node_state(victim) == "maintenance", 15), "the map shows the victim in maintenance")
t.check(poll(reb_idle, 60), "no rebalance running")
complete("one", "in maintenance, up")
complete("two", "in maintenance, up")
others = sorted(set(sum((held(x, "one") or [] for x in tg[:2]), [])))
t.check(0 < len(others) < N, "the victim alone holds some of one's objects (%d of %d)" % (N - len(others), N))

victim.kill9()
t.ok("victim %s killed with SIGKILL" % victim.id)
t.check(victim.id in smap_ids(g) and node_state(victim) == "maintenance", "the victim stays in the map, "
        "in maintenance")
complete("two", "in maintenance, down")
vid = victim.id
for as_query in (False, True):
    q = " (query form)" if as_query else ""
    got, _, _, r = L.native("one", as_query=as_query)
    d = r.json() if hasattr(r, "json") else None
    t.check(got is None and getattr(r, "status", 0) == 503 and isinstance(d, dict) and d.get("missing") == [vid] and
            vid in d.get("message", ""), "native listing of one%s: 503 naming the victim in \"missing\"" % q,
            len(got) if got is not None else status_of(r))
    got, marks, missing, r = L.native("one", partial=True, as_query=as_query)
    t.check(got == others and marks and all(marks) and missing == {vid},
            "one with partial=true%s: the other targets' %d objects, every page marked partial, the victim "
            "in \"missing\"" % (q, len(others)), (got if got is None else len(got), marks, missing, status_of(r)))
for what, fn in L.s3_all():
    st, code, msg = L.s3_error(fn, "one")
    t.check(st == 503 and code == "ServiceUnavailable" and vid in msg,
            "S3 %s of one: 503 ServiceUnavailable naming the victim" % what, (st, code if st != 200 else len(code), msg))

t.check(victim.start(join=g.url), "the victim restarts (same dir and port)")
t.eq(maint("stop-maintenance"), 200, "stop-maintenance")
t.check(poll(lambda: node_state(victim) == "active", 15), "the victim is active again")
t.check(poll(reb_idle, 60), "no rebalance running")
complete("one", "back")

clulib.check_logs(cluster.nodes)
clulib.stop_all()
t.finish()
