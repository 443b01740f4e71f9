#!/usr/bin/env bash
# test_deploy.sh - the Ansible playbooks of deploy/ansible end to end, on
# three test hosts made here (deploy/ansible/testhosts.sh: systemd-nspawn
# containers booted with systemd, each in its own network namespace with
# its own sshd and host key; root logs in with a key made here, host keys
# checked against the known_hosts testhosts.sh writes).
#
# site.yml deploys, from the Debian packages of `make deb` ($BUILD/deb:
# `make test` builds them first; run `make deb` before ONLY=test_deploy;
# without them the test fails), an HTTPS cluster with a cluster
# secret (a CA and per-host certificates made here): gateway g0 on host 1,
# targets t0 and t1 (two mountpaths each) on hosts 2 and 3, as the
# inventory written here says. Checks: every node runs as the packages'
# system user from the installed unit, secrets are 0600, a bucket with two
# copies takes a PUT and gives it back through the gateway. Then upgrade.yml rolls packages of a newer
# version out to the targets, one by one in maintenance, while a load runs
# through the gateway (PUT + GET-and-compare of new objects, GETs of the
# objects written before, bounded in count and time): zero failed requests,
# each target restarted and back, then the gateway's turn (no load: one
# gateway is the cluster's only endpoint while it restarts) and every
# object acknowledged during the load read back whole at the end.
#
# Skips, saying why loudly, only where this machine cannot make network
# namespaces (not root, or no `ip netns`); everything else missing fails.
# The containers, namespaces and bridge go by their recorded pid and names
# (testhosts.sh down) and the load by its pid, in the EXIT trap.
# serial: nspawn hosts and systemd
# timeout: 600
set -u
source "$IT_LIB/lib.sh"
unset AIS_ENDPOINT

REPO=$(cd "$IT_LIB/../.." && pwd)
ANS=$REPO/deploy/ansible
BINDIR=$(dirname "$AISD_BIN")
W=$AISD_DIR/deploy
HOSTS_DIR=$W/hosts
NAME=dep$(($$ % 1000))
NET=10.229.$(($$ % 200 + 20))
LOAD_PID=

if [ "$(id -u)" != 0 ]; then
	diag "SKIPPING the deploy test: not root, so no network namespaces or containers can be made here"
	skip "deploy with Ansible on test hosts" "not root (network namespaces)"
	finish
fi
if ! ip netns add "${NAME}probe" 2>/dev/null; then
	diag "SKIPPING the deploy test: 'ip netns add' fails on this machine, so no test hosts can be made"
	skip "deploy with Ansible on test hosts" "ip netns add does not work here"
	finish
fi
ip netns del "${NAME}probe"
for t in ansible-playbook systemd-nspawn /usr/sbin/sshd ssh-keygen dpkg-deb openssl; do
	command -v "$t" >/dev/null || {
		fail "$t is not installed (make deps installs it)"
		finish
	}
done

mkdir -p "$W/debs/v1" "$W/debs/v2" "$W/tls" "$W/logs"
collect_logs() {
	local h
	for h in "$HOSTS_DIR"/"$NAME"-*; do
		[ -d "$h/upper/var/log/aisd" ] || continue
		mkdir -p "$W/logs/${h##*/}"
		cp -r "$h/upper/var/log/aisd/." "$W/logs/${h##*/}/" 2>/dev/null
	done
}
cleanup() {
	[ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null && wait_gone "$LOAD_PID" 10
	collect_logs
	"$ANS/testhosts.sh" down -d "$HOSTS_DIR" >/dev/null 2>&1 ||
		echo "# testhosts.sh down failed: see $HOSTS_DIR"
}
trap cleanup EXIT
# The runner's timeout sends SIGTERM: the plays and the load are waited for
# with `wait`, which the signal interrupts, so the cleanup runs at once.
trap 'echo "# SIGTERM: cleaning up"; exit 143' TERM
# Every play ends by this deadline (the runner's timeout is 600 s).
T_END=$((SECONDS + 540))

# ---- packages --------------------------------------------------------------

# The packages of `make deb` ($BUILD/deb) are version V1; V2, for the
# upgrade, is the same packages with a later version.
DEBS_DIR=$BINDIR/deb
V1=$(dpkg-deb -f "$(ls "$DEBS_DIR"/aisd_*.deb 2>/dev/null | head -1)" Version 2>/dev/null)
if [ -z "$V1" ] || ! ls "$DEBS_DIR"/aisctl_"$V1"_*.deb >/dev/null 2>&1; then
	fail "no aisd and aisctl packages under $DEBS_DIR (make deb)"
	finish
fi
V2=$V1+deploytest1
# reversion DEB VERSION DIR: DEB with another version, into DIR.
reversion() {
	local r=$W/debroot
	rm -rf "$r"
	dpkg-deb -R "$1" "$r" &&
		sed -i "s/^Version: .*/Version: $2/" "$r/DEBIAN/control" &&
		dpkg-deb -Zgzip -b "$r" "$3/$(dpkg-deb -f "$1" Package)_$2_$(dpkg-deb -f "$1" Architecture).deb" >/dev/null
}
cp "$DEBS_DIR"/aisd_"$V1"_*.deb "$DEBS_DIR"/aisctl_"$V1"_*.deb "$W/debs/v1/"
if reversion "$W"/debs/v1/aisd_*.deb "$V2" "$W/debs/v2" && reversion "$W"/debs/v1/aisctl_*.deb "$V2" "$W/debs/v2"; then
	ok "packages of make deb ($V1) and the same as $V2"
else
	fail "packages $V2 made"
	finish
fi

# ---- hosts, keys, certificates, inventory ----------------------------------

ssh-keygen -q -t ed25519 -N '' -C deploy-test -f "$W/id_ed25519"
t0=$SECONDS
if "$ANS/testhosts.sh" up -n "$NAME" -d "$HOSTS_DIR" -a "$NET" -k "$W/id_ed25519.pub" 3 >"$W/testhosts.log" 2>&1; then
	ok "3 test hosts booted with systemd, sshd answering ($((SECONDS - t0)) s)"
else
	fail "test hosts up"
	sed 's/^/#   /' "$W/testhosts.log" | tail -20
	finish
fi
H1=$NET.11 H2=$NET.12 H3=$NET.13
SSH=(ssh -i "$W/id_ed25519" -o BatchMode=yes -o StrictHostKeyChecking=yes -o "UserKnownHostsFile=$HOSTS_DIR/known_hosts"
	-o ConnectTimeout=5)
on() {
	local ip=$1
	shift
	"${SSH[@]}" "root@$ip" "$@"
}

(
	cd "$W/tls" || exit 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=deploy-test-ca \
		-keyout ca.key -out ca.pem 2>/dev/null || exit 1
	for i in 1 2 3; do
		ip=$NET.$((10 + i))
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$ip" \
			-keyout "h$i.key" -out "h$i.csr" 2>/dev/null || exit 1
		printf 'subjectAltName=IP:%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$ip" >"h$i.ext"
		openssl x509 -req -in "h$i.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
			-extfile "h$i.ext" -out "h$i.pem" 2>/dev/null || exit 1
	done
) || {
	fail "TLS material made"
	finish
}
SECRET=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >"$W/inventory.yml" <<EOF
# The test's inventory: 1 gateway, 2 targets, HTTPS, a cluster secret.
aisd:
  vars:
    ansible_user: root
    ansible_python_interpreter: /usr/bin/python3
    ansible_ssh_private_key_file: $W/id_ed25519
    ansible_ssh_common_args: -o StrictHostKeyChecking=yes -o UserKnownHostsFile=$HOSTS_DIR/known_hosts
    aisd_tls: true
    aisd_tls_ca_file: $W/tls/ca.pem
    aisd_cluster_secret: $SECRET
    aisd_log_file: /var/log/aisd/aisd.log
    aisd_config:
      cluster.keepalive: 1s
  hosts:
    $NAME-1:
      ansible_host: $H1
      aisd_role: gateway
      aisd_node_id: g0
      aisd_tls_cert_file: $W/tls/h1.pem
      aisd_tls_key_file: $W/tls/h1.key
    $NAME-2:
      ansible_host: $H2
      aisd_node_id: t0
      aisd_port: 8081
      aisd_mountpaths: [/var/lib/aisd/mp1, /srv/aisd/mp2]
      aisd_tls_cert_file: $W/tls/h2.pem
      aisd_tls_key_file: $W/tls/h2.key
    $NAME-3:
      ansible_host: $H3
      aisd_node_id: t1
      aisd_port: 8081
      aisd_mountpaths: [/var/lib/aisd/mp1, /srv/aisd/mp2]
      aisd_tls_cert_file: $W/tls/h3.pem
      aisd_tls_key_file: $W/tls/h3.key
EOF
export ANSIBLE_CONFIG=$ANS/ansible.cfg ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
# each task's time in the logs
export ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks
# play NAME ARGS...: ansible-playbook ARGS, its output in $W/NAME.log;
# returns its status and prints the recap's tail when it failed.
play() {
	local log=$W/$1.log rc
	shift
	local left=$((T_END - SECONDS))
	[ $left -gt 10 ] || left=10
	timeout "$left" ansible-playbook -i "$W/inventory.yml" "$@" </dev/null >"$log" 2>&1 &
	wait $!
	rc=$?
	[ $rc = 0 ] || grep -E 'FAILED|fatal|ERROR|msg' "$log" | head -15 | sed 's/^/#   /'
	return $rc
}

# ---- deploy ----------------------------------------------------------------

EP=https://$H1:8080
CTL=("$AISCTL" --endpoint "$EP" --cacert "$W/tls/ca.pem")
t0=$SECONDS
if play site "$ANS/site.yml" -e "aisd_deb_dir=$W/debs/v1"; then
	ok "site.yml deployed the cluster ($((SECONDS - t0)) s)"
else
	fail "site.yml deployed the cluster"
	finish
fi
show=$("${CTL[@]}" cluster show 2>&1)
n_ok=$(echo "$show" | grep -cE '^(gateway|target) .* active .* ok$')
check_eq "cluster show: 3 nodes active and healthy" "$n_ok" 3
echo "$show" | grep -q "https://$H2:8081" && ok "t0 in the map at its https URL" || fail "t0's URL (got: $show)"
users=$(on "$H2" 'ps -o user= -C aisd; stat -c "%a %U" /etc/aisd/cluster.secret /etc/aisd/tls/node.key; dpkg-query -W -f="\${Version}" aisd')
check_eq "t0: aisd runs as aisd, secrets 0600, package $V1" "$(echo $users)" "aisd 600 aisd 600 aisd $V1"
curl -s -o /dev/null -w '%{http_code}' "http://$H1:8080/v1/health" | grep -q '^000$\|^400$' &&
	ok "the gateway answers plain http with no service (HTTPS only)" || fail "plain http to the gateway"

"${CTL[@]}" bucket create data >/dev/null 2>&1 &&
	"${CTL[@]}" bucket props set data mirror.enabled=true mirror.copies=2 >/dev/null 2>&1 ||
	fail "bucket data with 2 copies"
CURL=(curl -sS --fail --cacert "$W/tls/ca.pem" --max-time 30 -L)
head -c 100000 /dev/urandom >"$W/seed"
if "${CURL[@]}" -T "$W/seed" "$EP/v1/objects/data/seed" -o /dev/null &&
	"${CURL[@]}" "$EP/v1/objects/data/seed" -o "$W/seed.got" && cmp -s "$W/seed" "$W/seed.got"; then
	ok "PUT and GET through the gateway (https, redirected to a target)"
else
	fail "PUT and GET through the gateway"
fi
# Objects written before the upgrade, read during it.
mkdir -p "$W/pre"
for i in $(seq 1 20); do
	head -c $((1000 + i * 997)) /dev/urandom >"$W/pre/p$i"
	"${CURL[@]}" -T "$W/pre/p$i" "$EP/v1/objects/data/pre/p$i" -o /dev/null || fail "PUT pre/p$i"
done

# ---- rolling upgrade under load --------------------------------------------

# The load: until $W/load.stop appears (at most 3000 rounds, 400 s), a new
# object PUT and read back, and one of the earlier ones read and compared;
# each request's failure is a line in load.fail, each acknowledged PUT a
# line in load.acked.
load() {
	local i=0 f t_end=$((SECONDS + 400)) k
	mkdir -p "$W/load"
	while [ $i -lt 3000 ] && [ $SECONDS -lt $t_end ] && [ ! -e "$W/load.stop" ]; do
		i=$((i + 1))
		f=$W/load/o$i
		{
			echo "object $i"
			head -c $((RANDOM * 2)) /dev/urandom
		} >"$f"
		if "${CURL[@]}" -T "$f" "$EP/v1/objects/data/load/o$i" -o /dev/null 2>>"$W/load.err"; then
			echo "o$i" >>"$W/load.acked"
		else
			echo "PUT o$i" >>"$W/load.fail"
			continue
		fi
		"${CURL[@]}" "$EP/v1/objects/data/load/o$i" -o "$f.got" 2>>"$W/load.err" && cmp -s "$f" "$f.got" ||
			echo "GET o$i" >>"$W/load.fail"
		k=$((i % 20 + 1))
		"${CURL[@]}" "$EP/v1/objects/data/pre/p$k" -o "$W/load/p.got" 2>>"$W/load.err" &&
			cmp -s "$W/pre/p$k" "$W/load/p.got" || echo "GET pre/p$k" >>"$W/load.fail"
		echo "$i" >"$W/load.rounds"
	done
}
: >"$W/load.fail"
: >"$W/load.acked"
load &
LOAD_PID=$!
t0=$SECONDS
play upgrade-targets "$ANS/upgrade.yml" -e aisd_upgrade_roles=target -e "aisd_deb_dir=$W/debs/v2"
rc=$?
touch "$W/load.stop"
wait_gone "$LOAD_PID" 60 || kill "$LOAD_PID" 2>/dev/null
wait "$LOAD_PID" 2>/dev/null
LOAD_PID=
rounds=$(cat "$W/load.rounds" 2>/dev/null || echo 0)
if [ $rc = 0 ]; then
	ok "upgrade.yml for the targets: both targets upgraded in turn ($((SECONDS - t0)) s, $rounds load rounds)"
else
	fail "upgrade.yml for the targets"
fi
maint=$(grep -A3 'TASK \[aisd : maintenance start\]' "$W/upgrade-targets.log" | grep -c '^changed:')
check_eq "each target went into maintenance" "$maint" 2
[ "$rounds" -ge 5 ] && ok "the load ran $rounds rounds during the upgrade" || fail "the load ran only $rounds rounds"
if [ -s "$W/load.fail" ]; then
	fail "zero failed requests under the upgrade: $(wc -l <"$W/load.fail") failed, e.g. $(head -3 "$W/load.fail" | tr '\n' ' ')"
	head -5 "$W/load.err" | sed 's/^/#   /'
else
	ok "zero failed requests during the rolling upgrade ($rounds rounds of PUT, GET, GET)"
fi
for ip in "$H2" "$H3"; do
	check_eq "target at $ip runs package $V2" "$(on "$ip" 'dpkg-query -W -f="\${Version}" aisd')" "$V2"
done

# ---- the gateway, then nothing lost ----------------------------------------

if play upgrade-gateways "$ANS/upgrade.yml" -e aisd_upgrade_roles=gateway -e "aisd_deb_dir=$W/debs/v2"; then
	ok "upgrade.yml for the gateway"
else
	fail "upgrade.yml for the gateway"
fi
check_eq "the gateway runs package $V2" "$(on "$H1" 'dpkg-query -W -f="\${Version}" aisd')" "$V2"
lost=0
while read -r o; do
	"${CURL[@]}" "$EP/v1/objects/data/load/$o" -o "$W/load/check" 2>/dev/null && cmp -s "$W/load/$o" "$W/load/check" ||
		lost=$((lost + 1))
done <"$W/load.acked"
acked=$(wc -l <"$W/load.acked")
[ "$acked" -ge 5 ] && [ "$lost" = 0 ] && ok "all $acked objects acknowledged during the upgrade read back whole" ||
	fail "$lost of $acked acknowledged objects lost or changed"
n_ok=$("${CTL[@]}" cluster show 2>&1 | grep -cE '^(gateway|target) .* active .* ok$')
check_eq "after the upgrade: 3 nodes active and healthy" "$n_ok" 3
finish
