#!/usr/bin/env bash
# remote.sh - aisd as a cache in front of a remote bucket: a remote aisd
# cluster (1 gateway + 1 target, S3 SigV4 auth on) and a front cluster
# (1 gateway + 1 target) whose bucket "cache" has the remote's bucket as
# its S3 backend, on free loopback ports under a mktemp -d dir. ROUNDS
# rounds of:
#   cold-get   GET of a BIG object through the front (the first read: fetched
#              from the remote's S3 API while it is sent), MiB/s, against a
#              SigV4 GET of the same object straight from the remote's S3 API
#              (curl both ways; the object is evicted before each cold
#              read). Goal >= 0.9.
#   warm-get   GET of the cached object through the front against the same
#              bytes in a plain bucket of the front. Goal >= 0.95.
#   prefetch   N objects of 1 MiB: aisctl prefetch + job wait, against
#              `aws s3 sync` of the same objects from the remote to a local
#              dir (seconds; ratio = aws / prefetch). Goal >= 1.
# Prints the medians and ratios. Every process is stopped by its PID and
# the temp dir removed (KEEP=1 keeps it); every step is bounded in time.
#
# Environment: BUILD (default build), ROUNDS (3), BIG (object size, 256M;
# 1G for the issue's case), N (prefetch objects, 300), KEEP.
set -u

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
BIG=${BIG:-256M}
N=${N:-300}
AISD=$BUILD/aisd
CTL=$BUILD/aisctl
AK=benchkey SK=benchsecret123

die() { echo "remote-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$AISD" ] && [ -x "$CTL" ] || die "no $AISD or $CTL (run make)"

bench_setup remote-bench
start_cluster "$TMP/remote" 1 --set s3.auth=on --set "s3.key=$AK:$SK:bench:Bench" ||
	die "the remote cluster did not start (see $TMP)"
RGW=$GW RTG=${TGT[1]}
start_cluster "$TMP/front" 1 || die "the front cluster did not start (see $TMP)"
FGW=$GW FTG=${TGT[1]}

create_bucket "$RGW" src || die "create src"
create_bucket "$FGW" plain || die "create plain"
head -c "$(numfmt --from=iec "$BIG")" /dev/urandom >"$TMP/big" || die "no $BIG of random bytes"
curl -fsS --max-time 300 -T "$TMP/big" "$RTG/v1/objects/src/big" >/dev/null || die "remote PUT big"
curl -fsS --max-time 300 -T "$TMP/big" "$FTG/v1/objects/plain/big" >/dev/null || die "front PUT big"
head -c 1048576 /dev/urandom >"$TMP/one"
for i in $(seq -w 0 $((N - 1))); do
	curl -fsS --max-time 30 -T "$TMP/one" "$RTG/v1/objects/src/p/$i" >/dev/null || die "remote PUT p/$i"
done
echo "$SK" >"$TMP/sk"
"$CTL" -e "$FGW" remote attach r1 "$RGW" --access-key "$AK" --secret-key-file "$TMP/sk" >/dev/null ||
	die "remote attach"
"$CTL" -e "$FGW" bucket create cache --backend s3://@r1/src >/dev/null || die "bucket create cache"

# speed URL [CURL ARGS]: MiB/s of one GET (redirects followed), body dropped.
speed() {
	local u=$1
	shift
	curl -sfL --max-time 300 "$@" -o /dev/null -w '%{speed_download}' "$u" |
		awk '{printf "%.1f\n", $1 / 1048576}'
}
evict() {
	"$CTL" -e "$FGW" evict cache "$@" >/dev/null && "$CTL" -e "$FGW" job wait evict --timeout-s 120 >/dev/null
}
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f\n", b - a}'; }

for r in $(seq "$ROUNDS"); do
	evict --list big || die "evict big"
	echo "direct $(speed "$RGW/src/big" --aws-sigv4 aws:amz:us-east-1:s3 --user "$AK:$SK" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD")" >>"$TMP/cold"
	echo "cold $(speed "$FGW/v1/objects/cache/big")" >>"$TMP/cold"
	echo "plain $(speed "$FGW/v1/objects/plain/big")" >>"$TMP/warm"
	echo "warm $(speed "$FGW/v1/objects/cache/big")" >>"$TMP/warm"
	evict --prefix p/ || die "evict p/"
	t0=$(date +%s.%N)
	"$CTL" -e "$FGW" prefetch cache --prefix p/ >/dev/null || die "prefetch"
	"$CTL" -e "$FGW" job wait prefetch --timeout-s 300 >/dev/null || die "job wait prefetch"
	echo "prefetch $(secs "$t0")" >>"$TMP/pf"
	rm -rf "$TMP/sync"
	t0=$(date +%s.%N)
	AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_DEFAULT_REGION=us-east-1 timeout 300 \
		/usr/bin/aws --endpoint-url "$RGW" s3 sync s3://src/p/ "$TMP/sync" >/dev/null 2>"$TMP/aws.err" ||
		die "aws s3 sync: $(tail -n 3 "$TMP/aws.err")"
	echo "sync $(secs "$t0")" >>"$TMP/pf"
done

med() { awk -v k="$2" '$1 == k {print $2}' "$1" | median; }
D=$(med "$TMP/cold" direct) C=$(med "$TMP/cold" cold)
P=$(med "$TMP/warm" plain) W=$(med "$TMP/warm" warm)
PF=$(med "$TMP/pf" prefetch) S=$(med "$TMP/pf" sync)
echo "remote backend ($BIG object, $N x 1 MiB, medians of $ROUNDS):"
printf '  %-9s %10s %10s  %s\n' row aisd baseline ratio
printf '  %-9s %8s/s %8s/s  %s (goal >= 0.9)\n' cold-get "${C}MiB" "${D}MiB" "$(ratio "$C" "$D")"
printf '  %-9s %8s/s %8s/s  %s (goal >= 0.95)\n' warm-get "${W}MiB" "${P}MiB" "$(ratio "$W" "$P")"
printf '  %-9s %9ss %9ss  %s (aws s3 sync / prefetch; goal >= 1)\n' prefetch "$PF" "$S" "$(ratio "$S" "$PF")"
