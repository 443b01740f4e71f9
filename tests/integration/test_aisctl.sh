#!/usr/bin/env bash
# test_aisctl.sh - exercises every aisctl command against a live aisd target.
#
# Environment (set by the integration runner):
#   AISD_URL  base URL of the running target, e.g. http://127.0.0.1:PORT
#   AISCTL    path to the aisctl binary
#   TMPDIR    scratch directory (files are made under it and removed)
#
# Prints one "ok - <what>" or "not ok - <what>" line per check (with the
# failing command's stderr as "# " lines) and exits 1 if any check failed,
# 2 if the environment is wrong. Every object is round-tripped and compared
# byte for byte with cmp. Needs bash, cmp, head, python3 (JSON, xxhash).
set -u

: "${AISD_URL:?AISD_URL must be the target base URL}"
: "${AISCTL:?AISCTL must be the path to aisctl}"
[ -x "$AISCTL" ] || { echo "not ok - AISCTL '$AISCTL' is not executable"; exit 2; }
W=$(mktemp -d "${TMPDIR:-/tmp}/test_aisctl.XXXXXX") || exit 2
trap 'rm -rf "$W"' EXIT
unset AIS_ENDPOINT

FAILS=0
N=0
ok() { N=$((N + 1)); echo "ok $N - $*"; }
notok() {
	N=$((N + 1))
	FAILS=$((FAILS + 1))
	echo "not ok $N - $*"
	[ -s "$W/err" ] && sed 's/^/#   stderr: /' "$W/err" | head -5
	return 0
}
# check "what" cmd...: ok when cmd succeeds.
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else notok "$what"; fi
}
# run args...: runs aisctl against the target; $W/out, $W/err, $RC.
run() {
	"$AISCTL" --endpoint "$AISD_URL" "$@" >"$W/out" 2>"$W/err"
	RC=$?
}
# run_ok "what" args...: aisctl must exit 0.
run_ok() {
	local what=$1
	shift
	run "$@"
	if [ "$RC" = 0 ]; then ok "$what"; else notok "$what (exit $RC)"; fi
}
# run_fail "what" EXIT HTTP args...: aisctl must exit EXIT and, when HTTP is
# not "-", say "(HTTP <HTTP>)" on stderr; stdout must stay empty.
run_fail() {
	local what=$1 want=$2 http=$3
	shift 3
	run "$@"
	if [ "$RC" != "$want" ]; then
		notok "$what (exit $RC, want $want)"
	elif [ "$http" != - ] && ! grep -q "^aisctl: .*(HTTP $http)\$" "$W/err"; then
		notok "$what (stderr lacks '(HTTP $http)')"
	elif [ -s "$W/out" ]; then
		notok "$what (unexpected stdout)"
	else
		ok "$what"
	fi
}
# The names in an "ls --json" output, one per line, sorted.
json_names() { python3 -c '
import json, sys
for line in sys.stdin:
    if line.strip():
        print(json.loads(line)["name"])' | LC_ALL=C sort; }
# xxhash64 (seed 0) of a file as 16 hex digits, through libxxhash.
xxh64() { python3 - "$1" <<'EOF'
import ctypes, ctypes.util, sys
lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
lib.XXH64.restype = ctypes.c_uint64
lib.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
d = open(sys.argv[1], "rb").read()
print("%016x" % lib.XXH64(d, len(d), 0))
EOF
}

B="aisctl-test-$$"
B2="aisctl-test2-$$"

# --- basics --------------------------------------------------------------
run --version
check "--version" grep -q '^aisctl ' "$W/out"
run --help
check "--help lists every command" \
	bash -c '[ '"$RC"' = 0 ] && for c in "bucket create" "bucket ls" "bucket rm" put get ls rm stat; do grep -q "^  $c " "$1" || exit 1; done' _ "$W/out"
run help put
check "help put" bash -c '[ '"$RC"' = 0 ] && grep -q "^usage: aisctl put " "$1"' _ "$W/out"
run get --help
check "get --help" bash -c '[ '"$RC"' = 0 ] && grep -q -- "--range" "$1"' _ "$W/out"
run_fail "unknown command exits 2" 2 - frobnicate
run_fail "unknown option exits 2" 2 - ls --no-such-option
run_fail "missing argument exits 2" 2 - put
run_fail "BUCKET/OBJECT without object exits 2" 2 - get "$B"
"$AISCTL" --endpoint http://127.0.0.1:1 bucket ls >"$W/out" 2>"$W/err"
RC=$?
check "connection refused: exit 1 and a clear message" \
	bash -c '[ '"$RC"' = 1 ] && grep -q "^aisctl: cannot connect to http://127.0.0.1:1" "$1"' _ "$W/err"

# --- buckets -------------------------------------------------------------
run_ok "bucket create $B" bucket create "$B"
run_ok "bucket create $B2 --checksum md5" bucket create "$B2" --checksum md5
run_ok "bucket ls" bucket ls
check "bucket ls lists both buckets" bash -c 'grep -qx "$1" "$3" && grep -qx "$2" "$3"' _ "$B" "$B2" "$W/out"
run_ok "ls (no bucket) = bucket ls" ls
check "ls (no bucket) lists $B" grep -qx "$B" "$W/out"
run_ok "bucket ls --json" bucket ls --json
check "bucket ls --json is an array naming $B" python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
sys.exit(0 if any(b.get("name") == sys.argv[2] for b in a) else 1)' "$W/out" "$B"
AIS_ENDPOINT="$AISD_URL" "$AISCTL" bucket ls >"$W/out" 2>"$W/err"
check "AIS_ENDPOINT sets the endpoint" grep -qx "$B" "$W/out"
run_fail "bucket create existing bucket fails" 1 4[0-9][0-9] bucket create "$B"
run_fail "bucket create bad name: HTTP 400" 1 400 bucket create 'bad@name!'
run_fail "bucket create bad --checksum exits 2" 2 - bucket create "x$B" --checksum crc99

# --- put / get round trips ------------------------------------------------
D="$W/data"
mkdir -p "$D"
: >"$D/empty"
printf 'x' >"$D/one"
head -c 100000 /dev/urandom >"$D/small"
head -c 5000017 /dev/urandom >"$D/big"
head -c 70000 /dev/urandom >"$D/piped"

# name -> local file; odd names on purpose
declare -A OBJ=(
	["empty"]=empty
	["one"]=one
	["dir/sub/small"]=small
	["big.bin"]=big
	["with space/and+plus"]=small
	["percent%20literal%"]=one
	["unicode-ü-日本語"]=small
	["q?a#b&c=d;e"]=one
	["../../etc/passwd"]=one
	["a"]=one
	["a/b"]=small
	["~tilde_.-"]=one
)
for name in "${!OBJ[@]}"; do
	run_ok "put ${OBJ[$name]} as '$name'" put "$D/${OBJ[$name]}" "$B/$name"
done
run_ok "put --checksum big" put --checksum "$D/big" "$B/cks/big"
run_ok "put --checksum empty" put --checksum "$D/empty" "$B/cks/empty"
cat "$D/piped" | "$AISCTL" --endpoint "$AISD_URL" put - "$B/from-pipe" >"$W/out" 2>"$W/err"
RC=$?
if [ "$RC" = 0 ]; then ok "put - (pipe, chunked)"; else notok "put - (pipe, chunked) (exit $RC)"; fi
"$AISCTL" --endpoint "$AISD_URL" put - "$B/from-redirect" <"$D/big" >"$W/out" 2>"$W/err"
RC=$?
if [ "$RC" = 0 ]; then ok "put - (stdin is a file)"; else notok "put - (stdin is a file) (exit $RC)"; fi
run_ok "put FILE BUCKET names the object after the file" put "$D/small" "$B"

G="$W/got"
mkdir -p "$G"
for name in "${!OBJ[@]}"; do
	rm -f "$G/f"
	run get "$B/$name" "$G/f"
	if [ "$RC" = 0 ] && cmp -s "$G/f" "$D/${OBJ[$name]}"; then
		ok "get '$name' to a file: same bytes"
	else
		notok "get '$name' to a file: same bytes (exit $RC)"
	fi
	run get "$B/$name" -
	if [ "$RC" = 0 ] && cmp -s "$W/out" "$D/${OBJ[$name]}"; then
		ok "get '$name' to stdout: same bytes"
	else
		notok "get '$name' to stdout: same bytes (exit $RC)"
	fi
done
for pair in "cks/big:big" "cks/empty:empty" "from-pipe:piped" "from-redirect:big" "small:small"; do
	name=${pair%%:*} file=${pair#*:}
	run get "$B/$name" -
	if [ "$RC" = 0 ] && cmp -s "$W/out" "$D/$file"; then
		ok "get '$name': same bytes"
	else
		notok "get '$name': same bytes (exit $RC)"
	fi
done
(cd "$G" && rm -f small && "$AISCTL" --endpoint "$AISD_URL" get "$B/dir/sub/small" >"$W/out" 2>"$W/err")
check "get without FILE writes the base name in cwd" cmp -s "$G/small" "$D/small"
mkdir -p "$G/dir"
run get "$B/big.bin" "$G/dir"
check "get into a directory" cmp -s "$G/dir/big.bin" "$D/big"

# --- ranges -------------------------------------------------------------
run get --range 1000-1999 "$B/big.bin" -
check "get --range 1000-1999" cmp -s "$W/out" <(tail -c +1001 "$D/big" | head -c 1000)
run get --range 4999000- "$B/big.bin" -
check "get --range 4999000-" cmp -s "$W/out" <(tail -c +4999001 "$D/big")
run get --range -17 "$B/big.bin" -
check "get --range -17" cmp -s "$W/out" <(tail -c 17 "$D/big")
run_fail "get --range garbage exits 2" 2 - get --range x-y "$B/big.bin" -
run_fail "get --range END before START exits 2" 2 - get --range 5-1 "$B/big.bin" -
run_fail "get --range past the end: HTTP 416" 1 416 get --range 6000000-6000001 "$B/big.bin" -

# --- overwrite ------------------------------------------------------------
run_ok "put over an existing object" put "$D/small" "$B/one"
run get "$B/one" -
check "get after overwrite returns the new bytes" cmp -s "$W/out" "$D/small"

# --- stat ---------------------------------------------------------------
run_ok "stat big.bin" stat "$B/big.bin"
check "stat shows the size" grep -q "^size  *5000017 " "$W/out"
run_ok "stat --checksum object" stat "$B/cks/big"
want=$(xxh64 "$D/big")
check "stat shows the xxhash the server stored" grep -q "^checksum  *xxhash $want\$" "$W/out"
run_ok "stat --json" stat --json "$B/with space/and+plus"
check "stat --json has the size" python3 -c '
import json, sys
sys.exit(0 if json.load(open(sys.argv[1])).get("size") == 100000 else 1)' "$W/out"
run_fail "stat missing object: HTTP 404" 1 404 stat "$B/no-such-object"

# --- ls -----------------------------------------------------------------
{
	for name in "${!OBJ[@]}"; do echo "$name"; done
	printf '%s\n' cks/big cks/empty from-pipe from-redirect small
} | LC_ALL=C sort >"$W/want-all"
run_ok "ls --json" ls "$B" --json
json_names <"$W/out" >"$W/names"
check "ls --json lists exactly the objects" cmp -s "$W/names" "$W/want-all"
run_ok "ls --page-size 2 --json" ls "$B" --page-size 2 --json
json_names <"$W/out" >"$W/names"
check "ls pages with --page-size 2 list exactly the objects" cmp -s "$W/names" "$W/want-all"
run_ok "ls --prefix dir/" ls "$B" --prefix dir/ --json
json_names <"$W/out" >"$W/names"
check "ls --prefix lists only the prefix" bash -c '[ "$(cat "$1")" = "dir/sub/small" ]' _ "$W/names"
run_ok "ls --limit 3 --page-size 2" ls "$B" --limit 3 --page-size 2 --json
check "ls --limit 3 prints 3 objects" bash -c '[ "$(grep -c . "$1")" = 3 ]' _ "$W/out"
run_ok "ls --json sizes" ls "$B" --prefix big.bin --json
check "ls --json size of big.bin" python3 -c '
import json, sys
e = json.loads(open(sys.argv[1]).readline())
sys.exit(0 if e["name"] == "big.bin" and e["size"] == 5000017 else 1)' "$W/out"
run_ok "ls table" ls "$B" --prefix big.bin
check "ls table: header and a human size" bash -c 'head -1 "$1" | grep -q "^NAME  *SIZE  *VERSION" && grep -q "^big.bin  *4.8MiB " "$1"' _ "$W/out"
run_ok "ls --no-headers" ls "$B" --prefix big.bin --no-headers
check "ls --no-headers has no header" bash -c '[ "$(grep -c . "$1")" = 1 ] && grep -q "^big.bin " "$1"' _ "$W/out"
run_ok "ls empty bucket" ls "$B2"
check "ls empty bucket prints nothing" bash -c '[ ! -s "$1" ]' _ "$W/out"

# --- errors -------------------------------------------------------------
run_fail "ls missing bucket: HTTP 404" 1 404 ls "no-such-bucket-$$"
run_fail "put to missing bucket: HTTP 404" 1 404 put "$D/one" "no-such-bucket-$$/x"
rm -f "$G/missing"
run_fail "get missing object: HTTP 404" 1 404 get "$B/no-such-object" "$G/missing"
check "failed get leaves no file behind" bash -c '! ls -A "$1" | grep -q missing' _ "$G"
printf 'keep me' >"$G/keep"
run_fail "get missing object over an existing file" 1 404 get "$B/no-such-object" "$G/keep"
check "failed get leaves the existing file untouched" bash -c '[ "$(cat "$1")" = "keep me" ]' _ "$G/keep"
run_fail "get from missing bucket: HTTP 404" 1 404 get "no-such-bucket-$$/x" -
run_fail "ls with a bad bucket name: HTTP 400" 1 400 ls 'bad@name!'

# --- rm -----------------------------------------------------------------
run_ok "rm two objects" rm "$B/a" "$B/a/b"
run_fail "get removed object: HTTP 404" 1 404 get "$B/a" -
run get "$B/dir/sub/small" -
check "rm left other objects alone" cmp -s "$W/out" "$D/small"
run rm "$B/one" "$B/no-such-object" "$B/empty"
check "rm goes on after a missing object and exits 1" bash -c '[ '"$RC"' = 1 ] && grep -q "(HTTP 404)" "$1"' _ "$W/err"
run_fail "get object removed after the failure: HTTP 404" 1 404 get "$B/empty" -

# --- bucket rm ------------------------------------------------------------
run_ok "bucket rm $B $B2" bucket rm "$B" "$B2"
run_ok "bucket ls after rm" bucket ls
check "bucket ls no longer lists them" bash -c '! grep -qx -e "$1" -e "$2" "$3"' _ "$B" "$B2" "$W/out"
run_fail "bucket rm missing bucket: HTTP 404" 1 404 bucket rm "$B"
run_fail "get from removed bucket: HTTP 404" 1 404 get "$B/big.bin" -

echo "# $N checks, $FAILS failed"
[ "$FAILS" = 0 ]
