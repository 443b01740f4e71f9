"""ml_bench.py - the Python side of tools/bench/ml.sh (make bench-ml).

    ml_bench.py gen DIR --total BYTES --shard BYTES --sample BYTES
        writes WebDataset shards DIR/shard-NNNNNN.tar: samples KEY.jpg (about
        --sample bytes, incompressible) + KEY.cls, packed by aisd.shard's
        planner into shards of at most --shard bytes, --total bytes in all
    ml_bench.py upload DIR ENDPOINT BUCKET PREFIX [--jobs N]
        PUTs every DIR/*.tar as PREFIX<name> (sendfile, in parallel)
    ml_bench.py read SOURCE... [--workers N] [--expect SAMPLES] [--no-local]
        one epoch of ShardDataset over SOURCE (aisd://ENDPOINT/BUCKET/PREFIX,
        a file with one URL or path a line (@FILE), or URLs/paths; with
        --no-local aisd is read over TCP only, else targets on this host
        hand over their shard files as descriptors), in a
        DataLoader with N workers (0: in this process); prints one JSON line
        {"samples","bytes","secs","samples_per_s","gbps"}. The workers count
        samples and bytes and hand the main process one total per 64
        samples, so the number is the read path's, not the pickling's.
        Exit status 1 if --expect is given and the count differs.
"""
import argparse
import concurrent.futures
import glob
import io
import json
import os
import random
import sys
import tarfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from aisd import Client  # noqa: E402
from aisd.shard import parse_size, plan  # noqa: E402


def gen(a):
    total, shard, sample = parse_size(a.total), parse_size(a.shard), parse_size(a.sample)
    os.makedirs(a.dir, exist_ok=True)
    r = random.Random(1)
    n = max(1, total // (sample + 1024))
    sizes = [max(1, int(sample * (0.5 + r.random()))) for _ in range(n)]
    files = []
    for i, sz in enumerate(sizes):
        files.append(("%08d.jpg" % i, sz, 0))
        files.append(("%08d.cls" % i, len(str(i % 1000)), 0))
    shards, _ = plan(files, shard, False, 0)
    block = r.randbytes(4 << 20)
    made = 0
    for si, sh in enumerate(shards):
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for key, mem in sh:
                for rel, ext, sz, _ in mem:
                    if ext == "jpg":
                        if sz < len(block):
                            off = r.randrange(0, len(block) - sz)
                            data = block[off:off + sz]
                        else:
                            data = (block * (sz // len(block) + 1))[:sz]
                    else:
                        data = str(int(key) % 1000).encode()
                    ti = tarfile.TarInfo(rel)
                    ti.size = len(data)
                    tar.addfile(ti, io.BytesIO(data))
        with open(os.path.join(a.dir, "shard-%06d.tar" % si), "wb") as f:
            f.write(out.getvalue())
        made += len(out.getvalue())
    print(json.dumps({"shards": len(shards), "samples": n, "bytes": made}))


def upload(a):
    c = Client(a.endpoint)
    paths = sorted(glob.glob(os.path.join(a.dir, "*.tar")))
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        list(ex.map(lambda p: c.put(a.bucket, a.prefix + os.path.basename(p), p), paths))
    print(json.dumps({"uploaded": len(paths)}))


def _dataset(sources, local):
    from aisd import ShardDataset
    if len(sources) == 1 and sources[0].startswith("aisd://"):
        rest = sources[0][len("aisd://"):]
        host, _, path = rest.partition("/")
        bucket, _, prefix = path.partition("/")
        return ShardDataset("http://" + host, bucket=bucket, prefix=prefix, seed=1, local=local)
    urls = []
    for s in sources:
        if s.startswith("@"):
            urls += [x.strip() for x in open(s[1:]) if x.strip()]
        else:
            urls.append(s)
    return ShardDataset(urls=urls, seed=1)


def read(a):
    import torch.utils.data as tud

    ds = _dataset(a.source, not a.no_local)

    class Counts(tud.IterableDataset):
        def __iter__(self):
            n = b = 0
            for s in ds:
                n += 1
                b += sum(len(v) for k, v in s.items() if not k.startswith("__"))
                if n == 64:
                    yield n, b
                    n = b = 0
            if n:
                yield n, b

    t0 = time.monotonic()
    samples = nbytes = 0
    if a.workers == 0:
        it = iter(Counts())
    else:
        it = iter(tud.DataLoader(Counts(), batch_size=None, num_workers=a.workers, prefetch_factor=4))
    for n, b in it:
        samples += int(n)
        nbytes += int(b)
    secs = time.monotonic() - t0
    print(json.dumps({"samples": samples, "bytes": nbytes, "secs": round(secs, 3),
                      "samples_per_s": round(samples / secs, 1), "gbps": round(nbytes / secs / 1e9, 3)}))
    if a.expect is not None and samples != a.expect:
        print("ml_bench: read %d samples, expected %d" % (samples, a.expect), file=sys.stderr)
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser(prog="ml_bench.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("dir")
    g.add_argument("--total", default="2GiB")
    g.add_argument("--shard", default="100MB")
    g.add_argument("--sample", default="100KB")
    u = sub.add_parser("upload")
    u.add_argument("dir")
    u.add_argument("endpoint")
    u.add_argument("bucket")
    u.add_argument("prefix")
    u.add_argument("--jobs", type=int, default=4)
    r = sub.add_parser("read")
    r.add_argument("source", nargs="+")
    r.add_argument("--workers", type=int, default=4)
    r.add_argument("--expect", type=int)
    r.add_argument("--no-local", action="store_true", help="aisd: always over TCP, no descriptors from local targets")
    a = ap.parse_args()
    return {"gen": gen, "upload": upload, "read": read}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
