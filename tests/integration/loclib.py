"""loclib.py - what the locality tests share: the rank processes' results
(locrank.py prints one JSON line per epoch) and the exactly-once check."""
import json


def collect(t, procs, outs):
    """{epoch: [each rank's result]} from the ranks' (stdout, stderr), or
    None with a failed check when a rank did not exit 0."""
    res = {}
    for r, (out, err) in enumerate(outs):
        if procs[r].returncode != 0:
            t.fail("rank %d exited %d" % (r, procs[r].returncode), err.decode(errors="replace")[-1500:])
            return None
        for line in out.decode().splitlines():
            d = json.loads(line)
            res.setdefault(d["epoch"], [None] * len(procs))[r] = d
    return res


def exactly_once(t, res, want, what):
    """Every sample of want ({shard: {key: crc}}) exactly once per epoch
    across the ranks, with its bytes' CRC; one check per epoch."""
    ok = True
    for ep, ranks in sorted(res.items()):
        got = [tuple(x) for rk in ranks for x in rk["samples"]]
        keys = [(s, k) for s, k, _ in got]
        wantk = {(s, k) for s in want for k in want[s]}
        bad = [x for x in got if want.get(x[0], {}).get(x[1]) != x[2]]
        ok &= t.check(len(keys) == len(set(keys)) and set(keys) == wantk and not bad,
                      "%s, epoch %d: %d samples over %d ranks x 2 workers, each exactly once, bytes right" % (
                          what, ep, len(keys), len(ranks)),
                      "dups %d missing %d wrong %s" % (len(keys) - len(set(keys)), len(wantk - set(keys)), bad[:2]))
    return ok
