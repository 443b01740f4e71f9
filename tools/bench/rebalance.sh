#!/usr/bin/env bash
# rebalance.sh - what moving data costs: on 1 gateway + 3 targets (loopback,
# free ports, a mktemp -d dir, store.fsync=never), prefilled with NOBJ
# objects of SIZE through the gateway:
#   1. loopback: GET of one 256 MiB object straight from a target with curl
#      (best of 3): the machine's loopback bytes/s, measured in this run;
#   2. foreground GET before: aisloader through the gateway (follows the
#      307s), DUR seconds, 16 workers, random keys;
#   3. a 4th target joins while the same GET load runs: the rebalance's
#      bytes moved / its duration, against (1) (goal >= 0.5), and the GET
#      rate during it against (2) (goal >= 0.7). The duration is the
#      targets' own: from the earliest start to the latest end of their
#      runs under the new map (the "start"/"end" of ?what=rebalance); the
#      wall time from launching the 4th target until this script sees
#      every run done (process start, join, and the polling of a loaded
#      gateway: 1-3 s on 2 cores) is shown on a second row;
#   3b. a 5th target joins without client load: the rebalance's own
#      speed against (1);
#   4. PUT of SIZE objects for DUR seconds into a bucket with 2 copies vs
#      one with 1 copy, on the 5 targets (goal >= 0.45).
# Prints a table (also written as markdown to $BUILD/bench-rebalance.md).
# During step 3 it samples, every 0.25 s, the bytes the rebalance moved and
# the GETs the gateway answered: $BUILD/bench-rebalance-timeline.dat, and
# with gnuplot (rebalance.gp) $PLOTDIR/rebalance-timeline.png (PLOTDIR
# default $BUILD; make bench-plots: benchmarks).
# Every process is stopped by its PID and the temp dir removed on exit
# (KEEP=1 keeps it); every run is bounded in time.
#
# The GET rate "during" is over the loader's DUR seconds; the table says
# what share of them the rebalance ran (its span / DUR): with a share under
# 1 the ratio is diluted by GETs after the rebalance ended (raise NOBJ or
# lower DUR).
#
# Environment: BUILD (default build), NOBJ (2000), SIZE (1M), DUR (5), KEEP,
# REB_ARGS (options given to every node, e.g. "--set rebalance.rate=100MiB"),
# API (native, the default, or s3: the GET load of steps 2 and 3 through
# the gateway's S3 API, SigV4 signed, which the gateway forwards instead of
# redirecting).
# Exit status: 0 when every step ran without errors, 1 otherwise.
set -u

BUILD=${BUILD:-build}
NOBJ=${NOBJ:-2000}
SIZE=${SIZE:-1M}
DUR=${DUR:-5}
LOADER=$BUILD/aisloader
AISD=$BUILD/aisd

die() { echo "rebalance-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$LOADER" ] || die "$LOADER not built (make BUILD=$BUILD)"
[ -x "$AISD" ] || die "$AISD not built (make BUILD=$BUILD)"
command -v curl >/dev/null || die "curl missing"

bench_setup rebalance-bench

smap_targets() { smap_count "$GW" '"role":"target","state":"active"'; }
smap_version() { curl -fsS --max-time 2 "$GW/v1/cluster?what=smap" | sed -n 's/.*"version":\([0-9]*\).*/\1/p'; }

# loader ARGS...: aisloader --json, bounded; prints its JSON line.
loader() { run_loader "aisloader $*" "$@"; }

# settled V: every target's rebalance run under map >= V is done.
settled() {
	curl -fsS --max-time 5 "$GW/v1/cluster?what=rebalance" >"$TMP/job.json" 2>/dev/null || return 1
	python3 - "$1" "$TMP/job.json" <<'PY'
import json, sys
v, d = int(sys.argv[1]), json.load(open(sys.argv[2]))
ok = d["state"] == "done" and all(t.get("state") == "done" and t.get("cmap_version", 0) >= v for t in d["targets"].values())
sys.exit(0 if ok else 1)
PY
}

# shellcheck disable=SC2206
NODEARGS=(${REB_ARGS:-})
API=${API:-native}
[ "$API" = s3 ] && NODEARGS+=(--set "s3.key=benchkey:benchsecret:bench:Bench User")
start_cluster "$TMP" 3 "${NODEARGS[@]}" || die "the cluster did not start"
for b in bench c1 c2; do
	curl -fsS -o /dev/null --max-time 10 -X POST "$GW/v1/buckets/$b" -d '{"action":"create-bck"}' || die "create $b"
done
curl -fsSL -o /dev/null --max-time 10 -X PATCH "$GW/v1/buckets/c2" \
	-d '{"action":"set-bprops","value":{"mirror":{"enabled":true,"copies":2}}}' || die "set-bprops c2"

echo "rebalance-bench: prefill $NOBJ x $SIZE" >&2
loader --url "$GW/v1/objects/bench" --op put --size "$SIZE" --objects "$NOBJ" --seq --count "$NOBJ" --workers 16 >/dev/null

# 1. loopback
head -c $((256 << 20)) /dev/zero >"$TMP/big"
curl -fsS -o /dev/null -X PUT -T "$TMP/big" -L "$GW/v1/objects/bench/big" || die "PUT big"
rm -f "$TMP/big"
LOOP=0
for _ in 1 2 3; do
	s=$(curl -fsSL -o /dev/null -w '%{speed_download}' "$GW/v1/objects/bench/big")
	LOOP=$(awk -v a="$LOOP" -v b="$s" 'BEGIN { print (b > a ? b : a) }')
done
curl -fsSL -o /dev/null -X DELETE "$GW/v1/objects/bench/big"

GETARGS=(--url "$GW/v1/objects/bench" --op get --size "$SIZE" --objects "$NOBJ" --random --workers 16)
[ "$API" = s3 ] && GETARGS=(--s3 benchkey:benchsecret --url "$GW/bench" --op get --size "$SIZE" --objects "$NOBJ"
	--random --workers 16)
# 2. GET before
BEFORE=$(loader "${GETARGS[@]}" --duration "$DUR" | json_field mibps)

# sample: one timeline line, "SECONDS MOVED_BYTES GATEWAY_GETS", since TS
sample() {
	local moved gets
	moved=$(curl -fsS --max-time 1 "$GW/v1/cluster?what=rebalance" 2>/dev/null |
		sed -n 's/.*"totals":{[^}]*"moved_bytes":\([0-9]*\).*/\1/p')
	gets=$(curl -fsS --max-time 1 "$GW/metrics" 2>/dev/null |
		awk '/^aisd_http_requests_total\{.*route="\/v1\/objects".*method="GET"/ { n += $NF } END { print n + 0 }')
	awk -v t0="$TS" -v t="$(date +%s.%N)" -v m="${moved:-0}" -v g="$gets" 'BEGIN { printf "%.2f %s %s\n", t - t0, m, g }'
}

# 3. join under load
V0=$(smap_version)
TS=$(date +%s.%N)
TL=$BUILD/bench-rebalance-timeline.dat
: >"$TL.raw"
(for _ in $(seq $((DUR * 4 + 8))); do sample >>"$TL.raw"; sleep 0.25; done) &
SPID=$!
sleep 1 # the timeline starts with a second of nothing
loader "${GETARGS[@]}" --duration "$DUR" >"$TMP/during.json" &
LPID=$!
T0=$(date +%s.%N)
start_target "$TMP" 4 "${NODEARGS[@]}" || die "target 4 did not start"
for _ in $(seq 100); do [ "$(smap_targets)" = 4 ] && break; sleep 0.1; done
V1=$(smap_version)
[ "$V1" -gt "$V0" ] || die "the 4th target is not in the map"
for _ in $(seq 6000); do settled "$V1" && break; sleep 0.1; done
T1=$(date +%s.%N)
settled "$V1" || { STATUS=1; echo "rebalance-bench: the rebalance did not finish" >&2; }
wait "$LPID"
wait "$SPID"
# the timeline: seconds, MiB moved so far, GETs per second over the last sample
awk -v size="$SIZE" -v dur="$DUR" 'BEGIN { print "# " size " objects, 16 GET workers for " dur " s from t=1"; print "# seconds, MiB moved, GETs per second" }
	NR > 1 && $1 > pt { printf "%.2f %.1f %.0f\n", $1, $2 / 1048576, ($3 - pg) / ($1 - pt) } { pt = $1; pg = $3 }' \
	"$TL.raw" >"$TL"
rm -f "$TL.raw"
if command -v gnuplot >/dev/null; then
	mkdir -p "${PLOTDIR:-$BUILD}"
	gnuplot -e "dat='$TL'; out='${PLOTDIR:-$BUILD}/rebalance-timeline.png'" "$(dirname "$0")/rebalance.gp" &&
		echo "rebalance-bench: ${PLOTDIR:-$BUILD}/rebalance-timeline.png" >&2
fi
DURING=$(json_field mibps <"$TMP/during.json")
# moved_span: the moved bytes of the runs in $TMP/job.json and their span
# (first start, last end)
moved_span() {
	python3 - "$TMP/job.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ts = [t for t in d["targets"].values() if t.get("start")]
span = (max(t["end"] for t in ts) - min(t["start"] for t in ts)) / 1e9 if ts else 0
print(d["totals"]["moved_bytes"], "%.3f" % span)
PY
}
read -r MOVED SPAN < <(moved_span)
WALL=$(awk -v t0="$T0" -v t1="$T1" 'BEGIN { printf "%.3f", t1 - t0 }')
REBAL=$(awk -v b="$MOVED" -v t="$SPAN" 'BEGIN { printf "%.0f", (t > 0 ? b / t : 0) }')
REBWALL=$(awk -v b="$MOVED" -v t="$WALL" 'BEGIN { printf "%.0f", b / t }')

# 3b. a 5th target joins, no client load: the rebalance's own speed
start_target "$TMP" 5 "${NODEARGS[@]}" || die "target 5 did not start"
for _ in $(seq 100); do [ "$(smap_targets)" = 5 ] && break; sleep 0.1; done
V2=$(smap_version)
[ "$V2" -gt "$V1" ] || die "the 5th target is not in the map"
for _ in $(seq 6000); do settled "$V2" && break; sleep 0.1; done
settled "$V2" || { STATUS=1; echo "rebalance-bench: the second rebalance did not finish" >&2; }
read -r MOVED5 SPAN5 < <(moved_span)
REBAL5=$(awk -v b="$MOVED5" -v t="$SPAN5" 'BEGIN { printf "%.0f", (t > 0 ? b / t : 0) }')

# 4. PUT with 2 copies vs 1
P1=$(loader --url "$GW/v1/objects/c1" --op put --size "$SIZE" --objects "$NOBJ" --random --workers 16 --duration "$DUR" | json_field mibps)
P2=$(loader --url "$GW/v1/objects/c2" --op put --size "$SIZE" --objects "$NOBJ" --random --workers 16 --duration "$DUR" | json_field mibps)

mib() { awk -v x="$1" 'BEGIN { printf "%.1f", x / 1048576 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
{
	echo "| measurement | value | ratio | goal |"
	echo "|---|---|---|---|"
	echo "| loopback GET, one 256 MiB object (best of 3) | $(mib "$LOOP") MiB/s | | |"
	echo "| rebalance after a 4th target joins: $(mib "$MOVED") MiB moved in $SPAN s (the targets' runs) | $(mib "$REBAL") MiB/s | $(ratio "$REBAL" "$LOOP") of loopback | >= 0.5 |"
	echo "| the same, wall time from launching the 4th target: $WALL s | $(mib "$REBWALL") MiB/s | $(ratio "$REBWALL" "$LOOP") of loopback | |"
	echo "| rebalance after a 5th target joins, no client load: $(mib "$MOVED5") MiB moved in $SPAN5 s | $(mib "$REBAL5") MiB/s | $(ratio "$REBAL5" "$LOOP") of loopback | >= 0.5 |"
	echo "| GET $SIZE through the gateway, before | $BEFORE MiB/s | | |"
	echo "| GET $SIZE through the gateway, during the rebalance (it ran $(awk -v s="$SPAN" -v d="$DUR" 'BEGIN { printf "%.2f", (s < d ? s : d) / d }') of the loader's $DUR s) | $DURING MiB/s | $(ratio "$DURING" "$BEFORE") of before | >= 0.7 |"
	echo "| PUT $SIZE, 1 copy | $P1 MiB/s | | |"
	echo "| PUT $SIZE, 2 copies | $P2 MiB/s | $(ratio "$P2" "$P1") of 1 copy | >= 0.45 |"
} | tee "$BUILD/bench-rebalance.md"
exit $STATUS
