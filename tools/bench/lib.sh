# shellcheck shell=bash disable=SC2034  # the globals it sets are the callers'
# lib.sh - what the bench scripts share (sourced, not run): the temp dir and
# the processes of a run (bench_setup), nginx serving files (start_nginx),
# an aisd cluster of 1 gateway + N targets (start_cluster), aisloader runs
# (run_loader) and the arithmetic of the report (median, ratio).
#
# A script sources it, then calls `bench_setup NAME`; every process it
# starts goes into PIDS, and all are stopped by PID at exit.

BENCH_NAME=${BENCH_NAME:-bench}
LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# die MSG...: the message, prefixed with the bench's name, and exit 1 (a
# script's own die, defined before it sources this file, stays).
declare -F die >/dev/null || die() { echo "$BENCH_NAME: $*" >&2; exit 1; }

# stop_pid PID: SIGTERM, up to 5 s to exit, then SIGKILL; reaps it. Never
# fails (a caller under set -e goes on to the next process).
stop_pid() {
	local pid=$1
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# stop_all: stops every process in PIDS (by PID) and empties it.
stop_all() {
	local p
	for p in "${PIDS[@]}"; do stop_pid "$p"; done
	PIDS=()
}

bench_cleanup() {
	stop_all
	if [ -n "${KEEP:-}" ] && [ "${KEEP:-}" != 0 ]; then
		echo "$BENCH_NAME: kept $TMP" >&2
	else
		rm -rf "$TMP"
	fi
}

# bench_setup NAME: the start of every bench: TMP (a mktemp -d dir, removed
# at exit unless KEEP=1), PIDS (stopped by PID at exit), STATUS=0, and
# messages prefixed with NAME.
bench_setup() {
	BENCH_NAME=$1
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/aisd-$1.XXXXXX") || die "mktemp failed"
	PIDS=()
	STATUS=0
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

# wait_file F SECS: true once F is non-empty, false after SECS seconds.
wait_file() {
	for _ in $(seq $(($2 * 10))); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# wait_http URL SECS: true once URL answers 2xx, false after SECS seconds.
wait_http() {
	for _ in $(seq $(($2 * 10))); do
		curl -fsS -o /dev/null --max-time 1 "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# json_field NAME < line: a number field of aisloader's --json line.
json_field() { sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p"; }

# median < numbers (one a line): the median, or n/a for none.
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "n/a"; else if (NR%2) print v[(NR+1)/2]; else printf "%.4f\n", (v[NR/2]+v[NR/2+1])/2}'; }

# ratio A B: A / B with two decimals, or n/a.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || a == "" || b + 0 == 0) print "n/a"; else printf "%.2f\n", a / b }'; }

# cpu_ticks PID...: utime + stime summed over the processes (fields 14, 15;
# the name in field 2 may hold spaces).
cpu_ticks() {
	local p
	for p in "$@"; do sed 's/^.*) //' "/proc/$p/stat"; done | awk '{ t += $12 + $13 } END { print t }'
}

# free_port: a TCP port on 127.0.0.1 that nobody listens on right now,
# below 32768 (the ephemeral range starts there: tools/free_port.py).
free_port() {
	python3 "$LIB_DIR/../free_port.py"
}

# run_loader LABEL ARGS...: aisloader (LOADER, default $BUILD/aisloader)
# --json ARGS, bounded in time; prints its JSON line. On errors it sets
# STATUS=1 and shows the start of the client's stderr.
run_loader() {
	local label=$1 rc
	shift
	timeout 600 "${LOADER:-$BUILD/aisloader}" --json "$@" >"$TMP/loader.out" 2>"$TMP/loader.err"
	rc=$?
	if [ $rc != 0 ]; then
		STATUS=1
		echo "$BENCH_NAME: $label: aisloader exit $rc:" >&2
		grep -v '^ \|^op \|^(\|^aisloader: [a-z]* http' "$TMP/loader.err" | head -n 8 >&2
	fi
	cat "$TMP/loader.out"
}

# start_nginx [DIR...]: nginx (NGINX, default /usr/sbin/nginx) serving
# $TMP/nginx/root with WebDAV PUT (nginx.conf.in) on a free port; creates
# the DIRs under the root; sets NGINX_PORT and NGINX_PID. Dies when it does
# not start. NGINX_CONF_IN=nginx-proxy.conf.in with NGINX_UPSTREAM=HOST:PORT
# makes it a reverse proxy to that server instead.
start_nginx() {
	local d=$TMP/nginx user="" sub
	mkdir -p "$d/root" "$d/body" "$d/proxy" "$d/fastcgi" "$d/uwsgi" "$d/scgi"
	for sub in "$@"; do mkdir -p "$d/root/$sub"; done
	NGINX_PORT=$(free_port)
	# As root, nginx's workers would run as nobody, who cannot write the
	# 0700 temp dir: keep them as the invoking user.
	[ "$(id -u)" = 0 ] && user="user root root;"
	sed -e "s#@DIR@#$TMP#g" -e "s#@PORT@#$NGINX_PORT#g" -e "s#@USER@#$user#" \
		-e "s#@UPSTREAM@#${NGINX_UPSTREAM:-}#g" "$LIB_DIR/${NGINX_CONF_IN:-nginx.conf.in}" >"$d/nginx.conf"
	"${NGINX:-/usr/sbin/nginx}" -p "$d" -c "$d/nginx.conf" -g 'daemon off;' >"$d/stdout.log" 2>&1 &
	NGINX_PID=$!
	PIDS+=($!)
	# nginx answers 404 for the (empty) root: wait for it to listen at all.
	for _ in $(seq 50); do
		curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$NGINX_PORT/" && return 0
		sleep 0.1
	done
	cat "$d/stdout.log" "$d/error.log" >&2 2>/dev/null
	die "nginx did not start"
}

# smap_count URL [PATTERN]: how many nodes (matching PATTERN, default
# every one) the cluster map of the node at URL lists.
smap_count() {
	curl -fsS --max-time 2 ${AIS_AUTHN_TOKEN:+-H "Authorization: Bearer $AIS_AUTHN_TOKEN"} "$1/v1/cluster?what=smap" 2>/dev/null | grep -o "${2:-\"role\":}" | wc -l
}

# start_target DIR I [ARGS...]: target I (dir DIR/tI, mountpath DIR/tI/mp,
# store.fsync=never) joins the gateway GW. Sets TGT[I] (its URL) and
# TGTPID[I]. False, with the end of its log, when it does not start.
start_target() {
	local d=$1/t$2 i=$2
	shift 2
	mkdir -p "$d/mp"
	"${AISD:-$BUILD/aisd}" --port 0 --port-file "$d/port" -m "$d/mp" --join "$GW" \
		--set store.fsync=never --set log.file="$d/aisd.log" "$@" >"$d/stderr" 2>&1 &
	PIDS+=($!)
	TGTPID[i]=$!
	if ! wait_file "$d/port" 10; then
		echo "$BENCH_NAME: target $i did not start:" >&2
		tail -n 20 "$d/stderr" "$d/aisd.log" >&2 2>/dev/null
		return 1
	fi
	TGT[i]=http://127.0.0.1:$(cat "$d/port")
}

# start_cluster DIR NT [ARGS...]: 1 gateway (DIR/gw) + NT targets
# (start_target) on free loopback ports, ARGS given to every node; waits
# until the gateway's map lists them all. Sets GW, GWPID, TGT[1..NT],
# TGTPID[1..NT]. False, with a message, when it does not come up.
start_cluster() {
	local d=$1 nt=$2 i
	shift 2
	declare -ga TGT=() TGTPID=()
	mkdir -p "$d/gw"
	"${AISD:-$BUILD/aisd}" --role gateway --port 0 --port-file "$d/gw/port" --dir "$d/gw" \
		--set log.file="$d/gw/aisd.log" "$@" >"$d/gw/stderr" 2>&1 &
	GWPID=$!
	PIDS+=("$GWPID")
	if ! wait_file "$d/gw/port" 10; then
		echo "$BENCH_NAME: the gateway did not start:" >&2
		tail -n 20 "$d/gw/stderr" "$d/gw/aisd.log" >&2 2>/dev/null
		return 1
	fi
	GW=http://127.0.0.1:$(cat "$d/gw/port")
	for i in $(seq "$nt"); do start_target "$d" "$i" "$@" || return 1; done
	for _ in $(seq 300); do # 30 s: joins wait for keepalive rounds on a loaded machine
		[ "$(smap_count "$GW")" -ge $((nt + 1)) ] && return 0
		sleep 0.1
	done
	echo "$BENCH_NAME: the cluster map lacks targets" >&2
	return 1
}

# (smap_count and create_bucket send $AIS_AUTHN_TOKEN as a bearer token
# when it is set: a cluster with auth.enabled.)
# create_bucket URL NAME: POST create-bck (following the 307 to the
# primary). False, with the answer, on failure.
create_bucket() {
	local code out=$TMP/create.out
	code=$(curl -sL -o "$out" -w '%{http_code}' --max-time 10 -X POST "$1/v1/buckets/$2" \
		${AIS_AUTHN_TOKEN:+-H "Authorization: Bearer $AIS_AUTHN_TOKEN"} \
		-d '{"action":"create-bck"}')
	[ "${code:0:1}" = 2 ] && return 0
	echo "$BENCH_NAME: create-bck $2 answered $code: $(head -c 300 "$out")" >&2
	return 1
}
