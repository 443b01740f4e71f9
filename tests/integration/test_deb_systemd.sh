#!/usr/bin/env bash
# test_deb_systemd.sh - the Debian packages under a real systemd: a
# container booted with systemd-nspawn from this machine's own system
# (a read-only bind of / under a throwaway overlay, --volatile=overlay, and
# a private network), in which a unit of the test installs the packages of
# `make deb`, runs three aisd@ instances through systemctl, and removes and
# purges them. Nothing the container does reaches this machine's files:
# the overlay is discarded when it powers off.
#
# Checks (inside, reported back through a bind-mounted folder): dpkg -i;
# systemd-analyze verify of aisd@gateway.service clean; aisd@gateway,
# aisd@target and aisd@t2 (a config of its own, /etc/aisd/t2.conf) active
# with the cluster secret enabled in the configs, forming a cluster of one
# gateway and two targets; aisctl put/get (bytes compared); a transformer
# (stdio, Python's aisd.etl) answering GET ?etl= under the unit's sandbox
# with etl.allow_weak_isolation off (its namespaces, mount and setrlimit
# allowed); the running node: user aisd, no capability, no new privileges,
# a seccomp filter, `systemd-analyze security` below 3; logrotate rotates
# and the nodes reopen their logs; a second dpkg -i restarts the running
# instances; dpkg -r stops them and keeps configs and data; dpkg --purge
# leaves no user, /etc/aisd, /var/lib/aisd or /var/log/aisd. Then
# `make install` of the checkout into the container's system as root (no
# package): it makes the user aisd and its folders, and its unit runs a
# gateway and a target (systemctl) as that user, sandboxed (security below
# 3), that take a put and a get. Skips when
# systemd-nspawn is missing or cannot boot a container here.
# serial: packages installed into the system (dpkg, systemd)
# timeout: 600
set -u
source "$IT_LIB/lib.sh"

ROOT=$(cd "$IT_LIB/../.." && pwd)
BUILD=$(dirname "$AISD_BIN")
W=$TMPDIR/debsd
mkdir -p "$W/root" "$W/share/out" "$W/share/debs"
NSPID=""
MOUNTED=0

if [ "$(id -u)" != 0 ] || ! command -v systemd-nspawn >/dev/null; then
	skip "the packages under systemd in a container" "needs root and systemd-nspawn"
	finish
fi
cleanup() {
	if [ -n "$NSPID" ]; then
		kill -TERM "$NSPID" 2>/dev/null
		wait_gone "$NSPID" 20 || kill -9 "$NSPID" 2>/dev/null
		wait_gone "$NSPID" 5
	fi
	[ "$MOUNTED" = 1 ] && umount "$W/root"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" deb BUILD="$BUILD" >"$W/make.out" 2>&1
rc=$?
VER=$(sed -n 's/^#define AISD_VERSION "\(.*\)"/\1/p' "$ROOT/include/aisd/version.h")
ARCH=$(dpkg --print-architecture)
if [ "$rc" != 0 ]; then
	fail "make deb (exit $rc)"
	tail -20 "$W/make.out" | sed 's/^/#   /'
	finish
fi
cp "$BUILD/deb/aisd_${VER}_$ARCH.deb" "$BUILD/deb/aisctl_${VER}_$ARCH.deb" "$W/share/debs/"

# The unit the container boots into (systemd.unit=), and its script.
cat >"$W/share/debcheck.service" <<'EOF'
[Unit]
Description=test_deb_systemd: the aisd packages under systemd
After=sysinit.target
[Service]
Type=oneshot
ExecStart=/bin/bash /debns/check.sh
StandardOutput=file:/debns/out/check.log
StandardError=inherit
TimeoutStartSec=400
ExecStopPost=/bin/systemctl --no-block poweroff
EOF
cat >"$W/share/upper.py" <<'EOF'
import sys
sys.path.insert(0, "/debns/python")
from aisd.etl import serve
serve(lambda data, meta, args: data.upper())
EOF
cat >"$W/share/check.sh" <<EOF
VER=$VER
ARCH=$ARCH
SRC=/debns/src
OBJ=/debns/obj
EOF
cat >>"$W/share/check.sh" <<'EOF'
# Runs inside the container: one line per check in /debns/out/results.
set -x
exec 2>&1
R=/debns/out/results
res() { if [ "$1" = 0 ]; then echo "ok - $2" >>$R; else echo "not ok - $2" >>$R; fi; }
chk() { local w=$1; shift; "$@"; res $? "$w"; }
echo "booted" >>$R
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
unset AIS_ENDPOINT
# a container image's "start no services" rule (Docker's policy-rc.d, exit
# 101) would keep dpkg from restarting and stopping the units: gone from
# this throwaway overlay only
rm -f /usr/sbin/policy-rc.d
dpkg -i /debns/debs/aisd_${VER}_$ARCH.deb /debns/debs/aisctl_${VER}_$ARCH.deb
res $? "dpkg -i aisd aisctl"
out=$(systemd-analyze verify aisd@gateway.service 2>&1)
res $? "systemd-analyze verify aisd@gateway.service: clean ($out)"
[ -z "$out" ] || res 1 "systemd-analyze verify printed nothing"
sed -i 's/^#cluster.secret_file/cluster.secret_file/' /etc/aisd/gateway.conf /etc/aisd/target.conf
sed -e 's/^node.id = .*/node.id = t2/' -e 's/^net.port = .*/net.port = 8082/' \
	-e 's|^store.mountpaths = .*|store.mountpaths = /var/lib/aisd/t2d1,/var/lib/aisd/t2d2|' \
	-e 's|^log.file = .*|log.file = /var/log/aisd/t2.log|' /etc/aisd/target.conf >/etc/aisd/t2.conf
systemctl start aisd@gateway
for i in $(seq 1 50); do curl -sf -o /dev/null http://127.0.0.1:8080/v1/health && break; sleep 0.2; done
systemctl start aisd@target aisd@t2
for i in $(seq 1 100); do
	[ "$(aisctl cluster show 2>/dev/null | grep -cE '^target +t[12] .* ok$')" = 2 ] && break
	sleep 0.2
done
chk "aisd@gateway, aisd@target, aisd@t2 active" systemctl is-active aisd@gateway aisd@target aisd@t2
aisctl cluster show
[ "$(aisctl cluster show | grep -cE '^(gateway +g1\*|target +t[12]) .* ok$')" = 3 ]
res $? "a cluster of g1 and t1, t2 (aisctl cluster show)"
head -c 300000 /dev/urandom >/tmp/obj
aisctl bucket create b && aisctl put /tmp/obj b/o && aisctl get b/o /tmp/back && cmp /tmp/obj /tmp/back
res $? "aisctl put and get through the gateway"
printf 'hello, sandbox\n' >/tmp/small && aisctl put /tmp/small b/s
aisctl etl init up --cmd 'python3 /debns/upper.py' --timeout 20s
res $? "aisctl etl init up"
got=$(curl -sS -L "http://127.0.0.1:8080/v1/objects/b/s?etl=up")
[ "$got" = "HELLO, SANDBOX" ]
res $? "GET ?etl=up: the transformer ran in its sandbox under the unit ($got)"
aisctl etl logs up
pid=$(systemctl show -p MainPID --value aisd@target)
st=$(grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/$pid/status | awk '{print $1, $2}' | tr '\n' ' ')
echo "$st"
[ "$st" = "Uid: $(id -u aisd) CapEff: 0000000000000000 CapBnd: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 " ]
res $? "aisd@target runs as aisd, no capability, no new privileges, seccomp ($st)"
score=$(systemd-analyze security aisd@target.service 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p')
awk -v s="${score:-99}" 'BEGIN { exit !(s + 0 < 3) }'
res $? "systemd-analyze security aisd@target.service below 3 ($score)"
logrotate -f /etc/logrotate.d/aisd
res $? "logrotate -f /etc/logrotate.d/aisd"
sleep 1
aisctl cluster show >/dev/null
for f in gateway target t2; do [ -s /var/log/aisd/$f.log.1 ] && [ -e /var/log/aisd/$f.log ] || exit_rot=1; done
res "${exit_rot:-0}" "rotated logs, reopened by the nodes"
ls -la /var/log/aisd
old=$(systemctl show -p MainPID --value aisd@target)
dpkg -i /debns/debs/aisd_${VER}_$ARCH.deb
res $? "dpkg -i again (upgrade path)"
for i in $(seq 1 50); do curl -sf -o /dev/null http://127.0.0.1:8081/v1/health && break; sleep 0.2; done
new=$(systemctl show -p MainPID --value aisd@target)
[ "$new" != "$old" ] && [ "$new" != 0 ] && systemctl is-active aisd@gateway aisd@target aisd@t2
res $? "the upgrade restarted the running instances (target pid $old -> $new)"
aisctl get b/o /tmp/back2 && cmp /tmp/obj /tmp/back2
res $? "the object is there after the restart"
mkdir -p /debns/out/logs && cp /var/log/aisd/* /debns/out/logs/
dpkg -r aisd aisctl
res $? "dpkg -r aisd aisctl"
! systemctl is-active -q aisd@gateway aisd@target aisd@t2
res $? "remove stopped every instance"
[ -f /etc/aisd/t2.conf ] && [ -d /var/lib/aisd/t2d1/obj ] && getent passwd aisd >/dev/null
res $? "remove kept configs, data and the user"
dpkg --purge aisd aisctl
res $? "dpkg --purge aisd aisctl"
! getent passwd aisd && ! getent group aisd && [ ! -e /etc/aisd ] && [ ! -e /var/lib/aisd ] && [ ! -e /var/log/aisd ] &&
	[ ! -e /lib/systemd/system/aisd@.service ]
res $? "purge left no user, group, /etc/aisd, /var/lib/aisd, /var/log/aisd or unit"
# make install without the packages, as root into the system (the
# checkout's build, in the container's overlay): the user, its folders
# and the hardened unit, started through systemctl
make -s -C "$SRC" install BUILD="$OBJ" PREFIX=/usr/local >/debns/out/install.log 2>&1
res $? "make install (root, no DESTDIR, no package)"
tail -3 /debns/out/install.log
getent passwd aisd | grep -q ':/usr/sbin/nologin$' &&
	[ "$(stat -c '%U:%G:%a' /var/lib/aisd /var/log/aisd /usr/local/etc/aisd | tr '\n' ' ')" = "aisd:aisd:750 aisd:aisd:750 root:aisd:750 " ]
res $? "make install made the user aisd, /var/lib/aisd, /var/log/aisd and /usr/local/etc/aisd"
systemctl daemon-reload
systemctl start aisd@gateway
for i in $(seq 1 50); do curl -sf -o /dev/null http://127.0.0.1:8080/v1/health && break; sleep 0.2; done
systemctl start aisd@target
for i in $(seq 1 100); do
	[ "$(/usr/local/bin/aisctl cluster show 2>/dev/null | grep -cE '^target +t1 .* ok$')" = 1 ] && break
	sleep 0.2
done
chk "make install's aisd@gateway and aisd@target active" systemctl is-active aisd@gateway aisd@target
systemctl show -p FragmentPath --value aisd@target | grep -qx /usr/local/lib/systemd/system/aisd@.service
res $? "the unit is make install's (/usr/local/lib/systemd/system)"
/usr/local/bin/aisctl bucket create mi && /usr/local/bin/aisctl put /tmp/obj mi/o &&
	/usr/local/bin/aisctl get mi/o /tmp/back3 && cmp /tmp/obj /tmp/back3
res $? "make install's cluster: put and get"
pid=$(systemctl show -p MainPID --value aisd@target)
st=$(grep -E '^(Uid|CapEff|NoNewPrivs|Seccomp):' /proc/$pid/status | awk '{print $1, $2}' | tr '\n' ' ')
[ "$st" = "Uid: $(id -u aisd) CapEff: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 " ]
res $? "make install's aisd@target runs as aisd, no capability, no new privileges, seccomp ($st)"
score=$(systemd-analyze security aisd@target.service 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p')
awk -v s="${score:-99}" 'BEGIN { exit !(s + 0 < 3) }'
res $? "systemd-analyze security of make install's aisd@target below 3 ($score)"
cp /var/log/aisd/gateway.log /debns/out/logs/mi-gateway.log; cp /var/log/aisd/target.log /debns/out/logs/mi-target.log
systemctl stop aisd@gateway aisd@target
echo "done" >>$R
EOF

mount --bind / "$W/root" && MOUNTED=1 && mount -o remount,bind,ro "$W/root"
if [ "$MOUNTED" != 1 ]; then
	skip "the packages under systemd in a container" "cannot bind / read-only"
	finish
fi
uuid=$(tr -d '-' </proc/sys/kernel/random/uuid)
start=$(date +%s)
timeout -k 10 480 systemd-nspawn -q -b -D "$W/root" --volatile=overlay --private-network --register=no \
	--keep-unit --link-journal=no --uuid="$uuid" -M "aisd-deb-$$" \
	--bind="$W/share:/debns" \
	--bind-ro="$ROOT/tools/python:/debns/python" \
	--bind-ro="$ROOT:/debns/src" --bind-ro="$(cd "$BUILD" && pwd):/debns/obj" \
	--bind-ro="$W/share/debcheck.service:/etc/systemd/system/debcheck.service" \
	systemd.unit=debcheck.service </dev/null >"$W/console.log" 2>&1 &
NSPID=$!
wait "$NSPID"
rc=$?
NSPID=""
diag "container: exit $rc after $(($(date +%s) - start)) s"
umount "$W/root" && MOUNTED=0

R=$W/share/out/results
if ! grep -q '^booted$' "$R" 2>/dev/null; then
	skip "the packages under systemd in a container" "systemd-nspawn could not boot a container here (exit $rc)"
	tail -5 "$W/console.log" | sed 's/^/#   /'
	finish
fi
while read -r line; do
	case $line in
	"ok - "*) ok "${line#ok - }" ;;
	"not ok - "*) fail "${line#not ok - }" ;;
	esac
done <"$R"
check "the check ran to its end" grep -q '^done$' "$R"
if [ "$T_FAILS" != 0 ]; then
	tail -40 "$W/share/out/check.log" | sed 's/^/#   /'
fi
# the nodes' logs, for the runner's scan of error lines
for f in "$W"/share/out/logs/*.log*; do
	[ -f "$f" ] || continue
	n=$(basename "$f")
	mkdir -p "$AISD_DIR/debsd-logs/${n%%.*}"
	cp "$f" "$AISD_DIR/debsd-logs/${n%%.*}/aisd.${n#*.}"
done
finish
