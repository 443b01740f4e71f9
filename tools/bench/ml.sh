#!/usr/bin/env bash
# ml.sh - make bench-ml: ShardDataset reading the same WebDataset shards
# from aisd, from nginx (plain HTTP, the way WebDataset users serve shards)
# and from local files, in one run on this machine. (make bench-ml then runs
# tools/bench/getbatch.sh and archpath.sh.)
#
# Generates TOTAL bytes of shards (default 2 GiB in 100 MB shards of
# ~100 KB samples: KEY.jpg of 50-150 KB and KEY.cls) under a mktemp -d dir
# that nginx serves, starts 1 gateway + TARGETS targets (store.fsync=never)
# and uploads the same files into bucket "ml". Each measurement is one epoch
# of tools/python's ShardDataset in a torch DataLoader with WORKERS workers
# (tools/bench/ml_bench.py read: same tar parsing, same worker split, the
# workers count samples and bytes): from aisd through the gateway (307 to
# the owner; the target, on this host, hands over each shard's file as an
# open descriptor over its unix socket: the client's default), from aisd
# over TCP only (aisd-tcp: --no-local, keep-alive, streamed, what a client
# on another host gets), from nginx by URL, from the local files.
# One untimed epoch of each first (page cache warm for all three: the data
# is read from memory, so this measures the serving and client path). Then
# ROUNDS rounds, the order of the four rotating each round; reports
# medians of samples/s and GB/s and the ratios aisd/nginx (goal >= 0.95)
# and aisd/local (goal >= 0.8), the same for aisd-tcp, and each server's
# CPU seconds per GB read
# (from /proc/PID/stat of its processes: less sensitive to other load); a run that reads a different number of
# samples or bytes than the others is an error. The table is also written
# as markdown to $BUILD/bench-ml.md. Every process is stopped by its PID
# and the temp dir removed on exit (KEEP=1 keeps it). Every run is bounded
# in time.
#
# Environment: BUILD (build), ROUNDS (5), TOTAL (2GiB), SHARD (100MB),
# SAMPLE (100KB), WORKERS (DataLoader workers, 4), TARGETS (1), KEEP.
# A smoke run: TOTAL=64MiB SHARD=8MB ROUNDS=1 make bench-ml.
# Exit status: 0 when every measurement ran without errors, 1 otherwise.
set -u

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
TOTAL=${TOTAL:-2GiB}
SHARD=${SHARD:-100MB}
SAMPLE=${SAMPLE:-100KB}
WORKERS=${WORKERS:-4}
TARGETS=${TARGETS:-1}
AISD=$BUILD/aisd
NGINX=/usr/sbin/nginx
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
MLB=$HERE/ml_bench.py

die() { echo "ml-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$HERE/lib.sh"
[ -x "$AISD" ] || die "$AISD not built (make BUILD=$BUILD)"
[ -x "$NGINX" ] || die "$NGINX missing (tools/install-deps.sh installs nginx-light)"
"$PY" -c 'import torch' 2>/dev/null || die "$PY cannot import torch (tools/install-deps.sh installs python3-torch)"

bench_setup ml-bench

# read_epoch SRC ARGS...: one epoch; prints the JSON line; marks STATUS on errors.
read_epoch() {
	local src=$1 out
	shift
	if ! out=$(timeout 900 "$PY" "$MLB" read --workers "$WORKERS" "$@" 2>"$TMP/read.err") || [ -z "$out" ]; then
		STATUS=1
		echo "ml-bench: $src: read failed:" >&2
		tail -n 8 "$TMP/read.err" >&2
		return 1
	fi
	echo "$out"
}

field() { sed -n "s/.*\"$1\": \([0-9.eE+-]*\).*/\1/p"; }

# srv_ticks SRC: CPU ticks (user + system, all threads) used so far by the
# server of SRC: the gateway and targets, nginx's master and workers, 0 for
# local files.
srv_ticks() {
	local p t=0 pids=()
	case $1 in
	aisd | aisd-tcp) pids=("${AISD_PIDS[@]}") ;;
	nginx) mapfile -t pids < <(echo "$NGINX_PID"; pgrep -P "$NGINX_PID") ;;
	esac
	for p in "${pids[@]}"; do
		# fields 14 and 15 after the ")" that ends the command name
		t=$((t + $(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{ print $12 + $13 }' || echo 0)))
	done
	echo "$t"
}
HZ=$(getconf CLK_TCK)

echo "ml-bench: temp dir $TMP; $TOTAL in $SHARD shards of ~$SAMPLE samples; $ROUNDS rounds, $WORKERS workers" >&2
start_nginx ml
NGINX_PID=${PIDS[-1]}
DATA=$TMP/nginx/root/ml
gen=$(timeout 1800 "$PY" "$MLB" gen "$DATA" --total "$TOTAL" --shard "$SHARD" --sample "$SAMPLE") ||
	die "generating shards failed"
NS=$(echo "$gen" | field samples)
echo "ml-bench: generated $gen" >&2
N0=${#PIDS[@]}
start_cluster "$TMP/aisd" "$TARGETS" || die "the cluster did not start"
AISD_PIDS=("${PIDS[@]:N0}")
create_bucket "$GW" ml || die "cannot create bucket ml"
timeout 1800 "$PY" "$MLB" upload "$DATA" "$GW" ml train/ --jobs 4 >/dev/null || die "upload to aisd failed"
for f in "$DATA"/*.tar; do echo "http://127.0.0.1:$NGINX_PORT/ml/${f##*/}"; done >"$TMP/nginx.list"
ls "$DATA"/*.tar >"$TMP/local.list"

declare -A ARGS=(
	[aisd]="aisd://${GW#http://}/ml/train/"
	[aisd-tcp]="--no-local aisd://${GW#http://}/ml/train/"
	[nginx]="@$TMP/nginx.list"
	[local]="@$TMP/local.list"
)
SRCS=(aisd aisd-tcp nginx local)
declare -A BYTES
for s in "${SRCS[@]}"; do # warm-up, and every source reads every sample
	line=$(read_epoch "$s" ${ARGS[$s]} --expect "$NS") || continue
	BYTES[$s]=$(echo "$line" | field bytes)
	echo "  warm-up  $s: $line" >&2
done
for s in aisd aisd-tcp nginx; do
	if [ "${BYTES[$s]:-x}" != "${BYTES[local]:-y}" ]; then
		STATUS=1
		echo "ml-bench: $s read ${BYTES[$s]:-?} bytes, the local files ${BYTES[local]:-?}" >&2
	fi
done

for r in $(seq "$ROUNDS"); do
	k=$(((r - 1) % ${#SRCS[@]}))
	order=("${SRCS[@]:$k}" "${SRCS[@]:0:$k}")
	echo "ml-bench: round $r/$ROUNDS (${order[*]})" >&2
	for s in "${order[@]}"; do
		t0=$(srv_ticks "$s")
		line=$(read_epoch "$s" ${ARGS[$s]} --expect "$NS") || continue
		t1=$(srv_ticks "$s")
		cpu=$(awk -v t=$((t1 - t0)) -v hz="$HZ" -v b="$(echo "$line" | field bytes)" \
			'BEGIN { printf "%.2f\n", t / hz / (b / 1e9) }')
		printf '  %-6s %s server CPU %s s/GB\n' "$s" "$line" "$cpu" >&2
		echo "$line" | field samples_per_s >>"$TMP/res.sps.$s"
		echo "$line" | field gbps >>"$TMP/res.gbps.$s"
		echo "$cpu" >>"$TMP/res.cpu.$s"
	done
done

med() { if [ -s "$TMP/res.$1.$2" ]; then median <"$TMP/res.$1.$2"; else echo n/a; fi; }
verdict() { awk -v r="$1" -v g="$2" 'BEGIN { if (r == "n/a") print "n/a"; else if (r + 0 >= g + 0) print "PASS"; else print "FAIL" }'; }

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
MD=$BUILD/bench-ml.md
A=$(med gbps aisd) T=$(med gbps aisd-tcp) N=$(med gbps nginx) L=$(med gbps local)
{
	echo "## ShardDataset: aisd vs nginx vs local files ($(date -u +%Y-%m-%d))"
	echo
	echo "Machine: $(nproc) CPUs, ${CPU:-unknown CPU}, Linux $(uname -r)."
	echo "Data: $gen (shards of at most $SHARD, samples ~$SAMPLE + a .cls), page cache warm."
	echo "Client: tools/python ShardDataset in a torch DataLoader, $WORKERS workers, one epoch per run;"
	echo "aisd: 1 gateway + $TARGETS target(s), read through the gateway's 307, the shard files handed over as"
	echo "descriptors by the target on this host (aisd) or sent over TCP (aisd-tcp); nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'):"
	echo "sendfile, 2 workers; local: the same files opened directly. $ROUNDS rounds, order rotating, medians."
	echo
	echo "| source | samples/s | GB/s | server CPU s per GB |"
	echo "|---|---:|---:|---:|"
	for s in "${SRCS[@]}"; do echo "| $s | $(med sps "$s") | $(med gbps "$s") | $(med cpu "$s") |"; done
	echo
	echo "| ratio | value | goal | |"
	echo "|---|---:|---:|---|"
	r=$(ratio "$A" "$N")
	echo "| aisd / nginx (GB/s) | $r | >= 0.95 | $(verdict "$r" 0.95) |"
	r=$(ratio "$A" "$L")
	echo "| aisd / local files (GB/s) | $r | >= 0.8 | $(verdict "$r" 0.8) |"
	r=$(ratio "$T" "$N")
	echo "| aisd-tcp / nginx (GB/s) | $r | >= 0.95 | $(verdict "$r" 0.95) |"
	r=$(ratio "$T" "$L")
	echo "| aisd-tcp / local files (GB/s) | $r | >= 0.8 | $(verdict "$r" 0.8) |"
	echo
	echo "Every run (GB/s, in round order):"
	echo
	for s in "${SRCS[@]}"; do echo "- $s: $(tr '\n' ' ' <"$TMP/res.gbps.$s" 2>/dev/null)"; done
	echo
	echo "Server CPU seconds per GB read (user + system of the gateway and targets, of"
	echo "nginx's processes; less sensitive to other load than GB/s), in round order:"
	echo
	for s in aisd aisd-tcp nginx; do echo "- $s: $(tr '\n' ' ' <"$TMP/res.cpu.$s" 2>/dev/null)"; done
	[ $STATUS != 0 ] && echo && echo "Some runs had errors (see the bench output)."
} >"$MD"
echo
awk -F'|' '/^\|---/ { next } /^\| / { printf "%-28s %12s %10s %10s %5s\n", $2, $3, $4, $5, $6; next } { print }' "$MD"
echo
echo "ml-bench: markdown written to $MD"
exit $STATUS
