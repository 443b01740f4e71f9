"""loclib.py - what the locality tests share: nodes on their own loopback
addresses, the rank processes' results (locrank.py prints one JSON line
per epoch) and the exactly-once check."""
import json
import os

import clulib


class HostNode(clulib.Node):
    """A node on its own loopback address (set host before start)."""
    host = "127.0.0.1"

    @property
    def url(self):
        return "http://%s:%d" % (self.host, self.port)

    @property
    def id(self):
        return "%s:%d" % (self.host, self.port)

    def start(self, join=None):
        saved = clulib.ARGS
        clulib.ARGS = saved + ["--set", "net.host=" + self.host]
        try:
            return super().start(join)
        finally:
            clulib.ARGS = saved


def collect(t, procs, outs):
    """{epoch: [each rank's result]} from the ranks' (stdout, stderr), or
    None with a failed check when a rank did not exit 0."""
    res = {}
    for r, (out, err) in enumerate(outs):
        if procs[r].returncode != 0:
            text = err.decode(errors="replace")
            with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "rank%d.stderr" % r), "w") as f:
                f.write(text)  # (the whole of it, kept with the test's temp dir)
            t.fail("rank %d exited %d" % (r, procs[r].returncode), text[-600:])
            return None
        for line in out.decode().splitlines():
            d = json.loads(line)
            res.setdefault(d["epoch"], [None] * len(procs))[r] = d
    return res


def exactly_once(t, res, want, what, before=None, dropped=None):
    """Every sample of want ({shard: {key: crc}}) exactly once per epoch
    across the ranks, with its bytes' CRC; one check per epoch. before:
    {epoch: [[shard, key, crc], ...]} taken before a restart; dropped:
    {epoch: {(shard, key)}} the plan left out (N mod ranks)."""
    ok = True
    for ep, ranks in sorted(res.items()):
        got = [tuple(x) for rk in ranks for x in rk["samples"]] + [tuple(x) for x in (before or {}).get(ep, [])]
        keys = [(s, k) for s, k, _ in got]
        wantk = {(s, k) for s in want for k in want[s]} - (dropped or {}).get(ep, set())
        bad = [x for x in got if want.get(x[0], {}).get(x[1]) != x[2]]
        ok &= t.check(len(keys) == len(set(keys)) and set(keys) == wantk and not bad,
                      "%s, epoch %d: %d samples over %d ranks x 2 workers, each exactly once, bytes right" % (
                          what, ep, len(keys), len(ranks)),
                      "dups %d missing %d wrong %s" % (len(keys) - len(set(keys)), len(wantk - set(keys)), bad[:2]))
    return ok


def dropped(want, shards, hosts, seed, epochs, **kw):
    """{epoch: {(shard, key)}}: the samples the plan leaves out of each epoch
    (N mod ranks); want's keys are in each shard's tar order."""
    from aisd.plan import make_plan
    out = {}
    for ep in epochs:
        p = make_plan(shards, hosts, seed, ep, **kw)
        out[ep] = {(u.shard, list(want[u.shard])[i]) for u in p.dropped for i in range(u.lo, u.hi)}
    return out
