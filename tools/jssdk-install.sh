#!/bin/sh
# jssdk-install.sh [DIR] - installs the AWS SDK for JavaScript v3
# (@aws-sdk/client-s3 and @aws-sdk/lib-storage, pinned below) with npm into
# DIR (default $AISD_JSSDK_DIR, else ~/.cache/aisd/jssdk: outside the
# repository), for tests/integration/test_s3_jssdk.py. Does nothing when
# that version is there already. Prints the folder on success.
#
# Exit status: 0 installed; 2 npm or node is missing, or npm cannot reach
# its registry (the caller may skip, saying so); 1 any other failure.
set -u

VERSION=3.1175.0
DIR=${1:-${AISD_JSSDK_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/aisd/jssdk}}

have() {
	[ -f "$DIR/node_modules/@aws-sdk/client-s3/package.json" ] &&
		[ -f "$DIR/node_modules/@aws-sdk/lib-storage/package.json" ] &&
		grep -q "\"version\": \"$VERSION\"" "$DIR/node_modules/@aws-sdk/client-s3/package.json"
}
if have; then
	echo "$DIR"
	exit 0
fi
command -v node >/dev/null 2>&1 || { echo "jssdk-install: no node" >&2; exit 2; }
command -v npm >/dev/null 2>&1 || { echo "jssdk-install: no npm" >&2; exit 2; }
mkdir -p "$DIR" || exit 1
[ -f "$DIR/package.json" ] || echo '{"name": "aisd-jssdk", "private": true}' >"$DIR/package.json"
# a registry that does not answer is a skip, not a failure
if ! timeout 60 npm ping >/dev/null 2>&1; then
	echo "jssdk-install: npm cannot reach its registry ($(npm config get registry 2>/dev/null))" >&2
	exit 2
fi
if ! (cd "$DIR" && timeout 600 npm install --no-audit --no-fund --loglevel=error \
	"@aws-sdk/client-s3@$VERSION" "@aws-sdk/lib-storage@$VERSION" >&2); then
	echo "jssdk-install: npm install failed" >&2
	exit 1
fi
have || { echo "jssdk-install: installed, but @aws-sdk/client-s3 $VERSION is not in $DIR" >&2; exit 1; }
echo "$DIR"
