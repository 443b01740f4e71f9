#!/usr/bin/env bash
# auth.sh - what access control costs a gateway: 1 gateway + 1 target, GETs
# of 1 KiB objects answered with 307s only (aisloader --redirects-only, so
# the gateway's work alone is measured), with auth off, then with
# auth.enabled and cluster.secret (each request carries a bearer token, each
# 307 a signed Location); ROUNDS rounds (default 3) of DUR seconds (5)
# alternating, medians of redirects/s and of the gateway's CPU time per
# redirect, and the ratio on/off. Results in $BUILD/bench-auth.md.
#
#   tools/bench/auth.sh          (BUILD, ROUNDS, DUR, KEEP=1 keep the temp dir)
#
# Exit status: 0 when every run worked, 1 otherwise.
set -u

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
AISD=$BUILD/aisd
die() { echo "auth-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$AISD" ] && [ -x "$BUILD/aisloader" ] && [ -x "$BUILD/aisctl" ] || die "build first (make BUILD=$BUILD)"
[ -r /proc/self/stat ] || die "/proc needed (gateway CPU time)"
TCK=$(getconf CLK_TCK) || die "getconf CLK_TCK failed"
bench_setup auth-bench

( umask 077; echo "bench-token-secret-$RANDOM$RANDOM" >"$TMP/auth.secret"; echo "bench-cluster-secret-$RANDOM$RANDOM" >"$TMP/cluster.secret" )
TOKEN=$("$BUILD/aisctl" auth token create --user bench --admin --ttl 1h --secret-file "$TMP/auth.secret") ||
	die "aisctl auth token create failed"

# run MODE ROUND: a fresh cluster with auth MODE (on|off), one measurement.
run() {
	local mode=$1 d=$TMP/$1.$2 args=() line ops t0 t1
	if [ "$mode" = on ]; then
		args=(--set auth.enabled=on --set "auth.secret_file=$TMP/auth.secret" --set "cluster.secret_file=$TMP/cluster.secret")
		export AIS_AUTHN_TOKEN=$TOKEN
	else
		unset AIS_AUTHN_TOKEN
	fi
	start_cluster "$d" 1 "${args[@]}" && create_bucket "$GW" bench || { STATUS=1; stop_all; return; }
	run_loader "prefill/$mode" --url "$GW/v1/objects/bench" --op put --size 1K --objects 1000 --seq --count 1000 \
		--workers 16 >/dev/null
	t0=$(cpu_ticks "$GWPID")
	line=$(run_loader "$mode" --url "$GW/v1/objects/bench" --op get --size 1K --objects 1000 --random \
		--workers 32 --duration "$DUR" --redirects-only)
	t1=$(cpu_ticks "$GWPID")
	ops=$(json_field ops <<<"$line")
	json_field ops_per_s <<<"$line" >>"$TMP/res.$mode"
	awk -v d=$((t1 - t0)) -v t="$TCK" -v n="${ops:-0}" 'BEGIN { if (n > 0) printf "%.2f\n", d / t / n * 1e6 }' \
		>>"$TMP/cpu.$mode"
	echo "  auth $mode: $(tail -n 1 "$TMP/res.$mode") redirects/s, gateway $(tail -n 1 "$TMP/cpu.$mode") us CPU per redirect" >&2
	stop_all
}

for r in $(seq "$ROUNDS"); do
	run off "$r"
	run on "$r"
done
unset AIS_AUTHN_TOKEN
out=$BUILD/bench-auth.md
{
	echo "| auth | redirects/s (median) | gateway CPU per redirect (median) |"
	echo "|---|---|---|"
	for m in off on; do
		echo "| $m | $(median <"$TMP/res.$m") | $(median <"$TMP/cpu.$m") us |"
	done
	echo
	echo "on/off: redirects/s $(ratio "$(median <"$TMP/res.on")" "$(median <"$TMP/res.off")"), CPU per redirect $(ratio "$(median <"$TMP/cpu.on")" "$(median <"$TMP/cpu.off")") ($ROUNDS rounds of ${DUR}s, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
} | tee "$out"
exit "$STATUS"
