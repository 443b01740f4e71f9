"""plan.py - the epoch plan: which rank reads which samples of which shard.

A pure, deterministic function of (seed, epoch, shards with their sizes,
sample counts and the hosts holding them, the host of every rank,
exchange). Every rank computes the same plan from the same listing (the
dataset makes sure they all have one listing: aisd.dataset).

Reading the plan (the accessor other modules rely on):
  plan.units[r]  rank r's reads this epoch, in reading order: Unit tuples
                 (shard, lo, hi, local) = samples lo..hi-1 of the shard
                 (sample i = the i-th sample in the shard's tar order);
                 local: the rank's host holds a copy (or it is the shard's
                 cache home, below).
  make_plan(..., epoch + 1).units[r] is the next epoch's; plan.ranks[r]
  lists the shard names of units[r] (each once, first-read order).
  DataLoader workers take the units round-robin: worker w of K reads
  units[r][w::K] (consumed_per_worker maps a rank's consumed count onto
  its workers).

What a plan guarantees (tests/unit/test_plan.py checks each, optimality
against a brute force on small cases):
1. Exactly once: every sample of every shard is in exactly one rank's
   units, every epoch, except the `dropped` ones (below).
2. Equal work: every rank reads exactly q = N // world samples (N: all
   samples), the DDP requirement (max/mean = 1). The N mod world samples
   left over are dropped for that epoch (plan.dropped; different ones each
   epoch), never padded with repeats.
3. Optimal locality: with exchange 0 the local bytes are the most any
   assignment with equal sample counts can reach (a shard's bytes count
   pro rata to its samples). Shards no rank's host holds get a cache home
   (a host chosen for balance, the same every epoch), counted as local
   there: a node cache holds them from the second epoch on.
4. Exchange x: every epoch exactly round(x * q) samples of each rank's
   home samples go to another rank (a contiguous run of its home sequence
   in that epoch's order, starting at a point drawn by (seed, epoch)); so
   x means x at sample granularity. exchange 0 = strict locality; 1 =
   every sample away from its home.
5. Randomness: each rank's units are in a fresh order per (seed, epoch,
   rank).
locality=False (plain): the shards shuffled by (seed, epoch) and dealt as
contiguous runs of q samples, no placement considered.

The mechanism (homes, the same every epoch):
- The problem is a transportation problem: shards supply samples, hosts
  take q x (their ranks) samples each plus, in all, the N mod world extra
  (at most one per rank); a sample read on a host holding its shard earns
  the shard's bytes per sample. The weight depends only on the shard, so
  the sets of local amounts form a polymatroid and the greedy is exact
  (Edmonds): shards by bytes per sample, largest first, each takes as much
  local capacity as augmenting paths can free (moving samples of shards
  already placed to another host holding them), then the rest fills the
  hosts' remaining room. Samples of one shard on one host are one
  contiguous range; a host's ranges are cut into its ranks' runs of q, so
  few shards are split.
Cost: about O(n log n) with copies=1; with copies > 1 an augmenting path
search is a walk over the hosts (a host set with no way out is not
searched again).
"""
import hashlib
import json
import math
import random
from collections import deque, namedtuple

__all__ = ["Shard", "Unit", "Plan", "make_plan", "resume_plan", "consumed_per_worker", "default_hosts",
           "spearman", "order_positions", "list_shards", "fingerprint"]

# hosts: the hosts holding a copy (any iterable); samples: the shard's sample count (1: plan whole shards)
Shard = namedtuple("Shard", "name size hosts samples", defaults=(1,))
Unit = namedtuple("Unit", "shard lo hi local")


class Plan:
    """One epoch's plan (see the module comment). units[r], ranks[r];
    samples[r]: rank r's sample count; bytes[r], local_bytes[r] (a
    shard's bytes pro rata to its samples); moved[r]: samples exchanged
    in; dropped: the Units left out this epoch."""

    def __init__(self, epoch, units, sizes, moved, dropped=()):
        self.epoch, self.units, self.moved, self.dropped = epoch, units, moved, list(dropped)
        self.ranks = []
        for lst in units:
            seen = {}
            for u in lst:
                seen.setdefault(u.shard, None)
            self.ranks.append(list(seen))
        self.samples = [sum(u.hi - u.lo for u in lst) for lst in units]
        self.bytes = [sum(_ubytes(sizes, u) for u in lst) for lst in units]
        self.local_bytes = [sum(_ubytes(sizes, u) for u in lst if u.local) for lst in units]

    def local_fraction(self):
        total = sum(self.bytes)
        return sum(self.local_bytes) / total if total else 1.0

    def rank_of(self):
        """{shard: the rank reading most of its samples}."""
        best = {}
        for r, lst in enumerate(self.units):
            for u in lst:
                if u.hi - u.lo > best.get(u.shard, (0, -1))[0]:
                    best[u.shard] = (u.hi - u.lo, r)
        return {n: r for n, (_, r) in best.items()}


def _ubytes(sizes, u):
    size, n = sizes[u.shard]
    return size * (u.hi - u.lo) / n if n else 0


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


def fingerprint(shards):
    """A hex digest of a listing (names, sizes, sample counts, holders):
    two ranks with the same fingerprint plan alike."""
    canon = sorted([s.name, s.size, sorted(s.hosts), s.samples] for s in shards)
    return hashlib.sha256(json.dumps(canon, separators=(",", ":")).encode()).hexdigest()


def _check(shards, world):
    shards = [s if isinstance(s, Shard) else Shard(*s) for s in shards]
    if world < 1:
        raise ValueError("no ranks")
    sizes = {}
    for s in shards:
        if s.name in sizes:
            raise ValueError("shard %r listed twice" % s.name)
        if s.samples is None:
            raise ValueError("shard %r: sample count unknown (its members were not listed)" % s.name)
        if s.size < 0 or s.samples < 0:
            raise ValueError("shard %r: negative size or sample count" % s.name)
        sizes[s.name] = (s.size, s.samples)
    return shards, sizes


class _Flow:
    """The local-capacity network of _assign: hosts -> T (base room),
    hosts -> X (one extra per rank) -> T (the extras in all); f[s][h]:
    samples of shard s placed on its holder h."""

    def __init__(self, base, ext, extras):
        self.base, self.ext, self.extras = base, ext, extras
        self.fb = {h: 0 for h in base}
        self.fe = {h: 0 for h in base}
        self.fx = 0
        self.f = {}      # shard -> {host: samples}
        self.on = {h: {} for h in base}  # host -> {shard with another holder: samples there}
        self.adj = {h: {} for h in base}  # a -> {b: samples on a of shards b holds too}
        self.local = {}  # shard -> its holders among the hosts
        self.cap = sum(base.values()) + min(sum(ext.values()), extras)
        self.placed = 0

    def room(self):
        """Local capacity left in all (every placed sample takes one)."""
        return self.cap - self.placed

    def _path(self, starts):
        """(start host, steps of a path from it to T), or (None, the hosts
        reached: full, with no way out)."""
        prev = {h: None for h in starts}
        q = deque(starts)
        xseen = False
        while q:
            a = q.popleft()
            if a == "X":
                if self.fx < self.extras:
                    return self._trace(prev, "X", ("XT",))
                for b in self.base:
                    if self.fe[b] > 0 and b not in prev:
                        prev[b] = ("X", ("XH", b))
                        q.append(b)
                continue
            if self.fb[a] < self.base[a]:
                return self._trace(prev, a, ("HT", a))
            if self.fe[a] < self.ext[a] and not xseen:
                xseen = True
                prev["X"] = (a, ("HX", a))
                q.append("X")
            for b in self.adj[a]:
                if b not in prev:
                    prev[b] = (a, ("HH", a, b))
                    q.append(b)
        return None, {h for h in prev if h != "X"}  # nothing reaches T from these

    def _trace(self, prev, node, last):
        steps = [last]
        while prev[node] is not None:
            node, step = prev[node]
            steps.append(step)
        steps.reverse()
        return node, steps

    def _cap(self, step):
        k = step[0]
        if k == "HT":
            return self.base[step[1]] - self.fb[step[1]]
        if k == "HX":
            return self.ext[step[1]] - self.fe[step[1]]
        if k == "XT":
            return self.extras - self.fx
        if k == "XH":
            return self.fe[step[1]]
        return self.adj[step[1]][step[2]]  # HH

    def _add(self, s, h, n):
        fs = self.f.setdefault(s, {})
        fs[h] = fs.get(h, 0) + n
        if not fs[h]:
            del fs[h]
        if len(self.local[s]) > 1:
            if fs.get(h):
                self.on[h][s] = fs[h]
            else:
                self.on[h].pop(s, None)
            adj = self.adj[h]
            for b in self.local[s]:
                if b != h:
                    adj[b] = adj.get(b, 0) + n
                    if not adj[b]:
                        del adj[b]

    def _move(self, a, b, n):
        """Moves n samples of shards held on a and b from a to b."""
        for t in sorted(self.on[a]):
            if not n:
                return
            if b in self.local[t]:
                k = min(n, self.on[a][t])
                self._add(t, a, -k)
                self._add(t, b, k)
                n -= k

    def place(self, s, holders, want):
        """Places up to want samples of s on its holders, moving others'
        samples along augmenting paths; returns (placed, dead hosts)."""
        self.local[s] = holders
        placed = 0
        for h in sorted(holders):  # room on a holder: no search
            n = min(want - placed, self.base[h] - self.fb[h])
            if n > 0:
                self._add(s, h, n)
                self.fb[h] += n
                placed += n
        while placed < want:
            start, steps = self._path(sorted(holders))
            if start is None:
                self.placed += placed
                return placed, steps
            n = min([want - placed] + [self._cap(st) for st in steps])
            self._add(s, start, n)
            for st in steps:
                k = st[0]
                if k == "HT":
                    self.fb[st[1]] += n
                elif k == "HX":
                    self.fe[st[1]] += n
                elif k == "XT":
                    self.fx += n
                elif k == "XH":
                    self.fe[st[1]] -= n
                else:
                    self._move(st[1], st[2], n)
            placed += n
        self.placed += placed
        return placed, None


def _assign(items, rank_hosts, seed, locality=True):
    """Pieces per rank: ([(name, lo, hi, local), ...] per rank, the ranks
    given q + 1). items: Shard tuples; every rank gets q = N // world
    samples, N mod world ranks one more; with locality the local bytes are
    the most possible (the module comment)."""
    world = len(rank_hosts)
    hosts = list(dict.fromkeys(rank_hosts))
    nr = {h: rank_hosts.count(h) for h in hosts}
    total = sum(s.samples for s in items)
    q, extras = divmod(total, world)
    base = {h: q * nr[h] for h in hosts}
    ext = {h: (nr[h] if extras else 0) for h in hosts}
    fl = _Flow(base, ext, extras)
    hs = set(hosts)
    order = sorted(items, key=lambda s: (-(s.size / s.samples if s.samples else 0), _h(seed, "order", s.name)))
    dead = set()
    if locality:
        for s in order:
            holders = frozenset(s.hosts) & hs
            if not holders or not s.samples:
                continue
            if holders <= dead:
                fl.local[s.name] = holders
                continue
            if not fl.room():
                break
            _, d = fl.place(s.name, holders, s.samples)
            if d:
                dead |= d
    # the rest fills the remaining room: base first, then the extras (hosts in a seeded order)
    hord = sorted(hosts, key=lambda h: _h(seed, "host", h))
    room = {h: base[h] - fl.fb[h] for h in hosts}
    left = extras - fl.fx
    for h in hord:
        e = min(ext[h] - fl.fe[h], left)
        room[h] += e
        fl.fe[h] += e
        left -= e
    on_host = {h: [] for h in hosts}  # host -> [(name, samples, local)]
    rest = []
    for s in sorted(items, key=lambda s: _h(seed, "rest", s.name)):
        placed = fl.f.get(s.name, {})
        for h in sorted(placed):
            on_host[h].append((s.name, placed[h], True))
        n = s.samples - sum(placed.values())
        if n:
            rest.append((s, n))
    hi = 0
    for s, n in rest:
        home_only = locality and not (frozenset(s.hosts) & hs)  # a cache home: local there from the 2nd epoch
        while n:
            while room[hord[hi]] == 0:
                hi += 1
            h = hord[hi]
            k = min(n, room[h])
            on_host[h].append((s.name, k, home_only))
            room[h] -= k
            n -= k
    # sample ranges: each shard's samples in host order; then each host's ranges cut into its ranks' runs
    nxt = {}
    pieces = {h: [] for h in hosts}
    for h in hord:
        for name, k, loc in sorted(on_host[h], key=lambda x: _h(seed, "piece", x[0])):
            lo = nxt.get(name, 0)
            nxt[name] = lo + k
            pieces[h].append((name, lo, lo + k, loc))
    out = [[] for _ in range(world)]
    plus = set()
    for h in hosts:
        rs = [r for r in range(world) if rank_hosts[r] == h]
        big = set(sorted(rs, key=lambda r: _h(seed, "plus", r))[:fl.fe[h]])
        plus |= big
        queue = deque(pieces[h])
        for r in rs:
            need = q + (1 if r in big else 0)
            while need:
                name, lo, hi_, loc = queue.popleft()
                k = min(need, hi_ - lo)
                out[r].append((name, lo, lo + k, loc))
                if lo + k < hi_:
                    queue.appendleft((name, lo + k, hi_, loc))
                need -= k
    return out, plus


def _merge(pieces):
    """Adjacent ranges of one shard (same locality) as one."""
    out = []
    for p in sorted(pieces):
        if out and out[-1][0] == p[0] and out[-1][2] == p[1] and out[-1][3] == p[3]:
            out[-1] = (p[0], out[-1][1], p[2], p[3])
        else:
            out.append(tuple(p))
    return out


def _cut(pieces, start, k):
    """(the run of k samples from sample position start of the pieces'
    sequence, wrapping around; the rest), both as piece lists."""
    total = sum(p[2] - p[1] for p in pieces)
    k = min(k, total)
    spans = [(start, min(start + k, total))]
    if start + k > total:
        spans.append((0, start + k - total))
    run, rest, pos = [], [], 0
    for name, lo, hi, loc in pieces:
        a = pos
        pos += hi - lo
        cuts = sorted({a, pos} | {x for sp in spans for x in sp if a < x < pos})
        for x, y in zip(cuts, cuts[1:]):
            inside = any(s0 <= x and y <= s1 for s0, s1 in spans)
            (run if inside else rest).append((name, lo + x - a, lo + y - a, loc))
    return _merge(run), _merge(rest)


_HOMES = {}  # (listing fingerprint, rank hosts, seed) -> _assign's answer


def make_plan(shards, rank_hosts, seed=0, epoch=0, exchange=0.0, locality=True):
    """The plan of one epoch. shards: Shard tuples (or (name, size, hosts[,
    samples])); rank_hosts: the host of each rank (index = rank); exchange:
    0..1; locality=False: plain dealing. Raises ValueError on duplicate
    names, no ranks or a bad exchange."""
    world = len(rank_hosts)
    shards, sizes = _check(shards, world)
    if not 0.0 <= exchange <= 1.0:
        raise ValueError("exchange must be within 0..1")
    rank_hosts = list(rank_hosts)
    hosts_of = {s.name: frozenset(s.hosts) for s in shards}
    total = sum(s.samples for s in shards)
    q = total // world
    if not locality:
        order = sorted(shards, key=lambda s: s.name)
        random.Random("%s/%d" % (seed, epoch)).shuffle(order)
        seq = [(s.name, 0, s.samples, False) for s in order if s.samples]
        units, pos = [], 0
        flat = deque(seq)
        for r in range(world):
            need, mine = q, []
            while need:
                name, lo, hi, loc = flat.popleft()
                k = min(need, hi - lo)
                mine.append(Unit(name, lo, lo + k, False))
                if lo + k < hi:
                    flat.appendleft((name, lo + k, hi, loc))
                need -= k
            units.append(mine)
        return Plan(epoch, units, sizes, [0] * world, [Unit(*p) for p in flat])
    key = (fingerprint(shards), tuple(rank_hosts), str(seed))
    if key not in _HOMES:  # the same every epoch: computed once per process
        if len(_HOMES) >= 4:
            _HOMES.pop(next(iter(_HOMES)))
        _HOMES[key] = _assign(shards, rank_hosts, seed)
    homes, plus = _HOMES[key]
    dropped = []
    seqs = []
    for r in range(world):
        rng = random.Random("%s/home/%d/%d" % (seed, epoch, r))
        ps = sorted(homes[r])
        rng.shuffle(ps)
        if r in plus:  # one sample over q: this epoch's drop, drawn afresh
            d, ps = _cut(ps, rng.randrange(q + 1), 1)
            dropped += d
            rng.shuffle(ps)
        seqs.append(ps)
    moved = [0] * world
    k = round(exchange * q) if world > 1 else 0
    if k:
        rng = random.Random("%s/exchange/%d" % (seed, epoch))
        shift = rng.randrange(1, world)
        outs, keeps = [], []
        for r in range(world):
            run, rest = _cut(seqs[r], rng.randrange(q), k)
            outs.append(run)
            keeps.append(rest)
        for r in range(world):
            came = outs[(r - shift) % world]
            moved[r] = sum(p[2] - p[1] for p in came)
            here, there = rank_hosts[r], rank_hosts[(r - shift) % world]
            came = [(n, lo, hi, here in hosts_of[n] or (loc and here == there)) for n, lo, hi, loc in came]
            seqs[r] = _merge(keeps[r] + came)
    units = []
    for r in range(world):
        ps = _merge(seqs[r])
        random.Random("%s/order/%d/%d" % (seed, epoch, r)).shuffle(ps)
        units.append([Unit(*p) for p in ps])
    return Plan(epoch, units, sizes, moved, [Unit(*p) for p in _merge(dropped)])


def consumed_per_worker(units, consumed, workers=0, batch_size=None):
    """How many samples of each worker's stream a rank's training loop has
    taken after `consumed` samples from a torch DataLoader (in order, the
    default) with num_workers=workers and batch_size (None: samples one by
    one): worker w reads units[w::K] (K = max(workers, 1)) and the loader
    takes whole batches from the workers in turn, skipping those at their
    end. Raises ValueError when consumed is not at a batch boundary or
    beyond the rank's samples."""
    k = max(int(workers), 1)
    b = int(batch_size or 1)
    n = [sum(u.hi - u.lo for u in units[w::k]) for w in range(k)]
    if consumed < 0 or consumed > sum(n):
        raise ValueError("position %d: the rank reads %d samples this epoch" % (consumed, sum(n)))
    c = [0] * k
    left = consumed
    while left:
        for w in range(k):
            if not left:
                break
            take = min(b, n[w] - c[w])
            if take == 0:
                continue
            if left < take:
                raise ValueError("position %d is not at a batch boundary (batch_size %d, %d workers)"
                                 % (consumed, b, workers))
            c[w] += take
            left -= take
    return c


def _skip(units, n):
    """The units after their first n samples."""
    out = []
    for u in units:
        k = min(n, u.hi - u.lo)
        n -= k
        if u.lo + k < u.hi:
            out.append(Unit(u.shard, u.lo + k, u.hi, u.local))
    return out


def remaining(units, consumed, workers=0, batch_size=None):
    """A rank's units not yet consumed (see consumed_per_worker), in its
    workers' reading order."""
    k = max(int(workers), 1)
    c = consumed_per_worker(units, consumed, workers, batch_size)
    return [u for w in range(k) for u in _skip(units[w::k], c[w])]


def resume_plan(shards, old_hosts, new_hosts, positions, seed=0, epoch=0, exchange=0.0, locality=True,
                workers=0, batch_size=None, old=None):
    """The rest of an epoch after a restart: positions[r] samples consumed
    by old rank r (see consumed_per_worker; workers and batch_size as the
    old ranks' DataLoader had them). With the same ranks on the same hosts
    each rank continues with its own rest; else the rest (every sample of
    the epoch not consumed and not dropped) is dealt over new_hosts by the
    same optimal assignment, rank counts within one of each other.
    old: the plan being continued (default: make_plan's for these
    arguments; a resumed epoch's plan when a restart is restarted).
    Returns a Plan whose units hold only what is left."""
    if old is None:
        old = make_plan(shards, old_hosts, seed, epoch, exchange, locality)
    if len(positions) != len(old_hosts):
        raise ValueError("%d positions for %d ranks" % (len(positions), len(old_hosts)))
    rest = [remaining(old.units[r], positions[r], workers, batch_size) for r in range(len(old_hosts))]
    shards, sizes = _check(shards, len(new_hosts))
    if list(new_hosts) == list(old_hosts):
        return Plan(epoch, rest, sizes, [0] * len(new_hosts), old.dropped)
    info = {s.name: s for s in shards}
    items, where = [], {}
    for lst in rest:
        for u in lst:
            s = info[u.shard]
            key = "%s\0%d" % (u.shard, u.lo)
            items.append(Shard(key, s.size * (u.hi - u.lo) / s.samples if s.samples else 0, s.hosts, u.hi - u.lo))
            where[key] = u
    out, _ = _assign(items, list(new_hosts), "%s/resume/%d" % (seed, epoch), locality)
    units = []
    for r, ps in enumerate(out):
        lst = [Unit(where[k].shard, where[k].lo + lo, where[k].lo + hi, loc and locality) for k, lo, hi, loc in ps]
        random.Random("%s/resume/%d/%d" % (seed, epoch, r)).shuffle(lst)
        units.append(lst)
    return Plan(epoch, units, sizes, [0] * len(new_hosts), old.dropped)


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


def list_shards(client, bucket, prefix="", suffixes=(".tar", ".tgz", ".tar.gz", ".zip"), samples=True, sigs=None):
    """The shards under prefix as (Shard list, urls): one listing with
    props size,version,checksum,location (and with samples, each shard's
    members: its sample count by WebDataset's rule; None for a shard whose
    members the cluster cannot list: a remote one not cached yet; without,
    the Shard's default); urls[name][host] is the public URL of a target on
    that host holding a copy. sigs, a dict, gets name -> (name, size,
    version, checksum) for each shard: the same signature, the same bytes
    and so the same members. Raises HTTPError/OSError as the listing does."""
    from .wds import wds_split
    shards, urls, count, last = [], {}, {}, {}
    cur = None
    for e in client.list(bucket, prefix, pagesize=10000, props="name,size,version,checksum,location",
                         archive=samples):
        name = e["name"]
        if cur is not None and name.startswith(cur + "/") and int(e.get("flags", 0)) & 128:
            key, _ = wds_split(name[len(cur) + 1:])
            if key is not None and key != last.get(cur) and count[cur] is not None:
                count[cur] += 1
                last[cur] = key
            continue
        cur = None
        if not name.endswith(tuple(suffixes)):
            continue
        cur = name
        count[name] = 0 if int(e.get("flags", 0)) & 512 else None  # members not listed: a remote shard not cached
        by_host = {}
        for loc in e.get("location") or []:
            if loc.get("host") and loc.get("url"):
                by_host.setdefault(loc["host"], loc["url"])
        size = int(e.get("size", 0))
        shards.append(Shard(name, size, frozenset(by_host)))
        urls[name] = by_host
        if sigs is not None:
            sigs[name] = (name, size, str(e.get("version", "")), str(e.get("checksum", "")))
    if samples:
        shards = [s._replace(samples=count[s.name]) for s in shards]
    return shards, urls


_USAGE = """python3 -m aisd.plan BUCKET[/PREFIX] --world N --hosts H1,H2,... [options]

Prints the locality-aware epoch plan that ShardDataset(locality=True)
computes on every rank: per rank its host, shards, samples (the same for
every rank), bytes, the fraction read on its own host (from a target
there, or from its node cache), and the samples exchanged in; then per
epoch the balance (largest rank's bytes over the mean), the local
fraction, the exchange (samples away from their home), the samples
dropped (N mod ranks) and the order correlation with the previous epoch
(Spearman of each shard's place in the reading order). --shards lists
each rank's units: a shard and its sample range [lo, hi).

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
        unknown = [s.name for s in shards if s.samples is None]
        if unknown:
            print("aisd.plan: members of %s not listed (remote, not cached yet?): counted as 1 sample each"
                  % ", ".join(unknown[:3]), file=sys.stderr)
            shards = [s._replace(samples=1) if s.samples is None else s for s in shards]
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
                    "dropped": sum(u.hi - u.lo for u in p.dropped),
                    "balance": round(max(p.bytes) / mean, 4) if mean else 1.0,
                    "local_fraction": round(p.local_fraction(), 4), "exchanged": sum(p.moved),
                    "spearman_prev": None if rho is None else round(rho, 4)}
            if a.json:
                summ["ranks"] = [{"rank": r, "host": hosts[r], "shards": p.ranks[r], "samples": p.samples[r],
                                  "units": [list(u) for u in p.units[r]], "bytes": p.bytes[r],
                                  "local_bytes": p.local_bytes[r], "exchanged_in": p.moved[r]}
                                 for r in range(a.world)]
                print(json.dumps(summ))
                continue
            print("epoch %d: %d shards, %d bytes; balance %.3f (max/mean); local %.1f%%; exchanged %d%s" % (
                ep, len(shards), sum(p.bytes), summ["balance"], 100 * p.local_fraction(), sum(p.moved),
                "" if rho is None else "; order vs previous epoch: Spearman %.3f" % rho))
            print("  %-5s %-20s %7s %8s %14s %7s %9s" % ("RANK", "HOST", "SHARDS", "SAMPLES", "BYTES", "LOCAL",
                                                         "EXCHANGED"))
            for r in range(a.world):
                b = p.bytes[r]
                print("  %-5d %-20s %7d %8d %14d %6.1f%% %9d" % (
                    r, hosts[r][:20], len(p.ranks[r]), p.samples[r], b, 100.0 * p.local_bytes[r] / b if b else 100.0,
                    p.moved[r]))
                if a.shards:
                    for u in p.units[r]:
                        print("        %s [%d, %d)%s" % (u.shard, u.lo, u.hi, "" if u.local else "  (remote)"))
    except (HTTPError, OSError, ValueError) as e:
        print("aisd.plan: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
