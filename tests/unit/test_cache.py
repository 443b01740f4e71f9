"""test_cache.py - the node cache's eviction policies and prefetch
(tools/python/aisd/cache.py), as pure functions and plain files.

Belady (evict the farthest next use, which the plan knows) against LRU on
the access sequence a node's ranks make under aisd.plan over several
epochs: more hits at every cache size below the node's share, and at half
the share at least half the bytes after the first epoch. On tiny cases
(equal sizes) Belady's hit count equals the brute-force optimum. NodeCache
with policy "belady" evicts the entry used farthest in the future, and
keeps() refuses what would evict an entry needed sooner. The Prefetcher
fills only what the policy keeps, skips what is cached, and stays within
its byte budget.

Run: /usr/bin/python3 tests/unit/test_cache.py (make check-unit does).
"""
import io
import math
import os
import random
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "python"))
from aisd.cache import NodeCache, Prefetcher, simulate  # noqa: E402
from aisd.plan import Shard, make_plan  # noqa: E402


def node_sequence(epochs=4, n=96, seed=11):
    """The reads of node "gpuA" (2 of 6 ranks; no target there, so every
    read goes through its cache) under aisd.plan, in time order: a read at
    place i of a rank's list of n happens at epoch + i/n."""
    rng = random.Random(seed)
    hs = ["10.0.0.%d" % i for i in range(1, 5)]
    shards = [Shard("s%03d.tar" % i, rng.randint(90_000, 110_000), frozenset(rng.sample(hs, 1))) for i in range(n)]
    rank_hosts = ["gpuA", "gpuA", "gpuB", "gpuB", "gpuC", "gpuC"]
    seq = []
    for ep in range(epochs):
        p = make_plan(shards, rank_hosts, seed=seed, epoch=ep)
        ev = [(ep + i / len(p.ranks[r]), r, name) for r in (0, 1) for i, name in enumerate(p.ranks[r])]
        seq += [name for _, _, name in sorted(ev)]
    sizes = {s.name: s.size for s in shards}
    share = sum(sizes[n] for n in set(seq))
    return seq, sizes, share


def steady(seq, sizes, cap, policy, per_epoch, **kw):
    """Hit fraction of bytes after the first epoch."""
    first = simulate(seq[:per_epoch], sizes, cap, policy, **kw)
    whole = simulate(seq, sizes, cap, policy, **kw)
    hb = whole["hit_bytes"] - first["hit_bytes"]
    mb = whole["miss_bytes"] - first["miss_bytes"]
    return hb / (hb + mb)


class PolicyTest(unittest.TestCase):
    def test_belady_beats_lru_on_plan(self):
        seq, sizes, share = node_sequence()
        per = len(seq) // 4
        for frac in (0.25, 0.5, 0.75):
            b = steady(seq, sizes, frac * share, "belady", per)
            lr = steady(seq, sizes, frac * share, "lru", per)
            self.assertGreater(b, lr, "cache %.2f of the share: belady %.3f, lru %.3f" % (frac, b, lr))
            self.assertGreaterEqual(b, frac - 0.1, "belady keeps about the cache's fraction (%.2f: %.3f)" % (frac, b))
        self.assertGreaterEqual(steady(seq, sizes, 0.5 * share, "belady", per, prefetch=share / per), 0.5,
                                "belady with prefetch at half the share: at least half the bytes cached")
        full = steady(seq, sizes, share, "belady", per)
        self.assertEqual(full, 1.0, "a cache of the whole share hits every read after the first epoch")

    def test_belady_is_optimal_on_tiny_cases(self):
        for seed in range(150):
            rng = random.Random(seed)
            names = ["n%d" % i for i in range(rng.randint(3, 6))]
            seq = [rng.choice(names) for _ in range(rng.randint(6, 14))]
            sizes = {n: 1 for n in names}
            cap = rng.randint(1, 3)
            b = simulate(seq, sizes, cap, "belady")["hits"]
            o = simulate(seq, sizes, cap, "opt")["hits"]
            lr = simulate(seq, sizes, cap, "lru")["hits"]
            self.assertEqual(b, o, "seed %d: belady %d hits, optimum %d (%s, cap %d)" % (seed, b, o, seq, cap))
            self.assertLessEqual(lr, o)

    def test_bad_policy(self):
        with self.assertRaises(ValueError):
            simulate(["a"], {"a": 1}, 1, "fifo")


class FilesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="aisd-cache-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def put(self, c, name, size):
        f = c.fill("b", name, "1", "e" + name, size)
        f.write(b"x" * size)
        self.assertTrue(f.commit())

    def test_belady_evicts_farthest(self):
        nu = {"a": 5.0, "b": 1.0, "c": math.inf, "d": 3.0}
        c = NodeCache(self.dir, 3000, "belady", lambda b, n: nu.get(n, math.inf))
        for n in "abc":
            self.put(c, n, 1000)
        self.assertTrue(all(c.has("b", n) for n in "abc"))
        self.assertTrue(c.keeps("b", "d", 1000), "d (next use 3) displaces c (never used again)")
        self.put(c, "d", 1000)
        self.assertFalse(c.has("b", "c"), "c, never used again, evicted first")
        self.assertTrue(all(c.has("b", n) for n in "abd"))
        nu["e"] = 9.0
        self.assertFalse(c.keeps("b", "e", 1000), "e (next use 9) would evict nothing used later")
        self.put(c, "e", 1000)  # filled anyway: the policy drops it at once (bypass)
        self.assertFalse(c.has("b", "e"))
        self.assertLessEqual(c.used(), 3000)
        lru = NodeCache(os.path.join(self.dir, "lru"), 2000, "lru")
        for n in "abc":
            self.put(lru, n, 1000)
        self.assertEqual([lru.has("b", n) for n in "abc"], [False, True, True])

    def test_policy_errors(self):
        with self.assertRaises(ValueError):
            NodeCache(self.dir, 1000, "belady")
        with self.assertRaises(ValueError):
            NodeCache(self.dir, 1000, "mru")

    def test_prefetcher(self):
        nu = {"p%d" % i: float(i) for i in range(6)}
        nu["old"] = 0.5
        c = NodeCache(self.dir, 4 * 20_000, "belady", lambda b, n: nu.get(n, math.inf))
        self.put(c, "p0", 20_000)
        opened = []

        def open_item(bucket, name):
            opened.append(name)
            return io.BytesIO(b"y" * 20_000), "1", "e" + name, 20_000

        got = []
        budget = 100_000
        pf = Prefetcher(c, [("b", "p%d" % i, 20_000) for i in range(6)], open_item, budget, got.append, poll=0.05)
        t0 = time.monotonic()
        self.assertTrue(pf.start())
        other = Prefetcher(c, [], open_item, budget)
        self.assertFalse(other.start(), "one prefetcher per cache directory")
        deadline = time.monotonic() + 20
        while pf.fetched < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        took = time.monotonic() - t0
        time.sleep(0.3)  # p4, p5 wait: they would evict p1..p3, needed sooner
        pf.stop()
        self.assertEqual(opened, ["p1", "p2", "p3"], "p0 cached: skipped; p4 would evict a sooner one: waited")
        self.assertEqual(sum(got), 60_000)
        self.assertGreaterEqual(took, 60_000 / budget - 0.25, "within the budget of %d B/s" % budget)
        self.assertTrue(all(c.has("b", "p%d" % i) for i in range(4)))
        self.assertTrue(other.start(), "released by stop()")
        other.stop()
        with self.assertRaises(ValueError):
            Prefetcher(c, [], open_item, 0)


if __name__ == "__main__":
    unittest.main()
