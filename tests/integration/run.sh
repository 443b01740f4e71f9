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
# JOBS=N (1 to 99, default 1) runs up to N tests at once, each with its own temp dir
# and target as above; a test's report (its output, then its PASS, FAIL or
# SKIP line) is collected in a file and printed whole when it ends, so
# reports come in the order tests end, never interleaved, and the totals
# count every test once. Each running test gets a port range of its own,
# AISD_PORT_RANGE=LO-HI (a share of 20000..31999), from which lib.sh's
# free_port and clulib.py's free_port and low_port draw (checked free by
# binding), so tests running at once never pick the same port. A test that
# must run alone (network namespaces, nspawn hosts, systemd, packages
# installed into the system, tmpfs mounts, a 4 GiB file) has a line
#   # serial: WHY
# and runs with nothing else running. JOBS=1 runs the tests one after
# another with their output as it comes, and no AISD_PORT_RANGE.
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
JOBS=${JOBS:-1}
[[ $JOBS =~ ^[1-9][0-9]?$ ]] || { echo "run.sh: JOBS must be 1 to 99, not '$JOBS'" >&2; exit 2; }
RUN=$(mktemp -d "${TMPDIR:-/tmp}/aisd-it-run.XXXXXX") # per-test output and result files
trap 'rm -rf "$RUN"' EXIT
shopt -s nullglob
tests=("$HERE"/test_*.sh "$HERE"/test_*.py)
mapfile -t tests < <(printf '%s\n' "${tests[@]}" | LC_ALL=C sort)

# run_one TEST RESFILE: one test as described above, its report on stdout;
# writes "OUTCOME N_OK N_FAIL N_SKIP" (OUTCOME pass, fail or skip; N_OK
# counts the skipped checks too) to RESFILE for collect.
run_one() {
	local t=$1 res=$2 name dir args tmo start why pid i port url cmd rc probs secs n_skip n_ok n_fail extra
	name=$(basename "$t")
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
	if [ -z "$why" ] && [ "${n_skip:-0}" -gt 0 ] && [ "${n_skip:-0}" = "${n_ok:-0}" ]; then
		echo skip "${n_ok:-0} ${n_fail:-0} ${n_skip:-0}" >"$res"
		echo "SKIP $name (${secs}s): $(grep -m1 -E '^ok .*# *(SKIP|skip)' "$dir/test.out" | sed -E 's/.*# *(SKIP|skip) *//')"
	elif [ -z "$why" ]; then
		echo pass "${n_ok:-0} ${n_fail:-0} ${n_skip:-0}" >"$res"
		extra=""
		[ "${n_skip:-0}" -gt 0 ] && extra=", $n_skip checks skipped"
		echo "PASS $name (${secs}s$extra)"
	else
		echo fail "${n_ok:-0} ${n_fail:-0} ${n_skip:-0}" >"$res"
		echo "FAIL $name (${secs}s): $why"
		# the summary at the end names it again, with its failed checks
		# (or, with none, the last lines it printed)
		{
			echo "FAIL $name (${secs}s): $why"
			if grep -q '^not ok' "$dir/test.out" 2>/dev/null; then
				grep '^not ok' "$dir/test.out" | head -20
			else
				tail -n 8 "$dir/test.out" 2>/dev/null
			fi | sed 's/^/    /'
		} >>"$RUN/failed.txt"
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
}

# collect RESFILE: adds one test's outcome and check counts to the totals.
collect() {
	local outcome n_ok n_fail n_skip
	read -r outcome n_ok n_fail n_skip <"$1" 2>/dev/null || { outcome=fail n_ok=0 n_fail=0 n_skip=0; }
	case $outcome in
	pass) passed=$((passed + 1)) ;;
	skip) skipped=$((skipped + 1)) ;;
	*) failed=$((failed + 1)) ;;
	esac
	c_ok=$((c_ok + n_ok - n_skip))
	c_fail=$((c_fail + n_fail))
	c_skip=$((c_skip + n_skip))
}

# JOBS>1: job_idx[PID] is the test number of a running background test,
# job_slot[PID] its slot (0..JOBS-1), which hands it a port range of its
# own (AISD_PORT_RANGE, used by free_port and low_port in lib.sh and
# clulib.py) so that tests running at once never pick the same port.
declare -A job_idx=() job_slot=()
declare -a slot_busy=()
span=$((12000 / JOBS))

# reap: waits for one running background test to end, prints its whole
# report and adds it to the totals.
reap() {
	local done_pid="" i
	wait -n -p done_pid "${!job_idx[@]}"
	[ -n "$done_pid" ] || return 1
	i=${job_idx[$done_pid]}
	cat "$RUN/$i.out"
	collect "$RUN/$i.res"
	slot_busy[${job_slot[$done_pid]}]=0
	unset "job_idx[$done_pid]" "job_slot[$done_pid]"
}

n=0
for t in "${tests[@]}"; do
	name=$(basename "$t")
	if [ -n "${ONLY:-}" ] && [[ $name != *$ONLY* ]]; then
		continue
	fi
	n=$((n + 1))
	if [ "$JOBS" = 1 ]; then
		run_one "$t" "$RUN/$n.res"
		collect "$RUN/$n.res"
		continue
	fi
	if grep -q -E '^# serial( |:|$)' "$t"; then
		# runs alone: wait for the others, then in the foreground
		while [ ${#job_idx[@]} -gt 0 ]; do reap || break; done
		run_one "$t" "$RUN/$n.res"
		collect "$RUN/$n.res"
		continue
	fi
	while [ ${#job_idx[@]} -ge "$JOBS" ]; do reap || break; done
	for ((k = 0; k < JOBS; k++)); do
		[ "${slot_busy[k]:-0}" = 1 ] || break
	done
	slot_busy[k]=1
	AISD_PORT_RANGE="$((20000 + k * span))-$((20000 + (k + 1) * span - 1))" \
		run_one "$t" "$RUN/$n.res" >"$RUN/$n.out" 2>&1 &
	job_idx[$!]=$n
	job_slot[$!]=$k
done
while [ ${#job_idx[@]} -gt 0 ]; do reap || break; done

if [ -s "$RUN/failed.txt" ]; then
	echo "integration failures:"
	cat "$RUN/failed.txt"
fi
echo "integration checks: $c_ok passed, $c_fail failed, $c_skip skipped"
echo "integration: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
