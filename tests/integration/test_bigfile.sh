#!/usr/bin/env bash
# test_bigfile.sh - a 4 GiB + 4 KiB object (offsets past 2^32) streamed
# through PUT and GET without ever
# storing the data twice on the test machine: the data comes from a
# generator (AES-CTR of zeros), its md5 is taken in the same pipeline (tee),
# and the GET is piped into md5sum. The target's RSS, sampled every 0.2 s,
# must stay under its idle RSS + 64 MiB during both transfers; a Range read
# past 2^32 returns the generator's last bytes. Skipped (a SKIP line) only
# when the disk has under 5 GiB free (the object plus 1 GiB).
# serial: a 4 GiB object fills the disk
# timeout: 600
set -u
source "$(dirname "$0")/lib.sh"

SIZE=$(((4 << 30) + 4096))
avail=$(df -B1 --output=avail "$AISD_DIR" | tail -1 | tr -d ' ')
if [ "$avail" -lt $((SIZE + (1 << 30))) ]; then
	skip "a 4 GiB + 4 KiB object" "not enough disk: $((avail >> 20)) MiB free, 5 GiB needed"
	finish
fi
check "openssl is installed (the data generator; make deps)" command -v openssl
gen() { head -c $SIZE /dev/zero | openssl enc -aes-128-ctr -pass pass:aisd -nosalt 2>/dev/null; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$AISD_PID/status"; }

create_bucket big
check_eq "create bucket" "$R_CODE" 200
# warm up the code paths (buffers, threads) so that "idle" means idle
head -c $((8 << 20)) /dev/urandom >"$TMPDIR/warm"
req PUT /v1/objects/big/warm -T "$TMPDIR/warm"
req GET /v1/objects/big/warm
rm -f "$TMPDIR/warm"
sleep 0.5
idle=$(rss_kb)
diag "idle RSS ${idle} kB"

# sample RSS every 0.2 s while $TMPDIR/sampling exists (at most 15 min)
sample() {
	local i
	for ((i = 0; i < 4500; i++)); do
		[ -e "$TMPDIR/sampling" ] || break
		rss_kb >>"$TMPDIR/rss.$1"
		sleep 0.2
	done
}
max_rss() { sort -n "$TMPDIR/rss.$1" | tail -1; }

# --- PUT ---------------------------------------------------------------------
touch "$TMPDIR/sampling"
sample put &
spid=$!
t0=$(date +%s)
code=$(gen | tee >(md5sum | cut -d' ' -f1 >"$TMPDIR/gen.md5") >(tail -c 16 >"$TMPDIR/gen.tail") |
	curl -s -m 500 -T - -H "Transfer-Encoding:" -H "Content-Length: $SIZE" -o "$TMPDIR/put.body" -w '%{http_code}' \
		"$AISD_URL/v1/objects/big/4g")
t1=$(date +%s)
rm -f "$TMPDIR/sampling"
wait "$spid"
check_eq "PUT 4 GiB streamed from a generator ($((t1 - t0)) s)" "$code" 200
for ((i = 0; i < 600; i++)); do [ -s "$TMPDIR/gen.md5" ] && [ -s "$TMPDIR/gen.tail" ] && break; sleep 0.1; done
want=$(cat "$TMPDIR/gen.md5")
check "the generator's md5 was taken" test ${#want} = 32
peak=$(max_rss put)
diag "PUT: peak RSS ${peak} kB ($(wc -l <"$TMPDIR/rss.put") samples)"
check "PUT: RSS stayed under idle + 64 MiB (peak $((peak - idle)) kB over idle)" test $((peak - idle)) -lt $((64 << 10))

req HEAD /v1/objects/big/4g
check_eq "HEAD: Content-Length $SIZE" "$(hdr Content-Length)" $SIZE

# --- GET -----------------------------------------------------------------------
touch "$TMPDIR/sampling"
sample get &
spid=$!
t0=$(date +%s)
got=$(curl -s -m 500 -D "$TMPDIR/get.hdrs" "$AISD_URL/v1/objects/big/4g" |
	tee >(wc -c >"$TMPDIR/get.size") | md5sum | cut -d' ' -f1)
t1=$(date +%s)
rm -f "$TMPDIR/sampling"
wait "$spid"
check "GET: 200" grep -q '^HTTP/1.1 200' "$TMPDIR/get.hdrs"
for ((i = 0; i < 100; i++)); do [ -s "$TMPDIR/get.size" ] && break; sleep 0.1; done
check_eq "GET: 4 GiB + 4 KiB of body" "$(tr -d ' ' <"$TMPDIR/get.size")" $SIZE
check_eq "GET: md5 of the body equals the generator's ($((t1 - t0)) s)" "$got" "$want"
peak=$(max_rss get)
diag "GET: peak RSS ${peak} kB ($(wc -l <"$TMPDIR/rss.get") samples)"
check "GET: RSS stayed under idle + 64 MiB (peak $((peak - idle)) kB over idle)" test $((peak - idle)) -lt $((64 << 10))

# the last bytes, past 2^32, through a range
req GET /v1/objects/big/4g -H "Range: bytes=$((SIZE - 16))-"
check_eq "Range past 2^32: 206" "$R_CODE" 206
check_eq "Range past 2^32: Content-Range" "$(hdr Content-Range)" "bytes $((SIZE - 16))-$((SIZE - 1))/$SIZE"
check "Range past 2^32: the generator's last 16 bytes" cmp -s "$R_BODY" "$TMPDIR/gen.tail"

req DELETE /v1/objects/big/4g
check_eq "DELETE the big object" "$R_CODE" 200
check_eq "no temp files left" "$(tmp_files)" ""
finish
