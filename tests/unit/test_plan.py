"""test_plan.py - the epoch plan (tools/python/aisd/plan.py) and the node
cache (aisd/cache.py), as pure functions and plain files.

Plan: every sample exactly once per epoch (or in the plan's dropped list,
N mod world of them); every rank exactly N // world samples (max/mean 1);
local bytes equal to a brute-force optimum on small cases (the assignment
with and without the extra samples, and the issue's uneven case: 3 hosts,
copies=1, shards 0/2/5 per host); with copies=1 the remote samples are
exactly the placement's surplus over each host's share (random HRW-like
placements, the bench's shapes among them); exchange x moves exactly round(x * q)
samples of every rank; a fresh order per epoch (Spearman below 0.1); shards
on no rank's host keep one cache home; the same plan in another process.
Resume: consumed_per_worker matches a simulated torch DataLoader (workers
round-robin, whole batches, exhausted workers skipped); the rest of an
epoch dealt over fewer, more or the same ranks plus what was consumed
plus the dropped samples is every sample exactly once; so is a restart of
a restarted epoch (8 -> 3 -> 5 ranks).
Cache: hit after a fill, a new version is a miss (the old entry gone), a
damaged entry is not served, a fill cut short or not committed leaves no
entry, LRU eviction keeps the total under the bound.

Run: /usr/bin/python3 tests/unit/test_plan.py (make check-unit does).
"""
import itertools
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "python"))
from aisd.cache import NodeCache  # noqa: E402
from aisd.plan import (Shard, _assign, consumed_per_worker, default_hosts, make_plan, order_positions,  # noqa: E402
                       resume_plan, spearman)


def cluster(n=400, hosts=4, copies=1, seed=7, sizes=(50_000, 150_000), samples=(5, 15)):
    """n shards placed on hosts by a seeded draw (like HRW: uneven counts)."""
    rng = random.Random(seed)
    hs = ["10.0.0.%d" % (i + 1) for i in range(hosts)]
    return [Shard("train/s%05d.tar" % i, rng.randint(*sizes), frozenset(rng.sample(hs, copies)),
                  rng.randint(*samples)) for i in range(n)], hs


def every_sample(shards):
    return Counter((s.name, i) for s in shards for i in range(s.samples))


def read(units):
    return Counter((u.shard, i) for u in units for i in range(u.lo, u.hi))


def local_bytes(shards, rank_hosts, assignment):
    """Bytes read on a host holding the shard; assignment: per rank
    [(name, lo, hi, ...)]."""
    info = {s.name: s for s in shards}
    return sum(info[p[0]].size * (p[2] - p[1]) / info[p[0]].samples
               for r, lst in enumerate(assignment) for p in lst if rank_hosts[r] in info[p[0]].hosts)


def brute(shards, rank_hosts, extras=True):
    """The most local bytes over every integer split of every shard's
    samples over the ranks with q (or, with extras, N mod world of them q +
    1; without, those samples dropped) per rank."""
    w = len(rank_hosts)
    q, d = divmod(sum(s.samples for s in shards), w)
    want = sorted([q + 1] * d + [q] * (w - d)) if extras else [q] * w

    def comps(n, k):
        if k == 0:
            yield ()
            return
        for i in range(n + 1):
            for r in comps(n - i, k - 1):
                yield (i,) + r
    best = -1
    # without extras the dropped samples are a (w+1)-th "rank" that holds nothing
    k = w if extras else w + 1
    for combo in itertools.product(*[list(comps(s.samples, k)) for s in shards]):
        loads = [sum(c[r] for c in combo) for r in range(w)]
        if sorted(loads) != want:
            continue
        v = sum(s.size / s.samples * c[r] for s, c in zip(shards, combo) for r in range(w) if rank_hosts[r] in s.hosts)
        best = max(best, v)
    return best


def small_case(rng):
    hs = ["h%d" % i for i in range(rng.randint(1, 3))]
    rank_hosts = [rng.choice(hs + ["gpu"]) for _ in range(rng.randint(1, 3))]
    shards = [Shard("s%d" % i, rng.randint(1, 100), frozenset(rng.sample(hs, rng.randint(0, min(2, len(hs))))),
                    rng.randint(1, 3)) for i in range(rng.randint(1, 4))]
    return shards, rank_hosts


class PlanTest(unittest.TestCase):
    def test_exactly_once_equal_samples(self):
        shards, hs = cluster()
        n = sum(s.samples for s in shards)
        for world in (8, 7, 3):
            ranks = (hs * 3)[:world]
            for ex in (0.0, 0.1, 0.5, 1.0):
                for ep in range(3):
                    p = make_plan(shards, ranks, seed=3, epoch=ep, exchange=ex)
                    got = read([u for lst in p.units for u in lst]) + read(p.dropped)
                    self.assertEqual(got, every_sample(shards), "world %d exchange %s epoch %d" % (world, ex, ep))
                    self.assertEqual(p.samples, [n // world] * world, "equal samples per rank")
                    self.assertEqual(sum(read(p.dropped).values()), n % world)
        # plain dealing: the same guarantees
        p = make_plan(shards, hs * 2, seed=3, epoch=1, locality=False)
        self.assertEqual(read([u for lst in p.units for u in lst]) + read(p.dropped), every_sample(shards))
        self.assertEqual(set(p.samples), {n // 8})

    def test_dropped_differ_between_epochs(self):
        shards, hs = cluster(n=60)
        drops = [frozenset(read(make_plan(shards, hs[:3], seed=1, epoch=ep).dropped)) for ep in range(6)]
        self.assertGreater(len(set(drops)), 1, "the left-over samples are drawn afresh per epoch")

    def test_optimal_against_brute_force(self):
        rng = random.Random(1)
        for case in range(250):
            shards, rank_hosts = small_case(rng)
            homes, _ = _assign(shards, rank_hosts, case)
            self.assertAlmostEqual(local_bytes(shards, rank_hosts, homes), brute(shards, rank_hosts), 6,
                                   msg="case %d: %s on %s" % (case, shards, rank_hosts))
            if sum(s.samples for s in shards) % len(rank_hosts) == 0:
                p = make_plan(shards, rank_hosts, seed=case, epoch=2)
                self.assertAlmostEqual(local_bytes(shards, rank_hosts, p.units), brute(shards, rank_hosts), 6)

    def test_uneven_placement(self):
        # 3 hosts, copies=1, 7 shards of 4 samples held 0/2/5: 9 samples per rank (1 dropped); the most
        # that can be local: B its 8, C 9 of its 20 (brute force on whole shards agrees on the shape)
        hs = ["A", "B", "C"]
        held = ["B"] * 2 + ["C"] * 5
        shards = [Shard("s%d" % i, 1000, frozenset([h]), 4) for i, h in enumerate(held)]
        for ep in range(3):
            p = make_plan(shards, hs, seed=ep, epoch=ep)
            self.assertEqual(p.samples, [9, 9, 9], "equal samples: max/mean = 1")
            self.assertEqual(p.local_bytes, [0, 8 * 250, 9 * 250], "epoch %d" % ep)
        whole = [s._replace(samples=1) for s in shards]
        self.assertEqual(local_bytes(whole, hs, _assign(whole, hs, 0)[0]), brute(whole, hs))

    def test_copies1_moves_only_the_surplus(self):
        # copies=1: a host's samples beyond its ranks' share (q each) must leave it, nothing else need;
        # the plan's remote samples are exactly that surplus, sum max(0, held - share), and no rank idles
        # (with N mod world dropped samples, up to that many fewer: a drop may fall on the surplus)
        rng = random.Random(11)
        exact = 0
        for case in range(120):
            nh, k = rng.randint(2, 8), rng.randint(1, 3)
            hs = ["t%d" % i for i in range(nh)]
            per, sps = rng.choice([(8, 8), (32, 4), (64, 2), (3, 5)])
            shards = [Shard("s%04d" % i, 1000 * sps, frozenset([rng.choice(hs)]), sps) for i in range(nh * per)]
            ranks = default_hosts(nh * k, hs)
            q = sum(s.samples for s in shards) // len(ranks)
            held = Counter(next(iter(s.hosts)) for s in shards for _ in range(s.samples))
            surplus = sum(max(0, held[h] - q * k) for h in hs)
            p = make_plan(shards, ranks, seed=case, epoch=case % 3)
            remote = sum(u.hi - u.lo for lst in p.units for u in lst if not u.local)
            what = "case %d: %d hosts x %d ranks, %d shards/host" % (case, nh, k, per)
            drop = sum(s.samples for s in shards) % len(ranks)
            self.assertLessEqual(remote, surplus, what)
            self.assertGreaterEqual(remote, surplus - drop, what)
            exact += not drop
            if not drop:
                self.assertEqual(remote, surplus, what)
            self.assertEqual(set(p.samples), {q}, "case %d: every rank reads q samples" % case)
            self.assertTrue(all(p.units), "case %d: no rank idles" % case)
        self.assertGreater(exact, 30, "enough cases without dropped samples")

    def test_locality_bound(self):
        for copies in (1, 2):
            shards, hs = cluster(copies=copies)
            ranks = default_hosts(8, hs)
            p = make_plan(shards, ranks, seed=1, epoch=0)
            if copies == 2:
                self.assertGreater(p.local_fraction(), 0.999)
            else:
                self.assertGreater(p.local_fraction(), 0.85)

    def test_no_target_hosts_use_cache_homes(self):
        shards, _ = cluster()
        ranks = default_hosts(8, ["gpu1", "gpu2"])  # hosts without targets
        plans = [make_plan(shards, ranks, seed=5, epoch=ep) for ep in range(3)]
        where = []
        for p in plans:
            self.assertEqual(p.local_fraction(), 1.0)  # every sample at its cache home
            where.append({(u.shard, i): ranks[r] for r, lst in enumerate(p.units) for u in lst
                          for i in range(u.lo, u.hi)})
        for w in where[1:]:  # the same host every epoch (so its cache holds it)
            common = set(w) & set(where[0])
            self.assertEqual({k: w[k] for k in common}, {k: where[0][k] for k in common})

    def test_exchange_means_x(self):
        shards, hs = cluster(n=300)
        ranks = default_hosts(8, hs)
        q = sum(s.samples for s in shards) // 8
        home = make_plan(shards, ranks, seed=11, epoch=0)
        for ex in (0.0, 0.05, 0.1, 0.25, 0.5):
            prev = None
            for ep in range(4):
                p = make_plan(shards, ranks, seed=11, epoch=ep, exchange=ex)
                self.assertEqual(p.moved, [round(ex * q)] * 8, "exchange %s: every rank takes round(x q)" % ex)
                for r in range(8):
                    mine, h = read(p.units[r]), read(home.units[r])
                    away = sum((mine - h).values())
                    self.assertLessEqual(abs(away - round(ex * q)), 1, "exchange %s rank %d" % (ex, r))
                if prev is not None:
                    a, b = order_positions(prev), order_positions(p)
                    names = sorted(set(a) & set(b))
                    rho = spearman([a[n] for n in names], [b[n] for n in names])
                    self.assertLess(abs(rho), 0.15, "exchange %s epochs %d-%d: Spearman %.3f" % (ex, ep - 1, ep, rho))
                prev = p

    def test_exchange_one_ignores_locality(self):
        shards, hs = cluster()
        ranks = default_hosts(8, hs)
        p = make_plan(shards, ranks, seed=2, epoch=1, exchange=1.0)
        self.assertLess(p.local_fraction(), 0.5)

    def test_deterministic_across_processes(self):
        shards, hs = cluster(n=200)
        ranks = default_hosts(4, hs)
        here = make_plan(shards, ranks, seed=9, epoch=2, exchange=0.2).units
        code = ("import sys; sys.path.insert(0, %r); sys.path.insert(0, %r); import test_plan as t; "
                "from aisd.plan import make_plan, default_hosts; s, h = t.cluster(n=200); "
                "print(make_plan(s, default_hosts(4, h), seed=9, epoch=2, exchange=0.2).units)"
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
        self.assertEqual(make_plan([], ["h", "i"]).units, [[], []])


def loader_order(units, workers, batch):
    """What a torch DataLoader (in order) hands the training loop: worker w
    iterates units[w::K]; batches of `batch` from each worker in turn; a
    worker at its end is skipped. A list of batches of (shard, i)."""
    k = max(workers, 1)
    streams = []
    for w in range(k):
        seq = [(u.shard, i) for u in units[w::k] for i in range(u.lo, u.hi)]
        streams.append([seq[i:i + batch] for i in range(0, len(seq), batch)])
    out, alive = [], list(range(k))
    pos = [0] * k
    while alive:
        for w in list(alive):
            if pos[w] == len(streams[w]):
                alive.remove(w)
                continue
            out.append(streams[w][pos[w]])
            pos[w] += 1
    return out


class ResumeTest(unittest.TestCase):
    def test_consumed_per_worker(self):
        shards, hs = cluster(n=40)
        p = make_plan(shards, hs, seed=4, epoch=1)
        for workers, batch in ((0, None), (2, None), (3, 4), (2, 5)):
            order = loader_order(p.units[0], workers, batch or 1)
            taken = 0
            for b in order:
                taken += len(b)
                c = consumed_per_worker(p.units[0], taken, workers, batch)
                seen = Counter(x for bb in order for x in bb)
                self.assertEqual(sum(c), taken)
                self.assertEqual(sum(seen.values()), p.samples[0])
            if batch and batch > 1 and order and len(order[0]) > 1:
                with self.assertRaises(ValueError):
                    consumed_per_worker(p.units[0], 1, workers, batch)

    def test_resume_exactly_once(self):
        shards, hs = cluster(n=60)
        alls = every_sample(shards)
        old = default_hosts(8, hs)
        for new in (old, default_hosts(4, hs), hs[:3], default_hosts(12, hs[:3]), ["gpu"] * 5):
            for workers, batch in ((2, None), (3, 4)):
                p = make_plan(shards, old, seed=6, epoch=3, exchange=0.2)
                steps = 7
                done = Counter()
                pos = []
                for r in range(8):
                    order = loader_order(p.units[r], workers, batch or 1)
                    taken = [x for b in order[:steps] for x in b]
                    done += Counter(taken)
                    pos.append(len(taken))
                rest = resume_plan(shards, old, new, pos, seed=6, epoch=3, exchange=0.2, workers=workers,
                                   batch_size=batch)
                got = done + read([u for lst in rest.units for u in lst]) + read(rest.dropped)
                self.assertEqual(got, alls, "resume on %d ranks" % len(new))
                self.assertLessEqual(max(rest.samples) - min(rest.samples), 1)
                if new == old:
                    self.assertEqual(rest.samples, [p.samples[r] - pos[r] for r in range(8)])

    def test_resume_twice(self):
        # 8 ranks -> killed -> 3 ranks -> killed again -> 5 ranks: still every sample once
        shards, hs = cluster(n=50)
        h8, h3, h5 = default_hosts(8, hs), hs[:3], (hs * 2)[:5]
        p = make_plan(shards, h8, seed=2, epoch=1)
        done = Counter()
        for r in range(8):
            done += Counter(x for b in loader_order(p.units[r], 2, 1)[:10] for x in b)
        mid = resume_plan(shards, h8, h3, [10] * 8, seed=2, epoch=1, workers=2)
        for r in range(3):
            done += Counter(x for b in loader_order(mid.units[r], 0, 4)[:5] for x in b)
        last = resume_plan(shards, h3, h5, [20] * 3, seed=2, epoch=1, workers=0, batch_size=4, old=mid)
        self.assertEqual(done + read([u for lst in last.units for u in lst]) + read(last.dropped), every_sample(shards))


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
