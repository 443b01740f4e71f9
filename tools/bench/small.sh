#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2154  # cleanup runs from a trap; *_PORT are set by printf -v
# small.sh - small reads: GETs straight to one aisd target (native API,
# /v1/objects/BUCKET/OBJ) against nginx serving the same files, side by
# side in one run, the same client, servers alternating first round by
# round, medians reported:
#   GET 1 KiB,  random of 10,000, 64 connections      aisloader  ops/s
#   GET 10 KiB, random of 10,000, 64 connections      aisloader  ops/s
#   GET 1 MiB,  random of 64, 16 connections          aisloader  ops/s
#   GET 1 KiB and 10 KiB, one key, 64 connections     wrk -t2    req/s
# (wrk, a leaner client than aisloader, where installed). Starts nginx
# (nginx.conf.in: sendfile, access log off, 2 workers) and one aisd target
# (store.fsync=never, defaults otherwise) on free loopback ports under a
# mktemp -d dir, preloads identical bytes into both, and writes the table
# as markdown to $BUILD/bench-small.md. Every process is stopped by its
# PID and the temp dir removed on exit (KEEP=1 keeps it); every run is
# bounded in time.
#
# Environment: BUILD (default build), ROUNDS (5), DUR (seconds per
# measurement, 5), THREADS (aisloader threads, 2: one thread is the limit
# of the random rows, at 100% of a core, so that they measure the client's
# cost per answer more than the servers'), AISD_SET (more
# "--set key=value" arguments for the target, e.g. "store.hot_cache=0"),
# BASE (another aisd binary, e.g. an earlier build: a third server in the
# same rounds, its column "base"), TESTS (the tests to run, of get1k get10k
# get1m wrk1k wrk10k; all by default), KEEP.
# Exit status: 0 when every measurement ran without errors, 1 otherwise.
set -u

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
DUR=${DUR:-5}
THREADS=${THREADS:-2}
TESTS=${TESTS:-get1k get10k get1m wrk1k wrk10k}
LOADER=$BUILD/aisloader
AISD=$BUILD/aisd
NGINX=/usr/sbin/nginx

# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$LOADER" ] || die "$LOADER not built (make BUILD=$BUILD)"
[ -x "$AISD" ] || die "$AISD not built (make BUILD=$BUILD)"
[ -x "$NGINX" ] || die "$NGINX missing (tools/install-deps.sh installs nginx-light)"
bench_setup small-bench

start_nginx bench
declare -A URL=([nginx]=http://127.0.0.1:$NGINX_PORT/bench) SPID=()
# start_target NAME BINARY [--set K=V...]: a standalone target; sets URL[NAME].
start_target() {
	local name=$1 bin=$2 port
	shift 2
	mkdir -p "$TMP/$name/mp"
	port=$(free_port)
	"$bin" --role target --port "$port" --mountpath "$TMP/$name/mp" --set store.fsync=never "$@" \
		>"$TMP/$name/aisd.log" 2>&1 &
	PIDS+=($!)
	SPID[$name]=$!
	wait_http "http://127.0.0.1:$port/v1/health" 10 || {
		tail -n 20 "$TMP/$name/aisd.log" >&2
		die "$name ($bin) did not answer GET /v1/health in 10 s"
	}
	create_bucket "http://127.0.0.1:$port" bench || die "no bucket on $name"
	URL[$name]=http://127.0.0.1:$port/v1/objects/bench
}
set_args=()
for kv in ${AISD_SET:-}; do set_args+=(--set "$kv"); done
start_target aisd "$AISD" "${set_args[@]}"
SERVERS=(aisd nginx)
if [ -n "${BASE:-}" ]; then
	[ -x "$BASE" ] || die "BASE=$BASE is not an executable"
	start_target base "$BASE"
	SERVERS+=(base)
fi

# The server's processes (nginx: the master and its workers).
server_pids() {
	if [ "$1" = nginx ]; then
		echo "$NGINX_PID" $(pgrep -P "$NGINX_PID")
	else
		echo "${SPID[$1]}"
	fi
}

# run TEST SERVER CMD...: runs CMD (which prints the requests it made, then
# the rate), appends the rate to res.TEST.SERVER and the server's CPU
# microseconds per request (user + system, all its threads) to
# cpu.TEST.SERVER: the second number does not depend on how busy the
# machine is.
run() {
	local test=$1 srv=$2 t0 t1 out n v c
	shift 2
	# shellcheck disable=SC2046
	t0=$(cpu_ticks $(server_pids "$srv"))
	out=$("$@")
	# shellcheck disable=SC2046
	t1=$(cpu_ticks $(server_pids "$srv"))
	read -r n v <<<"$out"
	c=$(awk -v n="${n:-0}" -v d=$((t1 - t0)) -v h="$(getconf CLK_TCK)" \
		'BEGIN { if (n > 0) printf "%.1f\n", d * 1e6 / h / n }')
	printf '  %-8s %-7s %-10s %s us/req\n' "$test" "$srv" "${v:-failed}" "${c:-?}" >&2
	[ -n "$v" ] && echo "$v" >>"$TMP/res.$test.$srv"
	[ -n "$c" ] && echo "$c" >>"$TMP/cpu.$test.$srv"
}

loader() { # prints requests and ops/s of one aisloader run
	local j
	j=$(run_loader "$1" --threads "$THREADS" "${@:2}")
	echo "$(printf '%s\n' "$j" | json_field ops) $(printf '%s\n' "$j" | json_field ops_per_s)"
}

wrk_run() { # prints requests and req/s of one wrk run
	timeout 60 wrk -t2 -c64 -d"${DUR}s" "$1" 2>&1 |
		awk '/requests in/ { n = $1 } /^Requests\/sec/ { r = $2 } END { print n, r }'
}

# wanted TEST: whether TEST is in TESTS.
wanted() { [[ " $TESTS " == *" $1 "* ]]; }

# measure TEST SERVER URL ARGS...: one aisloader run (none if TEST is not
# wanted).
measure() {
	local test=$1 srv=$2 url=$3
	shift 3
	wanted "$test" || return 0
	run "$test" "$srv" loader "$test/$srv" --url "$url" "$@"
}

# The three sets in their own key spaces (BASE/1k/obj-..., ...), checked
# after the load: same bytes in both servers.
for s in "${SERVERS[@]}"; do
	echo "small-bench: preloading $s: 10,000 x 1 KiB, 10,000 x 10 KiB, 64 x 1 MiB" >&2
	for set in 1k:1K:10000 10k:10K:10000 1m:1M:64; do
		IFS=: read -r dir size n <<<"$set"
		wanted "get$dir" || wanted "wrk$dir" || continue
		run_loader "prefill-$dir/$s" --url "${URL[$s]}/$dir" --op put --size "$size" --objects "$n" --seq \
			--count "$n" --workers 16 >/dev/null
		run_loader "verify-$dir/$s" --url "${URL[$s]}/$dir" --op get --size "$size" --objects "$n" \
			--count "$((n < 1000 ? n : 1000))" --workers 16 --verify >/dev/null
	done
done

echo "small-bench: temp dir $TMP, $ROUNDS rounds, ${DUR}s per measurement" >&2
for r in $(seq "$ROUNDS"); do
	# Each server goes first in turn, so none always gets the warmest page cache.
	n=${#SERVERS[@]}
	order=()
	for i in $(seq 0 $((n - 1))); do order+=("${SERVERS[$(((i + r) % n))]}"); done
	echo "small-bench: round $r/$ROUNDS (${order[*]})" >&2
	for s in "${order[@]}"; do
		measure get1k "$s" "${URL[$s]}/1k" --op get --size 1K --objects 10000 --random --workers 64 \
			--duration "$DUR" --seed "$r"
	done
	for s in "${order[@]}"; do
		measure get10k "$s" "${URL[$s]}/10k" --op get --size 10K --objects 10000 --random --workers 64 \
			--duration "$DUR" --seed "$r"
	done
	for s in "${order[@]}"; do
		measure get1m "$s" "${URL[$s]}/1m" --op get --size 1M --objects 64 --random --workers 16 \
			--duration "$DUR" --seed "$r"
	done
	command -v wrk >/dev/null || continue
	for k in 1k 10k; do
		wanted "wrk$k" || continue
		for s in "${order[@]}"; do run "wrk$k" "$s" wrk_run "${URL[$s]}/$k/obj-000001"; done
	done
done

med() { if [ -s "$TMP/res.$1.$2" ]; then median <"$TMP/res.$1.$2"; else echo n/a; fi; }
cmed() { if [ -s "$TMP/cpu.$1.$2" ]; then median <"$TMP/cpu.$1.$2"; else echo n/a; fi; }
# rmed TEST SERVER: the median over the rounds of SERVER's rate / nginx's in
# the same round (the servers of a round run seconds apart, so a load that
# drifts over the run moves both alike).
rmed() {
	if [ -s "$TMP/res.$1.$2" ] && [ -s "$TMP/res.$1.nginx" ]; then
		paste "$TMP/res.$1.$2" "$TMP/res.$1.nginx" | awk 'NF == 2 && $2 > 0 { printf "%.4f\n", $1 / $2 }' |
			median | awk '{ if ($1 == "n/a") print; else printf "%.2f\n", $1 }'
	else
		echo n/a
	fi
}
MD=$BUILD/bench-small.md
{
	echo "## Small reads, aisd direct vs nginx ($(date -u +%Y-%m-%d))"
	echo
	echo "$(nproc) CPUs, load average before: $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds, ${DUR} s each, medians."
	echo
	echo "Rates are medians of the rounds; CPU is the server's CPU time (user + system, all"
	echo "its processes) per request, median of the rounds: it does not depend on the load."
	echo "\"per round\": the median of the rounds' own ratios (each round's runs seconds apart)."
	echo
	if [ -n "${BASE:-}" ]; then
		echo "base: $BASE"
		echo
		echo "| test | aisd | nginx | aisd/nginx | per round | base | base/nginx | per round | CPU us/req aisd | nginx | base |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	else
		echo "| test | aisd | nginx | aisd/nginx | per round | CPU us/req aisd | nginx |"
		echo "|---|---:|---:|---:|---:|---:|---:|"
	fi
	row() {
		local a n b
		a=$(med "$2" aisd)
		n=$(med "$2" nginx)
		[ "$a" = n/a ] && [ "$n" = n/a ] && return
		if [ -n "${BASE:-}" ]; then
			b=$(med "$2" base)
			echo "| $1 | $a | $n | $(ratio "$a" "$n") | $(rmed "$2" aisd) | $b | $(ratio "$b" "$n") | $(rmed "$2" base) | $(cmed "$2" aisd) | $(cmed "$2" nginx) | $(cmed "$2" base) |"
		else
			echo "| $1 | $a | $n | $(ratio "$a" "$n") | $(rmed "$2" aisd) | $(cmed "$2" aisd) | $(cmed "$2" nginx) |"
		fi
	}
	row "GET 1 KiB, random of 10,000, 64 conns, aisloader --threads $THREADS (ops/s)" get1k
	row "GET 10 KiB, random of 10,000, 64 conns, aisloader --threads $THREADS (ops/s)" get10k
	row "GET 1 MiB, random of 64, 16 conns, aisloader --threads $THREADS (ops/s)" get1m
	row "GET 1 KiB, one key, 64 conns, wrk -t2 (req/s)" wrk1k
	row "GET 10 KiB, one key, 64 conns, wrk -t2 (req/s)" wrk10k
	echo
	echo "Every run (in round order):"
	echo
	for f in "$TMP"/res.* "$TMP"/cpu.*; do
		[ -e "$f" ] || continue
		echo "- ${f##*/}: $(tr '\n' ' ' <"$f")"
	done
} >"$MD"
echo
cat "$MD"
echo
echo "small-bench: markdown table written to $MD"
exit "$STATUS"
