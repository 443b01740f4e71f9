#!/usr/bin/env bash
# ec.sh - what erasure coding costs against copies, on the same targets:
# 1 gateway + 6 targets (loopback, free ports, a mktemp -d dir,
# store.fsync=never), a bucket with ec 4+2 (the owner keeps a whole copy),
# one with ec 4+2 and ec.whole_copy=false (slices only) and one with mirror
# copies=2, then with aisloader (following the gateway's 307s):
#   1. PUT of NOBJ objects of SIZE into each (MiB/s);
#   2. GET of them for DUR seconds, 4 workers (MiB/s), every body checked;
#   3. the disk space used per byte stored (du of the targets' mountpaths
#      before and after the first PUT of each bucket, over the bytes written);
#   4. kill -9 of 2 targets, the map drops them, GET of the EC buckets again
#      (reads decode from slices; with copies=2 some objects are gone);
#   5. encode throughput on one core: aisd's stripe loop against ISA-L's
#      raw ec_encode_data on the same stripes ($BUILD/ecenc, 256 MiB).
# PUT and GET runs are repeated REPS times (PUTs overwrite the same names)
# and the medians reported. Prints a table (also written as markdown to
# $BUILD/bench-ec.md). Every
# process is stopped by its PID and the temp dir removed on exit (KEEP=1
# keeps it); every run is bounded in time.
#
# Environment: BUILD (default build), NOBJ (24), SIZE (64M), DUR (5), REPS (3), KEEP.
# Exit status: 0 when every step ran without errors, 1 otherwise.
set -u

BUILD=${BUILD:-build}
NOBJ=${NOBJ:-24}
SIZE=${SIZE:-64M}
DUR=${DUR:-5}
REPS=${REPS:-3}
LOADER=$BUILD/aisloader
AISD=$BUILD/aisd

die() { echo "ec-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$LOADER" ] && [ -x "$AISD" ] && [ -x "$BUILD/ecenc" ] ||
	die "$AISD, $LOADER or $BUILD/ecenc not built (make BUILD=$BUILD all $BUILD/ecenc)"

bench_setup ec-bench
start_cluster "$TMP" 6 --set store.fsync=never --set cluster.keepalive=300ms --set cluster.grace=1500ms ||
	die "the cluster did not start (see $TMP)"
props() {
	curl -sfL -o /dev/null --max-time 10 -X PATCH "$GW/v1/buckets/$1" -d "{\"action\":\"set-bprops\",\"value\":$2}" ||
		die "set-bprops $1 $2 failed"
}
create_bucket "$GW" ec || die "create ec"
create_bucket "$GW" m2 || die "create m2"
create_bucket "$GW" es || die "create es"
props ec '{"ec":{"enabled":true,"data_slices":4,"parity_slices":2}}'
props es '{"ec":{"enabled":true,"data_slices":4,"parity_slices":2,"whole_copy":false}}'
props m2 '{"mirror":{"enabled":true,"copies":2}}'
sleep 1

# mibps JSON: the MiB/s of one aisloader run ("failed" on errors)
mibps() {
	awk '{m = $0; sub(/.*"mibps":/, "", m); sub(/[,}].*/, "", m)
	      e = $0; sub(/.*"errors":/, "", e); sub(/[,}].*/, "", e)
	      if (e + 0 > 0 || m == $0) print "failed"; else print m}
	     END {if (NR == 0) print "failed"}'
}
du_bytes() { du -sb "$TMP"/t*/mp* 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }
bytes=$(numfmt --from=iec "$SIZE")

# med LABEL N CMD...: the median MiB/s of N runs of a loader command, with
# the values in $TMP/runs.LABEL before them ("failed" if any failed)
med() {
	local label=$1 n=$2 r v all
	shift 2
	all=$(cat "$TMP/runs.$label" 2>/dev/null)
	for r in $(seq "$n"); do
		v=$(run_loader "$label ($r)" "$@" | mibps)
		[ "$v" = failed ] && { echo failed; return; }
		all="$all $v"
	done
	echo "$all" >"$TMP/runs.$label"
	echo "  $label: $all MiB/s" >&2
	tr ' ' '\n' <<<"$all" | grep . | median
}

# the first PUT of each bucket, with the space it took (before the later
# runs overwrite any object: the space of one version of each)
declare -A PUT GET SPACE DEG
for b in m2 ec es; do
	d0=$(du_bytes)
	PUT[$b]=$(med "put $b" 1 --url "$GW/v1/objects/$b" --op put --size "$SIZE" --objects "$NOBJ" \
		--count "$NOBJ" --seq --workers 2 --duration 0)
	d1=$(du_bytes)
	SPACE[$b]=$(awk -v d=$((d1 - d0)) -v n="$NOBJ" -v s="$bytes" 'BEGIN {printf "%.2f", d / (n * s)}')
done
for b in m2 ec es; do
	[ "${PUT[$b]}" = failed ] ||
		PUT[$b]=$(med "put $b" $((REPS - 1)) --url "$GW/v1/objects/$b" --op put --size "$SIZE" --objects "$NOBJ" \
			--count "$NOBJ" --seq --workers 2 --duration 0)
	GET[$b]=$(med "get $b" "$REPS" --url "$GW/v1/objects/$b" --op get --size "$SIZE" --objects "$NOBJ" \
		--workers 4 --duration "$DUR" --verify)
	echo "  $b: put ${PUT[$b]} MiB/s, get ${GET[$b]} MiB/s, ${SPACE[$b]} bytes on disk per byte" >&2
done

# two targets down
for i in 1 2; do
	kill -9 "${TGTPID[$i]}" 2>/dev/null
	wait "${TGTPID[$i]}" 2>/dev/null # (reaped here: no job notice)
done
for _ in $(seq 200); do
	[ "$(smap_count "$GW")" -le 5 ] && break
	sleep 0.1
done
for b in ec es; do
	DEG[$b]=$(med "get $b degraded" "$REPS" --url "$GW/v1/objects/$b" --op get --size "$SIZE" --objects "$NOBJ" \
		--workers 4 --duration "$DUR" --verify)
done
ENC=$("$BUILD/ecenc" 4 2 256 7) || { STATUS=1; ENC=""; }
ENC_AISD=$(sed -n 's/.*"aisd_mibps":\([0-9]*\).*/\1/p' <<<"$ENC")
ENC_RAW=$(sed -n 's/.*"raw_mibps":\([0-9]*\).*/\1/p' <<<"$ENC")

{
	printf '\nEC 4+2 (with the whole copy / slices only) vs mirror copies=2 on 6 targets, %s objects of %s, medians of %s runs (load average %s)\n' \
		"$NOBJ" "$SIZE" "$REPS" "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf '| measurement | copies=2 | EC whole copy | ratio | EC slices only | ratio | goal |\n|---|---|---|---|---|---|---|\n'
	for k in PUT GET; do
		declare -n v=$k
		printf '| %s, MiB/s | %s | %s | %s | %s | %s | %s |\n' "$k" "${v[m2]}" "${v[ec]}" "$(ratio "${v[ec]}" "${v[m2]}")" \
			"${v[es]}" "$(ratio "${v[es]}" "${v[m2]}")" "$([ $k = PUT ] && echo '>= 1.0' || echo '>= 0.9')"
	done
	printf '| GET with 2 targets down, MiB/s (ratio: of healthy) | | %s | %s | %s | %s | >= 0.5 |\n' "${DEG[ec]}" \
		"$(ratio "${DEG[ec]}" "${GET[ec]}")" "${DEG[es]}" "$(ratio "${DEG[es]}" "${GET[es]}")"
	printf '| disk bytes per byte stored | %s | %s | | %s | | 1.5 without a whole copy |\n' "${SPACE[m2]}" \
		"${SPACE[ec]}" "${SPACE[es]}"
	printf '| encode on one core, MiB/s (ISA-L raw / aisd) | %s | %s | %s | | | >= 0.8 |\n' "${ENC_RAW:-n/a}" \
		"${ENC_AISD:-n/a}" "$(ratio "${ENC_AISD:-n/a}" "${ENC_RAW:-n/a}")"
} | tee "$BUILD/bench-ec.md"
for v in "${PUT[@]}" "${GET[@]}" "${DEG[@]}"; do [ "$v" = failed ] && STATUS=1; done
exit "$STATUS"
