#!/usr/bin/env bash
# s3.sh - what S3 through a gateway costs against the native API straight to
# the target: 1 gateway + 1 target on free loopback ports under a mktemp -d
# dir (s3.auth off: the clients here do not sign, so SigV4 costs are not in
# these numbers), one 10 KiB and one 64 MiB object PUT with S3 through the
# gateway, then ROUNDS alternating rounds, with wrk, of:
#   a. native GET 10 KiB   /v1/objects/B/K on the target   (64 connections)
#   b. S3 GET 10 KiB       /B/K on the gateway (forwarded to the target as a
#                          stream, never redirected)
#   c. native GET 64 MiB   (4 connections), bytes/s
#   d. S3 GET 64 MiB       through the gateway, bytes/s
# and prints the medians and the ratios b/a (goal >= 0.7) and d/c (goal
# >= 0.85). Every process is stopped by its PID and the temp dir removed on
# exit (KEEP=1 keeps it); every run is bounded in time.
#
# Environment: BUILD (default build), ROUNDS (3), DUR (seconds per
# measurement, 5), KEEP. Exit status 0 when every measurement ran.
set -u

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
AISD=$BUILD/aisd

die() { echo "s3-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$AISD" ] || die "no $AISD (run make)"
command -v wrk >/dev/null || die "wrk is needed (tools/install-deps.sh)"

bench_setup s3-bench
start_cluster "$TMP" 1 --set s3.auth=off || die "the cluster did not start (see $TMP)"
TG=${TGT[1]}
curl -sf -X PUT "$GW/bench" >/dev/null || die "S3 CreateBucket failed"
head -c 10240 /dev/urandom >"$TMP/small"
head -c $((64 << 20)) /dev/urandom >"$TMP/large"
curl -sf -T "$TMP/small" "$GW/bench/small" >/dev/null || die "S3 PUT 10 KiB failed"
curl -sf -T "$TMP/large" "$GW/bench/large" >/dev/null || die "S3 PUT 64 MiB failed"

# run URL CONNS: prints "requests/s bytes/s" of one wrk run.
run() {
	timeout $((DUR + 60)) wrk -t2 -c"$2" -d"${DUR}s" --timeout 30s "$1" 2>&1 | awk '
		/^Requests\/sec:/ {r = $2}
		/^Transfer\/sec:/ {v = $2; u = substr(v, length(v) - 1); n = v + 0
			m = u == "GB" ? 2^30 : u == "MB" ? 2^20 : u == "KB" ? 2^10 : 1; b = n * m}
		/Non-2xx|Socket errors/ {bad = 1}
		END {if (bad || r == "") print "failed"; else printf "%s %.0f\n", r, b}'
}

fail=0
for ((i = 1; i <= ROUNDS; i++)); do
	for m in a b c d; do
		case $m in
		a) out=$(run "$TG/v1/objects/bench/small" 64) ;;
		b) out=$(run "$GW/bench/small" 64) ;;
		c) out=$(run "$TG/v1/objects/bench/large" 4) ;;
		d) out=$(run "$GW/bench/large" 4) ;;
		esac
		[ "$out" = failed ] && fail=1
		printf '  round %d %s %s\n' "$i" "$m" "$out" >&2
		case $m in
		a | b) echo "${out%% *}" >>"$TMP/$m" ;;
		c | d) echo "${out##* }" >>"$TMP/$m" ;;
		esac
	done
done
A=$(median <"$TMP/a") B=$(median <"$TMP/b") C=$(median <"$TMP/c") D=$(median <"$TMP/d")
ratio() { awk -v x="$1" -v y="$2" 'BEGIN {if (y + 0 > 0) printf "%.2f", x / y; else print "n/a"}'; }
printf '\nS3 through a gateway vs native straight to the target (medians of %d rounds, %ds each)\n' "$ROUNDS" "$DUR"
printf '| measurement | native direct | S3 via gateway | ratio | goal |\n|---|---|---|---|---|\n'
printf '| GET 10 KiB, req/s (64 conns) | %s | %s | %s | >= 0.7 |\n' "$A" "$B" "$(ratio "$B" "$A")"
printf '| GET 64 MiB, MiB/s (4 conns) | %s | %s | %s | >= 0.85 |\n' \
	"$(awk -v x="$C" 'BEGIN {printf "%.0f", x / 2^20}')" "$(awk -v x="$D" 'BEGIN {printf "%.0f", x / 2^20}')" \
	"$(ratio "$D" "$C")"
exit $fail
