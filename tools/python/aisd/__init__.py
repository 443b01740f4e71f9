"""aisd - a Python client for aisd (standard library only) and PyTorch
datasets over WebDataset shards.

    from aisd import Client, ShardDataset, BatchDataset
    c = Client("http://127.0.0.1:8080")
    c.put("data", "a.txt", b"hi"); c.get("data", "a.txt")
    ds = ShardDataset(c, bucket="data", prefix="train/", seed=1)

The datasets are torch IterableDatasets when torch is there (Debian:
python3-torch) and plain iterables without it; the client never needs it.
`python3 -m aisd.shard --help` packs files into WebDataset shards.
"""
from .client import Client, HTTPError, LocalStream, PartialListing, Props, Stream, iter_tar
from .tar import TarError, iter_members
from .wds import index_shards, iter_samples, load_index, wds_split

_LAZY = ("BatchDataset", "ShardDataset", "fetch_batch")


def __getattr__(name):  # the datasets import torch: only when asked for
    if name in _LAZY:
        from . import dataset
        return getattr(dataset, name)
    raise AttributeError("module 'aisd' has no attribute %r" % name)


__all__ = ["Client", "HTTPError", "LocalStream", "PartialListing", "Props", "Stream", "iter_tar", "ShardDataset", "BatchDataset",
           "fetch_batch", "index_shards", "iter_members", "TarError", "iter_samples", "load_index", "wds_split"]
__version__ = "0.1.0"
