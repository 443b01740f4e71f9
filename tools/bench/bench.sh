#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2154  # cleanup runs from a trap; *_PORT are set by printf -v
# bench.sh - aisd vs nginx, side by side, in one run on this machine: the
# same client (aisloader), the same bytes, alternating servers round by
# round, medians reported. Starts nginx (Debian's nginx-light, WebDAV PUT)
# and one aisd target on free loopback ports under a mktemp -d dir, preloads
# identical data into both, measures:
#   1. GET of a 1 GiB object, 4 streams             GiB/s   goal >= 0.95
#   2. GET of 10 KiB objects, random over 10,000, 64 connections
#                                                   ops/s   goal >= 1.0
#      and the same of 1 KiB objects (key space 1k/)   ops/s   goal >= 1.0
#   3. PUT of 64 MiB objects, 4 workers             GiB/s   goal >= 0.80
#      (aisd with store.fsync=never, since nginx never fsyncs; one more row
#      with an aisd started with store.fsync=always, for information)
#   and, for information, 10 KiB GETs of one key with wrk, a leaner client
#   than aisloader (on a small machine the client's CPU use matters)
# and prints a table, also written as markdown to $BUILD/bench-results.md.
# Every process is stopped by its PID and the temp dir removed on exit
# (KEEP=1 keeps it). Every run is bounded in time.
#
# Environment: BUILD (default build), ROUNDS (5), DUR (seconds per
# measurement, 5), THREADS (aisloader threads, 1), KEEP.
# Exit status: 0 when every measurement ran without errors, 1 otherwise
# (including when aisd could not be started: the nginx column still prints).
set -u

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
DUR=${DUR:-5}
THREADS=${THREADS:-1}
LOADER=$BUILD/aisloader
AISD=$BUILD/aisd
NGINX=/usr/sbin/nginx

# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$LOADER" ] || die "$LOADER not built (make BUILD=$BUILD)"
[ -x "$NGINX" ] || die "$NGINX missing (tools/install-deps.sh installs nginx-light)"
command -v curl >/dev/null || die "curl missing"
command -v python3 >/dev/null || die "python3 missing (used to pick free ports)"
bench_setup bench

# ---- aisd ------------------------------------------------------------------
# start_aisd NAME FSYNC: starts a target; sets ${NAME}_PORT; false on failure.
start_aisd() {
	local name=$1 fsync=$2 d=$TMP/$1 port pid
	[ -x "$AISD" ] || { echo "bench: $AISD not built" >&2; return 1; }
	mkdir -p "$d/mp"
	port=$(free_port)
	"$AISD" --role target --port "$port" --mountpath "$d/mp" --set "store.fsync=$fsync" \
		>"$d/aisd.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	if ! wait_http "http://127.0.0.1:$port/v1/health" 10; then
		echo "bench: $name (aisd, store.fsync=$fsync) did not answer GET /v1/health in 10 s; its log:" >&2
		tail -n 20 "$d/aisd.log" >&2
		return 1
	fi
	create_bucket "http://127.0.0.1:$port" bench || return 1
	printf -v "${name}_PORT" %s "$port"
	return 0
}

# ---- measurements ----------------------------------------------------------
declare -A URL
# measure TEST SERVER FIELD URL ARGS...: one measurement, value appended to a file.
measure() {
	local test=$1 srv=$2 field=$3 url=$4 line v
	shift 4
	line=$(run_loader "$test/$srv" --url "$url" --threads "$THREADS" "$@")
	v=$(printf '%s\n' "$line" | json_field "$field")
	printf '  %-8s %-7s %-10s %s\n' "$test" "$srv" "$field" "${v:-failed}" >&2
	[ -n "$v" ] && echo "$v" >>"$TMP/res.$test.$srv"
}

prefill() {
	local srv=$1 base=${URL[$1]}
	echo "bench: preloading $srv: 1 GiB object, 10,000 x 10 KiB and 10,000 x 1 KiB objects" >&2
	run_loader "prefill-big/$srv" --url "$base" --threads "$THREADS" --op put --name big --size 1G --count 1 --workers 1 >/dev/null
	run_loader "prefill-small/$srv" --url "$base" --threads "$THREADS" --op put --size 10K --objects 10000 --seq \
		--count 10000 --workers 32 >/dev/null
	run_loader "prefill-1k/$srv" --url "$base/1k" --threads "$THREADS" --op put --size 1K --objects 10000 --seq \
		--count 10000 --workers 32 >/dev/null
	# Same bytes in both: read a sample back and check it against the pattern.
	run_loader "verify/$srv" --url "$base" --threads "$THREADS" --op get --size 10K --objects 10000 --count 2000 \
		--workers 16 --verify >/dev/null
}

echo "bench: temp dir $TMP, $ROUNDS rounds, ${DUR}s per measurement" >&2
start_nginx bench
URL[nginx]=http://127.0.0.1:$NGINX_PORT/bench
SERVERS=(nginx)
AISD_OK=0
if start_aisd aisd never; then
	AISD_OK=1
	URL[aisd]=http://127.0.0.1:$aisd_PORT/v1/objects/bench
	SERVERS=(aisd nginx)
else
	STATUS=1
	echo "bench: aisd unavailable: measuring nginx alone" >&2
fi
AISD_SYNC_OK=0
if [ $AISD_OK = 1 ] && start_aisd aisdsync always; then
	AISD_SYNC_OK=1
	URL[aisdsync]=http://127.0.0.1:$aisdsync_PORT/v1/objects/bench
fi

for s in "${SERVERS[@]}"; do prefill "$s"; done

for r in $(seq "$ROUNDS"); do
	order=("${SERVERS[@]}")
	# Alternate who goes first, so neither always gets the warmer page cache.
	[ $((r % 2)) = 0 ] && [ ${#order[@]} = 2 ] && order=("${order[1]}" "${order[0]}")
	echo "bench: round $r/$ROUNDS (${order[*]})" >&2
	for s in "${order[@]}"; do
		measure getbig "$s" gibps "${URL[$s]}" --op get --name big --size 1G --workers 4 --duration "$DUR"
	done
	for s in "${order[@]}"; do
		measure getsmall "$s" ops_per_s "${URL[$s]}" --op get --size 10K --objects 10000 --random \
			--workers 64 --duration "$DUR"
	done
	for s in "${order[@]}"; do
		measure get1k "$s" ops_per_s "${URL[$s]}/1k" --op get --size 1K --objects 10000 --random \
			--workers 64 --duration "$DUR"
	done
	for s in "${order[@]}"; do
		# Start each PUT run with no dirty pages left by the previous one
		# (not timed), so neither server pays for the other's writeback.
		timeout 120 sync
		# Own key space ("put/obj-..."): the 10 KiB objects stay intact.
		measure put "$s" gibps "${URL[$s]}/put" --op put --size 64M --objects 16 --workers 4 \
			--duration "$DUR" --count 64 --seed "$r"
	done
	# Cross-check with a leaner client: wrk, one 10 KiB key (wrk takes one URL).
	if command -v wrk >/dev/null; then
		for s in "${order[@]}"; do
			v=$(timeout 60 wrk -t2 -c64 -d"${DUR}s" "${URL[$s]}/obj-000001" 2>&1 |
				awk '/^Requests\/sec/ { print $2 }')
			printf '  %-8s %-7s %-10s %s\n' wrk10k "$s" req_per_s "${v:-failed}" >&2
			[ -n "$v" ] && echo "$v" >>"$TMP/res.wrk10k.$s"
		done
	fi
	if [ $AISD_SYNC_OK = 1 ]; then
		timeout 120 sync
		measure putsync aisdsync gibps "${URL[aisdsync]}/put" --op put --size 64M --objects 16 --workers 4 \
			--duration "$DUR" --count 64 --seed "$r"
	fi
done

# ---- report ----------------------------------------------------------------
med() { if [ -s "$TMP/res.$1.$2" ]; then median <"$TMP/res.$1.$2"; else echo n/a; fi; }
verdict() { awk -v r="$1" -v g="$2" 'BEGIN { if (r == "n/a") print "n/a"; else if (r + 0 >= g + 0) print "PASS"; else print "FAIL" }'; }

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
FS=$(df -T "$TMP" | awk 'NR == 2 { print $2 " (" $1 ")" }')
MD=$BUILD/bench-results.md
{
	echo "## aisd vs nginx ($(date -u +%Y-%m-%d))"
	echo
	echo "Machine: $(nproc) CPUs, ${CPU:-unknown CPU}, Linux $(uname -r), data dir on $FS."
	echo "Client: aisloader ($THREADS thread), same binary and bytes for both servers;"
	echo "$ROUNDS rounds alternating the servers, ${DUR} s per measurement, medians."
	echo "nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'): sendfile, tcp_nopush, 2 workers, WebDAV PUT (never fsyncs)."
	echo "aisd: one target, one mountpath, store.fsync=never (fsync=always row for information)."
	echo
	echo "| test | aisd | nginx | aisd/nginx | goal | |"
	echo "|---|---:|---:|---:|---:|---|"
	row() {
		local label=$1 a=$2 n=$3 goal=$4 r
		r=$(ratio "$a" "$n")
		echo "| $label | $a | $n | $r | >= $goal | $(verdict "$r" "$goal") |"
	}
	row "GET 1 GiB object, 4 streams (GiB/s)" "$(med getbig aisd)" "$(med getbig nginx)" 0.95
	row "GET 10 KiB, random of 10,000, 64 conns (ops/s)" "$(med getsmall aisd)" "$(med getsmall nginx)" 1.0
	row "GET 1 KiB, random of 10,000, 64 conns (ops/s)" "$(med get1k aisd)" "$(med get1k nginx)" 1.0
	row "PUT 64 MiB, 4 workers, aisd fsync=never (GiB/s)" "$(med put aisd)" "$(med put nginx)" 0.80
	if [ -s "$TMP/res.wrk10k.nginx" ]; then
		a=$(med wrk10k aisd)
		echo "| GET 10 KiB, one key, 64 conns, wrk -t2 (req/s) | $a | $(med wrk10k nginx) | $(ratio "$a" "$(med wrk10k nginx)") | (info) | |"
	fi
	if [ $AISD_SYNC_OK = 1 ]; then
		a=$(med putsync aisdsync)
		echo "| PUT 64 MiB, 4 workers, aisd fsync=always (GiB/s) | $a | $(med put nginx) | $(ratio "$a" "$(med put nginx)") | (info) | |"
	fi
	echo
	echo "Every run (in round order):"
	echo
	for f in "$TMP"/res.*; do
		[ -e "$f" ] || continue
		echo "- ${f##*/res.}: $(tr '\n' ' ' <"$f")"
	done
	if [ $AISD_OK != 1 ]; then
		echo
		echo "aisd could not be started: its column is n/a (see the bench output)."
	elif [ $STATUS != 0 ]; then
		echo
		echo "Some measurements had errors (see the bench output)."
	fi
} >"$MD"

echo
awk -F'|' '/^\|---/ { next } /^\| / { printf "%-50s %12s %12s %11s %8s %5s\n", $2, $3, $4, $5, $6, $7; next } { print }' "$MD"
echo
echo "bench: markdown table written to $MD"
exit $STATUS
