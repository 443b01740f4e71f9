"""model.py - an analytical model of distributed data loading, after the
2019 study of data loading for large-scale training (a pipeline bounded by
its slowest stage: storage, network, preprocessing, training), for three
ways of loading: plain (every epoch reads every sample from the cluster),
plain caching (each node keeps what it read, in a cache of a given size,
while samples are dealt at random every epoch), and locality-aware
(aisd.plan: each rank reads what its own host holds or its node cache
kept; an exchange fraction moves every epoch).

    python3 -m aisd.model --dataset 1T --storage 2G --network 12.5G \\
        --train 800 --preprocess 1200 --sample 110K --cache 200G

See --help for the formulas. Pure arithmetic; no I/O.
"""
import argparse
import json
import math
import sys

__all__ = ["predict", "parse_size"]

_FORMULAS = """
Inputs: D dataset bytes, s bytes per sample, N learners (ranks), k ranks
per node, n = ceil(N / k) nodes, M storage targets (--targets; 0 = one on
every training node, M = n), S storage bytes/s per target, B network
bytes/s per node and direction, T training and P preprocessing samples/s
per rank, C cache bytes per node, x exchange fraction.

  compute   t_c = D / (s * N * min(T, P))
  storage   t_s = R / (M * S)       R = bytes read from the targets' disks
  network   t_n = X / (min(n, M') * B) where X = bytes that cross the
            network in the epoch and M' = n for ingress, M for the
            targets' egress: t_n = max(X / (n*B), X / (M*B))
  epoch     t   = max(t_c, t_s, t_n)   (stages overlap: prefetching
            DataLoader workers; the slowest bounds the epoch)

Bytes over the network X per epoch (co-located: a target on every node,
so a read from the object's owner is local with chance 1/M; separate
targets: no read is local):

  plain             X = D * (1 - L)      L = 1/M co-located, else 0
  plain caching     X = D * (1 - L) * (1 - h)   h = min(1, C/D): the chance
                    a randomly dealt sample is in its node's cache of C bytes
                    (first epoch: h = 0)
  locality-aware    X = D * x * (1 - L)            co-located (the plan puts
                    every shard on a holder's node; the exchange moves x;
                    overflow, when holders are uneven, is not modelled)
                    X = D * (x + (1 - x) * max(0, 1 - n*C/D))  separate
                    targets with node caches (each node's share D/n stays
                    with it; what exceeds its cache C comes again), first
                    epoch: X = D
  R = D - (bytes served from node caches).

Samples/s = D / (s * t). Rates take suffixes K, M, G, T (powers of 1000;
Ki, Mi, Gi, Ti powers of 1024); --network also takes bit rates (8mbit,
10gbit)."""


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


def predict(learners, dataset, sample, storage, network, train, preprocess, cache=0.0,
            ranks_per_node=8, targets=0, exchange=0.0, first_epoch=False):
    """{mode: {"secs", "net_bytes", "samples_per_s", "bound"}} for the three
    modes at `learners` ranks (steady state unless first_epoch)."""
    D, s, N = float(dataset), float(sample), int(learners)
    n = math.ceil(N / ranks_per_node)
    M = targets or n
    L = 1.0 / M if not targets else 0.0
    t_c = D / (s * N * min(train, preprocess))
    h = 0.0 if first_epoch else min(1.0, cache / D) if D else 0.0
    out = {}
    for mode in ("plain", "caching", "locality"):
        if mode == "plain":
            X, cached = D * (1 - L), 0.0
        elif mode == "caching":
            X, cached = D * (1 - L) * (1 - h), D * (1 - L) * h
        elif not targets:
            X, cached = D * exchange * (1 - L), 0.0
        elif first_epoch:
            X, cached = D, 0.0
        else:
            X = D * (exchange + (1 - exchange) * max(0.0, 1 - n * cache / D))
            cached = D - X
        t_s = (D - cached) / (M * storage)
        t_n = max(X / (n * network), X / (M * network)) if X else 0.0
        secs = max(t_c, t_s, t_n)
        bound = "compute" if secs == t_c else "storage" if secs == t_s else "network"
        out[mode] = {"secs": secs, "net_bytes": X, "samples_per_s": D / s / secs if secs else 0.0, "bound": bound}
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
    ap.add_argument("--dataset", required=True, help="dataset bytes (D)")
    ap.add_argument("--sample", required=True, help="bytes per sample (s)")
    ap.add_argument("--storage", required=True, help="storage read bytes/s per target (S)")
    ap.add_argument("--network", required=True, help="network bytes/s per node, each direction (B; or 10gbit)")
    ap.add_argument("--train", type=float, required=True, help="training samples/s per rank (T)")
    ap.add_argument("--preprocess", type=float, required=True, help="preprocessing samples/s per rank (P)")
    ap.add_argument("--cache", default="0", help="node cache bytes (C; default 0)")
    ap.add_argument("--ranks-per-node", type=int, default=8, help="k (default 8)")
    ap.add_argument("--targets", type=int, default=0, help="storage targets M (default 0: one on every node)")
    ap.add_argument("--exchange", type=float, default=0.0, help="locality exchange fraction x (default 0)")
    ap.add_argument("--learners", default="1,2,4,8,16,32,64,128,256,512,1024",
                    help="comma-separated learner counts (default powers of 2 to 1024)")
    ap.add_argument("--first-epoch", action="store_true", help="the first epoch (caches empty)")
    ap.add_argument("--json", action="store_true", help="one JSON object per learner count")
    a = ap.parse_args(argv)
    try:
        kw = dict(dataset=parse_size(a.dataset), sample=parse_size(a.sample), storage=parse_size(a.storage),
                  network=parse_size(a.network), train=a.train, preprocess=a.preprocess, cache=parse_size(a.cache),
                  ranks_per_node=a.ranks_per_node, targets=a.targets, exchange=a.exchange,
                  first_epoch=a.first_epoch)
        learners = [int(x) for x in a.learners.split(",") if x]
        if (min(learners) < 1 or kw["sample"] <= 0 or kw["storage"] <= 0 or kw["network"] <= 0 or a.train <= 0
                or a.preprocess <= 0 or a.ranks_per_node < 1 or not 0 <= a.exchange <= 1 or a.targets < 0):
            raise ValueError("learners, sample, storage, network, train, preprocess and ranks-per-node must be "
                             "positive; exchange within 0..1")
    except ValueError as e:
        print("aisd.model: %s" % e, file=sys.stderr)
        return 2
    if not a.json:
        print("%8s %6s | %-28s | %-28s | %-28s" % ("LEARNERS", "NODES", "plain: epoch s, net, bound",
                                                   "caching: epoch s, net, bound", "locality: epoch s, net, bound"))
    for N in learners:
        p = predict(N, **kw)
        if a.json:
            print(json.dumps({"learners": N, "nodes": math.ceil(N / a.ranks_per_node), **p}))
            continue
        cells = ["%9.2f %9s %-8s" % (p[m]["secs"], _fmt_bytes(p[m]["net_bytes"]), p[m]["bound"])
                 for m in ("plain", "caching", "locality")]
        print("%8d %6d | %s | %s | %s" % (N, math.ceil(N / a.ranks_per_node), *cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
