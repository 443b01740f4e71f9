"""locrank.py - one training rank for the locality tests and benchmark: a
separate process with its rank and world size (no torch.distributed), a
ShardDataset under a torch DataLoader with workers, for a number of epochs.

  /usr/bin/python3 locrank.py '{"endpoint": ..., "bucket": ..., "prefix": ...,
      "rank": R, "world": W, "hosts": [...], "epochs": N, "workers": K,
      "locality": bool, "exchange": x, "cache_dir": ..., "cache_bytes": ...,
      "seed": S, "sync_dir": DIR, "compute_ms": per-sample sleep,
      "cache_policy": "lru"|"belady", "prefetch": bytes/s}'
(a "%s" in cache_dir is replaced by the rank's host: one cache per host).

Prints one JSON line per epoch: {"epoch", "rank", "samples": [[shard, key,
crc32 of the sample's bytes], ...], "stats": {local, cached, remote,
prefetched}, "secs"}.
With sync_dir, every epoch starts when every rank has written its
"ready.E.R" file there (a barrier through the file system), and the rank
waits for "go.E" (written by the test) before it starts epoch E, so a
test can act between epochs (replace an object, kill a target).
"""
import json
import os
import sys
import time
import warnings
import zlib

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
from torch.utils.data import DataLoader  # noqa: E402

from aisd import ShardDataset  # noqa: E402

warnings.filterwarnings("ignore", message="This DataLoader will create")


def main():
    a = json.loads(sys.argv[1])
    if a.get("cache_dir") and "%s" in a["cache_dir"]:  # one cache per host
        a["cache_dir"] = a["cache_dir"] % a["hosts"][a["rank"]]
    ds = ShardDataset(a["endpoint"], bucket=a["bucket"], prefix=a["prefix"], rank=a["rank"], world_size=a["world"],
                      hosts=a.get("hosts"), seed=a.get("seed", 0), locality=a.get("locality", False),
                      exchange=a.get("exchange", 0.0), cache_dir=a.get("cache_dir"),
                      cache_bytes=a.get("cache_bytes"), timeout=20, retry_for=60,
                      **{k: a[k] for k in ("cache_policy", "prefetch") if k in a})
    dl = DataLoader(ds, batch_size=None, num_workers=a.get("workers", 2))
    pause = a.get("compute_ms", 0) / 1000.0
    for ep in range(a.get("first_epoch", 0), a.get("first_epoch", 0) + a["epochs"]):
        sync = a.get("sync_dir")
        if sync:
            open(os.path.join(sync, "ready.%d.%d" % (ep, a["rank"])), "w").close()
            deadline = time.monotonic() + 120
            while not os.path.exists(os.path.join(sync, "go.%d" % ep)):
                if time.monotonic() > deadline:
                    raise SystemExit("rank %d: no go for epoch %d" % (a["rank"], ep))
                time.sleep(0.02)
        ds.set_epoch(ep)
        t0 = time.monotonic()
        got = []
        for s in dl:
            crc = 0
            for k in sorted(s):
                if not k.startswith("__"):
                    crc = zlib.crc32(bytes(s[k]), crc)
            got.append([s["__shard__"], s["__key__"], crc])
            if pause:
                time.sleep(pause)
        print(json.dumps({"epoch": ep, "rank": a["rank"], "samples": got, "stats": ds.stats(ep),
                          "secs": time.monotonic() - t0}), flush=True)


if __name__ == "__main__":
    main()
