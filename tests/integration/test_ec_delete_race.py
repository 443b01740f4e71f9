"""test_ec_delete_race.py - a client's delete of an erasure-coded object
answers 200 (not 404) when a rebalance walk, acting on the delete's own
tombstones, drops the object's slices before the delete's calls reach
them. 1 gateway + 3 targets on loopback ports (stopped by PID), bucket e
with EC 2+1 kept as slices only (ec.whole_copy=false), and the test hook
debug.delete_pause=4s: the target serving a client's delete waits 4 s
after its tombstones are placed on every holder, before it deletes the
slices.

Checks: an object of 200 KiB is PUT (3 slices, no whole copy); its DELETE
through the gateway runs in a thread; inside the pause a rebalance is
started on every target ({"action":"rebalance"}); the walk of each holder
finds the tombstone on another holder and drops its slice (ecrepair.c
rule 6), seen while the delete still waits; the delete then answers 200,
and a GET 404.
"""
# timeout: 90
import os
import threading

from itlib import T, q

import clulib
from clulib import follow, poll, request, slice_meta

B = "e"
INTRA = {"Ais-Intra": "test"}

t = T()
clulib.init(t, "ecdelrace", ["--set", "store.fsync=never", "--set", "debug.delete_pause=4s"])
g, targets = clulib.start_cluster(3)
clulib.create_ec_bucket(g, targets, B, 2, 1, 65536, whole_copy=False)

n = "obj"
t.eq(clulib.owner_put(g, targets, B, n, os.urandom(200 << 10)), 200, "PUT of 200 KiB (EC 2+1, slices only)")
t.check(all(slice_meta(x, B, n) for x in targets), "  a slice on each of the 3 targets")

res = {}


def delete():
    try:
        res["status"] = follow("DELETE", g.url, "/v1/objects/%s/%s" % (B, q(n)))[1].status
    except OSError as e:
        res["status"] = repr(e)


th = threading.Thread(target=delete)
th.start()


def tombstoned(x):
    """Does x have the delete's tombstone (any slice answer names it)?"""
    return bool(request("GET", x.url, "/v1/ec/%s/%s?meta=true" % (B, q(n)), headers=INTRA).h("ais-ec-deleted"))


t.check(poll(lambda: all(tombstoned(x) for x in targets), 3) and th.is_alive(),
        "the delete placed its tombstones on the 3 holders and waits (debug.delete_pause)")
r = request("PUT", g.url, "/v1/cluster", '{"action":"rebalance"}', {"Content-Type": "application/json"})
t.eq(r.status, 200, "a rebalance started while the delete waits")
t.check(poll(lambda: all(slice_meta(x, B, n) is None for x in targets), 3) and th.is_alive(),
        "  the walks drop every slice (the delete's tombstones) before the delete's own calls",
        [x.name for x in targets if slice_meta(x, B, n)])
th.join(30)
t.check(not th.is_alive(), "the DELETE answers within 30 s")
t.eq(res.get("status"), 200, "  200: the object existed (not 404)")
t.eq(follow("GET", g.url, "/v1/objects/%s/%s" % (B, q(n)))[1].status, 404, "a GET after it: 404")
t.finish()
