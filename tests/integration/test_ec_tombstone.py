"""test_ec_tombstone.py - an erasure-coded object deleted while one of its
targets was down does not come back from that target's slices or whole
copy. 1 gateway + 7 targets on loopback ports (stopped by PID), bucket e
with EC 4+2 (ec.objsize_limit 64 KiB), a short cluster.grace,
mirror.delete_quorum=tombstone (a delete the other slice holders took is
acknowledged).

Checks: 21 objects of 100-300 KiB, chosen so that the target tk is the
owner (whole copy and a slice) of some, a slice holder of others, and not
a holder of the rest; tk is killed (kill -9) and leaves the map; 11 of
them are deleted through the gateway (200) while tk is away; tk restarts
with its stale slices and whole copies and rejoins. Within a deadline:
every deleted object answers 404 through the gateway, has no slice and no
whole copy on any target (asked directly, and the stored items of every
target add up to 7 per kept object: 6 slices and the whole copy), and the
listing does not name it; every kept object reads back byte for byte.
The slice receiver's rule, asked directly: a slice of a write older than
the target's tombstone is refused (410) and not stored.
"""
# timeout: 200
import os
import time

from itlib import T, q

import clulib
import hrwlib
from clulib import follow, get, poll, request, slice_meta, smap_ids, whole_copy

INTRA = {"Ais-Intra": "test"}
B = "e"

t = T()
clulib.init(t, "ectomb", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1500ms",
                          "--set", "store.fsync=never", "--set", "mirror.delete_quorum=tombstone"])
g, targets = clulib.start_cluster(7)
tk = targets[3]
ids = [x.id for x in targets]




def objects(tg):
    return (get(tg.url, "/v1/jobs").json() or {}).get("objects")


def owner_put(n, d):
    return clulib.owner_put(g, targets, B, n, d)


clulib.create_ec_bucket(g, targets, B, 4, 2, 65536)

# tk's rank among the 7: 0 (owner), 1-5 (a slice holder), 6 (no holder)
by_rank = {"owner": [], "holder": [], "none": []}
for i in range(400):
    n = "o%03d" % i
    r = hrwlib.top(B + "/" + n, ids, 7).index(tk.id)
    k = "owner" if r == 0 else "holder" if r < 6 else "none"
    if len(by_rank[k]) < 7:
        by_rank[k].append(n)
names = sorted(by_rank["owner"] + by_rank["holder"] + by_rank["none"])
data = {n: os.urandom((100 << 10) + i * 9973) for i, n in enumerate(names)}
gone = [n for k in ("owner", "holder", "none") for n in by_rank[k][:4 if k != "none" else 3]]
kept = [n for n in names if n not in gone]
bad = [n for n, d in data.items() if owner_put(n, d) != 200]
t.check(not bad, "%d PUTs: tk the owner of 7, a slice holder of 7, neither of 7" % len(data), bad[:3])
t.check(all(slice_meta(tk, B, n) for n in by_rank["owner"] + by_rank["holder"]), "  tk holds their slices")

tk.kill9()
live = [x for x in targets if x is not tk]
t.check(poll(lambda: smap_ids(g) == {g.id} | {x.id for x in live}, 15), "tk killed: it leaves the map")
st = [follow("DELETE", g.url, "/v1/objects/%s/%s" % (B, q(n)))[1].status for n in gone]
t.eq(st, [200] * len(gone), "%d DELETEs through the gateway while tk is away" % len(gone))
st = {n: follow("GET", g.url, "/v1/objects/%s/%s" % (B, q(n)))[1].status for n in gone}
t.check(all(s == 404 for s in st.values()), "  they answer 404", st)

t.check(tk.start(join=g.url), "tk restarts with its stale slices and whole copies")
t.check(poll(lambda: smap_ids(g) == {g.id} | {x.id for x in targets}, 15), "  and rejoins the map")


def leftovers():
    return {n: [x.name + (":slice" if slice_meta(x, B, n) else ":whole") for x in targets
                if slice_meta(x, B, n) or whole_copy(x, B, n)] for n in gone}


last = [None]


def clean():
    last[0] = {n: w for n, w in leftovers().items() if w}
    return not last[0]


t.check(poll(clean, 60), "no slice or whole copy of a deleted object left on any target", last[0])
t.check(poll(lambda: sum(objects(x) for x in targets) == 7 * len(kept), 30),
        "  the targets' stored items: 7 per kept object (6 slices and the whole copy)",
        [objects(x) for x in targets])
clulib.check_deleted_stay_gone(g, B, gone, kept, data)

# the receiver's rule, asked directly: a slice of a write from before the delete
n = kept[0]
holder = next(x for x in targets if slice_meta(x, B, n))
sl = get(holder.url, "/v1/ec/%s/%s" % (B, q(n)), headers=INTRA)
other = next(x for x in targets if x.id == hrwlib.top(B + "/" + gone[0], ids, 7)[1])
r = request("PUT", other.url, "/v1/ec/%s/%s" % (B, q(gone[0])), sl.body,
            dict(INTRA, **{"Ais-Ec-Meta": sl.h("ais-ec-meta")}))
t.check(r.status == 410 and b"deleted" in r.body, "a slice of a write older than the delete: 410", (r.status, r.body))
t.check(slice_meta(other, B, gone[0]) is None, "  and not stored")

# a client's delete that reaches a slice the rebalance already dropped for
# it (acting on that delete's tombstone elsewhere) hears it was there: the
# drop left the delete's stamp as the slice's tombstone. A first DELETE
# with the stamp stands in for the drop here.
n = kept[1]
holder = next(x for x in targets if slice_meta(x, B, n))
stamp = str(time.time_ns())
dh = {"Ais-Intra": "delete", "Ais-Stamp": stamp}
st = [request("DELETE", holder.url, "/v1/ec/%s/%s" % (B, q(n)), None, dh).status for _ in range(2)]
t.eq(st, [200, 200], "a slice removed for a delete: that delete's DELETE of it answers 200, twice")
r = request("DELETE", holder.url, "/v1/ec/%s/%s" % (B, q(n)), None, dict(dh, **{"Ais-Stamp": str(int(stamp) + 1)}))
t.eq(r.status, 404, "  another delete's: 404")
t.finish()
