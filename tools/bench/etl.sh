#!/usr/bin/env bash
# etl.sh - inline transform cost: GET of a 1 MiB object through an identity
# transformer (a Python worker, aisd.etl.serve, stdio protocol) vs a plain
# GET, on a cluster of 1 gateway + 1 target on this host. Each round times
# N sequential GETs of each kind on one keep-alive connection to the target
# (the gateway's 307 is resolved once), workers warm; prints MiB/s per
# round, the medians and their ratio (etl / plain).
#
# usage: BUILD=build tools/bench/etl.sh      (make bench-etl)
#   ROUNDS (default 5), N GETs per round and kind (default 100),
#   WORKERS (default 1), KEEP=1 keeps the temp dir.
set -euo pipefail
BENCH_NAME=etl
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5} N=${N:-100} WORKERS=${WORKERS:-1}
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
run("?etl=ident")  # start the workers
plain, etl = [], []
for i in range(rounds):
    plain.append(run("")); etl.append(run("?etl=ident"))
    print("round %d: plain %.1f MiB/s, etl %.1f MiB/s" % (i + 1, plain[-1], etl[-1]))
mp, me = statistics.median(plain), statistics.median(etl)
print("median: plain %.1f MiB/s, etl (stdio, identity, Python) %.1f MiB/s, ratio %.2f" % (mp, me, me / mp))
PY
