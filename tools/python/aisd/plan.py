"""plan.py - the locality-aware epoch plan: which rank reads which shard.

A pure, deterministic function of (seed, epoch, shards with sizes and the
hosts holding them, the host of every rank, exchange). Every rank computes
the same plan alone; nothing is exchanged between ranks.

What a plan guarantees (tests/unit/test_plan.py checks each):
1. Every shard is in exactly one rank's list, every epoch.
2. Balance: no rank's bytes exceed total/world by more than the largest
   shard (the greedy below never puts a shard on a rank above the mean
   unless every rank is at or above it).
3. Locality: a shard goes to a rank on a host that holds a copy when that
   rank has room (below the mean); a shard no rank's host holds gets a
   cache home (a rank placed for balance, the same every epoch), so a
   node-local cache there holds it from the second epoch on: the plan
   counts it as local to that host. Every home is the same every epoch
   (it depends on the seed and the inputs, not the epoch), so with a node
   cache the overflow (shards held elsewhere) is read over the network
   once, then from the cache.
4. Randomness: each rank's order is a fresh permutation per (seed, epoch,
   rank); and every epoch at least `exchange` of each rank's home shards
   (ceil, so at least one when exchange > 0) leave it for other ranks,
   chosen afresh by (seed, epoch), so no rank keeps a fixed subset: from
   one epoch to the next a rank's set changes by about exchange x (2 -
   exchange) (those that leave, replaced by others, and last epoch's
   leavers coming back).
   exchange 0 = strict locality; 1 = every shard away from its home (no
   locality).

The mechanism, in two steps:
- Homes (the same every epoch): shards by size, largest first (ties by a
  seeded hash); each goes to the least-loaded rank on one of its local
  hosts if that rank stays at or below the mean; the rest (overflow, and
  shards no rank's host holds) go, in the same order, to the least-loaded
  rank anywhere.
- Exchange (per epoch): from each rank's homes, ceil(exchange x count)
  drawn by (seed, epoch) are taken out; they go, largest first, to the
  least-loaded rank other than their home (ties drawn by (seed, epoch)).

Cost: O(n log n + n x ranks per host) per epoch; 100,000 shards over 1,024
ranks on 128 hosts take about 5 s in CPython (once per epoch and process).
"""
import hashlib
import heapq
import math
import random
from collections import namedtuple

__all__ = ["Shard", "Plan", "make_plan", "default_hosts", "spearman", "order_positions", "list_shards"]

Shard = namedtuple("Shard", "name size hosts")  # hosts: the hosts holding a copy (any iterable)


class Plan:
    """One epoch's plan. ranks[r]: shard names in rank r's read order;
    home_moved[r]: how many of them are not at their home (exchanged in);
    local[name]: whether the shard's rank is on a host that holds it (or
    its cache home); bytes[r], local_bytes[r]."""

    def __init__(self, epoch, ranks, local, sizes, moved):
        self.epoch, self.ranks, self.local, self.moved = epoch, ranks, local, moved
        self.bytes = [sum(sizes[n] for n in lst) for lst in ranks]
        self.local_bytes = [sum(sizes[n] for n in lst if local[n]) for lst in ranks]

    def local_fraction(self):
        total = sum(self.bytes)
        return sum(self.local_bytes) / total if total else 1.0

    def rank_of(self):
        return {n: r for r, lst in enumerate(self.ranks) for n in lst}


def _h(*parts):
    """A 64-bit hash of the parts, the same in every process (Python's
    hash() of a str is not)."""
    d = hashlib.blake2b("\0".join(str(p) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(d, "big")


def default_hosts(world, hosts):
    """One host per rank from a shorter list: ranks in equal contiguous
    blocks per host (as torchrun numbers them). A list of `world` hosts is
    returned as is."""
    hosts = list(hosts)
    if not hosts:
        raise ValueError("no hosts")
    if len(hosts) == world:
        return hosts
    if world % len(hosts):
        raise ValueError("%d ranks do not split evenly over %d hosts: give one host per rank" % (world, len(hosts)))
    k = world // len(hosts)
    return [h for h in hosts for _ in range(k)]


def _homes(shards, rank_hosts, seed):
    """(home rank per shard name, local-host set per shard name)."""
    world = len(rank_hosts)
    by_host = {}
    for r, h in enumerate(rank_hosts):
        by_host.setdefault(h, []).append(r)
    total = sum(s.size for s in shards)
    mean = total / world
    load = [0] * world
    home, lhosts, overflow = {}, {}, []
    order = sorted(shards, key=lambda s: (-s.size, _h(seed, "order", s.name)))
    for s in order:
        hs = {h for h in s.hosts if h in by_host}
        lhosts[s.name] = hs
        if not hs:  # held by no rank's host: placed for balance below; that home is its cache home
            overflow.append(s)
            continue
        cands = [r for h in hs for r in by_host[h]]
        r = min(cands, key=lambda r: (load[r], _h(seed, "tie", s.name, r)))
        if load[r] + s.size <= mean or load[r] == 0:
            home[s.name] = r
            load[r] += s.size
        else:
            overflow.append(s)
    heap = [(load[r], _h(seed, "rank", r), r) for r in range(world)]
    heapq.heapify(heap)
    for s in overflow:
        ld, tie, r = heapq.heappop(heap)
        home[s.name] = r
        if not lhosts[s.name]:
            lhosts[s.name] = {rank_hosts[r]}
        heapq.heappush(heap, (ld + s.size, tie, r))
    return home, lhosts


def make_plan(shards, rank_hosts, seed=0, epoch=0, exchange=0.0):
    """The plan of one epoch. shards: Shard tuples (or (name, size, hosts));
    rank_hosts: the host of each rank (index = rank); exchange: 0..1.
    Raises ValueError on duplicate names, no ranks or a bad exchange."""
    shards = [s if isinstance(s, Shard) else Shard(*s) for s in shards]
    world = len(rank_hosts)
    if world < 1:
        raise ValueError("no ranks")
    if not 0.0 <= exchange <= 1.0:
        raise ValueError("exchange must be within 0..1")
    sizes = {}
    for s in shards:
        if s.name in sizes:
            raise ValueError("shard %r listed twice" % s.name)
        if s.size < 0:
            raise ValueError("shard %r: negative size" % s.name)
        sizes[s.name] = s.size
    home, lhosts = _homes(shards, rank_hosts, seed)

    rng = random.Random("%s/exchange/%d" % (seed, epoch))
    mine = [[] for _ in range(world)]
    for name in sorted(home):
        mine[home[name]].append(name)
    out = set()
    if exchange > 0 and world > 1:
        for r in range(world):
            k = min(len(mine[r]), math.ceil(exchange * len(mine[r])))
            out.update(rng.sample(mine[r], k))
    load = [0] * world
    assign = {}
    for name, r in home.items():
        if name not in out:
            assign[name] = r
            load[r] += sizes[name]
    moving = sorted(out)
    rng.shuffle(moving)
    moving.sort(key=lambda n: -sizes[n])  # stable: equal sizes keep the drawn order
    ties = [rng.random() for _ in range(world)]
    heap = [(load[r], ties[r], r) for r in range(world)]
    heapq.heapify(heap)
    for name in moving:
        skipped = []
        while True:
            ld, tie, r = heapq.heappop(heap)
            if r != home[name]:
                break
            skipped.append((ld, tie, r))
        assign[name] = r
        heapq.heappush(heap, (ld + sizes[name], rng.random(), r))
        for x in skipped:
            heapq.heappush(heap, x)

    ranks = [[] for _ in range(world)]
    for name in sorted(assign):
        ranks[assign[name]].append(name)
    for r in range(world):
        random.Random("%s/order/%d/%d" % (seed, epoch, r)).shuffle(ranks[r])
    local = {n: rank_hosts[assign[n]] in lhosts[n] for n in assign}
    moved = [sum(1 for n in lst if n in out) for lst in ranks]
    return Plan(epoch, ranks, local, sizes, moved)


def spearman(a, b):
    """Spearman's rank correlation of two equal-length sequences (ties get
    their mean rank)."""
    def ranks(x):
        idx = sorted(range(len(x)), key=lambda i: x[i])
        rk = [0.0] * len(x)
        i = 0
        while i < len(idx):
            j = i
            while j + 1 < len(idx) and x[idx[j + 1]] == x[idx[i]]:
                j += 1
            for k in range(i, j + 1):
                rk[idx[k]] = (i + j) / 2.0
            i = j + 1
        return rk
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    if n < 2:
        return 0.0
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = math.sqrt(sum((x - ma) ** 2 for x in ra))
    vb = math.sqrt(sum((y - mb) ** 2 for y in rb))
    return cov / (va * vb) if va and vb else 0.0


def order_positions(plan):
    """Each shard's place in the epoch's reading order: its position in its
    rank's list over that list's length (ranks read in parallel), in 0..1."""
    pos = {}
    for lst in plan.ranks:
        for i, n in enumerate(lst):
            pos[n] = (i + 0.5) / len(lst)
    return pos


def list_shards(client, bucket, prefix="", suffixes=(".tar", ".tgz", ".tar.gz", ".zip")):
    """The shards under prefix as (Shard list, urls): one listing with
    props size,version,checksum,location; urls[name][host] is the public URL
    of a target on that host holding a copy. Raises HTTPError/OSError as
    the listing does."""
    shards, urls = [], {}
    for e in client.list(bucket, prefix, pagesize=10000, props="name,size,version,checksum,location"):
        name = e["name"]
        if not name.endswith(tuple(suffixes)):
            continue
        by_host = {}
        for loc in e.get("location") or []:
            if loc.get("host") and loc.get("url"):
                by_host.setdefault(loc["host"], loc["url"])
        shards.append(Shard(name, int(e.get("size", 0)), frozenset(by_host)))
        urls[name] = by_host
    return shards, urls


_USAGE = """python3 -m aisd.plan BUCKET[/PREFIX] --world N --hosts H1,H2,... [options]

Prints the locality-aware epoch plan that ShardDataset(locality=True)
computes on every rank: per rank its host, shards, bytes, the fraction read
on its own host (from a target there, or from its node cache), and the
shards exchanged in; then per epoch the balance (largest rank's bytes over
the mean), the local fraction, the exchange (shards away from their home)
and the order correlation with the previous epoch (Spearman of each shard's
place in the reading order).

--hosts: one host per rank, or fewer (ranks in equal contiguous blocks per
host, as torchrun numbers them); a host is what the listing's "location"
names (the host part of a target's public URL), or any other name for a
node that runs no target (its shards come from its cache home)."""


def main(argv=None):
    import argparse
    import json
    import os
    import sys

    from .client import Client, HTTPError

    ap = argparse.ArgumentParser(prog="python3 -m aisd.plan", usage=_USAGE,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", metavar="BUCKET[/PREFIX]")
    ap.add_argument("--world", type=int, required=True, help="number of ranks")
    ap.add_argument("--hosts", required=True, help="comma-separated hosts (one per rank, or blocks)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=2, help="epochs to show from --epoch (default 2)")
    ap.add_argument("--epoch", type=int, default=0, help="first epoch (default 0)")
    ap.add_argument("--exchange", type=float, default=0.0, help="fraction moved between ranks per epoch (0..1)")
    ap.add_argument("--endpoint", default=os.environ.get("AIS_ENDPOINT", "http://127.0.0.1:8080"),
                    help="gateway URL (default $AIS_ENDPOINT or http://127.0.0.1:8080)")
    ap.add_argument("--shards", action="store_true", help="also list each rank's shards in order")
    ap.add_argument("--json", action="store_true", help="one JSON object per epoch")
    a = ap.parse_args(argv)
    bucket, _, prefix = a.path.partition("/")
    try:
        hosts = default_hosts(a.world, [h for h in a.hosts.split(",") if h])
        shards, _ = list_shards(Client(a.endpoint, retry_for=10), bucket, prefix)
        if not shards:
            print("aisd.plan: no shards (.tar, .tgz, .tar.gz, .zip) under %s" % a.path, file=sys.stderr)
            return 1
        prev = None
        for ep in range(a.epoch, a.epoch + a.epochs):
            p = make_plan(shards, hosts, a.seed, ep, a.exchange)
            pos = order_positions(p)
            rho = spearman([prev[n] for n in sorted(pos)], [pos[n] for n in sorted(pos)]) if prev else None
            prev = pos
            mean = sum(p.bytes) / len(p.bytes)
            summ = {"epoch": ep, "shards": len(shards), "bytes": sum(p.bytes),
                    "balance": round(max(p.bytes) / mean, 4) if mean else 1.0,
                    "local_fraction": round(p.local_fraction(), 4), "exchanged": sum(p.moved),
                    "spearman_prev": None if rho is None else round(rho, 4)}
            if a.json:
                summ["ranks"] = [{"rank": r, "host": hosts[r], "shards": p.ranks[r], "bytes": p.bytes[r],
                                  "local_bytes": p.local_bytes[r], "exchanged_in": p.moved[r]}
                                 for r in range(a.world)]
                print(json.dumps(summ))
                continue
            print("epoch %d: %d shards, %d bytes; balance %.3f (max/mean); local %.1f%%; exchanged %d%s" % (
                ep, len(shards), sum(p.bytes), summ["balance"], 100 * p.local_fraction(), sum(p.moved),
                "" if rho is None else "; order vs previous epoch: Spearman %.3f" % rho))
            print("  %-5s %-20s %7s %14s %7s %9s" % ("RANK", "HOST", "SHARDS", "BYTES", "LOCAL", "EXCHANGED"))
            for r in range(a.world):
                b = p.bytes[r]
                print("  %-5d %-20s %7d %14d %6.1f%% %9d" % (r, hosts[r][:20], len(p.ranks[r]), b,
                                                            100.0 * p.local_bytes[r] / b if b else 100.0, p.moved[r]))
                if a.shards:
                    for n in p.ranks[r]:
                        print("        %s%s" % (n, "" if p.local[n] else "  (remote)"))
    except (HTTPError, OSError, ValueError) as e:
        print("aisd.plan: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
