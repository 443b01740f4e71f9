#!/usr/bin/env bash
# test_deb.sh - the Debian packages of `make deb` installed into this
# machine with dpkg -i (root: this runs in throwaway containers), a cluster
# started from what they installed, then remove and purge.
#
# systemd is not PID 1 here, so no unit is started through systemctl: the
# nodes run the installed unit's own ExecStart= line (instance = config
# name, from /lib/systemd/system/aisd@.service) as its User= (setpriv),
# with the installed example configs, free loopback ports below 32768 and
# the installed cluster secret (--set). The unit itself is checked with
# systemd-analyze (verify clean; security exposure below 3).
#
# Checks: make deb writes BUILD/deb/aisd_VERSION_ARCH.deb and
# aisctl_VERSION_ARCH.deb of the daemon's version (lintian found no error:
# the rule fails otherwise); the install makes the system user aisd,
# /etc/aisd root:aisd 0750 with the configs as conffiles (same bytes as
# conf/) and a cluster secret aisd:aisd 0600, /var/lib/aisd and
# /var/log/aisd aisd:aisd 0750, the unit, logrotate, man pages and the
# completion; a gateway and two targets (processes of user aisd, data and
# logs under /var/lib/aisd and /var/log/aisd) form a cluster in which the
# installed aisctl puts and gets objects (bytes compared); installing the
# packages again keeps an edited config and the secret; remove keeps the
# configs, the data and the user and removes every other packaged file;
# purge leaves nothing: no user, no group, no /etc/aisd, /var/lib/aisd or
# /var/log/aisd, no file or directory of `dpkg -L` that was not there
# before. On any failure the trap stops the nodes by PID and purges, so
# the machine is left as found. The nodes' logs are copied under the test
# dir for the runner's error-line scan.
# serial: packages installed into the system (dpkg)
# timeout: 600
set -u
source "$IT_LIB/lib.sh"
unset AIS_ENDPOINT

ROOT=$(cd "$IT_LIB/../.." && pwd)
BUILD=$(dirname "$AISD_BIN")
W=$TMPDIR/deb
mkdir -p "$W"
PIDS=()
INSTALLED=0

if [ "$(id -u)" != 0 ]; then
	skip "Debian packages installed into the system" "needs root (dpkg -i)"
	finish
fi

# --- the machine before ---------------------------------------------------------
before=""
dpkg-query -W -f='${Status}' aisd 2>/dev/null | grep -q installed && before+=" package aisd,"
dpkg-query -W -f='${Status}' aisctl 2>/dev/null | grep -q installed && before+=" package aisctl,"
getent passwd aisd >/dev/null && before+=" user aisd,"
getent group aisd >/dev/null && before+=" group aisd,"
for p in /etc/aisd /var/lib/aisd /var/log/aisd /lib/systemd/system/aisd@.service /etc/logrotate.d/aisd; do
	[ -e "$p" ] && before+=" $p,"
done
if [ -n "$before" ]; then
	fail "the machine holds no aisd install before the test (found:${before%,}; dpkg --purge aisd aisctl first)"
	finish
fi

stop_nodes() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait_gone "$p" 15 || kill -9 "$p" 2>/dev/null; done
	PIDS=()
}
# dpkg_retry ARGS...: dpkg, waiting (60 s at most) while another dpkg or apt
# holds its lock.
dpkg_retry() {
	local i
	for ((i = 0; i < 30; i++)); do
		dpkg "$@" >"$W/dpkg.out" 2>&1 && return 0
		grep -q 'lock' "$W/dpkg.out" || return 1
		sleep 2
	done
	return 1
}
# cleanup: the machine as found, whatever failed (nothing of this was there
# before: checked above).
cleanup() {
	stop_nodes
	if [ "$INSTALLED" = 1 ]; then
		dpkg_retry --purge aisd aisctl || sed 's/^/#   cleanup: /' "$W/dpkg.out"
		getent passwd aisd >/dev/null && userdel aisd
		getent group aisd >/dev/null && groupdel aisd
		rm -rf /etc/aisd /var/lib/aisd /var/log/aisd
	fi
}
trap cleanup EXIT

# --- make deb ---------------------------------------------------------------------
VER=$(sed -n 's/^#define AISD_VERSION "\(.*\)"/\1/p' "$ROOT/include/aisd/version.h")
ARCH=$(dpkg --print-architecture)
DEB_AISD=$BUILD/deb/aisd_${VER}_$ARCH.deb
DEB_CTL=$BUILD/deb/aisctl_${VER}_$ARCH.deb
start=$(date +%s)
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" deb BUILD="$BUILD" >"$W/make.out" 2>&1
rc=$?
diag "make deb: $(($(date +%s) - start)) s"
grep -E '^[EWI]: ' "$W/make.out" | sed 's/^/# lintian: /' | head -20
if [ "$rc" != 0 ] || [ ! -f "$DEB_AISD" ] || [ ! -f "$DEB_CTL" ]; then
	fail "make deb writes $DEB_AISD and $DEB_CTL (exit $rc)"
	tail -30 "$W/make.out" | sed 's/^/#   /'
	finish
fi
ok "make deb writes aisd_${VER}_$ARCH.deb and aisctl_${VER}_$ARCH.deb, lintian without error"
check_eq "the packages carry the daemon's version" \
	"$(dpkg-deb -f "$DEB_AISD" Version) $(dpkg-deb -f "$DEB_CTL" Version)" "$VER $VER"

# every directory the packages hold, and whether it was there before
dpkg-deb -c "$DEB_AISD" >"$W/contents"
dpkg-deb -c "$DEB_CTL" >>"$W/contents"
awk '$1 ~ /^d/ {sub(/^\./, "", $6); sub(/\/$/, "", $6); if ($6 != "") print $6}' "$W/contents" | sort -u |
	while read -r d; do [ -e "$d" ] || echo "$d"; done >"$W/newdirs"

# --- install ----------------------------------------------------------------------
INSTALLED=1
if ! dpkg_retry -i "$DEB_AISD" "$DEB_CTL"; then
	fail "dpkg -i aisd aisctl"
	sed 's/^/#   /' "$W/dpkg.out" | tail -20
	finish
fi
ok "dpkg -i installs both packages"
dpkg -L aisd aisctl | sort -u >"$W/files"

check "aisd is a system user with no login shell" \
	bash -c '[ "$(getent passwd aisd | cut -d: -f3)" -lt 1000 ] && getent passwd aisd | grep -q ":/usr/sbin/nologin$"'
mode() { stat -c '%U:%G %a' "$1" 2>/dev/null; }
check_eq "/etc/aisd is root:aisd 0750" "$(mode /etc/aisd)" "root:aisd 750"
check_eq "/var/lib/aisd is aisd:aisd 0750" "$(mode /var/lib/aisd)" "aisd:aisd 750"
check_eq "/var/log/aisd is aisd:aisd 0750" "$(mode /var/log/aisd)" "aisd:aisd 750"
check_eq "/etc/aisd/cluster.secret is aisd:aisd 0600" "$(mode /etc/aisd/cluster.secret)" "aisd:aisd 600"
n=$(head -1 /etc/aisd/cluster.secret | tr -d '\n' | wc -c)
check "the cluster secret is a random line of 16..255 bytes ($n)" [ "$n" -ge 16 -a "$n" -le 255 ]
conffiles=$(dpkg-query -W -f='${Conffiles}\n' aisd | awk 'NF {print $1}' | sort | tr '\n' ' ')
check_eq "the configs and logrotate's are conffiles" "$conffiles" \
	"/etc/aisd/gateway.conf /etc/aisd/target.conf /etc/logrotate.d/aisd "
check "the installed configs are conf/'s" cmp -s /etc/aisd/gateway.conf "$ROOT/conf/gateway.conf"
check "the installed target config is conf/'s" cmp -s /etc/aisd/target.conf "$ROOT/conf/target.conf"
for f in /usr/bin/aisd /usr/bin/aisloader /usr/bin/aisctl /usr/share/man/man8/aisd.8.gz \
	/usr/share/man/man5/aisd.conf.5.gz /usr/share/man/man1/aisctl.1.gz /usr/share/man/man1/aisloader.1.gz \
	/usr/share/bash-completion/completions/aisctl /lib/systemd/system/aisd@.service; do
	[ -f "$f" ] || missing+=" $f"
done
check_eq "binaries, man pages, completion and unit installed" "${missing:-}" ""
check "the installed aisd prints version $VER" bash -c '/usr/bin/aisd --version 2>&1 | grep -qF "$1"' _ "$VER"

# the unit: systemd-analyze verify prints nothing; exposure below 3
UNIT=/lib/systemd/system/aisd@.service
(cd "$W" && systemd-analyze verify "$UNIT") >"$W/verify" 2>&1
rc=$?
check "systemd-analyze verify aisd@.service: clean" [ "$rc" = 0 -a ! -s "$W/verify" ]
sed 's/^/#   /' "$W/verify" | head -10
(cd "$W" && systemd-analyze security --offline=true "$UNIT") >"$W/security" 2>&1
score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p' "$W/security")
check "systemd-analyze security aisd@.service: exposure below 3 (${score:-none})" \
	awk -v s="${score:-99}" 'BEGIN { exit !(s + 0 < 3) }'
if command -v logrotate >/dev/null; then
	logrotate -d -s "$W/logrotate.state" /etc/logrotate.d/aisd >"$W/logrotate" 2>&1
	check "logrotate reads /etc/logrotate.d/aisd (as user aisd)" \
		bash -c '[ "$1" = 0 ] && grep -q "switching euid from 0 to $(id -u aisd)" "$2"' _ $? "$W/logrotate"
fi

# --- a cluster from the installed configs, started as the unit starts it ---------
# ExecStart= of the unit, %i the instance; User= the user
execstart=$(sed -n 's/^ExecStart=//p' "$UNIT")
user=$(sed -n 's/^User=//p' "$UNIT")
check_eq "the unit runs aisd --config /etc/aisd/%i.conf as aisd" "$user: $execstart" \
	"aisd: /usr/bin/aisd --config /etc/aisd/%i.conf"

# low_port: a free loopback port in 20000..32000, none of USED
USED=" "
low_port() {
	local p i
	for ((i = 0; i < 200; i++)); do
		p=$((20000 + RANDOM % 12000))
		case $USED in *" $p "*) continue ;; esac
		if /usr/bin/python3 -c 'import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.close()' "$p" 2>/dev/null; then
			USED+="$p "
			echo "$p"
			return 0
		fi
	done
	return 1
}
# start_node NAME INSTANCE PORT ARGS...: the unit's command for INSTANCE as
# its user, on PORT; NAME keeps its stderr under $W/NAME.stderr.
start_node() {
	local name=$1 inst=$2 port=$3
	shift 3
	# shellcheck disable=SC2086
	env -i PATH=/usr/bin:/bin setpriv --reuid="$user" --regid="$user" --init-groups -- \
		${execstart//%i/$inst} --port "$port" --set cluster.secret_file=/etc/aisd/cluster.secret "$@" \
		</dev/null >"$W/$name.stderr" 2>&1 &
	PIDS+=($!)
	wait_health "http://127.0.0.1:$port" 15
}
PG=$(low_port) && P1=$(low_port) && P2=$(low_port)
GW=http://127.0.0.1:$PG
start_node gw gateway "$PG"
check "gateway g1 (aisd@gateway) answers" wait_health "$GW" 1
start_node t1 target "$P1" --set cluster.join="$GW"
check "target t1 (aisd@target) answers" wait_health "http://127.0.0.1:$P1" 1
start_node t2 target "$P2" --set cluster.join="$GW" --set node.id=t2 \
	--set store.mountpaths=/var/lib/aisd/t2d1,/var/lib/aisd/t2d2 --set log.file=/var/log/aisd/target2.log
check "target t2 (aisd@target, its own id and mountpaths) answers" wait_health "http://127.0.0.1:$P2" 1

for ((i = 0; i < 100; i++)); do
	/usr/bin/aisctl -e "$GW" cluster show >"$W/show" 2>&1 &&
		[ "$(grep -cE '^target +t[12] .* ok$' "$W/show")" = 2 ] && break
	sleep 0.2
done
check "aisctl cluster show: a gateway and two targets, all ok" \
	bash -c 'grep -qE "^gateway +g1\* .* ok$" "$1" && [ "$(grep -cE "^target +t[12] .* ok$" "$1")" = 2 ]' _ "$W/show"
sed 's/^/#   /' "$W/show"
users=$(ps -o user= -p "$(
	IFS=,
	echo "${PIDS[*]}"
)" | sort -u | tr '\n' ' ')
check_eq "the nodes run as user aisd" "$users" "aisd "

mkdir -p "$W/in" "$W/out"
for ((i = 0; i < 24; i++)); do
	head -c $((1000 + i * 4096)) /dev/urandom >"$W/in/f$i"
done
head -c 3000000 /dev/urandom >"$W/in/big"
/usr/bin/aisctl -e "$GW" bucket create debtest >"$W/ctl.out" 2>&1 &&
	/usr/bin/aisctl -e "$GW" put -r "$W/in" debtest >>"$W/ctl.out" 2>&1
check "aisctl bucket create and put -r through the gateway" [ $? = 0 ]
/usr/bin/aisctl -e "$GW" get -r debtest "$W/out" >>"$W/ctl.out" 2>&1
rc=$?
check "aisctl get -r gets back every byte" bash -c '[ "$1" = 0 ] && diff -r "$2" "$3" >/dev/null' _ "$rc" "$W/in" "$W/out"
/usr/bin/aisctl -e "$GW" get debtest/big - 2>>"$W/ctl.out" | cmp -s - "$W/in/big"
check "aisctl get of one object to standard output" [ "${PIPESTATUS[0]}${PIPESTATUS[1]}" = 00 ]
sed 's/^/#   /' "$W/ctl.out" | tail -5
n1=$(find /var/lib/aisd/d1 /var/lib/aisd/d2 -path '*/obj/*' -type f 2>/dev/null | wc -l)
n2=$(find /var/lib/aisd/t2d1 /var/lib/aisd/t2d2 -path '*/obj/*' -type f 2>/dev/null | wc -l)
check "objects stored on both targets under /var/lib/aisd (t1 $n1, t2 $n2)" [ "$n1" -gt 0 -a "$n2" -gt 0 -a $((n1 + n2)) = 25 ]
check_eq "everything under /var/lib/aisd belongs to aisd" \
	"$(find /var/lib/aisd ! -user aisd 2>/dev/null | head -3)" ""
check "each node logs to /var/log/aisd" \
	bash -c 'for f in gateway target target2; do [ -s /var/log/aisd/$f.log ] || exit 1; done'

stop_nodes
for f in gateway target target2; do
	mkdir -p "$AISD_DIR/deb-logs/$f"
	cp "/var/log/aisd/$f.log" "$AISD_DIR/deb-logs/$f/aisd.log" 2>/dev/null
done
for f in gw t1 t2; do cp "$W/$f.stderr" "$AISD_DIR/deb-logs/$f.stderr"; done

# --- the same packages again over an edited config (an upgrade's path) -------------
printf '\n# edited by the operator\nlog.level = debug\n' >>/etc/aisd/target.conf
cp -p /etc/aisd/target.conf /etc/aisd/cluster.secret "$W/"
if dpkg_retry -i "$DEB_AISD" "$DEB_CTL"; then ok "dpkg -i again over the installed packages"; else
	fail "dpkg -i again over the installed packages"
	sed 's/^/#   /' "$W/dpkg.out" | tail -10
fi
check "reinstall keeps the edited target.conf and the cluster secret" \
	bash -c 'cmp -s "$1/target.conf" /etc/aisd/target.conf && cmp -s "$1/cluster.secret" /etc/aisd/cluster.secret' _ "$W"
check_eq "reinstall keeps the modes" "$(mode /etc/aisd) $(mode /etc/aisd/cluster.secret)" "root:aisd 750 aisd:aisd 600"

# --- remove: configs, data, logs and the user stay ---------------------------------
if dpkg_retry -r aisd aisctl; then ok "dpkg -r aisd aisctl"; else
	fail "dpkg -r aisd aisctl"
	sed 's/^/#   /' "$W/dpkg.out" | tail -10
fi
left=$(grep -vE '^/etc/' "$W/files" | while read -r f; do [ -e "$f" ] && [ ! -d "$f" ] && echo "$f"; done)
check_eq "remove: no packaged file left outside /etc" "$left" ""
check "remove keeps the configs, the secret, the data, the logs and the user" \
	bash -c '[ -f /etc/aisd/gateway.conf ] && [ -f /etc/aisd/cluster.secret ] && [ -d /var/lib/aisd/d1/obj ] &&
		[ -f /var/log/aisd/gateway.log ] && getent passwd aisd >/dev/null'

# --- purge: nothing left ---------------------------------------------------------------
if dpkg_retry --purge aisd aisctl; then ok "dpkg --purge aisd aisctl"; else
	fail "dpkg --purge aisd aisctl"
	sed 's/^/#   /' "$W/dpkg.out" | tail -10
fi
left=$(cat "$W/files" "$W/newdirs" | sort -u | while read -r f; do
	[ -d "$f" ] && ! grep -qxF "$f" "$W/newdirs" && continue # a directory that was there before
	[ -e "$f" ] || [ -L "$f" ] && echo "$f"
done | head -5)
check_eq "purge: nothing of dpkg -L left (and no directory the packages made)" "$left" ""
for p in /etc/aisd /var/lib/aisd /var/log/aisd; do [ -e "$p" ] && gone+=" $p"; done
check_eq "purge: /etc/aisd, /var/lib/aisd and /var/log/aisd removed" "${gone:-}" ""
check "purge: no user or group aisd" bash -c '! getent passwd aisd >/dev/null && ! getent group aisd >/dev/null' 
check "purge: dpkg knows neither package" \
	bash -c '! dpkg-query -W -f="\${Status}" aisd aisctl 2>/dev/null | grep -q .'
INSTALLED=0
finish
