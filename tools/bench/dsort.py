"""dsort.py - a shuffle of tar shards in the cluster (aisctl dsort) against
the client-side route (every input shard downloaded, its samples extracted,
shuffled and resharded with python3 -m aisd.shard, and uploaded again).
1 gateway + 3 targets on loopback; BYTES of samples (a SAMPLE-byte .jpg and
a .cls label of 10 classes) in input shards of SHARD bytes; both routes
into shards of SHARD bytes. Prints, as Markdown: the wall times and their
ratio, the peak RSS of each target during the dsort (against
dsort.memory_limit + 64 MiB), and the shuffle's quality: Spearman's rank
correlation between the samples' input and output positions, and the
largest chi-square statistic (9 degrees of freedom) of an output shard's
label histogram against the global one; and, in the same run, the
machine's bound: the input's files on the mountpaths read once with dd
(O_DIRECT where the file system has it), the same amount written with dd
conv=fsync, and (T-1)/T of it fetched over loopback through the targets'
HTTP (curl GETs), summed (serial) and maxed (overlapped), with dsort's
throughput as a fraction of each.

Environment: AISD_BIN, AISCTL, AISD_DIR (a scratch folder), BYTES (2GiB),
SAMPLE (102400), SHARD (100000000), MEMLIMIT (256MiB).
"""
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "integration"))
from itlib import T, q  # noqa: E402

import clulib  # noqa: E402
from clulib import Node, follow, poll, procs, request  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from aisd.shard import parse_size  # noqa: E402

BYTES = parse_size(os.environ.get("BYTES", "2GiB"))
SAMPLE = int(os.environ.get("SAMPLE", "102400"))
SHARD = int(os.environ.get("SHARD", "100000000"))
MEMLIMIT = os.environ.get("MEMLIMIT", "256MiB")
CTL = os.environ["AISCTL"]
DIR = os.environ["AISD_DIR"]
JSON = {"Content-Type": "application/json"}

t = T()
clulib.init(t, "dsortbench", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                              "--set", "dsort.memory_limit=" + MEMLIMIT])
g = Node("g1", "gateway")
ts = [Node("t%d" % i, "target") for i in (1, 2, 3)]
for n, j in [(g, None)] + [(x, g) for x in ts]:
    if not n.start(join=j.url if j else None):
        sys.exit("cannot start " + n.name)
poll(lambda: clulib.smap_ids(g) == {g.id} | {x.id for x in ts}, 30)
for b in ("src", "viaclient", "incluster"):
    request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON)

# --- the input: shards of SHARD bytes, made here and uploaded ------------------------------
rnd = random.Random(1)
nsamples = BYTES // SAMPLE
per_shard = max(1, SHARD // (SAMPLE + 2048))
label = {}
blob = os.urandom(SAMPLE + 4096)
indir = os.path.join(DIR, "in")
os.makedirs(indir)
for s in range(0, nsamples, per_shard):
    path = os.path.join(indir, "in-%05d.tar" % (s // per_shard))
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        for i in range(s, min(s + per_shard, nsamples)):
            k = "s/%08d" % i
            label[k] = rnd.randrange(10)
            off = rnd.randrange(4096)
            for nm, d in ((k + ".jpg", blob[off:off + SAMPLE]), (k + ".cls", b"%d" % label[k])):
                ti = tarfile.TarInfo(nm)
                ti.size = len(d)
                tf.addfile(ti, io.BytesIO(d))
subprocess.run([CTL, "-e", g.url, "put", "-r", "--conc", "8", indir, "src"], check=True, stdout=subprocess.DEVNULL)
inputs = sorted(os.listdir(indir))
in_sizes = {f: os.path.getsize(os.path.join(indir, f)) for f in inputs}
in_bytes = sum(in_sizes.values())
subprocess.run(["rm", "-rf", indir], check=True)

# --- in the cluster -------------------------------------------------------------------------
peak = {x.name: 0 for x in ts}
stop = threading.Event()


def sample_rss():
    while not stop.is_set():
        for x in ts:
            peak[x.name] = max(peak[x.name], clulib.rss_kib(procs[x.name].pid))
        time.sleep(0.1)


base = {x.name: clulib.rss_kib(procs[x.name].pid) for x in ts}
th = threading.Thread(target=sample_rss, daemon=True)
th.start()
t0 = time.monotonic()
cp = subprocess.run([CTL, "-e", g.url, "dsort", "src", "incluster", "--template", "shuf-%06d.tar", "--shard-size",
                     str(SHARD), "--algorithm", "shuffle", "--seed", "7"], check=True, stdout=subprocess.PIPE)
rid = cp.stdout.split()[cp.stdout.split().index(b"job") + 1].decode()
w = subprocess.run([CTL, "-e", g.url, "job", "wait", rid, "--timeout-s", "3000"], stdout=subprocess.PIPE)
t_dsort = time.monotonic() - t0
stop.set()
th.join()
ok = w.returncode == 0 and b"done" in w.stdout

# --- the machine's bound: each byte read once from disk, written once, (T-1)/T sent between targets
def timed(cmds):
    t0 = time.monotonic()
    for c in cmds:
        subprocess.run(c, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t0


want_sizes = {}
for v in in_sizes.values():
    want_sizes[v] = want_sizes.get(v, 0) + 1
stored = []  # the input shards' files on the targets' mountpaths (found by size)
for x in ts:
    for root, _, files in os.walk(x.dir):
        for f in files:
            p = os.path.join(root, f)
            z = os.path.getsize(p)
            if want_sizes.get(z, 0) > 0:
                want_sizes[z] -= 1
                stored.append(p)
direct = subprocess.run(["dd", "if=" + stored[0], "of=/dev/null", "bs=4M", "count=1", "iflag=direct"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0 if stored else False
t_read = timed([["dd", "if=" + p, "of=/dev/null", "bs=4M"] + (["iflag=direct"] if direct else []) for p in stored])
read_bytes = sum(os.path.getsize(p) for p in stored)
wfile = os.path.join(DIR, "bound-write")
t_write = timed([["dd", "if=/dev/zero", "of=" + wfile, "bs=4M", "count=%d" % max(1, in_bytes >> 22),
                  "conv=fsync"]])
os.unlink(wfile)
net_want, net_list, net_bytes = in_bytes * (len(ts) - 1) // len(ts), [], 0
for f in inputs:  # GETs through the cluster's own transport (a target's HTTP), redirected by the gateway
    if net_bytes >= net_want:
        break
    net_list.append(["curl", "-sfL", "-o", "/dev/null", g.url + "/v1/objects/src/" + q(f)])
    net_bytes += in_sizes[f]
t_net = timed(net_list)
t_net = t_net * net_want / max(1, net_bytes)
t_bound_serial = t_read * in_bytes / max(1, read_bytes) + t_write + t_net
t_bound_overlap = max(t_read * in_bytes / max(1, read_bytes), t_write, t_net)

# --- the client route -----------------------------------------------------------------------
env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "python"))
loose = os.path.join(DIR, "loose")
dl = os.path.join(DIR, "dl")
os.makedirs(dl)
t0 = time.monotonic()
for f in inputs:
    subprocess.run([CTL, "-e", g.url, "get", "src/" + f, os.path.join(dl, f)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with tarfile.open(os.path.join(dl, f)) as tf:
        tf.extractall(loose)
    os.unlink(os.path.join(dl, f))
subprocess.run([sys.executable, "-m", "aisd.shard", loose, "ais://viaclient", "-s", str(SHARD), "--shuffle",
                "--seed", "7", "-e", g.url], check=True, env=env, stdout=subprocess.DEVNULL)
t_client = time.monotonic() - t0
subprocess.run(["rm", "-rf", loose, dl], check=True)

# --- the shuffle's quality ------------------------------------------------------------------
order, hist = [], []
body = json.dumps({"action": "list", "value": {"pagesize": 10000, "prefix": "shuf-"}})
outs = sorted(e["name"] for e in request("GET", g.url, "/v1/buckets/incluster", body, JSON).json()["entries"])
for s in outs:
    r = follow("GET", g.url, "/v1/objects/incluster/" + q(s))[1]
    h = [0] * 10
    with tarfile.open(fileobj=io.BytesIO(r.body), mode="r|") as tf:
        for m in tf:
            if m.name.endswith(".cls"):
                k = m.name[:-4]
                order.append(int(k[2:]))
                h[label[k]] += 1
    hist.append(h)
n = len(order)
d2 = sum((rank - v) ** 2 for rank, v in enumerate(order))
rho = 1 - 6 * d2 / (n * (n * n - 1)) if n > 1 else 0.0
glob = [sum(h[c] for h in hist) / max(1, n) for c in range(10)]
chi = max((sum((h[c] - sum(h) * glob[c]) ** 2 / (sum(h) * glob[c]) for c in range(10) if glob[c])
           for h in hist if sum(h)), default=0.0)
exact = n == nsamples and sorted(order) == list(range(nsamples))

mib = in_bytes / (1 << 20)
print("| route | wall s | MiB/s |")
print("|---|---|---|")
print("| download + extract + `python3 -m aisd.shard --shuffle` + upload (client) | %.1f | %.1f |"
      % (t_client, mib / t_client))
print("| `aisctl dsort --algorithm shuffle` (in the cluster)%s | %.1f | %.1f |"
      % ("" if ok else " FAILED", t_dsort, mib / t_dsort))
print("| ratio client / dsort | %.1fx | |" % (t_client / t_dsort))
print()
print("%d input shards, %.0f MiB, %d samples of %d bytes (+ a .cls), %d output shards; every sample once: %s"
      % (len(inputs), mib, nsamples, SAMPLE, len(outs), "yes" if exact else "NO"))
sd = 1 / (n - 1) ** 0.5 if n > 1 else 1.0
print("Spearman rho (input position vs output position): %+.4f (a random permutation of %d samples: sd %.4f, "
      "|rho| = %.1f sd: %s); largest per-shard chi-square of the labels (9 dof, 10 classes): %.1f"
      % (rho, n, sd, abs(rho) / sd, "within noise" if abs(rho) <= 3 * sd else "NOT within 3 sd", chi))
cap = parse_size(MEMLIMIT) + (64 << 20)
print("peak target RSS during the dsort (MiB; before it): %s; dsort.memory_limit %s + 64 MiB = %.0f MiB: %s"
      % (", ".join("%s %.0f (%.0f)" % (k, v / 1024, base[k] / 1024) for k, v in sorted(peak.items())), MEMLIMIT,
         cap / (1 << 20), "under" if max(peak.values()) * 1024 < cap else "OVER"))
print()
print("| the machine's bound (same run) | s | MiB/s |")
print("|---|---:|---:|")
print("| read the input once (`dd` of its %d files on the mountpaths%s) | %.1f | %.1f |"
      % (len(stored), ", O_DIRECT" if direct else ", page cache", t_read, read_bytes / (1 << 20) / t_read))
print("| write + fsync the same amount (`dd conv=fsync`) | %.1f | %.1f |" % (t_write, mib / t_write))
print("| (T-1)/T = %d/%d of it over loopback (GETs of input shards from the targets with curl, scaled) | %.1f | %.1f |"
      % (len(ts) - 1, len(ts), t_net, net_want / (1 << 20) / t_net))
print("| serial bound (the sum: on this host the three compete for the same cores and disk) | %.1f | %.1f |"
      % (t_bound_serial, mib / t_bound_serial))
print("| overlapped bound (the max: were they independent) | %.1f | %.1f |" % (t_bound_overlap, mib / t_bound_overlap))
print("| dsort's throughput as a fraction of the serial bound (goal >= 0.5) | %.2f | |" % (t_bound_serial / t_dsort))
print("| ... of the overlapped bound | %.2f | |" % (t_bound_overlap / t_dsort))
clulib.stop_all()
