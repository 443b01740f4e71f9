#!/usr/bin/env bash
# s3tests.sh - run ceph/s3-tests against a local cluster and summarize.
#
#   tools/s3tests.sh S3TESTS_DIR [PYTEST_ARGS...]
#
# S3TESTS_DIR is a checkout of https://github.com/ceph/s3-tests that the
# developer provides: nothing is fetched or installed here. The script
# starts a 1-gateway 3-target cluster with deploy/local/cluster.sh in a
# temp dir (first port picked at random in 20000-29999; cluster.sh moves
# off busy ones), gives every node the s3-tests users (main, alt, tenant
# and the iam ones, as s3.key lines, and s3.logging_roll_time 5s as the
# suite's bucket logging tests expect, and s3.sigv2 on for its auth_aws2
# tests), writes s3tests.conf for them, runs
# `python3 -m pytest` on s3tests/functional/test_s3.py and test_headers.py
# (or on what PYTEST_ARGS names) with BOTO_DISABLE_CRT=true, prints one
# line per family (passed/failed/skipped/total, tools/s3tests_summary.py)
# and stops the cluster by the pids it recorded.
#
# The cluster serves HTTPS (cluster.sh -s: a CA and a certificate for
# 127.0.0.1 made under the temp dir), as SSE-C must travel over TLS; the
# suite connects with is_secure = True and ssl_verify = False (its
# ssl_verify is a boolean, and botocore given verify=True checks against
# its own CA bundle, never AWS_CA_BUNDLE, so the run's CA cannot be named);
# the tests that POST with requests and its default verify=True check the
# run's CA (REQUESTS_CA_BUNDLE). Server-side encryption is configured as
# the suite expects: an SSE-S3 master key file (s3.sse_key_file) and an
# SSE-KMS key file (s3.kms_key_file) holding the suite's default key ids
# testkey-1 and testkey-2 (written to s3tests.conf as kms_keyid and
# kms_keyid2); the keys are random, made per run, mode 0600.
#
# Environment: BUILD (default build/) holds aisd; PYTHON (default
# /usr/bin/python3) must have boto3, pytest and the suite's requirements;
# S3TESTS_TLS=0 runs over plain HTTP (SSE-C then answers 400, as S3);
# KEEP=1 keeps the temp dir (logs, junit.xml, s3tests.conf); OUT=FILE
# copies the junit XML there; LC_DAY (default 4) the seconds a lifecycle
# rule's day lasts (s3.lifecycle_day on every node, lc_debug_interval in
# s3tests.conf). Exit status: pytest's (0 only when every
# selected test passed or was skipped).
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$REPO/build}
PYTHON=${PYTHON:-/usr/bin/python3}
CSH=$REPO/deploy/local/cluster.sh

[ $# -ge 1 ] || {
	echo "usage: $0 S3TESTS_DIR [PYTEST_ARGS...]  (S3TESTS_DIR: a checkout of ceph/s3-tests)" >&2
	exit 2
}
S3T=$(cd "$1" 2>/dev/null && pwd) || {
	echo "s3tests.sh: no directory $1" >&2
	exit 2
}
shift
[ -f "$S3T/s3tests/functional/test_s3.py" ] || {
	echo "s3tests.sh: $S3T is not an s3-tests checkout (no s3tests/functional/test_s3.py)" >&2
	exit 2
}
"$PYTHON" -c 'import boto3, pytest' 2>/dev/null || {
	echo "s3tests.sh: $PYTHON lacks boto3 or pytest" >&2
	exit 2
}
[ -x "$BUILD/aisd" ] || {
	echo "s3tests.sh: no $BUILD/aisd (run make first)" >&2
	exit 2
}

D=$(mktemp -d /tmp/aisd-s3tests.XXXXXX)
cleanup() {
	"$CSH" down -d "$D/c" >/dev/null 2>&1
	if [ "${KEEP:-0}" = 1 ]; then
		echo "s3tests.sh: kept $D"
	else
		rm -rf "$D"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The users s3-tests signs as: section, access key, secret, user id,
# display name. The keys are this harness's own, never real credentials.
USERS=(
	"s3 main|S3TMAINKEY0000000001|s3tests-main-secret-0000000000000000001|testid|M. Tester"
	"s3 alt|S3TALTKEY00000000002|s3tests-alt-secret-00000000000000000002|56789abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234|john.doe"
	"s3 tenant|S3TTENANTKEY00000003|s3tests-tenant-secret-000000000000000003|9876543210abcdef0123456789abcdef0123456789abcdef0123456789abcdef|tenanteduser"
	"iam|S3TIAMKEY00000000004|s3tests-iam-secret-00000000000000000004|s3tests-iam|iam user"
	"iam root|S3TIAMROOTKEY0000005|s3tests-iamroot-secret-0000000000000005|RGW11111111111111111|iam root"
	"iam alt root|S3TIAMALTROOTKEY0006|s3tests-iamaltroot-secret-0000000000006|RGW22222222222222222|iam alt root"
)

# The length of a lifecycle rule's day on the cluster (s3.lifecycle_day) and
# in the suite (lc_debug_interval), in seconds.
LC_DAY=${LC_DAY:-4}
tls=-s
[ "${S3TESTS_TLS:-1}" = 0 ] && tls=
port=$((20000 + RANDOM % 10000))
# The first `up` writes each node's config and the cluster's own key;
# the users are added to the configs, and a second `up` restarts the
# nodes with them (cluster.sh keeps edited configs).
if ! "$CSH" up -g 1 -t 3 $tls -d "$D/c" -p "$port" -b "$BUILD" >"$D/up1.log" 2>&1; then
	cat "$D/up1.log" >&2
	echo "s3tests.sh: the cluster did not start" >&2
	exit 1
fi
"$CSH" down -d "$D/c" >/dev/null 2>&1
# The SSE key files: "ID BASE64" lines of 32 random bytes, mode 0600.
KMS_IDS=(testkey-1 testkey-2)
(
	umask 077
	echo "s3t-master $(head -c 32 /dev/urandom | base64)" >"$D/sse.keys"
	for id in "${KMS_IDS[@]}"; do
		echo "$id $(head -c 32 /dev/urandom | base64)"
	done >"$D/kms.keys"
)
for conf in "$D"/c/*/aisd.conf; do
	{
		# the lifecycle tests count a rule's day as lc_debug_interval seconds
		echo "s3.lifecycle_day = ${LC_DAY}s"
		echo "s3.lifecycle_period = 500ms"
		echo "# s3-tests users and encryption keys (tools/s3tests.sh)"
		for u in "${USERS[@]}"; do
			IFS='|' read -r _ ak sk uid dn <<<"$u"
			echo "s3.key = $ak:$sk:$uid:$dn"
		done
		# the suite's bucket logging tests without Ceph's client extension
		# wait 5.5 s for a log object to roll (its README: roll time 5)
		echo "s3.logging_roll_time = 5s"
		echo "s3.sse_key_file = $D/sse.keys"
		# the suite's auth_aws2 tests sign with Signature Version 2
		echo "s3.sigv2 = on"
		echo "s3.kms_key_file = $D/kms.keys"
	} >>"$conf"
done
if ! "$CSH" up -d "$D/c" -b "$BUILD" >"$D/up2.log" 2>&1; then
	cat "$D/up2.log" >&2
	echo "s3tests.sh: the cluster did not restart with the s3-tests users" >&2
	exit 1
fi
ep=$(sed -n 's/^endpoint: //p' "$D/up2.log")
ep_port=${ep##*:}
[ -n "$ep_port" ] || {
	echo "s3tests.sh: no endpoint in cluster.sh's output" >&2
	exit 1
}

{
	echo "[DEFAULT]"
	echo "host = 127.0.0.1"
	echo "port = $ep_port"
	[ -n "$tls" ] && echo "is_secure = True" || echo "is_secure = False"
	echo "ssl_verify = False"
	echo "[fixtures]"
	echo "bucket prefix = s3t-{random}-"
	for u in "${USERS[@]}"; do
		IFS='|' read -r sec ak sk uid dn <<<"$u"
		echo "[$sec]"
		echo "display_name = $dn"
		echo "user_id = $uid"
		echo "email = ${uid:0:16}@example.com"
		echo "access_key = $ak"
		echo "secret_key = $sk"
		if [ "$sec" = "s3 main" ]; then
			echo "api_name = default"
			echo "lc_debug_interval = $LC_DAY"
			echo "kms_keyid = ${KMS_IDS[0]}"
			echo "kms_keyid2 = ${KMS_IDS[1]}"
		fi
		[ "$sec" = "s3 tenant" ] && echo "tenant = testx"
	done
} >"$D/s3tests.conf"

echo "s3tests.sh: cluster at $ep (dir $D), suite $S3T"
if [ $# -eq 0 ]; then
	set -- s3tests/functional/test_s3.py s3tests/functional/test_headers.py
fi
envs=(S3TEST_CONF="$D/s3tests.conf" BOTO_DISABLE_CRT=true)
[ -n "$tls" ] && envs+=(REQUESTS_CA_BUNDLE="$D/c/tls/ca.pem") # the browser POST tests' requests.post
(cd "$S3T" && env "${envs[@]}" \
	"$PYTHON" -m pytest -q -p no:cacheprovider -o junit_family=xunit1 \
		--junitxml="$D/junit.xml" "$@" >"$D/pytest.log" 2>&1)
rc=$?
tail -n 3 "$D/pytest.log"
if [ -f "$D/junit.xml" ]; then
	"$PYTHON" "$REPO/tools/s3tests_summary.py" "$D/junit.xml"
	[ -n "${OUT:-}" ] && cp "$D/junit.xml" "$OUT"
else
	echo "s3tests.sh: pytest wrote no junit XML; its output:" >&2
	tail -n 40 "$D/pytest.log" >&2
fi
exit $rc
