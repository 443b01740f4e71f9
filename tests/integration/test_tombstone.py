"""test_tombstone.py - a delete that a target missed (it was down) does not
come back when that target returns. 1 gateway + 3 targets on loopback
ports (stopped by PID), a copies=2 bucket, a short cluster.grace,
mirror.delete_quorum=tombstone (a delete the other holder took is
acknowledged; test_honest_delete covers the default).

Checks: objects with a copy on t1 are PUT; t1 is killed (kill -9) and
leaves the map; half of them are deleted through the gateway (200: the
other holder had its copy); t1 restarts with its stale copies and rejoins:
its rebalance offers each to the other holder, which answers that a
client deleted it since (its tombstone), so t1 drops its copy: within a
deadline every deleted object answers 404 through the gateway and on t1,
and the native listing does not name it; the objects not deleted read back
byte for byte from both holders. Then the tombstones themselves: a
conditional copy of a deleted object written before the delete is answered
"deleted" and not stored; one written after it (a new version) is taken.
"""
# timeout: 180
import json
import os
import time

from itlib import T, q

import clulib
import hrwlib
from clulib import follow, get, poll, request, smap_ids

JSON = {"Content-Type": "application/json"}
B = "tb"
INTRA = {"Ais-Intra": "test"}

t = T()
clulib.init(t, "tomb", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1s",
                        "--set", "store.fsync=never", "--set", "mirror.delete_quorum=tombstone"])
g, (t1, t2, t3) = clulib.start_cluster(3, secs=20)
ids = [x.id for x in (t1, t2, t3)]
t.eq(request("POST", g.url, "/v1/buckets/" + B, '{"action":"create-bck"}', JSON).status, 200, "create " + B)
mp = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
t.eq(request("PATCH", g.url, "/v1/buckets/" + B, mp, JSON).status, 200, "mirror.copies=2")

# names with a copy on t1, under the map of 3 targets and under the map without t1
names = [n for n in ("o%03d" % i for i in range(200)) if t1.id in hrwlib.top(B + "/" + n, ids, 2)][:24]
data = {n: os.urandom(300 + 7 * i) for i, n in enumerate(names)}
gone, kept = names[::2], names[1::2]
bad = [n for n, d in data.items() if follow("PUT", g.url, "/v1/objects/%s/%s" % (B, q(n)), d)[1].status != 200]
t.check(not bad, "%d PUTs, each with a copy on t1" % len(data), bad[:3])


def on(node, n):
    return get(node.url, "/v1/objects/%s/%s" % (B, q(n)), headers=INTRA)


t.check(all(on(t1, n).status == 200 for n in names), "  t1 holds them all")
t1.kill9()
t.check(poll(lambda: smap_ids(g) == {g.id, t2.id, t3.id}, 30), "t1 killed: it leaves the map", smap_ids(g))
st = [follow("DELETE", g.url, "/v1/objects/%s/%s" % (B, q(n)))[1].status for n in gone]
t.eq(st, [200] * len(gone), "%d DELETEs through the gateway while t1 is away" % len(gone))
st = {n: follow("GET", g.url, "/v1/objects/%s/%s" % (B, q(n)))[1].status for n in gone}
t.check(all(s == 404 for s in st.values()), "  they answer 404", st)

t.check(t1.start(join=g.url), "t1 restarts with its stale copies")
t.check(poll(lambda: smap_ids(g) == {g.id, t1.id, t2.id, t3.id}, 30), "  and rejoins")
t.check(poll(lambda: all(on(t1, n).status == 404 for n in gone), 60),
        "t1's rebalance drops every copy a client deleted while it was away",
        [n for n in gone if on(t1, n).status != 404])
clulib.check_deleted_stay_gone(g, B, gone, kept, data)
holders = {n: [x for x in (t1, t2, t3) if on(x, n).status == 200] for n in kept}
t.check(all(len(h) == 2 and all(on(x, n).body == data[n] for x in h) for n, h in holders.items()),
        "  from both of their holders", {n: [x.name for x in h] for n, h in holders.items()})

# the rule itself, asked of a target that took part in the delete
n = gone[0]
other = next(x for x in (t2, t3) if x.id in hrwlib.top(B + "/" + n, ids, 2))
v = (get(g.url, "/v1/cluster?what=smap").json() or {}).get("version", 0)


def cond_copy(node, mtime_ns, body):
    return request("PUT", node.url, "/v1/objects/%s/%s" % (B, q(n)), body,
                   {"Ais-Intra": "rebalance", "Ais-Cmap-Version": str(v), "Ais-Have-Cksum": "-",
                    "Ais-Have-Mtime-Ns": str(mtime_ns), "Ais-Checksum-Type": "none"})


r = cond_copy(other, 1, b"old")
t.check(r.status == 200 and r.h("ais-had") == "deleted", "a conditional copy written before the delete: 'deleted'", r)
t.eq(on(other, n).status, 404, "  and not stored")
r = cond_copy(other, time.time_ns() + 10 ** 9, b"new version")
t.check(r.status == 200 and r.h("ais-had") != "deleted", "one written after the delete (a new version): taken", r)
t.eq(on(other, n).body, b"new version", "  and stored")
t.finish()
