"""shard.py - pack files into WebDataset tar shards (python3 -m aisd.shard).

    python3 -m aisd.shard [options] SRC DST

SRC is a local directory or ais://BUCKET[/PREFIX]; DST is a local
directory or ais://BUCKET[/PREFIX]. Files are grouped into samples by
WebDataset's rule (the key is the path up to the first dot of the base
name: a/000123.jpg and a/000123.cls are sample a/000123), and samples are
packed in key order (or shuffled with --seed) into shards of at most
--size bytes each: all files of one sample go to the same shard, and a
sample bigger than --size gets a shard of its own. Shard names come from
--template, whose {START..END} (or {START..}) part counts up from START,
zero-padded to its width. Shards are written (or uploaded, --jobs at a
time) as they fill; each is a POSIX (pax) tar whose member names are the
files' paths relative to SRC.

What it guarantees: every file of SRC whose base name has a dot is in
exactly one shard, byte for byte; a shard is never larger than --size
unless it holds a single sample; DST gets only complete shards (a local
shard is written to a temp name and renamed; an upload is a single PUT).
Exit status 0 on success, 1 on an error, 2 on bad usage.
"""
import argparse
import concurrent.futures
import io
import json
import os
import random
import re
import sys
import tarfile
import tempfile
import threading

from .client import Client, HTTPError
from .wds import wds_split

RECORD = tarfile.RECORDSIZE
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gib": 1 << 30, "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3}


class UsageError(Exception):
    pass


def parse_size(s):
    """'100M', '1GiB', '256K', '1.5G', '100MB' (decimal), '4096' -> bytes."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", s)
    if not m or m.group(2).lower() not in _UNITS:
        raise UsageError("bad size %r (like 100M, 1GiB, 512K, 100MB)" % s)
    n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if n <= 0:
        raise UsageError("size must be positive: %r" % s)
    return n


class Template:
    """A name template with one {START..END} or {START..} counter, e.g.
    shard-{000000..}.tar or train-{0000..9999}.tar. name(i) is the i-th
    name (from 0); i past END raises."""

    def __init__(self, s):
        m = re.fullmatch(r"([^{}]*)\{([0-9]+)\.\.([0-9]*)\}([^{}]*)", s)
        if not m:
            raise UsageError("bad template %r: want PREFIX{START..END}SUFFIX or PREFIX{START..}SUFFIX, "
                             "e.g. shard-{000000..}.tar" % s)
        self.pre, start, end, self.suf = m.groups()
        self.start, self.width = int(start), len(start)
        self.end = int(end) if end else None
        if self.end is not None and self.end < self.start:
            raise UsageError("bad template %r: END < START" % s)

    def name(self, i):
        n = self.start + i
        if self.end is not None and n > self.end:
            raise UsageError("template {%0*d..%d} has no room for shard %d" % (self.width, self.start, self.end, i + 1))
        return "%s%0*d%s" % (self.pre, self.width, n, self.suf)


def _ais(s):
    """ais://BUCKET[/PREFIX] -> (bucket, prefix), else None."""
    if not s.startswith("ais://"):
        return None
    b, _, p = s[len("ais://"):].partition("/")
    if not b:
        raise UsageError("%r: no bucket" % s)
    return b, p


def _member(rel, size, mtime):
    ti = tarfile.TarInfo(rel)
    ti.size, ti.mtime, ti.mode = size, int(mtime), 0o644
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    return ti


def _header_len(ti):
    return len(ti.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))


class Source:
    """Files to pack: list() -> [(rel, size, mtime)], read(rel) -> bytes."""

    def __init__(self, spec, client):
        a = _ais(spec)
        self.client = client
        if a:
            if client is None:
                raise UsageError("%s: an ais:// source needs --endpoint or AIS_ENDPOINT" % spec)
            self.bucket, self.prefix = a
            self.dir = None
        else:
            if not os.path.isdir(spec):
                raise UsageError("%s: not a directory" % spec)
            self.dir = spec

    def list(self):
        if self.dir is not None:
            out = []
            for root, dirs, files in os.walk(self.dir):
                dirs.sort()
                for f in files:
                    p = os.path.join(root, f)
                    if os.path.isfile(p):
                        st = os.stat(p)
                        out.append((os.path.relpath(p, self.dir).replace(os.sep, "/"), st.st_size, st.st_mtime))
            return out
        cut = len(self.prefix) if self.prefix.endswith("/") or not self.prefix else self.prefix.rfind("/") + 1
        return [(e["name"][cut:], int(e.get("size", 0)), 0) for e in self.client.list(self.bucket, self.prefix, 10000)]

    def read(self, rel):
        if self.dir is not None:
            with open(os.path.join(self.dir, rel), "rb") as f:
                return f.read()
        cut = len(self.prefix) if self.prefix.endswith("/") or not self.prefix else self.prefix.rfind("/") + 1
        return self.client.get(self.bucket, self.prefix[:cut] + rel)


def plan(files, size, shuffle, seed):
    """Groups files into samples and samples into shards. Returns (shards,
    skipped): shards a list of lists of (key, [(rel, ext, size, mtime)]),
    skipped the files whose base name has no dot."""
    samples, skipped = {}, []
    for rel, n, mt in files:
        key, ext = wds_split(rel)
        if key is None:
            skipped.append(rel)
            continue
        samples.setdefault(key, []).append((rel, ext, n, mt))
    keys = sorted(samples)
    if shuffle:
        random.Random(seed).shuffle(keys)
    shards, cur, cur_size = [], [], 0
    for k in keys:
        mem = sorted(samples[k])
        need = sum(_header_len(_member(rel, n, mt)) + ((n + 511) & ~511) for rel, _, n, mt in mem)
        total = cur_size + need + 1024  # + the end-of-archive blocks
        total = (total + RECORD - 1) // RECORD * RECORD  # tarfile pads to a record
        if cur and total > size:
            shards.append(cur)
            cur, cur_size = [], 0
        cur.append((k, mem))
        cur_size += need
    if cur:
        shards.append(cur)
    return shards, skipped


def build(src, shard, out, jobs_pool=None, window=64):
    """Writes the tar of one planned shard to the file object out; returns
    its size. A bucket source is read jobs at a time, at most window files
    ahead, so memory holds a window of files, never a whole shard."""
    rels = [m for _, mem in shard for m in mem]
    start = out.tell()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for i in range(0, len(rels), window):
            part = rels[i:i + window]
            datas = (jobs_pool.map(src.read, [r[0] for r in part]) if jobs_pool
                     else (src.read(r[0]) for r in part))
            for (rel, _, n, mt), data in zip(part, datas):
                if len(data) != n:
                    raise OSError("%s changed size while packing (%d, now %d bytes)" % (rel, n, len(data)))
                tar.addfile(_member(rel, n, mt), io.BytesIO(data))
    return out.tell() - start


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python3 -m aisd.shard",
        description="Pack a directory or a bucket prefix into WebDataset tar shards of a target size "
                    "(all files of a sample in one shard), written to a directory or uploaded to a bucket.",
        epilog="SRC, DST: a local directory, or ais://BUCKET[/PREFIX] (with --endpoint or AIS_ENDPOINT). "
               "Example: python3 -m aisd.shard --size 100M --shuffle --seed 1 ./images ais://data/train/")
    ap.add_argument("src", metavar="SRC", help="a local directory, or ais://BUCKET[/PREFIX]")
    ap.add_argument("dst", metavar="DST", help="a local directory, or ais://BUCKET[/PREFIX] (the bucket must exist)")
    ap.add_argument("-s", "--size", default="100M",
                    help="most bytes per shard: 100M, 1GiB, 512K (powers of 1024), 100MB (of 1000); default 100M")
    ap.add_argument("-t", "--template", default="shard-{000000..}.tar",
                    help="shard names: PREFIX{START..[END]}SUFFIX, the counter zero-padded to START's width; "
                         "default shard-{000000..}.tar")
    ap.add_argument("--shuffle", action="store_true", help="shuffle the samples (with --seed) before packing")
    ap.add_argument("--seed", type=int, default=0, help="the shuffle's seed (default 0)")
    ap.add_argument("-j", "--jobs", type=int, default=8, help="parallel uploads and source reads (default 8)")
    ap.add_argument("--index", metavar="FILE",
                    help='write the sample index: a JSON line {"shard","key","members":[ext,...]} per sample')
    ap.add_argument("-e", "--endpoint", default=os.environ.get("AIS_ENDPOINT"),
                    help="aisd endpoint for ais:// names (default $AIS_ENDPOINT)")
    ap.add_argument("--tmpdir", default=None,
                    help="where shards for a bucket are built before upload (default $TMPDIR or /tmp); "
                         "--jobs + 1 shards at most")
    ap.add_argument("-n", "--dry-run", action="store_true", help="print the plan, write nothing")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per shard")
    a = ap.parse_args(argv)
    try:
        return _run(a)
    except UsageError as e:
        print("aisd.shard: %s" % e, file=sys.stderr)
        return 2
    except (OSError, ValueError, HTTPError) as e:
        print("aisd.shard: %s" % e, file=sys.stderr)
        return 1


def _run(a):
    size = parse_size(a.size)
    tmpl = Template(a.template)
    if a.jobs < 1:
        raise UsageError("--jobs must be >= 1")
    client = Client(a.endpoint) if a.endpoint else None
    src = Source(a.src, client)
    dst = _ais(a.dst)
    if dst and client is None:
        raise UsageError("%s: an ais:// destination needs --endpoint or AIS_ENDPOINT" % a.dst)
    if not dst and not a.dry_run:
        os.makedirs(a.dst, exist_ok=True)
    shards, skipped = plan(src.list(), size, a.shuffle, a.seed)
    for rel in skipped[:5]:
        print("aisd.shard: skipped %s: no extension (not part of a WebDataset sample)" % rel, file=sys.stderr)
    if len(skipped) > 5:
        print("aisd.shard: ... and %d more without an extension" % (len(skipped) - 5), file=sys.stderr)
    names = [(dst[1] if dst else "") + tmpl.name(i) for i in range(len(shards))]

    idx = open(a.index, "w") if a.index and not a.dry_run else None
    reads = concurrent.futures.ThreadPoolExecutor(a.jobs) if not src.dir else None
    puts = concurrent.futures.ThreadPoolExecutor(a.jobs) if dst else None
    room = threading.BoundedSemaphore(a.jobs + 1)  # shards built and not yet stored
    pending, total_bytes, nsamples = [], 0, 0
    try:
        for name, shard in zip(names, shards):
            nsamples += len(shard)
            if idx:
                for key, mem in shard:
                    idx.write(json.dumps({"shard": name, "key": key, "members": [m[1] for m in mem]}) + "\n")
            if a.dry_run:
                print("%s: %d samples, %d files" % (name, len(shard), sum(len(m) for _, m in shard)))
                continue
            room.acquire()
            try:
                if dst:
                    fd, path = tempfile.mkstemp(prefix="aisd-shard.", suffix=".tar", dir=a.tmpdir)
                else:
                    final = os.path.join(a.dst, name)
                    os.makedirs(os.path.dirname(final), exist_ok=True)
                    path = final + ".tmp%d" % os.getpid()
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    with os.fdopen(fd, "wb") as f:
                        n = build(src, shard, f, reads)
                    if not dst:
                        os.replace(path, final)
                except BaseException:
                    os.unlink(path)
                    raise
            except BaseException:
                room.release()
                raise
            total_bytes += n
            if a.verbose:
                print("%s: %d samples, %d bytes" % (name, len(shard), n), file=sys.stderr)
            if dst:
                pending.append(puts.submit(_put, client, dst[0], name, path, room))
                _reap(pending, False)
            else:
                room.release()
        _reap(pending, True)
    finally:
        if idx:
            idx.close()
        for p in (reads, puts):
            if p:
                p.shutdown(wait=True, cancel_futures=True)
    where = "ais://%s/%s" % (dst[0], dst[1]) if dst else a.dst
    print("aisd.shard: %d shards, %d samples, %d bytes -> %s%s" % (
        len(shards), nsamples, total_bytes, where, " (dry run)" if a.dry_run else ""), file=sys.stderr)
    return 0


def _put(client, bucket, name, path, room):
    try:
        client.put(bucket, name, path)
    finally:
        os.unlink(path)
        room.release()


def _reap(pending, wait):
    while pending and (wait or pending[0].done()):
        pending.pop(0).result()  # raises the first upload error


if __name__ == "__main__":
    sys.exit(main())
