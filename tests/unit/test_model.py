"""test_model.py - the data-loading model (tools/python/aisd/model.py) on
small cases whose answers are known.

Per-batch balancing: balance_fraction agrees with a seeded Monte Carlo
draw and with the normal approximation at 1,024 learners. Placement: with
32 shards on 4 nodes the busiest link carries more than the mean (HRW's
draw is uneven), and the model's plain epoch is set by it. Overflow: one
copy leaves some shards off their readers' nodes (cross-node bytes > 0,
below plain's); two copies cross fewer. Cache: on a node with no target,
belady keeps more than lru at half the share and about half the bytes.
--paper answers for 1,024 learners.

Run: /usr/bin/python3 tests/unit/test_model.py (make check-unit does).
"""
import io
import json
import math
import os
import random
import sys
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "python"))
from aisd.model import balance_fraction, main, predict  # noqa: E402

BASE = dict(dataset=32 << 20, sample=64 << 10, storage=1e9, network=1e6, train=1e6, preprocess=1e6,
            ranks_per_node=2, shard_size=1 << 20)


class ModelTest(unittest.TestCase):
    def test_balance_fraction(self):
        rng = random.Random(1)
        N, G, trials, tot = 8, 4, 20000, 0
        for _ in range(trials):
            cnt = [0] * N
            for _ in range(N * G):
                cnt[rng.randrange(N)] += 1
            tot += sum(max(0, c - G) for c in cnt)
        mc = tot / trials / (N * G)
        self.assertAlmostEqual(balance_fraction(N, G), mc, delta=0.05 * mc)
        approx = math.sqrt(32 * (1 - 1 / 1024) / (2 * math.pi)) / 32
        self.assertAlmostEqual(balance_fraction(1024, 32), approx, delta=0.02 * approx)
        self.assertEqual(balance_fraction(1, 32), 0.0)

    def test_busiest_link_and_overflow(self):
        one = predict(8, copies=1, **BASE)
        two = predict(8, copies=2, **BASE)
        p = one["plain"]
        self.assertGreater(p["busiest_link_over_mean"], 1.1, "32 shards on 4 nodes: an uneven draw")
        self.assertEqual(p["bound"], "network")
        self.assertGreaterEqual(p["secs"], p["busiest_link"] / 1e6 - 1e-6, "never below the busiest link")
        self.assertGreater(one["locality"]["net_bytes"], 0, "one copy: the plan's overflow crosses")
        self.assertLess(one["locality"]["net_bytes"], p["net_bytes"])
        self.assertLess(two["locality"]["net_bytes"], one["locality"]["net_bytes"])
        self.assertLess(one["locality"]["secs"], p["secs"])

    def test_cache_policy(self):
        kw = dict(BASE, targets=4, ranks_per_node=2, modes=("locality",))
        D = BASE["dataset"]
        b = predict(2, cache=D / 2, policy="belady", **kw)["locality"]
        lr = predict(2, cache=D / 2, policy="lru", **kw)["locality"]
        self.assertGreater(b["hit_rate"], lr["hit_rate"])
        self.assertGreaterEqual(b["hit_rate"], 0.4)
        self.assertLess(b["net_bytes"], lr["net_bytes"])
        full = predict(2, cache=2 * D, policy="lru", **kw)["locality"]
        self.assertEqual(full["hit_rate"], 1.0)
        cold = predict(2, cache=2 * D, first_epoch=True, **kw)["locality"]
        self.assertAlmostEqual(cold["net_bytes"], D, delta=1)

    def test_paper(self):
        f = io.StringIO()
        with redirect_stdout(f):
            rc = main(["--paper", "--learners", "1024", "--json"])
        self.assertEqual(rc, 0)
        d = json.loads(f.getvalue())
        self.assertEqual((d["learners"], d["nodes"]), (1024, 256))
        loc = d["locality"]
        self.assertGreater(loc["balance_bytes_per_batch"], 0)
        self.assertLess(loc["net_bytes"], d["plain"]["net_bytes"] / 5)


if __name__ == "__main__":
    unittest.main()
