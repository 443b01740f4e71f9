#!/usr/bin/env bash
# getbatch.sh - GetBatch vs one GET per object (make bench-ml). Starts 1
# gateway + 3 targets on free loopback ports under a mktemp -d dir, then runs
# tools/bench/getbatch.py against the gateway: 10 KiB and 100 KiB objects,
# batches of 64 and 256, ROUNDS alternating rounds of DUR seconds each; prints
# the medians (objects/s and the ratio; goals >= 10x at 10 KiB, >= 2x at 100
# KiB) and writes them as markdown to $BUILD/bench-getbatch.md; with gnuplot,
# draws the speedups against the batch size ($BUILD/bench-getbatch.dat,
# getbatch.gp) to $PLOTDIR/getbatch-speedup.png. Every process is stopped by
# its PID and the temp dir removed on exit (KEEP=1 keeps it).
#
# Environment: BUILD (default build), ROUNDS (3), DUR (5), OBJECTS (2048),
# SIZES (10K,100K), BATCHES (64,256), PLOTDIR ($BUILD; make bench-plots:
# benchmarks), KEEP.
set -u

BUILD=${BUILD:-build}
AISD=$BUILD/aisd
die() { echo "getbatch-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$AISD" ] || die "$AISD not built (make BUILD=$BUILD)"
bench_setup getbatch-bench
start_cluster "$TMP" 3 || die "the cluster did not start"

echo "getbatch-bench: 1 gateway + 3 targets at $GW" >&2
timeout 1800 python3 "$(dirname "$0")/getbatch.py" "$GW" "$BUILD/bench-getbatch.md" \
	--rounds "${ROUNDS:-3}" --dur "${DUR:-5}" --objects "${OBJECTS:-2048}" \
	--sizes "${SIZES:-10K,100K}" --batches "${BATCHES:-64,256}" || die "the benchmark failed"
if ! command -v gnuplot >/dev/null; then
	echo "getbatch-bench: no curve drawn: gnuplot missing (tools/install-deps.sh --bench installs gnuplot-nox)" >&2
	exit 0
fi
mkdir -p "${PLOTDIR:-$BUILD}"
gnuplot -e "dat='$BUILD/bench-getbatch.dat'; out='${PLOTDIR:-$BUILD}/getbatch-speedup.png'" \
	"$(dirname "$0")/getbatch.gp" || die "gnuplot failed"
echo "getbatch-bench: ${PLOTDIR:-$BUILD}/getbatch-speedup.png" >&2
