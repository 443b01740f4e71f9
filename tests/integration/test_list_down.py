"""test_list_down.py - listings while a target is down: never silently short.

A gateway and 3 targets started here (keepalive 500 ms, grace 30 s: the
dead target stays in the map long enough for the first checks), buckets "one"
(one copy) and "two" (mirror.copies=2) created over S3, 40 objects each.
The victim target is killed with SIGKILL (not put in maintenance). Then,
in each of three windows:
  A. dead, still in the map;
  B. dropped from the map by the keepalive (the map lists it as "lost"),
     and again once the rebalance that follows is done;
every listing is checked (and after B, decommission-node of the lost
victim writes it off: "one" lists the others' objects, unmarked):
  - "two" (each object on 2 targets): complete, each name once: native pages
    of 7 (continuation tokens), S3 ListObjectsV2 (paginated), V1 (Marker)
    and ListObjectVersions, aisctl ls, the Python client;
  - "one": native 503 with a JSON body whose "missing" names the victim;
    ?partial=true and {"partial":true}: 200, every page marked partial with
    the victim in "missing", exactly the objects the other targets own; S3
    V2, V1 and ListObjectVersions ServiceUnavailable (503) naming it;
    aisctl ls exits 1 naming it, aisctl ls --partial prints the others'
    objects and a warning line; the Python client raises HTTPError 503
    (.missing) and, with partial=True, warns PartialListing.
  C. the victim restarted (same dir and port) and back in the map (no
     "lost"): every listing of "one" and "two" complete and unmarked.
"""
# timeout: 300
import json
import os
import subprocess
import sys
import time
import warnings

from itlib import T

import clulib
import hrwlib
import lslib
from clulib import get, poll, request, smap_ids
from lslib import status_of
from s3lib import boto3_client, cluster

ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
from aisd import Client, HTTPError, PartialListing  # noqa: E402

JSON = {"Content-Type": "application/json"}
N = 40
PAGE = 7
ctl = os.environ["AISCTL"]

t = T()
EP = cluster(t, "lsdown", targets=3, args=["--set", "cluster.grace=30s"])
g = cluster.nodes[0]
tg = list(cluster.nodes[1:])
victim = tg[2]
ids = [x.id for x in tg]
s3 = boto3_client(EP)
py = Client(g.url, timeout=30, retry_for=0)

for b in ("one", "two"):
    s3.create_bucket(Bucket=b)
body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(request("PATCH", g.url, "/v1/buckets/two", body, JSON).status, 200, "two: mirror.copies=2")
poll(lambda: all(request("GET", x.url, "/v1/buckets/two").status == 200 for x in tg), 10)
time.sleep(0.5)  # the BMD with copies=2 on every target before the PUTs
names = ["o/%03d" % i for i in range(N)]
for b in ("one", "two"):
    for n in names:
        s3.put_object(Bucket=b, Key=n, Body=n.encode())
# one's objects whose one copy is on another target than the victim
others = sorted(n for n in names if hrwlib.top("one/" + n, ids, 1)[0] != victim.id)
t.check(0 < len(others) < N, "the victim owns some of one's objects (%d of %d)" % (N - len(others), N))


L = lslib.Lists(g, s3, PAGE)
native, s3_v2, s3_v1, s3_versions, s3_error = L.native, L.s3_v2, L.s3_v1, L.s3_versions, L.s3_error


def aisctl(*args):
    p = subprocess.run([ctl, "-e", g.url] + list(args), capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def complete(bck, when):
    """Every listing of bck lists every name once, unmarked."""
    for as_query in (False, True):
        got, marks, _, r = native(bck, as_query=as_query)
        t.check(got == names, "%s: native listing of %s (pages of %d%s) complete, in order" %
                (when, bck, PAGE, ", query form" if as_query else ""), got if r is None else status_of(r))
        got, marks, _, r = native(bck, partial=True, as_query=as_query)
        t.check(got == names and marks and not any(marks), "%s: %s with partial=true: complete, no page marked "
                "partial" % (when, bck), marks)
    for what, fn in (("ListObjectsV2", s3_v2), ("ListObjects (V1)", s3_v1), ("ListObjectVersions", s3_versions)):
        st, got, msg = s3_error(fn, bck)
        t.check(st == 200 and got == names, "%s: S3 %s of %s complete" % (when, what, bck), (st, got, msg))
    rc, out, err = aisctl("ls", bck, "--no-headers", "--props", "name")
    t.check(rc == 0 and out.split() == names, "%s: aisctl ls %s lists all %d objects" % (when, bck, N), (rc, err))
    try:
        got = py.list_names(bck)
    except HTTPError as e:
        got = e
    t.check(got == names, "%s: the Python client lists %s complete" % (when, bck), got)


def short(when):
    """one lacks the victim's objects: never a silently short answer."""
    vid = victim.id
    for as_query in (False, True):
        got, _, _, r = native("one", as_query=as_query)
        d = r.json() if hasattr(r, "json") else None
        t.check(got is None and getattr(r, "status", 0) == 503 and isinstance(d, dict) and d.get("missing") == [vid] and
                vid in d.get("message", ""), "%s: native listing of one%s: 503 naming the victim in \"missing\"" %
                (when, " (query form)" if as_query else ""), got if got is not None else status_of(r))
        got, marks, missing, r = native("one", partial=True, as_query=as_query)
        t.check(got == others and marks and all(marks) and missing == {vid},
                "%s: one with partial=true%s: the other targets' %d objects, every page marked partial, the "
                "victim in \"missing\"" % (when, " (query)" if as_query else "", len(others)),
                (got if got is None else len(got), marks, missing, status_of(r)))
    for what, fn in (("ListObjectsV2", s3_v2), ("ListObjects (V1)", s3_v1), ("ListObjectVersions", s3_versions)):
        st, code, msg = s3_error(fn, "one")
        t.check(st == 503 and code == "ServiceUnavailable" and vid in msg,
                "%s: S3 %s of one: 503 ServiceUnavailable naming the victim" % (when, what), (st, code, msg))
    rc, out, err = aisctl("ls", "one", "--no-headers", "--props", "name")
    t.check(rc != 0 and vid in err and not out.strip(), "%s: aisctl ls one fails naming the victim" % when,
            (rc, out[:200], err))
    rc, out, err = aisctl("ls", "one", "--no-headers", "--props", "name", "--partial")
    t.check(rc == 0 and out.split() == others and "partial" in err and vid in err,
            "%s: aisctl ls one --partial: the others' objects and a warning naming the victim" % when,
            (rc, len(out.split()), err))
    try:
        got = py.list_names("one")
    except HTTPError as e:
        got = e
    t.check(isinstance(got, HTTPError) and got.status == 503 and got.missing == [vid],
            "%s: the Python client's listing of one raises HTTPError 503 naming the victim" % when, got)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            got = [e["name"] for e in py.list("one", pagesize=PAGE, partial=True)]
        except HTTPError as e:
            got = e
    pw = [x.message for x in w if issubclass(x.category, PartialListing)]
    t.check(got == others and pw and all(x.missing == [vid] for x in pw),
            "%s: the Python client's list(partial=True) of one: the others' objects and PartialListing "
            "warnings naming the victim" % when, (got if isinstance(got, HTTPError) else len(got), [str(x.message) for x in w][:3]))


def smap():
    r = get(g.url, "/v1/cluster?what=smap")
    return r.json() if r.status == 200 else {}


complete("one", "all up")
complete("two", "all up")

victim.kill9()
t_kill = time.monotonic()
t.ok("victim %s killed with SIGKILL" % victim.id)
# A: down, still in the map
short("A (down, in the map)")
complete("two", "A (down, in the map)")
spent = time.monotonic() - t_kill
t.check(victim.id in smap_ids(g), "the victim was still in the map through the checks of window A (%.1f s)" % spent)

# B: dropped by the keepalive
t.check(poll(lambda: victim.id not in smap_ids(g), 60), "the keepalive drops the victim from the map")
t.diag("dropped %.1f s after the kill (cluster.grace 30 s)" % (time.monotonic() - t_kill))
t.eq(smap().get("lost"), [victim.id], "the map lists the victim as lost")
short("B (dropped)")
complete("two", "B (dropped)")

# a read of a name nobody wrote, which the map before the drop placed on the
# victim: with copies=2 every object has a copy on a target that answered,
# so 404; with one copy the victim may hold it: 502 naming it, not 404
never = ["never/%03d" % i for i in range(200)]
n2 = [n for n in never if victim.id in hrwlib.top("two/" + n, ids, 2)][:3]
n1 = [n for n in never if hrwlib.top("one/" + n, ids, 1)[0] == victim.id][:3]
st2 = [clulib.follow("GET", g.url, "/v1/objects/two/" + n)[1].status for n in n2]
t.check(n2 and st2 == [404] * len(n2), "B: GET of names never written (copies 2, the victim a holder before): 404",
        st2)
r1 = [clulib.follow("GET", g.url, "/v1/objects/one/" + n)[1] for n in n1]
t.check(n1 and all(r.status == 502 and victim.url.split("//")[1].encode() in r.body for r in r1),
        "B: GET of names never written (copies 1, the victim their holder before): 502 naming it",
        [(r.status, r.body[:200]) for r in r1])


def reb_done():
    r = get(g.url, "/v1/cluster?what=rebalance", timeout=10)
    j = r.json() if r.status == 200 else None
    return bool(j) and j.get("state") == "done" and len(j.get("targets", {})) == 2 and \
        all(v.get("state") == "done" and v.get("cmap_version", 0) >= smap().get("version", 0)
            for v in j["targets"].values())


t.check(poll(reb_done, 60), "the rebalance after the drop is done on both remaining targets")
short("B (dropped, rebalanced)")
complete("two", "B (dropped, rebalanced)")

# the administrator writes the victim off: listings stop waiting for it
body = json.dumps({"action": "decommission-node", "value": {"sid": victim.id}})
r = request("PUT", g.url, "/v1/cluster", body, JSON)
t.check(r.status == 200 and not (r.json() or {}).get("lost"), "decommission-node of the lost victim: 200, the map "
        "lists nothing lost", (r.status, r.body[:300]))
got, marks, _, r = native("one")
t.check(got == others and marks and not any(marks), "written off: the listing of one is what the others hold, "
        "unmarked", got if r is None else status_of(r))

# C: back
t.check(victim.start(join=g.url), "the victim restarts (same dir and port)")
t.check(poll(lambda: victim.id in smap_ids(g) and not smap().get("lost"), 30),
        "the victim is back in the map, nothing lost")
complete("one", "C (back)")
complete("two", "C (back)")

clulib.check_logs(cluster.nodes)
clulib.stop_all()
t.finish()
