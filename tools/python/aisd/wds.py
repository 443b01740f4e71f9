"""wds.py - WebDataset's sample rules over a tar stream (no torch needed).

A member's key is its path up to the first dot of its base name, its
extension the rest (lower-cased); adjacent members with the same key form
one sample. Members whose base name has no dot, and non-regular members,
are skipped.
"""
import zipfile

from .tar import iter_members, open_maybe_compressed

__all__ = ["wds_split", "iter_samples", "iter_zip_samples", "index_shards", "load_index"]

def wds_split(path):
    """(key, extension) of a member path by WebDataset's rule, or
    (None, None) when the base name has no dot."""
    d, _, base = path.rpartition("/")
    stem, dot, ext = base.partition(".")
    if not dot or not stem:
        return None, None
    return (d + "/" + stem if d else stem), ext.lower()


def iter_samples(f, shard, base=0, compressed=False):
    """Yields (sample, end) for the samples of the tar read from the file
    object f as a stream; end is the byte offset (base + offset in f) just
    after the sample's last member, where the next sample's headers start
    (meaningful for uncompressed tars). compressed: f may be gzip, bzip2 or
    xz (f must then have peek()). A damaged tar raises tar.TarError."""
    if compressed:
        f = open_maybe_compressed(f)
    cur, key, end = None, None, base
    for name, data, mend in iter_members(f, base, shard):
        k, ext = wds_split(name)
        if k is None:
            continue
        if cur is not None and k != key:
            yield cur, end
            cur = None
        if cur is None:
            cur, key = {"__key__": k, "__shard__": shard}, k
        cur[ext] = data
        end = mend
    if cur is not None:
        yield cur, end


def iter_zip_samples(f, shard):
    """Yields the samples of the zip read from the seekable file object f,
    in the order of its central directory (the order the members were
    written), by the same rules as iter_samples. A damaged member raises
    zipfile.BadZipFile (its CRC is checked as it is read)."""
    with zipfile.ZipFile(f) as z:
        cur, key = None, None
        for m in z.infolist():
            if m.is_dir():
                continue
            k, ext = wds_split(m.filename)
            if k is None:
                continue
            data = z.read(m)
            if cur is not None and k != key:
                yield cur
                cur = None
            if cur is None:
                cur, key = {"__key__": k, "__shard__": shard}, k
            cur[ext] = data
        if cur is not None:
            yield cur


def index_shards(client, bucket, prefix="", shards=None):
    """The sample index of the shards under prefix (or of the named shards),
    from one listing with the archive flag (no shard is read): a list of
    (shard, key, [ext, ...]) in shard and archive order, for BatchDataset."""
    want = set(shards) if shards is not None else None
    out, shard = [], None
    for e in client.list(bucket, prefix, pagesize=10000, archive=True):
        name, fl = e["name"], e.get("flags") or 0
        if not fl & 128:  # an object (a shard when flag 512 is set)
            shard = name if (fl & 512 and (want is None or name in want)) else None
            continue
        if shard is None or not name.startswith(shard + "/"):
            continue
        key, ext = wds_split(name[len(shard) + 1:])
        if key is None:
            continue
        if out and out[-1][0] == shard and out[-1][1] == key:
            out[-1][2].append(ext)
        else:
            out.append((shard, key, [ext]))
    return out


def load_index(path):
    """Reads a sample index written by `aisd.shard --index`: one JSON object
    a line, {"shard", "key", "members": [ext, ...]}; returns a list of
    (shard, key, members) tuples for BatchDataset."""
    import json
    out = []
    with open(path) as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                out.append((d["shard"], d["key"], list(d["members"])))
    return out
