#!/usr/bin/env bash
# s3.sh - what S3 through a gateway costs against the native API straight to
# the target: 1 gateway + 1 target on free loopback ports under a mktemp -d
# dir, s3.auth ON (every S3 request is SigV4-signed by aisloader --s3 and
# verified by the target), then ROUNDS alternating rounds, all with
# aisloader (the same client both ways), of:
#   put-small  PUT 10 KiB, ops/s (64 workers): native to the target | S3 via the gateway
#   get-small  GET 10 KiB, ops/s (64 workers); also through nginx
#              proxy_pass (nginx-proxy.conf.in: 2 workers, keep-alive
#              upstream) in front of the same target: the gateway's
#              forward against a lean general-purpose proxy (goal >= 1.2x)
#   get-large  GET 64 MiB, MiB/s (4 workers)
#   put-large  PUT 64 MiB, MiB/s (4 workers); also S3 straight to the
#              target: what the forward itself costs, apart from the
#              target's S3 work (the MD5 of the ETag)
# Native: /v1/objects/B/obj-N on the target. S3: /B/obj-N on the
# gateway, forwarded to the owner target as a stream (never redirected).
# Prints the medians and the ratios S3/native (goals: GET 10 KiB >= 0.7,
# GET 64 MiB >= 0.85). Every process is stopped by its PID and the temp dir
# removed on exit (KEEP=1 keeps it); every run is bounded in time.
#
# Environment: BUILD (default build), ROUNDS (3), DUR (seconds per
# measurement, 5), THREADS (aisloader threads, 2), ONLY (the measurements
# to run, default "put-small get-small get-large put-large"), KEEP, PERF=1 (record
# the gateway with perf during the S3 GET 10 KiB runs, perf report to
# $TMP/perf.txt, kept). Exit status 0 when every measurement ran clean.
set -u

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
THREADS=${THREADS:-2}
ONLY=${ONLY:-put-small get-small get-large put-large}
AISD=$BUILD/aisd
LOADER=$BUILD/aisloader
AK=benchkey SK=benchsecret

die() { echo "s3-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$AISD" ] && [ -x "$LOADER" ] || die "no $AISD or $LOADER (run make)"

bench_setup s3-bench
[ "${PERF:-0}" = 1 ] && KEEP=1
start_cluster "$TMP" 1 --set s3.auth=on --set "s3.key=$AK:$SK:bench:Bench User" ||
	die "the cluster did not start (see $TMP)"
TG=${TGT[1]} GPID=$GWPID TPID=${TGTPID[1]}
NGX=
if [ -x "${NGINX:-/usr/sbin/nginx}" ]; then
	NGINX_CONF_IN=nginx-proxy.conf.in NGINX_UPSTREAM=${TG#http://} start_nginx
	NGX=http://127.0.0.1:$NGINX_PORT
else
	echo "s3-bench: no nginx (tools/install-deps.sh installs nginx-light): no proxy_pass row" >&2
fi
# the proxy's processes: the gateway, or nginx's master and workers
proxy_pids() {
	if [ "$1" = nginx ]; then echo "$NGINX_PID" $(cat /proc/"$NGINX_PID"/task/*/children 2>/dev/null); else echo "$GPID"; fi
}
HZ=$(getconf CLK_TCK)
for b in small large; do
	create_bucket "$GW" "$b" || die "create bucket $b failed"
done

# load KIND SIZE WORKERS OBJECTS OP [ARGS]: prints "ops/s bytes/s" of one
# aisloader run (bucket "small" for 10K, "large" for 64M).
load() {
	local kind=$1 size=$2 workers=$3 objects=$4 op=$5 b=small
	shift 5
	[ "$size" = 64M ] && b=large
	local url=$TG/v1/objects/$b s3=()
	[ "$kind" = s3 ] && url=$GW/$b s3=(--s3 "$AK:$SK")
	[ "$kind" = nginx ] && url=$NGX/$b s3=(--s3 "$AK:$SK")
	[ "$kind" = s3t ] && url=$TG/$b s3=(--s3 "$AK:$SK")
	timeout $((DUR + 120)) "$LOADER" "${s3[@]}" --url "$url" --op "$op" --size "$size" --objects "$objects" \
		--workers "$workers" --threads "$THREADS" --duration "$DUR" --json "$@" 2>"$TMP/loader.err" |
		awk '{ops = $0; sub(/.*"ops_per_s":/, "", ops); sub(/[,}].*/, "", ops)
		      mib = $0; sub(/.*"mibps":/, "", mib); sub(/[,}].*/, "", mib)
		      err = $0; sub(/.*"errors":/, "", err); sub(/[,}].*/, "", err)
		      n = $0; sub(/.*"ops":/, "", n); sub(/[,}].*/, "", n)
		      if (err + 0 > 0 || ops == $0) print "failed"; else printf "%s %.0f %s\n", ops, mib * 1048576, n}
		     END {if (NR == 0) print "failed"}'
}

# the objects: 1000 x 10 KiB and 4 x 64 MiB, written with S3 (checked: --verify below)
load s3 10K 16 1000 put --count 1000 --seq --duration 0 >/dev/null
load s3 64M 4 4 put --count 4 --seq --duration 0 >/dev/null
out=$(load s3 10K 16 1000 get --count 200 --verify --duration 0)
[ "$out" = failed ] && die "S3 GET --verify of the 10 KiB objects failed: $(cat "$TMP/loader.err")"

fail=0
for ((i = 1; i <= ROUNDS; i++)); do
	for m in $ONLY; do
		kinds="native s3"
		[ "$m" = get-small ] && [ -n "$NGX" ] && kinds="native s3 nginx"
		[ "$m" = put-large ] && kinds="native s3 s3t"
		for kind in $kinds; do
			perf_pid=
			if [ "${PERF:-0}" = 1 ] && [ "$m$kind" = get-smalls3 ]; then
				perf record -g -p "$GPID" -o "$TMP/perf.data.$i" -- sleep "$DUR" >/dev/null 2>&1 &
				perf_pid=$!
			fi
			pp=$(proxy_pids "$kind")
			g0=$(cpu_ticks $pp) t0=$(cpu_ticks "$TPID")
			case $m in
			put-small) out=$(load $kind 10K 64 1000 put) ;;
			get-small) out=$(load $kind 10K 64 1000 get) ;;
			get-large) out=$(load $kind 64M 4 4 get) ;;
			put-large) out=$(load $kind 64M 4 4 put) ;;
			esac
			[ -n "$perf_pid" ] && wait "$perf_pid"
			# CPU microseconds per op of the gateway and the target: what a
			# request costs, which load on a shared machine disturbs less
			# than the rates
			read -r _ _ nops <<<"$out"
			g1=$(cpu_ticks $pp) t1=$(cpu_ticks "$TPID")
			awk -v g=$((g1 - g0)) -v t=$((t1 - t0)) -v n="${nops:-0}" -v hz="$HZ" \
				'BEGIN {if (n > 0) printf "%.1f %.1f\n", g * 1e6 / hz / n, t * 1e6 / hz / n}' >>"$TMP/$m.$kind.cpu"
			[ "$out" = failed ] && fail=1 && echo "s3-bench: $m $kind: $(head -3 "$TMP/loader.err")" >&2
			printf '  round %d %-9s %-6s %s (cpu us/op gw tgt: %s)\n' "$i" "$m" "$kind" "$out" \
				"$(tail -1 "$TMP/$m.$kind.cpu" 2>/dev/null)" >&2
			case $m in
			*-small) echo "${out%% *}" >>"$TMP/$m.$kind" ;;
			*-large) read -r _ bps _ <<<"$out" && echo "$bps" >>"$TMP/$m.$kind" ;;
			esac
		done
	done
done
if [ "${PERF:-0}" = 1 ] && [ -f "$TMP/perf.data.1" ]; then
	perf report -i "$TMP/perf.data.1" --no-children --percent-limit 0.7 --stdio >"$TMP/perf.txt" 2>/dev/null
	echo "s3-bench: perf report of the gateway (S3 GET 10 KiB, round 1): $TMP/perf.txt" >&2
fi
mib() { awk -v x="$1" 'BEGIN {printf "%.0f", x / 2^20}'; }
printf '\nS3 via a gateway (SigV4 on) vs native straight to the target, aisloader both (medians of %d rounds, %ds each; load average %s)\n' \
	"$ROUNDS" "$DUR" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '| measurement | native direct | S3 via gateway | ratio | goal |\n|---|---|---|---|---|\n'
for m in $ONLY; do
	N=$(median <"$TMP/$m.native") S=$(median <"$TMP/$m.s3")
	case $m in
	put-small) printf '| PUT 10 KiB, ops/s (64 workers) | %.0f | %.0f | %s | |\n' "$N" "$S" "$(ratio "$S" "$N")" ;;
	get-small)
		printf '| GET 10 KiB, ops/s (64 workers) | %.0f | %.0f | %s | >= 0.7 |\n' "$N" "$S" "$(ratio "$S" "$N")"
		if [ -s "$TMP/$m.nginx" ]; then
			X=$(median <"$TMP/$m.nginx")
			printf '| GET 10 KiB via nginx proxy_pass instead of the gateway | %.0f | %.0f | %s | |\n' "$N" "$X" "$(ratio "$X" "$N")"
			printf '| GET 10 KiB: the gateway vs nginx proxy_pass | | | %s | >= 1.2 |\n' "$(ratio "$S" "$X")"
		fi ;;
	get-large) printf '| GET 64 MiB, MiB/s (4 workers) | %s | %s | %s | >= 0.85 |\n' "$(mib "$N")" "$(mib "$S")" "$(ratio "$S" "$N")" ;;
	put-large)
		printf '| PUT 64 MiB, MiB/s (4 workers) | %s | %s | %s | >= 0.8 |\n' "$(mib "$N")" "$(mib "$S")" "$(ratio "$S" "$N")"
		X=$(median <"$TMP/$m.s3t")
		printf '| PUT 64 MiB, S3 straight to the target instead of via the gateway | %s | %s | %s | |\n' "$(mib "$N")" \
			"$(mib "$X")" "$(ratio "$X" "$N")"
		printf '| PUT 64 MiB: S3 via the gateway vs S3 straight to the target | | | %s | |\n' "$(ratio "$S" "$X")" ;;
	esac
done
printf '\nCPU per op, microseconds (medians): gateway | target (native) | target (S3) | nginx proxy_pass | target (S3 straight)\n'
for m in $ONLY; do
	x=n/a y=n/a
	[ -s "$TMP/$m.nginx.cpu" ] && x=$(cut -d' ' -f1 "$TMP/$m.nginx.cpu" | median)
	[ -s "$TMP/$m.s3t.cpu" ] && y=$(cut -d' ' -f2 "$TMP/$m.s3t.cpu" | median)
	printf '| %s | %s | %s | %s | %s | %s |\n' "$m" "$(cut -d' ' -f1 "$TMP/$m.s3.cpu" | median)" \
		"$(cut -d' ' -f2 "$TMP/$m.native.cpu" | median)" "$(cut -d' ' -f2 "$TMP/$m.s3.cpu" | median)" "$x" "$y"
done
exit $fail
