"""dataset.py - PyTorch datasets over WebDataset shards in aisd.

ShardDataset streams tar shards (from an aisd bucket, from any HTTP server,
or from local files) and yields one dict per sample. BatchDataset fetches
each batch of samples with one GetBatch request.

What ShardDataset guarantees, per epoch:
- One listing for all ranks: taken once per epoch (in __init__ and
  set_epoch, before DataLoader workers start) while the cluster map stays
  at one version and until two in a row agree, with each shard's size, holders and sample count; rank
  0's is broadcast with torch.distributed; without it several ranks need a
  job name: rank 0 alone stores the listing in the bucket
  (JOB_PREFIX/JOB/epoch-N.json, only when absent; a version above 1 after
  its write means it replaced one it did not see, and it raises) and the
  other ranks wait for it. Every rank checks the listing's fingerprint and
  refuses to start on a mismatch.
- Every sample is yielded by exactly one (rank, DataLoader worker), every
  rank the same number (aisd.plan: N // world, the rest dropped for that
  epoch): a rank's plan units (shard, sample range) are dealt round-robin
  over its workers. A shard whose sample count is not the listing's raises
  OSError instead of yielding a sample twice or skipping one. (urls=
  sources: whole shards dealt round-robin over world_size x num_workers.)
- A checkpointable position: state_dict(consumed, num_workers,
  batch_size) / load_state_dict(state) continue an epoch after a restart,
  on as many or on other numbers of ranks, every sample still once.
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
- etl=NAME (etl_args=A): each shard is read as transformer NAME answers
  GET ?etl= on the target that holds it (a per-member worker, e.g.
  aisd.etl.serve_members, keeps the member names, so the samples are the
  listing's, each yielded exactly once); a resumed read asks the whole
  transformed shard again (no Range) and skips the samples already yielded.
- A .zip shard cannot be parsed as a stream (its directory is at its end):
  it is downloaded once (resumed by Range after an error, like a tar) into
  a temporary file that stays in memory up to 64 MiB, then read with
  zipfile (CRCs checked) in the order its members were written.

Locality (locality=True): each epoch's plan places the samples by where
their shards live (aisd.plan: the most local bytes any equal split allows;
`exchange` of each rank's samples moved to other ranks every epoch). A
shard on this host is read from the target here (over its unix socket as a
descriptor when it offers one); if that target does not answer, through
the gateway like any other.

Node cache (cache_dir, cache_bytes; see aisd.cache): every shard read over
the network is kept in a directory shared by the node's processes, keyed
by (bucket, name, version, ETag); before a read the object's current
version is asked (HEAD) and only that version is served from the cache,
after its size and CRC-32 are checked. Eviction (cache_policy): "belady"
(the default with locality) removes the entry whose next read on this
node is farthest: every process computes this epoch's and the next one's
plan, so it knows the order in which the node's ranks will read every
shard (a read at place i of a rank's list of n counts at epoch + i/n);
"lru" (the default without locality) removes the least recently used.
prefetch (bytes/s, with locality and a cache): during epoch E, a thread of
one rank per node (the first to call set_epoch) fetches the shards the
node's ranks will read over the network, the rest of epoch E and epoch
E+1, soonest first, ahead of the readers (a read due within two places of
the rank's progress is left to its reader), within that many bytes/s,
each only if the policy keeps it (it never evicts a shard needed sooner);
it stops at the next set_epoch.

Counters: stats(epoch) gives the bytes this rank's processes read in that
epoch from a target on their host ("local": the answering target's URL
host is the rank's host, or an address of this machine when hosts are not
given), from the node cache ("cached") and from targets elsewhere
("remote"), and the bytes the prefetcher fetched ahead ("prefetched",
counted in the epoch they were fetched). cache_stats(epoch) adds the hit
rate: cached / (cached + remote), the share of the bytes not on a target
here that came from the node cache. Only shards read from a bucket are
counted.

Samples follow WebDataset's rules: a member's key is its path up to the
first dot of its base name, its extension the rest (lower-cased); adjacent
members with the same key form one sample: {"__key__": key, "__shard__":
shard, ext: bytes, ...}. Members whose base name has no dot, and
non-regular members, are skipped.
"""
import gzip
import hashlib
import http.client
import io
import json
import multiprocessing
import bisect
import math
import random
import socket
import shutil
import tempfile
import time
import urllib.parse

from .cache import NodeCache, Prefetcher
from .client import Client, HTTPError
from .plan import Shard, fingerprint, list_shards, make_plan, resume_plan
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
_KINDS = ("local", "cached", "remote", "prefetched")
_EPOCH_SLOTS = 64  # epochs whose counters are kept (a ring)
_DRAIN_MAX = 1 << 20  # a stream closed this close to its end is read out to complete its cache entry
JOB_PREFIX = ".aisd/jobs/"  # a job's listings: BUCKET/.aisd/jobs/JOB/epoch-NNNNNN.json.gz


def _job_ok(job):
    return 0 < len(job) <= 128 and job[0] != "." and all(c.isalnum() or c in "._-" for c in job) and job.isascii()


def _dist_up():
    return _dist is not None and _dist.is_available() and _dist.is_initialized()


def _rank_world(rank, world_size):
    if rank is not None and world_size is not None:
        return rank, world_size
    if _dist_up():
        return _dist.get_rank(), _dist.get_world_size()
    return 0, 1


def _slot():
    """(this process's slot, slots) over ranks x DataLoader workers."""
    wi = get_worker_info()
    return (wi.id, wi.num_workers) if wi is not None else (0, 1)


def _resume_key(st):
    """The parts of a load_state_dict state that its plan depends on (not
    the rank that saved it: every old rank was at the same position)."""
    if st is None:
        return None
    return {"epoch": st["epoch"], "position": st["position"], "hosts": st["hosts"], "workers": st["workers"],
            "batch_size": st["batch_size"], "resumed": _resume_key(st.get("resumed"))}


def _settings_key(settings):
    return hashlib.sha256(json.dumps(settings, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _settings_diff(a, b, who_a, who_b):
    """'field: A on who_a, B on who_b; ...' for the plan settings that
    differ between a and b."""
    def show(v):
        v = v if isinstance(v, str) else json.dumps(v, sort_keys=True)
        return v if len(v) <= 120 else v[:117] + "..."
    out = ["%s: %s on %s, %s on %s" % (k, show(a.get(k)), who_a, show(b.get(k)), who_b)
           for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return "; ".join(out) or "the same"


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
    A prefix lists the bucket once per epoch (for all ranks, see job) and
    keeps names ending in .tar, .tgz, .tar.gz or .zip.

    seed, shuffle: shard order per epoch (set_epoch); shuffle_buffer: a
    sample shuffle buffer of that many samples per worker (0: none);
    rank, world_size: the distributed split (default: torch.distributed's
    when initialized, else one rank); transform: called on each sample in
    the worker; timeout, retry_for, local: the Client's (when given an
    endpoint, or several gateways as a list or comma-separated; local=True reads shards of targets on this host as open
    descriptors over their unix socket); max_resumes: failed reads in a row, without a sample between them,
    before a shard's error is raised.

    locality=True deals samples by the locality-aware plan (aisd.plan): each
    rank reads what the targets on its own host hold, the same number of
    samples per rank; exchange (0..1): the fraction of each rank's samples
    moved to other ranks every epoch; hosts: the host of every rank (a list of world_size names,
    as the listing's "location" names them; default: gathered with
    torch.distributed when initialized, else this host alone for one rank;
    without locality it only tells the counters which host is local).
    cache_dir, cache_bytes: a node-local cache shared by the node's ranks
    and workers (aisd.cache), filled with what is read over the network;
    cache_policy: "belady" (evict by the plan's next use; the default with
    locality, which it needs) or "lru"; prefetch: bytes/s for fetching the
    shards this node will read over the network (this epoch's ahead of the
    readers, and the next epoch's) in the background (locality and a
    cache; default None: off).
    stats(epoch): bytes read "local", "cached", "remote", "prefetched" in
    that epoch; cache_stats(epoch): the same with the cache's hit rate.
    job: a name for this training run (A-Z a-z 0-9 . _ -); required for
    several ranks without torch.distributed: rank 0 stores each epoch's
    listing in the bucket and the other ranks read it (waiting up to
    job_wait seconds); a restart under the same name reuses them. The
    plan's settings (hosts, seed, exchange, locality, world_size, the
    checkpoint loaded) must be rank 0's: with torch.distributed they are
    all-gathered, with job rank 0 stores its own when it starts reading
    an epoch and the others wait for a match; a rank that differs raises
    RuntimeError naming what differs, before it reads a sample.
    state_dict(consumed, num_workers, batch_size), load_state_dict(state):
    the mid-epoch position, to checkpoint and resume.
    etl, etl_args: every .tar shard read through transformer etl on the
    target that holds it (GET ?etl=, the shard transformed whole, e.g. by a
    worker of aisd.etl.serve_members, which keeps member names, so the
    samples are the listing's); a bucket source only, without locality or
    cache_dir (they read the stored bytes); a resumed read asks the
    transformed shard again and skips what was yielded.
    """

    def __init__(self, client=None, bucket=None, prefix=None, shards=None, urls=None, *,
                 seed=0, shuffle=True, shuffle_buffer=0, rank=None, world_size=None,
                 transform=None, timeout=60.0, retry_for=60.0, local=True, max_resumes=20,
                 locality=False, exchange=0.0, hosts=None, cache_dir=None, cache_bytes=None,
                 cache_policy=None, prefetch=None, job=None, job_wait=120.0, etl=None, etl_args=None):
        super().__init__(seed, shuffle, rank, world_size)
        if etl is not None and (urls is not None or locality or cache_dir is not None):
            raise ValueError("etl reads through the cluster: a bucket source, without locality or cache_dir")
        if etl_args is not None and etl is None:
            raise ValueError("etl_args needs etl")
        self.etl, self.etl_args = etl, etl_args
        if urls is not None:
            if client is not None or bucket is not None or prefix is not None or shards is not None:
                raise ValueError("urls= is a source of its own: no client, bucket, prefix or shards")
            self._shards = list(urls)
        else:
            if client is None or bucket is None or (prefix is None) == (shards is None):
                raise ValueError("give client (or endpoint) and bucket, and one of prefix or shards; or urls")
            self._shards = list(shards) if shards is not None else None
            self._names = self._shards
        if isinstance(client, (str, list, tuple)):  # endpoint(s)
            client = Client(client, timeout=timeout, retry_for=retry_for, local=local)
        self.client, self.bucket, self.prefix, self.urls = client, bucket, prefix, urls is not None
        self.shuffle_buffer, self.transform = shuffle_buffer, transform
        self.max_resumes = max_resumes
        self.timeout, self.retry_for = timeout, retry_for
        self.resumes = 0  # reads resumed after an error, in this process
        self.locality, self.exchange = bool(locality), float(exchange)
        self._ctr = multiprocessing.Array("q", _EPOCH_SLOTS * len(_KINDS))  # shared with forked/spawned workers
        self._plan = None
        self._plans = {}  # epoch -> Plan: this epoch's and the next (the cache's future)
        self.cache = None
        self._future, self._pos_of, self._pos, self._prefetcher = None, None, None, None
        if cache_policy is None:
            cache_policy = "belady" if locality else "lru"
        self.cache_policy, self.prefetch = cache_policy, prefetch
        if cache_policy == "belady" and not locality and cache_dir is not None:
            raise ValueError("cache_policy='belady' needs locality=True (the plan's future order)")
        if prefetch is not None and (prefetch <= 0 or not locality or cache_dir is None):
            raise ValueError("prefetch is a positive rate in bytes/s and needs locality=True and cache_dir")
        if not 0.0 <= self.exchange <= 1.0:
            raise ValueError("exchange must be within 0..1")
        if (locality or cache_dir is not None) and self.urls:
            raise ValueError("locality and cache_dir need a bucket (client and bucket), not urls")
        if cache_dir is not None:
            self.cache = NodeCache(cache_dir, cache_bytes, cache_policy,
                                   self._next_use if cache_policy == "belady" else None)
        elif cache_bytes is not None:
            raise ValueError("cache_bytes needs cache_dir")
        self.job, self.job_wait = job, float(job_wait)
        self._listing = None  # the epoch's listing: the dict _list makes (same on every rank)
        self._counts = {}     # shard signature (list_shards) -> its sample count, from this process's listings
        self._last = None     # (map version, shards) of this process's last listing (_list)
        self._resume = None   # load_state_dict's state while its epoch is current
        self._agreed = None   # the digest of the plan settings every rank was found to share (_agree)
        self.hosts = None
        if self.urls:
            if job is not None:
                raise ValueError("job needs a bucket (client and bucket), not urls")
            if hosts is not None:
                self.hosts = self._check_hosts(hosts)
            return
        if job is not None and (not isinstance(job, str) or not _job_ok(job)):
            raise ValueError("job: 1..128 of A-Z a-z 0-9 . _ -, not starting with a dot: %r" % (job,))
        rank, world = _rank_world(self.rank, self.world_size)
        if world > 1 and job is None and not _dist_up():
            raise ValueError("%d ranks without torch.distributed: give job= (a name for this training run; its "
                             "ranks then read one listing per epoch from the bucket) or initialize "
                             "torch.distributed" % world)
        self._take_listing(self.epoch)
        if self.locality:
            self._setup_locality(hosts)
        elif hosts is not None:
            self.hosts = self._check_hosts(hosts)
        self._agree()

    def _check_hosts(self, hosts):
        _, world = _rank_world(self.rank, self.world_size)
        if len(hosts) != world:
            raise ValueError("hosts: %d names for %d ranks" % (len(hosts), world))
        return list(hosts)

    def _setup_locality(self, hosts):
        """The host of every rank: hosts=, else gathered with
        torch.distributed, else this host for one rank."""
        rank, world = _rank_world(self.rank, self.world_size)
        if hosts is None:
            me = _this_host(self.client, self._urls)
            if _dist_up():
                hosts = [None] * world
                _dist.all_gather_object(hosts, me)
            elif world == 1:
                hosts = [me]
            else:
                raise ValueError("locality with %d ranks and no torch.distributed: give hosts= (one per rank)" % world)
        self.hosts = self._check_hosts(hosts)

    # --- one listing per epoch for every rank -------------------------------------------------

    def _job_object(self, epoch):
        return "%s%s/epoch-%06d.json.gz" % (JOB_PREFIX, self.job, epoch)

    def _get_job_listing(self, name):
        """The stored listing NAME (gzip'd JSON: every rank but rank 0
        reads it, each from the one target that holds it), as a dict."""
        data = self.client.get(self.bucket, name)
        try:
            return json.loads(gzip.decompress(data))
        except (OSError, EOFError, ValueError) as e:
            raise ValueError("job %s: %s/%s is not a listing: %s" % (self.job, self.bucket, name, e)) from e

    def _list(self, epoch):
        """A listing of the shards with locations and sample counts, taken
        while the cluster map stays at one version (asked before and after)
        and the same shards (names, sizes, versions, checksums, holders)
        twice in a row: a fan-out listing during a rebalance can miss an
        object that moves between two targets just then (the new holder
        asked before its copy is in, the old one after it deleted its own).
        Each try lists the shards alone; only when one is new to this
        process does it list their members too (the sample counts: a shard
        of the same signature has the same members; a remote shard not
        cached, whose members no listing has, is counted by reading it
        once, and not listed again for them). The previous epoch's
        listing at the same map version counts as the first of the two, so
        an epoch over an unchanged bucket costs one listing of the shards
        alone. Up to 8 tries."""
        prefix = self.prefix if self.prefix is not None else _common_prefix(self._names)
        counts = self._counts
        nocount = set()  # signatures a member listing had no count for (remote shards not cached)
        version, prev = None, None
        for attempt in range(8):
            v1 = self._cmap_version()
            sigs = {}
            shards, urls = list_shards(self.client, self.bucket, prefix, samples=False, sigs=sigs)
            if any(sigs[x.name] not in counts and sigs[x.name] not in nocount for x in shards):
                sigs = {}
                shards, urls = list_shards(self.client, self.bucket, prefix, sigs=sigs)
                counts.update((sigs[x.name], x.samples) for x in shards if x.samples is not None)
                nocount.update(sigs[x.name] for x in shards if x.samples is None)
            version = self._cmap_version()
            state = sorted((sigs[x.name], sorted(x.hosts)) for x in shards)
            if v1 == version and (state == prev or (attempt == 0 and self._last == (version, state))):
                self._last = (version, state)  # seen twice: the next epoch's first try may match it
                break
            prev = state if v1 == version else None
            time.sleep(0.1 * attempt)
        shards = [x._replace(samples=counts.get(sigs[x.name])) for x in shards]
        if self.prefix is None:
            want = set(self._names)
            miss = want - {x.name for x in shards}
            if miss:
                raise ValueError("shards not in bucket %s: %s" % (self.bucket, ", ".join(sorted(miss)[:5])))
            shards = [x for x in shards if x.name in want]
        else:
            shards = [x for x in shards if x.name.endswith(SHARD_SUFFIXES) and not x.name.startswith(JOB_PREFIX)]
        # a shard whose members the cluster cannot list (remote, not cached): counted by reading it
        # once, and the count kept as a member listing's is
        for i, x in enumerate(shards):
            if x.samples is None:
                shards[i] = x._replace(samples=sum(1 for _ in self.samples(x.name)))
                counts[sigs[x.name]] = shards[i].samples
        return {"aisd_listing": 1, "job": self.job, "epoch": epoch, "bucket": self.bucket, "prefix": self.prefix,
                "names": None if self.prefix is not None else sorted(self._names), "cmap_version": version,
                "shards": [[x.name, x.size, sorted(x.hosts), x.samples] for x in shards],
                "urls": {x.name: urls[x.name] for x in shards}, "fingerprint": fingerprint(shards)}

    def _cmap_version(self):
        try:
            return self.client.cluster_map().get("version")
        except HTTPError as e:
            if e.status in (404, 409):  # a standalone target: no map
                return None
            raise

    def _job_listing(self, epoch, rank):
        """The job's listing of the epoch, from the bucket: rank 0 stores it
        when it is not there yet (the only writer, so no two listings can be
        stored) and checks that its write was the object's first version;
        the other ranks wait up to job_wait seconds for it."""
        name = self._job_object(epoch)
        deadline = time.monotonic() + self.job_wait
        delay = 0.05
        while True:
            try:
                return self._get_job_listing(name)
            except HTTPError as e:
                if e.status != 404:
                    raise
            if rank == 0:
                doc = self._list(epoch)
                self.client.put(self.bucket, name, gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), 6))
                version = self.client.head(self.bucket, name).version
                if version not in (None, "", "0", "1") and \
                        self._get_job_listing(name).get("fingerprint") != doc["fingerprint"]:
                    # (a later version with this listing: this rank's own PUT, retried)
                    raise RuntimeError("job %s, epoch %d: %s/%s was written again (version %s) while this rank "
                                       "found none: other ranks may hold another listing; start the job again under "
                                       "a new job name" % (self.job, epoch, self.bucket, name, version))
                return doc
            if time.monotonic() > deadline:
                raise TimeoutError("job %s, rank %d: no listing of epoch %d (%s/%s) from rank 0 within %.0f s"
                                   % (self.job, rank, epoch, self.bucket, name, self.job_wait))
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _take_listing(self, epoch):
        """Makes the epoch's listing this rank's: with job, the one stored
        in the bucket; else rank 0's (sent to every rank with
        torch.distributed) or this process's own (one rank). Every rank
        checks the listing's fingerprint (and with torch.distributed that
        all ranks hold the same) and raises on a mismatch."""
        if self._listing is not None and self._listing["epoch"] == epoch:
            return
        rank, world = _rank_world(self.rank, self.world_size)
        dist = _dist_up()
        doc = None
        if not dist or rank == 0:
            doc = self._job_listing(epoch, rank) if self.job is not None else self._list(epoch)
        if dist:
            box = [doc]
            _dist.broadcast_object_list(box, src=0)
            doc = box[0]
        shards = [Shard(n, size, frozenset(hs), k) for n, size, hs, k in doc.get("shards", [])]
        fp = fingerprint(shards)
        if doc.get("fingerprint") != fp or doc.get("epoch") != epoch:
            raise RuntimeError("job %s, epoch %d: the listing's fingerprint does not match its shards (epoch %s): "
                               "refusing to start" % (self.job, epoch, doc.get("epoch")))
        if doc.get("bucket") != self.bucket or doc.get("prefix") != self.prefix or (
                self.prefix is None and doc.get("names") != sorted(self._names)):
            raise ValueError("job %s: its listing is of bucket %s prefix %r, this dataset reads %s prefix %r (or "
                             "other shards): one job name per training run" % (
                                 self.job, doc.get("bucket"), doc.get("prefix"), self.bucket, self.prefix))
        if dist:
            fps = [None] * world
            _dist.all_gather_object(fps, fp)
            if len(set(fps)) != 1:
                raise RuntimeError("epoch %d: the ranks hold %d different listings: refusing to start"
                                   % (epoch, len(set(fps))))
        self._listing, self._loc_shards, self._urls = doc, shards, doc["urls"]
        self._plan, self._plans, self._future, self._pos_of = None, {}, None, None

    def _plan_settings(self):
        """What the current epoch's plan is made of besides the listing: the
        same on every rank of a job, or samples are read twice and never
        (a rank given other hosts, another seed, or not resumed like the
        others). Checked by _agree (torch.distributed) and _agree_job."""
        _, world = _rank_world(self.rank, self.world_size)
        st = self._resume if self._resume is not None and self._resume["epoch"] == self.epoch else None
        return {"epoch": self.epoch, "listing": self._listing["fingerprint"], "world": world,
                "hosts": self._rank_hosts(), "seed": str(self.seed), "exchange": self.exchange,
                "locality": self.locality, "resumed": _resume_key(st)}

    def _agree(self):
        """With torch.distributed: every rank's plan settings are rank 0's
        (all-gathered; a collective, so called where every rank calls:
        __init__, set_epoch, load_state_dict), else RuntimeError naming
        what differs."""
        self._agreed = None
        if self.urls or not _dist_up() or _dist.get_world_size() < 2:
            return
        mine = self._plan_settings()
        every = [None] * _dist.get_world_size()
        _dist.all_gather_object(every, mine)
        bad = [r for r, x in enumerate(every) if x != every[0]]
        if bad:
            raise RuntimeError("epoch %d: rank %d plans with other settings than rank 0 (%s): refusing to start, "
                               "or samples would be read twice and never" % (
                                   self.epoch, bad[0],
                                   _settings_diff(every[bad[0]], every[0], "rank %d" % bad[0], "rank 0")))
        self._agreed = _settings_key(mine)

    def _agree_job(self):
        """Without torch.distributed (job=): before a process reads the
        epoch, its plan settings must be rank 0's. Rank 0 stores its own
        as BUCKET/.aisd/jobs/JOB/epoch-N.plan-KEY.json (KEY: their
        digest) when it starts reading the epoch; the other ranks wait up
        to job_wait seconds for the object their own settings name, and
        on timeout raise RuntimeError naming what differs from the
        settings rank 0 stored for the epoch."""
        rank, world = _rank_world(self.rank, self.world_size)
        if self.urls or world < 2 or self.job is None:
            return
        mine = self._plan_settings()
        key = _settings_key(mine)
        if self._agreed == key:
            return
        pre = "%s%s/epoch-%06d.plan-" % (JOB_PREFIX, self.job, self.epoch)
        name = pre + key[:32] + ".json"
        if rank == 0:
            try:
                self.client.head(self.bucket, name)
            except HTTPError as e:
                if e.status != 404:
                    raise
                self.client.put(self.bucket, name, json.dumps(mine, sort_keys=True).encode())
            self._agreed = key
            return
        deadline = time.monotonic() + self.job_wait
        delay = 0.05
        while True:
            try:
                if json.loads(self.client.get(self.bucket, name)) == mine:
                    self._agreed = key
                    return
            except HTTPError as e:
                if e.status != 404:
                    raise
            except ValueError:
                pass
            if time.monotonic() > deadline:
                break
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
        theirs = []
        for e in self.client.list(self.bucket, prefix=pre):
            try:
                theirs.append(json.loads(self.client.get(self.bucket, e["name"])))
            except (HTTPError, ValueError):
                continue
        what = " | ".join(_settings_diff(mine, x, "rank %d" % rank, "rank 0") for x in theirs[:3]) or "none stored"
        raise RuntimeError("job %s, rank %d: rank 0 did not start epoch %d with this rank's plan settings within "
                           "%.0f s (%s): give every rank the same hosts, seed, exchange, locality, "
                           "world_size and checkpoint" % (self.job, rank, self.epoch, self.job_wait, what))

    def _rank_hosts(self):
        _, world = _rank_world(self.rank, self.world_size)
        return list(self.hosts) if self.hosts is not None else [""] * world

    def plan(self, epoch=None):
        """The epoch's plan (aisd.plan.Plan: plan.units[rank] is what each
        rank reads, in order), from the current epoch's listing (for a
        later epoch: the forecast as if the listing stayed the same). After
        load_state_dict, its epoch's plan holds what is left of it."""
        if self.urls:
            raise ValueError("no plan: the shards are urls, dealt whole (round-robin)")
        epoch = self.epoch if epoch is None else int(epoch)
        if self._plan is None or self._plan.epoch != epoch:
            st = self._resume if self._resume is not None and self._resume["epoch"] == epoch else None
            if st is not None:
                self._plan = self._resumed(st, self._rank_hosts())
            else:
                p = self._plans.get(epoch)
                if p is None:
                    p = make_plan(self._loc_shards, self._rank_hosts(), self.seed, epoch, self.exchange,
                                  self.locality)
                    self._plans = {e: x for e, x in self._plans.items() if epoch - 1 <= e <= epoch + 1}
                    self._plans[epoch] = p
                self._plan = p
        return self._plan

    def _resumed(self, st, hosts):
        """The rest of st's epoch over ranks on hosts (a chain of restarts
        is replayed from the first: each state's plan was over the hosts of
        the state after it)."""
        old = self._resumed(st["resumed"], st["hosts"]) if st.get("resumed") else None
        return resume_plan(self._loc_shards, st["hosts"], hosts, [st["position"]] * len(st["hosts"]),
                           self.seed, st["epoch"], self.exchange, self.locality, st["workers"], st["batch_size"],
                           old=old)

    def _node_future(self, epoch):
        """{shard: sorted times} of the reads this node's ranks make through
        the cache (shards no target on this host holds) in epoch and
        epoch + 1; a read at place i of a rank's list of n is at epoch +
        i/n. Cached per epoch."""
        if self._future is not None and self._future[0] == epoch:
            return self._future[1]
        rank, world = _rank_world(self.rank, self.world_size)
        me = self.hosts[rank]
        mine = [r for r in range(world) if self.hosts[r] == me]
        fut = {}
        for e in (epoch + 1, epoch):
            p = self.plan(e)
            for r in mine:
                lst = p.ranks[r]
                for i, n in enumerate(lst):
                    if me not in self._urls.get(n, {}):
                        fut.setdefault(n, []).append(e + i / len(lst))
        for v in fut.values():
            v.sort()
        self._future = (epoch, fut)
        return fut

    def _clock(self):
        """Where this process is in the plan's time: epoch + the place of
        the shard a worker reads (or, in the main process, the fraction of
        the rank's bytes read so far)."""
        if self._pos is not None and self._pos[0] == self.epoch:
            return self.epoch + self._pos[1]
        rank, _ = _rank_world(self.rank, self.world_size)
        st = self.stats()
        want = self.plan().bytes[rank]
        done = st["local"] + st["cached"] + st["remote"]
        return self.epoch + (min(1.0, done / want) if want else 1.0)

    def _next_use(self, bucket, name):
        """The cache's belady key: the time of this node's next read of the
        shard after now, math.inf when none is planned (this epoch or the
        next)."""
        if bucket != self.bucket:
            return math.inf
        times = self._node_future(self.epoch).get(name)
        if not times:
            return math.inf
        i = bisect.bisect_right(times, self._clock())
        return times[i] if i < len(times) else math.inf

    def _mark(self, shard):
        """Records the place of the shard this worker is about to read
        (the belady clock)."""
        if self._pos_of is None or self._pos_of[0] != self.epoch:
            rank, _ = _rank_world(self.rank, self.world_size)
            lst = self.plan().ranks[rank]
            self._pos_of = (self.epoch, {n: i / len(lst) for i, n in enumerate(lst)})
        pos = self._pos_of[1].get(shard)
        if pos is not None:
            self._pos = (self.epoch, pos)

    def _start_prefetch(self):
        """Stops the previous epoch's prefetcher; starts one for the next
        epoch's shards that this node reads over the network (if no other
        process of the node holds the cache's prefetch lock)."""
        if self._prefetcher is not None:
            self._prefetcher.stop()
            self._prefetcher = None
        if not self.prefetch or self.cache is None or not self.locality:
            return
        sizes = {s.name: s.size for s in self._loc_shards}
        items = sorted((t, n) for n, times in self._node_future(self.epoch).items() for t in times)
        items = [(self.bucket, n, sizes.get(n, 0), t) for t, n in items]
        rank, _ = _rank_world(self.rank, self.world_size)
        lead = 2.0 / max(1, len(self.plan().ranks[rank]))  # a read this close is its reader's own
        cl = Client.__new__(Client)
        cl.__setstate__(self.client.__getstate__())

        def open_item(bucket, name):
            f = cl.open(bucket, name)
            return f, f.headers.get("ais-version"), f.headers.get("etag"), f.length

        k = (self.epoch % _EPOCH_SLOTS) * len(_KINDS) + _KINDS.index("prefetched")

        def on_bytes(n):
            with self._ctr.get_lock():
                self._ctr[k] += n

        pf = Prefetcher(self.cache, items, open_item, self.prefetch, on_bytes,
                        late=lambda at: at < self._clock() + lead)
        if pf.start():
            self._prefetcher = pf

    def __getstate__(self):
        st = super().__getstate__()
        st["_prefetcher"] = None  # a thread of the process that started it
        return st

    def set_epoch(self, epoch):
        """Selects the epoch whose order the next iteration uses (call it on
        every rank before iterating, as with DistributedSampler): takes
        that epoch's listing (with job: rank 0 stores it, the others wait
        for it), zeroes its counters and starts the prefetch of the epoch
        after it."""
        if self._prefetcher is not None:
            self._prefetcher.stop()
            self._prefetcher = None
        super().set_epoch(epoch)
        if not self.urls:
            if self._resume is not None and self._resume["epoch"] != self.epoch:
                self._resume = None
                self._plan = None
            self._take_listing(self.epoch)
            self._agree()
        k = (self.epoch % _EPOCH_SLOTS) * len(_KINDS)
        with self._ctr.get_lock():
            for i in range(len(_KINDS)):
                self._ctr[k + i] = 0
        self._start_prefetch()

    def state_dict(self, consumed, num_workers=0, batch_size=None):
        """This rank's position in the current epoch, to checkpoint with the
        model: consumed = samples the training loop took from the
        DataLoader this epoch (steps x batch size; the same on every rank
        under DDP), num_workers and batch_size as the DataLoader has them
        (batch_size None: samples one by one). A JSON-able dict; give it to
        load_state_dict after a restart, on any number of ranks."""
        if self.urls:
            raise ValueError("state_dict needs a bucket (client and bucket), not urls")
        p = self.plan()
        rank, world = _rank_world(self.rank, self.world_size)
        from .plan import consumed_per_worker
        consumed_per_worker(p.units[rank], int(consumed), num_workers, batch_size)  # checks the position
        return {"aisd_position": 1, "epoch": self.epoch, "position": int(consumed), "rank": rank, "world": world,
                "hosts": self._rank_hosts(), "workers": int(num_workers), "batch_size": batch_size,
                "seed": self.seed, "exchange": self.exchange, "locality": self.locality, "job": self.job,
                "fingerprint": self._listing["fingerprint"], "resumed": self._resume}

    def load_state_dict(self, state):
        """Continues a checkpointed epoch: the next iteration reads what no
        rank had read at the checkpoint (every old rank at the same
        position), dealt over this job's ranks, which may be more or fewer
        than before; later epochs as usual. The epoch's listing must be the
        one of the checkpoint (with job= it is kept in the bucket): a
        different one raises RuntimeError."""
        if self.urls:
            raise ValueError("load_state_dict needs a bucket (client and bucket), not urls")
        if not isinstance(state, dict) or state.get("aisd_position") != 1:
            raise ValueError("not a ShardDataset state_dict")
        for k in ("seed", "exchange", "locality"):
            if state[k] != getattr(self, k):
                raise ValueError("the checkpoint was taken with %s=%r, this dataset has %r"
                                 % (k, state[k], getattr(self, k)))
        if self.shuffle_buffer > 1:
            raise ValueError("resuming mid-epoch needs shuffle_buffer=0 (a shuffle buffer's order is not a position)")
        super().set_epoch(state["epoch"])
        self._take_listing(self.epoch)
        if self._listing["fingerprint"] != state["fingerprint"]:
            raise RuntimeError("epoch %d's listing is not the one of the checkpoint (fingerprint %s..., was %s...): "
                               "give job= so the epoch's listing is kept" % (
                                   self.epoch, self._listing["fingerprint"][:12], state["fingerprint"][:12]))
        self._resume = state
        self._plan = None
        self._agree()

    def stats(self, epoch=None):
        """{"local", "cached", "remote", "prefetched"}: bytes this rank's
        processes (all its DataLoader workers, and its prefetcher) read in
        the epoch (default: the current one)."""
        k = ((self.epoch if epoch is None else int(epoch)) % _EPOCH_SLOTS) * len(_KINDS)
        with self._ctr.get_lock():
            return {kind: self._ctr[k + i] for i, kind in enumerate(_KINDS)}

    def cache_stats(self, epoch=None):
        """stats(epoch) with "hit_rate": cached / (cached + remote) bytes
        (None when nothing was read through the cache), and "policy"."""
        st = self.stats(epoch)
        through = st["cached"] + st["remote"]
        return dict(st, hit_rate=st["cached"] / through if through else None, policy=self.cache_policy)

    def _count(self, kind, n):
        k = (self.epoch % _EPOCH_SLOTS) * len(_KINDS) + _KINDS.index(kind)
        with self._ctr.get_lock():
            self._ctr[k] += n

    def shards(self):
        """The shard names (the current epoch's listing; urls: as given)."""
        if self.urls:
            return self._shards
        return [x.name for x in self._loc_shards]

    def __iter__(self):
        if self.urls:
            it = (s for shard in self._mine(sorted(self._shards)) for s in self.samples(shard))
        else:
            rank, _ = _rank_world(self.rank, self.world_size)
            wid, nw = _slot()
            counts = {x.name: x.samples for x in self._loc_shards}
            self._agree_job()
            mine = self.plan().units[rank][wid::nw]
            it = (s for u in mine for s in self._unit_samples(u, counts[u.shard]))
        if self.transform is not None:
            it = map(self.transform, it)
        return _shuffle_buffer(it, self.shuffle_buffer, self._rng("buffer"))

    def _unit_samples(self, u, listed):
        """Samples u.lo..u.hi-1 of u.shard (a shard the listing counted
        `listed` samples in); a shard found with another count raises
        OSError (replaced since it was listed) rather than skip or repeat."""
        i = 0
        it = self.samples(u.shard)
        try:
            for s in it:
                if i >= listed:
                    raise OSError("%s: more samples than the %d of the epoch's listing (replaced since?)"
                                  % (u.shard, listed))
                if i >= u.lo:
                    yield s
                i += 1
                if i == u.hi and u.hi < listed:
                    return
            if i < u.hi:
                raise OSError("%s: %d samples, the epoch's listing counted %d (replaced since?)" % (u.shard, i, listed))
        finally:
            it.close()

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
        if self.locality or self.cache is not None:
            f, etag = self._open_near(shard, start, etag)
            return io.BufferedReader(f, _READBUF), etag
        if not self.urls:
            if self.etl is not None:
                f = self.client.open(self.bucket, shard, start=start, if_match=etag, etl=self.etl,
                                     etl_args=self.etl_args)
            else:
                f = self.client.open(self.bucket, shard, start=start, if_match=etag)
            f = _Counted(f, self, self._kind(f), None, start)
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

    def _open_near(self, shard, start, etag):
        """(raw file at byte start, ETag) from the nearest source: the node
        cache (that version only), a target on this rank's host, else
        through the gateway (filling the cache from byte 0)."""
        if self.locality:
            self._mark(shard)
        for _ in range(3):
            want = etag
            version = None
            if self.cache is not None:
                p = self.client.head(self.bucket, shard)
                version, tag = p.version, p.get("etag")
                if want is not None and tag != want:
                    raise HTTPError(412, "%s: replaced while it was read (ETag %s, was %s)" % (shard, tag, want))
                want = tag
                f = self.cache.open(self.bucket, shard, version, tag)
                if f is not None:
                    f.seek(start)
                    return _Counted(f, self, "cached", None, start), tag
            node = None
            if self.locality:
                rank, _ = _rank_world(self.rank, self.world_size)
                node = self._urls.get(shard, {}).get(self.hosts[rank])
            try:
                f = self._open_at(shard, start, want, node)
            except HTTPError as e:
                if e.status == 412 and etag is None:  # replaced between the HEAD and the GET: ask again
                    continue
                raise
            fill = None
            kind = self._kind(f)
            if self.cache is not None and kind == "remote" and start == 0:
                fill = self.cache.fill(self.bucket, shard, f.headers.get("ais-version", version),
                                       f.headers.get("etag"), f.length)
            return _Counted(f, self, kind, fill, start), f.headers.get("etag")
        raise HTTPError(412, "%s: replaced again and again while read" % shard)

    def _open_at(self, shard, start, etag, node):
        """A stream from node (a target's URL) first when given, then
        through the gateway."""
        if node is not None:
            try:
                return self.client.open(self.bucket, shard, start=start, if_match=etag, node=node)
            except HTTPError as e:
                if e.status not in (404, 500, 502, 503, 504):
                    raise
            except (OSError, http.client.HTTPException):
                pass
        return self.client.open(self.bucket, shard, start=start, if_match=etag)

    def _kind(self, f):
        """"local" when the target that answered is on this rank's host
        (hosts[rank] when hosts are known, else any address of this
        machine), else "remote"."""
        host = urllib.parse.urlsplit(getattr(f, "url", "") or "").hostname or ""
        if self.hosts is not None:
            rank, _ = _rank_world(self.rank, self.world_size)
            return "local" if host == self.hosts[rank] else "remote"
        return "local" if host and self.client._pool.is_this_host(host) else "remote"


class _Counted(io.RawIOBase):
    """A shard's bytes as read: counted in the dataset's epoch counters
    under kind, and written to a cache Fill (committed when the stream
    was read to its end)."""

    def __init__(self, raw, ds, kind, fill, start):
        super().__init__()
        self._raw, self._ds, self._kind, self._fill = raw, ds, kind, fill
        self.status = getattr(raw, "status", 206 if start else 200)
        self.headers = getattr(raw, "headers", {})
        self.length = getattr(raw, "length", None)
        self._eof = False

    def readable(self):
        return True

    def readinto(self, buf):
        n = self._raw.readinto(buf)
        if n:
            self._ds._count(self._kind, n)
            if self._fill is not None:
                self._fill.write(bytes(memoryview(buf)[:n]))
        elif n == 0:
            self._eof = True
        return n

    def close(self):
        if self.closed:
            return
        try:
            fill, self._fill = self._fill, None
            if fill is not None:
                try:
                    if not self._eof and self.length is not None and self.length - fill.n <= _DRAIN_MAX:
                        buf = bytearray(_READBUF)
                        while True:
                            n = self._raw.readinto(buf)
                            if not n:
                                break
                            self._ds._count(self._kind, n)
                            fill.write(bytes(buf[:n]))
                        self._eof = True
                except (OSError, http.client.HTTPException):
                    pass
                if self._eof:
                    fill.commit()
                else:
                    fill.abort()
        finally:
            self._raw.close()
            super().close()


def _common_prefix(names):
    p = names[0] if names else ""
    for n in names[1:]:
        while not n.startswith(p):
            p = p[:-1]
    return p


def _this_host(client, urls):
    """This rank's host as the listing names hosts: one of the targets'
    hosts that is an address of this machine (the lowest, if several), else
    this machine's name (a node without a target: its shards come from its
    cache home)."""
    seen = sorted({h for by_host in urls.values() for h in by_host})
    mine = [h for h in seen if client._pool.is_this_host(h)]
    return mine[0] if mine else socket.gethostname()


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
    with DataLoader(ds, batch_size=None). client: a Client, or its
    endpoint(s) as ShardDataset takes them."""

    def __init__(self, client, bucket, index, batch_size, *, seed=0, shuffle=True, drop_last=False,
                 rank=None, world_size=None, coer=False, transform=None, timeout=60.0, retry_for=60.0):
        super().__init__(seed, shuffle, rank, world_size)
        if isinstance(client, (str, list, tuple)):  # endpoint(s)
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
