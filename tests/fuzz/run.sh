#!/usr/bin/env bash
# run.sh - build every libFuzzer driver in tests/fuzz/ and run each one.
#
#   tests/fuzz/run.sh [SECONDS]      (make fuzz FUZZ_SECONDS=N)
#   FUZZ_ONLY=jwt tests/fuzz/run.sh 60   (only the drivers whose name holds jwt)
#
# Each fuzz_<name>.c is built with clang -fsanitize=fuzzer,address,undefined
# straight from the sources it needs (no libaisd.a: the library is built
# without the fuzzer's coverage instrumentation), then runs for SECONDS
# (default 20) on its corpus: build/fuzz-corpus/<name>/ (grows, not
# committed) seeded from tests/fuzz/corpus/<name>/ (committed). A crashing
# input is saved as tests/fuzz/crashes/<name>-crash-<sha1>; rerun it with
#   build/fuzz/<name> tests/fuzz/crashes/<name>-crash-...
# Prints one line per driver (executions, corpus size, verdict) and exits
# non-zero if any driver crashed or did not build.
set -uo pipefail

secs=${1:-20}
cd "$(dirname "$0")/../.."
out=${FUZZ_BUILD:-build}/fuzz
corpus=${FUZZ_BUILD:-build}/fuzz-corpus
crashes=tests/fuzz/crashes
mkdir -p "$out" "$corpus" "$crashes"

# clang and its libFuzzer runtime (Debian: clang, libclang-rt-<N>-dev)
probe() {
	printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\n%s\n' \
		'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' |
		clang -x c -fsanitize=fuzzer,address,undefined -o "$out/.probe" - >/dev/null 2>&1
}
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v clang >/dev/null || ! probe; then
	echo "fuzz: installing clang and the libFuzzer runtime"
	as_root apt-get install -y clang >/dev/null || true
	ver=$(clang --version 2>/dev/null | sed -nE 's/.*clang version ([0-9]+).*/\1/p' | head -n 1)
	as_root apt-get install -y "libclang-rt-${ver:-14}-dev" >/dev/null 2>&1 ||
		as_root apt-get install -y "libclang-rt-dev" >/dev/null 2>&1 || true
	if ! probe; then
		echo "fuzz: clang with -fsanitize=fuzzer is not available" >&2
		exit 2
	fi
fi
rm -f "$out/.probe"

CFLAGS=(-std=c11 -D_GNU_SOURCE -g -O1 -Iinclude -Wall -Wextra -Wno-unused-parameter
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
read -r -a PKG_CFLAGS <<<"$(pkg-config --cflags libxxhash 2>/dev/null)"
read -r -a PKG_LIBS <<<"$(pkg-config --libs libxxhash 2>/dev/null || echo -lxxhash)"
CORE=(src/core/*.c)
# What a driver's own sources leave undefined (the list below names what
# the fuzzer instruments, not every callee) comes from the project's
# library, not instrumented, with every library it needs: `make all` first.
LIBAISD=${BUILD:-build}/libaisd.a
[ -f "$LIBAISD" ] || { echo "fuzz: $LIBAISD missing: run make all first" >&2; exit 2; }
read -r -a ALL_LIBS <<<"$(pkg-config --libs libevent libevent_pthreads libcurl jansson openssl libxxhash zlib libarchive) -lleveldb -lhttp_parser -lexpat"

# driver -> the sources and libraries it needs besides src/core
declare -A SRCS=(
	[fuzz_http_parse]="src/http/parse.c"
	[fuzz_range]="src/http/range.c"
	[fuzz_conf]=""
	[fuzz_names]=""
	[fuzz_tar]="src/archive/tar.c"
	[fuzz_moss]="src/archive/moss.c src/archive/tarw.c src/archive/tar.c"
	[fuzz_cmap]="src/cluster/cmap.c src/cluster/vote.c src/cluster/bmd.c src/cluster/bmdbk.c src/cluster/bmdec.c src/cluster/json.c src/store/cksum.c src/s3auth/acl.c src/s3auth/policy.c"
	[fuzz_s3auth]="src/s3auth/auth.c src/s3auth/sigv4.c src/s3auth/sigv2.c src/s3auth/checksum.c src/http/url.c"
	[fuzz_s3chunked]="src/s3auth/auth.c src/s3auth/sigv4.c src/s3auth/sigv2.c src/s3auth/chunked.c src/s3auth/checksum.c src/http/url.c"
	[fuzz_s3xml]="src/s3/xml.c src/s3auth/acl.c"
	[fuzz_s3cors]="src/s3/cors.c src/s3/xml.c src/s3auth/acl.c"
	[fuzz_s3lifecycle]="src/s3/lifecycle.c src/s3/xml.c src/s3auth/lifecycle.c src/s3auth/acl.c"
	[fuzz_s3logging]="src/s3/logcfg.c src/s3/logrec.c src/s3/xml.c src/s3auth/acl.c"
	[fuzz_s3ssecfg]="src/s3/ssecfg.c src/s3/xml.c src/s3auth/acl.c"
	[fuzz_s3owncfg]="src/s3/owncfg.c src/s3/xml.c src/s3auth/acl.c"
	[fuzz_larc]="src/archive/larc.c"
	[fuzz_cfgset]="src/cluster/cfgparse.c"
	[fuzz_aisctl_config]="src/cli/cfgfile.c"
	[fuzz_jwt]="src/auth/jwt.c src/auth/sign.c"
	[fuzz_sign]="src/auth/jwt.c src/auth/sign.c"
	[fuzz_xpanswer]="src/httpc/xp.c src/httpc/httpc.c src/httpc/sync.c src/httpc/xsync.c"
	[fuzz_tpl]="src/xcopy/spec.c"
	[fuzz_etl_answer]="src/etl/answer.c"
	[fuzz_s3policy]="src/s3auth/policy.c"
	[fuzz_s3post]="src/s3auth/post.c src/s3auth/auth.c src/s3auth/sigv4.c src/s3auth/sigv2.c src/s3auth/checksum.c src/http/url.c"
)
declare -A LIBS=(
	[fuzz_http_parse]="-lhttp_parser"
	[fuzz_cmap]="-ljansson -lcrypto"
	[fuzz_s3auth]="-lcrypto -lhttp_parser"
	[fuzz_s3chunked]="-lcrypto -lz -lhttp_parser"
	[fuzz_s3xml]="-lexpat"
	[fuzz_s3policy]="-ljansson"
	[fuzz_s3cors]="-lexpat"
	[fuzz_s3lifecycle]="-lexpat -ljansson"
	[fuzz_s3logging]="-lexpat"
	[fuzz_s3ssecfg]="-lexpat"
	[fuzz_s3owncfg]="-lexpat"
	[fuzz_s3post]="-ljansson -lcrypto -lz -lhttp_parser"
	[fuzz_cfgset]="-ljansson"
	[fuzz_moss]="-ljansson"
	[fuzz_larc]="-larchive"
	[fuzz_jwt]="-ljansson -lcrypto"
	[fuzz_sign]="-ljansson -lcrypto"
	[fuzz_xpanswer]="-levent -lhttp_parser -lssl -lcrypto -lcurl"
	[fuzz_tpl]="-ljansson"
	[fuzz_etl_answer]="-lhttp_parser"
)

failed=()
for src in tests/fuzz/fuzz_*.c; do
	name=$(basename "$src" .c)
	if [ -n "${FUZZ_ONLY:-}" ] && [[ $name != *$FUZZ_ONLY* ]]; then
		continue
	fi
	read -r -a extra <<<"${SRCS[$name]-}"
	read -r -a libs <<<"${LIBS[$name]-}"
	if ! clang "${CFLAGS[@]}" "${PKG_CFLAGS[@]}" -o "$out/$name" "$src" "${extra[@]}" "${CORE[@]}" \
		"${libs[@]}" "$LIBAISD" "${ALL_LIBS[@]}" "${PKG_LIBS[@]}" -lisal -lpthread -lm; then
		echo "fuzz: $name: build failed"
		failed+=("$name")
		continue
	fi
	mkdir -p "$corpus/$name" "$crashes"
	seeds=()
	[ -d "tests/fuzz/corpus/$name" ] && seeds=("tests/fuzz/corpus/$name")
	log="$out/$name.log"
	"$out/$name" -max_total_time="$secs" -max_len=8192 -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$crashes/$name-" "$corpus/$name" "${seeds[@]}" >"$log" 2>&1
	rc=$?
	execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -n 1)
	ncorp=$(find "$corpus/$name" -type f | wc -l)
	if [ $rc -ne 0 ]; then
		echo "fuzz: $name: CRASH (exit $rc) after ${execs:-?} execs; see $log and $crashes/"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -n 5
		failed+=("$name")
	else
		echo "fuzz: $name: ok, ${execs:-?} execs in ${secs}s, corpus $ncorp"
	fi
done

if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz: failed: ${failed[*]}"
	exit 1
fi
echo "fuzz: all drivers ok"
