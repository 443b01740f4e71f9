#!/usr/bin/env bash
# test_crash.sh - kill -9 the target in the middle of a stream of PUTs (5
# rounds), in the middle of a slow GET and of a slow PUT, and stop it with
# SIGTERM mid-stream; after each restart on the same port and mountpaths:
# every acknowledged object reads back identical with its checksum, every
# listed object is whole (nothing half-written is visible), the object being
# written when it died is either absent or whole, and no temp files remain.
# The client side is crash_io.py.
set -u
source "$(dirname "$0")/lib.sh"
IO=(/usr/bin/python3 "$(dirname "$0")/crash_io.py")

create_bucket crash
check_eq "create bucket crash" "$R_CODE" 200
create_bucket crashbig
check_eq "create bucket crashbig" "$R_CODE" 200

# wait_file FILE SECONDS [LINE-PATTERN]: until FILE exists (and has a line
# matching the pattern).
wait_file() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		if [ -e "$1" ] && { [ -z "${3:-}" ] || grep -q "$3" "$1"; }; then return 0; fi
		sleep 0.1
	done
	return 1
}

# after_restart WHAT: the checks due after every restart.
after_restart() {
	check_eq "$1: no temp files under mp*/tmp after the restart" "$(tmp_files | head -3)" ""
	if "${IO[@]}" verify crash "${LOGS[@]}"; then
		ok "$1: acknowledged objects intact, nothing half-written visible"
	else
		fail "$1: acknowledged objects intact, nothing half-written visible"
	fi
}

LOGS=()
for round in 1 2 3 4 5; do
	log=$TMPDIR/round$round.log
	: >"$log"
	LOGS+=("$log")
	timeout 120 "${IO[@]}" write crash "r$round" "$log" &
	wpid=$!
	# let some PUTs through, then a random delay of 0.1 .. 1.5 s
	wait_file "$log" 30 '^ack ' || fail "round $round: the writer made no progress"
	sleep "0.$((RANDOM % 9 + 1))"
	[ $((RANDOM % 2)) = 0 ] && sleep 0.6
	if restart_target -9; then
		ok "round $round: kill -9 after $(grep -c '^ack' "$log") PUTs, restarted on the same port"
	else
		fail "round $round: target did not come back"
		break
	fi
	wait "$wpid"
	after_restart "round $round"
done

# --- a reader holds a GET open while the target dies -----------------------
BIG=$((64 << 20))
if "${IO[@]}" put crashbig big-get $BIG; then ok "PUT a 64 MiB object"; else fail "PUT a 64 MiB object"; fi
rm -f "$TMPDIR/get.ready"
timeout 120 "${IO[@]}" slowget crashbig big-get "$TMPDIR/get.ready" &
gpid=$!
check "a slow GET is reading" wait_file "$TMPDIR/get.ready" 30
check "kill -9 during the GET, restart" restart_target -9
kill "$gpid" 2>/dev/null # it may still be draining what the kernel had buffered
wait "$gpid"
check "the object read during the crash is whole" "${IO[@]}" check crashbig big-get $BIG
after_restart "crash during a GET"

# --- the target dies in the middle of a slow 64 MiB PUT ---------------------
rm -f "$TMPDIR/put.ready"
timeout 120 "${IO[@]}" slowput crashbig big-put "$TMPDIR/put.ready" &
ppid=$!
check "a slow PUT is sending" wait_file "$TMPDIR/put.ready" 30
check "kill -9 during the PUT, restart" restart_target -9
kill "$ppid" 2>/dev/null
wait "$ppid"
req HEAD /v1/objects/crashbig/big-put
check_eq "the interrupted PUT left no object" "$R_CODE" 404
after_restart "crash during a PUT"

# --- a graceful stop in the middle of the stream ------------------------------
log=$TMPDIR/term.log
: >"$log"
LOGS+=("$log")
timeout 120 "${IO[@]}" write crash term "$log" &
wpid=$!
wait_file "$log" 30 '^ack ' || fail "SIGTERM round: the writer made no progress"
sleep 0.3
check "SIGTERM mid-stream, restart" restart_target
wait "$wpid"
after_restart "SIGTERM mid-stream"

# --- object files: once the reconcile is done, one per listed object ----------
listed=$( (
	curl -s "$AISD_URL/v1/buckets/crash?props=name&pagesize=10000"
	echo
	curl -s "$AISD_URL/v1/buckets/crashbig?props=name&pagesize=10000"
) | /usr/bin/python3 -c 'import json, sys
print(sum(len(json.loads(l)["entries"]) for l in sys.stdin if l.strip()))')
for ((i = 0; i < 150; i++)); do
	files=$(find "$AISD_DIR"/mp*/obj -type f | wc -l)
	[ "$files" = "$listed" ] && break
	sleep 0.1
done
check_eq "object files on disk match the listed objects (no orphans after reconcile)" "$files" "$listed"

finish
