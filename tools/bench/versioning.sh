#!/usr/bin/env bash
# versioning.sh - what S3 versioning costs: PUT and GET of 10 KiB and
# 64 MiB objects through S3 (aisloader --s3, SigV4 on) into a bucket whose
# versioning is Enabled against a plain bucket, side by side, on 1 gateway +
# 1 target on free loopback ports under a mktemp -d dir, ROUNDS alternating
# rounds. The PUTs overwrite existing keys (the objects are written first),
# so every versioned PUT keeps the previous version (src/target/olver.c rule
# 4: a copy of the current bytes through the object layer): the worst case;
# a PUT of a new key keeps nothing. Prints the medians and the ratios
# versioned/plain (goal: PUT >= 0.9x, which the copy of the previous
# version does not reach for overwrites). Every process is stopped by its
# PID and the temp dir (with every kept version) removed on exit (KEEP=1
# keeps it); every run is bounded in time.
#
# Environment: BUILD (default build), ROUNDS (3), DUR (seconds per
# measurement, 3), THREADS (aisloader threads, 2), KEEP. Exit status 0 when
# every measurement ran clean.
set -u

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-3}
THREADS=${THREADS:-2}
AISD=$BUILD/aisd
LOADER=$BUILD/aisloader
AK=benchkey SK=benchsecret

die() { echo "versioning-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$AISD" ] && [ -x "$LOADER" ] || die "no $AISD or $LOADER (run make)"

bench_setup versioning-bench
start_cluster "$TMP" 1 --set s3.auth=on --set "s3.key=$AK:$SK:bench:Bench User" ||
	die "the cluster did not start (see $TMP)"
for b in plain-s plain-l vers-s vers-l; do
	create_bucket "$GW" "$b" || die "create bucket $b failed"
done
for b in vers-s vers-l; do
	curl -sf -X PATCH -H 'Content-Type: application/json' \
		-d '{"action":"set-bprops","value":{"versioning":{"history":"enabled"}}}' "$GW/v1/buckets/$b" >/dev/null ||
		die "enabling versioning failed"
done

# load plain|vers SIZE WORKERS OBJECTS OP [ARGS]: prints "ops/s bytes/s" of
# one run (buckets KIND-s for 10K, KIND-l for 64M).
load() {
	local b=$1-s size=$2 workers=$3 objects=$4 op=$5
	[ "$size" = 64M ] && b=$1-l
	shift 5
	timeout $((DUR + 120)) "$LOADER" --s3 "$AK:$SK" --url "$GW/$b" --op "$op" --size "$size" --objects "$objects" \
		--workers "$workers" --threads "$THREADS" --duration "$DUR" --json "$@" 2>"$TMP/loader.err" |
		awk '{ops = $0; sub(/.*"ops_per_s":/, "", ops); sub(/[,}].*/, "", ops)
		      mib = $0; sub(/.*"mibps":/, "", mib); sub(/[,}].*/, "", mib)
		      err = $0; sub(/.*"errors":/, "", err); sub(/[,}].*/, "", err)
		      if (err + 0 > 0 || ops == $0) print "failed"; else printf "%s %.0f\n", ops, mib * 1048576}
		     END {if (NR == 0) print "failed"}'
}

for b in plain vers; do
	load $b 10K 16 1000 put --count 1000 --seq --duration 0 >/dev/null
	load $b 64M 4 4 put --count 4 --seq --duration 0 >/dev/null
done
out=$(load vers 10K 16 1000 get --count 200 --verify --duration 0)
[ "$out" = failed ] && die "GET --verify of the versioned 10 KiB objects failed: $(cat "$TMP/loader.err")"

fail=0
MS="put-small get-small put-large get-large"
for ((i = 1; i <= ROUNDS; i++)); do
	for m in $MS; do
		for b in plain vers; do
			case $m in
			put-small) out=$(load $b 10K 32 1000 put) ;;
			get-small) out=$(load $b 10K 32 1000 get) ;;
			put-large) out=$(load $b 64M 4 4 put) ;;
			get-large) out=$(load $b 64M 4 4 get) ;;
			esac
			[ "$out" = failed ] && fail=1 && echo "versioning-bench: $m $b: $(head -3 "$TMP/loader.err")" >&2
			printf '  round %d %-9s %-5s %s\n' "$i" "$m" "$b" "$out" >&2
			case $m in
			*-small) echo "${out%% *}" >>"$TMP/$m.$b" ;;
			*-large) read -r _ bps <<<"$out" && echo "$bps" >>"$TMP/$m.$b" ;;
			esac
		done
	done
done
mib() { awk -v x="$1" 'BEGIN {printf "%.0f", x / 2^20}'; }
printf '\nS3 into a versioned bucket vs a plain one, 1 gateway + 1 target (medians of %d rounds, %ds each; load average %s)\n' \
	"$ROUNDS" "$DUR" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '| measurement | plain | versioned | ratio | goal |\n|---|---|---|---|---|\n'
for m in $MS; do
	P=$(median <"$TMP/$m.plain") V=$(median <"$TMP/$m.vers")
	case $m in
	put-small) printf '| PUT 10 KiB (overwrite), ops/s | %.0f | %.0f | %s | >= 0.9 |\n' "$P" "$V" "$(ratio "$V" "$P")" ;;
	get-small) printf '| GET 10 KiB, ops/s | %.0f | %.0f | %s | |\n' "$P" "$V" "$(ratio "$V" "$P")" ;;
	put-large) printf '| PUT 64 MiB (overwrite), MiB/s | %s | %s | %s | >= 0.9 |\n' "$(mib "$P")" "$(mib "$V")" "$(ratio "$V" "$P")" ;;
	get-large) printf '| GET 64 MiB, MiB/s | %s | %s | %s | |\n' "$(mib "$P")" "$(mib "$V")" "$(ratio "$V" "$P")" ;;
	esac
done
exit $fail
