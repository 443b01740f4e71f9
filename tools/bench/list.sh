#!/usr/bin/env bash
# list.sh - `make bench-list`: how fast listing pages through a big bucket.
#
# Starts a target (store.fsync=never: this measures listing, not PUTs),
# creates N empty objects (default 1,000,000; N=... to change) with
# aisloader, then lists the whole bucket in pages of 10,000 through the
# native API, three times, and prints the median time per page, the
# slowest page and the total. Everything lives in a temp dir removed at
# the end; the daemon is stopped by PID.
set -euo pipefail

BUILD=${BUILD:-build}
N=${N:-1000000}
PAGE=${PAGE:-10000}
tmp=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

"$BUILD/aisd" --port 0 --port-file "$tmp/port" -m "$tmp/mp1" -m "$tmp/mp2" \
	--set store.fsync=never --set log.file="$tmp/aisd.log" &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
ep=http://127.0.0.1:$(cat "$tmp/port")
curl -fsS -X POST "$ep/v1/buckets/big" -d '{"action":"create-bck"}'

echo "list: creating $N objects..."
t0=$(date +%s.%N)
"$BUILD/aisloader" --url "$ep/v1/objects/big" --op put --size 0 --objects "$N" --seq \
	--count "$N" --duration 0 --workers 32 >/dev/null 2>"$tmp/load.txt" || { cat "$tmp/load.txt"; exit 1; }
t1=$(date +%s.%N)
echo "list: created $N objects in $(echo "$t1 - $t0" | bc) s"

/usr/bin/env python3 - "$ep" "$N" "$PAGE" <<'PY'
import http.client, json, sys, time, statistics, urllib.parse
ep, n, page = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
u = urllib.parse.urlparse(ep)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
totals, pages = [], []
for rnd in range(3):
    token, got, t0 = "", 0, time.perf_counter()
    while True:
        body = json.dumps({"action": "list", "value": {"pagesize": page, "continuation_token": token}})
        s = time.perf_counter()
        c.request("GET", "/v1/buckets/big", body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse(); data = r.read()
        pages.append(time.perf_counter() - s)
        assert r.status == 200, (r.status, data[:200])
        doc = json.loads(data)
        got += len(doc["entries"])
        token = doc["continuation_token"]
        if not token:
            break
    totals.append(time.perf_counter() - t0)
    assert got == n, (got, n)
print(f"list: {n} objects, pages of {page}: median page {statistics.median(pages)*1000:.1f} ms, "
      f"slowest {max(pages)*1000:.1f} ms, whole bucket median {statistics.median(totals):.2f} s "
      f"({n/statistics.median(totals):,.0f} names/s, 3 rounds)")
PY
