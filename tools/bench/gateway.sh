#!/usr/bin/env bash
# shellcheck disable=SC2317  # cleanup runs from a trap
# gateway.sh - what a gateway costs: 10 KiB GETs through a gateway (aisloader
# follows its 307s, keeping a connection to the gateway and to every target)
# vs straight to the target, and the gateway's redirects per second alone.
# Starts 1 gateway + 1 target (then, with TARGETS="1 2", a fresh 1 gateway +
# 2 targets) on free loopback ports under a mktemp -d dir, prefills 10,000 x
# 10 KiB objects through the gateway, then ROUNDS alternating rounds of:
#   a. GET 10 KiB, random of 10,000, 64 connections, direct to the target
#      (1-target cluster only: with 2 targets no one target holds them all)
#   b. the same through the gateway, following redirects
#   c. the same through the gateway with --redirects-only (307s counted,
#      not followed): the gateway's redirects/s; the gateway's CPU time
#      (utime + stime of /proc/PID/stat, all its threads) over the run
#      divided by the redirects it answered = CPU per redirect
#   d. the peer for (c): nginx (2 workers, keep-alive) answering every
#      request with "return 307 TARGET$request_uri", the same aisloader
#      --redirects-only run against it, and its CPU per redirect (all its
#      processes): what the kernel and a lean HTTP server cost per 307 here
# and prints medians: ratio b/a (goal >= 0.6), c/d (redirects/s and CPU per
# redirect against nginx's), and "one gateway core can
# issue N = 1 s / (CPU per redirect) redirects/s; at the per-target GET rate
# R (= a), one gateway fronts N/R targets" (goal >= 10). The table is also
# written as markdown to $BUILD/bench-gateway.md.
# Every process is stopped by its PID and the temp dir removed on exit
# (KEEP=1 keeps it). Every run is bounded in time.
#
# Environment: BUILD (default build), ROUNDS (3), DUR (seconds per
# measurement, 5), THREADS (aisloader threads, 1), TARGETS ("1 2"), KEEP.
# Exit status: 0 when every measurement ran without errors, 1 otherwise.
set -u

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
THREADS=${THREADS:-1}
TARGETS=${TARGETS:-1 2}
LOADER=$BUILD/aisloader
AISD=$BUILD/aisd
NOBJ=10000
CONNS=64
NGINX=/usr/sbin/nginx

die() { echo "gateway-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$LOADER" ] || die "$LOADER not built (make BUILD=$BUILD)"
[ -x "$AISD" ] || die "$AISD not built (make BUILD=$BUILD)"
command -v curl >/dev/null || die "curl missing"
[ -r /proc/self/stat ] || die "/proc needed (gateway CPU time)"
TCK=$(getconf CLK_TCK) || die "getconf CLK_TCK failed"

bench_setup gateway-bench


# start_cluster_nt NT: 1 gateway + NT targets under $TMP/cNT with bucket
# "bench"; sets GW, GWPID, TGT1 (the first target's URL) and TGT1PID.
start_cluster_nt() {
	start_cluster "$TMP/c$1" "$1" && create_bucket "$GW" bench || return 1
	TGT1=${TGT[1]} TGT1PID=${TGTPID[1]}
}

# start_nginx307 TARGET_URL: nginx answering 307 to TARGET_URL$request_uri;
# sets NGX (its URL) and NGXPIDS (master and workers).
start_nginx307() {
	local d=$TMP/nginx user="" port
	mkdir -p "$d"
	port=$(free_port)
	[ "$(id -u)" = 0 ] && user="user root root;"
	cat >"$d/nginx.conf" <<EOF
$user
worker_processes 2;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	keepalive_requests 1000000;
	keepalive_timeout 120s;
	client_body_temp_path $d/body;
	proxy_temp_path $d/proxy;
	fastcgi_temp_path $d/fastcgi;
	uwsgi_temp_path $d/uwsgi;
	scgi_temp_path $d/scgi;
	server {
		listen 127.0.0.1:$port reuseport;
		location / { return 307 $1\$request_uri; }
	}
}
EOF
	"$NGINX" -p "$d" -c "$d/nginx.conf" -g 'daemon off;' >"$d/stdout.log" 2>&1 &
	NGXPIDS=("$!")
	PIDS+=("$!")
	NGX=http://127.0.0.1:$port
	for _ in $(seq 50); do
		if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$NGX/x")" = 307 ]; then
			mapfile -t -O 1 NGXPIDS < <(pgrep -P "${NGXPIDS[0]}")
			return 0
		fi
		sleep 0.1
	done
	cat "$d/stdout.log" "$d/error.log" >&2 2>/dev/null
	NGX=""
	return 1
}

med() { if [ -s "$TMP/res.$1" ]; then median <"$TMP/res.$1"; else echo n/a; fi; }
keep() { [ -n "$2" ] && echo "$2" >>"$TMP/res.$1"; }

GETARGS=(--op get --size 10K --objects "$NOBJ" --random --workers "$CONNS" --duration "$DUR")

# measure NT TAG URL ARGS...: one GET run; records ops/s (and, for gateway runs,
# the gateway's CPU per answered request in microseconds).
measure() {
	local nt=$1 tag=$2 url=$3 line ops v conns t0 t1 us who=gateway
	local pids=("$GWPID")
	shift 3
	[ "$tag" = direct ] && pids=("$TGT1PID") who=target
	[ "$tag" = nginx307 ] && pids=("${NGXPIDS[@]}") who=nginx
	t0=$(cpu_ticks "${pids[@]}")
	line=$(run_loader "$tag/$nt" --threads "$THREADS" --url "$url" "${GETARGS[@]}" "$@")
	t1=$(cpu_ticks "${pids[@]}")
	v=$(json_field ops_per_s <<<"$line")
	ops=$(json_field ops <<<"$line")
	conns=$(json_field connects <<<"$line")
	us=$(awk -v d=$((t1 - t0)) -v t="$TCK" -v n="${ops:-0}" 'BEGIN { if (n > 0) printf "%.2f", d / t / n * 1e6 }')
	printf '  %d target(s) %-9s ops/s %-9s connects %-5s %s CPU/op %s us\n' "$nt" "$tag" \
		"${v:-failed}" "${conns:-?}" "$who" \
		"${us:-?}" >&2
	keep "$tag.$nt" "$v"
	keep "cpu.$tag.$nt" "$us"
}

echo "gateway-bench: temp dir $TMP, $ROUNDS rounds, ${DUR}s per measurement, targets: $TARGETS" >&2
for nt in $TARGETS; do
	if ! start_cluster_nt "$nt"; then
		STATUS=1
		echo "gateway-bench: could not start 1 gateway + $nt target(s)" >&2
		stop_all
		continue
	fi
	URLG=$GW/v1/objects/bench
	NGX=""
	if [ "$nt" = 1 ]; then
		if [ ! -x "$NGINX" ]; then
			echo "gateway-bench: $NGINX missing: no nginx 307 peer (tools/install-deps.sh installs it)" >&2
		elif ! start_nginx307 "$TGT1"; then
			STATUS=1
			echo "gateway-bench: nginx did not start: no 307 peer" >&2
		fi
	fi
	echo "gateway-bench: $nt target(s): prefilling $NOBJ x 10 KiB through the gateway" >&2
	run_loader prefill --threads "$THREADS" --url "$URLG" --op put --size 10K --objects $NOBJ --seq --count $NOBJ \
		--workers 32 >/dev/null
	run_loader verify --threads "$THREADS" --url "$URLG" --op get --size 10K --objects $NOBJ --count 2000 \
		--workers 16 --verify >/dev/null
	for r in $(seq "$ROUNDS"); do
		echo "gateway-bench: $nt target(s), round $r/$ROUNDS" >&2
		order=(direct follow)
		[ $((r % 2)) = 0 ] && order=(follow direct)
		for k in "${order[@]}" redirects nginx307; do
			case $k in
			nginx307) [ -n "$NGX" ] && measure "$nt" nginx307 "$NGX/v1/objects/bench" --redirects-only ;;
			direct) [ "$nt" = 1 ] && measure "$nt" direct "$TGT1/v1/objects/bench" ;;
			follow) measure "$nt" follow "$URLG" --follow ;;
			redirects) measure "$nt" redirects "$URLG" --redirects-only ;;
			esac
		done
	done
	stop_all
done

# ---- report ----------------------------------------------------------------
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
MD=$BUILD/bench-gateway.md
R=$(med direct.1)
{
	echo "## Through a gateway ($(date -u +%Y-%m-%d))"
	echo
	echo "Machine: $(nproc) CPUs, ${CPU:-unknown CPU}, Linux $(uname -r); gateway, targets and"
	echo "client share them. Client: aisloader ($THREADS thread), GET 10 KiB random of $NOBJ,"
	echo "$CONNS connections, ${DUR} s per run, $ROUNDS rounds, medians. Targets: store.fsync=never."
	echo
	echo "| targets | direct ops/s (a) | via gateway ops/s (b) | b/a | goal | redirects/s (c) | gateway CPU per redirect (c) | gateway CPU per GET (b) | target CPU per GET (a) |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for nt in $TARGETS; do
		a=$(med "direct.$nt") b=$(med "follow.$nt")
		ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a == "n/a" || b == "n/a" || a == 0) print "n/a"; else printf "%.2f", b / a }')
		v=$(awk -v r="$ratio" 'BEGIN { if (r == "n/a") print ""; else if (r >= 0.6) print " PASS"; else print " FAIL" }')
		echo "| $nt | $a | $b | $ratio | >= 0.6$v | $(med "redirects.$nt") | $(med "cpu.redirects.$nt") us | $(med "cpu.follow.$nt") us | $(med "cpu.direct.$nt") us |"
	done
	echo
	awk -v g="$(med redirects.1)" -v n="$(med nginx307.1)" -v gc="$(med cpu.redirects.1)" \
		-v nc="$(med cpu.nginx307.1)" 'BEGIN {
		if (g == "n/a" || n == "n/a" || n == 0 || nc == "n/a" || nc == 0) { print "Peer: n/a (nginx 307 not measured)."; exit }
		printf "Peer (1 target): the gateway answered %.0f redirects/s, nginx (return 307) %.0f:\n", g, n
		printf "ratio %.2f; CPU per redirect %.2f us vs nginx %.2f us: ratio %.2f (lower is better).\n", g / n, gc, nc, gc / nc
	}'
	echo
	US=$(med cpu.redirects.1)
	awk -v us="$US" -v r="$R" 'BEGIN {
		if (us == "n/a" || r == "n/a" || us == 0 || r == 0) { print "Arithmetic: n/a (a measurement is missing)."; exit }
		n = 1e6 / us
		printf "Arithmetic: one gateway core issues N = 1 s / %.2f us = %.0f redirects/s;\n", us, n
		printf "at the measured per-target GET rate R = %.0f ops/s (a), one gateway core\n", r
		printf "fronts N / R = %.1f targets (goal >= 10: %s).\n", n / r, (n / r >= 10) ? "PASS" : "FAIL"
	}'
	awk -v us="$US" -v tu="$(med cpu.direct.1)" 'BEGIN {
		if (us == "n/a" || tu == "n/a" || us == 0) exit
		printf "By CPU alone (client-independent): a target spends %.2f us of CPU per GET, the\n", tu
		printf "gateway %.2f us per redirect: one gateway core keeps up with %.1f target cores.\n", us, tu / us
	}'
	echo
	echo "Every run (in round order):"
	echo
	for f in "$TMP"/res.*; do
		[ -e "$f" ] || continue
		echo "- ${f##*/res.}: $(tr '\n' ' ' <"$f")"
	done
	[ $STATUS != 0 ] && { echo; echo "Some measurements had errors (see the bench output)."; }
} >"$MD"

echo
cat "$MD"
echo
echo "gateway-bench: markdown written to $MD"
exit $STATUS
