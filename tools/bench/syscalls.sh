#!/usr/bin/env bash
# syscalls.sh - system calls the gateway makes per forwarded S3 request:
# 1 gateway + 1 target on free loopback ports under a mktemp -d dir (s3.auth
# off: the forward is the same either way), strace -c -f attached to every
# thread of the gateway while aisloader --s3 sends N requests through it:
#   GET 10 KiB   N=NSMALL (16 workers, keep-alive), random of 200 objects
#   GET 64 MiB   N=NLARGE (1 worker)
#   PUT 64 MiB   N=NLARGE (1 worker, the one object written again)
# Prints, for each, the system calls per request (all of them, and those
# that take more than 2% of the calls, by name) and the gateway's CPU
# microseconds per request (without strace: a separate run of the same N).
# Every process is stopped by its PID and the temp dir removed on exit
# (KEEP=1 keeps it); every run is bounded in time.
#
# Environment: BUILD (default build), NSMALL (20000), NLARGE (16), KEEP.
# Exit status 0 when every run ran clean.
set -u

BUILD=${BUILD:-build}
NSMALL=${NSMALL:-20000}
NLARGE=${NLARGE:-16}
AISD=$BUILD/aisd
LOADER=$BUILD/aisloader

die() { echo "syscalls-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$AISD" ] && [ -x "$LOADER" ] || die "no $AISD or $LOADER (run make)"
command -v strace >/dev/null || die "no strace (tools/install-deps.sh installs it)"

bench_setup syscalls-bench
start_cluster "$TMP" 1 --set s3.auth=off || die "the cluster did not start (see $TMP)"
for b in small large; do
	create_bucket "$GW" "$b" || die "create bucket $b failed"
done

# load SIZE OBJECTS OP COUNT WORKERS: one bounded aisloader run through the gateway
load() {
	local b=small
	[ "$1" = 64M ] && b=large
	run_loader "$3 $1" --s3 x:x --url "$GW/$b" --op "$3" --size "$1" --objects "$2" --count "$4" \
		--workers "$5" --threads 1 --seq --duration 0 >/dev/null
}
load 10K 200 put 200 16
load 64M 1 put 1 1

# measure LABEL SIZE OBJECTS COUNT WORKERS OP: CPU per request, then the
# strace -c counts of the same run
measure() {
	local label=$1 size=$2 objs=$3 n=$4 w=$5 op=$6 t0 t1 sp out=$TMP/strace.$1
	load "$size" "$objs" "$op" "$n" "$w" # warm: connections, page cache
	t0=$(cpu_ticks "$GWPID")
	load "$size" "$objs" "$op" "$n" "$w"
	t1=$(cpu_ticks "$GWPID")
	strace -c -f -p "$GWPID" -o "$out" 2>"$TMP/strace.err" &
	sp=$!
	sleep 1 # (attached to every thread)
	load "$size" "$objs" "$op" "$n" "$w"
	kill -INT "$sp" 2>/dev/null
	wait "$sp"
	awk -v n="$n" -v label="$label" -v cpu=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" '
		# "% time, seconds, usecs/call, calls, [errors], syscall"
		$NF == "total" { total = $4 + 0 }
		$1 ~ /^[0-9.]+$/ && $NF != "total" { name[++k] = $NF; cnt[k] = $4 + 0 }
		END {
			if (!total) { print "| " label " | strace saw nothing | | |"; exit 1 }
			printf "| %s | %.1f | ", label, total / n
			sep = ""
			for (i = 1; i <= k; i++) if (cnt[i] > total * 0.02) { printf "%s%s %.1f", sep, name[i], cnt[i] / n; sep = ", " }
			printf " | %.1f |\n", cpu * 1e6 / hz / n }' "$out" || STATUS=1
}

printf '\nThe gateway per forwarded S3 request (strace -c -f, %s; load average %s)\n' "$("$AISD" --version 2>/dev/null | head -1)" \
	"$(cut -d' ' -f1-3 /proc/loadavg)"
printf '| request | system calls | of them (per request) | gateway CPU, us |\n|---|---|---|---|\n'
measure "GET 10 KiB" 10K 200 "$NSMALL" 16 get
measure "GET 64 MiB" 64M 1 "$NLARGE" 1 get
measure "PUT 64 MiB" 64M 1 "$NLARGE" 1 put
exit "$STATUS"
