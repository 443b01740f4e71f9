#!/usr/bin/env bash
# run.sh - the integration test runner (make check-integration).
#
# For each tests/integration/test_*.sh and test_*.py, in sorted order: a
# fresh temp dir, a fresh target on a free loopback port with two
# mountpaths there, the test run against it (bounded by a timeout), then
# the target stopped. A test passes when it exits 0, prints at least one
# "ok" line and no "not ok" line, and no log under its temp dir (the
# target's and every node's: aisd.log*, aisd.out, aisd.stderr, stderr)
# holds an error-level line the test did not announce or a sanitizer
# report (LeakSanitizer's included). A test announces the error lines it
# provokes with lines
#   # log-allow: EXTENDED-REGEX
# A check printed as "ok N - WHAT # SKIP WHY" is a skip, not a pass; a test
# whose every check skipped counts as skipped. Ends with the check counts
# and exactly one closing line
#   integration: N passed, N failed, N skipped
# (tests), and exits non-zero if any test failed.
#
# Environment: BUILD (default build) holds aisd and aisctl; KEEP=1 keeps
# the temp dirs (their paths are printed), KEEP=failed those of failed
# tests; TEST_TIMEOUT seconds per test (default 300; when above a test's own
# "# timeout:" it raises that too, for long runs like REB_N=20000); ONLY=PATTERN runs the
# tests whose file name contains PATTERN.
#
# Each test gets AISD_URL, AISD_PID, AISD_DIR, AISD_PORT, AISD_BIN, AISCTL,
# AISD_ARGS and TMPDIR=AISD_DIR/tmp; shell tests source lib.sh, Python
# tests import itlib.py (run with /usr/bin/python3, standard library only).
# A test asks for extra daemon options with a line
#   # aisd-args: --set net.header_timeout=1s
# and for a longer bound with "# timeout: SECONDS".
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-build}
BIN=$(cd "$BUILD" 2>/dev/null && pwd)/aisd
CTL=$(cd "$BUILD" 2>/dev/null && pwd)/aisctl
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
PY=/usr/bin/python3

if [ ! -x "$BIN" ]; then
	echo "run.sh: $BUILD/aisd not built" >&2
	echo "integration: 0 passed, 1 failed, 0 skipped"
	exit 1
fi

IT_RUNNER=1 source "$HERE/lib.sh" # pid_alive, wait_gone, wait_health

# log_problems DIR TEST: error-level log lines ("<time> E <node>[pid] ...")
# that TEST's "# log-allow:" patterns do not cover, and sanitizer reports,
# in every daemon log and stderr file under DIR.
log_problems() {
	local d=$1 t=$2 allow
	allow=$(sed -n 's/^# log-allow: *//p' "$t")
	find "$d" -type f \( -name 'aisd.log' -o -name 'aisd.log.[0-9]*' -o -name aisd.out \
		-o -name aisd.stderr -o -name stderr \) ! -name '*.gz' -print0 2>/dev/null |
		while IFS= read -r -d '' f; do
			rel=${f#"$d"/}
			grep -E '^[^ ]+ E ' "$f" | { if [ -n "$allow" ]; then grep -v -E -f <(printf '%s\n' "$allow"); else cat; fi; } |
				sed "s|^|$rel: |"
			grep -E 'ERROR: AddressSanitizer|runtime error:|LeakSanitizer|ERROR: ThreadSanitizer' "$f" |
				sed "s|^|$rel: |"
		done | head -20
}

# stop_pid PID: SIGTERM, then SIGKILL after 10 s; waits until gone.
stop_pid() {
	local pid=$1
	pid_alive "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null
	if ! wait_gone "$pid" 10; then
		echo "#   target $pid ignored SIGTERM for 10 s: SIGKILL"
		kill -9 "$pid" 2>/dev/null
		wait_gone "$pid" 10
		return 1
	fi
	return 0
}

passed=0
failed=0
skipped=0
c_ok=0
c_fail=0
c_skip=0
shopt -s nullglob
tests=("$HERE"/test_*.sh "$HERE"/test_*.py)
mapfile -t tests < <(printf '%s\n' "${tests[@]}" | LC_ALL=C sort)

for t in "${tests[@]}"; do
	name=$(basename "$t")
	if [ -n "${ONLY:-}" ] && [[ $name != *$ONLY* ]]; then
		continue
	fi
	dir=$(mktemp -d "${TMPDIR:-/tmp}/aisd-it.${name%.*}.XXXXXX")
	mkdir -p "$dir/tmp"
	args=$(sed -n 's/^# aisd-args: *//p' "$t" | tr '\n' ' ')
	tmo=$(sed -n 's/^# timeout: *\([0-9][0-9]*\).*/\1/p' "$t" | head -1)
	tmo=${tmo:-$TEST_TIMEOUT}
	[ "$TEST_TIMEOUT" -gt "$tmo" ] && tmo=$TEST_TIMEOUT # a bigger TEST_TIMEOUT raises a test's own bound
	echo "# --- $name${args:+ (aisd $args)}"
	start=$(date +%s)
	why=""

	# shellcheck disable=SC2086
	"$BIN" --port 0 --port-file "$dir/port" -m "$dir/mp1" -m "$dir/mp2" \
		--set "log.file=$dir/aisd.log" $args </dev/null >>"$dir/aisd.stderr" 2>&1 &
	pid=$!
	disown "$pid" # no "Killed" job notices when a test kill -9s it
	echo "$pid" >"$dir/pid"
	for ((i = 0; i < 100; i++)); do
		[ -s "$dir/port" ] && break
		pid_alive "$pid" || break
		sleep 0.1
	done
	port=$(cat "$dir/port" 2>/dev/null)
	url="http://127.0.0.1:$port"
	if [ -z "$port" ] || ! wait_health "$url" 10; then
		why="target did not start"
		sed 's/^/#   /' "$dir/aisd.stderr" "$dir/aisd.log" 2>/dev/null | tail -20
	else
		case $t in
		*.py) cmd=("$PY" "$t") ;;
		*) cmd=(bash "$t") ;;
		esac
		(
			cd "$dir" &&
				AISD_URL=$url AISD_PID=$pid AISD_DIR=$dir AISD_PORT=$port AISD_BIN=$BIN \
					AISCTL=$CTL AISD_ARGS=$args TMPDIR=$dir/tmp IT_LIB=$HERE \
					PYTHONPATH=$HERE PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
					timeout -k 10 "$tmo" "${cmd[@]}" </dev/null
		) 2>&1 | tee "$dir/test.out"
		rc=${PIPESTATUS[0]}
		if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			why="timed out after ${tmo}s"
		elif [ "$rc" != 0 ]; then
			why="exit status $rc"
		elif grep -q '^not ok' "$dir/test.out"; then
			why="a check failed"
		elif ! grep -q '^ok' "$dir/test.out"; then
			why="no check ran"
		fi
	fi

	pid=$(cat "$dir/pid" 2>/dev/null || echo "$pid")
	if ! stop_pid "$pid"; then
		why="${why:+$why; }target did not stop on SIGTERM"
	fi
	probs=$(log_problems "$dir" "$t")
	if [ -n "$probs" ]; then
		why="${why:+$why; }errors in a node log"
		echo "$probs" | sed 's/^/#   log: /'
	fi
	secs=$(($(date +%s) - start))
	n_skip=$(grep -c -E '^ok .*# *(SKIP|skip)' "$dir/test.out" 2>/dev/null)
	n_ok=$(grep -c '^ok' "$dir/test.out" 2>/dev/null)
	n_fail=$(grep -c '^not ok' "$dir/test.out" 2>/dev/null)
	c_ok=$((c_ok + ${n_ok:-0} - ${n_skip:-0}))
	c_fail=$((c_fail + ${n_fail:-0}))
	c_skip=$((c_skip + ${n_skip:-0}))
	if [ -z "$why" ] && [ "${n_skip:-0}" -gt 0 ] && [ "${n_skip:-0}" = "${n_ok:-0}" ]; then
		skipped=$((skipped + 1))
		echo "SKIP $name (${secs}s): $(grep -m1 -E '^ok .*# *(SKIP|skip)' "$dir/test.out" | sed -E 's/.*# *(SKIP|skip) *//')"
	elif [ -z "$why" ]; then
		passed=$((passed + 1))
		extra=""
		[ "${n_skip:-0}" -gt 0 ] && extra=", $n_skip checks skipped"
		echo "PASS $name (${secs}s$extra)"
	else
		failed=$((failed + 1))
		echo "FAIL $name (${secs}s): $why"
	fi
	if [ "${KEEP:-0}" = 1 ] || { [ -n "$why" ] && [ "${KEEP:-0}" = failed ]; }; then
		echo "#   kept $dir"
	else
		# a test that died may have left a mount behind: undo it, and never
		# delete through one
		awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/mounts 2>/dev/null |
			while read -r m; do umount "$m" 2>/dev/null; done
		if grep -q " $dir/" /proc/mounts 2>/dev/null; then
			echo "#   $dir has a mount left: not removed"
		else
			rm -rf "$dir"
		fi
	fi
done

echo "integration checks: $c_ok passed, $c_fail failed, $c_skip skipped"
echo "integration: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
