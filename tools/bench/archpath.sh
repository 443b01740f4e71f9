#!/usr/bin/env bash
# archpath.sh - files inside shards vs plain objects (make bench-ml). Starts
# one target on a free loopback port under a mktemp -d dir; for each SIZE it
# PUTs a tar shard of 1,000 members of SIZE bytes (Python tarfile) and a
# plain object of SIZE bytes, then runs ROUNDS alternating aisloader rounds
# of DUR seconds, 64 connections each: (a) GET of the plain object and (b)
# GET ?archpath= of a member (served as a byte range of the shard after a
# tar index lookup). Prints the medians (GET/s and the ratio b/a, goal >=
# 0.9) and writes them as markdown to $BUILD/bench-archpath.md. Every process
# is stopped by its PID and the temp dir removed on exit (KEEP=1 keeps it).
#
# Environment: BUILD (default build), ROUNDS (3), DUR (5), SIZES ("10K
# 100K"), THREADS (aisloader threads, 1), KEEP.
set -u

BUILD=${BUILD:-build}
AISD=$BUILD/aisd
LOADER=$BUILD/aisloader
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
SIZES=${SIZES:-10K 100K}
die() { echo "archpath-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$AISD" ] || die "$AISD not built (make BUILD=$BUILD)"
[ -x "$LOADER" ] || die "$LOADER not built (make BUILD=$BUILD)"
bench_setup archpath-bench

mkdir -p "$TMP/t/mp"
"$AISD" --port 0 --port-file "$TMP/t/port" -m "$TMP/t/mp" --set store.fsync=never >"$TMP/t/aisd.log" 2>&1 &
PIDS+=($!)
wait_file "$TMP/t/port" 10 || die "target did not start: $(tail -n 5 "$TMP/t/aisd.log")"
T=http://127.0.0.1:$(cat "$TMP/t/port")
curl -fsS -X POST "$T/v1/buckets/ap" -d '{"action":"create-bck"}' >/dev/null || die "create-bck failed"

# run NAME: GET/s of aisloader over one name (object or object?archpath=)
run() {
	local line
	line=$(timeout 300 "$LOADER" --url "$T/v1/objects/ap" --name "$1" --op get --workers 64 \
		--threads "${THREADS:-1}" --duration "$DUR" --json 2>"$TMP/loader.err") || {
		STATUS=1
		echo "archpath-bench: aisloader failed for $1: $(grep -v '^ ' "$TMP/loader.err" | head -n 3)" >&2
	}
	json_field ops_per_s <<<"$line"
}

{
	echo "| size | plain object GET/s | archpath GET/s | ratio | goal |"
	echo "|---|---|---|---|---|"
} >"$TMP/table"
for size in $SIZES; do
	python3 - "$TMP/shard-$size.tar" "$TMP/plain-$size" "$size" <<'PY' || die "making the shard failed"
import io, random, sys, tarfile
out, plain, size = sys.argv[1], sys.argv[2], sys.argv[3]
n = int(size[:-1]) * {"K": 1024, "M": 1 << 20}[size[-1]] if size[-1] in "KM" else int(size)
r = random.Random(1)
with tarfile.open(out, "w") as tf:
    for i in range(1000):
        d = r.randbytes(n)
        ti = tarfile.TarInfo("%06d.jpg" % i)
        ti.size = n
        tf.addfile(ti, io.BytesIO(d))
open(plain, "wb").write(r.randbytes(n))
PY
	curl -fsS -T "$TMP/shard-$size.tar" "$T/v1/objects/ap/shard-$size.tar" >/dev/null || die "PUT shard failed"
	curl -fsS -T "$TMP/plain-$size" "$T/v1/objects/ap/plain-$size" >/dev/null || die "PUT plain failed"
	got=$(curl -fsS "$T/v1/objects/ap/shard-$size.tar?archpath=000500.jpg" | wc -c)
	[ "$got" = "$(stat -c %s "$TMP/plain-$size")" ] || die "archpath read $got bytes"
	: >"$TMP/res.plain"
	: >"$TMP/res.arch"
	for r in $(seq "$ROUNDS"); do
		a=$(run "plain-$size")
		b=$(run "shard-$size.tar?archpath=000500.jpg")
		echo "  $size round $r: plain $a GET/s, archpath $b GET/s" >&2
		[ -n "$a" ] && echo "$a" >>"$TMP/res.plain"
		[ -n "$b" ] && echo "$b" >>"$TMP/res.arch"
	done
	a=$(median <"$TMP/res.plain")
	b=$(median <"$TMP/res.arch")
	ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "n/a" }')
	printf "| %s | %.0f | %.0f | %sx | >= 0.9x |\n" "$size" "$a" "$b" "$ratio" >>"$TMP/table"
done
cat "$TMP/table"
cp "$TMP/table" "$BUILD/bench-archpath.md"
exit $STATUS
