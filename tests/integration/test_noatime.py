"""test_noatime.py - a GET writes nothing to the object's inode: the target
opens object files with O_NOATIME (the access time it keeps is its own
record's, Ais-Atime), so random reads at scale cost no inode writes.

The runner's standalone target with the hot cache off (every GET opens
the file). For a 1 KiB object (read into memory) and a 1 MiB one (sent
with sendfile): the file's access time is set two days back, the object
is read three times through the target, and the file's access time must
not have moved. With store.atime_interval=0 the target records no access
time either: Ais-Atime stays the write's after reads a second apart (an
interval of 0 read as "every read" would move it). A control first reads a copy of the file with a plain
open: where the filesystem keeps no access times at all (noatime mount)
the check cannot tell, and says so as a skip.
"""
# aisd-args: --set store.hot_cache=0 --set store.atime_interval=0
# timeout: 60
import glob
import os
import time

from itlib import DIR, T, create_bucket, obj_path, req

t = T()
B = "noat"
t.eq(create_bucket(B).status, 200, "create bucket noat")
OLD = time.time() - 2 * 86400


def object_files():
    return set(p for p in glob.glob(os.path.join(DIR, "mp*", "obj", "*", "*")) if os.path.isfile(p))


def set_old_atime(path):
    st = os.stat(path)
    os.utime(path, ns=(int(OLD * 1e9), st.st_mtime_ns))
    return os.stat(path).st_atime_ns


# The control: does a plain read move an old access time here (relatime)?
ctl = os.path.join(DIR, "atime-control")
with open(ctl, "wb") as f:
    f.write(b"x" * 4096)
before = set_old_atime(ctl)
with open(ctl, "rb") as f:
    f.read()
atime_kept = os.stat(ctl).st_atime_ns != before

for name, size in (("small", 1024), ("large", 1 << 20)):
    body = os.urandom(size)
    known = object_files()
    t.eq(req("PUT", obj_path(B, name), body=body).status, 200, "PUT %s (%d bytes)" % (name, size))
    new = sorted(object_files() - known)
    if not t.eq(len(new), 1, "%s: one new object file" % name):
        continue
    path = new[0]
    before = set_old_atime(path)
    first = req("GET", obj_path(B, name)).h("Ais-Atime")
    time.sleep(1.2)
    for i in range(3):
        r = req("GET", obj_path(B, name))
        t.check(r.status == 200 and r.body == body, "%s: GET %d returns the bytes" % (name, i + 1),
                "status %d, %d bytes" % (r.status, len(r.body)))
    time.sleep(0.5)  # the store's atime thread would have written by now
    last = req("GET", obj_path(B, name)).h("Ais-Atime")
    t.check(first and last == first, "%s: Ais-Atime stays the write's (store.atime_interval=0)" % name,
            "first %r, after reads %r" % (first, last))
    after = os.stat(path).st_atime_ns
    if not atime_kept:
        t.skip("%s: the file's access time did not move" % name,
               "this filesystem does not record access times (a plain read did not move one)")
    else:
        t.eq(after, before, "%s: the file's access time did not move (O_NOATIME)" % name)

t.finish()
