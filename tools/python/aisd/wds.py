"""wds.py - WebDataset's sample rules over a tar stream (no torch needed).

A member's key is its path up to the first dot of its base name, its
extension the rest (lower-cased); adjacent members with the same key form
one sample. Members whose base name has no dot, and non-regular members,
are skipped.
"""
import tarfile

__all__ = ["wds_split", "iter_samples"]

_BUFSIZE = 64 * 1024


def wds_split(path):
    """(key, extension) of a member path by WebDataset's rule, or
    (None, None) when the base name has no dot."""
    d, _, base = path.rpartition("/")
    stem, dot, ext = base.partition(".")
    if not dot or not stem:
        return None, None
    return (d + "/" + stem if d else stem), ext.lower()


def iter_samples(f, shard, base=0, compressed=False, bufsize=_BUFSIZE):
    """Yields (sample, end) for the samples of the tar read from the file
    object f as a stream; end is the byte offset (base + offset in f) just
    after the sample's last member, where the next sample's headers start
    (meaningful for uncompressed tars)."""
    with tarfile.open(fileobj=f, mode="r|*" if compressed else "r|", bufsize=bufsize) as tar:
        cur, key, end = None, None, base
        for m in tar:
            if not m.isfile():
                continue
            k, ext = wds_split(m.name)
            if k is None:
                continue
            data = tar.extractfile(m).read()
            if cur is not None and k != key:
                yield cur, end
                cur = None
            if cur is None:
                cur, key = {"__key__": k, "__shard__": shard}, k
            cur[ext] = data
            end = base + m.offset_data + ((m.size + 511) & ~511)
        if cur is not None:
            yield cur, end
