#!/usr/bin/env bash
# shellcheck disable=SC2317  # cleanup runs from a trap
# getbatch.sh - GetBatch vs one GET per object (make bench-ml). Starts 1
# gateway + 3 targets on free loopback ports under a mktemp -d dir, then runs
# tools/bench/getbatch.py against the gateway: 10 KiB and 100 KiB objects,
# batches of 64 and 256, ROUNDS alternating rounds of DUR seconds each; prints
# the medians (objects/s and the ratio; goals >= 10x at 10 KiB, >= 2x at 100
# KiB) and writes them as markdown to $BUILD/bench-getbatch.md. Every process
# is stopped by its PID and the temp dir removed on exit (KEEP=1 keeps it).
#
# Environment: BUILD (default build), ROUNDS (3), DUR (5), OBJECTS (2048),
# SIZES (10K,100K), BATCHES (64,256), KEEP.
set -u

BUILD=${BUILD:-build}
AISD=$BUILD/aisd
die() { echo "getbatch-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$AISD" ] || die "$AISD not built (make BUILD=$BUILD)"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/aisd-gbbench.XXXXXX") || die "mktemp failed"
PIDS=()

cleanup() {
	local p
	for p in "${PIDS[@]}"; do stop_pid "$p"; done
	if [ -n "${KEEP:-}" ]; then echo "getbatch-bench: kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_file() {
	for _ in $(seq $(($2 * 10))); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

mkdir -p "$TMP/gw"
"$AISD" --role gateway --port 0 --port-file "$TMP/gw/port" --dir "$TMP/gw" >"$TMP/gw/aisd.log" 2>&1 &
PIDS+=($!)
wait_file "$TMP/gw/port" 10 || die "gateway did not start: $(tail -n 5 "$TMP/gw/aisd.log")"
GW=http://127.0.0.1:$(cat "$TMP/gw/port")
for i in 1 2 3; do
	mkdir -p "$TMP/t$i/mp"
	"$AISD" --port 0 --port-file "$TMP/t$i/port" -m "$TMP/t$i/mp" --join "$GW" \
		--set store.fsync=never >"$TMP/t$i/aisd.log" 2>&1 &
	PIDS+=($!)
	wait_file "$TMP/t$i/port" 10 || die "target $i did not start: $(tail -n 5 "$TMP/t$i/aisd.log")"
done
for _ in $(seq 100); do
	[ "$(curl -fsS --max-time 2 "$GW/v1/cluster?what=smap" | grep -o '"role":' | wc -l)" -ge 4 ] && break
	sleep 0.1
done

echo "getbatch-bench: 1 gateway + 3 targets at $GW" >&2
timeout 1800 python3 "$(dirname "$0")/getbatch.py" "$GW" "$BUILD/bench-getbatch.md" \
	--rounds "${ROUNDS:-3}" --dur "${DUR:-5}" --objects "${OBJECTS:-2048}" \
	--sizes "${SIZES:-10K,100K}" --batches "${BATCHES:-64,256}"
