"""sse.py - S3 GET and PUT with SSE-C against plain: a 1-gateway 1-target
cluster (s3.auth off, s3.sse_c_plain_http on, store.fsync=never), curl
through the gateway's S3 endpoint; 64 MiB objects (N rounds, default 9,
plain and SSE-C alternating, each a timed curl) and 10 KiB objects (M,
default 300, per mode in one curl run over one connection). Prints the
medians (64 MiB) and rates (10 KiB) and the SSE-C/plain ratios.

    AISD_BIN=build/aisd AISD_DIR=$(mktemp -d) /usr/bin/python3 tools/bench/sse.py

Uses the integration tests' cluster harness (tests/integration/clulib.py);
every node is stopped by PID at the end.
"""
import base64, hashlib, os, statistics, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "integration"))
from itlib import T
import clulib
from clulib import Node, poll, smap_ids

N, M = int(os.environ.get("N", "9")), int(os.environ.get("M", "300"))
D = os.path.join(os.environ["AISD_DIR"], "ssebench")
os.makedirs(D, exist_ok=True)
t = T()
clulib.init(t, "clu", ["--set", "s3.auth=off", "--set", "s3.sse_c_plain_http=on", "--set", "store.fsync=never"])
g, tg = Node("g1", "gateway"), Node("t1", "target")
assert g.start() and tg.start(join=g.url)
assert poll(lambda: len(smap_ids(g)) == 2, 20)
key = os.urandom(32)
SSEC = ["-H", "x-amz-server-side-encryption-customer-algorithm: AES256",
        "-H", "x-amz-server-side-encryption-customer-key: " + base64.b64encode(key).decode(),
        "-H", "x-amz-server-side-encryption-customer-key-MD5: " + base64.b64encode(hashlib.md5(key).digest()).decode()]
MODES = {"plain": [], "sse-c": SSEC}


def curl(*a):
    r = subprocess.run(["curl", "-sS", *a], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


assert curl("-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", g.url + "/bench") == "200"
big, small = os.path.join(D, "64m"), os.path.join(D, "10k")
open(big, "wb").write(os.urandom(64 << 20))
open(small, "wb").write(os.urandom(10 << 10))
res = {(m, op): [] for m in MODES for op in ("put", "get")}
for i in range(N):
    for m, h in MODES.items():
        u = "%s/bench/%s-big" % (g.url, m)
        res[(m, "put")].append(float(curl(*h, "-o", "/dev/null", "-w", "%{time_total}", "-T", big, u)))
        res[(m, "get")].append(float(curl(*h, "-o", "/dev/null", "-w", "%{time_total}", u)))
rate = {}
for m, h in MODES.items():
    urls = ["%s/bench/%s-s%d" % (g.url, m, i) for i in range(M)]
    for op in ("put", "get"):
        args = []
        for u in urls:
            args += (["-T", small] if op == "put" else []) + ["-o", "/dev/null", u]
        t0 = time.monotonic()
        curl(*h, *args)
        rate[(m, op)] = M / (time.monotonic() - t0)
for op in ("put", "get"):
    p, c = statistics.median(res[("plain", op)]), statistics.median(res[("sse-c", op)])
    print("64 MiB %s, median of %d: plain %.0f ms (%.0f MiB/s), SSE-C %.0f ms (%.0f MiB/s), SSE-C/plain %.2fx" %
          (op.upper(), N, p * 1e3, 64 / p, c * 1e3, 64 / c, p / c))
for op in ("put", "get"):
    p, c = rate[("plain", op)], rate[("sse-c", op)]
    print("10 KiB %s, %d in one connection: plain %.0f/s, SSE-C %.0f/s, SSE-C/plain %.2fx" % (op.upper(), M, p, c, c / p))
clulib.stop_all()
