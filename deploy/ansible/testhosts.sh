#!/usr/bin/env bash
# testhosts.sh - throw-away machines to try the playbooks on (root only):
# systemd-nspawn containers booted with systemd, each in its own network
# namespace, each running its own sshd.
#
#   testhosts.sh up   [-n NAME] [-d DIR] [-a NET] [-k PUBKEY] N
#   testhosts.sh down [-d DIR]
#
# Host i (1..N) is NAME-i: its root is an overlay of this machine's / (read
# only, below) and DIR/NAME-i/upper (what it writes: packages installed,
# configs, data), so it has this machine's programs and libraries but its
# own /etc, /var and units; it boots systemd (only the target
# "testhost.target": journald, sshd and what they need, none of the
# services this machine has enabled) in network namespace NAME-i, with
# address NET.(10+i) on a veth whose host end is on the bridge NAMEbr0
# (NET.1/24 here). Its sshd listens on port 22 of that address with its own
# ed25519 host key and lets root in with the key PUBKEY only (no
# passwords). DIR/known_hosts gets every host key, DIR/hosts the lines
# "NAME-i NET.(10+i)".
#
# Everything up creates is recorded in DIR/testhosts.env; down stops the
# containers (SIGTERM to the nspawn pids it recorded, all at once: systemd
# inside shuts down; SIGKILL after 20 s), unmounts their roots, deletes
# their namespaces and the bridge, and removes DIR/NAME-*. A failed up undoes itself.
#
# Defaults: -n dep -d <repo>/run-testhosts -a 10.229.0 -k ~/.ssh/id_ed25519.pub.
set -Eeuo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/../.." && pwd)
BOOT_TIMEOUT=60
STOP_TIMEOUT=20

usage() { sed -n '6,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() {
	echo "testhosts.sh: $*" >&2
	exit 1
}
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
up | down) ;;
-h | --help | help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac

name=dep dir=$REPO/run-testhosts net=10.229.0 pubkey=$HOME/.ssh/id_ed25519.pub count=
while [ $# -gt 0 ]; do
	case $1 in
	-n) name=${2:?}; shift 2 ;;
	-d) dir=${2:?}; shift 2 ;;
	-a) net=${2:?}; shift 2 ;;
	-k) pubkey=${2:?}; shift 2 ;;
	-*) die "unknown option $1" ;;
	*) count=$1; shift ;;
	esac
done
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, mounts, systemd-nspawn)"
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
env_file=$dir/testhosts.env

# ---- down ------------------------------------------------------------------

# stop_hosts H...: every container halted (SIGTERM to the nspawn pid it
# recorded, all at once; SIGKILL to those still there after STOP_TIMEOUT),
# its root unmounted, its namespace deleted.
stop_hosts() {
	local h pid i pids=()
	for h in "$@"; do
		pid=$(cat "$dir/$h/nspawn.pid" 2>/dev/null || true)
		if is_uint "$pid" && kill -0 "$pid" 2>/dev/null &&
			tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-D $dir/$h/root"; then
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
	done
	for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
		local left=()
		for pid in "${pids[@]+"${pids[@]}"}"; do kill -0 "$pid" 2>/dev/null && left+=("$pid"); done
		pids=("${left[@]+"${left[@]}"}")
		[ ${#pids[@]} -eq 0 ] && break
		sleep 0.1
	done
	if [ ${#pids[@]} -gt 0 ]; then
		echo "testhosts.sh: nspawn ${pids[*]} did not halt in ${STOP_TIMEOUT}s: SIGKILL" >&2
		kill -KILL "${pids[@]}" 2>/dev/null || true
		sleep 0.5
	fi
	for h in "$@"; do
		rm -f "$dir/$h/nspawn.pid"
		if mountpoint -q "$dir/$h/root"; then
			umount "$dir/$h/root" 2>/dev/null || umount -l "$dir/$h/root" || true
		fi
		ip netns del "$h" 2>/dev/null || true
	done
}

cmd_down() {
	local h
	[ -f "$env_file" ] || {
		echo "no test hosts under $dir"
		return 0
	}
	# shellcheck disable=SC1090
	source "$env_file"
	# shellcheck disable=SC2086
	stop_hosts $HOSTS
	ip link del "${NAME}br0" 2>/dev/null || true
	for h in $HOSTS; do rm -rf "${dir:?}/$h"; done
	rm -f "$env_file"
	echo "test hosts $NAME under $dir: down"
}

# ---- up --------------------------------------------------------------------

# prepare_root H IP: what H's upper layer holds before it boots.
prepare_root() {
	local h=$1 ip=$2 up=$dir/$1/upper
	mkdir -p "$up/etc/ssh" "$up/etc/systemd/system/testhost.target.wants" "$up/root"
	echo "$h" >"$up/etc/hostname"
	printf '127.0.0.1 localhost\n%s %s\n' "$ip" "$h" >"$up/etc/hosts"
	systemd-id128 new >"$up/etc/machine-id" 2>/dev/null || tr -dc 0-9a-f </dev/urandom | head -c 32 >"$up/etc/machine-id"
	# Its own host key and an sshd config that names only that key and
	# only PUBKEY's holder, whatever this machine's /etc/ssh has.
	rm -f "$up"/etc/ssh/ssh_host_*
	ssh-keygen -q -t ed25519 -N '' -C "root@$h" -f "$up/etc/ssh/ssh_host_ed25519_key"
	install -m 600 "$pubkey" "$up/etc/ssh/testhost_authorized_keys"
	cat >"$up/etc/ssh/sshd_config" <<EOF
# sshd_config of test host $h, written by testhosts.sh
ListenAddress $ip
Port 22
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
AuthorizedKeysFile /etc/ssh/testhost_authorized_keys
UsePAM no
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
	echo "$ip $(cut -d' ' -f1,2 "$up/etc/ssh/ssh_host_ed25519_key.pub")" >>"$dir/known_hosts"
	# root's shell starts clean, not with this machine's root dot-files.
	echo "# root's .bashrc on test host $h" >"$up/root/.bashrc"
	echo "# root's .profile on test host $h" >"$up/root/.profile"
	# Its own copies of the package database and of the users and groups,
	# taken now: this machine's may change under it (an install of its own),
	# and dpkg's journal starts empty (opaque over this machine's).
	mkdir -p "$up/var/lib/dpkg/updates"
	cp -p /var/lib/dpkg/status "$up/var/lib/dpkg/status"
	cp -p /etc/passwd /etc/group /etc/shadow /etc/gshadow "$up/etc/"
	python3 -c 'import os, sys; os.setxattr(sys.argv[1], "trusted.overlay.opaque", b"y")' "$up/var/lib/dpkg/updates"
	# No rebuild of man-db's index at each package install (seconds of CPU):
	# its switch file hidden (an overlay whiteout).
	if [ -e /var/lib/man-db/auto-update ]; then
		mkdir -p "$up/var/lib/man-db"
		mknod "$up/var/lib/man-db/auto-update" c 0 0
	fi
	# Boot to sshd and journald only.
	cat >"$up/etc/systemd/system/testhost.target" <<EOF
[Unit]
Description=Test host: sshd and the basics
Requires=basic.target
After=basic.target
AllowIsolate=yes
EOF
	ln -sf /lib/systemd/system/ssh.service "$up/etc/systemd/system/testhost.target.wants/ssh.service"
	# Nothing a package installs may start services it was not asked to:
	# the playbook starts aisd itself (an existing policy is kept).
}

# boot_host H IP: the namespace, the veth, the overlay, the container.
boot_host() {
	local h=$1 ip=$2 root=$dir/$1/root veth=${NAME}${1##*-}
	ip netns add "$h"
	ip link add "$veth" type veth peer name host0 netns "$h"
	ip link set "$veth" master "${NAME}br0" up
	ip -n "$h" link set lo up
	ip -n "$h" addr add "$ip/24" dev host0
	ip -n "$h" link set host0 up
	ip -n "$h" route add default via "$NET.1"
	mkdir -p "$dir/$h/work" "$root"
	mount -t overlay overlay -o "lowerdir=/,upperdir=$dir/$h/upper,workdir=$dir/$h/work" "$root"
	setsid systemd-nspawn -D "$root" -M "$h" --boot --register=no --keep-unit -q \
		--network-namespace-path="/run/netns/$h" --console=passive --link-journal=no \
		--resolv-conf=off --timezone=off systemd.unit=testhost.target \
		</dev/null >"$dir/$h/console.log" 2>&1 &
	echo $! >"$dir/$h/nspawn.pid"
}

cmd_up() {
	local i h ip hosts=""
	is_uint "$count" && [ "$count" -ge 1 ] && [ "$count" -le 20 ] || die "want a number of hosts (1-20)"
	[[ $name =~ ^[a-z0-9]{1,6}$ ]] || die "-n wants 1-6 lowercase letters or digits"
	[[ $net =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || die "-a wants the first three bytes of a /24, like 10.229.0"
	[ -r "$pubkey" ] || die "no public key $pubkey (-k)"
	command -v systemd-nspawn >/dev/null || die "no systemd-nspawn (Debian's systemd-container)"
	[ -x /usr/sbin/sshd ] || die "no /usr/sbin/sshd (Debian's openssh-server)"
	[ -f "$env_file" ] && die "test hosts already up under $dir (down first)"
	mkdir -p "$dir"
	: >"$dir/known_hosts"
	: >"$dir/hosts"
	NAME=$name NET=$net
	for ((i = 1; i <= count; i++)); do hosts="$hosts $name-$i"; done
	HOSTS=${hosts# }
	printf 'NAME=%q\nNET=%q\nHOSTS=%q\n' "$NAME" "$NET" "$HOSTS" >"$env_file"
	trap 'echo "testhosts.sh: up failed, undoing" >&2; cmd_down >&2' ERR
	ip link add "${NAME}br0" type bridge
	ip addr add "$NET.1/24" dev "${NAME}br0"
	ip link set "${NAME}br0" up
	for ((i = 1; i <= count; i++)); do
		h=$name-$i ip=$net.$((10 + i))
		rm -rf "${dir:?}/$h"
		mkdir -p "$dir/$h"
		prepare_root "$h" "$ip"
		boot_host "$h" "$ip"
		echo "$h $ip" >>"$dir/hosts"
	done
	# Up when every sshd answers with the key we gave it.
	for ((i = 1; i <= count; i++)); do
		h=$name-$i ip=$net.$((10 + i))
		local t0=$SECONDS
		until ssh-keyscan -T 2 -t ed25519 "$ip" 2>/dev/null | grep -q ssh-ed25519; do
			if [ $((SECONDS - t0)) -ge $BOOT_TIMEOUT ] || ! kill -0 "$(cat "$dir/$h/nspawn.pid")" 2>/dev/null; then
				tail -20 "$dir/$h/console.log" >&2
				echo "testhosts.sh: $h did not boot to sshd in ${BOOT_TIMEOUT}s, undoing" >&2
				trap - ERR
				cmd_down >&2
				exit 1
			fi
			sleep 0.5
		done
	done
	trap - ERR
	echo "test hosts up under $dir:"
	sed 's/^/  /' "$dir/hosts"
}

case $cmd in
up) cmd_up ;;
down) cmd_down ;;
esac
