"""cache.py - a node-local shard cache: one directory shared by every rank
and DataLoader worker on a node (processes; no daemon, no shared memory).

What it guarantees:
1. Keyed by version: an entry is (bucket, name, version, ETag) as the
   object's server answered them. A reader asks with the version it was
   just told (a HEAD), so a replaced object is a miss, never the old bytes;
   committing a version removes the other versions of that name.
2. Checked on use: an entry is served only if its file has the size and
   the CRC-32 recorded when it was filled (computed over the bytes as they
   arrived); a damaged entry is removed and counts as a miss.
3. Crash-safe: a fill writes DIR/tmp/<pid>.<random>, fsyncs it, renames
   it to DIR/data/<key>, then writes <key>.meta the same way; an entry
   exists only once its .meta does, and the .meta names the data's size
   and CRC. A crash leaves at most a temp file (removed by the next
   eviction pass once its process is gone) or data without .meta (never
   served; removed by the same pass).
4. Bounded: after each fill, under an flock on DIR/lock, entries are
   removed until the total is at most max_bytes, in the order of the
   policy: "lru", least recently used first (the .meta's mtime, touched on
   every hit); "belady", the entry whose next use is farthest first (never
   used again before all others), as the caller's next_use(bucket, name)
   says: the plan knows every future read (Belady's rule, optimal for
   entries of one size). An entry larger than max_bytes is not kept. A
   reader holding an evicted file keeps reading it (unlinked files stay
   readable while open).
5. Prefetch (Prefetcher): a background thread fills the cache with the
   shards a caller names, in order of next use, within a budget of bytes/s
   (averaged from the thread's start), and only what the policy would keep
   (keeps()): a prefetched entry never evicts one needed sooner. One
   prefetcher per cache directory at a time (an flock on DIR/prefetch).
Processes filling the same entry at once each write their own temp file;
the last rename wins with the same bytes.

simulate() replays an access sequence through a cache of either policy (or
the brute-force optimum, for tests) without files: the unit tests and
aisd.model use it.
"""
import fcntl
import hashlib
import heapq
import itertools
import json
import math
import os
import threading
import time
import zlib

__all__ = ["NodeCache", "Fill", "Prefetcher", "simulate", "POLICIES"]

POLICIES = ("lru", "belady")

_CHUNK = 1 << 20
_TMP_MAX_AGE = 3600  # a temp file older than this is removed even if its pid lives (pid reuse)


def _name_key(bucket, name):
    return hashlib.sha256(("%s\0%s" % (bucket, name)).encode()).hexdigest()[:32]


def _ver_key(version, etag):
    return hashlib.sha256(("%s\0%s" % (version or "", etag or "")).encode()).hexdigest()[:16]


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


class NodeCache:
    """The cache in directory path, holding at most max_bytes of data.
    policy: "lru" or "belady"; belady needs next_use(bucket, name), a
    number that orders future reads (smaller: sooner; math.inf: never)."""

    def __init__(self, path, max_bytes, policy="lru", next_use=None):
        if max_bytes is None or max_bytes <= 0:
            raise ValueError("cache_bytes must be a positive number of bytes")
        if policy not in POLICIES:
            raise ValueError("cache policy must be one of %s" % ", ".join(POLICIES))
        if policy == "belady" and next_use is None:
            raise ValueError("the belady cache policy needs the future order (locality=True)")
        self.policy, self.next_use = policy, next_use
        self.path, self.max_bytes = os.path.abspath(path), int(max_bytes)
        self.data, self.tmp = os.path.join(self.path, "data"), os.path.join(self.path, "tmp")
        os.makedirs(self.data, exist_ok=True)
        os.makedirs(self.tmp, exist_ok=True)

    def _paths(self, bucket, name, version, etag):
        k = "%s-%s" % (_name_key(bucket, name), _ver_key(version, etag))
        d = os.path.join(self.data, k)
        return d, d + ".meta"

    def open(self, bucket, name, version, etag):
        """The cached bytes of that version as an open binary file, or None.
        A hit is checked (size, CRC-32 of the whole file) and touched (LRU)."""
        data, meta = self._paths(bucket, name, version, etag)
        try:
            with open(meta) as f:
                m = json.load(f)
            fd = open(data, "rb")
        except (OSError, ValueError):
            return None
        try:
            st = os.fstat(fd.fileno())
            crc = 0
            if st.st_size == m.get("size"):
                while True:
                    b = fd.read(_CHUNK)
                    if not b:
                        break
                    crc = zlib.crc32(b, crc)
            if st.st_size != m.get("size") or crc != m.get("crc32") or (m.get("bucket"), m.get("name")) != (bucket, name):
                fd.close()
                self._drop(data, meta)
                return None
            fd.seek(0)
            try:
                os.utime(meta)
            except OSError:
                pass
            return fd
        except BaseException:
            fd.close()
            raise

    def fill(self, bucket, name, version, etag, size):
        """A Fill to write the object's bytes into; None when it cannot fit."""
        if size is not None and size > self.max_bytes:
            return None
        return Fill(self, bucket, name, version, etag, size)

    def _drop(self, data, meta):
        for p in (meta, data):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass

    def has(self, bucket, name):
        """Whether some version of the name has a complete entry (no check
        of its bytes: a prefetcher's test, not a read)."""
        prefix = _name_key(bucket, name) + "-"
        return any(fn.startswith(prefix) and fn.endswith(".meta") for fn in os.listdir(self.data))

    def _rank(self, ents):
        """ents in eviction order (first evicted first)."""
        if self.policy == "lru":
            return sorted(ents)
        keyed = []
        for e in ents:
            try:
                with open(e[3]) as f:
                    m = json.load(f)
                nu = self.next_use(m.get("bucket"), m.get("name"))
            except (OSError, ValueError):
                nu = math.inf
            keyed.append((-nu, e[0], e))
        keyed.sort(key=lambda k: k[:2])
        return [k[2] for k in keyed]

    def keeps(self, bucket, name, size):
        """Whether an entry of this name and size, filled now, would stay
        (belady: the entries whose next use is later than its own make room;
        lru: always, it is the most recent)."""
        if size > self.max_bytes:
            return False
        ents = self.entries()
        over = sum(e[1] for e in ents) + size - self.max_bytes
        if over <= 0 or self.policy == "lru":
            return True
        mine = self.next_use(bucket, name)
        if mine == math.inf:
            return False
        later = 0
        for e in self._rank(ents):
            try:
                with open(e[3]) as f:
                    m = json.load(f)
            except (OSError, ValueError):
                later += e[1]
                continue
            if self.next_use(m.get("bucket"), m.get("name")) <= mine:
                break
            later += e[1]
        return later >= over

    def entries(self):
        """[(last use, size, data path, meta path)] of complete entries."""
        out = []
        for fn in os.listdir(self.data):
            if not fn.endswith(".meta"):
                continue
            meta = os.path.join(self.data, fn)
            data = meta[:-5]
            try:
                st, sd = os.stat(meta), os.stat(data)
            except OSError:
                continue
            out.append((st.st_mtime, sd.st_size, data, meta))
        return out

    def used(self):
        return sum(e[1] for e in self.entries())

    def evict(self):
        """Removes crash leftovers, then entries in the policy's order until
        the total is at most max_bytes. Returns the bytes removed."""
        freed = 0
        with open(os.path.join(self.path, "lock"), "a") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            now = time.time()
            for fn in os.listdir(self.tmp):
                p = os.path.join(self.tmp, fn)
                try:
                    pid = int(fn.split(".")[0])
                    old = now - os.stat(p).st_mtime > _TMP_MAX_AGE
                except (ValueError, OSError):
                    pid, old = 0, True
                if old or not _pid_alive(pid):
                    try:
                        os.unlink(p)
                    except FileNotFoundError:
                        pass
            metas = {fn[:-5] for fn in os.listdir(self.data) if fn.endswith(".meta")}
            for fn in os.listdir(self.data):  # data whose .meta never came (crash between the renames)
                p = os.path.join(self.data, fn)
                if not fn.endswith(".meta") and fn not in metas:
                    try:
                        if now - os.stat(p).st_mtime > 60:
                            os.unlink(p)
                    except OSError:
                        pass
            ents = self.entries()
            total = sum(e[1] for e in ents)
            for _, size, data, meta in self._rank(ents) if total > self.max_bytes else ():
                if total <= self.max_bytes:
                    break
                self._drop(data, meta)
                total -= size
                freed += size
        return freed


class Fill:
    """An entry being written: write() the object's bytes in order, then
    commit() (or abort()). Nothing is visible before commit returns."""

    def __init__(self, cache, bucket, name, version, etag, size):
        self.cache, self.bucket, self.name = cache, bucket, name
        self.version, self.etag, self.size = version, etag, size
        self.tmp = os.path.join(cache.tmp, "%d.%s" % (os.getpid(), os.urandom(6).hex()))
        self.f = open(self.tmp, "wb")
        self.crc, self.n = 0, 0

    def write(self, b):
        self.f.write(b)
        self.crc = zlib.crc32(b, self.crc)
        self.n += len(b)

    def abort(self):
        if self.f is not None:
            self.f.close()
            self.f = None
            try:
                os.unlink(self.tmp)
            except FileNotFoundError:
                pass

    def commit(self):
        """Publishes the entry if its length is the expected size; returns
        whether it did. Other versions of the name are removed."""
        if self.f is None:
            return False
        if self.size is not None and self.n != self.size:
            self.abort()
            return False
        c = self.cache
        data, meta = c._paths(self.bucket, self.name, self.version, self.etag)
        try:
            self.f.flush()
            os.fsync(self.f.fileno())
            self.f.close()
            self.f = None
            os.rename(self.tmp, data)
            tmpm = self.tmp + ".meta"
            with open(tmpm, "w") as f:
                json.dump({"bucket": self.bucket, "name": self.name, "version": self.version, "etag": self.etag,
                           "size": self.n, "crc32": self.crc}, f)
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmpm, meta)
            dfd = os.open(c.data, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            self.abort()
            return False
        prefix = os.path.basename(data).split("-")[0] + "-"
        for fn in os.listdir(c.data):  # older versions of the name
            if fn.startswith(prefix) and not os.path.join(c.data, fn).startswith(data):
                try:
                    os.unlink(os.path.join(c.data, fn))
                except FileNotFoundError:
                    pass
        c.evict()
        return True


class Prefetcher:
    """Fills cache in the background with items [(bucket, name, size)] or
    [(bucket, name, size, at)], given in order of next use, at most budget
    bytes/s (averaged since start); an item whose late(at) is true when
    its turn comes is skipped (its reader is there first). open_item(bucket, name) returns (stream, version, etag,
    length): a readable the thread reads to its end and closes.
    on_bytes(n) is called for every chunk read (the caller's counters).
    An item already cached is skipped; one the policy would not keep now
    is waited for (the cache's entries are used and their next use moves
    on) until stop(). One prefetcher per cache directory: start() returns
    False when another holds DIR/prefetch."""

    def __init__(self, cache, items, open_item, budget, on_bytes=None, poll=0.2, late=None):
        if budget is None or budget <= 0:
            raise ValueError("prefetch budget must be a positive number of bytes/s")
        self.cache, self.items, self.open_item = cache, list(items), open_item
        self.budget, self.on_bytes, self.poll, self.late = float(budget), on_bytes, poll, late
        self.stopped = threading.Event()
        self.fetched, self.bytes, self.errors = 0, 0, 0
        self._lock_f, self._thread = None, None

    def start(self):
        f = open(os.path.join(self.cache.path, "prefetch"), "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            return False
        self._lock_f = f
        self._thread = threading.Thread(target=self._run, name="aisd-prefetch", daemon=True)
        self._thread.start()
        return True

    def stop(self, timeout=5.0):
        """Stops the thread (a fill in progress is abandoned) and releases
        the directory."""
        self.stopped.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._lock_f is not None:
            self._lock_f.close()
            self._lock_f = None

    def _run(self):
        t0 = time.monotonic()
        for it in self.items:
            bucket, name, size = it[:3]
            at = it[3] if len(it) > 3 else None
            if self.stopped.is_set():
                return
            if self.cache.has(bucket, name) or size > self.cache.max_bytes:
                continue
            while not self.cache.keeps(bucket, name, size):
                if self.stopped.wait(self.poll) or (self.late is not None and self.late(at)):
                    break
            if self.stopped.is_set() or (self.late is not None and self.late(at)) or self.cache.has(bucket, name):
                continue
            fill, f = None, None
            try:
                f, version, etag, length = self.open_item(bucket, name)
                fill = self.cache.fill(bucket, name, version, etag, length)
                if fill is None:
                    continue
                while not self.stopped.is_set():
                    b = f.read(1 << 16)
                    if not b:
                        break
                    fill.write(b)
                    self.bytes += len(b)
                    if self.on_bytes is not None:
                        self.on_bytes(len(b))
                    ahead = self.bytes / self.budget - (time.monotonic() - t0)
                    if ahead > 0 and self.stopped.wait(ahead):
                        break
                if self.stopped.is_set():
                    fill.abort()
                elif fill.commit():
                    self.fetched += 1
                fill = None
            except Exception:  # a failed prefetch is a later miss, not an error of the epoch
                self.errors += 1
            finally:
                if fill is not None:
                    fill.abort()
                if f is not None:
                    try:
                        f.close()
                    except Exception:
                        pass


def _next_uses(seq):
    nxt, last = [math.inf] * len(seq), {}
    for i in range(len(seq) - 1, -1, -1):
        nxt[i] = last.get(seq[i], math.inf)
        last[seq[i]] = i
    return nxt


def simulate(seq, sizes, capacity, policy, prefetch=0.0, since=0):
    """Replays the access sequence seq (names) through a cache of capacity
    bytes (sizes[name]); returns {"hits", "misses", "hit_bytes",
    "miss_bytes", "prefetch_bytes", "missed"}. policy: "lru", "belady"
    (evict the farthest next use; a miss whose next use is the farthest is
    not kept), or "opt" (the brute-force optimum by search over every
    choice of what to keep; tiny cases only, sizes equal). prefetch
    (belady only): bytes that may be fetched ahead after each access,
    soonest next use first, when the policy keeps them. since: the counts
    cover only the accesses from that index on (the cache is warmed by
    those before), and "missed" lists the names of those that missed.
    O(len(seq) log len(seq))."""
    if policy not in POLICIES + ("opt",):
        raise ValueError("unknown policy %r" % policy)
    if policy == "opt":
        return _simulate_opt(seq, sizes, capacity)
    nxt = _next_uses(seq)
    out = dict(hits=0, misses=0, hit_bytes=0, miss_bytes=0, prefetch_bytes=0, missed=[])
    cache, used = {}, 0  # name -> its next use (belady) or last use (lru)
    heap, tick = [], itertools.count()  # belady: (-next use, tick, name), stale entries skipped

    def push(n, nu):
        cache[n] = nu
        if policy == "belady":
            heapq.heappush(heap, (-nu, next(tick), n))

    def farthest():
        while heap:
            nu, _, n = heap[0]
            if cache.get(n) == -nu:
                return n, -nu
            heapq.heappop(heap)
        return None, None

    def evict_one():
        nonlocal used
        if policy == "lru":
            v = next(iter(cache))
        else:
            v, _ = farthest()
            heapq.heappop(heap)
        used -= sizes[v]
        del cache[v]

    credit, ptr = 0.0, 0
    for i, n in enumerate(seq):
        sz = sizes[n]
        counted = i >= since
        hit = n in cache
        if counted:
            out["hits" if hit else "misses"] += 1
            out["hit_bytes" if hit else "miss_bytes"] += sz
            if not hit:
                out["missed"].append(n)
        if hit:
            if policy == "lru":
                del cache[n]
                cache[n] = i
            else:
                push(n, nxt[i])
        elif sz <= capacity:
            push(n, nxt[i] if policy == "belady" else i)
            used += sz
        while used > capacity:
            evict_one()
        if policy != "belady" or not prefetch:
            continue
        credit = min(credit + prefetch, float(capacity))
        ptr = max(ptr, i + 1)
        while ptr < len(seq):
            m = seq[ptr]
            if m in cache:  # already there: its next use is ptr or later
                ptr += 1
                continue
            if sizes[m] > credit or sizes[m] > capacity:
                break
            while capacity - used < sizes[m]:
                v, nu = farthest()
                if v is None or nu <= ptr:
                    break
                evict_one()
            if capacity - used < sizes[m]:
                break
            push(m, ptr)
            used += sizes[m]
            credit -= sizes[m]
            if counted:
                out["prefetch_bytes"] += sizes[m]
            ptr += 1
    return out


def _simulate_opt(seq, sizes, capacity):
    """The most hits any policy (with bypass) gets: a search over states."""
    k = int(capacity // max(sizes.values())) if sizes else 0
    memo = {}

    def best(i, state):
        if i == len(seq):
            return 0
        key = (i, state)
        if key in memo:
            return memo[key]
        n = seq[i]
        if n in state:
            r = 1 + best(i + 1, state)
        else:
            r = best(i + 1, state)  # not kept
            pool = state | {n}
            if len(pool) <= k:
                r = max(r, best(i + 1, frozenset(pool)))
            else:
                for drop in state:
                    r = max(r, best(i + 1, frozenset(pool - {drop})))
        memo[key] = r
        return r

    hits = best(0, frozenset())
    return dict(hits=hits, misses=len(seq) - hits, hit_bytes=None, miss_bytes=None, prefetch_bytes=0)
