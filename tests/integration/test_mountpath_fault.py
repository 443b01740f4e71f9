"""test_mountpath_fault.py - a mountpath that fails at run time, on the
runner's standalone target (mountpaths mp1 and mp2, store.check_interval
200ms):
 1. mp2's directory disappears (renamed away): the target marks it faulted
    ("its directory is gone") in GET /v1/daemon/mountpaths, in `aisctl
    storage mountpath show` (state and reason) and in /metrics
    (aisd_mountpath_faulted 1), logs one error line, and keeps serving:
    new PUTs all succeed and land on mp1 only, objects on mp1 read back
    byte for byte, an object that was on mp2 is a clean 404 (no other copy
    on a standalone target), an attach of it is 409-refused until a detach
    closes it.
 2. as root: a tmpfs attached as mp3 is unmounted (lazily, its files
    still open) under the running target: faulted ("names another
    directory"), PUTs go on to the others. Skipped, saying so, when not
    root or a tmpfs cannot be mounted.
(A file system that turns read-only is detected by the same check, by
statvfs's ST_RDONLY; it is not simulated here: a remount read-only is
refused while the target holds files open for writing on it.)
"""
# aisd-args: --set store.check_interval=200ms --set store.fsync=never
# log-allow: mountpath .* failed \(
# timeout: 120
import glob
import json
import os
import subprocess

from itlib import DIR, T, create_bucket, obj_path, req
from clulib import poll

t = T()
CTL = os.environ["AISCTL"]
URL = os.environ["AISD_URL"]
JSON = {"Content-Type": "application/json"}
MP1, MP2, MP3 = (os.path.join(DIR, m) for m in ("mp1", "mp2", "mp3"))


def mountpaths():
    r = req("GET", "/v1/daemon/mountpaths")
    d = r.json() if r.status == 200 else None
    return {m["path"]: m for m in (d or {}).get("mountpaths", [])}


def state(path):
    return mountpaths().get(path, {}).get("state")


def files(mp):
    return {os.path.basename(p).split(".")[0] for p in glob.glob(os.path.join(mp, "obj", "*", "*"))}


def metric(name, path):
    body = req("GET", "/metrics").body.decode()
    want = '%s{mountpath="%s"} ' % (name, path)
    return next((ln[len(want):] for ln in body.splitlines() if ln.startswith(want)), None)


def errors_in_log():
    with open(os.path.join(DIR, "aisd.log"), errors="replace") as f:
        return [ln for ln in f if ln.split(" ")[1:2] == ["E"]]


t.eq(create_bucket("f").status, 200, "create bucket f")
data = {"o%03d" % i: os.urandom(1000 + i) for i in range(80)}
bad = [k for k, v in data.items() if req("PUT", obj_path("f", k), v).status != 200]
t.check(not bad, "80 PUTs", bad[:3])
on1, on2 = len(files(MP1)), len(files(MP2))
t.check(on1 > 0 and on2 > 0 and on1 + on2 == 80, "the objects spread over mp1 (%d) and mp2 (%d)" % (on1, on2))
t.eq(metric("aisd_mountpath_faulted", MP2), "0", "/metrics: aisd_mountpath_faulted 0 for mp2")

# --- 1. mp2 disappears -----------------------------------------------------------------
GONE = MP2 + ".gone"
os.rename(MP2, GONE)
t.check(poll(lambda: state(MP2) == "faulted", 20), "mp2 becomes faulted once its directory is gone", mountpaths())
m2 = mountpaths().get(MP2, {})
t.check("gone" in m2.get("fault", ""), "the reason says its directory is gone", m2)
t.eq(state(MP1), "active", "mp1 stays active")
t.eq(metric("aisd_mountpath_faulted", MP2), "1", "/metrics: aisd_mountpath_faulted 1 for mp2")
cp = subprocess.run([CTL, "-e", URL, "storage", "mountpath", "show"], capture_output=True, text=True, timeout=30)
line = next((ln for ln in cp.stdout.splitlines() if MP2 + " " in ln), "")
t.check(cp.returncode == 0 and "faulted" in line and ("%s failed: its directory is gone" % MP2) in cp.stdout,
        "aisctl storage mountpath show: mp2 faulted, and why", cp.stdout + cp.stderr)
errs = errors_in_log()
t.check(len(errs) == 1 and MP2 in errs[0] and "out of use" in errs[0], "one error line names mp2 and says what happened",
        errs[:3])

gone_before = files(GONE)
new = {"n%03d" % i: os.urandom(2000 + i) for i in range(40)}
bad = [k for k, v in new.items() if req("PUT", obj_path("f", k), v).status != 200]
t.check(not bad, "40 PUTs after the failure all succeed", bad[:3])
t.eq(files(GONE), gone_before, "none of them went to the failed mountpath")
t.eq(len(files(MP1)), on1 + 40, "all of them are on mp1")
wrong = [k for k, v in list(data.items()) + list(new.items())
         if req("GET", obj_path("f", k)).status == 200 and req("GET", obj_path("f", k)).body != v]
t.check(not wrong, "every object that reads reads its own bytes", wrong[:3])
st = {}
for k in data:
    st.setdefault(req("GET", obj_path("f", k)).status, []).append(k)
t.eq(sorted(st), [200, 404], "the old objects: 200 for mp1's, a clean 404 for mp2's (no other copy here)")
t.eq(len(st.get(200, [])), on1, "every object on mp1 still reads")
t.check(all(req("GET", obj_path("f", k)).status == 200 for k in new), "every new object reads")

r = req("PUT", "/v1/daemon/mountpaths", json.dumps({"action": "attach-mp", "value": MP2}), JSON)
t.check(r.status == 409 and "detach it first" in r.body.decode(errors="replace"),
        "attaching the faulted mp2 again: 409 until it is detached", r)
r = req("DELETE", "/v1/daemon/mountpaths", json.dumps({"action": "detach-mp", "value": MP2}), JSON)
t.eq(r.status, 200, "detach the faulted mp2")
t.check(poll(lambda: MP2 not in mountpaths(), 20), "mp2 is gone from the list", mountpaths())
os.rename(GONE, MP2)
r = req("PUT", "/v1/daemon/mountpaths", json.dumps({"action": "attach-mp", "value": MP2}), JSON)
t.eq(r.status, 200, "the repaired mp2 attaches again")
t.check(poll(lambda: state(MP2) == "active", 20), "mp2 is active again")
t.check(poll(lambda: all(req("GET", obj_path("f", k)).status == 200 for k in data), 60),
        "its objects read again (the resilver puts them in place)")

# --- 2. a read-only file system ------------------------------------------------------------
if os.geteuid() != 0:
    t.skip("a mountpath unmounted under the target", "needs root to mount a tmpfs")
    t.finish()
os.makedirs(MP3, exist_ok=True)
mnt = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", MP3], capture_output=True, text=True)
if mnt.returncode != 0:
    t.skip("a mountpath unmounted under the target", "cannot mount a tmpfs: " + mnt.stderr.strip())
    t.finish()
try:
    r = req("PUT", "/v1/daemon/mountpaths", json.dumps({"action": "attach-mp", "value": MP3}), JSON)
    t.eq(r.status, 200, "attach a tmpfs as mp3")
    t.check(poll(lambda: state(MP3) == "active", 20), "mp3 active")
    # the disk goes away under the target (a lazy unmount: its files stay
    # open, the path now names the directory underneath)
    um = subprocess.run(["umount", "-l", MP3], capture_output=True, text=True)
    t.check(um.returncode == 0, "unmount mp3's tmpfs under the running target", um.stderr)
    t.check(poll(lambda: state(MP3) == "faulted", 20), "mp3 becomes faulted", mountpaths())
    t.check("another directory" in mountpaths().get(MP3, {}).get("fault", ""),
            "the reason says the path names another directory now", mountpaths().get(MP3))
    more = {"r%03d" % i: os.urandom(500 + i) for i in range(30)}
    bad = [k for k, v in more.items() if req("PUT", obj_path("f", k), v).status != 200]
    t.check(not bad, "30 PUTs with mp3 unmounted all succeed", bad[:3])
    t.check(all(req("GET", obj_path("f", k)).body == v for k, v in more.items()), "and read back")
    r = req("DELETE", "/v1/daemon/mountpaths", json.dumps({"action": "detach-mp", "value": MP3}), JSON)
    t.eq(r.status, 200, "detach the faulted mp3")
finally:
    subprocess.run(["umount", "-l", MP3], capture_output=True)
t.finish()
