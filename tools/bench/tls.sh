#!/usr/bin/env bash
# tls.sh - what HTTPS costs on a large-object GET: two standalone targets
# of the same build on free loopback ports under a mktemp -d dir, one plain
# HTTP and one HTTPS (a throw-away CA and certificate made here with the
# openssl CLI), the same 64 MiB object PUT to each, then ROUNDS alternating
# rounds, with wrk (4 connections, DUR seconds), of:
#   a. GET 64 MiB over plain HTTP (sendfile)
#   b. GET 64 MiB over HTTPS (kTLS + SSL_sendfile where the kernel offers
#      the "tls" ULP, else pread + SSL_write in user space)
#   c. only when the kernel offers kTLS: GET 64 MiB over HTTPS with
#      net.tls.ktls=off on a third target
# and prints the medians in MiB/s and the ratios b/a (and c/a), saying
# whether kTLS was on. Every process is stopped by its PID and the temp dir
# removed on exit (KEEP=1 keeps it); every run is bounded in time.
#
# Environment: BUILD (default build), ROUNDS (3), DUR (seconds per
# measurement, 5), KEEP. Exit status 0 when every measurement ran.
set -u

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
AISD=$BUILD/aisd

die() { echo "tls-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$AISD" ] || die "no $AISD (run make)"
command -v wrk >/dev/null || die "wrk is needed (tools/install-deps.sh)"
command -v openssl >/dev/null || die "the openssl CLI is needed"

bench_setup tls-bench

# A CA and a certificate for 127.0.0.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=bench CA" \
	-keyout "$TMP/ca.key" -out "$TMP/ca.pem" 2>/dev/null || die "openssl req (CA) failed"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=bench" \
	-keyout "$TMP/node.key" -out "$TMP/node.csr" 2>/dev/null || die "openssl req failed"
printf 'subjectAltName=IP:127.0.0.1\n' >"$TMP/ext"
openssl x509 -req -in "$TMP/node.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" -CAcreateserial -days 2 \
	-extfile "$TMP/ext" -out "$TMP/node.pem" 2>/dev/null || die "openssl x509 failed"

# start NAME SCHEME ARGS...: starts a standalone target, sets URL.
start() {
	local name=$1 scheme=$2
	shift 2
	mkdir -p "$TMP/$name"
	"$AISD" --port 0 --port-file "$TMP/$name/port" --set log.file="$TMP/$name/log" \
		--set store.fsync=never -m "$TMP/$name/mp" "$@" >"$TMP/$name/out" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do
		local port
		port=$(cat "$TMP/$name/port" 2>/dev/null)
		URL=$scheme://127.0.0.1:$port
		[ -n "$port" ] && curl -sf --cacert "$TMP/ca.pem" "$URL/v1/health" >/dev/null && return 0
		sleep 0.1
	done
	die "$name did not start (see $TMP/$name)"
}

TLS=(--set net.tls.cert="$TMP/node.pem" --set net.tls.key="$TMP/node.key")
start plain http
PLAIN=$URL
start tls https "${TLS[@]}"
HTTPS=$URL
KTLS=off
if grep -q "kTLS offered by the kernel" "$TMP/tls/log"; then
	KTLS=on
	start tlsuser https "${TLS[@]}" --set net.tls.ktls=off
	USER=$URL
fi

head -c $((64 << 20)) /dev/urandom >"$TMP/large"
for u in "$PLAIN" "$HTTPS" ${USER:+"$USER"}; do
	curl -sf --cacert "$TMP/ca.pem" -X POST -H 'Content-Type: application/json' \
		--data-binary '{"action":"create-bck"}' "$u/v1/buckets/bench" >/dev/null || die "bucket create on $u failed"
	curl -sf --cacert "$TMP/ca.pem" -T "$TMP/large" "$u/v1/objects/bench/large" >/dev/null ||
		die "PUT 64 MiB to $u failed"
	curl -sf --cacert "$TMP/ca.pem" "$u/v1/objects/bench/large" | cmp -s - "$TMP/large" ||
		die "GET 64 MiB from $u differs"
done

# run URL CONNS: prints bytes/s of one wrk run, or "failed".
run() {
	timeout $((DUR + 60)) wrk -t2 -c"$2" -d"${DUR}s" --timeout 30s "$1" 2>&1 | awk '
		/^Transfer\/sec:/ {v = $2; u = substr(v, length(v) - 1); n = v + 0
			m = u == "GB" ? 2^30 : u == "MB" ? 2^20 : u == "KB" ? 2^10 : 1; b = n * m}
		/Non-2xx|Socket errors/ {bad = 1}
		END {if (bad || b == "") print "failed"; else printf "%.0f\n", b}'
}

fail=0
MS="a b"
[ $KTLS = on ] && MS="a b c"
for ((i = 1; i <= ROUNDS; i++)); do
	for m in $MS; do
		case $m in
		a) out=$(run "$PLAIN/v1/objects/bench/large" 4) ;;
		b) out=$(run "$HTTPS/v1/objects/bench/large" 4) ;;
		c) out=$(run "$USER/v1/objects/bench/large" 4) ;;
		esac
		[ "$out" = failed ] && fail=1
		printf '  round %d %s %s\n' "$i" "$m" "$out" >&2
		echo "$out" >>"$TMP/$m"
	done
done
A=$(median <"$TMP/a") B=$(median <"$TMP/b")
mib() { awk -v x="$1" 'BEGIN {if (x + 0 > 0) printf "%.0f", x / 2^20; else print "n/a"}'; }
ratio() { awk -v x="$1" -v y="$2" 'BEGIN {if (y + 0 > 0) printf "%.2f", x / y; else print "n/a"}'; }
printf '\nGET 64 MiB over HTTPS vs plain HTTP from the same build (medians of %d rounds, %ds each, 4 conns)\n' \
	"$ROUNDS" "$DUR"
printf 'kTLS: %s (%s)\n' "$KTLS" "$(grep -o 'kTLS .*' "$TMP/tls/log" | head -1)"
printf '| measurement | MiB/s | ratio to plain |\n|---|---|---|\n'
printf '| plain HTTP (sendfile) | %s | 1.00 |\n' "$(mib "$A")"
if [ $KTLS = on ]; then
	C=$(median <"$TMP/c")
	printf '| HTTPS, kTLS (SSL_sendfile) | %s | %s |\n' "$(mib "$B")" "$(ratio "$B" "$A")"
	printf '| HTTPS, net.tls.ktls=off (pread + SSL_write) | %s | %s |\n' "$(mib "$C")" "$(ratio "$C" "$A")"
else
	printf '| HTTPS, no kTLS (pread + SSL_write) | %s | %s |\n' "$(mib "$B")" "$(ratio "$B" "$A")"
fi
exit $fail
