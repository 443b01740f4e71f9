"""dataset.py - PyTorch datasets over WebDataset shards in aisd.

ShardDataset streams tar shards (from an aisd bucket, from any HTTP server,
or from local files) and yields one dict per sample. BatchDataset fetches
each batch of samples with one GetBatch request.

What ShardDataset guarantees, per epoch:
- Every shard is read by exactly one (rank, DataLoader worker): the shard
  list, sorted and shuffled with (seed, epoch), is dealt round-robin over
  world_size x num_workers slots. So every sample is yielded exactly once
  across all ranks and workers.
- A shard is read once, as one stream: tar members are parsed as the bytes
  arrive (aisd.tar: one read per member), only the current sample is held
  (plus the optional shuffle buffer).
- A read that fails (a target killed or restarted, a connection reset, a
  short body) resumes where the last complete sample ended: a .tar shard
  is asked again with a Range from that byte; a compressed one (.tgz,
  .tar.gz) from its start, skipping the samples already yielded. No sample
  is yielded twice or lost. Opening a shard is retried by the Client for
  `retry_for` seconds; a stream that keeps failing without progress raises
  after `max_resumes` attempts.
  A resumed read asks for the version it started with (If-Match with the
  first answer's ETag): a shard overwritten meanwhile raises HTTPError 412
  rather than mixing two versions.
- A .zip shard cannot be parsed as a stream (its directory is at its end):
  it is downloaded once (resumed by Range after an error, like a tar) into
  a temporary file that stays in memory up to 64 MiB, then read with
  zipfile (CRCs checked) in the order its members were written.

Samples follow WebDataset's rules: a member's key is its path up to the
first dot of its base name, its extension the rest (lower-cased); adjacent
members with the same key form one sample: {"__key__": key, "__shard__":
shard, ext: bytes, ...}. Members whose base name has no dot, and
non-regular members, are skipped.
"""
import http.client
import io
import random
import shutil
import tempfile
import time
import urllib.parse

from .client import Client
from .wds import index_shards, iter_samples, iter_zip_samples, load_index, wds_split

try:
    import torch.distributed as _dist
    from torch.utils.data import IterableDataset, get_worker_info
except ImportError:  # the client works without torch; the datasets need it
    _dist = None
    IterableDataset = object

    def get_worker_info():
        return None

__all__ = ["ShardDataset", "BatchDataset", "fetch_batch", "wds_split", "iter_samples",
           "index_shards", "load_index", "SHARD_SUFFIXES"]

SHARD_SUFFIXES = (".tar", ".tgz", ".tar.gz", ".zip")
_ZIP_SPOOL = 64 << 20  # a .zip shard downloaded beyond this goes to a temporary file
_READBUF = 256 * 1024


def _rank_world(rank, world_size):
    if rank is not None and world_size is not None:
        return rank, world_size
    if _dist is not None and _dist.is_available() and _dist.is_initialized():
        return _dist.get_rank(), _dist.get_world_size()
    return 0, 1


def _slot():
    """(this process's slot, slots) over ranks x DataLoader workers."""
    wi = get_worker_info()
    return (wi.id, wi.num_workers) if wi is not None else (0, 1)


def _shuffle_buffer(it, size, rng):
    if size <= 1:
        yield from it
        return
    buf = []
    for x in it:
        if len(buf) < size:
            buf.append(x)
            continue
        i = rng.randrange(size)
        buf[i], x = x, buf[i]
        yield x
    rng.shuffle(buf)
    yield from buf


class _Base(IterableDataset):
    def __init__(self, seed, shuffle, rank, world_size):
        super().__init__()
        self.seed, self.shuffle = seed, shuffle
        self.rank, self.world_size = rank, world_size
        self.epoch = 0

    def __getstate__(self):
        # Pickled for a spawned DataLoader worker: carry the parent's rank
        # and world size (torch.distributed is not initialized there).
        st = dict(self.__dict__)
        if st["rank"] is None or st["world_size"] is None:
            st["rank"], st["world_size"] = _rank_world(self.rank, self.world_size)
        return st

    def set_epoch(self, epoch):
        """Selects the epoch whose order the next iteration uses (call it on
        every rank before iterating, as with DistributedSampler)."""
        self.epoch = int(epoch)

    def _mine(self, items):
        """The items this (rank, worker) takes this epoch, in order."""
        items = list(items)
        if self.shuffle:
            random.Random("%s/%d" % (self.seed, self.epoch)).shuffle(items)
        rank, world = _rank_world(self.rank, self.world_size)
        wid, nw = _slot()
        return items[rank * nw + wid::world * nw]

    def _rng(self, what):
        rank, _ = _rank_world(self.rank, self.world_size)
        wid, _ = _slot()
        return random.Random("%s/%s/%d/%d/%d" % (what, self.seed, self.epoch, rank, wid))


class ShardDataset(_Base):
    """An IterableDataset of WebDataset samples.

    Sources (one of):
      ShardDataset("http://gw:8080", bucket="data", prefix="train/")
      ShardDataset(client, bucket="data", shards=["train/shard-000000.tar", ...])
      ShardDataset(urls=["http://host/x.tar", "/local/y.tar", "file:///z.tar"])
    A prefix lists the bucket once (per process) and keeps names ending in
    .tar, .tgz, .tar.gz or .zip.

    seed, shuffle: shard order per epoch (set_epoch); shuffle_buffer: a
    sample shuffle buffer of that many samples per worker (0: none);
    rank, world_size: the distributed split (default: torch.distributed's
    when initialized, else one rank); transform: called on each sample in
    the worker; timeout, retry_for, local: the Client's (when given an
    endpoint; local=True reads shards of targets on this host as open
    descriptors over their unix socket); max_resumes: failed reads in a row, without a sample between them,
    before a shard's error is raised.
    """

    def __init__(self, client=None, bucket=None, prefix=None, shards=None, urls=None, *,
                 seed=0, shuffle=True, shuffle_buffer=0, rank=None, world_size=None,
                 transform=None, timeout=60.0, retry_for=60.0, local=True, max_resumes=20):
        super().__init__(seed, shuffle, rank, world_size)
        if urls is not None:
            if client is not None or bucket is not None or prefix is not None or shards is not None:
                raise ValueError("urls= is a source of its own: no client, bucket, prefix or shards")
            self._shards = list(urls)
        else:
            if client is None or bucket is None or (prefix is None) == (shards is None):
                raise ValueError("give client (or endpoint) and bucket, and one of prefix or shards; or urls")
            self._shards = list(shards) if shards is not None else None
        if isinstance(client, str):
            client = Client(client, timeout=timeout, retry_for=retry_for, local=local)
        self.client, self.bucket, self.prefix, self.urls = client, bucket, prefix, urls is not None
        self.shuffle_buffer, self.transform = shuffle_buffer, transform
        self.max_resumes = max_resumes
        self.timeout, self.retry_for = timeout, retry_for
        self.resumes = 0  # reads resumed after an error, in this process

    def shards(self):
        """The shard list (listed from the bucket the first time)."""
        if self._shards is None:
            self._shards = [n for n in self.client.list_names(self.bucket, self.prefix)
                            if n.endswith(SHARD_SUFFIXES)]
        return self._shards

    def __iter__(self):
        it = (s for shard in self._mine(sorted(self.shards())) for s in self.samples(shard))
        if self.transform is not None:
            it = map(self.transform, it)
        return _shuffle_buffer(it, self.shuffle_buffer, self._rng("buffer"))

    def samples(self, shard):
        """Every sample of one shard, resuming after read errors."""
        if shard.endswith(".zip"):
            yield from self._zip_samples(shard)
            return
        compressed = not shard.endswith(".tar")
        pos, done, fails, etag = 0, 0, 0, None
        while True:
            start = 0 if compressed else pos
            f = None
            try:
                f, tag = self._open(shard, start, etag)
                etag = etag or tag
                skip = done if compressed else 0
                for sample, end in iter_samples(f, shard, start, compressed):
                    if skip:
                        skip -= 1
                        continue
                    pos, done, fails = end, done + 1, 0
                    yield sample
                return
            except (OSError, http.client.HTTPException) as e:
                fails += 1
                if fails > self.max_resumes:
                    raise OSError("%s: reading failed %d times in a row at byte %d: %s"
                                  % (shard, fails, pos, e)) from e
                self.resumes += 1
                time.sleep(min(0.05 * 2 ** fails, 2.0))
            finally:
                if f is not None:
                    f.close()

    def _zip_samples(self, shard):
        """The samples of a .zip shard: downloaded whole first (resumed by
        Range after a failed read), then read with zipfile."""
        if not self.urls or shard.startswith(("http://", "https://")):
            spool = tempfile.SpooledTemporaryFile(max_size=_ZIP_SPOOL)
            etag, fails = None, 0
            try:
                while True:
                    f = None
                    try:
                        f, tag = self._open(shard, spool.tell(), etag)
                        etag = etag or tag
                        while True:
                            b = f.read(_READBUF)
                            if not b:
                                break
                            spool.write(b)
                            fails = 0
                        break
                    except (OSError, http.client.HTTPException) as e:
                        fails += 1
                        if fails > self.max_resumes:
                            raise OSError("%s: reading failed %d times in a row at byte %d: %s"
                                          % (shard, fails, spool.tell(), e)) from e
                        self.resumes += 1
                        time.sleep(min(0.05 * 2 ** fails, 2.0))
                    finally:
                        if f is not None:
                            f.close()
                spool.seek(0)
                yield from iter_zip_samples(spool, shard)
            finally:
                spool.close()
            return
        path = urllib.parse.urlsplit(shard).path if shard.startswith("file://") else shard
        with open(path, "rb") as f:
            yield from iter_zip_samples(f, shard)

    def _open(self, shard, start, etag):
        """(file object at byte start of the shard, its ETag or None). A
        resumed read (etag set) must find the same version (If-Match), else
        HTTPError 412 ends the iteration. Reads go through a 256 KiB buffer:
        the tar reader asks for each 512-byte header on its own."""
        if not self.urls:
            f = self.client.open(self.bucket, shard, start=start, if_match=etag)
        elif shard.startswith(("http://", "https://")):
            if self.client is None:
                self.client = Client(shard, timeout=self.timeout, retry_for=self.retry_for)
            f = self.client.open_url(shard, start=start, if_match=etag)
        else:
            path = urllib.parse.urlsplit(shard).path if shard.startswith("file://") else shard
            f = open(path, "rb", buffering=_READBUF)
            f.seek(start)
            return f, None
        try:
            if start and f.status != 206:  # the server sent it whole: skip ahead
                left = start
                while left:
                    b = f.read(min(left, 1 << 20))
                    if not b:
                        raise ConnectionError("%s: shorter than %d bytes" % (shard, start))
                    left -= len(b)
            elif start:
                cr = f.headers.get("content-range", "")
                if not cr.startswith("bytes %d-" % start):
                    raise ConnectionError("%s: asked bytes from %d, got Content-Range %r" % (shard, start, cr))
        except BaseException:
            f.close()
            raise
        return io.BufferedReader(f, _READBUF), f.headers.get("etag")


def fetch_batch(client, bucket, items, coer=False):
    """Fetches samples with one GetBatch request. items: plain object names
    (sample {"__key__": name, "data": bytes}) or (shard, key, exts) tuples
    (sample {"__key__": key, "__shard__": shard, ext: bytes, ...}, each
    member read as the archpath key.ext of the shard). With coer, a missing
    object or member is None instead of an error. Returns the samples in
    the order of items."""
    entries, slots = [], []
    samples = []
    for it in items:
        if isinstance(it, str):
            samples.append({"__key__": it})
            entries.append({"objname": it})
            slots.append((len(samples) - 1, "data"))
        else:
            shard, key, exts = it
            samples.append({"__key__": key, "__shard__": shard})
            for ext in exts:
                entries.append({"objname": shard, "archpath": key + "." + ext})
                slots.append((len(samples) - 1, ext))
    n = 0
    for (name, data), (i, ext) in zip(client.get_batch(bucket, entries, coer=coer), slots):
        samples[i][ext] = None if name.startswith("__404__/") else data
        n += 1
    if n != len(entries):
        raise OSError("GetBatch returned %d of %d entries" % (n, len(entries)))
    return samples


class BatchDataset(_Base):
    """An IterableDataset of batches (lists of samples), each fetched with
    one GetBatch request. index: a list of plain object names or of
    (shard, key, exts) tuples (load_index reads one written by the shard
    tool). Per epoch the index is shuffled with (seed, epoch), cut into
    batches of batch_size (the last one shorter unless drop_last), and the
    batches are dealt over ranks x workers like ShardDataset's shards. Use
    with DataLoader(ds, batch_size=None)."""

    def __init__(self, client, bucket, index, batch_size, *, seed=0, shuffle=True, drop_last=False,
                 rank=None, world_size=None, coer=False, transform=None, timeout=60.0, retry_for=60.0):
        super().__init__(seed, shuffle, rank, world_size)
        if isinstance(client, str):
            client = Client(client, timeout=timeout, retry_for=retry_for)
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.client, self.bucket, self.index = client, bucket, list(index)
        self.batch_size, self.drop_last, self.coer, self.transform = batch_size, drop_last, coer, transform

    def __len__(self):
        n, b = len(self.index), self.batch_size
        return n // b if self.drop_last else (n + b - 1) // b

    def __iter__(self):
        order = list(range(len(self.index)))
        if self.shuffle:
            random.Random("%s/%d" % (self.seed, self.epoch)).shuffle(order)
        b = self.batch_size
        batches = [order[i:i + b] for i in range(0, len(order), b)]
        if self.drop_last and batches and len(batches[-1]) < b:
            batches.pop()
        saved, self.shuffle = self.shuffle, False  # the order is already drawn
        try:
            mine = self._mine(batches)
        finally:
            self.shuffle = saved
        for batch in mine:
            samples = fetch_batch(self.client, self.bucket, [self.index[i] for i in batch], self.coer)
            if self.transform is not None:
                samples = [self.transform(s) for s in samples]
            yield samples
