#!/usr/bin/env bash
# etl.sh - inline transform cost: GET of a 1 MiB object through an identity
# transformer (a Python worker, aisd.etl.serve, over stdio and over http:
# the same file registered twice, --comm stdio and --comm http) vs a plain
# GET, on a cluster of 1 gateway + 1 target on this host. Each round times
# N sequential GETs of each kind on one keep-alive connection to the target
# (the gateway's 307 is resolved once), workers warm; prints MiB/s per
# round, the medians and their ratios (etl / plain, per mode).
#
# Then the offline row: a cluster of 1 gateway + 3 targets, NOBJ objects
# of OSIZE bytes transformed by a CPU-bound Python stand-in for a decode +
# resize (zlib level 9 over the bytes, then every 4th byte kept: a quarter
# of the size; Debian's python3-pil is not a dependency) two ways, in one
# run: aisctl etl bucket (each target transforms what it holds) vs a
# client doing plain GETs and the same function, in 3 processes. Prints
# objects/s and the bytes sent to the client for each.
#
# usage: BUILD=build tools/bench/etl.sh      (make bench-etl)
#   ROUNDS (default 5), N GETs per round and kind (default 100),
#   WORKERS (default 1), NOBJ (default 120), OSIZE (default 262144),
#   OFFLINE=0 skips the offline row, KEEP=1 keeps the temp dir.
set -euo pipefail
BENCH_NAME=etl
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5} N=${N:-100} WORKERS=${WORKERS:-1} NOBJ=${NOBJ:-120} OSIZE=${OSIZE:-262144}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
bench_setup etl
chmod 755 "$TMP" # the worker runs as nobody: its script must be readable
start_cluster "$TMP" 1 --set store.fsync=never || die "no cluster"
create_bucket "$GW" eb || die "no bucket"
cat >"$TMP/identity.py" <<'PY'
from aisd.etl import serve
serve(lambda data, meta, args: data)
PY
chmod 644 "$TMP/identity.py"
"$BUILD/aisctl" -e "$GW" etl init ident --cmd "python3 $TMP/identity.py" --workers "$WORKERS" \
	"PYTHONPATH=$ROOT/tools/python" >/dev/null || die "etl init failed"
"$BUILD/aisctl" -e "$GW" etl init identh --comm http --cmd "python3 $TMP/identity.py" --workers "$WORKERS" \
	"PYTHONPATH=$ROOT/tools/python" >/dev/null || die "etl init --comm http failed"
python3 - "$GW" "$ROUNDS" "$N" <<'PY'
import http.client, statistics, sys, time, urllib.parse, urllib.request
gw, rounds, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = bytes(range(256)) * 4096  # 1 MiB
u = urllib.parse.urlsplit(gw)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
c.request("PUT", "/v1/objects/eb/obj", body=data); r = c.getresponse(); r.read()
if r.status == 307:
    loc = urllib.parse.urlsplit(r.getheader("location"))
    t = http.client.HTTPConnection(loc.hostname, loc.port, timeout=60)
    t.request("PUT", loc.path + ("?" + loc.query if loc.query else ""), body=data); r = t.getresponse(); r.read()
assert r.status == 200, r.status
c.request("GET", "/v1/objects/eb/obj"); r = c.getresponse(); r.read()
loc = urllib.parse.urlsplit(r.getheader("location")) if r.status == 307 else u
t = http.client.HTTPConnection(loc.hostname, loc.port, timeout=60)
def run(q):
    t0 = time.monotonic()
    for _ in range(n):
        t.request("GET", "/v1/objects/eb/obj" + q); r = t.getresponse(); b = r.read()
        assert r.status == 200 and b == data, (r.status, len(b))
    return n / (time.monotonic() - t0)  # MiB/s
run("?etl=ident"); run("?etl=identh")  # start the workers
plain, etl, etlh = [], [], []
for i in range(rounds):
    plain.append(run("")); etl.append(run("?etl=ident")); etlh.append(run("?etl=identh"))
    print("round %d: plain %.1f MiB/s, etl stdio %.1f MiB/s, etl http %.1f MiB/s"
          % (i + 1, plain[-1], etl[-1], etlh[-1]))
mp, me, mh = statistics.median(plain), statistics.median(etl), statistics.median(etlh)
print("median: plain %.1f MiB/s, etl (stdio, identity, Python) %.1f MiB/s, ratio %.2f" % (mp, me, me / mp))
print("median: plain %.1f MiB/s, etl (http, identity, Python) %.1f MiB/s, ratio %.2f" % (mp, mh, mh / mp))
PY

[ "${OFFLINE:-1}" = 0 ] && exit 0
# --- offline: etl bucket on 3 targets vs plain GETs + the transform on a client ---
mkdir -p "$TMP/off"
start_cluster "$TMP/off" 3 --set store.fsync=never || die "no 3-target cluster"
create_bucket "$GW" osrc || die "no bucket"
create_bucket "$GW" odst || die "no bucket"
cat >"$TMP/shrink.py" <<'PY'
import zlib
def shrink(data, *_):
    zlib.compress(data, 9)  # the CPU of a decode
    return data[::4]        # a resize: a quarter of the bytes
if __name__ == "__main__":
    from aisd.etl import serve
    serve(shrink)
PY
chmod 644 "$TMP/shrink.py"
"$BUILD/aisctl" -e "$GW" etl init shrink --cmd "python3 $TMP/shrink.py" --workers 1 --timeout 60s \
	"PYTHONPATH=$ROOT/tools/python" >/dev/null || die "etl init failed"
PYTHONPATH="$TMP:$ROOT/tools/python" python3 - "$GW" "$NOBJ" "$OSIZE" "$BUILD/aisctl" <<'PY'
import http.client, json, multiprocessing, os, subprocess, sys, time, urllib.parse
from shrink import shrink
gw, nobj, osize, ctl = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def req(method, path, body=None):
    u = urllib.parse.urlsplit(gw)
    for _ in range(3):
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
        c.request(method, path, body=body)
        r = c.getresponse(); b = r.read(); c.close()
        if r.status != 307:
            return r.status, b
        u = urllib.parse.urlsplit(r.getheader("location"))
        path = u.path + ("?" + u.query if u.query else "")
    return r.status, b

names = ["o%05d.bin" % i for i in range(nobj)]
for n in names:
    st, _ = req("PUT", "/v1/objects/osrc/" + n, os.urandom(osize))
    assert st == 200, st
out = subprocess.run([ctl, "-e", gw, "etl", "bucket", "shrink", "osrc", "odst"], capture_output=True, text=True)
t0 = time.monotonic()
w = out.stdout.split()
rid = w[w.index("job") + 1]
while True:
    st, b = req("GET", "/v1/jobs?id=" + rid)
    run = (json.loads(b).get("runs") or [{}])[0]
    if run.get("state") not in (None, "running"):
        break
    time.sleep(0.05)
dt_off = time.monotonic() - t0
assert run.get("state") == "done", run

def client(n):
    st, b = req("GET", "/v1/objects/osrc/" + n)
    assert st == 200
    return len(b), len(shrink(b))

t0 = time.monotonic()
with multiprocessing.Pool(3) as p:
    res = p.map(client, names)
dt_cli = time.monotonic() - t0
got = sum(r[0] for r in res)
print("offline (etl bucket, 3 targets): %d objects of %d KiB in %.2f s: %.1f objects/s, 0 bytes to the client"
      % (nobj, osize >> 10, dt_off, nobj / dt_off))
print("client (plain GET + transform, 3 processes): %.2f s: %.1f objects/s, %.1f MiB to the client"
      % (dt_cli, nobj / dt_cli, got / 1048576))
print("offline / client objects/s: %.2f" % (dt_cli / dt_off))
PY
