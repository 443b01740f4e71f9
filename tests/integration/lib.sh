# shellcheck shell=bash
# lib.sh - helpers for the shell integration tests; source it.
#
# Environment (set by run.sh): AISD_URL, AISD_PID, AISD_DIR, AISD_BIN,
# AISCTL, AISD_PORT, AISD_ARGS (the extra daemon options of this test),
# TMPDIR. The target was started as
#   $AISD_BIN --port $AISD_PORT -m $AISD_DIR/mp1 -m $AISD_DIR/mp2
#             --set log.file=$AISD_DIR/aisd.log $AISD_ARGS
# and its current PID is kept in $AISD_DIR/pid (restart_target updates it,
# and the runner stops whatever PID it holds at the end).
#
# Reporting: ok/fail print TAP-like lines and count; check runs a command;
# finish exits 1 if anything failed. Every wait here is bounded.

if [ -z "${IT_RUNNER:-}" ]; then
	: "${AISD_URL:?run me through tests/integration/run.sh}"
	: "${AISD_DIR:?}" "${AISD_BIN:?}"
	AISD_PORT=${AISD_PORT:-${AISD_URL##*:}}
fi

T_N=0
T_FAILS=0
ok() { T_N=$((T_N + 1)); echo "ok $T_N - $*"; }
fail() { T_N=$((T_N + 1)); T_FAILS=$((T_FAILS + 1)); echo "not ok $T_N - $*"; }
# skip WHAT WHY: a check that did not run; the runner counts it as skipped.
skip() { T_N=$((T_N + 1)); echo "ok $T_N - $1 # SKIP $2"; }
# diag MSG: a "# " comment line.
diag() { echo "# $*"; }
# check WHAT CMD...: ok if CMD succeeds.
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}
# check_eq WHAT GOT WANT
check_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else fail "$1 (got '$2', want '$3')"; fi
}
finish() {
	echo "# $T_N checks, $T_FAILS failed"
	[ "$T_FAILS" = 0 ]
	exit $?
}

# pid_alive PID: true while PID runs (a zombie counts as gone).
pid_alive() {
	local st
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# wait_gone PID SECONDS: waits (bounded) until PID is gone.
wait_gone() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		pid_alive "$1" || return 0
		sleep 0.1
	done
	return 1
}

# wait_health URL [SECONDS]: waits until GET URL/v1/health answers 200.
wait_health() {
	local url=$1 secs=${2:-10} i
	for ((i = 0; i < secs * 10; i++)); do
		[ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$url/v1/health")" = 200 ] && return 0
		sleep 0.1
	done
	return 1
}

# free_port: prints a TCP port free on 127.0.0.1 right now, below 32768
# (the ephemeral range starts there); when run.sh hands this test a port
# range of its own (AISD_PORT_RANGE=LO-HI, tests running at once) a port
# from it (tools/free_port.py).
free_port() {
	/usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/../../tools/free_port.py"
}

# start_target [ARGS...]: starts the target on $AISD_PORT with the test's
# mountpaths and log, plus $AISD_ARGS and ARGS; updates AISD_PID and
# $AISD_DIR/pid; waits for health (10 s). Returns 1 if it did not come up.
start_target() {
	rm -f "$AISD_DIR/port"
	# shellcheck disable=SC2086
	"$AISD_BIN" --port "$AISD_PORT" --port-file "$AISD_DIR/port" -m "$AISD_DIR/mp1" -m "$AISD_DIR/mp2" \
		--set "log.file=$AISD_DIR/aisd.log" $AISD_ARGS "$@" </dev/null >>"$AISD_DIR/aisd.stderr" 2>&1 &
	AISD_PID=$!
	echo "$AISD_PID" >"$AISD_DIR/pid"
	export AISD_PID
	local i
	for ((i = 0; i < 100; i++)); do
		[ -s "$AISD_DIR/port" ] && break
		pid_alive "$AISD_PID" || break
		sleep 0.1
	done
	wait_health "$AISD_URL" 10
}

# stop_target [-9]: stops the target (SIGTERM, SIGKILL after 10 s; or at
# once with -9) and waits until it is gone.
stop_target() {
	if [ "${1:-}" = -9 ]; then
		kill -9 "$AISD_PID" 2>/dev/null
	else
		kill -TERM "$AISD_PID" 2>/dev/null
		wait_gone "$AISD_PID" 10 || kill -9 "$AISD_PID" 2>/dev/null
	fi
	wait_gone "$AISD_PID" 10
	wait "$AISD_PID" 2>/dev/null
	return 0
}

# restart_target [-9] [ARGS...]: stops the target (SIGTERM, or kill -9
# with -9) and starts it again on the same port and mountpaths with
# $AISD_ARGS plus ARGS. Returns 1 if it did not come back.
restart_target() {
	if [ "${1:-}" = -9 ]; then
		shift
		stop_target -9
	else
		stop_target
	fi
	start_target "$@"
}

# --- HTTP with curl -------------------------------------------------------

# req METHOD PATH [CURL ARGS...]: sends a request to the target; sets
# R_CODE, writes the body to $R_BODY and the headers to $R_HDRS.
R_BODY=${TMPDIR:-/tmp}/.r_body
R_HDRS=${TMPDIR:-/tmp}/.r_hdrs
req() {
	local m=$1 p=$2
	shift 2
	local -a mflag=(-X "$m")
	[ "$m" = HEAD ] && mflag=(-I)
	R_CODE=$(curl -s -m 120 "${mflag[@]}" -o "$R_BODY" -D "$R_HDRS" -w '%{http_code}' "$@" "$AISD_URL$p")
}
# hdr NAME: the value of header NAME in the last response ("" if none).
hdr() {
	awk -v n="$(echo "$1" | tr '[:upper:]' '[:lower:]')" 'BEGIN{FS=": "} {sub(/\r$/, "")}
		tolower($1) == n { sub(/^[^:]*: */, ""); print; exit }' "$R_HDRS"
}
# json_get FIELD < body: a top-level JSON field of stdin ("" if none).
json_get() {
	/usr/bin/python3 -c 'import json, sys
try:
    v = json.load(sys.stdin).get(sys.argv[1], "")
except Exception:
    v = "<not JSON>"
print(v)' "$1"
}
# is_error_json STATUS: the last body is {"message": "...", "status": STATUS}.
is_error_json() {
	/usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if isinstance(d.get("message"), str) and d["message"] and d.get("status") == int(sys.argv[2]) else 1)' \
		"$R_BODY" "$1" 2>/dev/null
}
# create_bucket NAME [CKSUM]: POST create-bck; returns 1 unless 200.
create_bucket() {
	local body='{"action":"create-bck"}'
	[ -n "${2:-}" ] && body="{\"action\":\"create-bck\",\"value\":{\"checksum\":{\"type\":\"$2\"}}}"
	req POST "/v1/buckets/$1" -H 'Content-Type: application/json' --data-binary "$body"
	[ "$R_CODE" = 200 ]
}
# xxh64_file FILE: XXH64 (seed 0) of FILE as 16 hex digits (libxxhash via
# ctypes: the daemon links it, so it is installed wherever aisd runs).
xxh64_file() {
	/usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/itlib.py" xxh64 "$1"
}
# tmp_files: lists files left under the mountpaths' temp directories.
tmp_files() {
	find "$AISD_DIR"/mp*/tmp -type f 2>/dev/null
}
