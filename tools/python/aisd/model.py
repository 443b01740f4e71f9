"""model.py - a model of distributed data loading that predicts epoch time
and network bytes for plain loading, plain caching and locality-aware
loading (aisd.plan, or the per-batch balancing of the 2019 study of data
loading for large-scale training, Yang and Cong, HiPC 2019).

    python3 -m aisd.model --dataset 1T --storage 2G --network 12.5G \\
        --train 800 --preprocess 1200 --sample 110K --cache 200G
    python3 -m aisd.model --paper        # that study's setting, 1,024 learners

What it models, where the earlier mean-based model was wrong:
1. The busiest link and the busiest target, not the mean: shards are
   placed on targets by a seeded draw (HRW spreads names like a uniform
   draw; a shard's copies on distinct targets), or as given (shards=);
   every node's link time is its own bytes in or out over its rate, and
   the epoch waits for the slowest.
2. Overflow: the locality plan is aisd.plan.make_plan itself, run on that
   placement, so the shards a rank must read from another node (copies=1
   with uneven placement, a node with no target) are counted where they
   cross.
3. The node cache under its policy: aisd.cache.simulate replays each
   node's reads of three epochs through a cache of C bytes (belady or
   lru; plain dealing can only use lru), with an optional prefetch budget.
4. Batches: per-batch balancing traffic (the study's locality method:
   every learner keeps what it loaded; each global batch is drawn at
   random and the learners holding more than their part of it send the
   excess), its expected size from the binomial law; aisd's plan balances
   per epoch (equal samples per rank) and has none.
5. Network and compute overlap only partly (--overlap; DataLoader workers
   prefetch a few batches): t = max(io, compute) + (1 - overlap) *
   min(io, compute); links carry payload at --efficiency of their rate.

See --help for the formulas and the assumptions. No I/O; the simulations
are seeded (the same answer every run).
"""
import argparse
import hashlib
import json
import math
import random
import sys

from .cache import simulate
from .plan import Shard, default_hosts, make_plan

__all__ = ["predict", "parse_size", "balance_fraction", "PAPER"]

_SIM_SHARDS = 2000  # at most this many shards are simulated (larger sets: bigger shards, same bytes;
# this overstates how uneven the placement is when there are many nodes)
_EPOCHS = 3  # epochs replayed through the caches; the last one is reported (steady state)
_FLOW_QUEUES, _FLOW_READS = 256, 2000  # the fluid simulation's limits (beyond: the busiest-link bound)

# The 2019 study's setting as this model reads it (the paper states 256
# nodes, 1,024 learners, ImageNet-1K); the rest are assumptions, stated in
# --help and tools/python/README.md.
PAPER = dict(learners=[1024], dataset=1_281_167 * 110e3, sample=110e3, ranks_per_node=4, targets=64,
             storage=2e9, network=100e9 / 8, train=400.0, preprocess=600.0, batch=32, cache=1_281_167 * 110e3 / 256,
             copies=1, shard_size=100e6, balance="batch", policy="belady")

_FORMULAS = """
Inputs: D dataset bytes, s bytes per sample, N learners (ranks), k ranks
per node, n = ceil(N / k) nodes, M storage targets (--targets; 0 = one on
every training node), S storage bytes/s per target, B network bytes/s per
node and direction, e link efficiency (payload / rate), T training and P
preprocessing samples/s per rank, G samples per rank per batch, C cache
bytes per node, x exchange fraction, c copies, z bytes per shard.

Placement: D/z shards, each on c distinct targets drawn by a seeded
uniform draw (what HRW does to names); the first is the one a gateway
sends a plain read to. held[t] = bytes target t serves.

Per epoch, per node h (co-located: target h runs on node h):
  plain      every shard to one rank (a seeded permutation dealt round-
             robin, as ShardDataset does); a shard crosses when its owner
             is not on the reader's node.
  caching    plain, each node keeping what it read in an LRU cache of C.
  locality   --balance plan: aisd.plan.make_plan on the placement (ranks
             in blocks per node); a shard no target on the rank's node
             holds is read from its owner, through the node cache (C,
             --policy belady|lru, --prefetch bytes/s per node).
             --balance batch: the study's method: every learner keeps the
             samples it loaded in epoch 0 (a cache of C per node); each
             global batch of N*G samples is drawn at random and learners
             send the samples beyond their part: a fraction
             f = E[sum_i max(0, X_i - G)] / (N*G), X_i ~ Bin(N*G, 1/N),
             of every batch crosses (when the cache holds the share; the
             rest comes from storage), plus (1 - min(1, n*C/D)) of D.
  in[h], out[h] = bytes over node h's link each way; the cache of node h
  replays its reads of 3 epochs (aisd.cache.simulate) and only misses
  cross (prefetched bytes cross too, ahead of their reads).

  network   t_n = max_h max(in[h], out[h]) / (e * B)     the busiest link
  storage   t_s = max_t read[t] / S                        the busiest target
  compute   t_c = max_r samples[r] / min(T, P)             the busiest rank
  epoch     t = max(t_io, t_c) + (1 - overlap) * min(t_io, t_c),
            t_io = max(t_n, t_s); and never less than a fluid simulation
            of the epoch: each DataLoader worker (--workers per rank)
            reads its shards one after another, a crossing read is a flow
            through the owner's link out and the reader's link in, every
            read through its rank's pipeline (T * s bytes/s), rates max-min
            fair; the last flow ends the epoch (up to 256 workers and 2,000
            reads; beyond, the bounds alone: the slowest rank's waits are
            then not modelled)
  At most 2,000 shards are simulated: a larger data set is simulated as
  2,000 bigger shards (which overstates the placement's unevenness over
  many nodes).

Samples/s = D / (s * t). Sizes and rates take suffixes K, M, G, T (powers
of 1000; Ki, Mi, Gi, Ti powers of 1024); --network also takes bit rates
(8mbit, 10gbit). Validated against network-namespace runs (BENCHMARKS.md,
make bench-locality: 4 and 8 nodes, 4-32 Mbit/s links).

--paper: the 2019 study's setting as assumed here: 1,024 learners, 4 per
node (256 nodes; both stated in the paper), ImageNet-1K (1,281,167
samples; 110 KB each assumed: 141 GB), 64 storage targets of 2 GB/s
(assumed: a parallel file system, no target on the training nodes),
100 Gbit/s per node (assumed: EDR InfiniBand), 400 training and 600
preprocessing samples/s per learner (assumed: ResNet-50 on a V100 and its
CPU share), 32 samples per learner per batch (assumed), a cache per node
of the node's share (141 GB / 256: every sample is cached somewhere after
epoch 0, as the study's software cache needs), shards of 100 MB, per-batch
balancing. Every value can be overridden by its option."""


def parse_size(v):
    """'1.5G' -> 1.5e9, '256Ki' -> 262144, '8mbit' -> 1e6 (bytes/s)."""
    t = str(v).strip().lower()
    bits = t.endswith("bit")
    if bits:
        t = t[:-3]
    mult = 1
    for suf, m in (("ki", 1 << 10), ("mi", 1 << 20), ("gi", 1 << 30), ("ti", 1 << 40),
                   ("k", 1e3), ("m", 1e6), ("g", 1e9), ("t", 1e12)):
        if t.endswith(suf):
            t, mult = t[:-len(suf)], m
            break
    try:
        x = float(t) * mult
    except ValueError:
        raise ValueError("not a size or rate: %r" % v) from None
    if x < 0 or math.isnan(x) or math.isinf(x):
        raise ValueError("not a size or rate: %r" % v)
    return x / 8 if bits else x


def balance_fraction(learners, batch):
    """The expected fraction of a global batch (learners x batch samples
    drawn at random, each held by one learner chosen uniformly) that must
    move so that every learner has batch samples: E[sum max(0, X - batch)]
    / (learners * batch), X ~ Binomial(learners * batch, 1 / learners)."""
    N, G = int(learners), int(batch)
    if N <= 1 or G < 1:
        return 0.0
    n, p = N * G, 1.0 / N
    if n > 2_000_000:  # normal approximation: sigma / sqrt(2 pi) per learner
        return math.sqrt(G * (1 - p) / (2 * math.pi)) / G
    mean_excess = 0.0
    lp = math.lgamma(n + 1)
    for x in range(G + 1, n + 1):
        lpmf = lp - math.lgamma(x + 1) - math.lgamma(n - x + 1) + x * math.log(p) + (n - x) * math.log1p(-p)
        term = math.exp(lpmf) * (x - G)
        mean_excess += term
        if x > G + 10 and term < 1e-12 * max(mean_excess, 1e-300):
            break
    return mean_excess / G


def _placement(nshards, size, targets, copies, seed):
    """Shards named s000000.., each on `copies` distinct targets (host
    names "t0".."t{M-1}"), by a seeded uniform draw."""
    rng = random.Random("aisd.model/%s" % seed)
    hs = ["t%d" % i for i in range(targets)]
    c = min(copies, targets)
    return [Shard("s%06d" % i, size, tuple(rng.sample(hs, c))) for i in range(nshards)]


def _owner(sh):
    """The holder a plain read of a listed shard goes to: the gateway sends
    it to the first in HRW order, which a listing does not give (it names
    the copies in the map's order, and taking its first would make the
    map's first target the owner of every shard it holds): a hash of
    (name, holder) picks one as evenly as HRW does."""
    hs = sorted(sh.hosts)
    if len(hs) < 2:
        return hs[0] if hs else None
    return max(hs, key=lambda h: hashlib.sha256(("%s\0%s" % (sh.name, h)).encode()).digest())


def _node_reads(lists, rank_nodes, node, remote):
    """A node's reads of one epoch in time order (place i of a list of n
    at i/n), only those remote(name, rank) says come over the network."""
    ev = []
    for r, lst in enumerate(lists):
        if rank_nodes[r] != node:
            continue
        for i, name in enumerate(lst):
            if remote(name, r):
                ev.append((i / len(lst), r, name))
    ev.sort()
    return [name for _, _, name in ev]


def _plain_lists(names, world, seed, epoch):
    items = sorted(names)
    random.Random("%s/%d" % (seed, epoch)).shuffle(items)
    return [items[r::world] for r in range(world)]


def _cache_misses(seqs, sizes, cache, policy, prefetch_per_read):
    """Replays the node's epochs (list of per-epoch sequences) through its
    cache; returns ({name: bytes missed} of the last epoch, hit rate of the
    last epoch, bytes prefetched during the last epoch)."""
    flat = [n for s in seqs for n in s]
    since = len(flat) - len(seqs[-1])
    missed = {}
    if cache <= 0 or not flat:
        for n in seqs[-1]:
            missed[n] = missed.get(n, 0) + sizes[n]
        return missed, 0.0, 0.0
    r = simulate(flat, sizes, cache, policy, prefetch=prefetch_per_read, since=since)
    for n in r["missed"]:
        missed[n] = missed.get(n, 0) + sizes[n]
    through = r["hit_bytes"] + r["miss_bytes"]
    return missed, (r["hit_bytes"] / through if through else 0.0), r["prefetch_bytes"]


def _flow_epoch(lists, rank_nodes, workers, crosses, owner, sizes, link_rate, rank_rate):
    """The epoch's seconds by a fluid simulation: every DataLoader worker
    reads its shards of its rank's list (round-robin) one after the other;
    a read is a flow through the owner's link out and the reader's link in
    when it crosses (crosses(name, rank)), and through its rank's pipeline
    (rank_rate bytes/s, shared by the rank's workers) always; rates are
    max-min fair (progressive filling); the epoch ends with the last
    flow. None when too large to simulate."""
    queues = []
    for r, lst in enumerate(lists):
        for w in range(workers):
            q = lst[w::workers]
            if q:
                queues.append([r, q, 0])
    if len(queues) > _FLOW_QUEUES or sum(len(lst) for lst in lists) > _FLOW_READS:
        return None
    t = 0.0
    active = {}  # flow id (queue index) -> [remaining bytes, resources]

    def start(i):
        r, q, k = queues[i]
        name = q[k]
        res = [("cpu", r)]
        if crosses(name, r):
            res += [("out", owner[name]), ("in", rank_nodes[r])]
        active[i] = [float(sizes[name]), res]

    for i in range(len(queues)):
        start(i)
    cap = lambda res: rank_rate if res[0] == "cpu" else link_rate  # noqa: E731
    while active:
        users = {}
        for i, (_, res) in active.items():
            for x in res:
                users.setdefault(x, set()).add(i)
        left = {x: cap(x) for x in users}
        rate, unfixed = {}, set(active)
        while unfixed:
            x = min((x for x in users if users[x] & unfixed), key=lambda x: left[x] / len(users[x] & unfixed))
            share = left[x] / len(users[x] & unfixed)
            for i in list(users[x] & unfixed):
                rate[i] = share
                unfixed.discard(i)
                for y in active[i][1]:
                    left[y] -= share
        dt = min(active[i][0] / rate[i] for i in active if rate[i] > 0)
        t += dt
        done = []
        for i in active:
            active[i][0] -= rate[i] * dt
            if active[i][0] <= 1e-6 * sizes[queues[i][1][queues[i][2]]] + 1e-9:
                done.append(i)
        for i in done:
            del active[i]
            queues[i][2] += 1
            if queues[i][2] < len(queues[i][1]):
                start(i)
    return t


def predict(learners, dataset, sample, storage, network, train, preprocess, cache=0.0,
            ranks_per_node=8, targets=0, exchange=0.0, first_epoch=False, batch=1, copies=1,
            shard_size=1 << 20, policy="belady", prefetch=0.0, balance="plan", overlap=1.0,
            efficiency=1.0, shards=None, seed=0, modes=("plain", "caching", "locality"), workers=2):
    """{mode: {"secs", "net_bytes", "samples_per_s", "bound", "busiest_link",
    "busiest_target", "hit_rate", "balance_bytes_per_batch", ...}} for the
    modes at `learners` ranks (steady state unless first_epoch). shards:
    the real placement as aisd.plan.Shard tuples (hosts: target names),
    else a seeded draw of dataset / shard_size shards. workers: DataLoader
    workers per rank (the flow simulation's streams)."""
    D, s, N = float(dataset), float(sample), int(learners)
    k = int(ranks_per_node)
    n = math.ceil(N / k)
    colo = not targets
    M = n if colo else int(targets)
    given = shards
    if shards is None:
        ns = max(1, min(_SIM_SHARDS, round(D / shard_size)))
        shards = _placement(ns, D / ns, M, copies, seed)
        tnames = ["t%d" % i for i in range(M)]
    else:
        shards = [sh if isinstance(sh, Shard) else Shard(*sh) for sh in shards]
        tnames = sorted({h for sh in shards for h in sh.hosts})
        M = len(tnames)
    # the plan balances samples: a shard holds its bytes' worth of samples
    shards = [sh._replace(samples=max(1, round(sh.size / s))) for sh in shards]
    sizes = {sh.name: sh.size for sh in shards}
    owner = {sh.name: tuple(sh.hosts)[0] if given is None else _owner(sh) for sh in shards}
    holders = {sh.name: set(sh.hosts) for sh in shards}
    D = float(sum(sizes.values()))
    nodes = (tnames + ["n%d" % i for i in range(M, n)])[:n] if colo else ["n%d" % i for i in range(n)]
    if colo and len(nodes) < n:
        nodes += ["n%d" % i for i in range(len(nodes), n)]
    rank_nodes = default_hosts(N, nodes) if N % len(nodes) == 0 else [nodes[r // k] for r in range(N)]
    rate = min(train, preprocess)
    Bn = network * efficiency
    ep_last = _EPOCHS - 1
    out = {}
    for mode in modes:
        inb = {h: 0.0 for h in set(nodes) | set(tnames)}
        outb = dict(inb)
        read = {t: 0.0 for t in tnames}
        hits, bal_batch, crossing = [], 0.0, {}
        if mode in ("plain", "caching"):
            per_ep = [_plain_lists(sizes, N, seed, e) for e in range(_EPOCHS)]
            lists = per_ep[0 if first_epoch else ep_last]
            pol = "lru"
        elif balance == "batch":
            lists = _plain_lists(sizes, N, seed, 0 if first_epoch else ep_last)
            per_ep, pol = None, policy
        else:
            per_ep = [make_plan(shards, rank_nodes, seed, e, exchange).ranks for e in range(_EPOCHS)]
            lists = per_ep[0 if first_epoch else ep_last]
            pol = policy
        samples = [sum(sizes[x] for x in lst) / s for lst in lists]
        if mode == "locality" and balance == "batch":
            # the study: epoch 0 loads each sample once from storage, into the
            # loader's cache; later epochs draw global batches at random and
            # balance them between learners
            f = balance_fraction(N, batch)
            held = 1.0 if first_epoch else min(1.0, n * cache / D) if D else 1.0
            for t in tnames:
                read[t] = D * (1.0 if first_epoch else 1 - held) / M
            for h in nodes:
                inb[h] += D * (1.0 if first_epoch else (1 - held)) / n
                if not first_epoch:
                    inb[h] += D * held * f / n
                    outb[h] += D * held * f / n
            for t in tnames:
                if not colo or first_epoch or held < 1:
                    outb[t] += D * (1.0 if first_epoch else 1 - held) / M
            bal_batch = f * N * batch * s
            hits = [held]
        else:
            for h in sorted(set(nodes)):
                def remote(name, r, h=h):  # plain reads go to the owner; the plan's to a holder here
                    return owner[name] != h if mode != "locality" else h not in holders[name]
                seqs = [_node_reads(pe, rank_nodes, h, remote) for pe in per_ep]
                seqs = seqs[:1] if first_epoch else seqs
                use_cache = cache if mode != "plain" else 0.0
                # prefetch: what the link can carry beyond the misses while the
                # node's ranks work through the epoch, within the budget
                reads = max(1, len(seqs[-1]))
                pf = 0.0
                if prefetch and use_cache and seqs[-1]:
                    t_node = sum(samples[r] for r in range(N) if rank_nodes[r] == h) / (rate * k)
                    base, _, _ = _cache_misses(seqs, sizes, use_cache, pol, 0.0)
                    spare = max(0.0, t_node * Bn - sum(base.values()))
                    pf = min(prefetch * t_node, spare) / reads
                missed, hit, pfb = _cache_misses(seqs, sizes, use_cache, pol, pf if pol == "belady" else 0.0)
                if seqs[-1] and use_cache:
                    hits.append(hit)
                crossing[h] = missed
                inb[h] += sum(missed.values()) + pfb
                for name, b in missed.items():
                    outb[owner[name]] += b
                    read[owner[name]] += b
                if pfb:  # prefetched bytes leave the owners in proportion to the node's remote reads
                    tot = sum(sizes[x] for x in seqs[-1]) or 1
                    for x in seqs[-1]:
                        outb[owner[x]] += pfb * sizes[x] / tot
                        read[owner[x]] += pfb * sizes[x] / tot
            for r, lst in enumerate(lists):  # local reads: from the disk of the target on the rank's node
                h = rank_nodes[r]
                for x in lst:
                    if (owner[x] == h) if mode != "locality" else (h in holders[x]):
                        read[h] += sizes[x]
        X = sum(inb[h] for h in set(nodes))
        link = {h: max(inb[h], outb[h]) for h in inb}
        busiest = max(link, key=lambda h: link[h]) if link else None
        t_n = link[busiest] / Bn if busiest is not None else 0.0
        bt = max(read, key=lambda x: read[x]) if read else None
        t_s = read[bt] / storage if bt is not None else 0.0
        t_c = max(samples) / rate if samples else 0.0
        t_io = max(t_n, t_s)
        secs = max(t_io, t_c) + (1 - overlap) * min(t_io, t_c)
        if not (mode == "locality" and balance == "batch"):
            t_f = _flow_epoch(lists, rank_nodes, workers, lambda x, r: x in crossing.get(rank_nodes[r], ()),
                              owner, sizes, Bn, rate * s)
            if t_f is not None:  # the fluid simulation: never below the busiest link or rank
                secs = max(secs, t_f + (1 - overlap) * min(t_io, t_c))
        bound = "compute" if t_c >= t_io else "network" if t_n >= t_s else "storage"
        group = [h for h in link if (h in tnames) == (busiest in tnames)] if colo is False else list(link)
        mean_link = sum(link[h] for h in group) / len(group) if group else 0.0
        out[mode] = {"secs": secs, "net_bytes": X, "samples_per_s": D / s / secs if secs else 0.0, "bound": bound,
                     "busiest_link": link.get(busiest, 0.0), "busiest_link_over_mean":
                         link[busiest] / mean_link if mean_link else 1.0,
                     "busiest_link_both_ways": max((inb[h] + outb[h] for h in inb), default=0.0),
                     "busiest_target": read.get(bt, 0.0), "hit_rate": sum(hits) / len(hits) if hits else None,
                     "balance_bytes_per_batch": bal_batch, "t_network": t_n, "t_storage": t_s, "t_compute": t_c}
    return out


def _fmt_bytes(x):
    for u, d in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if x >= d:
            return "%.1f%s" % (x / d, u)
    return "%dB" % x


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m aisd.model", formatter_class=argparse.RawDescriptionHelpFormatter,
                                 description="Predicted epoch time and network bytes vs the number of learners, "
                                             "for plain loading, plain caching and locality-aware loading.",
                                 epilog=_FORMULAS)
    ap.add_argument("--paper", action="store_true", help="the 2019 study's setting (see below); options override it")
    ap.add_argument("--dataset", help="dataset bytes (D)")
    ap.add_argument("--sample", help="bytes per sample (s)")
    ap.add_argument("--storage", help="storage read bytes/s per target (S)")
    ap.add_argument("--network", help="network bytes/s per node, each direction (B; or 10gbit)")
    ap.add_argument("--train", type=float, help="training samples/s per rank (T)")
    ap.add_argument("--preprocess", type=float, help="preprocessing samples/s per rank (P)")
    ap.add_argument("--cache", help="node cache bytes (C; default 0)")
    ap.add_argument("--ranks-per-node", type=int, help="k (default 8)")
    ap.add_argument("--targets", type=int, help="storage targets M (default 0: one on every node)")
    ap.add_argument("--exchange", type=float, help="locality exchange fraction x (default 0)")
    ap.add_argument("--batch", type=int, help="samples per rank per batch (G; default 1)")
    ap.add_argument("--copies", type=int, help="copies of every shard (c; default 1)")
    ap.add_argument("--shard-size", help="bytes per shard (z; default 1Mi)")
    ap.add_argument("--policy", choices=("belady", "lru"), help="the node cache's policy with locality (default belady)")
    ap.add_argument("--prefetch", help="prefetch bytes/s per node (default 0: off)")
    ap.add_argument("--balance", choices=("plan", "batch"),
                    help="locality: plan = aisd.plan (default); batch = per-batch balancing (the study)")
    ap.add_argument("--overlap", type=float, help="how much I/O and compute overlap, 0..1 (default 1)")
    ap.add_argument("--efficiency", type=float, help="payload over link rate, 0..1 (default 1)")
    ap.add_argument("--workers", type=int, help="DataLoader workers per rank (default 2)")
    ap.add_argument("--seed", type=int, default=0, help="the placement's and the plan's seed (default 0)")
    ap.add_argument("--learners", help="comma-separated learner counts (default powers of 2 to 1024)")
    ap.add_argument("--first-epoch", action="store_true", help="the first epoch (caches empty)")
    ap.add_argument("--json", action="store_true", help="one JSON object per learner count")
    a = ap.parse_args(argv)
    base = dict(PAPER) if a.paper else {}
    defaults = dict(cache="0", ranks_per_node=8, targets=0, exchange=0.0, batch=1, copies=1, shard_size=1 << 20,
                    policy="belady", prefetch="0", balance="plan", overlap=1.0, efficiency=1.0, workers=2,
                    learners=",".join(str(2 ** i) for i in range(11)))
    opts = {}
    for key in ("dataset", "sample", "storage", "network", "train", "preprocess", "cache", "ranks_per_node",
                "targets", "exchange", "batch", "copies", "shard_size", "policy", "prefetch", "balance", "overlap",
                "efficiency", "learners", "workers"):
        v = getattr(a, key)
        opts[key] = v if v is not None else base.get(key, defaults.get(key))
    try:
        miss = [k for k in ("dataset", "sample", "storage", "network", "train", "preprocess") if opts[k] is None]
        if miss:
            raise ValueError("give --%s (or --paper)" % ", --".join(m.replace("_", "-") for m in miss))
        learners = opts["learners"]
        learners = [int(x) for x in learners.split(",") if x] if isinstance(learners, str) else list(learners)
        kw = dict(dataset=parse_size(opts["dataset"]), sample=parse_size(opts["sample"]),
                  storage=parse_size(opts["storage"]), network=parse_size(opts["network"]),
                  train=float(opts["train"]), preprocess=float(opts["preprocess"]), cache=parse_size(opts["cache"]),
                  ranks_per_node=int(opts["ranks_per_node"]), targets=int(opts["targets"]),
                  exchange=float(opts["exchange"]), first_epoch=a.first_epoch, batch=int(opts["batch"]),
                  copies=int(opts["copies"]), shard_size=parse_size(opts["shard_size"]), policy=opts["policy"],
                  prefetch=parse_size(opts["prefetch"]), balance=opts["balance"], overlap=float(opts["overlap"]),
                  efficiency=float(opts["efficiency"]), seed=a.seed, workers=int(opts["workers"]))
        if (not learners or min(learners) < 1 or kw["sample"] <= 0 or kw["storage"] <= 0 or kw["network"] <= 0
                or kw["train"] <= 0 or kw["preprocess"] <= 0 or kw["ranks_per_node"] < 1 or kw["batch"] < 1
                or kw["copies"] < 1 or kw["workers"] < 1 or kw["shard_size"] <= 0 or kw["targets"] < 0
                or not 0 <= kw["exchange"] <= 1 or not 0 <= kw["overlap"] <= 1 or not 0 < kw["efficiency"] <= 1):
            raise ValueError("learners, sample, storage, network, train, preprocess, ranks-per-node, batch, copies "
                             "and shard-size must be positive; exchange and overlap within 0..1, efficiency "
                             "within (0, 1]")
    except ValueError as e:
        print("aisd.model: %s" % e, file=sys.stderr)
        return 2
    k = kw["ranks_per_node"]
    if not a.json:
        print("%8s %6s | %-34s | %-34s | %-34s" % ("LEARNERS", "NODES", "plain: s/epoch, net, bound",
                                                   "caching: s/epoch, net, hit", "locality: s/epoch, net, hit"))
    for N in learners:
        p = predict(N, **kw)
        if a.json:
            print(json.dumps({"learners": N, "nodes": math.ceil(N / k), **p}))
            continue
        cells = []
        for m in ("plain", "caching", "locality"):
            x = p[m]
            hit = "" if x["hit_rate"] is None else " hit %.0f%%" % (100 * x["hit_rate"])
            cells.append("%9.2f %9s %-7s%s" % (x["secs"], _fmt_bytes(x["net_bytes"]), x["bound"], hit))
        print("%8d %6d | %-34s | %-34s | %-34s" % (N, math.ceil(N / k), *cells))
        if kw["balance"] == "batch" and p["locality"]["balance_bytes_per_batch"]:
            print("%16s   balancing per batch (locality): %s (%.1f%% of a global batch of %d samples)" % (
                "", _fmt_bytes(p["locality"]["balance_bytes_per_batch"]),
                100 * balance_fraction(N, kw["batch"]), N * kw["batch"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
