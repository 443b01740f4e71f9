#!/usr/bin/env bash
# shellcheck disable=SC2317  # cleanup runs from a trap
# list.sh - `make bench-list`: how fast listing pages through a big bucket.
#
# Starts 1 gateway + TARGETS targets (default 3; TARGETS=0: one standalone
# target, listed directly) with store.fsync=never (this measures listing,
# not PUTs), creates N empty objects (default 1,000,000) with aisloader,
# then lists the whole bucket in pages of PAGE (10,000) through the native
# API (through the gateway: its fan-out to every target and merge), ROUNDS
# (3) times, and prints the median time per page, the slowest page and the
# median whole listing. Everything lives in a temp dir removed at the end
# (KEEP=1 keeps it); the daemons are stopped by PID.
#
# Environment: BUILD (build), N (1000000), PAGE (10000), TARGETS (3),
# ROUNDS (3), KEEP.
set -euo pipefail

BUILD=${BUILD:-build}
N=${N:-1000000}
PAGE=${PAGE:-10000}
TARGETS=${TARGETS:-3}
ROUNDS=${ROUNDS:-3}
AISD=$BUILD/aisd
LOADER=$BUILD/aisloader
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$AISD" ] || die "$AISD not built (make BUILD=$BUILD)"
[ -x "$LOADER" ] || die "$LOADER not built (make BUILD=$BUILD)"
bench_setup list

if [ "$TARGETS" = 0 ]; then
	mkdir -p "$TMP/t"
	"$AISD" --port 0 --port-file "$TMP/t/port" -m "$TMP/t/mp1" -m "$TMP/t/mp2" \
		--set store.fsync=never --set log.file="$TMP/t/aisd.log" &
	PIDS+=($!)
	wait_file "$TMP/t/port" 10 || die "the target did not start"
	ep=http://127.0.0.1:$(cat "$TMP/t/port")
	what="one target, directly"
else
	start_cluster "$TMP" "$TARGETS" || die "the cluster did not start"
	ep=$GW
	what="1 gateway + $TARGETS targets, through the gateway"
fi
create_bucket "$ep" big || die "cannot create the bucket"

echo "list: $what: creating $N objects..."
t0=$(date +%s.%N)
run_loader create --url "$ep/v1/objects/big" --op put --size 0 --objects "$N" --seq \
	--count "$N" --duration 0 --workers 32 >/dev/null
[ "$STATUS" = 0 ] || die "creating the objects failed"
t1=$(date +%s.%N)
echo "list: created $N objects in $(echo "$t1 - $t0" | bc) s"

/usr/bin/env python3 - "$ep" "$N" "$PAGE" "$ROUNDS" "$what" <<'PY'
import http.client, json, sys, time, statistics, urllib.parse
ep, n, page, rounds, what = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
u = urllib.parse.urlparse(ep)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
totals, pages = [], []
for rnd in range(rounds):
    token, got, last, t0 = "", 0, "", time.perf_counter()
    while True:
        body = json.dumps({"action": "list", "value": {"pagesize": page, "continuation_token": token}})
        s = time.perf_counter()
        c.request("GET", "/v1/buckets/big", body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse(); data = r.read()
        pages.append(time.perf_counter() - s)
        assert r.status == 200, (r.status, data[:200])
        doc = json.loads(data)
        for e in doc["entries"]:  # every name once, in order
            assert e["name"] > last, (e["name"], last)
            last = e["name"]
        got += len(doc["entries"])
        token = doc["continuation_token"]
        if not token:
            break
    totals.append(time.perf_counter() - t0)
    assert got == n, (got, n)
print(f"list: {what}: {n} objects, pages of {page}: median page {statistics.median(pages)*1000:.1f} ms, "
      f"slowest {max(pages)*1000:.1f} ms, whole bucket median {statistics.median(totals):.2f} s "
      f"({n/statistics.median(totals):,.0f} names/s, {rounds} rounds)")
PY
