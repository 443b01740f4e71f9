#!/bin/sh
# install-deps.sh - installs, with apt-get, every Debian package that aisd
# needs to build, test and benchmark, and only those that are missing.
# Runs as root (or via sudo when available). Safe to run again.
#
# usage: install-deps.sh [--bench] [--s3tests]
#   --bench    also what only `make bench` needs (gnuplot-nox draws its curves)
#   --s3tests  also what ceph/s3-tests needs to run (`make s3-tests`)
set -e

PKGS="build-essential pkg-config libevent-dev libcurl4-openssl-dev libleveldb-dev \
libssl-dev libxxhash-dev zlib1g-dev check libsubunit-dev libhttp-parser-dev libjansson-dev libarchive-dev libexpat1-dev libisal-dev \
curl python3 python3-botocore python3-boto3 awscli s3cmd rclone s3fs procps iproute2 nginx-light wrk strace prometheus \
python3-torch python3-pil python3-venv python3-pip python3-setuptools python3-wheel debhelper dpkg-dev lintian openssl nodejs npm swift swift-proxy swift-object swift-container swift-account \
ansible openssh-client openssh-server systemd-container"
BENCH_PKGS="gnuplot-nox"
S3TESTS_PKGS="python3-pytest python3-isodate python3-munch python3-gevent python3-yaml python3-tz python3-httplib2 \
python3-lxml python3-requests"
for a in "$@"; do
	case $a in
	--bench) PKGS="$PKGS $BENCH_PKGS" ;;
	--s3tests) PKGS="$PKGS $S3TESTS_PKGS" ;;
	*) echo "usage: install-deps.sh [--bench] [--s3tests]" >&2; exit 2 ;;
	esac
done

missing=""
for p in $PKGS; do
	# node and npm from elsewhere (e.g. NodeSource's nodejs, which carries
	# npm) serve as well: Debian's npm would fight that nodejs
	case $p in
	nodejs) command -v node >/dev/null 2>&1 && continue ;;
	npm) command -v npm >/dev/null 2>&1 && continue ;;
	esac
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# npm's AWS SDK for JavaScript for test_s3_jssdk (into ~/.cache, not the
# repository), once node and npm are there; without the npm registry that
# test skips, saying so.
jssdk() {
	"$(dirname "$0")/jssdk-install.sh" >/dev/null ||
		echo "install-deps: the AWS SDK for JavaScript was not installed (test_s3_jssdk will skip or fail)" >&2
}

if [ -z "$missing" ]; then
	jssdk
	exit 0
fi

echo "install-deps: installing:$missing"
SUDO=""
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null 2>&1 || { echo "install-deps: need root to install:$missing" >&2; exit 1; }
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# nginx, prometheus and sshd must not start as system services just because
# they were installed (sshd runs only inside test_deploy's test hosts).
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
	$SUDO chmod +x /usr/sbin/policy-rc.d
	trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
jssdk
