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
# byte for byte with cmp. Needs bash, cmp, head, /usr/bin/python3 (JSON, xxhash).
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
json_names() { /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    if line.strip():
        print(json.loads(line)["name"])' | LC_ALL=C sort; }
# xxhash64 (seed 0) of a file as 16 hex digits, through libxxhash.
xxh64() { /usr/bin/python3 - "$1" <<'EOF'
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
	bash -c '[ '"$RC"' = 0 ] && for c in "bucket create" "bucket ls" "bucket rm" "bucket props show" "bucket props set" put get ls rm "object head" "cluster show" "node maintenance" "node decommission" "show stats"; do grep -q "^  $c " "$1" || exit 1; done' _ "$W/out"
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
check "connection refused: says what to check (--endpoint / AIS_ENDPOINT)" \
	grep -q "is the cluster running at http://127.0.0.1:1? (--endpoint / AIS_ENDPOINT)" "$W/err"
"$AISCTL" --endpoint "${AISD_URL/http:/https:}" bucket ls >"$W/out" 2>"$W/err"
RC=$?
check "https:// to a plain HTTP node: exit 1, says to use http://" \
	bash -c '[ '"$RC"' = 1 ] && grep -q "does not speak TLS (.*): use http:// in --endpoint" "$1"' _ "$W/err"


# every command answers --help with its usage line, and "help CMD" too
for c in "bucket create" "bucket ls" "bucket rm" "bucket props show" "bucket props set" put get ls rm \
	"object head" "cluster show" "node maintenance" "node decommission" "show stats" "config set" \
	"ml get-batch"; do
	# shellcheck disable=SC2086
	run $c --help
	check "$c --help" bash -c '[ '"$RC"' = 0 ] && grep -q "^usage: aisctl $1" "$2" && grep -q "^Global options:" "$2"' _ "$c" "$W/out"
	# shellcheck disable=SC2086
	run help $c
	check "help $c" bash -c '[ '"$RC"' = 0 ] && grep -q "^usage: aisctl $1" "$2"' _ "$c" "$W/out"
done
run bucket props
check "bucket props (a group) lists show and set, exit 2" \
	bash -c '[ '"$RC"' = 2 ] && grep -q "^  bucket props show " "$1" && grep -q "^  bucket props set " "$1"' _ "$W/err"
run bucket --help
check "bucket --help lists its subcommands" \
	bash -c '[ '"$RC"' = 0 ] && grep -q "^  bucket create " "$1" && grep -q "^  bucket props set " "$1"' _ "$W/out"
run --help
check "--help documents the exit codes and the config file" \
	bash -c 'grep -q "3 not found" "$1" && grep -q AISCTL_CONFIG "$1"' _ "$W/out"
check "--help hides the internal commands" bash -c '! grep -q __complete "$1"' _ "$W/out"
run_fail "bucket frob: unknown subcommand exits 2" 2 - bucket frob

# --- the endpoint: --endpoint, AIS_ENDPOINT, config file --------------------
CFG="$W/aisctl.conf"
printf '# aisctl config\n\n  endpoint = %s  \ntimeout=30\n' "$AISD_URL" >"$CFG"
AISCTL_CONFIG="$CFG" "$AISCTL" bucket ls >"$W/out" 2>"$W/err"
check "config file: endpoint from AISCTL_CONFIG" bash -c '[ '"$?"' = 0 ]'
AISCTL_CONFIG="$CFG" AIS_ENDPOINT=http://127.0.0.1:1 "$AISCTL" bucket ls >"$W/out" 2>"$W/err"
check "AIS_ENDPOINT beats the config file" bash -c '[ '"$?"' = 1 ] && grep -q "cannot connect to http://127.0.0.1:1" "$1"' _ "$W/err"
AISCTL_CONFIG="$CFG" AIS_ENDPOINT=http://127.0.0.1:1 "$AISCTL" --endpoint "$AISD_URL" bucket ls >"$W/out" 2>"$W/err"
check "--endpoint beats AIS_ENDPOINT" bash -c '[ '"$?"' = 0 ]'
mkdir -p "$W/xdg/aisctl"
printf 'endpoint=%s\n' "$AISD_URL" >"$W/xdg/aisctl/config"
env -u AISCTL_CONFIG XDG_CONFIG_HOME="$W/xdg" "$AISCTL" bucket ls >"$W/out" 2>"$W/err"
check "config file: \$XDG_CONFIG_HOME/aisctl/config" bash -c '[ '"$?"' = 0 ]'
mkdir -p "$W/home/.config/aisctl"
printf 'endpoint=%s\n' "$AISD_URL" >"$W/home/.config/aisctl/config"
env -u AISCTL_CONFIG -u XDG_CONFIG_HOME HOME="$W/home" "$AISCTL" bucket ls >"$W/out" 2>"$W/err"
check "config file: ~/.config/aisctl/config" bash -c '[ '"$?"' = 0 ]'
printf 'endpoint=%s\ncolour=blue\n' "$AISD_URL" >"$W/bad.conf"
AISCTL_CONFIG="$W/bad.conf" "$AISCTL" bucket ls >"$W/out" 2>"$W/err"
check "config file: unknown key exits 2 naming file and line" \
	bash -c '[ '"$?"' = 2 ] && grep -q "^aisctl: $1:2: unknown key .colour." "$2" && [ "$(wc -l <"$2")" = 1 ]' _ "$W/bad.conf" "$W/err"
printf 'just words\n' >"$W/bad.conf"
AISCTL_CONFIG="$W/bad.conf" "$AISCTL" bucket ls >"$W/out" 2>"$W/err"
check "config file: a line without = exits 2" bash -c '[ '"$?"' = 2 ] && grep -q ":1: want key = value" "$1"' _ "$W/err"
printf 'timeout=soon\n' >"$W/bad.conf"
AISCTL_CONFIG="$W/bad.conf" "$AISCTL" --endpoint "$AISD_URL" bucket ls >"$W/out" 2>"$W/err"
check "config file: a bad timeout exits 2" bash -c '[ '"$?"' = 2 ] && grep -q "bad timeout" "$1"' _ "$W/err"
AISCTL_CONFIG="$W/no-such.conf" "$AISCTL" --endpoint "$AISD_URL" bucket ls >"$W/out" 2>"$W/err"
check "AISCTL_CONFIG naming a missing file exits 2" bash -c '[ '"$?"' = 2 ] && grep -q "no-such.conf: No such file" "$1"' _ "$W/err"

# --- buckets -------------------------------------------------------------
run_ok "bucket create $B" bucket create "$B"
run_ok "bucket create $B2 --checksum md5" bucket create "$B2" --checksum md5
run_ok "bucket ls" bucket ls
check "bucket ls lists both buckets" bash -c 'grep -qx "$1" "$3" && grep -qx "$2" "$3"' _ "$B" "$B2" "$W/out"
run_ok "ls (no bucket) = bucket ls" ls
check "ls (no bucket) lists $B" grep -qx "$B" "$W/out"
run_ok "bucket ls --json" bucket ls --json
check "bucket ls --json: one object per line, one naming $B" /usr/bin/python3 -c '
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if all(isinstance(b, dict) for b in a) and any(b.get("name") == sys.argv[2] for b in a) else 1)' "$W/out" "$B"
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
	["..etc/..passwd."]=one
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
check "stat --json has the size" /usr/bin/python3 -c '
import json, sys
sys.exit(0 if json.load(open(sys.argv[1])).get("size") == 100000 else 1)' "$W/out"
run_fail "stat missing object: HTTP 404" 3 404 stat "$B/no-such-object"

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
check "ls --json size of big.bin" /usr/bin/python3 -c '
import json, sys
e = json.loads(open(sys.argv[1]).readline())
sys.exit(0 if e["name"] == "big.bin" and e["size"] == 5000017 else 1)' "$W/out"
run_ok "ls table" ls "$B" --prefix big.bin
check "ls table: header and a human size" bash -c 'head -1 "$1" | grep -q "^NAME  *SIZE  *VERSION" && grep -q "^big.bin  *4.8MiB " "$1"' _ "$W/out"
run_ok "ls --no-headers" ls "$B" --prefix big.bin --no-headers
check "ls --no-headers has no header" bash -c '[ "$(grep -c . "$1")" = 1 ] && grep -q "^big.bin " "$1"' _ "$W/out"
run_ok "ls empty bucket" ls "$B2"
check "ls empty bucket prints nothing" bash -c '[ ! -s "$1" ]' _ "$W/out"


# --- ls BUCKET/PREFIX, --props ---------------------------------------------
run_ok "ls BUCKET/PREFIX" ls "$B/dir/" --json
json_names <"$W/out" >"$W/names"
check "ls BUCKET/PREFIX lists only the prefix" bash -c '[ "$(cat "$1")" = "dir/sub/small" ]' _ "$W/names"
run_fail "ls BUCKET/PREFIX with another --prefix exits 2" 2 - ls "$B/dir/" --prefix x
run_ok "ls --props name,size,checksum,atime,version" ls "$B/cks/" --props name,size,checksum,atime,version
want=$(xxh64 "$D/big")
check "ls --props: the header names every column in order" \
	bash -c 'head -1 "$1" | grep -qE "^NAME +SIZE +CHECKSUM +ATIME +VERSION$"' _ "$W/out"
check "ls --props: the checksum and a time in the rows" \
	bash -c 'grep -qE "^cks/big +4.8MiB +$2 +[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z +[0-9]+$" "$1"' _ "$W/out" "$want"
check "ls --props: columns aligned (every row as long as the header up to VERSION)" bash -c '
h=$(head -1 "$1"); p=${h%%VERSION*}
tail -n +2 "$1" | while IFS= read -r l; do [ "${l:${#p}-2:2}" = "  " ] || exit 1; done' _ "$W/out"
run_ok "ls --props size --json" ls "$B/cks/" --props size --json
check "ls --props size --json: only name and size" /usr/bin/python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert [sorted(r) for r in rows] == [["name", "size"]] * 2, rows
assert rows[0] == {"name": "cks/big", "size": 5000017}, rows' "$W/out"
run_ok "ls -n 2 --props version" ls "$B" -n 2 --props version -H
check "ls -n 2 prints 2 rows of name and version" bash -c '[ "$(wc -l <"$1")" = 2 ] && awk "NF != 2 {exit 1}" "$1"' _ "$W/out"
run_fail "ls --props bogus exits 2" 2 - ls "$B" --props name,bogus
run_fail "ls --limit 0 exits 2" 2 - ls "$B" --limit 0

# --- object head ----------------------------------------------------------
run_ok "object head big.bin" object head "$B/big.bin"
check "object head: one line per field" bash -c '
for f in name size checksum version mtime atime custom; do grep -q "^$f " "$1" || exit 1; done
grep -q "^size  *5000017 (4.8MiB)$" "$1" && grep -qE "^mtime  *[A-Z][a-z]{2}, [0-9]{2} " "$1"' _ "$W/out"
run_ok "object head --json" object head --json "$B/cks/big"
check "object head --json: size, checksum, version, times" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["bucket"] == sys.argv[2] and d["name"] == "cks/big" and d["size"] == 5000017, d
assert d["checksum"] == {"type": "xxhash", "value": sys.argv[3]}, d
assert d["version"] and d["mtime"] and d["atime"] and "custom" in d, d' "$W/out" "$B" "$want"
run_fail "object head missing object: exit 3" 3 404 object head "$B/no-such"
run_fail "object head BUCKET without object exits 2" 2 - object head "$B"

# --- put -r: a tree, in parallel --------------------------------------------
T="$W/tree"
mkdir -p "$T/a/b/c" "$T/empty-dir" "$T/sp ace"
head -c 3000000 /dev/urandom >"$T/a/b/c/deep.bin"
for i in $(seq 1 40); do head -c $((i * 1000)) /dev/urandom >"$T/a/f$i"; done
: >"$T/zero"
printf 'x' >"$T/sp ace/one"
ln -s "$T/zero" "$T/link-to-file"
ln -s "$T/a" "$T/link-to-dir"
mkfifo "$T/fifo"
(cd "$T" && find . \( -type f -o -type l \) ! -name link-to-dir | sed 's|^\./||' | LC_ALL=C sort) >"$W/tree-names"
n_tree=$(wc -l <"$W/tree-names")
run_ok "put -r DIR BUCKET/PREFIX --conc 4" put -r --conc 4 "$T" "$B/tree"
check "put -r: summary line with the count, bytes and no failure" \
	bash -c 'grep -qE "^put $2 files \(.*\) from $3 to $4/tree/ in [0-9.]+s \(.*/s\)$" "$1"' _ "$W/out" "$n_tree" "$T" "$B"
check "put -r: no progress bar when stderr is not a terminal" \
	bash -c '! grep -q $'"'"'\r'"'"' "$1" && ! grep -q "%" "$1"' _ "$W/err"
check "put -r: the skipped link to a directory and fifo are noted" \
	bash -c 'grep -q "skipping .*link-to-dir" "$1" && grep -q "skipping .*fifo: not a regular file" "$1"' _ "$W/err"
run_ok "ls the uploaded tree" ls "$B/tree/" --json
json_names <"$W/out" | sed 's|^tree/||' >"$W/names"
check "put -r: object names are the relative paths under the prefix" cmp -s "$W/names" "$W/tree-names"
bad=0
while IFS= read -r rel; do
	"$AISCTL" --endpoint "$AISD_URL" get "$B/tree/$rel" - >"$W/got-one" 2>"$W/err" || bad=$((bad + 1))
	cmp -s "$W/got-one" "$T/$rel" || bad=$((bad + 1))
done <"$W/tree-names"
check_n() { [ "$1" = 0 ]; }
check "put -r: every object has its file's bytes ($n_tree compared)" check_n "$bad"
run_ok "put -r with --checksum and --json" put -r --checksum --json "$T/a" "$B"
check "put -r --json: the summary document" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["files"] == 41 and d["failed"] == 0 and d["bucket"] == sys.argv[2] and d["prefix"] == "", d
assert d["bytes"] == 3000000 + sum(i * 1000 for i in range(1, 41)), d' "$W/out" "$B"
run get "$B/b/c/deep.bin" -
check "put -r DIR BUCKET: names relative to DIR" cmp -s "$W/out" "$T/a/b/c/deep.bin"
run_fail "put DIR without -r exits 2" 2 - put "$T" "$B/x"
run_fail "put --conc 0 exits 2" 2 - put -r --conc 0 "$T" "$B"
run_fail "put --conc without -r DIR exits 2" 2 - put --conc 2 "$D/one" "$B/x"
run put -r "$T" "no-such-bucket-$$"
check "put -r to a missing bucket: every file fails, exit 3, one line each" \
	bash -c '[ '"$RC"' = 3 ] && [ "$(grep -c "(HTTP 404)$" "$1")" = "$2" ] && grep -q ", $2 failed$" "$3"' _ "$W/err" "$n_tree" "$W/out"
chmod 000 "$T/a/f7"
if [ "$(id -u)" != 0 ]; then
	run put -r "$T/a" "$B/perm"
	check "put -r: an unreadable file fails alone, exit 1" \
		bash -c '[ '"$RC"' = 1 ] && grep -q "f7: Permission denied" "$1" && grep -q "^put 40 files .*, 1 failed$" "$2"' _ "$W/err" "$W/out"
fi
chmod 644 "$T/a/f7"
if command -v script >/dev/null; then
	# a terminal on stderr: the bar is drawn (\r, percent, files), then erased
	script -qec "'$AISCTL' --endpoint '$AISD_URL' put -r '$T/a' '$B/tty' 2>&1 >/dev/null" /dev/null >"$W/tty" </dev/null
	check "put -r on a terminal: a progress bar with percent and files" \
		bash -c 'grep -q $'"'"'\r'"'"' "$1" && grep -aq "%" "$1" && grep -aq "/41 files" "$1"' _ "$W/tty"
	script -qec "'$AISCTL' --endpoint '$AISD_URL' --no-progress put -r '$T/a' '$B/tty' 2>&1 >/dev/null" /dev/null >"$W/tty" </dev/null
	check "put -r --no-progress on a terminal: no bar" bash -c '! grep -aq "%" "$1"' _ "$W/tty"
	script -qec "'$AISCTL' --endpoint '$AISD_URL' get '$B/big.bin' '$G/tty.bin' 2>&1" /dev/null >"$W/tty" </dev/null
	check "get on a terminal: a progress bar and a summary line" \
		bash -c 'grep -aq "%" "$1" && grep -aq "got $2/big.bin as .*tty.bin (4.8MiB" "$1"' _ "$W/tty" "$B"
	check "get on a terminal: same bytes" cmp -s "$G/tty.bin" "$D/big"
	run get "$B/big.bin" "$G/notty.bin"
	check "get without a terminal: nothing on stderr" bash -c '[ ! -s "$1" ] && cmp -s "$2" "$3"' _ "$W/err" "$G/notty.bin" "$D/big"
fi

# --- --json on every command --------------------------------------------------
# --json prints JSON Lines (aisctl(1), JSON OUTPUT): every line one compact object.
# jlines: $W/out is that shape, with at least one line.
JLINES='import json, sys
ls = open(sys.argv[1]).read().split("\n")
assert ls[-1] == "" and len(ls) > 1, "not newline-terminated lines"
ds = [json.loads(l) for l in ls[:-1]]
assert all(isinstance(d, dict) for d in ds), ds
d = ds[0] if len(ds) == 1 else ds
B = sys.argv[2]
'
jcheck() { # jcheck WHAT PYTHON-EXPR: $W/out is JSON Lines and the expression holds for d (one line: the object; more: the list)
	check "$1" /usr/bin/python3 -c "$JLINES"'
assert '"$2"', d' "$W/out" "$B"
}
# every command that prints --json: the same one shape
for args in "bucket ls" "ls $B" "ls $B --archive" "object head $B/big.bin" "bucket props show $B" "show stats" \
	"config show" "config show net." "job show --all" "remote show" "stat $B/big.bin"; do
	# shellcheck disable=SC2086
	run --json $args
	jcheck "--json $args: JSON Lines" 'True'
done
run_ok "put --json" put --json "$D/small" "$B/j/one"
jcheck "put --json: bucket, name, file, size" 'd["bucket"] == B and d["name"] == "j/one" and d["size"] == 100000 and d["file"].endswith("/small")'
run_ok "get FILE --json" get --json "$B/j/one" "$G/j1"
jcheck "get --json: bucket, name, file, size" 'd["bucket"] == B and d["name"] == "j/one" and d["size"] == 100000 and d["file"].endswith("/j1")'
check "get --json: same bytes" cmp -s "$G/j1" "$D/small"
run_fail "get - --json exits 2" 2 - get --json "$B/j/one" -
run_ok "rm --json" --json rm "$B/j/one"
jcheck "rm --json: what was deleted" 'd["deleted"] == [{"bucket": B, "name": "j/one"}]'
run_ok "bucket create --json" bucket create --json "j$B"
jcheck "bucket create --json" 'd == {"created": "j" + B}'
run_ok "bucket props show --json (standalone target)" bucket props show --json "j$B"
jcheck "bucket props show --json: checksum type" 'd["checksum"]["type"] == "xxhash"'
run_ok "bucket props show (table)" bucket props show "j$B"
check "bucket props show: key value lines" grep -qE "^checksum.type +xxhash$" "$W/out"
run_fail "bucket props show missing bucket: exit 3" 3 404 bucket props show "no-such-bucket-$$"
run bucket props set "j$B" versioning.enabled=false
check "bucket props set on a standalone target: exit 1, one line" \
	bash -c '[ '"$RC"' = 1 ] && [ "$(wc -l <"$1")" = 1 ] && grep -q "^aisctl: .*(HTTP 405)$" "$1"' _ "$W/err"
run_fail "bucket props set without KEY=VALUE exits 2" 2 - bucket props set "j$B" versioning
run_fail "bucket props set bad bool exits 2" 2 - bucket props set "j$B" mirror.enabled=yes
run_fail "bucket props set bad copies exits 2" 2 - bucket props set "j$B" mirror.copies=0
run_fail "bucket props set bad checksum exits 2" 2 - bucket props set "j$B" checksum.type=crc
run_fail "bucket props set bad access exits 2" 2 - bucket props set "j$B" access=fly
run_fail "bucket props set the same key twice exits 2" 2 - bucket props set "j$B" access=ro access=rw
run_ok "bucket rm --json" bucket rm --json "j$B"
jcheck "bucket rm --json" 'd == {"destroyed": ["j" + B]}'
run_ok "config set --json (standalone target)" config set --json log.access=off
jcheck "config set --json" 'd == {"ok": True}'
run_ok "ml get-batch --json OUT.tar" ml get-batch --json "$B" "$G/batch.tar" --list big.bin,dir/sub/small
jcheck "ml get-batch --json: entries and size" 'd["bucket"] == B and d["entries"] == 2 and d["size"] > 5100017'
check "ml get-batch: the tar holds both objects, in order" /usr/bin/python3 -c '
import sys, tarfile
t = tarfile.open(sys.argv[1])
m = t.getmembers()
assert [x.name.split("/", 1)[1] for x in m] == ["big.bin", "dir/sub/small"], [x.name for x in m]
assert t.extractfile(m[0]).read() == open(sys.argv[2], "rb").read()
assert t.extractfile(m[1]).read() == open(sys.argv[3], "rb").read()' "$G/batch.tar" "$D/big" "$D/small"
run_fail "ml get-batch - --json exits 2" 2 - ml get-batch --json "$B" - --list big.bin
run_ok "show stats (standalone target)" show stats
check "show stats: header and one target row" bash -c '
head -1 "$1" | grep -qE "^NODE +ROLE +UPTIME +OBJECTS +SIZE +DISK +USED +CMAP +BMD +STATUS$" &&
[ "$(grep -cE " target +[0-9]+[smhd]" "$1")" = 1 ] && grep -qE "^total: [0-9]+ objects" "$1"' _ "$W/out"
run_ok "show stats --json" show stats --json
jcheck "show stats --json: one node with objects and mountpaths" 'len(d["nodes"]) == 1 and all(n["role"] == "target" and n["objects"] >= 40 and len(n["mountpaths"]) == 2 for n in d["nodes"].values())'
run_ok "show stats --refresh 1 --count 2 --json" show stats --refresh 1 --count 2 --json
check "show stats --refresh: two reports, one JSON line each" /usr/bin/python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 2 and all(len(r["nodes"]) == 1 for r in rows), rows' "$W/out"
run_fail "show stats of a node not in the map: exit 3" 3 - show stats no-such-node
run_fail "show stats --count without --refresh exits 2" 2 - show stats --count 2
run_fail "show stats --refresh 0 exits 2" 2 - show stats --refresh 0

# --- exit status: a 404 and another error together is 1 -------------------------
run rm "$B/no-such-object" "no-slash-here"
check "rm: a 404 plus a bad argument exits 1" [ "$RC" = 1 ]

# --- bash completion -----------------------------------------------------------
# comp WORD...: runs the completion function on "aisctl WORD..." (the last
# word is the one completed) in a clean bash; prints COMPREPLY one per line.
comp() {
	AIS_ENDPOINT=$AISD_URL bash --norc --noprofile -c '
source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
_aisctl; printf "%s\n" "${COMPREPLY[@]}"' _ "$COMPLETION" "$AISCTL" "$@" 2>&1
}
COMPLETION=${IT_LIB:-$(dirname "$0")}/../../tools/completion/aisctl.bash
check "completion script is valid bash and registers _aisctl" \
	bash --norc -c 'source "$1" && complete -p aisctl | grep -q "_aisctl"' _ "$COMPLETION"
comp "" >"$W/c"
check "complete: the commands" bash -c 'for w in bucket put get ls rm object cluster node show help; do grep -qx "$w" "$1" || exit 1; done; ! grep -q __complete "$1"' _ "$W/c"
comp bucket "" >"$W/c"
check "complete: bucket subcommands" bash -c '[ "$(sort "$1" | tr "\n" " ")" = "cp create ls props rm " ]' _ "$W/c"
comp bucket props s >"$W/c"
check "complete: bucket props s -> set show" bash -c '[ "$(sort "$1" | tr "\n" " ")" = "set show " ]' _ "$W/c"
comp ls --p >"$W/c"
check "complete: ls options" bash -c '[ "$(sort "$1" | tr "\n" " ")" = "--page-size --partial --prefix --props " ]' _ "$W/c"
comp put --c >"$W/c"
check "complete: put options" bash -c 'grep -qx -- --conc "$1" && grep -qx -- --checksum "$1"' _ "$W/c"
comp bucket rm "${B:0:12}" >"$W/c"
check "complete: bucket names from the cluster" grep -qx "$B" "$W/c"
comp get "${B:0:12}" >"$W/c"
check "complete: BUCKET/OBJECT offers 'bucket/'" grep -qx "$B/" "$W/c"
comp get "$B/tree/a/f1" >"$W/c"
check "complete: object names after BUCKET/" bash -c 'grep -qx "$2/tree/a/f1" "$1" && grep -qx "$2/tree/a/f19" "$1" && ! grep -q "f2" "$1"' _ "$W/c" "$B"
comp put "$T/sp" >"$W/c"
check "complete: FILE completes file names" grep -qx "$T/sp ace" "$W/c"
comp get "$B/big.bin" "$T/sp" >"$W/c"
check "complete: get's destination is a file" grep -qx "$T/sp ace" "$W/c"
comp bucket props set "$B" mirror.c >"$W/c"
check "complete: bucket property keys" grep -qx "mirror.copies=" "$W/c"
comp node maintenance "" >"$W/c"
check "complete: start|stop" bash -c '[ "$(sort "$1" | tr "\n" " ")" = "start stop " ]' _ "$W/c"
comp help bucket p >"$W/c"
check "complete: help COMMAND" grep -qx props "$W/c"
comp --endpoint http://127.0.0.1:1 bucket rm "" >"$W/c"
check "complete: a dead endpoint gives nothing, no error text" bash -c '! grep -q . "$1"' _ "$W/c"

# --- errors -------------------------------------------------------------
run_fail "ls missing bucket: HTTP 404" 3 404 ls "no-such-bucket-$$"
run_fail "put to missing bucket: HTTP 404" 3 404 put "$D/one" "no-such-bucket-$$/x"
rm -f "$G/missing"
run_fail "get missing object: HTTP 404" 3 404 get "$B/no-such-object" "$G/missing"
check "failed get leaves no file behind" bash -c '! ls -A "$1" | grep -q missing' _ "$G"
printf 'keep me' >"$G/keep"
run_fail "get missing object over an existing file" 3 404 get "$B/no-such-object" "$G/keep"
check "failed get leaves the existing file untouched" bash -c '[ "$(cat "$1")" = "keep me" ]' _ "$G/keep"
run_fail "get from missing bucket: HTTP 404" 3 404 get "no-such-bucket-$$/x" -
run_fail "ls with a bad bucket name: HTTP 400" 1 400 ls 'bad@name!'

# --- rm -----------------------------------------------------------------
run_ok "rm two objects" rm "$B/a" "$B/a/b"
run_fail "get removed object: HTTP 404" 3 404 get "$B/a" -
run get "$B/dir/sub/small" -
check "rm left other objects alone" cmp -s "$W/out" "$D/small"
run rm "$B/one" "$B/no-such-object" "$B/empty"
check "rm goes on after a missing object and exits 3 (not found)" bash -c '[ '"$RC"' = 3 ] && grep -q "(HTTP 404)" "$1"' _ "$W/err"
run_fail "get object removed after the failure: HTTP 404" 3 404 get "$B/empty" -

# --- config show ---------------------------------------------------------------
run_ok "config show" config show
check "config show: KEY VALUE lines of the running configuration" grep -qE "^net\.port +[0-9]+$" "$W/out"
run_ok "config show KEY-PREFIX" config show store.
check "config show store.: only store.* keys" bash -c '[ -s "$1" ] && ! grep -qv "^store\." "$1"' _ "$W/out"
run_fail "config show of no such key: exit 3" 3 - config show no.such.key

# --- get -r, rm -r / --prefix / --template ------------------------------------
R="$W/rtree"
mkdir -p "$R/sub dir/deep"
head -c 70001 /dev/urandom >"$R/sub dir/deep/a b.bin"
printf 'top' >"$R/top.txt"
: >"$R/sub dir/empty"
run_ok "put -r a tree (spaces, subfolders)" put -r "$R" "$B/gtree"
run_ok "get -r BUCKET/PREFIX DIR" get -r "$B/gtree" "$W/rgot"
check "get -r: the tree back byte for byte" diff -r "$R" "$W/rgot"
check "get -r: says how many files" grep -q "^got 3 files" "$W/out"
run_fail "get --conc without -r: exit 2" 2 - get --conc 2 "$B/gtree/top.txt" "$W/x"
printf 'evil' >"$W/evil"
run_ok "put an object named evil//x (an absolute path under the prefix evil/)" put "$W/evil" "$B/evil//x"
mkdir -p "$W/esc/in"
run get -r "$B/evil" "$W/esc/in/dl"
check "get -r refuses a name that is absolute under DIR: exit 1, said, nothing written" \
	bash -c '[ '"$RC"' = 1 ] && grep -q "outside" "$1" && [ -z "$(ls -A "$2/esc/in/dl")" ]' _ "$W/err" "$W"
run rm -r "$B/gtree" </dev/null
check "rm -r of 3 objects without a terminal or --yes: exit 2, says --yes" \
	bash -c '[ '"$RC"' = 2 ] && grep -q -- "pass --yes" "$1"' _ "$W/err"
run ls --json "$B/gtree/"
check "rm -r refused: nothing deleted" bash -c '[ "$(grep -c name "$1")" = 3 ]' _ "$W/out"
run_ok "rm -r --yes BUCKET/PREFIX" rm -r --yes "$B/gtree"
check "rm -r: says how many" grep -q "^deleted 3 objects from $B" "$W/out"
run ls --json "$B/gtree/"
check "rm -r: the prefix is empty" bash -c '! grep -q name "$1"' _ "$W/out"
run_ok "rm --prefix (one object: no question)" rm --prefix evil/ "$B" </dev/null
for k in 01 02; do "$AISCTL" --endpoint "$AISD_URL" put "$W/evil" "$B/t/s-$k" >/dev/null 2>&1; done
run_ok "rm --template --yes" rm --yes --template "t/s-{01..03}" "$B"
check "rm --template: 2 deleted, 1 not there" grep -q "^deleted 2 objects from $B, 1 not there" "$W/out"
run_fail "rm --template bad template: exit 2" 2 - rm --yes --template "t/s-{03..01}" "$B"

# --- sync ----------------------------------------------------------------------
S="$W/sync"
mkdir -p "$S/d 1"
printf 'aaa' >"$S/a"
head -c 50000 /dev/urandom >"$S/d 1/b"
printf 'ccc' >"$S/c"
run_ok "sync DIR BUCKET/PREFIX" sync "$S" "$B/sync"
check "sync: 3 uploaded" grep -q ": uploaded 3 (.*), skipped 0, deleted 0$" "$W/out"
run_ok "sync again" sync "$S" "$B/sync"
check "sync again: nothing uploaded, 3 skipped" grep -q ": uploaded 0 (0B), skipped 3, deleted 0$" "$W/out"
printf 'AAA' >"$S/a" # the same size, other bytes: the checksum tells
run_ok "sync after a change" sync "$S" "$B/sync"
check "sync: the changed file uploaded (same size), 2 skipped" grep -q ": uploaded 1 (3B), skipped 2, deleted 0$" "$W/out"
run get "$B/sync/a" -
check "sync: the object has the new bytes" bash -c '[ "$(cat "$1")" = AAA ]' _ "$W/out"
rm "$S/c"
run_ok "sync --dry-run --delete" sync --dry-run --delete "$S" "$B/sync"
check "sync --dry-run --delete: says what it would delete" grep -qx "delete $B/sync/c" "$W/out"
run get "$B/sync/c" -
check "sync --dry-run: nothing deleted" bash -c '[ "$(cat "$1")" = ccc ]' _ "$W/out"
run sync --delete "$S" "$B/sync" </dev/null
check "sync --delete without a terminal or --yes: exit 2" bash -c '[ '"$RC"' = 2 ] && grep -q -- "pass --yes" "$1"' _ "$W/err"
run_ok "sync --delete --yes" sync --delete --yes "$S" "$B/sync"
check "sync --delete: 1 deleted, 2 skipped" grep -q ": uploaded 0 (0B), skipped 2, deleted 1$" "$W/out"
run_fail "sync --delete: the object is gone" 3 404 get "$B/sync/c" -
run_ok "sync BUCKET/PREFIX DIR" sync "$B/sync" "$W/sback"
check "sync down: the tree byte for byte" diff -r "$S" "$W/sback"
run_ok "sync down again" --json sync "$B/sync" "$W/sback"
jcheck "sync down again --json: 0 downloaded, 2 skipped" 'd["downloaded"] == 0 and d["skipped"] == 2 and d["failed"] == 0'
printf 'x' >"$W/sback/extra"
printf 'BBB' >"$W/sback/a"
run_ok "sync down --dry-run --delete" sync --dry-run --delete "$B/sync" "$W/sback"
check "sync down --dry-run: would download a, delete extra, wrote nothing" \
	bash -c 'grep -qx "delete $2/extra" "$1" && grep -q "^download .*/sync/a to $2/a$" "$1" && [ -e "$2/extra" ] && [ "$(cat "$2/a")" = BBB ]' _ "$W/out" "$W/sback"
run_ok "sync down --delete --yes" sync --delete --yes "$B/sync" "$W/sback"
check "sync down --delete: a fixed, extra gone" bash -c '[ ! -e "$1/extra" ] && diff -r "$2" "$1"' _ "$W/sback" "$S"

# --- cp -------------------------------------------------------------------------
run_fail "cp of one object: exit 2 (no server-side copy of one object), says what to use" 2 - cp "$B/sync/a" "$B2/a"
check "cp of one object: names cp -r and CopyObject" bash -c 'grep -q "cp -r BUCKET/PREFIX BUCKET2" "$1" && grep -q CopyObject "$1"' _ "$W/err"
run_fail "cp -r to another prefix: exit 2 (the copy keeps names)" 2 - cp -r "$B/sync" "$B2/other"

# --- bucket rm ------------------------------------------------------------
run bucket rm "$B" </dev/null
check "bucket rm of a non-empty bucket without a terminal or --yes: exit 2, says --yes" \
	bash -c '[ '"$RC"' = 2 ] && grep -q -- "not a terminal to confirm on; pass --yes" "$1" && [ ! -s "$2" ]' _ "$W/err" "$W/out"
run_ok "bucket ls after the refused bucket rm" bucket ls
check "bucket rm refused: the bucket is still there" grep -qx "$B" "$W/out"
"$AISCTL" --endpoint "$AISD_URL" bucket create "e$B" >/dev/null 2>&1
run_ok "bucket rm of an empty bucket needs no --yes" bucket rm "e$B" </dev/null
if command -v script >/dev/null; then
	# on a terminal bucket rm asks; only "yes" goes on
	printf 'no\n' | script -qec "'$AISCTL' --endpoint '$AISD_URL' bucket rm '$B'" /dev/null >"$W/tty" 2>&1
	check "bucket rm of a non-empty bucket on a terminal asks; answered no: nothing done" \
		bash -c 'grep -aq "Bucket $2 is not empty: destroy it and every object in it? Type yes to go on:" "$1" &&
			grep -aq "not confirmed, nothing done" "$1"' _ "$W/tty" "$B"
	run_ok "bucket ls after the answer no" bucket ls
	check "answered no: the bucket is still there" grep -qx "$B" "$W/out"
	"$AISCTL" --endpoint "$AISD_URL" bucket create "y$B" >/dev/null 2>&1
	run_ok "put into a bucket to destroy on a terminal" put "$D/small" "y$B/o"
	printf 'yes\n' | script -qec "'$AISCTL' --endpoint '$AISD_URL' bucket rm 'y$B'" /dev/null >"$W/tty" 2>&1
	run_ok "bucket ls after the answer yes" bucket ls
	check "bucket rm on a terminal answered yes: destroyed" \
		bash -c 'grep -aq "Type yes to go on:" "$1" && ! grep -qx "$2" "$3"' _ "$W/tty" "y$B" "$W/out"
fi
run_ok "bucket rm --yes $B $B2" bucket rm --yes "$B" "$B2"
run_ok "bucket ls after rm" bucket ls
check "bucket ls no longer lists them" bash -c '! grep -qx -e "$1" -e "$2" "$3"' _ "$B" "$B2" "$W/out"
run_fail "bucket rm missing bucket: HTTP 404" 3 404 bucket rm "$B"
run_fail "get from removed bucket: HTTP 404" 3 404 get "$B/big.bin" -

echo "# $N checks, $FAILS failed"
[ "$FAILS" = 0 ]
