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
   removed least recently used first (the .meta's mtime, touched on every
   hit) until the total is at most max_bytes. An entry larger than
   max_bytes is not kept. A reader holding an evicted file keeps reading
   it (unlinked files stay readable while open).
Processes filling the same entry at once each write their own temp file;
the last rename wins with the same bytes.
"""
import fcntl
import hashlib
import json
import os
import time
import zlib

__all__ = ["NodeCache", "Fill"]

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
    """The cache in directory path, holding at most max_bytes of data."""

    def __init__(self, path, max_bytes):
        if max_bytes is None or max_bytes <= 0:
            raise ValueError("cache_bytes must be a positive number of bytes")
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
        """Removes crash leftovers, then least recently used entries until
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
            ents = sorted(self.entries())
            total = sum(e[1] for e in ents)
            for _, size, data, meta in ents:
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
