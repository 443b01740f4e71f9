"""locrank.py - one training rank for the locality tests and benchmark: a
separate process with its rank and world size (no torch.distributed), a
ShardDataset under a torch DataLoader with workers, for a number of epochs.

  /usr/bin/python3 locrank.py '{"endpoint": ..., "bucket": ..., "prefix": ...,
      "rank": R, "world": W, "hosts": [...], "epochs": N, "workers": K,
      "locality": bool, "exchange": x, "cache_dir": ..., "cache_bytes": ...,
      "seed": S, "sync_dir": DIR, "compute_ms": per-sample sleep, "job": NAME,
      "ckpt_every": N, "ckpt_file": PATH, "hang_after_ckpt": bool,
      "resume_file": PATH, "cache_policy": "lru"|"belady", "prefetch": bytes/s}'
(a "%s" in cache_dir is replaced by the rank's host: one cache per host).
$AISD_PYTHON (default tools/python) is where the aisd package comes from.

Checkpoints: with ckpt_every, after every N samples of an epoch the rank
writes {"state": ds.state_dict(...), "samples": the samples taken so far
this epoch} to ckpt_file (atomically). With resume_file, the rank starts
with ds.load_state_dict of that file's state (its epoch: the first one).

Prints one JSON line per epoch: {"epoch", "rank", "samples": [[shard, key,
crc32 of the sample's bytes], ...], "stats": {local, cached, remote,
prefetched}, "secs"}.
With sync_dir, every epoch starts when every rank has written its
"ready.E.R" file there (a barrier through the file system), and the rank
waits for "go.E" (written by the test) before it starts epoch E, so a
test can act between epochs (replace an object, kill a target).
"""
import inspect
import json
import os
import sys
import time
import warnings
import zlib

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.environ.get("AISD_PYTHON") or os.path.join(ROOT, "tools", "python"))
from torch.utils.data import DataLoader  # noqa: E402

from aisd import ShardDataset  # noqa: E402

warnings.filterwarnings("ignore", message="This DataLoader will create")


def main():
    a = json.loads(sys.argv[1])
    if a.get("cache_dir") and "%s" in a["cache_dir"]:  # one cache per host
        a["cache_dir"] = a["cache_dir"] % a["hosts"][a["rank"]]
    kw = {k: a[k] for k in ("cache_policy", "prefetch") if k in a}
    if a.get("job") and "job" in inspect.signature(ShardDataset.__init__).parameters:  # an older aisd has no job
        kw["job"] = a["job"]
    ds = ShardDataset(a["endpoint"], bucket=a["bucket"], prefix=a["prefix"], rank=a["rank"], world_size=a["world"],
                      hosts=a.get("hosts"), seed=a.get("seed", 0), locality=a.get("locality", False),
                      exchange=a.get("exchange", 0.0), cache_dir=a.get("cache_dir"),
                      cache_bytes=a.get("cache_bytes"), timeout=20, retry_for=60, **kw)
    workers = a.get("workers", 2)
    dl = DataLoader(ds, batch_size=None, num_workers=workers)
    pause = a.get("compute_ms", 0) / 1000.0
    first = a.get("first_epoch", 0)
    resumed = None
    if a.get("resume_file"):
        with open(a["resume_file"]) as f:
            resumed = json.load(f)["state"]
        first = resumed["epoch"]
    every = a.get("ckpt_every", 0)
    for ep in range(first, first + a["epochs"]):
        sync = a.get("sync_dir")
        if sync:
            open(os.path.join(sync, "ready.%d.%d" % (ep, a["rank"])), "w").close()
            deadline = time.monotonic() + 120
            while not os.path.exists(os.path.join(sync, "go.%d" % ep)):
                if time.monotonic() > deadline:
                    raise SystemExit("rank %d: no go for epoch %d" % (a["rank"], ep))
                time.sleep(0.02)
        if resumed is not None and ep == resumed["epoch"]:
            ds.load_state_dict(resumed)
        else:
            ds.set_epoch(ep)
        t0 = time.monotonic()
        got = []
        for s in dl:
            crc = 0
            for k in sorted(s):
                if not k.startswith("__"):
                    crc = zlib.crc32(bytes(s[k]), crc)
            got.append([s["__shard__"], s["__key__"], crc])
            if every and len(got) % every == 0:
                tmp = a["ckpt_file"] + ".tmp"
                with open(tmp, "w") as f:
                    json.dump({"state": ds.state_dict(len(got), workers), "samples": got}, f)
                os.rename(tmp, a["ckpt_file"])
                if a.get("hang_after_ckpt"):  # a consistent point for the test's kill -9 (DDP ranks agree on it)
                    time.sleep(600)
            if pause:
                time.sleep(pause)
        print(json.dumps({"epoch": ep, "rank": a["rank"], "samples": got, "stats": ds.stats(ep),
                          "secs": time.monotonic() - t0}), flush=True)


if __name__ == "__main__":
    main()
