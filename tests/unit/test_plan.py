"""test_plan.py - the locality-aware epoch plan (tools/python/aisd/plan.py)
and the node cache (aisd/cache.py), as pure functions and plain files.

Plan: every shard exactly once per epoch; bytes balanced within one
shard of the mean; locality as high as the placement allows; the same plan
in another process (no hash randomization leaks in); between epochs the
order correlation (Spearman) below 0.1 and each rank's set changed by at
least the exchange fraction; exchange 0 keeps the sets.
Cache: hit after a fill, a new version is a miss (the old entry gone), a
damaged entry is not served, a fill cut short or not committed leaves no
entry, LRU eviction keeps the total under the bound.

Run: /usr/bin/python3 tests/unit/test_plan.py (make check-unit does).
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "python"))
from aisd.cache import NodeCache  # noqa: E402
from aisd.plan import Shard, default_hosts, make_plan, order_positions, spearman  # noqa: E402


def cluster(n=800, hosts=4, copies=1, seed=7, sizes=(50_000, 150_000)):
    """n shards placed on hosts by a seeded draw (like HRW: uneven counts)."""
    rng = random.Random(seed)
    hs = ["10.0.0.%d" % (i + 1) for i in range(hosts)]
    return [Shard("train/s%05d.tar" % i, rng.randint(*sizes), frozenset(rng.sample(hs, copies)))
            for i in range(n)], hs


def local_bound(shards, rank_hosts):
    """The most bytes any plan can read locally: per host, at most its ranks'
    share of the total and at most what it holds."""
    total = sum(s.size for s in shards)
    per_rank = total / len(rank_hosts)
    hosts = set(rank_hosts)
    held = {h: 0 for h in hosts}
    for s in shards:
        for h in s.hosts & hosts:
            held[h] += s.size  # with copies a shard counts on each host: an upper bound
    return sum(min(held[h], per_rank * rank_hosts.count(h)) for h in hosts)


class PlanTest(unittest.TestCase):
    def test_exactly_once_and_balance(self):
        shards, hs = cluster()
        ranks = default_hosts(8, hs)
        big = max(s.size for s in shards)
        for ex in (0.0, 0.1, 0.5, 1.0):
            for ep in range(4):
                p = make_plan(shards, ranks, seed=3, epoch=ep, exchange=ex)
                names = [n for lst in p.ranks for n in lst]
                self.assertEqual(len(names), len(shards), "exchange %s epoch %d" % (ex, ep))
                self.assertEqual(set(names), {s.name for s in shards})
                mean = sum(p.bytes) / len(p.bytes)
                self.assertLessEqual(max(p.bytes), mean + big, "exchange %s epoch %d: %s" % (ex, ep, p.bytes))
                self.assertLess(max(p.bytes) / mean, 1.05)

    def test_locality(self):
        # copies=1: the plan reaches at least 95% of the bound; copies=2: all of it
        for copies, floor in ((1, 0.95), (2, 0.999)):
            shards, hs = cluster(copies=copies)
            ranks = default_hosts(8, hs)
            p = make_plan(shards, ranks, seed=1, epoch=0, exchange=0.0)
            bound = local_bound(shards, ranks)
            got = sum(p.local_bytes)
            self.assertGreaterEqual(got, floor * bound, "copies=%d: local %d of at most %d" % (copies, got, bound))
        # plain dealing (the order ignores placement) would be ~1/4 local
        self.assertGreater(p.local_fraction(), 0.9)

    def test_no_target_hosts_use_cache_homes(self):
        shards, _ = cluster()
        ranks = default_hosts(8, ["gpu1", "gpu2"])  # hosts without targets
        plans = [make_plan(shards, ranks, seed=5, epoch=ep) for ep in range(3)]
        self.assertEqual(plans[0].local_fraction(), 1.0)  # every shard at its cache home
        for p in plans[1:]:  # the same host every epoch (so its cache holds it)
            for r, lst in enumerate(p.ranks):
                self.assertEqual({ranks[r] for _ in lst}, {ranks[r]})
            self.assertEqual({n: ranks[r] for n, r in p.rank_of().items()},
                             {n: ranks[r] for n, r in plans[0].rank_of().items()})

    def test_randomness_between_epochs(self):
        shards, hs = cluster(n=1200)
        ranks = default_hosts(8, hs)
        home = make_plan(shards, ranks, seed=11, epoch=0, exchange=0.0).rank_of()  # exchange 0: every shard at home
        for ex in (0.0, 0.05, 0.1, 0.25, 0.5):
            prev = None
            for ep in range(4):
                p = make_plan(shards, ranks, seed=11, epoch=ep, exchange=ex)
                away = sum(1 for n, r in p.rank_of().items() if r != home[n])
                self.assertEqual(away, sum(p.moved), "every exchanged shard leaves its home rank")
                self.assertGreaterEqual(away, ex * len(shards))
                if prev is not None:
                    a, b = order_positions(prev), order_positions(p)
                    names = sorted(a)
                    rho = spearman([a[n] for n in names], [b[n] for n in names])
                    self.assertLess(abs(rho), 0.1, "exchange %s epochs %d-%d: Spearman %.3f" % (ex, ep - 1, ep, rho))
                    for r in range(len(ranks)):
                        new = set(p.ranks[r]) - set(prev.ranks[r])
                        frac = len(new) / len(p.ranks[r])
                        if ex == 0:
                            self.assertEqual(set(p.ranks[r]), set(prev.ranks[r]), "exchange 0 keeps each set")
                        else:
                            self.assertGreaterEqual(frac, ex, "exchange %s: rank %d changed %.3f" % (ex, r, frac))
                prev = p

    def test_exchange_one_ignores_locality(self):
        shards, hs = cluster()
        ranks = default_hosts(8, hs)
        p = make_plan(shards, ranks, seed=2, epoch=1, exchange=1.0)
        self.assertLess(p.local_fraction(), 0.4)  # about 1/4: chance
        self.assertEqual(sum(p.moved), len(shards))

    def test_deterministic_across_processes(self):
        shards, hs = cluster(n=200)
        ranks = default_hosts(4, hs)
        here = make_plan(shards, ranks, seed=9, epoch=2, exchange=0.2).ranks
        code = ("import sys; sys.path.insert(0, %r); sys.path.insert(0, %r); import test_plan as t; "
                "from aisd.plan import make_plan, default_hosts; s, h = t.cluster(n=200); "
                "print(make_plan(s, default_hosts(4, h), seed=9, epoch=2, exchange=0.2).ranks)"
                % (HERE, os.path.join(HERE, "..", "..", "tools", "python")))
        out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONHASHSEED="123"),
                             stdout=subprocess.PIPE, check=True).stdout.decode().strip()
        self.assertEqual(out, repr(here))

    def test_bad_input(self):
        with self.assertRaises(ValueError):
            make_plan([("a", 1, ()), ("a", 2, ())], ["h"])
        with self.assertRaises(ValueError):
            make_plan([("a", 1, ())], [])
        with self.assertRaises(ValueError):
            make_plan([("a", 1, ())], ["h"], exchange=1.5)
        with self.assertRaises(ValueError):
            default_hosts(6, ["a", "b", "c", "d"])
        self.assertEqual(make_plan([], ["h", "i"]).ranks, [[], []])


class CacheTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="aisd-cache-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    @staticmethod
    def hit(c, name):
        f = c.open("b", name, "1", '"e1"')
        if f is not None:
            f.close()
        return f is not None

    def put(self, c, name, data, version="1", etag='"e1"'):
        f = c.fill("b", name, version, etag, len(data))
        f.write(data[: len(data) // 2])
        f.write(data[len(data) // 2:])
        return f.commit()

    def test_hit_version_damage(self):
        c = NodeCache(self.dir, 1 << 20)
        self.assertIsNone(c.open("b", "x.tar", "1", '"e1"'))
        self.assertTrue(self.put(c, "x.tar", b"a" * 1000))
        with c.open("b", "x.tar", "1", '"e1"') as f:
            self.assertEqual(f.read(), b"a" * 1000)
        self.assertIsNone(c.open("b", "x.tar", "2", '"e2"'), "another version is a miss")
        self.assertTrue(self.put(c, "x.tar", b"b" * 900, "2", '"e2"'))
        self.assertIsNone(c.open("b", "x.tar", "1", '"e1"'), "the old version is gone once a new one is in")
        self.assertEqual(len(c.entries()), 1)
        data = [e[2] for e in c.entries()][0]
        with open(data, "r+b") as f:  # one byte flipped on disk
            f.seek(10)
            f.write(b"X")
        self.assertIsNone(c.open("b", "x.tar", "2", '"e2"'), "a damaged entry is not served")
        self.assertEqual(c.entries(), [])

    def test_incomplete_fills_leave_nothing(self):
        c = NodeCache(self.dir, 1 << 20)
        f = c.fill("b", "short.tar", "1", '"e"', 1000)
        f.write(b"x" * 999)
        self.assertFalse(f.commit(), "fewer bytes than the size")
        f = c.fill("b", "aborted.tar", "1", '"e"', 10)
        f.write(b"x" * 10)
        f.abort()
        # a process killed mid-write: its temp file stays until the next pass
        code = ("import sys, os; sys.path.insert(0, %r); from aisd.cache import NodeCache; "
                "f = NodeCache(%r, 1 << 20).fill('b', 'crash.tar', '1', 'e', 5000); f.write(b'y' * 2000); "
                "f.f.flush(); os.kill(os.getpid(), 9)" % (os.path.join(HERE, "..", "..", "tools", "python"), self.dir))
        subprocess.run([sys.executable, "-c", code])
        self.assertEqual(len(os.listdir(os.path.join(self.dir, "tmp"))), 1)
        for n in ("short.tar", "aborted.tar", "crash.tar"):
            self.assertIsNone(c.open("b", n, "1", '"e"'))
        c.evict()
        self.assertEqual(os.listdir(os.path.join(self.dir, "tmp")), [], "the dead process's temp file is removed")
        self.assertEqual(c.entries(), [])

    def test_lru_eviction(self):
        c = NodeCache(self.dir, 10_000)
        for i in range(5):
            self.assertTrue(self.put(c, "s%d" % i, bytes([i]) * 3000))
        self.assertLessEqual(c.used(), 10_000)
        have = [i for i in range(5) if self.hit(c, "s%d" % i)]
        self.assertEqual(have, [2, 3, 4], "the three most recent stay")
        # a hit makes s2 recent: the next fill evicts s3
        for i, n in enumerate(("s3", "s4", "s2")):
            meta = c._paths("b", n, "1", '"e1"')[1]
            os.utime(meta, (1000 + i, 1000 + i))
        self.assertTrue(self.put(c, "s5", b"5" * 3000))
        have = sorted(n for n in ("s2", "s3", "s4", "s5") if self.hit(c, n))
        self.assertEqual(have, ["s2", "s4", "s5"])
        self.assertIsNone(c.fill("b", "huge", "1", "e", 20_000), "larger than the cache: not kept")


if __name__ == "__main__":
    unittest.main(verbosity=1)
