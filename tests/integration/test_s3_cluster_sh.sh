#!/usr/bin/env bash
# test_s3_cluster_sh.sh - the S3 key pair of deploy/local/cluster.sh and the
# s3.* config keys as the daemon reads them.
#
# A 1-gateway 1-target cluster is started with cluster.sh under $AISD_DIR/c
# (first port picked at random in 20000-29999, below the ephemeral ports; cluster.sh moves off busy
# ones) and stopped with `cluster.sh down`, which signals only the PIDs it
# recorded. Checks: `up` prints exactly one line
#   s3: endpoint=URL access_key=AK secret_key=SK region=REGION
# with the endpoint of its "endpoint:" line; the key file is mode 600; every
# node's config holds the key once; a second `up` keeps the same key and
# adds no line; s3.region in g0's config shows in the line; aisd refuses a
# malformed s3.key, s3.auth, s3.max_skew or s3.region at start-up with a
# message that names the key and never echoes the secret; --help-config
# lists the s3 keys. `up` ends with the lines to paste (PATH, AIS_ENDPOINT
# and EP, PYTHONPATH, the key pair): pasted into a shell with a bare PATH,
# aisctl runs from PATH against the cluster and the AWS variables are the
# printed pair.
# timeout: 120
set -u
source "$IT_LIB/lib.sh"

REPO=$(cd "$IT_LIB/../.." && pwd)
CSH=$REPO/deploy/local/cluster.sh
BIN=$(dirname "$AISD_BIN")
D=$AISD_DIR/c
P=$((20000 + RANDOM % 10000))
cleanup() { "$CSH" down -d "$D" >/dev/null 2>&1; }
trap cleanup EXIT

LINE_RE='^s3: endpoint=http://127\.0\.0\.1:[0-9]+ access_key=AIS[0-9A-F]{17} secret_key=[A-Za-z0-9+/]{40} region=[A-Za-z0-9_-]+$'

"$CSH" up -g 1 -t 1 -d "$D" -p "$P" -b "$BIN" >"$TMPDIR/up1" 2>&1
rc=$?
check "cluster.sh up: exit 0" [ $rc = 0 ]
[ $rc = 0 ] || sed 's/^/#   /' "$TMPDIR/up1"
check_eq "exactly one s3: line" "$(grep -c '^s3:' "$TMPDIR/up1")" 1
s3line=$(grep '^s3:' "$TMPDIR/up1")
check "the s3: line has the documented form" grep -Eq "$LINE_RE" <<<"$s3line"
ep=$(sed -n 's/^endpoint: //p' "$TMPDIR/up1")
check_eq "its endpoint is the cluster's endpoint" "$(sed -E 's/^s3: endpoint=([^ ]*) .*/\1/' <<<"$s3line")" "$ep"
check "region us-east-1 by default" grep -q ' region=us-east-1$' <<<"$s3line"
ak=$(sed -E 's/.* access_key=([^ ]*) .*/\1/' <<<"$s3line")
sk=$(sed -E 's/.* secret_key=([^ ]*) .*/\1/' <<<"$s3line")
check_eq "the key file holds the printed pair" "$(cut -d: -f1-2 "$D/s3.key")" "$ak:$sk"
check_eq "the key file is mode 600" "$(stat -c %a "$D/s3.key")" 600
for n in g0 t0; do
	check_eq "$n: aisd.conf (it holds the secret) is mode 600" "$(stat -c %a "$D/$n/aisd.conf")" 600
	check "$n: aisd.log is not world-readable" [ "$(( 0$(stat -c %a "$D/$n/aisd.log") & 7 ))" = 0 ]
done
for n in g0 t0; do
	check_eq "$n: one s3.key line, the cluster's" \
		"$(grep -c "^s3.key = $ak:$sk:local:Local Admin\$" "$D/$n/aisd.conf")" 1
done
check "the gateway answers" curl -fsS -o /dev/null --max-time 5 "$ep/v1/health"
grep '^  export ' "$TMPDIR/up1" | sed 's/^  //' >"$TMPDIR/paste.sh"
check_eq "three lines to paste" "$(wc -l <"$TMPDIR/paste.sh")" 3
pasted=$(env -i HOME="$TMPDIR" PATH=/usr/bin:/bin bash -c '. "$1" && command -v aisctl && echo "$EP $AIS_ENDPOINT $AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" && aisctl cluster show >/dev/null && echo listed' _ "$TMPDIR/paste.sh" 2>&1)
check_eq "pasted: aisctl from PATH, the endpoint, the key pair, the cluster answers" "$pasted" \
	"$BIN/aisctl
$ep $ep $ak:$sk
listed"

# a restart keeps the key; a region set in g0's config shows
"$CSH" down -d "$D" >/dev/null 2>&1
echo "s3.region = eu-west-3" >>"$D/g0/aisd.conf"
"$CSH" up -g 1 -t 1 -d "$D" -b "$BIN" >"$TMPDIR/up2" 2>&1
rc=$?
check "second up: exit 0" [ $rc = 0 ]
[ $rc = 0 ] || sed 's/^/#   /' "$TMPDIR/up2"
s3line2=$(grep '^s3:' "$TMPDIR/up2")
check_eq "same key after a restart, new region" "$s3line2" "${s3line% region=*} region=eu-west-3"
for n in g0 t0; do
	check_eq "$n: still one s3.key line" "$(grep -c '^s3.key = ' "$D/$n/aisd.conf")" 1
done
"$CSH" down -d "$D" >/dev/null 2>&1

# the daemon checks the s3 keys when it reads its config
bad() {
	local what=$1 want=$2
	shift 2
	timeout 10 "$AISD_BIN" --port 0 -m "$TMPDIR/badmp" --set "log.file=$TMPDIR/bad.log" "$@" \
		>"$TMPDIR/bad.out" 2>&1
	local rc=$?
	if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "$want" "$TMPDIR/bad.out"; then
		ok "refused: $what"
	else
		fail "refused: $what (exit $rc: $(head -c 300 "$TMPDIR/bad.out"))"
	fi
}
bad "s3.key without fields" "s3.key" --set s3.key=AKIDONLY
bad "s3.key with a short secret" "secret key" --set "s3.key=AKID1:short:u:n"
bad "s3.key given twice" "twice" --set "s3.key=AKID1:secret123:u:n" --set "s3.key=AKID1:secret456:u:n"
check "no secret echoed" bash -c '! grep -Eq "secret(123|456)" "$1"' _ "$TMPDIR/bad.out"
bad "s3.key with a space in the secret" "secret key" --set "s3.key=AKID1:secret 123:u:n"
check "no secret echoed" bash -c '! grep -q "secret 123" "$1"' _ "$TMPDIR/bad.out"
bad "s3.auth not on/off" "s3.auth" --set s3.auth=maybe
bad "s3.max_skew of 0" "s3.max_skew" --set s3.max_skew=0s
bad "s3.region with a space" "s3.region" --set "s3.region=us east"
"$AISD_BIN" --help-config >"$TMPDIR/hc" 2>&1
for k in s3.auth s3.region s3.max_skew s3.key; do
	check "--help-config lists $k" grep -q "^  $k " "$TMPDIR/hc"
done
finish
