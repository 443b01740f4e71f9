#!/usr/bin/env bash
# run-unit.sh - run Check unit-test binaries (and Python unittest files)
# and sum their results.
#
#   tests/run-unit.sh build/tests/test_a build/tests/test_b tests/unit/test_c.py ...
#
# A .py file runs with Debian's /usr/bin/python3; its unittest summary
# ("Ran N tests", then "OK" or "FAILED (failures=F, errors=E)") counts
# like a Check summary.
# Prints each binary's Check output, then one closing line
#   unit: N passed, N failed
# where N counts Check tests (summed from each "Checks: C, Failures: F,
# Errors: E" line). A binary that is missing, exits non-zero, or dies without
# a summary counts as a failure even if its summary says otherwise.
# Exits 0 only if every binary passed.
set -uo pipefail

if [ $# -eq 0 ]; then
	echo "usage: $0 TEST_BINARY..." >&2
	exit 2
fi

# Check's per-test limit (default 4 s) catches hangs; on a loaded 2-core
# machine a sound test can take longer than 4 s.
export CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-60}

passed=0
failed=0
bad_bins=()

for bin in "$@"; do
	name=$(basename "$bin")
	echo "== $name"
	if [[ $bin == *.py ]]; then
		out=$(/usr/bin/python3 "$bin" 2>&1)
		rc=$?
		printf '%s\n' "$out" | grep -vE '^(\.|s|F|E)*$' | tail -n 20
		c=$(sed -nE 's/^Ran ([0-9]+) tests?.*/\1/p' <<<"$out" | tail -n 1)
		f=$(sed -nE 's/.*failures=([0-9]+).*/\1/p' <<<"$out" | tail -n 1)
		e=$(sed -nE 's/.*errors=([0-9]+).*/\1/p' <<<"$out" | tail -n 1)
		c=${c:-0} f=${f:-0} e=${e:-0}
		passed=$((passed + c - f - e))
		failed=$((failed + f + e))
		if [ "$rc" -ne 0 ]; then
			[ $((f + e)) -eq 0 ] && failed=$((failed + 1))
			bad_bins+=("$name")
		fi
		continue
	fi
	if [ ! -x "$bin" ]; then
		echo "$name: not found or not executable: $bin"
		failed=$((failed + 1))
		bad_bins+=("$name")
		continue
	fi
	out=$("$bin" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	summary=$(printf '%s\n' "$out" | grep -E 'Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' | tail -n 1)
	if [ -n "$summary" ]; then
		c=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$summary")
		f=$(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$summary")
		e=$(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$summary")
		passed=$((passed + c - f - e))
		failed=$((failed + f + e))
		if [ "$rc" -ne 0 ] && [ $((f + e)) -eq 0 ]; then
			# e.g. a crash or leak report after the suite finished
			echo "$name: exited with status $rc after a clean summary"
			failed=$((failed + 1))
		fi
	else
		echo "$name: no Check summary (exit status $rc)"
		failed=$((failed + 1))
	fi
	if [ "$rc" -ne 0 ]; then
		bad_bins+=("$name")
	fi
done

if [ ${#bad_bins[@]} -gt 0 ]; then
	echo "failing: ${bad_bins[*]}"
fi
echo "unit: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ ${#bad_bins[@]} -eq 0 ]
